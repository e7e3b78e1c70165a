/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_tbtrace_stats.c - the loss a trace holds reaches the statistics
 * Perfetto's UI shows as data loss (its badge, its Data Losses tab: the
 * stats of severity data_loss above 0), as the importer computes them
 * from the TraceStats packet (tools/tbcheck.h's model of it):
 *
 *   - the model itself, on the traces of Perfetto's own importer tests
 *     (test/trace_processor/diff_tests/parser/parsing/
 *     tests_traced_stats.py): the loss flags of a sequence count on the
 *     buffer its WriterStats names, its first packet's not at all, and a
 *     sequence whose every packet that needed incremental state was
 *     skipped counts as dropped;
 *   - tbtrace.h writes a WriterStats per sequence, under the buffer index
 *     tb_trace_write_buffer() was given, so each later loss flag shows as
 *     traced_buf_sequence_packet_loss of that buffer;
 *   - a loss flag on a sequence's first packet (which the importer does
 *     not count), and the loss of a sequence the writer's table had no
 *     room for, show as the buffer's trace_writer_packet_loss; a packet
 *     replaced as invalid shows as its abi_violations; a buffer index past
 *     those given to tb_trace_write_stats() gets a BufferStats of its own;
 *   - through a real central buffer and the batched (writev) path: a
 *     sequence whose first chunk carries the writer's loss flag shows.
 *
 * The table is made small here (TB_TRACE_SEQS 8: 6 sequences listed) so
 * that a test can fill it.
 */
#define TB_TRACE_SEQS	8u
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "tbtrace.h"
#include "tools/tbcheck.h"

/* ------------------------------------------------------------------------
 * A trace in memory.
 */
struct mem {
	uint8_t *p;
	size_t len, cap;
};

static int mem_write(void *ctx, const void *data, size_t len)
{
	struct mem *m = (struct mem *)ctx;

	if (m->cap - m->len < len) {
		m->cap = (m->cap + len) * 2;
		m->p = (uint8_t *)realloc(m->p, m->cap);
		ck_assert_ptr_nonnull(m->p);
	}
	memcpy(m->p + m->len, data, len);
	m->len += len;
	return 0;
}

static long mem_writev(void *ctx, const struct tb_trace_iov *iov, unsigned n)
{
	long total = 0;
	unsigned i;

	for (i = 0; i < n; i++) {
		mem_write(ctx, iov[i].base, iov[i].len);
		total += (long)iov[i].len;
	}
	return total;
}

static struct tb_trace_out *out_new(struct mem *m, bool vectored)
{
	struct tb_trace_out *o = (struct tb_trace_out *)calloc(1, sizeof(*o));

	ck_assert_ptr_nonnull(o);
	memset(m, 0, sizeof(*m));
	o->ctx = m;
	if (vectored)
		o->writev = mem_writev;
	else
		o->write = mem_write;
	return o;
}

/* tbcheck over @m, into @c (freed by the caller). */
static void check(struct tb_check *c, const struct mem *m)
{
	ck_assert_int_eq(tb_check_init(c, NULL, NULL, 0), TB_OK);
	ck_assert_int_eq(tb_check_trace(c, m->p, m->len), TB_OK);
}

static const struct tb_buf_ident id = { 1000, 42 };

/* A packet of sequence {@producer, @writer} with @loss bits: a counter. */
static void put(struct tb_trace_out *o, uint16_t producer, uint16_t writer,
		uint32_t loss)
{
	static uint8_t b[16];
	struct tb_buf_slice sl;
	struct tb_buf_packet pkt;
	size_t n = 0;

	n += tb_pb_uint(b + n, 8, 1000);	/* timestamp */
	sl.data = b;
	sl.size = n;
	memset(&pkt, 0, sizeof(pkt));
	pkt.slices = &sl;
	pkt.nslices = 1;
	pkt.size = n;
	pkt.producer_id = producer;
	pkt.writer_id = writer;
	pkt.ident = id;
	pkt.loss = loss;
	ck_assert_int_eq(tb_trace_write_packet(o, &pkt), 0);
}

/* The TraceStats packet, over @nbufs empty buffers. */
static void end(struct tb_trace_out *o, unsigned nbufs)
{
	static const struct tb_buf_stats none;
	const struct tb_buf_stats *bs[4] = { &none, &none, &none, &none };

	ck_assert_int_eq(tb_trace_write_stats(o, id, 2000, bs, nbufs, NULL),
			 0);
}

static uint64_t ui(const struct tb_check *c, int stat, unsigned i)
{
	return c->ui.buf[stat][i];
}

/* ------------------------------------------------------------------------
 * The model, on Perfetto's importer tests.
 */
struct tp {
	uint32_t seq;
	uint32_t dropped;
	uint32_t flags;
};

/* Packets @p (trusted_packet_sequence_id, dropped, flags), then @ts. */
static void raw_trace(struct mem *m, const struct tp *p, unsigned n,
		      const uint8_t *ts, size_t ts_n)
{
	uint8_t b[64], pk[128];
	size_t k;
	unsigned i;

	memset(m, 0, sizeof(*m));
	for (i = 0; i < n; i++) {
		k = 0;
		k += tb_pb_uint(b + k, TB_PB_TRUSTED_UID, 0);
		k += tb_pb_uint(b + k, TB_PB_TRUSTED_SEQ_ID, p[i].seq);
		if (p[i].dropped)
			k += tb_pb_uint(b + k, TB_PB_PREVIOUS_DROPPED,
					p[i].dropped);
		if (p[i].flags)
			k += tb_pb_uint(b + k, 13, p[i].flags);
		mem_write(m, pk, tb_pb_len(pk, TB_PB_TRACE_PACKET, k));
		mem_write(m, b, k);
	}
	k = 0;
	k += tb_pb_uint(b + k, TB_PB_TRUSTED_UID, 9999);
	k += tb_pb_uint(b + k, TB_PB_TRUSTED_SEQ_ID, 1);
	k += tb_pb_len(b + k, 35, ts_n);		/* trace_stats */
	mem_write(m, pk, tb_pb_len(pk, TB_PB_TRACE_PACKET, k + ts_n));
	mem_write(m, b, k);
	mem_write(m, ts, ts_n);
}

/* TraceStats with a WriterStats {@seq[i], @buf[i]} each. */
static size_t writer_stats(uint8_t *p, const uint32_t *seq,
			   const uint32_t *buf, unsigned n)
{
	uint8_t w[32];
	size_t k = 0, j;
	unsigned i;

	for (i = 0; i < n; i++) {
		j = 0;
		j += tb_pb_uint(w + j, 1, seq[i]);
		j += tb_pb_uint(w + j, 4, buf[i]);
		k += tb_pb_len(p + k, 18, j);
		memcpy(p + k, w, j);
		k += j;
	}
	return k;
}

/* parsing_traced_stats: test_sequence_packet_loss */
START_TEST(test_model_counts_loss_flags_but_not_the_first)
{
	static const struct tp p[] = {
		{ 2, 1, 0 }, { 2, 0, 0 }, { 2, 0, 0 },
		{ 3, 1, 0 }, { 3, 1, 0 }, { 3, 0, 0 },
		{ 4, 1, 0 }, { 4, 1, 0 }, { 4, 0, 0 },
		{ 5, 1, 0 }, { 5, 1, 0 }, { 5, 0, 0 },
	};
	static const uint32_t seq[] = { 2, 3, 4, 5 }, buf[] = { 0, 1, 2, 2 };
	uint8_t ts[128];
	struct tb_check c;
	struct mem m;
	uint64_t rows;

	raw_trace(&m, p, sizeof(p) / sizeof(p[0]), ts,
		  writer_stats(ts, seq, buf, 4));
	check(&c, &m);
	ck_assert_uint_eq(ui(&c, TB_CK_UI_SEQUENCE_PACKET_LOSS, 0), 0);
	ck_assert_uint_eq(ui(&c, TB_CK_UI_SEQUENCE_PACKET_LOSS, 1), 1);
	ck_assert_uint_eq(ui(&c, TB_CK_UI_SEQUENCE_PACKET_LOSS, 2), 2);
	ck_assert_uint_eq(tb_check_ui_loss(&c, &rows), 3);
	ck_assert_uint_eq(rows, 2);
	tb_check_destroy(&c);
	free(m.p);
}
END_TEST

/*
 * parsing_traced_stats: test_sequence_all_incremental_dropped, and a
 * sequence that had one packet skipped but not all
 */
START_TEST(test_model_counts_sequences_whose_state_never_came)
{
	static const struct tp p[] = {
		{ 2, 1, 1 }, { 2, 0, 2 }, { 2, 0, 2 },
		{ 3, 0, 2 }, { 3, 0, 2 },
		{ 4, 0, 2 },
		{ 6, 0, 2 }, { 6, 0, 1 }, { 6, 0, 2 },	/* one skipped: no */
	};
	static const uint32_t seq[] = { 2, 3, 4, 6 }, buf[] = { 0, 1, 1, 1 };
	uint8_t ts[128];
	struct tb_check c;
	struct mem m;

	raw_trace(&m, p, sizeof(p) / sizeof(p[0]), ts,
		  writer_stats(ts, seq, buf, 4));
	check(&c, &m);
	ck_assert_uint_eq(ui(&c, TB_CK_UI_INCREMENTAL_SEQUENCES_DROPPED, 0),
			  0);
	ck_assert_uint_eq(ui(&c, TB_CK_UI_INCREMENTAL_SEQUENCES_DROPPED, 1),
			  2);
	/* no WriterStats: the importer counts nothing of the flags */
	free(m.p);
	tb_check_destroy(&c);
	raw_trace(&m, p, sizeof(p) / sizeof(p[0]), ts, 0);
	check(&c, &m);
	ck_assert_uint_eq(tb_check_ui_loss(&c, NULL), 0);
	tb_check_destroy(&c);
	free(m.p);
}
END_TEST

/* ------------------------------------------------------------------------
 * What tbtrace.h writes.
 */

/* The WriterStats of @m's TraceStats, as {seq, buffer} pairs; how many. */
static unsigned listed(const struct mem *m, uint32_t *seq, uint32_t *buf,
		       unsigned max)
{
	struct tb_pb_reader r, s, w;
	struct tb_trace_packet tp;
	struct tb_pb_field f, g, h;
	unsigned n = 0;

	tb_pb_reader_init(&r, m->p, m->len);
	while (tb_trace_next(&r, &tp) > 0) {
		tb_pb_reader_init(&s, tp.data, tp.size);
		while (tb_pb_next(&s, &f) > 0) {
			if (f.number != 35 || f.type != TB_PB_LEN)
				continue;
			tb_pb_reader_init(&w, f.data, f.size);
			while (tb_pb_next(&w, &g) > 0) {
				struct tb_pb_reader e;

				if (g.number != 18 || g.type != TB_PB_LEN)
					continue;
				ck_assert_uint_lt(n, max);
				seq[n] = buf[n] = UINT32_MAX;
				tb_pb_reader_init(&e, g.data, g.size);
				while (tb_pb_next(&e, &h) > 0) {
					if (h.number == 1)
						seq[n] = (uint32_t)h.value;
					if (h.number == 4)
						buf[n] = (uint32_t)h.value;
				}
				n++;
			}
		}
	}
	return n;
}

static unsigned buffer_of(const uint32_t *seq, const uint32_t *buf,
			  unsigned n, uint32_t s)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (seq[i] == s)
			return buf[i];
	ck_abort_msg("sequence %#x not listed", s);
	return 0;
}

START_TEST(test_each_sequence_listed_under_its_buffer)
{
	struct mem m;
	struct tb_trace_out *o = out_new(&m, false);
	uint32_t seq[8], buf[8];
	struct tb_check c;
	uint64_t rows;
	unsigned n;

	o->buffer = 0;
	put(o, 1, 1, 0);
	put(o, 1, 1, TB_BUF_LOSS_PRESENT | TB_BUF_LOSS_OVERWRITE);
	put(o, 1, 2, 0);
	put(o, 1, 1, TB_BUF_LOSS_PRESENT);
	o->buffer = 1;
	put(o, 2, 1, 0);
	put(o, 2, 1, TB_BUF_LOSS_PRESENT | TB_BUF_LOSS_READ_GAP);
	end(o, 2);
	n = listed(&m, seq, buf, 8);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(buffer_of(seq, buf, n, tb_trace_seq_id(1, 1)), 0);
	ck_assert_uint_eq(buffer_of(seq, buf, n, tb_trace_seq_id(1, 2)), 0);
	ck_assert_uint_eq(buffer_of(seq, buf, n, tb_trace_seq_id(2, 1)), 1);
	check(&c, &m);
	ck_assert_uint_eq(ui(&c, TB_CK_UI_SEQUENCE_PACKET_LOSS, 0), 2);
	ck_assert_uint_eq(ui(&c, TB_CK_UI_SEQUENCE_PACKET_LOSS, 1), 1);
	ck_assert_uint_eq(tb_check_ui_loss(&c, &rows), 3);
	ck_assert_uint_eq(rows, 2);
	tb_check_destroy(&c);
	free(o);
	free(m.p);
}
END_TEST

START_TEST(test_loss_on_a_first_packet_shows)
{
	struct mem m;
	struct tb_trace_out *o = out_new(&m, false);
	struct tb_check c;

	put(o, 1, 1, TB_BUF_LOSS_PRESENT | TB_BUF_LOSS_SMB_FULL);
	put(o, 1, 1, 0);
	put(o, 1, 2, 0);
	end(o, 1);
	check(&c, &m);
	ck_assert_uint_eq(c.stats.lossy_packets, 1);
	/* the importer does not count it as sequence_packet_loss ... */
	ck_assert_uint_eq(ui(&c, TB_CK_UI_SEQUENCE_PACKET_LOSS, 0), 0);
	/* ... but the buffer's trace_writer_packet_loss says it */
	ck_assert_uint_eq(ui(&c, TB_CK_UI_TRACE_WRITER_PACKET_LOSS, 0), 1);
	ck_assert_uint_eq(tb_check_ui_loss(&c, NULL), 1);
	tb_check_destroy(&c);
	free(o);
	free(m.p);
}
END_TEST

START_TEST(test_invalid_packets_show_as_abi_violations)
{
	static const uint8_t bad[] = { 0x18, 0x01 };	/* trusted_uid */
	struct tb_buf_slice sl = { bad, sizeof(bad) };
	struct tb_buf_packet pkt;
	struct mem m;
	struct tb_trace_out *o = out_new(&m, false);
	struct tb_check c;

	memset(&pkt, 0, sizeof(pkt));
	pkt.slices = &sl;
	pkt.nslices = 1;
	pkt.size = sizeof(bad);
	pkt.producer_id = 1;
	pkt.writer_id = 1;
	pkt.ident = id;
	put(o, 1, 1, 0);
	o->buffer = 1;
	ck_assert_int_eq(tb_trace_write_packet(o, &pkt), 0);
	ck_assert_uint_eq(o->invalid_packets, 1);
	end(o, 2);
	check(&c, &m);
	ck_assert_uint_eq(c.stats.ts_invalid_packets, 1);
	ck_assert_uint_eq(ui(&c, TB_CK_UI_ABI_VIOLATIONS, 0), 0);
	ck_assert_uint_eq(ui(&c, TB_CK_UI_ABI_VIOLATIONS, 1), 1);
	/* and its stand-in's loss flag, on a sequence met before */
	ck_assert_uint_eq(ui(&c, TB_CK_UI_SEQUENCE_PACKET_LOSS, 0), 1);
	tb_check_destroy(&c);
	free(o);
	free(m.p);
}
END_TEST

START_TEST(test_sequences_past_the_table_still_show)
{
	struct mem m;
	struct tb_trace_out *o = out_new(&m, false);
	uint32_t seq[16], buf[16];
	struct tb_check c;
	uint16_t w;

	for (w = 1; w <= 10; w++) {
		put(o, 1, w, 0);
		put(o, 1, w, TB_BUF_LOSS_PRESENT | TB_BUF_LOSS_OVERWRITE);
	}
	ck_assert_uint_eq(o->nseqs, TB_TRACE_SEQS_LISTED);
	ck_assert_uint_eq(o->unlisted_seqs, 10 - TB_TRACE_SEQS_LISTED);
	end(o, 1);
	ck_assert_uint_eq(listed(&m, seq, buf, 16), TB_TRACE_SEQS_LISTED);
	check(&c, &m);
	ck_assert_uint_eq(ui(&c, TB_CK_UI_SEQUENCE_PACKET_LOSS, 0),
			  TB_TRACE_SEQS_LISTED);
	ck_assert_uint_eq(ui(&c, TB_CK_UI_TRACE_WRITER_PACKET_LOSS, 0),
			  10 - TB_TRACE_SEQS_LISTED);
	ck_assert_uint_eq(tb_check_ui_loss(&c, NULL), 10);
	tb_check_destroy(&c);
	free(o);
	free(m.p);
}
END_TEST

START_TEST(test_a_buffer_index_past_the_stats_gets_its_own)
{
	struct mem m;
	struct tb_trace_out *o = out_new(&m, false);
	uint32_t seq[4], buf[4];
	struct tb_check c;

	o->buffer = 3;
	put(o, 1, 1, TB_BUF_LOSS_PRESENT);
	end(o, 1);
	ck_assert_uint_eq(listed(&m, seq, buf, 4), 1);
	ck_assert_uint_eq(buf[0], 3);
	check(&c, &m);
	ck_assert_uint_eq(c.stats.ts_buffers, 4);
	ck_assert_uint_eq(ui(&c, TB_CK_UI_TRACE_WRITER_PACKET_LOSS, 3), 1);
	tb_check_destroy(&c);
	free(o);
	free(m.p);
}
END_TEST

/* A chunk of one whole packet (a timestamp) of {1, @writer}, @flags. */
static void commit(struct tb_buf *b, uint16_t writer, uint32_t chunk_id,
		   uint8_t flags)
{
	uint8_t p[8];
	struct tb_buf_frag fr;
	struct tb_buf_chunk_in in;

	fr.data = p;
	fr.size = (uint32_t)tb_pb_uint(p, 8, 100 + chunk_id);
	memset(&in, 0, sizeof(in));
	in.producer_id = 1;
	in.ident = id;
	in.writer_id = writer;
	in.chunk_id = chunk_id;
	in.flags = flags;
	in.complete = true;
	ck_assert_int_eq(tb_buf_copy_frags(b, &in, &fr, 1), TB_OK);
}

START_TEST(test_a_central_buffer_first_chunk_loss_shows)
{
	struct tb_buf *b = tb_buf_create(65536, TB_BUF_RING_BUFFER);
	struct mem m;
	struct tb_trace_out *o = out_new(&m, true);
	const struct tb_buf_stats *bs;
	struct tb_check c;

	commit(b, 1, 0, TB_BUF_DATA_LOSS);	/* refused before it */
	commit(b, 1, 1, 0);
	commit(b, 2, 0, 0);
	commit(b, 2, 1, 0);
	commit(b, 2, 3, 0);			/* chunk 2 missing */
	ck_assert_int_eq(tb_trace_write_buffer(o, b, 0), 5);
	bs = tb_buf_stats(b);
	ck_assert_int_eq(tb_trace_write_stats(o, id, 0, &bs, 1, NULL), 0);
	check(&c, &m);
	ck_assert_uint_eq(c.stats.lossy_packets, 2);
	ck_assert_uint_eq(ui(&c, TB_CK_UI_SEQUENCE_PACKET_LOSS, 0), 1);
	ck_assert_uint_eq(ui(&c, TB_CK_UI_TRACE_WRITER_PACKET_LOSS, 0), 1);
	tb_check_destroy(&c);
	tb_buf_destroy(b);
	free(o);
	free(m.p);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("tbtrace_stats");
	TCase *t = tcase_create("ui_loss");

	tcase_add_test(t, test_model_counts_loss_flags_but_not_the_first);
	tcase_add_test(t, test_model_counts_sequences_whose_state_never_came);
	tcase_add_test(t, test_each_sequence_listed_under_its_buffer);
	tcase_add_test(t, test_loss_on_a_first_packet_shows);
	tcase_add_test(t, test_invalid_packets_show_as_abi_violations);
	tcase_add_test(t, test_sequences_past_the_table_still_show);
	tcase_add_test(t, test_a_buffer_index_past_the_stats_gets_its_own);
	tcase_add_test(t, test_a_central_buffer_first_chunk_loss_shows);
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
