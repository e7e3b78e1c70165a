/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * examples/tb_producer.c - a producer process for tb_service.
 *
 *   ./build/tb_producer [options] SOCKET
 *   ./build/tb_producer -C stop|flush SOCKET
 *
 * It connects to the service, receives its ring and the shared doorbell
 * (two memfds, SCM_RIGHTS), maps the ring at an address of its own (never
 * the service's) and attaches to it with tb_ring_attach(), which
 * validates the header.  Then K writer threads each trace with the event
 * layer (tbevent.h), one struct tb_ev_writer over one struct tb_writer
 * per thread, so the trace opens in the Perfetto UI as a process with a
 * thread track per writer.
 *
 * What a writer traces: a made-up request handler, over and over, on its
 * thread track ("writer W", under the process's track "tb_producer I"):
 *
 *   HandleRequest             slice                      request
 *     ParseRequest            slice                      request
 *     QueryDatabase           slice                      db
 *       ExecuteQuery          slice                      db
 *       DecodeRows            slice, then a value on the db
 *                             writer's counter track "rows decoded"
 *     Snapshot                instant with "body", a     debug
 *                             string of -s MIN:MAX bytes
 *                             (more than a chunk spans chunks), and
 *                             "check", a hash of it
 *     SendResponse            slice                      request
 *
 * Every slice BEGIN and every instant is tagged with a debug annotation
 * "seq": the writer's running number of tagged events, 0, 1, ...; -n says
 * how many a writer writes (it stops wherever the N-th falls, then ends
 * the slices still open).  ENDs and counter values are not tagged.  The
 * Snapshot's "check" is FNV-1a (32 bits) of the writer id and seq (each
 * 4 bytes, little-endian) followed by the body's bytes, so whoever reads
 * the trace can check the payload, and whose it is, without knowing how
 * it was made.  Slice and annotation names are interned per sequence.
 *
 * It reports on stdout, one line at a time (each flushed), so that a test
 * can follow it even when it is killed:
 *   producer pid=P id=I addr=A service_addr=S chunk_size=C num_chunks=N
 *   writer W tid=T ok=N failed=F lost=L   (a writer is done: of its
 *                                 tagged events N written and F not;
 *                                 L packets of any kind whose write
 *                                 failed, so the trace may flag a loss)
 *   fail W SEQ                    (tagged event SEQ was not written)
 *   open W SEQ large=0|1          (die mode: that packet is open)
 *   noopen W SEQ ERROR            (die mode: it could not be opened)
 *   ready                         (die mode: every writer is in it)
 *   scribbled words=N             (scribble mode)
 *   done ok=N failed=F            (tagged events, all writers)
 *
 * Writers stall on a full ring (TB_STALL, 2 s without progress before a
 * write fails); a failed write loses that event, and the event layer
 * starts a fresh incremental state for the next one.
 *
 * Failure modes, for tests:
 *   -d raise|spin  after its N tagged events every writer, its slices
 *                  still open, opens one more packet with the raw
 *                  tb_writer_open() (an instant tagged SEQ = N, encoded
 *                  here: the event layer writes only whole packets) and
 *                  writes part of it; then the process raises SIGKILL on
 *                  itself (raise) or waits to be killed (spin).  With -l
 *                  that packet spans chunks and its first part is already
 *                  published.
 *   -x MS          after its events it writes random words over its
 *                  ring's control header and every chunk's state word for
 *                  MS milliseconds, then leaves.
 */
/* the protocol steps, one at a time (see tbring.h) */
#define TB_PROTOCOL_STEPS 1
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "tbevent.h"
#include "tb_wire.h"

#define MAX_WRITERS	1024u
#define MAX_BODY	60000u	/* -s: the largest Snapshot body */
#define STALL_MS	2000	/* a write fails after this long stalled */
#define RETRY_MS	10000	/* finish and the open packet: give up */
#define CONNECT_MS	5000	/* the service may still be starting */
#define OPEN_OVERHEAD	64u	/* the open packet's tags and varints */

enum die_mode { DIE_NO, DIE_RAISE, DIE_SPIN };

struct options {
	unsigned writers;	/* -w */
	uint32_t events;	/* -n: tagged events per writer */
	uint32_t min_size;	/* -s MIN:MAX body bytes */
	uint32_t max_size;
	uint64_t seed;		/* -S */
	unsigned interval_us;	/* -i: pause after each tagged event */
	int bid;		/* -t: BufferID, -1: the service's */
	enum die_mode die;	/* -d */
	int large;		/* -l */
	unsigned scribble_ms;	/* -x */
	const char *command;	/* -C */
	const char *sock_path;
};

struct prod;

#define MAX_DEPTH	4	/* slices a request nests */

struct writer {
	struct prod *pr;
	pthread_t thread;
	uint16_t id;
	int32_t tid;
	struct tb_writer tw;
	struct tb_ev_writer ev;
	uint8_t *scratch;	/* chunk_size, for relocations */
	char *body;		/* max_size bytes: a Snapshot's body */
	uint8_t *pkt;		/* die mode: the open packet */
	uint64_t rng;
	char name[16];		/* "writer W": static for the track */
	struct tb_track thread_track;
	struct tb_track rows_track;	/* a counter: rows decoded */
	uint64_t rows;
	uint32_t seq;		/* tagged events tried: the next one's number */
	uint32_t depth;		/* slices open */
	const struct tb_category *open[MAX_DEPTH];	/* their categories */
	uint32_t ok;		/* tagged events written */
	uint32_t failed;	/* ... not written */
};

struct prod {
	struct options opt;
	int sock;
	struct tbw_msg cfg;
	void *map;
	size_t len;
	int ring_fd;		/* kept open: tbtrace ring /proc/PID/fd/N */
	struct tb_bell *bell;
	size_t bell_len;
	struct tb_ring ring;
	int32_t pid;
	char name[32];		/* "tb_producer I": the process track's */
	struct tb_track process_track;
	uint32_t quit;		/* atomic: the service went away */
	uint32_t finished;	/* atomic: writers done (or inside a packet) */
	struct writer w[MAX_WRITERS];
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_us(unsigned us)
{
	struct timespec ts;

	ts.tv_sec = us / 1000000;
	ts.tv_nsec = (long)(us % 1000000) * 1000;
	nanosleep(&ts, NULL);
}

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int quitting(struct prod *pr)
{
	return __atomic_load_n(&pr->quit, __ATOMIC_RELAXED) != 0;
}

/* ------------------------------------------------------------------------
 * The events.
 */
TB_CATEGORY_DEFINE(cat_request, "request", 1);
TB_CATEGORY_DEFINE(cat_db, "db", 1);
TB_CATEGORY_DEFINE(cat_debug, "debug", 1);

enum stage_kind { ST_SLICE, ST_ROWS, ST_SNAPSHOT };

struct stage {
	unsigned depth;
	enum stage_kind kind;
	const char *name;
	const struct tb_category *cat;
};

static const struct stage request[] = {
	{ 0, ST_SLICE, "HandleRequest", &cat_request },
	{ 1, ST_SLICE,		"ParseRequest", &cat_request },
	{ 1, ST_SLICE,		"QueryDatabase", &cat_db },
	{ 2, ST_SLICE,			"ExecuteQuery", &cat_db },
	{ 2, ST_ROWS,			"DecodeRows", &cat_db },
	{ 1, ST_SNAPSHOT,	"Snapshot", &cat_debug },
	{ 1, ST_SLICE,		"SendResponse", &cat_request },
};

#define NSTAGES		(sizeof(request) / sizeof(request[0]))

static uint32_t fnv1a(uint32_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n--)
		h = (h ^ *b++) * 0x01000193u;
	return h;
}

/* The Snapshot's "check": FNV-1a of writer, seq (LE) and the body. */
static uint32_t body_check(uint16_t writer, uint32_t seq, const char *body,
			   size_t len)
{
	uint8_t head[8];
	unsigned i;

	for (i = 0; i < 4; i++) {
		head[i] = (uint8_t)((uint32_t)writer >> (8 * i));
		head[4 + i] = (uint8_t)(seq >> (8 * i));
	}
	return fnv1a(fnv1a(0x811c9dc5u, head, 8), body, len);
}

/* Snapshot @seq's body: @len letters that differ from seq to seq. */
static void make_body(char *body, uint16_t writer, uint32_t seq,
		      uint32_t len)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		body[i] = (char)('a' + (seq * 7u + writer * 13u + i) % 26u);
}

static uint32_t pick_size(struct writer *w)
{
	const struct options *o = &w->pr->opt;
	uint32_t span = o->max_size - o->min_size + 1;

	return o->min_size + (uint32_t)(rng_next(&w->rng) >> 33) % span;
}

/* A tagged event was tried: counted, and reported if it was lost. */
static void tagged(struct writer *w, int ret)
{
	if (ret == TB_OK) {
		w->ok++;
	} else {
		w->failed++;
		printf("fail %u %u\n", w->id, w->seq);
	}
	w->seq++;
	if (w->pr->opt.interval_us)
		sleep_us(w->pr->opt.interval_us);
}

/* Ends open slices down to @depth (an END that fails is a lost packet). */
static void end_to(struct writer *w, unsigned depth)
{
	for (; w->depth > depth; w->depth--)
		tb_ev_end(&w->ev, w->open[w->depth - 1], NULL, 0);
}

static void begin(struct writer *w, const struct stage *s)
{
	struct tb_arg a = TB_ARG_UINT("seq", w->seq);

	tagged(w, tb_ev_begin(&w->ev, s->cat, s->name, &a, 1));
	w->open[w->depth++] = s->cat;
}

static void snapshot(struct writer *w, const struct stage *s)
{
	uint32_t len = pick_size(w);
	struct tb_arg a[3];

	make_body(w->body, w->id, w->seq, len);
	a[0] = TB_ARG_UINT("seq", w->seq);
	a[1] = TB_ARG_STRN("body", w->body, len);
	a[2] = TB_ARG_UINT("check", body_check(w->id, w->seq, w->body, len));
	tagged(w, tb_ev_instant(&w->ev, s->cat, s->name, a, 3));
}

static int done(struct writer *w)
{
	return w->seq >= w->pr->opt.events || quitting(w->pr);
}

/*
 * One request, stage by stage; returns as soon as the writer is done,
 * with its slices still open (the caller ends them, or dies in them).
 */
static void handle_request(struct writer *w)
{
	unsigned i;

	for (i = 0; i < NSTAGES; i++) {
		const struct stage *s = &request[i];

		if (done(w))
			return;
		end_to(w, s->depth);
		if (s->kind == ST_SNAPSHOT) {
			snapshot(w, s);
			continue;
		}
		begin(w, s);
		if (s->kind == ST_ROWS) {
			w->rows += 1 + (rng_next(&w->rng) >> 33) % 500;
			tb_ev_counter(&w->ev, s->cat, &w->rows_track,
				      (int64_t)w->rows);
		}
	}
	if (!done(w) || w->pr->opt.die == DIE_NO)
		end_to(w, 0);
}

/*
 * Die mode's open packet, encoded here: TracePacket { timestamp,
 * sequence_flags NEEDS_INCREMENTAL_STATE (the defaults put it on the
 * writer's thread track), track_event { type INSTANT, name "Open",
 * debug_annotations { "seq": @seq }, { "body": @len letters } } }, names
 * inline.  Its size.
 */
enum {
	PB_TIMESTAMP = 8, PB_TRACK_EVENT = 11, PB_SEQUENCE_FLAGS = 13,
	PB_TE_ANNOTATIONS = 4, PB_TE_TYPE = 9, PB_TE_NAME = 23,
	PB_DA_UINT = 3, PB_DA_STRING = 6, PB_DA_NAME = 10,
	PB_TYPE_INSTANT = 3, PB_SEQ_NEEDS_STATE = 2,
};

/* A length-delimited field of @len bytes, whole. */
static size_t lsize(uint32_t field, size_t len)
{
	return tb_pb_varint_len((uint64_t)field << 3) +
	       tb_pb_varint_len(len) + len;
}

static size_t put_bytes(uint8_t *p, uint32_t field, const void *s,
			size_t len)
{
	size_t n = tb_pb_len(p, field, len);

	memcpy(p + n, s, len);
	return n + len;
}

static size_t make_open_packet(struct writer *w, uint32_t seq, uint32_t len)
{
	uint8_t *p = w->pkt;
	size_t n = 0, seq_ann, body_ann, te;

	make_body(w->body, w->id, seq, len);
	seq_ann = lsize(PB_DA_NAME, 3) + 1 + tb_pb_varint_len(seq);
	body_ann = lsize(PB_DA_NAME, 4) + lsize(PB_DA_STRING, len);
	te = 2 + lsize(PB_TE_NAME, 4) + lsize(PB_TE_ANNOTATIONS, seq_ann) +
	     lsize(PB_TE_ANNOTATIONS, body_ann);
	n += tb_pb_uint(p + n, PB_TIMESTAMP, tb_ev_now(&w->ev));
	n += tb_pb_uint(p + n, PB_SEQUENCE_FLAGS, PB_SEQ_NEEDS_STATE);
	n += tb_pb_len(p + n, PB_TRACK_EVENT, te);
	n += tb_pb_uint(p + n, PB_TE_TYPE, PB_TYPE_INSTANT);
	n += put_bytes(p + n, PB_TE_NAME, "Open", 4);
	n += tb_pb_len(p + n, PB_TE_ANNOTATIONS, seq_ann);
	n += put_bytes(p + n, PB_DA_NAME, "seq", 3);
	n += tb_pb_uint(p + n, PB_DA_UINT, seq);
	n += tb_pb_len(p + n, PB_TE_ANNOTATIONS, body_ann);
	n += put_bytes(p + n, PB_DA_NAME, "body", 4);
	n += put_bytes(p + n, PB_DA_STRING, w->body, len);
	return n;
}

/* tb_writer_open(), waiting while the ring has no room. */
static int open_waiting(struct tb_writer *tw, unsigned flags,
			struct tb_span *s)
{
	uint64_t end = now_ms() + RETRY_MS;
	int ret;

	do {
		ret = tb_writer_open(tw, 16, flags, s);
	} while ((ret == TB_FULL || ret == TB_NO_CHUNK) && now_ms() < end);
	return ret;
}

/*
 * Die mode: opens packet @seq with the raw writer and writes part of it
 * (with -l, its first chunk's worth is published first); returns with
 * the fragment open.
 */
static int open_and_leave(struct writer *w, uint32_t seq)
{
	uint32_t cs = w->pr->ring.chunk_size;
	uint32_t len = w->pr->opt.large ? cs + cs / 2 : 64;
	size_t size = make_open_packet(w, seq, len), done = 0, n;
	struct tb_span s;
	int ret;

	if (w->pr->opt.large) {
		ret = open_waiting(&w->tw, 0, &s);
		if (ret)
			return ret;
		done = (size_t)(s.end - s.begin);
		if (done > size / 2)
			done = size / 2;
		memcpy(s.begin, w->pkt, done);
		ret = tb_writer_close(&w->tw, (uint32_t)done,
				      TB_CLOSE_CONT_NEXT);
		if (ret)
			return ret;
	}
	ret = open_waiting(&w->tw, done ? TB_OPEN_CONT_PREV : 0, &s);
	if (ret)
		return ret;
	n = (size - done) / 2;
	if (n > (size_t)(s.end - s.begin))
		n = (size_t)(s.end - s.begin);
	memcpy(s.begin, w->pkt + done, n);
	return TB_OK;
}

/* The writer's tracks: its thread's, and its counter under it. */
static void make_tracks(struct writer *w)
{
	struct prod *pr = w->pr;

	w->tid = (int32_t)syscall(SYS_gettid);
	snprintf(w->name, sizeof(w->name), "writer %u", w->id);
	tb_track_thread(&w->thread_track, tb_ev_uuid((uint64_t)pr->pid,
						     w->id),
			&pr->process_track, pr->pid, w->tid, w->name);
	tb_track_counter(&w->rows_track, tb_ev_uuid((uint64_t)pr->pid,
						    0x10000u + w->id),
			 &w->thread_track, "rows decoded", TB_UNIT_COUNT);
}

/*
 * After the last event: a loss in the last writes reaches the trace only
 * if a packet follows it, which tb_ev_writer_finish() writes; on a ring
 * still full, try again for a while.
 */
static void finish(struct writer *w)
{
	uint64_t end = now_ms() + RETRY_MS;

	while (tb_ev_writer_finish(&w->ev) != TB_OK && !quitting(w->pr) &&
	       now_ms() < end)
		sleep_us(1000);
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct prod *pr = w->pr;
	const struct options *o = &pr->opt;
	int ret;

	make_tracks(w);
	if (tb_writer_init(&w->tw, &pr->ring, w->id, (uint16_t)pr->cfg.bid,
			   TB_STALL, w->scratch) != TB_OK ||
	    tb_ev_writer_init(&w->ev, &w->tw, &w->thread_track, NULL,
			      TB_EV_DEFAULTS) != TB_OK) {
		__atomic_store_n(&pr->quit, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&pr->finished, 1, __ATOMIC_RELEASE);
		return NULL;
	}
	w->tw.stall_ms = STALL_MS;
	while (!done(w))
		handle_request(w);
	if (o->die == DIE_NO)
		end_to(w, 0);
	finish(w);
	printf("writer %u tid=%d ok=%u failed=%u lost=%u\n", w->id,
	       (int)w->tid, w->ok, w->failed, w->ev.stats.lost);
	if (o->die != DIE_NO && !quitting(pr)) {
		ret = open_and_leave(w, w->seq);
		if (ret == TB_OK)
			printf("open %u %u large=%d\n", w->id, w->seq,
			       o->large);
		else
			printf("noopen %u %u %s\n", w->id, w->seq,
			       tb_strerror(ret));
		__atomic_add_fetch(&pr->finished, 1, __ATOMIC_RELEASE);
		for (;;)	/* inside the packet until the end */
			pause();
	}
	tb_writer_release(&w->tw);
	__atomic_add_fetch(&pr->finished, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* ------------------------------------------------------------------------
 * Scribble mode: random words over the control header and the state
 * words, as a buggy or hostile producer would.
 */
static uint64_t scribble(struct prod *pr)
{
	uint32_t *hdr = (uint32_t *)(void *)pr->ring.hdr;
	uint64_t rng = pr->opt.seed * 0x9e3779b97f4a7c15ull + 1, words = 0;
	uint64_t end = now_ms() + pr->opt.scribble_ms;
	uint32_t i;

	do {
		for (i = 0; i < TB_RING_HDR_SIZE / 4; i++, words++)
			__atomic_store_n(&hdr[i], (uint32_t)rng_next(&rng),
					 __ATOMIC_RELAXED);
		for (i = 0; i < pr->ring.num_chunks; i++, words++)
			__atomic_store_n(tb_ring_word(&pr->ring, i),
					 (uint32_t)rng_next(&rng),
					 __ATOMIC_RELAXED);
		sleep_us(1000);
	} while (now_ms() < end);
	return words;
}

/* ------------------------------------------------------------------------
 * Talking to the service.
 */
static int connect_to(const char *path)
{
	uint64_t end = now_ms() + CONNECT_MS;
	struct sockaddr_un sa;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "tb_producer: socket path too long\n");
		return -1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	for (;;) {
		fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -1;
		if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			return fd;
		close(fd);
		if ((errno != ENOENT && errno != ECONNREFUSED) ||
		    now_ms() >= end) {
			fprintf(stderr, "tb_producer: %s: %s\n", path,
				strerror(errno));
			return -1;
		}
		sleep_us(5000);
	}
}

static int send_type(int fd, uint32_t type, uint64_t ok, uint64_t failed)
{
	struct tbw_msg m;

	memset(&m, 0, sizeof(m));
	m.magic = TBW_MAGIC;
	m.type = type;
	m.ok = ok;
	m.failed = failed;
	return send(fd, &m, sizeof(m), MSG_NOSIGNAL) == (ssize_t)sizeof(m) ?
	       0 : -1;
}

/* Receives one message (and up to two fds) within @ms.  0 or -1. */
static int recv_msg(int fd, struct tbw_msg *m, int *fds, unsigned *nfds,
		    int ms)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(2 * sizeof(int))];
	} u;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	struct cmsghdr *c;
	struct iovec iov;
	struct msghdr mh;
	ssize_t n;

	*nfds = 0;
	if (poll(&pfd, 1, ms) != 1)
		return -1;
	memset(&mh, 0, sizeof(mh));
	iov.iov_base = m;
	iov.iov_len = sizeof(*m);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = u.buf;
	mh.msg_controllen = sizeof(u.buf);
	n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	for (c = CMSG_FIRSTHDR(&mh); n >= 0 && c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET &&
		    c->cmsg_type == SCM_RIGHTS) {
			*nfds = (unsigned)((c->cmsg_len - CMSG_LEN(0)) /
					   sizeof(int));
			if (*nfds > 2)
				*nfds = 2;	/* MSG_CTRUNC: no more */
			memcpy(fds, CMSG_DATA(c), *nfds * sizeof(int));
		}
	if (n != (ssize_t)sizeof(*m) || m->magic != TBW_MAGIC ||
	    (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		return -1;
	return 0;
}

static int run_command(const struct options *o)
{
	uint32_t type = !strcmp(o->command, "stop") ? TBW_STOP :
			!strcmp(o->command, "flush") ? TBW_FLUSH : 0;
	struct tbw_msg m;
	unsigned nfds;
	int fd, fds[2];

	if (!type) {
		fprintf(stderr, "tb_producer: unknown command %s\n",
			o->command);
		return 2;
	}
	fd = connect_to(o->sock_path);
	if (fd < 0)
		return 1;
	if (send_type(fd, type, 0, 0) || recv_msg(fd, &m, fds, &nfds, 5000) ||
	    m.type != TBW_ACK) {
		fprintf(stderr, "tb_producer: %s: no answer\n", o->command);
		close(fd);
		return 1;
	}
	close(fd);
	return 0;
}

/* Maps @fd (@len bytes, checked against its size) away from @avoid. */
static void *map_fd(int fd, size_t len, uint64_t avoid)
{
	struct stat st;
	void *m, *other;

	if (fstat(fd, &st) || (uint64_t)st.st_size < len)
		return NULL;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return NULL;
	if ((uint64_t)(uintptr_t)m != avoid)
		return m;
	/* the service's address by chance: map again while this one holds
	 * it, so the kernel must pick another place */
	other = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	munmap(m, len);
	return other == MAP_FAILED ? NULL : other;
}

/* HELLO, CONFIG, the two mappings.  0 or -1 (said why). */
static int attach(struct prod *pr)
{
	unsigned nfds = 0, i;
	int fds[2] = { -1, -1 }, ret = -1;
	struct tbw_msg *m = &pr->cfg;

	pr->sock = connect_to(pr->opt.sock_path);
	if (pr->sock < 0)
		return -1;
	if (send_type(pr->sock, TBW_HELLO, 0, 0) ||
	    recv_msg(pr->sock, m, fds, &nfds, 10000) ||
	    m->type != TBW_CONFIG || nfds != 2 || m->ring_len > SIZE_MAX ||
	    m->bell_len < sizeof(struct tb_bell) || m->bell_len > SIZE_MAX) {
		fprintf(stderr, "tb_producer: no usable answer from the "
			"service\n");
		goto out;
	}
	if (pr->opt.bid >= 0)
		m->bid = (uint32_t)pr->opt.bid;
	pr->len = (size_t)m->ring_len;
	pr->bell_len = (size_t)m->bell_len;
	pr->map = map_fd(fds[0], pr->len, m->service_addr);
	pr->bell = map_fd(fds[1], pr->bell_len, 0);
	if (!pr->map || !pr->bell) {
		fprintf(stderr, "tb_producer: cannot map the ring: %s\n",
			strerror(errno));
		goto out;
	}
	/* the header is the service's word only: validate it */
	if (tb_ring_attach(&pr->ring, pr->map, pr->len) != TB_OK) {
		fprintf(stderr, "tb_producer: the ring is not valid\n");
		goto out;
	}
	tb_ring_set_bell(&pr->ring, pr->bell);
	pr->ring_fd = fds[0];	/* open: /proc/PID/fd/N names the ring */
	fds[0] = -1;
	ret = 0;
out:
	for (i = 0; i < nfds; i++)
		if (fds[i] >= 0)
			close(fds[i]);	/* the mappings stay */
	return ret;
}

static void detach(struct prod *pr)
{
	unsigned i;

	for (i = 0; i < pr->opt.writers; i++) {
		free(pr->w[i].scratch);
		free(pr->w[i].body);
		free(pr->w[i].pkt);
	}
	if (pr->map)
		munmap(pr->map, pr->len);
	if (pr->bell)
		munmap(pr->bell, pr->bell_len);
	if (pr->sock >= 0)
		close(pr->sock);
	if (pr->ring_fd >= 0)
		close(pr->ring_fd);
}

/* Waits for the writers, watching the socket: EOF means quit. */
static void watch(struct prod *pr)
{
	struct pollfd pfd = { .fd = pr->sock, .events = POLLIN };
	char c;

	ssize_t n;

	while (__atomic_load_n(&pr->finished, __ATOMIC_ACQUIRE) <
	       pr->opt.writers) {
		if (poll(&pfd, 1, 10) != 1)
			continue;
		n = recv(pr->sock, &c, 1, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			__atomic_store_n(&pr->quit, 1, __ATOMIC_RELAXED);
			pfd.fd = -1;	/* told once is enough */
		}
	}
}

/* ------------------------------------------------------------------------
 * Options and main.
 */
static void usage(void)
{
	fprintf(stderr,
		"usage: tb_producer [-w writers] [-n events] [-s MIN:MAX] "
		"[-S seed] [-i us]\n"
		"                   [-t bid] [-d raise|spin [-l]] [-x ms] "
		"SOCKET\n"
		"       tb_producer -C stop|flush SOCKET\n"
		"  -w  writer threads (4)\n"
		"  -n  tagged events (slice begins, instants) per writer "
		"(1000)\n"
		"  -s  bytes of each Snapshot's body, MIN:MAX (8:512)\n"
		"  -S  seed for the sizes (1)\n"
		"  -i  pause after each tagged event, microseconds (0)\n"
		"  -t  target BufferID (the service's)\n"
		"  -d  then, slices still open, open one more packet and die "
		"in it: raise\n"
		"      SIGKILL, or spin until killed\n"
		"  -l  with -d: the open packet spans chunks\n"
		"  -x  then scribble over the ring's header and state words "
		"for ms\n"
		"  -C  send a command to the service instead\n");
	exit(2);
}

static unsigned long parse_ul(const char *s)
{
	char *end;
	unsigned long v = strtoul(s, &end, 0);

	if (*s == '\0' || *end)
		usage();
	return v;
}

static void parse_options(struct options *o, int argc, char **argv)
{
	unsigned long a, b;
	char *colon;
	int c;

	o->writers = 4;
	o->events = 1000;
	o->min_size = 8;
	o->max_size = 512;
	o->seed = 1;
	o->bid = -1;
	while ((c = getopt(argc, argv, "w:n:s:S:i:t:d:lx:C:h")) != -1) {
		switch (c) {
		case 'w': o->writers = (unsigned)parse_ul(optarg); break;
		case 'n': o->events = (uint32_t)parse_ul(optarg); break;
		case 's':
			colon = strchr(optarg, ':');
			if (!colon)
				usage();
			*colon = '\0';
			a = parse_ul(optarg);
			b = parse_ul(colon + 1);
			if (a > b || b > MAX_BODY)
				usage();
			o->min_size = (uint32_t)a;
			o->max_size = (uint32_t)b;
			break;
		case 'S': o->seed = parse_ul(optarg); break;
		case 'i': o->interval_us = (unsigned)parse_ul(optarg); break;
		case 't': o->bid = (int)(parse_ul(optarg) & 0xffff); break;
		case 'd':
			o->die = !strcmp(optarg, "raise") ? DIE_RAISE :
				 !strcmp(optarg, "spin") ? DIE_SPIN : DIE_NO;
			if (o->die == DIE_NO)
				usage();
			break;
		case 'l': o->large = 1; break;
		case 'x': o->scribble_ms = (unsigned)parse_ul(optarg); break;
		case 'C': o->command = optarg; break;
		default: usage();
		}
	}
	if (argc - optind != 1 || !o->writers || o->writers > MAX_WRITERS)
		usage();
	o->sock_path = argv[optind];
}

int main(int argc, char **argv)
{
	static struct prod pr;
	uint64_t ok = 0, failed = 0;
	unsigned i, started;

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse_options(&pr.opt, argc, argv);
	if (pr.opt.command)
		return run_command(&pr.opt);
	pr.sock = -1;
	pr.ring_fd = -1;
	if (attach(&pr)) {
		detach(&pr);
		return 1;
	}
	pr.pid = (int32_t)getpid();
	printf("producer pid=%d id=%u addr=%p service_addr=%#llx "
	       "chunk_size=%u num_chunks=%u ring_fd=%d\n", (int)pr.pid,
	       pr.cfg.producer_id, pr.map,
	       (unsigned long long)pr.cfg.service_addr, pr.ring.chunk_size,
	       pr.ring.num_chunks, pr.ring_fd);
	snprintf(pr.name, sizeof(pr.name), "tb_producer %u",
		 pr.cfg.producer_id);
	tb_track_process(&pr.process_track, tb_ev_uuid((uint64_t)pr.pid, 0),
			 pr.pid, pr.name);
	for (started = 0; started < pr.opt.writers; started++) {
		struct writer *w = &pr.w[started];

		w->pr = &pr;
		w->id = (uint16_t)(started + 1);	/* 0 is invalid */
		w->rng = pr.opt.seed * 0x2545f4914f6cdd1dull + w->id;
		w->scratch = malloc(pr.ring.chunk_size);
		/* a body for the Snapshots, and for the open packet */
		w->body = malloc(pr.opt.max_size + 2 * pr.ring.chunk_size);
		w->pkt = malloc(OPEN_OVERHEAD + 2 * pr.ring.chunk_size);
		if (!w->scratch || !w->body || !w->pkt ||
		    pthread_create(&w->thread, NULL, writer_main, w)) {
			fprintf(stderr, "tb_producer: cannot start writer "
				"%u\n", w->id);
			__atomic_store_n(&pr.quit, 1, __ATOMIC_RELAXED);
			break;
		}
	}
	if (started < pr.opt.writers) {
		for (i = 0; i < started; i++)
			pthread_join(pr.w[i].thread, NULL);
		detach(&pr);
		return 1;
	}
	watch(&pr);
	if (pr.opt.die != DIE_NO) {
		printf("ready\n");
		fflush(stdout);
		if (pr.opt.die == DIE_RAISE)
			raise(SIGKILL);
		for (;;)
			pause();
	}
	for (i = 0; i < pr.opt.writers; i++) {
		pthread_join(pr.w[i].thread, NULL);
		ok += pr.w[i].ok;
		failed += pr.w[i].failed;
	}
	if (pr.opt.scribble_ms)
		printf("scribbled words=%llu\n",
		       (unsigned long long)scribble(&pr));
	send_type(pr.sock, TBW_BYE, ok, failed);
	printf("done ok=%llu failed=%llu%s\n", (unsigned long long)ok,
	       (unsigned long long)failed,
	       __atomic_load_n(&pr.quit, __ATOMIC_RELAXED) ?
	       " (the service went away)" : "");
	detach(&pr);
	return 0;
}
