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
 * and writes that out as a Perfetto trace.  Any failure says why, and the
 * exit status is 1.
 */
#define _POSIX_C_SOURCE 200809L	/* CLOCK_BOOTTIME, also under -std=c99 */
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

/* Says what failed and why (a TB_* result); the exit status. */
static int fail(const char *what, int err)
{
	fprintf(stderr, "first_trace: %s: %s\n", what, tb_strerror(err));
	return 1;
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
	const char *path = argc > 1 ? argv[1] : "first.pftrace", *what;
	int i, ret;

	if (!(out.ctx = fopen(path, "wb"))) {
		perror(path);
		return 1;
	}

	/* the producer: a ring, a writer, a thread track, events */
	if ((ret = tb_ring_init(&ring, mem, sizeof(mem), 4096, 16)) ||
	    (ret = tb_writer_init(&w, &ring, 1, 0, TB_STALL, wbuf)))
		return fail("ring", ret);
	tb_track_thread(&thread, tb_ev_uuid(42, 1), NULL, 42, 42, "main");
	ret = tb_ev_writer_init(&ev, &w, &thread, NULL, TB_EV_DEFAULTS);
	if (ret)
		return fail("event writer", ret);
	tb_ev_set_current(&ev);
	for (i = 0; i < 3; i++) {
		TB_TRACE_BEGIN(&cat, "Work", TB_ARG_INT("i", i));
		TB_TRACE_INSTANT(&cat, "Step");
		TB_TRACE_END(&cat);
	}
	tb_ev_writer_finish(&ev);
	tb_writer_release(&w);

	/* the service: ring -> central buffer -> trace file */
	ret = tb_buf_new(&buf, 1 << 20, TB_BUF_RING_BUFFER, NULL, NULL);
	if (ret)
		return fail("central buffer", ret);
	what = "bridge";
	if (!(ret = tb_bridge_init(&br, &bc))) {
		do
			ret = tb_bridge_drain(&br, 64, TB_READ_SCRAPE, NULL);
		while (ret == TB_LIMIT);
		if (ret >= 0 && tb_trace_write(&out, buf) < 0) {
			what = path;
			ret = out.error;
		}
		tb_bridge_destroy(&br);
	}
	tb_buf_destroy(buf);
	if (ret < 0)
		return fail(what, ret);
	if (fclose((FILE *)out.ctx)) {
		perror(path);
		return 1;
	}
	return 0;
}
