/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_tbservice.c - tbservice.h against issue 4, sections 1-3 and 6: the
 * bridge from a ring reader into central buffers, the Perfetto trace
 * writer and the service loop.
 *
 * Packets are checked end to end: every packet a writer writes names its
 * writer, sequence number and length and carries a pattern derived from
 * them, so a packet read back from a buffer or a trace is either exactly
 * one that was written or a failure.  Traces are decoded with
 * trace_decode.h, independently of tbservice.h's encoder.
 */
/* the protocol steps, one at a time (see tbring.h) */
#define TB_PROTOCOL_STEPS 1
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/tbcheck.h"
#include "tbservice.h"
#include "ring_helpers.h"
#include "trace_decode.h"

#define PRESENT		TB_BUF_LOSS_PRESENT
#define SMB_FULL	TB_BUF_LOSS_SMB_FULL
#define NBUF		2	/* central buffers in a fixture */
#define NRING		4	/* rings in a fixture, at most */
#define PROD0		1	/* producer id of ring 0; ring i is PROD0 + i */

/* ------------------------------------------------------------------------
 * Packets: a valid TracePacket body of an exact length.
 *
 *   field 1000, fixed64: writer << 48 | length << 32 | sequence number
 *   field 1001, bytes:   a pattern (absent when the length is 10)
 */
#define F_ID		1000u
#define F_PAD		1001u
#define PKT_MAX		20000u

static void put_tag2(uint8_t *p, uint32_t field, unsigned type)
{
	uint32_t key = field << 3 | type;	/* two varint bytes */

	p[0] = (uint8_t)(key | 0x80);
	p[1] = (uint8_t)(key >> 7);
}

static size_t mkpkt(uint8_t *p, uint16_t w, uint32_t seq, uint32_t len)
{
	uint64_t id = (uint64_t)w << 48 | (uint64_t)len << 32 | seq;
	size_t n = 0, i, pad;

	ck_assert(len == 10 || (len >= 14 && len <= PKT_MAX));
	put_tag2(p, F_ID, 1);
	n = 2;
	for (i = 0; i < 8; i++)
		p[n++] = (uint8_t)(id >> 8 * i);
	if (len == 10)
		return n;
	pad = len - 14;
	put_tag2(p + n, F_PAD, 2);
	n += 2;
	p[n++] = (uint8_t)(pad | 0x80);		/* two varint bytes */
	p[n++] = (uint8_t)(pad >> 7);
	for (i = 0; i < pad; i++)
		p[n++] = (uint8_t)(seq * 7u + w * 13u + i);
	return n;
}

/*
 * Checks that @p starts with a packet mkpkt() made (exactly @size bytes
 * when @exact) and returns its length, writer and sequence number; -1 if
 * it is not one.
 */
static int pkt_parse(const uint8_t *p, size_t size, int exact, uint16_t *w,
		     uint32_t *seq, uint32_t *len)
{
	static uint8_t want[PKT_MAX];
	uint64_t id = 0;
	unsigned i;

	if (size < 10 || p[0] != (uint8_t)((F_ID << 3 | 1) | 0x80) ||
	    p[1] != (uint8_t)((F_ID << 3 | 1) >> 7))
		return -1;
	for (i = 0; i < 8; i++)
		id |= (uint64_t)p[2 + i] << 8 * i;
	*w = (uint16_t)(id >> 48);
	*len = (uint32_t)(id >> 32) & 0xffffu;
	*seq = (uint32_t)id;
	if ((*len != 10 && (*len < 14 || *len > PKT_MAX)) || *len > size ||
	    (exact && *len != size))
		return -1;
	mkpkt(want, *w, *seq, *len);
	return memcmp(want, p, *len) ? -1 : 0;
}

/* Writes packet @seq of @len bytes as one whole packet; TB_OK expected. */
static int wpkt(struct twriter *tw, uint32_t seq, uint32_t len)
{
	static uint8_t p[PKT_MAX];

	mkpkt(p, tw->w.id, seq, len);
	return tb_writer_write_packet(&tw->w, p, len);
}

static void wpkt_ok(struct twriter *tw, uint32_t seq, uint32_t len)
{
	ck_assert_int_eq(wpkt(tw, seq, len), TB_OK);
}

/* ------------------------------------------------------------------------
 * Reading a central buffer back.
 */
struct got {
	uint16_t p, w;		/* sequence: producer and writer */
	uint16_t pw;		/* writer named in the payload */
	uint32_t seq, len, loss;
	unsigned nslices;
};

static struct got g[40000];

/* Begins a read and reads up to @max packets, each checked. */
static int read_buf(struct tb_buf *b, struct got *out, int max)
{
	static uint8_t flat[70000];
	struct tb_buf_packet pkt;
	int n = 0;

	tb_buf_begin_read(b);
	while (n < max && tb_buf_read_packet(b, &pkt)) {
		size_t off = 0;
		unsigned i;

		ck_assert_uint_le(pkt.size, sizeof(flat));
		for (i = 0; i < pkt.nslices; i++) {
			memcpy(flat + off, pkt.slices[i].data,
			       pkt.slices[i].size);
			off += pkt.slices[i].size;
		}
		ck_assert_uint_eq(off, pkt.size);
		ck_assert_msg(!pkt_parse(flat, off, 1, &out[n].pw,
					 &out[n].seq, &out[n].len),
			      "packet %d (%zu bytes) is not one a writer wrote",
			      n, off);
		out[n].p = pkt.producer_id;
		out[n].w = pkt.writer_id;
		out[n].loss = pkt.loss;
		out[n].nslices = pkt.nslices;
		n++;
	}
	return n;
}

/* Whether chunk @id of {@p, @w} is in the buffer (a patch of nothing). */
static int has_chunk(struct tb_buf *b, uint16_t p, uint16_t w, uint32_t id)
{
	int ret = tb_buf_patch(b, p, w, id, NULL, 0, true);

	ck_assert(ret == TB_OK || ret == TB_ENOENT);
	return ret == TB_OK;
}

/* Chunks 0 .. @n - 1 of {@p, @w} are in the buffer, chunk @n is not. */
static void assert_ids(struct tb_buf *b, uint16_t p, uint16_t w, uint32_t n)
{
	uint32_t id;

	for (id = 0; id < n; id++)
		ck_assert_msg(has_chunk(b, p, w, id),
			      "{%u, %u}: chunk id %u missing", p, w, id);
	ck_assert_msg(!has_chunk(b, p, w, n), "{%u, %u}: chunk id %u extra",
		      p, w, n);
}

/* ------------------------------------------------------------------------
 * The trace output: memory, optionally failing from the Nth write on.
 */
struct mem_out {
	uint8_t *p;
	size_t len, cap;
	unsigned calls;
	unsigned fail_at;	/* 0: never */
};

static int mem_write(void *ctx, const void *d, size_t n)
{
	struct mem_out *m = (struct mem_out *)ctx;

	m->calls++;
	if (m->fail_at && m->calls >= m->fail_at)
		return -1;
	if (m->len + n > m->cap) {
		size_t cap = m->cap ? m->cap : 4096;

		while (cap < m->len + n)
			cap *= 2;
		m->p = (uint8_t *)realloc(m->p, cap);
		if (!m->p)
			abort();
		m->cap = cap;
	}
	memcpy(m->p + m->len, d, n);
	m->len += n;
	return 0;
}

/*
 * The fields the service appended after the producer's bytes, in the
 * order they appear.
 */
struct trailer {
	unsigned n;
	uint32_t num[8];
	uint64_t val[8];
	int bad;		/* not a plain list of varint fields */
};

static void trailer_parse(const uint8_t *p, size_t size, struct trailer *t)
{
	struct pb_reader r;
	struct pb_field f;
	int ret;

	memset(t, 0, sizeof(*t));
	pb_init(&r, p, size);
	while ((ret = pb_next(&r, &f)) > 0) {
		if (f.type != 0 || t->n == 8) {
			t->bad = 1;
			return;
		}
		t->num[t->n] = f.number;
		t->val[t->n++] = f.value;
	}
	if (ret < 0)
		t->bad = 1;
}

/* A decoded trace packet that a writer wrote (mkpkt), with its trailer. */
struct tpkt {
	uint16_t w;
	uint32_t seq, len;
	uint64_t uid, seqid, pid, dropped;
	int has_dropped;
	int standin;	/* only trusted fields: stands in for a bad packet */
};

struct tcol {
	struct tpkt *v;
	size_t n, cap;
	unsigned foreign;	/* packets not made by mkpkt() */
	unsigned service;	/* the service's own (TraceStats, ...) */
	int stats_last;		/* the last packet is a TraceStats */
	unsigned bad_trailer;	/* trailer not 3, 10, 79 [, 42] */
};

/* Whether a TracePacket holds trace_stats (35). */
static int has_trace_stats(const uint8_t *p, size_t n)
{
	struct tb_pb_reader r;
	struct tb_pb_field f;

	tb_pb_reader_init(&r, p, n);
	while (tb_pb_next(&r, &f) > 0)
		if (f.number == TB_PB_TRACE_STATS && f.type == TB_PB_LEN)
			return 1;
	return 0;
}

static void tcol_fn(void *ctx, const struct trace_packet *tp)
{
	struct tcol *c = (struct tcol *)ctx;
	struct trailer t;
	struct tpkt *x;

	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 256;
		c->v = (struct tpkt *)realloc(c->v, c->cap * sizeof(*c->v));
		if (!c->v)
			abort();
	}
	c->stats_last = 0;
	if (tp->trusted_seq_id == TB_TRACE_SERVICE_SEQ) {
		c->service++;
		c->stats_last = has_trace_stats(tp->data, tp->size);
		return;
	}
	x = &c->v[c->n];
	memset(x, 0, sizeof(*x));
	if (pkt_parse(tp->data, tp->size, 0, &x->w, &x->seq, &x->len)) {
		/* a stand-in: the trusted fields and the loss, nothing else */
		trailer_parse(tp->data, tp->size, &t);
		if (t.bad || t.n != 4 || t.num[0] != 3 || t.num[1] != 10 ||
		    t.num[2] != 79 || t.num[3] != 42) {
			c->foreign++;
			return;
		}
		x->standin = 1;
		x->len = 0;
	}
	trailer_parse(tp->data + x->len, tp->size - x->len, &t);
	if (t.bad || (t.n != 3 && t.n != 4) || t.num[0] != 3 ||
	    t.num[1] != 10 || t.num[2] != 79 || (t.n == 4 && t.num[3] != 42))
		c->bad_trailer++;
	x->uid = tp->trusted_uid;
	x->seqid = tp->trusted_seq_id;
	x->pid = tp->trusted_pid;
	x->dropped = tp->dropped;
	x->has_dropped = t.n == 4;
	c->n++;
}

/* Decodes the whole output: it must be a valid trace of our packets. */
static void decode(const struct mem_out *m, struct tcol *c)
{
	long n;

	memset(c, 0, sizeof(*c));
	n = trace_for_each(m->p, m->len, tcol_fn, c);
	ck_assert_msg(n >= 0, "the output is not a valid Trace");
	ck_assert_uint_eq((size_t)n, c->n + c->foreign + c->service);
	ck_assert_uint_eq(c->foreign, 0);
	ck_assert_uint_eq(c->bad_trailer, 0);
}

static void tcol_free(struct tcol *c)
{
	free(c->v);
	c->v = NULL;
}

/* ------------------------------------------------------------------------
 * A fixture: rings sharing one doorbell, a bridge per ring over NBUF
 * central buffers, and a trace output in memory.  Service tests serve the
 * same bridges with a tb_service (fx_serve(), on first use of svc()).
 */
struct fx {
	struct tb_bell bell;
	struct tring t[NRING];
	uint8_t *rs[NRING];
	struct tb_bridge br[NRING];
	struct tb_buf *buf[NBUF];
	unsigned nrings;
	struct mem_out mo;
	struct tb_trace_out out;
	struct tb_service_config cfg;	/* what fx_serve() starts with */
	struct tb_service_slot slots[NRING];
	struct tb_service s;
	unsigned h[NRING];		/* the rings' service handles */
	int serving;
	/* on_ring_error() */
	unsigned nerr;
	unsigned err_ring;
	int err;
};

static void on_err(void *ctx, unsigned ring, int err)
{
	struct fx *f = (struct fx *)ctx;

	f->nerr++;
	f->err_ring = ring;
	f->err = err;
}

static struct tb_buf_ident fx_ident(unsigned i)
{
	struct tb_buf_ident id;

	id.uid = 1000u + i;
	id.pid = 100 + (int32_t)i;
	return id;
}

/*
 * Sets up bridge @i of @f over its ring for @producer, into @bufs
 * (@nbufs), with @alloc (NULL: malloc).
 */
static int fx_bridge(struct fx *f, unsigned i, uint16_t producer,
		     struct tb_buf_ident id, struct tb_buf *const *bufs,
		     unsigned nbufs, tb_buf_alloc_fn alloc)
{
	struct tb_bridge_config c;

	memset(&c, 0, sizeof(c));
	c.ring = &f->t[i].r;
	c.scratch = f->rs[i];
	c.producer_id = producer;
	c.ident = id;
	c.bufs = bufs;
	c.nbufs = nbufs;
	c.alloc = alloc;
	return tb_bridge_init(&f->br[i], &c);
}

static struct fx *fx_new(unsigned nrings, uint32_t cs, uint32_t nchunks,
			 size_t bufsize)
{
	struct fx *f = (struct fx *)calloc(1, sizeof(*f));
	unsigned i;

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_le(nrings, NRING);
	f->nrings = nrings;
	for (i = 0; i < NBUF; i++) {
		f->buf[i] = tb_buf_create(bufsize, TB_BUF_RING_BUFFER);
		ck_assert_ptr_nonnull(f->buf[i]);
	}
	for (i = 0; i < nrings; i++) {
		tring_new(&f->t[i], cs, nchunks);
		tb_ring_set_bell(&f->t[i].r, &f->bell);
		f->rs[i] = (uint8_t *)malloc(cs);
		ck_assert_ptr_nonnull(f->rs[i]);
		ck_assert_int_eq(fx_bridge(f, i, (uint16_t)(PROD0 + i),
					   fx_ident(i), f->buf, NBUF, NULL),
				 TB_OK);
	}
	f->out.write = mem_write;
	f->out.ctx = &f->mo;
	f->cfg.bell = &f->bell;
	f->cfg.slots = f->slots;
	f->cfg.max_rings = NRING;
	f->cfg.bufs = f->buf;
	f->cfg.nbufs = NBUF;
	f->cfg.out = &f->out;
	f->cfg.wait_ms = 10;
	f->cfg.on_ring_error = on_err;
	f->cfg.ctx = f;
	return f;
}

/* Serves every bridge of @f with a tb_service configured from f->cfg. */
static void fx_serve(struct fx *f)
{
	unsigned i;

	ck_assert(!f->serving);
	ck_assert_int_eq(tb_service_init(&f->s, &f->cfg), TB_OK);
	for (i = 0; i < f->nrings; i++)
		ck_assert_int_eq(tb_service_add(&f->s, &f->br[i], &f->h[i]),
				 TB_OK);
	f->serving = 1;
}

static struct tb_service *svc(struct fx *f)
{
	if (!f->serving)
		fx_serve(f);
	return &f->s;
}

/* The bridge the service serves as ring @i. */
static const struct tb_bridge *sbr(struct fx *f, unsigned i)
{
	const struct tb_bridge *br = tb_service_bridge(svc(f), f->h[i]);

	ck_assert_ptr_eq(br, &f->br[i]);
	return br;
}

static struct tb_service_stats fx_stats(struct fx *f)
{
	struct tb_service_stats st;

	tb_service_stats(svc(f), &st);
	return st;
}

/* The longest sleep, before or while serving (a test-only shortcut). */
static void fx_wait(struct fx *f, uint32_t ms)
{
	f->cfg.wait_ms = ms;
	f->s.cfg.wait_ms = ms;
}

static void fx_free(struct fx *f)
{
	unsigned i;

	if (f->serving)
		tb_service_destroy(&f->s);
	for (i = 0; i < f->nrings; i++) {
		tb_bridge_destroy(&f->br[i]);
		free(f->rs[i]);
		tring_free(&f->t[i]);
	}
	for (i = 0; i < NBUF; i++)
		tb_buf_destroy(f->buf[i]);
	free(f->mo.p);
	free(f);
}

static void tw_new(struct twriter *tw, struct fx *f, unsigned ring,
		   uint16_t id, uint16_t bid)
{
	twriter_new(tw, &f->t[ring], id, bid, TB_STALL);
}

/* Writes one packet and hands its chunk over. */
static void wpkt_rel(struct twriter *tw, uint32_t seq, uint32_t len)
{
	wpkt_ok(tw, seq, len);
	ck_assert_int_eq(tb_writer_release(&tw->w), TB_OK);
}

/* Drains ring @ring's bridge: the positions resolved, or its error. */
static int drain(struct fx *f, unsigned ring, enum tb_read_mode mode)
{
	unsigned n;
	int why = tb_bridge_drain(&f->br[ring], 100000, mode, &n);

	return why < 0 ? why : (int)n;
}

/* The got[] entries of writer @w are sequence numbers 0 .. @n - 1. */
static void assert_writer_seqs(const struct got *v, int n, uint16_t w,
			       uint32_t want)
{
	uint32_t next = 0;
	int i;

	for (i = 0; i < n; i++) {
		if (v[i].w != w)
			continue;
		ck_assert_uint_eq(v[i].pw, w);
		ck_assert_msg(v[i].seq == next, "writer %u: got %u, want %u",
			      w, v[i].seq, next);
		next++;
	}
	ck_assert_uint_eq(next, want);
}

/* ------------------------------------------------------------------------
 * Bridge (issue 4, section 1)
 */
START_TEST(test_bridge_chunk_ids_start_at_zero_consecutive_per_writer)
{
	struct fx *f = fx_new(1, 1024, 16, 65536);
	struct twriter a, b;
	int i, n;

	tw_new(&a, f, 0, 1, 0);
	tw_new(&b, f, 0, 2, 0);
	/* interleaved positions: a0 b0 a1 b1 ... */
	for (i = 0; i < 6; i++) {
		wpkt_rel(&a, (uint32_t)i, 100);
		wpkt_rel(&b, (uint32_t)i, 120);
	}
	ck_assert_int_eq(drain(f, 0, TB_READ_LAZY), 12);
	ck_assert_uint_eq(f->br[0].stat[TB_BS_CHUNKS], 12);
	assert_ids(f->buf[0], PROD0, 1, 6);
	assert_ids(f->buf[0], PROD0, 2, 6);
	n = read_buf(f->buf[0], g, 100);
	ck_assert_int_eq(n, 12);
	for (i = 0; i < n; i++) {
		ck_assert_uint_eq(g[i].loss, 0);	/* no READ_GAP */
		ck_assert_uint_eq(g[i].p, PROD0);
	}
	assert_writer_seqs(g, n, 1, 6);
	assert_writer_seqs(g, n, 2, 6);
	twriter_free(&a);
	twriter_free(&b);
	fx_free(f);
}
END_TEST

START_TEST(test_bridge_chunk_ids_are_per_writer_and_buffer_id)
{
	struct fx *f = fx_new(1, 1024, 16, 65536);
	struct twriter a0, a1;
	int i, n;

	/* the same writer id targeting two BufferIDs */
	tw_new(&a0, f, 0, 5, 0);
	tw_new(&a1, f, 0, 5, 1);
	for (i = 0; i < 4; i++) {
		wpkt_rel(&a0, (uint32_t)i, 50);
		wpkt_rel(&a1, (uint32_t)i, 60);
	}
	ck_assert_int_eq(drain(f, 0, TB_READ_LAZY), 8);
	assert_ids(f->buf[0], PROD0, 5, 4);
	assert_ids(f->buf[1], PROD0, 5, 4);
	for (i = 0; i < NBUF; i++) {
		int j;

		n = read_buf(f->buf[i], g, 100);
		ck_assert_int_eq(n, 4);
		for (j = 0; j < n; j++) {
			ck_assert_uint_eq(g[j].loss, 0);
			ck_assert_uint_eq(g[j].len, i ? 60 : 50);
		}
		assert_writer_seqs(g, n, 5, 4);
	}
	twriter_free(&a0);
	twriter_free(&a1);
	fx_free(f);
}
END_TEST

START_TEST(test_bridge_packet_spanning_chunks_is_reassembled)
{
	struct fx *f = fx_new(1, 256, 32, 65536);
	struct twriter a, b;
	int n;

	tw_new(&a, f, 0, 1, 0);
	tw_new(&b, f, 0, 2, 0);
	wpkt_ok(&a, 0, 30);
	wpkt_ok(&a, 1, 1500);	/* continues over several chunks */
	wpkt_ok(&a, 2, 40);
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);
	wpkt_rel(&b, 0, 700);
	ck_assert_int_gt(drain(f, 0, TB_READ_LAZY), 8);
	n = read_buf(f->buf[0], g, 100);
	ck_assert_int_eq(n, 4);
	assert_writer_seqs(g, n, 1, 3);
	assert_writer_seqs(g, n, 2, 1);
	ck_assert_uint_eq(g[1].len, 1500);
	ck_assert_uint_ge(g[1].nslices, 6);
	ck_assert_uint_eq(g[0].loss | g[1].loss | g[2].loss | g[3].loss, 0);
	twriter_free(&a);
	twriter_free(&b);
	fx_free(f);
}
END_TEST

START_TEST(test_bridge_recorded_loss_reads_as_smb_full_on_next_packet)
{
	struct fx *f = fx_new(1, 1024, 16, 65536);
	struct twriter a, b;
	int n;

	tw_new(&a, f, 0, 1, 0);
	tw_new(&b, f, 0, 2, 0);
	wpkt_ok(&a, 0, 100);
	wpkt_ok(&a, 1, 100);
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);
	wpkt_rel(&b, 0, 100);
	tb_writer_record_loss(&a.w);
	wpkt_ok(&a, 2, 100);
	wpkt_ok(&a, 3, 100);
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);
	wpkt_rel(&a, 4, 100);
	ck_assert_int_eq(drain(f, 0, TB_READ_LAZY), 4);
	ck_assert_uint_eq(f->br[0].stat[TB_BS_LOSS_FLAGS], 1);
	/* a batch that stops before the flagged chunk sees no loss */
	ck_assert_int_eq(read_buf(f->buf[0], g, 1), 1);
	ck_assert_uint_eq(g[0].seq, 0);
	ck_assert_uint_eq(g[0].loss, 0);
	n = read_buf(f->buf[0], g, 100);
	ck_assert_int_eq(n, 5);
	ck_assert_uint_eq(g[0].w, 1);
	ck_assert_uint_eq(g[0].seq, 1);
	ck_assert_uint_eq(g[0].loss, 0);
	ck_assert_uint_eq(g[1].w, 2);
	ck_assert_uint_eq(g[1].loss, 0);
	ck_assert_uint_eq(g[2].seq, 2);
	ck_assert_uint_eq(g[2].loss, PRESENT | SMB_FULL);
	ck_assert_uint_eq(g[2].loss, 0x101);
	ck_assert_uint_eq(g[3].seq, 3);
	ck_assert_uint_eq(g[3].loss, 0);	/* once */
	ck_assert_uint_eq(g[4].seq, 4);
	ck_assert_uint_eq(g[4].loss, 0);
	twriter_free(&a);
	twriter_free(&b);
	fx_free(f);
}
END_TEST

/*
 * A chunk the reader cannot use (a scribbled directory, another format)
 * loses its packets: the writer's next packet in the buffer says so, on
 * its own sequence only.
 */
START_TEST(test_bridge_unusable_chunk_reads_as_loss_on_next_packet)
{
	struct fx *f = fx_new(1, 1024, 16, 65536);
	struct twriter a, b;
	uint8_t *c;
	int n;

	tw_new(&a, f, 0, 1, 0);
	tw_new(&b, f, 0, 2, 0);
	wpkt_rel(&a, 0, 100);		/* position 0 */
	wpkt_rel(&a, 1, 100);		/* 1: made unusable below */
	wpkt_rel(&b, 0, 100);		/* 2 */
	wpkt_rel(&a, 2, 100);		/* 3 */
	c = tb_ring_chunk(&f->t[0].r, 1);
	if (_i) {			/* a size past the chunk's end */
		c[1023] = 0xff;
		c[1022] = 0xff;
	} else {			/* format 01 */
		poke32(c, peek32(c) | 1u << TB_FORMAT_SHIFT);
	}
	ck_assert_int_eq(drain(f, 0, TB_READ_LAZY), 4);
	ck_assert_uint_eq(f->br[0].stat[TB_BS_LOST], 1);
	ck_assert_uint_eq(f->br[0].stat[TB_BS_CHUNKS], 3);
	n = read_buf(f->buf[0], g, 100);
	ck_assert_int_eq(n, 3);
	ck_assert_uint_eq(g[0].w, 1);
	ck_assert_uint_eq(g[0].seq, 0);
	ck_assert_uint_eq(g[0].loss, 0);
	ck_assert_uint_eq(g[1].w, 2);
	ck_assert_uint_eq(g[1].loss, 0);
	ck_assert_uint_eq(g[2].w, 1);
	ck_assert_uint_eq(g[2].seq, 2);
	/* the lost chunk's id is skipped: the buffer sees the gap too */
	ck_assert_uint_eq(g[2].loss, PRESENT | TB_BUF_LOSS_READ_GAP |
			  SMB_FULL);
	twriter_free(&a);
	twriter_free(&b);
	fx_free(f);
}
END_TEST

START_TEST(test_bridge_packet_dropped_on_full_ring_reads_as_smb_full)
{
	struct fx *f = fx_new(1, 256, 4, 65536);
	uint32_t max = tb_frag_max_size(256);
	struct twriter a;
	int i, n;

	twriter_new(&a, &f->t[0], 1, 0, TB_DROP);
	for (i = 0; i < 4; i++)
		wpkt_ok(&a, (uint32_t)i, max);	/* one full chunk each */
	ck_assert_int_eq(wpkt(&a, 4, max), TB_FULL);
	ck_assert_int_eq(drain(f, 0, TB_READ_LAZY), 4);
	/* the first four are still unread when the flagged chunk lands */
	wpkt_rel(&a, 5, 100);
	ck_assert_int_eq(drain(f, 0, TB_READ_LAZY), 1);
	n = read_buf(f->buf[0], g, 100);
	ck_assert_int_eq(n, 5);
	for (i = 0; i < 4; i++) {
		ck_assert_uint_eq(g[i].seq, (uint32_t)i);
		ck_assert_uint_eq(g[i].loss, 0);
	}
	ck_assert_uint_eq(g[4].seq, 5);
	ck_assert_uint_eq(g[4].loss, PRESENT | SMB_FULL);
	twriter_free(&a);
	fx_free(f);
}
END_TEST

/* Every chunk the central buffer refuses is counted by its reason. */
START_TEST(test_bridge_counts_each_refusal_by_its_reason)
{
	struct fx *f = fx_new(1, 1024, 32, 65536);
	struct tb_buf *small = tb_buf_create(4096, TB_BUF_DISCARD);
	struct tb_buf_ident id = { 1000, 100 };
	struct twriter a;
	uint32_t i, w;
	int n;

	ck_assert_ptr_nonnull(small);
	tb_bridge_destroy(&f->br[0]);
	/* producer id 0: its sequence ids would collide with the service's */
	ck_assert_int_eq(fx_bridge(f, 0, 0, id, &small, 1, NULL), TB_EID);
	ck_assert_int_eq(fx_bridge(f, 0, PROD0, id, &small, 1, NULL), TB_OK);
	tw_new(&a, f, 0, 1, 0);
	for (i = 0; i < 12; i++)	/* 12 chunks of ~900 B into 4 KiB */
		wpkt_rel(&a, i, 900);
	/* a hostile writer forges writer id 0 into a published word */
	wpkt_rel(&a, 12, 60);
	w = tword(&f->t[0], 12);
	tset_word(&f->t[0], 12, w & 0xffff0000u);
	n = drain(f, 0, TB_READ_LAZY);
	ck_assert_int_eq(n, 13);
	ck_assert_uint_gt(f->br[0].stat[TB_BS_REJ_FULL], 0);
	ck_assert_uint_eq(f->br[0].stat[TB_BS_REJ_BAD_ID], 1);
	ck_assert_uint_eq(f->br[0].stat[TB_BS_REJECTED],
			  f->br[0].stat[TB_BS_REJ_FULL] + 1);
	ck_assert_uint_eq(f->br[0].stat[TB_BS_CHUNKS] +
			  f->br[0].stat[TB_BS_REJECTED], 13);
	twriter_free(&a);
	tb_bridge_destroy(&f->br[0]);
	/* the fixture frees it again: give it a fresh one */
	ck_assert_int_eq(fx_bridge(f, 0, PROD0, id, f->buf, NBUF, NULL), TB_OK);
	tb_buf_destroy(small);
	fx_free(f);
}
END_TEST

static void *no_memory(void *ctx, void *ptr, size_t old_size, size_t n)
{
	(void)ctx, (void)old_size;
	if (!n)
		free(ptr);
	return NULL;
}

/*
 * tb_bridge_init() takes a configuration: a ring and its reader's scratch,
 * or neither (a bridge fed by tb_bridge_view() alone, which
 * tb_bridge_drain() refuses); one without the other, no configuration,
 * buffers counted but not given: TB_EINVAL; producer 0: TB_EID.
 */
START_TEST(test_bridge_config_is_checked)
{
	struct fx *f = fx_new(1, 1024, 16, 65536);
	struct tb_bridge_config c;
	struct tb_bridge br;

	memset(&c, 0, sizeof(c));
	c.producer_id = PROD0;
	c.bufs = f->buf;
	c.nbufs = NBUF;
	ck_assert_int_eq(tb_bridge_init(&br, NULL), TB_EINVAL);
	ck_assert_int_eq(tb_bridge_init(NULL, &c), TB_EINVAL);
	c.scratch = f->rs[0];				/* no ring */
	ck_assert_int_eq(tb_bridge_init(&br, &c), TB_EINVAL);
	c.ring = &f->t[0].r;
	c.scratch = NULL;				/* no scratch */
	ck_assert_int_eq(tb_bridge_init(&br, &c), TB_EINVAL);
	c.scratch = f->rs[0];
	c.bufs = NULL;
	ck_assert_int_eq(tb_bridge_init(&br, &c), TB_EINVAL);
	c.bufs = f->buf;
	c.producer_id = 0;
	ck_assert_int_eq(tb_bridge_init(&br, &c), TB_EID);
	c.producer_id = PROD0;
	ck_assert_int_eq(tb_bridge_init(&br, &c), TB_OK);
	ck_assert_int_eq(tb_bridge_drain(&br, 4, TB_READ_LAZY, NULL),
			 TB_NODATA);
	tb_bridge_destroy(&br);
	c.ring = NULL;					/* views only */
	c.scratch = NULL;
	ck_assert_int_eq(tb_bridge_init(&br, &c), TB_OK);
	ck_assert_int_eq(tb_bridge_drain(&br, 4, TB_READ_LAZY, NULL),
			 TB_EINVAL);
	ck_assert(tb_bridge_quiet(&br) && tb_bridge_idle(&br));
	tb_bridge_destroy(&br);
	fx_free(f);
}
END_TEST

/* A {writer, BufferID} table that cannot grow is not "too many keys". */
START_TEST(test_bridge_key_table_without_memory_is_counted_as_such)
{
	struct fx *f = fx_new(1, 1024, 32, 65536);
	struct tb_buf_ident id = { 1000, 100 };
	struct twriter a;

	tb_bridge_destroy(&f->br[0]);
	ck_assert_int_eq(fx_bridge(f, 0, PROD0, id, f->buf, NBUF, no_memory),
			 TB_OK);
	tw_new(&a, f, 0, 1, 0);
	wpkt_rel(&a, 0, 60);
	ck_assert_int_eq(drain(f, 0, TB_READ_LAZY), 1);
	ck_assert_uint_eq(f->br[0].stat[TB_BS_KEYS_NOMEM], 1);
	ck_assert_uint_eq(f->br[0].stat[TB_BS_TOO_MANY_KEYS], 0);
	ck_assert_uint_eq(f->br[0].stat[TB_BS_CHUNKS], 0);
	twriter_free(&a);
	fx_free(f);
}
END_TEST

START_TEST(test_bridge_unknown_buffer_id_is_counted_and_dropped)
{
	struct fx *f = fx_new(1, 1024, 32, 65536);
	struct tb_buf *bufs[2];
	struct twriter a, hole, far, a2;
	struct tb_buf_ident id = { 1000, 100 };
	int i, n;

	/* BufferID 1 is a NULL entry, BufferID 9 is past the table */
	bufs[0] = f->buf[0];
	bufs[1] = NULL;
	tb_bridge_destroy(&f->br[0]);
	ck_assert_int_eq(fx_bridge(f, 0, PROD0, id, bufs, 2, NULL), TB_OK);
	tw_new(&a, f, 0, 1, 0);
	tw_new(&hole, f, 0, 2, 1);
	tw_new(&far, f, 0, 3, 9);
	tw_new(&a2, f, 0, 2, 0);	/* same writer id, known buffer */
	for (i = 0; i < 3; i++) {
		wpkt_rel(&a, (uint32_t)i, 80);
		wpkt_rel(&hole, (uint32_t)i, 80);
		wpkt_rel(&far, (uint32_t)i, 80);
		wpkt_rel(&a2, (uint32_t)i, 90);
	}
	ck_assert_int_eq(drain(f, 0, TB_READ_LAZY), 12);
	ck_assert_uint_eq(f->br[0].stat[TB_BS_BAD_TARGET], 6);
	ck_assert_uint_eq(f->br[0].stat[TB_BS_CHUNKS], 6);
	assert_ids(f->buf[0], PROD0, 1, 3);
	assert_ids(f->buf[0], PROD0, 2, 3);
	ck_assert(!has_chunk(f->buf[0], PROD0, 3, 0));
	n = read_buf(f->buf[0], g, 100);
	ck_assert_int_eq(n, 6);
	for (i = 0; i < n; i++) {
		ck_assert_uint_eq(g[i].loss, 0);
		ck_assert_uint_eq(g[i].len, g[i].w == 1 ? 80 : 90);
	}
	assert_writer_seqs(g, n, 1, 3);
	assert_writer_seqs(g, n, 2, 3);
	/* the other buffer got nothing either */
	ck_assert_int_eq(read_buf(f->buf[1], g, 100), 0);
	twriter_free(&a);
	twriter_free(&hole);
	twriter_free(&far);
	twriter_free(&a2);
	fx_free(f);
}
END_TEST

START_TEST(test_bridge_two_buffer_ids_route_to_two_buffers)
{
	struct fx *f = fx_new(1, 1024, 16, 65536);
	struct twriter a, b;
	int i, n;

	tw_new(&a, f, 0, 1, 0);
	tw_new(&b, f, 0, 2, 1);
	for (i = 0; i < 5; i++) {
		wpkt_rel(&a, (uint32_t)i, 64);
		wpkt_rel(&b, (uint32_t)i, 64);
	}
	ck_assert_int_eq(drain(f, 0, TB_READ_LAZY), 10);
	n = read_buf(f->buf[0], g, 100);
	ck_assert_int_eq(n, 5);
	for (i = 0; i < n; i++)
		ck_assert_uint_eq(g[i].w, 1);
	assert_writer_seqs(g, n, 1, 5);
	n = read_buf(f->buf[1], g, 100);
	ck_assert_int_eq(n, 5);
	for (i = 0; i < n; i++) {
		ck_assert_uint_eq(g[i].w, 2);
		ck_assert_uint_eq(g[i].loss, 0);
	}
	assert_writer_seqs(g, n, 2, 5);
	twriter_free(&a);
	twriter_free(&b);
	fx_free(f);
}
END_TEST

START_TEST(test_bridge_scraped_prefix_arrives_once_and_suffix_after_it)
{
	struct fx *f = fx_new(1, 1024, 16, 65536);
	static uint8_t pb[200];
	struct twriter a;
	struct tb_span sp;
	int n;

	tw_new(&a, f, 0, 1, 0);
	wpkt_ok(&a, 0, 100);
	wpkt_ok(&a, 1, 100);
	/* packet 2 half written in the same chunk */
	mkpkt(pb, 1, 2, 150);
	ck_assert_int_eq(tb_writer_open(&a.w, 150, 0, &sp), TB_OK);
	memcpy(sp.begin, pb, 70);
	ck_assert_int_eq(drain(f, 0, TB_READ_LAZY), 0);
	ck_assert_int_eq(read_buf(f->buf[0], g, 100), 0);
	ck_assert_int_eq(drain(f, 0, TB_READ_SCRAPE), 1);
	n = read_buf(f->buf[0], g, 100);
	ck_assert_int_eq(n, 2);
	ck_assert_uint_eq(g[0].seq, 0);
	ck_assert_uint_eq(g[1].seq, 1);
	ck_assert_uint_eq(g[0].loss | g[1].loss, 0);
	/* finish packet 2: it moves to a new chunk */
	ck_assert_int_eq(tb_writer_sync(&a.w, 70, &sp), TB_OK);
	memcpy(sp.begin + 70, pb + 70, 80);
	ck_assert_int_eq(tb_writer_close(&a.w, 150, 0), TB_OK);
	wpkt_ok(&a, 3, 100);
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);
	ck_assert_int_gt(drain(f, 0, TB_READ_SCRAPE), 0);
	ck_assert_int_eq(drain(f, 0, TB_READ_SCRAPE), 0);
	n = read_buf(f->buf[0], g, 100);
	ck_assert_int_eq(n, 2);
	ck_assert_uint_eq(g[0].seq, 2);
	ck_assert_uint_eq(g[0].len, 150);
	ck_assert_uint_eq(g[1].seq, 3);
	ck_assert_uint_eq(g[0].loss | g[1].loss, 0);	/* ids consecutive */
	ck_assert_int_eq(read_buf(f->buf[0], g, 100), 0);
	twriter_free(&a);
	fx_free(f);
}
END_TEST

START_TEST(test_bridge_scraped_prefix_unread_keeps_order_with_suffix)
{
	struct fx *f = fx_new(1, 256, 16, 65536);
	struct twriter a;
	struct tb_span sp;
	static uint8_t pb[200];
	int n;

	tw_new(&a, f, 0, 1, 0);
	/* packet 0 ends early in its second chunk, which stays cached */
	wpkt_ok(&a, 0, 300);
	mkpkt(pb, 1, 1, 40);
	ck_assert_int_eq(tb_writer_open(&a.w, 40, 0, &sp), TB_OK);
	memcpy(sp.begin, pb, 20);
	ck_assert_int_eq(drain(f, 0, TB_READ_SCRAPE), 2);
	memcpy(sp.begin + 20, pb + 20, 20);
	ck_assert_int_eq(tb_writer_close(&a.w, 40, 0), TB_OK);
	wpkt_ok(&a, 2, 30);
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);
	ck_assert_int_gt(drain(f, 0, TB_READ_LAZY), 0);
	n = read_buf(f->buf[0], g, 100);
	ck_assert_int_eq(n, 3);
	assert_writer_seqs(g, n, 1, 3);
	ck_assert_uint_eq(g[0].len, 300);
	ck_assert_uint_eq(g[0].loss | g[1].loss | g[2].loss, 0);
	twriter_free(&a);
	fx_free(f);
}
END_TEST

START_TEST(test_bridge_protocol_error_is_returned_and_latched)
{
	struct fx *f = fx_new(1, 256, 8, 65536);
	uint32_t max = tb_frag_max_size(256), word;
	struct twriter a;
	int n;

	tw_new(&a, f, 0, 1, 0);
	wpkt_ok(&a, 0, max);
	wpkt_ok(&a, 1, max);
	wpkt_ok(&a, 2, max);
	/* position 1: a reserved state (5) */
	word = tword(&f->t[0], 1);
	tset_word(&f->t[0], 1, 5u << 29 | (word & 0x1fffffffu));
	ck_assert_int_eq(drain(f, 0, TB_READ_LAZY), TB_EPROTO);
	ck_assert_int_eq(f->br[0].error, TB_EPROTO);
	/* what was resolved before the error was delivered */
	n = read_buf(f->buf[0], g, 100);
	ck_assert_int_eq(n, 1);
	ck_assert_uint_eq(g[0].seq, 0);
	/* latched: even with the word repaired, nothing more comes */
	tset_word(&f->t[0], 1, word);
	wpkt_rel(&a, 3, 50);
	ck_assert_int_eq(drain(f, 0, TB_READ_LAZY), TB_EPROTO);
	ck_assert_int_eq(drain(f, 0, TB_READ_SCRAPE), TB_EPROTO);
	ck_assert_int_eq(tb_bridge_drain(&f->br[0], 1, TB_READ_LAZY, NULL),
			 TB_EPROTO);
	ck_assert_uint_eq(f->br[0].stat[TB_BS_CHUNKS], 1);
	ck_assert_int_eq(read_buf(f->buf[0], g, 100), 0);
	twriter_free(&a);
	fx_free(f);
}
END_TEST

START_TEST(test_bridge_chunk_ids_consecutive_for_highest_writer_and_bid)
{
	struct fx *f = fx_new(1, 1024, 16, 65536);
	struct tb_buf **bufs = (struct tb_buf **)calloc(65536, sizeof(*bufs));
	struct tb_buf_ident id = { 1000, 100 };
	struct twriter a;
	int i, n;

	ck_assert_ptr_nonnull(bufs);
	bufs[0xffff] = f->buf[0];
	tb_bridge_destroy(&f->br[0]);
	ck_assert_int_eq(fx_bridge(f, 0, PROD0, id, bufs, 65536, NULL), TB_OK);
	tw_new(&a, f, 0, 0xffff, 0xffff);
	for (i = 0; i < 3; i++)
		wpkt_rel(&a, (uint32_t)i, 100);
	ck_assert_int_eq(drain(f, 0, TB_READ_LAZY), 3);
	ck_assert_uint_eq(f->br[0].stat[TB_BS_CHUNKS], 3);
	assert_ids(f->buf[0], PROD0, 0xffff, 3);
	n = read_buf(f->buf[0], g, 100);
	ck_assert_int_eq(n, 3);
	assert_writer_seqs(g, n, 0xffff, 3);
	ck_assert_uint_eq(g[0].loss | g[1].loss | g[2].loss, 0);
	twriter_free(&a);
	tb_bridge_destroy(&f->br[0]);
	free(bufs);
	memset(&f->br[0], 0, sizeof(f->br[0]));
	fx_free(f);
}
END_TEST

/*
 * tb_bridge_quiet() and tb_bridge_idle(), which let a service pass over a
 * ring without draining it or sleep past it: true only while nothing
 * moved since the last drain (no reservation, the held chunk's word the
 * same), and quiet not under pressure, where a lazy drain scrapes.
 */
/* tb_reader_quiet() of bridge @i's reader at the ring's write_pos now. */
static bool reader_quiet(struct fx *f, unsigned i)
{
	struct tb_ring_stats st;

	tb_ring_stats(&f->t[i].r, &st);
	return tb_reader_quiet(&f->br[i].reader, st.write_pos);
}

START_TEST(test_bridge_quiet_and_idle_follow_the_ring)
{
	struct fx *f = fx_new(1, 1024, 16, 1u << 20);
	struct tb_bridge *br = &f->br[0];
	struct twriter a, b;
	struct tb_ring_stats st;
	struct tb_span sp;
	uint32_t i, wp, word;

	ck_assert(tb_bridge_quiet(br) && tb_bridge_idle(br));	/* fresh */
	ck_assert(reader_quiet(f, 0));
	tw_new(&a, f, 0, 1, 0);
	wpkt_ok(&a, 0, 60);
	ck_assert_int_eq(tb_writer_open(&a.w, 16, 0, &sp), TB_OK);
	ck_assert(!tb_bridge_quiet(br) && !tb_bridge_idle(br));	/* reserved */
	ck_assert(!reader_quiet(f, 0));
	ck_assert_int_eq(drain(f, 0, TB_READ_LAZY), 0);		/* held */
	ck_assert(tb_bridge_quiet(br) && tb_bridge_idle(br));
	ck_assert(reader_quiet(f, 0));
	/* the held chunk published: its word changes, no new position */
	tb_ring_stats(&f->t[0].r, &st);
	wp = st.write_pos;
	word = tword(&f->t[0], 0);
	ck_assert_uint_eq(word >> 29, 1);		/* Acquired */
	ck_assert_int_eq(tb_writer_close(&a.w, 16, 0), TB_OK);
	tb_ring_stats(&f->t[0].r, &st);
	ck_assert_uint_eq(st.write_pos, wp);
	ck_assert_uint_ne(tword(&f->t[0], 0), word);
	ck_assert(!tb_bridge_quiet(br) && !tb_bridge_idle(br));
	ck_assert_int_eq(drain(f, 0, TB_READ_LAZY), 1);
	ck_assert(tb_bridge_quiet(br) && tb_bridge_idle(br));
	/* held again, in a new chunk */
	ck_assert_int_eq(tb_writer_open(&a.w, 16, 0, &sp), TB_OK);
	ck_assert(!tb_bridge_quiet(br) && !tb_bridge_idle(br));
	ck_assert_int_eq(drain(f, 0, TB_READ_LAZY), 0);
	ck_assert(tb_bridge_quiet(br) && tb_bridge_idle(br));
	/*
	 * Half the ring reserved behind the held chunk while the last drain
	 * ended (its end saw them, its resolve did not; set by hand): idle,
	 * but not quiet, since a lazy drain now scrapes.
	 */
	tw_new(&b, f, 0, 2, 0);
	for (i = 0; i < 8; i++)
		wpkt_rel(&b, i, 60);
	tb_ring_stats(&f->t[0].r, &st);
	br->reader.wait_pos = st.write_pos;
	ck_assert(tb_bridge_idle(br));
	ck_assert(!tb_bridge_quiet(br) && !reader_quiet(f, 0));
	ck_assert_int_eq(drain(f, 0, TB_READ_LAZY), 9);	/* scraped too */
	ck_assert(tb_bridge_quiet(br) && tb_bridge_idle(br));
	ck_assert(reader_quiet(f, 0));
	/* retired: nothing to do there ever again */
	wpkt_rel(&b, 8, 60);
	br->error = TB_EPROTO;
	ck_assert(tb_bridge_quiet(br) && tb_bridge_idle(br));
	twriter_free(&a);
	twriter_free(&b);
	fx_free(f);
}
END_TEST

/* ------------------------------------------------------------------------
 * Trace writer (issue 4, section 3)
 */

/* Commits one chunk of whole fragments straight into a central buffer. */
static void commit(struct tb_buf *b, uint16_t p, uint16_t w, uint32_t id,
		   uint8_t flags, uint32_t uid, int32_t pid,
		   const struct tb_buf_frag *frags, unsigned n)
{
	struct tb_buf_chunk_in in;

	memset(&in, 0, sizeof(in));
	in.producer_id = p;
	in.ident.uid = uid;
	in.ident.pid = pid;
	in.writer_id = w;
	in.chunk_id = id;
	in.flags = flags;
	in.complete = true;
	ck_assert_int_eq(tb_buf_copy_frags(b, &in, frags, n), TB_OK);
}

/* Commits mkpkt(w, seq, len) as a one-packet chunk. */
static void commit_pkt(struct tb_buf *b, uint16_t p, uint16_t w, uint32_t id,
		       uint8_t flags, uint32_t seq, uint32_t len)
{
	static uint8_t pb[PKT_MAX];
	struct tb_buf_frag fr;

	mkpkt(pb, w, seq, len);
	fr.data = pb;
	fr.size = len;
	commit(b, p, w, id, flags, 1000u + p, 100 + p, &fr, 1);
}

static void out_init(struct tb_trace_out *o, struct mem_out *m)
{
	memset(o, 0, sizeof(*o));
	memset(m, 0, sizeof(*m));
	o->write = mem_write;
	o->ctx = m;
}

/* The @i-th Trace.packet of an output: its bytes. */
static const uint8_t *nth_packet(const struct mem_out *m, unsigned i,
				 size_t *size)
{
	struct pb_reader r;
	struct pb_field f;
	unsigned k = 0;

	pb_init(&r, m->p, m->len);
	while (pb_next(&r, &f) > 0) {
		if (k++ == i) {
			*size = f.size;
			return f.data;
		}
	}
	ck_abort_msg("no packet %u in the output", i);
	return NULL;
}

START_TEST(test_trace_packets_are_framed_as_trace_field_one)
{
	struct tb_buf *b = tb_buf_create(65536, TB_BUF_RING_BUFFER);
	struct tb_trace_out o;
	struct mem_out m;
	size_t off = 0;
	unsigned k;
	long n;

	out_init(&o, &m);
	commit_pkt(b, 1, 1, 0, 0, 0, 10);
	commit_pkt(b, 1, 1, 1, 0, 1, 300);	/* two-byte length */
	commit_pkt(b, 1, 1, 2, 0, 2, 5000);
	ck_assert_int_eq(tb_trace_write(&o, b), 3);
	ck_assert_uint_eq(o.packets, 3);
	ck_assert_uint_eq(o.bytes, m.len);
	ck_assert_int_eq(o.error, 0);
	/* walk the framing by hand: 0x0a, varint length, bytes */
	for (k = 0; k < 3; k++) {
		uint64_t len = 0;
		unsigned shift = 0;

		ck_assert_uint_lt(off, m.len);
		ck_assert_uint_eq(m.p[off++], 0x0a);
		do {
			ck_assert_uint_lt(off, m.len);
			len |= (uint64_t)(m.p[off] & 0x7f) << shift;
			shift += 7;
		} while (m.p[off++] & 0x80);
		ck_assert_uint_le(len, m.len - off);
		off += (size_t)len;
	}
	ck_assert_uint_eq(off, m.len);
	n = trace_for_each(m.p, m.len, NULL, NULL);
	ck_assert_int_eq(n, 3);
	/* reading is destructive: nothing more */
	ck_assert_int_eq(tb_trace_write(&o, b), 0);
	ck_assert_uint_eq(o.bytes, m.len);
	free(m.p);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_trace_trusted_fields_follow_the_producer_bytes)
{
	struct tb_buf *b = tb_buf_create(65536, TB_BUF_RING_BUFFER);
	struct tb_trace_out o;
	struct mem_out m;
	struct trailer t;
	const uint8_t *p;
	size_t size;
	uint16_t w;
	uint32_t seq, len;

	out_init(&o, &m);
	commit_pkt(b, 3, 7, 0, 0, 0, 200);
	ck_assert_int_eq(tb_trace_write(&o, b), 1);
	p = nth_packet(&m, 0, &size);
	ck_assert_int_eq(pkt_parse(p, size, 0, &w, &seq, &len), 0);
	ck_assert_uint_eq(len, 200);
	ck_assert_uint_eq(w, 7);
	trailer_parse(p + len, size - len, &t);
	ck_assert(!t.bad);
	ck_assert_uint_eq(t.n, 3);		/* no loss: no field 42 */
	ck_assert_uint_eq(t.num[0], 3);
	ck_assert_uint_eq(t.val[0], 1003);
	ck_assert_uint_eq(t.num[1], 10);
	ck_assert_uint_eq(t.val[1], 3u << 16 | 7u);
	ck_assert_uint_eq(t.num[2], 79);
	ck_assert_uint_eq(t.val[2], 103);
	ck_assert_uint_eq(o.lossy_packets, 0);
	free(m.p);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_trace_sequence_id_is_unique_per_producer_and_writer)
{
	struct tb_buf *b = tb_buf_create(65536, TB_BUF_RING_BUFFER);
	static const uint16_t pw[][2] = {
		{ 1, 1 }, { 1, 2 }, { 2, 1 }, { 2, 2 }, { 0x100, 0x300 },
		{ 0xffff, 0xffff },
	};
	uint64_t seen[12];
	struct tb_trace_out o;
	struct mem_out m;
	struct tcol c;
	unsigned i, j;

	out_init(&o, &m);
	for (i = 0; i < 6; i++) {
		commit_pkt(b, pw[i][0], pw[i][1], 0, 0, 0, 20);
		commit_pkt(b, pw[i][0], pw[i][1], 1, 0, 1, 20);
	}
	ck_assert_int_eq(tb_trace_write(&o, b), 12);
	decode(&m, &c);
	ck_assert_uint_eq(c.n, 12);
	for (i = 0; i < 12; i++) {
		const struct tpkt *x = &c.v[i];
		uint16_t p = 0;

		for (j = 0; j < 6; j++)
			if (pw[j][1] == x->w && (uint64_t)pw[j][0] << 16 ==
			    (x->seqid & 0xffff0000u))
				p = pw[j][0];
		ck_assert_uint_ne(p, 0);
		ck_assert_uint_eq(x->seqid, (uint32_t)p << 16 | x->w);
		ck_assert_uint_eq(x->uid, 1000u + p);
		ck_assert_uint_eq(x->pid, 100u + p);
		seen[i] = x->seqid;
	}
	/* one id per {producer, writer}: 6 distinct, each twice */
	for (i = 0; i < 12; i++) {
		unsigned same = 0;

		for (j = 0; j < 12; j++)
			same += seen[j] == seen[i];
		ck_assert_uint_eq(same, 2);
	}
	tcol_free(&c);
	free(m.p);
	tb_buf_destroy(b);
}
END_TEST

/*
 * Producer 0 (the bridge refuses it; a central buffer fed directly does
 * not): its sequences never get id 1, Perfetto's service sequence, nor
 * collide with another pair's.
 */
START_TEST(test_trace_sequence_id_of_producer_zero_is_not_reserved)
{
	struct tb_buf *b = tb_buf_create(65536, TB_BUF_RING_BUFFER);
	static const uint16_t pw[][2] = {
		{ 0, 1 }, { 0, 2 }, { 0, 0xffff }, { 1, 1 }, { 2, 1 },
		{ 0xffff, 0xffff },
	};
	struct tb_trace_out o;
	struct mem_out m;
	struct tcol c;
	unsigned i, j;

	out_init(&o, &m);
	for (i = 0; i < 6; i++)
		commit_pkt(b, pw[i][0], pw[i][1], 0, 0, 0, 20);
	ck_assert_int_eq(tb_trace_write(&o, b), 6);
	decode(&m, &c);
	ck_assert_uint_eq(c.n, 6);
	for (i = 0; i < 6; i++) {
		ck_assert_uint_gt(c.v[i].seqid, 1);
		for (j = 0; j < i; j++)
			ck_assert_uint_ne(c.v[i].seqid, c.v[j].seqid);
	}
	ck_assert_uint_eq(tb_trace_seq_id(0, 1), 0x10000);
	tcol_free(&c);
	free(m.p);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_trace_negative_pid_is_sign_extended)
{
	struct tb_buf *b = tb_buf_create(65536, TB_BUF_RING_BUFFER);
	static uint8_t pb[64];
	struct tb_buf_frag fr = { pb, 20 };
	struct tb_trace_out o;
	struct mem_out m;
	struct trace_packet tp;
	const uint8_t *p;
	size_t size;

	out_init(&o, &m);
	mkpkt(pb, 1, 0, 20);
	commit(b, 1, 1, 0, 0, 1000, -5, &fr, 1);
	commit(b, 1, 2, 0, 0, 1000, INT32_MIN, &fr, 1);
	ck_assert_int_eq(tb_trace_write(&o, b), 2);
	p = nth_packet(&m, 0, &size);
	ck_assert_int_eq(trace_packet_decode(p, size, &tp), 0);
	ck_assert(tp.has_pid);
	ck_assert_uint_eq(tp.trusted_pid, (uint64_t)(int64_t)-5);
	ck_assert_uint_eq(tp.trusted_pid, 0xfffffffffffffffbull);
	/* a sign-extended varint is ten bytes: tag(2) + 10 at the end */
	ck_assert_uint_eq(p[size - 1], 0x01);
	ck_assert_uint_eq(p[size - 12], 0xf8);
	ck_assert_uint_eq(p[size - 11], 0x04);
	p = nth_packet(&m, 1, &size);
	ck_assert_int_eq(trace_packet_decode(p, size, &tp), 0);
	ck_assert_uint_eq(tp.trusted_pid, (uint64_t)(int64_t)INT32_MIN);
	free(m.p);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_trace_previous_packet_dropped_only_with_loss_bits)
{
	struct tb_buf *b = tb_buf_create(65536, TB_BUF_RING_BUFFER);
	struct tb_trace_out o;
	struct mem_out m;
	struct tcol c;

	out_init(&o, &m);
	commit_pkt(b, 1, 1, 0, 0, 0, 30);
	commit_pkt(b, 1, 1, 2, 0, 1, 30);	/* id 1 missing: READ_GAP */
	commit_pkt(b, 1, 1, 3, 0, 2, 30);
	commit_pkt(b, 1, 1, 4, TB_BUF_DATA_LOSS, 3, 30);
	commit_pkt(b, 1, 1, 5, 0, 4, 30);
	ck_assert_int_eq(tb_trace_write(&o, b), 5);
	decode(&m, &c);
	ck_assert_uint_eq(c.n, 5);
	ck_assert(!c.v[0].has_dropped);
	ck_assert(c.v[1].has_dropped);
	ck_assert_uint_eq(c.v[1].dropped, PRESENT | TB_BUF_LOSS_READ_GAP);
	ck_assert(!c.v[2].has_dropped);
	ck_assert(c.v[3].has_dropped);
	ck_assert_uint_eq(c.v[3].dropped, PRESENT | SMB_FULL);
	ck_assert(!c.v[4].has_dropped);
	ck_assert_uint_eq(o.lossy_packets, 2);
	tcol_free(&c);
	free(m.p);
	tb_buf_destroy(b);
}
END_TEST


/* Checks every packet of an output against the true identity. */
static void assert_no_forged_identity(const struct mem_out *m, uint64_t uid,
				      uint64_t seqid, uint64_t pid,
				      unsigned *count)
{
	struct pb_reader r;
	struct pb_field f;
	int ret;

	*count = 0;
	pb_init(&r, m->p, m->len);
	while ((ret = pb_next(&r, &f)) > 0) {
		struct trace_packet tp;

		ck_assert_uint_eq(f.number, 1);
		ck_assert_uint_eq(f.type, 2);
		ck_assert_msg(!trace_packet_decode(f.data, f.size, &tp),
			      "packet %u is not valid protobuf", *count);
		ck_assert_msg(tp.has_uid && tp.has_seq_id && tp.has_pid,
			      "packet %u lost its trusted fields", *count);
		ck_assert_uint_eq(tp.trusted_uid, uid);
		ck_assert_uint_eq(tp.trusted_seq_id, seqid);
		ck_assert_uint_eq(tp.trusted_pid, pid);
		(*count)++;
	}
	ck_assert_int_eq(ret, 0);
}

START_TEST(test_trace_forged_trusted_fields_never_reach_the_trace)
{
	struct tb_buf *b = tb_buf_create(65536, TB_BUF_RING_BUFFER);
	/* uid 0, seq id 1 (the service's), pid 1, as plain varint fields */
	static const uint8_t forged[] = {
		0x18, 0x00,			/* 3: 0 */
		0x50, 0x01,			/* 10: 1 */
		0xf8, 0x04, 0x01,		/* 79: 1 */
		0x40, 0x05,			/* 8: 5 */
	};
	static uint8_t good[32];
	struct tb_buf_frag fr[2];
	struct tb_trace_out o;
	struct mem_out m;
	struct tcol c;
	unsigned n, i, honest = 0;

	mkpkt(good, 9, 0, 20);
	fr[0].data = forged;
	fr[0].size = sizeof(forged);
	fr[1].data = good;
	fr[1].size = 20;
	out_init(&o, &m);
	commit(b, 4, 9, 0, 0, 2000, 321, fr, 2);
	tb_trace_write(&o, b);
	assert_no_forged_identity(&m, 2000, 4u << 16 | 9u, 321, &n);
	/* as in Perfetto, the forging packet is left out and counted ... */
	ck_assert_uint_eq(o.invalid_packets, 1);
	ck_assert_uint_eq(o.packets, 1);
	/* ... none of its bytes reach the trace, the honest one does */
	decode(&m, &c);
	for (i = 0; i < c.n; i++)
		honest += !c.v[i].standin;
	ck_assert_uint_eq(honest, 1);
	tcol_free(&c);
	free(m.p);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_trace_loss_of_a_dropped_invalid_packet_is_not_lost)
{
	struct tb_buf *b = tb_buf_create(65536, TB_BUF_RING_BUFFER);
	static const uint8_t bad[] = { 0x18, 0x00 };	/* sets uid */
	static uint8_t good0[32], good1[32];
	struct tb_buf_frag fr[2];
	struct tb_trace_out o;
	struct mem_out m;
	struct tcol c;
	uint64_t loss = 0;
	size_t i;

	mkpkt(good0, 1, 0, 20);
	mkpkt(good1, 1, 1, 20);
	fr[0].data = good0;
	fr[0].size = 20;
	out_init(&o, &m);
	commit(b, 1, 1, 0, 0, 1001, 101, fr, 1);
	/* chunk 1 never came: the next packet read carries READ_GAP */
	fr[0].data = bad;
	fr[0].size = sizeof(bad);
	fr[1].data = good1;
	fr[1].size = 20;
	commit(b, 1, 1, 2, 0, 1001, 101, fr, 2);
	tb_trace_write(&o, b);
	ck_assert_uint_eq(o.invalid_packets, 1);
	decode(&m, &c);
	ck_assert_uint_ge(c.n, 2);
	ck_assert(!c.v[0].standin);
	ck_assert_uint_eq(c.v[0].seq, 0);
	ck_assert(!c.v[0].has_dropped);
	ck_assert(!c.v[c.n - 1].standin);
	ck_assert_uint_eq(c.v[c.n - 1].seq, 1);
	/* the gap happened before packet 1: the trace must say so */
	for (i = 1; i < c.n; i++) {
		ck_assert_uint_eq(c.v[i].seqid, 1u << 16 | 1u);
		loss |= c.v[i].dropped;
	}
	ck_assert_msg((loss & (PRESENT | TB_BUF_LOSS_READ_GAP)) ==
		      (PRESENT | TB_BUF_LOSS_READ_GAP),
		      "the READ_GAP of the dropped packet vanished");
	tcol_free(&c);
	free(m.p);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_trace_open_producer_field_cannot_hide_trusted_fields)
{
	struct tb_buf *b = tb_buf_create(65536, TB_BUF_RING_BUFFER);
	/*
	 * Forged identity, then field 5 (bytes) whose length is exactly the
	 * trailer the service appends (3: 1000, 10: 1<<16|1, 79: 101 is
	 * 3 + 4 + 3 = 10 bytes): it would swallow the real trusted fields.
	 */
	static const uint8_t evil[] = {
		0x18, 0x00, 0x50, 0x01, 0xf8, 0x04, 0x01, 0x2a, 0x0a,
	};
	struct tb_buf_frag fr[2];
	static uint8_t good[32];
	struct tb_trace_out o;
	struct mem_out m;
	unsigned n;

	mkpkt(good, 1, 0, 20);
	fr[0].data = evil;
	fr[0].size = sizeof(evil);
	fr[1].data = good;
	fr[1].size = 20;
	out_init(&o, &m);
	commit(b, 1, 1, 0, 0, 1000, 101, fr, 2);
	tb_trace_write(&o, b);
	ck_assert_int_ge(trace_for_each(m.p, m.len, NULL, NULL), 1);
	assert_no_forged_identity(&m, 1000, 1u << 16 | 1u, 101, &n);
	ck_assert_uint_ge(n, 1);	/* the honest packet is there */
	ck_assert_uint_eq(o.packets + o.invalid_packets, 2);
	free(m.p);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_trace_malformed_producer_packet_keeps_the_trace_valid)
{
	struct tb_buf *b = tb_buf_create(65536, TB_BUF_RING_BUFFER);
	/* a varint cut short: its continuation bit eats the trailer's tag */
	static const uint8_t cut[] = { 0x40, 0x80 };
	struct tb_buf_frag fr[2];
	static uint8_t good[32];
	struct tb_trace_out o;
	struct mem_out m;
	unsigned n;

	mkpkt(good, 1, 0, 20);
	fr[0].data = cut;
	fr[0].size = sizeof(cut);
	fr[1].data = good;
	fr[1].size = 20;
	out_init(&o, &m);
	commit(b, 1, 1, 0, 0, 1000, 101, fr, 2);
	tb_trace_write(&o, b);
	assert_no_forged_identity(&m, 1000, 1u << 16 | 1u, 101, &n);
	ck_assert_uint_ge(n, 1);
	ck_assert_uint_eq(o.packets + o.invalid_packets, 2);
	free(m.p);
	tb_buf_destroy(b);
}
END_TEST

/* A packet that ends inside a field's key: its continuation bit would
 * make the trusted_uid tag appended after it part of that key. */
START_TEST(test_trace_packet_ending_inside_a_key_is_invalid)
{
	static const uint8_t cuts[][4] = {
		{ 1, 0x80 }, { 3, 0x08, 0x01, 0x80 }, { 3, 0x40, 0x05, 0xff },
	};
	struct tb_buf *b = tb_buf_create(65536, TB_BUF_RING_BUFFER);
	struct tb_buf_frag fr[2];
	static uint8_t good[32];
	struct tb_trace_out o;
	struct mem_out m;
	unsigned n;

	mkpkt(good, 1, 0, 20);
	fr[0].data = cuts[_i] + 1;
	fr[0].size = cuts[_i][0];
	fr[1].data = good;
	fr[1].size = 20;
	out_init(&o, &m);
	commit(b, 1, 1, 0, 0, 1000, 101, fr, 2);
	tb_trace_write(&o, b);
	assert_no_forged_identity(&m, 1000, 1u << 16 | 1u, 101, &n);
	ck_assert_uint_ge(n, 1);
	ck_assert_uint_eq(o.invalid_packets, 1);
	ck_assert_uint_eq(o.packets + o.invalid_packets, 2);
	free(m.p);
	tb_buf_destroy(b);
}
END_TEST

/* A field number past 2^29 - 1 is no protobuf field: the packet goes. */
START_TEST(test_trace_field_number_out_of_range_is_invalid)
{
	/* key (2^29 << 3): field 2^29, varint; then its value 1 */
	static const uint8_t big[] = { 0x80, 0x80, 0x80, 0x80, 0x10, 0x01 };
	struct tb_buf *b = tb_buf_create(65536, TB_BUF_RING_BUFFER);
	struct tb_buf_frag fr[1];
	struct tb_trace_out o;
	struct mem_out m;
	unsigned n;

	fr[0].data = big;
	fr[0].size = sizeof(big);
	out_init(&o, &m);
	commit(b, 1, 1, 0, 0, 1000, 101, fr, 1);
	tb_trace_write(&o, b);
	ck_assert_uint_eq(o.invalid_packets, 1);
	/* and what was written reads back as a trace */
	ck_assert_int_eq(trace_for_each(m.p, m.len, NULL, NULL), 1);
	assert_no_forged_identity(&m, 1000, 1u << 16 | 1u, 101, &n);
	free(m.p);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_trace_multi_slice_packet_is_written_contiguously)
{
	struct tb_buf *b = tb_buf_create(65536, TB_BUF_RING_BUFFER);
	static uint8_t pb[1000];
	struct tb_buf_frag fr;
	struct tb_trace_out o;
	struct mem_out m;
	struct trailer t;
	const uint8_t *p;
	size_t size;

	out_init(&o, &m);
	mkpkt(pb, 2, 0, 1000);
	fr.data = pb;
	fr.size = 333;
	commit(b, 1, 2, 0, TB_BUF_LAST_CONT, 1001, 101, &fr, 1);
	fr.data = pb + 333;
	fr.size = 400;
	commit(b, 1, 2, 1, TB_BUF_FIRST_CONT | TB_BUF_LAST_CONT, 1001, 101,
	       &fr, 1);
	fr.data = pb + 733;
	fr.size = 267;
	commit(b, 1, 2, 2, TB_BUF_FIRST_CONT, 1001, 101, &fr, 1);
	ck_assert_int_eq(tb_trace_write(&o, b), 1);
	ck_assert_int_eq(trace_for_each(m.p, m.len, NULL, NULL), 1);
	p = nth_packet(&m, 0, &size);
	ck_assert_uint_gt(size, 1000);
	ck_assert_mem_eq(p, pb, 1000);
	trailer_parse(p + 1000, size - 1000, &t);
	ck_assert(!t.bad);
	ck_assert_uint_eq(t.n, 3);
	ck_assert_uint_eq(t.val[1], 1u << 16 | 2u);
	free(m.p);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_trace_failed_write_latches_an_error)
{
	struct tb_buf *b = tb_buf_create(65536, TB_BUF_RING_BUFFER);
	struct tb_trace_out o;
	struct mem_out m;
	unsigned calls;

	out_init(&o, &m);
	commit_pkt(b, 1, 1, 0, 0, 0, 30);
	commit_pkt(b, 1, 1, 1, 0, 1, 30);
	commit_pkt(b, 1, 1, 2, 0, 2, 30);
	m.fail_at = 2;		/* the packet bytes of the first packet */
	ck_assert_int_eq(tb_trace_write(&o, b), TB_EIO);
	ck_assert_int_eq(o.error, TB_EIO);
	calls = m.calls;
	ck_assert_uint_eq(calls, 2);
	/* latched: later packets fail without calling the output again */
	m.fail_at = 0;
	commit_pkt(b, 1, 1, 3, 0, 3, 30);
	ck_assert_int_eq(tb_trace_write(&o, b), TB_EIO);
	ck_assert_int_eq(o.error, TB_EIO);
	ck_assert_uint_eq(m.calls, calls);
	free(m.p);
	tb_buf_destroy(b);
}
END_TEST

/* ------------------------------------------------------------------------
 * The vectored output (writev): the same trace as the plain one.
 */
struct memv {
	struct mem_out m;
	size_t take;		/* bytes per call at most; 0: all */
	unsigned calls;
	unsigned eintr_every;	/* every Nth call takes nothing; 0: never */
	unsigned fail_at;	/* this call and later fail; 0: never */
	unsigned max_n;		/* the most elements one call was given */
};

static long memv_writev(void *ctx, const struct tb_trace_iov *v, unsigned n)
{
	struct memv *mv = (struct memv *)ctx;
	size_t left = mv->take ? mv->take : (size_t)-1, done = 0;
	unsigned i;

	mv->calls++;
	ck_assert_uint_gt(n, 0);
	ck_assert_uint_le(n, TB_TRACE_IOV_MAX);
	if (n > mv->max_n)
		mv->max_n = n;
	if (mv->fail_at && mv->calls >= mv->fail_at)
		return -1;
	if (mv->eintr_every && mv->calls % mv->eintr_every == 0)
		return 0;
	for (i = 0; i < n && left; i++) {
		size_t k = v[i].len < left ? v[i].len : left;

		ck_assert_uint_gt(v[i].len, 0);
		mem_write(&mv->m, v[i].base, k);
		done += k;
		left -= k;
	}
	return (long)done;
}

static void outv_init(struct tb_trace_out *o, struct memv *mv)
{
	memset(o, 0, sizeof(*o));
	memset(mv, 0, sizeof(*mv));
	o->writev = memv_writev;
	o->ctx = mv;
}

/* One packet of @len bytes in @nsl slices, in chunks @id.. of {p, w}. */
static uint32_t commit_split(struct tb_buf *b, uint16_t p, uint16_t w,
			     uint32_t id, uint8_t flags, uint32_t seq,
			     uint32_t len, unsigned nsl)
{
	static uint8_t pb[PKT_MAX];
	struct tb_buf_frag fr;
	uint32_t off = 0, k;
	unsigned i;

	mkpkt(pb, w, seq, len);
	for (i = 0; i < nsl; i++, off += k) {
		uint8_t f = flags;

		k = i + 1 == nsl ? len - off : len / nsl;
		f |= i ? TB_BUF_FIRST_CONT : 0;
		f |= i + 1 < nsl ? TB_BUF_LAST_CONT : 0;
		fr.data = pb + off;
		fr.size = k;
		commit(b, p, w, id + i, f, 1000u + p, 100 + p, &fr, 1);
		flags = 0;
	}
	return id + nsl;
}

/*
 * A buffer that exercises every path of the writer: two sequences of
 * different identities interleaved (the trusted fields change), packets
 * below and above TB_TRACE_COPY_MIN, split across chunks (small and
 * large), loss, an invalid packet, more than a stage and more elements
 * than one call takes.
 */
static struct tb_buf *mixed_buf(unsigned iters)
{
	static const uint32_t sizes[] = { 10, 14, 30, 255, 256, 257, 300,
					  1000, 5000, 40 };
	static const uint8_t forged[] = { 0x18, 0x01 };	/* trusted_uid */
	struct tb_buf *b = tb_buf_create(1u << 20, TB_BUF_RING_BUFFER);
	struct tb_buf_frag fr;
	uint32_t id1 = 0, id2 = 0, i;

	ck_assert_ptr_nonnull(b);
	for (i = 0; i < iters; i++) {
		uint32_t len = sizes[i % 10];

		id1 = commit_split(b, 1, 1, id1, i % 97 == 5 ?
				   TB_BUF_DATA_LOSS : 0, i, len,
				   i % 50 == 7 ? 3 : 1);
		if (i % 3)
			id2 = commit_split(b, 2, 3, id2, 0, i, i % 7 ? 30 :
					   400, i % 40 == 9 ? 2 : 1);
	}
	fr.data = forged;
	fr.size = sizeof(forged);
	commit(b, 2, 3, id2, 0, 1002, 102, &fr, 1);
	return b;
}

/* mixed_buf(@iters), then the service's packets, to @o. */
static void write_mixed(struct tb_trace_out *o, unsigned iters)
{
	struct tb_buf *b = mixed_buf(iters);
	struct tb_trace_ring_record r;
	struct tb_buf_ident id = { 7, 77 };
	const struct tb_buf_stats *bs[2];
	struct tb_trace_stats_extra x;

	ck_assert_int_ge(tb_trace_write(o, b), (int)iters);
	memset(&r, 0, sizeof(r));
	r.producer = 1;
	r.pid = 101;
	r.full = 5;
	ck_assert_int_eq(tb_trace_loss_track(o, id, 1, 101), 0);
	ck_assert_int_eq(tb_trace_loss_count(o, id, 123, 1, 5), 0);
	ck_assert_int_eq(tb_trace_service_track(o, id), 0);
	ck_assert_int_eq(tb_trace_ring_record(o, id, 124, &r), 0);
	memset(&x, 0, sizeof(x));
	x.producers_seen = 2;
	bs[0] = tb_buf_stats(b);
	bs[1] = NULL;
	ck_assert_int_eq(tb_trace_write_stats(o, id, 125, bs, 2, &x), 0);
	tb_buf_destroy(b);
}

START_TEST(test_trace_writev_output_is_the_plain_outputs_bytes)
{
	struct tb_trace_out a, v;
	struct mem_out m;
	struct memv mv;

	out_init(&a, &m);
	outv_init(&v, &mv);
	write_mixed(&a, 600);
	write_mixed(&v, 600);
	ck_assert_int_eq(a.error, 0);
	ck_assert_int_eq(v.error, 0);
	ck_assert_uint_eq(mv.m.len, m.len);
	ck_assert_mem_eq(mv.m.p, m.p, m.len);
	ck_assert_uint_eq(v.bytes, a.bytes);
	ck_assert_uint_eq(v.bytes, m.len);
	ck_assert_uint_eq(v.packets, a.packets);
	ck_assert_uint_eq(v.lossy_packets, a.lossy_packets);
	ck_assert_uint_eq(v.invalid_packets, 1);
	ck_assert_uint_eq(a.invalid_packets, 1);
	ck_assert_int_eq(trace_for_each(mv.m.p, mv.m.len, NULL, NULL),
			 (int)v.packets + 1);	/* + the stand-in */
	/* batched: far fewer calls than pieces, some of them full */
	ck_assert_uint_eq(v.writev_calls, mv.calls);
	ck_assert_uint_lt(mv.calls * 20, m.calls);
	ck_assert_uint_eq(mv.max_n, TB_TRACE_IOV_MAX);
	free(m.p);
	free(mv.m.p);
}
END_TEST

/* Short writes (mid-element) and interruptions lose and repeat nothing. */
START_TEST(test_trace_writev_short_writes_and_eintr_are_resumed)
{
	static const size_t takes[] = { 1, 7, 100, 4095 };
	struct tb_trace_out a, v;
	struct mem_out m;
	struct memv mv;

	out_init(&a, &m);
	write_mixed(&a, 60);	/* 48 KiB: more than a stage */
	outv_init(&v, &mv);
	mv.take = takes[_i];
	mv.eintr_every = 3;
	write_mixed(&v, 60);
	ck_assert_int_eq(v.error, 0);
	ck_assert_uint_gt(m.len, TB_TRACE_STAGE);
	ck_assert_uint_eq(mv.m.len, m.len);
	ck_assert_mem_eq(mv.m.p, m.p, m.len);
	free(m.p);
	free(mv.m.p);
}
END_TEST

START_TEST(test_trace_writev_failure_is_latched_and_reported)
{
	struct tb_buf *b = tb_buf_create(65536, TB_BUF_RING_BUFFER);
	struct tb_buf_ident id = { 7, 77 };
	struct tb_trace_out o;
	struct memv mv;
	unsigned calls;

	outv_init(&o, &mv);
	commit_pkt(b, 1, 1, 0, 0, 0, 30);
	commit_pkt(b, 1, 1, 1, 0, 1, 300);
	mv.fail_at = 1;
	ck_assert_int_eq(tb_trace_write(&o, b), TB_EIO);
	ck_assert_int_ne(o.error, 0);
	calls = mv.calls;
	ck_assert_uint_eq(calls, 1);
	/* latched: nothing more is handed to the output */
	mv.fail_at = 0;
	commit_pkt(b, 1, 1, 2, 0, 2, 30);
	ck_assert_int_eq(tb_trace_write(&o, b), TB_EIO);
	ck_assert_int_eq(tb_trace_service_track(&o, id), TB_EIO);
	ck_assert_int_eq(tb_trace_write_stats(&o, id, 1, NULL, 0, NULL), TB_EIO);
	ck_assert_uint_eq(mv.calls, calls);
	ck_assert_uint_eq(mv.m.len, 0);
	tb_buf_destroy(b);
}
END_TEST

/* An output that never takes a byte fails after a bounded number of calls. */
START_TEST(test_trace_writev_that_never_progresses_fails)
{
	struct tb_buf *b = tb_buf_create(65536, TB_BUF_RING_BUFFER);
	struct tb_trace_out o;
	struct memv mv;

	outv_init(&o, &mv);
	commit_pkt(b, 1, 1, 0, 0, 0, 30);
	mv.eintr_every = 1;		/* every call: interrupted */
	ck_assert_int_eq(tb_trace_write(&o, b), TB_EIO);
	ck_assert_int_ne(o.error, 0);
	ck_assert_uint_eq(mv.calls, TB_TRACE_RETRIES);
	tb_buf_destroy(b);
}
END_TEST

/*
 * Whether a packet is valid does not depend on how the buffer sliced it:
 * random field soups (reserved fields, long varints, lengths past the
 * end, cut keys), each judged whole and cut into two and three slices.
 */
START_TEST(test_trace_validity_does_not_depend_on_slicing)
{
	static const uint8_t keys[] = { 0x08, 0x09, 0x0a, 0x0d, 0x0b, 0x18,
					0x50, 0x42, 0x88, 0xf8, 0x00, 0x45 };
	uint8_t p[64];
	struct tb_buf_slice sl[3];
	struct tb_buf_packet pkt;
	uint32_t rnd = 12345;
	unsigned iter, n, i, a, c, valid = 0;

	for (iter = 0; iter < 20000; iter++) {
		bool whole;

		for (n = 0; n < sizeof(p) - 12; ) {
			rnd = rnd * 1103515245u + 12345u;
			if (rnd >> 28 == 0)
				break;
			if (rnd >> 27 & 1) {		/* a key */
				p[n++] = keys[(rnd >> 8) % sizeof(keys)];
				if (rnd >> 20 & 1)	/* a two-byte key */
					p[n - 1] |= 0x80, p[n++] =
						(uint8_t)(rnd >> 13 & 0x7f);
			} else {			/* a value byte */
				p[n++] = (uint8_t)(rnd >> 12);
			}
		}
		memset(&pkt, 0, sizeof(pkt));
		pkt.slices = sl;
		sl[0].data = p;
		sl[0].size = n;
		pkt.nslices = 1;
		pkt.size = n;
		whole = tb_trace_packet_valid(&pkt);
		valid += whole;
		for (a = 0; a <= n; a++) {
			sl[0].size = a;
			sl[1].data = p + a;
			sl[1].size = n - a;
			pkt.nslices = 2;
			ck_assert_int_eq(tb_trace_packet_valid(&pkt), whole);
			c = a + (n - a) / 2;
			sl[1].size = c - a;
			sl[2].data = p + c;
			sl[2].size = n - c;
			pkt.nslices = 3;
			ck_assert_int_eq(tb_trace_packet_valid(&pkt), whole);
		}
		(void)i;
	}
	/* both kinds were seen, many times */
	ck_assert_uint_gt(valid, 1000);
	ck_assert_uint_lt(valid, 19000);
}
END_TEST

/* ------------------------------------------------------------------------
 * Service loop
 */
START_TEST(test_service_drains_lazily)
{
	struct fx *f = fx_new(1, 1024, 16, 65536);
	struct twriter a, b;
	struct tb_ring_stats st;
	struct tb_span sp;
	uint32_t word;
	int n;

	f->cfg.out = NULL;
	tw_new(&a, f, 0, 1, 0);
	tw_new(&b, f, 0, 2, 0);
	wpkt_rel(&a, 0, 100);			/* position 0, handed over */
	wpkt_ok(&b, 0, 100);			/* position 1, held ... */
	ck_assert_int_eq(tb_writer_open(&b.w, 16, 0, &sp), TB_OK);
	word = tword(&f->t[0], 1);
	ck_assert_uint_eq(word >> 29, 1);	/* ... Acquired, 1 published */
	ck_assert(tb_service_poll(svc(f), 0));
	ck_assert(tb_service_poll(svc(f), 0));
	n = read_buf(f->buf[0], g, 100);
	ck_assert_int_eq(n, 1);
	ck_assert_uint_eq(g[0].w, 1);
	tb_ring_stats(&f->t[0].r, &st);
	ck_assert_uint_eq(st.rstat[TB_RS_SCRAPES], 0);
	ck_assert_uint_eq(tword(&f->t[0], 1), word);	/* untouched */
	/* handed over: now it comes */
	ck_assert_int_eq(tb_writer_close(&b.w, 0, 0), TB_OK);
	ck_assert_int_eq(tb_writer_release(&b.w), TB_OK);
	ck_assert(tb_service_poll(svc(f), 0));
	n = read_buf(f->buf[0], g, 100);
	ck_assert_int_eq(n, 1);
	ck_assert_uint_eq(g[0].w, 2);
	ck_assert_uint_eq(g[0].loss, 0);
	twriter_free(&a);
	twriter_free(&b);
	fx_free(f);
}
END_TEST

START_TEST(test_service_poll_that_found_work_does_not_sleep)
{
	struct fx *f = fx_new(1, 1024, 16, 65536);
	struct twriter a;
	struct tb_span sp;
	uint64_t sleeps;

	f->cfg.out = NULL;
	fx_wait(f, TB_HANG_MS);		/* and a sleep would hang */
	tw_new(&a, f, 0, 1, 0);
	wpkt_rel(&a, 0, 100);
	sleeps = fx_stats(f).sleeps;
	ck_assert(tb_service_poll(svc(f), 0));
	ck_assert_uint_eq(fx_stats(f).sleeps, sleeps);
	ck_assert_int_eq(read_buf(f->buf[0], g, 10), 1);
	/* a flush that took something is work too */
	wpkt_ok(&a, 1, 100);
	ck_assert_int_eq(tb_writer_open(&a.w, 16, 0, &sp), TB_OK);
	tb_service_request_flush(svc(f));
	ck_assert(tb_service_poll(svc(f), 0));
	ck_assert_uint_eq(fx_stats(f).sleeps, sleeps);
	ck_assert_int_eq(read_buf(f->buf[0], g, 10), 1);
	ck_assert_uint_eq(g[0].seq, 1);
	twriter_free(&a);
	fx_free(f);
}
END_TEST

START_TEST(test_service_idle_poll_sleeps_on_the_bell)
{
	struct fx *f = fx_new(2, 1024, 16, 65536);
	struct twriter a;
	struct tb_span sp;
	uint64_t sleeps;
	int i;

	fx_wait(f, 50);
	sleeps = fx_stats(f).sleeps;
	for (i = 0; i < 5; i++)
		ck_assert(tb_service_poll(svc(f), now_ms()));
	ck_assert_msg(fx_stats(f).sleeps - sleeps == 5,
		      "5 idle polls slept %llu times",
		      (unsigned long long)(fx_stats(f).sleeps - sleeps));
	/* a writer holding a chunk is no reason to spin either */
	tw_new(&a, f, 1, 1, 0);
	wpkt_ok(&a, 0, 100);
	ck_assert_int_eq(tb_writer_open(&a.w, 16, 0, &sp), TB_OK);
	ck_assert(tb_service_poll(svc(f), now_ms()));
	sleeps = fx_stats(f).sleeps;
	for (i = 0; i < 5; i++)
		ck_assert(tb_service_poll(svc(f), now_ms()));
	ck_assert_msg(fx_stats(f).sleeps - sleeps == 5,
		      "5 polls past a held chunk slept %llu times",
		      (unsigned long long)(fx_stats(f).sleeps - sleeps));
	twriter_free(&a);
	fx_free(f);
}
END_TEST

enum { BG_HANDOVER, BG_FLUSH, BG_STOP };

struct bg {
	struct fx *f;
	struct twriter *tw;
	int what;
	int rc;
};

static void *bg_fn(void *arg)
{
	struct bg *bg = (struct bg *)arg;

	sleep_ms(200);
	switch (bg->what) {
	case BG_HANDOVER:
		bg->rc = wpkt(bg->tw, 0, 100);
		if (!bg->rc)
			bg->rc = tb_writer_release(&bg->tw->w);
		break;
	case BG_FLUSH:
		tb_service_request_flush(svc(bg->f));
		break;
	case BG_STOP:
		tb_service_stop(svc(bg->f));
		break;
	}
	return NULL;
}

/*
 * Polls with a wait that would hang (the caller's) until @want packets
 * reached buffer 0 (or, for @want < 0, until poll returns false): a
 * service that slept through a wake-up fails through the test's timeout.
 */
static void poll_until(struct fx *f, int want, int *got_n)
{
	int n = 0, i;

	mark_point();
	for (i = 0; i < 50; i++) {
		bool more = tb_service_poll(svc(f), now_ms());

		if (want < 0 && !more)
			break;
		if (want >= 0) {
			n += read_buf(f->buf[0], g + n, 100);
			if (n >= want)
				break;
		}
		/* after the wake-up, do not sleep long again */
		fx_wait(f, 50);
	}
	*got_n = n;
}

static void bg_run(struct fx *f, struct twriter *tw, int what, int want,
		   int *n)
{
	struct bg bg;
	pthread_t th;

	memset(&bg, 0, sizeof(bg));
	bg.f = f;
	bg.tw = tw;
	bg.what = what;
	fx_wait(f, TB_HANG_MS);
	ck_assert_int_eq(pthread_create(&th, NULL, bg_fn, &bg), 0);
	poll_until(f, want, n);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(bg.rc, 0);
}

START_TEST(test_service_wakes_when_a_writer_hands_over_a_chunk)
{
	struct fx *f = fx_new(1, 1024, 16, 65536);
	struct twriter a;
	int n;

	tw_new(&a, f, 0, 1, 0);
	ck_assert(tb_service_poll(svc(f), 0));	/* settle: idle */
	bg_run(f, &a, BG_HANDOVER, 1, &n);
	ck_assert_int_eq(n, 1);
	ck_assert_uint_eq(g[0].w, 1);
	ck_assert_uint_eq(g[0].seq, 0);
	twriter_free(&a);
	fx_free(f);
}
END_TEST

START_TEST(test_service_wakes_on_flush_request_from_another_thread)
{
	struct fx *f = fx_new(1, 1024, 16, 65536);
	struct tb_ring_stats st;
	struct twriter a;
	struct tb_span sp;
	int n;

	tw_new(&a, f, 0, 1, 0);
	wpkt_ok(&a, 0, 100);
	ck_assert_int_eq(tb_writer_open(&a.w, 16, 0, &sp), TB_OK);
	ck_assert(tb_service_poll(svc(f), 0));	/* settle: pending */
	bg_run(f, NULL, BG_FLUSH, 1, &n);
	ck_assert_int_eq(n, 1);
	ck_assert_uint_eq(g[0].seq, 0);
	tb_ring_stats(&f->t[0].r, &st);
	ck_assert_uint_eq(st.rstat[TB_RS_SCRAPES], 1);
	twriter_free(&a);
	fx_free(f);
}
END_TEST

START_TEST(test_service_wakes_on_stop_from_another_thread)
{
	struct fx *f = fx_new(1, 1024, 16, 65536);
	int n;

	ck_assert(tb_service_poll(svc(f), 0));
	bg_run(f, NULL, BG_STOP, -1, &n);
	ck_assert(tb_service_stopping(svc(f)));
	ck_assert(!tb_service_poll(svc(f), 0));
	fx_free(f);
}
END_TEST

static void *wake_fn(void *arg)
{
	sleep_ms(200);
	tb_service_wake((struct tb_service *)arg);
	return NULL;
}

START_TEST(test_service_wake_from_another_thread_ends_the_sleep)
{
	struct fx *f = fx_new(1, 1024, 16, 65536);
	pthread_t th;

	ck_assert(tb_service_poll(svc(f), 0));
	fx_wait(f, TB_HANG_MS);		/* not woken: the test hangs */
	ck_assert_int_eq(pthread_create(&th, NULL, wake_fn, svc(f)), 0);
	mark_point();
	ck_assert(tb_service_poll(svc(f), 0));
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	fx_free(f);
}
END_TEST

START_TEST(test_service_flush_request_scrapes_held_chunks)
{
	struct fx *f = fx_new(1, 1024, 16, 65536);
	static uint8_t pb[100];
	struct twriter a;
	struct tb_span sp;
	int n;

	f->cfg.out = NULL;
	tw_new(&a, f, 0, 1, 0);
	wpkt_ok(&a, 0, 100);
	wpkt_ok(&a, 1, 100);
	mkpkt(pb, 1, 2, 100);
	ck_assert_int_eq(tb_writer_open(&a.w, 100, 0, &sp), TB_OK);
	memcpy(sp.begin, pb, 40);
	ck_assert(tb_service_poll(svc(f), 0));
	ck_assert_int_eq(read_buf(f->buf[0], g, 100), 0);
	tb_service_request_flush(svc(f));
	ck_assert(tb_service_poll(svc(f), 0));
	n = read_buf(f->buf[0], g, 100);
	ck_assert_int_eq(n, 2);
	ck_assert_uint_eq(g[0].seq, 0);
	ck_assert_uint_eq(g[1].seq, 1);
	/* the open packet moves on and arrives after them, once */
	ck_assert_int_eq(tb_writer_sync(&a.w, 40, &sp), TB_OK);
	memcpy(sp.begin + 40, pb + 40, 60);
	ck_assert_int_eq(tb_writer_close(&a.w, 100, 0), TB_OK);
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);
	tb_service_request_flush(svc(f));
	ck_assert(tb_service_poll(svc(f), 0));
	ck_assert(tb_service_poll(svc(f), 0));
	n = read_buf(f->buf[0], g, 100);
	ck_assert_int_eq(n, 1);
	ck_assert_uint_eq(g[0].seq, 2);
	ck_assert_uint_eq(g[0].loss, 0);
	twriter_free(&a);
	fx_free(f);
}
END_TEST

START_TEST(test_service_stop_flushes_and_writes_every_buffer)
{
	struct fx *f = fx_new(2, 1024, 16, 65536);
	struct twriter a, x, c;
	struct tb_span sp;
	struct tcol tc;
	unsigned i, na = 0, nx = 0, nc = 0;

	tw_new(&a, f, 0, 1, 0);
	tw_new(&x, f, 0, 2, 1);
	tw_new(&c, f, 1, 3, 0);
	wpkt_ok(&a, 0, 100);
	wpkt_rel(&a, 1, 100);
	wpkt_rel(&x, 0, 100);
	ck_assert(tb_service_poll(svc(f), 0));
	ck_assert_uint_eq(f->mo.len, 0);	/* not long-trace: no writes */
	wpkt_ok(&c, 0, 100);			/* held, with a packet open */
	ck_assert_int_eq(tb_writer_open(&c.w, 16, 0, &sp), TB_OK);
	tb_service_stop(svc(f));
	ck_assert(!tb_service_poll(svc(f), 0));
	decode(&f->mo, &tc);
	ck_assert_uint_eq(tc.n, 4);
	for (i = 0; i < tc.n; i++) {
		const struct tpkt *t = &tc.v[i];

		ck_assert(!t->has_dropped);
		if (t->w == 1) {
			ck_assert_uint_eq(t->seq, na++);
			ck_assert_uint_eq(t->seqid, PROD0 << 16 | 1);
			ck_assert_uint_eq(t->uid, 1000);
			ck_assert_uint_eq(t->pid, 100);
		} else if (t->w == 2) {
			nx++;
			ck_assert_uint_eq(t->seqid, PROD0 << 16 | 2);
		} else {
			ck_assert_uint_eq(t->w, 3);
			nc++;
			ck_assert_uint_eq(t->seqid, (PROD0 + 1) << 16 | 3);
			ck_assert_uint_eq(t->uid, 1001);
			ck_assert_uint_eq(t->pid, 101);
		}
	}
	ck_assert_uint_eq(na, 2);
	ck_assert_uint_eq(nx, 1);
	ck_assert_uint_eq(nc, 1);
	ck_assert_int_eq(read_buf(f->buf[0], g, 10), 0);
	ck_assert_int_eq(read_buf(f->buf[1], g, 10), 0);
	tcol_free(&tc);
	twriter_free(&a);
	twriter_free(&x);
	twriter_free(&c);
	fx_free(f);
}
END_TEST

START_TEST(test_service_stop_flushes_a_full_ring_of_any_size)
{
	const uint32_t nchunks = 32768, max = tb_frag_max_size(256);
	struct fx *f = fx_new(1, 256, nchunks, 16u << 20);
	struct twriter a;
	struct tcol tc;
	uint32_t i;

	twriter_new(&a, &f->t[0], 1, 0, TB_DROP);
	for (i = 0; i < nchunks; i++)
		wpkt_ok(&a, i, max);
	ck_assert_int_eq(wpkt(&a, nchunks, max), TB_FULL);
	tb_service_stop(svc(f));
	ck_assert(!tb_service_poll(svc(f), 0));
	decode(&f->mo, &tc);
	ck_assert_uint_eq(tc.n, nchunks);
	for (i = 0; i < tc.n; i++) {
		ck_assert_uint_eq(tc.v[i].seq, i);
		ck_assert(!tc.v[i].has_dropped);
	}
	tcol_free(&tc);
	twriter_free(&a);
	fx_free(f);
}
END_TEST

START_TEST(test_service_ring_loss_reaches_the_trace)
{
	struct fx *f = fx_new(1, 256, 4, 65536);
	uint32_t max = tb_frag_max_size(256);
	struct twriter a;
	struct tcol tc;
	int i;

	twriter_new(&a, &f->t[0], 1, 0, TB_DROP);
	for (i = 0; i < 4; i++)
		wpkt_ok(&a, (uint32_t)i, max);
	ck_assert_int_eq(wpkt(&a, 4, max), TB_FULL);
	ck_assert(tb_service_poll(svc(f), 0));
	wpkt_rel(&a, 5, 50);
	tb_service_stop(svc(f));
	ck_assert(!tb_service_poll(svc(f), 0));
	decode(&f->mo, &tc);
	ck_assert_uint_eq(tc.n, 5);
	for (i = 0; i < 4; i++)
		ck_assert(!tc.v[i].has_dropped);
	ck_assert_uint_eq(tc.v[4].seq, 5);
	ck_assert(tc.v[4].has_dropped);
	ck_assert_uint_eq(tc.v[4].dropped, PRESENT | SMB_FULL);
	ck_assert_uint_eq(f->out.lossy_packets, 1);
	/* no clock: of the service's own packets only TraceStats, last */
	ck_assert_uint_eq(tc.service, 1);
	ck_assert(tc.stats_last);
	tcol_free(&tc);
	twriter_free(&a);
	fx_free(f);
}
END_TEST

/* ------------------------------------------------------------------------
 * The service's own packets: "events lost" per ring, the rings' records,
 * TraceStats at the end.
 */
static uint64_t fx_ns;

static uint64_t fx_clock(void *ctx)
{
	(void)ctx;
	return fx_ns += 1000;
}

/* What the service wrote on its own sequence. */
struct svc_seen {
	unsigned packets, descriptors, counters, instants, stats;
	int64_t last_count;
	int stats_last;
	uint64_t chunks_written;	/* BufferStats[0] */
};

static void svc_scan(const struct mem_out *m, struct svc_seen *v)
{
	struct tb_trace_packet tp;
	struct tb_pb_reader r, br;
	struct tb_pb_field f;
	const uint8_t *te, *ts, *bs;
	size_t n, tn, bn;
	uint64_t type, val;

	memset(v, 0, sizeof(*v));
	tb_pb_reader_init(&r, m->p, m->len);
	while (tb_trace_next(&r, &tp) > 0) {
		v->stats_last = 0;
		if (tp.trusted_seq_id != TB_TRACE_SERVICE_SEQ)
			continue;
		ck_assert_uint_eq(tp.has & 7u, 7u);
		v->packets++;
		if (tb__ck_msg(tp.data, tp.size, TB__CK_TP_TRACK_DESC, &te, &n))
			v->descriptors++;
		if (tb__ck_msg(tp.data, tp.size, TB__CK_TP_TRACE_STATS, &ts,
			       &tn)) {
			v->stats++;
			v->stats_last = 1;
			/* the first BufferStats: buffer 0's */
			tb_pb_reader_init(&br, ts, tn);
			while (tb_pb_next(&br, &f) > 0)
				if (f.number == 1 && f.type == TB_PB_LEN)
					break;
			bs = f.data;
			bn = f.size;
			if (bs && tb__ck_uint(bs, bn, 2, &val))
				v->chunks_written = val;
		}
		if (!tb__ck_msg(tp.data, tp.size, TB__CK_TP_TRACK_EVENT, &te,
				&n) || !tb__ck_uint(te, n, TB__CK_TE_TYPE, &type))
			continue;
		if (type == 4 && tb__ck_uint(te, n, TB__CK_TE_COUNTER, &val)) {
			v->counters++;
			v->last_count = (int64_t)val;
		} else if (type == 3) {
			v->instants++;
		}
	}
}

START_TEST(test_service_trace_shows_what_each_ring_lost)
{
	struct fx *f = fx_new(1, 256, 4, 65536);
	uint32_t max = tb_frag_max_size(256);
	uint64_t lost[NRING];
	struct svc_seen v;
	struct twriter a;
	struct tb_check c;
	int i;

	memset(lost, 0, sizeof(lost));
	f->cfg.clock_ns = fx_clock;
	f->cfg.lost = lost;
	f->cfg.ident = fx_ident(9);
	twriter_new(&a, &f->t[0], 1, 0, TB_DROP);
	tb_service_write_buffers(svc(f));	/* the track, at 0 lost */
	for (i = 0; i < 4; i++)
		wpkt_ok(&a, (uint32_t)i, max);
	ck_assert_int_eq(wpkt(&a, 4, max), TB_FULL);
	ck_assert_int_eq(wpkt(&a, 4, max), TB_FULL);
	ck_assert(tb_service_poll(svc(f), 0));
	tb_service_write_buffers(svc(f));	/* 2 lost: a sample */
	tb_service_write_buffers(svc(f));	/* no change: none */
	wpkt_rel(&a, 5, 50);
	tb_service_stop(svc(f));
	ck_assert(!tb_service_poll(svc(f), 0));
	svc_scan(&f->mo, &v);
	/* the counter track, its values 0 and 2, the service's track,
	 * the ring's record at the end, TraceStats last */
	ck_assert_uint_eq(v.descriptors, 2);
	ck_assert_uint_eq(v.counters, 2);
	ck_assert_int_eq(v.last_count, 2);
	ck_assert_uint_eq(v.instants, 1);
	ck_assert_uint_eq(v.stats, 1);
	ck_assert(v.stats_last);
	ck_assert_uint_eq(v.chunks_written,
			  tb_buf_stats(f->buf[0])->chunks_written);
	ck_assert_uint_eq(fx_stats(f).loss_samples, 2);
	/* every packet passes the importer's rules, and the checker reads
	 * the record: this ring lost writes at its end */
	ck_assert_int_eq(tb_check_init(&c, NULL, NULL, 0), TB_OK);
	ck_assert_int_eq(tb_check_trace(&c, f->mo.p, f->mo.len), TB_OK);
	ck_assert(tb_check_clean(&c));
	ck_assert_uint_eq(c.stats.trace_stats, 1);
	ck_assert_uint_eq(c.stats.producer_ends, 1);
	ck_assert_uint_eq(c.stats.producers_lossy, 1);
	tb_check_destroy(&c);
	twriter_free(&a);
	fx_free(f);
}
END_TEST

/*
 * 200 packets of 100 bytes through a 4096-byte buffer, five per poll, the
 * clock advancing 10 ms per poll.  Returns the packets in the output and
 * how many carried OVERWRITE.
 */
static void long_trace_run(uint32_t period_ms, unsigned *n,
			   unsigned *overwritten)
{
	struct fx *f = fx_new(1, 1024, 64, 4096);
	struct twriter a;
	struct tcol tc;
	uint64_t now = 1000;
	uint32_t i, next = 0;

	ck_assert_uint_eq(tb_buf_stats(f->buf[0])->buffer_size, 4096);
	f->cfg.period_ms = period_ms;
	fx_wait(f, 1);
	tw_new(&a, f, 0, 1, 0);
	for (i = 0; i < 200; i++) {
		wpkt_ok(&a, i, 100);
		if (i % 5 == 4) {
			ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);
			ck_assert(tb_service_poll(svc(f), now));
			now += 10;
		}
	}
	tb_service_stop(svc(f));
	ck_assert(!tb_service_poll(svc(f), now));
	decode(&f->mo, &tc);
	*n = (unsigned)tc.n;
	*overwritten = 0;
	for (i = 0; i < tc.n; i++) {
		if (tc.v[i].dropped & TB_BUF_LOSS_OVERWRITE)
			(*overwritten)++;
		if (!period_ms)
			continue;
		/* every packet, in order, none lost */
		ck_assert_uint_eq(tc.v[i].seq, next++);
		ck_assert(!tc.v[i].has_dropped);
	}
	tcol_free(&tc);
	twriter_free(&a);
	fx_free(f);
}

START_TEST(test_service_long_trace_outlives_a_small_buffer)
{
	unsigned n, ow;

	/* without long-trace mode the buffer cannot hold the traffic */
	long_trace_run(0, &n, &ow);
	ck_assert_uint_lt(n, 200);
	ck_assert_uint_ge(ow, 1);
	long_trace_run(10, &n, &ow);
	ck_assert_uint_eq(n, 200);
	ck_assert_uint_eq(ow, 0);
}
END_TEST

START_TEST(test_service_long_trace_writes_when_the_period_is_due)
{
	struct fx *f = fx_new(1, 1024, 64, 1u << 20);
	uint64_t now, last = 1000;	/* the start counts as a write */
	unsigned events = 0;
	struct twriter a;
	struct tcol tc;
	uint32_t i = 0;
	size_t len = 0;

	f->cfg.period_ms = 100;
	fx_wait(f, 1);
	tw_new(&a, f, 0, 1, 0);
	for (now = 1000; now < 2000; now += 10) {
		wpkt_rel(&a, i++, 40);
		ck_assert(tb_service_poll(svc(f), now));
		if (f->mo.len == len) {
			/* nothing written: the last write is recent */
			ck_assert_msg(now - last < 100,
				      "nothing written at %llu, last %llu",
				      (unsigned long long)now,
				      (unsigned long long)last);
			continue;
		}
		/* written: not sooner than a period after the last */
		ck_assert_msg(!events || now - last >= 100,
			      "written at %llu after %llu",
			      (unsigned long long)now,
			      (unsigned long long)last);
		decode(&f->mo, &tc);
		ck_assert_uint_eq(tc.n, i);	/* everything drained so far */
		tcol_free(&tc);
		events++;
		last = now;
		len = f->mo.len;
	}
	ck_assert_uint_ge(events, 9);
	ck_assert_uint_le(events, 11);
	twriter_free(&a);
	fx_free(f);
}
END_TEST

START_TEST(test_service_long_trace_write_is_not_held_back_by_sleep)
{
	struct fx *f = fx_new(1, 1024, 64, 1u << 20);
	struct twriter a;
	struct tcol tc;
	uint64_t t0;
	size_t len;
	int i;

	f->cfg.period_ms = 200;
	fx_wait(f, TB_HANG_MS);	/* held back by the sleep, it hangs */
	tw_new(&a, f, 0, 1, 0);
	wpkt_rel(&a, 0, 40);
	t0 = now_ms();
	ck_assert(tb_service_poll(svc(f), t0));	/* drains 0, writes */
	len = f->mo.len;
	wpkt_rel(&a, 1, 40);
	ck_assert(tb_service_poll(svc(f), now_ms()));	/* drains 1 */
	/* packet 1 is due for the output a period from t0, not an hour */
	mark_point();
	for (i = 0; i < 100 && f->mo.len == len; i++)
		ck_assert(tb_service_poll(svc(f), now_ms()));
	decode(&f->mo, &tc);
	ck_assert_uint_eq(tc.n, 2);
	ck_assert_uint_eq(tc.v[1].seq, 1);
	tcol_free(&tc);
	twriter_free(&a);
	fx_free(f);
}
END_TEST

START_TEST(test_service_ring_protocol_error_stops_only_that_ring)
{
	struct fx *f = fx_new(2, 256, 16, 1u << 20);
	uint32_t max = tb_frag_max_size(256);
	struct twriter bad, a;
	struct tcol tc;
	uint32_t seq = 0, i;
	int round;

	tw_new(&bad, f, 0, 9, 0);
	tw_new(&a, f, 1, 1, 0);
	wpkt_rel(&bad, 0, max);
	wpkt_rel(&bad, 1, max);
	tset_word(&f->t[0], 1, 6u << 29 | 9u);	/* reserved state */
	for (round = 0; round < 5; round++) {
		for (i = 0; i < 3; i++)
			wpkt_ok(&a, seq++, 60);
		ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);
		ck_assert(tb_service_poll(svc(f), (uint64_t)round));
		/* ring 1 is served in the very pass that stops ring 0 */
		ck_assert_uint_eq(sbr(f, 1)->stat[TB_BS_CHUNKS],
				  (uint64_t)round + 1);
	}
	ck_assert_uint_eq(f->nerr, 1);
	ck_assert_uint_eq(f->err_ring, 0);
	ck_assert_int_eq(f->err, TB_EPROTO);
	ck_assert_uint_eq(fx_stats(f).stopped_rings, 1);
	/* the flush at stop does not report it again */
	tb_service_stop(svc(f));
	ck_assert(!tb_service_poll(svc(f), 10));
	ck_assert_uint_eq(f->nerr, 1);
	ck_assert_uint_eq(fx_stats(f).stopped_rings, 1);
	decode(&f->mo, &tc);
	/* ring 0 delivered what came before the error, ring 1 everything */
	for (i = 0, seq = 0; i < tc.n; i++) {
		if (tc.v[i].w == 9) {
			ck_assert_uint_eq(tc.v[i].seq, 0);
			continue;
		}
		ck_assert_uint_eq(tc.v[i].w, 1);
		ck_assert_uint_eq(tc.v[i].seq, seq++);
		ck_assert(!tc.v[i].has_dropped);
	}
	ck_assert_uint_eq(seq, 15);
	ck_assert_uint_eq(tc.n, 16);
	tcol_free(&tc);
	twriter_free(&bad);
	twriter_free(&a);
	fx_free(f);
}
END_TEST

/*
 * Writers that die holding chunks the service scraped pin them: once a
 * lap found every chunk still RewriteRequested and it stayed so for
 * pin_ms, the service retires that ring with its own reason (TB_EPINNED,
 * counted apart from protocol errors) and goes on serving the others.
 */
START_TEST(test_service_retires_a_ring_whose_every_chunk_is_pinned)
{
	struct fx *f = fx_new(2, 256, 4, 1u << 20);
	struct twriter dead[4], e, a;
	struct tb_span sp;
	unsigned i;

	for (i = 0; i < 4; i++) {
		twriter_new(&dead[i], &f->t[0], (uint16_t)(20 + i), 0,
			    TB_DROP);
		topen_with(&dead[i], "open", 4, 0, &sp);
	}
	twriter_new(&e, &f->t[0], 30, 0, TB_DROP);
	tw_new(&a, f, 1, 1, 0);
	f->cfg.pin_ms = 1000;
	tb_service_request_flush(svc(f));	/* scrapes all four */
	ck_assert(tb_service_poll(svc(f), 0));
	ck_assert_uint_eq(f->nerr, 0);
	ck_assert_int_eq(twrite(&e, "e", 0, 0), TB_NO_CHUNK);
	wpkt_rel(&a, 0, 60);
	ck_assert(tb_service_poll(svc(f), 1));	/* a pinned lap: it starts */
	ck_assert(tb_reader_pinned(&f->br[0].reader));
	ck_assert(tb_service_poll(svc(f), 1000));
	ck_assert_uint_eq(f->nerr, 0);
	ck_assert(tb_service_poll(svc(f), 1001));
	ck_assert_uint_eq(f->nerr, 1);
	ck_assert_uint_eq(f->err_ring, 0);
	ck_assert_int_eq(f->err, TB_EPINNED);
	ck_assert_uint_eq(fx_stats(f).pinned_rings, 1);
	ck_assert_uint_eq(fx_stats(f).stopped_rings, 0);
	ck_assert_uint_eq(sbr(f, 1)->stat[TB_BS_CHUNKS], 1);
	/* retired for good; the other ring is still served */
	ck_assert_int_eq(tb_bridge_drain(&f->br[0], 10, TB_READ_SCRAPE, NULL),
			 TB_EPINNED);
	wpkt_rel(&a, 1, 60);
	ck_assert(tb_service_poll(svc(f), 2));
	ck_assert_uint_eq(sbr(f, 1)->stat[TB_BS_CHUNKS], 2);
	ck_assert_uint_eq(f->nerr, 1);
	for (i = 0; i < 4; i++)
		twriter_free(&dead[i]);
	twriter_free(&e);
	twriter_free(&a);
	fx_free(f);
}
END_TEST

/*
 * A lap of pinned chunks is not enough: writers that are only slow (more
 * writers than chunks, the scheduler left them out) pin every chunk while
 * another burns positions on them, and unpin it when they run again.  The
 * service keeps such a ring: pinned for less than pin_ms, then unpinned,
 * it stays served and writes go on; pinned again, pin_ms starts over.
 */
START_TEST(test_service_keeps_a_ring_pinned_by_slow_writers)
{
	struct fx *f = fx_new(1, 256, 4, 1u << 20);
	struct twriter slow[4], e;
	struct tb_span sp;
	unsigned i;

	for (i = 0; i < 4; i++) {
		twriter_new(&slow[i], &f->t[0], (uint16_t)(20 + i), 0,
			    TB_DROP);
		topen_with(&slow[i], "open", 4, 0, &sp);
	}
	twriter_new(&e, &f->t[0], 30, 0, TB_DROP);
	f->cfg.pin_ms = 1000;
	tb_service_request_flush(svc(f));	/* scrapes all four */
	ck_assert(tb_service_poll(svc(f), 0));
	ck_assert_int_eq(twrite(&e, "e", 0, 0), TB_NO_CHUNK);
	ck_assert(tb_service_poll(svc(f), 10));
	ck_assert(tb_reader_pinned(&f->br[0].reader));
	/* they run again: each acknowledges its scrape */
	for (i = 0; i < 4; i++) {
		tb_writer_close(&slow[i].w, 4, 0);
		tb_writer_release(&slow[i].w);
	}
	ck_assert(tb_service_poll(svc(f), 20));
	ck_assert(!tb_reader_pinned(&f->br[0].reader));
	ck_assert(tb_service_poll(svc(f), 5000));
	ck_assert_uint_eq(f->nerr, 0);
	ck_assert_uint_eq(fx_stats(f).pinned_rings, 0);
	ck_assert_int_eq(twrite(&e, "e", 0, 0), TB_OK);
	ck_assert_int_eq(tb_writer_release(&e.w), TB_OK);
	ck_assert(tb_service_poll(svc(f), 5001));
	ck_assert_uint_eq(sbr(f, 0)->stat[TB_BS_CHUNKS], 1);
	ck_assert_int_eq(sbr(f, 0)->error, 0);
	/* pinned again: pin_ms counts from this lap, not the first */
	for (i = 0; i < 4; i++)
		topen_with(&slow[i], "open", 4, 0, &sp);
	tb_service_request_flush(svc(f));
	ck_assert(tb_service_poll(svc(f), 5002));
	ck_assert_int_eq(twrite(&e, "e", 0, 0), TB_NO_CHUNK);
	ck_assert(tb_service_poll(svc(f), 5003));
	ck_assert(tb_reader_pinned(&f->br[0].reader));
	ck_assert(tb_service_poll(svc(f), 5500));
	ck_assert_uint_eq(f->nerr, 0);
	ck_assert(tb_service_poll(svc(f), 6003));
	ck_assert_uint_eq(f->nerr, 1);
	ck_assert_int_eq(f->err, TB_EPINNED);
	for (i = 0; i < 4; i++)
		twriter_free(&slow[i]);
	twriter_free(&e);
	fx_free(f);
}
END_TEST

/*
 * Handles are stable: removing a ring does not move the others, and a
 * removed ring first hands over everything its writers published.
 */
START_TEST(test_service_handles_stay_put_when_another_ring_goes)
{
	struct fx *f = fx_new(3, 256, 16, 1u << 20);
	struct twriter a, b, c;
	struct tb_bridge extra;
	unsigned h;
	int n;

	f->cfg.out = NULL;
	f->cfg.max_rings = 3;
	tw_new(&a, f, 0, 1, 0);
	tw_new(&b, f, 1, 2, 0);
	tw_new(&c, f, 2, 3, 0);
	ck_assert(tb_service_poll(svc(f), 0));
	ck_assert_uint_eq(fx_stats(f).rings, 3);
	/* full, and a bridge is served once */
	ck_assert_int_eq(tb_service_add(svc(f), &extra, &h), TB_ELIMIT);
	wpkt_ok(&b, 0, 60);		/* kept for reuse: lazy reading waits */
	ck_assert_int_eq(tb_service_remove(svc(f), f->h[1]), TB_OK);
	ck_assert_ptr_null(tb_service_bridge(svc(f), f->h[1]));
	ck_assert_int_eq(tb_service_remove(svc(f), f->h[1]), TB_EINVAL);
	ck_assert_uint_eq(fx_stats(f).rings, 2);
	n = read_buf(f->buf[0], g, 100);
	ck_assert_int_eq(n, 1);		/* taken before it was let go */
	ck_assert_uint_eq(g[0].w, 2);
	wpkt_rel(&c, 0, 60);
	ck_assert(tb_service_poll(svc(f), 1));
	ck_assert_uint_eq(sbr(f, 2)->stat[TB_BS_CHUNKS], 1);
	ck_assert_uint_eq(sbr(f, 0)->stat[TB_BS_CHUNKS], 0);
	ck_assert_int_eq(tb_service_add(svc(f), &f->br[0], &h), TB_EINVAL);
	/* a ring added again may get the freed handle; others keep theirs */
	ck_assert_int_eq(tb_service_add(svc(f), &f->br[1], &h), TB_OK);
	ck_assert_uint_eq(h, f->h[1]);
	ck_assert_uint_eq(fx_stats(f).rings, 3);
	wpkt_rel(&a, 0, 60);
	ck_assert(tb_service_poll(svc(f), 2));
	ck_assert_uint_eq(sbr(f, 0)->stat[TB_BS_CHUNKS], 1);
	ck_assert_uint_eq(sbr(f, 2)->stat[TB_BS_CHUNKS], 1);
	twriter_free(&a);
	twriter_free(&b);
	twriter_free(&c);
	fx_free(f);
}
END_TEST

START_TEST(test_service_init_rejects_a_bad_configuration)
{
	struct fx *f = fx_new(1, 256, 16, 65536);
	struct tb_service s;
	struct tb_service_config c = f->cfg;

	c.bell = NULL;
	ck_assert_int_eq(tb_service_init(&s, &c), TB_EINVAL);
	c = f->cfg;
	c.slots = NULL;
	ck_assert_int_eq(tb_service_init(&s, &c), TB_EINVAL);
	c = f->cfg;
	c.max_rings = 0;
	ck_assert_int_eq(tb_service_init(&s, &c), TB_EINVAL);
	ck_assert_int_eq(tb_service_init(&s, &f->cfg), TB_OK);
	fx_free(f);
}
END_TEST

/*
 * The service asks every writer for a fresh incremental state (bumps the
 * ring's generation) after each long-trace write and whenever a central
 * buffer overwrote chunks, and not otherwise.
 */
START_TEST(test_service_bumps_the_generation_on_writes)
{
	struct fx *f = fx_new(2, 1024, 16, 4096);
	struct twriter a;
	uint32_t g0, g1;

	f->cfg.period_ms = 1000;
	tw_new(&a, f, 0, 1, 0);
	g0 = tb_ring_generation(&f->t[0].r);
	ck_assert(tb_service_poll(svc(f), 0));	/* the first write is due */
	g1 = tb_ring_generation(&f->t[0].r);
	ck_assert_uint_eq(g1, g0 + 1);
	ck_assert_uint_eq(tb_ring_generation(&f->t[1].r), g1);
	wpkt_rel(&a, 0, 100);
	ck_assert(tb_service_poll(svc(f), 10));	/* no write, no overwrite */
	ck_assert_uint_eq(tb_ring_generation(&f->t[0].r), g1);
	ck_assert(tb_service_poll(svc(f), 1000));	/* the period is due */
	ck_assert_uint_eq(tb_ring_generation(&f->t[0].r), g1 + 1);
	ck_assert_uint_eq(tb_ring_generation(&f->t[1].r), g1 + 1);
	ck_assert_uint_eq(fx_stats(f).early_writes, 0);
	twriter_free(&a);
	fx_free(f);
}
END_TEST

/* Written once at the end (a flight recorder): the buffer wraps. */
START_TEST(test_service_bumps_the_generation_on_overwrites)
{
	struct fx *f = fx_new(2, 1024, 16, 4096);
	struct twriter a;
	uint32_t g0, g1;
	int i;

	tw_new(&a, f, 0, 1, 0);
	g1 = tb_ring_generation(&f->t[0].r);
	wpkt_rel(&a, 0, 100);
	ck_assert(tb_service_poll(svc(f), 10));	/* no overwrite yet */
	ck_assert_uint_eq(tb_ring_generation(&f->t[0].r), g1);
	for (i = 1; i < 60; i++) {		/* 4 KiB buffers overwrite */
		wpkt_rel(&a, (uint32_t)i, 300);
		ck_assert(tb_service_poll(svc(f), 20));
	}
	ck_assert(tb_service_poll(svc(f), 20));
	ck_assert_uint_gt(tb_buf_stats(f->buf[0])->chunks_overwritten, 0);
	g0 = tb_ring_generation(&f->t[0].r);
	ck_assert_uint_gt(g0, g1);
	/* at most one ask per quarter of the (4 KiB) buffer overwritten */
	ck_assert_uint_le(g0 - g1,
			  tb_buf_stats(f->buf[0])->bytes_overwritten / 1024);
	ck_assert_uint_eq(tb_ring_generation(&f->t[1].r), g0);
	ck_assert_uint_eq(fx_stats(f).generations, g0 - g1);
	ck_assert(tb_service_poll(svc(f), 20));	/* nothing new */
	ck_assert_uint_eq(tb_ring_generation(&f->t[0].r), g0);
	ck_assert_uint_eq(f->mo.len, 0);	/* nothing written out yet */
	twriter_free(&a);
	fx_free(f);
}
END_TEST

/*
 * Long trace with a buffer that holds less than a period: it is written
 * out as soon as half of it came in, even within one pass that brings a
 * backlog larger than the buffer, so nothing is overwritten and every
 * packet reaches the file.
 */
START_TEST(test_long_trace_writes_a_half_full_buffer_early)
{
	struct fx *f = fx_new(1, 1024, 32, 4096);
	struct twriter a;
	long n;
	int i;

	f->cfg.period_ms = 1000;
	tw_new(&a, f, 0, 1, 0);
	ck_assert(tb_service_poll(svc(f), 0));	/* the first write */
	for (i = 0; i < 40; i++) {		/* a chunk each */
		wpkt_rel(&a, (uint32_t)i, 300);
		ck_assert(tb_service_poll(svc(f), 10));
	}
	for (; i < 60; i++)			/* a backlog of 20 chunks */
		wpkt_rel(&a, (uint32_t)i, 300);
	ck_assert(tb_service_poll(svc(f), 20));
	ck_assert_uint_eq(tb_buf_stats(f->buf[0])->chunks_overwritten, 0);
	ck_assert_uint_gt(fx_stats(f).early_writes, 5);
	/* an early write started a new period: due only at 20 + 1000 */
	ck_assert(tb_service_poll(svc(f), 1019));
	ck_assert_int_lt(trace_for_each(f->mo.p, f->mo.len, NULL, NULL), 60);
	ck_assert(tb_service_poll(svc(f), 1020));
	n = trace_for_each(f->mo.p, f->mo.len, NULL, NULL);
	ck_assert_int_eq(n, 60);
	twriter_free(&a);
	fx_free(f);
}
END_TEST

START_TEST(test_service_stopped_ring_does_not_make_the_loop_spin)
{
	struct fx *f = fx_new(2, 256, 16, 65536);
	struct twriter bad;
	uint64_t sleeps;
	int i;

	fx_wait(f, 50);
	tw_new(&bad, f, 1, 9, 0);
	wpkt_rel(&bad, 0, 50);
	tset_word(&f->t[1], 0, 7u << 29 | 9u);
	ck_assert(tb_service_poll(svc(f), 0));
	ck_assert_uint_eq(f->nerr, 1);
	ck_assert_uint_eq(f->err_ring, 1);
	sleeps = fx_stats(f).sleeps;
	for (i = 0; i < 5; i++)
		ck_assert(tb_service_poll(svc(f), now_ms()));
	ck_assert_msg(fx_stats(f).sleeps - sleeps == 5,
		      "5 idle polls slept %llu times",
		      (unsigned long long)(fx_stats(f).sleeps - sleeps));
	ck_assert_uint_eq(f->nerr, 1);
	twriter_free(&bad);
	fx_free(f);
}
END_TEST

/*
 * Issue 11: a pass costs what the active rings bring, not how many rings
 * are served.  A ring with nothing new since its last drain (never
 * written, drained to the end, or stopped before a chunk its writer still
 * holds) is not drained again, which the service's drains counter shows,
 * until something moves there: a new reservation, or the held chunk's
 * word.
 */
START_TEST(test_service_pass_skips_rings_with_nothing_new)
{
	struct fx *f = fx_new(4, 256, 16, 1u << 20);
	struct twriter a, held, done, late;
	struct tb_span sp;
	uint64_t d0;
	uint32_t i;
	int n;

	f->cfg.out = NULL;
	fx_wait(f, 0);
	tw_new(&a, f, 0, 1, 0);		/* ring 0: the active one */
	tw_new(&late, f, 1, 2, 0);	/* ring 1: nothing yet */
	tw_new(&held, f, 2, 3, 0);	/* ring 2: a writer holds its chunk */
	wpkt_ok(&held, 0, 60);
	ck_assert_int_eq(tb_writer_open(&held.w, 16, 0, &sp), TB_OK);
	tw_new(&done, f, 3, 4, 0);	/* ring 3: drained, then nothing */
	wpkt_rel(&done, 0, 60);
	ck_assert(tb_service_poll(svc(f), 0));
	ck_assert(tb_service_poll(svc(f), 0));
	ck_assert_uint_eq(sbr(f, 3)->stat[TB_BS_CHUNKS], 1);
	ck_assert_uint_eq(sbr(f, 2)->stat[TB_BS_CHUNKS], 0);	/* lazy */
	d0 = fx_stats(f).drains;
	for (i = 0; i < 10; i++) {
		wpkt_rel(&a, i, 60);
		ck_assert(tb_service_poll(svc(f), 1 + i));
	}
	ck_assert_uint_eq(sbr(f, 0)->stat[TB_BS_CHUNKS], 10);
	ck_assert_uint_eq(fx_stats(f).drains - d0, 10);	/* ring 0's only */
	/* the held chunk handed over: its word changed, it is drained */
	ck_assert_int_eq(tb_writer_close(&held.w, 0, 0), TB_OK);
	ck_assert_int_eq(tb_writer_release(&held.w), TB_OK);
	ck_assert(tb_service_poll(svc(f), 20));
	ck_assert_uint_eq(fx_stats(f).drains - d0, 11);
	ck_assert_uint_eq(sbr(f, 2)->stat[TB_BS_CHUNKS], 1);
	/* a first write to a quiet ring: a new reservation */
	wpkt_rel(&late, 0, 60);
	ck_assert(tb_service_poll(svc(f), 21));
	ck_assert_uint_eq(fx_stats(f).drains - d0, 12);
	ck_assert_uint_eq(sbr(f, 1)->stat[TB_BS_CHUNKS], 1);
	n = read_buf(f->buf[0], g, 100);
	ck_assert_int_eq(n, 13);
	/* quiet rings still flush: the flush drains every ring */
	ck_assert(tb_service_poll(svc(f), 22));
	d0 = fx_stats(f).drains;
	tb_service_request_flush(svc(f));
	ck_assert(tb_service_poll(svc(f), 23));
	ck_assert_uint_ge(fx_stats(f).drains - d0, 4);
	twriter_free(&a);
	twriter_free(&late);
	twriter_free(&held);
	twriter_free(&done);
	fx_free(f);
}
END_TEST

/*
 * While some rings keep the service busy, a pass looks at those only (the
 * active list), not at the idle ones; a ring that gets work meanwhile is
 * found by the next sweep: a millisecond later at most, or as soon as the
 * busy rings run dry.
 */
START_TEST(test_service_pass_looks_only_at_active_rings)
{
	struct fx *f = fx_new(4, 256, 16, 1u << 20);
	struct twriter a, b;
	struct tb_span sp;
	uint64_t l0, s0;
	uint32_t i;

	f->cfg.out = NULL;
	fx_wait(f, 0);
	tw_new(&a, f, 0, 1, 0);		/* ring 0: busy */
	tw_new(&b, f, 1, 2, 0);		/* ring 1: idle, then busy */
	wpkt_rel(&a, 0, 60);
	ck_assert(tb_service_poll(svc(f), 5));	/* the first pass sweeps */
	ck_assert_uint_eq(sbr(f, 0)->stat[TB_BS_CHUNKS], 1);
	l0 = fx_stats(f).looks;
	s0 = fx_stats(f).sweeps;
	for (i = 1; i <= 10; i++) {	/* the same millisecond */
		wpkt_rel(&a, i, 60);
		ck_assert(tb_service_poll(svc(f), 5));
	}
	ck_assert_uint_eq(sbr(f, 0)->stat[TB_BS_CHUNKS], 11);
	ck_assert_uint_eq(fx_stats(f).sweeps, s0);
	ck_assert_uint_eq(fx_stats(f).looks - l0, 10);	/* ring 0 only */
	/* ring 1 gets work while ring 0 stays busy: the next ms finds it */
	wpkt_rel(&b, 0, 60);
	wpkt_rel(&a, 11, 60);
	ck_assert(tb_service_poll(svc(f), 5));
	ck_assert_uint_eq(sbr(f, 1)->stat[TB_BS_CHUNKS], 0);
	wpkt_rel(&a, 12, 60);
	ck_assert(tb_service_poll(svc(f), 6));
	ck_assert_uint_eq(sbr(f, 1)->stat[TB_BS_CHUNKS], 1);
	ck_assert_uint_eq(fx_stats(f).sweeps, s0 + 1);
	/* both on the list now; when they run dry, a pass sweeps */
	wpkt_rel(&b, 1, 60);
	ck_assert(tb_service_poll(svc(f), 6));
	ck_assert_uint_eq(sbr(f, 1)->stat[TB_BS_CHUNKS], 2);
	ck_assert_uint_eq(sbr(f, 0)->stat[TB_BS_CHUNKS], 13);
	wpkt_rel(&b, 2, 60);		/* the list is [1] only now */
	ck_assert(tb_service_poll(svc(f), 6));
	ck_assert_uint_eq(sbr(f, 1)->stat[TB_BS_CHUNKS], 3);
	wpkt_rel(&a, 13, 60);		/* ring 0 off the list: a dry pass */
	s0 = fx_stats(f).sweeps;
	ck_assert(tb_service_poll(svc(f), 6));
	ck_assert_uint_eq(fx_stats(f).sweeps, s0 + 1);
	ck_assert_uint_eq(sbr(f, 0)->stat[TB_BS_CHUNKS], 14);
	/*
	 * A writer that keeps adding to the chunk it holds brings a lazy
	 * drain nothing, so its ring is quiet (tb_reader_quiet()): it
	 * leaves the list, and the dry pass sweeps and finds the other
	 * ring's work within the millisecond.  (Keeping it on the list
	 * kept the service from sleeping while that writer wrote.)
	 */
	ck_assert_int_eq(tb_writer_open(&a.w, 16, 0, &sp), TB_OK);
	ck_assert(tb_service_poll(svc(f), 7));	/* a new ms: sweeps */
	s0 = fx_stats(f).sweeps;
	l0 = fx_stats(f).looks;
	wpkt_rel(&b, 3, 60);
	ck_assert_int_eq(tb_writer_close(&a.w, 8, 0), TB_OK);
	ck_assert_int_eq(tb_writer_open(&a.w, 16, 0, &sp), TB_OK);
	ck_assert(tb_service_poll(svc(f), 7));	/* the word moved, held */
	ck_assert_uint_eq(fx_stats(f).sweeps, s0 + 1);
	ck_assert_uint_eq(fx_stats(f).looks - l0, 1 + 4);	/* list, sweep */
	ck_assert_uint_eq(sbr(f, 1)->stat[TB_BS_CHUNKS], 4);
	ck_assert_uint_eq(sbr(f, 0)->stat[TB_BS_CHUNKS], 14);	/* held */
	ck_assert_int_eq(tb_writer_close(&a.w, 8, 0), TB_OK);
	twriter_free(&a);
	twriter_free(&b);
	fx_free(f);
}
END_TEST

/* ------------------------------------------------------------------------
 * Suites
 */
static Suite *bridge_suite(void)
{
	Suite *s = suite_create("tbservice_bridge");
	TCase *t = tcase_create("bridge");

	tcase_set_timeout(t, 60);	/* catches a hang, not slowness */
	tcase_add_test(t,
		test_bridge_chunk_ids_start_at_zero_consecutive_per_writer);
	tcase_add_test(t, test_bridge_chunk_ids_are_per_writer_and_buffer_id);
	tcase_add_test(t, test_bridge_packet_spanning_chunks_is_reassembled);
	tcase_add_test(t,
		test_bridge_recorded_loss_reads_as_smb_full_on_next_packet);
	tcase_add_loop_test(t,
		test_bridge_unusable_chunk_reads_as_loss_on_next_packet, 0, 2);
	tcase_add_test(t,
		test_bridge_packet_dropped_on_full_ring_reads_as_smb_full);
	tcase_add_test(t, test_bridge_counts_each_refusal_by_its_reason);
	tcase_add_test(t,
		test_bridge_key_table_without_memory_is_counted_as_such);
	tcase_add_test(t, test_bridge_unknown_buffer_id_is_counted_and_dropped);
	tcase_add_test(t, test_bridge_two_buffer_ids_route_to_two_buffers);
	tcase_add_test(t,
		test_bridge_scraped_prefix_arrives_once_and_suffix_after_it);
	tcase_add_test(t,
		test_bridge_scraped_prefix_unread_keeps_order_with_suffix);
	tcase_add_test(t, test_bridge_protocol_error_is_returned_and_latched);
	tcase_add_test(t,
		test_bridge_chunk_ids_consecutive_for_highest_writer_and_bid);
	tcase_add_test(t, test_bridge_quiet_and_idle_follow_the_ring);
	tcase_add_test(t, test_bridge_config_is_checked);
	suite_add_tcase(s, t);
	return s;
}

static Suite *trace_suite(void)
{
	Suite *s = suite_create("tbservice_trace");
	TCase *t = tcase_create("trace");

	tcase_add_test(t, test_trace_packets_are_framed_as_trace_field_one);
	tcase_add_test(t, test_trace_trusted_fields_follow_the_producer_bytes);
	tcase_add_test(t,
		test_trace_sequence_id_is_unique_per_producer_and_writer);
	tcase_add_test(t,
		test_trace_sequence_id_of_producer_zero_is_not_reserved);
	tcase_add_test(t, test_trace_negative_pid_is_sign_extended);
	tcase_add_test(t,
		test_trace_previous_packet_dropped_only_with_loss_bits);
	tcase_add_test(t,
		test_trace_forged_trusted_fields_never_reach_the_trace);
	tcase_add_test(t,
		test_trace_loss_of_a_dropped_invalid_packet_is_not_lost);
	tcase_add_test(t,
		test_trace_open_producer_field_cannot_hide_trusted_fields);
	tcase_add_test(t,
		test_trace_malformed_producer_packet_keeps_the_trace_valid);
	tcase_add_test(t,
		test_trace_multi_slice_packet_is_written_contiguously);
	tcase_add_test(t, test_trace_field_number_out_of_range_is_invalid);
	tcase_add_loop_test(t, test_trace_packet_ending_inside_a_key_is_invalid,
			    0, 3);
	tcase_add_test(t, test_trace_failed_write_latches_an_error);
	tcase_add_test(t, test_trace_writev_output_is_the_plain_outputs_bytes);
	tcase_add_loop_test(t,
		test_trace_writev_short_writes_and_eintr_are_resumed, 0, 4);
	tcase_add_test(t, test_trace_writev_failure_is_latched_and_reported);
	tcase_add_test(t, test_trace_writev_that_never_progresses_fails);
	tcase_add_test(t, test_trace_validity_does_not_depend_on_slicing);
	suite_add_tcase(s, t);
	return s;
}

static Suite *service_suite(void)
{
	Suite *s = suite_create("tbservice_loop");
	TCase *t = tcase_create("loop");

	tcase_set_timeout(t, 60);	/* catches a hang, not slowness */
	tcase_add_test(t, test_service_drains_lazily);
	tcase_add_test(t, test_service_poll_that_found_work_does_not_sleep);
	tcase_add_test(t, test_service_idle_poll_sleeps_on_the_bell);
	tcase_add_test(t, test_service_wakes_when_a_writer_hands_over_a_chunk);
	tcase_add_test(t,
		test_service_wakes_on_flush_request_from_another_thread);
	tcase_add_test(t, test_service_wakes_on_stop_from_another_thread);
	tcase_add_test(t,
		test_service_wake_from_another_thread_ends_the_sleep);
	tcase_add_test(t, test_service_flush_request_scrapes_held_chunks);
	tcase_add_test(t, test_service_stop_flushes_and_writes_every_buffer);
	tcase_add_test(t, test_service_stop_flushes_a_full_ring_of_any_size);
	tcase_add_test(t, test_service_ring_loss_reaches_the_trace);
	tcase_add_test(t, test_service_trace_shows_what_each_ring_lost);
	tcase_add_test(t, test_service_long_trace_outlives_a_small_buffer);
	tcase_add_test(t,
		test_service_long_trace_writes_when_the_period_is_due);
	tcase_add_test(t,
		test_service_long_trace_write_is_not_held_back_by_sleep);
	tcase_add_test(t,
		test_service_ring_protocol_error_stops_only_that_ring);
	tcase_add_test(t,
		test_service_stopped_ring_does_not_make_the_loop_spin);
	tcase_add_test(t, test_service_handles_stay_put_when_another_ring_goes);
	tcase_add_test(t, test_service_init_rejects_a_bad_configuration);
	tcase_add_test(t, test_service_bumps_the_generation_on_writes);
	tcase_add_test(t, test_service_bumps_the_generation_on_overwrites);
	tcase_add_test(t, test_long_trace_writes_a_half_full_buffer_early);
	tcase_add_test(t,
		test_service_retires_a_ring_whose_every_chunk_is_pinned);
	tcase_add_test(t, test_service_keeps_a_ring_pinned_by_slow_writers);
	tcase_add_test(t, test_service_pass_skips_rings_with_nothing_new);
	tcase_add_test(t, test_service_pass_looks_only_at_active_rings);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(bridge_suite());
	int failed;

	srunner_add_suite(sr, trace_suite());
	srunner_add_suite(sr, service_suite());
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
