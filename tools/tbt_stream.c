/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Copyright (c) 2026, tbring contributors.  BSD-2-Clause: see COPYING, or
 * https://opensource.org/license/bsd-2-clause for the text.
 *
 * tbtrace stream: a byte stream of tblink.h frames (a target's UART, a
 * file, stdin) into a Perfetto trace, through the same bridge, central
 * buffers and trace writer as the service and convert.
 *
 * Included by tbtrace.c (one translation unit: the tool's helpers, say()
 * and the checker's verdict, are static there).  Every loss the link or
 * the ring saw is reported, and flagged in the trace where it can be:
 * frames lost by a sequence gap (a bad CRC, bytes lost, a start in the
 * middle) put the data-loss flag on the next chunk of every sequence and
 * a gap in its chunk ids, so no packet is joined across the loss; what
 * the ring refused its writers (the last STATS frame) is counted, and
 * sampled on the ring's "events lost" track.  After a loss, each
 * sequence's incremental state is given back to the importer (below), so
 * a burst of lost frames costs what those frames held.
 */
#include "tblink.h"

#define TBT_STREAM_BUF	(4u << 20)	/* default central buffer size */

/* ------------------------------------------------------------------------
 * Restating a sequence's incremental state after a link loss.
 *
 * A target never learns that the link lost frames: its writers go on
 * naming the interned strings and the defaults of their current state,
 * and Perfetto's importer, which invalidates a sequence's incremental
 * state at the packet that says previous_packet_dropped, skips every
 * later packet of that sequence that needs it (SEQ_NEEDS_INCREMENTAL_
 * STATE) until the writer's next fresh state (proto_trace_reader.cc,
 * ParsePacket).  The host saw that state, though: since the sequence's
 * last clear it wrote every interned entry and the defaults out itself.
 * So before the first packet after a loss that needs the state, the
 * stream writes a packet of its own on that sequence carrying the loss
 * bits (the loss still shows), SEQ_INCREMENTAL_STATE_CLEARED, the
 * defaults and every entry interned since the last clear: the state the
 * importer dropped, given back (an iid names one string for the life of
 * a writer, tbevent.h).  The packet after it goes out without the loss
 * bits; a packet that needs no state takes them as before.
 *
 * What the lost frames themselves held stays lost: an entry interned
 * there for the first time, a track described there.  While a sequence
 * runs on a restated state, a packet whose TrackEvent names an iid the
 * host never saw, or a track no descriptor has named yet, would be
 * imported with a name or a track missing; it is dropped instead and its
 * loss flagged on the next restate (or at the end).  The sequence's next
 * clear (the writer's fresh state: a target restates every so many
 * frames, tb_link_tx_restate()) ends that.  An entry that gives a
 * recorded iid another value means the record is not the writer's state
 * (a writer that started over under the same id, its clear lost): the
 * record is dropped, and if the importer runs on a restate of it, that
 * packet's loss flag takes the state away again, as without a restate.
 * A new stream (a restarted target) drops every record.  A sequence that
 * never needs the state is never restated; one whose record outgrew
 * TBT_RS_BLOB_MAX, or one past TBT_RS_SEQS, is left to the importer.
 */
#define TBT_RS_SEQS		256	/* sequences restated */
#define TBT_RS_BLOB_MAX		(64u << 10)	/* interned bytes kept, each */
#define TBT_RS_DEPTH		8	/* nested debug annotations walked */

/* A map of 64-bit keys to 32-bit values: open addressing, 0 apart. */
struct tbt_map {
	uint64_t *k;
	uint32_t *v;
	uint32_t cap, n;
	bool zero;		/* key 0 is there, with value zv */
	uint32_t zv;
};

/* Whether @key is there; its value into *@v (when not NULL). */
static bool tbt_map_get(const struct tbt_map *m, uint64_t key, uint32_t *v)
{
	uint32_t i;

	if (!key || !m->cap) {
		if (key || !m->zero)
			return false;
		if (v)
			*v = m->zv;
		return true;
	}
	for (i = (uint32_t)(key * 0x9e3779b97f4a7c15ull >> 32) & (m->cap - 1);
	     m->k[i]; i = (i + 1) & (m->cap - 1))
		if (m->k[i] == key) {
			if (v)
				*v = m->v[i];
			return true;
		}
	return false;
}

/* Adds @key with @v (a key there keeps its value); false: no memory. */
static bool tbt_map_put(struct tbt_map *m, uint64_t key, uint32_t v)
{
	struct tbt_map g;
	uint32_t i;

	if (tbt_map_get(m, key, NULL))
		return true;
	if (!key) {
		m->zero = true;
		m->zv = v;
		return true;
	}
	if ((m->n + 1) * 2 > m->cap) {
		memset(&g, 0, sizeof(g));
		g.cap = m->cap ? m->cap * 2 : 64;
		g.zero = m->zero;
		g.zv = m->zv;
		g.k = (uint64_t *)calloc(g.cap, sizeof(*g.k));
		g.v = (uint32_t *)calloc(g.cap, sizeof(*g.v));
		if (!g.k || !g.v) {
			free(g.k);
			free(g.v);
			return false;
		}
		for (i = 0; i < m->cap; i++)
			if (m->k[i])
				tbt_map_put(&g, m->k[i], m->v[i]);
		free(m->k);
		free(m->v);
		*m = g;
	}
	for (i = (uint32_t)(key * 0x9e3779b97f4a7c15ull >> 32) & (m->cap - 1);
	     m->k[i]; i = (i + 1) & (m->cap - 1))
		;
	m->k[i] = key;
	m->v[i] = v;
	m->n++;
	return true;
}

static void tbt_map_clear(struct tbt_map *m)
{
	if (m->cap)
		memset(m->k, 0, m->cap * sizeof(*m->k));
	m->n = 0;
	m->zero = false;
}

static void tbt_map_free(struct tbt_map *m)
{
	free(m->k);
	free(m->v);
	memset(m, 0, sizeof(*m));
}

/* A sequence's incremental state, as the host wrote it out. */
struct tbt_rs_seq {
	uint32_t seq_id;
	bool known;		/* a clear was seen: the state is recorded */
	bool valid;		/* the importer's state is (its model) */
	bool restated;		/* ... since our restate, not a clear */
	bool full;		/* the record outgrew TBT_RS_BLOB_MAX */
	uint32_t pending;	/* loss bits for the next restate */
	struct tb_buf_packet like;	/* its producer, writer, identity */
	struct tbt_map iids;	/* iid << 6 | InternedData field: where
				   in blob[] its entry is */
	uint8_t *defaults;	/* TracePacketDefaults, if any */
	size_t ndefaults;
	uint8_t *blob;		/* InternedData fields, as written */
	size_t nblob, capblob;
};

struct tbt_restate {
	struct tbt_rs_seq seqs[TBT_RS_SEQS];
	unsigned nseqs;
	struct tbt_map uuids;	/* tracks described so far, any sequence */
	uint8_t *scratch;	/* a packet of several slices, joined */
	size_t capscratch;
	uint64_t restates;	/* packets written to restate a sequence */
	uint64_t dropped;	/* packets dropped: they named lost state */
};

/*
 * The fields it reads are tbcheck.h's (TB__CK_*: the same TracePacket,
 * InternedData and TrackEvent), and a DebugAnnotation's array_values.
 */
#define TBT_RS_DA_ARRAY		12

/* What one packet says that the restate needs to know. */
struct tbt_rs_pkt {
	uint32_t flags;
	const uint8_t *te, *defaults;
	size_t te_n, defaults_n;
	bool has_te, has_defaults, has_interned;
};

static void tbt_rs_parse(const uint8_t *p, size_t n, struct tbt_rs_pkt *k)
{
	struct tb_pb_reader r;
	struct tb_pb_field f;

	memset(k, 0, sizeof(*k));
	tb_pb_reader_init(&r, p, n);
	while (tb_pb_next(&r, &f) > 0) {
		if (f.number == TB__CK_TP_FLAGS && f.type == TB_PB_VARINT)
			k->flags = (uint32_t)f.value;
		if (f.type != TB_PB_LEN)
			continue;
		if (f.number == TB__CK_TP_TRACK_EVENT) {
			k->has_te = true;
			k->te = f.data;
			k->te_n = f.size;
		} else if (f.number == TB__CK_TP_DEFAULTS) {
			k->has_defaults = true;
			k->defaults = f.data;
			k->defaults_n = f.size;
		} else if (f.number == TB__CK_TP_INTERNED) {
			k->has_interned = true;
		}
	}
}

/* The record of @pkt's sequence, made if new and there is room. */
static struct tbt_rs_seq *tbt_rs_seq(struct tbt_restate *rs,
				     const struct tb_buf_packet *pkt)
{
	uint32_t seq = tb_trace_seq_id(pkt->producer_id, pkt->writer_id);
	struct tbt_rs_seq *q;
	unsigned i;

	for (i = 0; i < rs->nseqs; i++)
		if (rs->seqs[i].seq_id == seq)
			return &rs->seqs[i];
	if (rs->nseqs == TBT_RS_SEQS)
		return NULL;
	q = &rs->seqs[rs->nseqs++];
	q->seq_id = seq;
	q->like.producer_id = pkt->producer_id;
	q->like.writer_id = pkt->writer_id;
	q->like.ident = pkt->ident;
	return q;
}

/* InternedData field @f's key and length as written, at @h: their size. */
static size_t tbt_rs_head(uint8_t *h, const struct tb_pb_field *f)
{
	return tb_pb_len(h, f->number, f->size);
}

/* Appends InternedData field @f (its key, length and bytes) to @q. */
static bool tbt_rs_keep(struct tbt_rs_seq *q, const struct tb_pb_field *f)
{
	uint8_t h[2 * TB_PB_VARINT_MAX];
	size_t nh = tbt_rs_head(h, f), cap;
	uint8_t *nb;

	if (q->nblob + nh + f->size > TBT_RS_BLOB_MAX)
		return false;
	if (q->capblob - q->nblob < nh + f->size) {
		cap = q->capblob ? q->capblob : 1024;
		while (cap - q->nblob < nh + f->size)
			cap *= 2;
		nb = (uint8_t *)realloc(q->blob, cap);
		if (!nb)
			return false;
		q->blob = nb;
		q->capblob = cap;
	}
	memcpy(q->blob + q->nblob, h, nh);
	memcpy(q->blob + q->nblob + nh, f->data, f->size);
	q->nblob += nh + f->size;
	return true;
}

/* Whether field @f is what @q recorded at @off (the same entry again). */
static bool tbt_rs_same(const struct tbt_rs_seq *q, uint32_t off,
			const struct tb_pb_field *f)
{
	uint8_t h[2 * TB_PB_VARINT_MAX];
	size_t nh = tbt_rs_head(h, f);

	return q->nblob - off >= nh + f->size &&
	       !memcmp(q->blob + off, h, nh) &&
	       !memcmp(q->blob + off + nh, f->data, f->size);
}

/*
 * One InternedData entry @f, iid @iid: recorded if new.  False when it
 * gives a recorded iid another value: the record is not this writer's
 * state (a writer that started over under the same id, its clear lost).
 */
static bool tbt_rs_entry(struct tbt_rs_seq *q, const struct tb_pb_field *f,
			 uint64_t iid)
{
	uint64_t key = iid << 6 | f->number;
	uint32_t off;

	if (tbt_map_get(&q->iids, key, &off))
		return tbt_rs_same(q, off, f);
	off = (uint32_t)q->nblob;
	q->full = !tbt_rs_keep(q, f) || !tbt_map_put(&q->iids, key, off);
	return true;
}

/*
 * The interned entries of packet @p that @q has not recorded: recorded
 * (the first value of an iid is the one the importer keeps).  False
 * when one contradicts the record (tbt_rs_entry()).
 */
static bool tbt_rs_intern(struct tbt_rs_seq *q, const uint8_t *p, size_t n)
{
	struct tb_pb_reader r, id;
	struct tb_pb_field f;
	uint64_t iid;

	tb_pb_reader_init(&r, p, n);
	while (!q->full && tb_pb_next(&r, &f) > 0) {
		if (f.number != TB__CK_TP_INTERNED || f.type != TB_PB_LEN)
			continue;
		tb_pb_reader_init(&id, f.data, f.size);
		while (!q->full && tb_pb_next(&id, &f) > 0) {
			if (f.type != TB_PB_LEN || f.number >= 64 ||
			    !tb__ck_uint(f.data, f.size, 1, &iid) ||
			    iid >> 58)
				continue;
			if (!tbt_rs_entry(q, &f, iid))
				return false;
		}
	}
	return true;
}

/* Whether iid @iid of InternedData field @field is recorded in @q. */
static bool tbt_rs_iid(const struct tbt_rs_seq *q, unsigned field,
		       uint64_t iid)
{
	return !(iid >> 58) && tbt_map_get(&q->iids, iid << 6 | field, NULL);
}

/* Whether the name iids of debug annotation @p (and nested ones) are. */
static bool tbt_rs_annotation(const struct tbt_rs_seq *q, const uint8_t *p,
			      size_t n, unsigned depth)
{
	struct tb_pb_reader r;
	struct tb_pb_field f;

	if (depth > TBT_RS_DEPTH)
		return true;	/* deeper: not looked at */
	tb_pb_reader_init(&r, p, n);
	while (tb_pb_next(&r, &f) > 0) {
		if (f.number == TB__CK_DA_NAME_IID && f.type == TB_PB_VARINT &&
		    !tbt_rs_iid(q, TB__CK_ID_ANNOTATION_NAMES, f.value))
			return false;
		if ((f.number == TB__CK_DA_DICT ||
		     f.number == TBT_RS_DA_ARRAY) && f.type == TB_PB_LEN &&
		    !tbt_rs_annotation(q, f.data, f.size, depth + 1))
			return false;
	}
	return true;
}

/* Whether every category iid of field @f (packed or not) is recorded. */
static bool tbt_rs_categories(const struct tbt_rs_seq *q,
			      const struct tb_pb_field *f)
{
	uint64_t v;
	size_t off = 0;
	unsigned k;

	if (f->type == TB_PB_VARINT)
		return tbt_rs_iid(q, TB__CK_ID_CATEGORIES, f->value);
	if (f->type != TB_PB_LEN)
		return true;
	while (off < f->size) {
		k = tb_pb_varint_get(f->data + off, f->size - off, &v);
		if (!k)
			return true;	/* not protobuf: the importer's call */
		if (!tbt_rs_iid(q, TB__CK_ID_CATEGORIES, v))
			return false;
		off += k;
	}
	return true;
}

/*
 * Whether TrackEvent @te (@n bytes) names only what the importer will
 * have: iids recorded for @q (the name, the categories, debug annotation
 * names, the source location, a legacy event's name), and a track some
 * descriptor has named (its own track_uuid, else the sequence's default).
 */
static bool tbt_rs_resolves(const struct tbt_restate *rs,
			    const struct tbt_rs_seq *q, const uint8_t *te,
			    size_t n)
{
	struct tb_pb_reader r;
	struct tb_pb_field f;
	const uint8_t *d;
	size_t dn;
	uint64_t v, track = 0;
	bool has_track = false;

	tb_pb_reader_init(&r, te, n);
	while (tb_pb_next(&r, &f) > 0) {
		if ((f.number == TB__CK_TE_NAME_IID && f.type == TB_PB_VARINT &&
		     !tbt_rs_iid(q, TB__CK_ID_NAMES, f.value)) ||
		    (f.number == TB__CK_TE_SOURCE_IID &&
		     f.type == TB_PB_VARINT &&
		     !tbt_rs_iid(q, TB__CK_ID_SOURCES, f.value)) ||
		    (f.number == TB__CK_TE_CATEGORY_IIDS &&
		     !tbt_rs_categories(q, &f)) ||
		    (f.number == TB__CK_TE_ANNOTATIONS && f.type == TB_PB_LEN &&
		     !tbt_rs_annotation(q, f.data, f.size, 0)) ||
		    (f.number == TB__CK_TE_LEGACY && f.type == TB_PB_LEN &&
		     tb__ck_uint(f.data, f.size, TB__CK_LE_NAME_IID, &v) &&
		     !tbt_rs_iid(q, TB__CK_ID_NAMES, v)))
			return false;
		if (f.number == TB__CK_TE_TRACK && f.type == TB_PB_VARINT) {
			has_track = true;
			track = f.value;
		}
	}
	if (!has_track && q->defaults &&
	    tb__ck_msg(q->defaults, q->ndefaults, TB__CK_DEF_TRACK_EVENT, &d,
		       &dn))
		has_track = tb__ck_uint(d, dn, TB__CK_DEF_TRACK, &track);
	return !has_track || tbt_map_get(&rs->uuids, track, NULL);
}

/* The tracks packet @p describes, into the set of known ones. */
static void tbt_rs_describe(struct tbt_restate *rs, const uint8_t *p,
			    size_t n)
{
	const uint8_t *td;
	size_t len;
	uint64_t uuid;

	if (tb__ck_msg(p, n, TB__CK_TP_TRACK_DESC, &td, &len) &&
	    tb__ck_uint(td, len, TB__CK_TD_UUID, &uuid))
		tbt_map_put(&rs->uuids, uuid, 0);
}

/* @pkt's bytes in one piece (its slices joined); NULL: no memory. */
static const uint8_t *tbt_rs_bytes(struct tbt_restate *rs,
				   const struct tb_buf_packet *pkt)
{
	uint8_t *np;
	size_t off = 0;
	unsigned i;

	if (pkt->nslices == 1)
		return pkt->slices[0].data;
	if (rs->capscratch < pkt->size) {
		np = (uint8_t *)realloc(rs->scratch, pkt->size);
		if (!np)
			return NULL;
		rs->scratch = np;
		rs->capscratch = pkt->size;
	}
	for (i = 0; i < pkt->nslices; i++) {
		memcpy(rs->scratch + off, pkt->slices[i].data,
		       pkt->slices[i].size);
		off += pkt->slices[i].size;
	}
	return rs->scratch ? rs->scratch : (const uint8_t *)"";
}

/*
 * The packet that gives @q's recorded state back to the importer, on the
 * sequence of @like, with loss bits @loss: SEQ_INCREMENTAL_STATE_CLEARED,
 * the defaults, every entry interned since the last clear.
 */
static void tbt_rs_restate(struct tbt_restate *rs, struct tb_trace_out *out,
			   const struct tb_buf_packet *like,
			   struct tbt_rs_seq *q, uint32_t loss)
{
	uint8_t head[4 * TB_PB_VARINT_MAX], ih[2 * TB_PB_VARINT_MAX];
	struct tb_buf_slice sl[4];
	struct tb_buf_packet pkt = *like;
	unsigned i;

	sl[0].data = head;
	sl[0].size = tb_pb_uint(head, TB__CK_TP_FLAGS, TB__CK_SEQ_CLEARED);
	pkt.nslices = 1;
	if (q->defaults) {
		sl[0].size += tb_pb_len(head + sl[0].size, TB__CK_TP_DEFAULTS,
					q->ndefaults);
		sl[pkt.nslices].data = q->defaults;
		sl[pkt.nslices++].size = q->ndefaults;
	}
	if (q->nblob) {
		sl[pkt.nslices].data = ih;
		sl[pkt.nslices++].size = tb_pb_len(ih, TB__CK_TP_INTERNED,
						   q->nblob);
		sl[pkt.nslices].data = q->blob;
		sl[pkt.nslices++].size = q->nblob;
	}
	pkt.slices = sl;
	for (pkt.size = 0, i = 0; i < pkt.nslices; i++)
		pkt.size += sl[i].size;
	pkt.loss = loss;
	tb_trace_write_packet(out, &pkt);
	rs->restates++;
}

/* What @q recorded is dropped: nothing to restate until a clear. */
static void tbt_rs_forget(struct tbt_rs_seq *q)
{
	tbt_map_clear(&q->iids);
	free(q->defaults);
	q->defaults = NULL;
	q->ndefaults = 0;
	q->nblob = 0;
	q->known = q->restated = q->full = false;
}

/* A packet that clears its sequence's state: the record starts over. */
static void tbt_rs_cleared(struct tbt_rs_seq *q, struct tb_buf_packet *w)
{
	w->loss |= q->pending;
	tbt_rs_forget(q);
	q->known = q->valid = true;
	q->pending = 0;
}

/* Records the defaults of packet @k (the last ones count). */
static void tbt_rs_defaults(struct tbt_rs_seq *q, const struct tbt_rs_pkt *k)
{
	uint8_t *d;

	if (!k->has_defaults)
		return;
	d = (uint8_t *)malloc(k->defaults_n ? k->defaults_n : 1);
	if (!d) {
		q->full = true;
		return;
	}
	memcpy(d, k->defaults, k->defaults_n);
	free(q->defaults);
	q->defaults = d;
	q->ndefaults = k->defaults_n;
}

/*
 * Packet @pkt of a buffer into the trace, for sequence @q: its loss bits
 * held back while a restate can carry them, a restate before it when it
 * needs the state the importer lost, dropped when it names state the link
 * lost.  False when dropped.
 */
static bool tbt_rs_step(struct tbt_restate *rs, struct tb_trace_out *out,
			struct tbt_rs_seq *q, const struct tbt_rs_pkt *k,
			struct tb_buf_packet *w)
{
	bool needs = (k->flags & TB__CK_SEQ_NEEDS) || k->has_interned;

	if (w->loss) {
		q->valid = false;
		q->pending |= w->loss;
		w->loss = 0;
	}
	/* a loss flag on a packet that needs the state would take it away
	 * again: the flag goes on a restate, before it */
	if (needs && q->known && !q->full && (!q->valid || q->pending)) {
		tbt_rs_restate(rs, out, w, q, q->pending);
		q->pending = 0;
		q->valid = q->restated = true;
	}
	if (q->restated && k->has_te && !tbt_rs_resolves(rs, q, k->te,
							  k->te_n)) {
		q->pending |= TB_BUF_LOSS_PRESENT;
		rs->dropped++;
		return false;
	}
	w->loss = q->pending;
	q->pending = 0;
	if (w->loss)
		q->valid = false;
	return true;
}

/*
 * What packet @p (@n bytes, parsed in @k) interned goes into @q's record
 * before anything is decided for it (its own entries resolve its own
 * event, and a restate carries them).  An entry that gives a recorded
 * iid another value means the record is not the writer's state: it is
 * dropped, and if the importer runs on a restate of it, @w's loss flag
 * takes that state away again (as without a restate).
 */
static void tbt_rs_record(struct tbt_rs_seq *q, const uint8_t *p, size_t n,
			  const struct tbt_rs_pkt *k, struct tb_buf_packet *w)
{
	if (!q->known || q->full)
		return;
	if (!tbt_rs_intern(q, p, n)) {
		if (q->restated) {
			w->loss |= TB_BUF_LOSS_PRESENT;
			q->valid = false;
		}
		tbt_rs_forget(q);
		return;
	}
	tbt_rs_defaults(q, k);
}

/* Packet @pkt of a buffer into the trace, through the restate. */
static void tbt_rs_packet(struct tbt_restate *rs, struct tb_trace_out *out,
			  const struct tb_buf_packet *pkt)
{
	const uint8_t *p = tbt_rs_bytes(rs, pkt);
	struct tb_buf_packet w = *pkt;
	struct tbt_rs_seq *q = p ? tbt_rs_seq(rs, pkt) : NULL;
	struct tbt_rs_pkt k;

	if (!q) {
		tb_trace_write_packet(out, pkt);
		return;
	}
	tbt_rs_parse(p, pkt->size, &k);
	if (k.flags & TB__CK_SEQ_CLEARED)
		tbt_rs_cleared(q, &w);
	tbt_rs_record(q, p, pkt->size, &k, &w);
	if (!(k.flags & TB__CK_SEQ_CLEARED) && !tbt_rs_step(rs, out, q, &k, &w))
		return;		/* dropped: its loss is flagged later */
	tbt_rs_describe(rs, p, pkt->size);
	tb_trace_write_packet(out, &w);
}

/*
 * The end: a loss no packet carried yet (packets dropped last on their
 * sequence) goes out on a restate of its own.
 */
static void tbt_rs_finish(struct tbt_restate *rs, struct tb_trace_out *out)
{
	unsigned i;

	for (i = 0; i < rs->nseqs; i++) {
		struct tbt_rs_seq *q = &rs->seqs[i];

		if (!q->pending)
			continue;
		tbt_rs_restate(rs, out, &q->like, q, q->pending);
		q->pending = 0;
	}
}

/* A new boot's writers: what was recorded of the old ones is no use. */
static void tbt_rs_restart(struct tbt_restate *rs)
{
	unsigned i;

	for (i = 0; i < rs->nseqs; i++)
		tbt_rs_forget(&rs->seqs[i]);
}

static void tbt_rs_free(struct tbt_restate *rs)
{
	unsigned i;

	for (i = 0; i < rs->nseqs; i++) {
		tbt_map_free(&rs->seqs[i].iids);
		free(rs->seqs[i].defaults);
		free(rs->seqs[i].blob);
	}
	tbt_map_free(&rs->uuids);
	free(rs->scratch);
	memset(rs, 0, sizeof(*rs));
}

struct tbt_stream_opts {
	uint16_t producer;
	int32_t pid;
	uint32_t uid;
	uint64_t buf_size;		/* 0: TBT_STREAM_BUF */
	size_t budget;			/* checker's, 0: default */
};

struct tbt_stream {
	const struct tbt_stream_opts *o;
	FILE *f;
	struct tb_trace_out *out;
	struct tb_link_rx *rx;
	struct tbt_restate *rs;		/* sequences' states, for restates */
	struct tb_bridge br;
	struct tb_buf **bufs;		/* by BufferID, 65536 */
	uint16_t ids[TBT_MAX_BUFS];
	unsigned nb;
	uint64_t types[5];		/* good frames by type */
	uint64_t losses;		/* tb_bridge_lost_any() calls */
	uint64_t no_buffer;		/* BufferIDs past TBT_MAX_BUFS */
	bool have_hello, have_stats, write_failed, read_failed;
	struct tb_link_hello hello;
	struct tb_link_stats stats;
	uint64_t loss_last;		/* "events lost": last value + 1 */
	size_t time_from;		/* the trace read for its time so far */
	uint64_t time;			/* ... its largest timestamp */
};

struct tbt_stream_result {
	uint64_t frames;
	uint64_t packets;
	uint64_t lost;			/* anything lost, any cause */
	bool tail_lost;
	int check;
};

/* The central buffer of @bid, made on first use (at most TBT_MAX_BUFS). */
static bool tbt_stream_buf(struct tbt_stream *s, uint16_t bid)
{
	uint64_t size = s->o->buf_size ? s->o->buf_size : TBT_STREAM_BUF;

	if (s->bufs[bid])
		return true;
	if (s->nb == TBT_MAX_BUFS)
		return false;
	s->bufs[bid] = tb_buf_create((size_t)size, TB_BUF_RING_BUFFER);
	if (!s->bufs[bid]) {
		say(s->f, "buffer    BufferID %u: no memory for %llu bytes\n",
		    bid, ull(size));
		return false;
	}
	s->ids[s->nb++] = bid;
	if (bid + 1u > s->br.nbufs)
		s->br.nbufs = bid + 1u;
	return true;
}

/*
 * Everything a buffer can give now, into the trace, under its index in
 * the TraceStats packet (its place in ids[]), each packet through the
 * restate.
 */
static void tbt_stream_flush(struct tbt_stream *s, uint16_t bid)
{
	struct tb_buf *b = s->bufs[bid];
	struct tb_buf_packet pkt;
	unsigned k;

	if (!b)
		return;
	for (k = 0; k < s->nb && s->ids[k] != bid; k++)
		;
	s->out->buffer = k;
	tb_buf_begin_read(b);
	while (!s->out->error && tb_buf_read_packet(b, &pkt))
		tbt_rs_packet(s->rs, s->out, &pkt);
	if (s->out->error)
		s->write_failed = true;
}

/* The largest timestamp of the trace so far (0: none, or not in memory). */
static uint64_t tbt_stream_time(struct tbt_stream *s)
{
	const struct tbt_mem *m = (const struct tbt_mem *)s->out->ctx;

	if (s->out->write == tbt_mem_write)
		s->time = tbt_time_after(m->p, m->len, &s->time_from,
					 s->time);
	return s->time;
}

/*
 * The ring's "events lost" counter track, as a service samples it: the
 * writes the last STATS frame says its writers could not make, at the
 * trace's latest time, when it changed.
 */
static void tbt_stream_loss(struct tbt_stream *s)
{
	const struct tb_link_stats *ls = &s->stats;
	struct tb_buf_ident ident;
	uint64_t ts = tbt_stream_time(s);

	if (!s->have_stats || !ts)
		return;		/* a counter value needs a time */
	ident.uid = s->o->uid;
	ident.pid = s->o->pid;
	tb_trace_loss_sample(s->out, ident, ts, s->o->producer, s->o->pid,
			     (uint64_t)ls->wstat[TB_WS_FULL] +
			     ls->wstat[TB_WS_NO_CHUNK] +
			     ls->wstat[TB_WS_DROPPED_FRAGS], &s->loss_last);
}

static void tbt_stream_frame(void *ctx, const struct tb_link_frame *fr)
{
	struct tbt_stream *s = (struct tbt_stream *)ctx;

	if (fr->type < 5)
		s->types[fr->type]++;
	if (fr->gap || fr->restart) {
		/* frames missing, whose nobody knows; or a new boot's
		 * writers, whose ids say nothing of the old ones */
		tb_bridge_lost_any(&s->br);
		s->losses++;
	}
	if (fr->restart)	/* nor do their states: none to restate */
		tbt_rs_restart(s->rs);
	switch (fr->type) {
	case TB_LINK_HELLO:
		if (!s->have_hello || fr->restart)
			say(s->f, "hello     boot %#x: a ring of %u x %u B "
			    "chunks, ring ABI %u, tbring %u.%u.%u\n",
			    fr->hello.boot, fr->hello.num_chunks,
			    fr->hello.chunk_size, fr->hello.ring_version,
			    fr->hello.lib_version >> 16,
			    fr->hello.lib_version >> 8 & 0xffu,
			    fr->hello.lib_version & 0xffu);
		s->hello = fr->hello;
		s->have_hello = true;
		break;
	case TB_LINK_STATS:
		s->stats = fr->stats;
		s->have_stats = true;
		tbt_stream_loss(s);
		break;
	case TB_LINK_CHUNK:
		if (!fr->view.lost && !tbt_stream_buf(s, fr->view.bid))
			s->no_buffer++;		/* the bridge counts it */
		tb_bridge_view(&s->br, &fr->view);
		tbt_stream_flush(s, fr->view.bid);
		break;
	}
}

static int tbt_stream_begin(struct tbt_stream *s,
			    const struct tbt_stream_opts *o,
			    struct tb_trace_out *out, FILE *f)
{
	struct tb_bridge_config bc;

	memset(s, 0, sizeof(*s));
	s->o = o;
	s->f = f;
	s->out = out;
	s->rx = (struct tb_link_rx *)malloc(sizeof(*s->rx));
	s->rs = (struct tbt_restate *)calloc(1, sizeof(*s->rs));
	s->bufs = (struct tb_buf **)calloc(65536, sizeof(*s->bufs));
	memset(&bc, 0, sizeof(bc));	/* no ring: fed by views */
	bc.producer_id = o->producer;
	bc.ident.pid = o->pid;
	bc.ident.uid = o->uid;
	bc.bufs = s->bufs;
	if (!s->rx || !s->rs || !s->bufs || tb_link_rx_init(s->rx) ||
	    tb_bridge_init(&s->br, &bc)) {
		say(f, "stream    cannot set up (memory, or producer id 0)\n");
		free(s->rx);
		free(s->rs);
		free(s->bufs);
		return -1;
	}
	return 0;
}

static void tbt_stream_feed(struct tbt_stream *s, const void *p, size_t n)
{
	tb_link_rx_feed(s->rx, p, n, tbt_stream_frame, s);
}

/* The link's line of the report; the loss it counts. */
static uint64_t tbt_stream_link(struct tbt_stream *s)
{
	const uint64_t *st = s->rx->stat;

	say(s->f, "link      %llu bytes: %llu frames (%llu hello, %llu chunk, "
	    "%llu stats, %llu end); %llu bytes skipped\n",
	    ull(st[TB_LR_BYTES]), ull(st[TB_LR_FRAMES]), ull(s->types[1]),
	    ull(s->types[2]), ull(s->types[3]), ull(s->types[4]),
	    ull(st[TB_LR_SKIPPED]));
	say(s->f, "link      %s; %llu frames with a bad CRC, %llu malformed; "
	    "%llu frames lost by sequence gap, %llu sent before the first "
	    "one read; %s; %llu restarts\n",
	    st[TB_LR_PARTIAL_START] ? "started in the middle of a frame" :
	    "started at a frame", ull(st[TB_LR_BAD_CRC]),
	    ull(st[TB_LR_MALFORMED]), ull(st[TB_LR_LOST]),
	    ull(st[TB_LR_MISSED_START]),
	    st[TB_LR_TRUNCATED] ? "ended in the middle of a frame" :
	    st[TB_LR_ENDS] ? "ended with END" : "ended without END",
	    ull(st[TB_LR_RESTARTS]));
	return st[TB_LR_SKIPPED] + st[TB_LR_BAD_CRC] + st[TB_LR_MALFORMED] +
	       st[TB_LR_LOST] + st[TB_LR_MISSED_START] +
	       st[TB_LR_TRUNCATED] + !st[TB_LR_ENDS];
}

/* The last STATS frame: what the ring refused its writers. */
static uint64_t tbt_stream_ring(struct tbt_stream *s)
{
	const struct tb_link_stats *ls = &s->stats;
	uint32_t w[TB_WS_MAX] = { 0 }, r[TB_RS_MAX] = { 0 };
	unsigned i;

	if (!s->have_stats) {
		say(s->f, "ring      no STATS frame: the ring's own counters "
		    "are unknown\n");
		return 0;
	}
	for (i = 0; i < TB_WS_MAX && i < ls->nw; i++)
		w[i] = ls->wstat[i];
	for (i = 0; i < TB_RS_MAX && i < ls->nr; i++)
		r[i] = ls->rstat[i];
	say(s->f, "ring      last STATS: write_pos %u, read_pos %u\n",
	    ls->write_pos, ls->read_pos);
	tbt_counters(s->f, "writers", w, TB_WS_MAX, tbt_wstat_name);
	tbt_counters(s->f, "reader", r, TB_RS_MAX, tbt_rstat_name);
	/*
	 * Refused writes carry their own flag on the writer's next chunk.
	 * A scrape is no loss on a live target: its writer moves the rest
	 * of the chunk on (what it could not move is dropped-frags).
	 */
	return (uint64_t)w[TB_WS_FULL] + w[TB_WS_NO_CHUNK] +
	       w[TB_WS_DROPPED_FRAGS] + r[TB_RS_MALFORMED] +
	       r[TB_RS_UNKNOWN_FORMAT];
}

/*
 * The end of the trace, as convert and a service end theirs (tbtrace.h):
 * the ring's "events lost" track if its last value changed, what the
 * ring's last STATS counted, on the service's track at the trace's last
 * timestamp (an END frame is the target's goodbye), and the TraceStats
 * packet of the buffers.
 */
static void tbt_stream_tail(struct tbt_stream *s,
			    const struct tb_buf_stats *const *bs,
			    uint64_t refused)
{
	const struct tb_link_stats *ls = &s->stats;
	struct tb_trace_ring_record rec;
	struct tb_trace_stats_extra x;
	struct tb_buf_ident ident;
	uint64_t ts;

	tbt_stream_loss(s);
	ts = tbt_stream_time(s);	/* the trace so far */
	ident.uid = s->o->uid;
	ident.pid = s->o->pid;
	memset(&rec, 0, sizeof(rec));
	rec.producer = s->o->producer;
	rec.pid = s->o->pid;
	rec.end = s->rx->stat[TB_LR_ENDS] ? TB_TRACE_END_CLEAN :
					   TB_TRACE_END_LIVE;
	if (s->have_stats) {
		rec.held = 0;	/* the target's own business */
		rec.full = ls->wstat[TB_WS_FULL];
		rec.no_chunk = ls->wstat[TB_WS_NO_CHUNK];
		rec.dropped_frags = ls->wstat[TB_WS_DROPPED_FRAGS];
		rec.holes = ls->rstat[TB_RS_HOLES];
		rec.scrapes = ls->rstat[TB_RS_SCRAPES];
		rec.malformed = ls->rstat[TB_RS_MALFORMED];
	}
	if (ts) {	/* an instant needs a time: none if no packet has */
		tb_trace_service_track(s->out, ident);
		tb_trace_ring_record(s->out, ident, ts, &rec);
	}
	memset(&x, 0, sizeof(x));
	x.chunks_discarded = refused;
	tb_trace_write_stats(s->out, ident, ts, bs, s->nb, &x);
	if (s->out->error)
		s->write_failed = true;
}

/*
 * The stream ended: the last packets out, every count reported.  Returns
 * the exit status: 0 nothing lost, 1 losses (reported), 2 not a stream.
 */
static int tbt_stream_end(struct tbt_stream *s, struct tbt_stream_result *res)
{
	struct tb_bridge *br = &s->br;
	const struct tb_buf_stats *bs[TBT_MAX_BUFS];
	uint64_t lost = 0, unread, rejected;
	int status = 0;
	unsigned k;

	memset(res, 0, sizeof(*res));
	tb_link_rx_finish(s->rx);
	res->frames = s->rx->stat[TB_LR_FRAMES];
	lost += tbt_stream_link(s);
	lost += tbt_stream_ring(s);
	rejected = br->stat[TB_BS_REJECTED] + br->stat[TB_BS_BAD_TARGET] +
		   br->stat[TB_BS_TOO_MANY_KEYS] + br->stat[TB_BS_KEYS_NOMEM];
	say(s->f, "bridge    producer %u (pid %d, uid %u): %llu chunks into %u "
	    "central buffer%s; refused %llu, unknown BufferID %llu (%llu "
	    "past the first %u); %llu chunks the target's reader could not "
	    "use; %llu chunks carried a loss flag (%llu losses of the link "
	    "charged to every sequence)\n", s->o->producer, s->o->pid,
	    s->o->uid, ull(br->stat[TB_BS_CHUNKS]), s->nb,
	    s->nb == 1 ? "" : "s", ull(br->stat[TB_BS_REJECTED]),
	    ull(br->stat[TB_BS_BAD_TARGET]), ull(s->no_buffer), TBT_MAX_BUFS,
	    ull(br->stat[TB_BS_LOST]), ull(br->stat[TB_BS_LOSS_FLAGS]),
	    ull(s->losses));
	lost += rejected + br->stat[TB_BS_LOST] + br->stat[TB_BS_LOSS_FLAGS];
	res->tail_lost = rejected || s->rx->stat[TB_LR_TRUNCATED] ||
			 !s->rx->stat[TB_LR_ENDS];
	for (k = 0; k < s->nb; k++) {
		struct tb_buf *b = s->bufs[s->ids[k]];
		const struct tb_buf_stats *st;

		tbt_stream_flush(s, s->ids[k]);
		bs[k] = st = tb_buf_stats(b);
		unread = st->bytes_written - st->bytes_read;
		say(s->f, "buffer    BufferID %u, %llu B: %llu chunks; %llu "
		    "bytes never completed (a packet's continuation was "
		    "lost), %llu ABI violations, %llu chunks overwritten, "
		    "%llu discarded\n", s->ids[k], ull(st->buffer_size),
		    ull(st->chunks_written), ull(unread),
		    ull(st->abi_violations), ull(st->chunks_overwritten),
		    ull(st->chunks_discarded));
		lost += (unread != 0) + st->abi_violations +
			st->chunks_discarded + st->chunks_overwritten;
		res->tail_lost |= unread || st->chunks_overwritten;
	}
	tbt_rs_finish(s->rs, s->out);
	say(s->f, "restate   %llu restates of a sequence's state after a loss; "
	    "%llu packets dropped that named state the link lost (their "
	    "loss flagged)\n", ull(s->rs->restates), ull(s->rs->dropped));
	lost += s->rs->dropped;
	if (res->frames)
		tbt_stream_tail(s, bs, rejected);
	if (s->write_failed || s->read_failed) {
		say(s->f, "trace     %s failed\n", s->read_failed ?
		    "reading the stream" : "writing the trace");
		status = 2;
	}
	say(s->f, "trace     %llu packets, %llu bytes; %llu carry "
	    "previous_packet_dropped, %llu invalid ones replaced\n",
	    ull(s->out->packets), ull(s->out->bytes),
	    ull(s->out->lossy_packets), ull(s->out->invalid_packets));
	lost += s->out->lossy_packets + s->out->invalid_packets;
	res->packets = s->out->packets;
	res->lost = lost;
	if (!res->frames) {
		say(s->f, "stream    not a tblink stream: no frame in it\n");
		status = 2;
	}
	tb_bridge_destroy(br);
	for (k = 0; k < s->nb; k++)
		tb_buf_destroy(s->bufs[s->ids[k]]);
	tbt_rs_free(s->rs);
	free(s->rs);
	free(s->bufs);
	free(s->rx);
	if (status)
		return status;
	say(s->f, "lost      %s\n", lost ? "yes: see the lines above" :
	    "nothing: every frame arrived and every packet is in the trace");
	return lost ? 1 : 0;
}

/* A whole stream in memory (tests, the fuzzer): the exit status. */
static int tbt_stream_image(const uint8_t *p, size_t n,
			    const struct tbt_stream_opts *o,
			    struct tb_trace_out *out, FILE *f,
			    struct tbt_stream_result *res)
	__attribute__((unused));

static int tbt_stream_image(const uint8_t *p, size_t n,
			    const struct tbt_stream_opts *o,
			    struct tb_trace_out *out, FILE *f,
			    struct tbt_stream_result *res)
{
	struct tbt_stream s;

	memset(res, 0, sizeof(*res));
	if (tbt_stream_begin(&s, o, out, f))
		return 2;
	tbt_stream_feed(&s, p, n);
	return tbt_stream_end(&s, res);
}

/* The checker over what came out; folds its verdict into @st. */
static int tbt_stream_check(const struct tbt_mem *m, int st,
			    const struct tbt_stream_opts *o,
			    struct tbt_stream_result *res, FILE *f)
{
	struct tb_check c;
	int ret;

	if (st == 2 || tb_check_init(&c, NULL, NULL, o->budget))
		return st;
	c.tail_lost = res->tail_lost;
	ret = tb_check_trace(&c, m->p, m->len);
	tbt_stat_ui(f, &c);
	res->check = tbt_verdict(f, &c, ret);
	tb_check_destroy(&c);
	return res->check && st == 0 ? 1 : st;
}

/* Reads @in to its end (a pipe: as the bytes come) into the stream. */
static int tbt_stream_read(struct tbt_stream *s, FILE *in, const char *name)
{
	static uint8_t buf[1 << 16];
	size_t n;

	for (;;) {
		n = fread(buf, 1, sizeof(buf), in);
		if (n)
			tbt_stream_feed(s, buf, n);
		if (n < sizeof(buf)) {
			if (ferror(in)) {
				fprintf(stderr, "tbtrace: %s: %s\n", name,
					strerror(errno));
				return -1;
			}
			if (feof(in))
				return 0;
		}
	}
}

static void tbt_stream_usage(void)
{
	fprintf(stderr, "usage: tbtrace stream [-P PRODUCER] [-p PID] "
		"[-u UID] [-b SIZE] [-m BYTES] [-q] IN|- OUT.pftrace\n");
}

static int tbt_stream_opt(struct tbt_stream_opts *o, int opt,
			  const char *arg, int *quiet)
{
	uint64_t v;

	if (opt == 'q') {
		*quiet = 1;
		return 0;
	}
	if (tbt_size(arg, &v))
		v = UINT64_MAX;
	switch (opt) {
	case 'P':
		if (v < 1 || v > 65535)
			break;
		o->producer = (uint16_t)v;
		return 0;
	case 'p':
		if (v > INT32_MAX)
			break;
		o->pid = (int32_t)v;
		return 0;
	case 'u':
		if (v > UINT32_MAX)
			break;
		o->uid = (uint32_t)v;
		return 0;
	case 'b':
		if (v < 4096 || v > TB_BUF_MAX_SIZE)
			break;
		o->buf_size = v;
		return 0;
	case 'm':
		if (!v || v > SIZE_MAX)
			break;
		o->budget = (size_t)v;
		return 0;
	}
	fprintf(stderr, "tbtrace stream: -%c: bad value\n", opt);
	return -1;
}

static int tbt_stream_main(int argc, char **argv)
{
	struct tbt_stream_opts o;
	struct tbt_stream_result res;
	struct tb_trace_out out;
	struct tbt_stream s;
	struct tbt_mem m;
	FILE *in, *file;
	int opt, st, quiet = 0;
	const char *name;

	memset(&o, 0, sizeof(o));
	o.producer = 1;
	while ((opt = getopt(argc, argv, "P:p:u:b:m:q")) != -1)
		if (opt == '?' || tbt_stream_opt(&o, opt, optarg, &quiet))
			return 2;
	if (optind + 2 != argc) {
		tbt_stream_usage();
		return 2;
	}
	name = argv[optind];
	in = strcmp(name, "-") ? fopen(name, "rb") : stdin;
	if (!in) {
		fprintf(stderr, "tbtrace: %s: %s\n", name, strerror(errno));
		return 2;
	}
	file = fopen(argv[optind + 1], "wb");
	if (!file) {
		fprintf(stderr, "tbtrace: %s: %s\n", argv[optind + 1],
			strerror(errno));
		if (in != stdin)
			fclose(in);
		return 2;
	}
	memset(&m, 0, sizeof(m));
	memset(&out, 0, sizeof(out));
	m.file = file;
	out.write = tbt_mem_write;
	out.ctx = &m;
	st = 2;
	if (!tbt_stream_begin(&s, &o, &out, quiet ? NULL : stdout)) {
		if (tbt_stream_read(&s, in, name))
			s.read_failed = true;	/* reported, status 2 */
		st = tbt_stream_end(&s, &res);
		st = tbt_stream_check(&m, st, &o, &res, quiet ? NULL : stdout);
	}
	if (in != stdin)
		fclose(in);
	if (fclose(file) && st != 2) {
		fprintf(stderr, "tbtrace: %s: %s\n", argv[optind + 1],
			strerror(errno));
		st = 2;
	}
	if (st == 2)
		unlink(argv[optind + 1]);
	free(m.p);
	return st;
}
