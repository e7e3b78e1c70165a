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
 *   logger  (2)  delays 3 ticks, takes the mutex, writes a long event
 *   drain   (1)  waits for a notification (2 ticks at most), drains the
 *                ring to the UART
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
 * Builds (examples/freertos/e2e.sh): -DFR_END=1 faults in ctrl after
 * FR_ROUNDS / 8 rounds, nothing streamed (the RAM dump has it all);
 * -DFR_BENCH measures instructions per context switch under -icount;
 * -DFR_NO_TRACE builds the kernel without the hooks (FR_BENCH's
 * baseline).
 */
#include "FreeRTOS.h"
#include "task.h"
#include "queue.h"
#include "semphr.h"
#include "board.h"
#include "fw.h"
#ifndef FR_NO_TRACE
#include "tblink.h"
#endif

#ifndef FR_END
#define FR_END		0
#endif
#ifndef FR_ROUNDS
#define FR_ROUNDS	400
#endif
#define FR_TIMER_HZ	517u		/* the timer: drifts against the tick */
#define FR_CHUNK	512u
#define FR_NCHUNKS	32u

/* ------------------------------------------------------------------------
 * The clock: SysTick periods plus the down-counter, in nanoseconds since
 * reset (the same reading as fw.c's: BOOTTIME for the trace).  SysTick
 * runs from main() on, at the kernel's tick rate; the kernel's tick
 * handler is called from ours once the scheduler runs.
 */
#define FR_NS_PER_COUNT	(1000000000u / CPU_HZ)
#define FR_RELOAD	(CPU_HZ / configTICK_RATE_HZ - 1u)

static volatile uint32_t fr_ticks;
static volatile uint32_t fr_sched_on;

static uint64_t fr_now(void *ctx)
{
	uint32_t t1, t2, cvr, pend;

	(void)ctx;
	do {
		t1 = fr_ticks;
		cvr = SYST_CVR;
		pend = SCB_ICSR & ICSR_PENDSTSET;
		t2 = fr_ticks;
	} while (t1 != t2);
	if (pend && cvr > FR_RELOAD / 2)	/* wrapped, not yet counted */
		t1++;
	return ((uint64_t)t1 * (FR_RELOAD + 1) + (FR_RELOAD - cvr)) *
	       FR_NS_PER_COUNT;
}

void xPortSysTickHandler(void);

void SysTick_Handler(void)
{
	fr_ticks++;
	if (fr_sched_on)
		xPortSysTickHandler();
}

/* The port calls it to start its tick: ours runs already. */
void vPortSetupTimerInterrupt(void)
{
	fr_sched_on = 1;
}

static uint64_t fr_t0;

void fr_runtime_start(void)
{
	fr_t0 = fr_now(NULL);
}

uint64_t fr_runtime_now(void)
{
	return fr_now(NULL) - fr_t0;
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
	fw_puts(line);
}

void fr_assert(const char *file, int line)
{
	char buf[160], *s = fmt_str(buf, "fr: assert ");

	s = fmt_str(s, file);
	s = fmt_kv(s, "line", (uint64_t)line);
	line_end(buf, s);
	fw_exit(6);
}

static void fr_fault_report(void);

/* A fault: what the firmware knows (no kernel call), then stop. */
__attribute__((noreturn)) void fw_fault(void)
{
	fr_fault_report();
	fw_puts("fr: " BOARD_NAME " fault\n");
	fw_halt();
}

/* ------------------------------------------------------------------------
 * The timer interrupt (CMSDK APB timer 0): gives ctrl its semaphore.
 */
#define TIMER0_BASE	0x40000000u
#define TIMER0_IRQ	8u
#define TIMER_CTRL	REG(TIMER0_BASE + 0x0)	/* 1 enable, 8 irq */
#define TIMER_RELOAD	REG(TIMER0_BASE + 0x8)
#define TIMER_VALUE	REG(TIMER0_BASE + 0x4)
#define TIMER_INTCLEAR	REG(TIMER0_BASE + 0xc)
#define NVIC_ISER0	REG(0xE000E100u)
#define NVIC_ICER0	REG(0xE000E180u)
#define NVIC_IPR(n)	(*(volatile uint8_t *)(0xE000E400u + (n)))

static SemaphoreHandle_t tick_sem, mutex;
static QueueHandle_t queue;
static TaskHandle_t h_ctrl, h_worker, h_logger, h_drain;
static volatile uint32_t stop;

void IRQ_Handler(void)
{
	BaseType_t woken = pdFALSE;
	uint32_t ipsr;

	__asm__ __volatile__("mrs %0, ipsr" : "=r"(ipsr));
	if ((ipsr & 0x1ff) != 16 + TIMER0_IRQ) {
		fw_fault();
		return;
	}
	traceISR_ENTER();
	TIMER_INTCLEAR = 1;
	xSemaphoreGiveFromISR(tick_sem, &woken);
	portYIELD_FROM_ISR(woken);
}

static void timer_start(void)
{
	TIMER_RELOAD = CPU_HZ / FR_TIMER_HZ - 1;
	TIMER_VALUE = CPU_HZ / FR_TIMER_HZ - 1;
	NVIC_IPR(TIMER0_IRQ) = 5 << (8 - configPRIO_BITS);
	NVIC_ISER0 = 1u << TIMER0_IRQ;
	TIMER_CTRL = 1u | 8u;
}

static void timer_stop(void)
{
	TIMER_CTRL = 0;
	NVIC_ICER0 = 1u << TIMER0_IRQ;
}

static void spin(uint32_t n)
{
	volatile uint32_t i;

	for (i = 0; i < n; i++)
		;
}

#ifdef FR_BENCH
#include "bench.h"
#else
#include "scenario.h"
#endif

int main(void)
{
	UART_BAUDDIV = 16;
	UART_CTRL = 1;
	SYST_RVR = FR_RELOAD;
	SYST_CVR = 0;
	SYST_CSR = SYST_ENABLE | SYST_CPUCLK | SYST_TICKINT;
	fr_setup();
	vTaskStartScheduler();
	fw_puts("fr: the scheduler returned\n");
	return 7;
}
