/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_preempt.c - an interrupt that traces into the ring its thread is
 * writing, at every step, deterministically.
 *
 * A main writer (id 1) runs one operation - tb_writer_write_packet(),
 * tb_writer_open() then _close(), or an event of tbevent.h - and the
 * atomics seam (TB_TEST_HOOKS) stops it before its k-th access to a
 * shared word; there a second writer (id 2, the "interrupt", TB_DROP:
 * it may never wait) writes its own packet or event, to completion, as a
 * handler would.  k runs over every access the operation makes (counted
 * in a run without the interrupt), and over ring states that make the
 * operation fit its chunk, split over the next, claim a fresh one, or
 * find the ring full.
 *
 * Afterwards the ring is drained into whole packets: every packet each
 * writer was told was written is there once, byte for byte, in its
 * order; no packet a writer was told was refused is there; a packet
 * after a refused one carries the loss flag; the refusals are the
 * ring's counted ones; and nobody stalled (no stall, no futex wait).
 * Events are compared with a run of each writer alone: the interrupt
 * changes nothing in what either writer emits.
 */
#define TB_PROTOCOL_STEPS 1
#define TB_TEST_HOOKS 1
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tbevent.h"
#include "tbpacket.h"
#include "ring_helpers.h"

void (*tb_test_atomic)(const uint32_t *p, int op, uint32_t expect,
		       uint32_t v, int ok, int fail);

#define MAIN		1
#define IRQ		2
#define MAXP		64	/* packets per writer in one run */
#define RA_MAX		8192

/* ------------------------------------------------------------------------
 * One run: a ring, the two writers, what each was told.
 */
struct rec {
	uint8_t *p;
	uint32_t n;
	int ret;		/* what the writer was told */
};

struct world {
	struct tring t;
	struct twriter w[2];		/* [0] main, [1] interrupt */
	struct tb_track track[2];
	struct tb_track counter;
	struct tb_ev_writer ev[2];
	struct tb_ev_clock clk[2];
	uint64_t now[2];
	struct rec rec[2][MAXP];	/* raw packets */
	unsigned nrec[2];
	int ev_ret[2][MAXP];		/* events */
	unsigned nev[2];
	unsigned full, no_chunk;	/* refusals seen by the writers */
};

static uint64_t fake_now(void *ctx)
{
	return (*(uint64_t *)ctx += 1000);
}

/* The interrupt's deed, and the seam's bookkeeping. */
static struct world *cur;
static int armed;		/* count (and preempt) accesses now */
static int in_irq;
static unsigned steps, preempt_at, irq_runs;
static void (*irq_op)(struct world *);

static void seam(const uint32_t *p, int op, uint32_t expect, uint32_t v,
		 int ok, int fail)
{
	(void)p;
	(void)op;
	(void)expect;
	(void)v;
	(void)ok;
	(void)fail;
	if (!armed || in_irq)
		return;
	if (steps++ != preempt_at)
		return;
	in_irq = 1;
	irq_op(cur);
	irq_runs++;
	in_irq = 0;
}

static void world_new(struct world *g, uint32_t cs, uint32_t n)
{
	unsigned k;

	memset(g, 0, sizeof(*g));
	tring_new(&g->t, cs, n);
	for (k = 0; k < 2; k++) {
		twriter_new(&g->w[k], &g->t, (uint16_t)(k + 1), 0, TB_DROP);
		g->clk[k].now = fake_now;
		g->clk[k].ctx = &g->now[k];
		g->clk[k].id = TB_CLOCK_BOOTTIME;
		tb_track_thread(&g->track[k], 100 + k, NULL, 10, 20 + (int)k,
				k ? "irq" : "main");
		tb_track_counter(&g->counter, 200, &g->track[0], "depth",
				 TB_UNIT_COUNT);
		ck_assert_int_eq(tb_ev_writer_init(&g->ev[k], &g->w[k].w,
						   &g->track[k], &g->clk[k],
						   0), TB_OK);
	}
}

static void world_free(struct world *g)
{
	unsigned k, i;

	for (k = 0; k < 2; k++) {
		twriter_free(&g->w[k]);
		for (i = 0; i < g->nrec[k]; i++)
			free(g->rec[k][i].p);
	}
	tring_free(&g->t);
}

static void note(struct world *g, int ret)
{
	if (ret == TB_FULL)
		g->full++;
	else if (ret == TB_NO_CHUNK)
		g->no_chunk++;
	else
		ck_assert_int_eq(ret, TB_OK);
}

/* Writer @k's next raw packet, @size bytes, a pattern that names it. */
static void raw(struct world *g, unsigned k, uint32_t size)
{
	struct rec *r = &g->rec[k][g->nrec[k]];
	uint32_t j;

	ck_assert_uint_lt(g->nrec[k], MAXP);
	ck_assert_uint_ge(size, 4);
	r->p = (uint8_t *)malloc(size);
	ck_assert_ptr_nonnull(r->p);
	r->n = size;
	r->p[0] = (uint8_t)(k + 1);
	r->p[1] = (uint8_t)g->nrec[k];
	r->p[2] = (uint8_t)size;
	r->p[3] = (uint8_t)(size >> 8);
	for (j = 4; j < size; j++)
		r->p[j] = (uint8_t)(j * 13 + g->nrec[k] * 7 + k);
	g->nrec[k]++;
	r->ret = tb_writer_write_packet(&g->w[k].w, r->p, size);
	note(g, r->ret);
}

/* ------------------------------------------------------------------------
 * Draining and checking.
 */
struct got {
	uint8_t *p[2][MAXP];
	uint32_t n[2][MAXP];
	uint32_t flags[2][MAXP];
	unsigned cnt[2];
	uint64_t pstat[TB_PS_MAX];
};

static void got_fn(void *ctx, const struct tb_packet *pk)
{
	struct got *o = (struct got *)ctx;
	unsigned k = pk->writer - 1u;

	ck_assert(pk->writer == MAIN || pk->writer == IRQ);
	ck_assert_uint_lt(o->cnt[k], MAXP);
	ck_assert_uint_eq(pk->len, pk->size);
	o->p[k][o->cnt[k]] = (uint8_t *)malloc(pk->len ? pk->len : 1);
	memcpy(o->p[k][o->cnt[k]], pk->data, pk->len);
	o->n[k][o->cnt[k]] = pk->len;
	o->flags[k][o->cnt[k]] = pk->flags;
	o->cnt[k]++;
}

static void drain_all(struct world *g, struct got *o)
{
	struct tb_reassembly ra;
	struct treader tr;
	size_t len = tb_reassembly_size(2, RA_MAX);
	void *mem = malloc(len);
	unsigned k;
	int ret;

	memset(o, 0, sizeof(*o));
	for (k = 0; k < 2; k++)
		ck_assert_int_eq(tb_writer_release(&g->w[k].w), TB_OK);
	treader_new(&tr, &g->t);
	ck_assert_int_eq(tb_reassembly_init(&ra, mem, len, 2, RA_MAX,
					    TB_OVERSIZE_DROP), TB_OK);
	do
		ret = tb_reader_drain_packets(&tr.rd, &ra, ~0u,
					      TB_READ_SCRAPE, got_fn, o, NULL);
	while (ret == TB_LIMIT || ret == TB_RETRY_LATER);
	ck_assert_int_eq(ret, TB_NODATA);
	for (k = 0; k < TB_PS_MAX; k++)
		o->pstat[k] = ra.stat[k];
	treader_free(&tr);
	free(mem);
}

static void got_free(struct got *o)
{
	unsigned k, i;

	for (k = 0; k < 2; k++)
		for (i = 0; i < o->cnt[k]; i++)
			free(o->p[k][i]);
}

/* Nobody waited, and every refusal is one the ring counted. */
static void check_counts(const struct world *g, const char *what)
{
	const uint32_t *ws = g->t.r.hdr->wstat;

	ck_assert_msg(ws[TB_WS_STALLS] == 0 && ws[TB_WS_FUTEX_WAITS] == 0,
		      "%s: a writer waited", what);
	ck_assert_msg(ws[TB_WS_FULL] == g->full &&
		      ws[TB_WS_NO_CHUNK] == g->no_chunk,
		      "%s: refusals %u full / %u no-chunk, counted %u / %u",
		      what, g->full, g->no_chunk, ws[TB_WS_FULL],
		      ws[TB_WS_NO_CHUNK]);
}

/*
 * Raw packets: each writer's delivered packets are exactly the ones it
 * was told were written, in order, byte for byte; one after a refused
 * one carries the loss flag.
 */
static void check_raw(const struct world *g, const struct got *o,
		      const char *what)
{
	unsigned k, i, j;
	bool owed;

	for (k = 0; k < 2; k++) {
		owed = false;
		for (i = 0, j = 0; i < g->nrec[k]; i++) {
			const struct rec *r = &g->rec[k][i];

			if (r->ret) {
				owed = true;
				continue;
			}
			ck_assert_msg(j < o->cnt[k], "%s: writer %u packet "
				      "%u written, not delivered", what, k + 1,
				      i);
			ck_assert_msg(o->n[k][j] == r->n &&
				      !memcmp(o->p[k][j], r->p, r->n),
				      "%s: writer %u packet %u corrupted", what,
				      k + 1, i);
			if (owed)
				ck_assert_msg(o->flags[k][j] & TB_PKT_LOSS,
					      "%s: writer %u packet %u after a "
					      "refused one, no loss flag", what,
					      k + 1, i);
			owed = false;
			j++;
		}
		ck_assert_msg(j == o->cnt[k], "%s: writer %u: %u packets "
			      "delivered beyond the %u written", what, k + 1,
			      o->cnt[k] - j, j);
	}
	ck_assert_uint_eq(o->pstat[TB_PS_CUT] + o->pstat[TB_PS_ORPHANS] +
			  o->pstat[TB_PS_NO_SLOT], 0);
}

/* ------------------------------------------------------------------------
 * Raw packets: the main writer's write_packet, and open/close.
 */
static uint32_t irq_size;

static void irq_raw(struct world *g)
{
	raw(g, 1, irq_size);
}

enum { OP_WRITE, OP_OPEN_CLOSE };

struct scene {
	uint32_t cs, n;		/* ring */
	unsigned before;	/* main's packets before the one preempted */
	uint32_t before_size;
	uint32_t size;		/* the preempted packet */
	uint32_t irq;		/* the interrupt's packet */
};

/* Main's @size-byte packet written in place, open and close. */
static void main_open_close(struct world *g, uint32_t size)
{
	struct rec *r = &g->rec[0][g->nrec[0]];
	struct tb_span sp;
	uint32_t j, at = 0;
	int ret;

	ck_assert_uint_lt(g->nrec[0], MAXP);
	r->p = (uint8_t *)malloc(size);
	ck_assert_ptr_nonnull(r->p);
	r->n = size;
	for (j = 0; j < size; j++)
		r->p[j] = (uint8_t)(j * 5 + g->nrec[0] * 3 + 1);
	g->nrec[0]++;
	/* one fragment at a time: a chunk's worth each (tbring.h splits) */
	ret = tb_writer_open(&g->w[0].w, 1, 0, &sp);
	while (!ret) {
		uint32_t room = (uint32_t)(sp.end - sp.begin);
		uint32_t take = size - at < room ? size - at : room;

		memcpy(sp.begin, r->p + at, take);
		at += take;
		ret = tb_writer_close(&g->w[0].w, take, at < size ?
				      TB_CLOSE_CONT_NEXT : 0);
		if (ret || at == size)
			break;
		ret = tb_writer_open(&g->w[0].w, 1, TB_OPEN_CONT_PREV, &sp);
		if (ret)
			tb_writer_record_loss(&g->w[0].w);
	}
	if (ret && !at)
		tb_writer_record_loss(&g->w[0].w);
	r->ret = ret;
	note(g, ret);
}

static void run_scene(const struct scene *s, int op, unsigned k,
		      unsigned *nsteps, char *what, size_t wn)
{
	struct world g;
	struct got o;
	unsigned i;

	world_new(&g, s->cs, s->n);
	for (i = 0; i < s->before; i++)
		raw(&g, 0, s->before_size + i % 3);
	cur = &g;
	irq_op = irq_raw;
	irq_size = s->irq;
	steps = 0;
	preempt_at = k;
	irq_runs = 0;
	tb_test_atomic = seam;
	armed = 1;
	if (op == OP_WRITE)
		raw(&g, 0, s->size);
	else
		main_open_close(&g, s->size);
	armed = 0;
	tb_test_atomic = NULL;
	if (nsteps)
		*nsteps = steps;
	else
		ck_assert_uint_eq(irq_runs, 1);
	snprintf(what, wn, "%s of %u B after %u x %u B, ring %u x %u, "
		 "interrupt of %u B at access %u of %u",
		 op == OP_WRITE ? "write_packet" : "open/close", s->size,
		 s->before, s->before_size, s->n, s->cs, s->irq, k, steps);
	drain_all(&g, &o);
	check_counts(&g, what);
	check_raw(&g, &o, what);
	got_free(&o);
	world_free(&g);
}

static const struct scene scenes[] = {
	/* fits the chunk main holds */
	{ 512, 8, 1, 40, 30, 20 },
	/* the interrupt's packet needs a fresh chunk */
	{ 512, 8, 1, 40, 30, 480 },
	/* main's packet splits over its next chunk */
	{ 512, 8, 3, 150, 300, 20 },
	{ 512, 8, 3, 150, 300, 400 },
	/* main's packet spans three chunks */
	{ 512, 8, 0, 0, 1200, 100 },
	/* main's first packet: its first claim */
	{ 256, 4, 0, 0, 50, 50 },
	/* a ring with one free chunk left: they compete for it */
	{ 256, 4, 7, 140, 200, 200 },
	/* a full ring: both refused, counted, no wait */
	{ 256, 4, 12, 200, 100, 100 },
	{ 256, 2, 6, 200, 30, 230 },
};

static void preempt_every_step(int op)
{
	char what[256];
	unsigned s, k, n, runs = 0;

	for (s = 0; s < sizeof(scenes) / sizeof(scenes[0]); s++) {
		/* how many accesses the operation makes, undisturbed */
		run_scene(&scenes[s], op, ~0u, &n, what, sizeof(what));
		ck_assert_uint_gt(n, 0);
		for (k = 0; k < n; k++, runs++)
			run_scene(&scenes[s], op, k, NULL, what,
				  sizeof(what));
	}
	ck_assert_uint_ge(runs, 40);	/* 52 and 54 when written */
}

START_TEST(test_interrupt_at_every_step_of_write_packet)
{
	preempt_every_step(OP_WRITE);
}
END_TEST

START_TEST(test_interrupt_at_every_step_of_open_and_close)
{
	preempt_every_step(OP_OPEN_CLOSE);
}
END_TEST

/* ------------------------------------------------------------------------
 * Events: main's instant or slice with annotations, the interrupt's
 * instant; each writer's packets the same as when it ran alone.
 */
static TB_CATEGORY_DEFINE(cat, "fw", 1);

static void irq_event(struct world *g)
{
	struct tb_arg a = tb_arg_int("n", (int64_t)g->nev[1]);

	ck_assert_uint_lt(g->nev[1], MAXP);
	g->ev_ret[1][g->nev[1]] = tb_ev_instant(&g->ev[1], &cat, "tick",
						&a, 1);
	note(g, g->ev_ret[1][g->nev[1]++]);
}

static void main_event(struct world *g, unsigned kind)
{
	struct tb_arg a[2];
	int ret;

	a[0] = tb_arg_int("i", (int64_t)g->nev[0]);
	a[1] = tb_arg_str("what", "a string long enough to matter");
	switch (kind) {
	case 0:
		ret = tb_ev_begin(&g->ev[0], &cat, "loop", a, 2);
		break;
	case 1:
		ret = tb_ev_end(&g->ev[0], &cat, NULL, 0);
		break;
	case 2:
		ret = tb_ev_instant(&g->ev[0], &cat, "mark", a, 1);
		break;
	default:
		ret = tb_ev_counter(&g->ev[0], &cat, &g->counter,
				    (int64_t)g->nev[0]);
		break;
	}
	ck_assert_uint_lt(g->nev[0], MAXP);
	g->ev_ret[0][g->nev[0]++] = ret;
	note(g, ret);
}

/* Main's @before events, then the one preempted at access @k. */
static void run_events(unsigned before, unsigned kind, unsigned k,
		       bool with_irq, unsigned irq_alone, unsigned *nsteps,
		       struct got *o)
{
	struct world g;
	unsigned i;

	world_new(&g, 512, 16);
	for (i = 0; i < irq_alone; i++)
		irq_event(&g);
	for (i = 0; i < before; i++)
		main_event(&g, i % 3);
	cur = &g;
	irq_op = irq_event;
	steps = 0;
	preempt_at = with_irq ? k : ~0u;
	irq_runs = 0;
	tb_test_atomic = seam;
	armed = 1;
	main_event(&g, kind);
	armed = 0;
	tb_test_atomic = NULL;
	if (nsteps)
		*nsteps = steps;
	ck_assert_uint_eq(g.full + g.no_chunk, 0);	/* room for all */
	drain_all(&g, o);
	check_counts(&g, "events");
	world_free(&g);
}

static void same_packets(const struct got *a, const struct got *b,
			 unsigned k, const char *what)
{
	unsigned i;

	ck_assert_msg(a->cnt[k] == b->cnt[k], "%s: writer %u: %u packets, "
		      "alone %u", what, k + 1, a->cnt[k], b->cnt[k]);
	for (i = 0; i < a->cnt[k]; i++)
		ck_assert_msg(a->n[k][i] == b->n[k][i] &&
			      !memcmp(a->p[k][i], b->p[k][i], a->n[k][i]) &&
			      a->flags[k][i] == b->flags[k][i],
			      "%s: writer %u packet %u differs from its run "
			      "alone", what, k + 1, i);
}

START_TEST(test_interrupt_at_every_step_of_an_event)
{
	static const unsigned befores[] = { 0, 1, 4, 9 };
	struct got alone_main, alone_irq, o;
	char what[128];
	unsigned b, kind, k, n, runs = 0;

	for (b = 0; b < sizeof(befores) / sizeof(befores[0]); b++) {
		for (kind = 0; kind < 4; kind++) {
			run_events(befores[b], kind, 0, false, 0, &n,
				   &alone_main);
			run_events(0, 0, 0, false, 1, NULL, &alone_irq);
			ck_assert_uint_gt(n, 0);
			for (k = 0; k < n; k++, runs++) {
				snprintf(what, sizeof(what), "event kind %u "
					 "after %u, interrupt at access %u "
					 "of %u", kind, befores[b], k, n);
				run_events(befores[b], kind, k, true, 0, NULL,
					   &o);
				same_packets(&o, &alone_main, 0, what);
				/* the interrupt's one instant, as alone:
				 * compare with its run alone */
				ck_assert_msg(o.cnt[1] == alone_irq.cnt[1],
					      "%s: interrupt packets %u, "
					      "alone %u", what, o.cnt[1],
					      alone_irq.cnt[1]);
				same_packets(&o, &alone_irq, 1, what);
				got_free(&o);
			}
			got_free(&alone_main);
			got_free(&alone_irq);
		}
	}
	ck_assert_uint_ge(runs, 80);	/* 92 when written */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("preempt");
	TCase *t = tcase_create("interrupt");
	SRunner *sr;
	int failed;

	tcase_set_timeout(t, 120);
	tcase_add_test(t, test_interrupt_at_every_step_of_write_packet);
	tcase_add_test(t, test_interrupt_at_every_step_of_open_and_close);
	tcase_add_test(t, test_interrupt_at_every_step_of_an_event);
	suite_add_tcase(s, t);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
