/* Every launch reaches spillway's work gate, and the stats say so: each
 * launch API (cuLaunchKernel, its _ptsz variant, cuLaunchKernelEx,
 * cuLaunchCooperativeKernel, cuGraphLaunch, CUDA 2.0's cuLaunch,
 * cuLaunchGrid and cuLaunchGridAsync, and CUDA 9.0's
 * cuLaunchCooperativeKernelMultiDevice, one launch per device it names),
 * reached by each path programs
 * use (linked, dlsym, cuGetProcAddress as the runtime does), moves the
 * segment's launches or graph_launches by exactly the number the driver
 * accepted, on the device of the stream's context (for the NULL stream,
 * the current one), from any number of threads.
 * A launch that reached the driver past the hooks would leave the count
 * short: the GPU check's launch rows (issue 10) rely on that. Run by
 * launches.sh, with spill off and on. */
#include "tests/integration/shim/driver_api.h"
#include "tests/integration/shim/rig.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static const char *const path_names[] = {"linked", "dlsym", "cuGetProcAddress"};

/* CUDA 2.0's launch API is deprecated; programs may still use it, so it
 * is tested like the others. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

enum api {
    KERNEL, KERNEL_PTSZ, KERNEL_EX, COOPERATIVE, GRAPH, LEGACY, LEGACY_GRID, LEGACY_GRID_ASYNC,
    MULTI_DEVICE, APIS
};
static const struct {
    const char *base, *symbol; /* what cuGetProcAddress is asked, what dlsym is */
    int per_thread;
} apis[] = {
    [KERNEL] = {"cuLaunchKernel", "cuLaunchKernel", 0},
    [KERNEL_PTSZ] = {"cuLaunchKernel", "cuLaunchKernel_ptsz", 1},
    [KERNEL_EX] = {"cuLaunchKernelEx", "cuLaunchKernelEx", 0},
    [COOPERATIVE] = {"cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel", 0},
    [GRAPH] = {"cuGraphLaunch", "cuGraphLaunch", 0},
    [LEGACY] = {"cuLaunch", "cuLaunch", 0},
    [LEGACY_GRID] = {"cuLaunchGrid", "cuLaunchGrid", 0},
    [LEGACY_GRID_ASYNC] = {"cuLaunchGridAsync", "cuLaunchGridAsync", 0},
    [MULTI_DEVICE] = {"cuLaunchCooperativeKernelMultiDevice", "cuLaunchCooperativeKernelMultiDevice", 0},
};

/* The function a program reaching the driver by path gets for api. */
static void *resolve(enum spw_path path, enum api a)
{
    if (path != SPW_PATH_LINKED)
        return spw_driver_api_find(path, apis[a].base, apis[a].symbol, apis[a].per_thread);
    /* What a program linked with -lcuda calls; the _ptsz variant only a
     * per-thread build names, as dlsym finds it. */
    void *const linked[] = {[KERNEL] = (void *)&cuLaunchKernel,
                            [KERNEL_PTSZ] = dlsym(RTLD_DEFAULT, "cuLaunchKernel_ptsz"),
                            [KERNEL_EX] = (void *)&cuLaunchKernelEx,
                            [COOPERATIVE] = (void *)&cuLaunchCooperativeKernel,
                            [GRAPH] = (void *)&cuGraphLaunch,
                            [LEGACY] = (void *)&cuLaunch,
                            [LEGACY_GRID] = (void *)&cuLaunchGrid,
                            [LEGACY_GRID_ASYNC] = (void *)&cuLaunchGridAsync,
                            [MULTI_DEVICE] = (void *)&cuLaunchCooperativeKernelMultiDevice};
    return linked[a];
}

#define WORDS 64
#define BYTES (WORDS * sizeof(uint32_t))

/* step_u32(p, WORDS, k) as the legacy launches take it: state of f. */
static void legacy_arguments(CUfunction f, CUdeviceptr p, unsigned k)
{
    size_t n = WORDS, at = 0;
    CU_OK(cuFuncSetBlockShape(f, 1, 1, 1));
    CU_OK(cuParamSetv(f, (int)at, &p, sizeof p));
    at += sizeof p;
    CU_OK(cuParamSetv(f, (int)at, &n, sizeof n));
    at += sizeof n;
    CU_OK(cuParamSeti(f, (int)at, k));
    CU_OK(cuParamSetSize(f, (unsigned)(at + sizeof k)));
}

/* One launch of step_u32(p, WORDS, k) on stream s through api's function
 * fn, or one launch of the executable graph g. */
static CUresult launch(enum api a, void *fn, CUfunction f, CUstream s, CUdeviceptr *p, unsigned *k,
                       CUgraphExec g)
{
    size_t n = WORDS;
    void *params[] = {p, &n, k};
    if (a >= LEGACY && a <= LEGACY_GRID_ASYNC)
        legacy_arguments(f, *p, *k);
    switch (a) {
    case KERNEL:
    case KERNEL_PTSZ:
        return ((__typeof__(&cuLaunchKernel))fn)(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL);
    case KERNEL_EX: {
        CUlaunchConfig c = {.gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 1,
                            .blockDimY = 1, .blockDimZ = 1, .hStream = s};
        return ((__typeof__(&cuLaunchKernelEx))fn)(&c, f, params, NULL);
    }
    case COOPERATIVE:
        return ((__typeof__(&cuLaunchCooperativeKernel))fn)(f, 1, 1, 1, 1, 1, 1, 0, s, params);
    case GRAPH:
        return ((__typeof__(&cuGraphLaunch))fn)(g, s);
    case LEGACY:
        return ((__typeof__(&cuLaunch))fn)(f);
    case LEGACY_GRID:
        return ((__typeof__(&cuLaunchGrid))fn)(f, 1, 1);
    case LEGACY_GRID_ASYNC:
        return ((__typeof__(&cuLaunchGridAsync))fn)(f, 1, 1, s);
    case MULTI_DEVICE: { /* one device: s's (a stream the program made) */
        CUDA_LAUNCH_PARAMS l = {.function = f, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1, .hStream = s,
                                .kernelParams = params};
        return ((__typeof__(&cuLaunchCooperativeKernelMultiDevice))fn)(&l, 1, 0);
    }
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

/* An executable graph of one step_u32(p, WORDS, *k) launch, captured on s:
 * the captured launch is one the driver accepted, counted in launches. */
static CUgraphExec captured_step(CUfunction f, CUstream s, CUdeviceptr *p, unsigned *k)
{
    CUgraph graph;
    CUgraphExec exec;
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CU_OK(launch(KERNEL, (void *)&cuLaunchKernel, f, s, p, k, NULL));
    CU_OK(cuStreamEndCapture(s, &graph));
    CU_OK(cuGraphInstantiateWithFlags(&exec, graph, 0));
    CU_OK(cuGraphDestroy(graph));
    return exec;
}

/* Each API by each path: N launches accepted, N counted in its counter and
 * none in the other; the buffer stepped N times (they ran). */
START_TEST(every_launch_api_is_counted_by_every_path)
{
    enum spw_path path = (enum spw_path)(_i / APIS);
    enum api a = (enum api)(_i % APIS);
    rig_setup(0);
    void *fn = resolve(path, a);
    ck_assert_msg(fn != NULL, "%s: %s not found", path_names[path], apis[a].symbol);
    CUfunction f = rig_kernel("step_u32");
    CUstream s = NULL;
    if (a == GRAPH || a == MULTI_DEVICE)
        CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    else if (a == KERNEL_PTSZ)
        s = CU_STREAM_PER_THREAD;
    CUdeviceptr p = rig_filled(BYTES, 7);
    /* A synchronous copy may return before its DMA is done, and a
     * non-blocking stream does not wait for the legacy one. */
    CU_OK(cuCtxSynchronize());
    unsigned k = 3;
    CUgraphExec g = a == GRAPH ? captured_step(f, s, &p, &k) : NULL;
    enum spw_counter mine = a == GRAPH ? SPW_C_GRAPH_LAUNCHES : SPW_C_LAUNCHES;
    enum spw_counter other = a == GRAPH ? SPW_C_LAUNCHES : SPW_C_GRAPH_LAUNCHES;
    uint64_t mine0 = rig_stat(0, mine), other0 = rig_stat(0, other);
    enum { N = 7 };
    for (int i = 0; i < N; i++)
        CU_OK(launch(a, fn, f, s, &p, &k, g));
    CU_OK(cuCtxSynchronize());
    ck_assert_msg(rig_stat(0, mine) - mine0 == N, "%s by %s: %llu of %d launches counted", apis[a].symbol,
                  path_names[path], (unsigned long long)(rig_stat(0, mine) - mine0), N);
    ck_assert_uint_eq(rig_stat(0, other), other0);
    uint32_t *want = rig_expected(BYTES, 7);
    for (int i = 0; i < N; i++)
        for (size_t w = 0; w < WORDS; w++)
            want[w] = rig_step(want[w], k);
    rig_expect_words(p, want, BYTES, "the buffer the launches stepped");
    free(want);
    if (g)
        CU_OK(cuGraphExecDestroy(g));
    if (s && s != CU_STREAM_PER_THREAD)
        CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(p));
}
END_TEST

/* What the driver refuses never ran: not counted. */
START_TEST(refused_launches_are_not_counted)
{
    rig_setup(0);
    CUfunction f = rig_kernel("step_u32");
    CUdeviceptr p = rig_filled(BYTES, 1);
    unsigned k = 1;
    uint64_t l0 = rig_stat(0, SPW_C_LAUNCHES), g0 = rig_stat(0, SPW_C_GRAPH_LAUNCHES);
    size_t n = WORDS;
    void *params[] = {&p, &n, &k};
    ck_assert_int_ne(cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL), CUDA_SUCCESS);
    ck_assert_int_ne(cuLaunchKernel(f, 0, 1, 1, 1, 1, 1, 0, NULL, params, NULL), CUDA_SUCCESS);
    ck_assert_int_ne(cuLaunchKernelEx(NULL, f, params, NULL), CUDA_SUCCESS);
    ck_assert_int_ne(cuGraphLaunch(NULL, NULL), CUDA_SUCCESS);
    ck_assert_uint_eq(rig_stat(0, SPW_C_LAUNCHES), l0);
    ck_assert_uint_eq(rig_stat(0, SPW_C_GRAPH_LAUNCHES), g0);
    rig_expect_pattern(p, BYTES, 1, "a buffer no launch ran on");
    CU_OK(cuMemFree(p));
}
END_TEST

/* Device 1 exists, device 0 current: launches.sh gives fakecuda two,
 * but for its one-device run (then nothing to test). */
static int two_devices(void)
{
    int count = 0;
    rig_setup(0);
    CU_OK(cuDeviceGetCount(&count));
    return count >= 2;
}

/* A launch counts on the device whose context is current. */
START_TEST(launches_count_on_the_current_contexts_device)
{
    if (!two_devices())
        return;
    rig_setup(1);
    CUfunction f = rig_kernel("step_u32");
    CUdeviceptr p = rig_filled(BYTES, 2);
    uint64_t d0 = rig_stat(0, SPW_C_LAUNCHES), d1 = rig_stat(1, SPW_C_LAUNCHES);
    unsigned k = 5;
    for (int i = 0; i < 3; i++)
        CU_OK(launch(KERNEL, (void *)&cuLaunchKernel, f, NULL, &p, &k, NULL));
    CU_OK(cuCtxSynchronize());
    ck_assert_uint_eq(rig_stat(1, SPW_C_LAUNCHES) - d1, 3);
    ck_assert_uint_eq(rig_stat(0, SPW_C_LAUNCHES), d0);
    CU_OK(cuMemFree(p));
}
END_TEST

/* A context-less kernel (CUkernel cast to CUfunction) runs in the context
 * of the stream it is launched on, whatever context is current: it is
 * counted on the stream's device, as is a graph launched there. */
START_TEST(launches_count_on_their_streams_device)
{
    if (!two_devices())
        return;
    rig_setup(1);
    (void)rig_kernel("step_u32"); /* registers the kernels */
    CUlibrary lib;
    CUkernel kern;
    CU_OK(cuLibraryLoadData(&lib, "fakecuda", NULL, NULL, 0, NULL, NULL, 0));
    CU_OK(cuLibraryGetKernel(&kern, lib, "step_u32"));
    CUfunction f = (CUfunction)kern;
    CUstream s1;
    CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p = rig_filled(BYTES, 4);
    CU_OK(cuCtxSynchronize());
    unsigned k = 6;
    CUgraphExec g = captured_step(f, s1, &p, &k); /* one launch, counted on device 1 */
    rig_setup(0);
    uint64_t l0 = rig_stat(0, SPW_C_LAUNCHES), l1 = rig_stat(1, SPW_C_LAUNCHES);
    uint64_t g0 = rig_stat(0, SPW_C_GRAPH_LAUNCHES), g1 = rig_stat(1, SPW_C_GRAPH_LAUNCHES);
    CU_OK(launch(KERNEL, (void *)&cuLaunchKernel, f, s1, &p, &k, NULL));
    CU_OK(launch(KERNEL_EX, (void *)&cuLaunchKernelEx, f, s1, &p, &k, NULL));
    CU_OK(launch(COOPERATIVE, (void *)&cuLaunchCooperativeKernel, f, s1, &p, &k, NULL));
    CU_OK(launch(MULTI_DEVICE, (void *)&cuLaunchCooperativeKernelMultiDevice, f, s1, &p, &k, NULL));
    CU_OK(launch(GRAPH, (void *)&cuGraphLaunch, f, s1, &p, &k, g));
    CU_OK(cuStreamSynchronize(s1));
    ck_assert_uint_eq(rig_stat(1, SPW_C_LAUNCHES) - l1, 4);
    ck_assert_uint_eq(rig_stat(1, SPW_C_GRAPH_LAUNCHES) - g1, 1);
    ck_assert_uint_eq(rig_stat(0, SPW_C_LAUNCHES), l0);
    ck_assert_uint_eq(rig_stat(0, SPW_C_GRAPH_LAUNCHES), g0);
    uint32_t *want = rig_expected(BYTES, 4);
    for (int i = 0; i < 5; i++)
        for (size_t w = 0; w < WORDS; w++)
            want[w] = rig_step(want[w], k);
    rig_expect_words(p, want, BYTES, "the buffer the launches stepped");
    free(want);
    CU_OK(cuGraphExecDestroy(g));
    CU_OK(cuStreamDestroy(s1));
    CU_OK(cuLibraryUnload(lib));
    CU_OK(cuMemFree(p));
}
END_TEST

/* A multi-device launch is one launch on each device it names, each
 * counted there (and each kernel stepped its own device's buffer). */
START_TEST(a_multi_device_launch_counts_on_each_device)
{
    if (!two_devices())
        return;
    CUcontext c[2];
    CUstream s[2];
    CUdeviceptr p[2];
    for (int d = 0; d < 2; d++) {
        c[d] = rig_setup(d);
        CU_OK(cuStreamCreate(&s[d], CU_STREAM_NON_BLOCKING));
        p[d] = rig_filled(BYTES, 8 + (unsigned)d);
        CU_OK(cuCtxSynchronize());
    }
    (void)rig_kernel("step_u32"); /* registers the kernels */
    CUlibrary lib;
    CUkernel kern;
    CU_OK(cuLibraryLoadData(&lib, "fakecuda", NULL, NULL, 0, NULL, NULL, 0));
    CU_OK(cuLibraryGetKernel(&kern, lib, "step_u32"));
    uint64_t l0 = rig_stat(0, SPW_C_LAUNCHES), l1 = rig_stat(1, SPW_C_LAUNCHES);
    size_t n = WORDS;
    unsigned k = 4;
    void *params[2][3] = {{&p[0], &n, &k}, {&p[1], &n, &k}};
    CUDA_LAUNCH_PARAMS l[2];
    for (int d = 0; d < 2; d++)
        l[d] = (CUDA_LAUNCH_PARAMS){.function = (CUfunction)kern, .gridDimX = 1, .gridDimY = 1,
                                    .gridDimZ = 1, .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1,
                                    .hStream = s[d], .kernelParams = params[d]};
    CU_OK(cuLaunchCooperativeKernelMultiDevice(l, 2, 0));
    ck_assert_int_ne(cuLaunchCooperativeKernelMultiDevice(l, 2, 0x80), CUDA_SUCCESS);
    for (int d = 0; d < 2; d++) {
        CU_OK(cuCtxSetCurrent(c[d]));
        CU_OK(cuStreamSynchronize(s[d]));
    }
    ck_assert_uint_eq(rig_stat(0, SPW_C_LAUNCHES) - l0, 1);
    ck_assert_uint_eq(rig_stat(1, SPW_C_LAUNCHES) - l1, 1);
    for (int d = 0; d < 2; d++) {
        CU_OK(cuCtxSetCurrent(c[d]));
        uint32_t *want = rig_expected(BYTES, 8 + (unsigned)d);
        for (size_t w = 0; w < WORDS; w++)
            want[w] = rig_step(want[w], k);
        rig_expect_words(p[d], want, BYTES, "the buffer its device's kernel stepped");
        free(want);
        CU_OK(cuStreamDestroy(s[d]));
        CU_OK(cuMemFree(p[d]));
    }
    CU_OK(cuLibraryUnload(lib));
}
END_TEST

#define THREADS 8
#define PER_THREAD 400

struct worker {
    CUcontext ctx;
    CUfunction f;
    int error;
};

static void *worker_run(void *arg)
{
    struct worker *w = arg;
    CUstream s;
    CUdeviceptr p;
    unsigned k = 1;
    if ((w->error = cuCtxSetCurrent(w->ctx)) || (w->error = cuStreamCreate(&s, CU_STREAM_NON_BLOCKING)))
        return NULL;
    if ((w->error = cuMemAlloc(&p, BYTES)))
        return NULL;
    for (int i = 0; i < PER_THREAD && !w->error; i++)
        w->error = launch(KERNEL, (void *)&cuLaunchKernel, w->f, s, &p, &k, NULL);
    if (!w->error)
        w->error = cuStreamSynchronize(s);
    cuStreamDestroy(s);
    cuMemFree(p);
    return NULL;
}

/* Threads launching at once count in lanes of their own: the sum is exact. */
START_TEST(threads_launching_at_once_count_exactly)
{
    CUcontext ctx = rig_setup(0);
    CUfunction f = rig_kernel("step_u32");
    CUdeviceptr q = rig_filled(BYTES, 0); /* the segment exists from here */
    uint64_t l0 = rig_stat(0, SPW_C_LAUNCHES);
    static struct worker w[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (struct worker){.ctx = ctx, .f = f};
        ck_assert_int_eq(pthread_create(&t[i], NULL, worker_run, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        ck_assert_msg(w[i].error == 0, "thread %d: error %d", i, w[i].error);
    }
    ck_assert_uint_eq(rig_stat(0, SPW_C_LAUNCHES) - l0, (uint64_t)THREADS * PER_THREAD);
    CU_OK(cuMemFree(q));
}
END_TEST

/* A process's first hooked call may be a launch (its buffers from
 * elsewhere): the segment opens there, and counts it. */
START_TEST(a_launch_before_any_allocation_is_counted)
{
    rig_setup(0);
    CUfunction f = rig_kernel("step_u32");
    CUdeviceptr none = 0;
    size_t n = 0;
    unsigned k = 0;
    void *params[] = {&none, &n, &k};
    CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
    ck_assert_uint_eq(rig_stat(0, SPW_C_LAUNCHES), 1);
    CU_OK(cuCtxSynchronize());
}
END_TEST

/* With one device every launch runs on it: counting one asks the driver
 * nothing (cuStreamGetDevice was most of a launch's cost without spill;
 * with spill the gate needs the stream's device). launches.sh's
 * one-device run, spill off. */
START_TEST(counting_a_launch_on_the_only_device_asks_nothing)
{
    int count = 0;
    rig_setup(0);
    CU_OK(cuDeviceGetCount(&count));
    const char *spill = getenv("SPILLWAY_SPILL");
    if (count != 1 || !spill || strcmp(spill, "0") != 0)
        return;
    CUfunction f = rig_kernel("step_u32");
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p = rig_filled(BYTES, 3);
    CU_OK(cuCtxSynchronize());
    unsigned k = 2;
    uint64_t l0 = rig_stat(0, SPW_C_LAUNCHES);
    long long asked = fakecuda_calls("cuStreamGetDevice");
    enum { N = 5 };
    for (int i = 0; i < N; i++) {
        CU_OK(launch(KERNEL, (void *)&cuLaunchKernel, f, s, &p, &k, NULL));
        CU_OK(launch(KERNEL_EX, (void *)&cuLaunchKernelEx, f, s, &p, &k, NULL));
    }
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_eq(rig_stat(0, SPW_C_LAUNCHES) - l0, 2 * N);
    ck_assert_int_eq(fakecuda_calls("cuStreamGetDevice") - asked, 0);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(p));
}
END_TEST

/* A context-less kernel (a CUkernel as a CUfunction): it runs in the
 * context of whatever stream it is launched on. */
static CUfunction any_context_kernel(CUlibrary *lib)
{
    CUkernel kern;
    (void)rig_kernel("step_u32"); /* registers the kernels */
    CU_OK(cuLibraryLoadData(lib, "fakecuda", NULL, NULL, 0, NULL, NULL, 0));
    CU_OK(cuLibraryGetKernel(&kern, *lib, "step_u32"));
    return (CUfunction)kern;
}

/* The driver may give a destroyed stream's handle to the next stream made
 * (its freed memory): a launch on that handle is counted on the new
 * stream's device, not on the one the handle meant before (spillway
 * remembers streams' devices). launches.sh's two-device runs. */
static void reused_stream_handle(int old_abi)
{
    if (!two_devices())
        return;
    /* CUDA 2.0's unsuffixed export, which runtimes and bindings built
     * against old headers still call, destroys as the _v2 does. */
    CUresult (*destroy)(CUstream) = cuStreamDestroy;
    if (old_abi) {
        *(void **)&destroy = dlsym(RTLD_DEFAULT, "cuStreamDestroy");
        ck_assert_ptr_nonnull((void *)destroy);
    }
    CUlibrary lib;
    CUfunction f = any_context_kernel(&lib);
    CUdeviceptr p = rig_filled(BYTES, 5);
    unsigned k = 3;
    ck_assert_int_eq(fakecuda_reuse_streams(1), 0);
    CUstream s0, s1;
    CU_OK(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING));
    uint64_t l0 = rig_stat(0, SPW_C_LAUNCHES), l1 = rig_stat(1, SPW_C_LAUNCHES);
    CU_OK(launch(KERNEL, (void *)&cuLaunchKernel, f, s0, &p, &k, NULL));
    CU_OK(cuStreamSynchronize(s0));
    ck_assert_uint_eq(rig_stat(0, SPW_C_LAUNCHES) - l0, 1);
    CU_OK(destroy(s0));
    rig_setup(1);
    CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    ck_assert_int_eq(fakecuda_reuse_streams(0), 0);
    ck_assert_ptr_eq(s1, s0); /* the same handle, now device 1's stream */
    rig_setup(0);
    for (int i = 0; i < 3; i++) {
        CU_OK(launch(KERNEL, (void *)&cuLaunchKernel, f, s1, &p, &k, NULL));
        CU_OK(launch(KERNEL_EX, (void *)&cuLaunchKernelEx, f, s1, &p, &k, NULL));
    }
    CU_OK(cuStreamSynchronize(s1));
    ck_assert_uint_eq(rig_stat(1, SPW_C_LAUNCHES) - l1, 6);
    ck_assert_uint_eq(rig_stat(0, SPW_C_LAUNCHES) - l0, 1);
    CU_OK(cuStreamDestroy(s1));
    CU_OK(cuLibraryUnload(lib));
    CU_OK(cuMemFree(p));
}

START_TEST(a_reused_stream_handle_counts_on_its_new_device)
{
    reused_stream_handle(0);
}
END_TEST

START_TEST(a_stream_handle_reused_after_an_old_abi_destroy_counts_on_its_new_device)
{
    reused_stream_handle(1);
}
END_TEST

/* With several devices, a launch on a stream whose device spillway
 * already knows asks the driver nothing (cuStreamGetDevice, before CUDA
 * 12.8 cuStreamGetCtx, was most of a launch's cost): a process of a
 * multi-GPU machine (torchrun) sees every device and uses one. */
START_TEST(launching_again_on_a_known_stream_asks_nothing)
{
    if (!two_devices())
        return;
    rig_setup(1);
    CUfunction f = rig_kernel("step_u32");
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p = rig_filled(BYTES, 3);
    CU_OK(cuCtxSynchronize());
    unsigned k = 2;
    uint64_t l1 = rig_stat(1, SPW_C_LAUNCHES);
    long long asked = fakecuda_calls("cuStreamGetDevice") + fakecuda_calls("cuStreamGetCtx");
    enum { N = 50 };
    for (int i = 0; i < N; i++) {
        CU_OK(launch(KERNEL, (void *)&cuLaunchKernel, f, s, &p, &k, NULL));
        CU_OK(launch(KERNEL_EX, (void *)&cuLaunchKernelEx, f, s, &p, &k, NULL));
    }
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_eq(rig_stat(1, SPW_C_LAUNCHES) - l1, 2 * N);
    long long now = fakecuda_calls("cuStreamGetDevice") + fakecuda_calls("cuStreamGetCtx");
    ck_assert_msg(now - asked <= 4, "%lld questions for %d launches on one stream", now - asked, 2 * N);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(p));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("shim_launches");
    TCase *c = tcase_create("launches");
    tcase_set_timeout(c, 60);
    tcase_add_loop_test(c, every_launch_api_is_counted_by_every_path, 0, SPW_PATHS * APIS);
    tcase_add_test(c, refused_launches_are_not_counted);
    tcase_add_test(c, launches_count_on_the_current_contexts_device);
    tcase_add_test(c, launches_count_on_their_streams_device);
    tcase_add_test(c, a_multi_device_launch_counts_on_each_device);
    tcase_add_test(c, threads_launching_at_once_count_exactly);
    tcase_add_test(c, a_launch_before_any_allocation_is_counted);
    tcase_add_test(c, counting_a_launch_on_the_only_device_asks_nothing);
    tcase_add_test(c, a_reused_stream_handle_counts_on_its_new_device);
    tcase_add_test(c, a_stream_handle_reused_after_an_old_abi_destroy_counts_on_its_new_device);
    tcase_add_test(c, launching_again_on_a_known_stream_asks_nothing);
    suite_add_tcase(s, c);
    return s;
}
