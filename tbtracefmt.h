/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Copyright (c) 2026, tbring contributors.  BSD-2-Clause: see COPYING, or
 * https://opensource.org/license/bsd-2-clause for the text.
 *
 * tbtracefmt.h - what a Perfetto trace written by tbtrace.h holds, for
 * those that read one back: the field numbers of the records and of the
 * trusted fields the service appends, the names of the service's ring
 * record, and a validating walk over the packets of a trace image.
 *
 * tbtrace.h writes what this header reads; a checker or a tool that only
 * reads traces includes this one alone and needs no central buffer.  Pure
 * byte logic over memory the caller owns, as tbpb.h: input is untrusted.
 */
#ifndef TBTRACEFMT_H
#define TBTRACEFMT_H
#define TBTRACEFMT_H_VERSION 200	/* tbbase.h: TBRING_VERSION */

#include "tbpb.h"

/* Headers of one release only: a mixed copy does not compile. */
#if TBPB_H_VERSION != TBTRACEFMT_H_VERSION
#error "tbtracefmt.h needs the tbpb.h of its own release"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Perfetto's field numbers in TracePacket (and Trace.packet). */
#define TB_PB_TRACE_PACKET		1
#define TB_PB_TRUSTED_UID		3
#define TB_PB_TRUSTED_SEQ_ID		10
#define TB_PB_PREVIOUS_DROPPED		42
#define TB_PB_TRUSTED_PID		79

/*
 * Debug annotation names of a ring record: the instant tbtrace.h's
 * tb_trace_ring_record() writes on the service's track.
 */
#define TB_TRACE_ARG_PRODUCER	"tb.producer"
#define TB_TRACE_ARG_END	"tb.end"	/* "died", "clean", "live" */
#define TB_TRACE_ARG_HELD	"tb.chunks_held"
#define TB_TRACE_ARG_FULL	"tb.refused_full"
#define TB_TRACE_ARG_NO_CHUNK	"tb.refused_no_chunk"
#define TB_TRACE_ARG_DROPPED	"tb.dropped_fragments"
#define TB_TRACE_ARG_HOLES	"tb.holes"
#define TB_TRACE_ARG_SCRAPES	"tb.scrapes"
#define TB_TRACE_ARG_MALFORMED	"tb.malformed"
#define TB_TRACE_ARG_HELD_BY	"tb.held_by"	/* one per writer named */
#define TB_TRACE_ARG_HOLDERS	"tb.holders"	/* writers holding chunks */

/* ------------------------------------------------------------------------
 * Reading a trace back: the Trace.packet records of a trace image and the
 * fields the service appended to each.  Validating: a trace that is not a
 * sequence of Trace.packet records, or a record that is not protobuf,
 * ends the walk with TB_EPROTOBUF.
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
 * the whole file): 1, 0 at the end, TB_EPROTOBUF if the image is
 * malformed.  Where a field repeats, the last one counts, as in protobuf.
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
		return TB_EPROTOBUF;
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
	return ret < 0 ? ret : 1;
}

#ifdef __cplusplus
}
#endif

#endif /* TBTRACEFMT_H */
