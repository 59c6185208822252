/* A memory pool's usage figures, for the pools spillway stands in for
 * (cuMemPoolGetAttribute and cuMemPoolSetAttribute, mempools.c, add them
 * to the driver's).
 * Allocations spillway serves from a CUmemoryPool never reach the driver's
 * pool, so the driver's figures (cuMemPoolGetAttribute's USED_MEM_CURRENT,
 * RESERVED_MEM_CURRENT and their HIGH marks) would not show them; PyTorch's
 * cudaMallocAsync backend builds memory_allocated/memory_reserved and
 * their peaks from exactly these, XLA's cuda_async allocator its stats and
 * out-of-memory reports. Each pool's answer is the driver's figure plus
 * spillway's:
 *
 *  - used: the bytes requested by the live allocations spillway served for
 *    the pool ("the total size of all of the memory allocated from the
 *    pool and not available for reuse"), counted when served and uncounted
 *    at the free (cuMemFree or cuMemFreeAsync, on any stream: spillway's
 *    reuse rules, not the pool, decide when the block is reused);
 *  - reserved: what those allocations hold of spillway's pool, each its
 *    footprint (sw_footprint: its slab slot's size class, else its size
 *    rounded to the 4 KiB granule), never below used. Freed blocks go back
 *    to spillway's pool, shared by every allocation of the device, not to
 *    the memory pool: they are no pool's reserve, so cuMemPoolTrimTo (not
 *    hooked) has nothing of spillway's to trim, and RELEASE_THRESHOLD
 *    does not keep any;
 *  - the HIGH marks: the most each reached since the pool's last reset;
 *    the driver's own reset (only 0 is accepted: "reset to the current
 *    value") resets spillway's too. The answer is the driver's mark plus
 *    spillway's: exact while one of them serves the pool, as it is but
 *    for allocations spillway had to pass (a device without spillway's
 *    pool), an upper bound otherwise.
 *
 * Hot paths: an allocation adds to its pool's own counters (atomics, a
 * cache line per pool) and records ptr -> pool in a sharded map (one
 * shard lock); a free of a pool block looks its pointer up only once some
 * allocation was ever counted here (one load before that). */
#include "shim/pool_use.h"

#include <pthread.h>
#include <stdatomic.h>

#include "shim/log.h"
#include "shim/mempools.h" /* SPW_MAX_POOLS */
#include "shim/ptrmap.h"
#include "shim/size_text.h"

struct pool_use {
    _Atomic uint64_t used, reserved, used_high, reserved_high;
} __attribute__((aligned(64)));

static struct pool_use uses[SPW_MAX_POOLS];
static struct spw_map owners; /* pool block -> slot (dev), requested bytes (size) */
static pthread_once_t owners_once = PTHREAD_ONCE_INIT;
static atomic_bool any; /* some allocation was ever counted */

static void init_owners(void)
{
    spw_map_init(&owners);
}

static void raise_to(_Atomic uint64_t *high, uint64_t v)
{
    uint64_t h = atomic_load_explicit(high, memory_order_relaxed);
    while (v > h && !atomic_compare_exchange_weak_explicit(high, &h, v, memory_order_relaxed,
                                                           memory_order_relaxed))
        ;
}

/* reserved first, used last on the way up (the reverse on the way down):
 * a reader never sees used above reserved. */
static void count(int slot, uint64_t bytes, uint64_t footprint)
{
    struct pool_use *u = &uses[slot];
    raise_to(&u->reserved_high, atomic_fetch_add(&u->reserved, footprint) + footprint);
    raise_to(&u->used_high, atomic_fetch_add(&u->used, bytes) + bytes);
}

static void uncount(int slot, uint64_t bytes, uint64_t footprint)
{
    struct pool_use *u = &uses[slot];
    atomic_fetch_sub(&u->used, bytes);
    atomic_fetch_sub(&u->reserved, footprint);
}

void spw_pool_use_add(int slot, CUdeviceptr ptr, uint64_t bytes, uint64_t footprint)
{
    if (slot < 0 || slot >= SPW_MAX_POOLS)
        return;
    pthread_once(&owners_once, init_owners);
    if (!atomic_load_explicit(&any, memory_order_relaxed))
        atomic_store(&any, true);
    /* A stale entry cannot be there: a block's entry is taken before the
     * policy frees it, and the address is handed out only after. */
    if (spw_map_insert(&owners, (uint64_t)ptr, slot, bytes, NULL) < 0) {
        char b[SPW_SIZE_TEXT_MAX];
        spw_warn("out of memory for the pool-usage table: 0x%llx of %s is left out of its "
                 "memory pool's USED/RESERVED attributes", (unsigned long long)ptr,
                 spw_size_text(b, sizeof b, bytes));
        return;
    }
    count(slot, bytes, footprint);
}

bool spw_pool_use_take(CUdeviceptr ptr, spw_pool_use_ticket *t)
{
    if (!atomic_load_explicit(&any, memory_order_acquire))
        return false;
    pthread_once(&owners_once, init_owners);
    struct spw_map_entry e;
    if (spw_map_remove(&owners, (uint64_t)ptr, &e) != 0)
        return false;
    t->slot = e.dev;
    t->bytes = e.size;
    return true;
}

void spw_pool_use_done(const spw_pool_use_ticket *t, uint64_t footprint)
{
    uncount(t->slot, t->bytes, footprint);
}

void spw_pool_use_undo(CUdeviceptr ptr, const spw_pool_use_ticket *t)
{
    /* The block stays live and the pool's: its entry goes back (its
     * figures never left). */
    if (spw_map_insert(&owners, (uint64_t)ptr, t->slot, t->bytes, NULL) < 0) {
        spw_warn("out of memory for the pool-usage table: 0x%llx stays counted in its memory "
                 "pool's USED/RESERVED attributes after its free failed", (unsigned long long)ptr);
    }
}

int spw_pool_use_slot_of(CUdeviceptr ptr)
{
    if (!atomic_load_explicit(&any, memory_order_acquire))
        return -1;
    pthread_once(&owners_once, init_owners);
    struct spw_map_entry e;
    return spw_map_find(&owners, (uint64_t)ptr, &e) == 0 ? e.dev : -1;
}

bool spw_pool_use_idle(int slot)
{
    return atomic_load(&uses[slot].used) == 0 && atomic_load(&uses[slot].reserved) == 0;
}

void spw_pool_use_clear(int slot)
{
    atomic_store(&uses[slot].used_high, 0);
    atomic_store(&uses[slot].reserved_high, 0);
}

/* slot's counter for attr, and in *cur the current figure a high mark
 * tracks (NULL for a current figure); NULL: not a usage attribute. */
static _Atomic uint64_t *figure(int slot, CUmemPool_attribute attr, _Atomic uint64_t **cur)
{
    if (slot < 0 || slot >= SPW_MAX_POOLS)
        return NULL;
    struct pool_use *u = &uses[slot];
    switch (attr) {
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *cur = NULL; return &u->used;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: *cur = NULL; return &u->reserved;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *cur = &u->used; return &u->used_high;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: *cur = &u->reserved; return &u->reserved_high;
    default: return NULL;
    }
}

bool spw_pool_use_figure(int slot, CUmemPool_attribute attr, uint64_t *v)
{
    _Atomic uint64_t *cur, *f = figure(slot, attr, &cur);
    if (!f)
        return false;
    *v = atomic_load(f);
    if (cur) { /* a mark reset while an allocation raced it is at least current */
        uint64_t c = atomic_load(cur);
        *v = *v > c ? *v : c;
    }
    return true;
}

void spw_pool_use_reset_high(int slot, CUmemPool_attribute attr)
{
    _Atomic uint64_t *cur, *f = figure(slot, attr, &cur);
    if (f && cur)
        atomic_store(f, atomic_load(cur));
}
