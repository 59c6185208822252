/* The graph memory suite's shared helpers (graph_mem_rig.h). */
#include "tests/integration/shim/graph_mem_rig.h"

size_t free_now(void)
{
    size_t free, total;
    CU_OK(cuMemGetInfo(&free, &total));
    return free;
}

uint64_t reserved(void)
{
    cuuint64_t v = 0;
    CU_OK(cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &v));
    return v;
}

void graphs_gone_and_trimmed(CUgraphExec e, CUgraph g)
{
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuDeviceGraphMemTrim(0));
}

void alloc_set_free_graph(CUgraph *g)
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

CUgraphExec alloc_set_free(CUgraph *g)
{
    alloc_set_free_graph(g);
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, *g, 0));
    return e;
}

CUgraph capture_alloc(CUstream s, CUdeviceptr *t)
{
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    *t = 0;
    CU_OK(cuMemAllocAsync(t, GBYTES, s));
    CU_OK(cuMemsetD32Async(*t, 3u, GBYTES / 4, s));
    CUgraph g;
    CU_OK(cuStreamEndCapture(s, &g));
    return g;
}
