/* Bad arguments (badargs.c) to graphs: copy, set and batch memory
 * operation nodes, instantiation, updates and destroys. */
#include "tests/integration/shim/badargs.h"

/* Copy and set nodes: the driver checks their ranges when they are added
 * or given parameters, as copies are checked when issued. Each graph call
 * below that succeeds is one the driver alone accepts too. */
static CUDA_MEMCPY3D node_copy(CUdeviceptr dst, size_t bytes)
{
    return (CUDA_MEMCPY3D){.srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = dptr,
                           .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = dst,
                           .WidthInBytes = bytes, .Height = 1, .Depth = 1};
}

static CUDA_MEMSET_NODE_PARAMS node_set(CUdeviceptr dst, size_t bytes)
{
    return (CUDA_MEMSET_NODE_PARAMS){.dst = dst, .value = 0x5a, .elementSize = 1, .width = bytes, .height = 1};
}

static CUDA_MEMCPY3D *freed_copy(void)
{
    static CUDA_MEMCPY3D c;
    c = node_copy(just_freed(), 16);
    return &c;
}

static CUDA_MEMSET_NODE_PARAMS *freed_set(void)
{
    static CUDA_MEMSET_NODE_PARAMS m;
    m = node_set(just_freed(), 16);
    return &m;
}

void graph_nodes(void)
{
    CUgraph g;
    CUgraphNode cn, sn;
    CUgraphExec x;
    CUDA_MEMCPY3D ok = node_copy(dptr + 4096, 16), past = node_copy(inner, MiB);
    CUDA_MEMSET_NODE_PARAMS sok = node_set(dptr + 4096, 16), spast = node_set(inner, MiB);
    CUDA_MEMSET_NODE_PARAMS sbad = sok;
    sbad.elementSize = 3;
    OK(cuGraphCreate(&g, 0));
    TRY(cuGraphAddMemcpyNode, "null_out", cuGraphAddMemcpyNode, NULL, g, NULL, 0, &ok, ctx);
    TRY(cuGraphAddMemcpyNode, "null_graph", cuGraphAddMemcpyNode, &cn, NULL, NULL, 0, &ok, ctx);
    TRY(cuGraphAddMemcpyNode, "null_params", cuGraphAddMemcpyNode, &cn, g, NULL, 0, NULL, ctx);
    TRY(cuGraphAddMemcpyNode, "past_end", cuGraphAddMemcpyNode, &cn, g, NULL, 0, &past, ctx);
    TRY(cuGraphAddMemcpyNode, "freed", cuGraphAddMemcpyNode, &cn, g, NULL, 0, freed_copy(), ctx);
    TRY(cuGraphAddMemsetNode, "null_out", cuGraphAddMemsetNode, NULL, g, NULL, 0, &sok, ctx);
    TRY(cuGraphAddMemsetNode, "null_params", cuGraphAddMemsetNode, &sn, g, NULL, 0, NULL, ctx);
    TRY(cuGraphAddMemsetNode, "bad_element", cuGraphAddMemsetNode, &sn, g, NULL, 0, &sbad, ctx);
    TRY(cuGraphAddMemsetNode, "past_end", cuGraphAddMemsetNode, &sn, g, NULL, 0, &spast, ctx);
    TRY(cuGraphAddMemsetNode, "freed", cuGraphAddMemsetNode, &sn, g, NULL, 0, freed_set(), ctx);
    OK(cuGraphAddMemcpyNode(&cn, g, NULL, 0, &ok, ctx));
    OK(cuGraphAddMemsetNode(&sn, g, &cn, 1, &sok, ctx));
    TRY(cuGraphMemcpyNodeSetParams, "null_params", cuGraphMemcpyNodeSetParams, cn, NULL);
    TRY(cuGraphMemcpyNodeSetParams, "wrong_node", cuGraphMemcpyNodeSetParams, sn, &ok);
    TRY(cuGraphMemcpyNodeSetParams, "past_end", cuGraphMemcpyNodeSetParams, cn, &past);
    TRY(cuGraphMemcpyNodeSetParams, "freed", cuGraphMemcpyNodeSetParams, cn, freed_copy());
    TRY(cuGraphMemsetNodeSetParams, "null_params", cuGraphMemsetNodeSetParams, sn, NULL);
    TRY(cuGraphMemsetNodeSetParams, "wrong_node", cuGraphMemsetNodeSetParams, cn, &sok);
    TRY(cuGraphMemsetNodeSetParams, "past_end", cuGraphMemsetNodeSetParams, sn, &spast);
    TRY(cuGraphMemsetNodeSetParams, "freed", cuGraphMemsetNodeSetParams, sn, freed_set());
    CUgraphNodeParams npast = {.type = CU_GRAPH_NODE_TYPE_MEMCPY, .memcpy = {.copyCtx = ctx, .copyParams = past}};
    CUgraphNodeParams nspast = {.type = CU_GRAPH_NODE_TYPE_MEMSET,
                                .memset = {.dst = inner, .value = 0x5a, .elementSize = 1, .width = MiB, .height = 1,
                                           .ctx = ctx}};
    CUgraphNodeParams nok = {.type = CU_GRAPH_NODE_TYPE_MEMCPY, .memcpy = {.copyCtx = ctx, .copyParams = ok}};
    CUgraphNodeParams nsok = {.type = CU_GRAPH_NODE_TYPE_MEMSET,
                              .memset = {.dst = dptr + 4096, .value = 0x5a, .elementSize = 1, .width = 16,
                                         .height = 1, .ctx = ctx}};
    CUgraphNodeParams nfreed = nok, nsfreed = nsok;
    nfreed.memcpy.copyParams = *freed_copy();
    nsfreed.memset.dst = freed_set()->dst;
    /* A conditional node on a handle that is none: refused, nothing
     * recorded (shim/graph_cond.c). */
    CUgraphNodeParams ncond = {.type = CU_GRAPH_NODE_TYPE_CONDITIONAL,
                               .conditional = {.handle = 0, .type = CU_GRAPH_COND_TYPE_IF, .size = 1, .ctx = ctx}};
    CUgraphNode gn, gsn;
    TRY(cuGraphAddNode, "null_params", cuGraphAddNode, &gn, g, NULL, 0, NULL);
    TRY(cuGraphAddNode, "cond_bad_handle", cuGraphAddNode, &gn, g, NULL, 0, &ncond);
    TRY(cuGraphAddNode, "cond_bad_handle", cuGraphAddNode_v2, &gn, g, NULL, NULL, 0, &ncond);
    TRY(cuGraphAddNode, "null_graph", cuGraphAddNode, &gn, NULL, NULL, 0, &nok);
    TRY(cuGraphAddNode, "copy_past_end", cuGraphAddNode, &gn, g, NULL, 0, &npast);
    TRY(cuGraphAddNode, "set_past_end", cuGraphAddNode, &gn, g, NULL, 0, &nspast);
    TRY(cuGraphAddNode, "copy_freed", cuGraphAddNode, &gn, g, NULL, 0, &nfreed);
    TRY(cuGraphAddNode, "null_params", cuGraphAddNode_v2, &gn, g, NULL, NULL, 0, NULL);
    TRY(cuGraphAddNode, "copy_past_end", cuGraphAddNode_v2, &gn, g, NULL, NULL, 0, &npast);
    TRY(cuGraphAddNode, "set_past_end", cuGraphAddNode_v2, &gn, g, NULL, NULL, 0, &nspast);
    TRY(cuGraphAddNode, "set_freed", cuGraphAddNode_v2, &gn, g, NULL, NULL, 0, &nsfreed);
    OK(cuGraphAddNode(&gn, g, &sn, 1, &nok));
    OK(cuGraphAddNode_v2(&gsn, g, &gn, NULL, 1, &nsok));
    TRY(cuGraphNodeSetParams, "null_params", cuGraphNodeSetParams, gn, NULL);
    TRY(cuGraphNodeSetParams, "wrong_node", cuGraphNodeSetParams, gsn, &nok);
    TRY(cuGraphNodeSetParams, "copy_past_end", cuGraphNodeSetParams, gn, &npast);
    TRY(cuGraphNodeSetParams, "copy_freed", cuGraphNodeSetParams, gn, &nfreed);
    TRY(cuGraphNodeSetParams, "set_past_end", cuGraphNodeSetParams, gsn, &nspast);
    TRY(cuGraphNodeSetParams, "set_freed", cuGraphNodeSetParams, gsn, &nsfreed);
    OK(cuGraphInstantiateWithFlags(&x, g, 0));
    TRY(cuGraphExecMemcpyNodeSetParams, "past_end", cuGraphExecMemcpyNodeSetParams, x, cn, &past, ctx);
    TRY(cuGraphExecMemcpyNodeSetParams, "freed", cuGraphExecMemcpyNodeSetParams, x, cn, freed_copy(), ctx);
    TRY(cuGraphExecMemsetNodeSetParams, "past_end", cuGraphExecMemsetNodeSetParams, x, sn, &spast, ctx);
    TRY(cuGraphExecMemsetNodeSetParams, "freed", cuGraphExecMemsetNodeSetParams, x, sn, freed_set(), ctx);
    TRY(cuGraphExecNodeSetParams, "copy_past_end", cuGraphExecNodeSetParams, x, cn, &npast);
    TRY(cuGraphExecNodeSetParams, "set_past_end", cuGraphExecNodeSetParams, x, sn, &nspast);
    /* What was accepted runs: copies and sets of 16 bytes inside dptr. */
    OK(cuGraphLaunch(x, stream));
    OK(cuStreamSynchronize(stream));
    OK(cuGraphExecDestroy(x));
    OK(cuGraphDestroy(g));
}

/* Batch memory operation nodes: each operation's value checked against
 * the pool allocation it names, as a stream batch's, when the node is
 * added or given parameters. odd ends 3 bytes past a multiple of 8: a 32-
 * or 64-bit value at odd + 4096 runs past it. */
static CUstreamBatchMemOpParams memop(CUstreamBatchMemOpType t, CUdeviceptr a)
{
    CUstreamBatchMemOpParams op = {.writeValue = {.operation = t, .address = a, .value = 0x5a}};
    return op;
}

/* A node's parameters of one write to memory freed just now (just_freed). */
static CUDA_BATCH_MEM_OP_NODE_PARAMS *freed_memop(void)
{
    static CUstreamBatchMemOpParams op;
    static CUDA_BATCH_MEM_OP_NODE_PARAMS p;
    op = memop(CU_STREAM_MEM_OP_WRITE_VALUE_32, just_freed());
    p = (CUDA_BATCH_MEM_OP_NODE_PARAMS){.ctx = ctx, .count = 1, .paramArray = &op};
    return &p;
}

static CUgraphNodeParams memop_node(const CUDA_BATCH_MEM_OP_NODE_PARAMS *p)
{
    return (CUgraphNodeParams){.type = CU_GRAPH_NODE_TYPE_BATCH_MEM_OP,
                               .memOp = {.ctx = p->ctx, .count = p->count, .paramArray = p->paramArray}};
}

/* The same as CUDA 12.2's parameters. */
static CUgraphNodeParams *freed_memop_node(void)
{
    static CUgraphNodeParams p;
    p = memop_node(freed_memop());
    return &p;
}

void memop_nodes(void)
{
    CUdeviceptr odd;
    OK(cuMemAlloc(&odd, 4096 + 3));
    CUstreamBatchMemOpParams ok[2] = {memop(CU_STREAM_MEM_OP_WRITE_VALUE_32, odd),
                                      memop(CU_STREAM_MEM_OP_WRITE_VALUE_64, odd + 8)};
    CUstreamBatchMemOpParams past32 = memop(CU_STREAM_MEM_OP_WRITE_VALUE_32, odd + 4096);
    CUstreamBatchMemOpParams second_past[2] = {ok[0], memop(CU_STREAM_MEM_OP_WRITE_VALUE_64, odd + 4096)};
    CUstreamBatchMemOpParams wait_past = {.waitValue = {.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32,
                                                        .address = odd + 4096, .value = 1}};
    CUDA_BATCH_MEM_OP_NODE_PARAMS nok = {.ctx = ctx, .count = 2, .paramArray = ok};
    CUDA_BATCH_MEM_OP_NODE_PARAMS npast = {.ctx = ctx, .count = 1, .paramArray = &past32};
    CUDA_BATCH_MEM_OP_NODE_PARAMS nsecond = {.ctx = ctx, .count = 2, .paramArray = second_past};
    CUDA_BATCH_MEM_OP_NODE_PARAMS nwait = {.ctx = ctx, .count = 1, .paramArray = &wait_past};
    CUDA_BATCH_MEM_OP_NODE_PARAMS nnull = {.ctx = ctx, .count = 1, .paramArray = NULL};
    CUDA_BATCH_MEM_OP_NODE_PARAMS ncount0 = {.ctx = ctx, .count = 0, .paramArray = ok};
    CUgraphNodeParams gok = memop_node(&nok), gpast = memop_node(&npast), gsecond = memop_node(&nsecond);
    CUgraph g;
    CUgraphNode n, gn, other;
    CUgraphExec x;
    OK(cuGraphCreate(&g, 0));
    TRY(cuGraphAddBatchMemOpNode, "null_params", cuGraphAddBatchMemOpNode, &n, g, NULL, 0, NULL);
    TRY(cuGraphAddBatchMemOpNode, "null_ops", cuGraphAddBatchMemOpNode, &n, g, NULL, 0, &nnull);
    TRY(cuGraphAddBatchMemOpNode, "count_0", cuGraphAddBatchMemOpNode, &n, g, NULL, 0, &ncount0);
    TRY(cuGraphAddBatchMemOpNode, "null_graph", cuGraphAddBatchMemOpNode, &n, NULL, NULL, 0, &nok);
    TRY(cuGraphAddBatchMemOpNode, "past_end", cuGraphAddBatchMemOpNode, &n, g, NULL, 0, &npast);
    TRY(cuGraphAddBatchMemOpNode, "second_past_end", cuGraphAddBatchMemOpNode, &n, g, NULL, 0, &nsecond);
    TRY(cuGraphAddBatchMemOpNode, "wait_past_end", cuGraphAddBatchMemOpNode, &n, g, NULL, 0, &nwait);
    TRY(cuGraphAddBatchMemOpNode, "freed", cuGraphAddBatchMemOpNode, &n, g, NULL, 0, freed_memop());
    TRY(cuGraphAddNode, "memop_past_end", cuGraphAddNode, &gn, g, NULL, 0, &gpast);
    TRY(cuGraphAddNode, "memop_freed", cuGraphAddNode, &gn, g, NULL, 0, freed_memop_node());
    TRY(cuGraphAddNode, "memop_second_past_end", cuGraphAddNode_v2, &gn, g, NULL, NULL, 0, &gsecond);
    OK(cuGraphAddBatchMemOpNode(&n, g, NULL, 0, &nok));
    OK(cuGraphAddNode(&gn, g, &n, 1, &gok));
    OK(cuGraphAddEmptyNode(&other, g, NULL, 0));
    TRY(cuGraphBatchMemOpNodeSetParams, "null_params", cuGraphBatchMemOpNodeSetParams, n, NULL);
    TRY(cuGraphBatchMemOpNodeSetParams, "wrong_node", cuGraphBatchMemOpNodeSetParams, other, &nok);
    TRY(cuGraphBatchMemOpNodeSetParams, "past_end", cuGraphBatchMemOpNodeSetParams, n, &npast);
    TRY(cuGraphBatchMemOpNodeSetParams, "second_past_end", cuGraphBatchMemOpNodeSetParams, n, &nsecond);
    TRY(cuGraphBatchMemOpNodeSetParams, "freed", cuGraphBatchMemOpNodeSetParams, n, freed_memop());
    TRY(cuGraphNodeSetParams, "memop_past_end", cuGraphNodeSetParams, gn, &gpast);
    TRY(cuGraphNodeSetParams, "memop_freed", cuGraphNodeSetParams, gn, freed_memop_node());
    OK(cuGraphInstantiateWithFlags(&x, g, 0));
    TRY(cuGraphExecBatchMemOpNodeSetParams, "null_exec", cuGraphExecBatchMemOpNodeSetParams, NULL, n, &nok);
    TRY(cuGraphExecBatchMemOpNodeSetParams, "wrong_node", cuGraphExecBatchMemOpNodeSetParams, x, other, &nok);
    TRY(cuGraphExecBatchMemOpNodeSetParams, "past_end", cuGraphExecBatchMemOpNodeSetParams, x, n, &nsecond);
    TRY(cuGraphExecBatchMemOpNodeSetParams, "freed", cuGraphExecBatchMemOpNodeSetParams, x, n, freed_memop());
    TRY(cuGraphExecNodeSetParams, "memop_past_end", cuGraphExecNodeSetParams, x, gn, &gsecond);
    TRY(cuGraphExecNodeSetParams, "memop_freed", cuGraphExecNodeSetParams, x, gn, freed_memop_node());
    /* What was accepted runs: writes inside odd. */
    OK(cuGraphLaunch(x, stream));
    OK(cuStreamSynchronize(stream));
    OK(cuGraphExecDestroy(x));
    OK(cuGraphDestroy(g));
    OK(cuMemFree(odd));
}

void graphs(void)
{
    CUgraphExec e;
    CUgraphNode err_node;
    char log[64];
    CUgraphExecUpdateResult res;
    CUgraphExecUpdateResultInfo info;
    CUDA_KERNEL_NODE_PARAMS_v1 kp1 = {.func = noop_fn, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                      .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1};
    CUDA_KERNEL_NODE_PARAMS kp = {.func = noop_fn, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                  .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1};
    CUgraphNodeParams np = {.type = CU_GRAPH_NODE_TYPE_KERNEL};
    CUDA_MEMCPY3D cp = {0};
    CUDA_MEMSET_NODE_PARAMS sp = {.dst = dptr, .elementSize = 1, .width = 16, .height = 1};
    CUDA_GRAPH_INSTANTIATE_PARAMS ip = {.hUploadStream = bad_stream,
                                        .flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD};
    CUDA_GRAPH_INSTANTIATE_PARAMS ip_bad_flags = {.flags = 0x1000};

    TRY(cuGraphInstantiate, "null_out", cuGraphInstantiate, NULL, graph, &err_node, log, sizeof log);
    TRY(cuGraphInstantiate, "null_graph", cuGraphInstantiate, &e, NULL, &err_node, log, sizeof log);
    TRY(cuGraphInstantiate, "bad_graph", cuGraphInstantiate, &e, BAD_HANDLE, &err_node, log, sizeof log);
    TRY(cuGraphInstantiate, "null_out", cuGraphInstantiate_v2, NULL, graph, &err_node, log, sizeof log);
    TRY(cuGraphInstantiate, "null_graph", cuGraphInstantiate_v2, &e, NULL, &err_node, log, sizeof log);
    TRY(cuGraphInstantiate, "bad_graph", cuGraphInstantiate_v2, &e, BAD_HANDLE, &err_node, log, sizeof log);
    TRY(cuGraphInstantiateWithFlags, "null_out", cuGraphInstantiateWithFlags, NULL, graph, 0);
    TRY(cuGraphInstantiateWithFlags, "null_graph", cuGraphInstantiateWithFlags, &e, NULL, 0);
    TRY(cuGraphInstantiateWithFlags, "bad_graph", cuGraphInstantiateWithFlags, &e, BAD_HANDLE, 0);
    TRY(cuGraphInstantiateWithFlags, "bad_flags", cuGraphInstantiateWithFlags, &e, graph, 0x1000);
    TRY(cuGraphInstantiateWithFlags, "upload_flag", cuGraphInstantiateWithFlags, &e, graph,
        CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD);
    TRY_PT(cuGraphInstantiateWithParams, "null_out", cuGraphInstantiateWithParams, NULL, graph, &ip);
    TRY_PT(cuGraphInstantiateWithParams, "null_params", cuGraphInstantiateWithParams, &e, graph, NULL);
    TRY_PT(cuGraphInstantiateWithParams, "bad_graph", cuGraphInstantiateWithParams, &e, BAD_HANDLE, &ip_bad_flags);
    TRY_PT(cuGraphInstantiateWithParams, "bad_flags", cuGraphInstantiateWithParams, &e, graph, &ip_bad_flags);
    TRY_PT(cuGraphInstantiateWithParams, "bad_upload_stream", cuGraphInstantiateWithParams, &e, graph, &ip);
    TRY(cuGraphExecUpdate, "null_exec", cuGraphExecUpdate, NULL, graph, &err_node, &res);
    TRY(cuGraphExecUpdate, "bad_exec", cuGraphExecUpdate, BAD_HANDLE, graph, &err_node, &res);
    TRY(cuGraphExecUpdate, "bad_graph", cuGraphExecUpdate, gexec, BAD_HANDLE, &err_node, &res);
    TRY(cuGraphExecUpdate, "null_result", cuGraphExecUpdate, gexec, graph, &err_node, NULL);
    TRY(cuGraphExecUpdate, "null_exec", cuGraphExecUpdate_v2, NULL, graph, &info);
    TRY(cuGraphExecUpdate, "bad_exec", cuGraphExecUpdate_v2, BAD_HANDLE, graph, &info);
    TRY(cuGraphExecUpdate, "bad_graph", cuGraphExecUpdate_v2, gexec, BAD_HANDLE, &info);
    TRY(cuGraphExecUpdate, "null_info", cuGraphExecUpdate_v2, gexec, graph, NULL);
    TRY(cuGraphExecKernelNodeSetParams, "null_exec", cuGraphExecKernelNodeSetParams, NULL, BAD_HANDLE, &kp1);
    TRY(cuGraphExecKernelNodeSetParams, "bad_node", cuGraphExecKernelNodeSetParams, gexec, BAD_HANDLE, &kp1);
    TRY(cuGraphExecKernelNodeSetParams, "null_node", cuGraphExecKernelNodeSetParams, gexec, NULL, &kp1);
    TRY(cuGraphExecKernelNodeSetParams, "null_params", cuGraphExecKernelNodeSetParams, gexec, BAD_HANDLE, NULL);
    TRY(cuGraphExecKernelNodeSetParams, "null_exec", cuGraphExecKernelNodeSetParams_v2, NULL, BAD_HANDLE, &kp);
    TRY(cuGraphExecKernelNodeSetParams, "bad_node", cuGraphExecKernelNodeSetParams_v2, gexec, BAD_HANDLE, &kp);
    TRY(cuGraphExecKernelNodeSetParams, "null_node", cuGraphExecKernelNodeSetParams_v2, gexec, NULL, &kp);
    TRY(cuGraphExecKernelNodeSetParams, "null_params", cuGraphExecKernelNodeSetParams_v2, gexec, BAD_HANDLE, NULL);
    TRY(cuGraphExecNodeSetParams, "null_exec", cuGraphExecNodeSetParams, NULL, BAD_HANDLE, &np);
    TRY(cuGraphExecNodeSetParams, "bad_node", cuGraphExecNodeSetParams, gexec, BAD_HANDLE, &np);
    TRY(cuGraphExecNodeSetParams, "null_node", cuGraphExecNodeSetParams, gexec, NULL, &np);
    TRY(cuGraphExecNodeSetParams, "null_params", cuGraphExecNodeSetParams, gexec, BAD_HANDLE, NULL);
    TRY(cuGraphExecMemcpyNodeSetParams, "null_exec", cuGraphExecMemcpyNodeSetParams, NULL, BAD_HANDLE, &cp, ctx);
    TRY(cuGraphExecMemcpyNodeSetParams, "bad_node", cuGraphExecMemcpyNodeSetParams, gexec, BAD_HANDLE, &cp, ctx);
    TRY(cuGraphExecMemcpyNodeSetParams, "null_params", cuGraphExecMemcpyNodeSetParams, gexec, BAD_HANDLE, NULL,
        ctx);
    TRY(cuGraphExecMemsetNodeSetParams, "null_exec", cuGraphExecMemsetNodeSetParams, NULL, BAD_HANDLE, &sp, ctx);
    TRY(cuGraphExecMemsetNodeSetParams, "bad_node", cuGraphExecMemsetNodeSetParams, gexec, BAD_HANDLE, &sp, ctx);
    TRY(cuGraphExecMemsetNodeSetParams, "null_params", cuGraphExecMemsetNodeSetParams, gexec, BAD_HANDLE, NULL,
        ctx);
    TRY(cuGraphExecChildGraphNodeSetParams, "null_exec", cuGraphExecChildGraphNodeSetParams, NULL, BAD_HANDLE,
        graph);
    TRY(cuGraphExecChildGraphNodeSetParams, "bad_node", cuGraphExecChildGraphNodeSetParams, gexec, BAD_HANDLE,
        graph);
    TRY(cuGraphExecChildGraphNodeSetParams, "null_child", cuGraphExecChildGraphNodeSetParams, gexec, BAD_HANDLE,
        NULL);
    TRY(cuGraphExecDestroy, "null", cuGraphExecDestroy, NULL);
    TRY(cuGraphExecDestroy, "bad_exec", cuGraphExecDestroy, BAD_HANDLE);
    TRY(cuGraphDestroy, "null", cuGraphDestroy, NULL);
    TRY(cuGraphDestroy, "bad_graph", cuGraphDestroy, BAD_HANDLE);
    TRY(cuGraphDestroyNode, "null", cuGraphDestroyNode, NULL);
    TRY(cuGraphDestroyNode, "bad_node", cuGraphDestroyNode, BAD_HANDLE);
    TRY(cuDeviceGraphMemTrim, "device_99", cuDeviceGraphMemTrim, 99);
    TRY(cuDeviceGraphMemTrim, "device_minus_1", cuDeviceGraphMemTrim, -1);
    TRY(cuModuleUnload, "null", cuModuleUnload, NULL);
    TRY(cuModuleUnload, "bad_module", cuModuleUnload, BAD_HANDLE);
    TRY(cuLibraryUnload, "null", cuLibraryUnload, NULL);
    TRY(cuLibraryUnload, "bad_library", cuLibraryUnload, BAD_HANDLE);
}
