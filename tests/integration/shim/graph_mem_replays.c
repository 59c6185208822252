/* The graph memory suite (test_graph_mem.c): a graph's first launch
 * settles it, and its replays reuse what it reserved with no trim and no
 * spill: after a first launch that trimmed, during another stream's
 * capture, after a trim of another device or an update; a graph on two
 * devices holds each its own nodes. */
#include "tests/integration/shim/graph_mem_rig.h"

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

/* A first launch that needed a trim of other graphs' idle memory settles
 * its graph like any: its replays reuse what it reserved, with no trim (and
 * no remapping by the driver) at each replay. */
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

void graph_mem_replay_tests(TCase *tc)
{
    tcase_add_test(tc, replays_after_a_first_launch_that_trimmed_do_not_trim);
    tcase_add_test(tc, a_first_launch_during_another_streams_capture_settles);
    tcase_add_test(tc, a_graph_on_two_devices_holds_each_its_own_nodes);
    tcase_add_test(tc, a_trim_of_another_device_leaves_replays_alone);
    tcase_add_test(tc, an_update_leaves_replays_alone);
}
