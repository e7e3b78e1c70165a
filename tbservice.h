/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Copyright (c) 2026 The tbring authors.
 *
 * tbservice.h - a tracing service loop: many rings, one thread.
 *
 * A struct tb_service serves any number of rings from one thread.  Each
 * tb_service_poll() drains what is complete in every ring into the
 * central buffers, and when nothing is there sleeps on a shared doorbell
 * (struct tb_bell) with a timeout, so an idle service does not spin.  It
 * scrapes (flushes) on request and at stop, retires a ring that breaks
 * the protocol or whose every chunk is pinned by dead writers while the
 * others carry on, and in long-trace mode writes the central buffers to
 * the output every period.
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

#include "tbbridge.h"
#include "tbsync.h"
#include "tbtrace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * The service loop.
 */
#define TB_SERVICE_BATCH	256	/* positions per ring per pass */

struct tb_service {
	struct tb_bell *bell;		/* every served ring rings this */
	struct tb_bridge *const *rings;
	unsigned nrings;
	struct tb_buf *const *bufs;	/* written out in long-trace mode */
	unsigned nbufs;
	struct tb_trace_out *out;	/* NULL: nothing is written */
	uint32_t wait_ms;		/* longest sleep on the doorbell */
	uint32_t period_ms;		/* long-trace: write every period; 0 */
	uint64_t next_write_ms;
	uint32_t flush_req;		/* bumped by any thread */
	uint32_t flush_done;
	uint32_t wake_req;		/* bumped by any thread */
	uint32_t wake_done;
	uint32_t stop_req;
	uint32_t stopped_rings;		/* rings stopped by protocol errors */
	uint32_t pinned_rings;		/* rings retired: every chunk pinned */
	void (*on_ring_error)(void *ctx, unsigned ring, int err);
	void *ctx;
};

/* Asks the service thread to scrape every ring on its next pass. */
static inline void tb_service_request_flush(struct tb_service *s)
{
	tb_atomic_add(&s->flush_req, 1);	/* relaxed: the bell orders it */
	tb_bell_ring(s->bell);
}

/*
 * Makes the service thread run one more pass without sleeping (e.g. after
 * the caller gave it a new ring), even if it is just going to sleep.
 */
static inline void tb_service_wake(struct tb_service *s)
{
	tb_atomic_add(&s->wake_req, 1);	/* relaxed: the bell orders it */
	tb_bell_ring(s->bell);
}

static inline void tb_service_stop(struct tb_service *s)
{
	/* release: pairs with the acquire in tb_service_stopping() */
	tb_atomic_store(&s->stop_req, 1, TB_REL);
	tb_bell_ring(s->bell);
}

static inline bool tb_service_stopping(const struct tb_service *s)
{
	return tb_atomic_load(&s->stop_req, TB_ACQ) != 0;	/* pairs: stop() */
}

/* Writes every central buffer to the output now. */
static inline void tb_service_write_buffers(struct tb_service *s)
{
	unsigned i;

	for (i = 0; s->out && i < s->nbufs; i++)
		if (s->bufs[i])
			tb_trace_write(s->out, s->bufs[i]);
}

/* Drains one live ring; false when it was retired (TB_EPROTO, _EPINNED). */
static inline bool tb__service_ring(struct tb_service *s, unsigned i,
				     enum tb_read_mode mode, unsigned *done)
{
	int ret = tb_bridge_drain(s->rings[i], TB_SERVICE_BATCH, mode);

	if (ret >= 0) {
		*done = (unsigned)ret;
		return true;
	}
	*done = 0;
	if (ret == TB_EPINNED)
		s->pinned_rings++;
	else
		s->stopped_rings++;
	if (s->on_ring_error)
		s->on_ring_error(s->ctx, i, ret);
	return false;
}

/* Drains every live ring once; returns the positions resolved. */
static inline unsigned tb__service_drain(struct tb_service *s,
					  enum tb_read_mode mode)
{
	unsigned i, done, total = 0;

	for (i = 0; i < s->nrings; i++)
		if (!s->rings[i]->error &&
		    tb__service_ring(s, i, mode, &done))
			total += done;
	return total;
}

/*
 * Scrapes every ring until it has nothing more (a flush).  A ring holds at
 * most num_chunks positions, so that many (plus what writers add
 * meanwhile, bounded by a second ring's worth) is always enough, and the
 * loop always ends.
 */
static inline void tb_service_flush(struct tb_service *s)
{
	unsigned i, done;

	for (i = 0; i < s->nrings; i++) {
		const struct tb_ring *r = s->rings[i]->reader.ring;
		uint64_t left = 2 * (uint64_t)r->num_chunks;

		while (!s->rings[i]->error && left &&
		       tb__service_ring(s, i, TB_READ_SCRAPE, &done) &&
		       done == TB_SERVICE_BATCH)
			left -= left < done ? left : done;
	}
}

/* Nothing to do: no request pending, every live ring idle. */
static inline bool tb__service_idle(struct tb_service *s)
{
	unsigned i;

	/* relaxed: read after tb_bell_prepare()'s fence (Dekker) */
	if (tb_atomic_load(&s->flush_req, TB_RLX) != s->flush_done ||
	    tb_atomic_load(&s->wake_req, TB_RLX) != s->wake_done ||
	    tb_service_stopping(s))
		return false;
	for (i = 0; i < s->nrings; i++)
		if (!s->rings[i]->error &&
		    !tb_reader_idle(&s->rings[i]->reader))
			return false;
	return true;
}

/*
 * One pass of the service thread at time @now_ms: drain what is complete
 * in every ring; flush if asked; in long-trace mode write the buffers when
 * the period is due; if nothing came and nothing changed, sleep on the
 * doorbell up to wait_ms (never past the next periodic write).  Returns
 * false once stop was requested (after a final flush and write of every
 * buffer).
 */
static inline bool tb_service_poll(struct tb_service *s, uint64_t now_ms)
{
	/* relaxed: requests are counters; a late one is seen next pass */
	uint32_t req = tb_atomic_load(&s->flush_req, TB_RLX), seq, wait;
	bool busy;

	if (tb_service_stopping(s)) {
		tb_service_flush(s);
		tb_service_write_buffers(s);
		return false;
	}
	s->wake_done = tb_atomic_load(&s->wake_req, TB_RLX);
	busy = tb__service_drain(s, TB_READ_LAZY) != 0;
	if (req != s->flush_done) {
		tb_service_flush(s);
		s->flush_done = req;
		busy = true;
	}
	if (s->period_ms && now_ms >= s->next_write_ms) {
		tb_service_write_buffers(s);
		s->next_write_ms = now_ms + s->period_ms;
	}
	if (busy)
		return true;
	wait = s->wait_ms;
	if (s->period_ms && s->next_write_ms - now_ms < wait)
		wait = (uint32_t)(s->next_write_ms - now_ms);
	seq = tb_bell_prepare(s->bell);
	if (wait && tb__service_idle(s))
		tb_bell_wait(s->bell, seq, wait);
	else
		tb_bell_cancel(s->bell);
	return true;
}

#ifdef __cplusplus
}
#endif

#endif /* TBSERVICE_H */
