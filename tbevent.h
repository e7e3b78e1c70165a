/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Copyright (c) 2026, tbring contributors.  BSD-2-Clause: see COPYING, or
 * https://opensource.org/license/bsd-2-clause for the text.
 *
 * tbevent.h - Perfetto TrackEvents over a struct tb_writer: slices,
 * instants, counters, flows and debug annotations on process, thread,
 * custom and counter tracks, with per-sequence interning and an
 * incremental state that survives loss and overwrite.
 *
 * Using it
 *   categories  TB_CATEGORY_DEFINE(var, "name", on) at file scope;
 *               tb_category_set() flips one at run time, from any thread
 *   tracks      struct tb_track, owned by the caller: tb_track_process(),
 *               _thread(), _custom() (nested under a parent), _counter(),
 *               or the TB_TRACK_*_INIT initialisers for static ones
 *   a writer    one struct tb_ev_writer per thread, over that thread's
 *               struct tb_writer: tb_ev_writer_init(), then
 *               tb_ev_set_current() for the macros; tb_ev_writer_finish()
 *               before tb_writer_release() when the thread is done
 *   events      TB_TRACE_BEGIN(cat, "name", items...), TB_TRACE_END(cat),
 *               TB_TRACE_INSTANT(cat, "name", items...), TB_TRACE_SCOPE
 *               (C++, and GNU C), TB_TRACE_COUNTER(cat, track, v) and
 *               TB_TRACE_COUNTER_DOUBLE; the items are annotations
 *               (TB_ARG_INT, _UINT, _DOUBLE, _BOOL, _STR, _STRN, _PTR),
 *               flows (TB_FLOW, TB_FLOW_END), another track (TB_ON_TRACK)
 *               and an explicit timestamp (TB_AT).  Each macro has a _W
 *               form taking the writer first; functions underneath do
 *               everything (tb_ev_begin, _end, _instant, _counter,
 *               _counter_double, tb_ev_emit for a struct tb_ev_event).
 *
 *       TB_CATEGORY_DEFINE(cat_io, "io", 1);
 *       ...
 *       TB_TRACE_BEGIN(&cat_io, "Read", TB_ARG_UINT("bytes", n));
 *       ...
 *       TB_TRACE_END(&cat_io);
 *
 * Threading contract
 *   - A struct tb_ev_writer belongs to one thread at a time, like the
 *     struct tb_writer under it (an interrupt handler needs its own pair,
 *     and the _W macros).  Categories and tracks are shared: a category's
 *     flag is a 32-bit atomic, tracks are read only.
 *   - A disabled category costs one relaxed load and a branch: the macros
 *     test it before they evaluate anything else (the writer, the items).
 *
 * The writer the macros use: a thread-local default, TB_EV_CURRENT
 *   Instrumentation sits deep in code that has no writer to hand down,
 *   which is why TRACE_EVENT-style macros exist; so the plain macros use
 *   a per-thread current writer (tb_ev_set_current() once per thread) and
 *   the _W forms take one explicitly (interrupt handlers, several writers
 *   per thread).  The default is one pointer, `__thread` in GNU C and
 *   C++, defined weak in the header so that no translation unit has to
 *   own it (this is the header's only object with linkage).  A
 *   freestanding build (firmware: no TLS runtime) gets a plain global
 *   instead, one writer per program; TB_EV_NO_TLS asks for that anywhere.
 *   Other compilers: TB_EV_DEFINE_CURRENT in exactly one file.  Or define
 *   TB_EV_CURRENT to any expression of type struct tb_ev_writer * (a
 *   per-task pointer in an RTOS, say) and the header declares nothing.
 *   Without a current writer (NULL) the macros write nothing.
 *
 * Interning
 *   Event names, categories and annotation names are interned per
 *   sequence (InternedData, iids): the first use in a state emits the
 *   string in the packet's interned_data, later ones only its iid.  A
 *   name a function is given (tb_ev_begin(), tb_ev_instant(), tb_arg_*(),
 *   tb_ev_emit()) is interned by its bytes: hashed, compared with the
 *   names of equal hash and length, and copied into the writer
 *   (TB_EV_NAME_BYTES, default 1024, hold the copies; a name longer than
 *   a quarter of that always goes inline), so a buffer may be reused for
 *   the next name at once.  Only the macros' string literals ("" name),
 *   and names flagged TB_EV_STATIC_NAME / TB_ARG_STATIC_NAME, are keyed
 *   by address, with no hashing: those must never change while the
 *   writer lives; category names too.  TB_EV_COPY_NAMES sends an event's
 *   names inline.  The table is fixed-size, inside the writer:
 *   TB_EV_INTERN_SLOTS (default 64, a power of two) slots, at most three
 *   quarters used (48 strings; the demo uses 18); a string that finds it
 *   (or the copies) full goes inline (counted in stats.inline_names), and
 *   the next fresh state then empties the table.  A string keeps its iid
 *   across states while it stays in the table; iids are never reused for
 *   another string (Perfetto forbids it within a session).
 *
 * Incremental state
 *   The writer starts a fresh state before its first event, after any
 *   write of its that failed (TB_FULL, TB_NO_CHUNK, TB_DROPPED, ...), on
 *   tb_ev_reset(), and when tb_ring_generation() of its ring moved since
 *   the last event (one relaxed load per event: the service bumps it when
 *   its central buffer overwrote chunks or a long-trace period was written
 *   out).  A fresh state writes, in order: the defaults (TB_EV_DEFAULTS,
 *   below), a ClockSnapshot (a clock other than BOOTTIME, with its
 *   reference clock), then the TrackDescriptor of every track this writer
 *   used (its table of tracks, TB_EV_TRACKS, default 16, parents before
 *   children);
 *   the first of those packets carries SEQ_INCREMENTAL_STATE_CLEARED.
 *   Each event packet then carries the interned data it needs that this
 *   state has not seen, and SEQ_NEEDS_INCREMENTAL_STATE when it refers
 *   to any iid, and on every counter value: Perfetto's importer
 *   resolves a counter value as it reads the file, against the
 *   descriptors read so far, so one read before its track's descriptor
 *   (a capture that starts mid-stream, after a loss) would be dropped as
 *   an error; flagged, it is skipped like every packet that needs a state
 *   the reader does not have, until the next clear.  If any of those writes fails, the event is not written
 *   (it would refer to state the trace may not have) and the next event
 *   tries again.  A track the table has no room for is described again
 *   before every event on it: a packet more per event, but nothing goes
 *   unresolved.
 *   So every event resolves to a descriptor, and every iid to its
 *   interned data, written on the same sequence after the last loss this
 *   writer can see; losses it cannot see (the service's) are what the
 *   generation word is for.  A loss in a writer's last writes would reach
 *   the trace with nothing after it: tb_ev_writer_finish() writes the
 *   fresh state then, so the loss shows (the next chunk carries the
 *   data-loss flag, the trace previous_packet_dropped).
 *
 * TB_EV_DEFAULTS (an option of tb_ev_writer_init())
 *   The state's first packet then carries TracePacketDefaults: the
 *   writer's own track (events on it leave out track_uuid, up to 11
 *   bytes each: a third of a typical event) and its clock id (no
 *   timestamp_clock_id on every packet).  Every later packet of the
 *   state says SEQ_NEEDS_INCREMENTAL_STATE, as Perfetto requires once
 *   defaults are set.  Off by default: a reader that ignores defaults
 *   would put those events on the trace-global track.
 *
 * TB_EV_DELTA_TIME (an option of tb_ev_writer_init())
 *   Each timestamp goes out as the distance from the one before it on
 *   the sequence, on an incremental clock (ClockSnapshot.Clock
 *   is_incremental; scoped to the sequence: the writer's own clock id if
 *   it is one of 64..127, else 64): two or three bytes where BOOTTIME in
 *   nanoseconds takes six or more.  Every fresh state snapshots that
 *   clock with BOOTTIME, and the state's first timestamp counts from
 *   the snapshot.  Perfetto's importer adds each delta, in file order,
 *   to the clock's last time (as a signed number: an END owed and
 *   written late goes back), so the events land on the same nanosecond
 *   as with absolute timestamps (test_tbevent proves it on one run
 *   written both ways).  Every packet after the state's first says
 *   SEQ_NEEDS_INCREMENTAL_STATE: after a loss the importer skips them
 *   until the next state, whose snapshot gives the deltas their base
 *   again.  Off by default: a reader must know incremental clocks.
 *
 * Slices under loss
 *   For tracks in its table the writer keeps a stack of the slices it
 *   began (64 deep): when a BEGIN could not be written, its END is not
 *   written either (counted in stats.ends_skipped), since an END whose
 *   BEGIN is missing would close the enclosing slice in the importer.
 *   An END that could not be written, of a BEGIN that was, is owed: the
 *   writer keeps its track and time (TB_EV_OWED_ENDS of them, default 8)
 *   and writes it, at that time and without its annotations, before its
 *   next event or in tb_ev_writer_finish() (stats.ends_late), so a slice
 *   ends where it ended even when the ring was full at that moment; an
 *   event waits for the ENDs owed before it.  Disabling a category
 *   between a BEGIN and its END leaves the slice open; TB_TRACE_SCOPE
 *   remembers whether it began and always ends.
 *
 * Flows under loss
 *   The importer ignores a TB_FLOW_END whose flow has no start in the
 *   trace, so the writer keeps the flows it started or continued
 *   (TB_FLOW) and has not ended: TB_EV_FLOWS of them (default 16), each
 *   with whether its event here was written.  The end of a flow whose
 *   every event on this writer was lost is left out of its event
 *   (stats.flow_ends_skipped).  Every other end goes out: a flow begun on
 *   another writer (this one cannot know whether that start was written),
 *   or one the table forgot.  A flow that ends on another writer stays in
 *   this one's table until forgotten.  A full table forgets its oldest: a
 *   lost one is counted (stats.flows_untracked: its end will go out), a
 *   written one is kept in a 64-bit filter, and a lost flow event whose
 *   id the filter may hold is counted too rather than taken for a lost
 *   start; so an end whose start was written here is never left out.
 *
 * Timestamps
 *   CLOCK_BOOTTIME (Perfetto's default trace clock) through
 *   clock_gettime() where <time.h> declares it (POSIX: _POSIX_C_SOURCE
 *   or _GNU_SOURCE under strict C99; TB_EV_HAVE_BOOTTIME says), else a
 *   clock of the caller's (struct tb_ev_clock: a function returning ns,
 *   a clock id, and BOOTTIME as the reference clock of its
 *   ClockSnapshot), which is what firmware has and must pass
 *   (TB_EV_NO_DEFAULT_CLOCK asks for that anywhere; without one,
 *   tb_ev_writer_init() says TB_ENOCLOCK).  A clock other than BOOTTIME
 *   has its id on every timestamped packet (timestamp_clock_id), or once
 *   in the defaults.
 *   TB_EV_FAST_CLOCK (an option of tb_ev_writer_init(), with the default
 *   clock) reads the CPU's counter instead of clock_gettime() (here 10
 *   ns against 25 a read), where it has one user code may read that
 *   ticks at one rate: x86-64 with an invariant TSC (CPUID), aarch64
 *   (cntvct_el0).  The writer converts it to BOOTTIME nanoseconds
 *   itself, so the trace is the same as without it: it reads BOOTTIME
 *   with the counter at init, again a millisecond later for the rate,
 *   and then every millisecond of counter it anchors the conversion to
 *   BOOTTIME again, so the error never builds up (tens of ns here,
 *   whatever NTP does to BOOTTIME); time never goes back on the
 *   sequence.  Until it has its rate (the first millisecond) it reads
 *   BOOTTIME.  An anchor that finds the conversion far off (the counter
 *   jumped or stopped: a suspend, a TSC not synchronised between CPUs)
 *   turns it off for good, back to clock_gettime(); but events between
 *   such a jump and the next anchor (up to a millisecond) carry the
 *   counter's time.  Elsewhere (32-bit, other architectures, firmware,
 *   TB_EV_NO_FAST_CLOCK defined) the flag changes nothing;
 *   tb_ev_fast_clock() says whether a writer uses it.
 *
 * What it writes
 *   Each packet goes into the ring in place (tb_writer_open/_close): the
 *   encoder computes the packet's size first, then writes it straight
 *   into the chunk, with no copy.  A packet that fits one chunk never
 *   splits (it starts a new chunk instead); a larger one (a long string
 *   annotation) streams across chunks.  Field numbers are Perfetto's
 *   (protos/perfetto/trace/: trace_packet, track_event/{track_event,
 *   track_descriptor, process_descriptor, thread_descriptor,
 *   counter_descriptor, debug_annotation}, interned_data/interned_data,
 *   clock_snapshot).  The fields the service appends (trusted_uid 3,
 *   trusted_packet_sequence_id 10, trusted_pid 79) and the other
 *   service-only ones are never written.
 *
 * Limits
 *   - TB_EV_MAX_ARGS (16) items per event, else TB_EINVAL; strings up to
 *     2^30 bytes.  Slice stacks 64 deep per track; deeper slices are
 *     written as if their BEGIN always was.
 *   - TB_EV_INTERN_SLOTS, TB_EV_NAME_BYTES, TB_EV_TRACKS, TB_EV_FLOWS,
 *     TB_EV_SITES, TB_EV_OWED_ENDS and TB_EV_MAX_ARGS size struct
 *     tb_ev_writer and the encoder's stack frame: define them the same
 *     in every translation unit, before including this header
 *     (docs/events.md: one configuration).  A writer set up in a unit
 *     whose sizes differ is refused by every call here with TB_ECONFIG
 *     (tb_ev_forget_track() and tb_ev_reset() leave it alone); with GNU
 *     C on a hosted ELF system, a program whose units differ refuses
 *     every tb_ev_writer_init() (TB_ECONFIG), so that none writes a
 *     writer allocated at another unit's size.
 *   - Tracks must outlive the writers that used them (or be dropped from
 *     them with tb_ev_forget_track()), and their names stay static.
 *
 * C99, no allocation; needs tbring.h and tbpb.h (and <time.h> on hosted
 * builds for the default clock); TB_MEMCMP (tbbase.h's) and TB_STRLEN
 * may be replaced like TB_MEMCPY.  Works with TB_NO_FUTEX and
 * TB_ATOMIC_BUILTINS=1, and as C++.
 */
#ifndef TBEVENT_H
#define TBEVENT_H
#define TBEVENT_H_VERSION 200	/* tbbase.h: TBRING_VERSION */

#include "tbring.h"
#include "tbpb.h"

/* Headers of one release only: a mixed copy does not compile. */
#if TBRING_H_VERSION != TBEVENT_H_VERSION
#error "tbevent.h needs the tbring.h of its own release"
#endif
#if TBPB_H_VERSION != TBEVENT_H_VERSION
#error "tbevent.h needs the tbpb.h of its own release"
#endif

#ifndef TB_EV_INTERN_SLOTS
#define TB_EV_INTERN_SLOTS	64	/* a power of two */
#endif
#ifndef TB_EV_TRACKS
#define TB_EV_TRACKS		16	/* tracks a writer re-describes */
#endif
#ifndef TB_EV_MAX_ARGS
#define TB_EV_MAX_ARGS		16	/* items per event */
#endif
#ifndef TB_EV_OWED_ENDS
#define TB_EV_OWED_ENDS		8	/* ENDs kept to write late */
#endif
#ifndef TB_EV_NAME_BYTES
#define TB_EV_NAME_BYTES	1024	/* copies of names, by content */
#endif
#ifndef TB_EV_FLOWS
#define TB_EV_FLOWS		16	/* open flows a writer remembers */
#endif
#ifndef TB_EV_SITES
#define TB_EV_SITES		8	/* events kept encoded, 2, 4, 8... */
#endif

typedef char tb__ev_slots_check[TB_EV_INTERN_SLOTS >= 4 &&
				!(TB_EV_INTERN_SLOTS &
				  (TB_EV_INTERN_SLOTS - 1)) ? 1 : -1];
typedef char tb__ev_tracks_check[TB_EV_TRACKS >= 1 ? 1 : -1];
typedef char tb__ev_ends_check[TB_EV_OWED_ENDS >= 1 &&
			       TB_EV_OWED_ENDS <= 255 ? 1 : -1];
typedef char tb__ev_names_check[TB_EV_NAME_BYTES >= 16 &&
				TB_EV_NAME_BYTES <= 65535 ? 1 : -1];
typedef char tb__ev_flows_check[TB_EV_FLOWS >= 1 ? 1 : -1];
typedef char tb__ev_sites_check[TB_EV_SITES >= 2 &&
				!(TB_EV_SITES & (TB_EV_SITES - 1)) ? 1 : -1];

/*
 * The sizes of struct tb_ev_writer's tables, hashed into one word above 1
 * that tb_ev_writer_init() stores first in the writer and every other call
 * compares (one load and a compare per event): a writer set up where the
 * sizes differ is refused with TB_ECONFIG, never read with the wrong
 * layout.  (A link-time check would need a symbol that one translation
 * unit defines; this header asks no file to own anything.  The
 * program-wide check after extern "C" shares a weak one instead.)
 */
#define TB__EV_MIX(h, v)	(((uint32_t)(h) ^ (uint32_t)(v)) * 0x01000193u)
#define TB__EV_CONFIG							\
	TB__EV_MIX(TB__EV_MIX(TB__EV_MIX(TB__EV_MIX(TB__EV_MIX(		\
	0x811c9dc5u, TB_EV_INTERN_SLOTS), TB_EV_TRACKS), TB_EV_OWED_ENDS), \
	TB_EV_NAME_BYTES), TB_EV_FLOWS ^ TB_EV_SITES << 16)
typedef char tb__ev_config_check[TB__EV_CONFIG > 1u ? 1 : -1];

/* The default clock: CLOCK_BOOTTIME where the platform declares it. */
#if !defined(TB_EV_HAVE_BOOTTIME)
#if defined(__STDC_HOSTED__) && __STDC_HOSTED__ && \
	!defined(TB_EV_NO_DEFAULT_CLOCK)
#include <time.h>
#endif
#if defined(CLOCK_BOOTTIME)
#define TB_EV_HAVE_BOOTTIME	1
#else
#define TB_EV_HAVE_BOOTTIME	0
#endif
#endif

#ifndef TB_STRLEN
#if defined(__GNUC__) && defined(__STDC_HOSTED__) && __STDC_HOSTED__
#define TB_STRLEN(s)	__builtin_strlen(s)	/* folds literals */
#else
#define TB_STRLEN(s)	tb__ev_strlen(s)	/* freestanding: no libc */
#endif
#endif

/*
 * The slow paths (fresh states, descriptors, a packet crossing chunks)
 * stay out of line, so that every event site does not inline them.  The
 * hot path (TB__EV_HOT) is inlined into one function, tb__ev_emit(), and
 * encodes a packet that fits its range without checks (TB__EV_DIRECT):
 * unless the build optimises for size (-Os: firmware), where the one
 * checked encoder does all, in half the code.
 */
#if defined(__GNUC__)
#define TB__EV_SLOW	static __attribute__((noinline, unused))
#else
#define TB__EV_SLOW	static inline
#endif
/*
 * The fast path (tb__ev_site_write()) is one function every macro calls; where
 * the compiler optimises for size, out of line.
 */
#if defined(__GNUC__) && defined(__OPTIMIZE_SIZE__)
#define TB__EV_FASTFN	static __attribute__((noinline, unused))
#elif defined(__GNUC__)
#define TB__EV_FASTFN	static inline __attribute__((always_inline))
#else
#define TB__EV_FASTFN	static inline
#endif
#if defined(__GNUC__) && !defined(__OPTIMIZE_SIZE__)
#define TB__EV_HOT	static inline __attribute__((always_inline))
#define TB__EV_DIRECT	1
#else
#define TB__EV_HOT	static inline
#define TB__EV_DIRECT	0
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*
 * One configuration per program, where the toolchain lets a header see
 * the whole program (GNU C, ELF, hosted): every unit that includes this
 * header states its TB__EV_CONFIG before main() (a constructor) in one
 * word that all units share (a weak definition: the linker keeps one), and
 * a second, different one marks the program mixed (1).  In a mixed
 * program every tb_ev_writer_init() refuses (TB_ECONFIG) before it writes
 * a byte: a writer allocated in one unit and set up in another would be
 * written at the set-up unit's size.  Elsewhere (freestanding builds,
 * other compilers, or TB_EV_NO_UNIT_CHECK) only the check per call above
 * remains, and docs/events.md says how to keep one configuration.
 */
#if defined(__GNUC__) && defined(__ELF__) && defined(__STDC_HOSTED__) && \
	__STDC_HOSTED__ && !defined(TB_EV_NO_UNIT_CHECK)
#define TB__EV_UNIT_CHECK	1
extern uint32_t tb__ev_units;
__attribute__((weak)) uint32_t tb__ev_units;

__attribute__((constructor)) static void tb__ev_unit_says(void)
{
	uint32_t seen = 0;

	/* relaxed: before main() or in dlopen(); the word orders nothing */
	if (!__atomic_compare_exchange_n(&tb__ev_units, &seen, TB__EV_CONFIG,
					 false, __ATOMIC_RELAXED,
					 __ATOMIC_RELAXED) &&
	    seen != TB__EV_CONFIG)
		__atomic_store_n(&tb__ev_units, 1u, __ATOMIC_RELAXED);
}
#else
#define TB__EV_UNIT_CHECK	0
#endif

/* Whether this program's units agree on the sizes (as far as seen). */
static inline bool tb__ev_units_agree(void)
{
#if TB__EV_UNIT_CHECK
	/* relaxed: pairs with the constructors' stores, nothing else */
	uint32_t u = __atomic_load_n(&tb__ev_units, __ATOMIC_RELAXED);

	return !u || u == TB__EV_CONFIG;
#else
	return true;
#endif
}

/* ------------------------------------------------------------------------
 * Perfetto's field numbers and enum values, each checked against the
 * .proto files named at the top.  The trace checker (tbcheck.h) keeps a
 * table of its own, on purpose: it is an independent model of Perfetto's
 * importer, so a number wrong here is not wrong there as well and the
 * tests catch it.  The wire format itself (varints, keys, wire types) is
 * tbpb.h's, shared by every header.
 */
enum {
	/* TracePacket */
	TB__TP_CLOCK_SNAPSHOT = 6,
	TB__TP_TIMESTAMP = 8,
	TB__TP_TRACK_EVENT = 11,
	TB__TP_INTERNED_DATA = 12,
	TB__TP_SEQUENCE_FLAGS = 13,
	TB__TP_TIMESTAMP_CLOCK_ID = 58,
	TB__TP_TRACE_PACKET_DEFAULTS = 59,
	TB__TP_TRACK_DESCRIPTOR = 60,
	/* TracePacketDefaults (58 as in TracePacket), TrackEventDefaults */
	TB__PDF_TRACK_EVENT_DEFAULTS = 11,
	TB__TED_TRACK_UUID = 11,
	/* TrackEvent */
	TB__TE_CATEGORY_IIDS = 3,
	TB__TE_DEBUG_ANNOTATIONS = 4,
	TB__TE_TYPE = 9,
	TB__TE_NAME_IID = 10,
	TB__TE_TRACK_UUID = 11,
	TB__TE_CATEGORIES = 22,
	TB__TE_NAME = 23,
	TB__TE_COUNTER_VALUE = 30,
	TB__TE_DOUBLE_COUNTER_VALUE = 44,
	TB__TE_FLOW_IDS = 47,			/* repeated fixed64 */
	TB__TE_TERMINATING_FLOW_IDS = 48,	/* repeated fixed64 */
	/* TrackDescriptor */
	TB__TD_UUID = 1,
	TB__TD_NAME = 2,
	TB__TD_PROCESS = 3,
	TB__TD_THREAD = 4,
	TB__TD_PARENT_UUID = 5,
	TB__TD_COUNTER = 8,
	/* ProcessDescriptor */
	TB__PD_PID = 1,
	TB__PD_PROCESS_NAME = 6,
	/* ThreadDescriptor */
	TB__THD_PID = 1,
	TB__THD_TID = 2,
	TB__THD_THREAD_NAME = 5,
	/* CounterDescriptor */
	TB__CD_UNIT = 3,
	/* DebugAnnotation */
	TB__DA_NAME_IID = 1,
	TB__DA_BOOL = 2,
	TB__DA_UINT = 3,
	TB__DA_INT = 4,
	TB__DA_DOUBLE = 5,
	TB__DA_STRING = 6,
	TB__DA_POINTER = 7,
	TB__DA_NAME = 10,
	/* InternedData: event_categories, event_names, annotation names */
	TB__ID_EVENT_CATEGORIES = 1,
	TB__ID_EVENT_NAMES = 2,
	TB__ID_DEBUG_ANNOTATION_NAMES = 3,
	/* EventCategory, EventName, DebugAnnotationName */
	TB__IE_IID = 1,
	TB__IE_NAME = 2,
	/* ClockSnapshot, ClockSnapshot.Clock */
	TB__CS_CLOCKS = 1,
	TB__CK_CLOCK_ID = 1,
	TB__CK_TIMESTAMP = 2,
	TB__CK_INCREMENTAL = 3,
};

/* TracePacket.SequenceFlags */
#define TB_SEQ_INCREMENTAL_STATE_CLEARED	1u
#define TB_SEQ_NEEDS_INCREMENTAL_STATE		2u

/* BuiltinClock ids; 64..127 are the producer's, scoped to a sequence. */
#define TB_CLOCK_REALTIME	1u
#define TB_CLOCK_MONOTONIC	3u
#define TB_CLOCK_MONOTONIC_RAW	5u
#define TB_CLOCK_BOOTTIME	6u
#define TB_CLOCK_USER		64u	/* first sequence-scoped id */
#define TB_CLOCK_USER_MAX	127u

/* ------------------------------------------------------------------------
 * Categories: static structs, shared by every thread.
 */
struct tb_category {
	const char *name;
	uint32_t enabled;	/* atomic: tb_category_enabled(), _set() */
};

#define TB_CATEGORY_INIT(name, on)	{ "" name, (on) ? 1u : 0u }
#define TB_CATEGORY_DEFINE(var, name, on)				\
	struct tb_category var = TB_CATEGORY_INIT(name, on)
#define TB_CATEGORY_DECLARE(var)	extern struct tb_category var

/* Inlined at -Os too: every macro's first step, a load and a branch. */
TB__ALWAYS bool tb_category_enabled(const struct tb_category *c)
{
	/* relaxed: a switch; a late look costs an event or two, no more */
	return tb_atomic_load(&c->enabled, TB_RLX) != 0;
}

static inline void tb_category_set(struct tb_category *c, bool on)
{
	/* relaxed: see above */
	tb_atomic_store(&c->enabled, on ? 1u : 0u, TB_RLX);
}

/* ------------------------------------------------------------------------
 * Tracks: caller-owned, read only once in use.  A uuid is global to the
 * whole trace (every producer): tb_ev_uuid() mixes two numbers into one
 * (a pid and a tid, a pid and a counter).
 */
enum tb_track_kind {
	TB_TRACK_CUSTOM,	/* named, optionally nested under a parent */
	TB_TRACK_PROCESS,	/* ProcessDescriptor: pid, process name */
	TB_TRACK_THREAD,	/* ThreadDescriptor: pid, tid, thread name */
	TB_TRACK_COUNTER,	/* CounterDescriptor: TYPE_COUNTER events */
};

enum tb_counter_unit {		/* CounterDescriptor.Unit */
	TB_UNIT_UNSPECIFIED = 0,
	TB_UNIT_TIME_NS = 1,
	TB_UNIT_COUNT = 2,
	TB_UNIT_SIZE_BYTES = 3,
};

struct tb_track {
	uint64_t uuid;			/* nonzero */
	const struct tb_track *parent;	/* NULL: a root track */
	const char *name;		/* NULL: none */
	int32_t pid;			/* process and thread tracks */
	int32_t tid;			/* thread tracks */
	uint8_t kind;			/* enum tb_track_kind */
	uint8_t unit;			/* counters: tb_counter_unit */
};

#define TB_TRACK_PROCESS_INIT(uuid, pid, name)				\
	{ (uuid), NULL, (name), (pid), 0, TB_TRACK_PROCESS, 0 }
#define TB_TRACK_THREAD_INIT(uuid, process, pid, tid, name)		\
	{ (uuid), (process), (name), (pid), (tid), TB_TRACK_THREAD, 0 }
#define TB_TRACK_CUSTOM_INIT(uuid, parent, name)			\
	{ (uuid), (parent), (name), 0, 0, TB_TRACK_CUSTOM, 0 }
#define TB_TRACK_COUNTER_INIT(uuid, parent, name, unit)		\
	{ (uuid), (parent), (name), 0, 0, TB_TRACK_COUNTER, (unit) }

/* A well-mixed nonzero 64-bit id from two numbers (splitmix64). */
static inline uint64_t tb_ev_uuid(uint64_t a, uint64_t b)
{
	uint64_t x = a * 0x9e3779b97f4a7c15ull ^ b;

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x ? x : 1;
}

static inline void tb__track_set(struct tb_track *t, uint64_t uuid,
				 const struct tb_track *parent,
				 const char *name, unsigned kind)
{
	t->uuid = uuid;
	t->parent = parent;
	t->name = name;
	t->pid = 0;
	t->tid = 0;
	t->kind = (uint8_t)kind;
	t->unit = 0;
}

static inline void tb_track_process(struct tb_track *t, uint64_t uuid,
				    int32_t pid, const char *name)
{
	tb__track_set(t, uuid, NULL, name, TB_TRACK_PROCESS);
	t->pid = pid;
}

/* A thread's track, under its process's track (@process may be NULL). */
static inline void tb_track_thread(struct tb_track *t, uint64_t uuid,
				   const struct tb_track *process,
				   int32_t pid, int32_t tid, const char *name)
{
	tb__track_set(t, uuid, process, name, TB_TRACK_THREAD);
	t->pid = pid;
	t->tid = tid;
}

static inline void tb_track_custom(struct tb_track *t, uint64_t uuid,
				   const struct tb_track *parent,
				   const char *name)
{
	tb__track_set(t, uuid, parent, name, TB_TRACK_CUSTOM);
}

static inline void tb_track_counter(struct tb_track *t, uint64_t uuid,
				    const struct tb_track *parent,
				    const char *name, enum tb_counter_unit unit)
{
	tb__track_set(t, uuid, parent, name, TB_TRACK_COUNTER);
	t->unit = (uint8_t)unit;
}

/* ------------------------------------------------------------------------
 * Clocks.  NULL means the default (CLOCK_BOOTTIME, where there is one:
 * else tb_ev_writer_init() says TB_ENOCLOCK).  A caller's clock: @now
 * returns nanoseconds on clock @id (1..127; 64 and up are scoped to the
 * sequence).  Unless @id is TB_CLOCK_BOOTTIME (the trace's clock), the
 * importer places an event in time only through a ClockSnapshot relating
 * @id to BOOTTIME, and drops every packet of a writer it cannot place:
 * so @ref_id must be TB_CLOCK_BOOTTIME (else TB_ECLOCKREF; nothing in
 * tbring writes snapshots of other clocks), and every fresh state writes
 * a snapshot that reads @now and, right after it, @ref_now (NULL: the
 * default clock; where there is none, TB_ECLOCKFN).  TB_CLOCK_BOOTTIME
 * needs no snapshot, and no clock id on the packets either.
 */
struct tb_ev_clock {
	uint64_t (*now)(void *ctx);
	void *ctx;
	uint32_t id;
	uint32_t ref_id;
	uint64_t (*ref_now)(void *ctx);
};

#if TB_EV_HAVE_BOOTTIME
/* CLOCK_BOOTTIME in nanoseconds. */
static inline uint64_t tb_ev_boottime_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_BOOTTIME, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#endif

/*
 * The fast clock (TB_EV_FAST_CLOCK): the CPU's own counter where it has
 * one that user code may read and that ticks at a constant rate (x86-64:
 * rdtsc, when CPUID says the TSC is invariant; aarch64: cntvct_el0),
 * converted to CLOCK_BOOTTIME nanoseconds by the writer, so the trace is
 * the same as with the default clock.  Elsewhere (32-bit, other
 * architectures, no GNU C, no BOOTTIME, TB_EV_NO_FAST_CLOCK) the flag
 * changes nothing.  See tb__ev_fast_now().
 */
#if TB_EV_HAVE_BOOTTIME && defined(__GNUC__) && \
	!defined(TB_EV_NO_FAST_CLOCK) && \
	(defined(__x86_64__) || defined(__aarch64__))
#define TB__EV_HAVE_COUNTER	1
#if defined(__x86_64__)
static inline uint64_t tb__ev_cycles(void)
{
	uint32_t lo, hi;

	/* not ordered with the loads and stores around it: no need here */
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

/* CPUID 0x80000007 EDX bit 8: the TSC ticks at one rate in every state. */
static inline bool tb__ev_cycles_usable(void)
{
	uint32_t a, b, c, d;

	__asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d)
			     : "a"(0x80000000u), "c"(0u));
	if (a < 0x80000007u)
		return false;
	__asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d)
			     : "a"(0x80000007u), "c"(0u));
	return (d >> 8) & 1;
}
#else
static inline uint64_t tb__ev_cycles(void)
{
	uint64_t v;

	__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
	return v;
}

/* The generic timer: constant rate, readable at EL0 under Linux. */
static inline bool tb__ev_cycles_usable(void)
{
	return true;
}
#endif
#else
#define TB__EV_HAVE_COUNTER	0
#endif

/* ------------------------------------------------------------------------
 * Event items: debug annotations, flows, a track, a timestamp.  Build
 * them with the tb_arg_* functions or the TB_ARG_* macros (which insist
 * on literal names).
 */
enum tb_arg_type {
	TB_ARG_T_NONE,		/* ends the macros' arrays: not encoded */
	TB_ARG_T_BOOL,
	TB_ARG_T_UINT,
	TB_ARG_T_INT,
	TB_ARG_T_DOUBLE,
	TB_ARG_T_STRING,
	TB_ARG_T_POINTER,
	TB_ARG_T_FLOW,		/* flow_ids: starts or continues a flow */
	TB_ARG_T_FLOW_END,	/* terminating_flow_ids */
	TB_ARG_T_TRACK,		/* the event goes on this track */
	TB_ARG_T_TIME,		/* the event's timestamp (not now) */
};

struct tb_arg {
	const char *name;	/* annotations: interned by content */
	uint16_t type;		/* enum tb_arg_type */
	uint16_t flags;		/* TB_ARG_STATIC_NAME */
	uint32_t len;		/* TB_ARG_T_STRING: bytes */
	union {
		uint64_t u;
		int64_t i;
		double d;
		const char *s;
		const struct tb_track *t;
	} v;
};

/*
 * struct tb_arg.flags: @name never changes while the writer lives (a
 * string literal): interned by its address, no hashing.  The TB_ARG_*
 * macros set it; the tb_arg_* functions do not, so a name in a buffer
 * that is reused is interned by what it says.
 */
#define TB_ARG_STATIC_NAME	1u

static inline struct tb_arg tb__arg(const char *name, unsigned type)
{
	struct tb_arg a;

	a.name = name;
	a.type = (uint16_t)type;
	a.flags = 0;
	a.len = 0;
	a.v.u = 0;
	return a;
}

static inline struct tb_arg tb__arg_end(void)
{
	return tb__arg(NULL, TB_ARG_T_NONE);
}

static inline struct tb_arg tb_arg_bool(const char *name, bool v)
{
	struct tb_arg a = tb__arg(name, TB_ARG_T_BOOL);

	a.v.u = v ? 1 : 0;
	return a;
}

static inline struct tb_arg tb_arg_uint(const char *name, uint64_t v)
{
	struct tb_arg a = tb__arg(name, TB_ARG_T_UINT);

	a.v.u = v;
	return a;
}

static inline struct tb_arg tb_arg_int(const char *name, int64_t v)
{
	struct tb_arg a = tb__arg(name, TB_ARG_T_INT);

	a.v.i = v;
	return a;
}

static inline struct tb_arg tb_arg_double(const char *name, double v)
{
	struct tb_arg a = tb__arg(name, TB_ARG_T_DOUBLE);

	a.v.d = v;
	return a;
}

static inline uint32_t tb__ev_strlen(const char *s)
{
	uint32_t n = 0;

	while (s[n])
		n++;
	return n;
}

/* @len bytes of @s (not NUL-terminated: any bytes; NULL: empty). */
static inline struct tb_arg tb_arg_strn(const char *name, const char *s,
					size_t len)
{
	struct tb_arg a = tb__arg(name, TB_ARG_T_STRING);

	a.v.s = s ? s : "";
	a.len = s && len < (1u << 30) ? (uint32_t)len : 0;
	return a;
}

static inline struct tb_arg tb_arg_str(const char *name, const char *s)
{
	return tb_arg_strn(name, s, s ? (size_t)TB_STRLEN(s) : 0);
}

static inline struct tb_arg tb_arg_ptr(const char *name, const void *p)
{
	struct tb_arg a = tb__arg(name, TB_ARG_T_POINTER);

	a.v.u = (uint64_t)(uintptr_t)p;
	return a;
}

/* A flow from this event on (ids are global to the trace). */
static inline struct tb_arg tb_arg_flow(uint64_t id)
{
	struct tb_arg a = tb__arg(NULL, TB_ARG_T_FLOW);

	a.v.u = id;
	return a;
}

/* The flow @id ends at this event. */
static inline struct tb_arg tb_arg_flow_end(uint64_t id)
{
	struct tb_arg a = tb__arg(NULL, TB_ARG_T_FLOW_END);

	a.v.u = id;
	return a;
}

/* The event goes on @t instead of the writer's track. */
static inline struct tb_arg tb_arg_track(const struct tb_track *t)
{
	struct tb_arg a = tb__arg(NULL, TB_ARG_T_TRACK);

	a.v.t = t;
	return a;
}

/* The event happened at @ts (on the writer's clock), not now. */
static inline struct tb_arg tb_arg_time(uint64_t ts)
{
	struct tb_arg a = tb__arg(NULL, TB_ARG_T_TIME);

	a.v.u = ts;
	return a;
}

/* A literal's annotation: its name is interned by address. */
static inline struct tb_arg tb__arg_static(struct tb_arg a)
{
	a.flags |= TB_ARG_STATIC_NAME;
	return a;
}

#define TB_ARG_BOOL(name, v)	tb__arg_static(tb_arg_bool("" name, (v)))
#define TB_ARG_UINT(name, v)						\
	tb__arg_static(tb_arg_uint("" name, (uint64_t)(v)))
#define TB_ARG_INT(name, v)						\
	tb__arg_static(tb_arg_int("" name, (int64_t)(v)))
#define TB_ARG_DOUBLE(name, v)						\
	tb__arg_static(tb_arg_double("" name, (double)(v)))
#define TB_ARG_STR(name, s)	tb__arg_static(tb_arg_str("" name, (s)))
#define TB_ARG_STRN(name, s, len)					\
	tb__arg_static(tb_arg_strn("" name, (s), (len)))
#define TB_ARG_PTR(name, p)	tb__arg_static(tb_arg_ptr("" name, (p)))
#define TB_FLOW(id)			tb_arg_flow(id)
#define TB_FLOW_END(id)			tb_arg_flow_end(id)
#define TB_ON_TRACK(t)			tb_arg_track(t)
#define TB_AT(ts)			tb_arg_time(ts)

/* ------------------------------------------------------------------------
 * Events, as the functions take them.
 */
enum tb_ev_type {		/* TrackEvent.Type */
	TB_EV_SLICE_BEGIN = 1,
	TB_EV_SLICE_END = 2,
	TB_EV_INSTANT = 3,
	TB_EV_COUNTER = 4,
};

/* struct tb_ev_event.flags */
#define TB_EV_COPY_NAMES	1u	/* every name inline, none interned */
#define TB_EV_DOUBLE		2u	/* counters: value.d, not .i */
#define TB_EV_STATIC_NAME	4u	/* @name never changes: by address */

struct tb_ev_event {
	uint8_t type;			/* enum tb_ev_type */
	uint8_t flags;		/* TB_EV_COPY_NAMES, _DOUBLE, _STATIC_NAME */
	const struct tb_category *cat;	/* NULL: none, always enabled */
	const char *name;		/* slices and instants */
	const struct tb_track *track;	/* NULL: the writer's track */
	const struct tb_arg *args;
	uint32_t nargs;
	uint64_t ts;			/* 0: now */
	union {
		int64_t i;
		double d;
	} value;			/* counters */
};

/* ------------------------------------------------------------------------
 * The event writer.
 */

/* tb_ev_writer_init() flags */
#define TB_EV_NO_INTERN		1u	/* names inline, no iids */
#define TB_EV_DEFAULTS		2u	/* TracePacketDefaults (top) */
#define TB_EV_FAST_CLOCK	4u	/* BOOTTIME from the CPU's counter */
#define TB_EV_DELTA_TIME	8u	/* timestamps as deltas (top) */

struct tb_ev_stats {
	uint32_t events;	/* event packets written (+ ends_late) */
	uint32_t lost;		/* packets whose write failed */
	uint32_t not_written;	/* events not written: lost, or state */
	uint32_t states;	/* fresh incremental states started */
	uint32_t generations;	/* of those, asked for by the ring */
	uint32_t descriptors;	/* track descriptor packets written */
	uint32_t snapshots;	/* clock snapshot packets written */
	uint32_t inline_names;	/* names inline: interning table full */
	uint32_t ends_skipped;	/* ENDs not written: BEGIN was lost */
	uint32_t ends_late;	/* owed ENDs written later, at their time */
	uint32_t flow_ends_skipped; /* flow ends not written: start lost */
	uint32_t flows_untracked; /* lost flow starts the table forgot */
};

struct tb__ev_intern {
	const char *str;	/* by address: the string; NULL: a copy */
	uint32_t iid;		/* 31..30 the kind, 29..0 the iid; 0: free */
	uint32_t epoch;		/* emitted in this state */
	uint32_t hash;		/* a copy: the hash of its bytes */
	uint16_t off;		/* a copy: its bytes, in names[] */
	uint16_t len;
};

struct tb__ev_flow {		/* a flow this writer started or continued */
	uint64_t id;
	uint32_t lost;		/* its event here was not written */
};

struct tb__ev_end {		/* an END owed */
	const struct tb_track *t;
	uint64_t ts;
};

#define TB__EV_UFIELD	11u	/* a track_uuid field: tag, varint */

struct tb__ev_track {
	const struct tb_track *t;
	uint64_t lost;		/* bit d: BEGIN at depth d not written */
	uint32_t depth;		/* slices open */
	uint32_t epoch;		/* described in this state */
	uint8_t ulen;		/* bytes of @ufield */
	uint8_t ufield[TB__EV_UFIELD];	/* TrackEvent.track_uuid, encoded */
};

/*
 * The fast clock's state: BOOTTIME = n0 + ((counter - t0) * mult >> 32)
 * while counter - t0 < lim (about a millisecond), then a new anchor; never
 * earlier than @floor.  The rate is measured from @tb, @nb on.
 */
struct tb__ev_fast {
	uint64_t t0, n0;	/* the anchor: counter, BOOTTIME ns */
	uint64_t tb, nb;	/* where the rate is measured from */
	uint64_t mult;		/* ns per tick, << 32 */
	uint64_t lim;		/* ticks the anchor holds; 0: read BOOTTIME */
	uint64_t floor;		/* the latest time given out before t0 */
	uint32_t on;		/* TB__EV_FAST_* */
	uint32_t anchors;	/* anchors taken (tests, the bench) */
};

enum {				/* struct tb__ev_fast.on */
	TB__EV_FAST_OFF,	/* not asked for, or no counter: never read */
	TB__EV_FAST_CAL,	/* no rate yet: BOOTTIME, anchors */
	TB__EV_FAST_ON,		/* the conversion */
	TB__EV_FAST_DEAD,	/* the counter jumped: BOOTTIME, the floor */
};

/*
 * An event kept encoded (the fast path, tb__ev_site_write()): what a call
 * site of the macros writes every time but its timestamp and values,
 * encoded once per incremental state.  tmpl holds, in the packet's
 * order: the clock id and sequence flags, the TrackEvent's tag, a byte
 * for its length (at hlen), its fixed fields (category, name, type,
 * track) and a counter's value tag, up to clen; then for each annotation
 * its tag, a byte for its length, its name field and its value's tag
 * (alen[i] bytes in all).
 */
#define TB__EV_SITE_ARGS	4	/* annotations of an event kept */
#define TB__EV_TMPL		64	/* >= 7 + 30 + 8 * TB__EV_SITE_ARGS */

struct tb__ev_site {
	const void *key;	/* its name, or track (END, COUNTER) */
	const struct tb_category *cat;
	struct tb__ev_track *slot;	/* its track's entry */
	const char *aname[TB__EV_SITE_ARGS];	/* its annotations' names */
	uint32_t epoch;		/* the state it was encoded in; 0: none */
	uint32_t shape;		/* type, TB_EV_DOUBLE << 8, items << 16 */
	uint8_t hlen;
	uint8_t clen;
	uint8_t te;		/* the TrackEvent's fixed bytes */
	uint8_t atype[TB__EV_SITE_ARGS];
	uint8_t alen[TB__EV_SITE_ARGS];
	uint8_t tmpl[TB__EV_TMPL];
};

struct tb_ev_writer {
	uint32_t config;	/* TB__EV_CONFIG where it was set up */
	struct tb_writer *w;
	const struct tb_track *track;	/* the default track */
	const struct tb_ev_clock *clock;	/* NULL: CLOCK_BOOTTIME */
	uint32_t gen;		/* the ring's generation last seen */
	uint32_t epoch;		/* this incremental state; 0: none yet */
	uint32_t ready;		/* epoch while the fast path may write: */
				/* no fresh state due, no END owed; else 0 */
	uint32_t next_iid;
	uint32_t nintern;
	uint32_t ntracks;
	uint32_t own;		/* the default track's slot */
	uint32_t cid;		/* timestamp_clock_id per packet; 0: none */
	uint8_t fresh;		/* a fresh state before the next event */
	uint8_t clear;		/* the next packet clears the state */
	uint8_t flags;		/* TB_EV_NO_INTERN */
	uint8_t overflow;	/* the interning table filled since emptied */
	uint8_t owed;		/* a write failed, none succeeded since */
	uint8_t nends;		/* ENDs owed, oldest first in ends[] */
	uint32_t nbytes;	/* of names[], in use */
	uint32_t nflows;	/* open flows in flows[], oldest first */
	uint64_t forgot;	/* hash bits of written flows forgotten */
	uint64_t stamp;		/* descriptors' timestamp; 0: now */
	uint64_t last;		/* the last timestamp written (DELTA) */
	struct tb_ev_stats stats;
	struct tb__ev_fast fast;	/* TB_EV_FAST_CLOCK */
	struct tb__ev_end ends[TB_EV_OWED_ENDS];
	struct tb__ev_track tracks[TB_EV_TRACKS];
	struct tb__ev_flow flows[TB_EV_FLOWS];
	struct tb__ev_intern intern[TB_EV_INTERN_SLOTS];
	struct tb__ev_site sites[TB_EV_SITES];
	char names[TB_EV_NAME_BYTES];
};

#define TB__EV_MAX_INTERN	(TB_EV_INTERN_SLOTS / 4 * 3)
#define TB__EV_IID_MAX		0x3fffffffu
#define TB__EV_DEPTH_MAX	64u

enum { TB__EV_K_CAT, TB__EV_K_NAME, TB__EV_K_ANN };	/* intern kinds */

#if TB__EV_HAVE_COUNTER
/*
 * The fast clock.  The counter is read together with BOOTTIME (a
 * counter read on each side of it: the narrowest of three tries, the
 * middle of it), which anchors the conversion for about a millisecond
 * (TB__EV_FAST_SPAN ns); the rate comes from the anchor that far back
 * or, once it has one, up to a second back, so neither the counter's
 * drift against BOOTTIME (NTP slews it) nor the jitter of one reading
 * adds up: each anchor starts from BOOTTIME itself, and what the
 * conversion gave out before it is a floor, so time never goes back
 * on the sequence.  Until the first rate (the first millisecond) every
 * read is BOOTTIME's.  An anchor that finds the conversion off by more
 * than TB__EV_FAST_BAD (a counter that jumped or stopped: suspend,
 * another CPU's unsynchronised TSC) turns the fast clock off for good.
 */
#define TB__EV_FAST_SPAN	(1ull << 20)	/* ns an anchor holds */
#define TB__EV_FAST_STEADY	(1ull << 26)	/* ns: a rate worth taking */
#define TB__EV_FAST_BASE	(1ull << 30)	/* ns: the rate's base moves */
#define TB__EV_FAST_BAD		100000ull	/* ns: off, + 1000 ppm */

static inline uint64_t tb__ev_fast_ns(const struct tb__ev_fast *f,
				      uint64_t dt)
{
	return f->n0 + (dt * f->mult >> 32);
}

/*
 * BOOTTIME and the counter at that moment (*@t): the middle of two
 * counter reads around it, the narrowest of up to three tries (one is
 * enough once the rate says it took under TB__EV_FAST_TIGHT ns).
 */
#define TB__EV_FAST_TIGHT	64u

static inline uint64_t tb__ev_fast_pair(const struct tb__ev_fast *f,
					uint64_t *t)
{
	uint64_t best = ~0ull, ns = 0;
	int i;

	for (i = 0; i < 3; i++) {
		uint64_t a = tb__ev_cycles(), n = tb_ev_boottime_ns();
		uint64_t b = tb__ev_cycles();

		if (b < a || b - a >= best)
			continue;
		best = b - a;
		*t = a + best / 2;
		ns = n;
		if (f->on == TB__EV_FAST_ON &&
		    (best * f->mult >> 32) < TB__EV_FAST_TIGHT)
			break;
	}
	if (best == ~0ull) {		/* went back every time */
		*t = tb__ev_cycles();
		ns = tb_ev_boottime_ns();
	}
	return ns;
}

TB__EV_SLOW uint64_t tb__ev_fast_anchor(struct tb__ev_fast *f)
{
	uint64_t t, ns, dt;

	if (f->on == TB__EV_FAST_DEAD) {
		ns = tb_ev_boottime_ns();
		return ns > f->floor ? ns : f->floor;
	}
	ns = tb__ev_fast_pair(f, &t);
	dt = t - f->t0;
	f->anchors++;
	if (f->on == TB__EV_FAST_ON) {
		/* what the conversion says now: the floor, and a check */
		uint64_t want = t >= f->t0 && dt <= ~0ull / f->mult ?
				tb__ev_fast_ns(f, dt) : 0;
		uint64_t off = want > ns ? want - ns : ns - want;

		if (want > f->floor)
			f->floor = want;
		if (!want || off > TB__EV_FAST_BAD + (want - f->n0) / 1000) {
			f->on = TB__EV_FAST_DEAD;	/* jumped, went back */
			f->lim = 0;
			return ns > f->floor ? ns : f->floor;
		}
	}
	if (t > f->tb && ns > f->nb) {
		uint64_t dn = ns - f->nb, m;

		if (dn < 2 * TB__EV_FAST_BASE &&
		    dn >= (f->on == TB__EV_FAST_CAL ? TB__EV_FAST_SPAN :
			   TB__EV_FAST_STEADY)) {
			m = (dn << 32) / (t - f->tb);
			/* 1 MHz .. 10 GHz, else not a counter to use */
			if (m >= (1ull << 32) / 10 && m <= 1000ull << 32) {
				f->mult = m;
				f->lim = (TB__EV_FAST_SPAN << 32) / m;
				f->on = TB__EV_FAST_ON;
			}
		}
		if (dn >= TB__EV_FAST_BASE) {	/* a later base */
			f->tb = t;
			f->nb = ns;
		}
	}
	f->t0 = t;
	f->n0 = ns;
	return ns > f->floor ? ns : f->floor;
}

/* The fast clock's reading: a counter read, a multiply, a compare. */
static inline uint64_t tb__ev_fast_now(struct tb__ev_fast *f)
{
	uint64_t dt = tb__ev_cycles() - f->t0, ns;

	if (dt >= f->lim)
		return tb__ev_fast_anchor(f);
	ns = tb__ev_fast_ns(f, dt);
	return ns > f->floor ? ns : f->floor;
}

static inline void tb__ev_fast_init(struct tb__ev_fast *f)
{
	if (!tb__ev_cycles_usable())
		return;
	f->on = TB__EV_FAST_CAL;
	f->tb = 0;
	f->nb = tb__ev_fast_pair(f, &f->tb);
	f->t0 = f->tb;
	f->n0 = f->nb;
}
#endif

/*
 * Whether @ew's timestamps come from the fast clock (TB_EV_FAST_CLOCK):
 * false where there is no counter, or once it turned out unusable.
 */
static inline bool tb_ev_fast_clock(const struct tb_ev_writer *ew)
{
	return ew->fast.on == TB__EV_FAST_CAL || ew->fast.on == TB__EV_FAST_ON;
}

static inline uint64_t tb_ev_now(struct tb_ev_writer *ew)
{
#if TB__EV_HAVE_COUNTER
	if (ew->fast.on)
		return tb__ev_fast_now(&ew->fast);
#endif
	if (ew->clock)
		return ew->clock->now(ew->clock->ctx);
#if TB_EV_HAVE_BOOTTIME
	return tb_ev_boottime_ns();
#else
	return 0;	/* not reached: init refuses a NULL clock */
#endif
}

/*
 * The clock id the writer's timestamps are on, 0 for BOOTTIME (the
 * default: none needed).  With TB_EV_DELTA_TIME an incremental clock,
 * which must be scoped to the sequence: the writer's own id if it is
 * one, else the first such id (64).
 */
static inline uint32_t tb__ev_own_clock_id(const struct tb_ev_writer *ew)
{
	uint32_t id = ew->clock ? ew->clock->id : TB_CLOCK_BOOTTIME;

	if (ew->flags & TB_EV_DELTA_TIME)
		return id >= TB_CLOCK_USER ? id : TB_CLOCK_USER;
	return id != TB_CLOCK_BOOTTIME ? id : 0;
}

/*
 * What a packet's timestamp field carries for time @ts: @ts, or with
 * TB_EV_DELTA_TIME its distance from the last timestamp written on the
 * sequence (the state's clock snapshot for the first), modulo 2^64: the
 * importer adds it as a signed number (an owed END written after the
 * snapshot of a fresh state goes back).
 */
TB__ALWAYS uint64_t tb__ev_tval(const struct tb_ev_writer *ew,
			       uint64_t ts)
{
	return ew->flags & TB_EV_DELTA_TIME ? ts - ew->last : ts;
}

/*
 * The clock id each packet carries: none when the defaults say it (set
 * at init: clock and flags stay).
 */
static inline uint32_t tb__ev_clock_id(const struct tb_ev_writer *ew)
{
	return ew->cid;
}

/* ------------------------------------------------------------------------
 * Sizes and encodings of protobuf fields: tbpb.h's codec.  The field
 * numbers are constants, so the sizes fold and a key is one or two byte
 * stores.
 */
static inline uint32_t tb__ev_vsize(uint32_t field, uint64_t v)
{
	return tb__pb_tag_len(field) + tb_pb_varint_len(v);
}

static inline uint32_t tb__ev_lsize(uint32_t field, uint32_t len)
{
	return tb__pb_tag_len(field) + tb_pb_varint_len(len) + len;
}

/* ------------------------------------------------------------------------
 * The output: a packet of a size known in advance, encoded straight into
 * the ring.  One fragment when it fits a chunk; else it streams across
 * chunks with the continuation flags, as tb_writer_write_packet() does.
 * After an error every put is a no-op and close returns the error.
 */
struct tb__ev_out {
	struct tb_writer *w;
	uint8_t *p;		/* next byte */
	uint8_t *end;		/* end of the open fragment's range */
	uint8_t *frag;		/* its first byte */
	uint32_t left;		/* bytes of the packet from @frag on */
	int ret;
};

#define TB__EV_FAST	24u	/* room for any tag + varint or fixed64 */

static inline int tb__ev_out_open(struct tb__ev_out *o, struct tb_writer *w,
				  uint32_t size, unsigned flags)
{
	uint32_t max = tb_frag_max_size(w->ring->chunk_size);
	uint32_t min = size <= max && !flags ? size :
		       size < TB_SPLIT_MIN ? size : TB_SPLIT_MIN;
	struct tb_span s;
	int ret = tb_writer_open(w, min, flags, &s);

	o->w = w;
	o->left = size;
	if (ret) {
		tb_writer_record_loss(w);
		o->p = o->end = o->frag = NULL;
		o->ret = ret;
		return ret;
	}
	o->p = o->frag = s.begin;
	o->end = s.end;
	o->ret = TB_OK;
	return TB_OK;
}

/* The open fragment is full: close it, go on in the next chunk. */
TB__EV_SLOW int tb__ev_out_next(struct tb__ev_out *o)
{
	uint32_t used = (uint32_t)(o->p - o->frag);
	int ret;

	if (o->ret)
		return o->ret;
	o->left -= used;
	ret = tb_writer_close(o->w, used, TB_CLOSE_CONT_NEXT);
	if (!ret)
		return tb__ev_out_open(o, o->w, o->left, TB_OPEN_CONT_PREV);
	o->p = o->end = o->frag = NULL;
	o->ret = ret;
	return ret;
}

static inline void tb__ev_put(struct tb__ev_out *o, const void *src,
			      uint32_t n)
{
	const uint8_t *s = (const uint8_t *)src;

	while (n) {
		uint32_t room = (uint32_t)(o->end - o->p);

		if (!room) {
			if (tb__ev_out_next(o))
				return;
			continue;
		}
		if (room > n)
			room = n;
		TB_MEMCPY(o->p, s, room);
		o->p += room;
		s += room;
		n -= room;
	}
}

/*
 * A cached field (a track_uuid: tag and varint, at most TB__EV_UFIELD
 * bytes, @s holding that many): with room for all of them, one copy of
 * constant size (a few moves, no loop), the bytes past @n overwritten by
 * what follows or left unpublished in the open fragment's range.
 */

static inline void tb__ev_put_raw(struct tb__ev_out *o, const uint8_t *s,
				  uint32_t n)
{
	if ((size_t)(o->end - o->p) < TB__EV_UFIELD) {
		tb__ev_put(o, s, n);
		return;
	}
	TB_MEMCPY(o->p, s, TB__EV_UFIELD);
	o->p += n;
}

static inline bool tb__ev_fast(const struct tb__ev_out *o)
{
	return (size_t)(o->end - o->p) >= TB__EV_FAST;
}

static inline void tb__ev_put_uint(struct tb__ev_out *o, uint32_t field,
				   uint64_t v)
{
	uint8_t t[TB__EV_FAST];

	if (tb__ev_fast(o)) {
		o->p = tb__pb_uint_at(o->p, field, v);
		return;
	}
	tb__ev_put(o, t, (uint32_t)(tb__pb_uint_at(t, field, v) - t));
}

/* The header of a length-delimited field (a nested message's). */
static inline void tb__ev_put_hdr(struct tb__ev_out *o, uint32_t field,
				  uint32_t len)
{
	uint8_t t[TB__EV_FAST];

	if (tb__ev_fast(o)) {
		o->p = tb__pb_len_at(o->p, field, len);
		return;
	}
	tb__ev_put(o, t, (uint32_t)(tb__pb_len_at(t, field, len) - t));
}

/*
 * After a failed open or next, o->p is NULL: nothing may be added to it,
 * not even 0 (an empty string), so the copies test the length first.
 */
static inline void tb__ev_put_bytes(struct tb__ev_out *o, uint32_t field,
				    const void *s, uint32_t len)
{
	tb__ev_put_hdr(o, field, len);
	if (!len)
		return;
	if (len <= (size_t)(o->end - o->p)) {
		TB_MEMCPY(o->p, s, len);
		o->p += len;
		return;
	}
	tb__ev_put(o, s, len);
}

static inline void tb__ev_put_fixed64(struct tb__ev_out *o, uint32_t field,
				      uint64_t v)
{
	uint8_t t[TB__EV_FAST];

	if (tb__ev_fast(o)) {
		o->p = tb__pb_fixed64_at(o->p, field, v);
		return;
	}
	tb__ev_put(o, t, (uint32_t)(tb__pb_fixed64_at(t, field, v) - t));
}

static inline uint64_t tb__ev_dbits(double d)
{
	uint64_t v;

	TB_MEMCPY(&v, &d, sizeof(v));
	return v;
}

/*
 * The same puts in two modes, @st a constant at every call: streaming
 * (true: the checked puts above, which cross chunks), or direct (false:
 * the open fragment's range holds the whole packet and TB__EV_SLACK bytes
 * more, tb__ev_out_fits(), so nothing is checked and no put can cross).
 * The event encoder is written once over these and instantiated in both.
 */
#define TB__EV_SLACK	TB__EV_FAST

static inline bool tb__ev_out_fits(const struct tb__ev_out *o, uint32_t size)
{
	return (size_t)(o->end - o->p) >= (size_t)size + TB__EV_SLACK;
}

TB__EV_HOT void tb__ev_pu(struct tb__ev_out *o, bool st, uint32_t field,
			  uint64_t v)
{
	if (st)
		tb__ev_put_uint(o, field, v);
	else
		o->p = tb__pb_uint_at(o->p, field, v);
}

TB__EV_HOT void tb__ev_ph(struct tb__ev_out *o, bool st, uint32_t field,
			  uint32_t len)
{
	if (st)
		tb__ev_put_hdr(o, field, len);
	else
		o->p = tb__pb_len_at(o->p, field, len);
}

TB__EV_HOT void tb__ev_pb(struct tb__ev_out *o, bool st, uint32_t field,
			  const void *b, uint32_t len)
{
	if (st) {
		tb__ev_put_bytes(o, field, b, len);
		return;
	}
	o->p = tb__pb_len_at(o->p, field, len);
	if (len)
		TB_MEMCPY(o->p, b, len);
	o->p += len;
}

TB__EV_HOT void tb__ev_pf(struct tb__ev_out *o, bool st, uint32_t field,
			  uint64_t v)
{
	if (st)
		tb__ev_put_fixed64(o, field, v);
	else
		o->p = tb__pb_fixed64_at(o->p, field, v);
}

TB__EV_HOT void tb__ev_pr(struct tb__ev_out *o, bool st, const uint8_t *b,
			  uint32_t n)
{
	if (st) {
		tb__ev_put_raw(o, b, n);
		return;
	}
	TB_MEMCPY(o->p, b, TB__EV_UFIELD);	/* TB__EV_SLACK covers it */
	o->p += n;
}

/* Closes the packet; the sizes planned and written must agree. */
static inline int tb__ev_out_close(struct tb__ev_out *o)
{
	uint32_t used = (uint32_t)(o->p - o->frag);

	if (o->ret)
		return o->ret;
	TB_BUG_ON(used != o->left);
	return tb_writer_close(o->w, used, 0);
}

/* ------------------------------------------------------------------------
 * Interning: open addressing on (string, kind).  A static name (a
 * literal: the macros) is keyed by its address; any other by its bytes,
 * hashed, compared, and copied into the writer's names[] (no pointer to
 * the caller's buffer is kept).
 */
static inline uint32_t tb__ev_mix(uint64_t x)
{
	x *= 0x9e3779b97f4a7c15ull;
	return (uint32_t)(x >> 40) & (TB_EV_INTERN_SLOTS - 1);
}

static inline uint32_t tb__ev_hash_step(uint32_t h, uint32_t w)
{
	h = (h ^ w) * 0x9e3779b1u;
	return h ^ h >> 15;
}

/* The hash of @n bytes at @s, four at a time (the order is the host's). */
static inline uint32_t tb__ev_hash(const char *s, uint32_t n)
{
	uint32_t h = n * 0x85ebca6bu, w, i;

	for (i = 0; i + 4 <= n; i += 4) {
		TB_MEMCPY(&w, s + i, 4);
		h = tb__ev_hash_step(h, w);
	}
	for (w = 0; i < n; i++)
		w = w << 8 | (uint8_t)s[i];
	return tb__ev_hash_step(h, w);
}

/* A free slot of @ew's table was found at @e: the entry for a new iid. */
static inline uint32_t tb__ev_new_iid(struct tb_ev_writer *ew,
				      struct tb__ev_intern *e, unsigned kind,
				      uint8_t *emit)
{
	e->iid = (uint32_t)kind << 30 | ew->next_iid;
	e->epoch = ew->epoch;
	ew->nintern++;
	*emit = 1;
	return ew->next_iid++;
}

/* Whether the table takes one more string; else it is sent inline. */
static inline bool tb__ev_room(struct tb_ev_writer *ew)
{
	if (ew->nintern < TB__EV_MAX_INTERN && ew->next_iid <= TB__EV_IID_MAX)
		return true;
	ew->overflow = 1;
	ew->stats.inline_names++;
	return false;
}

/* The iid of an entry found; marks it emitted in this state. */
static inline uint32_t tb__ev_hit(const struct tb_ev_writer *ew,
				  struct tb__ev_intern *e, uint8_t *emit)
{
	*emit = e->epoch != ew->epoch;
	e->epoch = ew->epoch;
	return e->iid & TB__EV_IID_MAX;
}

/* A static string, by address. */
TB__EV_HOT uint32_t tb__ev_intern_static(struct tb_ev_writer *ew,
					    const char *s, unsigned kind,
					    uint8_t *emit)
{
	uint32_t i = tb__ev_mix((uint64_t)(uintptr_t)s * 4 + kind), n;
	struct tb__ev_intern *e;

	for (n = 0; n < TB_EV_INTERN_SLOTS; n++) {
		e = &ew->intern[i];
		if (!e->iid)
			break;
		if (e->str == s && e->iid >> 30 == kind)
			return tb__ev_hit(ew, e, emit);
		i = (i + 1) & (TB_EV_INTERN_SLOTS - 1);
	}
	if (!tb__ev_room(ew))
		return 0;
	e->str = s;
	return tb__ev_new_iid(ew, e, kind, emit);
}

/*
 * Any other string, by content: measured, hashed, compared with the
 * copies whose hash and length match (memcmp), and copied into
 * names[] when new.  A name longer than a quarter of names[] is always
 * sent inline; one that finds names[] full too (the next fresh state
 * empties the table).
 */
TB__EV_SLOW uint32_t tb__ev_intern_copy(struct tb_ev_writer *ew,
					const char *s, unsigned kind,
					uint32_t *len, uint8_t *emit)
{
	uint32_t n = (uint32_t)TB_STRLEN(s), h = tb__ev_hash(s, n), i, k;
	struct tb__ev_intern *e;

	*len = n;
	i = tb__ev_mix((uint64_t)h << 2 | kind);
	for (k = 0; k < TB_EV_INTERN_SLOTS; k++) {
		e = &ew->intern[i];
		if (!e->iid)
			break;
		if (!e->str && e->hash == h && e->len == n &&
		    e->iid >> 30 == kind &&
		    !TB_MEMCMP(ew->names + e->off, s, n))
			return tb__ev_hit(ew, e, emit);
		i = (i + 1) & (TB_EV_INTERN_SLOTS - 1);
	}
	if (n > TB_EV_NAME_BYTES / 4) {
		ew->stats.inline_names++;
		return 0;
	}
	if (n > TB_EV_NAME_BYTES - ew->nbytes) {
		ew->overflow = 1;
		ew->stats.inline_names++;
		return 0;
	}
	if (!tb__ev_room(ew))
		return 0;
	e->str = NULL;
	e->hash = h;
	e->off = (uint16_t)ew->nbytes;
	e->len = (uint16_t)n;
	if (n)
		TB_MEMCPY(ew->names + ew->nbytes, s, n);
	ew->nbytes += n;
	return tb__ev_new_iid(ew, e, kind, emit);
}

/* A string field as planned: by iid (and new in this state) or inline. */
struct tb__ev_str {
	const char *s;
	uint32_t len;		/* bytes: inline, or new */
	uint32_t iid;		/* 0: inline */
	uint8_t kind;
	uint8_t emit;		/* goes in this packet's interned_data */
};

/*
 * Plans @st (@copy: inline; @fixed: @s never changes, interned by its
 * address; else by its bytes); returns its field's bytes in the
 * referring message.
 */
TB__EV_HOT uint32_t tb__ev_str_plan(struct tb_ev_writer *ew,
				       struct tb__ev_str *st, const char *s,
				       unsigned kind, bool copy, bool fixed,
				       uint32_t iid_field, uint32_t name_field)
{
	st->s = s;
	st->kind = (uint8_t)kind;
	st->emit = 0;
	st->iid = 0;
	if (copy || (ew->flags & TB_EV_NO_INTERN)) {
		st->len = (uint32_t)TB_STRLEN(s);
		return tb__ev_lsize(name_field, st->len);
	}
	if (fixed) {
		st->iid = tb__ev_intern_static(ew, s, kind, &st->emit);
		st->len = st->iid && !st->emit ? 0 : (uint32_t)TB_STRLEN(s);
	} else {
		st->iid = tb__ev_intern_copy(ew, s, kind, &st->len,
					     &st->emit);
	}
	if (st->iid)
		return tb__ev_vsize(iid_field, st->iid);
	return tb__ev_lsize(name_field, st->len);
}

TB__EV_HOT void tb__ev_str_put(struct tb__ev_out *o, bool m,
			       const struct tb__ev_str *st,
			       uint32_t iid_field, uint32_t name_field)
{
	if (st->iid)
		tb__ev_pu(o, m, iid_field, st->iid);
	else
		tb__ev_pb(o, m, name_field, st->s, st->len);
}

/* The bytes of an interned entry's message (iid, name). */
static inline uint32_t tb__ev_entry_body(const struct tb__ev_str *st)
{
	return tb__ev_vsize(TB__IE_IID, st->iid) +
	       tb__ev_lsize(TB__IE_NAME, st->len);
}

/* Its bytes in InternedData, 0 when it is not new. */
static inline uint32_t tb__ev_entry_size(const struct tb__ev_str *st)
{
	return st->emit ? tb__ev_lsize(st->kind + 1u, tb__ev_entry_body(st)) :
			  0;
}

TB__EV_HOT void tb__ev_entry_put(struct tb__ev_out *o, bool m,
				 const struct tb__ev_str *st)
{
	if (!st->emit)
		return;
	/* InternedData field = kind + 1: categories 1, names 2, ann. 3 */
	tb__ev_ph(o, m, st->kind + 1u, tb__ev_entry_body(st));
	tb__ev_pu(o, m, TB__IE_IID, st->iid);
	tb__ev_pb(o, m, TB__IE_NAME, st->s, st->len);
}

/* ------------------------------------------------------------------------
 * The packet header every packet of the writer shares: timestamp, clock
 * id, sequence flags.
 */
static inline uint32_t tb__ev_head_size(const struct tb_ev_writer *ew,
					bool ts, uint64_t t, uint32_t seq)
{
	uint32_t n = ts ? tb__ev_vsize(TB__TP_TIMESTAMP, t) : 0;
	uint32_t id = tb__ev_clock_id(ew);

	if (ts && id)
		n += tb__ev_vsize(TB__TP_TIMESTAMP_CLOCK_ID, id);
	if (seq)
		n += tb__ev_vsize(TB__TP_SEQUENCE_FLAGS, seq);
	return n;
}

/* The header after the timestamp (and without one, none): id, flags. */
TB__EV_HOT void tb__ev_head_rest_m(struct tb__ev_out *o, bool m,
				   const struct tb_ev_writer *ew, bool ts,
				   uint32_t seq)
{
	uint32_t id = tb__ev_clock_id(ew);

	if (ts && id)
		tb__ev_pu(o, m, TB__TP_TIMESTAMP_CLOCK_ID, id);
	if (seq)
		tb__ev_pu(o, m, TB__TP_SEQUENCE_FLAGS, seq);
}

TB__EV_HOT void tb__ev_head_put_m(struct tb__ev_out *o, bool m,
				  const struct tb_ev_writer *ew, bool ts,
				  uint64_t t, uint32_t seq)
{
	if (ts)
		tb__ev_pu(o, m, TB__TP_TIMESTAMP, t);
	tb__ev_head_rest_m(o, m, ew, ts, seq);
}

static inline void tb__ev_head_put(struct tb__ev_out *o,
				   const struct tb_ev_writer *ew, bool ts,
				   uint64_t t, uint32_t seq)
{
	tb__ev_head_put_m(o, true, ew, ts, t, seq);
}

/* The sequence flag of the first packet of a state, taken once. */
static inline uint32_t tb__ev_take_clear(struct tb_ev_writer *ew)
{
	uint32_t seq = ew->clear ? TB_SEQ_INCREMENTAL_STATE_CLEARED : 0;

	ew->clear = 0;
	return seq;
}

/*
 * A packet's sequence flags: CLEARED on the state's first, NEEDS on
 * those that use it: iids (@uses), or the defaults (every later packet).
 */
static inline uint32_t tb__ev_seq(struct tb_ev_writer *ew, bool uses)
{
	uint32_t seq = tb__ev_take_clear(ew);

	if (uses ||
	    (!seq && (ew->flags & (TB_EV_DEFAULTS | TB_EV_DELTA_TIME))))
		seq |= TB_SEQ_NEEDS_INCREMENTAL_STATE;
	return seq;
}

/*
 * After ->fresh, ->nends or ->epoch changed: the one word the fast path
 * compares with a kept event's epoch (tb__ev_site_write()).
 */
static inline void tb__ev_set_ready(struct tb_ev_writer *ew)
{
	ew->ready = ew->fresh || ew->nends ? 0 : ew->epoch;
}

/* A write failed: the packet is lost, and so is the state after it. */
static inline int tb__ev_lost(struct tb_ev_writer *ew, int ret)
{
	ew->stats.lost++;
	ew->fresh = 1;
	tb__ev_set_ready(ew);
	ew->owed = 1;
	return ret;
}

/* ------------------------------------------------------------------------
 * Track descriptors.
 */
static inline uint32_t tb__ev_name_len(const char *name)
{
	return name ? (uint32_t)TB_STRLEN(name) : 0;
}

/* The bytes of the kind's own descriptor (process, thread, counter). */
static inline uint32_t tb__ev_inner_size(const struct tb_track *t,
					 uint32_t nlen)
{
	switch (t->kind) {
	case TB_TRACK_PROCESS:
		return tb__ev_vsize(TB__PD_PID, (uint64_t)(int64_t)t->pid) +
		       (t->name ? tb__ev_lsize(TB__PD_PROCESS_NAME, nlen) : 0);
	case TB_TRACK_THREAD:
		return tb__ev_vsize(TB__THD_PID, (uint64_t)(int64_t)t->pid) +
		       tb__ev_vsize(TB__THD_TID, (uint64_t)(int64_t)t->tid) +
		       (t->name ? tb__ev_lsize(TB__THD_THREAD_NAME, nlen) : 0);
	case TB_TRACK_COUNTER:
		return t->unit ? tb__ev_vsize(TB__CD_UNIT, t->unit) : 0;
	}
	return 0;
}

static inline uint32_t tb__ev_inner_field(const struct tb_track *t)
{
	return t->kind == TB_TRACK_PROCESS ? TB__TD_PROCESS :
	       t->kind == TB_TRACK_THREAD ? TB__TD_THREAD :
	       t->kind == TB_TRACK_COUNTER ? TB__TD_COUNTER : 0;
}

/* Writes @t's TrackDescriptor packet. */
TB__EV_SLOW int tb__ev_describe(struct tb_ev_writer *ew,
					   const struct tb_track *t)
{
	uint32_t nlen = tb__ev_name_len(t->name);
	uint32_t inner = tb__ev_inner_size(t, nlen);
	uint32_t field = tb__ev_inner_field(t), td, size, seq;
	bool named = t->name && (t->kind == TB_TRACK_CUSTOM ||
				 t->kind == TB_TRACK_COUNTER);
	uint64_t ts = ew->stamp ? ew->stamp : tb_ev_now(ew);
	uint64_t tv = tb__ev_tval(ew, ts);
	struct tb__ev_out o;
	int ret;

	td = tb__ev_vsize(TB__TD_UUID, t->uuid) +
	     (t->parent ? tb__ev_vsize(TB__TD_PARENT_UUID, t->parent->uuid) :
			  0) +
	     (named ? tb__ev_lsize(TB__TD_NAME, nlen) : 0) +
	     (field ? tb__ev_lsize(field, inner) : 0);
	seq = tb__ev_seq(ew, false);
	size = tb__ev_head_size(ew, true, tv, seq) +
	       tb__ev_lsize(TB__TP_TRACK_DESCRIPTOR, td);
	if (tb__ev_out_open(&o, ew->w, size, 0))
		return tb__ev_lost(ew, o.ret);
	tb__ev_head_put(&o, ew, true, tv, seq);
	tb__ev_put_hdr(&o, TB__TP_TRACK_DESCRIPTOR, td);
	tb__ev_put_uint(&o, TB__TD_UUID, t->uuid);
	if (t->parent)
		tb__ev_put_uint(&o, TB__TD_PARENT_UUID, t->parent->uuid);
	if (named)
		tb__ev_put_bytes(&o, TB__TD_NAME, t->name, nlen);
	if (field)
		tb__ev_put_hdr(&o, field, inner);
	if (t->kind == TB_TRACK_PROCESS) {
		tb__ev_put_uint(&o, TB__PD_PID, (uint64_t)(int64_t)t->pid);
		if (t->name)
			tb__ev_put_bytes(&o, TB__PD_PROCESS_NAME, t->name,
					 nlen);
	} else if (t->kind == TB_TRACK_THREAD) {
		tb__ev_put_uint(&o, TB__THD_PID, (uint64_t)(int64_t)t->pid);
		tb__ev_put_uint(&o, TB__THD_TID, (uint64_t)(int64_t)t->tid);
		if (t->name)
			tb__ev_put_bytes(&o, TB__THD_THREAD_NAME, t->name,
					 nlen);
	} else if (t->kind == TB_TRACK_COUNTER && t->unit) {
		tb__ev_put_uint(&o, TB__CD_UNIT, t->unit);
	}
	ret = tb__ev_out_close(&o);
	if (ret)
		return tb__ev_lost(ew, ret);
	ew->owed = 0;
	ew->last = ts;
	ew->stats.descriptors++;
	return TB_OK;
}

/* ------------------------------------------------------------------------
 * The clock snapshot: the user clock and its reference, read together.
 */
/* ------------------------------------------------------------------------
 * TracePacketDefaults (TB_EV_DEFAULTS): the writer's track and clock for
 * every later packet of the state, on the state's first packet.
 */
static inline uint32_t tb__ev_track_defaults_size(const struct tb_ev_writer *ew)
{
	return tb__ev_vsize(TB__TED_TRACK_UUID, ew->track->uuid);
}

TB__EV_SLOW int tb__ev_defaults(struct tb_ev_writer *ew)
{
	uint32_t id = tb__ev_own_clock_id(ew);
	uint32_t ted = ew->track ? tb__ev_track_defaults_size(ew) : 0;
	uint32_t dl = (id ? tb__ev_vsize(TB__TP_TIMESTAMP_CLOCK_ID, id) : 0) +
		      (ew->track ?
		       tb__ev_lsize(TB__PDF_TRACK_EVENT_DEFAULTS, ted) : 0);
	uint32_t seq = tb__ev_seq(ew, false);
	struct tb__ev_out o;
	int ret;

	if (tb__ev_out_open(&o, ew->w, tb__ev_head_size(ew, false, 0, seq) +
			    tb__ev_lsize(TB__TP_TRACE_PACKET_DEFAULTS, dl), 0))
		return tb__ev_lost(ew, o.ret);
	tb__ev_head_put(&o, ew, false, 0, seq);
	tb__ev_put_hdr(&o, TB__TP_TRACE_PACKET_DEFAULTS, dl);
	if (id)
		tb__ev_put_uint(&o, TB__TP_TIMESTAMP_CLOCK_ID, id);
	if (ew->track) {
		tb__ev_put_hdr(&o, TB__PDF_TRACK_EVENT_DEFAULTS, ted);
		tb__ev_put_uint(&o, TB__TED_TRACK_UUID, ew->track->uuid);
	}
	ret = tb__ev_out_close(&o);
	if (ret)
		return tb__ev_lost(ew, ret);
	ew->owed = 0;
	return TB_OK;
}

static inline bool tb__ev_wants_snapshot(const struct tb_ev_writer *ew)
{
	const struct tb_ev_clock *c = ew->clock;

	return (ew->flags & TB_EV_DELTA_TIME) ||
	       (c && c->id != TB_CLOCK_BOOTTIME && c->ref_id &&
		c->ref_id != c->id);
}

static inline uint64_t tb__ev_ref_now(const struct tb_ev_clock *c)
{
	if (c->ref_now)
		return c->ref_now(c->ctx);
#if TB_EV_HAVE_BOOTTIME
	return tb_ev_boottime_ns();
#else
	return 0;	/* not reached: init refuses it */
#endif
}

/* A ClockSnapshot.Clock: id, timestamp, and is_incremental when @inc. */
static inline uint32_t tb__ev_clock_size(uint32_t id, uint64_t ts, bool inc)
{
	return tb__ev_vsize(TB__CK_CLOCK_ID, id) +
	       tb__ev_vsize(TB__CK_TIMESTAMP, ts) +
	       (inc ? tb__ev_vsize(TB__CK_INCREMENTAL, 1) : 0);
}

static inline void tb__ev_clock_put(struct tb__ev_out *o, uint32_t id,
				    uint64_t ts, bool inc)
{
	tb__ev_put_hdr(o, TB__CS_CLOCKS, tb__ev_clock_size(id, ts, inc));
	tb__ev_put_uint(o, TB__CK_CLOCK_ID, id);
	tb__ev_put_uint(o, TB__CK_TIMESTAMP, ts);
	if (inc)
		tb__ev_put_uint(o, TB__CK_INCREMENTAL, 1);
}

/*
 * The writer's clock read together with BOOTTIME: its own reading, and
 * the reference's (or the same one, for a clock on BOOTTIME).  With
 * TB_EV_DELTA_TIME the state's timestamps count from it.
 */
TB__EV_SLOW int tb__ev_snapshot(struct tb_ev_writer *ew)
{
	const struct tb_ev_clock *c = ew->clock;
	bool inc = (ew->flags & TB_EV_DELTA_TIME) != 0;
	uint32_t id = tb__ev_own_clock_id(ew);
	uint64_t mine = tb_ev_now(ew);
	uint64_t ref = !c || c->id == TB_CLOCK_BOOTTIME ? mine :
		       tb__ev_ref_now(c);
	uint32_t cs = tb__ev_lsize(TB__CS_CLOCKS,
				   tb__ev_clock_size(id, mine, inc)) +
		      tb__ev_lsize(TB__CS_CLOCKS,
				   tb__ev_clock_size(TB_CLOCK_BOOTTIME, ref,
						     false));
	uint32_t seq = tb__ev_seq(ew, false);
	uint32_t size = tb__ev_head_size(ew, false, 0, seq) +
			tb__ev_lsize(TB__TP_CLOCK_SNAPSHOT, cs);
	struct tb__ev_out o;
	int ret;

	if (tb__ev_out_open(&o, ew->w, size, 0))
		return tb__ev_lost(ew, o.ret);
	tb__ev_head_put(&o, ew, false, 0, seq);
	tb__ev_put_hdr(&o, TB__TP_CLOCK_SNAPSHOT, cs);
	tb__ev_clock_put(&o, id, mine, inc);
	tb__ev_clock_put(&o, TB_CLOCK_BOOTTIME, ref, false);
	ret = tb__ev_out_close(&o);
	if (ret)
		return tb__ev_lost(ew, ret);
	ew->owed = 0;
	ew->last = mine;
	ew->stats.snapshots++;
	return TB_OK;
}

/* ------------------------------------------------------------------------
 * The table of tracks this writer used.
 */
static inline struct tb__ev_track *tb__ev_find_track(struct tb_ev_writer *ew,
						     const struct tb_track *t)
{
	uint32_t i;

	for (i = 0; i < ew->ntracks; i++)
		if (ew->tracks[i].t == t)
			return &ew->tracks[i];
	return NULL;
}

/* Remembers @t (not yet described in this state), or NULL: no room. */
static inline struct tb__ev_track *tb__ev_add_track(struct tb_ev_writer *ew,
						    const struct tb_track *t)
{
	struct tb__ev_track *s;

	if (ew->ntracks >= TB_EV_TRACKS)
		return NULL;
	s = &ew->tracks[ew->ntracks++];
	s->t = t;
	s->lost = 0;
	s->depth = 0;
	s->epoch = 0;
	TB_MEMSET(s->ufield, 0, sizeof(s->ufield));	/* all copied */
	s->ulen = (uint8_t)(tb__pb_uint_at(s->ufield, TB__TE_TRACK_UUID,
					   t->uuid) - s->ufield);
	return s;
}

#define TB__EV_NEST_MAX	8	/* parents followed up from a track */

/*
 * Makes sure @t and its parents are described in this state, remembering
 * them in the table while it has room; one not in the table is described
 * on every use.  *@slot gets @t's entry, or NULL.
 */
TB__EV_SLOW int tb__ev_use_track_slow(struct tb_ev_writer *ew,
						 const struct tb_track *t,
						 struct tb__ev_track **slot)
{
	const struct tb_track *chain[TB__EV_NEST_MAX];
	int n = 0, ret;

	for (; t && n < TB__EV_NEST_MAX; t = t->parent)
		chain[n++] = t;
	while (n--) {			/* the root first */
		struct tb__ev_track *s = tb__ev_find_track(ew, chain[n]);

		if (!s)
			s = tb__ev_add_track(ew, chain[n]);
		*slot = s;
		if (s && s->epoch == ew->epoch)
			continue;
		ret = tb__ev_describe(ew, chain[n]);
		if (ret)
			return ret;
		if (s)
			s->epoch = ew->epoch;
	}
	return TB_OK;
}

/* @t's entry in the table, or NULL; the writer's own track first. */
static inline struct tb__ev_track *tb__ev_slot_of(struct tb_ev_writer *ew,
						  const struct tb_track *t)
{
	if (!t)
		return NULL;
	if (ew->own < ew->ntracks && ew->tracks[ew->own].t == t)
		return &ew->tracks[ew->own];
	return tb__ev_find_track(ew, t);
}

/* As tb__ev_use_track(), *@slot already tb__ev_slot_of(@t). */
static inline int tb__ev_use_slot(struct tb_ev_writer *ew,
				  const struct tb_track *t,
				  struct tb__ev_track **slot)
{
	if (!t || (*slot && (*slot)->epoch == ew->epoch))
		return TB_OK;	/* described, or uuid 0 (global) */
	return tb__ev_use_track_slow(ew, t, slot);
}

static inline int tb__ev_use_track(struct tb_ev_writer *ew,
				   const struct tb_track *t,
				   struct tb__ev_track **slot)
{
	*slot = tb__ev_slot_of(ew, t);
	return tb__ev_use_slot(ew, t, slot);
}

/* ------------------------------------------------------------------------
 * Fresh incremental state.
 */
TB__EV_SLOW int tb__ev_restart(struct tb_ev_writer *ew)
{
	uint32_t i;
	int ret;

	ew->fresh = 0;
	ew->clear = 1;
	if (!++ew->epoch)
		ew->epoch = 1;
	tb__ev_set_ready(ew);
	ew->stats.states++;
	if (ew->overflow) {		/* room for the strings in use now */
		TB_MEMSET(ew->intern, 0, sizeof(ew->intern));
		ew->nintern = 0;
		ew->nbytes = 0;
		ew->overflow = 0;
	}
	if (ew->flags & TB_EV_DEFAULTS) {
		ret = tb__ev_defaults(ew);
		if (ret)
			return ret;
	}
	if (tb__ev_wants_snapshot(ew)) {
		ret = tb__ev_snapshot(ew);
		if (ret)
			return ret;
	}
	for (i = 0; i < ew->ntracks; i++) {
		ret = tb__ev_describe(ew, ew->tracks[i].t);
		if (ret)
			return ret;
		ew->tracks[i].epoch = ew->epoch;
	}
	return TB_OK;
}

/* Before every event: a fresh state if one is due (one relaxed load). */
static inline int tb__ev_check_state(struct tb_ev_writer *ew)
{
	uint32_t gen = tb_ring_generation(ew->w->ring);

	if (gen != ew->gen) {
		ew->gen = gen;
		if (!ew->fresh)
			ew->stats.generations++;
		ew->fresh = 1;
		tb__ev_set_ready(ew);
	}
	return ew->fresh ? tb__ev_restart(ew) : TB_OK;
}

/* ------------------------------------------------------------------------
 * Slices under loss: a stack of "this BEGIN was not written" per track.
 */
static inline void tb__ev_push(struct tb__ev_track *s, bool written)
{
	if (!s)
		return;
	if (s->depth < TB__EV_DEPTH_MAX) {
		uint64_t bit = (uint64_t)1 << s->depth;

		s->lost = written ? s->lost & ~bit : s->lost | bit;
	}
	s->depth++;
}

/* Pops the innermost slice: false if its BEGIN was never written. */
static inline bool tb__ev_pop(struct tb__ev_track *s)
{
	if (!s || !s->depth)
		return true;
	s->depth--;
	return s->depth >= TB__EV_DEPTH_MAX || !(s->lost >> s->depth & 1);
}

/* ------------------------------------------------------------------------
 * Flows under loss: the flows this writer started or continued (flow_ids)
 * and not yet ended here, each with whether its event here was written.
 * An end (terminating_flow_ids) of a flow whose every event here was lost
 * is left out: the importer ignores an end with no start.
 */
static inline struct tb__ev_flow *tb__ev_flow_find(struct tb_ev_writer *ew,
						   uint64_t id)
{
	uint32_t i;

	for (i = 0; i < ew->nflows; i++)
		if (ew->flows[i].id == id)
			return &ew->flows[i];
	return NULL;
}

static inline bool tb__ev_flow_lost(struct tb_ev_writer *ew, uint64_t id)
{
	const struct tb__ev_flow *f = ew->nflows ? tb__ev_flow_find(ew, id) :
				      NULL;

	return f && f->lost;
}

/* One bit of @id in the filter of written flows the table forgot. */
static inline uint64_t tb__ev_flow_bit(uint64_t id)
{
	return (uint64_t)1 << ((id * 0x9e3779b97f4a7c15ull) >> 58);
}

static inline void tb__ev_flow_drop(struct tb_ev_writer *ew,
				    struct tb__ev_flow *f)
{
	uint32_t i = (uint32_t)(f - ew->flows);

	for (; i + 1 < ew->nflows; i++)
		ew->flows[i] = ew->flows[i + 1];
	ew->nflows--;
}

/*
 * Remembers flow @id; a full table forgets its oldest: a lost one then
 * has its end sent (counted: flows_untracked), a written one goes into
 * the filter, so that a lost step of it is never taken for a lost start.
 */
static inline void tb__ev_flow_add(struct tb_ev_writer *ew, uint64_t id,
				   bool lost)
{
	if (ew->nflows == TB_EV_FLOWS) {
		if (ew->flows[0].lost)
			ew->stats.flows_untracked++;
		else
			ew->forgot |= tb__ev_flow_bit(ew->flows[0].id);
		tb__ev_flow_drop(ew, &ew->flows[0]);
	}
	ew->flows[ew->nflows].id = id;
	ew->flows[ew->nflows].lost = lost;
	ew->nflows++;
}

/* After @ev was written (@ok) or not: its flows start, go on or end. */
TB__EV_SLOW void tb__ev_flows_after(struct tb_ev_writer *ew,
				    const struct tb_ev_event *ev, bool ok)
{
	struct tb__ev_flow *f;
	uint32_t i;

	for (i = 0; i < ev->nargs; i++) {
		const struct tb_arg *a = &ev->args[i];

		if (a->type == TB_ARG_T_FLOW_END) {
			f = tb__ev_flow_find(ew, a->v.u);
			if (f && f->lost && ok)
				ew->stats.flow_ends_skipped++;
			if (f)
				tb__ev_flow_drop(ew, f);
			continue;
		}
		if (a->type != TB_ARG_T_FLOW)
			continue;
		f = tb__ev_flow_find(ew, a->v.u);
		if (f)
			f->lost &= !ok;		/* written once: stays so */
		else if (ok)
			tb__ev_flow_add(ew, a->v.u, false);
		else if (ew->forgot & tb__ev_flow_bit(a->v.u))
			ew->stats.flows_untracked++;	/* maybe a step */
		else
			tb__ev_flow_add(ew, a->v.u, true);
	}
}

static inline bool tb__ev_has_flows(const struct tb_ev_event *ev)
{
	uint32_t i;

	for (i = 0; i < ev->nargs; i++)
		if (ev->args[i].type == TB_ARG_T_FLOW ||
		    ev->args[i].type == TB_ARG_T_FLOW_END)
			return true;
	return false;
}

/* ------------------------------------------------------------------------
 * One TrackEvent packet: planned (sizes, iids), then written in place.
 */
struct tb__ev_plan {
	uint64_t ts;
	uint64_t tv;		/* what its timestamp field carries */
	const uint8_t *ufield;	/* the track_uuid field, encoded */
	uint32_t ulen;		/* its bytes; 0: none (uuid 0) */
	uint8_t ubuf[TB__EV_UFIELD];	/* where it is encoded if not cached */
	uint32_t seq;		/* sequence flags */
	uint32_t te;		/* TrackEvent bytes */
	uint32_t id;		/* InternedData bytes */
	uint32_t size;		/* TracePacket bytes */
	bool has_cat, has_name;
	struct tb__ev_str cat, name;
	struct tb__ev_str an[TB_EV_MAX_ARGS];
	uint32_t al[TB_EV_MAX_ARGS];	/* DebugAnnotation bytes; flow ends:
					   1 written, 0 left out */
};

/*
 * The track_uuid field: cached in the track's slot, or encoded now; none
 * for the writer's own track when the defaults name it.
 */
static inline void tb__ev_plan_track(const struct tb_ev_writer *ew,
				     struct tb__ev_plan *pl,
				     const struct tb_track *t,
				     const struct tb__ev_track *slot)
{
	if (t && t == ew->track && (ew->flags & TB_EV_DEFAULTS)) {
		pl->ufield = NULL;
		pl->ulen = 0;
	} else if (slot) {
		pl->ufield = slot->ufield;
		pl->ulen = slot->ulen;
	} else if (t) {
		TB_MEMSET(pl->ubuf, 0, sizeof(pl->ubuf));	/* all copied */
		pl->ufield = pl->ubuf;
		pl->ulen = (uint32_t)(tb__pb_uint_at(pl->ubuf,
						     TB__TE_TRACK_UUID,
						     t->uuid) - pl->ubuf);
	} else {
		pl->ufield = NULL;
		pl->ulen = 0;
	}
}

static inline bool tb__ev_is_annotation(uint32_t type)
{
	return type >= TB_ARG_T_BOOL && type <= TB_ARG_T_POINTER;
}

/* An annotation's value field: DebugAnnotation's number is its type's + 1. */
static inline uint32_t tb__ev_value_field(const struct tb_arg *a)
{
	return a->type + 1u;
}

typedef char tb__ev_value_fields_check[
	TB__DA_BOOL == TB_ARG_T_BOOL + 1 && TB__DA_UINT == TB_ARG_T_UINT + 1 &&
	TB__DA_INT == TB_ARG_T_INT + 1 && TB__DA_DOUBLE == TB_ARG_T_DOUBLE + 1 &&
	TB__DA_STRING == TB_ARG_T_STRING + 1 &&
	TB__DA_POINTER == TB_ARG_T_POINTER + 1 ? 1 : -1];

/* A varint annotation's value (bool, uint, int, pointer) as encoded. */
static inline uint64_t tb__ev_value_bits(const struct tb_arg *a)
{
	return a->type == TB_ARG_T_INT ? (uint64_t)a->v.i : a->v.u;
}

static inline unsigned tb__ev_value_wire(const struct tb_arg *a)
{
	return a->type == TB_ARG_T_DOUBLE ? TB_PB_FIXED64 :
	       a->type == TB_ARG_T_STRING ? TB_PB_LEN : TB_PB_VARINT;
}

/* The bytes of an annotation's value field. */
static inline uint32_t tb__ev_value_size(const struct tb_arg *a)
{
	switch (a->type) {
	case TB_ARG_T_BOOL:
		return tb__ev_vsize(TB__DA_BOOL, a->v.u);
	case TB_ARG_T_UINT:
		return tb__ev_vsize(TB__DA_UINT, a->v.u);
	case TB_ARG_T_INT:
		return tb__ev_vsize(TB__DA_INT, (uint64_t)a->v.i);
	case TB_ARG_T_DOUBLE:
		return tb__pb_tag_len(TB__DA_DOUBLE) + 8;
	case TB_ARG_T_STRING:
		return tb__ev_lsize(TB__DA_STRING, a->len);
	case TB_ARG_T_POINTER:
		return tb__ev_vsize(TB__DA_POINTER, a->v.u);
	}
	return 0;
}

TB__EV_HOT void tb__ev_value_put(struct tb__ev_out *o, bool m,
				 const struct tb_arg *a)
{
	switch (a->type) {
	case TB_ARG_T_BOOL:
		tb__ev_pu(o, m, TB__DA_BOOL, a->v.u);
		break;
	case TB_ARG_T_UINT:
		tb__ev_pu(o, m, TB__DA_UINT, a->v.u);
		break;
	case TB_ARG_T_INT:
		tb__ev_pu(o, m, TB__DA_INT, (uint64_t)a->v.i);
		break;
	case TB_ARG_T_DOUBLE:
		tb__ev_pf(o, m, TB__DA_DOUBLE, tb__ev_dbits(a->v.d));
		break;
	case TB_ARG_T_STRING:
		tb__ev_pb(o, m, TB__DA_STRING, a->v.s, a->len);
		break;
	case TB_ARG_T_POINTER:
		tb__ev_pu(o, m, TB__DA_POINTER, a->v.u);
		break;
	}
}

/* A counter's value field: @d with @dbl, else @i. */
static inline uint32_t tb__ev_counter_size(bool dbl, int64_t i)
{
	return dbl ? tb__pb_tag_len(TB__TE_DOUBLE_COUNTER_VALUE) + 8 :
		     tb__ev_vsize(TB__TE_COUNTER_VALUE, (uint64_t)i);
}

TB__EV_HOT void tb__ev_counter_put(struct tb__ev_out *o, bool m, bool dbl,
				   int64_t i, double d)
{
	if (dbl)
		tb__ev_pf(o, m, TB__TE_DOUBLE_COUNTER_VALUE, tb__ev_dbits(d));
	else
		tb__ev_pu(o, m, TB__TE_COUNTER_VALUE, (uint64_t)i);
}

static inline bool tb__ev_has_cat(const struct tb_ev_event *ev)
{
	return ev->cat && ev->cat->name && ev->type != TB_EV_SLICE_END &&
	       ev->type != TB_EV_COUNTER;
}

TB__EV_HOT void tb__ev_plan(struct tb_ev_writer *ew,
			       const struct tb_ev_event *ev,
			       struct tb__ev_plan *pl)
{
	bool copy = ev->flags & TB_EV_COPY_NAMES;
	bool iids = false;
	uint32_t i, te = 0, id = 0;

	pl->has_cat = tb__ev_has_cat(ev);
	pl->has_name = ev->name && ev->type != TB_EV_COUNTER;
	if (pl->has_cat) {
		te += tb__ev_str_plan(ew, &pl->cat, ev->cat->name,
				      TB__EV_K_CAT, false, true,
				      TB__TE_CATEGORY_IIDS, TB__TE_CATEGORIES);
		id += tb__ev_entry_size(&pl->cat);
		iids |= pl->cat.iid != 0;
	}
	if (pl->has_name) {
		te += tb__ev_str_plan(ew, &pl->name, ev->name, TB__EV_K_NAME,
				      copy, ev->flags & TB_EV_STATIC_NAME,
				      TB__TE_NAME_IID, TB__TE_NAME);
		id += tb__ev_entry_size(&pl->name);
		iids |= pl->name.iid != 0;
	}
	te += tb__ev_vsize(TB__TE_TYPE, ev->type);
	te += pl->ulen;
	if (ev->type == TB_EV_COUNTER)
		te += tb__ev_counter_size(ev->flags & TB_EV_DOUBLE,
					  ev->flags & TB_EV_DOUBLE ? 0 :
					  ev->value.i);
	for (i = 0; i < ev->nargs; i++) {
		const struct tb_arg *a = &ev->args[i];

		if (a->type == TB_ARG_T_FLOW)
			te += tb__pb_tag_len(TB__TE_FLOW_IDS) + 8;
		else if (a->type == TB_ARG_T_FLOW_END &&
			 (pl->al[i] = !tb__ev_flow_lost(ew, a->v.u)))
			te += tb__pb_tag_len(TB__TE_TERMINATING_FLOW_IDS) + 8;
		if (!tb__ev_is_annotation(a->type))
			continue;
		pl->al[i] = tb__ev_str_plan(ew, &pl->an[i],
					    a->name ? a->name : "",
					    TB__EV_K_ANN, copy || !a->name,
					    a->flags & TB_ARG_STATIC_NAME,
					    TB__DA_NAME_IID, TB__DA_NAME) +
			    tb__ev_value_size(a);
		te += tb__ev_lsize(TB__TE_DEBUG_ANNOTATIONS, pl->al[i]);
		id += tb__ev_entry_size(&pl->an[i]);
		iids |= pl->an[i].iid != 0;
	}
	pl->te = te;
	pl->id = id;
	/* a counter value needs its track's descriptor, this state's */
	pl->seq = tb__ev_seq(ew, iids || ev->type == TB_EV_COUNTER);
	pl->size = tb__ev_head_size(ew, true, pl->tv, pl->seq) +
		   (id ? tb__ev_lsize(TB__TP_INTERNED_DATA, id) : 0) +
		   tb__ev_lsize(TB__TP_TRACK_EVENT, te);
}

/* The TrackEvent's fields every event of a call site has the same. */
TB__EV_HOT void tb__ev_fixed_put_m(struct tb__ev_out *o, bool m,
				   const struct tb_ev_event *ev,
				   const struct tb__ev_plan *pl)
{
	if (pl->has_cat)
		tb__ev_str_put(o, m, &pl->cat, TB__TE_CATEGORY_IIDS,
			       TB__TE_CATEGORIES);
	if (pl->has_name)
		tb__ev_str_put(o, m, &pl->name, TB__TE_NAME_IID, TB__TE_NAME);
	tb__ev_pu(o, m, TB__TE_TYPE, ev->type);
	if (pl->ulen)
		tb__ev_pr(o, m, pl->ufield, pl->ulen);
}

TB__EV_HOT void tb__ev_body_put_m(struct tb__ev_out *o, bool m,
				  const struct tb_ev_writer *ew,
				  const struct tb_ev_event *ev,
				  const struct tb__ev_plan *pl)
{
	uint32_t i;

	tb__ev_head_put_m(o, m, ew, true, pl->tv, pl->seq);
	if (pl->id) {
		tb__ev_ph(o, m, TB__TP_INTERNED_DATA, pl->id);
		if (pl->has_cat)
			tb__ev_entry_put(o, m, &pl->cat);
		if (pl->has_name)
			tb__ev_entry_put(o, m, &pl->name);
		for (i = 0; i < ev->nargs; i++)
			if (tb__ev_is_annotation(ev->args[i].type))
				tb__ev_entry_put(o, m, &pl->an[i]);
	}
	tb__ev_ph(o, m, TB__TP_TRACK_EVENT, pl->te);
	tb__ev_fixed_put_m(o, m, ev, pl);
	if (ev->type == TB_EV_COUNTER)
		tb__ev_counter_put(o, m, ev->flags & TB_EV_DOUBLE,
				   ev->flags & TB_EV_DOUBLE ? 0 : ev->value.i,
				   ev->flags & TB_EV_DOUBLE ? ev->value.d : 0);
	for (i = 0; i < ev->nargs; i++) {
		const struct tb_arg *a = &ev->args[i];

		if (a->type == TB_ARG_T_FLOW)
			tb__ev_pf(o, m, TB__TE_FLOW_IDS, a->v.u);
		else if (a->type == TB_ARG_T_FLOW_END && pl->al[i])
			tb__ev_pf(o, m, TB__TE_TERMINATING_FLOW_IDS,
					   a->v.u);
		if (!tb__ev_is_annotation(a->type))
			continue;
		tb__ev_ph(o, m, TB__TE_DEBUG_ANNOTATIONS, pl->al[i]);
		tb__ev_str_put(o, m, &pl->an[i], TB__DA_NAME_IID, TB__DA_NAME);
		tb__ev_value_put(o, m, a);
	}
}

/* A packet crossing chunks, or at a chunk's end: every put checked. */
TB__EV_SLOW void tb__ev_body_stream(struct tb__ev_out *o,
				    const struct tb_ev_writer *ew,
				    const struct tb_ev_event *ev,
				    const struct tb__ev_plan *pl)
{
	tb__ev_body_put_m(o, true, ew, ev, pl);
}

/* Encodes the planned event: direct when the open range holds it all. */
TB__EV_HOT void tb__ev_body_put(struct tb__ev_out *o,
				   const struct tb_ev_writer *ew,
				   const struct tb_ev_event *ev,
				   const struct tb__ev_plan *pl)
{
	if (TB__EV_DIRECT && tb__ev_out_fits(o, pl->size))
		tb__ev_body_put_m(o, false, ew, ev, pl);
	else
		tb__ev_body_stream(o, ew, ev, pl);
}

/* The event's track and timestamp, from its items or its defaults. */
static inline const struct tb_track *tb__ev_items(const struct tb_ev_writer *ew,
						  const struct tb_ev_event *ev,
						  uint64_t *ts)
{
	const struct tb_track *t = ev->track ? ev->track : ew->track;
	uint32_t i;

	*ts = ev->ts;
	for (i = 0; i < ev->nargs; i++) {
		if (ev->args[i].type == TB_ARG_T_TRACK && ev->args[i].v.t)
			t = ev->args[i].v.t;
		else if (ev->args[i].type == TB_ARG_T_TIME)
			*ts = ev->args[i].v.u;
	}
	return t;
}

static inline bool tb__ev_valid(const struct tb_ev_event *ev)
{
	uint32_t i;

	if (ev->type < TB_EV_SLICE_BEGIN || ev->type > TB_EV_COUNTER ||
	    ev->nargs > TB_EV_MAX_ARGS || (ev->nargs && !ev->args))
		return false;
	for (i = 0; i < ev->nargs; i++)
		if (ev->args[i].type > TB_ARG_T_TIME ||
		    (ev->args[i].type == TB_ARG_T_STRING &&
		     ev->args[i].len >= 1u << 30))
			return false;
	return true;
}

/*
 * Writes @ev on @t (*@slot: its entry, tb__ev_slot_of()) at @pl->ts (0:
 * now): the fresh state if one is due,
 * the descriptors of a track not described in this state, then the event
 * with the interned data it needs.
 */
TB__EV_HOT int tb__ev_write(struct tb_ev_writer *ew,
			       const struct tb_ev_event *ev,
			       const struct tb_track *t,
			       struct tb__ev_plan *pl,
			       struct tb__ev_track **slot)
{
	struct tb__ev_out o;
	int ret = tb__ev_check_state(ew);

	if (!ret)
		ret = tb__ev_use_slot(ew, t, slot);
	if (ret)
		return ret;
	tb__ev_plan_track(ew, pl, t, *slot);
	if (!pl->ts)
		pl->ts = tb_ev_now(ew);
	pl->tv = tb__ev_tval(ew, pl->ts);
	tb__ev_plan(ew, ev, pl);
	if (!tb__ev_out_open(&o, ew->w, pl->size, 0))
		tb__ev_body_put(&o, ew, ev, pl);
	ret = tb__ev_out_close(&o);
	if (ret)
		tb__ev_lost(ew, ret);
	else
		ew->last = pl->ts;
	return ret;
}

/* tb__ev_write() for the slow paths: one copy of it, out of line. */
TB__EV_SLOW int tb__ev_write_slow(struct tb_ev_writer *ew,
				  const struct tb_ev_event *ev,
				  const struct tb_track *t,
				  struct tb__ev_plan *pl,
				  struct tb__ev_track **slot)
{
	return tb__ev_write(ew, ev, t, pl, slot);
}

/*
 * Writes the ENDs owed, oldest first, each at its own time, and the fresh
 * state or descriptors it needs at that time too (nothing else is written
 * while an END is owed), so timestamps never go back on the sequence.
 * Stops at the first that fails.
 */
TB__EV_SLOW int tb__ev_pay_ends(struct tb_ev_writer *ew)
{
	struct tb__ev_track *slot;
	struct tb__ev_plan pl;
	struct tb_ev_event e;
	uint32_t i;
	int ret;

	TB_MEMSET(&e, 0, sizeof(e));
	e.type = TB_EV_SLICE_END;
	while (ew->nends) {
		e.track = ew->ends[0].t;
		slot = tb__ev_slot_of(ew, e.track);
		pl.ts = ew->ends[0].ts;
		ew->stamp = pl.ts;
		ret = tb__ev_write_slow(ew, &e, e.track, &pl, &slot);
		ew->stamp = 0;
		if (ret)
			return ret;
		ew->stats.ends_late++;
		ew->owed = 0;
		ew->nends--;
		tb__ev_set_ready(ew);
		for (i = 0; i < ew->nends; i++)
			ew->ends[i] = ew->ends[i + 1];
	}
	return TB_OK;
}

/* An END not written whose BEGIN was: kept to write later, if room. */
static inline void tb__ev_owe_end(struct tb_ev_writer *ew,
				  const struct tb_track *t, uint64_t ts)
{
	if (ew->nends == TB_EV_OWED_ENDS)
		return;		/* the slice stays open: the loss shows */
	ew->ends[ew->nends].t = t;
	ew->ends[ew->nends].ts = ts ? ts : tb_ev_now(ew);
	ew->nends++;
	tb__ev_set_ready(ew);
}

/* ------------------------------------------------------------------------
 * The fast path: events kept encoded.  An event of the macros - literal
 * names, only annotations with literal names as items, on the writer's
 * track (a counter on its counter track) - is, once its strings are
 * interned and its track described, the same bytes at every call but for
 * its timestamp and values: after the general path wrote one with
 * nothing new to intern, tb__ev_site_fill() keeps those bytes (struct
 * tb__ev_site, per writer, found by the name's or the track's address),
 * and tb__ev_site_write() writes the next ones from them: the timestamp, a
 * copy, the values, no planner, no lookups.  They hold for the state
 * they were encoded in (the epoch: a fresh state, a loss, a generation
 * all start a new one); anything else goes the general way: a flow, a
 * track or time item, a name by content, an END owed, a fresh state due.
 */
#define TB__EV_NOT_FAST	1	/* tb__ev_site_write(): the general path */

/* The key of a call site: its name; an END's first annotation, else its
 * track; a counter's track. */
static inline const void *tb__ev_site_key(unsigned type, const char *name,
					  const struct tb_track *t,
					  const struct tb_arg *args,
					  uint32_t nargs)
{
	if (type == TB_EV_COUNTER)
		return t;
	if (type != TB_EV_SLICE_END)
		return name;
	return nargs ? (const void *)args[0].name : (const void *)t;
}

/*
 * The kept event of @key, @type: in one of two entries (a pair, so that
 * two call sites whose keys hash alike do not evict each other at every
 * event), the first when neither has it.
 */
TB__ALWAYS struct tb__ev_site *tb__ev_site_of(struct tb_ev_writer *ew,
					      const void *key, unsigned type)
{
	uintptr_t k = (uintptr_t)key;
	struct tb__ev_site *st =
		&ew->sites[(k >> 3 ^ k >> 11 ^ type) & (TB_EV_SITES - 1)];
	struct tb__ev_site *other = &ew->sites[(st - ew->sites) ^ 1];

	return st->key != key && other->key == key &&
	       (other->shape & 0xffu) == type ? other : st;
}

/* Where to keep the event of @key, @type: its entry, else a stale one. */
static inline struct tb__ev_site *tb__ev_site_for(struct tb_ev_writer *ew,
						  const void *key,
						  unsigned type)
{
	struct tb__ev_site *st = tb__ev_site_of(ew, key, type);
	struct tb__ev_site *other = &ew->sites[(st - ew->sites) ^ 1];

	if ((st->key == key && (st->shape & 0xffu) == type) ||
	    st->epoch != ew->epoch || other->epoch == ew->epoch)
		return st;
	return other;
}

/* What a kept event must match besides its key: type, value, items. */
static inline uint32_t tb__ev_shape(unsigned type, unsigned dbl,
				    uint32_t nargs)
{
	return type | dbl << 8 | nargs << 16;
}

/*
 * After the general path wrote @ev on @slot's track, planned as @pl:
 * keeps its bytes for the fast path when the next events of its call
 * site will have them too.  That is, it came from the macros (@key, see
 * tb__ev_site_write()), every string of it is interned and none was new in
 * this packet (no interned data), it did not open the state (no CLEARED
 * flag), its track is in the table and described, and it has at most
 * TB__EV_SITE_ARGS items, all annotations named by literals.  The
 * encoders are the general path's own, so the bytes are the same.
 */
TB__EV_SLOW void tb__ev_site_fill(struct tb_ev_writer *ew,
				  const struct tb_ev_event *ev,
				  const struct tb__ev_plan *pl,
				  struct tb__ev_track *slot, const void *key)
{
	uint8_t buf[TB__EV_TMPL + TB__EV_FAST];
	const bool m = !TB__EV_DIRECT;	/* -Os: the general path's puts */
	struct tb__ev_site *st;
	struct tb__ev_out o;
	uint32_t i;

	if (!slot || slot->epoch != ew->epoch || pl->id ||
	    (pl->seq & TB_SEQ_INCREMENTAL_STATE_CLEARED) ||
	    (pl->has_cat && !pl->cat.iid) ||
	    (pl->has_name && !pl->name.iid) ||
	    ev->nargs > TB__EV_SITE_ARGS)
		return;
	for (i = 0; i < ev->nargs; i++)
		if (!tb__ev_is_annotation(ev->args[i].type) ||
		    !(ev->args[i].flags & TB_ARG_STATIC_NAME) ||
		    !pl->an[i].iid)
			return;
	st = tb__ev_site_for(ew, key, ev->type);
	o.p = o.frag = buf;		/* puts that never reach its end */
	o.end = buf + sizeof(buf);
	o.w = NULL;
	o.ret = TB_OK;
	tb__ev_head_rest_m(&o, m, ew, true, pl->seq);
	o.p = tb__pb_tag_at(o.p, TB__TP_TRACK_EVENT, TB_PB_LEN);
	st->hlen = (uint8_t)(o.p - buf);
	o.p++;				/* the TrackEvent's length */
	tb__ev_fixed_put_m(&o, m, ev, pl);
	if (ev->type == TB_EV_COUNTER)	/* the value's tag */
		o.p = (ev->flags & TB_EV_DOUBLE) ?
		      tb__pb_tag_at(o.p, TB__TE_DOUBLE_COUNTER_VALUE,
				    TB_PB_FIXED64) :
		      tb__pb_tag_at(o.p, TB__TE_COUNTER_VALUE, TB_PB_VARINT);
	st->clen = (uint8_t)(o.p - buf);
	st->te = (uint8_t)(st->clen - st->hlen - 1u);
	for (i = 0; i < ev->nargs; i++) {
		uint8_t *a = o.p;

		o.p = tb__pb_tag_at(o.p, TB__TE_DEBUG_ANNOTATIONS, TB_PB_LEN);
		o.p++;			/* the annotation's length */
		tb__ev_str_put(&o, m, &pl->an[i], TB__DA_NAME_IID,
			       TB__DA_NAME);
		o.p = tb__pb_tag_at(o.p, tb__ev_value_field(&ev->args[i]),
				    tb__ev_value_wire(&ev->args[i]));
		st->alen[i] = (uint8_t)(o.p - a);
		st->aname[i] = ev->args[i].name;
		st->atype[i] = (uint8_t)ev->args[i].type;
	}
	TB_BUG_ON(o.p > buf + TB__EV_TMPL);
	TB_MEMCPY(st->tmpl, buf, (size_t)(o.p - buf));
	st->key = key;
	st->cat = ev->cat;
	st->slot = slot;
	st->shape = tb__ev_shape(ev->type, (ev->flags & TB_EV_DOUBLE) != 0,
				 ev->nargs);
	st->epoch = ew->epoch;
}

/*
 * A kept event's annotations: @te, the TrackEvent's bytes so far, plus
 * theirs, or 0x80 and more when they are not those kept (or one does not
 * fit a byte of length); each value's bytes in @vlen.
 */
TB__EV_SLOW uint32_t tb__ev_site_args(const struct tb__ev_site *st,
				      const struct tb_arg *args,
				      uint32_t nargs, uint32_t te,
				      uint8_t *vlen)
{
	uint32_t i, n;

	for (i = 0; i < nargs; i++) {
		const struct tb_arg *a = &args[i];

		if (a->type != st->atype[i] || a->name != st->aname[i] ||
		    !(a->flags & TB_ARG_STATIC_NAME))
			return 0x80u;
		n = a->type == TB_ARG_T_DOUBLE ? 8u :
		    a->type == TB_ARG_T_STRING ?
		    (a->len < 0x80u ? 1u + a->len : 0x80u) :
		    tb_pb_varint_len(tb__ev_value_bits(a));
		vlen[i] = (uint8_t)(n < 0x80u ? n : 0x80u);
		n += st->alen[i];
		te += n > 0x81u ? 0x80u : n;
	}
	return te;
}

/* Writes a kept event's annotations at @p: kept bytes, then each value. */
TB__EV_SLOW void tb__ev_site_args_put(uint8_t *p,
				      const struct tb__ev_site *st,
				      const struct tb_arg *args,
				      uint32_t nargs, const uint8_t *vlen)
{
	const uint8_t *q = st->tmpl + st->clen;
	uint32_t i;

	for (i = 0; i < nargs; i++) {
		const struct tb_arg *a = &args[i];

		tb__copy(p, q, st->alen[i]);
		p[1] = (uint8_t)(st->alen[i] - 2u + vlen[i]);
		p += st->alen[i];
		q += st->alen[i];
		if (a->type == TB_ARG_T_DOUBLE) {
			p = tb__pb_fixed64_bits(p, tb__ev_dbits(a->v.d));
		} else if (a->type == TB_ARG_T_STRING) {
			*p = (uint8_t)a->len;
			tb__copy(p + 1, a->v.s, a->len);
			p += 1 + a->len;
		} else {
			p = tb__pb_varint_at(p, tb__ev_value_bits(a));
		}
	}
}

/*
 * Writes the event of a macro's call site from its kept bytes: @type,
 * @cat, @key (tb__ev_site_key()), @args; a counter's value in @val (an
 * INT or a DOUBLE item).  TB__EV_NOT_FAST when it has none kept, or when
 * anything calls for the general path (see above); else what the general
 * path would have returned, with the same stack, stats and state.
 */
TB__ALWAYS int tb__ev_site_write(struct tb_ev_writer *ew, unsigned type,
				 const struct tb_category *cat,
				 const void *key, const struct tb_arg *args,
				 uint32_t nargs, const struct tb_arg *val)
{
	bool dbl = val && val->type == TB_ARG_T_DOUBLE;
	struct tb_writer *w = ew->w;
	struct tb__ev_site *st;
	uint32_t te, size, tvlen;
	uint8_t vlen[TB__EV_SITE_ARGS];
	struct tb_span s;
	uint64_t ts, tv;
	uint8_t *p;
	int ret;

	/* first: the table's offset is this unit's layout (the config) */
	if (ew->config != TB__EV_CONFIG)
		return TB__EV_NOT_FAST;
	st = tb__ev_site_of(ew, key, type);
	if (st->key != key || st->shape != tb__ev_shape(type, dbl, nargs) ||
	    st->cat != cat || st->epoch != ew->ready ||
	    tb_ring_generation(w->ring) != ew->gen)
		return TB__EV_NOT_FAST;
	te = st->te;
	if (val)		/* its tag is kept: the value's bytes */
		te += dbl ? 8u : tb_pb_varint_len((uint64_t)val->v.i);
	if (nargs && (te = tb__ev_site_args(st, args, nargs, te, vlen)) >=
		     0x80u)
		return TB__EV_NOT_FAST;
	if (type == TB_EV_SLICE_END && !tb__ev_pop(st->slot)) {
		ew->stats.ends_skipped++;
		return TB_OK;		/* its BEGIN is not in the trace */
	}
	ts = tb_ev_now(ew);
	tv = tb__ev_tval(ew, ts);
	tvlen = tb_pb_varint_len(tv);
	size = 1u + tvlen + st->hlen + 1u + te;
	p = tb_writer_begin_packet(w, size);
	ret = p ? TB_OK : tb_writer_open(w, size, 0, &s);
	if (!ret) {
		struct tb__ev_out o;

		p = p ? p : s.begin;
		*p = (uint8_t)tb__pb_key(TB__TP_TIMESTAMP, TB_PB_VARINT);
#if TB__EV_DIRECT && TB__PB_WIDE
		/*
		 * a long timestamp (BOOTTIME) as one word: 8 bytes fit, as
		 * the TrackEvent's tag, length and type follow it
		 */
		TB_BUG_ON(tvlen >= 4 && size < 9);
		p = tvlen >= 4 ? tb__pb_varint_wide_at(p + 1, tv, tvlen) :
				 tb__pb_varint_at(p + 1, tv);
#else
		p = tb__pb_varint_at(p + 1, tv);
#endif
		tb__copy(p, st->tmpl, st->clen);
		p[st->hlen] = (uint8_t)te;
		o.p = p + st->clen;
		if (val)
			o.p = dbl ? tb__pb_fixed64_bits(o.p,
							tb__ev_dbits(val->v.d)) :
			      tb__pb_varint_at(o.p, (uint64_t)val->v.i);
		if (nargs)
			tb__ev_site_args_put(o.p, st, args, nargs, vlen);
		ret = tb_writer_end_packet(w, size);
	} else {
		tb_writer_record_loss(w);
	}
	if (ret) {
		tb__ev_lost(ew, ret);
		ew->stats.not_written++;
		if (type == TB_EV_SLICE_END)
			tb__ev_owe_end(ew, st->slot->t, ts);
	} else {
		ew->stats.events++;
		ew->owed = 0;
		ew->last = ts;
	}
	if (type == TB_EV_SLICE_BEGIN)
		tb__ev_push(st->slot, ret == TB_OK);
	return ret;
}

/*
 * The key of @ev's call site (on @t) if it is one of the macros' that the
 * fast path takes (tb__ev_macro()), else NULL: no track
 * item, a literal name (by address) for a slice or an instant.
 */
static inline const void *tb__ev_fill_key(const struct tb_ev_writer *ew,
					  const struct tb_ev_event *ev,
					  const struct tb_track *t)
{
	if (ev->type == TB_EV_COUNTER)
		return ev->track == t ? t : NULL;
	if (ev->track || t != ew->track ||
	    (ev->type != TB_EV_SLICE_END &&
	     !(ev->flags & TB_EV_STATIC_NAME)))
		return NULL;
	return tb__ev_site_key(ev->type, ev->name, t, ev->args, ev->nargs);
}

/*
 * Writes @ev, category unchecked, after the ENDs owed.  An END whose
 * BEGIN was not written is skipped; one that cannot be written is owed;
 * whatever happens, a BEGIN and an END move the track's slice stack.
 */
static inline int tb__ev_emit(struct tb_ev_writer *ew,
			      const struct tb_ev_event *ev)
{
	struct tb__ev_track *slot;
	struct tb__ev_plan pl;
	const struct tb_track *t;
	const void *key;
	int ret;

	if (ew->config != TB__EV_CONFIG)
		return TB_ECONFIG;
	if (!tb__ev_valid(ev))
		return TB_EINVAL;
	t = tb__ev_items(ew, ev, &pl.ts);
	/* the table only grows while an event is written: @slot stays */
	slot = tb__ev_slot_of(ew, t);
	if (ev->type == TB_EV_SLICE_END && !tb__ev_pop(slot)) {
		ew->stats.ends_skipped++;
		if (ev->nargs && tb__ev_has_flows(ev))
			tb__ev_flows_after(ew, ev, false);
		return TB_OK;		/* its BEGIN is not in the trace */
	}
	ret = ew->nends ? tb__ev_pay_ends(ew) : TB_OK;
	if (!ret)
		ret = tb__ev_write(ew, ev, t, &pl, &slot);
	key = ret ? NULL : tb__ev_fill_key(ew, ev, t);
	if (key)		/* a macro's: keep it for the next ones */
		tb__ev_site_fill(ew, ev, &pl, slot, key);
	if (ev->nargs && tb__ev_has_flows(ev))
		tb__ev_flows_after(ew, ev, ret == TB_OK);
	if (ret) {
		ew->stats.not_written++;
		if (ev->type == TB_EV_SLICE_END)
			tb__ev_owe_end(ew, t, pl.ts);
	} else {
		ew->stats.events++;
		ew->owed = 0;
	}
	if (ev->type == TB_EV_SLICE_BEGIN)
		tb__ev_push(slot ? slot : tb__ev_slot_of(ew, t), ret == TB_OK);
	return ret;
}

/* ------------------------------------------------------------------------
 * The API.
 */

/*
 * Whether the importer can place @clock's timestamps (see struct
 * tb_ev_clock): it drops every packet of a writer whose clock has no
 * path to the trace's clock, descriptors included.
 */
static inline int tb__ev_clock_check(const struct tb_ev_clock *c)
{
	if (!c)
		return TB_EV_HAVE_BOOTTIME ? TB_OK : TB_ENOCLOCK;
	if (!c->id || c->id > TB_CLOCK_USER_MAX)
		return TB_ECLOCKID;
	if (!c->now)
		return TB_ECLOCKFN;
	if (c->id == TB_CLOCK_BOOTTIME)
		return TB_OK;
	if (c->ref_id != TB_CLOCK_BOOTTIME)
		return TB_ECLOCKREF;
	return c->ref_now || TB_EV_HAVE_BOOTTIME ? TB_OK : TB_ECLOCKFN;
}

/*
 * Sets up @ew over @w (which it uses, and does not own): events go on
 * @track by default (NULL: the trace-global track), timestamped by
 * @clock (NULL: CLOCK_BOOTTIME).  @flags: TB_EV_NO_INTERN,
 * TB_EV_DEFAULTS, TB_EV_FAST_CLOCK (with a NULL @clock: BOOTTIME read
 * from the CPU's counter where it has a usable one, see "Timestamps" at
 * the top; tb_ev_fast_clock() says).  @track (and its parents) and
 * @clock are kept, not copied: they must outlive @ew.  Nothing is
 * written before the first event.  TB_EINVAL; TB_ENOCLOCK: @clock NULL where <time.h> declares no
 * CLOCK_BOOTTIME (strict C99 without _POSIX_C_SOURCE or _GNU_SOURCE,
 * freestanding); TB_ECLOCKID, TB_ECLOCKFN, TB_ECLOCKREF: a clock the
 * importer could not place (struct tb_ev_clock).
 */
static inline int tb_ev_writer_init(struct tb_ev_writer *ew,
				    struct tb_writer *w,
				    const struct tb_track *track,
				    const struct tb_ev_clock *clock,
				    unsigned flags)
{
	int ret;

	if (!ew || !w || (flags & ~(TB_EV_NO_INTERN | TB_EV_DEFAULTS |
				     TB_EV_FAST_CLOCK | TB_EV_DELTA_TIME)))
		return TB_EINVAL;
	if (!tb__ev_units_agree())
		return TB_ECONFIG;	/* a mixed program */
	ret = tb__ev_clock_check(clock);
	if (ret)
		return ret;
	TB_MEMSET(ew, 0, sizeof(*ew));
	ew->config = TB__EV_CONFIG;
	ew->w = w;
	ew->track = track;
	ew->clock = clock;
	ew->flags = (uint8_t)flags;
	ew->cid = flags & TB_EV_DEFAULTS ? 0 : tb__ev_own_clock_id(ew);
	ew->gen = tb_ring_generation(w->ring);
	ew->next_iid = 1;
	ew->fresh = 1;
	tb__ev_set_ready(ew);
#if TB__EV_HAVE_COUNTER
	if ((flags & TB_EV_FAST_CLOCK) && !clock)
		tb__ev_fast_init(&ew->fast);
#endif
	if (track) {		/* the root first, so parents come first */
		const struct tb_track *chain[TB__EV_NEST_MAX];
		int n = 0;

		for (; track && n < TB__EV_NEST_MAX; track = track->parent)
			chain[n++] = track;
		while (n--)
			tb__ev_add_track(ew, chain[n]);
		ew->own = ew->ntracks - 1;
	}
	return TB_OK;
}

/* Full control: any event type, track, items, flags. */
static inline int tb_ev_emit(struct tb_ev_writer *ew,
			     const struct tb_ev_event *ev)
{
	if (!ew || !ev)
		return TB_EINVAL;
	if (ev->cat && !tb_category_enabled(ev->cat))
		return TB_OK;
	return tb__ev_emit(ew, ev);
}

static inline void tb__ev_fill(struct tb_ev_event *ev, unsigned type,
			       const struct tb_category *cat,
			       const char *name, const struct tb_track *track,
			       const struct tb_arg *args, uint32_t nargs)
{
	ev->type = (uint8_t)type;
	ev->flags = 0;
	ev->cat = cat;
	ev->name = name;
	ev->track = track;
	ev->args = args;
	ev->nargs = nargs;
	ev->ts = 0;
	ev->value.i = 0;
}

/*
 * What the macros call (@flags TB_EV_STATIC_NAME: a literal) and the
 * functions (0: @name interned by content), the category checked.
 */
static inline int tb__ev_event(struct tb_ev_writer *ew, unsigned type,
			       unsigned flags, const struct tb_category *cat,
			       const char *name, const struct tb_arg *args,
			       uint32_t nargs)
{
	struct tb_ev_event ev;

	tb__ev_fill(&ev, type, cat, name, NULL, args, nargs);
	ev.flags = (uint8_t)flags;
	return tb__ev_emit(ew, &ev);
}

/* tb__ev_macro() when the fast path did not take the event. */
TB__EV_SLOW int tb__ev_macro_slow(struct tb_ev_writer *ew, unsigned type,
				  const struct tb_category *cat,
				  const void *obj, const struct tb_arg *args,
				  uint32_t nargs)
{
	struct tb_ev_event ev;

	if (type != TB_EV_COUNTER)
		return tb__ev_event(ew, type, TB_EV_STATIC_NAME, cat,
				    (const char *)obj, args, nargs);
	tb__ev_fill(&ev, TB_EV_COUNTER, cat, NULL,
		    (const struct tb_track *)obj, NULL, 0);
	if (args->type == TB_ARG_T_DOUBLE) {
		ev.flags = TB_EV_DOUBLE;
		ev.value.d = args->v.d;
	} else {
		ev.value.i = args->v.i;
	}
	return tb__ev_emit(ew, &ev);
}

/*
 * What the macros call, and the counter functions: an event of @type in
 * @cat, @obj its literal name (NULL for an END) or a counter's track;
 * @args its items, or a counter's value (one INT or DOUBLE item).  The
 * fast path (tb__ev_site_write()) when it has the event kept, else the
 * general one.  One function (out of line where the build optimises for
 * size) holds the fast path for every call site.
 */
TB__EV_FASTFN int tb__ev_macro(struct tb_ev_writer *ew, unsigned type,
			       const struct tb_category *cat, const void *obj,
			       const struct tb_arg *args, uint32_t nargs)
{
	const void *key = obj;
	int ret;

	if (type == TB_EV_COUNTER)
		ret = tb__ev_site_write(ew, type, cat, key, NULL, 0, args);
	else if ((key = tb__ev_site_key(type, (const char *)obj, ew->track,
					 args, nargs)) != NULL)
		ret = tb__ev_site_write(ew, type, cat, key, args, nargs, NULL);
	else
		ret = TB__EV_NOT_FAST;
	return ret != TB__EV_NOT_FAST ? ret :
	       tb__ev_macro_slow(ew, type, cat, obj, args, nargs);
}

TB__HOT int tb__ev_counter(struct tb_ev_writer *ew,
			   const struct tb_category *cat,
			   const struct tb_track *track, bool dbl, int64_t i,
			   double d)
{
	struct tb_arg v = dbl ? tb_arg_double(NULL, d) : tb_arg_int(NULL, i);

	return tb__ev_macro(ew, TB_EV_COUNTER, cat, track, &v, 1);
}

/*
 * The functions behind the macros.  Each returns TB_OK (also when @cat is
 * disabled, or an END is skipped because its BEGIN was lost), TB_EINVAL,
 * or the ring's error when a packet was lost (the next event starts a
 * fresh state).  @args may hold annotations, flows, a track, a time.
 */
static inline int tb_ev_begin(struct tb_ev_writer *ew,
			      const struct tb_category *cat, const char *name,
			      const struct tb_arg *args, uint32_t nargs)
{
	if (!ew)
		return TB_EINVAL;
	if (cat && !tb_category_enabled(cat))
		return TB_OK;
	return tb__ev_event(ew, TB_EV_SLICE_BEGIN, 0, cat, name, args,
			    nargs);
}

static inline int tb_ev_end(struct tb_ev_writer *ew,
			    const struct tb_category *cat,
			    const struct tb_arg *args, uint32_t nargs)
{
	if (!ew)
		return TB_EINVAL;
	if (cat && !tb_category_enabled(cat))
		return TB_OK;
	return tb__ev_event(ew, TB_EV_SLICE_END, 0, cat, NULL, args, nargs);
}

static inline int tb_ev_instant(struct tb_ev_writer *ew,
				const struct tb_category *cat,
				const char *name, const struct tb_arg *args,
				uint32_t nargs)
{
	if (!ew)
		return TB_EINVAL;
	if (cat && !tb_category_enabled(cat))
		return TB_OK;
	return tb__ev_event(ew, TB_EV_INSTANT, 0, cat, name, args, nargs);
}

/* A new value on counter track @track. */
static inline int tb_ev_counter(struct tb_ev_writer *ew,
				const struct tb_category *cat,
				const struct tb_track *track, int64_t v)
{
	if (!ew || !track)
		return TB_EINVAL;
	if (cat && !tb_category_enabled(cat))
		return TB_OK;
	return tb__ev_counter(ew, cat, track, false, v, 0);
}

static inline int tb_ev_counter_double(struct tb_ev_writer *ew,
				       const struct tb_category *cat,
				       const struct tb_track *track, double v)
{
	if (!ew || !track)
		return TB_EINVAL;
	if (cat && !tb_category_enabled(cat))
		return TB_OK;
	return tb__ev_counter(ew, cat, track, true, 0, v);
}

/*
 * Describes @track now (unless this state already did) and keeps it in
 * the writer's table, so that every fresh state describes it again: for
 * a track whose events come later, or from elsewhere.
 */
static inline int tb_ev_add_track(struct tb_ev_writer *ew,
				  const struct tb_track *track)
{
	struct tb__ev_track *slot;
	int ret;

	if (!ew || !track)
		return TB_EINVAL;
	if (ew->config != TB__EV_CONFIG)
		return TB_ECONFIG;
	ret = ew->nends ? tb__ev_pay_ends(ew) : TB_OK;	/* they come first */
	if (!ret)
		ret = tb__ev_check_state(ew);
	return ret ? ret : tb__ev_use_track(ew, track, &slot);
}

/* Drops @track from the writer's table (before the track goes away). */
static inline void tb_ev_forget_track(struct tb_ev_writer *ew,
				      const struct tb_track *track)
{
	uint32_t i, j;

	if (ew->config != TB__EV_CONFIG)
		return;		/* another build's writer: not ours to touch */
	for (i = j = 0; i < ew->ntracks; i++)
		if (ew->tracks[i].t != track)
			ew->tracks[j++] = ew->tracks[i];
	ew->ntracks = j;
	for (i = j = 0; i < ew->nends; i++)	/* its owed ENDs too */
		if (ew->ends[i].t != track)
			ew->ends[j++] = ew->ends[i];
	ew->nends = (uint8_t)j;
	tb__ev_set_ready(ew);
	if (ew->track == track)
		ew->track = NULL;
	for (i = 0; i < ew->ntracks; i++)
		if (ew->tracks[i].t == ew->track)
			ew->own = i;
}

/* Starts a fresh incremental state before the next event. */
static inline void tb_ev_reset(struct tb_ev_writer *ew)
{
	if (ew->config == TB__EV_CONFIG) {
		ew->fresh = 1;
		tb__ev_set_ready(ew);
	}
}

/*
 * Before the writer goes away (then tb_writer_release()): writes the
 * ENDs still owed, and if its last writes failed and nothing was written
 * since, the fresh state, so that the loss reaches the trace (the chunk
 * after a loss says so, and the trace flags the packet
 * previous_packet_dropped): else slices whose END was lost at the very
 * end stay open with nothing to explain them.  TB_OK, or the ring's
 * error: try again once it has room.
 */
static inline int tb_ev_writer_finish(struct tb_ev_writer *ew)
{
	int ret;

	if (!ew)
		return TB_EINVAL;
	if (ew->config != TB__EV_CONFIG)
		return TB_ECONFIG;
	ret = ew->nends ? tb__ev_pay_ends(ew) : TB_OK;
	if (ret)
		return ret;
	if (!ew->owed)
		return TB_OK;
	ew->fresh = 1;
	tb__ev_set_ready(ew);
	return tb__ev_check_state(ew);
}

/* ------------------------------------------------------------------------
 * Scoped slices: a BEGIN now, its END when the scope ends (C++
 * destructor, GNU C cleanup attribute), written only if the BEGIN was
 * attempted: the category was enabled and there was a writer.
 */
struct tb_ev_scope {
	struct tb_ev_writer *w;		/* NULL: nothing to end */
	const struct tb_category *cat;
	const struct tb_track *track;
};

static inline struct tb_ev_scope tb__ev_scope_init(
	const struct tb_category *cat, struct tb_ev_writer *w)
{
	struct tb_ev_scope s;

	s.w = w;
	s.cat = cat;
	s.track = NULL;
	return s;
}

static inline int tb__ev_scope_begin(struct tb_ev_scope *s, unsigned flags,
				     const char *name,
				     const struct tb_arg *args, uint32_t nargs)
{
	struct tb_ev_event ev;
	uint64_t ts;

	if (!s->w)
		return TB_OK;
	tb__ev_fill(&ev, TB_EV_SLICE_BEGIN, s->cat, name, NULL, args, nargs);
	ev.flags = (uint8_t)flags;
	s->track = tb__ev_items(s->w, &ev, &ts);	/* the END's track */
	return tb__ev_emit(s->w, &ev);
}

static inline int tb_ev_scope_begin(struct tb_ev_scope *s, const char *name,
				    const struct tb_arg *args, uint32_t nargs)
{
	return tb__ev_scope_begin(s, 0, name, args, nargs);
}

static inline void tb_ev_scope_end(struct tb_ev_scope *s)
{
	struct tb_ev_event ev;

	if (!s->w)
		return;
	tb__ev_fill(&ev, TB_EV_SLICE_END, s->cat, NULL, s->track, NULL, 0);
	tb__ev_emit(s->w, &ev);
	s->w = NULL;
}

/* ------------------------------------------------------------------------
 * The current writer of this thread, for the macros (see the top).
 */
#ifndef TB_EV_CURRENT
#define TB__EV_DEFAULT_CURRENT	1
#if defined(TB_EV_NO_TLS) || !defined(__STDC_HOSTED__) || !__STDC_HOSTED__
#define TB__EV_TLS
#elif defined(__GNUC__)
#define TB__EV_TLS	__thread
#elif defined(__cplusplus)
#define TB__EV_TLS	thread_local
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define TB__EV_TLS	_Thread_local
#else
#error "tbevent.h: no thread-local storage here: define TB_EV_CURRENT \
(an expression giving the struct tb_ev_writer *), or TB_EV_NO_TLS"
#endif
extern TB__EV_TLS struct tb_ev_writer *tb_ev_current_writer;
#if defined(__GNUC__)
/* weak: every file may define it, the linker keeps one */
TB__EV_TLS struct tb_ev_writer *tb_ev_current_writer __attribute__((weak));
#define TB_EV_DEFINE_CURRENT	/* nothing to do */
#else
#define TB_EV_DEFINE_CURRENT						\
	TB__EV_TLS struct tb_ev_writer *tb_ev_current_writer = NULL
#endif
#define TB_EV_CURRENT	tb_ev_current_writer

/* The writer the macros of this thread use; NULL: they write nothing. */
static inline void tb_ev_set_current(struct tb_ev_writer *ew)
{
	tb_ev_current_writer = ew;
}
#endif

/* ------------------------------------------------------------------------
 * The macros.  Names must be string literals (interned by address: a
 * name in a buffer goes to the functions); the items after them are
 * optional.  Nothing but the category is evaluated when it is disabled.
 */
#define TB__EV_CAT2(a, b)	a##b
#define TB__EV_CAT(a, b)	TB__EV_CAT2(a, b)
#define TB__EV_UNIQ(p)		TB__EV_CAT(p, __LINE__)
#define TB__EV_NARGS(a)	((uint32_t)(sizeof(a) / sizeof((a)[0])) - 1u)
/* The items, or NULL when there are none: then the array is not built. */
#define TB__EV_ARGS(a)	(TB__EV_NARGS(a) ? (a) : NULL)

#define TB__TRACE(ew, type, cat, name, ...)				\
	do {								\
		const struct tb_category *tb__c = (cat);		\
		if (tb_category_enabled(tb__c)) {			\
			struct tb_ev_writer *tb__w = (ew);		\
			if (tb__w) {					\
				const struct tb_arg tb__a[] = {		\
					__VA_ARGS__ };			\
				tb__ev_macro(tb__w, (type), tb__c,	\
					     (name), TB__EV_ARGS(tb__a), \
					     TB__EV_NARGS(tb__a));	\
			}						\
		}							\
	} while (0)

/* (ew, cat, "name", items...) and (ew, cat, items...) */
#define TB__TRACE_NAMED(ew, type, cat, name, ...)			\
	TB__TRACE(ew, type, cat, "" name, __VA_ARGS__)
#define TB__TRACE_ANON(ew, type, cat, ...)				\
	TB__TRACE(ew, type, cat, NULL, __VA_ARGS__)

#define TB_TRACE_BEGIN_W(ew, ...)					\
	TB__TRACE_NAMED(ew, TB_EV_SLICE_BEGIN, __VA_ARGS__, tb__arg_end())
#define TB_TRACE_END_W(ew, ...)						\
	TB__TRACE_ANON(ew, TB_EV_SLICE_END, __VA_ARGS__, tb__arg_end())
#define TB_TRACE_INSTANT_W(ew, ...)					\
	TB__TRACE_NAMED(ew, TB_EV_INSTANT, __VA_ARGS__, tb__arg_end())

#define TB__TRACE_COUNTER(ew, cat, track, dbl, i, d)			\
	do {								\
		const struct tb_category *tb__c = (cat);		\
		if (tb_category_enabled(tb__c)) {			\
			struct tb_ev_writer *tb__w = (ew);		\
			if (tb__w)					\
				tb__ev_counter(tb__w, tb__c, (track),	\
					       (dbl), (i), (d));	\
		}							\
	} while (0)
#define TB_TRACE_COUNTER_W(ew, cat, track, v)				\
	TB__TRACE_COUNTER(ew, cat, track, false, (int64_t)(v), 0.0)
#define TB_TRACE_COUNTER_DOUBLE_W(ew, cat, track, v)			\
	TB__TRACE_COUNTER(ew, cat, track, true, 0, (double)(v))

#define TB__EV_CUR	(TB_EV_CURRENT)
#define TB_TRACE_BEGIN(...)	TB_TRACE_BEGIN_W(TB__EV_CUR, __VA_ARGS__)
#define TB_TRACE_END(...)	TB_TRACE_END_W(TB__EV_CUR, __VA_ARGS__)
#define TB_TRACE_INSTANT(...)	TB_TRACE_INSTANT_W(TB__EV_CUR, __VA_ARGS__)
#define TB_TRACE_COUNTER(cat, track, v)					\
	TB_TRACE_COUNTER_W(TB__EV_CUR, cat, track, v)
#define TB_TRACE_COUNTER_DOUBLE(cat, track, v)				\
	TB_TRACE_COUNTER_DOUBLE_W(TB__EV_CUR, cat, track, v)

#ifdef __cplusplus
}
#endif

/*
 * TB_TRACE_SCOPE(cat, "name", items...): a slice from here to the end of
 * the enclosing block.  A declaration: use it at block scope, at most
 * one per line.  In C++ the END is a destructor; in GNU C a cleanup
 * attribute; other C compilers do not have it.
 */
#ifdef __cplusplus
struct tb_ev_scoped : tb_ev_scope {
	tb_ev_scoped(const struct tb_category *c, struct tb_ev_writer *ew)
	{
		w = ew;
		cat = c;
		track = NULL;
	}
	~tb_ev_scoped()
	{
		tb_ev_scope_end(this);
	}
private:
	tb_ev_scoped(const tb_ev_scoped &);
	tb_ev_scoped &operator=(const tb_ev_scoped &);
};
#define TB__EV_SCOPE_DECL(var, cat, ew)					\
	tb_ev_scoped var((cat), tb_category_enabled(cat) ? (ew) : NULL)
#define TB__EV_HAVE_SCOPE	1
#elif defined(__GNUC__)
#define TB__EV_SCOPE_DECL(var, cat, ew)					\
	struct tb_ev_scope var __attribute__((cleanup(tb_ev_scope_end))) = \
		tb__ev_scope_init((cat), tb_category_enabled(cat) ?	\
					 (ew) : NULL)
#define TB__EV_HAVE_SCOPE	1
#endif

#ifdef TB__EV_HAVE_SCOPE
#define TB__EV_SCOPE(ew, cat, name, ...)				\
	TB__EV_SCOPE_DECL(TB__EV_UNIQ(tb__scope_), cat, ew);		\
	if (TB__EV_UNIQ(tb__scope_).w) {				\
		const struct tb_arg TB__EV_UNIQ(tb__scope_args_)[] = {	\
			__VA_ARGS__ };					\
		tb__ev_scope_begin(&TB__EV_UNIQ(tb__scope_),		\
			TB_EV_STATIC_NAME, "" name,			\
			TB__EV_UNIQ(tb__scope_args_),			\
			TB__EV_NARGS(TB__EV_UNIQ(tb__scope_args_)));	\
	}
#define TB_TRACE_SCOPE_W(ew, ...)					\
	TB__EV_SCOPE(ew, __VA_ARGS__, tb__arg_end())
#define TB_TRACE_SCOPE(...)	TB_TRACE_SCOPE_W(TB__EV_CUR, __VA_ARGS__)
#endif

#endif /* TBEVENT_H */
