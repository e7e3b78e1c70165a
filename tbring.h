/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Copyright (c) 2026, tbring contributors.  BSD-2-Clause: see COPYING, or
 * https://opensource.org/license/bsd-2-clause for the text.
 *
 * tbring.h - a producer-local shared-memory ring of fixed-size chunks:
 * many writers, one reader, each chunk arbitrated by one 32-bit state word.
 *
 * It implements the chunk ABI and state protocol of Perfetto's "Tracing
 * v2" shared ring buffer design; docs/protocol.md in the repository says
 * it all in full.  This comment is the contract a vendored copy carries.
 *
 * Using it
 *   ring     tb_ring_size(), tb_ring_init() (a zero-filled mapping
 *            aligned to TB_RING_LINE), or tb_ring_attach() (another
 *            process's, validated); tb_ring_stats()
 *   writer   tb_writer_init(), then tb_writer_write_packet() - or, for an
 *            encoder that writes in place, tb_writer_open() / _close() /
 *            _sync() - and tb_writer_release() before it goes away
 *   reader   tb_reader_init(), then tb_reader_drain() (chunks of
 *            fragments), and tb_reader_wait() when idle; whole packets
 *            come out of tbpacket.h's tb_reader_drain_packets()
 *
 * Threading contract
 *   - Any number of writers, in any number of processes, each with its own
 *     struct tb_writer used by one thread at a time, and its own writer
 *     id (1..65535) among the live writers of that ring: the state word
 *     names a chunk's writer by id alone, so two live writers with one id
 *     could each take the other's Complete chunk for its own and reuse it
 *     (the ids are Perfetto's WriterIDs, unique per producer).
 *   - An interrupt handler may write, with a writer of its own (its own
 *     id): it preempts other writers anywhere, as another thread would.
 *     It never waits: under TB_STALL it gets TB_FULL at once on a full
 *     ring (TB_IN_INTERRUPT(), by tb__writer_stall()).
 *   - Exactly one reader per ring (struct tb_reader), one thread.
 *   - The mapping holds only offsets and sizes, never pointers: every
 *     process may map it at a different address.  struct tb_ring is each
 *     process's private view of it; the geometry is captured once, at
 *     init or attach, and never re-read from shared memory.
 *   - Memory is the caller's: tb_ring_size() says how much the mapping
 *     needs (aligned to TB_RING_LINE, 64 bytes: a page-aligned mapping
 *     is, malloc() memory is not), and writer and reader each take a
 *     chunk_size scratch buffer.
 *     Nothing here allocates.
 *   - The reader trusts nothing in the mapping: a hostile or crashed
 *     writer can cost the reader this ring (TB_EPROTO, latched) but never
 *     a crash, an out-of-bounds access or an endless loop.
 *
 * The state word (bits 31..29 the state; decode it first)
 *
 *   000 FreeForWrap(k)    29-bit lap k of the one position that may claim
 *   001 Acquired(w, n)    \  28..27 format, 26..24 flags (continues from
 *   010 Complete(w, n)     > previous, continues on next, data loss),
 *   011 Rewrite(w, n)     /   23..16 fragments published, 15..0 writer
 *   100 Acknowledged      zero
 *   101..111              reserved: a protocol error
 *
 * Transitions, each one CAS against the exact word its actor observed
 * (orders: on success / on failure)
 *
 *   from          to              by      step                orders
 *   Free(lap p)   Acquired(w, 0)  writer  claim               acq / rlx
 *   Free(lap p)   Free(lap p+n)   reader  advance (a hole)    rel / acq
 *   Acquired(n)   Complete(n+k)   writer  publish             rel / rlx
 *   Acquired(n)   Acquired(n+k)   writer  publish, still open rel / rlx
 *   Complete(n)   Acquired(n)     writer  reuse               rlx / rlx
 *   Complete(n)   Free(lap p+n)   reader  reclaim (consume)   rel / acq
 *   Acquired(n)   Rewrite(n)      reader  mark (scrape)       rlx / acq
 *   Rewrite(n)    Acknowledged    writer  acknowledge         rel / rlx
 *   Acknowledged  Free(lap p+n)   reader  reclaim             acq_rel / rlx
 *
 * where "lap p+n" is the lap of position p + num_chunks, always computed
 * from the position being resolved.  Cursors: a writer reserves position
 * p with a relaxed CAS of write_pos after an acquire load of read_pos
 * (pairs with the reader's release store of read_pos, made right after
 * each position's transition); the reader loads write_pos relaxed and
 * each state word acquire.  A failed publish, the scrape and the writer's
 * look at its own word (tb_writer_sync()) are relaxed where the design
 * asks for acquire, release and acquire: after a scrape the writer reads
 * only its own unpublished suffix and never writes the chunk again, so
 * they would order nothing (docs/protocol.md 6.2).  Only the doorbell and
 * the stalled writers' wake-up use seq_cst fences (two store->load
 * handshakes).
 *
 * The protocol steps are not part of the default API: a caller breaks
 * the protocol from its own side by calling them out of turn.  Tests and
 * models define TB_PROTOCOL_STEPS before including this header to get
 * them under these names (the writer's: tb_ring_reserve, _claim,
 * _publish, _reuse, _acknowledge; the reader's: tb_ring_load_state,
 * _advance, _reclaim_complete, _mark_rewrite, _reclaim_acked,
 * _publish_read_pos), with tb_ring_init_at(), the position helpers and
 * the state-word constructors (tb_state_free, _data, _with, _is_data).
 *
 * Limits
 *   - chunk_size: a power of two in [256, 32768]; num_chunks: a power of
 *     two in [2, 2^30] (the design's: below 2^31, so a position's lap
 *     keeps at least two bits); tb_ring_size() fails (0) if the mapping
 *     would not fit in a size_t.
 *   - FIFO identity.  A writer suspended between reserve and claim can be
 *     fooled once (chunk index, lap) repeats.  The design puts that at
 *     min(num_chunks * 2^29, 2^32) reservations; the bound is one ring
 *     tighter: resolving position p already stamps the free word of
 *     p + num_chunks, so the stale claim can succeed after that period
 *     minus num_chunks further reservations (2^30 - 2 for two chunks,
 *     2^32 - num_chunks from eight chunks on).
 *   - Counters in the control header are 32-bit and wrap.
 *   - Byte order: every word accessed atomically (state words, cursors,
 *     doorbell, counters, the header's geometry) is in the host's byte
 *     order, as atomics must be: the ring never leaves one machine.  The
 *     state word's fields are masks and shifts of its value, never bytes.
 *     Only the BufferID and the size directory are little-endian bytes
 *     (tbfrag.h), written and read bytewise.
 *   - A writer that dies holding a chunk the reader scraped pins it for
 *     good (only its writer may leave RewriteRequested): every later lap
 *     of it is a hole, counted as TB_RS_PINNED; tb_ring_stats() says how
 *     many chunks are RewriteRequested now, and tb_reader_pinned() when a
 *     whole lap found every chunk so (a service retires a ring that stays
 *     so for its pin_ms: slow writers unpin it when they next write).
 *
 * Where the design is loose, this file decides (and the tests pin it):
 *   - The next free tag is always computed from the position being
 *     resolved, never derived from the word found in the chunk.
 *   - A free word whose tag does not match the position is a protocol
 *     error.
 *   - Owed data loss goes on the next chunk the writer claims or carries;
 *     a writer that owes data loss never keeps a reusable chunk, so "set it
 *     on the next publication" holds.
 *   - A relocating writer that finds the ring full follows its own full
 *     policy: under TB_STALL it waits like any other claim.
 *   - read_pos is stored (release) right after each position's
 *     transition, and every public reader call returns with it
 *     published; stalled writers are woken once per call.
 *   - A reader restart (a new struct tb_reader on the same ring, say a
 *     restarted service attaching again) starts at the published
 *     read_pos and carries on, whether the old reader returned or died.
 *     One window differs: the old reader died between a position's
 *     transition and its store of read_pos.
 *       . If that transition freed the chunk (consumed, unclaimed or
 *         acknowledged), the chunk is stamped for its next lap while
 *         read_pos still names it.  The new reader meets a free tag that
 *         does not match read_pos (the design's "unsupported reader
 *         restart") and stops the ring with TB_EPROTO, changing nothing.
 *       . If it was a scrape, the new reader finds the chunk
 *         RewriteRequested or Acknowledged, resolves the position as a
 *         hole and goes on: only the scraped prefix is lost.  It is not
 *         a pinned hole: RewriteRequested at a new reader's first
 *         position may be this lap's scrape.
 *     Chunks the old reader had copied but not yet handed to its caller
 *     are lost with it.
 *   - A writer never reserves behind its own last position while that
 *     may be unresolved, even after a stray store put write_pos back:
 *     it keeps one past its last reservation as a floor and reserves
 *     there instead when write_pos is behind it by at most a ring, or
 *     when the floor is less than a ring ahead of read_pos.  Anywhere
 *     else a write_pos behind the floor is an honest ring 2^31 or more
 *     positions on, and the writer reserves at write_pos: an idle writer
 *     is never locked out.  Within a ring short of a multiple of 2^32
 *     positions the two look alike; the writer takes its floor then,
 *     skipping at most num_chunks positions (holes).  A floor a whole
 *     ring ahead of read_pos is full: the writer moves write_pos up to
 *     it, so that the reader resolves the positions in between.
 *   - A writer that abandons an open fragment in a chunk holding no other
 *     fragment publishes Complete with zero fragments, which the reader
 *     resolves as a hole.
 *   - An Acknowledged word with any low bit set is a protocol error, like
 *     a reserved state.
 *   - Once a writer burned a position in one attempt, a full ring ends
 *     that attempt with TB_NO_CHUNK, never a wait.  Budgets: 4 lost
 *     claims per acquisition (TB_CLAIM_BUDGET), 8 relocations of one
 *     suffix in a row (TB_RELOCATE_ROUNDS), 8 lost races per position
 *     for the reader (TB_READ_BUDGET).
 *   - The lazy reader (TB_READ_LAZY) stops before a chunk a writer still
 *     holds, and scrapes only once half the ring waits behind it; a
 *     flush (TB_READ_SCRAPE) takes the published prefix at once.
 *   - "Notify the reader" (the design leaves the transport open) is not
 *     done after every publication: a wake per packet costs a system
 *     call, and the woken reader reclaims the very chunk the writer was
 *     about to reuse.  A writer wakes a sleeping reader when it
 *       . burns a position, stalls, or abandons or releases a chunk;
 *       . gives up on a full ring (TB_FULL: a ring whose chunks writers
 *         keep for reuse hands nothing over);
 *       . hands a chunk over (published and not kept for reuse, or
 *         forgotten) once three quarters of the ring wait (at least one
 *         chunk is left), under either policy.
 *     Anything else (a chunk an idle writer keeps, a lone finished
 *     chunk) is taken at the reader's next pass, at the latest when
 *     tb_reader_wait() times out.
 *   - How either side waits (spin, yield, sleep) is docs/protocol.md's
 *     section 8, "Waiting": a stalled writer spins while the reader
 *     frees chunks, and yields once before it sleeps when it stalls
 *     again; a reader that caught up sleeps until a backlog rings, and
 *     spins only where such sleeps let the ring fill, or for the
 *     writers it has just woken.
 *   - The writers' waiter hint (for stalls) is only a hint: a writer
 *     killed while stalled leaves it raised, and nothing decides on it.
 *     A writer going to sleep sets the wake request, which only the
 *     reader clears when it wakes the sleepers: one FUTEX_WAKE per sleep,
 *     and one needless one, once, for a writer that died asleep.
 */
#ifndef TBRING_H
#define TBRING_H
#define TBRING_H_VERSION 200	/* tbbase.h: TBRING_VERSION */

#include "tbfrag.h"
#include "tbsync.h"

/* Headers of one release only: a mixed copy does not compile. */
#if TBFRAG_H_VERSION != TBRING_H_VERSION
#error "tbring.h needs the tbfrag.h of its own release"
#endif
#if TBSYNC_H_VERSION != TBRING_H_VERSION
#error "tbring.h needs the tbsync.h of its own release"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * The state word.  Decode the state first; the other 29
 * bits mean different things in different states.
 */
enum tb_state {
	TB_FREE = 0,		/* FreeForWrap(wrap_count) */
	TB_ACQUIRED = 1,	/* a writer owns it; n fragments published */
	TB_COMPLETE = 2,	/* n fragments published, nobody writing */
	TB_REWRITE = 3,		/* RewriteRequested: reader took n */
	TB_ACKED = 4,		/* Acknowledged: old writer is done */
	/* 5, 6, 7: reserved, a protocol error wherever they appear */
};

#define TB_STATE_SHIFT		29
#define TB_FORMAT_SHIFT		27
#define TB_NFRAGS_SHIFT		16
#define TB_NFRAGS_MASK		(0xffu << TB_NFRAGS_SHIFT)
#define TB_LOW_MASK		0x1fffffffu	/* all but the state */
#define TB_WRAP_MASK		0x1fffffffu
#define TB_F_CONT_PREV		(1u << 26)	/* first frag continues */
#define TB_F_CONT_NEXT		(1u << 25)	/* last frag continues */
#define TB_F_DATA_LOSS		(1u << 24)	/* writer lost data before */
#define TB_F_MASK		(7u << 24)
#define TB_WORD_ACKED		((uint32_t)TB_ACKED << TB_STATE_SHIFT)
#define TB_FORMAT_TARGET	0u		/* format 00: BufferID */

static inline uint32_t tb__state_free(uint32_t wrap)
{
	return wrap & TB_WRAP_MASK;
}

/* A data-bearing word; @flags are the TB_F_* bits in place. */
static inline uint32_t tb__state_data(unsigned state, unsigned format,
				     uint32_t flags, unsigned nfrags,
				     uint16_t writer)
{
	return (uint32_t)state << TB_STATE_SHIFT |
	       (uint32_t)(format & 3u) << TB_FORMAT_SHIFT |
	       (flags & TB_F_MASK) |
	       (uint32_t)(nfrags & 0xffu) << TB_NFRAGS_SHIFT | writer;
}

static inline unsigned tb_state_of(uint32_t word)
{
	return word >> TB_STATE_SHIFT;
}

static inline bool tb__state_is_data(unsigned state)
{
	return state >= TB_ACQUIRED && state <= TB_REWRITE;
}

static inline uint32_t tb__state_wrap(uint32_t word)
{
	return word & TB_WRAP_MASK;
}

static inline unsigned tb_state_format(uint32_t word)
{
	return word >> TB_FORMAT_SHIFT & 3u;
}

static inline uint32_t tb__state_flags(uint32_t word)
{
	return word & TB_F_MASK;
}

static inline unsigned tb_state_nfrags(uint32_t word)
{
	return word >> TB_NFRAGS_SHIFT & 0xffu;
}

static inline uint16_t tb_state_writer(uint32_t word)
{
	return (uint16_t)word;
}

/* Same word in another state: only bits 31..29 change. */
static inline uint32_t tb__state_with(uint32_t word, unsigned state)
{
	return (word & TB_LOW_MASK) | (uint32_t)state << TB_STATE_SHIFT;
}

/* ------------------------------------------------------------------------
 * Logical positions: uint32 tickets, compared only by
 * unsigned distance, so the 2^32 rollover needs no special case.
 */
static inline uint32_t tb__pos_distance(uint32_t write_pos, uint32_t read_pos)
{
	return write_pos - read_pos;
}

static inline uint32_t tb__pos_index(uint32_t pos, uint32_t num_chunks)
{
	return pos & (num_chunks - 1);
}

static inline uint32_t tb__pos_wrap(uint32_t pos, unsigned chunk_bits)
{
	return pos >> chunk_bits & TB_WRAP_MASK;
}

/* The tag the reader stamps after resolving @pos: from the position. */
static inline uint32_t tb__pos_next_wrap(uint32_t pos, unsigned chunk_bits)
{
	return tb__pos_wrap(pos + (1u << chunk_bits), chunk_bits);
}

/* ------------------------------------------------------------------------
 * The control header (ours; the design leaves it open): the ring's ABI.
 * 512 bytes, eight lines of TB_RING_LINE bytes with one concern each;
 * chunk 0 starts right after it.  All fields are 32-bit words accessed
 * atomically; the reader treats every one of them as untrusted.
 *
 * TB_RING_LINE is 64 bytes, the cache line of x86-64 and of most ARM
 * cores, and part of the ABI: every process sharing a ring must agree on
 * the offsets below, so it is not a tunable.  On CPUs with 128-byte
 * lines (Apple M-series, some POWER and recent server ARM cores, and
 * Intel's adjacent-line prefetch, which pulls lines in pairs) two
 * neighbouring lines share one: write_pos with line 0's read-only
 * geometry, read_pos with the doorbell, the writer counters with the
 * reader's.  That is false sharing between writers and the reader, a
 * cost in throughput, never in correctness.  64 was kept: doubling every
 * line doubles the header for every ring, firmware included, to help
 * CPUs that are not the common case, and the pairs that share a 128-byte
 * line were chosen so that the hot pair (write_pos, read_pos) does not.
 */
#define TB_RING_MAGIC		0x31524254u	/* "TBR1" */
/*
 * The ring's ABI version.  3: the reader's stop rule has a word of its
 * own (line 7), no longer a slot of the counter array, and the mapping
 * must be aligned to TB_RING_LINE.  2: stalled writers sleep on wake_seq
 * with a wake request (version 1 slept on read_pos), line 6 holds the
 * incremental-state generation.  Processes of different versions must not
 * share a ring: tb_ring_attach() refuses another version (TB_EVERSION).
 */
#define TB_RING_VERSION		3u
#define TB_RING_LINE		64u
#define TB_RING_HDR_SIZE	(8u * TB_RING_LINE)
#define TB_COUNT_MAX_LOG2	30u

enum tb_wstat {			/* writer-side counters, all writers */
	TB_WS_FULL,		/* TB_FULL results */
	TB_WS_NO_CHUNK,		/* TB_NO_CHUNK results */
	TB_WS_HOLES,		/* claims lost: positions burned */
	TB_WS_RELOCATIONS,	/* scrapes acknowledged by a writer */
	TB_WS_DROPPED_FRAGS,	/* fragments dropped in relocation */
	TB_WS_STALLS,		/* waits on a full ring */
	TB_WS_FUTEX_WAITS,	/* stalled writers' sleeps (futex waits) */
	TB_WS_FUTEX_WAKES,	/* writers' doorbell wakes (futex wakes) */
	TB_WS_POLLS,		/* stalled writers' polls of read_pos */
	TB_WS_YIELDS,		/* stalled writers' yields of the CPU */
	TB_WS_MAX
};

enum tb_rstat {			/* reader-side counters */
	TB_RS_EMITTED,		/* chunks emitted */
	TB_RS_HOLES,		/* positions resolved without data */
	TB_RS_SCRAPES,		/* prefixes taken from a held chunk */
	TB_RS_MALFORMED,	/* directories that failed validation */
	TB_RS_UNKNOWN_FORMAT,	/* chunks of a format other than 00 */
	TB_RS_RETRY_LATER,	/* positions left after losing every race */
	TB_RS_PINNED,		/* holes: chunk still RewriteRequested */
	TB_RS_FUTEX_WAITS,	/* tb_reader_wait() sleeps (futex waits) */
	TB_RS_FUTEX_WAKES,	/* wakes of stalled writers (futex wakes) */
	TB_RS_POLLS,		/* tb_reader_wait()'s polls of write_pos */
	TB_RS_MAX
};

/* Why a reader stopped a ring with TB_EPROTO (tb_ring_stats().stopped). */
enum tb_proto_rule {
	TB_PROTO_NONE,
	TB_PROTO_RESERVED_STATE,	/* state 101, 110 or 111 */
	TB_PROTO_FREE_TAG,		/* a free word of another lap */
	TB_PROTO_ACKED,			/* Acknowledged not reclaimable */
	TB_PROTO_WRITE_POS,		/* write_pos beyond the ring */
};

/* 32-bit words per line */
#define TB__LINE_WORDS		(TB_RING_LINE / 4u)

struct tb_ring_hdr {
	/* line 0: identity and geometry, written once by tb_ring_init() */
	uint32_t magic;
	uint32_t version;
	uint32_t hdr_size;
	uint32_t chunk_log2;
	uint32_t count_log2;
	uint32_t pad0[TB__LINE_WORDS - 5];
	/* line 1: the writers' cursor */
	uint32_t write_pos;
	uint32_t pad1[TB__LINE_WORDS - 1];
	/* line 2: the reader's cursor, and how stalled writers sleep */
	uint32_t read_pos;
	uint32_t waiters;	/* hint: writers asleep on wake_seq */
	uint32_t wake_req;	/* set by a writer going to sleep */
	uint32_t wake_seq;	/* the stalled writers' futex: bumped to wake */
	uint32_t pad2[TB__LINE_WORDS - 4];
	/* line 3: the ring's own doorbell */
	struct tb_bell bell;
	uint32_t pad3[TB__LINE_WORDS - 2];
	/* line 4: writer counters (enum tb_wstat), the rest zero */
	uint32_t wstat[TB__LINE_WORDS];
	/* line 5: reader counters (enum tb_rstat), stored by every call */
	uint32_t rstat[TB__LINE_WORDS];
	/* line 6: the service's requests to the writers */
	uint32_t gen;		/* bumped: start a fresh incremental state */
	uint32_t pad6[TB__LINE_WORDS - 1];
	/* line 7: the reader's verdict */
	uint32_t stopped;	/* 0, or the TB_PROTO_* rule it stopped on */
	uint32_t pad7[TB__LINE_WORDS - 1];
};

/*
 * The ABI pinned at compile time (C99 has no _Static_assert, C++ needs
 * the same spelling: a negative array size fails the build).  Moving,
 * growing or reordering any field of the header fails here, on every
 * compiler, before two builds can disagree about a shared ring.
 */
#define TB__ABI_CHECK(name, cond) typedef char tb__abi_##name[(cond) ? 1 : -1]
#define TB__ABI_AT(field, line, word)					\
	TB__ABI_CHECK(at_##field, offsetof(struct tb_ring_hdr, field) == \
		      (line) * TB_RING_LINE + 4u * (word))
TB__ABI_CHECK(line, TB_RING_LINE == 64u);
TB__ABI_CHECK(hdr_size, sizeof(struct tb_ring_hdr) == TB_RING_HDR_SIZE);
TB__ABI_CHECK(hdr_size_512, TB_RING_HDR_SIZE == 512u);
TB__ABI_CHECK(bell_size, sizeof(struct tb_bell) == 8u);
TB__ABI_CHECK(wstat_fit, TB_WS_MAX <= TB__LINE_WORDS);
TB__ABI_CHECK(rstat_fit, TB_RS_MAX <= TB__LINE_WORDS);
TB__ABI_AT(magic, 0, 0);
TB__ABI_AT(version, 0, 1);
TB__ABI_AT(hdr_size, 0, 2);
TB__ABI_AT(chunk_log2, 0, 3);
TB__ABI_AT(count_log2, 0, 4);
TB__ABI_AT(write_pos, 1, 0);
TB__ABI_AT(read_pos, 2, 0);
TB__ABI_AT(waiters, 2, 1);
TB__ABI_AT(wake_req, 2, 2);
TB__ABI_AT(wake_seq, 2, 3);
TB__ABI_AT(bell, 3, 0);
TB__ABI_CHECK(bell_seq, offsetof(struct tb_ring_hdr, bell.seq) == 192u);
TB__ABI_CHECK(bell_sleeping,
	      offsetof(struct tb_ring_hdr, bell.sleeping) == 196u);
TB__ABI_AT(wstat, 4, 0);
TB__ABI_AT(rstat, 5, 0);
TB__ABI_AT(gen, 6, 0);
TB__ABI_AT(stopped, 7, 0);

/* One process's view of a ring: private, never stored in the mapping. */
struct tb_ring {
	struct tb_ring_hdr *hdr;
	struct tb_bell *bell;
	uint8_t *chunks;
	uint32_t chunk_size;
	uint32_t num_chunks;
	uint32_t chunk_bits;
	uint32_t width;		/* size-entry width, tb_frag_width() */
};

static inline unsigned tb__log2(uint32_t v)
{
	unsigned n = 0;

	while (v >>= 1)
		n++;
	return n;
}

static inline bool tb__pow2_in(uint32_t v, uint32_t lo, uint32_t hi)
{
	return v >= lo && v <= hi && !(v & (v - 1));
}

/* Bytes a ring of this geometry needs, or 0 if the geometry is illegal. */
static inline size_t tb_ring_size(uint32_t chunk_size, uint32_t num_chunks)
{
	if (!tb__pow2_in(chunk_size, TB_CHUNK_MIN, TB_CHUNK_MAX) ||
	    !tb__pow2_in(num_chunks, 2, 1u << TB_COUNT_MAX_LOG2))
		return 0;
	if ((SIZE_MAX - TB_RING_HDR_SIZE) / chunk_size < num_chunks)
		return 0;
	return TB_RING_HDR_SIZE + (size_t)chunk_size * num_chunks;
}

/*
 * tb_ring_size() as a constant expression, for memory declared static
 * (firmware): static uint8_t mem[TB_RING_SIZE(512, 8)] TB_RING_ALIGNED;
 * Constant arguments only (each is used more than once).  An illegal
 * geometry, or one too large for a size_t, fails the build (a negative
 * array size) where tb_ring_size() would give 0.
 */
#define TB__RING_GEOMETRY_OK(cs, n)					\
	((cs) >= TB_CHUNK_MIN && (cs) <= TB_CHUNK_MAX &&		\
	 !((cs) & ((cs) - 1)) && (n) >= 2 &&				\
	 (n) <= (1u << TB_COUNT_MAX_LOG2) && !((n) & ((n) - 1)) &&	\
	 (size_t)(n) <= (SIZE_MAX - TB_RING_HDR_SIZE) / (size_t)(cs))
#define TB_RING_SIZE(cs, n)						\
	(sizeof(char[TB__RING_GEOMETRY_OK(cs, n) ? 1 : -1]) *		\
	 ((size_t)TB_RING_HDR_SIZE + (size_t)(cs) * (size_t)(n)))

/*
 * The alignment for such an array: the header's lines (TB_RING_LINE),
 * which tb_ring_init() and tb_ring_attach() require (TB_EALIGN).  GNU C
 * can say it here; another compiler needs its own attribute (C11's and
 * C++11's alignas goes before the declaration), or a larger array and a
 * pointer rounded up to TB_RING_LINE.
 */
#if defined(__GNUC__)
#define TB_RING_ALIGNED		__attribute__((aligned(TB_RING_LINE)))
#else
#define TB_RING_ALIGNED
#endif

/* Whether @mem may hold a ring: aligned to the header's lines. */
static inline bool tb__ring_aligned(const void *mem)
{
	return (uintptr_t)mem % TB_RING_LINE == 0;
}

static inline uint8_t *tb__ring_chunk(const struct tb_ring *r, uint32_t pos)
{
	return r->chunks +
	       (size_t)tb__pos_index(pos, r->num_chunks) * r->chunk_size;
}

/* The state word of the chunk @pos maps to: bytes 0..3, naturally aligned. */
static inline uint32_t *tb__ring_word(const struct tb_ring *r, uint32_t pos)
{
	return (uint32_t *)(void *)tb__ring_chunk(r, pos);
}

static inline uint32_t tb__ring_wrap(const struct tb_ring *r, uint32_t pos)
{
	return tb__pos_wrap(pos, r->chunk_bits);
}

static inline uint32_t tb__ring_next_wrap(const struct tb_ring *r,
					 uint32_t pos)
{
	return tb__pos_next_wrap(pos, r->chunk_bits);
}

static inline void tb__ring_view(struct tb_ring *r, void *mem,
				  uint32_t chunk_log2, uint32_t count_log2)
{
	r->hdr = (struct tb_ring_hdr *)mem;
	r->bell = &r->hdr->bell;
	r->chunks = (uint8_t *)mem + TB_RING_HDR_SIZE;
	r->chunk_size = 1u << chunk_log2;
	r->num_chunks = 1u << count_log2;
	r->chunk_bits = count_log2;
	r->width = tb_frag_width(r->chunk_size);
}

/*
 * Validates an existing header as untrusted input and captures the
 * geometry once.  @mem must be aligned to TB_RING_LINE (TB_EALIGN).
 */
static inline int tb_ring_attach(struct tb_ring *r, void *mem, size_t len)
{
	struct tb_ring_hdr *h = (struct tb_ring_hdr *)mem;
	uint32_t cl, nl;
	size_t need;

	if (!r || !mem)
		return TB_EINVAL;
	if (!tb__ring_aligned(mem))
		return TB_EALIGN;
	if (len < TB_RING_HDR_SIZE)
		return TB_ESHORT;
	/* acquire: pairs with the release store of magic in init */
	if (tb_atomic_load(&h->magic, TB_ACQ) != TB_RING_MAGIC)
		return TB_EMAGIC;
	/* relaxed: ordered by the magic's acquire above; each read once */
	if (tb_atomic_load(&h->version, TB_RLX) != TB_RING_VERSION)
		return TB_EVERSION;
	if (tb_atomic_load(&h->hdr_size, TB_RLX) != TB_RING_HDR_SIZE)
		return TB_EHEADER;
	cl = tb_atomic_load(&h->chunk_log2, TB_RLX);
	nl = tb_atomic_load(&h->count_log2, TB_RLX);
	if (cl < 8 || cl > 15 || nl < 1 || nl > TB_COUNT_MAX_LOG2)
		return TB_EGEOMETRY;
	need = tb_ring_size(1u << cl, 1u << nl);
	if (!need)
		return TB_EGEOMETRY;
	if (len < need)
		return TB_ESHORT;
	tb__ring_view(r, mem, cl, nl);
	return TB_OK;
}

/*
 * Lays out a ring at position @start.  With @start == 0 the chunk area is
 * not touched: it must be zero-filled (a fresh mapping is), because
 * FreeForWrap(0) is the zero word.  Any other @start stamps every chunk
 * with the free tag of the first position >= @start that maps to it; that
 * exists for tests and for rings that must start near the 2^32 rollover.
 */
static inline int tb__ring_init_at(struct tb_ring *r, void *mem, size_t len,
				  uint32_t chunk_size, uint32_t num_chunks,
				  uint32_t start)
{
	size_t need = tb_ring_size(chunk_size, num_chunks);
	struct tb_ring_hdr *h = (struct tb_ring_hdr *)mem;
	uint32_t i;

	if (!r || !mem)
		return TB_EINVAL;
	if (!need)
		return TB_EGEOMETRY;
	if (!tb__ring_aligned(mem))
		return TB_EALIGN;
	if (len < need)
		return TB_ESHORT;
	TB_MEMSET(h, 0, sizeof(*h));
	tb__ring_view(r, mem, tb__log2(chunk_size), tb__log2(num_chunks));
	h->version = TB_RING_VERSION;
	h->hdr_size = TB_RING_HDR_SIZE;
	h->chunk_log2 = tb__log2(chunk_size);
	h->count_log2 = r->chunk_bits;
	h->write_pos = start;
	h->read_pos = start;
	for (i = 0; start && i < num_chunks; i++) {
		uint32_t pos = start + ((i - start) & (num_chunks - 1));

		/* relaxed: published by the magic's release below */
		tb_atomic_store(tb__ring_word(r, pos), tb__state_free(
				   tb__ring_wrap(r, pos)), TB_RLX);
	}
	/* release: pairs with the acquire load of magic in attach */
	tb_atomic_store(&h->magic, TB_RING_MAGIC, TB_REL);
	return TB_OK;
}

static inline int tb_ring_init(struct tb_ring *r, void *mem, size_t len,
			       uint32_t chunk_size, uint32_t num_chunks)
{
	return tb__ring_init_at(r, mem, len, chunk_size, num_chunks, 0);
}

/*
 * Rings this process's writers (or its reader) through @bell instead of
 * the ring's own doorbell.  Writers and reader of a ring must agree.
 */
static inline void tb_ring_set_bell(struct tb_ring *r, struct tb_bell *bell)
{
	r->bell = bell;
}

/*
 * Counters, read as untrusted statistics (relaxed loads), and how many
 * chunks are in each state right now (@states, indexed by the state
 * value 0..7; visiting every state word costs O(num_chunks)).  @pinned
 * is states[TB_REWRITE]: chunks scraped by the reader and not yet
 * acknowledged by their writer.  A live writer acknowledges within
 * microseconds; one that died holding its chunk never does, and the
 * protocol leaves that chunk to it for good (only its writer may leave
 * RewriteRequested), so every later lap of it is a hole (rstat
 * TB_RS_PINNED).  @stopped is the rule the reader stopped the ring on
 * (TB_PROTO_*), 0 while it runs.  @holders names the writers of the
 * chunks held (Acquired or RewriteRequested), the first TB_RING_HOLDERS
 * distinct ones; @nholders counts them all: a trace says whose packets a
 * held chunk left open (tools/tbcheck.h explains per writer).
 */
#define TB_RING_HOLDERS	8

struct tb_ring_stats {
	uint32_t write_pos;
	uint32_t read_pos;
	uint32_t pinned;
	uint32_t stopped;
	uint32_t states[8];
	uint32_t wstat[TB_WS_MAX];
	uint32_t rstat[TB_RS_MAX];
	uint16_t holders[TB_RING_HOLDERS];
	uint32_t nholders;
};

/* Counts chunk word @word in @s: its state, and its writer if it holds it. */
static inline void tb__ring_stats_word(struct tb_ring_stats *s, uint32_t word)
{
	uint16_t w = tb_state_writer(word);
	unsigned st = tb_state_of(word), i;

	s->states[st]++;
	if (st != TB_ACQUIRED && st != TB_REWRITE)
		return;
	for (i = 0; i < s->nholders && i < TB_RING_HOLDERS; i++)
		if (s->holders[i] == w)
			return;
	if (s->nholders < TB_RING_HOLDERS)
		s->holders[s->nholders] = w;
	s->nholders++;	/* past TB_RING_HOLDERS: may count one twice */
}

static inline void tb_ring_stats(const struct tb_ring *r,
				 struct tb_ring_stats *s)
{
	uint32_t i;

	/* relaxed: statistics, no data is read on their strength */
	s->write_pos = tb_atomic_load(&r->hdr->write_pos, TB_RLX);
	s->read_pos = tb_atomic_load(&r->hdr->read_pos, TB_RLX);
	for (i = 0; i < TB_WS_MAX; i++)
		s->wstat[i] = tb_atomic_load(&r->hdr->wstat[i], TB_RLX);
	for (i = 0; i < TB_RS_MAX; i++)
		s->rstat[i] = tb_atomic_load(&r->hdr->rstat[i], TB_RLX);
	s->stopped = tb_atomic_load(&r->hdr->stopped, TB_RLX);
	for (i = 0; i < 8; i++)
		s->states[i] = 0;
	s->nholders = 0;
	for (i = 0; i < r->num_chunks; i++)	/* relaxed: statistics */
		tb__ring_stats_word(s, tb_atomic_load(tb__ring_word(r, i),
						      TB_RLX));
	s->pinned = s->states[TB_REWRITE];
}

/*
 * The incremental-state generation (line 6 of the header).  Tracing
 * formats with incremental state (Perfetto's interning, track
 * descriptors) need every writer to start afresh when what it emitted
 * before may be gone: the service bumps this word (after it wrote a
 * long-trace period out, or its central buffer overwrote chunks), and a
 * writer compares it with what it saw last, one relaxed load per packet.
 * A hint like the counters: a hostile process can only make writers
 * re-emit their state.
 */
static inline uint32_t tb_ring_generation(const struct tb_ring *r)
{
	/* relaxed: a late look only delays a re-emission by a packet */
	return tb_atomic_load(&r->hdr->gen, TB_RLX);
}

static inline void tb_ring_bump_generation(const struct tb_ring *r)
{
	tb_atomic_add(&r->hdr->gen, 1);	/* relaxed: a hint, see above */
}

/* ------------------------------------------------------------------------
 * Protocol steps (docs/protocol.md has them all).  One function per
 * transition, each one CAS against the exact word its caller observed.
 * On failure *@seen receives the word found, for redispatch; a step
 * called with a word in the wrong state fails without touching memory.
 */

/*
 * Where a writer whose last reservation was @floor - 1 reserves, with
 * write_pos @wr and read_pos @rd (docs/protocol.md, section 8).
 *
 * Honest writers only move write_pos forward, so @wr behind the floor
 * (their distance has the top bit) is a stray store that put it back,
 * or an honest ring 2^31 or more positions past a writer that sat idle.
 * The floor matters only while the writer's last position may be
 * unresolved: a claim succeeds only within a ring ahead of the reader,
 * so a position the reader could hand on before that one is at most a
 * ring behind the floor (a whole ring when the ring was full).  The
 * writer takes the floor when @wr is that close behind it (whatever
 * read_pos says: a stray store can put it back too), or when the floor
 * is less than a ring ahead of @rd (which mends a write_pos put back
 * behind read_pos).  Anywhere else the floor is long resolved and says
 * nothing: taking it would be TB_FULL on an empty ring, every time.  A
 * floor taken is at most a ring ahead of read_pos, or of a write_pos the
 * reader catches up with; a whole ring ahead, the writer moves write_pos
 * up to it (tb__w_reserve_from()), so a drained ring has room for it.
 */
static inline uint32_t tb__pos_floor(uint32_t wr, uint32_t rd, uint32_t floor,
				     uint32_t num_chunks)
{
	if (!(tb__pos_distance(wr, floor) & 0x80000000u))
		return wr;	/* at or past the floor: the honest case */
	return tb__pos_distance(floor, wr) <= num_chunks ||
	       tb__pos_distance(floor, rd) < num_chunks ? floor : wr;
}

/*
 * Reserve a logical position: TB_OK with *@pos, or TB_FULL with the
 * sampled read_pos in *@read_sample (write_pos untouched, unless moved up
 * to a floor a whole ring ahead of read_pos).  A lost write_pos CAS
 * reserves nothing and is retried at no cost.  @floor, when not NULL, is
 * one past the caller's last reservation (see tb__writer_claim()): where
 * tb__pos_floor() says it holds, a write_pos behind it is taken as
 * *@floor, and the CAS moves it past.
 */
static inline int tb__w_reserve_from(const struct tb_ring *r,
				       const uint32_t *floor, uint32_t *pos,
				       uint32_t *read_sample)
{
	struct tb_ring_hdr *h = r->hdr;
	uint32_t rd, wr, at;

	for (;;) {
		/*
		 * acquire: pairs with the reader's release store of read_pos;
		 * capacity shows only after its chunk transitions.  It comes
		 * first, every round: the reader stores read_pos = X only
		 * after it saw write_pos >= X, so a write_pos loaded after
		 * it is >= X too and the distance cannot wrap to "full".
		 * (A write_pos kept from before, or from a failed CAS, can
		 * be older than the read_pos that follows it.)
		 */
		rd = tb_atomic_load(&h->read_pos, TB_ACQ);
		/* relaxed: a stale write_pos only makes the CAS below fail */
		wr = tb_atomic_load(&h->write_pos, TB_RLX);
		at = floor ? tb__pos_floor(wr, rd, *floor, r->num_chunks) : wr;
		if (tb__pos_distance(at, rd) >= r->num_chunks) {
			/*
			 * A floor a whole ring ahead waits for the position
			 * a ring behind it, which the reader resolves only
			 * once write_pos is past it: move write_pos up to
			 * the floor (what it skips are holes).  Relaxed, a
			 * ticket as below; a lost CAS leaves it to the next.
			 */
			if (at != wr &&
			    tb__pos_distance(at, rd) == r->num_chunks)
				tb_atomic_cas(&h->write_pos, &wr, at, TB_RLX,
					      TB_RLX);
			*read_sample = rd;
			return TB_FULL;
		}
		/* relaxed/relaxed: a ticket, it transfers no ownership */
		if (tb_atomic_cas(&h->write_pos, &wr, at + 1, TB_RLX, TB_RLX)) {
			*pos = at;
			return TB_OK;
		}
	}
}

static inline int tb__w_reserve(const struct tb_ring *r, uint32_t *pos,
				  uint32_t *read_sample)
{
	return tb__w_reserve_from(r, NULL, pos, read_sample);
}

/*
 * Claim the chunk for reserved @pos: FreeForWrap(wrap(pos)) -> @acquired.
 * One attempt only; the word found on failure is discarded, never retried.
 */
static inline bool tb__w_claim(const struct tb_ring *r, uint32_t pos,
				 uint32_t acquired)
{
	uint32_t seen = tb__state_free(tb__ring_wrap(r, pos));

	/*
	 * acquire on success: pairs with the reader's release into this
	 * free word; its copy of the old payload is over before we write.
	 * relaxed on failure: the position is a hole, nothing is read.
	 */
	return tb_atomic_cas(tb__ring_word(r, pos), &seen, acquired, TB_ACQ, TB_RLX);
}

/*
 * Publish: Acquired(n) -> @want, which is Complete or (with a fragment
 * still open) Acquired with a larger count.  The writer, which holds the
 * chunk's address, calls the _word form.
 */
TB__ALWAYS bool tb__w_publish_word(uint32_t *word, uint32_t *seen,
				   uint32_t want)
{
	if (tb_state_of(*seen) != TB_ACQUIRED)
		return false;
	/*
	 * release: pairs with the reader's acquire load of the state; the
	 * payload, size entries and BufferID are visible before the count.
	 * relaxed on failure: the word found is only compared.  A scrape
	 * (the one failure a writer acts on) leaves the writer nothing to
	 * order: it reads only its own unpublished suffix, which the
	 * reader's copy never touches, writes nothing more into this chunk
	 * and writes the suffix into a fresh one (the claim's acquire).  The
	 * reader's copy is over before the chunk's next claim through the
	 * reader's own reclaim (docs/protocol.md, section 6.2).
	 */
	return tb_atomic_cas(word, seen, want, TB_REL, TB_RLX);
}

static inline bool tb__w_publish(const struct tb_ring *r, uint32_t pos,
				   uint32_t *seen, uint32_t want)
{
	return tb__w_publish_word(tb__ring_word(r, pos), seen, want);
}

/* Reuse: Complete(n) -> Acquired(n), every other field unchanged. */
TB__ALWAYS bool tb__w_reuse_word(uint32_t *word, uint32_t *seen)
{
	if (tb_state_of(*seen) != TB_COMPLETE)
		return false;
	/*
	 * relaxed/relaxed: this RMW continues the release sequence of our
	 * own earlier publication; the next publish releases again.
	 */
	return tb_atomic_cas(word, seen, tb__state_with(*seen, TB_ACQUIRED),
			     TB_RLX, TB_RLX);
}

static inline bool tb__w_reuse(const struct tb_ring *r, uint32_t pos,
				 uint32_t *seen)
{
	return tb__w_reuse_word(tb__ring_word(r, pos), seen);
}

/* Reader: Acquired(n) -> RewriteRequested(n), after copying the prefix. */
static inline bool tb__r_mark_rewrite(const struct tb_ring *r, uint32_t pos,
					uint32_t *seen)
{
	if (tb_state_of(*seen) != TB_ACQUIRED)
		return false;
	/*
	 * relaxed on success: nothing of ours needs ordering before the
	 * writer's relocation, which reads only its unpublished suffix and
	 * never writes this chunk again; our copy is over before the next
	 * claim through our own reclaim of the Acknowledged word, a release
	 * later in this thread.  acquire on failure: pairs with the writer's
	 * release of a new publication, whose fragments we copy next.
	 */
	return tb_atomic_cas(tb__ring_word(r, pos), seen,
			tb__state_with(*seen, TB_REWRITE), TB_RLX, TB_ACQ);
}

/* Writer: RewriteRequested -> Acknowledged, after copying its suffix. */
static inline bool tb__w_acknowledge(const struct tb_ring *r, uint32_t pos,
				       uint32_t *seen)
{
	if (tb_state_of(*seen) != TB_REWRITE)
		return false;
	/*
	 * release: pairs with the reader's acq_rel reclaim; every access of
	 * ours under the old ownership is over.  relaxed on failure.
	 */
	return tb_atomic_cas(tb__ring_word(r, pos), seen, TB_WORD_ACKED, TB_REL,
			TB_RLX);
}

/* Reader: FreeForWrap(wrap(pos)) -> FreeForWrap(next_wrap(pos)). */
static inline bool tb__r_advance(const struct tb_ring *r, uint32_t pos,
				   uint32_t *seen)
{
	if (*seen != tb__state_free(tb__ring_wrap(r, pos)))
		return false;
	/*
	 * release: hands the chunk to the next traversal, pairs with that
	 * writer's acquire claim.  acquire on failure: pairs with nothing
	 * released yet (a fresh claim), but lets us redispatch safely.
	 */
	return tb_atomic_cas(tb__ring_word(r, pos), seen,
			tb__state_free(tb__ring_next_wrap(r, pos)), TB_REL,
			TB_ACQ);
}

/* Reader: Complete(n) -> FreeForWrap(next_wrap(pos)), after copying. */
static inline bool tb__r_reclaim_complete(const struct tb_ring *r,
					    uint32_t pos, uint32_t *seen)
{
	if (tb_state_of(*seen) != TB_COMPLETE)
		return false;
	/*
	 * release: our copy is over before the next claim (its acquire).
	 * acquire on failure: pairs with the writer's reuse+publication.
	 */
	return tb_atomic_cas(tb__ring_word(r, pos), seen,
			tb__state_free(tb__ring_next_wrap(r, pos)), TB_REL,
			TB_ACQ);
}

/* Reader: Acknowledged -> FreeForWrap(next_wrap(pos)). */
static inline bool tb__r_reclaim_acked(const struct tb_ring *r,
					 uint32_t pos, uint32_t *seen)
{
	if (*seen != TB_WORD_ACKED)
		return false;
	/*
	 * acq_rel: acquire pairs with the writer's release acknowledge
	 * (its last accesses), release with the next writer's claim.
	 */
	return tb_atomic_cas(tb__ring_word(r, pos), seen,
			tb__state_free(tb__ring_next_wrap(r, pos)), TB_ACQREL,
			TB_RLX);
}

/* Reader: the state word at @pos, acquire (pairs with every release). */
static inline uint32_t tb__r_load(const struct tb_ring *r,
					  uint32_t pos)
{
	return tb_atomic_load(tb__ring_word(r, pos), TB_ACQ);
}

/* A writer-side counter of the ring (all writers together). */
static inline void tb__ring_wstat(const struct tb_ring *r, enum tb_wstat s)
{
	tb_atomic_add(&r->hdr->wstat[s], 1);	/* relaxed: statistics */
}

/* Counts the doorbell's futex wake when a writer's ring made one. */
static inline void tb__w_bell_wake(const struct tb_ring *r)
{
	if (tb_bell_wake(r->bell))
		tb__ring_wstat(r, TB_WS_FUTEX_WAKES);
}

static inline void tb__w_notify(const struct tb_ring *r)
{
	tb__fence_after_rmw();	/* pairs with the fence in tb_bell_prepare */
	tb__w_bell_wake(r);
}

/*
 * How many chunks wait before a hand-over wakes a sleeping reader: three
 * quarters of the ring, so that the quarter left (one chunk at least)
 * carries the writers while the reader wakes up.
 */
static inline uint32_t tb__ring_backlog(const struct tb_ring *r)
{
	uint32_t n = r->num_chunks;

	return n - (n / 4 ? n / 4 : 1);
}

/*
 * A chunk was handed over: wake a sleeping reader only once a backlog
 * (tb__ring_backlog()) waits for it, whatever the full-ring policy.
 * Every sleep of the reader costs a futex wait and the wake that ends
 * it, and a reader woken for a few chunks goes back to sleep after them;
 * one woken only when the whole ring waits (as stalling writers did)
 * leaves them nothing to write while it wakes up, so that every batch
 * ended in a stall.  A reader that is not asleep (draining, or spinning
 * in tb_reader_wait()) costs nothing here; a lone chunk waits at most
 * the reader's wait timeout.
 */
static inline void tb__ring_handover(const struct tb_ring *r)
{
	struct tb_ring_hdr *h = r->hdr;

	tb__fence_after_rmw();	/* pairs with the fence in tb_bell_prepare */
	/* relaxed: statistics-grade reads, a stale one only delays a wake */
	if (tb_atomic_load(&r->bell->sleeping, TB_RLX) &&
	    tb__pos_distance(tb_atomic_load(&h->write_pos, TB_RLX),
			    tb_atomic_load(&h->read_pos, TB_RLX)) >=
	    tb__ring_backlog(r))
		tb__w_bell_wake(r);
}


/*
 * Wakes writers stalled on a full ring, after read_pos moved.  A writer
 * takes a ticket (wake_seq), sets the wake request and sleeps on wake_seq
 * while it still equals the ticket; the reader clears the request, bumps
 * wake_seq and wakes.  Only the reader clears the request, so it makes
 * one wake for every sleep, however many of its calls pass before the
 * woken writers run.  (Deciding on the waiter count woke them again at
 * every call until they had run: with two writers, as many wakes as
 * sleeps again.)  A request cleared before its writer sleeps costs that
 * writer nothing: its ticket is older than the bump, so its futex wait
 * returns at once.  A writer that dies asleep, or that finds read_pos
 * moved after all, costs one needless FUTEX_WAKE, once.
 */
static inline bool tb__ring_wake_writers(const struct tb_ring *r)
{
	struct tb_ring_hdr *h = r->hdr;
	uint32_t req;

	tb__fence_seq_cst();	/* pairs with the fence in tb__writer_stall */
	/* relaxed: the fence above gives the store->load order */
	req = tb_atomic_load(&h->wake_req, TB_RLX);
	if (!req)
		return false;
	/* relaxed: the bump below orders it for the writers */
	tb_atomic_cas(&h->wake_req, &req, 0, TB_RLX, TB_RLX);
	/*
	 * release: pairs with the ticket's acquire load in tb__writer_stall,
	 * so a ticket never includes the bump that served its own request.
	 * Only the reader stores wake_seq: no read-modify-write needed.
	 */
	tb_atomic_store(&h->wake_seq, tb_atomic_load(&h->wake_seq, TB_RLX) + 1,
			TB_REL);
	tb__wake(&h->wake_seq);
	return TB_HAVE_WAIT;	/* a system call, where there is one */
}

/*
 * Publishes read_pos (release: pairs with the writers' acquire load in
 * reserve; the chunk transitions come first) and wakes stalled writers.
 */
static inline void tb__r_publish_read_pos(const struct tb_ring *r,
					    uint32_t read_pos)
{
	tb_atomic_store(&r->hdr->read_pos, read_pos, TB_REL);
	tb__ring_wake_writers(r);
}

/* ------------------------------------------------------------------------
 * Writer: one per thread.
 */
enum tb_full_policy {
	TB_DROP,	/* a full ring fails at once with TB_FULL */
	TB_STALL,	/* wait for the reader, TB_FULL after stall_ms idle */
};

/*
 * The writer's tunables: each process's own, never seen by the others
 * sharing the ring, so a vendor may override them (define them before
 * including any tbring header).  What the processes must agree on - the
 * header's layout and line, the state word's fields, the chunk and
 * fragment limits of tbfrag.h - is the ABI and has no such knob.
 */
#ifndef TB_CLAIM_BUDGET
#define TB_CLAIM_BUDGET		4	/* lost claims per acquisition */
#endif
#ifndef TB_RELOCATE_ROUNDS
#define TB_RELOCATE_ROUNDS	8	/* scrapes of one suffix in a row */
#endif
#ifndef TB_STALL_MS
#define TB_STALL_MS		1000	/* default stall_ms */
#endif
#ifndef TB_SPLIT_MIN
#define TB_SPLIT_MIN		16	/* write_packet: smallest split */
#endif
#if TB_CLAIM_BUDGET < 1 || TB_RELOCATE_ROUNDS < 1
#error "tbring.h: TB_CLAIM_BUDGET and TB_RELOCATE_ROUNDS must be >= 1"
#endif
#if TB_SPLIT_MIN < 1 || TB_SPLIT_MIN > 249
#error "tbring.h: TB_SPLIT_MIN must be in [1, 249] (fits a 256-byte chunk)"
#endif

enum { TB__OWN_NONE, TB__OWN_ACQUIRED, TB__OWN_CACHED };

/*
 * Flags for tb_writer_open() and tb_writer_close(), one set each.  They
 * have different values, and each call refuses the other's (TB_EINVAL):
 * a swap is caught at its first call, never read as the other flag.
 */
#define TB_OPEN_CONT_PREV	0x1u	/* continues this writer's packet */
#define TB_CLOSE_CONT_NEXT	0x2u	/* the packet goes on in next chunk */

struct tb_span {		/* the open fragment's writable range */
	uint8_t *begin;
	uint8_t *end;
};

struct tb_writer {
	const struct tb_ring *ring;
	uint8_t *scratch;	/* chunk_size bytes, for relocation */
	uint16_t id;
	uint16_t bid;		/* target BufferID, format 00 */
	uint8_t policy;
	uint8_t own;		/* TB__OWN_* */
	uint8_t loss_owed;	/* next claimed chunk carries data loss */
	uint8_t cont_next;	/* last closed fragment continues */
	uint8_t relocated;	/* held chunk is a replacement: no reuse */
	uint32_t stall_ms;
	uint32_t headroom;	/* chunks it leaves to the other writers */
	uint32_t spin;		/* polls of read_pos before a sleep, adaptive */
	uint32_t pos;		/* position of the held chunk */
	uint32_t next_pos;	/* one past its last reservation: a floor */
	uint32_t word;		/* its state word as we last set it */
	uint32_t pub_off;	/* payload end of the published prefix */
	struct tb_frag_cursor cur;
	/* this writer's counters (the ring header has the totals) */
	uint32_t holes;
	uint32_t relocations;
	uint32_t dropped_frags;
#ifdef TB_TEST_HOOKS
	/*
	 * test seam: tb_writer_write_packet() runs it on each fragment it
	 * opens past its fast path, before it copies the @n bytes of @p
	 * into @span: it may write part of them, stall, tb_writer_sync()
	 * (which may move @span) or let go of the fragment, returning
	 * nonzero, which ends the write with that result.
	 */
	int (*fill)(void *ctx, struct tb_writer *w, struct tb_span *span,
		    const uint8_t *p, uint32_t n);
	void *fill_ctx;
#endif
};

static inline int tb_writer_init(struct tb_writer *w, const struct tb_ring *r,
				 uint16_t id, uint16_t bid,
				 enum tb_full_policy policy, void *scratch)
{
	if (!w || !r || !scratch || (policy != TB_DROP && policy != TB_STALL))
		return TB_EINVAL;
	if (!id)
		return TB_EID;	/* reserved: the central buffer refuses it */
	TB_MEMSET(w, 0, sizeof(*w));
	w->ring = r;
	w->scratch = (uint8_t *)scratch;
	w->id = id;
	w->bid = bid;
	w->policy = (uint8_t)policy;
	w->stall_ms = TB_STALL_MS;
	w->spin = TB_SPIN_MAX;
	/* relaxed: a floor for its own reservations (tb__writer_claim()) */
	w->next_pos = tb_atomic_load(&r->hdr->write_pos, TB_RLX);
	return TB_OK;
}

static inline void tb__wstat(const struct tb_writer *w, enum tb_wstat s,
			      uint32_t n)
{
	tb_atomic_add(&w->ring->hdr->wstat[s], n);	/* relaxed: statistics */
}

/*
 * Bytes a fragment opened now in the held chunk could take, or TB_ENOROOM
 * when it could take none (no chunk held, or the held one is full).
 */
static inline int32_t tb_writer_room(const struct tb_writer *w)
{
	return w->own == TB__OWN_NONE ? (int32_t)TB_ENOROOM :
					 tb_frag_room(&w->cur);
}

/*
 * The writer lets go of a Complete chunk it kept for reuse: the chunk is
 * final now, so tell the reader once a backlog builds up (a cached chunk
 * does not ring the bell).
 */
static inline void tb__writer_forget(struct tb_writer *w)
{
	if (w->own != TB__OWN_CACHED)
		return;
	w->own = TB__OWN_NONE;
	tb__ring_handover(w->ring);
}

/*
 * The next chunk this writer claims says "data loss".  Drops a cached
 * chunk, so the flag cannot be owed while a reusable chunk is kept.
 */
static inline void tb_writer_record_loss(struct tb_writer *w)
{
	w->loss_owed = 1;
	tb__writer_forget(w);
}

/*
 * Headroom: the writer claims a fresh chunk only while more than @chunks
 * of the ring's chunks are free, and leaves the last @chunks to the other
 * writers (when it would take one, it is refused as on a full ring, or
 * stalls under TB_STALL where it may wait).  For the writer that fills
 * the ring fastest, an interrupt handler's at thousands of events a
 * second: when the reader falls behind (a slow link), the loss falls on
 * it, and not on a main loop whose writer after each loss needs room for
 * a fresh incremental state (its descriptors and interned names, a few
 * hundred bytes) before its next event - without headroom the interrupt
 * refills every chunk the reader frees before that state fits, and the
 * main loop loses nearly all it writes (docs/firmware.md).  0, the
 * default: every chunk.  TB_EINVAL unless @chunks < the ring's count.
 */
static inline int tb_writer_set_headroom(struct tb_writer *w,
					 uint32_t chunks)
{
	if (!w || chunks >= w->ring->num_chunks)
		return TB_EINVAL;
	w->headroom = chunks;
	return TB_OK;
}

/* Whether claiming now would eat into the headroom; *@rp: read_pos. */
static inline bool tb__writer_in_headroom(const struct tb_writer *w,
					  uint32_t *rp)
{
	const struct tb_ring_hdr *h = w->ring->hdr;
	uint32_t wp;

	/* relaxed: an estimate; the reservation reloads read_pos acquire */
	*rp = tb_atomic_load(&h->read_pos, TB_RLX);
	wp = tb_atomic_load(&h->write_pos, TB_RLX);
	return wp - *rp + w->headroom >= w->ring->num_chunks;
}

/*
 * Waits for read_pos to leave @sample: true if it may have moved, false
 * after stall_ms without a change, where futexes are unavailable, or in
 * an interrupt handler (TB_IN_INTERRUPT(), tbsync.h: the reader it would
 * wait for cannot run until the handler returns).  It spins first
 * (tbsync.h); @again (it stalled before in this acquisition, and the room
 * it waited for went to other writers: more threads than the CPUs serve)
 * yields the CPU once; then it sleeps on wake_seq until the reader wakes it
 * (tb__ring_wake_writers()).
 */
static inline bool tb__writer_stall(struct tb_writer *w, uint32_t sample,
				    bool again)
{
	struct tb_ring_hdr *h = w->ring->hdr;
	uint32_t i, ticket;
	int ret;

	if (!TB_HAVE_WAIT || TB_IN_INTERRUPT())
		return false;
	tb__wstat(w, TB_WS_STALLS, 1);
	if (tb_bell_ring(w->ring->bell))	/* the reader may be asleep */
		tb__wstat(w, TB_WS_FUTEX_WAKES, 1);
	/*
	 * A reader that is draining frees room within microseconds: spin
	 * before paying for a sleep and a wake-up, w->spin polls, adapted as
	 * tbsync.h says (relaxed loads; the reserve that follows loads
	 * read_pos with acquire).
	 */
	for (i = 0; i < w->spin; i++) {
		if (tb_atomic_load(&h->read_pos, TB_RLX) != sample) {
			tb__wstat(w, TB_WS_POLLS, i + 1);
			tb__spin_adapt(&w->spin, true);
			return true;
		}
		tb__cpu_relax();
	}
	tb__wstat(w, TB_WS_POLLS, i);
	tb__spin_adapt(&w->spin, false);
	if (again && tb__yield()) {
		tb__wstat(w, TB_WS_YIELDS, 1);
		/* relaxed: as the polls above */
		if (tb_atomic_load(&h->read_pos, TB_RLX) != sample)
			return true;
	}
	/* acquire: pairs with the reader's release bump of wake_seq */
	ticket = tb_atomic_load(&h->wake_seq, TB_ACQ);
	tb_atomic_add(&h->waiters, 1);	/* relaxed: a hint */
	tb_atomic_store(&h->wake_req, 1, TB_RLX);	/* fenced below */
	tb__fence_seq_cst();	/* pairs with tb__ring_wake_writers() */
	if (tb_atomic_load(&h->read_pos, TB_RLX) != sample) {
		ret = 1;
	} else {
		tb__wstat(w, TB_WS_FUTEX_WAITS, 1);
		ret = tb__wait(&h->wake_seq, ticket, w->stall_ms);
	}
	tb_atomic_add(&h->waiters, (uint32_t)-1);	/* relaxed: a hint */
	/* relaxed: the reserve that follows loads read_pos with acquire */
	return ret > 0 || tb_atomic_load(&h->read_pos, TB_RLX) != sample;
}

/*
 * The ring was full and this writer gives up (TB_DROP, or a stall that
 * ran out): a reader asleep on the doorbell must learn of it.  It may be
 * sleeping with every chunk kept by writers that reuse them - Complete,
 * no hand-over, so nothing rang - while every other packet is dropped;
 * woken, it finds the ring under pressure (tb__reader_pressed()) and
 * takes the kept chunks and the published prefixes of held ones.  The
 * counter's add above is the store this fence orders before the load of
 * the sleeping hint (the Dekker pair of tb_bell_prepare()): the common
 * case is that one relaxed load, one wake per sleep.
 */
static inline void tb__writer_full(struct tb_writer *w)
{
	tb__fence_after_rmw();	/* pairs with the fence in tb_bell_prepare */
	tb__w_bell_wake(w->ring);
}

/*
 * Reserve and claim a fresh chunk whose word carries @flags (and owed data
 * loss).  Lost claims burn positions: they ring the doorbell and spend the
 * budget.  Once anything burned, a full ring is TB_NO_CHUNK, never a wait.
 *
 * Each reservation comes after this writer's previous one while that one
 * may be unresolved, even if a stray store put write_pos back: the
 * reader hands chunks on in position order, so a position behind one
 * already taken, whose chunk is free for this lap, would put this
 * writer's next packet before its last.  Once the reader is past it, the
 * floor holds nothing back (tb__pos_floor()): a writer idle for 2^31
 * positions and more reserves where the others do.
 */
static inline int tb__writer_claim(struct tb_writer *w, uint32_t flags)
{
	const struct tb_ring *r = w->ring;
	unsigned burned = 0, stalls = 0;
	uint32_t pos, sample, word;

	while (w->headroom && tb__writer_in_headroom(w, &sample)) {
		if (w->policy == TB_STALL &&
		    tb__writer_stall(w, sample, stalls++ > 0))
			continue;
		tb__wstat(w, TB_WS_FULL, 1);
		tb__writer_full(w);
		return TB_FULL;
	}
	for (;;) {
		if (tb__w_reserve_from(r, &w->next_pos, &pos, &sample) ==
		    TB_FULL) {
			if (burned)
				break;
			if (w->policy == TB_STALL &&
			    tb__writer_stall(w, sample, stalls++ > 0))
				continue;
			tb__wstat(w, TB_WS_FULL, 1);
			tb__writer_full(w);
			return TB_FULL;
		}
		w->next_pos = pos + 1;
		word = tb__state_data(TB_ACQUIRED, TB_FORMAT_TARGET,
				     flags | (w->loss_owed ? TB_F_DATA_LOSS : 0),
				     0, w->id);
		if (tb__w_claim(r, pos, word)) {
			uint8_t *chunk = tb__ring_chunk(r, pos);

			tb_frag_set_bid(chunk, w->bid);
			tb_frag_cursor_init(&w->cur, chunk, r->chunk_size);
			w->own = TB__OWN_ACQUIRED;
			w->pos = pos;
			w->word = word;
			w->pub_off = TB_FRAG_PAYLOAD_OFF;
			w->loss_owed = 0;
			w->relocated = 0;
			return TB_OK;
		}
		w->holes++;
		tb__wstat(w, TB_WS_HOLES, 1);
		tb__w_notify(r);
		if (++burned == TB_CLAIM_BUDGET)
			break;
	}
	tb__wstat(w, TB_WS_NO_CHUNK, 1);
	return TB_NO_CHUNK;
}

/* Loses what the held chunk has not published: owes data loss. */
static inline void tb__writer_drop(struct tb_writer *w, uint32_t frags)
{
	w->dropped_frags += frags;
	tb__wstat(w, TB_WS_DROPPED_FRAGS, frags);
	w->own = TB__OWN_NONE;
	w->cur.open = 0;
	w->cont_next = 0;
	w->loss_owed = 1;
}

/*
 * The reader scraped our chunk: @seen must be our own word turned
 * RewriteRequested.  As docs/protocol.md 5.2 has it, in this order: copy
 * the unpublished suffix - closed fragments and the first @used bytes of
 * an open fragment - to scratch; acknowledge (after that the reader may
 * reuse the chunk); only then claim a replacement and restore the suffix
 * there.  TB_OK with nothing held when there was nothing to move.
 */
static inline int tb__writer_relocate(struct tb_writer *w, uint32_t seen,
				       uint32_t used)
{
	const struct tb_ring *r = w->ring;
	uint32_t cs = r->chunk_size;
	uint32_t k = w->cur.nfrags - tb_state_nfrags(w->word);
	uint32_t dlen = k * r->width;
	uint32_t len = w->cur.payload - w->pub_off;
	uint32_t carry, open = w->cur.open;
	int ret;

	if (seen != tb__state_with(w->word, TB_REWRITE)) {
		/* not our word: touch nothing, the suffix is lost */
		tb__writer_drop(w, k + w->cur.open);
		return TB_EPROTO;
	}
	if (open)
		len += used;
	/* scratch mirrors a chunk: payload at 6, directory at the end */
	TB_MEMCPY(w->scratch + TB_FRAG_PAYLOAD_OFF, w->cur.chunk + w->pub_off,
	       len);
	TB_MEMCPY(w->scratch + cs - dlen, w->cur.chunk + w->cur.dir, dlen);
	if (!tb__w_acknowledge(r, w->pos, &seen)) {
		tb__writer_drop(w, k + w->cur.open);
		return TB_EPROTO;
	}
	w->relocations++;
	tb__wstat(w, TB_WS_RELOCATIONS, 1);
	w->own = TB__OWN_NONE;
	if (!k && !open)
		return TB_OK;
	/*
	 * docs/protocol.md 3.4: a non-empty prefix taken keeps "continues from
	 * previous" and "data loss"; if nothing was taken they travel with
	 * the suffix.  "Continues on next" stays pending in cont_next.
	 */
	carry = tb_state_nfrags(seen) ? 0 :
		tb__state_flags(seen) & (TB_F_CONT_PREV | TB_F_DATA_LOSS);
	if (carry & TB_F_DATA_LOSS)
		w->loss_owed = 1;
	ret = tb__writer_claim(w, carry & TB_F_CONT_PREV);
	if (ret) {
		tb__writer_drop(w, k + open);
		return TB_DROPPED;
	}
	TB_MEMCPY(w->cur.chunk + TB_FRAG_PAYLOAD_OFF,
	       w->scratch + TB_FRAG_PAYLOAD_OFF, len);
	TB_MEMCPY(w->cur.chunk + cs - dlen, w->scratch + cs - dlen, dlen);
	w->cur.payload = TB_FRAG_PAYLOAD_OFF + len - (open ? used : 0);
	w->cur.dir = cs - dlen;
	w->cur.nfrags = k;
	w->cur.open = open;
	w->relocated = 1;
	return TB_OK;
}

/*
 * Gives the held Acquired chunk back with only what it already published:
 * Complete with the published count, or Acknowledged if the reader has
 * just scraped it.  Never leaves a chunk pinned.
 */
static inline void tb__writer_abandon(struct tb_writer *w)
{
	uint32_t seen = w->word;

	if (!tb__w_publish(w->ring, w->pos, &seen,
			     tb__state_with(w->word, TB_COMPLETE)) &&
	    seen == tb__state_with(w->word, TB_REWRITE))
		tb__w_acknowledge(w->ring, w->pos, &seen);
	tb__w_notify(w->ring);
}

/* The held chunk's state word: its first bytes (see tb__ring_word()). */
static inline uint32_t *tb__writer_word(const struct tb_writer *w)
{
	return (uint32_t *)(void *)w->cur.chunk;
}

/* The held chunk may be kept for the next fragment after publication. */
static inline bool tb__writer_cacheable(const struct tb_writer *w)
{
	return !w->cont_next && !w->relocated && !w->loss_owed &&
	       tb_frag_room(&w->cur) > 0;
}

/*
 * One publication of every closed fragment: Complete, or Acquired with
 * the new count while a fragment is open.  True when published (or when
 * there was nothing new), false with *@seen the word that failed the
 * CAS: a scrape.
 */
static inline bool tb__writer_try_publish(struct tb_writer *w, uint32_t *seen)
{
	uint32_t want;

	if (w->cur.open && w->cur.nfrags == tb_state_nfrags(w->word))
		return true;	/* nothing new; stay Acquired */
	/* our word with the new state and count (and N when due) */
	want = tb__state_with(w->word & ~TB_NFRAGS_MASK,
			      w->cur.open ? TB_ACQUIRED : TB_COMPLETE) |
	       w->cur.nfrags << TB_NFRAGS_SHIFT |
	       (w->cont_next && !w->cur.open ? TB_F_CONT_NEXT : 0);
	*seen = w->word;
	if (!tb__w_publish_word(tb__writer_word(w), seen, want))
		return false;
	w->word = want;
	w->pub_off = w->cur.payload;
	if (w->cur.open)
		return true;
	/*
	 * Ring only when the chunk is handed over: one kept for reuse is not
	 * final, and waking the reader for every packet would cost a system
	 * call each and chop chunks into few packets.
	 */
	w->own = TB__OWN_CACHED;
	if (!tb__writer_cacheable(w))
		tb__writer_forget(w);
	return true;
}

/*
 * The publication lost to a scrape (@seen): relocate (with the first
 * @used bytes of an open fragment) and publish again in the replacement,
 * at most TB_RELOCATE_ROUNDS relocations in all; then give up what is
 * left.  Out of line: the writer's fast path has no use for it.
 */
TB__COLD int tb__writer_publish_lost(struct tb_writer *w, uint32_t seen,
				     uint32_t used)
{
	unsigned round;

	for (round = 0; round < TB_RELOCATE_ROUNDS; round++) {
		int ret = tb__writer_relocate(w, seen, used);

		if (ret || w->own == TB__OWN_NONE)
			return ret;
		if (!w->cur.nfrags)
			return TB_OK;	/* only the open fragment moved */
		if (round + 1 < TB_RELOCATE_ROUNDS &&
		    tb__writer_try_publish(w, &seen))
			return TB_OK;
	}
	tb__writer_abandon(w);
	tb__writer_drop(w, w->cur.nfrags - tb_state_nfrags(w->word) +
			 w->cur.open);
	return TB_DROPPED;
}

/*
 * Publishes every closed fragment (tb__writer_try_publish()); a failed CAS
 * means a scrape (tb__writer_publish_lost()).
 */
static inline int tb__writer_publish(struct tb_writer *w, uint32_t used)
{
	uint32_t seen;

	if (tb__writer_try_publish(w, &seen))
		return TB_OK;
	return tb__writer_publish_lost(w, seen, used);
}

/*
 * A packet written in place, for an encoder that knows its size first:
 * tb_writer_begin_packet() opens a fragment of @len bytes in the chunk
 * this writer kept (reuse: Complete -> Acquired) and returns its first
 * byte; the caller writes exactly @len bytes from there and
 * tb_writer_end_packet() publishes them.  NULL when no chunk is kept, it
 * has less room, or the reader took it meanwhile (then nothing is held):
 * open the packet with tb_writer_open() instead (it claims a chunk),
 * and end it with tb_writer_end_packet() all the same.  The fast path of
 * every write (tb_writer_write_packet() is these two and a copy).  A
 * chunk is kept only with room for a fragment (tb__writer_cacheable()):
 * fewer than TB_FRAG_MAX fragments, dir - width > payload, so the room
 * is one subtraction here.
 */
TB__ALWAYS uint8_t *tb_writer_begin_packet(struct tb_writer *w, size_t len)
{
	struct tb_frag_cursor *c = &w->cur;
	uint32_t seen = w->word;

	if (w->own != TB__OWN_CACHED || len > c->dir - c->width - c->payload)
		return NULL;
	if (!tb__w_reuse_word(tb__writer_word(w), &seen)) {
		w->own = TB__OWN_NONE;	/* the reader took it */
		return NULL;
	}
	w->word = tb__state_with(seen, TB_ACQUIRED);
	w->own = TB__OWN_ACQUIRED;
	c->open = 1;
	return c->chunk + c->payload;
}

/*
 * Closes the open fragment at @size bytes (it fits) and publishes it:
 * Acquired(n) -> Complete(n + 1), with "continues on next" when @more.
 * The chunk stays cached unless @more, a relocation, a loss owed or its
 * room says otherwise (tb__writer_cacheable()).  A lost publication is a
 * scrape: tb__writer_publish_lost().  tb__writer_try_publish() with no
 * fragment open, as every close is: no continuation can be pending here
 * (a chunk published with one is never kept, and the claim of the next
 * clears it).
 */
TB__HOT int tb__writer_reclose(struct tb_writer *w, uint32_t size, bool more)
{
	struct tb_frag_cursor *c = &w->cur;
	uint32_t seen = w->word, want;

	tb__frag_end(c, size);
	w->cont_next = more;
	want = tb__state_with(seen & ~TB_NFRAGS_MASK, TB_COMPLETE) |
	       c->nfrags << TB_NFRAGS_SHIFT | (more ? TB_F_CONT_NEXT : 0);
	if (!tb__w_publish_word(tb__writer_word(w), &seen, want))
		return tb__writer_publish_lost(w, seen, 0);
	w->word = want;
	w->pub_off = c->payload;
	w->own = TB__OWN_CACHED;
	/* tb__writer_cacheable(), with cont_next = @more */
	if (more || w->relocated || w->loss_owed || tb_frag_room(c) <= 0)
		tb__writer_forget(w);
	return TB_OK;
}

/*
 * Ends the packet tb_writer_begin_packet(), or tb_writer_open() without
 * flags, opened: publishes its @len bytes (no more than the range handed
 * out).  tb_writer_close(w, len, 0) without its checks of the caller.
 * TB_DROPPED or TB_EPROTO as tb_writer_close() says them.
 */
TB__HOT int tb_writer_end_packet(struct tb_writer *w, uint32_t len)
{
	return tb__writer_reclose(w, len, false);
}

/*
 * Opens a fragment of at least @min bytes in the cached chunk when it has
 * the room: true, with @span set.  False when it has not (the chunk stays
 * cached) or when the reader took it meanwhile (nothing is held now).
 */
static inline bool tb__writer_reuse(struct tb_writer *w, size_t min,
				    struct tb_span *span)
{
	uint8_t *p = tb_writer_begin_packet(w, min);

	if (!p)
		return false;
	span->begin = p;
	span->end = w->cur.chunk + w->cur.dir - w->cur.width;
	return true;
}

/*
 * Opens a fragment of at least @min bytes, in the cached chunk when it has
 * room (and @flags has no TB_OPEN_CONT_PREV: a continuation always starts
 * a chunk), else in a freshly claimed one.  The encoder may fill
 * [span->begin, span->end).  TB_EINVAL for any other flag (a
 * TB_CLOSE_CONT_NEXT passed here by mistake): nothing is opened.
 */
static inline int tb_writer_open(struct tb_writer *w, uint32_t min,
				 unsigned flags, struct tb_span *span)
{
	bool cont = flags & TB_OPEN_CONT_PREV;
	int ret;

	if (!flags && tb__writer_reuse(w, min, span))
		return TB_OK;	/* the common case */
	if (flags & ~TB_OPEN_CONT_PREV)
		return TB_EINVAL;	/* TB_CLOSE_CONT_NEXT, or unknown */
	if (w->own == TB__OWN_ACQUIRED)
		return TB_EOPEN;
	if (min > tb_frag_max_size(w->ring->chunk_size))
		return TB_TOO_LARGE;
	if (w->own == TB__OWN_CACHED)
		tb__writer_forget(w);	/* no room, or a continuation */
	if (w->own == TB__OWN_NONE) {
		ret = tb__writer_claim(w, cont ? TB_F_CONT_PREV : 0);
		if (ret)
			return ret;
		w->cont_next = 0;	/* a relocated tail keeps its own */
	}
	ret = tb_frag_open(&w->cur, &span->begin, &span->end);
	TB_BUG_ON(ret);	/* room was checked, or the chunk is fresh */
	return ret ? TB_TOO_LARGE : TB_OK;
}

/*
 * Closes the open fragment at @size bytes and publishes it.  With
 * TB_CLOSE_CONT_NEXT the packet goes on in this writer's next chunk: the
 * chunk is published with "continues on next" and never reused.
 * TB_DROPPED: the reader scraped the chunk and the fragment found no
 * replacement; data loss is owed.  TB_EINVAL for any other flag (a
 * TB_OPEN_CONT_PREV passed here by mistake): the fragment stays open.
 */
static inline int tb_writer_close(struct tb_writer *w, uint32_t size,
				  unsigned flags)
{
	if (flags & ~TB_CLOSE_CONT_NEXT)
		return TB_EINVAL;	/* TB_OPEN_CONT_PREV, or unknown */
	if (w->own != TB__OWN_ACQUIRED || !w->cur.open)
		return TB_ENOTOPEN;
	if (size > w->cur.dir - w->cur.width - w->cur.payload)
		return TB_ESIZE;	/* as tb_frag_close() would say */
	return tb__writer_reclose(w, size, flags & TB_CLOSE_CONT_NEXT);
}

/*
 * For a long-lived open fragment: checks (one acquire load) whether the
 * reader scraped the chunk, and if so relocates the fragment - its first
 * @used bytes - to a replacement now, so the scraped chunk is released
 * without waiting for the close.  Afterwards the
 * fragment's bytes are at span->begin whether it moved or not: rebase
 * the encoder's write pointer to span->begin + @used.  TB_DROPPED: no
 * replacement, the fragment is lost and must not be written any more.
 */
static inline int tb_writer_sync(struct tb_writer *w, uint32_t used,
				 struct tb_span *span)
{
	uint32_t seen;
	int ret;

	if (w->own != TB__OWN_ACQUIRED || !w->cur.open)
		return TB_ENOTOPEN;
	if (used > w->cur.dir - w->cur.width - w->cur.payload)
		return TB_ESIZE;
	/*
	 * relaxed: only compared.  After a scrape the writer reads nothing
	 * the reader wrote and writes nothing the reader reads (see
	 * tb__w_publish_word()'s failure order).
	 */
	seen = tb_atomic_load(tb__ring_word(w->ring, w->pos), TB_RLX);
	if (seen != w->word) {
		/*
		 * Scraped.  Every close publishes (or relocates until it has
		 * published), so the open fragment is all the chunk holds
		 * unpublished: relocation moves just it into a fresh
		 * replacement, Acquired and still open, or loses it.
		 */
		ret = tb__writer_relocate(w, seen, used);
		if (ret)
			return ret;
		TB_BUG_ON(w->own != TB__OWN_ACQUIRED || !w->cur.open);
	}
	span->begin = w->cur.chunk + w->cur.payload;
	span->end = w->cur.chunk + w->cur.dir - w->cur.width;
	return TB_OK;
}

/*
 * Lets go of the held chunk: an open fragment is abandoned (counted as
 * dropped, data loss owed), closed fragments are published, a cached
 * chunk is forgotten.  Call before the writer goes away.
 */
static inline int tb_writer_release(struct tb_writer *w)
{
	bool held = w->own != TB__OWN_NONE;
	int ret = TB_OK;

	if (w->own == TB__OWN_ACQUIRED) {
		if (w->cur.open) {
			w->cur.open = 0;
			w->dropped_frags++;
			tb__wstat(w, TB_WS_DROPPED_FRAGS, 1);
			w->loss_owed = 1;
		}
		ret = tb__writer_publish(w, 0);
	}
	w->own = TB__OWN_NONE;
	if (held)
		tb__w_notify(w->ring);	/* final: no waiting for more */
	return ret;
}

/* tb_writer_write_packet() past its fast path: fragment by fragment. */
TB__COLD int tb__writer_write_split(struct tb_writer *w, const uint8_t *p,
				    size_t len)
{
	unsigned cont = 0;
	struct tb_span s;

	for (;;) {
		uint32_t min = len < TB_SPLIT_MIN ? (uint32_t)len :
						    TB_SPLIT_MIN;
		uint32_t n;
		int ret = tb_writer_open(w, min, cont, &s);

		if (ret) {
			tb_writer_record_loss(w);
			return ret;
		}
		n = len < (size_t)(s.end - s.begin) ? (uint32_t)len :
						      (uint32_t)(s.end - s.begin);
#ifdef TB_TEST_HOOKS
		if (w->fill && (ret = w->fill(w->fill_ctx, w, &s, p, n)))
			return ret;
#endif
		if (n)
			TB_MEMCPY(s.begin, p, n);
		ret = tb_writer_close(w, n, n < len ? TB_CLOSE_CONT_NEXT : 0);
		if (ret || n == len)
			return ret;
		p += n;
		len -= n;
		cont = TB_OPEN_CONT_PREV;
	}
}

/*
 * Writes one whole packet, split over as many chunks as it needs with the
 * continuation flags.  Anything but TB_OK means the packet is lost (a
 * prefix may have been published; the reader discards it when the next
 * chunk does not continue it) and data loss is owed.
 */
static inline int tb_writer_write_packet(struct tb_writer *w,
					 const void *data, size_t len)
{
	/* The common case: the kept chunk takes the whole packet. */
	uint8_t *d = tb_writer_begin_packet(w, len);

	if (d) {
		tb__copy(d, data, len);
		return tb_writer_end_packet(w, (uint32_t)len);
	}
	return tb__writer_write_split(w, (const uint8_t *)data, len);
}

/* ------------------------------------------------------------------------
 * Reader: one per ring.
 */
#ifndef TB_READ_BUDGET		/* the reader's own: overridable */
#define TB_READ_BUDGET		8	/* CAS losses per position */
#endif
#if TB_READ_BUDGET < 1
#error "tbring.h: TB_READ_BUDGET must be >= 1"
#endif
#define TB__NO_WORD		0xffffffffu	/* matches no real state */

enum tb_read_mode {
	TB_READ_LAZY,	/* stop before a chunk a writer holds */
	TB_READ_SCRAPE,	/* take published prefixes of held chunks */
};

/* What the reader emits; every pointer is into the reader's scratch. */
struct tb_chunk_view {
	uint32_t pos;
	uint16_t writer;
	uint16_t bid;
	uint32_t flags;		/* TB_F_* as in the word */
	uint32_t nfrags;
	uint32_t scraped;	/* taken from a chunk its writer held */
	const uint8_t *payload;	/* fragments back to back */
	const uint16_t *sizes;	/* nfrags sizes, payload order */
	uint32_t lost;		/* 0, or TB_VIEW_*: its data was unusable */
};

/*
 * A chunk whose data the reader cannot use is still handed over, as a
 * view of no fragments, flags TB_F_DATA_LOSS and @lost saying why, so
 * that its writer's sequence learns of the loss (a packet it cut is lost,
 * the writer's next packet says so).  @bid is the chunk's own only for
 * TB_VIEW_MALFORMED; another format's header is not ours to read (0).
 */
#define TB_VIEW_MALFORMED	1u	/* format 00, its directory invalid */
#define TB_VIEW_UNKNOWN_FORMAT	2u	/* a format other than 00 */

typedef void (*tb_chunk_fn)(void *ctx, const struct tb_chunk_view *v);

struct tb_reader {
	const struct tb_ring *ring;
	uint8_t *scratch;	/* chunk_size bytes */
	uint32_t pos;		/* private cursor: next position */
	uint32_t stopped;	/* the TB_PROTO_* rule, latched; 0 runs */
	uint32_t wait_pos;	/* write_pos when the last drain stopped */
	uint32_t wait_word;	/* the word it stopped at */
	uint32_t pinned_run;	/* positions in a row found RewriteRequested */
	uint32_t spin;		/* tb_reader_wait(): polls before a sleep */
	uint32_t fresh;		/* nothing resolved since init */
	uint32_t woke;		/* its last progress woke sleeping writers */
#ifdef TB_TEST_HOOKS
	/* test seam: runs between the copy and the arbitrating CAS */
	void (*hook)(void *ctx, uint32_t pos, uint32_t word);
	void *hook_ctx;
#endif
	uint32_t stat[TB_RS_MAX];
	uint16_t sizes[TB_FRAG_MAX];
};

/*
 * The most a reader spins for the next chunk before it sleeps: one
 * sleep's cost (TB_SLEEP_POLLS) spread over the batch a sleep lets it
 * take at once (tb__ring_backlog()), one poll at least.  A reader that
 * spins for every chunk of a ring's worth then pays no more than one
 * sleep would: 2 polls on a 64-chunk ring, 10 on a 16-chunk one.
 */
static inline uint32_t tb__reader_spin_cap(const struct tb_ring *r)
{
	uint32_t cap = TB_SLEEP_POLLS / tb__ring_backlog(r);

	return cap ? cap : 1;
}

static inline int tb_reader_init(struct tb_reader *rd, const struct tb_ring *r,
				 void *scratch)
{
	if (!rd || !r || !scratch)
		return TB_EINVAL;
	TB_MEMSET(rd, 0, sizeof(*rd));
	rd->ring = r;
	rd->scratch = (uint8_t *)scratch;
	rd->spin = tb__reader_spin_cap(r);
	rd->fresh = 1;
	/* relaxed: only this thread stores read_pos from now on */
	rd->pos = tb_atomic_load(&r->hdr->read_pos, TB_RLX);
	return TB_OK;
}

/* What a copy found (tb__reader_done() counts each by name). */
enum {
	TB__COPY_UNKNOWN,	/* unknown format: nothing was read */
	TB__COPY_MALFORMED,	/* the directory failed validation */
	TB__COPY_EMPTY,		/* no fragment published */
	TB__COPY_OK,		/* usable, the view is filled */
};

/*
 * Copies the @word's published fragments of chunk @pos into scratch and
 * validates them there.
 */
static inline int tb__reader_copy(struct tb_reader *rd, uint32_t pos,
				   uint32_t word, struct tb_chunk_view *v)
{
	const struct tb_ring *r = rd->ring;
	const uint8_t *chunk = tb__ring_chunk(r, pos);
	unsigned n = tb_state_nfrags(word), w = r->width;
	uint32_t cs = r->chunk_size, dlen = n * w;
	int32_t total;

	if (!n)
		return TB__COPY_EMPTY;
	v->pos = pos;
	v->writer = tb_state_writer(word);
	v->bid = 0;
	v->flags = TB_F_DATA_LOSS;
	v->nfrags = 0;
	v->scraped = tb_state_of(word) == TB_ACQUIRED;
	v->payload = rd->scratch + TB_FRAG_PAYLOAD_OFF;
	v->sizes = rd->sizes;
	v->lost = TB_VIEW_UNKNOWN_FORMAT;
	if (tb_state_format(word) != TB_FORMAT_TARGET)
		return TB__COPY_UNKNOWN;
	v->bid = tb_frag_bid(chunk);
	v->lost = TB_VIEW_MALFORMED;
	if (!tb_frag_dir_fits(cs, n, w))
		return TB__COPY_MALFORMED;
	TB_MEMCPY(rd->scratch + cs - dlen, chunk + cs - dlen, dlen);
	total = tb_frag_parse_dir(rd->scratch + cs - dlen, n, w, cs,
				  rd->sizes);
	if (total < 0)
		return TB__COPY_MALFORMED;
	/*
	 * The payload goes to the same offset in scratch as in the chunk:
	 * source and destination then have the same alignment, which lets
	 * memcpy() run aligned on both sides (measurably cheaper for large
	 * chunks).  It ends where the directory copy begins at the latest:
	 * total <= chunk_size - 6 - dlen.
	 */
	TB_MEMCPY(rd->scratch + TB_FRAG_PAYLOAD_OFF,
		  chunk + TB_FRAG_PAYLOAD_OFF, (size_t)total);
	v->flags = tb__state_flags(word);
	v->nfrags = n;
	v->lost = 0;
	return TB__COPY_OK;
}

#ifdef TB_TEST_HOOKS
#define tb__reader_seam(rd, pos, word)					\
	do {								\
		if ((rd)->hook)						\
			(rd)->hook((rd)->hook_ctx, (pos), (word));	\
	} while (0)
#else
#define tb__reader_seam(rd, pos, word) ((void)0)
#endif

/* A protocol error: latched, and recorded for tb_ring_stats(). */
static inline int tb__reader_stop(struct tb_reader *rd,
				  enum tb_proto_rule rule)
{
	rd->stopped = rule;
	/* relaxed: statistics; the reader touches this ring no more */
	tb_atomic_store(&rd->ring->hdr->stopped, rule, TB_RLX);
	return TB_EPROTO;
}

/*
 * Resolved: count and move the private cursor.  No data is a hole; data
 * the reader could not use is a hole too, handed over as a lost view.
 */
static inline int tb__reader_done(struct tb_reader *rd, int copied)
{
	rd->pos++;
	rd->pinned_run = 0;
	rd->fresh = 0;
	switch (copied) {
	case TB__COPY_OK:
		rd->stat[TB_RS_EMITTED]++;
		return TB_EMITTED;
	case TB__COPY_EMPTY:
		rd->stat[TB_RS_HOLES]++;
		return TB_SKIPPED;
	case TB__COPY_MALFORMED:
		rd->stat[TB_RS_MALFORMED]++;
		break;
	default:
		TB_BUG_ON(copied != TB__COPY_UNKNOWN);
		rd->stat[TB_RS_UNKNOWN_FORMAT]++;
		break;
	}
	rd->stat[TB_RS_HOLES]++;	/* a lost view: a hole that says so */
	return TB_EMITTED;
}

/*
 * Is the ring under pressure, so that a lazy reader must scrape?  Half the
 * ring is waiting behind the held chunk.  (A stalled writer implies a full
 * ring, so this covers it; the waiter hint is not consulted, because a
 * writer killed while stalled leaves it raised for good.)
 */
static inline bool tb__reader_pressed(const struct tb_reader *rd,
				       uint32_t write_pos)
{
	return tb__pos_distance(write_pos, rd->pos) >= rd->ring->num_chunks / 2;
}

/*
 * Resolves the position at the private cursor: one snapshot of
 * the state word, then at most TB_READ_BUDGET lost races.  Moves only the
 * private cursor; tb__reader_step() publishes it.
 */
static inline int tb__reader_resolve(struct tb_reader *rd,
				      enum tb_read_mode mode,
				      struct tb_chunk_view *v)
{
	const struct tb_ring *r = rd->ring;
	uint32_t pos = rd->pos, wp, word, run;
	unsigned budget;
	int copied, ret;

	if (rd->stopped)
		return TB_EPROTO;
	/* relaxed: a stale write_pos only delays one pass */
	wp = tb_atomic_load(&r->hdr->write_pos, TB_RLX);
	if (wp == pos)
		return TB_NODATA;
	if (tb__pos_distance(wp, pos) > r->num_chunks)
		return tb__reader_stop(rd, TB_PROTO_WRITE_POS);
	word = tb__r_load(r, pos);
	for (budget = 0; budget < TB_READ_BUDGET; budget++) {
		bool lazy = mode == TB_READ_LAZY &&
			    !tb__reader_pressed(rd, wp);

		switch (tb_state_of(word)) {
		case TB_FREE:
			if (word != tb__state_free(tb__ring_wrap(r, pos)))
				return tb__reader_stop(rd, TB_PROTO_FREE_TAG);
			if (lazy)
				goto pending;	/* a writer is claiming */
			if (tb__r_advance(r, pos, &word))
				return tb__reader_done(rd, TB__COPY_EMPTY);
			continue;
		case TB_ACQUIRED:
			if (lazy)
				goto pending;
			copied = tb__reader_copy(rd, pos, word, v);
			tb__reader_seam(rd, pos, word);
			if (!tb__r_mark_rewrite(r, pos, &word))
				continue;
			rd->stat[TB_RS_SCRAPES]++;
			return tb__reader_done(rd, copied);
		case TB_COMPLETE:
			copied = tb__reader_copy(rd, pos, word, v);
			tb__reader_seam(rd, pos, word);
			if (!tb__r_reclaim_complete(r, pos, &word))
				continue;
			return tb__reader_done(rd, copied);
		case TB_REWRITE:
			/*
			 * An older scrape its writer has not acknowledged: a
			 * whole lap ago, since only a reader makes the word
			 * and it moves on right after.  Ours to skip, never
			 * to touch.  Except at the first position a new
			 * reader resolves: its predecessor may have died
			 * right after scraping it, in this lap, so it is a
			 * hole but not (yet) a pinned one; a chunk pinned
			 * for good is counted at its next lap.
			 */
			if (rd->fresh)
				return tb__reader_done(rd, TB__COPY_EMPTY);
			run = rd->pinned_run + 1;
			ret = tb__reader_done(rd, TB__COPY_EMPTY);
			rd->stat[TB_RS_PINNED]++;
			rd->pinned_run = run;
			return ret;
		case TB_ACKED:
			if (!tb__r_reclaim_acked(r, pos, &word))
				return tb__reader_stop(rd, TB_PROTO_ACKED);
			return tb__reader_done(rd, TB__COPY_EMPTY);
		default:
			return tb__reader_stop(rd, TB_PROTO_RESERVED_STATE);
		}
	}
	rd->stat[TB_RS_RETRY_LATER]++;
	return TB_RETRY_LATER;
pending:
	rd->wait_word = word;
	return TB_PENDING;
}

/*
 * Resolves the position at the private cursor and, when it was
 * resolved, publishes the new read_pos right after the transition, as the
 * protocol's reader flow does: a reader that stops anywhere but between the
 * two leaves read_pos naming the next unresolved position.
 */
static inline int tb__reader_step(struct tb_reader *rd,
				   enum tb_read_mode mode,
				   struct tb_chunk_view *v)
{
	int ret = tb__reader_resolve(rd, mode, v);

	/* release: pairs with the writers' acquire load in reserve */
	if (ret == TB_EMITTED || ret == TB_SKIPPED)
		tb_atomic_store(&rd->ring->hdr->read_pos, rd->pos, TB_REL);
	return ret;
}

/*
 * Ends every public reader call; read_pos is already published.  Wakes
 * writers stalled on a full ring if it moved since @start, notes where
 * the reader stopped for tb_reader_idle(), and copies the reader's
 * counters to the header.
 */
static inline void tb__reader_end(struct tb_reader *rd, uint32_t start,
				   int ret)
{
	const struct tb_ring *r = rd->ring;
	int i;

	if (rd->pos != start) {
		rd->woke = tb__ring_wake_writers(r);
		rd->stat[TB_RS_FUTEX_WAKES] += rd->woke;
	}
	/* relaxed: only compared by tb_reader_idle() */
	rd->wait_pos = tb_atomic_load(&r->hdr->write_pos, TB_RLX);
	if (ret != TB_PENDING)
		rd->wait_word = TB__NO_WORD;
	for (i = 0; i < TB_RS_MAX; i++)		/* relaxed: statistics */
		tb_atomic_store(&r->hdr->rstat[i], rd->stat[i], TB_RLX);
}

/*
 * Resolves one position and publishes read_pos (waking stalled writers)
 * before it returns: TB_EMITTED (with @v filled; its pointers stay valid
 * until the next reader call; a lost view when @v->lost), TB_SKIPPED (a
 * hole), or why nothing was resolved.
 */
static inline int tb_reader_read_one(struct tb_reader *rd,
				     enum tb_read_mode mode,
				     struct tb_chunk_view *v)
{
	uint32_t start = rd->pos;
	int ret = tb__reader_step(rd, mode, v);

	tb__reader_end(rd, start, ret);
	return ret;
}

/*
 * Resolves up to @max positions, calling @fn for every emitted chunk (and
 * every chunk whose data it could not use, as a lost view: v->lost), and
 * says why it stopped: TB_NODATA (caught up with the writers), TB_PENDING
 * (lazy: a writer still holds the next chunk), TB_RETRY_LATER (lost every
 * race at one position), TB_LIMIT (resolved @max), or TB_EPROTO (the
 * ring is stopped, for good; what was resolved before was delivered).
 * *@resolved (may be NULL) gets the number of positions resolved.
 * read_pos is published after every position, before @fn runs, and
 * stalled writers are woken once at the end.  TB_READ_LAZY stops before a
 * chunk a writer still holds unless the ring is under pressure;
 * TB_READ_SCRAPE (a flush) takes its published prefix.  Never waits.
 */
static inline int tb_reader_drain(struct tb_reader *rd, unsigned max,
				  enum tb_read_mode mode, tb_chunk_fn fn,
				  void *ctx, unsigned *resolved)
{
	uint32_t start = rd->pos;
	unsigned done = 0;
	int ret = TB_LIMIT;

	while (done < max) {
		struct tb_chunk_view v;

		ret = tb__reader_step(rd, mode, &v);
		if (ret != TB_EMITTED && ret != TB_SKIPPED)
			break;
		if (ret == TB_EMITTED && fn)
			fn(ctx, &v);
		done++;
		ret = TB_LIMIT;
	}
	tb__reader_end(rd, start, ret);
	if (resolved)
		*resolved = done;
	return ret;
}

/*
 * True once the last num_chunks positions in a row were holes because
 * their chunks were still RewriteRequested: every chunk of the ring is
 * held by a writer that has not acknowledged its scrape for a whole lap,
 * which in practice means writers that died.  Nothing can be written to
 * this ring again until they acknowledge (they never will if they are
 * dead): a service should retire it (TB_EPINNED).
 */
static inline bool tb_reader_pinned(const struct tb_reader *rd)
{
	return rd->pinned_run >= rd->ring->num_chunks;
}

/*
 * True when nothing changed at this ring that the last drain could take:
 * same write_pos and, if it stopped before a held chunk, that chunk still
 * held (its word the same, or still Acquired: a writer adding packets to
 * the chunk it holds gives a lazy drain nothing to take, and waking for
 * each packet kept a reader from ever sleeping beside a busy writer).
 * Call between tb_bell_prepare() and tb_bell_wait().
 */
static inline bool tb_reader_idle(const struct tb_reader *rd)
{
	/* relaxed: after tb_bell_prepare()'s fence; the state load acquires */
	uint32_t wp = tb_atomic_load(&rd->ring->hdr->write_pos, TB_RLX);
	uint32_t word;

	if (rd->stopped || (wp == rd->wait_pos && wp == rd->pos))
		return true;
	if (wp != rd->wait_pos || rd->wait_word == TB__NO_WORD)
		return false;
	word = tb__r_load(rd->ring, rd->pos);
	return word == rd->wait_word || tb_state_of(word) == TB_ACQUIRED;
}

/*
 * True when a lazy drain now would resolve nothing, @write_pos being the
 * caller's relaxed load of the ring's write_pos (a reservation it missed
 * is seen on the next pass): the reader stopped, or tb_reader_idle() and
 * the ring not under pressure, where a lazy drain would scrape the held
 * chunk.  A service skips such a ring; before it sleeps it still asks
 * tb_reader_idle() between tb_bell_prepare() and tb_bell_wait().
 */
static inline bool tb_reader_quiet(const struct tb_reader *rd,
				   uint32_t write_pos)
{
	if (rd->stopped)
		return true;
	if (write_pos != rd->wait_pos)
		return false;		/* reserved since: work, or a claim */
	if (write_pos == rd->pos)
		return true;		/* caught up, nothing reserved */
	return !tb__reader_pressed(rd, write_pos) && tb_reader_idle(rd);
}

/*
 * Before it sleeps, the reader polls write_pos (docs/protocol.md, section
 * 8, "Waiting"): TB_SLEEP_POLLS times, one sleep's cost, when its last
 * progress woke sleeping writers (they run again within a wake-up, and
 * the reader that woke them is the one the ring waits for); otherwise
 * rd->spin times, at most tb__reader_spin_cap(), and usually not at all:
 * a reader that catches up with busy writers and spins for each next
 * chunk spends a CPU on polls, where sleeping until the writers ring a
 * backlog takes the same chunks for two system calls.  The budget grows
 * only where such a sleep let the ring fill up (tb_reader_wait()).  The
 * doorbell is not armed meanwhile, so writers do not ring it.  Only a new
 * reservation ends the spin, not a change of the word the lazy drain
 * stopped at: that word changes with every packet a writer adds to the
 * chunk it holds, and taking the chunk then would cut it short.
 */
static inline bool tb__reader_spin(struct tb_reader *rd)
{
	uint32_t i, n = rd->woke ? TB_SLEEP_POLLS : rd->spin;

	if (!TB_HAVE_WAIT || rd->stopped)
		return false;	/* no sleep to save: the caller polls */
	if (rd->wait_word == TB__NO_WORD && rd->wait_pos != rd->pos)
		return false;	/* the drain stopped with work left */
	for (i = 0; i < n; i++) {
		/* relaxed: a hint; the drain that follows loads it again */
		if (tb_atomic_load(&rd->ring->hdr->write_pos, TB_RLX) !=
		    rd->wait_pos) {
			rd->stat[TB_RS_POLLS] += i + 1;
			return true;
		}
		tb__cpu_relax();
	}
	rd->stat[TB_RS_POLLS] += i;
	rd->woke = 0;		/* they did not come: do not wait for them */
	return false;
}

/*
 * Adapts the reader's spin after a sleep: @woken by a writer into a full
 * ring means the writers stalled or dropped while the reader woke up, so
 * the ring is too small to sleep on (double the spin, up to the cap);
 * woken with room left, or by the timeout, halves it (down to none).
 */
static inline void tb__reader_adapt(struct tb_reader *rd, bool woken)
{
	const struct tb_ring *r = rd->ring;
	uint32_t cap = tb__reader_spin_cap(r), n = rd->spin;

	/* relaxed: a hint, as in tb__reader_spin() */
	if (woken && tb__pos_distance(tb_atomic_load(&r->hdr->write_pos,
						     TB_RLX),
				      rd->pos) >= r->num_chunks)
		rd->spin = !n ? 1 : n < cap / 2 ? 2 * n : cap;
	else
		rd->spin = n / 2;
}

/*
 * Waits up to @timeout_ms for writers to publish or burn a position since
 * the last drain.  Where the last drain caught up with the writers (or
 * stopped before a chunk a writer holds), it may first spin until a
 * writer reserves a new position (tb__reader_spin()); then it returns at
 * once if something the drain can take already changed, or sleeps.  Returns
 * without waiting where futexes are unavailable (poll instead).  False
 * when it slept to the timeout, as tb_bell_wait().
 */
static inline bool tb_reader_wait(struct tb_reader *rd, uint32_t timeout_ms)
{
	struct tb_bell *b = rd->ring->bell;
	uint32_t seq;

	if (tb__reader_spin(rd))
		return true;
	seq = tb_bell_prepare(b);

	if (tb_reader_idle(rd)) {
		bool woken;

		if (!TB_HAVE_WAIT)
			return tb_bell_wait(b, seq, timeout_ms);
		/* relaxed: statistics, this reader's own counter */
		tb_atomic_store(&rd->ring->hdr->rstat[TB_RS_FUTEX_WAITS],
				++rd->stat[TB_RS_FUTEX_WAITS], TB_RLX);
		woken = tb_bell_wait(b, seq, timeout_ms);
		tb__reader_adapt(rd, woken);
		return woken;
	}
	tb_bell_cancel(b);
	return true;
}

/*
 * The protocol steps under their documented names, for tests and models
 * only (see the comment at the top).
 */
#ifdef TB_PROTOCOL_STEPS
#define tb_ring_reserve			tb__w_reserve
#define tb_ring_claim			tb__w_claim
#define tb_ring_publish			tb__w_publish
#define tb_ring_reuse			tb__w_reuse
#define tb_ring_acknowledge		tb__w_acknowledge
#define tb_ring_load_state		tb__r_load
#define tb_ring_advance			tb__r_advance
#define tb_ring_reclaim_complete	tb__r_reclaim_complete
#define tb_ring_mark_rewrite		tb__r_mark_rewrite
#define tb_ring_reclaim_acked		tb__r_reclaim_acked
#define tb_ring_publish_read_pos	tb__r_publish_read_pos
#define tb_ring_init_at			tb__ring_init_at
#define tb_ring_chunk			tb__ring_chunk
#define tb_ring_word			tb__ring_word
#define tb_ring_wrap			tb__ring_wrap
#define tb_ring_next_wrap		tb__ring_next_wrap
#define tb_pos_distance			tb__pos_distance
#define tb_pos_index			tb__pos_index
#define tb_pos_wrap			tb__pos_wrap
#define tb_pos_next_wrap		tb__pos_next_wrap
#define tb_state_free			tb__state_free
#define tb_state_data			tb__state_data
#define tb_state_with			tb__state_with
#define tb_state_is_data		tb__state_is_data
#endif

#ifdef __cplusplus
}
#endif

#endif /* TBRING_H */
