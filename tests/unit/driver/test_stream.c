/* Conformance: streams run asynchronously and in order; the legacy default
 * stream synchronises with blocking streams and not with non-blocking ones;
 * events order work across streams. A kernel spinning on a host flag keeps a
 * stream busy for exactly as long as a test needs. */
#include <stdio.h>
#include <time.h>

#include "tests/unit/driver/common.h"

static struct test_kernels k;
static struct flag f;

static void setup(void)
{
    driver_setup();
    kernels_load(&k);
    flag_new(&f);
}

START_TEST(stream_is_asynchronous)
{
    CUstream s;
    CUevent e;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuEventQuery(e)); /* never recorded: complete */
    stream_block(&k, &f, s);
    CU_OK(cuEventRecord(e, s));
    expect_stream_pending(s);
    expect_event_pending(e);
    flag_release(&f);
    CU_OK(cuEventSynchronize(e));
    CU_OK(cuEventQuery(e));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuStreamQuery(s));
    CU_OK(cuEventDestroy(e));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

START_TEST(work_runs_in_order)
{
    CUstream s;
    CU_OK(cuStreamCreate(&s, 0));
    CUdeviceptr p;
    size_t n = 256 * 1024;
    CU_OK(cuMemAlloc(&p, n * 4));
    CU_OK(launch_u32(k.fill_u32, p, 1, n, s));
    CU_OK(launch_u32(k.add_u32, p, 2, n, s));
    CU_OK(cuMemsetD32Async(p, 100, n / 2, s));
    CU_OK(launch_u32(k.add_u32, p, 3, n, s));
    CU_OK(cuStreamSynchronize(s));
    expect_u32(p, 103, n / 2);
    expect_u32(p + n / 2 * 4, 6, n / 2);
    CU_OK(cuMemFree(p));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

START_TEST(legacy_stream_waits_for_blocking_streams)
{
    CUstream blocking;
    CUevent e;
    CU_OK(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
    CU_OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    stream_block(&k, &f, blocking);
    CU_OK(cuEventRecord(e, NULL)); /* legacy stream: behind the blocked stream */
    expect_event_pending(e);
    flag_release(&f);
    CU_OK(cuEventSynchronize(e));
    CU_OK(cuStreamDestroy(blocking));
    CU_OK(cuEventDestroy(e));
}
END_TEST

START_TEST(blocking_stream_waits_for_legacy_stream)
{
    CUstream blocking;
    CUevent e;
    CU_OK(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
    CU_OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    stream_block(&k, &f, NULL);
    CU_OK(cuEventRecord(e, blocking));
    expect_event_pending(e);
    flag_release(&f);
    CU_OK(cuStreamSynchronize(blocking));
    CU_OK(cuEventQuery(e));
    CU_OK(cuStreamDestroy(blocking));
    CU_OK(cuEventDestroy(e));
}
END_TEST

START_TEST(non_blocking_stream_ignores_legacy_stream)
{
    CUstream nb;
    CU_OK(cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 4096));
    stream_block(&k, &f, NULL);
    CU_OK(cuMemsetD32Async(p, 9, 1024, nb));
    CU_OK(cuStreamSynchronize(nb)); /* would hang if it waited for the legacy stream */
    unsigned v = 0;
    CU_OK(cuMemcpyDtoHAsync(&v, p, 4, nb));
    CU_OK(cuStreamSynchronize(nb));
    ck_assert_uint_eq(v, 9);
    expect_stream_pending(NULL);
    flag_release(&f);
    CU_OK(cuCtxSynchronize());
    CU_OK(cuMemFree(p));
    CU_OK(cuStreamDestroy(nb));
}
END_TEST

START_TEST(wait_event_orders_streams)
{
    CUstream a, b;
    CUevent ea, eb;
    CU_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    CU_OK(cuEventCreate(&ea, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuEventCreate(&eb, CU_EVENT_DISABLE_TIMING));
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 4096));
    CU_OK(cuMemsetD32(p, 1, 1024));
    CU_OK(cuCtxSynchronize());
    stream_block(&k, &f, a);
    CU_OK(launch_u32(k.fill_u32, p, 5, 1024, a));
    CU_OK(cuEventRecord(ea, a));
    CU_OK(cuStreamWaitEvent(b, ea, 0));
    CU_OK(launch_u32(k.add_u32, p, 10, 1024, b)); /* must see 5, not 1 */
    CU_OK(cuEventRecord(eb, b));
    expect_event_pending(eb);
    flag_release(&f);
    CU_OK(cuStreamSynchronize(b));
    expect_u32(p, 15, 1024);
    CU_OK(cuMemFree(p));
    CU_OK(cuStreamDestroy(a));
    CU_OK(cuStreamDestroy(b));
    CU_OK(cuEventDestroy(ea));
    CU_OK(cuEventDestroy(eb));
}
END_TEST

/* "hEvent and hStream must be from the same context otherwise
 * CUDA_ERROR_INVALID_HANDLE is returned": an event of the primary context
 * on a stream of a context created on the same device, or on the legacy
 * stream while that context is current. */
START_TEST(event_records_only_in_its_context)
{
    CUevent ev;
    CUstream own;
    CU_OK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    CUcontext created, popped;
    CUctxCreateParams params;
    memset(&params, 0, sizeof params);
    CUdevice dev;
    CU_OK(cuCtxGetDevice(&dev));
    CU_OK(cuCtxCreate(&created, &params, 0, dev)); /* pushed as current */
    CU_OK(cuStreamCreate(&own, CU_STREAM_NON_BLOCKING));
    CU_ERR(cuEventRecord(ev, own), CUDA_ERROR_INVALID_HANDLE);
    CU_ERR(cuEventRecord(ev, NULL), CUDA_ERROR_INVALID_HANDLE);
    CUevent mine;
    CU_OK(cuEventCreate(&mine, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuEventRecord(mine, own));
    CU_OK(cuEventRecord(mine, NULL));
    CU_OK(cuEventSynchronize(mine));
    CU_OK(cuStreamDestroy(own));
    CU_OK(cuEventDestroy(mine));
    CU_OK(cuCtxPopCurrent(&popped));
    ck_assert_ptr_eq(popped, created);
    CU_OK(cuCtxDestroy(created));
    CU_OK(cuEventRecord(ev, NULL)); /* its own context's again */
    CU_OK(cuEventSynchronize(ev));
    CU_OK(cuEventDestroy(ev));
}
END_TEST

START_TEST(destroyed_stream_finishes_its_work)
{
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 4096));
    stream_block(&k, &f, s);
    CU_OK(launch_u32(k.fill_u32, p, 8, 1024, s));
    CU_OK(cuStreamDestroy(s));
    flag_release(&f);
    CU_OK(cuCtxSynchronize());
    expect_u32(p, 8, 1024);
    CU_OK(cuMemFree(p));
}
END_TEST

static void CUDA_CB count_call(void *arg)
{
    __atomic_add_fetch((int *)arg, 1, __ATOMIC_SEQ_CST);
}

START_TEST(host_function_runs_in_order)
{
    static int calls;
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    stream_block(&k, &f, s);
    CU_OK(cuLaunchHostFunc(s, count_call, &calls));
    ck_assert_int_eq(__atomic_load_n(&calls, __ATOMIC_SEQ_CST), 0);
    flag_release(&f);
    CU_OK(cuStreamSynchronize(s));
    ck_assert_int_eq(calls, 1);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* cuStreamAddCallback: "called on the host after all currently enqueued
 * items in the stream have completed", "exactly once", given the stream
 * and userData, and "will block later work in the stream until it is
 * finished" (a copy queued after it reads what it wrote). Through the
 * _ptsz entry point NULL is the per-thread stream. Refused, with codes the
 * reference does not name (printed; fakecuda: INVALID_VALUE, and
 * STREAM_CAPTURE_UNSUPPORTED for a capture): flags other than 0
 * ("reserved ... must be 0") and a capturing stream ("not supported with
 * cuStreamBeginCapture"). */
struct callback_seen {
    int calls;
    CUstream stream;
    CUresult status;
    unsigned *word; /* pinned: set to 7 after a 50 ms sleep */
};

static void CUDA_CB note_callback(CUstream s, CUresult status, void *arg)
{
    struct callback_seen *c = arg;
    struct timespec ts = {0, 50 * 1000000L};
    nanosleep(&ts, NULL);
    c->stream = s;
    c->status = status;
    __atomic_store_n(c->word, 7u, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&c->calls, 1, __ATOMIC_SEQ_CST);
}

#undef cuStreamAddCallback
CUresult cuStreamAddCallback_ptsz(CUstream, CUstreamCallback, void *, unsigned int);

START_TEST(stream_callback_runs_in_order)
{
    static struct callback_seen seen;
    CU_OK(cuMemAllocHost((void **)&seen.word, sizeof *seen.word));
    *seen.word = 0;
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 4096));
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    stream_block(&k, &f, s);
    CU_OK(cuStreamAddCallback(s, note_callback, &seen, 0));
    CU_OK(cuMemcpyHtoDAsync(p, seen.word, sizeof *seen.word, s));
    ck_assert_int_eq(__atomic_load_n(&seen.calls, __ATOMIC_SEQ_CST), 0);
    flag_release(&f);
    CU_OK(cuStreamSynchronize(s));
    ck_assert_int_eq(seen.calls, 1);
    ck_assert_ptr_eq(seen.stream, s);
    ck_assert_int_eq(seen.status, CUDA_SUCCESS);
    expect_u32(p, 7, 1);
    CU_OK(cuStreamAddCallback_ptsz(NULL, note_callback, &seen, 0));
    CU_OK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
    ck_assert_int_eq(seen.calls, 2);

    CUresult r = cuStreamAddCallback(s, note_callback, &seen, 1);
    printf("stream_callback_runs_in_order: flags 1: the driver answers %d\n", (int)r);
    ck_assert_int_ne(r, CUDA_SUCCESS);
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    r = cuStreamAddCallback(s, note_callback, &seen, 0);
    CUgraph g = NULL;
    CUresult end = cuStreamEndCapture(s, &g);
    printf("stream_callback_runs_in_order: on a capturing stream: the driver answers %d (the end %d)\n", (int)r,
           (int)end);
    ck_assert_int_ne(r, CUDA_SUCCESS);
    if (g)
        CU_OK(cuGraphDestroy(g));
    if (fakecuda_present()) {
        ck_assert_int_eq(cuStreamAddCallback(s, note_callback, &seen, 1), CUDA_ERROR_INVALID_VALUE);
        ck_assert_int_eq(r, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    }
    CU_OK(cuStreamSynchronize(s));
    ck_assert_int_eq(seen.calls, 2);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(p));
    CU_OK(cuMemFreeHost(seen.word));
}
END_TEST

/* cuStreamAttachMemAsync: a managed allocation attached, whole (length 0
 * or its size), globally, to the host, and to one stream, on which a
 * kernel then writes it and the host reads it after the stream's work
 * ("the Unified Memory system will allow CPU access to this memory region
 * so long as all operations in hStream have completed"). Refused, with
 * codes the reference does not name (printed; fakecuda: INVALID_VALUE):
 * a single-stream attachment to the NULL stream ("an error will be
 * returned"), part of an allocation, flags that are none of
 * CUmemAttach_flags, memory that is not managed. */
#undef cuStreamAttachMemAsync
CUresult cuStreamAttachMemAsync_ptsz(CUstream, CUdeviceptr, size_t, unsigned int);

static void attach_refused(CUresult r, const char *what)
{
    printf("attach_managed_memory: %s: the driver answers %d\n", what, (int)r);
    ck_assert_msg(r != CUDA_SUCCESS, "%s accepted", what);
    if (fakecuda_present())
        ck_assert_int_eq(r, CUDA_ERROR_INVALID_VALUE);
}

START_TEST(attach_managed_memory)
{
    const size_t n = 64 * 1024;
    CUdeviceptr m, d;
    CU_OK(cuMemAllocManaged(&m, n * 4, CU_MEM_ATTACH_GLOBAL));
    CU_OK(cuMemAlloc(&d, 4096));
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamAttachMemAsync(s, m, 0, CU_MEM_ATTACH_GLOBAL));
    CU_OK(cuStreamAttachMemAsync(s, m, n * 4, CU_MEM_ATTACH_HOST));
    CU_OK(cuStreamAttachMemAsync_ptsz(s, m, 0, CU_MEM_ATTACH_GLOBAL));
    CU_OK(cuStreamAttachMemAsync(s, m, 0, CU_MEM_ATTACH_SINGLE));
    CU_OK(launch_u32(k.fill_u32, m, 0x5eed, n, s));
    CU_OK(cuStreamSynchronize(s));
    const unsigned *w = (const unsigned *)(uintptr_t)m;
    ck_assert_uint_eq(w[0], 0x5eed);
    ck_assert_uint_eq(w[n - 1], 0x5eed);
    attach_refused(cuStreamAttachMemAsync(NULL, m, 0, CU_MEM_ATTACH_SINGLE), "SINGLE to the NULL stream");
    attach_refused(cuStreamAttachMemAsync(s, m, n * 2, CU_MEM_ATTACH_GLOBAL), "half of the allocation");
    attach_refused(cuStreamAttachMemAsync(s, m, 0, 0), "flags 0");
    attach_refused(cuStreamAttachMemAsync(s, m, 0, 8), "flags 8");
    attach_refused(cuStreamAttachMemAsync(s, d, 0, CU_MEM_ATTACH_GLOBAL), "cuMemAlloc memory");
    CU_OK(cuStreamAttachMemAsync(s, m, 0, CU_MEM_ATTACH_GLOBAL));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(m));
    CU_OK(cuMemFree(d));
}
END_TEST

/* CUDA 13.2's cuLaunchHostFunc_v2: a host function with the way the thread
 * that runs host tasks waits for them (0 blocking, 1 spin-wait), in stream
 * order as cuLaunchHostFunc's. Looked up at 13020 as a 13.2 runtime does;
 * a driver without it (CUDA 13.0's 580) skips. */
typedef CUresult (*host_func_v2_fn)(CUstream, CUhostFn, void *, unsigned int);

START_TEST(host_function_with_a_sync_mode_runs_in_order)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult q;
    if (cuGetProcAddress("cuLaunchHostFunc_v2", &fn, 13020, CU_GET_PROC_ADDRESS_DEFAULT, &q) != CUDA_SUCCESS ||
        !fn) {
        printf("host_function_with_a_sync_mode_runs_in_order: skipped (no cuLaunchHostFunc_v2)\n");
        return;
    }
    host_func_v2_fn launch = (host_func_v2_fn)fn;
    static int calls;
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    stream_block(&k, &f, s);
    CU_OK(launch(s, count_call, &calls, 0));
    CU_OK(launch(s, count_call, &calls, 1));
    ck_assert_int_eq(__atomic_load_n(&calls, __ATOMIC_SEQ_CST), 0);
    flag_release(&f);
    CU_OK(cuStreamSynchronize(s));
    ck_assert_int_eq(calls, 2);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

START_TEST(bad_stream_arguments)
{
    CUstream s;
    CU_ERR(cuStreamCreate(&s, 0x100), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuStreamCreate(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    unsigned flags = 7;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamGetFlags(s, &flags));
    ck_assert_uint_eq(flags, CU_STREAM_NON_BLOCKING);
    CUcontext c = NULL;
    CU_OK(cuStreamGetCtx(s, &c));
    ck_assert_ptr_eq(c, test_ctx);
    /* CUDA 12.5's: a stream of a context (not a green one) names no green
     * context; the special streams name the current context. */
    CUgreenCtx g = (CUgreenCtx)&c;
    c = NULL;
    CU_OK(cuStreamGetCtx_v2(s, &c, &g));
    ck_assert_ptr_eq(c, test_ctx);
    ck_assert_ptr_null(g);
    g = (CUgreenCtx)&c;
    c = NULL;
    CU_OK(cuStreamGetCtx_v2(CU_STREAM_LEGACY, &c, &g));
    ck_assert_ptr_eq(c, test_ctx);
    ck_assert_ptr_null(g);
    CUdevice mine, d = -1;
    CU_OK(cuCtxGetDevice(&mine));
    CU_OK(cuStreamGetDevice(s, &d));
    ck_assert_int_eq(d, mine);
    d = -1;
    CU_OK(cuStreamGetDevice(CU_STREAM_LEGACY, &d));
    ck_assert_int_eq(d, mine);
    CU_ERR(cuStreamGetDevice(s, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamDestroy(s));
    CUevent e;
    CU_ERR(cuEventCreate(&e, 0x100), CUDA_ERROR_INVALID_VALUE);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("driver_stream");
    TCase *tc = tcase_create("stream");
    tcase_add_checked_fixture(tc, setup, driver_teardown);
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, stream_is_asynchronous);
    tcase_add_test(tc, work_runs_in_order);
    tcase_add_test(tc, legacy_stream_waits_for_blocking_streams);
    tcase_add_test(tc, blocking_stream_waits_for_legacy_stream);
    tcase_add_test(tc, non_blocking_stream_ignores_legacy_stream);
    tcase_add_test(tc, wait_event_orders_streams);
    tcase_add_test(tc, event_records_only_in_its_context);
    tcase_add_test(tc, destroyed_stream_finishes_its_work);
    tcase_add_test(tc, host_function_runs_in_order);
    tcase_add_test(tc, host_function_with_a_sync_mode_runs_in_order);
    tcase_add_test(tc, stream_callback_runs_in_order);
    tcase_add_test(tc, attach_managed_memory);
    tcase_add_test(tc, bad_stream_arguments);
    suite_add_tcase(s, tc);
    return s;
}
