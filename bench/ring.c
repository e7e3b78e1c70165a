/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/ring.c - throughput of the tbring.h chunk ring.
 *
 * A ring of 64 chunks of 4 KiB, 1 or 2 writer threads writing packets of
 * 64 B, 512 B or 4 KiB flat out with tb_writer_write_packet(), and one
 * reader thread draining lazily (tb_reader_drain(TB_READ_LAZY), then
 * tb_reader_wait() with a 1 ms timeout when a pass found nothing) and
 * flushing with TB_READ_SCRAPE once the writers are done.  Each row runs
 * under the drop or the stall policy.  Three more rows: a reader that
 * scrapes on every pass (TB_READ_SCRAPE), to compare relocations with
 * lazy draining, and one writer paced well below what the reader takes.
 * Then small rings, as firmware has them: 16 and 64 chunks of 256 B and
 * 512 B, 64-B packets, 1 and 2 writers, both policies (rows named
 * "16x256-1w-64-stall" and so on), where the cost of each hand-over of a
 * chunk between writer and reader shows.  Then 4 and 8 writers on 64 x 4
 * KiB: more threads than a 2-core machine has cores, as an application's
 * threads outnumber the cores, where how a thread waits decides who gets
 * the CPU.
 *
 * What waiting costs: each row's details give the polls of stalled
 * writers and of the waiting reader per chunk (TB_WS_POLLS, TB_RS_POLLS),
 * the writers' yields (TB_WS_YIELDS), and the CPU time of the writer
 * threads together and of the reader thread per delivered packet
 * (CLOCK_THREAD_CPUTIME_ID, from the start barrier to each thread's end).
 * Before the table, one line says what a poll, a yield and a futex sleep
 * with its wake cost on this machine, measured with tbsync.h's own
 * primitives: the figures behind TB_SLEEP_POLLS (docs/protocol.md,
 * section 8, "Waiting").
 *
 * Every row prints chunks/s delivered beside packets/s, and the futex
 * calls per delivered chunk: the ring's own counters (tb_ring_stats():
 * TB_WS_FUTEX_WAITS + TB_WS_FUTEX_WAKES + TB_RS_FUTEX_WAITS +
 * TB_RS_FUTEX_WAKES, every wait and wake system call of writers and
 * reader together), with getrusage(RUSAGE_SELF)'s voluntary context
 * switches per chunk beside them as a cross-check that counts what the
 * kernel saw (it includes the few switches of starting and joining the
 * threads).
 *
 * Method.  Each row runs one untimed warm-up run (TB_BENCH_WARMUP
 * seconds, default 0.2: the code, the allocator, thread creation and the
 * CPU frequency warm up; its result is verified and thrown away), then
 * TB_BENCH_RUNS (default 5) timed runs of TB_BENCH_SECONDS (default 0.5)
 * each.  Every run, warm-up included, gets a fresh ring whose memory is
 * zero-filled (its pages faulted in) before the clock starts; the threads
 * are created and meet at a barrier first.  A run is timed from that
 * barrier until the reader has delivered everything, flush included.  A
 * row prints its median run (for an even count the lower middle one), so
 * all its columns come from one real run, and the spread of its runs.
 *
 * Nothing is taken on trust: every packet carries {writer, seq, length,
 * check} in front and ~check in its last four bytes.  The reader
 * reassembles packets across chunks, checks each one, checks per-writer
 * order, and sums the checks; a run fails (and the bench exits 1) unless
 * the reader delivered exactly the packets the writers were told were
 * written, with the same check sum.  A bench cannot win by dropping.
 *
 * The baseline, measured in the same run: right after each timed run, one
 * thread stamps the same packets (same size, same header) and memcpys
 * them into 64 x 4 KiB of memory; the median of BASELINE_SLICES slices of
 * BASELINE_S seconds, after one untimed slice.  The row prints the median
 * of those per-run baselines and ratio = the row's MB/s / that median.
 * No figure here comes from another run or another machine.
 *
 * usage: bench_ring [-l | --list] [PATTERN...]  runs the rows whose whole
 * name matches a PATTERN (fnmatch(3): "1w-512-stall" is that row alone,
 * "*-stall*" every stall row), or every row; -l lists the names.
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tbring.h"
#include "bench.h"

#include <sys/resource.h>

#define CHUNK_SIZE	4096u	/* the default geometry, and the largest */
#define NUM_CHUNKS	64u
#define MAX_WRITERS	8u
#define PKT_MAX		4096u
#define PKT_HDR		16u	/* writer, seq, len, check */
#define WAIT_MS		1u	/* reader's idle wait */
#define BASELINE_S	0.04	/* memcpy baseline: slice ... */
#define BASELINE_SLICES	3	/* ... median of this many per run */

/* ------------------------------------------------------------------------
 * Packets.
 */
static uint32_t pkt_check(uint32_t writer, uint32_t seq, uint32_t len)
{
	uint32_t h = writer * 0x9e3779b1u ^ seq * 0x85ebca6bu ^
		     len * 0xc2b2ae35u;

	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	return h;
}

/* Stamps header and tail into @pkt; returns the check. */
static uint32_t pkt_stamp(uint8_t *pkt, uint32_t writer, uint32_t seq,
			  uint32_t len)
{
	uint32_t h[4], tail;

	h[0] = writer;
	h[1] = seq;
	h[2] = len;
	h[3] = pkt_check(writer, seq, len);
	tail = ~h[3];
	memcpy(pkt, h, sizeof(h));
	memcpy(pkt + len - sizeof(tail), &tail, sizeof(tail));
	return h[3];
}

static void *xalloc(size_t size)
{
	void *p;

	if (posix_memalign(&p, 64, size)) {
		fprintf(stderr, "bench: out of memory\n");
		exit(2);
	}
	memset(p, 0, size);
	return p;
}

/* ------------------------------------------------------------------------
 * One configuration.
 */
struct config {
	uint32_t chunk_size;	/* the ring's geometry */
	uint32_t num_chunks;
	unsigned writers;
	uint32_t len;
	enum tb_full_policy policy;
	enum tb_read_mode mode;	/* of the reader's passes while running */
	double pace;		/* packets/s per writer; 0: flat out */
	int ideal;		/* the ideal hand-over, not tbring */
	char name[48];		/* what the row filter matches */
	int twin;		/* the same row under the other policy, or -1 */
};

struct writer_ctx {
	struct bench *b;
	uint16_t id;
	uint8_t pkt[PKT_MAX];
	uint8_t scratch[CHUNK_SIZE];
	/* results, read after join */
	uint64_t attempted;
	uint64_t written;
	uint64_t failed[8];	/* by -result */
	uint64_t sum;		/* checks of written packets */
	double cpu;		/* this thread's CPU seconds in the run */
};

/* The reader's reassembly state for one writer. */
struct rx_writer {
	uint32_t pending;	/* inside a packet */
	uint32_t off;		/* its bytes so far */
	uint8_t hdr[PKT_HDR];
	uint8_t tail[4];
	uint32_t next_seq;
	uint64_t delivered;
	uint64_t sum;
	uint64_t partial;	/* heads whose tail never came */
	uint64_t orphans;	/* tails whose head never came */
};

struct bench {
	const struct config *cfg;
	struct tb_ring ring;
	void *mem;
	uint32_t stop;		/* writers: stop writing */
	uint32_t done;		/* reader: writers joined, flush */
	pthread_barrier_t start;
	struct writer_ctx *w[MAX_WRITERS];
	/* reader-private */
	struct tb_reader rd;
	uint8_t *rscratch;
	struct rx_writer rx[MAX_WRITERS + 1];
	uint64_t bad;		/* packets that failed a check */
	uint64_t idle_waits;
	uint64_t passes;
	double rcpu;		/* the reader thread's CPU seconds */
	int eproto;
};

struct result {
	double secs;
	long csw;		/* voluntary context switches, whole process */
	double cpu;		/* CPU seconds of the process over the run */
	double wcpu, rcpu;	/* of the writer threads together, the reader */
	uint64_t attempted, written, delivered, bad, partial, orphans;
	uint64_t failed[8];
	uint64_t idle_waits, passes;
	struct tb_ring_stats st;
	double mc_mbps;		/* memcpy baseline */
	int verified;
};

static uint32_t load_flag(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void set_flag(uint32_t *p)
{
	__atomic_store_n(p, 1, __ATOMIC_RELEASE);
}

/* The calling thread's CPU time, in seconds. */
static double thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------------
 * Writers.
 */
static void pace_until(double t)
{
	while (bench_now() < t)
		;
}

static void *writer_main(void *arg)
{
	struct writer_ctx *wc = arg;
	struct bench *b = wc->b;
	const struct config *c = b->cfg;
	uint32_t len = c->len, seq = 0;
	struct tb_writer w;
	double t0 = 0, step = c->pace > 0 ? 1.0 / c->pace : 0, cpu0;

	memset(wc->pkt, 0xa5, sizeof(wc->pkt));
	tb_writer_init(&w, &b->ring, wc->id, 1, c->policy, wc->scratch);
	pthread_barrier_wait(&b->start);
	cpu0 = thread_cpu();
	if (step > 0)
		t0 = bench_now();
	while (!load_flag(&b->stop)) {
		uint32_t check = pkt_stamp(wc->pkt, wc->id, seq, len);
		int ret;

		if (step > 0)
			pace_until(t0 + seq * step);
		seq++;
		ret = tb_writer_write_packet(&w, wc->pkt, len);
		if (ret == TB_OK) {
			wc->written++;
			wc->sum += check;
		} else {
			wc->failed[-ret & 7]++;
		}
	}
	tb_writer_release(&w);
	wc->attempted = seq;
	wc->cpu = thread_cpu() - cpu0;
	return NULL;
}

/* ------------------------------------------------------------------------
 * Reader: reassembles packets across chunks and checks each one.
 */
static void rx_feed(struct rx_writer *x, const uint8_t *p, uint32_t n)
{
	if (x->off < PKT_HDR)
		memcpy(x->hdr + x->off, p,
		       n < PKT_HDR - x->off ? n : PKT_HDR - x->off);
	if (n >= 4) {
		memcpy(x->tail, p + n - 4, 4);
	} else {
		memmove(x->tail, x->tail + n, 4 - n);
		memcpy(x->tail + 4 - n, p, n);
	}
	x->off += n;
}

static void rx_finish(uint64_t *bad, struct rx_writer *x, uint16_t writer)
{
	uint32_t h[4], tail;

	memcpy(h, x->hdr, sizeof(h));
	memcpy(&tail, x->tail, sizeof(tail));
	if (x->off < PKT_HDR + 4 || h[0] != writer || h[2] != x->off ||
	    h[3] != pkt_check(h[0], h[1], h[2]) || tail != ~h[3] ||
	    h[1] < x->next_seq) {
		(*bad)++;
		return;
	}
	x->next_seq = h[1] + 1;
	x->delivered++;
	x->sum += h[3];
}

static void on_chunk(void *ctx, const struct tb_chunk_view *v)
{
	struct bench *b = ctx;
	const uint8_t *p = v->payload;
	struct rx_writer *x;
	uint32_t i;

	if (v->writer < 1 || v->writer > b->cfg->writers) {
		b->bad++;
		return;
	}
	x = &b->rx[v->writer];
	for (i = 0; i < v->nfrags; p += v->sizes[i], i++) {
		if (i > 0 || !(v->flags & TB_F_CONT_PREV)) {
			x->partial += x->pending;	/* its tail was lost */
			x->pending = 1;
			x->off = 0;
		} else if (!x->pending) {
			x->orphans++;			/* its head was lost */
			continue;
		}
		rx_feed(x, p, v->sizes[i]);
		if (i + 1 == v->nfrags && (v->flags & TB_F_CONT_NEXT))
			break;				/* goes on */
		rx_finish(&b->bad, x, v->writer);
		x->pending = 0;
	}
}

static void *reader_main(void *arg)
{
	struct bench *b = arg;
	enum tb_read_mode mode = b->cfg->mode;
	unsigned rounds, n;
	double cpu0;

	tb_reader_init(&b->rd, &b->ring, b->rscratch);
	pthread_barrier_wait(&b->start);
	cpu0 = thread_cpu();
	while (!load_flag(&b->done)) {
		if (tb_reader_drain(&b->rd, b->cfg->num_chunks, mode,
				    on_chunk, b, &n) < 0)
			goto eproto;
		b->passes++;
		if (n == 0) {
			b->idle_waits++;
			tb_reader_wait(&b->rd, WAIT_MS);
		}
	}
	/* flush: the writers are gone, take everything */
	for (rounds = 0; rounds < 1000; rounds++) {
		struct tb_ring_stats st;

		if (tb_reader_drain(&b->rd, ~0u, TB_READ_SCRAPE, on_chunk, b,
				    &n) < 0)
			goto eproto;
		tb_ring_stats(&b->ring, &st);
		if (n == 0 && st.write_pos == b->rd.pos)
			break;
	}
	b->rcpu = thread_cpu() - cpu0;
	return NULL;
eproto:
	b->eproto = 1;
	b->rcpu = thread_cpu() - cpu0;
	return NULL;
}

/* ------------------------------------------------------------------------
 * The memcpy baseline: the same packets, stamped the same way, copied by
 * one thread into a ring of 64 x 4 KiB buffers.  One untimed slice warms
 * the buffers and the loop; then the median of BASELINE_SLICES slices of
 * BASELINE_S seconds.
 */
static volatile uint32_t sink;

static double memcpy_slice(uint8_t *dst, uint8_t *src, uint32_t len)
{
	size_t off = 0, cap = (size_t)CHUNK_SIZE * NUM_CHUNKS;
	uint64_t n = 0;
	uint32_t sum = 0, i;
	double t0 = bench_now(), t;

	do {
		for (i = 0; i < 256; i++, n++) {
			sum += pkt_stamp(src, 1, (uint32_t)n, len);
			if (off + len > cap)
				off = 0;
			memcpy(dst + off, src, len);
			off += len;
		}
		t = bench_now();
	} while (t - t0 < BASELINE_S);
	sink = sum ^ dst[n % cap];
	return (double)n * len / (t - t0) / 1e6;
}

static double memcpy_mbps(uint32_t len)
{
	uint8_t *dst = xalloc((size_t)CHUNK_SIZE * NUM_CHUNKS);
	uint8_t *src = xalloc(PKT_MAX);
	double v[BASELINE_SLICES];
	int i;

	memset(src, 0xa5, PKT_MAX);
	(void)memcpy_slice(dst, src, len);	/* warm-up, not counted */
	for (i = 0; i < BASELINE_SLICES; i++)
		v[i] = memcpy_slice(dst, src, len);
	free(dst);
	free(src);
	return bench_median(v, BASELINE_SLICES);
}

/* ------------------------------------------------------------------------
 * The ideal hand-over: what the hardware allows a chunk ring on this
 * machine, the baseline of the rows named "...-ideal".  One writer and one
 * reader, the same geometry (chunk size and count) and the same two copies
 * (the packet into the chunk, the chunk into the reader's scratch), and no
 * protocol: per chunk one release store of its sequence word by the
 * writer and one acquire load of it by the reader, which spins.  The
 * writer packs the packet stream into the chunks' payloads back to back,
 * cut wherever a chunk ends, and learns that the reader freed chunks
 * from the reader's count of chunks taken, loaded (acquire) only when its
 * cached copy says the ring is full.  The reader checks every packet as
 * on_chunk() does.  Each chunk starts with the 4-byte count of the bytes
 * used, against tbring's 8-byte header and 2 bytes per fragment.
 */
#define IDEAL_HDR	4u

struct ideal {
	const struct config *cfg;
	uint8_t *mem;		/* num_chunks x chunk_size */
	uint32_t *seq;		/* per chunk, a line each: its position + 1 */
	uint32_t *taken;	/* the reader's: chunks taken, a line */
	uint32_t *end;		/* the writer's: chunks published + 1, at stop */
	uint32_t stop;
	pthread_barrier_t start;
	struct writer_ctx *w;
	struct rx_writer rx;
	uint8_t *rscratch;
	uint64_t chunks, bad;
};

#define IDEAL_LINE_WORDS	16u	/* a 64-byte line of uint32_t */

/*
 * One poll's pause, and after IDEAL_SPIN polls in a row a sched_yield():
 * never reached while both threads have a CPU, but on a machine where
 * they share one a pure spin would wait out whole scheduler slices.
 */
#define IDEAL_SPIN	1024u

static void ideal_relax(uint32_t *polls)
{
	if (++*polls % IDEAL_SPIN == 0) {
		sched_yield();
		return;
	}
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* Publishes chunk @pos with @used payload bytes. */
static void ideal_publish(struct ideal *d, uint32_t pos, uint32_t used)
{
	uint32_t n = d->cfg->num_chunks;
	uint8_t *chunk = d->mem + (size_t)(pos % n) * d->cfg->chunk_size;

	memcpy(chunk, &used, sizeof(used));
	/* release: pairs with the reader's acquire load; the bytes first */
	__atomic_store_n(&d->seq[(pos % n) * IDEAL_LINE_WORDS], pos + 1,
			 __ATOMIC_RELEASE);
}

/* Waits until chunk @pos is free; returns the reader's count seen. */
static uint32_t ideal_room(struct ideal *d, uint32_t pos, uint32_t taken)
{
	uint32_t polls = 0;

	while (pos - taken >= d->cfg->num_chunks) {
		/* acquire: pairs with the reader's release store of taken */
		taken = __atomic_load_n(d->taken, __ATOMIC_ACQUIRE);
		if (pos - taken >= d->cfg->num_chunks)
			ideal_relax(&polls);
	}
	return taken;
}

static void *ideal_writer(void *arg)
{
	struct ideal *d = arg;
	struct writer_ctx *wc = d->w;
	uint32_t len = d->cfg->len, cap = d->cfg->chunk_size - IDEAL_HDR;
	uint32_t seq = 0, pos = 0, taken = 0, used = 0;
	uint8_t *chunk;

	memset(wc->pkt, 0xa5, sizeof(wc->pkt));
	pthread_barrier_wait(&d->start);
	chunk = d->mem + IDEAL_HDR;
	while (!load_flag(&d->stop)) {
		uint32_t check = pkt_stamp(wc->pkt, wc->id, seq, len), off = 0;

		seq++;
		while (off < len) {
			uint32_t n = len - off < cap - used ? len - off :
				     cap - used;

			memcpy(chunk + used, wc->pkt + off, n);
			off += n;
			used += n;
			if (used < cap)
				break;
			ideal_publish(d, pos++, used);
			taken = ideal_room(d, pos, taken);
			chunk = d->mem + (size_t)(pos % d->cfg->num_chunks) *
				d->cfg->chunk_size + IDEAL_HDR;
			used = 0;
		}
		wc->written++;
		wc->sum += check;
	}
	if (used)
		ideal_publish(d, pos++, used);
	/* release: after the last chunk's sequence word */
	__atomic_store_n(d->end, pos + 1, __ATOMIC_RELEASE);
	wc->attempted = seq;
	return NULL;
}

/* Feeds @n bytes of the packet stream to the packet checks. */
static void ideal_feed(struct ideal *d, const uint8_t *p, uint32_t n)
{
	struct rx_writer *x = &d->rx;
	uint32_t len = d->cfg->len;

	while (n) {
		uint32_t k = len - x->off < n ? len - x->off : n;

		rx_feed(x, p, k);
		p += k;
		n -= k;
		if (x->off < len)
			break;
		rx_finish(&d->bad, x, 1);
		x->off = 0;
	}
}

static void *ideal_reader(void *arg)
{
	struct ideal *d = arg;
	uint32_t n = d->cfg->num_chunks, pos = 0, used, polls = 0;

	pthread_barrier_wait(&d->start);
	for (;;) {
		const uint8_t *chunk = d->mem + (size_t)(pos % n) *
				       d->cfg->chunk_size;

		/* acquire: pairs with the writer's release in ideal_publish */
		if (__atomic_load_n(&d->seq[(pos % n) * IDEAL_LINE_WORDS],
				    __ATOMIC_ACQUIRE) != pos + 1) {
			/* acquire: pairs with the writer's store of end */
			if (__atomic_load_n(d->end, __ATOMIC_ACQUIRE) == pos + 1)
				break;
			ideal_relax(&polls);
			continue;
		}
		polls = 0;
		memcpy(&used, chunk, sizeof(used));
		if (used > d->cfg->chunk_size - IDEAL_HDR) {
			d->bad++;
			break;
		}
		memcpy(d->rscratch, chunk + IDEAL_HDR, used);
		pos++;
		/* release: pairs with the writer's acquire in ideal_room */
		__atomic_store_n(d->taken, pos, __ATOMIC_RELEASE);
		ideal_feed(d, d->rscratch, used);
	}
	d->chunks = pos;
	return NULL;
}

/* ------------------------------------------------------------------------
 * Running and checking one configuration.
 */
static void sleep_s(double s)
{
	struct timespec ts;

	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts))
		;
}

static void collect(struct bench *b, struct result *r)
{
	unsigned i, k;
	uint64_t wsum = 0, rsum = 0;

	for (i = 0; i < b->cfg->writers; i++) {
		struct writer_ctx *wc = b->w[i];
		struct rx_writer *x = &b->rx[wc->id];

		r->attempted += wc->attempted;
		r->written += wc->written;
		for (k = 0; k < 8; k++)
			r->failed[k] += wc->failed[k];
		wsum += wc->sum;
		r->wcpu += wc->cpu;
		r->delivered += x->delivered;
		r->partial += x->partial + x->pending;
		r->orphans += x->orphans;
		rsum += x->sum;
	}
	r->bad = b->bad;
	r->idle_waits = b->idle_waits;
	r->passes = b->passes;
	r->rcpu = b->rcpu;
	tb_ring_stats(&b->ring, &r->st);
	r->verified = !b->eproto && !r->bad && r->delivered == r->written &&
		      rsum == wsum;
	if (r->verified)
		return;
	fprintf(stderr, "bench: VERIFY FAILED: written %llu delivered %llu "
		"bad %llu eproto %d sums %s\n",
		(unsigned long long)r->written,
		(unsigned long long)r->delivered,
		(unsigned long long)r->bad, b->eproto,
		rsum == wsum ? "equal" : "differ");
}

static double cpu_secs(const struct rusage *a, const struct rusage *b)
{
	return (double)(b->ru_utime.tv_sec - a->ru_utime.tv_sec) +
	       (double)(b->ru_stime.tv_sec - a->ru_stime.tv_sec) +
	       1e-6 * (double)(b->ru_utime.tv_usec - a->ru_utime.tv_usec +
			       b->ru_stime.tv_usec - a->ru_stime.tv_usec);
}

/* One run of the ideal hand-over, as run_config() runs tbring. */
static void run_ideal(const struct config *c, double secs, int baseline,
		      struct result *r)
{
	struct ideal *d = xalloc(sizeof(*d));
	struct rusage ru0, ru1;
	pthread_t wt, rt;
	double t0;

	memset(r, 0, sizeof(*r));
	d->cfg = c;
	d->mem = xalloc((size_t)c->chunk_size * c->num_chunks);
	d->seq = xalloc((size_t)c->num_chunks * IDEAL_LINE_WORDS * 4);
	d->taken = xalloc(IDEAL_LINE_WORDS * 4);
	d->end = xalloc(IDEAL_LINE_WORDS * 4);
	d->rscratch = xalloc(c->chunk_size);
	d->w = xalloc(sizeof(*d->w));
	d->w->id = 1;
	pthread_barrier_init(&d->start, NULL, 3);
	pthread_create(&wt, NULL, ideal_writer, d);
	pthread_create(&rt, NULL, ideal_reader, d);
	pthread_barrier_wait(&d->start);
	getrusage(RUSAGE_SELF, &ru0);
	t0 = bench_now();
	sleep_s(secs);
	set_flag(&d->stop);
	pthread_join(wt, NULL);
	pthread_join(rt, NULL);
	r->secs = bench_now() - t0;
	getrusage(RUSAGE_SELF, &ru1);
	r->csw = ru1.ru_nvcsw - ru0.ru_nvcsw;
	r->cpu = cpu_secs(&ru0, &ru1);
	r->attempted = d->w->attempted;
	r->written = d->w->written;
	r->delivered = d->rx.delivered;
	r->bad = d->bad;
	r->partial = d->rx.off != 0;
	r->st.rstat[TB_RS_EMITTED] = (uint32_t)d->chunks;
	r->verified = !d->bad && !r->partial && r->delivered == r->written &&
		      d->rx.sum == d->w->sum;
	if (!r->verified)
		fprintf(stderr, "bench: VERIFY FAILED (ideal): written %llu "
			"delivered %llu bad %llu\n",
			(unsigned long long)r->written,
			(unsigned long long)r->delivered,
			(unsigned long long)d->bad);
	if (baseline)
		r->mc_mbps = memcpy_mbps(c->len);
	pthread_barrier_destroy(&d->start);
	free(d->w);
	free(d->rscratch);
	free(d->end);
	free(d->taken);
	free(d->seq);
	free(d->mem);
	free(d);
}

/* One run of @c for @secs; with @baseline, the memcpy baseline after it. */
static void run_config(const struct config *c, double secs, int baseline,
		       struct result *r)
{
	size_t size = tb_ring_size(c->chunk_size, c->num_chunks);
	pthread_t wt[MAX_WRITERS], rt;
	struct bench *b;
	struct rusage ru0, ru1;
	unsigned i;
	double t0;

	if (c->ideal) {
		run_ideal(c, secs, baseline, r);
		return;
	}
	b = xalloc(sizeof(*b));
	memset(r, 0, sizeof(*r));
	b->cfg = c;
	b->mem = xalloc(size);
	b->rscratch = xalloc(c->chunk_size);
	if (tb_ring_init(&b->ring, b->mem, size, c->chunk_size,
			 c->num_chunks)) {
		fprintf(stderr, "bench: tb_ring_init failed\n");
		exit(2);
	}
	pthread_barrier_init(&b->start, NULL, c->writers + 2);
	for (i = 0; i < c->writers; i++) {
		b->w[i] = xalloc(sizeof(*b->w[i]));
		b->w[i]->b = b;
		b->w[i]->id = (uint16_t)(i + 1);
		pthread_create(&wt[i], NULL, writer_main, b->w[i]);
	}
	pthread_create(&rt, NULL, reader_main, b);
	pthread_barrier_wait(&b->start);
	getrusage(RUSAGE_SELF, &ru0);
	t0 = bench_now();
	sleep_s(secs);
	set_flag(&b->stop);
	for (i = 0; i < c->writers; i++)
		pthread_join(wt[i], NULL);
	set_flag(&b->done);
	pthread_join(rt, NULL);
	r->secs = bench_now() - t0;
	getrusage(RUSAGE_SELF, &ru1);
	r->csw = ru1.ru_nvcsw - ru0.ru_nvcsw;
	r->cpu = cpu_secs(&ru0, &ru1);
	collect(b, r);
	if (baseline)
		r->mc_mbps = memcpy_mbps(c->len);
	pthread_barrier_destroy(&b->start);
	for (i = 0; i < c->writers; i++)
		free(b->w[i]);
	free(b->rscratch);
	free(b->mem);
	free(b);
}

/* ------------------------------------------------------------------------
 * What waiting costs here, with tbsync.h's own primitives: a poll (a
 * relaxed load and a CPU pause, as both sides' spins do), a yield with
 * nothing else to run, and a futex sleep ended by a wake from another
 * thread: the sleeper's CPU, the waker's, and how long after the wake
 * the sleeper runs again.  WAIT_ROUNDS sleeps, WAIT_GAP_US apart.
 */
#define WAIT_ROUNDS	400u
#define WAIT_GAP_US	200u

struct wait_probe {
	uint32_t word;		/* the futex: the round the sleeper waits past */
	uint32_t ready;		/* the sleeper's round, once it waits */
	double woke_at[WAIT_ROUNDS];
	double waked_at[WAIT_ROUNDS];
	double cpu;		/* the sleeper's CPU seconds */
};

static void *wait_sleeper(void *arg)
{
	struct wait_probe *w = arg;
	double cpu0 = thread_cpu();
	uint32_t i;

	for (i = 0; i < WAIT_ROUNDS; i++) {
		__atomic_store_n(&w->ready, i + 1, __ATOMIC_RELEASE);
		while (__atomic_load_n(&w->word, __ATOMIC_ACQUIRE) == i)
			tb__wait(&w->word, i, 1000);
		w->woke_at[i] = bench_now();
	}
	w->cpu = thread_cpu() - cpu0;
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void print_wait_costs(void)
{
	static struct wait_probe w;
	uint32_t i, word = 0, n = 1u << 20;
	double t, poll_ns, yield_ns, wake_cpu, lat[WAIT_ROUNDS];
	pthread_t th;

	t = thread_cpu();
	for (i = 0; i < n; i++) {
		if (tb_atomic_load(&word, TB_RLX))
			break;
		tb__cpu_relax();
	}
	poll_ns = (thread_cpu() - t) / n * 1e9;
	t = thread_cpu();
	for (i = 0; i < 20000; i++)
		tb__yield();
	yield_ns = (thread_cpu() - t) / 20000 * 1e9;
	if (!TB_HAVE_WAIT) {
		printf("waiting here: a poll %.0f ns; no futex\n\n", poll_ns);
		return;
	}
	memset(&w, 0, sizeof(w));
	pthread_create(&th, NULL, wait_sleeper, &w);
	wake_cpu = 0;
	for (i = 0; i < WAIT_ROUNDS; i++) {
		while (__atomic_load_n(&w.ready, __ATOMIC_ACQUIRE) != i + 1)
			sched_yield();
		sleep_s(WAIT_GAP_US * 1e-6);
		t = thread_cpu();
		w.waked_at[i] = bench_now();
		__atomic_store_n(&w.word, i + 1, __ATOMIC_RELEASE);
		tb__wake(&w.word);
		wake_cpu += thread_cpu() - t;
	}
	pthread_join(th, NULL);
	for (i = 0; i < WAIT_ROUNDS; i++)
		lat[i] = (w.woke_at[i] - w.waked_at[i]) * 1e6;
	qsort(lat, WAIT_ROUNDS, sizeof(lat[0]), cmp_double);
	printf("waiting here: a poll %.0f ns, a yield %.0f ns; a futex sleep "
	       "costs the sleeper %.1f us of CPU\nand its wake the waker %.1f "
	       "us; the sleeper runs %.1f us after the wake (median; 90%%: "
	       "%.1f us):\na sleep and its wake cost %.0f polls "
	       "(TB_SLEEP_POLLS is %u).\n\n",
	       poll_ns, yield_ns, w.cpu / WAIT_ROUNDS * 1e6,
	       wake_cpu / WAIT_ROUNDS * 1e6, lat[WAIT_ROUNDS / 2],
	       lat[WAIT_ROUNDS * 9 / 10],
	       (w.cpu + wake_cpu) / WAIT_ROUNDS * 1e9 / poll_ns,
	       TB_SLEEP_POLLS);
}

/* ------------------------------------------------------------------------
 * The table.
 */
static void print_header(void)
{
	printf("%-22s %6s %6s %6s %6s %6s %6s %6s %6s %6s %4s | %6s %5s\n",
	       "row", "Mpkt/s", "spread", "Mch/s", "MB/s", "loss%", "reloc%",
	       "pkt/ch", "fx/ch", "csw/ch", "cpu%", "memcpy", "ratio");
	printf("%-22s %6s %6s %6s %6s %6s %6s %6s %6s %6s %4s | %6s %5s\n",
	       "", "median", "%", "", "", "", "", "", "", "", "", "MB/s", "");
}

static void config_name(struct config *c)
{
	char len[16], geo[24] = "";

	if (c->len >= 1024)
		snprintf(len, sizeof(len), "%uK", c->len / 1024);
	else
		snprintf(len, sizeof(len), "%u", c->len);
	if (c->chunk_size != CHUNK_SIZE || c->num_chunks != NUM_CHUNKS)
		snprintf(geo, sizeof(geo), "%ux%u-", c->num_chunks,
			 c->chunk_size);
	snprintf(c->name, sizeof(c->name), "%s%uw-%s-%s%s%s", geo, c->writers,
		 len, c->ideal ? "ideal" :
		 c->policy == TB_STALL ? "stall" : "drop",
		 c->pace > 0 ? "-paced" : "",
		 c->mode == TB_READ_SCRAPE ? "-scrape" : "");
}

static double mpkt_of(const struct result *r)
{
	return (double)r->delivered / r->secs / 1e6;
}

/* Futex calls of writers and reader together, from the ring's counters. */
static uint32_t futex_calls(const struct result *r)
{
	const uint32_t *ws = r->st.wstat, *rs = r->st.rstat;

	return ws[TB_WS_FUTEX_WAITS] + ws[TB_WS_FUTEX_WAKES] +
	       rs[TB_RS_FUTEX_WAITS] + rs[TB_RS_FUTEX_WAKES];
}

/* A row: its median run @r, the spread of its runs, the median baseline. */
static void print_row(const struct config *c, const struct result *r,
		      double spread, double mc_mbps, int verified)
{
	const uint32_t *ws = r->st.wstat, *rs = r->st.rstat;
	double mpkt = mpkt_of(r);
	double mbps = mpkt * c->len;
	double loss = r->attempted ?
		      100.0 * (double)(r->attempted - r->delivered) /
		      (double)r->attempted : 0;
	double chunks = rs[TB_RS_EMITTED] ? rs[TB_RS_EMITTED] : 1;

	printf("%-22s %6.2f %6.0f %6.2f %6.0f %6.2f %6.2f %6.1f %6.3f %6.3f "
	       "%4.0f | %6.0f %5.2f%s\n",
	       c->name, mpkt, spread, rs[TB_RS_EMITTED] / r->secs / 1e6,
	       mbps, loss, 100.0 * ws[TB_WS_RELOCATIONS] / chunks,
	       (double)r->delivered / chunks, futex_calls(r) / chunks,
	       (double)r->csw / chunks, 100.0 * r->cpu / r->secs, mc_mbps,
	       mbps / mc_mbps, verified ? "" : "  VERIFY FAILED");
}

static void print_details(const struct config *c, const struct result *r,
			  const double *mpkt, unsigned runs)
{
	const uint32_t *ws = r->st.wstat, *rs = r->st.rstat;
	double chunks = rs[TB_RS_EMITTED] ? rs[TB_RS_EMITTED] : 1;
	double delivered = r->delivered ? (double)r->delivered : 1;
	unsigned i;

	printf("%-22s written %llu delivered %llu failed full %llu "
	       "no-chunk %llu dropped %llu; chunks %u, scrapes %u, holes %u, "
	       "relocations %u, retry-later %u, "
	       "stalls %u, dropped frags %u, partial %llu, orphans %llu, "
	       "idle waits %llu of %llu passes; futex: writers wait %u wake "
	       "%u, reader wait %u wake %u; voluntary csw %ld; polls per "
	       "chunk: writers %.1f reader %.1f; writers' yields per chunk "
	       "%.3f; CPU ns per packet: "
	       "writers %.1f reader %.1f; Mpkt/s of the runs:", c->name,
	       (unsigned long long)r->written,
	       (unsigned long long)r->delivered,
	       (unsigned long long)r->failed[-TB_FULL],
	       (unsigned long long)r->failed[-TB_NO_CHUNK],
	       (unsigned long long)r->failed[-TB_DROPPED],
	       rs[TB_RS_EMITTED], rs[TB_RS_SCRAPES], rs[TB_RS_HOLES],
	       ws[TB_WS_RELOCATIONS], rs[TB_RS_RETRY_LATER],
	       ws[TB_WS_STALLS], ws[TB_WS_DROPPED_FRAGS],
	       (unsigned long long)r->partial,
	       (unsigned long long)r->orphans,
	       (unsigned long long)r->idle_waits,
	       (unsigned long long)r->passes,
	       ws[TB_WS_FUTEX_WAITS], ws[TB_WS_FUTEX_WAKES],
	       rs[TB_RS_FUTEX_WAITS], rs[TB_RS_FUTEX_WAKES], r->csw,
	       ws[TB_WS_POLLS] / chunks, rs[TB_RS_POLLS] / chunks,
	       ws[TB_WS_YIELDS] / chunks,
	       1e9 * r->wcpu / delivered, 1e9 * r->rcpu / delivered);
	for (i = 0; i < runs; i++)
		printf(" %.2f", mpkt[i]);
	printf("\n");
}

#define NCONFIGS	50u

static struct config *new_config(struct config *cfgs, unsigned *n,
				 uint32_t chunk_size, uint32_t num_chunks,
				 unsigned writers, uint32_t len,
				 enum tb_full_policy policy)
{
	struct config *c = &cfgs[(*n)++];

	memset(c, 0, sizeof(*c));
	c->chunk_size = chunk_size;
	c->num_chunks = num_chunks;
	c->writers = writers;
	c->len = len;
	c->policy = policy;
	c->mode = TB_READ_LAZY;
	c->twin = -1;
	return c;
}

/* Pairs each flat-out lazy row with the same row under the other policy. */
static void pair_twins(struct config *cfgs, unsigned n)
{
	unsigned i, j;

	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++)
			if (i != j && cfgs[i].policy != cfgs[j].policy &&
			    cfgs[i].chunk_size == cfgs[j].chunk_size &&
			    cfgs[i].num_chunks == cfgs[j].num_chunks &&
			    cfgs[i].writers == cfgs[j].writers &&
			    cfgs[i].len == cfgs[j].len &&
			    cfgs[i].mode == cfgs[j].mode &&
			    cfgs[i].pace == cfgs[j].pace &&
			    !cfgs[i].ideal && !cfgs[j].ideal)
				cfgs[i].twin = (int)j;
}

static unsigned make_configs(struct config *cfgs)
{
	static const uint32_t lens[] = { 64, 512, 4096 };
	static const uint32_t small[][2] = {	/* chunks, chunk size */
		{ 16, 256 }, { 16, 512 }, { 64, 256 }, { 64, 512 },
	};
	unsigned n = 0, p, w, l, g;
	struct config *c;

	for (p = 0; p < 2; p++)
		for (w = 1; w <= 2; w++)
			for (l = 0; l < 3; l++)
				new_config(cfgs, &n, CHUNK_SIZE, NUM_CHUNKS, w,
					   lens[l], p ? TB_STALL : TB_DROP);
	/*
	 * The reader scraping on every pass, to compare relocations with the
	 * lazy rows above; and one writer paced well below what the reader
	 * takes.
	 */
	for (p = 0; p < 3; p++) {
		c = new_config(cfgs, &n, CHUNK_SIZE, NUM_CHUNKS,
			       p == 1 ? 2 : 1, 512, TB_STALL);
		c->mode = p < 2 ? TB_READ_SCRAPE : TB_READ_LAZY;
		c->pace = p < 2 ? 0 : 200000;
	}
	/* small rings: the cost of a hand-over */
	for (g = 0; g < 4; g++)
		for (p = 0; p < 2; p++)
			for (w = 1; w <= 2; w++)
				new_config(cfgs, &n, small[g][1], small[g][0],
					   w, 64, p ? TB_STALL : TB_DROP);
	/*
	 * More writer threads than a 2-core machine has cores: 4 and 8
	 * writers, as an application's threads outnumber the cores.
	 */
	for (p = 0; p < 2; p++)
		for (w = 4; w <= MAX_WRITERS; w *= 2)
			for (l = 0; l < 3; l++)
				new_config(cfgs, &n, CHUNK_SIZE, NUM_CHUNKS, w,
					   lens[l], p ? TB_STALL : TB_DROP);
	/* the ideal hand-over, a row per geometry and packet size above */
	for (l = 0; l < 3; l++)
		new_config(cfgs, &n, CHUNK_SIZE, NUM_CHUNKS, 1, lens[l],
			   TB_STALL)->ideal = 1;
	for (g = 0; g < 4; g++)
		new_config(cfgs, &n, small[g][1], small[g][0], 1, 64,
			   TB_STALL)->ideal = 1;
	for (p = 0; p < n; p++)
		config_name(&cfgs[p]);
	pair_twins(cfgs, n);
	return n;
}

/* The flat-out lazy row like @c with @writers, tbring's or the ideal. */
static int find_row(const struct config *cfgs, unsigned n,
		    const struct config *c, unsigned writers, int ideal)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (cfgs[i].chunk_size == c->chunk_size &&
		    cfgs[i].num_chunks == c->num_chunks &&
		    cfgs[i].len == c->len && cfgs[i].writers == writers &&
		    cfgs[i].ideal == ideal && cfgs[i].mode == TB_READ_LAZY &&
		    cfgs[i].pace == 0 &&
		    (ideal || cfgs[i].policy == c->policy))
			return (int)i;
	return -1;
}

int main(int argc, char **argv)
{
	static struct config cfgs[NCONFIGS];
	static struct result res[NCONFIGS][BENCH_MAX_RUNS];
	static double mpkt[NCONFIGS][BENCH_MAX_RUNS];
	const char *names[NCONFIGS];
	unsigned char sel[NCONFIGS];
	unsigned med[NCONFIGS];
	double secs = bench_env("TB_BENCH_SECONDS", 0.5, 0.01);
	double warm = bench_env("TB_BENCH_WARMUP", 0.2, 0);
	unsigned runs = bench_runs();
	unsigned n = make_configs(cfgs), i, r, failed = 0, pairs = 0;

	for (i = 0; i < n; i++)
		names[i] = cfgs[i].name;
	bench_select(argc, argv, names, n, sel);
	printf("tbring bench: %u chunks of %u B unless the row is named "
	       "CHUNKSxSIZE-..., reader drains\nlazily (wait %u ms when "
	       "idle).  Per row: ", NUM_CHUNKS, CHUNK_SIZE, WAIT_MS);
	if (warm > 0)
		printf("one untimed, verified warm-up run of %.2f s, then ",
		       warm);
	printf("the median of %u timed runs of %.2f s,\neach followed by "
	       "its memcpy baseline (TB_BENCH_WARMUP, TB_BENCH_RUNS, "
	       "TB_BENCH_SECONDS).\n", runs, secs);
	print_wait_costs();
	print_header();
	for (i = 0; i < n; i++) {
		struct result warmup;
		double mc[BENCH_MAX_RUNS] = { 0 };
		int ok = 1;

		if (!sel[i])
			continue;
		if (warm > 0) {
			run_config(&cfgs[i], warm, 0, &warmup);
			ok &= warmup.verified;
		}
		for (r = 0; r < runs; r++) {
			run_config(&cfgs[i], secs, 1, &res[i][r]);
			ok &= res[i][r].verified;
			mpkt[i][r] = mpkt_of(&res[i][r]);
			mc[r] = res[i][r].mc_mbps;
		}
		med[i] = bench_median_index(mpkt[i], runs);
		print_row(&cfgs[i], &res[i][med[i]],
			  bench_spread(mpkt[i], runs), bench_median(mc, runs),
			  ok);
		fflush(stdout);
		failed += !ok;
	}
	printf("\nThe median run of each row:\n");
	for (i = 0; i < n; i++)
		if (sel[i] && !cfgs[i].ideal)
			print_details(&cfgs[i], &res[i][med[i]], mpkt[i], runs);
	for (i = 0; i < n; i++) {
		int j = cfgs[i].twin;

		if (!sel[i] || cfgs[i].policy != TB_STALL || j < 0 || !sel[j])
			continue;
		if (!pairs++)
			printf("\nstall / drop, delivered Mpkt/s of the median "
			       "runs, same run of the bench:\n");
		printf("%-22s %6.2f / %6.2f = %5.2f\n", cfgs[i].name,
		       mpkt_of(&res[i][med[i]]), mpkt_of(&res[j][med[j]]),
		       mpkt_of(&res[i][med[i]]) / mpkt_of(&res[j][med[j]]));
	}
	pairs = 0;
	for (i = 0; i < n; i++) {
		const struct config *c = &cfgs[i];
		int one = find_row(cfgs, n, c, 1, 0);
		int id = find_row(cfgs, n, c, 1, 1);
		double m = mpkt_of(&res[i][med[i]]);

		if (!sel[i] || c->ideal || c->mode != TB_READ_LAZY ||
		    c->pace > 0 || id < 0 || !sel[id])
			continue;
		if (!pairs++)
			printf("\nagainst the ideal hand-over (its row of the "
			       "same geometry and packet size),\nand more "
			       "writers against 1, delivered Mpkt/s of the "
			       "median runs, same run:\n");
		printf("%-22s %6.2f / %6.2f ideal = %5.2f", c->name, m,
		       mpkt_of(&res[id][med[id]]),
		       m / mpkt_of(&res[id][med[id]]));
		if (c->writers > 1 && one >= 0 && sel[one])
			printf("   / %6.2f 1w = %5.2f",
			       mpkt_of(&res[one][med[one]]),
			       m / mpkt_of(&res[one][med[one]]));
		printf("\n");
	}
	printf("\nMpkt/s, Mch/s and MB/s: packets (chunks) delivered and "
	       "verified (count, order,\ncheck sum), from the median run by "
	       "Mpkt/s; so are loss%%..csw/ch.  spread: (max - min)\n/ median "
	       "of the runs.  fx/ch: futex waits and wakes of writers and "
	       "reader together\nper delivered chunk (the ring's counters); "
	       "csw/ch: voluntary context switches of\nthe process per chunk "
	       "(getrusage); cpu%%: the CPU time the process got, per cent\n"
	       "of one CPU (200: both of two).  memcpy: one thread stamping "
	       "and copying the same\npackets into 64 x 4 KiB, right after "
	       "each run, median over the runs; ratio = MB/s /\nmemcpy.  reloc%%: relocations "
	       "per emitted chunk.  scrape: the reader scrapes on every\n"
	       "pass.  paced: 200k pkt/s.  ideal: the ideal hand-over (see "
	       "bench/ring.c), one\nwriter and a spinning reader, the same "
	       "geometry and copies, no protocol.\n");
	if (failed)
		printf("bench: %u row(s) FAILED verification\n", failed);
	return failed ? 1 : 0;
}
