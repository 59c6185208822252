/* The gates suite (test_gates.c): its run with a short patience
 * (gates.sh's last, SPW_GATES_PATIENCE), whose tcase is this file's. */
#include "tests/integration/shim/gates_rig.h"

#include <pthread.h>
#include <time.h>

/* ---- an asker that gave up (gates.sh's run with a short patience) --------- */

struct asker {
    CUcontext ctx;
    size_t bytes;
    unsigned delay_ms;
};

static void *ask_for_room(void *arg)
{
    struct asker *a = arg;
    struct timespec ts = {0, (long)a->delay_ms * 1000000L};
    nanosleep(&ts, NULL);
    CU_OK(cuCtxSetCurrent(a->ctx));
    CUdeviceptr p;
    (void)cuMemAlloc(&p, a->bytes); /* host pages or out of memory: either will do */
    return NULL;
}

/* A thread in a context of its own asks device 0's syncer for a sync
 * point while another thread's sync is under way (a 1 s kernel), gives up
 * at its deadline (SPW_TEST_PATIENCE_MS=200) and destroys its context. The
 * syncer's next sync, which that ask called for, must not make the
 * destroyed context current: on a GPU its handle is freed memory, or by
 * then another context's. */
START_TEST(an_asker_that_gave_up_leaves_no_context_behind)
{
    CUcontext c0 = setup(0);
    CUdeviceptr all;
    CU_OK(cuMemAlloc(&all, LIMIT));
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    sleep_on(s, 1000);
    CU_OK(cuMemFree(all)); /* its pages wait for a sync point */
    CUcontext mine;
    CU_OK(cuCtxCreate(&mine, NULL, 0, 0));
    CU_OK(cuCtxSetCurrent(c0));
    struct asker first = {.ctx = c0, .bytes = LIMIT, .delay_ms = 0};
    struct asker second = {.ctx = mine, .bytes = LIMIT / 2, .delay_ms = 50};
    pthread_t t1, t2;
    ck_assert_int_eq(pthread_create(&t1, NULL, ask_for_room, &first), 0);
    ck_assert_int_eq(pthread_create(&t2, NULL, ask_for_room, &second), 0);
    ck_assert_int_eq(pthread_join(t1, NULL), 0);
    ck_assert_int_eq(pthread_join(t2, NULL), 0);
    uint64_t syncs = rig_pool(0).syncs;
    CU_OK(cuCtxDestroy(mine));
    unsigned long long stale = fakecuda_stale_context_uses();
    CU_OK(cuCtxSetCurrent(c0));
    CU_OK(cuStreamSynchronize(s));
    /* The sync under way ends, then the one the second ask called for. */
    for (int i = 0; i < 300 && rig_pool(0).syncs < syncs + 2 && fakecuda_stale_context_uses() == stale; i++) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    ck_assert_msg(fakecuda_stale_context_uses() == stale,
                  "a sync made the destroyed context current %llu times",
                  fakecuda_stale_context_uses() - stale);
    ck_assert_msg(rig_pool(0).syncs >= syncs + 2, "%llu syncs after the asks, not 2",
                  (unsigned long long)(rig_pool(0).syncs - syncs));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

void gates_patience_tests(TCase *tc)
{
    tcase_add_test(tc, an_asker_that_gave_up_leaves_no_context_behind);
}
