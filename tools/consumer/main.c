/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A program that uses an installed (or subproject) tbring the way users
 * do: #include <tbring.h>, whatever build system found it.  One ring in
 * memory, one writer, one reader that drains whole packets.  Exits 0 when
 * the packet came back intact and the version macros are there.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tbpacket.h>

static int got;

static void on_packet(void *ctx, const struct tb_packet *p)
{
	(void)ctx;
	got += p->len == 5 && !memcmp(p->data, "hello", 5);
}

int main(void)
{
	static uint32_t ram[4096];	/* the reassembly's memory */
	static uint8_t wscratch[256], rscratch[256];
	static uint8_t mem[TB_RING_SIZE(256, 4)] TB_RING_ALIGNED;
	struct tb_reassembly ra;
	struct tb_ring ring;
	struct tb_writer w;
	struct tb_reader rd;

	if (tb_ring_init(&ring, mem, sizeof(mem), 256, 4) ||
	    tb_writer_init(&w, &ring, 1, 0, TB_DROP, wscratch) ||
	    tb_writer_write_packet(&w, "hello", 5) ||
	    tb_writer_release(&w) ||
	    tb_reader_init(&rd, &ring, rscratch) ||
	    tb_reassembly_init(&ra, ram, sizeof(ram), 1, 256,
			       TB_OVERSIZE_DROP))
		return 1;
	tb_reader_drain_packets(&rd, &ra, 16, TB_READ_LAZY, on_packet, NULL,
				NULL);
	printf("tbring %s consumer: %s\n", TBRING_VERSION_STRING,
	       got == 1 ? "ok" : "FAILED");
	return got == 1 ? 0 : 1;
}
