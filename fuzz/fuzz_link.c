/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target for tblink.h and `tbtrace stream` (tools/tbt_stream.c,
 * through tools/tbtrace.c included with TBTRACE_NO_MAIN).
 *
 * The first input byte chooses:
 *   bit 0 = 0  the rest is a byte stream from a hostile link, fed to a
 *              receiver in pieces of (bits 1-7) + 1 bytes, and to the
 *              stream converter whole.  Checked: the receiver's counts
 *              add up (no more good frames than delimiters, skipped bytes
 *              at most those fed), the same frames come out whole or in
 *              pieces, every good frame re-encodes (tb_link_tx_*) to a
 *              frame that parses to the same fields, and the converter
 *              writes a trace whose every packet carries its trusted
 *              fields, whatever it was fed.
 *   bit 0 = 1  the rest drives a target: two writers write packets of
 *              the sizes it names into a ring of 4 x 256 B (refusals
 *              included), its reader drains into a tblink stream, and
 *              then the stream is damaged as it says (bytes deleted,
 *              flipped, inserted, the start or the end cut).  Some
 *              packets clear an incremental state, intern names and
 *              name them, so the stream restates states after a loss
 *              and drops what names a lost one.  Checked: every packet
 *              of the trace is one a writer wrote, whole, with nothing
 *              glued to it, in the order written, at most once, or a
 *              restate of the stream's; a packet after missing ones
 *              carries previous_packet_dropped, or a restate before it
 *              does.
 *   Nothing leaks, nothing reads out of bounds (ASan, LSan, UBSan).
 *
 * FUZZ_MKSEEDS=DIR writes the seed corpus (fuzz/corpus_link) and exits.
 */
#define TB_PROTOCOL_STEPS 1
#define TBTRACE_NO_MAIN 1
#include "tools/tbtrace.c"
#include "fuzz/fuzz_input.h"

#define NW	2
#define NPKT	48
#define PRODUCER 1

static FILE *devnull;

/* ---- bytes --------------------------------------------------------- */

struct bytes {
	uint8_t *p;
	size_t n, cap;
};

static void bytes_room(struct bytes *b, size_t n)
{
	if (b->cap - b->n < n) {
		b->cap = (b->cap + n) * 2;
		b->p = (uint8_t *)realloc(b->p, b->cap);
		CHECK(b->p);
	}
}

static void bytes_put(void *ctx, const uint8_t *p, size_t n)
{
	struct bytes *b = (struct bytes *)ctx;

	bytes_room(b, n);
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

/* ---- the converter: a trace with trusted fields, always ---------------- */

static int stream_to(const uint8_t *p, size_t n, struct tbt_mem *m)
{
	struct tbt_stream_opts o;
	struct tbt_stream_result res;
	struct tb_trace_out out;
	int st;

	memset(&o, 0, sizeof(o));
	o.producer = PRODUCER;
	o.buf_size = 64 << 10;		/* a tiny ring's worth, and fast */
	memset(m, 0, sizeof(*m));
	memset(&out, 0, sizeof(out));
	out.write = tbt_mem_write;
	out.ctx = m;
	st = tbt_stream_image(p, n, &o, &out, devnull, &res);
	CHECK(st >= 0 && st <= 2);
	CHECK(st != 0 || res.lost == 0);
	return st;
}

static void trace_is_sane(const struct tbt_mem *m)
{
	struct tb_pb_reader r;
	struct tb_trace_packet tp;
	int ret;

	tb_pb_reader_init(&r, m->p, m->len);
	while ((ret = tb_trace_next(&r, &tp)) > 0)
		CHECK((tp.trusted_seq_id >> 16 == PRODUCER ||
		       tp.trusted_seq_id == TB_TRACE_SERVICE_SEQ) &&
		      (tp.has & TB_TRACE_HAS_UID) && (tp.has & TB_TRACE_HAS_PID));
	CHECK(ret == 0);
}

/* ---- mode 0: a hostile link ------------------------------------------ */

struct seen {
	unsigned n;
	uint64_t sum;		/* of seq, type and body length */
};

static void reencode_put(void *ctx, const uint8_t *p, size_t n)
{
	bytes_put(ctx, p, n);
}

static struct tb_link_frame again;
static unsigned nagain;

static void again_fn(void *ctx, const struct tb_link_frame *f)
{
	(void)ctx;
	again = *f;
	nagain++;
}

/* A good frame, encoded anew from its fields, parses to the same. */
static void reencode(const struct tb_link_frame *f)
{
	static struct tb_link_rx rx2;
	struct bytes b = { NULL, 0, 0 };
	struct tb_link_tx tx;
	struct tb_ring r;
	uint32_t i;

	CHECK(!tb_link_tx_init(&tx, reencode_put, &b));
	tx.seq = f->seq;
	switch (f->type) {
	case TB_LINK_HELLO:
		/* geometry from the fields: tb_link_tx_hello() reads them
		 * from a ring view, which need not be valid to be sent */
		memset(&r, 0, sizeof(r));
		r.chunk_size = f->hello.chunk_size;
		r.num_chunks = f->hello.num_chunks;
		tb_link_tx_set_boot(&tx, f->hello.boot);
		tb_link_tx_hello(&tx, &r);
		break;
	case TB_LINK_CHUNK:
		tb_link_tx_view(&tx, &f->view);
		break;
	case TB_LINK_END:
		tb_link_tx_end(&tx);
		break;
	default:
		free(b.p);
		return;		/* STATS needs a ring: checked by the parse */
	}
	tb_link_rx_init(&rx2);
	nagain = 0;
	tb_link_rx_feed(&rx2, b.p, b.n, again_fn, NULL);
	CHECK(nagain == 1);
	CHECK(again.type == f->type && again.seq == f->seq);
	if (f->type == TB_LINK_HELLO) {
		CHECK(again.hello.boot == f->hello.boot);
		CHECK(again.hello.chunk_size == f->hello.chunk_size);
		CHECK(again.hello.num_chunks == f->hello.num_chunks);
	}
	if (f->type == TB_LINK_CHUNK) {
		CHECK(again.len == f->len);
		CHECK(again.view.writer == f->view.writer &&
		      again.view.bid == f->view.bid &&
		      again.view.flags == f->view.flags &&
		      again.view.lost == f->view.lost &&
		      again.view.nfrags == f->view.nfrags &&
		      again.view.pos == f->view.pos);
		for (i = 0; i < f->view.nfrags; i++)
			CHECK(again.view.sizes[i] == f->view.sizes[i]);
		CHECK(!memcmp(again.body, f->body, f->len));
	}
	free(b.p);
}

static void seen_fn(void *ctx, const struct tb_link_frame *f)
{
	struct seen *s = (struct seen *)ctx;

	s->n++;
	s->sum += f->seq + f->type * 7u + f->len * 13u + f->gap;
	CHECK(f->len <= TB_LINK_BODY_MAX);
	if (f->type == TB_LINK_CHUNK) {
		uint32_t i, total = 0;

		for (i = 0; i < f->view.nfrags; i++)
			total += f->view.sizes[i];
		CHECK(f->view.payload + total == f->body + f->len);
		CHECK(f->view.writer != 0);
	}
	reencode(f);
}

static void hostile(const uint8_t *p, size_t n, size_t piece)
{
	static struct tb_link_rx a, b;
	struct seen sa = { 0, 0 }, sb = { 0, 0 };
	struct tbt_mem m;
	size_t i, zeros = 0;

	for (i = 0; i < n; i++)
		zeros += !p[i];
	tb_link_rx_init(&a);
	tb_link_rx_feed(&a, p, n, seen_fn, &sa);
	tb_link_rx_finish(&a);
	tb_link_rx_init(&b);
	for (i = 0; i < n; i += piece)
		tb_link_rx_feed(&b, p + i, n - i < piece ? n - i : piece,
				seen_fn, &sb);
	tb_link_rx_finish(&b);
	CHECK(sa.n == sb.n && sa.sum == sb.sum);
	CHECK(!memcmp(a.stat, b.stat, sizeof(a.stat)));
	CHECK(a.stat[TB_LR_FRAMES] == sa.n && sa.n <= zeros);
	CHECK(a.stat[TB_LR_BYTES] == n);
	CHECK(a.stat[TB_LR_SKIPPED] <= n);
	CHECK(a.stat[TB_LR_BAD_CRC] + a.stat[TB_LR_MALFORMED] +
	      a.stat[TB_LR_FRAMES] <= zeros);
	stream_to(p, n, &m);
	trace_is_sane(&m);
	free(m.p);
}

/* ---- mode 1: a real target, a damaged stream -------------------------- */

/*
 * Writer @w's packet @i of @len payload bytes, of @kind: 0 an opaque
 * track event; 1 a clear that interns an event name (iid i % 4 + 1); 2
 * an event that names one and needs the state, which the stream may
 * restate after a loss (tbt_stream.c) or drop; 3 the same, interning its
 * name itself, under an iid it may have given another name before (a
 * writer started over).  A valid TracePacket, its timestamp unique.
 */
static size_t mk_packet(uint8_t *b, unsigned w, unsigned i, unsigned len,
			unsigned kind)
{
	uint8_t e[16], in[24];
	size_t n = 0, k, m;
	unsigned j;

	n += tb_pb_uint(b + n, 8, (uint64_t)w << 20 | i);	/* timestamp */
	if (kind) {
		n += tb_pb_uint(b + n, 13, kind == 1 ? 1 : 2);
		k = tb_pb_uint(e, 1, i % 4 + 1);	/* iid, name */
		e[k++] = 0x12;
		e[k++] = 1;
		e[k++] = (uint8_t)('a' + i % 3);
		m = tb_pb_len(in, 2, k);		/* event_names */
		memcpy(in + m, e, k);
		if (kind != 2) {
			n += tb_pb_len(b + n, 12, m + k);
			memcpy(b + n, in, m + k);
			n += m + k;
		}
		if (kind == 1)
			return n;
		k = tb_pb_uint(e, 10, i % 4 + 1);	/* name_iid */
		n += tb_pb_len(b + n, 11, k);
		memcpy(b + n, e, k);
		return n + k;
	}
	n += tb_pb_len(b + n, 11, len);
	for (j = 0; j < len; j++)
		b[n++] = (uint8_t)(w * 41 + i * 7 + j);
	return n;
}

struct target {
	bool ok[NW][NPKT];
	unsigned len[NW][NPKT];
	unsigned kind[NW][NPKT];
	unsigned n[NW];
	struct bytes out;
};

static void drain(struct tb_reader *rd, struct tb_link_tx *tx,
		  enum tb_read_mode mode)
{
	unsigned i;

	for (i = 0; i < 64 && tb_reader_drain(rd, 16, mode, tb_link_chunk_fn,
					      tx, NULL) == TB_LIMIT; i++)
		;
}

static void run_target(struct in *in, struct target *g)
{
	static uint8_t mem[512 + 4 * 256] __attribute__((aligned(64)));
	static uint8_t ws[NW][256], rs[256], pkt[1024];
	struct tb_writer w[NW];
	struct tb_reader rd;
	struct tb_link_tx tx;
	struct tb_ring r;
	unsigned ops = get(in) % 64 + 1, i, k, op;
	size_t n;

	memset(mem, 0, sizeof(mem));
	memset(g, 0, sizeof(*g));
	CHECK(!tb_ring_init(&r, mem, sizeof(mem), 256, 4));
	for (k = 0; k < NW; k++)
		CHECK(!tb_writer_init(&w[k], &r, (uint16_t)(k + 1), 0,
				      TB_DROP, ws[k]));
	CHECK(!tb_reader_init(&rd, &r, rs));
	CHECK(!tb_link_tx_init(&tx, bytes_put, &g->out));
	tb_link_tx_hello(&tx, &r);
	for (i = 0; i < ops; i++) {
		op = get(in);
		k = op & 1;
		if (op & 0x80) {
			drain(&rd, &tx, op & 0x40 ? TB_READ_SCRAPE :
						    TB_READ_LAZY);
			if (op & 0x20)
				tb_link_tx_stats(&tx, &r);
			continue;
		}
		if (g->n[k] == NPKT)
			continue;
		g->len[k][g->n[k]] = (op >> 1) % 8 == 7 ? 200 + get(in) * 2 :
				     get(in) % 40;
		g->kind[k][g->n[k]] = op >> 4 & 3;
		n = mk_packet(pkt, k + 1, g->n[k], g->len[k][g->n[k]],
			      g->kind[k][g->n[k]]);
		g->ok[k][g->n[k]] = tb_writer_write_packet(&w[k], pkt,
							   (uint32_t)n) ==
				    TB_OK;
		g->n[k]++;
	}
	for (k = 0; k < NW; k++)
		tb_writer_release(&w[k]);
	drain(&rd, &tx, TB_READ_SCRAPE);
	tb_link_tx_stats(&tx, &r);
	tb_link_tx_end(&tx);
}

/* Damages @b as the input says. */
static void damage(struct in *in, struct bytes *b)
{
	unsigned ops = get(in) % 6, i, kind, len;
	size_t at;

	for (i = 0; i < ops && b->n > 2; i++) {
		kind = get(in) % 5;
		at = (size_t)get16(in) * b->n / 65536;
		len = get(in) % 64 + 1;
		switch (kind) {
		case 0:		/* bytes lost */
			if (len > b->n - at)
				len = (unsigned)(b->n - at);
			memmove(b->p + at, b->p + at + len, b->n - at - len);
			b->n -= len;
			break;
		case 1:		/* a byte flipped */
			b->p[at] ^= (uint8_t)(get(in) | 1);
			break;
		case 2:		/* noise on the line */
			bytes_room(b, len);
			memmove(b->p + at + len, b->p + at, b->n - at);
			memset(b->p + at, get(in), len);
			b->n += len;
			break;
		case 3:		/* attached late */
			memmove(b->p, b->p + at, b->n - at);
			b->n -= at;
			break;
		default:	/* the end cut */
			b->n = at;
			break;
		}
	}
}

/*
 * A restate the stream wrote (tbt_stream.c): no timestamp, the clear
 * flag; its loss bits stand for the packets before the next one.
 */
static bool is_restate(const struct tb_trace_packet *tp)
{
	uint64_t v;

	return !tb__ck_uint(tp->data, tp->size, 8, &v) &&
	       tb__ck_uint(tp->data, tp->size, 13, &v) && v == 1;
}

static void verify(const struct target *g, const struct tbt_mem *m)
{
	struct tb_pb_reader r, rest;
	struct tb_trace_packet tp;
	struct tb_pb_field f;
	unsigned next[NW] = { 0, 0 }, w, k;
	bool flagged[NW] = { false, false };
	static uint8_t pkt[1024];
	size_t n = 0;
	int ret;

	tb_pb_reader_init(&r, m->p, m->len);
	while ((ret = tb_trace_next(&r, &tp)) > 0) {
		if (tp.trusted_seq_id == TB_TRACE_SERVICE_SEQ)
			continue;	/* the converter's own: its tail */
		w = (unsigned)(tp.trusted_seq_id & 0xffff);
		CHECK(tp.trusted_seq_id >> 16 == PRODUCER && w >= 1 &&
		      w <= NW);
		w--;
		if (is_restate(&tp)) {
			flagged[w] |= tp.dropped != 0;
			continue;
		}
		for (k = next[w]; k < g->n[w]; k++) {
			n = mk_packet(pkt, w + 1, k, g->len[w][k],
				      g->kind[w][k]);
			if (tp.size >= n && !memcmp(tp.data, pkt, n))
				break;
		}
		CHECK(k < g->n[w]);		/* one it wrote, not before */
		CHECK(g->ok[w][k]);		/* and was told so */
		tb_pb_reader_init(&rest, tp.data + n, tp.size - n);
		while ((ret = tb_pb_next(&rest, &f)) > 0)	/* no glue */
			CHECK(f.number == TB_PB_TRUSTED_UID ||
			      f.number == TB_PB_TRUSTED_SEQ_ID ||
			      f.number == TB_PB_TRUSTED_PID ||
			      f.number == TB_PB_PREVIOUS_DROPPED);
		CHECK(ret == 0);
		/* gaps flagged, on the packet or a restate before it */
		CHECK(k == next[w] || tp.dropped || flagged[w]);
		flagged[w] = false;
		next[w] = k + 1;
	}
	CHECK(ret == 0);
}

static void target(struct in *in)
{
	struct target g;
	struct tbt_mem m;
	int st;

	run_target(in, &g);
	damage(in, &g.out);
	st = stream_to(g.out.p, g.out.n, &m);
	if (st != 2)
		verify(&g, &m);
	free(m.p);
	free(g.out.p);
}

/* ---- seeds ----------------------------------------------------------- */

static void seed(const char *dir, const char *name, const uint8_t *p,
		 size_t n)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	CHECK(f && fwrite(p, 1, n, f) == n && !fclose(f));
}

static int mkseeds(const char *dir)
{
	static const uint8_t drive[] = {
		1, 40,				/* mode 1, 40 ops */
		0x00, 10, 0x01, 20, 0x0e, 50, 0x0f, 90, 0x80, 0x02, 5,
		0x03, 7, 0xa0, 0x0e, 100, 0x0f, 120, 0xc0, 0x04, 3, 0x05, 9,
		0x80, 0x06, 30, 0x07, 31, 0x0e, 10, 0xe0, 0x08, 1, 0x09, 2,
		0x80, 0x0a, 3, 0x0b, 4, 0x80, 0x0c, 5, 0x0d, 6, 0x80, 0x0e,
		0x0e, 0x0f, 0x0f, 0x80, 0x10, 1, 0x11, 1, 0x80, 0x12, 2,
		0x13, 2, 0x80, 0x14, 3, 0x15, 3, 0x80, 0x16, 4, 0x17, 4,
		0x80, 0x18, 5, 0x19, 5, 0x80, 0x1a, 6, 0x1b, 6, 0x80,
	};
	uint8_t buf[sizeof(drive) + 16];
	struct in in;
	struct target g;

	/* a clean run, and the same with each kind of damage */
	seed(dir, "target-clean", drive, sizeof(drive));
	memcpy(buf, drive, sizeof(drive));
	buf[sizeof(drive)] = 2;			/* two damages */
	buf[sizeof(drive) + 1] = 0;		/* bytes lost */
	buf[sizeof(drive) + 2] = 0;
	buf[sizeof(drive) + 3] = 0x80;
	buf[sizeof(drive) + 4] = 30;
	buf[sizeof(drive) + 5] = 1;		/* a byte flipped */
	buf[sizeof(drive) + 6] = 0;
	buf[sizeof(drive) + 7] = 0xc0;
	buf[sizeof(drive) + 8] = 0;
	buf[sizeof(drive) + 9] = 0x10;
	seed(dir, "target-damaged", buf, sizeof(drive) + 10);
	buf[sizeof(drive)] = 1;
	buf[sizeof(drive) + 1] = 3;		/* attached late */
	seed(dir, "target-late", buf, sizeof(drive) + 6);
	buf[sizeof(drive) + 1] = 4;		/* the end cut */
	seed(dir, "target-cut", buf, sizeof(drive) + 6);
	/* a real stream, as a hostile link's bytes (mode 0, pieces of 7) */
	in.p = drive + 1;
	in.n = sizeof(drive) - 1;
	run_target(&in, &g);
	bytes_room(&g.out, 1);
	memmove(g.out.p + 1, g.out.p, g.out.n);
	g.out.p[0] = 6 << 1;
	seed(dir, "link-stream", g.out.p, g.out.n + 1);
	free(g.out.p);
	return 0;
}

/* ---- libFuzzer ------------------------------------------------------ */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("FUZZ_MKSEEDS");

	(void)tbt_main;		/* the command line is tested elsewhere */
	if (dir)
		exit(mkseeds(dir));
	devnull = fopen("/dev/null", "w");
	CHECK(devnull);
	fuzz_init(argc, argv);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in;

	if (!size)
		return 0;
	in.p = data + 1;
	in.n = size - 1;
	if (data[0] & 1)
		target(&in);
	else
		hostile(data + 1, size - 1, (size_t)(data[0] >> 1) + 1);
	return 0;
}
