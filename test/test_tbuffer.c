/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Tests for tbuffer.h: one test per behaviour of the central trace buffer,
 * with the expected values taken from the behaviour of Perfetto's
 * TraceBufferV2, or, where tbuffer.h's header comment lists a departure
 * from it, from that comment.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tbuffer.h"

#define F	TB_BUF_FIRST_CONT
#define L	TB_BUF_LAST_CONT
#define NP	TB_BUF_NEEDS_PATCH
#define PRESENT	TB_BUF_LOSS_PRESENT

/* ---- Helpers ------------------------------------------------------------ */

/* A chunk payload in shared-memory framing, built fragment by fragment. */
struct chunk {
	uint8_t b[70000];
	size_t len;
	uint16_t n;
};

static void ch_init(struct chunk *c)
{
	c->len = 0;
	c->n = 0;
}

/* Appends a fragment of @size bytes of @fill with a minimal varint. */
static void ch_frag(struct chunk *c, uint32_t size, char fill)
{
	c->len += tb_pb_varint_put(c->b + c->len, size);
	memset(c->b + c->len, fill, size);
	c->len += size;
	c->n++;
}

/* Appends a fragment with the given bytes. */
static void ch_data(struct chunk *c, const char *s)
{
	uint32_t size = (uint32_t)strlen(s);

	c->len += tb_pb_varint_put(c->b + c->len, size);
	memcpy(c->b + c->len, s, size);
	c->len += size;
	c->n++;
}

/* Appends raw bytes that are not a fragment of their own. */
static void ch_raw(struct chunk *c, const void *p, size_t n)
{
	memcpy(c->b + c->len, p, n);
	c->len += n;
}

static struct tb_buf_chunk_in mk_in(uint16_t p, uint16_t w, uint32_t id,
				    uint8_t flags, const struct chunk *c)
{
	struct tb_buf_chunk_in in;

	memset(&in, 0, sizeof(in));
	in.producer_id = p;
	in.ident.uid = 1000u + p;
	in.ident.pid = 100 + p;
	in.writer_id = w;
	in.chunk_id = id;
	in.flags = flags;
	in.nfrags = c->n;
	in.complete = true;
	in.payload = c->b;
	in.size = c->len;
	return in;
}

static int put(struct tb_buf *b, uint16_t p, uint16_t w, uint32_t id,
	       uint8_t flags, const struct chunk *c)
{
	struct tb_buf_chunk_in in = mk_in(p, w, id, flags, c);

	return tb_buf_copy_chunk(b, &in);
}

/* Commits one chunk whose fragments are the strings up to NULL. */
static int put_f(struct tb_buf *b, uint16_t p, uint16_t w, uint32_t id,
		 unsigned flags, ...)
{
	static struct chunk c;
	const char *frag;
	va_list ap;

	ch_init(&c);
	va_start(ap, flags);
	while ((frag = va_arg(ap, const char *)))
		ch_data(&c, frag);
	va_end(ap);
	return put(b, p, w, id, (uint8_t)flags, &c);
}

/* Commits a scraped (incomplete) chunk of @size SMB bytes. */
static int put_scraped(struct tb_buf *b, uint16_t p, uint16_t w, uint32_t id,
		       uint8_t flags, const struct chunk *c, size_t size)
{
	struct tb_buf_chunk_in in = mk_in(p, w, id, flags, c);

	in.complete = false;
	in.size = size;
	return tb_buf_copy_chunk(b, &in);
}

/* Commits a chunk of whole packets, one per character of @s. */
static int put_s(struct tb_buf *b, uint16_t p, uint16_t w, uint32_t id,
		 const char *s)
{
	struct chunk c;

	ch_init(&c);
	for (; *s; s++)
		ch_frag(&c, 4, *s);
	return put(b, p, w, id, 0, &c);
}

/* One packet read back, flattened. */
struct pkt {
	uint16_t p, w;
	uint32_t loss;
	unsigned nslices;
	size_t size;
	char str[512];
	struct tb_buf_ident ident;
};

static void flatten(const struct tb_buf_packet *tp, struct pkt *o)
{
	size_t off = 0;
	unsigned i;

	memset(o, 0, sizeof(*o));
	o->p = tp->producer_id;
	o->w = tp->writer_id;
	o->loss = tp->loss;
	o->nslices = tp->nslices;
	o->size = tp->size;
	o->ident = tp->ident;
	for (i = 0; i < tp->nslices; i++) {
		size_t n = tp->slices[i].size;

		if (n > sizeof(o->str) - 1 - off)
			n = sizeof(o->str) - 1 - off;
		memcpy(o->str + off, tp->slices[i].data, n);
		off += n;
	}
}

/* Begins a read and reads up to @max packets. */
static int read_all(struct tb_buf *b, struct pkt *out, int max)
{
	struct tb_buf_packet tp;
	int n = 0;

	tb_buf_begin_read(b);
	while (n < max && tb_buf_read_packet(b, &tp))
		flatten(&tp, &out[n++]);
	return n;
}

/* Reads everything; returns the first character of each packet. */
static const char *read_str(struct tb_buf *b)
{
	static char s[4096];
	struct tb_buf_packet tp;
	size_t n = 0;

	tb_buf_begin_read(b);
	while (n < sizeof(s) - 1 && tb_buf_read_packet(b, &tp))
		s[n++] = tp.nslices ? (char)tp.slices[0].data[0] : '?';
	s[n] = 0;
	return s;
}

static struct pkt pk[8192];

/* ---- Storage and basic reading ------------------------------------------ */

START_TEST(test_buffer_size_rounds_up_to_page)
{
	struct tb_buf *b = tb_buf_create(3072, TB_BUF_RING_BUFFER);

	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(tb_buf_stats(b)->buffer_size, 4096);
	tb_buf_destroy(b);
	b = tb_buf_create(0, TB_BUF_RING_BUFFER);
	ck_assert_uint_eq(tb_buf_stats(b)->buffer_size, 4096);
	tb_buf_destroy(b);
	b = tb_buf_create(8193, TB_BUF_DISCARD);
	ck_assert_uint_eq(tb_buf_stats(b)->buffer_size, 12288);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_whole_packets_come_back_in_order_with_identity)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct chunk c;

	ch_init(&c);
	ch_data(&c, "one");
	ch_data(&c, "two");
	ch_data(&c, "three");
	ck_assert_int_eq(put(b, 7, 3, 1, 0, &c), TB_OK);
	ck_assert_int_eq(read_all(b, pk, 10), 3);
	ck_assert_str_eq(pk[0].str, "one");
	ck_assert_str_eq(pk[1].str, "two");
	ck_assert_str_eq(pk[2].str, "three");
	ck_assert_uint_eq(pk[0].p, 7);
	ck_assert_uint_eq(pk[0].w, 3);
	ck_assert_uint_eq(pk[0].ident.uid, 1007);
	ck_assert_int_eq(pk[0].ident.pid, 107);
	ck_assert_uint_eq(pk[0].nslices, 1);
	ck_assert_uint_eq(pk[2].size, 5);
	ck_assert_uint_eq(pk[0].loss, 0);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_reading_is_destructive)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	put_s(b, 1, 1, 1, "ab");
	ck_assert_str_eq(read_str(b), "ab");
	ck_assert_str_eq(read_str(b), "");
	put_s(b, 1, 1, 2, "c");
	ck_assert_str_eq(read_str(b), "c");
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_empty_buffer_reads_nothing)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct tb_buf_packet tp;

	tb_buf_begin_read(b);
	ck_assert(!tb_buf_read_packet(b, &tp));
	ck_assert(!tb_buf_read_packet(b, &tp));
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_empty_packet_is_consumed_but_never_returned)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct chunk c;

	ch_init(&c);
	ch_frag(&c, 0, 0);
	ch_data(&c, "x");
	ch_frag(&c, 0, 0);
	put(b, 1, 1, 1, 0, &c);
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_str_eq(pk[0].str, "x");
	ck_assert_uint_eq(pk[0].loss, 0);
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_read, 1);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_records_are_header_plus_16_aligned_payload)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct chunk c;

	/* 1 + 9 = 10 payload bytes: 16 + 10 -> 32. */
	ch_init(&c);
	ch_frag(&c, 9, 'a');
	put(b, 1, 1, 1, 0, &c);
	ck_assert_uint_eq(tb_buf_stats(b)->bytes_written, 32);
	/* 1 + 15 = 16 bytes: exactly 32. */
	ch_init(&c);
	ch_frag(&c, 15, 'b');
	put(b, 1, 1, 2, 0, &c);
	ck_assert_uint_eq(tb_buf_stats(b)->bytes_written, 64);
	/* 1 + 16 = 17 bytes: 48. */
	ch_init(&c);
	ch_frag(&c, 16, 'c');
	put(b, 1, 1, 3, 0, &c);
	ck_assert_uint_eq(tb_buf_stats(b)->bytes_written, 112);
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_written, 3);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_trailing_bytes_after_declared_fragments_are_not_stored)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct chunk c;
	struct tb_buf_chunk_in in;

	ch_init(&c);
	ch_data(&c, "keep");
	ch_data(&c, "padding-of-the-smb-chunk");
	in = mk_in(1, 1, 1, 0, &c);
	in.nfrags = 1;
	ck_assert_int_eq(tb_buf_copy_chunk(b, &in), TB_OK);
	ck_assert_uint_eq(tb_buf_stats(b)->bytes_written, 32);
	ck_assert_uint_eq(tb_buf_stats(b)->abi_violations, 0);
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_str_eq(pk[0].str, "keep");
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_global_order_follows_write_order)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	put_s(b, 1, 1, 1, "a");
	put_s(b, 2, 1, 1, "b");
	put_s(b, 1, 1, 2, "c");
	put_s(b, 2, 1, 2, "d");
	ck_assert_str_eq(read_str(b), "abcd");
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_sequences_are_keyed_by_producer_and_writer)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	/* Same chunk id on three different sequences: three chunks. */
	put_s(b, 1, 2, 9, "a");
	put_s(b, 2, 1, 9, "b");
	put_s(b, 2, 2, 9, "c");
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_written, 3);
	ck_assert_int_eq(read_all(b, pk, 10), 3);
	ck_assert_uint_eq(pk[0].p, 1);
	ck_assert_uint_eq(pk[0].w, 2);
	ck_assert_uint_eq(pk[1].p, 2);
	ck_assert_uint_eq(pk[1].w, 1);
	ck_assert_uint_eq(pk[2].loss, 0);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_identity_comes_from_the_first_commit)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct chunk c;
	struct tb_buf_chunk_in in;

	ch_init(&c);
	ch_data(&c, "a");
	in = mk_in(1, 1, 1, 0, &c);
	in.ident.uid = 42;
	tb_buf_copy_chunk(b, &in);
	in = mk_in(1, 1, 2, 0, &c);
	in.ident.uid = 43;
	tb_buf_copy_chunk(b, &in);
	ck_assert_int_eq(read_all(b, pk, 10), 2);
	ck_assert_uint_eq(pk[0].ident.uid, 42);
	ck_assert_uint_eq(pk[1].ident.uid, 42);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_write_ends_the_read_batch)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct tb_buf_packet tp;

	put_s(b, 1, 1, 1, "ab");
	tb_buf_begin_read(b);
	ck_assert(tb_buf_read_packet(b, &tp));
	put_s(b, 1, 1, 2, "c");
	ck_assert(!tb_buf_read_packet(b, &tp));
	ck_assert_str_eq(read_str(b), "bc");
	tb_buf_destroy(b);
}
END_TEST

/* ---- Fragment types at chunk edges -------------------------------------- */

START_TEST(test_lone_fragment_with_both_flags_is_a_continuation)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	put_f(b, 1, 1, 1, L, "w", "beg-", NULL);
	put_f(b, 1, 1, 2, F | L, "mid-", NULL);
	put_f(b, 1, 1, 3, F, "end", "z", NULL);
	ck_assert_int_eq(read_all(b, pk, 10), 3);
	ck_assert_str_eq(pk[0].str, "w");
	ck_assert_str_eq(pk[1].str, "beg-mid-end");
	ck_assert_uint_eq(pk[1].nslices, 3);
	ck_assert_uint_eq(pk[1].size, 11);
	ck_assert_str_eq(pk[2].str, "z");
	ck_assert_uint_eq(pk[1].loss | pk[2].loss, 0);
	ck_assert_uint_eq(tb_buf_stats(b)->readaheads_succeeded, 1);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_lone_fragment_with_first_flag_is_an_end)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	put_f(b, 1, 1, 1, L, "beg-", NULL);
	put_f(b, 1, 1, 2, F, "end", NULL);
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_str_eq(pk[0].str, "beg-end");
	ck_assert_uint_eq(pk[0].nslices, 2);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_lone_fragment_with_last_flag_is_a_begin)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	put_f(b, 1, 1, 1, L, "beg-", NULL);
	/* A Begin waits for its continuation: nothing comes out. */
	ck_assert_int_eq(read_all(b, pk, 10), 0);
	ck_assert_uint_eq(tb_buf_stats(b)->readaheads_failed, 1);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_first_flag_applies_only_to_the_first_fragment)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	/* No Begin before: the End is an orphan; the rest are whole. */
	put_f(b, 1, 1, 1, F, "orphan", "a", "b", NULL);
	ck_assert_int_eq(read_all(b, pk, 10), 2);
	ck_assert_str_eq(pk[0].str, "a");
	ck_assert_uint_eq(pk[0].loss,
			  PRESENT | TB_BUF_LOSS_ORPHAN_CONTINUATION);
	ck_assert_str_eq(pk[1].str, "b");
	ck_assert_uint_eq(pk[1].loss, 0);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_last_flag_applies_only_to_the_last_fragment)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	put_f(b, 1, 1, 1, L, "a", "b", "beg-", NULL);
	put_f(b, 1, 1, 2, F, "end", NULL);
	ck_assert_int_eq(read_all(b, pk, 10), 3);
	ck_assert_str_eq(pk[0].str, "a");
	ck_assert_str_eq(pk[1].str, "b");
	ck_assert_str_eq(pk[2].str, "beg-end");
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_orphan_continuation_is_consumed_and_reported)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	put_f(b, 1, 1, 5, F | L, "mid", NULL);
	put_f(b, 1, 1, 6, F, "end", "x", NULL);
	/* Continue then End without a Begin: both orphans. */
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_str_eq(pk[0].str, "x");
	ck_assert_uint_eq(pk[0].loss,
			  PRESENT | TB_BUF_LOSS_ORPHAN_CONTINUATION);
	tb_buf_destroy(b);
}
END_TEST

/* ---- Out of order and gaps ---------------------------------------------- */

START_TEST(test_out_of_order_commits_are_read_in_chunk_id_order)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	put_s(b, 1, 1, 3, "c");
	put_s(b, 1, 1, 1, "a");
	put_s(b, 1, 1, 2, "b");
	put_s(b, 1, 1, 4, "d");
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_committed_out_of_order, 2);
	ck_assert_int_eq(read_all(b, pk, 10), 4);
	ck_assert_str_eq(pk[0].str, "aaaa");
	ck_assert_str_eq(pk[1].str, "bbbb");
	ck_assert_str_eq(pk[2].str, "cccc");
	ck_assert_str_eq(pk[3].str, "dddd");
	ck_assert_uint_eq(pk[0].loss | pk[1].loss | pk[2].loss | pk[3].loss,
			  0);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_out_of_order_sequence_rewinds_but_others_keep_buffer_order)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	put_s(b, 1, 1, 2, "B");
	put_s(b, 2, 1, 1, "x");
	put_s(b, 1, 1, 1, "A");
	/* Reading chunk B2 rewinds to B1 first; x stays in buffer order. */
	ck_assert_str_eq(read_str(b), "ABx");
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_reassembly_across_out_of_order_chunks)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	put_f(b, 1, 1, 12, F, "end", NULL);
	put_f(b, 1, 1, 11, F | L, "mid-", NULL);
	put_f(b, 1, 1, 10, L, "beg-", NULL);
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_str_eq(pk[0].str, "beg-mid-end");
	ck_assert_uint_eq(pk[0].loss, 0);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_chunk_id_gap_reports_read_gap)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	put_s(b, 1, 1, 1, "a");
	put_s(b, 1, 1, 3, "bc");
	ck_assert_int_eq(read_all(b, pk, 10), 3);
	ck_assert_uint_eq(pk[0].loss, 0);
	ck_assert_uint_eq(pk[1].loss, PRESENT | TB_BUF_LOSS_READ_GAP);
	ck_assert_uint_eq(pk[2].loss, 0);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_gap_detection_survives_across_reads)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	put_s(b, 1, 1, 1, "a");
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	put_s(b, 1, 1, 2, "b");
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_uint_eq(pk[0].loss, 0);
	put_s(b, 1, 1, 5, "c");
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_uint_eq(pk[0].loss, PRESENT | TB_BUF_LOSS_READ_GAP);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_gap_in_out_of_order_walk_is_reported)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	/* Buffer order 3, 1: reading chunk 3 rewinds to 1, then 1 -> 3. */
	put_s(b, 1, 1, 3, "c");
	put_s(b, 1, 1, 1, "a");
	ck_assert_int_eq(read_all(b, pk, 10), 2);
	ck_assert_str_eq(pk[0].str, "aaaa");
	ck_assert_uint_eq(pk[0].loss, 0);
	ck_assert_str_eq(pk[1].str, "cccc");
	ck_assert_uint_eq(pk[1].loss, PRESENT | TB_BUF_LOSS_READ_GAP);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_contiguous_reassembly_after_a_gap_in_the_same_walk_succeeds)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	/*
	 * Buffer order 3, 4, 1.  Reading chunk 3 rewinds to chunk 1, then
	 * steps over the missing chunk 2 to 3, whose Begin continues in 4.
	 * Only the ids of the chain itself decide a reassembly gap: 3 -> 4
	 * is none, so the packet comes back whole (TraceBufferV2 keeps the
	 * gap crossed before as a flag for the rest of the walk and would
	 * drop it as a REASSEMBLY_GAP).
	 */
	put_f(b, 1, 1, 3, L, "b", "beg-", NULL);
	put_f(b, 1, 1, 4, F, "end", NULL);
	put_f(b, 1, 1, 1, 0, "a", NULL);
	ck_assert_int_eq(read_all(b, pk, 10), 3);
	ck_assert_str_eq(pk[0].str, "a");
	ck_assert_uint_eq(pk[0].loss, 0);
	ck_assert_str_eq(pk[1].str, "b");
	ck_assert_uint_eq(pk[1].loss, PRESENT | TB_BUF_LOSS_READ_GAP);
	ck_assert_str_eq(pk[2].str, "beg-end");
	ck_assert_uint_eq(pk[2].loss, 0);
	ck_assert_uint_eq(tb_buf_stats(b)->readaheads_succeeded, 1);
	ck_assert_uint_eq(tb_buf_stats(b)->readaheads_failed, 0);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_new_sequence_never_reports_a_gap)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	put_s(b, 1, 1, 1000, "a");
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_uint_eq(pk[0].loss, 0);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_ids_at_or_below_last_consumed_are_discarded)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	put_s(b, 1, 1, 10, "a");
	put_s(b, 1, 1, 11, "b");
	ck_assert_int_eq(read_all(b, pk, 10), 2);
	ck_assert_int_eq(put_s(b, 1, 1, 11, "x"), TB_ESTALE);
	ck_assert_int_eq(put_s(b, 1, 1, 3, "y"), TB_ESTALE);
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_discarded, 2);
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_written, 2);
	ck_assert_int_eq(put_s(b, 1, 1, 12, "c"), TB_OK);
	ck_assert_str_eq(read_str(b), "c");
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_chunk_made_stale_by_making_room_is_dropped)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	const struct tb_buf_stats *st = tb_buf_stats(b);
	struct chunk c;

	/*
	 * Chunk 2 at [0, 32), a filler to the end.  Chunk 1 comes late and
	 * wraps: making room for it evicts chunk 2, so its sequence has
	 * consumed past it.  It is dropped rather than read after chunk 2.
	 */
	put_s(b, 1, 1, 2, "b");
	ch_init(&c);
	ch_frag(&c, 4046, 'f');			/* 4064 */
	put(b, 2, 1, 1, 0, &c);
	ck_assert_int_eq(put_s(b, 1, 1, 1, "a"), TB_ESTALE);
	ck_assert_uint_eq(st->chunks_overwritten, 1);
	ck_assert_uint_eq(st->chunks_discarded, 1);
	ck_assert_uint_eq(st->chunks_written, 2);
	ck_assert_uint_eq(st->chunks_committed_out_of_order, 0);
	ck_assert_int_eq(put_s(b, 1, 1, 3, "c"), TB_OK);
	ck_assert_int_eq(read_all(b, pk, 10), 2);
	ck_assert_int_eq(pk[0].str[0], 'f');
	ck_assert_str_eq(pk[1].str, "cccc");
	ck_assert_uint_eq(pk[1].loss, PRESENT | TB_BUF_LOSS_OVERWRITE);
	tb_buf_destroy(b);
}
END_TEST

/* ---- Reassembly --------------------------------------------------------- */

START_TEST(test_missing_continuation_stalls_without_consuming)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	put_f(b, 1, 1, 1, L, "a", "beg-", NULL);
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_str_eq(pk[0].str, "a");
	ck_assert_int_eq(read_all(b, pk, 10), 0);
	put_f(b, 1, 1, 2, F, "end", NULL);
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_str_eq(pk[0].str, "beg-end");
	ck_assert_uint_eq(pk[0].loss, 0);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_stall_blocks_only_its_own_sequence)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	/* Sequence 1 waits for a continuation, sequence 3 for a patch. */
	put_f(b, 1, 1, 1, L, "beg-", NULL);
	put_s(b, 2, 1, 1, "x");
	put_s(b, 2, 1, 2, "y");
	put_f(b, 3, 1, 1, L | NP, "beg-", NULL);
	put_f(b, 3, 1, 2, F, "end", NULL);
	put_s(b, 2, 1, 3, "z");
	ck_assert_str_eq(read_str(b), "xyz");
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_reassembly_gap_consumes_and_reports)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	put_f(b, 1, 1, 1, L, "beg-", NULL);
	put_f(b, 1, 1, 3, F, "end", "x", NULL);
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_str_eq(pk[0].str, "x");
	ck_assert_uint_eq(pk[0].loss, 27);	/* 1 | 2 | 8 | 16 */
	ck_assert_uint_eq(pk[0].loss, PRESENT | TB_BUF_LOSS_READ_GAP |
			  TB_BUF_LOSS_ORPHAN_CONTINUATION |
			  TB_BUF_LOSS_REASSEMBLY_GAP);
	ck_assert_uint_eq(tb_buf_stats(b)->readaheads_failed, 1);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_broken_chain_leaves_the_next_fragment_for_reading)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	put_f(b, 1, 1, 1, L, "beg-", NULL);
	put_f(b, 1, 1, 2, 0, "whole", NULL);
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_str_eq(pk[0].str, "whole");
	ck_assert_uint_eq(pk[0].loss,
			  PRESENT | TB_BUF_LOSS_REASSEMBLY_BROKEN_CHAIN);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_empty_chunk_inside_a_chain_is_skipped)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct chunk c;

	put_f(b, 1, 1, 1, L, "beg-", NULL);
	ch_init(&c);
	put(b, 1, 1, 2, F | L, &c);
	put_f(b, 1, 1, 3, F, "end", NULL);
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_str_eq(pk[0].str, "beg-end");
	ck_assert_uint_eq(pk[0].loss, 0);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_long_packet_spans_many_chunks)
{
	struct tb_buf *b = tb_buf_create(1 << 20, TB_BUF_RING_BUFFER);
	struct tb_buf_packet tp;
	struct chunk c;
	uint32_t i, n = 100;
	size_t total = 0;

	for (i = 0; i < n; i++) {
		ch_init(&c);
		ch_frag(&c, 1000, (char)('a' + i % 26));
		put(b, 1, 1, i, (i ? F : 0) | (i < n - 1 ? L : 0), &c);
	}
	tb_buf_begin_read(b);
	ck_assert(tb_buf_read_packet(b, &tp));
	ck_assert_uint_eq(tp.nslices, n);
	ck_assert_uint_eq(tp.size, 100000);
	for (i = 0; i < n; i++) {
		ck_assert_uint_eq(tp.slices[i].size, 1000);
		ck_assert_int_eq(tp.slices[i].data[999], 'a' + (int)i % 26);
		total += tp.slices[i].size;
	}
	ck_assert_uint_eq(total, tp.size);
	ck_assert(!tb_buf_read_packet(b, &tp));
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_read, n);
	tb_buf_destroy(b);
}
END_TEST

/* ---- Patches ------------------------------------------------------------ */

static struct tb_buf_patch mk_patch(uint32_t off, const char *four)
{
	struct tb_buf_patch p;

	p.offset = off;
	memcpy(p.data, four, 4);
	return p;
}

START_TEST(test_patch_applies_bytes_and_clears_flag_when_no_more_pending)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct tb_buf_patch p[2];

	put_f(b, 1, 1, 1, L | NP, "beg-XXXX-YYYY", NULL);
	put_f(b, 1, 1, 2, F, "end", NULL);
	ck_assert_int_eq(read_all(b, pk, 10), 0);
	/* Offsets count the payload from its start, varint included. */
	p[0] = mk_patch(5, "abcd");
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 1, p, 1, true), TB_OK);
	ck_assert_int_eq(read_all(b, pk, 10), 0);
	p[0] = mk_patch(10, "wxyz");
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 1, p, 1, false), TB_OK);
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_str_eq(pk[0].str, "beg-abcd-wxyzend");
	ck_assert_uint_eq(tb_buf_stats(b)->patches_succeeded, 2);
	ck_assert_uint_eq(tb_buf_stats(b)->patches_failed, 0);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_unpatched_continuation_chunk_stalls_reassembly)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	put_f(b, 1, 1, 1, L, "beg-", NULL);
	put_f(b, 1, 1, 2, F | L | NP, "mid-", NULL);
	put_f(b, 1, 1, 3, F, "end", NULL);
	ck_assert_int_eq(read_all(b, pk, 10), 0);
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 2, NULL, 0, false), TB_OK);
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_str_eq(pk[0].str, "beg-mid-end");
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_failed_patch_batch_counts_once_and_keeps_earlier_patches)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct tb_buf_patch p[3];
	struct chunk c;

	ch_init(&c);
	ch_data(&c, "beg-XXXX");		/* payload 9 bytes */
	put(b, 1, 1, 1, L | NP, &c);
	put_f(b, 1, 1, 2, F, "end", NULL);
	p[0] = mk_patch(5, "abcd");
	p[1] = mk_patch(6, "zzzz");		/* 6 + 4 > 9 */
	p[2] = mk_patch(1, "qqqq");
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 1, p, 3, false),
			 TB_ERANGE);
	ck_assert_uint_eq(tb_buf_stats(b)->patches_failed, 1);
	ck_assert_uint_eq(tb_buf_stats(b)->patches_succeeded, 0);
	/* The flag stays: still stalled. */
	ck_assert_int_eq(read_all(b, pk, 10), 0);
	p[0] = mk_patch(5, "abcd");
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 1, p, 0, false), TB_OK);
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	/* The first patch of the failed batch was applied, not the third. */
	ck_assert_str_eq(pk[0].str, "beg-abcdend");
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_patch_at_last_possible_offset_succeeds)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct tb_buf_patch p;
	struct chunk c;

	ch_init(&c);
	ch_data(&c, "0123456");		/* payload 8 bytes */
	put(b, 1, 1, 1, 0, &c);
	p = mk_patch(4, "WXYZ");
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 1, &p, 1, false), TB_OK);
	p = mk_patch(5, "WXYZ");
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 1, &p, 1, false),
			 TB_ERANGE);
	p = mk_patch(0xffffffffu, "WXYZ");
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 1, &p, 1, false),
			 TB_ERANGE);
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_str_eq(pk[0].str, "012WXYZ");
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_patch_to_payload_smaller_than_patch_fails)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct tb_buf_patch p = mk_patch(0, "abcd");
	struct chunk c;

	ch_init(&c);
	ch_data(&c, "ab");			/* payload 3 bytes */
	put(b, 1, 1, 1, 0, &c);
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 1, &p, 1, false),
			 TB_ERANGE);
	ck_assert_uint_eq(tb_buf_stats(b)->patches_failed, 1);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_patch_to_unknown_sequence_or_chunk_fails)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct tb_buf_patch p = mk_patch(0, "abcd");

	put_s(b, 1, 1, 5, "a");
	ck_assert_int_eq(tb_buf_patch(b, 2, 1, 5, &p, 1, false),
			 TB_ENOENT);
	ck_assert_int_eq(tb_buf_patch(b, 1, 2, 5, &p, 1, false),
			 TB_ENOENT);
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 6, &p, 1, false),
			 TB_ENOENT);
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 4, &p, 1, false),
			 TB_ENOENT);
	ck_assert_uint_eq(tb_buf_stats(b)->patches_failed, 4);
	ck_assert_uint_eq(tb_buf_stats(b)->patches_succeeded, 0);
	tb_buf_destroy(b);
}
END_TEST

/*
 * A patch that finds no sequence leaves nothing behind in the patch cache:
 * the sequence a later commit creates is found, and so is the one the
 * last patch found, after a patch for another writer missed.
 */
START_TEST(test_patch_finds_a_sequence_created_after_a_miss)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct tb_buf_patch p = mk_patch(1, "abcd");

	put_f(b, 1, 1, 5, 0, "--------", NULL);
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 5, &p, 1, true), TB_OK);
	ck_assert_int_eq(tb_buf_patch(b, 2, 1, 7, &p, 1, false),
			 TB_ENOENT);
	put_f(b, 2, 1, 7, 0, "--------", NULL);
	p = mk_patch(5, "efgh");
	ck_assert_int_eq(tb_buf_patch(b, 2, 1, 7, &p, 1, false), TB_OK);
	ck_assert_int_eq(tb_buf_patch(b, 3, 1, 7, &p, 1, false),
			 TB_ENOENT);
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 5, &p, 1, false), TB_OK);
	ck_assert_int_eq(read_all(b, pk, 10), 2);
	ck_assert_str_eq(pk[0].str, "abcdefgh");
	ck_assert_str_eq(pk[1].str, "----efgh");
	ck_assert_uint_eq(tb_buf_stats(b)->patches_failed, 2);
	ck_assert_uint_eq(tb_buf_stats(b)->patches_succeeded, 3);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_patch_to_consumed_chunk_fails)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct tb_buf_patch p = mk_patch(0, "abcd");

	put_s(b, 1, 1, 1, "a");
	put_s(b, 1, 1, 2, "b");
	ck_assert_int_eq(read_all(b, pk, 10), 2);
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 1, &p, 1, false),
			 TB_ENOENT);
	ck_assert_uint_eq(tb_buf_stats(b)->patches_failed, 1);
	tb_buf_destroy(b);
}
END_TEST

/* "any write or patch ends the batch", a patch that fails included. */
START_TEST(test_patch_ends_the_read_batch)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct tb_buf_patch p = mk_patch(1, "wxyz");
	struct tb_buf_packet tp;

	put_f(b, 1, 1, 1, 0, "a", NULL);
	put_f(b, 1, 1, 2, 0, "bcdefgh", NULL);
	tb_buf_begin_read(b);
	ck_assert(tb_buf_read_packet(b, &tp));
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 2, &p, 1, false), TB_OK);
	ck_assert(!tb_buf_read_packet(b, &tp));
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_str_eq(pk[0].str, "wxyzfgh");

	put_f(b, 1, 1, 3, 0, "i", NULL);
	put_f(b, 1, 1, 4, 0, "j", NULL);
	tb_buf_begin_read(b);
	ck_assert(tb_buf_read_packet(b, &tp));
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 9, &p, 1, false), TB_ENOENT);
	ck_assert(!tb_buf_read_packet(b, &tp));
	ck_assert_str_eq(read_str(b), "j");
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_patch_lookup_finds_every_chunk_among_thousands)
{
	struct tb_buf *b = tb_buf_create(1 << 20, TB_BUF_RING_BUFFER);
	struct tb_buf_patch p = mk_patch(1, "PQRS");
	struct chunk c;
	uint32_t i, n = 5000;

	ch_init(&c);
	ch_frag(&c, 8, '-');
	/* Consecutive ids, then a hole, then out-of-order ones. */
	for (i = 0; i < n; i++)
		ck_assert_int_eq(put(b, 1, 1, 1000 + i, 0, &c), TB_OK);
	ck_assert_int_eq(put(b, 1, 1, 1000 + n + 10, 0, &c), TB_OK);
	ck_assert_int_eq(put(b, 1, 1, 1000 + n + 5, 0, &c), TB_OK);
	for (i = 0; i < n; i += 7)
		ck_assert_int_eq(tb_buf_patch(b, 1, 1, 1000 + i, &p, 1, false),
				 TB_OK);
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 1000 + n + 5, &p, 1, false),
			 TB_OK);
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 1000 + n + 10, &p, 1, false),
			 TB_OK);
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 1000 + n + 6, &p, 1, false),
			 TB_ENOENT);
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 999, &p, 1, false),
			 TB_ENOENT);
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 1000 + n, &p, 1, false),
			 TB_ENOENT);
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 0x80000000u, &p, 1, false),
			 TB_ENOENT);
	ck_assert_int_eq(read_all(b, pk, 8192), (int)n + 2);
	for (i = 0; i < n; i++)
		ck_assert_str_eq(pk[i].str, i % 7 ? "--------" : "PQRS----");
	ck_assert_str_eq(pk[n].str, "PQRS----");
	ck_assert_str_eq(pk[n + 1].str, "PQRS----");
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_patch_lookup_across_the_id_wrap)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct tb_buf_patch p = mk_patch(1, "PQRS");
	static const uint32_t ids[4] = { 0xfffffffeu, 0xffffffffu, 0, 2 };
	struct chunk c;
	unsigned i;

	ch_init(&c);
	ch_frag(&c, 8, '-');
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(put(b, 1, 1, ids[i], 0, &c), TB_OK);
	/* The newest, the oldest, and the ones between, across 2^32. */
	for (i = 4; i-- > 0;)
		ck_assert_int_eq(tb_buf_patch(b, 1, 1, ids[i], &p, 1, false),
				 TB_OK);
	/* Before the first, the hole, after the last. */
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 0xfffffffdu, &p, 1, false),
			 TB_ENOENT);
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 1, &p, 1, false), TB_ENOENT);
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 3, &p, 1, false), TB_ENOENT);
	ck_assert_int_eq(read_all(b, pk, 10), 4);
	for (i = 0; i < 4; i++)
		ck_assert_str_eq(pk[i].str, "PQRS----");
	ck_assert_uint_eq(tb_buf_stats(b)->patches_succeeded, 4);
	ck_assert_uint_eq(tb_buf_stats(b)->patches_failed, 3);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_patch_finds_its_sequence_after_the_table_grows)
{
	struct tb_buf *b = tb_buf_create(1 << 20, TB_BUF_RING_BUFFER);
	struct tb_buf_patch p = mk_patch(1, "PQRS");
	uint32_t w;

	put_f(b, 1, 1, 1, 0, "--------", NULL);
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 1, &p, 1, false), TB_OK);
	/* 3000 more sequences: the table grows and moves every entry. */
	for (w = 1; w <= 3000; w++)
		put_s(b, 2, (uint16_t)w, 1, "a");
	p = mk_patch(5, "WXYZ");
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 1, &p, 1, false), TB_OK);
	ck_assert_int_eq(read_all(b, pk, 8192), 3001);
	ck_assert_str_eq(pk[0].str, "PQRSWXYZ");
	tb_buf_destroy(b);
}
END_TEST

/* The home slot of @key in a sequence table of 4096 entries. */
static uint32_t home4096(uint32_t key)
{
	return (uint32_t)(key * 0x9e3779b1u) >> 20;
}

START_TEST(test_patch_misses_a_swept_sequence_whose_slot_another_took)
{
	struct tb_buf *b = tb_buf_create(1 << 20, TB_BUF_RING_BUFFER);
	struct tb_buf_patch p = mk_patch(1, "PQRS");
	static unsigned char near[4096];
	uint32_t w, wa = 0, wb = 0, h = 0, ka, kb;

	/*
	 * Writers A and B of producer 1 share a home slot h of the 4096-entry
	 * table that no filler (producer 2, writers 1..1160) comes near.
	 */
	for (w = 1; w <= 1160; w++) {
		uint32_t k;

		for (k = 0; k < 3; k++)
			near[(home4096(2u << 16 | w) + k) & 4095] = 1;
	}
	for (w = 1; w < 65536 && !wb; w++) {
		uint32_t hw = home4096(1u << 16 | w);

		if (near[hw] || near[(hw + 1) & 4095])
			continue;
		if (!wa) {
			wa = w;
			h = hw;
		} else if (hw == h) {
			wb = w;
		}
	}
	ck_assert_uint_ne(wb, 0);
	ka = 1u << 16 | wa;
	kb = 1u << 16 | wb;
	/* A first, so that it is the oldest empty sequence. */
	put_f(b, 1, (uint16_t)wa, 7, 0, "--------", NULL);
	for (w = 1; w <= 1160; w++)
		put_s(b, 2, (uint16_t)w, 5, "f");
	ck_assert_uint_eq(b->seq_cap, 4096);
	ck_assert_uint_eq(b->seqs[h].key, ka);
	ck_assert_int_eq(read_all(b, pk, 8192), 1161);
	/* A's chunk is consumed; the lookup still finds A's sequence. */
	ck_assert_int_eq(tb_buf_patch(b, 1, (uint16_t)wa, 7, &p, 1, false),
			 TB_ENOENT);
	/*
	 * B lands next to A; the sweep after its commit deletes A (the
	 * oldest of 1161 empty sequences) and moves B into A's slot.
	 */
	put_f(b, 1, (uint16_t)wb, 7, 0, "--------", NULL);
	ck_assert_uint_eq(b->seqs[h].key, kb);
	ck_assert_int_eq(tb_buf_patch(b, 1, (uint16_t)wa, 7, &p, 1, false),
			 TB_ENOENT);
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_str_eq(pk[0].str, "--------");
	tb_buf_destroy(b);
}
END_TEST

/* ---- Scraped chunks and recommits --------------------------------------- */

START_TEST(test_scraped_chunk_ignores_last_fragment_and_stalls)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct chunk c;

	ch_init(&c);
	ch_data(&c, "a");
	ch_data(&c, "b");
	ch_data(&c, "being-written");
	ck_assert_int_eq(put_scraped(b, 1, 1, 1, 0, &c, 1000), TB_OK);
	put_s(b, 1, 1, 2, "z");
	put_s(b, 2, 1, 1, "x");
	ck_assert_str_eq(read_str(b), "abx");
	/* Still stalled in the next read: the chunk is incomplete. */
	ck_assert_str_eq(read_str(b), "");
	/* The final commit of the drained chunk relocates it. */
	ck_assert_int_eq(put(b, 1, 1, 1, 0, &c), TB_OK);
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_relocated, 1);
	ck_assert_int_eq(read_all(b, pk, 10), 2);
	ck_assert_str_eq(pk[0].str, "being-written");
	ck_assert_uint_eq(pk[0].loss, 0);
	ck_assert_str_eq(pk[1].str, "zzzz");
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_scraped_chunk_reserves_its_whole_size)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct chunk c;

	ch_init(&c);
	ch_data(&c, "a");
	ch_data(&c, "b");
	put_scraped(b, 1, 1, 1, 0, &c, 1000);
	ck_assert_uint_eq(tb_buf_stats(b)->bytes_written, 1024);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_scraped_chunk_drops_last_flag_and_needs_patching)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct chunk c;

	/* L and NP describe the dropped last fragment: "a" is whole. */
	ch_init(&c);
	ch_data(&c, "a");
	ch_data(&c, "beg");
	put_scraped(b, 1, 1, 1, L | NP, &c, c.len);
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_str_eq(pk[0].str, "a");
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_recommit_may_not_shrink)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct chunk c;

	ch_init(&c);
	ch_data(&c, "a");
	ch_data(&c, "b");
	ch_data(&c, "c");
	put_scraped(b, 1, 1, 1, 0, &c, 100);
	ch_init(&c);
	ch_data(&c, "a");
	ck_assert_int_eq(put(b, 1, 1, 1, 0, &c), TB_ERECOMMIT);
	ck_assert_uint_eq(tb_buf_stats(b)->abi_violations, 1);
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_rewritten, 0);
	ck_assert_str_eq(read_str(b), "ab");
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_recommit_may_not_exceed_the_reservation)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct chunk c;

	ch_init(&c);
	ch_data(&c, "a");
	ch_data(&c, "b");
	put_scraped(b, 1, 1, 1, 0, &c, c.len);
	ch_data(&c, "more");
	ck_assert_int_eq(put(b, 1, 1, 1, 0, &c), TB_ERECOMMIT);
	ck_assert_uint_eq(tb_buf_stats(b)->abi_violations, 1);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_recommit_may_add_flags_but_not_remove_them)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct chunk c;

	ch_init(&c);
	ch_data(&c, "a");
	ch_data(&c, "b");
	ch_data(&c, "beg-");
	put_scraped(b, 1, 1, 1, F, &c, 100);	/* keeps "a", "b" */
	ck_assert_int_eq(put(b, 1, 1, 1, 0, &c), TB_ERECOMMIT);
	ck_assert_uint_eq(tb_buf_stats(b)->abi_violations, 1);
	ck_assert_int_eq(put(b, 1, 1, 1, F | L, &c), TB_OK);
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_rewritten, 1);
	put_f(b, 1, 1, 2, F, "end", NULL);
	/* F made "a" an orphan End; L made "beg-" a Begin. */
	ck_assert_int_eq(read_all(b, pk, 10), 2);
	ck_assert_str_eq(pk[0].str, "b");
	ck_assert_uint_eq(pk[0].loss,
			  PRESENT | TB_BUF_LOSS_ORPHAN_CONTINUATION);
	ck_assert_str_eq(pk[1].str, "beg-end");
	ck_assert_uint_eq(pk[1].loss, 0);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_identical_recommit_is_a_no_op)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	put_f(b, 1, 1, 1, 0, "a", NULL);
	ck_assert_int_eq(put_f(b, 1, 1, 1, 0, "a", NULL), TB_OK);
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_rewritten, 0);
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_written, 1);
	ck_assert_uint_eq(tb_buf_stats(b)->abi_violations, 0);
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_recommit_keeps_what_was_already_read)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct chunk c;

	ch_init(&c);
	ch_data(&c, "a");
	ch_data(&c, "b");
	ch_data(&c, "c");
	put_scraped(b, 1, 1, 1, 0, &c, 200);
	ck_assert_str_eq(read_str(b), "ab");
	ch_data(&c, "d");
	put_scraped(b, 1, 1, 1, 0, &c, 200);	/* scraped again: +c */
	ck_assert_str_eq(read_str(b), "c");
	ch_data(&c, "e");
	put(b, 1, 1, 1, 0, &c);			/* final: +d +e */
	ck_assert_str_eq(read_str(b), "de");
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_rewritten, 1);
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_relocated, 1);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_recommit_that_moves_the_read_boundary_is_rejected)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct chunk c;

	ch_init(&c);
	ch_data(&c, "aa");
	ch_data(&c, "b");
	ch_data(&c, "c");
	put_scraped(b, 1, 1, 1, 0, &c, 200);
	ck_assert_str_eq(read_str(b), "ab");
	/* A lying resend whose fragments no longer end where "b" did. */
	ch_init(&c);
	ch_data(&c, "a");
	ch_data(&c, "bbbb");
	ch_data(&c, "c");
	ck_assert_int_eq(put(b, 1, 1, 1, 0, &c), TB_ERECOMMIT);
	ck_assert_uint_eq(tb_buf_stats(b)->abi_violations, 1);
	tb_buf_destroy(b);
}
END_TEST

/* A scraped chunk ["aa", "b", "c" still being written], "aa" "b" read. */
static struct tb_buf *scraped_and_read(struct chunk *c)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	ch_init(c);
	ch_data(c, "aa");
	ch_data(c, "b");
	ch_data(c, "c");
	put_scraped(b, 1, 1, 1, 0, c, 200);
	ck_assert_str_eq(read_str(b), "ab");
	return b;
}

/* The same three fragments framed so that no boundary falls after "b". */
static void liar(struct chunk *c)
{
	ch_init(c);
	ch_data(c, "a");
	ch_data(c, "bbbb");
	ch_data(c, "c");
}

START_TEST(test_refused_recommit_leaves_its_sequence_stalled)
{
	struct chunk c, l, f;
	struct tb_buf *b;

	/* Still incomplete: its sequence waits, others are read. */
	b = scraped_and_read(&c);
	liar(&l);
	ck_assert_int_eq(put(b, 1, 1, 1, 0, &l), TB_ERECOMMIT);
	put_s(b, 1, 1, 2, "x");
	put_s(b, 2, 1, 1, "y");
	ck_assert_str_eq(read_str(b), "y");
	ck_assert_str_eq(read_str(b), "");
	/* A valid final commit lets it go on. */
	ck_assert_int_eq(put(b, 1, 1, 1, 0, &c), TB_OK);
	ck_assert_int_eq(read_all(b, pk, 10), 2);
	ck_assert_str_eq(pk[0].str, "c");
	ck_assert_str_eq(pk[1].str, "xxxx");
	ck_assert_uint_eq(pk[0].loss | pk[1].loss, 0);
	tb_buf_destroy(b);

	/* So does the chunk's eviction: [0, 224), a filler to the end. */
	b = scraped_and_read(&c);
	ck_assert_int_eq(put(b, 1, 1, 1, 0, &l), TB_ERECOMMIT);
	ch_init(&f);
	ch_frag(&f, 3822, 'f');			/* 3840 */
	put(b, 2, 1, 1, 0, &f);
	put_s(b, 1, 1, 2, "x");			/* 32: up to the end */
	ck_assert_str_eq(read_str(b), "f");
	put_s(b, 2, 1, 2, "z");			/* evicts the scraped chunk */
	ck_assert_int_eq(read_all(b, pk, 10), 2);
	ck_assert_str_eq(pk[0].str, "xxxx");
	ck_assert_str_eq(pk[1].str, "zzzz");
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_readmission_that_moves_the_read_boundary_is_rejected)
{
	struct chunk c, l, f;
	struct tb_buf *b = scraped_and_read(&c);

	/* Evict the drained scraped chunk [0, 224) ... */
	ch_init(&f);
	ch_frag(&f, 3854, 'f');			/* 3872: up to the end */
	put(b, 2, 1, 1, 0, &f);
	put_s(b, 2, 1, 2, "z");
	ck_assert_uint_eq(tb_buf_stats(b)->abi_violations, 0);
	/* ... then re-admit it with fragments that split "b". */
	liar(&l);
	ck_assert_int_eq(put(b, 1, 1, 1, 0, &l), TB_ERECOMMIT);
	ck_assert_uint_eq(tb_buf_stats(b)->abi_violations, 1);
	/* The honest one is still welcome: only "c" is new. */
	ck_assert_int_eq(put(b, 1, 1, 1, 0, &c), TB_OK);
	ck_assert_int_eq(read_all(b, pk, 10), 3);
	ck_assert_str_eq(pk[2].str, "c");
	ck_assert_uint_eq(pk[2].loss, 0);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_drained_scraped_head_is_relocated_on_final_commit)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct chunk c;
	uint64_t written;

	ch_init(&c);
	ch_data(&c, "a");
	ch_data(&c, "b");
	put_scraped(b, 1, 1, 1, 0, &c, 200);
	put_s(b, 2, 1, 1, "x");
	ck_assert_str_eq(read_str(b), "ax");
	written = tb_buf_stats(b)->chunks_written;
	put(b, 1, 1, 1, 0, &c);
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_relocated, 1);
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_rewritten, 0);
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_written, written + 1);
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_str_eq(pk[0].str, "b");
	ck_assert_uint_eq(pk[0].loss, 0);
	put_s(b, 1, 1, 2, "c");
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_uint_eq(pk[0].loss, 0);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_discard_mode_never_relocates)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_DISCARD);
	struct chunk c;

	ch_init(&c);
	ch_data(&c, "a");
	ch_data(&c, "b");
	put_scraped(b, 1, 1, 1, 0, &c, 200);
	ck_assert_str_eq(read_str(b), "a");
	put(b, 1, 1, 1, 0, &c);
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_relocated, 0);
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_rewritten, 1);
	ck_assert_str_eq(read_str(b), "b");
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_evicted_scraped_chunk_is_readmitted_with_its_new_tail)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct chunk c, big;
	uint32_t i;

	ch_init(&c);
	ch_data(&c, "a");
	ch_data(&c, "b");
	put_scraped(b, 1, 1, 1, 0, &c, 100);
	/* Overwrite the scraped chunk with another sequence's data. */
	ch_init(&big);
	ch_frag(&big, 1000, 'x');
	for (i = 1; i <= 4; i++)
		put(b, 2, 1, i, 0, &big);
	/* The scraped record and the first filler both went. */
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_overwritten, 2);
	/* The final commit carries "b" too: only "b" is new. */
	ck_assert_int_eq(put(b, 1, 1, 1, 0, &c), TB_OK);
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_discarded, 0);
	ck_assert_int_eq(read_all(b, pk, 10), 4);
	ck_assert_str_eq(pk[3].str, "b");
	ck_assert_uint_eq(pk[3].loss, PRESENT | TB_BUF_LOSS_OVERWRITE);
	/* Resending it once more is stale. */
	ck_assert_int_eq(put(b, 1, 1, 1, 0, &c), TB_ESTALE);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_readmitted_chunk_is_no_gap_even_when_nothing_was_consumed)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct chunk c, f;

	/*
	 * A scraped chunk whose only fragment is the one still being
	 * written stores nothing.  Its final commit re-admits it under the
	 * id last consumed, with no byte of it consumed yet: no gap.
	 * First by relocation of the drained head ...
	 */
	ch_init(&c);
	ch_data(&c, "a");
	put_scraped(b, 1, 1, 5, 0, &c, 100);
	ck_assert_int_eq(put(b, 1, 1, 5, 0, &c), TB_OK);
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_relocated, 1);
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_str_eq(pk[0].str, "a");
	ck_assert_uint_eq(pk[0].loss, 0);
	tb_buf_destroy(b);

	/* ... then by eviction: [0, 128) scraped, a filler to the end. */
	b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	put_scraped(b, 1, 1, 5, 0, &c, 100);
	ch_init(&f);
	ch_frag(&f, 3950, 'f');			/* 3968 */
	put(b, 2, 1, 1, 0, &f);
	put_s(b, 3, 1, 1, "x");			/* evicts the scraped chunk */
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_overwritten, 0);
	ck_assert_int_eq(put(b, 1, 1, 5, 0, &c), TB_OK);
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_discarded, 0);
	ck_assert_int_eq(read_all(b, pk, 10), 3);
	ck_assert_str_eq(pk[2].str, "a");
	/* Nothing was destroyed and nothing skipped. */
	ck_assert_uint_eq(pk[2].loss, 0);
	tb_buf_destroy(b);
}
END_TEST

/* ---- Overwrite ---------------------------------------------------------- */

struct seen {
	int n;
	char s[4096];
	struct pkt last;
	struct tb_buf *b;
	int reenter;
};

static void on_overwrite(void *ctx, const struct tb_buf_packet *p)
{
	struct seen *v = ctx;

	flatten(p, &v->last);
	v->s[v->n++] = v->last.str[0];
	if (v->b)
		v->reenter = put_s(v->b, 9, 9, 1, "q");
}

START_TEST(test_overwrite_deletes_oldest_chunks_and_reports_loss)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct chunk c;
	uint32_t i;

	/* 1 + 1000 -> 1024-byte records: four fill the buffer. */
	for (i = 0; i < 4; i++) {
		ch_init(&c);
		ch_frag(&c, 1000, (char)('a' + i));
		put(b, 1, 1, i, 0, &c);
	}
	ck_assert_uint_eq(tb_buf_stats(b)->write_wrap_count, 0);
	ch_init(&c);
	ch_frag(&c, 1000, 'e');
	put(b, 1, 1, 4, 0, &c);
	ck_assert_uint_eq(tb_buf_stats(b)->write_wrap_count, 1);
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_overwritten, 1);
	ck_assert_uint_eq(tb_buf_stats(b)->bytes_overwritten, 1024);
	ck_assert_int_eq(read_all(b, pk, 10), 4);
	ck_assert_int_eq(pk[0].str[0], 'b');
	ck_assert_uint_eq(pk[0].loss, PRESENT | TB_BUF_LOSS_OVERWRITE);
	ck_assert_int_eq(pk[3].str[0], 'e');
	ck_assert_uint_eq(pk[1].loss | pk[2].loss | pk[3].loss, 0);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_overwrite_loss_goes_only_to_the_overwritten_sequence)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct chunk c;

	ch_init(&c);
	ch_frag(&c, 1000, 'a');
	put(b, 1, 1, 1, 0, &c);
	put(b, 2, 1, 1, 0, &c);
	put(b, 1, 1, 2, 0, &c);
	put(b, 2, 1, 2, 0, &c);
	put(b, 3, 1, 1, 0, &c);		/* evicts 1/1 */
	ck_assert_int_eq(read_all(b, pk, 10), 4);
	ck_assert_uint_eq(pk[0].p, 2);
	ck_assert_uint_eq(pk[0].loss, 0);
	ck_assert_uint_eq(pk[1].p, 1);
	ck_assert_uint_eq(pk[1].loss, PRESENT | TB_BUF_LOSS_OVERWRITE);
	ck_assert_uint_eq(pk[2].loss | pk[3].loss, 0);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_overwrite_callback_gets_packets_in_sequence_order)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct seen v;
	struct chunk c;

	memset(&v, 0, sizeof(v));
	tb_buf_on_overwrite(b, on_overwrite, &v);
	/* Buffer order: seq 1 chunk 2, then chunk 1 (OOO), then chunk 3. */
	put_f(b, 1, 1, 2, L, "c", "d-beg/", NULL);
	put_f(b, 1, 1, 1, 0, "a", "b", NULL);
	put_f(b, 1, 1, 3, F, "end", "e", NULL);
	ch_init(&c);
	ch_frag(&c, 2000, 'z');		/* 2032 */
	put(b, 2, 1, 1, 0, &c);
	ch_init(&c);
	ch_frag(&c, 1948, 'y');		/* 1968: fills the buffer exactly */
	put(b, 2, 1, 2, 0, &c);
	ck_assert_uint_eq(v.n, 0);
	ch_init(&c);
	ch_frag(&c, 40, 'w');		/* 64: evicts chunks 2 and 1 */
	put(b, 2, 1, 3, 0, &c);
	ck_assert_str_eq(v.s, "abcd");
	ck_assert_str_eq(v.last.str, "d-beg/end");
	ck_assert_uint_eq(v.last.nslices, 2);
	ck_assert_uint_eq(v.last.p, 1);
	/* Chunk 3 survives, its End consumed by the overwrite. */
	ck_assert_int_eq(read_all(b, pk, 10), 4);
	ck_assert_str_eq(pk[0].str, "e");
	ck_assert_uint_eq(pk[0].loss, PRESENT | TB_BUF_LOSS_OVERWRITE);
	ck_assert_int_eq(pk[1].str[0], 'z');
	ck_assert_int_eq(pk[2].str[0], 'y');
	ck_assert_int_eq(pk[3].str[0], 'w');
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_overwrite_callback_packets_carry_no_loss)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct seen v;
	struct chunk c;

	memset(&v, 0, sizeof(v));
	tb_buf_on_overwrite(b, on_overwrite, &v);
	put_s(b, 1, 1, 1, "a");
	ck_assert_str_eq(read_str(b), "a");
	/* Chunk 3 [32, 64) skips chunk 2; a filler to the end. */
	put_s(b, 1, 1, 3, "b");
	put_s(b, 1, 1, 4, "c");
	ch_init(&c);
	ch_frag(&c, 3982, 'f');			/* 4000 */
	put(b, 2, 1, 1, 0, &c);
	put_s(b, 3, 1, 1, "x");			/* evicts [0, 32): padding */
	put_s(b, 3, 1, 2, "y");			/* evicts chunk 3 */
	ck_assert_str_eq(v.s, "b");
	ck_assert_uint_eq(v.last.loss, 0);
	/* The gap and the overwrite wait for the sequence's next packet. */
	ck_assert_int_eq(read_all(b, pk, 10), 4);
	ck_assert_str_eq(pk[0].str, "cccc");
	ck_assert_uint_eq(pk[0].loss, PRESENT | TB_BUF_LOSS_READ_GAP |
			  TB_BUF_LOSS_OVERWRITE);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_overwrite_without_callback_only_counts)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct chunk c;

	put_f(b, 1, 1, 1, L, "beg-", NULL);
	put_f(b, 1, 1, 2, F, "end", NULL);
	ch_init(&c);
	ch_frag(&c, 4040, 'z');		/* 4064: does not fit after 64 */
	put(b, 2, 1, 1, 0, &c);
	/* Both chunks destroyed; the reassembly still ran (accounting). */
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_overwritten, 2);
	ck_assert_uint_eq(tb_buf_stats(b)->bytes_overwritten, 64);
	ck_assert_uint_eq(tb_buf_stats(b)->readaheads_succeeded, 1);
	tb_buf_destroy(b);
}
END_TEST

/* Overwrites a 40-chunk packet; returns the slice capacity afterwards. */
static uint32_t overwrite_long_packet(struct seen *v)
{
	struct tb_buf *b = tb_buf_create(65536, TB_BUF_RING_BUFFER);
	struct chunk c;
	uint32_t i, cap;

	if (v)
		tb_buf_on_overwrite(b, on_overwrite, v);
	for (i = 0; i < 40; i++) {
		ch_init(&c);
		ch_frag(&c, 100, 'p');
		put(b, 1, 1, i, (i ? F : 0) | (i < 39 ? L : 0), &c);
	}
	ch_init(&c);
	ch_frag(&c, 60500, 'z');	/* does not fit after 40 * 128 */
	put(b, 2, 1, 1, 0, &c);
	ck_assert_uint_eq(tb_buf_stats(b)->readaheads_succeeded, 1);
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_overwritten, 40);
	cap = b->slices_cap;
	tb_buf_destroy(b);
	return cap;
}

START_TEST(test_overwrite_without_callback_reconstructs_no_packets)
{
	struct seen v;

	memset(&v, 0, sizeof(v));
	/* With a callback the 40 slices are gathered for it ... */
	ck_assert_uint_ge(overwrite_long_packet(&v), 40);
	ck_assert_int_eq(v.n, 1);
	ck_assert_uint_eq(v.last.size, 4000);
	ck_assert_uint_eq(v.last.nslices, 40);
	/* ... without one nothing is gathered: the slice array never grew. */
	ck_assert_uint_lt(overwrite_long_packet(NULL), 40);
}
END_TEST

START_TEST(test_overwrite_forces_out_incomplete_and_unpatched_chunks)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct seen v;
	struct chunk c;

	memset(&v, 0, sizeof(v));
	tb_buf_on_overwrite(b, on_overwrite, &v);
	ch_init(&c);
	ch_data(&c, "a");
	ch_data(&c, "b");
	put_scraped(b, 1, 1, 1, 0, &c, c.len);
	put_f(b, 2, 1, 1, L | NP, "c", "beg-", NULL);
	put_f(b, 2, 1, 2, F, "end", NULL);
	ch_init(&c);
	ch_frag(&c, 4000, 'z');
	put(b, 3, 1, 1, 0, &c);
	/* "a" from the scraped chunk, "c": the unpatched packet is lost. */
	ck_assert_str_eq(v.s, "ac");
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_overwritten, 3);
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_uint_eq(pk[0].p, 3);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_overwrite_of_stalled_begin_reports_overwrite_on_next_packet)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct chunk c;

	put_f(b, 1, 1, 1, L | NP, "beg-", NULL);
	ch_init(&c);
	ch_frag(&c, 2020, 'f');		/* 2048 */
	put(b, 2, 1, 1, 0, &c);
	put(b, 2, 1, 2, 0, &c);		/* evicts chunk 1 of seq 1 */
	put_f(b, 1, 1, 2, F, "end", "next", NULL);
	ck_assert_int_eq(read_all(b, pk, 10), 2);
	ck_assert_str_eq(pk[1].str, "next");
	ck_assert_uint_eq(pk[1].loss, PRESENT | TB_BUF_LOSS_OVERWRITE |
			  TB_BUF_LOSS_ORPHAN_CONTINUATION);
	ck_assert_uint_eq(tb_buf_stats(b)->readaheads_failed, 1);
	tb_buf_destroy(b);
}
END_TEST

/*
 * Chunk 1 of sequence 1 ends in a Begin (@f1), chunk 2 carries its next
 * fragment (@f2), and the chunk after that has not arrived when making
 * room evicts chunk 1 and nothing else.  Chunk 3, committed afterwards,
 * starts a new packet.  Layout: chunk 1 [0, 64), filler, chunk 2 at 2096
 * (32), filler to the end; a 32-byte write at 0 evicts chunk 1 and leaves
 * 32 bytes of padding where chunk 3 goes.
 *
 * When chunk 1 is patched (@orphan false), everything collected for the
 * packet goes with it, counted as overwritten: chunk 2 is never read and
 * its fragment is no orphan.  When chunk 1 still waits for patches
 * (@orphan true), TraceBufferV2 does not read ahead of its Begin: the
 * eviction takes the Begin alone, chunk 2's fragment is read later as an
 * orphan (ORPHAN_CONTINUATION on the next packet) and chunk 2 counts as
 * read, not overwritten.
 */
static void overwrite_open_packet(uint8_t f1, uint8_t f2, const char *frag2,
				  bool orphan)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	const struct tb_buf_stats *st = tb_buf_stats(b);
	uint64_t overwritten = orphan ? 1 : 2, read = orphan ? 5 : 4;
	struct seen v;
	struct chunk c;

	memset(&v, 0, sizeof(v));
	tb_buf_on_overwrite(b, on_overwrite, &v);
	ch_init(&c);
	ch_frag(&c, 30, 'a');
	ch_data(&c, "beg-");		/* 31 + 5 bytes: 64 */
	put(b, 1, 1, 1, f1, &c);
	ch_init(&c);
	ch_frag(&c, 2000, 'f');		/* 2032 */
	put(b, 2, 1, 1, 0, &c);
	put_f(b, 1, 1, 2, f2, frag2, NULL);	/* 32 */
	ch_init(&c);
	ch_frag(&c, 1950, 'g');		/* 1968: up to the end */
	put(b, 2, 1, 2, 0, &c);
	put_s(b, 3, 1, 1, "x");		/* wraps: evicts chunk 1 only */
	ck_assert_uint_eq(st->write_wrap_count, 1);
	ck_assert_uint_eq(st->chunks_overwritten, overwritten);
	ck_assert_uint_eq(st->bytes_overwritten, orphan ? 64 : 64 + 32);
	ck_assert_uint_eq(st->readaheads_failed, 1);
	ck_assert_uint_eq(st->readaheads_succeeded, 0);
	/* Only the whole packet was destroyed; the open one is no packet. */
	ck_assert_int_eq(v.n, 1);
	ck_assert_int_eq(v.s[0], 'a');
	ck_assert_int_eq(put_f(b, 1, 1, 3, 0, "next", NULL), TB_OK);
	ck_assert_uint_eq(st->padding_bytes_cleared, 32);
	ck_assert_int_eq(read_all(b, pk, 10), 4);
	ck_assert_int_eq(pk[0].str[0], 'f');
	ck_assert_int_eq(pk[1].str[0], 'g');
	ck_assert_int_eq(pk[2].str[0], 'x');
	ck_assert_uint_eq(pk[0].loss | pk[1].loss | pk[2].loss, 0);
	ck_assert_str_eq(pk[3].str, "next");
	ck_assert_uint_eq(pk[3].loss, PRESENT | TB_BUF_LOSS_OVERWRITE |
			  (orphan ? TB_BUF_LOSS_ORPHAN_CONTINUATION : 0));
	/* Read: the two fillers, chunk 3 and "x" (and chunk 2's orphan). */
	ck_assert_uint_eq(st->chunks_read, read);
	ck_assert_uint_eq(st->bytes_read, 2032 + 1968 + 32 + 32 +
			  (orphan ? 32 : 0));
	ck_assert_uint_eq(st->chunks_overwritten, overwritten);
	ck_assert_uint_eq(st->readaheads_failed, 1);
	tb_buf_destroy(b);
}

START_TEST(test_overwrite_of_open_packet_takes_its_continuation_too)
{
	overwrite_open_packet(L, F | L, "mid-", false);
}
END_TEST

START_TEST(test_overwrite_of_unpatched_begin_leaves_its_continuation)
{
	/* The Begin chunk waits for a patch: no read-ahead, as in V2. */
	overwrite_open_packet(L | NP, F | L, "mid-", true);
}
END_TEST

START_TEST(test_overwrite_of_unpatched_begin_leaves_its_end)
{
	/*
	 * The whole chain is there but the Begin chunk is unpatched: the
	 * packet cannot be completed (a failed readahead, never handed to
	 * the callback), and its End is left to be read as an orphan.
	 */
	overwrite_open_packet(L | NP, F, "end", true);
}
END_TEST

START_TEST(test_overwritten_chunk_whose_tail_does_not_tokenize_is_not_counted)
{
	struct tb_buf_patch p = mk_patch(2, "\xff\xff\xff\xff");
	struct tb_buf *b;
	struct chunk c;
	int erase;

	/*
	 * Chunk 1 [0, 32): "a", then a fragment whose varint a patch turns
	 * into one that runs past the payload; chunk 2 [32, 64); a filler
	 * up to the end.  The chunk never empties through its fragments, so
	 * neither overwriting nor reading it counts it, in either mode.
	 */
	for (erase = 0; erase < 2; erase++) {
		b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
		put_f(b, 1, 1, 1, 0, "a", "bcdefgh", NULL);
		put_s(b, 1, 1, 2, "n");
		ch_init(&c);
		ch_frag(&c, 4014, 'f');		/* 4032 */
		put(b, 2, 1, 1, 0, &c);
		ck_assert_int_eq(tb_buf_patch(b, 1, 1, 1, &p, 1, false),
				 TB_OK);
		if (!erase) {
			ck_assert_int_eq(read_all(b, pk, 10), 3);
			ck_assert_str_eq(pk[0].str, "a");
			ck_assert_uint_eq(tb_buf_stats(b)->chunks_read, 2);
			ck_assert_uint_eq(tb_buf_stats(b)->bytes_read,
					  32 + 4032);
			tb_buf_destroy(b);
			continue;
		}
		put_s(b, 3, 1, 1, "x");		/* evicts chunk 1 only */
		ck_assert_uint_eq(tb_buf_stats(b)->chunks_overwritten, 0);
		ck_assert_uint_eq(tb_buf_stats(b)->bytes_overwritten, 0);
		ck_assert_int_eq(read_all(b, pk, 10), 3);
		ck_assert_str_eq(pk[0].str, "nnnn");
		ck_assert_uint_eq(pk[0].loss, PRESENT | TB_BUF_LOSS_OVERWRITE |
				  TB_BUF_LOSS_CHUNK_CORRUPTED);
		ck_assert_uint_eq(tb_buf_stats(b)->chunks_read, 3);
		tb_buf_destroy(b);
	}
}
END_TEST

/*
 * The same chunk, its tail made untokenizable by the first patch of a
 * batch whose second patch is out of range: the batch fails, and what its
 * first patch changed is looked at like any patched chunk's bytes when
 * the chunk is overwritten (it never empties, so it is not counted).
 */
START_TEST(test_patch_batch_failing_part_way_leaves_its_bytes_looked_at)
{
	struct tb_buf_patch p[2];
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct chunk c;

	put_f(b, 1, 1, 1, 0, "a", "bcdefgh", NULL);	/* payload 10 */
	put_s(b, 1, 1, 2, "n");
	ch_init(&c);
	ch_frag(&c, 4014, 'f');
	put(b, 2, 1, 1, 0, &c);
	p[0] = mk_patch(2, "\xff\xff\xff\xff");
	p[1] = mk_patch(7, "zzzz");			/* 7 + 4 > 10 */
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 1, p, 2, false), TB_ERANGE);
	ck_assert_uint_eq(tb_buf_stats(b)->patches_failed, 1);
	put_s(b, 3, 1, 1, "x");				/* evicts chunk 1 */
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_overwritten, 0);
	ck_assert_uint_eq(tb_buf_stats(b)->bytes_overwritten, 0);
	ck_assert_int_eq(read_all(b, pk, 10), 3);
	ck_assert_str_eq(pk[0].str, "nnnn");
	ck_assert_uint_eq(pk[0].loss, PRESENT | TB_BUF_LOSS_OVERWRITE |
			  TB_BUF_LOSS_CHUNK_CORRUPTED);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_partial_overwrite_leaves_a_padding_record)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct chunk c;

	ch_init(&c);
	ch_frag(&c, 1996, 'a');		/* 2 + 1996 bytes: 2016 */
	put(b, 1, 1, 1, 0, &c);
	put(b, 1, 1, 2, 0, &c);
	ch_init(&c);
	ch_frag(&c, 500, 'b');		/* 2 + 500 bytes: 528 */
	put(b, 1, 1, 3, 0, &c);
	/* It overwrites [0, 528) of the first record: 1488 become padding. */
	ck_assert_uint_eq(tb_buf_stats(b)->padding_bytes_written, 1488);
	ck_assert_uint_eq(tb_buf_stats(b)->write_wrap_count, 1);
	ch_init(&c);
	ch_frag(&c, 1400, 'c');		/* 1424: clears the padding */
	put(b, 1, 1, 4, 0, &c);
	ck_assert_uint_eq(tb_buf_stats(b)->padding_bytes_cleared, 1488);
	/* 64 bytes remain: a new padding record covers them. */
	ck_assert_uint_eq(tb_buf_stats(b)->padding_bytes_written, 1488 + 64);
	ck_assert_str_eq(read_str(b), "abc");
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_header_only_padding_when_16_bytes_remain)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct chunk c;

	ch_init(&c);
	ch_frag(&c, 1996, 'a');		/* 2016 */
	put(b, 1, 1, 1, 0, &c);
	put(b, 1, 1, 2, 0, &c);
	ch_init(&c);
	ch_frag(&c, 1980, 'b');		/* 2 + 1980 bytes: 2000 */
	put(b, 1, 1, 3, 0, &c);
	ck_assert_uint_eq(tb_buf_stats(b)->padding_bytes_written, 16);
	ck_assert_str_eq(read_str(b), "ab");
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_exact_fill_wraps_only_on_the_next_write)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct chunk c;
	uint32_t i;

	ch_init(&c);
	ch_frag(&c, 1000, 'a');
	for (i = 0; i < 4; i++)
		put(b, 1, 1, i, 0, &c);
	ck_assert_uint_eq(tb_buf_stats(b)->write_wrap_count, 0);
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_overwritten, 0);
	ck_assert_int_eq(read_all(b, pk, 10), 4);
	put(b, 1, 1, 4, 0, &c);
	ck_assert_uint_eq(tb_buf_stats(b)->write_wrap_count, 1);
	/* The overwritten chunk had been read: nothing counted. */
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_overwritten, 0);
	ck_assert_uint_eq(tb_buf_stats(b)->padding_bytes_cleared, 1024);
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_uint_eq(pk[0].loss, 0);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_callback_cannot_reenter_the_buffer)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct seen v;
	struct chunk c;

	memset(&v, 0, sizeof(v));
	v.b = b;
	tb_buf_on_overwrite(b, on_overwrite, &v);
	ch_init(&c);
	ch_frag(&c, 3000, 'a');
	put(b, 1, 1, 1, 0, &c);
	put(b, 1, 1, 2, 0, &c);
	ck_assert_int_eq(v.n, 1);
	ck_assert_int_eq(v.reenter, TB_EBUSY);
	tb_buf_destroy(b);
}
END_TEST

struct patch_seen {
	struct tb_buf *b;
	int n;
	int ret;
};

static void on_overwrite_patch(void *ctx, const struct tb_buf_packet *p)
{
	struct patch_seen *v = ctx;
	struct tb_buf_patch pa = mk_patch(1, "wxyz");

	(void)p;
	v->n++;
	v->ret = tb_buf_patch(v->b, 2, 2, 1, &pa, 1, false);
}

/* A patch from the callback fails like a write, and changes nothing. */
START_TEST(test_callback_cannot_patch_the_buffer)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct patch_seen v = { NULL, 0, 0 };
	struct chunk c;
	int i, n;

	v.b = b;
	tb_buf_on_overwrite(b, on_overwrite_patch, &v);
	ch_init(&c);
	ch_frag(&c, 3000, 'a');
	put(b, 1, 1, 1, 0, &c);		/* [0, 3024) */
	put_f(b, 2, 2, 1, 0, "bcdefgh", NULL);	/* [3024, 3056) */
	ch_init(&c);
	ch_frag(&c, 2000, 'c');
	put(b, 1, 1, 2, 0, &c);		/* wraps: [0, 2016) over the first */
	ck_assert_int_eq(v.n, 1);
	ck_assert_int_eq(v.ret, TB_EBUSY);
	ck_assert_uint_eq(tb_buf_stats(b)->patches_succeeded, 0);
	n = read_all(b, pk, 10);
	ck_assert_int_eq(n, 2);
	for (i = 0; i < n && pk[i].p != 2; i++)
		;
	ck_assert_int_lt(i, n);
	ck_assert_str_eq(pk[i].str, "bcdefgh");
	tb_buf_destroy(b);
}
END_TEST

/* ---- Loss reasons ------------------------------------------------------- */

START_TEST(test_loss_reason_bits_match_perfetto)
{
	ck_assert_uint_eq(TB_BUF_LOSS_PRESENT, 1);
	ck_assert_uint_eq(TB_BUF_LOSS_READ_GAP, 2);
	ck_assert_uint_eq(TB_BUF_LOSS_CHUNK_CORRUPTED, 4);
	ck_assert_uint_eq(TB_BUF_LOSS_ORPHAN_CONTINUATION, 8);
	ck_assert_uint_eq(TB_BUF_LOSS_REASSEMBLY_GAP, 16);
	ck_assert_uint_eq(TB_BUF_LOSS_REASSEMBLY_BROKEN_CHAIN, 32);
	ck_assert_uint_eq(TB_BUF_LOSS_OVERWRITE, 64);
	ck_assert_uint_eq(TB_BUF_LOSS_WRITER_ABORT, 128);
	ck_assert_uint_eq(TB_BUF_LOSS_SMB_FULL, 256);
}
END_TEST

START_TEST(test_writer_abort_marker_keeps_earlier_fragments)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	static const uint8_t abort_marker[] = { 0xff, 0xff, 0xff, 0x7f };
	struct chunk c;
	struct tb_buf_chunk_in in;

	ch_init(&c);
	ch_data(&c, "a");
	ch_data(&c, "b");
	ch_raw(&c, abort_marker, sizeof(abort_marker));
	ch_data(&c, "lost");
	in = mk_in(1, 1, 1, 0, &c);
	in.nfrags = 4;
	ck_assert_int_eq(tb_buf_copy_chunk(b, &in), TB_OK);
	ck_assert_uint_eq(tb_buf_stats(b)->trace_writer_packet_loss, 1);
	ck_assert_uint_eq(tb_buf_stats(b)->abi_violations, 0);
	ck_assert_int_eq(read_all(b, pk, 10), 2);
	ck_assert_str_eq(pk[0].str, "a");
	ck_assert_uint_eq(pk[0].loss, PRESENT | TB_BUF_LOSS_WRITER_ABORT);
	ck_assert_str_eq(pk[1].str, "b");
	ck_assert_uint_eq(pk[1].loss, 0);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_loss_is_reported_once_on_the_next_packet_of_the_sequence)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	put_s(b, 1, 1, 1, "a");
	put_s(b, 1, 1, 5, "b");
	put_s(b, 2, 1, 1, "x");
	put_s(b, 1, 1, 6, "c");
	ck_assert_int_eq(read_all(b, pk, 10), 4);
	ck_assert_uint_eq(pk[1].loss, PRESENT | TB_BUF_LOSS_READ_GAP);
	ck_assert_uint_eq(pk[0].loss | pk[2].loss | pk[3].loss, 0);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_gap_before_a_stalled_chunk_is_reported_once)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct chunk c;

	put_s(b, 1, 1, 1, "a");
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ch_init(&c);
	ch_data(&c, "b");
	ch_data(&c, "c");
	ch_data(&c, "d");
	put_scraped(b, 1, 1, 3, 0, &c, 100);
	put_s(b, 1, 1, 4, "e");
	ck_assert_int_eq(read_all(b, pk, 10), 2);
	ck_assert_uint_eq(pk[0].loss, PRESENT | TB_BUF_LOSS_READ_GAP);
	ck_assert_uint_eq(pk[1].loss, 0);
	put(b, 1, 1, 3, 0, &c);
	ck_assert_int_eq(read_all(b, pk, 10), 2);
	ck_assert_str_eq(pk[0].str, "d");
	ck_assert_uint_eq(pk[0].loss, 0);
	ck_assert_uint_eq(pk[1].loss, 0);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_data_loss_flag_reports_smb_full_once_when_reached)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	put_f(b, 1, 1, 1, 0, "a", "b", NULL);
	put_f(b, 2, 1, 1, 0, "x", NULL);
	put_f(b, 1, 1, 2, TB_BUF_DATA_LOSS, "c", "d", NULL);
	put_f(b, 1, 1, 3, 0, "e", NULL);
	/* a batch that stops before the flagged chunk reports nothing */
	ck_assert_int_eq(read_all(b, pk, 1), 1);
	ck_assert_str_eq(pk[0].str, "a");
	ck_assert_uint_eq(pk[0].loss, 0);
	ck_assert_int_eq(read_all(b, pk, 10), 5);
	ck_assert_str_eq(pk[0].str, "b");
	ck_assert_uint_eq(pk[0].loss, 0);
	ck_assert_str_eq(pk[1].str, "x");
	ck_assert_uint_eq(pk[1].loss, 0);
	ck_assert_str_eq(pk[2].str, "c");
	ck_assert_uint_eq(pk[2].loss, PRESENT | TB_BUF_LOSS_SMB_FULL);
	ck_assert_uint_eq(pk[2].loss, 0x101);
	ck_assert_str_eq(pk[3].str, "d");
	ck_assert_uint_eq(pk[3].loss, 0);
	ck_assert_str_eq(pk[4].str, "e");
	ck_assert_uint_eq(pk[4].loss, 0);
	/* the flag of a chunk that came while earlier data was unread */
	put_f(b, 1, 1, 4, 0, "f", "g", NULL);
	ck_assert_int_eq(read_all(b, pk, 1), 1);
	ck_assert_str_eq(pk[0].str, "f");
	put_f(b, 1, 1, 5, TB_BUF_DATA_LOSS, "h", NULL);
	ck_assert_int_eq(read_all(b, pk, 10), 2);
	ck_assert_str_eq(pk[0].str, "g");
	ck_assert_uint_eq(pk[0].loss, 0);
	ck_assert_str_eq(pk[1].str, "h");
	ck_assert_uint_eq(pk[1].loss, PRESENT | TB_BUF_LOSS_SMB_FULL);
	ck_assert_int_eq(read_all(b, pk, 10), 0);
	tb_buf_destroy(b);
}
END_TEST

/*
 * A flagged chunk whose first fragment ends a packet begun earlier is
 * first reached by that packet's reassembly, not as a head chunk: the
 * loss is still reported, once, on the packet that reached it.
 */
START_TEST(test_data_loss_flag_reached_by_reassembly_is_reported)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	put_f(b, 1, 1, 1, TB_BUF_LAST_CONT, "x", "ab", NULL);
	put_f(b, 1, 1, 2, TB_BUF_FIRST_CONT | TB_BUF_DATA_LOSS, "cd", "e",
	      NULL);
	put_f(b, 1, 1, 3, 0, "f", NULL);
	ck_assert_int_eq(read_all(b, pk, 10), 4);
	ck_assert_str_eq(pk[0].str, "x");
	ck_assert_uint_eq(pk[0].loss, 0);
	ck_assert_str_eq(pk[1].str, "abcd");
	ck_assert_uint_eq(pk[1].loss, PRESENT | TB_BUF_LOSS_SMB_FULL);
	ck_assert_str_eq(pk[2].str, "e");
	ck_assert_uint_eq(pk[2].loss, 0);
	ck_assert_str_eq(pk[3].str, "f");
	ck_assert_uint_eq(pk[3].loss, 0);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_data_loss_flag_out_of_order_waits_for_its_chunk)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	/* the flagged chunk comes first in buffer order, not in id order */
	put_f(b, 1, 1, 2, TB_BUF_DATA_LOSS, "c", NULL);
	put_f(b, 1, 1, 1, 0, "a", "b", NULL);
	put_f(b, 1, 1, 3, 0, "d", NULL);
	ck_assert_int_eq(read_all(b, pk, 10), 4);
	ck_assert_str_eq(pk[0].str, "a");
	ck_assert_uint_eq(pk[0].loss, 0);
	ck_assert_str_eq(pk[1].str, "b");
	ck_assert_uint_eq(pk[1].loss, 0);
	ck_assert_str_eq(pk[2].str, "c");
	ck_assert_uint_eq(pk[2].loss, PRESENT | TB_BUF_LOSS_SMB_FULL);
	ck_assert_str_eq(pk[3].str, "d");
	ck_assert_uint_eq(pk[3].loss, 0);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_patched_garbage_reports_chunk_corrupted)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct tb_buf_patch p = mk_patch(2, "\xff\xff\xff\xff");

	put_f(b, 1, 1, 1, 0, "a", "bcdefgh", NULL);
	put_s(b, 1, 1, 2, "z");
	/* The second varint now runs past the payload. */
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 1, &p, 1, false), TB_OK);
	ck_assert_int_eq(read_all(b, pk, 10), 2);
	ck_assert_str_eq(pk[0].str, "a");
	ck_assert_str_eq(pk[1].str, "zzzz");
	ck_assert_uint_eq(pk[1].loss, PRESENT | TB_BUF_LOSS_CHUNK_CORRUPTED);
	/* A chunk left unread is not counted as read. */
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_read, 1);
	tb_buf_destroy(b);
}
END_TEST

/* ---- Fill policies ------------------------------------------------------ */

START_TEST(test_discard_policy_latches_on_first_overflow)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_DISCARD);
	struct chunk c;

	ch_init(&c);
	ch_frag(&c, 1500, 'a');		/* 1520-byte records */
	ck_assert_int_eq(put(b, 1, 1, 1, 0, &c), TB_OK);
	ck_assert_int_eq(put(b, 1, 1, 2, 0, &c), TB_OK);
	ck_assert_int_eq(put(b, 1, 1, 3, 0, &c), TB_EBUFFULL);
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_discarded, 1);
	/* Stored data stays readable; reading frees nothing. */
	ck_assert_str_eq(read_str(b), "aa");
	ck_assert_int_eq(put_s(b, 2, 1, 1, "t"), TB_EBUFFULL);
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_discarded, 2);
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_written, 2);
	ck_assert_uint_eq(tb_buf_stats(b)->write_wrap_count, 0);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_discard_policy_allows_exact_fill)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_DISCARD);
	struct chunk c;
	uint32_t i;

	ch_init(&c);
	ch_frag(&c, 1000, 'a');
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(put(b, 1, 1, i, 0, &c), TB_OK);
	ck_assert_int_eq(put_s(b, 1, 1, 4, "x"), TB_EBUFFULL);
	ck_assert_int_eq(read_all(b, pk, 10), 4);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_patches_still_work_after_discard_latch)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_DISCARD);
	struct tb_buf_patch p = mk_patch(2, "PQRS");
	struct chunk c;

	ch_init(&c);
	ch_frag(&c, 3000, 'a');
	put(b, 1, 1, 1, 0, &c);
	ck_assert_int_eq(put(b, 1, 1, 2, 0, &c), TB_EBUFFULL);
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 1, &p, 1, false), TB_OK);
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert(!memcmp(pk[0].str, "PQRSaaa", 7));
	tb_buf_destroy(b);
}
END_TEST

/* ---- Clone -------------------------------------------------------------- */

START_TEST(test_clone_is_independent_of_the_original)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER), *k;

	put_s(b, 1, 1, 1, "ab");
	put_s(b, 2, 1, 1, "c");
	k = tb_buf_clone_readonly(b);
	ck_assert_ptr_nonnull(k);
	ck_assert_str_eq(read_str(k), "abc");
	ck_assert_str_eq(read_str(k), "");
	put_s(b, 1, 1, 2, "d");
	ck_assert_str_eq(read_str(b), "abcd");
	ck_assert_str_eq(read_str(k), "");
	tb_buf_destroy(k);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_clone_keeps_sequence_state)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER), *k;

	put_s(b, 1, 1, 1, "a");
	ck_assert_str_eq(read_str(b), "a");
	put_s(b, 1, 1, 3, "b");
	put_f(b, 1, 1, 4, L, "beg-", NULL);
	put_f(b, 1, 1, 5, F, "end", NULL);
	k = tb_buf_clone_readonly(b);
	ck_assert_int_eq(read_all(k, pk, 10), 2);
	ck_assert_uint_eq(pk[0].loss, PRESENT | TB_BUF_LOSS_READ_GAP);
	ck_assert_str_eq(pk[1].str, "beg-end");
	tb_buf_destroy(k);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_write_to_clone_is_an_error)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER), *k;
	struct tb_buf_patch p = mk_patch(0, "abcd");
	struct tb_buf_frag fr = { "x", 1 };
	struct tb_buf_chunk_in in;
	struct chunk c;

	put_s(b, 1, 1, 1, "a");
	k = tb_buf_clone_readonly(b);
	ck_assert_int_eq(put_s(k, 1, 1, 2, "b"), TB_EROFS);
	ck_assert_int_eq(tb_buf_patch(k, 1, 1, 1, &p, 1, false),
			 TB_EROFS);
	ch_init(&c);
	in = mk_in(1, 1, 3, 0, &c);
	ck_assert_int_eq(tb_buf_copy_frags(k, &in, &fr, 1), TB_EROFS);
	ck_assert_uint_eq(tb_buf_stats(k)->chunks_written, 1);
	ck_assert_uint_eq(tb_buf_stats(k)->abi_violations, 0);
	ck_assert_str_eq(read_str(k), "a");
	tb_buf_set_read_only(b);
	ck_assert_int_eq(put_s(b, 1, 1, 2, "b"), TB_EROFS);
	tb_buf_destroy(k);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_patch_to_buffer_made_read_only_is_an_error)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct tb_buf_patch p = mk_patch(1, "wxyz");

	put_f(b, 1, 1, 1, 0, "bcdefgh", NULL);
	tb_buf_set_read_only(b);
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 1, &p, 1, false), TB_EROFS);
	ck_assert_uint_eq(tb_buf_stats(b)->patches_succeeded, 0);
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_str_eq(pk[0].str, "bcdefgh");
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_clone_copies_stats_but_resets_read_counters)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER), *k;

	put_s(b, 1, 1, 1, "a");
	put_f(b, 1, 1, 2, L, "beg-", NULL);
	put_f(b, 1, 1, 3, F, "end", NULL);
	read_str(b);
	put_s(b, 1, 1, 4, "b");
	k = tb_buf_clone_readonly(b);
	ck_assert_uint_eq(tb_buf_stats(k)->chunks_written, 4);
	ck_assert_uint_eq(tb_buf_stats(k)->bytes_written,
			  tb_buf_stats(b)->bytes_written);
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_read, 3);
	ck_assert_uint_eq(tb_buf_stats(k)->chunks_read, 0);
	ck_assert_uint_eq(tb_buf_stats(k)->bytes_read, 0);
	ck_assert_uint_eq(tb_buf_stats(k)->readaheads_succeeded, 0);
	ck_assert_uint_eq(tb_buf_stats(k)->buffer_size, 4096);
	tb_buf_destroy(k);
	tb_buf_destroy(b);
}
END_TEST

/* ---- Stats -------------------------------------------------------------- */

START_TEST(test_stats_count_outer_sizes_when_chunks_empty)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	const struct tb_buf_stats *st = tb_buf_stats(b);
	struct tb_buf_packet tp;
	struct chunk c;

	ch_init(&c);
	ch_data(&c, "a");
	ch_data(&c, "b");		/* 4 bytes: record 32 */
	put(b, 1, 1, 1, 0, &c);
	ch_init(&c);
	put(b, 1, 1, 2, 0, &c);		/* empty: record 16 */
	ck_assert_uint_eq(st->chunks_written, 2);
	ck_assert_uint_eq(st->bytes_written, 48);
	tb_buf_begin_read(b);
	ck_assert(tb_buf_read_packet(b, &tp));
	ck_assert_uint_eq(st->chunks_read, 0);
	ck_assert(tb_buf_read_packet(b, &tp));
	ck_assert_uint_eq(st->chunks_read, 1);
	ck_assert_uint_eq(st->bytes_read, 32);
	ck_assert(!tb_buf_read_packet(b, &tp));
	/* The empty chunk is never counted as read. */
	ck_assert_uint_eq(st->chunks_read, 1);
	ck_assert_uint_eq(st->bytes_read, 32);
	ck_assert_uint_eq(st->chunks_overwritten, 0);
	ck_assert_uint_eq(st->abi_violations, 0);
	tb_buf_destroy(b);
}
END_TEST

/* ---- Wraparound --------------------------------------------------------- */

START_TEST(test_buffer_wraparound_keeps_the_newest_data_in_order)
{
	struct tb_buf *b = tb_buf_create(16384, TB_BUF_RING_BUFFER);
	struct chunk c;
	uint32_t i, w, last[4] = { 0 };
	int n, k;

	/* Four writers, varying sizes, many wraps. */
	for (i = 0; i < 400; i++) {
		uint32_t id = i / 4, v = id;

		w = i % 4 + 1;
		ch_init(&c);
		ch_frag(&c, 200 + (i * 37) % 800, 'a');
		memcpy(c.b + 2, &v, sizeof(v));	/* id in the packet */
		ck_assert_int_eq(put(b, 1, (uint16_t)w, id, 0, &c), TB_OK);
	}
	ck_assert_uint_gt(tb_buf_stats(b)->write_wrap_count, 5);
	n = read_all(b, pk, 8192);
	ck_assert_int_gt(n, 10);
	for (k = 0; k < n; k++) {
		uint32_t v;

		memcpy(&v, pk[k].str, sizeof(v));
		ck_assert_uint_gt(v + 1, last[pk[k].w - 1]);
		last[pk[k].w - 1] = v + 1;
	}
	for (w = 0; w < 4; w++)
		ck_assert_uint_eq(last[w], 100);	/* newest survived */
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_chunk_id_wraparound_keeps_order_and_detects_no_gap)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	put_s(b, 1, 1, 0xfffffffeu, "a");
	put_s(b, 1, 1, 0, "c");
	put_s(b, 1, 1, 0xffffffffu, "b");
	put_s(b, 1, 1, 1, "d");
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_committed_out_of_order, 1);
	ck_assert_int_eq(read_all(b, pk, 10), 4);
	ck_assert_str_eq(pk[0].str, "aaaa");
	ck_assert_str_eq(pk[1].str, "bbbb");
	ck_assert_str_eq(pk[2].str, "cccc");
	ck_assert_str_eq(pk[3].str, "dddd");
	ck_assert_uint_eq(pk[0].loss | pk[1].loss | pk[2].loss | pk[3].loss,
			  0);
	/* 0xffffffff is before 1 now: stale. */
	ck_assert_int_eq(put_s(b, 1, 1, 0xffffffffu, "x"), TB_ESTALE);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_reassembly_across_chunk_id_wraparound)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	put_f(b, 1, 1, 0xffffffffu, L, "beg-", NULL);
	put_f(b, 1, 1, 0, F, "end", NULL);
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_str_eq(pk[0].str, "beg-end");
	ck_assert_uint_eq(pk[0].loss, 0);
	tb_buf_destroy(b);
}
END_TEST

/* ---- Lazy GC ------------------------------------------------------------ */

START_TEST(test_lazy_gc_keeps_the_last_1024_empty_sequences)
{
	struct tb_buf *b = tb_buf_create(1 << 20, TB_BUF_RING_BUFFER);
	uint32_t w;

	/* 1200 writers commit chunk 5 each and get read in that order. */
	for (w = 1; w <= 1200; w++)
		put_s(b, 1, (uint16_t)w, 5, "a");
	ck_assert_int_eq(read_all(b, pk, 8192), 1200);
	/* Past 1152 empty sequences, the next commit sweeps the oldest. */
	put_s(b, 2, 1, 1, "g");
	/* Writer 1 was swept: it is new again and its id 7 is no gap. */
	put_s(b, 1, 1, 7, "x");
	/* Writer 1200 was kept: its id 7 after 5 is a gap. */
	put_s(b, 1, 1200, 7, "y");
	/* Writer 1 (swept) may even restart at a lower id. */
	put_s(b, 1, 2, 1, "z");
	ck_assert_int_eq(read_all(b, pk, 10), 4);
	ck_assert_str_eq(pk[1].str, "xxxx");
	ck_assert_uint_eq(pk[1].loss, 0);
	ck_assert_str_eq(pk[2].str, "yyyy");
	ck_assert_uint_eq(pk[2].loss, PRESENT | TB_BUF_LOSS_READ_GAP);
	ck_assert_str_eq(pk[3].str, "zzzz");
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_discarded, 0);
	tb_buf_destroy(b);
}
END_TEST

/* ---- Bad input ---------------------------------------------------------- */

START_TEST(test_fewer_fragments_than_declared_is_an_abi_violation)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct tb_buf_chunk_in in;
	struct chunk c;

	ch_init(&c);
	ch_data(&c, "a");
	ch_data(&c, "b");
	in = mk_in(1, 1, 1, 0, &c);
	in.nfrags = 5;
	ck_assert_int_eq(tb_buf_copy_chunk(b, &in), TB_EFRAMING);
	ck_assert_uint_eq(tb_buf_stats(b)->abi_violations, 1);
	ck_assert_str_eq(read_str(b), "ab");
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_fragment_size_past_the_payload_keeps_the_prefix)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	static const uint8_t lie[] = { 100, 'x', 'y' };
	struct tb_buf_chunk_in in;
	struct chunk c;

	ch_init(&c);
	ch_data(&c, "a");
	ch_raw(&c, lie, sizeof(lie));
	in = mk_in(1, 1, 1, 0, &c);
	in.nfrags = 2;
	ck_assert_int_eq(tb_buf_copy_chunk(b, &in), TB_EFRAMING);
	ck_assert_uint_eq(tb_buf_stats(b)->abi_violations, 1);
	ck_assert_uint_eq(tb_buf_stats(b)->bytes_written, 32);
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_str_eq(pk[0].str, "a");
	ck_assert_uint_eq(pk[0].loss, 0);
	tb_buf_destroy(b);
}
END_TEST

/*
 * Chunk 1 of {1, 1}: "a", then @size bytes of 'f' whose length a patch
 * sets to @claim (a commit measures its fragments: only a patch leaves a
 * length that lies); chunk 2: "n".  Read, or (@erase) overwritten through
 * the callback by a filler that ends exactly where the buffer does.
 * Returns the packets chunk 1 gave, in *@v.
 */
static void claim_frag(uint32_t size, uint32_t claim, int erase,
		       struct seen *v)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct tb_buf_patch p;
	uint8_t lenb[4];
	uint32_t n, rec1;
	struct chunk c;
	bool bad = claim > size;
	int got, i;

	memset(v, 0, sizeof(*v));
	tb_buf_on_overwrite(b, on_overwrite, v);
	ch_init(&c);
	ch_data(&c, "a");
	ch_frag(&c, size, 'f');
	ck_assert_int_eq(put(b, 1, 1, 1, 0, &c), TB_OK);
	rec1 = 16 + (((uint32_t)c.len + 15) & ~15u);
	put_s(b, 1, 1, 2, "n");			/* a 32-byte record */
	n = tb_pb_varint_put(lenb, claim);
	ck_assert_uint_eq(n, tb_pb_varint_len(size));
	p.offset = 2;
	memcpy(p.data, lenb, n);
	memset(p.data + n, 'f', 4 - n);
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 1, &p, 1, false), TB_OK);
	if (erase) {
		ch_init(&c);			/* up to the end */
		ch_frag(&c, 4096 - rec1 - 32 - 16 - 2, 'z');
		ck_assert_int_eq(put(b, 2, 1, 1, 0, &c), TB_OK);
		ck_assert_int_eq(v->n, 0);
		put_s(b, 3, 1, 1, "x");		/* evicts chunk 1 only */
		ck_assert_uint_eq(tb_buf_stats(b)->write_wrap_count, 1);
		ck_assert_int_eq(read_all(b, pk, 10), 3);
		ck_assert_str_eq(pk[0].str, "nnnn");
		ck_assert_uint_eq(pk[0].loss & TB_BUF_LOSS_CHUNK_CORRUPTED,
				  bad ? TB_BUF_LOSS_CHUNK_CORRUPTED : 0);
		tb_buf_destroy(b);
		return;
	}
	got = read_all(b, pk, 10);
	ck_assert_int_gt(got, 0);
	ck_assert_str_eq(pk[got - 1].str, "nnnn");
	ck_assert_uint_eq(pk[got - 1].loss,
			  bad ? PRESENT | TB_BUF_LOSS_CHUNK_CORRUPTED : 0);
	for (i = 0; i + 1 < got; i++) {
		v->last = pk[i];
		v->s[v->n++] = pk[i].str[0];
	}
	tb_buf_destroy(b);
}

/*
 * A fragment whose length ends exactly at the end of the payload is a
 * packet; one whose length ends a byte past it, or as many bytes past it
 * as the length itself takes (one or two), is corrupt: never handed out,
 * in a read or an overwrite.
 */
START_TEST(test_fragment_length_past_the_payload_by_its_own_bytes_is_corrupt)
{
	static const uint32_t sizes[] = { 7, 200 };
	unsigned i, k, erase;
	struct seen v;

	for (erase = 0; erase < 2; erase++) {
		for (i = 0; i < 2; i++) {
			uint32_t size = sizes[i], n = tb_pb_varint_len(size);

			for (k = 0; k <= n; k++) {
				claim_frag(size, size + k, (int)erase, &v);
				ck_assert_int_eq(v.n, k ? 1 : 2);
				ck_assert_int_eq(v.s[0], 'a');
				if (!k) {
					ck_assert_uint_eq(v.last.size, size);
					ck_assert_int_eq(v.last.str[size - 1],
							 'f');
				}
			}
		}
	}
}
END_TEST

START_TEST(test_eleven_byte_varint_is_an_abi_violation)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	static const uint8_t v11[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
				       0x80, 0x80, 0x80, 0x80, 0x00 };
	static const uint8_t v10[] = { 0x81, 0x80, 0x80, 0x80, 0x80, 0x80,
				       0x80, 0x80, 0x80, 0x00, 'q' };
	struct tb_buf_chunk_in in;
	struct chunk c;
	uint64_t v;

	ck_assert_uint_eq(tb_pb_varint_get(v11, sizeof(v11), &v), 0);
	ck_assert_uint_eq(tb_pb_varint_get(v10, sizeof(v10), &v), 10);
	ck_assert_uint_eq(v, 1);
	ch_init(&c);
	ch_data(&c, "a");
	ch_raw(&c, v11, sizeof(v11));
	in = mk_in(1, 1, 1, 0, &c);
	in.nfrags = 2;
	ck_assert_int_eq(tb_buf_copy_chunk(b, &in), TB_EFRAMING);
	ck_assert_uint_eq(tb_buf_stats(b)->abi_violations, 1);
	/* A redundant 10-byte varint is legal. */
	ch_init(&c);
	ch_raw(&c, v10, sizeof(v10));
	in = mk_in(1, 1, 2, 0, &c);
	in.nfrags = 1;
	ck_assert_int_eq(tb_buf_copy_chunk(b, &in), TB_OK);
	ck_assert_int_eq(read_all(b, pk, 10), 2);
	ck_assert_str_eq(pk[1].str, "q");
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_truncated_varint_is_an_abi_violation)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	static const uint8_t cut[] = { 0x85 };
	struct tb_buf_chunk_in in;
	struct chunk c;

	ch_init(&c);
	ch_raw(&c, cut, sizeof(cut));
	in = mk_in(1, 1, 1, 0, &c);
	in.nfrags = 1;
	ck_assert_int_eq(tb_buf_copy_chunk(b, &in), TB_EFRAMING);
	ck_assert_uint_eq(tb_buf_stats(b)->abi_violations, 1);
	ck_assert_str_eq(read_str(b), "");
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_chunk_larger_than_the_buffer_is_rejected)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct chunk c;

	ch_init(&c);
	ch_frag(&c, 4078, 'a');		/* 4080 bytes: exactly 4096 */
	ck_assert_int_eq(put(b, 1, 1, 1, 0, &c), TB_OK);
	ch_init(&c);
	ch_frag(&c, 4079, 'a');		/* 4081 bytes: too big */
	ck_assert_int_eq(put(b, 1, 2, 1, 0, &c), TB_ETOOBIG);
	ck_assert_int_eq(put_scraped(b, 1, 3, 1, 0, &c, 5000),
			 TB_ETOOBIG);
	ck_assert_uint_eq(tb_buf_stats(b)->abi_violations, 2);
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_written, 1);
	ck_assert_str_eq(read_str(b), "a");
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_chunk_payload_over_64k_is_rejected)
{
	struct tb_buf *b = tb_buf_create(1 << 20, TB_BUF_RING_BUFFER);
	struct chunk c;

	ch_init(&c);
	ch_frag(&c, 65532, 'a');	/* 65535 bytes with its varint */
	ck_assert_int_eq(put(b, 1, 1, 1, 0, &c), TB_OK);
	ch_init(&c);
	ch_frag(&c, 65533, 'a');
	ck_assert_int_eq(put(b, 1, 1, 2, 0, &c), TB_ETOOBIG);
	ck_assert_uint_eq(tb_buf_stats(b)->abi_violations, 1);
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_uint_eq(pk[0].size, 65532);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_writer_id_zero_is_rejected)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	ck_assert_int_eq(put_s(b, 0, 0, 1, "a"), TB_EBADID);
	ck_assert_int_eq(put_s(b, 3, 0, 1, "a"), TB_EBADID);
	ck_assert_uint_eq(tb_buf_stats(b)->abi_violations, 2);
	/* Producer 0 with a real writer is fine. */
	ck_assert_int_eq(put_s(b, 0, 1, 1, "b"), TB_OK);
	ck_assert_str_eq(read_str(b), "b");
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_absurd_chunk_id_is_rejected_without_damage)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);

	put_s(b, 1, 1, 10, "a");
	put_s(b, 2, 1, 10, "x");
	put_s(b, 1, 1, 11, "b");
	ck_assert_int_eq(put_s(b, 1, 1, 10 + 0x7fffffffu, "?"),
			 TB_EBADID);
	ck_assert_int_eq(put_s(b, 1, 1, 11 + TB_BUF_ID_WINDOW, "?"),
			 TB_EBADID);
	ck_assert_uint_eq(tb_buf_stats(b)->abi_violations, 2);
	put_s(b, 2, 1, 11, "y");
	ck_assert_str_eq(read_str(b), "axby");
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_out_of_bounds_patch_does_not_touch_neighbours)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct tb_buf_patch p = mk_patch(5, "EVIL");

	put_f(b, 1, 1, 1, 0, "abc", NULL);
	put_s(b, 2, 1, 1, "x");
	ck_assert_int_eq(tb_buf_patch(b, 1, 1, 1, &p, 1, false),
			 TB_ERANGE);
	ck_assert_int_eq(read_all(b, pk, 10), 2);
	ck_assert_str_eq(pk[0].str, "abc");
	ck_assert_str_eq(pk[1].str, "xxxx");
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_lying_producer_does_not_damage_other_sequences)
{
	struct tb_buf *b = tb_buf_create(8192, TB_BUF_RING_BUFFER);
	struct tb_buf_chunk_in in;
	struct chunk c;
	uint32_t i, x = 12345, expect = 0;
	int n, k;

	for (i = 0; i < 3000; i++) {
		uint32_t j, len;

		/* Honest sequence: one numbered packet per chunk. */
		ch_init(&c);
		ch_frag(&c, 8, 'h');
		memcpy(c.b + 1, &i, sizeof(i));
		ck_assert_int_eq(put(b, 1, 1, i, 0, &c), TB_OK);
		/* Liar: random bytes, counts, flags, ids and patches. */
		x = x * 1103515245u + 12345u;
		len = (x >> 16) % 600;
		for (j = 0; j < len; j++) {
			x = x * 1103515245u + 12345u;
			c.b[j] = (uint8_t)(x >> 24);
		}
		c.len = len;
		in = mk_in(2, (uint16_t)(1 + (x >> 8) % 3), x >> 3, 0, &c);
		in.flags = (uint8_t)x;
		in.nfrags = (uint16_t)(x >> 20);
		in.complete = (x >> 7) & 1;
		tb_buf_copy_chunk(b, &in);
		if (i % 3 == 0) {
			struct tb_buf_patch p;

			p = mk_patch(x % 700, "\xff\xff\xff\xff");

			tb_buf_patch(b, 2, (uint16_t)(1 + x % 3), x >> 3, &p, 1,
				     x & 1);
		}
		if (i % 50 == 49) {
			n = read_all(b, pk, 8192);
			for (k = 0; k < n; k++) {
				uint32_t v;

				if (pk[k].p != 1)
					continue;
				ck_assert_uint_eq(pk[k].size, 8);
				memcpy(&v, pk[k].str, sizeof(v));
				ck_assert_uint_ge(v, expect);
				expect = v + 1;
			}
		}
	}
	ck_assert_uint_gt(tb_buf_stats(b)->abi_violations, 0);
	ck_assert_uint_gt(expect, 2900);
	tb_buf_destroy(b);
}
END_TEST

/* ---- Fragment vector entry point ---------------------------------------- */

START_TEST(test_fragment_vector_is_framed_while_copying)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	static char big[300];
	struct tb_buf_frag fr[4];
	struct tb_buf_chunk_in in;
	struct chunk c;

	memset(big, 'B', sizeof(big));
	fr[0].data = "one";
	fr[0].size = 3;
	fr[1].data = big;
	fr[1].size = sizeof(big);	/* two-byte varint */
	fr[2].data = NULL;
	fr[2].size = 0;			/* empty packet */
	fr[3].data = "beg-";
	fr[3].size = 4;
	ch_init(&c);
	in = mk_in(1, 1, 1, L, &c);
	ck_assert_int_eq(tb_buf_copy_frags(b, &in, fr, 4), TB_OK);
	/* 1+3 + 2+300 + 1 + 1+4 = 312 bytes: record 336. */
	ck_assert_uint_eq(tb_buf_stats(b)->bytes_written, 336);
	fr[0].data = "end";
	fr[0].size = 3;
	in = mk_in(1, 1, 2, F, &c);
	ck_assert_int_eq(tb_buf_copy_frags(b, &in, fr, 1), TB_OK);
	ck_assert_int_eq(read_all(b, pk, 10), 3);
	ck_assert_str_eq(pk[0].str, "one");
	ck_assert_uint_eq(pk[1].size, 300);
	ck_assert_str_eq(pk[2].str, "beg-end");
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_fragment_vector_abort_and_incomplete)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct tb_buf_frag fr[3];
	struct tb_buf_chunk_in in;
	struct chunk c;

	fr[0].data = "a";
	fr[0].size = 1;
	fr[1].data = NULL;
	fr[1].size = TB_PB_SIZE_ABORT;
	fr[2].data = "lost";
	fr[2].size = 4;
	ch_init(&c);
	in = mk_in(1, 1, 1, 0, &c);
	ck_assert_int_eq(tb_buf_copy_frags(b, &in, fr, 3), TB_OK);
	ck_assert_uint_eq(tb_buf_stats(b)->trace_writer_packet_loss, 1);
	fr[1].data = "b";
	fr[1].size = 1;
	fr[2].data = "writing";
	fr[2].size = 7;
	in = mk_in(1, 1, 2, 0, &c);
	in.complete = false;
	ck_assert_int_eq(tb_buf_copy_frags(b, &in, fr, 3), TB_OK);
	ck_assert_str_eq(read_str(b), "aab");
	in.complete = true;
	ck_assert_int_eq(tb_buf_copy_frags(b, &in, fr, 3), TB_OK);
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_str_eq(pk[0].str, "writing");
	ck_assert_uint_eq(tb_buf_stats(b)->abi_violations, 0);
	tb_buf_destroy(b);
}
END_TEST

START_TEST(test_fragment_vector_over_64k_is_rejected)
{
	struct tb_buf *b = tb_buf_create(1 << 20, TB_BUF_RING_BUFFER);
	static char big[40000];
	struct tb_buf_frag fr[2] = { { big, sizeof(big) },
				     { big, sizeof(big) } };
	struct tb_buf_chunk_in in;
	struct chunk c;

	ch_init(&c);
	in = mk_in(1, 1, 1, 0, &c);
	ck_assert_int_eq(tb_buf_copy_frags(b, &in, fr, 2), TB_ETOOBIG);
	ck_assert_uint_eq(tb_buf_stats(b)->abi_violations, 1);
	tb_buf_destroy(b);
}
END_TEST

/* ---- Allocation --------------------------------------------------------- */

struct acct {
	long live;
	size_t bytes;
	int fail_after;		/* < 0: never */
};

static void *counting_alloc(void *ctx, void *ptr, size_t old_size,
			    size_t new_size)
{
	struct acct *a = ctx;

	if (!new_size) {
		if (ptr) {
			a->live--;
			a->bytes -= old_size;
		}
		free(ptr);
		return NULL;
	}
	if (a->fail_after == 0)
		return NULL;
	if (a->fail_after > 0)
		a->fail_after--;
	ptr = realloc(ptr, new_size);
	if (ptr && !old_size)
		a->live++;
	if (ptr)
		a->bytes += new_size - old_size;
	return ptr;
}

START_TEST(test_all_memory_goes_through_the_allocator_hook)
{
	struct acct a = { 0, 0, -1 };
	struct tb_buf *b = tb_buf_create_with(8192, TB_BUF_RING_BUFFER,
					      counting_alloc, &a), *k;
	uint32_t w;

	ck_assert_ptr_nonnull(b);
	for (w = 1; w <= 100; w++)
		put_s(b, 1, (uint16_t)w, 1, "a");
	k = tb_buf_clone_readonly(b);
	ck_assert_ptr_nonnull(k);
	ck_assert_uint_eq(strlen(read_str(k)), 100);
	ck_assert_uint_eq(strlen(read_str(b)), 100);
	tb_buf_destroy(k);
	tb_buf_destroy(b);
	ck_assert_int_eq(a.live, 0);
	ck_assert_uint_eq(a.bytes, 0);
}
END_TEST

START_TEST(test_allocation_failure_is_an_error_not_a_crash)
{
	struct acct a = { 0, 0, 2 };
	struct tb_buf *b;
	int i, ok = 0, nomem = 0;

	ck_assert_ptr_null(tb_buf_create_with(8192, TB_BUF_RING_BUFFER,
					      counting_alloc, &a));
	ck_assert_int_eq(a.live, 0);
	a.fail_after = 4;	/* buf, data, slices, table: then none */
	b = tb_buf_create_with(8192, TB_BUF_RING_BUFFER, counting_alloc, &a);
	ck_assert_ptr_nonnull(b);
	for (i = 1; i <= 20; i++) {
		int r = put_s(b, 1, (uint16_t)i, 1, "a");

		ok += r == TB_OK;
		nomem += r == TB_ENOMEM;
	}
	ck_assert_int_eq(ok, 0);
	ck_assert_int_eq(nomem, 20);
	ck_assert_ptr_null(tb_buf_clone_readonly(b));
	tb_buf_destroy(b);
	ck_assert_int_eq(a.live, 0);
}
END_TEST

/*
 * tb_buf_new() names each cause of a failed creation, and leaves no
 * buffer (and no memory) behind: a size over the limit, an unknown
 * policy or no place to put the buffer, and the allocator failing at each
 * of its four allocations (buffer, data, slices, sequence table).
 */
START_TEST(test_create_says_why_it_failed)
{
	struct acct a = { 0, 0, -1 };
	struct tb_buf *b, *junk = (struct tb_buf *)&a;
	int i;

	b = junk;
	ck_assert_int_eq(tb_buf_new(&b, (size_t)TB_BUF_MAX_SIZE + 1,
				    TB_BUF_RING_BUFFER, counting_alloc, &a),
			 TB_ELIMIT);
	ck_assert_ptr_null(b);
	b = junk;
	ck_assert_int_eq(tb_buf_new(&b, 8192, (enum tb_buf_policy)2,
				    counting_alloc, &a), TB_EINVAL);
	ck_assert_ptr_null(b);
	ck_assert_int_eq(tb_buf_new(NULL, 8192, TB_BUF_DISCARD,
				    counting_alloc, &a), TB_EINVAL);
	ck_assert_int_eq(a.live, 0);
	for (i = 0; i < 4; i++) {
		a.fail_after = i;
		b = junk;
		ck_assert_int_eq(tb_buf_new(&b, 8192, TB_BUF_RING_BUFFER,
					    counting_alloc, &a), TB_ENOMEM);
		ck_assert_ptr_null(b);
		ck_assert_int_eq(a.live, 0);
	}
	a.fail_after = -1;
	ck_assert_int_eq(tb_buf_new(&b, 8192, TB_BUF_DISCARD, counting_alloc,
				    &a), TB_OK);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(tb_buf_stats(b)->buffer_size, 8192);
	tb_buf_destroy(b);
	ck_assert_int_eq(a.live, 0);
	/* The wrappers give NULL for every cause. */
	ck_assert_ptr_null(tb_buf_create((size_t)TB_BUF_MAX_SIZE + 1,
					 TB_BUF_RING_BUFFER));
	ck_assert_ptr_null(tb_buf_create(8192, (enum tb_buf_policy)2));
}
END_TEST

START_TEST(test_packet_without_memory_for_its_slices_is_dropped_as_loss)
{
	struct acct a = { 0, 0, -1 };
	struct tb_buf *b = tb_buf_create_with(8192, TB_BUF_RING_BUFFER,
					      counting_alloc, &a);
	uint32_t i;

	/* A packet over 20 chunks needs more slices than the first 16. */
	for (i = 0; i < 20; i++)
		put_f(b, 1, 1, i, (i ? F : 0) | (i < 19 ? L : 0), "p", NULL);
	put_s(b, 1, 1, 20, "z");
	a.fail_after = 0;
	ck_assert_int_eq(read_all(b, pk, 10), 1);
	ck_assert_str_eq(pk[0].str, "zzzz");
	ck_assert_uint_eq(pk[0].loss, PRESENT);
	ck_assert_uint_eq(tb_buf_stats(b)->readaheads_failed, 1);
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_read, 21);
	a.fail_after = -1;
	tb_buf_destroy(b);
	ck_assert_int_eq(a.live, 0);
}
END_TEST

/* ---- The varint tokenizer (tbfrag.h) ------------------------------------ */

START_TEST(test_varint_round_trips_boundary_values)
{
	static const uint64_t v[] = { 0, 1, 127, 128, 16383, 16384,
				      0x0fffffffu, 0xffffffffu,
				      0x7fffffffffffffffull,
				      0xffffffffffffffffull };
	static const unsigned len[] = { 1, 1, 1, 2, 2, 3, 4, 5, 9, 10 };
	uint8_t b[16];
	uint64_t out;
	unsigned i, n;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		n = tb_pb_varint_put(b, v[i]);
		ck_assert_uint_eq(n, len[i]);
		ck_assert_uint_eq(tb_pb_varint_len(v[i]), len[i]);
		ck_assert_uint_eq(tb_pb_varint_get(b, n, &out), n);
		ck_assert(out == v[i]);
		/* One byte short is truncated. */
		ck_assert_uint_eq(tb_pb_varint_get(b, n - 1, &out), 0);
	}
	/* Redundant encodings are accepted: 4-byte zero, as producers do. */
	b[0] = 0x80;
	b[1] = 0x80;
	b[2] = 0x80;
	b[3] = 0x00;
	ck_assert_uint_eq(tb_pb_varint_get(b, 4, &out), 4);
	ck_assert(out == 0);
}
END_TEST

START_TEST(test_frag_iter_reports_end_abort_and_bad_without_advancing)
{
	static const uint8_t ok[] = { 2, 'h', 'i', 0, 0xff, 0xff, 0xff, 0x7f };
	static const uint8_t past[] = { 5, 'a', 'b' };
	struct tb_pb_frags it;
	const uint8_t *d;
	uint32_t len;

	tb_pb_frags_init(&it, ok, sizeof(ok), 0);
	ck_assert_int_eq(tb_pb_frags_next(&it, &d, &len), TB_PB_FRAG_OK);
	ck_assert_uint_eq(len, 2);
	ck_assert(d == ok + 1);
	ck_assert_int_eq(tb_pb_frags_next(&it, &d, &len), TB_PB_FRAG_OK);
	ck_assert_uint_eq(len, 0);
	ck_assert_uint_eq(it.off, 4);
	ck_assert_int_eq(tb_pb_frags_next(&it, &d, &len),
			 TB_PB_FRAG_ABORT);
	ck_assert_uint_eq(it.off, 4);
	tb_pb_frags_init(&it, ok, 3, 3);
	ck_assert_int_eq(tb_pb_frags_next(&it, &d, &len), TB_PB_FRAG_END);
	tb_pb_frags_init(&it, past, sizeof(past), 0);
	ck_assert_int_eq(tb_pb_frags_next(&it, &d, &len), TB_PB_FRAG_BAD);
	ck_assert_uint_eq(it.off, 0);
	/* An abort marker cut short is a bad varint, not an abort. */
	tb_pb_frags_init(&it, ok + 4, 3, 0);
	ck_assert_int_eq(tb_pb_frags_next(&it, &d, &len), TB_PB_FRAG_BAD);
}
END_TEST

/* ---- Reading many packets per call, and the walk's start ---------------- */

static uint32_t rng;

static uint32_t rnd(uint32_t n)
{
	rng = rng * 1103515245u + 12345u;
	return (rng >> 8) % n;
}

/*
 * One random chunk for sequence {1 + w % 2, 1 + w}: up to five fragments
 * of up to 40 bytes (some empty), random continuation flags (so packets
 * span chunks, chains break and continuations are orphaned), ids that now
 * and then skip one (a gap), committed into every buffer of @bufs.  Now
 * and then one for a fourth writer, scraped (incomplete), which stalls
 * its sequence where it lies until it is overwritten or its writer's
 * next chunk comes, rarely.
 */
static void put_random(struct tb_buf **bufs, unsigned nbufs, uint32_t *ids)
{
	static struct chunk c;
	unsigned w = rnd(40) ? rnd(3) : 3, nf = 1 + rnd(5), i, k;
	uint8_t flags = (uint8_t)(rnd(4) == 0 ? F : 0) |
			(uint8_t)(rnd(4) == 0 ? L : 0);

	ch_init(&c);
	for (i = 0; i < nf; i++)
		ch_frag(&c, rnd(5) ? 1 + rnd(40) : 0, (char)('a' + rnd(26)));
	ids[w] += rnd(16) ? 1 : 2;
	for (k = 0; k < nbufs; k++)
		if (w == 3)
			put_scraped(bufs[k], 3, 4, ids[w], flags, &c,
				    c.len + 16);
		else
			put(bufs[k], (uint16_t)(1 + w % 2), (uint16_t)(1 + w),
			    ids[w], flags, &c);
}

/* Reads a whole batch with tb_buf_read_packets(), @max at a time. */
static int read_batched(struct tb_buf *b, struct pkt *out, int room,
			unsigned max)
{
	struct tb_buf_packet tp[40];
	struct tb_buf_slice sl[40];
	unsigned k, i;
	int n = 0;

	tb_buf_begin_read(b);
	while ((k = tb_buf_read_packets(b, tp, sl, max))) {
		ck_assert_uint_le(k, max);
		for (i = 0; i < k; i++) {
			/* only the last may have its slices elsewhere */
			if (i + 1 < k)
				ck_assert_uint_le(tp[i].nslices, 1);
			ck_assert_int_lt(n, room);
			flatten(&tp[i], &out[n++]);
		}
	}
	return n;
}

static void assert_same_packets(const struct pkt *a, const struct pkt *b,
				int n)
{
	int i;

	for (i = 0; i < n; i++) {
		ck_assert_uint_eq(a[i].p, b[i].p);
		ck_assert_uint_eq(a[i].w, b[i].w);
		ck_assert_uint_eq(a[i].loss, b[i].loss);
		ck_assert_uint_eq(a[i].nslices, b[i].nslices);
		ck_assert_uint_eq(a[i].size, b[i].size);
		ck_assert_str_eq(a[i].str, b[i].str);
		ck_assert_uint_eq(a[i].ident.uid, b[i].ident.uid);
		ck_assert_int_eq(a[i].ident.pid, b[i].ident.pid);
	}
}

static struct pkt pk2[8192];

START_TEST(test_batched_reads_give_what_single_reads_give)
{
	static const unsigned maxes[] = { 1, 2, 3, 7, 32, 40 };
	struct tb_buf *b[2];
	uint32_t ids[4] = { 0, 0, 0, 0 };
	unsigned round, i;

	rng = 1;
	/* small: the buffer wraps, packets are overwritten on the way */
	b[0] = tb_buf_create(16384, TB_BUF_RING_BUFFER);
	b[1] = tb_buf_create(16384, TB_BUF_RING_BUFFER);
	ck_assert(b[0] && b[1]);
	for (round = 0; round < 400; round++) {
		unsigned max = maxes[round % 6];
		int n0, n1;

		for (i = rnd(round % 5 ? 40 : 400); i; i--)
			put_random(b, 2, ids);
		n0 = read_all(b[0], pk, 8192);
		n1 = read_batched(b[1], pk2, 8192, max);
		ck_assert_int_eq(n0, n1);
		assert_same_packets(pk, pk2, n0);
		ck_assert_mem_eq(tb_buf_stats(b[0]), tb_buf_stats(b[1]),
				 sizeof(struct tb_buf_stats));
	}
	ck_assert_uint_gt(tb_buf_stats(b[1])->chunks_overwritten, 0);
	ck_assert_uint_gt(tb_buf_stats(b[1])->readaheads_succeeded, 0);
	tb_buf_destroy(b[0]);
	tb_buf_destroy(b[1]);
}
END_TEST

START_TEST(test_batched_read_takes_no_packet_when_there_is_none)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct tb_buf_packet tp[4];
	struct tb_buf_slice sl[4];

	ck_assert_uint_eq(tb_buf_read_packets(b, tp, sl, 4), 0);
	ck_assert_int_eq(put_s(b, 1, 1, 0, "ab"), TB_OK);
	/* no read batch begun */
	ck_assert_uint_eq(tb_buf_read_packets(b, tp, sl, 4), 0);
	tb_buf_begin_read(b);
	ck_assert_uint_eq(tb_buf_read_packets(b, tp, sl, 0), 0);
	ck_assert_uint_eq(tb_buf_read_packets(b, tp, sl, 4), 2);
	ck_assert_uint_eq(tb_buf_read_packets(b, tp, sl, 4), 0);
	tb_buf_destroy(b);
}
END_TEST

/*
 * A read starts past the padding the last read left at the start of the
 * buffer's order: it must read what a read of the whole walk reads.  A
 * read-only clone has no such memory of earlier reads, so reading it
 * first is the oracle; small buffers wrap often, and reads come between
 * writes at random points.
 */
START_TEST(test_read_past_old_padding_reads_what_a_full_walk_reads)
{
	static const size_t sizes[] = { 4096, 8192, 16384 };
	uint32_t ids[4] = { 0, 0, 0, 0 };
	unsigned k, round, i;

	rng = 7;
	for (k = 0; k < 3; k++) {
		struct tb_buf *b = tb_buf_create(sizes[k], TB_BUF_RING_BUFFER);

		ck_assert(b);
		for (round = 0; round < 1500; round++) {
			struct tb_buf *c;
			int n0, n1;

			/* now and then more than the padding left */
			for (i = rnd(round % 7 ? 12 : 60); i; i--)
				put_random(&b, 1, ids);
			c = tb_buf_clone_readonly(b);
			ck_assert(c);
			n0 = read_all(c, pk, 8192);
			n1 = read_all(b, pk2, 8192);
			ck_assert_int_eq(n0, n1);
			assert_same_packets(pk, pk2, n0);
			tb_buf_destroy(c);
		}
		ck_assert_uint_gt(tb_buf_stats(b)->write_wrap_count, 10);
		tb_buf_destroy(b);
	}
}
END_TEST

/*
 * tb_buf_copy_packed() is tb_buf_copy_frags() for fragments laid back to
 * back: the same chunks, in random sizes (empty ones, ones with two- and
 * three-byte lengths, chunks too big), complete and scraped, go into two
 * buffers, one by each, and everything read or counted is the same.
 */
START_TEST(test_packed_fragments_are_copied_as_a_fragment_vector)
{
	static uint8_t data[8 * 20000];
	struct tb_buf *b[2];
	uint32_t ids[3] = { 0, 0, 0 };
	unsigned round, k, i;

	rng = 3;
	b[0] = tb_buf_create(1 << 18, TB_BUF_RING_BUFFER);
	b[1] = tb_buf_create(1 << 18, TB_BUF_RING_BUFFER);
	ck_assert(b[0] && b[1]);
	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)('a' + rnd(26));
	for (round = 0; round < 300; round++) {
		int n0, n1;

		for (k = rnd(20); k; k--) {
			struct tb_buf_frag f[8];
			struct tb_buf_chunk_in in;
			uint16_t sizes[8];
			unsigned w = rnd(3), nf = rnd(8);
			size_t off = 0;
			bool big = k == 1 && round % 50 == 0;

			memset(&in, 0, sizeof(in));
			if (big)
				nf = 5;	/* over 64 KiB framed: refused */
			for (i = 0; i < nf; i++) {
				uint32_t r = big ? 63 : rnd(64);

				sizes[i] = (uint16_t)(r < 8 ? 0 :
						      r < 56 ? rnd(200) :
						      r < 62 ? rnd(2000) :
						      16000 + rnd(4000));
				f[i].data = data + off;
				f[i].size = sizes[i];
				off += sizes[i];
			}
			in.producer_id = 1;
			in.writer_id = (uint16_t)(1 + w);
			in.chunk_id = ids[w]++;
			in.flags = (uint8_t)(rnd(4) ? 0 : F) |
				   (uint8_t)(rnd(4) ? 0 : L);
			in.complete = rnd(8) != 0;
			ck_assert_int_eq(tb_buf_copy_frags(b[0], &in, f, nf),
					 tb_buf_copy_packed(b[1], &in, data,
							    sizes, nf));
		}
		n0 = read_all(b[0], pk, 8192);
		n1 = read_all(b[1], pk2, 8192);
		ck_assert_int_eq(n0, n1);
		assert_same_packets(pk, pk2, n0);
		ck_assert_mem_eq(tb_buf_stats(b[0]), tb_buf_stats(b[1]),
				 sizeof(struct tb_buf_stats));
	}
	ck_assert_uint_gt(tb_buf_stats(b[1])->chunks_overwritten, 0);
	ck_assert_uint_gt(tb_buf_stats(b[1])->abi_violations, 0);
	tb_buf_destroy(b[0]);
	tb_buf_destroy(b[1]);
}
END_TEST

/* Empty fragments, or none, need no bytes: a chunk of them is stored. */
START_TEST(test_packed_empty_fragments_need_no_bytes)
{
	struct tb_buf *b = tb_buf_create(4096, TB_BUF_RING_BUFFER);
	struct tb_buf_chunk_in in;
	uint16_t none[2] = { 0, 0 };

	memset(&in, 0, sizeof(in));
	in.producer_id = 1;
	in.writer_id = 1;
	in.complete = true;
	ck_assert_int_eq(tb_buf_copy_packed(b, &in, NULL, none, 2), TB_OK);
	in.chunk_id = 1;
	ck_assert_int_eq(tb_buf_copy_packed(b, &in, NULL, NULL, 0), TB_OK);
	ck_assert_uint_eq(tb_buf_stats(b)->chunks_written, 2);
	ck_assert_str_eq(read_str(b), "");
	tb_buf_destroy(b);
}
END_TEST

/* ---- Suites ------------------------------------------------------------- */

static Suite *storage_suite(void)
{
	Suite *s = suite_create("tbuffer_storage");
	TCase *t = tcase_create("storage");

	tcase_add_test(t, test_buffer_size_rounds_up_to_page);
	tcase_add_test(t, test_whole_packets_come_back_in_order_with_identity);
	tcase_add_test(t, test_reading_is_destructive);
	tcase_add_test(t, test_empty_buffer_reads_nothing);
	tcase_add_test(t, test_empty_packet_is_consumed_but_never_returned);
	tcase_add_test(t, test_records_are_header_plus_16_aligned_payload);
	tcase_add_test(t,
		test_trailing_bytes_after_declared_fragments_are_not_stored);
	tcase_add_test(t, test_global_order_follows_write_order);
	tcase_add_test(t, test_sequences_are_keyed_by_producer_and_writer);
	tcase_add_test(t, test_identity_comes_from_the_first_commit);
	tcase_add_test(t, test_write_ends_the_read_batch);
	tcase_add_test(t, test_all_memory_goes_through_the_allocator_hook);
	tcase_add_test(t, test_allocation_failure_is_an_error_not_a_crash);
	tcase_add_test(t, test_create_says_why_it_failed);
	tcase_add_test(t,
	    test_packet_without_memory_for_its_slices_is_dropped_as_loss);
	tcase_add_test(t, test_batched_reads_give_what_single_reads_give);
	tcase_add_test(t, test_batched_read_takes_no_packet_when_there_is_none);
	tcase_add_test(t,
		test_read_past_old_padding_reads_what_a_full_walk_reads);
	tcase_add_test(t,
		test_packed_fragments_are_copied_as_a_fragment_vector);
	tcase_add_test(t,
		test_packed_empty_fragments_need_no_bytes);
	suite_add_tcase(s, t);
	return s;
}

static Suite *fragments_suite(void)
{
	Suite *s = suite_create("tbuffer_fragments");
	TCase *t = tcase_create("fragments");

	tcase_add_test(t, test_lone_fragment_with_both_flags_is_a_continuation);
	tcase_add_test(t, test_lone_fragment_with_first_flag_is_an_end);
	tcase_add_test(t, test_lone_fragment_with_last_flag_is_a_begin);
	tcase_add_test(t, test_first_flag_applies_only_to_the_first_fragment);
	tcase_add_test(t, test_last_flag_applies_only_to_the_last_fragment);
	tcase_add_test(t, test_orphan_continuation_is_consumed_and_reported);
	tcase_add_test(t, test_missing_continuation_stalls_without_consuming);
	tcase_add_test(t, test_stall_blocks_only_its_own_sequence);
	tcase_add_test(t, test_reassembly_gap_consumes_and_reports);
	tcase_add_test(t,
		test_broken_chain_leaves_the_next_fragment_for_reading);
	tcase_add_test(t, test_empty_chunk_inside_a_chain_is_skipped);
	tcase_add_test(t, test_long_packet_spans_many_chunks);
	tcase_add_test(t, test_fragment_vector_is_framed_while_copying);
	tcase_add_test(t, test_fragment_vector_abort_and_incomplete);
	tcase_add_test(t, test_fragment_vector_over_64k_is_rejected);
	tcase_add_test(t, test_varint_round_trips_boundary_values);
	tcase_add_test(t,
	    test_frag_iter_reports_end_abort_and_bad_without_advancing);
	suite_add_tcase(s, t);
	return s;
}

static Suite *order_suite(void)
{
	Suite *s = suite_create("tbuffer_order");
	TCase *t = tcase_create("order");

	tcase_add_test(t, test_out_of_order_commits_are_read_in_chunk_id_order);
	tcase_add_test(t,
	    test_out_of_order_sequence_rewinds_but_others_keep_buffer_order);
	tcase_add_test(t, test_reassembly_across_out_of_order_chunks);
	tcase_add_test(t, test_chunk_id_gap_reports_read_gap);
	tcase_add_test(t, test_gap_detection_survives_across_reads);
	tcase_add_test(t, test_gap_in_out_of_order_walk_is_reported);
	tcase_add_test(t,
	    test_contiguous_reassembly_after_a_gap_in_the_same_walk_succeeds);
	tcase_add_test(t, test_new_sequence_never_reports_a_gap);
	tcase_add_test(t, test_ids_at_or_below_last_consumed_are_discarded);
	tcase_add_test(t, test_chunk_made_stale_by_making_room_is_dropped);
	tcase_add_test(t,
		test_buffer_wraparound_keeps_the_newest_data_in_order);
	tcase_add_test(t,
		test_chunk_id_wraparound_keeps_order_and_detects_no_gap);
	tcase_add_test(t, test_reassembly_across_chunk_id_wraparound);
	tcase_add_test(t, test_lazy_gc_keeps_the_last_1024_empty_sequences);
	suite_add_tcase(s, t);
	return s;
}

static Suite *patch_suite(void)
{
	Suite *s = suite_create("tbuffer_patch");
	TCase *t = tcase_create("patch");

	tcase_add_test(t,
		test_patch_applies_bytes_and_clears_flag_when_no_more_pending);
	tcase_add_test(t, test_unpatched_continuation_chunk_stalls_reassembly);
	tcase_add_test(t,
		test_failed_patch_batch_counts_once_and_keeps_earlier_patches);
	tcase_add_test(t, test_patch_at_last_possible_offset_succeeds);
	tcase_add_test(t, test_patch_to_payload_smaller_than_patch_fails);
	tcase_add_test(t, test_patch_to_unknown_sequence_or_chunk_fails);
	tcase_add_test(t, test_patch_finds_a_sequence_created_after_a_miss);
	tcase_add_test(t, test_patch_to_consumed_chunk_fails);
	tcase_add_test(t, test_patch_ends_the_read_batch);
	tcase_add_test(t, test_patch_lookup_finds_every_chunk_among_thousands);
	tcase_add_test(t, test_patch_lookup_across_the_id_wrap);
	tcase_add_test(t, test_patch_finds_its_sequence_after_the_table_grows);
	tcase_add_test(t,
		test_patch_misses_a_swept_sequence_whose_slot_another_took);
	suite_add_tcase(s, t);
	return s;
}

static Suite *scrape_suite(void)
{
	Suite *s = suite_create("tbuffer_scrape");
	TCase *t = tcase_create("scrape");

	tcase_add_test(t, test_scraped_chunk_ignores_last_fragment_and_stalls);
	tcase_add_test(t, test_scraped_chunk_reserves_its_whole_size);
	tcase_add_test(t,
		test_scraped_chunk_drops_last_flag_and_needs_patching);
	tcase_add_test(t, test_recommit_may_not_shrink);
	tcase_add_test(t, test_recommit_may_not_exceed_the_reservation);
	tcase_add_test(t, test_recommit_may_add_flags_but_not_remove_them);
	tcase_add_test(t, test_identical_recommit_is_a_no_op);
	tcase_add_test(t, test_recommit_keeps_what_was_already_read);
	tcase_add_test(t,
		test_recommit_that_moves_the_read_boundary_is_rejected);
	tcase_add_test(t,
		test_drained_scraped_head_is_relocated_on_final_commit);
	tcase_add_test(t, test_discard_mode_never_relocates);
	tcase_add_test(t, test_refused_recommit_leaves_its_sequence_stalled);
	tcase_add_test(t,
	    test_readmission_that_moves_the_read_boundary_is_rejected);
	tcase_add_test(t,
	    test_readmitted_chunk_is_no_gap_even_when_nothing_was_consumed);
	tcase_add_test(t,
		test_evicted_scraped_chunk_is_readmitted_with_its_new_tail);
	suite_add_tcase(s, t);
	return s;
}

static Suite *overwrite_suite(void)
{
	Suite *s = suite_create("tbuffer_overwrite");
	TCase *t = tcase_create("overwrite");

	tcase_add_test(t,
		test_overwrite_deletes_oldest_chunks_and_reports_loss);
	tcase_add_test(t,
		test_overwrite_loss_goes_only_to_the_overwritten_sequence);
	tcase_add_test(t,
		test_overwrite_callback_gets_packets_in_sequence_order);
	tcase_add_test(t, test_overwrite_without_callback_only_counts);
	tcase_add_test(t, test_overwrite_callback_packets_carry_no_loss);
	tcase_add_test(t,
		test_overwrite_without_callback_reconstructs_no_packets);
	tcase_add_test(t,
		test_overwrite_forces_out_incomplete_and_unpatched_chunks);
	tcase_add_test(t,
	    test_overwrite_of_stalled_begin_reports_overwrite_on_next_packet);
	tcase_add_test(t,
		test_overwrite_of_open_packet_takes_its_continuation_too);
	tcase_add_test(t,
		test_overwrite_of_unpatched_begin_leaves_its_continuation);
	tcase_add_test(t, test_overwrite_of_unpatched_begin_leaves_its_end);
	tcase_add_test(t,
	    test_overwritten_chunk_whose_tail_does_not_tokenize_is_not_counted);
	tcase_add_test(t,
		test_patch_batch_failing_part_way_leaves_its_bytes_looked_at);
	tcase_add_test(t, test_partial_overwrite_leaves_a_padding_record);
	tcase_add_test(t, test_header_only_padding_when_16_bytes_remain);
	tcase_add_test(t, test_exact_fill_wraps_only_on_the_next_write);
	tcase_add_test(t, test_callback_cannot_reenter_the_buffer);
	tcase_add_test(t, test_callback_cannot_patch_the_buffer);
	tcase_add_test(t, test_discard_policy_latches_on_first_overflow);
	tcase_add_test(t, test_discard_policy_allows_exact_fill);
	tcase_add_test(t, test_patches_still_work_after_discard_latch);
	suite_add_tcase(s, t);
	return s;
}

static Suite *loss_suite(void)
{
	Suite *s = suite_create("tbuffer_loss");
	TCase *t = tcase_create("loss");

	tcase_add_test(t, test_loss_reason_bits_match_perfetto);
	tcase_add_test(t, test_writer_abort_marker_keeps_earlier_fragments);
	tcase_add_test(t,
		test_loss_is_reported_once_on_the_next_packet_of_the_sequence);
	tcase_add_test(t, test_gap_before_a_stalled_chunk_is_reported_once);
	tcase_add_test(t,
		test_data_loss_flag_reports_smb_full_once_when_reached);
	tcase_add_test(t,
		test_data_loss_flag_out_of_order_waits_for_its_chunk);
	tcase_add_test(t,
		test_data_loss_flag_reached_by_reassembly_is_reported);
	tcase_add_test(t, test_patched_garbage_reports_chunk_corrupted);
	tcase_add_test(t, test_stats_count_outer_sizes_when_chunks_empty);
	tcase_add_test(t, test_clone_is_independent_of_the_original);
	tcase_add_test(t, test_clone_keeps_sequence_state);
	tcase_add_test(t, test_write_to_clone_is_an_error);
	tcase_add_test(t,
		test_patch_to_buffer_made_read_only_is_an_error);
	tcase_add_test(t, test_clone_copies_stats_but_resets_read_counters);
	suite_add_tcase(s, t);
	return s;
}

static Suite *bad_input_suite(void)
{
	Suite *s = suite_create("tbuffer_bad_input");
	TCase *t = tcase_create("bad_input");

	tcase_set_timeout(t, 60);	/* catches a hang, not slowness */
	tcase_add_test(t,
		test_fewer_fragments_than_declared_is_an_abi_violation);
	tcase_add_test(t, test_fragment_size_past_the_payload_keeps_the_prefix);
	tcase_add_test(t,
		test_fragment_length_past_the_payload_by_its_own_bytes_is_corrupt);
	tcase_add_test(t, test_eleven_byte_varint_is_an_abi_violation);
	tcase_add_test(t, test_truncated_varint_is_an_abi_violation);
	tcase_add_test(t, test_chunk_larger_than_the_buffer_is_rejected);
	tcase_add_test(t, test_chunk_payload_over_64k_is_rejected);
	tcase_add_test(t, test_writer_id_zero_is_rejected);
	tcase_add_test(t, test_absurd_chunk_id_is_rejected_without_damage);
	tcase_add_test(t, test_out_of_bounds_patch_does_not_touch_neighbours);
	tcase_add_test(t, test_lying_producer_does_not_damage_other_sequences);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(storage_suite());
	int failed;

	srunner_add_suite(sr, fragments_suite());
	srunner_add_suite(sr, order_suite());
	srunner_add_suite(sr, patch_suite());
	srunner_add_suite(sr, scrape_suite());
	srunner_add_suite(sr, overwrite_suite());
	srunner_add_suite(sr, loss_suite());
	srunner_add_suite(sr, bad_input_suite());
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
