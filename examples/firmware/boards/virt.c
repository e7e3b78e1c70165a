/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * virt.c - QEMU's RISC-V "virt" machine, one RV32 hart in machine mode
 * (qemu-system-riscv32 -M virt -bios none -kernel X.elf): RAM at
 * 0x80000000, a 16550 UART at 0x10000000, the CLINT's machine timer
 * (mtime at 10 MHz; the tick), and the Goldfish RTC, whose alarm reaches
 * the hart through the PLIC as a machine external interrupt (the second
 * interrupt: run QEMU with -rtc clock=vm so it keeps guest time).  The
 * counter is minstret.
 */
#include "riscv.h"

#define UART0_BASE	0x10000000u
#define UART_THR	(*(volatile uint8_t *)(UART0_BASE + 0))
#define UART_LSR	(*(volatile uint8_t *)(UART0_BASE + 5))	/* 0x20: THR empty */

#define MTIMECMP_LO	REG(0x02004000u)
#define MTIMECMP_HI	REG(0x02004004u)
#define MTIME_LO	REG(0x0200BFF8u)
#define MTIME_HI	REG(0x0200BFFCu)
#define MTIME_HZ	10000000u

#define RTC_BASE	0x00101000u
#define RTC_TIME_LOW	REG(RTC_BASE + 0x00)	/* read first: latches high */
#define RTC_TIME_HIGH	REG(RTC_BASE + 0x04)
#define RTC_ALARM_LOW	REG(RTC_BASE + 0x08)	/* written last: arms */
#define RTC_ALARM_HIGH	REG(RTC_BASE + 0x0c)
#define RTC_IRQ_ENABLED	REG(RTC_BASE + 0x10)
#define RTC_CLEAR_ALARM	REG(RTC_BASE + 0x14)
#define RTC_CLEAR_IRQ	REG(RTC_BASE + 0x1c)
#define RTC_IRQ		11u

#define PLIC_BASE	0x0C000000u
#define PLIC_PRIO(n)	REG(PLIC_BASE + 4u * (n))
#define PLIC_ENABLE0	REG(PLIC_BASE + 0x2000u)	/* hart 0, M-mode */
#define PLIC_THRESHOLD0	REG(PLIC_BASE + 0x200000u)
#define PLIC_CLAIM0	REG(PLIC_BASE + 0x200004u)

static void (*tick_fn)(void);
static void (*irq2_fn)(void);
static uint64_t tick_next, tick_period;
static uint64_t alarm_next, alarm_period;
static uint64_t mtime0;

static uint64_t mtime(void);

/*
 * The clock counts from here: mtime itself starts when QEMU does, some
 * way before the program (under -icount too), by an amount that varies.
 */
void board_init(void)
{
	mtime0 = mtime();
}

void board_uart_put(const uint8_t *p, size_t n)
{
	while (n--) {
		while (!(UART_LSR & 0x20u))
			;
		UART_THR = *p++;
	}
}

static uint64_t mtime(void)
{
	uint32_t hi, lo;

	do {
		hi = MTIME_HI;
		lo = MTIME_LO;
	} while (hi != MTIME_HI);
	return (uint64_t)hi << 32 | lo;
}

/* A compare in the past raises the interrupt at once. */
static void mtimecmp_set(uint64_t t)
{
	MTIMECMP_HI = 0xffffffffu;	/* no spurious match in between */
	MTIMECMP_LO = (uint32_t)t;
	MTIMECMP_HI = (uint32_t)(t >> 32);
}

void rv_timer_irq(void)
{
	tick_next += tick_period;
	mtimecmp_set(tick_next);
	if (tick_fn)
		tick_fn();
}

void board_tick_start(uint32_t hz, void (*fn)(void))
{
	tick_fn = fn;
	tick_period = MTIME_HZ / hz;
	tick_next = mtime() + tick_period;
	mtimecmp_set(tick_next);
	csr_set(mie, MIE_MTIE);
	csr_set(mstatus, MSTATUS_MIE);
}

void board_tick_stop(void)
{
	csr_clear(mie, MIE_MTIE);
}

uint64_t board_now_ns(void)
{
	return (mtime() - mtime0) * (1000000000u / MTIME_HZ);
}

static uint64_t rtc_now(void)
{
	uint32_t lo = RTC_TIME_LOW;

	return (uint64_t)RTC_TIME_HIGH << 32 | lo;
}

static void alarm_set(uint64_t t)
{
	RTC_ALARM_HIGH = (uint32_t)(t >> 32);
	RTC_ALARM_LOW = (uint32_t)t;
}

void rv_external_irq(void)
{
	uint32_t n = PLIC_CLAIM0;

	if (n == RTC_IRQ) {
		RTC_CLEAR_IRQ = 1;
		alarm_next += alarm_period;
		alarm_set(alarm_next);
		if (irq2_fn)
			irq2_fn();
	}
	if (n)
		PLIC_CLAIM0 = n;	/* complete */
}

/* The RTC counts nanoseconds. */
void board_irq2_start(uint32_t hz, void (*fn)(void))
{
	irq2_fn = fn;
	alarm_period = 1000000000u / hz;
	PLIC_PRIO(RTC_IRQ) = 1;
	PLIC_THRESHOLD0 = 0;
	PLIC_ENABLE0 |= 1u << RTC_IRQ;
	RTC_IRQ_ENABLED = 1;
	alarm_next = rtc_now() + alarm_period;
	alarm_set(alarm_next);
	rv_nest = 1;
	csr_set(mie, MIE_MEIE);
	csr_set(mstatus, MSTATUS_MIE);
}

void board_irq2_stop(void)
{
	csr_clear(mie, MIE_MEIE);
	RTC_IRQ_ENABLED = 0;
	RTC_CLEAR_ALARM = 1;
	rv_nest = 0;
}

/*
 * minstret: under -icount QEMU derives it from its instruction counter,
 * in nanoseconds of guest time: one a count, where mtime has a hundred.
 */
uint32_t board_counter(void)
{
	return csr_read(minstret);
}
