/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * common.c - what every board shares whatever its core: the start of the
 * C program (copy .data, zero .bss, main, exit with what it returned),
 * the stop, the board's state, and the semihosting calls over the core's
 * own trap into the debugger (board_semihost(), in cortex_m.c and
 * riscv.c).
 */
#include "board.h"

extern uint32_t _sidata[], _sdata[], _edata[], _sbss[], _ebss[];
int main(void);
void board_start(void);
uint32_t board_semihost(uint32_t op, const void *arg);

void (*board_fault_fn)(void);
volatile uint32_t board_irq_pc;
volatile uint32_t board_irq_depth;

/* Called by the reset code with a stack; never returns. */
void board_start(void)
{
	uint32_t *s = _sidata, *d = _sdata;

	while (d < _edata)
		*d++ = *s++;
	for (d = _sbss; d < _ebss; d++)
		*d = 0;
	board_exit(main());
}

/* Stops here for good; a debugger breaks on this function. */
__attribute__((noinline, noreturn)) void board_halt(void)
{
	for (;;)
		__asm__ __volatile__("" ::: "memory");
}

void board_puts(const char *s)
{
	board_semihost(0x04, s);	/* SYS_WRITE0 */
}

__attribute__((noreturn)) void board_exit(int code)
{
	uint32_t block[2] = { 0x20026u, (uint32_t)code };

	board_semihost(0x20, block);	/* SYS_EXIT_EXTENDED */
	board_halt();
}
