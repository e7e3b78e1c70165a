/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_e2e.c - producers in their own processes, the service, the trace
 * file (Linux).
 *
 * Runs the examples as a user would: build/tb_service listening on a unix
 * socket, build/tb_producer processes writing through rings the service
 * hands them in memfds (the binaries are found in $TB_BUILD_DIR, default
 * "build").  Each producer reports on its stdout what it wrote (see the
 * top of examples/tb_producer.c); the service prints a summary line per
 * producer when it stops.  The trace file is decoded here with
 * trace_decode.h, independently of the service's encoder and of the
 * event layer: a producer writes TrackEvents (tbevent.h), and every slice
 * BEGIN and instant carries a debug annotation "seq", its writer's
 * running number of tagged events.  A sequence is tied to its writer by
 * the thread descriptor it carries (the tid that writer reported), and
 * every instant (a Snapshot) checks itself: "check" is FNV-1a of the
 * writer id, seq and its "body" string, so a byte changed on the way, or
 * a packet on the wrong sequence, shows.  Annotation names are interned:
 * they are resolved per sequence from its interned_data.  Then the trace
 * checker (tbcheck.h) runs over the whole file: it must find nothing
 * Perfetto's importer would drop or misplace that no loss explains, and
 * every writer that wrote must have, as the UI would show it, slices on
 * the thread track of its tid and values on the counter track under it.
 *
 *   - producers: several producer processes write; the trace holds every
 *     tagged event each reported written, once, in order per writer
 *     (gaps only where a loss is flagged), with the producer's pid and
 *     uid as trusted fields and one trusted_packet_sequence_id per
 *     {producer, writer}, distinct; a thread track with slices and a
 *     counter track per writer; the checker is clean.
 *   - kill: producers killed -9 inside a packet in every writer (some of
 *     those packets span chunks), slices still open, two per round, three
 *     rounds, while other producers write: the service carries on,
 *     everything a victim published arrives, its open packets never do
 *     and the service counts them (open_at_exit), and the others lose
 *     nothing.  The checker is told the end was lost (tail_lost): slices
 *     left open are allowed, on the victims' sequences only.
 *   - scribble: producers write random words over their ring's control
 *     header and state words: the service stops those rings with a
 *     protocol error, keeps running (a producer that comes later is
 *     served), stops on command, and the other producers' traces are
 *     complete and clean.
 *
 * Every wait has a deadline; children die with the test (PDEATHSIG).
 *
 * TB_EXEC_WRAP, when set, is a command (words split on spaces) put in
 * front of every example binary this test runs, e.g. "qemu-aarch64 -L /"
 * so that make cross runs the cross-built examples under qemu-user too.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tbtrace.h"
#include "tools/tbcheck.h"
#include "trace_decode.h"
#include "spawn_helpers.h"

#define E2E_PROCS	16
#define E2E_WRITERS	8
#define E2E_TIMEOUT_S	300	/* per test, times CK_TIMEOUT_MULTIPLIER */
/* A step that takes this long hangs (times the multiplier): below the
 * test's timeout, so that what hung is said; far above what a loaded
 * machine takes. */
#define E2E_HANG_MS	200000u

enum e2e_role { E2E_WRITER, E2E_VICTIM, E2E_SCRIBBLER };

/* One writer of one producer, as the trace shows it. */
struct e2e_stream {
	uint8_t *seen;		/* by seq */
	uint32_t nseen;		/* size of seen */
	int64_t last;		/* highest seq so far, -1 */
	uint32_t count;		/* tagged events */
	uint32_t out_of_order;	/* seq not above the previous one */
	uint32_t silent_gaps;	/* seqs skipped with no loss flagged */
	uint32_t lossy;		/* packets with previous_packet_dropped */
	uint32_t seqs;		/* sequences that are this writer's */
	uint64_t seq_id;	/* trusted_packet_sequence_id */
};

/* One trusted_packet_sequence_id, as the trace shows it. */
struct e2e_seq {
	uint64_t seq_id;
	struct e2e_proc *p;	/* by its trusted pid */
	unsigned writer;	/* from its thread descriptor, 0: none yet */
	uint64_t iid_seq, iid_body, iid_check;	/* interned names, 0 */
	uint32_t lossy;		/* packets with previous_packet_dropped */
	uint32_t flagged;	/* loss bits since its last tagged event */
	uint32_t not_ended;	/* the checker: slices never ended */
};

struct e2e_proc {
	enum e2e_role role;
	pid_t pid;
	int reaped;
	int status;
	char out[200];		/* its stdout and stderr */
	unsigned writers;
	uint32_t events;	/* tagged, per writer */
	/* its report */
	int hello, ready, done, scribbled;
	unsigned id;
	unsigned long long addr, svc_addr;
	int reported[E2E_WRITERS + 1];
	long tid[E2E_WRITERS + 1];
	uint32_t ok[E2E_WRITERS + 1];
	uint32_t failed[E2E_WRITERS + 1];
	uint32_t lost[E2E_WRITERS + 1];
	int open[E2E_WRITERS + 1];
	uint32_t open_seq[E2E_WRITERS + 1];
	uint8_t *fail_seq[E2E_WRITERS + 1];
	/* the service's summary line */
	int summarized;
	unsigned long long s_packets, s_lossy;
	char s_open[16], s_exit[16], s_ring[24];
	/* the trace */
	struct e2e_stream st[E2E_WRITERS + 1];
	uint32_t bad;		/* packets that do not check out */
	uint32_t bad_uid;
	uint32_t packets_in_trace;
	uint32_t snapshots;	/* instants whose check held */
	/* the checker: its thread track (by tid) has slices, its counter */
	uint64_t track[E2E_WRITERS + 1];	/* its uuid, 0: none */
	uint64_t slices[E2E_WRITERS + 1];
	uint64_t counts[E2E_WRITERS + 1];	/* counter values */
	char why[160];		/* the first bad packet's story */
};

struct e2e {
	char dir[160];
	char sock[200];
	char trace[200];
	char svc_out[200];
	pid_t svc;
	int svc_reaped;
	int svc_status;
	struct e2e_proc p[E2E_PROCS];
	unsigned np;
	/* from the trace */
	uint64_t trace_bytes;
	uint64_t packets;
	uint64_t tagged;
	uint64_t undecodable;	/* not a valid TracePacket */
	uint64_t foreign;	/* a pid no producer of ours had */
	uint64_t service;	/* the service's own packets */
	struct e2e_seq *seqs;
	unsigned nseqs, capseqs;
	/* the checker's verdict, sorted by whose sequence broke a rule */
	struct tb_check ck;
	int ck_ret;
	uint64_t ck_bad;	/* unexplained, not on a scribbler's */
	char ck_first[160];	/* the first of those */
	unsigned thread_tracks;	/* with slices */
	unsigned counter_tracks;	/* with values */
	unsigned loss_tracks;	/* the service's "events lost", with values */
	/* from the service's summary */
	unsigned long long overwritten;
};

static char e2e_root[64];	/* made once per test case, in the runner */

static unsigned e2e_mult(void)
{
	const char *m = getenv("CK_TIMEOUT_MULTIPLIER");
	int v = m ? atoi(m) : 1;

	return v > 0 ? (unsigned)v : 1;
}

static uint64_t e2e_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void e2e_sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}


/* ------------------------------------------------------------------------
 * Processes.
 */

/* Reaps @pid within @ms (times the multiplier); kills it -9 after. */
static int e2e_reap(pid_t pid, int *reaped, int *status, unsigned ms)
{
	uint64_t end = e2e_ms() + (uint64_t)ms * e2e_mult();

	while (!*reaped) {
		pid_t got = waitpid(pid, status, WNOHANG);

		if (got == pid) {
			*reaped = 1;
			break;
		}
		ck_assert_int_ne(got, -1);
		if (e2e_ms() >= end) {
			kill(pid, SIGKILL);
			ck_assert_int_eq(waitpid(pid, status, 0), pid);
			*reaped = 1;
			return -1;
		}
		e2e_sleep_ms(2);
	}
	return 0;
}

static void e2e_dump(const char *path)
{
	char *s = spawn_slurp(path, NULL);

	fprintf(stderr, "---- %s\n%s----\n", path, s ? s : "(none)\n");
	free(s);
}

static void e2e_init(struct e2e *e, const char *name)
{
	memset(e, 0, sizeof(*e));
	ck_assert_msg(e2e_root[0], "no scratch directory");
	snprintf(e->dir, sizeof(e->dir), "%s/%s", e2e_root, name);
	ck_assert_msg(mkdir(e->dir, 0700) == 0, "%s: %s", e->dir,
		      strerror(errno));
	snprintf(e->sock, sizeof(e->sock), "%s/sock", e->dir);
	snprintf(e->trace, sizeof(e->trace), "%s/trace.pftrace", e->dir);
	snprintf(e->svc_out, sizeof(e->svc_out), "%s/service.out", e->dir);
}

static void e2e_start_service(struct e2e *e)
{
	const char *args[] = { "-c", "1024", "-n", "32", "-b", "16M", "-p",
			       "20", "-W", "50", "-v", e->sock, e->trace,
			       NULL };

	e->svc = spawn_to("tb_service", e->svc_out, args);
}

/*
 * Starts a producer: @writers writers, @events tagged events each, then
 * whatever @extra (NULL-terminated) asks for.
 */
static struct e2e_proc *e2e_start(struct e2e *e, enum e2e_role role,
				  unsigned writers, uint32_t events,
				  unsigned seed, const char *const *extra)
{
	struct e2e_proc *p;
	char w[16], n[16], s[16], out[sizeof(p->out)];
	const char *args[24];
	unsigned a = 0, i;

	ck_assert_uint_lt(e->np, E2E_PROCS);
	ck_assert_uint_le(writers, E2E_WRITERS);
	p = &e->p[e->np];
	memset(p, 0, sizeof(*p));
	p->role = role;
	p->writers = writers;
	p->events = events;
	snprintf(out, sizeof(out), "%s/producer%u.out", e->dir, e->np);
	memcpy(p->out, out, sizeof(p->out));
	snprintf(w, sizeof(w), "%u", writers);
	snprintf(n, sizeof(n), "%u", events);
	snprintf(s, sizeof(s), "%u", seed);
	args[a++] = "-w";
	args[a++] = w;
	args[a++] = "-n";
	args[a++] = n;
	args[a++] = "-S";
	args[a++] = s;
	for (i = 0; extra && extra[i]; i++)
		args[a++] = extra[i];
	args[a++] = e->sock;
	args[a] = NULL;
	p->pid = spawn_to("tb_producer", p->out, args);
	e->np++;
	return p;
}

/* Waits for a line in @p's output (a victim's "ready"). */
static void e2e_wait_line(struct e2e_proc *p, const char *line)
{
	uint64_t end = e2e_ms() + (uint64_t)E2E_HANG_MS * e2e_mult();
	size_t ll = strlen(line);

	for (;;) {
		char *s = spawn_slurp(p->out, NULL), *at;
		int found = 0;

		for (at = s; at && (at = strstr(at, line)); at += ll)
			if ((at == s || at[-1] == '\n') && at[ll] == '\n')
				found = 1;
		free(s);
		if (found)
			return;
		if (!p->reaped && waitpid(p->pid, &p->status, WNOHANG) ==
		    p->pid)
			p->reaped = 1;
		if (p->reaped || e2e_ms() >= end) {
			e2e_dump(p->out);
			if (!p->reaped)
				kill(p->pid, SIGKILL);
			ck_abort_msg("producer %d never said '%s' (%s)",
				     (int)p->pid, line, p->reaped ?
				     "it exited" : "timed out");
		}
		e2e_sleep_ms(2);
	}
}

static void e2e_reap_producer(struct e2e_proc *p)
{
	if (e2e_reap(p->pid, &p->reaped, &p->status, E2E_HANG_MS)) {
		e2e_dump(p->out);
		ck_abort_msg("producer %d did not finish in time",
			     (int)p->pid);
	}
}

static void e2e_kill(struct e2e_proc *p)
{
	ck_assert_int_eq(kill(p->pid, SIGKILL), 0);
	e2e_reap_producer(p);
}

/* Stops the service: SIGTERM, or the STOP command when @by_command. */
static void e2e_stop_service(struct e2e *e, int by_command)
{
	if (by_command) {
		const char *args[] = { "-C", "stop", e->sock, NULL };
		char out[240];
		int status, reaped = 0;
		pid_t pid;

		snprintf(out, sizeof(out), "%s/command.out", e->dir);
		pid = spawn_to("tb_producer", out, args);
		ck_assert_int_eq(e2e_reap(pid, &reaped, &status, E2E_HANG_MS), 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			e2e_dump(out);
			ck_abort_msg("the stop command failed: %#x", status);
		}
	} else {
		ck_assert_int_eq(kill(e->svc, SIGTERM), 0);
	}
	if (e2e_reap(e->svc, &e->svc_reaped, &e->svc_status,
		     E2E_HANG_MS)) {
		e2e_dump(e->svc_out);
		ck_abort_msg("the service did not stop in time");
	}
	if (!WIFEXITED(e->svc_status) || WEXITSTATUS(e->svc_status)) {
		e2e_dump(e->svc_out);
		ck_abort_msg("the service ended with status %#x",
			     e->svc_status);
	}
}

/* ------------------------------------------------------------------------
 * Reports.
 */
static void e2e_parse_report(struct e2e_proc *p)
{
	char *s = spawn_slurp(p->out, NULL), *line, *save = NULL;
	unsigned w, seq, a, b, c;
	long tid;
	int large;

	ck_assert_ptr_nonnull(s);
	for (w = 1; w <= p->writers; w++) {
		p->fail_seq[w] = calloc(p->events + 1, 1);
		ck_assert_ptr_nonnull(p->fail_seq[w]);
	}
	for (line = strtok_r(s, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "producer pid=%*d id=%u addr=%llx "
			   "service_addr=%llx", &p->id, &p->addr,
			   &p->svc_addr) == 3) {
			p->hello = 1;
		} else if (sscanf(line, "writer %u tid=%ld ok=%u failed=%u "
				  "lost=%u", &w, &tid, &a, &b, &c) == 5 &&
			   w && w <= p->writers) {
			p->reported[w] = 1;
			p->tid[w] = tid;
			p->ok[w] = a;
			p->failed[w] = b;
			p->lost[w] = c;
		} else if (sscanf(line, "fail %u %u", &w, &seq) == 2 && w &&
			   w <= p->writers && seq < p->events) {
			p->fail_seq[w][seq] = 1;
		} else if (sscanf(line, "open %u %u large=%d", &w, &seq,
				  &large) == 3 && w && w <= p->writers) {
			p->open[w] = 1;
			p->open_seq[w] = seq;
		} else if (!strcmp(line, "ready")) {
			p->ready = 1;
		} else if (!strncmp(line, "scribbled ", 10)) {
			p->scribbled = 1;
		} else if (!strncmp(line, "done ", 5)) {
			p->done = 1;
		}
	}
	free(s);
	if (!p->hello) {
		e2e_dump(p->out);
		ck_abort_msg("producer %d: no report", (int)p->pid);
	}
	ck_assert_msg(p->addr && p->addr != p->svc_addr,
		      "producer %d mapped its ring at the service's address "
		      "%#llx", (int)p->pid, p->svc_addr);
}

static struct e2e_proc *e2e_by_pid(struct e2e *e, long pid)
{
	unsigned i;

	for (i = 0; i < e->np; i++)
		if (e->p[i].pid == pid)
			return &e->p[i];
	return NULL;
}

static void e2e_parse_summary(struct e2e *e)
{
	char *s = spawn_slurp(e->svc_out, NULL), *line, *save = NULL, *at;
	unsigned long long packets, lossy;
	char open[16], ex[16], ring[24];
	unsigned id, uid;
	int pid;

	ck_assert_ptr_nonnull(s);
	at = strstr(s, " overwritten");
	ck_assert_msg(at, "no summary from the service");
	while (at > s && at[-1] != ' ')
		at--;
	e->overwritten = strtoull(at, NULL, 10);
	for (line = strtok_r(s, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		struct e2e_proc *p;

		if (sscanf(line, "producer id=%u pid=%d uid=%u packets=%llu "
			   "lossy=%llu loss_bits=%*x open_at_exit=%15s "
			   "exit=%15s reported=%*u failed=%*u ring=%23s",
			   &id, &pid, &uid, &packets, &lossy, open, ex,
			   ring) != 8)
			continue;
		p = e2e_by_pid(e, pid);
		if (!p)
			continue;	/* a control client never says HELLO */
		ck_assert_msg(!p->summarized, "pid %d summarized twice", pid);
		ck_assert_uint_eq(id, p->id);
		ck_assert_uint_eq(uid, getuid());
		p->summarized = 1;
		p->s_packets = packets;
		p->s_lossy = lossy;
		memcpy(p->s_open, open, sizeof(open));
		memcpy(p->s_exit, ex, sizeof(ex));
		memcpy(p->s_ring, ring, sizeof(ring));
	}
	free(s);
}

/* ------------------------------------------------------------------------
 * The trace, decoded here.  Field numbers from Perfetto's protos
 * (trace_packet.proto, track_event/{track_event, track_descriptor,
 * thread_descriptor, debug_annotation}.proto,
 * interned_data/interned_data.proto).
 */
enum {
	E2E_TP_TRACK_EVENT = 11,	/* TracePacket */
	E2E_TP_INTERNED = 12,
	E2E_TP_TRACK_DESC = 60,
	E2E_TE_ANNOTATION = 4,		/* TrackEvent */
	E2E_TE_TYPE = 9,
	E2E_TYPE_BEGIN = 1,		/* TrackEvent.Type */
	E2E_TYPE_INSTANT = 3,
	E2E_TD_THREAD = 4,		/* TrackDescriptor */
	E2E_THD_PID = 1,		/* ThreadDescriptor */
	E2E_THD_TID = 2,
	E2E_DA_NAME_IID = 1,		/* DebugAnnotation */
	E2E_DA_UINT = 3,
	E2E_DA_STRING = 6,
	E2E_DA_NAME = 10,
	E2E_ID_ANNOTATION_NAMES = 3,	/* InternedData */
	E2E_IE_IID = 1,			/* DebugAnnotationName */
	E2E_IE_NAME = 2,
};

/* The Snapshot's check, as tb_producer.c computes it. */
static uint32_t e2e_check_of(unsigned writer, uint32_t seq,
			     const uint8_t *body, size_t len)
{
	uint32_t h = 0x811c9dc5u;
	unsigned i;

	for (i = 0; i < 4; i++)
		h = (h ^ (uint8_t)(writer >> (8 * i))) * 0x01000193u;
	for (i = 0; i < 4; i++)
		h = (h ^ (uint8_t)(seq >> (8 * i))) * 0x01000193u;
	while (len--)
		h = (h ^ *body++) * 0x01000193u;
	return h;
}

static int e2e_is(const struct pb_field *f, const char *s)
{
	return f->type == 2 && f->size == strlen(s) &&
	       !memcmp(f->data, s, f->size);
}

/* A packet that does not check out: counted, and the first one told. */
static void e2e_bad(struct e2e_proc *p, const char *fmt, ...)
{
	va_list ap;

	if (!p->bad++) {
		va_start(ap, fmt);
		vsnprintf(p->why, sizeof(p->why), fmt, ap);
		va_end(ap);
	}
}

static struct e2e_seq *e2e_seq_of(struct e2e *e, uint64_t seq_id)
{
	unsigned i;

	for (i = 0; i < e->nseqs; i++)
		if (e->seqs[i].seq_id == seq_id)
			return &e->seqs[i];
	return NULL;
}

static struct e2e_seq *e2e_seq_add(struct e2e *e, uint64_t seq_id,
				   struct e2e_proc *p)
{
	struct e2e_seq *s;

	if (e->nseqs == e->capseqs) {
		e->capseqs = e->capseqs ? 2 * e->capseqs : 64;
		e->seqs = realloc(e->seqs, e->capseqs * sizeof(*e->seqs));
		ck_assert_ptr_nonnull(e->seqs);
	}
	s = &e->seqs[e->nseqs++];
	memset(s, 0, sizeof(*s));
	s->seq_id = seq_id;
	s->p = p;
	return s;
}

/* interned_data: the iids of the annotation names we look for. */
static void e2e_interned(struct e2e_seq *s, const struct pb_field *id)
{
	struct pb_reader r, in;
	struct pb_field f, g;

	pb_init(&r, id->data, id->size);
	while (pb_next(&r, &f) > 0) {
		uint64_t iid = 0;
		struct pb_field name;

		if (f.number != E2E_ID_ANNOTATION_NAMES || f.type != 2)
			continue;
		memset(&name, 0, sizeof(name));
		pb_init(&in, f.data, f.size);
		while (pb_next(&in, &g) > 0)
			if (g.number == E2E_IE_IID && g.type == 0)
				iid = g.value;
			else if (g.number == E2E_IE_NAME && g.type == 2)
				name = g;
		if (!iid)
			continue;
		if (e2e_is(&name, "seq"))
			s->iid_seq = iid;
		else if (e2e_is(&name, "body"))
			s->iid_body = iid;
		else if (e2e_is(&name, "check"))
			s->iid_check = iid;
	}
}

/* A thread descriptor names the sequence's writer, by its tid. */
static void e2e_descriptor(struct e2e_seq *s, const struct pb_field *td)
{
	struct e2e_proc *p = s->p;
	struct pb_reader r, in;
	struct pb_field f, g;
	long pid = -1, tid = -1;
	unsigned w;

	pb_init(&r, td->data, td->size);
	while (pb_next(&r, &f) > 0) {
		if (f.number != E2E_TD_THREAD || f.type != 2)
			continue;
		pb_init(&in, f.data, f.size);
		while (pb_next(&in, &g) > 0)
			if (g.number == E2E_THD_PID && g.type == 0)
				pid = (long)g.value;
			else if (g.number == E2E_THD_TID && g.type == 0)
				tid = (long)g.value;
	}
	if (tid < 0)
		return;		/* a process or counter track */
	for (w = 1; w <= p->writers && p->tid[w] != tid; w++)
		;
	if (pid != p->pid || w > p->writers) {
		e2e_bad(p, "seq %#llx: a thread descriptor of pid %ld tid "
			"%ld, no writer of ours", (unsigned long long)s->seq_id,
			pid, tid);
	} else if (s->writer && s->writer != w) {
		e2e_bad(p, "seq %#llx: writer %u's, then writer %u's",
			(unsigned long long)s->seq_id, s->writer, w);
	} else if (!s->writer) {
		s->writer = w;
		if (!p->st[w].seqs++)
			p->st[w].seq_id = s->seq_id;
	}
}

/* What one TrackEvent carries that we check. */
struct e2e_event {
	uint64_t type;
	int has_seq, has_check, has_body;
	uint64_t seq, check;
	const uint8_t *body;
	size_t body_len;
};

static int e2e_annotation(const struct e2e_seq *s, const struct pb_field *a,
			  struct e2e_event *ev)
{
	struct pb_reader r;
	struct pb_field f, str;
	uint64_t iid = 0, u = 0;
	int has_u = 0, has_str = 0, which = 0;

	memset(&str, 0, sizeof(str));
	pb_init(&r, a->data, a->size);
	while (pb_next(&r, &f) > 0) {
		if (f.number == E2E_DA_NAME_IID && f.type == 0)
			iid = f.value;
		else if (f.number == E2E_DA_NAME && f.type == 2)
			which = e2e_is(&f, "seq") ? 1 : e2e_is(&f, "body") ?
				2 : e2e_is(&f, "check") ? 3 : 0;
		else if (f.number == E2E_DA_UINT && f.type == 0)
			u = f.value, has_u = 1;
		else if (f.number == E2E_DA_STRING && f.type == 2)
			str = f, has_str = 1;
	}
	if (r.bad)
		return -1;
	if (iid)
		which = iid == s->iid_seq ? 1 : iid == s->iid_body ? 2 :
			iid == s->iid_check ? 3 : 0;
	if (which == 1 && has_u)
		ev->has_seq = 1, ev->seq = u;
	else if (which == 3 && has_u)
		ev->has_check = 1, ev->check = u;
	else if (which == 2 && has_str)
		ev->has_body = 1, ev->body = str.data, ev->body_len = str.size;
	else if (which)
		return -1;	/* a name of ours with the wrong value */
	return 0;
}

static int e2e_event_decode(const struct e2e_seq *s,
			    const struct pb_field *te, struct e2e_event *ev)
{
	struct pb_reader r;
	struct pb_field f;

	memset(ev, 0, sizeof(*ev));
	pb_init(&r, te->data, te->size);
	while (pb_next(&r, &f) > 0) {
		if (f.number == E2E_TE_TYPE && f.type == 0)
			ev->type = f.value;
		else if (f.number == E2E_TE_ANNOTATION && f.type == 2 &&
			 e2e_annotation(s, &f, ev))
			return -1;
	}
	return r.bad ? -1 : 0;
}

/* A tagged event, on its writer's stream. */
static void e2e_tagged(struct e2e *e, struct e2e_seq *s,
		       const struct e2e_event *ev)
{
	struct e2e_proc *p = s->p;
	struct e2e_stream *st = &p->st[s->writer];

	e->tagged++;
	if (!st->seen) {
		st->nseen = p->events + 2;
		st->seen = calloc(st->nseen, 1);
		ck_assert_ptr_nonnull(st->seen);
		st->last = -1;
	}
	if (ev->seq >= st->nseen) {
		e2e_bad(p, "writer %u: seq %llu", s->writer,
			(unsigned long long)ev->seq);
		return;
	}
	if ((int64_t)ev->seq <= st->last)
		st->out_of_order++;
	else if ((int64_t)ev->seq > st->last + 1 && !s->flagged)
		st->silent_gaps++;
	if ((int64_t)ev->seq > st->last)
		st->last = (int64_t)ev->seq;
	s->flagged = 0;
	st->seen[ev->seq] = 1;
	st->count++;
}

static void e2e_track_event(struct e2e *e, struct e2e_seq *s,
			    const struct pb_field *te)
{
	struct e2e_proc *p = s->p;
	struct e2e_event ev;

	if (e2e_event_decode(s, te, &ev)) {
		e2e_bad(p, "seq %#llx: a TrackEvent that does not decode",
			(unsigned long long)s->seq_id);
		return;
	}
	if (ev.type != E2E_TYPE_BEGIN && ev.type != E2E_TYPE_INSTANT)
		return;		/* ENDs and counters carry no tag */
	if (!s->writer || !ev.has_seq) {
		e2e_bad(p, "seq %#llx: a %s %s", (unsigned long long)s->seq_id,
			ev.type == E2E_TYPE_BEGIN ? "BEGIN" : "instant",
			s->writer ? "without seq" : "before its thread "
			"descriptor");
		return;
	}
	e2e_tagged(e, s, &ev);
	if (ev.type != E2E_TYPE_INSTANT)
		return;
	/* every instant is a Snapshot: its body checks out, and is ours */
	if (!ev.has_body || !ev.has_check ||
	    ev.check != e2e_check_of(s->writer, (uint32_t)ev.seq, ev.body,
				     ev.body_len)) {
		e2e_bad(p, "writer %u: instant %llu: %s", s->writer,
			(unsigned long long)ev.seq, ev.has_body &&
			ev.has_check ? "its check fails" : "no body or check");
		return;
	}
	p->snapshots++;
}

static void e2e_packet(struct e2e *e, const struct trace_packet *tp)
{
	struct e2e_proc *p = tp->has_pid ? e2e_by_pid(e, (long)tp->trusted_pid)
					 : NULL;
	struct pb_field f, desc, interned, te;
	int has_desc = 0, has_interned = 0, has_te = 0;
	struct pb_reader r;
	struct e2e_seq *s;

	e->packets++;
	if (tp->has_seq_id && tp->trusted_seq_id == TB_TRACE_SERVICE_SEQ &&
	    tp->has_pid && (pid_t)tp->trusted_pid == e->svc) {
		e->service++;	/* its loss counters, records, TraceStats */
		return;
	}
	if (!p) {
		e->foreign++;
		return;
	}
	memset(&desc, 0, sizeof(desc));
	interned = te = desc;
	p->packets_in_trace++;
	if (!tp->has_uid || tp->trusted_uid != getuid())
		p->bad_uid++;
	if (!tp->has_seq_id) {
		e2e_bad(p, "a packet without a sequence id");
		return;
	}
	s = e2e_seq_of(e, tp->trusted_seq_id);
	if (!s)
		s = e2e_seq_add(e, tp->trusted_seq_id, p);
	if (s->p != p) {
		e2e_bad(p, "seq %#llx is pid %d's too",
			(unsigned long long)s->seq_id, (int)s->p->pid);
		return;
	}
	if (tp->dropped) {
		s->lossy++;
		s->flagged |= (uint32_t)tp->dropped;
	}
	/* interned data and descriptors first: the event may use them */
	pb_init(&r, tp->data, tp->size);
	while (pb_next(&r, &f) > 0) {
		if (f.type != 2)
			continue;
		if (f.number == E2E_TP_INTERNED)
			interned = f, has_interned = 1;
		else if (f.number == E2E_TP_TRACK_DESC)
			desc = f, has_desc = 1;
		else if (f.number == E2E_TP_TRACK_EVENT)
			te = f, has_te = 1;
	}
	if (has_interned)
		e2e_interned(s, &interned);
	if (has_desc)
		e2e_descriptor(s, &desc);
	if (has_te)
		e2e_track_event(e, s, &te);
}

/* The checker: each violation goes to whose sequence it is on. */
static void e2e_on_violation(void *ctx, const struct tb_check_violation *v)
{
	struct e2e *e = ctx;
	struct e2e_seq *s = e2e_seq_of(e, v->seq_id);

	if (s && v->rule == TB_CK_SLICE_NOT_ENDED)
		s->not_ended++;
	if (v->explained || (s && s->p->role == E2E_SCRIBBLER))
		return;
	if (!e->ck_bad++)
		snprintf(e->ck_first, sizeof(e->ck_first), "%s at packet "
			 "%llu, sequence %#x (%s), detail %#llx",
			 tb_check_rule_name((int)v->rule),
			 (unsigned long long)v->packet, (unsigned)v->seq_id,
			 s ? "a producer's" : "no producer's",
			 (unsigned long long)v->detail);
}

static void e2e_check_trace(struct e2e *e, const uint8_t *t, size_t len,
			    int tail_lost)
{
	uint32_t i;

	ck_assert_int_eq(tb_check_init(&e->ck, NULL, NULL, 0), TB_OK);
	e->ck.on_violation = e2e_on_violation;
	e->ck.ctx = e;
	e->ck.tail_lost = tail_lost != 0;
	e->ck_ret = tb_check_trace(&e->ck, t, len);
	for (i = 0; i < e->ck.ntracks; i++) {
		const struct tb_check_track *k = &e->ck.tracks[i];
		struct e2e_proc *p = e2e_by_pid(e, k->pid);
		unsigned w;

		if (k->kind == TB_CHECK_TRACK_THREAD && k->slices)
			e->thread_tracks++;
		else if (k->kind == TB_CHECK_TRACK_COUNTER && k->events &&
			 (k->uuid & ~0xffffull) == TB_TRACE_LOSS_UUID)
			e->loss_tracks++;	/* the service's */
		else if (k->kind == TB_CHECK_TRACK_COUNTER && k->events)
			e->counter_tracks++;
		if (k->kind != TB_CHECK_TRACK_THREAD || !p)
			continue;
		for (w = 1; w <= p->writers; w++)
			if (p->tid[w] == k->tid) {
				p->track[w] = k->uuid;
				p->slices[w] = k->slices;
			}
	}
	/* a writer's counter track is the child of its thread track */
	for (i = 0; i < e->ck.ntracks; i++) {
		const struct tb_check_track *k = &e->ck.tracks[i];
		unsigned j, w;

		if (k->kind != TB_CHECK_TRACK_COUNTER || !k->parent)
			continue;
		for (j = 0; j < e->np; j++)
			for (w = 1; w <= e->p[j].writers; w++)
				if (e->p[j].track[w] == k->parent)
					e->p[j].counts[w] += k->events;
	}
	tb_check_destroy(&e->ck);
}

/* Decodes the trace into the producers' streams, and checks it. */
static void e2e_read_trace(struct e2e *e, int tail_lost)
{
	size_t len;
	uint8_t *t = (uint8_t *)spawn_slurp(e->trace, &len);
	struct pb_reader r;
	struct pb_field f;
	unsigned i, j, k, l;
	int ret;

	ck_assert_ptr_nonnull(t);
	e->trace_bytes = len;
	pb_init(&r, t, len);
	while ((ret = pb_next(&r, &f)) > 0) {
		struct trace_packet tp;

		ck_assert_msg(f.number == 1 && f.type == 2,
			      "trace: field %u type %u at the top level",
			      f.number, f.type);
		if (trace_packet_decode(f.data, f.size, &tp)) {
			e->undecodable++;
			continue;
		}
		e2e_packet(e, &tp);
	}
	ck_assert_msg(ret == 0, "trace: not a sequence of Trace.packet");
	e2e_check_trace(e, t, len, tail_lost);
	free(t);
	/* a sequence's loss flags are its writer's */
	for (i = 0; i < e->nseqs; i++)
		if (e->seqs[i].writer)
			e->seqs[i].p->st[e->seqs[i].writer].lossy +=
				e->seqs[i].lossy;
	/* one sequence id per {producer, writer}, never shared */
	for (i = 0; i < e->np; i++)
		for (j = 1; j <= e->p[i].writers; j++)
			for (k = i; e->p[i].st[j].seqs && k < e->np; k++)
				for (l = k == i ? j + 1 : 1;
				     l <= e->p[k].writers; l++)
					ck_assert_msg(!e->p[k].st[l].seqs ||
						e->p[k].st[l].seq_id !=
						e->p[i].st[j].seq_id,
						"pid %d writer %u and pid %d "
						"writer %u share sequence id "
						"%#llx", (int)e->p[i].pid, j,
						(int)e->p[k].pid, l,
						(unsigned long long)
						e->p[i].st[j].seq_id);
}

/*
 * A producer that wrote (and, for a victim, then died in a packet): the
 * trace holds exactly the tagged events it reported written, in order,
 * on one sequence, and the service's summary agrees.
 */
static void e2e_check_writes(struct e2e *e, struct e2e_proc *p)
{
	unsigned w, i;
	uint32_t seq;

	for (w = 1; w <= p->writers; w++)
		if (p->role == E2E_VICTIM && p->open[w] && p->st[w].seen)
			ck_assert_msg(!p->st[w].seen[p->open_seq[w]],
				      "pid %d writer %u: the open packet %u "
				      "arrived", (int)p->pid, w,
				      p->open_seq[w]);
	ck_assert_msg(p->bad == 0 && p->bad_uid == 0,
		      "pid %d: %u packets do not check out (first: %s), %u "
		      "bad uids", (int)p->pid, p->bad, p->why, p->bad_uid);
	for (w = 1; w <= p->writers; w++) {
		struct e2e_stream *st = &p->st[w];

		ck_assert_msg(p->reported[w], "pid %d writer %u: no report",
			      (int)p->pid, w);
		ck_assert_uint_eq(p->ok[w] + p->failed[w], p->events);
		ck_assert_msg(st->seen || !p->ok[w],
			      "pid %d writer %u: nothing in the trace",
			      (int)p->pid, w);
		ck_assert_msg(st->seqs <= 1, "pid %d writer %u: on %u "
			      "sequences", (int)p->pid, w, st->seqs);
		ck_assert_msg(st->out_of_order == 0,
			      "pid %d writer %u: %u events out of order or "
			      "repeated", (int)p->pid, w, st->out_of_order);
		for (seq = 0; seq < p->events; seq++)
			ck_assert_msg(p->fail_seq[w][seq] || st->seen[seq],
				      "pid %d writer %u: event %u written "
				      "but not in the trace", (int)p->pid, w,
				      seq);
		ck_assert_msg(st->count == p->ok[w],
			      "pid %d writer %u: %u in the trace, %u "
			      "written", (int)p->pid, w, st->count,
			      p->ok[w]);
		/* what the UI shows: its slices on its thread, its counter */
		ck_assert_msg(!p->ok[w] || (p->slices[w] && p->counts[w]),
			      "pid %d writer %u: %llu slices on its thread "
			      "track, %llu counter values under it%s",
			      (int)p->pid, w, (unsigned long long)p->slices[w],
			      (unsigned long long)p->counts[w], p->track[w] ?
			      "" : " (no thread track with its tid)");
		ck_assert_msg(st->silent_gaps == 0, "pid %d writer %u: %u "
			      "gaps no loss flag explains", (int)p->pid, w,
			      st->silent_gaps);
		/* loss is only ever flagged after a write failed */
		ck_assert_msg(p->lost[w] || !st->lossy,
			      "pid %d writer %u: %u packets with loss bits "
			      "and no loss", (int)p->pid, w, st->lossy);
	}
	/* slices left open only where the producer died in them */
	for (i = 0; i < e->nseqs; i++)
		ck_assert_msg(e->seqs[i].p != p || p->role == E2E_VICTIM ||
			      !e->seqs[i].not_ended || e->seqs[i].lossy,
			      "pid %d: %u slices never ended on sequence "
			      "%#llx", (int)p->pid, e->seqs[i].not_ended,
			      (unsigned long long)e->seqs[i].seq_id);
	ck_assert_msg(p->summarized, "pid %d: not in the summary",
		      (int)p->pid);
	ck_assert_uint_eq(p->s_packets, p->packets_in_trace);
	ck_assert_str_eq(p->s_ring, "ok");
}

static void e2e_check_writer(struct e2e *e, struct e2e_proc *p)
{
	ck_assert_msg(WIFEXITED(p->status) && !WEXITSTATUS(p->status),
		      "producer %d: status %#x", (int)p->pid, p->status);
	ck_assert_msg(p->done, "producer %d: never said done", (int)p->pid);
	e2e_check_writes(e, p);
	ck_assert_str_eq(p->s_exit, "clean");
	ck_assert_str_eq(p->s_open, "0");
}

static void e2e_check_victim(struct e2e *e, struct e2e_proc *p)
{
	unsigned w, open = 0;
	char want[16];

	ck_assert_msg(WIFSIGNALED(p->status) &&
		      WTERMSIG(p->status) == SIGKILL,
		      "victim %d: status %#x", (int)p->pid, p->status);
	ck_assert(p->ready && !p->done);
	for (w = 1; w <= p->writers; w++)
		open += p->open[w] != 0;
	ck_assert_uint_eq(open, p->writers);
	e2e_check_writes(e, p);
	/* it died inside slices: the checker saw them open */
	for (w = 0; w < e->nseqs; w++)
		ck_assert_msg(e->seqs[w].p != p || !e->seqs[w].writer ||
			      e->seqs[w].not_ended,
			      "victim %d writer %u: no slice left open",
			      (int)p->pid, e->seqs[w].writer);
	/* the service saw it die, and counted its open packets */
	ck_assert_str_eq(p->s_exit, "died");
	snprintf(want, sizeof(want), "%u", open);
	ck_assert_str_eq(p->s_open, want);
}

/* The checker found nothing unexplained off the scribblers' sequences. */
static void e2e_check_clean(const struct e2e *e)
{
	ck_assert_msg(e->ck_ret == TB_OK, "the checker stopped: %s",
		      tb_strerror(e->ck_ret));
	ck_assert_msg(e->ck_bad == 0, "the checker: %llu violations no "
		      "loss explains, first %s",
		      (unsigned long long)e->ck_bad, e->ck_first);
}

static void e2e_cleanup(struct e2e *e)
{
	unsigned i, w;
	char path[256];

	for (i = 0; i < e->np; i++) {
		for (w = 1; w <= E2E_WRITERS; w++) {
			free(e->p[i].st[w].seen);
			free(e->p[i].fail_seq[w]);
		}
		unlink(e->p[i].out);
	}
	free(e->seqs);
	snprintf(path, sizeof(path), "%s/command.out", e->dir);
	unlink(path);
	unlink(e->svc_out);
	unlink(e->trace);
	unlink(e->sock);
	rmdir(e->dir);
}

static void e2e_finish(struct e2e *e, int tail_lost)
{
	unsigned i;

	for (i = 0; i < e->np; i++)
		e2e_parse_report(&e->p[i]);
	e2e_parse_summary(e);
	e2e_read_trace(e, tail_lost);
	ck_assert_msg(e->foreign == 0, "%llu packets from unknown pids",
		      (unsigned long long)e->foreign);
	ck_assert_msg(e->overwritten == 0, "the central buffer overwrote "
		      "%llu chunks: make it larger",
		      (unsigned long long)e->overwritten);
}

/* ------------------------------------------------------------------------
 * The tests.
 */

/* Several producer processes at once: everything arrives, in order. */
START_TEST(test_e2e_producers)
{
	static const char *const sizes[] = { "-s", "8:2000", NULL };
	struct e2e e;
	unsigned i, w, snapshots = 0;
	uint64_t ok = 0, failed = 0;

	e2e_init(&e, "producers");
	e2e_start_service(&e);
	for (i = 0; i < 4; i++)
		e2e_start(&e, E2E_WRITER, 3, 1000, 11 + i, sizes);
	for (i = 0; i < e.np; i++)
		e2e_reap_producer(&e.p[i]);
	e2e_stop_service(&e, 0);
	e2e_finish(&e, 0);
	ck_assert_msg(e.undecodable == 0, "%llu undecodable packets",
		      (unsigned long long)e.undecodable);
	for (i = 0; i < e.np; i++) {
		e2e_check_writer(&e, &e.p[i]);
		snapshots += e.p[i].snapshots;
		for (w = 1; w <= e.p[i].writers; w++) {
			ok += e.p[i].ok[w];
			failed += e.p[i].failed[w];
		}
	}
	e2e_check_clean(&e);
	/*
	 * Every event a writer was told was written is in the trace.  A
	 * stalled write can still time out or lose its chunk to a scrape
	 * (counted, flagged: seen once in a fresh root, 1 of 12000), so
	 * "everything" is everything written, and nearly all were.
	 */
	ck_assert_uint_eq(ok + failed, 4 * 3 * 1000);
	ck_assert_uint_eq(e.tagged, ok);
	ck_assert_uint_le(failed, 4 * 3 * 1000 / 100);
	/* what the UI shows: a thread track with slices, a counter, each */
	ck_assert_uint_eq(e.thread_tracks, 4 * 3);
	ck_assert_uint_eq(e.counter_tracks, 4 * 3);
	/* and the service's "events lost" track of each ring */
	ck_assert_uint_eq(e.loss_tracks, 4);
	printf("e2e producers: %u processes x 3 writers: %llu tagged events "
	       "(%u snapshots checked) in %llu packets, %llu bytes of trace, "
	       "all in order; checker clean\n", e.np,
	       (unsigned long long)e.tagged, snapshots,
	       (unsigned long long)e.packets,
	       (unsigned long long)e.trace_bytes);
	e2e_cleanup(&e);
}
END_TEST

/*
 * Three rounds of two victims each, killed -9 inside a packet (by the
 * test, or by themselves in the last round), while two producers write.
 */
START_TEST(test_e2e_kill_mid_packet)
{
	static const char *const steady[] = { "-s", "8:1500", "-i", "300",
					      NULL };
	static const char *const spin[] = { "-d", "spin", NULL };
	static const char *const spin_large[] = { "-d", "spin", "-l", NULL };
	static const char *const raise_large[] = { "-d", "raise", "-l",
						   NULL };
	struct e2e_proc *v[2];
	struct e2e e;
	unsigned i, r, victims = 0, open = 0, published = 0;

	e2e_init(&e, "kill");
	e2e_start_service(&e);
	for (i = 0; i < 2; i++)
		e2e_start(&e, E2E_WRITER, 2, 2000, 21 + i, steady);
	for (r = 0; r < 3; r++) {
		v[0] = e2e_start(&e, E2E_VICTIM, 3, 40 + 30 * r, 31 + r,
				 r & 1 ? spin_large : spin);
		v[1] = e2e_start(&e, E2E_VICTIM, 2, 25 + 50 * r, 41 + r,
				 r == 2 ? raise_large :
				 r & 1 ? spin : spin_large);
		for (i = 0; i < 2; i++) {
			e2e_wait_line(v[i], "ready");
			if (r == 2 && i == 1)
				e2e_reap_producer(v[i]);  /* raised SIGKILL */
			else
				e2e_kill(v[i]);
		}
	}
	for (i = 0; i < 2; i++)
		e2e_reap_producer(&e.p[i]);
	e2e_stop_service(&e, 0);
	/*
	 * The victims' ends are lost with nothing after them to say so
	 * but the service's record of their deaths: the trace alone
	 * explains their open slices (no tail_lost).
	 */
	e2e_finish(&e, 0);
	ck_assert_msg(e.undecodable == 0, "%llu undecodable packets",
		      (unsigned long long)e.undecodable);
	for (i = 0; i < e.np; i++) {
		if (e.p[i].role == E2E_WRITER) {
			e2e_check_writer(&e, &e.p[i]);
			continue;
		}
		e2e_check_victim(&e, &e.p[i]);
		victims++;
		open += e.p[i].writers;
		published += e.p[i].packets_in_trace;
	}
	e2e_check_clean(&e);
	ck_assert_uint_eq(e.ck.stats.producer_deaths, victims);
	ck_assert_uint_eq(e.ck.stats.trace_stats, 1);
	printf("e2e kill: %u victims killed -9 with %u packets open (all "
	       "counted lost, none in the trace) and slices open, %u packets "
	       "they published all there; %llu packets in all, none of the "
	       "others lost; checker clean but for the victims' open "
	       "slices\n", victims, open, published,
	       (unsigned long long)e.packets);
	e2e_cleanup(&e);
}
END_TEST

/* Runs build/tbtrace with @args; its exit status, its output in @out. */
static int e2e_tbtrace(struct e2e *e, const char **args, char *out,
		       size_t n)
{
	int status, reaped = 0;
	pid_t pid;

	snprintf(out, n, "%s/tbtrace.out", e->dir);
	pid = spawn_to("tbtrace", out, args);
	ck_assert_int_eq(e2e_reap(pid, &reaped, &status, E2E_HANG_MS), 0);
	ck_assert_msg(WIFEXITED(status), "tbtrace died: %#x", status);
	return WEXITSTATUS(status);
}

/* The number after @key in file @path's text, or -1. */
static long e2e_number_after(const char *path, const char *key)
{
	char *s = spawn_slurp(path, NULL), *at = s ? strstr(s, key) : NULL;
	long v = at ? strtol(at + strlen(key), NULL, 10) : -1;

	free(s);
	return v;
}

/*
 * @in without the service's instants (the records of producers' ends):
 * written to @path.
 */
static void e2e_strip_records(const char *in, const char *path)
{
	size_t len;
	uint8_t *t = (uint8_t *)spawn_slurp(in, &len);
	struct tb_pb_reader r;
	struct tb_trace_packet tp;
	const uint8_t *start;
	FILE *f = fopen(path, "wb");
	unsigned dropped = 0;

	ck_assert_ptr_nonnull(t);
	ck_assert_ptr_nonnull(f);
	tb_pb_reader_init(&r, t, len);
	for (start = t; tb_trace_next(&r, &tp) > 0; start = r.p) {
		const uint8_t *te;
		size_t n;
		uint64_t type;

		if (tp.trusted_seq_id == TB_TRACE_SERVICE_SEQ &&
		    tb__ck_msg(tp.data, tp.size, TB__CK_TP_TRACK_EVENT, &te,
			       &n) &&
		    tb__ck_uint(te, n, TB__CK_TE_TYPE, &type) && type == 3) {
			dropped++;
			continue;
		}
		ck_assert_uint_eq(fwrite(start, 1, (size_t)(r.p - start), f),
				  (size_t)(r.p - start));
	}
	ck_assert_uint_ge(dropped, 1);
	ck_assert_int_eq(fclose(f), 0);
	free(t);
}

/*
 * A producer killed -9 inside its slices: tbtrace stat says the trace is
 * lossy with every open slice explained by the death the service wrote
 * into it (status 3), and unexplained (status 1) once that record is cut
 * out.  While it lived, its ring was there to look at through the
 * descriptors both ends kept open: tbtrace ring /proc/PID/fd/N.
 */
START_TEST(test_e2e_death_in_the_trace_and_rings_in_proc)
{
	static const char *const spin[] = { "-d", "spin", NULL };
	char out[240], proc[64], stripped[240];
	const char *stat[] = { "stat", NULL, NULL };
	const char *ring[] = { "ring", proc, NULL };
	struct e2e_proc *v;
	struct e2e e;
	long fd;
	char *txt;

	e2e_init(&e, "death");
	e2e_start_service(&e);
	v = e2e_start(&e, E2E_VICTIM, 2, 30, 51, spin);
	e2e_wait_line(v, "ready");
	/* the producer's descriptor of its ring */
	fd = e2e_number_after(v->out, "ring_fd=");
	ck_assert_int_ge(fd, 0);
	snprintf(proc, sizeof(proc), "/proc/%d/fd/%ld", (int)v->pid, fd);
	ck_assert_int_eq(e2e_tbtrace(&e, ring, out, sizeof(out)), 0);
	txt = spawn_slurp(out, NULL);
	ck_assert_ptr_nonnull(strstr(txt, "x 1024 B chunks"));
	ck_assert_ptr_nonnull(strstr(txt, "futex-waits"));
	ck_assert_ptr_null(strstr(txt, "writers["));	/* all named */
	free(txt);
	/* the service's, as its -v output says */
	fd = e2e_number_after(e.svc_out, "ring_fd=");
	ck_assert_int_ge(fd, 0);
	snprintf(proc, sizeof(proc), "/proc/%d/fd/%ld", (int)e.svc, fd);
	ck_assert_int_eq(e2e_tbtrace(&e, ring, out, sizeof(out)), 0);
	e2e_kill(v);
	e2e_stop_service(&e, 0);
	stat[1] = e.trace;
	ck_assert_int_eq(e2e_tbtrace(&e, stat, out, sizeof(out)), 3);
	txt = spawn_slurp(out, NULL);
	ck_assert_msg(strstr(txt, "producers 1 rings recorded by the "
			     "service: 1 died") != NULL, "%s", txt);
	ck_assert_ptr_nonnull(strstr(txt, "check     lossy"));
	ck_assert_ptr_nonnull(strstr(txt, "slice-not-ended"));
	free(txt);
	/* without the record of its death, nothing explains them */
	snprintf(stripped, sizeof(stripped), "%s/stripped.pftrace", e.dir);
	e2e_strip_records(e.trace, stripped);
	stat[1] = stripped;
	ck_assert_int_eq(e2e_tbtrace(&e, stat, out, sizeof(out)), 1);
	txt = spawn_slurp(out, NULL);
	ck_assert_ptr_nonnull(strstr(txt, "violations nothing explains"));
	free(txt);
	unlink(out);
	unlink(stripped);
	e2e_cleanup(&e);
}
END_TEST

/*
 * Two producers scribble over their ring's header and state words while
 * two others write; a third comes after them.  Stopped by command.
 */
START_TEST(test_e2e_scribble)
{
	static const char *const steady[] = { "-s", "8:1500", "-i", "200",
					      NULL };
	static const char *const scribble[] = { "-x", "300", NULL };
	static const char *const after[] = { "-s", "8:1500", NULL };
	struct e2e_proc *late;
	struct e2e e;
	unsigned i, scribblers = 0;

	e2e_init(&e, "scribble");
	e2e_start_service(&e);
	for (i = 0; i < 2; i++)
		e2e_start(&e, E2E_WRITER, 2, 2000, 51 + i, steady);
	for (i = 0; i < 2; i++)
		e2e_start(&e, E2E_SCRIBBLER, 2, 300, 61 + i, scribble);
	for (i = 2; i < 4; i++)
		e2e_reap_producer(&e.p[i]);
	/* the service still serves a newcomer */
	late = e2e_start(&e, E2E_WRITER, 2, 500, 71, after);
	e2e_reap_producer(late);
	for (i = 0; i < 2; i++)
		e2e_reap_producer(&e.p[i]);
	e2e_stop_service(&e, 1);
	e2e_finish(&e, 0);
	for (i = 0; i < e.np; i++) {
		struct e2e_proc *p = &e.p[i];

		if (p->role == E2E_WRITER) {
			e2e_check_writer(&e, p);
			continue;
		}
		ck_assert_msg(WIFEXITED(p->status) && !WEXITSTATUS(p->status),
			      "scribbler %d: status %#x", (int)p->pid,
			      p->status);
		ck_assert(p->scribbled);
		ck_assert_msg(p->summarized, "scribbler %d: not in the "
			      "summary", (int)p->pid);
		ck_assert_str_eq(p->s_ring, "protocol-error");
		scribblers++;
	}
	/* whatever a scribbled ring let through, the others are clean */
	e2e_check_clean(&e);
	printf("e2e scribble: %u rings scribbled over, each stopped with a "
	       "protocol error; the service carried on; %llu packets, "
	       "%llu undecodable (from scribbled rings), the others' "
	       "complete and clean\n", scribblers,
	       (unsigned long long)e.packets,
	       (unsigned long long)e.undecodable);
	e2e_cleanup(&e);
}
END_TEST

/* ------------------------------------------------------------------------
 * The scratch directory: made and removed in the runner, so that it goes
 * even when a test fails (its forked child leaves with _exit()).
 */
static int e2e_rm(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	remove(path);
	return 0;
}

static void e2e_setup(void)
{
	snprintf(e2e_root, sizeof(e2e_root), "/tmp/tb_e2e.XXXXXX");
	if (!mkdtemp(e2e_root))
		e2e_root[0] = '\0';
}

static void e2e_teardown(void)
{
	if (e2e_root[0])
		nftw(e2e_root, e2e_rm, 8, FTW_DEPTH | FTW_PHYS);
}

static Suite *e2e_suite(void)
{
	Suite *s = suite_create("tb_e2e");
	TCase *tc = tcase_create("e2e");

	tcase_add_unchecked_fixture(tc, e2e_setup, e2e_teardown);
	tcase_set_timeout(tc, E2E_TIMEOUT_S);
	tcase_add_test(tc, test_e2e_producers);
	tcase_add_test(tc, test_e2e_kill_mid_packet);
	tcase_add_test(tc, test_e2e_death_in_the_trace_and_rings_in_proc);
	tcase_add_test(tc, test_e2e_scribble);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(e2e_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
