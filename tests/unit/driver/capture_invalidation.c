/* The driver capture suite (test_capture.c): what invalidates a capture or
 * is refused by it. A sync of a capturing stream or of its context, or the
 * legacy stream while a blocking stream captures; the calls a capture mode
 * forbids, and the mode a thread exchanges. */
#include "tests/unit/driver/capture_rig.h"

#include <stdio.h>

/* Waiting for a capturing stream is refused whatever the mode, and costs
 * the capture; the stream is usable again once the capture is ended. */
static void sync_invalidates(CUstreamCaptureMode mode, bool query)
{
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 4096));
    CU_OK(cuStreamBeginCapture(s, mode));
    CU_OK(cuMemsetD32Async(p, 5, 1024, s));
    CU_ERR(query ? cuStreamQuery(s) : cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CU_ERR(cuMemsetD32Async(p, 6, 1024, s), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    expect_invalidated_end(s);
    CU_OK(cuMemFree(p));
    CU_OK(cuStreamDestroy(s));
}

START_TEST(stream_sync_or_query_invalidates_in_every_mode)
{
    sync_invalidates(CU_STREAM_CAPTURE_MODE_GLOBAL, false);
    sync_invalidates(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, true);
    sync_invalidates(CU_STREAM_CAPTURE_MODE_RELAXED, true);
}
END_TEST

/* cuCtxSynchronize cannot wait for a context one of whose streams captures. */
static void ctx_sync_invalidates_in(CUstreamCaptureMode mode)
{
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 4096));
    CU_OK(cuStreamBeginCapture(s, mode));
    CU_OK(cuMemsetD32Async(p, 5, 1024, s));
    CU_ERR(cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    expect_invalidated_end(s);
    CU_OK(cuCtxSynchronize());
    CU_OK(cuMemFree(p));
    CU_OK(cuStreamDestroy(s));
}

START_TEST(ctx_sync_invalidates)
{
    ctx_sync_invalidates_in(CU_STREAM_CAPTURE_MODE_GLOBAL);
    ctx_sync_invalidates_in(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
}
END_TEST

START_TEST(legacy_stream_while_a_blocking_stream_captures)
{
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_DEFAULT)); /* blocking: the legacy stream covers it */
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 4096));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU_OK(cuMemsetD32Async(p, 5, 1024, s));
    /* Asking is refused but costs nothing, as documented. */
    CUstreamCaptureStatus st;
    CU_ERR(cuStreamIsCapturing(CU_STREAM_LEGACY, &st), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    ck_assert_int_eq(status_of(s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    /* Work on it, even in relaxed mode, costs the capture. */
    CU_ERR(cuMemsetD32Async(p, 6, 1024, NULL), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    expect_invalidated_end(s);
    /* A synchronous call uses the legacy stream too. */
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    unsigned v;
    CU_ERR(cuMemcpyDtoH(&v, p, 4), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    expect_invalidated_end(s);
    CU_OK(cuMemFree(p));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

START_TEST(legacy_stream_is_free_while_a_non_blocking_stream_captures)
{
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 4096));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemsetD32Async(p, 4, 1024, NULL)); /* runs: not captured */
    CUstreamCaptureStatus st;
    CU_OK(cuStreamIsCapturing(CU_STREAM_LEGACY, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_NONE);
    CUgraph g;
    CU_OK(cuStreamEndCapture(s, &g));
    CU_OK(cuGraphDestroy(g));
    expect_u32(p, 4, 1024);
    CU_OK(cuMemFree(p));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* cuMemAlloc is the driver's own example of a potentially unsafe call. */
START_TEST(unsafe_calls_follow_the_capture_mode)
{
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p = 0x1234;
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_ERR(cuMemAlloc(&p, 4096), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    /* What a refused cuMemAlloc leaves in *dptr cuda.h does not say:
     * fakecuda leaves it untouched; the driver's is printed. */
    printf("a refused cuMemAlloc left *dptr %#llx\n", (unsigned long long)p);
    if (fakecuda_present())
        ck_assert_uint_eq(p, 0x1234);
    expect_invalidated_end(s);
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CU_ERR(cuMemAlloc(&p, 4096), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    expect_invalidated_end(s);
    /* A relaxed capture allows it, and stays whole. */
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU_OK(cuMemAlloc(&p, 4096));
    CU_OK(cuMemFree(p));
    ck_assert_int_eq(status_of(s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CUgraph g;
    CU_OK(cuStreamEndCapture(s, &g));
    CU_OK(cuGraphDestroy(g));
    /* So does a thread in relaxed mode during its own global capture. */
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuThreadExchangeStreamCaptureMode(&mode));
    ck_assert_int_eq(mode, CU_STREAM_CAPTURE_MODE_GLOBAL); /* a thread starts global */
    CU_OK(cuMemAlloc(&p, 4096));
    CU_OK(cuMemFree(p));
    CU_OK(cuThreadExchangeStreamCaptureMode(&mode));
    CU_OK(cuStreamEndCapture(s, &g));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

START_TEST(exchange_mode_arguments)
{
    CUstreamCaptureMode bad = (CUstreamCaptureMode)9;
    CU_ERR(cuThreadExchangeStreamCaptureMode(&bad), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuThreadExchangeStreamCaptureMode(NULL), CUDA_ERROR_INVALID_VALUE);
    CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
    CU_OK(cuThreadExchangeStreamCaptureMode(&m));
    ck_assert_int_eq(m, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CU_OK(cuThreadExchangeStreamCaptureMode(&m));
    ck_assert_int_eq(m, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
}
END_TEST

void capture_invalidation_tests(TCase *tc)
{
    tcase_add_test(tc, stream_sync_or_query_invalidates_in_every_mode);
    tcase_add_test(tc, ctx_sync_invalidates);
    tcase_add_test(tc, legacy_stream_while_a_blocking_stream_captures);
    tcase_add_test(tc, legacy_stream_is_free_while_a_non_blocking_stream_captures);
    tcase_add_test(tc, unsafe_calls_follow_the_capture_mode);
    tcase_add_test(tc, exchange_mode_arguments);
}
