/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Copyright (c) 2026, tbring contributors.  BSD-2-Clause: see COPYING, or
 * https://opensource.org/license/bsd-2-clause for the text.
 *
 * tbsync.h - the atomics, the wait and the doorbell that more than one
 * tbring header needs.
 *
 *  - Atomics on 32-bit words with explicit orders (TB_RLX, TB_ACQ,
 *    TB_REL, TB_ACQREL): tb_atomic_load/store/cas/add and two fences.
 *    The default build maps them to Concurrency Kit's ck_pr plus explicit
 *    fences, because a ck CAS is a full barrier on x86 but relaxed on ARM;
 *    TB_ATOMIC_BUILTINS=1 maps them to the compiler's __atomic builtins
 *    with the same orders (automatic under ThreadSanitizer, which cannot
 *    see ck's inline assembly; needed on bare metal, where ck has no port).
 *    On a core with no atomic read-modify-write (ARMv6-M, RISC-V without
 *    the A extension) the CAS and the add run with interrupts masked
 *    (TB_ATOMIC_MASK, below): correct on a single core only.
 *  - Waiting on a word and waking its waiters: Linux futexes (shared, the
 *    words live in memory several processes map), or the platform's own
 *    wait plugged in through TB_WAIT_HOOK and TB_WAKE_HOOK.
 *  - Whether the caller is an interrupt handler, which must never wait
 *    (TB_IN_INTERRUPT()).
 *  - The doorbell (struct tb_bell): how writers wake a reader thread that
 *    sleeps on one or many rings.
 *
 * Only 32-bit atomics, so 32-bit targets stay lock-free.  No allocation.
 */
#ifndef TBSYNC_H
#define TBSYNC_H
#define TBSYNC_H_VERSION 200	/* tbbase.h: TBRING_VERSION */

#include "tbbase.h"

/* Headers of one release only: a mixed copy does not compile. */
#if TBBASE_H_VERSION != TBSYNC_H_VERSION
#error "tbsync.h needs the tbbase.h of its own release"
#endif

/*
 * The atomics underneath (see "Atomics" below): ck_pr by default,
 * __atomic builtins with TB_ATOMIC_BUILTINS=1, which ThreadSanitizer
 * builds get automatically because it cannot see ck's inline assembly.
 */
#ifdef __has_feature
#define tb__has_feature(x) __has_feature(x)
#else
#define tb__has_feature(x) 0
#endif
#if !defined(TB_ATOMIC_BUILTINS)
#if defined(__SANITIZE_THREAD__) || tb__has_feature(thread_sanitizer)
#define TB_ATOMIC_BUILTINS 1
#else
#define TB_ATOMIC_BUILTINS 0
#endif
#endif

#if !TB_ATOMIC_BUILTINS
#include <ck_pr.h>
/*
 * ck's ck_md.h is generated per architecture, and a cross compiler that
 * searches /usr/include finds the build machine's: an x86 one says
 * CK_MD_TSO, and every acquire and release fence then compiles to nothing
 * on the target, silently.  Only these architectures are TSO; anything
 * else that claims it is refused rather than trusted.
 */
#if defined(CK_MD_TSO) && !(defined(__x86_64__) || defined(__i386__) || \
			    defined(__s390x__) || defined(__sparc__))
#error "tbsync.h: ck_md.h says CK_MD_TSO, but this architecture is not TSO: \
these are the build machine's ck headers, whose fences compile to nothing \
here.  Put the target's ck headers first (-isystem <dir> with ck_md.h from \
libck-dev for the target), or build with -DTB_ATOMIC_BUILTINS=1."
#endif
#endif

/*
 * Linux futexes, unless the platform's wait is plugged in (TB_WAIT_HOOK,
 * below) or TB_NO_FUTEX asks for none.  (x32's timespec is not the
 * kernel's: no futex there.)
 */
#if defined(__linux__) && !defined(TB_NO_FUTEX) && !defined(TB_WAIT_HOOK) && \
	!(defined(__x86_64__) && defined(__ILP32__))
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#if defined(SYS_futex) && defined(FUTEX_WAIT)
#define TB__FUTEX 1
#ifdef __cplusplus
#include <unistd.h>		/* syscall(), with its C linkage */
#else
/* Hidden by glibc under strict -std=c99; the declaration is the same. */
long syscall(long number, ...);
#endif
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Atomics.  Every shared word is touched only through these helpers.  The
 * default build uses ck_pr plus explicit fences, because a ck CAS is a full
 * barrier on x86 but relaxed on ARM.  TB_ATOMIC_BUILTINS=1 (automatic
 * under ThreadSanitizer, which cannot see ck's inline assembly) maps them
 * to __atomic builtins with the same orders, for TSan and model checkers.
 */
#define TB_RLX	0
#define TB_ACQ	1
#define TB_REL	2
#define TB_ACQREL	3	/* acquire + release */

#if TB_ATOMIC_BUILTINS
static inline int tb__mo(int mo)
{
	static const int map[] = { __ATOMIC_RELAXED, __ATOMIC_ACQUIRE,
				   __ATOMIC_RELEASE, __ATOMIC_ACQ_REL };
	return map[mo];
}
#endif

/*
 * Cores without an atomic read-modify-write.  ARMv6-M (Cortex-M0, M0+,
 * M1: no ldrex/strex) and RISC-V without the A extension (rv32imc) have
 * aligned 32-bit loads and stores, which are atomic, and fences, but no
 * CAS or add: the compiler turns __atomic_compare_exchange_n() and
 * __atomic_fetch_add() into calls to __atomic_*_4 library functions that
 * no bare-metal library provides.  With TB_ATOMIC_MASK=1, tb_atomic_cas()
 * and tb_atomic_add() instead run as a plain load, compare and store
 * between TB_ATOMIC_ENTER() and TB_ATOMIC_EXIT(key), which by default mask
 * this core's interrupts (PRIMASK on ARMv6-M, mstatus.MIE on RISC-V, in
 * machine mode) for those three or four instructions and then put the
 * mask back as it was (so they nest, and work with interrupts off).
 * Loads and stores are plain accesses of an aligned word (single-copy
 * atomic on every core) with the compiler's fences for their orders (for
 * such a core clang makes even __atomic_load_n() a library call; gcc
 * compiles both to the same code).  It is chosen from the compiler's
 * predefined macros: on for __ARM_ARCH_6M__, and for __riscv without
 * __riscv_atomic, outside an OS (__unix__); off elsewhere.  A vendor may
 * set TB_ATOMIC_MASK to 0 or 1, and may define both hooks.
 *
 * Single core only.  Masking stops this core's interrupts, not another
 * core: two cores that write one ring need a CAS both see as one.  Where
 * they share no atomic instruction (the RP2040's two Cortex-M0+ cores,
 * which have hardware spinlocks instead), define the hooks to mask this
 * core's interrupts and take a lock the other core respects, as the Pico
 * SDK's spin_lock_blocking() and spin_unlock() do:
 *
 *   #define TB_ATOMIC_MASK		1
 *   #define TB_ATOMIC_ENTER()	spin_lock_blocking(tb_lock)
 *   #define TB_ATOMIC_EXIT(key)	spin_unlock(tb_lock, (key))
 *
 * (uint32_t TB_ATOMIC_ENTER(void); void TB_ATOMIC_EXIT(uint32_t key).)
 * Such a hook must order memory as a lock does: a barrier after it takes
 * the lock and one before it lets go (those two calls have them).  On a
 * single core the mask's "memory" clobbers are enough: a core sees its own
 * accesses, and its interrupt handlers', in program order.
 */
#ifndef TB_ATOMIC_MASK
#if !defined(__unix__) && (defined(__ARM_ARCH_6M__) || \
			   (defined(__riscv) && !defined(__riscv_atomic)))
#define TB_ATOMIC_MASK	1
#else
#define TB_ATOMIC_MASK	0
#endif
#endif

#if defined(TB_ATOMIC_ENTER) != defined(TB_ATOMIC_EXIT)
#error "tbsync.h: define both TB_ATOMIC_ENTER and TB_ATOMIC_EXIT, or neither"
#endif
#if TB_ATOMIC_MASK && !defined(TB_ATOMIC_ENTER)
#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'
/* Masks interrupts; returns the PRIMASK to put back. */
static inline uint32_t tb__irq_save(void)
{
	uint32_t key;

	__asm__ __volatile__("mrs %0, primask\n\tcpsid i" : "=r"(key)
			     : : "memory");
	return key;
}

static inline void tb__irq_restore(uint32_t key)
{
	__asm__ __volatile__("msr primask, %0" : : "r"(key) : "memory");
}
#elif defined(__riscv)
/*
 * Clears mstatus.MIE; returns the mstatus it found.  Setting those bits
 * again puts MIE back as it was and changes nothing else: no other bit
 * of mstatus that was set is cleared in between.
 */
static inline uint32_t tb__irq_save(void)
{
	unsigned long key;

	__asm__ __volatile__("csrrci %0, mstatus, 8" : "=r"(key) : : "memory");
	return (uint32_t)key;
}

static inline void tb__irq_restore(uint32_t key)
{
	__asm__ __volatile__("csrs mstatus, %0" : : "r"((unsigned long)key)
			     : "memory");
}
#else
#error "tbsync.h: TB_ATOMIC_MASK=1 on a core it cannot mask: define \
TB_ATOMIC_ENTER() and TB_ATOMIC_EXIT(key)"
#endif
#define TB_ATOMIC_ENTER()	tb__irq_save()
#define TB_ATOMIC_EXIT(key)	tb__irq_restore(key)
#endif

#if TB_ATOMIC_MASK
/*
 * The CAS and the add of such a core.  Masked: one load, the compare or
 * the add, one store (volatile: each exactly one access, in this order).
 * Everything else is done before or after: the empty asm puts the
 * address and the operands in registers before the mask is taken (two
 * volatile asms keep their order), else gcc may compute an address in
 * the masked stretch; *@seen is read before and written after.
 */
static inline bool tb__cas_masked(uint32_t *p, uint32_t *seen, uint32_t want)
{
	volatile uint32_t *v = p;
	uint32_t expect = *seen, found, key;

	__asm__ __volatile__("" : "+r"(v), "+r"(expect), "+r"(want));
	key = TB_ATOMIC_ENTER();
	found = *v;
	if (found == expect)
		*v = want;
	TB_ATOMIC_EXIT(key);
	*seen = found;
	return found == expect;
}

static inline void tb__add_masked(uint32_t *p, uint32_t n)
{
	volatile uint32_t *v = p;
	uint32_t key;

	__asm__ __volatile__("" : "+r"(v), "+r"(n));
	key = TB_ATOMIC_ENTER();
	*v += n;
	TB_ATOMIC_EXIT(key);
}
#endif

/*
 * Test seams, compiled in only when TB_TEST_HOOKS is defined (the test
 * suites do; a product build never should).  The test program defines
 * tb_test_atomic; when it is set, it sees every atomic access to a shared
 * word just before it happens: the word, the operation, the value a CAS
 * expects, the value stored or wanted, and the orders asked for.  It
 * sees the store->load fences too (TB_TEST_FENCE, with no word: NULL),
 * so that a test can check each handshake's store, fence, load.  That
 * lets a test check the ordering table below access by access, and run
 * another actor's steps between two accesses of one function.
 */
#ifdef TB_TEST_HOOKS
enum { TB_TEST_LOAD, TB_TEST_STORE, TB_TEST_CAS, TB_TEST_ADD,
       TB_TEST_FENCE };
extern void (*tb_test_atomic)(const uint32_t *p, int op, uint32_t expect,
			      uint32_t v, int ok, int fail);
#define tb__seam(p, op, e, v, ok, fail)				\
	do {								\
		if (tb_test_atomic)					\
			tb_test_atomic((p), (op), (e), (v), (ok), (fail)); \
	} while (0)
#else
#define tb__seam(p, op, e, v, ok, fail) ((void)0)
#endif

static inline uint32_t tb_atomic_load(const uint32_t *p, int mo)
{
	tb__seam(p, TB_TEST_LOAD, 0, 0, mo, TB_RLX);
#if TB_ATOMIC_MASK
	uint32_t v = *(const volatile uint32_t *)p;	/* one aligned word */

	if (mo & TB_ACQ)
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return v;
#elif TB_ATOMIC_BUILTINS
	return __atomic_load_n(p, mo & TB_ACQ ? __ATOMIC_ACQUIRE :
						__ATOMIC_RELAXED);
#else
	uint32_t v = ck_pr_load_32(p);

	if (mo & TB_ACQ)
		ck_pr_fence_acquire();
	return v;
#endif
}

static inline void tb_atomic_store(uint32_t *p, uint32_t v, int mo)
{
	tb__seam(p, TB_TEST_STORE, 0, v, mo, TB_RLX);
#if TB_ATOMIC_MASK
	if (mo & TB_REL)
		__atomic_thread_fence(__ATOMIC_RELEASE);
	*(volatile uint32_t *)p = v;			/* one aligned word */
#elif TB_ATOMIC_BUILTINS
	__atomic_store_n(p, v, mo & TB_REL ? __ATOMIC_RELEASE :
					     __ATOMIC_RELAXED);
#else
	if (mo & TB_REL)
		ck_pr_fence_release();
	ck_pr_store_32(p, v);
#endif
}

/*
 * Strong CAS of *@p from *@seen to @want with @ok ordering on success and
 * @fail on failure; on failure *@seen receives the word found.  With ck,
 * a release-on-success can only be a fence before the CAS, which also runs
 * when it fails (that publishes nothing, it only costs the fence).  The
 * builtins reject a failure order stronger than the success order, so
 * there release/acquire becomes acq_rel/acquire: stronger, never weaker.
 */
TB__ALWAYS bool tb_atomic_cas(uint32_t *p, uint32_t *seen, uint32_t want,
			 int ok, int fail)
{
	tb__seam(p, TB_TEST_CAS, *seen, want, ok, fail);
#if TB_ATOMIC_MASK
	(void)ok, (void)fail;	/* one core: program order, see above */
	return tb__cas_masked(p, seen, want);
#elif TB_ATOMIC_BUILTINS
	return __atomic_compare_exchange_n(p, seen, want, false,
					   tb__mo(ok | (fail & TB_ACQ)),
					   tb__mo(fail & TB_ACQ));
#else
	uint32_t found;
	bool done;

	if (ok & TB_REL)
		ck_pr_fence_release();
	done = ck_pr_cas_32_value(p, *seen, want, &found);
	if (done ? ok & TB_ACQ : fail & TB_ACQ)
		ck_pr_fence_acquire();
	*seen = found;
	return done;
#endif
}

/* Relaxed add, for statistics and the waiter hints. */
static inline void tb_atomic_add(uint32_t *p, uint32_t v)
{
	tb__seam(p, TB_TEST_ADD, 0, v, TB_RLX, TB_RLX);
#if TB_ATOMIC_MASK
	tb__add_masked(p, v);
#elif TB_ATOMIC_BUILTINS
	__atomic_fetch_add(p, v, __ATOMIC_RELAXED);
#else
	ck_pr_add_32(p, v);
#endif
}

/*
 * The futex handshakes are Dekker patterns (store my flag, then load the
 * other side's word) and need store->load ordering, which no acquire or
 * release gives: this is the only sequentially consistent fence here.
 */
static inline void tb__fence_full(void)
{
#if TB_ATOMIC_BUILTINS
#if defined(__SANITIZE_THREAD__) && !defined(__clang__) && __GNUC__ >= 11
	/*
	 * gcc warns that ThreadSanitizer does not model fences (-Wtsan).
	 * This one orders a store before a load of two atomics (the futex
	 * handshakes); what they guard is published by release and
	 * acquire, which TSan does see.
	 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtsan"
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#pragma GCC diagnostic pop
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
#else
	ck_pr_fence_memory();
#endif
}

static inline void tb__fence_seq_cst(void)
{
	tb__seam(NULL, TB_TEST_FENCE, 0, 0, TB_RLX, TB_RLX);
	tb__fence_full();
}

/*
 * The same store->load order right after a read-modify-write (a CAS or
 * an add).  On x86 a locked RMW already is a full barrier, so only the
 * compiler must be held back: call it only right after an atomic RMW of
 * this file, never after a plain store (on x86 that orders nothing).
 */
static inline void tb__fence_after_rmw(void)
{
	tb__seam(NULL, TB_TEST_FENCE, 0, 0, TB_RLX, TB_RLX);
#if !TB_ATOMIC_BUILTINS && (defined(__x86_64__) || defined(__i386__))
	ck_pr_barrier();
#else
	tb__fence_full();
#endif
}

/* A spin-wait hint to the CPU (pause, yield), or nothing. */
static inline void tb__cpu_relax(void)
{
#if !TB_ATOMIC_BUILTINS
	ck_pr_stall();
#elif defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__) || (defined(__arm__) && __ARM_ARCH >= 7)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
#endif
}

/*
 * Spinning before a sleep.  A futex sleep and its wake cost two system
 * calls and two context switches, and a wake that crosses CPUs costs
 * tens of times a cache line's round trip in latency: when the other side
 * is busy on another CPU, polling its word for a while is cheaper.  A
 * stalled writer keeps a budget of polls, doubled after a spin that saw
 * the word change and halved after one that ran out (the other side was
 * not running, or idle), between TB_SPIN_MIN and TB_SPIN_MAX; the
 * reader's spin is tbring.h's tb__reader_spin().  Both are local to each
 * process (override them before including any tbring header:
 * TB_SPIN_MIN >= 1, TB_SPIN_MAX >= 2 * TB_SPIN_MIN).
 */
#ifndef TB_SPIN_MIN
#define TB_SPIN_MIN	16u
#endif
#ifndef TB_SPIN_MAX
#define TB_SPIN_MAX	1024u
#endif
#if TB_SPIN_MIN < 1 || TB_SPIN_MAX < 2 * TB_SPIN_MIN
#error "tbsync.h: TB_SPIN_MIN must be >= 1 and TB_SPIN_MAX >= 2 * TB_SPIN_MIN"
#endif

/*
 * What one sleep costs, in polls (a poll: one load and one CPU pause):
 * the futex wait and the wake that ends it are two system calls and two
 * context switches, 3-4 us of CPU for the two sides together where a
 * poll takes 37 ns (docs/protocol.md, section 8, "Waiting").  A waiter
 * that spins at most this long before it sleeps pays at most twice what
 * the better of spinning and sleeping would have cost.  Local to each
 * process, like the two above (>= 1).
 */
#ifndef TB_SLEEP_POLLS
#define TB_SLEEP_POLLS	128u
#endif
#if TB_SLEEP_POLLS < 1
#error "tbsync.h: TB_SLEEP_POLLS must be >= 1"
#endif

/* Adapts a waiter's own @budget (no other thread touches it) after a spin. */
static inline void tb__spin_adapt(uint32_t *budget, bool hit)
{
	uint32_t n = *budget;

	if (hit)
		*budget = n < TB_SPIN_MAX / 2 ? 2 * n : TB_SPIN_MAX;
	else
		*budget = n / 2 > TB_SPIN_MIN ? n / 2 : TB_SPIN_MIN;
}

/* ------------------------------------------------------------------------
 * Waiting: a writer stalled on a full ring waits for the reader to make
 * room (the ring's wake_seq), the reader for its doorbell.  On Linux
 * these are shared (not private) futexes: the words live in memory
 * several processes map.  Anywhere else, or with TB_NO_FUTEX, the
 * platform's own wait can be plugged in by defining both of these before
 * including any tbring header (an RTOS event group, a semaphore per word,
 * a condition variable):
 *
 *   int TB_WAIT_HOOK(uint32_t *word, uint32_t val, uint32_t timeout_ms)
 *	Sleeps while *word == val, at most timeout_ms.  Returns 1 when woken
 *	(or when *word already differed), 0 on timeout, -1 when it cannot
 *	wait.  Like a futex it must not miss a TB_WAKE_HOOK(word) issued
 *	after *word changed: check *word after arming whatever the wake
 *	signals (a sticky event bit does it).
 *   void TB_WAKE_HOOK(uint32_t *word)
 *	Wakes every waiter on word.  Called from writers and the reader,
 *	never from an interrupt handler by this library.
 *
 * With neither (bare metal, no RTOS), waits are unavailable: a TB_STALL
 * writer on a full ring gets TB_FULL at once, as in an interrupt handler,
 * and tb_reader_wait() returns at once (the reader polls).
 *
 * tb__wait() and tb__wake() below are private: a wait is only safe inside
 * a handshake (a ticket taken, a flag set, a fence) that tells the other
 * side to wake it, which tb_bell_*() and the ring's stall carry.
 */
#if defined(TB_WAIT_HOOK) != defined(TB_WAKE_HOOK)
#error "tbsync.h: define both TB_WAIT_HOOK and TB_WAKE_HOOK, or neither"
#endif
#if defined(TB_WAIT_HOOK)
#define TB_HAVE_WAIT 1
static inline int tb__wait(uint32_t *word, uint32_t val, uint32_t timeout_ms)
{
	return TB_WAIT_HOOK(word, val, timeout_ms);
}

static inline void tb__wake(uint32_t *word)
{
	TB_WAKE_HOOK(word);
}
#elif defined(TB__FUTEX)
#define TB_HAVE_WAIT 1
/* The kernel's timespec for SYS_futex (struct timespec needs POSIX). */
struct tb__timespec {
	long tv_sec;
	long tv_nsec;
};

/* Waits while *@word == @val: 1 woken or changed, 0 timed out, -1 error. */
static inline int tb__wait(uint32_t *word, uint32_t val, uint32_t timeout_ms)
{
	struct tb__timespec ts;
	int saved = errno, ret;

	ts.tv_sec = (long)(timeout_ms / 1000);
	ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000L;
	ret = syscall(SYS_futex, word, FUTEX_WAIT, val, &ts, NULL, 0) == 0 ?
		      1 : errno == ETIMEDOUT ? 0 :
		      errno == EAGAIN || errno == EINTR ? 1 : -1;
	errno = saved;
	return ret;
}

static inline void tb__wake(uint32_t *word)
{
	int saved = errno;

	syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	errno = saved;
}
#else
#define TB_HAVE_WAIT 0
static inline int tb__wait(uint32_t *word, uint32_t val, uint32_t timeout_ms)
{
	(void)word, (void)val, (void)timeout_ms;
	return -1;
}

static inline void tb__wake(uint32_t *word)
{
	(void)word;
}
#endif

/*
 * Gives the CPU to another thread ready to run on it, if there is one,
 * and returns at once if not: where threads outnumber CPUs, the side a
 * waiter waits for may be waiting for this very CPU.  Linux's
 * sched_yield; elsewhere TB_YIELD_HOOK() (an RTOS's taskYIELD()), or
 * nothing but a CPU pause.  True when it asked the scheduler.
 */
static inline bool tb__yield(void)
{
#if defined(TB_YIELD_HOOK)
	TB_YIELD_HOOK();
	return true;
#elif defined(TB__FUTEX) && defined(SYS_sched_yield)
	syscall(SYS_sched_yield);
	return true;
#else
	tb__cpu_relax();
	return false;
#endif
}

/*
 * An interrupt handler never waits: the reader it would wait for cannot
 * run until the handler returns.  TB_IN_INTERRUPT() says whether the
 * caller is one; a TB_STALL writer in one does not spin or sleep on a
 * full ring but gets TB_FULL at once (tbring.h).  A vendor may define it
 * before including any tbring header (an RTOS's "in ISR" call, a signal
 * handler's flag, a count its trap entry keeps).  The defaults:
 *  - Cortex-M: IPSR, nonzero in handler mode, nested handlers included.
 *  - RISC-V in machine mode, outside an OS: mstatus.MIE clear.  A trap
 *    clears it, so a handler that does not re-enable interrupts is seen;
 *    code that masked them cannot wait for anything either.  A handler
 *    that sets MIE again to let others nest is NOT seen: where handlers
 *    nest, or run in another privilege mode, define it (a depth its trap
 *    entry counts; mintstatus on a CLIC).
 *  - elsewhere 0.
 */
#ifndef TB_IN_INTERRUPT
#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'
static inline uint32_t tb__ipsr(void)
{
	uint32_t v;

	__asm__ __volatile__("mrs %0, ipsr" : "=r"(v));
	return v;
}
#define TB_IN_INTERRUPT()	(tb__ipsr() != 0)
#elif defined(__riscv) && !defined(__unix__)
static inline unsigned long tb__mstatus(void)
{
	unsigned long v;

	__asm__ __volatile__("csrr %0, mstatus" : "=r"(v));
	return v;
}
#define TB_IN_INTERRUPT()	((tb__mstatus() & 8) == 0)	/* MIE */
#else
#define TB_IN_INTERRUPT()	0
#endif
#endif

/*
 * A doorbell: writers bump @seq (a futex word) when @sleeping says the
 * reader waits on it.  Each ring has one in its header; rings that one
 * reader thread serves can share another one (tb_ring_set_bell()), kept
 * in memory every producer of those rings maps.
 */
struct tb_bell {
	uint32_t seq;
	uint32_t sleeping;
};

/*
 * Writers ring the doorbell when they burn a position, stall, abandon or
 * release a chunk, and when they hand a chunk over (published and not
 * kept for reuse, or forgotten) once a backlog has built up.  The reader
 * sets "sleeping" before it waits; one fence on each side (Dekker)
 * guarantees that either the reader sees our change or we see it
 * sleeping.  The common case costs a fence and one shared load; of
 * several writers that find the reader asleep, the one that clears the
 * flag makes the system call.  True when this call made it.
 */
static inline bool tb_bell_wake(struct tb_bell *b)
{
	uint32_t one = 1;

	/*
	 * Relaxed: the futex word below carries the wake, not this flag.
	 * Never from an interrupt handler, where the platform's wake may not
	 * run (TB_WAKE_HOOK): the flag stays set for the next writer outside
	 * one, or the reader sleeps to its timeout.
	 */
	if (tb_atomic_load(&b->sleeping, TB_RLX) && !TB_IN_INTERRUPT() &&
	    tb_atomic_cas(&b->sleeping, &one, 0, TB_RLX, TB_RLX)) {
		tb_atomic_add(&b->seq, 1);
		tb__wake(&b->seq);
		return TB_HAVE_WAIT;	/* a system call, where there is one */
	}
	return false;
}

/*
 * Rings @b from anywhere, after any store the reader must see (a flag, a
 * stop request): the full fence orders that store before the load of the
 * sleeping hint.  True when it made the wake-up system call.
 */
static inline bool tb_bell_ring(struct tb_bell *b)
{
	tb__fence_seq_cst();	/* pairs with the fence in tb_bell_prepare */
	return tb_bell_wake(b);
}

/*
 * The reader's side of a doorbell, for one ring or many: prepare (returns
 * the ticket to wait on), check every ring for work, then wait - or just
 * go back to draining; the next prepare resets the flag.
 */
static inline uint32_t tb_bell_prepare(struct tb_bell *b)
{
	/* relaxed: the fence below orders both against the checks after it */
	uint32_t seq = tb_atomic_load(&b->seq, TB_RLX);

	tb_atomic_store(&b->sleeping, 1, TB_RLX);
	/*
	 * Pairs with the waker's fence: tb_bell_ring()'s, or the writer's
	 * after its read-modify-write (tb__w_notify(), tb__ring_handover(),
	 * tb__writer_full() in tbring.h).
	 */
	tb__fence_seq_cst();
	return seq;
}

/*
 * Sleeps until a writer rings after @seq was taken, or @timeout_ms.
 * Returns false when the wait ran to its timeout, true when it ended
 * early (rung, or rung already) or could not sleep at all.
 */
static inline bool tb_bell_wait(struct tb_bell *b, uint32_t seq,
				uint32_t timeout_ms)
{
	int ret = tb__wait(&b->seq, seq, timeout_ms);

	tb_atomic_store(&b->sleeping, 0, TB_RLX);	/* relaxed: a hint */
	return ret != 0;
}

/* Goes back to work instead of waiting: writers stop ringing. */
static inline void tb_bell_cancel(struct tb_bell *b)
{
	tb_atomic_store(&b->sleeping, 0, TB_RLX);	/* relaxed: a hint */
}
#ifdef __cplusplus
}
#endif

#endif /* TBSYNC_H */
