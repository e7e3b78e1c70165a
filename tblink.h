/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Copyright (c) 2026, tbring contributors.  BSD-2-Clause: see COPYING, or
 * https://opensource.org/license/bsd-2-clause for the text.
 *
 * tblink.h - a ring's chunks over a byte link (a UART, a pipe, a file):
 * framing a target sends and a host resynchronises on.
 *
 * A firmware drains its own ring when idle (tb_reader_drain() with
 * tb_link_chunk_fn) and the encoder here turns each chunk view into one
 * frame, handed to the caller's put() in small pieces: nothing the size
 * of a chunk is buffered, and struct tb_link_tx is under 300 bytes.  On
 * the host, struct tb_link_rx takes the bytes in any pieces and hands
 * back whole frames, parsed, with every byte and frame it could not use
 * counted; a host tool feeds the chunk views to the same central buffer
 * path as a ring's reader (tbbridge.h).
 *
 * Using it
 *   target   tb_link_tx_init(&tx, put, ctx), tb_link_tx_hello() once the
 *            link is up (and again whenever a host may have attached),
 *            tb_reader_drain(&rd, max, mode, tb_link_chunk_fn, &tx, NULL)
 *            when idle, then tb_link_tx_restate() (a fresh incremental
 *            state every so many frames: what a lossy link loses of it
 *            comes back), tb_link_tx_stats() now and then,
 *            tb_link_tx_end() when the stream is over
 *   host     tb_link_rx_init(), tb_link_rx_feed() with the bytes as they
 *            come (a callback gets each good frame), tb_link_rx_finish()
 *            at the end of the stream; rx->stat says what was lost
 *
 * The format (version 1).  Every frame is COBS-encoded (Consistent
 * Overhead Byte Stuffing: no 0x00 byte inside, at most one byte in 254
 * added) and followed by one 0x00 delimiter.  Decoded, a frame is
 *
 *   type u8, version u8 (1), seq u32, body, crc u32
 *
 * little-endian throughout; seq counts the frames the sender made since
 * tb_link_tx_init(), from 0; crc is CRC-32 (the zlib / IEEE 802.3 one:
 * reflected polynomial 0xedb88320, initial value and final xor
 * 0xffffffff) over type, version, seq and body.  The bodies:
 *
 *   HELLO (1)  boot u32, chunk_size u32, num_chunks u32, ring ABI
 *              version u32, library version u32 (major << 16 | minor
 *              << 8 | patch); a receiver ignores bytes after these
 *   CHUNK (2)  pos u32, writer u16, bid u16, flags u8 (bit 0 data loss,
 *              bit 1 last fragment continues, bit 2 first fragment
 *              continues: the state word's bits 24..26), lost u8
 *              (TB_VIEW_*), scraped u8, nfrags u8, then nfrags sizes
 *              u16, then the fragments back to back (exactly the sum of
 *              the sizes: one struct tb_chunk_view)
 *   STATS (3)  write_pos u32, read_pos u32, nw u8, nr u8, 0 u16, then
 *              nw writer counters u32 (enum tb_wstat order) and nr reader
 *              counters u32 (enum tb_rstat order), nw and nr at most 16
 *   END (4)    empty: the sender is done
 *
 * HELLO is preceded by an extra 0x00 (an empty frame, ignored), so that
 * a receiver drops whatever partial frame it held.  A receiver
 * resynchronises at every 0x00: a stream that starts mid-frame costs the
 * bytes up to the first delimiter, a lost or flipped byte costs the frame
 * it fell in (a bad CRC, or a frame that does not decode) and the next
 * good frame's seq says how many frames are missing.  A seq lower than
 * expected, or a HELLO with another boot id, is a new stream (the target
 * restarted).
 *
 * Threading contract: a struct tb_link_tx belongs to one thread (or one
 * context: the idle loop, never an interrupt that may preempt another
 * user of it), a struct tb_link_rx likewise.  put() may block (a UART
 * waiting for room); nothing here does.
 *
 * Limits: a frame body is at most TB_LINK_BODY_MAX bytes (a chunk of
 * 32 KiB); a receiver's struct tb_link_rx holds one decoded frame
 * (about 33 KiB).  seq is 32-bit: a gap of 2^31 frames or more reads as
 * a restart.  CRC-32 misses one corrupted frame in 2^32.
 *
 * Freestanding C99 (and C++), no allocation: tbring.h and what it
 * includes.
 */
#ifndef TBLINK_H
#define TBLINK_H
#define TBLINK_H_VERSION 200	/* tbbase.h: TBRING_VERSION */

#include "tbring.h"

/* Headers of one release only: a mixed copy does not compile. */
#if TBRING_H_VERSION != TBLINK_H_VERSION
#error "tblink.h needs the tbring.h of its own release"
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define TB_LINK_VERSION		1u

enum tb_link_type {
	TB_LINK_HELLO = 1,
	TB_LINK_CHUNK = 2,
	TB_LINK_STATS = 3,
	TB_LINK_END = 4,
};

#define TB_LINK_HDR		6u	/* type, version, seq */
#define TB_LINK_CRC		4u
#define TB_LINK_HELLO_BODY	20u
#define TB_LINK_CHUNK_HDR	12u	/* before the sizes */
#define TB_LINK_STATS_HDR	12u	/* before the counters */
#define TB_LINK_STATS_MAX	16u	/* counters of one kind */
#define TB_LINK_BODY_MAX	(TB_LINK_CHUNK_HDR + 2u * TB_FRAG_MAX + \
				 TB_CHUNK_MAX)
#define TB_LINK_FRAME_MAX	(TB_LINK_HDR + TB_LINK_BODY_MAX + TB_LINK_CRC)
#define TB_LINK_COBS_RUN	254u	/* data bytes per COBS block */

/* The state word's flag bits (24..26) as the frame's flags byte. */
#define TB_LINK_FLAGS_SHIFT	24

/* ------------------------------------------------------------------------
 * CRC-32, four bits at a time (a 16-entry table: small flash, and fast
 * enough for a UART).
 */
static inline uint32_t tb_link_crc_update(uint32_t crc, const uint8_t *p,
					  size_t n)
{
	static const uint32_t t[16] = {
		0x00000000u, 0x1db71064u, 0x3b6e20c8u, 0x26d930acu,
		0x76dc4190u, 0x6b6b51f4u, 0x4db26158u, 0x5005713cu,
		0xedb88320u, 0xf00f9344u, 0xd6d6a3e8u, 0xcb61b38cu,
		0x9b64c2b0u, 0x86d3d2d4u, 0xa00ae278u, 0xbdbdf21cu,
	};
	size_t i;

	for (i = 0; i < n; i++) {
		crc ^= p[i];
		crc = crc >> 4 ^ t[crc & 15u];
		crc = crc >> 4 ^ t[crc & 15u];
	}
	return crc;
}

/* The CRC-32 of @n bytes (update from 0xffffffff, final xor). */
static inline uint32_t tb_link_crc32(const void *p, size_t n)
{
	return tb_link_crc_update(0xffffffffu, (const uint8_t *)p, n) ^
	       0xffffffffu;
}

static inline void tb__link_le16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void tb__link_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline uint32_t tb__link_rd16(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static inline uint32_t tb__link_rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 |
	       (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ------------------------------------------------------------------------
 * The sender (target side).
 */
typedef void (*tb_link_put_fn)(void *ctx, const uint8_t *p, size_t n);

struct tb_link_tx {
	tb_link_put_fn put;
	void *ctx;
	uint32_t seq;		/* the next frame's */
	uint32_t restated;	/* seq at the last tb_link_tx_restate() */
	uint32_t boot;		/* HELLO's boot id: tb_link_tx_set_boot() */
	uint32_t crc;		/* of the frame being sent */
	uint32_t n;		/* bytes in run[] */
	uint8_t code;		/* scratch for the COBS code byte */
	uint8_t run[TB_LINK_COBS_RUN];
};

static inline int tb_link_tx_init(struct tb_link_tx *tx, tb_link_put_fn put,
				  void *ctx)
{
	if (!tx || !put)
		return TB_EINVAL;
	TB_MEMSET(tx, 0, sizeof(*tx));
	tx->put = put;
	tx->ctx = ctx;
	return TB_OK;
}

/*
 * The id HELLO carries, so that a host tells one boot's stream from the
 * next (a counter kept across resets, a random number): 0 by default.
 */
static inline void tb_link_tx_set_boot(struct tb_link_tx *tx, uint32_t boot)
{
	tx->boot = boot;
}

/* Sends the COBS block collected in run[], its code byte first. */
static inline void tb__link_flush_run(struct tb_link_tx *tx)
{
	tx->code = (uint8_t)(tx->n + 1);
	tx->put(tx->ctx, &tx->code, 1);
	if (tx->n)
		tx->put(tx->ctx, tx->run, tx->n);
	tx->n = 0;
}

/* Adds @n frame bytes: CRC'd, COBS-encoded, sent a block at a time. */
static inline void tb__link_put(struct tb_link_tx *tx, const uint8_t *p,
				size_t n)
{
	size_t i;

	tx->crc = tb_link_crc_update(tx->crc, p, n);
	for (i = 0; i < n; i++) {
		if (!p[i]) {
			tb__link_flush_run(tx);	/* the zero is implied */
			continue;
		}
		tx->run[tx->n++] = p[i];
		if (tx->n == TB_LINK_COBS_RUN) {
			/* code 0xff: a full block, no zero after it */
			tx->code = 0xff;
			tx->put(tx->ctx, &tx->code, 1);
			tx->put(tx->ctx, tx->run, tx->n);
			tx->n = 0;
		}
	}
}

static inline void tb__link_begin(struct tb_link_tx *tx, unsigned type)
{
	uint8_t h[TB_LINK_HDR];

	h[0] = (uint8_t)type;
	h[1] = (uint8_t)TB_LINK_VERSION;
	tb__link_le32(h + 2, tx->seq++);
	tx->crc = 0xffffffffu;
	tx->n = 0;
	tb__link_put(tx, h, sizeof(h));
}

/* The CRC, the last block, the delimiter. */
static inline void tb__link_finish(struct tb_link_tx *tx)
{
	uint8_t c[TB_LINK_CRC];

	tb__link_le32(c, tx->crc ^ 0xffffffffu);
	tb__link_put(tx, c, sizeof(c));
	tb__link_flush_run(tx);
	tx->code = 0;
	tx->put(tx->ctx, &tx->code, 1);
}

/* HELLO: the ring's geometry and the boot id, after a lone delimiter. */
static inline void tb_link_tx_hello(struct tb_link_tx *tx,
				    const struct tb_ring *r)
{
	uint8_t b[TB_LINK_HELLO_BODY];

	tx->code = 0;
	tx->put(tx->ctx, &tx->code, 1);
	tb__link_le32(b, tx->boot);
	tb__link_le32(b + 4, r->chunk_size);
	tb__link_le32(b + 8, r->num_chunks);
	tb__link_le32(b + 12, TB_RING_VERSION);
	tb__link_le32(b + 16, (uint32_t)TBRING_VERSION_MAJOR << 16 |
			      (uint32_t)TBRING_VERSION_MINOR << 8 |
			      (uint32_t)TBRING_VERSION_PATCH);
	tb__link_begin(tx, TB_LINK_HELLO);
	tb__link_put(tx, b, sizeof(b));
	tb__link_finish(tx);
}

/*
 * STATS: the ring's counters as tb_ring_stats() reads them (relaxed
 * loads, a walk over the state words: O(num_chunks)).
 */
static inline void tb_link_tx_stats(struct tb_link_tx *tx,
				    const struct tb_ring *r)
{
	struct tb_ring_stats s;
	uint8_t b[TB_LINK_STATS_HDR], w[4];
	unsigned i;

	tb_ring_stats(r, &s);
	tb__link_le32(b, s.write_pos);
	tb__link_le32(b + 4, s.read_pos);
	b[8] = (uint8_t)TB_WS_MAX;
	b[9] = (uint8_t)TB_RS_MAX;
	b[10] = b[11] = 0;
	tb__link_begin(tx, TB_LINK_STATS);
	tb__link_put(tx, b, sizeof(b));
	for (i = 0; i < TB_WS_MAX; i++) {
		tb__link_le32(w, s.wstat[i]);
		tb__link_put(tx, w, sizeof(w));
	}
	for (i = 0; i < TB_RS_MAX; i++) {
		tb__link_le32(w, s.rstat[i]);
		tb__link_put(tx, w, sizeof(w));
	}
	tb__link_finish(tx);
}

/*
 * A streaming target's restate, after each drain: once @frames frames went
 * out since the last one, the ring's generation moves
 * (tb_ring_bump_generation()), so each of its event writers starts a
 * fresh incremental state (tbevent.h).  The link may lose frames and the
 * target never knows: a host that lost the frames holding a writer's
 * state (a host that attached late, or the frames a state was
 * interned in) decodes that writer again from the next fresh state, at
 * most @frames frames later; the frames between cost only themselves
 * when the host saw the state before the loss (tbtrace stream restates
 * it).  Returns true when it moved the generation.  The ring is shared:
 * call it from the context that drains.
 */
static inline bool tb_link_tx_restate(struct tb_link_tx *tx,
				      const struct tb_ring *r,
				      uint32_t frames)
{
	if (tx->seq - tx->restated < frames)
		return false;
	tx->restated = tx->seq;
	tb_ring_bump_generation(r);
	return true;
}

static inline void tb_link_tx_end(struct tb_link_tx *tx)
{
	tb__link_begin(tx, TB_LINK_END);
	tb__link_finish(tx);
}

/* CHUNK: one view, as the ring's reader emitted it. */
static inline void tb_link_tx_view(struct tb_link_tx *tx,
				   const struct tb_chunk_view *v)
{
	uint8_t b[TB_LINK_CHUNK_HDR], s[2];
	uint32_t i, total = 0, n = v->nfrags;

	if (n > TB_FRAG_MAX)
		n = TB_FRAG_MAX;	/* a reader never emits more */
	tb__link_le32(b, v->pos);
	tb__link_le16(b + 4, v->writer);
	tb__link_le16(b + 6, v->bid);
	b[8] = (uint8_t)((v->flags & TB_F_MASK) >> TB_LINK_FLAGS_SHIFT);
	b[9] = (uint8_t)v->lost;
	b[10] = (uint8_t)(v->scraped != 0);
	b[11] = (uint8_t)n;
	tb__link_begin(tx, TB_LINK_CHUNK);
	tb__link_put(tx, b, sizeof(b));
	for (i = 0; i < n; i++) {
		tb__link_le16(s, v->sizes[i]);
		tb__link_put(tx, s, sizeof(s));
		total += v->sizes[i];
	}
	if (total)
		tb__link_put(tx, v->payload, total);
	tb__link_finish(tx);
}

/* A tb_chunk_fn: tb_reader_drain(rd, max, mode, tb_link_chunk_fn, &tx,
 * NULL) sends every chunk it emits. */
static inline void tb_link_chunk_fn(void *tx, const struct tb_chunk_view *v)
{
	tb_link_tx_view((struct tb_link_tx *)tx, v);
}

/* ------------------------------------------------------------------------
 * The receiver (host side).
 */
enum tb_link_rstat {
	TB_LR_BYTES,		/* bytes fed */
	TB_LR_FRAMES,		/* good frames handed over */
	TB_LR_SKIPPED,		/* bytes of frames that were not good */
	TB_LR_BAD_CRC,		/* frames whose CRC did not match */
	TB_LR_MALFORMED,	/* frames that did not decode or parse */
	TB_LR_LOST,		/* frames missing by seq (bad ones too) */
	TB_LR_MISSED_START,	/* frames sent before the first good one */
	TB_LR_PARTIAL_START,	/* 1: the stream began inside a frame */
	TB_LR_TRUNCATED,	/* 1: it ended inside a frame */
	TB_LR_RESTARTS,		/* new streams (restarted sender) */
	TB_LR_ENDS,		/* END frames */
	TB_LR_MAX
};

struct tb_link_hello {
	uint32_t boot;
	uint32_t chunk_size;
	uint32_t num_chunks;
	uint32_t ring_version;
	uint32_t lib_version;
};

struct tb_link_stats {
	uint32_t write_pos;
	uint32_t read_pos;
	uint32_t nw, nr;	/* counters present, at most 16 each */
	uint32_t wstat[TB_LINK_STATS_MAX];	/* enum tb_wstat */
	uint32_t rstat[TB_LINK_STATS_MAX];	/* enum tb_rstat */
};

/* A good frame; pointers are into the receiver, valid in the callback. */
struct tb_link_frame {
	unsigned type;		/* enum tb_link_type */
	uint32_t seq;
	uint32_t gap;		/* frames missing just before this one
				 * (the first frame: all before it) */
	bool restart;		/* first frame of a new stream */
	const uint8_t *body;
	uint32_t len;
	struct tb_link_hello hello;	/* TB_LINK_HELLO */
	struct tb_chunk_view view;	/* TB_LINK_CHUNK */
	struct tb_link_stats stats;	/* TB_LINK_STATS */
};

typedef void (*tb_link_frame_fn)(void *ctx, const struct tb_link_frame *f);

struct tb_link_rx {
	uint64_t stat[TB_LR_MAX];
	uint32_t expect;	/* the next seq */
	uint32_t boot;		/* the last HELLO's */
	bool synced;		/* a delimiter was seen */
	bool started;		/* a good frame was seen */
	bool have_boot;
	bool over;		/* this frame outgrew buf: skip it */
	uint32_t left;		/* data bytes left in the COBS block */
	uint32_t code;		/* the block's code byte, 0 before one */
	uint32_t raw;		/* encoded bytes of this frame so far */
	uint32_t n;		/* decoded bytes in buf */
	struct tb_link_frame frame;
	uint16_t sizes[TB_FRAG_MAX];
	uint8_t buf[TB_LINK_FRAME_MAX];
};

static inline int tb_link_rx_init(struct tb_link_rx *rx)
{
	if (!rx)
		return TB_EINVAL;
	TB_MEMSET(rx, 0, sizeof(*rx));
	return TB_OK;
}

static inline int tb__link_parse_hello(struct tb_link_frame *f)
{
	const uint8_t *b = f->body;

	if (f->len < TB_LINK_HELLO_BODY)
		return TB_ELINK;
	f->hello.boot = tb__link_rd32(b);
	f->hello.chunk_size = tb__link_rd32(b + 4);
	f->hello.num_chunks = tb__link_rd32(b + 8);
	f->hello.ring_version = tb__link_rd32(b + 12);
	f->hello.lib_version = tb__link_rd32(b + 16);
	return TB_OK;
}

static inline int tb__link_parse_stats(struct tb_link_frame *f)
{
	const uint8_t *b = f->body;
	struct tb_link_stats *s = &f->stats;
	uint32_t i;

	if (f->len < TB_LINK_STATS_HDR)
		return TB_ELINK;
	s->write_pos = tb__link_rd32(b);
	s->read_pos = tb__link_rd32(b + 4);
	s->nw = b[8];
	s->nr = b[9];
	if (s->nw > TB_LINK_STATS_MAX || s->nr > TB_LINK_STATS_MAX ||
	    b[10] || b[11] ||
	    f->len != TB_LINK_STATS_HDR + 4u * (s->nw + s->nr))
		return TB_ELINK;
	b += TB_LINK_STATS_HDR;
	for (i = 0; i < TB_LINK_STATS_MAX; i++)
		s->wstat[i] = i < s->nw ? tb__link_rd32(b + 4 * i) : 0;
	b += 4 * s->nw;
	for (i = 0; i < TB_LINK_STATS_MAX; i++)
		s->rstat[i] = i < s->nr ? tb__link_rd32(b + 4 * i) : 0;
	return TB_OK;
}

/*
 * A CHUNK body as a struct tb_chunk_view that keeps the reader's
 * promises: writer id not 0, known flag bits only, a lost view holds no
 * fragments, the fragments fill the body exactly and fit a chunk.
 */
static inline int tb__link_parse_chunk(struct tb_link_frame *f,
				       uint16_t *sizes)
{
	const uint8_t *b = f->body;
	struct tb_chunk_view *v = &f->view;
	uint32_t i, n, total = 0;

	if (f->len < TB_LINK_CHUNK_HDR)
		return TB_ELINK;
	n = b[11];
	if (f->len < TB_LINK_CHUNK_HDR + 2u * n)
		return TB_ELINK;
	for (i = 0; i < n; i++) {
		sizes[i] = (uint16_t)tb__link_rd16(b + TB_LINK_CHUNK_HDR +
						   2 * i);
		total += sizes[i];
	}
	v->pos = tb__link_rd32(b);
	v->writer = (uint16_t)tb__link_rd16(b + 4);
	v->bid = (uint16_t)tb__link_rd16(b + 6);
	v->flags = (uint32_t)b[8] << TB_LINK_FLAGS_SHIFT;
	v->lost = b[9];
	v->scraped = b[10];
	v->nfrags = n;
	v->sizes = sizes;
	v->payload = b + TB_LINK_CHUNK_HDR + 2 * n;
	if (!v->writer || b[8] & ~7u || v->scraped > 1 ||
	    (v->lost && (n || v->lost > TB_VIEW_UNKNOWN_FORMAT)) ||
	    total > TB_CHUNK_MAX ||
	    f->len != TB_LINK_CHUNK_HDR + 2u * n + total)
		return TB_ELINK;
	return TB_OK;
}

/*
 * Checks and parses one decoded frame (@p, @n bytes) into @f; @sizes
 * (TB_FRAG_MAX entries) takes a CHUNK's fragment sizes.  TB_OK,
 * TB_ECRC, TB_ELINK (too short, unknown type, a body that does not
 * parse) or TB_ELINKVER (another version of this format).
 */
static inline int tb_link_parse(const uint8_t *p, uint32_t n,
				struct tb_link_frame *f, uint16_t *sizes)
{
	TB_MEMSET(f, 0, sizeof(*f));
	if (n < TB_LINK_HDR + TB_LINK_CRC)
		return TB_ELINK;
	if (tb_link_crc32(p, n - TB_LINK_CRC) !=
	    tb__link_rd32(p + n - TB_LINK_CRC))
		return TB_ECRC;
	if (p[1] != TB_LINK_VERSION)
		return TB_ELINKVER;
	f->type = p[0];
	f->seq = tb__link_rd32(p + 2);
	f->body = p + TB_LINK_HDR;
	f->len = n - TB_LINK_HDR - TB_LINK_CRC;
	switch (f->type) {
	case TB_LINK_HELLO:
		return tb__link_parse_hello(f);
	case TB_LINK_CHUNK:
		return tb__link_parse_chunk(f, sizes);
	case TB_LINK_STATS:
		return tb__link_parse_stats(f);
	case TB_LINK_END:
		return f->len ? TB_ELINK : TB_OK;
	}
	return TB_ELINK;
}

/* Sequence bookkeeping of a good frame: gaps, restarts. */
static inline void tb__link_track(struct tb_link_rx *rx,
				  struct tb_link_frame *f)
{
	uint32_t d = f->seq - rx->expect;

	if (!rx->started) {
		rx->started = true;
		f->gap = f->seq;	/* sent before the receiver heard any */
		rx->stat[TB_LR_MISSED_START] += f->seq;
	} else if (d >= 0x80000000u || (f->type == TB_LINK_HELLO &&
		   rx->have_boot && f->hello.boot != rx->boot)) {
		f->restart = true;	/* lower seq, or another boot */
		f->gap = f->seq;	/* the new stream's frames before */
		rx->stat[TB_LR_RESTARTS]++;
		rx->stat[TB_LR_LOST] += f->seq;
	} else {
		f->gap = d;
		rx->stat[TB_LR_LOST] += d;
	}
	if (f->type == TB_LINK_HELLO) {
		rx->boot = f->hello.boot;
		rx->have_boot = true;
	}
	if (f->type == TB_LINK_END)
		rx->stat[TB_LR_ENDS]++;
	rx->expect = f->seq + 1;
}

/* A delimiter: the frame collected so far is decided. */
static inline void tb__link_end_frame(struct tb_link_rx *rx,
				      tb_link_frame_fn fn, void *ctx)
{
	bool first = !rx->synced;
	int ret = TB_ELINK;

	rx->synced = true;
	if (!rx->raw)
		goto reset;		/* an empty frame: a resync mark */
	if (!rx->over && !rx->left)
		ret = tb_link_parse(rx->buf, rx->n, &rx->frame, rx->sizes);
	if (ret == TB_OK) {
		tb__link_track(rx, &rx->frame);
		rx->stat[TB_LR_FRAMES]++;
		if (fn)
			fn(ctx, &rx->frame);
		goto reset;
	}
	rx->stat[TB_LR_SKIPPED] += rx->raw + 1;
	if (first)
		rx->stat[TB_LR_PARTIAL_START] = 1;	/* not a frame's fault */
	else if (ret == TB_ECRC)
		rx->stat[TB_LR_BAD_CRC]++;
	else
		rx->stat[TB_LR_MALFORMED]++;
reset:
	rx->raw = rx->n = rx->left = rx->code = 0;
	rx->over = false;
}

/* One encoded byte other than the delimiter. */
static inline void tb__link_byte(struct tb_link_rx *rx, uint8_t c)
{
	rx->raw++;
	if (rx->over)
		return;
	if (rx->left) {
		rx->left--;
		rx->buf[rx->n++] = c;
		return;
	}
	/* a code byte: the zero the previous block implied comes first */
	if (rx->code && rx->code < 0xff)
		rx->buf[rx->n++] = 0;
	rx->code = c;
	rx->left = c - 1u;
	/* room for this block and the zero after it */
	if (rx->n + rx->left + 1 > TB_LINK_FRAME_MAX)
		rx->over = true;
}

/*
 * Takes @n more bytes of the stream; @fn (may be NULL) gets each good
 * frame as its delimiter arrives.
 */
static inline void tb_link_rx_feed(struct tb_link_rx *rx, const void *p,
				   size_t n, tb_link_frame_fn fn, void *ctx)
{
	const uint8_t *b = (const uint8_t *)p;
	size_t i;

	rx->stat[TB_LR_BYTES] += n;
	for (i = 0; i < n; i++) {
		if (b[i])
			tb__link_byte(rx, b[i]);
		else
			tb__link_end_frame(rx, fn, ctx);
	}
}

/*
 * The stream ended: bytes after the last delimiter are a frame cut
 * short (counted in TB_LR_TRUNCATED and TB_LR_SKIPPED, never parsed).
 */
static inline void tb_link_rx_finish(struct tb_link_rx *rx)
{
	if (rx->raw) {
		rx->stat[TB_LR_SKIPPED] += rx->raw;
		rx->stat[TB_LR_TRUNCATED] = 1;
	}
	rx->raw = rx->n = rx->left = rx->code = 0;
	rx->over = false;
}

#ifdef __cplusplus
}
#endif

#endif /* TBLINK_H */
