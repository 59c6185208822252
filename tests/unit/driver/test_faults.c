/* Conformance: fakecuda's fault injection (tests/fakecuda/fault.c), the
 * mechanism the fault test (tests/integration/faults) stands on. An injected
 * fault must fail exactly the call it names, with the error asked for, and
 * leave no trace: what a failed call of the real driver promises. A fault
 * test built on a mechanism with side effects would blame spillway for
 * fakecuda's doing.
 *
 * On the real driver the fakecuda_* symbols are NULL and every test here
 * returns at once: there is nothing to inject into. */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/driver/common.h"

static int injectable(void)
{
    return fakecuda_fault_config != NULL && fakecuda_calls != NULL;
}

static void inject(const char *fail)
{
    ck_assert_int_eq(fakecuda_fault_config(fail, NULL, 0), 0);
}

static void no_faults(void)
{
    ck_assert_int_eq(fakecuda_fault_config(NULL, NULL, 0), 0);
}

/* A reservation of 4 pages with one handle mapped (read-write) at its start. */
struct vmm {
    CUdeviceptr va;
    CUmemGenericAllocationHandle h;
};

static void vmm_new(struct vmm *v)
{
    CUmemAllocationProp p = prop_device(0);
    CU_OK(cuMemAddressReserve(&v->va, 8 * MiB, 0, 0, 0));
    CU_OK(cuMemCreate(&v->h, 2 * MiB, &p, 0));
    CU_OK(cuMemMap(v->va, 2 * MiB, 0, v->h, 0));
    set_rw(v->va, 2 * MiB);
}

START_TEST(nth_call_fails_once_without_side_effect)
{
    if (!injectable())
        return;
    long long calls0 = fakecuda_calls("cuMemAlloc"), faults0 = fakecuda_faults(NULL);
    inject("cuMemAlloc:2");
    CUdeviceptr a = 0, b = 0xdeadbeef, c = 0;
    CU_OK(cuMemAlloc(&a, MiB));
    size_t used = fakecuda_device_bytes_used(0), live = fakecuda_live_allocations();
    CU_ERR(cuMemAlloc(&b, MiB), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_uint_eq(b, 0xdeadbeef); /* nothing written */
    ck_assert_uint_eq(fakecuda_device_bytes_used(0), used);
    ck_assert_uint_eq(fakecuda_live_allocations(), live);
    CU_OK(cuMemAlloc(&c, MiB));
    ck_assert_int_eq(fakecuda_calls("cuMemAlloc"), calls0 + 3);
    ck_assert_int_eq(fakecuda_faults("cuMemAlloc"), 1);
    ck_assert_int_eq(fakecuda_faults(NULL), faults0 + 1);
    const char *fn = NULL;
    unsigned long long call = 0;
    ck_assert_int_eq(fakecuda_fault_last(&fn, &call), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_str_eq(fn, "cuMemAlloc");
    ck_assert_uint_eq(call, (unsigned long long)calls0 + 2);
    fn = NULL;
    ck_assert_int_eq(fakecuda_fault_nth((unsigned long long)faults0, &fn, &call),
                     CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_str_eq(fn, "cuMemAlloc");
    ck_assert_int_eq(fakecuda_fault_nth((unsigned long long)faults0 + 1, NULL, NULL), 0);
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(c));
    no_faults();
}
END_TEST

/* Each check makes the calls of one function and compares with want, a
 * string of 'x' (fails) and '.' (succeeds), one per call. */
static void expect_pattern(const char *want)
{
    for (size_t i = 0; want[i]; i++) {
        CUdevice d;
        CUresult r = cuCtxGetDevice(&d);
        ck_assert_msg((r != CUDA_SUCCESS) == (want[i] == 'x'), "call %zu of '%s': %d", i + 1,
                      want, (int)r);
        if (r != CUDA_SUCCESS)
            ck_assert_int_eq(r, CUDA_ERROR_INVALID_CONTEXT);
    }
}

START_TEST(ranges_and_lists)
{
    if (!injectable())
        return;
    inject("cuCtxGetDevice:2-3");
    expect_pattern(".xx..");
    inject("cuCtxGetDevice:3-");
    expect_pattern("..xxxx");
    inject("cuCtxGetDevice:1,cuCtxGetDevice:4,cuMemAlloc:1");
    expect_pattern("x..x.");
    no_faults();
    expect_pattern("....");
}
END_TEST

START_TEST(error_by_name_or_number)
{
    if (!injectable())
        return;
    CUmemAllocationProp p = prop_device(0);
    CUmemGenericAllocationHandle h;
    size_t handles = fakecuda_live_handles();
    inject("cuMemCreate:1:CUDA_ERROR_NOT_PERMITTED,cuMemCreate:2:999");
    CU_ERR(cuMemCreate(&h, 2 * MiB, &p, 0), CUDA_ERROR_NOT_PERMITTED);
    CU_ERR(cuMemCreate(&h, 2 * MiB, &p, 0), (CUresult)999);
    ck_assert_uint_eq(fakecuda_live_handles(), handles);
    CU_OK(cuMemCreate(&h, 2 * MiB, &p, 0));
    CU_OK(cuMemRelease(h));
    no_faults();
}
END_TEST

/* Versioned and per-thread symbols are the function they version. */
START_TEST(symbol_names_mean_the_base_function)
{
    if (!injectable())
        return;
    ck_assert_int_eq(fakecuda_calls("cuMemFree_v2"), fakecuda_calls("cuMemFree"));
    ck_assert_int_eq(fakecuda_calls("cuMemcpyDtoDAsync_v2_ptsz"), fakecuda_calls("cuMemcpyDtoDAsync"));
    ck_assert_int_eq(fakecuda_calls("cuNoSuchFunction"), -1);
    ck_assert_int_eq(fakecuda_faults("cuNoSuchFunction"), -1);
    long long before = fakecuda_calls("cuMemcpyHtoD");
    unsigned word = 7;
    CUdeviceptr d;
    CU_OK(cuMemAlloc(&d, 4));
    inject("cuMemcpyHtoD_v2:1");
    CU_ERR(cuMemcpyHtoD(d, &word, 4), CUDA_ERROR_UNKNOWN);
    CU_OK(cuMemcpyHtoD(d, &word, 4));
    ck_assert_int_eq(fakecuda_calls("cuMemcpyHtoD_v2"), before + 2);
    CU_OK(cuMemFree(d));
    no_faults();
}
END_TEST

START_TEST(functions_are_listed)
{
    if (!injectable())
        return;
    int seen_map = 0;
    unsigned n = 0;
    for (const char *f; (f = fakecuda_fault_fn(n)) != NULL; n++) {
        seen_map |= strcmp(f, "cuMemMap") == 0;
        ck_assert_int_ge(fakecuda_calls(f), 0);
    }
    ck_assert(seen_map);
    ck_assert_uint_gt(n, 50);
}
END_TEST

START_TEST(bad_specifications_are_refused)
{
    if (!injectable())
        return;
    static const char *const bad[] = {
        "cuNoSuchFunction:1", "cuMemAlloc", "cuMemAlloc:0", "cuMemAlloc:x", "cuMemAlloc:3-2",
        "cuMemAlloc:1:CUDA_ERROR_NOPE", "cuMemAlloc:1:2:3", ":1", "cuMemAlloc:-",
    };
    inject("cuCtxGetDevice:2");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(fakecuda_fault_config(bad[i], NULL, 0) == -1, "'%s' accepted", bad[i]);
    ck_assert_int_eq(fakecuda_fault_config(NULL, "cuMemAlloc:1.5", 0), -1);
    ck_assert_int_eq(fakecuda_fault_config(NULL, "cuMemAlloc:-0.1", 0), -1);
    ck_assert_int_eq(fakecuda_fault_config(NULL, "nope:0.5", 0), -1);
    expect_pattern(".x."); /* the configuration before the refused ones stays */
    no_faults();
}
END_TEST

START_TEST(vmm_faults_leave_no_trace)
{
    if (!injectable())
        return;
    struct vmm v;
    vmm_new(&v);
    CU_OK(cuMemsetD32(v.va, 0x5a5a5a5a, 2 * MiB / 4));
    size_t maps = fakecuda_live_mappings(), handles = fakecuda_live_handles();
    size_t res = fakecuda_live_reservations(), rbytes = fakecuda_reserved_bytes();
    CUmemAllocationProp p = prop_device(0);
    CUmemGenericAllocationHandle h2;
    CUdeviceptr va2 = 0;
    inject("cuMemUnmap:1,cuMemRelease:1,cuMemMap:1,cuMemAddressFree:1,cuMemAddressReserve:1,"
           "cuMemSetAccess:1,cuMemCreate:1");
    CU_ERR(cuMemUnmap(v.va, 2 * MiB), CUDA_ERROR_UNKNOWN);
    expect_u32(v.va, 0x5a5a5a5a, 2 * MiB / 4); /* still mapped, still readable */
    CU_ERR(cuMemRelease(v.h), CUDA_ERROR_UNKNOWN);
    CU_ERR(cuMemCreate(&h2, 2 * MiB, &p, 0), CUDA_ERROR_OUT_OF_MEMORY);
    CU_ERR(cuMemAddressReserve(&va2, 2 * MiB, 0, 0, 0), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_uint_eq(va2, 0);
    CU_OK(cuMemCreate(&h2, 2 * MiB, &p, 0));
    CU_ERR(cuMemMap(v.va + 2 * MiB, 2 * MiB, 0, h2, 0), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_uint_eq(fakecuda_live_mappings(), maps);
    CU_OK(cuMemMap(v.va + 2 * MiB, 2 * MiB, 0, h2, 0));
    CUmemAccessDesc d = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                         .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CU_ERR(cuMemSetAccess(v.va + 2 * MiB, 2 * MiB, &d, 1), CUDA_ERROR_UNKNOWN);
    ck_assert_uint_eq(fakecuda_access_devices(v.va + 2 * MiB), 0);
    CU_OK(cuMemUnmap(v.va + 2 * MiB, 2 * MiB));
    CU_OK(cuMemRelease(h2));
    ck_assert_uint_eq(fakecuda_live_mappings(), maps);
    ck_assert_uint_eq(fakecuda_live_handles(), handles);
    CU_OK(cuMemUnmap(v.va, 2 * MiB));
    CU_OK(cuMemRelease(v.h));
    CU_ERR(cuMemAddressFree(v.va, 8 * MiB), CUDA_ERROR_UNKNOWN);
    ck_assert_uint_eq(fakecuda_live_reservations(), res);
    ck_assert_uint_eq(fakecuda_reserved_bytes(), rbytes);
    CU_OK(cuMemAddressFree(v.va, 8 * MiB));
    ck_assert_uint_eq(fakecuda_live_reservations(), res - 1);
    no_faults();
}
END_TEST

START_TEST(copy_and_set_faults_write_nothing)
{
    if (!injectable())
        return;
    CUdeviceptr d, e;
    CU_OK(cuMemAlloc(&d, MiB));
    CU_OK(cuMemAlloc(&e, MiB));
    CU_OK(cuMemsetD32(d, 1, MiB / 4));
    CU_OK(cuMemsetD32(e, 2, MiB / 4));
    static unsigned src[MiB / 4];
    for (size_t i = 0; i < MiB / 4; i++)
        src[i] = 3;
    inject("cuMemcpyHtoD:1,cuMemcpyDtoDAsync:1,cuMemsetD32:1,cuMemcpyDtoH:1");
    CU_ERR(cuMemcpyHtoD(d, src, MiB), CUDA_ERROR_UNKNOWN);
    CU_ERR(cuMemcpyDtoDAsync(d, e, MiB, NULL), CUDA_ERROR_UNKNOWN);
    CU_ERR(cuMemsetD32(d, 4, MiB / 4), CUDA_ERROR_UNKNOWN);
    CU_ERR(cuMemcpyDtoH(src, d, MiB), CUDA_ERROR_UNKNOWN);
    ck_assert_uint_eq(src[0], 3);
    expect_u32(d, 1, MiB / 4);
    CU_OK(cuMemFree(d));
    CU_OK(cuMemFree(e));
    no_faults();
}
END_TEST

START_TEST(event_and_stream_faults_leave_no_trace)
{
    if (!injectable())
        return;
    CUevent ev = NULL;
    CUstream s = NULL;
    size_t events = fakecuda_live_events(), streams = fakecuda_live_streams();
    inject("cuEventCreate:1,cuStreamCreate:1,cuEventDestroy:1,cuStreamDestroy:1,"
           "cuEventRecord:1,cuEventQuery:1:CUDA_ERROR_NOT_READY,cuStreamSynchronize:1,"
           "cuCtxSynchronize:1,cuEventSynchronize:1");
    CU_ERR(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING), CUDA_ERROR_OUT_OF_MEMORY);
    CU_ERR(cuStreamCreate(&s, 0), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_ptr_null(ev);
    ck_assert_ptr_null(s);
    ck_assert_uint_eq(fakecuda_live_events(), events);
    ck_assert_uint_eq(fakecuda_live_streams(), streams);
    CU_OK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuStreamCreate(&s, 0));
    CU_ERR(cuEventRecord(ev, s), CUDA_ERROR_UNKNOWN);
    CU_OK(cuEventRecord(ev, s));
    CU_ERR(cuStreamSynchronize(s), CUDA_ERROR_UNKNOWN);
    CU_OK(cuStreamSynchronize(s));
    CU_ERR(cuEventQuery(ev), CUDA_ERROR_NOT_READY); /* the error asked for, even when done */
    CU_OK(cuEventQuery(ev));
    CU_ERR(cuEventSynchronize(ev), CUDA_ERROR_UNKNOWN);
    CU_ERR(cuCtxSynchronize(), CUDA_ERROR_UNKNOWN);
    CU_ERR(cuEventDestroy(ev), CUDA_ERROR_UNKNOWN);
    CU_ERR(cuStreamDestroy(s), CUDA_ERROR_UNKNOWN);
    ck_assert_uint_eq(fakecuda_live_events(), events + 1);
    ck_assert_uint_eq(fakecuda_live_streams(), streams + 1);
    CU_OK(cuEventDestroy(ev));
    CU_OK(cuStreamDestroy(s));
    ck_assert_uint_eq(fakecuda_live_events(), events);
    ck_assert_uint_eq(fakecuda_live_streams(), streams);
    no_faults();
}
END_TEST

START_TEST(context_stack_faults_leave_it_alone)
{
    if (!injectable())
        return;
    int depth = fakecuda_ctx_depth();
    void *top = fakecuda_ctx_current();
    CUcontext c = NULL;
    inject("cuCtxPushCurrent:1,cuCtxPopCurrent:1,cuCtxGetCurrent:1,cuCtxSetCurrent:1");
    CU_ERR(cuCtxPushCurrent(test_ctx), CUDA_ERROR_INVALID_CONTEXT);
    ck_assert_int_eq(fakecuda_ctx_depth(), depth);
    CU_ERR(cuCtxGetCurrent(&c), CUDA_ERROR_NOT_INITIALIZED);
    ck_assert_ptr_null(c);
    CU_OK(cuCtxPushCurrent(test_ctx));
    ck_assert_int_eq(fakecuda_ctx_depth(), depth + 1);
    CU_ERR(cuCtxPopCurrent(&c), CUDA_ERROR_INVALID_CONTEXT);
    ck_assert_int_eq(fakecuda_ctx_depth(), depth + 1);
    CU_OK(cuCtxPopCurrent(&c));
    ck_assert_int_eq(fakecuda_ctx_depth(), depth);
    CU_ERR(cuCtxSetCurrent(NULL), CUDA_ERROR_INVALID_CONTEXT);
    ck_assert_ptr_eq(fakecuda_ctx_current(), top);
    no_faults();
}
END_TEST

/* The entry points of capture, graphs, libraries and 2D copies fail like the
 * others: listed, with their default error, and nothing done. */
START_TEST(capture_graph_and_copy_faults_leave_no_trace)
{
    if (!injectable() || !fakecuda_live_graphs)
        return;
    static const char *const listed[] = {"cuStreamBeginCapture", "cuStreamEndCapture", "cuGraphLaunch",
                                         "cuGraphInstantiate", "cuLibraryGetKernel", "cuMemcpy3D",
                                         "cuMemsetD2D32Async", "cuMemcpyBatchAsync"};
    for (size_t i = 0; i < sizeof listed / sizeof listed[0]; i++)
        ck_assert_msg(fakecuda_calls(listed[i]) >= 0, "%s cannot be made to fail", listed[i]);
    struct test_kernels k;
    kernels_load(&k);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 4096));
    CU_OK(cuMemsetD32(p, 1, 1024));
    size_t graphs = fakecuda_live_graphs(), execs = fakecuda_live_graph_execs();
    inject("cuStreamBeginCapture:1,cuGraphCreate:1,cuGraphInstantiate:1,cuGraphLaunch:1,"
           "cuMemcpy2D:1,cuLibraryLoadData:1");
    CU_ERR(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_OUT_OF_MEMORY);
    CUstreamCaptureStatus st;
    CU_OK(cuStreamIsCapturing(s, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_NONE);
    CUgraph g = NULL;
    CU_ERR(cuGraphCreate(&g, 0), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_ptr_null(g);
    ck_assert_uint_eq(fakecuda_live_graphs(), graphs);
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(launch_u32(k.fill_u32, p, 5, 1024, s));
    CU_OK(cuStreamEndCapture(s, &g));
    CUgraphExec x = NULL;
    CU_ERR(cuGraphInstantiate(&x, g, 0), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_ptr_null(x);
    ck_assert_uint_eq(fakecuda_live_graph_execs(), execs);
    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_ERR(cuGraphLaunch(x, s), CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
    CU_OK(cuStreamSynchronize(s));
    expect_u32(p, 1, 1024); /* nothing ran */
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    expect_u32(p, 5, 1024);
    unsigned host[4] = {9, 9, 9, 9};
    CUDA_MEMCPY2D c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = p;
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = host;
    c.WidthInBytes = sizeof host;
    c.Height = 1;
    CU_ERR(cuMemcpy2D(&c), CUDA_ERROR_UNKNOWN);
    ck_assert_uint_eq(host[0], 9);
    CU_OK(cuMemcpy2D(&c));
    ck_assert_uint_eq(host[0], 5);
    CUlibrary lib = NULL;
    CU_ERR(cuLibraryLoadData(&lib, "", NULL, NULL, 0, NULL, NULL, 0), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_ptr_null(lib);
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(g));
    ck_assert_uint_eq(fakecuda_live_graphs(), graphs);
    ck_assert_uint_eq(fakecuda_live_graph_execs(), execs);
    CU_OK(cuMemFree(p));
    CU_OK(cuStreamDestroy(s));
    no_faults();
}
END_TEST

/* 256 calls of cuCtxGetDevice under a rate, as a string of x and '.'. */
static void rate_pattern(const char *rate, unsigned long long seed, char out[257])
{
    ck_assert_int_eq(fakecuda_fault_config(NULL, rate, seed), 0);
    for (int i = 0; i < 256; i++) {
        CUdevice d;
        out[i] = cuCtxGetDevice(&d) == CUDA_SUCCESS ? '.' : 'x';
    }
    out[256] = '\0';
    no_faults();
}

START_TEST(rate_is_deterministic_by_seed)
{
    if (!injectable())
        return;
    char a[257], b[257], c[257];
    rate_pattern("cuCtxGetDevice:0.5", 7, a);
    rate_pattern("cuCtxGetDevice:0.5", 7, b);
    rate_pattern("cuCtxGetDevice_ptsz:0.5", 8, c);
    ck_assert_str_eq(a, b);
    ck_assert(strcmp(a, c) != 0);
    size_t fails = 0;
    for (int i = 0; i < 256; i++)
        fails += a[i] == 'x';
    ck_assert_uint_gt(fails, 80);
    ck_assert_uint_lt(fails, 176);
    rate_pattern("*:0", 7, a);
    ck_assert_ptr_null(strchr(a, 'x'));
    rate_pattern("*:1:CUDA_ERROR_INVALID_CONTEXT", 7, a);
    ck_assert_ptr_null(strchr(a, '.'));
}
END_TEST

/* ---- the unmap hazard check ------------------------------------------- */

/* What the child queues on the held-back stream: a set, a graph's set
 * node, or a batch copy
 * (cuMemcpyBatchAsync: asynchronous like any copy, "the copies may be
 * performed in any order" once the stream reaches it). */
enum hazard_way { UNDER_SET, UNDER_BATCH, UNDER_GRAPH_SET };

static void queue_on(enum hazard_way way, CUstream s, CUdeviceptr va)
{
    if (way == UNDER_GRAPH_SET) {
        CUgraph g;
        CU_OK(cuGraphCreate(&g, 0));
        CUDA_MEMSET_NODE_PARAMS p = {.dst = va, .value = 7, .elementSize = 4,
                                     .width = 2 * MiB / 4, .height = 1};
        CUcontext ctx;
        CU_OK(cuCtxGetCurrent(&ctx));
        CUgraphNode n;
        CU_OK(cuGraphAddMemsetNode(&n, g, NULL, 0, &p, ctx));
        CUgraphExec x;
        CU_OK(cuGraphInstantiateWithFlags(&x, g, 0));
        CU_OK(cuGraphLaunch(x, s));
        return;
    }
    if (way == UNDER_SET) {
        CU_OK(cuMemsetD32Async(va, 7, 2 * MiB / 4, s));
        return;
    }
    static uint32_t src[1024];
    CUdeviceptr dsts[] = {va + 4096}, srcs[] = {(CUdeviceptr)(uintptr_t)src};
    size_t sizes[] = {sizeof src}, idx = 0;
    CUmemcpyAttributes at = {.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM};
    CU_OK(cuMemcpyBatchAsync(dsts, srcs, sizes, 1, &at, &idx, 1, s));
}

/* Copies into a mapped VMM page on a stream held back by a kernel, then
 * unmaps the page with the copy still queued: with the check on, the
 * process must stop (SIGABRT) — in a child, so that the test survives. */
static void unmap_under_copy(enum hazard_way way)
{
    driver_setup(); /* the child's own driver: a forked one has none */
    struct test_kernels k;
    kernels_load(&k);
    struct vmm v;
    vmm_new(&v);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    struct flag f;
    flag_new(&f);
    stream_block(&k, &f, s);
    fakecuda_check_unmap(1);
    queue_on(way, s, v.va);
    cuMemUnmap(v.va, 2 * MiB);
    _exit(0); /* not reached when the hazard is caught */
}

static void hazard_caught(enum hazard_way way)
{
    if (!injectable() || !fakecuda_check_unmap)
        return;
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        fclose(stderr); /* the child's HAZARD line is expected */
        unmap_under_copy(way);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, "child status %#x", status);
}

/* No fixture: the driver is initialized in the child only. */
START_TEST(unmap_hazard_is_caught) { hazard_caught(UNDER_SET); }
END_TEST
START_TEST(unmap_hazard_under_a_batch_copy_is_caught) { hazard_caught(UNDER_BATCH); }
END_TEST
/* A graph's copies and sets are copies and sets on the GPU too. */
START_TEST(unmap_hazard_under_a_graph_set_is_caught) { hazard_caught(UNDER_GRAPH_SET); }
END_TEST

/* The same sequence with the host waiting for the set: no hazard. */
START_TEST(unmap_after_a_wait_is_fine)
{
    if (!injectable() || !fakecuda_check_unmap)
        return;
    int was = fakecuda_check_unmap(1);
    struct vmm v;
    vmm_new(&v);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuMemsetD32Async(v.va, 7, 2 * MiB / 4, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemUnmap(v.va, 2 * MiB));
    CU_OK(cuMemRelease(v.h));
    CU_OK(cuMemAddressFree(v.va, 8 * MiB));
    CU_OK(cuStreamDestroy(s));
    fakecuda_check_unmap(was);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("driver_faults");
    TCase *tc = tcase_create("faults");
    tcase_add_checked_fixture(tc, driver_setup, driver_teardown);
    tcase_add_test(tc, nth_call_fails_once_without_side_effect);
    tcase_add_test(tc, ranges_and_lists);
    tcase_add_test(tc, error_by_name_or_number);
    tcase_add_test(tc, symbol_names_mean_the_base_function);
    tcase_add_test(tc, functions_are_listed);
    tcase_add_test(tc, bad_specifications_are_refused);
    tcase_add_test(tc, vmm_faults_leave_no_trace);
    tcase_add_test(tc, copy_and_set_faults_write_nothing);
    tcase_add_test(tc, event_and_stream_faults_leave_no_trace);
    tcase_add_test(tc, context_stack_faults_leave_it_alone);
    tcase_add_test(tc, capture_graph_and_copy_faults_leave_no_trace);
    tcase_add_test(tc, rate_is_deterministic_by_seed);
    tcase_add_test(tc, unmap_after_a_wait_is_fine);
    suite_add_tcase(s, tc);
    tc = tcase_create("hazard");
    tcase_add_test(tc, unmap_hazard_is_caught);
    tcase_add_test(tc, unmap_hazard_under_a_batch_copy_is_caught);
    tcase_add_test(tc, unmap_hazard_under_a_graph_set_is_caught);
    suite_add_tcase(s, tc);
    return s;
}
