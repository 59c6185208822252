/* The program's memory pools. The driver answers no question about what a
 * CUmemoryPool hands out, so spillway remembers it where the pool appears:
 * cuMemPoolCreate (its properties: location, kind, handle types, usage,
 * size cap), the device getters (cuDeviceGetDefaultMemPool,
 * cuDeviceGetMemPool: device pools) and CUDA 13's getters by location and
 * kind (cuMemGetDefaultMemPool, cuMemGetMemPool: host and managed pools
 * too). A getter never overwrites what a creation recorded (a pool made
 * exportable and then set current is still exportable); cuMemPoolDestroy
 * forgets, under the same lock as the driver call, so a handle the driver
 * reuses at once is remembered afresh.
 *
 * Pools are few and made rarely; every cuMemAllocFromPoolAsync looks its
 * pool up, so the table is read without a lock (a slot's fields are
 * atomics, its pool published after them) and written under one. A pool
 * the table never saw (made before spillway was loaded) is a device pool
 * of the stream's device, unless the table ever overflowed: then an
 * unknown pool is the driver's, since it may be a host pool.
 *
 * cuMemAllocAsync allocates from the stream's device's current pool: the
 * setters (cuDeviceSetMemPool, CUDA 13's cuMemSetMemPool) remember it per
 * device, and destroying it makes the default current again, as the
 * driver does.
 *
 * A slot's index also names the pool's usage figures (pool_use.h), which
 * cuMemPoolGetAttribute adds to the driver's and cuMemPoolSetAttribute's
 * reset of a high mark resets (hooked here, for the pools' table): a
 * slot whose pool was destroyed while allocations spillway served from it
 * live is not given to another pool until they are freed, so that their
 * frees count against no other pool. */
#include "shim/mempools.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "policy/policy.h"
#include "shim/handler.h"
#include "shim/log.h"
#include "shim/pool_use.h"

struct pool_slot {
    _Atomic(uintptr_t) pool; /* 0: free */
    atomic_int route;        /* spw_mempool_route's answer */
    atomic_int dev;
};

static struct pool_slot slots[SPW_MAX_POOLS];
/* Slots ever used: lookups scan no further (a program has a few pools). */
static atomic_uint used;
static atomic_bool overflowed;
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
/* Per device, the pool the program made current (0: the default). */
static _Atomic(uintptr_t) current[SW_MAX_DEVICES];

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
    if (props->handleTypes != CU_MEM_HANDLE_TYPE_NONE)
        return SW_PT_IPC;
    /* A special usage (hardware decompression) needs the driver's memory;
     * a size cap is the pool's own out-of-memory answer, which spillway's
     * pool would not give. */
    if (props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED || props->usage || props->maxSize)
        return SW_PT_OTHER;
    return -1;
}

/* Under slots_lock: pool's slot, or NULL; a free one (pool NULL) may be
 * one never used yet, and is none a destroyed pool's live allocations
 * still count in (its figures start afresh). */
static struct pool_slot *find_locked(CUmemoryPool pool)
{
    unsigned n = atomic_load_explicit(&used, memory_order_relaxed);
    for (unsigned i = 0; i < n; i++)
        if (atomic_load_explicit(&slots[i].pool, memory_order_relaxed) == (uintptr_t)pool &&
            (pool || spw_pool_use_idle((int)i))) {
            if (!pool)
                spw_pool_use_clear((int)i);
            return &slots[i];
        }
    return !pool && n < SPW_MAX_POOLS ? &slots[n] : NULL;
}

/* Records what pool is; overwrite: also when it is known (a creation, the
 * authority on its properties), else only a pool seen for the first time. */
static void remember(CUmemoryPool pool, int route, int dev, bool overwrite)
{
    if (!pool)
        return;
    pthread_mutex_lock(&slots_lock);
    struct pool_slot *slot = find_locked(pool);
    bool fresh = !slot;
    if (fresh)
        slot = find_locked(NULL);
    if (slot && (fresh || overwrite)) {
        atomic_store_explicit(&slot->route, route, memory_order_relaxed);
        atomic_store_explicit(&slot->dev, dev, memory_order_relaxed);
        if (fresh) { /* its fields first: a reader that finds the pool reads them */
            atomic_store_explicit(&slot->pool, (uintptr_t)pool, memory_order_release);
            unsigned i = (unsigned)(slot - slots);
            if (i >= atomic_load_explicit(&used, memory_order_relaxed))
                atomic_store_explicit(&used, i + 1, memory_order_release);
        }
    }
    if (!slot)
        atomic_store_explicit(&overflowed, true, memory_order_release);
    pthread_mutex_unlock(&slots_lock);
    if (!slot)
        spw_warn("more than %d memory pools: allocations from pool %p and from every pool spillway "
                 "does not know are left to the driver", SPW_MAX_POOLS, (void *)pool);
}

/* pool's slot index, or -1; lock-free. */
static int lookup(CUmemoryPool pool)
{
    if (!pool)
        return -1;
    unsigned n = atomic_load_explicit(&used, memory_order_acquire);
    for (unsigned i = 0; i < n; i++)
        if (atomic_load_explicit(&slots[i].pool, memory_order_acquire) == (uintptr_t)pool)
            return (int)i;
    return -1;
}

int spw_mempool_route(CUmemoryPool pool, int *dev, int *slot)
{
    *dev = -1;
    int i = lookup(pool);
    if (slot)
        *slot = i;
    if (i >= 0) {
        *dev = atomic_load_explicit(&slots[i].dev, memory_order_relaxed);
        return atomic_load_explicit(&slots[i].route, memory_order_relaxed);
    }
    return atomic_load_explicit(&overflowed, memory_order_acquire) ? SW_PT_OTHER : -1;
}

int spw_mempool_slot(CUmemoryPool pool)
{
    int i = lookup(pool);
    if (i >= 0 || !pool)
        return i;
    /* A pool made before spillway was loaded: remembered as what routing
     * takes it for (a device pool of the stream's device). A full table
     * leaves it uncounted, and routing as it was. */
    pthread_mutex_lock(&slots_lock);
    struct pool_slot *slot = find_locked(pool);
    if (!slot && (slot = find_locked(NULL))) {
        atomic_store_explicit(&slot->route, -1, memory_order_relaxed);
        atomic_store_explicit(&slot->dev, -1, memory_order_relaxed);
        atomic_store_explicit(&slot->pool, (uintptr_t)pool, memory_order_release);
        unsigned k = (unsigned)(slot - slots);
        if (k >= atomic_load_explicit(&used, memory_order_relaxed))
            atomic_store_explicit(&used, k + 1, memory_order_release);
    }
    pthread_mutex_unlock(&slots_lock);
    return slot ? (int)(slot - slots) : -1;
}

CUmemoryPool spw_mempool_of_slot(int slot)
{
    if (slot < 0 || slot >= SPW_MAX_POOLS)
        return NULL;
    return (CUmemoryPool)atomic_load_explicit(&slots[slot].pool, memory_order_acquire);
}

CUresult spw_h_mem_pool_create(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_pool_create);
    CUresult r = real(pool, poolProps);
    if (r == CUDA_SUCCESS && pool && poolProps && !spw_disabled()) {
        int dev, route = route_of(poolProps, &dev);
        remember(*pool, route, dev, true);
    }
    return r;
}

CUresult spw_h_mem_pool_destroy(CUmemoryPool pool)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_pool_destroy);
    pthread_mutex_lock(&slots_lock);
    CUresult r = real(pool);
    struct pool_slot *slot = r == CUDA_SUCCESS && pool ? find_locked(pool) : NULL;
    if (slot)
        atomic_store_explicit(&slot->pool, 0, memory_order_release);
    /* "Destroying the current mempool of a device sets the default mempool
     * of that device as the current mempool for that device." */
    for (int d = 0; r == CUDA_SUCCESS && pool && d < SW_MAX_DEVICES; d++) {
        uintptr_t was = (uintptr_t)pool;
        atomic_compare_exchange_strong(&current[d], &was, 0);
    }
    pthread_mutex_unlock(&slots_lock);
    return r;
}

/* Per device, its default pool's slot + 1 (0: not asked yet). A default
 * pool is never destroyed, so its slot stays its own. */
static atomic_int default_slot[SW_MAX_DEVICES];

/* The slot of dev's default pool, named by the driver once per device. */
static int default_pool_slot(int dev)
{
    int s = atomic_load_explicit(&default_slot[dev], memory_order_acquire);
    if (s)
        return s - 1;
    CUmemoryPool dflt = NULL;
    __typeof__(spw_real.spw_h_device_get_default_mem_pool) get =
        SPW_REAL(spw_h_device_get_default_mem_pool);
    if (!get || get(&dflt, dev) != CUDA_SUCCESS || !dflt)
        return -1;
    CUmemLocation at = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev};
    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED, .location = at};
    int pool_dev, route = route_of(&props, &pool_dev);
    remember(dflt, route, pool_dev, false);
    if ((s = lookup(dflt)) >= 0)
        atomic_store_explicit(&default_slot[dev], s + 1, memory_order_release);
    return s;
}

int spw_mempool_current(int dev, int *slot)
{
    *slot = -1;
    if (dev < 0 || dev >= SW_MAX_DEVICES)
        return -1;
    uintptr_t pool = atomic_load_explicit(&current[dev], memory_order_acquire);
    if (!pool) {
        *slot = default_pool_slot(dev);
        return -1;
    }
    int i = lookup((CUmemoryPool)pool);
    if (i >= 0) {
        int route = atomic_load_explicit(&slots[i].route, memory_order_relaxed);
        if (route < 0)
            *slot = i;
        return route;
    }
    if (atomic_load_explicit(&overflowed, memory_order_acquire))
        return SW_PT_OTHER;
    *slot = spw_mempool_slot((CUmemoryPool)pool);
    return -1;
}

/* After the driver made pool dev's current one (answer r); under the lock
 * that cuMemPoolDestroy holds, so that a pool destroyed meanwhile is not
 * left current. */
static CUresult made_current(CUresult r, int dev, CUmemoryPool pool)
{
    if (r == CUDA_SUCCESS && dev >= 0 && dev < SW_MAX_DEVICES)
        atomic_store_explicit(&current[dev], (uintptr_t)pool, memory_order_release);
    return r;
}

CUresult spw_h_device_set_mem_pool(CUdevice dev, CUmemoryPool pool)
{
    SPW_REAL_OR_RETURN(real, spw_h_device_set_mem_pool);
    pthread_mutex_lock(&slots_lock);
    CUresult r = made_current(real(dev, pool), dev, pool);
    pthread_mutex_unlock(&slots_lock);
    return r;
}

/* CUDA 13's: "If the location type is CU_MEM_LOCATION_TYPE_DEVICE and the
 * allocation type is CU_MEM_ALLOCATION_TYPE_PINNED, then this API is the
 * equivalent of calling cuDeviceSetMemPool"; other locations and kinds
 * are no device's current pool for cuMemAllocAsync. */
CUresult spw_h_mem_set_mem_pool(CUmemLocation *location, CUmemAllocationType type, CUmemoryPool pool)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_set_mem_pool);
    pthread_mutex_lock(&slots_lock);
    CUresult r = real(location, type, pool);
    if (location && location->type == CU_MEM_LOCATION_TYPE_DEVICE && type == CU_MEM_ALLOCATION_TYPE_PINNED)
        made_current(r, location->id, pool);
    pthread_mutex_unlock(&slots_lock);
    return r;
}

/* Peers of a pool spillway serves: the memory the program gets from it is
 * spillway's, mapped with the access of the pool's device's mappings, so
 * the grant goes there (for every peer a descriptor gives access; a
 * revocation is not applied: spillway's mappings keep what they had).
 * Pools spillway does not serve, or never saw, are the driver's alone. */
CUresult spw_h_mem_pool_set_access(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_pool_set_access);
    CUresult r = real(pool, map, count);
    int owner;
    if (r != CUDA_SUCCESS || !map || spw_disabled() || spw_mempool_route(pool, &owner, NULL) >= 0 || owner < 0)
        return r;
    for (size_t i = 0; i < count; i++)
        if (map[i].location.type == CU_MEM_LOCATION_TYPE_DEVICE && map[i].location.id != owner &&
            map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE)
            spw_pool_grant_peer(owner, map[i].location.id);
    return r;
}

/* After the driver named *pool for a location and kind (answer r). */
static CUresult located(CUresult r, const CUmemoryPool *pool, const CUmemLocation *loc, CUmemAllocationType type)
{
    if (r == CUDA_SUCCESS && pool && loc && !spw_disabled()) {
        CUmemPoolProps props = {.allocType = type, .location = *loc};
        int dev, route = route_of(&props, &dev);
        remember(*pool, route, dev, false);
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

CUresult spw_h_device_get_default_mem_pool(CUmemoryPool *pool_out, CUdevice dev)
{
    SPW_REAL_OR_RETURN(real, spw_h_device_get_default_mem_pool);
    CUmemLocation at = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev};
    return located(real(pool_out, dev), pool_out, &at, CU_MEM_ALLOCATION_TYPE_PINNED);
}

CUresult spw_h_device_get_mem_pool(CUmemoryPool *pool, CUdevice dev)
{
    SPW_REAL_OR_RETURN(real, spw_h_device_get_mem_pool);
    CUmemLocation at = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev};
    return located(real(pool, dev), pool, &at, CU_MEM_ALLOCATION_TYPE_PINNED);
}

/* A pool's usage attributes (USED_MEM_*, RESERVED_MEM_*): the driver's
 * figure plus what spillway serves for the pool (pool_use.c says what each
 * counts); pools spillway never served answer the driver's alone. */
CUresult spw_h_mem_pool_get_attribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_pool_get_attribute);
    CUresult r = real(pool, attr, value);
    uint64_t mine;
    if (r == CUDA_SUCCESS && value && !spw_disabled() &&
        spw_pool_use_figure(lookup(pool), attr, &mine))
        *(cuuint64_t *)value += mine;
    return r;
}

/* The driver's reset of a high mark (it accepts 0 only: "reset to the
 * current value") resets spillway's part too; a refused one nothing. */
CUresult spw_h_mem_pool_set_attribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_pool_set_attribute);
    CUresult r = real(pool, attr, value);
    if (r == CUDA_SUCCESS && !spw_disabled())
        spw_pool_use_reset_high(lookup(pool), attr);
    return r;
}
