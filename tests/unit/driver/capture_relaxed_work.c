/* The driver capture suite (test_capture.c): what spillway's own threads
 * may do while a program captures in global mode. */
#include "tests/unit/driver/capture_rig.h"

/* What spillway's own threads do while a program captures in GLOBAL mode
 * (policy/'s threads and its calls during a capture run RELAXED): VMM pages
 * on the device and the host, copies on a non-blocking stream of their own,
 * its sync and an event query. All allowed, and the capture ends valid. */
static CUresult relaxed_pool_work(void)
{
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    size_t page = 0;
    CUresult r = cuMemGetAllocationGranularity(&page, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    CUmemGenericAllocationHandle dev_h = 0, host_h = 0;
    CUdeviceptr va = 0;
    CUstream s = NULL;
    CUevent e = NULL;
    if (r == CUDA_SUCCESS)
        r = cuMemCreate(&dev_h, page, &prop, 0);
    prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
    if (r == CUDA_SUCCESS)
        r = cuMemCreate(&host_h, page, &prop, 0);
    if (r == CUDA_SUCCESS)
        r = cuMemAddressReserve(&va, 2 * page, 0, 0, 0);
    if (r == CUDA_SUCCESS)
        r = cuMemMap(va, page, 0, dev_h, 0);
    if (r == CUDA_SUCCESS)
        r = cuMemMap(va + page, page, 0, host_h, 0);
    CUmemAccessDesc a = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                         .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    if (r == CUDA_SUCCESS)
        r = cuMemSetAccess(va, 2 * page, &a, 1);
    if (r == CUDA_SUCCESS)
        r = cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    if (r == CUDA_SUCCESS)
        r = cuEventCreate(&e, CU_EVENT_DISABLE_TIMING);
    if (r == CUDA_SUCCESS)
        r = cuMemcpyDtoDAsync(va + page, va, page, s);
    if (r == CUDA_SUCCESS)
        r = cuEventRecord(e, s);
    if (r == CUDA_SUCCESS)
        r = cuStreamSynchronize(s);
    if (r == CUDA_SUCCESS)
        r = cuEventQuery(e);
    if (r == CUDA_SUCCESS)
        r = cuMemUnmap(va, 2 * page);
    if (r == CUDA_SUCCESS)
        r = cuMemAddressFree(va, 2 * page);
    if (r == CUDA_SUCCESS)
        r = cuMemRelease(dev_h);
    if (r == CUDA_SUCCESS)
        r = cuMemRelease(host_h);
    if (e)
        cuEventDestroy(e);
    if (s)
        cuStreamDestroy(s);
    return r;
}

START_TEST(relaxed_thread_may_move_pages_during_a_global_capture)
{
    setup();
    struct capturer c = {.mode = CU_STREAM_CAPTURE_MODE_GLOBAL,
                         .m = PTHREAD_MUTEX_INITIALIZER, .c = PTHREAD_COND_INITIALIZER};
    CU_OK(cuStreamCreate(&c.s, CU_STREAM_NON_BLOCKING));
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, capture_thread, &c), 0);
    stage_wait(&c, 1);
    CU_OK(c.end);
    CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
    CU_OK(cuThreadExchangeStreamCaptureMode(&m));
    CUresult r = relaxed_pool_work();
    CU_OK(cuThreadExchangeStreamCaptureMode(&m));
    stage_set(&c, 2);
    pthread_join(t, NULL);
    CU_OK(r);
    CU_OK(c.end);
    CU_OK(cuStreamDestroy(c.s));
}
END_TEST

void capture_relaxed_work_tests(TCase *tc)
{
    tcase_add_test(tc, relaxed_thread_may_move_pages_during_a_global_capture);
}
