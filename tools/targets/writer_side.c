/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * writer_side.c - everything a firmware image that only writes needs from
 * tbring.h (and tbfrag.h): lay out or attach the ring, set up a writer,
 * the fast path, long fragments (sync), letting go (release).  No reader
 * code.  make firmware builds it for Cortex-M4 and Cortex-M33 and checks
 * it needs nothing beyond <string.h>; make size reports its .text as the
 * "whole writer side" row.
 */
#include "tbring.h"

size_t tbt_ring_size(uint32_t chunk_size, uint32_t num_chunks);
int tbt_ring_init(struct tb_ring *r, void *mem, size_t len,
		  uint32_t chunk_size, uint32_t num_chunks);
int tbt_ring_attach(struct tb_ring *r, void *mem, size_t len);
int tbt_writer_init(struct tb_writer *w, const struct tb_ring *r,
		    uint16_t id, uint16_t bid, enum tb_full_policy policy,
		    void *scratch);
int32_t tbt_writer_room(const struct tb_writer *w);
int tbt_writer_open(struct tb_writer *w, uint32_t min, unsigned flags,
		    struct tb_span *span);
int tbt_writer_close(struct tb_writer *w, uint32_t size, unsigned flags);
int tbt_writer_sync(struct tb_writer *w, uint32_t used, struct tb_span *span);
int tbt_writer_release(struct tb_writer *w);
int tbt_writer_write_packet(struct tb_writer *w, const void *data,
			    size_t len);
void tbt_writer_record_loss(struct tb_writer *w);
const char *tbt_strerror(int result);

size_t tbt_ring_size(uint32_t chunk_size, uint32_t num_chunks)
{
	return tb_ring_size(chunk_size, num_chunks);
}

int tbt_ring_init(struct tb_ring *r, void *mem, size_t len,
		  uint32_t chunk_size, uint32_t num_chunks)
{
	return tb_ring_init(r, mem, len, chunk_size, num_chunks);
}

int tbt_ring_attach(struct tb_ring *r, void *mem, size_t len)
{
	return tb_ring_attach(r, mem, len);
}

int tbt_writer_init(struct tb_writer *w, const struct tb_ring *r,
		    uint16_t id, uint16_t bid, enum tb_full_policy policy,
		    void *scratch)
{
	return tb_writer_init(w, r, id, bid, policy, scratch);
}

int32_t tbt_writer_room(const struct tb_writer *w)
{
	return tb_writer_room(w);
}

int tbt_writer_open(struct tb_writer *w, uint32_t min, unsigned flags,
		    struct tb_span *span)
{
	return tb_writer_open(w, min, flags, span);
}

int tbt_writer_close(struct tb_writer *w, uint32_t size, unsigned flags)
{
	return tb_writer_close(w, size, flags);
}

int tbt_writer_sync(struct tb_writer *w, uint32_t used, struct tb_span *span)
{
	return tb_writer_sync(w, used, span);
}

int tbt_writer_release(struct tb_writer *w)
{
	return tb_writer_release(w);
}

int tbt_writer_write_packet(struct tb_writer *w, const void *data,
			    size_t len)
{
	return tb_writer_write_packet(w, data, len);
}

void tbt_writer_record_loss(struct tb_writer *w)
{
	tb_writer_record_loss(w);
}

const char *tbt_strerror(int result)
{
	return tb_strerror(result);
}
