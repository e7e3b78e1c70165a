/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_tbpb.c - tbpb.h on its own: the protobuf codec every other header
 * encodes and decodes with.  Varints at their boundaries (exact bytes,
 * lengths, truncated and overlong input), field keys (every wire type,
 * the field number range), the field writers, the field reader on every
 * wire type and every malformation it must refuse, and the LEB128
 * framing of chunk payloads.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "tbpb.h"

/* Bytes of a varint by the definition: 7 bits a byte. */
static unsigned ref_len(uint64_t v)
{
	unsigned n = 1;

	for (; v >> 7; v >>= 7)
		n++;
	return n;
}

struct vcase {
	uint64_t v;
	unsigned len;
	uint8_t b[TB_PB_VARINT_MAX];
};

static const struct vcase vcases[] = {
	{ 0, 1, { 0x00 } },
	{ 1, 1, { 0x01 } },
	{ 127, 1, { 0x7f } },
	{ 128, 2, { 0x80, 0x01 } },
	{ 300, 2, { 0xac, 0x02 } },
	{ 16383, 2, { 0xff, 0x7f } },
	{ 16384, 3, { 0x80, 0x80, 0x01 } },
	{ 0x0fffffffu, 4, { 0xff, 0xff, 0xff, 0x7f } },	/* abort mark */
	{ 0xffffffffu, 5, { 0xff, 0xff, 0xff, 0xff, 0x0f } },
	{ 0x100000000ull, 5, { 0x80, 0x80, 0x80, 0x80, 0x10 } },
	{ 1ull << 63, 10, { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
			    0x80, 0x01 } },
	{ ~0ull, 10, { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		       0xff, 0x01 } },
};
#define NV (sizeof(vcases) / sizeof(vcases[0]))

START_TEST(test_varint_boundaries_exact_bytes)
{
	unsigned i;

	for (i = 0; i < NV; i++) {
		const struct vcase *c = &vcases[i];
		uint8_t b[TB_PB_VARINT_MAX + 2];
		uint64_t v = 12345;

		memset(b, 0xee, sizeof(b));
		ck_assert_uint_eq(tb_pb_varint_len(c->v), c->len);
		ck_assert_uint_eq(tb_pb_varint_put(b, c->v), c->len);
		ck_assert_ptr_eq(tb__pb_varint_at(b, c->v), b + c->len);
		ck_assert_mem_eq(b, c->b, c->len);
		ck_assert_uint_eq(b[c->len], 0xee);	/* nothing past it */
		ck_assert_uint_eq(tb_pb_varint_get(c->b, c->len, &v), c->len);
		ck_assert_uint_eq(v, c->v);
		/* with more bytes readable it still stops at its end */
		ck_assert_uint_eq(tb_pb_varint_get(b, sizeof(b), &v), c->len);
		ck_assert_uint_eq(v, c->v);
	}
}
END_TEST

START_TEST(test_varint_every_bit_length_round_trips)
{
	unsigned bits;

	for (bits = 0; bits <= 64; bits++) {
		uint64_t top = bits ? 1ull << (bits - 1) : 0;
		uint64_t vs[3] = { top, top ? top | (top - 1) : 0, top + 1 };
		unsigned k;

		if (bits == 64)
			vs[2] = ~0ull - 1;
		for (k = 0; k < 3; k++) {
			uint8_t b[TB_PB_VARINT_MAX], w[TB_PB_VARINT_MAX + 8];
			uint64_t v = ~vs[k];
			unsigned n = tb_pb_varint_put(b, vs[k]);

			ck_assert_uint_eq(n, ref_len(vs[k]));
			ck_assert_uint_eq(tb_pb_varint_len(vs[k]), n);
			/* the length without a count of leading zeros */
			if (vs[k] >= 0x80u)
				ck_assert_uint_eq(tb__pb_varint_len_cmp(vs[k]),
						  n);
			ck_assert_uint_eq(tb_pb_varint_get(b, n, &v), n);
			ck_assert_uint_eq(v, vs[k]);
			/* the same bytes written as one word, 8 bytes room */
			memset(w, 0xee, sizeof(w));
			ck_assert_ptr_eq(tb__pb_varint_wide_at(w, vs[k], n),
					 w + n);
			ck_assert_mem_eq(w, b, n);
		}
	}
}
END_TEST

START_TEST(test_varint_truncated_is_refused)
{
	unsigned i, avail;

	for (i = 0; i < NV; i++) {
		const struct vcase *c = &vcases[i];

		for (avail = 0; avail < c->len; avail++) {
			uint64_t v = 77;

			ck_assert_uint_eq(tb_pb_varint_get(c->b, avail, &v), 0);
			ck_assert_uint_eq(v, 77);	/* untouched */
		}
	}
	ck_assert_uint_eq(tb_pb_varint_get(NULL, 0, NULL), 0);
}
END_TEST

START_TEST(test_varint_overlong_is_refused)
{
	/* 11 bytes: ten continuation bytes, then the last */
	static const uint8_t v11[11] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
					 0x80, 0x80, 0x80, 0x80, 0x00 };
	/* ten bytes, the last with bits past 64: kept to 64 bits */
	static const uint8_t v10[10] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					 0xff, 0xff, 0xff, 0x7f };
	/* a value padded to ten bytes: not the shortest, still a varint */
	static const uint8_t pad[10] = { 0x81, 0x80, 0x80, 0x80, 0x80, 0x80,
					 0x80, 0x80, 0x80, 0x00 };
	uint64_t v = 0;

	ck_assert_uint_eq(tb_pb_varint_get(v11, sizeof(v11), &v), 0);
	ck_assert_uint_eq(tb_pb_varint_get(v11 + 1, 10, &v), 10);
	ck_assert_uint_eq(v, 0);
	ck_assert_uint_eq(tb_pb_varint_get(v10, sizeof(v10), &v), 10);
	ck_assert_uint_eq(v, ~0ull);
	ck_assert_uint_eq(tb_pb_varint_get(pad, sizeof(pad), &v), 10);
	ck_assert_uint_eq(v, 1);
}
END_TEST

static const unsigned types[] = {
	TB_PB_VARINT, TB_PB_FIXED64, TB_PB_LEN, TB_PB_FIXED32,
};

START_TEST(test_keys_every_wire_type_and_field_range)
{
	static const uint32_t fields[] = {
		1, 15, 16, 2047, 2048, 262143, 262144, TB_PB_FIELD_MAX,
	};
	unsigned i, t, type;

	ck_assert_uint_eq(TB_PB_VARINT, 0);
	ck_assert_uint_eq(TB_PB_FIXED64, 1);
	ck_assert_uint_eq(TB_PB_LEN, 2);
	ck_assert_uint_eq(TB_PB_FIXED32, 5);
	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		for (t = 0; t < 4; t++) {
			uint64_t k = tb__pb_key(fields[i], types[t]), v = 0;
			uint8_t b[TB_PB_VARINT_MAX], r[TB_PB_VARINT_MAX];
			uint8_t *end = tb__pb_tag_at(b, fields[i], types[t]);
			unsigned n = tb_pb_varint_put(r, k);

			ck_assert_uint_eq(k, (uint64_t)fields[i] << 3 |
					     types[t]);
			ck_assert(tb__pb_key_ok(k));
			ck_assert_uint_eq((unsigned)(end - b), n);
			ck_assert_mem_eq(b, r, n);
			ck_assert_uint_eq(tb__pb_tag_len(fields[i]), n);
			ck_assert_uint_eq(tb_pb_varint_get(b, n, &v), n);
			ck_assert_uint_eq(v, k);
		}
		/* groups (3, 4) and the unused 6, 7 */
		for (type = 3; type < 8; type++)
			if (type != TB_PB_FIXED32)
				ck_assert(!tb__pb_key_ok(
					tb__pb_key(fields[i], type)));
	}
	for (t = 0; t < 4; t++) {
		ck_assert(!tb__pb_key_ok(tb__pb_key(0, types[t])));
		ck_assert(!tb__pb_key_ok((uint64_t)(TB_PB_FIELD_MAX + 1ull)
					 << 3 | types[t]));
	}
	ck_assert_uint_eq(tb__pb_fixed_size(TB_PB_FIXED64), 8);
	ck_assert_uint_eq(tb__pb_fixed_size(TB_PB_FIXED32), 4);
	ck_assert_uint_eq(tb__pb_fixed_size(TB_PB_VARINT), 0);
	ck_assert_uint_eq(tb__pb_fixed_size(TB_PB_LEN), 0);
}
END_TEST

START_TEST(test_field_writers_exact_bytes)
{
	static const uint8_t u[] = { 0x08, 0x96, 0x01 };	/* 1: 150 */
	static const uint8_t neg[] = { 0xf8, 0x04, 0xff, 0xff, 0xff, 0xff,
				       0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
	static const uint8_t len[] = { 0xe2, 0x03, 0x80, 0x01 }; /* 60: 128 */
	static const uint8_t f64[] = { 0xf9, 0x02, 0x08, 0x07, 0x06, 0x05,
				       0x04, 0x03, 0x02, 0x01 };
	uint8_t b[32];

	ck_assert_uint_eq(tb_pb_uint(b, 1, 150), sizeof(u));
	ck_assert_mem_eq(b, u, sizeof(u));
	ck_assert_ptr_eq(tb__pb_uint_at(b, 1, 150), b + sizeof(u));
	/* int64 -1 on field 79: sign-extended, ten bytes */
	ck_assert_uint_eq(tb_pb_int(b, 79, -1), sizeof(neg));
	ck_assert_mem_eq(b, neg, sizeof(neg));
	ck_assert_uint_eq(tb_pb_len(b, 60, 128), sizeof(len));
	ck_assert_mem_eq(b, len, sizeof(len));
	ck_assert_ptr_eq(tb__pb_len_at(b, 60, 128), b + sizeof(len));
	ck_assert_uint_eq(tb_pb_fixed64(b, 47, 0x0102030405060708ull),
			  sizeof(f64));
	ck_assert_mem_eq(b, f64, sizeof(f64));
	ck_assert_ptr_eq(tb__pb_fixed64_at(b, 47, 1), b + sizeof(f64));
}
END_TEST

START_TEST(test_reader_every_wire_type)
{
	static const uint8_t in[] = {
		0x08, 0x96, 0x01,			/* 1 varint 150 */
		0x11, 1, 2, 3, 4, 5, 6, 7, 8,		/* 2 fixed64 */
		0x1a, 0x03, 'a', 'b', 'c',		/* 3 len "abc" */
		0x25, 0x78, 0x56, 0x34, 0x12,		/* 4 fixed32 */
		0xf8, 0xff, 0xff, 0xff, 0x0f, 0x00,	/* field max: 0 */
		0x2a, 0x00,				/* 5 len, empty */
	};
	struct tb_pb_reader r;
	struct tb_pb_field f;

	tb_pb_reader_init(&r, in, sizeof(in));
	ck_assert_int_eq(tb_pb_next(&r, &f), 1);
	ck_assert_uint_eq(f.number, 1);
	ck_assert_uint_eq(f.type, TB_PB_VARINT);
	ck_assert_uint_eq(f.value, 150);
	ck_assert_int_eq(tb_pb_next(&r, &f), 1);
	ck_assert_uint_eq(f.number, 2);
	ck_assert_uint_eq(f.type, TB_PB_FIXED64);
	ck_assert_uint_eq(f.value, 0x0807060504030201ull);
	ck_assert_int_eq(tb_pb_next(&r, &f), 1);
	ck_assert_uint_eq(f.number, 3);
	ck_assert_uint_eq(f.type, TB_PB_LEN);
	ck_assert_uint_eq(f.size, 3);
	ck_assert_ptr_eq(f.data, in + 14);
	ck_assert_int_eq(tb_pb_next(&r, &f), 1);
	ck_assert_uint_eq(f.number, 4);
	ck_assert_uint_eq(f.type, TB_PB_FIXED32);
	ck_assert_uint_eq(f.value, 0x12345678u);
	ck_assert_int_eq(tb_pb_next(&r, &f), 1);
	ck_assert_uint_eq(f.number, TB_PB_FIELD_MAX);
	ck_assert_uint_eq(f.value, 0);
	ck_assert_int_eq(tb_pb_next(&r, &f), 1);
	ck_assert_uint_eq(f.number, 5);
	ck_assert_uint_eq(f.size, 0);
	ck_assert_int_eq(tb_pb_next(&r, &f), 0);
	ck_assert_int_eq(tb_pb_next(&r, &f), 0);
	tb_pb_reader_init(&r, NULL, 0);		/* an empty input */
	ck_assert_int_eq(tb_pb_next(&r, &f), 0);
}
END_TEST

struct bad {
	const char *what;
	uint8_t b[16];
	unsigned n;
};

static const struct bad bads[] = {
	{ "field 0", { 0x00, 0x01 }, 2 },
	{ "field past the max", { 0x80, 0x80, 0x80, 0x80, 0x20, 0x00 }, 6 },
	{ "group start", { 0x0b }, 1 },
	{ "group end", { 0x0c }, 1 },
	{ "wire type 6", { 0x0e, 0x00 }, 2 },
	{ "wire type 7", { 0x0f, 0x00 }, 2 },
	{ "key cut short", { 0x80 }, 1 },
	{ "varint value cut short", { 0x08, 0x80 }, 2 },
	{ "varint value of 11 bytes", { 0x08, 0x80, 0x80, 0x80, 0x80, 0x80,
					0x80, 0x80, 0x80, 0x80, 0x80, 0x00 },
	  12 },
	{ "fixed64 of 7 bytes", { 0x09, 1, 2, 3, 4, 5, 6, 7 }, 8 },
	{ "fixed32 of 3 bytes", { 0x0d, 1, 2, 3 }, 4 },
	{ "length past the end", { 0x0a, 0x03, 'a', 'b' }, 4 },
	{ "length cut short", { 0x0a, 0x80 }, 2 },
	{ "length of 2^64 - 1", { 0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
				  0xff, 0xff, 0xff, 0x01 }, 11 },
};
#define NBAD (sizeof(bads) / sizeof(bads[0]))

START_TEST(test_reader_refuses_malformed_input_latched)
{
	static const uint8_t ok[] = { 0x08, 0x01 };
	unsigned i;

	for (i = 0; i < NBAD; i++) {
		uint8_t in[32];
		struct tb_pb_reader r;
		struct tb_pb_field f;

		/* a good field first, so the failure is mid-input */
		memcpy(in, ok, sizeof(ok));
		memcpy(in + sizeof(ok), bads[i].b, bads[i].n);
		tb_pb_reader_init(&r, in, sizeof(ok) + bads[i].n);
		ck_assert_int_eq(tb_pb_next(&r, &f), 1);
		ck_assert_msg(tb_pb_next(&r, &f) == TB_EPROTOBUF, "%s",
			      bads[i].what);
		ck_assert_int_eq(tb_pb_next(&r, &f), TB_EPROTOBUF);
		ck_assert_int_eq(r.bad, 1);
	}
	ck_assert_int_ne(TB_EPROTOBUF, TB_FULL);
	ck_assert_str_eq(tb_strerror(TB_EPROTOBUF), "malformed protobuf");
}
END_TEST

START_TEST(test_framing_leb128_fragments)
{
	/* "ab", an empty packet, "c", then the abort marker and junk */
	static const uint8_t in[] = { 0x02, 'a', 'b', 0x00, 0x01, 'c',
				      0xff, 0xff, 0xff, 0x7f, 0x01, 'x' };
	static const uint8_t past[] = { 0x03, 'a', 'b' };
	static const uint8_t cut[] = { 0x02, 'a', 'b', 0x80 };
	static const uint8_t big[] = { 0x80, 0x01, 'a' };	/* 128 */
	struct tb_pb_frags it;
	const uint8_t *d = NULL;
	uint32_t len = 99;

	tb_pb_frags_init(&it, in, sizeof(in), 0);
	ck_assert_int_eq(tb_pb_frags_next(&it, &d, &len), TB_PB_FRAG_OK);
	ck_assert_ptr_eq(d, in + 1);
	ck_assert_uint_eq(len, 2);
	ck_assert_int_eq(tb_pb_frags_next(&it, &d, &len), TB_PB_FRAG_OK);
	ck_assert_uint_eq(len, 0);
	ck_assert_int_eq(tb_pb_frags_next(&it, &d, &len), TB_PB_FRAG_OK);
	ck_assert_ptr_eq(d, in + 5);
	ck_assert_uint_eq(len, 1);
	ck_assert_uint_eq(it.off, 6);
	ck_assert_int_eq(tb_pb_frags_next(&it, &d, &len), TB_PB_FRAG_ABORT);
	ck_assert_uint_eq(it.off, 6);		/* not advanced */
	ck_assert_int_eq(tb_pb_frags_next(&it, &d, &len), TB_PB_FRAG_ABORT);
	/* from an offset, and at the very end */
	tb_pb_frags_init(&it, in, 6, 3);
	ck_assert_int_eq(tb_pb_frags_next(&it, &d, &len), TB_PB_FRAG_OK);
	ck_assert_int_eq(tb_pb_frags_next(&it, &d, &len), TB_PB_FRAG_OK);
	ck_assert_int_eq(tb_pb_frags_next(&it, &d, &len), TB_PB_FRAG_END);
	tb_pb_frags_init(&it, in, 0, 0);
	ck_assert_int_eq(tb_pb_frags_next(&it, &d, &len), TB_PB_FRAG_END);
	/* a length past the end, a length cut short: bad, not advanced */
	tb_pb_frags_init(&it, past, sizeof(past), 0);
	ck_assert_int_eq(tb_pb_frags_next(&it, &d, &len), TB_PB_FRAG_BAD);
	ck_assert_uint_eq(it.off, 0);
	tb_pb_frags_init(&it, cut, sizeof(cut), 0);
	ck_assert_int_eq(tb_pb_frags_next(&it, &d, &len), TB_PB_FRAG_OK);
	ck_assert_int_eq(tb_pb_frags_next(&it, &d, &len), TB_PB_FRAG_BAD);
	ck_assert_uint_eq(it.off, 3);
	tb_pb_frags_init(&it, big, sizeof(big), 0);
	ck_assert_int_eq(tb_pb_frags_next(&it, &d, &len), TB_PB_FRAG_BAD);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tbpb");
	TCase *tv = tcase_create("varint");
	TCase *tf = tcase_create("fields");
	TCase *tr = tcase_create("framing");
	SRunner *sr;
	int failed;

	tcase_add_test(tv, test_varint_boundaries_exact_bytes);
	tcase_add_test(tv, test_varint_every_bit_length_round_trips);
	tcase_add_test(tv, test_varint_truncated_is_refused);
	tcase_add_test(tv, test_varint_overlong_is_refused);
	tcase_add_test(tf, test_keys_every_wire_type_and_field_range);
	tcase_add_test(tf, test_field_writers_exact_bytes);
	tcase_add_test(tf, test_reader_every_wire_type);
	tcase_add_test(tf, test_reader_refuses_malformed_input_latched);
	tcase_add_test(tr, test_framing_leb128_fragments);
	suite_add_tcase(s, tv);
	suite_add_tcase(s, tf);
	suite_add_tcase(s, tr);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
