/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fw_config.h - how the firmware example configures the tbring headers
 * (fw.c, and parts.c, which measures the library's share of it).
 */
#ifndef FW_CONFIG_H
#define FW_CONFIG_H

#include <stdint.h>
#include "board.h"

#define TB_ATOMIC_BUILTINS	1	/* no ck port for bare metal */
#define TB_NO_FUTEX		1
/*
 * On RISC-V, tbsync.h's default TB_IN_INTERRUPT() reads mstatus.MIE,
 * which a handler that lets another nest has set again: with nested
 * handlers (FW_NEST), the board's count of running handlers says it.
 */
#if defined(__riscv) && defined(FW_NEST) && !defined(TB_IN_INTERRUPT)
#define TB_IN_INTERRUPT()	(board_irq_depth != 0)
#endif
/*
 * A wait for a stalled writer.  Only the interrupt's writer uses
 * TB_STALL here, and it must never get this far (TB_IN_INTERRUPT()):
 * fw.c's hook counts what would have been a wait in handler mode.
 */
int fw_wait(uint32_t *word, uint32_t val, uint32_t timeout_ms);
void fw_wake(uint32_t *word);
#define TB_WAIT_HOOK(w, v, ms)	fw_wait((w), (v), (ms))
#define TB_WAKE_HOOK(w)		fw_wake(w)
#define TB_EV_INTERN_SLOTS	16	/* small tables: RAM is scarce */
#define TB_EV_TRACKS		4
#define TB_EV_MAX_ARGS		4
#include "tbevent.h"

#endif /* FW_CONFIG_H */
