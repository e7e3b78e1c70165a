/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A minimal, validating protobuf reader for tests: walks a Perfetto trace
 * (Trace.packet = field 1) and the fields of each TracePacket.  Independent
 * of tbservice.h's encoder on purpose, so tests do not check the writer
 * against itself.
 */
#ifndef TEST_TRACE_DECODE_H
#define TEST_TRACE_DECODE_H

#include <stddef.h>
#include <stdint.h>

struct pb_reader {
	const uint8_t *p;
	const uint8_t *end;
	int bad;
};

struct pb_field {
	uint32_t number;
	unsigned type;		/* 0 varint, 1 fixed64, 2 bytes, 5 fixed32 */
	uint64_t value;		/* varint or fixed */
	const uint8_t *data;	/* type 2 */
	size_t size;
};

static inline void pb_init(struct pb_reader *r, const void *p, size_t n)
{
	r->p = (const uint8_t *)p;
	r->end = r->p + n;
	r->bad = 0;
}

static inline int pb_varint(struct pb_reader *r, uint64_t *v)
{
	unsigned shift = 0;

	*v = 0;
	while (r->p < r->end && shift < 64) {
		uint8_t b = *r->p++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
		shift += 7;
	}
	r->bad = 1;
	return -1;
}

/* Next field: 1, 0 at the end, -1 on malformed input (latched). */
static inline int pb_next(struct pb_reader *r, struct pb_field *f)
{
	uint64_t key;

	if (r->bad)
		return -1;
	if (r->p == r->end)
		return 0;
	if (pb_varint(r, &key))
		return -1;
	f->number = (uint32_t)(key >> 3);
	f->type = (unsigned)(key & 7);
	f->data = NULL;
	f->size = 0;
	switch (f->type) {
	case 0:
		return pb_varint(r, &f->value) ? -1 : 1;
	case 1:
	case 5: {
		size_t n = f->type == 1 ? 8 : 4, i;

		if ((size_t)(r->end - r->p) < n)
			break;
		f->value = 0;
		for (i = 0; i < n; i++)
			f->value |= (uint64_t)r->p[i] << (8 * i);
		r->p += n;
		return 1;
	}
	case 2:
		if (pb_varint(r, &f->value) ||
		    f->value > (uint64_t)(r->end - r->p))
			break;
		f->data = r->p;
		f->size = (size_t)f->value;
		r->p += f->size;
		return 1;
	}
	r->bad = 1;
	return -1;
}

/* What the service appended to one TracePacket, plus where it is. */
struct trace_packet {
	const uint8_t *data;	/* the TracePacket bytes */
	size_t size;
	uint64_t trusted_uid;		/* field 3 */
	uint64_t trusted_seq_id;	/* field 10 */
	uint64_t trusted_pid;		/* field 79 */
	uint64_t dropped;		/* field 42, 0 if absent */
	int has_uid, has_seq_id, has_pid;
};

/*
 * Decodes one TracePacket's trusted fields (the last occurrence wins, as
 * in protobuf).  Returns 0, or -1 if the packet is not valid protobuf.
 */
static inline int trace_packet_decode(const uint8_t *p, size_t n,
				      struct trace_packet *tp)
{
	struct pb_reader r;
	struct pb_field f;
	int ret;

	tp->data = p;
	tp->size = n;
	tp->trusted_uid = tp->trusted_seq_id = tp->trusted_pid = 0;
	tp->dropped = 0;
	tp->has_uid = tp->has_seq_id = tp->has_pid = 0;
	pb_init(&r, p, n);
	while ((ret = pb_next(&r, &f)) > 0) {
		if (f.type != 0)
			continue;
		if (f.number == 3) {
			tp->trusted_uid = f.value;
			tp->has_uid = 1;
		} else if (f.number == 10) {
			tp->trusted_seq_id = f.value;
			tp->has_seq_id = 1;
		} else if (f.number == 79) {
			tp->trusted_pid = f.value;
			tp->has_pid = 1;
		} else if (f.number == 42) {
			tp->dropped = f.value;
		}
	}
	return ret;
}

/*
 * Calls @fn for every packet of a trace file image.  Returns the number of
 * packets, or -1 if the trace is not a valid sequence of Trace.packet.
 */
static inline long trace_for_each(const void *trace, size_t n,
				  void (*fn)(void *ctx,
					     const struct trace_packet *tp),
				  void *ctx)
{
	struct pb_reader r;
	struct pb_field f;
	long count = 0;
	int ret;

	pb_init(&r, trace, n);
	while ((ret = pb_next(&r, &f)) > 0) {
		struct trace_packet tp;

		if (f.number != 1 || f.type != 2 ||
		    trace_packet_decode(f.data, f.size, &tp))
			return -1;
		if (fn)
			fn(ctx, &tp);
		count++;
	}
	return ret < 0 ? -1 : count;
}

#endif /* TEST_TRACE_DECODE_H */
