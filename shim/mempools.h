/* What spillway knows of the program's memory pools (CUmemoryPool), for
 * cuMemAllocFromPoolAsync (alloc_async.c): which pools are not device
 * memory spillway may serve, and which device each device pool is on. */
#ifndef SPILLWAY_SHIM_MEMPOOLS_H
#define SPILLWAY_SHIM_MEMPOOLS_H
#include <cuda.h>

/* How an allocation from pool is to be made: -1, served from spillway's
 * pool of *dev (the pool's device; -1 when spillway never saw the pool
 * made: the stream's device); else the sw_passthrough_reason it passes
 * the pool by with (a host-located pool: its memory is pinned host memory
 * the program reads from the CPU; a pool with shareable handle types: the
 * program exports its pointers; managed, a special usage or a size cap:
 * other). */
int spw_mempool_route(CUmemoryPool pool, int *dev);

/* How cuMemAllocAsync on a stream of dev allocates: from dev's current
 * pool (cuDeviceSetMemPool, cuMemSetMemPool), so spw_mempool_route's
 * answer for that pool: -1 (served from spillway's pool, also while the
 * default pool is current) or the reason it passes the pool by. */
int spw_mempool_current_route(int dev);
#endif
