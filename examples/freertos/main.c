/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * main.c - FreeRTOS traced through its own hooks (tbfreertos.h): four
 * tasks at four priorities, a queue between two, a mutex among three, a
 * task delay, a notification, and a timer interrupt that gives a
 * semaphore, on one ring in RAM that the lowest task drains to UART0
 * (tblink.h), or that a debugger takes off after a fault.
 *
 *   ctrl    (4)  waits for the timer interrupt's semaphore, works, sends
 *                the round to the queue (blocks when it is full), takes
 *                the mutex every fourth round
 *   worker  (3)  receives from the queue, works, takes the mutex
 *   drain   (2)  waits for a notification (a tick at most), drains the
 *                ring to the UART
 *   logger  (1)  delays 3 ticks, takes the mutex, writes long events
 *   IDLE    (0)
 *
 * At the end (after FR_ROUNDS timer rounds) drain stops the trace once
 * the others are suspended, and prints over semihosting what the kernel
 * counted (uxTaskGetSystemState(): each task's run time, on the trace's
 * clock) and what the hooks counted, for the host to compare with the
 * trace (examples/freertos/e2e.sh, rtoscheck.c).  Every event a task
 * writes carries that task's own sequence number ("seq"), so the host
 * finds each exactly once and in order on that task's track.
 *
 * Runs (QEMU's -append, read through semihosting): "fault" faults in
 * ctrl after FR_ROUNDS / 40 rounds, nothing streamed (the RAM dump has
 * it all); "skew" runs the kernel's run-time counter 2 % fast (the check
 * must fail).  Builds (examples/freertos/e2e.sh): -DFR_BENCH measures
 * instructions per context switch under -icount; -DFR_NO_TRACE builds
 * the kernel without the hooks (FR_BENCH's baseline); -DFR_NO_HOOKS the
 * scenario with the kernel untraced (the idle task's share says what
 * tracing costs).
 */
#include "FreeRTOS.h"
#include "task.h"
#include "queue.h"
#include "semphr.h"
#include "board.h"
#ifndef FR_NO_TRACE
#include "tblink.h"
#endif

#ifndef FR_ROUNDS
#define FR_ROUNDS	400
#endif

/* ------------------------------------------------------------------------
 * The clock: the board's, nanoseconds since board_init(), from anywhere
 * (the trace's clock, BOOTTIME for Perfetto, and the kernel's run-time
 * statistics').  The kernel's tick comes from the board's tick interrupt
 * (SysTick on the MPS2 boards, a timer on the micro:bit), from the
 * scheduler's start on.
 */
static volatile uint32_t fr_sched_on;

static uint64_t fr_now(void *ctx)
{
	(void)ctx;
	return board_now_ns();
}

/* The port's tick handler (ARM_CM0 names it as the vector does). */
#ifdef BOARD_MICROBIT
#define FR_PORT_TICK	SysTick_Handler
#else
#define FR_PORT_TICK	xPortSysTickHandler
#endif
void FR_PORT_TICK(void);

static void fr_tick(void)
{
	static int named;

#ifndef FR_NO_TRACE
	if (!named++)
		tb_rtos_irq_name(TB_RTOS_IRQ(), "tick");
#else
	(void)named;
#endif
	if (fr_sched_on)
		FR_PORT_TICK();
}

/* The port calls it to start its tick: the board's runs already. */
void vPortSetupTimerInterrupt(void)
{
	fr_sched_on = 1;
}

static uint64_t fr_t0;

void fr_runtime_start(void)
{
	fr_t0 = fr_now(NULL);
}

/* The run's mode, from the command line (QEMU's -append). */
static int fr_fault_run, fr_skew_run;

uint32_t board_semihost(uint32_t op, const void *arg);

static int has_word(const char *s, const char *w)
{
	const char *p, *q;

	for (; *s; s++) {
		for (p = s, q = w; *q && *p == *q; p++, q++)
			;
		if (!*q && (!*p || *p == ' '))
			return 1;
	}
	return 0;
}

static void fr_mode(void)
{
	static char cmdline[64];
	struct { char *buf; uint32_t len; } block = {
		cmdline, sizeof(cmdline) - 1
	};

	if (board_semihost(0x15, &block))	/* SYS_GET_CMDLINE */
		return;
	cmdline[sizeof(cmdline) - 1] = 0;
	fr_fault_run = has_word(cmdline, "fault");
	fr_skew_run = has_word(cmdline, "skew");
}

uint64_t fr_runtime_now(void)
{
	uint64_t t = fr_now(NULL) - fr_t0;

	/* "skew": a kernel clock 2 % fast, the check must see it */
	return fr_skew_run ? t * 51 / 50 : t;
}

/* ------------------------------------------------------------------------
 * Output: semihosting lines.
 */
static char *fmt_u64(char *s, uint64_t v)
{
	char tmp[20];
	int n = 0;

	do
		tmp[n++] = (char)('0' + v % 10);
	while (v /= 10);
	while (n)
		*s++ = tmp[--n];
	return s;
}

static char *fmt_str(char *s, const char *p)
{
	while (*p)
		*s++ = *p++;
	return s;
}

static char *fmt_kv(char *s, const char *k, uint64_t v)
{
	*s++ = ' ';
	s = fmt_str(s, k);
	*s++ = '=';
	return fmt_u64(s, v);
}

static void line_end(char *line, char *s)
{
	*s++ = '\n';
	*s = 0;
	board_puts(line);
}

void fr_assert(const char *file, int line)
{
	char buf[160], *s = fmt_str(buf, "fr: assert ");

	s = fmt_str(s, file);
	s = fmt_kv(s, "line", (uint64_t)line);
	line_end(buf, s);
	board_exit(6);
}

static void fr_fault_report(void);

/* A fault: what the firmware knows (no kernel call); the board stops. */
static void fr_fault(void)
{
	fr_fault_report();
	board_puts("fr: " BOARD_NAME " fault\n");
}

#ifdef FR_BENCH
#include "bench.h"
#else
#include "scenario.h"
#endif

int main(void)
{
	board_init();
	fr_mode();
	board_fault_fn = fr_fault;
	board_tick_start(configTICK_RATE_HZ, fr_tick);
	fr_setup();
	vTaskStartScheduler();
	board_puts("fr: the scheduler returned\n");
	return 7;
}
