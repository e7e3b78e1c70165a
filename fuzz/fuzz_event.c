/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target for the event layer (tbevent.h) over a tiny ring, read
 * back into a Perfetto trace and judged as Perfetto's importer would.
 *
 * The input is a program.  Its first bytes choose the ring (2, 4 or 8 chunks
 * of 256 or 512 bytes: writes fail often), the writers' flags (interning
 * or not, TB_EV_DEFAULTS, TB_EV_DELTA_TIME) and clock (BOOTTIME, or a
 * sequence-scoped one with BOOTTIME as its reference).  The tables are
 * small on purpose (TB_EV_TRACKS 3 for 12 tracks, 16 interning slots, 96
 * bytes of copied names, 4 open flows, 2 owed ENDs).  Then each byte picks
 * one operation of one of two writers: a slice begins or ends (on its own
 * track or another; the macros' fast path on its own), an instant named
 * from a reused buffer (with an annotation whose name is in another
 * reused buffer), an instant with a long or an empty string, a counter,
 * a flow started, continued or ended, the reader drains, the ring's
 * generation is bumped, a service "overwrite" (what was read so far is
 * thrown away, the next packet of each sequence carries
 * previous_packet_dropped, the generation is bumped), a reset.
 * At the end every slice begun is ended, each writer finishes (retried
 * after drains), releases, and everything is drained.
 *
 * Each packet read goes into the trace with its trusted fields
 * (tb_trace_write_packet()).  Checked:
 *  - the trace passes the checker (tbcheck.h) with nothing unexplained
 *    (the program ends its open slices and flows before it finishes);
 *  - every instant named from a buffer that is in the trace, and whose
 *    incremental state the importer holds, decodes to the name and the
 *    annotation name the buffer held at the call; and each one written
 *    (TB_OK) after the last overwrite is there (a writer that missed
 *    the overwrite would refer to interned data the trace lost), and so
 *    is each slice the macros' fast path wrote after it (own());
 *  - every flow end in the trace has its start earlier on its sequence
 *    (each writer has its own flow ids), unless the writer counted a flow
 *    its table forgot, or an overwrite threw a written start away.
 */
#define TB_EV_TRACKS		3
#define TB_EV_INTERN_SLOTS	16
#define TB_EV_NAME_BYTES	96
#define TB_EV_FLOWS		4
#define TB_EV_OWED_ENDS		2
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tbtrace.h"
#include "tools/tbcheck.h"
#include "tbevent.h"
#include "tbpacket.h"
#include "fuzz/fuzz_input.h"

#define NW		2		/* writers */
#define MAXOPS		600
#define MAXEXP		1024		/* named instants, own() slices */
#define MAXSTACK	32		/* slices open per writer */
#define MAXSTR		512		/* interned strings per sequence */
#define MAXFLOW		256		/* flow starts seen per sequence */
#define OUT_CAP		(2u << 20)
#define RA_MAX		(64u * 1024)
#define PRODUCER	1
#define UID		1000
#define PID		4242

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_init(argc, argv);
	return 0;
}

TB_CATEGORY_DEFINE(cat_f, "fuzz", 1);

/* ---- The trace, as the service would write it ---------------------------- */

static struct {
	uint8_t buf[OUT_CAP];
	size_t len;
	int full;
	uint8_t loss[NW + 1];	/* next packet of writer w: dropped before */
} T;

static int out_write(void *ctx, const void *p, size_t n)
{
	(void)ctx;
	if (T.len + n > OUT_CAP) {
		T.full = 1;
		return -1;
	}
	memcpy(T.buf + T.len, p, n);
	T.len += n;
	return 0;
}

static struct tb_trace_out tout;	/* set up per input */

static void on_packet(void *ctx, const struct tb_packet *p)
{
	struct tb_buf_slice sl;
	struct tb_buf_packet bp;

	(void)ctx;
	CHECK(p->writer >= 1 && p->writer <= NW);
	CHECK(p->len == p->size);
	sl.data = p->data;
	sl.size = p->len;
	memset(&bp, 0, sizeof(bp));
	bp.slices = &sl;
	bp.nslices = 1;
	bp.size = p->len;
	bp.producer_id = PRODUCER;
	bp.writer_id = p->writer;
	bp.ident.uid = UID;
	bp.ident.pid = PID;
	if ((p->flags & TB_PKT_LOSS) || T.loss[p->writer])
		bp.loss = TB_BUF_LOSS_PRESENT;
	T.loss[p->writer] = 0;
	tout.error = 0;
	tb_trace_write_packet(&tout, &bp);
}

/* ---- The program's world ------------------------------------------------ */

struct exp {	/* an instant named from a buffer, or an own() slice */
	unsigned w;
	int required;		/* written after the last overwrite */
	int seen;
	char name[64];
	char key[24];
};

static struct {
	void *mem;
	struct tb_ring ring;
	uint32_t cs;
	struct tb_writer w[NW];
	uint8_t wscratch[NW][512];
	struct tb_ev_writer ev[NW];
	struct tb_reader rd;
	uint8_t rscratch[512];
	struct tb_reassembly ra;
	void *ramem;
	struct tb_track proc, thr[NW], ctr;
	struct tb_track lane[NW], sub[NW], subsub[NW], side[NW];
	const struct tb_track *stack[NW][MAXSTACK];
	unsigned depth[NW];
	unsigned nexp;
	struct exp exp[MAXEXP];
	unsigned flow[NW];	/* the open flow, 0: none */
	unsigned nflow[NW];	/* flows started */
	uint8_t flow_ok[NW][MAXFLOW];	/* a start or step of flow i written */
	uint8_t flow_gone[NW][MAXFLOW];	/* ... and then thrown away */
	char name[64];		/* the reused buffers */
	char key[24];
	uint64_t ns;
} S;

static char big[3000];

static uint64_t fake_now(void *ctx)
{
	(void)ctx;
	return S.ns += 1000;
}

static uint64_t fake_ref(void *ctx)
{
	(void)ctx;
	return S.ns + 1000000000ull;
}

static const struct tb_ev_clock boot_clock = { fake_now, NULL,
					       TB_CLOCK_BOOTTIME, 0, NULL };
static const struct tb_ev_clock seq_clock = { fake_now, NULL, 64,
					      TB_CLOCK_BOOTTIME, fake_ref };

static void drain(void)
{
	int ret, n = 0;

	do
		ret = tb_reader_drain_packets(&S.rd, &S.ra, 8, TB_READ_SCRAPE,
					      on_packet, NULL, NULL);
	while (ret == TB_LIMIT && ++n < 10000);
	CHECK(ret != TB_EPROTO && ret != TB_LIMIT);
}

/*
 * Slices nest per track whichever sequence wrote them, so each writer has
 * tracks of its own (a program that interleaves two writers' slices on
 * one track is wrong, whatever the layer does).
 */
static const struct tb_track *slice_track(unsigned w, unsigned k)
{
	const struct tb_track *t[] = { NULL, &S.lane[w], &S.sub[w],
				       &S.subsub[w], &S.side[w] };

	return t[k % 5];
}

/*
 * A slice the macros' fast path writes, its serial in an annotation: one
 * written after the last overwrite must be in the trace (a kept event
 * written on after the generation moved would refer to interned data the
 * trace lost, and the importer skips it).
 */
static void own(unsigned w)
{
	struct tb_ev_stats st = S.ev[w].stats;
	struct exp *e = &S.exp[S.nexp];

	if (S.nexp == MAXEXP) {
		TB_TRACE_BEGIN_W(&S.ev[w], &cat_f, "Own", TB_ARG_UINT("x", 0));
		return;
	}
	e->w = w;
	e->seen = 0;
	snprintf(e->name, sizeof(e->name), "Own");
	e->key[0] = 0;		/* no key annotation */
	TRACE("w%u Own %u\n", w, S.nexp);
	TB_TRACE_BEGIN_W(&S.ev[w], &cat_f, "Own",
			 TB_ARG_UINT("serial", S.nexp));
	e->required = S.ev[w].stats.events != st.events &&
		      S.ev[w].stats.not_written == st.not_written;
	S.nexp++;
}

static void begin(unsigned w, unsigned k, unsigned x)
{
	const struct tb_track *t = slice_track(w, k);
	struct tb_arg a[2];
	uint32_t n = 0;

	if (S.depth[w] == MAXSTACK)
		return;
	a[n++] = tb_arg_track(t);
	if (x & 1)
		a[n++] = TB_ARG_UINT("x", x);
	TRACE("w%u BEGIN on %u\n", w, k % 5);
	if (x & 2)
		tb_ev_begin(&S.ev[w], &cat_f, "Work", a, n);
	else if (!t && (x & 4))	/* the writer's own track: the fast path */
		own(w);
	else if (!t)
		TB_TRACE_BEGIN_W(&S.ev[w], &cat_f, "Bare");
	else
		TB_TRACE_BEGIN_W(&S.ev[w], &cat_f, "Slice", TB_ON_TRACK(t),
				 TB_ARG_UINT("x", x));
	S.stack[w][S.depth[w]++] = t;
}

static void end(unsigned w)
{
	struct tb_arg a;

	if (!S.depth[w])
		return;
	a = tb_arg_track(S.stack[w][--S.depth[w]]);
	TRACE("w%u END\n", w);
	if (a.v.t)
		tb_ev_end(&S.ev[w], &cat_f, &a, 1);
	else	/* the writer's own track: the fast path */
		TB_TRACE_END_W(&S.ev[w], &cat_f);
}

/* An instant named from the reused buffer, its serial in an annotation. */
static void named(unsigned w, struct in *in)
{
	unsigned x = get(in), len = get(in) % 40, i;
	struct exp *e;
	struct tb_arg a[3];
	int ret;

	if (S.nexp == MAXEXP)
		return;
	if (x & 1) {
		snprintf(S.name, sizeof(S.name), "rep-%u", x >> 6);
	} else {
		i = (unsigned)snprintf(S.name, sizeof(S.name), "d%u-", S.nexp);
		for (; len-- && i + 1 < sizeof(S.name); i++)
			S.name[i] = (char)('a' + get(in) % 26);
		S.name[i] = 0;
	}
	snprintf(S.key, sizeof(S.key), "k-%u", (x >> 1) & 7);
	e = &S.exp[S.nexp];
	e->w = w;
	e->seen = 0;
	memcpy(e->name, S.name, sizeof(e->name));
	memcpy(e->key, S.key, sizeof(e->key));
	a[0] = TB_ARG_UINT("serial", S.nexp);
	a[1] = tb_arg_uint(S.key, x);
	a[2] = tb_arg_str(x & 2 ? S.key : "empty", x & 4 ? "" : S.name);
	TRACE("w%u instant %u \"%s\" key \"%s\"\n", w, S.nexp, S.name,
	      S.key);
	ret = tb_ev_instant(&S.ev[w], &cat_f, S.name, a, x & 8 ? 3 : 2);
	e->required = ret == TB_OK;
	S.nexp++;
	memset(S.name, '#', sizeof(S.name) - 1); /* the buffer moves on */
	memset(S.key, '#', sizeof(S.key) - 1);
}

static void strings(unsigned w, struct in *in)
{
	unsigned len = get16(in) % sizeof(big);

	TRACE("w%u strings %u\n", w, len);
	TB_TRACE_INSTANT_W(&S.ev[w], &cat_f, "Strings",
			   TB_ARG_STRN("big", big, len), TB_ARG_STR("e", ""),
			   TB_ARG_STRN("n", NULL, 0));
}

/*
 * A flow starts, goes on or ends: each writer's flows one after another,
 * ids of its own, each ended once at most (a well-formed program).
 */
static void flow_event(unsigned w, bool fin)
{
	unsigned f = S.flow[w];
	struct tb_arg a;
	uint64_t id;
	int ret;

	if (!f) {
		if (S.nflow[w] + 1 == MAXFLOW)
			return;
		f = S.flow[w] = ++S.nflow[w];
	}
	id = (uint64_t)(w + 1) << 32 | f;
	a = fin ? tb_arg_flow_end(id) : tb_arg_flow(id);
	TRACE("w%u flow %s %u\n", w, fin ? "end" : "step", f);
	ret = tb_ev_instant(&S.ev[w], &cat_f, "Flow", &a, 1);
	if (fin)
		S.flow[w] = 0;
	else if (ret == TB_OK)
		S.flow_ok[w][f] = 1;
}

static void flow(unsigned w, struct in *in)
{
	unsigned x = get(in);

	flow_event(w, S.flow[w] && (x & 1));
}

/* The service overwrote what it had: the trace loses what was read. */
static void overwrite(void)
{
	unsigned i;

	TRACE("overwrite\n");
	T.len = 0;
	for (i = 1; i <= NW; i++)
		T.loss[i] = 1;
	for (i = 0; i < S.nexp; i++)
		S.exp[i].required = 0;
	for (i = 0; i < MAXFLOW; i++) {
		S.flow_gone[0][i] |= S.flow_ok[0][i];
		S.flow_gone[1][i] |= S.flow_ok[1][i];
	}
	tb_ring_bump_generation(&S.ring);
}

static void setup(struct in *in)
{
	unsigned g = get(in), f = get(in), i;
	uint32_t n = 2u << ((g >> 1) % 3);
	size_t len, ralen = tb_reassembly_size(NW, RA_MAX);
	unsigned flags = (f & 1 ? TB_EV_NO_INTERN : 0) |
			 (f & 2 ? TB_EV_DEFAULTS : 0) |
			 (f & 8 ? TB_EV_DELTA_TIME : 0);
	const struct tb_ev_clock *clk = f & 4 ? &seq_clock : &boot_clock;

	memset(&S, 0, sizeof(S));
	memset(&T, 0, sizeof(T));
	memset(&tout, 0, sizeof(tout));
	tout.write = out_write;
	S.ns = 1000000;
	S.cs = 256u << (g & 1);
	len = tb_ring_size(S.cs, n);
	/* aligned to TB_RING_LINE, as tb_ring_init() requires */
	if (posix_memalign(&S.mem, TB_RING_LINE, len))
		S.mem = NULL;
	else
		memset(S.mem, 0, len);
	S.ramem = malloc(ralen);
	CHECK(S.mem && S.ramem);
	CHECK(tb_ring_init(&S.ring, S.mem, len, S.cs, n) == TB_OK);
	CHECK(tb_reader_init(&S.rd, &S.ring, S.rscratch) == TB_OK);
	CHECK(tb_reassembly_init(&S.ra, S.ramem, ralen, NW, RA_MAX,
				 TB_OVERSIZE_DROP) == TB_OK);
	tb_track_process(&S.proc, 0x100, PID, "fuzz");
	tb_track_counter(&S.ctr, 0x500, &S.proc, "ctr", TB_UNIT_COUNT);
	for (i = 0; i < NW; i++) {
		tb_track_custom(&S.lane[i], 0x200 + i, NULL, "lane");
		tb_track_custom(&S.sub[i], 0x300 + i, &S.proc, "sub");
		tb_track_custom(&S.subsub[i], 0x400 + i, &S.sub[i], "subsub");
		tb_track_custom(&S.side[i], 0x600 + i, &S.thr[i], "side");
		tb_track_thread(&S.thr[i], 0x1000 + i, &S.proc, PID,
				(int32_t)(PID + 1 + i), "thread");
		CHECK(tb_writer_init(&S.w[i], &S.ring, (uint16_t)(i + 1), 0,
				     TB_DROP, S.wscratch[i]) == TB_OK);
		CHECK(tb_ev_writer_init(&S.ev[i], &S.w[i], &S.thr[i], clk,
					flags) == TB_OK);
	}
	TRACE("ring %u x %u, flags %u, clock %u\n", (unsigned)n,
	      (unsigned)S.cs, flags, (unsigned)clk->id);
}

static void run(struct in *in)
{
	unsigned op, w, k, ops = 0;

	while (in->n && ops++ < MAXOPS) {
		op = get(in);
		w = op >> 7;
		switch (op & 15) {
		case 0: case 1: case 2:
			begin(w, op >> 4, get(in));
			break;
		case 3: case 4:
			end(w);
			break;
		case 5: case 6:
			named(w, in);
			break;
		case 7:
			strings(w, in);
			break;
		case 8:
			TRACE("w%u counter\n", w);
			TB_TRACE_COUNTER_W(&S.ev[w], &cat_f, &S.ctr, get(in));
			break;
		case 9: case 10:
			flow(w, in);
			break;
		case 11: case 12:
			TRACE("drain\n");
			drain();
			break;
		case 13:
			TRACE("bump\n");
			tb_ring_bump_generation(&S.ring);
			break;
		case 14:
			overwrite();
			break;
		case 15:
			TRACE("w%u reset\n", w);
			tb_ev_reset(&S.ev[w]);
			break;
		}
	}
	/* a well-formed program ends its slices and flows */
	for (w = 0; w < NW; w++) {
		while (S.depth[w])
			end(w);
		if (S.flow[w])
			flow_event(w, true);
	}
	for (w = 0; w < NW; w++) {
		for (k = 0; k < 16 && tb_ev_writer_finish(&S.ev[w]); k++)
			drain();
		CHECK(k < 16);
		tb_writer_release(&S.w[w]);
	}
	drain();
}

/* ---- Reading the trace back --------------------------------------------- */

struct rstr {
	uint64_t iid;
	const uint8_t *s;
	size_t n;
};

struct rseq {			/* the importer's view of one sequence */
	int valid;
	unsigned nstr[4];
	struct rstr str[4][MAXSTR];	/* kinds 2 names, 3 annotations */
	unsigned nflows;
	uint64_t flows[MAXFLOW];	/* flow ids started on it */
};

static struct rseq R[NW];

static int sub(const uint8_t *p, size_t n, uint32_t num,
	       struct tb_pb_field *out)
{
	struct tb_pb_reader r;
	struct tb_pb_field f;
	int found = 0;

	tb_pb_reader_init(&r, p, n);
	while (tb_pb_next(&r, &f) > 0)
		if (f.number == num) {
			*out = f;
			found = 1;
		}
	return found;
}

static const struct rstr *lookup(const struct rseq *q, unsigned kind,
				 uint64_t iid)
{
	unsigned i;

	for (i = 0; i < q->nstr[kind]; i++)
		if (q->str[kind][i].iid == iid)
			return &q->str[kind][i];
	return NULL;
}

static void intern(struct rseq *q, const uint8_t *p, size_t n)
{
	struct tb_pb_reader r;
	struct tb_pb_field f, iid, name;

	tb_pb_reader_init(&r, p, n);
	while (tb_pb_next(&r, &f) > 0) {
		if ((f.number != 2 && f.number != 3) || f.type != TB_PB_LEN)
			continue;
		if (!sub(f.data, f.size, 1, &iid) ||
		    !sub(f.data, f.size, 2, &name))
			continue;
		if (lookup(q, f.number, iid.value) ||
		    q->nstr[f.number] == MAXSTR)
			continue;	/* the first value counts */
		q->str[f.number][q->nstr[f.number]].iid = iid.value;
		q->str[f.number][q->nstr[f.number]].s = name.data;
		q->str[f.number][q->nstr[f.number]++].n = name.size;
	}
}

/* A name: inline field @inl, or iid field @iidf of kind @kind. */
static int name_of(const struct rseq *q, const uint8_t *p, size_t n,
		   uint32_t inl, uint32_t iidf, unsigned kind, char *out,
		   size_t cap)
{
	struct tb_pb_field f;
	const struct rstr *s;

	if (sub(p, n, inl, &f)) {
		snprintf(out, cap, "%.*s", (int)f.size, (const char *)f.data);
		return 1;
	}
	if (!sub(p, n, iidf, &f) || !(s = lookup(q, kind, f.value)))
		return 0;
	snprintf(out, cap, "%.*s", (int)s->n, (const char *)s->s);
	return 1;
}

/* An instant named from a buffer: decodes as what the buffer held. */
static void check_named(const struct rseq *q, unsigned w,
			const struct tb_pb_field *te)
{
	struct tb_pb_reader r;
	struct tb_pb_field f, v;
	char name[80], key[80], ev[80];
	uint64_t serial = UINT64_MAX;
	int nkey = 0, keyok = 0;
	struct exp *e;

	tb_pb_reader_init(&r, te->data, te->size);
	while (tb_pb_next(&r, &f) > 0) {
		if (f.number != 4 || f.type != TB_PB_LEN)
			continue;
		if (!name_of(q, f.data, f.size, 10, 1, 3, name, sizeof(name)))
			return;		/* unresolved: the checker says */
		if (!strcmp(name, "serial") && sub(f.data, f.size, 3, &v))
			serial = v.value;
		else if (!strncmp(name, "k-", 2) && sub(f.data, f.size, 3, &v))
			snprintf(key, sizeof(key), "%s", name), nkey++;
	}
	if (serial == UINT64_MAX)
		return;
	CHECK(serial < S.nexp);
	e = &S.exp[serial];
	if (!name_of(q, te->data, te->size, 23, 10, 2, ev, sizeof(ev)))
		return;
	TRACE("decoded %u: \"%s\" key \"%s\"\n", (unsigned)serial, ev,
	      nkey ? key : "");
	CHECK(e->w == w);
	CHECK(!strcmp(ev, e->name));
	keyok = e->key[0] ? nkey == 1 && !strcmp(key, e->key) : !nkey;
	CHECK(keyok);
	CHECK(!e->seen);
	e->seen = 1;
}

static void check_flows(struct rseq *q, unsigned w,
			const struct tb_pb_field *te)
{
	struct tb_pb_reader r;
	struct tb_pb_field f;
	unsigned i;

	tb_pb_reader_init(&r, te->data, te->size);
	while (tb_pb_next(&r, &f) > 0) {
		if (f.number == 47 && q->nflows < MAXFLOW)
			q->flows[q->nflows++] = f.value;
		if (f.number != 48)
			continue;
		for (i = 0; i < q->nflows && q->flows[i] != f.value; i++)
			;
		/* else its start was forgotten (counted), or thrown away */
		CHECK((f.value >> 32) == w + 1);
		CHECK(i < q->nflows || S.ev[w].stats.flows_untracked ||
		      S.flow_gone[w][f.value & (MAXFLOW - 1)]);
	}
}

static void read_back(void)
{
	struct tb_pb_reader r;
	struct tb_trace_packet tp;
	struct tb_pb_field f, te;
	unsigned w, i;
	int ret;

	memset(R, 0, sizeof(R));
	tb_pb_reader_init(&r, T.buf, T.len);
	while ((ret = tb_trace_next(&r, &tp)) > 0) {
		uint64_t seq = 0;
		struct rseq *q;

		w = (unsigned)(tp.trusted_seq_id & 0xffff) - 1;
		CHECK(w < NW);
		q = &R[w];
		if (tp.dropped)
			q->valid = 0;
		if (sub(tp.data, tp.size, 13, &f))
			seq = f.value;
		if (seq & TB_SEQ_INCREMENTAL_STATE_CLEARED) {
			q->valid = 1;
			memset(q->nstr, 0, sizeof(q->nstr));
		}
		if ((seq & TB_SEQ_NEEDS_INCREMENTAL_STATE) && !q->valid)
			continue;	/* skipped by the importer */
		if (q->valid && sub(tp.data, tp.size, 12, &f))
			intern(q, f.data, f.size);
		if (!sub(tp.data, tp.size, 11, &te))
			continue;
		check_named(q, w, &te);
		check_flows(q, w, &te);
	}
	CHECK(ret == 0);
	for (i = 0; i < S.nexp; i++)
		if (S.exp[i].required && !S.exp[i].seen) {
			fprintf(stderr, "instant %u (\"%s\") written after the "
				"last overwrite is not in the trace\n", i,
				S.exp[i].name);
			CHECK(0);
		}
}

static void report(void *ctx, const struct tb_check_violation *v)
{
	(void)ctx;
	if (!v->explained)
		fprintf(stderr, "checker: %s at packet %llu (seq %u, detail "
			"%llu)\n", tb_check_rule_name(v->rule),
			(unsigned long long)v->packet, v->seq_id,
			(unsigned long long)v->detail);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	struct tb_check c;

	memset(big, 'B', sizeof(big));
	setup(&in);
	run(&in);
	CHECK(!T.full);
	CHECK(tb_check_init(&c, NULL, NULL, 0) == TB_OK);
	c.on_violation = report;
	CHECK(tb_check_trace(&c, T.buf, T.len) == TB_OK);
	CHECK(tb_check_clean(&c));
	tb_check_destroy(&c);
	read_back();
	free(S.mem);
	free(S.ramem);
	return 0;
}
