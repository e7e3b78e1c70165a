/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench.h - instructions per event on the target (FW_BENCH builds;
 * part of fw.c).  Run under QEMU with -icount shift=0: each guest
 * instruction then takes 1 ns of guest time, and SysTick, clocked at
 * CPU_HZ, counts once every 10^9 / CPU_HZ instructions.  Each case writes
 * FW_BENCH_N events between two reads of the free-running counter, the
 * ring drained (lazily: the writer keeps its chunk) between batches;
 * the first batch warms up (interning, descriptors) and is not counted,
 * and a batch of empty loop iterations is subtracted.  Chunk claims and
 * hand-overs are inside the batches, as in real use.
 */
#define FW_BENCH_N	16
#define FW_BENCH_ROUNDS	64

static void bench_discard(void *ctx, const struct tb_chunk_view *v)
{
	(void)ctx, (void)v;
}

static const uint8_t bench_pkt[16];

#ifdef FW_BENCH_ONLY
/*
 * FW_BENCH_ONLY=K (profile.sh): case K only (0: the empty loop), and
 * profile.sh counts the instructions between these two calls in QEMU's
 * instruction trace: its timed loops and nothing else.
 */
static volatile uint32_t fw_prof_state;

static __attribute__((noinline)) void fw_prof_on(void)
{
	fw_prof_state = 1;
}

static __attribute__((noinline)) void fw_prof_off(void)
{
	fw_prof_state = 0;
}
#define FW_PROF(on)	((on) ? fw_prof_on() : fw_prof_off())
#else
#define FW_PROF(on)	((void)0)
#define FW_BENCH_ONLY	(-1)
#endif

static uint32_t bench_case(int kind)
{
	uint32_t total = 0, c0, c1, r, i;

	for (r = 0; r <= FW_BENCH_ROUNDS; r++) {
		tb_reader_drain(&rd, FW_NCHUNKS, TB_READ_LAZY, bench_discard,
				NULL, NULL);
		if (r && kind == FW_BENCH_ONLY)
			FW_PROF(1);
		c0 = board_counter();
		for (i = 0; i < FW_BENCH_N; i++) {
			switch (kind) {
			case 0:
				__asm__ __volatile__("" ::: "memory");
				break;
			case 1:
				TB_TRACE_BEGIN_W(&main_ev, &cat_fw, "slice");
				TB_TRACE_END_W(&main_ev, &cat_fw);
				break;
			case 2:
				TB_TRACE_BEGIN_W(&main_ev, &cat_fw, "slice",
						 TB_ARG_UINT("seq", i));
				TB_TRACE_END_W(&main_ev, &cat_fw);
				break;
			case 3:
				TB_TRACE_INSTANT_W(&main_ev, &cat_fw, "mark");
				break;
			case 4:
				TB_TRACE_INSTANT_W(&main_ev, &cat_fw, "mark",
						   TB_ARG_UINT("seq", i));
				break;
			case 5:
				TB_TRACE_COUNTER_W(&main_ev, &cat_fw, &t_count,
						   i);
				break;
			case 6:
				tb_writer_write_packet(&main_w, bench_pkt,
						       sizeof(bench_pkt));
				break;
			}
		}
		c1 = board_counter();
		if (r && kind == FW_BENCH_ONLY)
			FW_PROF(0);
		if (r)
			total += c1 - c0;
	}
	return total;
}

static int fw_bench(void)
{
	static const char *const names[] = {
		"", "slice begin+end (the pair)",
		"slice begin+end (the pair), 1 annotation",
		"instant", "instant, 1 annotation", "counter",
		"ring writer alone: a 16-byte packet",
	};
	uint32_t base, t, per10;
	char line[96], *s;
	const char *p;
	int k;

	base = bench_case(0);
	for (k = 1; k < 7; k++) {
		if (FW_BENCH_ONLY >= 0 && k != FW_BENCH_ONLY)
			continue;	/* profile.sh: one case, profiled */
		t = bench_case(k);
		/* tenths of an instruction per event */
		per10 = (uint32_t)((uint64_t)(t > base ? t - base : 0) *
				   10000000000u / BOARD_COUNTER_HZ /
				   (FW_BENCH_ROUNDS * FW_BENCH_N));
		s = line;
		for (p = "fw: bench " BOARD_NAME " "; *p; )
			*s++ = *p++;
		for (p = names[k]; *p; )
			*s++ = *p++;
		*s++ = ':';
		*s++ = ' ';
		s = fmt_u32(s, per10 / 10);
		*s++ = '.';
		s = fmt_u32(s, per10 % 10);
		for (p = " instructions\n"; *p; )
			*s++ = *p++;
		*s = 0;
		board_puts(line);
	}
	return main_ev.stats.lost ? 5 : 0;
}
