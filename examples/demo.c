/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * examples/demo.c - threads trace into a ring, a service writes a Perfetto
 * trace: the whole pipeline in one process, no set-up.
 *
 *   make demo          (or: ./build/demo -w 4 -d 3; ./build/demo -h)
 *
 * Writer threads trace a made-up request handler with Perfetto
 * TrackEvents: each names its thread with a track descriptor, then emits
 * nested slices (begin/end pairs with real timestamps) and now and then an
 * instant event with a debug annotation of several KiB, a packet that
 * spans chunks.  Every packet goes through one shared-memory ring
 * (tbring.h).  A service thread (tbservice.h) drains the ring into a
 * central buffer (tbuffer.h) and, in long-trace mode, writes the buffer to
 * demo.pftrace every 250 ms, so the trace can outgrow the buffer.  Open
 * the file in https://ui.perfetto.dev.
 *
 * The demo checks itself.  It reads the trace back and compares, writer by
 * writer, the packets the writers were told were written with the packets
 * in the file.  Every event carries its writer's sequence number (a debug
 * annotation, "seq", or "end_seq" on slice ends), so the check sees order
 * and gaps, not just counts.  It exits 1 if a writer's events are out of
 * order or duplicated, if a gap in the trace is not flagged by
 * previous_packet_dropped, or if packets are missing that no loss counter
 * accounts for.
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

#include "tbservice.h"
/* the tests' protobuf reader: independent of tbservice.h's encoder */

#define MAX_WRITERS	64
#define PRODUCER_ID	1	/* the one ring's producer */
#define BUFFER_ID	0	/* the writers' target: the one central buffer */
#define TEXT_MAX	12288	/* the largest debug annotation string */
#define PKT_MAX		(TEXT_MAX + 512)

/*
 * Perfetto field numbers, from protos/perfetto/trace/trace_packet.proto
 * and track_event/{track_event,track_descriptor,thread_descriptor,
 * process_descriptor,debug_annotation}.proto.
 */
enum {
	TP_TIMESTAMP = 8,		/* TracePacket */
	TP_TRACK_EVENT = 11,
	TP_SEQUENCE_FLAGS = 13,
	TP_TRACK_DESCRIPTOR = 60,
	TD_UUID = 1,			/* TrackDescriptor */
	TD_PROCESS = 3,
	TD_THREAD = 4,
	PD_PID = 1,			/* ProcessDescriptor */
	PD_PROCESS_NAME = 6,
	THD_PID = 1,			/* ThreadDescriptor */
	THD_TID = 2,
	THD_THREAD_NAME = 5,
	TE_DEBUG_ANNOTATIONS = 4,	/* TrackEvent */
	TE_TYPE = 9,
	TE_TRACK_UUID = 11,
	TE_NAME = 23,
	DA_UINT_VALUE = 3,		/* DebugAnnotation */
	DA_STRING_VALUE = 6,
	DA_NAME = 10,
};

enum {
	SEQ_INCREMENTAL_STATE_CLEARED = 1,	/* TracePacket.SequenceFlags */
	TYPE_SLICE_BEGIN = 1,			/* TrackEvent.Type */
	TYPE_SLICE_END = 2,
	TYPE_INSTANT = 3,
};

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
static void count(uint64_t *c, uint64_t n)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + n,
			 __ATOMIC_RELAXED);
}

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

/* Perfetto's default trace clock is CLOCK_BOOTTIME, in nanoseconds. */
static uint64_t trace_clock_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_BOOTTIME, &ts))
		clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------------
 * Protobuf: a message is built in a buffer; a nested one is built first in
 * its own buffer, then copied in as a length-delimited field.
 */
struct msg {
	uint8_t *p;
	size_t n;
};

static void put_uint(struct msg *m, uint32_t field, uint64_t v)
{
	m->n += tb_pb_uint(m->p + m->n, field, v);
}

static void put_bytes(struct msg *m, uint32_t field, const void *data,
		      size_t len)
{
	m->n += tb_pb_len(m->p + m->n, field, len);
	memcpy(m->p + m->n, data, len);
	m->n += len;
}

static void put_str(struct msg *m, uint32_t field, const char *s)
{
	put_bytes(m, field, s, strlen(s));
}

static void put_msg(struct msg *m, uint32_t field, const struct msg *inner)
{
	put_bytes(m, field, inner->p, inner->n);
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
	uint8_t *scratch;	/* chunk_size, for relocations */
	uint64_t rng;
	uint64_t track;		/* the uuid of this thread's track */
	double t0;
	double next_descriptor;
	uint8_t pkt[PKT_MAX], event[PKT_MAX], inner[PKT_MAX];
	/* after the run */
	uint64_t seq;		/* events written: the next event's number */
	uint64_t descriptors;	/* descriptor packets written */
	/* progress, read by the main thread */
	uint64_t attempted;
	uint64_t packets;	/* written: TB_OK */
	uint64_t bytes;
	uint64_t failed[8];	/* packets lost, by -result */
};

struct demo {
	struct options opt;
	int pid;
	unsigned uid;
	/* the ring, in shared memory as between processes */
	struct tb_ring ring;
	void *mem;
	size_t mem_size;
	/* the service */
	struct tb_buf *buf;
	struct tb_bridge bridge;
	struct tb_bridge *slots[1];
	struct tb_service svc;
	struct tb_trace_out out;
	FILE *file;
	pthread_t service;
	uint64_t overwritten[MAX_WRITERS + 1];	/* packets, by writer id */
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

/* Writes one packet; every result is counted. */
static int emit(struct writer *wr, const struct msg *pkt)
{
	int ret = tb_writer_write_packet(&wr->w, pkt->p, pkt->n);

	count(&wr->attempted, 1);
	if (ret == TB_OK) {
		count(&wr->packets, 1);
		count(&wr->bytes, pkt->n);
	} else {
		count(&wr->failed[-ret & 7], 1);
	}
	return ret;
}

/*
 * A track descriptor names the writer's thread (writer 1 also names the
 * process).  The first packet of a sequence clears its incremental state;
 * re-emitted once a second, as Perfetto's SDK does, so the tracks survive
 * a central buffer that wraps.
 */
static void describe(struct writer *wr)
{
	struct demo *d = wr->d;
	struct msg pkt = { wr->pkt, 0 }, td = { wr->event, 0 };
	struct msg desc = { wr->inner, 0 };
	char name[32];

	if (wr->id == 1) {
		put_uint(&desc, PD_PID, (uint64_t)d->pid);
		put_str(&desc, PD_PROCESS_NAME, "tbring demo");
		put_uint(&td, TD_UUID, (uint64_t)d->pid << 16);
		put_msg(&td, TD_PROCESS, &desc);
		put_uint(&pkt, TP_TIMESTAMP, trace_clock_ns());
		put_uint(&pkt, TP_SEQUENCE_FLAGS,
			 SEQ_INCREMENTAL_STATE_CLEARED);
		put_msg(&pkt, TP_TRACK_DESCRIPTOR, &td);
		if (emit(wr, &pkt) == TB_OK)
			wr->descriptors++;
		pkt.n = td.n = desc.n = 0;
	}
	snprintf(name, sizeof(name), "writer %u", wr->id);
	put_uint(&desc, THD_PID, (uint64_t)d->pid);
	put_uint(&desc, THD_TID, (uint64_t)syscall(SYS_gettid));
	put_str(&desc, THD_THREAD_NAME, name);
	put_uint(&td, TD_UUID, wr->track);
	put_msg(&td, TD_THREAD, &desc);
	put_uint(&pkt, TP_TIMESTAMP, trace_clock_ns());
	put_uint(&pkt, TP_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
	put_msg(&pkt, TP_TRACK_DESCRIPTOR, &td);
	if (emit(wr, &pkt) == TB_OK)
		wr->descriptors++;
}

/*
 * One TrackEvent on the writer's thread track, tagged with its sequence
 * number; @text, when given, goes in a second debug annotation @key.
 */
static void event(struct writer *wr, unsigned type, const char *name,
		  const char *key, const char *text, size_t len)
{
	struct msg pkt = { wr->pkt, 0 }, ev = { wr->event, 0 };
	struct msg ann = { wr->inner, 0 };

	put_uint(&ev, TE_TYPE, type);
	put_uint(&ev, TE_TRACK_UUID, wr->track);
	if (name)
		put_str(&ev, TE_NAME, name);
	put_str(&ann, DA_NAME, type == TYPE_SLICE_END ? "end_seq" : "seq");
	put_uint(&ann, DA_UINT_VALUE, wr->seq);
	put_msg(&ev, TE_DEBUG_ANNOTATIONS, &ann);
	if (text) {
		ann.n = 0;
		put_str(&ann, DA_NAME, key);
		put_bytes(&ann, DA_STRING_VALUE, text, len);
		put_msg(&ev, TE_DEBUG_ANNOTATIONS, &ann);
	}
	put_uint(&pkt, TP_TIMESTAMP, trace_clock_ns());
	put_msg(&pkt, TP_TRACK_EVENT, &ev);
	if (emit(wr, &pkt) == TB_OK)
		wr->seq++;
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
				      "bytes=%u\n", i, i * 7919 % 10000,
				      i * 104729 % 65536);
	memset(response_text + n, '.', sizeof(response_text) - n);
}

/*
 * The request handler the writers pretend to run, as a tree: depth, how
 * often the stage runs (percent), how long it works (up to N
 * microseconds), its name.  A stage that does not run skips its children.
 */
struct stage {
	unsigned depth;
	unsigned percent;
	unsigned work_us;
	const char *name;
};

static const struct stage request[] = {
	{ 0, 100, 0, "HandleRequest" },
	{ 1, 100, 3,	"ParseRequest" },
	{ 1, 60, 0,	"Authenticate" },
	{ 2, 100, 2,		"TokenCache::Lookup" },
	{ 2, 20, 8,		"VerifySignature" },
	{ 1, 100, 0,	"QueryDatabase" },
	{ 2, 100, 1,		"AcquireConnection" },
	{ 2, 100, 10,		"ExecuteQuery" },
	{ 2, 40, 4,		"DecodeRows" },
	{ 1, 100, 0,	"RenderResponse" },
	{ 2, 100, 5,		"Serialize" },
	{ 2, 50, 6,		"Compress" },
	{ 1, 100, 2,	"SendResponse" },
};

#define NSTAGES		(sizeof(request) / sizeof(request[0]))
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

static void handle_request(struct writer *wr)
{
	unsigned i, open = 0, skip_below = ~0u;

	for (i = 0; i < NSTAGES; i++) {
		const struct stage *s = &request[i];

		if (s->depth > skip_below)
			continue;	/* its parent did not run */
		skip_below = ~0u;
		for (; open > s->depth; open--)
			event(wr, TYPE_SLICE_END, NULL, NULL, NULL, 0);
		if (rnd(wr, 100) >= s->percent) {
			skip_below = s->depth;
			continue;
		}
		event(wr, TYPE_SLICE_BEGIN, s->name, NULL, NULL, 0);
		open++;
		work(wr, s->work_us);
	}
	/* now and then a big one: it spans chunks of the ring */
	if (rnd(wr, 100) < SNAPSHOT_PCT)
		event(wr, TYPE_INSTANT, "ResponseSnapshot", "body",
		      response_text, 2048 + rnd(wr, TEXT_MAX - 2048));
	for (; open; open--)
		event(wr, TYPE_SLICE_END, NULL, NULL, NULL, 0);
}

static void *writer_main(void *arg)
{
	struct writer *wr = arg;
	struct demo *d = wr->d;

	tb_writer_init(&wr->w, &d->ring, wr->id, BUFFER_ID, d->opt.full,
		       wr->scratch);
	wr->t0 = wr->next_descriptor = now();
	while (!__atomic_load_n(&d->stop, __ATOMIC_RELAXED)) {
		if (now() >= wr->next_descriptor) {
			describe(wr);
			wr->next_descriptor += 1.0;
		}
		handle_request(wr);
		/* keep to the rate: sleep once the writer is ahead */
		if (d->opt.rate)
			sleep_until(wr->t0 + (double)wr->attempted /
					     d->opt.rate);
	}
	tb_writer_release(&wr->w);	/* publishes what it holds */
	return NULL;
}

/* ------------------------------------------------------------------------
 * The service thread: tb_service_poll() does it all; this loop only
 * publishes counters for the progress lines.
 */
static uint64_t now_ms(void)
{
	return (uint64_t)(now() * 1000);
}

static int write_file(void *ctx, const void *data, size_t len)
{
	return fwrite(data, 1, len, (FILE *)ctx) == len ? 0 : -1;
}

/* Packets the central buffer overwrote (ring policy), by writer. */
static void on_overwrite(void *ctx, const struct tb_buf_packet *pkt)
{
	struct demo *d = ctx;

	if (pkt->writer_id <= MAX_WRITERS)
		d->overwritten[pkt->writer_id]++;
	d->overwritten[0]++;	/* the total */
}

static void on_ring_error(void *ctx, unsigned ring, int err)
{
	struct demo *d = ctx;

	fprintf(stderr, "demo: ring %u stopped: %s\n", ring, tb_strerror(err));
	d->ring_error = err;
}

static void publish_counters(struct demo *d)
{
	publish(&d->pub.overwritten, d->overwritten[0]);
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
	uint64_t attempted, packets, bytes, failed[8];
};

static void sum_up(struct demo *d, struct totals *t)
{
	unsigned i, k;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < d->opt.writers; i++) {
		struct writer *wr = &d->w[i];

		t->attempted += peek(&wr->attempted);
		t->packets += peek(&wr->packets);
		t->bytes += peek(&wr->bytes);
		for (k = 0; k < 8; k++)
			t->failed[k] += peek(&wr->failed[k]);
	}
}

static void progress_header(void)
{
	printf("lost: packets the ring refused (full, no chunk, relocation "
	       "found no room),\npackets the central buffer overwrote, "
	       "chunks it refused\n\n"
	       "time  packets/s    MB/s  trace MB   lost: full  no chunk  "
	       "reloc  overwritten  refused\n");
}

static void progress(struct demo *d, unsigned sec, struct totals *last)
{
	struct tb_ring_stats st;
	struct totals t;

	sum_up(d, &t);
	tb_ring_stats(&d->ring, &st);
	printf("%3us %9.1fk %7.1f %9.1f %11u %9u %6u %12llu %8llu\n", sec,
	       (double)(t.packets - last->packets) / 1e3,
	       (double)(t.bytes - last->bytes) / 1e6,
	       (double)peek(&d->pub.trace_bytes) / 1e6,
	       st.wstat[TB_WS_FULL], st.wstat[TB_WS_NO_CHUNK],
	       st.wstat[TB_WS_DROPPED_FRAGS],
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
	uint64_t events;
	uint64_t descriptors;
	uint64_t next_seq;	/* the event number expected next */
	uint64_t gaps;		/* gaps flagged by previous_packet_dropped */
	uint64_t silent_gaps;	/* gaps nothing flagged: a bug */
	uint64_t disorder;	/* events out of order or repeated: a bug */
	uint64_t lossy;		/* packets that carried loss bits */
	uint32_t loss_bits;	/* all of them, or-ed */
	uint32_t flagged;	/* loss bits since the last event */
};

struct check {
	struct demo *d;
	struct seen w[MAX_WRITERS + 1];		/* by writer id */
	uint64_t foreign;	/* wrong trusted fields or unknown writer */
	uint64_t malformed;	/* neither a descriptor nor a tagged event */
};

/* The event number in a DebugAnnotation "seq" or "end_seq", if it is one. */
static int annotation_seq(const uint8_t *p, size_t n, uint64_t *seq)
{
	struct tb_pb_reader r;
	struct tb_pb_field f;
	int named = 0, valued = 0;

	tb_pb_reader_init(&r, p, n);
	while (tb_pb_next(&r, &f) > 0) {
		if (f.number == DA_NAME && f.type == TB_PB_LEN)
			named = (f.size == 3 && !memcmp(f.data, "seq", 3)) ||
				(f.size == 7 && !memcmp(f.data, "end_seq", 7));
		else if (f.number == DA_UINT_VALUE && f.type == TB_PB_VARINT) {
			*seq = f.value;
			valued = 1;
		}
	}
	return !r.bad && named && valued;
}

enum { KIND_OTHER, KIND_DESCRIPTOR, KIND_EVENT };

static int packet_kind(const uint8_t *p, size_t n, uint64_t *seq)
{
	struct tb_pb_reader r, e;
	struct tb_pb_field f, g;
	int kind = KIND_OTHER;

	tb_pb_reader_init(&r, p, n);
	while (tb_pb_next(&r, &f) > 0) {
		if (f.number == TP_TRACK_DESCRIPTOR && f.type == TB_PB_LEN)
			kind = KIND_DESCRIPTOR;
		if (f.number != TP_TRACK_EVENT || f.type != TB_PB_LEN)
			continue;
		tb_pb_reader_init(&e, f.data, f.size);
		while (tb_pb_next(&e, &g) > 0)
			if (g.number == TE_DEBUG_ANNOTATIONS &&
			    g.type == TB_PB_LEN &&
			    annotation_seq(g.data, g.size, seq))
				kind = KIND_EVENT;
		if (e.bad)
			return KIND_OTHER;
	}
	return kind;
}

static void on_packet(void *ctx, const struct tb_trace_packet *tp)
{
	struct check *c = ctx;
	unsigned writer = (unsigned)(tp->trusted_seq_id & 0xffff);
	struct seen *s;
	uint64_t seq = 0;

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
	case KIND_EVENT:
		/* the flag may come on a descriptor packet before the event */
		s->events++;
		if (seq < s->next_seq)
			s->disorder++;
		else if (seq > s->next_seq && s->flagged)
			s->gaps++;
		else if (seq > s->next_seq)
			s->silent_gaps++;
		s->next_seq = seq + 1;
		s->flagged = 0;
		break;
	default:
		c->malformed++;
	}
}

/* Decodes the written file; -1 if it is not a valid Perfetto trace. */
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
	munmap(map, (size_t)st.st_size);
	return ret < 0 ? -1 : n;
}

static int verify(struct demo *d, struct check *c, long decoded)
{
	uint64_t bridge_drops = d->bridge.stat[TB_BS_REJECTED] +
				d->bridge.stat[TB_BS_BAD_TARGET] +
				d->bridge.stat[TB_BS_TOO_MANY_KEYS] +
				d->bridge.stat[TB_BS_KEYS_NOMEM];
	unsigned i, bad = 0;

	for (i = 0; i < d->opt.writers; i++) {
		struct writer *wr = &d->w[i];
		struct seen *s = &c->w[wr->id];
		int64_t missing = (int64_t)(wr->packets - s->packets -
					    d->overwritten[wr->id]);
		/*
		 * Packets neither in the trace nor handed over as overwritten
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
		printf("  writer %u: wrote %llu packets (%llu events), trace "
		       "has %llu (%llu events), overwritten %llu; %llu out of "
		       "order, %llu unflagged gaps\n", wr->id,
		       (unsigned long long)wr->packets,
		       (unsigned long long)wr->seq,
		       (unsigned long long)s->packets,
		       (unsigned long long)s->events,
		       (unsigned long long)d->overwritten[wr->id],
		       (unsigned long long)s->disorder,
		       (unsigned long long)s->silent_gaps);
		bad++;
	}
	if (decoded < 0 || c->foreign || c->malformed || bad ||
	    d->ring_error || d->out.error) {
		printf("  verify      FAILED:%s%s%s %llu foreign and %llu "
		       "malformed packets, %u writers mismatched\n",
		       decoded < 0 ? " the file is not a valid trace;" : "",
		       d->out.error ? " writing the file failed;" : "",
		       d->ring_error ? " the ring was stopped;" : "",
		       (unsigned long long)c->foreign,
		       (unsigned long long)c->malformed, bad);
		return 1;
	}
	printf("  verify      ok: every packet written is in the trace or "
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

static void summary(struct demo *d, double secs, struct check *c,
		    uint64_t file_size)
{
	const struct tb_buf_stats *bs = tb_buf_stats(d->buf);
	struct tb_ring_stats st;
	struct totals t;
	uint64_t in_trace = 0, lossy = 0, gaps = 0, lost_ring, lost_service;
	uint64_t other = 0;
	uint32_t bits = 0;
	unsigned i, k;
	char size[32];

	sum_up(d, &t);
	tb_ring_stats(&d->ring, &st);
	for (i = 1; i <= d->opt.writers; i++) {
		in_trace += c->w[i].packets;
		lossy += c->w[i].lossy;
		gaps += c->w[i].gaps;
		bits |= c->w[i].loss_bits;
	}
	for (k = 0; k < 8; k++)
		if (k != -TB_FULL && k != -TB_NO_CHUNK && k != -TB_DROPPED)
			other += t.failed[k];
	lost_ring = t.attempted - t.packets;
	lost_service = t.packets - in_trace;
	printf("\nsummary: %u writers for %.1f s; ring %u x %u B, %s when "
	       "full; buffer %s, %s policy,\n", d->opt.writers, secs,
	       d->opt.num_chunks, d->opt.chunk_size,
	       d->opt.full == TB_STALL ? "stall" : "drop",
	       size_str(size, sizeof(size), d->opt.buffer_size),
	       d->opt.fill == TB_BUF_DISCARD ? "discard" : "ring");
	if (d->opt.period_ms)
		printf("         written out every %u ms (long trace)\n",
		       d->opt.period_ms);
	else
		printf("         written out once, at the end\n");
	printf("  writers     wrote %llu packets (%.1f MB): %.1fk packets/s, "
	       "%.1f MB/s\n", (unsigned long long)t.packets,
	       (double)t.bytes / 1e6, (double)t.packets / secs / 1e3,
	       (double)t.bytes / secs / 1e6);
	printf("  trace       %llu packets (%.2f%% of those written); %s is "
	       "%.1f MB\n", (unsigned long long)in_trace,
	       pct(in_trace, t.packets), d->opt.output,
	       (double)file_size / 1e6);
	printf("  lost        in the ring: %llu of %llu attempted (full %llu, "
	       "no chunk %llu,\n              relocation found no room %llu",
	       (unsigned long long)lost_ring,
	       (unsigned long long)t.attempted,
	       (unsigned long long)t.failed[-TB_FULL],
	       (unsigned long long)t.failed[-TB_NO_CHUNK],
	       (unsigned long long)t.failed[-TB_DROPPED]);
	if (other)
		printf(", other %llu", (unsigned long long)other);
	printf(")\n              in the service: %llu (overwritten %llu, "
	       "cut short or in refused\n              chunks %llu; chunks "
	       "refused %llu)\n", (unsigned long long)lost_service,
	       (unsigned long long)d->overwritten[0],
	       (unsigned long long)(lost_service - d->overwritten[0]),
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
"  -l  long trace: write the buffer out every N ms (250), 0: at the end\n"
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
	struct tb_buf_ident ident;
	unsigned i, handle;

	d->pid = (int)getpid();
	d->uid = (unsigned)getuid();
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
	d->buf = tb_buf_create(d->opt.buffer_size, d->opt.fill);
	if (!d->buf) {
		fprintf(stderr, "demo: cannot allocate a %zu-byte buffer\n",
			d->opt.buffer_size);
		exit(2);
	}
	tb_buf_on_overwrite(d->buf, on_overwrite, d);
	ident.uid = d->uid;
	ident.pid = d->pid;
	if (tb_bridge_init(&d->bridge, &d->ring, xmalloc(d->opt.chunk_size),
			   PRODUCER_ID, ident, &d->buf, 1, NULL, NULL)) {
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
		wr->track = (uint64_t)d->pid << 16 | wr->id;
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
	tb_bridge_destroy(&d.bridge);
	tb_buf_destroy(d.buf);
	munmap(d.mem, d.mem_size);
	return ret;
}
