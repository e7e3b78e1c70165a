/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Copyright (c) 2026, tbring contributors.  BSD-2-Clause: see COPYING, or
 * https://opensource.org/license/bsd-2-clause for the text.
 *
 * tbtrace stream: a byte stream of tblink.h frames (a target's UART, a
 * file, stdin) into a Perfetto trace, through the same bridge, central
 * buffers and trace writer as the service and convert.
 *
 * Included by tbtrace.c (one translation unit: the tool's helpers, say()
 * and the checker's verdict, are static there).  Every loss the link or
 * the ring saw is reported, and flagged in the trace where it can be:
 * frames lost by a sequence gap (a bad CRC, bytes lost, a start in the
 * middle) put the data-loss flag on the next chunk of every sequence and
 * a gap in its chunk ids, so no packet is joined across the loss; what
 * the ring refused its writers (the last STATS frame) is counted.
 */
#include "tblink.h"

#define TBT_STREAM_BUF	(4u << 20)	/* default central buffer size */

struct tbt_stream_opts {
	uint16_t producer;
	int32_t pid;
	uint32_t uid;
	uint64_t buf_size;		/* 0: TBT_STREAM_BUF */
	size_t budget;			/* checker's, 0: default */
};

struct tbt_stream {
	const struct tbt_stream_opts *o;
	FILE *f;
	struct tb_trace_out *out;
	struct tb_link_rx *rx;
	struct tb_bridge br;
	struct tb_buf **bufs;		/* by BufferID, 65536 */
	uint16_t ids[TBT_MAX_BUFS];
	unsigned nb;
	uint64_t types[5];		/* good frames by type */
	uint64_t losses;		/* tb_bridge_lost_any() calls */
	uint64_t no_buffer;		/* BufferIDs past TBT_MAX_BUFS */
	bool have_hello, have_stats, write_failed, read_failed;
	struct tb_link_hello hello;
	struct tb_link_stats stats;
	uint64_t loss_last;		/* "events lost": last value + 1 */
	size_t time_from;		/* the trace read for its time so far */
	uint64_t time;			/* ... its largest timestamp */
};

struct tbt_stream_result {
	uint64_t frames;
	uint64_t packets;
	uint64_t lost;			/* anything lost, any cause */
	bool tail_lost;
	int check;
};

/* The central buffer of @bid, made on first use (at most TBT_MAX_BUFS). */
static bool tbt_stream_buf(struct tbt_stream *s, uint16_t bid)
{
	uint64_t size = s->o->buf_size ? s->o->buf_size : TBT_STREAM_BUF;

	if (s->bufs[bid])
		return true;
	if (s->nb == TBT_MAX_BUFS)
		return false;
	s->bufs[bid] = tb_buf_create((size_t)size, TB_BUF_RING_BUFFER);
	if (!s->bufs[bid]) {
		say(s->f, "buffer    BufferID %u: no memory for %llu bytes\n",
		    bid, ull(size));
		return false;
	}
	s->ids[s->nb++] = bid;
	if (bid + 1u > s->br.nbufs)
		s->br.nbufs = bid + 1u;
	return true;
}

/*
 * Everything a buffer can give now, into the trace, under its index in
 * the TraceStats packet (its place in ids[]).
 */
static void tbt_stream_flush(struct tbt_stream *s, uint16_t bid)
{
	unsigned k;

	for (k = 0; k < s->nb && s->ids[k] != bid; k++)
		;
	if (s->bufs[bid] && tb_trace_write_buffer(s->out, s->bufs[bid],
						  k) < 0)
		s->write_failed = true;
}

/* The largest timestamp of the trace so far (0: none, or not in memory). */
static uint64_t tbt_stream_time(struct tbt_stream *s)
{
	const struct tbt_mem *m = (const struct tbt_mem *)s->out->ctx;

	if (s->out->write == tbt_mem_write)
		s->time = tbt_time_after(m->p, m->len, &s->time_from,
					 s->time);
	return s->time;
}

/*
 * The ring's "events lost" counter track, as a service samples it: the
 * writes the last STATS frame says its writers could not make, at the
 * trace's latest time, when it changed.
 */
static void tbt_stream_loss(struct tbt_stream *s)
{
	const struct tb_link_stats *ls = &s->stats;
	struct tb_buf_ident ident;
	uint64_t ts = tbt_stream_time(s);

	if (!s->have_stats || !ts)
		return;		/* a counter value needs a time */
	ident.uid = s->o->uid;
	ident.pid = s->o->pid;
	tb_trace_loss_sample(s->out, ident, ts, s->o->producer, s->o->pid,
			     (uint64_t)ls->wstat[TB_WS_FULL] +
			     ls->wstat[TB_WS_NO_CHUNK] +
			     ls->wstat[TB_WS_DROPPED_FRAGS], &s->loss_last);
}

static void tbt_stream_frame(void *ctx, const struct tb_link_frame *fr)
{
	struct tbt_stream *s = (struct tbt_stream *)ctx;

	if (fr->type < 5)
		s->types[fr->type]++;
	if (fr->gap || fr->restart) {
		/* frames missing, whose nobody knows; or a new boot's
		 * writers, whose ids say nothing of the old ones */
		tb_bridge_lost_any(&s->br);
		s->losses++;
	}
	switch (fr->type) {
	case TB_LINK_HELLO:
		if (!s->have_hello || fr->restart)
			say(s->f, "hello     boot %#x: a ring of %u x %u B "
			    "chunks, ring ABI %u, tbring %u.%u.%u\n",
			    fr->hello.boot, fr->hello.num_chunks,
			    fr->hello.chunk_size, fr->hello.ring_version,
			    fr->hello.lib_version >> 16,
			    fr->hello.lib_version >> 8 & 0xffu,
			    fr->hello.lib_version & 0xffu);
		s->hello = fr->hello;
		s->have_hello = true;
		break;
	case TB_LINK_STATS:
		s->stats = fr->stats;
		s->have_stats = true;
		tbt_stream_loss(s);
		break;
	case TB_LINK_CHUNK:
		if (!fr->view.lost && !tbt_stream_buf(s, fr->view.bid))
			s->no_buffer++;		/* the bridge counts it */
		tb_bridge_view(&s->br, &fr->view);
		tbt_stream_flush(s, fr->view.bid);
		break;
	}
}

static int tbt_stream_begin(struct tbt_stream *s,
			    const struct tbt_stream_opts *o,
			    struct tb_trace_out *out, FILE *f)
{
	struct tb_bridge_config bc;

	memset(s, 0, sizeof(*s));
	s->o = o;
	s->f = f;
	s->out = out;
	s->rx = (struct tb_link_rx *)malloc(sizeof(*s->rx));
	s->bufs = (struct tb_buf **)calloc(65536, sizeof(*s->bufs));
	memset(&bc, 0, sizeof(bc));	/* no ring: fed by views */
	bc.producer_id = o->producer;
	bc.ident.pid = o->pid;
	bc.ident.uid = o->uid;
	bc.bufs = s->bufs;
	if (!s->rx || !s->bufs || tb_link_rx_init(s->rx) ||
	    tb_bridge_init(&s->br, &bc)) {
		say(f, "stream    cannot set up (memory, or producer id 0)\n");
		free(s->rx);
		free(s->bufs);
		return -1;
	}
	return 0;
}

static void tbt_stream_feed(struct tbt_stream *s, const void *p, size_t n)
{
	tb_link_rx_feed(s->rx, p, n, tbt_stream_frame, s);
}

/* The link's line of the report; the loss it counts. */
static uint64_t tbt_stream_link(struct tbt_stream *s)
{
	const uint64_t *st = s->rx->stat;

	say(s->f, "link      %llu bytes: %llu frames (%llu hello, %llu chunk, "
	    "%llu stats, %llu end); %llu bytes skipped\n",
	    ull(st[TB_LR_BYTES]), ull(st[TB_LR_FRAMES]), ull(s->types[1]),
	    ull(s->types[2]), ull(s->types[3]), ull(s->types[4]),
	    ull(st[TB_LR_SKIPPED]));
	say(s->f, "link      %s; %llu frames with a bad CRC, %llu malformed; "
	    "%llu frames lost by sequence gap, %llu sent before the first "
	    "one read; %s; %llu restarts\n",
	    st[TB_LR_PARTIAL_START] ? "started in the middle of a frame" :
	    "started at a frame", ull(st[TB_LR_BAD_CRC]),
	    ull(st[TB_LR_MALFORMED]), ull(st[TB_LR_LOST]),
	    ull(st[TB_LR_MISSED_START]),
	    st[TB_LR_TRUNCATED] ? "ended in the middle of a frame" :
	    st[TB_LR_ENDS] ? "ended with END" : "ended without END",
	    ull(st[TB_LR_RESTARTS]));
	return st[TB_LR_SKIPPED] + st[TB_LR_BAD_CRC] + st[TB_LR_MALFORMED] +
	       st[TB_LR_LOST] + st[TB_LR_MISSED_START] +
	       st[TB_LR_TRUNCATED] + !st[TB_LR_ENDS];
}

/* The last STATS frame: what the ring refused its writers. */
static uint64_t tbt_stream_ring(struct tbt_stream *s)
{
	const struct tb_link_stats *ls = &s->stats;
	uint32_t w[TB_WS_MAX] = { 0 }, r[TB_RS_MAX] = { 0 };
	unsigned i;

	if (!s->have_stats) {
		say(s->f, "ring      no STATS frame: the ring's own counters "
		    "are unknown\n");
		return 0;
	}
	for (i = 0; i < TB_WS_MAX && i < ls->nw; i++)
		w[i] = ls->wstat[i];
	for (i = 0; i < TB_RS_MAX && i < ls->nr; i++)
		r[i] = ls->rstat[i];
	say(s->f, "ring      last STATS: write_pos %u, read_pos %u\n",
	    ls->write_pos, ls->read_pos);
	tbt_counters(s->f, "writers", w, TB_WS_MAX, tbt_wstat_name);
	tbt_counters(s->f, "reader", r, TB_RS_MAX, tbt_rstat_name);
	/*
	 * Refused writes carry their own flag on the writer's next chunk.
	 * A scrape is no loss on a live target: its writer moves the rest
	 * of the chunk on (what it could not move is dropped-frags).
	 */
	return (uint64_t)w[TB_WS_FULL] + w[TB_WS_NO_CHUNK] +
	       w[TB_WS_DROPPED_FRAGS] + r[TB_RS_MALFORMED] +
	       r[TB_RS_UNKNOWN_FORMAT];
}

/*
 * The end of the trace, as convert and a service end theirs (tbtrace.h):
 * the ring's "events lost" track if its last value changed, what the
 * ring's last STATS counted, on the service's track at the trace's last
 * timestamp (an END frame is the target's goodbye), and the TraceStats
 * packet of the buffers.
 */
static void tbt_stream_tail(struct tbt_stream *s,
			    const struct tb_buf_stats *const *bs,
			    uint64_t refused)
{
	const struct tb_link_stats *ls = &s->stats;
	struct tb_trace_ring_record rec;
	struct tb_trace_stats_extra x;
	struct tb_buf_ident ident;
	uint64_t ts;

	tbt_stream_loss(s);
	ts = tbt_stream_time(s);	/* the trace so far */
	ident.uid = s->o->uid;
	ident.pid = s->o->pid;
	memset(&rec, 0, sizeof(rec));
	rec.producer = s->o->producer;
	rec.pid = s->o->pid;
	rec.end = s->rx->stat[TB_LR_ENDS] ? TB_TRACE_END_CLEAN :
					   TB_TRACE_END_LIVE;
	if (s->have_stats) {
		rec.held = 0;	/* the target's own business */
		rec.full = ls->wstat[TB_WS_FULL];
		rec.no_chunk = ls->wstat[TB_WS_NO_CHUNK];
		rec.dropped_frags = ls->wstat[TB_WS_DROPPED_FRAGS];
		rec.holes = ls->rstat[TB_RS_HOLES];
		rec.scrapes = ls->rstat[TB_RS_SCRAPES];
		rec.malformed = ls->rstat[TB_RS_MALFORMED];
	}
	if (ts) {	/* an instant needs a time: none if no packet has */
		tb_trace_service_track(s->out, ident);
		tb_trace_ring_record(s->out, ident, ts, &rec);
	}
	memset(&x, 0, sizeof(x));
	x.chunks_discarded = refused;
	tb_trace_write_stats(s->out, ident, ts, bs, s->nb, &x);
	if (s->out->error)
		s->write_failed = true;
}

/*
 * The stream ended: the last packets out, every count reported.  Returns
 * the exit status: 0 nothing lost, 1 losses (reported), 2 not a stream.
 */
static int tbt_stream_end(struct tbt_stream *s, struct tbt_stream_result *res)
{
	struct tb_bridge *br = &s->br;
	const struct tb_buf_stats *bs[TBT_MAX_BUFS];
	uint64_t lost = 0, unread, rejected;
	int status = 0;
	unsigned k;

	memset(res, 0, sizeof(*res));
	tb_link_rx_finish(s->rx);
	res->frames = s->rx->stat[TB_LR_FRAMES];
	lost += tbt_stream_link(s);
	lost += tbt_stream_ring(s);
	rejected = br->stat[TB_BS_REJECTED] + br->stat[TB_BS_BAD_TARGET] +
		   br->stat[TB_BS_TOO_MANY_KEYS] + br->stat[TB_BS_KEYS_NOMEM];
	say(s->f, "bridge    producer %u (pid %d, uid %u): %llu chunks into %u "
	    "central buffer%s; refused %llu, unknown BufferID %llu (%llu "
	    "past the first %u); %llu chunks the target's reader could not "
	    "use; %llu chunks carried a loss flag (%llu losses of the link "
	    "charged to every sequence)\n", s->o->producer, s->o->pid,
	    s->o->uid, ull(br->stat[TB_BS_CHUNKS]), s->nb,
	    s->nb == 1 ? "" : "s", ull(br->stat[TB_BS_REJECTED]),
	    ull(br->stat[TB_BS_BAD_TARGET]), ull(s->no_buffer), TBT_MAX_BUFS,
	    ull(br->stat[TB_BS_LOST]), ull(br->stat[TB_BS_LOSS_FLAGS]),
	    ull(s->losses));
	lost += rejected + br->stat[TB_BS_LOST] + br->stat[TB_BS_LOSS_FLAGS];
	res->tail_lost = rejected || s->rx->stat[TB_LR_TRUNCATED] ||
			 !s->rx->stat[TB_LR_ENDS];
	for (k = 0; k < s->nb; k++) {
		struct tb_buf *b = s->bufs[s->ids[k]];
		const struct tb_buf_stats *st;

		tbt_stream_flush(s, s->ids[k]);
		bs[k] = st = tb_buf_stats(b);
		unread = st->bytes_written - st->bytes_read;
		say(s->f, "buffer    BufferID %u, %llu B: %llu chunks; %llu "
		    "bytes never completed (a packet's continuation was "
		    "lost), %llu ABI violations, %llu chunks overwritten, "
		    "%llu discarded\n", s->ids[k], ull(st->buffer_size),
		    ull(st->chunks_written), ull(unread),
		    ull(st->abi_violations), ull(st->chunks_overwritten),
		    ull(st->chunks_discarded));
		lost += (unread != 0) + st->abi_violations +
			st->chunks_discarded + st->chunks_overwritten;
		res->tail_lost |= unread || st->chunks_overwritten;
	}
	if (res->frames)
		tbt_stream_tail(s, bs, rejected);
	if (s->write_failed || s->read_failed) {
		say(s->f, "trace     %s failed\n", s->read_failed ?
		    "reading the stream" : "writing the trace");
		status = 2;
	}
	say(s->f, "trace     %llu packets, %llu bytes; %llu carry "
	    "previous_packet_dropped, %llu invalid ones replaced\n",
	    ull(s->out->packets), ull(s->out->bytes),
	    ull(s->out->lossy_packets), ull(s->out->invalid_packets));
	lost += s->out->lossy_packets + s->out->invalid_packets;
	res->packets = s->out->packets;
	res->lost = lost;
	if (!res->frames) {
		say(s->f, "stream    not a tblink stream: no frame in it\n");
		status = 2;
	}
	tb_bridge_destroy(br);
	for (k = 0; k < s->nb; k++)
		tb_buf_destroy(s->bufs[s->ids[k]]);
	free(s->bufs);
	free(s->rx);
	if (status)
		return status;
	say(s->f, "lost      %s\n", lost ? "yes: see the lines above" :
	    "nothing: every frame arrived and every packet is in the trace");
	return lost ? 1 : 0;
}

/* A whole stream in memory (tests, the fuzzer): the exit status. */
static int tbt_stream_image(const uint8_t *p, size_t n,
			    const struct tbt_stream_opts *o,
			    struct tb_trace_out *out, FILE *f,
			    struct tbt_stream_result *res)
	__attribute__((unused));

static int tbt_stream_image(const uint8_t *p, size_t n,
			    const struct tbt_stream_opts *o,
			    struct tb_trace_out *out, FILE *f,
			    struct tbt_stream_result *res)
{
	struct tbt_stream s;

	memset(res, 0, sizeof(*res));
	if (tbt_stream_begin(&s, o, out, f))
		return 2;
	tbt_stream_feed(&s, p, n);
	return tbt_stream_end(&s, res);
}

/* The checker over what came out; folds its verdict into @st. */
static int tbt_stream_check(const struct tbt_mem *m, int st,
			    const struct tbt_stream_opts *o,
			    struct tbt_stream_result *res, FILE *f)
{
	struct tb_check c;
	int ret;

	if (st == 2 || tb_check_init(&c, NULL, NULL, o->budget))
		return st;
	c.tail_lost = res->tail_lost;
	ret = tb_check_trace(&c, m->p, m->len);
	tbt_stat_ui(f, &c);
	res->check = tbt_verdict(f, &c, ret);
	tb_check_destroy(&c);
	return res->check && st == 0 ? 1 : st;
}

/* Reads @in to its end (a pipe: as the bytes come) into the stream. */
static int tbt_stream_read(struct tbt_stream *s, FILE *in, const char *name)
{
	static uint8_t buf[1 << 16];
	size_t n;

	for (;;) {
		n = fread(buf, 1, sizeof(buf), in);
		if (n)
			tbt_stream_feed(s, buf, n);
		if (n < sizeof(buf)) {
			if (ferror(in)) {
				fprintf(stderr, "tbtrace: %s: %s\n", name,
					strerror(errno));
				return -1;
			}
			if (feof(in))
				return 0;
		}
	}
}

static void tbt_stream_usage(void)
{
	fprintf(stderr, "usage: tbtrace stream [-P PRODUCER] [-p PID] "
		"[-u UID] [-b SIZE] [-m BYTES] [-q] IN|- OUT.pftrace\n");
}

static int tbt_stream_opt(struct tbt_stream_opts *o, int opt,
			  const char *arg, int *quiet)
{
	uint64_t v;

	if (opt == 'q') {
		*quiet = 1;
		return 0;
	}
	if (tbt_size(arg, &v))
		v = UINT64_MAX;
	switch (opt) {
	case 'P':
		if (v < 1 || v > 65535)
			break;
		o->producer = (uint16_t)v;
		return 0;
	case 'p':
		if (v > INT32_MAX)
			break;
		o->pid = (int32_t)v;
		return 0;
	case 'u':
		if (v > UINT32_MAX)
			break;
		o->uid = (uint32_t)v;
		return 0;
	case 'b':
		if (v < 4096 || v > TB_BUF_MAX_SIZE)
			break;
		o->buf_size = v;
		return 0;
	case 'm':
		if (!v || v > SIZE_MAX)
			break;
		o->budget = (size_t)v;
		return 0;
	}
	fprintf(stderr, "tbtrace stream: -%c: bad value\n", opt);
	return -1;
}

static int tbt_stream_main(int argc, char **argv)
{
	struct tbt_stream_opts o;
	struct tbt_stream_result res;
	struct tb_trace_out out;
	struct tbt_stream s;
	struct tbt_mem m;
	FILE *in, *file;
	int opt, st, quiet = 0;
	const char *name;

	memset(&o, 0, sizeof(o));
	o.producer = 1;
	while ((opt = getopt(argc, argv, "P:p:u:b:m:q")) != -1)
		if (opt == '?' || tbt_stream_opt(&o, opt, optarg, &quiet))
			return 2;
	if (optind + 2 != argc) {
		tbt_stream_usage();
		return 2;
	}
	name = argv[optind];
	in = strcmp(name, "-") ? fopen(name, "rb") : stdin;
	if (!in) {
		fprintf(stderr, "tbtrace: %s: %s\n", name, strerror(errno));
		return 2;
	}
	file = fopen(argv[optind + 1], "wb");
	if (!file) {
		fprintf(stderr, "tbtrace: %s: %s\n", argv[optind + 1],
			strerror(errno));
		if (in != stdin)
			fclose(in);
		return 2;
	}
	memset(&m, 0, sizeof(m));
	memset(&out, 0, sizeof(out));
	m.file = file;
	out.write = tbt_mem_write;
	out.ctx = &m;
	st = 2;
	if (!tbt_stream_begin(&s, &o, &out, quiet ? NULL : stdout)) {
		if (tbt_stream_read(&s, in, name))
			s.read_failed = true;	/* reported, status 2 */
		st = tbt_stream_end(&s, &res);
		st = tbt_stream_check(&m, st, &o, &res, quiet ? NULL : stdout);
	}
	if (in != stdin)
		fclose(in);
	if (fclose(file) && st != 2) {
		fprintf(stderr, "tbtrace: %s: %s\n", argv[optind + 1],
			strerror(errno));
		st = 2;
	}
	if (st == 2)
		unlink(argv[optind + 1]);
	free(m.p);
	return st;
}
