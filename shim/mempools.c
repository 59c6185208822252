/* The program's memory pools: cuMemPoolCreate and cuMemPoolDestroy are
 * hooked to remember what each pool created hands out (location, handle
 * types), since the driver answers no question about it later. Pools are
 * few and made rarely; every cuMemAllocFromPoolAsync looks its pool up, so
 * the table is read without a lock (a slot's pool is published after its
 * fields) and written under one. Pools the table never saw (made before
 * spillway was loaded, or the devices' own default pools) are device pools
 * of the stream's device, as before this table. */
#include "shim/mempools.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "policy/policy.h"
#include "shim/handler.h"
#include "shim/log.h"

#define SPW_MAX_POOLS 256

struct pool_slot {
    _Atomic(uintptr_t) pool; /* 0: free */
    int route;               /* spw_mempool_route's answer */
    int dev;
};

static struct pool_slot slots[SPW_MAX_POOLS];
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;

/* What allocations from a pool of these properties are (spw_mempool_route). */
static int route_of(const CUmemPoolProps *props, int *dev)
{
    *dev = -1;
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
    struct pool_slot *free_slot = NULL;
    for (unsigned i = 0; i < SPW_MAX_POOLS; i++) {
        uintptr_t p = atomic_load_explicit(&slots[i].pool, memory_order_relaxed);
        if (p == (uintptr_t)pool)
            atomic_store_explicit(&slots[i].pool, 0, memory_order_release); /* a handle reused */
        if (!free_slot && (p == 0 || p == (uintptr_t)pool))
            free_slot = &slots[i];
    }
    if (free_slot) {
        free_slot->route = route;
        free_slot->dev = dev;
        atomic_store_explicit(&free_slot->pool, (uintptr_t)pool, memory_order_release);
    }
    pthread_mutex_unlock(&slots_lock);
    if (!free_slot)
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
            *dev = slots[i].dev;
            return slots[i].route;
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

CUresult spw_h_mem_pool_destroy(CUmemoryPool pool)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_pool_destroy);
    CUresult r = real(pool);
    if (r == CUDA_SUCCESS)
        forget(pool);
    return r;
}
