/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rmw.h - FW_RMW builds (part of fw.c): tbsync.h's read-modify-writes
 * against an interrupt that lands between their load and their store.
 *
 * The main loop increments one word through tb_atomic_add() and through
 * a tb_atomic_load() + tb_atomic_cas() loop, RMW_ITERS times each, with
 * a few instructions of padding that change from one iteration to the
 * next; a fast tick (RMW_HZ) adds 1 to the same word each time.  Under
 * QEMU -icount the tick lands at the same instructions every run, and
 * over the iterations at every instruction of both functions.  At the
 * end the word must be the sum of all the increments: "lost" says how
 * many vanished.  The tick also counts where it struck (board_irq_pc):
 * "hist_add" and "hist_cas" list, per instruction of rmw_add() and
 * rmw_cas() (byte offsets), how many times; make firmware-e2e maps them
 * onto the disassembly, to show the tick landing inside the load-store
 * window (ldrex/strex: the store fails and the loop retries) or held off
 * until the end of the masked one (TB_ATOMIC_MASK), and, built with the
 * mask compiled out, landing inside it and losing increments.
 */
#define RMW_HZ		40000u
#define RMW_ITERS	20000u
#define RMW_SPAN	64u	/* bytes of each function followed */

static uint32_t rmw_word;
static volatile uint32_t rmw_ticks;
static uint16_t rmw_hist[2][RMW_SPAN / 2];

__attribute__((noinline)) static void rmw_add(void)
{
	tb_atomic_add(&rmw_word, 1);
}

__attribute__((noinline)) static void rmw_cas(void)
{
	uint32_t v = tb_atomic_load(&rmw_word, TB_RLX);

	while (!tb_atomic_cas(&rmw_word, &v, v + 1, TB_RLX, TB_RLX))
		;
}

static void rmw_where(int k, uintptr_t fn, uint32_t pc)
{
	uint32_t off = pc - (uint32_t)(fn & ~(uintptr_t)1);	/* Thumb bit */

	if (off < RMW_SPAN)
		rmw_hist[k][off / 2]++;
}

static void rmw_tick(void)
{
	rmw_where(0, (uintptr_t)rmw_add, board_irq_pc);
	rmw_where(1, (uintptr_t)rmw_cas, board_irq_pc);
	tb_atomic_add(&rmw_word, 1);
	rmw_ticks++;
}

/* " KEY=off:n,off:n" for each offset the tick struck */
static char *rmw_fmt_hist(char *s, const char *key, const uint16_t *h)
{
	uint32_t i, first = 1;

	*s++ = ' ';
	while (*key)
		*s++ = *key++;
	*s++ = '=';
	for (i = 0; i < RMW_SPAN / 2; i++) {
		if (!h[i])
			continue;
		if (!first)
			*s++ = ',';
		first = 0;
		s = fmt_u32(s, i * 2);
		*s++ = ':';
		s = fmt_u32(s, h[i]);
	}
	return s;
}

static int fw_rmw(void)
{
	static char line[640];
	char *s = line;
	const char *p;
	uint32_t i, lost;

	board_tick_start(RMW_HZ, rmw_tick);
	for (i = 0; i < RMW_ITERS; i++) {
		spin(i % 7);
		rmw_add();
		spin(i % 5);
		rmw_cas();
	}
	board_tick_stop();
	lost = 2 * RMW_ITERS + rmw_ticks - rmw_word;
	for (p = "fw: " BOARD_NAME " rmw"; *p; )
		*s++ = *p++;
	s = fmt_kv(s, "main", 2 * RMW_ITERS);
	s = fmt_kv(s, "ticks", rmw_ticks);
	s = fmt_kv(s, "word", rmw_word);
	s = fmt_kv(s, "lost", lost);
	s = fmt_kv(s, "masked", TB_ATOMIC_MASK);
	s = rmw_fmt_hist(s, "hist_add", rmw_hist[0]);
	s = rmw_fmt_hist(s, "hist_cas", rmw_hist[1]);
	*s++ = '\n';
	*s = 0;
	board_puts(line);
	return lost ? 6 : 0;
}
