/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_tblink.c - a ring's trace taken off a target two ways:
 *
 *   - the byte link (tblink.h) and `tbtrace stream`: frames round-trip
 *     through COBS, CRC and the parser, fed whole or a byte at a time; a
 *     stream of a real ring (two writers, packets split across chunks)
 *     becomes a trace holding exactly its packets; a stream that starts
 *     mid-frame, loses bytes, has bytes flipped or ends early gives a
 *     trace whose every packet is one the writer wrote, whole, in order,
 *     and whose every gap is flagged on the packet after it, with the
 *     loss counted;
 *   - `tbtrace convert` on a RAM dump: the ring found at any aligned
 *     offset of a larger image (or the one -O names), and the complete
 *     chunks of a dump cut in the middle of the ring salvaged, with what
 *     is missing counted.
 *
 * The stream side runs in process (tools/tbtrace.c included, as the
 * fuzzers do); the command lines are run as a user would, from
 * $TB_BUILD_DIR (spawn_helpers.h).
 */
#define TB_PROTOCOL_STEPS 1
#define TBTRACE_NO_MAIN 1
#include <check.h>
#include <ftw.h>
#include <sys/wait.h>

#include "../tools/tbtrace.c"
#include "tbevent.h"
#include "ring_helpers.h"
#include "spawn_helpers.h"

#define NW		2	/* writers 1 and 2 */
#define NPKT		241	/* packets each writer writes */
#define PRODUCER	1

static char tmp_root[256];

/* ------------------------------------------------------------------------
 * Bytes in memory.
 */
struct bytes {
	uint8_t *p;
	size_t n, cap;
};

static void bytes_put(void *ctx, const uint8_t *p, size_t n)
{
	struct bytes *b = (struct bytes *)ctx;

	if (b->cap - b->n < n) {
		b->cap = (b->cap + n) * 2;
		b->p = (uint8_t *)realloc(b->p, b->cap);
		ck_assert_ptr_nonnull(b->p);
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

/* ------------------------------------------------------------------------
 * The packets: writer @w's packet @i, a valid TracePacket that the
 * checker accepts (a thread track descriptor first, then BEGIN/END
 * pairs), every one unique, some long enough to be split over chunks.
 */
#define TP_TIMESTAMP	8
#define TP_TRACK_EVENT	11
#define TP_FLAGS	13
#define TP_TRACK_DESC	60

struct pkt {
	uint8_t b[1600];
	size_t n;
};

static void p_uint(struct pkt *p, uint32_t f, uint64_t v)
{
	p->n += tb_pb_uint(p->b + p->n, f, v);
}

static void p_bytes(struct pkt *p, uint32_t f, const void *d, size_t n)
{
	ck_assert_uint_lt(p->n + n + 16, sizeof(p->b));
	p->n += tb_pb_len(p->b + p->n, f, n);
	memcpy(p->b + p->n, d, n);
	p->n += n;
}

static void mk_packet(struct pkt *p, uint16_t w, unsigned i)
{
	struct pkt ev = { { 0 }, 0 }, da = { { 0 }, 0 }, x = { { 0 }, 0 };
	static char fill[900];
	size_t pad = i % 7 == 3 ? 300 + (i * 37 + w * 11) % 600 : i % 5;

	p->n = 0;
	if (!i) {
		p_uint(&x, 1, 4242);
		p_uint(&x, 2, w);
		p_uint(&ev, 1, 1000 + w);	/* uuid */
		p_bytes(&ev, 4, x.b, x.n);	/* thread */
		p_uint(p, TP_TIMESTAMP, 1);
		p_uint(p, TP_FLAGS, 1);		/* incremental state cleared */
		p_bytes(p, TP_TRACK_DESC, ev.b, ev.n);
		return;
	}
	memset(fill, 'a' + w, sizeof(fill));
	p_uint(&ev, 9, i % 2 ? 1 : 2);		/* BEGIN, END */
	p_uint(&ev, 11, 1000 + w);		/* track */
	if (i % 2)
		p_bytes(&ev, 23, "work", 4);	/* name */
	if (pad) {
		p_bytes(&da, 10, "pad", 3);
		p_bytes(&da, 6, fill, pad);
		p_bytes(&ev, 4, da.b, da.n);
	}
	p_uint(p, TP_TIMESTAMP, 10u * i + w);
	p_bytes(p, TP_TRACK_EVENT, ev.b, ev.n);
}

/* ------------------------------------------------------------------------
 * A target: a ring of 8 x 512 B chunks, two writers, its own reader
 * streaming the chunks through tblink.h when "idle".
 */
struct target {
	struct tring t;
	struct twriter w[NW];
	struct treader rd;
	struct tb_link_tx tx;
	struct bytes out;
	bool ok[NW][NPKT];	/* written: the ring took it */
};

static void drain(struct target *g, enum tb_read_mode mode)
{
	while (tb_reader_drain(&g->rd.rd, 64, mode, tb_link_chunk_fn, &g->tx,
			       NULL) == TB_LIMIT)
		;
}

static void target_run(struct target *g)
{
	struct pkt p;
	unsigned i, k;

	memset(g, 0, sizeof(*g));
	tring_new(&g->t, 512, 8);
	for (k = 0; k < NW; k++)
		twriter_new(&g->w[k], &g->t, (uint16_t)(k + 1), 0, TB_DROP);
	treader_new(&g->rd, &g->t);
	ck_assert_int_eq(tb_link_tx_init(&g->tx, bytes_put, &g->out), TB_OK);
	tb_link_tx_set_boot(&g->tx, 0x5eed);
	tb_link_tx_hello(&g->tx, &g->t.r);
	for (i = 0; i < NPKT; i++) {
		for (k = 0; k < NW; k++) {
			mk_packet(&p, (uint16_t)(k + 1), i);
			g->ok[k][i] = tb_writer_write_packet(&g->w[k].w, p.b,
						(uint32_t)p.n) == TB_OK;
			ck_assert(g->ok[k][i]);
		}
		if (i % 3 == 2)
			drain(g, TB_READ_LAZY);
		if (i % 40 == 39)
			tb_link_tx_stats(&g->tx, &g->t.r);
	}
	for (k = 0; k < NW; k++)
		tb_writer_release(&g->w[k].w);
	drain(g, TB_READ_SCRAPE);
	tb_link_tx_stats(&g->tx, &g->t.r);
	tb_link_tx_end(&g->tx);
}

static void target_free(struct target *g)
{
	unsigned k;

	for (k = 0; k < NW; k++)
		twriter_free(&g->w[k]);
	treader_free(&g->rd);
	tring_free(&g->t);
	free(g->out.p);
}

/* ------------------------------------------------------------------------
 * What a trace holds, checked against what the writers wrote.
 */
struct verdict {
	unsigned delivered[NW];
	unsigned first[NW], last[NW];	/* indices, NPKT: none */
	unsigned gaps[NW];		/* runs of packets missing */
	unsigned flagged;		/* packets with previous_packet_dropped */
};

/*
 * Every packet of writers 1..NW in @trace is one the writer wrote, byte
 * for byte and nothing glued to it (only the service's trusted fields
 * follow), each at most once and in the order written; a packet that
 * follows missing ones carries previous_packet_dropped.  Other packets
 * (the service's own) are skipped.
 */
static void verify(const uint8_t *trace, size_t len, struct verdict *v,
		   bool (*ok)[NPKT])
{
	struct tb_pb_reader r, rest;
	struct tb_trace_packet tp;
	struct tb_pb_field f;
	int next[NW] = { 0 }, ret;
	unsigned w, k;
	struct pkt p;

	memset(v, 0, sizeof(*v));
	for (w = 0; w < NW; w++)
		v->first[w] = v->last[w] = NPKT;
	tb_pb_reader_init(&r, trace, len);
	while ((ret = tb_trace_next(&r, &tp)) > 0) {
		if (tp.trusted_seq_id >> 16 != PRODUCER ||
		    (tp.trusted_seq_id & 0xffff) < 1 ||
		    (tp.trusted_seq_id & 0xffff) > NW)
			continue;
		w = (unsigned)(tp.trusted_seq_id & 0xffff) - 1;
		for (k = (unsigned)next[w]; k < NPKT; k++) {
			mk_packet(&p, (uint16_t)(w + 1), k);
			if (tp.size >= p.n && !memcmp(tp.data, p.b, p.n))
				break;
		}
		ck_assert_msg(k < NPKT, "writer %u: a packet of %zu bytes "
			      "after its packet %d is none it wrote next",
			      w + 1, tp.size, next[w] - 1);
		ck_assert(!ok || ok[w][k]);
		/* nothing but the trusted fields after the packet */
		tb_pb_reader_init(&rest, tp.data + p.n, tp.size - p.n);
		while ((ret = tb_pb_next(&rest, &f)) > 0)
			ck_assert_msg(f.number == TB_PB_TRUSTED_UID ||
				      f.number == TB_PB_TRUSTED_SEQ_ID ||
				      f.number == TB_PB_TRUSTED_PID ||
				      f.number == TB_PB_PREVIOUS_DROPPED,
				      "writer %u packet %u: field %u glued "
				      "after it", w + 1, k, f.number);
		ck_assert_int_eq(ret, 0);
		if (tp.dropped)
			v->flagged++;
		if (k != (unsigned)next[w]) {
			v->gaps[w]++;
			ck_assert_msg(tp.dropped, "writer %u: packets %d..%u "
				      "missing, packet %u not flagged", w + 1,
				      next[w], k - 1, k);
		}
		if (v->first[w] == NPKT)
			v->first[w] = k;
		v->last[w] = k;
		v->delivered[w]++;
		next[w] = (int)k + 1;
	}
	ck_assert_int_eq(ret, 0);
}

/* `tbtrace stream` in process; the trace in @m, the exit status. */
static int stream(const uint8_t *p, size_t n, struct tbt_mem *m,
		  struct tbt_stream_result *res, FILE *report)
{
	struct tbt_stream_opts o;
	struct tb_trace_out out;

	memset(&o, 0, sizeof(o));
	o.producer = PRODUCER;
	memset(m, 0, sizeof(*m));
	memset(&out, 0, sizeof(out));
	out.write = tbt_mem_write;
	out.ctx = m;
	return tbt_stream_image(p, n, &o, &out, report, res);
}

/* The report of a stream, kept in memory for matching. */
static char *report;
static size_t report_len;

static FILE *report_open(void)
{
	FILE *f;

	free(report);
	report = NULL;
	f = open_memstream(&report, &report_len);
	ck_assert_ptr_nonnull(f);
	return f;
}

#define ck_assert_report(s)						\
	ck_assert_msg(strstr(report, (s)) != NULL,			\
		      "no \"%s\" in the report:\n%s", (s), report)

/* ------------------------------------------------------------------------
 * The header: CRC, COBS, the parser, the receiver's counts.
 */
static struct tb_link_rx rx;
static unsigned nframes;
static struct tb_link_frame last;
static uint8_t last_body[TB_LINK_FRAME_MAX];

static void frame_fn(void *ctx, const struct tb_link_frame *f)
{
	(void)ctx;
	nframes++;
	last = *f;
	memcpy(last_body, f->body, f->len);
}

START_TEST(test_crc32_is_the_zlib_one)
{
	ck_assert_uint_eq(tb_link_crc32("123456789", 9), 0xcbf43926u);
	ck_assert_uint_eq(tb_link_crc32("", 0), 0);
}
END_TEST

/* A view of @n fragments over a payload with zeros and long runs. */
static void one_view(struct bytes *b, const uint8_t *payload,
		     const uint16_t *sizes, unsigned n)
{
	struct tb_chunk_view v;
	struct tb_link_tx tx;

	memset(&v, 0, sizeof(v));
	v.pos = 77;
	v.writer = 9;
	v.bid = 3;
	v.flags = TB_F_CONT_NEXT | TB_F_DATA_LOSS;
	v.nfrags = n;
	v.sizes = sizes;
	v.payload = payload;
	ck_assert_int_eq(tb_link_tx_init(&tx, bytes_put, b), TB_OK);
	tb_link_tx_view(&tx, &v);
}

START_TEST(test_frames_round_trip_whole_and_byte_by_byte)
{
	static uint8_t payload[32760];
	uint16_t sizes[3] = { 254, 255, 32000 };
	struct bytes b = { NULL, 0, 0 };
	size_t i, zeros = 0;

	for (i = 0; i < sizeof(payload); i++)	/* runs of 254, 255, zeros */
		payload[i] = i < 509 ? 0xaa : i % 1000 < 3 ? 0 : (uint8_t)i;
	one_view(&b, payload, sizes, 3);
	for (i = 0; i < b.n; i++)
		zeros += !b.p[i];
	ck_assert_uint_eq(zeros, 1);		/* the delimiter only */
	ck_assert_uint_eq(b.p[b.n - 1], 0);
	for (unsigned pass = 0; pass < 2; pass++) {
		tb_link_rx_init(&rx);
		nframes = 0;
		if (pass)
			for (i = 0; i < b.n; i++)
				tb_link_rx_feed(&rx, b.p + i, 1, frame_fn,
						NULL);
		else
			tb_link_rx_feed(&rx, b.p, b.n, frame_fn, NULL);
		tb_link_rx_finish(&rx);
		ck_assert_uint_eq(nframes, 1);
		ck_assert_uint_eq(last.type, TB_LINK_CHUNK);
		ck_assert_uint_eq(last.view.pos, 77);
		ck_assert_uint_eq(last.view.writer, 9);
		ck_assert_uint_eq(last.view.bid, 3);
		ck_assert_uint_eq(last.view.flags,
				  TB_F_CONT_NEXT | TB_F_DATA_LOSS);
		ck_assert_uint_eq(last.view.nfrags, 3);
		ck_assert_uint_eq(last.len, 12 + 6 + 254 + 255 + 32000);
		ck_assert_mem_eq(last_body + 18, payload, 254 + 255 + 32000);
		ck_assert_uint_eq(rx.stat[TB_LR_SKIPPED], 0);
		ck_assert_uint_eq(rx.stat[TB_LR_PARTIAL_START], 0);
		ck_assert_uint_eq(rx.stat[TB_LR_TRUNCATED], 0);
	}
	free(b.p);
}
END_TEST

/* Every single-byte flip of a frame is caught; nothing else comes out. */
START_TEST(test_every_flipped_byte_is_caught)
{
	uint8_t payload[300];
	uint16_t sizes[2] = { 100, 200 };
	struct bytes b = { NULL, 0, 0 };
	size_t i;
	unsigned bit;

	for (i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7);
	one_view(&b, payload, sizes, 2);
	for (i = 0; i + 1 < b.n; i++) {
		for (bit = 0; bit < 8; bit++) {
			b.p[i] ^= (uint8_t)(1u << bit);
			tb_link_rx_init(&rx);
			nframes = 0;
			tb_link_rx_feed(&rx, "\0", 1, frame_fn, NULL);
			tb_link_rx_feed(&rx, b.p, b.n, frame_fn, NULL);
			tb_link_rx_finish(&rx);
			ck_assert_msg(nframes == 0, "byte %zu bit %u: a frame "
				      "came out", i, bit);
			ck_assert_uint_ge(rx.stat[TB_LR_BAD_CRC] +
					  rx.stat[TB_LR_MALFORMED], 1);
			b.p[i] ^= (uint8_t)(1u << bit);
		}
	}
	free(b.p);
}
END_TEST

/* Longer than any frame: skipped, counted, nothing written past buf. */
START_TEST(test_an_endless_frame_is_skipped)
{
	static uint8_t junk[3 * TB_LINK_FRAME_MAX];

	memset(junk, 0x41, sizeof(junk));
	tb_link_rx_init(&rx);
	nframes = 0;
	tb_link_rx_feed(&rx, "\0", 1, frame_fn, NULL);
	tb_link_rx_feed(&rx, junk, sizeof(junk), frame_fn, NULL);
	tb_link_rx_feed(&rx, "\0", 1, frame_fn, NULL);
	ck_assert_uint_eq(nframes, 0);
	ck_assert_uint_eq(rx.stat[TB_LR_MALFORMED], 1);
	ck_assert_uint_eq(rx.stat[TB_LR_SKIPPED], sizeof(junk) + 1);
}
END_TEST

/* Frames lost between good ones, a restarted sender, a cut end. */
START_TEST(test_sequence_gaps_restarts_and_a_cut_end_are_counted)
{
	struct bytes b = { NULL, 0, 0 };
	struct tb_link_tx tx;
	struct tring t;
	size_t cut[4];
	unsigned i;

	tring_new(&t, 256, 2);
	tb_link_tx_init(&tx, bytes_put, &b);
	tb_link_tx_set_boot(&tx, 1);
	tb_link_tx_hello(&tx, &t.r);			/* seq 0 */
	for (i = 0; i < 4; i++) {			/* seq 1..4 */
		cut[i] = b.n;
		tb_link_tx_end(&tx);
	}
	tb_link_tx_init(&tx, bytes_put, &b);		/* a reboot */
	tb_link_tx_set_boot(&tx, 2);
	tb_link_tx_hello(&tx, &t.r);			/* seq 0 */
	tb_link_tx_stats(&tx, &t.r);			/* seq 1 */
	tb_link_rx_init(&rx);
	nframes = 0;
	/* seq 0, 1, then 4 (2 and 3 lost), then the new boot */
	tb_link_rx_feed(&rx, b.p, cut[1], frame_fn, NULL);
	tb_link_rx_feed(&rx, b.p + cut[3], b.n - cut[3] - 3, frame_fn, NULL);
	tb_link_rx_finish(&rx);
	ck_assert_uint_eq(nframes, 4);
	ck_assert_uint_eq(rx.stat[TB_LR_LOST], 2);
	ck_assert_uint_eq(rx.stat[TB_LR_RESTARTS], 1);
	ck_assert_uint_eq(rx.stat[TB_LR_TRUNCATED], 1);	/* STATS cut */
	ck_assert_uint_eq(last.type, TB_LINK_HELLO);
	ck_assert_uint_eq(last.hello.boot, 2);
	ck_assert(last.restart);
	ck_assert_uint_eq(last.hello.chunk_size, 256);
	ck_assert_uint_eq(last.hello.num_chunks, 2);
	tring_free(&t);
	free(b.p);
}
END_TEST

/* ------------------------------------------------------------------------
 * tbtrace stream.
 */
START_TEST(test_stream_round_trip_keeps_every_packet)
{
	struct tbt_stream_result res;
	struct target g;
	struct verdict v;
	struct tbt_mem m;
	FILE *f = report_open();
	unsigned w;
	int st;

	target_run(&g);
	st = stream(g.out.p, g.out.n, &m, &res, f);
	fclose(f);
	ck_assert_msg(st == 0, "exit %d:\n%s", st, report);
	verify(m.p, m.len, &v, g.ok);
	for (w = 0; w < NW; w++)
		ck_assert_uint_eq(v.delivered[w], NPKT);
	ck_assert_uint_eq(v.flagged, 0);
	ck_assert_report("lost      nothing");
	ck_assert_report("0 frames lost by sequence gap");
	free(m.p);
	target_free(&g);
}
END_TEST

/*
 * Runs a damaged stream; every packet that comes out is right, every gap
 * flagged, the loss reported (exit 1), and at least @min_tail of each
 * writer's last packets are there.
 */
static void damaged(const uint8_t *p, size_t n, struct verdict *v,
		    bool (*ok)[NPKT], unsigned min_tail)
{
	struct tbt_stream_result res;
	struct tbt_mem m;
	FILE *f = report_open();
	unsigned w;
	int st;

	st = stream(p, n, &m, &res, f);
	fclose(f);
	ck_assert_msg(st == 1, "exit %d:\n%s", st, report);
	ck_assert_report("lost      yes");
	verify(m.p, m.len, v, ok);
	for (w = 0; w < NW; w++) {
		if (!ok[w][0])
			continue;	/* a writer that wrote nothing */
		ck_assert_uint_gt(v->delivered[w], 0);
		if (min_tail)
			ck_assert_msg(v->last[w] == NPKT - 1 &&
				      v->delivered[w] >= min_tail,
				      "writer %u: %u delivered, last %u:\n%s",
				      w + 1, v->delivered[w], v->last[w],
				      report);
	}
	free(m.p);
}

START_TEST(test_stream_starting_mid_frame)
{
	struct target g;
	struct verdict v;
	size_t at;
	unsigned w;

	target_run(&g);
	at = g.out.n / 3;
	while (!g.out.p[at - 1] || !g.out.p[at])	/* inside a frame */
		at++;
	damaged(g.out.p + at, g.out.n - at, &v, g.ok, NPKT / 2);
	ck_assert_report("started in the middle of a frame");
	for (w = 0; w < NW; w++) {
		ck_assert_uint_gt(v.first[w], 0);
		/* what came before the first frame read is lost: flagged */
		ck_assert_uint_ge(v.flagged, NW);
	}
	target_free(&g);
}
END_TEST

START_TEST(test_stream_losing_bytes)
{
	struct target g;
	struct verdict v;
	size_t at, n;
	unsigned w, gaps = 0;

	target_run(&g);
	for (n = 1; n < 1200; n += 397) {	/* a byte, a few frames */
		at = g.out.n / 2;
		memmove(g.out.p + at, g.out.p + at + n, g.out.n - at - n);
		damaged(g.out.p, g.out.n - n, &v, g.ok, NPKT / 3);
		for (w = 0, gaps = 0; w < NW; w++)
			gaps += v.gaps[w];
		ck_assert_uint_ge(gaps, 1);
		ck_assert_uint_eq(v.first[0], 0);
		ck_assert_report("frames lost by sequence gap");
		ck_assert_msg(!strstr(report, " 0 frames lost by sequence"),
			      "%s", report);
		/* the same bytes again for the next round */
		target_free(&g);
		target_run(&g);
	}
	target_free(&g);
}
END_TEST

START_TEST(test_stream_with_bytes_flipped)
{
	struct target g;
	struct verdict v;
	size_t at;
	unsigned k;

	target_run(&g);
	for (k = 1; k <= 5; k++) {		/* five frames hit */
		at = g.out.n * k / 7;
		g.out.p[at] ^= 0x10;
	}
	damaged(g.out.p, g.out.n, &v, g.ok, NPKT / 3);
	ck_assert_msg(!strstr(report, " 0 frames with a bad CRC"), "%s",
		      report);
	target_free(&g);
}
END_TEST

START_TEST(test_stream_ended_early)
{
	struct target g;
	struct verdict v;
	size_t at;
	unsigned w;

	target_run(&g);
	at = g.out.n * 2 / 3;
	while (!g.out.p[at - 1])
		at++;
	damaged(g.out.p, at, &v, g.ok, 0);
	ck_assert_report("ended in the middle of a frame");
	for (w = 0; w < NW; w++) {
		ck_assert_uint_eq(v.first[w], 0);
		ck_assert_uint_eq(v.gaps[w], 0);	/* a prefix */
		ck_assert_uint_gt(v.delivered[w], NPKT / 2);
		ck_assert_uint_lt(v.delivered[w], NPKT);
	}
	target_free(&g);
}
END_TEST

/* ------------------------------------------------------------------------
 * Event writers over the link: incremental state, and what a lossy link
 * costs of it (tbt_stream.c's restate, tb_link_tx_restate()).
 */
#define EV_N		600	/* slices each event writer writes */

static uint64_t ev_time;

static uint64_t ev_now(void *ctx)
{
	(void)ctx;
	return ev_time += 1000;
}

static const struct tb_ev_clock ev_clock = {
	ev_now, NULL, TB_CLOCK_BOOTTIME, TB_CLOCK_BOOTTIME, NULL
};

TB_CATEGORY_DEFINE(ev_cat, "link", 1);

static const char *const ev_names[] = {
	"read", "parse", "send", "wait", "flush", "idle",
};

/*
 * A target of two event writers (interned names and annotation names;
 * writer 2 with TracePacketDefaults) streaming its ring through tblink.h;
 * with @restate, tb_link_tx_restate() every @restate frames.
 */
struct evtarget {
	struct target g;	/* its ring, writers, reader, link */
	struct tb_track proc, thr[NW];
	struct tb_ev_writer ev[NW];
};

static void evtarget_run(struct evtarget *e, uint32_t restate)
{
	struct target *g = &e->g;
	struct tb_arg a;
	unsigned i, k;

	memset(e, 0, sizeof(*e));
	ev_time = 0;
	tring_new(&g->t, 512, 8);
	tb_track_process(&e->proc, tb_ev_uuid(7, 0), 7, "target");
	for (k = 0; k < NW; k++) {
		twriter_new(&g->w[k], &g->t, (uint16_t)(k + 1), 0, TB_DROP);
		tb_track_thread(&e->thr[k], tb_ev_uuid(7, k + 1), &e->proc, 7,
				(int32_t)k + 1, "worker");
		ck_assert_int_eq(tb_ev_writer_init(&e->ev[k], &g->w[k].w,
						   &e->thr[k], &ev_clock,
						   k ? TB_EV_DEFAULTS : 0),
				 TB_OK);
	}
	treader_new(&g->rd, &g->t);
	ck_assert_int_eq(tb_link_tx_init(&g->tx, bytes_put, &g->out), TB_OK);
	tb_link_tx_hello(&g->tx, &g->t.r);
	for (i = 0; i < EV_N; i++) {
		for (k = 0; k < NW; k++) {
			a = tb_arg_uint("i", i);
			ck_assert_int_eq(tb_ev_begin(&e->ev[k], &ev_cat,
					 ev_names[(i + k) % 6], &a, 1), TB_OK);
			ck_assert_int_eq(tb_ev_end(&e->ev[k], &ev_cat, NULL,
						   0), TB_OK);
		}
		if (i % 4 == 3) {
			drain(g, TB_READ_LAZY);
			if (restate)
				tb_link_tx_restate(&g->tx, &g->t.r, restate);
		}
	}
	for (k = 0; k < NW; k++) {
		tb_ev_writer_finish(&e->ev[k]);
		tb_writer_release(&g->w[k].w);
	}
	drain(g, TB_READ_SCRAPE);
	tb_link_tx_stats(&g->tx, &g->t.r);
	tb_link_tx_end(&g->tx);
}

/* Where frame @k of @b starts (after the @k-th delimiter). */
static size_t frame_at(const struct bytes *b, unsigned k)
{
	size_t i;

	for (i = 0; i < b->n && k; i++)
		k -= !b->p[i];
	return i;
}

/*
 * The packets of @m the importer cannot decode in full (tbcheck.h):
 * skipped for want of incremental state, or interned data ignored, or
 * naming an iid or a track nothing gave, explained by a loss or not.
 */
static uint64_t undecodable(const struct tbt_mem *m, struct tb_check *c)
{
	static const int rules[] = {
		TB_CK_NEEDS_STATE, TB_CK_INTERNED_IGNORED, TB_CK_IID_NAME,
		TB_CK_IID_CATEGORY, TB_CK_IID_ANNOTATION, TB_CK_TRACK_UNKNOWN,
	};
	uint64_t n = 0;
	unsigned i;

	ck_assert_int_eq(tb_check_init(c, NULL, NULL, 0), TB_OK);
	c->tail_lost = true;
	ck_assert_int_eq(tb_check_trace(c, m->p, m->len), TB_OK);
	for (i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		n += c->rule[rules[i]].count + c->rule[rules[i]].explained;
	return n;
}

/* tbtrace stream over @p: the undecodable packets, the checker's view. */
static uint64_t stream_ev(const uint8_t *p, size_t n, struct tb_check *c,
			  uint64_t *begins)
{
	struct tbt_stream_result res;
	struct tbt_mem m;
	FILE *f = report_open();
	uint64_t u;

	stream(p, n, &m, &res, f);
	fclose(f);
	u = undecodable(&m, c);
	*begins = c->stats.slice_begins;
	ck_assert_msg(tb_check_clean(c), "%s", report);
	free(m.p);
	return u;
}

/*
 * A burst of 19 frames lost in the middle of the stream costs the events
 * in those frames, and nothing after: the host had seen both writers'
 * states, and gives them back to the importer (a restate packet per
 * sequence, carrying the loss flag) before their next packet; without
 * that, every later packet that needs the state was skipped until the
 * writer's next fresh state (here, none: the target does not restate).
 */
START_TEST(test_stream_restates_what_a_burst_lost)
{
	struct evtarget g;
	struct tb_check c;
	uint64_t clean, begins, lost_begins;
	size_t a, b;
	uint8_t *cut;

	evtarget_run(&g, 0);
	ck_assert_uint_eq(stream_ev(g.g.out.p, g.g.out.n, &c, &clean), 0);
	ck_assert_uint_eq(clean, NW * EV_N);
	ck_assert_report("restate   0 restates");
	tb_check_destroy(&c);
	/* frames 40 to 58 lost */
	a = frame_at(&g.g.out, 40);
	b = frame_at(&g.g.out, 59);
	cut = (uint8_t *)malloc(g.g.out.n);
	ck_assert_ptr_nonnull(cut);
	memcpy(cut, g.g.out.p, a);
	memcpy(cut + a, g.g.out.p + b, g.g.out.n - b);
	ck_assert_uint_eq(stream_ev(cut, g.g.out.n - (b - a), &c, &begins), 0);
	ck_assert_report("19 frames lost by sequence gap");
	ck_assert_report("restate   2 restates of a sequence's state");
	ck_assert_uint_ge(c.stats.lossy_packets, NW);
	ck_assert_uint_gt(tb_check_ui_loss(&c, NULL), 0);
	/* what is missing is what 19 frames of 512 B held: a BEGIN and
	 * its END take 40 bytes at least */
	lost_begins = clean - begins;
	ck_assert_uint_gt(lost_begins, 0);
	ck_assert_uint_le(lost_begins, 19 * 512 / 40);
	tb_check_destroy(&c);
	free(cut);
	target_free(&g.g);
}
END_TEST

/*
 * A capture that starts after the writers' states went by: the host has
 * nothing to restate, and the target's own restate (tb_link_tx_restate()
 * every 16 frames) bounds what is lost: at most the packets of 16 frames
 * after the start.  Without it, nothing of either writer decodes until
 * its last state (tb_ev_writer_finish()).
 */
START_TEST(test_target_restate_bounds_a_late_start)
{
	struct evtarget g;
	struct tb_check c;
	uint64_t u, begins;
	size_t at;
	double per_frame;

	evtarget_run(&g, 16);
	ck_assert_uint_eq(stream_ev(g.g.out.p, g.g.out.n, &c, &begins), 0);
	per_frame = (double)c.stats.packets / (double)g.g.tx.seq;
	tb_check_destroy(&c);
	at = frame_at(&g.g.out, 50) + 7;		/* inside frame 50 */
	u = stream_ev(g.g.out.p + at, g.g.out.n - at, &c, &begins);
	tb_check_destroy(&c);
	ck_assert_msg((double)u <= 17 * per_frame, "%llu undecodable, %.1f "
		      "packets a frame", (unsigned long long)u, per_frame);
	target_free(&g.g);
	evtarget_run(&g, 0);
	at = frame_at(&g.g.out, 50) + 7;
	u = stream_ev(g.g.out.p + at, g.g.out.n - at, &c, &begins);
	tb_check_destroy(&c);
	ck_assert_msg((double)u > 100 * per_frame, "%llu undecodable",
		      (unsigned long long)u);
	target_free(&g.g);
}
END_TEST

/*
 * The restate packet by packet (tbt_rs_packet()): a packet after a loss
 * that names an iid the host never saw is dropped and its loss flagged on
 * the next restate, or at the end; an entry that gives a recorded iid
 * another value (a writer that started over under the same id, its clear
 * lost) ends the restates, and the importer skips what follows, as
 * without them: a name from the record is never given to the new one.
 */
struct rspkt {
	uint32_t flags;
	uint64_t interned_iid;		/* 0: none */
	const char *interned_name;
	uint64_t name_iid;		/* the event's */
	uint32_t loss;
};

/* Packet @p of sequence {1, 1}, with @loss, through the restate. */
static void rs_send(struct tbt_restate *rs, struct tb_trace_out *out,
		    const struct pkt *p, uint32_t loss)
{
	struct tb_buf_slice sl;
	struct tb_buf_packet bp;

	sl.data = p->b;
	sl.size = p->n;
	memset(&bp, 0, sizeof(bp));
	bp.slices = &sl;
	bp.nslices = 1;
	bp.size = p->n;
	bp.producer_id = 1;
	bp.writer_id = 1;
	bp.loss = loss;
	tbt_rs_packet(rs, out, &bp);
}

static void rs_feed(struct tbt_restate *rs, struct tb_trace_out *out,
		    const struct rspkt *r)
{
	struct pkt p = { { 0 }, 0 }, ev = { { 0 }, 0 }, in = { { 0 }, 0 };
	struct pkt e = { { 0 }, 0 };

	p_uint(&p, TP_TIMESTAMP, 1000 + ev_time++);
	if (r->flags)
		p_uint(&p, TP_FLAGS, r->flags);
	if (r->interned_iid) {
		p_uint(&e, 1, r->interned_iid);
		p_bytes(&e, 2, r->interned_name, strlen(r->interned_name));
		p_bytes(&in, 2, e.b, e.n);		/* event_names */
		p_bytes(&p, 12, in.b, in.n);
	}
	p_uint(&ev, 9, 3);				/* INSTANT */
	p_uint(&ev, 11, 1001);				/* track */
	p_uint(&ev, 10, r->name_iid);
	p_bytes(&p, TP_TRACK_EVENT, ev.b, ev.n);
	rs_send(rs, out, &p, r->loss);
}

/* Sequence {1, 1}'s thread track (uuid 1001) described, in a packet. */
static void rs_describe(struct tbt_restate *rs, struct tb_trace_out *out)
{
	struct pkt p;

	mk_packet(&p, 1, 0);
	rs_send(rs, out, &p, 0);
}

/* The packets of @m on sequence {1, 1}: dropped bits, and restates. */
static unsigned rs_read(const struct tbt_mem *m, uint64_t *dropped,
			bool *restate, unsigned max)
{
	struct tb_pb_reader r;
	struct tb_trace_packet tp;
	unsigned n = 0;
	uint64_t v;

	tb_pb_reader_init(&r, m->p, m->len);
	while (tb_trace_next(&r, &tp) > 0) {
		if (tp.trusted_seq_id != tb_trace_seq_id(1, 1))
			continue;
		ck_assert_uint_lt(n, max);
		dropped[n] = tp.dropped;
		restate[n] = !tb__ck_uint(tp.data, tp.size, TP_TIMESTAMP, &v);
		n++;
	}
	return n;
}

static void rs_out(struct tb_trace_out *out, struct tbt_mem *m)
{
	memset(m, 0, sizeof(*m));
	memset(out, 0, sizeof(*out));
	out->write = tbt_mem_write;
	out->ctx = m;
}

/* Packets @p (@n) through a restate, after the track's descriptor. */
static struct tbt_restate *rs_run(const struct rspkt *p, unsigned n,
				  struct tb_trace_out *out, struct tbt_mem *m)
{
	struct tbt_restate *rs = calloc(1, sizeof(*rs));
	unsigned i;

	ck_assert_ptr_nonnull(rs);
	rs_out(out, m);
	rs_describe(rs, out);
	for (i = 0; i < n; i++)
		rs_feed(rs, out, &p[i]);
	tbt_rs_finish(rs, out);
	return rs;
}

static void rs_done(struct tbt_restate *rs, struct tbt_mem *m)
{
	tbt_rs_free(rs);
	free(rs);
	free(m->p);
}

START_TEST(test_restate_drops_what_it_cannot_name)
{
	static const struct rspkt p[] = {
		{ 1, 1, "alpha", 1, 0 },		/* the state */
		{ 2, 0, NULL, 1, TB_BUF_LOSS_PRESENT | TB_BUF_LOSS_READ_GAP },
		{ 2, 0, NULL, 2, 0 },			/* lost with the link */
		{ 2, 0, NULL, 1, 0 },
		{ 2, 0, NULL, 3, 0 },			/* and at the end */
	};
	static struct tb_trace_out out;
	struct tbt_restate *rs;
	uint64_t dropped[16];
	bool restate[16];
	struct tb_check c;
	struct tbt_mem m;

	rs = rs_run(p, sizeof(p) / sizeof(p[0]), &out, &m);
	ck_assert_uint_eq(rs->dropped, 2);
	ck_assert_uint_eq(rs->restates, 3);
	/* D, P0, R(gap), P1, R(dropped P2), P3, R(dropped P4) */
	ck_assert_uint_eq(rs_read(&m, dropped, restate, 16), 7);
	ck_assert(!restate[1] && !dropped[1]);
	ck_assert(restate[2] && dropped[2] == (TB_BUF_LOSS_PRESENT |
					       TB_BUF_LOSS_READ_GAP));
	ck_assert(!restate[3] && !dropped[3]);
	ck_assert(restate[4] && dropped[4] == TB_BUF_LOSS_PRESENT);
	ck_assert(!restate[5] && !dropped[5]);
	ck_assert(restate[6] && dropped[6] == TB_BUF_LOSS_PRESENT);
	ck_assert_uint_eq(undecodable(&m, &c), 0);
	ck_assert_uint_eq(c.stats.instants, 3);
	tb_check_destroy(&c);
	rs_done(rs, &m);
}
END_TEST

START_TEST(test_restate_never_gives_an_old_name_to_a_new_writer)
{
	static const struct rspkt p[] = {
		{ 1, 1, "alpha", 1, 0 },
		{ 2, 0, NULL, 1, TB_BUF_LOSS_PRESENT },	/* restated */
		{ 2, 1, "beta", 1, 0 },	/* writer 1 anew: its clear lost */
		{ 2, 0, NULL, 1, 0 },
		{ 2, 0, NULL, 1, TB_BUF_LOSS_PRESENT },
	};
	static struct tb_trace_out out;
	struct tbt_restate *rs;
	uint64_t dropped[16];
	bool restate[16];
	struct tb_check c;
	struct tbt_mem m;
	unsigned n;

	rs = rs_run(p, sizeof(p) / sizeof(p[0]), &out, &m);
	ck_assert_uint_eq(rs->restates, 1);
	ck_assert_uint_eq(rs->dropped, 0);
	/* D, P0, R, P1, P2 (flagged), P3, P4 */
	n = rs_read(&m, dropped, restate, 16);
	ck_assert_uint_eq(n, 7);
	ck_assert(restate[2] && !restate[4]);
	/* "beta" takes the state away again: it and what follows are
	 * skipped until writer 1's next clear, never named "alpha" */
	ck_assert_uint_eq(dropped[4], TB_BUF_LOSS_PRESENT);
	ck_assert_uint_eq(undecodable(&m, &c), 4);
	ck_assert_uint_eq(c.rule[TB_CK_NEEDS_STATE].explained, 3);
	ck_assert_uint_eq(c.rule[TB_CK_INTERNED_IGNORED].explained, 1);
	ck_assert_uint_eq(c.stats.instants, 2);
	tb_check_destroy(&c);
	rs_done(rs, &m);
}
END_TEST

/* Where each frame of a stream ends (its delimiter's offset + 1). */
static size_t frame_end[4096], feed_at;
static unsigned nframe_end;
static struct tb_chunk_view frame_view[4096];

static void ends_fn(void *ctx, const struct tb_link_frame *f)
{
	(void)ctx;
	ck_assert_uint_lt(nframe_end, 4096);
	frame_view[nframe_end] = f->view;
	frame_end[nframe_end++] = feed_at + 1;
}

/*
 * The frame holding the middle of a packet split over three chunks is
 * lost: the packet is lost, its first and last parts are never joined,
 * and the writer's next packet says so.
 */
START_TEST(test_stream_losing_the_middle_of_a_split_packet)
{
	struct tb_link_tx tx;
	struct bytes b = { NULL, 0, 0 };
	struct twriter w;
	struct treader rd;
	struct tring t;
	struct verdict v;
	static bool ok[NW][NPKT];
	struct pkt p;
	unsigned i, f;

	tring_new(&t, 256, 16);
	twriter_new(&w, &t, 1, 0, TB_DROP);
	treader_new(&rd, &t);
	tb_link_tx_init(&tx, bytes_put, &b);
	tb_link_tx_hello(&tx, &t.r);
	for (i = 0; i < 14; i++) {	/* packet 10: 700 B, four chunks */
		mk_packet(&p, 1, i);
		ok[0][i] = !tb_writer_write_packet(&w.w, p.b, (uint32_t)p.n);
		ck_assert(ok[0][i]);
		while (tb_reader_drain(&rd.rd, 64, TB_READ_LAZY,
				       tb_link_chunk_fn, &tx, NULL) ==
		       TB_LIMIT)
			;
	}
	tb_writer_release(&w.w);
	tb_reader_drain(&rd.rd, 64, TB_READ_SCRAPE, tb_link_chunk_fn, &tx,
			NULL);
	tb_link_tx_end(&tx);
	tb_link_rx_init(&rx);
	nframe_end = 0;
	for (feed_at = 0; feed_at < b.n; feed_at++)
		tb_link_rx_feed(&rx, b.p + feed_at, 1, ends_fn, NULL);
	for (f = 1; f < nframe_end; f++)
		if ((frame_view[f].flags & (TB_F_CONT_PREV | TB_F_CONT_NEXT))
		    == (TB_F_CONT_PREV | TB_F_CONT_NEXT))
			break;
	ck_assert_uint_lt(f, nframe_end);
	memmove(b.p + frame_end[f - 1], b.p + frame_end[f],
		b.n - frame_end[f]);
	damaged(b.p, b.n - (frame_end[f] - frame_end[f - 1]), &v, ok, 0);
	ck_assert_uint_eq(v.gaps[0], 1);
	ck_assert_uint_eq(v.delivered[0], 13);
	ck_assert_uint_eq(v.last[0], 13);
	ck_assert_report("1 frames lost by sequence gap");
	twriter_free(&w);
	treader_free(&rd);
	tring_free(&t);
	free(b.p);
}
END_TEST

/*
 * A chunk its reader could not use (a lost view: here a directory that
 * does not parse) in the middle of a packet split over three chunks,
 * drained from the ring by the bridge as the service does: the packet is
 * lost, the start of the one before the lost chunk is never joined to
 * the tail of another after it, and the next packet is flagged.
 */
START_TEST(test_bridge_never_joins_across_a_lost_view)
{
	static bool ok[NW][NPKT];
	struct tb_buf *buf;
	struct tb_bridge_config bc;
	struct tb_trace_out out;
	struct tb_bridge br;
	struct twriter w;
	struct tring t;
	struct tbt_mem m;
	struct verdict v;
	struct pkt p;
	uint8_t *scratch, *c;
	uint32_t word, i, n;
	int ret;

	tring_new(&t, 256, 16);
	twriter_new(&w, &t, 1, 0, TB_DROP);
	for (i = 0; i < 14; i++) {	/* packet 10: 700 B, four chunks */
		mk_packet(&p, 1, i);
		ok[0][i] = !tb_writer_write_packet(&w.w, p.b, (uint32_t)p.n);
		ck_assert(ok[0][i]);
	}
	tb_writer_release(&w.w);
	for (i = 0; i < 16; i++) {
		word = tword(&t, i);
		if ((word & (TB_F_CONT_PREV | TB_F_CONT_NEXT)) ==
		    (TB_F_CONT_PREV | TB_F_CONT_NEXT))
			break;
	}
	ck_assert_uint_lt(i, 16);
	c = tchunk(&t, i);
	n = word >> 16 & 0xff;
	memset(c + 256 - n, 0xff, n);	/* sizes past the chunk */
	buf = tb_buf_create(1 << 20, TB_BUF_DISCARD);
	scratch = (uint8_t *)malloc(256);
	ck_assert_ptr_nonnull(buf);
	memset(&bc, 0, sizeof(bc));
	bc.ring = &t.r;
	bc.scratch = scratch;
	bc.producer_id = PRODUCER;
	bc.bufs = &buf;
	bc.nbufs = 1;
	ck_assert_int_eq(tb_bridge_init(&br, &bc), TB_OK);
	do
		ret = tb_bridge_drain(&br, ~0u, TB_READ_SCRAPE, NULL);
	while (ret == TB_LIMIT);
	ck_assert_int_eq(ret, TB_NODATA);
	ck_assert_uint_eq(br.stat[TB_BS_LOST], 1);
	memset(&m, 0, sizeof(m));
	memset(&out, 0, sizeof(out));
	out.write = tbt_mem_write;
	out.ctx = &m;
	ck_assert_int_ge(tb_trace_write(&out, buf), 0);
	verify(m.p, m.len, &v, ok);
	ck_assert_uint_eq(v.gaps[0], 1);
	ck_assert_uint_eq(v.last[0], 13);
	ck_assert_uint_eq(v.delivered[0], 13);
	tb_bridge_destroy(&br);
	tb_buf_destroy(buf);
	free(scratch);
	free(m.p);
	twriter_free(&w);
	tring_free(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * The command line: tbtrace stream and convert, as a user runs them.
 */
static void tmp_path(char *buf, size_t n, const char *name)
{
	ck_assert_msg(tmp_root[0], "no scratch directory");
	snprintf(buf, n, "%s/%s", tmp_root, name);
}

static void spit(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(p, 1, n, f), n);
	ck_assert_int_eq(fclose(f), 0);
}

static char *out;		/* the last run's stdout and stderr */

static int tbtrace(const char **args, const char *in)
{
	char log[512];
	int status, saved = -1, fd;
	pid_t pid;

	tmp_path(log, sizeof(log), "run.log");
	if (in) {		/* stdin from a file, for "-" */
		saved = dup(0);
		fd = open(in, O_RDONLY);
		ck_assert_int_ge(fd, 0);
		dup2(fd, 0);
		close(fd);
	}
	pid = spawn_to("tbtrace", log, args);
	if (in) {
		dup2(saved, 0);
		close(saved);
	}
	mark_point();		/* a tbtrace that never exits hangs here */
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	free(out);
	out = spawn_slurp(log, NULL);
	ck_assert_ptr_nonnull(out);
	ck_assert_msg(WIFEXITED(status), "tbtrace died:\n%s", out);
	return WEXITSTATUS(status);
}

#define ck_assert_out(s)						\
	ck_assert_msg(strstr(out, (s)) != NULL,				\
		      "no \"%s\" in the output:\n%s", (s), out)

static void verify_file(const char *path, struct verdict *v,
			bool (*ok)[NPKT])
{
	size_t n;
	char *t = spawn_slurp(path, &n);

	ck_assert_ptr_nonnull(t);
	verify((const uint8_t *)t, n, v, ok);
	free(t);
}

/*
 * The events of the trace at @path on ring @producer's "events lost"
 * counter track, as a service writes it (tbtrace.h); -1: no such track.
 */
static long loss_track_events(const char *path, uint16_t producer)
{
	struct tb_check c;
	size_t n;
	char *t = spawn_slurp(path, &n);
	long events = -1;
	uint32_t i;

	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(tb_check_init(&c, NULL, NULL, 0), TB_OK);
	ck_assert_int_eq(tb_check_trace(&c, t, n), TB_OK);
	for (i = 0; i < c.ntracks; i++)
		if (c.tracks[i].uuid == (TB_TRACE_LOSS_UUID | producer) &&
		    c.tracks[i].kind == TB_CHECK_TRACK_COUNTER)
			events = (long)c.tracks[i].events;
	tb_check_destroy(&c);
	free(t);
	return events;
}

START_TEST(test_stream_command_line)
{
	char in[512], trace[512];
	const char *args[] = { "stream", in, trace, NULL };
	const char *dash[] = { "stream", "-", trace, NULL };
	const char *stat[] = { "stat", trace, NULL };
	struct target g;
	struct verdict v;

	target_run(&g);
	tmp_path(in, sizeof(in), "uart.bin");
	tmp_path(trace, sizeof(trace), "uart.pftrace");
	spit(in, g.out.p, g.out.n);
	ck_assert_int_eq(tbtrace(args, NULL), 0);
	ck_assert_out("lost      nothing");
	verify_file(trace, &v, g.ok);
	ck_assert_uint_eq(v.delivered[0] + v.delivered[1], NW * NPKT);
	/* it ends as convert's and the service's traces do */
	ck_assert_int_eq(tbtrace(stat, NULL), 0);
	ck_assert_out("stats     TraceStats: 1 buffers");
	ck_assert_out("check     clean");
	/* the ring's "events lost" track, sampled at each STATS frame where
	 * it changed: at the first (0), never again */
	ck_assert_int_eq(loss_track_events(trace, PRODUCER), 1);
	/* from stdin, with a byte flipped: reported, exit 1 */
	g.out.p[g.out.n / 2] ^= 0x01;
	spit(in, g.out.p, g.out.n);
	ck_assert_int_eq(tbtrace(dash, in), 1);
	ck_assert_out("1 frames with a bad CRC");
	verify_file(trace, &v, g.ok);
	/* not a stream at all */
	spit(in, "hello", 5);
	ck_assert_int_eq(tbtrace(args, NULL), 2);
	ck_assert_out("not a tblink stream");
	target_free(&g);
}
END_TEST

/*
 * A ring image like a flight recorder's: writers wrote (no reader ran),
 * then the firmware stopped.  4 x ... packets so the ring is not full.
 */
static void ring_image(struct tring *t, bool (*ok)[NPKT], unsigned npkt)
{
	struct twriter w[NW];
	struct pkt p;
	unsigned i, k;

	memset(ok, 0, sizeof(bool) * NW * NPKT);
	tring_new(t, 512, 32);
	for (k = 0; k < NW; k++)
		twriter_new(&w[k], t, (uint16_t)(k + 1), 0, TB_DROP);
	for (i = 0; i < npkt; i++)
		for (k = 0; k < NW; k++) {
			mk_packet(&p, (uint16_t)(k + 1), i);
			ok[k][i] = tb_writer_write_packet(&w[k].w, p.b,
						(uint32_t)p.n) == TB_OK;
			ck_assert(ok[k][i]);
		}
	for (k = 0; k < NW; k++) {
		tb_writer_release(&w[k].w);
		twriter_free(&w[k]);
	}
}

/* @len bytes of other memory: not zero, a stray magic among them. */
static void other_memory(uint8_t *p, size_t len)
{
	uint32_t x = 1;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)xs32(&x);
	if (len >= 1024)	/* the magic alone is no ring header */
		poke32(p + 1000, TB_RING_MAGIC);
}

START_TEST(test_convert_finds_the_ring_in_a_larger_dump)
{
	static bool ok[NW][NPKT];
	char img[512], trace[512];
	const char *args[] = { "convert", img, trace, NULL };
	const char *at[] = { "convert", "-O", "8192", img, trace, NULL };
	const char *wrong[] = { "convert", "-O", "4096", img, trace, NULL };
	char msg[128];
	struct verdict v;
	struct tring t;
	uint8_t *dump;
	size_t len;

	ring_image(&t, ok, 41);
	len = 8192 + t.len + 3000;
	dump = (uint8_t *)malloc(len);
	ck_assert_ptr_nonnull(dump);
	other_memory(dump, len);
	memcpy(dump + 8192, t.mem, t.len);
	tmp_path(img, sizeof(img), "dump.bin");
	tmp_path(trace, sizeof(trace), "dump.pftrace");
	spit(img, dump, len);
	ck_assert_int_eq(tbtrace(args, NULL), 0);
	ck_assert_out("found at offset 8192");
	ck_assert_out("every published packet is in the trace");
	verify_file(trace, &v, ok);
	ck_assert_uint_eq(v.delivered[0], 41);
	ck_assert_uint_eq(v.delivered[1], 41);
	ck_assert_int_eq(loss_track_events(trace, 1), 1);
	ck_assert_int_eq(tbtrace(at, NULL), 0);
	ck_assert_out("at offset 8192 (-O)");
	/* a second ring further on: the first is taken, the other named */
	dump = (uint8_t *)realloc(dump, len + t.len);
	ck_assert_ptr_nonnull(dump);
	memcpy(dump + len, t.mem, t.len);
	spit(img, dump, len + t.len);
	ck_assert_int_eq(tbtrace(args, NULL), 0);
	ck_assert_out("found at offset 8192");
	snprintf(msg, sizeof(msg), "2 candidate rings in the image, at "
		 "offsets 8192, %zu: converting the first, at 8192; -O %zu "
		 "converts the next", len, len);
	ck_assert_out(msg);
	ck_assert_int_eq(tbtrace(wrong, NULL), 2);
	ck_assert_out("TB_EMAGIC");
	free(dump);
	tring_free(&t);
}
END_TEST

/*
 * Other memory may hold what reads as a valid header, claiming a ring
 * larger than the dump and too large to salvage: the scan passes it by
 * and takes the ring after it.
 */
START_TEST(test_convert_passes_over_a_too_large_header)
{
	static bool ok[NW][NPKT];
	char img[512], trace[512];
	const char *args[] = { "convert", img, trace, NULL };
	struct verdict v;
	struct tring t;
	uint8_t *dump;
	size_t len;

	ring_image(&t, ok, 41);
	len = 8192 + t.len;
	dump = (uint8_t *)malloc(len);
	ck_assert_ptr_nonnull(dump);
	other_memory(dump, 8192);
	/* at 2048: 2^20 chunks of 32 KiB, padding zero */
	memset(dump + 2048, 0, TB_RING_HDR_SIZE);
	poke32(dump + 2048, TB_RING_MAGIC);
	poke32(dump + 2052, TB_RING_VERSION);
	poke32(dump + 2056, TB_RING_HDR_SIZE);
	poke32(dump + 2060, 15);
	poke32(dump + 2064, 20);
	memcpy(dump + 8192, t.mem, t.len);
	tmp_path(img, sizeof(img), "stray.bin");
	tmp_path(trace, sizeof(trace), "stray.pftrace");
	spit(img, dump, len);
	ck_assert_int_eq(tbtrace(args, NULL), 0);
	ck_assert_out("found at offset 8192");
	verify_file(trace, &v, ok);
	ck_assert_uint_eq(v.delivered[0], 41);
	ck_assert_uint_eq(v.delivered[1], 41);
	free(dump);
	tring_free(&t);
}
END_TEST

/*
 * The scan takes what tb_ring_attach() takes: a ring whose header has a
 * nonzero padding word (attach reads none of it) is the ring at offset 0,
 * not other memory to pass over for the next ring; and an image with two
 * rings says so, and which it converted.
 */
START_TEST(test_convert_scans_with_the_attach_rules)
{
	static bool ok[NW][NPKT], ok2[NW][NPKT];
	char img[512], trace[512], msg[160];
	const char *args[] = { "convert", img, trace, NULL };
	const char *next[] = { "convert", "-O", msg, img, trace, NULL };
	struct tring a, b;
	struct verdict v;
	uint8_t *dump;
	size_t len;

	ring_image(&a, ok, 41);
	ring_image(&b, ok2, 7);
	len = a.len + b.len;
	dump = (uint8_t *)malloc(len);
	ck_assert_ptr_nonnull(dump);
	memcpy(dump, a.mem, a.len);
	memcpy(dump + a.len, b.mem, b.len);
	poke32(dump + 20, 0xdeadbeefu);		/* pad0[0] */
	tmp_path(img, sizeof(img), "pad.bin");
	tmp_path(trace, sizeof(trace), "pad.pftrace");
	spit(img, dump, len);
	ck_assert_int_eq(tbtrace(args, NULL), 0);
	verify_file(trace, &v, NULL);
	ck_assert_uint_eq(v.delivered[0], 41);
	ck_assert_uint_eq(v.delivered[1], 41);
	snprintf(msg, sizeof(msg), "2 candidate rings in the image, at "
		 "offsets 0, %zu: converting the first, at 0", a.len);
	ck_assert_out(msg);
	/* the other one, as the report says */
	snprintf(msg, sizeof(msg), "%zu", a.len);
	ck_assert_int_eq(tbtrace(next, NULL), 0);
	verify_file(trace, &v, ok2);
	ck_assert_uint_eq(v.delivered[0], 7);
	free(dump);
	tring_free(&a);
	tring_free(&b);
}
END_TEST

START_TEST(test_convert_salvages_a_dump_cut_in_the_ring)
{
	static bool ok[NW][NPKT];
	char img[512], trace[512];
	const char *args[] = { "convert", img, trace, NULL };
	struct verdict v;
	struct tring t;
	uint8_t *dump;
	size_t len, cut;
	unsigned w;

	ring_image(&t, ok, 41);		/* 41 x 2 packets: 18 chunks */
	/* 4 KiB before the ring; the dump ends inside chunk 9 */
	cut = TB_RING_HDR_SIZE + 9 * 512 + 200;
	len = 4096 + cut;
	dump = (uint8_t *)malloc(len);
	ck_assert_ptr_nonnull(dump);
	other_memory(dump, 4096);
	memcpy(dump + 4096, t.mem, cut);
	tmp_path(img, sizeof(img), "cut.bin");
	tmp_path(trace, sizeof(trace), "cut.pftrace");
	spit(img, dump, len);
	ck_assert_int_eq(tbtrace(args, NULL), 1);
	ck_assert_out("found at offset 4096");
	ck_assert_out("truncated: 9 of 32 chunks complete");
	ck_assert_out("lost      yes");
	verify_file(trace, &v, ok);
	for (w = 0; w < NW; w++) {
		ck_assert_uint_eq(v.first[w], 0);
		ck_assert_uint_gt(v.delivered[w], 10);
		ck_assert_uint_lt(v.delivered[w], 41);
	}
	free(dump);
	tring_free(&t);
}
END_TEST

static int rm_fn(const char *path, const struct stat *st, int flag,
		 struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int main(void)
{
	const char *base = getenv("TMPDIR");
	Suite *s = suite_create("tblink");
	TCase *t = tcase_create("link");
	SRunner *sr;
	int failed;

	(void)tbt_main;		/* the command line runs from build/ */
	snprintf(tmp_root, sizeof(tmp_root), "%s/tblink-test-XXXXXX",
		 base && *base ? base : "/tmp");
	if (!mkdtemp(tmp_root)) {
		perror(tmp_root);
		return EXIT_FAILURE;
	}
	tcase_set_timeout(t, 120);
	tcase_add_test(t, test_crc32_is_the_zlib_one);
	tcase_add_test(t, test_frames_round_trip_whole_and_byte_by_byte);
	tcase_add_test(t, test_every_flipped_byte_is_caught);
	tcase_add_test(t, test_an_endless_frame_is_skipped);
	tcase_add_test(t,
		test_sequence_gaps_restarts_and_a_cut_end_are_counted);
	tcase_add_test(t, test_stream_round_trip_keeps_every_packet);
	tcase_add_test(t, test_stream_starting_mid_frame);
	tcase_add_test(t, test_stream_losing_bytes);
	tcase_add_test(t, test_stream_with_bytes_flipped);
	tcase_add_test(t, test_stream_ended_early);
	tcase_add_test(t, test_stream_restates_what_a_burst_lost);
	tcase_add_test(t, test_target_restate_bounds_a_late_start);
	tcase_add_test(t, test_restate_drops_what_it_cannot_name);
	tcase_add_test(t,
		test_restate_never_gives_an_old_name_to_a_new_writer);
	tcase_add_test(t, test_stream_losing_the_middle_of_a_split_packet);
	tcase_add_test(t, test_bridge_never_joins_across_a_lost_view);
	tcase_add_test(t, test_stream_command_line);
	tcase_add_test(t, test_convert_finds_the_ring_in_a_larger_dump);
	tcase_add_test(t, test_convert_passes_over_a_too_large_header);
	tcase_add_test(t, test_convert_scans_with_the_attach_rules);
	tcase_add_test(t, test_convert_salvages_a_dump_cut_in_the_ring);
	suite_add_tcase(s, t);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	free(report);
	free(out);
	if (getenv("TB_KEEP_TMP"))
		printf("scratch files kept in %s\n", tmp_root);
	else
		nftw(tmp_root, rm_fn, 16, FTW_DEPTH | FTW_PHYS);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
