/* The driver capture suite (test_capture.c): captures and other threads. A
 * global capture refuses unsafe calls to the threads in global mode, and
 * only a relaxed capture may end on a thread other than its own. */
#include "tests/unit/driver/capture_rig.h"

#include <stdint.h>

/* What another thread's capture in mode makes of this thread's cuMemAlloc,
 * and how that capture ends. */
static void other_thread(CUstreamCaptureMode mode, CUresult alloc_want, CUresult end_want)
{
    struct capturer c = {.mode = mode, .m = PTHREAD_MUTEX_INITIALIZER, .c = PTHREAD_COND_INITIALIZER};
    CU_OK(cuStreamCreate(&c.s, CU_STREAM_NON_BLOCKING));
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, capture_thread, &c), 0);
    stage_wait(&c, 1);
    CU_OK(c.end);
    CUdeviceptr p;
    CUresult r = cuMemAlloc(&p, 4096);
    if (r == CUDA_SUCCESS)
        CU_OK(cuMemFree(p));
    stage_set(&c, 2);
    pthread_join(t, NULL);
    ck_assert_int_eq(r, alloc_want);
    ck_assert_int_eq(c.end, end_want);
    CU_OK(cuStreamDestroy(c.s));
}

START_TEST(global_capture_restricts_other_threads)
{
    other_thread(CU_STREAM_CAPTURE_MODE_GLOBAL, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                 CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    other_thread(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, CUDA_SUCCESS, CUDA_SUCCESS);
    other_thread(CU_STREAM_CAPTURE_MODE_RELAXED, CUDA_SUCCESS, CUDA_SUCCESS);
    /* a thread in thread-local mode ignores other threads' global captures */
    CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
    CU_OK(cuThreadExchangeStreamCaptureMode(&m));
    other_thread(CU_STREAM_CAPTURE_MODE_GLOBAL, CUDA_SUCCESS, CUDA_SUCCESS);
    CU_OK(cuThreadExchangeStreamCaptureMode(&m));
}
END_TEST

static void *end_elsewhere(void *arg)
{
    CUstream s = arg;
    cuCtxSetCurrent(test_ctx);
    CUgraph g = NULL;
    CUresult r = cuStreamEndCapture(s, &g);
    if (g)
        cuGraphDestroy(g);
    return (void *)(uintptr_t)r;
}

START_TEST(only_a_relaxed_capture_ends_on_another_thread)
{
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    pthread_t t;
    void *r;
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    ck_assert_int_eq(pthread_create(&t, NULL, end_elsewhere, s), 0);
    pthread_join(t, &r);
    ck_assert_int_eq((CUresult)(uintptr_t)r, CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
    (void)still_capturing(s, CU_STREAM_CAPTURE_MODE_GLOBAL, "an end on another thread");
    CUgraph g;
    CU_OK(cuStreamEndCapture(s, &g));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    ck_assert_int_eq(pthread_create(&t, NULL, end_elsewhere, s), 0);
    pthread_join(t, &r);
    CU_OK((CUresult)(uintptr_t)r);
    ck_assert_int_eq(status_of(s), CU_STREAM_CAPTURE_STATUS_NONE);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

void capture_thread_tests(TCase *tc)
{
    tcase_add_test(tc, global_capture_restricts_other_threads);
    tcase_add_test(tc, only_a_relaxed_capture_ends_on_another_thread);
}
