/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * examples/service_loop.c - the service loop of docs/service.md, whole
 * (make test runs it and checks its trace): a thread serves a ring
 * (tbservice.h) while the main thread traces into it; stopping the
 * service drains the ring and writes the trace.
 *
 *   ./build/service_loop [FILE]     (default service.pftrace)
 */
#define _POSIX_C_SOURCE 200809L	/* CLOCK_BOOTTIME, CLOCK_MONOTONIC */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include "tbevent.h"
#include "tbservice.h"

TB_CATEGORY_DEFINE(cat, "app", 1);
static uint8_t mem[TB_RING_SIZE(4096, 16)] TB_RING_ALIGNED;
static uint8_t wbuf[4096], rbuf[4096];	/* writer's, bridge's scratch */

static uint64_t now_ms(void)		/* any monotonic origin */
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int put(void *file, const void *p, size_t n)
{
	return fwrite(p, 1, n, (FILE *)file) == n ? 0 : -1;
}

static void *serve(void *s)
{
	while (tb_service_poll((struct tb_service *)s, now_ms()))
		;		/* sleeps on the bell when idle */
	return NULL;
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "service_loop: %s: %s\n", what, tb_strerror(err));
	return 1;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "service.pftrace";
	static struct tb_bell bell;	/* every served ring rings it */
	struct tb_trace_out out = { .write = put };
	struct tb_service_slot slots[4];	/* caller-owned, for handles */
	struct tb_buf *buf;
	struct tb_ring ring;
	struct tb_service_config cfg = {
		.bell = &bell, .slots = slots, .max_rings = 4,
		.bufs = &buf, .nbufs = 1,	/* central buffers, by BufferID */
		.out = &out,			/* write, or writev */
		.wait_ms = 100, .period_ms = 250,	/* long trace */
	};
	struct tb_bridge_config bc = {	/* one per ring */
		.ring = &ring, .scratch = rbuf, .producer_id = 1,
		.ident = { .uid = 1000, .pid = 42 }, .bufs = &buf, .nbufs = 1,
	};
	struct tb_service s;
	struct tb_bridge br;
	struct tb_writer w;
	struct tb_ev_writer ev;
	struct tb_track thread;
	pthread_t th;
	unsigned h;
	int i, ret;

	if (!(out.ctx = fopen(path, "wb"))) {
		perror(path);
		return 1;
	}
	if ((ret = tb_ring_init(&ring, mem, sizeof(mem), 4096, 16)) ||
	    (ret = tb_buf_new(&buf, 1 << 20, TB_BUF_RING_BUFFER, NULL, NULL)))
		return fail("setup", ret);
	tb_ring_set_bell(&ring, &bell);
	if ((ret = tb_service_init(&s, &cfg)) ||
	    (ret = tb_bridge_init(&br, &bc)) ||
	    (ret = tb_service_add(&s, &br, &h)))	/* h: until removed */
		return fail("service", ret);
	if (pthread_create(&th, NULL, serve, &s)) {
		perror("pthread_create");
		return 1;
	}

	/* a producer: events on a thread track, while the service runs */
	tb_track_thread(&thread, tb_ev_uuid(42, 1), NULL, 42, 42, "main");
	if ((ret = tb_writer_init(&w, &ring, 1, 0, TB_STALL, wbuf)) ||
	    (ret = tb_ev_writer_init(&ev, &w, &thread, NULL, TB_EV_DEFAULTS)))
		return fail("writer", ret);
	for (i = 0; i < 1000; i++)
		TB_TRACE_INSTANT_W(&ev, &cat, "Tick", TB_ARG_INT("i", i));
	tb_ev_writer_finish(&ev);
	tb_writer_release(&w);

	tb_service_stop(&s);	/* from any thread: drain, write, return */
	pthread_join(th, NULL);
	tb_service_destroy(&s);
	tb_bridge_destroy(&br);
	tb_buf_destroy(buf);
	if (fclose((FILE *)out.ctx)) {
		perror(path);
		return 1;
	}
	return out.error ? fail(path, out.error) : 0;
}
