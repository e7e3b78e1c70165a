/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * examples/quickstart.c - the README's ring example, built and run by
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
	/* reassembly: up to 4 split packets at a time, 16 KiB each */
	size_t rlen = tb_reassembly_size(4, 16384);
	void *rmem = malloc(rlen);
	static uint8_t wscratch[4096], rscratch[4096];
	struct tb_ring ring;
	struct tb_writer w;
	struct tb_reader rd;
	struct tb_reassembly ra;
	int ret;

	if (!mem || !rmem || tb_ring_init(&ring, mem, len, 4096, 64))
		return 1;

	/* a writer: one struct tb_writer per thread, ids 1..65535 */
	if (tb_writer_init(&w, &ring, 1, 0, TB_STALL, wscratch))
		return 1;
	ret = tb_writer_write_packet(&w, "hello", 5);	/* or a counted loss */
	if (ret)
		fprintf(stderr, "lost: %s\n", tb_strerror(ret));
	tb_writer_release(&w);			/* before the thread goes */

	/* the reader: whole packets, even those split over chunks */
	if (tb_reader_init(&rd, &ring, rscratch) ||
	    tb_reassembly_init(&ra, rmem, rlen, 4, 16384, TB_OVERSIZE_DROP))
		return 1;
	do	/* TB_LIMIT: more than 64 positions were waiting */
		ret = tb_reader_drain_packets(&rd, &ra, 64, TB_READ_LAZY,
					      on_packet, NULL, NULL);
	while (ret == TB_LIMIT);
	if (ret == TB_NODATA)
		tb_reader_wait(&rd, 100);	/* sleeps until a writer rings */
	free(rmem);
	free(mem);
	return ret < 0;
}
