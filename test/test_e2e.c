/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_e2e.c - producers in their own processes, the service, the trace
 * file (Linux).
 *
 * Runs the examples as a user would: build/tb_service listening on a unix
 * socket, build/tb_producer processes writing through rings the service
 * hands them in memfds (the binaries are found in $TB_BUILD_DIR, default
 * "build").  Each producer reports on its stdout what it wrote; the
 * service prints a summary line per producer when it stops.  The trace
 * file is decoded here with trace_decode.h, independently of the
 * service's encoder, and every packet checks itself: a producer's packet
 * is a TracePacket whose for_testing (900) TestEvent carries str (the
 * filler), seq_value (2) and counter (3) = writer << 48 | filler length
 * << 32 | FNV-1a of the filler.
 *
 *   - producers: several producer processes write; the trace holds every
 *     packet each reported written, once, in order per writer, with the
 *     producer's pid and uid as trusted fields and one
 *     trusted_packet_sequence_id per {producer, writer}, distinct.
 *   - kill: producers killed -9 with a packet open in every writer (some
 *     of those packets span chunks), two per round, three rounds, while
 *     other producers write: the service carries on, everything a victim
 *     published arrives, its open packets never do and the service counts
 *     them (open_at_exit), and the others lose nothing.
 *   - scribble: producers write random words over their ring's control
 *     header and state words: the service stops those rings with a
 *     protocol error, keeps running (a producer that comes later is
 *     served), stops on command, and the other producers' traces are
 *     complete.
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

#include "trace_decode.h"

#define E2E_PROCS	16
#define E2E_WRITERS	8
#define E2E_TIMEOUT_S	30	/* per test, times CK_TIMEOUT_MULTIPLIER */

enum e2e_role { E2E_WRITER, E2E_VICTIM, E2E_SCRIBBLER };

/* One writer of one producer, as the trace shows it. */
struct e2e_stream {
	uint8_t *seen;		/* by seq */
	uint32_t nseen;		/* size of seen */
	int64_t last;		/* highest seq so far, -1 */
	uint32_t count;
	uint32_t out_of_order;	/* seq not above the previous one */
	uint32_t lossy;		/* packets with previous_packet_dropped */
	uint64_t seq_id;	/* trusted_packet_sequence_id */
};

struct e2e_proc {
	enum e2e_role role;
	pid_t pid;
	int reaped;
	int status;
	char out[200];		/* its stdout and stderr */
	unsigned writers;
	uint32_t packets;	/* per writer */
	/* its report */
	int hello, ready, done, scribbled;
	unsigned id;
	unsigned long long addr, svc_addr;
	int reported[E2E_WRITERS + 1];
	uint32_t ok[E2E_WRITERS + 1];
	uint32_t failed[E2E_WRITERS + 1];
	uint32_t retries[E2E_WRITERS + 1];
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
	uint64_t undecodable;	/* not a valid TracePacket */
	uint64_t foreign;	/* a pid no producer of ours had */
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

static const char *e2e_bin_dir(void)
{
	const char *d = getenv("TB_BUILD_DIR");

	return d && *d ? d : "build";
}

/* The whole file, NUL-terminated (NULL if it cannot be read). */
static char *e2e_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0, got;

	if (!f)
		return NULL;
	do {
		if (cap - n < 65536) {
			cap = cap ? 2 * cap : 65536;
			buf = realloc(buf, cap + 1);
			ck_assert_ptr_nonnull(buf);
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
	} while (got);
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

/* ------------------------------------------------------------------------
 * Processes.
 */

/*
 * Splits $TB_EXEC_WRAP into at most @max words of @argv, in @buf; returns
 * how many (0 when it is unset or empty).
 */
static unsigned e2e_wrap(char *buf, size_t size, const char **argv,
			 unsigned max)
{
	const char *w = getenv("TB_EXEC_WRAP");
	unsigned n = 0;
	char *p;

	if (!w || !*w)
		return 0;
	ck_assert_uint_lt(strlen(w), size);
	strcpy(buf, w);
	for (p = strtok(buf, " "); p; p = strtok(NULL, " ")) {
		ck_assert_uint_lt(n, max);
		argv[n++] = p;
	}
	return n;
}

/* Starts build/@name with @args (NULL-terminated), output to @out. */
static pid_t e2e_spawn(const char *name, const char *out, const char **args)
{
	char path[256], wrap[256];
	const char *argv[40];
	unsigned n, k;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/%s", e2e_bin_dir(), name);
	ck_assert_msg(access(path, X_OK) == 0, "%s: %s (build it first: "
		      "make %s)", path, strerror(errno), path);
	n = e2e_wrap(wrap, sizeof(wrap), argv, 8);
	argv[n] = path;
	for (k = 0; args[k]; k++) {
		ck_assert_uint_lt(n + k + 2, sizeof(argv) / sizeof(argv[0]));
		argv[n + k + 1] = args[k];
	}
	argv[n + k + 1] = NULL;
	fflush(stdout);
	pid = fork();
	ck_assert_int_ne(pid, -1);
	if (!pid) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		/* dies with the test, whatever happens to it */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		close(fd);
		if (n)	/* the wrapper is looked up in PATH */
			execvp(argv[0], (char *const *)argv);
		else
			execv(path, (char *const *)argv);
		_exit(127);
	}
	return pid;
}

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
	char *s = e2e_slurp(path, NULL);

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

	e->svc = e2e_spawn("tb_service", e->svc_out, args);
}

/*
 * Starts a producer: @writers writers, @packets each, then whatever
 * @extra (NULL-terminated) asks for.
 */
static struct e2e_proc *e2e_start(struct e2e *e, enum e2e_role role,
				  unsigned writers, uint32_t packets,
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
	p->packets = packets;
	snprintf(out, sizeof(out), "%s/producer%u.out", e->dir, e->np);
	memcpy(p->out, out, sizeof(p->out));
	snprintf(w, sizeof(w), "%u", writers);
	snprintf(n, sizeof(n), "%u", packets);
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
	p->pid = e2e_spawn("tb_producer", p->out, args);
	e->np++;
	return p;
}

/* Waits for a line in @p's output (a victim's "ready"). */
static void e2e_wait_line(struct e2e_proc *p, const char *line)
{
	uint64_t end = e2e_ms() + 15000ull * e2e_mult();
	size_t ll = strlen(line);

	for (;;) {
		char *s = e2e_slurp(p->out, NULL), *at;
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
	if (e2e_reap(p->pid, &p->reaped, &p->status, 20000)) {
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
		pid = e2e_spawn("tb_producer", out, args);
		ck_assert_int_eq(e2e_reap(pid, &reaped, &status, 10000), 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			e2e_dump(out);
			ck_abort_msg("the stop command failed: %#x", status);
		}
	} else {
		ck_assert_int_eq(kill(e->svc, SIGTERM), 0);
	}
	if (e2e_reap(e->svc, &e->svc_reaped, &e->svc_status, 10000)) {
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
	char *s = e2e_slurp(p->out, NULL), *line, *save = NULL;
	unsigned w, seq, a, b, c;
	int large;

	ck_assert_ptr_nonnull(s);
	for (w = 1; w <= p->writers; w++) {
		p->fail_seq[w] = calloc(p->packets + 1, 1);
		ck_assert_ptr_nonnull(p->fail_seq[w]);
	}
	for (line = strtok_r(s, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "producer pid=%*d id=%u addr=%llx "
			   "service_addr=%llx", &p->id, &p->addr,
			   &p->svc_addr) == 3) {
			p->hello = 1;
		} else if (sscanf(line, "writer %u ok=%u failed=%u retries=%u",
				  &w, &a, &b, &c) == 4 && w &&
			   w <= p->writers) {
			p->reported[w] = 1;
			p->ok[w] = a;
			p->failed[w] = b;
			p->retries[w] = c;
		} else if (sscanf(line, "fail %u %u", &w, &seq) == 2 && w &&
			   w <= p->writers && seq < p->packets) {
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
	char *s = e2e_slurp(e->svc_out, NULL), *line, *save = NULL, *at;
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
 * The trace.
 */
static uint32_t e2e_fnv1a(const uint8_t *p, size_t n)
{
	uint32_t h = 0x811c9dc5u;

	while (n--)
		h = (h ^ *p++) * 0x01000193u;
	return h;
}

/* Finds and checks the TestEvent: 0 with writer and seq, or -1. */
static int e2e_test_event(const struct trace_packet *tp, unsigned *writer,
			  uint32_t *seq)
{
	struct pb_reader r, in;
	struct pb_field f;
	const uint8_t *str = NULL;
	size_t str_len = 0;
	uint64_t counter = 0;
	int has_seq = 0, has_counter = 0, found = 0;

	pb_init(&r, tp->data, tp->size);
	while (pb_next(&r, &f) > 0) {
		if (f.number != 900 || f.type != 2)
			continue;
		found++;
		pb_init(&in, f.data, f.size);
		while (pb_next(&in, &f) > 0) {
			if (f.number == 1 && f.type == 2) {
				str = f.data;
				str_len = f.size;
			} else if (f.number == 2 && f.type == 0) {
				*seq = (uint32_t)f.value;
				has_seq = 1;
			} else if (f.number == 3 && f.type == 0) {
				counter = f.value;
				has_counter = 1;
			}
		}
		if (in.bad)
			return -1;
	}
	if (found != 1 || !str || !has_seq || !has_counter ||
	    (counter >> 32 & 0xffff) != str_len ||
	    (uint32_t)counter != e2e_fnv1a(str, str_len))
		return -1;
	*writer = (unsigned)(counter >> 48);
	return 0;
}

static void e2e_packet(struct e2e *e, const struct trace_packet *tp)
{
	struct e2e_proc *p = tp->has_pid ? e2e_by_pid(e, (long)tp->trusted_pid)
					 : NULL;
	struct e2e_stream *st;
	unsigned w = 0;
	uint32_t seq = 0;

	e->packets++;
	if (!p) {
		e->foreign++;
		return;
	}
	p->packets_in_trace++;
	if (!tp->has_uid || tp->trusted_uid != getuid())
		p->bad_uid++;
	if (!tp->has_seq_id || e2e_test_event(tp, &w, &seq) || !w ||
	    w > p->writers) {
		p->bad++;
		return;
	}
	st = &p->st[w];
	if (!st->seen) {
		st->nseen = p->packets + 1;
		st->seen = calloc(st->nseen, 1);
		ck_assert_ptr_nonnull(st->seen);
		st->last = -1;
		st->seq_id = tp->trusted_seq_id;
	}
	if (tp->trusted_seq_id != st->seq_id || seq >= st->nseen) {
		p->bad++;
		return;
	}
	if ((int64_t)seq <= st->last)
		st->out_of_order++;
	else
		st->last = seq;
	st->seen[seq] = 1;
	st->count++;
	if (tp->dropped)
		st->lossy++;
}

/* Decodes the trace into the producers' streams. */
static void e2e_read_trace(struct e2e *e)
{
	size_t len;
	uint8_t *t = (uint8_t *)e2e_slurp(e->trace, &len);
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
	free(t);
	/* one sequence id per {producer, writer}, never shared */
	for (i = 0; i < e->np; i++)
		for (j = 1; j <= e->p[i].writers; j++)
			for (k = i; e->p[i].st[j].seen && k < e->np; k++)
				for (l = k == i ? j + 1 : 1;
				     l <= e->p[k].writers; l++)
					ck_assert_msg(!e->p[k].st[l].seen ||
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
 * trace holds exactly the packets it reported written, in order, and the
 * service's summary agrees.
 */
static void e2e_check_writes(struct e2e_proc *p)
{
	unsigned w;
	uint32_t seq, total = 0;

	ck_assert_msg(p->bad == 0 && p->bad_uid == 0,
		      "pid %d: %u packets do not check out, %u bad uids",
		      (int)p->pid, p->bad, p->bad_uid);
	for (w = 1; w <= p->writers; w++) {
		struct e2e_stream *st = &p->st[w];

		ck_assert_msg(p->reported[w], "pid %d writer %u: no report",
			      (int)p->pid, w);
		ck_assert_uint_eq(p->ok[w] + p->failed[w], p->packets);
		ck_assert_msg(st->seen || !p->ok[w],
			      "pid %d writer %u: nothing in the trace",
			      (int)p->pid, w);
		ck_assert_msg(st->out_of_order == 0,
			      "pid %d writer %u: %u packets out of order",
			      (int)p->pid, w, st->out_of_order);
		for (seq = 0; seq < p->packets; seq++)
			ck_assert_msg(p->fail_seq[w][seq] || st->seen[seq],
				      "pid %d writer %u: packet %u written "
				      "but not in the trace", (int)p->pid, w,
				      seq);
		ck_assert_msg(st->count == p->ok[w],
			      "pid %d writer %u: %u in the trace, %u "
			      "written", (int)p->pid, w, st->count,
			      p->ok[w]);
		/* loss is only ever reported after a lost attempt */
		ck_assert_msg(p->retries[w] || p->failed[w] || !st->lossy,
			      "pid %d writer %u: %u packets with loss bits "
			      "and no loss", (int)p->pid, w, st->lossy);
		if (p->role == E2E_VICTIM && p->open[w])
			ck_assert_msg(!st->seen[p->open_seq[w]],
				      "pid %d writer %u: the open packet %u "
				      "arrived", (int)p->pid, w,
				      p->open_seq[w]);
		total += st->count;
	}
	ck_assert_msg(p->summarized, "pid %d: not in the summary",
		      (int)p->pid);
	ck_assert_uint_eq(p->s_packets, total);
	ck_assert_str_eq(p->s_ring, "ok");
}

static void e2e_check_writer(struct e2e_proc *p)
{
	ck_assert_msg(WIFEXITED(p->status) && !WEXITSTATUS(p->status),
		      "producer %d: status %#x", (int)p->pid, p->status);
	ck_assert_msg(p->done, "producer %d: never said done", (int)p->pid);
	e2e_check_writes(p);
	ck_assert_str_eq(p->s_exit, "clean");
	ck_assert_str_eq(p->s_open, "0");
}

static void e2e_check_victim(struct e2e_proc *p)
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
	e2e_check_writes(p);
	/* the service saw it die, and counted its open packets */
	ck_assert_str_eq(p->s_exit, "died");
	snprintf(want, sizeof(want), "%u", open);
	ck_assert_str_eq(p->s_open, want);
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
	snprintf(path, sizeof(path), "%s/command.out", e->dir);
	unlink(path);
	unlink(e->svc_out);
	unlink(e->trace);
	unlink(e->sock);
	rmdir(e->dir);
}

static void e2e_finish(struct e2e *e)
{
	unsigned i;

	for (i = 0; i < e->np; i++)
		e2e_parse_report(&e->p[i]);
	e2e_parse_summary(e);
	e2e_read_trace(e);
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
	unsigned i;

	e2e_init(&e, "producers");
	e2e_start_service(&e);
	for (i = 0; i < 4; i++)
		e2e_start(&e, E2E_WRITER, 3, 1000, 11 + i, sizes);
	for (i = 0; i < e.np; i++)
		e2e_reap_producer(&e.p[i]);
	e2e_stop_service(&e, 0);
	e2e_finish(&e);
	ck_assert_msg(e.undecodable == 0, "%llu undecodable packets",
		      (unsigned long long)e.undecodable);
	for (i = 0; i < e.np; i++)
		e2e_check_writer(&e.p[i]);
	ck_assert_uint_eq(e.packets, 4 * 3 * 1000);
	printf("e2e producers: %u processes x 3 writers: %llu packets, "
	       "%llu bytes of trace, all in order\n", e.np,
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
	e2e_finish(&e);
	ck_assert_msg(e.undecodable == 0, "%llu undecodable packets",
		      (unsigned long long)e.undecodable);
	for (i = 0; i < e.np; i++) {
		if (e.p[i].role == E2E_WRITER) {
			e2e_check_writer(&e.p[i]);
			continue;
		}
		e2e_check_victim(&e.p[i]);
		victims++;
		open += e.p[i].writers;
		published += e.p[i].packets_in_trace;
	}
	printf("e2e kill: %u victims killed -9 with %u packets open (all "
	       "counted lost, none in the trace), %u packets they published "
	       "all there; %llu packets in all, none of the others lost\n",
	       victims, open, published, (unsigned long long)e.packets);
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
	e2e_finish(&e);
	for (i = 0; i < e.np; i++) {
		struct e2e_proc *p = &e.p[i];

		if (p->role == E2E_WRITER) {
			e2e_check_writer(p);
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
	printf("e2e scribble: %u rings scribbled over, each stopped with a "
	       "protocol error; the service carried on; %llu packets, "
	       "%llu undecodable (from scribbled rings), the others' "
	       "complete\n", scribblers, (unsigned long long)e.packets,
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
