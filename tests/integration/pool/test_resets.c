/* spillway only: blocks freed with cuMemFreeAsync across a primary-context
 * reset (cudaDeviceReset). The reset destroys the primary context's events,
 * among them those spillway recorded at the program's async frees; it
 * finished that context's work first, so those frees are done: their
 * blocks are released and the dead handles forgotten, wherever the block's
 * pool is (a block of device 1 freed on a stream of device 0 has its event
 * in device 0's context). Events of a context the program created live on.
 * The pool's events counter counts the events it holds that are alive. */
#include "tests/integration/pool/common.h"

#include <string.h>

/* The program keeps a context of its own with work on device 0, so the
 * reset is no sync point of the device: the free on the primary's stream
 * is released by the reset itself (its event died with the context), the
 * one on the program's context's stream stays until its event completes,
 * and the counter matches the driver's live events (spillway made them all). */
START_TEST(a_reset_releases_the_primarys_async_frees_and_keeps_an_own_contexts)
{
    if (!pooled())
        return;
    CUcontext primary = use_device(0);
    CUstream sp;
    CU_OK(cuStreamCreate(&sp, CU_STREAM_NON_BLOCKING));
    CUdeviceptr y;
    CU_OK(cuMemAlloc(&y, 16 * MiB));
    CUctxCreateParams params;
    memset(&params, 0, sizeof params);
    CUcontext own;
    CU_OK(cuCtxCreate(&own, &params, 0, 0));
    CUfunction slow = slow_kernel();
    CUstream so;
    CU_OK(cuStreamCreate(&so, CU_STREAM_NON_BLOCKING));
    CUdeviceptr x;
    CU_OK(cuMemAlloc(&x, 4 * MiB));
    /* Allocated before any free: a pool that makes pages syncs first. */
    launch_slow(slow, x, 0xAA, 4 * MiB, 300, so); /* the context has work: kept */
    CU_OK(cuMemFreeAsync(x, so));
    CU_OK(cuCtxSetCurrent(primary));
    CU_OK(cuMemsetD8Async(y, 0x11, 16 * MiB, sp));
    CU_OK(cuMemFreeAsync(y, sp));
    ck_assert_uint_ge(pool_counters(0).pending_bytes, 20 * MiB);
    ck_assert_uint_eq(pool_counters(0).events, fakecuda_live_events());

    CU_OK(cuDevicePrimaryCtxReset(0));
    struct spillway_pool_counters c = pool_counters(0);
    ck_assert_msg(c.pending_bytes <= 4 * MiB,
                  "the free on the reset context's stream is still pending (%llu bytes pending)",
                  (unsigned long long)c.pending_bytes);
    ck_assert_msg(c.events == fakecuda_live_events(),
                  "the pool counts %llu events, %zu are alive", (unsigned long long)c.events,
                  fakecuda_live_events());

    /* After the reset: async frees on the primary work as before, and
     * the program's own context's free is released by its event. */
    CU_OK(cuDevicePrimaryCtxRetain(&primary, 0));
    CU_OK(cuCtxSetCurrent(primary));
    CU_OK(cuStreamCreate(&sp, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < 4; i++) {
        CU_OK(cuMemAllocAsync(&y, 8 * MiB, sp));
        CU_OK(cuMemFreeAsync(y, sp));
    }
    CU_OK(cuStreamSynchronize(sp));
    CU_OK(cuCtxSetCurrent(own));
    CU_OK(cuStreamSynchronize(so));
    CU_OK(cuCtxSetCurrent(primary));
    CU_OK(cuMemAlloc(&y, 60 * MiB)); /* needs every page back */
    CU_OK(cuMemFree(y));
    CU_OK(cuCtxSynchronize());
    c = pool_counters(0);
    ck_assert_msg(c.events == fakecuda_live_events(),
                  "the pool counts %llu events, %zu are alive", (unsigned long long)c.events,
                  fakecuda_live_events());
    CU_OK(cuStreamDestroy(sp));
    CU_OK(cuCtxDestroy(own));
}
END_TEST

/* A block of device 1's pool freed on a stream of device 0 waits for its
 * event, made in device 0's primary context (no sync of device 1 covers
 * device 0's stream). A reset of device 0 finishes that stream's work and
 * destroys the event: the block is released, not pending until exit. */
START_TEST(a_reset_releases_another_devices_blocks_freed_on_its_streams)
{
    if (!pooled())
        return;
    CUcontext c1 = use_device(1);
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 16 * MiB));
    CU_OK(cuMemsetD8(p, 0x22, 16 * MiB));
    use_device(0);
    CUstream a;
    CU_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CU_OK(cuMemFreeAsync(p, a));
    ck_assert_uint_ge(pool_counters(1).pending_bytes, 16 * MiB);
    ck_assert_uint_eq(pool_counters(0).events + pool_counters(1).events, fakecuda_live_events());

    CU_OK(cuDevicePrimaryCtxReset(0));
    CU_OK(cuCtxSetCurrent(c1));
    CU_OK(cuCtxSynchronize()); /* a sync point of device 1: covers none of device 0's */
    struct spillway_pool_counters c = pool_counters(1);
    ck_assert_msg(c.pending_bytes == 0,
                  "device 1's block freed on device 0's stream is still pending (%llu bytes)",
                  (unsigned long long)c.pending_bytes);
    ck_assert_msg(pool_counters(0).events + c.events == fakecuda_live_events(),
                  "the pools count %llu events, %zu are alive",
                  (unsigned long long)(pool_counters(0).events + c.events), fakecuda_live_events());
}
END_TEST

/* cuCtxDestroy of a context the program made finishes its work and
 * destroys its events, among them the one spillway recorded at a free on
 * its stream (made in the freeing thread's context): that free is done,
 * released at the destroy, and its dead event never counted or used again. */
START_TEST(a_destroyed_context_releases_its_async_frees)
{
    if (!pooled())
        return;
    CUcontext primary = use_device(0);
    CUctxCreateParams params;
    memset(&params, 0, sizeof params);
    CUcontext own;
    CU_OK(cuCtxCreate(&own, &params, 0, 0));
    CUfunction slow = slow_kernel();
    CUstream so;
    CU_OK(cuStreamCreate(&so, CU_STREAM_NON_BLOCKING));
    CUdeviceptr x;
    CU_OK(cuMemAlloc(&x, 8 * MiB));
    launch_slow(slow, x, 0xAA, 8 * MiB, 300, so);
    CU_OK(cuMemFreeAsync(x, so));
    ck_assert_uint_ge(pool_counters(0).pending_bytes, 8 * MiB);
    ck_assert_uint_eq(pool_counters(0).events, fakecuda_live_events());

    CU_OK(cuCtxDestroy(own));
    CU_OK(cuCtxSetCurrent(primary));
    struct spillway_pool_counters c = pool_counters(0);
    ck_assert_msg(c.pending_bytes == 0,
                  "the free on the destroyed context's stream is still pending (%llu bytes)",
                  (unsigned long long)c.pending_bytes);
    ck_assert_msg(c.events == fakecuda_live_events(),
                  "the pool counts %llu events, %zu are alive", (unsigned long long)c.events,
                  fakecuda_live_events());
    /* Later async frees get live events. */
    CUstream sp;
    CU_OK(cuStreamCreate(&sp, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < 4; i++) {
        CU_OK(cuMemAllocAsync(&x, 8 * MiB, sp));
        CU_OK(cuMemFreeAsync(x, sp));
    }
    CU_OK(cuStreamSynchronize(sp));
    CU_OK(cuMemAlloc(&x, 60 * MiB)); /* needs every page back */
    CU_OK(cuMemFree(x));
    CU_OK(cuCtxSynchronize());
    ck_assert_uint_eq(pool_counters(0).events, fakecuda_live_events());
    CU_OK(cuStreamDestroy(sp));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("pool_resets");
    TCase *spw = tcase_create("spillway");
    tcase_set_timeout(spw, 60);
    tcase_add_test(spw, a_reset_releases_the_primarys_async_frees_and_keeps_an_own_contexts);
    tcase_add_test(spw, a_reset_releases_another_devices_blocks_freed_on_its_streams);
    tcase_add_test(spw, a_destroyed_context_releases_its_async_frees);
    suite_add_tcase(s, spw);
    return s;
}
