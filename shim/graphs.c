/* CUDA graphs as spill sees them (issue 12): the pool pointers each
 * executable graph's nodes use, so that cuGraphLaunch touches them (a
 * replayed graph's data is hot, not the coldest) and fills back those that
 * live on the host, like the launches of its kernels would.
 *
 * Recorded at instantiation from the graph's nodes (kernel parameters read
 * back with cuGraphKernelNodeGetParams and scanned like a launch's, copy
 * and set operands, the addresses of batch memory operations, child
 * graphs), again at cuGraphExecUpdate, and added to at
 * cuGraphExec(Kernel|Memcpy|Memset|ChildGraph|BatchMemOp)NodeSetParams
 * and cuGraphExecNodeSetParams; forgotten at cuGraphExecDestroy.
 * Graphs that PyTorch and XLA capture from streams are instantiated like
 * any other. Only pointers into spillway's memory are kept, each once. */
#include "shim/copy_range.h"
#include "shim/gate_use.h"
#include "shim/graph_mem.h"
#include "shim/graph_walk.h"
#include "shim/handler.h"
#include "shim/log.h"
#include "shim/param_scan.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define BUCKETS 256

struct exec_ptrs {
    CUgraphExec exec;
    CUdeviceptr *p;
    size_t n, cap;
    /* Its memory alloc nodes (graph_mem.c): their bytes, on which devices,
     * the bytes placed on each (alloc_on, SW_MAX_DEVICES of them; NULL
     * without memory for it: then each device is taken to have them all),
     * and the trim generation its launch last settled them at (0: due,
     * not settled since its instantiation or update or since a trim of one
     * of its devices). */
    uint64_t alloc_bytes, alloc_devs, *alloc_on;
    unsigned alloc_gen;
    /* Settled by an upload, as of that trim generation, and not launched
     * since (alloc_gen is 0 meanwhile, so that its first launch is seen). */
    unsigned upload_gen;
    /* Their addresses, and whether a launch of it went through
     * (graph_captured.c: a captured allocation never run has no memory;
     * an upload maps it but runs nothing). */
    CUdeviceptr *allocs;
    size_t nallocs, allocs_cap;
    bool ran;
    struct exec_ptrs *next;
};

static struct exec_ptrs *buckets[BUCKETS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Records with alloc nodes: while none, a launch looks nothing up. */
static _Atomic unsigned with_allocs;

static struct exec_ptrs **slot_of(CUgraphExec e)
{
    size_t h = (size_t)(((uintptr_t)e >> 4) * 0x9E3779B97F4A7C15ull >> 56);
    return &buckets[h % BUCKETS];
}

/* Adds a pool pointer once (the lists stay short: a graph names few). */
static void add(void *ctx, CUdeviceptr w)
{
    struct exec_ptrs *x = ctx;
    if (!spw_pool_owner(w))
        return;
    for (size_t i = 0; i < x->n; i++)
        if (x->p[i] == w)
            return;
    if (x->n == x->cap) {
        size_t cap = x->cap ? 2 * x->cap : 16;
        CUdeviceptr *g = realloc(x->p, cap * sizeof *g);
        if (!g)
            return; /* one pointer fewer touched: slower, never wrong */
        x->p = g;
        x->cap = cap;
    }
    x->p[x->n++] = w;
}

/* Set for good once an address could not be kept: every address is then
 * taken as held (spw_graph_allocs_held), so that captured allocations stay
 * counted rather than go while an executable graph may still run them. */
static _Atomic bool allocs_lost;

/* An alloc node's address. */
static void add_alloc(struct exec_ptrs *x, CUdeviceptr p)
{
    if (x->nallocs == x->allocs_cap) {
        size_t cap = x->allocs_cap ? 2 * x->allocs_cap : 8;
        CUdeviceptr *g = realloc(x->allocs, cap * sizeof *g);
        if (!g) {
            atomic_store_explicit(&allocs_lost, true, memory_order_relaxed);
            return;
        }
        x->allocs = g;
        x->allocs_cap = cap;
    }
    x->allocs[x->nallocs++] = p;
}

static void add_copy(struct exec_ptrs *x, const CUDA_MEMCPY3D *c)
{
    if (c->srcMemoryType == CU_MEMORYTYPE_DEVICE || c->srcMemoryType == CU_MEMORYTYPE_UNIFIED)
        add(x, c->srcDevice);
    if (c->dstMemoryType == CU_MEMORYTYPE_DEVICE || c->dstMemoryType == CU_MEMORYTYPE_UNIFIED)
        add(x, c->dstDevice);
}

static void add_kernel(struct exec_ptrs *x, const CUDA_KERNEL_NODE_PARAMS *k)
{
    CUfunction f = k->func ? k->func : (CUfunction)k->kern;
    spw_param_scan(f, k->kernelParams, k->extra, add, x);
}

static void add_memops(struct exec_ptrs *x, const CUstreamBatchMemOpParams *ops, unsigned n)
{
    for (unsigned i = 0; ops && i < n; i++) {
        CUdeviceptr a;
        if (spw_memop_reach(&ops[i], &a))
            add(x, a);
    }
}

static void visit_node(CUgraphNode node, CUgraphNodeType t, void *arg)
{
    struct exec_ptrs *x = arg;
    if (t == CU_GRAPH_NODE_TYPE_KERNEL && spw_drv.cuGraphKernelNodeGetParams_v2) {
        CUDA_KERNEL_NODE_PARAMS k;
        if (spw_drv.cuGraphKernelNodeGetParams_v2(node, &k) == CUDA_SUCCESS)
            add_kernel(x, &k);
    } else if (t == CU_GRAPH_NODE_TYPE_MEMCPY && spw_drv.cuGraphMemcpyNodeGetParams) {
        CUDA_MEMCPY3D c;
        if (spw_drv.cuGraphMemcpyNodeGetParams(node, &c) == CUDA_SUCCESS)
            add_copy(x, &c);
    } else if (t == CU_GRAPH_NODE_TYPE_MEMSET && spw_drv.cuGraphMemsetNodeGetParams) {
        CUDA_MEMSET_NODE_PARAMS m;
        if (spw_drv.cuGraphMemsetNodeGetParams(node, &m) == CUDA_SUCCESS)
            add(x, m.dst);
    } else if (t == CU_GRAPH_NODE_TYPE_BATCH_MEM_OP && spw_drv.cuGraphBatchMemOpNodeGetParams) {
        CUDA_BATCH_MEM_OP_NODE_PARAMS m;
        if (spw_drv.cuGraphBatchMemOpNodeGetParams(node, &m) == CUDA_SUCCESS)
            add_memops(x, m.paramArray, m.count);
    } else if (t == CU_GRAPH_NODE_TYPE_MEM_ALLOC && spw_drv.cuGraphMemAllocNodeGetParams) {
        CUDA_MEM_ALLOC_NODE_PARAMS a;
        if (spw_drv.cuGraphMemAllocNodeGetParams(node, &a) == CUDA_SUCCESS &&
            a.poolProps.location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
            a.poolProps.location.id >= 0 && a.poolProps.location.id < SW_MAX_DEVICES) {
            int dev = a.poolProps.location.id;
            if (!x->alloc_devs && !x->alloc_on)
                x->alloc_on = calloc(SW_MAX_DEVICES, sizeof *x->alloc_on);
            x->alloc_bytes += a.bytesize;
            x->alloc_devs |= 1ull << dev;
            if (x->alloc_on)
                x->alloc_on[dev] += a.bytesize;
            add_alloc(x, a.dptr);
        }
    }
}

/* A graph whose nodes could not all be read (or an executable graph with
 * no record) may have alloc nodes no record names: every captured
 * allocation stays counted from then on (allocs_lost), or one the
 * executable graph can still run would be uncounted when its graph goes. */
static void unread(void)
{
    if (!atomic_exchange_explicit(&allocs_lost, true, memory_order_relaxed))
        spw_warn("an executable graph's nodes could not all be read (driver error or out of "
                 "memory): captured allocations stay counted until the program frees them");
}

static void collect(struct exec_ptrs *x, CUgraph g, int depth)
{
    if (!spw_graph_walk(g, depth, visit_node, x))
        unread();
}

/* The record of e, made when make says so; under lock. */
static struct exec_ptrs *find(CUgraphExec e, bool make)
{
    struct exec_ptrs **b = slot_of(e);
    for (struct exec_ptrs *x = *b; x; x = x->next)
        if (x->exec == e)
            return x;
    if (!make)
        return NULL;
    struct exec_ptrs *x = calloc(1, sizeof *x);
    if (x) {
        x->exec = e;
        x->next = *b;
        *b = x;
    }
    return x;
}

static void allocs_step(const struct exec_ptrs *x, int sign)
{
    if (x->alloc_bytes)
        atomic_fetch_add_explicit(&with_allocs, (unsigned)sign, memory_order_relaxed);
}

/* What a record's alloc nodes were before an update read its graph again:
 * its figures, and its address list itself (taken, not copied: the read
 * makes a new one). */
struct alloc_nodes {
    uint64_t bytes, devs;
    unsigned gen, upload_gen;
    CUdeviceptr *allocs;
    size_t n;
};

/* Under lock: x's alloc nodes move to *was. */
static void take_alloc_nodes(struct exec_ptrs *x, struct alloc_nodes *was)
{
    *was = (struct alloc_nodes){x->alloc_bytes, x->alloc_devs, x->alloc_gen, x->upload_gen,
                                x->allocs, x->nallocs};
    x->allocs = NULL;
    x->nallocs = x->allocs_cap = 0;
}

/* A successful update leaves the alloc nodes as they were (the driver
 * refuses one that changes them), and with them the memory a settled
 * launch reserved: settled still, or its next replay would be held as a
 * first launch again (at the limit, a needless trim of the memory that
 * replay reuses). Due again if anything read differs. */
static void settled_unless_changed(struct exec_ptrs *x, struct alloc_nodes *was)
{
    bool same = x->alloc_bytes == was->bytes && x->alloc_devs == was->devs && x->nallocs == was->n;
    for (size_t i = 0; same && i < was->n; i++)
        same = x->allocs[i] == was->allocs[i];
    if (same) {
        x->alloc_gen = was->gen;
        x->upload_gen = was->upload_gen;
    }
    free(was->allocs);
}

/* Without a pool there is nothing of spillway's to name, but the graph's
 * alloc nodes are still counted. */
static void record(CUgraphExec e, CUgraph g)
{
    if (spw_disabled())
        return;
    pthread_mutex_lock(&lock);
    struct exec_ptrs *x = find(e, true);
    if (x) {
        struct alloc_nodes was;
        take_alloc_nodes(x, &was); /* ran stays: what it ran may still be live */
        allocs_step(x, -1);
        x->n = 0;
        x->alloc_bytes = x->alloc_devs = 0;
        free(x->alloc_on); /* made again at its first alloc node */
        x->alloc_on = NULL;
        x->alloc_gen = x->upload_gen = 0; /* settled again at its next launch */
        collect(x, g, 0);
        allocs_step(x, 1);
        settled_unless_changed(x, &was);
    } else {
        unread();
    }
    pthread_mutex_unlock(&lock);
}

uint64_t spw_graph_allocs_due(CUgraphExec e, uint64_t bytes_on[SW_MAX_DEVICES], bool *uploaded)
{
    if (!atomic_load_explicit(&with_allocs, memory_order_relaxed))
        return 0;
    uint64_t devs = 0;
    pthread_mutex_lock(&lock);
    struct exec_ptrs *x = find(e, false);
    if (x && !x->alloc_gen) { /* a replay of a settled one: nothing to do */
        if (!x->upload_gen) {
            devs = x->alloc_devs;
            for (int dev = 0; dev < SW_MAX_DEVICES; dev++)
                if (devs >> dev & 1)
                    bytes_on[dev] = x->alloc_on ? x->alloc_on[dev] : x->alloc_bytes;
        } else if (uploaded) { /* a launch */
            /* The first launch after the upload that settled it: run and
             * settled once the driver accepts it (spw_graph_allocs_ran),
             * not before: one it refuses ran nothing, and the next launch
             * is this one again. */
            *uploaded = true;
        }
    }
    pthread_mutex_unlock(&lock);
    return devs;
}

/* The trim generation of each device's last trim (0: none); under lock. */
static unsigned trimmed_at[SW_MAX_DEVICES];

/* A trim of one of its devices after gen (the launch read gen after its
 * holds) may have come after the launch: left due. */
void spw_graph_allocs_settled(CUgraphExec e, unsigned gen, bool launch)
{
    pthread_mutex_lock(&lock);
    struct exec_ptrs *x = find(e, false);
    bool later = false;
    for (uint64_t d = x ? x->alloc_devs : 0; d && !later; d &= d - 1)
        later = trimmed_at[__builtin_ctzll(d)] > gen;
    if (x && !later && launch)
        x->alloc_gen = gen;
    else if (x && !later)
        x->upload_gen = gen;
    pthread_mutex_unlock(&lock);
}

/* Rare (a trim): every record is looked at. */
void spw_graph_allocs_trimmed(int dev, unsigned gen)
{
    if (dev < 0 || dev >= SW_MAX_DEVICES)
        return;
    pthread_mutex_lock(&lock);
    if (gen > trimmed_at[dev]) /* two trims of dev may race here */
        trimmed_at[dev] = gen;
    if (atomic_load_explicit(&with_allocs, memory_order_relaxed))
        for (size_t b = 0; b < BUCKETS; b++)
            for (struct exec_ptrs *x = buckets[b]; x; x = x->next)
                if (x->alloc_devs >> dev & 1)
                    x->alloc_gen = x->upload_gen = 0;
    pthread_mutex_unlock(&lock);
}

void spw_graph_allocs_ran(CUgraphExec e)
{
    pthread_mutex_lock(&lock);
    struct exec_ptrs *x = find(e, false);
    if (x)
        x->ran = true;
    if (x && !x->alloc_gen && x->upload_gen) { /* unless a trim came meanwhile */
        x->alloc_gen = x->upload_gen;
        x->upload_gen = 0;
    }
    pthread_mutex_unlock(&lock);
}

bool spw_graph_allocs_held(CUdeviceptr p)
{
    bool held = atomic_load_explicit(&allocs_lost, memory_order_relaxed);
    pthread_mutex_lock(&lock);
    for (size_t b = 0; b < BUCKETS && !held; b++)
        for (struct exec_ptrs *x = buckets[b]; x && !held; x = x->next)
            for (size_t i = 0; i < x->nallocs && !held; i++)
                held = x->allocs[i] == p;
    pthread_mutex_unlock(&lock);
    return held;
}

size_t spw_graph_forget(CUgraphExec e, CUdeviceptr **allocs, bool *ran)
{
    size_t n = 0;
    *allocs = NULL;
    *ran = false;
    pthread_mutex_lock(&lock);
    for (struct exec_ptrs **pp = slot_of(e); *pp; pp = &(*pp)->next)
        if ((*pp)->exec == e) {
            struct exec_ptrs *x = *pp;
            *pp = x->next;
            allocs_step(x, -1);
            *allocs = x->allocs; /* the caller's now */
            n = x->nallocs;
            *ran = x->ran;
            free(x->p);
            free(x->alloc_on);
            free(x);
            break;
        }
    pthread_mutex_unlock(&lock);
    return n;
}

uint64_t spw_graph_use(sw_policy *g, CUgraphExec e, uint64_t runs_on)
{
    /* The graph's nodes run on its stream's device, which need not be the
     * current context's (one thread launching for several devices): a
     * node there that names another device's pool without peer access (a
     * copy node) must be noted as that device's work, or a move of those
     * pages would not sync it. Noted for the current context's device too,
     * as every submission is. */
    int on = runs_on ? __builtin_ctzll(runs_on) : -1, cur = spw_current_device();
    uint64_t devs = runs_on | (cur >= 0 ? 1ull << cur : 0);
    enum { BATCH = 64 };
    CUdeviceptr p[BATCH];
    size_t n, done = 0;
    int filled = 0;
    do { /* copied out in batches: fills must not run under the lock */
        pthread_mutex_lock(&lock);
        struct exec_ptrs *x = find(e, false);
        n = x && x->n > done ? x->n - done : 0;
        n = n > BATCH ? BATCH : n;
        if (n)
            memcpy(p, x->p + done, n * sizeof *p);
        pthread_mutex_unlock(&lock);
        for (size_t i = 0; i < n; i++) {
            filled |= spw_gate_use(g, p[i]);
            devs |= spw_gate_side_on(p[i], on, cur);
        }
        done += n;
    } while (n == BATCH);
    if (filled)
        spw_gate_filled();
    return devs;
}

CUresult spw_h_graph_instantiate_with_flags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                            unsigned long long flags)
{
    SPW_REAL_OR_RETURN(real, spw_h_graph_instantiate_with_flags);
    CUresult r = real(phGraphExec, hGraph, flags);
    if (r == CUDA_SUCCESS && phGraphExec)
        record(*phGraphExec, hGraph);
    return r;
}

#define INSTANTIATE_V1(handler)                                                          \
    CUresult handler(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,  \
                     char *logBuffer, size_t bufferSize)                                  \
    {                                                                                     \
        SPW_REAL_OR_RETURN(real, handler);                                                \
        CUresult r = real(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);       \
        if (r == CUDA_SUCCESS && phGraphExec)                                             \
            record(*phGraphExec, hGraph);                                                 \
        return r;                                                                         \
    }
INSTANTIATE_V1(spw_h_graph_instantiate_v1)
INSTANTIATE_V1(spw_h_graph_instantiate_v2)

/* cuGraphInstantiateWithParams: graph_mem.c, which an upload flag
 * concerns. */
void spw_graph_record(CUgraphExec e, CUgraph g)
{
    record(e, g);
}

CUresult spw_h_graph_exec_update(CUgraphExec hGraphExec, CUgraph hGraph,
                                 CUgraphExecUpdateResultInfo *resultInfo)
{
    SPW_REAL_OR_RETURN(real, spw_h_graph_exec_update);
    CUresult r = real(hGraphExec, hGraph, resultInfo);
    if (r == CUDA_SUCCESS)
        record(hGraphExec, hGraph);
    return r;
}

CUresult spw_h_graph_exec_update_v1(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode *hErrorNode_out,
                                    CUgraphExecUpdateResult *updateResult_out)
{
    SPW_REAL_OR_RETURN(real, spw_h_graph_exec_update_v1);
    CUresult r = real(hGraphExec, hGraph, hErrorNode_out, updateResult_out);
    if (r == CUDA_SUCCESS)
        record(hGraphExec, hGraph);
    return r;
}

/* A node of e given new operands: they are the graph's too (the old ones
 * stay listed until the next instantiate or update: touched for nothing,
 * never wrong). One of k, c, dst, child (a child graph node's new graph,
 * whose nodes are read as at instantiation) or nops operations. */
struct operands {
    const CUDA_KERNEL_NODE_PARAMS *k;
    const CUDA_MEMCPY3D *c;
    CUdeviceptr dst;
    CUgraph child;
    const CUstreamBatchMemOpParams *ops;
    unsigned nops;
};

static void add_to(CUgraphExec e, struct operands o)
{
    if (spw_disabled() || !spw_pool_policy())
        return;
    pthread_mutex_lock(&lock);
    struct exec_ptrs *x = find(e, true);
    if (x && o.k)
        add_kernel(x, o.k);
    else if (x && o.c)
        add_copy(x, o.c);
    else if (x && o.dst)
        add(x, o.dst);
    else if (x && o.child)
        collect(x, o.child, 1);
    else if (x)
        add_memops(x, o.ops, o.nops);
    pthread_mutex_unlock(&lock);
}

CUresult spw_h_graph_exec_kernel_node_set_params(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                 const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    SPW_REAL_OR_RETURN(real, spw_h_graph_exec_kernel_node_set_params);
    CUresult r = real(hGraphExec, hNode, nodeParams);
    if (r == CUDA_SUCCESS && nodeParams)
        add_to(hGraphExec, (struct operands){.k = nodeParams});
    return r;
}

/* The CUDA 10.1 parameters are the leading fields of today's. */
CUresult spw_h_graph_exec_kernel_node_set_params_v1(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                    const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
    SPW_REAL_OR_RETURN(real, spw_h_graph_exec_kernel_node_set_params_v1);
    CUresult r = real(hGraphExec, hNode, nodeParams);
    if (r == CUDA_SUCCESS && nodeParams) {
        CUDA_KERNEL_NODE_PARAMS k = {
            .func = nodeParams->func, .gridDimX = nodeParams->gridDimX,
            .gridDimY = nodeParams->gridDimY, .gridDimZ = nodeParams->gridDimZ,
            .blockDimX = nodeParams->blockDimX, .blockDimY = nodeParams->blockDimY,
            .blockDimZ = nodeParams->blockDimZ, .sharedMemBytes = nodeParams->sharedMemBytes,
            .kernelParams = nodeParams->kernelParams, .extra = nodeParams->extra};
        add_to(hGraphExec, (struct operands){.k = &k});
    }
    return r;
}

CUresult spw_h_graph_exec_memcpy_node_set_params(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                 const CUDA_MEMCPY3D *copyParams, CUcontext ctx)
{
    SPW_REAL_OR_RETURN(real, spw_h_graph_exec_memcpy_node_set_params);
    CUresult r = spw_copy3d_range_check(copyParams);
    if (r != CUDA_SUCCESS)
        return r;
    r = real(hGraphExec, hNode, copyParams, ctx);
    if (r == CUDA_SUCCESS && copyParams)
        add_to(hGraphExec, (struct operands){.c = copyParams});
    return r;
}

CUresult spw_h_graph_exec_memset_node_set_params(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                 const CUDA_MEMSET_NODE_PARAMS *memsetParams,
                                                 CUcontext ctx)
{
    SPW_REAL_OR_RETURN(real, spw_h_graph_exec_memset_node_set_params);
    CUresult r = spw_memset_node_range_check(memsetParams);
    if (r != CUDA_SUCCESS)
        return r;
    r = real(hGraphExec, hNode, memsetParams, ctx);
    if (r == CUDA_SUCCESS && memsetParams)
        add_to(hGraphExec, (struct operands){.dst = memsetParams->dst});
    return r;
}

/* Its operations' ranges checked first, as the graph's node's were. */
CUresult spw_h_graph_exec_batch_mem_op_node_set_params(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                       const CUDA_BATCH_MEM_OP_NODE_PARAMS *nodeParams)
{
    SPW_REAL_OR_RETURN(real, spw_h_graph_exec_batch_mem_op_node_set_params);
    CUresult r = nodeParams ? spw_memops_range_check(nodeParams->paramArray, nodeParams->count) : CUDA_SUCCESS;
    if (r != CUDA_SUCCESS)
        return r;
    r = real(hGraphExec, hNode, nodeParams);
    if (r == CUDA_SUCCESS && nodeParams)
        add_to(hGraphExec, (struct operands){.ops = nodeParams->paramArray, .nops = nodeParams->count});
    return r;
}

/* A child graph node of the executable graph given the parameters of
 * another graph of its shape (XLA's nested command buffers, at each
 * update): what that graph's nodes name is the executable graph's now. */
CUresult spw_h_graph_exec_child_graph_node_set_params(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                      CUgraph childGraph)
{
    SPW_REAL_OR_RETURN(real, spw_h_graph_exec_child_graph_node_set_params);
    CUresult r = real(hGraphExec, hNode, childGraph);
    if (r == CUDA_SUCCESS && childGraph)
        add_to(hGraphExec, (struct operands){.child = childGraph});
    return r;
}

/* The ranges of a copy, set or batch memory operation node's new
 * parameters (copy_range.h). */
CUresult spw_h_graph_exec_node_set_params(CUgraphExec hGraphExec, CUgraphNode hNode,
                                          CUgraphNodeParams *nodeParams)
{
    SPW_REAL_OR_RETURN(real, spw_h_graph_exec_node_set_params);
    CUresult r = spw_node_params_range_check(nodeParams);
    if (r != CUDA_SUCCESS)
        return r;
    r = real(hGraphExec, hNode, nodeParams);
    if (r != CUDA_SUCCESS || !nodeParams)
        return r;
    if (nodeParams->type == CU_GRAPH_NODE_TYPE_KERNEL) {
        CUDA_KERNEL_NODE_PARAMS k = {.func = nodeParams->kernel.func, .kernelParams = nodeParams->kernel.kernelParams,
                                     .extra = nodeParams->kernel.extra, .kern = nodeParams->kernel.kern};
        add_to(hGraphExec, (struct operands){.k = &k});
    } else if (nodeParams->type == CU_GRAPH_NODE_TYPE_MEMCPY) {
        add_to(hGraphExec, (struct operands){.c = &nodeParams->memcpy.copyParams});
    } else if (nodeParams->type == CU_GRAPH_NODE_TYPE_MEMSET) {
        add_to(hGraphExec, (struct operands){.dst = nodeParams->memset.dst});
    } else if (nodeParams->type == CU_GRAPH_NODE_TYPE_GRAPH && nodeParams->graph.graph) {
        add_to(hGraphExec, (struct operands){.child = nodeParams->graph.graph});
    } else if (nodeParams->type == CU_GRAPH_NODE_TYPE_BATCH_MEM_OP) {
        add_to(hGraphExec,
               (struct operands){.ops = nodeParams->memOp.paramArray, .nops = nodeParams->memOp.count});
    }
    return r;
}
