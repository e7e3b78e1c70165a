/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nrf51.c - the BBC micro:bit QEMU emulates (-M microbit): an nRF51822,
 * Cortex-M0 (ARMv6-M: no ldrex/strex), 16 KiB of RAM at 0x20000000,
 * 256 KiB of flash at 0.  Its M0 has no SysTick: the tick is TIMER0,
 * the second interrupt TIMER1 at a higher priority, the clock and the
 * counter TIMER2, free-running; each at 16 MHz, 32 bits.
 */
#include "cortex_m.h"

#define UART0_BASE	0x40002000u
#define TIMER0_BASE	0x40008000u	/* IRQ 8 */
#define TIMER1_BASE	0x40009000u	/* IRQ 9 */
#define TIMER2_BASE	0x4000A000u	/* IRQ 10 */
#define TIMER_HZ	BOARD_COUNTER_HZ

/* UART */
#define UART_STARTTX	REG(UART0_BASE + 0x008)
#define UART_TXDRDY	REG(UART0_BASE + 0x11c)
#define UART_ENABLE	REG(UART0_BASE + 0x500)
#define UART_TXD	REG(UART0_BASE + 0x51c)

/* TIMERn */
#define T_START(b)	REG((b) + 0x000)
#define T_STOP(b)	REG((b) + 0x004)
#define T_CLEAR(b)	REG((b) + 0x00c)
#define T_CAPTURE1(b)	REG((b) + 0x044)
#define T_COMPARE0(b)	REG((b) + 0x140)	/* the event */
#define T_SHORTS(b)	REG((b) + 0x200)	/* bit 0: COMPARE0 -> CLEAR */
#define T_INTENSET(b)	REG((b) + 0x304)	/* bit 16: COMPARE0 */
#define T_INTENCLR(b)	REG((b) + 0x308)
#define T_MODE(b)	REG((b) + 0x504)
#define T_BITMODE(b)	REG((b) + 0x508)	/* 3: 32 bits */
#define T_PRESCALER(b)	REG((b) + 0x510)
#define T_CC0(b)	REG((b) + 0x540)
#define T_CC1(b)	REG((b) + 0x544)

#define PRIO_TICK	0x80u
#define PRIO_IRQ2	0x40u

static void timer_start(uint32_t b, uint32_t cc, int irq);

__attribute__((used)) static void (*tick_fn)(void);
__attribute__((used)) static void (*irq2_fn)(void);
void board_init(void)
{
	UART_ENABLE = 4;
	UART_STARTTX = 1;
	timer_start(TIMER2_BASE, 0, 0);		/* the clock */
}

void board_uart_put(const uint8_t *p, size_t n)
{
	while (n--) {
		UART_TXDRDY = 0;
		UART_TXD = *p++;
		while (!UART_TXDRDY)
			;
	}
}

/* TIMERn counting from 0 at 16 MHz, 32 bits; COMPARE0 at @cc clears it. */
static void timer_start(uint32_t b, uint32_t cc, int irq)
{
	T_STOP(b) = 1;
	T_MODE(b) = 0;
	T_BITMODE(b) = 3;
	T_PRESCALER(b) = 0;
	T_CLEAR(b) = 1;
	T_COMPARE0(b) = 0;
	if (cc) {
		T_CC0(b) = cc;
		T_SHORTS(b) = 1;
	}
	if (irq)
		T_INTENSET(b) = 1u << 16;
	T_START(b) = 1;
}

static void timer_stop(uint32_t b)
{
	T_STOP(b) = 1;
	T_INTENCLR(b) = 1u << 16;
}

static uint32_t timer_read(uint32_t b)
{
	T_CAPTURE1(b) = 1;
	return T_CC1(b);
}

static void tick(void)
{
	T_COMPARE0(TIMER0_BASE) = 0;
	if (tick_fn)
		tick_fn();
}

__attribute__((used)) static void (*const tick_entry)(void) = tick;
CM_HANDLER(Irq8_Handler, tick_entry)

static void irq2(void)
{
	T_COMPARE0(TIMER1_BASE) = 0;
	if (irq2_fn)
		irq2_fn();
}

__attribute__((used)) static void (*const irq2_entry)(void) = irq2;
CM_HANDLER(Irq9_Handler, irq2_entry)

void board_tick_start(uint32_t hz, void (*fn)(void))
{
	tick_fn = fn;
	timer_start(TIMER0_BASE, TIMER_HZ / hz, 1);
	cm_nvic_enable(8, PRIO_TICK);
}

void board_tick_stop(void)
{
	timer_stop(TIMER0_BASE);
	cm_nvic_disable(8);
}

void board_irq2_start(uint32_t hz, void (*fn)(void))
{
	irq2_fn = fn;
	timer_start(TIMER1_BASE, TIMER_HZ / hz, 1);
	cm_nvic_enable(9, PRIO_IRQ2);
}

void board_irq2_stop(void)
{
	timer_stop(TIMER1_BASE);
	cm_nvic_disable(9);
}

uint32_t board_counter(void)
{
	return timer_read(TIMER2_BASE);
}
