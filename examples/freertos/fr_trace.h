/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fr_trace.h - how the FreeRTOS example configures the tbring headers
 * (included at the end of FreeRTOSConfig.h, so every FreeRTOS file sees
 * the hooks, and by main.c).
 */
#ifndef FR_TRACE_H
#define FR_TRACE_H

#include <stdint.h>

#define TB_ATOMIC_BUILTINS	1	/* no ck port for bare metal */
#define TB_NO_FUTEX		1	/* no waiting: a full ring drops */
#define TB_EV_INTERN_SLOTS	16	/* small tables: RAM is scarce */
#define TB_EV_TRACKS		4
#define TB_EV_MAX_ARGS		4
#define TB_EV_NAME_BYTES	128
#define TB_EV_FLOWS		4
#define TB_RTOS_CHUNK		512
#ifdef FR_NO_HOOKS		/* the kernel untraced: what tracing costs */
#define TB_RTOS_NO_HOOKS	1
#endif
#include "tbfreertos.h"

#endif /* FR_TRACE_H */
