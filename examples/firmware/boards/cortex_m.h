/* SPDX-License-Identifier: BSD-2-Clause */
/* cortex_m.h - what cortex_m.c gives the Cortex-M boards' own files. */
#ifndef FW_CORTEX_M_H
#define FW_CORTEX_M_H

#include "board.h"

#define REG(a)		(*(volatile uint32_t *)(a))
#define CM_NIRQ		32	/* external interrupts in the vector table */

/* SysTick and the SCB: the architecture's, on every Cortex-M */
#define SYST_CSR	REG(0xE000E010u)
#define SYST_RVR	REG(0xE000E014u)
#define SYST_CVR	REG(0xE000E018u)
#define SYST_ENABLE	1u
#define SYST_TICKINT	2u
#define SYST_CPUCLK	4u
#define SCB_ICSR	REG(0xE000ED04u)
#define ICSR_PENDSTSET	(1u << 26)	/* SysTick pending */
#define SCB_SHPR3	REG(0xE000ED20u)	/* bits 31..24: SysTick */

void cm_irq(const uint32_t *frame, void (*fn)(void));
void cm_nvic_enable(uint32_t irq, uint32_t prio);
void cm_nvic_disable(uint32_t irq);

/*
 * An interrupt handler @name that calls cm_irq(frame, @fn): the frame is
 * on the stack the interrupted code used (MSP, or PSP when EXC_RETURN's
 * bit 2 says so: an RTOS's threads).  Thumb-1, so it runs on ARMv6-M;
 * POP {pc} with EXC_RETURN returns from the exception.
 */
#define CM_HANDLER(name, fn)						\
	__attribute__((naked)) void name(void)				\
	{								\
		__asm__ __volatile__(					\
			"mov r0, sp\n\t"				\
			"movs r1, #4\n\t"				\
			"mov r2, lr\n\t"				\
			"tst r2, r1\n\t"				\
			"beq 1f\n\t"					\
			"mrs r0, psp\n"					\
			"1:\n\t"					\
			"ldr r1, =" #fn "\n\t"				\
			"ldr r1, [r1]\n\t"				\
			"push {r4, lr}\n\t"				\
			"bl cm_irq\n\t"					\
			"pop {r4, pc}\n\t"				\
			".ltorg");					\
	}

#endif /* FW_CORTEX_M_H */
