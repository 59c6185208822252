/* Conformance: the graph memory pool of a device (the programming guide's
 * "Graph Memory Nodes"). An allocation node's physical memory is reserved
 * at the first launch or upload of its graph (an instantiation with
 * CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD uploads), not at a plain
 * instantiation, and is
 * charged to the device (cuMemGetInfo); it stays reserved across launches,
 * after the graph frees the allocation and after the graph is destroyed,
 * until cuDeviceGraphMemTrim, which gives back what no live allocation
 * uses. USED_MEM_CURRENT is the memory "currently mapped by at least one
 * graph" (programming guide): mapped at a launch, it stays mapped after the
 * allocation's free, up to the reserved figure, until a trim. Each test runs
 * in its own process, so the pool starts empty. Sizes are multiples of
 * 2 MiB, the driver's granularity, and only bounds are asserted where the
 * driver may round. */
#include <stdbool.h>

#include "tests/unit/driver/common.h"

#define SIZE (8 * MiB)

static CUdevice dev;

static void setup(void)
{
    driver_setup();
    CU_OK(cuCtxGetDevice(&dev));
}

static cuuint64_t attr(CUgraphMem_attribute a)
{
    cuuint64_t v = ~(cuuint64_t)0;
    CU_OK(cuDeviceGetGraphMemAttribute(dev, a, &v));
    return v;
}

static size_t free_mem(void)
{
    size_t free, total;
    CU_OK(cuMemGetInfo(&free, &total));
    return free;
}

/* A graph with an allocation node of SIZE bytes, and a free node after it
 * when with_free. */
static CUgraph alloc_graph(bool with_free, CUdeviceptr *p)
{
    CUgraph g;
    CU_OK(cuGraphCreate(&g, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS ap = {0};
    ap.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    ap.poolProps.location.id = dev;
    ap.bytesize = SIZE;
    CUgraphNode a, f;
    CU_OK(cuGraphAddMemAllocNode(&a, g, NULL, 0, &ap));
    *p = ap.dptr;
    if (with_free)
        CU_OK(cuGraphAddMemFreeNode(&f, g, &a, 1, ap.dptr));
    return g;
}

START_TEST(reserved_at_first_launch_and_kept_until_trim)
{
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    ck_assert_uint_eq(attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 0);
    CUdeviceptr p;
    CUgraph g = alloc_graph(true, &p);
    CUgraphExec x;
    CU_OK(cuGraphInstantiate(&x, g, 0));
    ck_assert_uint_eq(attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 0);
    size_t before = free_mem();

    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    cuuint64_t reserved = attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT);
    ck_assert_uint_ge(reserved, SIZE);
    ck_assert_uint_ge(attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH), reserved);
    ck_assert_uint_le(attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), reserved); /* mapped, if freed */
    ck_assert_uint_ge(attr(CU_GRAPH_MEM_ATTR_USED_MEM_HIGH), SIZE);
    size_t after = free_mem();
    ck_assert_uint_le(after + SIZE, before); /* the device's memory, charged */

    CU_OK(cuGraphLaunch(x, s)); /* a replay reuses what is reserved */
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_eq(attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), reserved);

    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(g));
    ck_assert_uint_eq(attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), reserved); /* the pool's still */
    CU_OK(cuDeviceGraphMemTrim(dev));
    ck_assert_uint_eq(attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 0);
    ck_assert_uint_eq(attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 0);
    ck_assert_uint_ge(free_mem(), after + SIZE);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

START_TEST(a_live_allocation_is_used_and_not_trimmed)
{
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CUgraph g = alloc_graph(false, &p);
    CUgraphExec x;
    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_ge(attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), SIZE); /* live: mapped */
    CU_OK(cuDeviceGraphMemTrim(dev)); /* in use: stays */
    ck_assert_uint_ge(attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), SIZE);
    ck_assert_uint_ge(attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), SIZE);
    CU_OK(cuMemsetD8Async(p, 7, SIZE, s));

    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_ge(attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), SIZE);
    CU_OK(cuDeviceGraphMemTrim(dev)); /* the graph is not running: all of it goes */
    ck_assert_uint_eq(attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 0);
    ck_assert_uint_eq(attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 0);

    CU_OK(cuGraphLaunch(x, s)); /* mapped again */
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_ge(attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), SIZE);
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

START_TEST(an_upload_reserves_before_any_launch)
{
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CUgraph g = alloc_graph(true, &p);
    CUgraphExec x;
    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_OK(cuGraphUpload(x, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_ge(attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), SIZE);
    ck_assert_uint_le(attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT),
                      attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT));
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuDeviceGraphMemTrim(dev));
    ck_assert_uint_eq(attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 0);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD: "Automatically upload the graph
 * after instantiation ... using the stream provided in instantiateParams"
 * (cuGraphInstantiateWithParams): the memory is reserved by then, as by
 * cuGraphUpload, before any launch. */
START_TEST(an_instantiate_with_upload_reserves_before_any_launch)
{
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CUgraph g = alloc_graph(true, &p);
    size_t before = free_mem();
    CUDA_GRAPH_INSTANTIATE_PARAMS ip = {.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD, .hUploadStream = s};
    CUgraphExec x;
    CU_OK(cuGraphInstantiateWithParams(&x, g, &ip));
    ck_assert_int_eq(ip.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_ge(attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), SIZE);
    ck_assert_uint_le(free_mem() + SIZE, before);
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuDeviceGraphMemTrim(dev));
    ck_assert_uint_eq(attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 0);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* A graph with memory nodes is neither cloned nor embedded: "Cloning is
 * not supported for graphs which contain memory allocation nodes, memory
 * free nodes" (cuGraphClone), "If childGraph contains allocation nodes,
 * free nodes, or conditional nodes, this call will return an error"
 * (cuGraphAddChildGraphNode; CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE: "memory
 * allocation/free nodes can't be present in the child graph"). So a
 * child graph node never brings alloc nodes, and an executable graph's
 * alloc nodes are its own graph's. */
START_TEST(memory_nodes_are_not_cloned_or_embedded)
{
    CUdeviceptr p;
    CUgraph with_free = alloc_graph(true, &p), alloc_only = alloc_graph(false, &p);
    CUgraph free_only;
    CU_OK(cuGraphCreate(&free_only, 0));
    CUgraphNode f;
    CU_OK(cuGraphAddMemFreeNode(&f, free_only, NULL, 0, p));
    CUgraph parent;
    CU_OK(cuGraphCreate(&parent, 0));
    CUgraph mem[] = {with_free, alloc_only, free_only};
    for (size_t i = 0; i < sizeof mem / sizeof mem[0]; i++) {
        CUgraph clone = NULL;
        ck_assert_int_ne(cuGraphClone(&clone, mem[i]), CUDA_SUCCESS);
        CUgraphNode child;
        CU_ERR(cuGraphAddChildGraphNode(&child, parent, NULL, 0, mem[i]), CUDA_ERROR_INVALID_VALUE);
    }
    size_t n = 1;
    CU_OK(cuGraphGetNodes(parent, NULL, &n));
    ck_assert_uint_eq(n, 0);
    CU_OK(cuGraphDestroy(parent));
    CU_OK(cuGraphDestroy(free_only));
    CU_OK(cuGraphDestroy(alloc_only));
    CU_OK(cuGraphDestroy(with_free));
}
END_TEST

/* "Graph destruction does not automatically free any live graph-allocated
 * memory ... The allocation must subsequently be freed in another graph,
 * or using cudaFreeAsync()/cudaFree()" (programming guide): it stays
 * usable and in use (a trim keeps it) until the program frees it. */
START_TEST(a_live_allocation_outlives_its_graph)
{
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CUgraph g = alloc_graph(false, &p);
    CUgraphExec x;
    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuDeviceGraphMemTrim(dev));
    ck_assert_uint_ge(attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), SIZE);
    ck_assert_uint_ge(attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), SIZE);
    CU_OK(cuMemsetD32Async(p, 0x5a5a5a5au, SIZE / 4, s));
    unsigned word = 0;
    CU_OK(cuMemcpyDtoHAsync(&word, p + SIZE - sizeof word, sizeof word, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_eq(word, 0x5a5a5a5au);
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuDeviceGraphMemTrim(dev));
    ck_assert_uint_eq(attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 0);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* "If hGraph contains any allocation or free nodes, there can be at most
 * one executable graph in existence for that graph at a time. An attempt
 * to instantiate a second executable graph before destroying the first
 * with cuGraphExecDestroy will result in an error" (cuGraphInstantiate,
 * every variant). The reference names no error code: only the failure is
 * asserted (tests/gpu/README.md). A graph without memory nodes can have
 * several. */
START_TEST(one_executable_graph_at_a_time_with_memory_nodes)
{
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CUgraph with_free = alloc_graph(true, &p), alloc_only = alloc_graph(false, &p);
    CUgraph free_only;
    CU_OK(cuGraphCreate(&free_only, 0));
    CUgraphNode f;
    CU_OK(cuGraphAddMemFreeNode(&f, free_only, NULL, 0, p));
    CUgraph mem[] = {with_free, alloc_only, free_only};
    for (size_t i = 0; i < sizeof mem / sizeof mem[0]; i++) {
        CUgraphExec x, y = NULL;
        CU_OK(cuGraphInstantiate(&x, mem[i], 0));
        ck_assert_int_ne(cuGraphInstantiate(&y, mem[i], 0), CUDA_SUCCESS);
        ck_assert_int_ne(cuGraphInstantiateWithFlags(&y, mem[i], 0), CUDA_SUCCESS);
        CUDA_GRAPH_INSTANTIATE_PARAMS ip = {.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD,
                                            .hUploadStream = s};
        ck_assert_int_ne(cuGraphInstantiateWithParams(&y, mem[i], &ip), CUDA_SUCCESS);
        ck_assert_int_ne(ip.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
        CU_OK(cuGraphExecDestroy(x)); /* then a new one may be made */
        CU_OK(cuGraphInstantiateWithFlags(&y, mem[i], 0));
        CU_OK(cuGraphExecDestroy(y));
    }
    /* An executable graph outliving its graph holds no other graph. */
    CUgraphExec x, y;
    CU_OK(cuGraphInstantiate(&x, alloc_only, 0));
    CU_OK(cuGraphDestroy(alloc_only));
    CUgraph again = alloc_graph(false, &p);
    CU_OK(cuGraphInstantiate(&y, again, 0));
    CU_OK(cuGraphExecDestroy(y));
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(again));
    CU_OK(cuGraphDestroy(free_only));
    CU_OK(cuGraphDestroy(with_free));

    CUgraph plain;
    CU_OK(cuGraphCreate(&plain, 0));
    CUgraphNode e;
    CU_OK(cuGraphAddEmptyNode(&e, plain, NULL, 0));
    CU_OK(cuGraphInstantiate(&x, plain, 0));
    CU_OK(cuGraphInstantiate(&y, plain, 0));
    CU_OK(cuGraphExecDestroy(y));
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(plain));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

START_TEST(attribute_errors_and_high_mark_reset)
{
    int n;
    CU_OK(cuDeviceGetCount(&n));
    cuuint64_t v = 0;
    CU_ERR(cuDeviceGetGraphMemAttribute(n, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &v),
           CUDA_ERROR_INVALID_DEVICE);
    CU_ERR(cuDeviceSetGraphMemAttribute(n, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &v),
           CUDA_ERROR_INVALID_DEVICE);
    CU_ERR(cuDeviceGraphMemTrim(n), CUDA_ERROR_INVALID_DEVICE);
    CU_ERR(cuDeviceGetGraphMemAttribute(dev, (CUgraphMem_attribute)0x7f, &v), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuDeviceSetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &v),
           CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuDeviceSetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &v),
           CUDA_ERROR_INVALID_VALUE);
    v = 1; /* a high mark can only be reset to 0 */
    CU_ERR(cuDeviceSetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &v),
           CUDA_ERROR_INVALID_VALUE);

    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CUgraph g = alloc_graph(true, &p);
    CUgraphExec x;
    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuDeviceGraphMemTrim(dev));
    ck_assert_uint_ge(attr(CU_GRAPH_MEM_ATTR_USED_MEM_HIGH), SIZE);
    ck_assert_uint_ge(attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH), SIZE);
    v = 0;
    CU_OK(cuDeviceSetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &v));
    CU_OK(cuDeviceSetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, &v));
    ck_assert_uint_eq(attr(CU_GRAPH_MEM_ATTR_USED_MEM_HIGH), 0);
    ck_assert_uint_eq(attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH), 0);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("driver_graph_mem");
    TCase *tc = tcase_create("graph_mem");
    tcase_add_checked_fixture(tc, setup, driver_teardown);
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, reserved_at_first_launch_and_kept_until_trim);
    tcase_add_test(tc, a_live_allocation_is_used_and_not_trimmed);
    tcase_add_test(tc, an_upload_reserves_before_any_launch);
    tcase_add_test(tc, an_instantiate_with_upload_reserves_before_any_launch);
    tcase_add_test(tc, memory_nodes_are_not_cloned_or_embedded);
    tcase_add_test(tc, a_live_allocation_outlives_its_graph);
    tcase_add_test(tc, one_executable_graph_at_a_time_with_memory_nodes);
    tcase_add_test(tc, attribute_errors_and_high_mark_reset);
    suite_add_tcase(s, tc);
    return s;
}
