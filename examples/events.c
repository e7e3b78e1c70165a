/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * examples/events.c - trace with the event layer, write a Perfetto trace.
 *
 *   ./build/events [FILE]     (default events.pftrace; make test runs it)
 *
 * One thread traces slices, a counter and an instant through the event
 * layer (tbevent.h) into a ring; then, in the same thread, a bridge
 * (tbbridge.h) takes the ring's chunks into a central buffer (tbuffer.h)
 * and tbtrace.h writes it out as a trace the Perfetto UI opens.  A real
 * program has the service side on a thread or in a process of its own
 * (tbservice.h; examples/demo.c, examples/tb_service.c).  Check the file
 * with build/tbtrace stat FILE.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tbevent.h"
#include "tbbridge.h"
#include "tbtrace.h"

TB_CATEGORY_DEFINE(cat_app, "app", 1);	/* on; tb_category_set() flips it */

static int write_file(void *ctx, const void *data, size_t len)
{
	return fwrite(data, 1, len, (FILE *)ctx) == len ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "events.pftrace";
	static uint8_t mem[TB_RING_SIZE(4096, 64)] TB_RING_ALIGNED;
	static uint8_t wscratch[4096], rscratch[4096];
	int32_t pid = (int32_t)getpid();
	struct tb_ring ring;
	struct tb_writer w;
	struct tb_ev_writer ev;
	struct tb_track process, thread, queue;
	struct tb_buf *buf;
	struct tb_bridge br;
	struct tb_bridge_config bc = {	/* producer 1's ring into buf */
		.ring = &ring, .scratch = rscratch, .producer_id = 1,
		.bufs = &buf, .nbufs = 1,
	};
	struct tb_trace_out out;
	unsigned i;
	int ret;

	if (tb_ring_init(&ring, mem, sizeof(mem), 4096, 64) ||
	    tb_writer_init(&w, &ring, 1, 0, TB_STALL, wscratch))
		return 1;

	/* tracks: a process, this thread under it, a counter */
	tb_track_process(&process, tb_ev_uuid((uint64_t)pid, 0), pid,
			 "events example");
	tb_track_thread(&thread, tb_ev_uuid((uint64_t)pid, 1), &process,
			pid, pid, "main");
	tb_track_counter(&queue, tb_ev_uuid((uint64_t)pid, 2), &process,
			 "queue depth", TB_UNIT_COUNT);

	/* an event writer over the ring writer; the macros use it */
	tb_ev_writer_init(&ev, &w, &thread, NULL, TB_EV_DEFAULTS);
	tb_ev_set_current(&ev);
	for (i = 0; i < 10; i++) {
		TB_TRACE_BEGIN(&cat_app, "HandleRequest", TB_ARG_UINT("id", i));
		TB_TRACE_COUNTER(&cat_app, &queue, 10 - i);
		TB_TRACE_BEGIN(&cat_app, "Parse");
		TB_TRACE_END(&cat_app);
		if (i == 5)
			TB_TRACE_INSTANT(&cat_app, "Checkpoint",
					 TB_ARG_STR("state", "half way"));
		TB_TRACE_END(&cat_app);
	}
	tb_ev_writer_finish(&ev);
	tb_writer_release(&w);		/* publishes the last chunk */

	/* the service side: ring -> central buffer -> trace file */
	ret = tb_buf_new(&buf, 1 << 20, TB_BUF_RING_BUFFER, NULL, NULL);
	if (ret) {
		fprintf(stderr, "no central buffer: %s\n", tb_strerror(ret));
		return 1;
	}
	/* the producer's identity, as a service learns it from the kernel */
	bc.ident.uid = (uint32_t)getuid();
	bc.ident.pid = pid;
	if (tb_bridge_init(&br, &bc))
		return 1;
	do
		ret = tb_bridge_drain(&br, 64, TB_READ_SCRAPE, NULL);
	while (ret == TB_LIMIT);
	memset(&out, 0, sizeof(out));
	out.write = write_file;
	out.ctx = fopen(path, "wb");
	if (!out.ctx)
		return 1;
	printf("%ld packets in %s (events: %u)\n",
	       (long)tb_trace_write(&out, buf), path, ev.stats.events);
	ret = fclose((FILE *)out.ctx) || out.error || ret < 0;
	tb_bridge_destroy(&br);
	tb_buf_destroy(buf);
	return ret;
}
