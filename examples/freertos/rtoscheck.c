/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rtoscheck.c - checks a trace of the FreeRTOS example against what the
 * firmware and its kernel said (host program; make freertos-e2e runs it).
 *
 *   rtoscheck [-c | -t] REPORT FILE.pftrace
 *
 * REPORT is the firmware's semihosting output: a line per task ("fr:
 * task name=N tid=T writer=W written=K failed=F runtime_ns=R", R the
 * kernel's own run-time counter from uxTaskGetSystemState(), on the
 * trace's clock) and the hooks' counts ("fr: BOARD hooks switches=S
 * ...").  The trace goes through tools/tbcheck.h (Perfetto's importer's
 * rules, the sched events replayed as trace_processor does), then:
 *   -c  complete (a stream): nothing lost; each task's CPU time in the
 *       trace (its sched slices that ended) within 1 % of the kernel's,
 *       the idle task's too; as many sched_switch as the hooks counted;
 *       each task's events ("seq" 0 .. written-1) all there, in order,
 *       on that task's own thread track; every blocked reason the
 *       scenario makes named (semaphore, queue, mutex, delay, notify);
 *       every interrupt's flow ended on a task; no spurious wakeup
 *   -t  tail (a RAM dump after a fault): only what the importer would
 *       do (the crash cut the recording short: a slice or a flow it
 *       left open is explained), and each task's events contiguous up
 *       to written-1, on its own track
 * Prints each task's two CPU times side by side.  Exit 0 when it all
 * holds, 1 if not, 2 when an input does not read.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../tools/tbcheck.h"
#include "trace_decode.h"

#define MAX_TASKS	16
#define MAX_IID		256
#define MAX_SEQS	32

struct rc_task {
	char name[32];
	int tid;
	unsigned writer;
	unsigned long long written, runtime;
	int has_runtime;
	/* found in the trace */
	unsigned long long next, count;
	uint64_t track;
	int seen, other_track;
	unsigned reasons[8];		/* by rc_reason_kind() */
};

struct rc_seq {				/* interned strings of a sequence */
	uint64_t id;
	char *ann[MAX_IID];		/* debug annotation names */
	char *ksym[MAX_IID];		/* kernel symbols */
};

static struct rc_task tasks[MAX_TASKS];
static struct rc_seq seqs[MAX_SEQS];
static int ntasks, nseqs, errors;
static unsigned long long hook_switches = ~0ull, counted_at;
static char mode = 'c';
static const struct tb_check *chk;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void fail(const char *fmt, ...)
{
	va_list ap;

	if (errors++ >= 20)
		return;
	fputs("rtoscheck: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

#define U(x)	((unsigned long long)(x))

/* ------------------------------------------------------------------------
 * The report.
 */
static int kv(const char *line, const char *key, unsigned long long *v)
{
	char pat[40];
	const char *p;

	snprintf(pat, sizeof(pat), " %s=", key);
	p = strstr(line, pat);
	if (!p)
		return 0;
	*v = strtoull(p + strlen(pat), NULL, 10);
	return 1;
}

static void report_line(const char *line)
{
	struct rc_task *t;
	unsigned long long v;
	const char *p;
	size_t n;

	if (strstr(line, " hooks ") && kv(line, "switches", &v))
		hook_switches = v;
	if (strstr(line, " hooks "))
		kv(line, "counted_at_ns", &counted_at);
	p = strstr(line, "fr: task name=");
	if (!p || ntasks == MAX_TASKS)
		return;
	t = &tasks[ntasks++];
	p += strlen("fr: task name=");
	n = strcspn(p, " ");
	if (n >= sizeof(t->name))
		n = sizeof(t->name) - 1;
	memcpy(t->name, p, n);
	t->name[n] = 0;
	if (kv(line, "tid", &v))
		t->tid = (int)v;
	if (kv(line, "writer", &v))
		t->writer = (unsigned)v;
	kv(line, "written", &t->written);
	t->has_runtime = kv(line, "runtime_ns", &t->runtime);
}

static int read_report(const char *path)
{
	char line[512];
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		report_line(line);
	fclose(f);
	return ntasks ? 0 : -1;
}

static struct rc_task *task_of_writer(unsigned w)
{
	int i;

	for (i = 0; i < ntasks; i++)
		if (tasks[i].writer == w && tasks[i].tid)
			return &tasks[i];
	return NULL;
}

static struct rc_task *task_of_tid(int tid)
{
	int i;

	for (i = 0; i < ntasks; i++)
		if (tasks[i].tid == tid)
			return &tasks[i];
	return NULL;
}

/* ------------------------------------------------------------------------
 * The trace, packet by packet: tagged events and blocked reasons.
 */
static struct rc_seq *seq_of(uint64_t id)
{
	int i;

	for (i = 0; i < nseqs; i++)
		if (seqs[i].id == id)
			return &seqs[i];
	if (nseqs == MAX_SEQS)
		return NULL;
	seqs[nseqs].id = id;
	return &seqs[nseqs++];
}

static void set_str(char **slot, const uint8_t *s, size_t n)
{
	free(*slot);
	*slot = malloc(n + 1);
	if (!*slot)
		exit(2);
	memcpy(*slot, s, n);
	(*slot)[n] = 0;
}

/* InternedData: debug_annotation_names (3), kernel_symbols (26). */
static void interned(struct rc_seq *s, const uint8_t *p, size_t n)
{
	struct pb_reader r, e;
	struct pb_field f, g;

	pb_init(&r, p, n);
	while (pb_next(&r, &f) > 0) {
		uint64_t iid = 0;
		const uint8_t *str = NULL;
		size_t len = 0;

		if (f.type != 2 || (f.number != 3 && f.number != 26))
			continue;
		pb_init(&e, f.data, f.size);
		while (pb_next(&e, &g) > 0) {
			if (g.number == 1 && g.type == 0)
				iid = g.value;
			else if ((g.number == 2) && g.type == 2)
				str = g.data, len = g.size;
		}
		if (str && iid && iid < MAX_IID)
			set_str(f.number == 3 ? &s->ann[iid] : &s->ksym[iid],
				str, len);
	}
}

/* The "seq" annotation of a TrackEvent, and its track. */
static int tagged_seq(const struct rc_seq *s, const uint8_t *p, size_t n,
		      uint64_t *seq, uint64_t *track)
{
	struct pb_reader r, a;
	struct pb_field f, g;
	int found = 0;

	pb_init(&r, p, n);
	while (pb_next(&r, &f) > 0) {
		const char *name = NULL;
		uint64_t v = 0;
		int has_v = 0;

		if (f.number == 11 && f.type == 0)
			*track = f.value;
		if (f.number != 4 || f.type != 2)
			continue;
		pb_init(&a, f.data, f.size);
		while (pb_next(&a, &g) > 0) {
			if (g.number == 1 && g.type == 0 && g.value < MAX_IID)
				name = s->ann[g.value];
			else if (g.number == 3 && g.type == 0)
				v = g.value, has_v = 1;
		}
		if (name && !strcmp(name, "seq") && has_v)
			*seq = v, found = 1;
	}
	return found;
}

static void tagged(struct rc_task *t, uint64_t seq, uint64_t track)
{
	if (!t->seen) {
		if (mode == 'c' && seq != 0)
			fail("%s: first seq %llu, not 0", t->name, U(seq));
	} else if (seq != t->next) {
		fail("%s: seq %llu where %llu was next", t->name, U(seq),
		     U(t->next));
	}
	if (t->seen && track != t->track && !t->other_track++)
		fail("%s: events on two tracks", t->name);
	t->seen = 1;
	t->track = track;
	t->next = seq + 1;
	t->count++;
}

/* Which blocked reason a kernel symbol names (the scenario's objects). */
static int rc_reason_kind(const char *s)
{
	static const char *const kinds[] = {
		"semaphore tick", "queue rounds", "mutex shared", "delay",
		"notify", NULL
	};
	int i;

	for (i = 0; s && kinds[i]; i++)
		if (!strcmp(s, kinds[i]))
			return i;
	return 7;
}

/* An FtraceEventBundle: the blocked reasons, by task. */
static void bundle(const struct rc_seq *s, const uint8_t *p, size_t n)
{
	struct pb_reader r, e, b;
	struct pb_field f, g, h;

	pb_init(&r, p, n);
	while (pb_next(&r, &f) > 0) {
		if (f.number != 2 || f.type != 2)
			continue;
		pb_init(&e, f.data, f.size);
		while (pb_next(&e, &g) > 0) {
			uint64_t pid = 0, iid = 0;
			struct rc_task *t;

			if (g.number != 18 || g.type != 2)
				continue;
			pb_init(&b, g.data, g.size);
			while (pb_next(&b, &h) > 0) {
				if (h.number == 1 && h.type == 0)
					pid = h.value;
				else if (h.number == 2 && h.type == 0)
					iid = h.value;
			}
			t = task_of_tid((int)pid);
			if (t && iid < MAX_IID)
				t->reasons[rc_reason_kind(s->ksym[iid])]++;
		}
	}
}

static void packet(void *ctx, const struct trace_packet *tp)
{
	struct pb_reader r;
	struct pb_field f;
	struct rc_seq *s = seq_of(tp->trusted_seq_id);
	const uint8_t *te = NULL;
	size_t te_n = 0;
	uint64_t seq = 0, track = 0;
	struct rc_task *t;

	(void)ctx;
	if (!s)
		return;
	pb_init(&r, tp->data, tp->size);
	while (pb_next(&r, &f) > 0) {
		if (f.number == 12 && f.type == 2)
			interned(s, f.data, f.size);
		else if (f.number == 11 && f.type == 2)
			te = f.data, te_n = f.size;
		else if (f.number == 1 && f.type == 2)
			bundle(s, f.data, f.size);
	}
	if (!te || !tagged_seq(s, te, te_n, &seq, &track))
		return;
	t = task_of_writer((unsigned)(tp->trusted_seq_id & 0xffff));
	if (!t)
		fail("tagged event on sequence %#llx, no task's",
		     U(tp->trusted_seq_id));
	else
		tagged(t, seq, track);
}

/* ------------------------------------------------------------------------
 * Verdicts.
 */

/* The tid of the thread track @uuid, or -1. */
static int track_tid(uint64_t uuid)
{
	uint32_t i;

	for (i = 0; i < chk->ntracks; i++)
		if (chk->tracks[i].uuid == uuid &&
		    chk->tracks[i].kind == TB_CHECK_TRACK_THREAD)
			return chk->tracks[i].tid;
	return -1;
}

/*
 * The task's CPU time, trace against kernel, within 1 %: the kernel's
 * count of the task that asked for it runs up to the moment it asked
 * (counted_at), so that task's open slice counts up to there.
 */
static void cpu_time(const struct rc_task *t)
{
	const struct tb_check_thread *th = tb_check_thread_find(chk, t->tid);
	unsigned long long tr = th ? th->cpu_ns : 0;

	if (th && th->running && counted_at > th->since)
		tr += counted_at - th->since;
	double d = t->runtime ? 100.0 * ((double)tr - (double)t->runtime) /
				(double)t->runtime : 0.0;

	printf("rtoscheck: %-8s tid %2d: cpu %12llu ns in the trace, %12llu "
	       "in the kernel's count (%+.3f %%)\n", t->name, t->tid, tr,
	       t->runtime, d);
	if (!t->runtime || d > 1.0 || d < -1.0)
		fail("%s: CPU time %llu ns in the trace, %llu in the kernel's "
		     "count", t->name, tr, t->runtime);
}

static void events(const struct rc_task *t)
{
	if (!t->writer || !t->tid)
		return;
	if (!t->seen) {
		if (t->written)
			fail("%s: none of its %llu events in the trace",
			     t->name, t->written);
		return;
	}
	printf("rtoscheck: %-8s tid %2d: %llu events, seq ..%llu of %llu "
	       "written, on track %#llx\n", t->name, t->tid, t->count,
	       t->next - 1, t->written, U(t->track));
	if (t->next != t->written)
		fail("%s: last seq %llu, written %llu", t->name, t->next - 1,
		     t->written);
	if (mode == 'c' && t->count != t->written)
		fail("%s: %llu events, %llu written", t->name, t->count,
		     t->written);
	if (track_tid(t->track) != t->tid)
		fail("%s: its events are on track %#llx, not its thread's",
		     t->name, U(t->track));
}

static void complete(void)
{
	static const char *const why[] = { "ctrl", "worker", "", "logger",
					   "drain" };
	const struct tb_check_sched *k = &chk->sched;
	unsigned i, kinds = 0;
	int j;

	if (k->switches != hook_switches)
		fail("%llu sched_switch in the trace, the hooks counted %llu",
		     U(k->switches), hook_switches);
	for (j = 0; j < ntasks; j++) {
		cpu_time(&tasks[j]);
		for (i = 0; i < 5; i++)
			if (tasks[j].reasons[i])
				kinds |= 1u << i;
		if (tb_check_thread_find(chk, tasks[j].tid) &&
		    tb_check_thread_find(chk, tasks[j].tid)->spurious)
			fail("%s: spurious wakeups", tasks[j].name);
	}
	for (i = 0; i < 5; i++)
		if (!(kinds >> i & 1))
			fail("no task blocked on reason %u (%s's)", i, why[i]);
	if (!chk->stats.flows_begun ||
	    chk->stats.flows_ended != chk->stats.flows_begun)
		fail("interrupt flows: %llu begun, %llu ended",
		     U(chk->stats.flows_begun), U(chk->stats.flows_ended));
	if (chk->stats.lossy_packets)
		fail("%llu packets say data was lost",
		     U(chk->stats.lossy_packets));
}

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) || !(buf = malloc((size_t)n + 1)) ||
	    fread(buf, 1, (size_t)n, f) != (size_t)n) {
		if (f)
			fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
}

int main(int argc, char **argv)
{
	static struct tb_check c;
	uint8_t *buf;
	size_t len;
	int i = 1, j;

	if (argc == 4 && argv[1][0] == '-' && strchr("ct", argv[1][1]))
		mode = argv[i++][1];
	if (argc - i != 2) {
		fprintf(stderr, "usage: rtoscheck [-c|-t] REPORT FILE.pftrace\n");
		return 2;
	}
	if (read_report(argv[i]) || !(buf = read_file(argv[i + 1], &len))) {
		fprintf(stderr, "rtoscheck: cannot read %s or %s\n", argv[i],
			argv[i + 1]);
		return 2;
	}
	if (tb_check_init(&c, NULL, NULL, 0))
		return 2;
	c.tail_lost = mode == 't';	/* a crash: nothing after it */
	if (tb_check_trace(&c, buf, len) ||
	    trace_for_each(buf, len, packet, NULL) < 0) {
		fprintf(stderr, "rtoscheck: %s is not a trace\n", argv[i + 1]);
		return 2;
	}
	chk = &c;
	if (!tb_check_clean(&c))
		fail("the importer's rules are broken (tbtrace stat says which)");
	for (j = 0; j < ntasks; j++)
		events(&tasks[j]);
	if (mode == 'c')
		complete();
	printf("rtoscheck: %s: %llu switches, %llu interrupt flows: %s\n",
	       argv[i + 1], U(c.sched.switches), U(c.stats.flows_begun),
	       errors ? "FAILED" : "ok");
	tb_check_destroy(&c);
	free(buf);
	return errors ? 1 : 0;
}
