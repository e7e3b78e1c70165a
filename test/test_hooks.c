/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_hooks.c - what a vendor plugs in, the way firmware would: the wait
 * and wake of the platform (TB_WAIT_HOOK, TB_WAKE_HOOK, here a condition
 * variable standing in for an RTOS event) instead of futexes, and its own
 * byte copy and fill (TB_MEMCPY, TB_MEMSET).  A writer stalled on a full
 * ring and a reader waiting on its doorbell must both sleep in the hook
 * and be woken through it.
 */
/* the protocol steps, one at a time (see tbring.h) */
#define TB_PROTOCOL_STEPS 1
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

static int hook_wait(uint32_t *word, uint32_t val, uint32_t timeout_ms);
static void hook_wake(uint32_t *word);
static void *count_memcpy(void *dst, const void *src, size_t n);
static void *count_memset(void *dst, int c, size_t n);

#define TB_WAIT_HOOK(w, v, ms)	hook_wait((w), (v), (ms))
#define TB_WAKE_HOOK(w)		hook_wake(w)
#define TB_MEMCPY(d, s, n)	count_memcpy((d), (s), (n))
#define TB_MEMSET(d, c, n)	count_memset((d), (c), (n))

#include <check.h>

#include "tbring.h"
#include "ring_helpers.h"

/* ------------------------------------------------------------------------
 * The "RTOS": one event, broadcast; waits and wakes counted.
 */
static pthread_mutex_t ev_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ev_cv = PTHREAD_COND_INITIALIZER;
static unsigned ev_gen, ev_waits, ev_sleeps, ev_wakes, ev_timeouts;
static unsigned n_memcpy, n_memset;

static int hook_wait(uint32_t *word, uint32_t val, uint32_t timeout_ms)
{
	struct timespec dl;
	unsigned gen;
	int ret = 1;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += timeout_ms / 1000;
	dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&ev_mu);
	ev_waits++;
	/* checked under the lock a wake takes: no wake can be missed */
	gen = ev_gen;
	if (__atomic_load_n(word, __ATOMIC_ACQUIRE) == val) {
		ev_sleeps++;
		while (ev_gen == gen && ret)
			if (pthread_cond_timedwait(&ev_cv, &ev_mu, &dl) ==
			    ETIMEDOUT)
				ret = 0;
	}
	ev_timeouts += !ret;
	pthread_mutex_unlock(&ev_mu);
	return ret;
}

static void hook_wake(uint32_t *word)
{
	(void)word;
	pthread_mutex_lock(&ev_mu);
	ev_gen++;
	ev_wakes++;
	pthread_cond_broadcast(&ev_cv);
	pthread_mutex_unlock(&ev_mu);
}

static void *count_memcpy(void *dst, const void *src, size_t n)
{
	__atomic_fetch_add(&n_memcpy, 1, __ATOMIC_RELAXED);
	return memcpy(dst, src, n);
}

static void *count_memset(void *dst, int c, size_t n)
{
	__atomic_fetch_add(&n_memset, 1, __ATOMIC_RELAXED);
	return memset(dst, c, n);
}

static unsigned ev_read(unsigned *v)
{
	unsigned x;

	pthread_mutex_lock(&ev_mu);
	x = *v;
	pthread_mutex_unlock(&ev_mu);
	return x;
}

/* ------------------------------------------------------------------------
 * Tests
 */
struct stall {
	struct twriter *tw;
	int ret;
};

static void *stall_writer(void *p)
{
	struct stall *s = (struct stall *)p;

	s->ret = twrite(s->tw, "late", 0, 0);
	return NULL;
}

START_TEST(test_stalled_writer_sleeps_in_the_hook_and_is_woken)
{
	struct tring t;
	struct twriter a, b;
	struct treader tr;
	struct stall s;
	pthread_t th;

	ck_assert_int_eq(TB_HAVE_WAIT, 1);
	tring_new(&t, 256, 2);
	twriter_new(&a, &t, 1, 0, TB_DROP);
	twriter_new(&b, &t, 2, 0, TB_STALL);
	treader_new(&tr, &t);
	b.w.stall_ms = TB_HANG_MS;
	ck_assert_int_eq(twrite(&a, "one", 0, 0), TB_OK);
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);
	ck_assert_int_eq(twrite(&a, "two", 0, 0), TB_OK);
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);	/* full */
	s.tw = &b;
	s.ret = 99;
	ck_assert_int_eq(pthread_create(&th, NULL, stall_writer, &s), 0);
	mark_point();		/* a writer that never sleeps hangs here */
	while (!ev_read(&ev_sleeps))
		sleep_ms(1);
	ck_assert_int_eq(tdrain(&tr.rd, 1, TB_READ_LAZY, NULL, NULL),
			 1);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(s.ret, TB_OK);
	ck_assert_uint_ge(ev_read(&ev_wakes), 1);
	ck_assert_uint_eq(ev_read(&ev_timeouts), 0);
	ck_assert_uint_gt(n_memset, 0);		/* init used the vendor's */
	twriter_free(&a);
	twriter_free(&b);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

struct waiter {
	struct treader *tr;
	bool woken;
};

static void *reader_waits(void *p)
{
	struct waiter *w = (struct waiter *)p;

	w->woken = tb_reader_wait(&w->tr->rd, TB_HANG_MS);
	return NULL;
}

START_TEST(test_waiting_reader_sleeps_in_the_hook_and_is_woken)
{
	struct tring t;
	struct twriter a;
	struct treader tr;
	struct waiter w;
	struct collect col;
	pthread_t th;

	tring_new(&t, 512, 4);
	twriter_new(&a, &t, 1, 0, TB_DROP);
	treader_new(&tr, &t);
	ck_assert_int_eq(tdrain(&tr.rd, 8, TB_READ_LAZY, NULL, NULL),
			 0);
	w.tr = &tr;
	w.woken = false;
	ck_assert_int_eq(pthread_create(&th, NULL, reader_waits, &w), 0);
	mark_point();		/* a reader that never sleeps hangs here */
	while (!ev_read(&ev_sleeps))
		sleep_ms(1);
	n_memcpy = 0;
	ck_assert_int_eq(twrite(&a, "hello", 0, 0), TB_OK);
	ck_assert_int_eq(tb_writer_release(&a.w), TB_OK);	/* rings */
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert(w.woken);
	ck_assert_uint_eq(ev_read(&ev_timeouts), 0);
	memset(&col, 0, sizeof(col));
	ck_assert_int_eq(tdrain(&tr.rd, 8, TB_READ_LAZY, collect_fn,
					 &col), 1);
	ck_assert_str_eq(col.c[0].frag[0], "hello");
	/* the reader's copies went through the vendor's memcpy */
	ck_assert_uint_ge(n_memcpy, 2);
	twriter_free(&a);
	treader_free(&tr);
	tring_free(&t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tbring_hooks");
	TCase *tc = tcase_create("hooks");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);	/* catches a hang, not slowness */
	tcase_add_test(tc, test_stalled_writer_sleeps_in_the_hook_and_is_woken);
	tcase_add_test(tc, test_waiting_reader_sleeps_in_the_hook_and_is_woken);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
