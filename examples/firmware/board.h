/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * board.h - the two MPS2 boards QEMU emulates that the example runs on:
 * mps2-an385 (Cortex-M3) and mps2-an505 (Cortex-M33, run Secure, through
 * the Secure aliases: no SAU or MPC setup needed).  The SysTick and the
 * SCB are the architecture's; the UART is ARM's CMSDK APB UART.
 */
#ifndef FW_BOARD_H
#define FW_BOARD_H

#include <stdint.h>

#if defined(BOARD_AN385)
#define BOARD_NAME	"mps2-an385"
#define UART0_BASE	0x40004000u
#define CPU_HZ		25000000u
#elif defined(BOARD_AN505)
#define BOARD_NAME	"mps2-an505"
#define UART0_BASE	0x50200000u	/* Secure alias */
#define CPU_HZ		20000000u
#else
#error "board.h: build with -DBOARD_AN385 or -DBOARD_AN505"
#endif

#define REG(a)		(*(volatile uint32_t *)(a))

/* CMSDK APB UART */
#define UART_DATA	REG(UART0_BASE + 0x00)
#define UART_STATE	REG(UART0_BASE + 0x04)	/* bit 0: TX full */
#define UART_CTRL	REG(UART0_BASE + 0x08)	/* bit 0: TX enable */
#define UART_BAUDDIV	REG(UART0_BASE + 0x10)

/* SysTick, clocked by the CPU (CLKSOURCE=1) */
#define SYST_CSR	REG(0xE000E010u)
#define SYST_RVR	REG(0xE000E014u)
#define SYST_CVR	REG(0xE000E018u)
#define SYST_ENABLE	1u
#define SYST_TICKINT	2u
#define SYST_CPUCLK	4u
#define SCB_ICSR	REG(0xE000ED04u)
#define ICSR_PENDSTSET	(1u << 26)	/* SysTick pending */

#endif /* FW_BOARD_H */
