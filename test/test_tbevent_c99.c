/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_tbevent_c99.c - the event layer under strict C99 with no POSIX
 * feature macro: <time.h> declares no CLOCK_BOOTTIME, so there is no
 * default clock.  tb_ev_writer_init() must say so with its own code
 * (TB_ENOCLOCK, whose text names the cause), and a caller's clock must
 * still work, its BOOTTIME reference read by the caller's function.
 */
#undef _GNU_SOURCE		/* the Makefile defines it for every suite */
#undef _REENTRANT		/* -pthread: glibc reads it as POSIX */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tbevent.h"

#ifdef CLOCK_BOOTTIME
#error "CLOCK_BOOTTIME is declared: this suite tests its absence"
#endif

static uint64_t ns = 100;

static uint64_t tick(void *ctx)
{
	(void)ctx;
	return ns += 10;
}

TB_CATEGORY_DEFINE(cat_c99, "c99", 1);

/* The ring's memory: a static area, aligned for the ring header. */
#define CS	4096u
#define NCH	4u
static union {
	uint64_t align[8];
	uint8_t b[64 + 512 + CS * NCH];
} mem;
static uint8_t scratch[CS];

START_TEST(test_no_default_clock_has_its_own_code)
{
	struct tb_ev_clock ref_by_default = { tick, NULL, 64,
					      TB_CLOCK_BOOTTIME, NULL };
	struct tb_ev_clock mine = { tick, NULL, 64, TB_CLOCK_BOOTTIME, tick };
	struct tb_ev_clock boot = { tick, NULL, TB_CLOCK_BOOTTIME, 0, NULL };
	struct tb_ring r;
	struct tb_writer w;
	struct tb_ev_writer ew;
	uint8_t *base = mem.b + (64 - (uintptr_t)mem.b % 64) % 64;

	ck_assert_int_eq(TB_EV_HAVE_BOOTTIME, 0);
	ck_assert_uint_le(tb_ring_size(CS, NCH), sizeof(mem.b) - 64);
	ck_assert_int_eq(tb_ring_init(&r, base, tb_ring_size(CS, NCH), CS,
				      NCH), TB_OK);
	ck_assert_int_eq(tb_writer_init(&w, &r, 1, 0, TB_DROP, scratch),
			 TB_OK);
	ck_assert_int_eq(tb_ev_writer_init(&ew, &w, NULL, NULL, 0),
			 TB_ENOCLOCK);
	ck_assert_ptr_nonnull(strstr(tb_strerror(TB_ENOCLOCK),
				     "_GNU_SOURCE"));
	/* the reference read by the default clock: there is none */
	ck_assert_int_eq(tb_ev_writer_init(&ew, &w, NULL, &ref_by_default,
					   0), TB_ECLOCKFN);
	ck_assert_int_eq(tb_ev_writer_init(&ew, &w, NULL, &boot, 0),
			 TB_OK);
	ck_assert_int_eq(tb_ev_writer_init(&ew, &w, NULL, &mine, 0),
			 TB_OK);
	ck_assert_int_eq(tb_ev_instant(&ew, &cat_c99, "Tick", NULL, 0),
			 TB_OK);
	ck_assert_uint_eq(ew.stats.snapshots, 1);
	ck_assert_uint_eq(ew.stats.events, 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tbevent_c99");
	TCase *tc = tcase_create("clock");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_no_default_clock_has_its_own_code);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
