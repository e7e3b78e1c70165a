/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * examples/demo.c - writers, a ring, a reader, a summary.
 *
 *   make demo            (or: ./build/demo -w 4 -d 3)
 *
 * N writer threads write packets of mixed sizes into one shared-memory
 * ring (tbring.h); small ones share a chunk, large ones span two or three
 * chunks.  One reader thread drains the ring lazily: it takes complete
 * chunks, sleeps on the ring's doorbell when there is nothing, and
 * flushes (scrapes) whatever is left at the end.  It reassembles every
 * packet and checks it.  Once a second the main thread prints a progress
 * line; at the end it prints what was written, delivered and lost, and
 * why.
 *
 * Every packet starts with a header {writer, seq, length, checksum of the
 * body}.  The demo exits 1 unless the reader got exactly the packets the
 * writers were told were written: each one once, in order per writer,
 * with a matching checksum.  Packets the ring refused (full, no chunk, a
 * relocation that found no room) are counted by cause, never silently.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "tbring.h"

#define MAX_WRITERS	64
#define HDR_SIZE	16u	/* writer, seq, length, checksum */

struct options {
	unsigned writers;	/* -w */
	unsigned seconds;	/* -d */
	uint32_t chunk_size;	/* -c */
	uint32_t num_chunks;	/* -n */
	unsigned rate;		/* -r: packets/s per writer, 0: flat out */
	enum tb_full_policy policy;	/* -s: stall, default drop */
};

/* Counters another thread reads while the run goes on: relaxed atomics. */
static void count(uint64_t *c, uint64_t n)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + n,
			 __ATOMIC_RELAXED);
}

static uint64_t peek(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------------
 * Packets: a header, then a pseudo-random body the header checksums.
 */
static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A multiply-xor hash over the body, eight bytes at a time. */
static uint32_t body_sum(const uint8_t *p, uint32_t len)
{
	uint64_t h = 0xcbf29ce484222325ull, v;

	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&v, p, 8);
		h = (h ^ v) * 0x100000001b3ull;
	}
	while (len--)
		h = (h ^ *p++) * 0x100000001b3ull;
	return (uint32_t)(h ^ h >> 32);
}

/* Mostly small packets, some larger, a few spanning 2-3 chunks. */
static uint32_t pick_size(uint64_t *rng, uint32_t chunk_size)
{
	uint32_t r = (uint32_t)(rng_next(rng) >> 32), pick = r % 100;

	r /= 100;
	if (pick < 70)
		return HDR_SIZE + r % 240;
	if (pick < 95)
		return 256 + r % (chunk_size / 2);
	return chunk_size + r % (2 * chunk_size);
}

static void make_packet(uint8_t *pkt, uint32_t len, uint32_t writer,
			uint32_t seq, uint64_t *rng)
{
	uint32_t hdr[4], i;
	uint64_t v;

	for (i = HDR_SIZE; i < len; i += 8) {
		v = rng_next(rng);
		memcpy(pkt + i, &v, len - i < 8 ? len - i : 8);
	}
	hdr[0] = writer;
	hdr[1] = seq;
	hdr[2] = len;
	hdr[3] = body_sum(pkt + HDR_SIZE, len - HDR_SIZE);
	memcpy(pkt, hdr, sizeof(hdr));
}

/* ------------------------------------------------------------------------
 * Writers.
 */
struct writer {
	struct demo *demo;
	pthread_t thread;
	uint16_t id;
	uint8_t *scratch;	/* chunk_size, for relocations */
	uint8_t *pkt;
	/* progress, read by the main thread */
	uint64_t attempted;
	uint64_t written;
	uint64_t bytes_written;
	uint64_t failed[8];	/* packets lost, by -result */
	/* for the final check */
	uint64_t seq_sum;	/* of written packets */
};

/* The reader's view of one writer: reassembly and checks. */
struct stream {
	uint8_t *buf;		/* the packet being reassembled */
	uint32_t len;
	int open;		/* a packet is waiting for its next part */
	int seen;		/* any packet delivered yet */
	uint32_t last_seq;
	uint64_t delivered;
	uint64_t bytes;
	uint64_t seq_sum;
	uint64_t incomplete;	/* packets whose tail never came */
};

struct demo {
	struct options opt;
	struct tb_ring ring;
	void *mem;
	size_t mem_size;
	uint32_t stop;		/* writers: stop */
	uint32_t flush;		/* reader: writers are gone, flush */
	struct writer w[MAX_WRITERS];
	/* reader */
	pthread_t reader;
	struct tb_reader rd;
	uint8_t *rscratch;
	struct stream s[MAX_WRITERS + 1];	/* by writer id */
	uint64_t delivered;	/* progress */
	uint64_t bytes_delivered;
	uint64_t corrupt;	/* packets failing a check */
	int eproto;
};

static void sleep_until(double t)
{
	struct timespec ts;

	ts.tv_sec = (time_t)t;
	ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

static void *writer_main(void *arg)
{
	struct writer *wr = arg;
	struct demo *d = wr->demo;
	uint64_t rng = 0x9e3779b97f4a7c15ull * wr->id;
	/* with -r, write bursts of rate/1000 packets once a millisecond */
	unsigned burst = d->opt.rate ? (d->opt.rate + 999) / 1000 : 0, n = 0;
	double next = now();
	uint32_t seq = 0;
	struct tb_writer w;

	tb_writer_init(&w, &d->ring, wr->id, 1, d->opt.policy, wr->scratch);
	while (!__atomic_load_n(&d->stop, __ATOMIC_RELAXED)) {
		uint32_t len = pick_size(&rng, d->opt.chunk_size);
		int ret;

		if (burst && n++ == burst) {
			next += 0.001;
			sleep_until(next);
			n = 1;
		}
		make_packet(wr->pkt, len, wr->id, seq, &rng);
		ret = tb_writer_write_packet(&w, wr->pkt, len);
		count(&wr->attempted, 1);
		if (ret == TB_OK) {
			count(&wr->written, 1);
			count(&wr->bytes_written, len);
			wr->seq_sum += seq;
		} else {
			count(&wr->failed[-ret & 7], 1);
		}
		seq++;
	}
	tb_writer_release(&w);	/* publishes what it holds */
	return NULL;
}

/* ------------------------------------------------------------------------
 * Reader: reassembles each writer's packets from its chunks, in order.
 */
static void deliver(struct demo *d, struct stream *s, uint16_t writer)
{
	uint32_t hdr[4];

	memcpy(hdr, s->buf, sizeof(hdr));
	if (s->len < HDR_SIZE || hdr[0] != writer || hdr[2] != s->len ||
	    hdr[3] != body_sum(s->buf + HDR_SIZE, s->len - HDR_SIZE) ||
	    (s->seen && hdr[1] <= s->last_seq)) {
		fprintf(stderr, "demo: bad packet from writer %u (seq %u, "
			"length %u)\n", writer, hdr[1], s->len);
		d->corrupt++;
		return;
	}
	s->seen = 1;
	s->last_seq = hdr[1];
	s->delivered++;
	s->bytes += s->len;
	s->seq_sum += hdr[1];
	count(&d->delivered, 1);
	count(&d->bytes_delivered, s->len);
}

/*
 * A chunk holds whole packets and pieces of packets: its first fragment
 * may continue the writer's previous chunk (TB_F_CONT_PREV), its last one
 * may go on in the writer's next chunk (TB_F_CONT_NEXT).
 */
static void on_chunk(void *ctx, const struct tb_chunk_view *v)
{
	struct demo *d = ctx;
	const uint8_t *p = v->payload;
	uint32_t max = 3 * d->opt.chunk_size + 256, i;
	struct stream *s;

	if (v->writer < 1 || v->writer > d->opt.writers) {
		d->corrupt++;
		return;
	}
	s = &d->s[v->writer];
	for (i = 0; i < v->nfrags; p += v->sizes[i], i++) {
		int cont = i == 0 && (v->flags & TB_F_CONT_PREV);

		if (!cont) {		/* a new packet starts */
			s->incomplete += s->open;
			s->open = 1;
			s->len = 0;
		} else if (!s->open) {
			continue;	/* its start was lost */
		}
		if (s->len + v->sizes[i] > max) {
			d->corrupt++;
			s->open = 0;
			continue;
		}
		memcpy(s->buf + s->len, p, v->sizes[i]);
		s->len += v->sizes[i];
		if (i + 1 == v->nfrags && (v->flags & TB_F_CONT_NEXT))
			break;		/* continues in the next chunk */
		s->open = 0;
		deliver(d, s, v->writer);
	}
}

static void *reader_main(void *arg)
{
	struct demo *d = arg;
	int n;

	/* take complete chunks; sleep up to 10 ms when there are none */
	while (!__atomic_load_n(&d->flush, __ATOMIC_ACQUIRE)) {
		n = tb_reader_drain(&d->rd, d->opt.num_chunks, TB_READ_LAZY,
				    on_chunk, d);
		if (n < 0)
			goto eproto;
		if (n == 0)
			tb_reader_wait(&d->rd, 10);
	}
	/* the writers are gone: flush everything left */
	do {
		n = tb_reader_drain(&d->rd, ~0u, TB_READ_SCRAPE, on_chunk, d);
		if (n < 0)
			goto eproto;
	} while (n > 0);
	return NULL;
eproto:
	fprintf(stderr, "demo: the reader stopped: protocol error\n");
	d->eproto = 1;
	return NULL;
}

/* ------------------------------------------------------------------------
 * Reporting.
 */
struct totals {
	uint64_t attempted, written, bytes_written, failed[8];
	uint64_t delivered, bytes_delivered;
};

static void sum_up(struct demo *d, struct totals *t)
{
	unsigned i, k;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < d->opt.writers; i++) {
		struct writer *wr = &d->w[i];

		t->attempted += peek(&wr->attempted);
		t->written += peek(&wr->written);
		t->bytes_written += peek(&wr->bytes_written);
		for (k = 0; k < 8; k++)
			t->failed[k] += peek(&wr->failed[k]);
	}
	t->delivered = peek(&d->delivered);
	t->bytes_delivered = peek(&d->bytes_delivered);
}

static void progress(struct demo *d, unsigned sec, struct totals *last)
{
	struct tb_ring_stats st;
	struct totals t;

	sum_up(d, &t);
	tb_ring_stats(&d->ring, &st);
	printf("%3us  %6.3f Mpkt/s  %7.1f MB/s  lost: full %llu, no chunk "
	       "%llu, relocation %llu  (relocations %u, scrapes %u, holes "
	       "%u)\n", sec, (t.delivered - last->delivered) / 1e6,
	       (t.bytes_delivered - last->bytes_delivered) / 1e6,
	       (unsigned long long)(t.failed[-TB_FULL] -
				    last->failed[-TB_FULL]),
	       (unsigned long long)(t.failed[-TB_NO_CHUNK] -
				    last->failed[-TB_NO_CHUNK]),
	       (unsigned long long)(t.failed[-TB_DROPPED] -
				    last->failed[-TB_DROPPED]),
	       st.wstat[TB_WS_RELOCATIONS], st.rstat[TB_RS_SCRAPES],
	       st.wstat[TB_WS_HOLES]);
	fflush(stdout);
	*last = t;
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0;
}

static void summary(struct demo *d, double secs)
{
	struct tb_ring_stats st;
	struct totals t;
	uint64_t lost, other = 0, incomplete = 0;
	unsigned k;

	sum_up(d, &t);
	tb_ring_stats(&d->ring, &st);
	lost = t.attempted - t.written;
	for (k = 1; k <= d->opt.writers; k++)
		incomplete += d->s[k].incomplete + d->s[k].open;
	for (k = 0; k < 8; k++)
		if (k != -TB_FULL && k != -TB_NO_CHUNK && k != -TB_DROPPED)
			other += t.failed[k];
	printf("\nsummary: %u writers, %.1f s, ring of %u x %u B, %s policy\n",
	       d->opt.writers, secs, d->opt.num_chunks, d->opt.chunk_size,
	       d->opt.policy == TB_STALL ? "stall" : "drop");
	printf("  packets   written %llu, delivered %llu, dropped %llu "
	       "(%.2f%% of %llu)\n", (unsigned long long)t.written,
	       (unsigned long long)t.delivered, (unsigned long long)lost,
	       pct(lost, t.attempted), (unsigned long long)t.attempted);
	printf("  bytes     written %llu, delivered %llu\n",
	       (unsigned long long)t.bytes_written,
	       (unsigned long long)t.bytes_delivered);
	printf("  rate      %.3f Mpkt/s, %.1f MB/s delivered\n",
	       t.delivered / secs / 1e6, t.bytes_delivered / secs / 1e6);
	printf("  dropped packets by cause:\n"
	       "    ring full               %llu\n"
	       "    no chunk (holes)        %llu\n"
	       "    relocation found no room %llu\n",
	       (unsigned long long)t.failed[-TB_FULL],
	       (unsigned long long)t.failed[-TB_NO_CHUNK],
	       (unsigned long long)t.failed[-TB_DROPPED]);
	if (other)
		printf("    other errors            %llu\n",
		       (unsigned long long)other);
	printf("    (heads of dropped packets the reader discarded: %llu)\n",
	       (unsigned long long)incomplete);
	printf("  ring counters:\n"
	       "    full events %u, no-chunk events %u, stalls %u\n"
	       "    relocations %u, dropped fragments %u\n"
	       "    holes: %u burned by writers, %u resolved by the reader\n"
	       "    chunks emitted %u, scrapes %u, malformed %u, retry-later "
	       "%u\n", st.wstat[TB_WS_FULL], st.wstat[TB_WS_NO_CHUNK],
	       st.wstat[TB_WS_STALLS], st.wstat[TB_WS_RELOCATIONS],
	       st.wstat[TB_WS_DROPPED_FRAGS], st.wstat[TB_WS_HOLES],
	       st.rstat[TB_RS_HOLES], st.rstat[TB_RS_EMITTED],
	       st.rstat[TB_RS_SCRAPES], st.rstat[TB_RS_MALFORMED],
	       st.rstat[TB_RS_RETRY_LATER]);
}

/* Exactly the written packets arrived: per writer, count and seq sum. */
static int verify(struct demo *d)
{
	unsigned i, bad = 0;

	for (i = 0; i < d->opt.writers; i++) {
		struct writer *wr = &d->w[i];
		struct stream *s = &d->s[wr->id];

		if (s->delivered == wr->written && s->seq_sum == wr->seq_sum)
			continue;
		fprintf(stderr, "demo: writer %u wrote %llu packets, the "
			"reader got %llu\n", wr->id,
			(unsigned long long)wr->written,
			(unsigned long long)s->delivered);
		bad++;
	}
	if (bad || d->corrupt || d->eproto) {
		printf("  verify    FAILED: %u writers mismatched, %llu bad "
		       "packets%s\n", bad, (unsigned long long)d->corrupt,
		       d->eproto ? ", protocol error" : "");
		return 1;
	}
	printf("  verify    ok: every written packet delivered exactly once, "
	       "in order, checksums match\n");
	return 0;
}

/* ------------------------------------------------------------------------
 * Setup.
 */
static void usage(void)
{
	fprintf(stderr,
		"usage: demo [-w writers] [-d seconds] [-c chunk_size] "
		"[-n num_chunks]\n"
		"            [-r packets/s per writer, 0: flat out] [-s]\n"
		"  defaults: -w 4 -d 3 -c 4096 -n 64 -r 25000, drop policy; "
		"-s: stall\n");
	exit(2);
}

static void parse(int argc, char **argv, struct options *o)
{
	int c;

	o->writers = 4;
	o->seconds = 3;
	o->chunk_size = 4096;
	o->num_chunks = 64;
	o->rate = 25000;
	o->policy = TB_DROP;
	while ((c = getopt(argc, argv, "w:d:c:n:r:sh")) != -1) {
		switch (c) {
		case 'w': o->writers = (unsigned)atoi(optarg); break;
		case 'd': o->seconds = (unsigned)atoi(optarg); break;
		case 'c': o->chunk_size = (uint32_t)atoi(optarg); break;
		case 'n': o->num_chunks = (uint32_t)atoi(optarg); break;
		case 'r': o->rate = (unsigned)atoi(optarg); break;
		case 's': o->policy = TB_STALL; break;
		default: usage();
		}
	}
	if (o->writers < 1 || o->writers > MAX_WRITERS || o->seconds < 1) {
		fprintf(stderr, "demo: 1 to %d writers, at least 1 second\n",
			MAX_WRITERS);
		usage();
	}
	if (!tb_ring_size(o->chunk_size, o->num_chunks)) {
		fprintf(stderr, "demo: chunk size must be a power of two in "
			"[256, 32768], the chunk count a power of two >= 2\n");
		usage();
	}
}

static void *xmalloc(size_t size)
{
	void *p = calloc(1, size);

	if (!p) {
		fprintf(stderr, "demo: out of memory\n");
		exit(2);
	}
	return p;
}

static void setup(struct demo *d)
{
	uint32_t cs = d->opt.chunk_size, max = 3 * cs + 256;
	unsigned i;

	/* shared memory, as between processes; fresh, so zero-filled */
	d->mem_size = tb_ring_size(cs, d->opt.num_chunks);
	d->mem = mmap(NULL, d->mem_size, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (d->mem == MAP_FAILED ||
	    tb_ring_init(&d->ring, d->mem, d->mem_size, cs,
			 d->opt.num_chunks)) {
		fprintf(stderr, "demo: cannot set up a %zu-byte ring\n",
			d->mem_size);
		exit(2);
	}
	for (i = 0; i < d->opt.writers; i++) {
		d->w[i].demo = d;
		d->w[i].id = (uint16_t)(i + 1);
		d->w[i].scratch = xmalloc(cs);
		d->w[i].pkt = xmalloc(max);
		d->s[i + 1].buf = xmalloc(max);
	}
	d->rscratch = xmalloc(cs);
	tb_reader_init(&d->rd, &d->ring, d->rscratch);
}

int main(int argc, char **argv)
{
	static struct demo d;
	struct totals last;
	double t0, secs;
	unsigned i, sec;
	int ret;

	parse(argc, argv, &d.opt);
	setup(&d);
	printf("tbring demo: %u writers, ring of %u x %u B, %s policy, "
	       "%u s, %s\n", d.opt.writers, d.opt.num_chunks,
	       d.opt.chunk_size, d.opt.policy == TB_STALL ? "stall" : "drop",
	       d.opt.seconds, d.opt.rate ? "paced" : "flat out");
	if (d.opt.rate)
		printf("each writer: %u packets/s of 16 B to %u B\n",
		       d.opt.rate, 3 * d.opt.chunk_size - 1);
	memset(&last, 0, sizeof(last));
	t0 = now();
	pthread_create(&d.reader, NULL, reader_main, &d);
	for (i = 0; i < d.opt.writers; i++)
		pthread_create(&d.w[i].thread, NULL, writer_main, &d.w[i]);
	for (sec = 1; sec <= d.opt.seconds; sec++) {
		sleep_until(t0 + sec);
		progress(&d, sec, &last);
	}
	__atomic_store_n(&d.stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < d.opt.writers; i++)
		pthread_join(d.w[i].thread, NULL);
	__atomic_store_n(&d.flush, 1, __ATOMIC_RELEASE);
	pthread_join(d.reader, NULL);
	secs = now() - t0;
	summary(&d, secs);
	ret = verify(&d);
	munmap(d.mem, d.mem_size);
	return ret;
}
