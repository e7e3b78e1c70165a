/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * reader_side.c - everything a firmware image that only reads a ring
 * needs from tbring.h (and tbfrag.h): attach, set up the reader, drain or
 * resolve one position, the wait and idle checks, the statistics.  No
 * writer code.  Built by make firmware like writer_side.c; make size
 * reports it as the "whole reader side" row.
 */
#include "tbring.h"

int tbt_ring_attach(struct tb_ring *r, void *mem, size_t len);
void tbt_ring_stats(const struct tb_ring *r, struct tb_ring_stats *s);
int tbt_reader_init(struct tb_reader *rd, const struct tb_ring *r,
		    void *scratch);
int tbt_reader_drain(struct tb_reader *rd, unsigned max,
		     enum tb_read_mode mode, tb_chunk_fn fn, void *ctx);
int tbt_reader_read_one(struct tb_reader *rd, enum tb_read_mode mode,
			struct tb_chunk_view *v);
bool tbt_reader_pinned(const struct tb_reader *rd);
bool tbt_reader_idle(const struct tb_reader *rd);
bool tbt_reader_wait(struct tb_reader *rd, uint32_t timeout_ms);

int tbt_ring_attach(struct tb_ring *r, void *mem, size_t len)
{
	return tb_ring_attach(r, mem, len);
}

void tbt_ring_stats(const struct tb_ring *r, struct tb_ring_stats *s)
{
	tb_ring_stats(r, s);
}

int tbt_reader_init(struct tb_reader *rd, const struct tb_ring *r,
		    void *scratch)
{
	return tb_reader_init(rd, r, scratch);
}

int tbt_reader_drain(struct tb_reader *rd, unsigned max,
		     enum tb_read_mode mode, tb_chunk_fn fn, void *ctx)
{
	return tb_reader_drain(rd, max, mode, fn, ctx, NULL);
}

int tbt_reader_read_one(struct tb_reader *rd, enum tb_read_mode mode,
			struct tb_chunk_view *v)
{
	return tb_reader_read_one(rd, mode, v);
}

bool tbt_reader_pinned(const struct tb_reader *rd)
{
	return tb_reader_pinned(rd);
}

bool tbt_reader_idle(const struct tb_reader *rd)
{
	return tb_reader_idle(rd);
}

bool tbt_reader_wait(struct tb_reader *rd, uint32_t timeout_ms)
{
	return tb_reader_wait(rd, timeout_ms);
}
