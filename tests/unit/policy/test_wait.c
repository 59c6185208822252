/* Moves never wait without end (issue 12): a device whose work waits for
 * work the program has yet to submit, a bracket blocked in the driver, or a
 * stream capture under way make an allocation go on with host pages, and a
 * fill wait for a later turn, instead of hanging or breaking the capture. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "policy/internal.h" /* sw_sync_device: waits for the syncer */
#include "tests/unit/policy/helpers.h"

#define WAIT_MS 50

/* The patience of the tests where the device is released while a call
 * waits (release_soon): long against the release's delay, so that a
 * loaded machine cannot make the wait run out first. */
#define LONG_WAIT_MS 1000
#define RELEASE_MS 100

static void env_wait_ms(size_t limit_pages, size_t host_pages, uint64_t ms)
{
    sw_device_config cfg = {
        .limit = limit_pages * PG, .host_limit = host_pages * PG, .spill = true,
        .quiesce_wait_ns = ms * 1000000ull,
    };
    env_up_cfg(&cfg, limit_pages);
}

static void env_wait(size_t limit_pages, size_t host_pages)
{
    env_wait_ms(limit_pages, host_pages, WAIT_MS);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The two-device collective of issue 12, at the policy level: the device's
 * sync cannot end (its kernel waits for a launch the allocating thread
 * makes only after the allocation). Before, the allocation hung. */
START_TEST(busy_device_gets_host_pages_not_a_hang)
{
    env_wait(4, 16);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &a), CUDA_SUCCESS);
    fill(a, 4 * PG, 1);
    fake_launch(FB, S1, a, 4 * PG); /* in flight, and it cannot finish */
    fake_hold_sync(FB, true);
    uint64_t t0 = now_ms();
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &b), CUDA_SUCCESS);
    uint64_t waited = now_ms() - t0;
    ck_assert_msg(waited < 20 * WAIT_MS, "waited %llu ms", (unsigned long long)waited);
    ck_assert_uint_eq(host_pages_in(b, 2), 2);  /* the new allocation: host pages */
    ck_assert_uint_eq(host_pages_in(a, 4), 0);  /* nothing moved under the work */
    assert_no_violation();
    fill(b, 2 * PG, 2);
    /* The program launches the other half: the work ends. A fill now finds
     * the device idle but full: b stays on the host, correct. */
    fake_hold_sync(FB, false);
    fake_complete(FB, S1);
    /* A sync answered after the timed-out one: the device is no longer
     * overdue, so the fill below does not back off (sw_back_off). */
    ck_assert_int_eq(sw_sync_device(P, 0, UINT64_MAX), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_fill(P, b), CUDA_SUCCESS); /* a's pages are free after the sync */
    ck_assert_uint_eq(host_pages_in(b, 2), 0);
    ck_assert(verify(b, 2 * PG, 2));
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    env_down();
}
END_TEST

/* While a capture is under way no sync happens on the pool's account: a
 * sync would invalidate the capture. */
START_TEST(capture_means_no_sync_and_no_move)
{
    env_wait(4, 16);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &a), CUDA_SUCCESS);
    fill(a, 4 * PG, 3);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS); /* pending: a sync would release it */
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &a), CUDA_SUCCESS);
    fill(a, 4 * PG, 4);
    fake_set_capturing(FB, true);
    uint64_t syncs = fstats().syncs, t0 = now_ms();
    ck_assert_int_eq(sw_alloc(P, 0, 3 * PG, &b), CUDA_SUCCESS);
    ck_assert_uint_lt(now_ms() - t0, 5 * WAIT_MS); /* no deadline waited out either */
    ck_assert_uint_eq(fstats().syncs, syncs);
    ck_assert_uint_eq(host_pages_in(b, 3), 3);
    ck_assert_uint_eq(host_pages_in(a, 4), 0);
    ck_assert_int_eq(sw_fill(P, b), CUDA_SUCCESS); /* no move during the capture */
    ck_assert_uint_eq(host_pages_in(b, 3), 3);
    ck_assert_uint_eq(fstats().syncs, syncs);
    fake_set_capturing(FB, false);
    ck_assert(verify(a, 4 * PG, 4));
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    env_down();
}
END_TEST

typedef struct holder {
    atomic_bool in, release;
} holder;

/* A bracket that stays open: a synchronous copy blocked in the driver. */
static void *hold_bracket(void *arg)
{
    holder *h = arg;
    sw_work_begin(P, 1);
    atomic_store(&h->in, true);
    while (!atomic_load(&h->release)) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    sw_work_end(P);
    return NULL;
}

START_TEST(open_bracket_past_the_deadline_gives_host_pages)
{
    env_wait(4, 16);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &a), CUDA_SUCCESS);
    fill(a, 4 * PG, 5);
    holder h = {0};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, hold_bracket, &h), 0);
    while (!atomic_load(&h.in))
        ;
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &b), CUDA_SUCCESS);
    ck_assert_uint_eq(host_pages_in(b, 2), 2);
    ck_assert_uint_eq(host_pages_in(a, 4), 0);
    atomic_store(&h.release, true);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    /* A sync with no deadline first: what the timed-out close left queued
     * is done, so the next allocation's own close and sync fit in the 50 ms
     * patience on a loaded machine too (it once took host pages there). */
    ck_assert_int_eq(sw_sync_device(P, 0, UINT64_MAX), CUDA_SUCCESS);
    /* With the bracket closed, the next allocation spills as usual. */
    CUdeviceptr c;
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &c), CUDA_SUCCESS);
    ck_assert_uint_eq(host_pages_in(c, 2), 0);
    ck_assert(verify(a, 4 * PG, 5));
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, c), CUDA_SUCCESS);
    env_down();
}
END_TEST

/* Brackets on another device never hold a move of this one back. */
START_TEST(gates_are_per_device)
{
    env_wait(4, 16);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &a), CUDA_SUCCESS);
    sw_work_begin(P, 2); /* device 1's work, in this very thread */
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &b), CUDA_SUCCESS);
    sw_work_end(P);
    ck_assert_uint_eq(host_pages_in(b, 2), 0);
    ck_assert_uint_eq(host_pages_in(a, 4), 2);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    env_down();
}
END_TEST

/* Brackets nest per thread: an inner bracket naming a device the outer
 * one holds takes nothing more, and its end leaves the outer one holding
 * it. A move from this thread while the outer bracket is open is refused
 * at once (it would wait for itself), not after a patience spent waiting
 * for a count this very thread holds. */
START_TEST(nested_brackets_hold_the_gate_until_the_outer_end)
{
    env_wait(4, 16);
    sw_work_begin(P, 1);
    sw_work_begin(P, 1);
    sw_work_end(P);
    uint64_t t0 = now_ms();
    ck_assert_int_eq(sw_gate_close(P, 1, sw_now_ns() + 2000000000ull), CUDA_ERROR_NOT_PERMITTED);
    ck_assert_uint_lt(now_ms() - t0, 1000);
    sw_work_end(P);
    ck_assert_int_eq(sw_gate_close(P, 1, sw_now_ns() + 2000000000ull), CUDA_SUCCESS);
    sw_gate_open(P, 1);
    env_down();
}
END_TEST

/* A device kept busy (the program runs ahead of its GPU) with frees
 * pending: the allocation's sync that would release them and its spill's
 * quiesce both wait for the device. Together they wait one patience, not
 * one each: before, each waited out a deadline of its own (two timeouts,
 * twice the stall, on every allocation past the limit). */
static void busy_with_pending_frees_ms(CUdeviceptr *y, uint64_t ms)
{
    env_wait_ms(4, 16, ms);
    CUdeviceptr x;
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &x), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, y), CUDA_SUCCESS);
    fill(*y, 2 * PG, 6);
    ck_assert_int_eq(sw_free(P, x), CUDA_SUCCESS); /* pending: a sync would release it */
    fake_launch(FB, S1, *y, 2 * PG);
    fake_hold_sync(FB, true);
    ck_assert_uint_eq(counters().wait_timeouts, 0);
}

static void busy_with_pending_frees(CUdeviceptr *y)
{
    busy_with_pending_frees_ms(y, WAIT_MS);
}

static void busy_ends(CUdeviceptr y)
{
    fake_hold_sync(FB, false);
    fake_complete(FB, S1);
    assert_no_violation();
    ck_assert(verify(y, 2 * PG, 6));
    ck_assert_int_eq(sw_free(P, y), CUDA_SUCCESS);
}

START_TEST(an_allocation_waits_for_a_busy_device_once)
{
    CUdeviceptr y, b;
    busy_with_pending_frees(&y);
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &b), CUDA_SUCCESS);
    ck_assert_uint_eq(host_pages_in(b, 4), 4);
    ck_assert_uint_eq(counters().wait_timeouts, 1);
    busy_ends(y);
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    env_down();
}
END_TEST

START_TEST(a_vmm_allocation_waits_for_a_busy_device_once)
{
    CUdeviceptr y;
    CUmemGenericAllocationHandle h;
    busy_with_pending_frees(&y);
    ck_assert_int_eq(sw_vmm_create(P, 0, 4 * PG, &h), CUDA_SUCCESS);
    ck_assert_uint_eq(counters().wait_timeouts, 1);
    busy_ends(y);
    bool gone;
    ck_assert_int_eq(sw_vmm_release(P, h, &gone), CUDA_SUCCESS);
    env_down();
}
END_TEST

START_TEST(a_lend_waits_for_a_busy_device_once)
{
    CUdeviceptr y;
    busy_with_pending_frees(&y);
    /* The pool must give 3 pages back: only a sync or a spill frees them. */
    ck_assert_int_eq(sw_lend(P, 0, 3 * PG), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_uint_eq(counters().wait_timeouts, 1);
    busy_ends(y);
    env_down();
}
END_TEST

/* A device that stays busy (a kernel longer than the patience): only the
 * first allocation past the limit waits for it. While that sync is still
 * pending, the next ones go straight to host pages: before, each waited a
 * whole patience of its own (100 allocations, 50 s at 500 ms). Nothing
 * moves meanwhile, and once the sync ends spilling resumes. */
#define NBUSY 8
START_TEST(a_busy_device_is_waited_for_once_not_per_allocation)
{
    env_wait(4, 32);
    CUdeviceptr a, b[NBUSY], c;
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &a), CUDA_SUCCESS);
    fill(a, 4 * PG, 7);
    fake_launch(FB, S1, a, 4 * PG); /* in flight past the patience */
    fake_hold_sync(FB, true);
    for (int i = 0; i < NBUSY; i++) {
        ck_assert_int_eq(sw_alloc(P, 0, PG, &b[i]), CUDA_SUCCESS);
        ck_assert_uint_eq(host_pages_in(b[i], 1), 1);
        fill(b[i], PG, 100 + (uint64_t)i);
    }
    ck_assert_uint_eq(counters().wait_timeouts, 1);
    ck_assert_uint_eq(counters().backoffs, NBUSY - 1);
    ck_assert_uint_eq(host_pages_in(a, 4), 0); /* nothing moved under the work */
    assert_no_violation();
    /* The work ends; once its sync is answered, the next allocation past
     * the limit spills again (no back-off for good). */
    fake_hold_sync(FB, false);
    fake_complete(FB, S1);
    ck_assert_int_eq(sw_sync_device(P, 0, UINT64_MAX), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &c), CUDA_SUCCESS);
    ck_assert_uint_eq(host_pages_in(c, 2), 0);
    ck_assert_uint_eq(host_pages_in(a, 4), 2);
    ck_assert_uint_eq(counters().wait_timeouts, 1);
    assert_no_violation();
    /* The data of all of them intact, the host pages filled back. */
    ck_assert(verify(a, 4 * PG, 7));
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, c), CUDA_SUCCESS);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(sw_fill(P, b[i]), CUDA_SUCCESS);
        ck_assert_uint_eq(host_pages_in(b[i], 1), 0);
    }
    for (int i = 0; i < NBUSY; i++) {
        ck_assert(verify(b[i], PG, 100 + (uint64_t)i));
        ck_assert_int_eq(sw_free(P, b[i]), CUDA_SUCCESS);
    }
    env_down();
}
END_TEST

/* The same with frees pending (each allocation's sync that would release
 * them is skipped too) and for VMM handles, which host pages back as well. */
START_TEST(busy_with_pending_frees_waits_once_not_per_allocation)
{
    CUdeviceptr y, b[NBUSY];
    CUmemGenericAllocationHandle h[NBUSY];
    busy_with_pending_frees(&y);
    for (int i = 0; i < NBUSY; i++) {
        ck_assert_int_eq(sw_alloc(P, 0, PG, &b[i]), CUDA_SUCCESS);
        ck_assert_uint_eq(host_pages_in(b[i], 1), 1);
        fill(b[i], PG, 200 + (uint64_t)i);
        ck_assert_int_eq(sw_vmm_create(P, 0, PG, &h[i]), CUDA_SUCCESS);
    }
    ck_assert_uint_eq(counters().wait_timeouts, 1);
    ck_assert_uint_eq(counters().backoffs, 2 * NBUSY - 1);
    busy_ends(y);
    for (int i = 0; i < NBUSY; i++) {
        bool gone;
        ck_assert(verify(b[i], PG, 200 + (uint64_t)i));
        ck_assert_int_eq(sw_free(P, b[i]), CUDA_SUCCESS);
        ck_assert_int_eq(sw_vmm_release(P, h[i], &gone), CUDA_SUCCESS);
    }
    env_down();
}
END_TEST

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

/* Each asker's own context (the backend's sync_token) is synced by the sync
 * that answers it, however many contexts ask while the syncer is busy: the
 * backend's synchronize does not cover them. Before, the ninth context to
 * ask during one sync was dropped (SW_SYNC_TOKENS) and its asker answered
 * as synced all the same. */
enum { ASKERS = SW_SYNC_TOKENS + 2 };
static _Thread_local void *own_ctx;
static pthread_mutex_t synced_lock = PTHREAD_MUTEX_INITIALIZER;
static bool ctx_synced[ASKERS + 1];

static void *token_of(void *ctx, int dev)
{
    (void)ctx;
    (void)dev;
    return own_ctx;
}

static CUresult sync_ctx(void *ctx, int dev, void *token)
{
    (void)ctx;
    (void)dev;
    pthread_mutex_lock(&synced_lock);
    ctx_synced[(uintptr_t)token] = true;
    pthread_mutex_unlock(&synced_lock);
    return CUDA_SUCCESS;
}

typedef struct asker {
    uintptr_t ctx;
    CUresult r;
    bool synced; /* its context, when its answer came */
} asker;

static void *ask(void *arg)
{
    asker *a = arg;
    own_ctx = (void *)a->ctx;
    a->r = sw_sync_device(P, 0, sw_now_ns() + 20000 * 1000000ull);
    pthread_mutex_lock(&synced_lock);
    a->synced = ctx_synced[a->ctx];
    pthread_mutex_unlock(&synced_lock);
    return NULL;
}

static uint64_t asked(void)
{
    sw_syncer *s = &P->syncer[0];
    pthread_mutex_lock(&s->m);
    uint64_t n = s->asked;
    pthread_mutex_unlock(&s->m);
    return n;
}

START_TEST(every_askers_context_is_synced)
{
    sw_device_config cfg = {.limit = 4 * PG, .host_limit = 16 * PG, .spill = true};
    FB = fake_create(PG, 4);
    sw_backend be = fake_ops(FB);
    be.sync_token = token_of;
    be.sync_context = sync_ctx;
    ck_assert_int_eq(sw_policy_create(&be, &P), CUDA_SUCCESS);
    ck_assert_int_eq(sw_device_init(P, 0, &cfg), CUDA_SUCCESS);
    fake_hold_sync(FB, true); /* the first sync stays busy while the others ask */
    asker a[ASKERS];
    pthread_t t[ASKERS];
    for (int i = 0; i < ASKERS; i++) {
        a[i] = (asker){.ctx = (uintptr_t)i + 1};
        ck_assert_int_eq(pthread_create(&t[i], NULL, ask, &a[i]), 0);
        /* One at a time, the first alone: the others ask during its sync. */
        for (int spins = 0; asked() < (uint64_t)i + 1 && spins < 100000; spins++)
            sched_yield();
    }
    usleep(20000); /* the last askers in their wait */
    fake_hold_sync(FB, false);
    for (int i = 0; i < ASKERS; i++) {
        pthread_join(t[i], NULL);
        ck_assert_msg(a[i].r != CUDA_SUCCESS || a[i].synced,
                      "asker %d answered as synced, its context never synced", i);
    }
    env_down();
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("policy_wait");
    TCase *tc = tcase_create("wait");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, busy_device_gets_host_pages_not_a_hang);
    tcase_add_test(tc, capture_means_no_sync_and_no_move);
    tcase_add_test(tc, open_bracket_past_the_deadline_gives_host_pages);
    tcase_add_test(tc, gates_are_per_device);
    tcase_add_test(tc, nested_brackets_hold_the_gate_until_the_outer_end);
    tcase_add_test(tc, an_allocation_waits_for_a_busy_device_once);
    tcase_add_test(tc, a_vmm_allocation_waits_for_a_busy_device_once);
    tcase_add_test(tc, a_lend_waits_for_a_busy_device_once);
    tcase_add_test(tc, a_busy_device_is_waited_for_once_not_per_allocation);
    tcase_add_test(tc, busy_with_pending_frees_waits_once_not_per_allocation);
    tcase_add_test(tc, a_lend_still_waits_while_allocations_back_off);
    tcase_add_test(tc, a_back_off_the_host_limit_refuses_waits_after_all);
    tcase_add_test(tc, spill_off_never_backs_off);
    tcase_add_test(tc, a_fill_backs_off_from_a_busy_device);
    tcase_add_test(tc, an_open_bracket_is_waited_for_once_not_per_allocation);
    tcase_add_test(tc, every_askers_context_is_synced);
    suite_add_tcase(s, tc);
    return s;
}
