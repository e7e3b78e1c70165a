/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_rtos.c - the scheduler on the timeline: tools/tbcheck.h's
 * scheduling rules (ftrace sched events as trace_processor imports them)
 * on hand-built traces, and tbfreertos.h's hook functions driven on the
 * host by a made-up schedule with a clock the test moves, their ring
 * taken through the service into a trace that the checker reads back:
 * each task's CPU time exact, what it blocked on, which interrupt woke
 * it, and a task preempted in the middle of its own event.
 *
 * The hand-built traces use Perfetto's field numbers written out from
 * protos/perfetto/trace/ftrace/{ftrace_event_bundle,ftrace_event,
 * sched}.proto and interned_data/interned_data.proto, not from either
 * header's constants.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

/* the hooks run "in an interrupt" when the test says so */
static int test_in_isr;
static unsigned test_irq;
#define TB_IN_INTERRUPT()	(test_in_isr != 0)
#define TB_RTOS_IRQ()		(test_irq)
#include "tbfreertos.h"
#include "tbbridge.h"
#include "tbtrace.h"
#include "tools/tbcheck.h"

/* TracePacket, FtraceEventBundle, FtraceEvent, the sched events */
#define TP_FTRACE	1
#define TP_FLAGS	13
#define TP_INTERNED	12
#define FB_CPU		1
#define FB_EVENT	2
#define FE_TS		1
#define FE_PID		2
#define FE_SWITCH	4
#define FE_FLAGS	5
#define FE_BLOCKED	18
#define FE_WAKING	20
#define SS_PREV_PID	2
#define SS_PREV_STATE	4
#define SS_NEXT_PID	6
#define SW_PID		2
#define BR_PID		1
#define BR_CALLER	2
#define ID_KSYMS	26
#define T_UID		3
#define T_SEQ		10
#define T_PID		79
#define T_DROPPED	42

/* ------------------------------------------------------------------------
 * Hand-built traces.
 */
struct msg {
	uint8_t b[1024];
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

static void m_msg(struct msg *m, uint32_t field, const struct msg *in)
{
	m_bytes(m, field, in->b, in->n);
}

static uint8_t image[1 << 16];
static size_t image_len;

/* A packet of sequence @seq (with the service's trusted fields). */
static void put_packet(const struct msg *body, uint32_t seq, uint32_t loss)
{
	struct msg m = *body;
	uint8_t head[16];
	size_t h;

	m_uint(&m, T_UID, 1000);
	m_uint(&m, T_SEQ, seq);
	m_uint(&m, T_PID, 42);
	if (loss)
		m_uint(&m, T_DROPPED, loss);
	h = tb_pb_len(head, 1, m.n);
	ck_assert_uint_lt(image_len + h + m.n, sizeof(image));
	memcpy(image + image_len, head, h);
	memcpy(image + image_len + h, m.b, m.n);
	image_len += h + m.n;
}

/* An FtraceEvent: timestamp, pid (-1: none), then the event @ev as @id. */
static void fe(struct msg *e, uint64_t ts, int pid, uint32_t id,
	       const struct msg *ev)
{
	memset(e, 0, sizeof(*e));
	m_uint(e, FE_TS, ts);
	if (pid >= 0)
		m_uint(e, FE_PID, (uint64_t)pid);
	if (ev)
		m_msg(e, id, ev);
}

/* One bundle of one event for CPU @cpu (-1: no cpu field). */
static void bundle(uint32_t seq, int cpu, const struct msg *e,
		   uint32_t loss)
{
	struct msg b = { { 0 }, 0 }, p = { { 0 }, 0 };

	if (cpu >= 0)
		m_uint(&b, FB_CPU, (uint64_t)cpu);
	m_msg(&b, FB_EVENT, e);
	m_msg(&p, TP_FTRACE, &b);
	put_packet(&p, seq, loss);
}

static void sw(uint32_t seq, uint64_t ts, int prev, uint64_t state,
	       int next, uint32_t loss)
{
	struct msg s = { { 0 }, 0 }, e;

	m_uint(&s, SS_PREV_PID, (uint64_t)prev);
	m_uint(&s, SS_PREV_STATE, state);
	m_uint(&s, SS_NEXT_PID, (uint64_t)next);
	fe(&e, ts, prev, FE_SWITCH, &s);
	bundle(seq, 0, &e, loss);
}

static void waking(uint32_t seq, uint64_t ts, int waker, int wakee,
		   int irq)
{
	struct msg s = { { 0 }, 0 }, e;

	m_uint(&s, SW_PID, (uint64_t)wakee);
	fe(&e, ts, waker, FE_WAKING, &s);
	if (irq)
		m_uint(&e, FE_FLAGS, 0x08);	/* TRACE_FLAG_HARDIRQ */
	bundle(seq, 0, &e, 0);
}

static void blocked(uint32_t seq, uint64_t ts, int pid, uint64_t iid)
{
	struct msg s = { { 0 }, 0 }, e;

	m_uint(&s, BR_PID, (uint64_t)pid);
	m_uint(&s, BR_CALLER, iid);
	fe(&e, ts, pid, FE_BLOCKED, &s);
	bundle(seq, 0, &e, 0);
}

/* A packet clearing the sequence's state, with kernel symbol @iid. */
static void ksym(uint32_t seq, uint64_t iid, const char *str, bool clear)
{
	struct msg k = { { 0 }, 0 }, id = { { 0 }, 0 }, p = { { 0 }, 0 };

	m_uint(&k, 1, iid);
	m_bytes(&k, 2, str, strlen(str));
	m_msg(&id, ID_KSYMS, &k);
	if (clear)
		m_uint(&p, TP_FLAGS, 1);
	m_msg(&p, TP_INTERNED, &id);
	put_packet(&p, seq, 0);
}

static struct tb_check chk;

static void check_image(void)
{
	tb_check_init(&chk, NULL, NULL, 0);
	ck_assert_int_eq(tb_check_trace(&chk, image, image_len), TB_OK);
}

static void done(void)
{
	tb_check_destroy(&chk);
	image_len = 0;
}

static uint64_t cpu_of(int tid)
{
	const struct tb_check_thread *t = tb_check_thread_find(&chk, tid);

	ck_assert_ptr_nonnull(t);
	return t->cpu_ns;
}

#define SEQ	0x10001u

/* A schedule: CPU time is the sum of the slices that ended. */
START_TEST(test_sched_cpu_time_per_thread)
{
	sw(SEQ, 1000, 0, 0, 2, 0);	/* idle -> 2 */
	sw(SEQ, 1500, 2, 1, 3, 0);	/* 2 blocks (S) -> 3 */
	waking(SEQ, 1700, 3, 2, 1);	/* an irq wakes 2 */
	sw(SEQ, 1800, 3, 0, 2, 0);	/* 3 preempted (R) -> 2 */
	sw(SEQ, 2000, 2, 1, 0, 0);	/* -> idle, open at the end */
	check_image();
	ck_assert(tb_check_clean(&chk));
	ck_assert_uint_eq(chk.sched.switches, 4);
	ck_assert_uint_eq(cpu_of(2), 500 + 200);
	ck_assert_uint_eq(cpu_of(3), 300);
	ck_assert_uint_eq(cpu_of(0), 0);	/* its slice never ended */
	ck_assert(tb_check_thread_find(&chk, 0)->running);
	ck_assert_uint_eq(tb_check_thread_find(&chk, 0)->since, 2000);
	ck_assert_uint_eq(tb_check_thread_find(&chk, 2)->wakes, 1);
	ck_assert_uint_eq(tb_check_thread_find(&chk, 2)->irq_wakes, 1);
	ck_assert_uint_eq(tb_check_thread_find(&chk, 2)->blocked, 2);
	ck_assert_uint_eq(tb_check_thread_find(&chk, 3)->blocked, 0);
	ck_assert_uint_eq(chk.sched.cpu_ns, 1000);
	done();
}
END_TEST

/* The importer sorts by time: two sequences, file order is not time. */
START_TEST(test_sched_replayed_in_time_order)
{
	sw(SEQ + 1, 3000, 3, 0, 2, 0);
	sw(SEQ, 1000, 0, 0, 2, 0);
	sw(SEQ, 2000, 2, 0, 3, 0);
	sw(SEQ + 1, 4000, 2, 0, 0, 0);
	check_image();
	ck_assert(tb_check_clean(&chk));
	ck_assert_uint_eq(cpu_of(2), 1000 + 1000);
	ck_assert_uint_eq(cpu_of(3), 1000);
	done();
}
END_TEST

/* A switch out of a task that was not running: its slice never ends. */
START_TEST(test_sched_mismatch_loses_the_slice)
{
	sw(SEQ, 1000, 0, 0, 2, 0);
	sw(SEQ, 2000, 3, 0, 4, 0);	/* 3 never ran: 2's slice is lost */
	sw(SEQ, 2500, 4, 0, 0, 0);
	check_image();
	ck_assert_uint_eq(chk.rule[TB_CK_SCHED_MISMATCH].count, 1);
	ck_assert_uint_eq(chk.rule[TB_CK_SCHED_MISMATCH].first_detail, 3);
	ck_assert_uint_eq(cpu_of(2), 0);
	ck_assert_uint_eq(cpu_of(4), 500);
	done();
	/* after a loss flag on the sequence: the lost switch explains it */
	sw(SEQ, 1000, 0, 0, 2, 0);
	sw(SEQ, 2000, 3, 0, 4, 0x41);
	check_image();
	ck_assert_uint_eq(chk.rule[TB_CK_SCHED_MISMATCH].count, 0);
	ck_assert_uint_eq(chk.rule[TB_CK_SCHED_MISMATCH].explained, 1);
	ck_assert(tb_check_clean(&chk));
	done();
}
END_TEST

/* What the tokenizer and parser drop. */
START_TEST(test_ftrace_events_the_importer_drops)
{
	struct msg s = { { 0 }, 0 }, e;

	m_uint(&s, SS_NEXT_PID, 2);
	fe(&e, 1000, 0, FE_SWITCH, &s);
	bundle(SEQ, -1, &e, 0);		/* no cpu */
	fe(&e, 1000, -1, FE_SWITCH, &s);
	bundle(SEQ, 0, &e, 0);		/* no pid */
	fe(&e, 1000, 0, 0, NULL);
	bundle(SEQ, 0, &e, 0);		/* no event */
	check_image();
	ck_assert_uint_eq(chk.rule[TB_CK_FTRACE_BAD].count, 3);
	ck_assert_uint_eq(chk.sched.switches, 0);
	done();
	fe(&e, 1000, 0, FE_SWITCH, &s);
	bundle(SEQ, 1024, &e, 0);	/* the import fails */
	check_image();
	ck_assert_uint_eq(chk.rule[TB_CK_IMPORT_ERROR].count, 1);
	done();
}
END_TEST

/* A blocked reason resolves only to this generation's kernel symbols. */
START_TEST(test_sched_blocked_reason_iids)
{
	ksym(SEQ, 7, "queue rx", true);
	sw(SEQ, 1000, 0, 0, 2, 0);
	sw(SEQ, 1500, 2, 1, 0, 0);
	blocked(SEQ, 1500, 2, 7);
	blocked(SEQ, 1500, 2, 8);	/* never interned */
	ksym(SEQ, 9, "delay", true);	/* a clear: 7 is gone */
	blocked(SEQ, 1600, 2, 7);
	blocked(SEQ, 1600, 2, 9);
	check_image();
	ck_assert_uint_eq(chk.rule[TB_CK_SCHED_IID].count, 2);
	ck_assert_uint_eq(chk.rule[TB_CK_SCHED_IID].first_detail, 8);
	ck_assert_uint_eq(tb_check_thread_find(&chk, 2)->reasons, 2);
	done();
}
END_TEST

/* A waking of a task that is not blocked is spurious. */
START_TEST(test_sched_spurious_waking)
{
	sw(SEQ, 1000, 0, 0, 2, 0);
	waking(SEQ, 1100, 0, 2, 0);	/* 2 is running */
	sw(SEQ, 1200, 2, 0, 0, 0);
	waking(SEQ, 1300, 0, 2, 0);	/* runnable (R) */
	check_image();
	ck_assert_uint_eq(tb_check_thread_find(&chk, 2)->spurious, 2);
	ck_assert_uint_eq(tb_check_thread_find(&chk, 2)->wakes, 0);
	done();
}
END_TEST

/* ------------------------------------------------------------------------
 * tbfreertos.h's hooks on the host: fake TCBs, a clock the test moves.
 */
TB_RTOS_DEFINE(4);
static uint64_t now_ns;
static uint8_t ring_mem[TB_RING_SIZE(512, 64)] TB_RING_ALIGNED;
static uint8_t rd_scratch[512];
static struct tb_ring ring;

static uint64_t test_now(void *ctx)
{
	(void)ctx;
	return now_ns;
}

static const struct tb_ev_clock test_clock = {
	test_now, NULL, TB_CLOCK_USER + 1, TB_CLOCK_BOOTTIME, test_now
};

struct fake_tcb {
	uint32_t number;
	char name[64];	/* configMAX_TASK_NAME_LEN: past TB_RTOS_NAME_MAX */
};

static struct fake_tcb tcbs[4];

static struct tb_rtos_task *task(int i)
{
	return tb__rtos_task(&tcbs[i], tcbs[i].number);
}

static void create(int i, const char *name, int prio, bool idle)
{
	ck_assert_uint_lt(strlen(name), sizeof(tcbs[i].name));
	strcpy(tcbs[i].name, name);
	tcbs[i].number = tb_rtos_task_created(&tcbs[i], tcbs[i].name, prio,
					      idle);
	ck_assert_uint_eq(tcbs[i].number, (uint32_t)i + 1);
	tb_rtos_ready(task(i), prio);	/* as prvAddTaskToReadyList */
}

/*
 * vTaskSwitchContext: out (ready or not) at @t, when the kernel charges
 * the task up to, then in a little later (choosing took time).  The
 * scheduler's start (@from -1) has no switch out: in at @t.
 */
static void switch_to(int from, bool ready, int to, uint64_t t)
{
	now_ns = t;
	if (from >= 0)
		tb_rtos_switched_out(task(from), ready);
	now_ns = from >= 0 ? t + 5 : t;
	tb_rtos_switched_in(task(to), task(to)->prio);
}

static int put_trace(void *ctx, const void *p, size_t n)
{
	(void)ctx;
	ck_assert_uint_le(image_len + n, sizeof(image));
	memcpy(image + image_len, p, n);
	image_len += n;
	return 0;
}

/* The ring through the service into image[], checked. */
static void service(void)
{
	static uint8_t rbuf[512];
	struct tb_trace_out out;
	struct tb_buf *buf;
	struct tb_bridge br;
	struct tb_bridge_config bc;
	int ret;

	memset(&out, 0, sizeof(out));
	out.write = put_trace;
	memset(&bc, 0, sizeof(bc));
	bc.ring = &ring;
	bc.scratch = rbuf;
	bc.producer_id = 1;
	bc.ident.uid = 1000;
	bc.ident.pid = 42;
	bc.bufs = &buf;
	bc.nbufs = 1;
	ck_assert_int_eq(tb_buf_new(&buf, 1 << 20, TB_BUF_RING_BUFFER, NULL,
				    NULL), TB_OK);
	ck_assert_int_eq(tb_bridge_init(&br, &bc), TB_OK);
	do
		ret = tb_bridge_drain(&br, 64, TB_READ_SCRAPE, NULL);
	while (ret == TB_LIMIT);
	ck_assert_int_ge(ret, 0);
	image_len = 0;
	ck_assert_int_ge(tb_trace_write(&out, buf), 0);
	tb_bridge_destroy(&br);
	tb_buf_destroy(buf);
	check_image();
}

static void rtos_setup(void)
{
	(void)rd_scratch;
	memset(&tb_rtos, 0, sizeof(tb_rtos));
	memset(tb__rtos_pool, 0, sizeof(tb__rtos_pool));
	memset(tb__rtos_wpool, 0, sizeof(tb__rtos_wpool));
	memset(ring_mem, 0, sizeof(ring_mem));
	memset(tcbs, 0, sizeof(tcbs));
	test_in_isr = 0;
	now_ns = 100;
	ck_assert_int_eq(tb_ring_init(&ring, ring_mem, sizeof(ring_mem), 512,
				      64), TB_OK);
	ck_assert_int_eq(tb_rtos_start(&ring, &test_clock, "test"), TB_OK);
}

TB_CATEGORY_DEFINE(cat_t, "t", 1);

/*
 * Idle, then A and B: A blocks on a named queue, an interrupt wakes it,
 * B is preempted; every CPU time is exact, the interrupt's flow ends on
 * A's track, the reason names the queue.
 */
START_TEST(test_hooks_schedule_to_trace)
{
	static int queue_obj;
	const struct tb_check_thread *a, *b, *idle;

	create(0, "IDLE", 0, true);
	create(1, "A", 2, false);
	create(2, "B", 1, false);
	tb_rtos_name_object(&queue_obj, "rx", TB_RTOS_WHY_QUEUE);
	tb_rtos_irq_name(24, "TIMER0");
	switch_to(-1, true, 1, 1000);		/* the scheduler starts: A */
	now_ns = 1100;
	TB_TRACE_BEGIN(&cat_t, "work");
	TB_TRACE_END(&cat_t);
	tb_rtos_blocking(TB_RTOS_WHY_QUEUE, &queue_obj);
	switch_to(1, false, 2, 2000);		/* A blocks: B */
	test_in_isr = 1;
	test_irq = 24;
	now_ns = 2500;
	tb_rtos_isr_enter();
	tb_rtos_ready(task(1), 2);		/* the interrupt readies A */
	tb_rtos_isr_exit();
	test_in_isr = 0;
	switch_to(2, true, 1, 2600);		/* B preempted: A runs */
	ck_assert_uint_eq(task(1)->flow, 0);	/* the flow ended here */
	switch_to(1, true, 1, 2700);		/* A again: no switch */
	tb_rtos_ready(task(2), 1);		/* B was ready: no wake */
	tb_rtos_blocking(TB_RTOS_WHY_NOTIFY, NULL);
	test_in_isr = 1;	/* the tick readies A before it leaves */
	tb_rtos_ready(task(1), 2);
	test_in_isr = 0;
	ck_assert_uint_eq(task(1)->flow, 0);
	tb_rtos_blocking(TB_RTOS_WHY_DELAY, NULL);
	switch_to(1, false, 0, 3000);		/* A delays: idle */
	tb_rtos_stop();
	service();
	ck_assert_msg(tb_check_clean(&chk), "violations: %llu",
		      (unsigned long long)tb_check_total(&chk, false));
	a = tb_check_thread_find(&chk, 2);
	b = tb_check_thread_find(&chk, 3);
	idle = tb_check_thread_find(&chk, 0);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_nonnull(idle);
	ck_assert_uint_eq(a->cpu_ns, 1000 + 400);
	ck_assert_uint_eq(b->cpu_ns, 600);
	ck_assert(idle->running);
	ck_assert_uint_eq(chk.sched.switches, tb_rtos.stats.switches);
	ck_assert_uint_eq(chk.sched.switches, 4);
	ck_assert_uint_eq(a->irq_wakes, 1);
	ck_assert_uint_eq(a->blocked, 2);
	ck_assert_uint_eq(a->reasons, 2);	/* "queue rx", "delay" */
	ck_assert_uint_eq(b->blocked, 0);	/* preempted: R */
	ck_assert_uint_eq(b->spurious, 0);
	ck_assert_uint_eq(a->spurious, 0);
	ck_assert_uint_eq(tb_rtos.stats.wakes, 3);	/* A, B new; A */
	ck_assert_uint_eq(chk.stats.flows_begun, 1);
	ck_assert_uint_eq(chk.stats.flows_ended, 1);
	ck_assert_uint_eq(chk.stats.slice_begins, 2);	/* work, TIMER0 */
	ck_assert_uint_eq(tb_rtos.stats.isr_wakes, 1);
	ck_assert_uint_eq(tb_rtos.stats.lost, 0);
	done();
}
END_TEST

/*
 * A is preempted with a fragment of its own open (as inside an event);
 * B writes its events meanwhile; A's packet goes on when it runs again.
 * Both sequences arrive whole, each task's events on its own track.
 */
START_TEST(test_hooks_preempted_mid_event)
{
	struct tb_span span;
	uint32_t i;

	create(0, "IDLE", 0, true);
	create(1, "A", 1, false);
	create(2, "B", 2, false);
	switch_to(-1, true, 1, 1000);
	ck_assert_ptr_eq(tb_rtos_current(), &task(1)->wr->ev);
	TB_TRACE_INSTANT(&cat_t, "a0");
	ck_assert_int_eq(tb_writer_open(&task(1)->wr->w, 8, 0, &span), TB_OK);
	switch_to(1, true, 2, 1500);		/* B preempts A mid-packet */
	ck_assert_uint_eq(tb_rtos.stats.preempt_open, 1);
	ck_assert_ptr_eq(tb_rtos_current(), &task(2)->wr->ev);
	for (i = 0; i < 50; i++)
		TB_TRACE_INSTANT(&cat_t, "b");
	tb_rtos_blocking(TB_RTOS_WHY_NOTIFY, NULL);
	switch_to(2, false, 1, 2000);
	ck_assert_ptr_eq(tb_rtos_current(), &task(1)->wr->ev);
	tb_ev_instant(NULL, NULL, NULL, NULL, 0);	/* nothing: EINVAL */
	memset(span.begin, 0, 8);			/* A's own bytes */
	ck_assert_int_eq(tb_writer_close(&task(1)->wr->w, 0, 0), TB_OK);
	TB_TRACE_INSTANT(&cat_t, "a1");
	test_in_isr = 1;			/* in a handler: no writer */
	ck_assert_ptr_null(tb_rtos_current());
	test_in_isr = 0;
	tb_rtos_stop();
	service();
	ck_assert(tb_check_clean(&chk));
	ck_assert_uint_eq(chk.stats.instants, 52);
	ck_assert_uint_eq(task(1)->wr->ev.stats.events, 2);
	ck_assert_uint_eq(task(2)->wr->ev.stats.events, 50);
	ck_assert_uint_eq(task(1)->wr->ev.stats.lost, 0);
	ck_assert_uint_eq(task(2)->wr->ev.stats.lost, 0);
	done();
}
END_TEST

/*
 * A full pool: the task runs untraced, shown as tid 1 with the others
 * beyond the pool, without a writer; the last slot waits for the idle
 * task, created last, as vTaskStartScheduler() does.
 */
START_TEST(test_hooks_pool_full)
{
	static struct fake_tcb extra;
	const struct tb_check_thread *u;

	create(0, "a", 1, false);
	create(1, "b", 1, false);
	create(2, "c", 1, false);
	ck_assert_uint_eq(tb_rtos_task_created(&extra, "x", 1, false), 0);
	ck_assert_uint_eq(tb_rtos.stats.untraced, 1);
	create(3, "IDLE", 0, true);		/* the kept slot */
	ck_assert_int_eq(task(3)->tid, 0);
	ck_assert_ptr_null(tb__rtos_task(&extra, 0));
	switch_to(-1, true, 1, 1000);
	now_ns = 2000;
	tb_rtos_switched_out(task(1), true);
	tb_rtos_switched_in(NULL, 1);		/* the untraced task */
	ck_assert_ptr_null(tb_rtos_current());
	now_ns = 2500;
	tb_rtos_switched_out(NULL, true);	/* from it, to idle */
	tb_rtos_switched_in(task(3), 0);
	tb_rtos_stop();
	service();
	ck_assert(tb_check_clean(&chk));
	ck_assert_uint_eq(tb_check_thread_find(&chk, 3)->cpu_ns, 1000);
	u = tb_check_thread_find(&chk, 1);
	ck_assert_ptr_nonnull(u);
	ck_assert_uint_eq(u->cpu_ns, 500);
	ck_assert(tb_check_thread_find(&chk, 0)->running);
	done();
}
END_TEST

/*
 * The largest packets: names past TB_RTOS_NAME_MAX, the largest
 * priority, a named object in a fresh state, in place in 512-byte
 * chunks and in the smallest, 256 (each asks for its largest size: an
 * overrun traps).
 */
static void largest_packets(void)
{
	static int obj;
	const char *long_name = "a-task-name-longer-than-thirty-two-bytes";
	uint64_t t0 = 1ull << 62;	/* nine-byte timestamps */
	int i;

	tb_rtos.next_tid = 0x7ffffff0;	/* five-byte tids */
	create(0, "IDLE", 0, true);
	create(1, long_name, 0x7fffffff, false);
	create(2, long_name, 0x7fffffff, false);
	tb_rtos_name_object(&obj, long_name, TB_RTOS_WHY_MUTEX);
	switch_to(-1, true, 1, t0 + 1000);
	for (i = 0; i < 40; i++) {	/* chunks fill, cross, refresh */
		tb_rtos_blocking(TB_RTOS_WHY_MUTEX, &obj);
		switch_to(1 + i % 2, false, 2 - i % 2,
			  t0 + 2000 + 100 * (uint64_t)i);
		tb_rtos_ready(task(1 + i % 2), 0x7fffffff);
		if (i % 8 == 0)
			tb_rtos.fresh = 1;	/* as after a loss */
	}
	tb_rtos_stop();
	service();
	ck_assert(tb_check_clean(&chk));
	ck_assert_uint_eq(chk.sched.switches, 41);
	ck_assert_uint_eq(tb_check_thread_find(&chk, 0x7ffffff2)->reasons, 20);
	ck_assert_uint_eq(tb_check_thread_find(&chk, 0x7ffffff2)->cpu_ns,
			  1000 + 19 * 100);	/* its last slice is open */
	ck_assert_uint_eq(tb_rtos.stats.lost, 0);
	done();
}

START_TEST(test_hooks_largest_packets)
{
	largest_packets();
}
END_TEST

START_TEST(test_hooks_largest_packets_small_chunks)
{
	memset(&tb_rtos, 0, sizeof(tb_rtos));
	memset(ring_mem, 0, sizeof(ring_mem));
	ck_assert_int_eq(tb_ring_init(&ring, ring_mem, TB_RING_SIZE(256, 64),
				      256, 64), TB_OK);
	ck_assert_int_eq(tb_rtos_start(&ring, &test_clock, "test"), TB_OK);
	largest_packets();
}
END_TEST

/* Tasks created before tb_rtos_start(): their writers and tracks then. */
START_TEST(test_hooks_tasks_before_start)
{
	memset(&tb_rtos, 0, sizeof(tb_rtos));
	memset(ring_mem, 0, sizeof(ring_mem));
	ck_assert_int_eq(tb_ring_init(&ring, ring_mem, sizeof(ring_mem), 512,
				      64), TB_OK);
	create(0, "IDLE", 0, true);
	create(1, "A", 1, false);
	ck_assert_ptr_null(task(1)->wr);	/* no ring yet */
	ck_assert_int_eq(tb_rtos_start(&ring, &test_clock, "late"), TB_OK);
	ck_assert_ptr_nonnull(task(1)->wr);
	ck_assert_ptr_null(task(0)->wr);	/* the idle task has none */
	ck_assert_ptr_eq(task(1)->track.parent, &tb_rtos.proc);
	switch_to(-1, true, 1, 1000);
	TB_TRACE_INSTANT(&cat_t, "a");
	switch_to(1, true, 0, 1500);
	tb_rtos_stop();
	service();
	ck_assert(tb_check_clean(&chk));
	ck_assert_uint_eq(chk.stats.instants, 1);
	ck_assert_uint_eq(tb_check_thread_find(&chk, 2)->cpu_ns, 500);
	done();
}
END_TEST

/*
 * Deleted tasks' slots and writers serve tasks created after them, but
 * never a writer id: an id names one event writer for the life of a boot
 * (docs/firmware.md, "Streaming"), or a stream host that lost a new
 * writer's first state would restate the old writer's interned names on
 * the new one's events.  A is deleted by B; B deletes itself; C and D
 * take their slots, each with an id of its own; every sequence decodes.
 */
START_TEST(test_hooks_deleted_tasks_ids_not_reused)
{
	uint16_t ids[4];
	int i, j;

	create(0, "IDLE", 0, true);
	create(1, "A", 1, false);
	create(2, "B", 1, false);
	ids[0] = task(1)->wr->w.id;
	ids[1] = task(2)->wr->w.id;
	switch_to(-1, true, 1, 1000);
	TB_TRACE_INSTANT(&cat_t, "a");
	switch_to(1, true, 2, 1500);
	tb_rtos_task_deleted(task(1));		/* B deletes A */
	create(1, "C", 1, false);		/* A's slot, A's writers */
	ids[2] = task(1)->wr->w.id;
	TB_TRACE_INSTANT(&cat_t, "b");
	tb_rtos_task_deleted(task(2));		/* B deletes itself */
	switch_to(2, false, 1, 2000);		/* its last switch: C */
	ck_assert_ptr_null(task(2));
	TB_TRACE_INSTANT(&cat_t, "c");
	create(2, "D", 1, false);		/* B's slot, B's writers */
	ids[3] = task(2)->wr->w.id;
	switch_to(1, true, 2, 2500);
	TB_TRACE_INSTANT(&cat_t, "d");
	for (i = 0; i < 4; i++)
		for (j = i + 1; j < 4; j++)
			ck_assert_msg(ids[i] != ids[j],
				      "tasks %d and %d: writer id %u", i, j,
				      ids[i]);
	tb_rtos_stop();
	service();
	ck_assert(tb_check_clean(&chk));
	ck_assert_uint_eq(chk.stats.instants, 4);
	done();
}
END_TEST

/* The last writer id goes to a task; the next task has no writers. */
START_TEST(test_hooks_writer_ids_used_up)
{
	create(0, "IDLE", 0, true);
	tb_rtos.next_wid = 0xffffu - TB_RTOS_WRITER_ID - 1;
	create(1, "last", 1, false);
	ck_assert_uint_eq(task(1)->wr->w.id, 0xffffu);
	create(2, "none", 1, false);
	ck_assert_ptr_null(task(2)->wr);
	ck_assert_uint_eq(tb_rtos.stats.untraced, 1);
	switch_to(-1, true, 2, 1000);
	ck_assert_ptr_null(tb_rtos_current());
	TB_TRACE_INSTANT(&cat_t, "lost");
	switch_to(2, true, 1, 1500);
	TB_TRACE_INSTANT(&cat_t, "kept");
	tb_rtos_stop();
	service();
	ck_assert(tb_check_clean(&chk));
	ck_assert_uint_eq(chk.stats.instants, 1);
	ck_assert_uint_eq(cpu_of(3), 500);
	done();
}
END_TEST

/*
 * The switch hooks write inside PendSV (an interrupt handler), where a
 * platform's wake hook (TB_WAKE_HOOK: an RTOS call) may not run; tbsync.h
 * promises it is never called from one.  A reader asleep on the doorbell
 * (tb_bell_prepare()) stays asleep while the kernel's writer fills the
 * ring to its loss from the handler; it wakes by its own timeout, or by a
 * writer outside a handler (the flag stays set for it).
 */
START_TEST(test_hooks_never_ring_the_doorbell_from_a_handler)
{
	uint32_t seq = tb_bell_prepare(ring.bell);
	int i;

	create(0, "IDLE", 0, true);
	create(1, "A", 1, false);
	create(2, "B", 1, false);
	test_in_isr = 1;
	switch_to(-1, true, 1, 1000);
	for (i = 0; !tb_rtos.stats.lost && i < 100000; i++)
		switch_to(1 + i % 2, true, 2 - i % 2, 2000 + 10 * (uint64_t)i);
	test_in_isr = 0;
	ck_assert_uint_gt(tb_rtos.stats.lost, 0);	/* the ring filled */
	ck_assert_uint_eq(tb_atomic_load(&ring.bell->sleeping, TB_RLX), 1);
	ck_assert_uint_eq(tb_atomic_load(&ring.bell->seq, TB_RLX), seq);
	tb_bell_cancel(ring.bell);
	tb_rtos_stop();
}
END_TEST

START_TEST(test_hooks_refuse_a_clock_off_the_trace)
{
	struct tb_ev_clock other = test_clock;

	other.ref_now = NULL;
	memset(&tb_rtos, 0, sizeof(tb_rtos));
	ck_assert_int_eq(tb_rtos_start(&ring, &other, "x"), TB_ECLOCKREF);
	ck_assert_int_eq(tb_rtos_start(NULL, &test_clock, "x"), TB_EINVAL);
}
END_TEST

static Suite *rtos_suite(void)
{
	Suite *s = suite_create("rtos");
	TCase *t = tcase_create("sched");

	tcase_add_test(t, test_sched_cpu_time_per_thread);
	tcase_add_test(t, test_sched_replayed_in_time_order);
	tcase_add_test(t, test_sched_mismatch_loses_the_slice);
	tcase_add_test(t, test_ftrace_events_the_importer_drops);
	tcase_add_test(t, test_sched_blocked_reason_iids);
	tcase_add_test(t, test_sched_spurious_waking);
	suite_add_tcase(s, t);
	t = tcase_create("hooks");
	tcase_add_checked_fixture(t, rtos_setup, NULL);
	tcase_add_test(t, test_hooks_schedule_to_trace);
	tcase_add_test(t, test_hooks_preempted_mid_event);
	tcase_add_test(t, test_hooks_pool_full);
	tcase_add_test(t, test_hooks_largest_packets);
	tcase_add_test(t, test_hooks_largest_packets_small_chunks);
	tcase_add_test(t, test_hooks_tasks_before_start);
	tcase_add_test(t, test_hooks_deleted_tasks_ids_not_reused);
	tcase_add_test(t, test_hooks_writer_ids_used_up);
	tcase_add_test(t, test_hooks_never_ring_the_doorbell_from_a_handler);
	tcase_add_test(t, test_hooks_refuse_a_clock_off_the_trace);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(rtos_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
