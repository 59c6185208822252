/* Moves never wait without end (issue 12): a device whose work waits for
 * work the program has yet to submit, a bracket blocked in the driver, or a
 * stream capture under way make an allocation go on with host pages, and a
 * fill wait for a later turn, instead of hanging or breaking the capture.
 *
 * One suite in three files: here the deadlines, capture, brackets and
 * gates, and the askers' contexts; a busy device waited for once
 * (wait_once.c) and backing off (wait_back_off.c), sharing wait_rig.h. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "policy/internal.h" /* sw_sync_device: waits for the syncer */
#include "tests/unit/policy/wait_rig.h"

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
    wait_once_tests(tc);
    wait_back_off_tests(tc);
    tcase_add_test(tc, every_askers_context_is_synced);
    suite_add_tcase(s, tc);
    return s;
}
