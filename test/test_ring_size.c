/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_ring_size.c - TB_RING_SIZE(), the ring's size as a constant
 * expression for memory declared static (firmware): it is one at compile
 * time (array sizes, C99's negative-array assertion), it equals
 * tb_ring_size() for every chunk size and many counts, and an array
 * declared with it and TB_RING_ALIGNED is a ring tb_ring_init() takes.
 * That an illegal geometry fails the build is not a run-time matter; the
 * header's comment says so and `make headers` keeps the macro compiling.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "tbring.h"

/* C99 has no _Static_assert: a negative array size fails the build. */
#define STATIC_ASSERT(name, cond) typedef char name[(cond) ? 1 : -1]

STATIC_ASSERT(size_512x8, TB_RING_SIZE(512, 8) == 512 + 512 * 8);
STATIC_ASSERT(size_256x2, TB_RING_SIZE(256, 2) == 512 + 512);
STATIC_ASSERT(size_4kx64, TB_RING_SIZE(4096, 64) == 512 + 4096 * 64);
STATIC_ASSERT(size_32kx64k,
	      TB_RING_SIZE(32768, 65536) == 512 + (size_t)32768 * 65536);
STATIC_ASSERT(size_mult_4, TB_RING_SIZE(256, 2) % 4 == 0);

/* Memory for a ring, as firmware declares it. */
static uint8_t mem[TB_RING_SIZE(512, 8)] TB_RING_ALIGNED;

/* Every chunk size, with counts from the smallest to large ones. */
#define COUNTS(X, cs)							\
	X(cs, 2) X(cs, 4) X(cs, 8) X(cs, 16) X(cs, 64) X(cs, 256)	\
	X(cs, 1024) X(cs, 4096) X(cs, 65536)
#define GEOMETRIES(X)							\
	COUNTS(X, 256) COUNTS(X, 512) COUNTS(X, 1024) COUNTS(X, 2048)	\
	COUNTS(X, 4096) COUNTS(X, 8192) COUNTS(X, 16384)		\
	COUNTS(X, 32768)

struct geometry {
	uint32_t chunk_size, num_chunks;
	size_t size;		/* TB_RING_SIZE() */
};

#define ENTRY(cs, n) { cs, n, TB_RING_SIZE(cs, n) },
static const struct geometry geometries[] = {
	GEOMETRIES(ENTRY)
#if SIZE_MAX > 0xffffffffu
	/* the largest: only where a size_t holds it */
	{ 32768, 1u << 30, TB_RING_SIZE(32768, 1u << 30) },
	{ 256, 1u << 30, TB_RING_SIZE(256, 1u << 30) },
#endif
};
#define NGEOMETRIES (sizeof(geometries) / sizeof(geometries[0]))

START_TEST(test_macro_equals_tb_ring_size)
{
	unsigned i;

	ck_assert_uint_ge(NGEOMETRIES, 72);
	for (i = 0; i < NGEOMETRIES; i++) {
		const struct geometry *g = &geometries[i];

		ck_assert_msg(g->size == tb_ring_size(g->chunk_size,
						      g->num_chunks),
			      "%u x %u: TB_RING_SIZE %zu, tb_ring_size %zu",
			      g->num_chunks, g->chunk_size, g->size,
			      tb_ring_size(g->chunk_size, g->num_chunks));
	}
}
END_TEST

START_TEST(test_static_array_is_a_ring)
{
	static uint8_t wscratch[512], rscratch[512];
	struct tb_ring ring;
	struct tb_writer w;
	struct tb_reader rd;
	struct tb_chunk_view v;
	int ret;

#if defined(__GNUC__)
	ck_assert_uint_eq((uintptr_t)mem % 64, 0);
#endif
	ck_assert_uint_eq(sizeof(mem), tb_ring_size(512, 8));
	ck_assert_int_eq(tb_ring_init(&ring, mem, sizeof(mem), 512, 8),
			 TB_OK);
	ck_assert_int_eq(tb_writer_init(&w, &ring, 1, 0, TB_DROP, wscratch),
			 TB_OK);
	ck_assert_int_eq(tb_writer_write_packet(&w, "static", 6), TB_OK);
	tb_writer_release(&w);
	ck_assert_int_eq(tb_reader_init(&rd, &ring, rscratch), TB_OK);
	ret = tb_reader_read_one(&rd, TB_READ_SCRAPE, &v);
	ck_assert_int_eq(ret, TB_EMITTED);
	ck_assert_uint_eq(v.nfrags, 1);
	ck_assert_uint_eq(v.sizes[0], 6);
	ck_assert_mem_eq(v.payload, "static", 6);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("ring_size");
	TCase *t = tcase_create("static");

	tcase_add_test(t, test_macro_equals_tb_ring_size);
	tcase_add_test(t, test_static_array_is_a_ring);
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
