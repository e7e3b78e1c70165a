/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench.h - instructions per context switch (FR_BENCH builds; part of
 * main.c), with the hooks and, built with FR_NO_TRACE, without them.
 * Run under QEMU with -icount shift=0: one instruction per nanosecond of
 * guest time, which the clock (SysTick) reads.  Two tasks at one
 * priority hand the CPU back and forth FR_BENCH_N times per batch:
 *   yield      taskYIELD(): each switch leaves a task ready (R)
 *   semaphore  each gives the other's semaphore and blocks on its own:
 *              each switch also wakes a task and names what the other
 *              blocked on (S, "semaphore")
 * and a batch of interrupt slices (traceISR_ENTER/EXIT's functions,
 * called with interrupts masked); the ring is emptied between batches
 * (outside the count), the first batch warms up.
 */
#if FR_NCHUNKS < 32		/* a batch's events fit the ring */
#define FR_BENCH_N	4
#define FR_BENCH_ROUNDS	256
#else
#define FR_BENCH_N	32
#define FR_BENCH_ROUNDS	32
#endif

#ifndef FR_NO_TRACE
uint8_t fr_ring_mem[TB_RING_SIZE(FR_CHUNK, FR_NCHUNKS)] TB_RING_ALIGNED;
TB_RTOS_DEFINE(4);
static struct tb_ring ring;
static struct tb_reader rd;
static uint8_t rd_scratch[FR_CHUNK];
static const struct tb_ev_clock fr_clock = {
	fr_now, NULL, TB_CLOCK_USER + 1, TB_CLOCK_BOOTTIME, fr_now
};

static void bench_discard(void *ctx, const struct tb_chunk_view *v)
{
	(void)ctx, (void)v;
}

static void bench_drain(void)
{
	while (tb_reader_drain(&rd, FR_NCHUNKS, TB_READ_LAZY, bench_discard,
			       NULL, NULL) == TB_LIMIT)
		;
}
#else
static void bench_drain(void)
{
}
#endif

static SemaphoreHandle_t sem_a, sem_b;
static volatile int bench_mode;		/* 0 yield, 1 semaphore */

static void fr_fault_report(void)
{
}

static void bench_line(const char *what, uint64_t ns, uint32_t n)
{
	char line[160], *s = fmt_str(line, "fr: bench " BOARD_NAME " ");
	uint64_t per10 = ns * 10 / n;

	s = fmt_str(s, what);
	s = fmt_str(s, ": ");
	s = fmt_u64(s, per10 / 10);
	*s++ = '.';
	s = fmt_u64(s, per10 % 10);
	line_end(line, fmt_str(s, " instructions"));
}

/* The partner: hands the CPU back, one way or the other. */
static void partner(void *arg)
{
	(void)arg;
	for (;;) {
		if (bench_mode) {
			xSemaphoreTake(sem_b, portMAX_DELAY);
			xSemaphoreGive(sem_a);
		} else {
			taskYIELD();
		}
	}
}

/* FR_BENCH_ROUNDS batches of 2 * FR_BENCH_N switches; ns per switch. */
static uint64_t bench_switches(int mode)
{
	uint64_t total = 0, t0;
	uint32_t r, i;

	bench_mode = mode;
	for (r = 0; r <= FR_BENCH_ROUNDS; r++) {
		bench_drain();
		t0 = fr_now(NULL);
		for (i = 0; i < FR_BENCH_N; i++) {
			if (mode) {
				xSemaphoreGive(sem_b);
				xSemaphoreTake(sem_a, portMAX_DELAY);
			} else {
				taskYIELD();
			}
		}
		if (r)
			total += fr_now(NULL) - t0;
	}
	return total;
}

#ifndef FR_NO_TRACE
static uint64_t bench_isrs(void)
{
	uint64_t total = 0, t0;
	uint32_t r, i;

	for (r = 0; r <= FR_BENCH_ROUNDS; r++) {
		bench_drain();
		taskDISABLE_INTERRUPTS();
		t0 = fr_now(NULL);
		for (i = 0; i < FR_BENCH_N; i++) {
			tb_rtos_isr_enter();
			tb_rtos_isr_exit();
		}
		if (r)
			total += fr_now(NULL) - t0;
		taskENABLE_INTERRUPTS();
	}
	return total;
}
#endif

static void bencher(void *arg)
{
	const uint32_t n = 2 * FR_BENCH_N * FR_BENCH_ROUNDS;
	uint64_t y, s;

	(void)arg;
	y = bench_switches(0);
	s = bench_switches(1);
#ifdef FR_NO_TRACE
	bench_line("untraced: switch by taskYIELD()", y, n);
	bench_line("untraced: switch by semaphore handoff", s, n);
	board_exit(0);
#else
	bench_line("traced: switch by taskYIELD()", y, n);
	bench_line("traced: switch by semaphore handoff", s, n);
	bench_line("traced: interrupt enter+exit",
		   bench_isrs(), FR_BENCH_N * FR_BENCH_ROUNDS);
	board_exit(tb_rtos.stats.lost ? 5 : 0);
#endif
}

static void fr_setup(void)
{
#ifndef FR_NO_TRACE
	tb_ring_init(&ring, fr_ring_mem, sizeof(fr_ring_mem), FR_CHUNK,
		     FR_NCHUNKS);
	tb_reader_init(&rd, &ring, rd_scratch);
	if (tb_rtos_start(&ring, &fr_clock, "FreeRTOS bench"))
		board_exit(5);
#endif
	sem_a = xSemaphoreCreateBinary();
	sem_b = xSemaphoreCreateBinary();
	xTaskCreate(bencher, "bench", 384, NULL, 3, NULL);
	xTaskCreate(partner, "partner", 256, NULL, 3, NULL);
}
