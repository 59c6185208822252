/* shim/contexts.c: the kept contexts a device's sync covers, their
 * forgetting at cuCtxDestroy while a sync of them runs, a sync during a
 * destroy, and the errors that end a context. The sync callback stands for "make it current and
 * cuCtxSynchronize" (backend.c). */
#include "tests/unit/check_compat.h"
#include "shim/contexts.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#define C(n) ((CUcontext)(uintptr_t)(0x1000 * (n)))

/* The registry is process-wide: each test forgets what it kept. */
static void destroy_now(CUcontext c)
{
    spw_contexts_gone(c);
    spw_contexts_destroyed(c, true);
}

static void forget_all(void)
{
    for (int i = 1; i < 64; i++)
        destroy_now(C(i));
}

static CUcontext synced[64];
static unsigned nsynced;
static CUresult answer[64]; /* per context number */

static CUresult record(CUcontext c)
{
    synced[nsynced++] = c;
    return answer[(uintptr_t)c / 0x1000];
}

static void reset(void)
{
    forget_all();
    nsynced = 0;
    for (int i = 0; i < 64; i++)
        answer[i] = CUDA_SUCCESS;
}

static int was_synced(CUcontext c)
{
    int n = 0;
    for (unsigned i = 0; i < nsynced; i++)
        n += synced[i] == c;
    return n;
}

START_TEST(a_device_sync_covers_its_own_contexts_once)
{
    reset();
    spw_contexts_add(C(1), 0);
    spw_contexts_add(C(2), 1);
    spw_contexts_add(C(3), 0);
    spw_contexts_add(C(1), 0); /* again: kept once */
    ck_assert_int_eq(spw_contexts_kept(0), 1);
    ck_assert_int_eq(spw_contexts_kept(2), 0);
    ck_assert_int_eq(spw_contexts_sync(0, record), CUDA_SUCCESS);
    ck_assert_uint_eq(nsynced, 2);
    ck_assert_int_eq(was_synced(C(1)), 1);
    ck_assert_int_eq(was_synced(C(3)), 1);
    ck_assert_int_eq(was_synced(C(2)), 0);
    nsynced = 0;
    ck_assert_int_eq(spw_contexts_sync(2, record), CUDA_SUCCESS);
    ck_assert_uint_eq(nsynced, 0);
    reset();
}
END_TEST

START_TEST(a_gone_context_is_not_synced_and_the_generation_moves)
{
    reset();
    spw_contexts_add(C(1), 0);
    spw_contexts_add(C(2), 0);
    uint64_t g = spw_contexts_generation();
    destroy_now(C(1));
    ck_assert_uint_gt(spw_contexts_generation(), g);
    g = spw_contexts_generation();
    destroy_now(C(9)); /* never kept: a thread may remember it as primary */
    ck_assert_uint_gt(spw_contexts_generation(), g);
    g = spw_contexts_generation();
    spw_contexts_stream_gone();
    ck_assert_uint_gt(spw_contexts_generation(), g);
    ck_assert_int_eq(spw_contexts_sync(0, record), CUDA_SUCCESS);
    ck_assert_uint_eq(nsynced, 1);
    ck_assert_ptr_eq(synced[0], C(2));
    destroy_now(C(2));
    ck_assert_int_eq(spw_contexts_kept(0), 0);
    reset();
}
END_TEST

/* A context the driver no longer knows, or one an error ended, runs no
 * more work: dropped, and the sync goes on. Any other refusal is the
 * sync's answer (the move must not remap), the context kept. */
START_TEST(ended_contexts_are_dropped_other_refusals_returned)
{
    reset();
    for (int i = 1; i <= 4; i++)
        spw_contexts_add(C(i), 0);
    answer[1] = CUDA_ERROR_INVALID_CONTEXT;
    answer[2] = CUDA_ERROR_ILLEGAL_ADDRESS;
    answer[3] = CUDA_ERROR_OUT_OF_MEMORY;
    ck_assert_int_eq(spw_contexts_sync(0, record), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_uint_eq(nsynced, 4); /* every one tried */
    nsynced = 0;
    answer[3] = CUDA_SUCCESS;
    ck_assert_int_eq(spw_contexts_sync(0, record), CUDA_SUCCESS);
    ck_assert_uint_eq(nsynced, 2);
    ck_assert_int_eq(was_synced(C(3)), 1);
    ck_assert_int_eq(was_synced(C(4)), 1);
    reset();
}
END_TEST

/* ---- a destroy during a sync ------------------------------------------------ */

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int in_sync, release_sync;
static atomic_int syncing_now; /* the callback is running */
static atomic_int destroyed_during_sync;

static CUresult blocking_sync(CUcontext c)
{
    (void)c;
    atomic_store(&syncing_now, 1);
    pthread_mutex_lock(&m);
    in_sync++;
    pthread_cond_broadcast(&cv);
    while (!release_sync)
        pthread_cond_wait(&cv, &m);
    pthread_mutex_unlock(&m);
    atomic_store(&syncing_now, 0);
    return CUDA_SUCCESS;
}

static void *sweep(void *arg)
{
    (void)arg;
    ck_assert_int_eq(spw_contexts_sync(0, blocking_sync), CUDA_SUCCESS);
    return NULL;
}

static void *destroy(void *arg)
{
    spw_contexts_gone((CUcontext)arg);
    /* The driver's destroy would come here: never while a sync of it runs. */
    if (atomic_load(&syncing_now))
        atomic_store(&destroyed_during_sync, 1);
    spw_contexts_destroyed((CUcontext)arg, true);
    return NULL;
}

static void wait_in_sync(int n)
{
    pthread_mutex_lock(&m);
    while (in_sync < n)
        pthread_cond_wait(&cv, &m);
    pthread_mutex_unlock(&m);
}

static void let_syncs_end(void)
{
    pthread_mutex_lock(&m);
    release_sync = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&m);
}

START_TEST(a_destroy_waits_for_the_sync_of_its_context)
{
    reset();
    in_sync = release_sync = 0;
    atomic_store(&destroyed_during_sync, 0);
    spw_contexts_add(C(5), 0);
    pthread_t s, d;
    ck_assert_int_eq(pthread_create(&s, NULL, sweep, NULL), 0);
    wait_in_sync(1);
    ck_assert_int_eq(pthread_create(&d, NULL, destroy, C(5)), 0);
    struct timespec ts = {0, 50 * 1000000L};
    nanosleep(&ts, NULL); /* the destroy has had time to return, were it not waiting */
    let_syncs_end();
    ck_assert_int_eq(pthread_join(d, NULL), 0);
    ck_assert_int_eq(pthread_join(s, NULL), 0);
    ck_assert_int_eq(atomic_load(&destroyed_during_sync), 0);
    ck_assert_int_eq(spw_contexts_kept(0), 0);
    reset();
}
END_TEST

/* A device's sync while the driver destroys one of its contexts: the
 * context is never made current, and the sync ends only once the destroy
 * did (the destroy drains its work; a sync point before that would let a
 * block freed under that work be handed out while it runs). A destroy the
 * driver refuses leaves the context synced as before. */
static atomic_int sweep_done;

static void *sweep_then_note(void *arg)
{
    (void)arg;
    ck_assert_int_eq(spw_contexts_sync(0, record), CUDA_SUCCESS);
    atomic_store(&sweep_done, 1);
    return NULL;
}

START_TEST(a_sync_during_a_destroy_waits_for_it)
{
    reset();
    atomic_store(&sweep_done, 0);
    spw_contexts_add(C(7), 0);
    spw_contexts_add(C(8), 0);
    spw_contexts_gone(C(7)); /* the driver's destroy under way */
    ck_assert_int_eq(spw_contexts_kept(0), 1);
    pthread_t s;
    ck_assert_int_eq(pthread_create(&s, NULL, sweep_then_note, NULL), 0);
    struct timespec ts = {0, 50 * 1000000L};
    nanosleep(&ts, NULL); /* the sweep has had time to end, were it not waiting */
    ck_assert_int_eq(atomic_load(&sweep_done), 0);
    spw_contexts_destroyed(C(7), true);
    ck_assert_int_eq(pthread_join(s, NULL), 0);
    ck_assert_int_eq(was_synced(C(7)), 0);
    ck_assert_int_eq(was_synced(C(8)), 1);
    /* Refused: kept, synced again. */
    spw_contexts_gone(C(8));
    spw_contexts_destroyed(C(8), false);
    nsynced = 0;
    ck_assert_int_eq(spw_contexts_sync(0, record), CUDA_SUCCESS);
    ck_assert_int_eq(was_synced(C(8)), 1);
    ck_assert_uint_eq(nsynced, 1);
    reset();
}
END_TEST

/* Two syncs of one device at once (the syncer and a program thread's
 * promote): the second must not skip the context the first has busy, as
 * the first may have begun before the work the second must cover. */
static atomic_int second_synced;

static CUresult counting_sync(CUcontext c)
{
    (void)c;
    atomic_fetch_add(&second_synced, 1);
    return CUDA_SUCCESS;
}

static void *second_sweep(void *arg)
{
    (void)arg;
    ck_assert_int_eq(spw_contexts_sync(0, counting_sync), CUDA_SUCCESS);
    return NULL;
}

START_TEST(a_busy_context_is_waited_for_and_synced_again)
{
    reset();
    in_sync = release_sync = 0;
    atomic_store(&second_synced, 0);
    spw_contexts_add(C(6), 0);
    pthread_t s1, s2;
    ck_assert_int_eq(pthread_create(&s1, NULL, sweep, NULL), 0);
    wait_in_sync(1);
    ck_assert_int_eq(pthread_create(&s2, NULL, second_sweep, NULL), 0);
    struct timespec ts = {0, 50 * 1000000L};
    nanosleep(&ts, NULL);
    ck_assert_int_eq(atomic_load(&second_synced), 0); /* waiting, not skipping */
    let_syncs_end();
    ck_assert_int_eq(pthread_join(s1, NULL), 0);
    ck_assert_int_eq(pthread_join(s2, NULL), 0);
    ck_assert_int_eq(atomic_load(&second_synced), 1);
    reset();
}
END_TEST

/* Contexts noted and destroyed from many threads while syncs run: every
 * sync ends, nothing is synced after its destroy returned. */
#define CHURN_THREADS 4
static atomic_int gone_flag[64];
static atomic_int synced_after_gone;
static atomic_int stop_churn;

static CUresult checking_sync(CUcontext c)
{
    if (atomic_load(&gone_flag[(uintptr_t)c / 0x1000]))
        atomic_store(&synced_after_gone, 1);
    return CUDA_SUCCESS;
}

static void *churn(void *arg)
{
    int base = 1 + 10 * (int)(intptr_t)arg;
    for (int round = 0; round < 2000; round++) {
        int n = base + round % 10;
        atomic_store(&gone_flag[n], 0);
        spw_contexts_add(C(n), 0);
        spw_contexts_gone(C(n));
        atomic_store(&gone_flag[n], 1); /* the driver's destroy began */
        spw_contexts_destroyed(C(n), true);
    }
    return NULL;
}

static void *syncing(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop_churn))
        (void)spw_contexts_sync(0, checking_sync);
    return NULL;
}

START_TEST(churn_of_contexts_during_syncs)
{
    reset();
    atomic_store(&synced_after_gone, 0);
    atomic_store(&stop_churn, 0);
    pthread_t t[CHURN_THREADS], s[2];
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&s[i], NULL, syncing, NULL), 0);
    for (intptr_t i = 0; i < CHURN_THREADS; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, churn, (void *)i), 0);
    for (int i = 0; i < CHURN_THREADS; i++)
        ck_assert_int_eq(pthread_join(t[i], NULL), 0);
    atomic_store(&stop_churn, 1);
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_join(s[i], NULL), 0);
    ck_assert_int_eq(atomic_load(&synced_after_gone), 0);
    ck_assert_int_eq(spw_contexts_kept(0), 0);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("shim_contexts");
    TCase *tc = tcase_create("contexts");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_device_sync_covers_its_own_contexts_once);
    tcase_add_test(tc, a_gone_context_is_not_synced_and_the_generation_moves);
    tcase_add_test(tc, ended_contexts_are_dropped_other_refusals_returned);
    tcase_add_test(tc, a_destroy_waits_for_the_sync_of_its_context);
    tcase_add_test(tc, a_busy_context_is_waited_for_and_synced_again);
    tcase_add_test(tc, a_sync_during_a_destroy_waits_for_it);
    tcase_add_test(tc, churn_of_contexts_during_syncs);
    suite_add_tcase(s, tc);
    return s;
}
