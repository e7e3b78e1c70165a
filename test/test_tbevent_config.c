/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_tbevent_config.c - two translation units built with different
 * TB_EV_* table sizes (this one the defaults, tbevent_config_unit.c
 * smaller ones) link without a word, since every function of tbevent.h
 * is static inline; what must not happen is one unit reading or writing
 * the other's writer with its own layout.  Here (GNU C, hosted ELF) the
 * program is refused as a whole: no unit sets up a writer (TB_ECONFIG),
 * so none writes one allocated at the other unit's size.  Without that
 * check (the tests clear the word the units share, as a toolchain that
 * cannot see the program would): a writer set up in one unit is refused
 * by every call of the other with TB_ECONFIG, nothing is written, and
 * each unit's own writers work.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tbevent.h"
#include "tbevent_config_unit.h"

#define CS	4096u
#define NCH	8u

struct fix {
	void *mem;
	struct tb_ring r;
	struct tb_writer w;
	uint8_t scratch[CS];
	struct tb_ev_writer ew;		/* this unit's layout */
	void *other;			/* storage for the other unit's */
};

static struct fix f;

static void setup(void)
{
	size_t len = tb_ring_size(CS, NCH);

	ck_assert_int_eq(posix_memalign(&f.mem, 4096, len), 0);
	ck_assert_int_eq(tb_ring_init(&f.r, f.mem, len, CS, NCH), TB_OK);
	ck_assert_int_eq(tb_writer_init(&f.w, &f.r, 1, 0, TB_DROP,
					f.scratch), TB_OK);
	/* big enough for either layout: the test is about reading it */
	f.other = calloc(1, sizeof(struct tb_ev_writer));
	ck_assert_ptr_nonnull(f.other);
}

static void teardown(void)
{
	free(f.other);
	free(f.mem);
}

/* Whether the writer holds a chunk: not before anything was written. */
static unsigned written(void)
{
	return f.w.own;
}

/* As where the units cannot be seen: each call checks on its own. */
static void unseen(void)
{
#if TB__EV_UNIT_CHECK
	tb__ev_units = 0;
#endif
}

START_TEST(test_a_mixed_program_sets_up_no_writer)
{
	size_t small = unit_writer_size(), i;
	uint8_t *p;

	ck_assert_uint_lt(small, sizeof(struct tb_ev_writer));
	if (!TB__EV_UNIT_CHECK)
		return;
	ck_assert_uint_eq(tb__ev_units, 1);
	/* allocated at the other unit's (smaller) size, a guard after it */
	p = (uint8_t *)malloc(small + 4096);
	ck_assert_ptr_nonnull(p);
	memset(p, 0xa5, small + 4096);
	ck_assert_int_eq(tb_ev_writer_init((struct tb_ev_writer *)(void *)p,
					   &f.w, NULL, NULL, 0), TB_ECONFIG);
	for (i = 0; i < small + 4096; i++)
		ck_assert_uint_eq(p[i], 0xa5);
	free(p);
	ck_assert_int_eq(tb_ev_writer_init(&f.ew, &f.w, NULL, NULL, 0),
			 TB_ECONFIG);
	ck_assert_int_eq(unit_init(f.other, &f.w), TB_ECONFIG);
	ck_assert_uint_eq(written(), 0);
}
END_TEST

START_TEST(test_ours_refused_by_the_other_unit)
{
	struct tb_track t;

	unseen();
	tb_track_custom(&t, 42, NULL, "t");
	ck_assert_int_eq(tb_ev_writer_init(&f.ew, &f.w, NULL, NULL, 0),
			 TB_OK);
	ck_assert_int_eq(unit_instant(&f.ew), TB_ECONFIG);
	ck_assert_int_eq(unit_add_track(&f.ew, &t), TB_ECONFIG);
	ck_assert_int_eq(unit_finish(&f.ew), TB_ECONFIG);
	ck_assert_uint_eq(written(), 0);
	ck_assert_uint_eq(f.ew.stats.events, 0);
	ck_assert_uint_eq(f.ew.stats.not_written, 0);
	ck_assert_ptr_nonnull(strstr(tb_strerror(TB_ECONFIG), "TB_EV_"));
	/* still ours: this unit writes with it */
	ck_assert_int_eq(tb_ev_instant(&f.ew, NULL, "here", NULL, 0), TB_OK);
	ck_assert_uint_eq(f.ew.stats.events, 1);
}
END_TEST

START_TEST(test_theirs_refused_here)
{
	struct tb_ev_writer *ew = (struct tb_ev_writer *)f.other;
	struct tb_track t;

	unseen();
	tb_track_custom(&t, 42, NULL, "t");
	ck_assert_int_eq(unit_init(f.other, &f.w), TB_OK);
	ck_assert_int_eq(tb_ev_instant(ew, NULL, "here", NULL, 0),
			 TB_ECONFIG);
	ck_assert_int_eq(tb_ev_begin(ew, NULL, "here", NULL, 0), TB_ECONFIG);
	ck_assert_int_eq(tb_ev_counter(ew, NULL, &t, 1), TB_ECONFIG);
	ck_assert_int_eq(tb_ev_add_track(ew, &t), TB_ECONFIG);
	ck_assert_int_eq(tb_ev_writer_finish(ew), TB_ECONFIG);
	tb_ev_forget_track(ew, &t);
	tb_ev_reset(ew);
	ck_assert_uint_eq(written(), 0);
	/* the other unit's own writer works there */
	ck_assert_int_eq(unit_instant(f.other), TB_OK);
	ck_assert_uint_ne(written(), 0);
}
END_TEST

TB_CATEGORY_DEFINE(cat_on, "on", 1);

/*
 * The macros on a writer of the other unit, which it allocated at its own
 * (smaller) size and which ends where an unmapped page starts: refused
 * before a byte past its end is read.  The macros' kept events are a table
 * at this unit's offsets: looked up first, the lookup of a counter track
 * whose entry lies past the other unit's size faulted here.
 */
START_TEST(test_theirs_never_read_past_its_end)
{
	size_t small = unit_writer_size(), i, past = 0;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t len = (small + pg - 1) / pg * pg + pg;
	struct tb_track t[64];
	struct tb_ev_writer *ew;
	uint8_t *m;

	unseen();
	m = (uint8_t *)mmap(NULL, len, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(m, MAP_FAILED);
	ck_assert_int_eq(mprotect(m + len - pg, pg, PROT_NONE), 0);
	ew = (struct tb_ev_writer *)(void *)(m + len - pg - small);
	ck_assert_int_eq(unit_init(ew, &f.w), TB_OK);
	ck_assert_int_eq(tb_ev_writer_init(&f.ew, &f.w, NULL, NULL, 0),
			 TB_OK);
	for (i = 0; i < 64; i++) {
		tb_track_counter(&t[i], 0x100 + i, NULL, "c", TB_UNIT_COUNT);
		/* where this unit's layout keeps the track's counter */
		past += (size_t)((uint8_t *)tb__ev_site_of(&f.ew, &t[i],
							   TB_EV_COUNTER) -
				 (uint8_t *)&f.ew) >= small;
		TB_TRACE_COUNTER_W(ew, &cat_on, &t[i], i);
		ck_assert_int_eq(tb_ev_counter(ew, &cat_on, &t[i], 1),
				 TB_ECONFIG);
	}
	ck_assert_uint_gt(past, 0);	/* the lookup would have faulted */
	ck_assert_uint_eq(written(), 0);
	munmap(m, len);
}
END_TEST

START_TEST(test_a_writer_never_set_up_is_refused)
{
	struct tb_ev_writer ew;

	memset(&ew, 0, sizeof(ew));
	ck_assert_int_eq(tb_ev_instant(&ew, NULL, "x", NULL, 0), TB_ECONFIG);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tbevent_config");
	TCase *tc = tcase_create("layout");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_a_mixed_program_sets_up_no_writer);
	tcase_add_test(tc, test_ours_refused_by_the_other_unit);
	tcase_add_test(tc, test_theirs_refused_here);
	tcase_add_test(tc, test_a_writer_never_set_up_is_refused);
	tcase_add_test(tc, test_theirs_never_read_past_its_end);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
