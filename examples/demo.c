/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * examples/demo.c - threads trace into a ring, a service writes a Perfetto
 * trace: the whole pipeline in one process, no set-up.
 *
 *   make demo          (or: ./build/demo -w 4 -d 3; ./build/demo -h)
 *
 * Writer threads trace a made-up request handler with the event layer
 * (tbevent.h): nested slices on each writer's thread track, a counter
 * track of the rows each writer decoded, a flow from each request's parse
 * to its response, and now and then an instant event with a debug
 * annotation of several KiB, a packet that spans chunks.  Every packet
 * goes through one shared-memory ring (tbring.h).  A service thread
 * (tbservice.h) drains the ring into a central buffer (tbuffer.h) and, in
 * long-trace mode, writes the buffer to demo.pftrace every 250 ms, so the
 * trace can outgrow the buffer.  Open the file in https://ui.perfetto.dev.
 *
 * The demo checks itself, two ways.  It reads the trace back and
 * compares, writer by writer, the events the writers were told were
 * written with the events in the file: every slice begin and instant
 * carries its writer's sequence number (a debug annotation, "seq"), so the
 * check sees order and gaps, not just counts.  And it runs the trace
 * checker (tbcheck.h), which applies the rules of Perfetto's importer:
 * every event's track and every interned name must resolve on its
 * sequence, slices must nest, and anything that breaks a rule must be
 * explained by a loss the trace flags.  It exits 1 if a writer's events
 * are out of order or repeated, if a gap is not flagged, if events are
 * missing that no loss counter accounts for, or if the checker finds a
 * violation no loss explains.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tools/tbcheck.h"
#include "tbevent.h"
#include "tbservice.h"

#define MAX_WRITERS	64
#define PRODUCER_ID	1	/* the one ring's producer */
#define BUFFER_ID	0	/* the writers' target: the one central buffer */
#define TEXT_MAX	12288	/* the largest debug annotation string */
#define PKT_MAX		(TEXT_MAX + 512)

/*
 * What the check reads back, from Perfetto's protos (trace_packet.proto,
 * track_event/track_event.proto, track_event/debug_annotation.proto).
 */
enum {
	TP_TRACK_EVENT = 11,		/* TracePacket */
	TP_TRACK_DESCRIPTOR = 60,
	TE_DEBUG_ANNOTATIONS = 4,	/* TrackEvent */
	DA_UINT_VALUE = 3,		/* DebugAnnotation */
};

/* The categories the writers trace in; all on. */
TB_CATEGORY_DEFINE(cat_request, "request", 1);
TB_CATEGORY_DEFINE(cat_db, "db", 1);
TB_CATEGORY_DEFINE(cat_debug, "debug", 1);

struct options {
	unsigned writers;		/* -w */
	unsigned seconds;		/* -d */
	uint32_t chunk_size;		/* -c */
	uint32_t num_chunks;		/* -n */
	size_t buffer_size;		/* -b */
	enum tb_buf_policy fill;	/* -p ring|discard */
	uint32_t period_ms;		/* -l, 0: write the buffer at the end */
	enum tb_full_policy full;	/* -s: stall instead of drop */
	unsigned rate;			/* -r: packets/s per writer, 0: no limit */
	const char *output;		/* -o */
};

/* Counters another thread reads while the run goes on: relaxed atomics. */
static void publish(uint64_t *c, uint64_t v)
{
	__atomic_store_n(c, v, __ATOMIC_RELAXED);
}

static uint64_t peek(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_until(double t)
{
	struct timespec ts;

	ts.tv_sec = (time_t)t;
	ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

/* ------------------------------------------------------------------------
 * Writers.
 */
struct demo;

struct writer {
	struct demo *d;
	pthread_t thread;
	uint16_t id;
	struct tb_writer w;
	struct tb_ev_writer ev;
	uint8_t *scratch;	/* chunk_size, for relocations */
	uint64_t rng;
	double t0;
	char name[16];		/* "writer N": static for the track */
	struct tb_track thread_track;
	struct tb_track rows_track;	/* a counter: rows decoded */
	uint64_t rows;
	uint64_t requests;
	/* after the run */
	uint64_t seq;		/* tagged events tried: the next one's number */
	uint64_t written;	/* ... of them written (TB_OK) */
	/* progress, read by the main thread */
	uint64_t attempted;
	uint64_t events;	/* event packets written, all kinds */
	uint64_t lost;		/* event packets not written */
};

struct demo {
	struct options opt;
	int pid;
	unsigned uid;
	struct tb_track process_track;
	/* the ring, in shared memory as between processes */
	struct tb_ring ring;
	void *mem;
	size_t mem_size;
	/* the service */
	struct tb_buf *buf;
	struct tb_bridge bridge;
	struct tb_service_slot slots[1];
	uint64_t lost[1];	/* the service's "events lost" samples */
	struct tb_service svc;
	struct tb_trace_out out;
	FILE *file;
	pthread_t service;
	uint64_t overwritten[MAX_WRITERS + 1];	/* tagged events, by writer */
	uint64_t overwritten_packets;
	int ring_error;
	/* what the service thread publishes for the progress lines */
	struct {
		uint64_t overwritten;	/* packets */
		uint64_t rejected;	/* chunks the buffer refused */
		uint64_t trace_packets;
		uint64_t trace_bytes;
	} pub;
	uint32_t stop;
	struct writer w[MAX_WRITERS];
};

static uint32_t rnd(struct writer *wr, uint32_t n)
{
	wr->rng ^= wr->rng << 13;
	wr->rng ^= wr->rng >> 7;
	wr->rng ^= wr->rng << 17;
	return (uint32_t)(wr->rng >> 32) % n;
}

/* A tagged event written: counted, for the check. */
static void tagged(struct writer *wr, int ret)
{
	wr->seq++;
	if (ret == TB_OK)
		wr->written++;
}

/* The body of a large response, for the snapshot annotation. */
static char response_text[TEXT_MAX];

static void make_response_text(void)
{
	size_t n = 0;
	unsigned i;

	for (i = 0; n + 64 < sizeof(response_text); i++)
		n += (size_t)snprintf(response_text + n,
				      sizeof(response_text) - n,
				      "row %05u: user=u%04u status=ok "
				      "bytes=%u\\n", i, i * 7919 % 10000,
				      i * 104729 % 65536);
	memset(response_text + n, '.', sizeof(response_text) - n);
}

/*
 * The request handler the writers pretend to run, as a tree: depth, how
 * often the stage runs (percent), how long it works (up to N
 * microseconds), its name and category.  A stage that does not run skips
 * its children.
 */
struct stage {
	unsigned depth;
	unsigned percent;
	unsigned work_us;
	const char *name;
	const struct tb_category *cat;
};

static const struct stage request[] = {
	{ 0, 100, 0, "HandleRequest", &cat_request },
	{ 1, 100, 3,	"ParseRequest", &cat_request },
	{ 1, 60, 0,	"Authenticate", &cat_request },
	{ 2, 100, 2,		"TokenCache::Lookup", &cat_request },
	{ 2, 20, 8,		"VerifySignature", &cat_request },
	{ 1, 100, 0,	"QueryDatabase", &cat_db },
	{ 2, 100, 1,		"AcquireConnection", &cat_db },
	{ 2, 100, 10,		"ExecuteQuery", &cat_db },
	{ 2, 40, 4,		"DecodeRows", &cat_db },
	{ 1, 100, 0,	"RenderResponse", &cat_request },
	{ 2, 100, 5,		"Serialize", &cat_request },
	{ 2, 50, 6,		"Compress", &cat_request },
	{ 1, 100, 2,	"SendResponse", &cat_request },
};

#define NSTAGES		(sizeof(request) / sizeof(request[0]))
#define STAGE_PARSE	1	/* starts the request's flow */
#define STAGE_DECODE	8	/* counts rows */
#define SNAPSHOT_PCT	2	/* requests that log their response */

/* Simulated work, so slices have a visible length (not when flat out). */
static void work(struct writer *wr, unsigned max_us)
{
	double until;

	if (!max_us || !wr->d->opt.rate)
		return;
	until = now() + (double)rnd(wr, max_us * 1000) * 1e-9;
	while (now() < until)
		;
}

/*
 * One stage's slice begins: tagged with the writer's sequence number;
 * the parse starts a flow the response ends, so the UI draws an arrow
 * from each request's parse to its reply.
 */
static void stage_begin(struct writer *wr, unsigned i)
{
	const struct stage *s = &request[i];
	uint64_t flow = (uint64_t)wr->id << 40 | wr->requests;
	struct tb_arg a[2];
	uint32_t n = 0;

	a[n++] = TB_ARG_UINT("seq", wr->seq);
	if (i == STAGE_PARSE)
		a[n++] = TB_FLOW(flow);
	else if (i == NSTAGES - 1)
		a[n++] = TB_FLOW_END(flow);
	tagged(wr, tb_ev_begin(&wr->ev, s->cat, s->name, a, n));
}

static void handle_request(struct writer *wr)
{
	const struct tb_category *open[8];
	unsigned i, depth = 0, skip_below = ~0u;

	for (i = 0; i < NSTAGES; i++) {
		const struct stage *s = &request[i];

		if (s->depth > skip_below)
			continue;	/* its parent did not run */
		skip_below = ~0u;
		for (; depth > s->depth; depth--)
			TB_TRACE_END(open[depth - 1]);
		if (rnd(wr, 100) >= s->percent) {
			skip_below = s->depth;
			continue;
		}
		stage_begin(wr, i);
		open[depth++] = s->cat;
		work(wr, s->work_us);
		if (i == STAGE_DECODE) {
			wr->rows += 1 + rnd(wr, 500);
			TB_TRACE_COUNTER(&cat_db, &wr->rows_track, wr->rows);
		}
	}
	/* now and then a big one: it spans chunks of the ring */
	if (rnd(wr, 100) < SNAPSHOT_PCT) {
		struct tb_arg a[2];

		a[0] = TB_ARG_UINT("seq", wr->seq);
		a[1] = TB_ARG_STRN("body", response_text,
				   2048 + rnd(wr, TEXT_MAX - 2048));
		tagged(wr, tb_ev_instant(&wr->ev, &cat_debug,
					 "ResponseSnapshot", a, 2));
	}
	for (; depth; depth--)
		TB_TRACE_END(open[depth - 1]);
	wr->requests++;
}

static void *writer_main(void *arg)
{
	struct writer *wr = arg;
	struct demo *d = wr->d;
	unsigned tries;

	tb_writer_init(&wr->w, &d->ring, wr->id, BUFFER_ID, d->opt.full,
		       wr->scratch);
	snprintf(wr->name, sizeof(wr->name), "writer %u", wr->id);
	tb_track_thread(&wr->thread_track, tb_ev_uuid((uint64_t)d->pid,
						      wr->id),
			&d->process_track, d->pid, (int32_t)syscall(SYS_gettid),
			wr->name);
	tb_track_counter(&wr->rows_track, tb_ev_uuid((uint64_t)d->pid,
						     0x10000u + wr->id),
			 &wr->thread_track, "rows decoded", TB_UNIT_COUNT);
	/* its thread track is the default: events need no track_uuid */
	tb_ev_writer_init(&wr->ev, &wr->w, &wr->thread_track, NULL,
			  TB_EV_DEFAULTS);
	tb_ev_set_current(&wr->ev);	/* for the TB_TRACE_* macros */
	wr->t0 = now();
	while (!__atomic_load_n(&d->stop, __ATOMIC_RELAXED)) {
		handle_request(wr);
		publish(&wr->attempted, wr->ev.stats.events +
					wr->ev.stats.not_written);
		publish(&wr->events, wr->ev.stats.events);
		publish(&wr->lost, wr->ev.stats.not_written);
		/* keep to the rate: sleep once the writer is ahead */
		if (d->opt.rate)
			sleep_until(wr->t0 + (double)peek(&wr->attempted) /
					     d->opt.rate);
	}
	/*
	 * A last loss reaches the trace: finish writes a packet that flags
	 * it.  On a full ring (drop policy) that packet can fail too; the
	 * service is still draining, so try again for a while.
	 */
	for (tries = 0; tb_ev_writer_finish(&wr->ev) != TB_OK &&
			tries < 1000; tries++)
		sleep_until(now() + 1e-3);
	tb_writer_release(&wr->w);	/* publishes what it holds */
	publish(&wr->attempted, wr->ev.stats.events + wr->ev.stats.not_written);
	publish(&wr->events, wr->ev.stats.events);
	publish(&wr->lost, wr->ev.stats.not_written);
	return NULL;
}

/* ------------------------------------------------------------------------
 * The service thread: tb_service_poll() does it all; this loop only
 * publishes counters for the progress lines.
 */
/* The trace clock: CLOCK_BOOTTIME, as the event layer's default. */
static uint64_t trace_clock_ns(void *ctx)
{
	struct timespec ts;

	(void)ctx;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ms(void)
{
	return (uint64_t)(now() * 1000);
}

static int write_file(void *ctx, const void *data, size_t len)
{
	return fwrite(data, 1, len, (FILE *)ctx) == len ? 0 : -1;
}

/*
 * The kind of one TracePacket: a track descriptor, an event tagged with
 * a sequence number (a debug annotation with an unsigned value, as slice
 * begins and instants are; the number in *@seq), another event (slice
 * ends, counters), or neither (defaults, interned data, clocks).
 */
enum { KIND_OTHER, KIND_DESCRIPTOR, KIND_TAGGED, KIND_UNTAGGED, KIND_BAD };

static int packet_kind(const uint8_t *p, size_t n, uint64_t *seq)
{
	struct tb_pb_reader r, e, a;
	struct tb_pb_field f, g, h;
	int kind = KIND_OTHER;

	tb_pb_reader_init(&r, p, n);
	while (tb_pb_next(&r, &f) > 0) {
		if (f.number == TP_TRACK_DESCRIPTOR && f.type == TB_PB_LEN)
			kind = KIND_DESCRIPTOR;
		if (f.number != TP_TRACK_EVENT || f.type != TB_PB_LEN)
			continue;
		kind = KIND_UNTAGGED;
		tb_pb_reader_init(&e, f.data, f.size);
		while (tb_pb_next(&e, &g) > 0) {
			if (g.number != TE_DEBUG_ANNOTATIONS ||
			    g.type != TB_PB_LEN)
				continue;
			tb_pb_reader_init(&a, g.data, g.size);
			while (tb_pb_next(&a, &h) > 0)
				if (h.number == DA_UINT_VALUE &&
				    h.type == TB_PB_VARINT) {
					*seq = h.value;
					kind = KIND_TAGGED;
				}
		}
		if (e.bad)
			return KIND_BAD;
	}
	return r.bad ? KIND_BAD : kind;
}

/* Tagged events the central buffer overwrote (ring policy), by writer. */
static void on_overwrite(void *ctx, const struct tb_buf_packet *pkt)
{
	static uint8_t flat[PKT_MAX];
	struct demo *d = ctx;
	size_t n = 0;
	uint64_t seq;
	unsigned i;

	d->overwritten_packets++;
	for (i = 0; i < pkt->nslices && n + pkt->slices[i].size <= PKT_MAX;
	     i++) {
		memcpy(flat + n, pkt->slices[i].data, pkt->slices[i].size);
		n += pkt->slices[i].size;
	}
	if (i == pkt->nslices && pkt->writer_id <= MAX_WRITERS &&
	    packet_kind(flat, n, &seq) == KIND_TAGGED)
		d->overwritten[pkt->writer_id]++;
}

static void on_ring_error(void *ctx, unsigned ring, int err)
{
	struct demo *d = ctx;

	fprintf(stderr, "demo: ring %u stopped: %s\n", ring, tb_strerror(err));
	d->ring_error = err;
}

static void publish_counters(struct demo *d)
{
	publish(&d->pub.overwritten, d->overwritten_packets);
	publish(&d->pub.rejected, d->bridge.stat[TB_BS_REJECTED]);
	publish(&d->pub.trace_packets, d->out.packets);
	publish(&d->pub.trace_bytes, d->out.bytes);
}

static void *service_main(void *arg)
{
	struct demo *d = arg;

	while (tb_service_poll(&d->svc, now_ms()))
		publish_counters(d);
	publish_counters(d);	/* after the final flush and write */
	return NULL;
}

/* ------------------------------------------------------------------------
 * Progress and summary.
 */
struct totals {
	uint64_t attempted, events, lost;
};

static void sum_up(struct demo *d, struct totals *t)
{
	unsigned i;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < d->opt.writers; i++) {
		t->attempted += peek(&d->w[i].attempted);
		t->events += peek(&d->w[i].events);
		t->lost += peek(&d->w[i].lost);
	}
}

static void progress_header(void)
{
	printf("lost: events the ring refused (full, no chunk, relocation "
	       "found no room),\npackets the central buffer overwrote, "
	       "chunks it refused\n\n"
	       "time   events/s  trace MB   lost: events  full  no chunk  "
	       "reloc  overwritten  refused\n");
}

static void progress(struct demo *d, unsigned sec, struct totals *last)
{
	struct tb_ring_stats st;
	struct totals t;

	sum_up(d, &t);
	tb_ring_stats(&d->ring, &st);
	printf("%3us %9.1fk %9.1f %14llu %5u %9u %6u %12llu %8llu\n", sec,
	       (double)(t.events - last->events) / 1e3,
	       (double)peek(&d->pub.trace_bytes) / 1e6,
	       (unsigned long long)t.lost, st.wstat[TB_WS_FULL],
	       st.wstat[TB_WS_NO_CHUNK], st.wstat[TB_WS_DROPPED_FRAGS],
	       (unsigned long long)peek(&d->pub.overwritten),
	       (unsigned long long)peek(&d->pub.rejected));
	fflush(stdout);
	*last = t;
}

/* ------------------------------------------------------------------------
 * The check: read the trace back, writer by writer.
 */
struct seen {
	uint64_t packets;
	uint64_t tagged;	/* events tagged with a sequence number */
	uint64_t descriptors;
	uint64_t next_seq;	/* the event number expected next */
	uint64_t gaps;		/* gaps flagged by previous_packet_dropped */
	uint64_t silent_gaps;	/* gaps nothing flagged: a bug */
	uint64_t disorder;	/* events out of order or repeated: a bug */
	uint64_t lossy;		/* packets that carried loss bits */
	uint32_t loss_bits;	/* all of them, or-ed */
	uint32_t flagged;	/* loss bits since the last tagged event */
};

struct check {
	struct demo *d;
	struct seen w[MAX_WRITERS + 1];		/* by writer id */
	uint64_t foreign;	/* wrong trusted fields or unknown writer */
	uint64_t malformed;	/* not protobuf */
	uint64_t service;	/* the service's own packets */
	struct tb_check rules;	/* Perfetto's importer's rules */
	int rules_ret;
};

static void on_packet(struct check *c, const struct tb_trace_packet *tp)
{
	unsigned writer = (unsigned)(tp->trusted_seq_id & 0xffff);
	struct seen *s;
	uint64_t seq = 0;

	if (tp->trusted_seq_id == TB_TRACE_SERVICE_SEQ &&
	    tp->trusted_pid == (uint64_t)c->d->pid) {
		c->service++;	/* loss counters, records, TraceStats */
		return;
	}
	if ((tp->has & (TB_TRACE_HAS_SEQ_ID | TB_TRACE_HAS_UID |
			TB_TRACE_HAS_PID)) != (TB_TRACE_HAS_SEQ_ID |
					       TB_TRACE_HAS_UID |
					       TB_TRACE_HAS_PID) ||
	    tp->trusted_seq_id >> 16 != PRODUCER_ID || !writer ||
	    writer > c->d->opt.writers || tp->trusted_uid != c->d->uid ||
	    tp->trusted_pid != (uint64_t)c->d->pid) {
		c->foreign++;
		return;
	}
	s = &c->w[writer];
	s->packets++;
	if (tp->dropped) {
		s->lossy++;
		s->loss_bits |= (uint32_t)tp->dropped;
		s->flagged |= (uint32_t)tp->dropped;
	}
	switch (packet_kind(tp->data, tp->size, &seq)) {
	case KIND_DESCRIPTOR:
		s->descriptors++;
		break;
	case KIND_TAGGED:
		/* the flag may come on a packet before the event */
		s->tagged++;
		if (seq < s->next_seq)
			s->disorder++;
		else if (seq > s->next_seq && s->flagged)
			s->gaps++;
		else if (seq > s->next_seq)
			s->silent_gaps++;
		s->next_seq = seq + 1;
		s->flagged = 0;
		break;
	case KIND_BAD:
		c->malformed++;
		break;
	}
}

/* Decodes the written file and checks it; -1 if it is not a trace. */
static long read_trace(struct demo *d, struct check *c, uint64_t *size)
{
	struct tb_trace_packet tp;
	struct tb_pb_reader r;
	struct stat st;
	void *map;
	long n;
	int ret, fd = open(d->opt.output, O_RDONLY);

	if (fd < 0 || fstat(fd, &st)) {
		perror(d->opt.output);
		return -1;
	}
	*size = (uint64_t)st.st_size;
	/* a buffer that discarded the end of the run says so in the
	 * trace's TraceStats, which the checker reads */
	tb_check_init(&c->rules, NULL, NULL, 0);
	if (!st.st_size) {
		close(fd);
		return 0;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		perror(d->opt.output);
		return -1;
	}
	tb_pb_reader_init(&r, map, (size_t)st.st_size);
	for (n = 0; (ret = tb_trace_next(&r, &tp)) > 0; n++)
		on_packet(c, &tp);
	c->rules_ret = tb_check_trace(&c->rules, map, (size_t)st.st_size);
	munmap(map, (size_t)st.st_size);
	return ret < 0 ? -1 : n;
}

/* The checker's verdict, one line per rule that something broke. */
static bool report_rules(const struct check *c)
{
	unsigned k;

	for (k = 0; k < TB_CK_MAX; k++) {
		const struct tb_check_count *r = &c->rules.rule[k];

		if (r->count || r->explained)
			printf("              %-24s %8llu explained by a loss, "
			       "%llu not\n", tb_check_rule_name((int)k),
			       (unsigned long long)r->explained,
			       (unsigned long long)r->count);
	}
	return !tb_check_clean(&c->rules);
}

static bool rules_all_hold(const struct check *c)
{
	unsigned k;

	for (k = 0; k < TB_CK_MAX; k++)
		if (c->rules.rule[k].count || c->rules.rule[k].explained)
			return false;
	return true;
}

static int verify(struct demo *d, struct check *c, long decoded)
{
	uint64_t bridge_drops = d->bridge.stat[TB_BS_REJECTED] +
				d->bridge.stat[TB_BS_BAD_TARGET] +
				d->bridge.stat[TB_BS_TOO_MANY_KEYS] +
				d->bridge.stat[TB_BS_KEYS_NOMEM];
	unsigned i, bad = 0;
	bool rules;

	for (i = 0; i < d->opt.writers; i++) {
		struct writer *wr = &d->w[i];
		struct seen *s = &c->w[wr->id];
		int64_t missing = (int64_t)(wr->written - s->tagged -
					    d->overwritten[wr->id]);
		/*
		 * Events neither in the trace nor handed over as overwritten
		 * need a cause the service reported: refused chunks, loss
		 * bits it set (not the writer's own SMB_FULL), or overwrites
		 * of this writer: an overwrite cuts a packet whose tail has
		 * not arrived, which only a later packet in the trace can
		 * flag, if there is one.
		 */
		int reported = bridge_drops || d->overwritten[wr->id] ||
			(s->loss_bits &
			 ~(TB_BUF_LOSS_PRESENT | TB_BUF_LOSS_SMB_FULL));

		if (!s->disorder && !s->silent_gaps && missing >= 0 &&
		    (!missing || reported))
			continue;
		printf("  writer %u: wrote %llu tagged events of %llu, trace "
		       "has %llu, overwritten %llu; %llu out of order, %llu "
		       "unflagged gaps\n", wr->id,
		       (unsigned long long)wr->written,
		       (unsigned long long)wr->seq,
		       (unsigned long long)s->tagged,
		       (unsigned long long)d->overwritten[wr->id],
		       (unsigned long long)s->disorder,
		       (unsigned long long)s->silent_gaps);
		bad++;
	}
	printf("  importer    ");
	if (c->rules_ret)
		printf("the checker could not read the trace: %s\n",
		       tb_strerror(c->rules_ret));
	else if (rules_all_hold(c))
		printf("every rule of Perfetto's importer holds (%llu flows "
		       "drawn)\n",
		       (unsigned long long)c->rules.stats.flows_ended);
	else if (tb_check_clean(&c->rules))
		printf("rules broken only where the trace flags a loss:\n");
	else
		printf("rules broken that no loss explains:\n");
	rules = c->rules_ret || report_rules(c);
	if (decoded < 0 || c->foreign || c->malformed || bad || rules ||
	    d->ring_error || d->out.error) {
		printf("  verify      FAILED:%s%s%s %llu foreign and %llu "
		       "malformed packets, %u writers mismatched%s\n",
		       decoded < 0 ? " the file is not a valid trace;" : "",
		       d->out.error ? " writing the file failed;" : "",
		       d->ring_error ? " the ring was stopped;" : "",
		       (unsigned long long)c->foreign,
		       (unsigned long long)c->malformed, bad,
		       rules ? ", importer rules broken" : "");
		return 1;
	}
	printf("  verify      ok: every event written is in the trace or "
	       "counted lost, each\n              writer's in order, every "
	       "gap flagged\n");
	return 0;
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0;
}

/* "4 MiB", "256 KiB" */
static const char *size_str(char *buf, size_t len, size_t size)
{
	if (size >= 1u << 20 && !(size & ((1u << 20) - 1)))
		snprintf(buf, len, "%zu MiB", size >> 20);
	else
		snprintf(buf, len, "%zu KiB", size >> 10);
	return buf;
}

/* After the run: the writers are joined, their counters are plain. */
static void summary(struct demo *d, double secs, struct check *c,
		    uint64_t file_size)
{
	const struct tb_buf_stats *bs = tb_buf_stats(d->buf);
	struct tb_service_stats sst;
	struct tb_ring_stats st;
	struct tb_ev_stats ev;
	uint64_t seq = 0, written = 0, in_trace = 0, overwritten = 0;
	uint64_t packets = 0, lossy = 0, gaps = 0, cut;
	uint32_t bits = 0;
	unsigned i;
	char size[32];

	memset(&ev, 0, sizeof(ev));
	tb_service_stats(&d->svc, &sst);
	for (i = 0; i < d->opt.writers; i++) {
		const struct writer *wr = &d->w[i];
		const struct seen *s = &c->w[wr->id];

		seq += wr->seq;
		written += wr->written;
		in_trace += s->tagged;
		overwritten += d->overwritten[wr->id];
		packets += s->packets;
		lossy += s->lossy;
		gaps += s->gaps;
		bits |= s->loss_bits;
		ev.events += wr->ev.stats.events;
		ev.not_written += wr->ev.stats.not_written;
		ev.descriptors += wr->ev.stats.descriptors;
		ev.states += wr->ev.stats.states;
		ev.ends_skipped += wr->ev.stats.ends_skipped;
		ev.ends_late += wr->ev.stats.ends_late;
	}
	cut = written - in_trace - overwritten;
	tb_ring_stats(&d->ring, &st);
	printf("\nsummary: %u writers for %.1f s; ring %u x %u B, %s when "
	       "full; buffer %s, %s policy,\n", d->opt.writers, secs,
	       d->opt.num_chunks, d->opt.chunk_size,
	       d->opt.full == TB_STALL ? "stall" : "drop",
	       size_str(size, sizeof(size), d->opt.buffer_size),
	       d->opt.fill == TB_BUF_DISCARD ? "discard" : "ring");
	if (d->opt.period_ms)
		printf("         written out every %u ms or half a buffer "
		       "(long trace: %llu times early)\n", d->opt.period_ms,
		       (unsigned long long)sst.early_writes);
	else
		printf("         written out once, at the end\n");
	printf("  writers     %llu events written (%.1fk/s), %llu not "
	       "written; %llu track\n              descriptors, %llu "
	       "incremental states; ENDs: %llu written late (the\n"
	       "              ring was full), %llu skipped (BEGIN lost)\n",
	       (unsigned long long)ev.events,
	       (double)ev.events / secs / 1e3,
	       (unsigned long long)ev.not_written,
	       (unsigned long long)ev.descriptors,
	       (unsigned long long)ev.states,
	       (unsigned long long)ev.ends_late,
	       (unsigned long long)ev.ends_skipped);
	printf("  trace       %llu packets; %llu of the %llu tagged events "
	       "the ring took\n              (%.2f%%; it refused %.2f%% of "
	       "the %llu tried);\n              %s is %.1f MB\n",
	       (unsigned long long)packets, (unsigned long long)in_trace,
	       (unsigned long long)written, pct(in_trace, written),
	       pct(seq - written, seq), (unsigned long long)seq,
	       d->opt.output, (double)file_size / 1e6);
	printf("  lost        in the ring: %llu of %llu tagged events tried; "
	       "writes refused:\n              full %u, no chunk %u, "
	       "relocation found no room %u\n",
	       (unsigned long long)(seq - written),
	       (unsigned long long)seq, st.wstat[TB_WS_FULL],
	       st.wstat[TB_WS_NO_CHUNK], st.wstat[TB_WS_DROPPED_FRAGS]);
	printf("              in the service: %llu tagged events (overwritten "
	       "%llu, cut short or in\n              refused chunks %llu; "
	       "chunks refused %llu)\n",
	       (unsigned long long)(written - in_trace),
	       (unsigned long long)overwritten, (unsigned long long)cut,
	       (unsigned long long)(d->bridge.stat[TB_BS_REJECTED] +
				    d->bridge.stat[TB_BS_BAD_TARGET] +
				    d->bridge.stat[TB_BS_TOO_MANY_KEYS] +
				    d->bridge.stat[TB_BS_KEYS_NOMEM]));
	printf("  loss flags  %llu packets carry previous_packet_dropped "
	       "(bits 0x%x), at %llu gaps\n", (unsigned long long)lossy,
	       bits, (unsigned long long)gaps);
	printf("  ring        chunks %u, scrapes %u, relocations %u, stalls "
	       "%u, holes %u\n", st.rstat[TB_RS_EMITTED],
	       st.rstat[TB_RS_SCRAPES], st.wstat[TB_WS_RELOCATIONS],
	       st.wstat[TB_WS_STALLS], st.rstat[TB_RS_HOLES]);
	printf("  buffer      chunks %llu, overwritten %llu, discarded %llu, "
	       "ABI violations %llu\n",
	       (unsigned long long)bs->chunks_written,
	       (unsigned long long)bs->chunks_overwritten,
	       (unsigned long long)bs->chunks_discarded,
	       (unsigned long long)bs->abi_violations);
}

/* ------------------------------------------------------------------------
 * Setup.
 */
static void usage(FILE *f)
{
	fprintf(f,
"usage: demo [-w writers] [-d seconds] [-c chunk_size] [-n chunks]\n"
"            [-b buffer_size] [-p ring|discard] [-l period_ms] [-s]\n"
"            [-r packets/s] [-o file]\n"
"  -w  writer threads (4)            -d  seconds to trace (3)\n"
"  -c  ring chunk size (4096)        -n  ring chunk count (64)\n"
"  -b  central buffer size, k/m suffix (4m)\n"
"  -p  when the buffer is full: ring overwrites the oldest (default),\n"
"      discard refuses everything after\n"
"  -l  long trace: write the buffer out every N ms (250) or\n"
"      once half full, 0: at the end\n"
"  -s  writers stall on a full ring (default: drop the packet)\n"
"  -r  packets/s per writer (25000), 0: as fast as possible\n"
"  -o  output file (demo.pftrace)\n");
}

static size_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	if (*end == 'k' || *end == 'K')
		v <<= 10;
	else if (*end == 'm' || *end == 'M')
		v <<= 20;
	else if (*end == 'g' || *end == 'G')
		v <<= 30;
	return v > TB_BUF_MAX_SIZE ? 0 : (size_t)v;
}

static void parse(int argc, char **argv, struct options *o)
{
	int c;

	o->writers = 4;
	o->seconds = 3;
	o->chunk_size = 4096;
	o->num_chunks = 64;
	o->buffer_size = 4u << 20;
	o->fill = TB_BUF_RING_BUFFER;
	o->period_ms = 250;
	o->full = TB_DROP;
	o->rate = 25000;
	o->output = "demo.pftrace";
	while ((c = getopt(argc, argv, "w:d:c:n:b:p:l:sr:o:h")) != -1) {
		switch (c) {
		case 'w': o->writers = (unsigned)atoi(optarg); break;
		case 'd': o->seconds = (unsigned)atoi(optarg); break;
		case 'c': o->chunk_size = (uint32_t)atoi(optarg); break;
		case 'n': o->num_chunks = (uint32_t)atoi(optarg); break;
		case 'b': o->buffer_size = parse_size(optarg); break;
		case 'l': o->period_ms = (uint32_t)atoi(optarg); break;
		case 's': o->full = TB_STALL; break;
		case 'r': o->rate = (unsigned)atoi(optarg); break;
		case 'o': o->output = optarg; break;
		case 'p':
			if (!strcmp(optarg, "ring"))
				o->fill = TB_BUF_RING_BUFFER;
			else if (!strcmp(optarg, "discard"))
				o->fill = TB_BUF_DISCARD;
			else
				goto bad;
			break;
		case 'h': usage(stdout); exit(0);
		default: goto bad;
		}
	}
	if (optind < argc || o->writers < 1 || o->writers > MAX_WRITERS ||
	    o->seconds < 1 || !o->buffer_size) {
		fprintf(stderr, "demo: 1 to %d writers, at least 1 second, "
			"a buffer of at most 4 GiB\n", MAX_WRITERS);
		goto bad;
	}
	if (!tb_ring_size(o->chunk_size, o->num_chunks)) {
		fprintf(stderr, "demo: the chunk size must be a power of two "
			"in [256, 32768], the chunk count a power of two in "
			"[2, 2^30]\n");
		goto bad;
	}
	return;
bad:
	usage(stderr);
	exit(2);
}

static void *xmalloc(size_t size)
{
	void *p = calloc(1, size);

	if (!p) {
		fprintf(stderr, "demo: out of memory\n");
		exit(2);
	}
	return p;
}

static void setup(struct demo *d)
{
	struct tb_service_config sc;
	struct tb_bridge_config bc;
	struct tb_buf_ident ident;
	unsigned i, handle;
	int ret;

	d->pid = (int)getpid();
	d->uid = (unsigned)getuid();
	tb_track_process(&d->process_track, tb_ev_uuid((uint64_t)d->pid, 0),
			 d->pid, "tbring demo");
	/* the ring: shared memory, as between processes; zero is empty */
	d->mem_size = tb_ring_size(d->opt.chunk_size, d->opt.num_chunks);
	d->mem = mmap(NULL, d->mem_size, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (d->mem == MAP_FAILED ||
	    tb_ring_init(&d->ring, d->mem, d->mem_size, d->opt.chunk_size,
			 d->opt.num_chunks)) {
		fprintf(stderr, "demo: cannot set up a %zu-byte ring\n",
			d->mem_size);
		exit(2);
	}
	/* the central buffer, and a bridge from the ring into it */
	ret = tb_buf_new(&d->buf, d->opt.buffer_size, d->opt.fill, NULL,
			 NULL);
	if (ret) {
		fprintf(stderr, "demo: cannot create a %zu-byte buffer: %s\n",
			d->opt.buffer_size, tb_strerror(ret));
		exit(2);
	}
	tb_buf_on_overwrite(d->buf, on_overwrite, d);
	ident.uid = d->uid;
	ident.pid = d->pid;
	memset(&bc, 0, sizeof(bc));
	bc.ring = &d->ring;
	bc.scratch = xmalloc(d->opt.chunk_size);
	bc.producer_id = PRODUCER_ID;
	bc.ident = ident;
	bc.bufs = &d->buf;
	bc.nbufs = 1;
	if (tb_bridge_init(&d->bridge, &bc)) {
		fprintf(stderr, "demo: cannot set up the bridge\n");
		exit(2);
	}
	/* the trace file */
	d->file = fopen(d->opt.output, "wb");
	if (!d->file) {
		perror(d->opt.output);
		exit(2);
	}
	setvbuf(d->file, NULL, _IOFBF, 1 << 20);
	d->out.write = write_file;
	d->out.ctx = d->file;
	/* the service loop over the one ring, sleeping on its doorbell */
	memset(&sc, 0, sizeof(sc));
	sc.bell = d->ring.bell;
	sc.slots = d->slots;
	sc.max_rings = 1;
	sc.bufs = &d->buf;
	sc.nbufs = 1;
	sc.out = &d->out;
	sc.wait_ms = 20;
	sc.period_ms = d->opt.period_ms;
	sc.on_ring_error = on_ring_error;
	sc.ctx = d;
	/* the service's own packets: "events lost", TraceStats */
	sc.ident = ident;
	sc.clock_ns = trace_clock_ns;
	sc.lost = d->lost;
	if (tb_service_init(&d->svc, &sc) ||
	    tb_service_add(&d->svc, &d->bridge, &handle)) {
		fprintf(stderr, "demo: cannot set up the service\n");
		exit(2);
	}
	for (i = 0; i < d->opt.writers; i++) {
		struct writer *wr = &d->w[i];

		wr->d = d;
		wr->id = (uint16_t)(i + 1);
		wr->scratch = xmalloc(d->opt.chunk_size);
		wr->rng = 0x9e3779b97f4a7c15ull * wr->id;
	}
}

int main(int argc, char **argv)
{
	static struct demo d;
	static struct check c;
	struct totals last;
	uint64_t file_size = 0;
	double t0, secs;
	unsigned i, sec;
	long decoded;
	int ret;

	parse(argc, argv, &d.opt);
	make_response_text();
	setup(&d);
	printf("tbring demo: %u writers trace for %u s into a ring of %u x %u "
	       "B; a service writes %s\n", d.opt.writers, d.opt.seconds,
	       d.opt.num_chunks, d.opt.chunk_size, d.opt.output);
	progress_header();
	memset(&last, 0, sizeof(last));
	t0 = now();
	pthread_create(&d.service, NULL, service_main, &d);
	for (i = 0; i < d.opt.writers; i++)
		pthread_create(&d.w[i].thread, NULL, writer_main, &d.w[i]);
	for (sec = 1; sec <= d.opt.seconds; sec++) {
		sleep_until(t0 + sec);
		progress(&d, sec, &last);
	}
	__atomic_store_n(&d.stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < d.opt.writers; i++)
		pthread_join(d.w[i].thread, NULL);
	secs = now() - t0;
	/* the service flushes the ring and writes the buffer out, then stops */
	tb_service_stop(&d.svc);
	pthread_join(d.service, NULL);
	if (fclose(d.file))
		d.out.error = -1;

	c.d = &d;
	decoded = read_trace(&d, &c, &file_size);
	summary(&d, secs, &c, file_size);
	ret = verify(&d, &c, decoded);
	if (!ret)
		printf("\nOpen %s in https://ui.perfetto.dev (\"Open trace "
		       "file\", or drop it on the page).\n", d.opt.output);
	tb_check_destroy(&c.rules);
	tb_bridge_destroy(&d.bridge);
	tb_buf_destroy(d.buf);
	munmap(d.mem, d.mem_size);
	return ret;
}
