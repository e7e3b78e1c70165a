/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * board.h - what the firmware examples need from a board, the same on
 * every board and core they run on.  No vendor code, no C library.
 *
 *   board          core            files (-DBOARD_<NAME>, QEMU -M)
 *   an385          Cortex-M3       cortex_m.c mps2.c an385.ld  mps2-an385
 *   an386          Cortex-M4F      cortex_m.c mps2.c an385.ld  mps2-an386
 *   an500          Cortex-M7       cortex_m.c mps2.c an500.ld  mps2-an500
 *   an505          Cortex-M33      cortex_m.c mps2.c an505.ld  mps2-an505
 *   microbit       Cortex-M0       cortex_m.c nrf51.c microbit.ld microbit
 *   virt           RV32 (A or not) riscv.c riscv_start.S virt.c virt.ld
 *                                  qemu-system-riscv32 -M virt -bios none
 * and common.c (the start of main, semihosting's calls) and mem.c
 * (memcpy and friends) on all of them; the linker scripts give MEMORY
 * and include arm.ld or riscv.ld (find them with -L).
 *
 * Startup (cortex_m.c, riscv_start.S + riscv.c, common.c): the vector
 * table or the trap entry, the reset handler (turn the FPU on where the
 * build uses it; copy .data, zero .bss, call main, then board_exit()
 * with what main returned).  Every handler of cortex_m.c's vector table is a weak alias:
 * an RTOS port defines SVC_Handler, PendSV_Handler and SysTick_Handler
 * (and then does not call board_tick_start() on the MPS2 boards, whose
 * tick is SysTick).  Any fault or unexpected trap calls board_fault_fn
 * (when set) and stops in board_halt(), where a debugger finds it.
 */
#ifndef FW_BOARD_H
#define FW_BOARD_H

#include <stddef.h>
#include <stdint.h>

/*
 * The board's name, its counter's rate (below), and an address where a
 * load faults (nothing is mapped there).
 */
#if defined(BOARD_AN385) || defined(BOARD_AN386) || defined(BOARD_AN500)
#if defined(BOARD_AN385)
#define BOARD_NAME	"mps2-an385"
#elif defined(BOARD_AN386)
#define BOARD_NAME	"mps2-an386"
#else
#define BOARD_NAME	"mps2-an500"
#endif
#define BOARD_COUNTER_HZ	25000000u	/* the CPU clock */
#define BOARD_BAD_ADDR		0xF0000000u
#elif defined(BOARD_AN505)
#define BOARD_NAME	"mps2-an505"
#define BOARD_COUNTER_HZ	20000000u
#define BOARD_BAD_ADDR		0xF0000000u
#elif defined(BOARD_MICROBIT)
#define BOARD_NAME	"microbit"
#define BOARD_COUNTER_HZ	16000000u	/* TIMER2 */
#define BOARD_BAD_ADDR		0x60000000u
#elif defined(BOARD_VIRT)
#define BOARD_NAME	"riscv32-virt"
#define BOARD_COUNTER_HZ	1000000000u	/* minstret, -icount */
#define BOARD_BAD_ADDR		0xF0000000u
#else
#error "board.h: build with -DBOARD_<NAME>: AN385, AN386, AN500, AN505, MICROBIT or VIRT"
#endif

/* Output: the UART (the trace's byte stream), and semihosting. */
void board_init(void);			/* the UART; called first in main */
void board_uart_put(const uint8_t *p, size_t n);	/* blocks */
void board_puts(const char *s);		/* to the debugger's console */
__attribute__((noreturn)) void board_exit(int code);
__attribute__((noreturn)) void board_halt(void);
extern void (*board_fault_fn)(void);	/* called on a fault, then halt */

/*
 * Time: a free-running 32-bit counter at BOARD_COUNTER_HZ, counting up
 * from board_init(), and the same in nanoseconds, 64 bits, monotonic,
 * read from anywhere: main, the tick's handler, a nested one.  Under QEMU
 * -icount shift=0 one instruction takes a nanosecond: counts * 10^9 /
 * BOARD_COUNTER_HZ are instructions.
 */
uint32_t board_counter(void);
uint64_t board_now_ns(void);

/*
 * Interrupts.  The tick calls @fn from a periodic interrupt at @hz; the
 * second interrupt calls its @fn at @hz from a higher priority, which
 * preempts the tick's handler anywhere (the RISC-V trap entry lets it:
 * the tick's handler runs with only that one enabled).  _stop() ends
 * each.  board_irq_pc is the address the running handler interrupted
 * (set before @fn runs).  board_irq_depth counts the handlers running
 * (2 when the second interrupted the tick).
 */
void board_tick_start(uint32_t hz, void (*fn)(void));
void board_tick_stop(void);
void board_irq2_start(uint32_t hz, void (*fn)(void));
void board_irq2_stop(void);
extern volatile uint32_t board_irq_pc;
extern volatile uint32_t board_irq_depth;

/* Masks this core's interrupts; returns what to restore. */
uint32_t board_irq_save(void);
void board_irq_restore(uint32_t key);

#endif /* FW_BOARD_H */
