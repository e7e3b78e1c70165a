/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * riscv.c - what every bare RV32 board in machine mode shares
 * (board.h): the trap dispatch, semihosting's trap (RISC-V's: ARM's calls
 * behind an ebreak between two marker instructions, as QEMU's
 * -semihosting-config enable=on implements it) and the interrupt mask
 * (mstatus.MIE).
 *
 * Nesting: the standard RISC-V interrupts have no preemption priority;
 * a handler is preempted only if it sets mstatus.MIE again.  The timer's
 * handler does, while rv_nest is set: with its own interrupt (MTIE) off
 * and mepc and mstatus saved, so that the external interrupt (the
 * second, higher one) may land anywhere in it.
 */
#include "riscv.h"

void rv_trap(void);
uint32_t board_semihost(uint32_t op, const void *arg);

volatile uint32_t rv_nest;

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

/* Semihosting: a0 the call, a1 its argument; the three instructions
 * uncompressed, in one page. */
__attribute__((noinline)) uint32_t board_semihost(uint32_t op,
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
