/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target for tbuffer.h.
 *
 * The input is a program: each byte picks an operation on one small
 * buffer, later bytes give its arguments.  Three honest writers (producer
 * 1) emit self-describing packets, split across chunks the way a trace
 * writer does (begin / continue / end fragments, patches for the header
 * of a packet left open, scraped chunks finished later, out-of-order
 * batches, lost chunks, abort markers).  A lying producer (producer 2)
 * sends random chunks, fragment vectors and patches.  A crowd (producer 3)
 * fills the sequence table with many short-lived sequences at once, so
 * that empty ones are swept and the table moves entries back.  Reads,
 * partial read batches, clones and overwrites (with and without a
 * callback) interleave.
 *
 * Checked on every packet of producer 1, read back or overwritten: its
 * bytes match the checksum and pattern it was written with, it belongs to
 * the writer it comes from, it was written, and each writer's packets
 * come out in strictly increasing order.  Each honest patch lands on its
 * own chunk: a lookup that bypasses the patch cache finds the chunk
 * exactly when the patch took, with the patch's bytes in it.  Packets of
 * the liar and the crowd are only touched (ASan checks the slices).
 * Nothing may crash or trap.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Few empty sequences kept: a crowd of 170 makes the table sweep. */
#define TB_BUF_KEEP_EMPTY_SEQ	32u
#include "tbuffer.h"
#include "fuzz/fuzz_input.h"

#define NW		3		/* honest writers */
#define MAXPKT		700
#define MAXCHUNK	1024


/* ---- Honest packets ----------------------------------------------------- */

/*
 * [0] 0xa5, [1] writer, [2..5] seq, [6..7] length, body, [len - 1]
 * checksum.  Body byte i is (seq * 31 + i) & 0xff.
 */
static uint32_t mk_packet(uint8_t *p, unsigned w, uint32_t seq, uint32_t len)
{
	uint32_t i;
	uint8_t sum = 0;

	p[0] = 0xa5;
	p[1] = (uint8_t)w;
	memcpy(p + 2, &seq, 4);
	p[6] = (uint8_t)len;
	p[7] = (uint8_t)(len >> 8);
	for (i = 8; i < len - 1; i++)
		p[i] = (uint8_t)(seq * 31 + i);
	for (i = 0; i < len - 1; i++)
		sum = (uint8_t)(sum + p[i]);
	p[len - 1] = sum ^ 0x5a;
	return len;
}

struct checker {
	uint32_t next[NW];	/* packets started by each writer */
	uint32_t seen[NW];	/* 1 + last packet seen */
	uint64_t packets;
};

static void check_packet(struct checker *k, const struct tb_buf_packet *p)
{
	static uint8_t flat[MAXPKT + 64];
	uint32_t seq, len, i, off = 0;
	uint8_t sum = 0;
	unsigned w, s;

	for (s = 0; s < p->nslices; s++) {
		CHECK(p->slices[s].size && p->slices[s].data);
		if (p->producer_id == 1) {
			CHECK(off + p->slices[s].size <= MAXPKT);
			memcpy(flat + off, p->slices[s].data,
			       p->slices[s].size);
		} else {
			volatile uint8_t touch = 0;

			for (i = 0; i < p->slices[s].size; i++)
				touch ^= p->slices[s].data[i];
			(void)touch;
		}
		off += (uint32_t)p->slices[s].size;
	}
	CHECK(off == p->size);
	if (p->producer_id != 1)
		return;
	CHECK(off >= 10 && flat[0] == 0xa5);
	w = flat[1];
	CHECK(w < NW && w + 1 == p->writer_id);
	memcpy(&seq, flat + 2, 4);
	len = flat[6] | (uint32_t)flat[7] << 8;
	CHECK(len == off);
	for (i = 8; i < len - 1; i++)
		CHECK(flat[i] == (uint8_t)(seq * 31 + i));
	for (i = 0; i < len - 1; i++)
		sum = (uint8_t)(sum + flat[i]);
	CHECK(flat[len - 1] == (sum ^ 0x5a));
	/* Written, and after everything seen before on its sequence. */
	CHECK(seq < k->next[w]);
	CHECK(seq >= k->seen[w]);
	k->seen[w] = seq + 1;
	k->packets++;
}

/* ---- Honest writers ----------------------------------------------------- */

struct chunk {
	uint8_t b[MAXCHUNK];
	uint32_t cap;		/* SMB chunk size */
	uint32_t used;
	uint16_t nfrags;
	uint8_t flags;
	uint32_t id;
	uint32_t ends[256];	/* fragment end offsets */
};

struct writer {
	uint32_t next_id;
	uint8_t pkt[MAXPKT];
	uint32_t pkt_len, pkt_off;	/* packet being split, if pkt_len */
	int open;			/* a scraped chunk awaits its commit */
	struct chunk oc;
	uint32_t cut;			/* bytes of oc scraped so far */
	int has_patch;
	struct tb_buf_patch patch;
	uint32_t patch_id;
};

static struct tb_buf *buf;
static struct checker chk;
static struct writer wr[NW];

static void build(struct writer *w, unsigned wi, struct in *in,
		  struct chunk *c, int want_patch, int want_abort)
{
	unsigned max_pkts = 1 + get(in) % 6;

	memset(c, 0, sizeof(*c));
	c->cap = 16 + get16(in) % (MAXCHUNK - 16);
	c->id = w->next_id++;
	if (w->pkt_len)
		c->flags |= TB_BUF_FIRST_CONT;
	while (c->nfrags < 200) {
		uint32_t rem, room = c->cap - c->used, take, hdr, begin;

		if (!w->pkt_len) {
			if (!max_pkts--)
				break;
			w->pkt_len = mk_packet(w->pkt, wi, chk.next[wi]++,
					       10 + get16(in) % (MAXPKT - 10));
			w->pkt_off = 0;
		}
		rem = w->pkt_len - w->pkt_off;
		if (tb_pb_varint_len(rem) + rem <= room) {
			c->used += tb_pb_varint_put(c->b + c->used, rem);
			memcpy(c->b + c->used, w->pkt + w->pkt_off, rem);
			c->used += rem;
			c->ends[c->nfrags++] = c->used;
			w->pkt_len = 0;
			continue;
		}
		/* Split: the rest of the packet continues on the next chunk. */
		if (room < 3)
			break;
		take = room - 2;
		hdr = tb_pb_varint_put(c->b + c->used, take);
		begin = c->used + hdr;
		memcpy(c->b + begin, w->pkt + w->pkt_off, take);
		if (want_patch && !w->pkt_off && take >= 4 && !w->has_patch) {
			/* The header is left open, to be patched later. */
			w->has_patch = 1;
			w->patch_id = c->id;
			w->patch.offset = begin;
			memcpy(w->patch.data, c->b + begin, 4);
			memset(c->b + begin, 0, 4);
			c->flags |= TB_BUF_NEEDS_PATCH;
		}
		w->pkt_off += take;
		c->used = begin + take;
		c->ends[c->nfrags++] = c->used;
		c->flags |= TB_BUF_LAST_CONT;
		return;
	}
	if (want_abort && c->cap - c->used >= 4) {
		static const uint8_t marker[4] = { 0xff, 0xff, 0xff, 0x7f };

		memcpy(c->b + c->used, marker, 4);
		c->used += 4;
		c->nfrags++;
	}
}

static void commit(unsigned wi, const struct chunk *c, int complete,
		   uint32_t size, uint16_t nfrags)
{
	struct tb_buf_chunk_in ci;

	memset(&ci, 0, sizeof(ci));
	ci.producer_id = 1;
	ci.ident.uid = 1000;
	ci.ident.pid = 100;
	ci.writer_id = (uint16_t)(wi + 1);
	ci.chunk_id = c->id;
	ci.flags = c->flags;
	ci.nfrags = nfrags;
	ci.complete = complete != 0;
	ci.payload = c->b;
	ci.size = size;
	tb_buf_copy_chunk(buf, &ci);
}

/*
 * Whether writer @wi's open chunk must be given up: it was scraped,
 * evicted, and then its emptied sequence swept, so the buffer no longer
 * knows what of it was read, and would read it all again.  Lost instead.
 */
static int open_forgotten(unsigned wi)
{
	struct writer *w = &wr[wi];

	if (!w->open ||
	    tb__buf_seq_find(buf, tb__buf_key(1, (uint16_t)(wi + 1))))
		return 0;
	w->open = 0;
	return 1;
}

static void finish_open(unsigned wi)
{
	struct writer *w = &wr[wi];

	if (!w->open || open_forgotten(wi))
		return;
	commit(wi, &w->oc, 1, w->oc.cap, w->oc.nfrags);
	w->open = 0;
}

/* Scrapes the open chunk up to a later point than last time. */
static void scrape(unsigned wi, struct in *in)
{
	struct writer *w = &wr[wi];
	static struct chunk s;
	uint32_t k = 0;

	open_forgotten(wi);
	if (!w->open) {
		build(w, wi, in, &w->oc, get(in) & 1, 0);
		w->open = 1;
		w->cut = 0;
	}
	w->cut += get16(in) % (w->oc.used + 1);
	if (w->cut > w->oc.used)
		w->cut = w->oc.used;
	while (k < w->oc.nfrags && w->oc.ends[k] <= w->cut)
		k++;
	/* Bytes past the cut are not written yet; the started one drops. */
	s = w->oc;
	memset(s.b + w->cut, 0, sizeof(s.b) - w->cut);
	commit(wi, &s, 0, s.cap, (uint16_t)(k < s.nfrags ? k + 1 : k));
}

/*
 * Writer @wi's patch returned @r.  Its chunk, looked up without the patch
 * cache (tb_buf.pkey, which a table that moved entries must forget), is
 * in the buffer unless the patch found none (an honest chunk waiting for
 * a patch leaves only when overwritten); a patch that took left its bytes
 * there, and one refused as out of range ran past the payload (a scraped
 * chunk holds only what its writer had written).
 */
static void check_patch(unsigned wi, int r)
{
	const struct writer *w = &wr[wi];
	const struct tb__buf_seq *s =
		tb__buf_seq_find(buf, tb__buf_key(1, (uint16_t)(wi + 1)));
	const struct tb__buf_ref *ref =
		s ? tb__buf_ring_find(s, w->patch_id) : NULL;
	struct tb__buf_hdr *c = ref ? tb__buf_hdr_at(buf, ref->off) : NULL;

	TRACE("patch writer %u chunk %u -> %d\n", wi, w->patch_id, r);
	CHECK(r == TB_OK || r == TB_ENOENT || r == TB_ERANGE);
	CHECK((r == TB_ENOENT) == !c);
	if (r == TB_OK)
		CHECK(!memcmp(tb__buf_payload(c) + w->patch.offset,
			      w->patch.data, 4));
	if (r == TB_ERANGE)
		CHECK(w->patch.offset + 4 > c->payload_size);
}

static void honest(unsigned op, struct in *in)
{
	unsigned wi = get(in) % NW, i, n;
	struct writer *w = &wr[wi];
	static struct chunk c[3];

	switch (op) {
	case 0:		/* commit one chunk */
		if (w->open) {
			finish_open(wi);
			break;
		}
		n = get(in);
		build(w, wi, in, &c[0], n & 1, (n & 6) == 6);
		commit(wi, &c[0], 1, c[0].cap, c[0].nfrags);
		break;
	case 1:		/* scrape the chunk being written */
		scrape(wi, in);
		break;
	case 2:		/* out-of-order batch */
		finish_open(wi);
		n = 2 + get(in) % 2;
		for (i = 0; i < n; i++)
			build(w, wi, in, &c[i], 0, 0);
		for (i = n; i-- > 0;)
			commit(wi, &c[i], 1, c[i].cap, c[i].nfrags);
		break;
	case 3:		/* a chunk lost before it reached the service */
		finish_open(wi);
		build(w, wi, in, &c[0], 0, 0);
		break;
	default:	/* deliver the pending patch */
		if (w->has_patch) {
			check_patch(wi, tb_buf_patch(buf, 1, (uint16_t)(wi + 1),
						     w->patch_id, &w->patch, 1,
						     false));
			w->has_patch = 0;
		}
		break;
	}
}

/* ---- The liar ----------------------------------------------------------- */

static void liar(unsigned op, struct in *in)
{
	static uint8_t junk[MAXCHUNK + 64];
	struct tb_buf_chunk_in ci;
	struct tb_buf_frag fr[8];
	struct tb_buf_patch p[2];
	unsigned n = get(in) % 64, i;

	for (i = 0; i < n; i++)
		junk[i] = (uint8_t)get(in);
	memset(&ci, 0, sizeof(ci));
	ci.producer_id = 2;
	ci.writer_id = (uint16_t)(get(in) % 4);
	ci.chunk_id = get(in) % 8 + (get(in) & 1 ? 0x7ffffffcu : 0);
	ci.flags = (uint8_t)get(in);
	ci.nfrags = (uint16_t)(get(in) % 12);
	ci.complete = get(in) & 1;
	ci.payload = junk;
	ci.size = (get(in) & 1) ? n : get16(in) % sizeof(junk);
	switch (op) {
	case 0:
		tb_buf_copy_chunk(buf, &ci);
		break;
	case 1:
		n = get(in) % 8;
		for (i = 0; i < n; i++) {
			fr[i].data = junk + get(in) % 32;
			fr[i].size = get(in) % 33;
			if (get(in) == 0xff)
				fr[i].size = TB_PB_SIZE_ABORT;
		}
		tb_buf_copy_frags(buf, &ci, fr, n);
		break;
	default:
		n = get(in) % 3;
		for (i = 0; i < 2; i++) {
			p[i].offset = get16(in) % 80;
			memcpy(p[i].data, junk + i, 4);
		}
		tb_buf_patch(buf, 2, ci.writer_id, ci.chunk_id, p, n,
			     get(in) & 1);
		break;
	}
}

/* ---- Reading ------------------------------------------------------------ */

static void read_some(struct tb_buf *b, struct checker *k, unsigned max);

/*
 * The crowd: up to 200 sequences of producer 3 (writers from @in), a
 * one-byte packet each, all read at once; three crowds an input at most
 * (they are slow).  Past TB_BUF_GC_THRESHOLD (160) empty sequences the
 * next commit sweeps the oldest, and deleting them moves other entries of
 * the table back, the honest writers' among them.
 */
static unsigned crowds;

static void crowd(struct in *in)
{
	static const uint8_t one[2] = { 1, 0x3c };
	struct tb_buf_chunk_in ci;
	unsigned base = get16(in), n = 1 + get16(in) % 200, i;

	memset(&ci, 0, sizeof(ci));
	ci.producer_id = 3;
	ci.nfrags = 1;
	ci.complete = true;
	ci.payload = one;
	ci.size = sizeof(one);
	if (++crowds > 3)
		return;
	for (i = 0; i < n; i++) {
		ci.writer_id = (uint16_t)(base + i);
		tb_buf_copy_chunk(buf, &ci);
	}
	read_some(buf, &chk, ~0u);
}

static void on_overwrite(void *ctx, const struct tb_buf_packet *p)
{
	(void)ctx;
	CHECK(p->loss == 0);
	check_packet(&chk, p);
	/* Re-entry is refused. */
	CHECK(tb_buf_patch(buf, 1, 1, 0, NULL, 0, false) == TB_EBUSY);
}

static void read_some(struct tb_buf *b, struct checker *k, unsigned max)
{
	struct tb_buf_packet p;

	tb_buf_begin_read(b);
	while (max-- && tb_buf_read_packet(b, &p)) {
		CHECK(!(p.loss & ~0x1ffu));
		CHECK(!p.loss || (p.loss & TB_BUF_LOSS_PRESENT));
		check_packet(k, &p);
	}
}

static void clone_and_read(void)
{
	struct tb_buf *c = tb_buf_clone_readonly(buf);
	struct checker k = chk;

	if (!c)
		return;
	read_some(c, &k, ~0u);
	CHECK(tb_buf_stats(c)->chunks_written ==
	      tb_buf_stats(buf)->chunks_written);
	{
		struct tb_buf_chunk_in ci;

		memset(&ci, 0, sizeof(ci));
		ci.producer_id = 1;
		ci.writer_id = 1;
		ci.complete = true;
		CHECK(tb_buf_copy_chunk(c, &ci) == TB_EROFS);
	}
	tb_buf_destroy(c);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_init(argc, argv);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	unsigned cfg = get(&in), i;

	buf = tb_buf_create(4096u << (cfg & 3),
			    (cfg & 4) ? TB_BUF_DISCARD : TB_BUF_RING_BUFFER);
	CHECK(buf);
	if (cfg & 8)
		tb_buf_on_overwrite(buf, on_overwrite, NULL);
	memset(&chk, 0, sizeof(chk));
	memset(wr, 0, sizeof(wr));
	crowds = 0;
	for (i = 0; i < NW; i++)
		wr[i].next_id = (cfg & 16) ? 0xfffffff0u + i * 3 : i * 100;

	while (in.n) {
		unsigned op = get(&in);

		switch (op & 15) {
		case 0: case 1: case 2: case 3: case 4: case 5:
			honest((op >> 4) % 5, &in);
			break;
		case 6: case 7: case 8:
			liar((op & 15) - 6, &in);
			break;
		case 9: case 10:
			read_some(buf, &chk, get(&in) % 8);
			break;
		case 11:
			read_some(buf, &chk, ~0u);
			break;
		case 12:
			clone_and_read();
			break;
		case 15:
			crowd(&in);
			break;
		default:
			honest(0, &in);
			break;
		}
	}
	read_some(buf, &chk, ~0u);
	tb_buf_destroy(buf);
	return 0;
}
