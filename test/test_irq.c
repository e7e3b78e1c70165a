/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_irq.c - a writer in an interrupt handler never waits: with
 * TB_IN_INTERRUPT() true, a TB_STALL writer on a full ring gets TB_FULL
 * at once, without spinning or calling the platform's wait; outside one
 * the same writer stalls (the control).  The check itself is overridden
 * here, as a vendor would; on Cortex-M it reads IPSR (the firmware
 * example tests that one under QEMU).
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

static int in_irq;
static unsigned waits, wakes;

static int test_wait(uint32_t *word, uint32_t val, uint32_t timeout_ms)
{
	(void)word, (void)val, (void)timeout_ms;
	waits++;
	return 0;		/* timed out */
}

static void test_wake(uint32_t *word)
{
	(void)word;
	wakes++;
}

#define TB_IN_INTERRUPT()	(in_irq != 0)
#define TB_WAIT_HOOK(w, v, ms)	test_wait((w), (v), (ms))
#define TB_WAKE_HOOK(w)		test_wake(w)
#include "tbring.h"

struct full_ring {
	void *mem;
	struct tb_ring r;
	struct tb_writer filler, stall;
	uint8_t s1[256], s2[256];
};

/* Two 256-byte chunks, both taken by a TB_DROP writer: the ring is full. */
static void full_ring_new(struct full_ring *f)
{
	static const uint8_t pkt[200];
	size_t len = tb_ring_size(256, 2);
	int n = 0;

	/* zeroed, aligned to TB_RING_LINE as tb_ring_init() requires */
	ck_assert_int_eq(posix_memalign(&f->mem, TB_RING_LINE, len), 0);
	memset(f->mem, 0, len);
	ck_assert_ptr_nonnull(f->mem);
	ck_assert_int_eq(tb_ring_init(&f->r, f->mem, len, 256, 2), TB_OK);
	ck_assert_int_eq(tb_writer_init(&f->filler, &f->r, 1, 0, TB_DROP,
					f->s1), TB_OK);
	ck_assert_int_eq(tb_writer_init(&f->stall, &f->r, 2, 0, TB_STALL,
					f->s2), TB_OK);
	f->stall.stall_ms = 1;
	while (tb_writer_write_packet(&f->filler, pkt, sizeof(pkt)) == TB_OK)
		ck_assert_int_lt(++n, 10);
	ck_assert_int_eq(n, 2);
	waits = wakes = 0;
}

static uint32_t wstat(const struct full_ring *f, enum tb_wstat s)
{
	return f->r.hdr->wstat[s];
}

START_TEST(test_stall_writer_in_interrupt_gets_full_at_once)
{
	struct full_ring f;

	full_ring_new(&f);
	in_irq = 1;
	ck_assert_int_eq(tb_writer_write_packet(&f.stall, "irq", 3), TB_FULL);
	in_irq = 0;
	ck_assert_uint_eq(waits, 0);	/* never waited */
	ck_assert_uint_eq(wstat(&f, TB_WS_STALLS), 0);	/* nor spun */
	ck_assert_uint_eq(wstat(&f, TB_WS_FULL), 2);	/* filler's, this */
	free(f.mem);
}
END_TEST

START_TEST(test_stall_writer_outside_interrupt_waits)
{
	struct full_ring f;

	full_ring_new(&f);
	ck_assert_int_eq(tb_writer_write_packet(&f.stall, "thr", 3), TB_FULL);
	ck_assert_uint_eq(waits, 1);	/* slept once, timed out */
	ck_assert_uint_eq(wstat(&f, TB_WS_STALLS), 1);
	free(f.mem);
}
END_TEST

/*
 * Four chunks; each 200-byte packet takes a chunk of its own.  The writer
 * with a headroom of 2 gets two chunks and is refused while two are
 * free; the one without takes those two.
 */
START_TEST(test_headroom_leaves_the_last_chunks_to_the_others)
{
	static const uint8_t pkt[200];
	static uint8_t s1[256], s2[256], sr[256];
	size_t len = tb_ring_size(256, 4);
	struct tb_ring r;
	struct tb_writer irq, loop;
	struct tb_reader rd;
	void *mem;
	int n = 0;

	ck_assert_int_eq(posix_memalign(&mem, TB_RING_LINE, len), 0);
	memset(mem, 0, len);
	ck_assert_int_eq(tb_ring_init(&r, mem, len, 256, 4), TB_OK);
	ck_assert_int_eq(tb_writer_init(&irq, &r, 1, 0, TB_STALL, s1), TB_OK);
	ck_assert_int_eq(tb_writer_init(&loop, &r, 2, 0, TB_DROP, s2), TB_OK);
	ck_assert_int_eq(tb_reader_init(&rd, &r, sr), TB_OK);
	ck_assert_int_eq(tb_writer_set_headroom(&irq, 4), TB_EINVAL);
	ck_assert_int_eq(tb_writer_set_headroom(&irq, 2), TB_OK);
	in_irq = 1;
	while (tb_writer_write_packet(&irq, pkt, sizeof(pkt)) == TB_OK)
		ck_assert_int_lt(++n, 10);
	ck_assert_int_eq(n, 2);			/* two chunks, two left */
	ck_assert_uint_eq(waits, 0);		/* refused at once */
	n = 0;
	while (tb_writer_write_packet(&loop, pkt, sizeof(pkt)) == TB_OK)
		ck_assert_int_lt(++n, 10);
	ck_assert_int_eq(n, 2);			/* the two it left */
	/* the reader frees what is complete: room again, above the line */
	tb_writer_release(&irq);
	tb_writer_release(&loop);
	tb_reader_drain(&rd, 4, TB_READ_LAZY, NULL, NULL, NULL);
	ck_assert_int_eq(tb_writer_write_packet(&irq, pkt, sizeof(pkt)),
			 TB_OK);
	in_irq = 0;
	free(mem);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("irq");
	TCase *tc = tcase_create("stall");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_stall_writer_in_interrupt_gets_full_at_once);
	tcase_add_test(tc, test_stall_writer_outside_interrupt_waits);
	tcase_add_test(tc, test_headroom_leaves_the_last_chunks_to_the_others);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
