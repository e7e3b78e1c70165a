/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * examples/first_trace.c - the shortest whole path from events to a
 * .pftrace file, shown in full in docs/events.md (make test runs it and
 * checks its trace with build/tbtrace stat).
 *
 *   ./build/first_trace [FILE]     (default first.pftrace)
 *
 * Events go through the event layer into a ring; the service side (here
 * the same thread, once at the end) takes the ring into a central buffer
 * and writes that out as a Perfetto trace.
 */
#include <stdio.h>
#include "tbevent.h"
#include "tbbridge.h"
#include "tbtrace.h"

TB_CATEGORY_DEFINE(cat, "app", 1);
static uint8_t mem[TB_RING_SIZE(4096, 16)] TB_RING_ALIGNED;
static uint8_t wbuf[4096], rbuf[4096];	/* writer's, reader's scratch */

static int put(void *file, const void *p, size_t n)
{
	return fwrite(p, 1, n, (FILE *)file) == n ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct tb_trace_out out = { .write = put };
	struct tb_ring ring;
	struct tb_writer w;
	struct tb_ev_writer ev;
	struct tb_track thread;
	struct tb_bridge br;
	struct tb_buf *buf;
	struct tb_bridge_config bc = {	/* producer 1's ring into buf */
		.ring = &ring, .scratch = rbuf, .producer_id = 1,
		.ident = { .uid = 1000, .pid = 42 }, .bufs = &buf, .nbufs = 1,
	};
	int i, ret;

	/* the producer: a ring, a writer, a thread track, events */
	if (tb_ring_init(&ring, mem, sizeof(mem), 4096, 16) ||
	    tb_writer_init(&w, &ring, 1, 0, TB_STALL, wbuf))
		return 1;
	tb_track_thread(&thread, tb_ev_uuid(42, 1), NULL, 42, 42, "main");
	if (tb_ev_writer_init(&ev, &w, &thread, NULL, TB_EV_DEFAULTS))
		return 1;
	tb_ev_set_current(&ev);
	for (i = 0; i < 3; i++) {
		TB_TRACE_BEGIN(&cat, "Work", TB_ARG_INT("i", i));
		TB_TRACE_INSTANT(&cat, "Step");
		TB_TRACE_END(&cat);
	}
	tb_ev_writer_finish(&ev);
	tb_writer_release(&w);

	/* the service: ring -> central buffer -> trace file */
	if (tb_buf_new(&buf, 1 << 20, TB_BUF_RING_BUFFER, NULL, NULL) ||
	    tb_bridge_init(&br, &bc))
		return 1;
	do
		ret = tb_bridge_drain(&br, 64, TB_READ_SCRAPE, NULL);
	while (ret == TB_LIMIT);
	out.ctx = fopen(argc > 1 ? argv[1] : "first.pftrace", "wb");
	if (ret < 0 || !out.ctx)
		return 1;
	ret = tb_trace_write(&out, buf) < 0;
	ret |= fclose((FILE *)out.ctx) != 0;
	tb_bridge_destroy(&br);
	tb_buf_destroy(buf);
	return ret;
}
