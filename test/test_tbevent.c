/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_tbevent.c - the event layer (tbevent.h): what it writes into a
 * ring, read back through the ring's reader and decoded with the test's
 * own protobuf reader (trace_decode.h), field by field against the
 * numbers of Perfetto's protos (written here as literals, never taken
 * from tbevent.h):
 *
 *   TracePacket      timestamp 8, timestamp_clock_id 58, track_event 11,
 *                    track_descriptor 60, clock_snapshot 6,
 *                    interned_data 12, sequence_flags 13 (CLEARED 1,
 *                    NEEDS 2); service-only 3, 10, 79, 33, 35, 36, 50, 98
 *   TrackEvent       category_iids 3, categories 22, name_iid 10, name 23,
 *                    type 9 (BEGIN 1, END 2, INSTANT 3, COUNTER 4),
 *                    track_uuid 11, counter_value 30,
 *                    double_counter_value 44, flow_ids 47 and
 *                    terminating_flow_ids 48 (fixed64), debug_annotations 4
 *   TrackDescriptor  uuid 1, name 2, process 3 {pid 1, process_name 6},
 *                    thread 4 {pid 1, tid 2, thread_name 5},
 *                    parent_uuid 5, counter 8 {unit 3}
 *   DebugAnnotation  name_iid 1, name 10, bool 2, uint 3, int 4,
 *                    double 5, string 6, pointer 7
 *   InternedData     event_categories 1, event_names 2,
 *                    debug_annotation_names 3; each entry {iid 1, name 2}
 *   ClockSnapshot    clocks 1 {clock_id 1, timestamp 2}
 *
 * A sequence checker (struct seqck) replays every packet the way
 * Perfetto's importer treats a sequence and fails on anything that would
 * not resolve: an event whose track has no descriptor in the current
 * incremental state, an iid with no interned data since the last clear,
 * an iid reused for another string, a packet after a loss that does not
 * clear the state, a flag that does not match what the packet uses, an
 * END without its BEGIN, timestamps going back, a user clock without its
 * snapshot, and any service-only field.
 */
#define TB_PROTOCOL_STEPS 1	/* ring_helpers.h uses tb_ring_init_at */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tbevent.h"
#include "tbpacket.h"
#include "ring_helpers.h"
#include "trace_decode.h"

/* ------------------------------------------------------------------------
 * Messages: every field of one protobuf message, validated.
 */
#define MSG_MAX	256

struct msg {
	int n;
	struct pb_field f[MSG_MAX];
};

static void msg_parse(struct msg *m, const void *p, size_t n)
{
	struct pb_reader r;
	int ret;

	m->n = 0;
	pb_init(&r, p, n);
	while ((ret = pb_next(&r, &m->f[m->n])) > 0) {
		ck_assert_int_lt(m->n, MSG_MAX - 1);
		m->n++;
	}
	ck_assert_msg(ret == 0, "not valid protobuf");
}

/* The @idx-th occurrence of field @num, or NULL. */
static const struct pb_field *msg_field(const struct msg *m, uint32_t num,
					int idx)
{
	int i;

	for (i = 0; i < m->n; i++)
		if (m->f[i].number == num && !idx--)
			return &m->f[i];
	return NULL;
}

static int msg_count(const struct msg *m, uint32_t num)
{
	int i, c = 0;

	for (i = 0; i < m->n; i++)
		c += m->f[i].number == num;
	return c;
}

static int msg_has(const struct msg *m, uint32_t num)
{
	return msg_field(m, num, 0) != NULL;
}

static uint64_t msg_varint_at(const struct msg *m, uint32_t num, int idx)
{
	const struct pb_field *f = msg_field(m, num, idx);

	ck_assert_msg(f != NULL, "field %u #%d missing", num, idx);
	ck_assert_msg(f->type == 0, "field %u is wire type %u, not varint",
		      num, f->type);
	return f->value;
}

static uint64_t msg_varint(const struct msg *m, uint32_t num)
{
	return msg_varint_at(m, num, 0);
}

static uint64_t msg_fixed64_at(const struct msg *m, uint32_t num, int idx)
{
	const struct pb_field *f = msg_field(m, num, idx);

	ck_assert_msg(f != NULL, "field %u #%d missing", num, idx);
	ck_assert_msg(f->type == 1, "field %u is wire type %u, not fixed64",
		      num, f->type);
	return f->value;
}

static void msg_sub_at(const struct msg *m, uint32_t num, int idx,
		       struct msg *out)
{
	const struct pb_field *f = msg_field(m, num, idx);

	ck_assert_msg(f != NULL, "field %u #%d missing", num, idx);
	ck_assert_msg(f->type == 2, "field %u is wire type %u, not bytes",
		      num, f->type);
	msg_parse(out, f->data, f->size);
}

static void msg_sub(const struct msg *m, uint32_t num, struct msg *out)
{
	msg_sub_at(m, num, 0, out);
}

static int msg_str_is(const struct msg *m, uint32_t num, const char *s)
{
	const struct pb_field *f = msg_field(m, num, 0);

	return f && f->type == 2 && f->size == strlen(s) &&
	       !memcmp(f->data, s, f->size);
}

#define ck_assert_str_field(m, num, s)					\
	ck_assert_msg(msg_str_is((m), (num), (s)),			\
		      "field %u is not \"%s\"", (unsigned)(num), (s))

static double dbl_of(uint64_t bits)
{
	double d;

	memcpy(&d, &bits, sizeof(d));
	return d;
}

/* ------------------------------------------------------------------------
 * A ring, a writer, an event writer, and a reader that keeps every packet.
 */
#define CAP_MAX	8192

struct tpkt {
	uint8_t *data;
	uint32_t len;
	uint32_t flags;		/* TB_PKT_LOSS */
};

struct tenv {
	struct tring t;
	struct twriter tw;
	struct tb_reader rd;
	uint8_t *rscratch;
	struct tb_reassembly ra;
	void *ramem;
	struct tb_ev_writer ew;
	struct tb_track proc, thread;
	unsigned n;		/* packets kept */
	unsigned seen;		/* of those, fed to the checker */
	struct tpkt p[CAP_MAX];
};

#define PID	4242
#define TID	4243
#define PROC_UUID	0x1000u
#define THREAD_UUID	0x2000u
#define RA_MAX	(64 * 1024)

TB_CATEGORY_DEFINE(cat_a, "cat_a", 1);
TB_CATEGORY_DEFINE(cat_b, "cat_b", 1);
TB_CATEGORY_DEFINE(cat_off, "cat_off", 0);

static void on_packet(void *ctx, const struct tb_packet *p)
{
	struct tenv *e = (struct tenv *)ctx;
	struct tpkt *k;

	ck_assert_uint_lt(e->n, CAP_MAX);
	ck_assert_uint_eq(p->len, p->size);
	k = &e->p[e->n++];
	k->data = (uint8_t *)malloc(p->len ? p->len : 1);
	ck_assert_ptr_nonnull(k->data);
	memcpy(k->data, p->data, p->len);
	k->len = p->len;
	k->flags = p->flags;
}

static struct tenv *env_new_clock(uint32_t cs, uint32_t n,
				  const struct tb_ev_clock *clock,
				  unsigned flags)
{
	struct tenv *e = (struct tenv *)calloc(1, sizeof(*e));
	size_t ralen = tb_reassembly_size(2, RA_MAX);

	ck_assert_ptr_nonnull(e);
	tring_new(&e->t, cs, n);
	twriter_new(&e->tw, &e->t, 1, 0, TB_DROP);
	e->rscratch = (uint8_t *)malloc(cs);
	e->ramem = malloc(ralen);
	ck_assert_ptr_nonnull(e->rscratch);
	ck_assert_ptr_nonnull(e->ramem);
	ck_assert_int_eq(tb_reader_init(&e->rd, &e->t.r, e->rscratch), TB_OK);
	ck_assert_int_eq(tb_reassembly_init(&e->ra, e->ramem, ralen, 2, RA_MAX,
					    TB_OVERSIZE_DROP), TB_OK);
	tb_track_process(&e->proc, PROC_UUID, PID, "proc");
	tb_track_thread(&e->thread, THREAD_UUID, &e->proc, PID, TID, "main");
	ck_assert_int_eq(tb_ev_writer_init(&e->ew, &e->tw.w, &e->thread,
					   clock, flags), TB_OK);
	return e;
}

static struct tenv *env_new(uint32_t cs, uint32_t n, unsigned flags)
{
	return env_new_clock(cs, n, NULL, flags);
}

/* Publishes what the writer holds and takes every whole packet. */
static void env_drain(struct tenv *e)
{
	int ret;

	do
		ret = tb_reader_drain_packets(&e->rd, &e->ra, 64,
					      TB_READ_SCRAPE, on_packet, e,
					      NULL);
	while (ret == TB_LIMIT);
	ck_assert_int_ne(ret, TB_EPROTO);
}

static void env_flush(struct tenv *e)
{
	tb_writer_release(&e->tw.w);
	env_drain(e);
}

static void env_free(struct tenv *e)
{
	unsigned i;

	for (i = 0; i < e->n; i++)
		free(e->p[i].data);
	free(e->rscratch);
	free(e->ramem);
	twriter_free(&e->tw);
	tring_free(&e->t);
	free(e);
}

static void pkt(const struct tenv *e, unsigned i, struct msg *m)
{
	ck_assert_uint_lt(i, e->n);
	msg_parse(m, e->p[i].data, e->p[i].len);
}

/* Packet @i's TrackEvent (it must have one). */
static void pkt_event(const struct tenv *e, unsigned i, struct msg *m,
		      struct msg *te)
{
	pkt(e, i, m);
	ck_assert_msg(msg_has(m, 11), "packet %u has no track_event", i);
	msg_sub(m, 11, te);
}

/* ------------------------------------------------------------------------
 * The sequence checker.
 */
#define SC_MAX	2048
#define SC_TRACKS 256

struct sc_str {
	uint64_t iid;
	uint32_t len;
	char s[64];
};

struct sc_track {
	uint64_t uuid;
	int counter;
	unsigned depth;		/* slices open (kept across clears) */
};

struct seqck {
	int valid;		/* incremental state usable */
	int allow_global;	/* events without track_uuid are fine */
	unsigned nstr[4];
	struct sc_str str[4][SC_MAX];	/* kinds 1..3: this state */
	unsigned ngstr[4];
	struct sc_str gstr[4][SC_MAX];	/* every iid ever: no reuse */
	unsigned ndesc;
	uint64_t desc[SC_TRACKS];	/* uuids described in this state */
	unsigned ntracks;
	struct sc_track tracks[SC_TRACKS];	/* every track ever */
	uint64_t snap[4];		/* clock ids snapshotted, this state */
	unsigned nsnap;
	int has_defaults;		/* TracePacketDefaults, this state */
	uint64_t def_track;		/* their track_uuid, 0: none */
	uint64_t def_clock;		/* their clock id, 0: none */
	uint64_t last_ts;
	uint64_t inc_clock;		/* an incremental clock, 0: none */
	uint64_t inc_last;		/* its time: deltas add to it */
	unsigned events, descriptors, clears, losses, snapshots;
	unsigned errors;
	char err[256];
};

static void sc_fail(struct seqck *sc, unsigned idx, const char *what)
{
	if (!sc->errors++)
		snprintf(sc->err, sizeof(sc->err), "packet %u: %s", idx, what);
}

static void sc_reset_state(struct seqck *sc)
{
	memset(sc->nstr, 0, sizeof(sc->nstr));
	sc->ndesc = 0;
	sc->nsnap = 0;
	sc->has_defaults = 0;
	sc->def_track = 0;
	sc->def_clock = 0;
	sc->inc_clock = 0;	/* each state snapshots it again */
}

static struct sc_track *sc_track(struct seqck *sc, uint64_t uuid)
{
	unsigned i;

	for (i = 0; i < sc->ntracks; i++)
		if (sc->tracks[i].uuid == uuid)
			return &sc->tracks[i];
	ck_assert_uint_lt(sc->ntracks, SC_TRACKS);
	sc->tracks[sc->ntracks].uuid = uuid;
	sc->tracks[sc->ntracks].counter = 0;
	sc->tracks[sc->ntracks].depth = 0;
	return &sc->tracks[sc->ntracks++];
}

static int sc_described(const struct seqck *sc, uint64_t uuid)
{
	unsigned i;

	for (i = 0; i < sc->ndesc; i++)
		if (sc->desc[i] == uuid)
			return 1;
	return 0;
}

static const struct sc_str *sc_find(const struct sc_str *tab, unsigned n,
				    uint64_t iid)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (tab[i].iid == iid)
			return &tab[i];
	return NULL;
}

static void sc_intern(struct seqck *sc, unsigned idx, unsigned kind,
		      const struct msg *entry)
{
	const struct pb_field *name = msg_field(entry, 2, 0);
	uint64_t iid = msg_varint(entry, 1);
	const struct sc_str *g;
	struct sc_str s;

	if (!name || name->type != 2 || name->size >= sizeof(s.s) || !iid) {
		sc_fail(sc, idx, "interned entry without iid or name");
		return;
	}
	s.iid = iid;
	s.len = (uint32_t)name->size;
	memcpy(s.s, name->data, name->size);
	s.s[name->size] = 0;
	g = sc_find(sc->gstr[kind], sc->ngstr[kind], iid);
	if (g && (g->len != s.len || memcmp(g->s, s.s, s.len)))
		sc_fail(sc, idx, "an iid reused for another string");
	if (!g) {
		ck_assert_uint_lt(sc->ngstr[kind], SC_MAX);
		sc->gstr[kind][sc->ngstr[kind]++] = s;
	}
	if (sc_find(sc->str[kind], sc->nstr[kind], iid))
		return;
	ck_assert_uint_lt(sc->nstr[kind], SC_MAX);
	sc->str[kind][sc->nstr[kind]++] = s;
}

/* An iid this packet uses: it must resolve in this state. */
static void sc_iid(struct seqck *sc, unsigned idx, unsigned kind,
		   uint64_t iid, int *uses)
{
	*uses = 1;
	if (!sc_find(sc->str[kind], sc->nstr[kind], iid))
		sc_fail(sc, idx, kind == 1 ? "category iid unresolved" :
			kind == 2 ? "name iid unresolved" :
				    "annotation name iid unresolved");
}

static void sc_descriptor(struct seqck *sc, unsigned idx,
			  const struct msg *td)
{
	uint64_t uuid = msg_varint(td, 1);

	if (!uuid)
		sc_fail(sc, idx, "track descriptor with uuid 0");
	if (msg_has(td, 5) && !sc_described(sc, msg_varint(td, 5)))
		sc_fail(sc, idx, "parent described after its child");
	if (!sc_described(sc, uuid)) {
		ck_assert_uint_lt(sc->ndesc, SC_TRACKS);
		sc->desc[sc->ndesc++] = uuid;
	}
	sc_track(sc, uuid)->counter = msg_has(td, 8);
	sc->descriptors++;
}

static void sc_event(struct seqck *sc, unsigned idx, const struct msg *te,
		     int *uses)
{
	uint64_t type = msg_has(te, 9) ? msg_varint(te, 9) : 0;
	struct sc_track *tr = NULL;
	int i;

	sc->events++;
	if (type < 1 || type > 4)
		sc_fail(sc, idx, "event without a type");
	if (msg_has(te, 11) || sc->def_track) {
		uint64_t uuid = msg_has(te, 11) ? msg_varint(te, 11) :
						  sc->def_track;

		if (!msg_has(te, 11))
			*uses = 1;	/* the defaults' track */
		if (!sc_described(sc, uuid))
			sc_fail(sc, idx, "event on a track not described "
				"in this state");
		tr = sc_track(sc, uuid);
	} else if (!sc->allow_global) {
		sc_fail(sc, idx, "event without track_uuid");
	}
	for (i = 0; i < msg_count(te, 3); i++)
		sc_iid(sc, idx, 1, msg_varint_at(te, 3, i), uses);
	if (msg_has(te, 10))
		sc_iid(sc, idx, 2, msg_varint(te, 10), uses);
	for (i = 0; i < msg_count(te, 4); i++) {
		struct msg da;

		msg_sub_at(te, 4, i, &da);
		if (msg_has(&da, 1))
			sc_iid(sc, idx, 3, msg_varint(&da, 1), uses);
		else if (!msg_has(&da, 10))
			sc_fail(sc, idx, "annotation without a name");
	}
	if (!tr)
		return;
	if (type == 4)
		*uses = 1;	/* its descriptor, the state's */
	if (type == 4 && !tr->counter)
		sc_fail(sc, idx, "counter value on a track that is not a "
			"counter track");
	if (type != 4 && tr->counter)
		sc_fail(sc, idx, "slice or instant on a counter track");
	if (type == 1)
		tr->depth++;
	else if (type == 2 && !tr->depth)
		sc_fail(sc, idx, "END without its BEGIN");
	else if (type == 2)
		tr->depth--;
}

static void sc_feed(struct seqck *sc, unsigned idx, const struct tpkt *p)
{
	static const uint32_t reserved[] = { 3, 10, 79, 33, 35, 36, 50, 98 };
	uint64_t seq = 0;
	struct msg m;
	int uses = 0;
	unsigned i;

	msg_parse(&m, p->data, p->len);
	for (i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		if (msg_has(&m, reserved[i]))
			sc_fail(sc, idx, "a field only the service writes");
	if (msg_has(&m, 13))
		seq = msg_varint(&m, 13);
	if (p->flags & TB_PKT_LOSS) {
		sc->losses++;
		sc->valid = 0;
		sc_reset_state(sc);
		if (!(seq & 1))
			sc_fail(sc, idx, "the packet after a loss does not "
				"clear the incremental state");
	}
	if (seq & 1) {
		sc->clears++;
		sc->valid = 1;
		sc_reset_state(sc);
	}
	if (!sc->valid)
		sc_fail(sc, idx, "packet before the first cleared state");
	if (sc->has_defaults && !(seq & 2))
		sc_fail(sc, idx, "a packet after the defaults without "
			"SEQ_NEEDS_INCREMENTAL_STATE");
	if (sc->inc_clock && !(seq & 3))	/* after a loss: skipped */
		sc_fail(sc, idx, "a packet after an incremental clock's "
			"snapshot without SEQ_NEEDS_INCREMENTAL_STATE");
	if (msg_has(&m, 59)) {
		struct msg d, ted;

		if (!(seq & 1))
			sc_fail(sc, idx, "defaults not on the state's first "
				"packet");
		msg_sub(&m, 59, &d);
		sc->has_defaults = 1;
		sc->def_clock = msg_has(&d, 58) ? msg_varint(&d, 58) : 0;
		sc->def_track = 0;
		if (msg_has(&d, 11)) {
			msg_sub(&d, 11, &ted);
			sc->def_track = msg_varint(&ted, 11);
		}
	}
	if (msg_has(&m, 6)) {
		struct msg cs, ck;

		msg_sub(&m, 6, &cs);
		for (i = 0; i < (unsigned)msg_count(&cs, 1); i++) {
			msg_sub_at(&cs, 1, (int)i, &ck);
			if (sc->nsnap < 4)
				sc->snap[sc->nsnap++] = msg_varint(&ck, 1);
			if (msg_has(&ck, 3) && msg_varint(&ck, 3)) {
				sc->inc_clock = msg_varint(&ck, 1);
				sc->inc_last = msg_varint(&ck, 2);
			}
		}
		sc->snapshots++;
	}
	if (msg_has(&m, 58) || (msg_has(&m, 8) && sc->def_clock)) {
		uint64_t id = msg_has(&m, 58) ? msg_varint(&m, 58) :
						sc->def_clock;
		int found = id < 64;

		for (i = 0; i < sc->nsnap; i++)
			found |= sc->snap[i] == id;
		if (!found)
			sc_fail(sc, idx, "a user clock without its snapshot");
	}
	if (msg_has(&m, 8)) {
		uint64_t id = msg_has(&m, 58) ? msg_varint(&m, 58) :
						sc->def_clock;
		uint64_t ts = msg_varint(&m, 8);

		if (sc->inc_clock && id == sc->inc_clock)
			ts = sc->inc_last += ts;	/* a delta */
		if (ts < sc->last_ts)
			sc_fail(sc, idx, "timestamp going back");
		sc->last_ts = ts;
	}
	if (msg_has(&m, 12)) {
		struct msg id, entry;
		unsigned kind;

		msg_sub(&m, 12, &id);
		for (kind = 1; kind <= 3; kind++)
			for (i = 0; i < (unsigned)msg_count(&id, kind); i++) {
				msg_sub_at(&id, kind, (int)i, &entry);
				sc_intern(sc, idx, kind, &entry);
			}
	}
	if (msg_has(&m, 60)) {
		struct msg td;

		msg_sub(&m, 60, &td);
		sc_descriptor(sc, idx, &td);
	}
	if (msg_has(&m, 11)) {
		struct msg te;

		msg_sub(&m, 11, &te);
		sc_event(sc, idx, &te, &uses);
	}
	if (uses && !(seq & 2))
		sc_fail(sc, idx, "iids or a counter value without "
			"SEQ_NEEDS_INCREMENTAL_STATE");
	if (!uses && (seq & 2) && !sc->has_defaults && !sc->inc_clock)
		sc_fail(sc, idx, "SEQ_NEEDS_INCREMENTAL_STATE, but no iid nor "
			"counter value");
}

/* Feeds the packets not fed yet. */
static void sc_run(struct seqck *sc, struct tenv *e)
{
	for (; e->seen < e->n; e->seen++)
		sc_feed(sc, e->seen, &e->p[e->seen]);
}

static struct seqck *sc_new(void)
{
	struct seqck *sc = (struct seqck *)calloc(1, sizeof(*sc));

	ck_assert_ptr_nonnull(sc);
	return sc;
}

#define ck_assert_seq_ok(sc)						\
	ck_assert_msg((sc)->errors == 0, "%u sequence errors, first: %s", \
		      (sc)->errors, (sc)->err)

/* ------------------------------------------------------------------------
 * (a) What one slice writes, field by field.
 */
START_TEST(test_first_event_describes_its_tracks_then_the_slice)
{
	struct tenv *e = env_new(4096, 8, 0);
	struct msg m, td, pd, thd, te, id, en, ec;
	uint64_t ts;

	ck_assert_int_eq(tb_ev_begin(&e->ew, &cat_a, "Work", NULL, 0), TB_OK);
	env_flush(e);
	ck_assert_uint_eq(e->n, 3);

	/* 0: the process track, first packet of the state: CLEARED */
	pkt(e, 0, &m);
	ck_assert_uint_eq(msg_varint(&m, 13), 1);
	ck_assert(msg_has(&m, 8));
	ck_assert(!msg_has(&m, 58));	/* BOOTTIME: the default clock */
	msg_sub(&m, 60, &td);
	ck_assert_uint_eq(msg_varint(&td, 1), PROC_UUID);
	ck_assert(!msg_has(&td, 5));
	msg_sub(&td, 3, &pd);
	ck_assert_uint_eq(msg_varint(&pd, 1), PID);
	ck_assert_str_field(&pd, 6, "proc");
	ck_assert(!msg_has(&td, 4));

	/* 1: the thread track, under the process */
	pkt(e, 1, &m);
	ck_assert(!msg_has(&m, 13));
	msg_sub(&m, 60, &td);
	ck_assert_uint_eq(msg_varint(&td, 1), THREAD_UUID);
	ck_assert_uint_eq(msg_varint(&td, 5), PROC_UUID);
	msg_sub(&td, 4, &thd);
	ck_assert_uint_eq(msg_varint(&thd, 1), PID);
	ck_assert_uint_eq(msg_varint(&thd, 2), TID);
	ck_assert_str_field(&thd, 5, "main");
	ck_assert(!msg_has(&td, 3));
	ts = msg_varint(&m, 8);

	/* 2: the event, with the interned data it needs */
	pkt_event(e, 2, &m, &te);
	ck_assert_uint_eq(msg_varint(&m, 13), 2);	/* NEEDS */
	ck_assert(msg_varint(&m, 8) >= ts);
	msg_sub(&m, 12, &id);
	ck_assert_int_eq(msg_count(&id, 1), 1);
	ck_assert_int_eq(msg_count(&id, 2), 1);
	ck_assert_int_eq(msg_count(&id, 3), 0);
	msg_sub(&id, 1, &ec);
	ck_assert_str_field(&ec, 2, "cat_a");
	msg_sub(&id, 2, &en);
	ck_assert_str_field(&en, 2, "Work");
	ck_assert_uint_eq(msg_varint(&te, 9), 1);	/* TYPE_SLICE_BEGIN */
	ck_assert_uint_eq(msg_varint(&te, 11), THREAD_UUID);
	ck_assert_uint_eq(msg_varint(&te, 3), msg_varint(&ec, 1));
	ck_assert_uint_eq(msg_varint(&te, 10), msg_varint(&en, 1));
	ck_assert_uint_ne(msg_varint(&ec, 1), 0);
	ck_assert_uint_ne(msg_varint(&en, 1), 0);
	ck_assert(!msg_has(&te, 23));
	ck_assert(!msg_has(&te, 22));
	ck_assert_uint_eq(e->ew.stats.states, 1);
	ck_assert_uint_eq(e->ew.stats.descriptors, 2);
	ck_assert_uint_eq(e->ew.stats.events, 1);
	env_free(e);
}
END_TEST

START_TEST(test_interned_once_then_only_iids)
{
	struct tenv *e = env_new(4096, 8, 0);
	struct seqck *sc = sc_new();
	struct msg m, te, te2;

	TB_TRACE_BEGIN_W(&e->ew, &cat_a, "Outer");
	TB_TRACE_BEGIN_W(&e->ew, &cat_a, "Inner");
	TB_TRACE_END_W(&e->ew, &cat_a);
	TB_TRACE_BEGIN_W(&e->ew, &cat_a, "Inner");
	TB_TRACE_END_W(&e->ew, &cat_a);
	TB_TRACE_END_W(&e->ew, &cat_a);
	env_flush(e);
	ck_assert_uint_eq(e->n, 2 + 6);
	sc_run(sc, e);
	ck_assert_seq_ok(sc);

	/* Outer: category and name new */
	pkt_event(e, 2, &m, &te);
	ck_assert(msg_has(&m, 12));
	/* first Inner: only its name is new */
	pkt_event(e, 3, &m, &te);
	{
		struct msg id;

		msg_sub(&m, 12, &id);
		ck_assert_int_eq(msg_count(&id, 1), 0);
		ck_assert_int_eq(msg_count(&id, 2), 1);
	}
	ck_assert_uint_eq(msg_varint(&m, 13), 2);
	/* the END: no name, no category, NEEDS not needed */
	pkt_event(e, 4, &m, &te);
	ck_assert_uint_eq(msg_varint(&te, 9), 2);	/* TYPE_SLICE_END */
	ck_assert_uint_eq(msg_varint(&te, 11), THREAD_UUID);
	ck_assert(!msg_has(&te, 10) && !msg_has(&te, 23));
	ck_assert(!msg_has(&te, 3) && !msg_has(&te, 22));
	ck_assert(!msg_has(&m, 12) && !msg_has(&m, 13));
	/* the second Inner: iids only, the same ones */
	pkt_event(e, 3, &m, &te);
	pkt_event(e, 5, &m, &te2);
	ck_assert(!msg_has(&m, 12));
	ck_assert_uint_eq(msg_varint(&m, 13), 2);
	ck_assert_uint_eq(msg_varint(&te2, 10), msg_varint(&te, 10));
	ck_assert_uint_eq(msg_varint(&te2, 3), msg_varint(&te, 3));
	free(sc);
	env_free(e);
}
END_TEST

START_TEST(test_no_intern_writes_every_name_inline)
{
	struct tenv *e = env_new(4096, 8, TB_EV_NO_INTERN);
	struct seqck *sc = sc_new();
	struct msg m, te, da;

	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "Tick", TB_ARG_INT("n", 7));
	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "Tick", TB_ARG_INT("n", 8));
	env_flush(e);
	ck_assert_uint_eq(e->n, 4);
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	pkt_event(e, 3, &m, &te);
	ck_assert(!msg_has(&m, 12) && !msg_has(&m, 13));
	ck_assert_uint_eq(msg_varint(&te, 9), 3);	/* TYPE_INSTANT */
	ck_assert_str_field(&te, 23, "Tick");
	ck_assert_str_field(&te, 22, "cat_a");
	msg_sub(&te, 4, &da);
	ck_assert_str_field(&da, 10, "n");
	ck_assert_uint_eq(msg_varint(&da, 4), 8);
	free(sc);
	env_free(e);
}
END_TEST

/* ------------------------------------------------------------------------
 * (b) Fresh state: after a failed write, after a generation bump.
 */

/* Fills the ring (nobody drains) until a write fails; returns the result. */
static int fill_until_failure(struct tenv *e, unsigned *written)
{
	unsigned i;
	int ret = TB_OK;

	for (i = 0; i < 10000 && ret == TB_OK; i++) {
		ret = tb_ev_instant(&e->ew, &cat_a, "Filler", NULL, 0);
		*written += ret == TB_OK;
	}
	return ret;
}

START_TEST(test_failed_write_starts_a_fresh_state)
{
	struct tenv *e = env_new(256, 4, 0);
	struct seqck *sc = sc_new();
	unsigned written = 0, before, i, clear_at = 0;
	struct msg m, te, id;
	int ret;

	ret = fill_until_failure(e, &written);
	ck_assert_int_eq(ret, TB_FULL);
	ck_assert_uint_eq(e->ew.stats.lost, 1);
	ck_assert_uint_eq(e->ew.fresh, 1);
	env_drain(e);
	before = e->n;
	ck_assert_uint_eq(before, 2 + written);
	/* the next event: descriptors again, then interned data again */
	ck_assert_int_eq(tb_ev_instant(&e->ew, &cat_a, "Filler", NULL, 0),
			 TB_OK);
	env_flush(e);
	ck_assert_uint_eq(e->n, before + 3);
	for (i = before; i < e->n; i++) {
		pkt(e, i, &m);
		if (msg_has(&m, 13) && msg_varint(&m, 13) & 1)
			clear_at = i;
	}
	ck_assert_uint_eq(clear_at, before);
	ck_assert(e->p[before].flags & TB_PKT_LOSS);
	pkt(e, before, &m);
	ck_assert_uint_eq(msg_varint(&m, 13), 1);
	msg_sub(&m, 60, &te);
	ck_assert_uint_eq(msg_varint(&te, 1), PROC_UUID);
	pkt(e, before + 1, &m);
	msg_sub(&m, 60, &te);
	ck_assert_uint_eq(msg_varint(&te, 1), THREAD_UUID);
	pkt_event(e, before + 2, &m, &te);
	msg_sub(&m, 12, &id);
	ck_assert_int_eq(msg_count(&id, 1), 1);		/* category */
	ck_assert_int_eq(msg_count(&id, 2), 1);		/* the name */
	ck_assert_uint_eq(e->ew.stats.states, 2);
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	ck_assert_uint_eq(sc->losses, 1);
	ck_assert_uint_eq(sc->clears, 2);
	free(sc);
	env_free(e);
}
END_TEST

START_TEST(test_failed_descriptor_drops_the_event_and_retries)
{
	struct tenv *e = env_new(256, 4, 0);
	struct seqck *sc = sc_new();
	unsigned written = 0;

	ck_assert_int_eq(fill_until_failure(e, &written), TB_FULL);
	/* the ring is still full: the fresh state's first packet fails */
	ck_assert_int_eq(tb_ev_instant(&e->ew, &cat_a, "Filler", NULL, 0),
			 TB_FULL);
	ck_assert_uint_eq(e->ew.stats.not_written, 2);
	ck_assert_uint_eq(e->ew.fresh, 1);
	env_drain(e);
	ck_assert_int_eq(tb_ev_instant(&e->ew, &cat_a, "Filler", NULL, 0),
			 TB_OK);
	env_flush(e);
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	ck_assert_uint_eq(sc->events, written + 1);
	free(sc);
	env_free(e);
}
END_TEST

START_TEST(test_finish_writes_the_state_a_loss_left_owed)
{
	struct tenv *e = env_new(256, 4, 0);
	struct seqck *sc = sc_new();
	unsigned written = 0, before;
	struct msg m;

	/* nothing owed: nothing written */
	ck_assert_int_eq(tb_ev_writer_finish(&e->ew), TB_OK);
	ck_assert_uint_eq(twrite_pos(&e->t), 0);
	ck_assert_int_eq(fill_until_failure(e, &written), TB_FULL);
	/* the ring is still full: the caller retries */
	ck_assert_int_eq(tb_ev_writer_finish(&e->ew), TB_FULL);
	env_drain(e);
	before = e->n;
	ck_assert_int_eq(tb_ev_writer_finish(&e->ew), TB_OK);
	ck_assert_int_eq(tb_ev_writer_finish(&e->ew), TB_OK);
	env_flush(e);
	/* the loss reaches the trace, on a packet that clears the state */
	ck_assert_uint_eq(e->n, before + 2);
	ck_assert(e->p[before].flags & TB_PKT_LOSS);
	pkt(e, before, &m);
	ck_assert_uint_eq(msg_varint(&m, 13), 1);
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	free(sc);
	env_free(e);

	/* an event written after the loss settles it too (no tracks) */
	e = env_new(256, 4, 0);
	ck_assert_int_eq(tb_ev_writer_init(&e->ew, &e->tw.w, NULL, NULL, 0),
			 TB_OK);
	ck_assert_int_eq(fill_until_failure(e, &written), TB_FULL);
	env_drain(e);
	ck_assert_int_eq(tb_ev_instant(&e->ew, &cat_a, "A", NULL, 0), TB_OK);
	before = twrite_pos(&e->t);
	ck_assert_int_eq(tb_ev_writer_finish(&e->ew), TB_OK);
	ck_assert_uint_eq(twrite_pos(&e->t), before);
	ck_assert_uint_eq(e->ew.stats.states, 2);
	env_flush(e);
	env_free(e);
}
END_TEST

START_TEST(test_generation_bump_starts_a_fresh_state)
{
	struct tenv *e = env_new(4096, 8, 0);
	struct seqck *sc = sc_new();
	struct tb_track gpu;
	struct msg m, td, te, id;
	unsigned n0;

	tb_track_custom(&gpu, 0x3000, &e->proc, "gpu");
	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "A", TB_ARG_UINT("k", 1));
	TB_TRACE_INSTANT_W(&e->ew, &cat_b, "B", TB_ON_TRACK(&gpu));
	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "A", TB_ARG_UINT("k", 2));
	env_drain(e);
	n0 = e->n;
	ck_assert_uint_eq(n0, 2 + 1 + 1 + 1 + 1);	/* + gpu descriptor */
	pkt(e, n0 - 1, &m);
	ck_assert(!msg_has(&m, 12));			/* all known */

	tb_ring_bump_generation(&e->t.r);
	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "A", TB_ARG_UINT("k", 3));
	env_flush(e);
	/* every track this writer used, the custom one too, then A */
	ck_assert_uint_eq(e->n, n0 + 3 + 1);
	pkt(e, n0, &m);
	ck_assert_uint_eq(msg_varint(&m, 13), 1);
	ck_assert(!(e->p[n0].flags & TB_PKT_LOSS));
	msg_sub(&m, 60, &td);
	ck_assert_uint_eq(msg_varint(&td, 1), PROC_UUID);
	pkt(e, n0 + 1, &m);
	msg_sub(&m, 60, &td);
	ck_assert_uint_eq(msg_varint(&td, 1), THREAD_UUID);
	pkt(e, n0 + 2, &m);
	msg_sub(&m, 60, &td);
	ck_assert_uint_eq(msg_varint(&td, 1), 0x3000);
	pkt_event(e, n0 + 3, &m, &te);
	msg_sub(&m, 12, &id);
	ck_assert_int_eq(msg_count(&id, 1), 1);
	ck_assert_int_eq(msg_count(&id, 2), 1);
	ck_assert_int_eq(msg_count(&id, 3), 1);		/* "k" */
	ck_assert_uint_eq(e->ew.stats.generations, 1);
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	free(sc);
	env_free(e);
}
END_TEST

START_TEST(test_reset_on_request)
{
	struct tenv *e = env_new(4096, 8, 0);
	struct seqck *sc = sc_new();

	tb_ev_instant(&e->ew, &cat_a, "A", NULL, 0);
	tb_ev_reset(&e->ew);
	tb_ev_instant(&e->ew, &cat_a, "A", NULL, 0);
	env_flush(e);
	ck_assert_uint_eq(e->n, 6);
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	ck_assert_uint_eq(sc->clears, 2);
	free(sc);
	env_free(e);
}
END_TEST

/* ------------------------------------------------------------------------
 * (c) Categories.
 */
static int evaluated;

static int64_t side_effect(void)
{
	evaluated++;
	return 1;
}

START_TEST(test_disabled_category_writes_nothing)
{
	struct tenv *e = env_new(4096, 8, 0);
	struct tb_track ctr;
	uint32_t wp = twrite_pos(&e->t);

	tb_track_counter(&ctr, 0x4000, &e->proc, "c", TB_UNIT_COUNT);
	evaluated = 0;
	TB_TRACE_BEGIN_W(&e->ew, &cat_off, "X",
			 TB_ARG_INT("n", side_effect()));
	TB_TRACE_END_W(&e->ew, &cat_off, TB_ARG_INT("n", side_effect()));
	TB_TRACE_INSTANT_W(&e->ew, &cat_off, "X",
			   TB_ARG_INT("n", side_effect()));
	TB_TRACE_COUNTER_W(&e->ew, &cat_off, &ctr, side_effect());
	TB_TRACE_COUNTER_DOUBLE_W(&e->ew, &cat_off, &ctr, side_effect());
	ck_assert_int_eq(tb_ev_begin(&e->ew, &cat_off, "X", NULL, 0), TB_OK);
	ck_assert_int_eq(tb_ev_counter(&e->ew, &cat_off, &ctr, 1), TB_OK);
	ck_assert_int_eq(evaluated, 0);
	ck_assert_uint_eq(twrite_pos(&e->t), wp);
	ck_assert_uint_eq(e->ew.stats.states, 0);
	ck_assert_uint_eq(e->tw.w.own, TB__OWN_NONE);
	env_flush(e);
	ck_assert_uint_eq(e->n, 0);

	/* flipped at run time */
	tb_category_set(&cat_off, true);
	TB_TRACE_INSTANT_W(&e->ew, &cat_off, "X",
			   TB_ARG_INT("n", side_effect()));
	tb_category_set(&cat_off, false);
	TB_TRACE_INSTANT_W(&e->ew, &cat_off, "X");
	env_flush(e);
	ck_assert_int_eq(evaluated, 1);
	ck_assert_uint_eq(e->n, 3);
	env_free(e);
}
END_TEST

START_TEST(test_no_current_writer_writes_nothing)
{
	struct tenv *e = env_new(4096, 8, 0);

	tb_ev_set_current(NULL);
	TB_TRACE_BEGIN(&cat_a, "X");
	TB_TRACE_END(&cat_a);
	TB_TRACE_INSTANT(&cat_a, "X", TB_ARG_BOOL("b", 1));
	tb_ev_set_current(&e->ew);
	TB_TRACE_INSTANT(&cat_a, "Y", TB_ARG_BOOL("b", 1));
	tb_ev_set_current(NULL);
	env_flush(e);
	ck_assert_uint_eq(e->n, 3);
	env_free(e);
}
END_TEST

/* ------------------------------------------------------------------------
 * (d) Counters, flows, annotations, tracks.
 */
START_TEST(test_counters_int_and_double)
{
	struct tenv *e = env_new(4096, 8, 0);
	struct seqck *sc = sc_new();
	struct tb_track mem, load;
	struct msg m, td, cd, te;

	tb_track_counter(&mem, 0x5000, &e->proc, "mem", TB_UNIT_SIZE_BYTES);
	tb_track_counter(&load, 0x5001, NULL, "load", TB_UNIT_UNSPECIFIED);
	TB_TRACE_COUNTER_W(&e->ew, &cat_a, &mem, -12345);
	TB_TRACE_COUNTER_DOUBLE_W(&e->ew, &cat_a, &load, 0.75);
	ck_assert_int_eq(tb_ev_counter(&e->ew, &cat_a, &mem, 1LL << 40),
			 TB_OK);
	env_flush(e);
	/* proc, thread, mem descriptor, value, load descriptor, value, value */
	ck_assert_uint_eq(e->n, 7);
	sc_run(sc, e);
	ck_assert_seq_ok(sc);

	pkt(e, 2, &m);
	msg_sub(&m, 60, &td);
	ck_assert_uint_eq(msg_varint(&td, 1), 0x5000);
	ck_assert_uint_eq(msg_varint(&td, 5), PROC_UUID);
	ck_assert_str_field(&td, 2, "mem");
	msg_sub(&td, 8, &cd);
	ck_assert_uint_eq(msg_varint(&cd, 3), 3);	/* UNIT_SIZE_BYTES */

	pkt_event(e, 3, &m, &te);
	ck_assert_uint_eq(msg_varint(&te, 9), 4);	/* TYPE_COUNTER */
	ck_assert_uint_eq(msg_varint(&te, 11), 0x5000);
	ck_assert_int_eq((int64_t)msg_varint(&te, 30), -12345);
	ck_assert(!msg_has(&te, 10) && !msg_has(&te, 23));
	ck_assert(!msg_has(&te, 3) && !msg_has(&te, 22));
	ck_assert(!msg_has(&m, 12));
	/* the value needs its track's descriptor: a reader that has not
	 * seen this state skips it, as the importer resolves counters in
	 * file order and would drop it as an error */
	ck_assert_uint_eq(msg_varint(&m, 13), 2);	/* NEEDS */

	pkt(e, 4, &m);
	msg_sub(&m, 60, &td);
	ck_assert_uint_eq(msg_varint(&td, 1), 0x5001);
	ck_assert(!msg_has(&td, 5));
	msg_sub(&td, 8, &cd);
	ck_assert_int_eq(cd.n, 0);			/* present, empty */

	pkt_event(e, 5, &m, &te);
	ck_assert_uint_eq(msg_varint(&te, 9), 4);
	ck_assert(dbl_of(msg_fixed64_at(&te, 44, 0)) == 0.75);
	ck_assert(!msg_has(&te, 30));
	pkt_event(e, 6, &m, &te);
	ck_assert_uint_eq(msg_varint(&te, 30), 1ull << 40);
	free(sc);
	env_free(e);
}
END_TEST

START_TEST(test_flows_between_slices)
{
	struct tenv *e = env_new(4096, 8, 0);
	struct seqck *sc = sc_new();
	uint64_t f1 = 0x1122334455667788ull, f2 = 7;
	struct msg m, te;

	TB_TRACE_BEGIN_W(&e->ew, &cat_a, "Send", TB_FLOW(f1), TB_FLOW(f2));
	TB_TRACE_END_W(&e->ew, &cat_a);
	TB_TRACE_BEGIN_W(&e->ew, &cat_a, "Relay", TB_FLOW(f1));
	TB_TRACE_END_W(&e->ew, &cat_a);
	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "Recv", TB_FLOW_END(f1),
			   TB_FLOW_END(f2));
	env_flush(e);
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	pkt_event(e, 2, &m, &te);
	ck_assert_int_eq(msg_count(&te, 47), 2);
	ck_assert_uint_eq(msg_fixed64_at(&te, 47, 0), f1);
	ck_assert_uint_eq(msg_fixed64_at(&te, 47, 1), f2);
	ck_assert(!msg_has(&te, 48));
	ck_assert(!msg_has(&te, 4));	/* flows are not annotations */
	pkt_event(e, 4, &m, &te);
	ck_assert_uint_eq(msg_fixed64_at(&te, 47, 0), f1);
	pkt_event(e, 6, &m, &te);
	ck_assert(!msg_has(&te, 47));
	ck_assert_int_eq(msg_count(&te, 48), 2);
	ck_assert_uint_eq(msg_fixed64_at(&te, 48, 0), f1);
	ck_assert_uint_eq(msg_fixed64_at(&te, 48, 1), f2);
	free(sc);
	env_free(e);
}
END_TEST

/* The annotation of event @te named @name (resolved through @id). */
static void find_ann(const struct msg *te, const struct msg *id,
		     const char *name, struct msg *da)
{
	int i, j;

	for (i = 0; i < msg_count(te, 4); i++) {
		msg_sub_at(te, 4, i, da);
		if (msg_str_is(da, 10, name))
			return;
		if (!msg_has(da, 1))
			continue;
		for (j = 0; j < msg_count(id, 3); j++) {
			struct msg en;

			msg_sub_at(id, 3, j, &en);
			if (msg_varint(&en, 1) == msg_varint(da, 1) &&
			    msg_str_is(&en, 2, name))
				return;
		}
	}
	ck_abort_msg("no annotation %s", name);
}

START_TEST(test_every_annotation_type)
{
	struct tenv *e = env_new(4096, 8, 0);
	struct seqck *sc = sc_new();
	struct msg m, te, id, da;
	int x;

	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "Args",
			   TB_ARG_INT("i", -5), TB_ARG_UINT("u", 1ull << 63),
			   TB_ARG_DOUBLE("d", -2.5), TB_ARG_BOOL("b", 1),
			   TB_ARG_BOOL("f", 0), TB_ARG_STR("s", "hello"),
			   TB_ARG_STRN("sn", "abcdef", 3),
			   TB_ARG_STR("null", NULL), TB_ARG_PTR("p", &x));
	env_flush(e);
	ck_assert_uint_eq(e->n, 3);
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	pkt_event(e, 2, &m, &te);
	msg_sub(&m, 12, &id);
	ck_assert_int_eq(msg_count(&id, 3), 9);
	ck_assert_int_eq(msg_count(&te, 4), 9);
	find_ann(&te, &id, "i", &da);
	ck_assert_int_eq((int64_t)msg_varint(&da, 4), -5);
	find_ann(&te, &id, "u", &da);
	ck_assert_uint_eq(msg_varint(&da, 3), 1ull << 63);
	find_ann(&te, &id, "d", &da);
	ck_assert(dbl_of(msg_fixed64_at(&da, 5, 0)) == -2.5);
	find_ann(&te, &id, "b", &da);
	ck_assert_uint_eq(msg_varint(&da, 2), 1);
	find_ann(&te, &id, "f", &da);
	ck_assert_uint_eq(msg_varint(&da, 2), 0);
	find_ann(&te, &id, "s", &da);
	ck_assert_str_field(&da, 6, "hello");
	find_ann(&te, &id, "sn", &da);
	ck_assert_str_field(&da, 6, "abc");
	find_ann(&te, &id, "null", &da);
	ck_assert_str_field(&da, 6, "");
	find_ann(&te, &id, "p", &da);
	ck_assert_uint_eq(msg_varint(&da, 7), (uint64_t)(uintptr_t)&x);
	/* each annotation has exactly one name and one value */
	for (x = 0; x < 9; x++) {
		msg_sub_at(&te, 4, x, &da);
		ck_assert_int_eq(da.n, 2);
		ck_assert(msg_has(&da, 1));
	}
	free(sc);
	env_free(e);
}
END_TEST

START_TEST(test_custom_tracks_nest_under_their_parents)
{
	struct tenv *e = env_new(4096, 8, 0);
	struct seqck *sc = sc_new();
	static const struct tb_track root =
		TB_TRACK_CUSTOM_INIT(0x7000, NULL, "Requests");
	static const struct tb_track lane =
		TB_TRACK_CUSTOM_INIT(0x7001, &root, "lane 1");
	struct msg m, td, te;

	TB_TRACE_BEGIN_W(&e->ew, &cat_a, "Req", TB_ON_TRACK(&lane));
	TB_TRACE_BEGIN_W(&e->ew, &cat_a, "Local");
	TB_TRACE_END_W(&e->ew, &cat_a);
	TB_TRACE_END_W(&e->ew, &cat_a, TB_ON_TRACK(&lane));
	env_flush(e);
	/* proc, thread, root, lane, Req, Local, END, END */
	ck_assert_uint_eq(e->n, 8);
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	pkt(e, 2, &m);
	msg_sub(&m, 60, &td);
	ck_assert_uint_eq(msg_varint(&td, 1), 0x7000);
	ck_assert(!msg_has(&td, 5));
	ck_assert_str_field(&td, 2, "Requests");
	ck_assert(!msg_has(&td, 3) && !msg_has(&td, 4) && !msg_has(&td, 8));
	pkt(e, 3, &m);
	msg_sub(&m, 60, &td);
	ck_assert_uint_eq(msg_varint(&td, 1), 0x7001);
	ck_assert_uint_eq(msg_varint(&td, 5), 0x7000);
	ck_assert_str_field(&td, 2, "lane 1");
	pkt_event(e, 4, &m, &te);
	ck_assert_uint_eq(msg_varint(&te, 11), 0x7001);
	pkt_event(e, 5, &m, &te);
	ck_assert_uint_eq(msg_varint(&te, 11), THREAD_UUID);
	pkt_event(e, 7, &m, &te);
	ck_assert_uint_eq(msg_varint(&te, 9), 2);
	ck_assert_uint_eq(msg_varint(&te, 11), 0x7001);
	free(sc);
	env_free(e);
}
END_TEST

START_TEST(test_a_full_track_table_describes_before_every_event)
{
	struct tenv *e = env_new(4096, 16, 0);
	struct seqck *sc = sc_new();
	static struct tb_track t[TB_EV_TRACKS + 2];
	unsigned i, before;

	for (i = 0; i < TB_EV_TRACKS + 2; i++)
		tb_track_custom(&t[i], 0x8000 + i, NULL, "t");
	for (i = 0; i < TB_EV_TRACKS + 2; i++)
		TB_TRACE_INSTANT_W(&e->ew, &cat_a, "E", TB_ON_TRACK(&t[i]));
	/* the table holds proc, thread and TB_EV_TRACKS - 2 of them */
	ck_assert_uint_eq(e->ew.ntracks, TB_EV_TRACKS);
	env_drain(e);
	before = e->n;
	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "E",
			   TB_ON_TRACK(&t[TB_EV_TRACKS + 1]));
	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "E", TB_ON_TRACK(&t[0]));
	env_flush(e);
	ck_assert_uint_eq(e->n, before + 2 + 1);	/* described again */
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	free(sc);
	env_free(e);
}
END_TEST

START_TEST(test_forgotten_track_is_not_described_again)
{
	struct tenv *e = env_new(4096, 16, 0);
	struct tb_track tmp;

	tb_track_custom(&tmp, 0x9000, NULL, "tmp");
	ck_assert_int_eq(tb_ev_add_track(&e->ew, &tmp), TB_OK);
	ck_assert_uint_eq(e->ew.stats.descriptors, 3);
	tb_ev_forget_track(&e->ew, &tmp);
	ck_assert_uint_eq(e->ew.ntracks, 2);
	tb_ev_reset(&e->ew);
	tb_ev_instant(&e->ew, &cat_a, "E", NULL, 0);
	ck_assert_uint_eq(e->ew.stats.descriptors, 5);
	env_flush(e);
	env_free(e);
}
END_TEST

/* ------------------------------------------------------------------------
 * (e) Clocks.
 */
static uint64_t fake_ns = 1000;

static uint64_t fake_now(void *ctx)
{
	(void)ctx;
	return fake_ns += 10;
}

static uint64_t fake_ref(void *ctx)
{
	return *(uint64_t *)ctx;
}

START_TEST(test_user_clock_and_its_snapshot)
{
	static uint64_t ref = 5000000;
	struct tb_ev_clock clk = { fake_now, &ref, 64, TB_CLOCK_BOOTTIME,
				   fake_ref };
	struct tenv *e = env_new_clock(4096, 8, &clk, 0);
	struct seqck *sc = sc_new();
	struct msg m, cs, c0, c1;
	unsigned i;

	fake_ns = 1000;
	TB_TRACE_BEGIN_W(&e->ew, &cat_a, "Timed");
	TB_TRACE_END_W(&e->ew, &cat_a);
	tb_ring_bump_generation(&e->t.r);
	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "Again");
	env_flush(e);
	/* snapshot, proc, thread, BEGIN, END; snapshot, proc, thread, I */
	ck_assert_uint_eq(e->n, 9);
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	ck_assert_uint_eq(sc->snapshots, 2);
	pkt(e, 0, &m);
	ck_assert_uint_eq(msg_varint(&m, 13), 1);	/* the state starts */
	ck_assert(!msg_has(&m, 8) && !msg_has(&m, 60));
	msg_sub(&m, 6, &cs);
	ck_assert_int_eq(msg_count(&cs, 1), 2);
	msg_sub_at(&cs, 1, 0, &c0);
	msg_sub_at(&cs, 1, 1, &c1);
	ck_assert_uint_eq(msg_varint(&c0, 1), 64);
	ck_assert_uint_eq(msg_varint(&c0, 2), 1010);
	ck_assert_uint_eq(msg_varint(&c1, 1), 6);	/* BOOTTIME */
	ck_assert_uint_eq(msg_varint(&c1, 2), 5000000);
	for (i = 1; i < 5; i++) {
		pkt(e, i, &m);
		ck_assert_uint_eq(msg_varint(&m, 58), 64);
		ck_assert(msg_varint(&m, 8) > 1010);
	}
	pkt(e, 5, &m);
	ck_assert(msg_has(&m, 6));
	free(sc);
	env_free(e);
}
END_TEST

START_TEST(test_boottime_user_clock_needs_no_snapshot)
{
	struct tb_ev_clock boot = { fake_now, NULL, TB_CLOCK_BOOTTIME, 0,
				    NULL };
	struct tenv *e;
	struct msg m;
	unsigned i;

	e = env_new_clock(4096, 8, &boot, 0);
	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "B");
	env_flush(e);
	for (i = 0; i < 3; i++) {
		pkt(e, i, &m);
		ck_assert(!msg_has(&m, 58));
	}
	env_free(e);
}
END_TEST

/*
 * A builtin clock other than BOOTTIME converts to the trace's clock only
 * through a snapshot: given a reference clock, each fresh state writes
 * one relating the two.
 */
START_TEST(test_builtin_clock_with_a_reference_is_snapshotted)
{
	static uint64_t ref = 7000000;
	struct tb_ev_clock mono = { fake_now, &ref, TB_CLOCK_MONOTONIC,
				    TB_CLOCK_BOOTTIME, fake_ref };
	struct tenv *e = env_new_clock(4096, 8, &mono, 0);
	struct msg m, cs, c0, c1;

	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "M");
	env_flush(e);
	ck_assert_uint_eq(e->n, 4);	/* snapshot, proc, thread, I */
	pkt(e, 0, &m);
	msg_sub(&m, 6, &cs);
	ck_assert_int_eq(msg_count(&cs, 1), 2);
	msg_sub_at(&cs, 1, 0, &c0);
	msg_sub_at(&cs, 1, 1, &c1);
	ck_assert_uint_eq(msg_varint(&c0, 1), TB_CLOCK_MONOTONIC);
	ck_assert_uint_eq(msg_varint(&c1, 1), TB_CLOCK_BOOTTIME);
	ck_assert_uint_eq(msg_varint(&c1, 2), 7000000);
	pkt(e, 3, &m);
	ck_assert_uint_eq(msg_varint(&m, 58), TB_CLOCK_MONOTONIC);
	env_free(e);
}
END_TEST

/*
 * TB_EV_FAST_CLOCK: the trace is the one the default clock writes (no
 * clock id, no snapshot), and every timestamp is CLOCK_BOOTTIME: between
 * BOOTTIME read just before and just after it (give or take
 * FAST_TOLERANCE: the conversion's error, never the machine's load),
 * never going back, across the anchors of several milliseconds.  Where
 * there is no counter the flag changes nothing, and the same holds.
 */
#define FAST_TOLERANCE	100000u		/* ns */
#define FAST_SPAN	(20u * 1000000u)	/* ns of readings */

START_TEST(test_fast_clock_gives_boottime)
{
	struct tenv *e = env_new(4096, 8, TB_EV_FAST_CLOCK);
	struct seqck *sc = sc_new();
	uint64_t start = tb_ev_boottime_ns(), a, t, b, last = 0;
	unsigned i, events = 0;
	struct msg m;

#if TB__EV_HAVE_COUNTER
	ck_assert_int_eq(tb_ev_fast_clock(&e->ew), tb__ev_cycles_usable());
#else
	ck_assert(!tb_ev_fast_clock(&e->ew));
#endif
	do {
		a = tb_ev_boottime_ns();
		t = tb_ev_now(&e->ew);
		b = tb_ev_boottime_ns();
		ck_assert_msg(t + FAST_TOLERANCE >= a && t <= b + FAST_TOLERANCE,
			      "fast clock %llu outside BOOTTIME [%llu, %llu]",
			      (unsigned long long)t, (unsigned long long)a,
			      (unsigned long long)b);
		ck_assert_uint_ge(t, last);
		last = t;
	} while (b - start < FAST_SPAN);
	if (tb_ev_fast_clock(&e->ew))	/* calibrated, anchored again */
		ck_assert_uint_eq(e->ew.fast.on, TB__EV_FAST_ON);
	/* and the events: no clock id, no snapshot, BOOTTIME stamps */
	a = tb_ev_boottime_ns();
	for (i = 0; i < 20; i++) {
		TB_TRACE_BEGIN_W(&e->ew, &cat_a, "Fast");
		TB_TRACE_END_W(&e->ew, &cat_a);
	}
	b = tb_ev_boottime_ns();
	env_flush(e);
	for (i = 0; i < e->n; i++) {
		pkt(e, i, &m);
		ck_assert(!msg_has(&m, 58));
		ck_assert(!msg_has(&m, 6));
		if (!msg_has(&m, 11))
			continue;
		events++;
		ck_assert_uint_ge(msg_varint(&m, 8) + FAST_TOLERANCE, a);
		ck_assert_uint_le(msg_varint(&m, 8), b + FAST_TOLERANCE);
	}
	ck_assert_uint_eq(events, 40);
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	free(sc);
	env_free(e);
}
END_TEST

/* A caller's clock stays the caller's: the flag is for the default. */
START_TEST(test_fast_clock_leaves_a_callers_clock_alone)
{
	struct tb_ev_clock clk = { fake_now, NULL, TB_CLOCK_BOOTTIME, 0,
				   NULL };
	struct tenv *e = env_new_clock(4096, 8, &clk, TB_EV_FAST_CLOCK);
	uint64_t t;

	ck_assert(!tb_ev_fast_clock(&e->ew));
	t = tb_ev_now(&e->ew);
	ck_assert_uint_eq(tb_ev_now(&e->ew), t + 10);	/* fake_now's steps */
	env_free(e);
}
END_TEST

#if TB__EV_HAVE_COUNTER
/* Reads the fast clock until it has its rate (or ms of BOOTTIME pass). */
static void fast_calibrate(struct tenv *e)
{
	uint64_t start = tb_ev_boottime_ns();

	while (e->ew.fast.on == TB__EV_FAST_CAL &&
	       tb_ev_boottime_ns() - start < 1000u * 1000000u)
		tb_ev_now(&e->ew);
	ck_assert_uint_eq(e->ew.fast.on, TB__EV_FAST_ON);
}

/*
 * An anchor starts the conversion again from BOOTTIME; when it had run
 * ahead (planted here: 50 us, under the error that turns it off), what
 * it gave out is a floor: time never goes back on the sequence.
 */
START_TEST(test_fast_clock_never_goes_back_at_an_anchor)
{
	struct tenv *e = env_new(4096, 8, TB_EV_FAST_CLOCK);
	uint64_t ahead, t;
	unsigned i, anchors;

	if (!tb_ev_fast_clock(&e->ew)) {	/* no invariant TSC here */
		env_free(e);
		return;
	}
	fast_calibrate(e);
	e->ew.fast.n0 += 50000;
	ahead = tb_ev_now(&e->ew);
	anchors = e->ew.fast.anchors;
	e->ew.fast.lim = 0;		/* the next read anchors */
	for (i = 0; i < 100; i++) {
		t = tb_ev_now(&e->ew);
		ck_assert_msg(t >= ahead, "went back %llu ns at an anchor",
			      (unsigned long long)(ahead - t));
		ahead = t;
	}
	ck_assert_uint_gt(e->ew.fast.anchors, anchors);
	ck_assert(tb_ev_fast_clock(&e->ew));
	env_free(e);
}
END_TEST

/*
 * A counter that jumped (suspend, another CPU's TSC: planted, a second)
 * turns the fast clock off at the next anchor, for good: BOOTTIME from
 * then on, and still never going back.
 */
START_TEST(test_fast_clock_turns_off_when_the_counter_jumps)
{
	struct tenv *e = env_new(4096, 8, TB_EV_FAST_CLOCK);
	uint64_t ahead, t, a;
	unsigned i;

	if (!tb_ev_fast_clock(&e->ew)) {
		env_free(e);
		return;
	}
	fast_calibrate(e);
	e->ew.fast.n0 -= 1000000000u;	/* a second behind BOOTTIME */
	e->ew.fast.lim = 0;
	a = tb_ev_boottime_ns();
	t = tb_ev_now(&e->ew);
	ck_assert(!tb_ev_fast_clock(&e->ew));
	ck_assert_uint_ge(t, a);	/* BOOTTIME again */
	ahead = t;
	for (i = 0; i < 100; i++) {
		t = tb_ev_now(&e->ew);
		ck_assert_uint_ge(t, ahead);
		ahead = t;
	}
	env_free(e);
}
END_TEST
#endif

START_TEST(test_init_refuses_bad_clocks_and_flags)
{
	struct tenv *e = env_new(4096, 8, 0);
	struct tb_ev_writer ew;
	struct tb_ev_clock c0 = { fake_now, NULL, 0, 0, NULL };
	struct tb_ev_clock c200 = { fake_now, NULL, 200, 0, NULL };
	struct tb_ev_clock cnull = { NULL, NULL, 64, 6, NULL };
	struct tb_ev_clock cref = { fake_now, NULL, 64, 1, fake_now };
	/* what the importer drops, every packet: no path to BOOTTIME */
	struct tb_ev_clock seq = { fake_now, NULL, 64, 0, NULL };
	struct tb_ev_clock self = { fake_now, NULL, 64, 64, fake_now };
	struct tb_ev_clock rt = { fake_now, NULL, TB_CLOCK_REALTIME, 0, NULL };
	struct tb_ev_clock mono = { fake_now, NULL, TB_CLOCK_MONOTONIC, 0,
				    NULL };
	struct tb_ev_clock ok = { fake_now, NULL, 64, TB_CLOCK_BOOTTIME,
				  NULL };

	ck_assert_int_eq(tb_ev_writer_init(&ew, &e->tw.w, NULL, &c0, 0),
			 TB_ECLOCKID);
	ck_assert_int_eq(tb_ev_writer_init(&ew, &e->tw.w, NULL, &c200, 0),
			 TB_ECLOCKID);
	ck_assert_int_eq(tb_ev_writer_init(&ew, &e->tw.w, NULL, &cnull, 0),
			 TB_ECLOCKFN);
	/* a REALTIME reference does not lead to the trace's clock */
	ck_assert_int_eq(tb_ev_writer_init(&ew, &e->tw.w, NULL, &cref, 0),
			 TB_ECLOCKREF);
	ck_assert_int_eq(tb_ev_writer_init(&ew, &e->tw.w, NULL, &seq, 0),
			 TB_ECLOCKREF);
	ck_assert_int_eq(tb_ev_writer_init(&ew, &e->tw.w, NULL, &self, 0),
			 TB_ECLOCKREF);
	ck_assert_int_eq(tb_ev_writer_init(&ew, &e->tw.w, NULL, &rt, 0),
			 TB_ECLOCKREF);
	ck_assert_int_eq(tb_ev_writer_init(&ew, &e->tw.w, NULL, &mono, 0),
			 TB_ECLOCKREF);
	/* BOOTTIME as the reference, read by the default clock */
	ck_assert_int_eq(tb_ev_writer_init(&ew, &e->tw.w, NULL, &ok, 0),
			 TB_OK);
	ck_assert_int_eq(tb_ev_writer_init(&ew, &e->tw.w, NULL, NULL, 0x80),
			 TB_EINVAL);
	ck_assert_int_eq(tb_ev_writer_init(&ew, NULL, NULL, NULL, 0),
			 TB_EINVAL);
	ck_assert_int_eq(tb_ev_writer_init(&ew, &e->tw.w, NULL, NULL, 0),
			 TB_OK);
	env_free(e);
}
END_TEST

/* ------------------------------------------------------------------------
 * (f) Limits: a full interning table, a packet larger than a chunk, too
 * many items, events on the global track.
 */
START_TEST(test_full_interning_table_falls_back_to_inline_names)
{
	struct tenv *e = env_new(4096, 64, 0);
	struct seqck *sc = sc_new();
	static char names[60][8];
	unsigned i, room = TB_EV_INTERN_SLOTS / 4 * 3 - 1;	/* - cat_a */
	uint64_t max_iid = 0;
	struct msg m, te, id, en;

	for (i = 0; i < 60; i++)
		snprintf(names[i], sizeof(names[i]), "n%02u", i);
	for (i = 0; i < 60; i++)
		ck_assert_int_eq(tb_ev_instant(&e->ew, &cat_a, names[i],
					       NULL, 0), TB_OK);
	ck_assert_uint_eq(e->ew.stats.inline_names, 60 - room);
	env_drain(e);
	for (i = 0; i < 60; i++) {
		pkt_event(e, 2 + i, &m, &te);
		if (i < room) {
			ck_assert(msg_has(&te, 10) && !msg_has(&te, 23));
			msg_sub(&m, 12, &id);
			msg_sub(&id, 2, &en);
			if (msg_varint(&en, 1) > max_iid)
				max_iid = msg_varint(&en, 1);
		} else {
			ck_assert(!msg_has(&te, 10));
			ck_assert_str_field(&te, 23, names[i]);
			ck_assert_uint_eq(msg_varint(&m, 13), 2); /* cat */
		}
	}
	/* a fresh state empties the table: the last name gets an iid */
	tb_ev_reset(&e->ew);
	ck_assert_int_eq(tb_ev_instant(&e->ew, &cat_a, names[59], NULL, 0),
			 TB_OK);
	env_flush(e);
	pkt_event(e, e->n - 1, &m, &te);
	ck_assert(msg_has(&te, 10));
	ck_assert_uint_gt(msg_varint(&te, 10), max_iid);	/* no reuse */
	ck_assert_uint_eq(e->ew.nintern, 2);
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	free(sc);
	env_free(e);
}
END_TEST

START_TEST(test_iids_survive_a_fresh_state_while_the_table_has_room)
{
	struct tenv *e = env_new(4096, 8, 0);
	struct msg m, te;
	uint64_t iid;

	tb_ev_instant(&e->ew, &cat_a, "Same", NULL, 0);
	tb_ev_reset(&e->ew);
	tb_ev_instant(&e->ew, &cat_a, "Same", NULL, 0);
	env_flush(e);
	pkt_event(e, 2, &m, &te);
	iid = msg_varint(&te, 10);
	pkt_event(e, 5, &m, &te);
	ck_assert(msg_has(&m, 12));		/* emitted again ... */
	ck_assert_uint_eq(msg_varint(&te, 10), iid);	/* ... same iid */
	env_free(e);
}
END_TEST

START_TEST(test_long_annotation_spans_chunks)
{
	struct tenv *e = env_new(512, 16, 0);
	struct seqck *sc = sc_new();
	static char big[3000];
	struct msg m, te, id, da;

	memset(big, 'z', sizeof(big));
	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "Big",
			   TB_ARG_STRN("body", big, sizeof(big)));
	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "After");
	env_flush(e);
	ck_assert_uint_eq(e->n, 4);
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	ck_assert_uint_gt(e->p[2].len, 3000);
	pkt_event(e, 2, &m, &te);
	msg_sub(&m, 12, &id);
	find_ann(&te, &id, "body", &da);
	ck_assert_uint_eq(msg_field(&da, 6, 0)->size, sizeof(big));
	ck_assert(!memcmp(msg_field(&da, 6, 0)->data, big, sizeof(big)));
	free(sc);
	env_free(e);
}
END_TEST

START_TEST(test_too_many_items_and_bad_events_are_refused)
{
	struct tenv *e = env_new(4096, 8, 0);
	struct tb_arg a[TB_EV_MAX_ARGS + 1];
	struct tb_ev_event ev;
	unsigned i;

	for (i = 0; i <= TB_EV_MAX_ARGS; i++)
		a[i] = tb_arg_int("x", i);
	ck_assert_int_eq(tb_ev_instant(&e->ew, &cat_a, "X", a,
				       TB_EV_MAX_ARGS + 1), TB_EINVAL);
	ck_assert_int_eq(tb_ev_instant(&e->ew, &cat_a, "X", a,
				       TB_EV_MAX_ARGS), TB_OK);
	memset(&ev, 0, sizeof(ev));
	ev.type = 9;
	ck_assert_int_eq(tb_ev_emit(&e->ew, &ev), TB_EINVAL);
	ck_assert_int_eq(tb_ev_counter(&e->ew, &cat_a, NULL, 1), TB_EINVAL);
	ck_assert_int_eq(tb_ev_begin(NULL, &cat_a, "X", NULL, 0), TB_EINVAL);
	env_free(e);
}
END_TEST

START_TEST(test_defaults_name_the_writers_track_and_clock)
{
	struct tb_ev_clock clk = { fake_now, NULL, 70, TB_CLOCK_BOOTTIME,
				   NULL };
	struct tenv *e = env_new(4096, 8, TB_EV_DEFAULTS);
	struct seqck *sc = sc_new();
	static const struct tb_track lane =
		TB_TRACK_CUSTOM_INIT(0x7300, NULL, "lane");
	struct msg m, d, ted, te;
	unsigned i;

	TB_TRACE_BEGIN_W(&e->ew, &cat_a, "Own");
	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "Other", TB_ON_TRACK(&lane));
	TB_TRACE_END_W(&e->ew, &cat_a);
	tb_ring_bump_generation(&e->t.r);
	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "Again");
	env_flush(e);
	/* defaults, proc, thread, Own, lane, Other, END; again: 4 + I */
	ck_assert_uint_eq(e->n, 7 + 5);
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	pkt(e, 0, &m);
	ck_assert_uint_eq(msg_varint(&m, 13), 1);
	ck_assert(!msg_has(&m, 8) && !msg_has(&m, 60) && !msg_has(&m, 11));
	msg_sub(&m, 59, &d);
	ck_assert(!msg_has(&d, 58));		/* BOOTTIME: no clock id */
	msg_sub(&d, 11, &ted);
	ck_assert_int_eq(ted.n, 1);
	ck_assert_uint_eq(msg_varint(&ted, 11), THREAD_UUID);
	for (i = 1; i < 7; i++) {
		pkt(e, i, &m);
		ck_assert_uint_eq(msg_varint(&m, 13) & 3, 2);
	}
	pkt_event(e, 3, &m, &te);
	ck_assert(!msg_has(&te, 11));		/* the default track */
	pkt_event(e, 5, &m, &te);
	ck_assert_uint_eq(msg_varint(&te, 11), 0x7300);
	pkt_event(e, 6, &m, &te);
	ck_assert(!msg_has(&te, 11));
	pkt(e, 7, &m);
	ck_assert(msg_has(&m, 59));		/* again after the bump */
	free(sc);
	env_free(e);

	/* a user clock: its id in the defaults, on no packet */
	e = env_new_clock(4096, 8, &clk, TB_EV_DEFAULTS);
	sc = sc_new();
	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "Timed");
	env_flush(e);
	ck_assert_uint_eq(e->n, 5);	/* defaults, snapshot, proc, thread */
	pkt(e, 0, &m);
	msg_sub(&m, 59, &d);
	ck_assert_uint_eq(msg_varint(&d, 58), 70);
	pkt(e, 1, &m);
	ck_assert(msg_has(&m, 6));
	for (i = 1; i < 5; i++) {
		pkt(e, i, &m);
		ck_assert(!msg_has(&m, 58));
	}
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	free(sc);
	env_free(e);
}
END_TEST

START_TEST(test_copied_names_and_the_global_track)
{
	struct tenv *e = env_new(4096, 8, 0);
	struct seqck *sc = sc_new();
	struct tb_ev_writer ew;
	struct tb_ev_event ev;
	struct tb_arg a = tb_arg_uint("dyn", 1);
	char name[16];
	struct msg m, te, da;

	/* a writer with no track: events on the trace-global track */
	ck_assert_int_eq(tb_ev_writer_init(&ew, &e->tw.w, NULL, NULL, 0),
			 TB_OK);
	snprintf(name, sizeof(name), "dyn%d", 1);
	memset(&ev, 0, sizeof(ev));
	ev.type = TB_EV_INSTANT;
	ev.flags = TB_EV_COPY_NAMES;
	ev.cat = &cat_a;
	ev.name = name;
	ev.args = &a;
	ev.nargs = 1;
	ev.ts = 77;
	ck_assert_int_eq(tb_ev_emit(&ew, &ev), TB_OK);
	env_flush(e);
	ck_assert_uint_eq(e->n, 1);
	sc->allow_global = 1;
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	pkt_event(e, 0, &m, &te);
	ck_assert_uint_eq(msg_varint(&m, 8), 77);
	ck_assert_uint_eq(msg_varint(&m, 13), 1 | 2);	/* cat interned */
	ck_assert(!msg_has(&te, 11));
	ck_assert_str_field(&te, 23, "dyn1");
	msg_sub(&te, 4, &da);
	ck_assert_str_field(&da, 10, "dyn");
	free(sc);
	env_free(e);
}
END_TEST

/* ------------------------------------------------------------------------
 * (g) Slices under loss, scoped slices.
 */
START_TEST(test_end_of_a_lost_begin_is_not_written)
{
	struct tenv *e = env_new(256, 4, 0);
	struct seqck *sc = sc_new();
	unsigned written = 0;
	int ret = TB_OK, i, depth = 0;

	ck_assert_int_eq(tb_ev_begin(&e->ew, &cat_a, "Outer", NULL, 0),
			 TB_OK);
	for (i = 0; i < 1000 && ret == TB_OK; i++, depth++) {
		ret = tb_ev_begin(&e->ew, &cat_a, "Inner", NULL, 0);
		written += ret == TB_OK;
	}
	ck_assert_int_eq(ret, TB_FULL);
	env_drain(e);
	/* unwind: the lost BEGIN's END is skipped, the others written */
	for (i = 0; i < depth; i++)
		ck_assert_int_eq(tb_ev_end(&e->ew, &cat_a, NULL, 0), TB_OK);
	ck_assert_int_eq(tb_ev_end(&e->ew, &cat_a, NULL, 0), TB_OK);
	env_flush(e);
	ck_assert_uint_eq(e->ew.stats.ends_skipped, 1);
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	ck_assert_uint_eq(sc->tracks[0].depth + sc->tracks[1].depth, 0);
	ck_assert_uint_eq(sc->events, 2 + 2 * written);
	free(sc);
	env_free(e);
}
END_TEST

/* The index of the first packet at or after @from whose event is @type. */
static unsigned find_event(const struct tenv *e, unsigned from, uint64_t type)
{
	struct msg m, te;
	unsigned i;

	for (i = from; i < e->n; i++) {
		pkt(e, i, &m);
		if (!msg_has(&m, 11))
			continue;
		msg_sub(&m, 11, &te);
		if (msg_varint(&te, 9) == type)
			return i;
	}
	return e->n;
}

/*
 * An END that finds the ring full, of a BEGIN that was written, is owed:
 * written before the next event, at the time it was asked for, so the
 * slice ends where it ended and nothing is left open.
 */
START_TEST(test_lost_end_is_written_late_at_its_time)
{
	struct tenv *e = env_new(256, 4, 0);
	struct seqck *sc = sc_new();
	unsigned written = 0, end, after;
	uint64_t t_end;
	struct tb_arg at;
	struct msg m, te;

	ck_assert_int_eq(tb_ev_begin(&e->ew, &cat_a, "Outer", NULL, 0),
			 TB_OK);
	ck_assert_int_eq(fill_until_failure(e, &written), TB_FULL);
	t_end = tb_ev_now(&e->ew);
	at = TB_AT(t_end);
	ck_assert_int_eq(tb_ev_end(&e->ew, &cat_a, &at, 1), TB_FULL);
	ck_assert_uint_eq(e->ew.stats.ends_late, 0);
	env_drain(e);
	ck_assert_int_eq(tb_ev_instant(&e->ew, &cat_a, "After", NULL, 0),
			 TB_OK);
	ck_assert_uint_eq(e->ew.stats.ends_late, 1);
	env_flush(e);
	end = find_event(e, 0, 2);
	after = find_event(e, end, 3);
	ck_assert_uint_lt(end, e->n);
	ck_assert_uint_lt(after, e->n);
	pkt_event(e, end, &m, &te);
	ck_assert_uint_eq(msg_varint(&m, 8), t_end);
	/* the fresh state went first, stamped no later (the checker) */
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	ck_assert_uint_eq(sc->tracks[1].depth, 0);
	free(sc);
	env_free(e);
}
END_TEST

/* ENDs still owed when the writer finishes are written by finish. */
START_TEST(test_finish_writes_the_ends_owed)
{
	struct tenv *e = env_new(256, 4, 0);
	struct seqck *sc = sc_new();
	unsigned written = 0, i;

	for (i = 0; i < 3; i++)
		ck_assert_int_eq(tb_ev_begin(&e->ew, &cat_a, "S", NULL, 0),
				 TB_OK);
	ck_assert_int_eq(fill_until_failure(e, &written), TB_FULL);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(tb_ev_end(&e->ew, &cat_a, NULL, 0), TB_FULL);
	ck_assert_int_eq(tb_ev_writer_finish(&e->ew), TB_FULL);
	env_drain(e);
	ck_assert_int_eq(tb_ev_writer_finish(&e->ew), TB_OK);
	ck_assert_uint_eq(e->ew.stats.ends_late, 3);
	ck_assert_int_eq(tb_ev_writer_finish(&e->ew), TB_OK);
	ck_assert_uint_eq(e->ew.stats.ends_late, 3);
	env_flush(e);
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	ck_assert_uint_eq(sc->tracks[1].depth, 0);
	free(sc);
	env_free(e);
}
END_TEST

/*
 * At most TB_EV_OWED_ENDS are kept: the slices of the rest stay open (a
 * loss the trace flags), the others end; and a forgotten track's owed
 * ENDs go with it.
 */
START_TEST(test_owed_ends_are_bounded_and_go_with_their_track)
{
	struct tenv *e = env_new(4096, 4, 0);
	struct seqck *sc = sc_new();
	static const struct tb_track lane =
		TB_TRACK_CUSTOM_INIT(0x7300, NULL, "lane");
	unsigned written = 0, i, n = TB_EV_OWED_ENDS + 2;
	struct tb_arg on = TB_ON_TRACK(&lane);

	for (i = 0; i < n; i++)
		ck_assert_int_eq(tb_ev_begin(&e->ew, &cat_a, "S", NULL, 0),
				 TB_OK);
	ck_assert_int_eq(fill_until_failure(e, &written), TB_FULL);
	for (i = 0; i < n; i++)
		ck_assert_int_eq(tb_ev_end(&e->ew, &cat_a, NULL, 0), TB_FULL);
	ck_assert_uint_eq(e->ew.nends, TB_EV_OWED_ENDS);
	env_drain(e);
	ck_assert_int_eq(tb_ev_writer_finish(&e->ew), TB_OK);
	ck_assert_uint_eq(e->ew.stats.ends_late, TB_EV_OWED_ENDS);
	env_flush(e);
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	ck_assert_uint_eq(sc->tracks[1].depth, 2);
	free(sc);
	env_free(e);

	e = env_new(4096, 4, 0);
	ck_assert_int_eq(tb_ev_begin(&e->ew, &cat_a, "L", &on, 1), TB_OK);
	ck_assert_int_eq(fill_until_failure(e, &written), TB_FULL);
	ck_assert_int_eq(tb_ev_end(&e->ew, &cat_a, &on, 1), TB_FULL);
	ck_assert_uint_eq(e->ew.nends, 1);
	tb_ev_forget_track(&e->ew, &lane);
	ck_assert_uint_eq(e->ew.nends, 0);
	env_flush(e);
	env_free(e);
}
END_TEST

/* Describing a track ahead writes the ENDs owed first, at their time. */
START_TEST(test_add_track_writes_the_ends_owed_first)
{
	struct tenv *e = env_new(256, 4, 0);
	struct seqck *sc = sc_new();
	static const struct tb_track lane =
		TB_TRACK_CUSTOM_INIT(0x7400, NULL, "lane");
	unsigned written = 0;

	ck_assert_int_eq(tb_ev_begin(&e->ew, &cat_a, "S", NULL, 0), TB_OK);
	ck_assert_int_eq(fill_until_failure(e, &written), TB_FULL);
	ck_assert_int_eq(tb_ev_end(&e->ew, &cat_a, NULL, 0), TB_FULL);
	env_drain(e);
	ck_assert_int_eq(tb_ev_add_track(&e->ew, &lane), TB_OK);
	ck_assert_uint_eq(e->ew.stats.ends_late, 1);
	env_flush(e);
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	ck_assert_uint_eq(sc->tracks[1].depth, 0);
	free(sc);
	env_free(e);
}
END_TEST

static void scoped(struct tb_ev_writer *ew, int n)
{
	TB_TRACE_SCOPE_W(ew, &cat_a, "Scoped", TB_ARG_INT("n", n));
	TB_TRACE_SCOPE_W(ew, &cat_off, "Off");
	if (n > 0)
		scoped(ew, n - 1);
}

START_TEST(test_scoped_slice_ends_with_its_block)
{
	struct tenv *e = env_new(4096, 8, 0);
	struct seqck *sc = sc_new();
	static const struct tb_track lane =
		TB_TRACK_CUSTOM_INIT(0x7100, NULL, "lane");
	struct msg m, te;

	scoped(&e->ew, 2);
	{
		TB_TRACE_SCOPE_W(&e->ew, &cat_a, "OnLane", TB_ON_TRACK(&lane));
		/* flipping the category keeps the END */
		tb_category_set(&cat_a, false);
	}
	tb_category_set(&cat_a, true);
	env_flush(e);
	/* proc, thread, 3 BEGIN, 3 END, lane, BEGIN, END */
	ck_assert_uint_eq(e->n, 2 + 6 + 3);
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	pkt_event(e, 2, &m, &te);
	ck_assert_uint_eq(msg_varint(&te, 9), 1);
	pkt_event(e, 7, &m, &te);
	ck_assert_uint_eq(msg_varint(&te, 9), 2);
	pkt_event(e, 10, &m, &te);
	ck_assert_uint_eq(msg_varint(&te, 9), 2);
	ck_assert_uint_eq(msg_varint(&te, 11), 0x7100);
	free(sc);
	env_free(e);
}
END_TEST

/* ------------------------------------------------------------------------
 * (h) The goal, under random loss and overwrite requests: every event
 * resolves, every iid resolves, every END has its BEGIN.
 */
static uint64_t rng = 88172645463325252ull;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 32) % n;
}

static const char *const stage[] = { "HandleRequest", "ParseRequest",
	"Authenticate", "QueryDatabase", "ExecuteQuery", "RenderResponse" };

START_TEST(test_random_loss_keeps_every_sequence_resolvable)
{
	struct tenv *e = env_new(256, 4, _i ? TB_EV_DEFAULTS : 0);
	struct seqck *sc = sc_new();
	static const struct tb_track lane =
		TB_TRACK_CUSTOM_INIT(0x7200, NULL, "lane");
	struct tb_track ctr;
	unsigned i, depth = 0, lane_depth = 0;

	tb_track_counter(&ctr, 0x7201, NULL, "queue", TB_UNIT_COUNT);
	for (i = 0; i < 20000; i++) {
		uint32_t r = rnd(100);

		if (r < 30 && depth < 20) {
			TB_TRACE_BEGIN_W(&e->ew, &cat_a, "" "Stage",
					 TB_ARG_UINT("seq", i));
			tb_ev_begin(&e->ew, &cat_b, stage[rnd(6)], NULL, 0);
			depth += 2;
		} else if (r < 60 && depth) {
			TB_TRACE_END_W(&e->ew, &cat_a,
				       TB_ARG_UINT("end_seq", i));
			depth--;
		} else if (r < 68) {
			TB_TRACE_INSTANT_W(&e->ew, &cat_b, "Snapshot",
					   TB_ARG_STR("state", "ok"),
					   TB_ARG_DOUBLE("load", 0.5));
		} else if (r < 76) {
			TB_TRACE_COUNTER_W(&e->ew, &cat_a, &ctr, rnd(1000));
		} else if (r < 82) {
			if (lane_depth && rnd(2)) {
				TB_TRACE_END_W(&e->ew, &cat_a,
					       TB_ON_TRACK(&lane));
				lane_depth--;
			} else {
				TB_TRACE_BEGIN_W(&e->ew, &cat_a, "Async",
						 TB_ON_TRACK(&lane),
						 TB_FLOW(i));
				lane_depth++;
			}
		} else if (r < 84) {
			tb_ring_bump_generation(&e->t.r);
		}
		if (!rnd(12))
			env_drain(e);
		if (e->n > CAP_MAX - 512) {
			sc_run(sc, e);
			for (; e->n; e->n--)
				free(e->p[e->n - 1].data);
			e->seen = 0;
		}
	}
	while (depth--)
		TB_TRACE_END_W(&e->ew, &cat_a);
	env_flush(e);
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	if (getenv("TB_EV_STATS"))
		printf("lost %u gen %u skipped %u losses %u events %u\n",
		       e->ew.stats.lost, e->ew.stats.generations,
		       e->ew.stats.ends_skipped, sc->losses, sc->events);
	ck_assert_uint_gt(e->ew.stats.lost, 200);
	ck_assert_uint_gt(e->ew.stats.generations, 100);
	ck_assert_uint_gt(e->ew.stats.ends_skipped, 20);
	ck_assert_uint_gt(sc->losses, 50);
	ck_assert_uint_gt(sc->events, 10000);
	free(sc);
	env_free(e);
}
END_TEST


/* ------------------------------------------------------------------------
 * (h) Names by content, flows under loss, clocks, a ring full mid-event.
 */

/* The string iid @iid of kind @kind stands for, as the trace defines it. */
static const char *sc_name(const struct seqck *sc, unsigned kind,
			   uint64_t iid)
{
	const struct sc_str *g = sc_find(sc->gstr[kind], sc->ngstr[kind], iid);

	return g ? g->s : "(unresolved)";
}

/* Event @te's name, resolved: inline (23) or through its iid (10). */
static void event_name(const struct seqck *sc, const struct msg *te,
		       char *out, size_t n)
{
	const struct pb_field *f = msg_field(te, 23, 0);

	if (f)
		snprintf(out, n, "%.*s", (int)f->size, (const char *)f->data);
	else if (msg_has(te, 10))
		snprintf(out, n, "%s", sc_name(sc, 2, msg_varint(te, 10)));
	else
		snprintf(out, n, "(none)");
}

/* Annotation @da's name, resolved. */
static void ann_name(const struct seqck *sc, const struct msg *da,
		     char *out, size_t n)
{
	const struct pb_field *f = msg_field(da, 10, 0);

	if (f)
		snprintf(out, n, "%.*s", (int)f->size, (const char *)f->data);
	else
		snprintf(out, n, "%s", sc_name(sc, 3, msg_varint(da, 1)));
}

/*
 * A name in a buffer the caller reuses is what the buffer said at the
 * call: names passed to the functions are interned by their bytes, not
 * their address (event names and annotation names); equal bytes share
 * one iid, whichever buffer holds them.
 */
START_TEST(test_names_from_a_reused_buffer_are_interned_by_content)
{
	struct tenv *e = env_new(4096, 8, 0);
	struct seqck *sc = sc_new();
	char buf[32], key[16], other[32], got[64], want[64];
	struct msg m, te, da;
	struct tb_arg a;
	uint64_t iid1;
	int i;

	for (i = 0; i < 3; i++) {
		snprintf(buf, sizeof(buf), "fn-%d", i);
		ck_assert_int_eq(tb_ev_instant(&e->ew, &cat_a, buf, NULL, 0),
				 TB_OK);
	}
	for (i = 0; i < 3; i++) {
		snprintf(key, sizeof(key), "key%d", i);
		a = tb_arg_int(key, i);
		ck_assert_int_eq(tb_ev_instant(&e->ew, &cat_a, "Args", &a, 1),
				 TB_OK);
	}
	snprintf(other, sizeof(other), "fn-%d", 1);	/* another buffer */
	ck_assert_int_eq(tb_ev_instant(&e->ew, &cat_a, other, NULL, 0),
			 TB_OK);
	env_flush(e);
	ck_assert_uint_eq(e->n, 2 + 7);
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	for (i = 0; i < 3; i++) {
		pkt_event(e, 2 + (unsigned)i, &m, &te);
		event_name(sc, &te, got, sizeof(got));
		snprintf(want, sizeof(want), "fn-%d", i);
		ck_assert_str_eq(got, want);
	}
	for (i = 0; i < 3; i++) {
		pkt_event(e, 5 + (unsigned)i, &m, &te);
		msg_sub(&te, 4, &da);
		ann_name(sc, &da, got, sizeof(got));
		snprintf(want, sizeof(want), "key%d", i);
		ck_assert_str_eq(got, want);
		ck_assert_uint_eq(msg_varint(&da, 4), (uint64_t)i);
	}
	/* "fn-1" again, from another buffer: the same iid, nothing new */
	pkt_event(e, 3, &m, &te);
	iid1 = msg_varint(&te, 10);
	pkt_event(e, 8, &m, &te);
	ck_assert(!msg_has(&m, 12));
	ck_assert_uint_eq(msg_varint(&te, 10), iid1);
	ck_assert_uint_eq(e->ew.stats.inline_names, 0);
	free(sc);
	env_free(e);
}
END_TEST

/*
 * names[] holds the copies: a name longer than a quarter of it goes
 * inline (counted), and when it fills, names go inline until the next
 * fresh state empties the table; no name ever decodes to another.
 */
START_TEST(test_copied_names_are_bounded_and_never_lie)
{
	struct tenv *e = env_new(4096, 64, 0);
	struct seqck *sc = sc_new();
	static char lng[TB_EV_NAME_BYTES / 4 + 2];
	char buf[64], got[TB_EV_NAME_BYTES], want[64];
	struct msg m, te;
	unsigned i, n, first;

	memset(lng, 'L', sizeof(lng) - 1);
	ck_assert_int_eq(tb_ev_instant(&e->ew, &cat_a, lng, NULL, 0), TB_OK);
	ck_assert_uint_eq(e->ew.stats.inline_names, 1);
	ck_assert_uint_eq(e->ew.overflow, 0);
	/* 39-byte names: names[] fills before the table does */
	n = TB_EV_NAME_BYTES / 39 + 2;
	first = e->n;
	for (i = 0; i < n; i++) {
		snprintf(buf, sizeof(buf), "%039u", i);
		ck_assert_int_eq(tb_ev_instant(&e->ew, &cat_a, buf, NULL, 0),
				 TB_OK);
	}
	ck_assert_uint_eq(e->ew.overflow, 1);
	ck_assert_uint_eq(e->ew.stats.inline_names,
			  1 + n - TB_EV_NAME_BYTES / 39);
	tb_ev_reset(&e->ew);
	snprintf(buf, sizeof(buf), "%039u", n - 1);
	ck_assert_int_eq(tb_ev_instant(&e->ew, &cat_a, buf, NULL, 0), TB_OK);
	ck_assert_uint_eq(e->ew.nbytes, 39);	/* emptied, then this one */
	env_flush(e);
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	pkt_event(e, 2, &m, &te);
	event_name(sc, &te, got, sizeof(got));
	ck_assert_str_eq(got, lng);
	(void)first;
	for (i = 0; i < n; i++) {
		pkt_event(e, 3 + i, &m, &te);
		event_name(sc, &te, got, sizeof(got));
		snprintf(want, sizeof(want), "%039u", i);
		ck_assert_str_eq(got, want);
	}
	pkt_event(e, e->n - 1, &m, &te);
	ck_assert(msg_has(&te, 10));
	event_name(sc, &te, got, sizeof(got));
	snprintf(want, sizeof(want), "%039u", n - 1);
	ck_assert_str_eq(got, want);
	free(sc);
	env_free(e);
}
END_TEST

/* The flow ids of event @te: field @num (47 flow_ids, 48 terminating). */
static int has_flow(const struct msg *te, uint32_t num, uint64_t id)
{
	int i;

	for (i = 0; i < msg_count(te, num); i++)
		if (msg_fixed64_at(te, num, i) == id)
			return 1;
	return 0;
}

/* The last event packet named @name (an instant's literal name). */
static unsigned find_named(const struct tenv *e, const struct seqck *sc,
			   const char *name)
{
	unsigned i, found = ~0u;
	char got[64];

	for (i = 0; i < e->n; i++) {
		struct msg m, te;

		pkt(e, i, &m);
		if (!msg_has(&m, 11))
			continue;
		msg_sub(&m, 11, &te);
		event_name(sc, &te, got, sizeof(got));
		if (!strcmp(got, name))
			found = i;
	}
	ck_assert_msg(found != ~0u, "no event %s", name);
	return found;
}

/*
 * A flow whose start the ring refused never draws (the importer ignores
 * an end with no start): the end is left out of its event and counted.
 * A flow whose start was written keeps its end even when a step of it
 * was lost, and an end of a flow begun elsewhere (another writer) goes
 * out as it is.
 */
START_TEST(test_flow_end_of_a_lost_start_is_not_written)
{
	struct tenv *e = env_new(256, 4, 0);
	struct seqck *sc = sc_new();
	struct msg m, te;
	unsigned written = 0;

	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "S8", TB_FLOW(8));
	ck_assert_int_ne(fill_until_failure(e, &written), TB_OK);
	ck_assert_int_ne(tb_ev_instant(&e->ew, &cat_a, "S7", NULL, 0), TB_OK);
	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "S7", TB_FLOW(7));
	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "Step8", TB_FLOW(8));
	env_drain(e);
	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "E7", TB_FLOW_END(7));
	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "E8", TB_FLOW_END(8));
	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "E9", TB_FLOW_END(9));
	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "E7b", TB_FLOW_END(7));
	env_flush(e);
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	ck_assert_uint_eq(e->ew.stats.flow_ends_skipped, 1);
	pkt_event(e, find_named(e, sc, "S8"), &m, &te);
	ck_assert(has_flow(&te, 47, 8));
	pkt_event(e, find_named(e, sc, "E7"), &m, &te);
	ck_assert(!msg_has(&te, 48));		/* its start was lost */
	pkt_event(e, find_named(e, sc, "E8"), &m, &te);
	ck_assert(has_flow(&te, 48, 8));	/* written, a step lost */
	pkt_event(e, find_named(e, sc, "E9"), &m, &te);
	ck_assert(has_flow(&te, 48, 9));	/* begun elsewhere */
	pkt_event(e, find_named(e, sc, "E7b"), &m, &te);
	ck_assert(has_flow(&te, 48, 7));	/* the table forgot 7 */
	ck_assert_uint_eq(e->ew.nflows, 0);
	free(sc);
	env_free(e);
}
END_TEST

/*
 * The table of open flows is bounded (TB_EV_FLOWS): when it is full the
 * oldest is forgotten and counted; a forgotten flow's end always goes
 * out, and a written flow once forgotten is never taken for a lost one.
 */
START_TEST(test_flow_table_full_counts_and_never_drops_a_written_end)
{
	struct tenv *e = env_new(256, 4, 0);
	struct seqck *sc = sc_new();
	struct tb_arg f;
	struct msg m, te;
	unsigned i, written = 0;

	/* flows 100.. written: the first is forgotten when the table fills */
	for (i = 0; i <= TB_EV_FLOWS; i++) {
		f = tb_arg_flow(100 + i);
		ck_assert_int_eq(tb_ev_instant(&e->ew, &cat_a, "W", &f, 1),
				 TB_OK);
		env_drain(e);
	}
	ck_assert_uint_eq(e->ew.nflows, TB_EV_FLOWS);
	ck_assert_uint_eq(e->ew.stats.flows_untracked, 0);
	/* a step of 100 lost: it may be a written flow, so not recorded */
	ck_assert_int_ne(fill_until_failure(e, &written), TB_OK);
	f = tb_arg_flow(100);
	ck_assert_int_ne(tb_ev_instant(&e->ew, &cat_a, "L", &f, 1), TB_OK);
	ck_assert_uint_eq(e->ew.stats.flows_untracked, 1);
	/* lost starts 200..: each forgets the oldest entry */
	for (i = 0; i < 2; i++) {
		f = tb_arg_flow(200 + i);
		ck_assert_int_ne(tb_ev_instant(&e->ew, &cat_a, "L", &f, 1),
				 TB_OK);
	}
	env_drain(e);
	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "E100", TB_FLOW_END(100));
	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "E200", TB_FLOW_END(200));
	env_flush(e);
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	pkt_event(e, find_named(e, sc, "E100"), &m, &te);
	ck_assert(has_flow(&te, 48, 100));
	pkt_event(e, find_named(e, sc, "E200"), &m, &te);
	ck_assert(!msg_has(&te, 48));
	ck_assert_uint_eq(e->ew.stats.flow_ends_skipped, 1);
	free(sc);
	env_free(e);
}
END_TEST

/*
 * The ring fills in the middle of an event's bytes, then an empty string
 * meets the failed output: no arithmetic on a null pointer (make asan
 * runs this under -fsanitize=undefined -fno-sanitize-recover).
 */
START_TEST(test_ring_full_mid_event_then_an_empty_string)
{
	struct tenv *e = env_new(256, 2, 0);
	struct seqck *sc = sc_new();
	static char big[2000];
	int ret;

	memset(big, 'b', sizeof(big));
	ret = tb_ev_instant(&e->ew, &cat_a, "Big", NULL, 0);
	ck_assert_int_eq(ret, TB_OK);
	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "Big",
			   TB_ARG_STRN("body", big, sizeof(big)),
			   TB_ARG_STR("s", ""));
	ck_assert_uint_ge(e->ew.stats.lost, 1);
	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "Empty", TB_ARG_STR("s", ""));
	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "Empty", TB_ARG_STRN("s", NULL, 0));
	env_drain(e);
	TB_TRACE_INSTANT_W(&e->ew, &cat_a, "After", TB_ARG_STR("s", ""));
	env_flush(e);
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	free(sc);
	env_free(e);
}
END_TEST

/* ------------------------------------------------------------------------
 * Events kept encoded (the fast path of the macros): the bytes, stats and
 * state of the general path, exactly.
 */
static uint64_t kept_ns[2];

static uint64_t kept_now(void *ctx)
{
	return *(uint64_t *)ctx += 977;		/* odd steps: any varint */
}

static uint64_t kept_ref(void *ctx)
{
	return *(uint64_t *)ctx + 5000000;
}

/*
 * One macro event, forced down the general path when @general; after it,
 * the word the fast path checks says what the state says: the epoch when
 * no fresh state is due and no END is owed, else 0 (a stale epoch there
 * would write kept bytes into a state that lost them; a stale 0 sends
 * every event the general way).
 */
#define KEPT(e, general, ev)						\
	do {								\
		if (general)						\
			memset((e)->ew.sites, 0, sizeof((e)->ew.sites)); \
		ev;							\
		ck_assert_uint_eq((e)->ew.ready, (e)->ew.fresh ||	\
				  (e)->ew.nends ? 0 : (e)->ew.epoch);	\
	} while (0)

/*
 * The script: every kind of event the fast path takes, with values of
 * every size, a generation bump, a ring left full (lost BEGINs, ENDs
 * skipped and owed), a track forgotten; the same on both writers.
 */
static void kept_script(struct tenv *e, struct tb_track *ctr, bool g)
{
	static int obj;
	struct tb_ev_writer *w = &e->ew;
	uint32_t lost;
	int64_t v;
	unsigned r, i;

	for (r = 0; r < 12; r++) {
		v = r % 3 ? (int64_t)r * 1000003 : -(int64_t)r;
		KEPT(e, g, TB_TRACE_BEGIN_W(w, &cat_a, "Work",
					    TB_ARG_UINT("seq",
							(uint64_t)r << (r * 5)),
					    TB_ARG_STR("s", &"abc"[r % 4])));
		KEPT(e, g, TB_TRACE_INSTANT_W(w, &cat_a, "Mark"));
		KEPT(e, g, TB_TRACE_INSTANT_W(w, &cat_b, "Mark"));
		KEPT(e, g, TB_TRACE_INSTANT_W(w, &cat_a, "Every",
					      TB_ARG_INT("i", v),
					      TB_ARG_DOUBLE("d", r * 0.25),
					      TB_ARG_BOOL("b", r & 1),
					      TB_ARG_PTR("p", &obj)));
		KEPT(e, g, TB_TRACE_COUNTER_W(w, &cat_a, ctr, v));
		KEPT(e, g, TB_TRACE_COUNTER_DOUBLE_W(w, &cat_a, ctr, r * 1.5));
		KEPT(e, g, TB_TRACE_BEGIN_W(w, &cat_b, "Inner"));
		KEPT(e, g, TB_TRACE_END_W(w, &cat_b));
		KEPT(e, g, TB_TRACE_END_W(w, &cat_a, TB_ARG_UINT("end", r)));
		if (r == 4)
			tb_ring_bump_generation(&e->t.r);
		if (r == 7)
			tb_ev_reset(w);
		if (r < 8) {
			env_drain(e);
			continue;
		}
		/*
		 * No drain: a slice begun, the ring filled until a write
		 * fails, its END owed, a BEGIN lost; after a drain that
		 * END skipped, the owed one written late.
		 */
		KEPT(e, g, TB_TRACE_BEGIN_W(w, &cat_a, "Held"));
		lost = w->stats.lost;
		for (i = 0; i < 1000 && w->stats.lost == lost; i++) {
			KEPT(e, g, TB_TRACE_BEGIN_W(w, &cat_b, "Fill",
						    TB_ARG_UINT("i", i)));
			KEPT(e, g, TB_TRACE_END_W(w, &cat_b));
		}
		KEPT(e, g, TB_TRACE_END_W(w, &cat_a));
		KEPT(e, g, TB_TRACE_BEGIN_W(w, &cat_a, "Lost"));
		env_drain(e);
		KEPT(e, g, TB_TRACE_END_W(w, &cat_a));
		KEPT(e, g, TB_TRACE_INSTANT_W(w, &cat_a, "Mark"));
	}
	tb_ev_forget_track(w, ctr);
	KEPT(e, g, TB_TRACE_COUNTER_W(w, &cat_a, ctr, 1));
	tb_ev_writer_finish(w);
	env_flush(e);
}

/*
 * The same script through two writers with the same clock, the second's
 * kept events dropped before each one (so it writes every event the
 * general way): the same packets, byte for byte, and the same stats.
 * _i: flags 0, TB_EV_DEFAULTS, TB_EV_NO_INTERN; with BOOTTIME or a
 * sequence-scoped clock (id 70, snapshotted).
 */
START_TEST(test_kept_events_are_the_general_paths_bytes)
{
	static const unsigned flags[] = { 0, TB_EV_DEFAULTS, TB_EV_NO_INTERN };
	struct tb_ev_clock clk[2] = {
		{ kept_now, &kept_ns[0], TB_CLOCK_BOOTTIME, 0, NULL },
		{ kept_now, &kept_ns[1], TB_CLOCK_BOOTTIME, 0, NULL },
	};
	struct tb_track ctr[2];
	struct tenv *e[2];
	unsigned k, i, kept = 0;

	for (k = 0; k < 2; k++) {
		if (_i >= 3) {
			clk[k].id = 70;
			clk[k].ref_id = TB_CLOCK_BOOTTIME;
			clk[k].ref_now = kept_ref;
		}
		kept_ns[k] = 1000000000000ull;
		e[k] = env_new_clock(512, 8, &clk[k], flags[_i % 3]);
		tb_track_counter(&ctr[k], 0x3000u, &e[k]->proc, "ctr",
				 TB_UNIT_COUNT);
		kept_script(e[k], &ctr[k], k == 1);
	}
	for (i = 0; i < TB_EV_SITES; i++)
		kept += e[0]->ew.sites[i].epoch != 0;
	ck_assert_uint_gt(kept, _i % 3 == 2 ? 0 : 4);
	ck_assert_uint_eq(e[0]->n, e[1]->n);
	for (i = 0; i < e[0]->n; i++) {
		ck_assert_uint_eq(e[0]->p[i].len, e[1]->p[i].len);
		ck_assert_msg(!memcmp(e[0]->p[i].data, e[1]->p[i].data,
				      e[0]->p[i].len),
			      "packet %u differs", i);
		ck_assert_uint_eq(e[0]->p[i].flags, e[1]->p[i].flags);
	}
	ck_assert(!memcmp(&e[0]->ew.stats, &e[1]->ew.stats,
			  sizeof(e[0]->ew.stats)));
	ck_assert_uint_gt(e[0]->ew.stats.lost, 0);
	ck_assert_uint_gt(e[0]->ew.stats.ends_skipped, 0);
	ck_assert_uint_gt(e[0]->ew.stats.ends_late, 0);
	env_free(e[0]);
	env_free(e[1]);
}
END_TEST

/* ------------------------------------------------------------------------
 * Timestamps as deltas (TB_EV_DELTA_TIME): every event where absolute
 * timestamps put it, to the nanosecond.
 */
static uint64_t dt_ns;		/* the time of the next event */

static uint64_t dt_now(void *ctx)
{
	(void)ctx;
	return dt_ns;
}

static uint64_t dt_ref(void *ctx)
{
	(void)ctx;
	return dt_ns + 777000333;	/* BOOTTIME, ahead of the clock */
}

struct dt_ev {
	uint64_t time;		/* where the importer puts it, BOOTTIME ns */
	uint64_t tag;		/* its "t" annotation, ~0: none */
	uint64_t type;
};

/*
 * Every TrackEvent's time, as Perfetto's importer computes it (its
 * ClockTracker): a timestamp on an incremental clock is added to that
 * clock's last time, which each snapshot sets; a timestamp on another
 * clock than BOOTTIME goes through the snapshot to BOOTTIME; the clock is
 * the packet's timestamp_clock_id, else the defaults'.  Independent of
 * tbevent.h: the field numbers of clock_snapshot.proto and trace_packet.
 */
static unsigned dt_times(const struct tenv *e, struct dt_ev *out,
			 unsigned max)
{
	uint64_t def_clock = 0, inc_id = 0, last = 0, snap_id = 0;
	uint64_t snap_mine = 0, snap_boot = 0;
	unsigned i, k, n = 0;

	for (i = 0; i < e->n; i++) {
		struct msg m, cs, ck, te, da;
		uint64_t id, v;

		pkt(e, i, &m);
		if (msg_has(&m, 13) && (msg_varint(&m, 13) & 1))
			def_clock = 0;		/* a clear: no defaults */
		if (msg_has(&m, 59)) {
			msg_sub(&m, 59, &cs);
			def_clock = msg_has(&cs, 58) ? msg_varint(&cs, 58) : 0;
		}
		if (msg_has(&m, 6)) {
			msg_sub(&m, 6, &cs);
			for (k = 0; k < (unsigned)msg_count(&cs, 1); k++) {
				msg_sub_at(&cs, 1, (int)k, &ck);
				id = msg_varint(&ck, 1);
				v = msg_varint(&ck, 2);
				if (id == 6) {
					snap_boot = v;
					continue;
				}
				snap_id = id;
				snap_mine = v;
				if (msg_has(&ck, 3) && msg_varint(&ck, 3)) {
					inc_id = id;
					last = v;
				}
			}
		}
		if (!msg_has(&m, 8))
			continue;
		id = msg_has(&m, 58) ? msg_varint(&m, 58) : def_clock;
		v = msg_varint(&m, 8);
		if (id && id == inc_id)
			v = last += v;		/* int64 in the importer */
		if (id && id != 6) {
			ck_assert_uint_eq(id, snap_id);
			v = v - snap_mine + snap_boot;
		}
		if (!msg_has(&m, 11))
			continue;
		ck_assert_uint_lt(n, max);
		msg_sub(&m, 11, &te);
		out[n].time = v;
		out[n].type = msg_varint(&te, 9);
		out[n].tag = ~0ull;
		for (k = 0; k < (unsigned)msg_count(&te, 4); k++) {
			msg_sub_at(&te, 4, (int)k, &da);
			if (msg_has(&da, 3) && (!msg_has(&da, 10) ||
						msg_str_is(&da, 10, "t")))
				out[n].tag = msg_varint(&da, 3);
		}
		n++;
	}
	return n;
}

/* An event at @t, carrying @t: the macros' fast path and the general. */
static void dt_event(struct tb_ev_writer *w, unsigned k, uint64_t t)
{
	dt_ns = t;
	switch (k % 4) {
	case 0:
		TB_TRACE_BEGIN_W(w, &cat_a, "Slice", TB_ARG_UINT("t", t));
		break;
	case 1:
		TB_TRACE_INSTANT_W(w, &cat_a, "Mark", TB_ARG_UINT("t", t));
		break;
	case 2: {
		struct tb_arg a = tb_arg_uint("t", t);

		tb_ev_instant(w, &cat_b, "Dyn", &a, 1);
		break;
	}
	default:
		TB_TRACE_END_W(w, &cat_a, TB_ARG_UINT("t", t));
		break;
	}
}

/*
 * One run, written twice: absolute timestamps and deltas, the clock
 * reading the same time at every event (steps of every varint size,
 * none, 2^40), fresh states in between (a generation bump, a reset).
 * Decoded as the importer does, every event lands at the same BOOTTIME
 * nanosecond in both, which is its own "t".  _i: BOOTTIME, or a
 * sequence-scoped clock (70, snapshotted); flags 0 or TB_EV_DEFAULTS.
 */
START_TEST(test_delta_timestamps_place_events_as_absolute_ones)
{
	static const uint64_t steps[] = { 1, 0, 127, 128, 16383, 16384,
					  1ull << 21, 1ull << 40, 977, 3 };
	struct tb_ev_clock clk = { dt_now, NULL, TB_CLOCK_BOOTTIME, 0, NULL };
	struct dt_ev *ev[2];
	struct tenv *e[2];
	unsigned k, i, n[2];
	uint64_t t;

	if (_i & 1) {
		clk.id = 70;
		clk.ref_id = TB_CLOCK_BOOTTIME;
		clk.ref_now = dt_ref;
	}
	for (k = 0; k < 2; k++) {
		e[k] = env_new_clock(4096, 64, &clk, (_i & 2 ? TB_EV_DEFAULTS :
						      0) |
				     (k ? TB_EV_DELTA_TIME : 0));
		ev[k] = (struct dt_ev *)calloc(400, sizeof(*ev[k]));
		ck_assert_ptr_nonnull(ev[k]);
		t = 1000000000000ull;
		for (i = 0; i < 320; i++) {
			t += steps[i % 10] * (1 + i / 40);
			dt_event(&e[k]->ew, i, t);
			if (i == 100)
				tb_ring_bump_generation(&e[k]->t.r);
			if (i == 201)
				tb_ev_reset(&e[k]->ew);
		}
		env_flush(e[k]);
		n[k] = dt_times(e[k], ev[k], 400);
	}
	ck_assert_uint_eq(n[0], 320);
	ck_assert_uint_eq(n[1], 320);
	for (i = 0; i < 320; i++) {
		uint64_t want = ev[0][i].tag + (_i & 1 ? 777000333 : 0);

		ck_assert_uint_eq(ev[0][i].type, ev[1][i].type);
		ck_assert_uint_eq(ev[0][i].time, want);
		ck_assert_uint_eq(ev[1][i].time, want);
	}
	ck_assert_uint_gt(e[1]->ew.stats.snapshots, 2);
	for (k = 0; k < 2; k++) {
		free(ev[k]);
		env_free(e[k]);
	}
}
END_TEST

/*
 * Deltas under loss: a full ring loses events (a fresh state and
 * snapshot follow), ENDs are owed and written late, at their time, after
 * the snapshot of a later state (a delta back).  Every event the trace
 * has lands at its own "t", and the importer's sequence rules hold.
 */
START_TEST(test_delta_timestamps_under_loss)
{
	struct tb_ev_clock clk = { dt_now, NULL, TB_CLOCK_BOOTTIME, 0, NULL };
	struct tenv *e = env_new_clock(512, 4, &clk, TB_EV_DELTA_TIME);
	struct seqck *sc = sc_new();
	struct dt_ev *ev = (struct dt_ev *)calloc(4000, sizeof(*ev));
	uint64_t t = 5000000000ull;
	unsigned i, n, tagged = 0;

	ck_assert_ptr_nonnull(ev);
	for (i = 0; i < 3000; i++) {
		t += 1000 + (i % 7) * 100000;
		dt_event(&e->ew, i, t);
		if (i % 97 == 96)
			env_drain(e);	/* else the ring stays full */
	}
	tb_ev_writer_finish(&e->ew);
	env_flush(e);
	sc_run(sc, e);
	ck_assert_seq_ok(sc);
	n = dt_times(e, ev, 4000);
	for (i = 0; i < n; i++) {
		if (ev[i].tag == ~0ull)
			continue;
		ck_assert_uint_eq(ev[i].time, ev[i].tag);
		tagged++;
	}
	ck_assert_uint_gt(tagged, 100);
	ck_assert_uint_gt(e->ew.stats.lost, 10);
	ck_assert_uint_gt(e->ew.stats.ends_late, 0);
	free(ev);
	free(sc);
	env_free(e);
}
END_TEST

static Suite *event_suite(void)
{
	Suite *s = suite_create("tbevent");
	TCase *enc = tcase_create("encoding");
	TCase *st = tcase_create("state");
	TCase *lim = tcase_create("limits");

	tcase_add_test(enc,
		       test_first_event_describes_its_tracks_then_the_slice);
	tcase_add_test(enc, test_interned_once_then_only_iids);
	tcase_add_test(enc, test_no_intern_writes_every_name_inline);
	tcase_add_test(enc, test_counters_int_and_double);
	tcase_add_test(enc, test_flows_between_slices);
	tcase_add_test(enc, test_every_annotation_type);
	tcase_add_test(enc, test_custom_tracks_nest_under_their_parents);
	tcase_add_test(enc, test_user_clock_and_its_snapshot);
	tcase_add_test(enc, test_boottime_user_clock_needs_no_snapshot);
	tcase_add_test(enc, test_builtin_clock_with_a_reference_is_snapshotted);
	tcase_add_test(enc, test_copied_names_and_the_global_track);
	tcase_add_test(enc, test_defaults_name_the_writers_track_and_clock);
	tcase_add_loop_test(enc, test_kept_events_are_the_general_paths_bytes,
			    0, 6);
	tcase_add_loop_test(enc,
			    test_delta_timestamps_place_events_as_absolute_ones,
			    0, 4);
	tcase_add_test(st, test_delta_timestamps_under_loss);
	tcase_add_test(st, test_failed_write_starts_a_fresh_state);
	tcase_add_test(st, test_failed_descriptor_drops_the_event_and_retries);
	tcase_add_test(st, test_finish_writes_the_state_a_loss_left_owed);
	tcase_add_test(st, test_lost_end_is_written_late_at_its_time);
	tcase_add_test(st, test_finish_writes_the_ends_owed);
	tcase_add_test(st, test_owed_ends_are_bounded_and_go_with_their_track);
	tcase_add_test(st, test_add_track_writes_the_ends_owed_first);
	tcase_add_test(st, test_generation_bump_starts_a_fresh_state);
	tcase_add_test(st, test_reset_on_request);
	tcase_add_test(st, test_disabled_category_writes_nothing);
	tcase_add_test(st, test_no_current_writer_writes_nothing);
	tcase_add_test(st, test_end_of_a_lost_begin_is_not_written);
	tcase_add_test(st, test_scoped_slice_ends_with_its_block);
	tcase_add_test(st,
		test_iids_survive_a_fresh_state_while_the_table_has_room);
	tcase_add_loop_test(st,
			    test_random_loss_keeps_every_sequence_resolvable,
			    0, 2);
	tcase_add_test(lim,
		       test_full_interning_table_falls_back_to_inline_names);
	tcase_add_test(lim,
		       test_a_full_track_table_describes_before_every_event);
	tcase_add_test(lim, test_forgotten_track_is_not_described_again);
	tcase_add_test(lim, test_long_annotation_spans_chunks);
	tcase_add_test(lim, test_too_many_items_and_bad_events_are_refused);
	tcase_add_test(lim, test_init_refuses_bad_clocks_and_flags);
	tcase_add_test(enc, test_fast_clock_gives_boottime);
	tcase_add_test(enc, test_fast_clock_leaves_a_callers_clock_alone);
#if TB__EV_HAVE_COUNTER
	tcase_add_test(enc, test_fast_clock_never_goes_back_at_an_anchor);
	tcase_add_test(enc, test_fast_clock_turns_off_when_the_counter_jumps);
#endif
	tcase_add_test(enc,
		test_names_from_a_reused_buffer_are_interned_by_content);
	tcase_add_test(lim, test_copied_names_are_bounded_and_never_lie);
	tcase_add_test(st, test_flow_end_of_a_lost_start_is_not_written);
	tcase_add_test(lim,
		test_flow_table_full_counts_and_never_drops_a_written_end);
	tcase_add_test(lim, test_ring_full_mid_event_then_an_empty_string);
	suite_add_tcase(s, enc);
	suite_add_tcase(s, st);
	suite_add_tcase(s, lim);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(event_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
