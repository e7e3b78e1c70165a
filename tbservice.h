/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tbservice.h - the service side: rings -> central buffers -> a trace.
 *
 * Three pieces, each usable alone:
 *
 *  - The bridge (struct tb_bridge): one per ring.  It drains the ring's
 *    reader and routes every emitted chunk into the central buffer its
 *    target BufferID selects, copying each fragment once from the reader's
 *    scratch.  Chunk ids are assigned per {writer, BufferID} in the order
 *    the reader resolves that writer's chunks, which is the order the
 *    writer wrote them; the ring's continuation flags become the buffer's,
 *    and the ring's data-loss flag becomes SMB_FULL on that sequence.  An
 *    unknown BufferID is counted and the chunk dropped.
 *
 *  - The trace writer (tb_trace_write()): reads a central buffer and writes
 *    its packets as a Perfetto trace: each TracePacket framed as field 1 of
 *    Trace, followed by the trusted fields the service appends (trusted_uid
 *    3, trusted_packet_sequence_id 10, trusted_pid 79 and, when there was
 *    loss, previous_packet_dropped 42 carrying the loss bits).  As in
 *    Perfetto, a packet that is not valid protobuf or that sets a field
 *    reserved to the service is dropped and counted (a packet with only
 *    the trusted fields and the loss takes its place), so a producer can
 *    neither forge the trusted fields nor swallow them into an open field
 *    at its end.  The protobuf needed
 *    for that is the handful of tb_pb_* helpers below; nothing else in the
 *    library knows about protobuf.
 *
 *  - The service loop (struct tb_service): one thread serves any number of
 *    bridges.  Each tb_service_poll() drains what is complete in every
 *    ring, and when nothing is there sleeps on a shared doorbell (struct
 *    tb_bell) with a timeout, so an idle service does not spin.  It
 *    scrapes (flushes) on request and at stop, retires a ring that breaks
 *    the protocol or whose every chunk is pinned by dead writers while
 *    the others carry on, and in long-trace mode
 *    writes the central buffers to the output every period.
 *
 * Ring writer id 0 is reserved here: the central buffer refuses it, so
 * its chunks are counted as rejected (TB_BS_REJECTED).  A shared doorbell
 * is writable by every producer that rings it: a hostile one can wake the
 * service thread needlessly, or hide others' rings until its wait times
 * out, but never make it lose data or block.
 *
 * Threading: everything here runs on the service thread, except
 * tb_service_request_flush() and tb_service_stop(), which any thread may
 * call.  Time is passed in by the caller (milliseconds, any monotonic
 * origin), so this header needs nothing beyond C99 and the other headers.
 */
#ifndef TBSERVICE_H
#define TBSERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tbring.h"
#include "tbuffer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Protobuf, the little the service needs: varints and tags.
 */
enum {
	TB_PB_VARINT = 0,
	TB_PB_LEN = 2,
};

#define TB_PB_VARINT_MAX	10	/* bytes of the longest varint */

/* The varints themselves are tbfrag.h's tb_frag_varint_put() and _len(). */
static inline size_t tb_pb_tag(uint8_t *p, uint32_t field, unsigned type)
{
	return tb_frag_varint_put(p, (uint64_t)field << 3 | type);
}

/* A varint field: tag and value. */
static inline size_t tb_pb_uint(uint8_t *p, uint32_t field, uint64_t v)
{
	size_t n = tb_pb_tag(p, field, TB_PB_VARINT);

	return n + tb_frag_varint_put(p + n, v);
}

/* An int32 field: negative values are sign-extended to 64 bits. */
static inline size_t tb_pb_int32(uint8_t *p, uint32_t field, int32_t v)
{
	return tb_pb_uint(p, field, (uint64_t)(int64_t)v);
}

/* The header of a length-delimited field of @len bytes. */
static inline size_t tb_pb_len(uint8_t *p, uint32_t field, uint64_t len)
{
	size_t n = tb_pb_tag(p, field, TB_PB_LEN);

	return n + tb_frag_varint_put(p + n, len);
}

/* ------------------------------------------------------------------------
 * The bridge: one ring's reader into central buffers.
 */
#define TB_BRIDGE_MAX_KEYS	65536u	/* {writer, BufferID} pairs */

enum tb_bridge_stat {
	TB_BS_CHUNKS,		/* chunks copied into a buffer */
	TB_BS_BAD_TARGET,	/* unknown BufferID: dropped */
	TB_BS_REJECTED,		/* the buffer refused the chunk */
	TB_BS_TOO_MANY_KEYS,	/* {writer, BufferID} table full: dropped */
	TB_BS_LOSS_FLAGS,	/* chunks that carried the data-loss flag */
	TB_BS_MAX
};

struct tb__bridge_key {
	uint32_t key;		/* writer << 16 | BufferID */
	uint32_t next_id;
	uint32_t used;
};

struct tb_bridge {
	struct tb_reader reader;
	uint16_t producer_id;
	struct tb_buf_ident ident;
	struct tb_buf *const *bufs;	/* indexed by target BufferID */
	unsigned nbufs;
	tb_buf_alloc_fn alloc;
	void *alloc_ctx;
	struct tb__bridge_key *keys;	/* open addressing, power of two */
	uint32_t keys_cap;
	uint32_t keys_n;
	int error;			/* TB_EPROTO or TB_EPINNED: retired */
	uint64_t stat[TB_BS_MAX];
	struct tb_buf_frag frags[TB_FRAG_MAX];
};

/*
 * Sets up a bridge over @ring for producer @producer_id with the trusted
 * identity @ident; @scratch is the reader's (chunk_size bytes); @bufs maps
 * a target BufferID to a central buffer (NULL entries are unknown ids).
 * @alloc may be NULL for malloc.
 */
static inline int tb_bridge_init(struct tb_bridge *br,
				 const struct tb_ring *ring, void *scratch,
				 uint16_t producer_id,
				 struct tb_buf_ident ident,
				 struct tb_buf *const *bufs, unsigned nbufs,
				 tb_buf_alloc_fn alloc, void *alloc_ctx)
{
	int ret;

	TB_MEMSET(br, 0, sizeof(*br));
#ifndef TB_BUF_NO_DEFAULT_ALLOC
	if (!alloc)
		alloc = tb__buf_std_alloc;
#endif
	if (!alloc || (!bufs && nbufs))
		return TB_EINVAL;
	ret = tb_reader_init(&br->reader, ring, scratch);
	if (ret)
		return ret;
	br->producer_id = producer_id;
	br->ident = ident;
	br->bufs = bufs;
	br->nbufs = nbufs;
	br->alloc = alloc;
	br->alloc_ctx = alloc_ctx;
	return TB_OK;
}

static inline void tb_bridge_destroy(struct tb_bridge *br)
{
	if (br->keys)
		br->alloc(br->alloc_ctx, br->keys,
			  (size_t)br->keys_cap * sizeof(*br->keys), 0);
	br->keys = NULL;
	br->keys_cap = br->keys_n = 0;
}

static inline struct tb__bridge_key *
tb__bridge_slot(struct tb__bridge_key *keys, uint32_t cap, uint32_t key)
{
	/* mix the writer (high half) into the low bits the mask keeps */
	uint32_t h = (key ^ key >> 16) * 0x9e3779b1u;
	uint32_t i = (h ^ h >> 16) & (cap - 1);

	while (keys[i].used && keys[i].key != key)
		i = (i + 1) & (cap - 1);
	return &keys[i];
}

/* Doubles the table (16 entries at first); false when it cannot. */
static inline bool tb__bridge_grow(struct tb_bridge *br)
{
	uint32_t cap = br->keys_cap ? br->keys_cap * 2 : 16, i;
	struct tb__bridge_key *keys;

	if (br->keys_n >= TB_BRIDGE_MAX_KEYS)
		return false;
	keys = (struct tb__bridge_key *)br->alloc(br->alloc_ctx, NULL, 0,
						   (size_t)cap * sizeof(*keys));
	if (!keys)
		return false;
	TB_MEMSET(keys, 0, (size_t)cap * sizeof(*keys));
	for (i = 0; i < br->keys_cap; i++)
		if (br->keys[i].used)
			*tb__bridge_slot(keys, cap, br->keys[i].key) =
				br->keys[i];
	tb_bridge_destroy(br);
	br->keys = keys;
	br->keys_cap = cap;
	return true;
}

/* The next chunk id of {writer, BufferID}, or NULL (table full). */
static inline uint32_t *tb__bridge_next_id(struct tb_bridge *br,
					    uint16_t writer, uint16_t bid)
{
	uint32_t key = (uint32_t)writer << 16 | bid;
	struct tb__bridge_key *k;

	if (br->keys_cap) {
		k = tb__bridge_slot(br->keys, br->keys_cap, key);
		if (k->used)
			return &k->next_id;
	}
	/* keep the table at most half full */
	if ((br->keys_n + 1) * 2 > br->keys_cap && !tb__bridge_grow(br))
		return NULL;
	k = tb__bridge_slot(br->keys, br->keys_cap, key);
	k->key = key;
	k->next_id = 0;
	k->used = 1;
	br->keys_n++;
	return &k->next_id;
}

/* Reader callback: one emitted chunk into its central buffer. */
static inline void tb__bridge_chunk(void *ctx, const struct tb_chunk_view *v)
{
	struct tb_bridge *br = (struct tb_bridge *)ctx;
	struct tb_buf *buf = v->bid < br->nbufs ? br->bufs[v->bid] : NULL;
	const uint8_t *p = v->payload;
	struct tb_buf_chunk_in in;
	uint32_t *id, i;

	if (!buf) {
		br->stat[TB_BS_BAD_TARGET]++;
		return;
	}
	id = tb__bridge_next_id(br, v->writer, v->bid);
	if (!id) {
		br->stat[TB_BS_TOO_MANY_KEYS]++;
		return;
	}
	for (i = 0; i < v->nfrags; p += v->sizes[i++]) {
		br->frags[i].data = p;
		br->frags[i].size = v->sizes[i];
	}
	TB_MEMSET(&in, 0, sizeof(in));
	in.producer_id = br->producer_id;
	in.ident = br->ident;
	in.writer_id = v->writer;
	in.chunk_id = (*id)++;
	in.flags = (uint8_t)((v->flags & TB_F_CONT_PREV ? TB_BUF_FIRST_CONT :
			      0) |
			     (v->flags & TB_F_CONT_NEXT ? TB_BUF_LAST_CONT : 0));
	/* a scraped prefix is final too: the suffix moves to a new chunk */
	in.complete = true;
	if (v->flags & TB_F_DATA_LOSS) {
		in.flags |= TB_BUF_DATA_LOSS;	/* read back as SMB_FULL */
		br->stat[TB_BS_LOSS_FLAGS]++;
	}
	/* a refused chunk still used its id: the buffer sees the gap */
	if (tb_buf_copy_frags(buf, &in, br->frags, v->nfrags))
		br->stat[TB_BS_REJECTED]++;
	else
		br->stat[TB_BS_CHUNKS]++;
}

/*
 * Drains up to @max positions of the ring into the central buffers.
 * Returns the positions resolved, or an error once the ring is retired,
 * for good (later calls return it at once and touch nothing): TB_EPROTO
 * when the ring broke the protocol, TB_EPINNED when every chunk of it is
 * pinned by writers that never acknowledged a scrape (tb_reader_pinned()),
 * so nothing can be written to it again.
 */
static inline int tb_bridge_drain(struct tb_bridge *br, unsigned max,
				  enum tb_read_mode mode)
{
	int ret;

	if (br->error)
		return br->error;
	ret = tb_reader_drain(&br->reader, max, mode, tb__bridge_chunk, br);
	if (ret >= 0 && tb_reader_pinned(&br->reader))
		ret = TB_EPINNED;
	if (ret < 0)
		br->error = ret;
	return ret;
}

/* ------------------------------------------------------------------------
 * The trace writer.
 */
typedef int (*tb_trace_write_fn)(void *ctx, const void *data, size_t len);

struct tb_trace_out {
	tb_trace_write_fn write;	/* returns 0, or the write failed */
	void *ctx;
	uint64_t packets;
	uint64_t bytes;
	uint64_t lossy_packets;		/* packets that carried loss bits */
	uint64_t invalid_packets;	/* replaced: not valid TracePackets */
	int error;			/* the first failed write, latched */
};

/* Perfetto's field numbers in TracePacket (and Trace.packet). */
#define TB_PB_TRACE_PACKET		1
#define TB_PB_TRUSTED_UID		3
#define TB_PB_TRUSTED_SEQ_ID		10
#define TB_PB_PREVIOUS_DROPPED		42
#define TB_PB_TRUSTED_PID		79

/* The trusted_packet_sequence_id of {producer, writer}: unique, never 0 or
 * 1 (Perfetto's service sequence) for valid ids (both nonzero). */
static inline uint32_t tb_trace_seq_id(uint16_t producer, uint16_t writer)
{
	return (uint32_t)producer << 16 | writer;
}

static inline void tb__trace_put(struct tb_trace_out *o, const void *p,
				  size_t n)
{
	if (!o->error && n && o->write(o->ctx, p, n))
		o->error = -1;
	o->bytes += n;
}

/* Reads a packet's bytes across its slices, for validation. */
struct tb__pb_cursor {
	const struct tb_buf_slice *s;
	unsigned n;
	unsigned i;
	size_t off;
};

static inline int tb__pb_byte(struct tb__pb_cursor *c)
{
	while (c->i < c->n && c->off == c->s[c->i].size) {
		c->i++;
		c->off = 0;
	}
	return c->i < c->n ? c->s[c->i].data[c->off++] : -1;
}

static inline bool tb__pb_get_varint(struct tb__pb_cursor *c, uint64_t *v)
{
	unsigned shift;

	*v = 0;
	for (shift = 0; shift < 64; shift += 7) {
		int b = tb__pb_byte(c);

		if (b < 0)
			return false;
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

static inline bool tb__pb_skip(struct tb__pb_cursor *c, uint64_t n)
{
	while (n) {
		size_t room;

		if (c->i == c->n)
			return false;
		room = c->s[c->i].size - c->off;
		if (n < room) {
			c->off += (size_t)n;
			return true;
		}
		n -= room;
		c->i++;
		c->off = 0;
	}
	return true;
}

/*
 * Top-level TracePacket fields only the service may write: the trusted
 * fields, trace_config 33, trace_stats 35, synchronization_marker 36,
 * compressed_packets 50, machine_id 98 (Perfetto reserves the same).
 */
static inline bool tb__pb_reserved(uint64_t field)
{
	switch (field) {
	case TB_PB_TRUSTED_UID: case TB_PB_TRUSTED_SEQ_ID: case 33: case 35:
	case 36: case 50: case TB_PB_TRUSTED_PID: case 98:
		return true;
	}
	return false;
}

/*
 * Perfetto's service drops a packet that is not a valid sequence of
 * top-level fields, or that sets a field only the service may set: a
 * field left open at the end would swallow the trusted fields appended
 * after it.
 */
static inline bool tb_trace_packet_valid(const struct tb_buf_packet *pkt)
{
	struct tb__pb_cursor c = { pkt->slices, pkt->nslices, 0, 0 };
	uint64_t key, len;

	while (tb__pb_get_varint(&c, &key)) {
		uint64_t field = key >> 3;

		if (!field || tb__pb_reserved(field))
			return false;
		switch (key & 7) {
		case TB_PB_VARINT:
			if (!tb__pb_get_varint(&c, &len))
				return false;
			break;
		case 1:		/* fixed64 */
			if (!tb__pb_skip(&c, 8))
				return false;
			break;
		case TB_PB_LEN:
			if (!tb__pb_get_varint(&c, &len) ||
			    !tb__pb_skip(&c, len))
				return false;
			break;
		case 5:		/* fixed32 */
			if (!tb__pb_skip(&c, 4))
				return false;
			break;
		default:	/* groups and invalid wire types */
			return false;
		}
	}
	return tb__pb_byte(&c) < 0;	/* ended between two fields */
}

/*
 * Writes one packet with its trusted fields.  0, or -1 once a write
 * failed.  A packet that is not a valid TracePacket is counted in
 * invalid_packets and replaced by one that holds only the trusted fields
 * and previous_packet_dropped (its loss bits plus CHUNK_CORRUPTED), so
 * the loss stays visible on that sequence.
 */
static inline int tb_trace_write_packet(struct tb_trace_out *o,
					const struct tb_buf_packet *pkt)
{
	uint8_t head[2 * TB_PB_VARINT_MAX], tail[4 * (2 + TB_PB_VARINT_MAX)];
	bool valid = tb_trace_packet_valid(pkt);
	uint32_t loss = pkt->loss;
	size_t nt = 0, nh, size = valid ? pkt->size : 0;
	unsigned i;

	if (!valid) {
		o->invalid_packets++;
		loss |= TB_BUF_LOSS_PRESENT | TB_BUF_LOSS_CHUNK_CORRUPTED;
	}
	nt += tb_pb_uint(tail + nt, TB_PB_TRUSTED_UID, pkt->ident.uid);
	nt += tb_pb_uint(tail + nt, TB_PB_TRUSTED_SEQ_ID,
			 tb_trace_seq_id(pkt->producer_id, pkt->writer_id));
	nt += tb_pb_int32(tail + nt, TB_PB_TRUSTED_PID, pkt->ident.pid);
	if (loss) {
		nt += tb_pb_uint(tail + nt, TB_PB_PREVIOUS_DROPPED, loss);
		o->lossy_packets++;
	}
	nh = tb_pb_len(head, TB_PB_TRACE_PACKET, size + nt);
	tb__trace_put(o, head, nh);
	for (i = 0; valid && i < pkt->nslices; i++)
		tb__trace_put(o, pkt->slices[i].data, pkt->slices[i].size);
	tb__trace_put(o, tail, nt);
	o->packets += valid;	/* a stand-in is counted as invalid */
	return o->error;
}

/*
 * Reads everything a central buffer can give now (destructively) into the
 * trace.  Returns the packets written, or -1 once a write failed.
 */
static inline long tb_trace_write(struct tb_trace_out *o, struct tb_buf *b)
{
	struct tb_buf_packet pkt;
	long n = 0;

	tb_buf_begin_read(b);
	while (tb_buf_read_packet(b, &pkt)) {
		if (tb_trace_write_packet(o, &pkt))
			return -1;
		n++;
	}
	return n;
}

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
	tb__add(&s->flush_req, 1);	/* relaxed: the bell orders it */
	tb_bell_ring(s->bell);
}

/*
 * Makes the service thread run one more pass without sleeping (e.g. after
 * the caller gave it a new ring), even if it is just going to sleep.
 */
static inline void tb_service_wake(struct tb_service *s)
{
	tb__add(&s->wake_req, 1);	/* relaxed: the bell orders it */
	tb_bell_ring(s->bell);
}

static inline void tb_service_stop(struct tb_service *s)
{
	/* release: pairs with the acquire in tb_service_stopping() */
	tb__store(&s->stop_req, 1, TB_REL);
	tb_bell_ring(s->bell);
}

static inline bool tb_service_stopping(const struct tb_service *s)
{
	return tb__load(&s->stop_req, TB_ACQ) != 0;	/* pairs: stop() */
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
	if (tb__load(&s->flush_req, TB_RLX) != s->flush_done ||
	    tb__load(&s->wake_req, TB_RLX) != s->wake_done ||
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
	uint32_t req = tb__load(&s->flush_req, TB_RLX), seq, wait;
	bool busy;

	if (tb_service_stopping(s)) {
		tb_service_flush(s);
		tb_service_write_buffers(s);
		return false;
	}
	s->wake_done = tb__load(&s->wake_req, TB_RLX);
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
