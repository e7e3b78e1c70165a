/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Copyright (c) 2026, tbring contributors.  BSD-2-Clause: see COPYING, or
 * https://opensource.org/license/bsd-2-clause for the text.
 *
 * tbuffer.h - the service's central trace buffer.
 *
 * One tb_buf holds the chunks committed by producers until a consumer reads
 * them back as whole packets.  It keeps the behaviour of Perfetto's
 * TraceBufferV2 (order, loss reasons, statistics) except where the list at
 * the end of this comment says otherwise:
 *
 *  - Storage is one flat buffer (its size rounded up to 4096).  Each chunk
 *    is a 16-byte record header followed by its payload, padded to 16
 *    bytes, written at a bump pointer.  Everything refers to chunks by
 *    offset, so a read-only clone is a copy plus metadata.
 *  - Chunks belong to sequences keyed by {producer, writer}.  A sequence
 *    keeps the offsets of its chunks sorted by chunk id (32-bit wrapping
 *    order), the last chunk id it consumed (for gap detection), the loss
 *    reasons not yet reported and the client identity of its first commit.
 *  - Reading walks the buffer in write order; at each chunk it rewinds to
 *    the head of that chunk's sequence, so packets of one sequence always
 *    come out in order.  Packets split across chunks are reassembled and
 *    returned as slices that point into the buffer (no copy).  A sequence
 *    whose next packet cannot be had yet (a chunk of it missing, waiting
 *    for patches, or scraped while still being written) stalls until the
 *    next read batch; other sequences go on.
 *  - Loss reasons (TB_BUF_LOSS_*) gather per sequence and are reported on
 *    the next packet read from that sequence, then cleared.
 *  - In RING_BUFFER mode a write deletes the oldest chunks in buffer
 *    order, consuming first whatever of their sequences comes before them.
 *    Nothing stalls a deletion: a packet that cannot be completed is lost
 *    (OVERWRITE) together with every fragment gathered for it, in later
 *    chunks too, and is never handed out.  As in V2, nothing is gathered
 *    after a Begin whose chunk still waits for patches: the packet's later
 *    fragments stay, and are read (or erased) as orphans.  Complete packets are
 *    reconstructed in order for an optional callback; without one only the
 *    accounting is done.
 *  - A chunk counts as read, or as overwritten, when its last unread
 *    fragment is consumed by a read, or by a deletion.  A chunk that was
 *    empty, emptied before, or left with bytes that no longer tokenize
 *    (after a bad patch) counts as neither.
 *  - DISCARD mode latches on the first write that does not fit and rejects
 *    all later writes, even after reads.
 *
 * Input is untrusted.  tb_buf_copy_chunk() takes a chunk payload in
 * Perfetto's shared-memory framing (each fragment a LEB128 length plus that
 * many bytes, see tbpb.h); tb_buf_copy_frags() takes a fragment vector and
 * frames it while copying.  A lying producer gets an error code and an ABI
 * violation count and loses at most its own chunk; nothing it sends can
 * make the buffer read or write out of bounds, loop forever or disturb
 * another sequence.
 *
 * Threading: one service thread owns a tb_buf.  Nothing is thread-safe and
 * nothing is re-entrant: the overwrite callback must not call back into the
 * buffer it came from (such calls fail with TB_EBUSY).  A read batch is
 * tb_buf_begin_read() followed by tb_buf_read_packet() until it returns
 * false; any write or patch ends the batch (read_packet then returns false
 * until the next begin_read).  Slices stay valid until the next call that
 * writes to the buffer.
 *
 * Limits: buffer size 4096 bytes to TB_BUF_MAX_SIZE (offsets are 32-bit);
 * chunk payloads up to 65535 bytes (an incomplete chunk reserves its whole
 * payload); writer id 0 is invalid; the chunk ids one sequence holds at a
 * time must lie within TB_BUF_ID_WINDOW of each other.  Memory comes from
 * one allocator hook (tb_buf_alloc_fn): the buffer itself, the sequence
 * table, one index ring per sequence (grown by doubling) and a slice array
 * (grown when a packet spans more chunks than ever before).  Nothing is
 * allocated per chunk.
 *
 * Where this deliberately differs from TraceBufferV2, and why:
 *  - Writer id 0 is an ABI violation (TB_EBADID), and so is a chunk id
 *    that would spread one sequence's chunks over TB_BUF_ID_WINDOW or more:
 *    beyond that, wrapping comparison stops being a total order.
 *  - Chunk flag 0x08 (TB_BUF_DATA_LOSS), meaningless to V2, says that the
 *    producer lost data before this chunk.  Perfetto's writers mark such a
 *    loss inside their next packet; a tbring.h writer has no packet to mark
 *    and flags its next chunk instead, which the bridge passes on here.
 *    The first read or deletion that reaches the chunk records PRESENT |
 *    SMB_FULL, once; V2 itself never records SMB_FULL.
 *  - A recommit or re-admission whose fragments no longer end where reading
 *    stopped is refused (TB_ERECOMMIT), where V2 would go on reading
 *    from the middle of a fragment.  The refused chunk stays as it was: a
 *    scraped one stays incomplete, so its sequence stays stalled at it
 *    until it is overwritten or validly recommitted.
 *  - READ_GAP is checked when reading first reaches a sequence's head
 *    chunk, so it is reported once.  V2 checks at the start of every walk
 *    into the sequence: a head chunk that was partly read and then stalled
 *    reports the same gap again on the first packet of a later read.
 *  - A walk that rewinds through chunks committed out of order (or
 *    relocated) and steps over a missing chunk id reports READ_GAP there;
 *    V2 reports no gap for it.
 *  - Whether a reassembly meets a gap depends only on the ids of the chunks
 *    it spans.  In V2, once a walk has stepped over a missing id, every
 *    later reassembly in that walk fails as REASSEMBLY_GAP, contiguous or
 *    not, and drops a complete packet.
 *  - If making room consumed a sequence past the chunk being written
 *    (possible only for a chunk committed out of order or relocated), the
 *    chunk is dropped (TB_ESTALE, counted in chunks_discarded, OVERWRITE
 *    recorded) so its sequence stays in order.  V2 checks for a consumed id
 *    only before making room, stores the chunk and reads it after packets
 *    that followed it.
 *  - Failures that V2 turns into a process abort are results here: a write
 *    or patch to a read-only buffer fails with TB_EROFS; a chunk that
 *    needs more memory than the allocator gives is dropped (TB_ENOMEM);
 *    a packet whose slices do not fit in the slice array and cannot get a
 *    bigger one is dropped, recorded as PRESENT alone.
 *  - Packets handed to the overwrite callback carry loss 0: pending loss
 *    bits stay with the sequence for its next packet read.  No per-writer
 *    histogram of chunk sizes is kept.
 */
#ifndef TBUFFER_H
#define TBUFFER_H
#define TBUFFER_H_VERSION 200	/* tbbase.h: TBRING_VERSION */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifndef TB_BUF_NO_DEFAULT_ALLOC
#include <stdlib.h>
#endif

#include "tbpb.h"

/* Headers of one release only: a mixed copy does not compile. */
#if TBPB_H_VERSION != TBUFFER_H_VERSION
#error "tbuffer.h needs the tbpb.h of its own release"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Public constants --------------------------------------------------- */

/* Chunk flags, as in Perfetto's shared-memory ABI. */
#define TB_BUF_FIRST_CONT	0x01u	/* first fragment continues a packet */
#define TB_BUF_LAST_CONT	0x02u	/* last fragment continues on next */
#define TB_BUF_NEEDS_PATCH	0x04u	/* chunk waits for patches */
#define TB_BUF_ABI_FLAGS	0x07u
#define TB_BUF_DATA_LOSS	0x08u	/* producer lost data before it */

/* Why packets were lost before a packet (Perfetto's DataLossReason). */
#define TB_BUF_LOSS_PRESENT			0x001u
#define TB_BUF_LOSS_READ_GAP			0x002u
#define TB_BUF_LOSS_CHUNK_CORRUPTED		0x004u
#define TB_BUF_LOSS_ORPHAN_CONTINUATION		0x008u
#define TB_BUF_LOSS_REASSEMBLY_GAP		0x010u
#define TB_BUF_LOSS_REASSEMBLY_BROKEN_CHAIN	0x020u
#define TB_BUF_LOSS_OVERWRITE			0x040u
#define TB_BUF_LOSS_WRITER_ABORT		0x080u
#define TB_BUF_LOSS_SMB_FULL			0x100u	/* producers only */

#define TB_BUF_PAGE		4096u
#define TB_BUF_MAX_SIZE		0xfffff000u
#define TB_BUF_MAX_PAYLOAD	0xffffu
#define TB_BUF_PATCH_SIZE	4u
#define TB_BUF_ID_WINDOW	0x40000000u	/* max id span in a sequence */
/*
 * Empty sequences kept for what they remember (the last chunk read, for
 * gaps and for re-admitting an evicted scraped chunk); once more than
 * TB_BUF_GC_THRESHOLD are empty, the oldest are swept.  Overridable (the
 * fuzzer sweeps often with a small table).
 */
#ifndef TB_BUF_KEEP_EMPTY_SEQ
#define TB_BUF_KEEP_EMPTY_SEQ	1024u
#endif
#define TB_BUF_GC_THRESHOLD	(TB_BUF_KEEP_EMPTY_SEQ + 128u)

enum tb_buf_policy {
	TB_BUF_RING_BUFFER = 0,	/* overwrite the oldest chunks */
	TB_BUF_DISCARD = 1,	/* stop at the first write that does not fit */
};

/*
 * The one allocator hook: allocate (@ptr NULL), resize or free
 * (@new_size 0) a block, like Lua's lua_Alloc.  Memory must be aligned for
 * any object (16 bytes).  Returns NULL on failure (or after freeing).
 */
typedef void *(*tb_buf_alloc_fn)(void *ctx, void *ptr, size_t old_size,
				 size_t new_size);

/* Who wrote a sequence: taken from the commit that created it. */
struct tb_buf_ident {
	uint32_t uid;
	int32_t pid;
};

/* One committed chunk as the service received it. */
struct tb_buf_chunk_in {
	uint16_t producer_id;		/* trusted */
	struct tb_buf_ident ident;	/* trusted */
	uint16_t writer_id;
	uint32_t chunk_id;
	uint16_t nfrags;		/* tb_buf_copy_chunk() only */
	uint8_t flags;			/* TB_BUF_FIRST_CONT, ... DATA_LOSS */
	bool complete;			/* false: scraped while being written */
	const void *payload;		/* tb_buf_copy_chunk() only */
	size_t size;
};

/* One unframed fragment for tb_buf_copy_frags(). */
struct tb_buf_frag {
	const void *data;
	uint32_t size;			/* TB_PB_SIZE_ABORT: writer abort */
};

/* A 4-byte patch at an offset of a chunk payload. */
struct tb_buf_patch {
	uint32_t offset;
	uint8_t data[TB_BUF_PATCH_SIZE];
};

struct tb_buf_slice {
	const uint8_t *data;
	size_t size;
};

/* A packet read back (or overwritten): slices into the buffer. */
struct tb_buf_packet {
	const struct tb_buf_slice *slices;
	unsigned nslices;
	size_t size;			/* sum of the slice sizes */
	uint16_t producer_id;
	uint16_t writer_id;
	struct tb_buf_ident ident;
	uint32_t loss;			/* TB_BUF_LOSS_* since last packet */
};

/* Called for each packet destroyed by an overwrite, in sequence order. */
typedef void (*tb_buf_overwrite_fn)(void *ctx,
				    const struct tb_buf_packet *pkt);

/* Perfetto's TraceStats.BufferStats. */
struct tb_buf_stats {
	uint64_t buffer_size;
	uint64_t bytes_written;
	uint64_t bytes_overwritten;
	uint64_t bytes_read;
	uint64_t padding_bytes_written;
	uint64_t padding_bytes_cleared;
	uint64_t chunks_written;
	uint64_t chunks_rewritten;
	uint64_t chunks_overwritten;
	uint64_t chunks_discarded;
	uint64_t chunks_read;
	uint64_t chunks_committed_out_of_order;
	uint64_t chunks_relocated;
	uint64_t write_wrap_count;
	uint64_t patches_succeeded;
	uint64_t patches_failed;
	uint64_t readaheads_succeeded;
	uint64_t readaheads_failed;
	uint64_t abi_violations;
	uint64_t trace_writer_packet_loss;
};

/* ---- Private layout ----------------------------------------------------- */

/*
 * The record header in front of every chunk in the buffer.  key 0 marks
 * padding (an erased chunk keeps its size, so the walk stays intact).
 * Unread payload is always the tail [payload_size - payload_avail,
 * payload_size).
 */
struct tb__buf_hdr {
	uint32_t id;
	uint32_t key;			/* producer << 16 | writer; 0: pad */
	uint16_t size;			/* reserved payload bytes */
	uint16_t payload_size;		/* valid payload bytes */
	uint16_t payload_avail;		/* unread payload bytes */
	uint8_t flags;			/* TB_BUF_* and TB__BUF_* flags */
	uint8_t spare;
};

#define TB__BUF_HDR		16u
#define TB__BUF_INCOMPLETE	0x80u
/*
 * No fragment of the chunk is empty and no patch touched it since its
 * bytes were measured: from any point reading stopped, its fragments
 * tokenize to payload_size.
 */
#define TB__BUF_PLAIN		0x40u

/* One entry of a sequence's index: chunk id and record offset. */
struct tb__buf_ref {
	uint32_t id;
	uint32_t off;
};

struct tb__buf_seq {
	uint32_t key;
	uint8_t used;
	uint8_t has_last;		/* last_* below are valid */
	uint8_t last_incomplete;
	uint8_t spare;
	uint32_t last_id;		/* last chunk consumed */
	uint32_t last_size;		/* its payload_size */
	uint32_t loss;			/* pending TB_BUF_LOSS_* bits */
	uint64_t skip_gen;		/* stalled in this read generation */
	uint64_t age;			/* when it became empty, for GC */
	struct tb_buf_ident ident;
	struct tb__buf_ref *ring;	/* sorted by id, circular */
	uint32_t cap;			/* power of two, or 0 */
	uint32_t head;
	uint32_t n;
};

/*
 * Why writes and patches are refused now (tb_buf.refuse), in one byte so
 * that the common case tests both at once.
 */
#define TB__BUF_IN_CB		0x01u	/* inside the overwrite callback */
#define TB__BUF_READ_ONLY	0x02u

struct tb_buf {
	uint8_t *data;
	uint32_t size;
	uint32_t used;			/* high-water mark of written bytes */
	uint32_t wr;			/* write cursor; may equal size */
	uint32_t pf;			/* making room prefetched up to here */
	uint8_t policy;
	uint8_t refuse;			/* TB__BUF_IN_CB, TB__BUF_READ_ONLY */
	uint8_t discard;		/* DISCARD latch */
	/* Read batch state. */
	uint8_t rd_valid;
	uint8_t inner;			/* walking a sequence towards target */
	uint32_t rd;
	uint32_t target;
	uint32_t inner_seq;		/* table slot of that sequence */
	uint32_t rpf;			/* reading prefetched up to here */
	uint64_t rd_walked;
	/*
	 * The run of padding at the start of the read order, as the last
	 * walk found it: [start, clean_pos), clean_len bytes, with the write
	 * cursor, used size and wrap count of then.  Only a write turns
	 * padding into a record, and only at the write cursor, which is the
	 * start: a later batch skips what is left of the run (see
	 * tb__buf_clean_start()).
	 */
	uint8_t rd_clean;		/* the walk has seen padding only */
	uint32_t clean_pos;
	uint32_t clean_len;
	uint32_t clean_wr;
	uint32_t clean_used;
	uint64_t clean_wraps;
	uint64_t gen;			/* read generation */
	/* Sequences: open addressing, linear probing. */
	struct tb__buf_seq *seqs;
	uint32_t seq_cap;
	uint32_t seq_n;
	uint32_t seq_shift;
	uint32_t nempty;
	uint64_t age;
	/*
	 * The sequence the last patch found and its key, or TB__BUF_NO_PKEY
	 * (no key) since the table moved.
	 */
	struct tb__buf_seq *pseq;
	uint64_t pkey;
	/* Slices of the packet being returned. */
	struct tb_buf_slice *slices;
	uint32_t slices_cap;
	uint32_t nslices;
	size_t pkt_size;
	tb_buf_alloc_fn alloc;
	void *alloc_ctx;
	tb_buf_overwrite_fn cb;
	void *cb_ctx;
	struct tb_buf_stats stats;
};

/* ---- Small helpers ------------------------------------------------------ */

/*
 * The fragment tokenizer runs for every fragment read, deleted or copied
 * in, and the common step of reading for every packet read: keep them in
 * line at each of their few call sites, and the rare slow paths out
 * (TB__COLD, tbbase.h).
 */
#if defined(__GNUC__)
#define TB__BUF_HOT	static inline __attribute__((always_inline))
#else
#define TB__BUF_HOT	static inline
#endif

#ifndef TB_BUF_NO_DEFAULT_ALLOC
/* The allocator used when none is given: realloc() and free(). */
static inline void *tb_buf_default_alloc(void *ctx, void *ptr, size_t old_size,
				       size_t new_size)
{
	(void)ctx;
	(void)old_size;
	if (!new_size) {
		free(ptr);
		return NULL;
	}
	return realloc(ptr, new_size);
}
#endif

static inline void *tb__buf_mem(const struct tb_buf *b, void *ptr,
				 size_t old_size, size_t new_size)
{
	return b->alloc(b->alloc_ctx, ptr, old_size, new_size);
}

/*
 * Wrapping chunk-id order: <0 if @a is before @b, 0 if equal, >0 after (a
 * comes after b when a - b, modulo 2^32, is below 2^31).
 */
static inline int tb_buf_id_cmp(uint32_t a, uint32_t b)
{
	if (a == b)
		return 0;
	return (a - b) & 0x80000000u ? -1 : 1;
}

static inline uint32_t tb__buf_outer(uint32_t payload)
{
	return (TB__BUF_HDR + payload + 15u) & ~15u;
}

static inline struct tb__buf_hdr *tb__buf_hdr_at(const struct tb_buf *b,
						   uint32_t off)
{
	return (struct tb__buf_hdr *)(void *)(b->data + off);
}

static inline uint8_t *tb__buf_payload(struct tb__buf_hdr *c)
{
	return (uint8_t *)(c + 1);
}

static inline uint32_t tb__buf_unread(const struct tb__buf_hdr *c)
{
	return (uint32_t)c->payload_size - c->payload_avail;
}

static inline uint32_t tb__buf_key(uint16_t producer, uint16_t writer)
{
	return (uint32_t)producer << 16 | writer;
}

/* Above every key: the patch cache (tb_buf.pkey) holds no sequence. */
#define TB__BUF_NO_PKEY	((uint64_t)1 << 32)

/* ---- Sequence table ----------------------------------------------------- */

static inline uint32_t tb__buf_slot(const struct tb_buf *b, uint32_t key)
{
	return (uint32_t)(key * 0x9e3779b1u) >> b->seq_shift;
}

static inline struct tb__buf_seq *tb__buf_seq_find(const struct tb_buf *b,
						     uint32_t key)
{
	uint32_t mask = b->seq_cap - 1, i = tb__buf_slot(b, key);

	for (;; i = (i + 1) & mask) {
		struct tb__buf_seq *s = &b->seqs[i];

		if (!s->used)
			return NULL;
		if (s->key == key)
			return s;
	}
}

static inline int tb__buf_table_alloc(struct tb_buf *b, uint32_t cap)
{
	uint32_t shift = 32, c;
	struct tb__buf_seq *t;

	for (c = cap; c > 1; c >>= 1)
		shift--;
	t = (struct tb__buf_seq *)tb__buf_mem(b, NULL, 0,
						(size_t)cap * sizeof(*t));
	if (!t)
		return TB_ENOMEM;
	TB_MEMSET(t, 0, (size_t)cap * sizeof(*t));
	b->seqs = t;
	b->seq_cap = cap;
	b->seq_shift = shift;
	b->pkey = TB__BUF_NO_PKEY;
	return TB_OK;
}

/* Places @s (not in the table) at its probe position. */
static inline struct tb__buf_seq *
tb__buf_table_put(struct tb_buf *b, const struct tb__buf_seq *s)
{
	uint32_t mask = b->seq_cap - 1, i = tb__buf_slot(b, s->key);

	while (b->seqs[i].used)
		i = (i + 1) & mask;
	b->seqs[i] = *s;
	return &b->seqs[i];
}

static inline int tb__buf_table_grow(struct tb_buf *b)
{
	struct tb__buf_seq *old = b->seqs;
	uint32_t old_cap = b->seq_cap, i;

	if (old_cap >= 0x40000000u)
		return TB_ELIMIT;
	if (tb__buf_table_alloc(b, old_cap * 2) != TB_OK) {
		b->seqs = old;
		b->seq_cap = old_cap;
		return TB_ENOMEM;
	}
	for (i = 0; i < old_cap; i++)
		if (old[i].used)
			tb__buf_table_put(b, &old[i]);
	tb__buf_mem(b, old, (size_t)old_cap * sizeof(*old), 0);
	return TB_OK;
}

/* Removes the sequence in slot @i (backward-shift deletion). */
static inline void tb__buf_table_del(struct tb_buf *b, uint32_t i)
{
	uint32_t mask = b->seq_cap - 1, j = i;
	struct tb__buf_seq *s = &b->seqs[i];

	if (s->ring)
		tb__buf_mem(b, s->ring, (size_t)s->cap * sizeof(*s->ring), 0);
	TB_MEMSET(s, 0, sizeof(*s));
	b->seq_n--;
	b->pkey = TB__BUF_NO_PKEY;	/* entries move back */
	for (;;) {
		uint32_t home;

		j = (j + 1) & mask;
		if (!b->seqs[j].used)
			return;
		home = tb__buf_slot(b, b->seqs[j].key);
		/* Leave j alone if its home lies cyclically in (i, j]. */
		if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
			continue;
		b->seqs[i] = b->seqs[j];
		TB_MEMSET(&b->seqs[j], 0, sizeof(b->seqs[j]));
		i = j;
	}
}

/* Finds or creates a sequence.  New ones start out empty. */
static inline struct tb__buf_seq *
tb__buf_seq_get(struct tb_buf *b, uint32_t key, const struct tb_buf_ident *id)
{
	struct tb__buf_seq *s = tb__buf_seq_find(b, key), n;

	if (s)
		return s;
	if ((b->seq_n + 1) * 2 > b->seq_cap && tb__buf_table_grow(b))
		return NULL;
	TB_MEMSET(&n, 0, sizeof(n));
	n.key = key;
	n.used = 1;
	n.ident = *id;
	n.age = ++b->age;
	b->seq_n++;
	b->nempty++;
	return tb__buf_table_put(b, &n);
}

/* ---- Per-sequence chunk index (sorted ring of {id, offset}) ------------- */

static inline struct tb__buf_ref *tb__buf_ref(const struct tb__buf_seq *s,
						uint32_t i)
{
	return &s->ring[(s->head + i) & (s->cap - 1)];
}

static inline struct tb__buf_hdr *tb__buf_chunk(const struct tb_buf *b,
						  const struct tb__buf_seq *s,
						  uint32_t i)
{
	return tb__buf_hdr_at(b, tb__buf_ref(s, i)->off);
}

/* Makes room for one more entry. */
static inline int tb__buf_ring_reserve(struct tb_buf *b,
					struct tb__buf_seq *s)
{
	uint32_t cap = s->cap ? s->cap * 2 : 8, i;
	struct tb__buf_ref *r;

	if (s->n < s->cap)
		return TB_OK;
	if (s->cap >= 0x10000000u)
		return TB_ELIMIT;
	r = (struct tb__buf_ref *)tb__buf_mem(b, NULL, 0,
						(size_t)cap * sizeof(*r));
	if (!r)
		return TB_ENOMEM;
	for (i = 0; i < s->n; i++)
		r[i] = *tb__buf_ref(s, i);
	if (s->ring)
		tb__buf_mem(b, s->ring, (size_t)s->cap * sizeof(*r), 0);
	s->ring = r;
	s->cap = cap;
	s->head = 0;
	return TB_OK;
}

/*
 * Index of the first entry whose id is not before @id (n if none).  Ids in
 * one ring span less than TB_BUF_ID_WINDOW, so they are totally ordered by
 * their distance from the head.
 */
static inline uint32_t tb__buf_ring_lower(const struct tb__buf_seq *s,
					   uint32_t id)
{
	uint32_t base, rel, lo = 0, hi = s->n;

	if (!s->n || tb_buf_id_cmp(id, tb__buf_ref(s, 0)->id) <= 0)
		return 0;
	if (tb_buf_id_cmp(id, tb__buf_ref(s, s->n - 1)->id) > 0)
		return s->n;
	base = tb__buf_ref(s, 0)->id;
	rel = id - base;
	/* Ids are usually consecutive: try the direct guess first. */
	if (rel < s->n && tb__buf_ref(s, rel)->id == id)
		return rel;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (tb__buf_ref(s, mid)->id - base < rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* tb__buf_ring_find() past its guesses: the search, out of line. */
TB__COLD const struct tb__buf_ref *
tb__buf_ring_search(const struct tb__buf_seq *s, uint32_t id)
{
	uint32_t i = tb__buf_ring_lower(s, id);

	return i < s->n && tb__buf_ref(s, i)->id == id ? tb__buf_ref(s, i)
						       : NULL;
}

/*
 * The entry of chunk @id in the sequence, or NULL.  A patch nearly always
 * comes for one of a writer's newest chunks, most often the newest itself:
 * that one is tried first, then the direct guess, then the search.
 */
static inline const struct tb__buf_ref *
tb__buf_ring_find(const struct tb__buf_seq *s, uint32_t id)
{
	const struct tb__buf_ref *r;
	uint32_t after, rel;

	if (!s->n)
		return NULL;
	r = tb__buf_ref(s, s->n - 1);
	/* From the last: 0 for it, the sign bit set before it (id_cmp). */
	after = id - r->id;
	if (!after)
		return r;
	/*
	 * Outside [first, last]: no such chunk (ids span < 2^31).  After the
	 * last first: a patch that comes too early needs no more loads.
	 */
	if (!(after & 0x80000000u))
		return NULL;
	rel = id - tb__buf_ref(s, 0)->id;
	if (rel & 0x80000000u)
		return NULL;
	if (rel < s->n && tb__buf_ref(s, rel)->id == id)
		return tb__buf_ref(s, rel);
	return tb__buf_ring_search(s, id);
}

static inline void tb__buf_ring_insert(struct tb__buf_seq *s, uint32_t pos,
					uint32_t id, uint32_t off)
{
	uint32_t i;

	if (pos == 0 && s->n) {
		s->head = (s->head - 1) & (s->cap - 1);
	} else {
		for (i = s->n; i > pos; i--)
			*tb__buf_ref(s, i) = *tb__buf_ref(s, i - 1);
	}
	tb__buf_ref(s, pos)->id = id;
	tb__buf_ref(s, pos)->off = off;
	s->n++;
}

/* ---- Fragments ---------------------------------------------------------- */

enum {
	TB__BUF_WHOLE,
	TB__BUF_BEGIN,
	TB__BUF_CONT,
	TB__BUF_END,
};

struct tb__buf_frag {
	uint32_t off;			/* of its varint header */
	uint32_t len;			/* header + data */
	const uint8_t *data;
	uint32_t size;			/* data bytes */
	int type;
};

/* tb__buf_frag_next() for a length of three bytes or more, or a bad one. */
TB__COLD int tb__buf_frag_slow(const uint8_t *p, uint32_t size,
				   uint32_t off, uint32_t *len, uint32_t *next)
{
	struct tb_pb_frags it;
	const uint8_t *d;
	uint32_t v;
	int r;

	tb_pb_frags_init(&it, p, size, off);
	r = tb_pb_frags_next(&it, &d, &v);
	if (r == TB_PB_FRAG_OK) {
		*len = v;
		*next = it.off;
	}
	return r;
}

/*
 * tb_pb_frags_next() on the @size bytes at @p from offset @off, with the
 * one- and two-byte lengths nearly every fragment has decoded in line.
 * The same results: on TB_PB_FRAG_OK *@len gets the data bytes and *@next
 * the offset after the fragment; otherwise neither is touched.
 */
TB__BUF_HOT int tb__buf_frag_next(const uint8_t *p, uint32_t size,
				  uint32_t off, uint32_t *len, uint32_t *next)
{
	uint32_t avail, v, n = 1;

	if (off >= size)
		return TB_PB_FRAG_END;
	avail = size - off;
	v = p[off];
	if (v >= 0x80u) {
		if (avail < 2 || p[off + 1] >= 0x80u) {
			/* Locals, so *@len and *@next stay in registers. */
			uint32_t l, nx;
			int r = tb__buf_frag_slow(p, size, off, &l, &nx);

			if (r == TB_PB_FRAG_OK) {
				*len = l;
				*next = nx;
			}
			return r;
		}
		v = (v & 0x7fu) | (uint32_t)p[off + 1] << 7;
		n = 2;
	}
	if (v > avail - n)
		return TB_PB_FRAG_BAD;
	*len = v;
	*next = off + n + v;
	return TB_PB_FRAG_OK;
}

/*
 * Tokenizes the fragment of chunk @c at payload offset @off and derives its
 * type from its position and the chunk flags.  Returns a TB_PB_FRAG_*
 * status (TB_PB_FRAG_OK when @f is filled).
 */
TB__BUF_HOT int tb__buf_frag_at(struct tb__buf_hdr *c, uint32_t off,
				struct tb__buf_frag *f)
{
	uint32_t next;
	bool first, last;
	int r;

	r = tb__buf_frag_next(tb__buf_payload(c), c->payload_size, off,
			      &f->size, &next);
	if (r != TB_PB_FRAG_OK)
		return r;
	f->off = off;
	f->len = next - off;
	f->data = tb__buf_payload(c) + next - f->size;
	first = off == 0;
	last = next >= c->payload_size;
	if (last && (c->flags & TB_BUF_LAST_CONT))
		f->type = first && (c->flags & TB_BUF_FIRST_CONT) ?
			  TB__BUF_CONT : TB__BUF_BEGIN;
	else if (first && (c->flags & TB_BUF_FIRST_CONT))
		f->type = TB__BUF_END;
	else
		f->type = TB__BUF_WHOLE;
	return TB_PB_FRAG_OK;
}

/* ---- Reading and erasing in sequence order ------------------------------ */

/* Marks @n bytes of @c consumed; counts the chunk when it empties. */
static inline void tb__buf_consume(struct tb_buf *b, struct tb__buf_hdr *c,
				    uint32_t n, bool erase)
{
	uint32_t outer = tb__buf_outer(c->size);

	TB_BUG_ON(n > c->payload_avail);
	if (n > c->payload_avail)
		n = c->payload_avail;
	if (!n)
		return;
	c->payload_avail = (uint16_t)(c->payload_avail - n);
	if (c->payload_avail)
		return;
	if (erase) {
		b->stats.chunks_overwritten++;
		b->stats.bytes_overwritten += outer;
	} else {
		b->stats.chunks_read++;
		b->stats.bytes_read += outer;
	}
}

/*
 * A sequence's head chunk is about to be read for the first time: report
 * the producer's own loss before it (TB_BUF_DATA_LOSS, once) and a gap to
 * the last chunk consumed.  A head that was already partly read was
 * checked before, so a gap is reported once.  A re-admitted chunk carries
 * the id of the last one consumed and is no gap; it gets here only when
 * nothing of it had been consumed (an evicted or relocated scraped chunk
 * that stored no fragment), otherwise it counts as partly read.
 */
static inline void tb__buf_gap_check(const struct tb_buf *b,
				      struct tb__buf_seq *s)
{
	struct tb__buf_hdr *c;

	if (!s->n)
		return;
	c = tb__buf_chunk(b, s, 0);
	if (c->payload_avail != c->payload_size)
		return;
	if (c->flags & TB_BUF_DATA_LOSS) {
		s->loss |= TB_BUF_LOSS_PRESENT | TB_BUF_LOSS_SMB_FULL;
		c->flags &= (uint8_t)~TB_BUF_DATA_LOSS;
	}
	if (!s->has_last)
		return;
	if (c->id == s->last_id + 1 || c->id == s->last_id)
		return;
	s->loss |= TB_BUF_LOSS_PRESENT | TB_BUF_LOSS_READ_GAP;
}

/* Removes the head chunk: remembered as consumed, record becomes padding. */
static inline void tb__buf_erase_head(struct tb_buf *b,
				       struct tb__buf_seq *s)
{
	struct tb__buf_hdr *c = tb__buf_chunk(b, s, 0);

	s->has_last = 1;
	s->last_id = c->id;
	s->last_size = c->payload_size;
	s->last_incomplete = !!(c->flags & TB__BUF_INCOMPLETE);
	s->head = (s->head + 1) & (s->cap - 1);
	s->n--;
	c->key = 0;
	c->flags = 0;
	c->payload_avail = 0;
	if (!s->n) {
		s->age = ++b->age;
		b->nempty++;
	}
}

static inline bool tb__buf_slices_reserve(struct tb_buf *b, uint32_t n)
{
	uint32_t cap = b->slices_cap;
	struct tb_buf_slice *p;

	if (n <= cap)
		return true;
	while (cap < n)
		cap *= 2;
	p = (struct tb_buf_slice *)tb__buf_mem(b, b->slices,
			(size_t)b->slices_cap * sizeof(*p),
			(size_t)cap * sizeof(*p));
	if (!p)
		return false;
	b->slices = p;
	b->slices_cap = cap;
	return true;
}

static inline void tb__buf_add_slice(struct tb_buf *b,
				      const struct tb__buf_frag *f)
{
	if (!f->size)
		return;
	b->slices[b->nslices].data = f->data;
	b->slices[b->nslices].size = f->size;
	b->nslices++;
	b->pkt_size += f->size;
}

enum {
	TB__BUF_RA_OK,
	TB__BUF_RA_WAIT,		/* not enough data (yet) */
	TB__BUF_RA_LOSS,		/* gave up; reason in *loss */
};

/*
 * Collecting: walks the chunks after the head chunk @c of @s read-only,
 * from the Begin that ends @c, to the End that completes the packet.
 * Returns TB__BUF_RA_OK when it found the End, TB__BUF_RA_WAIT when a
 * chunk of the chain may still come (missing at the end, or waiting for
 * patches), TB__BUF_RA_LOSS with the reason in *@loss when the chain is
 * broken.  *@nfrags gets the fragments found, *@end the index of the last
 * chunk collected (the End's chunk, no other that stopped the walk).
 */
static inline int tb__buf_ra_collect(const struct tb_buf *b,
				      const struct tb__buf_seq *s,
				      const struct tb__buf_hdr *c,
				      uint32_t *nfrags, uint32_t *end,
				      uint32_t *loss)
{
	uint32_t prev = c->id, i, found = 1;
	bool unpatched = c->flags & TB_BUF_NEEDS_PATCH;
	int res = TB__BUF_RA_WAIT;

	for (i = 1; !unpatched && i < s->n; i++) {
		struct tb__buf_hdr *n = tb__buf_chunk(b, s, i);
		struct tb__buf_frag nf;
		int r;

		if (n->flags & TB_BUF_NEEDS_PATCH)
			break;
		if (n->id != prev + 1) {
			*loss = TB_BUF_LOSS_REASSEMBLY_GAP;
			res = TB__BUF_RA_LOSS;
			break;
		}
		prev = n->id;
		r = tb__buf_frag_at(n, tb__buf_unread(n), &nf);
		if (r == TB_PB_FRAG_BAD) {
			*loss = TB_BUF_LOSS_CHUNK_CORRUPTED;
			res = TB__BUF_RA_LOSS;
			break;
		}
		if (r != TB_PB_FRAG_OK)
			continue;	/* empty chunk inside the chain */
		if (nf.type == TB__BUF_CONT) {
			found++;
			continue;
		}
		if (nf.type == TB__BUF_END) {
			found++;
			res = TB__BUF_RA_OK;
			break;
		}
		*loss = TB_BUF_LOSS_REASSEMBLY_BROKEN_CHAIN;
		res = TB__BUF_RA_LOSS;
		break;
	}
	*nfrags = found;
	*end = res == TB__BUF_RA_OK ? i : i - 1;
	return res;
}

/*
 * Deciding what a collection @res of @nfrags fragments comes to: reading
 * waits for a chain that may still complete, erasing cannot (the packet
 * is lost to the overwrite), and a packet whose slices find no memory is
 * dropped (*@loss 0: recorded as PRESENT alone).
 */
static inline int tb__buf_ra_decide(struct tb_buf *b, int res, bool erase,
				     bool want, uint32_t nfrags,
				     uint32_t *loss)
{
	if (res == TB__BUF_RA_WAIT) {
		if (!erase)
			return res;
		*loss = TB_BUF_LOSS_OVERWRITE;
		return TB__BUF_RA_LOSS;
	}
	if (res == TB__BUF_RA_OK && want &&
	    !tb__buf_slices_reserve(b, nfrags)) {
		*loss = 0;		/* no memory to describe it: dropped */
		return TB__BUF_RA_LOSS;
	}
	return res;
}

/*
 * Consuming what was collected: the Begin @f of the head chunk @c and the
 * first fragment of chunks 1..@end, described as the packet's slices when
 * @want.  A chunk reached here is never a fresh head later (reading
 * starts inside it), so its own data-loss flag is reported now, with this
 * packet.
 */
static inline void tb__buf_ra_consume(struct tb_buf *b, struct tb__buf_seq *s,
				       struct tb__buf_hdr *c,
				       const struct tb__buf_frag *f,
				       uint32_t end, bool erase, bool want)
{
	uint32_t i;

	b->nslices = 0;
	b->pkt_size = 0;
	if (want)
		tb__buf_add_slice(b, f);
	tb__buf_consume(b, c, f->len, erase);
	for (i = 1; i <= end; i++) {
		struct tb__buf_hdr *n = tb__buf_chunk(b, s, i);
		struct tb__buf_frag nf;

		if (n->flags & TB_BUF_DATA_LOSS) {
			s->loss |= TB_BUF_LOSS_PRESENT | TB_BUF_LOSS_SMB_FULL;
			n->flags &= (uint8_t)~TB_BUF_DATA_LOSS;
		}
		if (tb__buf_frag_at(n, tb__buf_unread(n), &nf) !=
		    TB_PB_FRAG_OK)
			continue;
		if (want)
			tb__buf_add_slice(b, &nf);
		tb__buf_consume(b, n, nf.len, erase);
	}
}

/*
 * Reassembles the packet whose first fragment @f ends the head chunk @c,
 * walking the following chunks of the sequence read-only.  On success or
 * loss it consumes the fragments it collected (and on success fills the
 * slices when @want).  When more data may still come (a chunk of the chain
 * is missing or waits for patches) reading consumes nothing and waits,
 * but erasing cannot wait: the packet is lost to the overwrite, and every
 * fragment collected for it goes with the chunk being erased.  A Begin
 * whose own chunk waits for patches is not read ahead of at all, as in
 * TraceBufferV2: erasing takes the Begin alone, and the fragments after
 * it are read later as orphans (ORPHAN_CONTINUATION).
 */
static inline int tb__buf_reassemble(struct tb_buf *b, struct tb__buf_seq *s,
				      struct tb__buf_hdr *c,
				      const struct tb__buf_frag *f, bool erase,
				      bool want, uint32_t *loss)
{
	uint32_t nfrags, end;
	int res = tb__buf_ra_collect(b, s, c, &nfrags, &end, loss);

	res = tb__buf_ra_decide(b, res, erase, want, nfrags, loss);
	if (res == TB__BUF_RA_WAIT)
		return res;
	tb__buf_ra_consume(b, s, c, f, end, erase,
			   want && res == TB__BUF_RA_OK);
	return res;
}

static inline void tb__buf_fill_packet(const struct tb_buf *b,
					const struct tb__buf_seq *s,
					struct tb_buf_packet *p)
{
	p->slices = b->slices;
	p->nslices = b->nslices;
	p->size = b->pkt_size;
	p->producer_id = (uint16_t)(s->key >> 16);
	p->writer_id = (uint16_t)s->key;
	p->ident = s->ident;
}

/* Hands the packet in b->slices, destroyed by an overwrite, to the callback. */
static inline void tb__buf_emit(struct tb_buf *b, const struct tb__buf_seq *s)
{
	struct tb_buf_packet p;

	TB_MEMSET(&p, 0, sizeof(p));
	tb__buf_fill_packet(b, s, &p);
	b->refuse |= TB__BUF_IN_CB;
	b->cb(b->cb_ctx, &p);
	b->refuse &= (uint8_t)~TB__BUF_IN_CB;
}

/*
 * The common step of reading, in line: the next fragment of the head chunk
 * of @s is a whole packet, not empty, and is taken as tb__buf_seq_next()
 * would take it.  False, with nothing done, when it is anything else.
 */
TB__BUF_HOT bool tb__buf_read_whole(struct tb_buf *b, struct tb__buf_seq *s)
{
	struct tb__buf_hdr *c;
	struct tb__buf_frag f;

	if (!s->n || s->skip_gen == b->gen)
		return false;
	c = tb__buf_chunk(b, s, 0);
	if (tb__buf_frag_at(c, tb__buf_unread(c), &f) != TB_PB_FRAG_OK ||
	    f.type != TB__BUF_WHOLE || !f.size)
		return false;
	tb__buf_consume(b, c, f.len, false);
	b->nslices = 0;
	b->pkt_size = 0;
	tb__buf_add_slice(b, &f);
	return true;
}

/*
 * Erasing: consumes the run of whole packets that starts at payload offset
 * @off of the head chunk @c, up to the last fragment when that one begins
 * a packet, or to anything that does not tokenize.  Hands each packet that
 * is not empty to the callback when @want; without it the run is consumed
 * in one step, without a look at it when the chunk is TB__BUF_PLAIN.
 * Returns whether it destroyed any packet.
 */
static inline bool tb__buf_drop_wholes(struct tb_buf *b, struct tb__buf_seq *s,
				       struct tb__buf_hdr *c, uint32_t off,
				       bool want)
{
	const uint8_t *p = tb__buf_payload(c);
	uint32_t size = c->payload_size, start = off, len, next;
	bool begin = c->flags & TB_BUF_LAST_CONT, any = false;

	if (!want && (c->flags & (TB__BUF_PLAIN | TB_BUF_LAST_CONT)) ==
	    TB__BUF_PLAIN) {
		/* The run is the rest of the chunk, and not empty. */
		tb__buf_consume(b, c, size - off, true);
		return true;
	}
	while (tb__buf_frag_next(p, size, off, &len, &next) == TB_PB_FRAG_OK) {
		if (begin && next >= size)
			break;
		any |= len != 0;
		if (want) {
			tb__buf_consume(b, c, next - off, true);
			if (len) {
				b->slices[0].data = p + next - len;
				b->slices[0].size = len;
				b->nslices = 1;
				b->pkt_size = len;
				tb__buf_emit(b, s);
			}
		}
		off = next;
	}
	if (!want)
		tb__buf_consume(b, c, off - start, true);
	return any;
}

/*
 * Produces the next packet of sequence @s in sequence order, consuming
 * and erasing chunks from its head until the chunk at offset @target has
 * been erased.  Read mode stalls the sequence (for this read generation)
 * on an incomplete chunk or a packet that cannot be completed yet, and
 * returns true with the packet in b->slices.  Erase mode never stalls and
 * does not stop at a packet: it goes on to the target, handing each
 * complete packet to the callback when @want, and returns whether it
 * destroyed any.
 */
static inline bool tb__buf_seq_next(struct tb_buf *b, struct tb__buf_seq *s,
				     uint32_t target, bool erase, bool want)
{
	bool any = false;

	if (!erase && s->skip_gen == b->gen)
		return false;
	while (s->n) {
		struct tb__buf_hdr *c = tb__buf_chunk(b, s, 0);
		uint32_t off = tb__buf_ref(s, 0)->off, loss = 0;
		struct tb__buf_frag f;
		int r = tb__buf_frag_at(c, tb__buf_unread(c), &f);

		if (r != TB_PB_FRAG_OK) {
			/* No more fragments in this chunk. */
			if (r == TB_PB_FRAG_BAD)
				s->loss |= TB_BUF_LOSS_PRESENT |
					   TB_BUF_LOSS_CHUNK_CORRUPTED;
			if ((c->flags & TB__BUF_INCOMPLETE) && !erase) {
				s->skip_gen = b->gen;
				return false;
			}
			/*
			 * Bytes left here (a tail a patch made untokenizable)
			 * were neither read nor overwritten: not counted.
			 */
			tb__buf_erase_head(b, s);
			if (off == target)
				return any;
			tb__buf_gap_check(b, s);
			continue;
		}
		switch (f.type) {
		case TB__BUF_WHOLE:
			if (erase) {
				any |= tb__buf_drop_wholes(b, s, c, f.off,
							   want);
				break;
			}
			tb__buf_consume(b, c, f.len, false);
			if (!f.size)
				break;	/* empty packet: never returned */
			b->nslices = 0;
			b->pkt_size = 0;
			if (want)
				tb__buf_add_slice(b, &f);
			return true;
		case TB__BUF_CONT:
		case TB__BUF_END:
			/* Its beginning is gone. */
			s->loss |= TB_BUF_LOSS_PRESENT |
				   TB_BUF_LOSS_ORPHAN_CONTINUATION;
			tb__buf_consume(b, c, f.len, erase);
			break;
		default:
			r = tb__buf_reassemble(b, s, c, &f, erase, want,
						&loss);
			if (r == TB__BUF_RA_OK) {
				b->stats.readaheads_succeeded++;
				if (!erase)
					return true;
				any = true;
				if (want)
					tb__buf_emit(b, s);
				break;
			}
			b->stats.readaheads_failed++;
			if (r == TB__BUF_RA_WAIT) {
				s->skip_gen = b->gen;
				return false;
			}
			s->loss |= TB_BUF_LOSS_PRESENT | loss;
			break;
		}
	}
	return any;
}

/*
 * Erases the chunk at @off, and before it every earlier chunk of its
 * sequence, handing each destroyed packet to the callback.
 */
static inline void tb__buf_overwrite(struct tb_buf *b, uint32_t off)
{
	struct tb__buf_hdr *c = tb__buf_hdr_at(b, off);
	struct tb__buf_seq *s = tb__buf_seq_find(b, c->key);

	TB_BUG_ON(!s);
	if (s) {
		tb__buf_gap_check(b, s);
		if (tb__buf_seq_next(b, s, off, true, b->cb != NULL))
			s->loss |= TB_BUF_LOSS_PRESENT | TB_BUF_LOSS_OVERWRITE;
	}
	/* The walk always erases its target; never leave a live record. */
	TB_BUG_ON(c->key);
	c->key = 0;
}

/*
 * Making room and reading walk the buffer in order, and what they walk is
 * cold: the oldest data.  Walking a record chases varint headers, each
 * position depending on the previous length, so cold lines would come in
 * one at a time.  Fetching ahead of the walk at @from, at least @n bytes
 * and TB__BUF_AHEAD, each cache line once (*@pf is how far that has gone),
 * lets the misses overlap, and overlap with the work on the chunks before
 * them: the deletion and the copy that follows it, or the packets read.
 */
#ifndef TB__BUF_AHEAD
#define TB__BUF_AHEAD	16384u
#endif

static inline void tb__buf_prefetch_ahead(const struct tb_buf *b,
					   uint32_t *pf, uint32_t from,
					   uint32_t n)
{
#if defined(__GNUC__)
	uint32_t span = n > TB__BUF_AHEAD ? n : TB__BUF_AHEAD, to, p;

	if (from >= b->used)
		return;
	to = b->used - from > span ? from + span : b->used;
	if (*pf < from || *pf - from > span + 64)
		*pf = from & ~63u;	/* wrapped, jumped or never started */
	for (p = *pf; p + 192 < to; p += 256) {
		__builtin_prefetch(b->data + p, 1);
		__builtin_prefetch(b->data + p + 64, 1);
		__builtin_prefetch(b->data + p + 128, 1);
		__builtin_prefetch(b->data + p + 192, 1);
	}
	for (; p < to; p += 64)
		__builtin_prefetch(b->data + p, 1);
	*pf = p;
#else
	(void)b;
	(void)pf;
	(void)from;
	(void)n;
#endif
}

/*
 * Clears [wr, wr + n) for a new record: every chunk starting there is
 * overwritten, and the part of the last one beyond the range becomes a
 * padding record.
 */
static inline void tb__buf_make_room(struct tb_buf *b, uint32_t n)
{
	uint32_t end = b->wr + n, off = b->wr;

	tb__buf_prefetch_ahead(b, &b->pf, off, n);
	while (off < end && off < b->used) {
		struct tb__buf_hdr *c = tb__buf_hdr_at(b, off);
		uint32_t outer = tb__buf_outer(c->size);

		if (!c->key)
			b->stats.padding_bytes_cleared += outer;
		else
			tb__buf_overwrite(b, off);
		off += outer;
	}
	if (off > end && off <= b->used) {
		struct tb__buf_hdr *p = tb__buf_hdr_at(b, end);

		TB_MEMSET(p, 0, sizeof(*p));
		p->size = (uint16_t)(off - end - TB__BUF_HDR);
		b->stats.padding_bytes_written += off - end;
	}
}

/* ---- Creation ----------------------------------------------------------- */

/*
 * Creates a buffer of @size bytes (rounded up to 4096) using @alloc (NULL:
 * the C library's realloc/free) and stores it in *@out, or NULL there when
 * it fails, with the cause: TB_ELIMIT when @size is over TB_BUF_MAX_SIZE,
 * TB_EINVAL for an unknown @policy, a NULL @out or no allocator at all
 * (a NULL @alloc under TB_BUF_NO_DEFAULT_ALLOC), TB_ENOMEM when the
 * allocator fails (nothing is left allocated).
 */
static inline int tb_buf_new(struct tb_buf **out, size_t size,
			     enum tb_buf_policy policy, tb_buf_alloc_fn alloc,
			     void *alloc_ctx)
{
	struct tb_buf *b;

	if (!out)
		return TB_EINVAL;
	*out = NULL;
#ifndef TB_BUF_NO_DEFAULT_ALLOC
	if (!alloc)
		alloc = tb_buf_default_alloc;
#endif
	if (!alloc ||
	    (policy != TB_BUF_RING_BUFFER && policy != TB_BUF_DISCARD))
		return TB_EINVAL;
	if (size > TB_BUF_MAX_SIZE)
		return TB_ELIMIT;
	size = size ? (size + TB_BUF_PAGE - 1) & ~(size_t)(TB_BUF_PAGE - 1)
		    : TB_BUF_PAGE;
	b = (struct tb_buf *)alloc(alloc_ctx, NULL, 0, sizeof(*b));
	if (!b)
		return TB_ENOMEM;
	TB_MEMSET(b, 0, sizeof(*b));
	b->alloc = alloc;
	b->alloc_ctx = alloc_ctx;
	b->size = (uint32_t)size;
	b->policy = (uint8_t)policy;
	b->gen = 1;
	b->stats.buffer_size = size;
	b->data = (uint8_t *)alloc(alloc_ctx, NULL, 0, size);
	b->slices_cap = 16;
	b->slices = (struct tb_buf_slice *)alloc(alloc_ctx, NULL, 0,
				(size_t)b->slices_cap * sizeof(*b->slices));
	if (!b->data || !b->slices || tb__buf_table_alloc(b, 16)) {
		if (b->data)
			alloc(alloc_ctx, b->data, size, 0);
		if (b->slices)
			alloc(alloc_ctx, b->slices, (size_t)b->slices_cap *
			      sizeof(*b->slices), 0);
		alloc(alloc_ctx, b, sizeof(*b), 0);
		return TB_ENOMEM;
	}
	*out = b;
	return TB_OK;
}

/* tb_buf_new() returning the buffer: NULL for any of its causes. */
static inline struct tb_buf *tb_buf_create_with(size_t size,
						enum tb_buf_policy policy,
						tb_buf_alloc_fn alloc,
						void *alloc_ctx)
{
	struct tb_buf *b;

	tb_buf_new(&b, size, policy, alloc, alloc_ctx);
	return b;
}

static inline struct tb_buf *tb_buf_create(size_t size,
					   enum tb_buf_policy policy)
{
	return tb_buf_create_with(size, policy, NULL, NULL);
}

static inline void tb_buf_destroy(struct tb_buf *b)
{
	uint32_t i;

	if (!b)
		return;
	for (i = 0; i < b->seq_cap; i++)
		if (b->seqs[i].ring)
			tb__buf_mem(b, b->seqs[i].ring, (size_t)b->seqs[i].cap
				     * sizeof(*b->seqs[i].ring), 0);
	tb__buf_mem(b, b->seqs, (size_t)b->seq_cap * sizeof(*b->seqs), 0);
	tb__buf_mem(b, b->slices, (size_t)b->slices_cap * sizeof(*b->slices),
		     0);
	tb__buf_mem(b, b->data, b->size, 0);
	tb__buf_mem(b, b, sizeof(*b), 0);
}

/* Sets (or with NULL clears) the callback for overwritten packets. */
static inline void tb_buf_on_overwrite(struct tb_buf *b, tb_buf_overwrite_fn fn,
				       void *ctx)
{
	b->cb = fn;
	b->cb_ctx = ctx;
}

static inline const struct tb_buf_stats *tb_buf_stats(const struct tb_buf *b)
{
	return &b->stats;
}

/* Makes the buffer read-only: later writes and patches fail (EROFS). */
static inline void tb_buf_set_read_only(struct tb_buf *b)
{
	b->refuse |= TB__BUF_READ_ONLY;
}

/* ---- Writing ------------------------------------------------------------ */

/*
 * Copies @n bytes, reading and writing only those: up to 64 bytes as two
 * overlapping copies of a constant size, which compile to a few moves,
 * where a call of memcpy costs more than the bytes (fragments and packets
 * are mostly a few dozen bytes); more by TB_MEMCPY.
 */
TB__BUF_HOT void tb__buf_copy_small(uint8_t *d, const uint8_t *s, size_t n)
{
	if (n > 64) {
		TB_MEMCPY(d, s, n);
	} else if (n >= 16) {
		if (n > 32) {
			TB_MEMCPY(d, s, 32);
			TB_MEMCPY(d + n - 32, s + n - 32, 32);
		} else {
			TB_MEMCPY(d, s, 16);
			TB_MEMCPY(d + n - 16, s + n - 16, 16);
		}
	} else if (n >= 4) {
		if (n >= 8) {
			TB_MEMCPY(d, s, 8);
			TB_MEMCPY(d + n - 8, s + n - 8, 8);
		} else {
			TB_MEMCPY(d, s, 4);
			TB_MEMCPY(d + n - 4, s + n - 4, 4);
		}
	} else {
		for (; n; n--)
			*d++ = *s++;
	}
}

/* The bytes of one incoming chunk: framed payload or fragment vector. */
struct tb__buf_src {
	const uint8_t *raw;
	const struct tb_buf_frag *vec;
	/* or fragments back to back at @packed, their sizes in @sizes */
	const uint8_t *packed;
	const uint16_t *sizes;
	uint32_t size;			/* raw bytes, or framed vector bytes */
	uint32_t nvec;			/* fragments in vec or sizes */
	/*
	 * A vector measured while it was checked (tb_buf_copy_frags()): what
	 * tb__buf_src_measure() gives for all nvec fragments and no stop.
	 */
	bool measured;
	bool pre_plain;
	int pre_st;
	uint32_t pre_all;
};

enum {
	TB__BUF_SRC_OK,
	TB__BUF_SRC_ABORT,		/* writer abort marker */
	TB__BUF_SRC_BAD,		/* ABI violation */
};

/*
 * Measures the first @nfrags fragments of @src, stopping early once @stop
 * bytes (if nonzero) are reached: *all gets the bytes of the fragments
 * accepted before the first fault, *plain whether none of them is empty.
 */
static inline int tb__buf_src_measure(const struct tb__buf_src *src,
				       uint32_t nfrags, uint32_t stop,
				       uint32_t *all, bool *plain)
{
	uint32_t off = 0, i, len, next, empty = 0;
	int r = TB_PB_FRAG_OK, st = TB__BUF_SRC_OK;

	if (src->measured && nfrags == src->nvec && !stop) {
		*all = src->pre_all;
		*plain = src->pre_plain;
		return src->pre_st;
	}
	if (src->raw) {
		for (i = 0; i < nfrags && (!stop || off < stop); i++) {
			r = tb__buf_frag_next(src->raw, src->size, off, &len,
					      &next);
			if (r != TB_PB_FRAG_OK)
				break;
			empty |= !len;
			off = next;
		}
		*all = off;
		*plain = !empty;
		if (r == TB_PB_FRAG_OK)
			return TB__BUF_SRC_OK;
		return r == TB_PB_FRAG_ABORT ? TB__BUF_SRC_ABORT :
		       TB__BUF_SRC_BAD;
	}
	for (i = 0; i < nfrags && (!stop || off < stop); i++) {
		uint32_t sz;

		if (i >= src->nvec) {
			st = TB__BUF_SRC_BAD;
			break;
		}
		sz = src->sizes ? src->sizes[i] : src->vec[i].size;
		if (sz == TB_PB_SIZE_ABORT) {
			st = TB__BUF_SRC_ABORT;
			break;
		}
		len = tb_pb_varint_len(sz) + sz;
		if (sz > TB_BUF_MAX_PAYLOAD || len > src->size - off) {
			st = TB__BUF_SRC_BAD;
			break;
		}
		empty |= !sz;
		off += len;
	}
	*all = off;
	*plain = !empty;
	return st;
}

/* Whether a fragment boundary of @src falls exactly at byte @at. */
static inline bool tb__buf_src_boundary(const struct tb__buf_src *src,
					 uint32_t nfrags, uint32_t at)
{
	uint32_t off;
	bool plain;

	if (!at)
		return true;
	tb__buf_src_measure(src, nfrags, at, &off, &plain);
	return off == at;
}

/* Copies the first @all bytes of @src, framed, to @dst. */
static inline void tb__buf_src_copy(const struct tb__buf_src *src,
				     uint8_t *dst, uint32_t all)
{
	uint32_t off = 0, i;

	if (src->raw) {
		if (all)
			TB_MEMCPY(dst, src->raw, all);
		return;
	}
	if (src->sizes) {
		const uint8_t *p = src->packed;

		for (i = 0; off < all && i < src->nvec; i++) {
			uint32_t sz = src->sizes[i];

			if (sz < 0x80u)
				dst[off++] = (uint8_t)sz;
			else
				off += tb_pb_varint_put(dst + off, sz);
			tb__buf_copy_small(dst + off, p, sz);
			off += sz;
			if (sz)		/* empty fragments may have no bytes */
				p += sz;
		}
		return;
	}
	for (i = 0; off < all && i < src->nvec; i++) {
		uint32_t sz = src->vec[i].size;

		if (sz < 0x80u)
			dst[off++] = (uint8_t)sz;
		else
			off += tb_pb_varint_put(dst + off, sz);
		tb__buf_copy_small(dst + off, (const uint8_t *)src->vec[i].data,
				   sz);
		off += sz;
	}
}

/*
 * Whether chunk @id may still enter sequence @s: not if it was consumed
 * already, except an evicted or relocated incomplete chunk that now
 * carries more (re-admission: its first *prev bytes count as consumed).
 */
static inline bool tb__buf_admit(const struct tb__buf_seq *s, uint32_t id,
				  uint32_t all, uint32_t *prev)
{
	*prev = 0;
	if (!s->has_last || tb_buf_id_cmp(id, s->last_id) > 0)
		return true;
	if (id == s->last_id && s->last_incomplete && s->last_size < all) {
		*prev = s->last_size;
		return true;
	}
	return false;
}

/* Whether adding @id keeps the sequence's ids within TB_BUF_ID_WINDOW. */
static inline bool tb__buf_id_fits(const struct tb__buf_seq *s, uint32_t id)
{
	uint32_t lo, hi;

	if (!s->n)
		return true;
	lo = tb__buf_ref(s, 0)->id;
	hi = tb__buf_ref(s, s->n - 1)->id;
	if (tb_buf_id_cmp(id, lo) < 0)
		lo = id;
	else if (tb_buf_id_cmp(id, hi) > 0)
		hi = id;
	return hi - lo < TB_BUF_ID_WINDOW;
}

/* A commit of a chunk id the sequence still holds (at index @i). */
static inline int tb__buf_recommit(struct tb_buf *b, struct tb__buf_seq *s,
				    uint32_t i, const struct tb__buf_src *src,
				    uint32_t nfrags, uint32_t all,
				    uint8_t flags, bool complete,
				    bool *relocate)
{
	struct tb__buf_hdr *r = tb__buf_chunk(b, s, i);
	uint32_t consumed = tb__buf_unread(r);
	uint8_t old = r->flags & TB_BUF_ABI_FLAGS;

	*relocate = false;
	if (all < r->payload_size || all > r->size || (old & ~flags)) {
		b->stats.abi_violations++;
		return TB_ERECOMMIT;
	}
	if (all != r->payload_size &&
	    !tb__buf_src_boundary(src, nfrags, consumed)) {
		/* The new bytes must not move what was already read. */
		b->stats.abi_violations++;
		return TB_ERECOMMIT;
	}
	if ((r->flags & TB__BUF_INCOMPLETE) && !r->payload_avail &&
	    complete && all > r->payload_size && i == 0 &&
	    b->policy == TB_BUF_RING_BUFFER) {
		/* Drained scraped head: move it to the write cursor. */
		b->stats.chunks_relocated++;
		tb__buf_erase_head(b, s);
		*relocate = true;
		return TB_OK;
	}
	if (complete)
		r->flags &= (uint8_t)~TB__BUF_INCOMPLETE;
	if (all == r->payload_size)
		return TB_OK;	/* identical resend */
	r->payload_size = (uint16_t)all;
	r->payload_avail = (uint16_t)(all - consumed);
	tb__buf_src_copy(src, tb__buf_payload(r), all);
	/* New bytes throughout: TB__BUF_PLAIN as measured now. */
	r->flags = (uint8_t)((r->flags & ~TB__BUF_PLAIN) | flags);
	b->stats.chunks_rewritten++;
	return TB_OK;
}

/* Deletes the oldest empty sequences beyond TB_BUF_KEEP_EMPTY_SEQ. */
static inline void tb__buf_gc(struct tb_buf *b)
{
	uint64_t lo = 0, hi = b->age + 1;
	uint32_t drop = b->nempty - TB_BUF_KEEP_EMPTY_SEQ, i, pass;

	/* Find the age below which exactly @drop empty sequences lie. */
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		uint32_t cnt = 0;

		for (i = 0; i < b->seq_cap; i++)
			if (b->seqs[i].used && !b->seqs[i].n &&
			    b->seqs[i].age < mid)
				cnt++;
		if (cnt < drop)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Deleting shifts entries back; a second pass catches any moved. */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < b->seq_cap; i++) {
			struct tb__buf_seq *s = &b->seqs[i];

			while (s->used && !s->n && s->age < lo) {
				tb__buf_table_del(b, i);
				b->nempty--;
			}
		}
	}
}

/* What one commit carries from step to step of tb__buf_copy_one(). */
struct tb__buf_commit {
	uint32_t key;
	uint32_t nfrags;		/* fragments that count */
	uint32_t all;			/* their framed bytes */
	uint32_t stored;		/* payload bytes the record reserves */
	uint32_t outer;			/* the record's size in the buffer */
	uint32_t prev;			/* consumed before (re-admission) */
	uint8_t flags;
	int src;			/* TB__BUF_SRC_* of the measure */
	int ret;			/* TB_OK, or TB_EFRAMING (part kept) */
};

/*
 * Validating: checks what can be checked before the sequence is looked at
 * and measures the fragments into @w.  Returns TB_OK to go on, or why the
 * chunk is dropped.
 */
static inline int tb__buf_commit_check(struct tb_buf *b,
					const struct tb_buf_chunk_in *in,
					const struct tb__buf_src *src,
					uint32_t nfrags,
					struct tb__buf_commit *w)
{
	bool plain;

	if (!in->writer_id) {
		b->stats.abi_violations++;
		return TB_EBADID;
	}
	if (b->discard) {
		b->stats.chunks_discarded++;
		return TB_EBUFFULL;
	}
	if (src->size > TB_BUF_MAX_PAYLOAD) {
		b->stats.abi_violations++;
		return TB_ETOOBIG;
	}
	w->flags = in->flags & (TB_BUF_ABI_FLAGS | TB_BUF_DATA_LOSS);
	if (!in->complete) {
		/* Scraped: the last fragment may still be being written. */
		w->flags |= TB__BUF_INCOMPLETE;
		if (nfrags) {
			nfrags--;
			w->flags &= (uint8_t)~(TB_BUF_LAST_CONT |
					       TB_BUF_NEEDS_PATCH);
		}
	}
	w->nfrags = nfrags;
	w->src = tb__buf_src_measure(src, nfrags, 0, &w->all, &plain);
	if (plain)
		w->flags |= TB__BUF_PLAIN;
	w->ret = TB_OK;
	if (w->src == TB__BUF_SRC_BAD) {
		b->stats.abi_violations++;
		w->ret = TB_EFRAMING;
	}
	w->stored = in->complete ? w->all : src->size;
	w->outer = tb__buf_outer(w->stored);
	if (w->outer > b->size) {
		b->stats.abi_violations++;
		return TB_ETOOBIG;
	}
	w->key = tb__buf_key(in->producer_id, in->writer_id);
	return TB_OK;
}

/*
 * Admitting or recommitting chunk @id into @s.  Returns TB_OK with *@place
 * set when the chunk goes on to be placed as a new record (new, re-admitted
 * or relocated), TB_OK with *@place clear when a recommit took it in its
 * record, or why it is dropped.
 */
static inline int tb__buf_commit_admit(struct tb_buf *b, struct tb__buf_seq *s,
					uint32_t id,
					const struct tb__buf_src *src,
					bool complete,
					struct tb__buf_commit *w, bool *place)
{
	uint32_t pos;

	*place = false;
	if (!tb__buf_admit(s, id, w->all, &w->prev)) {
		b->stats.chunks_discarded++;
		return TB_ESTALE;
	}
	if (!tb__buf_id_fits(s, id)) {
		b->stats.abi_violations++;
		return TB_EBADID;
	}
	pos = tb__buf_ring_lower(s, id);
	if (pos < s->n && tb__buf_ref(s, pos)->id == id) {
		bool relocate;
		int r = tb__buf_recommit(b, s, pos, src, w->nfrags, w->all,
					  w->flags, complete, &relocate);

		if (r != TB_OK || !relocate)
			return r;
		tb__buf_admit(s, id, w->all, &w->prev);
	}
	if (!tb__buf_src_boundary(src, w->nfrags, w->prev)) {
		/* A re-admitted chunk must extend what was consumed. */
		b->stats.abi_violations++;
		return TB_ERECOMMIT;
	}
	if (tb__buf_ring_reserve(b, s))
		return TB_ENOMEM;
	*place = true;
	return TB_OK;
}

/*
 * Making room for the record of chunk @id at the write cursor, wrapping at
 * the end of the buffer.  Returns TB_OK, or why the chunk is dropped.
 */
static inline int tb__buf_commit_room(struct tb_buf *b, struct tb__buf_seq *s,
				       uint32_t id,
				       struct tb__buf_commit *w)
{
	if (w->outer > b->size - b->wr) {
		if (b->policy == TB_BUF_DISCARD) {
			b->discard = 1;
			b->stats.chunks_discarded++;
			return TB_EBUFFULL;
		}
		if (b->wr < b->size)
			tb__buf_make_room(b, b->size - b->wr);
		b->wr = 0;
		b->stats.write_wrap_count++;
	}
	tb__buf_make_room(b, w->outer);
	/* The overwrite may have consumed this sequence past the chunk. */
	if (!tb__buf_admit(s, id, w->all, &w->prev)) {
		s->loss |= TB_BUF_LOSS_PRESENT | TB_BUF_LOSS_OVERWRITE;
		b->stats.chunks_discarded++;
		return TB_ESTALE;
	}
	return TB_OK;
}

/* Placing: the record at the write cursor, and its entry in @s's index. */
static inline void tb__buf_commit_place(struct tb_buf *b, struct tb__buf_seq *s,
					 uint32_t id,
					 const struct tb__buf_src *src,
					 const struct tb__buf_commit *w)
{
	struct tb__buf_hdr *c = tb__buf_hdr_at(b, b->wr);
	uint32_t pos;

	c->id = id;
	c->key = w->key;
	c->size = (uint16_t)w->stored;
	c->payload_size = (uint16_t)w->all;
	c->payload_avail = (uint16_t)(w->all - w->prev);
	c->flags = w->flags;
	c->spare = 0;
	tb__buf_src_copy(src, tb__buf_payload(c), w->all);

	pos = tb__buf_ring_lower(s, id);
	if (pos != s->n)
		b->stats.chunks_committed_out_of_order++;
	if (!s->n)
		b->nempty--;
	tb__buf_ring_insert(s, pos, id, b->wr);
	b->wr += w->outer;
	if (b->wr > b->used)
		b->used = b->wr;
	b->stats.chunks_written++;
	b->stats.bytes_written += w->outer;
}

/*
 * One commit, in four steps: validate it, admit it to its sequence (or
 * recommit it in place), make room for its record, place the record.
 */
static inline int tb__buf_copy_one(struct tb_buf *b,
				    const struct tb_buf_chunk_in *in,
				    const struct tb__buf_src *src,
				    uint32_t nfrags)
{
	struct tb__buf_commit w;
	struct tb__buf_seq *s;
	bool place;
	int r;

	r = tb__buf_commit_check(b, in, src, nfrags, &w);
	if (r != TB_OK)
		return r;
	s = tb__buf_seq_get(b, w.key, &in->ident);
	if (!s)
		return TB_ENOMEM;
	if (w.src == TB__BUF_SRC_ABORT) {
		b->stats.trace_writer_packet_loss++;
		s->loss |= TB_BUF_LOSS_PRESENT | TB_BUF_LOSS_WRITER_ABORT;
	}
	r = tb__buf_commit_admit(b, s, in->chunk_id, src, in->complete, &w,
				 &place);
	if (r != TB_OK || !place)
		return r != TB_OK ? r : w.ret;
	r = tb__buf_commit_room(b, s, in->chunk_id, &w);
	if (r != TB_OK)
		return r;
	tb__buf_commit_place(b, s, in->chunk_id, src, &w);
	return w.ret;
}

/*
 * Whether a write or patch may go ahead now.  Either ends the read batch:
 * it may move or erase what the reader was walking.
 */
static inline int tb__buf_may_write(struct tb_buf *b)
{
	if (b->refuse & TB__BUF_IN_CB)
		return TB_EBUSY;
	if (b->refuse)
		return TB_EROFS;
	if (b->rd_valid)
		b->rd_valid = 0;
	return TB_OK;
}

static inline int tb__buf_copy(struct tb_buf *b,
				const struct tb_buf_chunk_in *in,
				const struct tb__buf_src *src,
				uint32_t nfrags)
{
	int ret = tb__buf_may_write(b);

	if (ret != TB_OK)
		return ret;
	ret = tb__buf_copy_one(b, in, src, nfrags);
	if (b->nempty > TB_BUF_GC_THRESHOLD)
		tb__buf_gc(b);
	return ret;
}

/*
 * tb__buf_copy() of the @n fragments of a vector @src (vec, or packed and
 * sizes, set by the caller) that its caller measured while checking them:
 * @total framed bytes, @plain when no fragment is empty, @st what the
 * measure found.  Within TB_BUF_MAX_PAYLOAD every fragment up to an abort
 * fits, so the measure could only stop at the abort (a bigger vector is
 * refused before it would be measured).
 */
static inline int tb__buf_copy_measured(struct tb_buf *b,
					const struct tb_buf_chunk_in *in,
					struct tb__buf_src *src, unsigned n,
					uint64_t total, bool plain, int st)
{
	src->raw = NULL;
	src->nvec = n;
	src->size = total > TB_BUF_MAX_PAYLOAD ? TB_BUF_MAX_PAYLOAD + 1 :
		    (uint32_t)total;
	src->measured = true;
	src->pre_all = (uint32_t)total;
	src->pre_plain = plain;
	src->pre_st = st;
	return tb__buf_copy(b, in, src, n);
}

/*
 * Copies one committed chunk.  @in->payload holds @in->size bytes of
 * varint-framed fragments, of which the first @in->nfrags count.  Returns
 * TB_OK, or an error: the chunk was dropped, except TB_EFRAMING (the
 * fragments before the fault were kept).  A writer-abort marker is no
 * error: it is reported as TB_BUF_LOSS_WRITER_ABORT.
 */
static inline int tb_buf_copy_chunk(struct tb_buf *b,
				    const struct tb_buf_chunk_in *in)
{
	struct tb__buf_src src;

	TB_BUG_ON(!b || !in || (!in->payload && in->size));
	if (!b || !in || (!in->payload && in->size))
		return TB_EINVAL;
	TB_MEMSET(&src, 0, sizeof(src));
	src.raw = (const uint8_t *)in->payload;
	src.size = in->size > TB_BUF_MAX_PAYLOAD ? TB_BUF_MAX_PAYLOAD + 1 :
		   (uint32_t)in->size;
	return tb__buf_copy(b, in, &src, in->nfrags);
}

/*
 * Copies one chunk given as @n unframed fragments (what a ring reader
 * emits), framing each with a LEB128 length while copying.  @in->payload,
 * @in->size and @in->nfrags are ignored.  Otherwise like
 * tb_buf_copy_chunk(); an incomplete chunk reserves the framed size of all
 * @n fragments.
 */
static inline int tb_buf_copy_frags(struct tb_buf *b,
				    const struct tb_buf_chunk_in *in,
				    const struct tb_buf_frag *frags,
				    unsigned n)
{
	struct tb__buf_src src;
	uint64_t total = 0;
	unsigned i;
	bool empty = false;
	int st = TB__BUF_SRC_OK;

	TB_BUG_ON(!b || !in || (!frags && n));
	if (!b || !in || (!frags && n))
		return TB_EINVAL;
	for (i = 0; i < n && total <= TB_BUF_MAX_PAYLOAD; i++) {
		uint32_t sz = frags[i].size;

		TB_BUG_ON(!frags[i].data && sz && sz != TB_PB_SIZE_ABORT);
		if (!frags[i].data && sz && sz != TB_PB_SIZE_ABORT)
			return TB_EINVAL;
		if (sz == TB_PB_SIZE_ABORT) {
			st = TB__BUF_SRC_ABORT;
			break;
		}
		empty |= !sz;
		total += tb_pb_varint_len(sz) + (uint64_t)sz;
	}
	src.vec = frags;
	src.packed = NULL;
	src.sizes = NULL;
	return tb__buf_copy_measured(b, in, &src, n, total, !empty, st);
}

/*
 * Copies one chunk given as @n unframed fragments laid back to back at
 * @payload, of @sizes[0] to @sizes[n - 1] bytes (a ring reader's chunk
 * view, tb_chunk_view), framing each with a LEB128 length while copying.
 * Otherwise like tb_buf_copy_frags() (no size is a writer abort), at a
 * fraction of its cost per fragment.
 */
static inline int tb_buf_copy_packed(struct tb_buf *b,
				     const struct tb_buf_chunk_in *in,
				     const void *payload,
				     const uint16_t *sizes, unsigned n)
{
	struct tb__buf_src src;
	uint64_t total, data = 0;
	uint32_t empty = 0, any = 0;
	unsigned i;

	TB_BUG_ON(!b || !in || (!sizes && n));
	if (!b || !in || (!sizes && n))
		return TB_EINVAL;
	for (i = 0; i < n; i++) {
		uint32_t sz = sizes[i];

		empty |= !sz;
		data += sz;
		any |= sz;
	}
	TB_BUG_ON(!payload && data);
	if (!payload && data)
		return TB_EINVAL;
	total = data + n;		/* a byte of length each, */
	if (any >= 0x80u)		/* unless a fragment needs more */
		for (i = 0; i < n; i++)
			total += (uint64_t)((sizes[i] >= 0x80u) +
					    (sizes[i] >= 0x4000u));
	src.vec = NULL;
	src.packed = (const uint8_t *)payload;
	src.sizes = sizes;
	return tb__buf_copy_measured(b, in, &src, n, total, !empty,
				     TB__BUF_SRC_OK);
}

/*
 * The entry of chunk @id of sequence @key for a patch, or NULL.  Patches
 * come in runs for one writer (its newest chunks, one commit after
 * another): the sequence the last patch found is tried first, and only a
 * sequence found is kept.  The table only moves entries when it grows or
 * deletes one, and both forget it.
 */
static inline const struct tb__buf_ref *
tb__buf_patch_find(struct tb_buf *b, uint32_t key, uint32_t id)
{
	if (b->pkey != key) {
		struct tb__buf_seq *s = tb__buf_seq_find(b, key);

		if (!s)
			return NULL;
		b->pseq = s;
		b->pkey = key;
	}
	return tb__buf_ring_find(b->pseq, id);
}

/*
 * Why a patch may not go ahead: TB_EBUSY or TB_EROFS, as for a write.  Out
 * of line, so that the patch tests both conditions in one branch.
 */
TB__COLD int tb__buf_patch_refused(struct tb_buf *b)
{
	return tb__buf_may_write(b);
}

/*
 * Applies @n 4-byte patches to chunk @chunk_id of {@producer, @writer}.
 * Offsets are relative to the chunk payload.  Fails (counted once) when
 * the chunk is not in the buffer (consumed, overwritten or never seen) or
 * at the first patch out of bounds; patches before it stay applied.  The
 * chunk stops waiting for patches when @more_pending is false.
 */
static inline int tb_buf_patch(struct tb_buf *b, uint16_t producer,
			       uint16_t writer, uint32_t chunk_id,
			       const struct tb_buf_patch *patches, size_t n,
			       bool more_pending)
{
	const struct tb__buf_ref *r;
	struct tb__buf_hdr *c;
	uint32_t size;
	uint8_t clear;
	size_t k;

	TB_BUG_ON(!b || (!patches && n));
	if (!b || (!patches && n))
		return TB_EINVAL;
	/*
	 * tb__buf_may_write() inline: the end of the read batch stored
	 * without a test.
	 */
	if (b->refuse)
		return tb__buf_patch_refused(b);
	b->rd_valid = 0;
	r = tb__buf_patch_find(b, tb__buf_key(producer, writer), chunk_id);
	if (!r) {
		b->stats.patches_failed++;
		return TB_ENOENT;
	}
	c = tb__buf_hdr_at(b, r->off);
	size = c->payload_size;		/* patches write the payload only */
	for (k = 0; k < n; k++) {
		if (size < TB_BUF_PATCH_SIZE ||
		    patches[k].offset > size - TB_BUF_PATCH_SIZE) {
			if (k)	/* the patches before it changed its bytes */
				c->flags &= (uint8_t)~TB__BUF_PLAIN;
			b->stats.patches_failed++;
			return TB_ERANGE;
		}
		TB_MEMCPY(tb__buf_payload(c) + patches[k].offset,
		       patches[k].data, TB_BUF_PATCH_SIZE);
	}
	b->stats.patches_succeeded += n;
	/*
	 * Its bytes may have changed: one update of the flags for both.  Not
	 * skipped when it changes nothing: the test costs more than the
	 * store (bench/buffer.c's patch rows).
	 */
	clear = TB__BUF_PLAIN | (more_pending ? 0 : TB_BUF_NEEDS_PATCH);
	c->flags &= (uint8_t)~clear;
	return TB_OK;
}

/* ---- Reading ------------------------------------------------------------ */

/*
 * Where a read batch starts walking: the oldest record (at the write
 * cursor, or 0 before the buffer wrapped), or past the run of padding
 * there that the last walk found, when that run is still known to be
 * padding.  Before the buffer wraps, nothing writes below the used end,
 * so the run stays as long as no wrap came.  After, writes at the cursor
 * eat into its front: it stays, shorter, as long as no wrap came, the used
 * end did not move and the cursor did not pass the run's end (the last
 * record the writes cut is left as padding up to a boundary of the old
 * walk, at or before the run's end).
 */
static inline uint32_t tb__buf_clean_start(struct tb_buf *b)
{
	uint32_t start = b->wr == b->used ? 0 : b->wr;
	bool keep = false;

	if (b->clean_len && b->clean_wraps == b->stats.write_wrap_count) {
		if (b->clean_wr == b->clean_used)	/* not wrapped then */
			keep = b->wr == b->used;
		else
			keep = b->wr < b->used && b->used == b->clean_used &&
			       b->wr >= b->clean_wr &&
			       b->wr - b->clean_wr <= b->clean_len;
	}
	if (keep) {
		if (start) {
			b->clean_len -= b->wr - b->clean_wr;
			b->clean_wr = b->wr;
		}
		return b->clean_len ? b->clean_pos : start;
	}
	b->clean_pos = start;
	b->clean_len = 0;
	b->clean_wr = b->wr;
	b->clean_used = b->used;
	b->clean_wraps = b->stats.write_wrap_count;
	return start;
}

/*
 * Starts a read batch at the oldest data (just after the write cursor) and
 * lifts the stalls of the previous batch.
 */
static inline void tb_buf_begin_read(struct tb_buf *b)
{
	if (b->refuse & TB__BUF_IN_CB)
		return;
	b->rd = tb__buf_clean_start(b);
	b->rd_clean = 1;
	b->inner = 0;
	b->rd_walked = 0;
	b->rd_valid = b->used != 0;
	b->gen++;
}

/*
 * tb_buf_read_packet() once the batch is known valid: the next packet in
 * @out (every field set), its slices in b->slices.
 */
static inline bool tb__buf_read_next(struct tb_buf *b,
				     struct tb_buf_packet *out)
{
	for (;;) {
		struct tb__buf_hdr *c;
		struct tb__buf_seq *s;
		uint32_t next;

		if (!b->inner) {
			c = tb__buf_hdr_at(b, b->rd);
			s = c->key ? tb__buf_seq_find(b, c->key) : NULL;
			TB_BUG_ON(c->key && !s);
			if (s) {
				tb__buf_prefetch_ahead(b, &b->rpf, b->rd,
						tb__buf_outer(c->size));
				b->inner = 1;
				b->target = b->rd;
				b->inner_seq = (uint32_t)(s - b->seqs);
				tb__buf_gap_check(b, s);
			}
		}
		if (b->inner) {
			s = &b->seqs[b->inner_seq];
			if (tb__buf_read_whole(b, s) ||
			    tb__buf_seq_next(b, s, b->target, false, true)) {
				tb__buf_fill_packet(b, s, out);
				out->loss = s->loss;
				s->loss = 0;
				return true;
			}
			b->inner = 0;
			c = tb__buf_hdr_at(b, b->target);
		} else {
			c = tb__buf_hdr_at(b, b->rd);
		}
		/* Move on in buffer order, wrapping at the used end. */
		next = (uint32_t)((uint8_t *)c - b->data) +
		       tb__buf_outer(c->size);
		b->rd_walked += tb__buf_outer(c->size);
		if (next == b->wr || (next >= b->used && !b->wr) ||
		    b->rd_walked > 2ull * b->used) {
			b->rd_valid = 0;
			return false;
		}
		b->rd = next >= b->used ? 0 : next;
		if (b->rd_clean && !c->key) {	/* the run of padding grows */
			b->clean_len += tb__buf_outer(c->size);
			b->clean_pos = b->rd;
		} else {
			b->rd_clean = 0;
		}
	}
}

/*
 * Returns the next packet in @out, or false when nothing more can be read
 * in this batch.  Reading consumes.  Packets of one sequence come in
 * order; across sequences roughly in write order.  @out->loss carries the
 * loss reasons recorded for the sequence since its previous packet.
 */
static inline bool tb_buf_read_packet(struct tb_buf *b,
				      struct tb_buf_packet *out)
{
	TB_MEMSET(out, 0, sizeof(*out));
	if (!b->rd_valid || b->refuse & TB__BUF_IN_CB)
		return false;
	return tb__buf_read_next(b, out);
}

/*
 * The run of whole packets, not empty, that the head chunk of the
 * sequence being read holds next, as tb__buf_read_whole() would take them
 * one by one: up to @max of them into @out, each with its slice in
 * @slices.  The chunk is consumed (and counted as read when it empties)
 * once, at the end of the run.  Returns how many.
 */
static inline unsigned tb__buf_read_run(struct tb_buf *b,
					struct tb_buf_packet *out,
					struct tb_buf_slice *slices,
					unsigned max)
{
	struct tb__buf_seq *s = &b->seqs[b->inner_seq];
	struct tb__buf_hdr *c;
	struct tb_buf_ident id;
	const uint8_t *p;
	uint32_t size, off, start, len = 0, next = 0, end;
	uint16_t producer, writer;
	unsigned n = 0;

	if (!s->n || s->skip_gen == b->gen)
		return 0;
	c = tb__buf_chunk(b, s, 0);
	p = tb__buf_payload(c);
	size = c->payload_size;
	start = off = tb__buf_unread(c);
	/* the chunk's first fragment ends a packet: not a whole one */
	if (!off && (c->flags & TB_BUF_FIRST_CONT))
		return 0;
	/* a fragment that ends at @end or later begins a packet */
	end = c->flags & TB_BUF_LAST_CONT ? size : UINT32_MAX;
	producer = (uint16_t)(s->key >> 16);
	writer = (uint16_t)s->key;
	id = s->ident;
	while (n < max &&
	       tb__buf_frag_next(p, size, off, &len, &next) == TB_PB_FRAG_OK &&
	       len && next < end) {
		slices[n].data = p + next - len;
		slices[n].size = len;
		out[n].slices = &slices[n];
		out[n].nslices = 1;
		out[n].size = len;
		out[n].producer_id = producer;
		out[n].writer_id = writer;
		out[n].ident = id;
		out[n].loss = 0;
		n++;
		off = next;
	}
	if (n) {
		out[0].loss = s->loss;
		s->loss = 0;
		tb__buf_consume(b, c, off - start, false);
	}
	return n;
}

/*
 * Reads up to @max packets at once: the packets, order, loss reasons and
 * accounting of that many tb_buf_read_packet() calls, in @out[0] to
 * @out[n - 1].  Returns n, 0 when nothing more can be read in this batch.
 * A packet of one slice has it in @slices (room for @max, at the
 * packet's index); a packet of more slices (or none: a reassembled packet
 * of empty fragments) has them in the buffer's own array, and one of more
 * is the last of the call.  All stay valid until the next call
 * that reads from or writes to the buffer.  For a long run of small
 * packets this costs a fraction of a call per packet.
 */
static inline unsigned tb_buf_read_packets(struct tb_buf *b,
					   struct tb_buf_packet *out,
					   struct tb_buf_slice *slices,
					   unsigned max)
{
	unsigned n = 0;

	TB_BUG_ON(!b || ((!out || !slices) && max));
	if (!b || !out || !slices || !b->rd_valid ||
	    b->refuse & TB__BUF_IN_CB)
		return 0;
	while (n < max) {
		if (b->inner)
			n += tb__buf_read_run(b, out + n, slices + n, max - n);
		if (n == max || !tb__buf_read_next(b, &out[n]))
			break;
		if (out[n].nslices > 1)
			return n + 1;	/* in b->slices: the last one */
		if (out[n].nslices) {
			slices[n] = b->slices[0];
			out[n].slices = &slices[n];
		}
		n++;
	}
	return n;
}

/* ---- Cloning ------------------------------------------------------------ */

/*
 * A read-only snapshot: same contents, sequences and stats (read counters
 * reset); reading it does not touch the original.  NULL when out of
 * memory.
 */
static inline struct tb_buf *tb_buf_clone_readonly(const struct tb_buf *b)
{
	struct tb_buf *c;
	uint32_t i;

	if (b->refuse & TB__BUF_IN_CB)
		return NULL;
	c = tb_buf_create_with(b->size, (enum tb_buf_policy)b->policy,
			       b->alloc, b->alloc_ctx);
	if (!c)
		return NULL;
	tb__buf_mem(c, c->seqs, (size_t)c->seq_cap * sizeof(*c->seqs), 0);
	c->seqs = NULL;
	if (tb__buf_table_alloc(c, b->seq_cap)) {
		c->seq_cap = 0;
		goto fail;
	}
	for (i = 0; i < b->seq_cap; i++) {
		const struct tb__buf_seq *s = &b->seqs[i];
		struct tb__buf_seq *d = &c->seqs[i];
		uint32_t j;

		if (!s->used)
			continue;
		*d = *s;
		d->ring = NULL;
		d->cap = 0;
		d->head = 0;
		d->n = 0;
		if (!s->n)
			continue;
		d->cap = s->cap;
		d->ring = (struct tb__buf_ref *)tb__buf_mem(c, NULL, 0,
				(size_t)s->cap * sizeof(*s->ring));
		if (!d->ring) {
			d->cap = 0;
			goto fail;
		}
		for (j = 0; j < s->n; j++)
			d->ring[j] = *tb__buf_ref(s, j);
		d->n = s->n;
	}
	if (b->used)
		TB_MEMCPY(c->data, b->data, b->used);
	c->seq_n = b->seq_n;
	c->nempty = b->nempty;
	c->age = b->age;
	c->used = b->used;
	c->wr = b->wr;
	c->gen = b->gen;
	c->discard = b->discard;
	c->refuse = TB__BUF_READ_ONLY;
	c->stats = b->stats;
	c->stats.bytes_read = 0;
	c->stats.chunks_read = 0;
	c->stats.readaheads_failed = 0;
	c->stats.readaheads_succeeded = 0;
	return c;
fail:
	tb_buf_destroy(c);
	return NULL;
}

#ifdef __cplusplus
}
#endif

#endif /* TBUFFER_H */
