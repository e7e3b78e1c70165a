/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Copyright (c) 2026, tbring contributors.  BSD-2-Clause: see COPYING, or
 * https://opensource.org/license/bsd-2-clause for the text.
 *
 * tbbridge.h - one ring's reader into central buffers.
 *
 * A struct tb_bridge drains a ring's reader and routes every emitted chunk
 * into the central buffer its target BufferID selects, copying each
 * fragment once from the reader's scratch (tb_buf_copy_packed()).  Chunk ids are assigned per
 * {writer, BufferID} in the order the reader resolves that writer's
 * chunks, which is the order the writer wrote them; the ring's
 * continuation flags become the buffer's, and the ring's data-loss flag
 * becomes TB_BUF_DATA_LOSS, which the buffer reports as SMB_FULL on that
 * sequence.  A chunk the reader could not use (malformed, another format:
 * a lost view) is counted (TB_BS_LOST) and its writer's next chunk gets
 * the data-loss flag.  An unknown BufferID is counted and the chunk
 * dropped; every chunk the buffer refuses is counted by the reason it
 * gave.
 *
 * Writer id 0 cannot reach a bridge (tb_writer_init() refuses it), and
 * producer id 0 is refused here: its trusted sequence ids would collide
 * with the ones Perfetto keeps for the service itself.
 *
 * Threading: one thread (the service's) per bridge.  Memory: the
 * {writer, BufferID} table grows through the central buffer's allocator
 * hook (tbuffer.h), or the one given to tb_bridge_init().
 */
#ifndef TBBRIDGE_H
#define TBBRIDGE_H
#define TBBRIDGE_H_VERSION 200	/* tbbase.h: TBRING_VERSION */

#include "tbring.h"
#include "tbuffer.h"

/* Headers of one release only: a mixed copy does not compile. */
#if TBRING_H_VERSION != TBBRIDGE_H_VERSION
#error "tbbridge.h needs the tbring.h of its own release"
#endif
#if TBUFFER_H_VERSION != TBBRIDGE_H_VERSION
#error "tbbridge.h needs the tbuffer.h of its own release"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * The bridge: one ring's reader into central buffers.
 */
#define TB_BRIDGE_MAX_KEYS	65536u	/* {writer, BufferID} pairs */

enum tb_bridge_stat {
	TB_BS_CHUNKS,		/* chunks copied into a buffer */
	TB_BS_BAD_TARGET,	/* unknown BufferID: dropped */
	TB_BS_REJECTED,		/* the buffer refused the chunk (all causes) */
	TB_BS_TOO_MANY_KEYS,	/* {writer, BufferID} table full: dropped */
	TB_BS_KEYS_NOMEM,	/* ... could not grow (allocator): dropped */
	TB_BS_LOSS_FLAGS,	/* chunks that carried the data-loss flag */
	TB_BS_LOST,		/* chunks the reader could not use (lost views) */
	/* TB_BS_REJECTED by the central buffer's reason */
	TB_BS_REJ_NOMEM,	/* TB_ENOMEM */
	TB_BS_REJ_LIMIT,	/* TB_ELIMIT */
	TB_BS_REJ_FULL,		/* TB_EBUFFULL: discard policy, full */
	TB_BS_REJ_STALE,	/* TB_ESTALE */
	TB_BS_REJ_TOO_BIG,	/* TB_ETOOBIG */
	TB_BS_REJ_FRAMING,	/* TB_EFRAMING (the valid prefix was kept) */
	TB_BS_REJ_BAD_ID,	/* TB_EBADID */
	TB_BS_REJ_OTHER,	/* anything else (TB_ERECOMMIT, TB_EROFS) */
	TB_BS_MAX
};

/* The counter of a central buffer's refusal. */
static inline enum tb_bridge_stat tb__bridge_rejected(int err)
{
	switch (err) {
	case TB_ENOMEM:		return TB_BS_REJ_NOMEM;
	case TB_ELIMIT:		return TB_BS_REJ_LIMIT;
	case TB_EBUFFULL:	return TB_BS_REJ_FULL;
	case TB_ESTALE:		return TB_BS_REJ_STALE;
	case TB_ETOOBIG:	return TB_BS_REJ_TOO_BIG;
	case TB_EFRAMING:	return TB_BS_REJ_FRAMING;
	case TB_EBADID:		return TB_BS_REJ_BAD_ID;
	}
	return TB_BS_REJ_OTHER;
}

struct tb__bridge_key {
	uint32_t key;		/* writer << 16 | BufferID */
	uint32_t next_id;
	uint16_t used;
	uint16_t loss;		/* a chunk was lost: flag the next one */
	uint32_t epoch;		/* the bridge's loss epoch it last saw */
};

/*
 * What a bridge is set up with (tb_bridge_init()): the caller's, read at
 * init.  Zero what you do not set (a C99 initializer, or a memset).
 */
struct tb_bridge_config {
	/* the ring to drain; NULL: fed by tb_bridge_view() alone */
	const struct tb_ring *ring;
	void *scratch;			/* the reader's: chunk_size bytes */
	uint16_t producer_id;		/* not 0 */
	struct tb_buf_ident ident;	/* the producer's trusted identity */
	struct tb_buf *const *bufs;	/* by target BufferID; NULL: unknown */
	unsigned nbufs;
	tb_buf_alloc_fn alloc;		/* the key table's; NULL: malloc */
	void *alloc_ctx;
};

struct tb_bridge {
	/*
	 * First, and beside the reader's cursor that follows: all a pass
	 * over an idle ring reads (tb_bridge_quiet()), in one or two cache
	 * lines of the bridge besides the ring's write_pos.
	 */
	int error;			/* TB_EPROTO, or the service's TB_EPINNED */
	const uint32_t *write_pos;	/* the ring's, in shared memory */
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
	uint32_t epoch;			/* tb_bridge_lost_any() calls, not 0 */
	uint64_t stat[TB_BS_MAX];
};

/*
 * Sets up a bridge as @cfg says: over cfg->ring, for producer
 * cfg->producer_id.  Without a ring (and then without scratch), the
 * bridge is fed by tb_bridge_view() alone (a byte link, a file) and
 * tb_bridge_drain() refuses it: TB_EINVAL.  TB_EINVAL for a bad
 * configuration, TB_EID for producer 0.
 */
static inline int tb_bridge_init(struct tb_bridge *br,
				 const struct tb_bridge_config *cfg)
{
	tb_buf_alloc_fn alloc = cfg ? cfg->alloc : NULL;
	int ret;

	if (!br || !cfg)
		return TB_EINVAL;
	TB_MEMSET(br, 0, sizeof(*br));
#ifndef TB_BUF_NO_DEFAULT_ALLOC
	if (!alloc)
		alloc = tb_buf_default_alloc;
#endif
	if (!alloc || (!cfg->bufs && cfg->nbufs) ||
	    (!cfg->ring && cfg->scratch))
		return TB_EINVAL;
	if (!cfg->producer_id)
		return TB_EID;	/* its sequence ids would be the service's */
	if (cfg->ring) {
		ret = tb_reader_init(&br->reader, cfg->ring, cfg->scratch);
		if (ret)
			return ret;
		br->write_pos = &cfg->ring->hdr->write_pos;
	} else {
		br->error = TB_EINVAL;	/* no ring to drain */
	}
	br->producer_id = cfg->producer_id;
	br->ident = cfg->ident;
	br->bufs = cfg->bufs;
	br->nbufs = cfg->nbufs;
	br->alloc = alloc;
	br->alloc_ctx = cfg->alloc_ctx;
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
/* Doubles the table: false (and counted why) when it cannot. */
static inline bool tb__bridge_grow(struct tb_bridge *br)
{
	uint32_t cap = br->keys_cap ? br->keys_cap * 2 : 16, i;
	struct tb__bridge_key *keys;

	if (br->keys_n >= TB_BRIDGE_MAX_KEYS) {
		br->stat[TB_BS_TOO_MANY_KEYS]++;
		return false;
	}
	keys = (struct tb__bridge_key *)br->alloc(br->alloc_ctx, NULL, 0,
						   (size_t)cap * sizeof(*keys));
	if (!keys) {
		br->stat[TB_BS_KEYS_NOMEM]++;
		return false;
	}
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

/* The entry of {writer, BufferID}, made on first use; NULL: table full. */
static inline struct tb__bridge_key *tb__bridge_key_of(struct tb_bridge *br,
							uint16_t writer,
							uint16_t bid)
{
	uint32_t key = (uint32_t)writer << 16 | bid;
	struct tb__bridge_key *k;

	if (br->keys_cap) {
		k = tb__bridge_slot(br->keys, br->keys_cap, key);
		if (k->used)
			return k;
	}
	/* keep the table at most half full */
	if ((br->keys_n + 1) * 2 > br->keys_cap && !tb__bridge_grow(br))
		return NULL;
	k = tb__bridge_slot(br->keys, br->keys_cap, key);
	k->key = key;
	k->next_id = 0;
	k->used = 1;
	k->loss = 0;
	k->epoch = 0;	/* a loss before it was seen may have been its */
	br->keys_n++;
	return k;
}

/*
 * A chunk of @v->writer's was lost in the ring (a lost view): the next
 * chunk of that writer's sequence into its buffer carries the data-loss
 * flag and follows a gap in its chunk ids, so the buffer never joins
 * the start of a packet before the lost chunk to the tail of another
 * after it.  A malformed chunk names its buffer; a chunk of another format
 * does not, so every buffer the writer wrote to hears of it (a lookup per
 * known BufferID: a hostile producer's lost chunks cost no table walk).
 */
static inline void tb__bridge_lost(struct tb_bridge *br,
				   const struct tb_chunk_view *v)
{
	struct tb__bridge_key *k;
	unsigned bid;

	br->stat[TB_BS_LOST]++;
	if (v->lost == TB_VIEW_MALFORMED) {
		k = tb__bridge_key_of(br, v->writer, v->bid);
		if (k) {	/* else counted by tb__bridge_grow() */
			k->loss = 1;
			k->next_id++;	/* it had an id: a gap, no chain */
		}
		return;
	}
	for (bid = 0; br->keys_cap && bid < br->nbufs; bid++) {
		k = tb__bridge_slot(br->keys, br->keys_cap,
				    (uint32_t)v->writer << 16 | bid);
		if (k->used) {	/* only buffers it wrote to */
			k->loss = 1;
			k->next_id++;
		}
	}
}

/* Reader callback: one emitted chunk into its central buffer. */
static inline void tb__bridge_chunk(void *ctx, const struct tb_chunk_view *v)
{
	struct tb_bridge *br = (struct tb_bridge *)ctx;
	struct tb_buf *buf = v->bid < br->nbufs ? br->bufs[v->bid] : NULL;
	struct tb_buf_chunk_in in;
	struct tb__bridge_key *k;
	int ret;

	if (v->lost) {
		tb__bridge_lost(br, v);
		return;
	}
	if (!buf) {
		br->stat[TB_BS_BAD_TARGET]++;
		return;
	}
	k = tb__bridge_key_of(br, v->writer, v->bid);
	if (!k)
		return;		/* counted by tb__bridge_grow() */
	if (k->epoch != br->epoch) {
		/* a loss no writer was named for: it may have been ours */
		k->epoch = br->epoch;
		k->loss = 1;
		k->next_id++;	/* the buffer sees the gap: no chain across */
	}
	TB_MEMSET(&in, 0, sizeof(in));
	in.producer_id = br->producer_id;
	in.ident = br->ident;
	in.writer_id = v->writer;
	in.chunk_id = k->next_id++;
	in.flags = (uint8_t)((v->flags & TB_F_CONT_PREV ? TB_BUF_FIRST_CONT :
			      0) |
			     (v->flags & TB_F_CONT_NEXT ? TB_BUF_LAST_CONT : 0));
	/* a scraped prefix is final too: the suffix moves to a new chunk */
	in.complete = true;
	if (v->flags & TB_F_DATA_LOSS || k->loss) {
		in.flags |= TB_BUF_DATA_LOSS;	/* read back as SMB_FULL */
		br->stat[TB_BS_LOSS_FLAGS]++;
		k->loss = 0;
	}
	/* a refused chunk still used its id: the buffer sees the gap */
	ret = tb_buf_copy_packed(buf, &in, v->payload, v->sizes, v->nfrags);
	if (ret) {
		br->stat[TB_BS_REJECTED]++;
		br->stat[tb__bridge_rejected(ret)]++;
	} else {
		br->stat[TB_BS_CHUNKS]++;
	}
}

/*
 * Drains up to @max positions of the ring into the central buffers and
 * says why it stopped, as tb_reader_drain() (*@resolved, may be NULL, gets
 * the positions resolved), or why the ring is retired, for good (later
 * calls return it at once and touch nothing): TB_EPROTO when the ring
 * broke the protocol.  A ring whose every chunk is pinned
 * (tb_reader_pinned(&br->reader)) is not retired here: writers that are
 * only slow or idle unpin it when they next write, so only time tells a
 * dead one (the service retires such a ring once it stayed pinned for
 * pin_ms, with TB_EPINNED).
 */
static inline int tb_bridge_drain(struct tb_bridge *br, unsigned max,
				  enum tb_read_mode mode, unsigned *resolved)
{
	int ret;

	if (resolved)
		*resolved = 0;
	if (br->error)
		return br->error;
	ret = tb_reader_drain(&br->reader, max, mode, tb__bridge_chunk, br,
			      resolved);
	if (ret < 0)
		br->error = ret;
	return ret;
}

/* ------------------------------------------------------------------------
 * Chunk views that come from elsewhere than a ring in this process's
 * memory: a byte link (tblink.h), a file.
 */

/*
 * One chunk view into its central buffer, as if a ring's reader had
 * emitted it (a bridge set up without a ring takes all its chunks so):
 * what the view promises is the reader's (tb_chunk_view's comment); the
 * buffer validates the fragments themselves.
 */
static inline void tb_bridge_view(struct tb_bridge *br,
				  const struct tb_chunk_view *v)
{
	tb__bridge_chunk(br, v);
}

/*
 * Chunks were lost and nobody knows whose (a byte link lost frames): the
 * next chunk of every sequence, known now or first seen later, carries
 * the data-loss flag and follows a gap in its chunk ids, so the buffer
 * never joins a packet across the loss.  O(1): each sequence compares
 * an epoch when its next chunk comes.
 */
static inline void tb_bridge_lost_any(struct tb_bridge *br)
{
	if (!++br->epoch)
		br->epoch = 1;	/* 0 is a fresh sequence's */
}

/*
 * tb_reader_idle() of the bridge's reader, or true once it is retired.
 * Call between tb_bell_prepare() and tb_bell_wait().
 */
static inline bool tb_bridge_idle(const struct tb_bridge *br)
{
	return br->error || tb_reader_idle(&br->reader);
}

/*
 * True when a lazy tb_bridge_drain() now would resolve nothing and change
 * nothing (tb_reader_quiet()), or the bridge is retired, so a service may
 * skip it: one shared load, write_pos, beside the bridge's first lines
 * for a ring with nothing held, the held chunk's word besides for one
 * stopped before it.  Like the drain, it may miss a reservation made just
 * now; the next pass sees it, and a service checks tb_bridge_idle()
 * after tb_bell_prepare() before it sleeps.
 */
static inline bool tb_bridge_quiet(const struct tb_bridge *br)
{
	/* relaxed: as in tb_reader_idle(); the state load there acquires */
	return br->error ||
	       tb_reader_quiet(&br->reader,
			       tb_atomic_load(br->write_pos, TB_RLX));
}

#ifdef __cplusplus
}
#endif

#endif /* TBBRIDGE_H */
