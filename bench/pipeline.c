/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/pipeline.c - the whole pipeline, as a traced program runs it:
 * writer threads emit events through the event layer (tbevent.h) into
 * shared-memory rings (tbring.h); one service thread (tbservice.h) drains
 * them through the bridge (tbbridge.h) into a central buffer (tbuffer.h)
 * and, in long-trace mode, writes the buffer as a Perfetto trace
 * (tbtrace.h) to a file on tmpfs (/dev/shm, removed after each run),
 * through writev(2) (the trace writer's vectored output, no stdio).
 *
 * Table 1, throughput.  N writer threads, each in a loop: a slice BEGIN
 * with one annotation (the iteration number), a counter value, the END:
 * three events, interned names, TB_DROP (a traced program must not block).
 * Rows "Nw": one ring shared by every writer, as a process shares one
 * shared-memory buffer in Perfetto (and as examples/demo.c does); rows
 * "Nw-own": a ring per writer thread.  Rings of 256 chunks of 4 KiB, a
 * 16 MiB central buffer that overwrites (ring policy), written to the
 * file every 50 ms.  A run writes for TB_BENCH_SECONDS (default 0.25 s),
 * then stops the writers and the service (final flush and write); the
 * median run (by events/s) of TB_BENCH_RUNS (default 5) gives every
 * figure of its row:
 *   ev/s      events written by the writers over the run's wall time
 *             (writers start to the service's last write)
 *   MB/s      trace bytes written to the file over the same time
 *   svc cpu   the service thread's CPU time over the wall time: near
 *             100% it is the bottleneck, and a flat-out writer outruns it
 *   svc ns/ev the service thread's CPU time (CLOCK_THREAD_CPUTIME_ID:
 *             drain, bridge, buffer, trace writer, writev) per event
 *   memcpy    ns per event of one memcpy of the same trace bytes, in
 *             4 KiB pieces over 16 MiB (the buffer's size), timed in the
 *             same run right after it; x: svc ns/ev over it
 *   wr ns/ev  each writer thread's CPU time per event it tried (one the
 *             full ring refused costs less than one written)
 *   loss      events the writers' layer did not write (ev), the ring's
 *             writer counters (full: TB_FULL, noch: TB_NO_CHUNK, drop:
 *             fragments dropped in relocation), chunks the central buffer
 *             overwrote before a write took them (ovw) or refused (rej)
 *
 * Table 2, the service with many producers.  R rings registered, A of
 * them with a writer thread flat out (the same loop), the other R - A
 * idle: each has a writer that wrote one packet, which the service took,
 * and nothing since (an idle thread of a traced program); in rows "-h"
 * that writer has also opened a fragment it does not close (a thread
 * stopped in the middle of an event), so a lazy drain stops before its
 * chunk and the pass reads the chunk's word besides write_pos.
 * Rings of 4 chunks (idle) and 256 (active), no trace output (the
 * central buffer overwrites).  Three measurements per run:
 *   threads   A writer threads flat out and the service thread for
 *             TB_BENCH_SECONDS, as in table 1: events/s and the service's
 *             CPU per event (its passes depend on the scheduler: how much
 *             a pass finds varies by orders of magnitude between runs, so
 *             per-pass figures come from the loop)
 *   loop      then on the main thread, the same bridges served by a
 *             service that never sleeps (wait_ms 0): LOOP_PASSES passes,
 *             before each of which a writer of its own on each active
 *             ring writes LOOP_EVENTS events (untimed): CPU per pass
 *             (CLOCK_THREAD_CPUTIME_ID around tb_service_poll(), the
 *             clock's own cost taken off) and per event
 *   idle      then IDLE_PASSES passes with nothing anywhere, ns per pass,
 *             and what one idle ring adds to a pass: (idle pass at R -
 *             idle pass at A) / (R - A); and tb__service_idle(), the check
 *             made before each sleep (a private helper, bench only), over
 *             R rings and per ring
 * A row's figures come from its median run: threads by events/s, loop by
 * pass time; idle and check are medians of their own.
 *
 * Table 3, the service alone.  One ring, its writer and the service on
 * the main thread: SVC_PASSES passes, before each of which the writer
 * writes LOOP_EVENTS events (untimed); each pass drains the ring and
 * writes the central buffer to the trace (timed, thread CPU time: no
 * scheduler, no other thread, so the figure a quiet core would give, up
 * to the caches).  Rows by output: stdio (fwrite into a 1 MiB buffer),
 * writev (the trace writer's vectored output, writev(2) to the file),
 * null (a writev callback that takes everything: the service without
 * the kernel's share).  memcpy is timed the same way (CPU time).

 * The machine: rows run with more threads than cores are oversubscribed
 * (the header says how many cores there are).
 *
 * usage: bench_pipeline [-l | --list] [PATTERN...]  (bench.h: rows by name)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "tbevent.h"
#include "tbservice.h"
#include "bench.h"

#define CHUNK_SIZE	4096u
#define NUM_CHUNKS	256u		/* an active ring (TB_BENCH_CHUNKS) */
#define IDLE_CHUNKS	4u		/* an idle ring (table 2) */
#define BUF_SIZE	(16u << 20)
#define PERIOD_MS	50u
#define WAIT_MS		10u
#define MAX_WRITERS	16u
#define MAX_RINGS	1000u
#define INNER		64u		/* iterations between stop checks */
#define IDLE_PASSES	2000u
#define LOOP_PASSES	300u
#define LOOP_EVENTS	960u		/* per active ring per pass */
#define SVC_PASSES	300u		/* table 3 */

TB_CATEGORY_DEFINE(cat_bench, "bench", 1);

static double thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t now_ms(void)
{
	return (uint64_t)(bench_now() * 1000);
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p) {
		fprintf(stderr, "bench: out of memory\n");
		exit(1);
	}
	return p;
}

/* ------------------------------------------------------------------------
 * Rings, bridges, the service.
 */
struct pring {
	struct tb_ring ring;
	void *mem;
	size_t len;
	uint8_t *rscratch;
	struct tb_bridge br;
	/* table 2's idle rings: a writer holding its chunk */
	struct tb_writer idle_w;
	uint8_t *idle_scratch;
};

struct pwriter {
	struct pipe *p;
	pthread_t th;
	struct tb_ring *ring;
	uint16_t id;
	struct tb_writer w;
	struct tb_ev_writer ev;
	uint8_t scratch[CHUNK_SIZE];
	struct tb_track thread, ctr;
	char name[16];
	double cpu;		/* thread CPU seconds */
	struct tb_ev_stats st;
};

struct pipe {
	unsigned nwriters, nrings;
	struct tb_bell bell;
	struct pring *rings;
	struct tb_service_slot *slots;
	struct tb_buf *buf;
	struct tb_service svc;
	struct tb_trace_out out;
	FILE *file;
	int fd;			/* the writev output's file, else -1 */
	char path[64];
	struct tb_track proc;
	pthread_t service;
	double svc_cpu;
	uint32_t stop;
	struct pwriter *w;
};

static int write_file(void *ctx, const void *data, size_t len)
{
	return fwrite(data, 1, len, (FILE *)ctx) == len ? 0 : -1;
}

/* The trace writer's vectored output: writev(2), EINTR retried. */
static long writev_fd(void *ctx, const struct tb_trace_iov *v, unsigned n)
{
	struct iovec iov[TB_TRACE_IOV_MAX];
	unsigned i;
	ssize_t r;

	for (i = 0; i < n; i++) {
		iov[i].iov_base = (void *)(uintptr_t)v[i].base;
		iov[i].iov_len = v[i].len;
	}
	r = writev(*(int *)ctx, iov, (int)n);
	return r < 0 ? (errno == EINTR ? 0 : -1) : (long)r;
}

/* Table 3's output to nowhere: the service's own CPU, no kernel's. */
static long writev_null(void *ctx, const struct tb_trace_iov *v, unsigned n)
{
	size_t sum = 0;
	unsigned i;

	(void)ctx;
	for (i = 0; i < n; i++)
		sum += v[i].len;
	return (long)sum;
}

static void ring_new(struct pipe *p, struct pring *pr, unsigned i,
		     uint32_t nchunks)
{
	struct tb_bridge_config bc;

	pr->len = tb_ring_size(CHUNK_SIZE, nchunks);
	/* shared memory, as between processes */
	pr->mem = mmap(NULL, pr->len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pr->rscratch = (uint8_t *)xcalloc(1, CHUNK_SIZE);
	memset(&bc, 0, sizeof(bc));
	bc.ring = &pr->ring;
	bc.scratch = pr->rscratch;
	bc.producer_id = (uint16_t)(1 + i);
	bc.ident.uid = 1000;
	bc.ident.pid = (int32_t)getpid();
	bc.bufs = &p->buf;
	bc.nbufs = 1;
	if (pr->mem == MAP_FAILED ||
	    tb_ring_init(&pr->ring, pr->mem, pr->len, CHUNK_SIZE, nchunks) ||
	    tb_bridge_init(&pr->br, &bc)) {
		fprintf(stderr, "bench: ring setup failed\n");
		exit(1);
	}
	tb_ring_set_bell(&pr->ring, &p->bell);
}

static void ring_free(struct pring *pr)
{
	tb_bridge_destroy(&pr->br);
	munmap(pr->mem, pr->len);
	free(pr->rscratch);
	free(pr->idle_scratch);
}

/* An active ring's chunks: NUM_CHUNKS, or $TB_BENCH_CHUNKS (a power of 2). */
static uint32_t active_chunks(void)
{
	uint32_t n = (uint32_t)bench_env("TB_BENCH_CHUNKS", NUM_CHUNKS, 4);

	while (n & (n - 1))
		n &= n - 1;
	return n;
}

/* @nactive rings of active_chunks(), the others of IDLE_CHUNKS. */
static void pipe_new(struct pipe *p, unsigned nwriters, unsigned nrings,
		     unsigned nactive, int out)
{
	struct tb_service_config sc;
	unsigned i, h;

	memset(p, 0, sizeof(*p));
	p->fd = -1;
	p->nwriters = nwriters;
	p->nrings = nrings;
	p->buf = tb_buf_create(BUF_SIZE, TB_BUF_RING_BUFFER);
	if (!p->buf) {
		fprintf(stderr, "bench: no central buffer\n");
		exit(1);
	}
	p->rings = (struct pring *)xcalloc(nrings, sizeof(*p->rings));
	p->slots = (struct tb_service_slot *)xcalloc(nrings, sizeof(*p->slots));
	p->w = (struct pwriter *)xcalloc(nwriters ? nwriters : 1,
					 sizeof(*p->w));
	for (i = 0; i < nrings; i++)
		ring_new(p, &p->rings[i], i,
			 i < nactive ? active_chunks() : IDLE_CHUNKS);
	if (out == 3) {
		p->out.writev = writev_null;
	} else if (out) {
		snprintf(p->path, sizeof(p->path),
			 "/dev/shm/tbring-bench-pipeline-%d.pftrace",
			 (int)getpid());
		if (out == 2) {		/* writev, no stdio */
			p->fd = open(p->path, O_WRONLY | O_CREAT | O_TRUNC,
				     0600);
			if (p->fd < 0) {
				perror(p->path);
				exit(1);
			}
			p->out.writev = writev_fd;
			p->out.ctx = &p->fd;
		} else {
			p->file = fopen(p->path, "wb");
			if (!p->file) {
				perror(p->path);
				exit(1);
			}
			setvbuf(p->file, NULL, _IOFBF, 1 << 20);
			p->out.write = write_file;
			p->out.ctx = p->file;
		}
	}
	memset(&sc, 0, sizeof(sc));
	sc.bell = &p->bell;
	sc.slots = p->slots;
	sc.max_rings = nrings;
	sc.bufs = &p->buf;
	sc.nbufs = 1;
	sc.out = out ? &p->out : NULL;
	sc.wait_ms = WAIT_MS;
	sc.period_ms = out ? PERIOD_MS : 0;
	if (tb_service_init(&p->svc, &sc)) {
		fprintf(stderr, "bench: tb_service_init failed\n");
		exit(1);
	}
	for (i = 0; i < nrings; i++)
		if (tb_service_add(&p->svc, &p->rings[i].br, &h)) {
			fprintf(stderr, "bench: tb_service_add failed\n");
			exit(1);
		}
	tb_track_process(&p->proc, (uint64_t)getpid() << 16, getpid(),
			 "bench_pipeline");
}

/* The file's size must be what the trace writer says it wrote. */
static int pipe_free(struct pipe *p)
{
	struct stat st;
	unsigned i;
	int ok = 1;

	if (p->file || p->fd >= 0) {
		if ((p->file ? fclose(p->file) : close(p->fd)) ||
		    stat(p->path, &st) ||
		    (uint64_t)st.st_size != p->out.bytes || p->out.error) {
			fprintf(stderr, "bench: VERIFY FAILED: %s has %lld "
				"bytes, the trace writer wrote %llu (error "
				"%d)\n", p->path, (long long)st.st_size,
				(unsigned long long)p->out.bytes,
				p->out.error);
			ok = 0;
		}
		unlink(p->path);
	}
	tb_service_destroy(&p->svc);
	for (i = 0; i < p->nrings; i++)
		ring_free(&p->rings[i]);
	tb_buf_destroy(p->buf);
	free(p->rings);
	free(p->slots);
	free(p->w);
	return ok;
}

/* ------------------------------------------------------------------------
 * Threads.
 */
static void *writer_main(void *arg)
{
	struct pwriter *pw = (struct pwriter *)arg;
	struct pipe *p = pw->p;
	struct tb_ev_writer *ew = &pw->ev;
	uint64_t i = 0;
	unsigned k, tries;
	double c0 = thread_cpu();

	tb_writer_init(&pw->w, pw->ring, pw->id, 0, TB_DROP, pw->scratch);
	snprintf(pw->name, sizeof(pw->name), "writer %u", pw->id);
	tb_track_thread(&pw->thread, tb_ev_uuid((uint64_t)getpid(), pw->id),
			&p->proc, getpid(), 1000 + pw->id, pw->name);
	tb_track_counter(&pw->ctr, tb_ev_uuid((uint64_t)getpid(),
					      0x10000u + pw->id),
			 &pw->thread, "queue depth", TB_UNIT_COUNT);
	tb_ev_writer_init(ew, &pw->w, &pw->thread, NULL, 0);
	while (!__atomic_load_n(&p->stop, __ATOMIC_RELAXED)) {
		for (k = 0; k < INNER; k++, i++) {
			TB_TRACE_BEGIN_W(ew, &cat_bench, "HandleRequest",
					 TB_ARG_UINT("seq", i));
			TB_TRACE_COUNTER_W(ew, &cat_bench, &pw->ctr, i & 1023);
			TB_TRACE_END_W(ew, &cat_bench);
		}
	}
	for (tries = 0; tb_ev_writer_finish(ew) != TB_OK && tries < 100;
	     tries++)
		usleep(1000);
	tb_writer_release(&pw->w);
	pw->cpu = thread_cpu() - c0;
	pw->st = ew->stats;
	return NULL;
}

static void *service_main(void *arg)
{
	struct pipe *p = (struct pipe *)arg;
	double c0 = thread_cpu();

	while (tb_service_poll(&p->svc, now_ms()))
		;
	p->svc_cpu = thread_cpu() - c0;
	return NULL;
}

struct result {
	double secs;		/* writers start to the service's end */
	double events, tried;
	double ev_s, mb_s, svc_ns, wr_ns, mc_ns, svc_pct, file_ns;
	uint64_t passes, trace_bytes;
	uint64_t not_written, full, no_chunk, dropped, ovw, rej;
	int ok;
};

/*
 * ns per event of one memcpy of @bytes, in chunk-sized pieces: wall time,
 * or with @cpu the thread's CPU time (as table 3 times the service).
 */
static double memcpy_ns(uint64_t bytes, double events, int cpu)
{
	static uint8_t *src, *dst;
	double t0;
	uint64_t left = bytes;
	size_t off = 0;

	if (!src) {
		src = (uint8_t *)xcalloc(1, BUF_SIZE);
		dst = (uint8_t *)xcalloc(1, BUF_SIZE);
		memset(src, 0x5a, BUF_SIZE);
		memset(dst, 0xa5, BUF_SIZE);
	}
	t0 = cpu ? thread_cpu() : bench_now();
	while (left) {
		size_t n = left < CHUNK_SIZE ? (size_t)left : CHUNK_SIZE;

		memcpy(dst + off, src + off, n);
		__asm__ __volatile__("" : : "r"(dst) : "memory");
		left -= n;
		off = (off + CHUNK_SIZE) % BUF_SIZE;
	}
	return events > 0 ? ((cpu ? thread_cpu() : bench_now()) - t0) * 1e9 /
			    events : 0;
}

/*
 * ns per event (thread CPU time) of the kernel's share alone: @bytes
 * written to a fresh file on tmpfs with write(2), 32 KiB at a time (as
 * the trace writer's stage hands them out), from memory already warm.
 */
static double file_ns(uint64_t bytes, double events)
{
	static uint8_t src[32768];
	char path[64];
	double t0, t;
	int fd;

	snprintf(path, sizeof(path), "/dev/shm/tbring-bench-file-%d",
		 (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return 0;
	memset(src, 0x5a, sizeof(src));
	t0 = thread_cpu();
	while (bytes) {
		size_t n = bytes < sizeof(src) ? (size_t)bytes : sizeof(src);
		ssize_t r = write(fd, src, n);

		if (r <= 0)
			break;
		bytes -= (uint64_t)r;
	}
	t = thread_cpu() - t0;
	close(fd);
	unlink(path);
	return events > 0 ? t * 1e9 / events : 0;
}

/* Writers on the first @nactive rings (round robin); idle rings hold. */
static void run_pipe(struct pipe *p, unsigned nactive, double seconds,
		     struct result *r)
{
	struct tb_service_stats ss;
	double t0;
	unsigned i;

	memset(r, 0, sizeof(*r));
	for (i = 0; i < p->nwriters; i++) {
		struct pwriter *pw = &p->w[i];

		pw->p = p;
		pw->id = (uint16_t)(1 + i);
		pw->ring = &p->rings[i % nactive].ring;
	}
	t0 = bench_now();
	pthread_create(&p->service, NULL, service_main, p);
	for (i = 0; i < p->nwriters; i++)
		pthread_create(&p->w[i].th, NULL, writer_main, &p->w[i]);
	usleep((useconds_t)(seconds * 1e6));
	__atomic_store_n(&p->stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < p->nwriters; i++)
		pthread_join(p->w[i].th, NULL);
	tb_service_stop(&p->svc);
	pthread_join(p->service, NULL);
	r->secs = bench_now() - t0;
	tb_service_stats(&p->svc, &ss);
	r->passes = ss.passes;
	for (i = 0; i < p->nwriters; i++) {
		r->events += p->w[i].st.events;
		r->tried += p->w[i].st.events + p->w[i].st.not_written;
		r->not_written += p->w[i].st.not_written;
		r->wr_ns += p->w[i].cpu;
	}
	for (i = 0; i < p->nrings; i++) {
		struct tb_ring_stats st;

		tb_ring_stats(&p->rings[i].ring, &st);
		r->full += st.wstat[TB_WS_FULL];
		r->no_chunk += st.wstat[TB_WS_NO_CHUNK];
		r->dropped += st.wstat[TB_WS_DROPPED_FRAGS];
		r->rej += p->rings[i].br.stat[TB_BS_REJECTED];
	}
	r->ovw = tb_buf_stats(p->buf)->chunks_overwritten;
	r->trace_bytes = p->out.bytes;
	r->ev_s = r->events / r->secs;
	r->mb_s = (double)p->out.bytes / r->secs / 1e6;
	r->svc_ns = r->events > 0 ? p->svc_cpu * 1e9 / r->events : 0;
	r->svc_pct = 100 * p->svc_cpu / r->secs;
	r->wr_ns = r->tried > 0 ? r->wr_ns * 1e9 / r->tried : 0;
	r->ok = r->events > 0;
}

/* ------------------------------------------------------------------------
 * Table 1: throughput.
 */
struct row1 {
	char name[16];
	unsigned writers;
	int own;		/* a ring per writer */
};

static int table1_row(const struct row1 *rw, unsigned runs, double seconds,
		      int over)
{
	char name[20];

	struct result res[BENCH_MAX_RUNS];
	double ev[BENCH_MAX_RUNS] = { 0 };
	const struct result *m;
	unsigned i, nrings = rw->own ? rw->writers : 1;
	int ok = 1;

	for (i = 0; i < runs; i++) {
		static struct pipe p;

		pipe_new(&p, rw->writers, nrings, nrings, 2);
		run_pipe(&p, nrings, seconds, &res[i]);
		res[i].mc_ns = memcpy_ns(res[i].trace_bytes, res[i].events,
					 0);
		res[i].ok &= pipe_free(&p);
		ok &= res[i].ok;
		ev[i] = res[i].ev_s;
	}
	m = &res[bench_median_index(ev, runs)];
	snprintf(name, sizeof(name), "%s%s", rw->name, over ? "*" : "");
	printf("%-7s %6.2fM %3.0f%% %6.1f %4.0f%% %6.0f %6.1f %5.1f %6.0f "
	       "%8llu %6llu %6llu %5llu %6llu %4llu\n", name,
	       m->ev_s / 1e6, bench_spread(ev, runs), m->mb_s, m->svc_pct,
	       m->svc_ns,
	       m->mc_ns, m->mc_ns > 0 ? m->svc_ns / m->mc_ns : 0, m->wr_ns,
	       (unsigned long long)m->not_written,
	       (unsigned long long)m->full,
	       (unsigned long long)m->no_chunk,
	       (unsigned long long)m->dropped, (unsigned long long)m->ovw,
	       (unsigned long long)m->rej);
	if (!ok)
		printf("%-7s VERIFY FAILED\n", rw->name);
	fflush(stdout);
	return ok;
}

/* ------------------------------------------------------------------------
 * Table 2: many rings, a few active.
 */
struct row2 {
	char name[16];
	unsigned rings;
	unsigned active;
	int held;		/* idle rings' writers hold a chunk */
};

/* A TracePacket with a timestamp: what an idle thread wrote last. */
static const uint8_t idle_pkt[] = { 0x40, 0x01 };	/* field 8 = 1 */

/*
 * Every idle ring's writer wrote a packet: published, so the first pass
 * drains it and the ring is empty from then on (an idle thread); with
 * @held the writer also opened a fragment it never closes (a thread
 * stopped in the middle of an event), so a lazy drain stops before its
 * chunk every time.
 */
static void make_idle(struct pipe *p, unsigned nactive, int held)
{
	struct tb_span sp;
	unsigned i;

	for (i = nactive; i < p->nrings; i++) {
		struct pring *pr = &p->rings[i];

		pr->idle_scratch = (uint8_t *)xcalloc(1, CHUNK_SIZE);
		if (tb_writer_init(&pr->idle_w, &pr->ring, 1, 0, TB_DROP,
				   pr->idle_scratch) ||
		    tb_writer_write_packet(&pr->idle_w, idle_pkt,
					   sizeof(idle_pkt)) ||
		    (held && tb_writer_open(&pr->idle_w, 16, 0, &sp))) {
			fprintf(stderr, "bench: idle writer failed\n");
			exit(1);
		}
	}
}

/* The cost of two thread_cpu() calls, taken off each timed poll. */
static double cpu_clock_ns(void)
{
	static double ns;
	double t0;
	unsigned i;

	if (ns > 0)
		return ns;
	t0 = thread_cpu();
	for (i = 0; i < 1000; i++)
		thread_cpu();
	ns = (thread_cpu() - t0) * 1e9 / 1000;	/* one call */
	return ns;
}

struct loop_res {
	double work_ns;		/* a pass, LOOP_EVENTS per active ring */
	double work_ev_ns;	/* ... per event */
	double idle_ns;		/* a pass with nothing anywhere */
	double check_ns;	/* tb__service_idle() */
};

/*
 * The passes alone, on this thread, over the same bridges: a service
 * without output that never sleeps (wait_ms 0).  First LOOP_PASSES passes
 * each carrying LOOP_EVENTS events per active ring (written here,
 * untimed, by a writer of its own on each active ring), then IDLE_PASSES
 * passes with nothing anywhere, then as many idle checks.
 */
static void loop_passes(struct pipe *p, unsigned nactive, struct loop_res *lr)
{
	static struct tb_ev_writer ev[2];
	static struct tb_writer w[2];
	static uint8_t scratch[2][CHUNK_SIZE];
	static struct tb_track thread[2], ctr[2];
	struct tb_service s;
	struct tb_service_config sc = p->svc.cfg;
	double t0, t, clk = 2 * cpu_clock_ns() * 1e-9;
	uint64_t now = now_ms(), events = 0;
	unsigned i, j, k, h, busy = 0;

	sc.wait_ms = 0;		/* never sleeps: the pass alone */
	sc.out = NULL;
	sc.period_ms = 0;
	tb_service_destroy(&p->svc);
	if (tb_service_init(&s, &sc))
		exit(1);
	for (i = 0; i < p->nrings; i++)
		tb_service_add(&s, &p->rings[i].br, &h);
	for (j = 0; j < nactive && j < 2; j++) {
		tb_writer_init(&w[j], &p->rings[j].ring, (uint16_t)(200 + j), 0,
			       TB_DROP, scratch[j]);
		tb_track_thread(&thread[j], tb_ev_uuid(1, 200 + j), &p->proc,
				getpid(), 200 + (int)j, "loop");
		tb_track_counter(&ctr[j], tb_ev_uuid(2, 200 + j), &thread[j],
				 "queue depth", TB_UNIT_COUNT);
		tb_ev_writer_init(&ev[j], &w[j], &thread[j], NULL, 0);
	}
	for (i = 0; i < 10; i++)	/* warm: the rings drained */
		tb_service_poll(&s, now);
	t = 0;
	for (i = 0; i < LOOP_PASSES; i++) {
		for (j = 0; j < nactive && j < 2; j++)
			for (k = 0; k < LOOP_EVENTS / 3; k++) {
				TB_TRACE_BEGIN_W(&ev[j], &cat_bench,
						 "HandleRequest",
						 TB_ARG_UINT("seq", k));
				TB_TRACE_COUNTER_W(&ev[j], &cat_bench, &ctr[j],
						   k);
				TB_TRACE_END_W(&ev[j], &cat_bench);
			}
		t0 = thread_cpu();
		tb_service_poll(&s, now);
		t += thread_cpu() - t0 - clk;
	}
	for (j = 0; j < nactive && j < 2; j++) {
		events += ev[j].stats.events;
		tb_ev_writer_finish(&ev[j]);
		tb_writer_release(&w[j]);
	}
	tb_service_flush(&s);
	lr->work_ns = t * 1e9 / LOOP_PASSES;
	lr->work_ev_ns = events ? t * 1e9 / (double)events : 0;
	for (i = 0; i < 10; i++)
		tb_service_poll(&s, now);
	t0 = thread_cpu();
	for (i = 0; i < IDLE_PASSES; i++)
		tb_service_poll(&s, now);
	lr->idle_ns = (thread_cpu() - t0) * 1e9 / IDLE_PASSES;
	t0 = thread_cpu();
	for (i = 0; i < IDLE_PASSES; i++)
		busy += !tb__service_idle(&s);
	lr->check_ns = (thread_cpu() - t0) * 1e9 / IDLE_PASSES;
	if (busy)
		fprintf(stderr, "bench: an idle ring was not idle\n");
	tb_service_destroy(&s);
}

/* The idle pass of the row with only its active rings, by active count. */
static double base_idle[3];

static int table2_row(const struct row2 *rw, unsigned runs, double seconds)
{
	struct result res[BENCH_MAX_RUNS];
	struct loop_res lr[BENCH_MAX_RUNS];
	double ev[BENCH_MAX_RUNS] = { 0 }, idle[BENCH_MAX_RUNS] = { 0 };
	double work[BENCH_MAX_RUNS] = { 0 }, chk[BENCH_MAX_RUNS] = { 0 };
	const struct result *m;
	const struct loop_res *ml;
	unsigned i;
	double per_ring = 0;
	int ok = 1;

	for (i = 0; i < runs; i++) {
		static struct pipe p;

		pipe_new(&p, rw->active, rw->rings, rw->active, 0);
		make_idle(&p, rw->active, rw->held);
		run_pipe(&p, rw->active, seconds, &res[i]);
		loop_passes(&p, rw->active, &lr[i]);
		res[i].ok &= pipe_free(&p);
		ok &= res[i].ok;
		ev[i] = res[i].ev_s;
		work[i] = lr[i].work_ns;
		idle[i] = lr[i].idle_ns;
		chk[i] = lr[i].check_ns;
	}
	m = &res[bench_median_index(ev, runs)];
	ml = &lr[bench_median_index(work, runs)];
	if (rw->rings == rw->active)
		base_idle[rw->active] = bench_median(idle, runs);
	else if (base_idle[rw->active] > 0)
		per_ring = (bench_median(idle, runs) - base_idle[rw->active]) /
			   (rw->rings - rw->active);
	printf("%-10s %5u %2u %6.2fM %4.0f%% %5.0f | %7.1f %4.0f%% %5.1f | "
	       "%7.0f %4.0f%% %6.1f %7.0f %5.1f\n", rw->name, rw->rings,
	       rw->active, m->ev_s / 1e6, bench_spread(ev, runs), m->svc_ns,
	       ml->work_ns / 1e3, bench_spread(work, runs), ml->work_ev_ns,
	       bench_median(idle, runs), bench_spread(idle, runs), per_ring,
	       bench_median(chk, runs), bench_median(chk, runs) / rw->rings);
	if (!ok)
		printf("%-10s VERIFY FAILED\n", rw->name);
	fflush(stdout);
	return ok;
}

/* ------------------------------------------------------------------------
 * Table 3: the service alone, on one thread, writing the trace.
 */
struct row3 {
	char name[16];
	int vec;		/* 0 stdio, 1 writev, 2 writev to nowhere */
};

/* One service pass and a write of the buffer: what table 3 times. */
static __attribute__((noinline)) void svc_pass(struct tb_service *s,
					       uint64_t now)
{
	tb_service_poll(s, now);
	tb_service_write_buffers(s);
}

/*
 * SVC_PASSES passes over one ring, before each of which a writer of this
 * thread writes LOOP_EVENTS events (untimed); the passes (drain, bridge,
 * buffer, trace writer, output) timed with CLOCK_THREAD_CPUTIME_ID.
 */
static void svc_alone(struct pipe *p, struct result *r)
{
	static struct tb_ev_writer ev;
	static struct tb_writer w;
	static uint8_t scratch[CHUNK_SIZE];
	static struct tb_track thread, ctr;
	struct tb_service s;
	struct tb_service_config sc = p->svc.cfg;
	double t0, t = 0, tw = 0, clk = 2 * cpu_clock_ns() * 1e-9;
	uint64_t now = now_ms(), b0;
	unsigned i, k, h;

	sc.wait_ms = 0;
	sc.period_ms = 0;	/* written after each pass, by svc_pass() */
	tb_service_destroy(&p->svc);
	if (tb_service_init(&s, &sc))
		exit(1);
	tb_service_add(&s, &p->rings[0].br, &h);
	tb_writer_init(&w, &p->rings[0].ring, 1, 0, TB_DROP, scratch);
	tb_track_thread(&thread, tb_ev_uuid(1, 1), &p->proc, getpid(), 1,
			"alone");
	tb_track_counter(&ctr, tb_ev_uuid(2, 1), &thread, "queue depth",
			 TB_UNIT_COUNT);
	tb_ev_writer_init(&ev, &w, &thread, NULL, 0);
	memset(r, 0, sizeof(*r));
	b0 = p->out.bytes;
	for (i = 0; i < SVC_PASSES; i++) {
		t0 = thread_cpu();
		for (k = 0; k < LOOP_EVENTS / 3; k++) {
			TB_TRACE_BEGIN_W(&ev, &cat_bench, "HandleRequest",
					 TB_ARG_UINT("seq", k));
			TB_TRACE_COUNTER_W(&ev, &cat_bench, &ctr, k & 1023);
			TB_TRACE_END_W(&ev, &cat_bench);
		}
		tw += thread_cpu() - t0 - clk;
		t0 = thread_cpu();
		svc_pass(&s, now);
		t += thread_cpu() - t0 - clk;
	}
	r->events = (double)ev.stats.events;
	r->not_written = ev.stats.not_written;
	r->trace_bytes = p->out.bytes - b0;
	r->svc_ns = r->events > 0 ? t * 1e9 / r->events : 0;
	r->wr_ns = r->events > 0 ? tw * 1e9 / r->events : 0;
	r->mc_ns = memcpy_ns(r->trace_bytes, r->events, 1);
	r->file_ns = file_ns(r->trace_bytes, r->events);
	tb_ev_writer_finish(&ev);
	tb_writer_release(&w);
	tb_service_flush(&s);
	tb_service_write_buffers(&s);
	tb_service_destroy(&s);
	r->ok = r->events > 0 && !r->not_written;
}

static int table3_row(const struct row3 *rw, unsigned runs)
{
	struct result res[BENCH_MAX_RUNS];
	double ns[BENCH_MAX_RUNS] = { 0 }, x[BENCH_MAX_RUNS] = { 0 };
	const struct result *m;
	unsigned i;
	int ok = 1;

	memset(res, 0, sizeof(res));
	for (i = 0; i < runs; i++) {
		static struct pipe p;

		pipe_new(&p, 1, 1, 1, 1 + rw->vec);
		svc_alone(&p, &res[i]);
		res[i].ok &= pipe_free(&p);
		ok &= res[i].ok;
		ns[i] = res[i].svc_ns;
		x[i] = res[i].mc_ns > 0 ? res[i].svc_ns / res[i].mc_ns : 0;
	}
	m = &res[bench_median_index(ns, runs)];
	printf("%-10s %8.0f %6.1f %4.0f%% %6.1f %6.1f %5.1f %6.1f %6.1f\n",
	       rw->name, m->events, m->trace_bytes / m->events,
	       bench_spread(ns, runs), m->svc_ns, m->mc_ns,
	       bench_median(x, runs), m->file_ns, m->wr_ns);
	if (!ok)
		printf("%-10s VERIFY FAILED\n", rw->name);
	fflush(stdout);
	return ok;
}

/* ------------------------------------------------------------------------
 * main
 */
#define NROWS1	(2 * 5)
#define NROWS2	8
#define NROWS3	3

int main(int argc, char **argv)
{
	static const unsigned wcount[] = { 1, 2, 4, 8, 16 };
	static const struct row2 rows2[NROWS2] = {
		{ "1r-1a", 1, 1, 0 }, { "100r-1a", 100, 1, 0 },
		{ "1000r-1a", 1000, 1, 0 }, { "100r-1a-h", 100, 1, 1 },
		{ "1000r-1a-h", 1000, 1, 1 }, { "2r-2a", 2, 2, 0 },
		{ "100r-2a", 100, 2, 0 }, { "1000r-2a", 1000, 2, 0 },
	};
	static const struct row3 rows3[NROWS3] = {
		{ "svc-stdio", 0 }, { "svc-writev", 1 }, { "svc-null", 2 },
	};
	struct row1 rows1[NROWS1];
	const char *names[NROWS1 + NROWS2 + NROWS3];
	unsigned char sel[NROWS1 + NROWS2 + NROWS3];
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned runs = bench_runs(), n1 = 0, i, failed = 0;
	double seconds = bench_env("TB_BENCH_SECONDS", 0.25, 0.01);

	/* 16 writers only where there are the cores for them */
	for (i = 0; i < 5; i++) {
		if (wcount[i] == 16 && ncpu < 16)
			continue;
		rows1[n1].writers = wcount[i];
		rows1[n1].own = 0;
		snprintf(rows1[n1].name, sizeof(rows1[n1].name), "%uw",
			 wcount[i]);
		n1++;
	}
	for (i = 1; i < 5; i++) {
		if (wcount[i] == 16 && ncpu < 16)
			continue;
		rows1[n1].writers = wcount[i];
		rows1[n1].own = 1;
		snprintf(rows1[n1].name, sizeof(rows1[n1].name), "%uw-own",
			 wcount[i]);
		n1++;
	}
	for (i = 0; i < n1; i++)
		names[i] = rows1[i].name;
	for (i = 0; i < NROWS2; i++)
		names[n1 + i] = rows2[i].name;
	for (i = 0; i < NROWS3; i++)
		names[n1 + NROWS2 + i] = rows3[i].name;
	bench_select(argc, argv, names, n1 + NROWS2 + NROWS3, sel);
	/* the per-ring cost needs the row with only the active rings */
	for (i = 0; i < NROWS2; i++) {
		unsigned j;

		if (!sel[n1 + i] || rows2[i].rings == rows2[i].active)
			continue;
		for (j = 0; j < NROWS2; j++)
			if (rows2[j].rings == rows2[j].active &&
			    rows2[j].active == rows2[i].active)
				sel[n1 + j] = 1;
	}

	printf("tbring pipeline bench: %ld cores online; rows with more "
	       "threads (writers + the\nservice) than cores are "
	       "oversubscribed.  Median of %u runs of %.2f s each.\n\n",
	       ncpu, runs, seconds);
	printf("Table 1: writers -> event layer -> ring(s) -> service -> "
	       "buffer -> trace file\n(Nw: one ring shared by N writers; "
	       "Nw-own: a ring per writer; %u x 4 KiB)\n", active_chunks());
	printf("%-7s %7s %4s %6s %5s %6s %6s %5s %6s | %8s %6s %6s %5s %6s "
	       "%4s\n", "row", "ev/s", "+-", "MB/s", "svc", "svc", "memcpy",
	       "x", "wr", "lost ev", "full", "noch", "drop", "ovw", "rej");
	printf("%-7s %7s %4s %6s %5s %6s %6s %5s %6s |\n", "", "", "",
	       "trace", "cpu", "ns/ev", "ns/ev", "", "ns/ev");
	for (i = 0; i < n1; i++) {
		if (!sel[i])
			continue;
		failed += !table1_row(&rows1[i], runs, seconds,
				      (long)rows1[i].writers + 1 > ncpu);
	}
	printf("* oversubscribed: more threads (writers + service) than "
	       "cores\nThe writers run flat out with TB_DROP: lost ev (ring "
	       "full) is what one service\nthread writing the trace did not "
	       "keep up with; svc cpu says how busy it was.\n");
	printf("\nTable 2: the service with R rings registered, A active, "
	       "the others idle\n(drained empty; rows -h: a writer holds "
	       "its chunk); no trace output.\nthreads: A writer "
	       "threads flat out and the service thread, as in table 1.\n"
	       "loop: passes on one thread, each carrying %u events per "
	       "active ring; idle:\npasses with nothing anywhere; check: "
	       "tb__service_idle(), before each sleep.\n", LOOP_EVENTS);
	printf("%-10s %5s %2s %7s %5s %5s | %7s %5s %5s | %7s %5s %6s %7s "
	       "%5s\n", "row", "R", "A", "ev/s", "+-", "svc", "pass", "+-",
	       "svc", "idle", "+-", "per", "check", "per");
	printf("%-10s %5s %2s %7s %5s %5s | %7s %5s %5s | %7s %5s %6s %7s "
	       "%5s\n", "", "", "", "threads", "", "ns/ev", "us", "",
	       "ns/ev", "ns", "", "ring", "ns", "ring");
	for (i = 0; i < NROWS2; i++)
		if (sel[n1 + i])
			failed += !table2_row(&rows2[i], runs, seconds);
	printf("\nidle per ring: (idle pass at R - idle pass at A) / "
	       "(R - A), what one idle ring\nadds to a pass; check per ring: "
	       "the check over R.  CPU times are the service\nthread's "
	       "(CLOCK_THREAD_CPUTIME_ID); x is svc ns/ev over memcpy ns/ev "
	       "of the\nsame trace bytes.\n");
	printf("\nTable 3: the service alone on one thread, writing the trace "
	       "to a file on tmpfs:\n%u passes, before each a writer of the "
	       "same thread writes %u events\n(untimed).  svc ns/ev: the "
	       "passes' CPU (drain, bridge, buffer, trace writer,\noutput) "
	       "per event; memcpy: one memcpy of the same trace bytes; x: "
	       "svc over\nmemcpy (median of the runs').  svc-stdio: the file "
	       "through stdio\n(fwrite, a 1 MiB buffer); svc-writev: through "
	       "writev(2); svc-null: a writev\ncallback that takes everything "
	       "and writes nothing (the service\nwithout the kernel's share).  "
	       "write: the kernel's share alone, the same bytes\nwritten to "
	       "a fresh tmpfs file with write(2), 32 KiB at a time.  wr: the "
	       "writer's\nCPU per event, on the same thread: one service "
	       "keeps up with wr / svc writers\nflat out.  All CPU times "
	       "(CLOCK_THREAD_CPUTIME_ID).\n", SVC_PASSES, LOOP_EVENTS);
	printf("%-10s %8s %6s %5s %6s %6s %5s %6s %6s\n", "row", "events",
	       "B/ev", "+-", "svc", "memcpy", "x", "write", "wr");
	printf("%-10s %8s %6s %5s %6s %6s %5s %6s %6s\n", "", "", "", "",
	       "ns/ev", "ns/ev", "", "ns/ev", "ns/ev");
	for (i = 0; i < NROWS3; i++)
		if (sel[n1 + NROWS2 + i])
			failed += !table3_row(&rows3[i], runs);
	if (failed) {
		printf("bench: %u row(s) FAILED verification\n", failed);
		return 1;
	}
	return 0;
}
