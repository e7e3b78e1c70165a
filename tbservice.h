/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Copyright (c) 2026, tbring contributors.  BSD-2-Clause: see COPYING, or
 * https://opensource.org/license/bsd-2-clause for the text.
 *
 * tbservice.h - a tracing service loop: many rings, one thread.
 *
 * A struct tb_service serves any number of rings from one thread.  Each
 * tb_service_poll() drains what is complete in the rings into the central
 * buffers.  A pass looks at the rings that had work lately (an active
 * list), so an idle ring costs it nothing; every ring is looked at (a
 * sweep) when none is left on it, once a millisecond, and after a sleep:
 * there a ring with nothing new since its last drain costs one load of
 * its write_pos, two if a writer holds a chunk, and is not drained.  When
 * nothing is there, the service sleeps on a shared doorbell
 * (struct tb_bell) with a timeout, so an idle service does not spin.  It
 * scrapes (flushes) on request and at stop, retires a ring that breaks
 * the protocol or whose every chunk stayed pinned for pin_ms (writers
 * that died holding chunks the service scraped) while the others carry
 * on, and in long-trace mode writes the central buffers to the output
 * every period, and sooner once half of the smallest one came in since
 * the last write: with a file to write to, a buffer that holds less than
 * a period's data is a staging area, not a flight recorder, and should
 * not overwrite what the file could still take.
 *
 * The trace tells what was lost (tbtrace.h's service packets): with a
 * clock in the configuration, each write of the buffers samples every
 * ring's "events lost" counter track where it changed, a producer's end
 * is an instant the caller writes (tb_service_record_ring()), and the end
 * of the trace (at stop) records each ring still served and writes the
 * TraceStats packet of the central buffers; without a clock, only the
 * TraceStats packet.  None of it is on the path of an event: a write of
 * the buffers reads three counters per ring.
 *
 * A shared doorbell is writable by every producer that rings it: a
 * hostile one can wake the service thread needlessly, or hide others'
 * rings until its wait times out, but never make it lose data or block.
 *
 * Threading: everything here runs on the service thread, except
 * tb_service_request_flush(), tb_service_wake() and tb_service_stop(),
 * which any thread may call.  Time is passed in by the caller
 * (milliseconds, any monotonic origin).
 */
#ifndef TBSERVICE_H
#define TBSERVICE_H
#define TBSERVICE_H_VERSION 200	/* tbbase.h: TBRING_VERSION */

#include "tbbridge.h"
#include "tbsync.h"
#include "tbtrace.h"

/* Headers of one release only: a mixed copy does not compile. */
#if TBBRIDGE_H_VERSION != TBSERVICE_H_VERSION
#error "tbservice.h needs the tbbridge.h of its own release"
#endif
#if TBSYNC_H_VERSION != TBSERVICE_H_VERSION
#error "tbservice.h needs the tbsync.h of its own release"
#endif
#if TBTRACE_H_VERSION != TBSERVICE_H_VERSION
#error "tbservice.h needs the tbtrace.h of its own release"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Configuration: the caller's, copied at init and never written.  The
 * caller owns every piece of memory: the slot table (@max_rings entries
 * of struct tb_service_slot) and each ring's bridge; the service
 * allocates nothing.
 */

/*
 * One entry of the slot table: the bridge served under that handle, and
 * what the service keeps per ring.  The service's own, not the caller's:
 * tb_service_init() clears every entry, tb_service_add() fills one.
 */
struct tb_service_slot {
	struct tb_bridge *bridge;	/* NULL: a free slot */
	uint64_t pinned_since;		/* ms + 1 it was first seen pinned */
	unsigned next;			/* active list: next handle + 1, 0 */
};

struct tb_service_config {
	struct tb_bell *bell;		/* every served ring rings this */
	struct tb_service_slot *slots;	/* @max_rings entries, for handles */
	unsigned max_rings;
	struct tb_buf *const *bufs;	/* written out in long-trace mode */
	unsigned nbufs;
	struct tb_trace_out *out;	/* NULL: nothing is written */
	uint32_t wait_ms;		/* longest sleep on the doorbell */
	uint32_t period_ms;		/* long trace: write every period (or
					   half a buffer); 0: never */
	uint32_t batch;			/* positions per ring per pass; 0: 256 */
	uint32_t pin_ms;		/* retire a ring pinned so long; 0: 10 s */
	/* a ring was retired (TB_EPROTO or TB_EPINNED); @ring is its handle */
	void (*on_ring_error)(void *ctx, unsigned ring, int err);
	void *ctx;
	/*
	 * The service's own packets (tbtrace.h): its trusted identity, and
	 * the trace clock (CLOCK_BOOTTIME ns, as the event layer's).  With a
	 * clock and @lost (@max_rings entries, the caller's), each write of
	 * the buffers samples every ring's "events lost" counter track when
	 * it changed, and the end of the trace says what each ring counted;
	 * without a clock, only the TraceStats packet that ends the trace.
	 */
	struct tb_buf_ident ident;
	uint64_t (*clock_ns)(void *ctx);
	uint64_t *lost;			/* by handle: last value + 1 */
};

#define TB_SERVICE_BATCH	256u	/* default positions per ring per pass */
#define TB_SERVICE_PIN_MS	10000u	/* default pin_ms */

/* What the service did; tb_service_stats() fills it. */
struct tb_service_stats {
	uint32_t rings;			/* served now */
	uint32_t stopped_rings;		/* retired: broke the protocol */
	uint32_t pinned_rings;		/* retired: every chunk pinned */
	uint64_t passes;		/* tb_service_poll() passes */
	uint64_t sleeps;		/* ... that slept on the doorbell */
	uint64_t drains;		/* tb_bridge_drain() calls, all rings */
	uint64_t sweeps;		/* passes that looked at every ring */
	uint64_t looks;			/* rings passes looked at, all */
	uint64_t flushes;
	uint64_t writes;		/* central buffers written out */
	uint64_t early_writes;		/* long trace: passes that wrote them
					   before the period, half full */
	uint64_t generations;		/* fresh incremental states asked */
	uint64_t rings_seen;		/* ever added */
	uint64_t refused_chunks;	/* by bridges, of rings removed */
	uint64_t loss_samples;		/* "events lost" values written */
};

/* Internal state: read it through the functions below, never write it. */
struct tb_service {
	struct tb_service_config cfg;
	unsigned top;			/* slots in use are below it */
	uint64_t next_write_ms;
	uint64_t now_ms;		/* of the last tb_service_poll() */
	uint32_t flush_req;		/* bumped by any thread */
	uint32_t flush_done;
	uint32_t wake_req;		/* bumped by any thread */
	uint32_t wake_done;
	uint32_t stop_req;
	uint64_t overwritten;		/* bytes, all buffers, last ask */
	uint64_t written;		/* bytes in, all buffers, last write */
	uint64_t swept_ms;		/* now_ms of the last sweep */
	unsigned active;		/* active list: first handle + 1, 0 */
	int sweep;			/* the next pass sweeps every ring */
	int service_track;		/* its descriptor was written */
	int finished;			/* TraceStats was written */
	struct tb_service_stats stats;
};

/* Sets up a service over the rings it will be given (none yet). */
static inline int tb_service_init(struct tb_service *s,
				  const struct tb_service_config *cfg)
{
	if (!s || !cfg || !cfg->bell || !cfg->slots || !cfg->max_rings ||
	    (!cfg->bufs && cfg->nbufs))
		return TB_EINVAL;
	TB_MEMSET(s, 0, sizeof(*s));
	s->cfg = *cfg;
	if (!s->cfg.batch)
		s->cfg.batch = TB_SERVICE_BATCH;
	if (!s->cfg.pin_ms)
		s->cfg.pin_ms = TB_SERVICE_PIN_MS;
	TB_MEMSET(s->cfg.slots, 0, cfg->max_rings * sizeof(*s->cfg.slots));
	s->sweep = 1;
	return TB_OK;
}

/* The bridge served under @handle (its counters, its error), or NULL. */
static inline struct tb_bridge *tb_service_bridge(const struct tb_service *s,
						  unsigned handle)
{
	return handle < s->top ? s->cfg.slots[handle].bridge : NULL;
}

/*
 * Serves the ring of @br (set up with tb_bridge_init(); its ring rings
 * the service's doorbell, tb_ring_set_bell()) from now on.  *@handle gets
 * a handle that names this ring, and stays valid, until
 * tb_service_remove(); the handles of other rings never change.
 * TB_ELIMIT when all max_rings slots are taken.  Call from the service
 * thread, between polls.
 */
static inline int tb_service_add(struct tb_service *s, struct tb_bridge *br,
				 unsigned *handle)
{
	unsigned h;

	if (!s || !br || !handle)
		return TB_EINVAL;
	for (h = 0; h < s->cfg.max_rings && s->cfg.slots[h].bridge; h++)
		if (s->cfg.slots[h].bridge == br)
			return TB_EINVAL;	/* served already */
	if (h == s->cfg.max_rings)
		return TB_ELIMIT;
	s->cfg.slots[h].bridge = br;
	s->cfg.slots[h].pinned_since = 0;
	s->cfg.slots[h].next = 0;
	if (s->cfg.lost)
		s->cfg.lost[h] = 0;
	if (h >= s->top)
		s->top = h + 1;
	s->stats.rings++;
	s->stats.rings_seen++;
	s->sweep = 1;
	*handle = h;
	return TB_OK;
}

/*
 * Whether ring @br has been pinned for pin_ms: every chunk held by a
 * writer that never acknowledged its scrape.  A lap of pinned chunks alone
 * proves nothing: with more writers than chunks, writers the scheduler
 * left out (or that sit idle holding their chunk) pin every chunk while
 * the others burn positions on them, and they unpin it when they run.
 * Dead writers never do; a ring that stays pinned for pin_ms is retired.
 */
static inline bool tb__service_pinned(struct tb_service *s, unsigned h)
{
	struct tb_service_slot *sl = &s->cfg.slots[h];

	if (!tb_reader_pinned(&sl->bridge->reader)) {
		sl->pinned_since = 0;
		return false;
	}
	if (!sl->pinned_since) {
		sl->pinned_since = s->now_ms + 1;	/* 0 means never */
		return false;
	}
	return s->now_ms + 1 - sl->pinned_since >= s->cfg.pin_ms;
}

/* Ring @h is retired for @err (TB_EPROTO, TB_EPINNED): counted, said. */
static inline void tb__service_retire(struct tb_service *s, unsigned h,
				      int err)
{
	if (err == TB_EPINNED)
		s->stats.pinned_rings++;
	else
		s->stats.stopped_rings++;
	if (s->cfg.on_ring_error)
		s->cfg.on_ring_error(s->cfg.ctx, h, err);
}

/*
 * Drains up to @max positions of one live ring; false when it was retired
 * (TB_EPROTO, _EPINNED).
 */
static inline bool tb__service_ring(struct tb_service *s, unsigned h,
				    enum tb_read_mode mode, unsigned max,
				    unsigned *done)
{
	struct tb_bridge *br = s->cfg.slots[h].bridge;
	int ret = tb_bridge_drain(br, max, mode, done);

	s->stats.drains++;
	if (ret >= 0 && tb__service_pinned(s, h))
		ret = br->error = TB_EPINNED;
	if (ret >= 0)
		return true;
	tb__service_retire(s, h, ret);
	return false;
}

/*
 * A pass over ring @h that a lazy drain would find quiet
 * (tb_bridge_quiet()): no drain, only the pinned clock.  A ring pinned at
 * its last drain stays so while nothing moves (only a drain changes what
 * tb_reader_pinned() says), and it must still be retired after pin_ms.
 */
static inline void tb__service_quiet_ring(struct tb_service *s, unsigned h)
{
	if (s->cfg.slots[h].pinned_since && tb__service_pinned(s, h)) {
		s->cfg.slots[h].bridge->error = TB_EPINNED;
		tb__service_retire(s, h, TB_EPINNED);
	}
}

/*
 * Scrapes ring @h until it has nothing more.  A ring holds at most
 * num_chunks positions, so that many (plus what writers add meanwhile,
 * bounded by a second ring's worth) is always enough, and the loop ends.
 */
static inline void tb__service_flush_one(struct tb_service *s, unsigned h)
{
	struct tb_bridge *br = s->cfg.slots[h].bridge;
	uint64_t left = 2 * (uint64_t)br->reader.ring->num_chunks;
	unsigned done = 0;

	while (!br->error && left &&
	       tb__service_ring(s, h, TB_READ_SCRAPE, s->cfg.batch, &done) &&
	       done == s->cfg.batch)
		left -= left < done ? left : done;
}

/* ------------------------------------------------------------------------
 * The service's own packets: what was lost, where people can see it.
 */

/* What ring @br's writers could not write: refused writes, all causes. */
static inline uint64_t tb__service_ring_lost(const struct tb_bridge *br)
{
	const uint32_t *w = br->reader.ring->hdr->wstat;

	/* relaxed: statistics the writers keep, read untrusted */
	return (uint64_t)tb_atomic_load(&w[TB_WS_FULL], TB_RLX) +
	       tb_atomic_load(&w[TB_WS_NO_CHUNK], TB_RLX) +
	       tb_atomic_load(&w[TB_WS_DROPPED_FRAGS], TB_RLX);
}

/*
 * Chunks ring @br's bridge refused before any buffer took them (a buffer
 * full in discard mode counts in its own chunks_discarded instead).
 */
static inline uint64_t tb__service_refused(const struct tb_bridge *br)
{
	return br->stat[TB_BS_REJECTED] - br->stat[TB_BS_REJ_FULL] +
	       br->stat[TB_BS_BAD_TARGET];
}

/* Whether the service writes packets of its own with timestamps. */
static inline bool tb__service_timed(const struct tb_service *s)
{
	return s->cfg.out && s->cfg.clock_ns;
}

/* Ring @h's "events lost" value now, if it changed since the last one. */
static inline void tb__service_loss_sample(struct tb_service *s, unsigned h,
					   uint64_t ts)
{
	struct tb_bridge *br = s->cfg.slots[h].bridge;
	uint64_t lost = tb__service_ring_lost(br);

	if (s->cfg.lost[h] == lost + 1)
		return;
	tb_trace_loss_sample(s->cfg.out, s->cfg.ident, ts, br->producer_id,
			     br->ident.pid, lost, &s->cfg.lost[h]);
	s->stats.loss_samples++;
}

/* Every ring's "events lost" value, where it changed (at each write). */
static inline void tb__service_loss(struct tb_service *s)
{
	uint64_t ts;
	unsigned h;

	if (!tb__service_timed(s) || !s->cfg.lost)
		return;
	ts = s->cfg.clock_ns(s->cfg.ctx);
	for (h = 0; h < s->top; h++)
		if (s->cfg.slots[h].bridge)
			tb__service_loss_sample(s, h, ts);
}

/*
 * Writes into the trace what the ring of bridge @br counted and how its
 * producer ended (@end; @held: chunks its writers still held, as the
 * caller counted them, and then which writers held them, from the
 * ring's chunk words unless its reader stopped on an error): an instant
 * on the service's track (tb_trace_ring_record()).  Call it when a producer left, after
 * tb_service_remove() took what it published; the end of the trace
 * writes one (TB_TRACE_END_LIVE) for each ring still served.  Nothing
 * without a clock.
 */
static inline void tb_service_record_ring(struct tb_service *s,
					  const struct tb_bridge *br,
					  enum tb_trace_end end, uint32_t held)
{
	struct tb_trace_ring_record r;
	struct tb_ring_stats st;
	const uint32_t *w, *rs;
	unsigned i;

	if (!br || !tb__service_timed(s))
		return;
	if (!s->service_track) {
		tb_trace_service_track(s->cfg.out, s->cfg.ident);
		s->service_track = 1;
	}
	w = br->reader.ring->hdr->wstat;
	rs = br->reader.ring->hdr->rstat;
	TB_MEMSET(&r, 0, sizeof(r));
	r.producer = br->producer_id;
	r.pid = br->ident.pid;
	r.end = end;
	r.held = held;
	if (held && !br->error) {	/* whose packets the chunks left open */
		tb_ring_stats(br->reader.ring, &st);
		r.holders = st.nholders;
		for (i = 0; i < TB_RING_HOLDERS && i < TB_TRACE_HELD_BY; i++)
			r.held_by[i] = st.holders[i];
	}
	/* relaxed: statistics, read untrusted */
	r.full = tb_atomic_load(&w[TB_WS_FULL], TB_RLX);
	r.no_chunk = tb_atomic_load(&w[TB_WS_NO_CHUNK], TB_RLX);
	r.dropped_frags = tb_atomic_load(&w[TB_WS_DROPPED_FRAGS], TB_RLX);
	r.holes = tb_atomic_load(&rs[TB_RS_HOLES], TB_RLX);
	r.scrapes = tb_atomic_load(&rs[TB_RS_SCRAPES], TB_RLX);
	r.malformed = tb_atomic_load(&rs[TB_RS_MALFORMED], TB_RLX);
	tb_trace_ring_record(s->cfg.out, s->cfg.ident,
			     s->cfg.clock_ns(s->cfg.ctx), &r);
}

/*
 * Ends the trace: a record of each ring still served, then the TraceStats
 * packet (tb_trace_write_stats(): the statistics of each central buffer,
 * the first 16, the chunks the bridges refused, the invalid packets
 * replaced, the rings served and seen).  Once; tb_service_poll() calls it at stop, after the
 * final flush and write.
 */
static inline void tb__service_finish(struct tb_service *s)
{
	const struct tb_buf_stats *bs[16];
	struct tb_trace_stats_extra x;
	struct tb_ring_stats rs;
	unsigned h, i, n;

	if (!s->cfg.out || s->finished)
		return;
	s->finished = 1;
	TB_MEMSET(&x, 0, sizeof(x));
	x.chunks_discarded = s->stats.refused_chunks;
	for (h = 0; h < s->top; h++) {
		const struct tb_bridge *br = s->cfg.slots[h].bridge;

		if (!br)
			continue;
		tb_ring_stats(br->reader.ring, &rs);
		tb_service_record_ring(s, br, TB_TRACE_END_LIVE,
				       rs.states[TB_ACQUIRED] +
				       rs.states[TB_REWRITE]);
		x.chunks_discarded += tb__service_refused(br);
	}
	x.producers_connected = s->stats.rings;
	x.producers_seen = s->stats.rings_seen;
	x.flushes = s->stats.flushes;
	n = s->cfg.nbufs < 16 ? s->cfg.nbufs : 16;
	for (i = 0; i < n; i++)
		bs[i] = s->cfg.bufs[i] ? tb_buf_stats(s->cfg.bufs[i]) : NULL;
	tb_trace_write_stats(s->cfg.out, s->cfg.ident,
			     s->cfg.clock_ns ? s->cfg.clock_ns(s->cfg.ctx) : 0,
			     bs, n, &x);
}

/*
 * Stops serving ring @handle: first takes everything its writers
 * published (a scrape to the end of what they reserved), then forgets
 * it; the bridge is the caller's again (to read, to destroy).  Call from
 * the service thread, between polls.
 */
static inline int tb_service_remove(struct tb_service *s, unsigned handle)
{
	if (!s || !tb_service_bridge(s, handle))
		return TB_EINVAL;
	tb__service_flush_one(s, handle);
	if (s->cfg.lost && tb__service_timed(s))
		tb__service_loss_sample(s, handle,
					s->cfg.clock_ns(s->cfg.ctx));
	s->stats.refused_chunks +=
		tb__service_refused(s->cfg.slots[handle].bridge);
	s->cfg.slots[handle].bridge = NULL;
	while (s->top && !s->cfg.slots[s->top - 1].bridge)
		s->top--;
	s->stats.rings--;
	s->active = 0;		/* it may be on the list: rebuild it */
	s->sweep = 1;
	return TB_OK;
}

/* Forgets every ring (without a flush); the service may be set up again. */
static inline void tb_service_destroy(struct tb_service *s)
{
	unsigned h;

	for (h = 0; h < s->top; h++)
		s->cfg.slots[h].bridge = NULL;
	s->top = 0;
	s->stats.rings = 0;
	s->active = 0;
	s->sweep = 1;
}

static inline void tb_service_stats(const struct tb_service *s,
				    struct tb_service_stats *st)
{
	*st = s->stats;
}

/* Asks the service thread to scrape every ring on its next pass. */
static inline void tb_service_request_flush(struct tb_service *s)
{
	tb_atomic_add(&s->flush_req, 1);	/* relaxed: the bell orders it */
	tb_bell_ring(s->cfg.bell);
}

/*
 * Makes the service thread run one more pass without sleeping (e.g. after
 * another thread queued a new ring for it), even if it is just going to
 * sleep.
 */
static inline void tb_service_wake(struct tb_service *s)
{
	tb_atomic_add(&s->wake_req, 1);	/* relaxed: the bell orders it */
	tb_bell_ring(s->cfg.bell);
}

static inline void tb_service_stop(struct tb_service *s)
{
	/* release: pairs with the acquire in tb_service_stopping() */
	tb_atomic_store(&s->stop_req, 1, TB_REL);
	tb_bell_ring(s->cfg.bell);
}

static inline bool tb_service_stopping(const struct tb_service *s)
{
	/* acquire: pairs with the release in tb_service_stop() */
	return tb_atomic_load(&s->stop_req, TB_ACQ) != 0;
}

/* Asks every served ring's writers for a fresh incremental state. */
static inline void tb__service_new_generation(struct tb_service *s)
{
	unsigned h;

	for (h = 0; h < s->top; h++) {
		const struct tb_bridge *br = s->cfg.slots[h].bridge;

		if (br)
			tb_ring_bump_generation(br->reader.ring);
	}
	s->stats.generations++;
}

/*
 * Sums over the central buffers: bytes written into them (returned),
 * bytes they overwrote, and the smallest one's size.
 */
static inline uint64_t tb__service_sums(const struct tb_service *s,
					uint64_t *overwritten, uint64_t *min)
{
	uint64_t in = 0;
	unsigned i;

	*overwritten = *min = 0;
	for (i = 0; i < s->cfg.nbufs; i++) {
		const struct tb_buf_stats *st;

		if (!s->cfg.bufs[i])
			continue;
		st = tb_buf_stats(s->cfg.bufs[i]);
		in += st->bytes_written;
		*overwritten += st->bytes_overwritten;
		if (!*min || st->buffer_size < *min)
			*min = st->buffer_size;
	}
	return in;
}

/*
 * Writes every central buffer to the output now.  What writers emitted
 * once for a whole sequence (track descriptors, interned names) went out
 * with it, and a later write starts a part of the trace that must stand
 * alone: every ring's writers are asked for a fresh incremental state.
 */
static inline void tb_service_write_buffers(struct tb_service *s)
{
	uint64_t ow, min;
	unsigned i;

	for (i = 0; s->cfg.out && i < s->cfg.nbufs; i++)
		if (s->cfg.bufs[i]) {
			tb_trace_write_buffer(s->cfg.out, s->cfg.bufs[i], i);
			s->stats.writes++;
		}
	s->written = tb__service_sums(s, &ow, &min);
	tb__service_loss(s);
	if (s->cfg.out && s->cfg.nbufs)
		tb__service_new_generation(s);
}

/*
 * After a pass's drain, what the central buffers took in.  A buffer that
 * overwrote chunks took with them the state a writer emitted once for its
 * sequence (descriptors, interned names), and the events after it cannot
 * be read until a fresh one.  Each writer is asked for a fresh state once
 * a quarter of the smallest buffer was overwritten since the last ask, so
 * a full buffer always holds a recent one, at four fresh states per wrap
 * (asking at every pass that saw an overwrite made a fresh state per few
 * chunks).  In long-trace mode, which writes a buffer out before it
 * fills, an overwrite is a burst a pass brought, not a steady wrap: then
 * every pass that saw one asks.  All rings: cheaper than knowing whose
 * chunks went.  Returns true, in long-trace mode, once half the smallest buffer came in
 * since the buffers were last written out: writing them now, before the
 * period is up, keeps a buffer that holds less than a period's data from
 * overwriting what the file could still take.
 */
static inline bool tb__service_check_buffers(struct tb_service *s)
{
	uint64_t ow, min, in = tb__service_sums(s, &ow, &min);

	if (ow != s->overwritten &&
	    (ow - s->overwritten >= min / 4 || s->cfg.period_ms)) {
		s->overwritten = ow;
		tb__service_new_generation(s);
	}
	return s->cfg.period_ms && s->cfg.out && min &&
	       in - s->written >= min / 2;
}

/* Scrapes every ring until it has nothing more (a flush). */
static inline void tb_service_flush(struct tb_service *s)
{
	unsigned h;

	for (h = 0; h < s->top; h++)
		if (s->cfg.slots[h].bridge)
			tb__service_flush_one(s, h);
	s->stats.flushes++;
}

/* Nothing to do: no request pending, every live ring idle. */
static inline bool tb__service_idle(struct tb_service *s)
{
	unsigned h;

	/* relaxed: read after tb_bell_prepare()'s fence (Dekker) */
	if (tb_atomic_load(&s->flush_req, TB_RLX) != s->flush_done ||
	    tb_atomic_load(&s->wake_req, TB_RLX) != s->wake_done ||
	    tb_service_stopping(s))
		return false;
	for (h = 0; h < s->top; h++) {
		const struct tb_bridge *br = s->cfg.slots[h].bridge;

		if (br && !tb_bridge_idle(br))
			return false;
	}
	return true;
}

/*
 * Drains ring @h lazily, up to batch positions; the positions it resolved
 * (0 when it was retired).  In long-trace mode the ring is drained in
 * steps of a quarter of the smallest buffer, and the buffers are written
 * out as soon as half of one came in: a backlog larger than the buffer
 * (a ring wakes a sleeping service only once three quarters of it wait)
 * then reaches the file instead of overwriting itself.
 */
static inline unsigned tb__service_drain_one(struct tb_service *s,
					     unsigned h, uint64_t min,
					     uint64_t now_ms)
{
	struct tb_bridge *br = s->cfg.slots[h].bridge;
	unsigned done, total = 0, left, step = s->cfg.batch;

	if (s->cfg.period_ms && s->cfg.out && min) {
		uint64_t q = min / 4 / br->reader.ring->chunk_size;

		step = q < 1 ? 1 : q < step ? (unsigned)q : step;
	}
	for (left = s->cfg.batch; left; left -= done) {
		unsigned n = step < left ? step : left;

		if (!tb__service_ring(s, h, TB_READ_LAZY, n, &done))
			break;
		total += done;
		if (tb__service_check_buffers(s)) {
			s->stats.early_writes++;
			tb_service_write_buffers(s);
			s->next_write_ms = now_ms + s->cfg.period_ms;
		}
		if (done < n)
			break;
	}
	return total;
}

/*
 * Drains, lazily, the rings that have something new; returns the
 * positions resolved.  A ring with nothing new since its last drain
 * (tb_bridge_quiet(): one shared word, two with a held chunk) is not
 * drained.  And a pass looks only at the rings that had work lately (the
 * active list), not at every ring: an idle ring costs a pass nothing.
 * Every ring is looked at (a sweep) when the list ran empty, at most a
 * millisecond after the last sweep (by @now_ms), after a sleep on the
 * doorbell or a wake, and when rings were added or removed; so a ring
 * that becomes busy while others keep the service busy (or keep
 * reserving chunks they have not published yet) waits at most a
 * millisecond, and one that wakes a sleeping service, none.
 */
static inline unsigned tb__service_drain(struct tb_service *s,
					 uint64_t now_ms)
{
	unsigned h, *link, total = 0;
	uint64_t ow, min;

	tb__service_sums(s, &ow, &min);
	if (!s->sweep && now_ms == s->swept_ms) {
		for (link = &s->active; *link; ) {
			struct tb_service_slot *sl = &s->cfg.slots[*link - 1];
			struct tb_bridge *br = sl->bridge;

			h = *link - 1;
			s->stats.looks++;
			if (br->error || tb_bridge_quiet(br)) {
				*link = sl->next;	/* off the list */
				if (!br->error)
					tb__service_quiet_ring(s, h);
				continue;
			}
			total += tb__service_drain_one(s, h, min, now_ms);
			link = &sl->next;
		}
		/*
		 * Rings still on the list that brought nothing have chunks
		 * reserved since their last look and not yet published:
		 * wait for them without a sweep until the millisecond is
		 * over.
		 */
		if (total || s->active)
			return total;
	}
	s->sweep = 0;
	s->swept_ms = now_ms;
	s->stats.sweeps++;
	s->active = 0;
	link = &s->active;
	for (h = 0; h < s->top; h++) {
		struct tb_bridge *br = s->cfg.slots[h].bridge;

		if (!br || br->error)
			continue;
		s->stats.looks++;
		if (tb_bridge_quiet(br)) {
			tb__service_quiet_ring(s, h);
			continue;
		}
		total += tb__service_drain_one(s, h, min, now_ms);
		if (!br->error) {		/* on the list, in order */
			*link = h + 1;
			link = &s->cfg.slots[h].next;
		}
	}
	*link = 0;
	return total;
}

/*
 * One pass of the service thread at time @now_ms: drain what is complete
 * in every ring; flush if asked; in long-trace mode write the buffers when
 * the period is due, or sooner once half the smallest one came in since
 * the last write; if nothing came and nothing changed, sleep on the
 * doorbell up to wait_ms (never past the next periodic write).  Returns
 * false once stop was requested (after a final flush and write of every
 * buffer).
 */
static inline bool tb_service_poll(struct tb_service *s, uint64_t now_ms)
{
	/* relaxed: requests are counters; a late one is seen next pass */
	uint32_t req = tb_atomic_load(&s->flush_req, TB_RLX), seq, wait;
	bool busy;

	s->now_ms = now_ms;
	if (tb_service_stopping(s)) {
		tb_service_flush(s);
		tb_service_write_buffers(s);
		tb__service_finish(s);
		return false;
	}
	s->stats.passes++;
	seq = tb_atomic_load(&s->wake_req, TB_RLX);
	if (seq != s->wake_done)
		s->sweep = 1;	/* a wake says nothing of which ring */
	s->wake_done = seq;
	busy = tb__service_drain(s, now_ms) != 0;
	if (req != s->flush_done) {
		tb_service_flush(s);
		s->flush_done = req;
		busy = true;
	}
	if (s->cfg.period_ms && now_ms >= s->next_write_ms) {
		tb_service_write_buffers(s);
		s->next_write_ms = now_ms + s->cfg.period_ms;
	}
	if (busy)
		return true;
	wait = s->cfg.wait_ms;
	if (s->cfg.period_ms && s->next_write_ms - now_ms < wait)
		wait = (uint32_t)(s->next_write_ms - now_ms);
	seq = tb_bell_prepare(s->cfg.bell);
	if (wait && tb__service_idle(s)) {
		s->stats.sleeps++;
		tb_bell_wait(s->cfg.bell, seq, wait);
		s->sweep = 1;	/* rung, or timed out: by whom is unknown */
	} else {
		tb_bell_cancel(s->cfg.bell);
	}
	return true;
}

#ifdef __cplusplus
}
#endif

#endif /* TBSERVICE_H */
