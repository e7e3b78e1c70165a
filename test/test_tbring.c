/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_tbring.c - conformance of tbring.h to the shared ring chunk
 * protocol (specification sections 2-8): the state-word ABI, geometry,
 * every transition, the three races driven step by step from one thread,
 * the section 2 scenarios, every reader and writer exit, relocation after
 * a scrape, and hostile shared memory.
 *
 * Expected words are written from the specification (spec_word() and the
 * hex values it lists) and read back from the chunk in the host's byte
 * order, never through tbring.h's decoders; the BufferID and directory
 * are read as the little-endian bytes the specification makes them.
 */
/* the protocol steps, one at a time (see tbring.h) */
#define TB_PROTOCOL_STEPS 1
#include <check.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define TB_TEST_HOOKS 1
#include "tbpacket.h"
#include "ring_helpers.h"

/* The atomics seam of tbring.h (TB_TEST_HOOKS): NULL unless a test sets it. */
void (*tb_test_atomic)(const uint32_t *p, int op, uint32_t expect,
		       uint32_t v, int ok, int fail);

#define WA	7	/* writer ids */
#define WB	9
#define WC	11
#define BID	0x1234

/* ------------------------------------------------------------------------
 * (a) ABI: the state word and positions (sections 3.2, 3.3, 4)
 */
START_TEST(test_state_words_are_the_spec_hex_values)
{
	ck_assert_uint_eq(tb_state_free(0), 0x00000000u);
	ck_assert_uint_eq(tb_state_free(5), 0x00000005u);
	ck_assert_uint_eq(tb_state_data(TB_ACQUIRED, 0, 0, 0, 7), 0x20000007u);
	ck_assert_uint_eq(tb_state_data(TB_COMPLETE, 0, 0, 3, 7), 0x40030007u);
	ck_assert_uint_eq(tb_state_data(TB_REWRITE, 0, 0, 3, 7), 0x60030007u);
	ck_assert_uint_eq(tb_state_data(TB_COMPLETE, 0, TB_F_CONT_NEXT, 2,
					0x1234), 0x42021234u);
	ck_assert_uint_eq(TB_WORD_ACKED, 0x80000000u);
	/* the enum and flag values are the ABI's */
	ck_assert_int_eq(TB_FREE, 0);
	ck_assert_int_eq(TB_ACQUIRED, 1);
	ck_assert_int_eq(TB_COMPLETE, 2);
	ck_assert_int_eq(TB_REWRITE, 3);
	ck_assert_int_eq(TB_ACKED, 4);
	ck_assert_uint_eq(TB_F_CONT_PREV, 1u << 26);
	ck_assert_uint_eq(TB_F_CONT_NEXT, 1u << 25);
	ck_assert_uint_eq(TB_F_DATA_LOSS, 1u << 24);
	ck_assert_uint_eq(TB_FORMAT_TARGET, 0);
}
END_TEST

START_TEST(test_data_bearing_fields_round_trip)
{
	static const unsigned states[] = { TB_ACQUIRED, TB_COMPLETE,
					   TB_REWRITE };
	static const uint32_t flags[] = {
		0, TB_F_CONT_PREV, TB_F_CONT_NEXT, TB_F_DATA_LOSS,
		TB_F_CONT_PREV | TB_F_DATA_LOSS,
		TB_F_CONT_PREV | TB_F_CONT_NEXT | TB_F_DATA_LOSS,
	};
	static const unsigned counts[] = { 0, 1, 127, 128, 254, 255 };
	static const uint16_t writers[] = { 0, 1, 0x1234, 0x7fff, 0xffff };
	unsigned s, f, n, w, fmt;

	for (s = 0; s < 3; s++)
	for (f = 0; f < 6; f++)
	for (n = 0; n < 6; n++)
	for (w = 0; w < 5; w++)
	for (fmt = 0; fmt < 4; fmt++) {
		uint32_t word = tb_state_data(states[s], fmt, flags[f],
					      counts[n], writers[w]);

		ck_assert_uint_eq(word, spec_word(states[s], fmt,
						  flags[f] >> 24, counts[n],
						  writers[w]));
		ck_assert_uint_eq(tb_state_of(word), states[s]);
		ck_assert(tb_state_is_data(tb_state_of(word)));
		ck_assert_uint_eq(tb_state_format(word), fmt);
		ck_assert_uint_eq(tb__state_flags(word), flags[f]);
		ck_assert_uint_eq(tb_state_nfrags(word), counts[n]);
		ck_assert_uint_eq(tb_state_writer(word), writers[w]);
	}
}
END_TEST

START_TEST(test_free_word_carries_only_the_wrap_count)
{
	static const uint32_t wraps[] = { 0, 1, 2, 0x12345, 0x1fffffff };
	unsigned i;

	for (i = 0; i < 5; i++) {
		uint32_t word = tb_state_free(wraps[i]);

		ck_assert_uint_eq(word, wraps[i]);
		ck_assert_uint_eq(tb_state_of(word), TB_FREE);
		ck_assert_uint_eq(tb__state_wrap(word), wraps[i]);
		ck_assert(!tb_state_is_data(tb_state_of(word)));
	}
	/* masked to 29 bits, never spilling into the state */
	ck_assert_uint_eq(tb_state_free(0xffffffffu), 0x1fffffffu);
	ck_assert_uint_eq(tb_state_free(0x20000000u), 0);
}
END_TEST

START_TEST(test_with_state_changes_only_bits_31_to_29)
{
	static const uint32_t words[] = {
		0x00000000u, 0x1fffffffu, 0x2f0f0f0fu, 0x42021234u,
		0x7fffffffu, 0x80000000u, 0xffffffffu, 0x6a5a1234u,
	};
	unsigned i, st;

	for (i = 0; i < 8; i++)
		for (st = 0; st < 8; st++) {
			uint32_t got = tb_state_with(words[i], st);

			ck_assert_uint_eq(got >> 29, st);
			ck_assert_uint_eq(got & 0x1fffffffu,
					  words[i] & 0x1fffffffu);
		}
	/* Acquired(fmt 01, P|L, 17, 0x0f0f) -> RewriteRequested */
	ck_assert_uint_eq(tb_state_with(spec_word(SPEC_ACQ, 1, SPEC_P | SPEC_L,
						  17, 0x0f0f), TB_REWRITE),
			  spec_word(SPEC_RR, 1, SPEC_P | SPEC_L, 17, 0x0f0f));
}
END_TEST

START_TEST(test_reserved_states_decode_as_5_6_7)
{
	static const unsigned want[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	unsigned i;

	for (i = 0; i < 8; i++) {
		uint32_t word = (uint32_t)(2 * i) << 28;

		ck_assert_uint_eq(tb_state_of(word), want[i]);
		ck_assert_uint_eq(tb_state_of(word | 0x1fffffffu), want[i]);
		ck_assert_int_eq(tb_state_is_data(i), i >= 1 && i <= 3);
	}
	ck_assert_uint_eq(tb_state_of(0xa0000000u), 5);
	ck_assert_uint_eq(tb_state_of(0xc0000000u), 6);
	ck_assert_uint_eq(tb_state_of(0xe0000000u), 7);
}
END_TEST

START_TEST(test_chunk_index_and_wrap_table_for_4_chunks)
{
	static const uint32_t idx[13] = { 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3,
					  0 };
	static const uint32_t wrap[13] = { 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
					   3 };
	uint32_t p;

	for (p = 0; p <= 12; p++) {
		ck_assert_uint_eq(tb_pos_index(p, 4), idx[p]);
		ck_assert_uint_eq(tb_pos_wrap(p, 2), wrap[p]);
	}
}
END_TEST

START_TEST(test_chunk_index_and_wrap_for_several_ring_sizes)
{
	static const uint32_t sizes[] = { 2, 4, 8, 16, 1024 };
	unsigned k;
	uint32_t p;

	for (k = 0; k < 5; k++) {
		uint32_t n = sizes[k];
		unsigned bits = 0;

		while ((1u << bits) < n)
			bits++;
		for (p = 0; p < 3 * n; p++) {
			ck_assert_uint_eq(tb_pos_index(p, n), p % n);
			ck_assert_uint_eq(tb_pos_wrap(p, bits), p / n);
		}
	}
	/* 2^30 chunks: the largest ring */
	ck_assert_uint_eq(tb_pos_index(0xffffffffu, 1u << 30), 0x3fffffffu);
	ck_assert_uint_eq(tb_pos_wrap(0xffffffffu, 30), 3);
}
END_TEST

START_TEST(test_distance_is_exact_across_cursor_rollover)
{
	static const uint32_t want_idx[6] = { 4, 5, 6, 7, 0, 1 };
	unsigned i;

	ck_assert_uint_eq(tb_pos_distance(2, 0xfffffffcu), 6);
	ck_assert_uint_eq(tb_pos_distance(0, 0), 0);
	ck_assert_uint_eq(tb_pos_distance(0, 0xffffffffu), 1);
	ck_assert_uint_eq(tb_pos_distance(0xffffffffu, 0xfffffffeu), 1);
	ck_assert_uint_eq(tb_pos_distance(0x7fffffffu, 0xffffffffu),
			  0x80000000u);
	for (i = 0; i < 6; i++)
		ck_assert_uint_eq(tb_pos_index(0xfffffffcu + i, 8),
				  want_idx[i]);
}
END_TEST

START_TEST(test_next_wrap_is_computed_from_the_position)
{
	uint32_t p;

	for (p = 0; p < 16; p++)
		ck_assert_uint_eq(tb_pos_next_wrap(p, 2),
				  tb_pos_wrap(p, 2) + 1);
	/* 16 chunks at 0xfffffff0: index 0, wrap 0x0fffffff, next 0 */
	ck_assert_uint_eq(tb_pos_index(0xfffffff0u, 16), 0);
	ck_assert_uint_eq(tb_pos_wrap(0xfffffff0u, 4), 0x0fffffffu);
	ck_assert_uint_eq(tb_pos_next_wrap(0xfffffff0u, 4), 0);
	/* 8 chunks: wrap(UINT32_MAX) = 0x1fffffff, whose next is 0 */
	ck_assert_uint_eq(tb_pos_wrap(0xffffffffu, 3), 0x1fffffffu);
	ck_assert_uint_eq(tb_pos_index(0xfffffff8u, 8), 0);
	ck_assert_uint_eq(tb_pos_wrap(0xfffffff8u, 3), 0x1fffffffu);
	ck_assert_uint_eq(tb_pos_next_wrap(0xfffffff8u, 3), 0);
	/* and the free word it makes is FreeForWrap(0), not Acquired */
	ck_assert_uint_eq(tb_state_free(tb_pos_next_wrap(0xfffffff8u, 3)), 0);
}
END_TEST

START_TEST(test_wrap_identity_repeats_after_documented_period)
{
	uint32_t p;

	/* 2 chunks: period 2^30 */
	ck_assert_uint_eq(tb_pos_wrap(0, 1), tb_pos_wrap(1u << 30, 1));
	ck_assert_uint_eq(tb_pos_index(0, 2), tb_pos_index(1u << 30, 2));
	for (p = 2; p <= 14; p += 2)
		ck_assert_uint_ne(tb_pos_wrap(p, 1), tb_pos_wrap(0, 1));
	ck_assert_uint_ne(tb_pos_wrap((1u << 30) - 2, 1), tb_pos_wrap(0, 1));
	/* 4 chunks: period 2^31 */
	ck_assert_uint_eq(tb_pos_wrap(0, 2), tb_pos_wrap(1u << 31, 2));
	ck_assert_uint_ne(tb_pos_wrap(0, 2), tb_pos_wrap(1u << 30, 2));
	/* 8 chunks: the 32-bit position wraps first, no repeat before it */
	ck_assert_uint_ne(tb_pos_wrap(0, 3), tb_pos_wrap(1u << 31, 3));
	ck_assert_uint_ne(tb_pos_wrap(0, 3), tb_pos_wrap(0xfffffff8u, 3));
}
END_TEST

START_TEST(test_ring_wrap_helpers_match_position_arithmetic)
{
	struct tring t;
	uint32_t p;

	tring_new(&t, 256, 16);
	ck_assert_uint_eq(t.r.chunk_bits, 4);
	for (p = 0xffffffe0u; p != 0x20; p++) {
		ck_assert_uint_eq(tb_ring_wrap(&t.r, p), (p >> 4) & 0x1fffffff);
		ck_assert_uint_eq(tb_ring_next_wrap(&t.r, p),
				  ((p + 16) >> 4) & 0x1fffffff);
		ck_assert_ptr_eq(tb_ring_chunk(&t.r, p), tchunk(&t, p & 15));
	}
	tring_free(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * (b) Geometry, init and attach (sections 3.1, 4.1)
 */
START_TEST(test_ring_size_rejects_illegal_geometry)
{
	static const uint32_t bad_counts[] = { 0, 1, 3, 6, 12, 1u << 31,
					       0xffffffffu, (1u << 30) + 1 };
	static const uint32_t bad_sizes[] = { 0, 1, 128, 255, 257, 384, 768,
					      65536, 0x80000000u };
	unsigned i;

	for (i = 0; i < sizeof(bad_counts) / sizeof(bad_counts[0]); i++)
		ck_assert_uint_eq(tb_ring_size(256, bad_counts[i]), 0);
	for (i = 0; i < sizeof(bad_sizes) / sizeof(bad_sizes[0]); i++)
		ck_assert_uint_eq(tb_ring_size(bad_sizes[i], 4), 0);
}
END_TEST

START_TEST(test_ring_size_accepts_every_legal_geometry)
{
	uint32_t cs, n;

	for (cs = 256; cs <= 32768; cs *= 2)
		for (n = 2; n <= 1024; n *= 2) {
			size_t len = tb_ring_size(cs, n);

			ck_assert_uint_gt(len, (size_t)cs * n);
			ck_assert_uint_eq(len - (size_t)cs * n,
					  tb_ring_size(256, 2) - 512);
		}
	/* the largest count: fits a 64-bit size_t, not a 32-bit one */
	if (SIZE_MAX > 0xffffffffu)
		ck_assert_uint_gt(tb_ring_size(256, 1u << 30),
				  (size_t)256 << 30);
	else
		ck_assert_uint_eq(tb_ring_size(256, 1u << 30), 0);
}
END_TEST

START_TEST(test_init_accepts_each_legal_chunk_size)
{
	uint32_t cs, n;

	for (cs = 256; cs <= 32768; cs *= 2) {
		struct tring t;

		tring_new(&t, cs, 4);
		ck_assert_uint_eq(t.r.chunk_size, cs);
		ck_assert_uint_eq(t.r.num_chunks, 4);
		ck_assert_uint_eq(t.r.chunk_bits, 2);
		ck_assert_uint_eq(t.r.width, spec_width(cs));
		tring_free(&t);
	}
	for (n = 2; n <= 1024; n *= 2) {
		struct tring t;
		uint32_t bits = 0;

		while ((1u << bits) < n)
			bits++;
		tring_new(&t, 256, n);
		ck_assert_uint_eq(t.r.num_chunks, n);
		ck_assert_uint_eq(t.r.chunk_bits, bits);
		tring_free(&t);
	}
}
END_TEST

START_TEST(test_init_rejects_bad_memory_and_geometry)
{
	size_t len = tb_ring_size(256, 4);
	uint8_t *mem = (uint8_t *)ring_mem(len + TB_RING_LINE);
	struct tb_ring r;

	ck_assert_int_eq(tb_ring_init(&r, mem, len - 1, 256, 4), TB_ESHORT);
	ck_assert_int_eq(tb_ring_init(&r, NULL, len, 256, 4), TB_EINVAL);
	ck_assert_int_eq(tb_ring_init(&r, mem + 1, len, 256, 4), TB_EALIGN);
	ck_assert_int_eq(tb_ring_init(&r, mem, len, 384, 4), TB_EGEOMETRY);
	ck_assert_int_eq(tb_ring_init(&r, mem, len, 256, 3), TB_EGEOMETRY);
	ck_assert_int_eq(tb_ring_init(&r, mem, len, 256, 1), TB_EGEOMETRY);
	ck_assert_int_eq(tb_ring_init(&r, mem, len, 256, 4), TB_OK);
	free(mem);
}
END_TEST

/*
 * The header's lines are the ABI's (TB_RING_LINE): a mapping that is
 * not aligned to them is refused by init and by attach, at every offset
 * that 4-byte alignment (all that was checked once) let through.
 */
START_TEST(test_init_and_attach_refuse_memory_not_line_aligned)
{
	size_t len = tb_ring_size(256, 4);
	uint8_t *mem = (uint8_t *)ring_mem(len + TB_RING_LINE);
	struct tb_ring r;
	unsigned off;

	ck_assert_ptr_nonnull(mem);
	ck_assert_uint_eq(TB_RING_LINE, 64);
	for (off = 4; off < TB_RING_LINE; off += 4) {
		ck_assert_int_eq(tb_ring_init(&r, mem + off, len, 256, 4),
				 TB_EALIGN);
		ck_assert_uint_eq(mem[off], 0);	/* nothing written */
	}
	ck_assert_int_eq(tb_ring_init(&r, mem, len, 256, 4), TB_OK);
	/* a valid header copied to a misaligned place: still refused */
	for (off = 4; off < TB_RING_LINE; off += 4) {
		memmove(mem + off, mem, len);
		ck_assert_int_eq(tb_ring_attach(&r, mem + off, len),
				 TB_EALIGN);
		memmove(mem, mem + off, len);
	}
	ck_assert_int_eq(tb_ring_attach(&r, mem, len), TB_OK);
	ck_assert_int_eq(tb_ring_attach(&r, mem + TB_RING_LINE, len),
			 TB_EMAGIC);	/* aligned: validated further */
	free(mem);
}
END_TEST

/*
 * The control header's layout, field by field, from the ABI's table
 * (docs/protocol.md); the header checks the same at compile time.
 */
START_TEST(test_control_header_offsets_are_the_abi)
{
	ck_assert_uint_eq(TB_RING_VERSION, 3);
	ck_assert_uint_eq(TB_RING_HDR_SIZE, 512);
	ck_assert_uint_eq(sizeof(struct tb_ring_hdr), 512);
	ck_assert_uint_eq(offsetof(struct tb_ring_hdr, magic), 0);
	ck_assert_uint_eq(offsetof(struct tb_ring_hdr, version), 4);
	ck_assert_uint_eq(offsetof(struct tb_ring_hdr, hdr_size), 8);
	ck_assert_uint_eq(offsetof(struct tb_ring_hdr, chunk_log2), 12);
	ck_assert_uint_eq(offsetof(struct tb_ring_hdr, count_log2), 16);
	ck_assert_uint_eq(offsetof(struct tb_ring_hdr, write_pos), 64);
	ck_assert_uint_eq(offsetof(struct tb_ring_hdr, read_pos), 128);
	ck_assert_uint_eq(offsetof(struct tb_ring_hdr, waiters), 132);
	ck_assert_uint_eq(offsetof(struct tb_ring_hdr, wake_req), 136);
	ck_assert_uint_eq(offsetof(struct tb_ring_hdr, wake_seq), 140);
	ck_assert_uint_eq(offsetof(struct tb_ring_hdr, bell.seq), 192);
	ck_assert_uint_eq(offsetof(struct tb_ring_hdr, bell.sleeping), 196);
	ck_assert_uint_eq(offsetof(struct tb_ring_hdr, wstat), 256);
	ck_assert_uint_eq(offsetof(struct tb_ring_hdr, rstat), 320);
	ck_assert_uint_eq(offsetof(struct tb_ring_hdr, gen), 384);
	ck_assert_uint_eq(offsetof(struct tb_ring_hdr, stopped), 448);
	ck_assert_uint_le(TB_WS_MAX, 16);
	ck_assert_uint_le(TB_RS_MAX, 16);
}
END_TEST

/*
 * The counters' slots are ABI as much as their lines: another process
 * (tbtrace ring, a service of another build) reads line 4 word i as the
 * i-th writer counter of docs/protocol.md's header listing, line 5 word i
 * as the i-th reader counter.  Each name at its documented slot, and
 * the header's words where a writer's TB_FULL and a reader's outcomes
 * land, read at the documented byte offsets.
 */
START_TEST(test_counter_slots_are_the_abi)
{
	static const int wslot[] = {	/* line 4, from byte 256 */
		TB_WS_FULL, TB_WS_NO_CHUNK, TB_WS_HOLES, TB_WS_RELOCATIONS,
		TB_WS_DROPPED_FRAGS, TB_WS_STALLS, TB_WS_FUTEX_WAITS,
		TB_WS_FUTEX_WAKES, TB_WS_POLLS, TB_WS_YIELDS,
	};
	static const int rslot[] = {	/* line 5, from byte 320 */
		TB_RS_EMITTED, TB_RS_HOLES, TB_RS_SCRAPES, TB_RS_MALFORMED,
		TB_RS_UNKNOWN_FORMAT, TB_RS_RETRY_LATER, TB_RS_PINNED,
		TB_RS_FUTEX_WAITS, TB_RS_FUTEX_WAKES, TB_RS_POLLS,
	};
	struct tring t;
	struct twriter a, b, c;
	struct tb_span sp;
	unsigned i;

	for (i = 0; i < sizeof(wslot) / sizeof(wslot[0]); i++)
		ck_assert_msg(wslot[i] == (int)i, "writer counter %u at "
			      "slot %d", i, wslot[i]);
	ck_assert_int_eq(TB_WS_MAX, 10);
	for (i = 0; i < sizeof(rslot) / sizeof(rslot[0]); i++)
		ck_assert_msg(rslot[i] == (int)i, "reader counter %u at "
			      "slot %d", i, rslot[i]);
	ck_assert_int_eq(TB_RS_MAX, 10);
	/* two TB_FULL: word 0 of line 4, and nothing else there */
	tring_new(&t, 256, 2);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	twriter_new(&b, &t, WB, BID, TB_DROP);
	twriter_new(&c, &t, WC, BID, TB_DROP);
	ck_assert_int_eq(tb_writer_open(&a.w, 1, 0, &sp), TB_OK);
	ck_assert_int_eq(tb_writer_open(&b.w, 1, 0, &sp), TB_OK);
	ck_assert_int_eq(tb_writer_open(&c.w, 1, 0, &sp), TB_FULL);
	ck_assert_int_eq(tb_writer_open(&c.w, 1, 0, &sp), TB_FULL);
	for (i = 0; i < 16; i++)
		ck_assert_uint_eq(peek32((uint8_t *)t.r.hdr + 256 + 4 * i),
				  i ? 0 : 2);
	twriter_free(&a);
	twriter_free(&b);
	twriter_free(&c);
	tring_free(&t);
}
END_TEST

START_TEST(test_fresh_zero_mapping_is_free_for_wrap_zero_everywhere)
{
	struct tring t;
	struct tb_ring_stats st;
	uint32_t i;

	tring_new(&t, 256, 1024);
	for (i = 0; i < 1024; i++) {
		ck_assert_uint_eq(tword(&t, i), 0);
		ck_assert_uint_eq(tb_state_of(tword(&t, i)), TB_FREE);
	}
	tb_ring_stats(&t.r, &st);
	ck_assert_uint_eq(st.write_pos, 0);
	ck_assert_uint_eq(st.read_pos, 0);
	tring_free(&t);
}
END_TEST

/*
 * tb_ring_stats() names the writers of the chunks held, so a trace can say
 * whose packets they left open (tools/tbcheck.h explains per writer):
 * the first TB_RING_HOLDERS, each once, and counts them all.
 */
START_TEST(test_stats_name_the_writers_holding_chunks)
{
	struct twriter tw[10];
	struct tb_ring_stats st;
	struct tb_span sp;
	struct tring t;
	unsigned w, i, j;

	tring_new(&t, 256, 16);
	for (w = 0; w < 10; w++)
		twriter_new(&tw[w], &t, (uint16_t)(w + 5), 0, TB_DROP);
	topen_with(&tw[0], "a", 1, 0, &sp);		/* holds, open */
	topen_with(&tw[2], "c", 1, 0, &sp);		/* holds, open */
	ck_assert_int_eq(twrite(&tw[1], "b", 0, 0), TB_OK); /* published */
	tb_ring_stats(&t.r, &st);
	ck_assert_uint_eq(st.states[TB_ACQUIRED], 2);
	ck_assert_uint_eq(st.nholders, 2);
	ck_assert((st.holders[0] == 5 && st.holders[1] == 7) ||
		  (st.holders[0] == 7 && st.holders[1] == 5));
	for (w = 3; w < 10; w++)
		topen_with(&tw[w], "d", 1, 0, &sp);
	tb_ring_stats(&t.r, &st);
	ck_assert_uint_eq(st.nholders, 9);
	for (i = 0; i < TB_RING_HOLDERS; i++) {
		ck_assert(st.holders[i] >= 5 && st.holders[i] < 15 &&
			  st.holders[i] != 6);
		for (j = 0; j < i; j++)
			ck_assert_uint_ne(st.holders[i], st.holders[j]);
	}
	for (w = 0; w < 10; w++)
		twriter_free(&tw[w]);
	tring_free(&t);
}
END_TEST

START_TEST(test_init_makes_no_stamping_pass_over_chunks)
{
	/* section 3.2: no initialization pass over every chunk */
	size_t len = tb_ring_size(512, 8);
	uint8_t *mem = (uint8_t *)ring_mem(len);
	struct tb_ring r;
	size_t i;

	ck_assert_ptr_nonnull(mem);
	ck_assert_int_eq(tb_ring_init(&r, mem, len, 512, 8), TB_OK);
	for (i = 0; i < 8 * 512; i++)
		r.chunks[i] = 0x5a;
	ck_assert_int_eq(tb_ring_init(&r, mem, len, 512, 8), TB_OK);
	for (i = 0; i < 8 * 512; i++)
		ck_assert_uint_eq(r.chunks[i], 0x5a);
	ck_assert_ptr_eq(r.chunks + 8 * 512, mem + len);
	free(mem);
}
END_TEST

START_TEST(test_chunk_state_words_are_naturally_aligned)
{
	uint32_t cs, i;

	for (cs = 256; cs <= 32768; cs *= 2) {
		size_t len = tb_ring_size(cs, 8);
		void *mem = NULL;
		struct tb_ring r;

		ck_assert_int_eq(posix_memalign(&mem, 4096, len), 0);
		memset(mem, 0, len);
		ck_assert_int_eq(tb_ring_init(&r, mem, len, cs, 8), TB_OK);
		for (i = 0; i < 8; i++) {
			uint8_t *c = tb_ring_chunk(&r, i);

			ck_assert_uint_eq((uintptr_t)tb_ring_word(&r, i) % 4, 0);
			ck_assert_uint_eq((uintptr_t)c % 64, 0);
			ck_assert_ptr_eq(c, r.chunks + (size_t)i * cs);
			/* chunks lie after the header, inside the mapping */
			ck_assert((uint8_t *)c >= (uint8_t *)mem +
				  sizeof(struct tb_ring_hdr));
			ck_assert((uint8_t *)c + cs <= (uint8_t *)mem + len);
		}
		free(mem);
	}
}
END_TEST

START_TEST(test_attach_validates_header_as_untrusted)
{
	struct tring t;
	struct tb_ring r;
	struct tb_ring_hdr *h;

	tring_new(&t, 1024, 8);
	h = t.r.hdr;
	ck_assert_int_eq(tb_ring_attach(&r, t.mem, t.len), TB_OK);
	ck_assert_uint_eq(r.chunk_size, 1024);
	ck_assert_uint_eq(r.num_chunks, 8);
	ck_assert_ptr_eq(r.chunks, t.r.chunks);

	h->magic ^= 1;
	ck_assert_int_eq(tb_ring_attach(&r, t.mem, t.len), TB_EMAGIC);
	h->magic ^= 1;
	h->version++;
	ck_assert_int_eq(tb_ring_attach(&r, t.mem, t.len), TB_EVERSION);
	h->version--;
	h->hdr_size = 256;
	ck_assert_int_eq(tb_ring_attach(&r, t.mem, t.len), TB_EHEADER);
	h->hdr_size = TB_RING_HDR_SIZE;
	h->chunk_log2 = 7;
	ck_assert_int_eq(tb_ring_attach(&r, t.mem, t.len), TB_EGEOMETRY);
	h->chunk_log2 = 16;
	ck_assert_int_eq(tb_ring_attach(&r, t.mem, t.len), TB_EGEOMETRY);
	h->chunk_log2 = 0xffffffffu;
	ck_assert_int_eq(tb_ring_attach(&r, t.mem, t.len), TB_EGEOMETRY);
	/* larger chunks than the mapping holds */
	h->chunk_log2 = 11;
	ck_assert_int_eq(tb_ring_attach(&r, t.mem, t.len), TB_ESHORT);
	h->chunk_log2 = 10;
	h->count_log2 = 0;
	ck_assert_int_eq(tb_ring_attach(&r, t.mem, t.len), TB_EGEOMETRY);
	h->count_log2 = 31;
	ck_assert_int_eq(tb_ring_attach(&r, t.mem, t.len), TB_EGEOMETRY);
	h->count_log2 = 4;	/* more chunks than the mapping holds */
	ck_assert_int_eq(tb_ring_attach(&r, t.mem, t.len), TB_ESHORT);
	h->count_log2 = 3;
	ck_assert_int_eq(tb_ring_attach(&r, t.mem, t.len - 1), TB_ESHORT);
	ck_assert_int_eq(tb_ring_attach(&r, t.mem, 100), TB_ESHORT);
	ck_assert_int_eq(tb_ring_attach(&r, NULL, t.len), TB_EINVAL);
	ck_assert_int_eq(tb_ring_attach(&r, (uint8_t *)t.mem + 2, t.len - 2),
			 TB_EALIGN);
	ck_assert_int_eq(tb_ring_attach(&r, t.mem, t.len), TB_OK);
	tring_free(&t);
}
END_TEST

START_TEST(test_attach_second_mapping_of_same_memfd_at_other_address)
{
	size_t len = tb_ring_size(512, 4);
	int fd = memfd_create("tbring-test", 0);
	struct tb_ring r1, r2;
	struct collect col;
	struct tb_reader rd;
	struct tb_writer w;
	uint8_t *m1, *m2, *ws, *rs;
	uint32_t *word;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)len), 0);
	m1 = (uint8_t *)mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
			     fd, 0);
	m2 = (uint8_t *)mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
			     fd, 0);
	ck_assert(m1 != MAP_FAILED && m2 != MAP_FAILED);
	ck_assert_ptr_ne(m1, m2);
	ck_assert_int_eq(tb_ring_init(&r1, m1, len, 512, 4), TB_OK);
	ck_assert_int_eq(tb_ring_attach(&r2, m2, len), TB_OK);
	ck_assert_uint_eq(r2.chunk_size, 512);
	ck_assert_uint_eq(r2.num_chunks, 4);
	ck_assert_ptr_eq(r2.chunks, m2 + (r1.chunks - m1));

	/* writer on one mapping, reader on the other */
	ws = (uint8_t *)malloc(512);
	rs = (uint8_t *)malloc(512);
	ck_assert_int_eq(tb_writer_init(&w, &r1, WA, BID, TB_DROP, ws), TB_OK);
	ck_assert_int_eq(tb_writer_write_packet(&w, "across", 6), TB_OK);
	ck_assert_int_eq(tb_writer_release(&w), TB_OK);
	ck_assert_int_eq(tb_reader_init(&rd, &r2, rs), TB_OK);
	memset(&col, 0, sizeof(col));
	ck_assert_int_eq(tdrain(&rd, 8, TB_READ_SCRAPE, collect_fn,
					 &col), 1);
	ck_assert_uint_eq(col.count, 1);
	ck_assert_uint_eq(col.c[0].writer, WA);
	ck_assert_uint_eq(col.c[0].bid, BID);
	ck_assert_str_eq(col.c[0].frag[0], "across");
	/* the reader's transitions show through the first mapping */
	word = tb_ring_word(&r1, 0);
	ck_assert_uint_eq(peek32(word), spec_free(1));
	ck_assert_uint_eq(peek32(&r1.hdr->read_pos), 1);
	free(ws);
	free(rs);
	munmap(m1, len);
	munmap(m2, len);
	close(fd);
}
END_TEST

/* ------------------------------------------------------------------------
 * (c) Every transition of section 5.1 through the public steps
 */
START_TEST(test_reserve_hands_out_consecutive_tickets_until_full)
{
	struct tring t;
	uint32_t pos = 99, sample = 99, i;

	tring_new(&t, 256, 4);
	for (i = 0; i < 4; i++) {
		ck_assert_int_eq(tb_ring_reserve(&t.r, &pos, &sample), TB_OK);
		ck_assert_uint_eq(pos, i);
	}
	ck_assert_int_eq(tb_ring_reserve(&t.r, &pos, &sample), TB_FULL);
	ck_assert_uint_eq(sample, 0);
	ck_assert_uint_eq(twrite_pos(&t), 4);
	/* reserving touches no chunk */
	for (i = 0; i < 4; i++)
		ck_assert_uint_eq(tword(&t, i), 0);
	tring_free(&t);
}
END_TEST

START_TEST(test_capacity_follows_read_pos)
{
	struct tring t;
	uint32_t pos, sample;

	tring_new(&t, 256, 2);
	treserve(&t);
	treserve(&t);
	ck_assert_int_eq(tb_ring_reserve(&t.r, &pos, &sample), TB_FULL);
	tb_ring_publish_read_pos(&t.r, 1);
	ck_assert_int_eq(tb_ring_reserve(&t.r, &pos, &sample), TB_OK);
	ck_assert_uint_eq(pos, 2);
	ck_assert_int_eq(tb_ring_reserve(&t.r, &pos, &sample), TB_FULL);
	ck_assert_uint_eq(sample, 1);
	tring_free(&t);
}
END_TEST

START_TEST(test_reserve_is_full_at_distance_num_chunks_across_rollover)
{
	struct tring t;
	uint32_t pos, sample, i;

	tring_new_at(&t, 256, 4, 0xfffffffeu);
	for (i = 0; i < 4; i++) {
		ck_assert_int_eq(tb_ring_reserve(&t.r, &pos, &sample), TB_OK);
		ck_assert_uint_eq(pos, 0xfffffffeu + i);
	}
	ck_assert_int_eq(tb_ring_reserve(&t.r, &pos, &sample), TB_FULL);
	ck_assert_uint_eq(sample, 0xfffffffeu);
	ck_assert_uint_eq(twrite_pos(&t), 2);
	tring_free(&t);
}
END_TEST

/*
 * Writer A samples the two cursors to reserve.  Between its two loads,
 * writer B reserves and publishes a chunk and the reader consumes it, so
 * read_pos moves past the write_pos A would have loaded first.  The ring
 * is empty again: A must get its position, under either policy, without
 * a TB_FULL and without a stall (issue 7.1: loading write_pos before
 * read_pos made the distance wrap to 0xffffffff).
 */
struct cursor_race {
	struct tring *t;
	struct twriter *b;
	struct treader *tr;
	unsigned loads;		/* cursor loads of writer A */
	int acting;
	int acted;
};

static struct cursor_race *race;

static void between_cursor_loads(const uint32_t *p, int op, uint32_t e,
				 uint32_t v, int ok, int fail)
{
	struct tb_ring_hdr *h = race->t->r.hdr;

	(void)e, (void)v, (void)ok, (void)fail;
	if (race->acting || race->acted || op != TB_TEST_LOAD ||
	    (p != &h->read_pos && p != &h->write_pos) || ++race->loads < 2)
		return;
	race->acting = 1;	/* B's and the reader's loads are not A's */
	ck_assert_int_eq(twrite(race->b, "bee", 0, 0), TB_OK);
	ck_assert_int_eq(tb_writer_release(&race->b->w), TB_OK);
	ck_assert_int_eq(tdrain(&race->tr->rd, ~0u, TB_READ_SCRAPE,
					 NULL, NULL), 1);
	ck_assert_uint_eq(tread_pos(race->t), 1);
	race->acting = 0;
	race->acted = 1;
}

START_TEST(test_reserve_is_not_full_when_reader_passes_between_loads)
{
	enum tb_full_policy policy = _i ? TB_STALL : TB_DROP;
	struct cursor_race c;
	struct tring t;
	struct twriter a, b;
	struct treader tr;
	struct tb_ring_stats st;

	tring_new(&t, 256, 4);
	twriter_new(&a, &t, WA, BID, policy);
	twriter_new(&b, &t, WB, BID, TB_DROP);
	treader_new(&tr, &t);
	a.w.stall_ms = 50;
	memset(&c, 0, sizeof(c));
	c.t = &t;
	c.b = &b;
	c.tr = &tr;
	race = &c;
	tb_test_atomic = between_cursor_loads;
	ck_assert_int_eq(twrite(&a, "ant", 0, 0), TB_OK);
	tb_test_atomic = NULL;
	ck_assert(c.acted);
	tb_ring_stats(&t.r, &st);
	ck_assert_uint_eq(st.wstat[TB_WS_FULL], 0);
	ck_assert_uint_eq(st.wstat[TB_WS_STALLS], 0);
	ck_assert_uint_eq(twrite_pos(&t), 2);
	ck_assert_uint_eq(tword(&t, 1), spec_word(SPEC_CMP, 0, 0, 1, WA));
	twriter_free(&a);
	twriter_free(&b);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_claim_moves_free_for_reserved_wrap_to_acquired)
{
	struct tring t;
	uint32_t pos;

	tring_new(&t, 256, 4);
	pos = treserve(&t);
	ck_assert(tb_ring_claim(&t.r, pos, spec_word(SPEC_ACQ, 0, 0, 0, WA)));
	ck_assert_uint_eq(tword(&t, 0), 0x20000007u);
	tring_free(&t);
}
END_TEST

START_TEST(test_claim_expects_only_its_own_wrap)
{
	struct tring t;

	tring_new(&t, 256, 4);
	/* chunk 0 is FreeForWrap(0); position 4 expects FreeForWrap(1) */
	ck_assert(!tb_ring_claim(&t.r, 4, spec_word(SPEC_ACQ, 0, 0, 0, WA)));
	ck_assert_uint_eq(tword(&t, 0), 0);
	/* nor may a claim take any non-free word */
	tset_word(&t, 1, spec_word(SPEC_CMP, 0, 0, 1, WB));
	ck_assert(!tb_ring_claim(&t.r, 1, spec_word(SPEC_ACQ, 0, 0, 0, WA)));
	ck_assert_uint_eq(tword(&t, 1), spec_word(SPEC_CMP, 0, 0, 1, WB));
	tset_word(&t, 2, SPEC_ACKED);
	ck_assert(!tb_ring_claim(&t.r, 2, spec_word(SPEC_ACQ, 0, 0, 0, WA)));
	ck_assert_uint_eq(tword(&t, 2), SPEC_ACKED);
	tring_free(&t);
}
END_TEST

START_TEST(test_publish_moves_acquired_to_complete)
{
	struct tring t;
	uint32_t seen;

	tring_new(&t, 256, 4);
	ck_assert(tb_ring_claim(&t.r, treserve(&t),
				spec_word(SPEC_ACQ, 0, 0, 0, WA)));
	seen = spec_word(SPEC_ACQ, 0, 0, 0, WA);
	ck_assert(tb_ring_publish(&t.r, 0, &seen,
				  spec_word(SPEC_CMP, 0, 0, 2, WA)));
	ck_assert_uint_eq(tword(&t, 0), spec_word(SPEC_CMP, 0, 0, 2, WA));
	/* a stale expected word fails and reports the word found */
	seen = spec_word(SPEC_ACQ, 0, 0, 0, WA);
	ck_assert(!tb_ring_publish(&t.r, 0, &seen,
				   spec_word(SPEC_CMP, 0, 0, 3, WA)));
	ck_assert_uint_eq(seen, spec_word(SPEC_CMP, 0, 0, 2, WA));
	ck_assert_uint_eq(tword(&t, 0), spec_word(SPEC_CMP, 0, 0, 2, WA));
	tring_free(&t);
}
END_TEST

START_TEST(test_publish_can_extend_acquired_count)
{
	/* an open fragment keeps the chunk Acquired with a larger count */
	struct tring t;
	uint32_t seen = spec_word(SPEC_ACQ, 0, SPEC_P, 0, WA);

	tring_new(&t, 256, 4);
	ck_assert(tb_ring_claim(&t.r, 0, seen));
	ck_assert(tb_ring_publish(&t.r, 0, &seen,
				  spec_word(SPEC_ACQ, 0, SPEC_P, 1, WA)));
	ck_assert_uint_eq(tword(&t, 0), spec_word(SPEC_ACQ, 0, SPEC_P, 1, WA));
	tring_free(&t);
}
END_TEST

START_TEST(test_reuse_moves_complete_to_acquired_keeping_fields)
{
	struct tring t;
	uint32_t cmp = spec_word(SPEC_CMP, 1, SPEC_P | SPEC_L, 3, WA);
	uint32_t seen;

	tring_new(&t, 512, 4);
	tset_word(&t, 0, cmp);
	seen = cmp;
	ck_assert(tb_ring_reuse(&t.r, 0, &seen));
	ck_assert_uint_eq(tword(&t, 0),
			  spec_word(SPEC_ACQ, 1, SPEC_P | SPEC_L, 3, WA));
	/* stale: the word is no longer that Complete */
	seen = cmp;
	ck_assert(!tb_ring_reuse(&t.r, 0, &seen));
	ck_assert_uint_eq(seen, spec_word(SPEC_ACQ, 1, SPEC_P | SPEC_L, 3, WA));
	tring_free(&t);
}
END_TEST

START_TEST(test_mark_rewrite_keeps_every_other_field)
{
	struct tring t;
	uint32_t acq = spec_word(SPEC_ACQ, 1, SPEC_P | SPEC_L, 3, WA);
	uint32_t seen = acq;

	tring_new(&t, 512, 4);
	tset_word(&t, 0, acq);
	ck_assert(tb_ring_mark_rewrite(&t.r, 0, &seen));
	ck_assert_uint_eq(tword(&t, 0),
			  spec_word(SPEC_RR, 1, SPEC_P | SPEC_L, 3, WA));
	tring_free(&t);
}
END_TEST

START_TEST(test_acknowledge_writes_the_exact_acknowledged_word)
{
	struct tring t;
	uint32_t seen = spec_word(SPEC_RR, 0, SPEC_L, 200, 0xffff);

	tring_new(&t, 256, 4);
	tset_word(&t, 0, seen);
	ck_assert(tb_ring_acknowledge(&t.r, 0, &seen));
	ck_assert_uint_eq(tword(&t, 0), 0x80000000u);
	tring_free(&t);
}
END_TEST

START_TEST(test_advance_unclaimed_stamps_next_wrap_of_position)
{
	struct tring t;
	uint32_t p, seen;

	tring_new(&t, 256, 4);
	for (p = 0; p < 12; p++) {
		seen = peek32(tb_ring_chunk(&t.r, p));
		ck_assert_uint_eq(seen, spec_free(p / 4));
		ck_assert(tb_ring_advance(&t.r, p, &seen));
		ck_assert_uint_eq(tword(&t, p % 4), spec_free(p / 4 + 1));
	}
	tring_free(&t);
}
END_TEST

START_TEST(test_reclaim_complete_stamps_next_wrap)
{
	struct tring t;
	uint32_t seen = spec_word(SPEC_CMP, 0, 0, 5, WA);

	tring_new(&t, 256, 4);
	tset_word(&t, 1, seen);
	ck_assert(tb_ring_reclaim_complete(&t.r, 5, &seen));
	ck_assert_uint_eq(tword(&t, 1), spec_free(2));
	tring_free(&t);
}
END_TEST

START_TEST(test_reclaim_acknowledged_stamps_next_wrap)
{
	struct tring t;
	uint32_t seen = spec_word(SPEC_ACQ, 0, 0, 0, WA);

	tring_new(&t, 256, 4);
	ck_assert(tb_ring_claim(&t.r, 0, seen));
	ck_assert(tb_ring_mark_rewrite(&t.r, 0, &seen));
	ck_assert_uint_eq(tword(&t, 0), spec_word(SPEC_RR, 0, 0, 0, WA));
	seen = tword(&t, 0);
	ck_assert(tb_ring_acknowledge(&t.r, 0, &seen));
	ck_assert_uint_eq(tword(&t, 0), SPEC_ACKED);
	seen = SPEC_ACKED;
	ck_assert(tb_ring_reclaim_acked(&t.r, 4, &seen));
	ck_assert_uint_eq(tword(&t, 0), spec_free(2));
	tring_free(&t);
}
END_TEST

START_TEST(test_reclaim_stamps_next_wrap_across_cursor_rollover)
{
	struct tring t;
	uint32_t p = 0xfffffff0u;
	uint32_t seen = spec_word(SPEC_ACQ, 0, 0, 0, WA);

	tring_new_at(&t, 256, 16, p);
	ck_assert_uint_eq(tword(&t, 0), spec_free(0x0fffffff));
	ck_assert(tb_ring_claim(&t.r, p, seen));
	ck_assert(tb_ring_mark_rewrite(&t.r, p, &seen));
	seen = tword(&t, 0);
	ck_assert(tb_ring_acknowledge(&t.r, p, &seen));
	seen = SPEC_ACKED;
	ck_assert(tb_ring_reclaim_acked(&t.r, p, &seen));
	ck_assert_uint_eq(tword(&t, 0), 0);	/* FreeForWrap(0) */
	ck_assert(tb_ring_claim(&t.r, 0, spec_word(SPEC_ACQ, 0, 0, 0, WB)));
	tring_free(&t);
}
END_TEST

START_TEST(test_no_writer_transition_produces_a_free_word)
{
	struct tring t;
	uint32_t seen = spec_word(SPEC_ACQ, 0, 0, 0, WA), w;

	tring_new(&t, 256, 4);
	ck_assert(tb_ring_claim(&t.r, 0, seen));			/* writer */
	ck_assert_uint_ne(tword(&t, 0) >> 29, SPEC_FREE);
	ck_assert(tb_ring_publish(&t.r, 0, &seen,
				  spec_word(SPEC_CMP, 0, 0, 1, WA)));	/* writer */
	ck_assert_uint_ne(tword(&t, 0) >> 29, SPEC_FREE);
	seen = tword(&t, 0);
	ck_assert(tb_ring_reuse(&t.r, 0, &seen));			/* writer */
	ck_assert_uint_ne(tword(&t, 0) >> 29, SPEC_FREE);
	seen = tword(&t, 0);
	ck_assert(tb_ring_publish(&t.r, 0, &seen,
				  spec_word(SPEC_ACQ, 0, 0, 2, WA)));	/* writer */
	ck_assert_uint_ne(tword(&t, 0) >> 29, SPEC_FREE);
	seen = tword(&t, 0);
	ck_assert(tb_ring_mark_rewrite(&t.r, 0, &seen));		/* reader */
	seen = tword(&t, 0);
	ck_assert(tb_ring_acknowledge(&t.r, 0, &seen));		/* writer */
	ck_assert_uint_eq(tword(&t, 0), SPEC_ACKED);
	/* the writer steps refuse every word they do not own */
	for (w = 0; w < 3; w++) {
		static const uint32_t words[3] = { 0, SPEC_ACKED, 0x40010007u };

		tset_word(&t, 1, words[w]);
		seen = words[w];
		tb_ring_publish(&t.r, 1, &seen, 0);
		ck_assert_uint_eq(tword(&t, 1), words[w]);
		seen = words[w];
		tb_ring_acknowledge(&t.r, 1, &seen);
		ck_assert_uint_eq(tword(&t, 1), words[w]);
	}
	/* only the reader's reclaim makes it free */
	seen = SPEC_ACKED;
	ck_assert(tb_ring_reclaim_acked(&t.r, 0, &seen));
	ck_assert_uint_eq(tword(&t, 0), spec_free(1));
	tring_free(&t);
}
END_TEST

START_TEST(test_steps_given_wrong_state_fail_without_touching_memory)
{
	static const uint32_t words[] = {
		0x00000000u, 0x20000007u, 0x40030007u, 0x60030007u,
		0x80000000u, 0xa0000000u, 0xc0000001u, 0xe0000007u,
	};
	struct tring t;
	unsigned i;

	tring_new(&t, 256, 4);
	for (i = 0; i < 8; i++) {
		uint32_t st = words[i] >> 29, seen;

		tset_word(&t, 0, words[i]);
		seen = words[i];
		ck_assert_int_eq(tb_ring_publish(&t.r, 0, &seen, 0x40010007u) &&
				 st != SPEC_ACQ, 0);
		tset_word(&t, 0, words[i]);
		seen = words[i];
		if (st != SPEC_CMP) {
			ck_assert(!tb_ring_reuse(&t.r, 0, &seen));
			ck_assert(!tb_ring_reclaim_complete(&t.r, 0, &seen));
		}
		if (st != SPEC_ACQ) {
			ck_assert(!tb_ring_mark_rewrite(&t.r, 0, &seen));
			seen = words[i];
			ck_assert(!tb_ring_publish(&t.r, 0, &seen, 0x40010007u));
		}
		if (st != SPEC_RR)
			ck_assert(!tb_ring_acknowledge(&t.r, 0, &seen));
		if (words[i] != SPEC_ACKED)
			ck_assert(!tb_ring_reclaim_acked(&t.r, 0, &seen));
		if (words[i] != 0)
			ck_assert(!tb_ring_advance(&t.r, 0, &seen));
		ck_assert_uint_eq(tword(&t, 0), words[i]);
	}
	/* reclaim of Acknowledged wants exactly 0x80000000 */
	tset_word(&t, 0, 0x80000001u);
	{
		uint32_t seen = 0x80000001u;

		ck_assert(!tb_ring_reclaim_acked(&t.r, 0, &seen));
		ck_assert_uint_eq(tword(&t, 0), 0x80000001u);
	}
	tring_free(&t);
}
END_TEST

START_TEST(test_stale_claim_fails_after_reader_advanced_wrap)
{
	struct tring t;
	uint32_t p, seen, pos;

	tring_new(&t, 256, 4);
	for (p = 0; p < 4; p++)
		treserve(&t);
	for (p = 0; p < 4; p++) {			/* reader: holes */
		seen = tb_ring_load_state(&t.r, p);
		ck_assert(tb_ring_advance(&t.r, p, &seen));
	}
	tb_ring_publish_read_pos(&t.r, 4);
	pos = treserve(&t);				/* writer, then sleeps */
	ck_assert_uint_eq(pos, 4);
	seen = tb_ring_load_state(&t.r, 4);		/* reader resolves 4 */
	ck_assert(tb_ring_advance(&t.r, 4, &seen));
	ck_assert_uint_eq(tword(&t, 0), spec_free(2));
	ck_assert(!tb_ring_claim(&t.r, pos, spec_word(SPEC_ACQ, 0, 0, 0, WA)));
	ck_assert_uint_eq(tword(&t, 0), spec_free(2));
	ck_assert(tb_ring_claim(&t.r, 8, spec_word(SPEC_ACQ, 0, 0, 0, WB)));
	tring_free(&t);
}
END_TEST

START_TEST(test_two_stale_claimants_cannot_adopt_the_returned_word)
{
	struct tring t;
	uint32_t seen = 0;

	tring_new(&t, 256, 2);
	ck_assert(tb_ring_advance(&t.r, 0, &seen));
	ck_assert_uint_eq(tword(&t, 0), spec_free(1));
	ck_assert(!tb_ring_claim(&t.r, 0, spec_word(SPEC_ACQ, 0, 0, 0, WA)));
	ck_assert(!tb_ring_claim(&t.r, 4, spec_word(SPEC_ACQ, 0, 0, 0, WB)));
	ck_assert_uint_eq(tword(&t, 0), spec_free(1));
	ck_assert(tb_ring_claim(&t.r, 2, spec_word(SPEC_ACQ, 0, 0, 0, WC)));
	tring_free(&t);
}
END_TEST

START_TEST(test_init_at_stamps_first_position_mapping_to_each_chunk)
{
	struct tring t;

	tring_new_at(&t, 256, 4, 0xfffffffeu);
	ck_assert_uint_eq(tread_pos(&t), 0xfffffffeu);
	ck_assert_uint_eq(twrite_pos(&t), 0xfffffffeu);
	ck_assert_uint_eq(tword(&t, 2), spec_free(0xfffffffeu >> 2));
	ck_assert_uint_eq(tword(&t, 3), spec_free(0xffffffffu >> 2));
	ck_assert_uint_eq(tword(&t, 0), spec_free(0));
	ck_assert_uint_eq(tword(&t, 1), spec_free(0));
	tring_free(&t);
}
END_TEST

START_TEST(test_identity_limit_is_period_minus_num_chunks)
{
	/*
	 * Two chunks: the identity period is 2^30 reservations, but resolving
	 * position 2^30 - 2 already stamps FreeForWrap(wrap(2^30)) = the
	 * tag of position 0: a writer stuck since reserving 0 is fooled then
	 * (the limit documented in tbring.h), and not one position earlier.
	 */
	struct tring t;
	uint32_t p = (1u << 30) - 4, seen;

	tring_new(&t, 256, 2);
	tset_word(&t, 0, spec_free(p >> 1));
	seen = tword(&t, 0);
	ck_assert(tb_ring_advance(&t.r, p, &seen));
	ck_assert_uint_eq(tword(&t, 0), spec_free(0x1fffffff));
	ck_assert(!tb_ring_claim(&t.r, 0, spec_word(SPEC_ACQ, 0, 0, 0, WA)));
	seen = tword(&t, 0);
	ck_assert(tb_ring_advance(&t.r, p + 2, &seen));
	ck_assert_uint_eq(tword(&t, 0), spec_free(0));
	ck_assert(tb_ring_claim(&t.r, 0, spec_word(SPEC_ACQ, 0, 0, 0, WA)));
	tring_free(&t);
}
END_TEST

START_TEST(test_writer_and_reader_across_cursor_rollover)
{
	static const uint32_t counts[] = { 2, 8, 16 };
	unsigned k;

	for (k = 0; k < 3; k++) {
		struct tring t;
		struct twriter a;
		struct treader tr;
		struct collect col;
		uint32_t start = 0u - 3 * counts[k] / 2, i, next = 0;

		tring_new_at(&t, 256, counts[k], start);
		twriter_new(&a, &t, WA, BID, TB_DROP);
		treader_new(&tr, &t);
		for (i = 0; i < 4 * counts[k]; i++) {
			char msg[16];

			snprintf(msg, sizeof(msg), "m%u", i);
			ck_assert_int_eq(twrite(&a, msg, 0,
						TB_CLOSE_CONT_NEXT), TB_OK);
			/* continues-on-next: every message its own chunk */
			memset(&col, 0, sizeof(col));
			ck_assert_int_eq(tdrain(&tr.rd, 64,
							 TB_READ_SCRAPE,
							 collect_fn, &col), 1);
			ck_assert_uint_eq(col.count, 1);
			ck_assert_uint_eq(col.c[0].pos, start + i);
			snprintf(msg, sizeof(msg), "m%u", next++);
			ck_assert_str_eq(col.c[0].frag[0], msg);
			/* the chunk is ready for its next traversal */
			ck_assert_uint_eq(peek32(tb_ring_chunk(&t.r, start + i)),
					  spec_free(((start + i + counts[k]) /
						     counts[k]) & 0x1fffffff));
		}
		ck_assert_uint_eq(tread_pos(&t), start + 4 * counts[k]);
		ck_assert_uint_lt(tread_pos(&t), start);	/* wrapped */
		twriter_free(&a);
		treader_free(&tr);
		tring_free(&t);
	}
}
END_TEST

/* ------------------------------------------------------------------------
 * (d) The three races of section 5.2, both outcomes each
 */

/* The reader's seam: runs between its copy and its arbitrating CAS. */
struct hookctx {
	unsigned calls;
	unsigned act_on;		/* call number that acts, 0: none */
	int every;			/* act on every call */
	uint32_t words[64];		/* the word the reader copied from */
	void (*act)(struct hookctx *h, uint32_t pos, uint32_t word);
	struct twriter *tw;
	struct tring *t;
	int ret;
	uint32_t seed;
	uint32_t n;
};

static void hook_fn(void *ctx, uint32_t pos, uint32_t word)
{
	struct hookctx *h = (struct hookctx *)ctx;

	if (h->calls < 64)
		h->words[h->calls] = word;
	h->calls++;
	if (h->act && (h->every || h->calls == h->act_on))
		h->act(h, pos, word);
}

static void set_hook(struct treader *tr, struct hookctx *h)
{
	tr->rd.hook = hook_fn;
	tr->rd.hook_ctx = h;
}

static void act_close_three(struct hookctx *h, uint32_t pos, uint32_t word)
{
	(void)pos, (void)word;
	h->ret = tb_writer_close(&h->tw->w, 3, 0);
}

static void act_open_two(struct hookctx *h, uint32_t pos, uint32_t word)
{
	struct tb_span sp;

	(void)pos, (void)word;
	h->ret = tb_writer_open(&h->tw->w, 3, 0, &sp);
	if (!h->ret)
		memcpy(sp.begin, "two", 3);
}

START_TEST(test_claim_beats_advance_reader_redispatches_on_acquired)
{
	struct tring t;
	uint32_t pos, seen;

	tring_new(&t, 256, 4);
	pos = treserve(&t);
	seen = tb_ring_load_state(&t.r, pos);		/* reader loads F(0) */
	ck_assert(tb_ring_claim(&t.r, pos, spec_word(SPEC_ACQ, 0, 0, 0, WA)));
	ck_assert(!tb_ring_advance(&t.r, pos, &seen));	/* reader loses */
	ck_assert_uint_eq(seen, spec_word(SPEC_ACQ, 0, 0, 0, WA));
	ck_assert_uint_eq(tword(&t, 0), spec_word(SPEC_ACQ, 0, 0, 0, WA));
	/* it redispatches on the returned Acquired word and scrapes */
	ck_assert(tb_ring_mark_rewrite(&t.r, pos, &seen));
	ck_assert_uint_eq(tword(&t, 0), spec_word(SPEC_RR, 0, 0, 0, WA));
	tring_free(&t);
}
END_TEST

START_TEST(test_advance_beats_claim_position_becomes_hole)
{
	struct tring t;
	uint32_t pos, seen;

	tring_new(&t, 256, 4);
	pos = treserve(&t);
	seen = tb_ring_load_state(&t.r, pos);
	ck_assert(tb_ring_advance(&t.r, pos, &seen));	/* reader wins */
	ck_assert_uint_eq(tword(&t, 0), spec_free(1));
	ck_assert(!tb_ring_claim(&t.r, pos, spec_word(SPEC_ACQ, 0, 0, 0, WA)));
	ck_assert_uint_eq(tword(&t, 0), spec_free(1));
	tring_free(&t);
}
END_TEST

START_TEST(test_publish_beats_scrape_reader_discards_speculative_copy)
{
	struct tring t;
	struct twriter a;
	struct treader tr;
	struct hookctx h;
	struct tb_chunk_view v;
	struct tb_span sp;

	tring_new(&t, 512, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	ck_assert_int_eq(twrite(&a, "one", 0, 0), TB_OK);
	topen_with(&a, "two", 3, 0, &sp);		/* reuse: Acquired(1) */
	ck_assert_uint_eq(tword(&t, 0), spec_word(SPEC_ACQ, 0, 0, 1, WA));

	memset(&h, 0, sizeof(h));
	h.act = act_close_three;
	h.act_on = 1;
	h.tw = &a;
	set_hook(&tr, &h);
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_EMITTED);
	ck_assert_int_eq(h.ret, TB_OK);
	/* first copy of Acquired(1) discarded, then Complete(2) taken */
	ck_assert_uint_eq(h.calls, 2);
	ck_assert_uint_eq(h.words[0], spec_word(SPEC_ACQ, 0, 0, 1, WA));
	ck_assert_uint_eq(h.words[1], spec_word(SPEC_CMP, 0, 0, 2, WA));
	ck_assert_uint_eq(v.nfrags, 2);
	ck_assert_vfrag(&v, 0, "one");
	ck_assert_vfrag(&v, 1, "two");
	ck_assert_uint_eq(v.scraped, 0);
	ck_assert_uint_eq(tword(&t, 0), spec_free(1));
	ck_assert_uint_eq(tr.rd.pos, 1);
	/* nothing emitted twice: the writer's next packet is a new chunk */
	ck_assert_int_eq(twrite(&a, "three", 0, 0), TB_OK);
	ck_assert_uint_eq(tword(&t, 0), spec_free(1));
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_EMITTED);
	ck_assert_uint_eq(v.nfrags, 1);
	ck_assert_vfrag(&v, 0, "three");
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

/*
 * A suffix is relocated at most TB_RELOCATE_ROUNDS times in a row (8,
 * tbring.h's Limits): a reader that scrapes every chunk the writer is
 * about to publish - the first and each replacement - gets the packet
 * after 7 scrapes, and after 8 the writer gives up: TB_DROPPED, the
 * fragment counted as dropped, the last replacement handed back (a hole)
 * and data loss owed to the next chunk.
 */
static unsigned scrapes_left;

static void scrape_before_publish(const uint32_t *p, int op, uint32_t e,
				  uint32_t v, int ok, int fail)
{
	uint32_t want = (e & 0x1fffffffu) | SPEC_RR << 29;

	(void)ok, (void)fail;
	if (op != TB_TEST_CAS || !scrapes_left || e >> 29 != SPEC_ACQ ||
	    v >> 29 != SPEC_CMP || (e & 0xffffu) != WA)
		return;
	scrapes_left--;		/* the reader's mark, right before the CAS */
	ck_assert(__atomic_compare_exchange_n((uint32_t *)(uintptr_t)p, &e,
					      want, 0, __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
}

START_TEST(test_writer_relocates_a_suffix_at_most_8_times_in_a_row)
{
	unsigned scrapes = 7 + (unsigned)_i;
	struct tring t;
	struct twriter a;
	struct treader tr;
	int ret;

	tring_new(&t, 256, 32);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	scrapes_left = scrapes;
	tb_test_atomic = scrape_before_publish;
	ret = tb_writer_write_packet(&a.w, "ant", 3);
	tb_test_atomic = NULL;
	ck_assert_uint_eq(scrapes_left, 0);
	ck_assert_uint_eq(a.w.relocations, scrapes);
	if (scrapes == 7) {
		ck_assert_int_eq(ret, TB_OK);
		ck_assert_uint_eq(a.w.dropped_frags, 0);
		ck_assert_uint_eq(tword(&t, 7), spec_word(SPEC_CMP, 0, 0, 1,
							  WA));
	} else {
		ck_assert_int_eq(ret, TB_DROPPED);
		ck_assert_uint_eq(a.w.dropped_frags, 1);
		/* the 8th replacement given back with nothing published */
		ck_assert_uint_eq(tword(&t, 8), spec_word(SPEC_CMP, 0, 0, 0,
							  WA));
		ck_assert_int_eq(tb_writer_write_packet(&a.w, "bee", 3),
				 TB_OK);
		ck_assert_uint_eq(tword(&t, 9), spec_word(SPEC_CMP, 0, SPEC_L,
							  1, WA));
	}
	/* every scraped chunk acknowledged: the reader resolves them all */
	ck_assert_int_eq(tdrain(&tr.rd, ~0u, TB_READ_SCRAPE, NULL, NULL),
			 (int)twrite_pos(&t));
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_scrape_beats_publish_writer_relocates_only_suffix)
{
	struct tring t;
	struct twriter a;
	struct treader tr;
	struct tb_chunk_view v;
	struct tb_span sp;
	struct dchunk d;

	tring_new(&t, 512, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	ck_assert_int_eq(twrite(&a, "one", 0, 0), TB_OK);
	topen_with(&a, "two", 3, 0, &sp);
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_EMITTED);
	ck_assert_uint_eq(v.nfrags, 1);
	ck_assert_vfrag(&v, 0, "one");
	ck_assert_uint_eq(v.scraped, 1);
	ck_assert_uint_eq(tword(&t, 0), spec_word(SPEC_RR, 0, 0, 1, WA));
	/* the writer's publication now fails and it relocates */
	ck_assert_int_eq(tb_writer_close(&a.w, 3, 0), TB_OK);
	ck_assert_uint_eq(tword(&t, 0), SPEC_ACKED);
	tdecode(&t, 1, &d);
	ck_assert_uint_eq(d.word, spec_word(SPEC_CMP, 0, 0, 1, WA));
	ck_assert_frag(&d, 0, "two");
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_EMITTED);
	ck_assert_uint_eq(v.nfrags, 1);
	ck_assert_vfrag(&v, 0, "two");
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_reuse_beats_consume_reader_follows_scrape_path)
{
	struct tring t;
	struct twriter a;
	struct treader tr;
	struct hookctx h;
	struct tb_chunk_view v;
	struct dchunk d;

	tring_new(&t, 512, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	ck_assert_int_eq(twrite(&a, "one", 0, 0), TB_OK);
	ck_assert_uint_eq(tword(&t, 0), spec_word(SPEC_CMP, 0, 0, 1, WA));

	memset(&h, 0, sizeof(h));
	h.act = act_open_two;			/* writer reuses in between */
	h.act_on = 1;
	h.tw = &a;
	set_hook(&tr, &h);
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_EMITTED);
	ck_assert_int_eq(h.ret, TB_OK);
	ck_assert_uint_eq(h.calls, 2);
	ck_assert_uint_eq(h.words[0], spec_word(SPEC_CMP, 0, 0, 1, WA));
	ck_assert_uint_eq(h.words[1], spec_word(SPEC_ACQ, 0, 0, 1, WA));
	ck_assert_uint_eq(v.nfrags, 1);
	ck_assert_vfrag(&v, 0, "one");
	ck_assert_uint_eq(v.scraped, 1);
	ck_assert_uint_eq(tword(&t, 0), spec_word(SPEC_RR, 0, 0, 1, WA));
	/* the writer relocates its open fragment when it closes */
	ck_assert_int_eq(tb_writer_close(&a.w, 3, 0), TB_OK);
	ck_assert_uint_eq(tword(&t, 0), SPEC_ACKED);
	tdecode(&t, 1, &d);
	ck_assert_uint_eq(d.state, SPEC_CMP);
	ck_assert_uint_eq(d.n, 1);
	ck_assert_frag(&d, 0, "two");
	tr.rd.hook = NULL;
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_EMITTED);
	ck_assert_vfrag(&v, 0, "two");
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_consume_beats_reuse_writer_drops_cached_handle)
{
	struct tring t;
	struct twriter a;
	struct treader tr;
	struct tb_chunk_view v;
	struct dchunk d;

	tring_new(&t, 512, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	ck_assert_int_eq(twrite(&a, "one", 0, 0), TB_OK);
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_EMITTED);
	ck_assert_uint_eq(v.scraped, 0);
	ck_assert_uint_eq(tword(&t, 0), spec_free(1));
	ck_assert_int_eq(twrite(&a, "two", 0, 0), TB_OK);
	ck_assert_uint_eq(tword(&t, 0), spec_free(1));	/* not touched */
	ck_assert_uint_eq(twrite_pos(&t), 2);
	tdecode(&t, 1, &d);
	ck_assert_uint_eq(d.n, 1);
	ck_assert_frag(&d, 0, "two");
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * (e) The scenarios of sections 2.1 and 2.2, literally
 */
START_TEST(test_delayed_writer_cannot_publish_behind_reader_2_1)
{
	struct tring t;
	struct twriter a, traffic;
	struct treader tr;
	struct tb_chunk_view v;
	struct tb_span sp;
	uint32_t pos_b, p;

	tring_new(&t, 256, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	twriter_new(&traffic, &t, WC, BID, TB_DROP);
	treader_new(&tr, &t);

	/* writer_a owns chunk 0 from an older position ... */
	ck_assert_int_eq(twrite(&a, "a0", 0, 0), TB_OK);
	topen_with(&a, "a-suffix", 8, 0, &sp);
	for (p = 1; p < 4; p++)
		treserve(&t);				/* holes 1..3 */
	/* ... the reader took its committed prefix and moved to 4 */
	ck_assert_int_eq(tdrain(&tr.rd, 8, TB_READ_SCRAPE, NULL,
					 NULL), 4);
	ck_assert_uint_eq(tword(&t, 0), spec_word(SPEC_RR, 0, 0, 1, WA));
	ck_assert_uint_eq(tread_pos(&t), 4);
	ck_assert_uint_eq(twrite_pos(&t), 4);

	/* writer_b reserves position 4 (chunk 0) and is descheduled */
	pos_b = treserve(&t);
	ck_assert_uint_eq(pos_b, 4);
	ck_assert_uint_eq(twrite_pos(&t), 5);

	/* the reader resolves 4: only writer_a can leave R(a) */
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_SKIPPED);
	ck_assert_uint_eq(tr.rd.pos, 5);
	ck_assert_uint_eq(tword(&t, 0), spec_word(SPEC_RR, 0, 0, 1, WA));

	/* writer_a wakes, moves its suffix elsewhere and writes K */
	ck_assert_int_eq(tb_writer_close(&a.w, 8, 0), TB_OK);
	ck_assert_uint_eq(tword(&t, 0), SPEC_ACKED);

	/* traffic takes the cursors around: the reader resolves 8 */
	while (tr.rd.pos <= 8) {
		int ret = tdrain(&tr.rd, 8, TB_READ_SCRAPE, NULL,
					  NULL);

		ck_assert_int_ge(ret, 0);
		if (tr.rd.pos <= 8)
			ck_assert_int_eq(twrite(&traffic, "t", 0, 0), TB_OK);
		tb_writer_release(&traffic.w);
	}
	/* K became FreeForWrap(wrap(8 + 4)) = FreeForWrap(3) */
	ck_assert_uint_eq(tword(&t, 0), spec_free(3));

	/* writer_b's prepared claim for position 4 must fail now */
	ck_assert(!tb_ring_claim(&t.r, pos_b, spec_word(SPEC_ACQ, 0, 0, 0,
							WB)));
	ck_assert_uint_eq(tword(&t, 0), spec_free(3));
	twriter_free(&a);
	twriter_free(&traffic);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_reserved_position_resolved_before_claim_is_a_hole_2_2)
{
	struct tring t;
	struct treader tr;
	struct tb_chunk_view v;
	uint32_t pos;

	tring_new(&t, 256, 4);
	treader_new(&tr, &t);
	pos = treserve(&t);			/* expects FreeForWrap(0) */
	ck_assert_uint_eq(pos, 0);
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_SKIPPED);
	ck_assert_uint_eq(tword(&t, 0), spec_free(1));
	ck_assert(!tb_ring_claim(&t.r, pos, spec_word(SPEC_ACQ, 0, 0, 0, WA)));
	ck_assert_uint_eq(tword(&t, 0), spec_free(1));
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * (f) Every exit of the reader (section 5.3)
 */

/* A 4-chunk ring whose chunk 0 holds @word at position 0, write_pos 1. */
static void forge(struct tring *t, struct treader *tr, uint32_t cs,
		  uint32_t word)
{
	tring_new(t, cs, 4);
	tset_word(t, 0, word);
	tset_write_pos(t, 1);
	treader_new(tr, t);
}

static void forge_free(struct tring *t, struct treader *tr)
{
	treader_free(tr);
	tring_free(t);
}

static uint32_t hdr_rstat(const struct tring *t, enum tb_rstat s)
{
	return peek32(&t->r.hdr->rstat[s]);
}

/*
 * Each way a position resolves counts in its own reader counter, read
 * where docs/protocol.md puts it (line 5 of the header, word i at byte
 * 320 + 4i): two chunks consumed and one scraped (emitted 3, scrapes 1),
 * two unclaimed positions and two chunks whose data is lost (holes 4:
 * a lost view is a hole that says so), one of them malformed and one of
 * another format (1 each), nothing else.
 */
START_TEST(test_reader_counts_each_outcome_in_its_slot)
{
	static const uint32_t want[16] = { 3, 4, 1, 1, 1 };
	struct tring t;
	struct twriter a;
	struct treader tr;
	struct tb_span sp;
	uint8_t *c;
	unsigned i;

	tring_new(&t, 256, 8);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	ck_assert_int_eq(twrite(&a, "e0", 0, 0), TB_OK);	/* 0 */
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);
	ck_assert_int_eq(twrite(&a, "e1", 0, 0), TB_OK);	/* 1 */
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);
	ck_assert_uint_eq(treserve(&t), 2);			/* unclaimed */
	ck_assert_uint_eq(treserve(&t), 3);
	tset_word(&t, 3, spec_word(SPEC_CMP, 1, 0, 1, WB));	/* format 01 */
	ck_assert_uint_eq(treserve(&t), 4);
	tset_word(&t, 4, spec_word(SPEC_CMP, 0, 0, 2, WB));	/* malformed */
	c = tchunk(&t, 4);
	c[255] = 200;
	c[254] = 100;
	ck_assert_int_eq(twrite(&a, "s0", 0, 0), TB_OK);	/* 5 */
	topen_with(&a, "s1", 2, 0, &sp);		/* held: a scrape */
	ck_assert_uint_eq(treserve(&t), 6);			/* unclaimed */
	ck_assert_int_eq(tdrain(&tr.rd, ~0u, TB_READ_SCRAPE, NULL, NULL), 7);
	for (i = 0; i < 16; i++)
		ck_assert_msg(peek32((uint8_t *)t.r.hdr + 320 + 4 * i) ==
			      want[i], "reader counter %u: %u, want %u", i,
			      peek32((uint8_t *)t.r.hdr + 320 + 4 * i),
			      want[i]);
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_reader_nodata_when_nothing_reserved)
{
	struct tring t;
	struct treader tr;
	struct tb_chunk_view v;

	tring_new(&t, 256, 4);
	treader_new(&tr, &t);
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_NODATA);
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_LAZY, &v),
			 TB_NODATA);
	ck_assert_uint_eq(tr.rd.pos, 0);
	ck_assert_int_eq(tdrain(&tr.rd, 8, TB_READ_SCRAPE, NULL,
					 NULL), 0);
	ck_assert_uint_eq(tread_pos(&t), 0);
	ck_assert_uint_eq(tword(&t, 0), 0);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_reader_emits_complete_chunk_and_reclaims_it)
{
	struct tring t;
	struct twriter a;
	struct treader tr;
	struct collect col;

	tring_new(&t, 256, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	tb_writer_record_loss(&a.w);
	ck_assert_int_eq(twrite(&a, "hello", TB_OPEN_CONT_PREV, 0), TB_OK);
	ck_assert_int_eq(twrite(&a, "world", 0, 0), TB_OK);
	memset(&col, 0, sizeof(col));
	ck_assert_int_eq(tdrain(&tr.rd, 8, TB_READ_SCRAPE, collect_fn,
					 &col), 1);
	ck_assert_uint_eq(col.count, 1);
	ck_assert_uint_eq(col.c[0].pos, 0);
	ck_assert_uint_eq(col.c[0].writer, WA);
	ck_assert_uint_eq(col.c[0].bid, BID);
	ck_assert_uint_eq(col.c[0].flags, TB_F_CONT_PREV | TB_F_DATA_LOSS);
	ck_assert_uint_eq(col.c[0].nfrags, 2);
	ck_assert_uint_eq(col.c[0].scraped, 0);
	ck_assert_str_eq(col.c[0].frag[0], "hello");
	ck_assert_str_eq(col.c[0].frag[1], "world");
	ck_assert_uint_eq(tword(&t, 0), spec_free(1));
	ck_assert_uint_eq(tread_pos(&t), 1);
	ck_assert_uint_eq(hdr_rstat(&t, TB_RS_EMITTED), 1);
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_reader_skips_unclaimed_position_and_advances_free_tag)
{
	struct tring t;
	struct treader tr;

	tring_new(&t, 256, 4);
	treader_new(&tr, &t);
	treserve(&t);
	treserve(&t);
	ck_assert_int_eq(tdrain(&tr.rd, 8, TB_READ_SCRAPE, NULL,
					 NULL), 2);
	ck_assert_uint_eq(tword(&t, 0), spec_free(1));
	ck_assert_uint_eq(tword(&t, 1), spec_free(1));
	ck_assert_uint_eq(tword(&t, 2), spec_free(0));
	ck_assert_uint_eq(tread_pos(&t), 2);
	ck_assert_uint_eq(hdr_rstat(&t, TB_RS_HOLES), 2);
	ck_assert_uint_eq(hdr_rstat(&t, TB_RS_EMITTED), 0);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_reader_leaves_rewrite_requested_alone)
{
	struct tring t;
	struct treader tr;
	struct tb_chunk_view v;
	uint32_t rr = spec_word(SPEC_RR, 0, SPEC_L, 2, WA);

	forge(&t, &tr, 256, rr);
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_SKIPPED);
	ck_assert_uint_eq(tword(&t, 0), rr);
	ck_assert_uint_eq(tr.rd.pos, 1);
	forge_free(&t, &tr);

	forge(&t, &tr, 256, rr);
	ck_assert_int_eq(tdrain(&tr.rd, 8, TB_READ_SCRAPE, NULL,
					 NULL), 1);
	ck_assert_uint_eq(tword(&t, 0), rr);
	ck_assert_uint_eq(tread_pos(&t), 1);
	ck_assert_uint_eq(hdr_rstat(&t, TB_RS_HOLES), 1);
	ck_assert_uint_eq(hdr_rstat(&t, TB_RS_EMITTED), 0);
	ck_assert_uint_eq(hdr_rstat(&t, TB_RS_SCRAPES), 0);
	forge_free(&t, &tr);
}
END_TEST

START_TEST(test_reader_reclaims_acknowledged_as_hole)
{
	struct tring t;
	struct treader tr;

	forge(&t, &tr, 256, SPEC_ACKED);
	ck_assert_int_eq(tdrain(&tr.rd, 8, TB_READ_SCRAPE, NULL,
					 NULL), 1);
	ck_assert_uint_eq(tword(&t, 0), spec_free(1));
	ck_assert_uint_eq(tread_pos(&t), 1);
	ck_assert_uint_eq(hdr_rstat(&t, TB_RS_HOLES), 1);
	forge_free(&t, &tr);
}
END_TEST

START_TEST(test_reader_complete_with_zero_fragments_is_a_hole)
{
	struct tring t;
	struct treader tr;
	struct tb_chunk_view v;

	forge(&t, &tr, 256, spec_word(SPEC_CMP, 0, 0, 0, WA));
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_SKIPPED);
	ck_assert_uint_eq(tword(&t, 0), spec_free(1));
	ck_assert_uint_eq(tr.rd.pos, 1);
	ck_assert_int_eq(tdrain(&tr.rd, 8, TB_READ_SCRAPE, NULL,
					 NULL), 0);
	ck_assert_uint_eq(hdr_rstat(&t, TB_RS_HOLES), 1);
	ck_assert_uint_eq(hdr_rstat(&t, TB_RS_EMITTED), 0);
	forge_free(&t, &tr);
}
END_TEST

START_TEST(test_reader_marks_acquired_with_zero_fragments)
{
	struct tring t;
	struct treader tr;
	struct tb_chunk_view v;

	forge(&t, &tr, 256, spec_word(SPEC_ACQ, 0, SPEC_P, 0, WA));
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_SKIPPED);
	ck_assert_uint_eq(tword(&t, 0), spec_word(SPEC_RR, 0, SPEC_P, 0, WA));
	forge_free(&t, &tr);
}
END_TEST

/*
 * A chunk whose data the reader could not use is handed over as a lost
 * view: its position and writer, no fragments, the data-loss flag and why.
 */
static void check_lost_view(const struct tb_chunk_view *v, uint32_t pos,
			    uint16_t writer, uint32_t why, int scraped)
{
	ck_assert_uint_eq(v->pos, pos);
	ck_assert_uint_eq(v->writer, writer);
	ck_assert_uint_eq(v->nfrags, 0);
	ck_assert_uint_eq(v->flags, TB_F_DATA_LOSS);
	ck_assert_uint_eq(v->lost, why);
	ck_assert_uint_eq(!!v->scraped, !!scraped);
}

START_TEST(test_reader_malformed_directory_dropped_but_transition_done)
{
	struct tring t;
	struct treader tr;
	struct tb_chunk_view v;
	uint8_t *c;

	/* Complete: sizes 200 + 100 > 256 - 6 - 2 */
	forge(&t, &tr, 256, spec_word(SPEC_CMP, 0, 0, 2, WA));
	c = tchunk(&t, 0);
	c[255] = 200;
	c[254] = 100;
	ck_assert_int_eq(tdrain(&tr.rd, 8, TB_READ_SCRAPE, NULL,
					 NULL), 1);
	ck_assert_uint_eq(tword(&t, 0), spec_free(1));
	ck_assert_uint_eq(hdr_rstat(&t, TB_RS_MALFORMED), 1);
	ck_assert_uint_eq(hdr_rstat(&t, TB_RS_EMITTED), 0);
	forge_free(&t, &tr);

	/* Acquired: marked even though its bytes are dropped; handed over
	 * as a lost view of its writer, so the loss reaches its sequence */
	forge(&t, &tr, 256, spec_word(SPEC_ACQ, 0, SPEC_L, 2, WA));
	c = tchunk(&t, 0);
	c[TB_FRAG_BID_OFF] = 3;		/* BufferID 3 */
	c[255] = 200;
	c[254] = 100;
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_EMITTED);
	check_lost_view(&v, 0, WA, TB_VIEW_MALFORMED, 1);
	ck_assert_uint_eq(v.bid, 3);
	ck_assert_uint_eq(tword(&t, 0), spec_word(SPEC_RR, 0, SPEC_L, 2, WA));
	ck_assert_uint_eq(tr.rd.stat[TB_RS_EMITTED], 0);
	forge_free(&t, &tr);

	/* a directory bigger than the chunk's capacity */
	forge(&t, &tr, 256, spec_word(SPEC_CMP, 0, 0, 251, WA));
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_EMITTED);
	check_lost_view(&v, 0, WA, TB_VIEW_MALFORMED, 0);
	ck_assert_uint_eq(tword(&t, 0), spec_free(1));
	ck_assert_uint_eq(tr.rd.stat[TB_RS_MALFORMED], 1);
	forge_free(&t, &tr);
}
END_TEST

START_TEST(test_reader_unknown_format_transitions_without_reading)
{
	unsigned fmt;

	for (fmt = 1; fmt < 4; fmt++) {
		struct tring t;
		struct treader tr;
		struct tb_chunk_view v;
		uint8_t *c;

		/* a directory that would be malformed if it were parsed */
		forge(&t, &tr, 256, spec_word(SPEC_CMP, fmt, 0, 2, WA));
		c = tchunk(&t, 0);
		c[255] = 250;
		c[254] = 250;
		ck_assert_int_eq(tdrain(&tr.rd, 8, TB_READ_SCRAPE,
						 NULL, NULL), 1);
		ck_assert_uint_eq(tword(&t, 0), spec_free(1));
		ck_assert_uint_eq(hdr_rstat(&t, TB_RS_UNKNOWN_FORMAT), 1);
		ck_assert_uint_eq(hdr_rstat(&t, TB_RS_MALFORMED), 0);
		ck_assert_uint_eq(hdr_rstat(&t, TB_RS_EMITTED), 0);
		forge_free(&t, &tr);

		forge(&t, &tr, 256, spec_word(SPEC_ACQ, fmt, SPEC_L, 1, WA));
		/* not a BufferID in this format */
		tchunk(&t, 0)[TB_FRAG_BID_OFF] = 3;
		ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE,
						    &v), TB_EMITTED);
		check_lost_view(&v, 0, WA, TB_VIEW_UNKNOWN_FORMAT, 1);
		ck_assert_uint_eq(v.bid, 0);
		ck_assert_uint_eq(tword(&t, 0),
				  spec_word(SPEC_RR, fmt, SPEC_L, 1, WA));
		forge_free(&t, &tr);
	}
}
END_TEST

START_TEST(test_reader_scrapes_published_prefix_of_acquired)
{
	struct tring t;
	struct twriter a;
	struct treader tr;
	struct collect col;
	struct tb_span sp;

	tring_new(&t, 512, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	ck_assert_int_eq(twrite(&a, "p0", 0, 0), TB_OK);
	ck_assert_int_eq(twrite(&a, "p1", 0, 0), TB_OK);
	topen_with(&a, "open", 4, 0, &sp);
	memset(&col, 0, sizeof(col));
	ck_assert_int_eq(tdrain(&tr.rd, 8, TB_READ_SCRAPE, collect_fn,
					 &col), 1);
	ck_assert_uint_eq(col.count, 1);
	ck_assert_uint_eq(col.c[0].nfrags, 2);
	ck_assert_uint_eq(col.c[0].scraped, 1);
	ck_assert_str_eq(col.c[0].frag[0], "p0");
	ck_assert_str_eq(col.c[0].frag[1], "p1");
	ck_assert_uint_eq(tword(&t, 0), spec_word(SPEC_RR, 0, 0, 2, WA));
	ck_assert_uint_eq(hdr_rstat(&t, TB_RS_SCRAPES), 1);
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

static void act_change_word(struct hookctx *h, uint32_t pos, uint32_t word)
{
	/* a writer racing: a different word of the same state every time */
	(void)pos;
	tset_word(h->t, 0, (word & 0xffff0000u) | ((word + 1) & 0xffff));
}

START_TEST(test_reader_retry_later_when_every_cas_loses)
{
	static const uint32_t states[] = { SPEC_CMP, SPEC_ACQ };
	unsigned k;

	for (k = 0; k < 2; k++) {
		struct tring t;
		struct treader tr;
		struct hookctx h;
		struct tb_chunk_view v;
		uint32_t before;

		forge(&t, &tr, 256, spec_word(states[k], 0, 0, 1, WA));
		tchunk(&t, 0)[255] = 3;
		memset(&h, 0, sizeof(h));
		h.act = act_change_word;
		h.every = 1;
		h.t = &t;
		set_hook(&tr, &h);
		ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE,
						    &v), TB_RETRY_LATER);
		ck_assert_uint_gt(h.calls, 1);		/* it did retry */
		ck_assert_uint_le(h.calls, 64);		/* bounded */
		ck_assert_uint_eq(tr.rd.pos, 0);
		before = tword(&t, 0);
		ck_assert_uint_eq(before >> 29, states[k]);
		/* a drain pass leaves read_pos and counts it */
		ck_assert_int_eq(tdrain(&tr.rd, 8, TB_READ_SCRAPE,
						 NULL, NULL), 0);
		ck_assert_uint_eq(tread_pos(&t), 0);
		ck_assert_uint_eq(tr.rd.pos, 0);
		ck_assert_uint_eq(hdr_rstat(&t, TB_RS_RETRY_LATER), 2);
		/* once the writer stops racing, the position resolves */
		tr.rd.hook = NULL;
		ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE,
						    &v), TB_EMITTED);
		ck_assert_uint_eq(tr.rd.pos, 1);
		forge_free(&t, &tr);
	}
}
END_TEST

/* Runs the reader on a forged word and expects a latched protocol error. */
static void expect_eproto(uint32_t word, uint32_t write_pos,
			  enum tb_proto_rule rule)
{
	struct tring t;
	struct treader tr;
	struct tb_chunk_view v;
	struct tb_ring_stats st;
	unsigned i;

	forge(&t, &tr, 256, word);
	tset_write_pos(&t, write_pos);
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_EPROTO);
	ck_assert_uint_eq(tword(&t, 0), word);
	ck_assert_uint_eq(tr.rd.pos, 0);
	/* the rule that was broken is kept for tb_ring_stats() */
	tb_ring_stats(&t.r, &st);
	ck_assert_uint_eq(st.stopped, rule);
	/* in a word of its own: no counter slot holds it */
	ck_assert_uint_eq(peek32(&t.r.hdr->stopped), rule);
	for (i = TB_RS_MAX; i < 16; i++)
		ck_assert_uint_eq(peek32(&t.r.hdr->rstat[i]), 0);
	/* latched, also in a drain pass and in lazy mode */
	ck_assert_int_eq(tdrain(&tr.rd, 8, TB_READ_SCRAPE, NULL,
					 NULL), TB_EPROTO);
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_LAZY, &v),
			 TB_EPROTO);
	ck_assert_uint_eq(tword(&t, 0), word);
	ck_assert_uint_eq(tread_pos(&t), 0);
	/* repairing the ring does not unlatch this reader */
	tset_word(&t, 0, 0);
	tset_write_pos(&t, 1);
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_EPROTO);
	ck_assert_uint_eq(tword(&t, 0), 0);
	forge_free(&t, &tr);
}

START_TEST(test_reader_eproto_on_mismatched_free_tag)
{
	expect_eproto(spec_free(3), 1, TB_PROTO_FREE_TAG);
	/* a tag from the future */
	expect_eproto(spec_free(1), 1, TB_PROTO_FREE_TAG);
	expect_eproto(spec_free(0x1fffffff), 1, TB_PROTO_FREE_TAG);
}
END_TEST

START_TEST(test_reader_eproto_on_reserved_states_5_6_7)
{
	uint32_t st;

	for (st = 5; st <= 7; st++) {
		expect_eproto(st << 29, 1, TB_PROTO_RESERVED_STATE);
		expect_eproto(st << 29 | 0x00030007u, 1,
			      TB_PROTO_RESERVED_STATE);
	}
}
END_TEST

START_TEST(test_reader_eproto_on_acknowledged_with_nonzero_low_bits)
{
	expect_eproto(0x80000001u, 1, TB_PROTO_ACKED);
	expect_eproto(0x80030007u, 1, TB_PROTO_ACKED);
	expect_eproto(0x9fffffffu, 1, TB_PROTO_ACKED);
}
END_TEST

START_TEST(test_reader_eproto_on_write_pos_beyond_num_chunks)
{
	struct tring t;
	struct treader tr;

	expect_eproto(0, 5, TB_PROTO_WRITE_POS);
	expect_eproto(0, 0x80000000u, TB_PROTO_WRITE_POS);
	/* "behind" read_pos */
	expect_eproto(0, 0xffffffffu, TB_PROTO_WRITE_POS);
	/* exactly num_chunks ahead is a legal full ring */
	forge(&t, &tr, 256, 0);
	tset_write_pos(&t, 4);
	ck_assert_int_eq(tdrain(&tr.rd, 8, TB_READ_SCRAPE, NULL,
					 NULL), 4);
	forge_free(&t, &tr);
}
END_TEST

START_TEST(test_lazy_reader_pending_before_acquired_chunk)
{
	struct tring t;
	struct twriter a, b;
	struct treader tr;
	struct tb_chunk_view v;
	struct collect col;
	struct tb_span sp;

	tring_new(&t, 256, 8);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	twriter_new(&b, &t, WB, BID, TB_DROP);
	treader_new(&tr, &t);
	ck_assert_int_eq(twrite(&b, "b", 0, 0), TB_OK);		/* p0 */
	ck_assert_int_eq(twrite(&a, "a", 0, 0), TB_OK);		/* p1 */
	topen_with(&a, "held", 4, 0, &sp);			/* Acq(1) */
	memset(&col, 0, sizeof(col));
	ck_assert_int_eq(tdrain(&tr.rd, 8, TB_READ_LAZY, collect_fn,
					 &col), 1);
	ck_assert_uint_eq(col.count, 1);
	ck_assert_str_eq(col.c[0].frag[0], "b");
	ck_assert_uint_eq(tread_pos(&t), 1);
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_LAZY, &v),
			 TB_PENDING);
	ck_assert_uint_eq(tr.rd.pos, 1);
	ck_assert_uint_eq(tword(&t, 1), spec_word(SPEC_ACQ, 0, 0, 1, WA));
	/* a flush takes the prefix */
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_EMITTED);
	ck_assert_vfrag(&v, 0, "a");
	twriter_free(&a);
	twriter_free(&b);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_lazy_reader_scrapes_once_under_pressure)
{
	struct tring t;
	struct twriter a, b, c, d;
	struct treader tr;
	struct tb_chunk_view v;
	struct tb_span sp, sp2;

	tring_new(&t, 256, 8);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	twriter_new(&b, &t, WB, BID, TB_DROP);
	twriter_new(&c, &t, WC, BID, TB_DROP);
	twriter_new(&d, &t, 13, BID, TB_DROP);
	ck_assert_int_eq(twrite(&a, "a", 0, 0), TB_OK);		/* p0 */
	topen_with(&a, "held", 4, 0, &sp);
	topen_with(&b, "held", 4, 0, &sp2);			/* p1 */
	ck_assert_int_eq(twrite(&c, "c", 0, 0), TB_OK);		/* p2 */
	ck_assert_int_eq(twrite(&d, "d", 0, 0), TB_OK);		/* p3 */
	treader_new(&tr, &t);
	/* distance 4 >= 8 / 2: the lazy reader scrapes */
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_LAZY, &v),
			 TB_EMITTED);
	ck_assert_uint_eq(v.scraped, 1);
	ck_assert_vfrag(&v, 0, "a");
	ck_assert_uint_eq(tword(&t, 0), spec_word(SPEC_RR, 0, 0, 1, WA));
	/* distance 3: no pressure, it stops before writer b's chunk */
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_LAZY, &v),
			 TB_PENDING);
	ck_assert_uint_eq(tr.rd.pos, 1);
	ck_assert_uint_eq(tword(&t, 1), spec_word(SPEC_ACQ, 0, 0, 0, WB));
	twriter_free(&a);
	twriter_free(&b);
	twriter_free(&c);
	twriter_free(&d);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * (g) The writer (sections 3.5, 5.4, 6, 7.1)
 */
START_TEST(test_writer_payload_up_sizes_down)
{
	struct tring t;
	struct twriter a;
	struct dchunk d;
	char f0[6], f1[201], f2[4];
	uint8_t *c;

	memset(f0, 'a', 5), f0[5] = 0;
	memset(f1, 'b', 200), f1[200] = 0;
	memset(f2, 'c', 3), f2[3] = 0;
	tring_new(&t, 256, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	ck_assert_int_eq(twrite(&a, f0, 0, 0), TB_OK);
	ck_assert_int_eq(twrite(&a, f1, 0, 0), TB_OK);
	ck_assert_int_eq(twrite(&a, f2, 0, 0), TB_OK);
	c = tchunk(&t, 0);
	ck_assert_uint_eq(c[255], 5);
	ck_assert_uint_eq(c[254], 200);
	ck_assert_uint_eq(c[253], 3);
	ck_assert_uint_eq(c[4], 0x34);
	ck_assert_uint_eq(c[5], 0x12);
	ck_assert_mem_eq(c + 6, f0, 5);
	ck_assert_mem_eq(c + 11, f1, 200);
	ck_assert_mem_eq(c + 211, f2, 3);
	tdecode(&t, 0, &d);
	ck_assert_uint_eq(d.word, spec_word(SPEC_CMP, 0, 0, 3, WA));
	ck_assert_uint_eq(d.bid, BID);
	ck_assert_frag(&d, 0, f0);
	ck_assert_frag(&d, 1, f1);
	ck_assert_frag(&d, 2, f2);
	ck_assert_uint_eq(twrite_pos(&t), 1);
	twriter_free(&a);
	tring_free(&t);
}
END_TEST

START_TEST(test_writer_fragment_sizes_at_interesting_boundaries)
{
	static const unsigned sizes[] = { 0, 1, 127, 128, 255, 256 };
	struct tring t;
	struct twriter a;
	uint8_t buf[256];
	unsigned i, k, got = 0, ci;

	tring_new(&t, 512, 8);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	for (i = 0; i < 6; i++) {
		struct tb_span sp;

		memset(buf, 'A' + sizes[i] % 26, sizes[i]);
		ck_assert_int_eq(tb_writer_open(&a.w, sizes[i], 0, &sp),
				 TB_OK);
		memcpy(sp.begin, buf, sizes[i]);
		ck_assert_int_eq(tb_writer_close(&a.w, sizes[i], 0), TB_OK);
	}
	/* walk every chunk in index order with the independent decoder */
	for (ci = 0; ci < 8; ci++) {
		struct dchunk d;

		tdecode(&t, ci, &d);
		if (d.state != SPEC_CMP)
			continue;
		ck_assert(!d.malformed);
		for (k = 0; k < d.n; k++, got++) {
			ck_assert_uint_lt(got, 6);
			ck_assert_uint_eq(d.sizes[k], sizes[got]);
			memset(buf, 'A' + sizes[got] % 26, sizes[got]);
			ck_assert_mem_eq(d.frag[k], buf, sizes[got]);
		}
	}
	ck_assert_uint_eq(got, 6);
	ck_assert_uint_gt(twrite_pos(&t), 1);	/* 767 bytes: > 1 chunk */
	twriter_free(&a);
	tring_free(&t);
}
END_TEST

START_TEST(test_writer_reuses_its_own_complete_chunk)
{
	struct tring t;
	struct twriter a;
	struct dchunk d;

	tring_new(&t, 512, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	ck_assert_int_eq(twrite(&a, "one", 0, 0), TB_OK);
	ck_assert_int_eq(twrite(&a, "two", 0, 0), TB_OK);
	ck_assert_uint_eq(twrite_pos(&t), 1);
	tdecode(&t, 0, &d);
	ck_assert_uint_eq(d.word, spec_word(SPEC_CMP, 0, 0, 2, WA));
	ck_assert_frag(&d, 0, "one");
	ck_assert_frag(&d, 1, "two");
	ck_assert_uint_eq(tword(&t, 1), 0);
	twriter_free(&a);
	tring_free(&t);
}
END_TEST

START_TEST(test_writer_reuse_lost_to_reader_takes_a_new_chunk)
{
	struct tring t;
	struct twriter a;
	struct dchunk d;
	uint32_t seen;

	tring_new(&t, 512, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	ck_assert_int_eq(twrite(&a, "one", 0, 0), TB_OK);
	/* the test, as reader, consumes the Complete chunk */
	seen = tb_ring_load_state(&t.r, 0);
	ck_assert(tb_ring_reclaim_complete(&t.r, 0, &seen));
	tb_ring_publish_read_pos(&t.r, 1);
	ck_assert_int_eq(twrite(&a, "two", 0, 0), TB_OK);
	ck_assert_uint_eq(tword(&t, 0), spec_free(1));
	tdecode(&t, 1, &d);
	ck_assert_uint_eq(d.word, spec_word(SPEC_CMP, 0, 0, 1, WA));
	ck_assert_frag(&d, 0, "two");
	twriter_free(&a);
	tring_free(&t);
}
END_TEST

START_TEST(test_writer_never_reuses_chunk_with_continues_on_next)
{
	struct tring t;
	struct twriter a;
	struct dchunk d;
	struct tb_span sp;

	tring_new(&t, 512, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	ck_assert_int_eq(twrite(&a, "head", 0, TB_CLOSE_CONT_NEXT), TB_OK);
	/* the chunk is handed over at once, not kept for reuse */
	ck_assert_int_eq(tb_writer_room(&a.w), TB_ENOROOM);
	/* the continuation starts a new chunk; its Acquired word has no N */
	topen_with(&a, "tail", 4, TB_OPEN_CONT_PREV, &sp);
	ck_assert_uint_eq(tword(&t, 1), spec_word(SPEC_ACQ, 0, SPEC_P, 0, WA));
	ck_assert_int_eq(tb_writer_close(&a.w, 4, 0), TB_OK);
	tdecode(&t, 0, &d);
	ck_assert_uint_eq(d.word, spec_word(SPEC_CMP, 0, SPEC_N, 1, WA));
	ck_assert_frag(&d, 0, "head");
	tdecode(&t, 1, &d);
	ck_assert_uint_eq(d.word, spec_word(SPEC_CMP, 0, SPEC_P, 1, WA));
	ck_assert_frag(&d, 0, "tail");
	tdecode(&t, 0, &d);
	ck_assert_uint_eq(d.n, 1);
	twriter_free(&a);
	tring_free(&t);
}
END_TEST

/* A continuation's flag describes a chunk's first fragment: it never
 * goes into a kept chunk behind other fragments, even when asked to. */
START_TEST(test_writer_continuation_always_starts_a_chunk)
{
	struct tring t;
	struct twriter a;
	struct dchunk d;

	tring_new(&t, 512, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	ck_assert_int_eq(twrite(&a, "one", 0, 0), TB_OK);
	ck_assert_int_gt(tb_writer_room(&a.w), 0);	/* kept for reuse */
	ck_assert_int_eq(twrite(&a, "cont", TB_OPEN_CONT_PREV, 0), TB_OK);
	ck_assert_uint_eq(twrite_pos(&t), 2);
	tdecode(&t, 0, &d);
	ck_assert_uint_eq(d.word, spec_word(SPEC_CMP, 0, 0, 1, WA));
	tdecode(&t, 1, &d);
	ck_assert_uint_eq(d.word, spec_word(SPEC_CMP, 0, SPEC_P, 1, WA));
	ck_assert_frag(&d, 0, "cont");
	twriter_free(&a);
	tring_free(&t);
}
END_TEST

START_TEST(test_writer_never_reuses_n_chunk_for_unrelated_packet)
{
	struct tring t;
	struct twriter a;
	struct dchunk d;

	tring_new(&t, 512, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	/* the packet is abandoned after its head: still no reuse */
	ck_assert_int_eq(twrite(&a, "head", 0, TB_CLOSE_CONT_NEXT), TB_OK);
	ck_assert_int_eq(twrite(&a, "other", 0, 0), TB_OK);
	ck_assert_uint_eq(twrite_pos(&t), 2);
	tdecode(&t, 0, &d);
	ck_assert_uint_eq(d.word, spec_word(SPEC_CMP, 0, SPEC_N, 1, WA));
	tdecode(&t, 1, &d);
	ck_assert_uint_eq(d.word, spec_word(SPEC_CMP, 0, 0, 1, WA));
	ck_assert_frag(&d, 0, "other");
	twriter_free(&a);
	tring_free(&t);
}
END_TEST

START_TEST(test_writer_packet_split_sets_continuation_flags)
{
	struct tring t;
	struct twriter a;
	struct dchunk d0, d1;
	uint8_t pkt[300];
	unsigned i;

	for (i = 0; i < sizeof(pkt); i++)
		pkt[i] = (uint8_t)(i * 7);
	tring_new(&t, 256, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	ck_assert_int_eq(tb_writer_write_packet(&a.w, pkt, sizeof(pkt)),
			 TB_OK);
	tdecode(&t, 0, &d0);
	tdecode(&t, 1, &d1);
	ck_assert_uint_eq(d0.state, SPEC_CMP);
	ck_assert_uint_eq(d0.flags3, SPEC_N);
	ck_assert_uint_eq(d1.state, SPEC_CMP);
	ck_assert_uint_eq(d1.flags3, SPEC_P);
	ck_assert_uint_eq(d0.n, 1);
	ck_assert_uint_eq(d1.n, 1);
	ck_assert_uint_eq(d0.sizes[0] + d1.sizes[0], sizeof(pkt));
	ck_assert_mem_eq(d0.frag[0], pkt, d0.sizes[0]);
	ck_assert_mem_eq(d1.frag[0], pkt + d0.sizes[0], d1.sizes[0]);
	twriter_free(&a);
	tring_free(&t);
}
END_TEST

START_TEST(test_writer_data_loss_on_next_claimed_chunk_only_once)
{
	struct tring t;
	struct twriter a;
	struct dchunk d;
	char big[501];

	memset(big, 'x', 500), big[500] = 0;
	tring_new(&t, 512, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	ck_assert_int_eq(twrite(&a, "before", 0, 0), TB_OK);
	/* loss while a reusable chunk is cached: not reused, flag travels */
	tb_writer_record_loss(&a.w);
	ck_assert_int_eq(twrite(&a, "after the gap", 0, 0), TB_OK);
	tdecode(&t, 0, &d);
	ck_assert_uint_eq(d.word, spec_word(SPEC_CMP, 0, 0, 1, WA));
	tdecode(&t, 1, &d);
	ck_assert_uint_eq(d.flags3, SPEC_L);
	ck_assert_frag(&d, 0, "after the gap");
	ck_assert_int_eq(twrite(&a, big, 0, 0), TB_OK);
	tdecode(&t, 2, &d);
	ck_assert_uint_eq(d.flags3, 0);
	ck_assert_frag(&d, 0, big);
	twriter_free(&a);
	tring_free(&t);
}
END_TEST

/*
 * A writer idle while others reserve any number of positions writes
 * again where they do.  Its floor (one past its last position) is a
 * lap of the 2^32 position space behind once 2^31 positions passed, which
 * write_pos put back by a stray store also looks like; the floor only
 * holds within a ring of read_pos or of write_pos (tb__pos_floor()).
 * Each case: the writer writes once at @last (or, @fresh, is set up with
 * write_pos at @last + 1 and never writes), then @idle positions are
 * reserved and resolved by others (the ring laid out where they leave
 * it, tb_ring_init_at()), then it must write, under either policy, at
 * the position after them plus @skip.  @skip is nonzero only within a
 * ring of a multiple of 2^32 positions, where the floor is just ahead of
 * write_pos and the writer cannot tell a lap from a stray store: it
 * takes its floor, and the positions it skips are holes.  Exactly a ring
 * short of 2^32 (@full) the floor is a whole ring ahead of the drained
 * ring's read_pos, as after a stray store that puts write_pos back a
 * whole ring (test_writer_floor_holds_a_whole_ring_behind): it is
 * refused once (TB_FULL) and moves write_pos up to its floor, so that
 * the reader resolves the positions in between (holes); then it writes.
 */
static const struct idle_case {
	uint32_t last;
	uint32_t idle;
	uint32_t skip;
	int fresh;
	int full;
} idle_cases[] = {
	{ 0, 0, 0, 0, 0 },
	{ 0, 0x80000000u - 64, 0, 0, 0 },
	{ 0, 0x80000000u - 1, 0, 0, 0 },
	{ 0, 0x80000000u, 0, 0, 0 },
	{ 0, 0x80000000u + 16, 0, 0, 0 },
	{ 0, 0x80000000u + 16, 0, 1, 0 },		/* never wrote */
	{ 0x7ffffff0u, 0x80000000u + 16, 0, 0, 0 },	/* across 2^32 */
	{ 0xfffffff0u, 0x80000000u + 16, 0, 0, 0 },	/* from below it */
	{ 0xfffffff0u, 0x80000000u + 16, 0, 1, 0 },
	{ 0, 0u - 64, 0, 0, 0 },
	{ 0, 0u - 4, 4, 0, 1 },			/* 2^32 - a ring */
	{ 0, 0u - 5, 0, 0, 0 },
	{ 0, 0u - 3, 3, 0, 0 },
	{ 0, 0u - 1, 1, 0, 0 },
};
#define NIDLE	(int)(sizeof(idle_cases) / sizeof(idle_cases[0]))

START_TEST(test_idle_writer_writes_again_after_any_number_of_positions)
{
	const struct idle_case *c = &idle_cases[_i / 2];
	enum tb_full_policy policy = _i & 1 ? TB_STALL : TB_DROP;
	uint32_t start = c->last + 1 + c->idle, at = start + c->skip;
	struct tring t;
	struct twriter a;
	struct treader tr;
	struct collect col;
	int ret;

	memset(&col, 0, sizeof(col));
	tring_new_at(&t, 256, 4, c->fresh ? c->last + 1 : c->last);
	twriter_new(&a, &t, WA, BID, policy);
	a.w.stall_ms = 1;	/* a lockout fails fast, as TB_FULL */
	if (!c->fresh) {
		treader_new(&tr, &t);
		ck_assert_int_eq(twrite(&a, "once", 0, 0), TB_OK);
		ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);
		ck_assert_int_eq(tdrain(&tr.rd, 8, TB_READ_SCRAPE, collect_fn,
					&col), 1);
		ck_assert_uint_eq(col.c[0].pos, c->last);
		treader_free(&tr);
	}
	memset(t.mem, 0, t.len);	/* where the others leave the ring */
	ck_assert_int_eq(tb_ring_init_at(&t.r, t.mem, t.len, 256, 4, start),
			 TB_OK);
	treader_new(&tr, &t);
	col.count = 0;
	ret = twrite(&a, "again", 0, 0);
	if (c->full && ret == TB_FULL) {
		ck_assert_uint_eq(twrite_pos(&t), at);
		ck_assert_int_eq(tdrain(&tr.rd, 8, TB_READ_SCRAPE, collect_fn,
					&col), (int)c->skip);
		ret = twrite(&a, "again", 0, 0);
	}
	ck_assert_msg(ret == TB_OK,
		      "case %d: idle for %#x positions after %#x: locked out",
		      _i / 2, c->idle, c->last);
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);
	ck_assert_uint_eq(twrite_pos(&t), at + 1);
	ck_assert_int_eq(tdrain(&tr.rd, 8, TB_READ_SCRAPE, collect_fn, &col),
			 c->full ? 1 : (int)c->skip + 1);
	ck_assert_uint_eq(col.count, 1);
	ck_assert_uint_eq(col.c[0].pos, at);
	ck_assert_str_eq(col.c[0].frag[0], "again");
	treader_free(&tr);
	twriter_free(&a);
	tring_free(&t);
}
END_TEST

/*
 * The same under TB_STALL while others keep the ring busy: a stall that
 * sees read_pos move retries, so a locked-out writer never returned.
 * Here the others (a writer and the reader, on a thread of their own)
 * keep going until the idle writer's write returns, or until it stalled
 * 1000 times: then they stop, its stall runs out and it gets TB_FULL.
 */
struct busy_ring {
	struct tring *t;
	int done;
};

static void *keep_ring_busy(void *arg)
{
	struct busy_ring *b = (struct busy_ring *)arg;
	struct twriter o;
	struct treader tr;

	twriter_new(&o, b->t, WB, BID, TB_DROP);
	treader_new(&tr, b->t);
	while (!__atomic_load_n(&b->done, __ATOMIC_ACQUIRE) &&
	       __atomic_load_n(&b->t->r.hdr->wstat[TB_WS_STALLS],
			       __ATOMIC_RELAXED) < 1000) {
		twrite(&o, "busy", 0, 0);
		tb_writer_release(&o.w);
		tdrain(&tr.rd, ~0u, TB_READ_SCRAPE, NULL, NULL);
	}
	treader_free(&tr);
	twriter_free(&o);
	return NULL;
}

START_TEST(test_idle_stalling_writer_returns_while_others_write)
{
	struct busy_ring b;
	struct tring t;
	struct twriter a;
	struct treader tr;
	pthread_t th;
	int ret;

	tring_new(&t, 256, 4);
	twriter_new(&a, &t, WA, BID, TB_STALL);
	a.w.stall_ms = 50;
	treader_new(&tr, &t);
	ck_assert_int_eq(twrite(&a, "once", 0, 0), TB_OK);	/* at 0 */
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);
	ck_assert_int_eq(tdrain(&tr.rd, 8, TB_READ_SCRAPE, NULL, NULL), 1);
	treader_free(&tr);
	memset(t.mem, 0, t.len);
	ck_assert_int_eq(tb_ring_init_at(&t.r, t.mem, t.len, 256, 4,
					 0x80000000u + 17), TB_OK);
	b.t = &t;
	b.done = 0;
	ck_assert_int_eq(pthread_create(&th, NULL, keep_ring_busy, &b), 0);
	ret = twrite(&a, "again", 0, 0);
	__atomic_store_n(&b.done, 1, __ATOMIC_RELEASE);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_msg(ret == TB_OK, "the idle writer: %s after %u stalls",
		      tb_strerror(ret), peek32(&t.r.hdr->wstat[TB_WS_STALLS]));
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);
	twriter_free(&a);
	tring_free(&t);
}
END_TEST

START_TEST(test_writer_full_under_drop_policy_keeps_write_pos)
{
	struct tring t;
	struct twriter a, b, c;
	struct tb_span sp;
	struct tb_ring_stats st;

	tring_new(&t, 256, 2);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	twriter_new(&b, &t, WB, BID, TB_DROP);
	twriter_new(&c, &t, WC, BID, TB_DROP);
	ck_assert_int_eq(tb_writer_open(&a.w, 1, 0, &sp), TB_OK);
	ck_assert_int_eq(tb_writer_open(&b.w, 1, 0, &sp), TB_OK);
	ck_assert_int_eq(tb_writer_open(&c.w, 1, 0, &sp), TB_FULL);
	ck_assert_uint_eq(twrite_pos(&t), 2);
	ck_assert_uint_eq(c.w.holes, 0);
	tb_ring_stats(&t.r, &st);
	ck_assert_uint_eq(st.wstat[TB_WS_FULL], 1);
	ck_assert_uint_eq(st.wstat[TB_WS_HOLES], 0);
	twriter_free(&a);
	twriter_free(&b);
	twriter_free(&c);
	tring_free(&t);
}
END_TEST

/* Pins every chunk: claimed directly (no reservation), then scraped. */
static void pin_all(struct tring *t)
{
	uint32_t i, seen;

	for (i = 0; i < t->n; i++) {
		seen = spec_word(SPEC_ACQ, 0, 0, 0, WB);
		ck_assert(tb_ring_claim(&t->r, i, seen));
		ck_assert(tb_ring_mark_rewrite(&t->r, i, &seen));
	}
	ck_assert_uint_eq(twrite_pos(t), 0);
}

START_TEST(test_writer_no_chunk_when_chunks_pinned)
{
	struct tring t;
	struct twriter a;
	struct tb_span sp;
	struct tb_ring_stats st;

	tring_new(&t, 256, 8);
	pin_all(&t);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	ck_assert_int_eq(tb_writer_open(&a.w, 1, 0, &sp), TB_NO_CHUNK);
	ck_assert_uint_gt(a.w.holes, 0);
	ck_assert_uint_eq(twrite_pos(&t), a.w.holes);
	tb_ring_stats(&t.r, &st);
	ck_assert_uint_eq(st.wstat[TB_WS_NO_CHUNK], 1);
	ck_assert_uint_eq(st.wstat[TB_WS_FULL], 0);
	ck_assert_uint_eq(st.wstat[TB_WS_HOLES], a.w.holes);
	/* each lost claim was discarded: the pinned words are intact */
	ck_assert_uint_eq(tword(&t, 0), spec_word(SPEC_RR, 0, 0, 0, WB));
	twriter_free(&a);
	tring_free(&t);
}
END_TEST

START_TEST(test_writer_holes_take_precedence_over_full_even_under_stall)
{
	static const enum tb_full_policy pol[] = { TB_DROP, TB_STALL };
	unsigned k;

	for (k = 0; k < 2; k++) {
		struct tring t;
		struct twriter a;
		struct tb_span sp;
		struct tb_ring_stats st;

		tring_new(&t, 256, 2);
		pin_all(&t);
		twriter_new(&a, &t, WA, BID, pol[k]);
		a.w.stall_ms = 3000;	/* no stall: TB_WS_STALLS stays 0 */
		ck_assert_int_eq(tb_writer_open(&a.w, 1, 0, &sp), TB_NO_CHUNK);
		ck_assert_uint_eq(a.w.holes, 2);
		ck_assert_uint_eq(twrite_pos(&t), 2);
		ck_assert_uint_eq(peek32(&t.r.hdr->waiters), 0);
		tb_ring_stats(&t.r, &st);
		ck_assert_uint_eq(st.wstat[TB_WS_STALLS], 0);
		twriter_free(&a);
		tring_free(&t);
	}
}
END_TEST

START_TEST(test_writer_too_large_reserves_nothing)
{
	static const uint32_t css[] = { 256, 512, 4096, 32768 };
	unsigned k;

	for (k = 0; k < 4; k++) {
		struct tring t;
		struct twriter a;
		struct tb_span sp;
		uint32_t max = css[k] - 6 - spec_width(css[k]);

		tring_new(&t, css[k], 4);
		twriter_new(&a, &t, WA, BID, TB_DROP);
		ck_assert_int_eq(tb_writer_open(&a.w, max + 1, 0, &sp),
				 TB_TOO_LARGE);
		ck_assert_int_eq(tb_writer_open(&a.w, 0xffffffffu, 0, &sp),
				 TB_TOO_LARGE);
		ck_assert_uint_eq(twrite_pos(&t), 0);
		ck_assert_uint_eq(tword(&t, 0), 0);
		twriter_free(&a);
		tring_free(&t);
	}
}
END_TEST

START_TEST(test_writer_largest_fragment_fits_exactly)
{
	static const uint32_t css[] = { 256, 512, 4096, 32768 };
	unsigned k;

	for (k = 0; k < 4; k++) {
		struct tring t;
		struct twriter a;
		struct tb_span sp;
		struct dchunk d;
		uint32_t max = css[k] - 6 - spec_width(css[k]);

		tring_new(&t, css[k], 4);
		twriter_new(&a, &t, WA, BID, TB_DROP);
		ck_assert_int_eq(tb_writer_open(&a.w, max, 0, &sp), TB_OK);
		ck_assert_uint_eq((size_t)(sp.end - sp.begin), max);
		memset(sp.begin, 0x3c, max);
		ck_assert_int_eq(tb_writer_close(&a.w, max + 1, 0), TB_ESIZE);
		ck_assert_int_eq(tb_writer_close(&a.w, max, 0), TB_OK);
		tdecode(&t, 0, &d);
		ck_assert(!d.malformed);
		ck_assert_uint_eq(d.n, 1);
		ck_assert_uint_eq(d.sizes[0], max);
		ck_assert_uint_eq(d.frag[0][max - 1], 0x3c);
		/* nothing fits beside it: the next fragment is a new chunk */
		ck_assert_int_eq(twrite(&a, "", 0, 0), TB_OK);
		ck_assert_uint_eq(twrite_pos(&t), 2);
		twriter_free(&a);
		tring_free(&t);
	}
}
END_TEST

START_TEST(test_writer_255_fragments_then_new_chunk)
{
	struct tring t;
	struct twriter a;
	struct dchunk d;
	unsigned i;

	tring_new(&t, 32768, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	for (i = 0; i < 255; i++)
		ck_assert_int_eq(twrite(&a, "", 0, 0), TB_OK);
	tdecode(&t, 0, &d);
	ck_assert_uint_eq(d.word, spec_word(SPEC_CMP, 0, 0, 255, WA));
	ck_assert_uint_eq(twrite_pos(&t), 1);
	ck_assert_int_eq(twrite(&a, "x", 0, 0), TB_OK);
	ck_assert_uint_eq(twrite_pos(&t), 2);
	tdecode(&t, 0, &d);
	ck_assert_uint_eq(d.n, 255);
	tdecode(&t, 1, &d);
	ck_assert_uint_eq(d.n, 1);
	ck_assert_frag(&d, 0, "x");
	twriter_free(&a);
	tring_free(&t);
}
END_TEST

START_TEST(test_writer_release_publishes_closed_and_abandons_open)
{
	struct tring t;
	struct twriter a;
	struct tb_span sp;
	struct dchunk d;

	tring_new(&t, 512, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	ck_assert_int_eq(twrite(&a, "kept", 0, 0), TB_OK);
	topen_with(&a, "lost", 4, 0, &sp);
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);
	tdecode(&t, 0, &d);
	ck_assert_uint_eq(d.word, spec_word(SPEC_CMP, 0, 0, 1, WA));
	ck_assert_frag(&d, 0, "kept");
	/* the abandoned fragment is owed as data loss */
	ck_assert_int_eq(twrite(&a, "next", 0, 0), TB_OK);
	tdecode(&t, 1, &d);
	ck_assert_uint_eq(d.flags3, SPEC_L);
	twriter_free(&a);
	tring_free(&t);
}
END_TEST

START_TEST(test_writer_publish_lost_to_foreign_word_is_eproto)
{
	struct tring t;
	struct twriter a;
	struct tb_span sp;
	uint32_t foreign = spec_word(SPEC_RR, 0, 0, 0, WB);

	tring_new(&t, 512, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	topen_with(&a, "mine", 4, 0, &sp);
	tset_word(&t, 0, foreign);	/* not our word turned RR */
	ck_assert_int_eq(tb_writer_close(&a.w, 4, 0), TB_EPROTO);
	ck_assert_uint_eq(tword(&t, 0), foreign);	/* never acknowledged */
	twriter_free(&a);
	tring_free(&t);
}
END_TEST

START_TEST(test_writer_lost_claim_burns_position_and_moves_on)
{
	struct tring t;
	struct twriter a;
	struct dchunk d;
	uint32_t foreign = spec_word(SPEC_RR, 0, 0, 0, WB);

	tring_new(&t, 256, 4);
	tset_word(&t, 0, foreign);		/* chunk 0 pinned by b */
	twriter_new(&a, &t, WA, BID, TB_DROP);
	ck_assert_int_eq(twrite(&a, "x", 0, 0), TB_OK);
	/* position 0 is a hole, never retried against the word it saw */
	ck_assert_uint_eq(a.w.holes, 1);
	ck_assert_uint_eq(twrite_pos(&t), 2);
	ck_assert_uint_eq(tword(&t, 0), foreign);
	tdecode(&t, 1, &d);
	ck_assert_uint_eq(d.word, spec_word(SPEC_CMP, 0, 0, 1, WA));
	ck_assert_frag(&d, 0, "x");
	twriter_free(&a);
	tring_free(&t);
}
END_TEST

START_TEST(test_burned_position_rings_the_doorbell)
{
	/* section 5.4: a burned position notifies the reader */
	struct tring t;
	struct twriter a;
	struct tb_span sp;
	uint32_t seq;

	tring_new(&t, 256, 4);
	pin_all(&t);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	seq = tb_bell_prepare(t.r.bell);	/* the reader goes to sleep */
	ck_assert_int_eq(tb_writer_open(&a.w, 1, 0, &sp), TB_NO_CHUNK);
	ck_assert_uint_ne(__atomic_load_n(&t.r.bell->seq, __ATOMIC_RELAXED),
			  seq);
	/* one futex wake, by the writer that cleared "sleeping" */
	ck_assert_uint_eq(peek32(&t.r.hdr->wstat[TB_WS_FUTEX_WAKES]), 1);
	twriter_free(&a);
	tring_free(&t);
}
END_TEST

static uint32_t bell_seq(const struct tring *t)
{
	return __atomic_load_n(&t->r.bell->seq, __ATOMIC_RELAXED);
}

/* Fills the held chunk completely with one fragment: it is handed over. */
static void fill_chunk(struct twriter *tw, const struct tring *t)
{
	struct tb_span sp;
	uint32_t n = tb_frag_max_size(t->cs);

	ck_assert_int_eq(tb_writer_open(&tw->w, n, 0, &sp), TB_OK);
	memset(sp.begin, 'f', n);
	ck_assert_int_eq(tb_writer_close(&tw->w, n, 0), TB_OK);
}

START_TEST(test_writer_room_is_what_the_next_fragment_could_take)
{
	/* 512-B chunk, 2-byte entries: 506 payload bytes minus entries */
	struct tring t;
	struct twriter a;

	tring_new(&t, 512, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	/* nothing held */
	ck_assert_int_eq(tb_writer_room(&a.w), TB_ENOROOM);
	ck_assert_int_eq(twrite(&a, "hello", 0, 0), TB_OK);
	/* 506 - 5 payload - 2 (entry 0) - 2 (entry 1 to come) */
	ck_assert_int_eq(tb_writer_room(&a.w), 497);
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);
	ck_assert_int_eq(tb_writer_room(&a.w), TB_ENOROOM);
	twriter_free(&a);
	tring_free(&t);
}
END_TEST

/*
 * A writer's hand-overs leave a sleeping reader asleep (it picks the
 * chunks up at its timeout) until @wake chunks wait; that one wakes it.
 */
static void check_handover_wakes_at(uint32_t num_chunks,
				    enum tb_full_policy policy, unsigned wake)
{
	struct tring t;
	struct twriter a;
	uint32_t seq;
	unsigned i;

	tring_new(&t, 512, num_chunks);
	twriter_new(&a, &t, WA, BID, policy);
	seq = tb_bell_prepare(t.r.bell);
	for (i = 1; i < wake; i++) {
		fill_chunk(&a, &t);
		ck_assert_uint_eq(bell_seq(&t), seq);
		ck_assert_uint_eq(t.r.bell->sleeping, 1);
	}
	fill_chunk(&a, &t);
	ck_assert_uint_ne(bell_seq(&t), seq);
	ck_assert_uint_eq(t.r.bell->sleeping, 0);
	ck_assert_uint_eq(peek32(&t.r.hdr->wstat[TB_WS_FUTEX_WAKES]), 1);
	twriter_free(&a);
	tring_free(&t);
}

START_TEST(test_handover_wakes_a_sleeping_reader_at_three_quarters)
{
	/*
	 * 3/4 of the ring waits, a quarter (a chunk at least) is the
	 * headroom the writers fill while the reader wakes up; a stalling
	 * writer too, or every batch would end in a stall.
	 */
	check_handover_wakes_at(64, TB_DROP, 48);
	check_handover_wakes_at(16, TB_DROP, 12);
	check_handover_wakes_at(4, TB_DROP, 3);
	check_handover_wakes_at(2, TB_DROP, 1);
	check_handover_wakes_at(64, TB_STALL, 48);
	check_handover_wakes_at(16, TB_STALL, 12);
	check_handover_wakes_at(2, TB_STALL, 1);
}
END_TEST

START_TEST(test_handover_to_a_reader_that_is_not_asleep_makes_no_call)
{
	/* without tb_bell_prepare(), a full ring's hand-over rings nothing */
	struct tring t;
	struct twriter a;
	unsigned i;

	tring_new(&t, 512, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	for (i = 0; i < 4; i++)
		fill_chunk(&a, &t);
	ck_assert_uint_eq(bell_seq(&t), 0);
	ck_assert_uint_eq(peek32(&t.r.hdr->wstat[TB_WS_FUTEX_WAKES]), 0);
	twriter_free(&a);
	tring_free(&t);
}
END_TEST

START_TEST(test_reuse_keeps_the_reader_asleep_release_wakes_it)
{
	/* a chunk kept for reuse is not final; releasing it is */
	struct tring t;
	struct twriter a;
	uint32_t seq;

	tring_new(&t, 512, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	seq = tb_bell_prepare(t.r.bell);
	ck_assert_int_eq(twrite(&a, "one", 0, 0), TB_OK);
	ck_assert_int_eq(twrite(&a, "two", 0, 0), TB_OK);
	ck_assert_uint_eq(bell_seq(&t), seq);
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);
	ck_assert_uint_ne(bell_seq(&t), seq);
	twriter_free(&a);
	tring_free(&t);
}
END_TEST

/*
 * The reader has decided to sleep (its idle check passed; the next access
 * is its count of the sleep): now four writers fill the ring with chunks
 * they keep for reuse, which rings nothing, and a fifth finds it full.
 */
static struct {
	struct tring *t;
	struct twriter *keep;	/* four writers that keep their chunks */
	struct twriter *drop;	/* one that finds the ring full */
	int acting, acted;
	uint32_t seq_kept;	/* the bell's sequence after the four */
	int ret;
} full_act;

static void fill_while_reader_sleeps(const uint32_t *p, int op, uint32_t e,
				     uint32_t v, int ok, int fail)
{
	unsigned i;

	(void)e, (void)v, (void)ok, (void)fail;
	if (full_act.acting || full_act.acted || op != TB_TEST_STORE ||
	    p != &full_act.t->r.hdr->rstat[TB_RS_FUTEX_WAITS])
		return;
	full_act.acting = 1;
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(twrite(&full_act.keep[i], "kept", 0, 0),
				 TB_OK);
	full_act.seq_kept = bell_seq(full_act.t);
	full_act.ret = twrite(full_act.drop, "dropped", 0, 0);
	full_act.acting = 0;
	full_act.acted = 1;
}

START_TEST(test_full_ring_of_kept_chunks_wakes_the_sleeping_reader)
{
	struct tring t;
	struct twriter keep[4], e;
	struct treader tr;
	uint32_t seq;
	unsigned i;

	tring_new(&t, 512, 4);
	for (i = 0; i < 4; i++)
		twriter_new(&keep[i], &t, (uint16_t)(20 + i), BID, TB_DROP);
	twriter_new(&e, &t, WB, BID, TB_DROP);
	treader_new(&tr, &t);
	ck_assert_int_eq(tdrain(&tr.rd, ~0u, TB_READ_LAZY, NULL, NULL), 0);
	seq = bell_seq(&t);
	memset(&full_act, 0, sizeof(full_act));
	full_act.t = &t;
	full_act.keep = keep;
	full_act.drop = &e;
	tb_test_atomic = fill_while_reader_sleeps;
	/* woken by the full ring, or asleep to the timeout (false) */
	ck_assert_msg(tb_reader_wait(&tr.rd, 3000),
		      "the reader slept to its timeout on a full ring");
	tb_test_atomic = NULL;
	ck_assert(full_act.acted);
	ck_assert_uint_eq(full_act.seq_kept, seq);	/* kept: no hand-over */
	ck_assert_int_eq(full_act.ret, TB_FULL);
	ck_assert_uint_ne(bell_seq(&t), seq);
	ck_assert_uint_eq(t.r.bell->sleeping, 0);
	ck_assert_uint_eq(peek32(&t.r.hdr->wstat[TB_WS_FUTEX_WAKES]), 1);
	/* awake, the lazy reader is under pressure: it takes every kept
	 * chunk, and the next packet fits */
	ck_assert_int_eq(tdrain(&tr.rd, ~0u, TB_READ_LAZY, NULL, NULL), 4);
	ck_assert_int_eq(twrite(&e, "fits", 0, 0), TB_OK);
	/* a full ring with the reader awake makes no call */
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(twrite(&keep[i], "k", 0, 0), TB_OK);
	ck_assert_int_eq(twrite(&keep[3], "full", 0, 0), TB_FULL);
	ck_assert_uint_eq(peek32(&t.r.hdr->wstat[TB_WS_FUTEX_WAKES]), 1);
	for (i = 0; i < 4; i++)
		twriter_free(&keep[i]);
	twriter_free(&e);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

/* Stall policy: a writer thread blocked on a full ring. */
struct stall_arg {
	struct twriter *tw;
	const char *s;
	int close_size;		/* >= 0: close an open fragment instead */
	volatile int done;
	int ret;
};

static void *stall_thread(void *p)
{
	struct stall_arg *a = (struct stall_arg *)p;

	if (a->close_size >= 0)
		a->ret = tb_writer_close(&a->tw->w, (uint32_t)a->close_size, 0);
	else
		a->ret = twrite(a->tw, a->s, 0, 0);
	__atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * Waits until a writer is parked on read_pos (one that never is hangs:
 * the test's timeout names this line).
 */
static void wait_for_waiter(struct tring *t, struct stall_arg *a)
{
	mark_point();
	while (!__atomic_load_n(&t->r.hdr->waiters, __ATOMIC_ACQUIRE)) {
		ck_assert_msg(!__atomic_load_n(&a->done, __ATOMIC_ACQUIRE),
			      "writer returned %d instead of stalling",
			      a->ret);
		sleep_ms(1);
	}
	sleep_ms(20);
	ck_assert(!__atomic_load_n(&a->done, __ATOMIC_ACQUIRE));
}

START_TEST(test_writer_stall_wakes_when_reader_drains)
{
	struct tring t;
	struct twriter a, b, c;
	struct treader tr;
	struct stall_arg arg;
	struct tb_ring_stats st;
	struct dchunk d;
	pthread_t th;

	tring_new(&t, 256, 2);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	twriter_new(&b, &t, WB, BID, TB_DROP);
	twriter_new(&c, &t, WC, BID, TB_STALL);
	treader_new(&tr, &t);
	c.w.stall_ms = TB_HANG_MS;
	ck_assert_int_eq(twrite(&a, "a", 0, 0), TB_OK);
	ck_assert_int_eq(twrite(&b, "b", 0, 0), TB_OK);
	memset(&arg, 0, sizeof(arg));
	arg.tw = &c;
	arg.s = "c";
	arg.close_size = -1;
	ck_assert_int_eq(pthread_create(&th, NULL, stall_thread, &arg), 0);
	wait_for_waiter(&t, &arg);
	ck_assert_uint_eq(__atomic_load_n(&t.r.hdr->write_pos,
					  __ATOMIC_RELAXED), 2);
	ck_assert_int_eq(tdrain(&tr.rd, 1, TB_READ_SCRAPE, NULL,
					 NULL), 1);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(arg.ret, TB_OK);
	tdecode(&t, 0, &d);
	ck_assert_uint_eq(d.word, spec_word(SPEC_CMP, 0, 0, 1, WC));
	ck_assert_frag(&d, 0, "c");
	ck_assert_uint_eq(peek32(&t.r.hdr->waiters), 0);
	/* the writer slept in the futex and the reader's drain woke it */
	tb_ring_stats(&t.r, &st);
	ck_assert_uint_ge(st.wstat[TB_WS_FUTEX_WAITS], 1);
	ck_assert_uint_eq(st.rstat[TB_RS_FUTEX_WAKES], 1);
	twriter_free(&a);
	twriter_free(&b);
	twriter_free(&c);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

/*
 * The spins before a sleep, made deterministic through the atomics seam:
 * the other side acts just before the spinning side's poll.
 */
struct spin_act {
	struct tring *t;
	struct twriter *tw;	/* acts: writes a fragment */
	struct treader *tr;	/* acts: drains one position */
	int mo;			/* the poll's order */
	const uint32_t *word;	/* the polled word */
	unsigned polls;		/* polls of it seen */
	unsigned bell_loads;	/* loads of the bell's sequence */
	unsigned polls_before_bell;
	int sleeping_seen;	/* "sleeping" when the act ran */
	int acting, acted;
};

static struct spin_act *spin_act;

static void act_on_poll(const uint32_t *p, int op, uint32_t e, uint32_t v,
			int ok, int fail)
{
	struct spin_act *a = spin_act;

	(void)e, (void)v, (void)fail;
	if (a->acting || op != TB_TEST_LOAD)
		return;
	if (p == &a->t->r.bell->seq && !a->bell_loads++)
		a->polls_before_bell = a->polls;
	if (p != a->word || ok != a->mo)
		return;
	a->polls++;
	if (a->acted)
		return;
	a->acting = 1;
	a->sleeping_seen = (int)a->t->r.bell->sleeping;
	if (a->tw)
		ck_assert_int_eq(twrite(a->tw, "spun", 0, 0), TB_OK);
	if (a->tr)
		ck_assert_int_eq(tdrain(&a->tr->rd, 1, TB_READ_SCRAPE, NULL,
					NULL), 1);
	a->acting = 0;
	a->acted = 1;
}

START_TEST(test_waiting_reader_spins_through_a_new_reservation)
{
	/* a reservation during the spin: no doorbell, no sleep */
	struct spin_act act;
	struct tring t;
	struct twriter a;
	struct treader tr;

	tring_new(&t, 512, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	ck_assert_int_eq(tdrain(&tr.rd, ~0u, TB_READ_LAZY, NULL, NULL), 0);
	memset(&act, 0, sizeof(act));
	act.t = &t;
	act.tw = &a;
	act.mo = TB_RLX;
	act.word = &t.r.hdr->write_pos;
	spin_act = &act;
	tb_test_atomic = act_on_poll;
	ck_assert(tb_reader_wait(&tr.rd, 60000));
	tb_test_atomic = NULL;
	ck_assert(act.acted);
	ck_assert_int_eq(act.sleeping_seen, 0);	/* not armed while spinning */
	ck_assert_uint_eq(act.bell_loads, 0);	/* never got to the bell */
	ck_assert_uint_eq(t.r.bell->sleeping, 0);
	ck_assert_uint_eq(peek32(&t.r.hdr->rstat[TB_RS_FUTEX_WAITS]), 0);
	ck_assert_int_eq(tdrain(&tr.rd, ~0u, TB_READ_SCRAPE, NULL, NULL), 1);
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_waiting_reader_does_not_spin_with_work_left)
{
	/* a drain that stopped at its limit: straight to the checks */
	struct spin_act act;
	struct tring t;
	struct twriter a;
	struct treader tr;

	tring_new(&t, 512, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	fill_chunk(&a, &t);
	fill_chunk(&a, &t);
	ck_assert_int_eq(tb_reader_drain(&tr.rd, 1, TB_READ_LAZY, NULL, NULL,
					 NULL), TB_LIMIT);
	memset(&act, 0, sizeof(act));
	act.t = &t;
	act.mo = TB_RLX;
	act.word = &t.r.hdr->write_pos;
	act.acted = 1;			/* count only */
	spin_act = &act;
	tb_test_atomic = act_on_poll;
	ck_assert(tb_reader_wait(&tr.rd, 60000));	/* not idle */
	tb_test_atomic = NULL;
	ck_assert_uint_eq(act.bell_loads, 1);
	ck_assert_uint_eq(act.polls_before_bell, 0);
	ck_assert_uint_eq(t.r.bell->sleeping, 0);
	ck_assert_uint_eq(peek32(&t.r.hdr->rstat[TB_RS_FUTEX_WAITS]), 0);
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

/*
 * The reader's spin before a sleep.  The bell rings (as a writer's
 * hand-over would) at the load of write_pos right after the spin, in
 * tb_reader_idle(), so that the sleep ends at once, woken; and the load
 * after the sleep (tb__reader_adapt()) may see a full ring, as the
 * writers would leave it had they filled it while the reader woke up.
 */
struct bell_act {
	struct tring *t;
	unsigned polls;		/* relaxed loads of write_pos */
	unsigned ring_at;	/* rings at this one; 0: never */
	unsigned fill_at;	/* write_pos says full from this one; 0: never */
	uint32_t pos;		/* the reader's position */
};

static struct bell_act *bell_act;

static void ring_after_spin(const uint32_t *p, int op, uint32_t e,
			    uint32_t v, int ok, int fail)
{
	struct bell_act *a = bell_act;

	(void)e, (void)v, (void)fail;
	if (op != TB_TEST_LOAD || ok != TB_RLX || p != &a->t->r.hdr->write_pos)
		return;
	if (++a->polls == a->ring_at)
		tb_bell_ring(a->t->r.bell);
	if (a->polls == a->fill_at)
		poke32(&a->t->r.hdr->write_pos, a->pos + a->t->r.num_chunks);
}

/*
 * One tb_reader_wait() of @tr on a ring with nothing to take: its spin
 * runs out, then it is rung (@ring) or sleeps to a 1 ms timeout, and
 * wakes into a full ring if @full.  Checks the polls: the spin's, then
 * tb_reader_idle()'s and, when a writer woke it, tb__reader_adapt()'s.
 */
static bool wait_rung(struct tring *t, struct treader *tr, bool ring,
		      bool full)
{
	struct bell_act act;
	uint32_t wp = peek32(&t->r.hdr->write_pos);
	uint32_t n = tr->rd.woke ? TB_SLEEP_POLLS : tr->rd.spin;
	bool ret;

	memset(&act, 0, sizeof(act));
	act.t = t;
	act.ring_at = ring ? n + 1 : 0;
	act.fill_at = full ? n + 2 : 0;
	act.pos = tr->rd.pos;
	bell_act = &act;
	tb_test_atomic = ring_after_spin;
	ret = tb_reader_wait(&tr->rd, ring ? 60000 : 1);
	tb_test_atomic = NULL;
	poke32(&t->r.hdr->write_pos, wp);
	ck_assert_uint_eq(act.polls, n + 1 + ret);
	return ret;
}

START_TEST(test_reader_spins_only_where_its_sleeps_let_the_ring_fill)
{
	/*
	 * A reader that catches up sleeps until the writers ring a backlog,
	 * rather than spin for every next chunk; it spins only where such a
	 * sleep let the ring fill (the writers stalled or dropped while it
	 * woke up), and then no more than one sleep's cost spread over the
	 * batch a sleep takes: TB_SLEEP_POLLS / 3 on 4 chunks.
	 */
	struct tring t;
	struct treader tr;
	uint32_t cap = TB_SLEEP_POLLS / 3 ? TB_SLEEP_POLLS / 3 : 1;

	tring_new(&t, 512, 4);
	treader_new(&tr, &t);
	ck_assert_uint_eq(tb__reader_spin_cap(&t.r), cap);
	ck_assert_uint_eq(tr.rd.spin, cap);
	ck_assert_int_eq(tdrain(&tr.rd, ~0u, TB_READ_LAZY, NULL, NULL), 0);
	/* woken with room left: the ring carries a sleep, spin less */
	ck_assert(wait_rung(&t, &tr, true, false));
	ck_assert_uint_eq(peek32(&t.r.hdr->rstat[TB_RS_FUTEX_WAITS]), 1);
	ck_assert_uint_eq(tr.rd.spin, cap / 2);
	/* timed out: an idle ring, less again, down to no spin at all */
	ck_assert(!wait_rung(&t, &tr, false, false));
	ck_assert_uint_eq(tr.rd.spin, cap / 4);
	tr.rd.spin = 1;
	ck_assert(!wait_rung(&t, &tr, false, false));
	ck_assert_uint_eq(tr.rd.spin, 0);
	ck_assert(!wait_rung(&t, &tr, false, false));
	ck_assert_uint_eq(tr.rd.spin, 0);
	/* woken into a full ring: spin, doubling, up to the cap */
	ck_assert(wait_rung(&t, &tr, true, true));
	ck_assert_uint_eq(tr.rd.spin, 1);
	ck_assert(wait_rung(&t, &tr, true, true));
	ck_assert_uint_eq(tr.rd.spin, 2);
	tr.rd.spin = cap - 1;
	ck_assert(wait_rung(&t, &tr, true, true));
	ck_assert_uint_eq(tr.rd.spin, cap);
	ck_assert(wait_rung(&t, &tr, true, true));
	ck_assert_uint_eq(tr.rd.spin, cap);
	/* a timeout is no writer waiting for it, however full the ring */
	ck_assert(!wait_rung(&t, &tr, false, true));
	ck_assert_uint_eq(tr.rd.spin, cap / 2);
	ck_assert_uint_eq(peek32(&t.r.hdr->rstat[TB_RS_FUTEX_WAITS]), 9);
	/* a 64-chunk ring's cap: 2 polls; a 2-chunk ring's: TB_SLEEP_POLLS */
	ck_assert_uint_eq(TB_SLEEP_POLLS / 48 ? TB_SLEEP_POLLS / 48 : 1,
			  tb__reader_spin_cap(&(struct tb_ring){ .num_chunks =
								 64 }));
	ck_assert_uint_eq(TB_SLEEP_POLLS,
			  tb__reader_spin_cap(&(struct tb_ring){ .num_chunks =
								 2 }));
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_reader_waits_a_sleep_for_the_writers_it_woke)
{
	/*
	 * A drain that woke sleeping writers is followed by a spin of one
	 * sleep's cost (TB_SLEEP_POLLS), whatever the reader's own budget:
	 * they run within a wake-up, and the ring waits for this reader.
	 * Once they did not come, it does not wait for them again.
	 */
	struct tring t;
	struct twriter a;
	struct treader tr;

	tring_new(&t, 512, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	tr.rd.spin = 0;
	fill_chunk(&a, &t);
	poke32(&t.r.hdr->wake_req, 1);		/* a writer went to sleep */
	ck_assert_int_eq(tdrain(&tr.rd, ~0u, TB_READ_LAZY, NULL, NULL), 1);
	ck_assert_uint_eq(peek32(&t.r.hdr->rstat[TB_RS_FUTEX_WAKES]), 1);
	ck_assert_uint_eq(tr.rd.woke, 1);
	ck_assert(!wait_rung(&t, &tr, false, false));	/* polls checked */
	ck_assert_uint_eq(tr.rd.woke, 0);
	ck_assert(!wait_rung(&t, &tr, false, false));	/* its own: none */
	/* a drain that moved read_pos and woke nobody forgets it too */
	poke32(&t.r.hdr->wake_req, 1);
	fill_chunk(&a, &t);
	ck_assert_int_eq(tdrain(&tr.rd, ~0u, TB_READ_LAZY, NULL, NULL), 1);
	ck_assert_uint_eq(tr.rd.woke, 1);
	fill_chunk(&a, &t);
	ck_assert_int_eq(tdrain(&tr.rd, ~0u, TB_READ_LAZY, NULL, NULL), 1);
	ck_assert_uint_eq(tr.rd.woke, 0);
	ck_assert(!wait_rung(&t, &tr, false, false));
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_reader_stays_idle_while_a_writer_adds_to_its_held_chunk)
{
	/*
	 * A lazy drain stops before a chunk its writer still holds; the
	 * packets the writer adds to it give the drain nothing to take, so
	 * the reader stays idle (it may sleep).  Publishing the chunk does.
	 */
	struct tring t;
	struct twriter a;
	struct treader tr;
	struct tb_span sp;

	tring_new(&t, 512, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	ck_assert_int_eq(tb_writer_open(&a.w, 16, 0, &sp), TB_OK);
	ck_assert_int_eq(tdrain(&tr.rd, ~0u, TB_READ_LAZY, NULL, NULL), 0);
	ck_assert(tb_reader_idle(&tr.rd));
	ck_assert_int_eq(tb_writer_close(&a.w, 8, 0), TB_OK);
	ck_assert(!tb_reader_idle(&tr.rd));	/* Complete: it could take it */
	ck_assert_int_eq(tb_writer_open(&a.w, 16, 0, &sp), TB_OK);
	ck_assert(tb_reader_idle(&tr.rd));	/* held again, one packet on */
	ck_assert(tb_reader_quiet(&tr.rd, twrite_pos(&t)));
	ck_assert_int_eq(tb_writer_close(&a.w, 8, 0), TB_OK);
	ck_assert(!tb_reader_idle(&tr.rd));
	ck_assert(!tb_reader_quiet(&tr.rd, twrite_pos(&t)));
	ck_assert_int_eq(tdrain(&tr.rd, ~0u, TB_READ_LAZY, NULL, NULL), 1);
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_stalled_writer_spins_through_a_drain)
{
	/* the reader frees a chunk during the spin: no waiter, no sleep */
	struct spin_act act;
	struct tring t;
	struct twriter a, b, c;
	struct treader tr;
	struct tb_ring_stats st;

	tring_new(&t, 256, 2);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	twriter_new(&b, &t, WB, BID, TB_DROP);
	twriter_new(&c, &t, WC, BID, TB_STALL);
	treader_new(&tr, &t);
	c.w.stall_ms = TB_HANG_MS;
	ck_assert_int_eq(twrite(&a, "a", 0, 0), TB_OK);
	ck_assert_int_eq(twrite(&b, "b", 0, 0), TB_OK);
	memset(&act, 0, sizeof(act));
	act.t = &t;
	act.tr = &tr;
	act.mo = TB_RLX;		/* the spin's; reserve's is acquire */
	act.word = &t.r.hdr->read_pos;
	spin_act = &act;
	tb_test_atomic = act_on_poll;
	ck_assert_int_eq(twrite(&c, "c", 0, 0), TB_OK);
	tb_test_atomic = NULL;
	ck_assert(act.acted);
	tb_ring_stats(&t.r, &st);
	ck_assert_uint_eq(st.wstat[TB_WS_STALLS], 1);
	ck_assert_uint_eq(st.wstat[TB_WS_FUTEX_WAITS], 0);
	ck_assert_uint_eq(st.rstat[TB_RS_FUTEX_WAKES], 0);
	ck_assert_uint_eq(peek32(&t.r.hdr->waiters), 0);
	ck_assert_uint_eq(peek32(&t.r.hdr->wake_req), 0);
	ck_assert_uint_eq(twrite_pos(&t), 3);
	twriter_free(&a);
	twriter_free(&b);
	twriter_free(&c);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

/*
 * Another writer takes the room a stalled writer saw: at the stalled
 * writer's first poll of read_pos, read_pos and write_pos both move on
 * one, so the poll sees progress and the reserve after it a full ring.
 */
struct steal_act {
	struct tring *t;
	int stolen;
};

static struct steal_act *steal_act;

static void steal_on_poll(const uint32_t *p, int op, uint32_t e, uint32_t v,
			  int ok, int fail)
{
	struct steal_act *a = steal_act;
	struct tb_ring_hdr *h = a->t->r.hdr;

	(void)e, (void)v, (void)fail;
	if (a->stolen || op != TB_TEST_LOAD || ok != TB_RLX ||
	    p != &h->read_pos)
		return;
	a->stolen = 1;
	poke32(&h->read_pos, peek32(&h->read_pos) + 1);
	poke32(&h->write_pos, peek32(&h->write_pos) + 1);
}

START_TEST(test_writer_that_stalls_again_yields_before_it_sleeps)
{
	/*
	 * A writer that stalls a second time in one acquisition - the room
	 * it waited for went to other writers first - has seen more
	 * threads than the CPUs serve: it yields the CPU once before it
	 * sleeps.  Its first stall does not.
	 */
	struct steal_act act;
	struct tring t;
	struct twriter a, b, c;
	struct tb_ring_stats st;

	tring_new(&t, 256, 2);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	twriter_new(&b, &t, WB, BID, TB_DROP);
	twriter_new(&c, &t, WC, BID, TB_STALL);
	c.w.stall_ms = 1;
	ck_assert_int_eq(twrite(&a, "a", 0, 0), TB_OK);
	ck_assert_int_eq(twrite(&b, "b", 0, 0), TB_OK);
	memset(&act, 0, sizeof(act));
	act.t = &t;
	steal_act = &act;
	tb_test_atomic = steal_on_poll;
	ck_assert_int_eq(twrite(&c, "c", 0, 0), TB_FULL);
	tb_test_atomic = NULL;
	ck_assert(act.stolen);
	tb_ring_stats(&t.r, &st);
	ck_assert_uint_eq(st.wstat[TB_WS_STALLS], 2);
	ck_assert_uint_eq(st.wstat[TB_WS_YIELDS], 1);
	ck_assert_uint_eq(st.wstat[TB_WS_FUTEX_WAITS], 1);
	poke32(&t.r.hdr->read_pos, 0);
	poke32(&t.r.hdr->write_pos, 2);
	twriter_free(&a);
	twriter_free(&b);
	twriter_free(&c);
	tring_free(&t);
}
END_TEST

START_TEST(test_reader_wakes_sleeping_writers_once_per_request)
{
	/*
	 * A writer about to sleep sets the wake request (and raises the
	 * waiter hint).  The reader's next call that moves read_pos clears
	 * it, bumps wake_seq and wakes; later calls make no system call
	 * until a writer asks again, even though the hint is still up (the
	 * woken writer has not run yet, or died).
	 */
	struct tring t;
	struct twriter a;
	struct treader tr;
	unsigned i;

	tring_new(&t, 512, 8);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	for (i = 0; i < 6; i++)
		fill_chunk(&a, &t);
	poke32(&t.r.hdr->waiters, 1);
	poke32(&t.r.hdr->wake_req, 1);
	ck_assert_int_eq(tdrain(&tr.rd, 1, TB_READ_LAZY, NULL, NULL), 1);
	ck_assert_uint_eq(peek32(&t.r.hdr->wake_req), 0);
	ck_assert_uint_eq(peek32(&t.r.hdr->wake_seq), 1);
	ck_assert_uint_eq(peek32(&t.r.hdr->rstat[TB_RS_FUTEX_WAKES]), 1);
	ck_assert_int_eq(tdrain(&tr.rd, 1, TB_READ_LAZY, NULL, NULL), 1);
	ck_assert_int_eq(tdrain(&tr.rd, 1, TB_READ_LAZY, NULL, NULL), 1);
	ck_assert_uint_eq(peek32(&t.r.hdr->rstat[TB_RS_FUTEX_WAKES]), 1);
	ck_assert_uint_eq(peek32(&t.r.hdr->wake_seq), 1);
	poke32(&t.r.hdr->wake_req, 1);		/* a writer asks again */
	ck_assert_int_eq(tdrain(&tr.rd, 1, TB_READ_LAZY, NULL, NULL), 1);
	ck_assert_uint_eq(peek32(&t.r.hdr->rstat[TB_RS_FUTEX_WAKES]), 2);
	ck_assert_uint_eq(peek32(&t.r.hdr->wake_seq), 2);
	/* a call that does not move read_pos wakes nobody */
	poke32(&t.r.hdr->wake_req, 1);
	ck_assert_int_eq(tb_reader_drain(&tr.rd, 0, TB_READ_LAZY, NULL, NULL,
					 NULL), TB_LIMIT);
	ck_assert_uint_eq(peek32(&t.r.hdr->rstat[TB_RS_FUTEX_WAKES]), 2);
	ck_assert_uint_eq(peek32(&t.r.hdr->wake_req), 1);
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

/*
 * A writer whose request the reader served before the writer went to
 * sleep: it sampled read_pos after the reader's store, so the wake was
 * not for it, but its ticket predates the bump and its sleep returns at
 * once.  (With read_pos as the futex and a plain flag, that writer slept
 * its whole stall_ms and gave TB_FULL; test_stress found it.)  Its next
 * stall finds the room the reader makes meanwhile.  Were the first sleep
 * to last, the test would run into its timeout: stall_ms is a minute.
 */
struct early {
	struct tring *t;
	struct treader *tr;
	unsigned stores;
};

static struct early *early;

static void serve_before_sleep(const uint32_t *p, int op, uint32_t e,
			       uint32_t v, int ok, int fail)
{
	struct tb_ring_hdr *h = early->t->r.hdr;

	(void)e, (void)ok, (void)fail;
	/* the writer's store of the wake request, just before it happens */
	if (op != TB_TEST_STORE || p != &h->wake_req || v != 1)
		return;
	if (++early->stores == 1) {
		/* a request served now, with no room made: not this one's */
		poke32(&h->wake_req, 1);
		tb_ring_publish_read_pos(&early->t->r, peek32(&h->read_pos));
		ck_assert_uint_eq(peek32(&h->wake_req), 0);
	} else if (early->stores == 2) {
		/* the reader makes room before the second sleep */
		ck_assert_int_eq(tdrain(&early->tr->rd, 1, TB_READ_SCRAPE,
					NULL, NULL), 1);
	}
}

START_TEST(test_writer_whose_request_was_served_early_does_not_sleep)
{
	struct tring t;
	struct twriter a, b, c;
	struct treader tr;
	struct tb_ring_stats st;
	struct early ctx;

	tring_new(&t, 256, 2);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	twriter_new(&b, &t, WB, BID, TB_DROP);
	twriter_new(&c, &t, WC, BID, TB_STALL);
	treader_new(&tr, &t);
	c.w.stall_ms = 60000;
	c.w.spin = 0;		/* straight to the sleep, twice */
	ck_assert_int_eq(twrite(&a, "a", 0, 0), TB_OK);
	ck_assert_int_eq(twrite(&b, "b", 0, 0), TB_OK);
	memset(&ctx, 0, sizeof(ctx));
	ctx.t = &t;
	ctx.tr = &tr;
	early = &ctx;
	tb_test_atomic = serve_before_sleep;
	ck_assert_int_eq(twrite(&c, "c", 0, 0), TB_OK);
	tb_test_atomic = NULL;
	ck_assert_uint_eq(ctx.stores, 2);
	tb_ring_stats(&t.r, &st);
	ck_assert_uint_eq(st.wstat[TB_WS_STALLS], 2);
	ck_assert_uint_eq(st.wstat[TB_WS_FUTEX_WAITS], 1);	/* at once */
	twriter_free(&a);
	twriter_free(&b);
	twriter_free(&c);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_spin_budget_doubles_on_a_hit_and_halves_on_a_miss)
{
	uint32_t n = TB_SPIN_MAX;

	tb__spin_adapt(&n, true);
	ck_assert_uint_eq(n, TB_SPIN_MAX);
	tb__spin_adapt(&n, false);
	ck_assert_uint_eq(n, TB_SPIN_MAX / 2);
	while (n > TB_SPIN_MIN)
		tb__spin_adapt(&n, false);
	ck_assert_uint_eq(n, TB_SPIN_MIN);
	tb__spin_adapt(&n, false);
	ck_assert_uint_eq(n, TB_SPIN_MIN);
	tb__spin_adapt(&n, true);
	ck_assert_uint_eq(n, 2 * TB_SPIN_MIN);
}
END_TEST

/* A writer that stalls on a full ring rings the sleeping reader's bell. */
START_TEST(test_stalled_writer_wakes_the_sleeping_reader)
{
	struct tring t;
	struct twriter a, b, c;
	struct treader tr;
	struct stall_arg arg;
	pthread_t th;
	uint32_t seq;

	tring_new(&t, 256, 2);
	twriter_new(&a, &t, WA, BID, TB_STALL);
	twriter_new(&b, &t, WB, BID, TB_STALL);
	twriter_new(&c, &t, WC, BID, TB_STALL);
	treader_new(&tr, &t);
	c.w.stall_ms = TB_HANG_MS;
	ck_assert_int_eq(twrite(&a, "a", 0, 0), TB_OK);
	ck_assert_int_eq(twrite(&b, "b", 0, 0), TB_OK);
	seq = tb_bell_prepare(t.r.bell);	/* asleep on a full ring */
	memset(&arg, 0, sizeof(arg));
	arg.tw = &c;
	arg.s = "c";
	arg.close_size = -1;
	ck_assert_int_eq(pthread_create(&th, NULL, stall_thread, &arg), 0);
	mark_point();		/* a stall that never rings hangs here */
	while (bell_seq(&t) == seq)
		sleep_ms(1);
	ck_assert_uint_eq(__atomic_load_n(&t.r.bell->sleeping,
					  __ATOMIC_RELAXED), 0);
	/* the writer counts its wake after the bump we saw: wait for it */
	mark_point();		/* a wake never counted hangs here */
	while (__atomic_load_n(&t.r.hdr->wstat[TB_WS_FUTEX_WAKES],
			       __ATOMIC_RELAXED) < 1)
		sleep_ms(1);
	ck_assert_int_eq(tdrain(&tr.rd, 1, TB_READ_SCRAPE, NULL, NULL), 1);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(arg.ret, TB_OK);
	twriter_free(&a);
	twriter_free(&b);
	twriter_free(&c);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_writer_stall_times_out_to_full_when_nobody_drains)
{
	struct tring t;
	struct twriter a, b, c;
	struct tb_span sp;
	struct tb_ring_stats st;
	uint64_t t0, ms;

	tring_new(&t, 256, 2);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	twriter_new(&b, &t, WB, BID, TB_DROP);
	twriter_new(&c, &t, WC, BID, TB_STALL);
	c.w.stall_ms = 100;
	ck_assert_int_eq(twrite(&a, "a", 0, 0), TB_OK);
	ck_assert_int_eq(twrite(&b, "b", 0, 0), TB_OK);
	t0 = now_ms();
	ck_assert_int_eq(tb_writer_open(&c.w, 1, 0, &sp), TB_FULL);
	ms = now_ms() - t0;
	/* at least its stall_ms: a lower bound no load can trip; a stall
	 * that never ends is caught by the test case's timeout */
	ck_assert_uint_ge(ms, 90);
	ck_assert_uint_eq(twrite_pos(&t), 2);
	ck_assert_uint_eq(c.w.holes, 0);
	tb_ring_stats(&t.r, &st);
	ck_assert_uint_eq(st.wstat[TB_WS_FULL], 1);
	ck_assert_uint_ge(st.wstat[TB_WS_STALLS], 1);
	ck_assert_uint_eq(peek32(&t.r.hdr->waiters), 0);
	twriter_free(&a);
	twriter_free(&b);
	twriter_free(&c);
	tring_free(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * (h) Relocation after a scrape (sections 6.5, 7, 7.1)
 */
START_TEST(test_scrape_with_published_prefix_moves_suffix_to_replacement)
{
	struct tring t;
	struct twriter a;
	struct treader tr;
	struct tb_chunk_view v;
	struct tb_span sp;
	struct dchunk d;

	tring_new(&t, 512, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	/* the prefix carries P and L, which the suffix must not repeat */
	tb_writer_record_loss(&a.w);
	ck_assert_int_eq(twrite(&a, "published-one", TB_OPEN_CONT_PREV, 0),
			 TB_OK);
	ck_assert_int_eq(twrite(&a, "published-two", 0, 0), TB_OK);
	topen_with(&a, "suffix", 6, 0, &sp);
	ck_assert_uint_eq(tword(&t, 0),
			  spec_word(SPEC_ACQ, 0, SPEC_P | SPEC_L, 2, WA));
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_EMITTED);
	ck_assert_uint_eq(v.nfrags, 2);
	ck_assert_uint_eq(v.flags, TB_F_CONT_PREV | TB_F_DATA_LOSS);
	ck_assert_vfrag(&v, 0, "published-one");
	ck_assert_vfrag(&v, 1, "published-two");
	ck_assert_int_eq(tb_writer_close(&a.w, 6, 0), TB_OK);
	ck_assert_uint_eq(a.w.relocations, 1);
	ck_assert_uint_eq(a.w.dropped_frags, 0);
	ck_assert_uint_eq(tword(&t, 0), SPEC_ACKED);
	tdecode(&t, 1, &d);
	ck_assert_uint_eq(d.word, spec_word(SPEC_CMP, 0, 0, 1, WA));
	ck_assert_uint_eq(d.bid, BID);
	ck_assert_frag(&d, 0, "suffix");
	/* the reader takes the suffix exactly once */
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_EMITTED);
	ck_assert_uint_eq(v.flags, 0);
	ck_assert_vfrag(&v, 0, "suffix");
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_NODATA);
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_published_prefix_never_moves_during_relocation)
{
	/* section 6.3: published payload and size entries never move */
	struct tring t;
	struct twriter a;
	struct treader tr;
	struct tb_chunk_view v;
	struct tb_span sp;
	uint8_t before[512];

	tring_new(&t, 512, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	ck_assert_int_eq(twrite(&a, "alpha", 0, 0), TB_OK);
	ck_assert_int_eq(twrite(&a, "beta", 0, 0), TB_OK);
	topen_with(&a, "gamma", 64, 0, &sp);
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_EMITTED);
	memcpy(before, tchunk(&t, 0), 512);
	/* the writer keeps encoding, relocates, closes */
	memcpy(sp.begin + 5, "-more", 5);
	ck_assert_int_eq(tb_writer_sync(&a.w, 10, &sp), TB_OK);
	ck_assert_int_eq(tb_writer_close(&a.w, 10, 0), TB_OK);
	/* state word aside, the published ranges are byte-identical */
	ck_assert_mem_eq(tchunk(&t, 0) + 4, before + 4, 2 + 5 + 4);
	ck_assert_mem_eq(tchunk(&t, 0) + 512 - 4, before + 512 - 4, 4);
	ck_assert_uint_eq(tword(&t, 0), SPEC_ACKED);
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_scrape_with_no_published_prefix_carries_flags)
{
	struct tring t;
	struct twriter a;
	struct treader tr;
	struct tb_chunk_view v;
	struct tb_span sp;
	struct dchunk d;

	tring_new(&t, 512, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	tb_writer_record_loss(&a.w);
	topen_with(&a, "tail", 4, TB_OPEN_CONT_PREV, &sp);
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_SKIPPED);
	ck_assert_uint_eq(tword(&t, 0),
			  spec_word(SPEC_RR, 0, SPEC_P | SPEC_L, 0, WA));
	ck_assert_int_eq(tb_writer_close(&a.w, 4, 0), TB_OK);
	ck_assert_uint_eq(tword(&t, 0), SPEC_ACKED);
	tdecode(&t, 1, &d);
	ck_assert_uint_eq(d.word, spec_word(SPEC_CMP, 0, SPEC_P | SPEC_L, 1,
					    WA));
	ck_assert_frag(&d, 0, "tail");
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_scrape_with_nothing_unpublished_acknowledges_on_release)
{
	struct tring t;
	struct twriter a;
	struct treader tr;
	struct tb_chunk_view v;
	struct tb_span sp;

	tring_new(&t, 512, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	ck_assert_int_eq(twrite(&a, "only", 0, 0), TB_OK);
	ck_assert_int_eq(tb_writer_open(&a.w, 1, 0, &sp), TB_OK);
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_EMITTED);
	ck_assert_uint_eq(tword(&t, 0), spec_word(SPEC_RR, 0, 0, 1, WA));
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);
	ck_assert_uint_eq(tword(&t, 0), SPEC_ACKED);
	ck_assert_uint_eq(tword(&t, 1), 0);	/* no replacement taken */
	ck_assert_uint_eq(twrite_pos(&t), 1);
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_open_fragment_relocated_by_sync_keeps_writing)
{
	struct tring t;
	struct twriter a;
	struct treader tr;
	struct tb_chunk_view v;
	struct tb_span sp, sp2;
	struct dchunk d;

	tring_new(&t, 512, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	ck_assert_int_eq(twrite(&a, "first", 0, 0), TB_OK);
	topen_with(&a, "0123456789", 64, 0, &sp);
	/* no scrape yet: sync moves nothing */
	ck_assert_int_eq(tb_writer_sync(&a.w, 10, &sp2), TB_OK);
	ck_assert_ptr_eq(sp2.begin, sp.begin);
	ck_assert_uint_eq(tword(&t, 0), spec_word(SPEC_ACQ, 0, 0, 1, WA));

	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_EMITTED);
	ck_assert_uint_eq(v.nfrags, 1);
	ck_assert_vfrag(&v, 0, "first");
	ck_assert_uint_eq(tword(&t, 0), spec_word(SPEC_RR, 0, 0, 1, WA));

	/* the open fragment moves now, not at close */
	ck_assert_int_eq(tb_writer_sync(&a.w, 10, &sp2), TB_OK);
	ck_assert_uint_eq(tword(&t, 0), SPEC_ACKED);
	ck_assert_ptr_eq(sp2.begin, tchunk(&t, 1) + 6);
	ck_assert_mem_eq(sp2.begin, "0123456789", 10);
	ck_assert_uint_ge((size_t)(sp2.end - sp2.begin), 64);
	ck_assert_uint_eq(tword(&t, 1), spec_word(SPEC_ACQ, 0, 0, 0, WA));
	ck_assert_uint_eq(a.w.relocations, 1);

	/* the writer keeps writing at the rebased pointer and closes */
	memcpy(sp2.begin + 10, "ABCDEF", 6);
	ck_assert_int_eq(tb_writer_close(&a.w, 16, 0), TB_OK);
	tdecode(&t, 1, &d);
	ck_assert_uint_eq(d.word, spec_word(SPEC_CMP, 0, 0, 1, WA));
	ck_assert_uint_eq(d.bid, BID);
	ck_assert_frag(&d, 0, "0123456789ABCDEF");
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_EMITTED);
	ck_assert_uint_eq(v.nfrags, 1);
	ck_assert_vfrag(&v, 0, "0123456789ABCDEF");
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_open_fragment_relocated_by_sync_without_prefix_carries_flags)
{
	struct tring t;
	struct twriter a;
	struct treader tr;
	struct tb_chunk_view v;
	struct tb_span sp;
	struct dchunk d;

	tring_new(&t, 256, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	tb_writer_record_loss(&a.w);
	topen_with(&a, "abc", 16, TB_OPEN_CONT_PREV, &sp);
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_SKIPPED);
	ck_assert_int_eq(tb_writer_sync(&a.w, 3, &sp), TB_OK);
	ck_assert_ptr_eq(sp.begin, tchunk(&t, 1) + 6);
	/* still Acquired while the fragment is open, flags carried */
	ck_assert_uint_eq(tword(&t, 1),
			  spec_word(SPEC_ACQ, 0, SPEC_P | SPEC_L, 0, WA));
	memcpy(sp.begin + 3, "def", 3);
	ck_assert_int_eq(tb_writer_close(&a.w, 6, TB_CLOSE_CONT_NEXT), TB_OK);
	tdecode(&t, 1, &d);
	ck_assert_uint_eq(d.word, spec_word(SPEC_CMP, 0,
					    SPEC_P | SPEC_N | SPEC_L, 1, WA));
	ck_assert_frag(&d, 0, "abcdef");
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_relocation_without_capacity_drops_and_acknowledges)
{
	struct tring t;
	struct twriter a, b, c;
	struct treader tr;
	struct tb_chunk_view v;
	struct collect col;
	struct tb_span sp, spb;
	struct dchunk d;

	tring_new(&t, 512, 2);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	twriter_new(&b, &t, WB, BID, TB_DROP);
	twriter_new(&c, &t, WC, BID, TB_DROP);
	treader_new(&tr, &t);
	ck_assert_int_eq(twrite(&a, "published", 0, 0), TB_OK);	/* p0 */
	ck_assert_int_eq(tb_writer_open(&b.w, 1, 0, &spb), TB_OK);	/* p1 */
	topen_with(&a, "lost", 4, 0, &sp);
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_EMITTED);
	ck_assert_vfrag(&v, 0, "published");
	ck_assert_uint_eq(tread_pos(&t), 1);
	/* c takes the room: p2 maps to the scraped chunk, p3 is full */
	ck_assert_int_eq(twrite(&c, "c", 0, 0), TB_NO_CHUNK);
	ck_assert_uint_eq(twrite_pos(&t), 3);
	/* the ring is full: a's suffix finds no replacement */
	ck_assert_int_eq(tb_writer_close(&a.w, 4, 0), TB_DROPPED);
	ck_assert_uint_eq(a.w.dropped_frags, 1);
	ck_assert_uint_eq(tword(&t, 0), SPEC_ACKED);
	ck_assert_uint_eq(twrite_pos(&t), 3);

	/* b finishes, the reader catches up */
	ck_assert_int_eq(tb_writer_close(&b.w, 0, 0), TB_OK);
	ck_assert_int_eq(tdrain(&tr.rd, 8, TB_READ_SCRAPE, NULL,
					 NULL), 2);
	/* a's next chunk carries data loss */
	ck_assert_int_eq(twrite(&a, "next", 0, 0), TB_OK);
	memset(&col, 0, sizeof(col));
	ck_assert_int_ge(tdrain(&tr.rd, 8, TB_READ_SCRAPE,
					 collect_fn, &col), 1);
	ck_assert_uint_eq(col.count, 1);
	ck_assert_uint_eq(col.c[0].writer, WA);
	ck_assert_uint_eq(col.c[0].flags, TB_F_DATA_LOSS);
	ck_assert_str_eq(col.c[0].frag[0], "next");
	/* and the one after that does not */
	ck_assert_int_eq(twrite(&a, "later", 0, 0), TB_OK);
	tdecode(&t, tb_pos_index(twrite_pos(&t) - 1, 2), &d);
	ck_assert_frag(&d, d.n - 1, "later");
	ck_assert_uint_eq(d.flags3, 0);
	twriter_free(&a);
	twriter_free(&b);
	twriter_free(&c);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_sync_without_capacity_drops_open_fragment)
{
	struct tring t;
	struct twriter a, b, c;
	struct treader tr;
	struct tb_chunk_view v;
	struct tb_span sp, spb;

	tring_new(&t, 512, 2);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	twriter_new(&b, &t, WB, BID, TB_DROP);
	twriter_new(&c, &t, WC, BID, TB_DROP);
	treader_new(&tr, &t);
	ck_assert_int_eq(twrite(&a, "published", 0, 0), TB_OK);
	ck_assert_int_eq(tb_writer_open(&b.w, 1, 0, &spb), TB_OK);
	topen_with(&a, "lost", 16, 0, &sp);
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_EMITTED);
	/* c takes the room the scrape made: the ring is full again */
	ck_assert_int_eq(twrite(&c, "c", 0, 0), TB_NO_CHUNK);
	ck_assert_int_eq(tb_writer_sync(&a.w, 4, &sp), TB_DROPPED);
	ck_assert_uint_eq(tword(&t, 0), SPEC_ACKED);
	ck_assert_uint_eq(a.w.dropped_frags, 1);
	twriter_free(&a);
	twriter_free(&b);
	twriter_free(&c);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_relocating_writer_under_stall_waits_for_capacity)
{
	struct tring t;
	struct twriter a, b;
	struct treader tr;
	struct collect col;
	struct stall_arg arg;
	struct tb_span sp, spb;
	pthread_t th;
	uint32_t seen;
	unsigned i;
	int found = 0;

	tring_new(&t, 512, 2);
	twriter_new(&a, &t, WA, BID, TB_STALL);
	twriter_new(&b, &t, WB, BID, TB_DROP);
	treader_new(&tr, &t);
	a.w.stall_ms = TB_HANG_MS;
	ck_assert_int_eq(twrite(&a, "published", 0, 0), TB_OK);	/* p0 */
	ck_assert_int_eq(tb_writer_open(&b.w, 1, 0, &spb), TB_OK);	/* p1 */
	topen_with(&a, "moved", 5, 0, &sp);
	/* a reader between its scrape of p0 and its store of read_pos */
	seen = tb_ring_load_state(&t.r, 0);
	ck_assert(tb_ring_mark_rewrite(&t.r, 0, &seen));

	memset(&arg, 0, sizeof(arg));
	arg.tw = &a;
	arg.close_size = 5;
	ck_assert_int_eq(pthread_create(&th, NULL, stall_thread, &arg), 0);
	wait_for_waiter(&t, &arg);
	/* it acknowledged before waiting for a replacement */
	ck_assert_uint_eq(tword_atomic(&t, 0), SPEC_ACKED);

	ck_assert_int_eq(tb_writer_close(&b.w, 0, 0), TB_OK);
	ck_assert_int_eq(tdrain(&tr.rd, 1, TB_READ_SCRAPE, NULL,
					 NULL), 1);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(arg.ret, TB_OK);
	memset(&col, 0, sizeof(col));
	ck_assert_int_ge(tdrain(&tr.rd, 8, TB_READ_SCRAPE,
					 collect_fn, &col), 1);
	for (i = 0; i < col.count; i++)
		if (col.c[i].writer == WA &&
		    !strcmp(col.c[i].frag[0], "moved")) {
			ck_assert_uint_eq(col.c[i].flags, 0);
			found++;
		}
	ck_assert_int_eq(found, 1);
	twriter_free(&a);
	twriter_free(&b);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_continues_on_next_set_on_relocated_tail_not_prefix)
{
	struct tring t;
	struct twriter a;
	struct treader tr;
	struct tb_chunk_view v;
	struct tb_span sp;
	struct dchunk d;

	tring_new(&t, 512, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	ck_assert_int_eq(twrite(&a, "whole", 0, 0), TB_OK);
	topen_with(&a, "head", 4, 0, &sp);
	/* an Acquired word never says "continues on next" */
	ck_assert_uint_eq(tword(&t, 0) >> 24 & 7, 0);
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_EMITTED);
	ck_assert_uint_eq(v.flags & TB_F_CONT_NEXT, 0);
	ck_assert_int_eq(tb_writer_close(&a.w, 4, TB_CLOSE_CONT_NEXT), TB_OK);
	ck_assert_uint_eq(tword(&t, 0), SPEC_ACKED);
	tdecode(&t, 1, &d);
	ck_assert_uint_eq(d.word, spec_word(SPEC_CMP, 0, SPEC_N, 1, WA));
	ck_assert_frag(&d, 0, "head");
	/* the continuation goes to a fresh chunk, whose Acquired has no N */
	topen_with(&a, "tail", 4, TB_OPEN_CONT_PREV, &sp);
	ck_assert_uint_eq(tword(&t, 2), spec_word(SPEC_ACQ, 0, SPEC_P, 0, WA));
	ck_assert_int_eq(tb_writer_close(&a.w, 4, 0), TB_OK);
	tdecode(&t, 2, &d);
	ck_assert_uint_eq(d.word, spec_word(SPEC_CMP, 0, SPEC_P, 1, WA));
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_relocated_replacement_is_not_reused)
{
	/* section 7.1: the first implementation never reuses it */
	struct tring t;
	struct twriter a;
	struct treader tr;
	struct tb_chunk_view v;
	struct tb_span sp;
	struct dchunk d;

	tring_new(&t, 512, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	ck_assert_int_eq(twrite(&a, "one", 0, 0), TB_OK);
	topen_with(&a, "two", 3, 0, &sp);
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_EMITTED);
	ck_assert_int_eq(tb_writer_close(&a.w, 3, 0), TB_OK);
	ck_assert_int_eq(twrite(&a, "three", 0, 0), TB_OK);
	tdecode(&t, 1, &d);
	ck_assert_uint_eq(d.n, 1);
	ck_assert_frag(&d, 0, "two");
	tdecode(&t, 2, &d);
	ck_assert_frag(&d, 0, "three");
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_relocated_open_fragment_can_be_scraped_again)
{
	struct tring t;
	struct twriter a;
	struct treader tr;
	struct tb_chunk_view v;
	struct tb_span sp;
	struct dchunk d;

	tring_new(&t, 512, 8);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	ck_assert_int_eq(twrite(&a, "first", 0, 0), TB_OK);
	topen_with(&a, "ab", 32, 0, &sp);
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_EMITTED);
	ck_assert_int_eq(tb_writer_sync(&a.w, 2, &sp), TB_OK);
	ck_assert_ptr_eq(sp.begin, tchunk(&t, 1) + 6);
	memcpy(sp.begin + 2, "cd", 2);
	/* the reader reaches the replacement before the fragment closes */
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_SKIPPED);
	ck_assert_uint_eq(tword(&t, 1), spec_word(SPEC_RR, 0, 0, 0, WA));
	ck_assert_int_eq(tb_writer_sync(&a.w, 4, &sp), TB_OK);
	ck_assert_uint_eq(tword(&t, 1), SPEC_ACKED);
	ck_assert_ptr_eq(sp.begin, tchunk(&t, 2) + 6);
	ck_assert_mem_eq(sp.begin, "abcd", 4);
	memcpy(sp.begin + 4, "ef", 2);
	ck_assert_int_eq(tb_writer_close(&a.w, 6, 0), TB_OK);
	ck_assert_uint_eq(a.w.relocations, 2);
	tdecode(&t, 2, &d);
	ck_assert_uint_eq(d.word, spec_word(SPEC_CMP, 0, 0, 1, WA));
	ck_assert_frag(&d, 0, "abcdef");
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v),
			 TB_EMITTED);
	ck_assert_vfrag(&v, 0, "abcdef");
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

/* Each way a caller can misuse a writer has its own code. */
START_TEST(test_writer_misuse_gets_a_code_per_cause)
{
	struct tring t;
	struct twriter a;
	struct tb_writer z;
	struct tb_span sp;

	tring_new(&t, 256, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	/* writer id 0 is refused where it is given */
	ck_assert_int_eq(tb_writer_init(&z, &t.r, 0, BID, TB_DROP,
					a.scratch), TB_EID);
	ck_assert_int_eq(tb_writer_init(&z, &t.r, 1, BID, (enum tb_full_policy)9,
					a.scratch), TB_EINVAL);
	ck_assert_int_eq(tb_writer_close(&a.w, 1, 0), TB_ENOTOPEN);
	ck_assert_int_eq(tb_writer_open(&a.w, 1, 0, &sp), TB_OK);
	ck_assert_int_eq(tb_writer_open(&a.w, 1, 0, &sp), TB_EOPEN);
	ck_assert_int_eq(tb_writer_close(&a.w,
					 (uint32_t)(sp.end - sp.begin) + 1, 0),
			 TB_ESIZE);
	ck_assert_int_eq(tb_writer_open(&a.w, 300, 0, &sp), TB_EOPEN);
	ck_assert_int_eq(tb_writer_close(&a.w, 0, 0), TB_OK);
	ck_assert_int_eq(tb_writer_open(&a.w, 300, 0, &sp), TB_TOO_LARGE);
	ck_assert_uint_eq(twrite_pos(&t), 1);	/* nothing more reserved */
	twriter_free(&a);
	tring_free(&t);
}
END_TEST

/*
 * The open and close flags cannot be swapped unnoticed: they differ, and
 * each call refuses the other's with TB_EINVAL, changing nothing.
 */
typedef char flags_differ[TB_OPEN_CONT_PREV != TB_CLOSE_CONT_NEXT ? 1 : -1];

START_TEST(test_open_and_close_flags_swapped_are_refused)
{
	struct tring t;
	struct twriter a;
	struct tb_span sp;

	tring_new(&t, 256, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	ck_assert_uint_ne(TB_OPEN_CONT_PREV, TB_CLOSE_CONT_NEXT);
	ck_assert_int_eq(tb_writer_open(&a.w, 1, TB_CLOSE_CONT_NEXT, &sp),
			 TB_EINVAL);
	ck_assert_int_eq(tb_writer_open(&a.w, 1, 0x80, &sp), TB_EINVAL);
	ck_assert_uint_eq(twrite_pos(&t), 0);	/* nothing reserved */
	ck_assert_int_eq(tb_writer_open(&a.w, 1, TB_OPEN_CONT_PREV, &sp),
			 TB_OK);
	ck_assert_int_eq(tb_writer_close(&a.w, 1, TB_OPEN_CONT_PREV),
			 TB_EINVAL);
	ck_assert_int_eq(tb_writer_close(&a.w, 1, 0x80), TB_EINVAL);
	ck_assert(a.w.cur.open);		/* still open */
	/* Acquired, continuing from previous, nothing published yet */
	ck_assert_uint_eq(tword(&t, 0), spec_word(SPEC_ACQ, 0, SPEC_P, 0, WA));
	ck_assert_int_eq(tb_writer_close(&a.w, 1, TB_CLOSE_CONT_NEXT), TB_OK);
	ck_assert_uint_eq(tword(&t, 0),
			  spec_word(SPEC_CMP, 0, SPEC_P | SPEC_N, 1, WA));
	twriter_free(&a);
	tring_free(&t);
}
END_TEST

START_TEST(test_sync_rejects_bad_calls)
{
	struct tring t;
	struct twriter a;
	struct tb_span sp;

	tring_new(&t, 256, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	ck_assert_int_eq(tb_writer_sync(&a.w, 0, &sp), TB_ENOTOPEN);
	ck_assert_int_eq(twrite(&a, "x", 0, 0), TB_OK);
	ck_assert_int_eq(tb_writer_sync(&a.w, 0, &sp), TB_ENOTOPEN);
	ck_assert_int_eq(tb_writer_open(&a.w, 1, 0, &sp), TB_OK);
	ck_assert_int_eq(tb_writer_sync(&a.w, (uint32_t)(sp.end - sp.begin) + 1,
					&sp), TB_ESIZE);
	ck_assert_int_eq(tb_writer_sync(&a.w, (uint32_t)(sp.end - sp.begin),
					&sp), TB_OK);
	twriter_free(&a);
	tring_free(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * (i) Hostile memory
 */
static int allowed_result(int r)
{
	return r == TB_NODATA || r == TB_EMITTED || r == TB_SKIPPED ||
	       r == TB_RETRY_LATER || r == TB_PENDING || r == TB_EPROTO;
}

static void act_random_word(struct hookctx *h, uint32_t pos, uint32_t word)
{
	uint32_t r = xs32(&h->seed);

	(void)word;
	/* sometimes a plausible word, sometimes garbage */
	if (r & 1)
		r = (r & 0x1fffffffu) | (xs32(&h->seed) % 5) << 29;
	poke32(tb_ring_chunk(&h->t->r, pos), r);
}

/* The view stays inside the reader's scratch and the chunk's bounds. */
static void check_view_bounds(const struct tring *t, const struct treader *tr,
			      const struct tb_chunk_view *v)
{
	uint32_t sum = 0, i;

	if (v->lost) {		/* unusable data: nothing to read in it */
		ck_assert_uint_eq(v->nfrags, 0);
		ck_assert_uint_eq(v->flags, TB_F_DATA_LOSS);
		return;
	}
	ck_assert_uint_ge(v->nfrags, 1);
	ck_assert_uint_le(v->nfrags, 255);
	/* at the chunk's own offset in scratch, before the directory copy */
	ck_assert_ptr_eq(v->payload, tr->scratch + 6);
	for (i = 0; i < v->nfrags; i++)
		sum += v->sizes[i];
	ck_assert_uint_le(6 + sum + v->nfrags * spec_width(t->cs), t->cs);
}

START_TEST(test_hostile_state_words_and_cursors_reader_survives)
{
	static const uint32_t css[] = { 256, 512, 1024 };
	static const uint32_t ns[] = { 2, 4, 8 };
	uint32_t seed = 0x2545f491u;
	unsigned round;

	for (round = 0; round < 1500; round++) {
		struct tring t;
		struct treader tr;
		struct hookctx h;
		uint32_t i, rp, wp, calls;
		int latched = 0;

		tring_new(&t, css[round % 3], ns[(round / 3) % 3]);
		for (i = 0; i < t.n * t.cs; i++)
			t.r.chunks[i] = (uint8_t)xs32(&seed);
		/* plausible words in some chunks, garbage in the rest */
		for (i = 0; i < t.n; i++) {
			uint32_t r = xs32(&seed);

			if (r & 1)
				tset_word(&t, i, (r & 0x1fffffffu) >> (r % 24) |
					  (xs32(&seed) % 8) << 29);
		}
		rp = xs32(&seed);
		wp = round & 1 ? rp + xs32(&seed) % (2 * t.n + 1) :
				 xs32(&seed);
		poke32(&t.r.hdr->read_pos, rp);
		tset_write_pos(&t, wp);
		treader_new(&tr, &t);
		ck_assert_uint_eq(tr.rd.pos, rp);
		memset(&h, 0, sizeof(h));
		h.t = &t;
		h.seed = seed | 1;
		if (round % 4 == 3) {
			h.act = act_random_word;
			h.every = 1;
			set_hook(&tr, &h);
		}
		for (calls = 0; calls < 4 * t.n; calls++) {
			struct tb_chunk_view v;
			uint32_t pos = tr.rd.pos, before;
			enum tb_read_mode mode = xs32(&seed) & 1 ?
				TB_READ_SCRAPE : TB_READ_LAZY;
			int ret;

			before = peek32(tb_ring_chunk(&t.r, pos));
			h.calls = 0;
			ret = tb_reader_read_one(&tr.rd, mode, &v);
			ck_assert_msg(allowed_result(ret), "result %d", ret);
			ck_assert_uint_le(h.calls, 64);
			if (latched)
				ck_assert_int_eq(ret, TB_EPROTO);
			if (ret == TB_EPROTO) {
				ck_assert_uint_eq(tr.rd.pos, pos);
				if (!h.calls)
					ck_assert_uint_eq(peek32(
						tb_ring_chunk(&t.r, pos)),
						before);
				latched = 1;
			} else if (ret == TB_EMITTED) {
				check_view_bounds(&t, &tr, &v);
				ck_assert_uint_eq(tr.rd.pos, pos + 1);
			} else if (ret == TB_SKIPPED) {
				ck_assert_uint_eq(tr.rd.pos, pos + 1);
			} else {
				ck_assert_uint_eq(tr.rd.pos, pos);
			}
			if (ret == TB_NODATA || ret == TB_PENDING)
				break;
		}
		/* a drain pass also survives and returns */
		ck_assert_int_ge(tdrain(&tr.rd, 4 * t.n,
						 TB_READ_SCRAPE, NULL, NULL),
				 TB_EPROTO);
		treader_free(&tr);
		tring_free(&t);
	}
}
END_TEST

START_TEST(test_hostile_directory_rejected_as_malformed_without_oob)
{
	static const uint32_t css[] = { 256, 512, 2048 };
	uint32_t seed = 0x1234567u;
	unsigned round;

	for (round = 0; round < 3000; round++) {
		struct tring t;
		struct treader tr;
		struct tb_chunk_view v;
		struct dchunk d;
		uint32_t cs = css[round % 3], i, n, word;
		int ret;

		tring_new(&t, cs, 2);
		/* small bytes half of the time, so some directories pass */
		for (i = 0; i < cs; i++)
			tchunk(&t, 0)[i] = (uint8_t)(round & 2 ? xs32(&seed) :
						      xs32(&seed) % 3);
		n = xs32(&seed) % 256;
		word = spec_word(round & 1 ? SPEC_CMP : SPEC_ACQ, 0, 0, n, WA);
		tset_word(&t, 0, word);
		tset_write_pos(&t, 1);
		treader_new(&tr, &t);
		tdecode(&t, 0, &d);
		ret = tb_reader_read_one(&tr.rd, TB_READ_SCRAPE, &v);
		if (!n) {
			ck_assert_int_eq(ret, TB_SKIPPED);
			ck_assert_uint_eq(tr.rd.stat[TB_RS_MALFORMED], 0);
		} else if (d.malformed) {
			ck_assert_int_eq(ret, TB_EMITTED);
			check_lost_view(&v, 0, WA, TB_VIEW_MALFORMED,
					!(round & 1));
			ck_assert_uint_eq(tr.rd.stat[TB_RS_MALFORMED], 1);
		} else {
			ck_assert_int_eq(ret, TB_EMITTED);
			ck_assert_uint_eq(v.nfrags, n);
			check_view_bounds(&t, &tr, &v);
			for (i = 0; i < n; i++)
				ck_assert_uint_eq(v.sizes[i], d.sizes[i]);
			ck_assert_mem_eq(v.payload, d.frag[0],
					 (size_t)(d.frag[n - 1] - d.frag[0]) +
					 d.sizes[n - 1]);
		}
		/* the ownership transition happened either way */
		ck_assert_uint_eq(tword(&t, 0), round & 1 ? spec_free(1) :
				  tb_state_with(word, TB_REWRITE));
		treader_free(&tr);
		tring_free(&t);
	}
}
END_TEST

/*
 * write_pos only grows; a stray store that puts it back (a hostile or
 * broken process in the mapping) must not let a writer claim a position
 * before one it already took: the reader hands chunks on in position
 * order, so the writer's later packet would come out first.  Here the
 * writer's first chunk is at position base + 2 and write_pos is put back
 * to base + 1, whose chunk is free for this lap: the next claim must
 * still come after base + 2.  The base pins the floor's compare where a
 * wrong one breaks: from 0, across the 2^32 rollover (the floor is 0 and
 * write_pos 0xffffffff: a plain "write_pos < floor" misses it), and
 * across half the position space (a signed compare of the two values
 * instead of their distance misses it).
 */
static const uint32_t floor_bases[] = { 0, 0xfffffffeu, 0x7ffffffeu };

/* A 4 x 256 B ring from @start, writer WA (TB_DROP), a reader. */
struct floor_fx {
	struct tring t;
	struct twriter a;
	struct treader tr;
	struct collect col;
};

static void floor_fx_new(struct floor_fx *f, uint32_t start)
{
	memset(&f->col, 0, sizeof(f->col));
	tring_new_at(&f->t, 256, 4, start);
	twriter_new(&f->a, &f->t, WA, BID, TB_DROP);
	treader_new(&f->tr, &f->t);
}

static void floor_fx_free(struct floor_fx *f)
{
	treader_free(&f->tr);
	twriter_free(&f->a);
	tring_free(&f->t);
}

/* The writer writes @s as one fragment and lets go of its chunk. */
static int floor_write(struct floor_fx *f, const char *s)
{
	int ret = twrite(&f->a, s, 0, 0);

	ck_assert_int_eq(tb_writer_release(&f->a.w), TB_OK);
	return ret;
}

/* Positions the reader resolves, collecting what it emits. */
static int floor_drain(struct floor_fx *f, unsigned max)
{
	return tdrain(&f->tr.rd, max, TB_READ_SCRAPE, collect_fn, &f->col);
}

START_TEST(test_writer_positions_only_grow_when_write_pos_goes_back)
{
	uint32_t base = floor_bases[_i];
	struct floor_fx f;

	floor_fx_new(&f, base);
	tset_write_pos(&f.t, base + 2);	/* positions base, base + 1: holes */
	ck_assert_int_eq(floor_write(&f, "one"), TB_OK);
	ck_assert_uint_eq(twrite_pos(&f.t), base + 3);
	tset_write_pos(&f.t, base + 1);	/* the stray store */
	ck_assert_int_eq(floor_write(&f, "two"), TB_OK);
	ck_assert_uint_eq(twrite_pos(&f.t), base + 4);	/* and mended */
	ck_assert_uint_eq(tword(&f.t, (base + 1) & 3),	/* untouched */
			  spec_free((base + 1) >> 2 & 0x1fffffff));
	floor_drain(&f, 8);
	ck_assert_uint_eq(f.col.count, 2);
	ck_assert_uint_eq(f.col.c[0].pos, base + 2);
	ck_assert_str_eq(f.col.c[0].frag[0], "one");
	ck_assert_uint_eq(f.col.c[1].pos, base + 3);
	ck_assert_str_eq(f.col.c[1].frag[0], "two");
	floor_fx_free(&f);
}
END_TEST

/*
 * The floor must not trust read_pos either: a stray store puts read_pos
 * back too, far enough that the writer's last position looks more than a
 * ring ahead of it (as if the floor said nothing), while write_pos, put
 * back between the reader's cursor and that position, is still within a
 * ring of read_pos.  The writer's last chunk is at 2, unresolved; a
 * claim at 1 would succeed (its chunk is free for this lap) and come out
 * first.  Within a ring behind the floor, write_pos is never where the
 * writer reserves: here the floor is a ring ahead of the forged
 * read_pos, so the ring looks full, and the writer moves write_pos back
 * up to its floor.  Once the reader publishes its own cursor again the
 * writer reserves after its last chunk.
 */
START_TEST(test_writer_floor_holds_when_read_pos_goes_back_too)
{
	struct floor_fx f;

	floor_fx_new(&f, 0);
	tset_write_pos(&f.t, 2);
	ck_assert_int_eq(floor_write(&f, "one"), TB_OK);
	tset_write_pos(&f.t, 1);			/* stray stores */
	poke32(&f.t.r.hdr->read_pos, 0xffffffffu);
	ck_assert_int_eq(floor_write(&f, "two"), TB_FULL);
	ck_assert_uint_eq(twrite_pos(&f.t), 3);
	ck_assert_uint_eq(tword(&f.t, 1), spec_free(0));	/* untouched */
	ck_assert_int_eq(floor_drain(&f, 1), 1);	/* hole at 0 */
	ck_assert_uint_eq(tread_pos(&f.t), 1);
	ck_assert_int_eq(floor_write(&f, "two"), TB_OK);
	ck_assert_uint_eq(twrite_pos(&f.t), 4);
	ck_assert_uint_eq(tword(&f.t, 1), spec_free(0));	/* untouched */
	floor_drain(&f, 8);
	ck_assert_uint_eq(f.col.count, 2);
	ck_assert_str_eq(f.col.c[0].frag[0], "one");
	ck_assert_uint_eq(f.col.c[1].pos, 3);
	ck_assert_str_eq(f.col.c[1].frag[0], "two");
	floor_fx_free(&f);
}
END_TEST

/*
 * write_pos put back further, behind read_pos: the floor, right at
 * read_pos, is where the writer reserves, and its CAS mends write_pos
 * (reserving at write_pos would be TB_FULL until the reader stops the
 * ring for the forged cursor).
 */
START_TEST(test_writer_mends_write_pos_put_back_behind_read_pos)
{
	struct floor_fx f;

	floor_fx_new(&f, 0);
	ck_assert_int_eq(floor_write(&f, "one"), TB_OK);
	ck_assert_int_eq(floor_drain(&f, 8), 1);
	tset_write_pos(&f.t, 1u - 10);			/* the stray store */
	ck_assert_int_eq(floor_write(&f, "two"), TB_OK);
	ck_assert_uint_eq(twrite_pos(&f.t), 2);
	ck_assert_int_eq(floor_drain(&f, 8), 1);
	ck_assert_uint_eq(f.col.count, 2);
	ck_assert_uint_eq(f.col.c[1].pos, 1);
	ck_assert_str_eq(f.col.c[1].frag[0], "two");
	floor_fx_free(&f);
}
END_TEST

/*
 * The floor's edge: a stray store puts write_pos back exactly a ring
 * behind the floor.  The writer's last chunk is at base + 3 while
 * positions base .. base + 2 are reserved by writers that have not
 * claimed yet (read_pos base: the ring was full), and write_pos goes back
 * to read_pos.  Position base is a whole ring behind the floor and its
 * chunk is free for this lap: a claim there would come out before the
 * writer's last packet.  The writer must come after base + 3, and must
 * not be locked out either: once the reader has passed the positions in
 * between (holes: their writers never claim), it writes.
 */
START_TEST(test_writer_floor_holds_a_whole_ring_behind)
{
	uint32_t base = floor_bases[_i];
	struct floor_fx f;
	int i, ret;

	floor_fx_new(&f, base);
	for (i = 0; i < 3; i++)
		ck_assert_uint_eq(treserve(&f.t), base + (uint32_t)i);
	ck_assert_int_eq(floor_write(&f, "one"), TB_OK);
	ck_assert_uint_eq(twrite_pos(&f.t), base + 4);
	tset_write_pos(&f.t, base);	/* the stray store */
	ret = floor_write(&f, "two");
	ck_assert_uint_eq(tword(&f.t, base & 3),	/* untouched */
			  spec_free(base >> 2 & 0x1fffffff));
	if (ret == TB_FULL) {		/* the reader must get past first */
		floor_drain(&f, 8);
		ck_assert_uint_eq(f.col.count, 1);
		ret = floor_write(&f, "two");
	}
	ck_assert_msg(ret == TB_OK, "the writer: %s", tb_strerror(ret));
	floor_drain(&f, 8);
	ck_assert_uint_eq(f.col.count, 2);
	ck_assert_str_eq(f.col.c[0].frag[0], "one");
	ck_assert_uint_eq(f.col.c[0].pos, base + 3);
	ck_assert_str_eq(f.col.c[1].frag[0], "two");
	ck_assert_uint_eq(f.col.c[1].pos, base + 4);
	floor_fx_free(&f);
}
END_TEST

/* ------------------------------------------------------------------------
 * Suites
 */
/* ------------------------------------------------------------------------
 * Reader restarts: every public reader call leaves read_pos published
 */

/* Writes @n one-chunk packets "p0", "p1", ... from writer @tw, each alone. */
static void write_chunks(struct twriter *tw, unsigned first, unsigned n)
{
	char s[8];
	unsigned i;

	for (i = first; i < first + n; i++) {
		snprintf(s, sizeof(s), "p%u", i);
		ck_assert_int_eq(twrite(tw, s, 0, 0), TB_OK);
		ck_assert_int_eq(tb_writer_release(&tw->w), TB_OK);
	}
}

/* The fragments of @col are "p<first>", "p<first+1>", ... @n of them. */
static void expect_chunks(const struct collect *col, unsigned first,
			  unsigned n)
{
	char s[8];
	unsigned i;

	ck_assert_uint_eq(col->count, n);
	for (i = 0; i < n; i++) {
		snprintf(s, sizeof(s), "p%u", first + i);
		ck_assert_str_eq(col->c[i].frag[0], s);
	}
}

/* A drain says how many positions it resolved, and why it stopped. */
START_TEST(test_drain_reports_count_and_reason_apart)
{
	struct tring t;
	struct twriter a;
	struct treader tr;
	struct tb_span sp;
	unsigned n = 99;

	tring_new(&t, 256, 8);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	ck_assert_int_eq(tb_reader_drain(&tr.rd, 8, TB_READ_LAZY, NULL, NULL,
					 &n), TB_NODATA);
	ck_assert_uint_eq(n, 0);
	write_chunks(&a, 0, 3);
	ck_assert_int_eq(tb_reader_drain(&tr.rd, 2, TB_READ_LAZY, NULL, NULL,
					 &n), TB_LIMIT);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(tb_reader_drain(&tr.rd, 0, TB_READ_LAZY, NULL, NULL,
					 &n), TB_LIMIT);
	ck_assert_uint_eq(n, 0);
	topen_with(&a, "held", 4, 0, &sp);	/* position 3, held */
	ck_assert_int_eq(tb_reader_drain(&tr.rd, 8, TB_READ_LAZY, NULL, NULL,
					 &n), TB_PENDING);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(tb_reader_drain(&tr.rd, 8, TB_READ_SCRAPE, NULL,
					 NULL, NULL), TB_NODATA);
	tset_write_pos(&t, twrite_pos(&t) + 100);	/* forged */
	ck_assert_int_eq(tb_reader_drain(&tr.rd, 8, TB_READ_SCRAPE, NULL,
					 NULL, &n), TB_EPROTO);
	ck_assert_uint_eq(n, 0);
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_read_one_publishes_read_pos)
{
	struct tring t;
	struct twriter a;
	struct treader tr;
	struct tb_chunk_view v;

	tring_new(&t, 256, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	write_chunks(&a, 0, 2);
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_LAZY, &v),
			 TB_EMITTED);
	ck_assert_uint_eq(tread_pos(&t), 1);
	ck_assert_int_eq(tb_reader_read_one(&tr.rd, TB_READ_LAZY, &v),
			 TB_EMITTED);
	ck_assert_uint_eq(tread_pos(&t), 2);
	/* a caller that only uses read_one never wedges the ring */
	write_chunks(&a, 2, 4);
	ck_assert_uint_eq(twrite_pos(&t), 6);
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

/*
 * A reader replaced after any public call returned (a restarted service
 * attaching again) continues at read_pos: nothing is read twice, nothing
 * is skipped, and the ring does not stop.
 */
START_TEST(test_new_reader_continues_where_the_old_one_returned)
{
	struct tring t;
	struct twriter a;
	struct treader old, fresh;
	struct tb_chunk_view v;
	static struct collect col;	/* survives the longjmp */

	tring_new(&t, 256, 8);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&old, &t);
	write_chunks(&a, 0, 6);
	memset(&col, 0, sizeof(col));
	/* a drain pass cut short by its limit, then one read_one */
	ck_assert_int_eq(tdrain(&old.rd, 2, TB_READ_LAZY,
					 collect_fn, &col), 2);
	ck_assert_int_eq(tb_reader_read_one(&old.rd, TB_READ_LAZY, &v),
			 TB_EMITTED);
	collect_fn(&col, &v);
	expect_chunks(&col, 0, 3);
	ck_assert_uint_eq(tread_pos(&t), 3);

	treader_new(&fresh, &t);
	memset(&col, 0, sizeof(col));
	ck_assert_int_eq(tdrain(&fresh.rd, ~0u, TB_READ_LAZY,
					 collect_fn, &col), 3);
	expect_chunks(&col, 3, 3);
	ck_assert(!fresh.rd.stopped);
	ck_assert_uint_eq(tread_pos(&t), 6);
	twriter_free(&a);
	treader_free(&old);
	treader_free(&fresh);
	tring_free(&t);
}
END_TEST

/* A reader "killed" inside its chunk callback: longjmp out of the drain. */
static jmp_buf kill_reader;

static void collect_then_die(void *ctx, const struct tb_chunk_view *v)
{
	struct collect *col = (struct collect *)ctx;

	collect_fn(ctx, v);
	if (col->count == 2)
		longjmp(kill_reader, 1);
}

START_TEST(test_reader_killed_in_a_pass_new_reader_continues)
{
	struct tring t;
	struct twriter a;
	struct treader old, fresh;
	static struct collect col;	/* survives the longjmp */

	tring_new(&t, 256, 8);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&old, &t);
	treader_new(&fresh, &t);	/* before the drain: its init is free */
	write_chunks(&a, 0, 5);
	memset(&col, 0, sizeof(col));
	if (!setjmp(kill_reader)) {
		tdrain(&old.rd, ~0u, TB_READ_LAZY, collect_then_die,
				&col);
		ck_abort_msg("the callback did not stop the drain");
	}
	/* the two chunks it took are resolved and published */
	expect_chunks(&col, 0, 2);
	ck_assert_uint_eq(tread_pos(&t), 2);
	ck_assert_int_eq(tb_reader_init(&fresh.rd, &t.r, fresh.scratch),
			 TB_OK);
	memset(&col, 0, sizeof(col));
	ck_assert_int_eq(tdrain(&fresh.rd, ~0u, TB_READ_LAZY,
					 collect_fn, &col), 3);
	expect_chunks(&col, 2, 3);
	twriter_free(&a);
	treader_free(&old);
	treader_free(&fresh);
	tring_free(&t);
}
END_TEST

/*
 * The one window a restart cannot cross: killed between the transition of
 * a position and its read_pos store, a reader leaves that chunk stamped
 * for its next traversal behind the published read_pos.  The next reader
 * meets a free tag that does not match read_pos, which the protocol calls
 * an unsupported reader restart: it stops the ring (TB_EPROTO) and
 * changes neither the word nor read_pos.
 */
static void die_at_read_pos_store(const uint32_t *p, int op, uint32_t e,
				  uint32_t v, int ok, int fail)
{
	(void)e, (void)v, (void)ok, (void)fail;
	if (op == TB_TEST_STORE && p == &race->t->r.hdr->read_pos)
		longjmp(kill_reader, 1);
}

START_TEST(test_reader_killed_before_its_read_pos_store_stops_the_next)
{
	struct cursor_race c;
	struct tring t;
	struct twriter a;
	struct treader old, fresh;
	struct tb_chunk_view v;

	tring_new(&t, 256, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&old, &t);
	write_chunks(&a, 0, 2);
	memset(&c, 0, sizeof(c));
	c.t = &t;
	race = &c;
	if (!setjmp(kill_reader)) {
		tb_test_atomic = die_at_read_pos_store;
		tb_reader_read_one(&old.rd, TB_READ_LAZY, &v);
		ck_abort_msg("read_pos was never stored");
	}
	tb_test_atomic = NULL;
	ck_assert_uint_eq(tword(&t, 0), spec_free(1));
	ck_assert_uint_eq(tread_pos(&t), 0);
	treader_new(&fresh, &t);
	ck_assert_int_eq(tdrain(&fresh.rd, ~0u, TB_READ_LAZY, NULL,
					 NULL), TB_EPROTO);
	ck_assert_uint_eq(tword(&t, 0), spec_free(1));
	ck_assert_uint_eq(tread_pos(&t), 0);
	twriter_free(&a);
	treader_free(&old);
	treader_free(&fresh);
	tring_free(&t);
}
END_TEST

/*
 * Killed right after a scrape, before its read_pos store: the next reader
 * finds the chunk RewriteRequested at read_pos.  That is this lap's
 * scrape, not a chunk pinned a whole lap ago: a hole, no pinned hole.
 * If its writer never acknowledges, the next lap counts it pinned.
 */
START_TEST(test_reader_restart_after_a_scrape_counts_no_pinned_hole)
{
	struct cursor_race c;
	struct tring t;
	struct twriter a, b;
	struct treader old, fresh;
	struct tb_chunk_view v;
	struct tb_ring_stats st;
	struct tb_span sp;

	tring_new(&t, 256, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	twriter_new(&b, &t, WB, BID, TB_DROP);
	treader_new(&old, &t);
	topen_with(&a, "open", 4, 0, &sp);
	memset(&c, 0, sizeof(c));
	c.t = &t;
	race = &c;
	if (!setjmp(kill_reader)) {
		tb_test_atomic = die_at_read_pos_store;
		tb_reader_read_one(&old.rd, TB_READ_SCRAPE, &v);
		ck_abort_msg("read_pos was never stored");
	}
	tb_test_atomic = NULL;
	ck_assert_uint_eq(tword(&t, 0), spec_word(SPEC_RR, 0, 0, 0, WA));
	ck_assert_uint_eq(tread_pos(&t), 0);
	treader_new(&fresh, &t);
	write_chunks(&b, 1, 3);
	ck_assert_int_eq(tdrain(&fresh.rd, ~0u, TB_READ_LAZY, NULL, NULL),
			 4);
	tb_ring_stats(&t.r, &st);
	ck_assert_uint_eq(st.rstat[TB_RS_PINNED], 0);
	ck_assert_uint_eq(st.rstat[TB_RS_HOLES], 1);
	ck_assert_uint_eq(st.rstat[TB_RS_EMITTED], 3);
	/* a never acknowledges: a whole lap later, that is a pinned hole */
	ck_assert_int_eq(twrite(&b, "lap", 0, 0), TB_OK);	/* burns p4 */
	ck_assert_int_eq(tb_writer_release(&b.w), TB_OK);
	ck_assert_int_eq(tdrain(&fresh.rd, ~0u, TB_READ_LAZY, NULL, NULL),
			 2);
	tb_ring_stats(&t.r, &st);
	ck_assert_uint_eq(st.rstat[TB_RS_PINNED], 1);
	twriter_free(&a);
	twriter_free(&b);
	treader_free(&old);
	treader_free(&fresh);
	tring_free(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * Writers that die holding a scraped chunk pin it, visibly
 */

/* Writers @tw[0..n) each open a fragment in a chunk of their own; the
 * reader scrapes them all: every chunk is RewriteRequested. */
static void scrape_open_chunks(struct twriter *tw, unsigned n,
			       struct treader *tr)
{
	struct tb_span sp;
	unsigned i;

	for (i = 0; i < n; i++)
		topen_with(&tw[i], "open", 4, 0, &sp);
	ck_assert_int_eq(tdrain(&tr->rd, ~0u, TB_READ_SCRAPE, NULL,
					 NULL), (int)n);
}

static uint32_t pinned_now(const struct tring *t)
{
	struct tb_ring_stats st;

	tb_ring_stats(&t->r, &st);
	return st.pinned;
}

START_TEST(test_dead_writer_pins_its_chunk_counted_every_lap)
{
	struct tring t;
	struct twriter dead, a;
	struct treader tr;
	struct tb_ring_stats st;
	unsigned lap;

	tring_new(&t, 256, 4);
	twriter_new(&dead, &t, WA, BID, TB_DROP);
	twriter_new(&a, &t, WB, BID, TB_DROP);
	treader_new(&tr, &t);
	scrape_open_chunks(&dead, 1, &tr);	/* then it dies */
	ck_assert_uint_eq(tword(&t, 0), spec_word(SPEC_RR, 0, 0, 0, WA));
	ck_assert_uint_eq(pinned_now(&t), 1);
	write_chunks(&a, 0, 3);
	ck_assert_int_eq(tdrain(&tr.rd, ~0u, TB_READ_LAZY, NULL,
					 NULL), 3);
	for (lap = 1; lap <= 3; lap++) {
		/* a fills the other three chunks, burning chunk 0's turn */
		write_chunks(&a, 3 * lap, 3);
		ck_assert_int_eq(tdrain(&tr.rd, ~0u, TB_READ_LAZY,
						 NULL, NULL), 4);
		tb_ring_stats(&t.r, &st);
		ck_assert_uint_eq(st.rstat[TB_RS_PINNED], lap);
		ck_assert_uint_eq(st.pinned, 1);
		ck_assert(!tb_reader_pinned(&tr.rd));
	}
	ck_assert_uint_eq(tword(&t, 0), spec_word(SPEC_RR, 0, 0, 0, WA));
	twriter_free(&dead);
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_every_chunk_pinned_is_reported_not_silent)
{
	struct tring t;
	struct twriter dead[4], e;
	struct treader tr;
	struct tb_ring_stats st;
	unsigned i;

	tring_new(&t, 256, 4);
	for (i = 0; i < 4; i++)
		twriter_new(&dead[i], &t, (uint16_t)(20 + i), BID, TB_DROP);
	twriter_new(&e, &t, WB, BID, TB_STALL);
	treader_new(&tr, &t);
	scrape_open_chunks(dead, 4, &tr);
	ck_assert_uint_eq(pinned_now(&t), 4);
	ck_assert(!tb_reader_pinned(&tr.rd));	/* not seen a lap yet */
	/* a live writer burns every position it reserves; never waits */
	ck_assert_int_eq(twrite(&e, "e", 0, 0), TB_NO_CHUNK);
	ck_assert_int_eq(tdrain(&tr.rd, ~0u, TB_READ_LAZY, NULL,
					 NULL), 4);
	tb_ring_stats(&t.r, &st);
	ck_assert_uint_eq(st.rstat[TB_RS_PINNED], 4);
	ck_assert_uint_eq(st.wstat[TB_WS_NO_CHUNK], 1);
	ck_assert(tb_reader_pinned(&tr.rd));
	ck_assert_str_ne(tb_strerror(TB_EPINNED), "unknown result");
	/* one writer comes back and acknowledges: no longer all pinned */
	ck_assert_int_eq(tb_writer_close(&dead[0].w, 4, 0), TB_DROPPED);
	ck_assert_uint_eq(tword(&t, 0), SPEC_ACKED);
	ck_assert_uint_eq(pinned_now(&t), 3);
	/* (its replacement burned four positions: the ring is full) */
	ck_assert_int_eq(tdrain(&tr.rd, ~0u, TB_READ_LAZY, NULL,
					 NULL), 4);
	ck_assert(!tb_reader_pinned(&tr.rd));
	ck_assert_uint_eq(tword(&t, 0), spec_free(3));
	for (i = 0; i < 4; i++)
		twriter_free(&dead[i]);
	twriter_free(&e);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * Section 8's ordering table, access by access, through the test seam
 */
struct arec {
	const uint32_t *p;
	int op;
	uint32_t expect, v;
	int ok, fail;
	char actor;		/* rec.actor when it happened */
};

#define AREC_MAX	4096
static struct {
	struct tring *t;
	unsigned n;
	char actor;		/* 'w' while a writer call runs, else 0 */
	struct arec r[AREC_MAX];
} rec;

static void record_atomic(const uint32_t *p, int op, uint32_t e, uint32_t v,
			  int ok, int fail)
{
	struct arec a;

	a.p = p;
	a.op = op;
	a.expect = e;
	a.v = v;
	a.ok = ok;
	a.fail = fail;
	a.actor = rec.actor;
	ck_assert_uint_lt(rec.n, AREC_MAX);
	rec.r[rec.n++] = a;
}

/* The state word of a chunk, or -1: which chunk @p is. */
static int chunk_of(const struct tring *t, const uint32_t *p)
{
	const uint8_t *b = (const uint8_t *)(const void *)p;
	size_t off;

	if (b < t->r.chunks || b >= t->r.chunks + (size_t)t->n * t->cs)
		return -1;
	off = (size_t)(b - t->r.chunks);
	return off % t->cs ? -1 : (int)(off / t->cs);
}

/* docs/protocol.md 6.2: one row per CAS on a state word, from, to, orders */
static const struct order_row {
	const char *what;
	uint32_t from, to;
	int ok, fail;
} order_table[] = {
	{ "claim",		  SPEC_FREE, SPEC_ACQ,  TB_ACQ, TB_RLX },
	{ "advance",		  SPEC_FREE, SPEC_FREE, TB_REL, TB_ACQ },
	{ "publish",		  SPEC_ACQ,  SPEC_CMP,  TB_REL, TB_RLX },
	{ "publish, still open",  SPEC_ACQ,  SPEC_ACQ,  TB_REL, TB_RLX },
	{ "reuse",		  SPEC_CMP,  SPEC_ACQ,  TB_RLX, TB_RLX },
	{ "mark rewrite",	  SPEC_ACQ,  SPEC_RR,   TB_RLX, TB_ACQ },
	{ "acknowledge",	  SPEC_RR,   SPEC_ACK,  TB_REL, TB_RLX },
	{ "reclaim complete",	  SPEC_CMP,  SPEC_FREE, TB_REL, TB_ACQ },
	{ "reclaim acknowledged", SPEC_ACK,  SPEC_FREE, TB_ACQREL,  TB_RLX },
};
#define NROWS (sizeof(order_table) / sizeof(order_table[0]))

/* Checks every recorded access; returns the rows seen, as a bit mask. */
static unsigned check_orders(const struct tring *t)
{
	const struct tb_ring_hdr *h = t->r.hdr;
	int last_read_pos_load = -1;
	unsigned i, k, seen = 0;

	for (i = 0; i < rec.n; i++) {
		const struct arec *a = &rec.r[i];

		if (a->p == &h->read_pos && a->op == TB_TEST_LOAD)
			last_read_pos_load = a->ok;
		if (a->p == &h->read_pos && a->op == TB_TEST_STORE)
			ck_assert_msg(a->ok == TB_REL,
				      "access %u: read_pos store not release",
				      i);
		if (a->p == &h->write_pos && a->op == TB_TEST_CAS) {
			/* reserve: relaxed, on an acquired read_pos */
			ck_assert_msg(a->ok == TB_RLX && a->fail == TB_RLX,
				      "access %u: reserve not relaxed", i);
			ck_assert_msg(last_read_pos_load == TB_ACQ,
				      "access %u: reserve after a read_pos "
				      "load that was not acquire", i);
		}
		if (chunk_of(t, a->p) < 0)
			continue;
		/* the reader's: acquire; a writer's look at its own: relaxed */
		if (a->op == TB_TEST_LOAD)
			ck_assert_msg(a->ok == (a->actor == 'w' ? TB_RLX :
						TB_ACQ),
				      "access %u: state load by the %s not %s",
				      i, a->actor == 'w' ? "writer" : "reader",
				      a->actor == 'w' ? "relaxed" : "acquire");
		ck_assert_msg(a->op != TB_TEST_STORE && a->op != TB_TEST_ADD,
			      "access %u: a state word written without CAS",
			      i);
		if (a->op != TB_TEST_CAS)
			continue;
		for (k = 0; k < NROWS; k++)
			if (a->expect >> 29 == order_table[k].from &&
			    a->v >> 29 == order_table[k].to)
				break;
		ck_assert_msg(k < NROWS, "access %u: no transition %#x -> %#x",
			      i, a->expect, a->v);
		ck_assert_msg(a->ok == order_table[k].ok &&
			      a->fail == order_table[k].fail,
			      "access %u: %s CAS with orders %d/%d, the table "
			      "says %d/%d", i, order_table[k].what, a->ok,
			      a->fail, order_table[k].ok,
			      order_table[k].fail);
		seen |= 1u << k;
	}
	return seen;
}

START_TEST(test_every_atomic_access_follows_the_ordering_table)
{
	struct tring t;
	struct twriter a;
	struct treader tr;
	struct tb_span sp;
	uint32_t pos, sample;
	unsigned seen, k;

	tring_new(&t, 512, 4);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	rec.n = 0;
	tb_test_atomic = record_atomic;
	ck_assert_int_eq(twrite(&a, "f0", 0, 0), TB_OK);	/* claim p0 */
	ck_assert_int_eq(twrite(&a, "f1", 0, 0), TB_OK);	/* reuse */
	ck_assert_int_eq(tdrain(&tr.rd, ~0u, TB_READ_SCRAPE, NULL,
					 NULL), 1);	/* reclaim Complete */
	topen_with(&a, "f2", 2, 0, &sp);			/* claim p1 */
	ck_assert_int_eq(tdrain(&tr.rd, ~0u, TB_READ_SCRAPE, NULL,
					 NULL), 1);	/* mark rewrite */
	/* publish fails: acknowledge, claim p2, publish there */
	ck_assert_int_eq(tb_writer_close(&a.w, 2, 0), TB_OK);
	ck_assert_int_eq(tb_ring_reserve(&t.r, &pos, &sample), TB_OK);
	ck_assert_uint_eq(pos, 3);				/* never claimed */
	ck_assert_int_eq(tdrain(&tr.rd, ~0u, TB_READ_SCRAPE, NULL,
					 NULL), 2);	/* p2, advance p3 */
	/* next lap: p4 unclaimed, p5 finds chunk 1 Acknowledged */
	ck_assert_int_eq(tb_ring_reserve(&t.r, &pos, &sample), TB_OK);
	ck_assert_int_eq(tb_ring_reserve(&t.r, &pos, &sample), TB_OK);
	ck_assert_uint_eq(pos, 5);
	ck_assert_int_eq(tdrain(&tr.rd, ~0u, TB_READ_SCRAPE, NULL,
					 NULL), 2);
	/* an open fragment scraped, found by sync, moved to p7 */
	topen_with(&a, "f3", 2, 0, &sp);			/* claim p6 */
	ck_assert_int_eq(tdrain(&tr.rd, ~0u, TB_READ_SCRAPE, NULL,
					 NULL), 1);	/* mark rewrite */
	rec.actor = 'w';
	ck_assert_int_eq(tb_writer_sync(&a.w, 2, &sp), TB_OK);
	ck_assert_int_eq(tb_writer_close(&a.w, 2, 0), TB_OK);
	rec.actor = 0;
	tb_test_atomic = NULL;
	ck_assert_uint_eq(a.w.pos, 7);
	seen = check_orders(&t);
	for (k = 0; k < NROWS; k++)
		ck_assert_msg(seen & 1u << k || k == 3,
			      "the scenario never took \"%s\"",
			      order_table[k].what);
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

/*
 * Section 6.3's four store->load handshakes: between the side's own store
 * and its load of the other side's word there is a full fence, seen
 * through the same seam (TB_TEST_FENCE).  A write is a store, a CAS or an
 * add; @from the record to start at.  True if every load of @load after a
 * write of @store (any value when @v is ~0u) is fenced from that write.
 */
static int is_write(const struct arec *a)
{
	return a->op == TB_TEST_STORE || a->op == TB_TEST_CAS ||
	       a->op == TB_TEST_ADD;
}

/* Asserts store, fence, load from every write of @store to the next load
 * of @load; returns how many such pairs there were. */
static unsigned check_fenced(const uint32_t *store, uint32_t v,
			     const uint32_t *load, const char *what)
{
	unsigned i, j, k, pairs = 0;

	for (i = 0; i < rec.n; i++) {
		const struct arec *a = &rec.r[i];

		if (a->p != store || !is_write(a) || (v != ~0u && a->v != v))
			continue;
		for (j = i + 1; j < rec.n; j++)
			if (rec.r[j].p == load && rec.r[j].op == TB_TEST_LOAD)
				break;
		if (j == rec.n)
			continue;
		for (k = i + 1; k < j; k++)
			if (rec.r[k].op == TB_TEST_FENCE)
				break;
		ck_assert_msg(k < j, "%s: accesses %u (store) and %u (load) "
			      "with no fence between", what, i, j);
		pairs++;
	}
	return pairs;
}

/* A writer's wake: a fence between its last write and its load of the
 * reader's "sleeping"; returns how many such loads there were. */
static unsigned check_wakes_fenced(const struct tring *t)
{
	unsigned i, k, loads = 0;

	for (i = 0; i < rec.n; i++) {
		if (rec.r[i].p != &t->r.bell->sleeping ||
		    rec.r[i].op != TB_TEST_LOAD)
			continue;
		for (k = i; k-- > 0;)
			if (rec.r[k].op == TB_TEST_FENCE || is_write(&rec.r[k]))
				break;
		ck_assert_msg(k < i && rec.r[k].op == TB_TEST_FENCE,
			      "access %u: \"sleeping\" loaded after a write "
			      "with no fence between", i);
		loads++;
	}
	return loads;
}

START_TEST(test_every_store_load_handshake_has_its_fence)
{
	struct tring t;
	struct twriter a, st;
	struct treader tr;
	const struct tb_ring_hdr *h;
	unsigned i, wakes;

	tring_new(&t, 512, 4);
	h = t.r.hdr;
	twriter_new(&a, &t, WA, BID, TB_DROP);
	twriter_new(&st, &t, WB, BID, TB_STALL);
	st.w.stall_ms = 1;
	st.w.spin = TB_SPIN_MIN;
	treader_new(&tr, &t);
	tr.rd.spin = TB_SPIN_MIN;
	rec.n = 0;
	tb_test_atomic = record_atomic;
	ck_assert_int_eq(twrite(&a, "kept", 0, 0), TB_OK);
	tb_writer_record_loss(&a.w);		/* forgets it: a hand-over */
	ck_assert_int_eq(twrite(&a, "rel", 0, 0), TB_OK);
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);	/* notify */
	ck_assert_int_eq(tdrain(&tr.rd, ~0u, TB_READ_LAZY, NULL, NULL), 2);
	ck_assert(!tb_reader_wait(&tr.rd, 1));	/* the doorbell's prepare */
	for (i = 0; i < 4; i++)
		treserve(&t);
	ck_assert_int_eq(twrite(&st, "stall", 0, 0), TB_FULL);
	ck_assert_int_eq(twrite(&a, "drop", 0, 0), TB_FULL);
	tb_test_atomic = NULL;
	check_orders(&t);
	/* the reader going to sleep: "sleeping", fence, write_pos */
	ck_assert_uint_ge(check_fenced(&t.r.bell->sleeping, 1, &h->write_pos,
				       "doorbell prepare"), 1);
	/* writers waking it: hand-over, release, stall, full ring */
	wakes = check_wakes_fenced(&t);
	ck_assert_uint_ge(wakes, 4);
	/* the stalled writer: wake request, fence, read_pos */
	ck_assert_uint_ge(check_fenced(&h->wake_req, 1, &h->read_pos,
				       "stalled writer's request"), 1);
	/* the reader freeing room: read_pos, fence, wake request */
	ck_assert_uint_ge(check_fenced(&h->read_pos, ~0u, &h->wake_req,
				       "reader's wake of stalled writers"), 1);
	twriter_free(&a);
	twriter_free(&st);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

/*
 * At the moment of every publishing CAS, the chunk already holds what the
 * new count publishes: BufferID, size entries and payload bytes.  The
 * fragments published, in publication order, are the packets written.
 */
static struct {
	struct tring *t;
	const uint8_t *stream;	/* every packet, back to back */
	size_t len, at;
	unsigned checked;
} pub;

static void check_publication(const uint32_t *p, int op, uint32_t e,
			      uint32_t v, int ok, int fail)
{
	int idx = chunk_of(pub.t, p);
	uint8_t copy[512];
	struct dchunk d;
	unsigned i;

	(void)ok, (void)fail;
	if (op != TB_TEST_CAS || idx < 0 || e >> 29 != SPEC_ACQ ||
	    (v >> 29 != SPEC_CMP && v >> 29 != SPEC_ACQ))
		return;
	ck_assert_uint_le(pub.t->cs, sizeof(copy));
	memcpy(copy, tchunk(pub.t, (uint32_t)idx), pub.t->cs);
	poke32(copy, v);		/* decode as the word will be */
	decode_chunk(copy, pub.t->cs, &d);
	ck_assert(!d.malformed);
	ck_assert_uint_eq(d.bid, BID);
	for (i = e >> 16 & 0xff; i < d.n; i++) {
		ck_assert_uint_le(pub.at + d.sizes[i], pub.len);
		ck_assert_msg(!memcmp(d.frag[i], pub.stream + pub.at,
				      d.sizes[i]),
			      "fragment %u published before its bytes", i);
		pub.at += d.sizes[i];
		pub.checked++;
	}
}

START_TEST(test_publication_comes_after_the_bytes_it_publishes)
{
	static uint8_t stream[8192];
	struct tring t;
	struct twriter a;
	struct treader tr;
	size_t off = 0, len;
	unsigned i;

	tring_new(&t, 256, 8);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	for (i = 0; i < sizeof(stream); i++)
		stream[i] = (uint8_t)(i * 7 + 1);
	memset(&pub, 0, sizeof(pub));
	pub.t = &t;
	pub.stream = stream;
	tb_test_atomic = check_publication;
	for (i = 0; off < 3000; i++) {
		len = 1 + (i * 37) % 600;	/* up to three chunks */
		pub.len = off + len;
		ck_assert_int_eq(tb_writer_write_packet(&a.w, stream + off,
							len), TB_OK);
		off += len;
		ck_assert_int_ge(tdrain(&tr.rd, ~0u, TB_READ_LAZY,
						 NULL, NULL), 0);
	}
	tb_test_atomic = NULL;
	ck_assert_uint_eq(pub.at, off);
	ck_assert_uint_gt(pub.checked, i);
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * Packets, not fragments: tb_reader_drain_packets()
 */
#define PK_MAX	32
struct pkts {
	unsigned n;
	struct {
		uint16_t writer;
		uint32_t flags, len, size;
		uint8_t data[1024];
	} p[PK_MAX];
};

static void pkt_collect(void *ctx, const struct tb_packet *p)
{
	struct pkts *c = (struct pkts *)ctx;

	ck_assert_uint_lt(c->n, PK_MAX);
	ck_assert_uint_le(p->len, sizeof(c->p[0].data));
	c->p[c->n].writer = p->writer;
	c->p[c->n].flags = p->flags;
	c->p[c->n].len = p->len;
	c->p[c->n].size = p->size;
	memcpy(c->p[c->n].data, p->data, p->len);
	c->n++;
}

struct pra {
	struct tb_reassembly ra;
	uint32_t mem[4096];
};

static void pra_new(struct pra *r, unsigned open, uint32_t max,
		    enum tb_oversize o)
{
	ck_assert_uint_le(tb_reassembly_size(open, max), sizeof(r->mem));
	ck_assert_int_eq(tb_reassembly_init(&r->ra, r->mem, sizeof(r->mem),
					    open, max, o), TB_OK);
}

static int drain_pk(struct treader *tr, struct pra *r, struct pkts *c)
{
	unsigned n;
	int why = tb_reader_drain_packets(&tr->rd, &r->ra, ~0u,
					  TB_READ_SCRAPE, pkt_collect, c, &n);

	return why == TB_EPROTO ? why : (int)n;
}

/* A packet of @len bytes whose byte i is @seed + i. */
static const uint8_t *pattern(uint8_t seed, uint32_t len)
{
	static uint8_t b[4096];
	uint32_t i;

	for (i = 0; i < len; i++)
		b[i] = (uint8_t)(seed + i);
	return b;
}

static void expect_packet(const struct pkts *c, unsigned i, uint16_t writer,
			  uint8_t seed, uint32_t len, uint32_t flags)
{
	ck_assert_uint_gt(c->n, i);
	ck_assert_uint_eq(c->p[i].writer, writer);
	ck_assert_uint_eq(c->p[i].flags, flags);
	ck_assert_uint_eq(c->p[i].size, len);
	ck_assert_uint_le(c->p[i].len, len);
	ck_assert_mem_eq(c->p[i].data, pattern(seed, c->p[i].len),
			 c->p[i].len);
}

/* Writer @tw writes the first @n bytes of packet @seed/@len, ending its
 * chunk with "continues on next", and leaves the rest for later. */
static void write_head(struct twriter *tw, uint8_t seed, uint32_t len,
		       uint32_t n)
{
	struct tb_span sp;

	ck_assert_int_eq(tb_writer_open(&tw->w, n, 0, &sp), TB_OK);
	memcpy(sp.begin, pattern(seed, len), n);
	ck_assert_int_eq(tb_writer_close(&tw->w, n, TB_CLOSE_CONT_NEXT),
			 TB_OK);
}

static void write_tail(struct twriter *tw, uint8_t seed, uint32_t len,
		       uint32_t n)
{
	struct tb_span sp;

	ck_assert_int_eq(tb_writer_open(&tw->w, len - n, TB_OPEN_CONT_PREV,
					&sp), TB_OK);
	memcpy(sp.begin, pattern(seed, len) + n, len - n);
	ck_assert_int_eq(tb_writer_close(&tw->w, len - n, 0), TB_OK);
}

START_TEST(test_packets_split_over_chunks_come_out_whole)
{
	struct tring t;
	struct twriter a, b;
	struct treader tr;
	static struct pra r;
	static struct pkts c;

	tring_new(&t, 256, 8);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	twriter_new(&b, &t, WB, BID, TB_DROP);
	treader_new(&tr, &t);
	pra_new(&r, 2, 1024, TB_OVERSIZE_DROP);
	ck_assert_int_eq(tb_writer_write_packet(&a.w, pattern(1, 10), 10),
			 TB_OK);
	write_head(&a, 2, 300, 200);	/* a's packet 2 starts ... */
	ck_assert_int_eq(tb_writer_write_packet(&b.w, pattern(3, 20), 20),
			 TB_OK);
	ck_assert_int_eq(tb_writer_release(&b.w), TB_OK);
	write_tail(&a, 2, 300, 200);	/* ... and ends after b's chunk */
	ck_assert_int_eq(tb_writer_write_packet(&a.w, pattern(4, 600), 600),
			 TB_OK);	/* over three chunks */
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);
	memset(&c, 0, sizeof(c));
	ck_assert_int_gt(drain_pk(&tr, &r, &c), 0);
	ck_assert_uint_eq(c.n, 4);
	expect_packet(&c, 0, WA, 1, 10, 0);
	expect_packet(&c, 1, WB, 3, 20, 0);
	expect_packet(&c, 2, WA, 2, 300, 0);
	expect_packet(&c, 3, WA, 4, 600, 0);
	ck_assert_uint_eq(r.ra.stat[TB_PS_PACKETS], 4);
	twriter_free(&a);
	twriter_free(&b);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

/*
 * Fewer reassembly slots than writers: one slot, three writers.  Writer
 * A's two packets longer than max_packet are lost; then B's split packet
 * takes the only slot.  A's next packet still says TB_PKT_LOSS: an owed
 * flag is not a slot to evict.
 */
START_TEST(test_owed_loss_flag_survives_a_split_packet_taking_the_slot)
{
	struct tring t;
	struct twriter a, b, d;
	struct treader tr;
	static struct pra r;
	static struct pkts c;

	tring_new(&t, 256, 8);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	twriter_new(&b, &t, WB, BID, TB_DROP);
	twriter_new(&d, &t, WC, BID, TB_DROP);
	treader_new(&tr, &t);
	pra_new(&r, 1, 300, TB_OVERSIZE_DROP);
	ck_assert_int_eq(tb_writer_write_packet(&a.w, pattern(1, 400), 400),
			 TB_OK);
	ck_assert_int_eq(tb_writer_write_packet(&a.w, pattern(2, 400), 400),
			 TB_OK);
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);
	memset(&c, 0, sizeof(c));
	ck_assert_int_gt(drain_pk(&tr, &r, &c), 0);
	ck_assert_uint_eq(c.n, 0);
	ck_assert_uint_eq(r.ra.stat[TB_PS_OVERSIZE], 2);
	write_head(&b, 3, 250, 200);		/* B's packet takes the slot */
	ck_assert_int_eq(tb_writer_write_packet(&d.w, pattern(4, 20), 20),
			 TB_OK);
	ck_assert_int_eq(tb_writer_release(&d.w), TB_OK);
	ck_assert_int_gt(drain_pk(&tr, &r, &c), 0);
	write_tail(&b, 3, 250, 200);
	ck_assert_int_eq(tb_writer_release(&b.w), TB_OK);
	ck_assert_int_eq(tb_writer_write_packet(&a.w, pattern(5, 10), 10),
			 TB_OK);
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);
	ck_assert_int_gt(drain_pk(&tr, &r, &c), 0);
	ck_assert_uint_eq(c.n, 3);
	expect_packet(&c, 0, WC, 4, 20, 0);
	expect_packet(&c, 1, WB, 3, 250, 0);
	expect_packet(&c, 2, WA, 5, 10, TB_PKT_LOSS);
	ck_assert_uint_eq(r.ra.stat[TB_PS_NO_SLOT], 0);
	twriter_free(&a);
	twriter_free(&b);
	twriter_free(&d);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

/*
 * Evicting a split packet for another writer's loses it (TB_PS_NO_SLOT),
 * and its writer's next packet says so, wherever it lands.
 */
START_TEST(test_packet_evicted_from_its_slot_owes_the_loss_flag)
{
	struct tring t;
	struct twriter a, b;
	struct treader tr;
	static struct pra r;
	static struct pkts c;

	tring_new(&t, 256, 8);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	twriter_new(&b, &t, WB, BID, TB_DROP);
	treader_new(&tr, &t);
	pra_new(&r, 1, 1024, TB_OVERSIZE_DROP);
	write_head(&a, 1, 300, 200);		/* A's packet in the slot */
	write_head(&b, 2, 300, 200);		/* B's evicts it */
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);
	write_tail(&b, 2, 300, 200);
	ck_assert_int_eq(tb_writer_release(&b.w), TB_OK);
	/* A never continues: its next chunk starts afresh */
	ck_assert_int_eq(tb_writer_write_packet(&a.w, pattern(3, 10), 10),
			 TB_OK);
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);
	memset(&c, 0, sizeof(c));
	ck_assert_int_gt(drain_pk(&tr, &r, &c), 0);
	ck_assert_uint_eq(c.n, 2);
	expect_packet(&c, 0, WB, 2, 300, 0);
	expect_packet(&c, 1, WA, 3, 10, TB_PKT_LOSS);
	ck_assert_uint_eq(r.ra.stat[TB_PS_NO_SLOT], 1);
	twriter_free(&a);
	twriter_free(&b);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

/*
 * A chunk whose directory is scribbled loses the packets in it, and the
 * packet it cut: the writer's next packet carries TB_PKT_LOSS, others'
 * do not.
 */
START_TEST(test_packets_after_an_unusable_chunk_carry_the_loss)
{
	struct tring t;
	struct twriter a, b;
	struct treader tr;
	static struct pra r;
	static struct pkts c;
	uint8_t *ch;

	tring_new(&t, 256, 8);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	twriter_new(&b, &t, WB, BID, TB_DROP);
	treader_new(&tr, &t);
	pra_new(&r, 2, 1024, TB_OVERSIZE_DROP);
	ck_assert_int_eq(tb_writer_write_packet(&a.w, pattern(1, 10), 10),
			 TB_OK);
	if (_i)		/* a packet the scribbled chunk cuts, and a whole one */
		write_head(&a, 2, 300, 200);
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);	/* chunk 0 */
	if (_i)
		write_tail(&a, 2, 300, 200);
	ck_assert_int_eq(tb_writer_write_packet(&a.w, pattern(3, 20), 20),
			 TB_OK);
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);	/* chunk 1 */
	ck_assert_int_eq(tb_writer_write_packet(&b.w, pattern(4, 30), 30),
			 TB_OK);
	ck_assert_int_eq(tb_writer_release(&b.w), TB_OK);	/* chunk 2 */
	ck_assert_int_eq(tb_writer_write_packet(&a.w, pattern(5, 40), 40),
			 TB_OK);
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);	/* chunk 3 */
	ch = tchunk(&t, 1);
	ch[255] = 0xff;		/* its last size entry past the chunk */
	ch[254] = 0xff;
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(drain_pk(&tr, &r, &c), 4);
	ck_assert_uint_eq(tr.rd.stat[TB_RS_MALFORMED], 1);
	ck_assert_uint_eq(c.n, 3);
	expect_packet(&c, 0, WA, 1, 10, 0);
	expect_packet(&c, 1, WB, 4, 30, 0);
	expect_packet(&c, 2, WA, 5, 40, TB_PKT_LOSS);
	ck_assert_uint_eq(r.ra.stat[TB_PS_CUT], _i ? 1 : 0);
	twriter_free(&a);
	twriter_free(&b);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_packets_larger_than_a_slot_dropped_or_truncated)
{
	enum tb_oversize o = _i ? TB_OVERSIZE_TRUNCATE : TB_OVERSIZE_DROP;
	struct tring t;
	struct twriter a;
	struct treader tr;
	static struct pra r;
	static struct pkts c;

	tring_new(&t, 256, 8);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	pra_new(&r, 1, 400, o);
	ck_assert_int_eq(tb_writer_write_packet(&a.w, pattern(1, 700), 700),
			 TB_OK);
	ck_assert_int_eq(tb_writer_write_packet(&a.w, pattern(2, 30), 30),
			 TB_OK);
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);
	memset(&c, 0, sizeof(c));
	ck_assert_int_gt(drain_pk(&tr, &r, &c), 0);
	if (o == TB_OVERSIZE_DROP) {
		ck_assert_uint_eq(c.n, 1);
		expect_packet(&c, 0, WA, 2, 30, TB_PKT_LOSS);
		ck_assert_uint_eq(r.ra.stat[TB_PS_OVERSIZE], 1);
	} else {
		ck_assert_uint_eq(c.n, 2);
		expect_packet(&c, 0, WA, 1, 700, TB_PKT_TRUNCATED);
		ck_assert_uint_eq(c.p[0].len, 400);
		expect_packet(&c, 1, WA, 2, 30, 0);
		ck_assert_uint_eq(r.ra.stat[TB_PS_TRUNCATED], 1);
	}
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

/* A writer whose packet never gets its end: the next packet says so. */
START_TEST(test_packet_cut_by_loss_is_reported_as_loss)
{
	struct tring t;
	struct twriter a;
	struct treader tr;
	static struct pra r;
	static struct pkts c;

	tring_new(&t, 256, 8);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	pra_new(&r, 2, 1024, TB_OVERSIZE_DROP);
	write_head(&a, 1, 300, 200);
	/* the tail never comes: an unrelated packet in the next chunk */
	ck_assert_int_eq(tb_writer_write_packet(&a.w, pattern(2, 20), 20),
			 TB_OK);
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);
	memset(&c, 0, sizeof(c));
	ck_assert_int_gt(drain_pk(&tr, &r, &c), 0);
	ck_assert_uint_eq(c.n, 1);
	expect_packet(&c, 0, WA, 2, 20, TB_PKT_LOSS);
	ck_assert_uint_eq(r.ra.stat[TB_PS_CUT], 1);
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

/* The start of a packet was lost (its chunk taken by an earlier reader):
 * its tail is skipped, counted, and the next packet says so. */
START_TEST(test_packet_without_its_start_is_skipped_as_loss)
{
	uint32_t len = _i ? 600 : 400;
	struct tring t;
	struct twriter a;
	struct treader tr;
	static struct pra r;
	static struct pkts c;

	tring_new(&t, 256, 8);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	pra_new(&r, 2, 1024, TB_OVERSIZE_DROP);
	/* two chunks: the orphan ends at once; three: it is skipped */
	ck_assert_int_eq(tb_writer_write_packet(&a.w, pattern(1, len), len),
			 TB_OK);
	/* another reader took the first chunk */
	ck_assert_int_eq(tdrain(&tr.rd, 1, TB_READ_SCRAPE, NULL,
					 NULL), 1);
	ck_assert_int_eq(tb_writer_write_packet(&a.w, pattern(2, 20), 20),
			 TB_OK);
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);
	memset(&c, 0, sizeof(c));
	ck_assert_int_gt(drain_pk(&tr, &r, &c), 0);
	ck_assert_uint_eq(c.n, 1);
	expect_packet(&c, 0, WA, 2, 20, TB_PKT_LOSS);
	ck_assert_uint_eq(r.ra.stat[TB_PS_ORPHANS], 1);
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

/* The ring's own data-loss flag reaches the next packet. */
START_TEST(test_packet_after_ring_data_loss_carries_loss)
{
	struct tring t;
	struct twriter a;
	struct treader tr;
	static struct pra r;
	static struct pkts c;

	tring_new(&t, 256, 8);
	twriter_new(&a, &t, WA, BID, TB_DROP);
	treader_new(&tr, &t);
	pra_new(&r, 1, 1024, TB_OVERSIZE_DROP);
	ck_assert_int_eq(tb_writer_write_packet(&a.w, pattern(1, 20), 20),
			 TB_OK);
	tb_writer_record_loss(&a.w);
	ck_assert_int_eq(tb_writer_write_packet(&a.w, pattern(2, 20), 20),
			 TB_OK);
	ck_assert_int_eq(tb_writer_write_packet(&a.w, pattern(3, 20), 20),
			 TB_OK);
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);
	memset(&c, 0, sizeof(c));
	ck_assert_int_gt(drain_pk(&tr, &r, &c), 0);
	ck_assert_uint_eq(c.n, 3);
	expect_packet(&c, 0, WA, 1, 20, 0);
	expect_packet(&c, 1, WA, 2, 20, TB_PKT_LOSS);
	expect_packet(&c, 2, WA, 3, 20, 0);
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

/* More writers between the halves of a packet than slots: one is lost
 * and counted, the others come out whole. */
START_TEST(test_packets_with_too_few_slots_lose_and_count)
{
	struct tring t;
	struct twriter w[3];
	struct treader tr;
	static struct pra r;
	static struct pkts c;
	unsigned i, lost = 0;

	tring_new(&t, 256, 8);
	for (i = 0; i < 3; i++)
		twriter_new(&w[i], &t, (uint16_t)(20 + i), BID, TB_DROP);
	treader_new(&tr, &t);
	pra_new(&r, 2, 1024, TB_OVERSIZE_DROP);
	for (i = 0; i < 3; i++)
		write_head(&w[i], (uint8_t)i, 300, 200);
	for (i = 0; i < 3; i++) {
		write_tail(&w[i], (uint8_t)i, 300, 200);
		ck_assert_int_eq(tb_writer_release(&w[i].w), TB_OK);
	}
	memset(&c, 0, sizeof(c));
	ck_assert_int_gt(drain_pk(&tr, &r, &c), 0);
	ck_assert_uint_eq(c.n, 2);
	ck_assert_uint_eq(r.ra.stat[TB_PS_NO_SLOT], 1);
	for (i = 0; i < c.n; i++) {
		unsigned k = c.p[i].writer - 20u;

		expect_packet(&c, i, (uint16_t)(20 + k), (uint8_t)k, 300, 0);
	}
	lost = r.ra.stat[TB_PS_NO_SLOT] + r.ra.stat[TB_PS_ORPHANS];
	ck_assert_uint_ge(lost, 1);
	for (i = 0; i < 3; i++)
		twriter_free(&w[i]);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

START_TEST(test_reassembly_init_rejects_bad_memory)
{
	static struct pra r;

	ck_assert_uint_eq(tb_reassembly_size(0, 100), 0);
	ck_assert_uint_eq(tb_reassembly_size(1, 0), 0);
	ck_assert_uint_eq(tb_reassembly_size(~0u, ~0u), 0);
	/* memory gets the ring's codes: too short, misaligned */
	ck_assert_int_eq(tb_reassembly_init(&r.ra, r.mem, 10, 1, 100,
					    TB_OVERSIZE_DROP), TB_ESHORT);
	ck_assert_int_eq(tb_reassembly_init(&r.ra, r.mem,
					    tb_reassembly_size(1, 100) - 1, 1,
					    100, TB_OVERSIZE_DROP), TB_ESHORT);
	ck_assert_int_eq(tb_reassembly_init(&r.ra, (uint8_t *)r.mem + 1,
					    sizeof(r.mem) - 1, 1, 100,
					    TB_OVERSIZE_DROP), TB_EALIGN);
	ck_assert_int_eq(tb_reassembly_init(&r.ra, r.mem, 10, 0, 100,
					    TB_OVERSIZE_DROP), TB_EINVAL);
	ck_assert_int_eq(tb_reassembly_init(&r.ra, r.mem,
					    tb_reassembly_size(1, 100), 1,
					    100, TB_OVERSIZE_DROP), TB_OK);
	ck_assert_int_eq(tb_reassembly_init(&r.ra, NULL, 1000, 1, 100,
					    TB_OVERSIZE_DROP), TB_EINVAL);
	ck_assert_int_eq(tb_reassembly_init(&r.ra, r.mem, sizeof(r.mem), 1,
					    100, (enum tb_oversize)7),
			 TB_EINVAL);
}
END_TEST

static Suite *packet_suite(void)
{
	Suite *s = suite_create("tbring packets");
	TCase *tc = tcase_create("packets");

	tcase_add_test(tc, test_packets_split_over_chunks_come_out_whole);

	tcase_add_loop_test(tc,

		test_packets_after_an_unusable_chunk_carry_the_loss, 0, 2);
	tcase_add_loop_test(tc,
			    test_packets_larger_than_a_slot_dropped_or_truncated,
			    0, 2);
	tcase_add_test(tc, test_packet_cut_by_loss_is_reported_as_loss);
	tcase_add_loop_test(tc, test_packet_without_its_start_is_skipped_as_loss,
			    0, 2);
	tcase_add_test(tc, test_packet_after_ring_data_loss_carries_loss);
	tcase_add_test(tc, test_packets_with_too_few_slots_lose_and_count);
	tcase_add_test(tc, test_reassembly_init_rejects_bad_memory);
	tcase_add_test(tc,
		test_owed_loss_flag_survives_a_split_packet_taking_the_slot);
	tcase_add_test(tc,
		test_packet_evicted_from_its_slot_owes_the_loss_flag);
	suite_add_tcase(s, tc);
	return s;
}

static Suite *abi_suite(void)
{
	Suite *s = suite_create("tbring abi");
	TCase *tc = tcase_create("abi");

	tcase_add_test(tc, test_state_words_are_the_spec_hex_values);
	tcase_add_test(tc, test_data_bearing_fields_round_trip);
	tcase_add_test(tc, test_free_word_carries_only_the_wrap_count);
	tcase_add_test(tc, test_with_state_changes_only_bits_31_to_29);
	tcase_add_test(tc, test_reserved_states_decode_as_5_6_7);
	tcase_add_test(tc, test_chunk_index_and_wrap_table_for_4_chunks);
	tcase_add_test(tc, test_chunk_index_and_wrap_for_several_ring_sizes);
	tcase_add_test(tc, test_distance_is_exact_across_cursor_rollover);
	tcase_add_test(tc, test_next_wrap_is_computed_from_the_position);
	tcase_add_test(tc, test_wrap_identity_repeats_after_documented_period);
	tcase_add_test(tc, test_ring_wrap_helpers_match_position_arithmetic);
	suite_add_tcase(s, tc);
	return s;
}

static Suite *geometry_suite(void)
{
	Suite *s = suite_create("tbring geometry");
	TCase *tc = tcase_create("geometry");

	tcase_add_test(tc, test_ring_size_rejects_illegal_geometry);
	tcase_add_test(tc, test_ring_size_accepts_every_legal_geometry);
	tcase_add_test(tc, test_init_accepts_each_legal_chunk_size);
	tcase_add_test(tc, test_init_rejects_bad_memory_and_geometry);
	tcase_add_test(tc, test_init_and_attach_refuse_memory_not_line_aligned);
	tcase_add_test(tc, test_control_header_offsets_are_the_abi);
	tcase_add_test(tc, test_counter_slots_are_the_abi);
	tcase_add_test(tc,
		test_fresh_zero_mapping_is_free_for_wrap_zero_everywhere);
	tcase_add_test(tc, test_stats_name_the_writers_holding_chunks);
	tcase_add_test(tc, test_init_makes_no_stamping_pass_over_chunks);
	tcase_add_test(tc, test_chunk_state_words_are_naturally_aligned);
	tcase_add_test(tc, test_attach_validates_header_as_untrusted);
	tcase_add_test(tc,
		test_attach_second_mapping_of_same_memfd_at_other_address);
	suite_add_tcase(s, tc);
	return s;
}

static Suite *transition_suite(void)
{
	Suite *s = suite_create("tbring transitions");
	TCase *tc = tcase_create("transitions");

	tcase_add_test(tc, test_reserve_hands_out_consecutive_tickets_until_full);
	tcase_add_test(tc, test_capacity_follows_read_pos);
	tcase_add_test(tc,
		test_reserve_is_full_at_distance_num_chunks_across_rollover);
	tcase_add_loop_test(tc,
			    test_reserve_is_not_full_when_reader_passes_between_loads,
			    0, 2);
	tcase_add_test(tc, test_claim_moves_free_for_reserved_wrap_to_acquired);
	tcase_add_test(tc, test_claim_expects_only_its_own_wrap);
	tcase_add_test(tc, test_publish_moves_acquired_to_complete);
	tcase_add_test(tc, test_publish_can_extend_acquired_count);
	tcase_add_test(tc, test_reuse_moves_complete_to_acquired_keeping_fields);
	tcase_add_test(tc, test_mark_rewrite_keeps_every_other_field);
	tcase_add_test(tc, test_acknowledge_writes_the_exact_acknowledged_word);
	tcase_add_test(tc, test_advance_unclaimed_stamps_next_wrap_of_position);
	tcase_add_test(tc, test_reclaim_complete_stamps_next_wrap);
	tcase_add_test(tc, test_reclaim_acknowledged_stamps_next_wrap);
	tcase_add_test(tc,
		test_reclaim_stamps_next_wrap_across_cursor_rollover);
	tcase_add_test(tc, test_every_atomic_access_follows_the_ordering_table);
	tcase_add_test(tc, test_every_store_load_handshake_has_its_fence);
	tcase_add_test(tc, test_publication_comes_after_the_bytes_it_publishes);
	tcase_add_test(tc, test_no_writer_transition_produces_a_free_word);
	tcase_add_test(tc,
		test_steps_given_wrong_state_fail_without_touching_memory);
	tcase_add_test(tc, test_stale_claim_fails_after_reader_advanced_wrap);
	tcase_add_test(tc,
		test_two_stale_claimants_cannot_adopt_the_returned_word);
	tcase_add_test(tc,
		test_init_at_stamps_first_position_mapping_to_each_chunk);
	tcase_add_test(tc, test_identity_limit_is_period_minus_num_chunks);
	tcase_add_test(tc, test_writer_and_reader_across_cursor_rollover);
	suite_add_tcase(s, tc);
	return s;
}

static Suite *race_suite(void)
{
	Suite *s = suite_create("tbring races and scenarios");
	TCase *tc = tcase_create("races");

	tcase_add_test(tc,
		test_claim_beats_advance_reader_redispatches_on_acquired);
	tcase_add_test(tc, test_advance_beats_claim_position_becomes_hole);
	tcase_add_test(tc,
		test_publish_beats_scrape_reader_discards_speculative_copy);
	tcase_add_test(tc,
		test_scrape_beats_publish_writer_relocates_only_suffix);
	tcase_add_loop_test(tc,
			    test_writer_relocates_a_suffix_at_most_8_times_in_a_row,
			    0, 2);
	tcase_add_test(tc, test_reuse_beats_consume_reader_follows_scrape_path);
	tcase_add_test(tc, test_consume_beats_reuse_writer_drops_cached_handle);
	tcase_add_test(tc, test_delayed_writer_cannot_publish_behind_reader_2_1);
	tcase_add_test(tc,
		test_reserved_position_resolved_before_claim_is_a_hole_2_2);
	suite_add_tcase(s, tc);
	return s;
}

static Suite *reader_suite(void)
{
	Suite *s = suite_create("tbring reader");
	TCase *tc = tcase_create("reader");

	tcase_add_test(tc, test_reader_nodata_when_nothing_reserved);
	tcase_add_test(tc, test_reader_counts_each_outcome_in_its_slot);
	tcase_add_test(tc, test_reader_emits_complete_chunk_and_reclaims_it);
	tcase_add_test(tc,
		test_reader_skips_unclaimed_position_and_advances_free_tag);
	tcase_add_test(tc, test_reader_leaves_rewrite_requested_alone);
	tcase_add_test(tc, test_reader_reclaims_acknowledged_as_hole);
	tcase_add_test(tc, test_reader_complete_with_zero_fragments_is_a_hole);
	tcase_add_test(tc, test_reader_marks_acquired_with_zero_fragments);
	tcase_add_test(tc,
		test_reader_malformed_directory_dropped_but_transition_done);
	tcase_add_test(tc,
		test_reader_unknown_format_transitions_without_reading);
	tcase_add_test(tc, test_reader_scrapes_published_prefix_of_acquired);
	tcase_add_test(tc, test_reader_retry_later_when_every_cas_loses);
	tcase_add_test(tc, test_reader_eproto_on_mismatched_free_tag);
	tcase_add_test(tc, test_reader_eproto_on_reserved_states_5_6_7);
	tcase_add_test(tc,
		test_reader_eproto_on_acknowledged_with_nonzero_low_bits);
	tcase_add_test(tc, test_reader_eproto_on_write_pos_beyond_num_chunks);
	tcase_add_test(tc, test_lazy_reader_pending_before_acquired_chunk);
	tcase_add_test(tc, test_lazy_reader_scrapes_once_under_pressure);
	tcase_add_test(tc, test_dead_writer_pins_its_chunk_counted_every_lap);
	tcase_add_test(tc, test_every_chunk_pinned_is_reported_not_silent);
	tcase_add_test(tc, test_drain_reports_count_and_reason_apart);
	tcase_add_test(tc, test_read_one_publishes_read_pos);
	tcase_add_test(tc, test_new_reader_continues_where_the_old_one_returned);
	tcase_add_test(tc, test_reader_killed_in_a_pass_new_reader_continues);
	tcase_add_test(tc,
		test_reader_killed_before_its_read_pos_store_stops_the_next);
	tcase_add_test(tc,
		test_reader_restart_after_a_scrape_counts_no_pinned_hole);
	suite_add_tcase(s, tc);
	return s;
}

static Suite *writer_suite(void)
{
	Suite *s = suite_create("tbring writer");
	TCase *tc = tcase_create("writer");

	tcase_add_test(tc, test_writer_payload_up_sizes_down);
	tcase_add_test(tc, test_writer_fragment_sizes_at_interesting_boundaries);
	tcase_add_test(tc, test_writer_reuses_its_own_complete_chunk);
	tcase_add_test(tc, test_writer_reuse_lost_to_reader_takes_a_new_chunk);
	tcase_add_test(tc, test_writer_never_reuses_chunk_with_continues_on_next);
	tcase_add_test(tc, test_writer_never_reuses_n_chunk_for_unrelated_packet);
	tcase_add_test(tc, test_writer_continuation_always_starts_a_chunk);
	tcase_add_test(tc, test_writer_packet_split_sets_continuation_flags);
	tcase_add_test(tc, test_writer_data_loss_on_next_claimed_chunk_only_once);
	tcase_add_test(tc, test_writer_full_under_drop_policy_keeps_write_pos);
	tcase_add_loop_test(tc,
		test_idle_writer_writes_again_after_any_number_of_positions,
		0, 2 * NIDLE);
	tcase_add_test(tc, test_idle_stalling_writer_returns_while_others_write);
	tcase_add_test(tc, test_writer_no_chunk_when_chunks_pinned);
	tcase_add_test(tc,
		test_writer_holes_take_precedence_over_full_even_under_stall);
	tcase_add_test(tc, test_writer_too_large_reserves_nothing);
	tcase_add_test(tc, test_writer_largest_fragment_fits_exactly);
	tcase_add_test(tc, test_writer_255_fragments_then_new_chunk);
	tcase_add_test(tc,
		test_writer_release_publishes_closed_and_abandons_open);
	tcase_add_test(tc, test_writer_publish_lost_to_foreign_word_is_eproto);
	tcase_add_test(tc, test_writer_lost_claim_burns_position_and_moves_on);
	tcase_add_test(tc, test_burned_position_rings_the_doorbell);
	tcase_add_test(tc, test_writer_room_is_what_the_next_fragment_could_take);
	tcase_add_test(tc, test_handover_wakes_a_sleeping_reader_at_three_quarters);
	tcase_add_test(tc,
		test_handover_to_a_reader_that_is_not_asleep_makes_no_call);
	tcase_add_test(tc, test_reuse_keeps_the_reader_asleep_release_wakes_it);
	tcase_add_test(tc,
		test_full_ring_of_kept_chunks_wakes_the_sleeping_reader);
	tcase_add_test(tc, test_writer_stall_wakes_when_reader_drains);
	tcase_add_test(tc, test_waiting_reader_spins_through_a_new_reservation);
	tcase_add_test(tc, test_waiting_reader_does_not_spin_with_work_left);
	tcase_add_test(tc, test_reader_spins_only_where_its_sleeps_let_the_ring_fill);
	tcase_add_test(tc, test_reader_waits_a_sleep_for_the_writers_it_woke);
	tcase_add_test(tc, test_reader_stays_idle_while_a_writer_adds_to_its_held_chunk);
	tcase_add_test(tc, test_stalled_writer_spins_through_a_drain);
	tcase_add_test(tc, test_writer_that_stalls_again_yields_before_it_sleeps);
	tcase_add_test(tc,
		test_spin_budget_doubles_on_a_hit_and_halves_on_a_miss);
	tcase_add_test(tc, test_reader_wakes_sleeping_writers_once_per_request);
	tcase_add_test(tc,
		test_writer_whose_request_was_served_early_does_not_sleep);
	tcase_add_test(tc, test_stalled_writer_wakes_the_sleeping_reader);
	tcase_add_test(tc,
		test_writer_stall_times_out_to_full_when_nobody_drains);
	tcase_set_timeout(tc, 60);	/* catches a hang, not slowness */
	suite_add_tcase(s, tc);
	return s;
}

static Suite *relocation_suite(void)
{
	Suite *s = suite_create("tbring relocation");
	TCase *tc = tcase_create("relocation");

	tcase_add_test(tc,
		test_scrape_with_published_prefix_moves_suffix_to_replacement);
	tcase_add_test(tc, test_published_prefix_never_moves_during_relocation);
	tcase_add_test(tc, test_scrape_with_no_published_prefix_carries_flags);
	tcase_add_test(tc,
		test_scrape_with_nothing_unpublished_acknowledges_on_release);
	tcase_add_test(tc, test_open_fragment_relocated_by_sync_keeps_writing);
	tcase_add_test(tc,
	    test_open_fragment_relocated_by_sync_without_prefix_carries_flags);
	tcase_add_test(tc,
		test_relocation_without_capacity_drops_and_acknowledges);
	tcase_add_test(tc, test_sync_without_capacity_drops_open_fragment);
	tcase_add_test(tc,
		test_relocating_writer_under_stall_waits_for_capacity);
	tcase_add_test(tc,
		test_continues_on_next_set_on_relocated_tail_not_prefix);
	tcase_add_test(tc, test_relocated_replacement_is_not_reused);
	tcase_add_test(tc, test_relocated_open_fragment_can_be_scraped_again);
	tcase_add_test(tc, test_sync_rejects_bad_calls);
	tcase_add_test(tc, test_writer_misuse_gets_a_code_per_cause);
	tcase_add_test(tc, test_open_and_close_flags_swapped_are_refused);
	tcase_set_timeout(tc, 60);	/* catches a hang, not slowness */
	suite_add_tcase(s, tc);
	return s;
}

static Suite *hostile_suite(void)
{
	Suite *s = suite_create("tbring hostile memory");
	TCase *tc = tcase_create("hostile");

	tcase_add_test(tc, test_hostile_state_words_and_cursors_reader_survives);
	tcase_add_test(tc,
		test_hostile_directory_rejected_as_malformed_without_oob);
	tcase_add_loop_test(tc,
		test_writer_positions_only_grow_when_write_pos_goes_back, 0,
		(int)(sizeof(floor_bases) / sizeof(floor_bases[0])));
	tcase_add_test(tc, test_writer_floor_holds_when_read_pos_goes_back_too);
	tcase_add_test(tc,
		test_writer_mends_write_pos_put_back_behind_read_pos);
	tcase_add_loop_test(tc, test_writer_floor_holds_a_whole_ring_behind,
		0, (int)(sizeof(floor_bases) / sizeof(floor_bases[0])));
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(abi_suite());
	int failed;

	srunner_add_suite(sr, geometry_suite());
	srunner_add_suite(sr, transition_suite());
	srunner_add_suite(sr, race_suite());
	srunner_add_suite(sr, reader_suite());
	srunner_add_suite(sr, writer_suite());
	srunner_add_suite(sr, relocation_suite());
	srunner_add_suite(sr, hostile_suite());
	srunner_add_suite(sr, packet_suite());
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
