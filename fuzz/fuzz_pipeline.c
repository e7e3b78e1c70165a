/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target for the whole service path: ring -> bridge -> central
 * buffers -> Perfetto trace, in memory.
 *
 * The input is a program.  Its first bytes choose the ring (chunks of 256
 * to 1024 bytes, 2 to 16 of them), one or two central buffers (4 to 16
 * KiB, ring-buffer or discard), an allocation the allocator hook will
 * refuse (or none), and whether the run ends through the service loop's
 * stop or by hand.  Then each byte picks one operation:
 *  - honest writers (ids 1 to 3, TB_DROP) write TracePackets holding one
 *    field 2 whose body names the writer and a sequence number and whose
 *    bytes follow from them: whole packets over one or more chunks
 *    (tb_writer_write_packet), or one fragment left open across other
 *    operations (open, sync, close), so the reader scrapes and the writer
 *    relocates;
 *  - a lying writer (id 16 and up) writes junk from the input through the
 *    writer API, and a lying producer scribbles raw bytes into the
 *    mapping: state words (never claiming an honest id), directories,
 *    payload, BufferIDs, cursors, but never a chunk an honest writer
 *    holds (its word names an honest id);
 *  - the bridge drains (lazy or scrape, small batches), the service loop
 *    polls (never sleeping) or flushes, and tb_trace_write() writes each
 *    buffer to memory.
 * At the end the writers release, everything left is drained and
 * written, the bridge and buffers are destroyed.  Checked:
 *  - the trace is Trace.packet fields (field 1, length-delimited) back to
 *    back, each within the output, each a well-formed sequence of fields
 *    holding trusted_uid, trusted_packet_sequence_id and trusted_pid
 *    exactly once, with the bridge's identity and producer;
 *  - a packet on an honest writer's sequence is one of its packets, byte
 *    for byte, never a stand-in for an invalid one, and packets of one
 *    writer come out in the order written, each once;
 *  - a packet after a gap carries the loss flag: one whose write
 *    failed (anything but a refused open, which owes no loss) is
 *    reported on the next packet of its writer, which carries
 *    previous_packet_dropped (but where the loss came while a fragment
 *    was open: that packet, completed later, may carry the flag); as
 *    may one lost after it was written:
 *  - a packet whose write returned TB_OK and that is missing is lost
 *    visibly: the next packet of its writer carries
 *    previous_packet_dropped (unless memory ran out for the first chunk
 *    of its sequence: no later chunk can tell then, the bridge's counters
 *    do), or, when none came after it, the ring was retired, a buffer
 *    overwrote, discarded or refused chunks, an allocation failed, or the
 *    liar moved a cursor (which can hide published chunks for good);
 *  - the trace writer's counters match the packets parsed;
 *  - nothing leaks, and every free through the allocator hook names a
 *    live block and its size.
 */
/* the protocol steps, one at a time (see tbring.h) */
#define TB_PROTOCOL_STEPS 1
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tbservice.h"
#include "fuzz/fuzz_input.h"


#define NH		3		/* honest writers */
#define MAXSEQ		4096		/* packets per honest writer */
#define MAXOPS		1000
#define MAXBLOCKS	4096
#define PRODUCER	7
#define UID		1000
#define PID		4242
#define LIAR_ID		16		/* and up */
#define OUT_CAP		(4u << 20)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_init(argc, argv);
	return 0;
}

/* ---- Allocator hook: counts, checks sizes, fails on request ------------ */

struct block {
	void *p;
	size_t size;
};

static struct {
	struct block b[MAXBLOCKS];
	unsigned n;
	uint64_t calls, fail_at, failed;
} A;

static struct block *find(void *p)
{
	unsigned i;

	for (i = 0; i < A.n; i++)
		if (A.b[i].p == p)
			return &A.b[i];
	return NULL;
}

static void *hook(void *ctx, void *ptr, size_t old_size, size_t new_size)
{
	struct block *b = ptr ? find(ptr) : NULL;
	void *q;

	(void)ctx;
	/* a free or resize names a live block and its size */
	CHECK(!ptr || (b && b->size == old_size));
	if (!new_size && !ptr)
		return NULL;
	if (!new_size) {
		free(ptr);
		*b = A.b[--A.n];
		return NULL;
	}
	if (++A.calls == A.fail_at) {
		A.failed++;
		return NULL;
	}
	q = realloc(ptr, new_size);
	if (!q)
		return NULL;
	if (b) {
		b->p = q;
		b->size = new_size;
		return q;
	}
	CHECK(A.n < MAXBLOCKS);
	A.b[A.n].p = q;
	A.b[A.n++].size = new_size;
	return q;
}

/* ---- The run ------------------------------------------------------------ */

struct hw {			/* an honest writer */
	struct tb_writer w;
	uint8_t *scratch;
	uint16_t bid;
	int open;		/* a packet sits in an open fragment */
	uint32_t open_seq, open_len;
	struct tb_span span;
};

static struct pl {
	uint32_t cs, nc;
	size_t len;
	uint8_t *mem;
	struct tb_ring ring;
	unsigned nh, nbufs;
	struct tb_buf *bufs[2];
	struct tb_bridge br;
	struct tb_service_slot rings[1];
	uint8_t *rscratch;
	struct hw hw[NH];
	struct tb_writer liar;
	uint8_t *liar_scratch;
	int liar_open;
	struct tb_span liar_span;
	struct tb_service svc;
	struct tb_trace_out out;
	int ring_errors;
	int cursors;		/* the liar moved write_pos or read_pos */
	uint16_t liar_id;
	uint64_t now;
	uint8_t pkt[4 * 1024];
	/* the checker */
	uint8_t *obuf;
	size_t olen;
	uint64_t parsed, invalid;
	uint32_t next_seq[NH];
	int64_t last_seq[NH];
	int64_t lenient_seq[NH];	/* a loss while a fragment was open */
	uint8_t must[NH][MAXSEQ / 8];
	uint8_t quiet[NH][MAXSEQ / 8];	/* failed, but owing no loss */
} G;

static int bit(const uint8_t *b, uint32_t i)
{
	return b[i / 8] >> (i % 8) & 1;
}

static int out_write(void *ctx, const void *data, size_t len)
{
	(void)ctx;
	CHECK(len <= OUT_CAP - G.olen);
	memcpy(G.obuf + G.olen, data, len);
	G.olen += len;
	return 0;
}

static size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	do {
		p[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			p[n] |= 0x80;
		n++;
	} while (v);
	return n;
}

/* Reads a varint of the trace; 0 when it is malformed or runs out. */
static size_t rd_varint(const uint8_t *p, size_t avail, uint64_t *v)
{
	size_t i;

	*v = 0;
	for (i = 0; i < 10 && i < avail; i++) {
		*v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
		if (!(p[i] & 0x80))
			return i + 1;
	}
	return 0;
}

/*
 * An honest packet: field 2, length-delimited, whose body is a5, writer,
 * sequence (4 bytes, little-endian), then (seq * 31 + i) at offset i.
 */
static uint32_t mk_packet(uint8_t *p, unsigned k, uint32_t seq, uint32_t body)
{
	uint32_t n = 0, i;

	p[n++] = 0x12;
	n += (uint32_t)put_varint(p + n, body);
	p[n] = 0xa5;
	p[n + 1] = (uint8_t)k;
	for (i = 0; i < 4; i++)
		p[n + 2 + i] = (uint8_t)(seq >> (8 * i));
	for (i = 6; i < body; i++)
		p[n + i] = (uint8_t)(seq * 31 + i);
	return n + body;
}

static int honest_id(uint16_t id)
{
	return id >= 1 && id <= G.nh;
}

/* One packet on honest writer @k's sequence, as the trace holds it. */
static void check_honest(unsigned k, const uint8_t *body, uint64_t len,
			 int lossy)
{
	uint32_t seq = 0, i, s;

	CHECK(body && len >= 6 && body[0] == 0xa5 && body[1] == k);
	for (i = 0; i < 4; i++)
		seq |= (uint32_t)body[2 + i] << (8 * i);
	for (i = 6; i < len; i++)
		CHECK(body[i] == (uint8_t)(seq * 31 + i));
	/* written, once, in order */
	TRACE("  honest packet: writer %u seq %u len %u lossy %d\n", k, seq,
	      (unsigned)len, lossy);
	CHECK(seq < G.next_seq[k] && (int64_t)seq > G.last_seq[k]);
	/*
	 * A packet written whole and missing is reported on the next one.
	 * Not when memory ran out for the first chunk of a sequence (the
	 * buffer refused it, or the bridge's table of chunk ids could not
	 * grow): then no later chunk can tell, since chunk ids may start
	 * anywhere; only the bridge's counters have it.
	 */
	for (s = (uint32_t)(G.last_seq[k] + 1); s < seq; s++)
		if (bit(G.must[k], s))
			CHECK(lossy || (G.last_seq[k] < 0 && A.failed &&
					(G.br.stat[TB_BS_REJECTED] ||
					 G.br.stat[TB_BS_TOO_MANY_KEYS] ||
					 G.br.stat[TB_BS_KEYS_NOMEM])));
		else if (!bit(G.quiet[k], s))	/* its write failed */
			CHECK(lossy || G.lenient_seq[k] >= 0 ||
			      (G.last_seq[k] < 0 && A.failed &&
			       (G.br.stat[TB_BS_REJECTED] ||
				G.br.stat[TB_BS_TOO_MANY_KEYS] ||
				G.br.stat[TB_BS_KEYS_NOMEM])));
	if ((int64_t)seq > G.lenient_seq[k])
		G.lenient_seq[k] = -1;
	G.last_seq[k] = seq;
}

/* One Trace.packet's contents. */
static void check_packet(const uint8_t *p, size_t n)
{
	uint64_t key, v, uid = 0, seqid = 0, pid = 0, f2len = 0;
	unsigned c3 = 0, c10 = 0, c79 = 0, c42 = 0, c2 = 0, others = 0;
	const uint8_t *f2 = NULL;
	size_t off = 0, m;

	while (off < n) {
		m = rd_varint(p + off, n - off, &key);
		CHECK(m && key >> 3);
		off += m;
		switch (key & 7) {
		case 0:
			m = rd_varint(p + off, n - off, &v);
			CHECK(m);
			off += m;
			switch (key >> 3) {
			case TB_PB_TRUSTED_UID: c3++; uid = v; break;
			case TB_PB_TRUSTED_SEQ_ID: c10++; seqid = v; break;
			case TB_PB_TRUSTED_PID: c79++; pid = v; break;
			case TB_PB_PREVIOUS_DROPPED: c42++; break;
			default: others++; break;
			}
			break;
		case 1:
			CHECK(n - off >= 8);
			off += 8;
			others++;
			break;
		case 2:
			m = rd_varint(p + off, n - off, &v);
			CHECK(m && v <= n - off - m);
			if (key >> 3 == 2 && !c2++) {
				f2 = p + off + m;
				f2len = v;
			} else {
				others++;
			}
			off += m + (size_t)v;
			break;
		case 5:
			CHECK(n - off >= 4);
			off += 4;
			others++;
			break;
		default:
			CHECK(0);	/* groups never leave the service */
		}
	}
	CHECK(off == n);
	/* the trusted fields, once each */
	CHECK(c3 == 1 && c10 == 1 && c79 == 1);
	G.parsed++;	/* the writer counts the service's packets too */
	/*
	 * The service's own packets (its loss counters, the ring records,
	 * TraceStats) carry the service's identity on a sequence no
	 * producer gets; every other packet carries the bridge's.
	 */
	if (seqid == TB_TRACE_SERVICE_SEQ) {
		CHECK(c2 == 0);
		return;
	}
	CHECK(uid == UID && (uint32_t)pid == (uint32_t)PID);
	CHECK(seqid >> 16 == PRODUCER && (seqid & 0xffff));
	if (!honest_id((uint16_t)seqid))
		return;
	/* an honest writer's packet: its field 2 and the trusted tail only */
	CHECK(c2 == 1 && !others && c42 <= 1);
	check_honest((unsigned)(seqid & 0xffff) - 1, f2, f2len, c42);
}

/* Everything written since the last call: Trace.packet fields only. */
static void check_out(void)
{
	size_t off = 0, m;
	uint64_t key, len;

	while (off < G.olen) {
		m = rd_varint(G.obuf + off, G.olen - off, &key);
		CHECK(m && key == (TB_PB_TRACE_PACKET << 3 | TB_PB_LEN));
		off += m;
		m = rd_varint(G.obuf + off, G.olen - off, &len);
		CHECK(m && len <= G.olen - off - m);
		off += m;
		if (trace) {
			size_t i;

			fprintf(stderr, "  trace packet %zu:", (size_t)len);
			for (i = 0; i < len && i < 48; i++)
				fprintf(stderr, " %02x", G.obuf[off + i]);
			fprintf(stderr, "\n");
		}
		check_packet(G.obuf + off, (size_t)len);
		off += (size_t)len;
	}
	G.olen = 0;
	CHECK(G.out.packets + G.out.invalid_packets == G.parsed);
}

static void write_trace(unsigned i)
{
	long n;

	if (!G.bufs[i])
		return;
	n = tb_trace_write(&G.out, G.bufs[i]);
	CHECK(n >= 0);
	check_out();
}

/* ---- Writers ---------------------------------------------------------- */

static uint32_t body_len(struct in *in, uint32_t max)
{
	unsigned v = get16(in);
	uint32_t b = v & 0x8000 ? 6 + (v & 0x7fff) % (max - 6) : 6 + v % 64;

	return b < max ? b : max;
}

static void honest(unsigned k, unsigned op, struct in *in)
{
	struct hw *h = &G.hw[k];
	uint32_t seq, len, max;
	int ret;

	if (op % 6 <= 3 && G.next_seq[k] >= MAXSEQ)
		return;
	switch (op % 6) {
	case 0: case 1: case 2:	/* a whole packet, maybe over chunks */
		seq = G.next_seq[k]++;
		len = mk_packet(G.pkt, k, seq, body_len(in, 3 * G.cs));
		ret = tb_writer_write_packet(&h->w, G.pkt, len);
		TRACE("  honest %u packet seq %u len %u -> %d\n", k, seq, len,
		      ret);
		CHECK(ret == TB_OK || ret == TB_FULL || ret == TB_NO_CHUNK ||
		      ret == TB_DROPPED || (ret == TB_EOPEN && h->open));
		if (ret == TB_OK)
			G.must[k][seq / 8] |= (uint8_t)(1u << (seq % 8));
		else if (h->open)	/* the open packet may take the flag */
			G.lenient_seq[k] = seq;
		break;
	case 3:		/* a packet in one fragment, left open */
		if (h->open)
			break;
		max = tb_frag_max_size(G.cs) - 4;
		seq = G.next_seq[k]++;
		len = mk_packet(G.pkt, k, seq, body_len(in, max));
		ret = tb_writer_open(&h->w, len, 0, &h->span);
		TRACE("  honest %u open seq %u len %u -> %d\n", k, seq, len,
		      ret);
		CHECK(ret == TB_OK || ret == TB_FULL || ret == TB_NO_CHUNK);
		if (ret) {	/* a refused open owes no loss */
			G.quiet[k][seq / 8] |= (uint8_t)(1u << (seq % 8));
			break;
		}
		CHECK((uint32_t)(h->span.end - h->span.begin) >= len);
		memcpy(h->span.begin, G.pkt, len);
		h->open = 1;
		h->open_seq = seq;
		h->open_len = len;
		break;
	case 4:		/* sync it: relocated if the reader scraped */
		if (!h->open)
			break;
		ret = tb_writer_sync(&h->w, h->open_len, &h->span);
		TRACE("  honest %u sync -> %d\n", k, ret);
		CHECK(ret == TB_OK || ret == TB_DROPPED);
		if (ret)
			h->open = 0;
		break;
	default:	/* close it */
		if (!h->open)
			break;
		h->open = 0;
		ret = tb_writer_close(&h->w, h->open_len, 0);
		TRACE("  honest %u close seq %u -> %d\n", k, h->open_seq, ret);
		CHECK(ret == TB_OK || ret == TB_DROPPED);
		if (ret == TB_OK)
			G.must[k][h->open_seq / 8] |=
				(uint8_t)(1u << (h->open_seq % 8));
		break;
	}
}

/* The lying writer: the API, with junk for payload. */
static void liar(unsigned op, struct in *in)
{
	uint32_t len = get(in) % 64, i;
	int ret;

	if (op & 0x10)
		len = get16(in) % (3 * G.cs);
	for (i = 0; i < len; i++)
		G.pkt[i] = (uint8_t)(i < 64 ? get(in) : i);
	switch (op % 4) {
	case 0:
		ret = tb_writer_write_packet(&G.liar, G.pkt, len);
		TRACE("  liar packet len %u -> %d\n", len, ret);
		break;
	case 1:		/* a fragment, maybe a continuation */
		if (G.liar_open)
			break;
		ret = tb_writer_open(&G.liar, len % 32, op & 0x20 ?
				     TB_OPEN_CONT_PREV : 0, &G.liar_span);
		G.liar_open = ret == TB_OK;
		break;
	case 2:
		if (!G.liar_open)
			break;
		len %= (uint32_t)(G.liar_span.end - G.liar_span.begin) + 1;
		memcpy(G.liar_span.begin, G.pkt, len);
		tb_writer_close(&G.liar, len,
				op & 0x40 ? TB_CLOSE_CONT_NEXT : 0);
		G.liar_open = 0;
		break;
	default:
		tb_writer_release(&G.liar);
		G.liar_open = 0;
		break;
	}
}

/*
 * A chunk a writer of ours may still write to: its word names an honest
 * writer or the lying writer (pulled from under that one, its next write
 * would land in whatever an honest writer claims there next).
 */
static int held_chunk(uint32_t idx)
{
	uint32_t word = *tb_ring_word(&G.ring, idx);
	unsigned st = tb_state_of(word);

	return st >= TB_ACQUIRED && st <= TB_REWRITE &&
	       (honest_id(tb_state_writer(word)) ||
		tb_state_writer(word) == G.liar_id);
}

/* The lying producer: raw bytes into the mapping. */
static void scribble(unsigned op, struct in *in)
{
	struct tb_ring_hdr *h = G.ring.hdr;
	uint32_t idx = get(in) % G.nc, rp = h->read_pos, pos, n, i, off;
	uint8_t *chunk = G.ring.chunks + (size_t)idx * G.cs;
	uint32_t flags;
	unsigned fmt;
	uint16_t id;

	pos = rp + ((idx - rp) & (G.nc - 1));	/* its next position */
	TRACE("  scribble %u chunk %u word %08x%s\n", op % 6, idx,
	      *tb_ring_word(&G.ring, idx),
	      op % 6 != 5 && held_chunk(idx) ? " (held: skipped)" : "");
	if (op % 6 != 5 && held_chunk(idx))
		return;
	switch (op % 6) {
	case 0:		/* a published chunk of the liar's */
		n = get(in);
		id = (uint16_t)get16(in);
		if (!id || honest_id(id))	/* 0: refused by the buffer */
			id = (uint16_t)(id + LIAR_ID);
		fmt = op & 0x20 ? get(in) : TB_FORMAT_TARGET;
		flags = (uint32_t)get(in) << 24;
		*(uint32_t *)(void *)chunk = tb_state_data(
			op & 0x10 ? TB_ACQUIRED : TB_COMPLETE, fmt, flags, n,
			id);
		if (op & 0x40)
			tb_frag_set_bid(chunk, (uint16_t)get(in));
		break;
	case 1:		/* a free, acknowledged or reserved word */
		n = get(in);
		*(uint32_t *)(void *)chunk =
			n % 4 == 0 ? tb_state_free(tb_ring_wrap(&G.ring, pos) +
						   n / 4 % 2) :
			n % 4 == 1 ? tb_state_free(tb_ring_next_wrap(&G.ring,
								     pos)) :
			n % 4 == 2 ? TB_WORD_ACKED :
				     (5u + n / 4 % 3) << TB_STATE_SHIFT;
		break;
	case 2:		/* directory bytes */
		n = get(in) % 64;
		for (i = 0; i < n; i++)
			chunk[G.cs - 1 - i] = (uint8_t)get(in);
		break;
	case 3:		/* payload bytes */
		off = TB_FRAG_PAYLOAD_OFF + get16(in) % (G.cs - 6);
		n = get(in) % 32;
		for (i = 0; i < n && off + i < G.cs; i++)
			chunk[off + i] = (uint8_t)get(in);
		break;
	case 4:		/* BufferID */
		tb_frag_set_bid(chunk, (uint16_t)get16(in));
		break;
	default:	/* cursors: may hide published chunks for good */
		G.cursors = 1;
		n = (uint32_t)(int32_t)(int8_t)get(in);
		TRACE("  %s %+d (write_pos %u, read_pos %u)\n",
		      op & 0x10 ? "write_pos" : "read_pos", (int32_t)n,
		      h->write_pos, h->read_pos);
		if (op & 0x10)
			h->write_pos += n;
		else
			h->read_pos += n;
		break;
	}
}

/* ---- Service ------------------------------------------------------------- */

static void on_ring_error(void *ctx, unsigned ring, int err)
{
	(void)ctx;
	CHECK(ring == 0 && (err == TB_EPROTO || err == TB_EPINNED));
	G.ring_errors++;
}

/* Anything the buffers or the ring could have lost without a trace. */
static int loss_somewhere(void)
{
	unsigned i;

	if (G.br.error || A.failed || G.cursors || G.br.stat[TB_BS_REJECTED] ||
	    G.br.stat[TB_BS_TOO_MANY_KEYS] || G.br.stat[TB_BS_KEYS_NOMEM])
		return 1;
	for (i = 0; i < G.nbufs; i++) {
		const struct tb_buf_stats *s = tb_buf_stats(G.bufs[i]);

		if (s->chunks_overwritten || s->chunks_discarded ||
		    s->bytes_overwritten)
			return 1;
	}
	return 0;
}

static void finish(unsigned how)
{
	unsigned k, i, rounds, n;
	uint32_t s;

	for (k = 0; k < G.nh; k++) {
		if (G.hw[k].open && how & 1)
			honest(k, 5, NULL);	/* close what is open */
		tb_writer_release(&G.hw[k].w);
		G.hw[k].open = 0;
	}
	tb_writer_release(&G.liar);
	if (how & 2) {
		tb_service_stop(&G.svc);
		CHECK(!tb_service_poll(&G.svc, ++G.now));
		check_out();
	} else {
		for (rounds = 0; rounds < 4 && !G.br.error; rounds++)
			if (tb_bridge_drain(&G.br, 4 * G.nc, TB_READ_SCRAPE,
					    &n) < 0 || !n)
				break;
	}
	for (i = 0; i < G.nbufs; i++) {	/* twice: a stalled sequence */
		write_trace(i);
		write_trace(i);
	}
	TRACE("finish: bridge error %d chunks %llu rejected %llu, "
	      "wp %u rp %u\n",
	      G.br.error, (unsigned long long)G.br.stat[TB_BS_CHUNKS],
	      (unsigned long long)G.br.stat[TB_BS_REJECTED],
	      G.ring.hdr->write_pos, G.ring.hdr->read_pos);
	/* what is still missing was lost where someone can tell */
	for (k = 0; k < G.nh; k++)
		for (s = (uint32_t)(G.last_seq[k] + 1); s < G.next_seq[k]; s++)
			if (bit(G.must[k], s))
				CHECK(loss_somewhere());
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t sizes[] = { 256, 512, 1024, 512 };
	struct in in = { data, size };
	unsigned cfg = get(&in), cfg2 = get(&in), cfg3 = get(&in);
	unsigned cfg4 = get(&in), k;
	unsigned ops = 0;
	struct tb_buf_ident ident = { UID, PID };
	struct tb_bridge_config bc;
	struct tb_service_config sc;
	struct tb_service_stats ss;

	memset(&G, 0, offsetof(struct pl, must));
	memset(G.must, 0, sizeof(G.must));
	memset(G.quiet, 0, sizeof(G.quiet));
	memset(&A, 0, sizeof(A));
	if (!G.obuf) {
		static uint8_t obuf[OUT_CAP];

		G.obuf = obuf;
	}
	G.cs = sizes[cfg & 3];
	G.nc = 2u << (cfg >> 2 & 3);
	G.nh = 1 + (cfg >> 4 & 3) % NH;
	G.nbufs = 1 + (cfg2 & 1);
	A.fail_at = cfg3 & 0x80 ? 1 + (cfg3 & 0x7f) : 0;
	G.len = tb_ring_size(G.cs, G.nc);
	/* aligned to TB_RING_LINE, as tb_ring_init() requires */
	if (posix_memalign((void **)&G.mem, TB_RING_LINE, G.len))
		G.mem = NULL;
	else
		memset(G.mem, 0, G.len);
	G.rscratch = (uint8_t *)malloc(G.cs);
	G.liar_scratch = (uint8_t *)malloc(G.cs);
	CHECK(G.mem && G.rscratch && G.liar_scratch);
	CHECK(tb_ring_init_at(&G.ring, G.mem, G.len, G.cs, G.nc,
			      cfg4 & 1 ? 0u - (cfg4 >> 1 & 0x1f) : 0) == TB_OK);
	for (k = 0; k < G.nbufs; k++) {
		/* 4, 8 or 16 KiB; ring buffer or discard */
		size_t bs = 4096u << (cfg2 >> (1 + 2 * k) & 3) % 3;

		G.bufs[k] = tb_buf_create_with(bs, cfg2 >> (5 + k) & 1 ?
					       TB_BUF_DISCARD :
					       TB_BUF_RING_BUFFER, hook, NULL);
		if (!G.bufs[k])
			goto out;	/* the hook refused: nothing to run */
	}
	memset(&bc, 0, sizeof(bc));
	bc.ring = &G.ring;
	bc.scratch = G.rscratch;
	bc.producer_id = PRODUCER;
	bc.ident = ident;
	bc.bufs = G.bufs;
	bc.nbufs = G.nbufs;
	bc.alloc = hook;
	CHECK(tb_bridge_init(&G.br, &bc) == TB_OK);
	for (k = 0; k < G.nh; k++) {
		struct hw *h = &G.hw[k];

		h->scratch = (uint8_t *)malloc(G.cs);
		CHECK(h->scratch);
		h->bid = (uint16_t)(k % G.nbufs);
		CHECK(tb_writer_init(&h->w, &G.ring, (uint16_t)(k + 1), h->bid,
				     TB_DROP, h->scratch) == TB_OK);
		G.last_seq[k] = -1;
		G.lenient_seq[k] = -1;
	}
	G.liar_id = (uint16_t)(LIAR_ID + cfg4 % 8);
	CHECK(tb_writer_init(&G.liar, &G.ring, G.liar_id,
			     (uint16_t)(cfg >> 6), TB_DROP,
			     G.liar_scratch) == TB_OK);
	G.out.write = out_write;
	memset(&sc, 0, sizeof(sc));
	sc.bell = G.ring.bell;
	sc.slots = G.rings;
	sc.max_rings = 1;
	sc.bufs = G.bufs;
	sc.nbufs = G.nbufs;
	sc.out = &G.out;
	sc.wait_ms = 0;		/* never sleeps */
	sc.period_ms = cfg4 & 0x80 ? 3 : 0;
	sc.on_ring_error = on_ring_error;
	CHECK(tb_service_init(&G.svc, &sc) == TB_OK);
	CHECK(tb_service_add(&G.svc, &G.br, &k) == TB_OK && k == 0);

	while (in.n && ops++ < MAXOPS) {
		unsigned op = get(&in);

		TRACE("op %u (%u)\n", op % 16, op);
		switch (op % 16) {
		case 0: case 1: case 2: case 3: case 4:
			honest((op >> 4) % G.nh, get(&in), &in);
			break;
		case 5: case 6:
			liar(get(&in), &in);
			break;
		case 7: case 8:
			scribble(get(&in), &in);
			break;
		case 9: case 10:
			k = (unsigned)tb_bridge_drain(&G.br, 1 + (op >> 4) % 8,
						      op & 0x80 ?
						      TB_READ_SCRAPE :
						      TB_READ_LAZY, NULL);
			TRACE("  drain -> %d\n", (int)k);
			break;
		case 11:
			write_trace((op >> 4) % G.nbufs);
			break;
		case 12:
			G.now += op >> 4;
			tb_service_poll(&G.svc, G.now);
			check_out();
			break;
		case 13:
			tb_service_request_flush(&G.svc);
			break;
		case 14:
			tb_writer_release(&G.hw[(op >> 4) % G.nh].w);
			G.hw[(op >> 4) % G.nh].open = 0;
			break;
		default: {
			struct tb_ring_stats st;

			tb_ring_stats(&G.ring, &st);
			(void)get32(&in);
			break;
		}
		}
	}
	finish(cfg2 >> 7 | (cfg4 >> 6 & 1) << 1);
	tb_service_stats(&G.svc, &ss);
	CHECK((unsigned)G.ring_errors == ss.stopped_rings + ss.pinned_rings);
out:
	tb_bridge_destroy(&G.br);
	for (k = 0; k < G.nbufs; k++)
		tb_buf_destroy(G.bufs[k]);
	CHECK(A.n == 0);	/* no leak */
	for (k = 0; k < G.nh; k++)
		free(G.hw[k].scratch);
	free(G.liar_scratch);
	free(G.rscratch);
	free(G.mem);
	return 0;
}
