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
 * through a callback (a file, a socket, memory).  One thread.
 */
#ifndef TBTRACE_H
#define TBTRACE_H

#include "tbtracefmt.h"
#include "tbuffer.h"

#ifdef __cplusplus
extern "C" {
#endif

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

static inline void tb__trace_put(struct tb_trace_out *o, const void *p,
				  size_t n)
{
	if (!o->error && n && o->write(o->ctx, p, n))
		o->error = -1;
	o->bytes += n;
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

static inline int tb__trace_pb_byte(struct tb__trace_pb_cursor *c)
{
	return tb__trace_pb_at_end(c) ? -1 : c->s[c->i].data[c->off++];
}

static inline bool tb__trace_pb_get_varint(struct tb__trace_pb_cursor *c, uint64_t *v)
{
	unsigned shift;

	*v = 0;
	for (shift = 0; shift < 64; shift += 7) {
		int b = tb__trace_pb_byte(c);

		if (b < 0)
			return false;
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
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

/*
 * Top-level TracePacket fields only the service may write: the trusted
 * fields, trace_config 33, trace_stats 35, synchronization_marker 36,
 * compressed_packets 50, machine_id 98 (Perfetto reserves the same).
 */
static inline bool tb__trace_pb_reserved(uint64_t field)
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
	struct tb__trace_pb_cursor c = { pkt->slices, pkt->nslices, 0, 0 };
	uint64_t key, len;

	while (!tb__trace_pb_at_end(&c)) {
		uint64_t field;

		if (!tb__trace_pb_get_varint(&c, &key))
			return false;	/* a key cut short: not a field */
		field = key >> 3;
		if (!field || field > 0x1fffffffu || tb__trace_pb_reserved(field))
			return false;	/* no such field number, or not theirs */
		switch (key & 7) {
		case TB_PB_VARINT:
			if (!tb__trace_pb_get_varint(&c, &len))
				return false;
			break;
		case 1:		/* fixed64 */
			if (!tb__trace_pb_skip(&c, 8))
				return false;
			break;
		case TB_PB_LEN:
			if (!tb__trace_pb_get_varint(&c, &len) ||
			    !tb__trace_pb_skip(&c, len))
				return false;
			break;
		case 5:		/* fixed32 */
			if (!tb__trace_pb_skip(&c, 4))
				return false;
			break;
		default:	/* groups and invalid wire types */
			return false;
		}
	}
	return true;			/* ended between two fields */
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
	nt += tb_pb_int(tail + nt, TB_PB_TRUSTED_PID, pkt->ident.pid);
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
 *    ended, the chunks its writers still held, the writes refused by
 *    cause, the reader's holes, scrapes and malformed chunks).  Perfetto
 *    has no field for a ring's counters: they are the instant's
 *    arguments, shown in the UI, and read by tools/tbcheck.h;
 *  - last of all, a TraceStats packet (trace_stats, Perfetto's field
 *    numbers): one BufferStats per central buffer, the chunks refused
 *    before any buffer (TraceStats.chunks_discarded), the invalid packets
 *    replaced, the producers connected and seen.
 *
 * Timestamps are the caller's, on the trace clock (CLOCK_BOOTTIME, as the
 * event layer's default).  Each writer returns 0, or -1 once a write
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
struct tb_trace_ring_record {
	uint16_t producer;
	int32_t pid;
	enum tb_trace_end end;
	uint32_t held;			/* chunks its writers held */
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
	return o->error;
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
	uint8_t te[640], pkt[700];
	char name[48];
	size_t n = 0, k = 0, m;

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

/* One BufferStats (TraceStats.BufferStats' field numbers); its size. */
static inline size_t tb__trace_buffer_stats(uint8_t *p,
					    const struct tb_buf_stats *s)
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
	n += tb_pb_uint(p + n, 9, s->abi_violations);
	n += tb_pb_uint(p + n, 19, s->trace_writer_packet_loss);
	return n;
}

#define TB__TRACE_BS_MAX	(19 * (2 + TB_PB_VARINT_MAX))

/*
 * The TraceStats packet that ends a trace: one BufferStats per entry of
 * @stats (@n of them; a NULL entry is an empty BufferStats, keeping the
 * index of the buffers after it), then @x's fields and the packets this
 * output replaced as invalid.
 */
static inline int tb_trace_write_stats(struct tb_trace_out *o,
				       struct tb_buf_ident ident, uint64_t ts,
				       const struct tb_buf_stats *const *stats,
				       unsigned n,
				       const struct tb_trace_stats_extra *x)
{
	struct tb_buf_stats none;
	uint8_t bs[TB__TRACE_BS_MAX], tail[6 * (2 + TB_PB_VARINT_MAX)];
	uint8_t head[3 * (2 + TB_PB_VARINT_MAX)], fh[2 * TB_PB_VARINT_MAX];
	uint8_t ph[2 * TB_PB_VARINT_MAX], tr[TB__TRACE_TRUSTED_MAX];
	uint64_t size = 0;
	size_t nt = 0, nh = 0, k, ntr = tb__trace_service_trusted(tr, ident);
	unsigned i;

	TB_MEMSET(&none, 0, sizeof(none));
	for (i = 0; i < n; i++) {
		k = tb__trace_buffer_stats(bs, stats[i] ? stats[i] : &none);
		size += tb_pb_len(fh, 1, k) + k;
	}
	nt += tb_pb_uint(tail + nt, 8, x ? x->chunks_discarded : 0);
	nt += tb_pb_uint(tail + nt, 10, o->invalid_packets);
	nt += tb_pb_uint(tail + nt, 2, x ? x->producers_connected : 0);
	nt += tb_pb_uint(tail + nt, 3, x ? x->producers_seen : 0);
	nt += tb_pb_uint(tail + nt, 12, x ? x->flushes : 0);
	nt += tb_pb_uint(tail + nt, 13, x ? x->flushes : 0);
	size += nt;
	if (ts)						/* 0: none */
		nh += tb_pb_uint(head + nh, 8, ts);	/* timestamp */
	nh += tb_pb_len(head + nh, TB_PB_TRACE_STATS, size);
	/* the packet's framing, its parts, then the trusted fields */
	tb__trace_put(o, ph, tb_pb_len(ph, TB_PB_TRACE_PACKET,
				       nh + size + ntr));
	tb__trace_put(o, head, nh);
	for (i = 0; i < n; i++) {
		k = tb__trace_buffer_stats(bs, stats[i] ? stats[i] : &none);
		tb__trace_put(o, fh, tb_pb_len(fh, 1, k));
		tb__trace_put(o, bs, k);
	}
	tb__trace_put(o, tail, nt);
	tb__trace_put(o, tr, ntr);
	o->packets++;
	return o->error;
}

#ifdef __cplusplus
}
#endif

#endif /* TBTRACE_H */
