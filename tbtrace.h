/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Copyright (c) 2026, tbring contributors.  BSD-2-Clause: see COPYING, or
 * https://opensource.org/license/bsd-2-clause for the text.
 *
 * tbtrace.h - the Perfetto trace format: central buffers out as a trace.
 *
 * tb_trace_write() reads a central buffer and writes its packets as a
 * Perfetto trace: each TracePacket framed as field 1 of Trace, followed by
 * the trusted fields the service appends (trusted_uid 3,
 * trusted_packet_sequence_id 10, trusted_pid 79 and, when there was loss,
 * previous_packet_dropped 42 carrying the loss bits).  As in Perfetto, a
 * packet that is not valid protobuf or that sets a field reserved to the
 * service is dropped and counted (a packet with only the trusted fields
 * and the loss takes its place), so a producer can neither forge the
 * trusted fields nor swallow them into an open field at its end.
 *
 * Optional: only what writes Perfetto traces needs it.  Output goes
 * through a callback (a file, a socket, memory): one piece per call, or
 * a whole read of a buffer per vectored call (writev), its bigger
 * packets by reference.  One thread.
 */
#ifndef TBTRACE_H
#define TBTRACE_H
#define TBTRACE_H_VERSION 200	/* tbbase.h: TBRING_VERSION */

#include "tbtracefmt.h"
#include "tbuffer.h"

/* Headers of one release only: a mixed copy does not compile. */
#if TBTRACEFMT_H_VERSION != TBTRACE_H_VERSION
#error "tbtrace.h needs the tbtracefmt.h of its own release"
#endif
#if TBUFFER_H_VERSION != TBTRACE_H_VERSION
#error "tbtrace.h needs the tbuffer.h of its own release"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * The trace writer.
 *
 * Two kinds of output.  @write takes the trace one piece at a time (a
 * packet's framing, each of its slices, its trusted fields): simple, but
 * a call per piece.  @writev, when set, is used instead: the writer
 * gathers a whole batch as a vector of pieces and hands it over in one
 * call, the buffer's packet bytes by reference (no copy) when a slice is
 * at least TB_TRACE_COPY_MIN bytes, and everything smaller (framing,
 * trusted fields, small packets) copied once into the output's stage,
 * where consecutive pieces form one element.  For small packets one copy
 * into the stage costs less than a vector element per piece; a POSIX
 * writev(2) adapter is a loop over the elements.
 *
 * @writev returns the bytes it took, from the start of the vector: all of
 * them, fewer (a short write: it is called again with the rest), 0 (an
 * interruption, EINTR: called again; TB_TRACE_RETRIES in a row without
 * progress are a failure) or a negative value (a failure).  Either way
 * the first failure is latched in @error and nothing more is handed out.
 * Every tb_trace_* call hands out all it gathered before it returns, so
 * the output may be closed (or fsync'ed) between calls.  The stage and
 * the vector live in the struct (about 33 KiB with the defaults below;
 * define TB_TRACE_STAGE and TB_TRACE_IOV_MAX smaller where that is too
 * much: a smaller stage means more calls).
 */
/*
 * A write callback returns 0 when it took all @len bytes, anything else
 * (a negative value, say) when it failed; whatever it returned, the
 * writer latches TB_EIO in @error and writes nothing more.
 */
typedef int (*tb_trace_write_fn)(void *ctx, const void *data, size_t len);

/* One piece of a vectored write (the layout of a POSIX struct iovec). */
struct tb_trace_iov {
	const void *base;
	size_t len;
};

typedef long (*tb_trace_writev_fn)(void *ctx, const struct tb_trace_iov *iov,
				   unsigned n);

#ifndef TB_TRACE_IOV_MAX
#define TB_TRACE_IOV_MAX	64u	/* vector elements per call */
#endif
#ifndef TB_TRACE_STAGE
#define TB_TRACE_STAGE		32768u	/* bytes staged per call, at most */
#endif
#ifndef TB_TRACE_COPY_MIN
#define TB_TRACE_COPY_MIN	256u	/* slices this big go by reference */
#endif
#define TB_TRACE_RETRIES	16u	/* calls in a row without progress */
#if TB_TRACE_COPY_MIN > TB_TRACE_STAGE / 2
#error "TB_TRACE_COPY_MIN must be at most half of TB_TRACE_STAGE"
#endif

/*
 * The sequences a trace holds, for its TraceStats (tb_trace_write_stats()):
 * Perfetto's importer counts a sequence's loss as data loss only when
 * TraceStats.writer_stats lists it.  The table lists up to three
 * quarters of TB_TRACE_SEQS (a power of two) sequences; the loss of any
 * sequence past that is still counted, per buffer (see
 * tb_trace_write_stats()).  Loss and invalid packets are counted apart
 * for the first TB_TRACE_BUFS buffer indices, the last one taking every
 * index above it.
 */
#ifndef TB_TRACE_SEQS
#define TB_TRACE_SEQS		1024u
#endif
#if (TB_TRACE_SEQS & (TB_TRACE_SEQS - 1)) || TB_TRACE_SEQS < 4
#error "TB_TRACE_SEQS must be a power of two, at least 4"
#endif
#define TB_TRACE_SEQS_LISTED	(TB_TRACE_SEQS / 4 * 3)
#define TB_TRACE_BUFS		16u

/* A sequence the trace holds: its id and the buffer it came from. */
struct tb_trace_seq {
	uint32_t seq_id;		/* 0: a free slot */
	uint32_t buffer;
};

struct tb_trace_out {
	tb_trace_write_fn write;	/* 0, or nonzero: it failed */
	void *ctx;
	uint64_t packets;
	uint64_t bytes;
	uint64_t lossy_packets;		/* packets that carried loss bits */
	uint64_t invalid_packets;	/* replaced: not valid TracePackets */
	int error;			/* the first failed write, latched */
	tb_trace_writev_fn writev;	/* optional: used instead of @write */
	uint64_t writev_calls;		/* ... and how often it was called */
	/* the writer's own: the batch being gathered for @writev */
	unsigned niov;
	size_t nstage;
	int stage_open;			/* the last element ends the stage */
	struct tb_trace_iov iov[TB_TRACE_IOV_MAX];
	uint8_t stage[TB_TRACE_STAGE];
	/* the trusted fields of the last packet's sequence, encoded */
	uint64_t tail_key;		/* producer, writer, uid of the tail */
	int32_t tail_pid;
	uint8_t tail_len;
	uint8_t tail[3 * (2 + TB_PB_VARINT_MAX)];
	/*
	 * What the TraceStats packet says of the packets written: the
	 * buffer index they come from (tb_trace_write_buffer()), the
	 * sequences they were on, and per buffer index the losses the
	 * importer would not count from the packets themselves and the
	 * packets replaced as invalid.
	 */
	unsigned buffer;		/* index of the buffer being written */
	uint8_t tail_first;		/* the tail's sequence: no packet yet */
	uint8_t tail_listed;		/* ... is in seqs[] */
	uint32_t nseqs;			/* sequences in seqs[] */
	uint64_t unlisted_seqs;		/* sequences seqs[] had no room for */
	uint64_t uncounted_loss[TB_TRACE_BUFS];
	uint64_t invalid[TB_TRACE_BUFS];
	struct tb_trace_seq seqs[TB_TRACE_SEQS];
};

/*
 * The trusted_packet_sequence_id of {producer, writer} (writer nonzero, as
 * the central buffer requires): unique, and never 0 or 1, which Perfetto
 * keeps for its service's own packets.  Producer 0, which the bridge
 * refuses but the central buffer accepts, takes the ids no valid pair
 * uses, {writer, 0}.
 */
static inline uint32_t tb_trace_seq_id(uint16_t producer, uint16_t writer)
{
	return producer ? (uint32_t)producer << 16 | writer :
			  (uint32_t)writer << 16;
}

/* Hands the gathered vector to @writev: short writes resumed, retried. */
static inline void tb__trace_flush(struct tb_trace_out *o)
{
	struct tb_trace_iov *v = o->iov;
	unsigned n = o->niov, idle = 0;

	o->niov = 0;
	o->nstage = 0;
	o->stage_open = 0;
	while (n && !o->error) {
		long r = o->writev(o->ctx, v, n);

		o->writev_calls++;
		if (r < 0 || (!r && ++idle >= TB_TRACE_RETRIES)) {
			o->error = TB_EIO;
			return;
		}
		if (r)
			idle = 0;
		/* a short write: skip what was taken, resume mid-element */
		while (n && (size_t)r >= v->len) {
			r -= (long)v->len;
			v++;
			n--;
		}
		if (n && r) {	/* ours: resumed in place */
			v->base = (const uint8_t *)v->base + r;
			v->len -= (size_t)r;
		}
	}
}

/* Room for one more element: the batch is handed out first if full. */
static inline void tb__trace_room(struct tb_trace_out *o, size_t n)
{
	if (o->niov == TB_TRACE_IOV_MAX || o->nstage + n > TB_TRACE_STAGE)
		tb__trace_flush(o);
}

/* @n bytes at @p copied into the stage, joined to the stage's last run. */
static inline void tb__trace_stage(struct tb_trace_out *o, const void *p,
				   size_t n)
{
	tb__trace_room(o, n);
	TB_MEMCPY(o->stage + o->nstage, p, n);
	if (o->stage_open) {
		o->iov[o->niov - 1].len += n;
	} else {
		o->iov[o->niov].base = o->stage + o->nstage;
		o->iov[o->niov++].len = n;
		o->stage_open = 1;
	}
	o->nstage += n;
}

/* @n bytes at @p by reference: they must stay until the next flush. */
static inline void tb__trace_ref(struct tb_trace_out *o, const void *p,
				 size_t n)
{
	tb__trace_room(o, 0);
	o->iov[o->niov].base = p;
	o->iov[o->niov++].len = n;
	o->stage_open = 0;
}

/*
 * Output of @n bytes at @p, which the caller may reuse once this returns
 * (copied into the stage; a piece larger than the stage goes out now).
 */
static inline void tb__trace_put(struct tb_trace_out *o, const void *p,
				  size_t n)
{
	o->bytes += n;
	if (o->error || !n)
		return;
	if (!o->writev) {
		if (o->write(o->ctx, p, n))
			o->error = TB_EIO;
		return;
	}
	if (n <= TB_TRACE_STAGE) {
		tb__trace_stage(o, p, n);
		return;
	}
	tb__trace_ref(o, p, n);
	tb__trace_flush(o);
}

/*
 * Output of @n bytes of a central buffer's packet, which stay where they
 * are until the caller's next write to that buffer: by reference when
 * they are many, else copied.
 */
static inline void tb__trace_put_slice(struct tb_trace_out *o, const void *p,
				       size_t n)
{
	o->bytes += n;
	if (o->error || !n)
		return;
	if (!o->writev) {
		if (o->write(o->ctx, p, n))
			o->error = TB_EIO;
	} else if (n >= TB_TRACE_COPY_MIN || n > TB_TRACE_STAGE) {
		tb__trace_ref(o, p, n);
	} else {
		tb__trace_stage(o, p, n);
	}
}

/* Hands out what was gathered; 0, or TB_EIO once a write failed. */
static inline int tb__trace_done(struct tb_trace_out *o)
{
	if (o->writev && o->niov)
		tb__trace_flush(o);
	return o->error;
}

/* Reads a packet's bytes across its slices, for validation. */
struct tb__trace_pb_cursor {
	const struct tb_buf_slice *s;
	unsigned n;
	unsigned i;
	size_t off;
};

/* True when no byte is left (empty slices skipped). */
static inline bool tb__trace_pb_at_end(struct tb__trace_pb_cursor *c)
{
	while (c->i < c->n && c->off == c->s[c->i].size) {
		c->i++;
		c->off = 0;
	}
	return c->i == c->n;
}

static inline bool tb__trace_pb_skip(struct tb__trace_pb_cursor *c, uint64_t n)
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

/* A varint at the cursor, by tbpb.h's decoder (gathered across slices). */
static inline bool tb__trace_pb_get_varint(struct tb__trace_pb_cursor *c,
					   uint64_t *v)
{
	struct tb__trace_pb_cursor p = *c;
	uint8_t b[TB_PB_VARINT_MAX];
	unsigned n = 0;

	if (tb__trace_pb_at_end(c))
		return false;
	n = tb_pb_varint_get(c->s[c->i].data + c->off,
			     c->s[c->i].size - c->off, v);
	if (n) {			/* within one slice: the common case */
		c->off += n;
		return true;
	}
	while (n < sizeof(b) && !tb__trace_pb_at_end(&p))
		b[n++] = p.s[p.i].data[p.off++];
	n = tb_pb_varint_get(b, n, v);
	return n && tb__trace_pb_skip(c, n);
}

/*
 * Top-level TracePacket fields only the service may write: the trusted
 * fields and these (Perfetto reserves the same).
 */
#define TB__TRACE_F_CONFIG		33	/* trace_config */
#define TB__TRACE_F_STATS		35	/* trace_stats */
#define TB__TRACE_F_SYNC_MARKER		36	/* synchronization_marker */
#define TB__TRACE_F_COMPRESSED		50	/* compressed_packets */
#define TB__TRACE_F_MACHINE_ID		98	/* machine_id */
#define TB__TRACE_RESERVED_LO						\
	(1ull << TB_PB_TRUSTED_UID | 1ull << TB_PB_TRUSTED_SEQ_ID |	\
	 1ull << TB__TRACE_F_CONFIG | 1ull << TB__TRACE_F_STATS |	\
	 1ull << TB__TRACE_F_SYNC_MARKER | 1ull << TB__TRACE_F_COMPRESSED)
#define TB__TRACE_RESERVED_HI						\
	(1ull << (TB_PB_TRUSTED_PID - 64) |				\
	 1ull << (TB__TRACE_F_MACHINE_ID - 64))

static inline bool tb__trace_pb_reserved(uint64_t field)
{
	/* a bit per field number below 128: one test, no branch tree */
	if (field < 64)
		return TB__TRACE_RESERVED_LO >> field & 1;
	return field < 128 && (TB__TRACE_RESERVED_HI >> (field - 64) & 1);
}

/* A varint at *@p before @end, by tbpb.h's decoder; *@p moves past it. */
static inline bool tb__trace_flat_varint(const uint8_t **p,
					 const uint8_t *end, uint64_t *v)
{
	unsigned n = tb_pb_varint_get(*p, (size_t)(end - *p), v);

	*p += n;
	return n != 0;
}

/*
 * Past a varint at *@p before @end (at most TB_PB_VARINT_MAX bytes), its
 * value unread: tb_pb_varint_get()'s bounds, eight bytes at a time.
 */
static inline bool tb__trace_flat_skip_varint(const uint8_t **p,
					      const uint8_t *end)
{
	const uint8_t *q = *p, *last;

#if defined(__GNUC__) && defined(__BYTE_ORDER__) && \
	__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (end - q >= 8) {	/* the first byte without 0x80: 8 at once */
		uint64_t w, stop;

		TB_MEMCPY(&w, q, 8);
		stop = ~w & 0x8080808080808080ull;
		if (stop) {
			*p = q + __builtin_ctzll(stop) / 8 + 1;
			return true;
		}
		q += 8;
	}
#endif
	last = (size_t)(end - *p) > TB_PB_VARINT_MAX ? *p + TB_PB_VARINT_MAX :
						        end;
	while (q < last && *q & 0x80)
		q++;
	if (q == last)
		return false;	/* cut short, or longer than 10 bytes */
	*p = q + 1;
	return true;
}

/*
 * One-byte keys (fields 1 to 15) a producer may use, a bit per key: field
 * nonzero, not reserved (3, 10), wire type varint, fixed64, length or
 * fixed32.
 */
#define TB__TRACE_WT_OK							\
	(1u << TB_PB_VARINT | 1u << TB_PB_FIXED64 | 1u << TB_PB_LEN |	\
	 1u << TB_PB_FIXED32)
#define TB__TRACE_KEY1_OK(f)	((uint64_t)TB__TRACE_WT_OK << ((f) * 8 % 64))
#define TB__TRACE_KEYS_LO						\
	(TB__TRACE_KEY1_OK(1) | TB__TRACE_KEY1_OK(2) | TB__TRACE_KEY1_OK(4) | \
	 TB__TRACE_KEY1_OK(5) | TB__TRACE_KEY1_OK(6) | TB__TRACE_KEY1_OK(7))
#define TB__TRACE_KEYS_HI						\
	(TB__TRACE_KEY1_OK(8) | TB__TRACE_KEY1_OK(9) |			\
	 TB__TRACE_KEY1_OK(11) | TB__TRACE_KEY1_OK(12) |		\
	 TB__TRACE_KEY1_OK(13) | TB__TRACE_KEY1_OK(14) |		\
	 TB__TRACE_KEY1_OK(15))

/*
 * What to do after one-byte key @k (below 0x80): 0 when a producer may not
 * write it, else its wire type plus one (one load, and the switch on it,
 * per field).
 */
#define TB__TRACE_ACT(k)						\
	((((k) < 64 ? TB__TRACE_KEYS_LO >> (k) :			\
		      TB__TRACE_KEYS_HI >> ((k) - 64)) & 1) ? ((k) & 7) + 1 : 0)
#define TB__TRACE_ACT8(k)						\
	TB__TRACE_ACT(k), TB__TRACE_ACT((k) + 1), TB__TRACE_ACT((k) + 2), \
	TB__TRACE_ACT((k) + 3), TB__TRACE_ACT((k) + 4),		\
	TB__TRACE_ACT((k) + 5), TB__TRACE_ACT((k) + 6), TB__TRACE_ACT((k) + 7)
#define TB__TRACE_ACT_NONE	0u

static inline unsigned tb__trace_key1_act(unsigned key)
{
	static const uint8_t act[128] = {
		TB__TRACE_ACT8(0), TB__TRACE_ACT8(8), TB__TRACE_ACT8(16),
		TB__TRACE_ACT8(24), TB__TRACE_ACT8(32), TB__TRACE_ACT8(40),
		TB__TRACE_ACT8(48), TB__TRACE_ACT8(56), TB__TRACE_ACT8(64),
		TB__TRACE_ACT8(72), TB__TRACE_ACT8(80), TB__TRACE_ACT8(88),
		TB__TRACE_ACT8(96), TB__TRACE_ACT8(104), TB__TRACE_ACT8(112),
		TB__TRACE_ACT8(120),
	};

	return act[key & 0x7f];
}

/*
 * tb_trace_packet_valid() of @n contiguous bytes: the common case, in line
 * in the loop that stages runs of packets (TB__BUF_HOT, tbuffer.h's).
 */
TB__BUF_HOT bool tb__trace_valid_flat(const uint8_t *p, size_t n)
{
	const uint8_t *end = p + n;
	uint64_t key, len;
	unsigned act;

	while (p < end) {
		if (*p < 0x80) {		/* fields 1 to 15: a table */
			act = tb__trace_key1_act(*p++);
			if (act == TB__TRACE_ACT_NONE)
				return false;
			key = act - 1;		/* its wire type is all we need */
		} else {
			if (!tb__trace_flat_varint(&p, end, &key) ||
			    !tb__pb_key_ok(key) ||
			    tb__trace_pb_reserved(key >> 3))
				return false;
		}
		switch (key & 7) {
		case TB_PB_VARINT:	/* its value unread: to its last byte */
			if (!tb__trace_flat_skip_varint(&p, end))
				return false;
			break;
		case TB_PB_LEN:
			if (p < end && *p < 0x80)	/* a one-byte length */
				len = *p++;
			else if (!tb__trace_flat_varint(&p, end, &len))
				return false;
			if (len > (uint64_t)(end - p))
				return false;
			p += (size_t)len;
			break;
		default:	/* fixed64, fixed32: tb__pb_key_ok() said so */
			if ((size_t)(end - p) <
			    tb__pb_fixed_size((unsigned)(key & 7)))
				return false;
			p += tb__pb_fixed_size((unsigned)(key & 7));
			break;
		}
	}
	return true;
}

/*
 * Perfetto's service drops a packet that is not a valid sequence of
 * top-level fields, or that sets a field only the service may set: a
 * field left open at the end would swallow the trusted fields appended
 * after it.
 */
static inline bool tb_trace_packet_valid(const struct tb_buf_packet *pkt)
{
	struct tb__trace_pb_cursor c = { pkt->slices, pkt->nslices, 0, 0 };
	uint64_t key, len;

	if (pkt->nslices == 1)
		return tb__trace_valid_flat(pkt->slices[0].data,
					    pkt->slices[0].size);
	while (!tb__trace_pb_at_end(&c)) {
		bool ok;

		/* a key cut short, no such field or type, or not theirs */
		if (!tb__trace_pb_get_varint(&c, &key) || !tb__pb_key_ok(key) ||
		    tb__trace_pb_reserved(key >> 3))
			return false;
		if ((key & 7) == TB_PB_VARINT)
			ok = tb__trace_pb_get_varint(&c, &len);
		else if ((key & 7) == TB_PB_LEN)
			ok = tb__trace_pb_get_varint(&c, &len) &&
			     tb__trace_pb_skip(&c, len);
		else				/* fixed64, fixed32 */
			ok = tb__trace_pb_skip(&c,
					tb__pb_fixed_size((unsigned)(key & 7)));
		if (!ok)
			return false;
	}
	return true;			/* ended between two fields */
}

/* The buffer index the packets being written are counted under. */
static inline unsigned tb__trace_bix(const struct tb_trace_out *o)
{
	return o->buffer < TB_TRACE_BUFS ? o->buffer : TB_TRACE_BUFS - 1;
}

/*
 * Sequence @seq, about to get a packet: o->tail_first says whether the
 * trace holds none of it yet, o->tail_listed whether writer_stats lists
 * it (it is added, with the buffer being written, while there is room).
 */
static inline void tb__trace_seq_note(struct tb_trace_out *o, uint32_t seq)
{
	uint32_t h = (seq ^ seq >> 16) * 0x9e3779b1u, i;

	h ^= h >> 15;
	for (i = h & (TB_TRACE_SEQS - 1); o->seqs[i].seq_id;
	     i = (i + 1) & (TB_TRACE_SEQS - 1)) {
		if (o->seqs[i].seq_id == seq) {
			o->tail_first = 0;
			o->tail_listed = 1;
			return;
		}
	}
	/* new: an unlisted one is new each time (its loss counts anyway) */
	o->tail_first = 1;
	o->tail_listed = o->nseqs < TB_TRACE_SEQS_LISTED;
	if (!o->tail_listed) {
		o->unlisted_seqs++;
		return;
	}
	o->seqs[i].seq_id = seq;
	o->seqs[i].buffer = o->buffer;
	o->nseqs++;
}

/*
 * A packet of the tail's sequence goes out with loss bits @loss.  The
 * importer counts a loss flag as data loss (traced_buf_sequence_packet_
 * loss) only on a sequence writer_stats lists, and never on the
 * sequence's first packet in the trace (proto_trace_reader.cc, ParsePacket
 * and ParseTraceStats): those are counted here, for the buffer's
 * trace_writer_packet_loss.
 */
static inline void tb__trace_seq_packet(struct tb_trace_out *o, uint32_t loss)
{
	if (loss && (o->tail_first || !o->tail_listed))
		o->uncounted_loss[tb__trace_bix(o)]++;
	o->tail_first = 0;
}

/*
 * The trusted fields of @pkt's sequence, encoded at @o->tail: kept from
 * the last packet while the sequence and identity stay the same.
 */
static inline size_t tb__trace_tail(struct tb_trace_out *o,
				    const struct tb_buf_packet *pkt)
{
	uint64_t key = (uint64_t)pkt->producer_id << 48 |
		       (uint64_t)pkt->writer_id << 32 | pkt->ident.uid;
	uint32_t seq;
	size_t nt = 0;

	if (key == o->tail_key && pkt->ident.pid == o->tail_pid &&
	    o->tail_len)
		return o->tail_len;
	seq = tb_trace_seq_id(pkt->producer_id, pkt->writer_id);
	tb__trace_seq_note(o, seq);
	nt += tb_pb_uint(o->tail + nt, TB_PB_TRUSTED_UID, pkt->ident.uid);
	nt += tb_pb_uint(o->tail + nt, TB_PB_TRUSTED_SEQ_ID, seq);
	nt += tb_pb_int(o->tail + nt, TB_PB_TRUSTED_PID, pkt->ident.pid);
	o->tail_key = key;
	o->tail_pid = pkt->ident.pid;
	o->tail_len = (uint8_t)nt;
	return nt;
}

/*
 * A valid packet of @size bytes (less than TB_TRACE_COPY_MIN) staged
 * whole for @writev: framing, slices and trusted fields in one run.
 */
static inline void tb__trace_stage_packet(struct tb_trace_out *o,
					  const struct tb_buf_packet *pkt,
					  size_t nt, const uint8_t *lb,
					  size_t nl)
{
	const struct tb_buf_slice *sl = pkt->slices;
	size_t n = pkt->size + nt + nl, nh;
	unsigned i, nsl = pkt->nslices;
	uint8_t *d, *start;

	/* room for the whole tail array: a copy of constant size */
	tb__trace_room(o, 2 * TB_PB_VARINT_MAX + n + sizeof(o->tail));
	start = d = o->stage + o->nstage;
	if (n < 0x80) {			/* the key and a one-byte length */
		d[0] = TB_PB_TRACE_PACKET << 3 | TB_PB_LEN;
		d[1] = (uint8_t)n;
		nh = 2;
	} else {
		nh = tb_pb_len(d, TB_PB_TRACE_PACKET, n);
	}
	d += nh;
	if (nsl == 1) {			/* nearly every packet */
		tb__buf_copy_small(d, sl[0].data, sl[0].size);
		d += sl[0].size;
	} else {
		for (i = 0; i < nsl; i++) {
			tb__buf_copy_small(d, sl[i].data, sl[i].size);
			d += sl[i].size;
		}
	}
	TB_MEMCPY(d, o->tail, sizeof(o->tail));
	if (nl)
		TB_MEMCPY(d + nt, lb, nl);
	n += nh;
	o->bytes += n;
	o->nstage += n;
	if (o->stage_open) {
		o->iov[o->niov - 1].len += n;
	} else {
		o->iov[o->niov].base = start;
		o->iov[o->niov++].len = n;
		o->stage_open = 1;
	}
}

/* Whether @pkt is a valid TracePacket: one slice in line, more here. */
static inline bool tb__trace_valid(const struct tb_buf_packet *pkt)
{
	if (pkt->nslices == 1)
		return tb__trace_valid_flat(pkt->slices[0].data,
					    pkt->slices[0].size);
	return tb_trace_packet_valid(pkt);
}

/*
 * The leading packets of @pkt[0 .. @k) that are the common case, staged
 * for @writev in one loop: one slice, valid, no loss, smaller than
 * TB_TRACE_COPY_MIN, of the first one's sequence and identity (one
 * trusted tail), while the stage has room.  The stage's position and
 * the counts stay in locals, stored once at the end (a byte store would
 * make the compiler reload them for every packet).  Returns how many it
 * took; tb__trace_packet() takes the next one, whatever it is.
 */
#define TB__TRACE_ONE_MAX	(2 * TB_PB_VARINT_MAX + TB_TRACE_COPY_MIN + \
				 sizeof(((struct tb_trace_out *)0)->tail))

static inline unsigned tb__trace_stage_run(struct tb_trace_out *o,
					   const struct tb_buf_packet *pkt,
					   unsigned k)
{
	uint8_t tail[sizeof(o->tail)], *d, *start, *lim;
	uint32_t seq = (uint32_t)pkt[0].producer_id << 16 | pkt[0].writer_id;
	uint64_t id = (uint64_t)pkt[0].ident.uid << 32 |
		      (uint32_t)pkt[0].ident.pid;
	size_t nt;
	unsigned i;

	if (!o->writev || o->error)
		return 0;
	tb__trace_room(o, TB__TRACE_ONE_MAX);	/* an element, a packet */
	nt = tb__trace_tail(o, &pkt[0]);
	TB_MEMCPY(tail, o->tail, sizeof(tail));
	start = d = o->stage + o->nstage;
	lim = o->stage + TB_TRACE_STAGE - TB__TRACE_ONE_MAX;
	for (i = 0; i < k && d <= lim; i++) {
		const struct tb_buf_packet *p = &pkt[i];
		const uint8_t *src = p->slices ? p->slices[0].data : NULL;
		size_t sz = p->size, n = sz + nt;

		if (p->nslices != 1 || sz >= TB_TRACE_COPY_MIN || p->loss ||
		    ((uint32_t)p->producer_id << 16 | p->writer_id) != seq ||
		    ((uint64_t)p->ident.uid << 32 |
		     (uint32_t)p->ident.pid) != id ||
		    !tb__trace_valid_flat(src, sz))
			break;
		if (n < 0x80) {		/* the key and a one-byte length */
			d[0] = TB_PB_TRACE_PACKET << 3 | TB_PB_LEN;
			d[1] = (uint8_t)n;
			d += 2;
		} else {
			d += tb_pb_len(d, TB_PB_TRACE_PACKET, n);
		}
		tb__buf_copy_small(d, src, sz);
		TB_MEMCPY(d + sz, tail, sizeof(tail));
		d += n;
	}
	if (d != start) {
		size_t len = (size_t)(d - start);

		tb__trace_seq_packet(o, 0);
		o->packets += i;
		o->bytes += len;
		o->nstage += len;
		if (o->stage_open) {
			o->iov[o->niov - 1].len += len;
		} else {
			o->iov[o->niov].base = start;
			o->iov[o->niov++].len = len;
			o->stage_open = 1;
		}
	}
	return i;
}

/* tb_trace_write_packet() without handing the batch out. */
static inline void tb__trace_packet(struct tb_trace_out *o,
				    const struct tb_buf_packet *pkt)
{
	uint8_t buf[2 * TB_PB_VARINT_MAX + 3 * (2 + TB_PB_VARINT_MAX) +
		    2 + TB_PB_VARINT_MAX];
	bool valid = tb__trace_valid(pkt);
	uint32_t loss = pkt->loss;
	size_t size = valid ? pkt->size : 0, nt, nh, nl = 0;
	uint8_t lb[2 + TB_PB_VARINT_MAX];
	unsigned i;

	if (!valid) {
		o->invalid_packets++;
		o->invalid[tb__trace_bix(o)]++;
		loss |= TB_BUF_LOSS_PRESENT | TB_BUF_LOSS_CHUNK_CORRUPTED;
	}
	nt = tb__trace_tail(o, pkt);
	tb__trace_seq_packet(o, loss);
	if (loss) {
		nl = tb_pb_uint(lb, TB_PB_PREVIOUS_DROPPED, loss);
		o->lossy_packets++;
	}
	o->packets += valid;	/* a stand-in is counted as invalid */
	if (valid && size < TB_TRACE_COPY_MIN && o->writev && !o->error) {
		tb__trace_stage_packet(o, pkt, nt, lb, nl);
		return;
	}
	nh = tb_pb_len(buf, TB_PB_TRACE_PACKET, size + nt + nl);
	if (!size) {		/* head and tail: one piece */
		TB_MEMCPY(buf + nh, o->tail, nt);
		TB_MEMCPY(buf + nh + nt, lb, nl);
		tb__trace_put(o, buf, nh + nt + nl);
		return;
	}
	tb__trace_put(o, buf, nh);
	for (i = 0; i < pkt->nslices; i++)
		tb__trace_put_slice(o, pkt->slices[i].data,
				    pkt->slices[i].size);
	TB_MEMCPY(buf, o->tail, nt);
	TB_MEMCPY(buf + nt, lb, nl);
	tb__trace_put(o, buf, nt + nl);
}

/*
 * Writes one packet with its trusted fields.  0, or TB_EIO once a write
 * failed.  A packet that is not a valid TracePacket is counted in
 * invalid_packets and replaced by one that holds only the trusted fields
 * and previous_packet_dropped (its loss bits plus CHUNK_CORRUPTED), so
 * the loss stays visible on that sequence.  It counts as a packet of
 * buffer index o->buffer (0 unless tb_trace_write_buffer() set it).
 */
static inline int tb_trace_write_packet(struct tb_trace_out *o,
					const struct tb_buf_packet *pkt)
{
	tb__trace_packet(o, pkt);
	return tb__trace_done(o);
}

/* tb_trace_write_buffer() of the buffer index set in o->buffer. */
#ifndef TB__TRACE_BATCH
#define TB__TRACE_BATCH	32u
#endif
static inline long tb__trace_write(struct tb_trace_out *o, struct tb_buf *b)
{
	struct tb_buf_packet pkt[TB__TRACE_BATCH];
	struct tb_buf_slice sl[TB__TRACE_BATCH];
	unsigned k, i;
	long n = 0;

	tb_buf_begin_read(b);
	while (!o->error &&
	       (k = tb_buf_read_packets(b, pkt, sl, TB__TRACE_BATCH))) {
		for (i = 0; i < k && !o->error;) {
			unsigned r = tb__trace_stage_run(o, pkt + i, k - i);

			if (!r)
				tb__trace_packet(o, &pkt[i++]);
			i += r;
		}
		n += (long)i;
	}
	return tb__trace_done(o) ? o->error : n;
}

/*
 * Reads everything central buffer @b can give now (destructively) into
 * the trace.  Returns the packets written, or TB_EIO once a write
 * failed.  With @writev the whole read is handed out in as few calls as
 * the vector allows; the buffer's slices stay valid meanwhile (nothing
 * writes to it).  The buffer is read TB__TRACE_BATCH packets at a time
 * (tb_buf_read_packets()): a write that fails loses the rest of its batch
 * with it (nothing is written after a failure anyway).
 *
 * @index is the buffer's place in the @stats of tb_trace_write_stats(),
 * which ends the trace: the sequences of its packets are listed there
 * under that buffer, as Perfetto's service lists each writer under its
 * target buffer.  A trace of several buffers writes each through this.
 */
static inline long tb_trace_write_buffer(struct tb_trace_out *o,
					 struct tb_buf *b, unsigned index)
{
	o->buffer = index;
	return tb__trace_write(o, b);
}

/* tb_trace_write_buffer() for a trace of one central buffer (index 0). */
static inline long tb_trace_write(struct tb_trace_out *o, struct tb_buf *b)
{
	return tb_trace_write_buffer(o, b, 0);
}

/* ------------------------------------------------------------------------
 * The service's own packets: loss made visible.
 *
 * Besides the producers' packets, a service writes packets of its own on
 * sequence TB_TRACE_SERVICE_SEQ (a trusted_packet_sequence_id that
 * tb_trace_seq_id() never gives a {producer, writer}), stamped with the
 * service's own trusted uid and pid:
 *
 *  - a counter track per ring, "events lost" (uuid TB_TRACE_LOSS_UUID |
 *    producer id), whose value is what the ring's writers could not write
 *    so far (writes refused: ring full, no chunk, fragments dropped in a
 *    relocation), sampled when the service saw it change;
 *  - an instant on the service's track (TB_TRACE_SERVICE_UUID) when a
 *    producer's ring is let go, or at the end for a ring still served:
 *    "producer N died" / "ended" / "at the end", whose debug annotations
 *    carry what the ring counted (TB_TRACE_ARG_*: the producer id, how it
 *    ended, the chunks its writers still held and which writers held
 *    them, the writes refused by cause, the reader's holes, scrapes and
 *    malformed chunks).  Perfetto
 *    has no field for a ring's counters: they are the instant's
 *    arguments, shown in the UI, and read by tools/tbcheck.h;
 *  - last of all, a TraceStats packet (trace_stats, Perfetto's field
 *    numbers): one BufferStats per central buffer, a WriterStats per
 *    sequence, the chunks refused before any buffer
 *    (TraceStats.chunks_discarded), the invalid packets replaced, the
 *    producers connected and seen; every loss the trace holds is in a
 *    statistic Perfetto's UI shows as data loss
 *    (tb_trace_write_stats()).
 *
 * Timestamps are the caller's, on the trace clock (CLOCK_BOOTTIME, as the
 * event layer's default).  Each writer returns 0, or TB_EIO once a write
 * failed (latched in o->error).
 */
#define TB_TRACE_SERVICE_SEQ	2u
#define TB_TRACE_SERVICE_UUID	0x7462737663000000ull	/* "tbsvc" */
#define TB_TRACE_LOSS_UUID	0x74626c6f73730000ull	/* "tbloss", | id */
#define TB_PB_TRACE_STATS	35

enum tb_trace_end {
	TB_TRACE_END_LIVE,	/* still served when the trace ended */
	TB_TRACE_END_CLEAN,	/* said goodbye, then left */
	TB_TRACE_END_DIED,	/* its connection ended without a goodbye */
};

/* What a service says about one ring. */
#define TB_TRACE_HELD_BY	8	/* writers of held chunks named */

struct tb_trace_ring_record {
	uint16_t producer;
	int32_t pid;
	enum tb_trace_end end;
	uint32_t held;			/* chunks its writers held */
	uint32_t holders;		/* writers that held them (0: not
					   known), the first TB_TRACE_HELD_BY
					   named in @held_by */
	uint16_t held_by[TB_TRACE_HELD_BY];
	uint32_t full, no_chunk;	/* writes refused, by cause */
	uint32_t dropped_frags;
	uint32_t holes, scrapes, malformed;	/* the reader's */
};

/* What a TraceStats packet says besides the buffers' own statistics. */
struct tb_trace_stats_extra {
	uint64_t chunks_discarded;	/* refused before any buffer */
	uint32_t producers_connected;
	uint64_t producers_seen;
	uint64_t flushes;
};

#define TB__TRACE_TRUSTED_MAX	(3 * (2 + TB_PB_VARINT_MAX))

/* The trusted fields of a service's packet, at @p; their size. */
static inline size_t tb__trace_service_trusted(uint8_t *p,
					       struct tb_buf_ident ident)
{
	size_t n = 0;

	n += tb_pb_uint(p + n, TB_PB_TRUSTED_UID, ident.uid);
	n += tb_pb_uint(p + n, TB_PB_TRUSTED_SEQ_ID, TB_TRACE_SERVICE_SEQ);
	n += tb_pb_int(p + n, TB_PB_TRUSTED_PID, ident.pid);
	return n;
}

/* A packet body of the service's, with its trusted fields appended. */
static inline int tb__trace_service_put(struct tb_trace_out *o,
					 struct tb_buf_ident ident,
					 const uint8_t *body, size_t n)
{
	uint8_t head[2 * TB_PB_VARINT_MAX], tail[TB__TRACE_TRUSTED_MAX];
	size_t nt = tb__trace_service_trusted(tail, ident), nh;

	nh = tb_pb_len(head, TB_PB_TRACE_PACKET, n + nt);
	tb__trace_put(o, head, nh);
	tb__trace_put(o, body, n);
	tb__trace_put(o, tail, nt);
	o->packets++;
	return tb__trace_done(o);
}

/* A length-delimited field @field holding @n bytes of @in, at @p. */
static inline size_t tb__trace_sub(uint8_t *p, uint32_t field,
				   const uint8_t *in, size_t n)
{
	size_t k = tb_pb_len(p, field, n);

	TB_MEMCPY(p + k, in, n);
	return k + n;
}

static inline size_t tb__trace_str(uint8_t *p, uint32_t field,
				   const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return tb__trace_sub(p, field, (const uint8_t *)s, n);
}

/* Decimal @v at @p (no terminator); its length. */
static inline size_t tb__trace_dec(char *p, uint64_t v)
{
	char t[20];
	size_t n = 0, i;

	do {
		t[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (i = 0; i < n; i++)
		p[i] = t[n - 1 - i];
	return n;
}

/* Copies @s to @p; its length. */
static inline size_t tb__trace_cat(char *p, const char *s)
{
	size_t n = 0;

	for (; s[n]; n++)
		p[n] = s[n];
	return n;
}

/* A TrackDescriptor packet: @uuid, @name, a counter track if @counter. */
static inline int tb__trace_track(struct tb_trace_out *o,
				  struct tb_buf_ident ident, uint64_t uuid,
				  const char *name, bool counter)
{
	uint8_t td[128], pkt[160];
	size_t n = 0;

	n += tb_pb_uint(td + n, 1, uuid);		/* uuid */
	n += tb__trace_str(td + n, 2, name);		/* name */
	if (counter)
		n += tb_pb_len(td + n, 8, 0);		/* counter: {} */
	return tb__trace_service_put(o, ident, pkt,
				     tb__trace_sub(pkt, 60, td, n));
}

/* The service's track, for its instants: once, before the first. */
static inline int tb_trace_service_track(struct tb_trace_out *o,
					 struct tb_buf_ident ident)
{
	return tb__trace_track(o, ident, TB_TRACE_SERVICE_UUID,
			       "tbring service", false);
}

/* Ring @producer's "events lost" counter track: once, before its values. */
static inline int tb_trace_loss_track(struct tb_trace_out *o,
				      struct tb_buf_ident ident,
				      uint16_t producer, int32_t pid)
{
	char name[64];
	size_t n = tb__trace_cat(name, "events lost: producer ");

	n += tb__trace_dec(name + n, producer);
	n += tb__trace_cat(name + n, " (pid ");
	if (pid < 0)
		name[n++] = '-';
	n += tb__trace_dec(name + n, pid < 0 ? -(uint64_t)pid : (uint64_t)pid);
	n += tb__trace_cat(name + n, ")");
	name[n] = 0;
	return tb__trace_track(o, ident, TB_TRACE_LOSS_UUID | producer, name,
			       true);
}

/* A value of ring @producer's "events lost" track at @ts (ns). */
static inline int tb_trace_loss_count(struct tb_trace_out *o,
				      struct tb_buf_ident ident, uint64_t ts,
				      uint16_t producer, uint64_t lost)
{
	uint8_t te[48], pkt[80];
	size_t n = 0, k = 0;

	n += tb_pb_uint(te + n, 9, 4);			/* TYPE_COUNTER */
	n += tb_pb_uint(te + n, 11, TB_TRACE_LOSS_UUID | producer);
	n += tb_pb_int(te + n, 30, (int64_t)lost);	/* counter_value */
	k += tb_pb_uint(pkt + k, 8, ts);		/* timestamp */
	k += tb__trace_sub(pkt + k, 11, te, n);		/* track_event */
	return tb__trace_service_put(o, ident, pkt, k);
}

/*
 * Ring @producer's "events lost" value @lost at @ts, written when it
 * changed: *@last keeps the last value written plus one (0: none yet,
 * and the track's descriptor, named with @pid, goes first).  How a
 * service, convert and stream sample a ring.  0, or TB_EIO.
 */
static inline int tb_trace_loss_sample(struct tb_trace_out *o,
				       struct tb_buf_ident ident, uint64_t ts,
				       uint16_t producer, int32_t pid,
				       uint64_t lost, uint64_t *last)
{
	if (*last == lost + 1)
		return o->error;
	if (!*last)
		tb_trace_loss_track(o, ident, producer, pid);
	*last = lost + 1;
	return tb_trace_loss_count(o, ident, ts, producer, lost);
}

/* A debug annotation {@name: @v} (uint), or {@name: @s} when @s. */
static inline size_t tb__trace_arg(uint8_t *p, const char *name, uint64_t v,
				   const char *s)
{
	uint8_t da[64];
	size_t n = tb__trace_str(da, 10, name);

	if (s)
		n += tb__trace_str(da + n, 6, s);
	else
		n += tb_pb_uint(da + n, 3, v);
	return tb__trace_sub(p, 4, da, n);
}

static inline const char *tb_trace_end_name(enum tb_trace_end end)
{
	return end == TB_TRACE_END_DIED ? "died" :
	       end == TB_TRACE_END_CLEAN ? "clean" : "live";
}

/*
 * The instant that says how ring @r's producer ended (or, TB_TRACE_END_LIVE,
 * what its ring counted when the trace ended), at @ts (ns), on the
 * service's track.
 */
static inline int tb_trace_ring_record(struct tb_trace_out *o,
				       struct tb_buf_ident ident, uint64_t ts,
				       const struct tb_trace_ring_record *r)
{
	static const char *const what[3] = {
		" at the end", " ended", " died",
	};
	uint8_t te[896], pkt[960];
	char name[48];
	size_t n = 0, k = 0, m;
	uint32_t i;

	m = tb__trace_cat(name, "producer ");
	m += tb__trace_dec(name + m, r->producer);
	m += tb__trace_cat(name + m, what[r->end <= TB_TRACE_END_DIED ?
					   r->end : 0]);
	name[m] = 0;
	n += tb_pb_uint(te + n, 9, 3);			/* TYPE_INSTANT */
	n += tb_pb_uint(te + n, 11, TB_TRACE_SERVICE_UUID);
	n += tb__trace_str(te + n, 23, name);
	n += tb__trace_arg(te + n, TB_TRACE_ARG_PRODUCER, r->producer, NULL);
	n += tb__trace_arg(te + n, "tb.pid", (uint64_t)(uint32_t)r->pid,
			   NULL);
	n += tb__trace_arg(te + n, TB_TRACE_ARG_END, 0,
			   tb_trace_end_name(r->end));
	n += tb__trace_arg(te + n, TB_TRACE_ARG_HELD, r->held, NULL);
	n += tb__trace_arg(te + n, TB_TRACE_ARG_HOLDERS, r->holders, NULL);
	for (i = 0; i < r->holders && i < TB_TRACE_HELD_BY; i++)
		n += tb__trace_arg(te + n, TB_TRACE_ARG_HELD_BY,
				   r->held_by[i], NULL);
	n += tb__trace_arg(te + n, TB_TRACE_ARG_FULL, r->full, NULL);
	n += tb__trace_arg(te + n, TB_TRACE_ARG_NO_CHUNK, r->no_chunk, NULL);
	n += tb__trace_arg(te + n, TB_TRACE_ARG_DROPPED, r->dropped_frags,
			   NULL);
	n += tb__trace_arg(te + n, TB_TRACE_ARG_HOLES, r->holes, NULL);
	n += tb__trace_arg(te + n, TB_TRACE_ARG_SCRAPES, r->scrapes, NULL);
	n += tb__trace_arg(te + n, TB_TRACE_ARG_MALFORMED, r->malformed,
			   NULL);
	k += tb_pb_uint(pkt + k, 8, ts);
	k += tb__trace_sub(pkt + k, 11, te, n);
	return tb__trace_service_put(o, ident, pkt, k);
}

/*
 * One BufferStats (TraceStats.BufferStats' field numbers) of buffer @s,
 * with what the trace writer counted for its index (@invalid packets
 * replaced, @uncounted losses): its size.
 */
static inline size_t tb__trace_buffer_stats(uint8_t *p,
					    const struct tb_buf_stats *s,
					    uint64_t invalid, uint64_t uncounted)
{
	size_t n = 0;

	n += tb_pb_uint(p + n, 12, s->buffer_size);
	n += tb_pb_uint(p + n, 1, s->bytes_written);
	n += tb_pb_uint(p + n, 13, s->bytes_overwritten);
	n += tb_pb_uint(p + n, 14, s->bytes_read);
	n += tb_pb_uint(p + n, 15, s->padding_bytes_written);
	n += tb_pb_uint(p + n, 16, s->padding_bytes_cleared);
	n += tb_pb_uint(p + n, 2, s->chunks_written);
	n += tb_pb_uint(p + n, 10, s->chunks_rewritten);
	n += tb_pb_uint(p + n, 3, s->chunks_overwritten);
	n += tb_pb_uint(p + n, 18, s->chunks_discarded);
	n += tb_pb_uint(p + n, 17, s->chunks_read);
	n += tb_pb_uint(p + n, 11, s->chunks_committed_out_of_order);
	n += tb_pb_uint(p + n, 4, s->write_wrap_count);
	n += tb_pb_uint(p + n, 5, s->patches_succeeded);
	n += tb_pb_uint(p + n, 6, s->patches_failed);
	n += tb_pb_uint(p + n, 7, s->readaheads_succeeded);
	n += tb_pb_uint(p + n, 8, s->readaheads_failed);
	n += tb_pb_uint(p + n, 9, s->abi_violations + invalid);
	n += tb_pb_uint(p + n, 19, s->trace_writer_packet_loss + uncounted +
			s->chunks_discarded);
	return n;
}

#define TB__TRACE_BS_MAX	(19 * (2 + TB_PB_VARINT_MAX))

/*
 * BufferStats @i of the @n entries of @stats (a NULL one, or one past
 * @n, empty) into @bs, framed as TraceStats field 1 at @fh (*@nfh bytes):
 * the size of both.
 */
static inline size_t tb__trace_bs_at(const struct tb_trace_out *o,
				     const struct tb_buf_stats *const *stats,
				     unsigned n, unsigned i, uint8_t *bs,
				     uint8_t *fh, size_t *nfh)
{
	struct tb_buf_stats none;
	const struct tb_buf_stats *s = i < n ? stats[i] : NULL;
	size_t k;

	TB_MEMSET(&none, 0, sizeof(none));
	k = i < TB_TRACE_BUFS ?
	    tb__trace_buffer_stats(bs, s ? s : &none, o->invalid[i],
				   o->uncounted_loss[i]) :
	    tb__trace_buffer_stats(bs, s ? s : &none, 0, 0);
	*nfh = tb_pb_len(fh, 1, k);
	return *nfh + k;
}

/* One WriterStats (TraceStats field 18) of @e at @p: its size. */
static inline size_t tb__trace_writer_stats(uint8_t *p,
					    const struct tb_trace_seq *e)
{
	uint8_t w[2 * (2 + TB_PB_VARINT_MAX)];
	size_t k = 0;

	k += tb_pb_uint(w + k, 1, e->seq_id);		/* sequence_id */
	k += tb_pb_uint(w + k, 4, e->buffer);		/* buffer */
	return tb__trace_sub(p, 18, w, k);
}

/*
 * How many BufferStats the TraceStats packet holds: @n, or more when the
 * trace writer counted loss or invalid packets for a buffer index past
 * them (an empty BufferStats carries that count).
 */
static inline unsigned tb__trace_nbs(const struct tb_trace_out *o, unsigned n)
{
	unsigned i;

	for (i = TB_TRACE_BUFS; i > n; i--)
		if (o->invalid[i - 1] || o->uncounted_loss[i - 1])
			return i;
	return n;
}

/*
 * The TraceStats fields after the buffers': @x's, and the packets this
 * output replaced as invalid (Perfetto's field; its importer reads it
 * not, so each buffer's abi_violations counts them too).
 */
static inline size_t tb__trace_stats_tail(uint8_t *tail,
					  const struct tb_trace_out *o,
					  const struct tb_trace_stats_extra *x)
{
	size_t nt = 0;

	nt += tb_pb_uint(tail + nt, 8, x ? x->chunks_discarded : 0);
	nt += tb_pb_uint(tail + nt, 10, o->invalid_packets);
	nt += tb_pb_uint(tail + nt, 2, x ? x->producers_connected : 0);
	nt += tb_pb_uint(tail + nt, 3, x ? x->producers_seen : 0);
	nt += tb_pb_uint(tail + nt, 12, x ? x->flushes : 0);
	nt += tb_pb_uint(tail + nt, 13, x ? x->flushes : 0);
	return nt;
}

/*
 * The TraceStats packet that ends a trace: one BufferStats per entry of
 * @stats (@n of them; a NULL entry is an empty BufferStats, keeping the
 * index of the buffers after it), a WriterStats per sequence the trace
 * holds, then @x's fields and the packets this output replaced as
 * invalid.
 *
 * What it says of loss is what Perfetto's importer reads as data loss
 * (proto_trace_reader.cc, ParseTraceStats; severities in
 * storage/stats.h), so that the UI's data-loss notice shows every loss
 * the trace holds:
 *  - writer_stats lists each sequence under the buffer index its packets
 *    came from (tb_trace_write_buffer()), as Perfetto's service does
 *    (tracing_service_impl.cc, GetTraceStats; without the chunk payload
 *    histograms, which the importer does not read and tbuffer.h does not
 *    keep): the importer then counts each sequence's packets that carry
 *    previous_packet_dropped as traced_buf_sequence_packet_loss;
 *  - a loss on a sequence's first packet in the trace, which the importer
 *    does not count, any loss of a sequence the table had no room for,
 *    and the chunks a buffer discarded (full in DISCARD mode: nothing
 *    after them carries a flag) are added to the buffer's
 *    trace_writer_packet_loss (also data loss: in storage/stats.h it
 *    "counts packet loss that happened before the RING_BUFFER start or
 *    after the DISCARD buffer end");
 *  - the packets replaced as invalid are added to their buffer's
 *    abi_violations (data loss; TraceStats.invalid_packets, which keeps
 *    the count too, is not read by the importer).
 * Counts for a buffer index at or past @n add BufferStats up to it.
 */
static inline int tb_trace_write_stats(struct tb_trace_out *o,
				       struct tb_buf_ident ident, uint64_t ts,
				       const struct tb_buf_stats *const *stats,
				       unsigned n,
				       const struct tb_trace_stats_extra *x)
{
	uint8_t bs[TB__TRACE_BS_MAX], tail[6 * (2 + TB_PB_VARINT_MAX)];
	uint8_t head[3 * (2 + TB_PB_VARINT_MAX)], fh[2 * TB_PB_VARINT_MAX];
	uint8_t ph[2 * TB_PB_VARINT_MAX], tr[TB__TRACE_TRUSTED_MAX];
	uint8_t ws[4 * (2 + TB_PB_VARINT_MAX)];
	uint64_t size = 0;
	size_t nt, nh = 0, nfh, ntr = tb__trace_service_trusted(tr, ident);
	unsigned i, nbs = tb__trace_nbs(o, n);

	for (i = 0; i < nbs; i++)
		size += tb__trace_bs_at(o, stats, n, i, bs, fh, &nfh);
	for (i = 0; i < TB_TRACE_SEQS; i++)
		if (o->seqs[i].seq_id)
			size += tb__trace_writer_stats(ws, &o->seqs[i]);
	nt = tb__trace_stats_tail(tail, o, x);
	size += nt;
	if (ts)						/* 0: none */
		nh += tb_pb_uint(head + nh, 8, ts);	/* timestamp */
	nh += tb_pb_len(head + nh, TB_PB_TRACE_STATS, size);
	/* the packet's framing, its parts, then the trusted fields */
	tb__trace_put(o, ph, tb_pb_len(ph, TB_PB_TRACE_PACKET,
				       nh + size + ntr));
	tb__trace_put(o, head, nh);
	for (i = 0; i < nbs; i++) {
		size_t k = tb__trace_bs_at(o, stats, n, i, bs, fh, &nfh);

		tb__trace_put(o, fh, nfh);
		tb__trace_put(o, bs, k - nfh);
	}
	for (i = 0; i < TB_TRACE_SEQS; i++)
		if (o->seqs[i].seq_id)
			tb__trace_put(o, ws, tb__trace_writer_stats(
						     ws, &o->seqs[i]));
	tb__trace_put(o, tail, nt);
	tb__trace_put(o, tr, ntr);
	o->packets++;
	return tb__trace_done(o);
}

#ifdef __cplusplus
}
#endif

#endif /* TBTRACE_H */
