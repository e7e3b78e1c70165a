/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * examples/tb_service.c - a tracing service for producer processes.
 *
 *   ./build/tb_service [options] SOCKET TRACE
 *   ./build/tb_producer -w 4 -n 1000 SOCKET      (as many as you like)
 *   kill -TERM <service>   or   ./build/tb_producer -C stop SOCKET
 *
 * The service listens on the unix socket SOCKET (SOCK_SEQPACKET).  For
 * each producer that connects it creates a ring in a sealed memfd
 * (tb_ring_init()) and passes the memfd over the socket (SCM_RIGHTS)
 * together with one doorbell memfd that every ring rings
 * (tb_ring_set_bell() on both sides), so one thread can sleep on all of
 * them.  The producer's identity comes from SO_PEERCRED, never from the
 * producer: its pid and uid become the trusted fields of its packets, and
 * it gets its own producer id, hence its own trusted_packet_sequence_id
 * per writer.
 *
 * One service thread runs tb_service_poll() over the bridges of every
 * connected ring (the arrays are ours; they grow as producers come and
 * shrink as they go) and writes the central buffer to TRACE every period
 * (long-trace mode).  The main thread accepts connections and handles
 * messages.  When a producer's connection ends the service thread scrapes
 * its ring one last time, counts the chunks its writers still held (each
 * one an open packet that died with the process) and lets the ring go.
 * A ring that breaks the protocol is stopped; the others carry on.
 *
 * On SIGTERM, SIGINT or a STOP message it flushes every ring, writes the
 * trace, prints a summary (one line per producer, with the packets that
 * reached the trace, taken from the file itself) and exits 0.
 *
 * Every ring's memfd is sealed against shrinking: a producer that
 * truncates it would otherwise kill the service with SIGBUS.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "tbservice.h"
#include "tb_wire.h"

#define MAX_PRODUCERS	65535u	/* producer ids are 16 bits, 0 unused */
#define MAX_LIVE	4096u	/* producers served at a time */

struct options {
	uint32_t chunk_size;	/* -c */
	uint32_t num_chunks;	/* -n */
	size_t buf_size;	/* -b */
	enum tb_buf_policy policy;	/* -d: discard, default ring */
	uint32_t period_ms;	/* -p: long-trace period, 0: at the end */
	uint32_t wait_ms;	/* -W: longest sleep on the doorbell */
	int verbose;		/* -v */
	const char *sock_path;
	const char *trace_path;
};

enum pstate { P_NEW, P_LIVE, P_RETIRED };

/* One connected (or departed) producer. */
struct producer {
	uint16_t id;
	int32_t pid;		/* SO_PEERCRED */
	uint32_t uid;
	/* the mapping and its reader, the service thread's once adopted */
	void *map;
	size_t len;
	int ring_fd;		/* kept open: tbtrace ring /proc/PID/fd/N */
	struct tb_ring ring;
	uint8_t *scratch;
	struct tb_bridge br;
	unsigned handle;	/* in the service, while live */
	/* under svc.lock */
	enum pstate state;
	int gone;		/* its connection ended */
	int said_bye;
	uint64_t bye_ok;
	uint64_t bye_failed;
	/* the service thread's */
	int error;		/* the ring's protocol error, latched */
	int scanned;		/* held chunks were counted at retire */
	uint32_t held;		/* chunks its writers never let go */
	uint64_t stat[TB_BS_MAX];
	struct tb_ring_stats rs;
	/* from the trace file, at the end */
	uint64_t packets;
	uint64_t lossy;
	uint64_t loss_bits;
};

/* One client connection, the main thread's. */
struct conn {
	int fd;
	struct producer *p;	/* NULL until it said HELLO */
};

struct svc {
	struct options opt;
	int lfd;		/* listening socket */
	int sfd;		/* signalfd: SIGTERM, SIGINT */
	int bell_fd;
	struct tb_bell *bell;
	size_t bell_len;
	struct tb_buf *buf;
	struct tb_buf *bufs[1];	/* by BufferID */
	int trace;		/* the trace file's descriptor, + 1 */
	struct tb_trace_out out;
	struct tb_service s;
	pthread_t thread;
	pthread_mutex_t lock;
	uint32_t changes;	/* atomic: the registry changed */
	uint32_t stop;		/* atomic: main_loop() is done */
	/* every producer ever connected, under lock */
	struct producer **all;
	unsigned nall, capall;
	uint32_t next_id;
	/* the service thread's: the rings it serves, by service handle */
	struct tb_service_slot *slots;	/* the service's slot table */
	struct producer **live;
	uint64_t *lost;		/* the service's "events lost" samples */
	uint64_t undecodable;	/* trace packets that are not protobuf */
	/* the main thread's */
	struct conn *conns;
	unsigned nconns, capconns;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p) {
		fprintf(stderr, "tb_service: out of memory\n");
		exit(1);
	}
	return p;
}

/* ------------------------------------------------------------------------
 * The service thread.
 */
static void on_ring_error(void *ctx, unsigned ring, int err)
{
	struct svc *v = ctx;
	struct producer *p = v->live[ring];

	p->error = err;
	printf("tb_service: producer %u (pid %d): ring stopped: %s\n",
	       p->id, (int)p->pid, tb_strerror(err));
}

static void release(struct producer *p)
{
	tb_bridge_destroy(&p->br);
	munmap(p->map, p->len);
	p->map = NULL;
	if (p->ring_fd >= 0)
		close(p->ring_fd);
	p->ring_fd = -1;
	free(p->scratch);
	p->scratch = NULL;
}

/* Serves a new producer's ring; false when the service is full. */
static bool adopt(struct svc *v, struct producer *p)
{
	int ret = tb_service_add(&v->s, &p->br, &p->handle);

	if (ret) {
		printf("tb_service: producer %u (pid %d) not served: %s\n",
		       p->id, (int)p->pid, tb_strerror(ret));
		release(p);
		return false;
	}
	v->live[p->handle] = p;
	return true;
}

/*
 * The producer is gone: take what it published (a scrape, to the end of
 * what it reserved), count the chunks its writers still held - each one a
 * packet that died open - and let the ring go.
 */
static void retire(struct svc *v, struct producer *p)
{
	/* takes what it published; a protocol error shows in on_ring_error */
	tb_service_remove(&v->s, p->handle);
	v->live[p->handle] = NULL;
	tb_ring_stats(&p->ring, &p->rs);
	if (!p->br.error) {
		/* nobody is left to acknowledge a scrape or close a chunk */
		p->held = p->rs.states[TB_ACQUIRED] + p->rs.states[TB_REWRITE];
		p->scanned = 1;
	}
	memcpy(p->stat, p->br.stat, sizeof(p->stat));
	/* the trace says how it ended: the checker explains its open
	 * slices by a death, and the UI shows it on the service's track */
	tb_service_record_ring(&v->s, &p->br, p->said_bye ?
			       TB_TRACE_END_CLEAN : TB_TRACE_END_DIED,
			       p->held);
	release(p);
	if (v->opt.verbose)
		printf("tb_service: producer %u (pid %d) left: %s, %u chunks "
		       "held\n", p->id, (int)p->pid,
		       p->said_bye ? "clean" : "died", p->held);
}

/* Takes new producers in and departed ones out, between polls. */
static void sync_registry(struct svc *v)
{
	unsigned i;

	if (!__atomic_exchange_n(&v->changes, 0, __ATOMIC_ACQ_REL))
		return;
	pthread_mutex_lock(&v->lock);
	for (i = 0; i < v->nall; i++)
		if (v->all[i]->state == P_NEW)
			v->all[i]->state = adopt(v, v->all[i]) ? P_LIVE :
								 P_RETIRED;
	pthread_mutex_unlock(&v->lock);
	for (i = 0; i < MAX_LIVE; i++) {
		struct producer *p = v->live[i];
		int gone;

		if (!p)
			continue;
		pthread_mutex_lock(&v->lock);
		gone = p->gone;
		pthread_mutex_unlock(&v->lock);
		if (!gone)
			continue;
		retire(v, p);
		pthread_mutex_lock(&v->lock);
		p->state = P_RETIRED;
		pthread_mutex_unlock(&v->lock);
	}
}

/*
 * Polls until stop.  Late arrivals and departures are taken before the
 * last pass, which flushes, writes the buffers and ends the trace with
 * the rings' records and the TraceStats packet.
 */
static void *service_main(void *arg)
{
	struct svc *v = arg;

	for (;;) {
		/*
		 * The stop is this thread's to make, after a sync that sees
		 * every departure main_loop() took before it asked: stopped
		 * from the main thread, a pass could see the stop before the
		 * registry saw a producer's bye, and its summary said
		 * "connected".  Acquire: pairs with the release in main().
		 */
		if (__atomic_load_n(&v->stop, __ATOMIC_ACQUIRE)) {
			__atomic_store_n(&v->changes, 1, __ATOMIC_RELAXED);
			sync_registry(v);
			tb_service_stop(&v->s);	/* the last pass */
		}
		/* sync_registry()'s registry only: no ring data */
		sync_registry(v);
		if (!tb_service_poll(&v->s, now_ms()))
			break;
	}
	return NULL;
}

/* The trace clock: CLOCK_BOOTTIME, as the event layer's default. */
static uint64_t boottime_ns(void *ctx)
{
	struct timespec ts;

	(void)ctx;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------------
 * Producers arrive (main thread).
 */
static int make_memfd(const char *name, size_t len)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)len) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
		  F_SEAL_SEAL)) {
		close(fd);
		return -1;
	}
	return fd;
}

static int send_msg(int fd, const struct tbw_msg *m, const int *fds,
		    unsigned nfds)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(2 * sizeof(int))];
	} u;
	struct iovec iov;
	struct msghdr mh;

	memset(&mh, 0, sizeof(mh));
	iov.iov_base = (void *)m;
	iov.iov_len = sizeof(*m);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (nfds) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		u.h.cmsg_level = SOL_SOCKET;
		u.h.cmsg_type = SCM_RIGHTS;
		u.h.cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(&u.h), fds, nfds * sizeof(int));
	}
	return sendmsg(fd, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof(*m) ? 0 : -1;
}

static void reply(int fd, uint32_t type)
{
	struct tbw_msg m;

	memset(&m, 0, sizeof(m));
	m.magic = TBW_MAGIC;
	m.type = type;
	send_msg(fd, &m, NULL, 0);
}

/* A HELLO: a ring, a bridge, the fds over the socket.  NULL: refused. */
static struct producer *producer_new(struct svc *v, int fd)
{
	const struct options *o = &v->opt;
	struct producer *p;
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	struct tb_bridge_config bc;
	struct tbw_msg m;
	int rfd, fds[2];

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) ||
	    clen != sizeof(cred)) {
		perror("tb_service: SO_PEERCRED");
		return NULL;
	}
	if (v->next_id > MAX_PRODUCERS) {
		fprintf(stderr, "tb_service: producer ids exhausted\n");
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = cred.pid;
	p->uid = cred.uid;
	p->ring_fd = -1;
	p->len = tb_ring_size(o->chunk_size, o->num_chunks);
	p->scratch = malloc(o->chunk_size);
	rfd = make_memfd("tb_ring", p->len);
	if (!p->scratch || rfd < 0)
		goto fail;
	p->map = mmap(NULL, p->len, PROT_READ | PROT_WRITE, MAP_SHARED, rfd,
		      0);
	if (p->map == MAP_FAILED) {
		p->map = NULL;
		goto fail;
	}
	/* a fresh memfd reads as zeros, which is what init wants */
	if (tb_ring_init(&p->ring, p->map, p->len, o->chunk_size,
			 o->num_chunks) != TB_OK)
		goto fail;
	tb_ring_set_bell(&p->ring, v->bell);
	p->id = (uint16_t)v->next_id;
	memset(&bc, 0, sizeof(bc));
	bc.ring = &p->ring;
	bc.scratch = p->scratch;
	bc.producer_id = p->id;
	bc.ident.uid = p->uid;
	bc.ident.pid = p->pid;
	bc.bufs = v->bufs;
	bc.nbufs = 1;
	if (tb_bridge_init(&p->br, &bc) != TB_OK)
		goto fail;
	memset(&m, 0, sizeof(m));
	m.magic = TBW_MAGIC;
	m.type = TBW_CONFIG;
	m.producer_id = p->id;
	m.bid = 0;
	m.chunk_size = o->chunk_size;
	m.num_chunks = o->num_chunks;
	m.ring_len = p->len;
	m.bell_len = v->bell_len;
	m.service_addr = (uint64_t)(uintptr_t)p->map;
	fds[0] = rfd;
	fds[1] = v->bell_fd;
	if (send_msg(fd, &m, fds, 2))
		goto fail;
	p->ring_fd = rfd;	/* open for tbtrace ring /proc/PID/fd/N */
	v->next_id++;
	pthread_mutex_lock(&v->lock);
	if (v->nall == v->capall) {
		v->capall = v->capall ? 2 * v->capall : 16;
		v->all = xrealloc(v->all, v->capall * sizeof(*v->all));
	}
	v->all[v->nall++] = p;
	p->state = P_NEW;
	pthread_mutex_unlock(&v->lock);
	__atomic_store_n(&v->changes, 1, __ATOMIC_RELEASE);
	tb_bell_ring(v->bell);
	if (v->opt.verbose)
		printf("tb_service: producer %u: pid %d uid %u, ring of %u x "
		       "%u at %p, ring_fd=%d (tbtrace ring /proc/%d/fd/%d)\n",
		       p->id, (int)p->pid, (unsigned)p->uid, o->num_chunks,
		       o->chunk_size, p->map, rfd, (int)getpid(), rfd);
	return p;
fail:
	fprintf(stderr, "tb_service: cannot set up a ring for pid %d: %s\n",
		(int)cred.pid, strerror(errno));
	if (rfd >= 0)
		close(rfd);
	if (p->map)
		munmap(p->map, p->len);
	free(p->scratch);
	free(p);
	return NULL;
}

static void conn_add(struct svc *v, int fd)
{
	if (v->nconns == v->capconns) {
		v->capconns = v->capconns ? 2 * v->capconns : 16;
		v->conns = xrealloc(v->conns,
				    v->capconns * sizeof(*v->conns));
	}
	v->conns[v->nconns].fd = fd;
	v->conns[v->nconns].p = NULL;
	v->nconns++;
}

/* Ends connection @i; a producer's ring is retired by the service. */
static void conn_close(struct svc *v, unsigned i)
{
	struct producer *p = v->conns[i].p;

	if (p) {
		pthread_mutex_lock(&v->lock);
		p->gone = 1;
		pthread_mutex_unlock(&v->lock);
		__atomic_store_n(&v->changes, 1, __ATOMIC_RELEASE);
		tb_bell_ring(v->bell);
	}
	close(v->conns[i].fd);
	v->conns[i] = v->conns[--v->nconns];
}

/* Handles what connection @i sent.  Returns 1 for STOP. */
static int conn_read(struct svc *v, unsigned i)
{
	struct conn *c = &v->conns[i];
	struct tbw_msg m;
	ssize_t n = recv(c->fd, &m, sizeof(m), MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n != (ssize_t)sizeof(m) || m.magic != TBW_MAGIC) {
		conn_close(v, i);	/* EOF, error or garbage */
		return 0;
	}
	switch (m.type) {
	case TBW_HELLO:
		if (!c->p)
			c->p = producer_new(v, c->fd);
		if (!c->p)
			conn_close(v, i);
		break;
	case TBW_BYE:
		if (c->p) {
			pthread_mutex_lock(&v->lock);
			c->p->said_bye = 1;
			c->p->bye_ok = m.ok;
			c->p->bye_failed = m.failed;
			pthread_mutex_unlock(&v->lock);
		}
		break;
	case TBW_FLUSH:
		tb_service_request_flush(&v->s);
		reply(c->fd, TBW_ACK);
		break;
	case TBW_STOP:
		reply(c->fd, TBW_ACK);
		return 1;
	default:
		conn_close(v, i);
	}
	return 0;
}

/*
 * Accepts connections and messages until a signal or STOP; then handles
 * what is already queued (a producer that exited just before the stop
 * has its end of file waiting) without accepting anyone new, so that its
 * ring is retired and summarized as such.
 */
static void main_loop(struct svc *v)
{
	struct pollfd *pf = NULL;
	unsigned cap = 0, i, n, settle = 0;
	int ready;

	for (;;) {
		if (cap < v->nconns + 2) {
			cap = 2 * (v->nconns + 2);
			pf = xrealloc(pf, cap * sizeof(*pf));
		}
		/* settling: the signal and the listener are ignored */
		pf[0].fd = settle ? -1 : v->sfd;
		pf[1].fd = settle ? -1 : v->lfd;
		for (i = 0; i < v->nconns; i++)
			pf[2 + i].fd = v->conns[i].fd;
		n = v->nconns + 2;
		for (i = 0; i < n; i++) {
			pf[i].events = POLLIN;
			pf[i].revents = 0;
		}
		ready = poll(pf, n, settle ? 0 : -1);
		if (ready < 0 && errno == EINTR)
			continue;
		if (ready < 0) {
			perror("tb_service: poll");
			break;
		}
		if (settle && (!ready || ++settle > 64))
			break;
		if (pf[0].revents) {
			struct signalfd_siginfo si;

			if (read(v->sfd, &si, sizeof(si)) == sizeof(si))
				printf("tb_service: %s: stopping\n",
				       strsignal((int)si.ssi_signo));
			settle = 1;
		}
		/* from the end: conn_close() moves the last one to i */
		for (i = n - 1; i >= 2; i--)
			if (pf[i].revents && conn_read(v, i - 2) && !settle) {
				printf("tb_service: STOP: stopping\n");
				settle = 1;
			}
		if (pf[1].revents) {
			int fd = accept4(v->lfd, NULL, NULL, SOCK_CLOEXEC);

			if (fd >= 0)
				conn_add(v, fd);
		}
	}
	free(pf);
}

/* ------------------------------------------------------------------------
 * The summary: what reached the trace file, per producer, read back from
 * the file (Trace.packet = field 1; in each TracePacket the service's
 * trusted_packet_sequence_id 10, previous_packet_dropped 42).
 */
static int pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	unsigned shift;

	*v = 0;
	for (shift = 0; *p < end && shift < 64; shift += 7) {
		uint8_t b = *(*p)++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
	}
	return -1;
}

/* Next field; fixed and length-delimited ones: @data, @v bytes. */
static int pb_field(const uint8_t **p, const uint8_t *end, uint32_t *num,
		    unsigned *type, uint64_t *v, const uint8_t **data)
{
	uint64_t key;

	if (pb_varint(p, end, &key))
		return -1;
	*num = (uint32_t)(key >> 3);
	*type = (unsigned)(key & 7);
	switch (*type) {
	case 0:
		return pb_varint(p, end, v);
	case 1:
	case 5:
		*v = *type == 1 ? 8 : 4;
		break;
	case 2:
		if (pb_varint(p, end, v))
			return -1;
		break;
	default:
		return -1;
	}
	if (*v > (uint64_t)(end - *p))
		return -1;
	*data = *p;
	*p += *v;
	return 0;
}

/* Ids are handed out in order from 1, and all[] is in that order. */
static struct producer *find_producer(struct svc *v, uint32_t id)
{
	return id && id <= v->nall && v->all[id - 1]->id == id ?
	       v->all[id - 1] : NULL;
}

static void account_packet(struct svc *v, const uint8_t *p,
			   const uint8_t *end)
{
	uint64_t seq_id = 0, dropped = 0, val;
	const uint8_t *data;
	struct producer *pr;
	uint32_t num;
	unsigned type;

	while (p < end) {
		if (pb_field(&p, end, &num, &type, &val, &data)) {
			v->undecodable++;
			return;
		}
		if (type == 0 && num == TB_PB_TRUSTED_SEQ_ID)
			seq_id = val;
		else if (type == 0 && num == TB_PB_PREVIOUS_DROPPED)
			dropped = val;
	}
	pr = find_producer(v, (uint32_t)(seq_id >> 16));
	if (!pr)
		return;
	pr->packets++;
	if (dropped) {
		pr->lossy++;
		pr->loss_bits |= dropped;
	}
}

static void scan_trace(struct svc *v)
{
	const uint8_t *p, *end, *data;
	struct stat st;
	uint64_t len;
	uint32_t num;
	unsigned type;
	void *map;
	int fd = open(v->opt.trace_path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) || !st.st_size) {
		if (fd >= 0)
			close(fd);
		return;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return;
	p = map;
	end = p + st.st_size;
	while (p < end) {
		if (pb_field(&p, end, &num, &type, &len, &data) || num != 1 ||
		    type != 2) {
			v->undecodable++;
			break;
		}
		account_packet(v, data, data + len);
	}
	munmap(map, (size_t)st.st_size);
}

static void summary(struct svc *v)
{
	const struct tb_buf_stats *bs = tb_buf_stats(v->buf);
	struct tb_service_stats st;
	unsigned i;

	scan_trace(v);
	tb_service_stats(&v->s, &st);
	printf("tb_service: %u producers, %llu packets (%llu bytes, %llu "
	       "with loss) in %s; %u rings stopped; central buffer: %llu "
	       "chunks, %llu overwritten, %llu abi violations; %llu "
	       "undecodable\n", v->nall, (unsigned long long)v->out.packets,
	       (unsigned long long)v->out.bytes,
	       (unsigned long long)v->out.lossy_packets, v->opt.trace_path,
	       st.stopped_rings + st.pinned_rings,
	       (unsigned long long)bs->chunks_written,
	       (unsigned long long)bs->chunks_overwritten,
	       (unsigned long long)bs->abi_violations,
	       (unsigned long long)v->undecodable);
	for (i = 0; i < v->nall; i++) {
		struct producer *p = v->all[i];
		char held[16];

		if (p->scanned)
			snprintf(held, sizeof(held), "%u", p->held);
		else
			snprintf(held, sizeof(held), "-");
		printf("producer id=%u pid=%d uid=%u packets=%llu lossy=%llu "
		       "loss_bits=%#llx open_at_exit=%s exit=%s reported=%llu"
		       " failed=%llu ring=%s chunks=%llu bad_target=%llu "
		       "rejected=%llu loss_flags=%llu\n",
		       p->id, (int)p->pid, (unsigned)p->uid,
		       (unsigned long long)p->packets,
		       (unsigned long long)p->lossy,
		       (unsigned long long)p->loss_bits, held,
		       p->state != P_RETIRED ? "connected" :
		       p->said_bye ? "clean" : "died",
		       (unsigned long long)p->bye_ok,
		       (unsigned long long)p->bye_failed,
		       p->error ? "protocol-error" : "ok",
		       (unsigned long long)p->stat[TB_BS_CHUNKS],
		       (unsigned long long)p->stat[TB_BS_BAD_TARGET],
		       (unsigned long long)p->stat[TB_BS_REJECTED],
		       (unsigned long long)p->stat[TB_BS_LOSS_FLAGS]);
	}
}

/* ------------------------------------------------------------------------
 * Set-up and tear-down.
 */
/*
 * The trace writer's vectored output: its pieces straight to the file,
 * no stdio buffer between; a short write or EINTR is the writer's to
 * resume (tbtrace.h).
 */
static long trace_writev(void *ctx, const struct tb_trace_iov *v, unsigned n)
{
	struct iovec iov[TB_TRACE_IOV_MAX];
	unsigned i;
	ssize_t r;

	for (i = 0; i < n; i++) {
		iov[i].iov_base = (void *)(uintptr_t)v[i].base;
		iov[i].iov_len = v[i].len;
	}
	r = writev(*(int *)ctx - 1, iov, (int)n);
	return r < 0 ? (errno == EINTR ? 0 : -1) : (long)r;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: tb_service [-c chunk_size] [-n num_chunks] "
		"[-b buffer_bytes[K|M]]\n"
		"                  [-d] [-p period_ms] [-W wait_ms] [-v] "
		"SOCKET TRACE\n"
		"  -c  ring chunk size, a power of two in [256, 32768] "
		"(4096)\n"
		"  -n  chunks per ring, a power of two (64)\n"
		"  -b  central buffer size (16M)\n"
		"  -d  discard when the central buffer is full (default: "
		"overwrite the oldest)\n"
		"  -p  long-trace mode: write the buffer every period_ms "
		"(250); 0: at the end\n"
		"  -W  longest sleep on the doorbell (100 ms)\n"
		"  -v  say when producers come and go (and each ring's fd, "
		"for tbtrace ring)\n"
		"Stops on SIGTERM, SIGINT or 'tb_producer -C stop SOCKET'.\n");
	exit(2);
}

static size_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	if (*end || v > SIZE_MAX)
		usage();
	return (size_t)v;
}

static void parse_options(struct options *o, int argc, char **argv)
{
	int c;

	o->chunk_size = 4096;
	o->num_chunks = 64;
	o->buf_size = 16u << 20;
	o->policy = TB_BUF_RING_BUFFER;
	o->period_ms = 250;
	o->wait_ms = 100;
	while ((c = getopt(argc, argv, "c:n:b:dp:W:vh")) != -1) {
		switch (c) {
		case 'c': o->chunk_size = (uint32_t)parse_size(optarg); break;
		case 'n': o->num_chunks = (uint32_t)parse_size(optarg); break;
		case 'b': o->buf_size = parse_size(optarg); break;
		case 'd': o->policy = TB_BUF_DISCARD; break;
		case 'p': o->period_ms = (uint32_t)parse_size(optarg); break;
		case 'W': o->wait_ms = (uint32_t)parse_size(optarg); break;
		case 'v': o->verbose = 1; break;
		default: usage();
		}
	}
	if (argc - optind != 2 ||
	    !tb_ring_size(o->chunk_size, o->num_chunks) || !o->wait_ms)
		usage();
	o->sock_path = argv[optind];
	o->trace_path = argv[optind + 1];
}

static int listen_on(const char *path)
{
	struct sockaddr_un sa;
	struct stat st;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "tb_service: socket path too long: %s\n",
			path);
		return -1;
	}
	/* a socket left by an earlier run, never anything else */
	if (!lstat(path, &st) && S_ISSOCK(st.st_mode))
		unlink(path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 64)) {
		close(fd);
		return -1;
	}
	return fd;
}

static int setup(struct svc *v)
{
	const struct options *o = &v->opt;
	struct tb_service_config sc;
	sigset_t set;
	int ret;

	v->lfd = v->sfd = v->bell_fd = -1;
	v->next_id = 1;
	pthread_mutex_init(&v->lock, NULL);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	/* blocked here, before the service thread inherits the mask */
	if (pthread_sigmask(SIG_BLOCK, &set, NULL) ||
	    (v->sfd = signalfd(-1, &set, SFD_CLOEXEC)) < 0) {
		perror("tb_service: signalfd");
		return -1;
	}
	v->bell_len = (size_t)sysconf(_SC_PAGESIZE);
	v->bell_fd = make_memfd("tb_bell", v->bell_len);
	if (v->bell_fd < 0) {
		perror("tb_service: doorbell memfd");
		return -1;
	}
	v->bell = mmap(NULL, v->bell_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       v->bell_fd, 0);
	if (v->bell == MAP_FAILED) {
		v->bell = NULL;
		perror("tb_service: doorbell mmap");
		return -1;
	}
	ret = tb_buf_new(&v->buf, o->buf_size, o->policy, NULL, NULL);
	if (ret) {
		fprintf(stderr, "tb_service: cannot create a %zu-byte "
			"buffer: %s\n", o->buf_size, tb_strerror(ret));
		return -1;
	}
	v->bufs[0] = v->buf;
	v->trace = open(o->trace_path, O_WRONLY | O_CREAT | O_TRUNC, 0666) + 1;
	if (!v->trace) {
		fprintf(stderr, "tb_service: %s: %s\n", o->trace_path,
			strerror(errno));
		return -1;
	}
	v->out.writev = trace_writev;
	v->out.ctx = &v->trace;
	v->slots = calloc(MAX_LIVE, sizeof(*v->slots));
	v->live = calloc(MAX_LIVE, sizeof(*v->live));
	v->lost = calloc(MAX_LIVE, sizeof(*v->lost));
	if (!v->slots || !v->live || !v->lost)
		return -1;
	memset(&sc, 0, sizeof(sc));
	sc.bell = v->bell;
	sc.slots = v->slots;
	sc.max_rings = MAX_LIVE;
	sc.bufs = v->bufs;
	sc.nbufs = 1;
	sc.out = &v->out;
	sc.wait_ms = o->wait_ms;
	sc.period_ms = o->period_ms;
	sc.on_ring_error = on_ring_error;
	sc.ctx = v;
	sc.ident.uid = (uint32_t)getuid();
	sc.ident.pid = (int32_t)getpid();
	sc.clock_ns = boottime_ns;
	sc.lost = v->lost;
	if (tb_service_init(&v->s, &sc))
		return -1;
	v->lfd = listen_on(o->sock_path);
	if (v->lfd < 0) {
		fprintf(stderr, "tb_service: %s: %s\n", o->sock_path,
			strerror(errno));
		return -1;
	}
	return 0;
}

static void teardown(struct svc *v)
{
	unsigned i;

	while (v->nconns)
		conn_close(v, v->nconns - 1);
	free(v->conns);
	for (i = 0; v->live && i < MAX_LIVE; i++)
		if (v->live[i])
			release(v->live[i]);
	tb_service_destroy(&v->s);
	for (i = 0; i < v->nall; i++)
		free(v->all[i]);
	free(v->all);
	free(v->slots);
	free(v->live);
	free(v->lost);
	if (v->lfd >= 0) {
		close(v->lfd);
		unlink(v->opt.sock_path);
	}
	if (v->sfd >= 0)
		close(v->sfd);
	if (v->bell)
		munmap(v->bell, v->bell_len);
	if (v->bell_fd >= 0)
		close(v->bell_fd);
	tb_buf_destroy(v->buf);
	pthread_mutex_destroy(&v->lock);
}

int main(int argc, char **argv)
{
	static struct svc v;
	int ret = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse_options(&v.opt, argc, argv);
	if (setup(&v)) {
		if (v.trace)
			close(v.trace - 1);
		teardown(&v);
		return 1;
	}
	if (pthread_create(&v.thread, NULL, service_main, &v)) {
		fprintf(stderr, "tb_service: cannot start the service "
			"thread\n");
		close(v.trace - 1);
		teardown(&v);
		return 1;
	}
	printf("tb_service: listening on %s: rings of %u x %u bytes, "
	       "buffer %zu bytes, writing %s %s\n", v.opt.sock_path,
	       v.opt.num_chunks, v.opt.chunk_size, v.opt.buf_size,
	       v.opt.trace_path, v.opt.period_ms ? "every period" :
	       "at the end");
	main_loop(&v);
	/* release: the departures main_loop() took; service_main() stops */
	__atomic_store_n(&v.stop, 1, __ATOMIC_RELEASE);
	tb_service_wake(&v.s);
	pthread_join(v.thread, NULL);
	if (close(v.trace - 1) || v.out.error) {
		fprintf(stderr, "tb_service: writing %s failed\n",
			v.opt.trace_path);
		ret = 1;
	}
	summary(&v);
	teardown(&v);
	return ret;
}
