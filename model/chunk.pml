/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * model/chunk.pml - a Promela model of tbring.h's chunk state protocol.
 *
 * One reader and NW writers share NCHUNK chunks, each arbitrated by one
 * state word: FreeForWrap(tag), Acquired(w,n), Complete(w,n),
 * RewriteRequested(w,n), Acknowledged (docs/protocol.md sections 3, 4, 5).
 * spin explores every interleaving of the steps below and checks the
 * properties listed further down; model/run.sh runs the configurations,
 * the mutations and the probes, and prints state counts and times.
 *
 * What mirrors what in tbring.h (names as of this commit; the protocol
 * steps under the names TB_PROTOCOL_STEPS gives them, tb__w_* and tb__r_*
 * inside the header)
 *
 *   init              tb_ring_init_at(): cursors at START, every chunk
 *                     stamped with the free tag of the first position
 *                     >= START that maps to it.
 *   reader()          tb_reader_drain() / tb_reader_read_one() in
 *                     TB_READ_SCRAPE mode.
 *     r_step()        tb__reader_resolve(), in its two shared steps:
 *                     (1) load write_pos, the forged-cursor check,
 *                     tb_ring_load_state() and tb__reader_copy() of the
 *                     published prefix; (2) the arbitrating CAS -
 *                     tb_ring_advance(), tb_ring_mark_rewrite(),
 *                     tb_ring_reclaim_complete() or tb_ring_reclaim_acked()
 *                     - then tb__reader_done(), or tb__reader_stop() on a
 *                     protocol error.  A lost CAS redispatches on the word
 *                     it returned, at most TB_READ_BUDGET (RBUDGET) times,
 *                     then TB_RETRY_LATER.
 *     r_done()        tb__reader_done() and tb__reader_step()'s store of
 *                     read_pos right after the transition.  BATCH=1 models
 *                     the older once-per-pass store instead.
 *     r_emit()        the chunk callback: where emitted fragments are
 *                     checked.
 *     r_solo()        a whole drain pass while every writer is frozen.
 *   writer(w)
 *     w_claim()       tb__writer_claim(): tb_ring_reserve() - read_pos
 *                     acquire-loaded BEFORE write_pos in every iteration
 *                     (issue 7's order), the full check, the write_pos
 *                     CAS - then one tb_ring_claim() against
 *                     FreeForWrap(wrap(pos)), computed from the saved
 *                     position.  A lost claim burns the position (a hole)
 *                     and spends TB_CLAIM_BUDGET (BUDGET).  A full ring is
 *                     TB_FULL, or for writer 0 (TB_STALL) a wait in
 *                     tb__writer_stall() until read_pos moves or it times
 *                     out; once a position burned, TB_NO_CHUNK at once.
 *     w_open()        tb_writer_open(): tb_ring_reuse() of the cached
 *                     Complete chunk, else a fresh claim; a failed claim is
 *                     tb_writer_record_loss() (the fragment is dropped, as
 *                     tb_writer_write_packet() drops the packet).
 *     w_close()       tb_writer_close() -> tb__writer_publish(): publish
 *                     Complete; keep the chunk when tb__writer_cacheable().
 *     w_next()        close the open fragment, open the next one in the
 *                     same chunk and publish the closed count while it is
 *                     open: Acquired(n) -> Acquired(n+1).  That is the
 *                     cur.open branch of tb__writer_publish(), which
 *                     tbring.h reaches today only after a relocation; the
 *                     model lets a writer take it at any close (GENERAL).
 *     w_sync()        tb_writer_sync(): one load of the word; if scraped,
 *                     relocate the open fragment now.
 *     w_relocate()    tb__writer_relocate(): copy the unpublished suffix
 *                     (closed fragments and the open one) to scratch,
 *                     tb_ring_acknowledge(), claim a replacement, restore;
 *                     no replacement -> tb__writer_drop().
 *     w_publish()     the TB_RELOCATE_ROUNDS (ROUNDS) loop of
 *                     tb__writer_publish(), then tb__writer_abandon() and
 *                     tb__writer_drop().
 *     w_release()     tb_writer_release() with a fragment open: it is
 *                     dropped and the closed ones published (Complete(0)
 *                     if there are none, which the reader takes as a hole).
 *     died            a writer that stops for good while it holds an
 *                     Acquired chunk, or between reserve and claim (killed,
 *                     or never scheduled again): the reader must not care.
 *
 * What is abstracted
 *   - Payload and directory bytes are fragment ids in slot[chunk][i]:
 *     fragment s of writer w is FID(w, s).  Opening a fragment writes its
 *     id; the reader's copy is the ids of the first n slots; a relocation
 *     copies the suffix slots to scratch and writes them back.  A new owner
 *     clears the chunk's slots when it claims it: it may overwrite all of
 *     it.  Sizes, BufferID, format and the three payload flags (so the
 *     data-loss and continuation bookkeeping) are left out: they ride in
 *     the word but never decide who owns it.
 *   - One fragment per packet; fragments always fit; the reader validates
 *     nothing (a malformed directory changes no transition,
 *     docs/protocol.md 2.4).
 *   - The lazy read mode is left out: TB_PENDING changes nothing, which
 *     spin already covers by not scheduling the reader.
 *   - Doorbells, futexes and statistics are left out; a stalled writer's
 *     wait is "read_pos moved, or time out".
 *   - The word is an int, the state above bit 8 and below it the free tag
 *     or n << 4 | writer.  Only whole words are compared, as in tbring.h.
 *     Every writer has its own id, as tbring.h requires of live writers:
 *     the id in the word is what makes a writer's exact-word CASes its own.
 *   - Steps are merged where nothing else can look in between: a writer's
 *     copy of its suffix and its acknowledge are one step (while the word
 *     is RewriteRequested nobody else touches the chunk; MUT_ACK_EARLY
 *     splits them), as are the reader's load of the word and its copy (the
 *     published prefix cannot change until the reader's own CAS), and its
 *     CAS and read_pos store (a writer that loads read_pos in between sees
 *     what it would have seen loading just before the CAS).
 *
 * The bounds
 *   NW writers write NF fragments each into chunks of CAP slots.  A writer
 *   calls tb_writer_sync() at most SYNCS times (each can relocate, and a
 *   fragment scraped again and again would relocate forever).  MAXRES is
 *   the horizon: a writer that would make reservation MAXRES + 1 stops
 *   there for good instead (a run the model already allows), so every run
 *   of at most MAXRES reservations in all is explored completely.
 *
 * The small position space
 *   Positions are PBITS-bit counters (P = 2^PBITS) standing for the
 *   uint32: chunk_index(p) = p & (NCHUNK - 1), wrap(p) = (p >> CBITS) &
 *   (2^WBITS - 1) standing for the 29-bit mask, next_wrap(p) = wrap(p +
 *   NCHUNK mod P).  The (chunk, tag) identity then repeats after PERIOD =
 *   min(NCHUNK * 2^WBITS, P) reservations, as docs/protocol.md section 7 has
 *   min(num_chunks * 2^29, 2^32).  Which limit bites depends on CBITS +
 *   WBITS against PBITS exactly as on log2(num_chunks) + 29 against 32:
 *     CBITS + WBITS < PBITS   the tag mask wraps first: 2 or 4 real chunks
 *     CBITS + WBITS = PBITS   both at once: 8 real chunks
 *     CBITS + WBITS > PBITS   the position wraps first and the top tag
 *                             values are never used: 16 or more real
 *                             chunks; here a blind tag increment parts
 *                             from next_wrap() (docs/protocol.md 1.5).
 *   The documented limit (tbring.h's header) is one ring tighter than the
 *   period, because resolving p already stamps the word for p + NCHUNK: a
 *   writer suspended between reserve and claim may be fooled once LIMIT =
 *   PERIOD - NCHUNK further reservations were made.  The model asserts
 *   that no stale claim succeeds below LIMIT; the probe -DREACH asserts
 *   that none succeeds at exactly LIMIT, and run.sh requires that probe to
 *   fail: the limit is reached and it is exact.  A claim beyond the limit,
 *   and a reservation that found room only through a read_pos sample
 *   older than P - NCHUNK positions (the 2^32 rollover of a suspended
 *   reservation), are beyond what the protocol promises: such a writer is
 *   parked (it stops, counted as dead) rather than void the properties.
 *
 * Properties (each a named assert; the name is what pan prints)
 *   P_no_double_emit      no fragment is emitted twice.
 *   P_writer_fifo         one writer's fragments are emitted in the order
 *                         it wrote them (gaps are drops).
 *   P_not_behind_reader   no writer claims, reuses or publishes a chunk
 *                         for a position the reader already resolved
 *                         (below the identity limit).
 *   P_emitted_or_dropped  only published fragments are emitted; at the
 *                         end every published fragment was emitted, none
 *                         was both emitted and dropped, and every fragment
 *                         of a writer that did not die was emitted or
 *                         counted dropped.
 *   P_no_protocol_error   the reader never meets a mismatched free tag, a
 *                         reserved state, a failed Acknowledged reclaim or
 *                         a forged cursor; a writer never finds a scraped
 *                         word that is not its own, nor fails to
 *                         acknowledge.
 *   P_sane_read_sample    reserve never sees read_pos ahead of write_pos
 *                         (issue 7: a spurious TB_FULL on an idle ring).
 *   P_reader_never_waits  (a) -DNOWAIT adds an ltl claim: in every
 *                         reachable state the reader process is enabled
 *                         until it has finished, i.e. none of its
 *                         statements blocks on what a writer does.  Its
 *                         guards read only its own variables, read_pos
 *                         (which only it writes) and, to finish, the count
 *                         of finished writers.  (b) r_solo(): from every
 *                         state, with every writer frozen, one drain pass
 *                         resolves every reserved position without losing
 *                         a CAS and within 2 * NCHUNK + 1 steps.  It runs
 *                         in a d_step, where pan reports any statement
 *                         that would block ("blocking sel in d_step").
 *
 * spin is sequentially consistent: this checks the protocol's logic (who
 * may change which word when, and what each CAS compares against), not
 * whether tbring.h's acquire/release placement suffices on a weak machine.
 *
 * Mutations, each to be caught (run.sh):
 *   MUT_ZERO_FREE     the free word is all zero, no wrap tag (see
 *                     docs/protocol.md 3.3).
 *   MUT_BLIND_INC     the reader stamps the tag it found + 1 (masked)
 *                     instead of next_wrap(pos).
 *   MUT_ACK_EARLY     the writer acknowledges before copying its suffix.
 *   MUT_SHORT_ID      the protocol's tag mask has one bit less than the
 *                     documented WBITS: a shorter identity period.
 *   MUT_WR_FIRST      reserve loads write_pos before read_pos (the order
 *                     issue 7 fixed).
 *   MUT_READER_WAITS  the reader waits on an Acquired chunk until its
 *                     writer changes the word, instead of scraping it.
 *   MUT_REVERSE_EMIT  the reader hands a chunk's fragments over backwards.
 *   MUT_RELOC_FROM_0  a relocation copies its suffix from slot 0, not from
 *                     the count the reader took.
 *
 * Scenarios (COVER(n); pan prints the ones a run reached, "cover: ..."):
 *    1 reader resolves an unclaimed position     12 reuse of a cached chunk
 *    2 a lost claim burns a position             13 reuse lost to the reader
 *    3 ... because the reader passed it first    14 Acquired(n) -> (n+k)
 *    4 scrape of a published prefix                with a fragment open
 *    5 scrape of Acquired(0)                     15 open fragment relocated
 *    6 reclaim of Complete(n > 0)                16 closed suffix relocated
 *    7 reclaim of Complete(0)                    17 suffix dropped: no
 *    8 an older RewriteRequested: a hole            replacement
 *    9 reclaim of Acknowledged                   18 TB_RELOCATE_ROUNDS spent
 *   10 reader loses a CAS, redispatches          19 TB_FULL
 *   11 TB_RETRY_LATER                            20 a stall that resumed
 *   21 TB_NO_CHUNK                               22 claim after the rollover
 */

/* ---- configuration (run.sh passes -D...) ------------------------------ */
#ifndef NCHUNK
#define NCHUNK	2
#endif
#ifndef CBITS
#define CBITS	1		/* log2(NCHUNK) */
#endif
#ifndef WBITS
#define WBITS	1		/* free tag bits: the 29 */
#endif
#ifndef PBITS
#define PBITS	3		/* position bits: the 32 */
#endif
#ifndef START
#define START	6		/* first position: near the rollover */
#endif
#ifndef NW
#define NW	2		/* writers */
#endif
#ifndef NF
#define NF	2		/* fragments each writer writes */
#endif
#ifndef CAP
#define CAP	2		/* fragments a chunk holds */
#endif
#ifndef BUDGET
#define BUDGET	2		/* TB_CLAIM_BUDGET */
#endif
#ifndef ROUNDS
#define ROUNDS	2		/* TB_RELOCATE_ROUNDS */
#endif
#ifndef RBUDGET
#define RBUDGET	2		/* TB_READ_BUDGET */
#endif
#ifndef GENERAL
#define GENERAL	1		/* w_next(): publish while a fragment is open */
#endif
#ifndef DIE
#define DIE	1		/* writers may stop for good */
#endif
#ifndef BATCH
#define BATCH	0		/* 1: read_pos published once per pass */
#endif
#ifndef SOLO
#define SOLO	1		/* r_solo() from every state */
#endif
#ifndef MAXRES
#define MAXRES	5		/* horizon: reservations explored in all */
#endif
#ifndef SYNCS
#define SYNCS	1		/* tb_writer_sync() calls per writer */
#endif
#define STALL(w)	((w) == 0)
/*
 * Scenario probes: COVER(n) marks that scenario n happened.  The marks
 * live in C memory outside the state vector (pan neither stores nor
 * undoes them), so they cost no states; pan prints them when it exits.
 * With -DCOVER_ID=n the probe is an assertion instead, to get a trail.
 */
#define NCOVER		23
#ifdef COVER_ID
#define COVER(n)	assert(COVER_ID != (n))
#else
#define COVER(n)	c_code { tb_cover[n] = 1; }
#endif
c_decl {
	unsigned char tb_cover[NCOVER];
	static void tb_cover_print(void)
	{
		int n;

		printf("cover:");
		for (n = 1; n < NCOVER; n++)
			if (tb_cover[n])
				printf(" %d", n);
		printf("\n");
	}
}	/* writer 0 is TB_STALL, others TB_DROP */

#define P	(1 << PBITS)
#define PMASK	(P - 1)
#define DIST(a, b)	(((a) + P - (b)) & PMASK)	/* uint32(a - b) */

/* The documented identity period and the limit the model promises. */
#define PERIOD_T	(NCHUNK << WBITS)
#define PERIOD		(PERIOD_T < P -> PERIOD_T : P)
#define LIMIT		(PERIOD - NCHUNK)

/* The tag bits the protocol actually uses (mutations shrink them). */
#if defined(MUT_ZERO_FREE)
#define TBITS	0
#elif defined(MUT_SHORT_ID)
#define TBITS	(WBITS - 1)
#else
#define TBITS	WBITS
#endif
#define TMASK		((1 << TBITS) - 1)
#define CH(p)		((p) & (NCHUNK - 1))		/* tb_pos_index */
#define WRAP(p)		(((p) >> CBITS) & TMASK)	/* tb_pos_wrap */
#define NEXT_WRAP(p)	WRAP(((p) + NCHUNK) & PMASK)	/* tb_pos_next_wrap */
#ifdef MUT_BLIND_INC
#define STAMP(p)	((WRAP(p) + 1) & TMASK)		/* found tag + 1 */
#else
#define STAMP(p)	NEXT_WRAP(p)
#endif

/* The state word. */
#define S_FREE	0
#define S_ACQ	1
#define S_CPL	2
#define S_REW	3
#define S_ACK	4
#define FREEW(t)	(t)
#define DATAW(s, n, w)	(((s) << 8) | ((n) << 4) | (w))
#define ACKW		(S_ACK << 8)
#define ST(x)		((x) >> 8)
#define NFR(x)		(((x) >> 4) & 15)
#define WITH(x, s)	(((x) & 255) | ((s) << 8))	/* tb_state_with */

/* Fragment ids: 0 is "nothing". */
#define FID(w, s)	((w) * NF + (s) + 1)
#define FW(f)		(((f) - 1) / NF)
#define FS(f)		(((f) - 1) % NF)
#define NFRAG		(NW * NF + 1)

#define O_NONE		0	/* TB__OWN_NONE */
#define O_ACQ		1	/* TB__OWN_ACQUIRED: a fragment is open */
#define O_CACHED	2	/* TB__OWN_CACHED */

/* ---- shared state ------------------------------------------------------ */
short state[NCHUNK];		/* the state words */
byte slot[NCHUNK * CAP];	/* payload: fragment ids */
byte write_pos;
byte read_pos;

/* ---- ghosts: what the properties need, invisible to the protocol ------- */
byte wabs;			/* reservations made (absolute write_pos) */
byte rabs;			/* positions resolved (absolute reader cursor) */
byte rpub;			/* absolute value of the published read_pos */
bit emitted[NFRAG];
bit published[NFRAG];
bit dropped[NFRAG];
byte last[NW];			/* next sequence number allowed per writer */
byte fin[NW];			/* fragments a finished writer started */
bit dead[NW];			/* stopped for good (or parked) */
byte wdone;			/* writers finished */
bit rlive;			/* the reader exists */
bit rdone;			/* the reader finished its final pass */

/* Always 0: they only name the assertion that fired. */
hidden byte P_no_double_emit;
hidden byte P_writer_fifo;
hidden byte P_not_behind_reader;
hidden byte P_emitted_or_dropped;
hidden byte P_no_protocol_error;
hidden byte P_sane_read_sample;
hidden byte P_reader_never_waits;
hidden byte REACH_identity_limit;

/* ---- reader ------------------------------------------------------------ */

/* tb__reader_copy(): the ids of the published prefix, to private memory. */
inline r_copy()
{
	rn = ((ST(word) == S_ACQ || ST(word) == S_CPL) -> NFR(word) : 0);
	if
	:: rn > CAP -> rn = 0	/* tb_frag_dir_fits() fails: take nothing */
	:: else
	fi;
	i = 0;
	do
	:: i < CAP -> rc[i] = (i < rn -> slot[CH(rpos) * CAP + i] : 0); i++
	:: else -> break
	od;
	i = 0
}

#ifdef MUT_REVERSE_EMIT
#define EMIT_AT(i)	(rn - 1 - (i))	/* the chunk's fragments backwards */
#else
#define EMIT_AT(i)	(i)
#endif

/* The chunk callback: the copy is ours now, exactly once. */
inline r_emit()
{
	i = 0;
	do
	:: i < rn ->
		f = rc[EMIT_AT(i)];
		assert(P_emitted_or_dropped || (f != 0 && published[f]));
		assert(P_no_double_emit || !emitted[f]);
		assert(P_writer_fifo || FS(f) >= last[FW(f)]);
		emitted[f] = 1;
		last[FW(f)] = FS(f) + 1;
		i++
	:: else -> break
	od;
	i = 0;
	f = 0
}

/* Forget the position's private state (also keeps states canonical). */
inline r_clear()
{
	busy = 0;
	budget = 0;
	word = 0;
	rn = 0;
	i = 0;
	do
	:: i < CAP -> rc[i] = 0; i++
	:: else -> break
	od;
	i = 0
}

/* tb__reader_done(): resolved, move the private cursor. */
inline r_done()
{
	rpos = (rpos + 1) & PMASK;
	rabs++;
#if !BATCH
	read_pos = rpos;	/* the per-position store, docs/protocol.md 5.1 */
	rpub = rabs;
#endif
	r_clear()
}

/* tb__reader_stop(): latched, state and read_pos left as they are. */
inline r_stop()
{
	assert(P_no_protocol_error);
	stopped = 1;
	r_clear()
}

/* A lost CAS: redispatch on the word it returned, within the budget. */
inline r_lost()
{
	assert(P_reader_never_waits || !solo);	/* frozen writers: no race */
	budget++;
	if
	:: budget == RBUDGET -> COVER(11); r_clear()	/* TB_RETRY_LATER */
	:: else -> COVER(10); word = state[CH(rpos)]; r_copy()
	fi
}

#ifdef MUT_READER_WAITS
#define R_WAITS	(ST(word) == S_ACQ)	/* waits for the writer to publish */
#else
#define R_WAITS	0
#endif

/* One shared step of tb_reader_read_one(); never blocks. */
inline r_step()
{
	if
	:: stopped -> skip
	:: !stopped && !busy ->
		if
		:: write_pos == rpos -> skip	/* TB_NODATA */
		:: write_pos != rpos && DIST(write_pos, rpos) > NCHUNK ->
			r_stop()		/* forged cursor */
		:: write_pos != rpos && DIST(write_pos, rpos) <= NCHUNK ->
			word = state[CH(rpos)];
			r_copy();
			busy = 1
		fi
	:: !stopped && busy && !R_WAITS ->
		if
		:: ST(word) == S_FREE && word != FREEW(WRAP(rpos)) ->
			r_stop()		/* mismatched free tag */
		:: ST(word) == S_FREE && word == FREEW(WRAP(rpos)) ->
			if	/* tb_ring_advance: an unclaimed position */
			:: state[CH(rpos)] == word ->
				COVER(1);
#ifdef MUT_BLIND_INC
				state[CH(rpos)] = FREEW((word + 1) & TMASK);
#else
				state[CH(rpos)] = FREEW(STAMP(rpos));
#endif
				r_done()
			:: else -> r_lost()
			fi
		:: ST(word) == S_ACQ ->
			if	/* tb_ring_mark_rewrite: take the prefix */
			:: state[CH(rpos)] == word ->
				if
				:: rn > 0 -> COVER(4)
				:: else -> COVER(5)
				fi;
				state[CH(rpos)] = WITH(word, S_REW);
				r_emit();
				r_done()
			:: else -> r_lost()
			fi
		:: ST(word) == S_CPL ->
			if	/* tb_ring_reclaim_complete */
			:: state[CH(rpos)] == word ->
				if
				:: rn > 0 -> COVER(6)
				:: else -> COVER(7)
				fi;
				state[CH(rpos)] = FREEW(STAMP(rpos));
				r_emit();
				r_done()
			:: else -> r_lost()
			fi
		:: ST(word) == S_REW ->
			COVER(8);
			r_done()		/* an older scrape: a hole */
		:: ST(word) == S_ACK ->
			if	/* tb_ring_reclaim_acked */
			:: state[CH(rpos)] == word ->
				COVER(9);
				state[CH(rpos)] = FREEW(STAMP(rpos));
				r_done()
			:: else -> r_stop()	/* failed Acknowledged reclaim */
			fi
		:: ST(word) > S_ACK ->
			r_stop()		/* reserved state */
		fi
	fi
}

/* A drain pass with every writer frozen: it must resolve all of them. */
inline r_solo()
{
	solo = 1;
	steps = 0;
	do
	:: stopped -> break
	:: !stopped && !busy && write_pos == rpos -> break
	:: else ->
		r_step();
		steps++;
		assert(P_reader_never_waits || steps <= 2 * NCHUNK + 1)
	od;
	read_pos = rpos;
	rpub = rabs;
	solo = 0;
	steps = 0
}

/* After every writer finished: the accounting. */
inline r_final()
{
	assert(P_reader_never_waits || stopped || rpos == write_pos);
	f = 1;
	do
	:: f < NFRAG ->
		assert(P_emitted_or_dropped || !(emitted[f] && dropped[f]));
		assert(P_emitted_or_dropped || !published[f] || emitted[f]);
		assert(P_emitted_or_dropped || dead[FW(f)] ||
		       FS(f) >= fin[FW(f)] || emitted[f] || dropped[f]);
		f++
	:: else -> break
	od;
	f = 0;
	rdone = 1
}

proctype reader()
{
	byte rpos = START & PMASK;	/* tb_reader.pos */
	byte rn, budget, i, f, steps;
	short word;
	byte rc[CAP];			/* the reader's scratch */
	bit busy, stopped, solo;

	do
	:: d_step { r_step() }
#ifdef MUT_READER_WAITS
	:: d_step {	/* the first prototype's reader: wait for the writer */
		busy && R_WAITS && state[CH(rpos)] != word;
		word = state[CH(rpos)];
		r_copy()
	   }
#endif
#if BATCH
	:: !busy && rpos != read_pos ->
		d_step { read_pos = rpos; rpub = rabs }
#endif
#if SOLO
	:: !busy -> d_step { r_solo() }
#endif
	:: !busy && wdone == NW -> d_step { r_solo(); r_final() }; break
	od
}

/* ---- writer ------------------------------------------------------------ */

/*
 * Each shared step below is one d_step holding exactly one access to a
 * shared word (plus ghost updates, which belong to the step they describe);
 * what is between them touches only the writer's own variables.
 */

/* No chunk held: clear what described it (keeps states canonical). */
inline w_forget()
{
	own = O_NONE;
	pos = 0;
	tk = 0;
	word = 0;
	nfr = 0;
	reloc = 0
}

/*
 * tb__writer_drop(): the k closed unpublished fragments and the open one
 * are lost and counted.  The writer knows them by sequence number (not by
 * what the chunk holds): the closed ones are seq - k .. seq - 1, the open
 * one is seq.  Pure assignments: used inside d_steps.
 */
inline w_lose()
{
	i = 0;
	do
	:: i < k -> dropped[FID(w, seq - k + i)] = 1; i++
	:: else -> break
	od;
	if
	:: open -> dropped[FID(w, seq)] = 1; seq++; open = 0
	:: else
	fi;
	i = 0;
	do
	:: i < CAP -> sc[i] = 0; i++
	:: else -> break
	od;
	i = 0;
	k = 0;
	w_forget()
}

/*
 * A claim that failed for good: restore 0 is tb_writer_record_loss() (the
 * fragment about to be opened is lost), 1 a relocated suffix without a
 * replacement.
 */
inline w_claim_failed(restore)
{
	if
	:: restore -> COVER(17)
	:: else
	fi;
	if
	:: restore -> w_lose()
	:: else -> dropped[FID(w, seq)] = 1; seq++
	fi;
	burned = 0;
	rd = 0;
	rdabs = 0;
	fail = 1
}

/*
 * tb__writer_claim(): reserve and claim a fresh chunk.  restore 0 puts a
 * newly opened fragment in it, 1 restores a relocated suffix from sc[] (k
 * closed fragments, then the open one).  ok: it worked; otherwise the loss
 * is already counted.
 */
inline w_claim(restore)
{
	burned = 0;
	ok = 0;
	do
	::
#ifndef MUT_WR_FIRST
		d_step {	/* tb_ring_reserve(): read_pos (acquire) first */
			if
			:: wabs >= MAXRES -> park = 1	/* the horizon */
			:: wabs < MAXRES -> rd = read_pos; rdabs = rpub
			fi
		};
		if
		:: park -> goto parked
		:: else
		fi;
		d_step {	/* then write_pos and its CAS */
			assert(P_sane_read_sample || rdabs <= wabs);
			if
			:: DIST(write_pos, rd) >= NCHUNK && burned > 0 ->
				COVER(21);
				w_claim_failed(restore)		/* TB_NO_CHUNK */
			:: DIST(write_pos, rd) >= NCHUNK && burned == 0 ->
				isfull = 1
			:: DIST(write_pos, rd) < NCHUNK && wabs - rpub >= NCHUNK ->
				/* room only through a sample P - NCHUNK old */
				assert(P_sane_read_sample ||
				       rpub - rdabs >= P - NCHUNK);
				park = 1
			:: DIST(write_pos, rd) < NCHUNK && wabs - rpub < NCHUNK ->
				pos = write_pos;
				write_pos = (write_pos + 1) & PMASK;
				tk = wabs;
				wabs++;
				rd = 0;
				rdabs = 0;
				got = 1
			fi
		};
#else
		/* the old order: write_pos, then read_pos, then the CAS */
		d_step {
			if
			:: wabs >= MAXRES -> park = 1	/* the horizon */
			:: wabs < MAXRES -> wr = write_pos; wrabs = wabs
			fi
		};
		if
		:: park -> goto parked
		:: else
		fi;
		d_step {
			rd = read_pos;
			rdabs = rpub;
			assert(P_sane_read_sample || rdabs <= wrabs)
		};
		d_step {
			if
			:: DIST(wr, rd) >= NCHUNK && burned > 0 ->
				w_claim_failed(restore)
			:: DIST(wr, rd) >= NCHUNK && burned == 0 ->
				isfull = 1
			:: DIST(wr, rd) < NCHUNK && write_pos != wr ->
				skip	/* lost the write_pos CAS: retry */
			:: DIST(wr, rd) < NCHUNK && write_pos == wr &&
			   wabs - rpub >= NCHUNK ->
				park = 1
			:: DIST(wr, rd) < NCHUNK && write_pos == wr &&
			   wabs - rpub < NCHUNK ->
				pos = write_pos;
				write_pos = (write_pos + 1) & PMASK;
				tk = wabs;
				wabs++;
				rd = 0;
				rdabs = 0;
				got = 1
			fi;
			wr = 0;
			wrabs = 0
		};
#endif
		if
		:: park -> goto parked
		:: fail -> fail = 0; break
		:: isfull ->	/* TB_STALL: wait for read_pos to move, or time out */
			if
			:: STALL(w) && read_pos != rd ->
				COVER(20);
				isfull = 0; rd = 0; rdabs = 0
			:: d_step { COVER(19); isfull = 0; w_claim_failed(restore) };
				fail = 0;
				break				/* TB_FULL */
			fi
		:: got ->
			got = 0;
#if DIE
			if
			:: goto died	/* reserved, never claims */
			:: true
			fi;
#endif
			d_step {	/* tb_ring_claim(): one exact attempt */
				if
				:: state[CH(pos)] == FREEW(WRAP(pos)) &&
				   tk < rabs && wabs - 1 - tk >= LIMIT ->
					/* fooled past the documented limit */
#ifdef REACH
					assert(REACH_identity_limit ||
					       wabs - 1 - tk != LIMIT);
#endif
					park = 1
				:: state[CH(pos)] == FREEW(WRAP(pos)) &&
				   !(tk < rabs && wabs - 1 - tk >= LIMIT) ->
					assert(P_not_behind_reader || tk >= rabs);
					if	/* a claim after the cursor rolled over */
					:: (START & PMASK) + tk >= P -> COVER(22)
					:: else
					fi;
					word = DATAW(S_ACQ, 0, w);
					state[CH(pos)] = word;
					i = 0;
					do
					:: i < CAP -> slot[CH(pos) * CAP + i] = 0; i++
					:: else -> break
					od;
					if
					:: restore ->	/* the relocated suffix */
						if
						:: open -> COVER(15)
						:: else
						fi;
						if
						:: k > 0 -> COVER(16)
						:: else
						fi;
						i = 0;
						do
						:: i < k + open ->
							slot[CH(pos) * CAP + i] = sc[i];
							sc[i] = 0;
							i++
						:: else -> break
						od;
						nfr = k;
						k = 0;
						reloc = 1
					:: else ->	/* a new fragment, open */
						slot[CH(pos) * CAP] = FID(w, seq);
						nfr = 0;
						open = 1;
						reloc = 0
					fi;
					i = 0;
					own = O_ACQ;
					burned = 0;
					ok = 1
				:: state[CH(pos)] != FREEW(WRAP(pos)) ->
					COVER(2);
					if
					:: tk < rabs -> COVER(3)	/* too late */
					:: else
					fi;
					burned++;	/* a hole */
					pos = 0;
					tk = 0;
					if
					:: burned == BUDGET ->
						COVER(21);
						w_claim_failed(restore)	/* TB_NO_CHUNK */
					:: else
					fi
				fi
			};
			if
			:: park -> goto parked
			:: ok -> break
			:: fail -> fail = 0; break
			:: else
			fi
		:: else -> skip		/* lost the write_pos CAS: retry */
		fi
	od
}

#ifdef MUT_RELOC_FROM_0
#define SUFFIX_AT	0		/* ignores the count the reader took */
#else
#define SUFFIX_AT	NFR(word)
#endif

/*
 * tb__writer_relocate(): seen is what the failed publish (or sync)
 * found.  Copy the suffix, acknowledge, then claim a replacement and
 * restore the suffix there.  err: the suffix was lost.
 */
inline w_relocate()
{
	k = nfr - NFR(word);
	if
	:: seen != WITH(word, S_REW) ->
		d_step {	/* not our word: touch nothing, the suffix is lost */
			assert(P_no_protocol_error);
			seen = 0;
			w_lose()
		};
		err = 1
	:: seen == WITH(word, S_REW) ->
#ifndef MUT_ACK_EARLY
		/*
		 * Copy and acknowledge in one step: while the word is
		 * RewriteRequested nobody but this writer touches the chunk.
		 */
		d_step {
			i = 0;
			do
			:: i < k + open ->
				sc[i] = slot[CH(pos) * CAP + SUFFIX_AT + i];
				i++
			:: else -> break
			od;
			i = 0;
			if	/* tb_ring_acknowledge() */
			:: state[CH(pos)] == seen -> state[CH(pos)] = ACKW
			:: else -> assert(P_no_protocol_error)
			fi;
			seen = 0
		};
#else
		d_step {	/* acknowledge first ... */
			if
			:: state[CH(pos)] == seen -> state[CH(pos)] = ACKW
			:: else -> assert(P_no_protocol_error)
			fi;
			seen = 0
		};
		d_step {	/* ... then copy: the chunk may have a new owner */
			i = 0;
			do
			:: i < k + open ->
				sc[i] = slot[CH(pos) * CAP + SUFFIX_AT + i];
				i++
			:: else -> break
			od;
			i = 0
		};
#endif
		if
		:: k == 0 && !open -> w_forget()	/* nothing to move */
		:: k > 0 || open ->
			w_forget();
			w_claim(1);
			if
			:: ok -> ok = 0
			:: else -> err = 1		/* TB_DROPPED */
			fi
		fi
	fi
}

/* tb__writer_abandon() + tb__writer_drop(), after ROUNDS scrapes. */
inline w_abandon()
{
	k = nfr - NFR(word);
	d_step {
		COVER(18);
		if	/* Complete with what it published, or acknowledge */
		:: state[CH(pos)] == word ->
			state[CH(pos)] = WITH(word, S_CPL)
		:: state[CH(pos)] == WITH(word, S_REW) ->
			state[CH(pos)] = ACKW
		:: else
		fi;
		w_lose()
	}
}

/*
 * tb__writer_publish(): Complete(nfr), or Acquired(nfr) while a fragment
 * is open; a failed CAS is a scrape: relocate and publish again.
 */
inline w_publish()
{
	rounds = 0;
	err = 0;
	do
	:: rounds == ROUNDS -> w_abandon(); break
	:: rounds < ROUNDS && open && nfr == NFR(word) ->
		break				/* nothing new: stay Acquired */
	:: rounds < ROUNDS && !(open && nfr == NFR(word)) ->
		d_step {	/* tb_ring_publish() */
			seen = state[CH(pos)];
			if
			:: seen == word ->
				assert(P_not_behind_reader || tk >= rabs);
				if	/* Acquired(n) -> Acquired(nfr), still open */
				:: open && nfr > NFR(word) -> COVER(14)
				:: else
				fi;
				i = NFR(word);
				do
				:: i < nfr ->
					published[FID(w, seq - nfr + i)] = 1;
					i++
				:: else -> break
				od;
				i = 0;
				word = DATAW((open -> S_ACQ : S_CPL), nfr, w);
				state[CH(pos)] = word;
				seen = 0;
				ok = 1;
				if	/* tb__writer_cacheable() */
				:: !open && !reloc && nfr < CAP -> own = O_CACHED
				:: !open && (reloc || nfr == CAP) -> w_forget()
				:: open
				fi
			:: else
			fi
		};
		if
		:: ok -> ok = 0; break
		:: else ->
			w_relocate();
			if
			:: err || own == O_NONE -> break
			:: !err && own == O_ACQ && nfr == 0 ->
				break		/* only the open fragment moved */
			:: !err && own == O_ACQ && nfr > 0 -> rounds++
			fi
		fi
	od;
	rounds = 0;
	err = 0
}

/* tb_writer_open(): reuse the cached chunk if it has room, else claim. */
inline w_open()
{
	if
	:: own == O_CACHED ->
		d_step {	/* tb_ring_reuse(); a cached chunk always has room */
			if
			:: state[CH(pos)] == word ->
				assert(P_not_behind_reader || tk >= rabs);
				COVER(12);
				word = WITH(word, S_ACQ);
				state[CH(pos)] = word;
				slot[CH(pos) * CAP + nfr] = FID(w, seq);
				open = 1;
				own = O_ACQ
			:: else -> COVER(13); w_forget()	/* the reader took it */
			fi
		}
	:: own == O_NONE
	fi;
	if
	:: own == O_NONE -> w_claim(0); ok = 0
	:: own == O_ACQ
	fi
}

/* tb_writer_close(): the open fragment is closed and published. */
inline w_close()
{
	nfr++;
	seq++;
	open = 0;
	w_publish()
}

/* Close, open the next fragment in the same chunk, publish the count. */
inline w_next()
{
	d_step {	/* payload bytes of our own chunk, past the published */
		nfr++;
		seq++;
		slot[CH(pos) * CAP + nfr] = FID(w, seq)
	};
	w_publish()
}

/* tb_writer_sync(): a scraped chunk gives up its open fragment now. */
inline w_sync()
{
	d_step { seen = state[CH(pos)] };	/* acquire load */
	if
	:: seen != word ->
		w_relocate();
		if
		:: !err && nfr > 0 -> w_publish()
		:: else
		fi;
		err = 0
	:: else -> seen = 0
	fi
}

/* tb_writer_release() with a fragment open: drop it, publish the rest. */
inline w_release()
{
	relf = 1;	/* the open fragment, counted dropped at the end */
	seq++;
	open = 0;
	w_publish();
	w_forget()
}

proctype writer(byte w)
{
	byte own, pos, tk, nfr, seq, k, i, burned, rd, rdabs, rounds, syncs;
	short word, seen;
	bit open, reloc, ok, isfull, err, park, got, fail, relf, gone;
	byte sc[CAP];			/* tb_writer.scratch */
#ifdef MUT_WR_FIRST
	byte wr, wrabs;
#endif

	do
	:: own != O_ACQ && seq < NF -> w_open()
	:: own == O_ACQ -> w_close()
#if GENERAL
	:: own == O_ACQ && nfr + 1 < CAP && seq + 1 < NF -> w_next()
#endif
	:: own == O_ACQ && syncs < SYNCS -> syncs++; w_sync()
	:: own == O_ACQ -> w_release(); break
	:: own != O_ACQ && seq == NF -> w_forget(); break
#if DIE
	:: own == O_ACQ -> goto died	/* holding a chunk, for good */
#endif
	od;
	goto finish;
died:
parked:
	gone = 1;
finish:
	skip;
	d_step {
		dead[w] = gone;
		if
		:: relf -> dropped[FID(w, seq - 1)] = 1
		:: else
		fi;
		fin[w] = seq;
		wdone++;
		own = 0; pos = 0; tk = 0; nfr = 0; seq = 0; k = 0;
		burned = 0; rd = 0; rdabs = 0; rounds = 0; syncs = 0;
		word = 0; seen = 0; open = 0; reloc = 0; ok = 0; isfull = 0;
		err = 0; park = 0; got = 0; fail = 0; relf = 0; gone = 0;
		i = 0;
		do
		:: i < CAP -> sc[i] = 0; i++
		:: else -> break
		od;
		i = 0
	}
}

init
{
	byte i, p;

	c_code { atexit(tb_cover_print); };
	d_step {	/* tb_ring_init_at(START) */
		write_pos = START & PMASK;
		read_pos = write_pos;
		i = 0;
		do
		:: i < NCHUNK ->
			p = (START + ((i + P - START) & (NCHUNK - 1))) & PMASK;
			state[i] = FREEW(WRAP(p));
			i++
		:: else -> break
		od;
		i = 0;
		p = 0
	};
	atomic {
		run reader();
		i = 0;
		do
		:: i < NW -> run writer(i); i++
		:: else -> break
		od;
		i = 0;
		rlive = 1
	}
}

#ifdef NOWAIT
/* P_reader_never_waits (a): the reader is always enabled until done. */
ltl reader_never_waits { [] (P_reader_never_waits || !rlive || rdone ||
			      enabled(1)) }
#endif
