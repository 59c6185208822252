/* fakecuda: graph allocations (struct fc_gmem: what a memory allocation
 * node allocates, owned by every graph object that has the node) and the
 * calls of memory allocation and free nodes. The physical memory behind
 * the allocations, the device's graph memory pool, is graph_mem.c's. */
#include <stdlib.h>

#include "tests/fakecuda/graph.h"

/* Whether g has memory allocation or free nodes, which the driver neither
 * clones (cuGraphClone) nor embeds as a child graph (cuGraphAddChildGraphNode):
 * an allocation node's address is its own, never a copy's. */
bool fc_graph_has_mem_nodes(const struct CUgraph_st *g)
{
    for (const struct CUgraphNode_st *x = g->head; x; x = x->next)
        if (x->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC || x->type == CU_GRAPH_NODE_TYPE_MEM_FREE ||
            (x->type == CU_GRAPH_NODE_TYPE_GRAPH && fc_graph_has_mem_nodes(x->u.child)))
            return true;
    return false;
}
/* ---- graph allocations ---------------------------------------------------- */

CUresult fc_gmem_new(int dev, size_t size, struct fc_gmem **out)
{
    struct fc_gmem *m = calloc(1, sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = fc_alloc_device(size, FC_GRAPH_MEM, NULL, dev, &m->ptr);
    if (r != CUDA_SUCCESS) {
        free(m);
        return r;
    }
    m->size = fc_page_round(size);
    m->dev = dev;
    m->refs = 1;
    pthread_mutex_lock(&fc_lock);
    fc_region_find((uintptr_t)m->ptr)->gmem = m;
    fc_gmem_list_locked(m, true);
    pthread_mutex_unlock(&fc_lock);
    *out = m;
    return CUDA_SUCCESS;
}

void fc_gmem_ref(struct fc_gmem *m)
{
    pthread_mutex_lock(&fc_lock);
    m->refs++;
    pthread_mutex_unlock(&fc_lock);
}

/* Under fc_lock: m goes (no node names it, and it is not live). Its
 * physical memory stays in the device's graph pool (until a trim), as the
 * driver's does when a graph is destroyed. */
void fc_gmem_drop_locked(struct fc_gmem *m)
{
    if (m->mapped)
        fc_devices[m->dev].gm_mapped -= m->size;
    fc_gmem_list_locked(m, false);
    struct fc_region *reg = fc_region_find((uintptr_t)m->ptr);
    if (reg && reg->gmem == m)
        fc_region_release_locked(reg);
    free(m);
}

/* The last node naming m gone: m goes too, unless it is live ("Graph
 * destruction does not automatically free any live graph-allocated
 * memory"): then at its free (fc_gmem_live_locked). */
void fc_gmem_unref(struct fc_gmem *m)
{
    pthread_mutex_lock(&fc_lock);
    if (--m->refs == 0 && !m->live)
        fc_gmem_drop_locked(m);
    pthread_mutex_unlock(&fc_lock);
}

/* A graph allocation is live between its allocation node and its free (a
 * free node, or cuMemFreeAsync/cuMemFree after the launch): a second free
 * without an allocation between is an error, as for any allocation. */
void fc_gmem_mark(CUdeviceptr ptr, bool live)
{
    pthread_mutex_lock(&fc_lock);
    struct fc_region *reg = fc_region_find((uintptr_t)ptr);
    if (reg && reg->kind == FC_GRAPH_MEM) {
        reg->freeing = !live;
        if (reg->gmem)
            fc_gmem_live_locked(reg->gmem, live);
    }
    pthread_mutex_unlock(&fc_lock);
}

/* The allocation is made now and lives as long as a graph object has the
 * node (the graph, its clones, their executable graphs): fakecuda's model
 * of "the allocation is owned by the graph". */
FC_EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                          size_t ndeps, CUDA_MEM_ALLOC_NODE_PARAMS *p)
{
    FC_FAULT(cuGraphAddMemAllocNode);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!p || p->bytesize == 0 || p->poolProps.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        p->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        p->poolProps.handleTypes != CU_MEM_HANDLE_TYPE_NONE)
        return CUDA_ERROR_INVALID_VALUE;
    if (fc_check_device(p->poolProps.location.id) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_VALUE;
    fc_graph_lock();
    bool known = fc_graph_known(g);
    fc_graph_unlock();
    if (!known || !out)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUgraphNode_st *n = fc_node_new(CU_GRAPH_NODE_TYPE_MEM_ALLOC);
    if (!n)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if ((r = fc_gmem_new(p->poolProps.location.id, p->bytesize, &n->u.alloc.mem)) != CUDA_SUCCESS) {
        fc_graph_lock();
        fc_node_free(n);
        fc_graph_unlock();
        return r;
    }
    p->dptr = n->u.alloc.mem->ptr;
    n->u.alloc.p = *p;
    n->u.alloc.p.accessDescs = NULL;
    n->u.alloc.p.accessDescCount = 0;
    return fc_graph_add_node(out, g, deps, ndeps, n);
}

FC_EXPORT CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS *p)
{
    FC_FAULT(cuGraphMemAllocNodeGetParams);
    return FC_NODE_GET(hNode, CU_GRAPH_NODE_TYPE_MEM_ALLOC, u.alloc.p, p);
}

static bool is_graph_alloc(CUdeviceptr p)
{
    pthread_mutex_lock(&fc_lock);
    struct fc_region *reg = fc_region_find((uintptr_t)p);
    bool ok = reg && reg->kind == FC_GRAPH_MEM && reg->base == (uintptr_t)p;
    pthread_mutex_unlock(&fc_lock);
    return ok;
}

FC_EXPORT CUresult cuGraphAddMemFreeNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                         size_t ndeps, CUdeviceptr dptr)
{
    FC_FAULT(cuGraphAddMemFreeNode);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!is_graph_alloc(dptr)) /* "must be ... the address of a graph allocation" */
        return CUDA_ERROR_INVALID_VALUE;
    struct CUgraphNode_st *n = fc_node_new(CU_GRAPH_NODE_TYPE_MEM_FREE);
    if (n)
        n->u.free_ptr = dptr;
    return fc_graph_add_node(out, g, deps, ndeps, n);
}

FC_EXPORT CUresult cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr *dptr)
{
    FC_FAULT(cuGraphMemFreeNodeGetParams);
    return FC_NODE_GET(hNode, CU_GRAPH_NODE_TYPE_MEM_FREE, u.free_ptr, dptr);
}
