/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Copyright (c) 2026, tbring contributors.  BSD-2-Clause: see COPYING, or
 * https://opensource.org/license/bsd-2-clause for the text.
 *
 * tbfrag.h - the fragment layout inside one ring chunk.
 *
 * A chunk of format 00 is laid out as
 *
 *   [0, 4)            state word (owned by tbring.h, accessed atomically)
 *   [4, 6)            target BufferID, little-endian
 *   [6, payload)      fragment payloads, growing up
 *   [payload, dir)    free
 *   [dir, chunk_size) size directory, growing down: fragment i's size is at
 *                     [chunk_size - (i + 1) * w, chunk_size - i * w)
 *
 * The entry width w is 1 byte for 256-byte chunks and 2 bytes
 * (little-endian, written bytewise) for every larger chunk.  A chunk holds
 * at most 255 fragments.
 *
 * Everything here is pure byte logic: no atomics, no allocation, no
 * threads.  The writer keeps its cursors in a private struct tb_frag_cursor;
 * the reader reconstructs the boundaries from the fragment count in the
 * state word and validates a private copy of the directory before trusting
 * any size.
 */
#ifndef TBFRAG_H
#define TBFRAG_H
#define TBFRAG_H_VERSION 200	/* tbbase.h: TBRING_VERSION */

#include "tbbase.h"

/* Headers of one release only: a mixed copy does not compile. */
#if TBBASE_H_VERSION != TBFRAG_H_VERSION
#error "tbfrag.h needs the tbbase.h of its own release"
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define TB_CHUNK_MIN		256u
#define TB_CHUNK_MAX		32768u
#define TB_FRAG_MAX		255u	/* fragments per chunk */
#define TB_FRAG_BID_OFF		4u	/* target BufferID, format 00 */
#define TB_FRAG_PAYLOAD_OFF	6u	/* first payload byte, format 00 */

/* Size-entry width for a ring of @chunk_size bytes: 1 or 2. */
static inline unsigned tb_frag_width(uint32_t chunk_size)
{
	return chunk_size == TB_CHUNK_MIN ? 1u : 2u;
}

/*
 * Largest single fragment a chunk of @chunk_size bytes can hold (one
 * entry, nothing else): chunk_size - 6 - the entry's width for the sizes
 * a ring may have, [TB_CHUNK_MIN, TB_CHUNK_MAX]; 0 for any other size
 * (below 8 bytes the difference would wrap to nearly 2^32).
 */
static inline uint32_t tb_frag_max_size(uint32_t chunk_size)
{
	if (chunk_size < TB_CHUNK_MIN || chunk_size > TB_CHUNK_MAX)
		return 0;
	return chunk_size - TB_FRAG_PAYLOAD_OFF - tb_frag_width(chunk_size);
}

/* Bytewise little-endian helpers: no alignment or endianness assumed. */
static inline void tb__frag_put_le(uint8_t *p, unsigned w, uint32_t v)
{
	p[0] = (uint8_t)v;
	if (w == 2)
		p[1] = (uint8_t)(v >> 8);
}

static inline uint32_t tb__frag_get_le(const uint8_t *p, unsigned w)
{
	return w == 2 ? (uint32_t)p[0] | (uint32_t)p[1] << 8 : p[0];
}

static inline void tb_frag_set_bid(uint8_t *chunk, uint16_t bid)
{
	tb__frag_put_le(chunk + TB_FRAG_BID_OFF, 2, bid);
}

static inline uint16_t tb_frag_bid(const uint8_t *chunk)
{
	return (uint16_t)tb__frag_get_le(chunk + TB_FRAG_BID_OFF, 2);
}

/* Offset of fragment @i's size entry inside a chunk. */
static inline uint32_t tb__frag_entry_off(uint32_t chunk_size, unsigned w,
					 unsigned i)
{
	return chunk_size - (uint32_t)(i + 1) * w;
}

/*
 * The writer's private view of the chunk it owns.  @payload and @dir are
 * the two cursors of the layout: the next payload byte and the lowest
 * directory byte in use.  @nfrags counts closed fragments.
 */
struct tb_frag_cursor {
	uint8_t *chunk;
	uint32_t chunk_size;
	uint32_t payload;
	uint32_t dir;
	uint32_t nfrags;
	uint32_t width;
	uint32_t open;		/* 1 while a fragment is open */
};

/* Starts writing an empty chunk. */
static inline void tb_frag_cursor_init(struct tb_frag_cursor *c,
				       uint8_t *chunk, uint32_t chunk_size)
{
	c->chunk = chunk;
	c->chunk_size = chunk_size;
	c->payload = TB_FRAG_PAYLOAD_OFF;
	c->dir = chunk_size;
	c->nfrags = 0;
	c->width = tb_frag_width(chunk_size);
	c->open = 0;
}

/*
 * Bytes a fragment opened now could hold, or TB_ENOROOM when no fragment
 * may be opened (255 fragments, or not even room for the size entry).  0
 * is a legal answer: an empty fragment still fits.
 */
TB__ALWAYS int32_t tb_frag_room(const struct tb_frag_cursor *c)
{
	/* each at most chunk_size (32 KiB): negative when none fits */
	int32_t room = (int32_t)c->dir - (int32_t)c->width -
		       (int32_t)c->payload;

	/* the cast: int32_t is long on some targets, and C++ warns */
	return c->nfrags >= TB_FRAG_MAX || room < 0 ? (int32_t)TB_ENOROOM :
						     room;
}

/* tb_frag_open() once its caller knows the fragment may be opened. */
static inline void tb__frag_begin(struct tb_frag_cursor *c, uint8_t **begin,
				  uint8_t **end)
{
	c->open = 1;
	*begin = c->chunk + c->payload;
	*end = c->chunk + c->dir - c->width;
}

/*
 * Opens a fragment: on success hands out the range [*begin, *end) the
 * encoder may fill, and returns TB_OK.  Fails with TB_EOPEN while one is
 * open, and with TB_ENOROOM at 255 fragments or when the directory entry
 * would not fit.  The entry's bytes are reserved before the range is
 * handed out, so payload and directory never overlap.
 */
static inline int tb_frag_open(struct tb_frag_cursor *c, uint8_t **begin,
			       uint8_t **end)
{
	if (c->open)
		return TB_EOPEN;
	if (tb_frag_room(c) < 0)
		return TB_ENOROOM;
	tb__frag_begin(c, begin, end);
	return TB_OK;
}

/* tb_frag_close() once its caller knows @size fits the open fragment. */
TB__ALWAYS void tb__frag_end(struct tb_frag_cursor *c, uint32_t size)
{
	c->dir -= c->width;
	tb__frag_put_le(c->chunk + c->dir, c->width, size);
	c->payload += size;
	c->nfrags++;
	c->open = 0;
}

/*
 * Closes the open fragment after the encoder wrote @size bytes: writes the
 * size entry, then moves both cursors.  Changes nothing and returns
 * TB_ENOTOPEN when no fragment is open, TB_ESIZE when @size exceeds the
 * range handed out.  Publication through the state word is the caller's
 * (tbring.h) job.
 */
static inline int tb_frag_close(struct tb_frag_cursor *c, uint32_t size)
{
	if (!c->open)
		return TB_ENOTOPEN;
	if (size > c->dir - c->width - c->payload)
		return TB_ESIZE;
	tb__frag_end(c, size);
	return TB_OK;
}

/*
 * Open, copy @len bytes, close: one whole fragment (tests and fuzzers).
 * TB_OK, tb_frag_open()'s error (a fragment already open is left alone),
 * or TB_ENOROOM when @len does not fit.
 */
static inline int tb__frag_append(struct tb_frag_cursor *c, const void *src,
				  uint32_t len)
{
	uint8_t *b, *e;
	int ret = tb_frag_open(c, &b, &e);

	if (ret)
		return ret;
	if (len > (uint32_t)(e - b)) {
		c->open = 0;
		return TB_ENOROOM;
	}
	if (len)
		TB_MEMCPY(b, src, len);
	return tb_frag_close(c, len);
}

/*
 * Reader side.  @n fragments at entry width @w in a
 * chunk of @chunk_size bytes: the directory is [chunk_size - n * w,
 * chunk_size).  First check that it can exist at all ...
 */
static inline int tb_frag_dir_fits(uint32_t chunk_size, unsigned n,
				   unsigned w)
{
	return (uint32_t)n * w <= chunk_size - TB_FRAG_PAYLOAD_OFF;
}

/*
 * ... then parse a private copy @dir of exactly those n * w bytes (in
 * memory order, so fragment 0's entry is the last one).  Sizes are stored
 * in payload order into @sizes.  Returns the total payload bytes, or
 * TB_EDIR when the directory cannot exist or the running total passes the
 * space it leaves free.  The addition is checked at every step, so no
 * total can wrap.
 */
static inline int32_t tb_frag_parse_dir(const uint8_t *dir, unsigned n,
					unsigned w, uint32_t chunk_size,
					uint16_t *sizes)
{
	uint32_t limit = chunk_size - TB_FRAG_PAYLOAD_OFF - (uint32_t)n * w;
	uint32_t total = 0;
	unsigned i;

	if (!tb_frag_dir_fits(chunk_size, n, w))
		return TB_EDIR;	/* and limit above wrapped */
	for (i = 0; i < n; i++) {
		uint32_t size = tb__frag_get_le(dir + (n - 1 - i) * w, w);

		if (size > limit - total)
			return TB_EDIR;
		total += size;
		sizes[i] = (uint16_t)size;
	}
	return (int32_t)total;
}


#ifdef __cplusplus
}
#endif

#endif /* TBFRAG_H */
