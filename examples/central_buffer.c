/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * examples/central_buffer.c - the central buffer of docs/service.md,
 * whole (make test runs it): one chunk of two fragments committed as a
 * service would commit what a ring's reader or an IPC message brought,
 * then read back as whole packets, without a copy.
 */
#include <stdio.h>
#include "tbuffer.h"

int main(void)
{
	/* the chunk's payload: fragments, each framed by its LEB128 size */
	static const uint8_t framed[] = { 5, 'h', 'e', 'l', 'l', 'o',
					  5, 'w', 'o', 'r', 'l', 'd' };
	struct tb_buf *b = tb_buf_create(64 << 20, TB_BUF_RING_BUFFER);
	struct tb_buf_chunk_in in = {
		.producer_id = 1, .ident = { .uid = 1000, .pid = 42 },
		.writer_id = 7, .chunk_id = 0, .complete = true,
		.nfrags = 2, .payload = framed, .size = sizeof(framed),
	};
	struct tb_buf_packet pkt;
	unsigned i;
	int ret;

	if (!b)
		return 1;
	ret = tb_buf_copy_chunk(b, &in);	/* untrusted input: a result */
	if (ret) {
		fprintf(stderr, "central_buffer: %s\n", tb_strerror(ret));
		tb_buf_destroy(b);
		return 1;
	}
	tb_buf_begin_read(b);
	while (tb_buf_read_packet(b, &pkt)) {
		/* pkt.slices[0 .. pkt.nslices): the packet, in the buffer;
		   pkt.loss: TB_BUF_LOSS_* bits since the sequence's last */
		printf("writer %u: ", pkt.writer_id);
		for (i = 0; i < pkt.nslices; i++)
			fwrite(pkt.slices[i].data, 1, pkt.slices[i].size,
			       stdout);
		printf("%s\n", pkt.loss ? " (after a loss)" : "");
	}
	tb_buf_destroy(b);
	return 0;
}
