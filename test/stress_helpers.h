/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * stress_helpers.h - shared by test_stress.c and test_xproc.c:
 * self-checking packets and a per-writer reassembler over the chunks a
 * struct tb_reader emits.
 *
 * A packet is a 16-byte header and a payload derived from it, so any
 * torn, shifted, duplicated or misattributed byte shows:
 *
 *   [0, 2)    writer index, little-endian
 *   [2, 4)    magic 0xa75b
 *   [4, 8)    seq
 *   [8, 12)   total length, header included
 *   [12, 16)  FNV-1a checksum of the payload
 *   [16, len) payload: a xorshift stream seeded from {writer, seq}
 *
 * The reassembler follows each writer's chunks in position order: the
 * first fragment of a chunk with TB_F_CONT_PREV continues the writer's
 * pending packet, the last fragment of a chunk with TB_F_CONT_NEXT leaves
 * it pending; a pending packet followed by a fragment that does not
 * continue it was lost (its writer saw an error) and is discarded.  Every
 * whole packet is checked: per-writer strictly increasing seq (so exactly
 * once), length, checksum, every payload byte.  Data-loss flags: a packet
 * after a seq gap must have started after a chunk flagged TB_F_DATA_LOSS
 * (docs/protocol.md 3.4); with strict_loss (writers that never retry a seq) a
 * flag also means a gap.
 *
 * Everything is static (but the seam pointer tb_test_atomic, which
 * TB_TEST_HOOKS needs): one copy per test program, no shared state.
 */
#ifndef STRESS_HELPERS_H
#define STRESS_HELPERS_H

#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef TB_TEST_HOOKS
#error "stress_helpers.h: define TB_TEST_HOOKS before including tbring.h"
#endif
#include "tbring.h"

/* the atomics seam of tbsync.h, unused here (TB_TEST_HOOKS needs it) */
void (*tb_test_atomic)(const uint32_t *p, int op, uint32_t expect,
		       uint32_t v, int ok, int fail);

#define SH_HDR		16u
#define SH_MAGIC	0xa75bu
#define SH_MAX_WRITERS	8
#define SH_ABANDONED	(-50)	/* sh_write_stalling() gave the packet up */

/* ------------------------------------------------------------------------
 * Randomness: xorshift64*, one state per thread.
 */
static uint64_t sh_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* Uniform enough in [lo, hi]. */
static uint32_t sh_range(uint64_t *s, uint32_t lo, uint32_t hi)
{
	return lo + (uint32_t)(sh_rand(s) % ((uint64_t)hi - lo + 1));
}

static uint64_t sh_seed(uint64_t a, uint64_t b)
{
	uint64_t s = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);

	s ^= s >> 31;
	return s ? s : 1;
}

/* ------------------------------------------------------------------------
 * Packets.
 */
static void sh_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t sh_get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* Payload byte stream of packet {writer, seq}: fills [0, n). */
static void sh_payload(uint8_t *out, uint32_t n, unsigned writer,
		       uint32_t seq)
{
	uint64_t s = sh_seed(writer + 1, seq);
	uint64_t x = 0;
	uint32_t i;

	for (i = 0; i < n; i++) {
		if (!(i & 7))
			x = sh_rand(&s);
		out[i] = (uint8_t)(x >> (i & 7) * 8);
	}
}

static uint32_t sh_fnv(const uint8_t *p, uint32_t n)
{
	uint32_t h = 2166136261u;
	uint32_t i;

	for (i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

/* Builds packet {writer, seq} of @len >= SH_HDR bytes in @pkt. */
static void sh_fill(uint8_t *pkt, unsigned writer, uint32_t seq,
		    uint32_t len)
{
	pkt[0] = (uint8_t)writer;
	pkt[1] = (uint8_t)(writer >> 8);
	pkt[2] = (uint8_t)SH_MAGIC;
	pkt[3] = (uint8_t)(SH_MAGIC >> 8);
	sh_put32(pkt + 4, seq);
	sh_put32(pkt + 8, len);
	sh_payload(pkt + SH_HDR, len - SH_HDR, writer, seq);
	sh_put32(pkt + 12, sh_fnv(pkt + SH_HDR, len - SH_HDR));
}

/* ------------------------------------------------------------------------
 * A writer that stalls with a fragment open.
 */
struct sh_stall {
	uint32_t syncs;		/* tb_writer_sync() calls */
	uint32_t moved;		/* ... that relocated the open fragment */
	uint32_t abandoned;	/* packets given up with a fragment open */
	const char *bad;	/* a broken promise of the API, or NULL */
};

static void sh_spin(uint64_t *rng)
{
	unsigned i, n = sh_range(rng, 0, 2000);
	volatile unsigned sink = 0;

	for (i = 0; i < n; i++)
		sink += i;
	(void)sink;
}

/* A pause while a fragment is open: one yield, a spin, several yields. */
static void sh_pause(uint64_t *rng)
{
	unsigned i, n;

	switch (sh_range(rng, 0, 3)) {
	case 0:
		sched_yield();
		break;
	case 1:
		sh_spin(rng);
		break;
	case 2:
		n = sh_range(rng, 1, 8);
		for (i = 0; i < n; i++)
			sched_yield();
		break;
	default:
		break;
	}
}

/*
 * The fill seam of tb_writer_write_packet() (TB_TEST_HOOKS) for each
 * fragment it opens past its fast path: a random part written, a stall
 * with the fragment open, maybe tb_writer_sync() and a rebase of the
 * write pointer (twice), the rest written, maybe another stall; the
 * library then copies the piece (again) and closes it.  Checks that a
 * sync keeps the bytes written and leaves room for the piece.  Now and
 * then it abandons the packet instead, with the fragment open
 * (tb_writer_release()): SH_ABANDONED, the packet is lost.
 */
struct sh_fill_ctx {
	uint64_t *rng;
	struct sh_stall *st;
};

static int sh_fill_stalling(void *ctx, struct tb_writer *w,
			    struct tb_span *s, const uint8_t *p, uint32_t n)
{
	struct sh_fill_ctx *c = (struct sh_fill_ctx *)ctx;
	uint32_t used = sh_range(c->rng, 0, n);
	unsigned round;
	int ret;

	memcpy(s->begin, p, used);
	if (!sh_range(c->rng, 0, 40)) {
		ret = tb_writer_release(w);
		if (ret != TB_OK && ret != TB_DROPPED)
			c->st->bad = "release of an open fragment failed";
		c->st->abandoned++;
		return SH_ABANDONED;
	}
	for (round = 0; round < 2; round++) {
		uint8_t *old = s->begin;

		sh_pause(c->rng);
		if (sh_range(c->rng, 0, 2))
			continue;
		c->st->syncs++;
		ret = tb_writer_sync(w, used, s);
		if (ret)
			return ret;	/* the fragment is lost */
		if (s->begin != old)
			c->st->moved++;
		if ((uint32_t)(s->end - s->begin) < n) {
			c->st->bad = "sync: less room than the piece";
			return TB_EINVAL;
		}
		if (memcmp(s->begin, p, used)) {
			c->st->bad = "sync lost bytes of the fragment";
			return TB_EINVAL;
		}
	}
	memcpy(s->begin + used, p + used, n - used);
	if (!sh_range(c->rng, 0, 3))
		sh_pause(c->rng);
	return 0;
}

/*
 * tb_writer_write_packet() with a stall in every fragment it opens past
 * its fast path (sh_fill_stalling()): its results, or SH_ABANDONED.
 */
static int sh_write_stalling(struct tb_writer *w, const uint8_t *p,
			     uint32_t len, uint64_t *rng, struct sh_stall *st)
{
	struct sh_fill_ctx c;
	int ret;

	c.rng = rng;
	c.st = st;
	w->fill = sh_fill_stalling;
	w->fill_ctx = &c;
	ret = tb_writer_write_packet(w, p, len);
	w->fill = NULL;
	return ret;
}

/* ------------------------------------------------------------------------
 * Reassembler.
 */
struct sh_stream {
	uint8_t *buf;		/* the packet being reassembled */
	uint8_t *ref;		/* the payload it should have */
	uint32_t cap;
	uint32_t len;
	uint8_t pending;	/* it continues in a later chunk */
	uint8_t broken;		/* it lost its start: discard at its end */
	uint8_t loss_mark;	/* TB_F_DATA_LOSS seen since a packet began */
	uint8_t loss_before;	/* ... before the pending packet began */
	uint8_t *seen;		/* per seq: received */
	uint32_t nseq;
	int64_t last;		/* last seq received, -1 before the first */
	uint32_t received;
	uint32_t discarded;	/* partial packets superseded */
	uint32_t orphans;	/* continuations without a start */
	uint32_t chunks;
	uint32_t scraped;	/* chunks taken from a held chunk */
	uint32_t loss_flags;	/* chunks with TB_F_DATA_LOSS */
};

struct sh_asm {
	uint16_t base;		/* writer id of stream 0 */
	uint16_t bid;		/* BufferID of stream 0; stream i has bid + i */
	unsigned nwriters;
	struct sh_stream s[SH_MAX_WRITERS];
	uint32_t chunks;
	uint8_t strict_loss;	/* TB_F_DATA_LOSS only before a seq gap */
	uint32_t failures;
	char err[512];
};

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void sh_fail(struct sh_asm *a, const char *fmt, ...)
{
	va_list ap;

	if (a->failures++)
		return;		/* keep the first */
	va_start(ap, fmt);
	vsnprintf(a->err, sizeof(a->err), fmt, ap);
	va_end(ap);
}

/*
 * @nwriters streams for writer ids base .. base + nwriters - 1, each with
 * seqs below @nseq and packets of at most @maxlen bytes.
 */
static void sh_asm_init(struct sh_asm *a, unsigned nwriters, uint16_t base,
			uint16_t bid, uint32_t nseq, uint32_t maxlen)
{
	unsigned i;

	memset(a, 0, sizeof(*a));
	a->base = base;
	a->bid = bid;
	a->nwriters = nwriters;
	for (i = 0; i < nwriters; i++) {
		struct sh_stream *s = &a->s[i];

		s->cap = maxlen;
		s->buf = (uint8_t *)malloc(maxlen);
		s->ref = (uint8_t *)malloc(maxlen);
		s->nseq = nseq;
		s->seen = (uint8_t *)calloc(nseq ? nseq : 1, 1);
		s->last = -1;
		if (!s->buf || !s->ref || !s->seen)
			abort();
	}
}

static void sh_asm_free(struct sh_asm *a)
{
	unsigned i;

	for (i = 0; i < a->nwriters; i++) {
		free(a->s[i].buf);
		free(a->s[i].ref);
		free(a->s[i].seen);
	}
}

/* A whole packet of writer @idx: check it byte for byte. */
static void sh_deliver(struct sh_asm *a, unsigned idx, uint32_t pos)
{
	struct sh_stream *s = &a->s[idx];
	const uint8_t *p = s->buf;
	uint32_t len = s->len, seq, i;

	if (len < SH_HDR) {
		sh_fail(a, "writer %u: %u-byte packet at pos %#x", idx, len,
			pos);
		return;
	}
	seq = sh_get32(p + 4);
	if ((p[0] | p[1] << 8) != (int)idx ||
	    (p[2] | p[3] << 8) != SH_MAGIC) {
		sh_fail(a, "writer %u: header %02x%02x %02x%02x at pos %#x",
			idx, p[0], p[1], p[2], p[3], pos);
		return;
	}
	if (sh_get32(p + 8) != len) {
		sh_fail(a, "writer %u seq %u: length %u, header says %u (pos %#x)",
			idx, seq, len, sh_get32(p + 8), pos);
		return;
	}
	if (seq >= s->nseq || (int64_t)seq <= s->last) {
		sh_fail(a, "writer %u: seq %u after %lld (of %u; pos %#x): %s",
			idx, seq, (long long)s->last, s->nseq, pos,
			seq < s->nseq && s->seen[seq] ? "duplicate" :
			"out of order");
		return;
	}
	if ((int64_t)seq != s->last + 1 && !s->loss_before) {
		sh_fail(a, "writer %u: seq %u after %lld without a data-loss flag (pos %#x)",
			idx, seq, (long long)s->last, pos);
		return;
	}
	if ((int64_t)seq == s->last + 1 && s->loss_before && a->strict_loss) {
		sh_fail(a, "writer %u: data-loss flag but no gap before seq %u (pos %#x)",
			idx, seq, pos);
		return;
	}
	if (sh_fnv(p + SH_HDR, len - SH_HDR) != sh_get32(p + 12)) {
		sh_fail(a, "writer %u seq %u: checksum (len %u, pos %#x)",
			idx, seq, len, pos);
		return;
	}
	/* every payload byte against a regenerated copy */
	sh_payload(s->ref, len - SH_HDR, idx, seq);
	for (i = 0; i < len - SH_HDR; i++)
		if (s->ref[i] != p[SH_HDR + i])
			break;
	if (i < len - SH_HDR) {
		sh_fail(a, "writer %u seq %u: payload byte %u torn (len %u, pos %#x)",
			idx, seq, SH_HDR + i, len, pos);
		return;
	}
	s->last = seq;
	s->seen[seq] = 1;
	s->received++;
}

static void sh_append(struct sh_asm *a, unsigned idx, const uint8_t *p,
		      uint32_t n, uint32_t pos)
{
	struct sh_stream *s = &a->s[idx];

	if (s->broken)
		return;
	if (n > s->cap - s->len) {
		sh_fail(a, "writer %u: packet grows past %u bytes at pos %#x",
			idx, s->cap, pos);
		s->broken = 1;
		return;
	}
	memcpy(s->buf + s->len, p, n);
	s->len += n;
}

/* The tb_chunk_fn: @ctx is a struct sh_asm. */
static void sh_asm_chunk(void *ctx, const struct tb_chunk_view *v)
{
	struct sh_asm *a = (struct sh_asm *)ctx;
	const uint8_t *p = v->payload;
	unsigned idx = (unsigned)(uint16_t)(v->writer - a->base);
	struct sh_stream *s;
	uint32_t i;

	a->chunks++;
	if (idx >= a->nwriters) {
		sh_fail(a, "chunk at pos %#x from unknown writer %u",
			v->pos, v->writer);
		return;
	}
	s = &a->s[idx];
	s->chunks++;
	s->scraped += v->scraped ? 1 : 0;
	if (v->flags & TB_F_DATA_LOSS) {
		s->loss_flags++;
		s->loss_mark = 1;
	}
	if (v->bid != (uint16_t)(a->bid + idx))
		sh_fail(a, "writer %u: chunk at pos %#x has BufferID %#x",
			idx, v->pos, v->bid);
	if (!v->nfrags)
		sh_fail(a, "writer %u: empty chunk emitted at pos %#x", idx,
			v->pos);
	if (v->scraped && v->flags & TB_F_CONT_NEXT)
		sh_fail(a, "writer %u: scraped chunk with continues-on-next at pos %#x",
			idx, v->pos);
	for (i = 0; i < v->nfrags; i++) {
		bool cont_prev = !i && v->flags & TB_F_CONT_PREV;
		bool cont_next = i + 1 == v->nfrags &&
				 v->flags & TB_F_CONT_NEXT;

		if (!cont_prev && s->pending) {
			s->discarded++;		/* its writer gave up on it */
			s->pending = 0;
			s->loss_mark |= s->loss_before;
		}
		if (cont_prev && !s->pending) {
			s->orphans++;
			s->broken = 1;
			s->pending = 1;
		}
		if (!s->pending) {		/* a packet begins */
			s->len = 0;
			s->broken = 0;
			s->loss_before = s->loss_mark;
			s->loss_mark = 0;
		}
		sh_append(a, idx, p, v->sizes[i], v->pos);
		p += v->sizes[i];
		if (cont_next) {
			s->pending = 1;
			continue;
		}
		s->pending = 0;
		if (!s->broken)
			sh_deliver(a, idx, v->pos);
		s->broken = 0;
		s->len = 0;
	}
}

#endif /* STRESS_HELPERS_H */
