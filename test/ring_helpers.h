/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ring_helpers.h - shared helpers for the tbfrag/tbring conformance tests.
 *
 * Everything that checks the ABI here is written from the protocol
 * (docs/protocol.md), not from tbring.h: words are encoded with the bit
 * layout of its section 3.2 and read back from memory in the host's byte
 * order (as atomics store them), and chunks are decoded by walking the
 * little-endian directory of its section 2.1 bytewise, independently of
 * the ring's reader.
 */
#ifndef TEST_RING_HELPERS_H
#define TEST_RING_HELPERS_H

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tbring.h"

/* ------------------------------------------------------------------------
 * Protocol encodings (docs/protocol.md 3.2), independent of tbring.h's
 * encoders.
 */
#define SPEC_FREE	0u
#define SPEC_ACQ	1u
#define SPEC_CMP	2u
#define SPEC_RR		3u
#define SPEC_ACK	4u

#define SPEC_P		4u	/* flag bit 26 as a 3-bit field value */
#define SPEC_N		2u	/* bit 25 */
#define SPEC_L		1u	/* bit 24 */

static inline uint32_t spec_free(uint32_t wrap)
{
	return wrap & 0x1fffffffu;
}

/* (state << 29) | (format << 27) | (flags << 24) | (n << 16) | writer */
static inline uint32_t spec_word(uint32_t state, uint32_t format,
				 uint32_t flags3, uint32_t n, uint32_t writer)
{
	return state << 29 | format << 27 | flags3 << 24 | n << 16 | writer;
}

#define SPEC_ACKED	0x80000000u

static inline unsigned spec_width(uint32_t chunk_size)
{
	return chunk_size == 256 ? 1u : 2u;
}

/* ------------------------------------------------------------------------
 * Shared words the way another process sees them.  State words, cursors
 * and counters are 32-bit atomics, so they are in the host's byte order
 * (memcpy: no alignment assumed, no atomic needed while one thread
 * runs); only the BufferID and the size directory are little-endian
 * bytes (decode_chunk() reads those bytewise).
 */
static inline uint32_t peek32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline void poke32(void *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

/* ------------------------------------------------------------------------
 * A ring on calloc'd memory.
 */
struct tring {
	void *mem;
	size_t len;
	struct tb_ring r;
	uint32_t cs;
	uint32_t n;
};

/*
 * Zero-filled memory for a ring, aligned to TB_RING_LINE as
 * tb_ring_init() and tb_ring_attach() require (malloc()'s is not); free()
 * releases it.
 */
static inline void *ring_mem(size_t len)
{
	void *p;

	if (posix_memalign(&p, TB_RING_LINE, len ? len : 1))
		return NULL;
	memset(p, 0, len);
	return p;
}

static inline void tring_new_at(struct tring *t, uint32_t cs, uint32_t n,
				uint32_t start)
{
	t->cs = cs;
	t->n = n;
	t->len = tb_ring_size(cs, n);
	ck_assert_uint_ne(t->len, 0);
	t->mem = ring_mem(t->len);
	ck_assert_ptr_nonnull(t->mem);
	ck_assert_int_eq(tb_ring_init_at(&t->r, t->mem, t->len, cs, n, start),
			 TB_OK);
}

static inline void tring_new(struct tring *t, uint32_t cs, uint32_t n)
{
	tring_new_at(t, cs, n, 0);
}

static inline void tring_free(struct tring *t)
{
	free(t->mem);
	t->mem = NULL;
}

/* Chunk @idx (a physical index, not a position). */
static inline uint8_t *tchunk(const struct tring *t, uint32_t idx)
{
	return t->r.chunks + (size_t)idx * t->cs;
}

static inline uint32_t tword(const struct tring *t, uint32_t idx)
{
	return peek32(tchunk(t, idx));
}

/* The same word while other threads run: one atomic load. */
static inline uint32_t tword_atomic(const struct tring *t, uint32_t idx)
{
	return __atomic_load_n((const uint32_t *)(const void *)tchunk(t, idx),
			       __ATOMIC_ACQUIRE);
}

static inline void tset_word(struct tring *t, uint32_t idx, uint32_t v)
{
	poke32(tchunk(t, idx), v);
}

static inline uint32_t twrite_pos(const struct tring *t)
{
	return peek32(&t->r.hdr->write_pos);
}

static inline uint32_t tread_pos(const struct tring *t)
{
	return peek32(&t->r.hdr->read_pos);
}

static inline void tset_write_pos(struct tring *t, uint32_t v)
{
	poke32(&t->r.hdr->write_pos, v);
}

/* Reserve a position that must be granted. */
static inline uint32_t treserve(struct tring *t)
{
	uint32_t pos = 0, sample = 0;

	ck_assert_int_eq(tb_ring_reserve(&t->r, &pos, &sample), TB_OK);
	return pos;
}

/* ------------------------------------------------------------------------
 * An independent decoder: state word bytewise, BufferID at 4-5, directory
 * walked down from the end, payload from byte 6 (sections 3.1, 6).
 */
struct dchunk {
	uint32_t word;
	uint32_t state;
	uint32_t format;
	uint32_t flags3;	/* bit 2 P, bit 1 N, bit 0 L */
	uint32_t n;
	uint32_t writer;
	uint32_t bid;
	int malformed;
	uint32_t sizes[255];
	const uint8_t *frag[255];
};

static inline void decode_chunk(const uint8_t *c, uint32_t cs,
				struct dchunk *d)
{
	unsigned w = spec_width(cs), i;
	uint32_t off = 6, cap = cs - 6, total = 0;

	memset(d, 0, sizeof(*d));
	d->word = peek32(c);
	d->state = d->word >> 29;
	d->format = d->word >> 27 & 3;
	d->flags3 = d->word >> 24 & 7;
	d->n = d->word >> 16 & 0xff;
	d->writer = d->word & 0xffff;
	d->bid = (uint32_t)c[4] | (uint32_t)c[5] << 8;
	if (d->state < SPEC_ACQ || d->state > SPEC_RR)
		d->n = 0;
	if (d->n * w > cap) {
		d->malformed = 1;
		return;
	}
	for (i = 0; i < d->n; i++) {
		const uint8_t *e = c + cs - (i + 1) * w;
		uint32_t s = w == 1 ? e[0] : (uint32_t)e[0] | e[1] << 8;

		total += s;
		if (total > cap - d->n * w) {
			d->malformed = 1;
			return;
		}
		d->sizes[i] = s;
		d->frag[i] = c + off;
		off += s;
	}
}

static inline void tdecode(const struct tring *t, uint32_t idx,
			   struct dchunk *d)
{
	decode_chunk(tchunk(t, idx), t->cs, d);
}

/* Fragment @i of a decoded chunk equals the string @s. */
static inline int dfrag_is(const struct dchunk *d, unsigned i, const char *s)
{
	size_t len = strlen(s);

	return i < d->n && d->sizes[i] == len &&
	       !memcmp(d->frag[i], s, len);
}

#define ck_assert_frag(d, i, s)						\
	ck_assert_msg(dfrag_is((d), (i), (s)),				\
		      "fragment %u is not \"%s\" (n=%u size=%u)",	\
		      (unsigned)(i), (s), (unsigned)(d)->n,		\
		      (unsigned)((i) < (d)->n ? (d)->sizes[i] : 0))

/* ------------------------------------------------------------------------
 * Writers and readers with their scratch.
 */
struct twriter {
	struct tb_writer w;
	uint8_t *scratch;
};

static inline void twriter_new(struct twriter *tw, struct tring *t,
			       uint16_t id, uint16_t bid,
			       enum tb_full_policy policy)
{
	tw->scratch = (uint8_t *)malloc(t->cs);
	ck_assert_ptr_nonnull(tw->scratch);
	ck_assert_int_eq(tb_writer_init(&tw->w, &t->r, id, bid, policy,
					tw->scratch), TB_OK);
}

static inline void twriter_free(struct twriter *tw)
{
	free(tw->scratch);
}

/* One whole fragment: open (at least its length), copy, close. */
static inline int twrite(struct twriter *tw, const char *s, unsigned oflags,
			 unsigned cflags)
{
	uint32_t len = (uint32_t)strlen(s);
	struct tb_span sp;
	int ret = tb_writer_open(&tw->w, len, oflags, &sp);

	if (ret)
		return ret;
	ck_assert_uint_ge((size_t)(sp.end - sp.begin), len);
	memcpy(sp.begin, s, len);
	return tb_writer_close(&tw->w, len, cflags);
}

/* Opens a fragment and writes @s into it, leaving it open. */
static inline void topen_with(struct twriter *tw, const char *s,
			      uint32_t min, unsigned oflags,
			      struct tb_span *sp)
{
	ck_assert_int_eq(tb_writer_open(&tw->w, min, oflags, sp), TB_OK);
	ck_assert_uint_ge((size_t)(sp->end - sp->begin), strlen(s));
	memcpy(sp->begin, s, strlen(s));
}

struct treader {
	struct tb_reader rd;
	uint8_t *scratch;
};

static inline void treader_new(struct treader *tr, struct tring *t)
{
	tr->scratch = (uint8_t *)malloc(t->cs);
	ck_assert_ptr_nonnull(tr->scratch);
	ck_assert_int_eq(tb_reader_init(&tr->rd, &t->r, tr->scratch), TB_OK);
}

static inline void treader_free(struct treader *tr)
{
	free(tr->scratch);
}

/*
 * tb_reader_drain() reduced to what most tests check: the number of
 * positions resolved, or TB_EPROTO once the ring is stopped.
 */
static inline int tdrain(struct tb_reader *rd, unsigned max,
			 enum tb_read_mode mode, tb_chunk_fn fn, void *ctx)
{
	unsigned n;
	int why = tb_reader_drain(rd, max, mode, fn, ctx, &n);

	return why == TB_EPROTO ? why : (int)n;
}

/* Fragment @i of an emitted view equals @s. */
static inline int vfrag_is(const struct tb_chunk_view *v, unsigned i,
			   const char *s)
{
	const uint8_t *p = v->payload;
	unsigned j;

	if (i >= v->nfrags || v->sizes[i] != strlen(s))
		return 0;
	for (j = 0; j < i; j++)
		p += v->sizes[j];
	return !memcmp(p, s, strlen(s));
}

#define ck_assert_vfrag(v, i, s)					\
	ck_assert_msg(vfrag_is((v), (i), (s)),				\
		      "emitted fragment %u is not \"%s\"", (unsigned)(i), (s))

/* Collects emitted chunks from tb_reader_drain(), fragments copied out. */
#define COLLECT_MAX	64
struct collect {
	unsigned count;
	struct {
		uint32_t pos;
		uint16_t writer;
		uint16_t bid;
		uint32_t flags;
		uint32_t nfrags;
		uint32_t scraped;
		char frag[8][64];
	} c[COLLECT_MAX];
};

static inline void collect_fn(void *ctx, const struct tb_chunk_view *v)
{
	struct collect *col = (struct collect *)ctx;
	const uint8_t *p = v->payload;
	unsigned i;

	ck_assert_uint_lt(col->count, COLLECT_MAX);
	col->c[col->count].pos = v->pos;
	col->c[col->count].writer = v->writer;
	col->c[col->count].bid = v->bid;
	col->c[col->count].flags = v->flags;
	col->c[col->count].nfrags = v->nfrags;
	col->c[col->count].scraped = v->scraped;
	for (i = 0; i < v->nfrags && i < 8; i++) {
		size_t n = v->sizes[i] < 63 ? v->sizes[i] : 63;

		memcpy(col->c[col->count].frag[i], p, n);
		col->c[col->count].frag[i][n] = 0;
		p += v->sizes[i];
	}
	col->count++;
}

/* ------------------------------------------------------------------------
 * Misc.
 */

/*
 * A stall or a sleep this long (ms) is a hang: a test that must be woken
 * waits this long, so that a lost wake-up fails it through its timeout,
 * whatever the machine's load, and nothing checks how long it took.
 */
#define TB_HANG_MS	3600000u

static inline uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static inline void sleep_ms(unsigned ms)
{
	struct timespec ts;

	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	nanosleep(&ts, NULL);
}

/* xorshift32: deterministic, seeded. */
static inline uint32_t xs32(uint32_t *s)
{
	uint32_t x = *s;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *s = x;
}

#endif /* TEST_RING_HELPERS_H */
