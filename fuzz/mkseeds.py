#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Writes the seed corpora fuzz/corpus_{ring,frag,pipeline}/ and a seed of
fuzz/corpus_tbuffer/.

Each seed is a small program in the input format its target's
LLVMFuzzerTestOneInput() reads (see the comments there); the helpers
below spell the operations.  Run from the repository root after changing
a format:  python3 fuzz/mkseeds.py
"""
import os
import struct

def ring(out):
    os.makedirs(out, exist_ok=True)

    def u16(v): return struct.pack('<H', v)
    def u32(v): return struct.pack('<I', v & 0xffffffff)

    def hdr(cs=256, nc=4, nw=2, start=0, d=0, attach=False, ids=None):
        sel = {256: 0, 512: 1, 1024: 2}[cs]
        lg = {2: 0, 4: 1, 8: 2, 16: 3}[nc]
        cfg = sel | lg << 2 | (nw - 1) << 4
        cfg2 = start | (8 if attach else 0) | (16 if ids else 0)
        b = bytes([cfg, cfg2, d])
        if start >= 5:
            b += u32(d)
        if ids:
            for i in ids: b += u16(i)
        return b

    def packet(k, ln):      # ln < 64 or big
        v = ln if ln < 64 else 0x8000 | ln
        return bytes([0x00 | k << 4, 0]) + u16(v)
    def wopen(k, mn, flags=0):
        v = mn if mn < 32 else 0x8000 | mn
        return bytes([k << 4, 1]) + u16(v) + bytes([flags])
    def wfill(k, n): return bytes([k << 4, 2]) + u16(n)
    def wclose(k, n, cont=0): return bytes([k << 4, 3]) + u16(n) + bytes([cont])
    def wsync(k, n): return bytes([k << 4, 4]) + u16(n)
    def wrel(k): return bytes([k << 4, 5])
    def wdie(k): return bytes([k << 4, 6])
    def drain(mx, scrape): return bytes([6 | (mx - 1) << 4 | (0x80 if scrape else 0)])
    def one(scrape): return bytes([8 | (0x80 if scrape else 0)])
    def plan(acts):  # list of (at, kind, args)
        b = bytes([9, len(acts)])
        for at, kind, args in acts:
            args = bytes(args) + bytes(12 - len(args))
            b += bytes([at - 1, kind]) + args
        return b
    def scrib(kind, args): return bytes([10 | kind << 4]) + bytes(args)
    def restart(): return bytes([12 | 0x10])
    def attach(args): return bytes([13]) + bytes(args)
    # craft encodings
    def c_raw(v): return bytes([0, 0]) + u32(v)
    def c_free(d): return bytes([1, d & 0xff])
    def c_data(state, n, writer, fmt=None, flags=0):
        b = (state - 1) * 8 | (0x40 if fmt is not None else 0) | 2
        out = bytes([b, 0, n])
        if fmt is not None: out += bytes([fmt])
        return out + bytes([flags]) + u16(writer)
    def c_acked(): return bytes([3, 0])
    def c_acked_junk(v): return bytes([4, 0]) + u32(v)
    def c_reserved(st, v): return bytes([5 | (st - 5) * 8, 0]) + u32(v)
    def c_next(): return bytes([6, 0])
    def dir_shaped(n, delta, state_word=True, acquired=False, writer=9):
        # n odd -> edge table; use raw n (even) or edge index
        mode = (2 if state_word else 0) | (4 if acquired else 0)
        b = bytes([n, mode, delta & 0xff])
        if state_word: b += u16(writer)
        return b
    def dir_edge(idx, delta, acquired=False, writer=9):
        # edge_n[idx]: 1,2,125,126,249,250,251,252,253,254,255
        mode = 2 | (4 if acquired else 0)
        return bytes([idx * 2 + 1, mode, delta & 0xff]) + u16(writer)

    seeds = {}
    # 1: honest: two writers, packets over chunks, lazy and scrape drains,
    #    open/fill/sync/close, a reader restart, writer ops in mid-drain.
    s = hdr(256, 4, 2)
    s += packet(0, 40) + packet(1, 300) + drain(4, False) + packet(0, 10)
    s += wopen(1, 8) + wfill(1, 100) + drain(8, True) + wsync(1, 60)
    s += wclose(1, 120) + plan([(3, 1 | 0 << 1, [0, 0, 20]), (5, 1 | 3 << 1, [1, 0, 50, 0])])
    s += drain(8, True) + packet(0, 700) + restart() + drain(8, False)
    s += wopen(0, 4) + plan([(2, 0x81 | 0 << 1, [1, 0, 12])]) + drain(2, True)
    s += wclose(0, 30) + drain(8, True)
    seeds['honest_mix'] = s
    # 2: a directory that ends exactly at the payload, then one byte past it
    s = hdr(256, 2, 1) + packet(0, 20)
    s += scrib(4, [1] + list(dir_shaped(100, 0))) + scrib(2, [1, 1]) + drain(8, True)
    s += scrib(4, [0] + list(dir_shaped(100, 1))) + scrib(2, [1, 1]) + drain(8, True)
    seeds['dir_edge_256'] = s
    s = hdr(512, 4, 1) + packet(0, 3) + scrib(4, [1] + list(dir_edge(5, 0)))
    s += scrib(2, [1, 1]) + scrib(4, [2] + list(dir_edge(3, 1))) + scrib(2, [1, 1])
    s += drain(4, True)
    seeds['dir_edge_512'] = s
    # 3: 251 fragments in a 256-byte chunk: the directory cannot fit
    s = hdr(256, 2, 1) + scrib(3, list(dir_edge(6, 9))) + scrib(2, [1, 1]) + one(True)
    s += scrib(3, list(dir_edge(5, 0))) + scrib(2, [1, 1]) + one(True)
    seeds['dir_251'] = s
    # 4: reserved states, a mismatched free tag, Acknowledged with junk
    s = hdr(1024, 8, 2) + packet(0, 5) + packet(1, 5) + one(False)
    s += scrib(0, list(c_reserved(5, 0x1234))) + one(True) + one(False)
    s += restart() + scrib(0, list(c_free(1))) + drain(3, True)
    s += restart() + scrib(0, list(c_acked_junk(7))) + one(True)
    s += restart() + scrib(0, list(c_acked())) + one(True)
    seeds['eproto_words'] = s
    # 5: forged cursors
    s = hdr(256, 4, 2) + packet(0, 5) + scrib(2, [40, 1]) + drain(4, True)
    s += restart() + scrib(2, [0, 3] + list(u32(0x80000000))) + one(True)
    seeds['forged_cursor'] = s
    # 6: near the 2^32 rollover and the wrap-tag rollover
    s = hdr(512, 2, 3, start=2, d=3) + packet(0, 900) + packet(1, 20) + packet(2, 7)
    s += drain(8, True) + packet(0, 900) + drain(8, False) + drain(8, True)
    seeds['rollover32'] = s
    s = hdr(256, 2, 2, start=3, d=2) + packet(0, 300) + drain(8, True) + packet(1, 100)
    s += drain(8, True) + packet(0, 60) + drain(8, True)
    seeds['rollover_tag'] = s
    # 7: mid-drain scribbles of the word and the directory
    s = hdr(256, 4, 1) + packet(0, 30) + wopen(0, 10) + wclose(0, 10)
    s += plan([(2, 0 | 0 << 1, [0, 2, 0, 3, 0, 1, 0]), (4, 0 | 3 << 1, [0, 100, 0, 3])])
    s += drain(4, True) + packet(0, 30) + plan([(2, 0x80, [0, 1, 0])]) + drain(4, True)
    seeds['mid_scribble'] = s
    # 8: tb_ring_attach on raw headers: valid, one byte short, bad magic
    s = hdr(256, 2, 1)
    s += attach([1, 1, 0, 0, 0, 1, 0, 3, 1])      # cl 8, nl 1, len = need
    s += attach([1, 1, 1, 0, 0, 1, 0])             # len = need - 1
    s += attach([1, 1, 0, 0, 1, 0, 0, 1, 1, 0])    # magic + 1
    s += attach([9, 1, 3, 0, 0x10, 0, 0, 1, 0])    # cl 16: invalid
    s += attach([2, 2, 2, 7, 3, 1, 16, 0, 2, 1, 0, 3, 1])  # forged write_pos
    s += attach([3, 1, 0, 0, 0, 0, 1, 0])          # misaligned
    s += attach([2, 3, 0, 0, 0, 1, 2] + list(u16(600)) + [0x40] + list(u16(1600)) + [0x22, 3, 1])
    seeds['attach_raw'] = s
    # 9: a close whose chunk was scraped finds the ring full when it
    #    relocates: the fragment is dropped, and writer 0's next chunk must
    #    say "data loss" (honest run: the oracle checks the flag)
    s = hdr(256, 2, 2) + wopen(0, 8) + wfill(0, 100) + packet(1, 20)
    s += drain(8, True) + packet(1, 20) + packet(1, 300) + wclose(0, 40)
    s += drain(8, True) + packet(0, 20) + drain(8, True)
    seeds['close_dropped_owes_loss'] = s
    for k, v in seeds.items():
        open(os.path.join(out, k), 'wb').write(v)
    print(out, len(seeds), 'seeds', sum(len(v) for v in seeds.values()), 'bytes')


def frag(out):
    os.makedirs(out, exist_ok=True)
    u16 = lambda v: struct.pack('<H', v)
    seeds = {}
    # directories at the limit of the free space, one past it, and 251 in 256
    seeds['dir_limit'] = bytes([0, 0, 0x18, 0, 0]) + bytes([0, 1, 0x18, 0, 1]) + \
        bytes([0, 1, 0x18 | 1, 1, 2]) + bytes([0, 7, 0x10 | 0xc]) + u16(1000) + bytes([2])
    seeds['dir_edge_n'] = bytes([0, 0, 0x10, 5]) + bytes([0, 0, 0x10, 4, 0]) + \
        bytes([0, 2, 0x4, 200]) + bytes(range(1, 201)) * 2 + bytes([0, 0, 0x8, 1])
    # a cursor session: open, close short, append, append past the room, 255
    s = bytes([1, 1, 60]) + u16(0x1234)
    s += bytes([0]) + bytes([1]) + u16(10) + bytes([2]) + u16(5) + bytes([0x12]) + u16(1)
    s += bytes([0x12]) + u16(0) + bytes([0, 0x11]) + u16(1) + bytes([0x11]) + u16(0)
    s += bytes([3, 200, 3, 200, 0, 1]) + u16(0) + bytes([2]) + u16(0)
    seeds['cursor_session'] = s
    s = bytes([1, 0, 30, 0, 0]) + bytes([2]) + u16(249) + bytes([3, 255]) + bytes([0, 1]) + u16(3)
    seeds['cursor_256_full'] = s
    # varints: 10 bytes, 11 bytes, truncated, every bit length edge
    s = bytes([2, 10]) + bytes([0x80] * 9 + [0x01]) + bytes([64])
    s += bytes([2, 11]) + bytes([0xff] * 10 + [0x01]) + bytes([0x80]) + bytes([0xff] * 8)
    s += bytes([2, 3, 0xff, 0xff, 0xff, 0x3f]) + bytes([2, 4, 0xff, 0xff, 0xff, 0x7f, 0x47])
    s += bytes([2, 0, 7]) + bytes([2, 1, 0, 0x7f])
    seeds['varints'] = s
    # iterators over framed bytes: abort markers, overlong, one past the end
    s = bytes([3, 1]) + u16(120) + bytes([3, 5, 1, 2, 3, 4, 5, 0, 4, 3, 0, 9]) + bytes(range(9)) + bytes([2, 1])
    s += bytes([3, 3]) + u16(60) + bytes([5, 20]) + bytes(range(20)) + bytes([0])
    s += bytes([3, 4]) + u16(16) + bytes([3, 0xa, 0, 0, 5, 1, 2, 3, 4, 5, 0xff, 0xff, 0xff, 0x7f, 0, 0, 2]) + u16(5)
    seeds['iter_framed'] = s
    for k, v in seeds.items():
        open(os.path.join(out, k), 'wb').write(v)
    print(out, len(seeds), 'seeds', sum(len(v) for v in seeds.values()), 'bytes')


def pipeline(out):
    os.makedirs(out, exist_ok=True)
    u16 = lambda v: struct.pack('<H', v)
    def cfg(cs=512, nc=4, nh=3, nbufs=1, sz0=0, sz1=0, disc0=0, disc1=0, manual=1,
            fail=0, start=0, service=0, period=0, liar=0):
        c1 = {256: 0, 512: 1, 1024: 2}[cs] | {2: 0, 4: 1, 8: 2, 16: 3}[nc] << 2 | (nh - 1) << 4
        c2 = (nbufs - 1) | sz0 << 1 | sz1 << 3 | disc0 << 5 | disc1 << 6 | (0 if manual else 0x80)
        c3 = 0x80 | (fail - 1) if fail else 0
        c4 = liar | (1 | start << 1 if start else 0) | service << 6 | period << 7
        return bytes([c1, c2, c3, c4])
    def pkt(k, body):    # body 6..69 small, else big
        v = body - 6 if body < 70 else 0x8000 | (body - 6)
        return bytes([k << 4, 0]) + u16(v)
    def hopen(k, body): return bytes([k << 4, 3]) + u16(body - 6)
    def hsync(k): return bytes([k << 4, 4])
    def hclose(k): return bytes([k << 4, 5])
    def liar_pkt(data): return bytes([5, 0, len(data)]) + bytes(data)
    def liar_open(n, cont=0): return bytes([5, 1 | (0x20 if cont else 0), n])
    def liar_close(data, nxt=0): return bytes([5, 2 | (0x40 if nxt else 0), len(data)]) + bytes(data)
    def scrib(kind, idx, args): return bytes([7, kind, idx]) + bytes(args)
    def drain(mx, scrape): return bytes([9 | (mx - 1) << 4 | (0x80 if scrape else 0)])
    def wtrace(i): return bytes([11 | i << 4])
    def poll(dt): return bytes([12 | dt << 4])
    def flush(): return bytes([13])
    def rel(k): return bytes([14 | k << 4])
    seeds = {}
    s = cfg(512, 4, 3, nbufs=2, sz1=1)
    s += pkt(0, 20) + pkt(1, 900) + hopen(2, 100) + drain(8, False) + wtrace(0) + wtrace(1)
    s += pkt(0, 30) + drain(8, True) + hsync(2) + hclose(2) + drain(8, True) + wtrace(0) + wtrace(1)
    s += poll(2) + pkt(1, 6) + flush() + poll(1) + rel(0) + pkt(0, 40)
    seeds['honest_two_buffers'] = s
    s = cfg(256, 8, 2, sz0=0)
    for i in range(12):
        s += pkt(i % 2, 200) + drain(8, i % 3 == 0)
    s += wtrace(0) + pkt(0, 10) + drain(8, True) + wtrace(0)
    seeds['overwrite_4k'] = s
    s = cfg(1024, 4, 2, disc0=1)
    for i in range(10):
        s += pkt(i % 2, 700) + drain(8, True)
    s += wtrace(0)
    seeds['discard_full'] = s
    s = cfg(512, 4, 1, service=1, period=1)
    s += pkt(0, 10) + liar_pkt([0x08, 0x01, 0x22]) + liar_pkt([0x18, 0x05]) + liar_pkt([0x0b, 0x0c])
    s += liar_open(4, 1) + liar_close([0x10, 0x01], 1) + poll(4) + pkt(0, 11) + poll(4)
    seeds['liar_packets'] = s
    s = cfg(256, 4, 2)
    s += pkt(0, 10) + scrib(0, 1, [3, 0x39, 0x00, 0]) + scrib(2, 1, [4, 3, 1, 2, 3]) + drain(4, True)
    s += pkt(1, 50) + scrib(3, 2, [0x10, 0, 4, 1, 2, 3, 4]) + scrib(4, 3, [0, 0]) + drain(8, True)
    s += pkt(0, 10) + scrib(1, 0, [7]) + drain(8, True) + wtrace(0)
    seeds['liar_scribbles'] = s
    s = cfg(512, 2, 2) + pkt(0, 10) + pkt(1, 10) + scrib(0x15, 0, [40]) + drain(4, True) + wtrace(0)
    seeds['liar_cursor'] = s
    for f in (1, 3, 5, 8):
        s = cfg(512, 4, 2, nbufs=2, fail=f) + pkt(0, 10) + pkt(1, 10) + drain(8, True)
        s += pkt(0, 300) + pkt(1, 12) + drain(8, True) + wtrace(0) + wtrace(1)
        seeds['alloc_fail_%d' % f] = s
    s = cfg(1024, 16, 3, start=3, service=1) + pkt(0, 2000) + pkt(1, 6) + hopen(2, 500)
    s += drain(8, False) + pkt(0, 1500) + drain(2, False) + hclose(2) + poll(1)
    seeds['rollover_service'] = s
    for k, v in seeds.items():
        open(os.path.join(out, k), 'wb').write(v)
    print(out, len(seeds), 'seeds', sum(len(v) for v in seeds.values()), 'bytes')
    # the reproducer of tb_trace_packet_valid() accepting a dangling key byte
    open(os.path.join(out, 'trunc_key_repro'), 'wb').write(
        cfg(256, 2, 1) + pkt(0, 8) + liar_pkt([0x08, 0x01, 0x80]) + pkt(0, 9))

def tbuffer(out):
    """Only the seeds made here; corpus_tbuffer's others came from runs."""
    os.makedirs(out, exist_ok=True)
    u16 = lambda v: struct.pack('<H', v)
    def crowd(base, n): return bytes([15]) + u16(base) + u16(n - 1)
    def commit_patched(wi, npkts, cap, pktlen):
        return bytes([0, wi, 1, npkts - 1]) + u16(cap - 16) + u16(pktlen - 10)
    def deliver(wi): return bytes([4 << 4, wi])
    seeds = {}
    # The table sweeps a crowd entry that sits in honest writer 1's home
    # slot (512 entries: crowd writers 242.. put writer 242 + 39 there, and
    # writer 1 lands in the next slot); writer 1's sequence moves back
    # between two of its patches, the second of which must still find it.
    s = bytes([3]) + crowd(242, 150) + commit_patched(0, 1, 116, 510)
    s += deliver(0) + crowd(40000, 20) + commit_patched(0, 2, 600, 510)
    s += deliver(0)
    seeds['sweep_moves_a_patched_sequence'] = s
    for k, v in seeds.items():
        open(os.path.join(out, k), 'wb').write(v)
    print(out, len(seeds), 'seeds', sum(len(v) for v in seeds.values()), 'bytes')

if __name__ == '__main__':
    root = os.path.dirname(os.path.abspath(__file__))
    ring(os.path.join(root, 'corpus_ring'))
    frag(os.path.join(root, 'corpus_frag'))
    pipeline(os.path.join(root, 'corpus_pipeline'))
    tbuffer(os.path.join(root, 'corpus_tbuffer'))
