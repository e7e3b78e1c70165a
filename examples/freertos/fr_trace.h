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
#ifdef BOARD_MICROBIT		/* 16 KiB of RAM: the smallest tables */
#define TB_EV_INTERN_SLOTS	8
#define TB_EV_TRACKS		2	/* the task's thread, its process */
#define TB_EV_NAME_BYTES	32
#define TB_EV_FLOWS		1
#define TB_EV_OWED_ENDS		2
#define TB_EV_SITES		2	/* events kept encoded: each ~110 B */
#define TB_RTOS_CHUNK		256
#define TB_RTOS_OBJECTS		4
#define TB_RTOS_IRQS		32
#define FR_CHUNK		256u
#define FR_NCHUNKS		8u
#define FR_TASKS		5	/* four tasks and the idle one */
#define FR_TIMER_HZ		211u	/* fewer events: a 2 KiB ring */
#define FR_LOG_BURST		4
#define FR_LOG_TEXT		"a short annotation"
#else
#define TB_EV_INTERN_SLOTS	16	/* small tables: RAM is scarce */
#define TB_EV_TRACKS		4
#define TB_EV_NAME_BYTES	128
#define TB_EV_FLOWS		4
#define TB_RTOS_CHUNK		512
#define FR_CHUNK		512u
#define FR_NCHUNKS		32u
#define FR_TASKS		6
#define FR_TIMER_HZ		517u	/* drifts against the 1 kHz tick */
#define FR_LOG_BURST		8
#define FR_LOG_TEXT		"a long annotation, for a task preempted " \
				"in the middle of its event"
#endif
#define TB_EV_MAX_ARGS		4
#ifdef FR_NO_HOOKS		/* the kernel untraced: what tracing costs */
#define TB_RTOS_NO_HOOKS	1
#endif
#include "tbfreertos.h"

#endif /* FR_TRACE_H */
