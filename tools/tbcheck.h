/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Copyright (c) 2026, tbring contributors.  BSD-2-Clause: see COPYING, or
 * https://opensource.org/license/bsd-2-clause for the text.
 *
 * tbcheck.h - a Perfetto trace checked against the rules of Perfetto's
 * importer: every packet or event that trace processor (and so the UI)
 * would drop, skip, misname or misplace, counted by rule, with the first
 * offending packet of each.
 *
 * Its field numbers are written down apart from tbevent.h's on purpose:
 * the checker is an independent model of Perfetto's importer, so a number
 * the event layer gets wrong is not wrong here as well.  The wire format
 * (varints, keys) is tbpb.h's, through tbtracefmt.h.
 *
 * How the importer reads a trace, and so how the checker does (Perfetto's
 * src/trace_processor/; each rule below cites the file and function it
 * follows):
 *
 *  1. Tokenization, in FILE ORDER.  ProtoTraceReader::ParsePacket()
 *     (importers/proto/proto_trace_reader.cc) takes each packet in turn:
 *     its loss flag, its clear, its TracePacketDefaults, its interned
 *     data, a ClockSnapshot (and then nothing more of that packet), its
 *     TraceStats, the skip of a packet that needs a state its sequence
 *     does not have, its timestamp's clock
 *     (TimestampTokenizeAndPushToSorter()).  TrackEventTokenizer
 *     (track_event_tokenizer.cc) then reserves a TrackDescriptor's uuid,
 *     takes a ThreadDescriptor for the sequence, and gives a TrackEvent
 *     its timestamp and, for a counter, its value: resolved there and
 *     then, against the descriptors reserved SO FAR
 *     (TrackEventTracker::ConvertToAbsoluteCounterValue(),
 *     track_event_tracker.cc).  What passes goes to the sorter.
 *  2. Parsing, in TIMESTAMP ORDER.  The sorter (sorter/trace_sorter.h,
 *     TimestampedEvent::operator<) orders by timestamp, ties in the
 *     order tokenized; a trace without the Perfetto service's flush and
 *     read-buffer markers (every tbring trace) is sorted whole at its
 *     end, so every descriptor is reserved before any event is parsed.
 *     TrackEventEventImporter::Import() (track_event_event_importer.h)
 *     names the event, resolves its track and the track's parents,
 *     matches slices (SliceTracker, importers/common/slice_tracker.cc)
 *     and flows (FlowTracker, importers/common/flow_tracker.cc), and
 *     reads its debug annotations (util/debug_annotation_parser.cc).
 *
 * The checker walks the image three times in file order (clock
 * snapshots; track descriptors; stage 1), keeps each TrackEvent stage 1
 * passes (a 56-byte record), sorts them as the sorter does, and runs
 * stage 2 over them.  Which rule runs where:
 *
 *   stage 1, file order                 stage 2, sorted
 *   no-trusted-*, seq-id-*              event-no-type
 *   needs-incremental-state             iid-event-name, iid-category
 *   interned-while-invalid,             track-unknown,
 *     interned-entry-bad                  track-parent-unknown,
 *   snapshot-with-payload                 track-parent-loop
 *   clock-unknown                       end-without-begin,
 *   descriptor-bad, descriptor-conflict   end-names-outer-slice,
 *   tid-reused, pid-reused (1)            slice-not-ended
 *   event-malformed,                    flow-end-without-begin,
 *     event-no-timestamp                  flow-not-ended
 *   counter-bad, counter-before-        iid-annotation-name,
 *     descriptor, counter-incremental-    iid-source-location,
 *     invalid                             annotation-no-name
 *   defaults-before-clear
 *   time-backwards (2)
 *
 *   (1) The importer resolves a descriptor's track when it parses the
 *       descriptor (TrackEventParser::ParseTrackDescriptor()), sorted;
 *       the count is the same in either order, so the checker counts
 *       them as it meets the descriptors.
 *   (2) Not an importer stat: the importer sorts, and so does stage 2.
 *       A sequence whose clock goes back is a producer's bug (tbevent.h
 *       never writes one), reported where it shows, in file order.
 *
 * The state it keeps, from the same sources:
 *
 *  - Incremental state is kept per trusted_packet_sequence_id.  It starts
 *    invalid (PacketSequenceStateBuilder, packet_sequence_state_builder.h:
 *    packet_loss_ starts true), becomes valid (and empty: no interned
 *    data, no defaults) at each packet with SEQ_INCREMENTAL_STATE_CLEARED
 *    (or the deprecated incremental_state_cleared), and turns invalid
 *    again at a packet with previous_packet_dropped that does not also
 *    clear it.  A packet with SEQ_NEEDS_INCREMENTAL_STATE on a sequence
 *    whose state is invalid is skipped whole; interned_data arriving while
 *    it is invalid is ignored (entries interned before a loss stay
 *    usable).
 *  - The state lives in generation objects (packet_sequence_state_
 *    generation.cc): a new one at each loss (interned data copied), each
 *    clear (empty) and each TracePacketDefaults (interned data copied).
 *    An event keeps the object it was tokenized with and looks its iids
 *    up at stage 2, so an iid resolves to an entry interned on the same
 *    sequence since the last clear, before the event's object was
 *    replaced: in an earlier packet, or in a LATER one of the same object
 *    (InternMessage() adds to the object in place).  The first value of
 *    an iid in an object is the one used.
 *  - Track descriptors are global to the trace.  An event's track is its
 *    track_uuid, else its sequence's TrackEventDefaults.track_uuid, else
 *    uuid 0: the sequence's thread (from a thread descriptor) when the
 *    event set no track_uuid, or the default global track.  A nonzero
 *    uuid no descriptor reserved gets a nameless root track
 *    (ResolveDescriptorTrackImpl()); its parent chain must reach uuid 0
 *    within 100 uuids, through reserved uuids only, without a loop
 *    (IsTrackHierarchyValid()), else the event is dropped.
 *  - Slices nest per track, in sorted order: an END closes the innermost
 *    open slice its name and category match (an END without either: the
 *    innermost), one it matches under others stays on the stack, ended,
 *    until an event after its end truncates and pops what is above it;
 *    an END that matches none is ignored; slices open at the end never
 *    end.
 *  - Flows: ids are global to the trace, matched in sorted order, on the
 *    slices an event begins, ends or is (an instant; an END that ended
 *    nothing carries none).  flow_ids of an id not active begins a flow,
 *    of an active one continues it (an arrow); terminating_flow_ids of an
 *    active id draws the last arrow and ends it, of one not active is
 *    dropped silently (a violation).  A flow begun that nothing later
 *    continues or ends draws no arrow (a violation).  An id on two
 *    sequences is joined, which is how a cross-thread flow is written and
 *    how two writers' colliding ids look: counted (stats.flows_shared,
 *    which tbtrace stat prints), not a violation.
 *
 * Loss: a violation that follows from lost packets - an unresolved iid, a
 * skipped or ignored packet, a track with no descriptor (or a parent with
 * none), a counter value before its descriptor or on a lost running
 * total, a clock with no snapshot - is "explained" when its sequence
 * carried previous_packet_dropped since its last incremental-state clear;
 * an END without BEGIN (or one that ends an outer slice) when a loss flag
 * on its sequence, or a packet skipped for want of state, came at or
 * before the END in the file (what was lost may have held any number of
 * BEGINs, so a loss anywhere before explains every END that finds the
 * stack empty later), and so is a flow end whose flow was never begun; a
 * slice never ended, or a flow begun that draws nothing, when a loss flag
 * on its sequence fell after the BEGIN, or when the trace says data after
 * its end was lost with no packet left to carry a flag: its TraceStats
 * packet (trace_stats) counts chunks a buffer discarded, bytes it never
 * completed, patches that failed, ABI violations, chunks refused before
 * any buffer or invalid packets; or the service recorded (tbtrace.h's
 * ring record: an instant on a service sequence, 2 to 65535, that no
 * {producer, writer} gets) that, per writer: the sequence's producer
 * died (every writer of it died with it); its writer held a chunk at the
 * end (named in tb.held_by: what it wrote there after its last whole
 * packet is not in the trace); the producer's reader lost chunks
 * (tb.holes, tb.malformed: they name no writer, so any writer's tail may
 * have been in them); or the producer had writes refused, or held chunks
 * the record does not name, when the sequence is the producer's only
 * writer in the trace (a ring counts the writes it refused, not whose:
 * with several writers a refusal explains none of them, and a writer
 * that stopped mid-slice is a violation; a writer's own refused writes
 * show as the loss flag of its next packet); or the caller set
 * c->tail_lost, knowing so from elsewhere.  Explained
 * violations are counted apart; tb_check_clean() is true when nothing
 * unexplained is left.
 *
 * Using it
 *   struct tb_check c;
 *   tb_check_init(&c, NULL, NULL, 0);	   (allocator hook, budget)
 *   c.on_violation = fn; c.ctx = ctx;	   (optional: each violation)
 *   ret = tb_check_trace(&c, image, len); (TB_OK, TB_EFRAMING, ...)
 *   tb_check_clean(&c), c.rule[TB_CK_*], c.stats, c.seqs[], c.tracks[]
 *   tb_check_destroy(&c);		   (the results stay readable)
 *
 * Not modelled (never reported; where that can hide a difference from
 * the importer, the reason says so):
 *  - legacy event phases (placed, not matched into slices), v1 flows and
 *    flows on legacy events: tbring writes none;
 *  - the window sort of a trace whose TraceConfig asks for write_into_file
 *    with a flush period (there a descriptor far after its events can
 *    come too late): tbring's service writes no TraceConfig and no
 *    flush markers;
 *  - slice nesting depth limits (SliceTracker's maximum depth), and a
 *    stack walk deeper than TB__CK_STACK_WALK slices for an ended slice
 *    below them: bounded so a hostile trace cannot make the check
 *    quadratic;
 *  - clocks related to the trace clock only through a third clock, and
 *    unit_multiplier_ns or incremental clocks: sorted by their raw
 *    timestamps (tbevent.h's clocks are BOOTTIME or snapshot directly
 *    against it); legacy delta timestamps sort at the sequence's last
 *    time;
 *  - a ThreadDescriptor after events of its own generation object (the
 *    importer gives them its thread too, the checker from that packet
 *    on: tbevent.h describes its thread before its events);
 *  - a TrackDescriptor in a packet that also carries a TrackEvent (the
 *    importer tokenizes only the event): tbevent.h never writes one;
 *  - incremental counters fed from two sequences (the importer keeps a
 *    running total per sequence), and extra counter uuids given only in
 *    TrackEventDefaults.
 *
 * Threading: one thread per struct tb_check.  Input is untrusted: a
 * trace image that is not one (or a budget that runs out) stops the check
 * with an error, never a crash, and every table lives within the memory
 * budget, allocated through one hook (tbbase.h's tb_alloc_fn).  The
 * image is never written.
 *
 * Tooling, not library: tests, tools and a demo's self-check use it, on a
 * host; a product never vendors it.  It reads a trace through
 * tbtracefmt.h alone (no central buffer, no ring) and needs the C
 * library's realloc(), free() and qsort() unless given an allocator (the
 * sort is qsort() in any case).
 */
#ifndef TBCHECK_H
#define TBCHECK_H

#include <stdlib.h>

#include "../tbtracefmt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * The rules.
 */
enum tb_check_rule {
	TB_CK_NOT_A_TRACE,	/* not Trace.packet records: import fails */
	TB_CK_TRUNCATED,	/* the image ends inside its last packet */
	TB_CK_IMPORT_ERROR,	/* a packet that stops the import */
	TB_CK_NO_UID,		/* packet without trusted_uid (3) */
	TB_CK_NO_SEQ_ID,	/* ... trusted_packet_sequence_id (10) */
	TB_CK_NO_PID,		/* ... without trusted_pid (79) */
	TB_CK_SEQ_RESERVED,	/* sequence id 0 or 1 (the service's) */
	TB_CK_SEQ_COLLISION,	/* one sequence id, another pid or uid */
	TB_CK_NEEDS_STATE,	/* SEQ_NEEDS_INCREMENTAL_STATE, none valid */
	TB_CK_INTERNED_IGNORED,	/* interned_data while the state is invalid */
	TB_CK_INTERNED_BAD,	/* entry without iid, or redefined */
	TB_CK_IID_NAME,		/* event name iid resolves to nothing */
	TB_CK_IID_CATEGORY,	/* category iid ... */
	TB_CK_IID_ANNOTATION,	/* debug annotation name iid ... */
	TB_CK_IID_SOURCE,	/* source location iid ... */
	TB_CK_DESCRIPTOR_BAD,	/* descriptor without uuid, pid or tid */
	TB_CK_DESCRIPTOR_CONFLICT, /* uuid redefined as another track */
	TB_CK_TRACK_UNKNOWN,	/* event on a uuid no descriptor names */
	TB_CK_TRACK_LOOP,	/* parent chain loops or is too deep */
	TB_CK_EVENT_MALFORMED,	/* TrackEvent bytes are not protobuf */
	TB_CK_EVENT_NO_TIME,	/* TrackEvent without a usable timestamp */
	TB_CK_EVENT_NO_TYPE,	/* TrackEvent without a known type */
	TB_CK_COUNTER_BAD,	/* counter value without a counter track */
	TB_CK_CLOCK_UNKNOWN,	/* clock with no path to the trace clock */
	TB_CK_TIME_BACKWARDS,	/* event before its sequence's previous one */
	TB_CK_END_WITHOUT_BEGIN, /* END on a track with no open slice */
	TB_CK_SLICE_NOT_ENDED,	/* BEGIN never ended */
	TB_CK_FLOW_END_WITHOUT_BEGIN, /* terminating flow id never begun */
	TB_CK_FLOW_NOT_ENDED,	/* flow begun, never continued or ended */
	TB_CK_COUNTER_EARLY,	/* counter value before its descriptor */
	TB_CK_COUNTER_INCREMENTAL, /* delta counter on an invalid state */
	TB_CK_DEFAULTS_LOST,	/* defaults the sequence's clear dropped */
	TB_CK_TRACK_PARENT_UNKNOWN, /* a parent no descriptor reserves */
	TB_CK_TID_REUSED,	/* a thread's pid and tid, another uuid */
	TB_CK_PID_REUSED,	/* a process's pid, another uuid */
	TB_CK_END_OUTER,	/* a named END closes an outer slice */
	TB_CK_SNAPSHOT_PAYLOAD,	/* ClockSnapshot packet carrying more */
	TB_CK_ANNOTATION_NO_NAME, /* debug annotation without a name */
	/* scheduling: ftrace sched events (see "Scheduling" below) */
	TB_CK_FTRACE_BAD,	/* bundle without cpu, event without time,
				   pid or type: dropped */
	TB_CK_SCHED_MISMATCH,	/* sched_switch prev_pid is not who ran */
	TB_CK_SCHED_IID,	/* blocked reason's caller iid unresolved */
	TB_CK_LIMIT,		/* the checker's memory budget ran out */
	TB_CK_MAX
};

#define TB_CHECK_NONE		UINT64_MAX	/* no packet */
#define TB_CHECK_BUDGET		(256u << 20)	/* default memory budget */
/* ... or this many bytes per byte of the trace, whichever is more: the
 * tables keep about two per byte of a trace of small events */
#define TB_CHECK_BUDGET_PER_BYTE 4u
#define TB_CHECK_LOSS_BITS	9		/* DataLossReason bits */
/* uuids a track's parent chain may walk, itself first, before it reaches
 * uuid 0 (TrackEventTracker::IsTrackHierarchyValid()'s kMaxAncestors):
 * at most 98 parent links above a track */
#define TB_CHECK_MAX_ANCESTORS	100

/* How often a rule was broken, and where first. */
struct tb_check_count {
	uint64_t count;			/* unexplained */
	uint64_t explained;		/* explained by a loss flag */
	uint64_t first;			/* packet index, or TB_CHECK_NONE */
	uint64_t first_offset;		/* its byte offset in the image */
	uint32_t first_seq;		/* its sequence id (0: none) */
	uint64_t first_detail;		/* uuid, iid, clock: per rule */
	uint64_t first_explained;	/* the first explained one */
	uint32_t first_explained_seq;
};

/* One violation, as the optional callback sees it. */
struct tb_check_violation {
	enum tb_check_rule rule;
	bool explained;
	uint64_t packet;		/* index of the Trace.packet record */
	uint64_t offset;		/* byte offset of the record */
	uint32_t seq_id;
	uint64_t detail;		/* uuid, iid, clock id, ... or 0 */
};

typedef void (*tb_check_fn)(void *ctx, const struct tb_check_violation *v);

/* What a sequence (one trusted_packet_sequence_id) held. */
struct tb_check_seq {
	uint32_t seq_id;		/* 0: packets without one */
	unsigned has;			/* TB_TRACE_HAS_UID, _PID (first) */
	uint32_t uid;
	int32_t pid;
	uint64_t packets;
	uint64_t events;		/* TrackEvents placed on a track */
	uint64_t first_packet, last_packet;
	uint64_t clears;		/* packets that cleared the state */
	uint64_t skipped;		/* packets skipped: state needed */
	uint64_t needs;			/* packets that needed it */
	uint64_t lossy_packets;		/* previous_packet_dropped != 0 */
	uint32_t loss_bits;		/* every bit seen */
	uint64_t first_loss, last_loss;	/* packet indices, or NONE */
	/* the importer's state of the sequence: private */
	uint64_t first_skip;		/* packet index, or NONE */
	uint32_t gen;			/* incremental-state generation */
	uint32_t obj;			/* the importer's state object */
	uint8_t valid;			/* incremental state valid */
	uint8_t lossy;			/* loss flag since the last clear */
	uint8_t has_default_track;
	uint8_t thread_valid;		/* a thread descriptor was seen */
	uint8_t delta_valid;		/* legacy delta timestamps usable */
	uint8_t has_last_ts;
	uint8_t defaults_lost;		/* TB__CK_LOST_*: lost to a clear */
	uint8_t held;			/* held a chunk at the end */
	uint32_t default_clock;
	uint64_t default_track;
	int32_t thread_pid, thread_tid;
	uint32_t last_clock;
	uint64_t last_ts;
	uint64_t last_key;		/* its last event's sort key */
};

enum tb_check_track_kind {
	TB_CHECK_TRACK_UNDEFINED,	/* referenced, no valid descriptor */
	TB_CHECK_TRACK_THREAD,
	TB_CHECK_TRACK_PROCESS,
	TB_CHECK_TRACK_COUNTER,
	TB_CHECK_TRACK_CHILD,		/* named, or nested under a parent */
	TB_CHECK_TRACK_GLOBAL,		/* uuid 0: the implicit global track */
	TB_CHECK_TRACK_SEQ_THREAD,	/* no uuid: the sequence's thread */
};

/* A track: one uuid, or an implicit one. */
struct tb_check_track {
	uint64_t uuid;
	uint64_t parent;
	enum tb_check_track_kind kind;
	int32_t pid, tid;
	uint64_t descriptor;		/* packet of its first descriptor */
	uint64_t events;		/* placed on it */
	uint64_t slices;		/* BEGINs on it */
	uint64_t last_event;		/* packet index, or NONE */
	uint32_t open;			/* open slices (pool index + 1) */
	uint32_t depth;			/* slices on its stack */
	uint8_t resolved;		/* 0: not yet, 1: ok */
	uint8_t reserved;		/* by a descriptor, or an event */
	uint8_t incremental;		/* a counter of delta values */
	uint8_t ended;			/* slices ended under open ones */
};

struct tb_check_stats {
	uint64_t packets;
	uint64_t bytes;
	uint64_t track_events;		/* TrackEvents seen */
	uint64_t descriptors;		/* TrackDescriptors seen */
	uint64_t interned;		/* interned entries taken */
	uint64_t clock_snapshots;
	uint64_t slice_begins, slice_ends, instants, counters;
	uint64_t global_track_events;	/* on uuid 0 */
	uint64_t lossy_packets;
	uint64_t loss_bit_packets[TB_CHECK_LOSS_BITS];
	uint64_t loss_bit_first[TB_CHECK_LOSS_BITS];	/* packet, or NONE */
	uint64_t open_slices;		/* left open at the end */
	/* flows (flow_ids / terminating_flow_ids, ids global) */
	uint64_t flows_begun;		/* flow_ids of an id not active */
	uint64_t flow_steps;		/* flow_ids of an active id */
	uint64_t flows_ended;		/* terminating ids, active */
	uint64_t flows_shared;		/* ids whose events are on two or
					   more sequences (joined: meant
					   for cross-thread flows, else a
					   collision of ids) */
	uint64_t flows_open;		/* active at the end */
	/* TraceStats packets (the last one counts) */
	uint64_t trace_stats;		/* packets that carried one */
	uint64_t ts_buffers;		/* its BufferStats */
	uint64_t ts_chunks_discarded;	/* by buffers in discard mode */
	uint64_t ts_chunks_overwritten;
	uint64_t ts_patches_failed;
	uint64_t ts_abi_violations;
	uint64_t ts_refused_chunks;	/* TraceStats.chunks_discarded */
	uint64_t ts_invalid_packets;
	uint64_t ts_unread_bytes;	/* in buffers, never completed */
	/* the service's records of producers' ends (tbtrace.h) */
	uint64_t producer_ends;
	uint64_t producer_deaths;
	uint64_t producers_lossy;	/* ended with held chunks or refused
					   writes: their tails are lost */
};

/* Private: an open-addressing index of (k1, k2) to three values. */
struct tb__ck_ent {
	uint64_t k1;
	uint64_t k2;
	uint32_t used;
	uint32_t v1;
	uint32_t v2;
	uint32_t v3;
};

struct tb__ck_index {
	struct tb__ck_ent *e;
	uint32_t cap;			/* a power of two, or 0 */
	uint32_t n;
};

/* Private: a slice on a track's stack, in a pool of linked stacks. */
struct tb__ck_open {
	uint64_t packet;
	uint64_t ts, end;		/* its begin; its end, once ended */
	uint32_t seq;			/* index into seqs */
	uint32_t next;			/* pool index + 1 below it, or 0 */
	uint32_t name, cat;		/* hashes to match ENDs (0: none) */
	uint8_t pending;		/* not ended yet */
};

/* Private: a flow id's state, as the importer keeps it. */
struct tb__ck_flow {
	uint64_t id;
	uint64_t packet;		/* where it was begun */
	uint32_t seq;			/* seqs index of its begin */
	uint32_t last_seq;		/* of its last event */
	uint32_t steps;
	uint8_t active;
	uint8_t shared;
};

/* Private: a TrackEvent stage 1 passed on to stage 2. */
struct tb__ck_rec {
	uint64_t key;			/* its time on the trace clock */
	uint64_t packet, offset;	/* where it is in the image */
	uint64_t uuid;			/* track_uuid, or the defaults' */
	uint32_t seq;			/* index into seqs */
	uint32_t gen, obj;		/* its state: clears, and object */
	uint32_t flags;			/* TB__CK_REC_* */
	int32_t pid, tid;		/* the sequence's thread, if any */
};

#define TB__CK_REC_HAS_TRACK	1u	/* the event set track_uuid */
#define TB__CK_REC_LOSSY	2u	/* a loss since the last clear */
#define TB__CK_REC_THREAD	4u	/* the sequence has a thread */

/* Private: one clock's reading against the trace clock's, in a snapshot. */
struct tb__ck_pair {
	uint64_t id;
	uint64_t from, to;		/* its reading; the trace clock's */
	uint32_t scope;
	uint32_t pad;
};

/* Private: a producer's end, as the service recorded it. */
#define TB__CK_END_SEEN		1u
#define TB__CK_END_DIED		2u
#define TB__CK_END_LOSSY	4u	/* held chunks or refused writes */
#define TB__CK_END_ONE		8u	/* a writer of it in the trace */
#define TB__CK_END_MANY		16u	/* ... and another */
#define TB__CK_END_HOLES	32u	/* chunks lost naming no writer */
#define TB__CK_HELD_BY_MAX	64	/* holders a record may name */

/* Private: what a sequence's clear dropped of its defaults. */
#define TB__CK_LOST_TRACK	1u
#define TB__CK_LOST_CLOCK	2u

/*
 * Private: a clock of the union-find over clock snapshots, and its
 * domain as the importer's ClockTracker keeps it (clock_synchronizer.h:
 * ClockDomain): the unit and incremental encoding of its first snapshot,
 * and for an incremental one the time its deltas add to.
 */
struct tb__ck_clock {
	uint64_t id;
	uint32_t scope;			/* seqs index + 1 for 64..127, or 0 */
	uint32_t parent;		/* index into clocks */
	uint64_t unit;			/* ns per unit; 0: no snapshot yet */
	uint64_t last;			/* incremental: the latest time, ns */
	uint8_t incremental;
};

/*
 * Scheduling: what the ftrace sched events (sched_switch, sched_waking,
 * sched_blocked_reason in FtraceEventBundle packets, as Linux's ftrace and
 * tbfreertos.h write them) make of each thread, as trace_processor's
 * sched and thread_state tables would have it: a thread's CPU time is
 * the sum of its sched slices that ended (a CPU's last slice is open, dur
 * -1, and counts nowhere).
 */
struct tb_check_thread {
	int32_t tid;
	uint8_t state;			/* private: TB__CK_TS_* */
	uint8_t running;		/* on a CPU at the end */
	uint64_t since;			/* ... since then (its open slice) */
	uint64_t cpu_ns;		/* in sched slices that ended */
	uint64_t slices;		/* sched slices it ran in */
	uint64_t blocked;		/* switched out not runnable */
	uint64_t reasons;		/* of those, a blocked_function */
	uint64_t wakes, irq_wakes;	/* woken from blocked; by an irq */
	uint64_t spurious;		/* wakings while not blocked */
};

struct tb__ck_sched_ev {		/* private: replayed in time order */
	uint64_t ts;
	uint64_t packet;
	uint64_t state;
	uint32_t seq;			/* seqs index */
	uint32_t cpu;
	int32_t a, b;			/* pids: prev/next, wakee, blocked */
	uint8_t kind;
	uint8_t flag;			/* irq waking, resolved reason */
};

struct tb__ck_cpu {			/* private: the CPU's pending slice */
	uint64_t start;
	int32_t pid;
	uint8_t on;
};

struct tb_check_sched {
	uint64_t bundles, events;	/* FtraceEventBundles, events kept */
	uint64_t switches, wakings, blocked_reasons;
	uint64_t cpu_ns;		/* in every slice that ended */
	uint64_t first_ts, last_ts;	/* of the sched events */
	struct tb_check_thread *threads;	/* nthreads, by first seen */
	uint32_t nthreads;
	/* private */
	uint32_t threads_cap, nevs, evs_cap, ncpus;
	struct tb__ck_sched_ev *evs;
	struct tb__ck_cpu *cpus;
	struct tb__ck_index thread_ix, iid_ix;
};

/*
 * What Perfetto's UI shows as data loss: the stats of severity data_loss
 * that the importer sets from a trace's TraceStats packets (see "The
 * UI's data-loss notice" below), by buffer index.
 */
#define TB_CHECK_UI_BUFS	64u	/* buffer indices kept apart; the
					   last one takes the rest */
enum tb_check_ui_stat {
	TB_CK_UI_SEQUENCE_PACKET_LOSS,	/* traced_buf_sequence_packet_loss */
	TB_CK_UI_INCREMENTAL_SEQUENCES_DROPPED,
	TB_CK_UI_TRACE_WRITER_PACKET_LOSS,
	TB_CK_UI_ABI_VIOLATIONS,
	TB_CK_UI_PATCHES_FAILED,
	TB_CK_UI_MAX
};

struct tb_check_ui {
	uint64_t buf[TB_CK_UI_MAX][TB_CHECK_UI_BUFS];	/* by index */
	uint64_t flushes_failed;	/* traced_flushes_failed */
	uint64_t final_flush_failed;	/* traced_final_flush_failed */
};

struct tb_check {
	/* configuration, from tb_check_init() */
	tb_alloc_fn alloc;
	void *alloc_ctx;
	size_t max_bytes;
	bool scale_budget;		/* 0 given: grows with the trace */
	tb_check_fn on_violation;	/* may be set after init; NULL: none */
	void *ctx;
	bool tail_lost;			/* may be set after init: see below */
	/* results */
	int error;			/* 0, TB_EFRAMING, _ELIMIT, _ENOMEM */
	uint64_t error_packet;		/* where the check stopped */
	struct tb_check_count rule[TB_CK_MAX];
	struct tb_check_stats stats;
	struct tb_check_ui ui;		/* tb_check_ui_loss() sums it */
	struct tb_check_seq *seqs;	/* nseqs, in order of appearance */
	uint32_t nseqs;
	struct tb_check_track *tracks;	/* ntracks, in order of appearance */
	uint32_t ntracks;
	/* private */
	size_t used;
	int pass;			/* 0, 1, 2: file order; 3: sorted */
	uint32_t trace_clock;
	uint32_t seqs_cap, tracks_cap, clocks_cap, nclocks;
	uint32_t open_cap, open_n, open_free;
	struct tb__ck_clock *clocks;
	struct tb__ck_open *open;
	struct tb__ck_index seq_ix, track_ix, iid_ix, clock_ix;
	struct tb__ck_flow *flows;
	uint32_t flows_cap, nflows;
	struct tb__ck_index flow_ix;
	struct tb__ck_index thread_ix;	/* (pid, tid), pid: first uuid */
	struct tb__ck_rec *evs;		/* stage 2's events */
	uint32_t evs_cap, nevs;
	struct tb__ck_pair *pairs;	/* clocks against the trace clock */
	uint32_t pairs_cap, npairs;
	const uint8_t *img;		/* the image, while it is checked */
	size_t len;
	uint8_t *ends;			/* by producer: TB__CK_END_* */
	bool ts_tail_lost;		/* TraceStats says the tail is lost */
	struct tb_check_sched sched;	/* scheduling (see above) */
};

/* ------------------------------------------------------------------------
 * Perfetto's field numbers (protos/perfetto/trace/...).
 */
enum {
	TB__CK_TP_FTRACE = 1,		/* TracePacket */
	TB__CK_TP_CLOCK_SNAPSHOT = 6,
	TB__CK_TP_TIMESTAMP = 8,
	TB__CK_TP_TRACK_EVENT = 11,
	TB__CK_TP_INTERNED = 12,
	TB__CK_TP_FLAGS = 13,
	TB__CK_TP_CLEARED_OLD = 41,
	TB__CK_TP_THREAD_DESC = 44,
	TB__CK_TP_CLOCK_ID = 58,
	TB__CK_TP_DEFAULTS = 59,
	TB__CK_TP_TRACK_DESC = 60,
	TB__CK_SEQ_CLEARED = 1,		/* TracePacket.SequenceFlags */
	TB__CK_SEQ_NEEDS = 2,
	TB__CK_TD_UUID = 1,		/* TrackDescriptor */
	TB__CK_TD_PROCESS = 3,
	TB__CK_TD_THREAD = 4,
	TB__CK_TD_PARENT = 5,
	TB__CK_TD_COUNTER = 8,
	TB__CK_CD_INCREMENTAL = 5,	/* CounterDescriptor.is_incremental */
	TB__CK_PID = 1,			/* Thread/ProcessDescriptor */
	TB__CK_TID = 2,
	TB__CK_DEF_TRACK_EVENT = 11,	/* TracePacketDefaults */
	TB__CK_DEF_TRACK = 11,		/* TrackEventDefaults */
	TB__CK_CS_CLOCKS = 1,		/* ClockSnapshot */
	TB__CK_CS_PRIMARY = 2,
	TB__CK_CLK_ID = 1,		/* ClockSnapshot.Clock */
	TB__CK_CLK_TS = 2,
	TB__CK_CLK_INCREMENTAL = 3,
	TB__CK_CLK_UNIT = 4,
	TB__CK_TE_TS_DELTA = 1,		/* TrackEvent */
	TB__CK_TE_CATEGORY_IIDS = 3,
	TB__CK_TE_ANNOTATIONS = 4,
	TB__CK_TE_LEGACY = 6,
	TB__CK_TE_TYPE = 9,
	TB__CK_TE_NAME_IID = 10,
	TB__CK_TE_TRACK = 11,
	TB__CK_TE_XC_VALUES = 12,
	TB__CK_TE_TS_ABS = 16,
	TB__CK_TE_CATEGORIES = 22,
	TB__CK_TE_COUNTER = 30,
	TB__CK_TE_XC_UUIDS = 31,
	TB__CK_TE_SOURCE_IID = 34,
	TB__CK_TE_DCOUNTER = 44,
	TB__CK_TE_XD_UUIDS = 45,
	TB__CK_TE_XD_VALUES = 46,
	TB__CK_TE_FLOW_IDS = 47,
	TB__CK_TE_TERMINATING_FLOW_IDS = 48,
	TB__CK_TE_NAME = 23,
	TB__CK_DA_UINT = 3,
	TB__CK_DA_STRING = 6,
	TB__CK_DA_NAME = 10,
	TB__CK_TP_TRACE_STATS = 35,	/* TracePacket */
	TB__CK_TS_BUFFER_STATS = 1,	/* TraceStats */
	TB__CK_TS_CHUNKS_DISCARDED = 8,
	TB__CK_TS_INVALID_PACKETS = 10,
	TB__CK_BS_BYTES_WRITTEN = 1,	/* TraceStats.BufferStats */
	TB__CK_BS_BYTES_OVERWRITTEN = 13,
	TB__CK_BS_BYTES_READ = 14,
	TB__CK_BS_CHUNKS_OVERWRITTEN = 3,
	TB__CK_BS_PATCHES_FAILED = 6,
	TB__CK_BS_ABI_VIOLATIONS = 9,
	TB__CK_BS_CHUNKS_DISCARDED = 18,
	TB__CK_LE_NAME_IID = 1,		/* TrackEvent.LegacyEvent */
	TB__CK_LE_PHASE = 2,
	TB__CK_DA_NAME_IID = 1,		/* DebugAnnotation */
	TB__CK_DA_DICT = 11,
	TB__CK_ID_CATEGORIES = 1,	/* InternedData */
	TB__CK_ID_NAMES = 2,
	TB__CK_ID_ANNOTATION_NAMES = 3,
	TB__CK_ID_SOURCES = 4,
	TB__CK_IE_NAME = 2,		/* EventName, EventCategory, ... */
	TB__CK_TYPE_BEGIN = 1,		/* TrackEvent.Type */
	TB__CK_TYPE_END = 2,
	TB__CK_TYPE_INSTANT = 3,
	TB__CK_TYPE_COUNTER = 4,
	TB__CK_BOOTTIME = 6,		/* BuiltinClock */
	TB__CK_MONOTONIC = 3,
};

#define TB__CK_DA_DEPTH		8	/* dict_entries followed this deep */
#define TB__CK_MAX_EXTRA	8	/* TrackEventData::kMaxNumExtraCounters
					   (importers/common/parser_types.h) */
#define TB__CK_STACK_WALK	1024	/* slices a stack walk looks at */

/* ------------------------------------------------------------------------
 * Rule names and explanations.
 */
static inline const char *tb_check_rule_name(int rule)
{
	static const char *const name[TB_CK_MAX] = {
		"not-a-trace", "truncated", "import-error", "no-trusted-uid",
		"no-trusted-seq-id", "no-trusted-pid", "seq-id-reserved",
		"seq-id-collision", "needs-incremental-state",
		"interned-while-invalid", "interned-entry-bad",
		"iid-event-name", "iid-category", "iid-annotation-name",
		"iid-source-location", "descriptor-bad",
		"descriptor-conflict", "track-unknown", "track-parent-loop",
		"event-malformed", "event-no-timestamp", "event-no-type",
		"counter-bad", "clock-unknown", "time-backwards",
		"end-without-begin", "slice-not-ended",
		"flow-end-without-begin", "flow-not-ended",
		"counter-before-descriptor", "counter-incremental-invalid",
		"defaults-before-clear", "track-parent-unknown", "tid-reused",
		"pid-reused", "end-names-outer-slice", "snapshot-with-payload",
		"annotation-no-name",
		"ftrace-event-bad", "sched-switch-mismatch",
		"sched-blocked-iid", "checker-limit",
	};

	return rule >= 0 && rule < TB_CK_MAX ? name[rule] : "unknown";
}

/* The scheduling rules' texts (see "Scheduling" below), and the last. */
static inline const char *tb__ck_late_text(int rule)
{
	switch (rule) {
	case TB_CK_FTRACE_BAD:
		return "ftrace bundle without a cpu, or an ftrace event "
		       "without a timestamp, a pid or an event: dropped";
	case TB_CK_SCHED_MISMATCH:
		return "sched_switch whose prev_pid is not the task its CPU "
		       "last switched to: the running slice never ends, its "
		       "CPU time is lost";
	case TB_CK_SCHED_IID:
		return "sched_blocked_reason whose caller iid no "
		       "kernel_symbols entry of its sequence resolves: no "
		       "blocked_function";
	case TB_CK_LIMIT:
		return "the checker ran out of its memory budget: check "
		       "incomplete";
	}
	return "unknown rule";
}

static inline const char *tb_check_rule_text(int rule)
{
	static const char *const text[TB_CK_FTRACE_BAD] = {
		"the image is not a sequence of Trace.packet records: "
		"the import fails",
		"the image ends inside a Trace.packet record: that packet "
		"is lost",
		"SEQ_NEEDS_INCREMENTAL_STATE or a sequence-scoped clock on a "
		"packet without a sequence id: the import stops with an error",
		"packet without trusted_uid",
		"packet without trusted_packet_sequence_id: its track event, "
		"interned data and flags are ignored",
		"packet without trusted_pid",
		"trusted_packet_sequence_id 0 (invalid) or 1 (the service's "
		"own sequence)",
		"one sequence id claimed by another pid or uid: their "
		"incremental state is mixed",
		"packet needs incremental state its sequence does not have "
		"(no clear since the start or since a loss): skipped",
		"interned_data while the sequence's incremental state is "
		"invalid: ignored",
		"interned entry without an iid, or an iid given a second "
		"value in one generation (the first is kept)",
		"event name_iid interned nowhere on its sequence since the "
		"last clear: the event has no name",
		"category iid interned nowhere on its sequence since the "
		"last clear",
		"debug annotation name_iid interned nowhere on its sequence "
		"since the last clear: the annotation is dropped",
		"source_location_iid interned nowhere on its sequence since "
		"the last clear",
		"track descriptor without a uuid, or a thread without "
		"pid and tid, or a process without pid: ignored",
		"track descriptor redefining a uuid as another track: ignored",
		"event on a track uuid no descriptor names: kept, on a "
		"nameless track at the root (a counter value: dropped)",
		"event on a track whose parent chain loops or walks more than "
		"the importer's 100 uuids: dropped",
		"TrackEvent that is not valid protobuf",
		"TrackEvent without a usable timestamp: dropped",
		"TrackEvent without a type (or an unknown one): dropped",
		"counter value without a counter track (or without a value, "
		"or more than 8 extra values): dropped",
		"timestamp on a clock no clock snapshot relates to the trace "
		"clock: dropped",
		"event timestamp before the previous event's on its "
		"sequence: slices reorder on import",
		"slice END on a track with no open slice: ignored",
		"slice BEGIN that never ends: shown unfinished",
		"terminating_flow_ids of a flow no event began: the importer "
		"drops it, no arrow is drawn",
		"flow_ids of a flow that no later event continues or ends: "
		"no arrow is drawn",
		"counter value before its track's descriptor in the file: "
		"the importer resolves it as it reads and drops it (an error)",
		"incremental counter value before a clear or after a loss: "
		"its running total misses what was lost: wrong values",
		"event relying on TracePacketDefaults its sequence gave "
		"before a clear, which dropped them: it lands on the default "
		"track (or the sequence's thread), its time on the trace clock",
		"event on a track whose parent chain names a uuid no "
		"descriptor reserves: dropped (track_hierarchy_missing_uuid)",
		"thread track of another uuid with a pid and tid seen: "
		"taken for a reused tid, shown as a second thread",
		"process track of another uuid with a pid seen: taken for a "
		"reused pid, shown as a second process",
		"slice END whose name or category matches an outer open "
		"slice: that one ends, the inner ones are cut at the next "
		"event (misplaced_end_event, data loss)",
		"packet with a ClockSnapshot and a TrackEvent, "
		"TrackDescriptor, ThreadDescriptor or TraceStats: only the "
		"snapshot is read",
		"debug annotation (or dict entry) with neither name nor "
		"name_iid: it and the rest of its annotation are dropped",
	};

	if (rule >= TB_CK_FTRACE_BAD)
		return tb__ck_late_text(rule);
	return rule >= 0 ? text[rule] : "unknown rule";
}

/* Whether a loss flag can explain the rule (see the header comment). */
static inline bool tb_check_explainable(int rule)
{
	switch (rule) {
	case TB_CK_NEEDS_STATE: case TB_CK_INTERNED_IGNORED:
	case TB_CK_IID_NAME: case TB_CK_IID_CATEGORY:
	case TB_CK_IID_ANNOTATION: case TB_CK_IID_SOURCE:
	case TB_CK_TRACK_UNKNOWN: case TB_CK_CLOCK_UNKNOWN:
	case TB_CK_END_WITHOUT_BEGIN: case TB_CK_SLICE_NOT_ENDED:
	case TB_CK_FLOW_END_WITHOUT_BEGIN: case TB_CK_FLOW_NOT_ENDED:
	case TB_CK_COUNTER_EARLY: case TB_CK_COUNTER_INCREMENTAL:
	case TB_CK_TRACK_PARENT_UNKNOWN: case TB_CK_END_OUTER:
	case TB_CK_SCHED_MISMATCH: case TB_CK_SCHED_IID:
		return true;
	}
	return false;
}

/* ------------------------------------------------------------------------
 * Memory: everything through the hook, within the budget.
 */
static inline void *tb__ck_mem(struct tb_check *c, void *p, size_t old,
			       size_t n)
{
	void *q;

	if (!p && !n)
		return NULL;	/* freeing nothing */
	if (n > old && n - old > c->max_bytes - c->used) {
		if (!c->error)
			c->error = TB_ELIMIT;
		return NULL;
	}
	q = c->alloc(c->alloc_ctx, p, old, n);
	if (!q && n) {
		if (!c->error)
			c->error = TB_ENOMEM;
		return NULL;
	}
	c->used = c->used - old + n;
	return q;
}

/* Whether @n elements of @size bytes fit in a size_t. */
static inline bool tb__ck_fits(uint32_t n, size_t size)
{
	return n <= SIZE_MAX / size;
}

/* Grows the array *@arr of *@cap elements of @size to hold @need. */
static inline bool tb__ck_grow(struct tb_check *c, void **arr, uint32_t *cap,
			       size_t size, uint32_t need)
{
	uint32_t ncap = *cap ? *cap : 16;
	void *p;

	if (need <= *cap)
		return true;
	while (ncap < need) {
		if (ncap > UINT32_MAX / 2)
			return false;
		ncap *= 2;
	}
	if (!tb__ck_fits(ncap, size))
		return false;
	p = tb__ck_mem(c, *arr, (size_t)*cap * size, (size_t)ncap * size);
	if (!p)
		return false;
	*arr = p;
	*cap = ncap;
	return true;
}

static inline uint32_t tb__ck_hash(uint64_t k1, uint64_t k2)
{
	uint64_t x = k1 ^ (k2 * 0x9e3779b97f4a7c15u) ^ (k2 >> 32);

	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9u;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebu;
	x ^= x >> 31;
	return (uint32_t)x;
}

static inline struct tb__ck_ent *tb__ck_slot(struct tb__ck_ent *e,
					     uint32_t cap, uint64_t k1,
					     uint64_t k2)
{
	uint32_t i = tb__ck_hash(k1, k2) & (cap - 1);

	while (e[i].used && (e[i].k1 != k1 || e[i].k2 != k2))
		i = (i + 1) & (cap - 1);
	return &e[i];
}

static inline struct tb__ck_ent *tb__ck_find(const struct tb__ck_index *ix,
					     uint64_t k1, uint64_t k2)
{
	struct tb__ck_ent *e;

	if (!ix->cap)
		return NULL;
	e = tb__ck_slot(ix->e, ix->cap, k1, k2);
	return e->used ? e : NULL;
}

/* The entry of (@k1, @k2), made (values 0, *@made set) if new; NULL when
 * the index cannot grow. */
static inline struct tb__ck_ent *tb__ck_get(struct tb_check *c,
					    struct tb__ck_index *ix,
					    uint64_t k1, uint64_t k2,
					    bool *made)
{
	struct tb__ck_ent *e = tb__ck_find(ix, k1, k2), *ne;
	uint32_t cap, i;

	*made = false;
	if (e)
		return e;
	if ((ix->n + 1) * 2 > ix->cap) {
		cap = ix->cap ? ix->cap * 2 : 64;
		if (cap > (UINT32_MAX >> 2) || !tb__ck_fits(cap, sizeof(*ne)))
			return NULL;
		ne = (struct tb__ck_ent *)tb__ck_mem(c, NULL, 0,
						     (size_t)cap * sizeof(*ne));
		if (!ne)
			return NULL;
		TB_MEMSET(ne, 0, (size_t)cap * sizeof(*ne));
		for (i = 0; i < ix->cap; i++)
			if (ix->e[i].used)
				*tb__ck_slot(ne, cap, ix->e[i].k1,
					     ix->e[i].k2) = ix->e[i];
		tb__ck_mem(c, ix->e, (size_t)ix->cap * sizeof(*ne), 0);
		ix->e = ne;
		ix->cap = cap;
	}
	e = tb__ck_slot(ix->e, ix->cap, k1, k2);
	e->k1 = k1;
	e->k2 = k2;
	e->used = 1;
	e->v1 = e->v2 = e->v3 = 0;
	ix->n++;
	*made = true;
	return e;
}

/*
 * Takes back the entry tb__ck_get() just made (its record could not be
 * stored): no entry was made after it, so no probe chain runs past it.
 */
static inline void tb__ck_unmake(struct tb__ck_index *ix,
				 struct tb__ck_ent *e)
{
	e->used = 0;
	ix->n--;
}

static inline void tb__ck_index_free(struct tb_check *c,
				     struct tb__ck_index *ix)
{
	tb__ck_mem(c, ix->e, (size_t)ix->cap * sizeof(*ix->e), 0);
	ix->e = NULL;
	ix->cap = ix->n = 0;
}

/* ------------------------------------------------------------------------
 * Set-up.
 */

/* The allocator used when none is given: realloc() and free(). */
static inline void *tb__ck_default_alloc(void *ctx, void *ptr,
					 size_t old_size, size_t new_size)
{
	(void)ctx;
	(void)old_size;
	if (!new_size) {
		free(ptr);
		return NULL;
	}
	return realloc(ptr, new_size);
}

/*
 * Sets up a checker: tables through @alloc (NULL: the C library's) within
 * @max_bytes (0: TB_CHECK_BUDGET, or TB_CHECK_BUDGET_PER_BYTE per byte of
 * the trace tb_check_trace() is given when that is more).  Set c->on_violation and c->ctx after
 * this to see every violation.
 */
static inline int tb_check_init(struct tb_check *c, tb_alloc_fn alloc,
				void *alloc_ctx, size_t max_bytes)
{
	unsigned i;

	if (!c)
		return TB_EINVAL;
	TB_MEMSET(c, 0, sizeof(*c));
	c->alloc = alloc ? alloc : tb__ck_default_alloc;
	c->alloc_ctx = alloc_ctx;
	c->max_bytes = max_bytes ? max_bytes : TB_CHECK_BUDGET;
	c->scale_budget = !max_bytes;
	c->error_packet = TB_CHECK_NONE;
	for (i = 0; i < TB_CK_MAX; i++) {
		c->rule[i].first = TB_CHECK_NONE;
		c->rule[i].first_offset = TB_CHECK_NONE;
		c->rule[i].first_explained = TB_CHECK_NONE;
	}
	for (i = 0; i < TB_CHECK_LOSS_BITS; i++)
		c->stats.loss_bit_first[i] = TB_CHECK_NONE;
	return TB_OK;
}

static inline void tb__ck_sched_free(struct tb_check *c);

/* Frees every table; the counts and stats stay readable. */
static inline void tb_check_destroy(struct tb_check *c)
{
	tb__ck_mem(c, c->seqs, (size_t)c->seqs_cap * sizeof(*c->seqs), 0);
	tb__ck_mem(c, c->tracks, (size_t)c->tracks_cap * sizeof(*c->tracks),
		   0);
	tb__ck_mem(c, c->clocks, (size_t)c->clocks_cap * sizeof(*c->clocks),
		   0);
	tb__ck_mem(c, c->open, (size_t)c->open_cap * sizeof(*c->open), 0);
	tb__ck_index_free(c, &c->seq_ix);
	tb__ck_index_free(c, &c->track_ix);
	tb__ck_index_free(c, &c->iid_ix);
	tb__ck_index_free(c, &c->clock_ix);
	tb__ck_index_free(c, &c->flow_ix);
	tb__ck_index_free(c, &c->thread_ix);
	tb__ck_mem(c, c->flows, (size_t)c->flows_cap * sizeof(*c->flows), 0);
	tb__ck_mem(c, c->evs, (size_t)c->evs_cap * sizeof(*c->evs), 0);
	tb__ck_mem(c, c->pairs, (size_t)c->pairs_cap * sizeof(*c->pairs), 0);
	tb__ck_mem(c, c->ends, c->ends ? 65536 : 0, 0);
	tb__ck_sched_free(c);
	c->flows = NULL;
	c->evs = NULL;
	c->pairs = NULL;
	c->ends = NULL;
	c->flows_cap = c->nflows = 0;
	c->evs_cap = c->nevs = c->pairs_cap = c->npairs = 0;
	c->seqs = NULL;
	c->tracks = NULL;
	c->clocks = NULL;
	c->open = NULL;
	c->seqs_cap = c->tracks_cap = c->clocks_cap = c->open_cap = 0;
	c->nseqs = c->ntracks = c->nclocks = 0;
}

/* True when the check ran to the end and found nothing unexplained. */
static inline bool tb_check_clean(const struct tb_check *c)
{
	unsigned i;

	if (c->error)
		return false;
	for (i = 0; i < TB_CK_MAX; i++)
		if (c->rule[i].count)
			return false;
	return true;
}

/* Unexplained and explained violations, all rules. */
static inline uint64_t tb_check_total(const struct tb_check *c,
				      bool explained)
{
	uint64_t n = 0;
	unsigned i;

	for (i = 0; i < TB_CK_MAX; i++)
		n += explained ? c->rule[i].explained : c->rule[i].count;
	return n;
}

/* ------------------------------------------------------------------------
 * Reporting.
 */
struct tb__ck_at {			/* the packet being checked */
	uint64_t packet;
	uint64_t offset;
	uint32_t seq_id;
};

static inline void tb__ck_report(struct tb_check *c,
				 const struct tb__ck_at *at,
				 enum tb_check_rule rule, bool explained,
				 uint64_t detail)
{
	struct tb_check_count *k = &c->rule[rule];
	struct tb_check_violation v;

	if (c->pass < 2)
		return;
	if (explained) {
		if (!k->explained++) {
			k->first_explained = at->packet;
			k->first_explained_seq = at->seq_id;
		}
	} else if (!k->count++) {
		k->first = at->packet;
		k->first_offset = at->offset;
		k->first_seq = at->seq_id;
		k->first_detail = detail;
	}
	if (!c->on_violation)
		return;
	v.rule = rule;
	v.explained = explained;
	v.packet = at->packet;
	v.offset = at->offset;
	v.seq_id = at->seq_id;
	v.detail = detail;
	c->on_violation(c->ctx, &v);
}

/* ------------------------------------------------------------------------
 * Protobuf helpers over untrusted bytes.
 */

/* Iterates the values of a repeated varint field, packed or not. */
struct tb__ck_rep {
	struct tb_pb_reader msg;
	struct tb_pb_reader packed;
	uint32_t field;
	bool in_packed;
};

static inline void tb__ck_rep_init(struct tb__ck_rep *it, const uint8_t *p,
				   size_t n, uint32_t field)
{
	tb_pb_reader_init(&it->msg, p, n);
	tb_pb_reader_init(&it->packed, p, 0);	/* empty till a packed run */
	it->field = field;
	it->in_packed = false;
}

/* 1 and *@v, 0 at the end, -1 when malformed. */
static inline int tb__ck_rep_next(struct tb__ck_rep *it, uint64_t *v)
{
	struct tb_pb_field f;
	unsigned n;
	int ret;

	for (;;) {
		if (it->in_packed) {
			size_t left = (size_t)(it->packed.end -
					       it->packed.p);

			if (left) {
				n = tb_pb_varint_get(it->packed.p, left, v);
				if (!n)
					return -1;
				it->packed.p += n;
				return 1;
			}
			it->in_packed = false;
		}
		ret = tb_pb_next(&it->msg, &f);
		if (ret <= 0)
			return ret;
		if (f.number != it->field)
			continue;
		if (f.type == TB_PB_VARINT) {
			*v = f.value;
			return 1;
		}
		if (f.type == TB_PB_LEN) {
			tb_pb_reader_init(&it->packed, f.data, f.size);
			it->in_packed = true;
		}
	}
}

/* Elements of a repeated field: varints (packed or not) or fixed64s. */
static inline uint32_t tb__ck_rep_count(const uint8_t *p, size_t n,
					uint32_t field, bool fixed64)
{
	struct tb_pb_reader r;
	struct tb_pb_field f;
	struct tb__ck_rep it;
	uint32_t k = 0;
	uint64_t v;

	if (!fixed64) {
		tb__ck_rep_init(&it, p, n, field);
		while (tb__ck_rep_next(&it, &v) > 0)
			k++;
		return k;
	}
	tb_pb_reader_init(&r, p, n);
	while (tb_pb_next(&r, &f) > 0) {
		if (f.number != field)
			continue;
		if (f.type == TB_PB_FIXED64)
			k++;
		else if (f.type == TB_PB_LEN)
			k += (uint32_t)(f.size / 8);
	}
	return k;
}

/* A varint field's last value (0 if none): true when it was there. */
static inline bool tb__ck_uint(const uint8_t *p, size_t n, uint32_t field,
			       uint64_t *v)
{
	struct tb_pb_reader r;
	struct tb_pb_field f;
	bool has = false;

	*v = 0;
	tb_pb_reader_init(&r, p, n);
	while (tb_pb_next(&r, &f) > 0)
		if (f.number == field && f.type == TB_PB_VARINT) {
			*v = f.value;
			has = true;
		}
	return has;
}

/* A message field's last value: true when it was there. */
static inline bool tb__ck_msg(const uint8_t *p, size_t n, uint32_t field,
			      const uint8_t **data, size_t *size)
{
	struct tb_pb_reader r;
	struct tb_pb_field f;
	bool has = false;

	tb_pb_reader_init(&r, p, n);
	while (tb_pb_next(&r, &f) > 0)
		if (f.number == field && f.type == TB_PB_LEN) {
			*data = f.data;
			*size = f.size;
			has = true;
		}
	return has;
}

/* Whether @p, @n is a well-formed sequence of fields. */
static inline bool tb__ck_wellformed(const uint8_t *p, size_t n)
{
	struct tb_pb_reader r;
	struct tb_pb_field f;
	int ret;

	tb_pb_reader_init(&r, p, n);
	while ((ret = tb_pb_next(&r, &f)) > 0)
		;
	return ret == 0;
}

static inline uint32_t tb__ck_fnv(const uint8_t *p, size_t n)
{
	uint32_t h = 2166136261u;

	while (n--)
		h = (h ^ *p++) * 16777619u;
	return h;
}

/* ------------------------------------------------------------------------
 * Sequences, tracks, clocks.
 */
static inline void tb__ck_seq_reset(struct tb_check_seq *s, uint32_t id)
{
	TB_MEMSET(s, 0, sizeof(*s));
	s->seq_id = id;
	s->first_packet = s->last_packet = TB_CHECK_NONE;
	s->first_loss = s->last_loss = TB_CHECK_NONE;
	s->first_skip = TB_CHECK_NONE;
}

/* The record of sequence @id (0: no id), made if new; NULL: budget. */
static inline struct tb_check_seq *tb__ck_seq(struct tb_check *c,
					      uint32_t id)
{
	struct tb__ck_ent *e;
	bool made;

	e = tb__ck_get(c, &c->seq_ix, id, 0, &made);
	if (!e)
		return NULL;
	if (!made)
		return &c->seqs[e->v1];
	if (!tb__ck_grow(c, (void **)&c->seqs, &c->seqs_cap,
			 sizeof(*c->seqs), c->nseqs + 1)) {
		tb__ck_unmake(&c->seq_ix, e);
		return NULL;
	}
	e->v1 = c->nseqs;
	tb__ck_seq_reset(&c->seqs[c->nseqs], id);
	return &c->seqs[c->nseqs++];
}

/* The track of @uuid (@synthetic: an implicit one), made if new. */
static inline struct tb_check_track *tb__ck_track(struct tb_check *c,
						  uint64_t uuid,
						  uint32_t synthetic)
{
	struct tb_check_track *t;
	struct tb__ck_ent *e;
	bool made;

	e = tb__ck_get(c, &c->track_ix, uuid, synthetic, &made);
	if (!e)
		return NULL;
	if (!made)
		return &c->tracks[e->v1];
	if (!tb__ck_grow(c, (void **)&c->tracks, &c->tracks_cap,
			 sizeof(*c->tracks), c->ntracks + 1)) {
		tb__ck_unmake(&c->track_ix, e);
		return NULL;
	}
	e->v1 = c->ntracks;
	t = &c->tracks[c->ntracks++];
	TB_MEMSET(t, 0, sizeof(*t));
	t->uuid = uuid;
	t->descriptor = TB_CHECK_NONE;
	t->last_event = TB_CHECK_NONE;
	return t;
}

static inline struct tb_check_track *tb__ck_find_track(struct tb_check *c,
						       uint64_t uuid)
{
	struct tb__ck_ent *e = tb__ck_find(&c->track_ix, uuid, 0);

	return e ? &c->tracks[e->v1] : NULL;
}

/* Clock @id's scope: sequence-scoped ids (64..127) are per sequence. */
static inline uint32_t tb__ck_clock_scope(const struct tb_check *c,
					  const struct tb_check_seq *s,
					  uint64_t id)
{
	return id >= 64 && id < 128 ? (uint32_t)(s - c->seqs) + 1 : 0;
}

/* The union-find node of a clock, made if @make; -1 if none. */
static inline int64_t tb__ck_clock(struct tb_check *c, uint64_t id,
				   uint32_t scope, bool make)
{
	struct tb__ck_ent *e;
	bool made;

	if (!make) {
		e = tb__ck_find(&c->clock_ix, id, scope);
		return e ? (int64_t)e->v1 : -1;
	}
	e = tb__ck_get(c, &c->clock_ix, id, scope, &made);
	if (!e)
		return -1;
	if (!made)
		return e->v1;
	if (!tb__ck_grow(c, (void **)&c->clocks, &c->clocks_cap,
			 sizeof(*c->clocks), c->nclocks + 1)) {
		tb__ck_unmake(&c->clock_ix, e);
		return -1;
	}
	e->v1 = c->nclocks;
	TB_MEMSET(&c->clocks[c->nclocks], 0, sizeof(c->clocks[0]));
	c->clocks[c->nclocks].id = id;
	c->clocks[c->nclocks].scope = scope;
	c->clocks[c->nclocks].parent = c->nclocks;
	return c->nclocks++;
}

static inline uint32_t tb__ck_root(struct tb_check *c, uint32_t i)
{
	while (c->clocks[i].parent != i) {
		c->clocks[i].parent = c->clocks[c->clocks[i].parent].parent;
		i = c->clocks[i].parent;
	}
	return i;
}

/*
 * Whether clock @id on sequence @s converts to the trace clock: some
 * chain of clock snapshots relates the two (the importer searches the
 * same graph: ClockTracker, importers/common/clock_tracker.cc), wherever
 * the snapshots are in the file (a packet it cannot convert yet waits
 * for the end of the file: ProtoTraceReader::
 * ResolveTimestampToTraceTime()).
 */
static inline bool tb__ck_clock_ok(struct tb_check *c,
				   const struct tb_check_seq *s, uint64_t id)
{
	int64_t a, b;

	if (!id || id == c->trace_clock)
		return true;
	a = tb__ck_clock(c, id, tb__ck_clock_scope(c, s, id), false);
	b = tb__ck_clock(c, c->trace_clock, 0, false);
	return a >= 0 && b >= 0 &&
	       tb__ck_root(c, (uint32_t)a) == tb__ck_root(c, (uint32_t)b);
}

/*
 * A clock domain's unit and encoding, from its first snapshot (the
 * importer refuses a later one that says otherwise: those stay).
 */
static inline void tb__ck_domain(struct tb__ck_clock *k, const uint8_t *p,
				 size_t n)
{
	uint64_t v;

	if (k->unit)
		return;
	k->unit = tb__ck_uint(p, n, TB__CK_CLK_UNIT, &v) && v ? v : 1;
	k->incremental = tb__ck_uint(p, n, TB__CK_CLK_INCREMENTAL, &v) &&
			 v != 0;
}

/*
 * In the pass that places events: a snapshot sets each clock's latest
 * time (ClockSynchronizer::AddSnapshot), where an incremental clock's
 * deltas start from.
 */
static inline void tb__ck_snapshot_times(struct tb_check *c,
					 const struct tb_check_seq *s,
					 const uint8_t *p, size_t n)
{
	struct tb_pb_reader r;
	struct tb_pb_field f;
	uint64_t id, ts;
	int64_t node;

	tb_pb_reader_init(&r, p, n);
	while (tb_pb_next(&r, &f) > 0) {
		if (f.number != TB__CK_CS_CLOCKS || f.type != TB_PB_LEN ||
		    !tb__ck_uint(f.data, f.size, TB__CK_CLK_ID, &id))
			continue;
		node = tb__ck_clock(c, id, tb__ck_clock_scope(c, s, id),
				    false);
		if (node >= 0 &&
		    tb__ck_uint(f.data, f.size, TB__CK_CLK_TS, &ts))
			c->clocks[node].last = ts * c->clocks[node].unit;
	}
}

/* A reading of clock @id (a snapshot's) in that clock's nanoseconds. */
static inline uint64_t tb__ck_to_ns_abs(struct tb_check *c,
					const struct tb_check_seq *s,
					uint64_t id, uint64_t ts)
{
	int64_t node = tb__ck_clock(c, id, tb__ck_clock_scope(c, s, id),
				    false);

	return node >= 0 && c->clocks[node].unit ?
	       ts * c->clocks[node].unit : ts;
}

/*
 * A packet's timestamp on clock @id, in that clock's nanoseconds
 * (ClockDomain::ToNs): times its unit, and for an incremental clock a
 * delta (a signed one) added to the clock's latest time, which it moves.
 */
static inline uint64_t tb__ck_to_ns(struct tb_check *c,
				    const struct tb_check_seq *s,
				    uint32_t id, uint64_t ts)
{
	int64_t node = id ? tb__ck_clock(c, id, tb__ck_clock_scope(c, s, id),
					 false) : -1;
	struct tb__ck_clock *k;

	if (node < 0)
		return ts;
	k = &c->clocks[node];
	if (!k->incremental)
		return ts * (k->unit ? k->unit : 1);
	k->last += ts * k->unit;	/* modulo 2^64: the importer's int64 */
	return k->last;
}

/*
 * Pass 0: one ClockSnapshot joins every clock it names
 * (ProtoTraceReader::ParseClockSnapshot(), proto_trace_reader.cc).
 */
static inline void tb__ck_snapshot(struct tb_check *c,
				   const struct tb_check_seq *s, bool has_seq,
				   const uint8_t *p, size_t n)
{
	struct tb_pb_reader r;
	struct tb_pb_field f;
	int64_t first = -1, node;
	uint64_t id;

	tb_pb_reader_init(&r, p, n);
	while (tb_pb_next(&r, &f) > 0) {
		if (f.number == TB__CK_CS_PRIMARY && f.type == TB_PB_VARINT) {
			c->trace_clock = (uint32_t)f.value;
			continue;
		}
		if (f.number != TB__CK_CS_CLOCKS || f.type != TB_PB_LEN)
			continue;
		if (!tb__ck_uint(f.data, f.size, TB__CK_CLK_ID, &id))
			id = 0;
		if (id >= 64 && id < 128 && !has_seq)
			continue;	/* the importer refuses it */
		node = tb__ck_clock(c, id, tb__ck_clock_scope(c, s, id),
				    true);
		if (node < 0)
			return;
		tb__ck_domain(&c->clocks[node], f.data, f.size);
		if (first < 0)
			first = node;
		else
			c->clocks[tb__ck_root(c, (uint32_t)node)].parent =
				tb__ck_root(c, (uint32_t)first);
	}
}

/* Orders readings by clock, then by the clock's own reading. */
static inline int tb__ck_pair_cmp3(const struct tb__ck_pair *p, uint64_t id,
				   uint32_t scope, uint64_t from)
{
	if (p->id != id)
		return p->id < id ? -1 : 1;
	if (p->scope != scope)
		return p->scope < scope ? -1 : 1;
	if (p->from != from)
		return p->from < from ? -1 : 1;
	return 0;
}

static inline int tb__ck_pair_cmp(const void *a, const void *b)
{
	const struct tb__ck_pair *y = (const struct tb__ck_pair *)b;

	return tb__ck_pair_cmp3((const struct tb__ck_pair *)a, y->id,
				y->scope, y->from);
}

/*
 * Pass 1: the readings of one ClockSnapshot against the trace clock's,
 * kept to place timestamps of other clocks in the sort.
 */
static inline void tb__ck_pairs(struct tb_check *c,
				const struct tb_check_seq *s, bool has_seq,
				const uint8_t *p, size_t n)
{
	struct tb_pb_reader r;
	struct tb_pb_field f;
	struct tb__ck_pair *q;
	uint64_t id, ts, to = 0;
	bool has_to = false;

	tb_pb_reader_init(&r, p, n);
	while (tb_pb_next(&r, &f) > 0)
		if (f.number == TB__CK_CS_CLOCKS && f.type == TB_PB_LEN &&
		    tb__ck_uint(f.data, f.size, TB__CK_CLK_ID, &id) &&
		    id == c->trace_clock)
			has_to = tb__ck_uint(f.data, f.size, TB__CK_CLK_TS,
					     &to) || has_to;
	tb_pb_reader_init(&r, p, n);
	while (has_to && tb_pb_next(&r, &f) > 0) {
		if (f.number != TB__CK_CS_CLOCKS || f.type != TB_PB_LEN ||
		    !tb__ck_uint(f.data, f.size, TB__CK_CLK_ID, &id) ||
		    id == c->trace_clock || (id >= 64 && id < 128 && !has_seq))
			continue;
		tb__ck_uint(f.data, f.size, TB__CK_CLK_TS, &ts);
		if (!tb__ck_grow(c, (void **)&c->pairs, &c->pairs_cap,
				 sizeof(*c->pairs), c->npairs + 1))
			return;
		q = &c->pairs[c->npairs++];
		q->id = id;
		q->scope = tb__ck_clock_scope(c, s, id);
		q->from = tb__ck_to_ns_abs(c, s, id, ts);
		q->to = to;
		q->pad = 0;
	}
}

/*
 * @ts of clock @clock on the trace clock, for the sort: through the
 * snapshot whose reading of the clock is the latest at or before @ts,
 * else the first (ClockTracker::ToTraceTime(), clock_tracker.cc), when a
 * snapshot relates the two directly; else @ts as it is.
 */
static inline uint64_t tb__ck_to_trace(const struct tb_check *c,
				       const struct tb_check_seq *s,
				       uint64_t clock, uint64_t ts)
{
	uint32_t scope, lo = 0, hi = c->npairs, mid;
	const struct tb__ck_pair *q = NULL;

	if (!clock || clock == c->trace_clock)
		return ts;
	scope = tb__ck_clock_scope(c, s, clock);
	while (lo < hi) {	/* the first reading after (clock, ts) */
		mid = lo + (hi - lo) / 2;
		if (tb__ck_pair_cmp3(&c->pairs[mid], clock, scope, ts) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && c->pairs[lo - 1].id == clock &&
	    c->pairs[lo - 1].scope == scope)
		q = &c->pairs[lo - 1];
	else if (lo < c->npairs && c->pairs[lo].id == clock &&
		 c->pairs[lo].scope == scope)
		q = &c->pairs[lo];
	return q ? ts - q->from + q->to : ts;
}

/* ------------------------------------------------------------------------
 * Track descriptors.
 */
struct tb__ck_desc {
	bool ok, incremental;
	enum tb_check_track_kind kind;
	uint64_t uuid, parent;
	int32_t pid, tid;
};

static inline void tb__ck_desc_parse(const uint8_t *p, size_t n,
				     struct tb__ck_desc *d)
{
	const uint8_t *sub;
	size_t sn;
	uint64_t v;
	bool has_pid, has_tid;

	TB_MEMSET(d, 0, sizeof(*d));
	if (!tb__ck_wellformed(p, n) || !tb__ck_uint(p, n, TB__CK_TD_UUID,
						     &d->uuid))
		return;
	if (!tb__ck_uint(p, n, TB__CK_TD_PARENT, &d->parent))
		d->parent = 0;
	if (tb__ck_msg(p, n, TB__CK_TD_THREAD, &sub, &sn)) {
		d->kind = TB_CHECK_TRACK_THREAD;
		has_pid = tb__ck_uint(sub, sn, TB__CK_PID, &v);
		d->pid = (int32_t)v;
		has_tid = tb__ck_uint(sub, sn, TB__CK_TID, &v);
		d->tid = (int32_t)v;
		d->ok = has_pid && has_tid;
	} else if (tb__ck_msg(p, n, TB__CK_TD_PROCESS, &sub, &sn)) {
		d->kind = TB_CHECK_TRACK_PROCESS;
		d->ok = tb__ck_uint(sub, sn, TB__CK_PID, &v);
		d->pid = (int32_t)v;
	} else if (tb__ck_msg(p, n, TB__CK_TD_COUNTER, &sub, &sn)) {
		d->kind = TB_CHECK_TRACK_COUNTER;
		d->ok = true;
		d->incremental = tb__ck_uint(sub, sn, TB__CK_CD_INCREMENTAL,
					     &v) && v;
	} else {
		d->kind = TB_CHECK_TRACK_CHILD;
		d->ok = true;
	}
}

static inline bool tb__ck_desc_same(const struct tb_check_track *t,
				    const struct tb__ck_desc *d)
{
	return t->kind == d->kind && t->parent == d->parent &&
	       t->pid == d->pid && t->tid == d->tid;
}

/*
 * Rule tid-reused / pid-reused: the first descriptor of thread track @t
 * names a pid and tid (of process track @t a pid) another uuid already
 * has.  TrackEventTracker::ResolveDescriptorTrackImpl()
 * (track_event_tracker.cc, descriptor_uuids_by_utid_ and _by_upid_)
 * takes that for a tid (pid) reused and starts a second thread
 * (process); it resolves each descriptor's track as it parses it
 * (TrackEventParser::ParseTrackDescriptor()), so every one counts.
 */
static inline void tb__ck_reuse(struct tb_check *c, const struct tb__ck_at *at,
				const struct tb_check_track *t)
{
	struct tb__ck_ent *e;
	uint64_t key;
	uint32_t kind;
	bool made;

	if (t->kind == TB_CHECK_TRACK_THREAD) {
		key = (uint64_t)(uint32_t)t->pid << 32 | (uint32_t)t->tid;
		kind = 1;
	} else if (t->kind == TB_CHECK_TRACK_PROCESS) {
		key = (uint32_t)t->pid;
		kind = 2;
	} else {
		return;
	}
	e = tb__ck_get(c, &c->thread_ix, key, kind, &made);
	if (!e)
		return;
	if (made)
		e->v1 = (uint32_t)(t - c->tracks);
	else if (c->tracks[e->v1].uuid != t->uuid)
		tb__ck_report(c, at, kind == 1 ? TB_CK_TID_REUSED :
			      TB_CK_PID_REUSED, false, t->uuid);
}

/*
 * A TrackDescriptor, as TrackEventTokenizer::TokenizeTrackDescriptorPacket()
 * (track_event_tokenizer.cc) reserves it and
 * TrackEventTracker::ReserveDescriptorTrack() keeps the first of a uuid:
 * pass 1 reserves the first valid descriptor of each uuid; pass 2 reports
 * the bad ones and the later ones that contradict it.
 */
static inline void tb__ck_descriptor(struct tb_check *c,
				     const struct tb__ck_at *at,
				     struct tb_check_seq *s,
				     const uint8_t *p, size_t n)
{
	struct tb_check_track *t;
	struct tb__ck_desc d;

	tb__ck_desc_parse(p, n, &d);
	if (c->pass == 2)
		c->stats.descriptors++;
	if (!d.ok) {
		tb__ck_report(c, at, TB_CK_DESCRIPTOR_BAD, false, d.uuid);
		return;
	}
	if (d.kind == TB_CHECK_TRACK_THREAD && s->valid) {
		s->thread_valid = 1;	/* the sequence's default thread */
		s->thread_pid = d.pid;
		s->thread_tid = d.tid;
	}
	t = c->pass == 1 ? tb__ck_track(c, d.uuid, 0) :
			   tb__ck_find_track(c, d.uuid);
	if (!t)
		return;
	if (t->descriptor == TB_CHECK_NONE) {
		t->kind = d.kind;
		t->parent = d.parent;
		t->pid = d.pid;
		t->tid = d.tid;
		t->incremental = d.incremental;
		t->reserved = 1;
		t->descriptor = at->packet;
	} else if (c->pass == 2 && t->descriptor == at->packet) {
		tb__ck_reuse(c, at, t);
	} else if (!tb__ck_desc_same(t, &d)) {
		tb__ck_report(c, at, TB_CK_DESCRIPTOR_CONFLICT, false,
			      d.uuid);
	}
}

/*
 * Whether @t's parent chain is one the importer resolves, or the rule it
 * breaks: TrackEventTracker::IsTrackHierarchyValid()
 * (track_event_tracker.cc) walks from the track up, at most
 * TB_CHECK_MAX_ANCESTORS uuids, each reserved (a descriptor, or an event
 * that resolved it earlier in the sorted order), none twice, to uuid 0.
 * A track that resolved stays resolved; one that did not is tried again
 * at its next event, as the importer does (a later event may reserve the
 * missing parent).
 */
static inline int tb__ck_hierarchy(struct tb_check *c,
				   struct tb_check_track *t)
{
	uint64_t seen[TB_CHECK_MAX_ANCESTORS];
	const struct tb_check_track *u;
	uint64_t cur = t->uuid;
	uint32_t i, j;

	if (t->resolved)
		return 0;
	for (i = 0; i < TB_CHECK_MAX_ANCESTORS; i++) {
		if (!cur) {
			t->resolved = 1;
			return 0;
		}
		for (j = 0; j < i; j++)
			if (seen[j] == cur)
				return TB_CK_TRACK_LOOP;
		u = tb__ck_find_track(c, cur);
		if (!u || !u->reserved)
			return TB_CK_TRACK_PARENT_UNKNOWN;
		seen[i] = cur;
		cur = u->parent;
	}
	return TB_CK_TRACK_LOOP;		/* too deep */
}

/* ------------------------------------------------------------------------
 * Interned data and iids.
 */

/* A string's hash, never 0 (0: no string). */
static inline uint32_t tb__ck_str(const uint8_t *p, size_t n)
{
	uint32_t h = tb__ck_fnv(p, n);

	return h ? h : 1;
}

/* An interned entry's key: its sequence, field and clear generation.  A
 * sequence index fits 29 bits: the budget runs out long before. */
static inline uint64_t tb__ck_iid_key(uint32_t seq, uint32_t gen,
				      unsigned field)
{
	return (uint64_t)gen << 32 | (uint64_t)seq << 3 | field;
}

/*
 * Pass 2: InternedData, as ProtoTraceReader::ParseInternedData()
 * (proto_trace_reader.cc) takes it while the state is valid, into the
 * current generation object
 * (PacketSequenceStateGeneration::InternMessage(),
 * packet_sequence_state_generation.cc: an entry without iid is an error,
 * the first value of an iid is kept).  Each entry remembers the object
 * it went into (v1), its bytes (v2) and its name (v3).
 */
static inline void tb__ck_intern(struct tb_check *c,
				 const struct tb__ck_at *at,
				 struct tb_check_seq *s,
				 const uint8_t *p, size_t n)
{
	uint32_t si = (uint32_t)(s - c->seqs), h;
	struct tb_pb_reader r;
	struct tb_pb_field f;
	struct tb__ck_ent *e;
	const uint8_t *nm;
	size_t nn;
	uint64_t iid;
	bool made;

	tb_pb_reader_init(&r, p, n);
	while (tb_pb_next(&r, &f) > 0) {
		if (f.number < TB__CK_ID_CATEGORIES ||
		    f.number > TB__CK_ID_SOURCES || f.type != TB_PB_LEN)
			continue;
		if (!tb__ck_uint(f.data, f.size, 1, &iid)) {
			tb__ck_report(c, at, TB_CK_INTERNED_BAD, false, 0);
			continue;
		}
		h = tb__ck_fnv(f.data, f.size);
		e = tb__ck_get(c, &c->iid_ix, iid,
			       tb__ck_iid_key(si, s->gen, f.number), &made);
		if (!e)
			return;
		c->stats.interned++;
		if (!made) {
			if (e->v2 != h)
				tb__ck_report(c, at, TB_CK_INTERNED_BAD,
					      false, iid);
			continue;	/* the first value is kept */
		}
		e->v1 = s->obj;
		e->v2 = h;
		e->v3 = tb__ck_msg(f.data, f.size, TB__CK_IE_NAME, &nm, &nn) ?
			tb__ck_str(nm, nn) : 1;
	}
}

/*
 * Stage 2: iid @iid of interned field @field as event @e sees it
 * (PacketSequenceStateGeneration::GetInternedMessageView()): interned on
 * its sequence in its clear generation, into its generation object or an
 * earlier one (whose entries the later ones copied).  *@name: its name's
 * hash.
 */
static inline bool tb__ck_lookup(const struct tb_check *c,
				 const struct tb__ck_rec *e, unsigned field,
				 uint64_t iid, uint32_t *name)
{
	const struct tb__ck_ent *x;

	x = tb__ck_find(&c->iid_ix, iid, tb__ck_iid_key(e->seq, e->gen,
							 field));
	if (!x || x->v1 > e->obj)
		return false;
	*name = x->v3;
	return true;
}

/* ------------------------------------------------------------------------
 * Stage 1: track events in file order.
 */
struct tb__ck_pkt {
	const uint8_t *te, *td, *interned, *defaults, *snapshot, *thread;
	const uint8_t *stats, *ftrace;
	size_t te_n, td_n, interned_n, defaults_n, snapshot_n, thread_n;
	size_t stats_n, ftrace_n;
	bool has_te, has_td, has_interned, has_defaults, has_snapshot;
	bool has_stats, has_ftrace;
	bool has_ts, has_clock, has_thread, cleared;
	uint64_t ts;
	uint32_t clock;
	uint32_t flags;
};

/* The fields of a TrackEvent the rules read. */
struct tb__ck_te {
	uint64_t type, track, ts_abs;
	bool has_type, has_track, has_value, has_phase, ts_delta;
};

static inline void tb__ck_te_parse(const uint8_t *p, size_t n,
				   struct tb__ck_te *ev)
{
	struct tb_pb_reader r;
	struct tb_pb_field f;
	const uint8_t *le;
	size_t len;
	uint64_t v;

	TB_MEMSET(ev, 0, sizeof(*ev));
	tb_pb_reader_init(&r, p, n);
	while (tb_pb_next(&r, &f) > 0) {
		switch (f.number) {
		case TB__CK_TE_TYPE:
			ev->has_type = f.type == TB_PB_VARINT;
			ev->type = f.value;
			break;
		case TB__CK_TE_TRACK:
			ev->has_track = f.type == TB_PB_VARINT;
			ev->track = f.value;
			break;
		case TB__CK_TE_COUNTER:
			ev->has_value |= f.type == TB_PB_VARINT;
			break;
		case TB__CK_TE_DCOUNTER:
			ev->has_value |= f.type == TB_PB_FIXED64;
			break;
		case TB__CK_TE_TS_DELTA:
			ev->ts_delta = f.type == TB_PB_VARINT;
			break;
		case TB__CK_TE_TS_ABS:
			ev->ts_abs = f.type == TB_PB_VARINT ? f.value : 0;
			break;
		}
	}
	ev->has_phase = tb__ck_msg(p, n, TB__CK_TE_LEGACY, &le, &len) &&
			tb__ck_uint(le, len, TB__CK_LE_PHASE, &v);
}

/*
 * One counter uuid, resolved as TrackEventTokenizer resolves it while it
 * reads the file (TrackEventTracker::ConvertToAbsoluteCounterValue(),
 * track_event_tracker.cc): only a counter track reserved by a descriptor
 * in an earlier packet.  Rule counter-before-descriptor: its descriptor
 * comes later in the file (a capture cut mid-stream, a writer that
 * describes late): the value is dropped,
 * track_event_counter_invalid_track_uuid (storage/stats.h: an error, in
 * the UI's error badge).  No descriptor anywhere: track-unknown; another
 * kind of track: counter-bad.  Rule counter-incremental-invalid: a delta
 * value (CounterDescriptor.is_incremental) on a sequence whose state is
 * invalid is added to the running total
 * (TrackEventSequenceState::IncrementAndGetCounterValue(),
 * track_event_sequence_state.h: reset at a clear only), which misses what
 * was lost.
 */
static inline bool tb__ck_counter_uuid(struct tb_check *c,
				       const struct tb__ck_at *at,
				       const struct tb_check_seq *s,
				       uint64_t uuid)
{
	const struct tb_check_track *t = tb__ck_find_track(c, uuid);

	if (!t || t->descriptor == TB_CHECK_NONE) {
		tb__ck_report(c, at, TB_CK_TRACK_UNKNOWN, s->lossy, uuid);
		return false;
	}
	if (t->descriptor >= at->packet) {
		tb__ck_report(c, at, TB_CK_COUNTER_EARLY, s->lossy, uuid);
		return false;
	}
	if (t->kind != TB_CHECK_TRACK_COUNTER) {
		tb__ck_report(c, at, TB_CK_COUNTER_BAD, false, uuid);
		return false;
	}
	if (t->incremental && !s->valid)
		tb__ck_report(c, at, TB_CK_COUNTER_INCREMENTAL, s->lossy,
			      uuid);
	return true;
}

/*
 * Extra counter values (AddExtraCounterValues(), track_event_tokenizer.cc):
 * one uuid per value, at most TB__CK_MAX_EXTRA values in all, each
 * resolved as above.
 */
static inline bool tb__ck_extra_counters(struct tb_check *c,
					 const struct tb__ck_at *at,
					 const struct tb_check_seq *s,
					 const uint8_t *p, size_t n)
{
	static const uint32_t field[2][3] = {
		{ TB__CK_TE_XC_VALUES, TB__CK_TE_XC_UUIDS, 0 },
		{ TB__CK_TE_XD_VALUES, TB__CK_TE_XD_UUIDS, 1 },
	};
	uint32_t values, k, index = 0;
	struct tb__ck_rep it;
	uint64_t uuid;
	unsigned i;

	for (i = 0; i < 2; i++) {
		values = tb__ck_rep_count(p, n, field[i][0], field[i][2]);
		if (!values || !tb__ck_rep_count(p, n, field[i][1], false))
			continue;	/* none, or the defaults' uuids */
		tb__ck_rep_init(&it, p, n, field[i][1]);
		for (k = 0; k < values; k++, index++) {
			if (tb__ck_rep_next(&it, &uuid) <= 0 ||
			    index >= TB__CK_MAX_EXTRA) {
				tb__ck_report(c, at, TB_CK_COUNTER_BAD, false,
					      0);
				return false;
			}
			if (!tb__ck_counter_uuid(c, at, s, uuid))
				return false;
		}
	}
	return true;
}

/* A TYPE_COUNTER event: a uuid, a value, a counter track. */
static inline bool tb__ck_counter(struct tb_check *c,
				  const struct tb__ck_at *at,
				  const struct tb_check_seq *s,
				  const struct tb__ck_te *ev, uint64_t uuid)
{
	if ((!ev->has_track && !s->has_default_track) || !ev->has_value) {
		tb__ck_report(c, at, TB_CK_COUNTER_BAD, false, uuid);
		return false;
	}
	return tb__ck_counter_uuid(c, at, s, uuid);
}

/*
 * Rule defaults-before-clear: an event that names no track (or a packet
 * timestamp without a clock id) on a sequence whose TracePacketDefaults
 * came before its clear.  ParsePacket() handles a packet's clear before
 * its defaults (proto_trace_reader.cc), and a clear starts an empty
 * generation (PacketSequenceStateGeneration::OnIncrementalStateCleared()):
 * defaults given in an earlier packet are gone, and the event lands on
 * the default track (or the sequence's thread), its time on the trace
 * clock.
 */
static inline void tb__ck_defaults_lost(struct tb_check *c,
					const struct tb__ck_at *at,
					const struct tb_check_seq *s,
					const struct tb__ck_pkt *p,
					const struct tb__ck_te *ev)
{
	if (((s->defaults_lost & TB__CK_LOST_TRACK) && !ev->has_track) ||
	    ((s->defaults_lost & TB__CK_LOST_CLOCK) && p->has_ts &&
	     !p->has_clock))
		tb__ck_report(c, at, TB_CK_DEFAULTS_LOST, false, 0);
}

/*
 * Rule time-backwards (not an importer stat: see the header): timestamps
 * of one sequence's events must not go back.
 */
static inline void tb__ck_time(struct tb_check *c, const struct tb__ck_at *at,
			       struct tb_check_seq *s,
			       const struct tb__ck_pkt *p)
{
	uint32_t clock = p->has_clock ? p->clock : s->default_clock;

	if (!p->has_ts)
		return;
	if (s->has_last_ts && s->last_clock == clock && p->ts < s->last_ts)
		tb__ck_report(c, at, TB_CK_TIME_BACKWARDS, false, p->ts);
	s->has_last_ts = 1;
	s->last_clock = clock;
	s->last_ts = p->ts;
}

/*
 * Keeps the event for stage 2, with what stage 2 needs of its sequence's
 * state at this point: its generation object, its defaults' track, its
 * thread.  Its sort key is its time on the trace clock
 * (TrackEventTokenizer::TokenizeTrackEventPacket(): timestamp_absolute_us
 * on MONOTONIC, else the packet's timestamp).
 */
static inline void tb__ck_keep(struct tb_check *c, const struct tb__ck_at *at,
			       struct tb_check_seq *s,
			       const struct tb__ck_pkt *p,
			       const struct tb__ck_te *ev, uint64_t uuid)
{
	uint32_t clock = p->has_clock ? p->clock : s->default_clock;
	struct tb__ck_rec *r;

	if (ev->ts_delta)
		;		/* legacy deltas: not modelled */
	else if (ev->ts_abs)
		s->last_key = tb__ck_to_trace(c, s, TB__CK_MONOTONIC,
					      ev->ts_abs * 1000);
	else
		s->last_key = tb__ck_to_trace(c, s, clock, p->ts);
	if (!tb__ck_grow(c, (void **)&c->evs, &c->evs_cap, sizeof(*c->evs),
			 c->nevs + 1))
		return;
	r = &c->evs[c->nevs++];
	r->key = s->last_key;
	r->packet = at->packet;
	r->offset = at->offset;
	r->uuid = uuid;
	r->seq = (uint32_t)(s - c->seqs);
	r->gen = s->gen;
	r->obj = s->obj;
	r->flags = (ev->has_track ? TB__CK_REC_HAS_TRACK : 0) |
		   (s->lossy ? TB__CK_REC_LOSSY : 0) |
		   (s->thread_valid ? TB__CK_REC_THREAD : 0);
	r->pid = s->thread_pid;
	r->tid = s->thread_tid;
}

/*
 * Pass 2: one TrackEvent, in the tokenizer's order of checks
 * (TrackEventTokenizer::TokenizeTrackEventPacket(),
 * track_event_tokenizer.cc): its timestamp, a counter's value, the extra
 * counter values; then the checker's own defaults-before-clear and
 * time-backwards; what passes is kept for stage 2.
 */
static inline void tb__ck_event(struct tb_check *c, const struct tb__ck_at *at,
				struct tb_check_seq *s,
				const struct tb__ck_pkt *p)
{
	struct tb__ck_te ev;
	uint64_t uuid;

	c->stats.track_events++;
	if (!tb__ck_wellformed(p->te, p->te_n)) {
		tb__ck_report(c, at, TB_CK_EVENT_MALFORMED, false, 0);
		return;
	}
	tb__ck_te_parse(p->te, p->te_n, &ev);
	if (ev.ts_delta ? !s->delta_valid : (!ev.ts_abs && !p->has_ts)) {
		tb__ck_report(c, at, TB_CK_EVENT_NO_TIME, false, 0);
		return;
	}
	uuid = ev.has_track ? ev.track :
	       s->has_default_track ? s->default_track : 0;
	if (ev.has_type && ev.type == TB__CK_TYPE_COUNTER &&
	    !tb__ck_counter(c, at, s, &ev, uuid))
		return;
	if (!tb__ck_extra_counters(c, at, s, p->te, p->te_n))
		return;
	tb__ck_defaults_lost(c, at, s, p, &ev);
	tb__ck_time(c, at, s, p);
	tb__ck_keep(c, at, s, p, &ev, uuid);
}

/* ------------------------------------------------------------------------
 * What the service says (tbtrace.h): TraceStats, and producers' ends.
 */

/* Whether sequence @id is a service's: no {producer, writer} gets it. */
static inline bool tb__ck_service_seq(uint32_t id)
{
	return id > 1 && id < 65536;
}

/* A string field's bytes equal @str. */
static inline bool tb__ck_is(const uint8_t *p, size_t n, const char *str)
{
	size_t i;

	for (i = 0; i < n && str[i]; i++)
		if (p[i] != (uint8_t)str[i])
			return false;
	return i == n && !str[i];
}

/* A debug annotation's name and value, when plain (not interned). */
struct tb__ck_arg {
	const uint8_t *name, *str;
	size_t name_n, str_n;
	uint64_t u;
	bool has_name, has_str, has_u;
};

static inline void tb__ck_arg_parse(const uint8_t *p, size_t n,
				    struct tb__ck_arg *a)
{
	struct tb_pb_reader r;
	struct tb_pb_field f;

	TB_MEMSET(a, 0, sizeof(*a));
	tb_pb_reader_init(&r, p, n);
	while (tb_pb_next(&r, &f) > 0) {
		if (f.number == TB__CK_DA_NAME && f.type == TB_PB_LEN) {
			a->name = f.data;
			a->name_n = f.size;
			a->has_name = true;
		} else if (f.number == TB__CK_DA_STRING &&
			   f.type == TB_PB_LEN) {
			a->str = f.data;
			a->str_n = f.size;
			a->has_str = true;
		} else if (f.number == TB__CK_DA_UINT &&
			   f.type == TB_PB_VARINT) {
			a->u = f.value;
			a->has_u = true;
		}
	}
}

/* What a ring record says (tb_trace_ring_record()'s annotations). */
struct tb__ck_rr {
	uint64_t producer, held, holders;
	uint16_t held_by[TB__CK_HELD_BY_MAX];
	uint32_t named;
	bool has_producer, has_end, died, live, refused, holes;
};

/* One annotation of a ring record into @rr. */
static inline void tb__ck_rr_arg(struct tb__ck_rr *rr,
				 const struct tb__ck_arg *a)
{
	if (!a->has_name)
		return;
	if (a->has_u && tb__ck_is(a->name, a->name_n, TB_TRACE_ARG_PRODUCER)) {
		rr->producer = a->u;
		rr->has_producer = true;
	} else if (a->has_str && tb__ck_is(a->name, a->name_n,
					   TB_TRACE_ARG_END)) {
		rr->has_end = true;
		rr->died = tb__ck_is(a->str, a->str_n, "died");
		rr->live = tb__ck_is(a->str, a->str_n, "live");
	} else if (a->has_u && tb__ck_is(a->name, a->name_n,
					 TB_TRACE_ARG_HELD)) {
		rr->held = a->u;
	} else if (a->has_u && tb__ck_is(a->name, a->name_n,
					 TB_TRACE_ARG_HOLDERS)) {
		rr->holders = a->u;
	} else if (a->has_u && tb__ck_is(a->name, a->name_n,
					 TB_TRACE_ARG_HELD_BY)) {
		if (rr->named < TB__CK_HELD_BY_MAX && a->u < 65536)
			rr->held_by[rr->named++] = (uint16_t)a->u;
	} else if (a->has_u && a->u &&
		   (tb__ck_is(a->name, a->name_n, TB_TRACE_ARG_FULL) ||
		    tb__ck_is(a->name, a->name_n, TB_TRACE_ARG_NO_CHUNK) ||
		    tb__ck_is(a->name, a->name_n, TB_TRACE_ARG_DROPPED))) {
		rr->refused = true;
	} else if (a->has_u && a->u &&
		   (tb__ck_is(a->name, a->name_n, TB_TRACE_ARG_HOLES) ||
		    tb__ck_is(a->name, a->name_n, TB_TRACE_ARG_MALFORMED))) {
		rr->holes = true;
	}
}

/*
 * Marks the writers of producer @producer that held chunks at its end:
 * what they wrote there after their last whole packet is not in the
 * trace, so their open slices are explained (their own, per writer).
 */
static inline void tb__ck_held_by(struct tb_check *c, uint64_t producer,
				  const struct tb__ck_rr *rr)
{
	struct tb__ck_ent *e;
	uint32_t i;

	for (i = 0; i < rr->named; i++) {
		e = tb__ck_find(&c->seq_ix, producer << 16 | rr->held_by[i], 0);
		if (e)
			c->seqs[e->v1].held = 1;
	}
}

/*
 * An instant of a service's sequence with the annotations of a ring
 * record (tb_trace_ring_record()): the producer's end, and what it says
 * of its writers' tails.  Its death is every writer's; chunks lost that
 * name no writer (the reader's holes, malformed chunks) may have held
 * any writer's tail; a writer named holding a chunk lost its own; the
 * writes refused, and chunks held by writers not named, are a lone
 * writer's only (see tb__ck_tail_lost()).
 */
static inline void tb__ck_ring_record(struct tb_check *c, const uint8_t *p,
				      size_t n)
{
	struct tb_pb_reader r;
	struct tb_pb_field f;
	struct tb__ck_arg a;
	struct tb__ck_rr rr;
	bool lossy;

	TB_MEMSET(&rr, 0, sizeof(rr));
	tb_pb_reader_init(&r, p, n);
	while (tb_pb_next(&r, &f) > 0) {
		if (f.number != TB__CK_TE_ANNOTATIONS || f.type != TB_PB_LEN)
			continue;
		tb__ck_arg_parse(f.data, f.size, &a);
		tb__ck_rr_arg(&rr, &a);
	}
	if (!rr.has_producer || !rr.has_end || !rr.producer ||
	    rr.producer > 65535)
		return;
	/* chunks held by a producer that left are packets it left open; a
	 * live one's are the chunks its writers keep (a torn packet there
	 * shows as bytes its buffer never completed, in TraceStats) */
	lossy = rr.refused || rr.holders > rr.named ||
		(rr.held && !rr.live && !rr.holders);
	if (!c->ends) {
		c->ends = (uint8_t *)tb__ck_mem(c, NULL, 0, 65536);
		if (!c->ends)
			return;
		TB_MEMSET(c->ends, 0, 65536);
	}
	c->stats.producer_ends++;
	c->stats.producer_deaths += rr.died;
	c->stats.producers_lossy += (lossy || rr.holes || rr.named) &&
				    !rr.died;
	c->ends[rr.producer] |= (uint8_t)(TB__CK_END_SEEN |
					  (rr.died ? TB__CK_END_DIED : 0) |
					  (lossy ? TB__CK_END_LOSSY : 0) |
					  (rr.holes ? TB__CK_END_HOLES : 0));
	tb__ck_held_by(c, rr.producer, &rr);
}

/* A varint field's sum over every instance (BufferStats are repeated). */
static inline uint64_t tb__ck_sum(const uint8_t *p, size_t n, uint32_t field)
{
	struct tb_pb_reader r;
	struct tb_pb_field f;
	uint64_t v = 0;

	tb_pb_reader_init(&r, p, n);
	while (tb_pb_next(&r, &f) > 0)
		if (f.number == field && f.type == TB_PB_VARINT)
			v += f.value;
	return v;
}

/*
 * Bytes a buffer took and neither gave to the trace nor overwrote, by its
 * BufferStats: at the end of a trace, packets never completed.
 */
static inline uint64_t tb__ck_unread(const uint8_t *p, size_t n)
{
	uint64_t in = tb__ck_sum(p, n, TB__CK_BS_BYTES_WRITTEN);
	uint64_t out = tb__ck_sum(p, n, TB__CK_BS_BYTES_READ) +
		       tb__ck_sum(p, n, TB__CK_BS_BYTES_OVERWRITTEN);

	return in > out ? in - out : 0;
}

/*
 * A TraceStats packet (the last one counts): buffers that discarded
 * chunks, patches that failed, ABI violations and chunks refused before
 * any buffer lost data after what the trace holds, with no packet left to
 * carry a flag: slices and flows left open are explained by it.
 */
static inline void tb__ck_trace_stats(struct tb_check *c, const uint8_t *p,
				      size_t n)
{
	struct tb_check_stats *st = &c->stats;
	struct tb_pb_reader r;
	struct tb_pb_field f;

	st->trace_stats++;
	st->ts_buffers = 0;
	st->ts_chunks_discarded = st->ts_chunks_overwritten = 0;
	st->ts_patches_failed = st->ts_abi_violations = 0;
	st->ts_unread_bytes = 0;
	tb_pb_reader_init(&r, p, n);
	while (tb_pb_next(&r, &f) > 0) {
		if (f.number != TB__CK_TS_BUFFER_STATS || f.type != TB_PB_LEN)
			continue;
		st->ts_buffers++;
		st->ts_chunks_discarded +=
			tb__ck_sum(f.data, f.size, TB__CK_BS_CHUNKS_DISCARDED);
		st->ts_chunks_overwritten +=
			tb__ck_sum(f.data, f.size,
				   TB__CK_BS_CHUNKS_OVERWRITTEN);
		st->ts_patches_failed +=
			tb__ck_sum(f.data, f.size, TB__CK_BS_PATCHES_FAILED);
		st->ts_abi_violations +=
			tb__ck_sum(f.data, f.size, TB__CK_BS_ABI_VIOLATIONS);
		st->ts_unread_bytes += tb__ck_unread(f.data, f.size);
	}
	tb__ck_uint(p, n, TB__CK_TS_CHUNKS_DISCARDED, &st->ts_refused_chunks);
	tb__ck_uint(p, n, TB__CK_TS_INVALID_PACKETS, &st->ts_invalid_packets);
	c->ts_tail_lost = st->ts_chunks_discarded || st->ts_patches_failed ||
			  st->ts_unread_bytes ||
			  st->ts_abi_violations || st->ts_refused_chunks ||
			  st->ts_invalid_packets;
}
/* ------------------------------------------------------------------------
 * Stage 2: track events in timestamp order.
 */

/* Whether a loss on @s (a flag, or a packet skipped for want of state)
 * came at or before packet @packet in the file. */
static inline bool tb__ck_lost_before(const struct tb_check_seq *s,
				      uint64_t packet)
{
	return (s->first_loss != TB_CHECK_NONE && s->first_loss <= packet) ||
	       (s->first_skip != TB_CHECK_NONE && s->first_skip <= packet);
}

/* An event's name and category, as hashes (0: none). */
struct tb__ck_names {
	uint32_t name, cat;
};

/* Folds category @h into the categories so far, *@cat. */
static inline void tb__ck_cat_add(uint32_t *cat, uint32_t h, unsigned *n)
{
	*cat = (*n)++ ? ((*cat * 16777619u) ^ h) | 1 : h;
}

/*
 * The categories as ParseTrackEventCategory() joins them
 * (track_event_event_importer.h): each category iid resolved (rule
 * iid-category when not: alone, it reads "unknown(iid)"; among others,
 * it is left out), then the category strings.
 */
static inline uint32_t tb__ck_categories(struct tb_check *c,
					 const struct tb__ck_at *at,
					 const struct tb__ck_rec *e,
					 const uint8_t *p, size_t n)
{
	bool lossy = (e->flags & TB__CK_REC_LOSSY) != 0;
	uint32_t cat = 0, h, iids;
	struct tb_pb_reader r;
	struct tb_pb_field f;
	struct tb__ck_rep it;
	unsigned k = 0;
	uint64_t v;

	iids = tb__ck_rep_count(p, n, TB__CK_TE_CATEGORY_IIDS, false);
	tb__ck_rep_init(&it, p, n, TB__CK_TE_CATEGORY_IIDS);
	while (tb__ck_rep_next(&it, &v) > 0) {
		if (tb__ck_lookup(c, e, TB__CK_ID_CATEGORIES, v, &h)) {
			tb__ck_cat_add(&cat, h, &k);
			continue;
		}
		tb__ck_report(c, at, TB_CK_IID_CATEGORY, lossy, v);
		if (iids == 1)
			tb__ck_cat_add(&cat, tb__ck_hash(v, 0x75) | 1, &k);
	}
	tb_pb_reader_init(&r, p, n);
	while (tb_pb_next(&r, &f) > 0)
		if (f.number == TB__CK_TE_CATEGORIES && f.type == TB_PB_LEN)
			tb__ck_cat_add(&cat, tb__ck_str(f.data, f.size), &k);
	return cat;
}

/*
 * The event's name (ParseTrackEventName()): name_iid, else the legacy
 * name_iid, resolved (rule iid-event-name when not: the event has no
 * name); with neither, the name string.  0 (unset) is no iid.
 */
static inline void tb__ck_names(struct tb_check *c, const struct tb__ck_at *at,
				const struct tb__ck_rec *e, const uint8_t *p,
				size_t n, struct tb__ck_names *nm)
{
	const uint8_t *d;
	uint64_t iid = 0;
	size_t k;

	nm->name = 0;
	nm->cat = tb__ck_categories(c, at, e, p, n);
	if (!tb__ck_uint(p, n, TB__CK_TE_NAME_IID, &iid) || !iid) {
		if (tb__ck_msg(p, n, TB__CK_TE_LEGACY, &d, &k) &&
		    !tb__ck_uint(d, k, TB__CK_LE_NAME_IID, &iid))
			iid = 0;
	}
	if (iid) {
		if (!tb__ck_lookup(c, e, TB__CK_ID_NAMES, iid, &nm->name))
			tb__ck_report(c, at, TB_CK_IID_NAME,
				      (e->flags & TB__CK_REC_LOSSY) != 0, iid);
	} else if (tb__ck_msg(p, n, TB__CK_TE_NAME, &d, &k)) {
		nm->name = tb__ck_str(d, k);
	}
}

/*
 * The track an event lands on, or NULL when it is dropped
 * (ParseInitialTrackAssociation(), track_event_event_importer.h).  A
 * nonzero uuid: rule track-unknown when no descriptor reserved it (it is
 * kept, on a nameless root track the importer reserves then:
 * TrackEventTracker::ResolveDescriptorTrackImpl()), then its hierarchy
 * (track-parent-loop, track-parent-unknown: dropped).  Uuid 0: the
 * sequence's thread when the event set no track_uuid (or no type) and a
 * thread descriptor came, else the default global track.
 */
static inline struct tb_check_track *
tb__ck_event_track(struct tb_check *c, const struct tb__ck_at *at,
		   const struct tb__ck_rec *e, const struct tb__ck_te *ev)
{
	bool lossy = (e->flags & TB__CK_REC_LOSSY) != 0;
	struct tb_check_track *t;
	uint64_t key;
	int rule;

	if (e->uuid) {
		t = tb__ck_track(c, e->uuid, 0);
		if (!t)
			return NULL;
		if (t->kind == TB_CHECK_TRACK_UNDEFINED) {
			tb__ck_report(c, at, TB_CK_TRACK_UNKNOWN, lossy,
				      e->uuid);
			t->reserved = 1;	/* a nameless root */
		}
		rule = tb__ck_hierarchy(c, t);
		if (!rule)
			return t;
		tb__ck_report(c, at, (enum tb_check_rule)rule,
			      rule == TB_CK_TRACK_PARENT_UNKNOWN && lossy,
			      e->uuid);
		return NULL;
	}
	if ((!(e->flags & TB__CK_REC_HAS_TRACK) || !ev->has_type) &&
	    (e->flags & TB__CK_REC_THREAD)) {
		/* the sequence's thread: keyed by pid and tid */
		key = (uint64_t)(uint32_t)e->pid << 32 | (uint32_t)e->tid;
		t = tb__ck_track(c, key, 1);
		if (t) {
			t->kind = TB_CHECK_TRACK_SEQ_THREAD;
			t->pid = e->pid;
			t->tid = e->tid;
		}
		return t;
	}
	t = tb__ck_track(c, 0, 2);
	if (t)
		t->kind = TB_CHECK_TRACK_GLOBAL;
	return t;
}

/* Pops the top of @t's stack (SliceTracker::StackPop()). */
static inline void tb__ck_pop(struct tb_check *c, struct tb_check_track *t)
{
	uint32_t i = t->open - 1;

	t->open = c->open[i].next;
	t->depth--;
	t->ended = (uint8_t)(t->ended - !c->open[i].pending);
	c->open[i].next = c->open_free;
	c->open_free = i + 1;
}

/*
 * Before an event at @ts on @t (@instant: a zero-length one), as
 * SliceTracker::MaybeCloseStack() (importers/common/slice_tracker.cc)
 * does it, from the top down: an ended slice with open ones above it,
 * once @ts is past its end, cuts them there and is popped with them (the
 * misplaced_end_event of an END that named an outer slice); one ended
 * before @ts (or at it) is popped, always from the top.  Open slices are
 * left alone, and only ended ones under open ones stay on a stack, so
 * the walk stops when it has seen them all.
 */
static inline void tb__ck_close_stack(struct tb_check *c,
				      struct tb_check_track *t, uint64_t ts,
				      bool instant)
{
	uint32_t k = t->open, left = t->ended, walked = 0, i;
	bool above_open = false;
	struct tb__ck_open *o;

	while (k && left && walked++ < TB__CK_STACK_WALK) {
		i = k - 1;
		o = &c->open[i];
		k = o->next;
		if (o->pending) {
			above_open = true;
			continue;
		}
		left--;
		if (above_open && ts > o->end) {
			while (t->open != i + 1)	/* cut */
				tb__ck_pop(c, t);
			tb__ck_pop(c, t);
			above_open = false;
		} else if (!above_open &&
			   (o->end < ts || (o->end == ts &&
					    !(o->end == o->ts && instant)))) {
			tb__ck_pop(c, t);
		}
	}
}

/* BEGIN (SliceTracker::Begin()): a slice pushed on @t's stack. */
static inline void tb__ck_begin(struct tb_check *c, const struct tb__ck_at *at,
				struct tb_check_track *t,
				const struct tb__ck_rec *e,
				const struct tb__ck_names *nm)
{
	struct tb__ck_open *o;
	uint32_t i;

	c->stats.slice_begins++;
	t->slices++;
	tb__ck_close_stack(c, t, e->key, false);
	if (c->open_free) {
		i = c->open_free - 1;
		c->open_free = c->open[i].next;
	} else {
		if (!tb__ck_grow(c, (void **)&c->open, &c->open_cap,
				 sizeof(*c->open), c->open_n + 1))
			return;
		i = c->open_n++;
	}
	o = &c->open[i];
	o->packet = at->packet;
	o->seq = e->seq;
	o->ts = e->key;
	o->end = 0;
	o->name = nm->name;
	o->cat = nm->cat;
	o->pending = 1;
	o->next = t->open;
	t->open = i + 1;
	t->depth++;
}

/*
 * Whether an END of name and category @nm matches open slice @o
 * (SliceTracker::MatchingIncompleteSliceIndex()): a category given must
 * be the slice's; a name given must be the slice's, unless it has none.
 */
static inline bool tb__ck_matches(const struct tb__ck_open *o,
				  const struct tb__ck_names *nm)
{
	return o->pending && (!nm->cat || (o->cat && o->cat == nm->cat)) &&
	       (!nm->name || !o->name || o->name == nm->name);
}

/*
 * END (SliceTracker::End()): the innermost open slice it matches ends.
 * Rule end-without-begin: it matches none (ignored; SliceTracker bails
 * out).  Rule end-names-outer-slice: the one it matches has open slices
 * above it; it ends in place (CompleteSliceFinalize() pops only the top)
 * and they are cut at the next event after it.  True when a slice ended.
 */
static inline bool tb__ck_end(struct tb_check *c, const struct tb__ck_at *at,
			      const struct tb_check_seq *s,
			      struct tb_check_track *t,
			      const struct tb__ck_rec *e,
			      const struct tb__ck_names *nm)
{
	bool explained = tb__ck_lost_before(s, at->packet);
	uint32_t k, walked = 0;

	c->stats.slice_ends++;
	tb__ck_close_stack(c, t, e->key, false);
	for (k = t->open; k && walked++ < TB__CK_STACK_WALK;
	     k = c->open[k - 1].next)
		if (tb__ck_matches(&c->open[k - 1], nm))
			break;
	if (!k || walked > TB__CK_STACK_WALK) {
		tb__ck_report(c, at, TB_CK_END_WITHOUT_BEGIN, explained,
			      t->uuid);
		return false;
	}
	if (k == t->open) {
		tb__ck_pop(c, t);
		return true;
	}
	c->open[k - 1].pending = 0;
	c->open[k - 1].end = e->key;
	t->ended++;
	tb__ck_report(c, at, TB_CK_END_OUTER, explained, t->uuid);
	return true;
}

/* ------------------------------------------------------------------------
 * Flows (FlowTracker, importers/common/flow_tracker.cc, driven by
 * MaybeParseTrackEventFlows() in track_event_event_importer.h, in sorted
 * order).  Ids are global to the trace.  The importer keeps the ids that
 * are active: flow_ids of an inactive id begins a flow, of an active one
 * continues it (an arrow from its last event); terminating_flow_ids of
 * an active id draws the last arrow and ends it, of an inactive one is
 * dropped without a word.  A flow begun that no later event continues or
 * ends draws nothing.
 */

/* The flow of @id, made (inactive) if new; NULL: the budget ran out. */
static inline struct tb__ck_flow *tb__ck_flow(struct tb_check *c, uint64_t id)
{
	struct tb__ck_ent *e;
	bool made;

	e = tb__ck_get(c, &c->flow_ix, id, 0, &made);
	if (!e)
		return NULL;
	if (!made)
		return &c->flows[e->v1];
	if (!tb__ck_grow(c, (void **)&c->flows, &c->flows_cap,
			 sizeof(*c->flows), c->nflows + 1)) {
		tb__ck_unmake(&c->flow_ix, e);
		return NULL;
	}
	e->v1 = c->nflows;
	TB_MEMSET(&c->flows[c->nflows], 0, sizeof(*c->flows));
	c->flows[c->nflows].id = id;
	return &c->flows[c->nflows++];
}

/*
 * One id of an event's flow_ids (@end false) or terminating_flow_ids.
 * Rule flow-end-without-begin: a terminating id not active (ignored:
 * MaybeParseTrackEventFlows() skips it), explained by a loss on the
 * sequence at or before it.
 */
static inline void tb__ck_flow_id(struct tb_check *c,
				  const struct tb__ck_at *at,
				  const struct tb_check_seq *s, uint64_t id,
				  bool end)
{
	uint32_t si = (uint32_t)(s - c->seqs);
	struct tb__ck_flow *f = tb__ck_flow(c, id);

	if (!f)
		return;
	if (f->active && f->last_seq != si && !f->shared) {
		f->shared = 1;
		c->stats.flows_shared++;
	}
	if (!f->active && end) {
		tb__ck_report(c, at, TB_CK_FLOW_END_WITHOUT_BEGIN,
			      tb__ck_lost_before(s, at->packet), id);
		return;
	}
	if (!f->active) {
		c->stats.flows_begun++;
		f->active = 1;
		f->packet = at->packet;
		f->seq = si;
		f->steps = 0;
	} else if (end) {
		c->stats.flows_ended++;
		f->active = 0;
	} else {
		c->stats.flow_steps++;
		f->steps++;
	}
	f->last_seq = si;
}

/* The fixed64 ids (packed or not) of @field of an event's slice. */
static inline void tb__ck_flows(struct tb_check *c, const struct tb__ck_at *at,
				const struct tb_check_seq *s,
				const uint8_t *p, size_t n, uint32_t field)
{
	struct tb_pb_reader r;
	struct tb_pb_field f;
	uint64_t v;
	size_t i;
	unsigned k;

	tb_pb_reader_init(&r, p, n);
	while (tb_pb_next(&r, &f) > 0) {
		if (f.number != field)
			continue;
		if (f.type == TB_PB_FIXED64) {
			tb__ck_flow_id(c, at, s, f.value, field ==
				       TB__CK_TE_TERMINATING_FLOW_IDS);
			continue;
		}
		if (f.type != TB_PB_LEN)
			continue;
		for (i = 0; i + 8 <= f.size; i += 8) {
			for (v = 0, k = 0; k < 8; k++)
				v |= (uint64_t)f.data[i + k] << (8 * k);
			tb__ck_flow_id(c, at, s, v, field ==
				       TB__CK_TE_TERMINATING_FLOW_IDS);
		}
	}
}

/* ------------------------------------------------------------------------
 * Stage 2: arguments.
 */

/*
 * One debug annotation, as DebugAnnotationParser::Parse()
 * (util/debug_annotation_parser.cc) reads it: its name
 * (ParseDebugAnnotationName(): a nonzero name_iid resolved, else the name
 * string; rule iid-annotation-name, rule annotation-no-name), then its
 * dict entries, depth first.  The first error ends the annotation: false.
 */
static inline bool tb__ck_annotation(struct tb_check *c,
				     const struct tb__ck_at *at,
				     const struct tb__ck_rec *e,
				     const uint8_t *p, size_t n,
				     unsigned depth)
{
	struct tb_pb_reader r;
	struct tb_pb_field f;
	const uint8_t *d;
	uint32_t h;
	uint64_t iid;
	size_t k;

	if (tb__ck_uint(p, n, TB__CK_DA_NAME_IID, &iid) && iid) {
		if (!tb__ck_lookup(c, e, TB__CK_ID_ANNOTATION_NAMES, iid,
				   &h)) {
			tb__ck_report(c, at, TB_CK_IID_ANNOTATION,
				      (e->flags & TB__CK_REC_LOSSY) != 0,
				      iid);
			return false;
		}
	} else if (!tb__ck_msg(p, n, TB__CK_DA_NAME, &d, &k)) {
		tb__ck_report(c, at, TB_CK_ANNOTATION_NO_NAME, false, 0);
		return false;
	}
	if (depth >= TB__CK_DA_DEPTH)
		return true;
	tb_pb_reader_init(&r, p, n);
	while (tb_pb_next(&r, &f) > 0)
		if (f.number == TB__CK_DA_DICT && f.type == TB_PB_LEN &&
		    !tb__ck_annotation(c, at, e, f.data, f.size, depth + 1))
			return false;
	return true;
}

/*
 * The event's arguments (ParseTrackEventArgs(),
 * track_event_event_importer.h), read for the slice it began, ended or
 * is, and for a counter's value: its source_location_iid (rule
 * iid-source-location; 0 is an invalid iid too), each debug annotation.
 */
static inline void tb__ck_args(struct tb_check *c, const struct tb__ck_at *at,
			       const struct tb__ck_rec *e, const uint8_t *p,
			       size_t n)
{
	struct tb_pb_reader r;
	struct tb_pb_field f;
	uint32_t h;

	tb_pb_reader_init(&r, p, n);
	while (tb_pb_next(&r, &f) > 0) {
		if (f.number == TB__CK_TE_SOURCE_IID &&
		    f.type == TB_PB_VARINT &&
		    !tb__ck_lookup(c, e, TB__CK_ID_SOURCES, f.value, &h))
			tb__ck_report(c, at, TB_CK_IID_SOURCE,
				      (e->flags & TB__CK_REC_LOSSY) != 0,
				      f.value);
		else if (f.number == TB__CK_TE_ANNOTATIONS &&
			 f.type == TB_PB_LEN)
			tb__ck_annotation(c, at, e, f.data, f.size, 0);
	}
}

/*
 * What an event placed on @t makes: a counter value, or a slice begun,
 * ended or instant (ParseThreadBeginEvent() ... in
 * track_event_event_importer.h); the flows and arguments of the slice,
 * when there is one (MaybeParseFlowEvents()), a counter's arguments.
 */
static inline void tb__ck_place(struct tb_check *c, const struct tb__ck_at *at,
				const struct tb_check_seq *s,
				struct tb_check_track *t,
				const struct tb__ck_rec *e,
				const struct tb__ck_te *ev,
				const struct tb__ck_pkt *p,
				const struct tb__ck_names *nm)
{
	bool made = true;

	if (ev->type == TB__CK_TYPE_COUNTER) {
		c->stats.counters++;
		tb__ck_args(c, at, e, p->te, p->te_n);
		return;
	}
	if (ev->type == TB__CK_TYPE_BEGIN) {
		tb__ck_begin(c, at, t, e, nm);
	} else if (ev->type == TB__CK_TYPE_END) {
		made = tb__ck_end(c, at, s, t, e, nm);
	} else {
		c->stats.instants++;
		tb__ck_close_stack(c, t, e->key, true);
	}
	if (!made)
		return;
	tb__ck_flows(c, at, s, p->te, p->te_n, TB__CK_TE_FLOW_IDS);
	tb__ck_flows(c, at, s, p->te, p->te_n,
		     TB__CK_TE_TERMINATING_FLOW_IDS);
	tb__ck_args(c, at, e, p->te, p->te_n);
}

/* ------------------------------------------------------------------------
 * The UI's data-loss notice.
 *
 * Perfetto's UI counts, in its badge and its Data Losses tab, the stats of
 * severity data_loss with a value above 0 (ui/src/plugins/
 * dev.perfetto.TraceInfoPage/tabs/data_losses.ts: "severity = 'data_loss'
 * AND value > 0"; errors are the rules above).  Those a trace's
 * TraceStats packet sets are modelled here, as ParseTraceStats()
 * (importers/proto/proto_trace_reader.cc) sets them when it meets the
 * packet in file order, each overwriting what an earlier TraceStats set
 * for the same buffer index (storage/stats.h gives the severities):
 *  - per BufferStats i: traced_buf_abi_violations (field 9),
 *    traced_buf_patches_failed (6), traced_buf_trace_writer_packet_loss
 *    (19);
 *  - per WriterStats (field 18: sequence_id 1, buffer 4) whose sequence
 *    has had a packet so far: traced_buf_sequence_packet_loss[buffer]
 *    sums the sequence's packets with previous_packet_dropped, not
 *    counting its first packet (ParsePacket counts the flag only on a
 *    sequence it has met before), and
 *    traced_buf_incremental_sequences_dropped[buffer] counts the
 *    sequences whose every packet that needed incremental state (one at
 *    least) was skipped;
 *  - traced_flushes_failed (14), and traced_final_flush_failed, one per
 *    TraceStats whose final_flush_outcome (15) is FAILED (2).
 * Not modelled: the per-cause traced_buf_data_loss_* stats of newer
 * importers (from BufferStats 22-28, or from the loss bits of the listed
 * sequences' packets): they only break down a loss the stats above show.
 */
enum {
	TB__CK_UI_TS_FLUSHES_FAILED = 14,	/* TraceStats */
	TB__CK_UI_TS_FINAL_FLUSH = 15,
	TB__CK_UI_TS_WRITER_STATS = 18,
	TB__CK_UI_FINAL_FLUSH_FAILED = 2,	/* FinalFlushOutcome */
	TB__CK_UI_WS_SEQUENCE_ID = 1,		/* WriterStats */
	TB__CK_UI_WS_BUFFER = 4,
	TB__CK_UI_BS_WRITER_PACKET_LOSS = 19,	/* BufferStats */
};

static inline const char *tb_check_ui_name(int stat)
{
	static const char *const name[TB_CK_UI_MAX] = {
		"traced_buf_sequence_packet_loss",
		"traced_buf_incremental_sequences_dropped",
		"traced_buf_trace_writer_packet_loss",
		"traced_buf_abi_violations", "traced_buf_patches_failed",
	};

	return stat >= 0 && stat < TB_CK_UI_MAX ? name[stat] : "?";
}

/* What one TraceStats packet sets, by stat and buffer index. */
struct tb__ck_ui_pkt {
	uint64_t v[TB_CK_UI_MAX][TB_CHECK_UI_BUFS];
	uint8_t set[TB_CK_UI_MAX][TB_CHECK_UI_BUFS];
};

static inline void tb__ck_ui_add(struct tb__ck_ui_pkt *u, int k,
				 uint64_t index, uint64_t v)
{
	unsigned at = index < TB_CHECK_UI_BUFS ? (unsigned)index :
		      TB_CHECK_UI_BUFS - 1;

	u->v[k][at] += v;
	u->set[k][at] = 1;
}

/* A BufferStats, the @i-th of its TraceStats. */
static inline void tb__ck_ui_buffer(struct tb__ck_ui_pkt *u, uint64_t i,
				    const uint8_t *p, size_t n)
{
	uint64_t v;

	tb__ck_uint(p, n, TB__CK_BS_ABI_VIOLATIONS, &v);
	tb__ck_ui_add(u, TB_CK_UI_ABI_VIOLATIONS, i, v);
	tb__ck_uint(p, n, TB__CK_BS_PATCHES_FAILED, &v);
	tb__ck_ui_add(u, TB_CK_UI_PATCHES_FAILED, i, v);
	tb__ck_uint(p, n, TB__CK_UI_BS_WRITER_PACKET_LOSS, &v);
	tb__ck_ui_add(u, TB_CK_UI_TRACE_WRITER_PACKET_LOSS, i, v);
}

/* A WriterStats: what its sequence, if met so far, adds to its buffer. */
static inline void tb__ck_ui_writer(struct tb_check *c,
				    struct tb__ck_ui_pkt *u,
				    const uint8_t *p, size_t n)
{
	const struct tb_check_seq *s;
	struct tb__ck_ent *e;
	uint64_t id, b, lost;

	tb__ck_uint(p, n, TB__CK_UI_WS_SEQUENCE_ID, &id);
	tb__ck_uint(p, n, TB__CK_UI_WS_BUFFER, &b);
	e = tb__ck_find(&c->seq_ix, (uint32_t)id, 0);
	s = e ? &c->seqs[e->v1] : NULL;
	if (!s || !s->packets)
		return;		/* not met yet, in file order */
	lost = s->lossy_packets - (s->first_loss != TB_CHECK_NONE &&
				   s->first_loss == s->first_packet);
	tb__ck_ui_add(u, TB_CK_UI_SEQUENCE_PACKET_LOSS, (uint32_t)b, lost);
	tb__ck_ui_add(u, TB_CK_UI_INCREMENTAL_SEQUENCES_DROPPED, (uint32_t)b,
		      s->skipped && s->skipped == s->needs);
}

/* A TraceStats packet's data-loss stats, set over the earlier ones'. */
static inline void tb__ck_ui_stats(struct tb_check *c, const uint8_t *p,
				   size_t n)
{
	struct tb__ck_ui_pkt u;
	struct tb_pb_reader r;
	struct tb_pb_field f;
	uint64_t nbs = 0, v;
	unsigned k, i;

	TB_MEMSET(&u, 0, sizeof(u));
	tb_pb_reader_init(&r, p, n);
	while (tb_pb_next(&r, &f) > 0) {
		if (f.type != TB_PB_LEN)
			continue;
		if (f.number == TB__CK_TS_BUFFER_STATS)
			tb__ck_ui_buffer(&u, nbs++, f.data, f.size);
		else if (f.number == TB__CK_UI_TS_WRITER_STATS)
			tb__ck_ui_writer(c, &u, f.data, f.size);
	}
	for (k = 0; k < TB_CK_UI_MAX; k++)
		for (i = 0; i < TB_CHECK_UI_BUFS; i++)
			if (u.set[k][i])
				c->ui.buf[k][i] = u.v[k][i];
	tb__ck_uint(p, n, TB__CK_UI_TS_FLUSHES_FAILED, &c->ui.flushes_failed);
	if (tb__ck_uint(p, n, TB__CK_UI_TS_FINAL_FLUSH, &v) &&
	    v == TB__CK_UI_FINAL_FLUSH_FAILED)
		c->ui.final_flush_failed++;
}

/*
 * What the UI's data-loss notice shows of the trace: the sum of the
 * data-loss stats its TraceStats packets set; *@rows (if not NULL) gets
 * how many of them are above 0 (the rows of the Data Losses tab).  0:
 * the UI shows no data loss.
 */
static inline uint64_t tb_check_ui_loss(const struct tb_check *c,
					uint64_t *rows)
{
	uint64_t sum = 0, nr = 0;
	unsigned k, i;

	for (k = 0; k < TB_CK_UI_MAX; k++)
		for (i = 0; i < TB_CHECK_UI_BUFS; i++) {
			sum += c->ui.buf[k][i];
			nr += c->ui.buf[k][i] != 0;
		}
	sum += c->ui.flushes_failed + c->ui.final_flush_failed;
	nr += (uint64_t)(c->ui.flushes_failed != 0) +
	      (uint64_t)(c->ui.final_flush_failed != 0);
	if (rows)
		*rows = nr;
	return sum;
}

/* ------------------------------------------------------------------------
 * Scheduling: ftrace sched events (tbfreertos.h writes them).  From
 * src/trace_processor/importers/ftrace/: ftrace_tokenizer.cc (a bundle
 * without cpu is dropped; an event needs a timestamp, in the bundle's
 * clock, BOOTTIME when it names none; its type is its first
 * length-delimited field), ftrace_parser.cc (an event without pid is an
 * error: dropped; sched_switch, sched_waking with the event's pid as the
 * waker and common_flags 0x08|0x10 saying "in an interrupt",
 * sched_blocked_reason whose caller is an iid of the sequence's
 * InternedData.kernel_symbols), ftrace_sched_event_tracker.cc and
 * common/thread_state_tracker.cc.  Every event goes through the sorter,
 * so they are replayed here in timestamp order (file order among equal
 * ones) after the walk: a sched_switch ends the CPU's pending slice only
 * when its prev_pid is the pid that slice began for (else
 * mismatched_sched_switch_tids: that slice never ends); a waking moves a
 * blocked thread to runnable, and is spurious otherwise; pid 0 (the
 * idle task, Linux's swapper) gets no thread states.
 */
enum {
	TB__CK_FB_CPU = 1,		/* FtraceEventBundle */
	TB__CK_FB_EVENT = 2,
	TB__CK_FE_TS = 1,		/* FtraceEvent */
	TB__CK_FE_PID = 2,
	TB__CK_FE_SWITCH = 4,
	TB__CK_FE_FLAGS = 5,
	TB__CK_FE_BLOCKED = 18,
	TB__CK_FE_WAKING = 20,
	TB__CK_SS_PREV_PID = 2,		/* SchedSwitchFtraceEvent */
	TB__CK_SS_PREV_STATE = 4,
	TB__CK_SS_NEXT_PID = 6,
	TB__CK_SW_PID = 2,		/* SchedWakingFtraceEvent */
	TB__CK_BR_PID = 1,		/* SchedBlockedReasonFtraceEvent */
	TB__CK_BR_CALLER = 2,
	TB__CK_ID_KSYMS = 26,		/* InternedData.kernel_symbols */
	TB__CK_MAX_CPUS = 1024,		/* more: the import fails */
	TB__CK_IRQ_FLAGS = 0x18,	/* TRACE_FLAG_HARDIRQ | SOFTIRQ */
};

enum { TB__CK_SCHED_SWITCH, TB__CK_SCHED_WAKING, TB__CK_SCHED_BLOCKED };
enum { TB__CK_TS_NONE, TB__CK_TS_RUNNING, TB__CK_TS_RUNNABLE,
       TB__CK_TS_BLOCKED };

static inline void tb__ck_sched_free(struct tb_check *c)
{
	struct tb_check_sched *k = &c->sched;

	tb__ck_mem(c, k->threads, (size_t)k->threads_cap *
		   sizeof(*k->threads), 0);
	tb__ck_mem(c, k->evs, (size_t)k->evs_cap * sizeof(*k->evs), 0);
	tb__ck_mem(c, k->cpus, (size_t)k->ncpus * sizeof(*k->cpus), 0);
	tb__ck_index_free(c, &k->thread_ix);
	tb__ck_index_free(c, &k->iid_ix);
	k->threads = NULL;
	k->evs = NULL;
	k->cpus = NULL;
	k->threads_cap = k->evs_cap = k->ncpus = 0;
	k->nevs = 0;
}

/* InternedData.kernel_symbols: an iid's first value in a generation. */
static inline void tb__ck_sched_intern(struct tb_check *c,
				       const struct tb_check_seq *s,
				       const uint8_t *p, size_t n)
{
	struct tb_pb_reader r;
	struct tb_pb_field f;
	struct tb__ck_ent *e;
	uint64_t iid;
	bool made;

	tb_pb_reader_init(&r, p, n);
	while (tb_pb_next(&r, &f) > 0) {
		if (f.number != TB__CK_ID_KSYMS || f.type != TB_PB_LEN ||
		    !tb__ck_uint(f.data, f.size, 1, &iid))
			continue;
		e = tb__ck_get(c, &c->sched.iid_ix, iid,
			       (uint32_t)(s - c->seqs), &made);
		if (!e)
			return;
		if (made || e->v1 != s->gen)
			e->v1 = s->gen;
	}
}

/* Keeps one sched event to replay; false when the table cannot grow. */
static inline bool tb__ck_sched_keep(struct tb_check *c,
				     const struct tb__ck_sched_ev *ev)
{
	struct tb_check_sched *k = &c->sched;

	if (!tb__ck_grow(c, (void **)&k->evs, &k->evs_cap, sizeof(*k->evs),
			 k->nevs + 1))
		return false;
	k->evs[k->nevs++] = *ev;
	return true;
}

/* One FtraceEvent's sched fields into @ev; false: not a sched event. */
static inline bool tb__ck_sched_parse(struct tb_check *c,
				      const struct tb__ck_at *at,
				      const struct tb_check_seq *s,
				      uint32_t id, const uint8_t *p, size_t n,
				      struct tb__ck_sched_ev *ev)
{
	uint64_t v = 0, w = 0;
	struct tb__ck_ent *e;

	switch (id) {
	case TB__CK_FE_SWITCH:
		ev->kind = TB__CK_SCHED_SWITCH;
		ev->a = tb__ck_uint(p, n, TB__CK_SS_PREV_PID, &v) ?
			(int32_t)v : 0;
		ev->b = tb__ck_uint(p, n, TB__CK_SS_NEXT_PID, &w) ?
			(int32_t)w : 0;
		ev->state = tb__ck_uint(p, n, TB__CK_SS_PREV_STATE, &v) ?
			    (uint16_t)v : 0;
		return true;
	case TB__CK_FE_WAKING:
		ev->kind = TB__CK_SCHED_WAKING;
		ev->a = tb__ck_uint(p, n, TB__CK_SW_PID, &v) ? (int32_t)v : 0;
		return true;
	case TB__CK_FE_BLOCKED:
		ev->kind = TB__CK_SCHED_BLOCKED;
		ev->a = tb__ck_uint(p, n, TB__CK_BR_PID, &v) ? (int32_t)v : 0;
		w = 0;
		tb__ck_uint(p, n, TB__CK_BR_CALLER, &w);
		e = tb__ck_find(&c->sched.iid_ix, w, (uint32_t)(s - c->seqs));
		ev->flag = e && e->v1 == s->gen && s->valid;
		if (!ev->flag)
			tb__ck_report(c, at, TB_CK_SCHED_IID, s->lossy, w);
		return true;
	}
	return false;
}

/* One FtraceEvent: its timestamp, pid and type, as the tokenizer wants. */
static inline void tb__ck_ftrace_event(struct tb_check *c,
				       const struct tb__ck_at *at,
				       const struct tb_check_seq *s,
				       uint32_t cpu, const uint8_t *p,
				       size_t n)
{
	struct tb__ck_sched_ev ev;
	struct tb_pb_reader r;
	struct tb_pb_field f, body;
	uint64_t v;
	bool ts = false, pid = false, type = false;

	TB_MEMSET(&ev, 0, sizeof(ev));
	TB_MEMSET(&body, 0, sizeof(body));
	tb_pb_reader_init(&r, p, n);
	while (tb_pb_next(&r, &f) > 0) {
		if (f.number == TB__CK_FE_TS && f.type == TB_PB_VARINT)
			ts = true, ev.ts = f.value;
		else if (f.number == TB__CK_FE_PID && f.type == TB_PB_VARINT)
			pid = true;
		else if (f.type == TB_PB_LEN && !type)
			type = true, body = f;
	}
	if (!ts || !pid || !type || r.bad) {
		tb__ck_report(c, at, TB_CK_FTRACE_BAD, false, cpu);
		return;
	}
	c->sched.events++;
	ev.packet = at->packet;
	ev.seq = (uint32_t)(s - c->seqs);
	ev.cpu = cpu;
	if (!tb__ck_sched_parse(c, at, s, body.number, body.data, body.size,
				&ev))
		return;
	if (ev.kind == TB__CK_SCHED_WAKING)
		ev.flag = tb__ck_uint(p, n, TB__CK_FE_FLAGS, &v) &&
			  (v & TB__CK_IRQ_FLAGS);
	tb__ck_sched_keep(c, &ev);
}

/* Pass 2: an FtraceEventBundle (TracePacket.ftrace_events). */
static inline void tb__ck_ftrace(struct tb_check *c, const struct tb__ck_at *at,
				 const struct tb_check_seq *s,
				 const uint8_t *p, size_t n)
{
	struct tb_pb_reader r;
	struct tb_pb_field f;
	uint64_t cpu;

	c->sched.bundles++;
	if (!tb__ck_wellformed(p, n) ||
	    !tb__ck_uint(p, n, TB__CK_FB_CPU, &cpu)) {
		tb__ck_report(c, at, TB_CK_FTRACE_BAD, false, 0);
		return;
	}
	if (cpu >= TB__CK_MAX_CPUS) {
		tb__ck_report(c, at, TB_CK_IMPORT_ERROR, false, cpu);
		return;
	}
	tb_pb_reader_init(&r, p, n);
	while (!c->error && tb_pb_next(&r, &f) > 0)
		if (f.number == TB__CK_FB_EVENT && f.type == TB_PB_LEN)
			tb__ck_ftrace_event(c, at, s, (uint32_t)cpu, f.data,
					    f.size);
}

/* The thread of @tid, made if new; NULL when the table cannot grow. */
static inline struct tb_check_thread *tb__ck_thread_of(struct tb_check *c,
						       int32_t tid)
{
	struct tb_check_sched *k = &c->sched;
	struct tb__ck_ent *e;
	bool made;

	e = tb__ck_get(c, &k->thread_ix, (uint64_t)(uint32_t)tid, 0, &made);
	if (!e)
		return NULL;
	if (!made)
		return &k->threads[e->v1];
	if (!tb__ck_grow(c, (void **)&k->threads, &k->threads_cap,
			 sizeof(*k->threads), k->nthreads + 1)) {
		tb__ck_unmake(&k->thread_ix, e);
		return NULL;
	}
	e->v1 = k->nthreads;
	TB_MEMSET(&k->threads[k->nthreads], 0, sizeof(*k->threads));
	k->threads[k->nthreads].tid = tid;
	return &k->threads[k->nthreads++];
}

/* Sorts the kept events by timestamp, equal ones in file order. */
static inline bool tb__ck_sched_sort(struct tb_check *c)
{
	struct tb_check_sched *k = &c->sched;
	struct tb__ck_sched_ev *a = k->evs, *b, *t;
	size_t bytes = (size_t)k->nevs * sizeof(*b);
	uint32_t w, i, l, m, r, x, y;

	b = (struct tb__ck_sched_ev *)tb__ck_mem(c, NULL, 0, bytes);
	if (!b)
		return false;
	for (w = 1; w < k->nevs; w *= 2) {	/* bottom-up merge sort */
		for (l = 0; l < k->nevs; l += 2 * w) {
			m = l + w < k->nevs ? l + w : k->nevs;
			r = m + w < k->nevs ? m + w : k->nevs;
			for (i = l, x = l, y = m; i < r; i++)
				b[i] = y >= r || (x < m && a[x].ts <= a[y].ts) ?
				       a[x++] : a[y++];
		}
		t = a, a = b, b = t;
		if (w > UINT32_MAX / 2)
			break;
	}
	if (a != k->evs)
		TB_MEMCPY(k->evs, a, bytes);
	tb__ck_mem(c, a != k->evs ? a : b, bytes, 0);
	return true;
}

/* The pending slice of @cpu, the table grown to hold it; NULL: no room. */
static inline struct tb__ck_cpu *tb__ck_cpu_of(struct tb_check *c,
					       uint32_t cpu)
{
	struct tb_check_sched *k = &c->sched;

	if (cpu >= k->ncpus) {
		uint32_t n = cpu + 1;
		struct tb__ck_cpu *p = (struct tb__ck_cpu *)tb__ck_mem(c,
			k->cpus, (size_t)k->ncpus * sizeof(*p),
			(size_t)n * sizeof(*p));

		if (!p)
			return NULL;
		TB_MEMSET(p + k->ncpus, 0, (size_t)(n - k->ncpus) *
			  sizeof(*p));
		k->cpus = p;
		k->ncpus = n;
	}
	return &k->cpus[cpu];
}

/* A thread's state changes (pid 0, the idle task, has none). */
static inline void tb__ck_thread_state(struct tb_check_thread *t,
				       uint8_t state)
{
	if (t->tid)
		t->state = state;
}

static inline void tb__ck_sched_switch(struct tb_check *c,
				       const struct tb__ck_sched_ev *ev)
{
	struct tb__ck_cpu *cpu = tb__ck_cpu_of(c, ev->cpu);
	struct tb_check_thread *prev = tb__ck_thread_of(c, ev->a);
	struct tb_check_thread *next = tb__ck_thread_of(c, ev->b);
	const struct tb_check_seq *s = &c->seqs[ev->seq];
	struct tb__ck_at at;

	if (!cpu || !prev || !next)
		return;
	c->sched.switches++;
	if (cpu->on && cpu->pid == ev->a) {
		prev->cpu_ns += ev->ts - cpu->start;
		c->sched.cpu_ns += ev->ts - cpu->start;
	} else if (cpu->on) {
		at.packet = ev->packet;
		at.offset = TB_CHECK_NONE;
		at.seq_id = s->seq_id;
		tb__ck_report(c, &at, TB_CK_SCHED_MISMATCH,
			      s->first_loss != TB_CHECK_NONE &&
			      s->first_loss <= ev->packet, (uint64_t)ev->a);
	}
	tb__ck_thread_state(prev, ev->state ? TB__CK_TS_BLOCKED :
					      TB__CK_TS_RUNNABLE);
	prev->blocked += ev->state != 0;
	tb__ck_thread_state(next, TB__CK_TS_RUNNING);
	next->slices++;
	cpu->on = 1;
	cpu->pid = ev->b;
	cpu->start = ev->ts;
}

static inline void tb__ck_sched_waking(struct tb_check *c,
				       const struct tb__ck_sched_ev *ev)
{
	struct tb_check_thread *t = tb__ck_thread_of(c, ev->a);

	if (!t)
		return;
	c->sched.wakings++;
	if (!t->tid)
		return;
	if (t->state == TB__CK_TS_BLOCKED || t->state == TB__CK_TS_NONE) {
		t->state = TB__CK_TS_RUNNABLE;
		t->wakes++;
		t->irq_wakes += ev->flag;
	} else {
		t->spurious++;
	}
}

/* After the walk: the sched events in time order, as the importer. */
static inline void tb__ck_sched_finish(struct tb_check *c)
{
	struct tb_check_sched *k = &c->sched;
	struct tb_check_thread *t;
	uint32_t i;

	if (!k->nevs || !tb__ck_sched_sort(c))
		return;
	k->first_ts = k->evs[0].ts;
	k->last_ts = k->evs[k->nevs - 1].ts;
	for (i = 0; i < k->nevs && !c->error; i++) {
		const struct tb__ck_sched_ev *ev = &k->evs[i];

		if (ev->kind == TB__CK_SCHED_SWITCH) {
			tb__ck_sched_switch(c, ev);
		} else if (ev->kind == TB__CK_SCHED_WAKING) {
			tb__ck_sched_waking(c, ev);
		} else {
			k->blocked_reasons++;
			t = tb__ck_thread_of(c, ev->a);
			if (t && t->blocked)	/* its last blocked state */
				t->reasons += ev->flag;
		}
	}
	for (i = 0; i < k->ncpus; i++) {
		if (!k->cpus[i].on)
			continue;
		t = tb__ck_thread_of(c, k->cpus[i].pid);
		if (t) {
			t->running = 1;
			t->since = k->cpus[i].start;
		}
	}
}

/* The thread @tid's results, or NULL when no sched event named it. */
static inline const struct tb_check_thread *
tb_check_thread_find(const struct tb_check *c, int32_t tid)
{
	const struct tb__ck_ent *e = tb__ck_find(&c->sched.thread_ix,
						 (uint64_t)(uint32_t)tid, 0);

	return e ? &c->sched.threads[e->v1] : NULL;
}

/* ------------------------------------------------------------------------
 * Packets.
 */
static inline void tb__ck_pkt_parse(const uint8_t *d, size_t n,
				    struct tb__ck_pkt *p)
{
	struct tb_pb_reader r;
	struct tb_pb_field f;

	TB_MEMSET(p, 0, sizeof(*p));
	tb_pb_reader_init(&r, d, n);
	while (tb_pb_next(&r, &f) > 0) {
		if (f.type == TB_PB_VARINT) {
			switch (f.number) {
			case TB__CK_TP_TIMESTAMP:
				p->has_ts = true;
				p->ts = f.value;
				break;
			case TB__CK_TP_CLOCK_ID:
				p->has_clock = true;
				p->clock = (uint32_t)f.value;
				break;
			case TB__CK_TP_FLAGS:
				p->flags = (uint32_t)f.value;
				break;
			case TB__CK_TP_CLEARED_OLD:
				p->cleared = f.value != 0;
				break;
			}
			continue;
		}
		if (f.type != TB_PB_LEN)
			continue;
		switch (f.number) {
		case TB__CK_TP_TRACK_EVENT:
			p->has_te = true;
			p->te = f.data;
			p->te_n = f.size;
			break;
		case TB__CK_TP_TRACK_DESC:
			p->has_td = true;
			p->td = f.data;
			p->td_n = f.size;
			break;
		case TB__CK_TP_INTERNED:
			p->has_interned = true;
			p->interned = f.data;
			p->interned_n = f.size;
			break;
		case TB__CK_TP_DEFAULTS:
			p->has_defaults = true;
			p->defaults = f.data;
			p->defaults_n = f.size;
			break;
		case TB__CK_TP_CLOCK_SNAPSHOT:
			p->has_snapshot = true;
			p->snapshot = f.data;
			p->snapshot_n = f.size;
			break;
		case TB__CK_TP_TRACE_STATS:
			p->has_stats = true;
			p->stats = f.data;
			p->stats_n = f.size;
			break;
		case TB__CK_TP_THREAD_DESC:
			p->has_thread = true;
			p->thread = f.data;
			p->thread_n = f.size;
			break;
		case TB__CK_TP_FTRACE:
			p->has_ftrace = true;
			p->ftrace = f.data;
			p->ftrace_n = f.size;
			break;
		}
	}
	p->cleared |= (p->flags & TB__CK_SEQ_CLEARED) != 0;
}

/* The packet of stage 2's event @e, read again from the image. */
static inline bool tb__ck_reread(const struct tb_check *c,
				 const struct tb__ck_rec *e,
				 struct tb__ck_pkt *p)
{
	struct tb_trace_packet tp;
	struct tb_pb_reader r;

	tb_pb_reader_init(&r, c->img + e->offset, c->len - e->offset);
	if (tb_trace_next(&r, &tp) <= 0)
		return false;
	tb__ck_pkt_parse(tp.data, tp.size, p);
	return p->has_te;
}

/*
 * Stage 2: one event, as TrackEventEventImporter::Import()
 * (track_event_event_importer.h) takes it: rule event-no-type (no type
 * and no legacy phase: an error; an unknown type goes to the raw table,
 * not the timeline), its category and name, its track, then what it
 * makes there.  A service's ring record is read here too.
 */
static inline void tb__ck_import(struct tb_check *c, const struct tb__ck_rec *e)
{
	struct tb_check_seq *s = &c->seqs[e->seq];
	struct tb_check_track *t;
	struct tb__ck_names nm;
	struct tb__ck_pkt p;
	struct tb__ck_te ev;
	struct tb__ck_at at;

	if (!tb__ck_reread(c, e, &p))
		return;
	at.packet = e->packet;
	at.offset = e->offset;
	at.seq_id = s->seq_id;
	tb__ck_te_parse(p.te, p.te_n, &ev);
	if ((!ev.has_type || !ev.type || ev.type > TB__CK_TYPE_COUNTER) &&
	    !ev.has_phase) {
		tb__ck_report(c, &at, TB_CK_EVENT_NO_TYPE, false, ev.type);
		return;
	}
	tb__ck_names(c, &at, e, p.te, p.te_n, &nm);
	t = tb__ck_event_track(c, &at, e, &ev);
	if (!t)
		return;
	s->events++;
	t->events++;
	t->last_event = e->packet;
	c->stats.global_track_events += t->kind == TB_CHECK_TRACK_GLOBAL;
	if (ev.has_phase)
		return;		/* legacy phases: placed, not matched */
	tb__ck_place(c, &at, s, t, e, &ev, &p, &nm);
	if (ev.type == TB__CK_TYPE_INSTANT && tb__ck_service_seq(s->seq_id))
		tb__ck_ring_record(c, p.te, p.te_n);
}

/* Orders stage 2's events as the sorter does: by time, then as read. */
static inline int tb__ck_rec_cmp(const void *a, const void *b)
{
	const struct tb__ck_rec *x = (const struct tb__ck_rec *)a;
	const struct tb__ck_rec *y = (const struct tb__ck_rec *)b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->packet < y->packet ? -1 : x->packet > y->packet;
}

/*
 * Stage 2 over every event stage 1 kept, in the sorter's order
 * (TraceSorter, sorter/trace_sorter.h: TimestampedEvent::operator<
 * compares the timestamp, then the order tokenized).
 */
static inline void tb__ck_stage2(struct tb_check *c)
{
	uint32_t i;

	if (c->nevs)
		qsort(c->evs, c->nevs, sizeof(*c->evs), tb__ck_rec_cmp);
	for (i = 0; i < c->nevs && !c->error; i++)
		tb__ck_import(c, &c->evs[i]);
}

/* A legacy ThreadDescriptor packet: the sequence's thread and deltas. */
static inline void tb__ck_thread(struct tb_check_seq *s, const uint8_t *p,
				 size_t n)
{
	uint64_t pid, tid;

	s->delta_valid = 1;
	if (!tb__ck_uint(p, n, TB__CK_PID, &pid) ||
	    !tb__ck_uint(p, n, TB__CK_TID, &tid))
		return;
	s->thread_valid = 1;
	s->thread_pid = (int32_t)pid;
	s->thread_tid = (int32_t)tid;
}

/*
 * TracePacketDefaults replace the sequence's defaults wholesale, in a new
 * generation object (PacketSequenceStateBuilder::
 * UpdateTracePacketDefaults(); OnNewTracePacketDefaults() copies the
 * interned data).
 */
static inline void tb__ck_defaults(struct tb_check_seq *s,
				   const uint8_t *p, size_t n)
{
	const uint8_t *te;
	size_t len;
	uint64_t v;

	s->obj++;
	s->defaults_lost = 0;
	s->default_clock = tb__ck_uint(p, n, TB__CK_TP_CLOCK_ID, &v) ?
			   (uint32_t)v : 0;
	s->has_default_track =
		tb__ck_msg(p, n, TB__CK_DEF_TRACK_EVENT, &te, &len) &&
		tb__ck_uint(te, len, TB__CK_DEF_TRACK, &s->default_track);
}

/*
 * What a packet says about its sequence's incremental state
 * (ParsePacket(): HandleIncrementalStateCleared(), else
 * HandlePreviousPacketDropped()): a clear starts an empty, valid
 * generation; a loss flag without one a generation marked invalid.
 */
static inline void tb__ck_state(uint64_t idx, struct tb_check_seq *s,
				const struct tb_trace_packet *tp,
				const struct tb__ck_pkt *p)
{
	if (tp->dropped) {
		s->lossy = 1;
		s->lossy_packets++;
		s->loss_bits |= (uint32_t)tp->dropped;
		if (s->first_loss == TB_CHECK_NONE)
			s->first_loss = idx;
		s->last_loss = idx;
		s->delta_valid = 0;
	}
	if (p->cleared) {
		s->gen++;
		s->obj++;
		s->valid = 1;
		s->lossy = 0;
		s->clears++;
		s->defaults_lost |= (s->has_default_track ?
				     TB__CK_LOST_TRACK : 0) |
				    (s->default_clock ? TB__CK_LOST_CLOCK : 0);
		s->has_default_track = 0;
		s->default_clock = 0;
		s->delta_valid = 0;
	} else if (tp->dropped) {
		s->valid = 0;
		s->obj++;
	}
}

/* The trusted fields: present, not reserved, one claim per sequence. */
static inline void tb__ck_trusted(struct tb_check *c,
				  const struct tb__ck_at *at,
				  struct tb_check_seq *s,
				  const struct tb_trace_packet *tp)
{
	unsigned mine = tp->has & (TB_TRACE_HAS_UID | TB_TRACE_HAS_PID);

	if (!(tp->has & TB_TRACE_HAS_UID))
		tb__ck_report(c, at, TB_CK_NO_UID, false, 0);
	if (!(tp->has & TB_TRACE_HAS_SEQ_ID))
		tb__ck_report(c, at, TB_CK_NO_SEQ_ID, false, 0);
	else if (tp->trusted_seq_id <= 1)
		tb__ck_report(c, at, TB_CK_SEQ_RESERVED, false,
			      tp->trusted_seq_id);
	if (!(tp->has & TB_TRACE_HAS_PID))
		tb__ck_report(c, at, TB_CK_NO_PID, false, 0);
	if (!(tp->has & TB_TRACE_HAS_SEQ_ID))
		return;
	if (s->packets == 1) {
		s->has = mine;
		s->uid = (uint32_t)tp->trusted_uid;
		s->pid = (int32_t)tp->trusted_pid;
		return;
	}
	if (((mine & s->has & TB_TRACE_HAS_UID) &&
	     (uint32_t)tp->trusted_uid != s->uid) ||
	    ((mine & s->has & TB_TRACE_HAS_PID) &&
	     (int32_t)tp->trusted_pid != s->pid))
		tb__ck_report(c, at, TB_CK_SEQ_COLLISION, false,
			      tp->trusted_seq_id);
}

static inline void tb__ck_loss_stats(struct tb_check *c, uint64_t idx,
				     uint64_t bits)
{
	unsigned i;

	if (!bits)
		return;
	c->stats.lossy_packets++;
	for (i = 0; i < TB_CHECK_LOSS_BITS; i++) {
		if (!(bits >> i & 1))
			continue;
		if (!c->stats.loss_bit_packets[i]++)
			c->stats.loss_bit_first[i] = idx;
	}
}

/*
 * Rule snapshot-with-payload: ParsePacket() returns after a ClockSnapshot
 * (ParseClockSnapshot()), so nothing after it in its order is read: no
 * TraceStats, no TrackDescriptor, ThreadDescriptor or TrackEvent.
 */
static inline bool tb__ck_snapshot_packet(struct tb_check *c,
					  const struct tb__ck_at *at,
					  const struct tb__ck_pkt *p)
{
	if (!p->has_snapshot)
		return false;
	if (c->pass == 2) {
		c->stats.clock_snapshots++;
		if (p->has_te || p->has_td || p->has_thread || p->has_stats)
			tb__ck_report(c, at, TB_CK_SNAPSHOT_PAYLOAD, false, 0);
	}
	return true;
}

/* Pass 2's bookkeeping of a packet: counts, the trusted fields. */
static inline void tb__ck_count(struct tb_check *c, const struct tb__ck_at *at,
				struct tb_check_seq *s,
				const struct tb_trace_packet *tp)
{
	s->packets++;
	if (s->first_packet == TB_CHECK_NONE)
		s->first_packet = at->packet;
	s->last_packet = at->packet;
	c->stats.packets++;
	c->stats.bytes += tp->size;
	tb__ck_loss_stats(c, at->packet, tp->dropped);
	tb__ck_trusted(c, at, s, tp);
}

/*
 * The importer's skip of a packet that needs a state its sequence does
 * not have (rule needs-incremental-state; with no sequence id at all,
 * the import stops: import-error), and of a timestamp on a clock it
 * cannot convert (rule clock-unknown).  True when the packet goes on.
 */
static inline bool tb__ck_usable(struct tb_check *c, const struct tb__ck_at *at,
				 struct tb_check_seq *s, bool has_seq,
				 const struct tb__ck_pkt *p)
{
	uint32_t clock;

	if (p->flags & TB__CK_SEQ_NEEDS) {
		if (!has_seq) {
			tb__ck_report(c, at, TB_CK_IMPORT_ERROR, false, 0);
			return false;
		}
		s->needs += c->pass == 2;
		if (!s->valid) {
			if (c->pass == 2) {
				s->skipped++;
				if (s->first_skip == TB_CHECK_NONE)
					s->first_skip = at->packet;
			}
			tb__ck_report(c, at, TB_CK_NEEDS_STATE, s->lossy, 0);
			return false;
		}
	}
	clock = p->has_clock ? p->clock : s->default_clock;
	if (p->has_ts && clock >= 64 && clock < 128 && !has_seq) {
		tb__ck_report(c, at, TB_CK_IMPORT_ERROR, false, clock);
		return false;
	}
	if (p->has_ts && !tb__ck_clock_ok(c, s, clock)) {
		tb__ck_report(c, at, TB_CK_CLOCK_UNKNOWN, s->lossy, clock);
		return false;
	}
	return true;
}

/*
 * One packet, in ProtoTraceReader::ParsePacket()'s order
 * (proto_trace_reader.cc): the loss flag and the clear, the defaults,
 * the interned data, a ClockSnapshot (the end of it), TraceStats, the
 * skips, then what TrackEventTokenizer takes: a ThreadDescriptor, a
 * TrackDescriptor, a TrackEvent.
 */
static inline void tb__ck_packet(struct tb_check *c, uint64_t idx,
				 uint64_t off,
				 const struct tb_trace_packet *tp)
{
	bool has_seq = (tp->has & TB_TRACE_HAS_SEQ_ID) != 0;
	struct tb__ck_at at;
	struct tb_check_seq *s;
	struct tb__ck_pkt p;

	at.packet = idx;
	at.offset = off;
	at.seq_id = (uint32_t)tp->trusted_seq_id;
	s = tb__ck_seq(c, has_seq ? (uint32_t)tp->trusted_seq_id : 0);
	if (!s)
		return;
	tb__ck_pkt_parse(tp->data, tp->size, &p);
	if (c->pass == 0) {
		if (p.has_snapshot)
			tb__ck_snapshot(c, s, has_seq, p.snapshot,
					p.snapshot_n);
		return;
	}
	if (c->pass == 1 && p.has_snapshot)
		tb__ck_pairs(c, s, has_seq, p.snapshot, p.snapshot_n);
	if (c->pass == 2)
		tb__ck_count(c, &at, s, tp);
	if (has_seq) {
		tb__ck_state(idx, s, tp, &p);
		if (p.has_defaults)
			tb__ck_defaults(s, p.defaults, p.defaults_n);
		if (p.has_interned && c->pass == 2 && s->valid) {
			tb__ck_intern(c, &at, s, p.interned, p.interned_n);
			tb__ck_sched_intern(c, s, p.interned, p.interned_n);
		} else if (p.has_interned && c->pass == 2)
			tb__ck_report(c, &at, TB_CK_INTERNED_IGNORED,
				      s->lossy, 0);
	}
	if (p.has_snapshot && c->pass == 2)	/* in file order */
		tb__ck_snapshot_times(c, s, p.snapshot, p.snapshot_n);
	if (tb__ck_snapshot_packet(c, &at, &p))
		return;		/* the importer reads nothing else of it */
	if (p.has_stats && c->pass == 2) {
		tb__ck_trace_stats(c, p.stats, p.stats_n);
		tb__ck_ui_stats(c, p.stats, p.stats_n);
	}
	if (!tb__ck_usable(c, &at, s, has_seq, &p))
		return;
	if (p.has_ts && c->pass == 2)	/* converted here, in file order */
		p.ts = tb__ck_to_ns(c, s, p.has_clock ? p.clock :
					  s->default_clock, p.ts);
	if (p.has_thread && has_seq && s->valid)
		tb__ck_thread(s, p.thread, p.thread_n);
	if (p.has_td)
		tb__ck_descriptor(c, &at, s, p.td, p.td_n);
	if (p.has_te && c->pass == 2 && has_seq)
		tb__ck_event(c, &at, s, &p);
	if (p.has_ftrace && c->pass == 2)
		tb__ck_ftrace(c, &at, s, p.ftrace, p.ftrace_n);
}

/* Before a pass: the importer's state starts over, results are kept. */
static inline void tb__ck_restart(struct tb_check *c)
{
	uint32_t i;

	for (i = 0; i < c->nseqs; i++)
		tb__ck_seq_reset(&c->seqs[i], c->seqs[i].seq_id);
}

/*
 * Whether the @n bytes left at a record that did not parse are the start
 * of a Trace.packet cut short by the end of the image (the importer keeps
 * such a tail waiting for more bytes, and drops it at the end).
 */
static inline bool tb__ck_cut(const uint8_t *p, size_t n)
{
	uint64_t key, size;
	unsigned k, m;

	k = tb_pb_varint_get(p, n, &key);
	if (!k)		/* cut inside the key: only if it reached the end */
		return n < TB_PB_VARINT_MAX;
	if (key != (TB_PB_TRACE_PACKET << 3 | TB_PB_LEN))
		return false;
	m = tb_pb_varint_get(p + k, n - k, &size);
	if (!m)
		return n - k < TB_PB_VARINT_MAX;
	return size > n - k - m;
}

/*
 * One walk over the image: false if it stopped early, at the end of what
 * is a trace (TB_EFRAMING, reported in the last pass) or out of memory.
 */
static inline bool tb__ck_walk(struct tb_check *c, const uint8_t *img,
			       size_t len)
{
	struct tb_trace_packet tp;
	struct tb_pb_reader r;
	struct tb__ck_at at;
	uint64_t idx = 0;
	size_t off = 0;
	int ret = 0;

	tb_pb_reader_init(&r, img, len);
	while (!c->error && (ret = tb_trace_next(&r, &tp)) > 0) {
		tb__ck_packet(c, idx++, off, &tp);
		off = (size_t)(r.p - img);
	}
	if (!c->error && ret >= 0)
		return true;
	c->error_packet = idx;
	if (c->error)
		return false;
	at.packet = idx;
	at.offset = off;
	at.seq_id = 0;
	if (tb__ck_cut(img + off, len - off)) {
		tb__ck_report(c, &at, TB_CK_TRUNCATED, false, len - off);
		return true;
	}
	c->error = TB_EFRAMING;
	tb__ck_report(c, &at, TB_CK_NOT_A_TRACE, false, off);
	return false;
}

/*
 * Which producers with a ring record have one writer in the trace and
 * which more: a ring counts the writes its writers could not make, not
 * whose, so only a lone writer's tail is that ring's refusals'.
 */
static inline void tb__ck_writers(struct tb_check *c)
{
	uint32_t i, producer;

	if (!c->ends)
		return;
	for (i = 0; i < c->nseqs; i++) {
		producer = c->seqs[i].seq_id >> 16;
		if (!producer || tb__ck_service_seq(c->seqs[i].seq_id))
			continue;
		c->ends[producer] |= c->ends[producer] & TB__CK_END_ONE ?
				     TB__CK_END_MANY : TB__CK_END_ONE;
	}
}

/*
 * Whether what followed packet @packet on sequence @s may be lost, per
 * writer (see the header): a loss flag of its own after it, the trace's
 * tail lost, its producer's death, or its producer's refusals or held
 * chunks when it is the producer's only writer.
 */
static inline bool tb__ck_tail_lost(const struct tb_check *c,
				    const struct tb_check_seq *s,
				    uint64_t packet)
{
	uint32_t producer = s->seq_id >> 16;
	uint8_t end = c->ends && producer ? c->ends[producer] : 0;

	return c->tail_lost || c->ts_tail_lost || s->held ||
	       (s->last_loss != TB_CHECK_NONE && s->last_loss > packet) ||
	       (end & (TB__CK_END_DIED | TB__CK_END_HOLES)) ||
	       ((end & TB__CK_END_LOSSY) && !(end & TB__CK_END_MANY));
}

/* After the last pass: slices still open never end, flows never draw. */
static inline void tb__ck_finish(struct tb_check *c)
{
	struct tb__ck_at at;
	struct tb_check_seq *s;
	uint32_t i, k;

	tb__ck_writers(c);
	for (i = 0; i < c->ntracks; i++) {
		for (k = c->tracks[i].open; k; k = c->open[k - 1].next) {
			if (!c->open[k - 1].pending)
				continue;
			s = &c->seqs[c->open[k - 1].seq];
			at.packet = c->open[k - 1].packet;
			at.offset = TB_CHECK_NONE;
			at.seq_id = s->seq_id;
			c->stats.open_slices++;
			tb__ck_report(c, &at, TB_CK_SLICE_NOT_ENDED,
				      tb__ck_tail_lost(c, s, at.packet),
				      c->tracks[i].uuid);
		}
	}
	for (i = 0; i < c->nflows; i++) {
		const struct tb__ck_flow *f = &c->flows[i];

		if (!f->active)
			continue;
		c->stats.flows_open++;
		if (f->steps)
			continue;	/* its arrows are drawn */
		s = &c->seqs[f->seq];
		at.packet = f->packet;
		at.offset = TB_CHECK_NONE;
		at.seq_id = s->seq_id;
		tb__ck_report(c, &at, TB_CK_FLOW_NOT_ENDED,
			      tb__ck_tail_lost(c, s, f->packet), f->id);
	}
	tb__ck_sched_finish(c);
}

/*
 * Checks the trace image @trace of @len bytes (a whole .pftrace).  Returns
 * TB_OK when it was checked to the end (violations or not: see
 * c->rule[] and tb_check_clean()), TB_EFRAMING when it is not a trace
 * (checked as far as it is one), TB_ELIMIT or TB_ENOMEM when the budget or
 * the allocator ran out (counted as TB_CK_LIMIT; the check is incomplete).
 * Once per tb_check_init().
 */
static inline int tb_check_trace(struct tb_check *c, const void *trace,
				 size_t len)
{
	static const uint8_t empty[1] = { 0 };
	const uint8_t *img = trace ? (const uint8_t *)trace : empty;
	struct tb__ck_at at;

	if (!c || (!trace && len))
		return TB_EINVAL;
	if (c->scale_budget && len > c->max_bytes / TB_CHECK_BUDGET_PER_BYTE)
		c->max_bytes = len <= SIZE_MAX / TB_CHECK_BUDGET_PER_BYTE ?
			       len * TB_CHECK_BUDGET_PER_BYTE : SIZE_MAX;
	c->trace_clock = TB__CK_BOOTTIME;
	c->img = img;
	c->len = len;
	for (c->pass = 0; c->pass < 3; c->pass++) {
		tb__ck_restart(c);
		if (c->pass == 2 && c->npairs)
			qsort(c->pairs, c->npairs, sizeof(*c->pairs),
			      tb__ck_pair_cmp);
		if (tb__ck_walk(c, img, len))
			continue;
		if (c->error != TB_EFRAMING)
			break;
		if (c->pass < 2)	/* each pass stops at the same place */
			c->error = 0;
	}
	c->pass = 3;
	if (c->error == TB_EFRAMING)
		return TB_EFRAMING;	/* the import fails: no more */
	if (!c->error)
		tb__ck_stage2(c);
	if (c->error) {
		at.packet = c->error_packet;
		at.offset = TB_CHECK_NONE;
		at.seq_id = 0;
		tb__ck_report(c, &at, TB_CK_LIMIT, false, c->used);
		return c->error;
	}
	tb__ck_finish(c);
	return TB_OK;
}

#ifdef __cplusplus
}
#endif

#endif /* TBCHECK_H */
