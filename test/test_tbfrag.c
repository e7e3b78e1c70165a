/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_tbfrag.c - conformance of tbfrag.h to the chunk fragment layout of
 * the specification (sections 3.1, 3.5 and 6).  Expected bytes come from
 * the specification's text, never from tbfrag.h itself.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tbfrag.h"

static const uint32_t chunk_sizes[] = {
	256, 512, 1024, 2048, 4096, 8192, 16384, 32768
};
#define NSIZES (sizeof(chunk_sizes) / sizeof(chunk_sizes[0]))

static unsigned spec_width(uint32_t cs)
{
	return cs == 256 ? 1u : 2u;
}

static uint8_t *new_chunk(uint32_t cs, uint8_t fill)
{
	uint8_t *c = (uint8_t *)malloc(cs);

	ck_assert_ptr_nonnull(c);
	memset(c, fill, cs);
	return c;
}

/* Appends a fragment of @len bytes of @byte; must succeed. */
static void append_fill(struct tb_frag_cursor *c, uint32_t len, uint8_t byte)
{
	uint8_t *b, *e;

	ck_assert_int_eq(tb_frag_open(c, &b, &e), 0);
	ck_assert_uint_ge((size_t)(e - b), len);
	memset(b, byte, len);
	ck_assert_int_eq(tb_frag_close(c, len), 0);
}

/* Section 6.4 as one procedure over the library's two steps. */
static int32_t validate(const uint8_t *chunk, uint32_t cs, unsigned n,
			uint16_t *sizes)
{
	unsigned w = tb_frag_width(cs);
	uint8_t copy[512];

	if (!tb_frag_dir_fits(cs, n, w))
		return TB_EDIR;
	ck_assert_uint_le(n * w, sizeof(copy));
	memcpy(copy, chunk + cs - n * w, n * w);
	return tb_frag_parse_dir(copy, n, w, cs, sizes);
}

/* ------------------------------------------------------------------------
 * Entry width and directory placement (section 6)
 */
START_TEST(test_entry_width_is_one_byte_only_for_256_byte_chunks)
{
	unsigned i;

	ck_assert_uint_eq(tb_frag_width(256), 1);
	for (i = 1; i < NSIZES; i++)
		ck_assert_uint_eq(tb_frag_width(chunk_sizes[i]), 2);
}
END_TEST

START_TEST(test_directory_entries_grow_down_from_chunk_end)
{
	uint8_t *c = new_chunk(256, 0);
	struct tb_frag_cursor cur;

	tb_frag_cursor_init(&cur, c, 256);
	append_fill(&cur, 5, 'a');
	append_fill(&cur, 200, 'b');
	append_fill(&cur, 3, 'c');
	ck_assert_uint_eq(c[255], 0x05);
	ck_assert_uint_eq(c[254], 0xc8);
	ck_assert_uint_eq(c[253], 0x03);
	ck_assert_uint_eq(c[252], 0x00);	/* no sentinel */
	/* fragment i's entry: [chunk_size - (i + 1) * w, chunk_size - i * w) */
	ck_assert_uint_eq(tb__frag_entry_off(256, 1, 0), 255);
	ck_assert_uint_eq(tb__frag_entry_off(256, 1, 2), 253);
	ck_assert_uint_eq(tb__frag_entry_off(512, 2, 0), 510);
	ck_assert_uint_eq(tb__frag_entry_off(32768, 2, 254), 32768 - 255 * 2);
	free(c);
}
END_TEST

START_TEST(test_two_byte_entries_are_little_endian_bytewise)
{
	uint8_t *c = new_chunk(1024, 0);
	struct tb_frag_cursor cur;

	tb_frag_cursor_init(&cur, c, 1024);
	append_fill(&cur, 0x0102, 'x');
	append_fill(&cur, 255, 'y');
	ck_assert_uint_eq(c[1022], 0x02);
	ck_assert_uint_eq(c[1023], 0x01);
	ck_assert_uint_eq(c[1020], 0xff);
	ck_assert_uint_eq(c[1021], 0x00);
	/* the helpers are bytewise too: an odd, unaligned address works */
	tb__frag_put_le(c + 101, 2, 0xbeef);
	ck_assert_uint_eq(c[101], 0xef);
	ck_assert_uint_eq(c[102], 0xbe);
	ck_assert_uint_eq(tb__frag_get_le(c + 101, 2), 0xbeef);
	free(c);
}
END_TEST

START_TEST(test_entries_round_trip_at_interesting_sizes)
{
	static const uint32_t sizes[] = { 0, 1, 127, 128, 254, 255 };
	static const uint32_t css[] = { 256, 512, 32768 };
	unsigned k, i;

	for (k = 0; k < 3; k++) {
		uint32_t cs = css[k];
		unsigned w = spec_width(cs);
		uint32_t max = w == 1 ? 255 : 65535;
		uint8_t *c = new_chunk(cs, 0xee);

		for (i = 0; i < 6; i++)
			tb__frag_put_le(c + tb__frag_entry_off(cs, w, i), w,
				       sizes[i]);
		tb__frag_put_le(c + tb__frag_entry_off(cs, w, 6), w, max);
		for (i = 0; i < 6; i++)
			ck_assert_uint_eq(tb__frag_get_le(c + cs - (i + 1) * w,
							 w), sizes[i]);
		ck_assert_uint_eq(tb__frag_get_le(c + cs - 7 * w, w), max);
		/* the byte below the seventh entry is untouched */
		ck_assert_uint_eq(c[cs - 7 * w - 1], 0xee);
		if (w == 2) {
			ck_assert_uint_eq(c[cs - 2 * 4], 128);
			ck_assert_uint_eq(c[cs - 2 * 4 + 1], 0);
		}
		free(c);
	}
}
END_TEST

START_TEST(test_buffer_id_little_endian_at_bytes_4_5_neighbours_untouched)
{
	static const uint16_t ids[] = { 0x1234, 0xffff, 0x0000, 0x00ff };
	uint8_t *c = new_chunk(256, 0xa5);
	unsigned i, j;

	for (i = 0; i < 4; i++) {
		tb_frag_set_bid(c, ids[i]);
		ck_assert_uint_eq(c[4], ids[i] & 0xff);
		ck_assert_uint_eq(c[5], ids[i] >> 8);
		ck_assert_uint_eq(tb_frag_bid(c), ids[i]);
		for (j = 0; j < 256; j++)
			if (j != 4 && j != 5)
				ck_assert_uint_eq(c[j], 0xa5);
	}
	ck_assert_uint_eq(TB_FRAG_BID_OFF, 4);
	ck_assert_uint_eq(TB_FRAG_PAYLOAD_OFF, 6);
	free(c);
}
END_TEST

/* ------------------------------------------------------------------------
 * Section 6.1 worked example
 */
START_TEST(test_worked_example_6_1_byte_for_byte)
{
	uint8_t *c = new_chunk(256, 0);
	uint8_t want[256];
	struct tb_frag_cursor cur;
	unsigned i;

	tb_frag_cursor_init(&cur, c, 256);
	append_fill(&cur, 5, 0x11);
	append_fill(&cur, 200, 0x22);
	append_fill(&cur, 3, 0x33);

	memset(want, 0, sizeof(want));
	memset(want + 6, 0x11, 5);	/* bytes 6..10 */
	memset(want + 11, 0x22, 200);	/* bytes 11..210 */
	memset(want + 211, 0x33, 3);	/* bytes 211..213 */
	want[255] = 0x05;
	want[254] = 0xc8;
	want[253] = 0x03;
	for (i = 0; i < 256; i++)
		ck_assert_msg(c[i] == want[i], "byte %u is 0x%02x, want 0x%02x",
			      i, c[i], want[i]);
	ck_assert_uint_eq(cur.payload, 214);
	ck_assert_uint_eq(cur.dir, 253);
	ck_assert_uint_eq(cur.dir - cur.payload, 39);	/* available */
	ck_assert_uint_eq(cur.nfrags, 3);
	/* the next fragment may take what is left after its own entry */
	ck_assert_int_eq(tb_frag_room(&cur), 38);
	free(c);
}
END_TEST

START_TEST(test_open_reserves_entry_before_handing_out_range)
{
	uint32_t k;

	for (k = 0; k < NSIZES; k++) {
		uint32_t cs = chunk_sizes[k];
		uint8_t *c = new_chunk(cs, 0);
		struct tb_frag_cursor cur;
		uint8_t *b, *e;

		tb_frag_cursor_init(&cur, c, cs);
		append_fill(&cur, 10, 'q');
		ck_assert_int_eq(tb_frag_open(&cur, &b, &e), 0);
		/* [payload_cursor, dir_cursor - w) */
		ck_assert_ptr_eq(b, c + 6 + 10);
		ck_assert_ptr_eq(e, c + cs - 2 * spec_width(cs));
		free(c);
	}
}
END_TEST

START_TEST(test_only_one_fragment_open_and_close_needs_open)
{
	uint8_t *c = new_chunk(512, 0);
	struct tb_frag_cursor cur;
	uint8_t *b, *e;

	tb_frag_cursor_init(&cur, c, 512);
	ck_assert_int_eq(tb_frag_close(&cur, 0), TB_ENOTOPEN);
	ck_assert_int_eq(tb_frag_open(&cur, &b, &e), 0);
	ck_assert_int_eq(tb_frag_open(&cur, &b, &e), TB_EOPEN);
	ck_assert_int_eq(tb_frag_close(&cur, 4), 0);
	ck_assert_int_eq(tb_frag_close(&cur, 4), TB_ENOTOPEN);
	ck_assert_uint_eq(cur.nfrags, 1);
	free(c);
}
END_TEST

/* ------------------------------------------------------------------------
 * Section 6.2 and 3.5: when opening fails
 */
START_TEST(test_open_fails_at_255_fragments)
{
	uint8_t *c = new_chunk(32768, 0);
	struct tb_frag_cursor cur;
	uint8_t *b, *e;
	unsigned i;

	tb_frag_cursor_init(&cur, c, 32768);
	for (i = 0; i < 255; i++)
		ck_assert_int_eq(tb__frag_append(&cur, "", 0), 0);
	ck_assert_uint_eq(cur.nfrags, 255);
	/* plenty of space left, but no more fragments */
	ck_assert_uint_gt(cur.dir - cur.payload, 30000);
	ck_assert_int_eq(tb_frag_open(&cur, &b, &e), TB_ENOROOM);
	ck_assert_int_eq(tb_frag_room(&cur), TB_ENOROOM);
	ck_assert_uint_eq(cur.nfrags, 255);
	ck_assert_uint_eq(cur.dir, 32768 - 255 * 2);
	free(c);
}
END_TEST

START_TEST(test_directory_fills_first_in_small_chunks)
{
	/* section 3.5: 256 B fits at most 250 entries, 512 B fits 253 */
	static const uint32_t css[] = { 256, 512 };
	static const unsigned most[] = { 250, 253 };
	unsigned k, i;

	for (k = 0; k < 2; k++) {
		uint8_t *c = new_chunk(css[k], 0);
		struct tb_frag_cursor cur;
		uint8_t *b, *e;

		tb_frag_cursor_init(&cur, c, css[k]);
		for (i = 0; i < most[k]; i++)
			ck_assert_int_eq(tb__frag_append(&cur, "", 0), 0);
		ck_assert_int_eq(tb_frag_open(&cur, &b, &e), TB_ENOROOM);
		ck_assert_uint_eq(cur.nfrags, most[k]);
		free(c);
	}
}
END_TEST

START_TEST(test_open_fails_when_dir_minus_payload_below_width)
{
	uint8_t *c = new_chunk(512, 0);
	struct tb_frag_cursor cur;
	uint8_t *b, *e;

	/* dir - payload == 1 < w == 2 */
	tb_frag_cursor_init(&cur, c, 512);
	append_fill(&cur, 1, 'a');
	append_fill(&cur, 500, 'b');
	ck_assert_uint_eq(cur.dir - cur.payload, 1);
	ck_assert_int_eq(tb_frag_open(&cur, &b, &e), TB_ENOROOM);
	ck_assert_int_eq(tb_frag_room(&cur), TB_ENOROOM);

	/* dir - payload == w: an empty fragment still opens */
	tb_frag_cursor_init(&cur, c, 512);
	append_fill(&cur, 502, 'c');
	ck_assert_uint_eq(cur.dir - cur.payload, 2);
	ck_assert_int_eq(tb_frag_room(&cur), 0);
	ck_assert_int_eq(tb_frag_open(&cur, &b, &e), 0);
	ck_assert_ptr_eq(b, e);
	ck_assert_int_eq(tb_frag_close(&cur, 1), TB_ESIZE);
	ck_assert_int_eq(tb_frag_close(&cur, 0), 0);
	ck_assert_uint_eq(cur.dir, cur.payload);
	ck_assert_int_eq(tb_frag_open(&cur, &b, &e), TB_ENOROOM);

	/* 256 B, w == 1: dir - payload == 0 fails, == 1 opens empty */
	free(c);
	c = new_chunk(256, 0);
	tb_frag_cursor_init(&cur, c, 256);
	append_fill(&cur, 248, 'd');
	ck_assert_uint_eq(cur.dir - cur.payload, 1);
	ck_assert_int_eq(tb_frag_open(&cur, &b, &e), 0);
	ck_assert_ptr_eq(b, e);
	ck_assert_int_eq(tb_frag_close(&cur, 0), 0);
	ck_assert_int_eq(tb_frag_open(&cur, &b, &e), TB_ENOROOM);
	free(c);
}
END_TEST

START_TEST(test_largest_fragment_fits_and_one_byte_more_does_not)
{
	unsigned k;

	for (k = 0; k < NSIZES; k++) {
		uint32_t cs = chunk_sizes[k];
		uint32_t max = cs - 6 - spec_width(cs);
		uint8_t *c = new_chunk(cs, 0);
		struct tb_frag_cursor cur;
		uint8_t *b, *e;

		ck_assert_uint_eq(tb_frag_max_size(cs), max);
		tb_frag_cursor_init(&cur, c, cs);
		ck_assert_int_eq(tb_frag_room(&cur), (int32_t)max);
		ck_assert_int_eq(tb_frag_open(&cur, &b, &e), 0);
		ck_assert_uint_eq((size_t)(e - b), max);
		ck_assert_int_eq(tb_frag_close(&cur, max + 1), TB_ESIZE);
		ck_assert_int_eq(tb_frag_close(&cur, max), 0);
		ck_assert_uint_eq(cur.payload, cur.dir);
		ck_assert_uint_eq(tb__frag_get_le(c + cs - spec_width(cs),
						 spec_width(cs)), max);
		free(c);
	}
	ck_assert_uint_eq(tb_frag_max_size(256), 249);
	ck_assert_uint_eq(tb_frag_max_size(32768), 32760);
}
END_TEST

/*
 * A size no ring can have holds no fragment: 0, never the wrapped
 * difference (chunk_size - 8 is nearly 2^32 below 8 bytes).
 */
START_TEST(test_max_size_of_a_chunk_size_no_ring_has_is_0)
{
	static const uint32_t bad[] = { 0, 1, 5, 6, 7, 8, 9, 100, 255,
					32769, 65536, 0x80000000u,
					0xffffffffu };
	unsigned k;

	for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
		ck_assert_msg(tb_frag_max_size(bad[k]) == 0,
			      "tb_frag_max_size(%u) = %u", bad[k],
			      tb_frag_max_size(bad[k]));
	/* the ring's own sizes, each one */
	for (k = 0; k < NSIZES; k++) {
		uint32_t cs = chunk_sizes[k];

		ck_assert_uint_eq(tb_frag_max_size(cs),
				  cs - 6 - spec_width(cs));
	}
}
END_TEST

START_TEST(test_close_too_big_fails_and_changes_nothing)
{
	uint8_t *c = new_chunk(256, 0x77);
	uint8_t before[256];
	struct tb_frag_cursor cur, saved;
	uint8_t *b, *e;

	tb_frag_cursor_init(&cur, c, 256);
	append_fill(&cur, 20, 'a');
	ck_assert_int_eq(tb_frag_open(&cur, &b, &e), 0);
	memcpy(before, c, 256);
	saved = cur;
	ck_assert_int_eq(tb_frag_close(&cur, (uint32_t)(e - b) + 1), TB_ESIZE);
	ck_assert_int_eq(tb_frag_close(&cur, 0xffffffffu), TB_ESIZE);
	ck_assert_mem_eq(c, before, 256);
	ck_assert_uint_eq(cur.payload, saved.payload);
	ck_assert_uint_eq(cur.dir, saved.dir);
	ck_assert_uint_eq(cur.nfrags, saved.nfrags);
	/* still open: a legal close works afterwards */
	ck_assert_int_eq(tb_frag_close(&cur, (uint32_t)(e - b)), 0);
	ck_assert_uint_eq(cur.nfrags, 2);
	free(c);
}
END_TEST

START_TEST(test_append_too_long_fails_without_writing)
{
	uint8_t *c = new_chunk(256, 0x55);
	uint8_t big[300];
	struct tb_frag_cursor cur;

	memset(big, 'z', sizeof(big));
	tb_frag_cursor_init(&cur, c, 256);
	ck_assert_int_eq(tb__frag_append(&cur, big, 250), TB_ENOROOM);
	ck_assert_uint_eq(cur.nfrags, 0);
	ck_assert_uint_eq(c[255], 0x55);
	/* a failed append leaves no fragment open */
	ck_assert_int_eq(tb__frag_append(&cur, big, 249), 0);
	ck_assert_uint_eq(c[255], 249);
	ck_assert_uint_eq(cur.nfrags, 1);
	free(c);
}
END_TEST

START_TEST(test_append_while_fragment_open_keeps_that_fragment_open)
{
	/*
	 * Section 6.2: only one fragment may be open.  An append attempted
	 * while one is open must fail without disturbing it: the encoder
	 * still owns its range and closes it afterwards.
	 */
	uint8_t *c = new_chunk(256, 0);
	struct tb_frag_cursor cur;
	uint8_t *b, *e;

	tb_frag_cursor_init(&cur, c, 256);
	ck_assert_int_eq(tb_frag_open(&cur, &b, &e), 0);
	memcpy(b, "hello", 5);
	ck_assert_int_eq(tb__frag_append(&cur, "x", 1), TB_EOPEN);
	ck_assert_int_eq(tb_frag_close(&cur, 5), 0);
	ck_assert_uint_eq(cur.nfrags, 1);
	ck_assert_uint_eq(c[255], 5);
	ck_assert_mem_eq(c + 6, "hello", 5);
	free(c);
}
END_TEST

/*
 * Every failure names its cause in the one result space: none of them is
 * a bare -1, which is TB_FULL there (tb_strerror() would say "ring full").
 */
START_TEST(test_failures_are_named_results_never_ring_full)
{
	uint8_t *c = new_chunk(256, 0);
	struct tb_frag_cursor cur;
	uint16_t sizes[255];
	uint8_t dir[255];
	uint8_t *b, *e;
	int got[6];
	unsigned i;

	memset(dir, 0xff, sizeof(dir));
	tb_frag_cursor_init(&cur, c, 256);
	got[0] = tb_frag_close(&cur, 0);			/* none open */
	ck_assert_int_eq(tb_frag_open(&cur, &b, &e), TB_OK);
	got[1] = tb_frag_open(&cur, &b, &e);			/* one open */
	got[2] = tb_frag_close(&cur, 250);			/* too big */
	ck_assert_int_eq(tb_frag_close(&cur, 249), TB_OK);
	got[3] = tb_frag_open(&cur, &b, &e);			/* full */
	got[4] = tb_frag_room(&cur);
	got[5] = tb_frag_parse_dir(dir, 2, 1, 256, sizes);	/* 510 > 248 */
	ck_assert_int_eq(got[0], TB_ENOTOPEN);
	ck_assert_int_eq(got[1], TB_EOPEN);
	ck_assert_int_eq(got[2], TB_ESIZE);
	ck_assert_int_eq(got[3], TB_ENOROOM);
	ck_assert_int_eq(got[4], TB_ENOROOM);
	ck_assert_int_eq(got[5], TB_EDIR);
	for (i = 0; i < 6; i++) {
		ck_assert_int_ne(got[i], TB_FULL);
		ck_assert_str_ne(tb_strerror(got[i]), "unknown result");
		ck_assert_str_ne(tb_strerror(got[i]), tb_strerror(TB_FULL));
	}
	free(c);
}
END_TEST

/* ------------------------------------------------------------------------
 * Section 6.4: validation of a copied directory
 */
START_TEST(test_validate_rejects_directory_larger_than_capacity_first)
{
	/* capacity = chunk_size - 6; directory bytes = n * w */
	ck_assert(tb_frag_dir_fits(256, 250, 1));
	ck_assert(!tb_frag_dir_fits(256, 251, 1));
	ck_assert(!tb_frag_dir_fits(256, 255, 1));
	ck_assert(tb_frag_dir_fits(512, 253, 2));
	ck_assert(!tb_frag_dir_fits(512, 254, 2));
	ck_assert(tb_frag_dir_fits(1024, 255, 2));
	ck_assert(tb_frag_dir_fits(256, 0, 1));
}
END_TEST

START_TEST(test_parse_alone_rejects_directory_larger_than_capacity)
{
	/*
	 * Section 6.4 rejects an oversized directory before any total is
	 * computed.  Handed one anyway (251 one-byte zero entries in a
	 * 256-byte chunk), the parser must not accept it: its bound
	 * chunk_size - 6 - n * w would wrap around.
	 */
	uint8_t dir[255];
	uint16_t sizes[255];

	memset(dir, 0, sizeof(dir));
	ck_assert_int_eq(tb_frag_parse_dir(dir, 251, 1, 256, sizes), TB_EDIR);
	ck_assert_int_eq(tb_frag_parse_dir(dir, 254, 2, 512, sizes), TB_EDIR);
}
END_TEST

START_TEST(test_validate_rejects_running_total_over_capacity)
{
	uint8_t *c = new_chunk(256, 0);
	uint16_t sizes[255];

	/* n = 2: the payload may use 250 - 2 = 248 bytes */
	c[255] = 100;
	c[254] = 149;
	ck_assert_int_lt(validate(c, 256, 2, sizes), 0);
	c[254] = 148;
	ck_assert_int_eq(validate(c, 256, 2, sizes), 248);
	ck_assert_uint_eq(sizes[0], 100);
	ck_assert_uint_eq(sizes[1], 148);
	/* the first entry alone over the limit */
	c[255] = 249;
	c[254] = 0;
	ck_assert_int_lt(validate(c, 256, 2, sizes), 0);
	free(c);
}
END_TEST

START_TEST(test_validate_accepts_exact_fit)
{
	unsigned k;

	for (k = 0; k < NSIZES; k++) {
		uint32_t cs = chunk_sizes[k];
		unsigned w = spec_width(cs);
		uint8_t *c = new_chunk(cs, 0);
		uint16_t sizes[255];
		uint32_t cap = cs - 6 - 3 * w;

		/* three fragments that fill the payload area exactly */
		tb__frag_put_le(c + cs - w, w, 1);
		tb__frag_put_le(c + cs - 2 * w, w, cap - 1 - (cap - 1) / 2);
		tb__frag_put_le(c + cs - 3 * w, w, (cap - 1) / 2);
		ck_assert_int_eq(validate(c, cs, 3, sizes), (int32_t)cap);
		ck_assert_uint_eq(sizes[0], 1);
		/* one byte more anywhere is rejected */
		tb__frag_put_le(c + cs - w, w, 2);
		ck_assert_int_lt(validate(c, cs, 3, sizes), 0);
		free(c);
	}
}
END_TEST

START_TEST(test_validate_no_overflow_with_many_0xffff_entries)
{
	uint8_t *c = new_chunk(32768, 0xff);
	uint8_t dir[2 * 255];
	uint16_t sizes[255];
	unsigned n;

	for (n = 1; n <= 255; n++)
		ck_assert_int_lt(validate(c, 32768, n, sizes), 0);
	/* a total that would wrap a 16-bit sum if it were not checked */
	memset(dir, 0, sizeof(dir));
	for (n = 0; n < 255; n++)
		tb__frag_put_le(dir + 2 * n, 2, n & 1 ? 0xffff : 1);
	ck_assert_int_eq(tb_frag_parse_dir(dir, 255, 2, 32768, sizes), TB_EDIR);
	free(c);
}
END_TEST

START_TEST(test_validate_returns_sizes_in_payload_order)
{
	uint8_t *c = new_chunk(1024, 0);
	struct tb_frag_cursor cur;
	uint16_t sizes[255];

	tb_frag_cursor_init(&cur, c, 1024);
	append_fill(&cur, 7, 'a');
	append_fill(&cur, 300, 'b');
	append_fill(&cur, 0, 'c');
	append_fill(&cur, 2, 'd');
	ck_assert_int_eq(validate(c, 1024, 4, sizes), 309);
	ck_assert_uint_eq(sizes[0], 7);
	ck_assert_uint_eq(sizes[1], 300);
	ck_assert_uint_eq(sizes[2], 0);
	ck_assert_uint_eq(sizes[3], 2);
	/* a prefix of the count validates the prefix only */
	ck_assert_int_eq(validate(c, 1024, 2, sizes), 307);
	ck_assert_int_eq(validate(c, 1024, 0, sizes), 0);
	free(c);
}
END_TEST

START_TEST(test_validate_hostile_directories_never_accept_out_of_bounds)
{
	static const uint32_t css[] = { 256, 512, 4096 };
	uint32_t seed = 0x9e3779b9u;
	unsigned round;

	for (round = 0; round < 20000; round++) {
		uint32_t cs = css[round % 3];
		unsigned w = spec_width(cs), n, i;
		uint8_t *c = (uint8_t *)malloc(cs);
		uint16_t sizes[255];
		int32_t total;

		ck_assert_ptr_nonnull(c);
		for (i = 0; i < cs; i++) {
			seed ^= seed << 13;
			seed ^= seed >> 17;
			seed ^= seed << 5;
			/* small values often, so some directories are valid */
			c[i] = (uint8_t)(round & 1 ? seed : seed & 3);
		}
		n = (seed >> 8) % 256;
		total = validate(c, cs, n, sizes);
		if (total >= 0) {
			uint32_t sum = 0;

			for (i = 0; i < n; i++)
				sum += sizes[i];
			ck_assert_uint_eq(sum, (uint32_t)total);
			ck_assert_uint_le(6 + sum + n * w, cs);
		}
		free(c);
	}
}
END_TEST

static Suite *layout_suite(void)
{
	Suite *s = suite_create("tbfrag layout");
	TCase *tc = tcase_create("layout");

	tcase_add_test(tc, test_entry_width_is_one_byte_only_for_256_byte_chunks);
	tcase_add_test(tc, test_failures_are_named_results_never_ring_full);
	tcase_add_test(tc, test_directory_entries_grow_down_from_chunk_end);
	tcase_add_test(tc, test_two_byte_entries_are_little_endian_bytewise);
	tcase_add_test(tc, test_entries_round_trip_at_interesting_sizes);
	tcase_add_test(tc,
		test_buffer_id_little_endian_at_bytes_4_5_neighbours_untouched);
	tcase_add_test(tc, test_worked_example_6_1_byte_for_byte);
	suite_add_tcase(s, tc);
	return s;
}

static Suite *open_close_suite(void)
{
	Suite *s = suite_create("tbfrag open/close");
	TCase *tc = tcase_create("open_close");

	tcase_add_test(tc, test_open_reserves_entry_before_handing_out_range);
	tcase_add_test(tc, test_only_one_fragment_open_and_close_needs_open);
	tcase_add_test(tc, test_open_fails_at_255_fragments);
	tcase_add_test(tc, test_directory_fills_first_in_small_chunks);
	tcase_add_test(tc, test_open_fails_when_dir_minus_payload_below_width);
	tcase_add_test(tc, test_largest_fragment_fits_and_one_byte_more_does_not);
	tcase_add_test(tc, test_max_size_of_a_chunk_size_no_ring_has_is_0);
	tcase_add_test(tc, test_close_too_big_fails_and_changes_nothing);
	tcase_add_test(tc, test_append_too_long_fails_without_writing);
	tcase_add_test(tc,
		test_append_while_fragment_open_keeps_that_fragment_open);
	suite_add_tcase(s, tc);
	return s;
}

static Suite *validate_suite(void)
{
	Suite *s = suite_create("tbfrag validation");
	TCase *tc = tcase_create("validation");

	tcase_add_test(tc,
		test_validate_rejects_directory_larger_than_capacity_first);
	tcase_add_test(tc,
		test_parse_alone_rejects_directory_larger_than_capacity);
	tcase_add_test(tc, test_validate_rejects_running_total_over_capacity);
	tcase_add_test(tc, test_validate_accepts_exact_fit);
	tcase_add_test(tc, test_validate_no_overflow_with_many_0xffff_entries);
	tcase_add_test(tc, test_validate_returns_sizes_in_payload_order);
	tcase_add_test(tc,
		test_validate_hostile_directories_never_accept_out_of_bounds);
	tcase_set_timeout(tc, 60);	/* catches a hang, not slowness */
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(layout_suite());
	int failed;

	srunner_add_suite(sr, open_close_suite());
	srunner_add_suite(sr, validate_suite());
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
