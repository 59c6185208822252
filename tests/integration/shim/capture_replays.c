/* The capture suite (test_capture.c): a graph replayed under spill
 * pressure has its buffers filled back before every replay, however it was
 * instantiated, and so does a buffer given to its kernel node after. */
#include "tests/integration/shim/capture_rig.h"

#include <stdlib.h>

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

void capture_replay_tests(TCase *tc)
{
    tcase_add_test(tc, replays_fill_the_graph_back);
    tcase_add_test(tc, runtime_name_of_instantiate);
    tcase_add_test(tc, exec_set_params_fills_the_new_buffer);
}
