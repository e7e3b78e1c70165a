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

#include "tbpb.h"
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

/* Perfetto's field numbers in TracePacket (and Trace.packet). */
#define TB_PB_TRACE_PACKET		1
#define TB_PB_TRUSTED_UID		3
#define TB_PB_TRUSTED_SEQ_ID		10
#define TB_PB_PREVIOUS_DROPPED		42
#define TB_PB_TRUSTED_PID		79

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
 * Reading a trace back: the Trace.packet records of a trace image and the
 * fields the service appended to each.  Validating: a trace that is not a
 * sequence of Trace.packet records, or a record that is not protobuf,
 * ends the walk with -1.
 */
#define TB_TRACE_HAS_UID	1u
#define TB_TRACE_HAS_SEQ_ID	2u
#define TB_TRACE_HAS_PID	4u
#define TB_TRACE_HAS_DROPPED	8u

struct tb_trace_packet {
	const uint8_t *data;		/* the TracePacket bytes */
	size_t size;
	uint64_t trusted_uid;		/* field 3 */
	uint64_t trusted_seq_id;	/* field 10 */
	uint64_t trusted_pid;		/* field 79 */
	uint64_t dropped;		/* field 42: the loss bits, or 0 */
	unsigned has;			/* TB_TRACE_HAS_* */
};

/*
 * The next packet of the trace image @r walks (tb_pb_reader_init() over
 * the whole file): 1, 0 at the end, -1 if the image is malformed.  Where
 * a field repeats, the last one counts, as in protobuf.
 */
static inline int tb_trace_next(struct tb_pb_reader *r,
				struct tb_trace_packet *tp)
{
	struct tb_pb_reader in;
	struct tb_pb_field f;
	int ret = tb_pb_next(r, &f);

	if (ret <= 0)
		return ret;
	if (f.number != TB_PB_TRACE_PACKET || f.type != TB_PB_LEN)
		return -1;
	TB_MEMSET(tp, 0, sizeof(*tp));
	tp->data = f.data;
	tp->size = f.size;
	tb_pb_reader_init(&in, f.data, f.size);
	while ((ret = tb_pb_next(&in, &f)) > 0) {
		if (f.type != TB_PB_VARINT)
			continue;
		switch (f.number) {
		case TB_PB_TRUSTED_UID:
			tp->trusted_uid = f.value;
			tp->has |= TB_TRACE_HAS_UID;
			break;
		case TB_PB_TRUSTED_SEQ_ID:
			tp->trusted_seq_id = f.value;
			tp->has |= TB_TRACE_HAS_SEQ_ID;
			break;
		case TB_PB_TRUSTED_PID:
			tp->trusted_pid = f.value;
			tp->has |= TB_TRACE_HAS_PID;
			break;
		case TB_PB_PREVIOUS_DROPPED:
			tp->dropped = f.value;
			tp->has |= TB_TRACE_HAS_DROPPED;
			break;
		}
	}
	return ret < 0 ? -1 : 1;
}

#ifdef __cplusplus
}
#endif

#endif /* TBTRACE_H */
