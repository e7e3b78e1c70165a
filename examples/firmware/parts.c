/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * parts.c - the library's share of the firmware example, one part per
 * build (-DFW_PART=1..4), with fw.c's configuration: thin extern
 * wrappers of the calls fw.c makes, so that the object's .text is the
 * library code reachable from them (make firmware-size).  The event
 * layer's figure includes the writer calls it inlines.
 */
#include "fw_config.h"
#include "tblink.h"

#if FW_PART == 1		/* the ring writer */
int p_ring_init(struct tb_ring *r, void *m, size_t n)
{
	return tb_ring_init(r, m, n, 512, 8);
}

int p_writer_init(struct tb_writer *w, struct tb_ring *r, void *s)
{
	return tb_writer_init(w, r, 1, 0, TB_DROP, s);
}

int p_write(struct tb_writer *w, const void *p, size_t n)
{
	return tb_writer_write_packet(w, p, n);
}

int p_release(struct tb_writer *w)
{
	return tb_writer_release(w);
}
#elif FW_PART == 2		/* the event layer */
int p_ev_init(struct tb_ev_writer *ew, struct tb_writer *w,
	      const struct tb_track *t, const struct tb_ev_clock *c)
{
	return tb_ev_writer_init(ew, w, t, c, 0);
}

int p_begin(struct tb_ev_writer *ew, const struct tb_category *c,
	    const char *name, const struct tb_arg *a, uint32_t n)
{
	return tb_ev_begin(ew, c, name, a, n);
}

int p_end(struct tb_ev_writer *ew, const struct tb_category *c)
{
	return tb_ev_end(ew, c, NULL, 0);
}

int p_instant(struct tb_ev_writer *ew, const struct tb_category *c,
	      const char *name, const struct tb_arg *a, uint32_t n)
{
	return tb_ev_instant(ew, c, name, a, n);
}

int p_counter(struct tb_ev_writer *ew, const struct tb_category *c,
	      const struct tb_track *t, int64_t v)
{
	return tb_ev_counter(ew, c, t, v);
}

int p_finish(struct tb_ev_writer *ew)
{
	return tb_ev_writer_finish(ew);
}
#elif FW_PART == 3		/* the on-target reader */
int p_reader_init(struct tb_reader *rd, struct tb_ring *r, void *s)
{
	return tb_reader_init(rd, r, s);
}

int p_drain(struct tb_reader *rd, tb_chunk_fn fn, void *ctx)
{
	return tb_reader_drain(rd, 8, TB_READ_LAZY, fn, ctx, NULL);
}
#elif FW_PART == 4		/* the UART framing */
int p_tx_init(struct tb_link_tx *tx, tb_link_put_fn put, void *ctx)
{
	return tb_link_tx_init(tx, put, ctx);
}

void p_hello(struct tb_link_tx *tx, const struct tb_ring *r)
{
	tb_link_tx_hello(tx, r);
}

void p_stats(struct tb_link_tx *tx, const struct tb_ring *r)
{
	tb_link_tx_stats(tx, r);
}

void p_end(struct tb_link_tx *tx)
{
	tb_link_tx_end(tx);
}

tb_chunk_fn p_chunk_fn(void)
{
	return tb_link_chunk_fn;
}
#endif
