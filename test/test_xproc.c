/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_xproc.c - a ring shared between processes (Linux).
 *
 * The ring lives in a memfd.  The test process maps it and reads; each
 * writer is a forked child that maps the memfd a second time, at another
 * address, drops the inherited mapping and attaches to the new one, so
 * only offsets can work.  Children report through a small shared
 * anonymous page (their mapping address, each packet's write result and,
 * for the victims, where their open fragment sits).
 *
 *   - remap: a child writes packets while the parent reads them all, in
 *     order, intact.
 *   - kill: a child publishes packets, opens a fragment, writes part of
 *     it, tells the parent through a pipe and spins; the parent kill -9's
 *     it.  Everything the child published arrives, the open fragment never
 *     does, and the chunk stays RewriteRequested for good (nobody is left
 *     to acknowledge it).  After a few such kills a new child writes
 *     through the ring: the pinned chunks become holes on every traversal
 *     and all its packets arrive.
 */
/* the protocol steps, one at a time (see tbring.h) */
#define TB_PROTOCOL_STEPS 1
/* the writer's fill seam, for stress_helpers.h's stalling writer */
#define TB_TEST_HOOKS 1
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tbring.h"
#include "stress_helpers.h"

#define XP_WID		0x0900u		/* writer ids: XP_WID + stream */
#define XP_BID		0x3300u		/* BufferIDs: XP_BID + stream */
#define XP_MAX_SEQ	40000u
#define XP_TRIES	100000u		/* write attempts per packet */
#define XP_DEADLINE_S	240		/* the parent never waits longer */
#define XP_CHILDREN	8		/* reports: one per child at most */

/* child exit codes */
enum { XP_EXIT_OK, XP_EXIT_MAP, XP_EXIT_ATTACH, XP_EXIT_INIT, XP_EXIT_WRITE,
       XP_EXIT_OPEN, XP_EXIT_PIPE };

enum { XP_UNTRIED, XP_OK, XP_DROPPED };

/* The page children report through (MAP_SHARED | MAP_ANONYMOUS). */
struct xp_report {
	uint64_t addr;		/* where the child mapped the ring */
	uint32_t ok;
	uint32_t dropped;
	int32_t last_err;	/* an unexpected write result */
	uint32_t open_pos;	/* victim: position of its open fragment */
	uint32_t open_word;	/* the word it set when it opened it */
	uint32_t open_seq;
	uint32_t relocations;
	uint32_t stalled;	/* packets written with a held fragment */
	uint32_t syncs;
	uint32_t moved;
	uint8_t status[XP_MAX_SEQ];	/* per seq: XP_* */
};

struct xp_ring {
	int fd;
	size_t len;
	void *map;
	struct tb_ring r;
	struct tb_reader rd;
	uint8_t *rscratch;
	struct xp_report *reps;		/* XP_CHILDREN, shared */
	struct xp_report *rep;		/* the next child's */
	struct sh_asm asm_;
	uint64_t rng;
};

static bool xp_long(void)
{
	const char *e = getenv("TB_STRESS");

	return e && !strcmp(e, "long");
}

static unsigned xp_packets(unsigned short_n)
{
	return xp_long() ? 10 * short_n : short_n;
}

static time_t xp_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

static void xp_create(struct xp_ring *x, uint32_t chunk_size,
		      uint32_t num_chunks, uint32_t start, unsigned streams,
		      uint32_t nseq, uint64_t seed)
{
	memset(x, 0, sizeof(*x));
	x->len = tb_ring_size(chunk_size, num_chunks);
	ck_assert_uint_ne(x->len, 0);
	x->fd = memfd_create("tbring-xproc", MFD_CLOEXEC);
	ck_assert_msg(x->fd >= 0, "memfd_create: %s", strerror(errno));
	ck_assert_int_eq(ftruncate(x->fd, (off_t)x->len), 0);
	x->map = mmap(NULL, x->len, PROT_READ | PROT_WRITE, MAP_SHARED, x->fd,
		      0);
	ck_assert_msg(x->map != MAP_FAILED, "mmap: %s", strerror(errno));
	/* a fresh memfd reads as zeros: start 0 needs no stamping */
	ck_assert_int_eq(tb_ring_init_at(&x->r, x->map, x->len, chunk_size,
					 num_chunks, start), TB_OK);
	x->rscratch = malloc(chunk_size);
	ck_assert_ptr_nonnull(x->rscratch);
	ck_assert_int_eq(tb_reader_init(&x->rd, &x->r, x->rscratch), TB_OK);
	x->reps = mmap(NULL, XP_CHILDREN * sizeof(*x->reps),
		       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		       0);
	ck_assert(x->reps != MAP_FAILED);
	x->rep = x->reps;
	sh_asm_init(&x->asm_, streams, XP_WID, XP_BID, nseq,
		    2 * chunk_size);
	x->rng = sh_seed(seed, 0x9e);
}

static void xp_destroy(struct xp_ring *x)
{
	sh_asm_free(&x->asm_);
	munmap(x->reps, XP_CHILDREN * sizeof(*x->reps));
	munmap(x->map, x->len);
	close(x->fd);
	free(x->rscratch);
}

/* ------------------------------------------------------------------------
 * Child side: never calls check; reports through rep and its exit code.
 */

/* Maps the memfd again, elsewhere, and forgets the inherited mapping. */
static void xp_child_attach(struct xp_ring *x, struct tb_ring *r)
{
	void *m = mmap(NULL, x->len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       x->fd, 0);

	if (m == MAP_FAILED)
		_exit(XP_EXIT_MAP);
	munmap(x->map, x->len);
	x->map = NULL;
	if (tb_ring_attach(r, m, x->len) != TB_OK)
		_exit(XP_EXIT_ATTACH);
	x->rep->addr = (uint64_t)(uintptr_t)m;
}

static uint32_t xp_pick_len(uint64_t *rng, uint32_t chunk_size)
{
	uint32_t big = tb_frag_max_size(chunk_size);

	switch (sh_range(rng, 0, 3)) {
	case 0: case 1:
		return sh_range(rng, SH_HDR, SH_HDR + 48);
	case 2:
		return sh_range(rng, SH_HDR, big);
	default:	/* two chunks */
		return sh_range(rng, big + 1, 2 * chunk_size - 64);
	}
}

/*
 * Writes seqs [0, n) as stream @idx; a packet that fails is retried (a
 * new attempt starts a new chunk, so a published prefix of the failed one
 * is discarded by the reader).  The final result of each goes to rep.
 */
static void xp_child_write(struct xp_ring *x, struct tb_writer *w,
			   unsigned idx, uint32_t n, unsigned stall_pct,
			   uint64_t seed)
{
	struct sh_stall st;

	uint32_t cs = w->ring->chunk_size;
	uint8_t *pkt = malloc(2 * cs);
	uint64_t rng = sh_seed(seed, idx + 7);
	uint32_t seq, tries;

	if (!pkt)
		_exit(XP_EXIT_WRITE);
	memset(&st, 0, sizeof(st));
	for (seq = 0; seq < n; seq++) {
		uint32_t len = xp_pick_len(&rng, cs);
		int ret = TB_FULL;

		bool stall = sh_range(&rng, 0, 99) < stall_pct;

		sh_fill(pkt, idx, seq, len);
		x->rep->stalled += stall;
		for (tries = 0; tries < XP_TRIES; tries++) {
			ret = stall ?
			      sh_write_stalling(w, pkt, len, &rng, &st) :
			      tb_writer_write_packet(w, pkt, len);
			if (ret != TB_FULL && ret != TB_NO_CHUNK &&
			    ret != TB_DROPPED && ret != SH_ABANDONED)
				break;
			sched_yield();
		}
		if (ret == TB_OK) {
			x->rep->status[seq] = XP_OK;
			x->rep->ok++;
		} else {
			x->rep->status[seq] = XP_DROPPED;
			x->rep->dropped++;
			x->rep->last_err = ret;
		}
	}
	x->rep->syncs = st.syncs;
	x->rep->moved = st.moved;
	if (st.bad)
		_exit(XP_EXIT_WRITE);
	free(pkt);
}

static void xp_child_init(struct xp_ring *x, struct tb_ring *r,
			  struct tb_writer *w, unsigned idx)
{
	void *scratch;

	xp_child_attach(x, r);
	scratch = malloc(r->chunk_size);
	if (!scratch || tb_writer_init(w, r, (uint16_t)(XP_WID + idx),
				       (uint16_t)(XP_BID + idx), TB_STALL,
				       scratch) != TB_OK)
		_exit(XP_EXIT_INIT);
	w->stall_ms = 20000;	/* the parent reads; never give up */
}

/* A writer child: @n packets, then a clean exit. */
static void xp_child_writer(struct xp_ring *x, unsigned idx, uint32_t n,
			    unsigned stall_pct, uint64_t seed)
{
	struct tb_ring r;
	struct tb_writer w;

	xp_child_init(x, &r, &w, idx);
	xp_child_write(x, &w, idx, n, stall_pct, seed);
	tb_writer_release(&w);
	x->rep->relocations = w.relocations;
	_exit(XP_EXIT_OK);
}

/*
 * A writer to be shot: @n packets, then it waits for its signal (a parent
 * starved on a loaded machine may be that late), never ending on its own.
 */
static void xp_child_target(struct xp_ring *x, unsigned idx, uint32_t n,
			    unsigned stall_pct, uint64_t seed)
{
	struct tb_ring r;
	struct tb_writer w;

	xp_child_init(x, &r, &w, idx);
	xp_child_write(x, &w, idx, n, stall_pct, seed);
	x->rep->relocations = w.relocations;
	for (;;)
		pause();
}

/*
 * A victim: @n packets, then a fragment opened (at least @min bytes) and
 * half written with packet seq @n; it tells the parent on @wfd and spins
 * until it is killed.
 */
static void xp_child_victim(struct xp_ring *x, unsigned idx, uint32_t n,
			    uint32_t min, int wfd, uint64_t seed)
{
	struct tb_ring r;
	struct tb_writer w;
	struct tb_span s;
	uint8_t pkt[SH_HDR + 64];
	uint32_t used;
	unsigned tries;
	int ret = TB_FULL;
	volatile uint64_t spin = 0;

	xp_child_init(x, &r, &w, idx);
	xp_child_write(x, &w, idx, n, 10, seed);
	for (tries = 0; tries < XP_TRIES; tries++) {
		ret = tb_writer_open(&w, min, 0, &s);
		if (ret != TB_FULL && ret != TB_NO_CHUNK)
			break;
		sched_yield();
	}
	if (ret != TB_OK)
		_exit(XP_EXIT_OPEN);
	sh_fill(pkt, idx, n, sizeof(pkt));
	used = (uint32_t)(s.end - s.begin) < sizeof(pkt) / 2 ?
	       (uint32_t)(s.end - s.begin) : (uint32_t)sizeof(pkt) / 2;
	memcpy(s.begin, pkt, used);
	x->rep->open_pos = w.pos;
	x->rep->open_word = w.word;
	x->rep->open_seq = n;
	x->rep->relocations = w.relocations;
	if (write(wfd, "x", 1) != 1)
		_exit(XP_EXIT_PIPE);
	for (;;)		/* in the middle of a fragment, forever */
		spin++;
}

/* ------------------------------------------------------------------------
 * Parent side: the reader.
 */
static int xp_drain(struct xp_ring *x, enum tb_read_mode mode)
{
	unsigned n;
	int why = tb_reader_drain(&x->rd, 4 * x->r.num_chunks, mode,
				  sh_asm_chunk, &x->asm_, &n);

	ck_assert_msg(why >= 0, "reader: protocol error");
	ck_assert_msg(!x->asm_.failures, "%s", x->asm_.err);
	return (int)n;
}

static uint32_t xp_write_pos(const struct xp_ring *x)
{
	return __atomic_load_n(&x->r.hdr->write_pos, __ATOMIC_ACQUIRE);
}

/* Resolves every reserved position, scraping held chunks. */
static void xp_drain_all(struct xp_ring *x)
{
	time_t end = xp_now() + XP_DEADLINE_S;

	while (x->rd.pos != xp_write_pos(x)) {
		ck_assert_msg(xp_now() < end, "positions never resolved");
		if (!xp_drain(x, TB_READ_SCRAPE))
			sched_yield();
	}
}

/* Reads while children @pids[@n] run; their wait statuses to @status. */
static void xp_read_until_all_exit(struct xp_ring *x, const pid_t *pids,
				   unsigned n, int *status)
{
	time_t end = xp_now() + XP_DEADLINE_S;
	unsigned iter, left = n, i;

	for (i = 0; i < n; i++)
		status[i] = -1;
	for (iter = 0; left; iter++) {
		if (xp_drain(x, iter & 1 ? TB_READ_SCRAPE : TB_READ_LAZY))
			continue;
		for (i = 0; i < n; i++) {
			pid_t got;

			if (status[i] != -1)
				continue;
			got = waitpid(pids[i], &status[i], WNOHANG);
			ck_assert_int_ne(got, -1);
			if (got == pids[i])
				left--;
			else
				status[i] = -1;
		}
		if (xp_now() >= end) {
			for (i = 0; i < n; i++)
				if (status[i] == -1)
					kill(pids[i], SIGKILL);
			while (wait(NULL) > 0)
				;
			ck_abort_msg("writer children did not finish in %d s",
				     XP_DEADLINE_S);
		}
		tb_reader_wait(&x->rd, 1);
	}
	xp_drain_all(x);
}

/* Reads while child @pid runs; returns its wait status. */
static int xp_read_until_exit(struct xp_ring *x, pid_t pid)
{
	int status;

	xp_read_until_all_exit(x, &pid, 1, &status);
	return status;
}

/* Child @idx wrote @n packets: all of them arrived, in order, once. */
static void xp_check_stream(struct xp_ring *x, unsigned idx, uint32_t n)
{
	struct sh_stream *s = &x->asm_.s[idx];
	uint32_t seq;

	ck_assert_msg(!x->asm_.failures, "%s", x->asm_.err);
	ck_assert_msg(x->rep->ok == n && !x->rep->dropped,
		      "child %u: %u written, %u dropped (last %s)", idx,
		      x->rep->ok, x->rep->dropped,
		      tb_strerror(x->rep->last_err));
	for (seq = 0; seq < n; seq++)
		ck_assert_msg(s->seen[seq], "child %u seq %u never arrived",
			      idx, seq);
	ck_assert_uint_eq(s->received, n);
	ck_assert_int_eq(s->last, (int64_t)n - 1);
	ck_assert_uint_eq(s->orphans, 0);
	ck_assert_uint_eq(s->pending, 0);
}

static void xp_check_exit(int status, const char *who)
{
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == XP_EXIT_OK,
		      "%s: status %#x (exit code %d)", who, status,
		      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/*
 * Writer children (1, 2 or 3, at the same time) each map the memfd at
 * another address and write; the parent reads everything, in order per
 * writer.  Even _i start at position 0, odd ones just below 2^32.
 */
START_TEST(test_xproc_remapped_writers)
{
	unsigned children = 1 + (unsigned)_i / 2, c;
	uint32_t n = xp_packets(3000) / children;
	uint64_t seed = 0x1234 + (uint64_t)_i;
	pid_t pids[3];
	int status[3];
	struct xp_ring x;

	xp_create(&x, 512, 8, _i & 1 ? 0xffffffffu - 20 : 0, children, n,
		  seed);
	for (c = 0; c < children; c++) {
		x.rep = &x.reps[c];
		pids[c] = fork();
		ck_assert_int_ne(pids[c], -1);
		if (!pids[c])
			xp_child_writer(&x, c, n, 20, seed + c);
	}
	xp_read_until_all_exit(&x, pids, children, status);
	for (c = 0; c < children; c++) {
		x.rep = &x.reps[c];
		xp_check_exit(status[c], "writer");
		ck_assert_msg(x.rep->addr &&
			      x.rep->addr != (uint64_t)(uintptr_t)x.map,
			      "child %u mapped the ring at the parent's "
			      "address %p", c, x.map);
		xp_check_stream(&x, c, n);
		if (getenv("TB_STRESS_VERBOSE"))
			printf("remap[%d] child %u/%u: at %#llx, parent at "
			       "%p: %u packets, %u stalled, syncs %u/%u "
			       "moved, relocations %u\n", _i, c, children,
			       (unsigned long long)x.rep->addr, x.map, n,
			       x.rep->stalled, x.rep->moved, x.rep->syncs,
			       x.rep->relocations);
	}
	ck_assert_uint_gt(x.asm_.chunks, x.r.num_chunks);	/* wrapped */
	if (getenv("TB_STRESS_VERBOSE"))
		printf("remap[%d]: scrapes %u, holes %u\n", _i,
		       x.rd.stat[TB_RS_SCRAPES], x.rd.stat[TB_RS_HOLES]);
	xp_destroy(&x);
}
END_TEST

struct xp_pin {
	uint32_t pos;
	uint32_t word;		/* RewriteRequested, for good */
};

/*
 * One victim: forked, killed -9 in the middle of a fragment; checks what
 * it published arrived and that its chunk is pinned, and returns where.
 */
static void xp_kill_one(struct xp_ring *x, unsigned idx, uint32_t n,
			uint32_t min, uint64_t seed, struct xp_pin *pin)
{
	struct pollfd pfd;
	time_t end = xp_now() + XP_DEADLINE_S;
	unsigned iter;
	uint32_t word;
	char c;
	int fds[2], status;
	pid_t pid;

	memset(x->rep, 0, sizeof(*x->rep));
	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ne(pid, -1);
	if (!pid) {
		close(fds[0]);
		xp_child_victim(x, idx, n, min, fds[1], seed);
	}
	close(fds[1]);
	/* read while it writes, until it holds the open fragment */
	pfd.fd = fds[0];
	pfd.events = POLLIN;
	for (iter = 0;; iter++) {
		pid_t got;

		xp_drain(x, iter & 1 ? TB_READ_SCRAPE : TB_READ_LAZY);
		if (poll(&pfd, 1, 1) == 1)
			break;
		got = waitpid(pid, &status, WNOHANG);
		ck_assert_msg(got == 0, "victim died early: status %#x",
			      status);
		if (xp_now() >= end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			ck_abort_msg("victim never opened its fragment");
		}
	}
	ck_assert_int_eq(read(fds[0], &c, 1), 1);
	close(fds[0]);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

	/* the reader carries on: scrape everything, the victim's chunk too */
	xp_drain_all(x);
	xp_check_stream(x, idx, n);
	/* the open fragment (packet n) never arrives */
	ck_assert_uint_eq(x->rep->open_seq, n);
	ck_assert_int_eq(x->asm_.s[idx].last, (int64_t)n - 1);
	/* its chunk was scraped and nobody will ever acknowledge it */
	ck_assert_uint_eq(tb_state_of(x->rep->open_word), TB_ACQUIRED);
	word = tb_ring_load_state(&x->r, x->rep->open_pos);
	ck_assert_msg(word == tb_state_with(x->rep->open_word, TB_REWRITE),
		      "victim %u's chunk at pos %#x: word %#x, expected %#x",
		      idx, x->rep->open_pos, word,
		      tb_state_with(x->rep->open_word, TB_REWRITE));
	ck_assert_uint_eq(tb_state_writer(word), XP_WID + idx);
	pin->pos = x->rep->open_pos;
	pin->word = word;
}

/*
 * Victims killed -9 with a fragment open, one after the other, then a new
 * writer child.  _i: 0 is 3 victims on 8 x 512 B from position 0; 1 is
 * 2 victims on 4 x 256 B just below 2^32.  Victims alternate between an
 * open fragment after published ones (the reader takes that prefix) and
 * one alone in a fresh chunk (nothing to take: a hole).
 */
START_TEST(test_xproc_kill_mid_fragment)
{
	unsigned victims = _i ? 2 : 3, v, j, pinned;
	uint32_t cs = _i ? 256 : 512, nc = _i ? 4 : 8;
	uint32_t n = xp_packets(400), wp0, holes_w0, holes_r0;
	uint64_t seed = 0xdead + (uint64_t)_i;
	struct xp_pin pins[3];
	struct tb_ring_stats st;
	struct xp_ring x;
	pid_t pid;
	int status;

	xp_create(&x, cs, nc, _i ? 0xffffffffu - 5 : 0, victims + 1, n, seed);
	for (v = 0; v < victims; v++) {
		uint32_t min = v & 1 ? tb_frag_max_size(cs) : 8;

		xp_kill_one(&x, v, 5 + (uint32_t)sh_range(&x.rng, 0, 30),
			    min, seed + v, &pins[v]);
		for (j = 0; j < v; j++)		/* earlier pins stay */
			ck_assert_uint_eq(tb_ring_load_state(&x.r,
							     pins[j].pos),
					  pins[j].word);
	}
	/* exactly the victims' chunks are pinned */
	for (j = 0, pinned = 0; j < nc; j++)
		if (tb_state_of(tb_ring_load_state(&x.r, j)) == TB_REWRITE)
			pinned++;
	ck_assert_uint_eq(pinned, victims);

	/* the ring works around them: a new writer, all packets arrive */
	tb_ring_stats(&x.r, &st);
	wp0 = st.write_pos;
	holes_w0 = st.wstat[TB_WS_HOLES];
	holes_r0 = x.rd.stat[TB_RS_HOLES];
	memset(x.rep, 0, sizeof(*x.rep));
	pid = fork();
	ck_assert_int_ne(pid, -1);
	if (!pid)
		xp_child_writer(&x, victims, n, 20, seed + 100);
	status = xp_read_until_exit(&x, pid);
	xp_check_exit(status, "writer after the kills");
	xp_check_stream(&x, victims, n);
	tb_ring_stats(&x.r, &st);
	/* it went round the ring many times ... */
	ck_assert_uint_gt(st.write_pos - wp0, 4 * nc);
	/* ... burning its claims on the pinned chunks, read as holes */
	ck_assert_uint_gt(st.wstat[TB_WS_HOLES] - holes_w0, 0);
	ck_assert_uint_ge(x.rd.stat[TB_RS_HOLES] - holes_r0,
			  st.wstat[TB_WS_HOLES] - holes_w0);
	for (j = 0; j < victims; j++)
		ck_assert_uint_eq(tb_ring_load_state(&x.r, pins[j].pos),
				  pins[j].word);
	if (getenv("TB_STRESS_VERBOSE"))
		printf("kill[%d]: %u victims, then %u packets over %u "
		       "positions: holes w%u r%u, scrapes %u, relocations %u\n",
		       _i, victims, n, st.write_pos - wp0,
		       st.wstat[TB_WS_HOLES] - holes_w0,
		       x.rd.stat[TB_RS_HOLES] - holes_r0,
		       x.rd.stat[TB_RS_SCRAPES], st.wstat[TB_WS_RELOCATIONS]);
	xp_destroy(&x);
}
END_TEST

/*
 * The parent writes one packet (stream @idx, @seq) by hand on a drained
 * ring: while its fragment is open, a lazy drain must leave the chunk
 * alone (no pressure: one position pending, no live writer waiting).
 */
static void xp_probe_lazy(struct xp_ring *x, unsigned idx, uint32_t seq,
			  const char *when)
{
	uint32_t cs = x->r.chunk_size, scrapes, word;
	uint8_t *scratch = malloc(cs), pkt[SH_HDR + 24];
	int n;
	struct tb_writer w;
	struct tb_span sp;

	ck_assert_ptr_nonnull(scratch);
	xp_drain_all(x);
	ck_assert_int_eq(tb_writer_init(&w, &x->r, (uint16_t)(XP_WID + idx),
					(uint16_t)(XP_BID + idx), TB_DROP,
					scratch), TB_OK);
	sh_fill(pkt, idx, seq, sizeof(pkt));
	ck_assert_int_eq(tb_writer_open(&w, sizeof(pkt), 0, &sp), TB_OK);
	memcpy(sp.begin, pkt, SH_HDR);
	scrapes = x->rd.stat[TB_RS_SCRAPES];
	n = xp_drain(x, TB_READ_LAZY);
	word = tb_ring_load_state(&x->r, w.pos);
	/*
	 * It may resolve holes first: the claim can burn a position whose
	 * chunk a writer acknowledged after its scrape was resolved.
	 */
	ck_assert_msg(x->rd.stat[TB_RS_SCRAPES] == scrapes &&
		      word == w.word && x->rd.pos == w.pos,
		      "%s: a lazy drain (%d resolved) scraped a live "
		      "writer's chunk (%u scrapes) with one position "
		      "pending (word %#x, waiters hint %u)", when, n,
		      x->rd.stat[TB_RS_SCRAPES] - scrapes, word,
		      __atomic_load_n(&x->r.hdr->waiters, __ATOMIC_RELAXED));
	memcpy(sp.begin + SH_HDR, pkt + SH_HDR, sizeof(pkt) - SH_HDR);
	ck_assert_int_eq(tb_writer_close(&w, sizeof(pkt), 0), TB_OK);
	ck_assert_int_eq(tb_writer_release(&w), TB_OK);
	ck_assert_int_eq(xp_drain(x, TB_READ_LAZY), 1);
	ck_assert_msg(x->asm_.s[idx].seen[seq], "probe packet lost");
	free(scratch);
}

/*
 * A victim killed -9 while it waits for room (TB_STALL, futex on
 * read_pos): the reader gets everything it published, the ring keeps
 * working for the next writer, and the dead waiter does not leave the
 * ring looking under pressure for good: a lazy drain still leaves a live
 * writer's held chunk alone.
 */
START_TEST(test_xproc_kill_while_stalled)
{
	uint32_t n = xp_packets(400), seq, waiters;
	time_t end;
	struct xp_ring x;
	struct sh_stream *s;
	pid_t pid;
	int status;

	xp_create(&x, 256, 4, _i ? 0xffffffffu - 1 : 0, 3, XP_MAX_SEQ,
		  0x57a11 + (uint64_t)_i);
	xp_probe_lazy(&x, 1, 0, "before the kill");
	pid = fork();
	ck_assert_int_ne(pid, -1);
	if (!pid)	/* nobody reads: it fills the ring, then waits */
		xp_child_writer(&x, 0, XP_MAX_SEQ, 0, 0x57a11);
	end = xp_now() + XP_DEADLINE_S;
	while (!__atomic_load_n(&x.r.hdr->waiters, __ATOMIC_RELAXED)) {
		ck_assert_msg(waitpid(pid, &status, WNOHANG) == 0,
			      "victim exited: %#x", status);
		ck_assert_msg(xp_now() < end, "victim never stalled");
		usleep(1000);
	}
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	waiters = __atomic_load_n(&x.r.hdr->waiters, __ATOMIC_RELAXED);

	/* what it published arrives; the packet it was writing does not */
	xp_drain_all(&x);
	ck_assert_msg(!x.asm_.failures, "%s", x.asm_.err);
	s = &x.asm_.s[0];
	ck_assert_uint_gt(x.rep->ok, 0);
	ck_assert_uint_eq(s->received, x.rep->ok);
	for (seq = 0; seq < XP_MAX_SEQ; seq++)
		ck_assert_msg(s->seen[seq] == (x.rep->status[seq] == XP_OK),
			      "victim seq %u: status %u, %s", seq,
			      x.rep->status[seq],
			      s->seen[seq] ? "received" : "not received");

	/* a new writer gets through */
	memset(x.rep, 0, sizeof(*x.rep));
	pid = fork();
	ck_assert_int_ne(pid, -1);
	if (!pid)
		xp_child_writer(&x, 2, n, 20, 0x57a12);
	status = xp_read_until_exit(&x, pid);
	xp_check_exit(status, "writer after the stalled victim");
	xp_check_stream(&x, 2, n);
	if (getenv("TB_STRESS_VERBOSE"))
		printf("stalled-kill[%d]: victim wrote %u packets; waiters "
		       "hint %u after the kill, %u at the end; scrapes %u "
		       "relocations %u\n", _i, s->received, waiters,
		       __atomic_load_n(&x.r.hdr->waiters, __ATOMIC_RELAXED),
		       x.rd.stat[TB_RS_SCRAPES], x.rep->relocations);
	xp_probe_lazy(&x, 1, 1, "after a writer died stalled");
	xp_destroy(&x);
}
END_TEST

/*
 * Writers killed -9 at random moments (mid-fragment, mid-relocation,
 * between reserve and claim, stalled, holding a cached chunk: wherever
 * the signal lands), one after the other, then a clean writer.  Each
 * victim's packets that returned TB_OK arrive, in order; the packet it
 * was writing may or may not; nothing else does.  A dead writer pins at
 * most one chunk, and the ring keeps working around the pins.
 */
START_TEST(test_xproc_random_kills)
{
	unsigned victims = 6, v, j, pinned;
	uint32_t cs = 256, nc = 16, n = xp_packets(400), seq, flying;
	uint64_t seed = 0xc4a05 + (uint64_t)_i;
	struct tb_ring_stats st;
	struct xp_ring x;
	struct timespec ts;
	pid_t pid;
	int status;

	xp_create(&x, cs, nc, _i ? 0xffffffffu - 40 : 0, victims + 1,
		  XP_MAX_SEQ, seed);
	for (v = 0; v < victims; v++) {
		time_t end = xp_now() + XP_DEADLINE_S;
		struct sh_stream *s = &x.asm_.s[v];
		unsigned iter, budget;

		x.rep = &x.reps[v];
		pid = fork();
		ck_assert_int_ne(pid, -1);
		if (!pid)
			xp_child_target(&x, v, XP_MAX_SEQ, 30, seed + v);
		/* read for a random while, then shoot */
		budget = sh_range(&x.rng, 20, 400);
		for (iter = 0; iter < budget || !x.rep->ok; iter++) {
			ck_assert_msg(xp_now() < end, "victim wrote nothing");
			if (xp_drain(&x, iter & 1 ? TB_READ_SCRAPE :
					 TB_READ_LAZY))
				continue;
			ts.tv_sec = 0;
			ts.tv_nsec = (long)sh_range(&x.rng, 0, 50000);
			nanosleep(&ts, NULL);
		}
		ck_assert_int_eq(kill(pid, SIGKILL), 0);
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) ==
			      SIGKILL, "victim %u ended on its own: %#x", v,
			      status);
		xp_drain_all(&x);
		ck_assert_msg(!x.asm_.failures, "%s", x.asm_.err);
		ck_assert_uint_eq(x.rep->dropped, 0);
		/* statuses: ok for [0, flying), untried from flying on (all
		 * ok: the shot came after the last packet) */
		for (flying = 0; flying < XP_MAX_SEQ &&
		     x.rep->status[flying] == XP_OK; flying++)
			;
		for (seq = 0; seq < XP_MAX_SEQ; seq++)
			ck_assert_msg(s->seen[seq] == (seq < flying) ||
				      seq == flying,
				      "victim %u seq %u (%u ok): %s", v, seq,
				      flying, s->seen[seq] ? "received" :
				      "lost");
		ck_assert_uint_eq(s->orphans, 0);
		for (j = 0, pinned = 0; j < nc; j++)
			if (tb_state_of(tb_ring_load_state(&x.r, j)) ==
			    TB_REWRITE)
				pinned++;
		ck_assert_uint_le(pinned, v + 1);
		tb_ring_stats(&x.r, &st);
		if (getenv("TB_STRESS_VERBOSE"))
			printf("random-kill[%d] victim %u: %u ok, packet %u "
			       "%s, %u chunks pinned, ring relocations %u\n",
			       _i, v, flying, flying, flying == XP_MAX_SEQ ?
			       "none" : s->seen[flying] ? "arrived" : "lost",
			       pinned,
			       st.wstat[TB_WS_RELOCATIONS]);
	}
	x.rep = &x.reps[victims];
	pid = fork();
	ck_assert_int_ne(pid, -1);
	if (!pid)
		xp_child_writer(&x, victims, n, 30, seed + 99);
	status = xp_read_until_exit(&x, pid);
	xp_check_exit(status, "writer after the random kills");
	xp_check_stream(&x, victims, n);
	xp_destroy(&x);
}
END_TEST

static Suite *xproc_suite(void)
{
	Suite *s = suite_create("tbring_xproc");
	TCase *tc = tcase_create("xproc");

	/* a hang, not slowness: a loaded machine takes 10x and more */
	tcase_set_timeout(tc, xp_long() ? 600 : 300);
	tcase_add_loop_test(tc, test_xproc_remapped_writers, 0, 6);
	tcase_add_loop_test(tc, test_xproc_kill_mid_fragment, 0, 2);
	tcase_add_loop_test(tc, test_xproc_kill_while_stalled, 0, 2);
	tcase_add_loop_test(tc, test_xproc_random_kills, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(xproc_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
