/* The spill suite (test_spill.c): launches racing a thread that makes the
 * buffer they work on spill and fill, over and over. */
#include "tests/integration/shim/spill_rig.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

/* ---- (e) launches racing spill and fill ----------------------------------- */

#define RACE_BYTES (8 * MiB)
#define RACE_LAUNCHES 400u
#define RACE_MAX_LAUNCHES 4000u

struct churn {
    _Atomic int stop;
    _Atomic unsigned rounds;
    CUresult failed;
    CUdeviceptr raced; /* the launches' buffer */
};

/* Allocates what leaves no room for the racing buffer, writes it, frees
 * it: the buffer spills at each allocation, and the next launch fills it.
 * A sync point covers each free, so its pages are free for that fill (a
 * buffer used as seldom as this one comes back only into free pages,
 * policy/fill.c), and the next round waits a little for it: else the
 * buffer could stay on the host for good, where the frees fell between
 * launches as a loaded machine has them (2 spills and 1 fill in 4,000
 * launches). */
static void *churn(void *arg)
{
    struct churn *c = arg;
    if ((c->failed = cuCtxSetCurrent(ctx)) != CUDA_SUCCESS)
        return NULL;
    while (!atomic_load(&c->stop)) {
        CUdeviceptr x = 0;
        CUresult r = cuMemAlloc(&x, LIMIT - 4 * MiB);
        if (r == CUDA_SUCCESS)
            r = cuMemsetD32(x, 0xdeadbeefu, (LIMIT - 4 * MiB) / 4);
        if (r == CUDA_SUCCESS)
            r = cuMemFree(x);
        if (r == CUDA_SUCCESS)
            r = cuCtxSynchronize();
        if (r != CUDA_SUCCESS) {
            c->failed = r;
            return NULL;
        }
        c->rounds++;
        for (int i = 0; i < 50 && fakecuda_mapped_location(c->raced) != 0 && !atomic_load(&c->stop); i++) {
            struct timespec ms = {0, 1000000L};
            nanosleep(&ms, NULL);
        }
    }
    return NULL;
}

static bool raced(struct churn *c)
{
    return atomic_load(&c->rounds) > 1 && rig_stat(0, SPW_C_SPILL_EVENTS) > 1 && rig_stat(0, SPW_C_FILL_EVENTS) > 1;
}

START_TEST(launches_race_spill_and_fill)
{
    setup();
    CUfunction f = rig_kernel("step_u32");
    CUdeviceptr a = rig_filled(RACE_BYTES, 9);
    uint32_t *want = rig_expected(RACE_BYTES, 9);
    /* A copy from pageable memory may still be in flight when it returns,
     * and a non-blocking stream does not wait for it. */
    CU_OK(cuCtxSynchronize());
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    struct churn c = {.raced = a};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, churn, &c), 0);
    size_t n = RACE_BYTES / 4;
    /* At least RACE_LAUNCHES launches, and on until the race did happen
     * (the buffer moved both ways, more than once): how many moves so many
     * launches see depends on how the churn's allocations and frees fall
     * between them, which a loaded machine changes (RACE_MAX_LAUNCHES:
     * never alone). */
    unsigned k = 0;
    for (; k < RACE_LAUNCHES || (k < RACE_MAX_LAUNCHES && !raced(&c)); k++) {
        void *args[] = {&a, &n, &k};
        CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
        for (size_t i = 0; i < n; i++)
            want[i] = rig_step(want[i], k);
        if (k % 16 == 15)
            CU_OK(cuStreamSynchronize(s));
    }
    CU_OK(cuStreamSynchronize(s));
    atomic_store(&c.stop, 1);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_msg(c.failed == CUDA_SUCCESS, "the churning thread failed: error %d", (int)c.failed);
    rig_expect_words(a, want, RACE_BYTES, "the raced buffer");
    /* It did race: the buffer moved both ways, more than once. */
    ck_assert_msg(raced(&c), "in %u launches: %u churn rounds, %llu spill and %llu fill events (want > 1 each)",
                  k, atomic_load(&c.rounds), (unsigned long long)rig_stat(0, SPW_C_SPILL_EVENTS),
                  (unsigned long long)rig_stat(0, SPW_C_FILL_EVENTS));
    CU_OK(cuStreamDestroy(s));
    free(want);
}
END_TEST

void spill_race_tests(TCase *tc)
{
    tcase_add_test(tc, launches_race_spill_and_fill);
}
