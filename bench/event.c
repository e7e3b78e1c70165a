/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/event.c - what the event layer (tbevent.h) costs a writer thread,
 * beside tb_writer_write_packet() of the same bytes in the same run, and
 * how many bytes an event takes with and without interning.
 *
 * Cost.  One writer thread, a ring of 1024 chunks of 4 KiB, TB_DROP.  A
 * timed run does ITERS operations (a slice = BEGIN + END, a counter = one
 * value) in batches of BATCH; after each batch the clock stops and the
 * ring is drained (untimed), so the writer never finds it full.  Right
 * after each run of the layer, the same run times the baseline: the
 * packets one operation of that row wrote (captured from the ring after
 * a warm-up, so in a steady state: no descriptors, no new interned data),
 * written again ITERS times with tb_writer_write_packet(), batched and
 * drained the same way.  A row prints the median run of each (for an
 * even TB_BENCH_RUNS the lower middle one) and their ratio.  A run that
 * lost a packet fails the bench: nothing wins by dropping.
 *
 *   slice / counter / counter-double: the macros, CLOCK_BOOTTIME
 *   slice-fast / counter-fast: the same with TB_EV_FAST_CLOCK (BOOTTIME
 *       from the CPU's counter; where there is none, the same as slice)
 *   slice-args: BEGIN with two annotations (uint, string), END with one
 *   slice-own-clock: the caller's clock (a counter): the encoder alone
 *   slice-defaults: TB_EV_DEFAULTS (no track_uuid on the writer's track)
 *   slice-delta, instant-delta, counter-delta: TB_EV_DELTA_TIME
 *       (timestamps as deltas on an incremental clock)
 *   instant / instant-dynamic: one INSTANT named by a literal (the
 *       macro: interned by address) and by a buffer (tb_ev_instant():
 *       interned by content, hashed and compared on every event); the
 *       line after the table gives their ratio
 *   slice-args-dyn: slice-args through the functions, every name
 *       (event and annotations) in a buffer
 *   slice-copy: the same events encoded into a buffer first, then
 *       tb_writer_write_packet() (what the layer would cost if it did not
 *       encode in place; private helpers of tbevent.h, bench only, and
 *       without the slice stack and checks of tb_ev_emit: a little
 *       cheaper than it would be).  Copying an event of 20-30 bytes
 *       costs next to nothing: in place is not faster at these sizes;
 *       it is there because it needs no buffer as large as the largest
 *       packet, and streams a long annotation across chunks.
 *   *-off: the category disabled: one relaxed load and a branch
 *   clock: two reads of CLOCK_BOOTTIME, what a slice's timestamps cost
 *   clock-fast: two tb_ev_now() of a writer with TB_EV_FAST_CLOCK
 *
 * Bytes.  A demo-like workload (examples/demo.c's request handler: nested
 * request slices, each BEGIN with its sequence number, each END with its
 * own, a few more annotations on some stages) traced for REQUESTS
 * requests, names inline, interned, and interned with TB_EV_DEFAULTS
 * (hashed 64-bit track uuids, as tb_ev_uuid() makes), in one state and
 * with a fresh state every 6250 events (the demo's rate: 25000 events/s
 * per writer, a long-trace write every 250 ms bumps the generation).
 * Bytes per event count every packet written (descriptors and interned
 * data included), divided by the events.
 *
 * Instructions.  bench_event --count N [PATTERN...] times nothing: for
 * each row with a baseline it reaches the steady state (the warm-up and
 * the capture above), then runs the operation N times in count_layer()
 * and writes its captured packets N times in count_raw(), the ring not
 * drained in between (N operations fit it; chunk claims are in, as in
 * real use).  Under callgrind (bench/instr.sh, make bench-instr) each
 * function's inclusive instructions over N are the row's instructions
 * per operation, the layer's and the raw write's.
 *
 * usage: bench_event [-l | --list] [--count N] [PATTERN...]
 *        (bench.h: rows by name)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tbevent.h"
#include "tbpacket.h"
#include "bench.h"

#define CHUNK_SIZE	4096u
#define NUM_CHUNKS	1024u
#define BATCH		8192u		/* operations, then a drain */
#define ITERS		(16u * BATCH)	/* operations per run */
#define WARMUP		BATCH
#define CAP_MAX		16		/* packets of one operation */
#define PKT_MAX		1024u
#define REQUESTS	20000u

TB_CATEGORY_DEFINE(cat_on, "bench", 1);
TB_CATEGORY_DEFINE(cat_off, "bench_off", 0);

enum op {
	OP_SLICE,
	OP_SLICE_ARGS,
	OP_SLICE_ARGS_DYN,
	OP_INSTANT,
	OP_INSTANT_DYN,
	OP_COUNTER,
	OP_COUNTER_DOUBLE,
	OP_SLICE_FAST,
	OP_COUNTER_FAST,
	OP_SLICE_OWN_CLOCK,
	OP_SLICE_DEFAULTS,
	OP_SLICE_DELTA,
	OP_INSTANT_DELTA,
	OP_COUNTER_DELTA,
	OP_SLICE_COPY,
	OP_SLICE_OFF,
	OP_COUNTER_OFF,
	OP_CLOCK,
	OP_CLOCK_FAST,
};

struct row {
	const char *name;
	enum op op;
	int baseline;		/* has a raw write_packet() baseline */
	const char *what;
};

/* In the order of enum op: rows[op] is op's row. */
static const struct row rows[] = {
	{ "slice", OP_SLICE, 1, "BEGIN + END" },
	{ "slice-args", OP_SLICE_ARGS, 1, "BEGIN(2 args) + END(1 arg)" },
	{ "slice-args-dyn", OP_SLICE_ARGS_DYN, 1,
	  "slice-args, names in buffers" },
	{ "instant", OP_INSTANT, 1, "INSTANT, literal name" },
	{ "instant-dynamic", OP_INSTANT_DYN, 1, "INSTANT, name in a buffer" },
	{ "counter", OP_COUNTER, 1, "int64 value" },
	{ "counter-double", OP_COUNTER_DOUBLE, 1, "double value" },
	{ "slice-fast", OP_SLICE_FAST, 1, "BEGIN + END, fast clock" },
	{ "counter-fast", OP_COUNTER_FAST, 1, "int64 value, fast clock" },
	{ "slice-own-clock", OP_SLICE_OWN_CLOCK, 1, "BEGIN + END, no clock" },
	{ "slice-defaults", OP_SLICE_DEFAULTS, 1, "BEGIN + END, defaults" },
	{ "slice-delta", OP_SLICE_DELTA, 1, "BEGIN + END, delta times" },
	{ "instant-delta", OP_INSTANT_DELTA, 1, "INSTANT, delta times" },
	{ "counter-delta", OP_COUNTER_DELTA, 1, "int64 value, delta times" },
	{ "slice-copy", OP_SLICE_COPY, 1, "encode to buffer + write" },
	{ "slice-off", OP_SLICE_OFF, 0, "BEGIN + END, disabled" },
	{ "counter-off", OP_COUNTER_OFF, 0, "counter, disabled" },
	{ "clock", OP_CLOCK, 0, "2 x CLOCK_BOOTTIME" },
	{ "clock-fast", OP_CLOCK_FAST, 0, "2 x tb_ev_now(), fast clock" },
};

#define NROWS	(sizeof(rows) / sizeof(rows[0]))

struct bench {
	struct tb_ring ring;
	void *mem;
	struct tb_writer w;
	struct tb_reader rd;
	struct tb_reassembly ra;
	void *ramem;
	struct tb_ev_writer ew;
	struct tb_track proc, thread, ctr;
	uint8_t wscratch[CHUNK_SIZE], rscratch[CHUNK_SIZE];
	/* the packets one operation wrote, for the baseline */
	unsigned ncap;
	uint32_t caplen[CAP_MAX];
	uint8_t cap[CAP_MAX][PKT_MAX];
	int capturing;
	/* bytes */
	uint64_t bytes, packets, events;
	uint64_t clock;
};

static volatile uint64_t sink;

/* Names in buffers, as a caller that formats them has them. */
static char dyn_name[32], dyn_seq[16], dyn_table[16], dyn_end[16];

/* The layer's median ns/op per row, for the ratios after the table. */
static double median_of[32];

static uint64_t own_clock(void *ctx)
{
	struct bench *b = (struct bench *)ctx;

	return b->clock += 17;
}

static const struct tb_ev_clock own = { own_clock, NULL, TB_CLOCK_BOOTTIME,
					0, NULL };
static struct tb_ev_clock own_ctx;

static void on_packet(void *ctx, const struct tb_packet *p)
{
	struct bench *b = (struct bench *)ctx;
	struct tb_pb_reader r;
	struct tb_pb_field f;

	b->bytes += p->len;
	b->packets++;
	tb_pb_reader_init(&r, p->data, p->len);
	while (tb_pb_next(&r, &f) > 0)
		if (f.number == 11)	/* TracePacket.track_event */
			b->events++;
	if (!b->capturing)
		return;
	if (b->ncap >= CAP_MAX || p->len > PKT_MAX) {
		fprintf(stderr, "bench: capture overflow\n");
		exit(1);
	}
	memcpy(b->cap[b->ncap], p->data, p->len);
	b->caplen[b->ncap++] = p->len;
}

/* Takes everything the writer published (untimed). */
static void drain(struct bench *b, int packets)
{
	int ret;

	tb_writer_release(&b->w);
	do
		ret = packets ?
		      tb_reader_drain_packets(&b->rd, &b->ra, 256,
					      TB_READ_SCRAPE, on_packet, b,
					      NULL) :
		      tb_reader_drain(&b->rd, 256, TB_READ_SCRAPE, NULL, NULL,
				      NULL);
	while (ret == TB_LIMIT);
	if (ret == TB_EPROTO) {
		fprintf(stderr, "bench: ring stopped\n");
		exit(1);
	}
}

static void setup(struct bench *b, const struct tb_ev_clock *clock,
		  unsigned flags)
{
	size_t len = tb_ring_size(CHUNK_SIZE, NUM_CHUNKS);
	size_t ralen = tb_reassembly_size(1, 64 * 1024);

	memset(b, 0, sizeof(*b));
	/* aligned to TB_RING_LINE, as tb_ring_init() requires */
	if (posix_memalign(&b->mem, TB_RING_LINE, len))
		b->mem = NULL;
	else
		memset(b->mem, 0, len);
	b->ramem = malloc(ralen);
	if (!b->mem || !b->ramem ||
	    tb_ring_init(&b->ring, b->mem, len, CHUNK_SIZE, NUM_CHUNKS) ||
	    tb_writer_init(&b->w, &b->ring, 1, 0, TB_DROP, b->wscratch) ||
	    tb_reader_init(&b->rd, &b->ring, b->rscratch) ||
	    tb_reassembly_init(&b->ra, b->ramem, ralen, 1, 64 * 1024,
			       TB_OVERSIZE_DROP)) {
		fprintf(stderr, "bench: setup failed\n");
		exit(1);
	}
	/* uuids like the demo's: pid << 16, then a hashed thread track */
	tb_track_process(&b->proc, (uint64_t)4242 << 16, 4242, "bench");
	tb_track_thread(&b->thread, tb_ev_uuid(4242, 4243), &b->proc, 4242,
			4243, "writer 1");
	tb_track_counter(&b->ctr, tb_ev_uuid(4242, 1), &b->proc, "queue",
			 TB_UNIT_COUNT);
	if (clock == &own) {
		own_ctx = own;
		own_ctx.ctx = b;
		clock = &own_ctx;
	}
	if (tb_ev_writer_init(&b->ew, &b->w, &b->thread, clock, flags)) {
		fprintf(stderr, "bench: tb_ev_writer_init failed\n");
		exit(1);
	}
}

/* The writer a row runs on: its clock and flags. */
static void setup_row(struct bench *b, const struct row *rw)
{
	setup(b, rw->op == OP_SLICE_OWN_CLOCK ? &own : NULL,
	      rw->op == OP_SLICE_DEFAULTS ? TB_EV_DEFAULTS :
	      rw->op == OP_SLICE_DELTA || rw->op == OP_INSTANT_DELTA ||
	      rw->op == OP_COUNTER_DELTA ? TB_EV_DELTA_TIME :
	      rw->op == OP_SLICE_FAST || rw->op == OP_COUNTER_FAST ||
	      rw->op == OP_CLOCK_FAST ? TB_EV_FAST_CLOCK : 0);
}

static void teardown(struct bench *b)
{
	free(b->mem);
	free(b->ramem);
}

/*
 * The layer's steps, but encoded into a buffer and then copied with
 * tb_writer_write_packet(): steady state only (the warm-up established
 * the state), private helpers of tbevent.h.
 */
static void copy_emit(struct tb_ev_writer *ew, unsigned type,
		      const char *name)
{
	static uint8_t buf[PKT_MAX];
	struct tb__ev_track *slot;
	struct tb__ev_plan pl;
	struct tb__ev_out o;
	struct tb_ev_event ev;

	tb__ev_fill(&ev, type, &cat_on, name, NULL, NULL, 0);
	tb__ev_items(ew, &ev, &pl.ts);
	if (tb__ev_check_state(ew) ||
	    tb__ev_use_track(ew, ew->track, &slot))
		return;
	tb__ev_plan_track(ew, &pl, ew->track, slot);
	pl.ts = tb_ev_now(ew);
	pl.tv = pl.ts;
	tb__ev_plan(ew, &ev, &pl);
	o.w = NULL;
	o.p = o.frag = buf;
	o.end = buf + sizeof(buf);
	o.left = pl.size;
	o.ret = TB_OK;
	tb__ev_body_put(&o, ew, &ev, &pl);
	if (tb_writer_write_packet(ew->w, buf, pl.size))
		tb__ev_lost(ew, TB_FULL);
}

static inline __attribute__((always_inline)) void run_op(struct bench *b,
							 enum op op,
							 uint32_t i)
{
	struct tb_ev_writer *ew = &b->ew;

	switch (op) {
	case OP_SLICE:
	case OP_SLICE_FAST:
	case OP_SLICE_OWN_CLOCK:
	case OP_SLICE_DEFAULTS:
	case OP_SLICE_DELTA:
		TB_TRACE_BEGIN_W(ew, &cat_on, "HandleRequest");
		TB_TRACE_END_W(ew, &cat_on);
		break;
	case OP_SLICE_ARGS:
		TB_TRACE_BEGIN_W(ew, &cat_on, "QueryDatabase",
				 TB_ARG_UINT("seq", i),
				 TB_ARG_STR("table", "users"));
		TB_TRACE_END_W(ew, &cat_on, TB_ARG_UINT("end_seq", i));
		break;
	case OP_SLICE_ARGS_DYN: {
		struct tb_arg a[2];

		a[0] = tb_arg_uint(dyn_seq, i);
		a[1] = tb_arg_str(dyn_table, "users");
		tb_ev_begin(ew, &cat_on, dyn_name, a, 2);
		a[0] = tb_arg_uint(dyn_end, i);
		tb_ev_end(ew, &cat_on, a, 1);
		break;
	}
	case OP_INSTANT:
	case OP_INSTANT_DELTA:
		TB_TRACE_INSTANT_W(ew, &cat_on, "QueryDatabase");
		break;
	case OP_INSTANT_DYN:
		tb_ev_instant(ew, &cat_on, dyn_name, NULL, 0);
		break;
	case OP_COUNTER:
	case OP_COUNTER_FAST:
	case OP_COUNTER_DELTA:
		TB_TRACE_COUNTER_W(ew, &cat_on, &b->ctr, i & 1023);
		break;
	case OP_COUNTER_DOUBLE:
		TB_TRACE_COUNTER_DOUBLE_W(ew, &cat_on, &b->ctr,
					  (double)(i & 1023) * 0.5);
		break;
	case OP_SLICE_COPY:
		copy_emit(ew, TB_EV_SLICE_BEGIN, "HandleRequest");
		copy_emit(ew, TB_EV_SLICE_END, NULL);
		break;
	case OP_SLICE_OFF:
		TB_TRACE_BEGIN_W(ew, &cat_off, "HandleRequest",
				 TB_ARG_UINT("seq", i));
		TB_TRACE_END_W(ew, &cat_off);
		break;
	case OP_COUNTER_OFF:
		TB_TRACE_COUNTER_W(ew, &cat_off, &b->ctr, i);
		break;
	case OP_CLOCK:
		sink += tb_ev_boottime_ns();
		sink += tb_ev_boottime_ns();
		break;
	case OP_CLOCK_FAST:
		sink += tb_ev_now(ew);
		sink += tb_ev_now(ew);
		break;
	}
}

/* ns per operation of the layer over ITERS operations. */
static double time_layer(struct bench *b, enum op op)
{
	double t = 0, t0;
	uint32_t i = 0, k;

	while (i < ITERS) {
		t0 = bench_now();
		for (k = 0; k < BATCH; k++, i++)
			run_op(b, op, i);
		t += bench_now() - t0;
		drain(b, 0);
	}
	return t * 1e9 / ITERS;
}

/* ns per operation of writing the captured packets again. */
static double time_raw(struct bench *b)
{
	double t = 0, t0;
	uint32_t i = 0, k, j;
	int bad = 0;

	while (i < ITERS) {
		t0 = bench_now();
		for (k = 0; k < BATCH; k++, i++)
			for (j = 0; j < b->ncap; j++)
				bad |= tb_writer_write_packet(&b->w,
							      b->cap[j],
							      b->caplen[j]);
		t += bench_now() - t0;
		drain(b, 0);
	}
	if (bad) {
		fprintf(stderr, "bench: VERIFY FAILED: a raw write failed\n");
		exit(1);
	}
	return t * 1e9 / ITERS;
}

/* One operation's packets, in a steady state. */
static void capture(struct bench *b, enum op op)
{
	uint32_t i;

	for (i = 0; i < WARMUP; i++)
		run_op(b, op, i);
	drain(b, 1);
	b->capturing = 1;
	b->ncap = 0;
	run_op(b, op, 0);
	drain(b, 1);
	b->capturing = 0;
}

/*
 * --count: the layer's operation @n times, then the raw write of its
 * packets @n times (out of line: callgrind counts each function).
 */
#define COUNT_MAX	20000u	/* operations that fit the ring undrained */

static __attribute__((noinline)) void count_layer(struct bench *b,
						   enum op op, uint32_t n)
{
	uint32_t i;

	/* a loop per operation, as a call site has it: no dispatch */
#define COUNT(o) case o: for (i = 0; i < n; i++) run_op(b, o, i); break
	switch (op) {
	COUNT(OP_SLICE); COUNT(OP_SLICE_ARGS); COUNT(OP_SLICE_ARGS_DYN);
	COUNT(OP_INSTANT); COUNT(OP_INSTANT_DYN); COUNT(OP_COUNTER);
	COUNT(OP_COUNTER_DOUBLE); COUNT(OP_SLICE_FAST); COUNT(OP_COUNTER_FAST);
	COUNT(OP_SLICE_OWN_CLOCK); COUNT(OP_SLICE_DEFAULTS);
	COUNT(OP_SLICE_DELTA); COUNT(OP_INSTANT_DELTA); COUNT(OP_COUNTER_DELTA);
	COUNT(OP_SLICE_COPY); COUNT(OP_SLICE_OFF); COUNT(OP_COUNTER_OFF);
	COUNT(OP_CLOCK); COUNT(OP_CLOCK_FAST);
	}
#undef COUNT
}

static __attribute__((noinline)) int count_raw(struct bench *b, uint32_t n)
{
	uint32_t i, j;
	int bad = 0;

	for (i = 0; i < n; i++)
		for (j = 0; j < b->ncap; j++)
			bad |= tb_writer_write_packet(&b->w, b->cap[j],
						      b->caplen[j]);
	return bad;
}

/* A row's writer in the steady state, and the bytes of one operation. */
static struct bench *row_bench(const struct row *rw, uint32_t *bytes)
{
	struct bench *b = (struct bench *)malloc(sizeof(*b));
	uint32_t j;

	if (!b)
		exit(1);
	setup_row(b, rw);
	capture(b, rw->op);
	for (*bytes = 0, j = 0; j < b->ncap; j++)
		*bytes += b->caplen[j];
	return b;
}

static int lost(const struct bench *b)
{
	return b->ew.stats.lost || b->ew.stats.not_written;
}

static int run_row(const struct row *rw, unsigned runs)
{
	double layer[BENCH_MAX_RUNS] = { 0 }, raw[BENCH_MAX_RUNS] = { 0 };
	uint32_t bytes;
	struct bench *b = row_bench(rw, &bytes);
	unsigned r;
	int ok;

	for (r = 0; r < runs; r++) {
		layer[r] = time_layer(b, rw->op);
		raw[r] = rw->baseline ? time_raw(b) : 0;
	}
	ok = !lost(b);
	median_of[rw - rows] = bench_median(layer, runs);
	if (rw->baseline)
		printf("%-16s %-28s %7.1f %7.1f %6.2f %5.1f%% %4u B\n",
		       rw->name, rw->what, bench_median(layer, runs),
		       bench_median(raw, runs),
		       bench_median(layer, runs) / bench_median(raw, runs),
		       bench_spread(layer, runs), bytes);
	else
		printf("%-16s %-28s %7.2f %7s %6s %5.1f%%\n", rw->name,
		       rw->what, bench_median(layer, runs), "-", "-",
		       bench_spread(layer, runs));
	if (!ok)
		printf("%-16s VERIFY FAILED: %u packets lost\n", rw->name,
		       b->ew.stats.lost);
	if ((rw->op == OP_SLICE_FAST || rw->op == OP_COUNTER_FAST ||
	     rw->op == OP_CLOCK_FAST) && !tb_ev_fast_clock(&b->ew))
		printf("%-16s (no fast clock here: CLOCK_BOOTTIME)\n",
		       rw->name);
	fflush(stdout);
	teardown(b);
	free(b);
	return ok;
}

/* One row under --count: the steady state, then the counted loops. */
static int count_row(const struct row *rw, uint32_t n)
{
	uint32_t bytes;
	struct bench *b = row_bench(rw, &bytes);
	int bad;

	count_layer(b, rw->op, n);
	drain(b, 0);
	bad = count_raw(b, n);
	drain(b, 0);
	printf("%-16s %u operations, %u B each%s\n", rw->name, n, bytes,
	       bad || lost(b) ? ": VERIFY FAILED (a write failed)" : "");
	teardown(b);
	free(b);
	return !bad && !lost(b);
}

/* ------------------------------------------------------------------------
 * Bytes per event on the demo's workload.
 */
struct stage {
	unsigned depth;
	unsigned percent;
	const char *name;
};

static const struct stage request[] = {
	{ 0, 100, "HandleRequest" },
	{ 1, 100, "ParseRequest" },
	{ 1, 60, "Authenticate" },
	{ 2, 100, "TokenCache::Lookup" },
	{ 2, 20, "VerifySignature" },
	{ 1, 100, "QueryDatabase" },
	{ 2, 100, "AcquireConnection" },
	{ 2, 100, "ExecuteQuery" },
	{ 2, 40, "DecodeRows" },
	{ 1, 100, "RenderResponse" },
	{ 2, 100, "Serialize" },
	{ 2, 50, "Compress" },
	{ 1, 100, "SendResponse" },
};

#define NSTAGES	(sizeof(request) / sizeof(request[0]))

static uint64_t rng = 88172645463325252ull;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 32) % n;
}

static void begin(struct bench *b, const struct stage *s, uint64_t seq)
{
	struct tb_ev_writer *ew = &b->ew;

	/* the names are the table's: static, so the function takes them */
	if (s->depth == 2 && s->percent == 100 && s->name[0] == 'E') {
		struct tb_arg a[3];

		a[0] = tb_arg_uint("seq", seq);
		a[1] = tb_arg_str("table", "users");
		a[2] = tb_arg_int("rows", (int64_t)rnd(500));
		tb_ev_begin(ew, &cat_on, s->name, a, 3);
	} else if (s->depth == 0) {
		struct tb_arg a[2];

		a[0] = tb_arg_uint("seq", seq);
		a[1] = tb_arg_str("user", "u0042");
		tb_ev_begin(ew, &cat_on, s->name, a, 2);
	} else {
		struct tb_arg a = tb_arg_uint("seq", seq);

		tb_ev_begin(ew, &cat_on, s->name, &a, 1);
	}
}

static void end(struct bench *b, uint64_t seq)
{
	struct tb_arg a = tb_arg_uint("end_seq", seq);

	tb_ev_end(&b->ew, &cat_on, &a, 1);
}

static void workload(struct bench *b, unsigned restart_every)
{
	uint64_t seq = 0;
	unsigned r, i;

	for (r = 0; r < REQUESTS; r++) {
		unsigned open = 0, skip_below = ~0u;

		for (i = 0; i < NSTAGES; i++) {
			const struct stage *s = &request[i];

			if (s->depth > skip_below)
				continue;
			skip_below = ~0u;
			for (; open > s->depth; open--)
				end(b, seq++);
			if (rnd(100) >= s->percent) {
				skip_below = s->depth;
				continue;
			}
			begin(b, s, seq++);
			open++;
		}
		for (; open; open--)
			end(b, seq++);
		if (restart_every && b->ew.stats.events / restart_every !=
				     (b->ew.stats.events - 13) / restart_every)
			tb_ring_bump_generation(&b->ring);
		if (!(r % 64))
			drain(b, 1);
	}
	drain(b, 1);
}

static void bytes_per_event(void)
{
	static const struct {
		const char *what;
		unsigned flags, every;
	} cfg[] = {
		{ "inline names, one state", TB_EV_NO_INTERN, 0 },
		{ "interned, one state", 0, 0 },
		{ "interned + defaults, one state", TB_EV_DEFAULTS, 0 },
		{ "inline names, fresh every 6250", TB_EV_NO_INTERN, 6250 },
		{ "interned, fresh every 6250", 0, 6250 },
		{ "interned + defaults, fresh/6250", TB_EV_DEFAULTS, 6250 },
	};
	double base = 0;
	unsigned i;

	printf("\nBytes per event, demo-like workload (%u requests, nested "
	       "slices, a few annotations),\nevery packet counted "
	       "(descriptors and interned data too):\n", REQUESTS);
	printf("%-32s %8s %8s %9s %8s %7s\n", "", "events", "packets",
	       "bytes", "B/event", "vs");
	for (i = 0; i < sizeof(cfg) / sizeof(cfg[0]); i++) {
		struct bench *b = (struct bench *)malloc(sizeof(*b));
		double per;

		if (!b)
			exit(1);
		rng = 88172645463325252ull;
		setup(b, NULL, cfg[i].flags);
		workload(b, cfg[i].every);
		per = (double)b->bytes / (double)b->events;
		if (i % 3 == 0)
			base = per;
		printf("%-32s %8llu %8llu %9llu %8.2f %6.0f%%\n", cfg[i].what,
		       (unsigned long long)b->events,
		       (unsigned long long)b->packets,
		       (unsigned long long)b->bytes, per, 100.0 * per / base);
		if (lost(b))
			printf("VERIFY FAILED: %u packets lost\n",
			       b->ew.stats.lost);
		teardown(b);
		free(b);
	}
}

int main(int argc, char **argv)
{
	const char *names[NROWS + 1];
	unsigned char sel[NROWS + 1];
	unsigned runs = bench_runs(), i, failed = 0;

	for (i = 0; i < NROWS; i++)
		names[i] = rows[i].name;
	snprintf(dyn_name, sizeof(dyn_name), "%s", "QueryDatabase");
	snprintf(dyn_seq, sizeof(dyn_seq), "%s", "seq");
	snprintf(dyn_table, sizeof(dyn_table), "%s", "table");
	snprintf(dyn_end, sizeof(dyn_end), "%s", "end_seq");
	names[NROWS] = "bytes";
	if (argc > 2 && !strcmp(argv[1], "--count")) {
		unsigned long n = strtoul(argv[2], NULL, 10);

		if (!n || n > COUNT_MAX) {
			fprintf(stderr, "bench: --count N: 1..%u\n",
				COUNT_MAX);
			return 2;
		}
		argv[2] = argv[0];
		bench_select(argc - 2, argv + 2, names, NROWS, sel);
		for (i = 0; i < NROWS; i++)
			if (sel[i] && rows[i].baseline)
				failed += !count_row(&rows[i], (uint32_t)n);
		return failed ? 1 : 0;
	}
	bench_select(argc, argv, names, NROWS + 1, sel);
	printf("tbevent bench: one writer, %u chunks of %u B, TB_DROP; %u "
	       "operations per run in\nbatches of %u (the ring drained, "
	       "untimed, after each); median of %u runs\n(TB_BENCH_RUNS), "
	       "each followed by tb_writer_write_packet() of the same "
	       "bytes.\n\n", NUM_CHUNKS, CHUNK_SIZE, ITERS, BATCH, runs);
	printf("%-16s %-28s %7s %7s %6s %6s %6s\n", "row", "operation",
	       "ns/op", "raw ns", "ratio", "spread", "bytes");
	for (i = 0; i < NROWS; i++)
		if (sel[i])
			failed += !run_row(&rows[i], runs);
	if (sel[OP_INSTANT] && sel[OP_INSTANT_DYN])
		printf("\nnames by content: instant-dynamic / instant = %.2f "
		       "(%+.1f ns per event)\n",
		       median_of[OP_INSTANT_DYN] / median_of[OP_INSTANT],
		       median_of[OP_INSTANT_DYN] - median_of[OP_INSTANT]);
	if (sel[OP_SLICE_ARGS] && sel[OP_SLICE_ARGS_DYN])
		printf("names by content: slice-args-dyn / slice-args = "
		       "%.2f (%+.1f ns per slice, 4 names)\n",
		       median_of[OP_SLICE_ARGS_DYN] / median_of[OP_SLICE_ARGS],
		       median_of[OP_SLICE_ARGS_DYN] - median_of[OP_SLICE_ARGS]);
	if (sel[NROWS])
		bytes_per_event();
	printf("\nns/op: the layer, per operation (a slice is BEGIN + END); "
	       "raw ns: the same packets\nwritten with "
	       "tb_writer_write_packet(); ratio = ns/op / raw ns; spread: "
	       "(max - min)\n/ median of the layer's runs; bytes: of one "
	       "operation's packets.\n");
	if (failed)
		printf("bench: %u row(s) FAILED verification\n", failed);
	return failed ? 1 : 0;
}
