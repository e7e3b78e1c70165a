/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_tbbase.c - the one result space: every code has its own number
 * and its own name, and the version macros agree with each other; the
 * short copy (tb__copy()) copies exactly its bytes.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "tbbase.h"

static const int codes[] = {
	TB_OK, TB_FULL, TB_NO_CHUNK, TB_TOO_LARGE, TB_DROPPED,
	TB_EINVAL, TB_EOPEN, TB_ENOTOPEN, TB_ESIZE, TB_EID, TB_EALIGN,
	TB_ESHORT, TB_EMAGIC, TB_EVERSION, TB_EHEADER, TB_EGEOMETRY,
	TB_EPROTO, TB_EPINNED,
	TB_ENOMEM, TB_ELIMIT, TB_EROFS, TB_EBUFFULL, TB_ESTALE, TB_ETOOBIG,
	TB_EFRAMING, TB_ERECOMMIT, TB_EBADID, TB_ENOENT, TB_ERANGE, TB_EBUSY,
	TB_ENOROOM, TB_EDIR,
	TB_ENOCLOCK, TB_ECLOCKREF, TB_ECLOCKFN, TB_ECLOCKID,
	TB_EPROTOBUF, TB_EIO, TB_ECONFIG,
	TB_NODATA, TB_EMITTED, TB_SKIPPED, TB_RETRY_LATER, TB_PENDING,
	TB_LIMIT,
};
#define NCODES (sizeof(codes) / sizeof(codes[0]))

START_TEST(test_every_code_has_its_own_number_and_name)
{
	unsigned i, j;

	for (i = 0; i < NCODES; i++) {
		ck_assert_str_ne(tb_strerror(codes[i]), "unknown result");
		for (j = 0; j < i; j++) {
			ck_assert_int_ne(codes[i], codes[j]);
			ck_assert_str_ne(tb_strerror(codes[i]),
					 tb_strerror(codes[j]));
		}
	}
	ck_assert_str_eq(tb_strerror(-1000), "unknown result");
	ck_assert_str_eq(tb_strerror(1000), "unknown result");
}
END_TEST

START_TEST(test_errors_are_negative_reader_outcomes_positive)
{
	unsigned i;

	for (i = 0; i < NCODES; i++) {
		int c = codes[i];

		if (c >= TB_NODATA)
			ck_assert_int_le(c, TB_LIMIT);
		else
			ck_assert_int_le(c, TB_OK);
	}
}
END_TEST

START_TEST(test_version_string_matches_the_numbers)
{
	char v[32];

	snprintf(v, sizeof(v), "%d.%d.%d", TBRING_VERSION_MAJOR,
		 TBRING_VERSION_MINOR, TBRING_VERSION_PATCH);
	ck_assert_str_eq(v, TBRING_VERSION_STRING);
}
END_TEST

/*
 * The version macros carry the library's name: TB_VERSION_* are another
 * C library's (tboox/tbox), and a program may include both.
 */
#if defined(TB_VERSION_MAJOR) || defined(TB_VERSION_MINOR) || \
	defined(TB_VERSION_PATCH) || defined(TB_VERSION_STRING)
#error "tbbase.h defines TB_VERSION_*: those names are tbox's"
#endif

/*
 * tb__copy() at every length up to past TB__COPY_INLINE (its word loop,
 * the overlapping ends, each tail, the memcpy), at every offset of a word
 * on both sides: exactly the n bytes asked for, the bytes around them
 * untouched.
 */
START_TEST(test_short_copy_copies_exactly_its_bytes)
{
	uint8_t src[160], dst[160], want[160];
	size_t n, so, dof, i;

	for (i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 37 + 11);
	for (n = 0; n <= TB__COPY_INLINE + 9; n++)
		for (so = 0; so < 8; so++)
			for (dof = 0; dof < 8; dof++) {
				memset(dst, 0xa5, sizeof(dst));
				memcpy(want, dst, sizeof(want));
				memcpy(want + 16 + dof, src + so, n);
				tb__copy(dst + 16 + dof, src + so, n);
				ck_assert_msg(!memcmp(dst, want, sizeof(dst)),
					      "n %zu, offsets %zu %zu", n, so,
					      dof);
			}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tbbase");
	TCase *tc = tcase_create("results");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_every_code_has_its_own_number_and_name);
	tcase_add_test(tc, test_errors_are_negative_reader_outcomes_positive);
	tcase_add_test(tc, test_version_string_matches_the_numbers);
	tcase_add_test(tc, test_short_copy_copies_exactly_its_bytes);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
