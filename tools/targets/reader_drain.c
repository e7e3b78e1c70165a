/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * reader_drain.c - the reader's drain alone, as one translation unit: one
 * extern entry point, tb_reader_drain(), so this TU's .text is exactly the
 * code a drain reaches (resolve, copy, validate, publish read_pos, wake).
 * Built by make size, make barriers and make firmware like writer_fast.c.
 *
 * Uses only the reader side of tbring.h.
 */
#include "tbring.h"

int tbt_reader_drain(struct tb_reader *rd, unsigned max,
		     enum tb_read_mode mode, tb_chunk_fn fn, void *ctx);

int tbt_reader_drain(struct tb_reader *rd, unsigned max,
		     enum tb_read_mode mode, tb_chunk_fn fn, void *ctx)
{
	return tb_reader_drain(rd, max, mode, fn, ctx, NULL);
}
