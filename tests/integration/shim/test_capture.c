/* Stream capture and CUDA graphs under spillway (issue 12, items 1, 2 and
 * 8) against fakecuda, whose captures follow the driver's rules: a context
 * sync while a stream of it captures, or a call the capture mode forbids,
 * invalidates the capture.
 *
 *  - A capture of 10 launches over buffers, while another thread forces
 *    spills and fills, ends valid, and its graph computes exact results
 *    (in GLOBAL mode with that thread RELAXED, as PyTorch's allocator does,
 *    and in THREAD_LOCAL mode with that thread left alone).
 *  - A graph replayed 100 times under spill pressure has its buffers filled
 *    back before every replay (they are the graph's, hence hot), and its
 *    results exact; so does a buffer given to an executable graph by
 *    cuGraphExecKernelNodeSetParams, and by every other way an executable
 *    graph comes to name one (cuGraphExecNodeSetParams, cuGraphExecUpdate,
 *    the copy, set and child graph setters, a child graph, an
 *    instantiation with parameters).
 *  - A pool block freed on a capturing stream gets the driver's answer (a
 *    captured free must name a graph allocation) and stays intact and
 *    allocated; a graph allocation made in the capture is the graph's.
 *  - Conditional nodes' bodies are walked for the buffers they name.
 *
 * One suite in four files: here captures under spill pressure, frees in
 * a capture and ends the driver refuses, then replays (capture_replays.c),
 * every way of naming a buffer (capture_exec_naming.c) and conditional
 * nodes (capture_conditionals.c), sharing capture_rig.h.
 *
 * Run by capture.sh: one 256 MiB device, a 64 MiB limit. */
#include "tests/integration/shim/capture_rig.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <unistd.h>

/* ---- a thread that forces spills and fills --------------------------------- */

struct forcer {
    const CUdeviceptr *use; /* buffers it reads a word of each page from */
    size_t nuse, use_bytes;
    CUstreamCaptureMode mode; /* its own capture mode */
    bool set_mode;
    _Atomic int stop;
    _Atomic unsigned rounds;
    CUresult failed;
};

/* Reads a word of every page of [p, p + bytes): a copy fills what it
 * touches back when there is room. */
static CUresult touch(CUdeviceptr p, size_t bytes, CUstream s)
{
    static uint32_t sink;
    CUresult r = CUDA_SUCCESS;
    for (size_t o = 0; r == CUDA_SUCCESS && o < bytes; o += 2 * MiB)
        r = cuMemcpyDtoHAsync(&sink, p + o, sizeof sink, s);
    return r;
}

/* Holds a buffer that leaves no room for the others, writes it, reads a
 * word of each page back and frees it (the others spill), then reads the
 * others (they fill back). */
static void *force(void *arg)
{
    struct forcer *f = arg;
    CUresult r = cuCtxSetCurrent(ctx);
    if (r == CUDA_SUCCESS && f->set_mode)
        r = cuThreadExchangeStreamCaptureMode(&f->mode);
    CUstream s = NULL;
    if (r == CUDA_SUCCESS)
        r = cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    const size_t bytes = LIMIT - 8 * MiB;
    while (r == CUDA_SUCCESS && !atomic_load(&f->stop)) {
        CUdeviceptr x = 0;
        uint32_t w = 0;
        r = cuMemAlloc(&x, bytes);
        if (r == CUDA_SUCCESS)
            r = cuMemsetD32Async(x, 0x5a5a5a5au, bytes / 4, s);
        if (r == CUDA_SUCCESS)
            r = touch(x, bytes, s);
        if (r == CUDA_SUCCESS)
            r = cuMemcpyDtoHAsync(&w, x + bytes - 4, sizeof w, s);
        if (r == CUDA_SUCCESS)
            r = cuStreamSynchronize(s);
        if (r == CUDA_SUCCESS && w != 0x5a5a5a5au)
            r = CUDA_ERROR_UNKNOWN; /* the forcer's own data went wrong */
        if (r == CUDA_SUCCESS)
            r = cuMemFreeAsync(x, s);
        if (r == CUDA_SUCCESS)
            r = cuStreamSynchronize(s);
        for (size_t i = 0; r == CUDA_SUCCESS && i < f->nuse; i++)
            r = touch(f->use[i], f->use_bytes, s);
        if (r == CUDA_SUCCESS)
            atomic_fetch_add(&f->rounds, 1);
    }
    if (s && cuStreamSynchronize(s) == CUDA_SUCCESS)
        (void)cuStreamDestroy(s);
    f->failed = r;
    return NULL;
}

static void start_forcer(struct forcer *f, pthread_t *t)
{
    ck_assert_int_eq(pthread_create(t, NULL, force, f), 0);
}

static void stop_forcer(struct forcer *f, pthread_t t)
{
    atomic_store(&f->stop, 1);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_msg(f->failed == CUDA_SUCCESS, "the forcing thread failed: error %d",
                  (int)f->failed);
}

static void wait_rounds(struct forcer *f, unsigned n)
{
    unsigned from = atomic_load(&f->rounds);
    for (int i = 0; i < 20000 && atomic_load(&f->rounds) < from + n && !f->failed; i++)
        usleep(500);
    ck_assert_uint_ge(atomic_load(&f->rounds), from + n);
}

/* ---- a capture while another thread spills and fills ---------------------- */

/* Captures one step of every buffer on s while f runs, at least 3 of its
 * rounds between the first launch and the end. */
static CUgraph capture_steps(CUfunction step, CUstream s, CUstreamCaptureMode mode,
                             struct forcer *f, const struct bufs *b)
{
    CU_OK(cuStreamBeginCapture(s, mode));
    for (int i = 0; i < b->n; i++) {
        launch_step(step, s, b->d[i], (unsigned)i + 1);
        if (i == b->n / 2)
            wait_rounds(f, 3);
    }
    wait_rounds(f, 3);
    CUgraph g = NULL;
    CUresult r = cuStreamEndCapture(s, &g);
    ck_assert_msg(r == CUDA_SUCCESS && g, "the capture ended with error %d (graph %p)", (int)r,
                  (void *)g);
    return g;
}

static void capture_under_spill(CUstreamCaptureMode mode, bool forcer_relaxed)
{
    ctx = rig_setup(0);
    CUfunction step = rig_kernel("step_u32");
    struct bufs b;
    bufs_make(&b, NBUF, 100);
    CU_OK(cuCtxSynchronize());
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    struct forcer f = {.use = b.d, .nuse = (size_t)b.n, .use_bytes = BUF,
                       .mode = CU_STREAM_CAPTURE_MODE_RELAXED, .set_mode = forcer_relaxed};
    pthread_t t;
    start_forcer(&f, &t);
    wait_rounds(&f, 2); /* spilling already */
    uint64_t spills = rig_pool(0).spill_events, fills = rig_pool(0).fill_events;
    CUgraph g = capture_steps(step, s, mode, &f, &b);
    ck_assert_uint_gt(rig_pool(0).spill_events, 0);
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    uint64_t during = rig_pool(0).spill_events;
    wait_rounds(&f, 3); /* moves resume once the capture is over */
    stop_forcer(&f, t);
    ck_assert_uint_gt(rig_pool(0).spill_events, during);
    for (int i = 0; i < b.n; i++)
        bufs_step(&b, i, (unsigned)i + 1);
    bufs_check(&b, "a buffer after the captured steps");
    /* The buffers did move while all this went on. */
    ck_assert_uint_gt(rig_pool(0).spill_events, spills);
    ck_assert_uint_gt(rig_pool(0).fill_events, fills);
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuStreamDestroy(s));
    bufs_free(&b);
}

START_TEST(capture_global_while_spilling)
{
    capture_under_spill(CU_STREAM_CAPTURE_MODE_GLOBAL, true);
}
END_TEST

START_TEST(capture_thread_local_while_spilling)
{
    capture_under_spill(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, false);
}
END_TEST

/* ---- frees during a capture ------------------------------------------------------ */

START_TEST(free_of_a_pool_block_in_capture)
{
    ctx = rig_setup(0);
    CUdeviceptr x = rig_filled(BUF, 400);
    uint64_t used = rig_counters(0).used;
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    /* The driver's answer for a free node of memory no graph allocated. */
    ck_assert_int_eq(cuMemFreeAsync(x, s), CUDA_ERROR_INVALID_VALUE);
    CUgraph g = NULL;
    (void)cuStreamEndCapture(s, &g); /* invalidated or not: the driver's call */
    if (g)
        CU_OK(cuGraphDestroy(g));
    /* The block is still the program's: counted, not reused, intact. */
    ck_assert_uint_eq(rig_counters(0).used, used);
    CU_OK(cuCtxSynchronize());
    CUdeviceptr y[8];
    for (int i = 0; i < 8; i++) {
        CU_OK(cuMemAlloc(&y[i], BUF));
        ck_assert(y[i] + BUF <= x || y[i] >= x + BUF);
        CU_OK(cuMemsetD8(y[i], 0xee, BUF));
    }
    rig_expect_pattern(x, BUF, 400, "the block freed in a capture");
    CU_OK(cuMemFree(x));
    for (int i = 0; i < 8; i++)
        CU_OK(cuMemFree(y[i]));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* cuMemAllocAsync in a capture makes a graph allocation (the driver's), and
 * the graph may free it in the same capture. */
START_TEST(graph_allocation_in_capture)
{
    ctx = rig_setup(0);
    CUfunction step = rig_kernel("step_u32");
    CUfunction sum = rig_kernel("sum_u32");
    CUdeviceptr out = 0;
    CU_OK(cuMemAlloc(&out, sizeof(uint64_t)));
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    uint64_t before = rig_pool(0).passthrough_count[SPILLWAY_PT_CAPTURE];
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr t = 0;
    CU_OK(cuMemAllocAsync(&t, BUF, s));
    CU_OK(cuMemsetD32Async(t, 1u, BUF / 4, s));
    launch_step(step, s, t, 5);
    size_t n = BUF / 4;
    void *args[] = {&t, &n, &out};
    CU_OK(cuLaunchKernel(sum, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
    CU_OK(cuMemFreeAsync(t, s));
    CUgraph g;
    CU_OK(cuStreamEndCapture(s, &g));
    ck_assert_uint_eq(rig_pool(0).passthrough_count[SPILLWAY_PT_CAPTURE], before + 1);
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    for (int r = 0; r < 3; r++) {
        CU_OK(cuGraphLaunch(e, s));
        CU_OK(cuStreamSynchronize(s));
        uint64_t v = 0;
        CU_OK(cuMemcpyDtoH(&v, out, sizeof v));
        ck_assert_uint_eq(v, (uint64_t)n * rig_step(1u, 5));
    }
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(out));
}
END_TEST

/* ---- ends the driver refuses ------------------------------------------------ */

static void *end_elsewhere(void *arg)
{
    CUgraph g = NULL;
    CUresult r = cuCtxSetCurrent(ctx);
    if (r == CUDA_SUCCESS)
        r = cuStreamEndCapture((CUstream)arg, &g);
    if (g)
        (void)cuGraphDestroy(g);
    return (void *)(uintptr_t)r;
}

/* An end the driver refuses leaves the capture going (no place for the
 * graph, a stream forked into the capture instead of its origin, a GLOBAL
 * capture ended from another thread): spillway must still count it, so an
 * allocation past the limit gets host pages without a spill (whose sync
 * would invalidate the capture), and the capture ends intact. Uncounted
 * at the refused end, it was lost at the real one. */
START_TEST(a_refused_end_leaves_the_capture_counted)
{
    ctx = rig_setup(0);
    CUdeviceptr b = rig_filled(BUF, 500);
    CUstream s, side;
    CUevent fork, join;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&side, CU_STREAM_NON_BLOCKING));
    CU_OK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));
    for (int way = 0; way < 3; way++) {
        CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        CU_OK(cuMemsetD32Async(b, (unsigned)way, 16, s));
        CUgraph g = NULL;
        if (way == 0) {
            ck_assert_int_eq(cuStreamEndCapture(s, NULL), CUDA_ERROR_INVALID_VALUE);
        } else if (way == 1) {
            CU_OK(cuEventRecord(fork, s));
            CU_OK(cuStreamWaitEvent(side, fork, 0));
            CU_OK(cuMemsetD32Async(b + 64, (unsigned)way, 16, side));
            ck_assert_int_eq(cuStreamEndCapture(side, &g), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
            CU_OK(cuEventRecord(join, side));
            CU_OK(cuStreamWaitEvent(s, join, 0));
        } else {
            pthread_t t;
            void *r;
            ck_assert_int_eq(pthread_create(&t, NULL, end_elsewhere, s), 0);
            ck_assert_int_eq(pthread_join(t, &r), 0);
            ck_assert_int_eq((CUresult)(uintptr_t)r, CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
        }
        /* The program's allocation in RELAXED mode, as PyTorch's. */
        uint64_t spilled = rig_pool(0).spill_bytes;
        CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
        CU_OK(cuThreadExchangeStreamCaptureMode(&m));
        CUdeviceptr x;
        CU_OK(cuMemAlloc(&x, LIMIT));
        CU_OK(cuThreadExchangeStreamCaptureMode(&m));
        ck_assert_msg(rig_pool(0).spill_bytes == spilled, "way %d: spilled during a capture", way);
        CU_OK(cuStreamEndCapture(s, &g));
        ck_assert_ptr_nonnull(g);
        CU_OK(cuGraphDestroy(g));
        CU_OK(cuMemFree(x));
        CU_OK(cuCtxSynchronize());
    }
    rig_expect_pattern(b, BUF, 500, "the buffer the captures named");
    CU_OK(cuEventDestroy(fork));
    CU_OK(cuEventDestroy(join));
    CU_OK(cuStreamDestroy(side));
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(b));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("shim_capture");
    TCase *tc = tcase_create("capture");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, capture_global_while_spilling);
    tcase_add_test(tc, capture_thread_local_while_spilling);
    capture_replay_tests(tc);
    capture_exec_naming_tests(tc);
    tcase_add_test(tc, free_of_a_pool_block_in_capture);
    tcase_add_test(tc, graph_allocation_in_capture);
    tcase_add_test(tc, a_refused_end_leaves_the_capture_counted);
    capture_conditional_tests(tc);
    suite_add_tcase(s, tc);
    return s;
}
