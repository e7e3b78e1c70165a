/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fw.c - a bare-metal tbring producer: two writers on one ring in RAM,
 * the main loop and a 4 kHz timer interrupt (the board's tick), which
 * preempts the main writer anywhere, mid-packet included.  The main loop
 * drains the ring when idle (an on-target tb_reader) and sends the chunks
 * over UART0 in tblink.h's frames; after a crash the ring is still in
 * RAM, for a debugger to take off and tbtrace convert to read.
 *
 * Built by make firmware-e2e (examples/firmware/e2e.sh) for every board
 * of boards/board.h (Cortex-M0, M3, M4F, M7, M33, RV32 with and without
 * the A extension) and run under QEMU.  Compile-time choices:
 *   FW_END=0   exit through semihosting after a final drain (default)
 *   FW_END=1   fault on purpose at the end (a load from an unmapped
 *              address): the board's fault handler prints the report and
 *              stops in board_halt(), where a debugger takes the RAM
 *   FW_END=2   the interrupt faults while the main writer holds an open
 *              packet
 *              (both are flight recorders: nothing streams, the idle
 *              loop keeps the latest chunks in the ring, recycle())
 *   FW_SHARED_ID  the interrupt's writer takes the main writer's id
 *              (breaks the ring's contract: the check must fail)
 *   FW_NEST    a third writer, in a second interrupt at a higher
 *              priority that preempts the tick's handler (nest.h)
 *   FW_RMW     no trace: the read-modify-writes of tbsync.h against an
 *              interrupt that lands between their load and store (rmw.h)
 *   FW_BENCH   measure instructions per event under -icount, and exit
 *   FW_CHUNK, FW_NCHUNKS, FW_ISR_HEADROOM, FW_ITERS  the ring (8 x 512 B),
 *              the chunks the interrupts leave to main (2), the main
 *              loop's iterations (1500)
 *   -D'TB_IN_INTERRUPT()=0'  no handler-mode check: the interrupt's
 *              stalling writes reach the wait hook, and main returns 3
 * The report ("fw: key=value ...", over semihosting) says what each
 * writer was told it wrote; every tagged event carries its writer's
 * sequence number ("seq") so the host proves each one is in the trace
 * exactly once and in order.
 */
#include "fw_config.h"
#include "tblink.h"

#ifndef FW_END
#define FW_END		0
#endif
#ifndef FW_ITERS
#define FW_ITERS	1500	/* main loop iterations */
#endif

#ifndef FW_CHUNK
#define FW_CHUNK	512u
#endif
#ifndef FW_NCHUNKS
#define FW_NCHUNKS	8u
#endif
#define FW_RING_BYTES	TB_RING_SIZE(FW_CHUNK, FW_NCHUNKS)	/* 4608 */
#define FW_TICK_HZ	4000u
/*
 * The chunks each interrupt's writer leaves to the main loop's: when the
 * link falls behind, the interrupts' events are refused first, and the
 * main loop still finds room for its fresh state after a loss.
 */
#ifndef FW_ISR_HEADROOM
#define FW_ISR_HEADROOM	2u
#endif
#define FW_CLOCK_ID	(TB_CLOCK_USER + 1)	/* sequence-scoped: 64..127 */
#define FW_MAIN_ID	1u
#ifdef FW_SHARED_ID
#define FW_ISR_ID	FW_MAIN_ID
#else
#define FW_ISR_ID	2u
#endif

/* The ring: a zeroed static array is an empty ring. */
uint8_t fw_ring_mem[FW_RING_BYTES] TB_RING_ALIGNED;

/* What the firmware did; printed at the end, and in RAM for a debugger. */
struct fw_report {
	uint32_t main_written;	/* tagged events written: the next seq */
	uint32_t isr_written;
	uint32_t main_failed;	/* tagged events whose write failed */
	uint32_t isr_failed;
	uint32_t ticks;
	uint32_t preempt_emit;	/* ticks inside a main event call */
	uint32_t preempt_open;	/* ticks with a main fragment open */
	uint32_t isr_refused;	/* stall-policy writes refused at once */
	uint32_t isr_waits;	/* waits in handler mode: must stay 0 */
	uint32_t frames;	/* frames sent over the UART */
	uint32_t recycled;	/* chunks the flight recorder dropped */
	uint32_t fault_mid_packet;
	uint32_t irq2_written;	/* FW_NEST: the second interrupt's writer */
	uint32_t irq2_failed;
	uint32_t nest_open;	/* it landed with the tick's packet open */
	uint32_t nest_emit;	/* ... inside a tick's event call */
	uint32_t nest_three;	/* ... which had preempted main's packet */
	uint32_t fpu_bad;	/* float results the interrupts changed */
	uint32_t done;
};
volatile struct fw_report fw_report;

static struct tb_ring ring;
static struct tb_writer main_w, isr_w;
static struct tb_ev_writer main_ev, isr_ev;
static struct tb_reader rd;
static struct tb_link_tx tx;
static uint8_t main_scratch[FW_CHUNK], isr_scratch[FW_CHUNK];
static uint8_t rd_scratch[FW_CHUNK];
static struct tb_track t_proc, t_main, t_isr, t_count;
static volatile uint32_t fw_ticks;	/* tick periods since start */
static volatile uint32_t main_in_event;	/* main is inside a tb_ev call */
static volatile uint32_t isr_in_event;	/* the tick is inside one */
static volatile uint32_t isr_on;	/* the interrupt traces */
static volatile uint32_t isr_fault_armed;
/*
 * Tagged main-loop events written since the flight recorder last dropped
 * everything (recycle()): the armed fault waits for one, so that the dump
 * holds the main writer's events whatever the timing (a fault right after
 * a recycle, with the main writer's first packet open in a fresh chunk,
 * would leave none of them in the ring).
 */
static volatile uint32_t main_since_recycle;

TB_CATEGORY_DEFINE(cat_fw, "fw", 1);

/* ------------------------------------------------------------------------
 * The clock: the board's, in nanoseconds since the tick started.  The
 * snapshot gives the same reading as BOOTTIME, so Perfetto places the
 * trace at the firmware's time zero.
 */
static uint64_t fw_now(void *ctx)
{
	(void)ctx;
	return board_now_ns();
}

static const struct tb_ev_clock fw_clock = {
	fw_now, NULL, FW_CLOCK_ID, TB_CLOCK_BOOTTIME, fw_now
};

int fw_wait(uint32_t *word, uint32_t val, uint32_t timeout_ms)
{
	(void)word, (void)val, (void)timeout_ms;
	if (board_irq_depth)	/* a handler: this would never return */
		fw_report.isr_waits++;
	return 0;		/* timed out: the writer gets TB_FULL */
}

void fw_wake(uint32_t *word)
{
	(void)word;
}

/* ------------------------------------------------------------------------
 * Output: the UART for frames, semihosting for the report.
 */
static void uart_put(void *ctx, const uint8_t *p, size_t n)
{
	(void)ctx;
	board_uart_put(p, n);
}

static char *fmt_u32(char *s, uint32_t v)
{
	char tmp[10];
	int n = 0;

	do
		tmp[n++] = (char)('0' + v % 10);
	while (v /= 10);
	while (n)
		*s++ = tmp[--n];
	return s;
}

static char *fmt_kv(char *s, const char *k, uint32_t v)
{
	*s++ = ' ';
	while (*k)
		*s++ = *k++;
	*s++ = '=';
	return fmt_u32(s, v);
}

static void report(const char *why)
{
	char line[400], *s = line;
	const char *p = "fw: " BOARD_NAME " ";

	while (*p)
		*s++ = *p++;
	while (*why)
		*s++ = *why++;
	s = fmt_kv(s, "main_written", fw_report.main_written);
	s = fmt_kv(s, "isr_written", fw_report.isr_written);
	s = fmt_kv(s, "main_failed", fw_report.main_failed);
	s = fmt_kv(s, "isr_failed", fw_report.isr_failed);
	s = fmt_kv(s, "ticks", fw_report.ticks);
	s = fmt_kv(s, "preempt_emit", fw_report.preempt_emit);
	s = fmt_kv(s, "preempt_open", fw_report.preempt_open);
	s = fmt_kv(s, "isr_refused", fw_report.isr_refused);
	s = fmt_kv(s, "isr_waits", fw_report.isr_waits);
	s = fmt_kv(s, "frames", fw_report.frames);
	s = fmt_kv(s, "recycled", fw_report.recycled);
	s = fmt_kv(s, "fault_mid_packet", fw_report.fault_mid_packet);
#ifdef FW_NEST
	s = fmt_kv(s, "irq2_written", fw_report.irq2_written);
	s = fmt_kv(s, "irq2_failed", fw_report.irq2_failed);
	s = fmt_kv(s, "nest_open", fw_report.nest_open);
	s = fmt_kv(s, "nest_emit", fw_report.nest_emit);
	s = fmt_kv(s, "nest_three", fw_report.nest_three);
#endif
#ifdef __ARM_FP
	s = fmt_kv(s, "fpu_bad", fw_report.fpu_bad);
#endif
	*s++ = '\n';
	*s = 0;
	board_puts(line);
}

static void fw_fault(void)
{
	report("fault");
}

/* ------------------------------------------------------------------------
 * Tagged events: each carries its writer's sequence number, which moves
 * only when the write succeeded.
 */
enum { K_BEGIN, K_INSTANT };

static int tagged(struct tb_ev_writer *ew, volatile uint32_t *seq,
		  volatile uint32_t *failed, int kind, const char *name)
{
	struct tb_arg a = tb_arg_uint("seq", *seq);
	int ret;

	ret = kind == K_BEGIN ? tb_ev_begin(ew, &cat_fw, name, &a, 1) :
				tb_ev_instant(ew, &cat_fw, name, &a, 1);
	if (ret == TB_OK)
		(*seq)++;
	else
		(*failed)++;
	return ret;
}

static int main_tagged(int kind, const char *name)
{
	int ret;

	main_in_event = 1;
	ret = tagged(&main_ev, &fw_report.main_written,
		     &fw_report.main_failed, kind, name);
	main_in_event = 0;
	if (ret == TB_OK)
		main_since_recycle++;
	return ret;
}

static void main_end(void)
{
	main_in_event = 1;
	tb_ev_end(&main_ev, &cat_fw, NULL, 0);
	main_in_event = 0;
}

static void main_counter(int64_t v)
{
	main_in_event = 1;
	tb_ev_counter(&main_ev, &cat_fw, &t_count, v);
	main_in_event = 0;
}

#ifdef __ARM_FP
/*
 * Floating point (a core with an FPU, -mfloat-abi=hard): the main loop
 * computes in the FPU's registers while the tick, which uses them too,
 * lands in the middle; the core must save and restore them around each
 * interrupt (lazily, as it does out of reset), or the result differs
 * from the one computed with interrupts masked at the start.
 */
static volatile uint32_t fw_fn = 64;	/* volatile: computed at run time */
static float fw_fref;
static volatile float fw_fsink;

static float fw_fspin(uint32_t n)
{
	float f = 1.0f;
	uint32_t i;

	for (i = 0; i < n; i++)
		f = f * 0.999f + 0.25f;
	return f;
}

static void fw_isr_float(void)
{
	fw_fsink = fw_fspin(fw_ticks % 8) * 3.0f;
}

static void fw_main_float(void)
{
	uint32_t key;

	if (!fw_fref) {
		key = board_irq_save();
		fw_fref = fw_fspin(fw_fn);
		board_irq_restore(key);
	}
	if (fw_fspin(fw_fn) != fw_fref)
		fw_report.fpu_bad++;
}
#endif

/* ------------------------------------------------------------------------
 * The interrupt: an instant every tick, and every fourth a slice with
 * some work in it (where the second interrupt of FW_NEST lands too).
 */
#define FW_ISR_WORK	100u	/* iterations of spin() */

static void spin(uint32_t n);

static void fw_tick(void)
{
	int ret;

	fw_ticks++;
	fw_report.ticks++;
#ifdef __ARM_FP
	fw_isr_float();
#endif
	if (main_in_event)
		fw_report.preempt_emit++;
	if (main_w.cur.open) {
		fw_report.preempt_open++;
		if (isr_fault_armed && main_since_recycle) {
			fw_report.fault_mid_packet = 1;
			(void)*(volatile uint32_t *)BOARD_BAD_ADDR;
		}
	}
	if (!isr_on)
		return;
	isr_in_event = 1;
	ret = tagged(&isr_ev, &fw_report.isr_written, &fw_report.isr_failed,
		     K_INSTANT, "tick");
	if (ret == TB_FULL)
		fw_report.isr_refused++;
	if (fw_ticks % 4 == 0) {
		ret = tagged(&isr_ev, &fw_report.isr_written,
			     &fw_report.isr_failed, K_BEGIN, "isr_work");
		if (ret == TB_OK) {
			spin(FW_ISR_WORK);
			tb_ev_end(&isr_ev, &cat_fw, NULL, 0);
		} else if (ret == TB_FULL) {
			fw_report.isr_refused++;
		}
	}
	isr_in_event = 0;
}

#ifdef FW_NEST
#include "nest.h"
#endif

/* ------------------------------------------------------------------------
 * The main loop's work, and its idle time: drain the ring to the UART.
 */
/*
 * A frame lost on the link takes the interned names and descriptors it
 * carried with it, and the writers cannot know: every FW_RESTATE frames
 * the ring's generation moves (tb_link_tx_restate()), so each writer
 * starts a fresh state (a few hundred bytes) and a host that lost frames
 * recovers soon after (docs/firmware.md, "Streaming").
 */
#ifndef FW_RESTATE
#define FW_RESTATE	64u
#endif

static void drain(enum tb_read_mode mode)
{
	int ret;

	/*
	 * Idle: one pass over what the ring holds.  An interrupt that writes
	 * faster than the link carries would keep the main loop here for
	 * good; the ring fills up instead, and refuses (counted).  The last
	 * drain (TB_READ_SCRAPE), with the writers stopped, takes it all.
	 */
	do
		ret = tb_reader_drain(&rd, FW_NCHUNKS, mode, tb_link_chunk_fn,
				      &tx, NULL);
	while (ret == TB_LIMIT && mode == TB_READ_SCRAPE);
	fw_report.frames = tx.seq;
	tb_link_tx_restate(&tx, &ring, FW_RESTATE);
}

/*
 * A writer's last words (the ENDs it owes, a loss it has not shown yet),
 * then its chunk let go.  On a full ring - or one full to an interrupt's
 * headroom - they are refused: drain, and try again.
 */
static void finish(struct tb_ev_writer *ew, struct tb_writer *w)
{
	int i;

	for (i = 0; i < 4 && tb_ev_writer_finish(ew) != TB_OK; i++)
		drain(TB_READ_LAZY);
	tb_writer_release(w);
}

static void discard(void *ctx, const struct tb_chunk_view *v)
{
	(void)ctx, (void)v;
	fw_report.recycled++;
}

/*
 * The flight recorder (fault builds): no host listens, so the ring keeps
 * the latest chunks for a debugger to find after a crash.  Writers never
 * overwrite, so once three quarters of the ring wait, the idle loop drops
 * them.  What stays must decode on its own: with interrupts masked (the
 * interrupt is never inside a write when the main loop runs), both
 * writers let go of their chunks and the ring's generation moves, so
 * every later packet goes into a chunk claimed from now on, and each
 * writer's first one starts a fresh incremental state.  Then, with
 * interrupts on again, the positions before that point are dropped.
 */
static void recycle(void)
{
	uint32_t wp = tb_atomic_load(&ring.hdr->write_pos, TB_RLX), upto, key;

	if (wp - rd.pos < FW_NCHUNKS * 3 / 4)
		return;
	key = board_irq_save();
	tb_writer_release(&main_w);
	tb_writer_release(&isr_w);
	tb_ring_bump_generation(&ring);
	upto = tb_atomic_load(&ring.hdr->write_pos, TB_RLX);
	main_since_recycle = 0;
	board_irq_restore(key);
	while (rd.pos != upto &&
	       tb_reader_drain(&rd, upto - rd.pos, TB_READ_LAZY, discard,
			       NULL, NULL) != TB_EPROTO)
		;
}

/* Idle: the drain is a slice of the main loop's too (how long it takes). */
static void idle(void)
{
	if (FW_END) {
		recycle();
		return;
	}
	main_tagged(K_BEGIN, "drain");
	drain(TB_READ_LAZY);
	main_end();
}

static void spin(uint32_t n)
{
	volatile uint32_t i;

	for (i = 0; i < n; i++)
		;
}

/*
 * The ring fills up (nobody drains it) while the interrupt keeps writing
 * with the stall policy: each of its writes that needs a chunk must be
 * refused at once, never wait.
 */
static void full_phase(void)
{
	uint32_t start, t0;

	while (main_tagged(K_INSTANT, "fill") == TB_OK)
		;
	start = fw_report.isr_refused;
	t0 = fw_ticks;
	while (fw_report.isr_refused < start + 3 && fw_ticks - t0 < 200)
		;
	idle();
}

static void setup(void)
{
	board_init();
	board_fault_fn = fw_fault;
	tb_ring_init(&ring, fw_ring_mem, sizeof(fw_ring_mem), FW_CHUNK,
		     FW_NCHUNKS);
	tb_writer_init(&main_w, &ring, FW_MAIN_ID, 0, TB_DROP, main_scratch);
	tb_writer_init(&isr_w, &ring, FW_ISR_ID, 0, TB_STALL, isr_scratch);
	tb_writer_set_headroom(&isr_w, FW_ISR_HEADROOM);
	tb_track_process(&t_proc, tb_ev_uuid(1, 0), 1, "firmware " BOARD_NAME);
	tb_track_thread(&t_main, tb_ev_uuid(1, 1), &t_proc, 1, 1, "main");
	tb_track_thread(&t_isr, tb_ev_uuid(1, 2), &t_proc, 1, 2, "tick");
	tb_track_counter(&t_count, tb_ev_uuid(1, 3), &t_proc, "loop",
			 TB_UNIT_COUNT);
	tb_ev_writer_init(&main_ev, &main_w, &t_main, &fw_clock, 0);
	tb_ev_writer_init(&isr_ev, &isr_w, &t_isr, &fw_clock, 0);
	tb_reader_init(&rd, &ring, rd_scratch);
	tb_link_tx_init(&tx, uart_put, NULL);
	tb_link_tx_hello(&tx, &ring);
}

#ifdef FW_BENCH
#include "bench.h"
#endif
#ifdef FW_RMW
#include "rmw.h"
#endif

int main(void)
{
	uint32_t i;
	int bad;

	setup();
#ifdef FW_BENCH
	return fw_bench();
#endif
#ifdef FW_RMW
	return fw_rmw();
#endif
	board_tick_start(FW_TICK_HZ, fw_tick);
#ifdef FW_NEST
	nest_setup();
#endif
	isr_on = 1;
	for (i = 0; i < FW_ITERS; i++) {
		main_tagged(K_BEGIN, "frame");
		main_counter((int64_t)i);
		main_tagged(K_BEGIN, "work");
		spin(20 + i % 64);
#ifdef __ARM_FP
		fw_main_float();
#endif
		main_end();
		if (i % 8 == 0)
			main_tagged(K_INSTANT, "mark");
		main_end();
		if (i % 4 == 3)
			idle();
		if (i == FW_ITERS / 2)
			full_phase();
		if (FW_END == 2 && i == FW_ITERS * 3 / 4)
			isr_fault_armed = 1;
	}
	if (FW_END == 1) {	/* half the ring written since the recycle */
		do
			main_tagged(K_INSTANT, "last");
		while (tb_atomic_load(&ring.hdr->write_pos, TB_RLX) - rd.pos <
		       FW_NCHUNKS / 2);
		(void)*(volatile uint32_t *)BOARD_BAD_ADDR;
	}
	if (FW_END == 2) {		/* the interrupt faults first */
		report("no fault");
		return 4;
	}
	board_tick_stop();		/* the interrupt is done */
	isr_on = 0;
#ifdef FW_NEST
	board_irq2_stop();
	finish(&irq2_ev, &irq2_w);
#endif
	finish(&main_ev, &main_w);
	finish(&isr_ev, &isr_w);
	drain(TB_READ_SCRAPE);
	tb_link_tx_stats(&tx, &ring);
	tb_link_tx_end(&tx);
	fw_report.done = 1;
	report("exit");
	/*
	 * the interrupt wrote mid-packet, was refused on a full ring, never
	 * waited; the second one landed in the tick's open packets; the
	 * floating-point registers survived every interrupt
	 */
	bad = fw_report.isr_waits != 0 || fw_report.isr_refused == 0 ||
	      fw_report.preempt_open == 0 || fw_report.fpu_bad != 0;
#ifdef FW_NEST
	bad = bad || fw_report.nest_open == 0 || fw_report.nest_three == 0;
#endif
	return bad ? 3 : 0;
}
