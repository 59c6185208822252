/* The invariant a move rests on (README "Spill", "Safety"): a page is
 * remapped only after a sync point that covers all work that may touch it,
 * and every submission passes the work gate. Each test queues work that
 * reads a pool buffer of device 0 behind a 300 ms kernel, then makes
 * device 0 spill that buffer: fakecuda (FAKECUDA_CHECK_UNMAP) aborts on an
 * unmap under that work, which on a GPU kills the context. */
#include "tests/integration/shim/rig.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BUF (56 * MiB)

static void sleep_kernel(fakecuda_dim3 g, fakecuda_dim3 b, void **params)
{
    (void)g;
    (void)b;
    unsigned ms = *(unsigned *)params[0];
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A kernel that sleeps for its argument's milliseconds, in the current
 * context. */
static CUfunction sleeper(void)
{
    size_t sz[] = {sizeof(unsigned)};
    ck_assert_int_eq(fakecuda_register_kernel("gates_sleep", sleep_kernel, 1, sz), 0);
    CUmodule m;
    CUfunction f;
    CU_OK(cuModuleLoadData(&m, "fakecuda"));
    CU_OK(cuModuleGetFunction(&f, m, "gates_sleep"));
    return f;
}

static void sleep_on(CUstream s, unsigned ms)
{
    void *args[] = {&ms};
    CU_OK(cuLaunchKernel(sleeper(), 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
}

/* Past device 0's limit: spills the coldest of its pool, b among it. */
static void spill_device0(CUcontext c0)
{
    CU_OK(cuCtxSetCurrent(c0));
    CUdeviceptr x;
    CU_OK(cuMemAlloc(&x, 24 * MiB));
    ck_assert_uint_gt(rig_pool(0).spill_bytes, 0);
}

/* Device 1 was given access to device 0's pool (cuCtxEnablePeerAccess) and
 * reads it on a stream of its own; give_dev1_a_pool says whether device 1
 * ever allocated through spillway. Without a pool it had no syncer, and a
 * move skipped its sync. */
static void peer_reads_device0(int give_dev1_a_pool)
{
    CUcontext c0 = rig_setup(0), c1 = rig_setup(1);
    CU_OK(cuCtxSetCurrent(c1));
    CU_OK(cuCtxEnablePeerAccess(c0, 0));
    if (give_dev1_a_pool) {
        CUdeviceptr y;
        CU_OK(cuMemAlloc(&y, 1 * MiB));
    }
    CU_OK(cuCtxSetCurrent(c0));
    CUdeviceptr b = rig_filled(BUF, 7);
    CU_OK(cuCtxSetCurrent(c1));
    CUstream s1;
    CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    void *host;
    CU_OK(cuMemAllocHost(&host, BUF));
    sleep_on(s1, 300);
    CU_OK(cuMemcpyDtoHAsync(host, b, BUF, s1));
    spill_device0(c0);
    CU_OK(cuCtxSetCurrent(c1));
    CU_OK(cuStreamSynchronize(s1));
    uint32_t *want = rig_expected(BUF, 7);
    ck_assert(memcmp(host, want, BUF) == 0);
    free(want);
    rig_expect_pattern(b, BUF, 7, "the spilled buffer");
}

START_TEST(a_peer_without_a_pool_is_synced_before_a_move) { peer_reads_device0(0); }
END_TEST
START_TEST(a_peer_with_a_pool_is_synced_before_a_move) { peer_reads_device0(1); }
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("shim_gates");
    TCase *tc = tcase_create("gates");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_peer_without_a_pool_is_synced_before_a_move);
    tcase_add_test(tc, a_peer_with_a_pool_is_synced_before_a_move);
    suite_add_tcase(s, tc);
    return s;
}
