/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cortex_m.c - what every Cortex-M board shares (board.h): the vector
 * table, the reset handler, the fault handler, semihosting's trap (QEMU's
 * -semihosting-config enable=on; on a board without a debugger attached
 * a semihosting call is a fault: leave it out there), the interrupt
 * mask, the clock, and the entry every board's interrupt takes (cm_irq()).
 */
#include "cortex_m.h"

extern uint32_t _estack[];
void Reset_Handler(void);
void Default_Handler(void);
void board_start(void);
uint32_t board_semihost(uint32_t op, const void *arg);

/* Every handler but reset is weak: a board or an RTOS port defines it. */
#define CM_WEAK(name) \
	void name(void) __attribute__((weak, alias("Default_Handler")))
CM_WEAK(NMI_Handler);
CM_WEAK(HardFault_Handler);
CM_WEAK(SVC_Handler);
CM_WEAK(PendSV_Handler);
CM_WEAK(SysTick_Handler);
CM_WEAK(Irq0_Handler);  CM_WEAK(Irq1_Handler);  CM_WEAK(Irq2_Handler);
CM_WEAK(Irq3_Handler);  CM_WEAK(Irq4_Handler);  CM_WEAK(Irq5_Handler);
CM_WEAK(Irq6_Handler);  CM_WEAK(Irq7_Handler);  CM_WEAK(Irq8_Handler);
CM_WEAK(Irq9_Handler);  CM_WEAK(Irq10_Handler); CM_WEAK(Irq11_Handler);

__attribute__((section(".isr_vector"), used))
static void (*const vectors[16 + CM_NIRQ])(void) = {
	(void (*)(void))(uintptr_t)_estack,
	Reset_Handler,
	NMI_Handler,
	HardFault_Handler,
	Default_Handler,	/* MemManage (v7-M, v8-M Mainline) */
	Default_Handler,	/* BusFault */
	Default_Handler,	/* UsageFault */
	Default_Handler,	/* SecureFault (v8-M) */
	0, 0, 0,
	SVC_Handler,
	Default_Handler,	/* DebugMonitor */
	0,
	PendSV_Handler,
	SysTick_Handler,
	Irq0_Handler, Irq1_Handler, Irq2_Handler, Irq3_Handler,
	Irq4_Handler, Irq5_Handler, Irq6_Handler, Irq7_Handler,
	Irq8_Handler, Irq9_Handler, Irq10_Handler, Irq11_Handler,
	[16 + 12 ... 16 + CM_NIRQ - 1] = Default_Handler,
};

void Reset_Handler(void)
{
#ifdef __ARM_FP
	/* CP10 and CP11 full access, before any floating-point instruction */
	REG(0xE000ED88u) |= 0xFu << 20;
	__asm__ __volatile__("dsb\n\tisb" ::: "memory");
#endif
	board_start();
}

/* Any fault: the firmware's record of it, then stop where a probe finds it. */
void Default_Handler(void)
{
	if (board_fault_fn)
		board_fault_fn();
	board_halt();
}

/*
 * Every board interrupt's C side: @frame is the exception frame the core
 * stacked (r0-r3, r12, lr, pc, xpsr), so frame[6] is where it struck.
 */
void cm_irq(const uint32_t *frame, void (*fn)(void))
{
	board_irq_pc = frame[6];
	board_irq_depth++;
	if (fn)
		fn();
	board_irq_depth--;
}

/*
 * The board's counter, widened to 64 bits where it wraps (every 171 s at
 * 25 MHz: a program that reads the time less often than that would need
 * an interrupt on the wrap), with interrupts masked so that a handler
 * that reads it between our two steps cannot count a wrap twice.
 */
uint64_t board_now_ns(void)
{
	static uint32_t hi, last;
	uint32_t key = board_irq_save(), now = board_counter();
	uint64_t t;

	if (now < last)
		hi++;
	last = now;
	t = (uint64_t)hi << 32 | now;
	board_irq_restore(key);
#if 1000000000u % BOARD_COUNTER_HZ == 0
	return t * (1000000000u / BOARD_COUNTER_HZ);
#elif BOARD_COUNTER_HZ == 16000000u
	return t * 125u / 2u;
#else
#error "cortex_m.c: a nanosecond conversion for this BOARD_COUNTER_HZ"
#endif
}

uint32_t board_irq_save(void)
{
	uint32_t key;

	__asm__ __volatile__("mrs %0, primask\n\tcpsid i" : "=r"(key)
			     : : "memory");
	return key;
}

void board_irq_restore(uint32_t key)
{
	__asm__ __volatile__("msr primask, %0" : : "r"(key) : "memory");
}

void cm_nvic_enable(uint32_t irq, uint32_t prio)
{
	/* word accesses only: ARMv6-M has no byte access to NVIC_IPR */
	volatile uint32_t *ipr = &REG(0xE000E400u + (irq & ~3u));
	uint32_t shift = (irq & 3u) * 8u;

	*ipr = (*ipr & ~(0xffu << shift)) | (prio << shift);
	REG(0xE000E100u) = 1u << irq;	/* NVIC_ISER0 */
}

void cm_nvic_disable(uint32_t irq)
{
	REG(0xE000E180u) = 1u << irq;	/* NVIC_ICER0 */
}

/* Semihosting (ARM's, as QEMU implements it): bkpt 0xab, r0 the call. */
uint32_t board_semihost(uint32_t op, const void *arg)
{
	register uint32_t r0 __asm__("r0") = op;
	register const void *r1 __asm__("r1") = arg;

	__asm__ __volatile__("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
	return r0;
}
