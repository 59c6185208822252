/* The program's memory pools: cuMemPoolCreate and cuMemPoolDestroy are
 * hooked to remember what each pool created hands out (location, kind,
 * handle types), since the driver answers no question about it later, and
 * so are CUDA 13's getters of the pools of a location and kind
 * (cuMemGetDefaultMemPool, cuMemGetMemPool: a host or managed pool). Pools are
 * few and made rarely; every cuMemAllocFromPoolAsync looks its pool up, so
 * the table is read without a lock (a slot's pool is published after its
 * fields) and written under one. Pools the table never saw (made before
 * spillway was loaded, or the devices' own default pools) are device pools
 * of the stream's device, as before this table. */
#include "shim/mempools.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>

#include "policy/policy.h"
#include "shim/handler.h"
#include "shim/log.h"

#define SPW_MAX_POOLS 256

struct pool_slot {
    _Atomic(uintptr_t) pool; /* 0: free */
    atomic_int route;        /* spw_mempool_route's answer */
    atomic_int dev;
};

static struct pool_slot slots[SPW_MAX_POOLS];
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;

/* What allocations from a pool of these properties are (spw_mempool_route). */
static int route_of(const CUmemPoolProps *props, int *dev)
{
    *dev = -1;
    if (props->allocType == CU_MEM_ALLOCATION_TYPE_MANAGED)
        return SW_PT_MANAGED;
    switch (props->location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        *dev = props->location.id;
        break;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
        return SW_PT_HOST_LOCATION;
    default:
        return SW_PT_OTHER;
    }
    if (props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
        return SW_PT_OTHER;
    if (props->handleTypes != CU_MEM_HANDLE_TYPE_NONE)
        return SW_PT_IPC;
    return -1;
}

static void remember(CUmemoryPool pool, int route, int dev)
{
    pthread_mutex_lock(&slots_lock);
    struct pool_slot *slot = NULL, *free_slot = NULL;
    for (unsigned i = 0; i < SPW_MAX_POOLS && !slot; i++) {
        uintptr_t p = atomic_load_explicit(&slots[i].pool, memory_order_relaxed);
        if (p == (uintptr_t)pool)
            slot = &slots[i]; /* asked again, or a handle reused: what it is now */
        else if (!p && !free_slot)
            free_slot = &slots[i];
    }
    bool fresh = !slot && free_slot;
    if (fresh)
        slot = free_slot;
    if (slot) {
        atomic_store_explicit(&slot->route, route, memory_order_relaxed);
        atomic_store_explicit(&slot->dev, dev, memory_order_relaxed);
    }
    if (fresh) /* its fields first: a reader that finds the pool reads them */
        atomic_store_explicit(&slot->pool, (uintptr_t)pool, memory_order_release);
    pthread_mutex_unlock(&slots_lock);
    if (!slot)
        spw_warn("more than %d memory pools: pool %p is served as a pool of the allocating stream's device",
                 SPW_MAX_POOLS, (void *)pool);
}

static void forget(CUmemoryPool pool)
{
    pthread_mutex_lock(&slots_lock);
    for (unsigned i = 0; i < SPW_MAX_POOLS; i++)
        if (atomic_load_explicit(&slots[i].pool, memory_order_relaxed) == (uintptr_t)pool)
            atomic_store_explicit(&slots[i].pool, 0, memory_order_release);
    pthread_mutex_unlock(&slots_lock);
}

int spw_mempool_route(CUmemoryPool pool, int *dev)
{
    *dev = -1;
    for (unsigned i = 0; i < SPW_MAX_POOLS; i++)
        if (atomic_load_explicit(&slots[i].pool, memory_order_acquire) == (uintptr_t)pool) {
            *dev = atomic_load_explicit(&slots[i].dev, memory_order_relaxed);
            return atomic_load_explicit(&slots[i].route, memory_order_relaxed);
        }
    return -1;
}

CUresult spw_h_mem_pool_create(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_pool_create);
    CUresult r = real(pool, poolProps);
    if (r == CUDA_SUCCESS && pool && poolProps && !spw_disabled()) {
        int dev, route = route_of(poolProps, &dev);
        remember(*pool, route, dev);
    }
    return r;
}

/* After the driver named *pool for a location and kind (answer r). */
static CUresult located(CUresult r, const CUmemoryPool *pool, const CUmemLocation *loc, CUmemAllocationType type)
{
    if (r == CUDA_SUCCESS && pool && loc && !spw_disabled()) {
        CUmemPoolProps props = {.allocType = type, .location = *loc};
        int dev, route = route_of(&props, &dev);
        remember(*pool, route, dev);
    }
    return r;
}

CUresult spw_h_mem_get_default_mem_pool(CUmemoryPool *pool_out, CUmemLocation *location,
                                        CUmemAllocationType type)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_get_default_mem_pool);
    return located(real(pool_out, location, type), pool_out, location, type);
}

CUresult spw_h_mem_get_mem_pool(CUmemoryPool *pool, CUmemLocation *location, CUmemAllocationType type)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_get_mem_pool);
    return located(real(pool, location, type), pool, location, type);
}

CUresult spw_h_mem_pool_destroy(CUmemoryPool pool)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_pool_destroy);
    CUresult r = real(pool);
    if (r == CUDA_SUCCESS)
        forget(pool);
    return r;
}
