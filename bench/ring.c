/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/ring.c - throughput of the tbring.h chunk ring.
 *
 * A ring of 64 chunks of 4 KiB, 1 or 2 writer threads writing packets of
 * 64 B, 512 B or 4 KiB flat out with tb_writer_write_packet(), and one
 * reader thread draining lazily (tb_reader_drain(TB_READ_LAZY), then
 * tb_reader_wait() with a 1 ms timeout when a pass found nothing) and
 * flushing with TB_READ_SCRAPE once the writers are done.  Every
 * configuration runs TB_BENCH_SECONDS (default 2) on a fresh ring, under
 * the drop and the stall policy.
 *
 * Nothing is taken on trust: every packet carries {writer, seq, length,
 * check} in front and ~check in its last four bytes.  The reader
 * reassembles packets across chunks, checks each one, checks per-writer
 * order, and sums the checks; the run fails (exit 1) unless the reader
 * delivered exactly the packets the writers were told were written, with
 * the same check sum.  A bench cannot win by dropping.
 *
 * Beside each row: a memcpy of the same packets (same size, same header
 * stamping) into 64 x 4 KiB of memory by one thread, timed in the same
 * run right after the row, and our ratio to it; under the stall policy,
 * the figures of Perfetto's C++ prototype on a 2-vCPU machine, and our
 * ratio to them.  Three more rows: a reader that scrapes on every pass
 * (TB_READ_SCRAPE, as Perfetto's prototype does), to compare relocations
 * with lazy draining, and one writer paced well below what the reader
 * can take.
 *
 * usage: bench_ring [substring]  runs only the rows whose name has it,
 * e.g. bench_ring "1w   64 stall".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tbring.h"

#define CHUNK_SIZE	4096u
#define NUM_CHUNKS	64u
#define MAX_WRITERS	2u
#define PKT_MAX		4096u
#define PKT_HDR		16u	/* writer, seq, len, check */
#define WAIT_MS		1u	/* reader's idle wait */
#define BASELINE_S	0.05	/* memcpy baseline: slice ... */
#define BASELINE_RUNS	5	/* ... best of this many per row */

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

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
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
	unsigned writers;
	uint32_t len;
	enum tb_full_policy policy;
	enum tb_read_mode mode;	/* of the reader's passes while running */
	double pace;		/* packets/s per writer; 0: flat out */
	double ref;		/* Perfetto prototype, Mpkt/s; 0: none */
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
	int eproto;
};

struct result {
	double secs;
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

/* ------------------------------------------------------------------------
 * Writers.
 */
static void pace_until(double t)
{
	while (now() < t)
		;
}

static void *writer_main(void *arg)
{
	struct writer_ctx *wc = arg;
	struct bench *b = wc->b;
	const struct config *c = b->cfg;
	uint32_t len = c->len, seq = 0;
	struct tb_writer w;
	double t0 = 0, step = c->pace > 0 ? 1.0 / c->pace : 0;

	memset(wc->pkt, 0xa5, sizeof(wc->pkt));
	tb_writer_init(&w, &b->ring, wc->id, 1, c->policy, wc->scratch);
	pthread_barrier_wait(&b->start);
	if (step > 0)
		t0 = now();
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

static void rx_finish(struct bench *b, struct rx_writer *x, uint16_t writer)
{
	uint32_t h[4], tail;

	memcpy(h, x->hdr, sizeof(h));
	memcpy(&tail, x->tail, sizeof(tail));
	if (x->off < PKT_HDR + 4 || h[0] != writer || h[2] != x->off ||
	    h[3] != pkt_check(h[0], h[1], h[2]) || tail != ~h[3] ||
	    h[1] < x->next_seq) {
		b->bad++;
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
		rx_finish(b, x, v->writer);
		x->pending = 0;
	}
}

static void *reader_main(void *arg)
{
	struct bench *b = arg;
	enum tb_read_mode mode = b->cfg->mode;
	unsigned rounds;
	int n;

	tb_reader_init(&b->rd, &b->ring, b->rscratch);
	pthread_barrier_wait(&b->start);
	while (!load_flag(&b->done)) {
		n = tb_reader_drain(&b->rd, NUM_CHUNKS, mode, on_chunk, b);
		b->passes++;
		if (n < 0)
			goto eproto;
		if (n == 0) {
			b->idle_waits++;
			tb_reader_wait(&b->rd, WAIT_MS);
		}
	}
	/* flush: the writers are gone, take everything */
	for (rounds = 0; rounds < 1000; rounds++) {
		struct tb_ring_stats st;

		n = tb_reader_drain(&b->rd, ~0u, TB_READ_SCRAPE, on_chunk, b);
		if (n < 0)
			goto eproto;
		tb_ring_stats(&b->ring, &st);
		if (n == 0 && st.write_pos == b->rd.pos)
			break;
	}
	return NULL;
eproto:
	b->eproto = 1;
	return NULL;
}

/* ------------------------------------------------------------------------
 * The memcpy baseline: the same packets, stamped the same way, copied by
 * one thread into a ring of 64 x 4 KiB buffers.  Best of BASELINE_RUNS
 * slices of BASELINE_S seconds, so that a preemption does not count.
 */
static volatile uint32_t sink;

static double memcpy_slice(uint8_t *dst, uint8_t *src, uint32_t len)
{
	size_t off = 0, cap = (size_t)CHUNK_SIZE * NUM_CHUNKS;
	uint64_t n = 0;
	uint32_t sum = 0, i;
	double t0 = now(), t;

	do {
		for (i = 0; i < 256; i++, n++) {
			sum += pkt_stamp(src, 1, (uint32_t)n, len);
			if (off + len > cap)
				off = 0;
			memcpy(dst + off, src, len);
			off += len;
		}
		t = now();
	} while (t - t0 < BASELINE_S);
	sink = sum ^ dst[n % cap];
	return (double)n * len / (t - t0) / 1e6;
}

static double memcpy_mbps(uint32_t len)
{
	uint8_t *dst = xalloc((size_t)CHUNK_SIZE * NUM_CHUNKS);
	uint8_t *src = xalloc(PKT_MAX);
	double best = 0, v;
	int i;

	memset(src, 0xa5, PKT_MAX);
	for (i = 0; i < BASELINE_RUNS; i++) {
		v = memcpy_slice(dst, src, len);
		best = v > best ? v : best;
	}
	free(dst);
	free(src);
	return best;
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
		r->delivered += x->delivered;
		r->partial += x->partial + x->pending;
		r->orphans += x->orphans;
		rsum += x->sum;
	}
	r->bad = b->bad;
	r->idle_waits = b->idle_waits;
	r->passes = b->passes;
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

static void run_config(const struct config *c, double secs, struct result *r)
{
	size_t size = tb_ring_size(CHUNK_SIZE, NUM_CHUNKS);
	pthread_t wt[MAX_WRITERS], rt;
	struct bench *b = xalloc(sizeof(*b));
	unsigned i;
	double t0;

	memset(r, 0, sizeof(*r));
	b->cfg = c;
	b->mem = xalloc(size);
	b->rscratch = xalloc(CHUNK_SIZE);
	if (tb_ring_init(&b->ring, b->mem, size, CHUNK_SIZE, NUM_CHUNKS)) {
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
	t0 = now();
	sleep_s(secs);
	set_flag(&b->stop);
	for (i = 0; i < c->writers; i++)
		pthread_join(wt[i], NULL);
	set_flag(&b->done);
	pthread_join(rt, NULL);
	r->secs = now() - t0;
	collect(b, r);
	r->mc_mbps = memcpy_mbps(c->len);
	pthread_barrier_destroy(&b->start);
	for (i = 0; i < c->writers; i++)
		free(b->w[i]);
	free(b->rscratch);
	free(b->mem);
	free(b);
}

/* ------------------------------------------------------------------------
 * The table.
 */
static void print_header(void)
{
	printf("%-22s %7s %7s %6s %8s %7s %6s %6s | %7s %5s | %5s %5s\n",
	       "config", "Mpkt/s", "MB/s", "loss%", "reloc/s", "retry/s",
	       "reloc%", "pkt/ch", "memcpy", "ratio", "ref", "x ref");
	printf("%-22s %7s %7s %6s %8s %7s %6s %6s | %7s %5s | %5s %5s\n",
	       "", "", "", "", "", "", "", "", "MB/s", "", "Mpkt", "");
}

static void config_name(const struct config *c, char *buf, size_t size)
{
	char len[16];

	if (c->len >= 1024)
		snprintf(len, sizeof(len), "%uK", c->len / 1024);
	else
		snprintf(len, sizeof(len), "%u", c->len);
	snprintf(buf, size, "%uw %4s %s%s%s", c->writers, len,
		 c->policy == TB_STALL ? "stall" : "drop",
		 c->pace > 0 ? " paced" : "",
		 c->mode == TB_READ_SCRAPE ? " scrape" : "");
}

static void print_row(const struct config *c, const struct result *r)
{
	const uint32_t *ws = r->st.wstat, *rs = r->st.rstat;
	double mpkt = (double)r->delivered / r->secs / 1e6;
	double mbps = mpkt * c->len;
	double loss = r->attempted ?
		      100.0 * (double)(r->attempted - r->delivered) /
		      (double)r->attempted : 0;
	double chunks = rs[TB_RS_EMITTED] ? rs[TB_RS_EMITTED] : 1;
	char name[64];

	config_name(c, name, sizeof(name));
	printf("%-22s %7.2f %7.0f %6.2f %8.0f %7.0f %6.2f %6.1f | %7.0f %5.2f |",
	       name, mpkt, mbps, loss, ws[TB_WS_RELOCATIONS] / r->secs,
	       rs[TB_RS_RETRY_LATER] / r->secs,
	       100.0 * ws[TB_WS_RELOCATIONS] / chunks,
	       (double)r->delivered / chunks, r->mc_mbps, mbps / r->mc_mbps);
	if (c->ref > 0)
		printf(" %5.2f %5.2f", c->ref, mpkt / c->ref);
	else
		printf(" %5s %5s", "-", "-");
	printf("%s\n", r->verified ? "" : "  VERIFY FAILED");
}

static void print_details(const struct config *c, const struct result *r)
{
	const uint32_t *ws = r->st.wstat, *rs = r->st.rstat;
	char name[64];

	config_name(c, name, sizeof(name));
	printf("%-22s written %llu delivered %llu failed full %llu "
	       "no-chunk %llu dropped %llu; chunks %u, scrapes %u, holes %u, "
	       "stalls %u, dropped frags %u, partial %llu, orphans %llu, "
	       "idle waits %llu of %llu passes\n", name,
	       (unsigned long long)r->written,
	       (unsigned long long)r->delivered,
	       (unsigned long long)r->failed[-TB_FULL],
	       (unsigned long long)r->failed[-TB_NO_CHUNK],
	       (unsigned long long)r->failed[-TB_DROPPED],
	       rs[TB_RS_EMITTED], rs[TB_RS_SCRAPES], rs[TB_RS_HOLES],
	       ws[TB_WS_STALLS], ws[TB_WS_DROPPED_FRAGS],
	       (unsigned long long)r->partial,
	       (unsigned long long)r->orphans,
	       (unsigned long long)r->idle_waits,
	       (unsigned long long)r->passes);
}

static double bench_seconds(void)
{
	const char *s = getenv("TB_BENCH_SECONDS");
	double v = s ? atof(s) : 2.0;

	return v > 0 ? v : 2.0;
}

/* Perfetto's prototype, stall policy, 2 vCPUs: Mpkt/s by writers, size. */
static double perfetto_ref(unsigned writers, uint32_t len)
{
	static const double ref[2][3] = { { 9.5, 7.4, 1.35 },
					  { 17.8, 8.3, 1.6 } };
	unsigned k = len == 64 ? 0 : len == 512 ? 1 : 2;

	return ref[writers - 1][k];
}

int main(int argc, char **argv)
{
	static const uint32_t lens[] = { 64, 512, 4096 };
	struct config cfgs[16];
	struct result res[16];
	double secs = bench_seconds();
	unsigned n = 0, i, p, w, l, failed = 0;

	for (p = 0; p < 2; p++) {
		for (w = 1; w <= MAX_WRITERS; w++) {
			for (l = 0; l < 3; l++) {
				struct config *c = &cfgs[n++];

				memset(c, 0, sizeof(*c));
				c->writers = w;
				c->len = lens[l];
				c->policy = p ? TB_STALL : TB_DROP;
				c->mode = TB_READ_LAZY;
				if (c->policy == TB_STALL)
					c->ref = perfetto_ref(w, c->len);
			}
		}
	}
	/*
	 * The reader scraping on every pass (as Perfetto's prototype does),
	 * to compare relocations with the lazy rows above; and one writer
	 * paced well below what the reader takes.
	 */
	for (p = 0; p < 3; p++) {
		struct config *c = &cfgs[n++];

		memset(c, 0, sizeof(*c));
		c->writers = p == 1 ? 2 : 1;
		c->len = 512;
		c->policy = TB_STALL;
		c->mode = p < 2 ? TB_READ_SCRAPE : TB_READ_LAZY;
		c->pace = p < 2 ? 0 : 200000;
	}
	printf("tbring bench: %u chunks of %u B, %.1f s per row, reader "
	       "drains lazily (wait %u ms when idle)\n", NUM_CHUNKS,
	       CHUNK_SIZE, secs, WAIT_MS);
	print_header();
	for (i = 0; i < n; i++) {
		char name[64];

		config_name(&cfgs[i], name, sizeof(name));
		if (argc > 1 && !strstr(name, argv[1])) {
			res[i].secs = 0;	/* not run */
			continue;
		}
		run_config(&cfgs[i], i < n - 3 ? secs : secs / 2, &res[i]);
		print_row(&cfgs[i], &res[i]);
		fflush(stdout);
		failed += !res[i].verified;
	}
	printf("\n");
	for (i = 0; i < n; i++)
		if (res[i].secs > 0)
			print_details(&cfgs[i], &res[i]);
	printf("\nMpkt/s and MB/s: packets delivered and verified (count, "
	       "order, check sum).\nmemcpy: one thread copying the same "
	       "packets into 64 x 4 KiB, same run; ratio = MB/s / memcpy.\n"
	       "ref: Perfetto's C++ prototype, stall policy, 2 vCPUs "
	       "(medians, noisy).\nreloc%%: relocations per emitted chunk.  "
	       "scrape: the reader scrapes on every pass.\npaced: one writer, "
	       "200k pkt/s.  The last three rows run half as long.\n");
	if (failed)
		printf("bench: %u configuration(s) FAILED verification\n",
		       failed);
	return failed ? 1 : 0;
}
