/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * start.c - what a C program needs on a bare Cortex-M with no vendor
 * code and no C library: the vector table, the reset handler (copy .data,
 * zero .bss, call main), the fault handler, the four string functions
 * the tbring headers use, and semihosting output and exit (QEMU's
 * -semihosting-config enable=on; on a board without a debugger attached a
 * semihosting call is a fault: leave it out there).
 */
#include <stddef.h>
#include <stdint.h>
#include "fw.h"

extern uint32_t _sidata[], _sdata[], _edata[], _sbss[], _ebss[], _estack[];
int main(void);
void Reset_Handler(void);
void SysTick_Handler(void);
void HardFault_Handler(void);
void Default_Handler(void);
/* an RTOS's (examples/freertos/), or any program's: weak, else a fault */
void SVC_Handler(void) __attribute__((weak, alias("Default_Handler")));
void PendSV_Handler(void) __attribute__((weak, alias("Default_Handler")));
void IRQ_Handler(void) __attribute__((weak, alias("Default_Handler")));

__attribute__((section(".isr_vector"), used))
static void (*const vectors[16 + 32])(void) = {
	(void (*)(void))(uintptr_t)_estack,
	Reset_Handler,
	Default_Handler,	/* NMI */
	HardFault_Handler,
	Default_Handler,	/* MemManage */
	Default_Handler,	/* BusFault */
	Default_Handler,	/* UsageFault */
	Default_Handler,	/* SecureFault (v8-M) */
	0, 0, 0,
	SVC_Handler,		/* SVCall */
	Default_Handler,	/* DebugMonitor */
	0,
	PendSV_Handler,
	SysTick_Handler,
	[16 ... 47] = IRQ_Handler,	/* IPSR - 16 says which */
};

void Reset_Handler(void)
{
	uint32_t *s = _sidata, *d = _sdata;

	while (d < _edata)
		*d++ = *s++;
	for (d = _sbss; d < _ebss; d++)
		*d = 0;
	fw_exit(main());
}

/* Any fault: the firmware's record of it, then stop where a probe finds it. */
void HardFault_Handler(void)
{
	fw_fault();
}

void Default_Handler(void)
{
	fw_fault();
}

/* Stops here for good; a debugger breaks on this function. */
__attribute__((noinline, noreturn)) void fw_halt(void)
{
	for (;;)
		__asm__ __volatile__("" ::: "memory");
}

/* ------------------------------------------------------------------------
 * Semihosting (ARM's, as QEMU implements it): bkpt 0xab, r0 the call.
 */
static uint32_t semihost(uint32_t op, const void *arg)
{
	register uint32_t r0 __asm__("r0") = op;
	register const void *r1 __asm__("r1") = arg;

	__asm__ __volatile__("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
	return r0;
}

void fw_puts(const char *s)
{
	semihost(0x04, s);		/* SYS_WRITE0 */
}

__attribute__((noreturn)) void fw_exit(int code)
{
	uint32_t block[2] = { 0x20026u, (uint32_t)code };

	semihost(0x20, block);		/* SYS_EXIT_EXTENDED */
	fw_halt();
}

/* ------------------------------------------------------------------------
 * The string functions (no C library).  Plain loops: the build passes
 * -fno-tree-loop-distribute-patterns so gcc does not turn them back into
 * calls to themselves.
 */
void *memcpy(void *dst, const void *src, size_t n)
{
	uint8_t *d = dst;
	const uint8_t *s = src;

	if (!(((uintptr_t)d | (uintptr_t)s | n) & 3)) {
		for (; n; n -= 4, d += 4, s += 4)
			*(uint32_t *)(void *)d = *(const uint32_t *)(const void *)s;
		return dst;
	}
	while (n--)
		*d++ = *s++;
	return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
	uint8_t *d = dst;
	const uint8_t *s = src;

	if (d <= s || d >= s + n)
		return memcpy(dst, src, n);
	while (n--)
		d[n] = s[n];
	return dst;
}

void *memset(void *dst, int c, size_t n)
{
	uint8_t *d = dst;

	while (n--)
		*d++ = (uint8_t)c;
	return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const uint8_t *x = a, *y = b;

	for (; n; n--, x++, y++)
		if (*x != *y)
			return *x < *y ? -1 : 1;
	return 0;
}
