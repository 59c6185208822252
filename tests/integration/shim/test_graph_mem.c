/* The driver's graph memory pool under spillway: what a graph's memory
 * alloc nodes reserve at its first launch stays the driver's after the
 * graph frees it (until cuDeviceGraphMemTrim), and counts against the
 * limit like any memory outside the pool:
 *  - cuMemGetInfo's free drops by it after the launch, the stats show it
 *    as pass-through memory, replays add nothing, and the program's trim
 *    gives it back;
 *  - an allocation that needs those bytes has the driver's idle graph
 *    memory trimmed rather than spilling or passing the limit;
 *  - a captured allocation still live is counted once, not once captured
 *    and again when the graph pool backs it, and stays counted after the
 *    program frees it while the graph pool keeps it.
 *
 * Run by graph_mem.sh: two 256 MiB devices, a 64 MiB limit each. */
#include "tests/integration/shim/rig.h"

#include <pthread.h>
#include <stdatomic.h>

#define LIMIT (64 * MiB)
#define GBYTES (16 * MiB)

static size_t free_now(void)
{
    size_t free, total;
    CU_OK(cuMemGetInfo(&free, &total));
    return free;
}

static uint64_t reserved(void)
{
    cuuint64_t v = 0;
    CU_OK(cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &v));
    return v;
}

/* An executable graph and its graph destroyed, the driver's graph pool
 * trimmed. */
static void graphs_gone_and_trimmed(CUgraphExec e, CUgraph g)
{
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuDeviceGraphMemTrim(0));
}

/* Nothing of a capture's allocation counts once its graphs went. */
static void expect_free_as_before(size_t before)
{
    ck_assert_msg(free_now() == before, "free %zu MiB before the capture, %zu after its graphs went",
                  before >> 20, free_now() >> 20);
}

/* A graph that allocates GBYTES, sets them and frees them. */
static void alloc_set_free_graph(CUgraph *g)
{
    CU_OK(cuGraphCreate(g, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS ap = {0};
    ap.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    ap.poolProps.location.id = 0;
    ap.bytesize = GBYTES;
    CUgraphNode a, set, f;
    CU_OK(cuGraphAddMemAllocNode(&a, *g, NULL, 0, &ap));
    CUDA_MEMSET_NODE_PARAMS mp = {.dst = ap.dptr, .value = 7, .elementSize = 4, .width = GBYTES / 4,
                                  .height = 1};
    CU_OK(cuGraphAddMemsetNode(&set, *g, &a, 1, &mp, rig_setup(0)));
    CU_OK(cuGraphAddMemFreeNode(&f, *g, &set, 1, ap.dptr));
}

/* That graph, instantiated. */
static CUgraphExec alloc_set_free(CUgraph *g)
{
    alloc_set_free_graph(g);
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, *g, 0));
    return e;
}

START_TEST(a_launch_counts_what_the_graph_pool_reserves)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUgraph g;
    CUgraphExec e = alloc_set_free(&g);
    CUdeviceptr one;
    CU_OK(cuMemAlloc(&one, MiB)); /* the stats segment is published */
    CU_OK(cuMemFree(one));
    size_t before = free_now();
    uint64_t pass = rig_stat(0, SPW_C_PASS_CAPTURE);
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_ge(reserved(), GBYTES);
    size_t after = free_now();
    ck_assert_msg(after + GBYTES <= before, "free %zu MiB before the launch, %zu after", before >> 20,
                  after >> 20);
    ck_assert_uint_ge(rig_stat(0, SPW_C_PASS_CAPTURE), pass + GBYTES);
    for (int i = 0; i < 3; i++) /* replays reuse it */
        CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_eq(free_now(), after);
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    ck_assert_uint_eq(free_now(), after); /* still the driver's after the graph went */
    CU_OK(cuDeviceGraphMemTrim(0));
    ck_assert_uint_eq(reserved(), 0);
    ck_assert_uint_eq(free_now(), before);
    ck_assert_uint_eq(rig_stat(0, SPW_C_PASS_CAPTURE), pass);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD uploads at the instantiation: the
 * graph pool reserves then, before any launch, and it counts from then. */
START_TEST(an_instantiate_with_upload_counts_what_the_graph_pool_reserves)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUgraph g;
    alloc_set_free_graph(&g);
    CUdeviceptr one;
    CU_OK(cuMemAlloc(&one, MiB)); /* the stats segment is published */
    CU_OK(cuMemFree(one));
    size_t before = free_now();
    uint64_t pass = rig_stat(0, SPW_C_PASS_CAPTURE);
    CUDA_GRAPH_INSTANTIATE_PARAMS ip = {.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD, .hUploadStream = s};
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithParams(&e, g, &ip));
    ck_assert_int_eq(ip.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_ge(reserved(), GBYTES);
    size_t after = free_now();
    ck_assert_msg(after + GBYTES <= before, "free %zu MiB before the instantiation, %zu after",
                  before >> 20, after >> 20);
    ck_assert_uint_ge(rig_stat(0, SPW_C_PASS_CAPTURE), pass + GBYTES);
    CU_OK(cuGraphLaunch(e, s)); /* uploaded: the launch reserves nothing more */
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_eq(free_now(), after);
    graphs_gone_and_trimmed(e, g);
    ck_assert_uint_eq(reserved(), 0);
    ck_assert_uint_eq(free_now(), before);
    ck_assert_uint_eq(rig_stat(0, SPW_C_PASS_CAPTURE), pass);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

START_TEST(an_allocation_at_the_limit_trims_idle_graph_memory)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr big = rig_filled(LIMIT - GBYTES - 4 * MiB, 11);
    CUgraph g;
    CUgraphExec e = alloc_set_free(&g);
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_ge(reserved(), GBYTES);
    uint64_t spilled = rig_pool(0).spill_bytes;
    CUdeviceptr more;
    CU_OK(cuMemAlloc(&more, GBYTES)); /* room only once the graph pool's idle memory goes */
    ck_assert_uint_eq(reserved(), 0);
    ck_assert_uint_eq(rig_pool(0).spill_bytes, spilled);
    ck_assert_msg(fakecuda_device_bytes_used(0) <= LIMIT, "the device holds %zu MiB, the limit is %d",
                  fakecuda_device_bytes_used(0) >> 20, (int)(LIMIT >> 20));
    CU_OK(cuGraphLaunch(e, s)); /* maps it again: the pool gives back room (spilling) */
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_ge(reserved(), GBYTES);
    ck_assert_msg(fakecuda_device_bytes_used(0) <= LIMIT, "the device holds %zu MiB, the limit is %d",
                  fakecuda_device_bytes_used(0) >> 20, (int)(LIMIT >> 20));
    rig_expect_pattern(big, LIMIT - GBYTES - 4 * MiB, 11, "the data the pool held");
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuMemFree(more));
    CU_OK(cuMemFree(big));
    CU_OK(cuDeviceGraphMemTrim(0));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* The same for a VMM handle the pool serves (cuMemCreate: PyTorch's
 * expandable segments): the graph pool's idle memory goes first, the
 * program's data stays on the device. */
START_TEST(a_handle_at_the_limit_trims_idle_graph_memory)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr big = rig_filled(LIMIT - GBYTES - 4 * MiB, 12);
    CUgraph g;
    CUgraphExec e = alloc_set_free(&g);
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_ge(reserved(), GBYTES);
    uint64_t spilled = rig_pool(0).spill_bytes;
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CUmemGenericAllocationHandle h;
    CU_OK(cuMemCreate(&h, GBYTES, &prop, 0)); /* room only once the idle graph memory goes */
    ck_assert_uint_eq(reserved(), 0);
    ck_assert_uint_eq(rig_pool(0).spill_bytes, spilled);
    ck_assert_msg(fakecuda_device_bytes_used(0) <= LIMIT, "the device holds %zu MiB, the limit is %d",
                  fakecuda_device_bytes_used(0) >> 20, (int)(LIMIT >> 20));
    rig_expect_pattern(big, LIMIT - GBYTES - 4 * MiB, 12, "the data the pool held");
    CU_OK(cuMemRelease(h));
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuMemFree(big));
    CU_OK(cuDeviceGraphMemTrim(0));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

START_TEST(a_live_captured_allocation_counts_once)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    size_t before = free_now();
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr t = 0;
    CU_OK(cuMemAllocAsync(&t, GBYTES, s)); /* outlives the graph: the program frees it */
    CU_OK(cuMemsetD32Async(t, 3u, GBYTES / 4, s));
    CUgraph g;
    CU_OK(cuStreamEndCapture(s, &g));
    ck_assert_uint_eq(free_now() + GBYTES, before); /* counted from its capture */
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_ge(reserved(), GBYTES);
    ck_assert_uint_eq(free_now() + GBYTES, before); /* backed now: still once */
    CU_OK(cuMemFreeAsync(t, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_ge(reserved(), GBYTES);
    ck_assert_uint_eq(free_now() + GBYTES, before); /* freed, still the graph pool's */
    graphs_gone_and_trimmed(e, g);
    ck_assert_uint_eq(free_now(), before);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* A first launch that needed a trim of other graphs' idle memory settles
 * its graph like any: its replays reuse what it reserved, with no trim (and
 * no remapping by the driver) at each replay. */
/* Four replays of e on s, with the device at its limit (big, LIMIT -
 * GBYTES - 8 MiB of pattern): none trims the graph memory they reuse or
 * spills, and the pool's data stays. */
static void expect_replays_alone(CUgraphExec e, CUstream s, CUdeviceptr big, int pattern,
                                 const char *after)
{
    long long trims = fakecuda_calls("cuDeviceGraphMemTrim");
    uint64_t spilled = rig_pool(0).spill_bytes;
    for (int i = 0; i < 4; i++) {
        CU_OK(cuGraphLaunch(e, s));
        CU_OK(cuStreamSynchronize(s));
    }
    ck_assert_msg(fakecuda_calls("cuDeviceGraphMemTrim") == trims, "%lld trims in 4 replays %s",
                  fakecuda_calls("cuDeviceGraphMemTrim") - trims, after);
    ck_assert_uint_ge(reserved(), GBYTES);
    ck_assert_uint_eq(rig_pool(0).spill_bytes, spilled);
    rig_expect_pattern(big, LIMIT - GBYTES - 8 * MiB, pattern, "the data the pool held");
}

/* A graph launched once on a new stream, its alloc nodes' memory idle in
 * the driver's graph pool, and device 0 filled to its limit around it
 * (pattern in *big, LIMIT - GBYTES - 8 MiB). */
static CUgraphExec settled_at_the_limit(CUstream *s, CUgraph *g, CUdeviceptr *big, int pattern)
{
    rig_setup(0);
    CU_OK(cuStreamCreate(s, CU_STREAM_NON_BLOCKING));
    CUgraphExec e = alloc_set_free(g);
    CU_OK(cuGraphLaunch(e, *s));
    CU_OK(cuStreamSynchronize(*s));
    ck_assert_uint_ge(reserved(), GBYTES); /* idle from now on */
    *big = rig_filled(LIMIT - GBYTES - 8 * MiB, pattern);
    return e;
}

static void settled_done(CUstream s, CUgraph g, CUgraphExec e, CUdeviceptr big)
{
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuMemFree(big));
    CU_OK(cuDeviceGraphMemTrim(0));
    CU_OK(cuStreamDestroy(s));
}

START_TEST(replays_after_a_first_launch_that_trimmed_do_not_trim)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUgraph g0, g1;
    CUgraphExec e0 = alloc_set_free(&g0);
    CU_OK(cuGraphLaunch(e0, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_ge(reserved(), GBYTES); /* idle from now on */
    CUdeviceptr big = rig_filled(LIMIT - GBYTES - 8 * MiB, 14);
    CUgraphExec e1 = alloc_set_free(&g1);
    CU_OK(cuGraphLaunch(e1, s)); /* room once e0's idle memory goes */
    CU_OK(cuStreamSynchronize(s));
    expect_replays_alone(e1, s, big, 14, "after a first launch that trimmed");
    CU_OK(cuGraphExecDestroy(e1));
    CU_OK(cuGraphDestroy(g1));
    CU_OK(cuGraphExecDestroy(e0));
    CU_OK(cuGraphDestroy(g0));
    CU_OK(cuMemFree(big));
    CU_OK(cuDeviceGraphMemTrim(0));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* The program frees its captured allocation t: once the graph pool is
 * trimmed, the device is as free as before the capture. */
static void freed_back_to(CUdeviceptr t, CUstream s, size_t before)
{
    CU_OK(cuMemFreeAsync(t, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuDeviceGraphMemTrim(0));
    ck_assert_uint_eq(free_now(), before);
}

/* A launch of e the driver refuses (fakecuda's injected fault). */
static void launch_refused(CUgraphExec e, CUstream s)
{
    ck_assert_int_eq(fakecuda_fault_config("cuGraphLaunch:1", NULL, 0), 0);
    ck_assert_int_eq(cuGraphLaunch(e, s), CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
    ck_assert_int_eq(fakecuda_fault_config(NULL, NULL, 0), 0);
}

/* A graph capturing cuMemAllocAsync: t, GBYTES, outliving the graph. */
static CUgraph capture_alloc(CUstream s, CUdeviceptr *t)
{
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    *t = 0;
    CU_OK(cuMemAllocAsync(t, GBYTES, s));
    CU_OK(cuMemsetD32Async(*t, 3u, GBYTES / 4, s));
    CUgraph g;
    CU_OK(cuStreamEndCapture(s, &g));
    return g;
}

/* A captured allocation whose graph never runs never had memory: once its
 * graph and executable graph are gone (a warm-up capture thrown away, a
 * graph instantiated and never launched), nothing of it counts. */
START_TEST(a_captured_allocation_never_run_goes_with_its_graphs)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    size_t before = free_now();
    CUdeviceptr t;
    CUgraph g = capture_alloc(s, &t);
    ck_assert_uint_eq(free_now() + GBYTES, before); /* counted from its capture */
    CU_OK(cuGraphDestroy(g));
    ck_assert_uint_eq(reserved(), 0);
    ck_assert_msg(free_now() == before, "free %zu MiB before the capture, %zu after its graph went",
                  before >> 20, free_now() >> 20);

    g = capture_alloc(s, &t); /* instantiated, never launched: the executable graph holds it */
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    CU_OK(cuGraphDestroy(g));
    ck_assert_uint_eq(free_now() + GBYTES, before);
    CU_OK(cuGraphExecDestroy(e));
    expect_free_as_before(before);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* An upload maps a graph's memory but starts no allocation: its lifetime
 * "begins when GPU execution reaches the allocating graph node". A graph
 * uploaded and never launched leaves its captured allocation nothing to
 * free: once its graphs go and the driver's pool is trimmed, nothing of it
 * counts. */
START_TEST(a_captured_allocation_only_uploaded_goes_with_its_graphs)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    size_t before = free_now();
    CUdeviceptr t;
    CUgraph g = capture_alloc(s, &t);
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    CU_OK(cuGraphUpload(e, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_ge(reserved(), GBYTES);
    graphs_gone_and_trimmed(e, g);
    ck_assert_uint_eq(reserved(), 0);
    expect_free_as_before(before);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* The first launch after an upload is not due (the upload settled it):
 * one the driver refuses ran nothing, and leaves the allocation to go with
 * its graphs; the launch after it that goes through runs it. */
START_TEST(a_refused_launch_after_an_upload_runs_nothing)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    size_t before = free_now();
    CUdeviceptr t;
    CUgraph g = capture_alloc(s, &t);
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    CU_OK(cuGraphUpload(e, s));
    CU_OK(cuStreamSynchronize(s));
    launch_refused(e, s);
    CU_OK(cuStreamSynchronize(s));
    graphs_gone_and_trimmed(e, g);
    ck_assert_uint_eq(reserved(), 0);
    expect_free_as_before(before);

    g = capture_alloc(s, &t); /* refused, then launched: it ran */
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    CU_OK(cuGraphUpload(e, s));
    launch_refused(e, s);
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    ck_assert_uint_eq(free_now() + GBYTES, before); /* live: the program's to free */
    unsigned word = 0;
    CU_OK(cuMemcpyDtoH(&word, t, sizeof word));
    ck_assert_uint_eq(word, 3u);
    freed_back_to(t, s, before);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* A first launch the driver refuses ran nothing either. */
START_TEST(a_refused_first_launch_runs_nothing)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    size_t before = free_now();
    CUdeviceptr t;
    CUgraph g = capture_alloc(s, &t);
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    launch_refused(e, s);
    graphs_gone_and_trimmed(e, g);
    expect_free_as_before(before);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* One that ran is live after its graphs go, until the program frees it. */
START_TEST(a_captured_allocation_that_ran_outlives_its_graphs)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    size_t before = free_now();
    CUdeviceptr t;
    CUgraph g = capture_alloc(s, &t);
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    ck_assert_uint_eq(free_now() + GBYTES, before);
    CU_OK(cuDeviceGraphMemTrim(0)); /* live: kept */
    ck_assert_uint_ge(reserved(), GBYTES);
    ck_assert_uint_eq(free_now() + GBYTES, before);
    unsigned word = 0;
    CU_OK(cuMemcpyDtoH(&word, t + GBYTES - sizeof word, sizeof word));
    ck_assert_uint_eq(word, 3u); /* the graph's data, still there */
    freed_back_to(t, s, before);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

START_TEST(an_invalidated_capture_leaves_nothing_counted)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    size_t before = free_now();
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr t = 0;
    CU_OK(cuMemAllocAsync(&t, GBYTES, s));
    ck_assert_int_eq(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUgraph g = NULL;
    ck_assert_int_eq(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    ck_assert_msg(free_now() == before, "free %zu MiB before, %zu after", before >> 20, free_now() >> 20);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* One thread allocates into a relaxed capture while another invalidates
 * and ends it: each allocation the driver captured has no memory once the
 * capture is lost, whether spillway noted it before, during or after the
 * end. A race: tried many times; the allocations made after the end are
 * plain ones, which the program frees. */
#define RACE_ALLOCS 32
struct racing_allocs {
    CUcontext ctx;
    CUstream s;
    atomic_int go, made, stop, done;
    CUdeviceptr p[RACE_ALLOCS];
};

static void *alloc_into_capture(void *arg)
{
    struct racing_allocs *a = arg;
    CU_OK(cuCtxSetCurrent(a->ctx));
    while (!atomic_load(&a->go))
        ;
    for (int i = 0; i < RACE_ALLOCS && !atomic_load(&a->stop); i++)
        if (cuMemAllocAsync(&a->p[atomic_load(&a->made)], MiB, a->s) == CUDA_SUCCESS)
            atomic_fetch_add(&a->made, 1);
    atomic_store(&a->done, 1); /* the main thread waits for one, or this */
    return NULL;
}

START_TEST(allocations_racing_a_lost_capture_leave_nothing_counted)
{
    struct racing_allocs a = {.ctx = rig_setup(0)};
    CU_OK(cuStreamCreate(&a.s, CU_STREAM_NON_BLOCKING));
    size_t before = free_now();
    for (int it = 0; it < 300; it++) {
        atomic_store(&a.go, 0);
        atomic_store(&a.made, 0);
        atomic_store(&a.stop, 0);
        atomic_store(&a.done, 0);
        CU_OK(cuStreamBeginCapture(a.s, CU_STREAM_CAPTURE_MODE_RELAXED));
        pthread_t th;
        ck_assert_int_eq(pthread_create(&th, NULL, alloc_into_capture, &a), 0);
        atomic_store(&a.go, 1);
        while (!atomic_load(&a.made) && !atomic_load(&a.done))
            ;
        ck_assert_msg(atomic_load(&a.made), "try %d: no allocation into the capture", it);
        for (volatile int k = 0; k < (it % 50) * 20; k++) /* a different moment each time */
            ;
        ck_assert_int_eq(cuStreamSynchronize(a.s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        CUgraph g = NULL;
        ck_assert_int_eq(cuStreamEndCapture(a.s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        atomic_store(&a.stop, 1);
        ck_assert_int_eq(pthread_join(th, NULL), 0);
        for (int i = 0; i < atomic_load(&a.made); i++)
            (void)cuMemFree(a.p[i]); /* the captured ones are no allocations: refused */
        CU_OK(cuStreamSynchronize(a.s));
        ck_assert_msg(free_now() == before, "try %d: free %zu MiB before, %zu after (%d allocations)",
                      it, before >> 20, free_now() >> 20, atomic_load(&a.made));
    }
    CU_OK(cuStreamDestroy(a.s));
}
END_TEST

/* A capture on a thread's per-thread default stream (CU_STREAM_PER_THREAD
 * names another stream in each thread) goes on while another thread's
 * capture is invalidated: its allocation stays counted, as its graph will
 * run it. */
struct ptds_capture {
    CUcontext ctx;
    pthread_barrier_t allocated, other_ended;
    CUdeviceptr t;
    CUgraph g;
};

static void *capture_on_ptds(void *arg)
{
    struct ptds_capture *c = arg;
    CU_OK(cuCtxSetCurrent(c->ctx));
    CU_OK(cuStreamBeginCapture(CU_STREAM_PER_THREAD, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU_OK(cuMemAllocAsync(&c->t, GBYTES, CU_STREAM_PER_THREAD));
    pthread_barrier_wait(&c->allocated);
    pthread_barrier_wait(&c->other_ended);
    CU_OK(cuMemsetD32Async(c->t, 5u, GBYTES / 4, CU_STREAM_PER_THREAD));
    CU_OK(cuStreamEndCapture(CU_STREAM_PER_THREAD, &c->g));
    return NULL;
}

START_TEST(another_threads_invalidated_capture_leaves_a_ptds_capture_counted)
{
    struct ptds_capture c = {.ctx = rig_setup(0)};
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    size_t before = free_now();
    ck_assert_int_eq(pthread_barrier_init(&c.allocated, NULL, 2), 0);
    ck_assert_int_eq(pthread_barrier_init(&c.other_ended, NULL, 2), 0);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, capture_on_ptds, &c), 0);
    pthread_barrier_wait(&c.allocated);
    ck_assert_uint_eq(free_now() + GBYTES, before);
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    ck_assert_int_eq(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUgraph lost = NULL;
    ck_assert_int_eq(cuStreamEndCapture(s, &lost), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    size_t now = free_now();
    pthread_barrier_wait(&c.other_ended);
    ck_assert_int_eq(pthread_join(th, NULL), 0);
    ck_assert_msg(now + GBYTES == before,
                  "free %zu MiB before, %zu while the other thread's capture still held its "
                  "allocation", before >> 20, now >> 20);
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, c.g, 0));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_eq(free_now() + GBYTES, before); /* live: counted once */
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(c.g));
    CU_OK(cuMemFree(c.t));
    CU_OK(cuDeviceGraphMemTrim(0));
    ck_assert_uint_eq(free_now(), before);
    pthread_barrier_destroy(&c.allocated);
    pthread_barrier_destroy(&c.other_ended);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* A capture that gives its graph while another thread's capture is lost:
 * the lost one's end leaves the graph's allocations counted (they are the
 * graph's, to count until it goes unrun). Many rounds: the two ends race. */
struct lose_loop {
    CUcontext ctx;
    _Atomic int stop;
};

static void *lose_captures(void *arg)
{
    struct lose_loop *l = arg;
    CU_OK(cuCtxSetCurrent(l->ctx));
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    while (!atomic_load(&l->stop)) {
        CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
        ck_assert_int_eq(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        CUgraph g = NULL;
        ck_assert_int_eq(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    }
    CU_OK(cuStreamDestroy(s));
    return NULL;
}

START_TEST(a_capture_ending_with_a_graph_stays_counted_while_another_is_lost)
{
    struct lose_loop l = {.ctx = rig_setup(0)};
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    size_t before = free_now();
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, lose_captures, &l), 0);
    int lost = 0, rounds = 100000; /* without the fix: lost within some 50000 */
    for (int i = 0; i < rounds && !lost; i++) {
        CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
        CUdeviceptr t;
        CU_OK(cuMemAllocAsync(&t, GBYTES, s));
        CUgraph g;
        CU_OK(cuStreamEndCapture(s, &g));
        if (free_now() + GBYTES != before)
            lost = i + 1;
        CU_OK(cuGraphDestroy(g)); /* never run: uncounted */
    }
    atomic_store(&l.stop, 1);
    ck_assert_int_eq(pthread_join(th, NULL), 0);
    ck_assert_msg(!lost, "round %d: a graph's captured allocation uncounted by another "
                  "thread's lost capture", lost);
    ck_assert_uint_eq(free_now(), before);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* A captured allocation that ran is graph memory, stream-ordered: the
 * device's graph pool keeps it through a reset of the primary context
 * (only cuMemAlloc-class memory dies with a context), so it stays counted
 * until the program frees it. */
START_TEST(a_live_captured_allocation_stays_counted_through_a_primary_reset)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    size_t before = free_now();
    CUdeviceptr t;
    CUgraph g = capture_alloc(s, &t);
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuStreamDestroy(s));
    ck_assert_uint_eq(free_now() + GBYTES, before);
    CU_OK(cuDevicePrimaryCtxReset(0));
    rig_setup(0);
    unsigned word = 0;
    CU_OK(cuMemcpyDtoH(&word, t + GBYTES - sizeof word, sizeof word));
    ck_assert_uint_eq(word, 3u); /* live: the driver kept it */
    ck_assert_msg(free_now() + GBYTES == before,
                  "free %zu MiB before, %zu after the reset with the allocation still live",
                  before >> 20, free_now() >> 20);
    CU_OK(cuMemFree(t));
    CU_OK(cuDeviceGraphMemTrim(0));
    ck_assert_uint_eq(free_now(), before);
}
END_TEST

/* A graph whose alloc nodes are on two devices: each device's first
 * launch reserves (and is held) only the nodes placed on it (their
 * poolProps.location), so a graph each device has room for runs. */
START_TEST(a_graph_on_two_devices_holds_each_its_own_nodes)
{
    rig_setup(0);
    int n = 0;
    CU_OK(cuDeviceGetCount(&n));
    ck_assert_int_ge(n, 2); /* graph_mem.sh: two devices */
    rig_setup(1);
    CUdeviceptr one;
    CU_OK(cuMemAlloc(&one, MiB)); /* device 1's stats are published */
    CU_OK(cuMemFree(one));
    rig_setup(0);
    CU_OK(cuMemAlloc(&one, MiB));
    CU_OK(cuMemFree(one));
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    const size_t share = 40 * MiB; /* of a 64 MiB limit: both shares would not fit one device */
    CUgraph g;
    CU_OK(cuGraphCreate(&g, 0));
    for (int dev = 0; dev < 2; dev++) {
        CUDA_MEM_ALLOC_NODE_PARAMS ap = {0};
        ap.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        ap.poolProps.location.id = dev;
        ap.bytesize = share;
        CUgraphNode a, f;
        CU_OK(cuGraphAddMemAllocNode(&a, g, NULL, 0, &ap));
        CU_OK(cuGraphAddMemFreeNode(&f, g, &a, 1, ap.dptr));
    }
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    uint64_t pass[2] = {rig_stat(0, SPW_C_PASS_CAPTURE), rig_stat(1, SPW_C_PASS_CAPTURE)};
    CUresult r = cuGraphLaunch(e, s);
    ck_assert_msg(r == CUDA_SUCCESS, "a launch of %zu MiB on each of two devices: error %d",
                  share >> 20, (int)r);
    CU_OK(cuStreamSynchronize(s));
    for (int dev = 0; dev < 2; dev++) {
        cuuint64_t v = 0;
        CU_OK(cuDeviceGetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &v));
        ck_assert_uint_ge(v, share);
        uint64_t now = rig_stat(dev, SPW_C_PASS_CAPTURE);
        ck_assert_msg(now >= pass[dev] + share && now < pass[dev] + 2 * share,
                      "device %d: %llu MiB counted for a %zu MiB share", dev,
                      (unsigned long long)((now - pass[dev]) >> 20), share >> 20);
    }
    CU_OK(cuGraphLaunch(e, s)); /* a replay */
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    for (int dev = 0; dev < 2; dev++) {
        CU_OK(cuDeviceGraphMemTrim(dev));
        ck_assert_uint_eq(rig_stat(dev, SPW_C_PASS_CAPTURE), pass[dev]);
    }
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* A trim of one device gives back nothing of another's graph memory: the
 * graphs on the other device replay on what they have, with no hold and no
 * trim there (at that device's limit, one would have trimmed the graph's
 * own idle memory for the launch to map again). */
START_TEST(a_trim_of_another_device_leaves_replays_alone)
{
    CUstream s;
    CUgraph g;
    CUdeviceptr big;
    CUgraphExec e = settled_at_the_limit(&s, &g, &big, 15);
    CU_OK(cuDeviceGraphMemTrim(1)); /* the program's, of the other device */
    expect_replays_alone(e, s, big, 15, "after a trim of device 1");
    settled_done(s, g, e, big);
}
END_TEST

/* An update of a settled graph's node parameters (cuGraphExecUpdate from
 * its own graph, a memset value changed) leaves its alloc nodes as they
 * were (the driver refuses an update that changes them): its replays at
 * the limit stay replays, with no trim of the memory they reuse. */
START_TEST(an_update_leaves_replays_alone)
{
    CUstream s;
    CUgraph g;
    CUdeviceptr big;
    CUgraphExec e = settled_at_the_limit(&s, &g, &big, 16);
    size_t n = 0;
    CU_OK(cuGraphGetNodes(g, NULL, &n));
    ck_assert_uint_eq(n, 3);
    CUgraphNode nodes[3];
    CU_OK(cuGraphGetNodes(g, nodes, &n));
    CUDA_MEMSET_NODE_PARAMS mp;
    CU_OK(cuGraphMemsetNodeGetParams(nodes[1], &mp));
    mp.value = 9;
    CU_OK(cuGraphMemsetNodeSetParams(nodes[1], &mp));
    CUgraphExecUpdateResultInfo info;
    CU_OK(cuGraphExecUpdate(e, g, &info));
    ck_assert_int_eq(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
    expect_replays_alone(e, s, big, 16, "after an update");
    settled_done(s, g, e, big);
}
END_TEST

/* An executable graph whose nodes could not be read at its instantiation
 * (the driver's listing failed, or memory for it ran out) may still hold
 * and run a captured allocation: when its graph goes, that allocation must
 * stay counted, not be taken for one no graph can run. */
START_TEST(a_graph_unread_at_instantiation_keeps_its_captured_allocation_counted)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    size_t before = free_now();
    CUdeviceptr t;
    CUgraph g = capture_alloc(s, &t);
    CUgraphExec e;
    ck_assert_int_eq(fakecuda_fault_config("cuGraphGetNodes:1-", NULL, 0), 0);
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    ck_assert_int_eq(fakecuda_fault_config(NULL, NULL, 0), 0);
    CU_OK(cuGraphDestroy(g));
    ck_assert_msg(free_now() + GBYTES == before,
                  "free %zu MiB before the capture, %zu with its executable graph alive",
                  before >> 20, free_now() >> 20);
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuGraphExecDestroy(e));
    ck_assert_uint_eq(free_now() + GBYTES, before); /* live: the program's to free */
    freed_back_to(t, s, before);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* A first launch onto a stream that is not capturing reserves its memory
 * even while another stream captures (another thread's capture, or this
 * thread's in relaxed mode): its replays are replays, with no hold and no
 * trim (at the limit each would trim the graph's own idle memory, which
 * the launch then maps again, or spill the pool's data). */
START_TEST(a_first_launch_during_another_streams_capture_settles)
{
    rig_setup(0);
    CUstream s, other;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    CUdeviceptr big = rig_filled(LIMIT - GBYTES - 8 * MiB, 13);
    CUgraph g;
    CUgraphExec e = alloc_set_free(&g);
    CU_OK(cuStreamBeginCapture(other, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU_OK(cuGraphLaunch(e, s)); /* its first: s is not capturing */
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_ge(reserved(), GBYTES);
    long long trims = fakecuda_calls("cuDeviceGraphMemTrim");
    uint64_t spilled = rig_pool(0).spill_bytes;
    for (int i = 0; i < 4; i++) {
        CU_OK(cuGraphLaunch(e, s));
        CU_OK(cuStreamSynchronize(s));
    }
    long long more = fakecuda_calls("cuDeviceGraphMemTrim") - trims;
    uint64_t spill = rig_pool(0).spill_bytes - spilled;
    CUgraph captured;
    CU_OK(cuStreamEndCapture(other, &captured));
    CU_OK(cuGraphDestroy(captured));
    ck_assert_msg(more == 0 && spill == 0,
                  "4 replays during another stream's capture: %lld trims, %llu MiB spilled", more,
                  (unsigned long long)(spill >> 20));
    rig_expect_pattern(big, LIMIT - GBYTES - 8 * MiB, 13, "the data the pool held");
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuMemFree(big));
    CU_OK(cuDeviceGraphMemTrim(0));
    CU_OK(cuStreamDestroy(other));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* A graph allocation a replay made again (its capture's count went with
 * the program's first free) is live through a trim; once the program frees
 * it, its memory is idle, and an allocation at the limit trims it rather
 * than spill the pool's data (PyTorch's cudaMallocAsync backend frees each
 * replay's outputs this way). */
START_TEST(a_replays_allocation_freed_after_a_trim_is_trimmed_at_the_limit)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr t;
    CUgraph g = capture_alloc(s, &t);
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuMemFreeAsync(t, s)); /* counted until here as captured */
    CU_OK(cuGraphLaunch(e, s)); /* live again: the graph pool's */
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuDeviceGraphMemTrim(0)); /* live: kept */
    ck_assert_uint_ge(reserved(), GBYTES);
    CU_OK(cuMemFreeAsync(t, s)); /* idle from now on */
    CU_OK(cuStreamSynchronize(s));
    CUdeviceptr big = rig_filled(LIMIT - GBYTES - 4 * MiB, 12);
    uint64_t spilled = rig_pool(0).spill_bytes;
    CUdeviceptr more;
    CU_OK(cuMemAlloc(&more, GBYTES)); /* room only once the graph pool's idle memory goes */
    ck_assert_msg(reserved() == 0 && rig_pool(0).spill_bytes == spilled,
                  "graph pool: %llu MiB reserved; %llu MiB of the pool's data spilled",
                  (unsigned long long)(reserved() >> 20),
                  (unsigned long long)((rig_pool(0).spill_bytes - spilled) >> 20));
    rig_expect_pattern(big, LIMIT - GBYTES - 4 * MiB, 12, "the data the pool held");
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuMemFree(more));
    CU_OK(cuMemFree(big));
    CU_OK(cuDeviceGraphMemTrim(0));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("shim_graph_mem");
    TCase *tc = tcase_create("graph_mem");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_launch_counts_what_the_graph_pool_reserves);
    tcase_add_test(tc, an_instantiate_with_upload_counts_what_the_graph_pool_reserves);
    tcase_add_test(tc, an_allocation_at_the_limit_trims_idle_graph_memory);
    tcase_add_test(tc, a_handle_at_the_limit_trims_idle_graph_memory);
    tcase_add_test(tc, a_live_captured_allocation_counts_once);
    tcase_add_test(tc, a_captured_allocation_never_run_goes_with_its_graphs);
    tcase_add_test(tc, a_captured_allocation_that_ran_outlives_its_graphs);
    tcase_add_test(tc, a_replays_allocation_freed_after_a_trim_is_trimmed_at_the_limit);
    tcase_add_test(tc, a_captured_allocation_only_uploaded_goes_with_its_graphs);
    tcase_add_test(tc, a_refused_launch_after_an_upload_runs_nothing);
    tcase_add_test(tc, a_refused_first_launch_runs_nothing);
    tcase_add_test(tc, a_graph_unread_at_instantiation_keeps_its_captured_allocation_counted);
    tcase_add_test(tc, an_invalidated_capture_leaves_nothing_counted);
    tcase_add_test(tc, allocations_racing_a_lost_capture_leave_nothing_counted);
    tcase_add_test(tc, another_threads_invalidated_capture_leaves_a_ptds_capture_counted);
    tcase_add_test(tc, a_capture_ending_with_a_graph_stays_counted_while_another_is_lost);
    tcase_add_test(tc, a_live_captured_allocation_stays_counted_through_a_primary_reset);
    tcase_add_test(tc, replays_after_a_first_launch_that_trimmed_do_not_trim);
    tcase_add_test(tc, a_first_launch_during_another_streams_capture_settles);
    tcase_add_test(tc, a_graph_on_two_devices_holds_each_its_own_nodes);
    tcase_add_test(tc, a_trim_of_another_device_leaves_replays_alone);
    tcase_add_test(tc, an_update_leaves_replays_alone);
    suite_add_tcase(s, tc);
    return s;
}
