/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FreeRTOSConfig.h - the FreeRTOS example's kernel configuration: one
 * core, preemption, a 1 kHz tick, run-time statistics on the trace's own
 * clock (the oracle the e2e compares the trace with), and, at the end,
 * the tracing: tbfreertos.h defines FreeRTOS's trace hooks.
 */
#ifndef FREERTOS_CONFIG_H
#define FREERTOS_CONFIG_H

#include "board.h"

#define configCPU_CLOCK_HZ			BOARD_COUNTER_HZ	/* unused */
#define configUSE_PREEMPTION			1
#define configUSE_TIME_SLICING			1
#define configUSE_PORT_OPTIMISED_TASK_SELECTION	0
#define configUSE_16_BIT_TICKS			0
#define configMAX_PRIORITIES			6
#ifdef BOARD_MICROBIT		/* 16 KiB of RAM: a 2 KiB ring, fewer events */
#define configTICK_RATE_HZ			500
#define configMINIMAL_STACK_SIZE		96
#define configTOTAL_HEAP_SIZE			(5 * 1024)
#define FR_STACK				200	/* words */
#else
#define configTICK_RATE_HZ			1000
#define configMINIMAL_STACK_SIZE		256
#define configTOTAL_HEAP_SIZE			(20 * 1024)
#define FR_STACK				256
#endif
#define configMAX_TASK_NAME_LEN			12
#define configSUPPORT_DYNAMIC_ALLOCATION	1
#define configSUPPORT_STATIC_ALLOCATION		0
#define configUSE_IDLE_HOOK			0
#define configUSE_TICK_HOOK			0
#define configUSE_MALLOC_FAILED_HOOK		0
#define configCHECK_FOR_STACK_OVERFLOW		0
#define configUSE_MUTEXES			1
#define configUSE_RECURSIVE_MUTEXES		0
#define configUSE_COUNTING_SEMAPHORES		1
#define configUSE_TASK_NOTIFICATIONS		1
#define configUSE_TIMERS			0
#define configUSE_CO_ROUTINES			0
#define configQUEUE_REGISTRY_SIZE		8
#define configUSE_TRACE_FACILITY		1
#define configUSE_STATS_FORMATTING_FUNCTIONS	0
#define configCHECK_HANDLER_INSTALLATION	0
#define configENABLE_BACKWARD_COMPATIBILITY	0
#define configENABLE_MPU			0

/* Interrupt priorities (the MPS2 boards implement 3 bits). */
#define configPRIO_BITS				3
#define configKERNEL_INTERRUPT_PRIORITY		(7 << (8 - configPRIO_BITS))
#define configMAX_SYSCALL_INTERRUPT_PRIORITY	(2 << (8 - configPRIO_BITS))

/* Run-time statistics: the kernel's own count of each task's CPU time,
 * on the clock the trace uses (nanoseconds since the scheduler started). */
#define configGENERATE_RUN_TIME_STATS		1
#define configRUN_TIME_COUNTER_TYPE		uint64_t
uint64_t fr_runtime_now(void);
void fr_runtime_start(void);
#define portCONFIGURE_TIMER_FOR_RUN_TIME_STATS()	fr_runtime_start()
#define portGET_RUN_TIME_COUNTER_VALUE()	fr_runtime_now()

#define INCLUDE_vTaskDelay			1
#define INCLUDE_vTaskDelayUntil			1
#define INCLUDE_vTaskSuspend			1
#define INCLUDE_vTaskDelete			0
#define INCLUDE_xTaskGetSchedulerState		1
#define INCLUDE_eTaskGetState			1
#define INCLUDE_xTaskGetIdleTaskHandle		1

void fr_assert(const char *file, int line);
#define configASSERT(x)	do { if (!(x)) fr_assert(__FILE__, __LINE__); } while (0)

/* The port's handlers under the vector table's names (start.c). */
#define vPortSVCHandler		SVC_Handler
#define xPortPendSVHandler	PendSV_Handler

/* Tracing: the ring's chunks, and the hooks (FR_NO_TRACE: none). */
#ifndef FR_NO_TRACE
#include "fr_trace.h"
#endif

#endif /* FREERTOS_CONFIG_H */
