/* fakecuda: the graph memory pool of each device, as the CUDA programming
 * guide's "Graph Memory Nodes" describes it. An allocation node's address
 * is reserved when the node is made; its physical memory is reserved at
 * the first launch or upload of a graph that has it, from what the device's
 * pool holds free, the pool growing (and charging the device, so that
 * cuMemGetInfo sees it) when that is not enough. The memory stays reserved
 * across launches, after the graph frees the allocation and after the
 * graph is destroyed: only cuDeviceGraphMemTrim gives back what no live
 * allocation and no queued or running launch uses; a later launch maps it
 * again. Allocations are never backed by the same bytes at once (the
 * driver may overlap those whose lifetimes do not: fakecuda's figures are
 * an upper bound of the driver's, never under). USED_MEM_CURRENT is "the
 * amount of physical memory currently mapped by at least one graph"
 * (programming guide): an allocation's memory stays mapped after its free,
 * until a trim unmaps it, so it does not follow the allocations' lives. */
#include "tests/fakecuda/graph.h"

static struct fc_gmem *all; /* under fc_lock */

void fc_gmem_list_locked(struct fc_gmem *m, bool add)
{
    if (add) {
        m->next = all;
        all = m;
        return;
    }
    for (struct fc_gmem **pp = &all; *pp; pp = &(*pp)->next)
        if (*pp == m) {
            *pp = m->next;
            return;
        }
}

void fc_gmem_live_locked(struct fc_gmem *m, bool live)
{
    m->live = live; /* a live allocation keeps its memory through a trim */
    if (!live && m->refs == 0) /* its graph went while it was live */
        fc_gmem_drop_locked(m);
}

static CUresult map_one(struct fc_gmem *m)
{
    if (m->mapped)
        return CUDA_SUCCESS;
    struct fc_device *d = &fc_devices[m->dev];
    size_t spare = d->gm_reserved - d->gm_mapped;
    size_t grow = m->size > spare ? m->size - spare : 0;
    CUresult r = grow ? fc_device_charge(m->dev, grow) : CUDA_SUCCESS;
    if (r != CUDA_SUCCESS)
        return r;
    d->gm_reserved += grow;
    if (d->gm_reserved > d->gm_reserved_high)
        d->gm_reserved_high = d->gm_reserved;
    d->gm_mapped += m->size;
    if (d->gm_mapped > d->gm_used_high)
        d->gm_used_high = d->gm_mapped;
    m->mapped = true;
    return CUDA_SUCCESS;
}

CUresult fc_gmem_map_graph_locked(const struct CUgraph_st *g)
{
    CUresult r = CUDA_SUCCESS;
    for (const struct CUgraphNode_st *n = g->head; n && r == CUDA_SUCCESS; n = n->next)
        if (n->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC)
            r = map_one(n->u.alloc.mem);
        else if (n->type == CU_GRAPH_NODE_TYPE_GRAPH)
            r = fc_gmem_map_graph_locked(n->u.child);
    return r;
}

/* "Blocks which are not in use by a graph that is either currently
 * executing or scheduled to execute are freed back to the operating
 * system": neither a live allocation nor one a queued launch allocates. */
FC_EXPORT CUresult cuDeviceGraphMemTrim(CUdevice dev)
{
    FC_FAULT(cuDeviceGraphMemTrim);
    CUresult r = fc_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&fc_lock);
    struct fc_device *d = &fc_devices[dev];
    for (struct fc_gmem *m = all; m; m = m->next)
        if (m->dev == dev && m->mapped && !m->live && !m->inflight) {
            m->mapped = false;
            d->gm_mapped -= m->size;
        }
    fc_device_uncharge(dev, d->gm_reserved - d->gm_mapped);
    d->gm_reserved = d->gm_mapped;
    pthread_mutex_unlock(&fc_lock);
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuDeviceGetGraphMemAttribute(CUdevice dev, CUgraphMem_attribute attr, void *value)
{
    FC_FAULT(cuDeviceGetGraphMemAttribute);
    CUresult r = fc_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fc_lock);
    struct fc_device *d = &fc_devices[dev];
    switch (attr) {
    case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT: *(cuuint64_t *)value = d->gm_mapped; break;
    case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH: *(cuuint64_t *)value = d->gm_used_high; break;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT: *(cuuint64_t *)value = d->gm_reserved; break;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH: *(cuuint64_t *)value = d->gm_reserved_high; break;
    default: r = CUDA_ERROR_INVALID_VALUE; break;
    }
    pthread_mutex_unlock(&fc_lock);
    return r;
}

/* Only the high marks, and only reset to 0 (they restart from the
 * current figure, as the memory pools' do). */
FC_EXPORT CUresult cuDeviceSetGraphMemAttribute(CUdevice dev, CUgraphMem_attribute attr, void *value)
{
    FC_FAULT(cuDeviceSetGraphMemAttribute);
    CUresult r = fc_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (!value || *(cuuint64_t *)value != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fc_lock);
    struct fc_device *d = &fc_devices[dev];
    if (attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH)
        d->gm_used_high = d->gm_mapped;
    else if (attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)
        d->gm_reserved_high = d->gm_reserved;
    else
        r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&fc_lock);
    return r;
}
