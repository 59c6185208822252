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
 *
 * Run by capture.sh: one 256 MiB device, a 64 MiB limit. */
#include "tests/integration/shim/rig.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LIMIT (64 * MiB)

static CUcontext ctx;

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

/* ---- the buffers a graph works on ------------------------------------------ */

#define NBUF 10
#define BUF (4 * MiB)

struct bufs {
    int n; /* up to NBUF */
    CUdeviceptr d[NBUF];
    uint32_t *want[NBUF];
};

static void bufs_make(struct bufs *b, int n, unsigned seed)
{
    b->n = n;
    for (int i = 0; i < n; i++) {
        b->d[i] = rig_filled(BUF, seed + (unsigned)i);
        b->want[i] = rig_expected(BUF, seed + (unsigned)i);
    }
}

static void bufs_step(struct bufs *b, int i, unsigned k)
{
    for (size_t j = 0; j < BUF / 4; j++)
        b->want[i][j] = rig_step(b->want[i][j], k);
}

static void bufs_check(struct bufs *b, const char *what)
{
    for (int i = 0; i < b->n; i++)
        rig_expect_words(b->d[i], b->want[i], BUF, what);
}

static void bufs_free(struct bufs *b)
{
    for (int i = 0; i < b->n; i++) {
        CU_OK(cuMemFree(b->d[i]));
        free(b->want[i]);
    }
}

static void launch_step(CUfunction f, CUstream s, CUdeviceptr p, unsigned k)
{
    size_t n = BUF / 4;
    void *args[] = {&p, &n, &k};
    CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
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

/* ---- replays under spill pressure -------------------------------------------- */

#define REPLAYS 100

typedef CUresult (*instantiate_fn)(CUgraphExec *, CUgraph, unsigned long long);

/* The graph a replay test captures: half the buffers (20 MiB), and a
 * squeeze that leaves room for 4 MiB of them. Every replay's kernels touch
 * every page filled back, at a mapping made anew: the cost of a replay on
 * fakecuda, a hundred times over. */
#define REPLAY_BUFS (NBUF / 2)
#define REPLAY_ROOM (4 * MiB)

/* Captures a step of every buffer, instantiates it with inst and replays
 * it `replays` times, squeezing the buffers out before each replay. */
static void replay_under_pressure(instantiate_fn inst, int replays)
{
    ctx = rig_setup(0);
    CUfunction step = rig_kernel("step_u32");
    struct bufs b;
    bufs_make(&b, REPLAY_BUFS, 200);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int i = 0; i < b.n; i++)
        launch_step(step, s, b.d[i], (unsigned)i);
    CUgraph g;
    CU_OK(cuStreamEndCapture(s, &g));
    CUgraphExec e;
    CU_OK(inst(&e, g, 0));
    uint64_t fills = rig_pool(0).fill_events;
    size_t away = 0;
    for (int r = 0; r < replays; r++) {
        rig_squeeze(LIMIT - REPLAY_ROOM);
        for (int i = 0; i < b.n; i++)
            away += BUF - rig_resident(b.d[i], BUF, 0);
        CU_OK(cuGraphLaunch(e, s));
        CU_OK(cuStreamSynchronize(s));
        for (int i = 0; i < b.n; i++) {
            bufs_step(&b, i, (unsigned)i);
            ck_assert_msg(rig_resident(b.d[i], BUF, 0) == BUF,
                          "replay %d: buffer %d has %zu of %zu bytes on the device", r, i,
                          rig_resident(b.d[i], BUF, 0), BUF);
        }
    }
    /* Every squeeze sent most of the graph's data away (all but the room
     * it left), every replay brought it back. */
    ck_assert_uint_ge(away, (size_t)replays * ((size_t)b.n * BUF - REPLAY_ROOM));
    ck_assert_uint_ge(rig_pool(0).fill_events, fills + (uint64_t)replays);
    bufs_check(&b, "a buffer after the replays");
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuStreamDestroy(s));
    bufs_free(&b);
}

START_TEST(replays_fill_the_graph_back)
{
    replay_under_pressure(cuGraphInstantiateWithFlags, REPLAYS);
}
END_TEST

/* The runtime asks for "cuGraphInstantiate" at 12000: the flags ABI, the
 * same handler. */
START_TEST(runtime_name_of_instantiate)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult found;
    ck_assert_int_eq(cuInit(0), CUDA_SUCCESS);
    CU_OK(cuGetProcAddress("cuGraphInstantiate", &fn, 12000, 0, &found));
    ck_assert_ptr_nonnull(fn);
    replay_under_pressure((instantiate_fn)fn, 10);
}
END_TEST

/* A kernel node of an executable graph pointed at another buffer: the
 * replays fill that one. */
START_TEST(exec_set_params_fills_the_new_buffer)
{
    ctx = rig_setup(0);
    CUfunction step = rig_kernel("step_u32");
    CUdeviceptr a = rig_filled(BUF, 300), c = rig_filled(BUF, 301);
    uint32_t *want = rig_expected(BUF, 301);
    CUgraph g;
    CU_OK(cuGraphCreate(&g, 0));
    size_t n = BUF / 4;
    unsigned k = 7;
    void *args[] = {&a, &n, &k};
    CUDA_KERNEL_NODE_PARAMS kp = {.func = step, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                  .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1,
                                  .kernelParams = args};
    CUgraphNode node;
    CU_OK(cuGraphAddKernelNode(&node, g, NULL, 0, &kp));
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    args[0] = &c;
    CU_OK(cuGraphExecKernelNodeSetParams(e, node, &kp));
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int r = 0; r < 10; r++) {
        rig_squeeze(LIMIT - 2 * MiB);
        ck_assert_uint_lt(rig_resident(c, BUF, 0), BUF);
        CU_OK(cuGraphLaunch(e, s));
        CU_OK(cuStreamSynchronize(s));
        ck_assert_uint_eq(rig_resident(c, BUF, 0), BUF);
        for (size_t j = 0; j < n; j++)
            want[j] = rig_step(want[j], k);
    }
    rig_expect_words(c, want, BUF, "the buffer the exec node was given");
    rig_expect_pattern(a, BUF, 300, "the buffer the node had first");
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuStreamDestroy(s));
    free(want);
}
END_TEST

/* ---- every way an executable graph gets its buffers ---------------------------- */

/* What a graph of one node does to buffer p: a kernel step, a set, a copy
 * out, or a child graph holding a kernel step. */
enum node_kind { KERNEL, MEMSET, MEMCPY, CHILD };

struct one_node {
    CUgraph g;
    CUgraphNode node;
    CUdeviceptr p;   /* the buffer its parameters name */
    size_t n;        /* the kernel's arguments */
    unsigned k;
    void *args[3];
    CUDA_KERNEL_NODE_PARAMS kp;
    CUDA_MEMSET_NODE_PARAMS mp;
    CUDA_MEMCPY3D cp;
    CUgraph child;
};

static void *sink; /* pinned host memory the copies go to */

static void one_node_make(struct one_node *o, enum node_kind kind, CUfunction step, CUdeviceptr p)
{
    memset(o, 0, sizeof *o);
    o->p = p;
    o->n = BUF / 4;
    o->k = 7;
    o->args[0] = &o->p;
    o->args[1] = &o->n;
    o->args[2] = &o->k;
    o->kp = (CUDA_KERNEL_NODE_PARAMS){.func = step, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                      .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1,
                                      .kernelParams = o->args};
    o->mp = (CUDA_MEMSET_NODE_PARAMS){.dst = p, .value = 0x77777777u, .elementSize = 4,
                                      .width = BUF / 4, .height = 1};
    o->cp.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    o->cp.srcDevice = p;
    o->cp.dstMemoryType = CU_MEMORYTYPE_HOST;
    o->cp.dstHost = sink;
    o->cp.WidthInBytes = BUF;
    o->cp.Height = o->cp.Depth = 1;
    CU_OK(cuGraphCreate(&o->g, 0));
    if (kind == KERNEL) {
        CU_OK(cuGraphAddKernelNode(&o->node, o->g, NULL, 0, &o->kp));
    } else if (kind == MEMSET) {
        CU_OK(cuGraphAddMemsetNode(&o->node, o->g, NULL, 0, &o->mp, ctx));
    } else if (kind == MEMCPY) {
        CU_OK(cuGraphAddMemcpyNode(&o->node, o->g, NULL, 0, &o->cp, ctx));
    } else {
        CUgraphNode inner;
        CU_OK(cuGraphCreate(&o->child, 0));
        CU_OK(cuGraphAddKernelNode(&inner, o->child, NULL, 0, &o->kp));
        CU_OK(cuGraphAddChildGraphNode(&o->node, o->g, NULL, 0, o->child));
    }
}

static void one_node_free(struct one_node *o)
{
    CU_OK(cuGraphDestroy(o->g));
    if (o->child)
        CU_OK(cuGraphDestroy(o->child));
}

enum how {
    EXEC_KERNEL_SET, EXEC_NODE_SET, EXEC_UPDATE, EXEC_MEMSET_SET, EXEC_MEMCPY_SET,
    EXEC_CHILD_SET, INSTANTIATED_WITH_PARAMS,
    /* The ABIs runtimes before CUDA 12 ask cuGetProcAddress for. */
    EXEC_KERNEL_SET_V1, EXEC_UPDATE_V1, INSTANTIATED_V1, INSTANTIATED_V2
};

/* CUDA 10.0/11.0's instantiate (error node and log), 10.2's update (error
 * node and result), 10.1's kernel node set (the parameters without kern
 * and ctx). */
typedef CUresult (*instantiate_v1_fn)(CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t);
typedef CUresult (*update_v1_fn)(CUgraphExec, CUgraph, CUgraphNode *, CUgraphExecUpdateResult *);
typedef CUresult (*kernel_set_v1_fn)(CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS_v1 *);

static void *old_abi(const char *name, int version)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult q;
    CU_OK(cuGetProcAddress(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &q));
    ck_assert_ptr_nonnull(fn);
    return fn;
}

static const struct way {
    enum node_kind kind;
    enum how how;
    const char *name;
} ways[] = {
    {KERNEL, EXEC_KERNEL_SET, "cuGraphExecKernelNodeSetParams"},
    {KERNEL, EXEC_NODE_SET, "cuGraphExecNodeSetParams (kernel)"},
    {KERNEL, EXEC_UPDATE, "cuGraphExecUpdate (kernel)"},
    {MEMSET, EXEC_MEMSET_SET, "cuGraphExecMemsetNodeSetParams"},
    {MEMSET, EXEC_NODE_SET, "cuGraphExecNodeSetParams (memset)"},
    {MEMCPY, EXEC_MEMCPY_SET, "cuGraphExecMemcpyNodeSetParams"},
    {MEMCPY, EXEC_NODE_SET, "cuGraphExecNodeSetParams (memcpy)"},
    {CHILD, EXEC_CHILD_SET, "cuGraphExecChildGraphNodeSetParams"},
    {CHILD, EXEC_NODE_SET, "cuGraphExecNodeSetParams (child graph)"},
    {CHILD, EXEC_UPDATE, "cuGraphExecUpdate (child graph)"},
    {CHILD, INSTANTIATED_WITH_PARAMS, "cuGraphInstantiateWithParams (child graph)"},
    {MEMCPY, INSTANTIATED_WITH_PARAMS, "cuGraphInstantiateWithParams (memcpy)"},
    {KERNEL, EXEC_KERNEL_SET_V1, "cuGraphExecKernelNodeSetParams (CUDA 10.1)"},
    {KERNEL, EXEC_UPDATE_V1, "cuGraphExecUpdate (CUDA 10.2)"},
    {CHILD, EXEC_UPDATE_V1, "cuGraphExecUpdate (CUDA 10.2, child graph)"},
    {MEMCPY, INSTANTIATED_V1, "cuGraphInstantiate (CUDA 10.0)"},
    {KERNEL, INSTANTIATED_V2, "cuGraphInstantiate (CUDA 11.0)"},
};

/* An executable graph of graph a (naming buffer a) made to name buffer c
 * instead, the way w says (or instantiated from c's graph). */
static CUgraphExec exec_naming(const struct way *w, struct one_node *a, struct one_node *c, CUstream s)
{
    CUgraphExec e;
    if (w->how == INSTANTIATED_WITH_PARAMS) {
        CUDA_GRAPH_INSTANTIATE_PARAMS ip = {.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD,
                                            .hUploadStream = s};
        CU_OK(cuGraphInstantiateWithParams(&e, c->g, &ip));
        return e;
    }
    if (w->how == INSTANTIATED_V1 || w->how == INSTANTIATED_V2) {
        instantiate_v1_fn inst =
            (instantiate_v1_fn)old_abi("cuGraphInstantiate", w->how == INSTANTIATED_V1 ? 10000 : 11000);
        CUgraphNode err = NULL;
        char log[64];
        CU_OK(inst(&e, c->g, &err, log, sizeof log));
        return e;
    }
    CU_OK(cuGraphInstantiateWithFlags(&e, a->g, 0));
    CUgraphNodeParams np;
    memset(&np, 0, sizeof np);
    CUgraphExecUpdateResultInfo info;
    switch (w->how) {
    case EXEC_KERNEL_SET:
        CU_OK(cuGraphExecKernelNodeSetParams(e, a->node, &c->kp));
        break;
    case EXEC_MEMSET_SET:
        CU_OK(cuGraphExecMemsetNodeSetParams(e, a->node, &c->mp, ctx));
        break;
    case EXEC_MEMCPY_SET:
        CU_OK(cuGraphExecMemcpyNodeSetParams(e, a->node, &c->cp, ctx));
        break;
    case EXEC_CHILD_SET:
        CU_OK(cuGraphExecChildGraphNodeSetParams(e, a->node, c->child));
        break;
    case EXEC_UPDATE:
        CU_OK(cuGraphExecUpdate(e, c->g, &info));
        break;
    case EXEC_KERNEL_SET_V1: {
        CUDA_KERNEL_NODE_PARAMS_v1 k1 = {
            .func = c->kp.func, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
            .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1, .kernelParams = c->kp.kernelParams};
        CU_OK(((kernel_set_v1_fn)old_abi("cuGraphExecKernelNodeSetParams", 10010))(e, a->node, &k1));
        break;
    }
    case EXEC_UPDATE_V1: {
        CUgraphNode err = NULL;
        CUgraphExecUpdateResult res;
        CU_OK(((update_v1_fn)old_abi("cuGraphExecUpdate", 10020))(e, c->g, &err, &res));
        break;
    }
    case EXEC_NODE_SET:
        if (w->kind == KERNEL) {
            np.type = CU_GRAPH_NODE_TYPE_KERNEL;
            np.kernel.func = c->kp.func;
            np.kernel.gridDimX = np.kernel.gridDimY = np.kernel.gridDimZ = 1;
            np.kernel.blockDimX = np.kernel.blockDimY = np.kernel.blockDimZ = 1;
            np.kernel.kernelParams = c->kp.kernelParams;
        } else if (w->kind == MEMSET) {
            np.type = CU_GRAPH_NODE_TYPE_MEMSET;
            np.memset.dst = c->mp.dst;
            np.memset.value = c->mp.value;
            np.memset.elementSize = c->mp.elementSize;
            np.memset.width = c->mp.width;
            np.memset.height = c->mp.height;
            np.memset.ctx = ctx;
        } else if (w->kind == MEMCPY) {
            np.type = CU_GRAPH_NODE_TYPE_MEMCPY;
            np.memcpy.copyCtx = ctx;
            np.memcpy.copyParams = c->cp;
        } else {
            np.type = CU_GRAPH_NODE_TYPE_GRAPH;
            np.graph.graph = c->child;
        }
        CU_OK(cuGraphExecNodeSetParams(e, a->node, &np));
        break;
    default:
        break;
    }
    return e;
}

/* However an executable graph came to name a buffer (a node's parameters
 * set in it, an update, a child graph, a child graph set in it, an
 * instantiation with parameters), its replays fill that buffer back. */
START_TEST(every_way_of_naming_a_buffer_fills_it_at_replay)
{
    ctx = rig_setup(0);
    CUfunction step = rig_kernel("step_u32");
    CU_OK(cuMemAllocHost(&sink, BUF));
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (size_t i = 0; i < sizeof ways / sizeof ways[0]; i++) {
        const struct way *w = &ways[i];
        CUdeviceptr a = rig_filled(BUF, 600), c = rig_filled(BUF, 601);
        struct one_node ga, gc;
        one_node_make(&ga, w->kind, step, a);
        one_node_make(&gc, w->kind, step, c);
        CUgraphExec e = exec_naming(w, &ga, &gc, s);
        for (int r = 0; r < 3; r++) {
            rig_squeeze(LIMIT - 2 * MiB);
            ck_assert_msg(rig_resident(c, BUF, 0) < BUF, "%s: nothing spilled", w->name);
            CU_OK(cuGraphLaunch(e, s));
            CU_OK(cuStreamSynchronize(s));
            ck_assert_msg(rig_resident(c, BUF, 0) == BUF,
                          "%s, replay %d: %zu of %zu bytes of the buffer it names on the device",
                          w->name, r, rig_resident(c, BUF, 0), BUF);
        }
        rig_expect_pattern(a, BUF, 600, "the buffer the graph named first");
        if (w->kind == MEMCPY)
            rig_expect_pattern(c, BUF, 601, "the buffer copied out");
        CU_OK(cuGraphExecDestroy(e));
        one_node_free(&ga);
        one_node_free(&gc);
        CU_OK(cuMemFree(a));
        CU_OK(cuMemFree(c));
        CU_OK(cuCtxSynchronize());
    }
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFreeHost(sink));
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

/* ---- conditional nodes' bodies ------------------------------------------------ */

void fakecuda_cond_kernel_register(void); /* tests/unit/driver/kernels.c */

static size_t conditionals(void)
{
    size_t (*get)(void) = (size_t (*)(void))dlsym(RTLD_DEFAULT, "spillway_graph_conditionals");
    ck_assert_ptr_nonnull(get);
    return get();
}

/* A conditional node of g on a new handle of default def (applied at each
 * launch); its bodies in *body. */
static CUgraphNode cond_node(CUgraph g, CUgraphConditionalNodeType type, unsigned def,
                             CUgraphConditionalHandle *h, CUgraph **body)
{
    CU_OK(cuGraphConditionalHandleCreate(h, g, ctx, def, CU_GRAPH_COND_ASSIGN_DEFAULT));
    CUgraphNodeParams p;
    memset(&p, 0, sizeof p);
    p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    p.conditional.handle = *h;
    p.conditional.type = type;
    p.conditional.size = 1;
    p.conditional.ctx = ctx;
    CUgraphNode n;
    CU_OK(cuGraphAddNode(&n, g, NULL, NULL, 0, &p));
    *body = p.conditional.phGraph_out;
    return n;
}

/* A WHILE loop of a graph (XLA's while loops in command buffers): its
 * body steps a buffer, then a kernel counts the iteration and sets the
 * loop's value (what cudaGraphSetConditional does on a GPU) to go on
 * until the third. Squeezed out before each launch, the buffer is filled
 * back by the launch: the body's kernel names it, and spillway walks the
 * bodies it recorded when the node was made (without that, every
 * iteration would read it over the bus). */
START_TEST(a_while_loops_buffer_is_filled_back_at_replay)
{
    ctx = rig_setup(0);
    fakecuda_cond_kernel_register();
    CUfunction step = rig_kernel("step_u32"), count = rig_kernel("cond_count");
    CUdeviceptr b = rig_filled(BUF, 610);
    unsigned *counter;
    CU_OK(cuMemAllocHost((void **)&counter, sizeof *counter));
    size_t before = conditionals();
    CUgraph g, *body;
    CUgraphConditionalHandle h;
    CU_OK(cuGraphCreate(&g, 0));
    cond_node(g, CU_GRAPH_COND_TYPE_WHILE, 1, &h, &body);
    ck_assert_uint_eq(conditionals(), before + 1);
    size_t words = BUF / 4;
    unsigned k = 3, limit = 3;
    void *step_args[] = {&b, &words, &k};
    CUDA_KERNEL_NODE_PARAMS sp = {.func = step, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                  .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1, .kernelParams = step_args};
    void *count_args[] = {&h, &counter, &limit};
    CUDA_KERNEL_NODE_PARAMS cp = sp;
    cp.func = count;
    cp.kernelParams = count_args;
    CUgraphNode s_node, c_node;
    CU_OK(cuGraphAddKernelNode(&s_node, body[0], NULL, 0, &sp));
    CU_OK(cuGraphAddKernelNode(&c_node, body[0], &s_node, 1, &cp));
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    uint32_t *want = rig_expected(BUF, 610);
    for (int r = 0; r < 3; r++) {
        *counter = 0;
        rig_squeeze(LIMIT - 2 * MiB);
        ck_assert_msg(rig_resident(b, BUF, 0) < BUF, "replay %d: nothing spilled", r);
        CU_OK(cuGraphLaunch(e, s));
        CU_OK(cuStreamSynchronize(s));
        ck_assert_uint_eq(*counter, limit); /* the default again at each launch: 3 iterations */
        ck_assert_msg(rig_resident(b, BUF, 0) == BUF,
                      "replay %d: %zu of %zu bytes of the loop body's buffer on the device", r,
                      rig_resident(b, BUF, 0), BUF);
        for (size_t j = 0; j < words; j++)
            for (unsigned i = 0; i < limit; i++)
                want[j] = rig_step(want[j], k);
    }
    rig_expect_words(b, want, BUF, "the loop body's buffer");
    free(want);
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    ck_assert_uint_eq(conditionals(), before); /* the record went with the graph */
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFreeHost(counter));
    CU_OK(cuMemFree(b));
}
END_TEST

/* A record lives as long as its node: a node destroyed takes its record
 * and those of the conditional nodes in its bodies along, a graph
 * destroyed those of all of its own; a refused destroy keeps them. A graph
 * made after, whose nodes may sit at the freed addresses, runs with no
 * stale body walked. */
START_TEST(conditional_records_go_with_their_nodes)
{
    ctx = rig_setup(0);
    CUfunction step = rig_kernel("step_u32");
    size_t before = conditionals();
    CUgraph g, *outer, *inner;
    CUgraphConditionalHandle h1, h2;
    CU_OK(cuGraphCreate(&g, 0));
    CUgraphNode n = cond_node(g, CU_GRAPH_COND_TYPE_IF, 1, &h1, &outer);
    cond_node(outer[0], CU_GRAPH_COND_TYPE_WHILE, 0, &h2, &inner);
    ck_assert_uint_eq(conditionals(), before + 2);
    ck_assert_int_ne(cuGraphDestroyNode(NULL), CUDA_SUCCESS);
    ck_assert_uint_eq(conditionals(), before + 2);
    CU_OK(cuGraphDestroyNode(n));
    ck_assert_uint_eq(conditionals(), before);
    n = cond_node(g, CU_GRAPH_COND_TYPE_IF, 1, &h1, &outer);
    cond_node(outer[0], CU_GRAPH_COND_TYPE_SWITCH, 0, &h2, &inner);
    ck_assert_uint_eq(conditionals(), before + 2);
    CU_OK(cuGraphDestroy(g));
    ck_assert_uint_eq(conditionals(), before);

    CUdeviceptr c = rig_filled(BUF, 611);
    size_t words = BUF / 4;
    unsigned k = 5;
    void *args[] = {&c, &words, &k};
    CUDA_KERNEL_NODE_PARAMS kp = {.func = step, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                  .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1, .kernelParams = args};
    CU_OK(cuGraphCreate(&g, 0));
    CUgraphNode kn;
    CU_OK(cuGraphAddKernelNode(&kn, g, NULL, 0, &kp));
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    CU_OK(cuGraphLaunch(e, NULL));
    CU_OK(cuCtxSynchronize());
    uint32_t *want = rig_expected(BUF, 611);
    for (size_t j = 0; j < words; j++)
        want[j] = rig_step(want[j], k);
    rig_expect_words(c, want, BUF, "a later graph's buffer");
    free(want);
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuMemFree(c));
}
END_TEST

/* A body filled by a capture (cuStreamBeginCaptureToGraph, through
 * spillway's capture hooks) runs what was captured, and the buffer its
 * kernel names is filled back at the launch. While the capture adds to
 * the body, the driver refuses to destroy the graph (a capture's graph
 * may not go): the records stay, and go with the graph after. */
START_TEST(a_body_filled_by_a_capture_is_read)
{
    ctx = rig_setup(0);
    CUfunction step = rig_kernel("step_u32");
    CUdeviceptr c = rig_filled(BUF, 612);
    size_t before = conditionals();
    CUgraph g, *body;
    CUgraphConditionalHandle h;
    CU_OK(cuGraphCreate(&g, 0));
    cond_node(g, CU_GRAPH_COND_TYPE_IF, 1, &h, &body);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamBeginCaptureToGraph(s, body[0], NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
    ck_assert_int_ne(cuGraphDestroy(g), CUDA_SUCCESS);
    ck_assert_uint_eq(conditionals(), before + 1);
    launch_step(step, s, c, 4);
    CUgraph got;
    CU_OK(cuStreamEndCapture(s, &got));
    ck_assert_ptr_eq(got, body[0]);
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    rig_squeeze(LIMIT - 2 * MiB);
    ck_assert_uint_lt(rig_resident(c, BUF, 0), BUF);
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_eq(rig_resident(c, BUF, 0), BUF);
    uint32_t *want = rig_expected(BUF, 612);
    for (size_t j = 0; j < BUF / 4; j++)
        want[j] = rig_step(want[j], 4);
    rig_expect_words(c, want, BUF, "the captured body's buffer");
    free(want);
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    ck_assert_uint_eq(conditionals(), before);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(c));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("shim_capture");
    TCase *tc = tcase_create("capture");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, capture_global_while_spilling);
    tcase_add_test(tc, capture_thread_local_while_spilling);
    tcase_add_test(tc, replays_fill_the_graph_back);
    tcase_add_test(tc, runtime_name_of_instantiate);
    tcase_add_test(tc, exec_set_params_fills_the_new_buffer);
    tcase_add_test(tc, every_way_of_naming_a_buffer_fills_it_at_replay);
    tcase_add_test(tc, free_of_a_pool_block_in_capture);
    tcase_add_test(tc, graph_allocation_in_capture);
    tcase_add_test(tc, a_refused_end_leaves_the_capture_counted);
    tcase_add_test(tc, a_while_loops_buffer_is_filled_back_at_replay);
    tcase_add_test(tc, conditional_records_go_with_their_nodes);
    tcase_add_test(tc, a_body_filled_by_a_capture_is_read);
    suite_add_tcase(s, tc);
    return s;
}
