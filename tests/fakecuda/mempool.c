/* fakecuda: stream-ordered allocation (cuMemAllocAsync and memory pools).
 * Memory is usable at once; a cuMemFreeAsync releases it when its stream
 * reaches the free, so a later touch through a stale pointer faults (its
 * bytes stay reserved by a device pool up to the pool's release threshold,
 * for the pool's next allocations, until cuMemPoolTrimTo). On a
 * capturing stream an allocation becomes a memory allocation node, owned by
 * the graph ("the allocation is owned by the graph instead of the memory
 * pool"), and a free a memory free node, which must name a graph
 * allocation (graph_alloc.c). */
#include <stdlib.h>

#include "tests/fakecuda/graph.h"
#include "tests/fakecuda/internal.h"

static struct fc_mempool *pools; /* under fc_lock */

struct fc_mempool *fc_mempool_new(int dev, bool is_default, bool host)
{
    struct fc_mempool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->magic = FC_MAGIC_POOL;
    p->dev = dev;
    p->is_default = is_default;
    p->host = host;
    p->reuse_follow = p->reuse_opportunistic = p->reuse_internal = 1;
    if (!host && dev >= 0 && dev < FC_MAX_DEVICES)
        p->access[dev] = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    pthread_mutex_lock(&fc_lock);
    p->next = pools;
    pools = p;
    pthread_mutex_unlock(&fc_lock);
    return p;
}

static bool pool_known(CUmemoryPool h)
{
    pthread_mutex_lock(&fc_lock);
    bool ok = false;
    for (struct fc_mempool *p = pools; p && !ok; p = p->next)
        ok = (CUmemoryPool)p == h;
    pthread_mutex_unlock(&fc_lock);
    return ok;
}

static CUresult device_pool(CUmemoryPool *pool, CUdevice dev, bool current)
{
    CUresult r = fc_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fc_lock);
    *pool = (CUmemoryPool)(current ? fc_devices[dev].current_pool : fc_devices[dev].default_pool);
    pthread_mutex_unlock(&fc_lock);
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev)
{
    FC_FAULT(cuDeviceGetDefaultMemPool);
    return device_pool(pool, dev, false);
}

FC_EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    FC_FAULT(cuDeviceGetMemPool);
    return device_pool(pool, dev, true);
}

/* CUDA 13's pools by location and kind: a device's pinned pools, one
 * default pool of pinned host memory (made at the first ask; fakecuda has
 * one NUMA node, 0) and the host's current pool (cuMemSetMemPool; NULL:
 * the default). Managed pools are not emulated (NOT_SUPPORTED, one of the
 * documented answers). */
static struct fc_mempool *host_default, *host_current; /* under fc_lock */

static CUresult location_pool(CUmemoryPool *pool, const CUmemLocation *loc, CUmemAllocationType type,
                              bool current)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!pool || !loc)
        return CUDA_ERROR_INVALID_VALUE;
    if (type == CU_MEM_ALLOCATION_TYPE_MANAGED)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    if (loc->type == CU_MEM_LOCATION_TYPE_DEVICE)
        return device_pool(pool, loc->id, current) == CUDA_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
    if (loc->type != CU_MEM_LOCATION_TYPE_HOST && (loc->type != CU_MEM_LOCATION_TYPE_HOST_NUMA || loc->id != 0))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fc_lock);
    struct fc_mempool *p = current && host_current ? host_current : host_default;
    pthread_mutex_unlock(&fc_lock);
    if (!p) {
        struct fc_mempool *made = fc_mempool_new(0, true, true); /* a default pool: never destroyed */
        if (!made)
            return CUDA_ERROR_OUT_OF_MEMORY;
        pthread_mutex_lock(&fc_lock);
        if (!host_default)
            host_default = made; /* else another thread's won: this one stays unused on the list */
        p = host_default;
        pthread_mutex_unlock(&fc_lock);
    }
    *pool = (CUmemoryPool)p;
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuMemGetDefaultMemPool(CUmemoryPool *pool, CUmemLocation *loc, CUmemAllocationType type)
{
    FC_FAULT(cuMemGetDefaultMemPool);
    return location_pool(pool, loc, type, false);
}

FC_EXPORT CUresult cuMemGetMemPool(CUmemoryPool *pool, CUmemLocation *loc, CUmemAllocationType type)
{
    FC_FAULT(cuMemGetMemPool);
    return location_pool(pool, loc, type, true);
}

static CUresult device_set_pool(CUdevice dev, CUmemoryPool pool)
{
    CUresult r = fc_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    /* "The memory pool must be local to the specified device" */
    if (!pool_known(pool) || ((struct fc_mempool *)pool)->host || ((struct fc_mempool *)pool)->dev != dev)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fc_lock);
    fc_devices[dev].current_pool = (struct fc_mempool *)pool;
    pthread_mutex_unlock(&fc_lock);
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    FC_FAULT(cuDeviceSetMemPool);
    return device_set_pool(dev, pool);
}

/* "The location and allocation type specified must match those of the
 * pool otherwise CUDA_ERROR_INVALID_VALUE is returned"; a device's pinned
 * pool is cuDeviceSetMemPool's. */
FC_EXPORT CUresult cuMemSetMemPool(CUmemLocation *loc, CUmemAllocationType type, CUmemoryPool pool)
{
    FC_FAULT(cuMemSetMemPool);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!loc || type != CU_MEM_ALLOCATION_TYPE_PINNED || !pool_known(pool))
        return CUDA_ERROR_INVALID_VALUE;
    if (loc->type == CU_MEM_LOCATION_TYPE_DEVICE)
        return fc_check_device(loc->id) != CUDA_SUCCESS ? CUDA_ERROR_INVALID_VALUE
                                                        : device_set_pool(loc->id, pool);
    if ((loc->type != CU_MEM_LOCATION_TYPE_HOST && (loc->type != CU_MEM_LOCATION_TYPE_HOST_NUMA || loc->id != 0)) ||
        !((struct fc_mempool *)pool)->host)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fc_lock);
    host_current = (struct fc_mempool *)pool;
    pthread_mutex_unlock(&fc_lock);
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    FC_FAULT(cuMemPoolCreate);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!pool || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    /* Host pools: "CU_MEM_LOCATION_TYPE_HOST are not IPC capable and
     * handleTypes must be 0"; HOST_NUMA names a node (fakecuda has node 0);
     * "HOST_NUMA_CURRENT will result in CUDA_ERROR_INVALID_VALUE". */
    bool host = props->location.type == CU_MEM_LOCATION_TYPE_HOST ||
                props->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA;
    if (host && ((props->location.type == CU_MEM_LOCATION_TYPE_HOST && props->handleTypes) ||
                 (props->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA && props->location.id != 0)))
        return CUDA_ERROR_INVALID_VALUE;
    if (!host && (props->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
                  fc_check_device(props->location.id) != CUDA_SUCCESS))
        return CUDA_ERROR_INVALID_VALUE;
    struct fc_mempool *p = fc_mempool_new(host ? 0 : props->location.id, false, host);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *pool = (CUmemoryPool)p;
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    FC_FAULT(cuMemPoolDestroy);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!pool_known(pool) || ((struct fc_mempool *)pool)->is_default)
        return CUDA_ERROR_INVALID_VALUE;
    /* "Destroying the current mempool of a device sets the default mempool
     * of that device as the current mempool for that device." Kept on the
     * list: allocations still refer to it. What it keeps goes back now,
     * the rest as they are freed ("released automatically once there are
     * no more outstanding allocations"). */
    pthread_mutex_lock(&fc_lock);
    ((struct fc_mempool *)pool)->release_threshold = 0;
    fc_mempool_trim_locked((struct fc_mempool *)pool, 0);
    for (int d = 0; d < FC_MAX_DEVICES; d++)
        if (fc_devices[d].current_pool == (struct fc_mempool *)pool)
            fc_devices[d].current_pool = fc_devices[d].default_pool;
    if (host_current == (struct fc_mempool *)pool)
        host_current = NULL;
    pthread_mutex_unlock(&fc_lock);
    return CUDA_SUCCESS;
}

/* "When more than the release threshold bytes of memory are held by the
 * memory pool, the allocator will try to release memory back to the OS on
 * the next call to stream, event or context synchronize": fakecuda
 * releases when the free happens (earlier, never later). */
void fc_mempool_trim_locked(struct fc_mempool *pool, cuuint64_t keep)
{
    if (pool->reserved <= keep)
        return;
    cuuint64_t give = pool->reserved - keep;
    if (give > pool->cached)
        give = pool->cached;
    pool->cached -= give;
    pool->reserved -= give;
    fc_device_uncharge(pool->dev, (size_t)give);
}

/* "Releases memory back to the OS until the pool contains fewer than
 * minBytesToKeep reserved bytes, or there is no more memory that the
 * allocator can safely release": what backs live allocations stays. */
FC_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    FC_FAULT(cuMemPoolTrimTo);
    if (!pool_known(pool))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fc_lock);
    fc_mempool_trim_locked((struct fc_mempool *)pool, minBytesToKeep);
    pthread_mutex_unlock(&fc_lock);
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    FC_FAULT(cuMemPoolSetAttribute);
    if (!pool_known(pool) || !value)
        return CUDA_ERROR_INVALID_VALUE;
    struct fc_mempool *p = (struct fc_mempool *)pool;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&fc_lock);
    switch (attr) {
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: p->release_threshold = *(cuuint64_t *)value; break;
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: p->reuse_follow = *(int *)value; break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: p->reuse_opportunistic = *(int *)value; break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: p->reuse_internal = *(int *)value; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: /* only a reset to 0 is allowed */
        if (*(cuuint64_t *)value) r = CUDA_ERROR_INVALID_VALUE; else p->reserved_high = p->reserved;
        break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        if (*(cuuint64_t *)value) r = CUDA_ERROR_INVALID_VALUE; else p->used_high = p->used;
        break;
    default: r = CUDA_ERROR_INVALID_VALUE; break;
    }
    pthread_mutex_unlock(&fc_lock);
    return r;
}

FC_EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    FC_FAULT(cuMemPoolGetAttribute);
    if (!pool_known(pool) || !value)
        return CUDA_ERROR_INVALID_VALUE;
    struct fc_mempool *p = (struct fc_mempool *)pool;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&fc_lock);
    switch (attr) {
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: *(cuuint64_t *)value = p->release_threshold; break;
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: *(int *)value = p->reuse_follow; break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: *(int *)value = p->reuse_opportunistic; break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: *(int *)value = p->reuse_internal; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: *(cuuint64_t *)value = p->reserved; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: *(cuuint64_t *)value = p->reserved_high; break;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *(cuuint64_t *)value = p->used; break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *(cuuint64_t *)value = p->used_high; break;
    default: r = CUDA_ERROR_INVALID_VALUE; break;
    }
    pthread_mutex_unlock(&fc_lock);
    return r;
}

FC_EXPORT CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count)
{
    FC_FAULT(cuMemPoolSetAccess);
    if (!pool_known(pool) || (!map && count))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE)
            return CUDA_ERROR_INVALID_VALUE;
        if (fc_check_device(map[i].location.id) != CUDA_SUCCESS)
            return CUDA_ERROR_INVALID_DEVICE;
        if (map[i].flags > CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return CUDA_ERROR_INVALID_VALUE;
    }
    struct fc_mempool *p = (struct fc_mempool *)pool;
    pthread_mutex_lock(&fc_lock);
    for (size_t i = 0; i < count; i++)
        p->access[map[i].location.id] = map[i].flags;
    pthread_mutex_unlock(&fc_lock);
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool pool, CUmemLocation *location)
{
    FC_FAULT(cuMemPoolGetAccess);
    if (!flags || !location || !pool_known(pool) || location->type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (fc_check_device(location->id) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&fc_lock);
    *flags = ((struct fc_mempool *)pool)->access[location->id];
    pthread_mutex_unlock(&fc_lock);
    return CUDA_SUCCESS;
}

static CUresult alloc_async(CUdeviceptr *dptr, size_t size, struct fc_mempool *pool, CUstream h, bool ptds)
{
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptds, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (!pool) {
        pthread_mutex_lock(&fc_lock);
        pool = fc_devices[fc_stream_device(s)].current_pool;
        pthread_mutex_unlock(&fc_lock);
    }
    if (!dptr || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    bool capturing;
    if ((r = fc_capture_enter(s, &capturing)) != CUDA_SUCCESS)
        return r;
    if (capturing && pool->host) { /* not emulated: host memory nodes */
        fc_capture_add(s, NULL);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (pool->host) /* usable at once; freed in stream order like the rest */
        return fc_alloc_device(size, FC_HOST, pool, 0, dptr);
    if (capturing) {
        struct CUgraphNode_st *n = fc_node_new(CU_GRAPH_NODE_TYPE_MEM_ALLOC);
        if (n && (r = fc_gmem_new(pool->dev, size, &n->u.alloc.mem)) != CUDA_SUCCESS) {
            fc_node_free(n); /* no allocation yet: nothing a lock guards */
            n = NULL;
        }
        CUdeviceptr p = n ? n->u.alloc.mem->ptr : 0;
        if (n) {
            n->u.alloc.p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
            n->u.alloc.p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
            n->u.alloc.p.poolProps.location.id = pool->dev;
            n->u.alloc.p.bytesize = size;
            n->u.alloc.p.dptr = p;
        }
        CUresult a = fc_capture_add(s, n);
        if (a == CUDA_SUCCESS)
            *dptr = p;
        return n ? a : r != CUDA_SUCCESS ? r : a;
    }
    return fc_alloc_device(size, FC_ASYNC, pool, pool->dev, dptr);
}

static void run_free(void *arg)
{
    pthread_mutex_lock(&fc_lock);
    struct fc_region *reg = fc_region_find((uintptr_t)arg);
    if (reg && reg->kind != FC_GRAPH_MEM) /* a graph keeps its allocation's pages */
        fc_region_release_locked(reg);
    else if (reg && reg->gmem)
        fc_gmem_live_locked(reg->gmem, false);
    pthread_mutex_unlock(&fc_lock);
}

static CUresult free_async(CUdeviceptr dptr, CUstream h, bool ptds)
{
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptds, &s);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&fc_lock);
    struct fc_region *reg = fc_region_find((uintptr_t)dptr);
    /* cuMemFreeAsync also frees cuMemAlloc memory, in stream order */
    bool ok = reg && reg->base == (uintptr_t)dptr && !reg->freeing &&
              (reg->kind == FC_ASYNC || reg->kind == FC_DEVICE || reg->kind == FC_GRAPH_MEM ||
               (reg->kind == FC_HOST && reg->pool));
    bool graph = ok && reg->kind == FC_GRAPH_MEM;
    pthread_mutex_unlock(&fc_lock);
    if (!ok)
        return CUDA_ERROR_INVALID_VALUE;
    bool capturing;
    if ((r = fc_capture_enter(s, &capturing)) != CUDA_SUCCESS)
        return r;
    if (capturing) {
        if (!graph) { /* "must therefore be passed the address of a graph allocation" */
            fc_capture_add(s, NULL);
            return CUDA_ERROR_INVALID_VALUE;
        }
        struct CUgraphNode_st *n = fc_node_new(CU_GRAPH_NODE_TYPE_MEM_FREE);
        if (n)
            n->u.free_ptr = dptr;
        return fc_capture_add(s, n);
    }
    pthread_mutex_lock(&fc_lock); /* again: another thread may have freed it meanwhile */
    reg = fc_region_find((uintptr_t)dptr);
    ok = reg && reg->base == (uintptr_t)dptr && !reg->freeing;
    if (ok)
        reg->freeing = true;
    pthread_mutex_unlock(&fc_lock);
    if (!ok)
        return CUDA_ERROR_INVALID_VALUE;
    fc_stream_enqueue(s, run_free, (void *)(uintptr_t)dptr, NULL);
    return CUDA_SUCCESS;
}

static CUresult alloc_from_pool(CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream h, bool ptds)
{
    if (!pool_known(pool))
        return CUDA_ERROR_INVALID_VALUE;
    return alloc_async(dptr, size, (struct fc_mempool *)pool, h, ptds);
}

FC_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *d, size_t n, CUstream h) { FC_FAULT(cuMemAllocAsync); return alloc_async(d, n, NULL, h, false); }
FC_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *d, size_t n, CUstream h) { FC_FAULT(cuMemAllocAsync); return alloc_async(d, n, NULL, h, true); }
FC_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *d, size_t n, CUmemoryPool p, CUstream h) { FC_FAULT(cuMemAllocFromPoolAsync); return alloc_from_pool(d, n, p, h, false); }
FC_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *d, size_t n, CUmemoryPool p, CUstream h) { FC_FAULT(cuMemAllocFromPoolAsync); return alloc_from_pool(d, n, p, h, true); }
FC_EXPORT CUresult cuMemFreeAsync(CUdeviceptr d, CUstream h) { FC_FAULT(cuMemFreeAsync); return free_async(d, h, false); }
FC_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr d, CUstream h) { FC_FAULT(cuMemFreeAsync); return free_async(d, h, true); }
