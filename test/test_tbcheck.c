/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_tbcheck.c - tools/tbcheck.h, the trace checker: one hand-built trace per
 * rule that breaks it (and nothing else), the same trace with a loss flag
 * that explains it where a loss can, clean traces (hand-built, and one
 * through tbuffer.h and tbtrace.h), and hostile images.
 *
 * Traces are encoded here with Perfetto's field numbers, written out from
 * the .proto files (protos/perfetto/trace/trace_packet.proto,
 * track_event/{track_event,track_descriptor,debug_annotation}.proto,
 * interned_data/interned_data.proto, clock_snapshot.proto,
 * trace_packet_defaults.proto), not from tbcheck.h's constants.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/tbcheck.h"

/* The checker reads traces alone: no central buffer, no ring, no writer. */
#if defined(TBUFFER_H) || defined(TBRING_H) || defined(TBTRACE_H)
#error "tools/tbcheck.h includes more than the trace format (tbtracefmt.h)"
#endif

#include "tbtrace.h"	/* for the clean traces written through it */

/* TracePacket */
#define TP_CLOCK_SNAPSHOT	6
#define TP_TIMESTAMP		8
#define TP_TRACK_EVENT		11
#define TP_INTERNED		12
#define TP_FLAGS		13
#define TP_THREAD_DESC		44
#define TP_CLOCK_ID		58
#define TP_DEFAULTS		59
#define TP_TRACK_DESC		60
#define CLEARED			1	/* SequenceFlags */
#define NEEDS			2
/* TrackDescriptor, Thread/ProcessDescriptor, CounterDescriptor */
#define TD_UUID			1
#define TD_NAME			2
#define TD_PROCESS		3
#define TD_THREAD		4
#define TD_PARENT		5
#define TD_COUNTER		8
#define PD_PID			1
#define THD_TID			2
/* TrackEvent */
#define TE_CATEGORY_IIDS	3
#define TE_ANNOTATIONS		4
#define TE_TYPE			9
#define TE_NAME_IID		10
#define TE_TRACK		11
#define TE_XC_VALUES		12
#define TE_NAME			23
#define TE_COUNTER		30
#define TE_XC_UUIDS		31
#define TE_SOURCE_IID		34
#define BEGIN			1
#define END			2
#define INSTANT			3
#define COUNTER			4
/* DebugAnnotation */
#define DA_NAME_IID		1
#define DA_UINT			3
#define DA_DICT			11
/* InternedData, and each entry */
#define ID_CATEGORIES		1
#define ID_NAMES		2
#define ID_ANNOTATION_NAMES	3
#define ID_SOURCES		4
#define IE_IID			1
#define IE_NAME			2
/* TracePacketDefaults, TrackEventDefaults, ClockSnapshot */
#define DEF_CLOCK		58
#define DEF_TRACK_EVENT		11
#define TED_TRACK		11
#define CS_CLOCKS		1
#define CLK_ID			1
#define CLK_TS			2
#define CLK_INCREMENTAL		3
#define CLK_UNIT		4
/* the service's trusted fields */
#define T_UID			3
#define T_SEQ			10
#define T_PID			79
#define T_DROPPED		42

#define UID			1000u
#define PID			42
#define NO_TS			UINT64_MAX
#define LOSS			0x41u	/* PRESENT | OVERWRITE */

/* ------------------------------------------------------------------------
 * Messages and traces.
 */
struct msg {
	uint8_t b[4096];
	size_t n;
};

static void m_uint(struct msg *m, uint32_t field, uint64_t v)
{
	ck_assert_uint_lt(m->n + 20, sizeof(m->b));
	m->n += tb_pb_uint(m->b + m->n, field, v);
}

static void m_bytes(struct msg *m, uint32_t field, const void *d, size_t n)
{
	ck_assert_uint_lt(m->n + n + 20, sizeof(m->b));
	m->n += tb_pb_len(m->b + m->n, field, n);
	memcpy(m->b + m->n, d, n);
	m->n += n;
}

static void m_str(struct msg *m, uint32_t field, const char *s)
{
	m_bytes(m, field, s, strlen(s));
}

static void m_msg(struct msg *m, uint32_t field, const struct msg *in)
{
	m_bytes(m, field, in->b, in->n);
}

struct trace {
	uint8_t *p;
	size_t len, cap;
	uint64_t packets;
};

static void t_put(struct trace *t, const void *d, size_t n)
{
	if (t->len + n > t->cap) {
		t->cap = t->cap ? t->cap * 2 : 4096;
		while (t->cap < t->len + n)
			t->cap *= 2;
		t->p = (uint8_t *)realloc(t->p, t->cap);
		ck_assert_ptr_nonnull(t->p);
	}
	memcpy(t->p + t->len, d, n);
	t->len += n;
}

static void t_free(struct trace *t)
{
	free(t->p);
	memset(t, 0, sizeof(*t));
}

#define HAS_UID		1u
#define HAS_SEQ		2u
#define HAS_PID		4u
#define HAS_ALL		7u

/* Appends @body as a Trace.packet with the trusted fields @has says. */
static void t_raw(struct trace *t, const struct msg *body, unsigned has,
		  uint32_t seq, uint32_t uid, int32_t pid, uint32_t loss)
{
	struct msg m = { { 0 }, 0 };
	uint8_t head[16];

	if (body) {
		memcpy(m.b, body->b, body->n);
		m.n = body->n;
	}
	if (has & HAS_UID)
		m_uint(&m, T_UID, uid);
	if (has & HAS_SEQ)
		m_uint(&m, T_SEQ, seq);
	if (has & HAS_PID)
		m_uint(&m, T_PID, (uint64_t)(int64_t)pid);
	if (loss)
		m_uint(&m, T_DROPPED, loss);
	t_put(t, head, tb_pb_len(head, 1, m.n));
	t_put(t, m.b, m.n);
	t->packets++;
}

/*
 * One packet of sequence @seq: timestamp @ts (NO_TS: none), sequence
 * flags, and whichever of a TrackEvent, a TrackDescriptor and
 * InternedData are given.
 */
static void t_pkt(struct trace *t, uint32_t seq, uint64_t ts, uint32_t flags,
		  const struct msg *te, const struct msg *td,
		  const struct msg *interned, uint32_t loss)
{
	struct msg body = { { 0 }, 0 };

	if (ts != NO_TS)
		m_uint(&body, TP_TIMESTAMP, ts);
	if (flags)
		m_uint(&body, TP_FLAGS, flags);
	if (interned)
		m_msg(&body, TP_INTERNED, interned);
	if (td)
		m_msg(&body, TP_TRACK_DESC, td);
	if (te)
		m_msg(&body, TP_TRACK_EVENT, te);
	t_raw(t, &body, HAS_ALL, seq, UID, PID, loss);
}

/* A packet holding only a timestamp (and maybe a loss flag). */
static void t_bare(struct trace *t, uint32_t seq, uint64_t ts, uint32_t loss)
{
	t_pkt(t, seq, ts, 0, NULL, NULL, NULL, loss);
}

/* A thread track: uuid, thread { pid, tid }; clears when @flags say. */
static void t_thread(struct trace *t, uint32_t seq, uint64_t uuid,
		     int32_t pid, int32_t tid, uint32_t flags)
{
	struct msg td = { { 0 }, 0 }, th = { { 0 }, 0 };

	m_uint(&th, PD_PID, (uint64_t)pid);
	m_uint(&th, THD_TID, (uint64_t)tid);
	m_uint(&td, TD_UUID, uuid);
	m_msg(&td, TD_THREAD, &th);
	t_pkt(t, seq, 10, flags, NULL, &td, NULL, 0);
}

/* A track with a parent (0: none) and a name: a child track. */
static void t_child(struct trace *t, uint32_t seq, uint64_t uuid,
		    uint64_t parent)
{
	struct msg td = { { 0 }, 0 };

	m_uint(&td, TD_UUID, uuid);
	if (parent)
		m_uint(&td, TD_PARENT, parent);
	m_str(&td, TD_NAME, "child");
	t_pkt(t, seq, 10, 0, NULL, &td, NULL, 0);
}

static void t_counter_track(struct trace *t, uint32_t seq, uint64_t uuid)
{
	struct msg td = { { 0 }, 0 }, cd = { { 0 }, 0 };

	m_uint(&td, TD_UUID, uuid);
	m_msg(&td, TD_COUNTER, &cd);
	t_pkt(t, seq, 10, 0, NULL, &td, NULL, 0);
}

/* A TrackEvent of @type on @track (0: no track_uuid field). */
static void ev_init(struct msg *ev, unsigned type, uint64_t track)
{
	memset(ev, 0, sizeof(*ev));
	if (type)
		m_uint(ev, TE_TYPE, type);
	if (track)
		m_uint(ev, TE_TRACK, track);
}

static void t_event(struct trace *t, uint32_t seq, uint64_t ts,
		    unsigned type, uint64_t track, uint32_t loss)
{
	struct msg ev;

	ev_init(&ev, type, track);
	if (type != END && type != COUNTER)
		m_str(&ev, TE_NAME, "event");
	t_pkt(t, seq, ts, 0, &ev, NULL, NULL, loss);
}

/* One interned entry { iid, name } in field @field of InternedData. */
static void intern(struct msg *id, uint32_t field, uint64_t iid,
		   const char *name)
{
	struct msg e = { { 0 }, 0 };

	m_uint(&e, IE_IID, iid);
	m_str(&e, IE_NAME, name);
	m_msg(id, field, &e);
}

/* ------------------------------------------------------------------------
 * Checking.
 */
static struct tb_check ck;

static int run(const struct trace *t)
{
	ck_assert_int_eq(tb_check_init(&ck, NULL, NULL, 0), TB_OK);
	return tb_check_trace(&ck, t->p, t->len);
}

static void done(void)
{
	tb_check_destroy(&ck);
	ck_assert_uint_eq(ck.used, 0);
}

/* Rule @rule was broken @count times unexplained, @expl explained. */
static void expect(int rule, uint64_t count, uint64_t expl)
{
	ck_assert_msg(ck.rule[rule].count == count &&
		      ck.rule[rule].explained == expl,
		      "%s: %llu unexplained, %llu explained; expected %llu, "
		      "%llu", tb_check_rule_name(rule),
		      (unsigned long long)ck.rule[rule].count,
		      (unsigned long long)ck.rule[rule].explained,
		      (unsigned long long)count, (unsigned long long)expl);
}

/* ... and no other rule was broken at all. */
static void expect_only(int rule, uint64_t count, uint64_t expl)
{
	int i;

	expect(rule, count, expl);
	for (i = 0; i < TB_CK_MAX; i++)
		if (i != rule)
			expect(i, 0, 0);
	ck_assert(tb_check_clean(&ck) == (count == 0));
}

static void expect_clean(void)
{
	int i;

	for (i = 0; i < TB_CK_MAX; i++)
		expect(i, 0, 0);
	ck_assert(tb_check_clean(&ck));
}

/* A sequence's start: its thread track (uuid = seq) and a clear. */
static void t_start(struct trace *t, uint32_t seq)
{
	t_thread(t, seq, seq, PID, (int32_t)seq, CLEARED);
}

/* ------------------------------------------------------------------------
 * Clean traces.
 */
/*
 * The default budget grows with the trace (the tables keep about two
 * bytes per byte of a trace of small events: a 200 MB trace of a flat-out
 * run outgrew the fixed 256 MiB and the check stopped INCOMPLETE); one
 * the caller gives stays.  A trace of zero bytes is no trace: the budget
 * is set before the walk finds that.
 */
START_TEST(test_default_budget_grows_with_the_trace)
{
	size_t len = (size_t)TB_CHECK_BUDGET / TB_CHECK_BUDGET_PER_BYTE + 4096;
	uint8_t *img = (uint8_t *)calloc(1, len);
	struct tb_check c;

	ck_assert_ptr_nonnull(img);
	ck_assert_int_eq(tb_check_init(&c, NULL, NULL, 0), TB_OK);
	ck_assert_int_eq(tb_check_trace(&c, img, 16), TB_EFRAMING);
	ck_assert_uint_eq(c.max_bytes, TB_CHECK_BUDGET);
	tb_check_destroy(&c);
	ck_assert_int_eq(tb_check_init(&c, NULL, NULL, 0), TB_OK);
	ck_assert_int_eq(tb_check_trace(&c, img, len), TB_EFRAMING);
	ck_assert_uint_eq(c.max_bytes, len * TB_CHECK_BUDGET_PER_BYTE);
	tb_check_destroy(&c);
	ck_assert_int_eq(tb_check_init(&c, NULL, NULL, 1u << 20), TB_OK);
	ck_assert_int_eq(tb_check_trace(&c, img, len), TB_EFRAMING);
	ck_assert_uint_eq(c.max_bytes, 1u << 20);
	tb_check_destroy(&c);
	free(img);
}
END_TEST

START_TEST(test_clean_trace_with_every_feature_is_clean)
{
	struct trace t = { 0 };
	struct msg ev, id, td, pd, da, def, body;

	/* a process track, two thread tracks on two sequences */
	memset(&td, 0, sizeof(td));
	memset(&pd, 0, sizeof(pd));
	m_uint(&pd, PD_PID, PID);
	m_uint(&td, TD_UUID, 500);
	m_msg(&td, TD_PROCESS, &pd);
	t_pkt(&t, 0x10001, 5, CLEARED, NULL, &td, NULL, 0);
	t_start(&t, 0x10002);
	t_start(&t, 0x10003);
	t_counter_track(&t, 0x10002, 600);
	t_child(&t, 0x10002, 700, 500);
	/* interned names, categories, annotation names, on a cleared
	 * sequence, used by packets that say they need them */
	memset(&id, 0, sizeof(id));
	intern(&id, ID_NAMES, 1, "HandleRequest");
	intern(&id, ID_CATEGORIES, 1, "rpc");
	intern(&id, ID_ANNOTATION_NAMES, 1, "seq");
	intern(&id, ID_SOURCES, 1, "main.c");
	ev_init(&ev, BEGIN, 0x10002);
	m_uint(&ev, TE_NAME_IID, 1);
	m_uint(&ev, TE_CATEGORY_IIDS, 1);
	m_uint(&ev, TE_SOURCE_IID, 1);
	memset(&da, 0, sizeof(da));
	m_uint(&da, DA_NAME_IID, 1);
	m_uint(&da, DA_UINT, 7);
	m_msg(&ev, TE_ANNOTATIONS, &da);
	t_pkt(&t, 0x10002, 100, NEEDS, &ev, NULL, &id, 0);
	t_event(&t, 0x10002, 110, BEGIN, 0x10002, 0);
	t_event(&t, 0x10002, 120, INSTANT, 0x10002, 0);
	t_event(&t, 0x10002, 130, END, 0x10002, 0);
	t_event(&t, 0x10002, 140, END, 0x10002, 0);
	/* a counter, and extra counter values on a slice */
	ev_init(&ev, COUNTER, 600);
	m_uint(&ev, TE_COUNTER, 12);
	t_pkt(&t, 0x10002, 150, 0, &ev, NULL, NULL, 0);
	ev_init(&ev, INSTANT, 700);
	m_uint(&ev, TE_XC_UUIDS, 600);
	m_uint(&ev, TE_XC_VALUES, 13);
	t_pkt(&t, 0x10002, 160, 0, &ev, NULL, NULL, 0);
	/* a sequence whose default track comes from TrackEventDefaults */
	memset(&body, 0, sizeof(body));
	memset(&def, 0, sizeof(def));
	memset(&td, 0, sizeof(td));
	m_uint(&td, TED_TRACK, 0x10003);
	m_msg(&def, DEF_TRACK_EVENT, &td);
	m_msg(&body, TP_DEFAULTS, &def);
	t_raw(&t, &body, HAS_ALL, 0x10003, UID, PID, 0);
	t_event(&t, 0x10003, 200, BEGIN, 0, 0);
	t_event(&t, 0x10003, 210, END, 0, 0);
	/* no track at all, no thread: the implicit global track */
	t_event(&t, 0x10004, 300, INSTANT, 0, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_clean();
	ck_assert_uint_eq(ck.stats.packets, t.packets);
	ck_assert_uint_eq(ck.stats.slice_begins, 3);
	ck_assert_uint_eq(ck.stats.slice_ends, 3);
	ck_assert_uint_eq(ck.stats.instants, 3);
	ck_assert_uint_eq(ck.stats.counters, 1);
	ck_assert_uint_eq(ck.stats.global_track_events, 1);
	ck_assert_uint_eq(ck.stats.descriptors, 5);
	ck_assert_uint_eq(ck.stats.open_slices, 0);
	ck_assert_uint_eq(ck.nseqs, 4);
	ck_assert_uint_eq(ck.seqs[1].seq_id, 0x10002);
	ck_assert_uint_eq(ck.seqs[1].pid, PID);
	ck_assert_uint_eq(ck.seqs[1].uid, UID);
	done();
	t_free(&t);
}
END_TEST

START_TEST(test_event_without_track_lands_on_its_sequence_thread)
{
	struct trace t = { 0 };
	uint32_t i;

	/* the thread descriptor's pid and tid become the sequence's */
	t_thread(&t, 9, 77, PID, 5, CLEARED);
	t_event(&t, 9, 100, BEGIN, 0, 0);
	t_event(&t, 9, 110, END, 0, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_clean();
	ck_assert_uint_eq(ck.stats.global_track_events, 0);
	for (i = 0; i < ck.ntracks; i++)
		if (ck.tracks[i].kind == TB_CHECK_TRACK_SEQ_THREAD)
			break;
	ck_assert_uint_lt(i, ck.ntracks);
	ck_assert_uint_eq(ck.tracks[i].tid, 5);
	ck_assert_uint_eq(ck.tracks[i].events, 2);
	done();
	t_free(&t);
}
END_TEST

/* Writes packets through a central buffer and the trace writer. */
struct mem {
	uint8_t *p;
	size_t len, cap;
};

static int mem_write(void *ctx, const void *d, size_t n)
{
	struct mem *m = (struct mem *)ctx;
	struct trace t = { m->p, m->len, m->cap, 0 };

	t_put(&t, d, n);
	m->p = t.p;
	m->len = t.len;
	m->cap = t.cap;
	return 0;
}

/* Commits the TracePacket bodies @m[0..n) as chunk @id of writer 1. */
static void commit(struct tb_buf *b, uint32_t id, const struct msg *m,
		   unsigned n)
{
	struct tb_buf_frag fr[4];
	struct tb_buf_chunk_in in;
	unsigned i;

	for (i = 0; i < n; i++) {
		fr[i].data = m[i].b;
		fr[i].size = (uint32_t)m[i].n;
	}
	memset(&in, 0, sizeof(in));
	in.producer_id = 3;
	in.ident.uid = UID;
	in.ident.pid = PID;
	in.writer_id = 1;
	in.chunk_id = id;
	in.complete = true;
	ck_assert_int_eq(tb_buf_copy_frags(b, &in, fr, n), TB_OK);
}

static void body_event(struct msg *m, uint64_t ts, unsigned type)
{
	struct msg ev;

	memset(m, 0, sizeof(*m));
	ev_init(&ev, type, 0x30001);
	m_uint(m, TP_TIMESTAMP, ts);
	m_msg(m, TP_TRACK_EVENT, &ev);
}

/*
 * Through the real pipeline: a clean run is clean, and a chunk the buffer
 * never got (a gap in the writer's chunk ids) costs its BEGIN; the END
 * after it carries the buffer's loss flag, which explains it.
 */
static void pipeline(int lose_chunk)
{
	struct tb_trace_out out;
	struct msg m[3], td, th;
	struct mem mo = { NULL, 0, 0 };
	struct tb_buf *b = tb_buf_create(1 << 16, TB_BUF_RING_BUFFER);
	struct trace t;

	ck_assert_ptr_nonnull(b);
	memset(&m[0], 0, sizeof(m[0]));
	memset(&td, 0, sizeof(td));
	memset(&th, 0, sizeof(th));
	m_uint(&th, PD_PID, PID);
	m_uint(&th, THD_TID, 1);
	m_uint(&td, TD_UUID, 0x30001);
	m_msg(&td, TD_THREAD, &th);
	m_uint(&m[0], TP_TIMESTAMP, 50);
	m_uint(&m[0], TP_FLAGS, CLEARED);
	m_msg(&m[0], TP_TRACK_DESC, &td);
	body_event(&m[1], 100, BEGIN);
	body_event(&m[2], 200, END);
	commit(b, 0, &m[0], 1);
	if (!lose_chunk)
		commit(b, 1, &m[1], 1);
	commit(b, 2, &m[2], 1);
	memset(&out, 0, sizeof(out));
	out.write = mem_write;
	out.ctx = &mo;
	ck_assert_int_eq(tb_trace_write(&out, b), 3 - lose_chunk);
	t.p = mo.p;
	t.len = mo.len;
	ck_assert_int_eq(run(&t), TB_OK);
	if (lose_chunk)
		expect_only(TB_CK_END_WITHOUT_BEGIN, 0, 1);
	else
		expect_clean();
	ck_assert_uint_eq(ck.nseqs, 1);
	ck_assert_uint_eq(ck.seqs[0].seq_id, tb_trace_seq_id(3, 1));
	ck_assert_uint_eq(ck.seqs[0].lossy_packets, (uint64_t)lose_chunk);
	done();
	free(mo.p);
	tb_buf_destroy(b);
}

START_TEST(test_trace_written_by_tbtrace_is_clean)
{
	pipeline(0);
}
END_TEST

START_TEST(test_buffer_gap_explains_the_end_it_orphans)
{
	pipeline(1);
}
END_TEST

/* ------------------------------------------------------------------------
 * The image itself and the trusted fields.
 */
START_TEST(test_not_a_trace_stops_the_check)
{
	struct trace t = { 0 };
	uint8_t junk[] = { 0x10, 0x05 };	/* field 2, varint */
	uint8_t bad[] = { 0x0a, 0x02, 0xff, 0xff };	/* not protobuf */

	t_start(&t, 5);
	t_put(&t, junk, sizeof(junk));
	ck_assert_int_eq(run(&t), TB_EFRAMING);
	expect_only(TB_CK_NOT_A_TRACE, 1, 0);
	ck_assert_uint_eq(ck.rule[TB_CK_NOT_A_TRACE].first, 1);
	ck_assert_uint_eq(ck.rule[TB_CK_NOT_A_TRACE].first_offset,
			  t.len - sizeof(junk));
	done();
	t.len -= sizeof(junk);
	t_put(&t, bad, sizeof(bad));
	ck_assert_int_eq(run(&t), TB_EFRAMING);
	expect_only(TB_CK_NOT_A_TRACE, 1, 0);
	done();
	t_free(&t);
}
END_TEST

START_TEST(test_trace_cut_inside_its_last_packet_is_truncated)
{
	struct trace t = { 0 };

	t_start(&t, 5);
	t_event(&t, 5, 100, INSTANT, 5, 0);
	t_event(&t, 5, 110, INSTANT, 5, 0);
	t.len -= 3;
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_TRUNCATED, 1, 0);
	ck_assert_uint_eq(ck.rule[TB_CK_TRUNCATED].first, 2);
	ck_assert_uint_eq(ck.stats.packets, 2);
	done();
	t_free(&t);
}
END_TEST

START_TEST(test_packets_without_trusted_fields)
{
	struct trace t = { 0 };
	struct msg b = { { 0 }, 0 };

	m_uint(&b, TP_TIMESTAMP, 10);
	t_raw(&t, &b, HAS_ALL & ~HAS_UID, 5, UID, PID, 0);
	t_raw(&t, &b, HAS_ALL & ~HAS_PID, 5, UID, PID, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect(TB_CK_NO_UID, 1, 0);
	expect(TB_CK_NO_PID, 1, 0);
	expect(TB_CK_NO_SEQ_ID, 0, 0);
	ck_assert(!tb_check_clean(&ck));
	done();
	t_raw(&t, &b, HAS_ALL & ~HAS_SEQ, 5, UID, PID, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect(TB_CK_NO_SEQ_ID, 1, 0);
	ck_assert_uint_eq(ck.rule[TB_CK_NO_SEQ_ID].first, 2);
	done();
	t_free(&t);
}
END_TEST

START_TEST(test_needs_incremental_state_without_sequence_stops_import)
{
	struct trace t = { 0 };
	struct msg b = { { 0 }, 0 };

	m_uint(&b, TP_TIMESTAMP, 10);
	m_uint(&b, TP_FLAGS, NEEDS);
	t_raw(&t, &b, HAS_UID | HAS_PID, 0, UID, PID, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect(TB_CK_IMPORT_ERROR, 1, 0);
	expect(TB_CK_NO_SEQ_ID, 1, 0);
	done();
	t_free(&t);
}
END_TEST

START_TEST(test_reserved_sequence_ids)
{
	struct trace t = { 0 };

	t_bare(&t, 1, 10, 0);		/* the service's own */
	t_bare(&t, 0, 10, 0);		/* invalid */
	t_bare(&t, 2, 10, 0);		/* the first a service hands out */
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_SEQ_RESERVED, 2, 0);
	ck_assert_uint_eq(ck.rule[TB_CK_SEQ_RESERVED].first, 0);
	done();
	t_free(&t);
}
END_TEST

START_TEST(test_sequence_id_claimed_by_two_processes_collides)
{
	struct trace t = { 0 };
	struct msg b = { { 0 }, 0 };

	m_uint(&b, TP_TIMESTAMP, 10);
	t_raw(&t, &b, HAS_ALL, 7, UID, PID, 0);
	t_raw(&t, &b, HAS_ALL, 7, UID, PID, 0);
	t_raw(&t, &b, HAS_ALL, 7, UID, PID + 1, 0);
	t_raw(&t, &b, HAS_ALL, 7, UID + 1, PID, 0);
	t_raw(&t, &b, HAS_ALL, 8, UID + 1, PID + 1, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_SEQ_COLLISION, 2, 0);
	ck_assert_uint_eq(ck.rule[TB_CK_SEQ_COLLISION].first, 2);
	ck_assert_uint_eq(ck.rule[TB_CK_SEQ_COLLISION].first_seq, 7);
	done();
	t_free(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * Incremental state.
 */
START_TEST(test_needs_state_before_any_clear_is_skipped)
{
	struct trace t = { 0 };
	struct msg ev;

	/* nothing cleared the state yet: the packet is skipped */
	t_thread(&t, 5, 5, PID, 5, 0);
	ev_init(&ev, INSTANT, 5);
	m_str(&ev, TE_NAME, "x");
	t_pkt(&t, 5, 100, NEEDS, &ev, NULL, NULL, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_NEEDS_STATE, 1, 0);
	ck_assert_uint_eq(ck.seqs[0].skipped, 1);
	ck_assert_uint_eq(ck.stats.instants, 0);
	done();
	t_free(&t);
}
END_TEST

START_TEST(test_needs_state_after_a_loss_is_explained)
{
	struct trace t = { 0 };
	struct msg ev;

	t_start(&t, 5);
	ev_init(&ev, INSTANT, 5);
	m_str(&ev, TE_NAME, "x");
	t_pkt(&t, 5, 100, NEEDS, &ev, NULL, NULL, 0);	/* fine */
	t_bare(&t, 5, 110, LOSS);			/* state lost */
	t_pkt(&t, 5, 120, NEEDS, &ev, NULL, NULL, 0);	/* skipped */
	t_pkt(&t, 5, 130, CLEARED | NEEDS, &ev, NULL, NULL, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_NEEDS_STATE, 0, 1);
	ck_assert_uint_eq(ck.rule[TB_CK_NEEDS_STATE].first_explained, 3);
	ck_assert_uint_eq(ck.stats.instants, 2);
	done();
	t_free(&t);
}
END_TEST

START_TEST(test_interned_data_while_invalid_is_ignored)
{
	struct trace t = { 0 };
	struct msg id = { { 0 }, 0 };

	intern(&id, ID_NAMES, 1, "a");
	t_pkt(&t, 5, 10, 0, NULL, NULL, &id, 0);	/* never cleared */
	t_pkt(&t, 5, 20, CLEARED, NULL, NULL, &id, 0);	/* taken */
	t_bare(&t, 5, 30, LOSS);
	t_pkt(&t, 5, 40, 0, NULL, NULL, &id, 0);	/* after a loss */
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_INTERNED_IGNORED, 1, 1);
	ck_assert_uint_eq(ck.rule[TB_CK_INTERNED_IGNORED].first, 0);
	done();
	t_free(&t);
}
END_TEST

START_TEST(test_interned_entry_without_iid_or_redefined)
{
	struct trace t = { 0 };
	struct msg id = { { 0 }, 0 }, e = { { 0 }, 0 };

	m_str(&e, IE_NAME, "no iid");
	m_msg(&id, ID_NAMES, &e);
	intern(&id, ID_NAMES, 1, "a");
	t_pkt(&t, 5, 10, CLEARED, NULL, NULL, &id, 0);
	memset(&id, 0, sizeof(id));
	intern(&id, ID_NAMES, 1, "a");		/* the same again: fine */
	t_pkt(&t, 5, 20, 0, NULL, NULL, &id, 0);
	memset(&id, 0, sizeof(id));
	intern(&id, ID_NAMES, 1, "b");		/* another value */
	t_pkt(&t, 5, 30, 0, NULL, NULL, &id, 0);
	t_pkt(&t, 5, 40, CLEARED, NULL, NULL, &id, 0);	/* new generation */
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_INTERNED_BAD, 2, 0);
	done();
	t_free(&t);
}
END_TEST

/* An event using name iid @name, on sequence 5's thread track. */
static void t_named(struct trace *t, uint64_t ts, uint64_t name,
		    uint32_t loss)
{
	struct msg ev;

	ev_init(&ev, INSTANT, 5);
	m_uint(&ev, TE_NAME_IID, name);
	t_pkt(t, 5, ts, 0, &ev, NULL, NULL, loss);
}

START_TEST(test_name_iid_resolves_only_since_the_last_clear)
{
	struct trace t = { 0 };
	struct msg id = { { 0 }, 0 };

	intern(&id, ID_NAMES, 1, "a");
	t_start(&t, 5);
	t_pkt(&t, 5, 20, 0, NULL, NULL, &id, 0);
	t_named(&t, 30, 1, 0);			/* resolves */
	t_named(&t, 40, 2, 0);			/* never interned */
	t_pkt(&t, 5, 50, CLEARED, NULL, NULL, NULL, 0);
	t_named(&t, 60, 1, 0);			/* before the clear */
	t_pkt(&t, 6, 70, CLEARED, NULL, NULL, &id, 0);	/* another seq */
	t_named(&t, 80, 1, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_IID_NAME, 3, 0);
	ck_assert_uint_eq(ck.rule[TB_CK_IID_NAME].first, 3);
	ck_assert_uint_eq(ck.rule[TB_CK_IID_NAME].first_detail, 2);
	done();
	t_free(&t);
}
END_TEST

START_TEST(test_name_iid_lost_with_its_packet_is_explained)
{
	struct trace t = { 0 };

	/* the packet that interned iid 1 was lost; the next one says so */
	t_start(&t, 5);
	t_named(&t, 30, 1, LOSS);
	t_named(&t, 40, 1, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_IID_NAME, 0, 2);
	done();
	t_free(&t);
}
END_TEST

START_TEST(test_category_annotation_and_source_iids)
{
	struct trace t = { 0 };
	struct msg ev, da, dict, id = { { 0 }, 0 };
	uint8_t packed[2] = { 1, 9 };

	intern(&id, ID_CATEGORIES, 1, "cat");
	intern(&id, ID_ANNOTATION_NAMES, 1, "key");
	intern(&id, ID_SOURCES, 1, "file.c");
	t_start(&t, 5);
	t_pkt(&t, 5, 20, 0, NULL, NULL, &id, 0);
	ev_init(&ev, INSTANT, 5);
	m_str(&ev, TE_NAME, "x");
	m_uint(&ev, TE_CATEGORY_IIDS, 1);
	m_uint(&ev, TE_CATEGORY_IIDS, 3);		/* unknown */
	m_bytes(&ev, TE_CATEGORY_IIDS, packed, 2);	/* 1, and 9 */
	memset(&da, 0, sizeof(da));
	memset(&dict, 0, sizeof(dict));
	m_uint(&dict, DA_NAME_IID, 4);			/* unknown, nested */
	m_uint(&da, DA_NAME_IID, 1);
	m_msg(&da, DA_DICT, &dict);
	m_msg(&ev, TE_ANNOTATIONS, &da);
	m_uint(&ev, TE_SOURCE_IID, 2);			/* unknown */
	t_pkt(&t, 5, 30, 0, &ev, NULL, NULL, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect(TB_CK_IID_CATEGORY, 2, 0);
	expect(TB_CK_IID_ANNOTATION, 1, 0);
	expect(TB_CK_IID_SOURCE, 1, 0);
	expect(TB_CK_IID_NAME, 0, 0);
	ck_assert_uint_eq(tb_check_total(&ck, false), 4);
	ck_assert_uint_eq(tb_check_total(&ck, true), 0);
	done();
	/* the same event after a loss flag: the entries may have been lost */
	t_pkt(&t, 5, 40, 0, &ev, NULL, NULL, LOSS);
	ck_assert_int_eq(run(&t), TB_OK);
	expect(TB_CK_IID_CATEGORY, 2, 2);
	expect(TB_CK_IID_ANNOTATION, 1, 1);
	expect(TB_CK_IID_SOURCE, 1, 1);
	done();
	t_free(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * Tracks.
 */
START_TEST(test_bad_descriptors_are_ignored)
{
	struct trace t = { 0 };
	struct msg td, th, pd;

	memset(&td, 0, sizeof(td));
	memset(&th, 0, sizeof(th));
	m_uint(&th, PD_PID, PID);			/* no tid */
	m_uint(&td, TD_UUID, 50);
	m_msg(&td, TD_THREAD, &th);
	t_pkt(&t, 5, 10, CLEARED, NULL, &td, NULL, 0);
	memset(&td, 0, sizeof(td));
	memset(&pd, 0, sizeof(pd));
	m_msg(&td, TD_PROCESS, &pd);			/* no uuid, no pid */
	t_pkt(&t, 5, 10, 0, NULL, &td, NULL, 0);
	memset(&td, 0, sizeof(td));
	m_uint(&td, TD_UUID, 51);
	m_msg(&td, TD_PROCESS, &pd);			/* no pid */
	t_pkt(&t, 5, 10, 0, NULL, &td, NULL, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_DESCRIPTOR_BAD, 3, 0);
	done();
	t_event(&t, 5, 20, INSTANT, 50, 0);		/* on an ignored one */
	ck_assert_int_eq(run(&t), TB_OK);
	expect(TB_CK_TRACK_UNKNOWN, 1, 0);
	done();
	t_free(&t);
}
END_TEST

START_TEST(test_descriptor_redefining_a_track_conflicts)
{
	struct trace t = { 0 };

	t_thread(&t, 5, 50, PID, 1, CLEARED);
	t_thread(&t, 5, 50, PID, 1, 0);			/* the same: fine */
	t_thread(&t, 6, 50, PID, 2, CLEARED);		/* another thread */
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_DESCRIPTOR_CONFLICT, 1, 0);
	ck_assert_uint_eq(ck.rule[TB_CK_DESCRIPTOR_CONFLICT].first, 2);
	done();
	t_free(&t);
}
END_TEST

/*
 * The importer keeps an event on a uuid no descriptor names, on a nameless
 * track at the root (TrackEventTracker::ResolveDescriptorTrackImpl()): a
 * violation (it is misplaced), but the slices there still match.
 */
START_TEST(test_event_on_a_track_no_descriptor_names)
{
	struct trace t = { 0 };
	uint32_t i;

	t_start(&t, 5);
	t_event(&t, 5, 20, INSTANT, 99, 0);
	t_event(&t, 5, 30, INSTANT, 5, 0);
	t_event(&t, 5, 40, BEGIN, 99, 0);
	t_event(&t, 5, 50, END, 99, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_TRACK_UNKNOWN, 3, 0);
	ck_assert_uint_eq(ck.rule[TB_CK_TRACK_UNKNOWN].first, 1);
	ck_assert_uint_eq(ck.rule[TB_CK_TRACK_UNKNOWN].first_detail, 99);
	ck_assert_uint_eq(ck.stats.instants, 2);
	ck_assert_uint_eq(ck.stats.open_slices, 0);
	for (i = 0; i < ck.ntracks && ck.tracks[i].uuid != 99; i++)
		;
	ck_assert_uint_lt(i, ck.ntracks);
	ck_assert_uint_eq(ck.tracks[i].events, 3);
	ck_assert_int_eq(ck.tracks[i].kind, TB_CHECK_TRACK_UNDEFINED);
	done();
	t_free(&t);
}
END_TEST

START_TEST(test_descriptor_later_in_the_trace_names_the_track)
{
	struct trace t = { 0 };

	t_pkt(&t, 5, 10, CLEARED, NULL, NULL, NULL, 0);
	t_event(&t, 5, 20, INSTANT, 77, 0);
	t_thread(&t, 6, 77, PID, 3, CLEARED);		/* any sequence */
	ck_assert_int_eq(run(&t), TB_OK);
	expect_clean();
	done();
	t_free(&t);
}
END_TEST

START_TEST(test_lost_descriptor_is_explained_until_the_next_clear)
{
	struct trace t = { 0 };

	/* the descriptor of track 99 was overwritten */
	t_bare(&t, 5, 10, LOSS);
	t_event(&t, 5, 20, INSTANT, 99, 0);
	t_pkt(&t, 5, 30, CLEARED, NULL, NULL, NULL, 0);	/* fresh state */
	t_event(&t, 5, 40, INSTANT, 99, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_TRACK_UNKNOWN, 1, 1);
	ck_assert_uint_eq(ck.rule[TB_CK_TRACK_UNKNOWN].first, 3);
	ck_assert_uint_eq(ck.rule[TB_CK_TRACK_UNKNOWN].first_explained, 1);
	done();
	t_free(&t);
}
END_TEST

START_TEST(test_default_track_from_track_event_defaults)
{
	struct trace t = { 0 };
	struct msg body = { { 0 }, 0 }, def = { { 0 }, 0 },
		   ted = { { 0 }, 0 };

	m_uint(&ted, TED_TRACK, 88);			/* no descriptor */
	m_msg(&def, DEF_TRACK_EVENT, &ted);
	m_uint(&body, TP_FLAGS, CLEARED);
	m_msg(&body, TP_DEFAULTS, &def);
	t_raw(&t, &body, HAS_ALL, 5, UID, PID, 0);
	t_event(&t, 5, 20, INSTANT, 0, 0);		/* on track 88 */
	t_pkt(&t, 5, 30, CLEARED, NULL, NULL, NULL, 0);	/* defaults go */
	t_event(&t, 5, 40, INSTANT, 0, 0);		/* global track */
	ck_assert_int_eq(run(&t), TB_OK);
	expect(TB_CK_TRACK_UNKNOWN, 1, 0);
	ck_assert_uint_eq(ck.rule[TB_CK_TRACK_UNKNOWN].first_detail, 88);
	ck_assert_uint_eq(ck.stats.global_track_events, 1);
	/* the clear dropped the defaults the event relied on */
	expect(TB_CK_DEFAULTS_LOST, 1, 0);
	ck_assert_uint_eq(ck.rule[TB_CK_DEFAULTS_LOST].first, 3);
	done();
	t_free(&t);
}
END_TEST

/*
 * IsTrackHierarchyValid() walks at most 100 uuids, the track's own
 * first, and must reach uuid 0: 98 parent links above a track are the
 * most it takes.
 */
START_TEST(test_parent_chain_that_loops_or_runs_too_deep)
{
	struct trace t = { 0 };
	uint64_t i;

	t_start(&t, 5);
	t_child(&t, 5, 101, 102);
	t_child(&t, 5, 102, 101);
	t_event(&t, 5, 20, INSTANT, 101, 0);		/* loops */
	t_child(&t, 5, 103, 103);
	t_event(&t, 5, 25, INSTANT, 103, 0);		/* its own parent */
	for (i = 1000; i < 1099; i++)			/* 98 links: fine */
		t_child(&t, 5, i, i == 1098 ? 0 : i + 1);
	t_event(&t, 5, 30, INSTANT, 1000, 0);
	t_child(&t, 5, 999, 1000);			/* 99 links */
	t_event(&t, 5, 40, INSTANT, 999, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_TRACK_LOOP, 3, 0);
	ck_assert_uint_eq(ck.rule[TB_CK_TRACK_LOOP].first_detail, 101);
	ck_assert_uint_eq(ck.stats.instants, 1);
	done();
	t_free(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * Track events.
 */
START_TEST(test_malformed_track_event)
{
	struct trace t = { 0 };
	struct msg body = { { 0 }, 0 };
	uint8_t junk[] = { 0x48, 0x80 };		/* type, cut varint */

	t_start(&t, 5);
	m_uint(&body, TP_TIMESTAMP, 20);
	m_bytes(&body, TP_TRACK_EVENT, junk, sizeof(junk));
	t_raw(&t, &body, HAS_ALL, 5, UID, PID, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_EVENT_MALFORMED, 1, 0);
	done();
	t_free(&t);
}
END_TEST

START_TEST(test_track_event_without_timestamp_or_type)
{
	struct trace t = { 0 };

	t_start(&t, 5);
	t_event(&t, 5, NO_TS, INSTANT, 5, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_EVENT_NO_TIME, 1, 0);
	done();
	t_event(&t, 5, 20, 0, 5, 0);			/* no type */
	t_event(&t, 5, 30, 7, 5, 0);			/* unknown type */
	ck_assert_int_eq(run(&t), TB_OK);
	expect(TB_CK_EVENT_NO_TYPE, 2, 0);
	ck_assert_uint_eq(ck.stats.instants, 0);
	done();
	t_free(&t);
}
END_TEST

START_TEST(test_counter_values_need_a_counter_track)
{
	struct trace t = { 0 };
	struct msg ev;

	t_start(&t, 5);
	t_counter_track(&t, 5, 600);
	ev_init(&ev, COUNTER, 600);
	m_uint(&ev, TE_COUNTER, 1);
	t_pkt(&t, 5, 20, 0, &ev, NULL, NULL, 0);	/* fine */
	ev_init(&ev, COUNTER, 5);			/* a thread track */
	m_uint(&ev, TE_COUNTER, 1);
	t_pkt(&t, 5, 30, 0, &ev, NULL, NULL, 0);
	ev_init(&ev, COUNTER, 600);			/* no value */
	t_pkt(&t, 5, 40, 0, &ev, NULL, NULL, 0);
	ev_init(&ev, INSTANT, 5);			/* extra, on a thread */
	m_uint(&ev, TE_XC_UUIDS, 5);
	m_uint(&ev, TE_XC_VALUES, 3);
	t_pkt(&t, 5, 50, 0, &ev, NULL, NULL, 0);
	ev_init(&ev, INSTANT, 5);			/* more values */
	m_uint(&ev, TE_XC_UUIDS, 600);
	m_uint(&ev, TE_XC_VALUES, 3);
	m_uint(&ev, TE_XC_VALUES, 4);
	t_pkt(&t, 5, 60, 0, &ev, NULL, NULL, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_COUNTER_BAD, 4, 0);
	ck_assert_uint_eq(ck.stats.counters, 1);
	done();
	t_free(&t);
}
END_TEST

/* A packet with a timestamp on clock @clock (and an instant event). */
static void t_clocked(struct trace *t, uint32_t seq, uint32_t clock,
		      uint32_t loss)
{
	struct msg body = { { 0 }, 0 }, ev;

	ev_init(&ev, INSTANT, seq);
	m_str(&ev, TE_NAME, "x");
	m_uint(&body, TP_TIMESTAMP, 1000);
	m_uint(&body, TP_CLOCK_ID, clock);
	m_msg(&body, TP_TRACK_EVENT, &ev);
	t_raw(t, &body, HAS_ALL, seq, UID, PID, loss);
}

/* A clock snapshot relating clocks @a and @b, on @seq. */
static void t_snapshot(struct trace *t, uint32_t seq, uint32_t a, uint32_t b)
{
	struct msg body = { { 0 }, 0 }, cs = { { 0 }, 0 }, clk;

	memset(&clk, 0, sizeof(clk));
	m_uint(&clk, CLK_ID, a);
	m_uint(&clk, CLK_TS, 5000);
	m_msg(&cs, CS_CLOCKS, &clk);
	memset(&clk, 0, sizeof(clk));
	m_uint(&clk, CLK_ID, b);
	m_uint(&clk, CLK_TS, 9000);
	m_msg(&cs, CS_CLOCKS, &clk);
	m_msg(&body, TP_CLOCK_SNAPSHOT, &cs);
	t_raw(t, &body, HAS_ALL, seq, UID, PID, 0);
}

START_TEST(test_clock_without_a_snapshot_to_the_trace_clock)
{
	struct trace t = { 0 };

	t_start(&t, 5);
	t_start(&t, 6);
	t_clocked(&t, 5, 6, 0);			/* BOOTTIME: the trace's */
	t_clocked(&t, 5, 3, 0);			/* MONOTONIC: no snapshot */
	t_clocked(&t, 5, 64, 0);		/* sequence 5's own clock */
	t_clocked(&t, 6, 64, 0);		/* ... not sequence 6's */
	t_clocked(&t, 6, 64, LOSS);		/* its snapshot lost */
	t_clocked(&t, 5, 1, 0);			/* REALTIME, via MONOTONIC */
	t_snapshot(&t, 5, 64, 6);		/* later in the file */
	t_snapshot(&t, 7, 1, 3);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_CLOCK_UNKNOWN, 3, 1);
	ck_assert_uint_eq(ck.rule[TB_CK_CLOCK_UNKNOWN].first, 3);
	ck_assert_uint_eq(ck.rule[TB_CK_CLOCK_UNKNOWN].first_detail, 3);
	ck_assert_uint_eq(ck.stats.instants, 2);
	ck_assert_uint_eq(ck.stats.clock_snapshots, 2);
	done();
	t_snapshot(&t, 8, 3, 6);		/* now MONOTONIC relates */
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_CLOCK_UNKNOWN, 1, 1);
	done();
	t_free(&t);
}
END_TEST

START_TEST(test_timestamps_going_back_on_a_sequence)
{
	struct trace t = { 0 };

	t_start(&t, 5);
	t_start(&t, 6);
	t_event(&t, 5, 200, INSTANT, 5, 0);
	t_event(&t, 6, 100, INSTANT, 6, 0);	/* another sequence: fine */
	t_event(&t, 5, 200, INSTANT, 5, 0);	/* equal: fine */
	t_event(&t, 5, 150, INSTANT, 5, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_TIME_BACKWARDS, 1, 0);
	ck_assert_uint_eq(ck.rule[TB_CK_TIME_BACKWARDS].first, 5);
	done();
	t_free(&t);
}
END_TEST

/* A snapshot of clock @id at @ts (@unit ns each, incremental when @inc)
 * and BOOTTIME at 9000, on @seq. */
static void t_inc_snapshot(struct trace *t, uint32_t seq, uint32_t id,
			   uint64_t ts, uint64_t unit, int inc)
{
	struct msg body = { { 0 }, 0 }, cs = { { 0 }, 0 }, clk;

	memset(&clk, 0, sizeof(clk));
	m_uint(&clk, CLK_ID, id);
	m_uint(&clk, CLK_TS, ts);
	if (inc)
		m_uint(&clk, CLK_INCREMENTAL, 1);
	if (unit)
		m_uint(&clk, CLK_UNIT, unit);
	m_msg(&cs, CS_CLOCKS, &clk);
	memset(&clk, 0, sizeof(clk));
	m_uint(&clk, CLK_ID, 6);
	m_uint(&clk, CLK_TS, 9000);
	m_msg(&cs, CS_CLOCKS, &clk);
	m_msg(&body, TP_CLOCK_SNAPSHOT, &cs);
	t_raw(t, &body, HAS_ALL, seq, UID, PID, 0);
}

/* An instant at @ts on clock @clock, on @seq. */
static void t_at(struct trace *t, uint32_t seq, uint32_t clock, uint64_t ts)
{
	struct msg body = { { 0 }, 0 }, ev;

	ev_init(&ev, INSTANT, seq);
	m_str(&ev, TE_NAME, "x");
	m_uint(&body, TP_TIMESTAMP, ts);
	m_uint(&body, TP_CLOCK_ID, clock);
	m_msg(&body, TP_TRACK_EVENT, &ev);
	t_raw(t, &body, HAS_ALL, seq, UID, PID, 0);
}

/*
 * An incremental clock (clock_snapshot.proto: is_incremental): each
 * timestamp on it is a delta, added in file order to its latest time,
 * which its snapshot sets, in its unit; a negative delta (a uint64 the
 * importer reads as int64) goes back.  Read as absolute, 500 then 10
 * would go back; as deltas they go forward.
 */
START_TEST(test_incremental_clock_timestamps_are_deltas)
{
	struct trace t = { 0 };

	t_start(&t, 5);
	t_inc_snapshot(&t, 5, 64, 1000, 0, 1);
	t_at(&t, 5, 64, 500);			/* 1500 */
	t_at(&t, 5, 64, 10);			/* 1510 */
	t_at(&t, 5, 64, 0);			/* 1510: equal is fine */
	t_inc_snapshot(&t, 5, 64, 2000, 0, 1);	/* a new base */
	t_at(&t, 5, 64, 1);			/* 2001 */
	t_start(&t, 6);				/* in units of 10 ns */
	t_inc_snapshot(&t, 6, 65, 100, 10, 1);
	t_at(&t, 6, 65, 3);			/* 1030 */
	t_at(&t, 6, 65, 2);			/* 1050 */
	ck_assert_int_eq(run(&t), TB_OK);
	expect_clean();
	ck_assert_uint_eq(ck.stats.instants, 6);
	done();
	t_at(&t, 5, 64, (uint64_t)-2);		/* 1999: back */
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_TIME_BACKWARDS, 1, 0);
	ck_assert_uint_eq(ck.rule[TB_CK_TIME_BACKWARDS].first_detail, 1999);
	done();
	t_free(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * Slices.
 */
START_TEST(test_end_without_begin)
{
	struct trace t = { 0 };

	t_start(&t, 5);
	t_event(&t, 5, 100, BEGIN, 5, 0);
	t_event(&t, 5, 110, END, 5, 0);
	t_event(&t, 5, 120, END, 5, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_END_WITHOUT_BEGIN, 1, 0);
	ck_assert_uint_eq(ck.rule[TB_CK_END_WITHOUT_BEGIN].first, 3);
	done();
	t_free(&t);
}
END_TEST

START_TEST(test_end_whose_begin_was_lost_is_explained)
{
	struct trace t = { 0 };

	t_start(&t, 5);
	t_event(&t, 5, 100, BEGIN, 5, 0);
	t_event(&t, 5, 110, END, 5, 0);
	/* the BEGIN of this END was lost: the END carries the flag */
	t_event(&t, 5, 130, END, 5, LOSS);
	t_event(&t, 5, 140, BEGIN, 5, 0);
	t_event(&t, 5, 150, END, 5, 0);
	/*
	 * The lost packets may have held two BEGINs, the END at 130 closing
	 * one: this END closes the other, after events the importer saw.
	 */
	t_event(&t, 5, 160, END, 5, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_END_WITHOUT_BEGIN, 0, 2);
	ck_assert_uint_eq(ck.rule[TB_CK_END_WITHOUT_BEGIN].first_explained,
			  3);
	done();
	t_free(&t);
}
END_TEST

/* A loss on another sequence says nothing about this one's slices. */
START_TEST(test_end_after_another_sequences_loss_is_a_violation)
{
	struct trace t = { 0 };

	t_start(&t, 5);
	t_start(&t, 6);
	t_event(&t, 6, 100, BEGIN, 6, LOSS);
	t_event(&t, 6, 105, END, 6, 0);
	t_event(&t, 5, 110, END, 5, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_END_WITHOUT_BEGIN, 1, 0);
	ck_assert_uint_eq(ck.rule[TB_CK_END_WITHOUT_BEGIN].first_seq, 5);
	done();
	t_free(&t);
}
END_TEST

START_TEST(test_slice_never_ended)
{
	struct trace t = { 0 };

	t_start(&t, 5);
	t_start(&t, 6);
	t_event(&t, 5, 100, BEGIN, 5, 0);	/* never ends */
	t_event(&t, 6, 100, BEGIN, 6, 0);	/* its END was lost: */
	t_event(&t, 6, 120, INSTANT, 6, LOSS);	/* flagged after it */
	t_event(&t, 5, 130, BEGIN, 5, 0);
	t_event(&t, 5, 140, END, 5, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_SLICE_NOT_ENDED, 1, 1);
	ck_assert_uint_eq(ck.rule[TB_CK_SLICE_NOT_ENDED].first, 2);
	ck_assert_uint_eq(ck.rule[TB_CK_SLICE_NOT_ENDED].first_seq, 5);
	ck_assert_uint_eq(ck.stats.open_slices, 2);
	done();
	t_free(&t);
}
END_TEST

START_TEST(test_loss_before_the_begin_explains_no_open_slice)
{
	struct trace t = { 0 };

	t_start(&t, 5);
	t_bare(&t, 5, 90, LOSS);
	t_event(&t, 5, 100, BEGIN, 5, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_SLICE_NOT_ENDED, 1, 0);
	done();
	/* unless the caller knows the trace lost its tail */
	ck_assert_int_eq(tb_check_init(&ck, NULL, NULL, 0), TB_OK);
	ck.tail_lost = true;
	ck_assert_int_eq(tb_check_trace(&ck, t.p, t.len), TB_OK);
	expect_only(TB_CK_SLICE_NOT_ENDED, 0, 1);
	done();
	t_free(&t);
}
END_TEST

START_TEST(test_loss_explains_only_what_loss_can_cause)
{
	struct trace t = { 0 };
	struct msg ev;

	t_start(&t, 5);
	t_event(&t, 5, 200, INSTANT, 5, LOSS);
	t_event(&t, 5, 150, INSTANT, 5, 0);		/* time went back */
	t_thread(&t, 5, 5, PID, 99, 0);			/* conflict */
	ev_init(&ev, COUNTER, 5);			/* not a counter */
	m_uint(&ev, TE_COUNTER, 1);
	t_pkt(&t, 5, 210, 0, &ev, NULL, NULL, 0);
	t_event(&t, 5, 220, 0, 5, 0);			/* no type */
	ck_assert_int_eq(run(&t), TB_OK);
	expect(TB_CK_TIME_BACKWARDS, 1, 0);
	expect(TB_CK_DESCRIPTOR_CONFLICT, 1, 0);
	expect(TB_CK_COUNTER_BAD, 1, 0);
	expect(TB_CK_EVENT_NO_TYPE, 1, 0);
	ck_assert_uint_eq(tb_check_total(&ck, true), 0);
	ck_assert_uint_eq(tb_check_total(&ck, false), 4);
	done();
	t_free(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * Reporting, memory, hostile input.
 */
struct seen {
	unsigned n;
	struct tb_check_violation v[8];
};

static void on_violation(void *ctx, const struct tb_check_violation *v)
{
	struct seen *s = (struct seen *)ctx;

	if (s->n < 8)
		s->v[s->n] = *v;
	s->n++;
}

START_TEST(test_every_violation_reaches_the_callback_once)
{
	struct trace t = { 0 };
	struct seen s = { 0, { { TB_CK_MAX, 0, 0, 0, 0, 0 } } };

	t_start(&t, 5);
	t_event(&t, 5, 100, INSTANT, 99, 0);
	t_event(&t, 5, 110, END, 5, LOSS);
	ck_assert_int_eq(tb_check_init(&ck, NULL, NULL, 0), TB_OK);
	ck.on_violation = on_violation;
	ck.ctx = &s;
	ck_assert_int_eq(tb_check_trace(&ck, t.p, t.len), TB_OK);
	ck_assert_uint_eq(s.n, 2);
	ck_assert_int_eq(s.v[0].rule, TB_CK_TRACK_UNKNOWN);
	ck_assert(!s.v[0].explained);
	ck_assert_uint_eq(s.v[0].packet, 1);
	ck_assert_uint_eq(s.v[0].seq_id, 5);
	ck_assert_uint_eq(s.v[0].detail, 99);
	ck_assert_int_eq(s.v[1].rule, TB_CK_END_WITHOUT_BEGIN);
	ck_assert(s.v[1].explained);
	ck_assert_uint_eq(s.v[1].packet, 2);
	done();
	t_free(&t);
}
END_TEST

/* A trace with a bit of everything, for the budget and fuzz tests. */
static void t_busy(struct trace *t)
{
	struct msg id = { { 0 }, 0 }, ev;
	uint32_t s, k;

	intern(&id, ID_NAMES, 1, "a");
	intern(&id, ID_CATEGORIES, 1, "c");
	for (s = 5; s < 9; s++) {
		t_start(t, s);
		t_pkt(t, s, 11, 0, NULL, NULL, &id, 0);
		t_counter_track(t, s, 1000 + s);
	}
	for (k = 0; k < 40; k++) {
		s = 5 + k % 4;
		ev_init(&ev, k % 3 ? BEGIN : END, s);
		m_uint(&ev, TE_NAME_IID, 1);
		m_uint(&ev, TE_CATEGORY_IIDS, k % 5);
		t_pkt(t, s, 100 + k, NEEDS, &ev, NULL, NULL,
		      k % 11 ? 0 : LOSS);
		ev_init(&ev, COUNTER, 1000 + s);
		m_uint(&ev, TE_COUNTER, k);
		t_pkt(t, s, 100 + k, 0, &ev, NULL, NULL, 0);
	}
}

START_TEST(test_budget_too_small_stops_the_check)
{
	struct trace t = { 0 };

	t_busy(&t);
	ck_assert_int_eq(tb_check_init(&ck, NULL, NULL, 2000), TB_OK);
	ck_assert_int_eq(tb_check_trace(&ck, t.p, t.len), TB_ELIMIT);
	expect(TB_CK_LIMIT, 1, 0);
	ck_assert(!tb_check_clean(&ck));
	ck_assert_uint_le(ck.used, 2000);
	done();
	t_free(&t);
}
END_TEST

/* An allocator that fails from the @fail_at-th call on and keeps count. */
struct counting {
	unsigned calls, fail_at;
	long live;
};

static void *counting_alloc(void *ctx, void *p, size_t old, size_t n)
{
	struct counting *a = (struct counting *)ctx;

	a->calls++;
	if (!n) {
		if (p)
			a->live--;
		free(p);
		return NULL;
	}
	(void)old;
	if (a->fail_at && a->calls >= a->fail_at)
		return NULL;
	if (!p)
		a->live++;
	return realloc(p, n);
}

START_TEST(test_allocator_failure_at_any_point_is_an_error)
{
	struct trace t = { 0 };
	struct counting a;
	unsigned at;
	int ret;

	t_busy(&t);
	for (at = 1; at < 40; at++) {
		memset(&a, 0, sizeof(a));
		a.fail_at = at;
		ck_assert_int_eq(tb_check_init(&ck, counting_alloc, &a, 0),
				 TB_OK);
		ret = tb_check_trace(&ck, t.p, t.len);
		ck_assert(ret == TB_OK || ret == TB_ENOMEM);
		if (ret)
			expect(TB_CK_LIMIT, 1, 0);
		tb_check_destroy(&ck);
		ck_assert_int_eq(a.live, 0);
	}
	t_free(&t);
}
END_TEST

START_TEST(test_hostile_images_never_crash_and_free_everything)
{
	struct trace t = { 0 };
	uint32_t seed = 12345, k, i, n;
	uint8_t *img;
	int ret;

	t_busy(&t);
	img = (uint8_t *)malloc(t.len);
	ck_assert_ptr_nonnull(img);
	for (k = 0; k < 3000; k++) {
		memcpy(img, t.p, t.len);
		n = 1 + k % 8;
		for (i = 0; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			img[(seed >> 8) % t.len] ^= (uint8_t)(1u << (seed & 7));
		}
		seed = seed * 1103515245u + 12345u;
		ck_assert_int_eq(tb_check_init(&ck, NULL, NULL, 1 << 20),
				 TB_OK);
		ret = tb_check_trace(&ck, img, k % 7 ? t.len :
				     (seed >> 4) % t.len);
		ck_assert(ret == TB_OK || ret == TB_EFRAMING ||
			  ret == TB_ELIMIT);
		done();
	}
	free(img);
	t_free(&t);
}
END_TEST

START_TEST(test_empty_image_is_an_empty_trace)
{
	struct trace t = { 0 };

	ck_assert_int_eq(run(&t), TB_OK);
	expect_clean();
	ck_assert_uint_eq(ck.stats.packets, 0);
	done();
	ck_assert_int_eq(tb_check_init(NULL, NULL, NULL, 0), TB_EINVAL);
}
END_TEST

/* ------------------------------------------------------------------------
 * Flows (flow_ids 47, terminating_flow_ids 48: fixed64, ids global).
 */
#define TE_FLOW_IDS		47
#define TE_TERMINATING_FLOW_IDS	48

/* An event of @type on @track that begins or continues flow @flow (0:
 * none) and terminates flow @term (0: none). */
static void t_flow(struct trace *t, uint32_t seq, uint64_t ts, unsigned type,
		   uint64_t track, uint64_t flow, uint64_t term, uint32_t loss)
{
	struct msg ev;

	ev_init(&ev, type, track);
	if (type != END)
		m_str(&ev, TE_NAME, "event");
	if (flow) {
		ck_assert_uint_lt(ev.n + 20, sizeof(ev.b));
		ev.n += tb_pb_fixed64(ev.b + ev.n, TE_FLOW_IDS, flow);
	}
	if (term)
		ev.n += tb_pb_fixed64(ev.b + ev.n, TE_TERMINATING_FLOW_IDS,
				      term);
	t_pkt(t, seq, ts, 0, &ev, NULL, NULL, loss);
}

START_TEST(test_flow_begun_and_ended_draws_its_arrow)
{
	struct trace t = { 0 };

	t_start(&t, 5);
	t_start(&t, 6);
	t_flow(&t, 5, 100, INSTANT, 5, 7, 0, 0);	/* begins 7 */
	t_flow(&t, 5, 110, INSTANT, 5, 7, 0, 0);	/* continues it */
	t_flow(&t, 6, 120, INSTANT, 6, 0, 7, 0);	/* ends it elsewhere */
	t_flow(&t, 6, 130, INSTANT, 6, 8, 0, 0);	/* 8: begun, and */
	t_flow(&t, 6, 140, INSTANT, 6, 8, 0, 0);	/* continued: drawn */
	ck_assert_int_eq(run(&t), TB_OK);
	expect_clean();
	ck_assert_uint_eq(ck.stats.flows_begun, 2);
	ck_assert_uint_eq(ck.stats.flow_steps, 2);
	ck_assert_uint_eq(ck.stats.flows_ended, 1);
	ck_assert_uint_eq(ck.stats.flows_open, 1);	/* 8 */
	ck_assert_uint_eq(ck.stats.flows_shared, 1);	/* 7: seqs 5, 6 */
	done();
	t_free(&t);
}
END_TEST

START_TEST(test_flow_end_never_begun_is_dropped)
{
	struct trace t = { 0 };

	/* the importer ignores terminating_flow_ids of a flow not begun */
	t_start(&t, 5);
	t_flow(&t, 5, 100, INSTANT, 5, 0, 9, 0);
	/* a flow ended twice: the second end finds it inactive */
	t_flow(&t, 5, 110, INSTANT, 5, 10, 0, 0);
	t_flow(&t, 5, 120, INSTANT, 5, 0, 10, 0);
	t_flow(&t, 5, 130, INSTANT, 5, 0, 10, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_FLOW_END_WITHOUT_BEGIN, 2, 0);
	ck_assert_uint_eq(ck.rule[TB_CK_FLOW_END_WITHOUT_BEGIN].first, 1);
	ck_assert_uint_eq(ck.rule[TB_CK_FLOW_END_WITHOUT_BEGIN].first_detail,
			  9);
	done();
	t_free(&t);
}
END_TEST

START_TEST(test_flow_end_whose_begin_was_lost_is_explained)
{
	struct trace t = { 0 };

	/* the event that began flow 9 was refused: the writer's next
	 * packet carries the flag, then the end comes */
	t_start(&t, 5);
	t_bare(&t, 5, 90, LOSS);
	t_flow(&t, 5, 100, INSTANT, 5, 0, 9, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_FLOW_END_WITHOUT_BEGIN, 0, 1);
	done();
	t_free(&t);
}
END_TEST

START_TEST(test_flow_begun_never_continued_draws_nothing)
{
	struct trace t = { 0 };

	t_start(&t, 5);
	t_start(&t, 6);
	t_flow(&t, 5, 100, INSTANT, 5, 11, 0, 0);	/* never ended */
	t_flow(&t, 6, 100, INSTANT, 6, 12, 0, 0);	/* its end was lost, */
	t_event(&t, 6, 120, INSTANT, 6, LOSS);		/* flagged after */
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_FLOW_NOT_ENDED, 1, 1);
	ck_assert_uint_eq(ck.rule[TB_CK_FLOW_NOT_ENDED].first_seq, 5);
	ck_assert_uint_eq(ck.rule[TB_CK_FLOW_NOT_ENDED].first_detail, 11);
	done();
	t_free(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * What the service says: TraceStats, producers' ends (tbtrace.h).
 */
static int t_out_write(void *ctx, const void *d, size_t n)
{
	t_put((struct trace *)ctx, d, n);
	return 0;
}

static void t_service_out(struct trace *t, struct tb_trace_out *o)
{
	memset(o, 0, sizeof(*o));
	o->write = t_out_write;
	o->ctx = t;
}

/* A producer's sequence @seq with a slice open at its end. */
static void t_open_slice(struct trace *t, uint32_t seq)
{
	t_start(t, seq);
	t_event(t, seq, 100, BEGIN, seq, 0);
}

START_TEST(test_trace_stats_of_a_discarding_buffer_explain_open_slices)
{
	struct tb_buf_stats bs;
	const struct tb_buf_stats *p = &bs;
	struct tb_buf_ident id = { UID, PID };
	struct tb_trace_out o;
	struct trace t = { 0 };

	t_open_slice(&t, 0x10001);
	t_service_out(&t, &o);
	memset(&bs, 0, sizeof(bs));
	bs.chunks_written = 10;
	ck_assert_int_eq(tb_trace_write_stats(&o, id, 200, &p, 1, NULL), 0);
	ck_assert_int_eq(run(&t), TB_OK);
	/* nothing discarded: the open slice is a violation */
	expect_only(TB_CK_SLICE_NOT_ENDED, 1, 0);
	ck_assert_uint_eq(ck.stats.trace_stats, 1);
	ck_assert_uint_eq(ck.stats.ts_buffers, 1);
	done();
	t_free(&t);
	/* a buffer in discard mode refused chunks: the tail is lost */
	t_open_slice(&t, 0x10001);
	t_service_out(&t, &o);
	bs.chunks_discarded = 3;
	ck_assert_int_eq(tb_trace_write_stats(&o, id, 200, &p, 1, NULL), 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_SLICE_NOT_ENDED, 0, 1);
	ck_assert_uint_eq(ck.stats.ts_chunks_discarded, 3);
	done();
	t_free(&t);
	/* bytes the buffer took and never gave out: packets never
	 * completed at the end */
	t_open_slice(&t, 0x10001);
	t_service_out(&t, &o);
	bs.chunks_discarded = 0;
	bs.bytes_written = 1000;
	bs.bytes_read = 600;
	bs.bytes_overwritten = 300;
	ck_assert_int_eq(tb_trace_write_stats(&o, id, 200, &p, 1, NULL), 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_SLICE_NOT_ENDED, 0, 1);
	ck_assert_uint_eq(ck.stats.ts_unread_bytes, 100);
	done();
	t_free(&t);
}
END_TEST

START_TEST(test_producer_death_explains_its_open_slices_only)
{
	struct tb_buf_ident id = { UID, PID };
	struct tb_trace_ring_record r;
	struct tb_trace_out o;
	struct trace t = { 0 };

	t_open_slice(&t, 0x10001);	/* producer 1: died */
	t_open_slice(&t, 0x20001);	/* producer 2: ended cleanly */
	t_service_out(&t, &o);
	ck_assert_int_eq(tb_trace_service_track(&o, id), 0);
	memset(&r, 0, sizeof(r));
	r.producer = 1;
	r.pid = 77;
	r.end = TB_TRACE_END_DIED;
	ck_assert_int_eq(tb_trace_ring_record(&o, id, 150, &r), 0);
	r.producer = 2;
	r.end = TB_TRACE_END_CLEAN;
	ck_assert_int_eq(tb_trace_ring_record(&o, id, 160, &r), 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_SLICE_NOT_ENDED, 1, 1);
	ck_assert_uint_eq(ck.rule[TB_CK_SLICE_NOT_ENDED].first_seq, 0x20001);
	ck_assert_uint_eq(ck.rule[TB_CK_SLICE_NOT_ENDED].first_explained_seq,
			  0x10001);
	ck_assert_uint_eq(ck.stats.producer_ends, 2);
	ck_assert_uint_eq(ck.stats.producer_deaths, 1);
	done();
	t_free(&t);
	/* a live ring's held chunks are its writers' own: no loss */
	t_open_slice(&t, 0x20001);
	t_service_out(&t, &o);
	ck_assert_int_eq(tb_trace_service_track(&o, id), 0);
	r.end = TB_TRACE_END_LIVE;
	r.held = 3;
	ck_assert_int_eq(tb_trace_ring_record(&o, id, 160, &r), 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_SLICE_NOT_ENDED, 1, 0);
	done();
	t_free(&t);
	/* a clean end whose ring refused writes: its tail is lost too */
	r.end = TB_TRACE_END_CLEAN;
	r.held = 0;
	t_open_slice(&t, 0x20001);
	t_service_out(&t, &o);
	ck_assert_int_eq(tb_trace_service_track(&o, id), 0);
	r.full = 5;
	ck_assert_int_eq(tb_trace_ring_record(&o, id, 160, &r), 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_SLICE_NOT_ENDED, 0, 1);
	ck_assert_uint_eq(ck.stats.producers_lossy, 1);
	done();
	t_free(&t);
}
END_TEST

START_TEST(test_service_packets_pass_every_rule)
{
	const struct tb_buf_stats *none = NULL;
	struct tb_buf_ident id = { UID, PID };
	struct tb_trace_ring_record r;
	struct tb_trace_out o;
	struct trace t = { 0 };

	t_service_out(&t, &o);
	ck_assert_int_eq(tb_trace_loss_track(&o, id, 3, -1), 0);
	ck_assert_int_eq(tb_trace_loss_count(&o, id, 100, 3, 0), 0);
	ck_assert_int_eq(tb_trace_loss_count(&o, id, 200, 3, 12), 0);
	ck_assert_int_eq(tb_trace_service_track(&o, id), 0);
	memset(&r, 0, sizeof(r));
	r.producer = 3;
	ck_assert_int_eq(tb_trace_ring_record(&o, id, 300, &r), 0);
	ck_assert_int_eq(tb_trace_write_stats(&o, id, 0, &none, 1, NULL), 0);
	ck_assert_uint_eq(o.packets, 6);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_clean();
	ck_assert_uint_eq(ck.stats.counters, 2);
	ck_assert_uint_eq(ck.stats.instants, 1);
	ck_assert_uint_eq(ck.nseqs, 1);
	ck_assert_uint_eq(ck.seqs[0].seq_id, TB_TRACE_SERVICE_SEQ);
	ck_assert_uint_eq(ck.stats.producer_ends, 1);
	ck_assert_uint_eq(ck.stats.producer_deaths, 0);
	done();
	t_free(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * Counters: resolved in file order, at tokenization.
 */
#define CD_INCREMENTAL		5	/* CounterDescriptor.is_incremental */

/* A counter track, incremental (delta values) if @inc. */
static void t_counter_inc(struct trace *t, uint32_t seq, uint64_t uuid,
			  uint32_t flags, int inc)
{
	struct msg td = { { 0 }, 0 }, cd = { { 0 }, 0 };

	if (inc)
		m_uint(&cd, CD_INCREMENTAL, 1);
	m_uint(&td, TD_UUID, uuid);
	m_msg(&td, TD_COUNTER, &cd);
	t_pkt(t, seq, 10, flags, NULL, &td, NULL, 0);
}

/* A counter value @v on @track, with sequence flags @flags. */
static void t_value(struct trace *t, uint32_t seq, uint64_t ts,
		    uint64_t track, uint64_t v, uint32_t flags, uint32_t loss)
{
	struct msg ev;

	ev_init(&ev, COUNTER, track);
	m_uint(&ev, TE_COUNTER, v);
	t_pkt(t, seq, ts, flags, &ev, NULL, NULL, loss);
}

/*
 * A capture that starts mid-stream: the counter values of the state it
 * caught the end of come before the descriptor the writer's next state
 * writes.  The importer resolves counter values as it reads the file
 * (TrackEventTokenizer, ConvertToAbsoluteCounterValue()) and drops them:
 * an error in the UI.
 */
START_TEST(test_counter_before_its_descriptor_is_dropped)
{
	struct trace t = { 0 };

	t_value(&t, 5, 20, 600, 1, 0, 0);		/* before: dropped */
	t_counter_inc(&t, 5, 600, CLEARED, 0);
	t_value(&t, 5, 30, 600, 2, 0, 0);		/* after: placed */
	t_value(&t, 6, 15, 610, 3, 0, 0);		/* descriptor later, */
	t_counter_inc(&t, 7, 610, CLEARED, 0);		/* on another seq */
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_COUNTER_EARLY, 2, 0);
	ck_assert_uint_eq(ck.rule[TB_CK_COUNTER_EARLY].first, 0);
	ck_assert_uint_eq(ck.rule[TB_CK_COUNTER_EARLY].first_detail, 600);
	ck_assert_uint_eq(ck.stats.counters, 1);
	done();
	t_free(&t);
	/* the reader knew it started mid-stream: the first packet says so */
	t_value(&t, 5, 20, 600, 1, 0, LOSS);
	t_counter_inc(&t, 5, 600, CLEARED, 0);
	t_value(&t, 5, 30, 600, 2, 0, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_COUNTER_EARLY, 0, 1);
	done();
	t_free(&t);
	/* what tbevent.h writes: the value needs its state, and is skipped
	 * like any packet that does, until the state's clear */
	t_value(&t, 5, 20, 600, 1, NEEDS, 0);
	t_counter_inc(&t, 5, 600, CLEARED, 0);
	t_value(&t, 5, 30, 600, 2, NEEDS, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_NEEDS_STATE, 1, 0);
	ck_assert_uint_eq(ck.stats.counters, 1);
	done();
	t_free(&t);
}
END_TEST

/*
 * Delta values of an incremental counter add up per sequence and are
 * reset only at a clear (TrackEventSequenceState::
 * IncrementAndGetCounterValue()): after a loss, or before the first
 * clear, the running total misses what was lost.
 */
START_TEST(test_incremental_counter_on_an_invalid_state)
{
	struct trace t = { 0 };

	t_start(&t, 5);
	t_counter_inc(&t, 5, 620, 0, 1);
	t_counter_inc(&t, 5, 630, 0, 0);		/* absolute values */
	t_value(&t, 5, 20, 620, 1, 0, 0);		/* fine */
	t_bare(&t, 5, 30, LOSS);
	t_value(&t, 5, 40, 620, 1, 0, 0);		/* total is wrong */
	t_value(&t, 5, 45, 630, 1, 0, 0);		/* fine: absolute */
	t_pkt(&t, 5, 50, CLEARED, NULL, NULL, NULL, 0);
	t_value(&t, 5, 60, 620, 1, 0, 0);		/* fine: reset */
	t_value(&t, 6, 70, 620, 1, 0, 0);		/* never cleared */
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_COUNTER_INCREMENTAL, 1, 1);
	ck_assert_uint_eq(ck.rule[TB_CK_COUNTER_INCREMENTAL].first_seq, 6);
	ck_assert_uint_eq(ck.stats.counters, 5);	/* placed all the same */
	done();
	t_free(&t);
}
END_TEST

/* Nine extra counter values: the importer takes eight at most. */
START_TEST(test_more_extra_counter_values_than_the_importer_takes)
{
	struct trace t = { 0 };
	struct msg ev;
	unsigned i;

	t_start(&t, 5);
	t_counter_inc(&t, 5, 600, 0, 0);
	ev_init(&ev, INSTANT, 5);
	m_str(&ev, TE_NAME, "x");
	for (i = 0; i < 8; i++) {
		m_uint(&ev, TE_XC_UUIDS, 600);
		m_uint(&ev, TE_XC_VALUES, i);
	}
	t_pkt(&t, 5, 20, 0, &ev, NULL, NULL, 0);	/* eight: fine */
	m_uint(&ev, TE_XC_UUIDS, 600);
	m_uint(&ev, TE_XC_VALUES, 8);
	t_pkt(&t, 5, 30, 0, &ev, NULL, NULL, 0);	/* nine */
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_COUNTER_BAD, 1, 0);
	ck_assert_uint_eq(ck.rule[TB_CK_COUNTER_BAD].first, 3);
	ck_assert_uint_eq(ck.stats.instants, 1);
	done();
	t_free(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * Defaults, tracks and threads.
 */

/* TracePacketDefaults naming track @track, in a packet of their own. */
static void t_defaults(struct trace *t, uint32_t seq, uint64_t track,
		       uint32_t flags)
{
	struct msg body = { { 0 }, 0 }, def = { { 0 }, 0 },
		   ted = { { 0 }, 0 };

	m_uint(&ted, TED_TRACK, track);
	m_msg(&def, DEF_TRACK_EVENT, &ted);
	if (flags)
		m_uint(&body, TP_FLAGS, flags);
	m_msg(&body, TP_DEFAULTS, &def);
	t_raw(t, &body, HAS_ALL, seq, UID, PID, 0);
}

/*
 * ParsePacket() handles a packet's clear before its defaults, and a clear
 * starts an empty generation: defaults written in a packet before the
 * clear are gone, and the events that relied on them land on the
 * default track.
 */
START_TEST(test_defaults_before_the_clear_are_lost)
{
	struct trace t = { 0 };

	t_defaults(&t, 5, 5, 0);		/* before the clear */
	t_start(&t, 5);
	t_event(&t, 5, 20, INSTANT, 0, 0);	/* meant for track 5 */
	t_event(&t, 5, 30, INSTANT, 5, 0);	/* names it: fine */
	t_defaults(&t, 6, 6, CLEARED);		/* in the clear: fine */
	t_thread(&t, 6, 6, PID, 6, 0);
	t_event(&t, 6, 40, INSTANT, 0, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_DEFAULTS_LOST, 1, 0);
	ck_assert_uint_eq(ck.rule[TB_CK_DEFAULTS_LOST].first, 2);
	ck_assert_uint_eq(ck.stats.global_track_events, 0);
	done();
	t_free(&t);
	/* defaults again after the clear: fine from there on */
	t_defaults(&t, 5, 5, 0);
	t_start(&t, 5);
	t_defaults(&t, 5, 5, 0);
	t_event(&t, 5, 20, INSTANT, 0, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_clean();
	done();
	t_free(&t);
}
END_TEST

/*
 * IsTrackHierarchyValid() wants every uuid up the chain reserved: a
 * parent no descriptor names drops the event
 * (track_hierarchy_missing_uuid), unless an event earlier in the sorted
 * order reserved that uuid (a nameless root track).
 */
START_TEST(test_track_whose_parent_has_no_descriptor)
{
	struct trace t = { 0 };

	t_start(&t, 5);
	t_child(&t, 5, 300, 1234);
	t_event(&t, 5, 50, INSTANT, 300, 0);		/* dropped */
	t_event(&t, 5, 80, INSTANT, 300, LOSS);		/* explained */
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_TRACK_PARENT_UNKNOWN, 1, 1);
	ck_assert_uint_eq(ck.rule[TB_CK_TRACK_PARENT_UNKNOWN].first_detail,
			  300);
	ck_assert_uint_eq(ck.stats.instants, 0);
	done();
	t_free(&t);
	/* an event on 1234 earlier in time, later in the file, reserves it */
	t_start(&t, 5);
	t_child(&t, 5, 300, 1234);
	t_event(&t, 5, 50, INSTANT, 300, 0);
	t_event(&t, 5, 40, INSTANT, 1234, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect(TB_CK_TRACK_PARENT_UNKNOWN, 0, 0);
	expect(TB_CK_TRACK_UNKNOWN, 1, 0);
	ck_assert_uint_eq(ck.stats.instants, 2);
	done();
	t_free(&t);
}
END_TEST

/* A process track: uuid, process { pid }. */
static void t_process(struct trace *t, uint32_t seq, uint64_t uuid,
		      int32_t pid)
{
	struct msg td = { { 0 }, 0 }, pd = { { 0 }, 0 };

	m_uint(&pd, PD_PID, (uint64_t)pid);
	m_uint(&td, TD_UUID, uuid);
	m_msg(&td, TD_PROCESS, &pd);
	t_pkt(t, seq, 10, 0, NULL, &td, NULL, 0);
}

/*
 * One thread described under two uuids: the importer takes the second for
 * a new thread that reused the tid, and shows two threads (the same for
 * a process and its pid).
 */
START_TEST(test_tid_or_pid_described_under_another_uuid)
{
	struct trace t = { 0 };

	t_thread(&t, 5, 50, PID, 7, CLEARED);
	t_thread(&t, 5, 50, PID, 7, 0);		/* the same track: fine */
	t_thread(&t, 6, 51, PID, 8, CLEARED);	/* another thread: fine */
	t_thread(&t, 6, 52, PID, 7, 0);		/* tid 7 again */
	t_thread(&t, 7, 53, PID + 1, 7, CLEARED); /* another process */
	t_process(&t, 5, 500, PID);
	t_process(&t, 6, 500, PID);		/* the same: fine */
	t_process(&t, 6, 501, PID);		/* pid again */
	ck_assert_int_eq(run(&t), TB_OK);
	expect(TB_CK_TID_REUSED, 1, 0);
	ck_assert_uint_eq(ck.rule[TB_CK_TID_REUSED].first, 3);
	ck_assert_uint_eq(ck.rule[TB_CK_TID_REUSED].first_detail, 52);
	expect(TB_CK_PID_REUSED, 1, 0);
	ck_assert_uint_eq(ck.rule[TB_CK_PID_REUSED].first_detail, 501);
	ck_assert_uint_eq(tb_check_total(&ck, false), 2);
	done();
	t_free(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * Stage 2 runs in timestamp order, whatever the file's.
 */

/*
 * Writer 1 begins flow 7 at t+2000, writer 2 ends it at t+3000, and
 * writer 2's chunk comes first in the file: the importer matches flows
 * after sorting by time, and draws the arrow.
 */
START_TEST(test_cross_thread_flow_out_of_file_order_draws_its_arrow)
{
	struct trace t = { 0 };

	t_start(&t, 0x10001);
	t_start(&t, 0x10002);
	t_flow(&t, 0x10002, 3000, INSTANT, 0x10002, 0, 7, 0);
	t_flow(&t, 0x10001, 2000, INSTANT, 0x10001, 7, 0, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_clean();
	ck_assert_uint_eq(ck.stats.flows_begun, 1);
	ck_assert_uint_eq(ck.stats.flows_ended, 1);
	ck_assert_uint_eq(ck.stats.flows_open, 0);
	ck_assert_uint_eq(ck.stats.flows_shared, 1);	/* joined: noted */
	done();
	t_free(&t);
}
END_TEST

/* Slices match in time order too: an END read before its BEGIN. */
START_TEST(test_slices_match_in_time_order)
{
	struct trace t = { 0 };

	t_start(&t, 5);
	t_start(&t, 6);
	t_child(&t, 5, 700, 0);
	t_event(&t, 6, 200, END, 700, 0);	/* first in the file */
	t_event(&t, 5, 100, BEGIN, 700, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_clean();
	ck_assert_uint_eq(ck.stats.open_slices, 0);
	done();
	t_free(&t);
}
END_TEST

/*
 * An event looks its iids up in the generation it was tokenized in, when
 * every packet has been read: an iid interned later in that generation
 * resolves, one interned after TracePacketDefaults started another does
 * not (PacketSequenceStateGeneration::OnNewTracePacketDefaults()).
 */
START_TEST(test_iid_interned_later_in_the_same_generation)
{
	struct trace t = { 0 };
	struct msg id = { { 0 }, 0 }, id3 = { { 0 }, 0 };

	intern(&id, ID_NAMES, 1, "a");
	intern(&id3, ID_NAMES, 3, "c");
	t_start(&t, 5);
	t_named(&t, 30, 1, 0);			/* interned after it */
	t_pkt(&t, 5, 40, 0, NULL, NULL, &id, 0);
	t_named(&t, 50, 3, 0);
	t_defaults(&t, 5, 5, 0);		/* a new generation */
	t_pkt(&t, 5, 60, 0, NULL, NULL, &id3, 0);
	t_named(&t, 70, 3, 0);			/* in the new one: fine */
	t_named(&t, 80, 1, 0);			/* copied into it: fine */
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_IID_NAME, 1, 0);
	ck_assert_uint_eq(ck.rule[TB_CK_IID_NAME].first, 3);
	ck_assert_uint_eq(ck.rule[TB_CK_IID_NAME].first_detail, 3);
	done();
	t_free(&t);
}
END_TEST

/*
 * MaybeParseFlowEvents() runs on the slice an event begins, ends or is:
 * a counter value makes none, nor does an END that ends nothing, so their
 * flow ids are not read at all.
 */
START_TEST(test_flow_ids_where_no_slice_is_made_are_not_read)
{
	struct trace t = { 0 };
	struct msg ev;

	t_start(&t, 5);
	t_counter_inc(&t, 5, 600, 0, 0);
	ev_init(&ev, COUNTER, 600);
	m_uint(&ev, TE_COUNTER, 1);
	ck_assert_uint_lt(ev.n + 20, sizeof(ev.b));
	ev.n += tb_pb_fixed64(ev.b + ev.n, TE_FLOW_IDS, 21);
	t_pkt(&t, 5, 20, 0, &ev, NULL, NULL, 0);	/* would begin 21 */
	t_flow(&t, 5, 30, END, 5, 0, 22, 0);		/* ends nothing */
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_END_WITHOUT_BEGIN, 1, 0);
	ck_assert_uint_eq(ck.stats.flows_begun, 0);
	done();
	t_free(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * Slices ENDed by name, clock snapshots, annotations.
 */

/* An END naming the slice it closes (tbevent.h's ENDs name none). */
static void t_end_named(struct trace *t, uint32_t seq, uint64_t ts,
			uint64_t track, const char *name)
{
	struct msg ev;

	ev_init(&ev, END, track);
	m_str(&ev, TE_NAME, name);
	t_pkt(t, seq, ts, 0, &ev, NULL, NULL, 0);
}

/*
 * SliceTracker::End() closes the innermost open slice whose name the END
 * matches: one under others ends in place, and the next event after its
 * end cuts the inner ones there (misplaced_end_event, data loss).
 */
START_TEST(test_end_naming_an_outer_slice)
{
	struct trace t = { 0 };
	struct msg ev;

	t_start(&t, 5);
	ev_init(&ev, BEGIN, 5);
	m_str(&ev, TE_NAME, "outer");
	t_pkt(&t, 5, 100, 0, &ev, NULL, NULL, 0);
	ev_init(&ev, BEGIN, 5);
	m_str(&ev, TE_NAME, "inner");
	t_pkt(&t, 5, 110, 0, &ev, NULL, NULL, 0);
	t_end_named(&t, 5, 120, 5, "inner");	/* the innermost: fine */
	ev_init(&ev, BEGIN, 5);
	m_str(&ev, TE_NAME, "inner");
	t_pkt(&t, 5, 130, 0, &ev, NULL, NULL, 0);
	t_end_named(&t, 5, 140, 5, "outer");	/* under "inner" */
	ck_assert_int_eq(run(&t), TB_OK);
	expect(TB_CK_END_OUTER, 1, 0);
	ck_assert_uint_eq(ck.rule[TB_CK_END_OUTER].first, 5);
	expect(TB_CK_SLICE_NOT_ENDED, 1, 0);	/* "inner": nothing cut it */
	ck_assert_uint_eq(ck.rule[TB_CK_SLICE_NOT_ENDED].first, 4);
	ck_assert_uint_eq(tb_check_total(&ck, false), 2);
	ck_assert_uint_eq(ck.stats.open_slices, 1);
	done();
	/* the next event cuts "inner" at 140: its own END finds nothing */
	t_event(&t, 5, 150, END, 5, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect(TB_CK_END_OUTER, 1, 0);
	expect(TB_CK_END_WITHOUT_BEGIN, 1, 0);
	ck_assert_uint_eq(ck.stats.open_slices, 0);
	ck_assert_uint_eq(tb_check_total(&ck, false), 2);
	done();
	t_free(&t);
}
END_TEST

/* A ClockSnapshot packet that also carries @te and @td. */
static void t_snapshot_with(struct trace *t, uint32_t seq,
			    const struct msg *te, const struct msg *td)
{
	struct msg body = { { 0 }, 0 }, cs = { { 0 }, 0 }, clk;

	memset(&clk, 0, sizeof(clk));
	m_uint(&clk, CLK_ID, 6);
	m_uint(&clk, CLK_TS, 5000);
	m_msg(&cs, CS_CLOCKS, &clk);
	m_msg(&body, TP_CLOCK_SNAPSHOT, &cs);
	m_uint(&body, TP_TIMESTAMP, 20);
	if (te)
		m_msg(&body, TP_TRACK_EVENT, te);
	if (td)
		m_msg(&body, TP_TRACK_DESC, td);
	t_raw(t, &body, HAS_ALL, seq, UID, PID, 0);
}

/* ParsePacket() reads a ClockSnapshot and returns: nothing else counts. */
START_TEST(test_clock_snapshot_packet_with_a_payload)
{
	struct trace t = { 0 };
	struct msg ev, td = { { 0 }, 0 };

	t_start(&t, 5);
	m_uint(&td, TD_UUID, 700);
	m_str(&td, TD_NAME, "child");
	t_snapshot_with(&t, 5, NULL, &td);	/* descriptor ignored */
	t_event(&t, 5, 30, INSTANT, 700, 0);	/* so no track 700 */
	ev_init(&ev, INSTANT, 5);
	m_str(&ev, TE_NAME, "x");
	t_snapshot_with(&t, 5, &ev, NULL);	/* event ignored */
	t_snapshot_with(&t, 5, NULL, NULL);	/* fine */
	ck_assert_int_eq(run(&t), TB_OK);
	expect(TB_CK_SNAPSHOT_PAYLOAD, 2, 0);
	ck_assert_uint_eq(ck.rule[TB_CK_SNAPSHOT_PAYLOAD].first, 1);
	expect(TB_CK_TRACK_UNKNOWN, 1, 0);
	ck_assert_uint_eq(tb_check_total(&ck, false), 3);
	ck_assert_uint_eq(ck.stats.clock_snapshots, 3);
	ck_assert_uint_eq(ck.stats.track_events, 1);
	done();
	t_free(&t);
}
END_TEST

/*
 * DebugAnnotationParser::ParseDebugAnnotationName(): a name_iid (nonzero),
 * else a name, else an error that drops the annotation; in a dict, the
 * rest of it too.  An END that ends nothing has its arguments unread.
 */
START_TEST(test_debug_annotation_without_a_name)
{
	struct trace t = { 0 };
	struct msg ev, da, dict;

	t_start(&t, 5);
	ev_init(&ev, INSTANT, 5);
	m_str(&ev, TE_NAME, "x");
	memset(&da, 0, sizeof(da));
	m_uint(&da, DA_UINT, 7);			/* no name */
	m_msg(&ev, TE_ANNOTATIONS, &da);
	memset(&da, 0, sizeof(da));
	m_uint(&da, DA_NAME_IID, 0);			/* 0: not set, */
	m_str(&da, 10, "named");			/* the name is */
	memset(&dict, 0, sizeof(dict));
	m_uint(&dict, DA_UINT, 1);			/* a nameless entry */
	m_msg(&da, DA_DICT, &dict);
	m_msg(&ev, TE_ANNOTATIONS, &da);
	t_pkt(&t, 5, 20, 0, &ev, NULL, NULL, 0);
	ev_init(&ev, END, 5);				/* ends nothing */
	memset(&da, 0, sizeof(da));
	m_uint(&da, DA_UINT, 7);
	m_msg(&ev, TE_ANNOTATIONS, &da);
	t_pkt(&t, 5, 30, 0, &ev, NULL, NULL, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect(TB_CK_ANNOTATION_NO_NAME, 2, 0);
	expect(TB_CK_END_WITHOUT_BEGIN, 1, 0);
	ck_assert_uint_eq(tb_check_total(&ck, false), 3);
	done();
	t_free(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * A ring's refusals name no writer.
 */

/*
 * A ring record of producer @producer: ended @end, @full writes refused,
 * @holes chunks the reader lost, writer @holder (0: none) holding a chunk.
 */
static void t_ring_record(struct trace *t, uint16_t producer,
			  enum tb_trace_end end, uint32_t full,
			  uint32_t holes, uint16_t holder)
{
	struct tb_buf_ident id = { UID, PID };
	struct tb_trace_ring_record r;
	struct tb_trace_out o;

	t_service_out(t, &o);
	ck_assert_int_eq(tb_trace_service_track(&o, id), 0);
	memset(&r, 0, sizeof(r));
	r.producer = producer;
	r.pid = PID;
	r.end = end;
	r.full = full;
	r.holes = holes;
	if (holder) {
		r.held = 1;
		r.holders = 1;
		r.held_by[0] = holder;
	}
	ck_assert_int_eq(tb_trace_ring_record(&o, id, 300, &r), 0);
}

/*
 * A ring counts the writes its writers could not make, not whose: with
 * two writers in the trace, one that stopped mid-slice (it died, the RAM
 * image was taken) is not explained by refusals that may be the other's.
 * A lone writer's are its own; a producer's death is every writer's; a
 * chunk a writer held at the end is that writer's tail lost; chunks the
 * reader lost name no writer, and may have held anyone's.
 */
START_TEST(test_ring_refusals_explain_only_a_lone_writer)
{
	struct trace t = { 0 };

	t_open_slice(&t, 0x20001);
	t_open_slice(&t, 0x20002);
	t_ring_record(&t, 2, TB_TRACE_END_LIVE, 5, 0, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_SLICE_NOT_ENDED, 2, 0);
	ck_assert_uint_eq(ck.stats.producers_lossy, 1);
	done();
	t_free(&t);
	t_open_slice(&t, 0x30001);
	t_ring_record(&t, 3, TB_TRACE_END_LIVE, 5, 0, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_SLICE_NOT_ENDED, 0, 1);
	done();
	t_free(&t);
	t_open_slice(&t, 0x20001);
	t_open_slice(&t, 0x20002);
	t_ring_record(&t, 2, TB_TRACE_END_DIED, 0, 0, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_SLICE_NOT_ENDED, 0, 2);
	done();
	t_free(&t);
	/* writer 1 held a chunk (the interrupt faulted over it), writer 2's
	 * interrupt had writes refused: only writer 1 is explained */
	t_open_slice(&t, 0x20001);
	t_open_slice(&t, 0x20002);
	t_ring_record(&t, 2, TB_TRACE_END_LIVE, 8, 0, 1);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_SLICE_NOT_ENDED, 1, 1);
	ck_assert_uint_eq(ck.rule[TB_CK_SLICE_NOT_ENDED].first_seq, 0x20002);
	ck_assert_uint_eq(ck.rule[TB_CK_SLICE_NOT_ENDED].first_explained_seq,
			  0x20001);
	done();
	t_free(&t);
	/* the reader lost chunks that named no writer: either's tail */
	t_open_slice(&t, 0x20001);
	t_open_slice(&t, 0x20002);
	t_ring_record(&t, 2, TB_TRACE_END_LIVE, 0, 2, 0);
	ck_assert_int_eq(run(&t), TB_OK);
	expect_only(TB_CK_SLICE_NOT_ENDED, 0, 2);
	done();
	t_free(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * Suite
 */
static Suite *check_suite(void)
{
	Suite *s = suite_create("tbcheck");
	TCase *t = tcase_create("rules");

	tcase_set_timeout(t, 60);
	tcase_add_test(t, test_clean_trace_with_every_feature_is_clean);
	tcase_add_test(t,
		test_event_without_track_lands_on_its_sequence_thread);
	tcase_add_test(t, test_trace_written_by_tbtrace_is_clean);
	tcase_add_test(t, test_buffer_gap_explains_the_end_it_orphans);
	tcase_add_test(t, test_not_a_trace_stops_the_check);
	tcase_add_test(t, test_trace_cut_inside_its_last_packet_is_truncated);
	tcase_add_test(t, test_packets_without_trusted_fields);
	tcase_add_test(t,
		test_needs_incremental_state_without_sequence_stops_import);
	tcase_add_test(t, test_reserved_sequence_ids);
	tcase_add_test(t, test_sequence_id_claimed_by_two_processes_collides);
	tcase_add_test(t, test_needs_state_before_any_clear_is_skipped);
	tcase_add_test(t, test_needs_state_after_a_loss_is_explained);
	tcase_add_test(t, test_interned_data_while_invalid_is_ignored);
	tcase_add_test(t, test_interned_entry_without_iid_or_redefined);
	tcase_add_test(t, test_name_iid_resolves_only_since_the_last_clear);
	tcase_add_test(t, test_name_iid_lost_with_its_packet_is_explained);
	tcase_add_test(t, test_category_annotation_and_source_iids);
	tcase_add_test(t, test_bad_descriptors_are_ignored);
	tcase_add_test(t, test_descriptor_redefining_a_track_conflicts);
	tcase_add_test(t, test_event_on_a_track_no_descriptor_names);
	tcase_add_test(t, test_descriptor_later_in_the_trace_names_the_track);
	tcase_add_test(t,
		test_lost_descriptor_is_explained_until_the_next_clear);
	tcase_add_test(t, test_default_track_from_track_event_defaults);
	tcase_add_test(t, test_parent_chain_that_loops_or_runs_too_deep);
	tcase_add_test(t, test_malformed_track_event);
	tcase_add_test(t, test_track_event_without_timestamp_or_type);
	tcase_add_test(t, test_counter_values_need_a_counter_track);
	tcase_add_test(t, test_clock_without_a_snapshot_to_the_trace_clock);
	tcase_add_test(t, test_timestamps_going_back_on_a_sequence);
	tcase_add_test(t, test_incremental_clock_timestamps_are_deltas);
	tcase_add_test(t, test_end_without_begin);
	tcase_add_test(t, test_end_after_another_sequences_loss_is_a_violation);
	tcase_add_test(t, test_end_whose_begin_was_lost_is_explained);
	tcase_add_test(t, test_slice_never_ended);
	tcase_add_test(t, test_loss_before_the_begin_explains_no_open_slice);
	tcase_add_test(t, test_loss_explains_only_what_loss_can_cause);
	tcase_add_test(t, test_every_violation_reaches_the_callback_once);
	tcase_add_test(t, test_budget_too_small_stops_the_check);
	tcase_add_test(t, test_allocator_failure_at_any_point_is_an_error);
	tcase_add_test(t, test_hostile_images_never_crash_and_free_everything);
	tcase_add_test(t, test_empty_image_is_an_empty_trace);
	tcase_add_test(t, test_flow_begun_and_ended_draws_its_arrow);
	tcase_add_test(t, test_flow_end_never_begun_is_dropped);
	tcase_add_test(t, test_flow_end_whose_begin_was_lost_is_explained);
	tcase_add_test(t, test_flow_begun_never_continued_draws_nothing);
	tcase_add_test(t,
		test_trace_stats_of_a_discarding_buffer_explain_open_slices);
	tcase_add_test(t, test_producer_death_explains_its_open_slices_only);
	tcase_add_test(t, test_service_packets_pass_every_rule);
	tcase_add_test(t, test_counter_before_its_descriptor_is_dropped);
	tcase_add_test(t, test_incremental_counter_on_an_invalid_state);
	tcase_add_test(t,
		test_more_extra_counter_values_than_the_importer_takes);
	tcase_add_test(t, test_defaults_before_the_clear_are_lost);
	tcase_add_test(t, test_track_whose_parent_has_no_descriptor);
	tcase_add_test(t, test_tid_or_pid_described_under_another_uuid);
	tcase_add_test(t,
		test_cross_thread_flow_out_of_file_order_draws_its_arrow);
	tcase_add_test(t, test_slices_match_in_time_order);
	tcase_add_test(t, test_iid_interned_later_in_the_same_generation);
	tcase_add_test(t,
		test_flow_ids_where_no_slice_is_made_are_not_read);
	tcase_add_test(t, test_end_naming_an_outer_slice);
	tcase_add_test(t, test_clock_snapshot_packet_with_a_payload);
	tcase_add_test(t, test_debug_annotation_without_a_name);
	tcase_add_test(t, test_ring_refusals_explain_only_a_lone_writer);
	tcase_add_test(t, test_default_budget_grows_with_the_trace);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(check_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
