/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_mask.c - the read-modify-writes of a core with no atomic one
 * (TB_ATOMIC_MASK, tbsync.h): a CAS and an add made of a plain load and
 * store between TB_ATOMIC_ENTER() and TB_ATOMIC_EXIT(), as on ARMv6-M and
 * RISC-V without A.  Here the two hooks are a vendor's, counting: every
 * CAS and add of the ring runs inside exactly one of them, none nests,
 * EXIT gets the key its ENTER returned, and a CAS stores only when it
 * finds what it expected.  That an interrupt cannot land inside is
 * checked on emulated cores (make firmware-e2e, the rmw runs).
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#define TB_TEST_HOOKS
static unsigned depth, enters, exits, bad_keys, nested;

static uint32_t test_enter(void)
{
	if (depth++)
		nested++;
	return 0x5a00u + ++enters;
}

static void test_exit(uint32_t key)
{
	if (key != 0x5a00u + enters)
		bad_keys++;
	depth--;
	exits++;
}

#define TB_ATOMIC_MASK		1
#define TB_ATOMIC_ENTER()	test_enter()
#define TB_ATOMIC_EXIT(key)	test_exit(key)
#include "tbring.h"

void (*tb_test_atomic)(const uint32_t *p, int op, uint32_t expect, uint32_t v,
		       int ok, int fail);
static unsigned rmws;

static void count_rmw(const uint32_t *p, int op, uint32_t expect, uint32_t v,
		      int ok, int fail)
{
	(void)p, (void)expect, (void)v, (void)ok, (void)fail;
	/* the seam runs just before the operation, outside the mask */
	ck_assert_uint_eq(depth, 0);
	if (op == TB_TEST_CAS || op == TB_TEST_ADD)
		rmws++;
}

START_TEST(test_cas_stores_only_what_it_expected)
{
	uint32_t w = 7, seen = 6;

	ck_assert(!tb_atomic_cas(&w, &seen, 9, TB_REL, TB_ACQ));
	ck_assert_uint_eq(w, 7);	/* no store */
	ck_assert_uint_eq(seen, 7);	/* what it found */
	ck_assert(tb_atomic_cas(&w, &seen, 9, TB_REL, TB_ACQ));
	ck_assert_uint_eq(w, 9);
	ck_assert_uint_eq(seen, 7);
	w = 0xffffffffu;
	tb_atomic_add(&w, 1);		/* wraps at 2^32 */
	ck_assert_uint_eq(w, 0);
	tb_atomic_add(&w, (uint32_t)-1);
	ck_assert_uint_eq(w, 0xffffffffu);
	ck_assert_uint_eq(enters, 4);
	ck_assert_uint_eq(exits, 4);
	ck_assert_uint_eq(depth, 0);
	ck_assert_uint_eq(bad_keys, 0);
}
END_TEST

static unsigned chunks, bytes;

static void count_chunk(void *ctx, const struct tb_chunk_view *v)
{
	uint32_t i;

	(void)ctx;
	chunks++;
	for (i = 0; i < v->nfrags; i++)
		bytes += v->sizes[i];
}

/*
 * Two writers and the reader over a small ring, wrapping it several
 * times: every chunk written is read, and every CAS and add of the ring
 * (the seam counts them) ran inside one ENTER/EXIT pair.
 */
START_TEST(test_every_ring_rmw_is_masked)
{
	static uint8_t pkt[100], s1[256], s2[256], sr[256];
	size_t len = tb_ring_size(256, 4);
	struct tb_ring r;
	struct tb_writer a, b;
	struct tb_reader rd;
	void *mem;
	int i;

	ck_assert_int_eq(posix_memalign(&mem, TB_RING_LINE, len), 0);
	memset(mem, 0, len);
	ck_assert_int_eq(tb_ring_init(&r, mem, len, 256, 4), TB_OK);
	ck_assert_int_eq(tb_writer_init(&a, &r, 1, 0, TB_DROP, s1), TB_OK);
	ck_assert_int_eq(tb_writer_init(&b, &r, 2, 0, TB_DROP, s2), TB_OK);
	ck_assert_int_eq(tb_reader_init(&rd, &r, sr), TB_OK);
	enters = exits = 0;
	tb_test_atomic = count_rmw;
	for (i = 0; i < 40; i++) {
		ck_assert_int_eq(tb_writer_write_packet(i & 1 ? &a : &b, pkt,
							sizeof(pkt)), TB_OK);
		if (i % 3 == 2)
			tb_reader_drain(&rd, 4, TB_READ_LAZY, count_chunk,
					NULL, NULL);
	}
	tb_writer_release(&a);
	tb_writer_release(&b);
	tb_reader_drain(&rd, 4, TB_READ_SCRAPE, count_chunk, NULL, NULL);
	tb_test_atomic = NULL;
	ck_assert_uint_gt(chunks, 4);		/* it wrapped */
	ck_assert_uint_ge(bytes, 40 * sizeof(pkt));
	ck_assert_uint_gt(rmws, 40);
	ck_assert_uint_eq(enters, rmws);
	ck_assert_uint_eq(exits, rmws);
	ck_assert_uint_eq(nested, 0);
	ck_assert_uint_eq(bad_keys, 0);
	free(mem);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mask");
	TCase *tc = tcase_create("rmw");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_cas_stores_only_what_it_expected);
	tcase_add_test(tc, test_every_ring_rmw_is_masked);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
