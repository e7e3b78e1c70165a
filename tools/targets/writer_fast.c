/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * writer_fast.c - the writer fast path alone, as one translation unit:
 * open a fragment, append to it, close it (which publishes), and the
 * whole-packet call built on those.  Nothing here runs; it is compiled
 * for each target to see what the fast path costs and what it emits.
 *
 *   - make size      reports this TU's .text: with static inline helpers
 *                    and only these extern entry points, that is exactly
 *                    the code reachable from the fast path.
 *   - make barriers  disassembles it for aarch64 and counts the barriers.
 *   - make firmware  builds it bare-metal (Cortex-M) and checks with nm
 *                    that it needs nothing beyond <string.h>.
 *
 * TBT_WRITER_ENTRY picks the entry points: 1 tb_writer_write_packet()
 * alone (one call: open, append, close, publish), 2 tb_writer_open() and
 * tb_writer_close() alone (the span API: the caller appends into the span
 * between them), 3 (default) all three.  make size measures 1 and 2 apart,
 * so that neither is charged for code only the other reaches.
 *
 * Uses only the writer side of tbring.h.
 */
#include "tbring.h"

#ifndef TBT_WRITER_ENTRY
#define TBT_WRITER_ENTRY 3
#endif

int tbt_writer_open(struct tb_writer *w, uint32_t min, unsigned flags,
		    struct tb_span *span);
int tbt_writer_close(struct tb_writer *w, uint32_t size, unsigned flags);
int tbt_writer_write_packet(struct tb_writer *w, const void *data,
			    size_t len);

#if TBT_WRITER_ENTRY & 2
int tbt_writer_open(struct tb_writer *w, uint32_t min, unsigned flags,
		    struct tb_span *span)
{
	return tb_writer_open(w, min, flags, span);
}

int tbt_writer_close(struct tb_writer *w, uint32_t size, unsigned flags)
{
	return tb_writer_close(w, size, flags);
}
#endif

#if TBT_WRITER_ENTRY & 1
int tbt_writer_write_packet(struct tb_writer *w, const void *data,
			    size_t len)
{
	return tb_writer_write_packet(w, data, len);
}
#endif
