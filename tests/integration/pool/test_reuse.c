/* A reused block is never written by work still queued on its old owner:
 * async frees reused on another stream, sync frees after a sync point, a
 * context of the program's own, and pages reclaimed for a large
 * allocation. */
#include "tests/integration/pool/common.h"

#include <string.h>

/* Freed on stream a behind slow work, wanted at once on stream b with the
 * pool full: b's block must not be the one a's kernel still writes. */
START_TEST(async_free_reused_on_another_stream)
{
    use_device(0);
    CUfunction slow = slow_kernel();
    CUstream a, b;
    CU_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    size_t half = limit_bytes() / 2;
    CUdeviceptr p, filler, q;
    CU_OK(cuMemAllocAsync(&p, half, a));
    CU_OK(cuMemAlloc(&filler, half));
    launch_slow(slow, p, 0xAA, half, 150, a);
    CU_OK(cuMemFreeAsync(p, a));
    CU_OK(cuMemAllocAsync(&q, half, b));
    CU_OK(cuMemsetD8Async(q, 0x55, half, b));
    CU_OK(cuStreamSynchronize(b));
    CU_OK(cuCtxSynchronize());
    expect_byte(q, half, 0x55);
    CU_OK(cuMemFreeAsync(q, b));
    CU_OK(cuMemFree(filler));
    CU_OK(cuCtxSynchronize());
}
END_TEST

/* cuMemFree behind queued work, the pool full: the next owner gets the
 * block only after a sync point covered the kernel. */
START_TEST(sync_free_reused_after_queued_work)
{
    use_device(0);
    CUfunction slow = slow_kernel();
    CUstream a;
    CU_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    size_t half = limit_bytes() / 2;
    CUdeviceptr p, filler, q;
    CU_OK(cuMemAlloc(&p, half));
    CU_OK(cuMemAlloc(&filler, half));
    launch_slow(slow, p, 0xAA, half, 150, a);
    CU_OK(cuMemFree(p));
    CU_OK(cuMemAlloc(&q, half));
    CU_OK(cuMemsetD8(q, 0x55, half));
    CU_OK(cuCtxSynchronize());
    expect_byte(q, half, 0x55);
    CU_OK(cuMemFree(q));
    CU_OK(cuMemFree(filler));
}
END_TEST

/* Small blocks freed behind queued work, then one allocation that needs
 * every page: their pages are unmapped only after the kernel is done
 * (unmapping earlier makes fakecuda's worker fault, as a GPU would). */
START_TEST(reclaim_waits_for_queued_work)
{
    use_device(0);
    CUfunction slow = slow_kernel();
    CUstream a;
    CU_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CUdeviceptr small[8], big;
    for (int i = 0; i < 8; i++) {
        CU_OK(cuMemAlloc(&small[i], 64 * 1024 + (size_t)i * 4096));
        launch_slow(slow, small[i], 0xAA, 64 * 1024, i == 7 ? 150 : 1, a);
    }
    for (int i = 0; i < 8; i++)
        CU_OK(cuMemFree(small[i]));
    CUresult r = cuMemAlloc(&big, limit_bytes());
    if (pooled()) {
        CU_OK(r);
        CU_OK(cuMemsetD8(big, 0x55, limit_bytes()));
        CU_OK(cuCtxSynchronize());
        expect_byte(big, limit_bytes(), 0x55);
        CU_OK(cuMemFree(big));
    } else if (r == CUDA_SUCCESS) {
        CU_OK(cuMemFree(big));
    }
    CU_OK(cuCtxSynchronize());
}
END_TEST

/* The same in a context the program created (not the primary one): the
 * pool's sync and its events must cover that context's streams. */
START_TEST(own_context_free_waits_for_its_work)
{
    CU_OK(cuInit(0));
    CUctxCreateParams params;
    memset(&params, 0, sizeof params);
    CUcontext own;
    CU_OK(cuCtxCreate(&own, &params, 0, 0));
    CUfunction slow = slow_kernel();
    CUstream a, b;
    CU_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    size_t half = limit_bytes() / 2;
    CUdeviceptr p, filler, q, r;
    CU_OK(cuMemAlloc(&p, half));
    CU_OK(cuMemAlloc(&filler, half));
    launch_slow(slow, p, 0xAA, half, 150, a);
    CU_OK(cuMemFree(p));
    CU_OK(cuMemAlloc(&q, half));
    CU_OK(cuMemsetD8(q, 0x55, half));
    CU_OK(cuCtxSynchronize());
    expect_byte(q, half, 0x55);
    launch_slow(slow, q, 0xAA, half, 150, a);
    CU_OK(cuMemFreeAsync(q, a));
    CU_OK(cuMemAllocAsync(&r, half, b));
    CU_OK(cuMemsetD8Async(r, 0x66, half, b));
    CU_OK(cuCtxSynchronize());
    expect_byte(r, half, 0x66);
    CU_OK(cuMemFree(r));
    CU_OK(cuMemFree(filler));
    CU_OK(cuCtxDestroy(own));
}
END_TEST

/* A block of device 1's pool freed on a stream of device 0 behind slow
 * work there, then wanted on device 1 with its pool full: device 1's sync
 * does not cover device 0's stream, so the block is not handed out (or
 * unmapped) before that work is done. */
START_TEST(free_on_another_devices_stream_waits_for_its_work)
{
    use_device(0);
    CUfunction slow = slow_kernel();
    CUstream a, b;
    CU_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CUmemoryPool pool1;
    CU_OK(cuDeviceGetDefaultMemPool(&pool1, 1));
    size_t half = limit_bytes() / 2;
    CUdeviceptr p, filler, q;
    CU_OK(cuMemAllocFromPoolAsync(&p, half, pool1, a)); /* device 1's memory */
    CU_OK(cuStreamSynchronize(a));
    use_device(1);
    CU_OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    CU_OK(cuMemAlloc(&filler, half));
    use_device(0);
    launch_slow(slow, p, 0xAA, half, 150, a);
    CU_OK(cuMemFreeAsync(p, a));
    use_device(1);
    CUresult r = cuMemAllocAsync(&q, half, b);
    /* Without spill, the block still in use may be all there is. */
    ck_assert_msg(r == CUDA_SUCCESS || r == CUDA_ERROR_OUT_OF_MEMORY, "cuMemAllocAsync: %d", (int)r);
    if (r == CUDA_SUCCESS) {
        CU_OK(cuMemsetD8Async(q, 0x55, half, b));
        CU_OK(cuStreamSynchronize(b));
    }
    use_device(0);
    CU_OK(cuStreamSynchronize(a));
    use_device(1);
    if (r == CUDA_SUCCESS) {
        expect_byte(q, half, 0x55);
        CU_OK(cuMemFreeAsync(q, b));
    }
    CU_OK(cuMemFree(filler));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuStreamDestroy(b));
    use_device(0);
    CU_OK(cuStreamDestroy(a));
}
END_TEST

/* The legacy stream (NULL) is one per context: a block freed on one
 * context's legacy stream behind slow work there is not that stream's to
 * take back for an allocation on another context's legacy stream of the
 * same device (they are not ordered), whichever of them is the primary
 * context. The block is allocated in the taker's context, so that only the
 * free names the freer's (spill off: no gated launch notes it either). */
enum { PRIMARY, OWN, OWN2 };
static void legacy_reuse(int freer_is, int taker_is)
{
    CUcontext c[3];
    c[PRIMARY] = use_device(0);
    CUctxCreateParams params;
    memset(&params, 0, sizeof params);
    CU_OK(cuCtxCreate(&c[OWN], &params, 0, 0));
    CU_OK(cuCtxCreate(&c[OWN2], &params, 0, 0));
    CUcontext freer = c[freer_is], taker = c[taker_is];
    size_t half = limit_bytes() / 2;
    CUdeviceptr p, filler, q;
    CU_OK(cuCtxSetCurrent(taker));
    CU_OK(cuMemAlloc(&filler, half));
    CU_OK(cuMemAllocAsync(&p, half, NULL));
    CU_OK(cuStreamSynchronize(NULL));
    CU_OK(cuCtxSetCurrent(freer));
    CUfunction slow = slow_kernel();
    launch_slow(slow, p, 0xAA, half, 150, NULL);
    CU_OK(cuMemFreeAsync(p, NULL));
    CU_OK(cuCtxSetCurrent(taker));
    CUresult r = cuMemAllocAsync(&q, half, NULL);
    /* Without spill, the block still in use may be all there is. */
    ck_assert_msg(r == CUDA_SUCCESS || r == CUDA_ERROR_OUT_OF_MEMORY, "cuMemAllocAsync: %d", (int)r);
    if (r == CUDA_SUCCESS) {
        CU_OK(cuMemsetD8Async(q, 0x55, half, NULL));
        CU_OK(cuStreamSynchronize(NULL));
    }
    CU_OK(cuCtxSetCurrent(freer));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuCtxSetCurrent(taker));
    if (r == CUDA_SUCCESS) {
        expect_byte(q, half, 0x55);
        CU_OK(cuMemFree(q));
    }
    CU_OK(cuMemFree(filler));
    CU_OK(cuCtxSetCurrent(c[PRIMARY]));
    CU_OK(cuCtxDestroy(c[OWN]));
    CU_OK(cuCtxDestroy(c[OWN2]));
}

START_TEST(legacy_stream_of_an_own_context_is_not_the_primarys)
{
    legacy_reuse(OWN, PRIMARY);
}
END_TEST

START_TEST(legacy_stream_of_the_primary_is_not_an_own_contexts)
{
    legacy_reuse(PRIMARY, OWN);
}
END_TEST

START_TEST(legacy_streams_of_two_own_contexts_are_two)
{
    legacy_reuse(OWN, OWN2);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("pool_reuse");
    TCase *both = tcase_create("both");
    tcase_set_timeout(both, 60);
    tcase_add_test(both, async_free_reused_on_another_stream);
    tcase_add_test(both, sync_free_reused_after_queued_work);
    tcase_add_test(both, reclaim_waits_for_queued_work);
    tcase_add_test(both, own_context_free_waits_for_its_work);
    tcase_add_test(both, free_on_another_devices_stream_waits_for_its_work);
    tcase_add_test(both, legacy_stream_of_an_own_context_is_not_the_primarys);
    tcase_add_test(both, legacy_stream_of_the_primary_is_not_an_own_contexts);
    tcase_add_test(both, legacy_streams_of_two_own_contexts_are_two);
    suite_add_tcase(s, both);
    return s;
}
