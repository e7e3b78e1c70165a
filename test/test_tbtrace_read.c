/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_tbtrace_read.c - the reading half of tbtrace.h, on tbpb.h's codec:
 *
 *   - tb_trace_packet_valid() gives one verdict for a packet's bytes
 *     however the central buffer sliced them (every cut in two and in
 *     three, empty slices among them), varints and keys cut across
 *     slices included: valid packets (keys of one, two and five bytes,
 *     10-byte varints, every wire type) and invalid ones (a reserved
 *     field, a group, an 11-byte varint, a field left open);
 *   - tb_trace_next() names its failure TB_EPROTOBUF, never -1 (TB_FULL);
 *   - a trace output whose write callback fails (any nonzero return:
 *     -1, a positive value) latches TB_EIO, and is not called again.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "tbtrace.h"

struct pkt {
	const char *what;
	int valid;
	uint8_t b[64];
	unsigned n;
};

static const struct pkt pkts[] = {
	{ "every wire type", 1,
	  { 0x40, 0x96, 0x01,				/* 8 varint */
	    0x09, 1, 2, 3, 4, 5, 6, 7, 8,		/* 1 fixed64 */
	    0x12, 0x02, 'h', 'i',			/* 2 len */
	    0x2d, 1, 2, 3, 4 }, 21 },			/* 5 fixed32 */
	{ "two-byte keys, 10-byte varint", 1,
	  { 0xe2, 0x03, 0x01, 0x00,			/* 60 len 1 */
	    0xd0, 0x02, 0xff, 0xff, 0xff, 0xff, 0xff,	/* 42 varint */
	    0xff, 0xff, 0xff, 0xff, 0x01 }, 16 },
	{ "five-byte key: the largest field", 1,
	  { 0xf8, 0xff, 0xff, 0xff, 0x0f, 0x07 }, 6 },
	{ "empty: no field", 1, { 0 }, 0 },
	{ "reserved trusted_pid (two-byte key)", 0,
	  { 0x40, 0x01, 0xf8, 0x04, 0x01 }, 5 },
	{ "reserved machine_id", 0, { 0x90, 0x06, 0x01 }, 3 },
	{ "reserved trace_config", 0, { 0x8a, 0x02, 0x00 }, 3 },
	{ "a group", 0, { 0x40, 0x01, 0x0b }, 3 },
	{ "11-byte varint value", 0,
	  { 0x40, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	    0x80, 0x00 }, 12 },
	{ "a length past the end: open at the end", 0,
	  { 0x12, 0x05, 'a', 'b' }, 4 },
	{ "a key cut short", 0, { 0x40, 0x01, 0xe2 }, 3 },
	{ "fixed64 cut short", 0, { 0x09, 1, 2, 3, 4, 5, 6, 7 }, 8 },
	{ "field 0", 0, { 0x00, 0x01 }, 2 },
};
#define NPKT (sizeof(pkts) / sizeof(pkts[0]))

static bool valid_as(const struct pkt *p, const unsigned *cut, unsigned ncut)
{
	struct tb_buf_slice s[4];
	struct tb_buf_packet pkt;
	unsigned i, at = 0;

	memset(&pkt, 0, sizeof(pkt));
	for (i = 0; i <= ncut; i++) {
		unsigned end = i < ncut ? cut[i] : p->n;

		s[i].data = p->b + at;
		s[i].size = end - at;
		at = end;
	}
	pkt.slices = s;
	pkt.nslices = ncut + 1;
	pkt.size = p->n;
	return tb_trace_packet_valid(&pkt);
}

START_TEST(test_packet_valid_whatever_the_slicing)
{
	unsigned i, a, b;

	for (i = 0; i < NPKT; i++) {
		const struct pkt *p = &pkts[i];

		ck_assert_msg(valid_as(p, NULL, 0) == !!p->valid, "%s",
			      p->what);
		for (a = 0; a <= p->n; a++) {
			unsigned c1[1] = { a };

			ck_assert_msg(valid_as(p, c1, 1) == !!p->valid,
				      "%s, cut at %u", p->what, a);
			for (b = a; b <= p->n; b++) {
				unsigned c2[2] = { a, b };

				ck_assert_msg(valid_as(p, c2, 2) ==
					      !!p->valid, "%s, cut at %u, %u",
					      p->what, a, b);
			}
		}
	}
}
END_TEST

START_TEST(test_trace_next_names_its_failure)
{
	/* one good record, then a record of field 2 */
	static const uint8_t wrong[] = { 0x0a, 0x02, 0x18, 0x05,
					 0x12, 0x00 };
	/* a record whose TracePacket is not protobuf */
	static const uint8_t inner[] = { 0x0a, 0x01, 0x0b };
	/* a trace cut inside a record */
	static const uint8_t cut[] = { 0x0a, 0x05, 0x18 };
	struct tb_pb_reader r;
	struct tb_trace_packet tp;

	tb_pb_reader_init(&r, wrong, sizeof(wrong));
	ck_assert_int_eq(tb_trace_next(&r, &tp), 1);
	ck_assert_uint_eq(tp.trusted_uid, 5);
	ck_assert_uint_eq(tp.has, TB_TRACE_HAS_UID);
	ck_assert_int_eq(tb_trace_next(&r, &tp), TB_EPROTOBUF);
	tb_pb_reader_init(&r, inner, sizeof(inner));
	ck_assert_int_eq(tb_trace_next(&r, &tp), TB_EPROTOBUF);
	tb_pb_reader_init(&r, cut, sizeof(cut));
	ck_assert_int_eq(tb_trace_next(&r, &tp), TB_EPROTOBUF);
	ck_assert_int_eq(tb_trace_next(&r, &tp), TB_EPROTOBUF);
	tb_pb_reader_init(&r, NULL, 0);
	ck_assert_int_eq(tb_trace_next(&r, &tp), 0);
}
END_TEST

struct failing {
	int ret;		/* what the callback returns */
	unsigned calls;
};

static int failing_write(void *ctx, const void *data, size_t len)
{
	struct failing *f = (struct failing *)ctx;

	(void)data;
	(void)len;
	f->calls++;
	return f->ret;
}

START_TEST(test_failed_write_is_tb_eio_whatever_it_returned)
{
	static const int rets[] = { -1, 1, -1000, TB_ENOMEM };
	struct tb_buf_slice sl = { pkts[0].b, pkts[0].n };
	struct tb_buf_packet pkt;
	unsigned i;

	memset(&pkt, 0, sizeof(pkt));
	pkt.slices = &sl;
	pkt.nslices = 1;
	pkt.size = sl.size;
	pkt.producer_id = 1;
	pkt.writer_id = 1;
	for (i = 0; i < sizeof(rets) / sizeof(rets[0]); i++) {
		struct failing f = { rets[i], 0 };
		struct tb_trace_out o;

		memset(&o, 0, sizeof(o));
		o.write = failing_write;
		o.ctx = &f;
		ck_assert_int_eq(tb_trace_write_packet(&o, &pkt), TB_EIO);
		ck_assert_int_eq(o.error, TB_EIO);
		ck_assert_uint_eq(f.calls, 1);
		ck_assert_int_eq(tb_trace_write_packet(&o, &pkt), TB_EIO);
		ck_assert_uint_eq(f.calls, 1);		/* latched */
	}
	ck_assert_int_ne(TB_EIO, TB_FULL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tbtrace_read");
	TCase *tc = tcase_create("read");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_packet_valid_whatever_the_slicing);
	tcase_add_test(tc, test_trace_next_names_its_failure);
	tcase_add_test(tc, test_failed_write_is_tb_eio_whatever_it_returned);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
