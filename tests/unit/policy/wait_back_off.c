/* The policy wait suite (test_wait.c): backing off. What host pages cannot
 * stand in for still waits, the host limit spent means a wait after all,
 * spill off never backs off; a fill backs off from a busy device, and an
 * open bracket is waited for once. */
#include "policy/internal.h" /* sw_sync_device: waits for the syncer */
#include "tests/unit/policy/wait_rig.h"

#include <pthread.h>
#include <time.h>

/* The patience of the tests where the device is released while a call
 * waits (release_soon): long against the release's delay, so that a
 * loaded machine cannot make the wait run out first. */
#define LONG_WAIT_MS 1000
#define RELEASE_MS 100


/* Each launch that names spilled data fills it first, and a fill must
 * quiesce: on a device that stays busy each such launch waited a whole
 * patience (100 launches while one long kernel runs, 50 s at 500 ms) and
 * then ran with the data on the host anyway. While the device is overdue
 * the fill backs off: the data stays where it is (correct, slower). */
START_TEST(a_fill_backs_off_from_a_busy_device)
{
    env_wait(4, 32);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &a), CUDA_SUCCESS);
    fill(a, 4 * PG, 9);
    fake_launch(FB, S1, a, 4 * PG); /* in flight past the patience */
    fake_hold_sync(FB, true);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &b), CUDA_SUCCESS); /* times out: host pages */
    ck_assert_uint_eq(host_pages_in(b, 2), 2);
    fill(b, 2 * PG, 10);
    ck_assert_uint_eq(counters().wait_timeouts, 1);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS); /* pending: room once a sync ends */
    uint64_t backoffs = counters().backoffs;
    for (int i = 0; i < NBUSY; i++) {
        ck_assert_int_eq(sw_fill(P, b), CUDA_SUCCESS);
        ck_assert_uint_eq(host_pages_in(b, 2), 2); /* nothing moved under the work */
    }
    ck_assert_uint_eq(counters().wait_timeouts, 1);
    ck_assert_uint_eq(counters().backoffs, backoffs + NBUSY);
    assert_no_violation();
    /* The work ends; once its sync is answered, a fill moves again. */
    fake_hold_sync(FB, false);
    fake_complete(FB, S1);
    ck_assert_int_eq(sw_sync_device(P, 0, UINT64_MAX), CUDA_SUCCESS);
    ck_assert_int_eq(sw_fill(P, b), CUDA_SUCCESS);
    ck_assert_uint_eq(host_pages_in(b, 2), 0);
    ck_assert_uint_eq(counters().backoffs, backoffs + NBUSY);
    assert_no_violation();
    ck_assert(verify(b, 2 * PG, 10));
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    env_down();
}
END_TEST

/* The same when the first wait that times out is for the work gate (a
 * bracket blocked in the driver, a synchronous copy waiting for a long
 * kernel) rather than a sync: before, every allocation past the limit
 * waited a patience of its own at the gate (wait_timeouts was one per
 * allocation). Until the bracket closes, they take host pages at once;
 * after, spilling resumes. */
START_TEST(an_open_bracket_is_waited_for_once_not_per_allocation)
{
    env_wait(4, 32);
    CUdeviceptr a, b[NBUSY], c;
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &a), CUDA_SUCCESS);
    fill(a, 4 * PG, 11);
    holder h = {0};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, hold_bracket, &h), 0);
    while (!atomic_load(&h.in))
        ;
    for (int i = 0; i < NBUSY; i++) {
        ck_assert_int_eq(sw_alloc(P, 0, PG, &b[i]), CUDA_SUCCESS);
        ck_assert_uint_eq(host_pages_in(b[i], 1), 1);
        fill(b[i], PG, 300 + (uint64_t)i);
    }
    ck_assert_uint_eq(counters().wait_timeouts, 1);
    ck_assert_uint_eq(counters().backoffs, NBUSY - 1);
    /* A fill backs off too. */
    ck_assert_int_eq(sw_free(P, b[NBUSY - 1]), CUDA_SUCCESS);
    ck_assert_int_eq(sw_fill(P, b[0]), CUDA_SUCCESS);
    ck_assert_uint_eq(host_pages_in(b[0], 1), 1);
    ck_assert_uint_eq(counters().backoffs, NBUSY);
    ck_assert_uint_eq(counters().wait_timeouts, 1);
    ck_assert_uint_eq(host_pages_in(a, 4), 0); /* nothing moved under the work */
    atomic_store(&h.release, true);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    /* With the bracket closed, the next allocation spills as usual. */
    uint64_t backoffs = counters().backoffs;
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &c), CUDA_SUCCESS);
    ck_assert_uint_eq(host_pages_in(c, 2), 0);
    ck_assert_uint_eq(counters().backoffs, backoffs);
    ck_assert_uint_eq(counters().wait_timeouts, 1);
    assert_no_violation();
    ck_assert(verify(a, 4 * PG, 11));
    for (int i = 0; i < NBUSY - 1; i++) {
        ck_assert(verify(b[i], PG, 300 + (uint64_t)i));
        ck_assert_int_eq(sw_free(P, b[i]), CUDA_SUCCESS);
    }
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, c), CUDA_SUCCESS);
    env_down();
}
END_TEST


static void *release_soon(void *arg)
{
    (void)arg;
    struct timespec ts = {0, RELEASE_MS * 1000000L};
    nanosleep(&ts, NULL);
    fake_hold_sync(FB, false);
    fake_complete(FB, S1);
    return NULL;
}

/* What host pages cannot stand in for (memory lent outside the pool: an
 * export, managed memory) still waits for the busy device while others
 * back off: it must not fail where waiting would have let it succeed. */
START_TEST(a_lend_still_waits_while_allocations_back_off)
{
    CUdeviceptr y, b;
    busy_with_pending_frees_ms(&y, LONG_WAIT_MS);
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &b), CUDA_SUCCESS); /* times out: back-off */
    ck_assert_uint_eq(counters().wait_timeouts, 1);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, release_soon, NULL), 0);
    /* The 2 pending pages go back once the sync ends. */
    ck_assert_int_eq(sw_lend(P, 0, 2 * PG), CUDA_SUCCESS);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_uint_eq(counters().backoffs, 0);
    sw_unlend(P, 0, 2 * PG);
    assert_no_violation();
    ck_assert(verify(y, 2 * PG, 6));
    ck_assert_int_eq(sw_free(P, y), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    env_down();
}
END_TEST

/* Backing off gives host pages; with the host limit spent, the allocation
 * waits for the device after all, as before the back-off: it must not
 * fail where the wait (here a sync releasing a pending free) lets it
 * succeed. */
START_TEST(a_back_off_the_host_limit_refuses_waits_after_all)
{
    env_wait_ms(4, 2, LONG_WAIT_MS);
    CUdeviceptr a, x, b, c;
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &x), CUDA_SUCCESS);
    fill(a, 2 * PG, 8);
    ck_assert_int_eq(sw_free(P, x), CUDA_SUCCESS); /* pending: a sync would release it */
    fake_launch(FB, S1, a, 2 * PG);
    fake_hold_sync(FB, true);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &b), CUDA_SUCCESS); /* times out: host pages */
    ck_assert_uint_eq(host_pages_in(b, 2), 2);
    ck_assert_uint_eq(counters().wait_timeouts, 1);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, release_soon, NULL), 0);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &c), CUDA_SUCCESS); /* x's pages, once synced */
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_uint_eq(counters().backoffs, 1);
    ck_assert_uint_eq(host_pages_in(c, 2), 0);
    assert_no_violation();
    ck_assert(verify(a, 2 * PG, 8));
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, c), CUDA_SUCCESS);
    env_down();
}
END_TEST

/* With spill off nothing stands in for the device: an allocation keeps
 * waiting for it (here for the sync that releases a pending free) even
 * after an earlier one timed out. */
START_TEST(spill_off_never_backs_off)
{
    sw_device_config cfg = {
        .limit = 4 * PG, .host_limit = 16 * PG, .quiesce_wait_ns = LONG_WAIT_MS * 1000000ull,
    };
    env_up_cfg(&cfg, 4);
    CUdeviceptr x, y, b;
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &x), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &y), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, x), CUDA_SUCCESS);
    fake_launch(FB, S1, y, 2 * PG);
    fake_hold_sync(FB, true);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &b), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_uint_eq(counters().wait_timeouts, 1);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, release_soon, NULL), 0);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &b), CUDA_SUCCESS);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_uint_eq(counters().backoffs, 0);
    ck_assert_int_eq(sw_free(P, y), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    env_down();
}
END_TEST

void wait_back_off_tests(TCase *tc)
{
    tcase_add_test(tc, a_lend_still_waits_while_allocations_back_off);
    tcase_add_test(tc, a_back_off_the_host_limit_refuses_waits_after_all);
    tcase_add_test(tc, spill_off_never_backs_off);
    tcase_add_test(tc, a_fill_backs_off_from_a_busy_device);
    tcase_add_test(tc, an_open_bracket_is_waited_for_once_not_per_allocation);
}
