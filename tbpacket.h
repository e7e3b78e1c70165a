/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Copyright (c) 2026, tbring contributors.  BSD-2-Clause: see COPYING, or
 * https://opensource.org/license/bsd-2-clause for the text.
 *
 * tbpacket.h - whole packets out of a tbring.h ring: the reader-side
 * reassembly of packets split over chunks (struct tb_reassembly,
 * tb_reader_drain_packets()), with its slots, eviction and loss policy.
 *
 * Only a reader that wants packets, not fragments, needs it: a writer
 * (firmware included) vendors tbring.h alone.  Same contracts as
 * tbring.h's reader: one thread, memory the caller's, nothing allocated,
 * and every packet that cannot be delivered whole is counted as loss.
 */
#ifndef TBPACKET_H
#define TBPACKET_H
#define TBPACKET_H_VERSION 200	/* tbbase.h: TBRING_VERSION */

#include "tbring.h"

/* Headers of one release only: a mixed copy does not compile. */
#if TBRING_H_VERSION != TBPACKET_H_VERSION
#error "tbpacket.h needs the tbring.h of its own release"
#endif

#ifdef __cplusplus
extern "C" {
#endif
/* ------------------------------------------------------------------------
 * Packets, not fragments.  A packet longer than what a chunk has left is
 * split: its first fragment ends a chunk with "continues on next", the
 * rest begins the writer's next chunk with "continues from previous", and
 * other writers' chunks may come between the two.  A struct tb_reassembly
 * puts such packets back together in memory the caller gives, and reports
 * every packet it cannot deliver whole as loss; tb_reader_drain_packets()
 * hands each packet to the caller once, in each writer's order.  Packets
 * that lie in one chunk are handed over from the reader's scratch, with
 * no copy; only split ones are copied, into one of @max_open slots of
 * @max_packet bytes each (one slot per writer that may be between the two
 * halves of a packet at a time).
 */
enum tb_oversize {
	TB_OVERSIZE_DROP,	/* a packet longer than max_packet is lost */
	TB_OVERSIZE_TRUNCATE,	/* delivered cut at max_packet bytes */
};

#define TB_PKT_LOSS		1u	/* this writer lost packets before it */
#define TB_PKT_TRUNCATED	2u	/* longer than max_packet: cut */

/* A packet handed to the caller; @data stays valid until the callback
 * returns. */
struct tb_packet {
	uint16_t writer;
	uint16_t bid;
	uint32_t flags;		/* TB_PKT_* */
	const uint8_t *data;
	uint32_t len;		/* bytes at @data */
	uint32_t size;		/* the packet's own size (> len if cut) */
};

typedef void (*tb_packet_fn)(void *ctx, const struct tb_packet *p);

enum tb_pstat {			/* what the reassembly delivered and lost */
	TB_PS_PACKETS,		/* packets delivered */
	TB_PS_CUT,		/* lost: their continuation never came */
	TB_PS_ORPHANS,		/* lost: their start never came */
	TB_PS_NO_SLOT,		/* lost: more split packets open than slots */
	TB_PS_OVERSIZE,		/* lost: longer than max_packet */
	TB_PS_TRUNCATED,	/* delivered cut (TB_OVERSIZE_TRUNCATE) */
	TB_PS_MAX
};

/* A writer's slot: free, a packet being skipped to its end (lost), or a
 * split packet open.  A loss owed to a writer's next packet is no slot:
 * one bit per writer id, which nothing evicts. */
enum { TB__SLOT_FREE, TB__SLOT_SKIP, TB__SLOT_OPEN };
#define TB__RA_OWED_BYTES	(65536u / 8)

struct tb__slot {
	uint16_t writer;
	uint16_t bid;
	uint8_t state;		/* TB__SLOT_* */
	uint8_t loss;		/* its next delivered packet: TB_PKT_LOSS */
	uint8_t why;		/* SKIP: counted at its end (TB_PS_*) */
	uint8_t pad;
	uint32_t len;		/* bytes kept */
	uint32_t size;		/* bytes seen */
	uint32_t used;		/* last use, for eviction */
};

struct tb_reassembly {
	struct tb__slot *slots;
	uint8_t *owed;		/* a bit per writer id: loss owed */
	uint8_t *buf;		/* max_open * max_packet bytes */
	unsigned max_open;
	uint32_t max_packet;
	uint32_t clock;
	enum tb_oversize oversize;
	tb_packet_fn fn;
	void *ctx;
	uint32_t stat[TB_PS_MAX];
};

/*
 * Bytes tb_reassembly_init() needs for these limits, or 0 if too many:
 * a slot and @max_packet bytes for each of @max_open split packets, and
 * 8 KiB of owed loss flags (a bit per writer id).
 */
static inline size_t tb_reassembly_size(unsigned max_open,
					uint32_t max_packet)
{
	size_t per = sizeof(struct tb__slot) + (size_t)max_packet;

	if (!max_open || !max_packet ||
	    (SIZE_MAX - TB__RA_OWED_BYTES) / per < max_open)
		return 0;
	return (size_t)max_open * per + TB__RA_OWED_BYTES;
}

/*
 * Sets up @ra in @mem (@len >= tb_reassembly_size(), 4-byte aligned):
 * up to @max_open split packets at a time, each kept up to @max_packet
 * bytes; a longer one is dropped or truncated as @oversize says.
 * TB_EINVAL for a NULL pointer, limits tb_reassembly_size() refuses or
 * an unknown @oversize; TB_EALIGN for memory not 4-byte aligned,
 * TB_ESHORT for less than tb_reassembly_size().
 */
static inline int tb_reassembly_init(struct tb_reassembly *ra, void *mem,
				     size_t len, unsigned max_open,
				     uint32_t max_packet,
				     enum tb_oversize oversize)
{
	size_t need = tb_reassembly_size(max_open, max_packet);
	size_t slots = max_open * sizeof(struct tb__slot);

	if (!ra || !mem || !need ||
	    (oversize != TB_OVERSIZE_DROP && oversize != TB_OVERSIZE_TRUNCATE))
		return TB_EINVAL;
	if ((uintptr_t)mem % sizeof(uint32_t))
		return TB_EALIGN;
	if (len < need)
		return TB_ESHORT;
	TB_MEMSET(ra, 0, sizeof(*ra));
	TB_MEMSET(mem, 0, slots + TB__RA_OWED_BYTES);
	ra->slots = (struct tb__slot *)mem;
	ra->owed = (uint8_t *)mem + slots;
	ra->buf = ra->owed + TB__RA_OWED_BYTES;
	ra->max_open = max_open;
	ra->max_packet = max_packet;
	ra->oversize = oversize;
	return TB_OK;
}

/* The slot of @writer, or NULL. */
static inline struct tb__slot *tb__ra_find(struct tb_reassembly *ra,
					   uint16_t writer)
{
	unsigned i;

	for (i = 0; i < ra->max_open; i++)
		if (ra->slots[i].state != TB__SLOT_FREE &&
		    ra->slots[i].writer == writer)
			return &ra->slots[i];
	return NULL;
}

/* @writer's next delivered packet says TB_PKT_LOSS. */
static inline void tb__ra_owe(struct tb_reassembly *ra, uint16_t writer)
{
	ra->owed[writer >> 3] |= (uint8_t)(1u << (writer & 7));
}

/* Was a loss owed to @writer's next packet?  It is not any more. */
static inline uint8_t tb__ra_take_owed(struct tb_reassembly *ra,
				       uint16_t writer)
{
	uint8_t *b = &ra->owed[writer >> 3];
	uint8_t bit = (uint8_t)(1u << (writer & 7)), was = (*b & bit) != 0;

	*b &= (uint8_t)~bit;
	return was;
}

/*
 * @writer's slot, made if it has none: a free one, else the least
 * recently used of the cheapest to give up, no dearer than @worst - a
 * packet being skipped, then an open packet, which is lost.  NULL if
 * there is none that cheap.  Either way the evicted writer's next packet
 * owes the loss flag, which no eviction takes.  (With fewer slots than
 * writers between the two halves of a packet, a lost packet may be
 * counted under two causes; nothing wrong is ever delivered, and no
 * packet after a loss comes without TB_PKT_LOSS.)
 */
static inline struct tb__slot *tb__ra_victim(struct tb_reassembly *ra,
					     unsigned worst)
{
	struct tb__slot *sl, *b = NULL;

	for (sl = ra->slots; sl < ra->slots + ra->max_open; sl++) {
		if (sl->state == TB__SLOT_FREE)
			return sl;
		if (sl->state <= worst && (!b || sl->state < b->state ||
		    (sl->state == b->state && sl->used < b->used)))
			b = sl;
	}
	return b;
}

static inline struct tb__slot *tb__ra_slot(struct tb_reassembly *ra,
					   uint16_t writer, unsigned worst)
{
	struct tb__slot *sl = tb__ra_find(ra, writer);

	if (!sl) {
		sl = tb__ra_victim(ra, worst);
		if (!sl)
			return NULL;
		if (sl->state == TB__SLOT_OPEN)
			ra->stat[TB_PS_NO_SLOT]++;
		else if (sl->state == TB__SLOT_SKIP && sl->why < TB_PS_MAX)
			ra->stat[sl->why]++;
		if (sl->state != TB__SLOT_FREE)
			tb__ra_owe(ra, sl->writer);
		TB_MEMSET(sl, 0, sizeof(*sl));
		sl->writer = writer;
	}
	sl->used = ++ra->clock;
	return sl;
}

static inline uint8_t *tb__ra_data(const struct tb_reassembly *ra,
				   const struct tb__slot *sl)
{
	return ra->buf + (size_t)(sl - ra->slots) * ra->max_packet;
}

static inline void tb__ra_deliver(struct tb_reassembly *ra, uint16_t writer,
				  uint16_t bid, uint8_t *loss,
				  const uint8_t *data, uint32_t len,
				  uint32_t size)
{
	struct tb_packet p;

	p.writer = writer;
	p.bid = bid;
	p.flags = (*loss ? TB_PKT_LOSS : 0) |
		  (len < size ? TB_PKT_TRUNCATED : 0);
	p.data = data;
	p.len = len;
	p.size = size;
	*loss = 0;
	ra->stat[TB_PS_PACKETS]++;
	ra->stat[TB_PS_TRUNCATED] += len < size;
	ra->fn(ra->ctx, &p);
}

/* The packet in @sl is lost (counted as @why), the slot freed: the
 * writer's next packet says so. */
static inline void tb__ra_lose(struct tb_reassembly *ra, struct tb__slot *sl,
			       unsigned why)
{
	if (why < TB_PS_MAX)
		ra->stat[why]++;
	sl->state = TB__SLOT_FREE;
	tb__ra_owe(ra, sl->writer);
}

/* Fragment bytes of the packet in @sl; at @end, the packet is whole. */
static inline void tb__ra_add(struct tb_reassembly *ra, struct tb__slot *sl,
			      const uint8_t *p, uint32_t n, bool end)
{
	uint32_t room = ra->max_packet - sl->len, take = n < room ? n : room;

	if (sl->state == TB__SLOT_OPEN && n > room &&
	    ra->oversize == TB_OVERSIZE_DROP) {
		sl->state = TB__SLOT_SKIP;
		sl->why = TB_PS_OVERSIZE;
	}
	if (sl->state == TB__SLOT_OPEN) {
		TB_MEMCPY(tb__ra_data(ra, sl) + sl->len, p, take);
		sl->len += take;
		sl->size += n;
	}
	if (!end)
		return;
	if (sl->state == TB__SLOT_SKIP) {
		tb__ra_lose(ra, sl, sl->why);
		return;
	}
	tb__ra_deliver(ra, sl->writer, sl->bid, &sl->loss,
		       tb__ra_data(ra, sl), sl->len, sl->size);
	sl->state = TB__SLOT_FREE;
}

/* Splits one emitted chunk into packets (a tb_chunk_fn). */
static inline void tb__ra_chunk(void *ctx, const struct tb_chunk_view *v)
{
	struct tb_reassembly *ra = (struct tb_reassembly *)ctx;
	struct tb__slot *sl = tb__ra_find(ra, v->writer);
	bool cont = v->flags & TB_F_CONT_PREV, next = v->flags &
						       TB_F_CONT_NEXT;
	uint8_t loss = (v->flags & TB_F_DATA_LOSS) != 0;
	const uint8_t *p = v->payload;
	uint32_t i = 0;

	if (sl && (loss || !cont)) {
		/* the continuation never came, or data was lost between */
		tb__ra_lose(ra, sl, sl->state == TB__SLOT_OPEN ?
				    (unsigned)TB_PS_CUT : sl->why);
		sl = NULL;
	} else if (sl) {
		/* its first fragment ends the packet in @sl, or goes on */
		sl->used = ++ra->clock;
		tb__ra_add(ra, sl, p, v->sizes[0], v->nfrags > 1 || !next);
	}
	/* what this writer lost before, here or in an earlier chunk */
	loss |= tb__ra_take_owed(ra, v->writer);
	if (cont && !sl) {
		ra->stat[TB_PS_ORPHANS]++;	/* its start was lost */
		loss = 1;
		if (v->nfrags == 1 && next &&	/* skip it to its end */
		    (sl = tb__ra_slot(ra, v->writer, TB__SLOT_SKIP))) {
			sl->state = TB__SLOT_SKIP;
			sl->why = TB_PS_MAX;	/* counted already */
			loss = 0;		/* owed at its end */
		}
	}
	if (cont)
		p += v->sizes[i++];
	for (; i < v->nfrags; p += v->sizes[i++]) {
		if (i + 1 < v->nfrags || !next) {
			tb__ra_deliver(ra, v->writer, v->bid, &loss, p,
				       v->sizes[i], v->sizes[i]);
			continue;
		}
		/* the last fragment goes on in the writer's next chunk */
		sl = tb__ra_slot(ra, v->writer, TB__SLOT_OPEN);
		sl->state = TB__SLOT_OPEN;
		sl->bid = v->bid;
		sl->loss = loss;
		sl->len = sl->size = 0;
		tb__ra_add(ra, sl, p, v->sizes[i], false);
		loss = 0;
	}
	if (loss)	/* nothing came after the loss: the next packet says */
		tb__ra_owe(ra, v->writer);
}

/*
 * tb_reader_drain() for packets: resolves up to @max positions and hands
 * every whole packet to @fn, in each writer's order.  A packet split over
 * chunks is delivered when its last part arrives; one that can never be
 * completed is counted lost (ra->stat) and the writer's next packet
 * carries TB_PKT_LOSS, as does the first packet after a chunk the writer
 * flagged with data loss.  Returns why it stopped, as tb_reader_drain().
 */
static inline int tb_reader_drain_packets(struct tb_reader *rd,
					  struct tb_reassembly *ra,
					  unsigned max, enum tb_read_mode mode,
					  tb_packet_fn fn, void *ctx,
					  unsigned *resolved)
{
	ra->fn = fn;
	ra->ctx = ctx;
	return tb_reader_drain(rd, max, mode, tb__ra_chunk, ra, resolved);
}

#ifdef __cplusplus
}
#endif

#endif /* TBPACKET_H */
