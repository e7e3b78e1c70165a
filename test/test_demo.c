/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_demo.c - the demo under every option set docs/demo.md shows.
 *
 * Each test runs build/demo (found in $TB_BUILD_DIR, default "build";
 * $TB_EXEC_WRAP, as in test_e2e.c, goes in front of it) for one second
 * with one option set, and asserts two things:
 *   - the demo's own verdict: it exits 0 (every event it was told was
 *     written is in the trace or counted lost, per writer in order, every
 *     gap flagged, the importer's rules broken only where a loss flag
 *     explains it);
 *   - the trace checker's, run here on the file the demo wrote, apart from
 *     the demo's: no rule of Perfetto's importer broken that no loss flag
 *     explains, and, explained or not, not one event the importer takes
 *     on a track no descriptor names or with an iid that resolves to
 *     nothing.  (Where the buffer overwrote a sequence's fresh state, the
 *     importer skips the events after it until the next, flagged: those
 *     are counted as explained needs-incremental-state, and looked up in
 *     nothing.)
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/tbcheck.h"

struct option_set {
	const char *name;
	const char *args;	/* after -d 1 -o FILE */
	bool discard;		/* the buffer refuses the run's end: the
				   trace's TraceStats must say so */
	bool flows_lost;	/* so many writes refused that flows lose
				   their ends: the checker must see it */
	bool lossy;		/* packets must carry loss flags */
};

/* The option sets of docs/demo.md, and the corners between them. */
static const struct option_set sets[] = {
	{ "default", "", false, false, false },
	{ "stall", "-s", false, false, false },
	{ "squeeze", "-c 256 -n 4 -b 256k -l 0", false, false, true },
	{ "tiny_buffer", "-b 64k", false, false, false },
	{ "large_buffer_once", "-b 64m -l 0", false, false, false },
	{ "flat_out_8", "-r 0 -w 8", false, false, false },
	{ "flat_out_8_stall", "-r 0 -w 8 -s", false, false, false },
	{ "discard", "-p discard -b 256k", true, false, false },
	{ "writers_outnumber_chunks", "-c 256 -n 2 -w 16 -r 0", false, true,
	  true },
};

#define NSETS	(sizeof(sets) / sizeof(sets[0]))

static char out_path[256];
static char log_path[256];

/* Runs the demo with @set; returns its exit status, -1 if it died. */
static int run_demo(const struct option_set *set)
{
	const char *dir = getenv("TB_BUILD_DIR");
	const char *wrap = getenv("TB_EXEC_WRAP");
	const char *tmp = getenv("TMPDIR");
	char cmd[1024];
	int status;

	snprintf(out_path, sizeof(out_path), "%s/tb_demo_%s_%d.pftrace",
		 tmp ? tmp : "/tmp", set->name, (int)getpid());
	snprintf(log_path, sizeof(log_path), "%s/tb_demo_%s_%d.log",
		 tmp ? tmp : "/tmp", set->name, (int)getpid());
	snprintf(cmd, sizeof(cmd), "%s %s/demo -d 1 -o %s %s >%s 2>&1",
		 wrap ? wrap : "", dir ? dir : "build", out_path, set->args,
		 log_path);
	status = system(cmd);
	if (status == -1 || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static void show_log(void)
{
	char line[512];
	FILE *f = fopen(log_path, "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		fputs(line, stderr);
	fclose(f);
}

/* Whether the demo printed @s. */
static bool log_has(const char *s)
{
	char line[512];
	bool found = false;
	FILE *f = fopen(log_path, "r");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, s) != NULL;
	fclose(f);
	return found;
}

/*
 * The line that contains @s into @l1, and the one after it into @l2 (when
 * not NULL); false when there is none.
 */
static bool log_lines(const char *s, char *l1, char *l2, size_t n)
{
	bool found = false;
	FILE *f = fopen(log_path, "r");

	if (!f)
		return false;
	while (!found && fgets(l1, (int)n, f))
		found = strstr(l1, s) != NULL;
	if (found && l2 && !fgets(l2, (int)n, f))
		found = false;
	fclose(f);
	return found;
}

static bool near(double a, double b)
{
	return a - b < 0.006 && b - a < 0.006;
}

/*
 * The summary says what each share is of: the tagged events in the trace
 * of those the ring took, and the share of the tries the ring refused,
 * the same counts as its "lost in the ring" line.
 */
static void check_shares(void)
{
	unsigned long long in, took, tried, lost, tried2;
	char l1[512], l2[512];
	double share, refused;

	ck_assert(log_lines("  lost        in the ring: ", l1, NULL,
			    sizeof(l1)));
	ck_assert_int_eq(sscanf(l1, " lost in the ring: %llu of %llu tagged "
				"events tried", &lost, &tried2), 2);
	ck_assert(log_lines("  trace       ", l1, l2, sizeof(l1)));
	ck_assert_msg(sscanf(l1, " trace %*u packets; %llu of the %llu "
			     "tagged events", &in, &took) == 2 &&
		      strstr(l1, "tagged events the ring took"),
		      "trace line: %s", l1);
	ck_assert_msg(sscanf(l2, " (%lf%%; it refused %lf%% of the %llu "
			     "tried", &share, &refused, &tried) == 3,
		      "trace line: %s%s", l1, l2);
	ck_assert_uint_eq(tried, tried2);
	ck_assert_uint_eq(took, tried - lost);
	ck_assert(took > 0);
	ck_assert(near(share, 100.0 * (double)in / (double)took));
	ck_assert(near(refused, 100.0 * (double)lost / (double)tried));
}

/* tbcheck over the demo's file, into @c. */
static void check_file(struct tb_check *c, bool tail_lost)
{
	struct stat st;
	void *map;
	int fd = open(out_path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_int_gt(st.st_size, 0);
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	ck_assert(map != MAP_FAILED);
	tb_check_init(c, NULL, NULL, 0);
	c->tail_lost = tail_lost;
	ck_assert_int_eq(tb_check_trace(c, map, (size_t)st.st_size), TB_OK);
	munmap(map, (size_t)st.st_size);
}

static const int resolve_rules[] = {
	TB_CK_TRACK_UNKNOWN, TB_CK_IID_NAME, TB_CK_IID_CATEGORY,
	TB_CK_IID_ANNOTATION,
};

START_TEST(test_demo_option_set)
{
	const struct option_set *set = &sets[_i];
	struct tb_check c;
	unsigned k;
	int ret = run_demo(set);

	if (ret != 0 || !log_has("verify      ok"))
		show_log();
	ck_assert_msg(ret == 0, "demo %s exited %d", set->args, ret);
	ck_assert(log_has("verify      ok"));
	check_shares();
	/* the trace alone says what was lost: never tail_lost */
	check_file(&c, false);
	ck_assert_uint_eq(c.stats.trace_stats, 1);
	ck_assert_uint_eq(c.stats.ts_buffers, 1);
	ck_assert(!set->discard || c.stats.ts_chunks_discarded > 0);
	ck_assert_uint_eq(c.stats.producer_ends, 1);	/* the ring's record */
	/* arrows lost with the events the ring refused are counted (and
	 * explained), and the demo says so instead of "every rule holds" */
	ck_assert(!set->flows_lost ||
		  c.rule[TB_CK_FLOW_END_WITHOUT_BEGIN].explained +
		  c.rule[TB_CK_FLOW_NOT_ENDED].explained > 0);
	ck_assert(!set->flows_lost ||
		  !log_has("every rule of Perfetto's importer holds"));
	for (k = 0; k < TB_CK_MAX; k++)
		ck_assert_msg(!c.rule[k].count, "%s: %llu unexplained",
			      tb_check_rule_name((int)k),
			      (unsigned long long)c.rule[k].count);
	ck_assert(tb_check_clean(&c));
	/*
	 * Events the importer takes resolve: a skipped packet (its state
	 * overwritten or lost) is not taken, so nothing it names is looked
	 * up; whatever is taken names a described track and known iids.
	 */
	for (k = 0; k < sizeof(resolve_rules) / sizeof(resolve_rules[0]); k++)
		ck_assert_msg(!c.rule[resolve_rules[k]].explained,
			      "%s: %llu explained by loss",
			      tb_check_rule_name(resolve_rules[k]),
			      (unsigned long long)
			      c.rule[resolve_rules[k]].explained);
	ck_assert_uint_gt(c.stats.slice_begins, 0);
	ck_assert_uint_gt(c.stats.counters, 0);
	/*
	 * Every trace that holds a loss shows it in Perfetto's UI: a stat of
	 * severity data_loss above 0, as the importer computes them from
	 * the TraceStats packet (the squeeze set: a loss flag on most
	 * sequences' first packets, others later).
	 */
	ck_assert_msg(!c.stats.lossy_packets || tb_check_ui_loss(&c, NULL),
		      "%llu packets flag a loss; the UI shows none",
		      (unsigned long long)c.stats.lossy_packets);
	ck_assert(!set->discard || tb_check_ui_loss(&c, NULL));
	ck_assert(!set->lossy || c.stats.lossy_packets);
	tb_check_destroy(&c);
	unlink(out_path);
	unlink(log_path);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("demo");
	TCase *t = tcase_create("option_sets");

	tcase_set_timeout(t, 120);
	tcase_add_loop_test(t, test_demo_option_set, 0, (int)NSETS);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
