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
 * validates the header.  Then K writer threads each write N packets.
 *
 * Every packet is a valid TracePacket carrying only for_testing (field
 * 900, a TestEvent): str (1) is a filler of the packet's length,
 * seq_value (2) the packet's number in its writer, counter (3) the writer
 * id << 48 | filler length << 32 | FNV-1a of the filler.  A packet thus
 * describes itself: whoever decodes the trace can check it without
 * knowing how it was made.
 *
 * It reports on stdout, one line at a time (each flushed), so that a test
 * can follow it even when it is killed:
 *   producer pid=P id=I addr=A service_addr=S chunk_size=C num_chunks=N
 *   writer W ok=N failed=F retries=R     (a writer is done)
 *   fail W SEQ                           (that packet was lost)
 *   open W SEQ large=0|1                 (die mode: that packet is open)
 *   ready                                (die mode: every writer is in it)
 *   scribbled words=N                    (scribble mode)
 *   done ok=N failed=F
 *
 * Failure modes, for tests:
 *   -d raise|spin  after its packets every writer opens one more and
 *                  writes part of it; then the process raises SIGKILL on
 *                  itself (raise) or waits to be killed (spin).  With -l
 *                  that packet spans chunks and its first part is already
 *                  published.
 *   -x MS          after its packets it writes random words over its
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
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "tbpb.h"
#include "tbring.h"
#include "tb_wire.h"

#define MAX_WRITERS	1024u
#define MAX_FILLER	60000u
#define RETRY_MS	10000	/* give a packet up after this long */
#define CONNECT_MS	5000	/* the service may still be starting */

enum die_mode { DIE_NO, DIE_RAISE, DIE_SPIN };

struct options {
	unsigned writers;	/* -w */
	uint32_t packets;	/* -n: per writer */
	uint32_t min_size;	/* -s MIN:MAX filler bytes */
	uint32_t max_size;
	uint64_t seed;		/* -S */
	unsigned interval_us;	/* -i: pause between packets */
	int bid;		/* -t: BufferID, -1: the service's */
	enum die_mode die;	/* -d */
	int large;		/* -l */
	unsigned scribble_ms;	/* -x */
	const char *command;	/* -C */
	const char *sock_path;
};

struct prod;

struct writer {
	struct prod *pr;
	pthread_t thread;
	uint16_t id;
	uint8_t *scratch;
	uint8_t *pkt;
	uint64_t rng;
	uint32_t ok;
	uint32_t failed;
	uint32_t retries;
};

struct prod {
	struct options opt;
	int sock;
	struct tbw_msg cfg;
	void *map;
	size_t len;
	struct tb_bell *bell;
	size_t bell_len;
	struct tb_ring ring;
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

/* ------------------------------------------------------------------------
 * Packets: TracePacket { for_testing: TestEvent { str, seq_value,
 * counter } }.
 */
#define PB_FOR_TESTING		900u
#define PB_TEST_STR		1u
#define PB_TEST_SEQ		2u
#define PB_TEST_COUNTER		3u
#define PKT_OVERHEAD		48u	/* tags and varints, generously */

static uint32_t fnv1a(const uint8_t *p, size_t n)
{
	uint32_t h = 0x811c9dc5u;

	while (n--)
		h = (h ^ *p++) * 0x01000193u;
	return h;
}

/* Encodes packet @seq of writer @id with @len filler bytes; its size. */
static size_t make_packet(uint8_t *pkt, uint16_t id, uint32_t seq,
			  uint32_t len)
{
	uint8_t inner_head[16];
	size_t n = 0, inner, h;
	uint32_t i, sum;
	uint64_t counter;
	uint8_t *filler;

	/* the filler first, at its final place, for the checksum */
	inner = 1 + tb_pb_varint_len(len) + len;
	inner += 1 + tb_pb_varint_len(seq);
	h = tb_pb_varint_put(inner_head, (uint64_t)PB_FOR_TESTING << 3 | 2);
	/* counter's size does not depend on the checksum's value: pad it */
	inner += 1 + 10;
	h += tb_pb_varint_put(inner_head + h, inner);
	memcpy(pkt, inner_head, h);
	n = h;
	n += tb_pb_varint_put(pkt + n, PB_TEST_STR << 3 | 2);
	n += tb_pb_varint_put(pkt + n, len);
	filler = pkt + n;
	for (i = 0; i < len; i++)
		filler[i] = (uint8_t)('a' + (seq * 7u + id * 13u + i) % 26u);
	n += len;
	sum = fnv1a(filler, len);
	counter = (uint64_t)id << 48 | (uint64_t)(len & 0xffff) << 32 | sum;
	n += tb_pb_varint_put(pkt + n, PB_TEST_SEQ << 3);
	n += tb_pb_varint_put(pkt + n, seq);
	n += tb_pb_varint_put(pkt + n, PB_TEST_COUNTER << 3);
	/* a ten-byte varint whatever the value: high groups may be 0x80 */
	for (i = 0; i < 9; i++)
		pkt[n++] = (uint8_t)(counter >> (7 * i) | 0x80);
	pkt[n++] = (uint8_t)(counter >> 63);
	return n;
}

static uint32_t pick_size(struct writer *w)
{
	const struct options *o = &w->pr->opt;
	uint32_t span = o->max_size - o->min_size + 1;

	return o->min_size + (uint32_t)(rng_next(&w->rng) >> 33) % span;
}

static int quitting(struct prod *pr)
{
	return __atomic_load_n(&pr->quit, __ATOMIC_RELAXED) != 0;
}

/* ------------------------------------------------------------------------
 * Writers.
 */

/* Writes one packet, retrying while the ring is full.  TB_OK or not. */
static int write_one(struct writer *w, struct tb_writer *tw, size_t size)
{
	uint64_t end = now_ms() + RETRY_MS;
	int ret;

	for (;;) {
		ret = tb_writer_write_packet(tw, w->pkt, size);
		if (ret == TB_OK || ret == TB_TOO_LARGE || ret == TB_EINVAL ||
		    quitting(w->pr) || now_ms() >= end)
			return ret;
		w->retries++;
		sched_yield();
	}
}

/*
 * Die mode: opens packet @seq and writes part of it (with -l, its first
 * chunk's worth is published first); returns with the fragment open.
 */
static int open_and_leave(struct writer *w, struct tb_writer *tw,
			  uint32_t seq)
{
	const struct options *o = &w->pr->opt;
	uint32_t cs = w->pr->ring.chunk_size;
	uint32_t len = o->large ? cs + cs / 2 : 64;
	size_t size = make_packet(w->pkt, w->id, seq, len), done = 0, n;
	uint64_t end = now_ms() + RETRY_MS;
	struct tb_span s;
	int ret;

	if (o->large) {
		do {
			ret = tb_writer_open(tw, 16, 0, &s);
		} while ((ret == TB_FULL || ret == TB_NO_CHUNK) &&
			 now_ms() < end);
		if (ret)
			return ret;
		done = (size_t)(s.end - s.begin);
		if (done > size / 2)
			done = size / 2;
		memcpy(s.begin, w->pkt, done);
		ret = tb_writer_close(tw, (uint32_t)done, TB_CLOSE_CONT_NEXT);
		if (ret)
			return ret;
	}
	do {
		ret = tb_writer_open(tw, 16, done ? TB_OPEN_CONT_PREV : 0, &s);
	} while ((ret == TB_FULL || ret == TB_NO_CHUNK) && now_ms() < end);
	if (ret)
		return ret;
	n = (size - done) / 2;
	if (n > (size_t)(s.end - s.begin))
		n = (size_t)(s.end - s.begin);
	memcpy(s.begin, w->pkt + done, n);
	return TB_OK;
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct prod *pr = w->pr;
	const struct options *o = &pr->opt;
	struct tb_writer tw;
	uint32_t seq;
	int ret;

	if (tb_writer_init(&tw, &pr->ring, w->id, (uint16_t)pr->cfg.bid,
			   TB_STALL, w->scratch) != TB_OK) {
		__atomic_store_n(&pr->quit, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&pr->finished, 1, __ATOMIC_RELEASE);
		return NULL;
	}
	tw.stall_ms = 2000;
	for (seq = 0; seq < o->packets && !quitting(pr); seq++) {
		size_t size = make_packet(w->pkt, w->id, seq, pick_size(w));

		if (write_one(w, &tw, size) == TB_OK) {
			w->ok++;
		} else {
			w->failed++;
			printf("fail %u %u\n", w->id, seq);
		}
		if (o->interval_us)
			sleep_us(o->interval_us);
	}
	printf("writer %u ok=%u failed=%u retries=%u\n", w->id, w->ok,
	       w->failed, w->retries);
	if (o->die != DIE_NO && !quitting(pr)) {
		ret = open_and_leave(w, &tw, seq);
		if (ret == TB_OK)
			printf("open %u %u large=%d\n", w->id, seq, o->large);
		else
			printf("noopen %u %u %s\n", w->id, seq,
			       tb_strerror(ret));
		__atomic_add_fetch(&pr->finished, 1, __ATOMIC_RELEASE);
		for (;;)	/* inside the packet until the end */
			pause();
	}
	tb_writer_release(&tw);
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
	ret = 0;
out:
	for (i = 0; i < nfds; i++)
		close(fds[i]);	/* the mappings stay */
	return ret;
}

static void detach(struct prod *pr)
{
	unsigned i;

	for (i = 0; i < pr->opt.writers; i++) {
		free(pr->w[i].scratch);
		free(pr->w[i].pkt);
	}
	if (pr->map)
		munmap(pr->map, pr->len);
	if (pr->bell)
		munmap(pr->bell, pr->bell_len);
	if (pr->sock >= 0)
		close(pr->sock);
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
		"usage: tb_producer [-w writers] [-n packets] [-s MIN:MAX] "
		"[-S seed] [-i us]\n"
		"                   [-t bid] [-d raise|spin [-l]] [-x ms] "
		"SOCKET\n"
		"       tb_producer -C stop|flush SOCKET\n"
		"  -w  writer threads (4)\n"
		"  -n  packets per writer (1000)\n"
		"  -s  filler bytes per packet, MIN:MAX (8:512)\n"
		"  -S  seed for the sizes (1)\n"
		"  -i  pause between packets, microseconds (0)\n"
		"  -t  target BufferID (the service's)\n"
		"  -d  then open one more packet and die in it: raise "
		"SIGKILL, or spin until killed\n"
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
	o->packets = 1000;
	o->min_size = 8;
	o->max_size = 512;
	o->seed = 1;
	o->bid = -1;
	while ((c = getopt(argc, argv, "w:n:s:S:i:t:d:lx:C:h")) != -1) {
		switch (c) {
		case 'w': o->writers = (unsigned)parse_ul(optarg); break;
		case 'n': o->packets = (uint32_t)parse_ul(optarg); break;
		case 's':
			colon = strchr(optarg, ':');
			if (!colon)
				usage();
			*colon = '\0';
			a = parse_ul(optarg);
			b = parse_ul(colon + 1);
			if (a > b || b > MAX_FILLER)
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
	if (attach(&pr)) {
		detach(&pr);
		return 1;
	}
	printf("producer pid=%d id=%u addr=%p service_addr=%#llx "
	       "chunk_size=%u num_chunks=%u\n", (int)getpid(),
	       pr.cfg.producer_id, pr.map,
	       (unsigned long long)pr.cfg.service_addr, pr.ring.chunk_size,
	       pr.ring.num_chunks);
	for (started = 0; started < pr.opt.writers; started++) {
		struct writer *w = &pr.w[started];

		w->pr = &pr;
		w->id = (uint16_t)(started + 1);	/* 0 is invalid */
		w->rng = pr.opt.seed * 0x2545f4914f6cdd1dull + w->id;
		w->scratch = malloc(pr.ring.chunk_size);
		w->pkt = malloc(pr.opt.max_size + PKT_OVERHEAD +
				2 * pr.ring.chunk_size);
		if (!w->scratch || !w->pkt ||
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
