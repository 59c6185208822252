/* Conformance: two devices. Peer copies between their memory, a stream on
 * one waiting for an event of the other, a context-less kernel launched on
 * the other device's stream, a multi-device cooperative launch and
 * (fakecuda only) the stand-in
 * for a collective: a kernel on device 0 that waits for its peer on device
 * 1 with no stream dependency between them, as an NCCL all-reduce does,
 * and what a device sync does while the peer has not been launched (on a
 * GPU it would hang; here it times out and says so). Every test needs two
 * devices and returns at once with fewer: multi_device.sh runs the suite
 * with FAKECUDA_DEVICES=2. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/unit/driver/common.h"
#include "tests/unit/driver/kernels_ptx.h"

static CUcontext ctx[2];
static int ndev;
static struct test_kernels k;

static void setup(void)
{
    driver_setup();
    CU_OK(cuDeviceGetCount(&ndev));
    if (ndev < 2)
        return;
    ctx[0] = test_ctx;
    CU_OK(cuDevicePrimaryCtxRetain(&ctx[1], 1));
    kernels_load(&k);
}

static void teardown(void)
{
    if (ndev >= 2) {
        CU_OK(cuCtxSetCurrent(ctx[1]));
        CU_OK(cuCtxSynchronize());
        CU_OK(cuCtxSetCurrent(ctx[0]));
        CU_OK(cuDevicePrimaryCtxRelease(1));
    }
    driver_teardown();
}

START_TEST(peer_copies_between_devices)
{
    if (ndev < 2)
        return;
    size_t n = 256 * 1024;
    unsigned char *pat = malloc(n), *back = malloc(n);
    for (size_t i = 0; i < n; i++)
        pat[i] = (unsigned char)(i * 13);
    CUdeviceptr a, b;
    CU_OK(cuMemAlloc(&a, n)); /* device 0 */
    CU_OK(cuCtxSetCurrent(ctx[1]));
    CU_OK(cuMemAlloc(&b, n)); /* device 1 */
    int dev = -1;
    CU_OK(cuPointerGetAttribute(&dev, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, b));
    ck_assert_int_eq(dev, 1);
    CU_OK(cuCtxSetCurrent(ctx[0]));
    CU_OK(cuMemcpyHtoD(a, pat, n));
    CU_OK(cuMemcpyPeer(b, ctx[1], a, ctx[0], n));
    memset(back, 0, n);
    CU_OK(cuMemcpyDtoH(back, b, n)); /* unified addressing: from any context */
    ck_assert_mem_eq(back, pat, n);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuMemsetD8(a, 0, n));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuMemcpyPeerAsync(a, ctx[0], b, ctx[1], n, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemcpyDtoH(back, a, n));
    ck_assert_mem_eq(back, pat, n);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(a));
    CU_OK(cuCtxSetCurrent(ctx[1]));
    CU_OK(cuMemFree(b));
    CU_OK(cuCtxSetCurrent(ctx[0]));
    free(pat);
    free(back);
}
END_TEST

/* A stream of device 1 waits for an event recorded on device 0. */
START_TEST(a_stream_waits_for_another_devices_event)
{
    if (ndev < 2)
        return;
    struct flag f;
    flag_new(&f);
    CUstream s0, s1;
    CUevent e0, e1;
    CU_OK(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING));
    CU_OK(cuEventCreate(&e0, CU_EVENT_DISABLE_TIMING));
    stream_block(&k, &f, s0);
    CU_OK(cuEventRecord(e0, s0));
    CU_OK(cuCtxSetCurrent(ctx[1]));
    CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CU_OK(cuEventCreate(&e1, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuStreamWaitEvent(s1, e0, 0));
    CU_OK(cuEventRecord(e1, s1));
    expect_event_pending(e1);
    flag_release(&f);
    CU_OK(cuEventSynchronize(e1));
    CU_OK(cuStreamDestroy(s1));
    CU_OK(cuEventDestroy(e1));
    CU_OK(cuCtxSetCurrent(ctx[0]));
    CU_OK(cuStreamDestroy(s0));
    CU_OK(cuEventDestroy(e0));
}
END_TEST

/* "The context to launch the kernel on will either be taken from the
 * specified stream hStream or the current context in case of NULL stream":
 * a context-less kernel (CUkernel) on a stream of device 1 runs there while
 * device 0's context is current (what spillway gates and counts a launch
 * by). */
START_TEST(a_context_less_kernel_runs_in_its_streams_context)
{
    if (ndev < 2)
        return;
    enum { N = 4096 };
    CU_OK(cuCtxSetCurrent(ctx[1]));
    CUstream s1;
    CUdeviceptr p1;
    CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CU_OK(cuMemAlloc(&p1, N * sizeof(unsigned)));
    CU_OK(cuCtxSetCurrent(ctx[0]));
    CUdevice d = -1;
    CU_OK(cuStreamGetDevice(s1, &d));
    ck_assert_int_eq(d, 1);
    CUlibrary lib;
    CUkernel kern;
    CU_OK(cuLibraryLoadData(&lib, kernels_ptx, NULL, NULL, 0, NULL, NULL, 0));
    CU_OK(cuLibraryGetKernel(&kern, lib, "fill_u32"));
    CU_OK(launch_u32((CUfunction)kern, p1, 0x5eed, N, s1));
    CU_OK(cuStreamSynchronize(s1));
    expect_u32(p1, 0x5eed, N);
    CU_OK(cuStreamDestroy(s1));
    CU_OK(cuMemFree(p1));
    CU_OK(cuLibraryUnload(lib));
}
END_TEST

/* cuLaunchCooperativeKernelMultiDevice on both devices, a context-less
 * kernel on a stream of each: by default no kernel begins before the prior
 * work of every stream named is done, and no later work of any of them
 * before every kernel is; with both NO_*_SYNC flags each stream waits for
 * itself only. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static void multi_device_launch(unsigned flags)
{
    int can = 0;
    CU_OK(cuDeviceGetAttribute(&can, CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH, 0));
    if (ndev < 2 || !can)
        return;
    enum { N = 4096 };
    CUlibrary lib;
    CUkernel kern;
    CU_OK(cuLibraryLoadData(&lib, kernels_ptx, NULL, NULL, 0, NULL, NULL, 0));
    CU_OK(cuLibraryGetKernel(&kern, lib, "fill_u32"));
    CUstream s[2];
    CUdeviceptr p[2];
    for (int d = 0; d < 2; d++) {
        CU_OK(cuCtxSetCurrent(ctx[d]));
        CU_OK(cuStreamCreate(&s[d], CU_STREAM_NON_BLOCKING));
        CU_OK(cuMemAlloc(&p[d], N * sizeof(unsigned)));
        CU_OK(cuMemsetD32(p[d], 0, N));
        CU_OK(cuCtxSynchronize()); /* a set may return before it is done */
    }
    CU_OK(cuCtxSetCurrent(ctx[0]));
    struct flag f;
    flag_new(&f);
    stream_block(&k, &f, s[0]); /* device 0's stream busy */
    unsigned v = 0x77;
    unsigned long long n = N;
    void *args[2][3] = {{&p[0], &v, &n}, {&p[1], &v, &n}};
    CUDA_LAUNCH_PARAMS l[2];
    for (int d = 0; d < 2; d++)
        l[d] = (CUDA_LAUNCH_PARAMS){.function = (CUfunction)kern, .gridDimX = 4, .gridDimY = 1,
                                    .gridDimZ = 1, .blockDimX = 64, .blockDimY = 1, .blockDimZ = 1,
                                    .hStream = s[d], .kernelParams = args[d]};
    CU_OK(cuLaunchCooperativeKernelMultiDevice(l, 2, flags));
    CU_OK(cuCtxSetCurrent(ctx[1]));
    if (flags)
        CU_OK(cuStreamSynchronize(s[1])); /* device 1's kernel ran while device 0 waits */
    else
        expect_stream_pending(s[1]); /* it waits for device 0's stream */
    CU_OK(cuCtxSetCurrent(ctx[0]));
    flag_release(&f);
    for (int d = 0; d < 2; d++) {
        CU_OK(cuCtxSetCurrent(ctx[d]));
        CU_OK(cuStreamSynchronize(s[d]));
        expect_u32(p[d], 0x77, N);
        CU_OK(cuStreamDestroy(s[d]));
        CU_OK(cuMemFree(p[d]));
    }
    CU_OK(cuCtxSetCurrent(ctx[0]));
    CU_OK(cuLibraryUnload(lib));
}
#pragma GCC diagnostic pop

START_TEST(a_multi_device_launch_waits_for_every_stream) { multi_device_launch(0); }
END_TEST

START_TEST(a_multi_device_launch_without_syncs_waits_for_its_own_stream)
{
    multi_device_launch(CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_PRE_LAUNCH_SYNC |
                        CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_POST_LAUNCH_SYNC);
}
END_TEST

/* The collective's launch: (key, nranks, status) on stream s. */
static CUresult collective(CUfunction fn, unsigned long long key, unsigned nranks, CUdeviceptr status,
                           CUstream s)
{
    void *args[] = {&key, &nranks, &status};
    return cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
}

static unsigned read_status(CUdeviceptr st)
{
    unsigned v = 0;
    CU_OK(cuMemcpyDtoH(&v, st, sizeof v));
    return v;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* fakecuda only: both halves run, in either order of launch. */
/* The driver may give a destroyed stream's memory, its handle, to the
 * next stream made (fakecuda_reuse_streams makes fakecuda do so): the
 * handle then names the new stream, of the new context and device, and an
 * event of the old stream's work stays complete. */
START_TEST(a_stream_made_after_a_destroy_is_its_own_contexts)
{
    if (ndev < 2)
        return;
    CUstream s0, s1;
    CUevent e0;
    CUcontext c;
    CUdevice d;
    CU_OK(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING));
    CU_OK(cuEventCreate(&e0, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuEventRecord(e0, s0));
    CU_OK(cuStreamSynchronize(s0));
    CU_OK(cuStreamDestroy(s0));
    if (fakecuda_present())
        ck_assert_int_eq(fakecuda_reuse_streams(1), 0);
    CU_OK(cuCtxSetCurrent(ctx[1]));
    CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    if (fakecuda_present()) {
        ck_assert_int_eq(fakecuda_reuse_streams(0), 0);
        ck_assert_ptr_eq(s1, s0);
    }
    CU_OK(cuCtxSetCurrent(ctx[0]));
    CU_OK(cuStreamGetCtx(s1, &c));
    ck_assert_ptr_eq(c, ctx[1]);
    CU_OK(cuStreamGetDevice(s1, &d));
    ck_assert_int_eq(d, 1);
    ck_assert_int_eq(cuEventQuery(e0), CUDA_SUCCESS);
    CU_OK(cuStreamSynchronize(s1));
    CU_OK(cuStreamDestroy(s1));
    CU_OK(cuEventDestroy(e0));
}
END_TEST

START_TEST(collective_halves_meet)
{
    if (ndev < 2 || !fakecuda_present())
        return;
    ck_assert_int_eq(fakecuda_register_collective("allreduce"), 0);
    CUfunction fn;
    CU_OK(cuModuleGetFunction(&fn, k.module, "allreduce"));
    size_t info = 99, size = 0;
    CU_OK(cuFuncGetParamInfo(fn, 2, &info, &size));
    ck_assert(info == 16 && size == 8);
    CUdeviceptr st[2];
    CUstream s[2];
    for (int d = 0; d < 2; d++) {
        CU_OK(cuCtxSetCurrent(ctx[d]));
        CU_OK(cuMemAlloc(&st[d], sizeof(unsigned)));
        CU_OK(cuMemsetD32(st[d], 0, 1));
        CU_OK(cuStreamCreate(&s[d], CU_STREAM_NON_BLOCKING));
    }
    unsigned long long timeouts = fakecuda_collective_timeouts();
    for (int round = 0; round < 2; round++) { /* the key serves again */
        int first = round, second = 1 - round;
        CU_OK(cuCtxSetCurrent(ctx[first]));
        CU_OK(collective(fn, 77, 2, st[first], s[first]));
        expect_stream_pending(s[first]); /* waits for its peer */
        CU_OK(cuCtxSetCurrent(ctx[second]));
        CU_OK(collective(fn, 77, 2, st[second], s[second]));
        for (int d = 0; d < 2; d++) {
            CU_OK(cuStreamSynchronize(s[d]));
            ck_assert_uint_eq(read_status(st[d]), FAKECUDA_COLLECTIVE_DONE);
        }
    }
    ck_assert_uint_eq(fakecuda_collective_timeouts(), timeouts);
    for (int d = 0; d < 2; d++) {
        CU_OK(cuCtxSetCurrent(ctx[d]));
        CU_OK(cuStreamDestroy(s[d]));
        CU_OK(cuMemFree(st[d]));
    }
    CU_OK(cuCtxSetCurrent(ctx[0]));
}
END_TEST

/* fakecuda only: the deadlock a collective makes of a device sync. The
 * thread launches its half on device 0, then synchronizes device 0 before
 * launching the half on device 1: on a GPU the sync never returns. Here it
 * returns after the timeout, with the half marked timed out, and the
 * timeout counted: what a test of that deadlock looks for. */
START_TEST(a_device_sync_waits_for_a_peer_never_launched)
{
    if (ndev < 2 || !fakecuda_present())
        return;
    ck_assert_int_eq(fakecuda_register_collective("allreduce"), 0);
    unsigned was = fakecuda_collective_timeout_ms(300);
    CUfunction fn;
    CU_OK(cuModuleGetFunction(&fn, k.module, "allreduce"));
    CUdeviceptr st;
    CU_OK(cuMemAlloc(&st, sizeof(unsigned)));
    CU_OK(cuMemsetD32(st, 0, 1));
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    unsigned long long timeouts = fakecuda_collective_timeouts();
    CU_OK(collective(fn, 78, 2, st, s));
    double t0 = now();
    CU_OK(cuCtxSynchronize()); /* the peer on device 1 was never launched */
    double waited = now() - t0;
    ck_assert_msg(waited > 0.25, "the sync returned after %.3f s", waited);
    ck_assert_uint_eq(read_status(st), FAKECUDA_COLLECTIVE_TIMED_OUT);
    ck_assert_uint_eq(fakecuda_collective_timeouts(), timeouts + 1);
    ck_assert_uint_eq(fakecuda_collective_timeout_ms(was), 300);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(st));
}
END_TEST

/* cuMemGetAccess answers for the location asked: a device that
 * cuMemSetAccess did not name has no access, whatever another has. */
START_TEST(get_access_answers_for_the_location_asked)
{
    if (ndev < 2)
        return;
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    size_t g = 0;
    CU_OK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUdeviceptr va;
    CUmemGenericAllocationHandle h;
    CU_OK(cuMemAddressReserve(&va, g, 0, 0, 0));
    CU_OK(cuMemCreate(&h, g, &prop, 0));
    CU_OK(cuMemMap(va, g, 0, h, 0));
    CUmemLocation dev0 = {CU_MEM_LOCATION_TYPE_DEVICE, 0}, dev1 = {CU_MEM_LOCATION_TYPE_DEVICE, 1};
    CUmemAccessDesc rw = {dev0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CU_OK(cuMemSetAccess(va, g, &rw, 1));
    unsigned long long flags = 99;
    CU_OK(cuMemGetAccess(&flags, &dev0, va));
    ck_assert_uint_eq(flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    CU_OK(cuMemGetAccess(&flags, &dev1, va));
    ck_assert_uint_eq(flags, CU_MEM_ACCESS_FLAGS_PROT_NONE);
    CUmemAccessDesc both[2] = {{dev0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE},
                               {dev1, CU_MEM_ACCESS_FLAGS_PROT_READWRITE}};
    CU_OK(cuMemSetAccess(va, g, both, 2));
    CU_OK(cuMemGetAccess(&flags, &dev1, va + g - 1));
    ck_assert_uint_eq(flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    CU_OK(cuMemUnmap(va, g));
    CU_OK(cuMemRelease(h));
    CU_OK(cuMemAddressFree(va, g));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("driver_multidevice");
    TCase *tc = tcase_create("multidevice");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, peer_copies_between_devices);
    tcase_add_test(tc, a_stream_waits_for_another_devices_event);
    tcase_add_test(tc, a_context_less_kernel_runs_in_its_streams_context);
    tcase_add_test(tc, a_stream_made_after_a_destroy_is_its_own_contexts);
    tcase_add_test(tc, collective_halves_meet);
    tcase_add_test(tc, a_device_sync_waits_for_a_peer_never_launched);
    tcase_add_test(tc, get_access_answers_for_the_location_asked);
    tcase_add_test(tc, a_multi_device_launch_waits_for_every_stream);
    tcase_add_test(tc, a_multi_device_launch_without_syncs_waits_for_its_own_stream);
    suite_add_tcase(s, tc);
    return s;
}
