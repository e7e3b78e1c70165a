/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target for tbring.h's reader on hostile memory.
 *
 * The input is a program.  Its first bytes choose the geometry (chunks of
 * 256, 512 or 1024 bytes, 2 to 16 of them), the start position (0, near the
 * 2^32 rollover, near a wrap-tag rollover, or any), whether the reader
 * attaches its own view, and 1 to 3 writers (policy TB_DROP: a full ring
 * never waits).  Every later byte picks one operation: a writer call
 * (write_packet, open, fill, close, sync, release, record_loss, or dying
 * without a release), a reader call (tb_reader_drain with a small max in
 * lazy or scrape mode, tb_reader_read_one, the packet-level
 * tb_reader_drain_packets, a reader restart), a scribble of hostile words or
 * bytes anywhere in the mapping (state words, write_pos, read_pos,
 * directories shaped to end right at the payload or one byte past it,
 * BufferIDs, payload, header), raw header bytes fed to tb_ring_attach() in a
 * separate mapping, or a plan of actions (more scribbles, or writer calls)
 * to run in the middle of the next reader call, between two of its atomic
 * accesses.  Every mapping and scratch buffer is allocated at its exact size,
 * so ASan sees any access past it.
 *
 * The TB_TEST_HOOKS seam sees every atomic access of the reader; checked:
 *  - the reader touches only its cursors, the waiter hint, its counters
 *    and the state word of the position it resolves; it loads that word
 *    only when write_pos says the position is reserved and not forged;
 *  - bounded work: a call makes at most a fixed number of atomic accesses
 *    per position it may resolve (drain(max) resolves at most max and
 *    returns); its read_pos stores count the positions it reports, one
 *    by one;
 *  - each CAS expects the word the reader dispatched on and wants the
 *    right successor (free tags from the position, never from the word);
 *  - a reserved state (5, 6, 7), a free word with another position's tag,
 *    an Acknowledged word with stray bits or a failed Acknowledged
 *    reclaim, or a forged write_pos makes the call return TB_EPROTO with
 *    the state word and read_pos unchanged, and TB_EPROTO is never
 *    returned without one of them; after it every call returns TB_EPROTO
 *    and changes no byte of the mapping (but the reader's counters);
 *  - every data-bearing word whose CAS the reader won is emitted once:
 *    one of another format or with a malformed directory as a lost view
 *    (no fragments, the data-loss flag, the reason); a format-00 one's
 *    fragment count, writer, flags and "scraped" agree with that word,
 *    and its fragments lie inside the chunk's published ranges -
 *    payload [6, 6 + sum of sizes) below directory [cs - n * w, cs) - and
 *    inside the reader's scratch;
 *  - every packet tb_reader_drain_packets() hands over lies in the
 *    reader's scratch or in the reassembly slots, and is cut (flagged
 *    TB_PKT_TRUNCATED, at max_packet) only under TB_OVERSIZE_TRUNCATE.
 * In runs without scribbles (and with distinct writer ids, and no
 * packet-level drain, which takes the views), also: no TB_EPROTO, no
 * malformed chunk, the emitted bytes equal the chunk's published bytes,
 * every fragment is the honest writers' (tagged with writer and sequence,
 * zeros elsewhere), each writer's fragments come out once and in order,
 * a fragment after a gap carries the loss flag (the first tagged one
 * written after a packet was lost - a failed write, a dropped close or
 * sync, an open fragment released, a recorded loss - comes in a chunk
 * flagged TB_F_DATA_LOSS, unless an untagged fragment or one open at the
 * loss was published after it and may have taken the flag), and
 * after the writers release, one drain resolves the ring and every fragment
 * whose close (or packet) returned TB_OK was emitted.
 */
#define TB_TEST_HOOKS 1

/* the protocol steps, one at a time (see tbring.h) */
#define TB_PROTOCOL_STEPS 1
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tbpacket.h"
#include "fuzz/fuzz_input.h"


#define NW		3		/* writers at most */
#define MAXOPS		1500		/* operations per input */
#define MAXACT		4		/* actions planned per reader call */
#define MAXTAG		4096		/* tagged fragments per writer */
#define MAXCS		1024u
#define MAXRING		(TB_RING_HDR_SIZE + 128u * 1024) /* raw attach too */
#define TAG_MARK	0xa0u		/* first byte of a tag: 0xa0 | writer */

void (*tb_test_atomic)(const uint32_t *p, int op, uint32_t expect,
		       uint32_t v, int ok, int fail);

/* ---- The reader under check ------------------------------------------- */

struct rchk {
	const struct tb_ring *r;
	uint8_t *scratch;
	uint32_t pos;		/* the reader's position, from its stores */
	int stopped;		/* it returned TB_EPROTO */
	int honest;		/* nothing hostile ever touched this ring */
	/* per call */
	int was_stopped;
	unsigned acc, bound, stores, cases, emitted, max;
	uint32_t wp[2];		/* the last two write_pos loads */
	uint32_t wake_seq;	/* the reader's last load of wake_seq */
	int bad;		/* the word dispatched on obliges a stop */
	/* per position */
	uint32_t *wordp;	/* its state word */
	uint32_t word;		/* the word the reader dispatches on */
	uint32_t mem;		/* what that word holds now */
	uint32_t rpmem;		/* what read_pos holds now */
	int loaded, won;
	unsigned fails;
	/* the last position resolved */
	uint32_t won_word;
	int won_valid;
	unsigned won_nact;	/* actions run when its CAS was won */
	int expect_emit;	/* a won data chunk owes a view */
	int packets;		/* in a packet drain: views are not seen */
};

struct fw {
	struct tb_writer w;
	uint8_t *scratch;
	uint16_t id;
	int open;
	struct tb_span span;
	uint32_t written;	/* bytes of img valid at span.begin */
	uint32_t tag;
	uint8_t img[MAXCS];
};

struct act {
	unsigned at;		/* the reader access it runs before */
	unsigned kind;
	uint8_t arg[12];
	unsigned left;		/* runs left: once, or at every access */
};

static struct fz {
	uint8_t *mem;
	size_t len;
	uint32_t cs, nc, w;
	unsigned nw;
	struct tb_ring ring;	/* the writers' view */
	struct tb_ring rring;	/* the reader's view */
	struct tb_reader rd;
	struct fw fw[NW];
	int distinct;
	int actor;
	unsigned nact, nact_run;
	struct act act[MAXACT];
	uint32_t next_tag[NW], last_tag[NW];
	/* a loss owed: tags above loss_at were written after it */
	uint32_t loss_at[NW];
	uint8_t loss_owed[NW], loss_lenient[NW];
	uint8_t loss_why[NW];	/* LOSS_* bits since the last check */
	unsigned loss_checked[8];
	uint8_t must[NW][MAXTAG / 8], seen[NW][MAXTAG / 8];
	uint8_t pkt[3 * MAXCS];
	struct tb_reassembly ra;
	uint8_t *ramem;
	size_t ralen;
	uint8_t snap[MAXRING];
} F;

static struct rchk mainc, *C = &mainc;
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_init(argc, argv);
	return 0;
}

enum { ACT_NONE, ACT_READER, ACT_INIT };

static int bit(const uint8_t *b, uint32_t i)
{
	return b[i / 8] >> (i % 8) & 1;
}

static void set_bit(uint8_t *b, uint32_t i)
{
	b[i / 8] |= (uint8_t)(1u << (i % 8));
}

/* The reader must stop on this word at @pos (seed 3.2, 5.3). */
static int must_stop(const struct tb_ring *r, uint32_t word, uint32_t pos)
{
	switch (tb_state_of(word)) {
	case TB_FREE:
		return word != tb_state_free(tb_ring_wrap(r, pos));
	case TB_ACKED:
		return word != TB_WORD_ACKED;
	case TB_ACQUIRED: case TB_COMPLETE: case TB_REWRITE:
		return 0;
	}
	return 1;
}

static int forged(const struct rchk *c, uint32_t wp)
{
	return tb_pos_distance(wp, c->pos) > c->r->num_chunks;
}

static int run_actions(unsigned acc);

/*
 * Sees every atomic access before it happens.  Writers' accesses pass
 * through; the reader's are checked against the protocol.
 */
static void seam(const uint32_t *p, int op, uint32_t expect, uint32_t v,
		 int ok, int fail)
{
	struct rchk *c = C;
	const struct tb_ring *r = c->r;
	struct tb_ring_hdr *h;
	size_t off;
	uint32_t idx, pos;

	(void)ok;
	(void)fail;
	if (op == TB_TEST_FENCE)
		return;		/* no word; the unit tests check fences */
	if (F.actor == ACT_INIT) {
		if (p == &r->hdr->read_pos && op == TB_TEST_LOAD)
			c->pos = *p;
		return;
	}
	if (F.actor != ACT_READER)
		return;
	c->acc++;
	TRACE("    [%u] op %d word@%td expect %08x v %08x mem %08x\n", c->acc,
	      op, (const uint8_t *)p - (const uint8_t *)r->hdr, expect, v, *p);
	CHECK(c->acc <= c->bound);	/* bounded work per call */
	h = r->hdr;
	if (run_actions(c->acc)) {	/* the words may have changed */
		if (c->wordp)
			c->mem = *c->wordp;
		c->rpmem = h->read_pos;
	}
	off = (size_t)((const uint8_t *)p - (const uint8_t *)h);
	CHECK((const uint8_t *)p >= (const uint8_t *)h &&
	      off + 4 <= tb_ring_size(r->chunk_size, r->num_chunks));
	pos = c->pos;
	if (p == &h->wake_req) {
		/* the reader only clears a writer's wake request */
		CHECK(op == TB_TEST_LOAD || (op == TB_TEST_CAS && v == 0));
		return;
	}
	if (p == &h->wake_seq) {
		/*
		 * and then bumps the stalled writers' futex word by one over
		 * what it loaded (a scribble between its load and its store
		 * is a hostile process's, not the reader's doing)
		 */
		CHECK(op == TB_TEST_LOAD ||
		      (op == TB_TEST_STORE && v == c->wake_seq + 1));
		if (op == TB_TEST_LOAD)
			c->wake_seq = *p;	/* what this load reads */
		return;
	}
	if (c->stopped)
		CHECK(op == TB_TEST_LOAD || (op == TB_TEST_STORE &&
		      p >= h->rstat && p < h->rstat + 16));
	if (p == &h->write_pos) {
		CHECK(op == TB_TEST_LOAD);
		c->wp[0] = c->wp[1];
		c->wp[1] = *p;
		return;
	}
	if (p == &h->read_pos) {
		CHECK(op == TB_TEST_STORE);
		/* a position is resolved only by a won CAS, or as a hole */
		CHECK(c->loaded && !c->bad &&
		      (c->won || tb_state_of(c->word) == TB_REWRITE));
		CHECK(v == pos + 1);
		CHECK(c->stores < c->max);
		if (!c->packets)
			CHECK(!c->expect_emit);
		c->pos = v;
		c->rpmem = v;
		c->stores++;
		c->loaded = 0;
		c->won_valid = c->won;
		/* data, usable or not (a lost view), owes a view */
		c->expect_emit = c->won && tb_state_nfrags(c->won_word) &&
				 (tb_state_of(c->won_word) == TB_ACQUIRED ||
				  tb_state_of(c->won_word) == TB_COMPLETE);
		return;
	}
	if (p >= (const uint32_t *)(const void *)h &&
	    off < TB_RING_HDR_SIZE) {
		/* counters, the waiter hint, the stop word: loads, and
		 * stores of the reader's counters and its stop rule only */
		CHECK(op == TB_TEST_LOAD ||
		      (op == TB_TEST_STORE && ((p >= h->rstat &&
		       p < h->rstat + 16) || p == &h->stopped)));
		return;
	}
	/* a chunk: only its state word, only at the reader's position */
	off -= TB_RING_HDR_SIZE;
	CHECK(off % r->chunk_size == 0);
	idx = (uint32_t)(off / r->chunk_size);
	CHECK(idx == tb_pos_index(pos, r->num_chunks));
	if (op == TB_TEST_LOAD) {
		/* once per position, and only a reserved, unforged one */
		CHECK(!c->loaded && c->wp[1] != pos && !forged(c, c->wp[1]));
		c->loaded = 1;
		c->won = 0;
		c->fails = 0;
		c->wordp = (uint32_t *)(uintptr_t)p;
		c->word = *p;
		c->mem = *p;
		c->bad = must_stop(r, c->word, pos);
		return;
	}
	CHECK(op == TB_TEST_CAS);
	CHECK(c->loaded && !c->bad && !c->won && expect == c->word);
	c->cases++;
	switch (tb_state_of(expect)) {
	case TB_FREE: case TB_COMPLETE: case TB_ACKED:
		CHECK(v == tb_state_free(tb_ring_next_wrap(r, pos)));
		break;
	case TB_ACQUIRED:
		CHECK(v == tb_state_with(expect, TB_REWRITE));
		break;
	default:
		CHECK(0);	/* never a CAS on RewriteRequested */
	}
	if (*p == expect) {
		c->won = 1;
		c->won_word = expect;
		c->won_nact = F.nact_run;
		c->mem = v;
		return;
	}
	c->fails++;
	c->word = *p;
	/* a lost race redispatches on the word found, while budget lasts */
	c->bad = tb_state_of(expect) == TB_ACKED ||
		 (c->fails < TB_READ_BUDGET && must_stop(r, c->word, pos));
}

static void begin_call(struct rchk *c, unsigned max)
{
	c->was_stopped = c->stopped;
	c->acc = 0;
	c->max = max;
	c->bound = max * (4 + TB_READ_BUDGET) + TB_RS_MAX + 8;
	c->stores = 0;
	c->cases = 0;
	c->emitted = 0;
	c->bad = 0;
	c->loaded = 0;
	c->wp[0] = c->wp[1] = c->pos;
	c->rpmem = c->r->hdr->read_pos;
	if (c->wordp)
		c->mem = *c->wordp;
	if (c->stopped)
		memcpy(F.snap, c->r->hdr, tb_ring_size(c->r->chunk_size,
						       c->r->num_chunks));
}

/* The whole mapping but the reader's counters is as it was. */
static int untouched(const struct rchk *c)
{
	size_t a = offsetof(struct tb_ring_hdr, rstat);
	size_t b = a + sizeof(c->r->hdr->rstat);
	size_t len = tb_ring_size(c->r->chunk_size, c->r->num_chunks);
	const uint8_t *m = (const uint8_t *)c->r->hdr;

	return !memcmp(F.snap, m, a) && !memcmp(F.snap + b, m + b, len - b);
}

static void end_call(struct rchk *c, int ret)
{
	const struct tb_ring_hdr *h = c->r->hdr;

	CHECK(c->emitted <= c->stores && c->stores <= c->max);
	if (c->was_stopped) {
		CHECK(ret == TB_EPROTO && !c->stores && !c->cases &&
		      !c->emitted && untouched(c));
		return;
	}
	if (!c->packets)
		CHECK(!c->expect_emit);
	if (c->honest) {
		CHECK(ret != TB_EPROTO);
		CHECK(!h->rstat[TB_RS_MALFORMED] &&
		      !h->rstat[TB_RS_UNKNOWN_FORMAT]);
	}
	if (ret != TB_EPROTO) {
		CHECK(!c->bad);	/* a bad word must stop the reader */
		return;
	}
	/* TB_EPROTO: for a reason, touching neither word nor read_pos */
	CHECK(c->bad || forged(c, c->wp[0]) || forged(c, c->wp[1]));
	if (c->wordp)
		CHECK(*c->wordp == c->mem);
	CHECK(h->read_pos == c->rpmem);
	c->stopped = 1;
}

static void check_honest(const struct tb_chunk_view *v, uint32_t sum);

static void check_view(const struct tb_chunk_view *v)
{
	struct rchk *c = C;
	const struct tb_ring *r = c->r;
	uint32_t word = c->won_word, n, i, sum = 0, cs = r->chunk_size;
	uint32_t w = r->width;
	volatile uint8_t touch = 0;
	const uint8_t *chunk;

	CHECK(!c->stopped && c->won_valid && c->expect_emit);
	c->expect_emit = 0;
	c->emitted++;
	TRACE("  view pos %u writer %u n %u flags %x scraped %u word %08x\n",
	      v->pos, v->writer, v->nfrags, v->flags, v->scraped, word);
	CHECK(v->pos + 1 == c->pos);
	CHECK(tb_state_of(word) == TB_ACQUIRED ||
	      tb_state_of(word) == TB_COMPLETE);
	CHECK(v->writer == tb_state_writer(word));
	CHECK(!!v->scraped == (tb_state_of(word) == TB_ACQUIRED));
	if (v->lost) {
		/* unusable data: no fragments, the loss and its reason */
		CHECK(!c->honest);
		CHECK(v->nfrags == 0 && v->flags == TB_F_DATA_LOSS);
		CHECK(v->lost == (tb_state_format(word) == TB_FORMAT_TARGET ?
				  TB_VIEW_MALFORMED : TB_VIEW_UNKNOWN_FORMAT));
		return;
	}
	CHECK(tb_state_format(word) == TB_FORMAT_TARGET);
	n = tb_state_nfrags(word);
	CHECK(n && v->nfrags == n);
	CHECK(v->writer == tb_state_writer(word));
	CHECK(v->flags == tb__state_flags(word));
	CHECK(!!v->scraped == (tb_state_of(word) == TB_ACQUIRED));
	for (i = 0; i < n; i++)
		sum += v->sizes[i];
	/* payload [6, 6 + sum) and directory [cs - n w, cs): disjoint */
	CHECK(n * w <= cs - TB_FRAG_PAYLOAD_OFF);
	CHECK(TB_FRAG_PAYLOAD_OFF + sum <= cs - n * w);
	CHECK(v->payload >= c->scratch && v->payload + sum <= c->scratch + cs);
	for (i = 0; i < sum; i++)
		touch ^= v->payload[i];
	(void)touch;
	if (!c->honest)
		return;
	/* nothing scribbled: the view is the chunk's published bytes */
	chunk = tb_ring_chunk(r, v->pos);
	if (c->won_nact == F.nact_run) {
		CHECK(v->bid == tb_frag_bid(chunk));
		CHECK(!memcmp(v->payload, chunk + TB_FRAG_PAYLOAD_OFF, sum));
		for (i = 0; i < n; i++)
			CHECK(v->sizes[i] == tb__frag_get_le(chunk +
			      tb__frag_entry_off(cs, w, i), w));
	}
	check_honest(v, sum);
}

static void on_chunk(void *ctx, const struct tb_chunk_view *v)
{
	(void)ctx;
	check_view(v);
}

static int reader_drain(struct tb_reader *rd, unsigned max,
			enum tb_read_mode mode)
{
	struct rchk *c = C;
	uint32_t pos0 = c->pos, word0, rp0 = c->r->hdr->read_pos;
	unsigned nact = F.nact_run, resolved;
	int ret;

	word0 = *tb_ring_word(c->r, pos0);
	begin_call(c, max);
	F.actor = ACT_READER;
	TRACE("drain max %u mode %d pos %u\n", max, mode, pos0);
	ret = tb_reader_drain(rd, max, mode, on_chunk, NULL, &resolved);
	F.actor = ACT_NONE;
	TRACE("drain -> %d (%u)\n", ret, resolved);
	CHECK(resolved <= max && resolved == c->stores);
	CHECK(ret == TB_EPROTO || ret == TB_NODATA || ret == TB_PENDING ||
	      ret == TB_RETRY_LATER || ret == TB_LIMIT);
	CHECK((ret == TB_LIMIT) == (resolved == max && ret != TB_EPROTO));
	end_call(c, ret);
	if (ret == TB_EPROTO && !c->was_stopped && !c->stores &&
	    nact == F.nact_run) {
		CHECK(*tb_ring_word(c->r, pos0) == word0);
		CHECK(c->r->hdr->read_pos == rp0);
	}
	return ret == TB_EPROTO ? ret : (int)resolved;
}

/* Packet-level drain: what it hands over lies in scratch or its slots. */
static void on_packet(void *ctx, const struct tb_packet *p)
{
	const struct tb_reassembly *ra = (const struct tb_reassembly *)ctx;
	const uint8_t *lo = F.ramem, *hi = F.ramem + F.ralen;
	volatile uint8_t touch = 0;
	uint32_t i;

	CHECK(p->len <= p->size);
	CHECK(!!(p->flags & TB_PKT_TRUNCATED) == (p->len < p->size));
	if (p->len < p->size)
		CHECK(ra->oversize == TB_OVERSIZE_TRUNCATE &&
		      p->len == ra->max_packet);
	if (p->data >= C->scratch && p->data < C->scratch + F.cs) {
		lo = C->scratch;
		hi = C->scratch + F.cs;
	}
	CHECK(!p->len || (p->data >= lo && p->data + p->len <= hi));
	for (i = 0; i < p->len; i++)
		touch ^= p->data[i];
	(void)touch;
}

static int reader_packets(struct tb_reader *rd, unsigned max,
			  enum tb_read_mode mode)
{
	struct rchk *c = C;
	unsigned resolved;
	int ret;

	/* views go to the reassembly, not to check_view(): no tag counts */
	c->honest = 0;
	begin_call(c, max);
	F.actor = ACT_READER;
	c->packets = 1;
	ret = tb_reader_drain_packets(rd, &F.ra, max, mode, on_packet, &F.ra,
				      &resolved);
	c->packets = 0;
	F.actor = ACT_NONE;
	CHECK(resolved <= max && resolved == c->stores);
	CHECK((ret == TB_LIMIT) == (resolved == max && ret != TB_EPROTO));
	c->expect_emit = 0;
	end_call(c, ret);
	return ret == TB_EPROTO ? ret : (int)resolved;
}

static int reader_one(struct tb_reader *rd, enum tb_read_mode mode)
{
	struct rchk *c = C;
	struct tb_chunk_view v;
	int ret;

	begin_call(c, 1);
	F.actor = ACT_READER;
	TRACE("read_one mode %d pos %u\n", mode, c->pos);
	ret = tb_reader_read_one(rd, mode, &v);
	F.actor = ACT_NONE;
	TRACE("read_one -> %d\n", ret);
	switch (ret) {
	case TB_EMITTED:
		CHECK(c->stores == 1);
		check_view(&v);
		break;
	case TB_SKIPPED:
		CHECK(c->stores == 1);
		break;
	case TB_PENDING:
		CHECK(mode == TB_READ_LAZY);
		/* fall through */
	case TB_NODATA: case TB_EPROTO:
		CHECK(!c->stores);
		break;
	case TB_RETRY_LATER:
		CHECK(!c->stores && c->fails);
		break;
	default:
		CHECK(0);
	}
	end_call(c, ret);
	return ret;
}

static void reader_init(struct tb_reader *rd, const struct tb_ring *r,
			uint8_t *scratch)
{
	struct rchk *c = C;

	c->r = r;
	c->scratch = scratch;
	c->stopped = 0;
	c->wordp = NULL;
	c->won_valid = 0;
	c->expect_emit = 0;
	c->packets = 0;
	F.actor = ACT_INIT;
	CHECK(tb_reader_init(rd, r, scratch) == TB_OK);
	F.actor = ACT_NONE;
}

/* ---- Honest writers ---------------------------------------------------- */

/* Honest bytes: a tag (0xa0 | writer, 24-bit sequence) and zeros. */
static uint32_t new_tag(unsigned k, uint8_t *p, uint32_t len)
{
	uint32_t t;

	memset(p, 0, len);
	if (len < 4 || F.next_tag[k] + 1 >= MAXTAG)
		return 0;
	t = ++F.next_tag[k];
	p[0] = (uint8_t)(TAG_MARK | k);
	p[1] = (uint8_t)t;
	p[2] = (uint8_t)(t >> 8);
	p[3] = (uint8_t)(t >> 16);
	return t;
}

/*
 * Why a writer owes a loss, one bit per kind.  Each kind the check above
 * saw is a branch of its own (loss_checked()), so that coverage tells the
 * fuzzer which kinds of loss reached the check in an honest run: a close
 * dropped because its relocation found the ring full is many steps from
 * a write that failed, and without its own branch an input that gets
 * there looks like any other.
 */
enum {
	LOSS_WRITE = 1,		/* write_packet failed */
	LOSS_CLOSE = 2,		/* a close dropped its fragment */
	LOSS_SYNC = 4,		/* a sync dropped the open fragment */
	LOSS_RELEASE = 8,	/* a release dropped it */
	LOSS_RECORD = 16,	/* tb_writer_record_loss() */
};

static void loss_checked(unsigned k)
{
	unsigned why = F.loss_why[k];

	if (why & LOSS_WRITE)
		F.loss_checked[0]++;
	if (why & LOSS_CLOSE)
		F.loss_checked[1]++;
	if (why & LOSS_SYNC)
		F.loss_checked[2]++;
	if (why & LOSS_RELEASE)
		F.loss_checked[3]++;
	if (why & LOSS_RECORD)
		F.loss_checked[4]++;
	F.loss_why[k] = 0;
}

static void check_honest(const struct tb_chunk_view *v, uint32_t sum)
{
	const uint8_t *p = v->payload;
	uint32_t i, j, t;
	unsigned k;

	(void)sum;
	for (i = 0; i < v->nfrags; p += v->sizes[i++]) {
		uint32_t z = v->sizes[i];

		if (z >= 4 && (p[0] & 0xfc) == TAG_MARK) {
			k = p[0] & 3;
			t = p[1] | (uint32_t)p[2] << 8 | (uint32_t)p[3] << 16;
			TRACE("    frag %u size %u writer %u tag %u\n", i, z, k,
			      t);
			CHECK(k < F.nw && t && t <= F.next_tag[k]);
			/* once, and in the order written */
			CHECK(t > F.last_tag[k] && !bit(F.seen[k], t));
			F.last_tag[k] = t;
			/* the first written after a loss says so */
			if (F.loss_owed[k] && t > F.loss_at[k]) {
				CHECK(v->flags & TB_F_DATA_LOSS ||
				      F.loss_lenient[k]);
				loss_checked(k);
				F.loss_owed[k] = 0;
				F.loss_lenient[k] = 0;
			}
			set_bit(F.seen[k], t);
			if (F.distinct)
				CHECK(v->writer == F.fw[k].id);
			j = 4;
		} else {
			j = 0;
		}
		for (; j < z; j++)
			CHECK(p[j] == 0);
	}
}

static void check_span(const struct tb_span *s, uint32_t min)
{
	const struct tb_ring *r = &F.ring;
	size_t off, base;

	CHECK(s->begin >= r->chunks && s->begin <= s->end &&
	      s->end <= r->chunks + (size_t)F.nc * F.cs);
	off = (size_t)(s->begin - r->chunks);
	base = off - off % F.cs;
	CHECK(off - base >= TB_FRAG_PAYLOAD_OFF &&
	      (size_t)(s->end - r->chunks) - base <= F.cs - F.w);
	CHECK((size_t)(s->end - s->begin) >= min);
}

/* Writer @k lost a packet or fragment (@why): its next one says so. */
static void note_loss(unsigned k, unsigned why)
{
	F.loss_at[k] = F.next_tag[k];
	F.loss_owed[k] = 1;
	F.loss_why[k] |= (uint8_t)why;
	/* a fragment open now is published later and may take the flag */
	F.loss_lenient[k] |= (uint8_t)F.fw[k].open;
}

/* Writer @k published a fragment without a tag: it may take the flag. */
static void note_untagged(unsigned k)
{
	if (F.loss_owed[k])
		F.loss_lenient[k] = 1;
}

static void writer_reinit(unsigned k)
{
	struct fw *f = &F.fw[k];

	/* a writer that dies takes what it owes with it */
	F.loss_owed[k] = 0;
	F.loss_lenient[k] = 0;
	F.loss_why[k] = 0;
	CHECK(tb_writer_init(&f->w, &F.ring, f->id, (uint16_t)(k * 7),
			     TB_DROP, f->scratch) == TB_OK);
	f->open = 0;
}

/* One writer call; @in holds its arguments. */
static void wop_(unsigned k, unsigned op, struct in *in);

static void wop(unsigned k, unsigned op, struct in *in)
{
	TRACE("writer %u op %u (open %d)\n", k, op % 8, F.fw[k].open);
	wop_(k, op, in);
}

static void wop_(unsigned k, unsigned op, struct in *in)
{
	struct fw *f = &F.fw[k];
	struct tb_writer *w = &f->w;
	uint32_t len, n, t;
	struct tb_span s;
	int ret;

	switch (op % 8) {
	case 0:		/* a whole packet, maybe over several chunks */
		len = get16(in);
		len = len & 0x8000 ? (len & 0x7fff) % (3 * F.cs) : len % 64;
		t = new_tag(k, F.pkt, len);
		ret = tb_writer_write_packet(w, F.pkt, len);
		TRACE("  packet len %u tag %u -> %d\n", len, t, ret);
		if (f->open)
			CHECK(ret == TB_EOPEN);
		CHECK(ret == TB_OK || ret == TB_FULL || ret == TB_NO_CHUNK ||
		      ret == TB_DROPPED || ret == TB_EPROTO ||
		      ret == TB_EOPEN);
		if (mainc.honest)
			CHECK(ret != TB_EPROTO);
		if (ret == TB_OK && t)
			set_bit(F.must[k], t);
		if (ret == TB_OK && !t)
			note_untagged(k);
		if (ret != TB_OK)
			note_loss(k, LOSS_WRITE);
		break;
	case 1:		/* open a fragment */
		n = get16(in);
		n = n & 0x8000 ? (n & 0x7fff) % (tb_frag_max_size(F.cs) + 2) :
				 n % 32;
		ret = tb_writer_open(w, n, get(in) & 1, &s);
		TRACE("  open min %u -> %d\n", n, ret);
		if (f->open) {
			CHECK(ret == TB_EOPEN);
			break;
		}
		if (n > tb_frag_max_size(F.cs))
			CHECK(ret == TB_TOO_LARGE);
		if (ret != TB_OK)
			break;
		check_span(&s, n);
		f->span = s;
		f->open = 1;
		len = (uint32_t)(f->span.end - f->span.begin);
		/*
		 * All of the image, not only the span: a sync may move the
		 * fragment to a larger span, and the bytes past this one's
		 * end are then written from the image too (zeros, or stale
		 * bytes of an older tag that read as a wrong payload).
		 */
		memset(f->img, 0, sizeof(f->img));
		f->tag = new_tag(k, f->img, len);
		f->written = len < 4 ? len : 4;
		memcpy(f->span.begin, f->img, f->written);
		break;
	case 2:		/* the encoder writes on */
		if (!f->open)
			break;
		len = (uint32_t)(f->span.end - f->span.begin);
		n = f->written + get16(in) % (len + 1);
		n = n < len ? n : len;
		memcpy(f->span.begin + f->written, f->img + f->written,
		       n - f->written);
		f->written = n;
		break;
	case 3:		/* close */
		n = get16(in);
		if (!f->open) {
			CHECK(tb_writer_close(w, n, 0) == TB_ENOTOPEN);
			break;
		}
		len = (uint32_t)(f->span.end - f->span.begin);
		n %= len + 2;
		if (n > len) {
			CHECK(tb_writer_close(w, n, 0) == TB_ESIZE);
			break;
		}
		if (n < 4)
			memset(f->span.begin, 0, n);
		else if (n > f->written)
			memcpy(f->span.begin + f->written,
			       f->img + f->written, n - f->written);
		ret = tb_writer_close(w, n, get(in) & 1 ? TB_CLOSE_CONT_NEXT :
							 0);
		TRACE("  close size %u tag %u -> %d\n", n, f->tag, ret);
		CHECK(ret == TB_OK || ret == TB_DROPPED || ret == TB_EPROTO);
		if (mainc.honest)
			CHECK(ret != TB_EPROTO);
		f->open = 0;
		if (ret == TB_OK && n >= 4 && f->tag)
			set_bit(F.must[k], f->tag);
		if (ret == TB_OK && (n < 4 || !f->tag))
			note_untagged(k);
		if (ret == TB_DROPPED)
			note_loss(k, LOSS_CLOSE);
		break;
	case 4:		/* sync: relocate the open fragment if scraped */
		n = get16(in);
		if (!f->open) {
			CHECK(tb_writer_sync(w, 0, &s) == TB_ENOTOPEN);
			break;
		}
		len = (uint32_t)(f->span.end - f->span.begin);
		if (n & 0x8000 && n % 4 == 0) {
			CHECK(tb_writer_sync(w, len + 1, &s) == TB_ESIZE);
			break;
		}
		n %= f->written + 1;
		ret = tb_writer_sync(w, n, &f->span);
		TRACE("  sync used %u -> %d\n", n, ret);
		CHECK(ret == TB_OK || ret == TB_DROPPED || ret == TB_EPROTO);
		if (mainc.honest)
			CHECK(ret != TB_EPROTO);
		if (ret != TB_OK) {
			f->open = 0;
			note_loss(k, LOSS_SYNC);
			break;
		}
		check_span(&f->span, n);
		/* the fragment's first @n bytes are at span.begin now */
		if (mainc.honest)
			CHECK(!memcmp(f->span.begin, f->img, n));
		f->written = n;
		break;
	case 5:
		ret = tb_writer_release(w);
		TRACE("  release -> %d\n", ret);
		CHECK(ret == TB_OK || ret == TB_DROPPED || ret == TB_EPROTO);
		if (mainc.honest)
			CHECK(ret != TB_EPROTO);
		if (f->open || ret != TB_OK) {	/* the open one is dropped */
			f->open = 0;
			note_loss(k, LOSS_RELEASE);
		}
		break;
	case 6:		/* dies: no release */
		writer_reinit(k);
		break;
	default:
		tb_writer_record_loss(w);
		note_loss(k, LOSS_RECORD);
		break;
	}
}

/* ---- Hostile words ----------------------------------------------------- */

static const uint8_t edge_n[] = { 1, 2, 125, 126, 249, 250, 251, 252,
				  253, 254, 255 };

/* A state word worth trying at @pos. */
static uint32_t craft(struct in *in, uint32_t pos)
{
	const struct tb_ring *r = &F.rring;
	unsigned b = get(in), n, fmt;
	uint32_t d = (uint32_t)(int32_t)(int8_t)get(in), flags;

	switch (b % 8) {
	case 0:
		return get32(in);
	case 1:		/* the free tag of a nearby position, or off by d */
		return tb_state_free(tb_ring_wrap(r, pos + (d >> 2) *
						  r->num_chunks) + (d & 3));
	case 2:
		n = get(in);
		n = n & 1 ? edge_n[n / 2 % sizeof(edge_n)] : n;
		fmt = b & 0x40 ? get(in) : 0;
		flags = (uint32_t)get(in) << 24;
		return tb_state_data(1 + b / 8 % 3, fmt, flags, n,
				     (uint16_t)get16(in));
	case 3:
		return TB_WORD_ACKED;
	case 4:
		return TB_WORD_ACKED | (get32(in) & TB_LOW_MASK);
	case 5:		/* reserved states */
		return (5u + b / 8 % 3) << TB_STATE_SHIFT |
		       (get32(in) & TB_LOW_MASK);
	case 6:		/* as a reader that died before storing read_pos */
		return tb_state_free(tb_ring_next_wrap(r, pos));
	default:	/* another chunk's word */
		return *tb_ring_word(r, get(in));
	}
}

/*
 * A directory of @n entries for chunk @idx: raw bytes, or sizes that sum
 * to the free space plus a small (signed) excess (one value in every
 * entry when there is no free space).  With @mode bit 1 a Complete or
 * Acquired word publishes it.
 */
static void craft_dir(struct in *in, uint32_t idx)
{
	uint8_t *chunk = F.rring.chunks + (size_t)idx * F.cs;
	unsigned n = get(in), mode = get(in), i;
	int32_t cap, each, extra;

	n = n & 1 ? edge_n[n / 2 % sizeof(edge_n)] : n;
	if (!n)
		n = 1;
	cap = (int32_t)F.cs - (int32_t)TB_FRAG_PAYLOAD_OFF -
	      (int32_t)(n * F.w);
	if (mode & 1) {
		for (i = 0; i < n * F.w; i++)
			chunk[F.cs - 1 - i] = (uint8_t)get(in);
	} else if (cap < 0) {
		memset(chunk + F.cs - n * F.w, get(in), n * F.w);
	} else {
		each = cap / (int32_t)n;
		extra = cap - each * (int32_t)n + (int8_t)get(in) % 4;
		for (i = 0; i < n; i++) {
			int32_t s = each + (i ? 0 : extra);

			s = s < 0 ? 0 : s;
			s = F.w == 1 && s > 255 ? 255 : s;
			tb__frag_put_le(chunk + tb__frag_entry_off(F.cs, F.w, i),
				       F.w, (uint32_t)s);
		}
	}
	if (mode & 2)
		*(uint32_t *)(void *)chunk = tb_state_data(
			mode & 4 ? TB_ACQUIRED : TB_COMPLETE, TB_FORMAT_TARGET,
			0, n, (uint16_t)get16(in));
}

/* Hostile scribbles; all of them mark the run hostile. */
static void scribble(unsigned kind, struct in *in)
{
	struct tb_ring_hdr *h = F.rring.hdr;
	uint32_t pos = C->pos, idx, off, n, i;

	mainc.honest = 0;
	TRACE("scribble %u\n", kind % 6);
	switch (kind % 6) {
	case 0:		/* the word at the reader's position */
		*tb_ring_word(&F.rring, pos) = craft(in, pos);
		break;
	case 1:		/* any chunk's word, tagged for a nearby lap */
		idx = get(in) % F.nc;
		*tb_ring_word(&F.rring, idx) =
			craft(in, pos + ((idx - pos) & (F.nc - 1)));
		break;
	case 2:		/* cursors */
		n = (uint32_t)(int32_t)(int8_t)get(in);
		i = get(in);
		if (i & 1)
			h->write_pos = i & 2 ? get32(in) : h->write_pos + n;
		else
			h->read_pos = i & 2 ? get32(in) : h->read_pos + n;
		break;
	case 3:		/* a directory at the reader's position */
		craft_dir(in, tb_pos_index(pos, F.nc));
		break;
	case 4:		/* a directory anywhere */
		craft_dir(in, get(in) % F.nc);
		break;
	default:	/* raw bytes anywhere: header, BufferID, payload */
		off = get16(in) % F.len;
		n = get(in) % 16;
		for (i = 0; i < n && off + i < F.len; i++)
			F.mem[off + i] = (uint8_t)get(in);
		break;
	}
}

/* ---- Actions in the middle of a reader call ------------------------- */

static void plan(struct in *in)
{
	unsigned i, j;

	F.nact = get(in) % (MAXACT + 1);
	for (i = 0; i < F.nact; i++) {
		F.act[i].at = 1 + get(in) % 24;
		F.act[i].kind = get(in);
		/* a repeated one can make the reader lose every race */
		F.act[i].left = F.act[i].kind & 0x80 ? 2 + TB_READ_BUDGET : 1;
		for (j = 0; j < sizeof(F.act[i].arg); j++)
			F.act[i].arg[j] = (uint8_t)get(in);
	}
}

/* Runs the actions planned before reader access @acc; 1 if any ran. */
static int run_actions(unsigned acc)
{
	unsigned i, ran = 0;
	int saved = F.actor;

	if (C != &mainc || mainc.stopped)
		return 0;
	for (i = 0; i < F.nact; i++) {
		struct act *a = &F.act[i];
		uint8_t arg[sizeof(a->arg)];
		struct in in = { arg + 1, sizeof(arg) - 1 };

		if (!a->left || a->at > acc ||
		    (a->at < acc && !(a->kind & 0x80)))
			continue;
		a->left--;
		ran = 1;
		memcpy(arg, a->arg, sizeof(arg));
		arg[sizeof(arg) - 1] ^= (uint8_t)a->left; /* vary repeats */
		arg[4] ^= (uint8_t)a->left;
		F.nact_run++;
		F.actor = ACT_NONE;
		if (a->kind & 1)	/* another actor's step */
			wop(arg[0] % F.nw, a->kind >> 1 & 7, &in);
		else
			scribble(a->kind >> 1 & 7, &in);
		F.actor = saved;
	}
	return ran;
}

/* ---- tb_ring_attach on raw header bytes ------------------------------ */

/* Ring memory at its exact size, aligned to TB_RING_LINE as attach wants. */
static void *line_alloc(size_t len)
{
	void *p;

	return posix_memalign(&p, TB_RING_LINE, len ? len : 1) ? NULL : p;
}

static void attach_raw(struct in *in)
{
	static struct rchk rawc;
	unsigned cl = 7 + get(in) % 10, nl = get(in) % 32, k, i, mis;
	size_t need = 0, len;
	uint32_t hdr[TB_RING_HDR_SIZE / 4];
	struct tb_reader rd;
	struct tb_ring r;
	uint8_t *mem, *scratch;
	int ret, valid, want;

	if (cl >= 8 && cl <= 15 && nl >= 1 && nl <= 30)
		need = tb_ring_size(1u << cl, 1u << nl);
	switch (get(in) % 4) {
	case 0: len = need; break;
	case 1: len = need ? need - 1 : 0; break;
	case 2: len = need + get(in) % 64; break;
	default: len = get16(in) % 4096; break;
	}
	if (len > 128 * 1024)
		len = get16(in) % 4096;
	memset(hdr, 0, sizeof(hdr));
	hdr[0] = TB_RING_MAGIC;
	hdr[1] = TB_RING_VERSION;
	hdr[2] = TB_RING_HDR_SIZE;
	hdr[3] = cl;
	hdr[4] = nl;
	hdr[16] = hdr[32] = get(in);	/* write_pos, read_pos */
	k = get(in) % 6;
	for (i = 0; i < k; i++) {
		unsigned at = get(in) % 40;

		hdr[at] = get(in) & 1 ? get32(in) : hdr[at] + (int8_t)get(in);
	}
	/* off the line by 1..63 bytes, 4-byte aligned ones included */
	mis = get(in) % 8 == 0 ? 1 + get(in) % (TB_RING_LINE - 1) : 0;
	/* the one code each cause gets, in the order they are checked */
	want = mis ? TB_EALIGN : len < TB_RING_HDR_SIZE ? TB_ESHORT :
	       hdr[0] != TB_RING_MAGIC ? TB_EMAGIC :
	       hdr[1] != TB_RING_VERSION ? TB_EVERSION :
	       hdr[2] != TB_RING_HDR_SIZE ? TB_EHEADER :
	       hdr[3] < 8 || hdr[3] > 15 || hdr[4] < 1 || hdr[4] > 30 ?
	       TB_EGEOMETRY :
	       len < tb_ring_size(1u << hdr[3], 1u << hdr[4]) ? TB_ESHORT :
	       TB_OK;
	valid = want == TB_OK;
	mem = (uint8_t *)line_alloc(len + mis);
	CHECK(mem);
	memset(mem, 0, len + mis);
	memcpy(mem + mis, hdr, len < sizeof(hdr) ? len : sizeof(hdr));
	/* a few chunk words from the input */
	k = get(in) % 4;
	for (i = 0; len > TB_RING_HDR_SIZE && i < k; i++)
		mem[mis + TB_RING_HDR_SIZE +
		    get16(in) % (len - TB_RING_HDR_SIZE)] = (uint8_t)get(in);
	ret = tb_ring_attach(&r, mem + mis, len);
	CHECK(ret == want);
	if (ret != TB_OK) {
		free(mem);
		return;
	}
	CHECK(valid && !mis);
	CHECK(r.hdr == (struct tb_ring_hdr *)(void *)mem &&
	      r.chunks == mem + TB_RING_HDR_SIZE &&
	      r.chunk_size == 1u << hdr[3] && r.num_chunks == 1u << hdr[4] &&
	      tb_ring_size(r.chunk_size, r.num_chunks) <= len &&
	      r.width == tb_frag_width(r.chunk_size));
	/* a reader on it: the same checks, nothing honest about it */
	scratch = (uint8_t *)malloc(r.chunk_size);
	CHECK(scratch);
	C = &rawc;
	rawc.honest = 0;
	reader_init(&rd, &r, scratch);
	reader_drain(&rd, 1 + get(in) % 4, get(in) & 1 ? TB_READ_SCRAPE :
							TB_READ_LAZY);
	reader_one(&rd, TB_READ_SCRAPE);
	C = &mainc;
	free(scratch);
	free(mem);
}

/* ---- The run ------------------------------------------------------------ */

static uint32_t start_pos(struct in *in, unsigned sel)
{
	uint32_t d = get(in);

	switch (sel % 8) {
	case 0: return 0;
	case 1: return d;
	case 2: return 0u - d;			/* 2^32 rollover */
	case 3:				/* the wrap tags roll over */
		return (TB_WRAP_MASK << __builtin_ctz(F.nc)) - d;
	case 4: return 0x80000000u - d;
	default: return get32(in);
	}
}

/* Honest run: release everything, one drain resolves the ring. */
static void finish(void)
{
	uint32_t dist, t;
	unsigned k;
	int ret;

	F.nact = 0;
	for (k = 0; k < F.nw; k++) {
		ret = tb_writer_release(&F.fw[k].w);
		CHECK(ret == TB_OK || ret == TB_DROPPED);
		F.fw[k].open = 0;
	}
	if (mainc.stopped)
		return;
	dist = tb_pos_distance(F.rring.hdr->write_pos, mainc.pos);
	CHECK(dist <= F.nc);
	ret = reader_drain(&F.rd, 2 * F.nc, TB_READ_SCRAPE);
	CHECK(ret >= 0 && (uint32_t)ret == dist);
	CHECK(F.rring.hdr->read_pos == F.rring.hdr->write_pos);
	for (k = 0; k < F.nw; k++)
		for (t = 1; t <= F.next_tag[k]; t++)
			if (bit(F.must[k], t))
				CHECK(bit(F.seen[k], t));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t sizes[] = { 256, 512, 1024, 256 };
	struct in in = { data, size };
	unsigned cfg = get(&in), cfg2 = get(&in), k, ops = 0;
	uint8_t *rscratch;

	tb_test_atomic = seam;
	memset(&F, 0, offsetof(struct fz, must));
	memset(F.must, 0, sizeof(F.must));
	memset(F.seen, 0, sizeof(F.seen));
	memset(&mainc, 0, sizeof(mainc));
	C = &mainc;
	mainc.honest = 1;
	F.cs = sizes[cfg & 3];
	F.nc = 2u << (cfg >> 2 & 3);
	F.w = tb_frag_width(F.cs);
	F.nw = 1 + (cfg >> 4 & 3) % NW;
	F.len = tb_ring_size(F.cs, F.nc);
	F.mem = (uint8_t *)line_alloc(F.len);
	CHECK(F.mem);
	memset(F.mem, 0, F.len);
	CHECK(tb_ring_init_at(&F.ring, F.mem, F.len, F.cs, F.nc,
			      start_pos(&in, cfg2)) == TB_OK);
	if (cfg2 & 8)	/* the reader maps the ring on its own */
		CHECK(tb_ring_attach(&F.rring, F.mem, F.len) == TB_OK &&
		      F.rring.chunk_size == F.cs && F.rring.num_chunks == F.nc);
	else
		F.rring = F.ring;
	F.distinct = 1;
	for (k = 0; k < F.nw; k++) {
		F.fw[k].id = (uint16_t)(cfg2 & 16 ? get16(&in) : k + 1);
		if (!F.fw[k].id)
			F.fw[k].id = 1;		/* 0 is refused (TB_EID) */
		F.fw[k].scratch = (uint8_t *)malloc(F.cs);
		CHECK(F.fw[k].scratch);
		writer_reinit(k);
		if (k && F.fw[k].id == F.fw[k - 1].id)
			F.distinct = 0;
		if (k == 2 && F.fw[2].id == F.fw[0].id)
			F.distinct = 0;
	}
	/*
	 * Two live writers with one id are outside the honest checks: the
	 * reuse CAS of one can win on the other's chunk (same word), and the
	 * bytes it then appends sit behind its own, stale, cursor.
	 */
	if (!F.distinct)
		mainc.honest = 0;
	rscratch = (uint8_t *)malloc(F.cs);
	CHECK(rscratch);
	reader_init(&F.rd, &F.rring, rscratch);
	/* reassembly: 1 to 3 slots of 16 to 1024 bytes */
	k = (16u << (cfg >> 6)) * (cfg2 >> 7 ? 8 : 1);
	F.ralen = tb_reassembly_size(1 + (cfg2 >> 5) % 3, k);
	F.ramem = (uint8_t *)malloc(F.ralen);
	CHECK(F.ramem);
	CHECK(tb_reassembly_init(&F.ra, F.ramem, F.ralen, 1 + (cfg2 >> 5) % 3,
				 k, cfg & 0x40 ? TB_OVERSIZE_TRUNCATE :
						 TB_OVERSIZE_DROP) == TB_OK);

	while (in.n && ops++ < MAXOPS) {
		unsigned op = get(&in);

		switch (op % 16) {
		case 0: case 1: case 2: case 3: case 4: case 5:
			wop((op >> 4) % F.nw, get(&in), &in);
			break;
		case 6: case 7:
			reader_drain(&F.rd, 1 + (op >> 4) % 8,
				     op & 0x80 ? TB_READ_SCRAPE :
						 TB_READ_LAZY);
			F.nact = 0;
			break;
		case 8:
			reader_one(&F.rd, op & 0x80 ? TB_READ_SCRAPE :
						      TB_READ_LAZY);
			F.nact = 0;
			break;
		case 9:
			plan(&in);
			break;
		case 10: case 11:
			scribble(op >> 4, &in);
			break;
		case 12:	/* a restarted reader continues */
			if (op & 0x20)
				reader_packets(&F.rd, 1 + (op >> 6),
					       op & 0x10 ? TB_READ_SCRAPE :
							   TB_READ_LAZY);
			else if (op & 0x10)
				reader_init(&F.rd, &F.rring, rscratch);
			else
				(void)tb_reader_idle(&F.rd);
			break;
		case 13:
			attach_raw(&in);
			break;
		default: {
			struct tb_ring_stats st;

			tb_ring_stats(&F.rring, &st);
			(void)tb_reader_pinned(&F.rd);
			break;
		}
		}
	}
	if (mainc.honest)
		finish();
	tb_test_atomic = NULL;
	for (k = 0; k < F.nw; k++)
		free(F.fw[k].scratch);
	free(rscratch);
	free(F.ramem);
	free(F.mem);
	return 0;
}
