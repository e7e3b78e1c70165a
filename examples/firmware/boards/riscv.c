/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * riscv.c - what every bare RV32 board in machine mode shares
 * (board.h): the reset (copy .data, zero .bss, main), the trap dispatch,
 * semihosting (RISC-V's, ARM's calls behind an ebreak between two
 * marker instructions, as QEMU's -semihosting-config enable=on
 * implements it) and the interrupt mask (mstatus.MIE).
 *
 * Nesting: the standard RISC-V interrupts have no preemption priority;
 * a handler is preempted only if it sets mstatus.MIE again.  The timer's
 * handler does, while rv_nest is set: with its own interrupt (MTIE) off
 * and mepc and mstatus saved, so that the external interrupt (the
 * second, higher one) may land anywhere in it.
 */
#include "riscv.h"

extern uint32_t _sidata[], _sdata[], _edata[], _sbss[], _ebss[];
int main(void);
void rv_reset(void);
void rv_trap(void);

void (*board_fault_fn)(void);
volatile uint32_t board_irq_pc;
volatile uint32_t board_irq_depth;
volatile uint32_t rv_nest;

void rv_reset(void)
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

/* The timer's handler, with the external interrupt let in (rv_nest). */
static void timer_nested(void)
{
	uint32_t epc = csr_read(mepc), status = csr_read(mstatus);

	csr_clear(mie, MIE_MTIE);
	csr_set(mstatus, MSTATUS_MIE);
	rv_timer_irq();
	csr_clear(mstatus, MSTATUS_MIE);
	csr_set(mie, MIE_MTIE);
	csr_write(mepc, epc);
	csr_write(mstatus, status);
}

void rv_trap(void)
{
	uint32_t cause = csr_read(mcause);

	board_irq_pc = csr_read(mepc);
	board_irq_depth++;
	if (cause == 0x80000007u && rv_nest) {
		timer_nested();
	} else if (cause == 0x80000007u) {
		rv_timer_irq();
	} else if (cause == 0x8000000bu) {
		rv_external_irq();
	} else {		/* an exception (a fault), or a stray interrupt */
		if (board_fault_fn)
			board_fault_fn();
		board_halt();
	}
	board_irq_depth--;
}

uint32_t board_irq_save(void)
{
	uint32_t key;

	__asm__ __volatile__("csrrci %0, mstatus, 8" : "=r"(key) : : "memory");
	return key & MSTATUS_MIE;
}

void board_irq_restore(uint32_t key)
{
	csr_set(mstatus, key);
}

/* ------------------------------------------------------------------------
 * Semihosting: a0 the call, a1 its argument; the three instructions
 * uncompressed, in one page.
 */
__attribute__((noinline)) static uint32_t semihost(uint32_t op,
						   const void *arg)
{
	register uint32_t a0 __asm__("a0") = op;
	register const void *a1 __asm__("a1") = arg;

	__asm__ __volatile__(".option push\n\t"
			     ".option norvc\n\t"
			     ".balign 16\n\t"
			     "slli zero, zero, 0x1f\n\t"
			     "ebreak\n\t"
			     "srai zero, zero, 7\n\t"
			     ".option pop"
			     : "+r"(a0) : "r"(a1) : "memory");
	return a0;
}

void board_puts(const char *s)
{
	semihost(0x04, s);		/* SYS_WRITE0 */
}

__attribute__((noreturn)) void board_exit(int code)
{
	uint32_t block[2] = { 0x20026u, (uint32_t)code };

	semihost(0x20, block);		/* SYS_EXIT_EXTENDED */
	board_halt();
}
