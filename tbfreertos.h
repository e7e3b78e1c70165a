/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Copyright (c) 2026, tbring contributors.  BSD-2-Clause: see COPYING, or
 * https://opensource.org/license/bsd-2-clause for the text.
 *
 * tbfreertos.h - FreeRTOS's own trace hooks onto a tbring ring: every task
 * a thread of one process, the scheduler in Perfetto's scheduling model
 * (the CPU track, thread states, the sched and thread_state tables),
 * interrupts as slices on a track of their own, and the events a task
 * writes itself (TB_TRACE_BEGIN and friends) on that task's own track.
 *
 * Using it: three lines
 *   FreeRTOSConfig.h, at its end:   #include "tbfreertos.h"
 *   one C file:                     TB_RTOS_DEFINE(8);   (8 traced tasks)
 *   main(), before the scheduler:   tb_rtos_start(&ring, &clock, "name");
 * and a reader that drains the ring (tb_reader_drain() over a UART with
 * tblink.h, or a debugger's RAM dump after a crash).  The ring is the
 * caller's (tb_ring_init() over static memory, chunks of at most
 * TB_RTOS_CHUNK bytes); the clock (struct tb_ev_clock) must read
 * nanoseconds on the trace's clock: its id TB_CLOCK_BOOTTIME, or its
 * @ref_now the same function as @now (a count since reset is that).
 * Build FreeRTOS with configUSE_TRACE_FACILITY 1 (this header sets it
 * when it is not defined).  Interrupt handlers that should show call
 * traceISR_ENTER() first and end with portYIELD_FROM_ISR() (which calls
 * traceISR_EXIT()); the port's tick handler does both already.
 *
 * What it writes (the choice, defended in docs/firmware.md)
 *   The scheduler as Linux's ftrace writes it: FtraceEventBundle packets
 *   for CPU 0 holding sched_switch (a task leaves the CPU: prev_state R
 *   when it was preempted and stays ready, S when it blocked, T when it
 *   was suspended, x when it was deleted), sched_waking (a blocked task
 *   made ready; its common_flags say "hard interrupt" when an interrupt
 *   did it) and sched_blocked_reason (what it blocked on: the thread
 *   state's blocked_function, "queue RxQ", "mutex", "delay", "notify"
 *   ...: an interned kernel symbol).  The idle task is pid 0, Linux's
 *   idle (the UI draws it as an idle CPU); each other task a tid of its
 *   own from 2 up, in process TB_RTOS_PID (1).  Interrupts are
 *   TrackEvent slices on the "Interrupts" track of that process, named
 *   by tb_rtos_irq_name(); one that readies a task draws a flow from an
 *   instant inside its slice to an instant on that task's track where
 *   it next runs.  These are written by one kernel writer (writer id
 *   TB_RTOS_WRITER_ID) with names inline (nothing interned but the
 *   blocked reasons), which re-describes the tracks after any loss.
 *
 * Tasks as threads
 *   Each task created gets a slot of the pool TB_RTOS_DEFINE() gave: its
 *   own ring writer, event writer and thread track.  A deleted task's
 *   slot and writers serve a later task, under a writer id of its own
 *   (TB_RTOS_WRITER_ID + 1 on, one per task for the life of the boot:
 *   docs/firmware.md, "Streaming").  TB_EV_CURRENT is the running task's event writer
 *   (tb_rtos_current(): one load, set by the switch hook), so the plain
 *   TB_TRACE_* macros in task code write on that task's own sequence and
 *   track: a task preempted in the middle of an event leaves its packet
 *   open in its own writer, and the task that runs meanwhile writes
 *   through another.  In an interrupt handler the plain macros write
 *   nothing (the interrupted task's writer is not theirs).  The pool's
 *   last slot is kept for the idle task; tasks beyond the pool run
 *   untraced, all shown as one thread, tid 1 "(untraced)", with no
 *   writer (stats.untraced).  The slot's number lives in the TCB's
 *   uxTaskNumber, which FreeRTOS keeps for trace tools.
 *
 * Contexts
 *   traceTASK_SWITCHED_OUT/IN run inside vTaskSwitchContext() (PendSV,
 *   the kernel's interrupts masked) or in vTaskStartScheduler() with
 *   interrupts off; every other hook that writes masks the kernel's
 *   interrupts itself (TB_RTOS_MASK(), by default the port's
 *   portSET_INTERRUPT_MASK_FROM_ISR(): BASEPRI on Cortex-M3 and up), so
 *   the kernel writer is only ever used with those masked and never
 *   waits (TB_DROP: a full ring loses the packet, counted in stats.lost,
 *   and the next packet starts the kernel's state afresh).  Interrupts
 *   above configMAX_SYSCALL_INTERRUPT_PRIORITY may not call these hooks,
 *   as they may not call FreeRTOS.  A ring with a platform wait
 *   (TB_WAIT_HOOK/TB_WAKE_HOOK, tbsync.h) is never woken from PendSV or
 *   an interrupt handler; from a hook in a task it may be, inside the
 *   hook's mask, so TB_WAKE_HOOK must be a ...FromISR() call there
 *   (vTaskNotifyGiveFromISR(): taskENTER/EXIT_CRITICAL() would lift the
 *   mask on its way out), or define none and let the reader poll.
 *   The hooks that only note what a task
 *   blocks on store into that task's slot.  Nothing allocates: the pool
 *   and every buffer are in struct tb_rtos and the TB_RTOS_DEFINE()
 *   array, static.
 *
 * Limits
 *   - One core (configNUMBER_OF_CORES 1), CPU 0.
 *   - The idle task is told by its name, configIDLE_TASK_NAME.
 *   - Task names are sent up to TB_RTOS_NAME_MAX bytes.  Blocked
 *     reasons name an object only once vQueueAddToRegistry() named it
 *     (TB_RTOS_OBJECTS of them); others say only "queue", "semaphore",
 *     "mutex".  Their iids are never reused for another string.
 *   - A ready list entered while the scheduler is suspended (an
 *     interrupt readied the task) shows as a wake by the task that
 *     resumed the scheduler, as FreeRTOS itself does it then.
 *
 * C99, no allocation; needs tbevent.h (and so tbring.h, tbpb.h).  The
 * hook macros expand inside FreeRTOS's own files (tasks.c, queue.c,
 * port.c) and use their names; the functions take only plain types.
 */
#ifndef TBFREERTOS_H
#define TBFREERTOS_H
#define TBFREERTOS_H_VERSION 200	/* tbbase.h: TBRING_VERSION */

#if !defined(__ASSEMBLER__) && !defined(__IAR_SYSTEMS_ASM__)

#if defined(TBEVENT_H) && defined(TB__EV_DEFAULT_CURRENT)
#error "tbfreertos.h: include it (FreeRTOS.h) before tbevent.h: the macros' writer is then the running task's"
#endif
#ifndef TB_EV_CURRENT
#define TB_EV_CURRENT	tb_rtos_current()
#endif
#include "tbevent.h"

/* Headers of one release only: a mixed copy does not compile. */
#if TBEVENT_H_VERSION != TBFREERTOS_H_VERSION
#error "tbfreertos.h needs the tbevent.h of its own release"
#endif

#ifndef TB_RTOS_PID
#define TB_RTOS_PID		1	/* the firmware's process */
#endif
#ifndef TB_RTOS_CHUNK
#define TB_RTOS_CHUNK		512	/* the ring's chunk size, at most */
#endif
#ifndef TB_RTOS_WRITER_ID
#define TB_RTOS_WRITER_ID	1	/* the kernel's; tasks' follow */
#endif
#ifndef TB_RTOS_OBJECTS
#define TB_RTOS_OBJECTS		8	/* objects named in blocked reasons */
#endif
#ifndef TB_RTOS_NAME_MAX
#define TB_RTOS_NAME_MAX	32	/* bytes of a task's name sent */
#endif
#ifndef TB_RTOS_IRQS
#define TB_RTOS_IRQS		64	/* interrupt numbers that take names */
#endif

#if defined(configUSE_TRACE_FACILITY) && !configUSE_TRACE_FACILITY
#error "tbfreertos.h: build FreeRTOS with configUSE_TRACE_FACILITY 1"
#endif
#ifndef configUSE_TRACE_FACILITY
#define configUSE_TRACE_FACILITY	1
#endif

typedef char tb__rtos_name_check[TB_RTOS_NAME_MAX >= 1 &&
				 TB_RTOS_NAME_MAX <= 64 ? 1 : -1];
typedef char tb__rtos_ids_check[TB_RTOS_WRITER_ID >= 1 &&
				TB_RTOS_WRITER_ID < 65000 ? 1 : -1];

#ifdef __cplusplus
extern "C" {
#endif

/* What a task blocked on (its thread state's blocked_function). */
enum tb_rtos_why {
	TB_RTOS_WHY_NONE,
	TB_RTOS_WHY_QUEUE,
	TB_RTOS_WHY_SEMAPHORE,
	TB_RTOS_WHY_MUTEX,
	TB_RTOS_WHY_NOTIFY,
	TB_RTOS_WHY_DELAY,
	TB_RTOS_WHY_EVENTS,
	TB_RTOS_WHY_STREAM,
	TB_RTOS_WHY_SUSPEND,
	TB_RTOS_WHY_DELETE,
	TB__RTOS_WHY_N
};

/* A task's prev_state in sched_switch (Linux 4.4's layout: no version). */
#define TB_RTOS_STATE_R		0x00u	/* preempted: still ready */
#define TB_RTOS_STATE_S		0x01u	/* blocked */
#define TB_RTOS_STATE_T		0x04u	/* suspended */
#define TB_RTOS_STATE_DEAD	0x40u	/* deleted */

/* A task's writers: its own ring writer and event writer. */
struct tb_rtos_writers {
	struct tb_writer w;
	struct tb_ev_writer ev;
	const void *owner;		/* its task's slot; NULL: free */
	uint8_t scratch[TB_RTOS_CHUNK];
};

/* One task: a slot of the pool (the idle task's has no writers). */
struct tb_rtos_task {
	struct tb_rtos_writers *wr;	/* NULL: none (idle, not started) */
	struct tb_track track;		/* its thread */
	const void *tcb;		/* NULL: a free slot */
	const char *name;		/* pcTaskName, in the TCB */
	const void *obj;		/* what it blocks on */
	uint64_t flow;			/* an interrupt readied it: ends at
					   its next run; 0: none */
	int32_t tid;
	int32_t prio;
	uint8_t nlen;			/* bytes of its name sent */
	uint8_t why;			/* enum tb_rtos_why */
	uint8_t blocked;		/* not ready: a wake is a wake */
	uint8_t dying;			/* deleted while running */
};

/* A named object (vQueueAddToRegistry()), for blocked reasons. */
struct tb_rtos_obj {
	const void *obj;
	const char *name;
	uint8_t why;
	uint32_t sent;			/* the kernel state that has it */
};

struct tb_rtos_stats {
	uint32_t switches;		/* the task on the CPU changed */
	uint32_t preempt_open;		/* ... the one leaving mid-event */
	uint32_t wakes;			/* blocked tasks made ready */
	uint32_t isr_wakes;		/* ... by an interrupt */
	uint32_t isrs;			/* traceISR_ENTER()s */
	uint32_t packets;		/* kernel packets written */
	uint32_t lost;			/* kernel packets the ring refused */
	uint32_t untraced;		/* tasks created with the pool full
					   or the writer ids used up */
};

/* The most room a kernel packet asks (a switch whose prev blocked on a
 * named object this state has not seen: tb__rtos_switch()). */
#define TB__RTOS_PKT	(136 + 3 * TB_RTOS_NAME_MAX)

struct tb_rtos {
	struct tb_ring *ring;		/* NULL: not started */
	const struct tb_ev_clock *clock;
	const char *name;
	struct tb_ev_writer *cur;	/* the running task's, or NULL */
	struct tb_rtos_task *running;
	struct tb_rtos_task *prev;	/* switched out, not yet in */
	uint64_t t_out;
	uint8_t prev_ready;
	uint8_t fresh;			/* re-describe, clear the state */
	uint8_t started;		/* the first task ran */
	uint8_t *at;			/* this packet's start, in place */
	uint32_t bound;			/* ... and the room it asked */
	uint32_t epoch;			/* the kernel's incremental state */
	uint32_t gen;			/* the ring's generation seen */
	uint32_t next_tid;
	uint32_t next_wid;		/* tasks' writer ids given out */
	uint64_t flows;
	uint64_t proc_uuid, irq_uuid;
	struct tb_track proc;		/* the tasks' threads' parent */
	struct tb_writer kw;		/* the kernel's writer */
	struct tb_rtos_stats stats;
	const char *irq_names[TB_RTOS_IRQS];
	struct tb_rtos_obj objs[TB_RTOS_OBJECTS];
	uint32_t why_sent[TB__RTOS_WHY_N];	/* states that have each */
	uint8_t scratch[TB_RTOS_CHUNK];
};

/*
 * The one state, and the pool: TB_RTOS_DEFINE(n) in one file defines
 * them (zeroed static memory): n task slots, the idle task's among them,
 * and n - 1 tasks' writers (n at least 2).
 */
extern struct tb_rtos tb_rtos;
extern struct tb_rtos_task *const tb_rtos_tasks;
extern struct tb_rtos_writers *const tb_rtos_writer_sets;
extern const uint32_t tb_rtos_ntasks;
#define TB_RTOS_DEFINE(n)						\
	static struct tb_rtos_task tb__rtos_pool[n];			\
	static struct tb_rtos_writers tb__rtos_wpool[(n) - 1];		\
	struct tb_rtos tb_rtos;						\
	struct tb_rtos_task *const tb_rtos_tasks = tb__rtos_pool;	\
	struct tb_rtos_writers *const tb_rtos_writer_sets = tb__rtos_wpool; \
	const uint32_t tb_rtos_ntasks = (n)

/* The writer of the running task, for TB_EV_CURRENT; NULL in handlers. */
static inline struct tb_ev_writer *tb_rtos_current(void)
{
	return TB_IN_INTERRUPT() ? NULL : tb_rtos.cur;
}

/* ------------------------------------------------------------------------
 * Perfetto's field numbers (protos/perfetto/trace/: trace_packet,
 * ftrace/ftrace_event_bundle, ftrace/ftrace_event, ftrace/sched,
 * interned_data/interned_data, track_event/track_event and
 * track_descriptor, process_descriptor, thread_descriptor).
 */
enum {
	TB__RK_TP_FTRACE = 1,		/* TracePacket */
	TB__RK_TP_TS = 8,
	TB__RK_TP_TRACK_EVENT = 11,
	TB__RK_TP_INTERNED = 12,
	TB__RK_TP_FLAGS = 13,
	TB__RK_TP_DESCRIPTOR = 60,
	TB__RK_FB_CPU = 1,		/* FtraceEventBundle */
	TB__RK_FB_EVENT = 2,
	TB__RK_FE_TS = 1,		/* FtraceEvent */
	TB__RK_FE_PID = 2,
	TB__RK_FE_SWITCH = 4,
	TB__RK_FE_FLAGS = 5,
	TB__RK_FE_BLOCKED = 18,
	TB__RK_FE_WAKING = 20,
	TB__RK_SS_PREV_COMM = 1,	/* SchedSwitchFtraceEvent */
	TB__RK_SS_PREV_PID = 2,
	TB__RK_SS_PREV_PRIO = 3,
	TB__RK_SS_PREV_STATE = 4,
	TB__RK_SS_NEXT_COMM = 5,
	TB__RK_SS_NEXT_PID = 6,
	TB__RK_SS_NEXT_PRIO = 7,
	TB__RK_SW_COMM = 1,		/* SchedWakingFtraceEvent */
	TB__RK_SW_PID = 2,
	TB__RK_SW_PRIO = 3,
	TB__RK_SW_SUCCESS = 4,
	TB__RK_SW_TARGET_CPU = 5,
	TB__RK_BR_PID = 1,		/* SchedBlockedReasonFtraceEvent */
	TB__RK_BR_CALLER = 2,
	TB__RK_ID_KSYMS = 26,		/* InternedData.kernel_symbols */
	TB__RK_IS_IID = 1,		/* InternedString */
	TB__RK_IS_STR = 2,
	TB__RK_TE_TYPE = 9,		/* TrackEvent */
	TB__RK_TE_TRACK = 11,
	TB__RK_TE_NAME = 23,
	TB__RK_TE_FLOW = 47,
	TB__RK_TE_FLOW_END = 48,
	TB__RK_TD_UUID = 1,		/* TrackDescriptor */
	TB__RK_TD_NAME = 2,
	TB__RK_TD_PROCESS = 3,
	TB__RK_TD_THREAD = 4,
	TB__RK_TD_PARENT = 5,
	TB__RK_PD_PID = 1,		/* ProcessDescriptor */
	TB__RK_PD_NAME = 6,
	TB__RK_THD_PID = 1,		/* ThreadDescriptor */
	TB__RK_THD_TID = 2,
	TB__RK_THD_NAME = 5,
};

#define TB__RK_SEQ_CLEARED	1u	/* TracePacket.SequenceFlags */
#define TB__RK_HARDIRQ		0x08u	/* common_flags: TRACE_FLAG_HARDIRQ */
#define TB__RK_BEGIN		1u	/* TrackEvent.Type */
#define TB__RK_END		2u
#define TB__RK_INSTANT		3u

/*
 * The hot encoders (a switch, a waking, an interrupt's slice) are built
 * whole, every protobuf helper inlined into them, so that the field
 * numbers fold to constant key bytes even where the build optimises for
 * size: a third of the instructions of calls to each helper.
 */
#if defined(__GNUC__) && !defined(__clang__)
#define TB__RTOS_HOT	static inline __attribute__((flatten))
#else
#define TB__RTOS_HOT	static inline
#endif

/* ------------------------------------------------------------------------
 * The kernel's encoder: forward, in place in the kernel writer's chunk,
 * each nested message's length a two-byte varint (protobuf reads a
 * redundant varint as its value; Perfetto's own writer pads lengths the
 * same way) filled in when it closes.  Each packet first asks for room
 * for its largest size (names are cut at TB_RTOS_NAME_MAX; every integer
 * but the timestamp, the uuids and flow ids is a non-negative int32, at
 * most five bytes), so nothing here can overrun the room it has.
 */
static inline uint8_t *tb__rk_uint(uint8_t *p, uint32_t field, uint64_t v)
{
	return p + tb_pb_uint(p, field, v);
}

/*
 * An int32 field whose value is never negative here (tids, priorities):
 * a varint of at most five bytes, as protobuf encodes it.
 */
static inline uint8_t *tb__rk_u32(uint8_t *p, uint32_t field, uint32_t v)
{
	return p + tb_pb_uint(p, field, v);
}

static inline uint32_t tb__rk_strlen(const char *s, uint32_t max)
{
	uint32_t n = 0;

	while (s && n < max && s[n])
		n++;
	return n;
}

static inline uint8_t *tb__rk_bytes(uint8_t *p, uint32_t field,
				    const char *s, uint32_t n)
{
	p += tb_pb_len(p, field, n);
	if (n)
		TB_MEMCPY(p, s, n);
	return p + n;
}

/* A string field, cut at TB_RTOS_NAME_MAX bytes. */
static inline uint8_t *tb__rk_str(uint8_t *p, uint32_t field, const char *s)
{
	return tb__rk_bytes(p, field, s, tb__rk_strlen(s, TB_RTOS_NAME_MAX));
}

static inline uint8_t *tb__rk_fixed64(uint8_t *p, uint32_t field,
				      uint64_t v)
{
	return p + tb_pb_fixed64(p, field, v);
}

/* Opens a nested message: its key and two bytes for its length. */
static inline uint8_t *tb__rk_open(uint8_t *p, uint32_t field,
				   uint8_t **mark)
{
	p += tb_pb_len(p, field, 0) - 1;	/* the key alone */
	*mark = p;
	return p + 2;
}

static inline uint8_t *tb__rk_close(uint8_t *mark, uint8_t *end)
{
	uint32_t n = (uint32_t)(end - mark - 2);

	mark[0] = (uint8_t)(0x80u | (n & 0x7fu));
	mark[1] = (uint8_t)(n >> 7);
	return end;
}

/* ------------------------------------------------------------------------
 * Tasks and time.
 */
static inline uint64_t tb__rtos_now(void)
{
	return tb_rtos.clock ? tb_rtos.clock->now(tb_rtos.clock->ctx) : 0;
}

/* The slot a TCB's uxTaskNumber names, or NULL (untraced, or not ours). */
static inline struct tb_rtos_task *tb__rtos_task(const void *tcb,
						 uint32_t number)
{
	struct tb_rtos_task *t;

	if (!number || number > tb_rtos_ntasks)
		return NULL;
	t = &tb_rtos_tasks[number - 1];
	return t->tcb == tcb ? t : NULL;
}

#define TB__RTOS_UNTRACED	1	/* the tid of tasks with no slot */

static inline int32_t tb__rtos_tid(const struct tb_rtos_task *t)
{
	return t ? t->tid : TB__RTOS_UNTRACED;
}

static inline const char *tb__rtos_name(const struct tb_rtos_task *t,
					uint32_t *n)
{
	*n = t ? t->nlen : 10;
	return t ? t->name : "(untraced)";
}

static inline bool tb__rtos_streq(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

/* ------------------------------------------------------------------------
 * The kernel writer: its incremental state, and the packets.
 */
static inline void tb__rtos_lost(int ret)
{
	if (ret == TB_OK) {
		tb_rtos.stats.packets++;
		return;
	}
	tb_rtos.stats.lost++;
	tb_rtos.fresh = 1;	/* the descriptors may be gone with it */
}

/*
 * Room for a kernel packet of at most @bound bytes, in the kernel
 * writer's chunk (no copy: a chunk's fragment holds TB__RTOS_PKT bytes,
 * tb_rtos_start() saw to it).  NULL: the ring refused it (counted).
 */
static inline uint8_t *tb__rtos_begin(uint32_t bound)
{
	struct tb_span span;
	int ret;

	TB_BUG_ON(bound > TB__RTOS_PKT);
	tb_rtos.bound = bound;
	ret = tb_writer_open(&tb_rtos.kw, bound, 0, &span);
	if (ret) {
		tb_writer_record_loss(&tb_rtos.kw);
		tb__rtos_lost(ret);
		return NULL;
	}
	tb_rtos.at = span.begin;
	return span.begin;
}

/* The packet ends at @end: it goes out. */
static inline int tb__rtos_put(uint8_t *end)
{
	uint32_t n = (uint32_t)(end - tb_rtos.at);
	int ret;

	TB_BUG_ON(n > tb_rtos.bound);	/* it overran its room */
	ret = tb_writer_close(&tb_rtos.kw, n, 0);
	tb__rtos_lost(ret);
	return ret;
}

/* A TrackDescriptor packet for a thread (@tid >= 0) or the process. */
static inline int tb__rtos_describe(uint64_t uuid, int32_t tid,
				    const char *name)
{
	uint8_t *p = tb__rtos_begin(64 + TB_RTOS_NAME_MAX), *td, *in;

	if (!p)
		return TB_FULL;
	p = tb__rk_open(p, TB__RK_TP_DESCRIPTOR, &td);
	p = tb__rk_uint(p, TB__RK_TD_UUID, uuid);
	if (tid < 0) {
		p = tb__rk_open(p, TB__RK_TD_PROCESS, &in);
		p = tb__rk_u32(p, TB__RK_PD_PID, TB_RTOS_PID);
		p = tb__rk_str(p, TB__RK_PD_NAME, name);
	} else {
		p = tb__rk_uint(p, TB__RK_TD_PARENT, tb_rtos.proc_uuid);
		p = tb__rk_open(p, TB__RK_TD_THREAD, &in);
		p = tb__rk_u32(p, TB__RK_THD_PID, TB_RTOS_PID);
		p = tb__rk_u32(p, TB__RK_THD_TID, (uint32_t)tid);
		p = tb__rk_str(p, TB__RK_THD_NAME, name);
	}
	p = tb__rk_close(in, p);
	return tb__rtos_put(tb__rk_close(td, p));
}

/* The interrupts' track: a named child of the process. */
static inline int tb__rtos_describe_irqs(void)
{
	uint8_t *p = tb__rtos_begin(48), *td;

	if (!p)
		return TB_FULL;
	p = tb__rk_uint(p, TB__RK_TP_FLAGS, TB__RK_SEQ_CLEARED);
	p = tb__rk_open(p, TB__RK_TP_DESCRIPTOR, &td);
	p = tb__rk_uint(p, TB__RK_TD_UUID, tb_rtos.irq_uuid);
	p = tb__rk_str(p, TB__RK_TD_NAME, "Interrupts");
	p = tb__rk_uint(p, TB__RK_TD_PARENT, tb_rtos.proc_uuid);
	return tb__rtos_put(tb__rk_close(td, p));
}

/*
 * Before a kernel packet: after a loss (or once the service bumped the
 * ring's generation: it dropped chunks), a fresh state - a packet that
 * clears the sequence's interned data, and every track described again.
 */
static inline void tb__rtos_check_state(void)
{
	uint32_t gen = tb_ring_generation(tb_rtos.ring), i;

	if (!tb_rtos.fresh && gen == tb_rtos.gen)
		return;
	tb_rtos.fresh = 0;
	tb_rtos.gen = gen;
	tb_rtos.epoch++;
	if (tb__rtos_describe_irqs() ||
	    tb__rtos_describe(tb_rtos.proc_uuid, -1, tb_rtos.name))
		return;
	for (i = 0; i < tb_rtos_ntasks; i++) {
		struct tb_rtos_task *t = &tb_rtos_tasks[i];

		if (t->tcb && t->tid &&
		    tb__rtos_describe(t->track.uuid, t->tid, t->name))
			return;
	}
}

/* An FtraceEvent's common part: what the hooks know of the CPU now. */
static inline uint8_t *tb__rtos_fe_open(uint8_t *p, uint64_t ts,
					uint8_t **mark)
{
	p = tb__rk_open(p, TB__RK_FB_EVENT, mark);
	p = tb__rk_uint(p, TB__RK_FE_TS, ts);
	return tb__rk_u32(p, TB__RK_FE_PID, !tb_rtos.started ? 0 :
			  (uint32_t)tb__rtos_tid(tb_rtos.running));
}

static inline uint8_t *tb__rtos_bundle(uint8_t *p, uint8_t **mark)
{
	p = tb__rk_open(p, TB__RK_TP_FTRACE, mark);
	return tb__rk_uint(p, TB__RK_FB_CPU, 0);
}

/* ------------------------------------------------------------------------
 * Blocked reasons: an iid per named object, then one per kind.
 */
static const char *const tb__rtos_why_names[TB__RTOS_WHY_N] = {
	"running", "queue", "semaphore", "mutex", "notify", "delay",
	"event group", "stream buffer", "suspended", "deleted",
};

static inline uint32_t tb__rtos_why_of_queue(uint32_t type)
{
	/* ucQueueType (queue.h): base 0, mutex 1, counting 2, binary 3,
	   recursive mutex 4 */
	return type == 1 || type == 4 ? TB_RTOS_WHY_MUTEX :
	       type == 2 || type == 3 ? TB_RTOS_WHY_SEMAPHORE :
					TB_RTOS_WHY_QUEUE;
}

/* The iid of what @t blocks on; @o the named object's entry, or NULL. */
static inline uint32_t tb__rtos_reason(const struct tb_rtos_task *t,
				       struct tb_rtos_obj **o)
{
	uint32_t i;

	*o = NULL;
	for (i = 0; t->obj && i < TB_RTOS_OBJECTS; i++) {
		if (tb_rtos.objs[i].obj == t->obj &&
		    tb_rtos.objs[i].why == t->why) {
			*o = &tb_rtos.objs[i];
			return i + 1;
		}
	}
	return TB_RTOS_OBJECTS + t->why;
}

/*
 * What @t blocked on, for its switch: the iid, and the bytes of its
 * interned string when this state has not had it (0: it has).
 */
struct tb__rtos_why {
	uint32_t iid;
	uint32_t size;		/* interned_data's, at most; 0: none */
	struct tb_rtos_obj *o;
	uint32_t *sent;		/* the state that had it */
	const char *kind;
	uint32_t k, n;		/* the kind's and the name's bytes */
};

static inline void tb__rtos_why(const struct tb_rtos_task *t,
				struct tb__rtos_why *w)
{
	w->iid = tb__rtos_reason(t, &w->o);
	w->kind = tb__rtos_why_names[t->why];
	w->sent = w->o ? &w->o->sent : &tb_rtos.why_sent[t->why];
	w->size = 0;
	if (*w->sent == tb_rtos.epoch)
		return;
	w->k = tb__rk_strlen(w->kind, 16);
	w->n = w->o ? tb__rk_strlen(w->o->name, TB_RTOS_NAME_MAX) : 0;
	w->size = 3 + 3 + 6 + 3 + w->k + 1 + w->n;
}

/* The interned string "kind" or "kind name" (w->size: it is needed). */
static inline uint8_t *tb__rtos_intern(uint8_t *p,
				       const struct tb__rtos_why *w)
{
	uint8_t *id, *e, *s;

	*w->sent = tb_rtos.epoch;
	p = tb__rk_open(p, TB__RK_TP_INTERNED, &id);
	p = tb__rk_open(p, TB__RK_ID_KSYMS, &e);
	p = tb__rk_uint(p, TB__RK_IS_IID, w->iid);
	p = tb__rk_open(p, TB__RK_IS_STR, &s);
	TB_MEMCPY(p, w->kind, w->k);
	p += w->k;
	if (w->n) {
		*p++ = ' ';
		TB_MEMCPY(p, w->o->name, w->n);
		p += w->n;
	}
	p = tb__rk_close(s, p);
	p = tb__rk_close(e, p);
	return tb__rk_close(id, p);
}

/* ------------------------------------------------------------------------
 * The scheduler's events.
 */
static inline uint32_t tb__rtos_prev_state(const struct tb_rtos_task *t,
					   bool ready)
{
	if (ready || !t)
		return TB_RTOS_STATE_R;
	return t->why == TB_RTOS_WHY_SUSPEND ? TB_RTOS_STATE_T :
	       t->why == TB_RTOS_WHY_DELETE ? TB_RTOS_STATE_DEAD :
					      TB_RTOS_STATE_S;
}

/*
 * sched_switch from @prev to @next at @ts, and why @prev blocked (the
 * first switch: from pid 0, as Linux's CPUs start).
 */
TB__RTOS_HOT void tb__rtos_switch(struct tb_rtos_task *prev, bool ready,
				   struct tb_rtos_task *next, int32_t prio,
				   uint64_t ts, bool first)
{
	uint32_t state = tb__rtos_prev_state(prev, ready), n1, n2;
	const char *pn = tb__rtos_name(prev, &n1);
	const char *nn = tb__rtos_name(next, &n2);
	int32_t ptid = first ? 0 : tb__rtos_tid(prev);
	struct tb__rtos_why w = { 0, 0, NULL, NULL, NULL, 0, 0 };
	uint8_t *p, *b, *e, *ss;

	if (prev && state == TB_RTOS_STATE_S)
		tb__rtos_why(prev, &w);
	p = tb__rtos_begin(64 + n1 + n2 + (w.iid ? 40 : 0) + w.size);
	if (!p)
		return;
	if (w.size)
		p = tb__rtos_intern(p, &w);
	p = tb__rtos_bundle(p, &b);
	p = tb__rtos_fe_open(p, ts, &e);
	p = tb__rk_open(p, TB__RK_FE_SWITCH, &ss);
	p = tb__rk_bytes(p, TB__RK_SS_PREV_COMM, pn, n1);
	p = tb__rk_u32(p, TB__RK_SS_PREV_PID, (uint32_t)ptid);
	p = tb__rk_u32(p, TB__RK_SS_PREV_PRIO, prev ? (uint32_t)prev->prio : 0);
	p = tb__rk_uint(p, TB__RK_SS_PREV_STATE, state);
	p = tb__rk_bytes(p, TB__RK_SS_NEXT_COMM, nn, n2);
	p = tb__rk_u32(p, TB__RK_SS_NEXT_PID, (uint32_t)tb__rtos_tid(next));
	p = tb__rk_u32(p, TB__RK_SS_NEXT_PRIO, (uint32_t)prio);
	p = tb__rk_close(e, tb__rk_close(ss, p));
	if (w.iid) {	/* after the switch: the state it left is blocked */
		p = tb__rtos_fe_open(p, ts, &e);
		p = tb__rk_open(p, TB__RK_FE_BLOCKED, &ss);
		p = tb__rk_u32(p, TB__RK_BR_PID, (uint32_t)prev->tid);
		p = tb__rk_uint(p, TB__RK_BR_CALLER, w.iid);
		p = tb__rk_close(e, tb__rk_close(ss, p));
	}
	tb__rtos_put(tb__rk_close(b, p));
}

/* A TrackEvent of the kernel's, its name inline, a flow if @flow. */
TB__RTOS_HOT void tb__rtos_event(uint64_t ts, uint32_t type, uint64_t track,
				  const char *name, uint32_t flow_field,
				  uint64_t flow)
{
	uint32_t n = tb__rk_strlen(name, TB_RTOS_NAME_MAX);
	uint8_t *p = tb__rtos_begin(40 + n), *te;

	if (!p)
		return;
	p = tb__rk_uint(p, TB__RK_TP_TS, ts);
	p = tb__rk_open(p, TB__RK_TP_TRACK_EVENT, &te);
	p = tb__rk_uint(p, TB__RK_TE_TYPE, type);
	p = tb__rk_uint(p, TB__RK_TE_TRACK, track);
	if (name)
		p = tb__rk_bytes(p, TB__RK_TE_NAME, name, n);
	if (flow)
		p = tb__rk_fixed64(p, flow_field, flow);
	tb__rtos_put(tb__rk_close(te, p));
}

/* sched_waking of @t by the running task, or by an interrupt. */
TB__RTOS_HOT void tb__rtos_waking(const struct tb_rtos_task *t,
				   int32_t tid, int32_t prio, uint64_t ts,
				   bool isr)
{
	uint32_t n;
	const char *name = tb__rtos_name(t, &n);
	uint8_t *p = tb__rtos_begin(56 + n), *b, *e, *sw;

	if (!p)
		return;
	p = tb__rtos_bundle(p, &b);
	p = tb__rtos_fe_open(p, ts, &e);
	p = tb__rk_open(p, TB__RK_FE_WAKING, &sw);
	p = tb__rk_bytes(p, TB__RK_SW_COMM, name, n);
	p = tb__rk_u32(p, TB__RK_SW_PID, (uint32_t)tid);
	p = tb__rk_u32(p, TB__RK_SW_PRIO, (uint32_t)prio);
	p = tb__rk_uint(p, TB__RK_SW_SUCCESS, 1);
	p = tb__rk_uint(p, TB__RK_SW_TARGET_CPU, 0);
	p = tb__rk_close(sw, p);
	if (isr)
		p = tb__rk_uint(p, TB__RK_FE_FLAGS, TB__RK_HARDIRQ);
	tb__rtos_put(tb__rk_close(b, tb__rk_close(e, p)));
}

/* ------------------------------------------------------------------------
 * The hooks' functions.  Each may be called before tb_rtos_start() (it
 * then only keeps count) and with no traced task (a NULL slot).
 */

/* traceTASK_SWITCHED_OUT: the time the kernel charges the task up to. */
static inline void tb_rtos_switched_out(struct tb_rtos_task *t, bool ready)
{
	tb_rtos.prev = t;
	tb_rtos.prev_ready = ready;
	tb_rtos.t_out = tb__rtos_now();
	if (t && t->wr && t->wr->w.cur.open)	/* left in the middle of an event */
		tb_rtos.stats.preempt_open++;
}

/* The instant that ends an interrupt's flow where its task now runs. */
static inline void tb__rtos_woken(struct tb_rtos_task *t, uint64_t ts)
{
	uint64_t flow = t->flow;

	t->flow = 0;
	tb__rtos_event(ts, TB__RK_INSTANT, t->track.uuid, "woken by interrupt",
		       TB__RK_TE_FLOW_END, flow);
}

/* traceTASK_SWITCHED_IN: @t (@prio) runs now. */
static inline void tb_rtos_switched_in(struct tb_rtos_task *t, int32_t prio)
{
	struct tb_rtos_task *prev = tb_rtos.prev;
	uint64_t ts = tb_rtos.started ? tb_rtos.t_out : tb__rtos_now();

	tb_rtos.cur = t && t->wr && tb_rtos.ring ? &t->wr->ev : NULL;
	if (tb_rtos.started && t == tb_rtos.running)
		return;		/* the same task again: no switch */
	tb_rtos.stats.switches++;
	tb_rtos.running = t;
	if (t) {
		t->prio = prio;
		t->why = TB_RTOS_WHY_NONE;
		t->obj = NULL;
		t->blocked = 0;
	}
	if (tb_rtos.ring) {
		tb__rtos_check_state();
		tb__rtos_switch(prev, !tb_rtos.started || tb_rtos.prev_ready,
				t, prio, ts, !tb_rtos.started);
		if (t && t->flow)
			tb__rtos_woken(t, ts);
	}
	tb_rtos.started = 1;
	if (prev && prev->dying) {	/* its last switch is written */
		prev->dying = 0;
		prev->tcb = NULL;
	}
}

/* traceMOVED_TASK_TO_READY_STATE: @t (@prio) is ready. */
static inline void tb_rtos_ready(struct tb_rtos_task *t, int32_t prio)
{
	bool isr = TB_IN_INTERRUPT() != 0;
	uint64_t ts;

	if (!t || !t->blocked || !t->tid)
		return;		/* preempted, a priority change, the idle */
	t->blocked = 0;
	if (t == tb_rtos.running)
		return;		/* readied before it left the CPU: no wake */
	tb_rtos.stats.wakes++;
	tb_rtos.stats.isr_wakes += isr;
	if (!tb_rtos.ring)
		return;
	ts = tb__rtos_now();
	tb__rtos_check_state();
	tb__rtos_waking(t, t->tid, prio, ts, isr);
	if (!isr)
		return;
	t->flow = tb_ev_uuid(tb_rtos.proc_uuid, ++tb_rtos.flows);
	tb__rtos_event(ts, TB__RK_INSTANT, tb_rtos.irq_uuid, t->name,
		       TB__RK_TE_FLOW, t->flow);
}

/* What the running task is about to block on (traceBLOCKING_..., ...). */
static inline void tb_rtos_blocking(uint32_t why, const void *obj)
{
	struct tb_rtos_task *t = tb_rtos.running;

	if (!t)
		return;
	t->why = (uint8_t)why;
	t->obj = obj;
	t->blocked = 1;
}

/* traceTASK_SUSPEND: @t is suspended (maybe the running task). */
static inline void tb_rtos_suspended(struct tb_rtos_task *t)
{
	if (!t)
		return;
	t->why = TB_RTOS_WHY_SUSPEND;
	t->obj = NULL;
	t->blocked = 1;
}

/* A name for interrupt number @irq's slices (a string that stays). */
static inline void tb_rtos_irq_name(uint32_t irq, const char *name)
{
	if (irq < TB_RTOS_IRQS)
		tb_rtos.irq_names[irq] = name;
}

#ifndef TB_RTOS_IRQ
#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'
static inline uint32_t tb__rtos_ipsr(void)
{
	uint32_t v;

	__asm__ __volatile__("mrs %0, ipsr" : "=r"(v));
	return v & 0x1ffu;
}
#define TB_RTOS_IRQ()	tb__rtos_ipsr()	/* the exception number */
#else
#define TB_RTOS_IRQ()	0u
#endif
#endif

/* traceISR_ENTER: a slice on the interrupts' track. */
static inline void tb_rtos_isr_enter(void)
{
	uint32_t irq = TB_RTOS_IRQ();
	const char *name = irq < TB_RTOS_IRQS ? tb_rtos.irq_names[irq] : NULL;

	tb_rtos.stats.isrs++;
	if (!tb_rtos.ring)
		return;
	tb__rtos_check_state();
	tb__rtos_event(tb__rtos_now(), TB__RK_BEGIN, tb_rtos.irq_uuid,
		       name ? name : "interrupt", 0, 0);
}

/* traceISR_EXIT, traceISR_EXIT_TO_SCHEDULER: the slice ends. */
static inline void tb_rtos_isr_exit(void)
{
	if (!tb_rtos.ring)
		return;
	tb__rtos_check_state();
	tb__rtos_event(tb__rtos_now(), TB__RK_END, tb_rtos.irq_uuid, NULL, 0,
		       0);
}

/* traceQUEUE_REGISTRY_ADD: @obj is called @name in blocked reasons. */
static inline void tb_rtos_name_object(const void *obj, const char *name,
				       uint32_t why)
{
	uint32_t i;

	for (i = 0; i < TB_RTOS_OBJECTS; i++) {
		struct tb_rtos_obj *o = &tb_rtos.objs[i];

		if (o->obj == obj && o->why == why)
			return;		/* an iid keeps its string */
		if (!o->obj) {
			o->obj = obj;
			o->name = name;
			o->why = (uint8_t)why;
			return;
		}
	}
}

/*
 * A task's writers, once there is a ring: a free set (there is one for
 * each slot but the idle task's) under a writer id no writer had before
 * in this boot.  A reused id would be one sequence to the host: a
 * stream host that lost the new writer's first state would restate the
 * old one's interned names on its events.  Once the ids are used up
 * (65535 - TB_RTOS_WRITER_ID tasks), a new task has no writers
 * (stats.untraced): its own events are lost, never misnamed.
 */
static inline void tb__rtos_task_writers(struct tb_rtos_task *t)
{
	struct tb_rtos_writers *wr = NULL;
	uint32_t i, id = TB_RTOS_WRITER_ID + 1u + tb_rtos.next_wid;

	if (id > 0xffffu) {
		tb_rtos.stats.untraced++;
		return;
	}
	for (i = 0; i + 1 < tb_rtos_ntasks && !wr; i++)
		if (!tb_rtos_writer_sets[i].owner)
			wr = &tb_rtos_writer_sets[i];
	if (!wr)
		return;		/* cannot happen: the last slot is idle's */
	wr->owner = t;
	tb_rtos.next_wid++;
	tb_writer_init(&wr->w, tb_rtos.ring, (uint16_t)id, 0, TB_DROP,
		       wr->scratch);
	tb_ev_writer_init(&wr->ev, &wr->w, &t->track, tb_rtos.clock, 0);
	t->wr = wr;
}

/*
 * traceTASK_CREATE: a slot for the task; returns its number for the
 * TCB's uxTaskNumber (0: the pool is full, the task goes untraced).
 */
static inline uint32_t tb_rtos_task_created(const void *tcb, const char *name,
					    int32_t prio, bool idle)
{
	struct tb_rtos_task *t = NULL;
	uint32_t i, free = 0;

	for (i = 0; i < tb_rtos_ntasks; i++) {
		if (tb_rtos_tasks[i].tcb || tb_rtos_tasks[i].dying)
			continue;
		free++;
		if (!t)
			t = &tb_rtos_tasks[i];
	}
	if (!t || (free == 1 && !idle)) {	/* the last is the idle's */
		tb_rtos.stats.untraced++;
		return 0;
	}
	TB_MEMSET(t, 0, sizeof(*t));
	t->tcb = tcb;
	t->name = name;
	t->nlen = (uint8_t)tb__rk_strlen(name, TB_RTOS_NAME_MAX);
	t->prio = prio;
	t->tid = idle ? 0 : (int32_t)(2 + tb_rtos.next_tid++);
	t->blocked = 1;		/* new: its first ready is a wake */
	tb_track_thread(&t->track, tb_ev_uuid(tb_rtos.proc_uuid,
					      (uint64_t)t->tid + 1),
			&tb_rtos.proc, TB_RTOS_PID, t->tid, name);
	if (tb_rtos.ring && t->tid) {
		tb__rtos_task_writers(t);
		tb__rtos_check_state();
		tb__rtos_describe(t->track.uuid, t->tid, t->name);
	}
	return (uint32_t)(t - tb_rtos_tasks) + 1;
}

/* A task's events end: what its writers hold goes out. */
static inline void tb__rtos_task_finish(struct tb_rtos_task *t)
{
	if (!tb_rtos.ring || !t->wr)
		return;
	tb_ev_writer_finish(&t->wr->ev);
	tb_writer_release(&t->wr->w);
}

/* traceTASK_DELETE: @t goes; its slot once its last switch is written. */
static inline void tb_rtos_task_deleted(struct tb_rtos_task *t)
{
	if (!t)
		return;
	t->why = TB_RTOS_WHY_DELETE;
	t->obj = NULL;
	t->blocked = 0;		/* never woken again */
	tb__rtos_task_finish(t);
	if (t->wr) {		/* its writers are free for another */
		if (tb_rtos.cur == &t->wr->ev)
			tb_rtos.cur = NULL;
		t->wr->owner = NULL;
		t->wr = NULL;
	}
	if (t == tb_rtos.running)
		t->dying = 1;
	else
		t->tcb = NULL;
}

/*
 * Starts tracing into @ring (chunks of 256 bytes up to TB_RTOS_CHUNK; 512
 * and up where TB_RTOS_NAME_MAX is over 37) with
 * @clock (nanoseconds on the trace's clock: see the top), the process
 * called @name.  Call it before vTaskStartScheduler(), before or after
 * the tasks are created.  TB_EINVAL, TB_ECLOCKREF (a clock whose reading
 * is not the trace's), or tb_writer_init()'s error.
 */
static inline int tb_rtos_start(struct tb_ring *ring,
				const struct tb_ev_clock *clock,
				const char *name)
{
	uint32_t i;
	int ret;

	if (!ring || !clock || !clock->now || !name || tb_rtos_ntasks < 2 ||
	    ring->chunk_size > TB_RTOS_CHUNK ||
	    tb_frag_max_size(ring->chunk_size) < TB__RTOS_PKT)
		return TB_EINVAL;
	if (clock->id != TB_CLOCK_BOOTTIME && clock->ref_now != clock->now)
		return TB_ECLOCKREF;
	ret = tb_writer_init(&tb_rtos.kw, ring, TB_RTOS_WRITER_ID, 0, TB_DROP,
			     tb_rtos.scratch);
	if (ret)
		return ret;
	tb_rtos.clock = clock;
	tb_rtos.name = name;
	tb_rtos.proc_uuid = tb_ev_uuid(0x7462722d72746f73ull, TB_RTOS_PID);
	tb_rtos.irq_uuid = tb_ev_uuid(tb_rtos.proc_uuid, 0);
	tb_track_process(&tb_rtos.proc, tb_rtos.proc_uuid, TB_RTOS_PID, name);
	tb_rtos.fresh = 1;
	tb_rtos.ring = ring;
	for (i = 0; i < tb_rtos_ntasks; i++) {	/* created before us */
		struct tb_rtos_task *t = &tb_rtos_tasks[i];

		t->track.parent = &tb_rtos.proc;
		t->track.uuid = tb_ev_uuid(tb_rtos.proc_uuid,
					   (uint64_t)t->tid + 1);
		if (t->tcb && t->tid && !t->wr)
			tb__rtos_task_writers(t);
	}
	return TB_OK;
}

/*
 * Ends the trace: every task's writers and the kernel's let go of what
 * they hold, a flow still waiting for its task's run ends here.  Call it
 * with the scheduler stopped or suspended and interrupts masked, once no
 * task is in the middle of an event (a task preempted inside one loses
 * it, counted as a loss).  Tracing stops.
 */
static inline void tb_rtos_stop(void)
{
	uint64_t ts = tb__rtos_now();
	uint32_t i;

	if (!tb_rtos.ring)
		return;
	tb__rtos_check_state();
	for (i = 0; i < tb_rtos_ntasks; i++) {
		struct tb_rtos_task *t = &tb_rtos_tasks[i];

		if (!t->tcb)
			continue;
		if (t->flow)
			tb__rtos_woken(t, ts);
		tb__rtos_task_finish(t);
	}
	tb_writer_release(&tb_rtos.kw);
	tb_rtos.cur = NULL;
	tb_rtos.ring = NULL;
}

#ifdef __cplusplus
}
#endif

/* ------------------------------------------------------------------------
 * The hooks (TB_RTOS_NO_HOOKS: none, the functions alone, for a build
 * that measures what they cost).  TB_RTOS_MASK() / TB_RTOS_UNMASK(s)
 * mask the interrupts
 * that may call FreeRTOS, nesting (a port whose
 * portSET_INTERRUPT_MASK_FROM_ISR() does nothing outside handlers, as
 * RISC-V's, defines them).
 */
#ifndef TB_RTOS_MASK
#define TB_RTOS_MASK()		portSET_INTERRUPT_MASK_FROM_ISR()
#define TB_RTOS_UNMASK(s)	portCLEAR_INTERRUPT_MASK_FROM_ISR(s)
#endif
#define TB__RTOS_LOCKED(call)						\
	do {								\
		UBaseType_t tb__rtos_m = (UBaseType_t)TB_RTOS_MASK();	\
		call;							\
		TB_RTOS_UNMASK(tb__rtos_m);				\
	} while (0)
#define TB__RTOS_TASK(tcb)	tb__rtos_task((tcb), (tcb)->uxTaskNumber)

#ifndef TB_RTOS_NO_HOOKS
#define traceTASK_CREATE(tcb)						\
	TB__RTOS_LOCKED((tcb)->uxTaskNumber = tb_rtos_task_created((tcb), \
		(tcb)->pcTaskName, (int32_t)(tcb)->uxPriority,		\
		tb__rtos_streq((tcb)->pcTaskName, configIDLE_TASK_NAME)))
#define traceTASK_DELETE(tcb)						\
	TB__RTOS_LOCKED(tb_rtos_task_deleted(TB__RTOS_TASK(tcb)))
#define traceTASK_SWITCHED_OUT()					\
	tb_rtos_switched_out(TB__RTOS_TASK(pxCurrentTCB),		\
		listIS_CONTAINED_WITHIN(				\
			&pxReadyTasksLists[pxCurrentTCB->uxPriority],	\
			&pxCurrentTCB->xStateListItem) != pdFALSE)
#define traceTASK_SWITCHED_IN()						\
	tb_rtos_switched_in(TB__RTOS_TASK(pxCurrentTCB),		\
			    (int32_t)pxCurrentTCB->uxPriority)
#define traceMOVED_TASK_TO_READY_STATE(tcb)				\
	TB__RTOS_LOCKED(tb_rtos_ready(TB__RTOS_TASK(tcb),		\
				      (int32_t)(tcb)->uxPriority))
#define traceTASK_SUSPEND(tcb)						\
	TB__RTOS_LOCKED(tb_rtos_suspended(TB__RTOS_TASK(tcb)))
#define traceBLOCKING_ON_QUEUE_RECEIVE(q)				\
	tb_rtos_blocking(tb__rtos_why_of_queue((q)->ucQueueType), (q))
#define traceBLOCKING_ON_QUEUE_PEEK(q)	traceBLOCKING_ON_QUEUE_RECEIVE(q)
#define traceBLOCKING_ON_QUEUE_SEND(q)	traceBLOCKING_ON_QUEUE_RECEIVE(q)
#define traceTASK_DELAY()	tb_rtos_blocking(TB_RTOS_WHY_DELAY, NULL)
#define traceTASK_DELAY_UNTIL(t) tb_rtos_blocking(TB_RTOS_WHY_DELAY, NULL)
#define traceTASK_NOTIFY_TAKE_BLOCK(i)					\
	tb_rtos_blocking(TB_RTOS_WHY_NOTIFY, NULL)
#define traceTASK_NOTIFY_WAIT_BLOCK(i)					\
	tb_rtos_blocking(TB_RTOS_WHY_NOTIFY, NULL)
#define traceEVENT_GROUP_SYNC_BLOCK(g, set, wait)			\
	tb_rtos_blocking(TB_RTOS_WHY_EVENTS, (g))
#define traceEVENT_GROUP_WAIT_BITS_BLOCK(g, wait)			\
	tb_rtos_blocking(TB_RTOS_WHY_EVENTS, (g))
#define traceBLOCKING_ON_STREAM_BUFFER_SEND(b)				\
	tb_rtos_blocking(TB_RTOS_WHY_STREAM, (b))
#define traceBLOCKING_ON_STREAM_BUFFER_RECEIVE(b)			\
	tb_rtos_blocking(TB_RTOS_WHY_STREAM, (b))
#define traceQUEUE_REGISTRY_ADD(q, name)				\
	TB__RTOS_LOCKED(tb_rtos_name_object((q), (name),		\
		tb__rtos_why_of_queue((q)->ucQueueType)))
#define traceISR_ENTER()	TB__RTOS_LOCKED(tb_rtos_isr_enter())
#define traceISR_EXIT()		TB__RTOS_LOCKED(tb_rtos_isr_exit())
#define traceISR_EXIT_TO_SCHEDULER()	traceISR_EXIT()
#endif /* !TB_RTOS_NO_HOOKS */

#endif /* !__ASSEMBLER__ */
#endif /* TBFREERTOS_H */
