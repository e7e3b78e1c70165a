/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/buffer.c - tbuffer.h on the workloads of Perfetto's
 * trace_buffer_benchmark.cc, beside a memcpy baseline measured in the same
 * run.  The workloads are upstream's so that an outside comparison can be
 * made under one harness; this bench prints no outside figure.
 *
 * Chunk templates: std::minstd_rand seeded 42 (x = x * 48271 mod 2^31 - 1,
 * implemented here); per template 5 + rnd() % 11 packets of 50 + rnd() % 451
 * bytes each, varint header included, clipped at 4080 bytes (packets
 * under 10 bytes dropped), filled like Perfetto's FakePacketFragment.  The
 * upstream benchmark draws with rnd() % n, not with
 * std::uniform_int_distribution, so the same draws are reproduced exactly.
 *
 * Rows (the names the filter matches):
 *  wr-1w          one writer commits templates into a 64 MiB ring buffer in
 *                 steady-state overwrite; every chunk counts 4096 bytes, as
 *                 upstream (the real mean is about 2.7 KB).  A run is 8
 *                 upstream iterations (8 x 64 MiB counted).
 *  wr-1000w       the same with 1000 sequences round-robin (producer =
 *                 writer = k + 1, identity 1000 + k / 100 + k, own ids).
 *  wr-1w-cb       wr-1w with an overwrite callback set (it counts the
 *                 packets and bytes handed to it): every overwritten packet
 *                 is then reconstructed, where without one only the
 *                 accounting is done.  Upstream has no such row; its
 *                 nearest is a ProtoVM registered for the producer.
 *  rd-excl-free   read every packet of a 128 MiB buffer holding 32767
 *                 chunks (filled untimed, fresh for every run); counts
 *                 packet payload bytes.  Timed: tb_buf_begin_read() to the
 *                 last tb_buf_read_packet().
 *  rd-incl-free   the same run timed on to the end of tb_buf_destroy(), as
 *                 upstream's read benchmark times freeing the buffer.  The
 *                 two rows have their own baselines: compare each only with
 *                 a figure timed over the same boundaries.
 *  patch-last     one 4-byte patch into a 16 MiB buffer of 4096 chunks made
 *  patch-11th     of 10 templates: the last chunk, the 11th from the end,
 *  patch-missing  and an id that is not there (last + 1).  A run is 2e6
 *                 patches; ns per patch.
 *
 * Method.  Every row reports the median of TB_BENCH_RUNS (default 5) timed
 * runs (for an even count the lower middle run) and the spread of the
 * runs; wall-clock CLOCK_MONOTONIC (upstream uses Google Benchmark's CPU
 * time; one thread, so close).  Warmed up, untimed: WR runs 3 iterations
 * first, so every timed commit overwrites and every page is faulted in;
 * RD makes one verifying pass first, and each run's fill writes (faults
 * in) the buffer it then reads; the memcpy baselines copy once untimed
 * first; patch runs 1e5 patches first.
 *
 * Baselines, measured in the same run, the same data movement with plain
 * memcpy: WR, the templates copied at a wrapping bump pointer into 64 MiB
 * (same 4096-per-chunk accounting), the destination prefetched for
 * writing ahead of the copy exactly as tbuffer.h's making room prefetches
 * it (16 KiB ahead, each line once), so that the ratio measures the
 * buffer's own work and not a prefetch the baseline lacks; RD, every
 * packet payload copied out once from a 128 MiB malloc'd region laid out
 * like the buffer (same payload accounting), and for rd-incl-free that
 * copy plus free() of the region.  ratio = tbuffer / memcpy.  The patch
 * rows have no baseline.
 *
 * Verified, untimed: every commit and patch returns what it should; after
 * the WR runs every packet left in the buffer is read back and matched (by
 * length and hash, in order) against the templates committed, chunk by
 * chunk back from each writer's last commit, and the surviving chunks must
 * fill the buffer; with the callback, the packets it was handed and those
 * read back must be every packet committed, and so must their bytes; RD's
 * first pass matches every packet of all 32767 chunks, and each timed RD
 * run must count exactly as many packets and bytes.  A failure marks the
 * row and the bench exits 1.
 *
 * usage: bench_buffer [-l | --list] [PATTERN...]  (see bench/bench.h)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tbuffer.h"
#include "bench.h"

#define KCHUNK		4096u
#define MIB		(1024u * 1024u)
#define GIB		(1024.0 * 1024.0 * 1024.0)
#define NWRITERS	1000u
#define MAX_FRAGS	16u
#define WR_SIZE		(64u * MIB)
#define WR_WARMUP	3	/* iterations before the timed runs */
#define WR_ITERS	8	/* iterations per timed run */
#define RD_SIZE		(128u * MIB)
#define PATCH_N		2000000u
#define HDR		16u	/* the buffer's record header */

struct tmpl {
	uint8_t data[KCHUNK];
	uint32_t size;
	uint16_t nfrags;
	uint32_t payload;	/* packet bytes, headers excluded */
	uint32_t foff[MAX_FRAGS];	/* each packet's payload: offset, */
	uint32_t flen[MAX_FRAGS];	/* length, */
	uint64_t fhash[MAX_FRAGS];	/* hash */
};

static uint32_t minstd = 42;

static uint32_t rnd(void)
{
	minstd = (uint32_t)((uint64_t)minstd * 48271u % 2147483647u);
	return minstd;
}

static uint64_t hash_bytes(uint64_t h, const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

#define HASH_INIT	0xcbf29ce484222325ull

/* A fragment of @size bytes in all, varint included (FakePacketFragment). */
static uint32_t fake_fragment(uint8_t *p, uint32_t size, char prefix)
{
	uint32_t hdr, i, n;

	if (size <= 128) {
		p[0] = (uint8_t)(size - 1);
		hdr = 1;
	} else if (size == 129) {
		p[0] = 0x80 | 127;	/* redundant two-byte 127 */
		p[1] = 0;
		hdr = 2;
	} else {
		hdr = tb_pb_varint_put(p, size - 2);
	}
	n = size - hdr;
	for (i = 0; i < n; i++) {
		switch (i % 4) {
		case 0: p[hdr + i] = (uint8_t)prefix; break;
		case 1: p[hdr + i] = (uint8_t)('0' + i / 40 % 10); break;
		case 2: p[hdr + i] = (uint8_t)('0' + i / 4 % 10); break;
		default: p[hdr + i] = '-'; break;
		}
	}
	return n;
}

static void gen_templates(struct tmpl *t, unsigned n)
{
	const uint32_t max_payload = KCHUNK - 16;
	unsigned i;

	minstd = 42;
	for (i = 0; i < n; i++) {
		uint32_t npk = 5 + rnd() % 11, used = 0, p;

		memset(&t[i], 0, sizeof(t[i]));
		for (p = 0; p < npk && used < max_payload - 50; p++) {
			uint32_t size = 50 + rnd() % 451, len;
			uint16_t k = t[i].nfrags;

			if (used + size > max_payload)
				size = max_payload - used;
			if (size < 10)
				break;
			len = fake_fragment(t[i].data + used, size,
					    (char)('a' + i % 26));
			t[i].foff[k] = used + size - len;
			t[i].flen[k] = len;
			t[i].fhash[k] = hash_bytes(HASH_INIT, t[i].data +
						   t[i].foff[k], len);
			t[i].payload += len;
			t[i].nfrags++;
			used += size;
		}
		t[i].size = used;
	}
}

static uint32_t outer(const struct tmpl *t)
{
	return (HDR + t->size + 15u) & ~15u;
}

static int commit(struct tb_buf *b, const struct tmpl *t, uint16_t p,
		  uint16_t w, uint32_t id, const struct tb_buf_ident *ident)
{
	struct tb_buf_chunk_in in;

	in.producer_id = p;
	in.ident = *ident;
	in.writer_id = w;
	in.chunk_id = id;
	in.nfrags = t->nfrags;
	in.flags = 0;
	in.complete = true;
	in.payload = t->data;
	in.size = t->size;
	return tb_buf_copy_chunk(b, &in);
}

static struct tmpl tpl[100];
static volatile uint64_t sink;
static uint64_t cb_pkts, cb_bytes;	/* handed to the overwrite callback */
static unsigned failures;	/* verification failures of the current row */
static unsigned commit_errors;	/* timed commits that did not return OK */

/* Counts a verification failure; says what only for the first few. */
static void fail(const char *what)
{
	if (failures < 5)
		fprintf(stderr, "bench: VERIFY FAILED: %s\n", what);
	else if (failures == 5)
		fprintf(stderr, "bench: VERIFY FAILED: (more in this row)\n");
	failures++;
}

/* ---- Reading back and matching against the templates -------------------- */

/* The packets of one writer as read: length and hash, in read order. */
struct rx {
	uint32_t *len;
	uint64_t *hash;
	size_t n, cap;
};

static void rx_push(struct rx *x, uint32_t len, uint64_t hash)
{
	if (x->n == x->cap) {
		x->cap = x->cap ? 2 * x->cap : 1024;
		x->len = realloc(x->len, x->cap * sizeof(*x->len));
		x->hash = realloc(x->hash, x->cap * sizeof(*x->hash));
		if (!x->len || !x->hash) {
			fprintf(stderr, "bench: out of memory\n");
			exit(2);
		}
	}
	x->len[x->n] = len;
	x->hash[x->n++] = hash;
}

/*
 * Reads every packet of @b into @rx[writer - 1]; packets of a writer
 * outside 1..@nwriters, or whose producer is not its writer, fail.  With
 * @no_loss, so does a packet that reports loss.
 */
static void read_back(struct tb_buf *b, struct rx *rx, unsigned nwriters,
		      int no_loss)
{
	struct tb_buf_packet p;
	unsigned s;

	tb_buf_begin_read(b);
	while (tb_buf_read_packet(b, &p)) {
		uint64_t h = HASH_INIT;

		if (p.writer_id < 1 || p.writer_id > nwriters ||
		    p.producer_id != p.writer_id) {
			fail("a packet of an unknown writer");
			continue;
		}
		if (no_loss && p.loss)
			fail("a packet reports loss");
		for (s = 0; s < p.nslices; s++)
			h = hash_bytes(h, p.slices[s].data, p.slices[s].size);
		rx_push(&rx[p.writer_id - 1], (uint32_t)p.size, h);
	}
}

/*
 * Matches @x against the chunks of one writer, back from its last id
 * @last, whose template @tidx(id) gives; whole chunks only, and every
 * packet read must match.  Returns the chunks matched; adds their
 * footprint in the buffer to @bytes.
 */
static uint32_t match_back(const struct rx *x, uint32_t last,
			   const uint8_t *tidx, uint64_t *bytes)
{
	size_t i = x->n;
	uint32_t id = last, chunks = 0;

	while (i > 0) {
		const struct tmpl *t = &tpl[tidx[id]];
		unsigned j = t->nfrags;

		while (j > 0 && i > 0) {
			j--;
			i--;
			if (x->len[i] != t->flen[j] ||
			    x->hash[i] != t->fhash[j]) {
				fail("a packet read back differs from the "
				     "one committed (or is out of order)");
				return chunks;
			}
		}
		if (j > 0) {
			fail("a chunk read back only in part");
			return chunks;
		}
		chunks++;
		*bytes += outer(t);
		if (id-- == 0)
			break;
	}
	if (i > 0)
		fail("more packets read back than were committed");
	return chunks;
}

static void rx_free(struct rx *rx, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		free(rx[i].len);
		free(rx[i].hash);
	}
}

/* ---- WR ----------------------------------------------------------------- */

/* The overwrite callback of wr-1w-cb: counts what it is handed. */
static void on_overwrite(void *ctx, const struct tb_buf_packet *p)
{
	(void)ctx;
	cb_pkts++;
	cb_bytes += p->size;
}

/*
 * Which chunk comes next: upstream's loop.  The writer index restarts
 * with every iteration, the template index does not.
 */
struct wr_plan {
	unsigned nwriters;
	size_t tidx;		/* templates used so far */
	uint32_t ids[NWRITERS];	/* next chunk id per writer */
	uint64_t pkts, bytes;	/* planned: packets, their payload bytes */
};

/* Commits (or, with @b NULL, only plans) one upstream iteration. */
static void wr_iteration(struct tb_buf *b, struct wr_plan *pl,
			 uint8_t **log)
{
	static const struct tb_buf_ident one = { 1000, 100 };
	size_t counted = 0, k = 0;

	while (counted < WR_SIZE) {
		size_t ti = pl->tidx++ % 100;
		unsigned w = (unsigned)(k++ % pl->nwriters);
		uint32_t id = pl->ids[w]++;
		struct tb_buf_ident ident;

		counted += KCHUNK;
		if (!b) {
			log[w][id] = (uint8_t)ti;
			pl->pkts += tpl[ti].nfrags;
			pl->bytes += tpl[ti].payload;
			continue;
		}
		ident.uid = 1000 + w;
		ident.pid = (int32_t)(100 + w);
		if (commit(b, &tpl[ti], (uint16_t)(w + 1), (uint16_t)(w + 1),
			   id, pl->nwriters == 1 ? &one : &ident) != TB_OK)
			commit_errors++;
	}
}

/*
 * After @iters iterations of @nwriters: every packet left in @b must be
 * the templates committed, back from each writer's last chunk, and they
 * must fill the buffer (less what a wrap pads and the chunk being made
 * room for).  *@gone_pkts and *@gone_bytes get the packets committed and
 * not read back, and their payload bytes.
 */
static void wr_verify(struct tb_buf *b, unsigned nwriters, int iters,
		      uint64_t *gone_pkts, uint64_t *gone_bytes)
{
	struct wr_plan *pl = calloc(1, sizeof(*pl));
	struct rx *rx = calloc(nwriters, sizeof(*rx));
	uint8_t **log = calloc(nwriters, sizeof(*log));
	uint64_t bytes = 0;
	unsigned w;
	size_t j;
	int i;

	if (!pl || !rx || !log) {
		fprintf(stderr, "bench: out of memory\n");
		exit(2);
	}
	pl->nwriters = nwriters;
	for (w = 0; w < nwriters; w++) {
		/* ids per writer per iteration: at most this many */
		log[w] = malloc((size_t)iters * (WR_SIZE / KCHUNK /
						 nwriters + 1));
		if (!log[w]) {
			fprintf(stderr, "bench: out of memory\n");
			exit(2);
		}
	}
	for (i = 0; i < iters; i++)
		wr_iteration(NULL, pl, log);
	if (!tb_buf_stats(b)->chunks_overwritten)
		fail("WR never reached overwrite");
	read_back(b, rx, nwriters, 0);
	for (w = 0; w < nwriters; w++)
		if (pl->ids[w])
			match_back(&rx[w], pl->ids[w] - 1, log[w], &bytes);
	if (bytes + 2u * (HDR + KCHUNK) < WR_SIZE)
		fail("the chunks left do not fill the buffer");
	*gone_pkts = pl->pkts;
	*gone_bytes = pl->bytes;
	for (w = 0; w < nwriters; w++) {
		*gone_pkts -= rx[w].n;
		for (j = 0; j < rx[w].n; j++)
			*gone_bytes -= rx[w].len[j];
	}
	for (w = 0; w < nwriters; w++)
		free(log[w]);
	free(log);
	rx_free(rx, nwriters);
	free(rx);
	free(pl);
}

/*
 * Median GiB/s (counted) of @runs runs, with the overwrite callback when
 * @cb; @spread gets their spread.
 */
static double bench_wr(unsigned nwriters, int cb, unsigned runs,
		       double *spread)
{
	struct tb_buf *b = tb_buf_create(WR_SIZE, TB_BUF_RING_BUFFER);
	struct wr_plan *pl = calloc(1, sizeof(*pl));
	double v[BENCH_MAX_RUNS] = { 0 };
	uint64_t gone_pkts, gone_bytes;
	unsigned r;
	int i;

	if (!b || !pl) {
		fprintf(stderr, "bench: out of memory\n");
		exit(2);
	}
	pl->nwriters = nwriters;
	commit_errors = 0;
	cb_pkts = cb_bytes = 0;
	if (cb)
		tb_buf_on_overwrite(b, on_overwrite, NULL);
	/* Reach steady state: every later write overwrites. */
	for (i = 0; i < WR_WARMUP; i++)
		wr_iteration(b, pl, NULL);
	for (r = 0; r < runs; r++) {
		double t0 = bench_now(), dt;

		for (i = 0; i < WR_ITERS; i++)
			wr_iteration(b, pl, NULL);
		dt = bench_now() - t0;
		v[r] = (double)WR_ITERS * WR_SIZE / dt / GIB;
	}
	if (commit_errors)
		fail("a WR commit did not return TB_OK");
	wr_verify(b, nwriters, WR_WARMUP + (int)runs * WR_ITERS, &gone_pkts,
		  &gone_bytes);
	if (cb && (cb_pkts != gone_pkts || cb_bytes != gone_bytes))
		fail("the callback was not handed every packet overwritten");
	if (!cb && cb_pkts)
		fail("a callback that was not set was called");
	tb_buf_destroy(b);
	free(pl);
	*spread = bench_spread(v, runs);
	return bench_median(v, runs);
}

/*
 * The WR baseline's destination prefetch, the one tbuffer.h's making room
 * does (tb__buf_prefetch_ahead(), restated here so that the baseline does
 * not lean on a private helper): before the copy to @from, every cache
 * line of [@from, @from + max(@n, WR_AHEAD)) not fetched yet is fetched
 * for writing; *@pf is how far that has gone.
 */
#define WR_AHEAD	16384u	/* tbuffer.h's TB__BUF_AHEAD */

static void wr_prefetch(const uint8_t *dst, size_t *pf, size_t from,
			size_t n)
{
#if defined(__GNUC__)
	size_t span = n > WR_AHEAD ? n : WR_AHEAD, to, p;

	to = WR_SIZE - from > span ? from + span : WR_SIZE;
	if (*pf < from || *pf - from > span + 64)
		*pf = from & ~(size_t)63;
	for (p = *pf; p + 192 < to; p += 256) {
		__builtin_prefetch(dst + p, 1);
		__builtin_prefetch(dst + p + 64, 1);
		__builtin_prefetch(dst + p + 128, 1);
		__builtin_prefetch(dst + p + 192, 1);
	}
	for (; p < to; p += 64)
		__builtin_prefetch(dst + p, 1);
	*pf = p;
#else
	(void)dst;
	(void)pf;
	(void)from;
	(void)n;
#endif
}

static void wr_memcpy_iteration(uint8_t *dst, size_t *off, size_t *tidx,
				size_t *pf)
{
	size_t counted = 0;

	while (counted < WR_SIZE) {
		const struct tmpl *t = &tpl[(*tidx)++ % 100];

		if (*off + outer(t) > WR_SIZE)
			*off = 0;
		wr_prefetch(dst, pf, *off, outer(t));
		memcpy(dst + *off + HDR, t->data, t->size);
		*off += outer(t);
		counted += KCHUNK;
	}
}

static double bench_wr_memcpy(unsigned runs)
{
	uint8_t *dst = malloc(WR_SIZE);
	size_t off = 0, tidx = 0, pf = 0;
	double v[BENCH_MAX_RUNS] = { 0 };
	unsigned r;
	int i;

	if (!dst) {
		fprintf(stderr, "bench: out of memory\n");
		exit(2);
	}
	memset(dst, 0, WR_SIZE);
	wr_memcpy_iteration(dst, &off, &tidx, &pf);	/* warm-up */
	for (r = 0; r < runs; r++) {
		double t0 = bench_now(), dt;

		for (i = 0; i < WR_ITERS; i++)
			wr_memcpy_iteration(dst, &off, &tidx, &pf);
		dt = bench_now() - t0;
		v[r] = (double)WR_ITERS * WR_SIZE / dt / GIB;
	}
	sink += dst[off / 2];
	free(dst);
	return bench_median(v, runs);
}

/* ---- RD ----------------------------------------------------------------- */

static uint32_t rd_chunks(void)
{
	return RD_SIZE / KCHUNK - 1;	/* upstream: while < 128 MiB - 4 KiB */
}

static struct tb_buf *rd_fill(void)
{
	static const struct tb_buf_ident one = { 1000, 100 };
	struct tb_buf *b = tb_buf_create(RD_SIZE, TB_BUF_RING_BUFFER);
	uint32_t id, n = rd_chunks();

	if (!b) {
		fprintf(stderr, "bench: out of memory\n");
		exit(2);
	}
	for (id = 0; id < n; id++)
		if (commit(b, &tpl[id % 100], 1, 1, id, &one) != TB_OK)
			fail("an RD fill commit");
	return b;
}

/* The packets and payload bytes RD must read. */
static void rd_expect(uint64_t *pkts, uint64_t *bytes)
{
	uint32_t id, n = rd_chunks();

	*pkts = *bytes = 0;
	for (id = 0; id < n; id++) {
		*pkts += tpl[id % 100].nfrags;
		*bytes += tpl[id % 100].payload;
	}
}

/* Untimed: one full read of a fresh fill, every packet matched. */
static void rd_verify(void)
{
	struct tb_buf *b = rd_fill();
	uint32_t n = rd_chunks(), id;
	uint64_t bytes = 0;
	uint8_t *tidx = malloc(n);
	struct rx rx;

	if (!tidx) {
		fprintf(stderr, "bench: out of memory\n");
		exit(2);
	}
	for (id = 0; id < n; id++)
		tidx[id] = (uint8_t)(id % 100);
	memset(&rx, 0, sizeof(rx));
	if (tb_buf_stats(b)->chunks_overwritten)
		fail("the RD fill overwrote");
	read_back(b, &rx, 1, 1);
	if (match_back(&rx, n - 1, tidx, &bytes) != n)
		fail("RD did not read back every chunk");
	rx_free(&rx, 1);
	free(tidx);
	tb_buf_destroy(b);
}

/*
 * Median GiB/s of payload read, without (@excl) and with (@incl) freeing
 * the buffer, over @runs runs; each run fills a fresh buffer untimed.
 */
static void bench_rd(unsigned runs, double *excl, double *incl,
		     double *spread_excl, double *spread_incl)
{
	double ve[BENCH_MAX_RUNS] = { 0 }, vi[BENCH_MAX_RUNS] = { 0 };
	uint64_t want_pkts, want_bytes;
	unsigned r;

	rd_expect(&want_pkts, &want_bytes);
	rd_verify();
	for (r = 0; r < runs; r++) {
		struct tb_buf *b = rd_fill();
		struct tb_buf_packet p;
		uint64_t bytes = 0, pkts = 0;
		double t0 = bench_now(), t1, t2;
		unsigned s;

		tb_buf_begin_read(b);
		while (tb_buf_read_packet(b, &p)) {
			pkts++;
			for (s = 0; s < p.nslices; s++)
				bytes += p.slices[s].size;
		}
		t1 = bench_now();
		tb_buf_destroy(b);
		t2 = bench_now();
		if (pkts != want_pkts || bytes != want_bytes)
			fail("an RD run read other packets than were filled");
		ve[r] = (double)bytes / (t1 - t0) / GIB;
		vi[r] = (double)bytes / (t2 - t0) / GIB;
	}
	*excl = bench_median(ve, runs);
	*incl = bench_median(vi, runs);
	*spread_excl = bench_spread(ve, runs);
	*spread_incl = bench_spread(vi, runs);
}

/* Copies every packet payload of the RD layout at @region out once. */
static uint64_t rd_memcpy_pass(const uint8_t *region)
{
	static uint8_t scratch[KCHUNK];
	uint32_t id, n = rd_chunks();
	uint64_t bytes = 0;
	size_t off = 0;
	unsigned j;

	for (id = 0; id < n; id++) {
		const struct tmpl *t = &tpl[id % 100];
		const uint8_t *c = region + off + HDR;

		for (j = 0; j < t->nfrags; j++) {
			memcpy(scratch, c + t->foff[j], t->flen[j]);
			bytes += t->flen[j];
			sink += scratch[j];
		}
		off += outer(t);
	}
	return bytes;
}

/* The RD layout in a fresh malloc'd region, written (faulted in) untimed. */
static uint8_t *rd_memcpy_fill(void)
{
	uint8_t *region = malloc(RD_SIZE);
	uint32_t id, n = rd_chunks();
	size_t off = 0;

	if (!region) {
		fprintf(stderr, "bench: out of memory\n");
		exit(2);
	}
	for (id = 0; id < n; id++) {
		const struct tmpl *t = &tpl[id % 100];

		memset(region + off, 0, HDR);
		memcpy(region + off + HDR, t->data, t->size);
		off += outer(t);
	}
	return region;
}

/* The RD baselines: median GiB/s of the copy, and of the copy + free(). */
static void bench_rd_memcpy(unsigned runs, double *excl, double *incl)
{
	double ve[BENCH_MAX_RUNS] = { 0 }, vi[BENCH_MAX_RUNS] = { 0 };
	uint8_t *region = rd_memcpy_fill();
	unsigned r;

	(void)rd_memcpy_pass(region);	/* warm-up */
	free(region);
	for (r = 0; r < runs; r++) {
		double t0, t1, t2;
		uint64_t bytes;

		region = rd_memcpy_fill();
		t0 = bench_now();
		bytes = rd_memcpy_pass(region);
		t1 = bench_now();
		free(region);
		t2 = bench_now();
		ve[r] = (double)bytes / (t1 - t0) / GIB;
		vi[r] = (double)bytes / (t2 - t0) / GIB;
	}
	*excl = bench_median(ve, runs);
	*incl = bench_median(vi, runs);
}

/* ---- Patch -------------------------------------------------------------- */

static unsigned patch_loop(struct tb_buf *b, uint32_t id, int expect,
			   unsigned n)
{
	struct tb_buf_patch p = { 10, { 1, 2, 3, 4 } };
	unsigned i, ok = 0;

	for (i = 0; i < n; i++)
		ok += tb_buf_patch(b, 1, 1, id, &p, 1, false) == expect;
	return ok;
}

/* Median ns per patch of chunk @id over @runs runs of PATCH_N. */
static double bench_patch(struct tb_buf *b, uint32_t id, int expect,
			  unsigned runs, double *spread)
{
	double v[BENCH_MAX_RUNS] = { 0 };
	unsigned r;

	if (patch_loop(b, id, expect, PATCH_N / 20) != PATCH_N / 20)
		fail("a patch returned the wrong result");
	for (r = 0; r < runs; r++) {
		double t0 = bench_now();
		unsigned ok = patch_loop(b, id, expect, PATCH_N);

		v[r] = (bench_now() - t0) / PATCH_N * 1e9;
		if (ok != PATCH_N)
			fail("a patch returned the wrong result");
	}
	*spread = bench_spread(v, runs);
	return bench_median(v, runs);
}

/* ---- The table ---------------------------------------------------------- */

enum { WR1, WRN, WR1_CB, RD_EXCL, RD_INCL, P_LAST, P_11, P_MISS, NROWS };

static const char *const row_names[NROWS] = {
	"wr-1w", "wr-1000w", "wr-1w-cb", "rd-excl-free", "rd-incl-free",
	"patch-last", "patch-11th", "patch-missing",
};

static const char *const row_what[NROWS] = {
	"write, 1 writer, 64 MiB",
	"write, 1000 writers, 64 MiB",
	"write, 1 writer, callback",
	"read 128 MiB, free not timed",
	"read 128 MiB + free, timed",
	"patch: last chunk",
	"patch: 11th from the end",
	"patch: missing id",
};

struct row {
	double value, spread, base;	/* base 0: no baseline */
	unsigned failed;
};

static void print_row(unsigned i, const struct row *r)
{
	int rate = i < P_LAST;

	printf("%-14s %-29s %8.2f %-5s %6.0f", row_names[i], row_what[i],
	       r->value, rate ? "GiB/s" : "ns", r->spread);
	if (r->base > 0)
		printf(" %8.2f GiB/s %6.2f", r->base, r->value / r->base);
	else
		printf(" %14s %6s", "-", "-");
	printf("%s\n", r->failed ? "  VERIFY FAILED" : "");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static const struct tb_buf_ident one = { 1000, 100 };
	unsigned char sel[NROWS];
	struct row rows[NROWS];
	unsigned runs = bench_runs(), failed = 0, i;
	uint64_t rd_pkts, rd_bytes;
	double real = 0;

	bench_select(argc, argv, row_names, NROWS, sel);
	memset(rows, 0, sizeof(rows));
	gen_templates(tpl, 100);
	for (i = 0; i < 100; i++)
		real += tpl[i].size;
	rd_expect(&rd_pkts, &rd_bytes);
	printf("tbuffer bench: 100 chunk templates, mean %.0f bytes (4096 "
	       "counted per chunk, as upstream).\nPer row: the median of %u "
	       "timed runs (TB_BENCH_RUNS) after an untimed warm-up;\n"
	       "memcpy: the same data movement with plain memcpy, measured "
	       "in this run;\nWR's memcpy prefetches its destination as "
	       "tbuffer.h does (16 KiB ahead).\n\n", real / 100, runs);
	printf("%-14s %-29s %14s %6s %14s %6s\n", "row", "what", "tbuffer",
	       "spread", "memcpy", "ratio");
	printf("%-14s %-29s %14s %6s %14s %6s\n", "", "", "median", "%",
	       "median", "");

	if (sel[WR1] || sel[WRN] || sel[WR1_CB]) {
		double mc = bench_wr_memcpy(runs);

		for (i = WR1; i <= WR1_CB; i++) {
			if (!sel[i])
				continue;
			failures = 0;
			rows[i].value = bench_wr(i == WRN ? NWRITERS : 1,
						 i == WR1_CB, runs,
						 &rows[i].spread);
			rows[i].base = mc;
			rows[i].failed = failures;
			print_row(i, &rows[i]);
		}
	}
	if (sel[RD_EXCL] || sel[RD_INCL]) {
		failures = 0;
		bench_rd_memcpy(runs, &rows[RD_EXCL].base, &rows[RD_INCL].base);
		bench_rd(runs, &rows[RD_EXCL].value, &rows[RD_INCL].value,
			 &rows[RD_EXCL].spread, &rows[RD_INCL].spread);
		rows[RD_EXCL].failed = rows[RD_INCL].failed = failures;
		for (i = RD_EXCL; i <= RD_INCL; i++)
			if (sel[i])
				print_row(i, &rows[i]);
	}
	if (sel[P_LAST] || sel[P_11] || sel[P_MISS]) {
		static const int expect[3] = { TB_OK, TB_OK,
					       TB_ENOENT };
		struct tb_buf *pb = tb_buf_create(16u * MIB,
						  TB_BUF_RING_BUFFER);
		size_t counted = 0;
		uint32_t id = 0, target[3];

		gen_templates(tpl, 10);	/* upstream's 10: the same draws */
		failures = 0;
		while (counted < 16u * MIB) {
			if (commit(pb, &tpl[id % 10], 1, 1, id, &one) !=
			    TB_OK)
				fail("a patch fill commit");
			id++;
			counted += KCHUNK;
		}
		target[0] = id - 1;
		target[1] = id - 11;
		target[2] = id;
		for (i = P_LAST; i <= P_MISS; i++) {
			unsigned k = i - P_LAST, before = failures;

			if (!sel[i])
				continue;
			rows[i].value = bench_patch(pb, target[k], expect[k],
						    runs, &rows[i].spread);
			rows[i].failed = failures - before;
			print_row(i, &rows[i]);
		}
		tb_buf_destroy(pb);
	}
	for (i = 0; i < NROWS; i++)
		failed += sel[i] && rows[i].failed;
	printf("\nspread: (max - min) / median of the runs.  ratio = tbuffer "
	       "/ memcpy.  WR counts 4096 B per\nchunk on both sides; RD "
	       "counts packet payload (%.1f MiB per run).  rd-excl-free's\n"
	       "memcpy is the copy-out alone, rd-incl-free's the copy-out "
	       "plus free() of the 128 MiB\nit came from: compare a read "
	       "figure only with one timed over the same boundaries.\n"
	       "Verified: every commit and patch result, every packet read "
	       "back (length, hash, order).\n",
	       (double)rd_bytes / MIB);
	if (failed)
		printf("bench: %u row(s) FAILED verification\n", failed);
	return failed ? 1 : (int)(sink & 0);
}
