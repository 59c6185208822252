/* What spillway knows of the program's memory pools (CUmemoryPool), for
 * cuMemAllocFromPoolAsync (alloc_async.c): which pools are not device
 * memory spillway may serve, and which device each device pool is on. */
#ifndef SPILLWAY_SHIM_MEMPOOLS_H
#define SPILLWAY_SHIM_MEMPOOLS_H
#include <cuda.h>

/* The most pools spillway remembers at once. */
#define SPW_MAX_POOLS 256

/* How an allocation from pool is to be made: -1, served from spillway's
 * pool of *dev (the pool's device; -1 when spillway never saw the pool
 * made: the stream's device); else the sw_passthrough_reason it passes
 * the pool by with (a host-located pool: its memory is pinned host memory
 * the program reads from the CPU; a pool with shareable handle types: the
 * program exports its pointers; managed, a special usage or a size cap:
 * other). *slot (NULL: not asked) is the pool's place in the table
 * (spw_mempool_slot's), -1 when it is not there: one look-up for both. */
int spw_mempool_route(CUmemoryPool pool, int *dev, int *slot);

/* How cuMemAllocAsync on a stream of dev allocates: from dev's current
 * pool (cuDeviceSetMemPool, cuMemSetMemPool), so spw_mempool_route's
 * answer for that pool: -1 (served from spillway's pool, also while the
 * default pool is current) or the reason it passes the pool by. When -1,
 * *slot is that pool's slot (spw_mempool_slot: the one the program set,
 * else the default pool, which the driver names once per device), whose
 * usage attributes count what spillway serves; one look-up for both. */
int spw_mempool_current(int dev, int *slot);

/* The index (below SPW_MAX_POOLS) of pool's place in the table, which
 * names its usage figures (pool_use.h), or -1; a pool never seen (made
 * before spillway was loaded) is remembered where there is room. */
int spw_mempool_slot(CUmemoryPool pool);
/* The pool in slot, or NULL (a free slot, or its pool destroyed). */
CUmemoryPool spw_mempool_of_slot(int slot);

#endif
