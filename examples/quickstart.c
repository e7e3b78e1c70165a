/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * examples/quickstart.c - the README's first example, built and run by
 * make test: a writer thread and a reader over one ring in memory you own
 * (here calloc; in real use a MAP_SHARED mapping every producer maps, at
 * any address), whole packets out, loss reported.
 */
#include <stdio.h>
#include <stdlib.h>
#include "tbring.h"

static void on_packet(void *ctx, const struct tb_packet *p)
{
	(void)ctx;
	printf("writer %u: %.*s%s\n", p->writer, (int)p->len,
	       (const char *)p->data,
	       p->flags & TB_PKT_LOSS ? " (packets were lost before it)" : "");
}

int main(void)
{
	size_t len = tb_ring_size(4096, 64);	/* 64 chunks of 4 KiB */
	void *mem = calloc(1, len);		/* zero-filled: an empty ring */
	static uint8_t wscratch[4096], rscratch[4096];
	static uint32_t pkts[4 * 4096];		/* reassembly: 4 x 16 KiB */
	struct tb_ring ring;
	struct tb_writer w;
	struct tb_reader rd;
	struct tb_reassembly ra;

	if (!mem || tb_ring_init(&ring, mem, len, 4096, 64))
		return 1;

	/* a writer: one struct tb_writer per thread, ids 1..65535 */
	tb_writer_init(&w, &ring, 1, 0, TB_STALL, wscratch);
	tb_writer_write_packet(&w, "hello", 5);	/* TB_OK, or a counted loss */
	tb_writer_release(&w);			/* before the thread goes */

	/* the reader: whole packets, even those split over chunks */
	tb_reader_init(&rd, &ring, rscratch);
	tb_reassembly_init(&ra, pkts, sizeof(pkts), 4, 16384,
			   TB_OVERSIZE_DROP);
	while (tb_reader_drain_packets(&rd, &ra, 64, TB_READ_LAZY, on_packet,
				       NULL, NULL) == TB_LIMIT)
		;				/* more than 64 positions */
	tb_reader_wait(&rd, 100);		/* sleeps until a writer rings */
	free(mem);
	return 0;
}
