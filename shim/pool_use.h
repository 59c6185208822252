/* The usage figures of the memory pools spillway stands in for (pool
 * attributes USED_MEM_* and RESERVED_MEM_*, pool_use.c): what spillway
 * served from each pool, added to the driver's own figures. A pool is
 * named by its slot in mempools.c's table. */
#ifndef SPILLWAY_SHIM_POOL_USE_H
#define SPILLWAY_SHIM_POOL_USE_H
#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>

/* An allocation spillway served for pool slot (cuMemAllocAsync from the
 * device's current pool, cuMemAllocFromPoolAsync): bytes requested, the
 * footprint it holds of spillway's pool (sw_footprint). */
void spw_pool_use_add(int slot, CUdeviceptr ptr, uint64_t bytes, uint64_t footprint);

/* A pool block's free, sync or async, whatever the stream: take before the
 * policy frees it (so that an allocation reusing the address at once is
 * not taken for it), then done after the free succeeded (footprint of the
 * bytes it freed), or undo after it failed. take is one load until
 * some allocation was counted for a pool. */
typedef struct spw_pool_use_ticket {
    int slot;
    uint64_t bytes;
} spw_pool_use_ticket;
bool spw_pool_use_take(CUdeviceptr ptr, spw_pool_use_ticket *t);
void spw_pool_use_done(const spw_pool_use_ticket *t, uint64_t footprint);
void spw_pool_use_undo(CUdeviceptr ptr, const spw_pool_use_ticket *t);

/* The slot of the pool the live allocation starting at ptr was served for,
 * or -1 (not a stream-ordered pool block): what its MEMPOOL_HANDLE names. */
int spw_pool_use_slot_of(CUdeviceptr ptr);

/* Whether no allocation counts in slot (its pool destroyed, the slot may
 * go to another pool), and its figures' reset for that. */
bool spw_pool_use_idle(int slot);
void spw_pool_use_clear(int slot);

/* spillway's part of a usage attribute (USED_MEM_CURRENT and _HIGH,
 * RESERVED_MEM_CURRENT and _HIGH) of slot's pool in *v; false for any
 * other attribute. */
bool spw_pool_use_figure(int slot, CUmemPool_attribute attr, uint64_t *v);
/* A high mark's reset: to its current figure (other attributes: nothing). */
void spw_pool_use_reset_high(int slot, CUmemPool_attribute attr);
#endif
