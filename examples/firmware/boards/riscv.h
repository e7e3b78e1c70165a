/* SPDX-License-Identifier: BSD-2-Clause */
/* riscv.h - what riscv.c gives a RISC-V board's own file, and wants. */
#ifndef FW_RISCV_H
#define FW_RISCV_H

#include "board.h"

#define REG(a)		(*(volatile uint32_t *)(a))

#define MSTATUS_MIE	(1u << 3)
#define MIE_MTIE	(1u << 7)	/* machine timer */
#define MIE_MEIE	(1u << 11)	/* machine external */

#define csr_read(csr) ({						\
	uint32_t v__;							\
	__asm__ __volatile__("csrr %0, " #csr : "=r"(v__));		\
	v__; })
#define csr_write(csr, v)						\
	__asm__ __volatile__("csrw " #csr ", %0" : : "r"(v) : "memory")
#define csr_set(csr, v)							\
	__asm__ __volatile__("csrs " #csr ", %0" : : "r"(v) : "memory")
#define csr_clear(csr, v)						\
	__asm__ __volatile__("csrc " #csr ", %0" : : "r"(v) : "memory")

/*
 * The board's file defines these: the machine timer interrupt (it sets
 * the next compare, which clears it) and an external one (it claims and
 * completes it at its interrupt controller).  rv_nest says that the
 * timer's handler runs with the external interrupt enabled (it preempts
 * the tick there).
 */
void rv_timer_irq(void);
void rv_external_irq(void);
extern volatile uint32_t rv_nest;

#endif /* FW_RISCV_H */
