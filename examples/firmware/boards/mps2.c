/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mps2.c - the MPS2 boards QEMU emulates: mps2-an385 (Cortex-M3),
 * mps2-an386 (Cortex-M4 with its FPU), mps2-an500 (Cortex-M7) and
 * mps2-an505 (Cortex-M33, run Secure, through the Secure aliases: no
 * SAU or MPC setup needed).  The UART is ARM's CMSDK APB UART, the tick
 * is SysTick, the second interrupt the CMSDK APB timer TIMER0 at a
 * higher priority, and the clock and the counter are TIMER1, free-running
 * (32 bits at the CPU clock).
 */
#include "cortex_m.h"

#if defined(BOARD_AN505)
#define UART0_BASE	0x50200000u	/* Secure alias */
#define TIMER0_BASE	0x50000000u
#define TIMER1_BASE	0x50001000u
#define TIMER0_IRQ	3u
#else
#define UART0_BASE	0x40004000u
#define TIMER0_BASE	0x40000000u
#define TIMER1_BASE	0x40001000u
#define TIMER0_IRQ	8u
#endif
#define CPU_HZ		BOARD_COUNTER_HZ

/* CMSDK APB UART */
#define UART_DATA	REG(UART0_BASE + 0x00)
#define UART_STATE	REG(UART0_BASE + 0x04)	/* bit 0: TX full */
#define UART_CTRL	REG(UART0_BASE + 0x08)	/* bit 0: TX enable */
#define UART_BAUDDIV	REG(UART0_BASE + 0x10)

/* CMSDK APB timers, clocked like the CPU, counting down */
#define TIMER_CTRL(b)	REG((b) + 0x00)	/* 1 enable, 8 interrupt */
#define TIMER_VALUE(b)	REG((b) + 0x04)
#define TIMER_RELOAD(b)	REG((b) + 0x08)
#define TIMER_INTCLEAR(b) REG((b) + 0x0c)

/* Priorities (upper bits count): the second interrupt preempts the tick. */
#define PRIO_TICK	0x80u
#define PRIO_IRQ2	0x40u

__attribute__((used)) static void (*tick_fn)(void);
__attribute__((used)) static void (*irq2_fn)(void);

void board_init(void)
{
	UART_BAUDDIV = 16;
	UART_CTRL = 1;
	TIMER_RELOAD(TIMER1_BASE) = 0xffffffffu;	/* the clock */
	TIMER_VALUE(TIMER1_BASE) = 0xffffffffu;
	TIMER_CTRL(TIMER1_BASE) = 1;
}

void board_uart_put(const uint8_t *p, size_t n)
{
	while (n--) {
		while (UART_STATE & 1u)
			;
		UART_DATA = *p++;
	}
}

static void tick(void)
{
	if (tick_fn)
		tick_fn();
}

__attribute__((used)) static void (*const tick_entry)(void) = tick;
CM_HANDLER(SysTick_Handler, tick_entry)

static void irq2(void)
{
	TIMER_INTCLEAR(TIMER0_BASE) = 1;
	if (irq2_fn)
		irq2_fn();
}

__attribute__((used)) static void (*const irq2_entry)(void) = irq2;
#if TIMER0_IRQ == 3u
CM_HANDLER(Irq3_Handler, irq2_entry)
#else
CM_HANDLER(Irq8_Handler, irq2_entry)
#endif

void board_tick_start(uint32_t hz, void (*fn)(void))
{
	tick_fn = fn;
	SCB_SHPR3 = (SCB_SHPR3 & 0x00ffffffu) | (PRIO_TICK << 24);
	SYST_RVR = CPU_HZ / hz - 1;
	SYST_CVR = 0;
	SYST_CSR = SYST_ENABLE | SYST_CPUCLK | SYST_TICKINT;
}

void board_tick_stop(void)
{
	SYST_CSR = 0;
}

uint32_t board_counter(void)
{
	return ~TIMER_VALUE(TIMER1_BASE);	/* counts up */
}

void board_irq2_start(uint32_t hz, void (*fn)(void))
{
	irq2_fn = fn;
	TIMER_RELOAD(TIMER0_BASE) = CPU_HZ / hz - 1;
	TIMER_VALUE(TIMER0_BASE) = CPU_HZ / hz - 1;
	TIMER_CTRL(TIMER0_BASE) = 1u | 8u;
	cm_nvic_enable(TIMER0_IRQ, PRIO_IRQ2);
}

void board_irq2_stop(void)
{
	TIMER_CTRL(TIMER0_BASE) = 0;
	cm_nvic_disable(TIMER0_IRQ);
}
