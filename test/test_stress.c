/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_stress.c - many writer threads and one reader on small rings.
 *
 * Writers send self-checking packets (stress_helpers.h) of random sizes,
 * many of them larger than a chunk, some of them by hand with a stall
 * while a fragment is open (sched_yield, a spin, tb_writer_sync() and a
 * rebase), so the reader's scrapes, the writers' relocations, burned
 * claims, holes and a full ring all happen.  The reader (the test thread)
 * alternates lazy and scraping drains.  Afterwards, exactly:
 *
 *   - every writer's packets arrived in seq order, each once, intact;
 *   - a packet arrived iff its write returned TB_OK, so
 *     packets written == packets received + packets reported dropped.
 *
 * Short under `make test`; TB_STRESS=long (set by `make tsan`) runs ten
 * times as many packets.  TB_STRESS_VERBOSE=1 prints each run's counts;
 * TB_STRESS_SEED=n changes the random streams.  On a loaded machine every
 * yield and wake-up waits for a time slice (one run took 250 s instead of
 * 0.3): writers then stop starting packets after ST_BUDGET_MS (a run's
 * budget of time, not a check of it), and every count above holds for
 * the packets they tried.
 */
/* the protocol steps, one at a time (see tbring.h) */
#define TB_PROTOCOL_STEPS 1
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tbpacket.h"
#include "stress_helpers.h"

#define ST_BID		0x5100u
#define ST_WID		0x0700u
#define ST_NEAR_TOP	0xfffffff0u	/* start: rolls over after 16 */

enum { ST_UNTRIED, ST_OK, ST_DROPPED };

struct st_cfg {
	unsigned writers;		/* 1 .. 4 */
	uint32_t chunk_size;
	uint32_t num_chunks;
	uint32_t start;			/* first position */
	enum tb_full_policy policy;
	unsigned stall_pct;		/* packets written by hand, stalling */
	unsigned packets;		/* per writer */
	unsigned wait_ms;		/* reader's tb_reader_wait(), 0: 1 */
};

struct st_run;

struct st_writer {
	struct st_run *run;
	unsigned idx;
	pthread_t thread;
	struct tb_writer w;
	uint64_t rng;
	uint8_t *pkt;
	uint8_t *scratch;
	uint8_t *status;		/* per seq: ST_* */
	uint32_t ok;
	uint32_t dropped;
	uint32_t tried;			/* packets it tried to write */
	uint32_t stalled;		/* packets written with a stall */
	struct sh_stall st;
	int bad;			/* an unexpected result, or 0 */
	const char *bad_what;
};

struct st_run {
	struct st_cfg cfg;
	uint64_t seed;
	struct tb_ring ring;
	void *mem;
	size_t len;
	uint32_t maxlen;		/* largest packet */
	int done;			/* writers finished (atomic) */
	uint64_t until_ms;		/* writers start no packet after */
	int stop;			/* reader failed: writers give up */
	struct st_writer wr[4];
	struct tb_reader rd;
	uint8_t *rscratch;
	struct sh_asm asm_;
	/* the library's own reassembly, fed the same chunks */
	struct tb_reassembly ra;
	void *ra_mem;
	int64_t pk_last[4];
	uint32_t pk_got[4];
	unsigned pk_bad;
	char pk_what[160];
	unsigned drains[2];		/* by mode */
	unsigned waits;
	unsigned slept_through;		/* waits that missed a change */
	char slept_what[160];
};

static bool st_long(void)
{
	const char *e = getenv("TB_STRESS");

	return e && !strcmp(e, "long");
}

/* A run's time: writers start no packet after it, past the first 100. */
#define ST_BUDGET_MS	(st_long() ? 600000u : 4000u)
#define ST_MIN_PACKETS	100u

static uint64_t st_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static bool st_verbose(void)
{
	const char *e = getenv("TB_STRESS_VERBOSE");

	return e && *e && *e != '0';
}

static uint64_t st_base_seed(void)
{
	const char *e = getenv("TB_STRESS_SEED");

	return e ? strtoull(e, NULL, 0) : 0x7b5eedull;
}

static void st_bad(struct st_writer *sw, int ret, const char *what)
{
	if (!sw->bad) {
		sw->bad = ret ? ret : -100;
		sw->bad_what = what;
	}
}

/* Mostly small packets; some up to a chunk; some several chunks long. */
static uint32_t st_pick_len(struct st_writer *sw)
{
	const struct st_run *run = sw->run;
	uint32_t big = tb_frag_max_size(run->cfg.chunk_size);

	switch (sh_range(&sw->rng, 0, 7)) {
	case 0: case 1: case 2: case 3:
		return sh_range(&sw->rng, SH_HDR, SH_HDR + 64);
	case 4: case 5:
		return sh_range(&sw->rng, SH_HDR, big + 1);
	default:
		return sh_range(&sw->rng, big - 2, run->maxlen);
	}
}

static void *st_writer_main(void *arg)
{
	struct st_writer *sw = (struct st_writer *)arg;
	struct st_run *run = sw->run;
	uint32_t seq;

	for (seq = 0; seq < run->cfg.packets; seq++) {
		uint32_t len = st_pick_len(sw);
		int ret;

		if (__atomic_load_n(&run->stop, __ATOMIC_RELAXED) ||
		    (seq >= ST_MIN_PACKETS && st_now_ms() > run->until_ms))
			break;
		sh_fill(sw->pkt, sw->idx, seq, len);
		if (sh_range(&sw->rng, 0, 99) < run->cfg.stall_pct) {
			sw->stalled++;
			ret = sh_write_stalling(&sw->w, sw->pkt, len,
						&sw->rng, &sw->st);
		} else {
			ret = tb_writer_write_packet(&sw->w, sw->pkt, len);
		}
		if (ret == TB_OK) {
			sw->status[seq] = ST_OK;
			sw->ok++;
			continue;
		}
		sw->status[seq] = ST_DROPPED;
		sw->dropped++;
		if (ret != TB_FULL && ret != TB_NO_CHUNK && ret != TB_DROPPED &&
		    ret != SH_ABANDONED)
			st_bad(sw, ret, "write");
		if (sw->st.bad)
			st_bad(sw, TB_EINVAL, sw->st.bad);
		sched_yield();		/* let the reader catch up */
	}
	sw->tried = seq;
	if (tb_writer_release(&sw->w) != TB_OK)
		st_bad(sw, TB_EINVAL, "release");
	__atomic_add_fetch(&run->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void st_setup(struct st_run *run, const struct st_cfg *cfg,
		     uint64_t seed)
{
	unsigned i;

	memset(run, 0, sizeof(*run));
	run->cfg = *cfg;
	run->seed = seed;
	run->len = tb_ring_size(cfg->chunk_size, cfg->num_chunks);
	ck_assert_uint_ne(run->len, 0);
	ck_assert_int_eq(posix_memalign(&run->mem, 64, run->len), 0);
	memset(run->mem, 0, run->len);
	ck_assert_int_eq(tb_ring_init_at(&run->ring, run->mem, run->len,
					 cfg->chunk_size, cfg->num_chunks,
					 cfg->start), TB_OK);
	run->maxlen = 3 * cfg->chunk_size + 17;
	run->rscratch = malloc(cfg->chunk_size);
	ck_assert_ptr_nonnull(run->rscratch);
	ck_assert_int_eq(tb_reader_init(&run->rd, &run->ring, run->rscratch),
			 TB_OK);
	sh_asm_init(&run->asm_, cfg->writers, ST_WID, ST_BID, cfg->packets,
		    run->maxlen);
	run->asm_.strict_loss = 1;	/* a dropped seq is never retried */
	i = (unsigned)tb_reassembly_size(cfg->writers, run->maxlen);
	run->ra_mem = malloc(i);
	ck_assert_ptr_nonnull(run->ra_mem);
	ck_assert_int_eq(tb_reassembly_init(&run->ra, run->ra_mem, i,
					    cfg->writers, run->maxlen,
					    TB_OVERSIZE_DROP), TB_OK);
	for (i = 0; i < 4; i++)
		run->pk_last[i] = -1;
	for (i = 0; i < cfg->writers; i++) {
		struct st_writer *sw = &run->wr[i];

		sw->run = run;
		sw->idx = i;
		sw->rng = sh_seed(seed, i + 1);
		sw->pkt = malloc(run->maxlen);
		sw->scratch = malloc(cfg->chunk_size);
		sw->status = calloc(cfg->packets, 1);
		ck_assert(sw->pkt && sw->scratch && sw->status);
		ck_assert_int_eq(tb_writer_init(&sw->w, &run->ring,
						(uint16_t)(ST_WID + i),
						(uint16_t)(ST_BID + i),
						cfg->policy, sw->scratch),
				 TB_OK);
	}
}

static void st_teardown(struct st_run *run)
{
	unsigned i;

	for (i = 0; i < run->cfg.writers; i++) {
		free(run->wr[i].pkt);
		free(run->wr[i].scratch);
		free(run->wr[i].status);
	}
	sh_asm_free(&run->asm_);
	free(run->ra_mem);
	free(run->rscratch);
	free(run->mem);
}

/*
 * A packet from tb_reassembly: whole and intact, in its writer's order,
 * and flagged TB_PKT_LOSS after every gap.
 */
static void st_packet(void *ctx, const struct tb_packet *pk)
{
	struct st_run *run = (struct st_run *)ctx;
	unsigned idx = (unsigned)(uint16_t)(pk->writer - ST_WID);
	uint32_t seq = pk->len >= SH_HDR ? sh_get32(pk->data + 4) : 0;
	const char *bad = NULL;

	if (idx >= run->cfg.writers || pk->len < SH_HDR)
		bad = "unknown writer or short packet";
	else if ((pk->data[0] | pk->data[1] << 8) != (int)idx ||
		 sh_get32(pk->data + 8) != pk->len || pk->len != pk->size ||
		 sh_fnv(pk->data + SH_HDR, pk->len - SH_HDR) !=
		 sh_get32(pk->data + 12))
		bad = "torn";
	else if ((int64_t)seq <= run->pk_last[idx])
		bad = "out of order or repeated";
	else if ((int64_t)seq != run->pk_last[idx] + 1 &&
		 !(pk->flags & TB_PKT_LOSS))
		bad = "a gap without TB_PKT_LOSS";
	if (bad) {
		if (!run->pk_bad++)
			snprintf(run->pk_what, sizeof(run->pk_what),
				 "reassembly: writer %u seq %u: %s", idx, seq,
				 bad);
		return;
	}
	run->pk_last[idx] = seq;
	run->pk_got[idx]++;
}

/* Every chunk goes to both reassemblers. */
static void st_chunk(void *ctx, const struct tb_chunk_view *v)
{
	struct st_run *run = (struct st_run *)ctx;

	sh_asm_chunk(&run->asm_, v);
	run->ra.fn = st_packet;
	run->ra.ctx = run;
	tb__ra_chunk(&run->ra, v);
}

/* The positions one drain resolved, or TB_EPROTO. */
static int st_drain(struct st_run *run, unsigned max, enum tb_read_mode mode)
{
	unsigned n;
	int why = tb_reader_drain(&run->rd, max, mode, st_chunk, run, &n);

	return why == TB_EPROTO ? why : (int)n;
}

static uint32_t st_write_pos(const struct st_run *run)
{
	return __atomic_load_n(&run->ring.hdr->write_pos, __ATOMIC_ACQUIRE);
}

/*
 * tb_reader_wait(), watched by the doorbell itself.  A wake-up is lost
 * when a writer rang the bell after the reader armed it (the bell's
 * sequence moved past the reader's ticket) and the reader still slept to
 * its timeout.  A wake-up delivered while the reader, already woken or
 * timed out, waits for a CPU is not lost: the kernel counts a wake that
 * reaches a queued waiter as a wake-up, and writers that move on after
 * the reader left say nothing about its sleep.  (Counting writer
 * progress up to the reader's return, as this used to, flaked on a
 * starved machine for exactly that reason.)
 */
static void st_wait(struct st_run *run)
{
	struct tb_reader *rd = &run->rd;
	struct tb_bell *b = rd->ring->bell;
	unsigned ms = run->cfg.wait_ms ? run->cfg.wait_ms : 1;
	uint32_t ticket, rung;
	bool woken;

	run->waits++;
	ticket = tb_bell_prepare(b);
	if (!tb_reader_idle(rd)) {
		tb_bell_cancel(b);
		return;
	}
	woken = tb_bell_wait(b, ticket, ms);
	rung = __atomic_load_n(&b->seq, __ATOMIC_ACQUIRE) - ticket;
	if (woken || !rung || ms < 50)
		return;
	if (!run->slept_through++)
		snprintf(run->slept_what, sizeof(run->slept_what),
			 "slept %u ms at pos %#x although the bell rang %u "
			 "times after it was armed", ms, rd->pos, rung);
}

/*
 * tb_reader_wait() as a service would call it: it spins on write_pos
 * before it arms the doorbell.  Only this thread arms the bell, and every
 * wait disarms it before it returns, so any ring of the bell during the
 * call came after the call's own tb_bell_prepare(): a call that slept to
 * its timeout although the bell's sequence moved slept through a wake-up
 * (the same check as st_wait(), with the ticket taken before the call).
 */
static void st_wait_reader(struct st_run *run)
{
	struct tb_reader *rd = &run->rd;
	struct tb_bell *b = rd->ring->bell;
	unsigned ms = run->cfg.wait_ms ? run->cfg.wait_ms : 1;
	uint32_t before, rung;
	bool woken;

	run->waits++;
	before = __atomic_load_n(&b->seq, __ATOMIC_ACQUIRE);
	woken = tb_reader_wait(rd, ms);
	rung = __atomic_load_n(&b->seq, __ATOMIC_ACQUIRE) - before;
	if (woken || !rung || ms < 50)
		return;
	if (!run->slept_through++)
		snprintf(run->slept_what, sizeof(run->slept_what),
			 "tb_reader_wait() slept %u ms at pos %#x although "
			 "the bell rang %u times during it", ms, rd->pos,
			 rung);
}

/* The test thread reads while the writers run, then drains the rest. */
static void st_read(struct st_run *run)
{
	struct tb_reader *rd = &run->rd;
	uint64_t rng = sh_seed(run->seed, 99);
	unsigned iter, idle;
	int n;

	for (iter = 0;; iter++) {
		enum tb_read_mode mode = sh_range(&rng, 0, 1) ?
					 TB_READ_SCRAPE : TB_READ_LAZY;
		unsigned max = sh_range(&rng, 1, 2 * run->cfg.num_chunks);

		run->drains[mode == TB_READ_SCRAPE]++;
		n = st_drain(run, max, mode);
		if (n < 0 || run->asm_.failures) {
			__atomic_store_n(&run->stop, 1, __ATOMIC_RELAXED);
			return;
		}
		if (n)
			continue;
		if (__atomic_load_n(&run->done, __ATOMIC_ACQUIRE) ==
		    (int)run->cfg.writers)
			break;
		switch (sh_range(&rng, 0, 2)) {
		case 0:
			st_wait(run);
			break;
		case 1:
			st_wait_reader(run);
			break;
		default:
			sched_yield();
		}
	}
	/* every writer let go of its chunks: resolve every position */
	for (idle = 0; rd->pos != st_write_pos(run) && idle < 1000; idle++) {
		n = st_drain(run, ~0u, TB_READ_SCRAPE);
		if (n < 0)
			return;
		if (n)
			idle = 0;
	}
}

struct st_totals {
	uint32_t written, ok, dropped, received, discarded, orphans;
	uint32_t stalled, syncs, sync_moved, abandoned, scraped_chunks;
	struct tb_ring_stats rs;
};

static void st_check(struct st_run *run, struct st_totals *t)
{
	const struct st_cfg *cfg = &run->cfg;
	struct tb_reader *rd = &run->rd;
	unsigned i;
	uint32_t seq;

	memset(t, 0, sizeof(*t));
	ck_assert_msg(!run->asm_.failures, "seed %#llx: %s (%u failures)",
		      (unsigned long long)run->seed, run->asm_.err,
		      run->asm_.failures);
	ck_assert_msg(!rd->stopped, "reader stopped: protocol error");
	ck_assert_msg(!run->slept_through,
		      "reader slept through %u wake-ups: first %s",
		      run->slept_through, run->slept_what);
	ck_assert_msg(rd->pos == st_write_pos(run),
		      "positions left unresolved: read %#x write %#x",
		      rd->pos, st_write_pos(run));
	for (i = 0; i < cfg->writers; i++) {
		struct st_writer *sw = &run->wr[i];
		struct sh_stream *s = &run->asm_.s[i];

		ck_assert_msg(!sw->bad, "writer %u: %s returned %d (%s)", i,
			      sw->bad_what, sw->bad, tb_strerror(sw->bad));
		ck_assert_uint_eq(sw->ok + sw->dropped, sw->tried);
		for (seq = 0; seq < cfg->packets; seq++)
			ck_assert_msg(s->seen[seq] ==
				      (sw->status[seq] == ST_OK),
				      "seed %#llx writer %u seq %u: write %s, %s",
				      (unsigned long long)run->seed, i, seq,
				      sw->status[seq] == ST_OK ? "ok" :
				      "dropped", s->seen[seq] ? "received" :
				      "never received");
		ck_assert_uint_eq(s->received, sw->ok);
		/* tb_reassembly delivered exactly the same packets */
		ck_assert_msg(!run->pk_bad, "%s", run->pk_what);
		ck_assert_uint_eq(run->pk_got[i], sw->ok);
		ck_assert_msg(!s->orphans,
			      "writer %u: %u continuations without a start",
			      i, s->orphans);
		/* only a packet its writer gave up on stays partial */
		ck_assert_uint_le(s->discarded + s->pending, sw->dropped);
		t->written += sw->tried;
		t->ok += sw->ok;
		t->dropped += sw->dropped;
		t->received += s->received;
		t->discarded += s->discarded;
		t->stalled += sw->stalled;
		t->syncs += sw->st.syncs;
		t->sync_moved += sw->st.moved;
		t->abandoned += sw->st.abandoned;
		t->scraped_chunks += s->scraped;
	}
	ck_assert_uint_eq(t->written, t->received + t->dropped);
	tb_ring_stats(&run->ring, &t->rs);
	/* every burned claim is a position the reader resolved as a hole */
	ck_assert_uint_ge(t->rs.rstat[TB_RS_HOLES], t->rs.wstat[TB_WS_HOLES]);
	ck_assert_uint_eq(t->rs.rstat[TB_RS_MALFORMED], 0);
}

static void st_print(const struct st_run *run, const struct st_totals *t,
		     const char *name)
{
	const struct st_cfg *c = &run->cfg;

	printf("%s: %uw %ux%u start %#x %s: written %u received %u "
	       "dropped %u (full %u nochunk %u reloc-dropped %u) | "
	       "scrapes %u relocations %u syncs %u/%u moved abandoned %u | "
	       "holes r%u w%u | retry-later %u | stalls %u | "
	       "drains %u/%u waits %u (%u ms)\n",
	       name, c->writers, c->num_chunks, c->chunk_size, c->start,
	       c->policy == TB_STALL ? "stall" : "drop", t->written,
	       t->received, t->dropped, t->rs.wstat[TB_WS_FULL],
	       t->rs.wstat[TB_WS_NO_CHUNK], t->rs.wstat[TB_WS_DROPPED_FRAGS],
	       t->rs.rstat[TB_RS_SCRAPES], t->rs.wstat[TB_WS_RELOCATIONS],
	       t->sync_moved, t->syncs, t->abandoned, t->rs.rstat[TB_RS_HOLES],
	       t->rs.wstat[TB_WS_HOLES], t->rs.rstat[TB_RS_RETRY_LATER],
	       t->rs.wstat[TB_WS_STALLS], run->drains[0], run->drains[1],
	       run->waits, c->wait_ms ? c->wait_ms : 1);
	fflush(stdout);
}

/* One complete run of @cfg; the totals in *@t. */
static void st_run_once(const struct st_cfg *cfg, uint64_t seed,
			struct st_totals *t, const char *name)
{
	struct st_run *run = calloc(1, sizeof(*run));
	unsigned i;

	ck_assert_ptr_nonnull(run);
	st_setup(run, cfg, seed);
	run->until_ms = st_now_ms() + ST_BUDGET_MS;
	for (i = 0; i < cfg->writers; i++)
		ck_assert_int_eq(pthread_create(&run->wr[i].thread, NULL,
						st_writer_main,
						&run->wr[i]), 0);
	st_read(run);
	for (i = 0; i < cfg->writers; i++)
		ck_assert_int_eq(pthread_join(run->wr[i].thread, NULL), 0);
	st_check(run, t);
	if (st_verbose())
		st_print(run, t, name);
	st_teardown(run);
	free(run);
}

static unsigned st_packets(unsigned short_n)
{
	return st_long() ? 10 * short_n : short_n;
}

/*
 * The matrix: 1-4 writers x {DROP, STALL} x {start 0, start just below
 * 2^32}, on 4 x 256 B and 8 x 512 B rings; a quarter of the packets
 * stall with a fragment open.
 */
START_TEST(test_stress_matrix)
{
	struct st_cfg cfg;
	struct st_totals t;
	char name[32];

	memset(&cfg, 0, sizeof(cfg));
	cfg.writers = 1 + (unsigned)(_i & 3);
	cfg.policy = _i & 4 ? TB_STALL : TB_DROP;
	cfg.start = _i & 8 ? ST_NEAR_TOP - (uint32_t)_i : 0;
	cfg.chunk_size = (_i ^ (_i >> 2)) & 1 ? 512 : 256;
	cfg.num_chunks = cfg.chunk_size == 256 ? 4 : 8;
	cfg.stall_pct = 25;
	cfg.packets = st_packets(6000 / cfg.writers);
	/* half of them wait long enough to notice a missed wake-up */
	cfg.wait_ms = _i & 2 ? 300 : 1;
	snprintf(name, sizeof(name), "matrix[%d]", _i);
	st_run_once(&cfg, sh_seed(st_base_seed(), (uint64_t)_i), &t, name);
	ck_assert_uint_gt(t.received, 0);
	/* a stalled writer waits: TB_FULL only after a second idle */
	if (cfg.policy == TB_STALL)
		ck_assert_msg(!t.rs.wstat[TB_WS_FULL],
			      "%u TB_FULL under TB_STALL: a lost wake-up?",
			      t.rs.wstat[TB_WS_FULL]);
}
END_TEST

/*
 * The scrape path must really run: two writers that stall with open
 * fragments in a 4 x 256 B ring, the reader scraping; rerun (at most 8
 * times) until the writers relocated at least once, and the reader
 * scraped.
 */
START_TEST(test_stress_relocations_happen)
{
	struct st_cfg cfg;
	struct st_totals t, sum;
	unsigned run;

	memset(&cfg, 0, sizeof(cfg));
	memset(&sum, 0, sizeof(sum));
	cfg.writers = 2;
	cfg.policy = _i ? TB_DROP : TB_STALL;
	cfg.start = _i ? ST_NEAR_TOP : 0;
	cfg.chunk_size = 256;
	cfg.num_chunks = 4;
	cfg.stall_pct = 60;
	cfg.packets = st_packets(2000);
	for (run = 0; run < 8; run++) {
		st_run_once(&cfg, sh_seed(st_base_seed() + 1000 + run,
					  (uint64_t)_i), &t,
			    _i ? "relocate-drop" : "relocate-stall");
		sum.rs.wstat[TB_WS_RELOCATIONS] +=
			t.rs.wstat[TB_WS_RELOCATIONS];
		sum.rs.rstat[TB_RS_SCRAPES] += t.rs.rstat[TB_RS_SCRAPES];
		sum.sync_moved += t.sync_moved;
		if (sum.rs.wstat[TB_WS_RELOCATIONS] &&
		    sum.rs.rstat[TB_RS_SCRAPES])
			break;
	}
	ck_assert_msg(sum.rs.wstat[TB_WS_RELOCATIONS] > 0,
		      "no relocation in %u runs", run);
	ck_assert_uint_gt(sum.rs.rstat[TB_RS_SCRAPES], 0);
}
END_TEST

/*
 * Four writers, every packet a multi-chunk one or a stall, 2-chunk ring
 * across the rollover: the tightest geometry the ring allows.
 */
START_TEST(test_stress_two_chunks)
{
	struct st_cfg cfg;
	struct st_totals t;

	memset(&cfg, 0, sizeof(cfg));
	cfg.writers = 4;
	cfg.policy = _i ? TB_STALL : TB_DROP;
	cfg.start = ST_NEAR_TOP + 8;
	cfg.chunk_size = 256;
	cfg.num_chunks = 2;
	cfg.stall_pct = 50;
	cfg.packets = st_packets(1000);
	st_run_once(&cfg, sh_seed(st_base_seed() + 77, (uint64_t)_i), &t,
		    _i ? "two-chunks-stall" : "two-chunks-drop");
	ck_assert_uint_gt(t.received, 0);
}
END_TEST

static Suite *stress_suite(void)
{
	Suite *s = suite_create("tbring_stress");
	TCase *tc = tcase_create("stress");

	/*
	 * each case is well under a second here, TSan ~10-20x slower, and on
	 * a loaded machine up to ST_BUDGET_MS and the drain after it (8 runs
	 * for relocations): the timeout only catches a hang
	 */
	tcase_set_timeout(tc, st_long() ? 1200 : 300);
	tcase_add_loop_test(tc, test_stress_matrix, 0, 16);
	tcase_add_loop_test(tc, test_stress_relocations_happen, 0, 2);
	tcase_add_loop_test(tc, test_stress_two_chunks, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(stress_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
