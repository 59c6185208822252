/* The process's page pool (policy/), as the handlers see it: created on the
 * first allocation, one device at a time, and never destroyed (at exit the
 * driver may already be unloading; the OS takes the memory back). */
#ifndef SPILLWAY_SHIM_POOL_SETUP_H
#define SPILLWAY_SHIM_POOL_SETUP_H
#include "policy/policy.h"

#include <stdatomic.h>

/* The policy, or NULL before the first device was set up (lock-free). */
sw_policy *spw_pool_policy(void);

/* Set once, when the first device whose pool spills is set up; never
 * cleared: a device without spill has no host pages, and touching its
 * pointers answers false at once. Submissions read it on every call
 * (gate_use.h's spw_gate: one atomic load). */
extern sw_policy *_Atomic spw_pool_spilling;

/* The policy when dev's allocations are served from the pool, setting the
 * device up on first use (limit, SPILLWAY_PREALLOCATE, SPILLWAY_HOST_LIMIT);
 * NULL when they pass through (SPILLWAY_DISABLE, or the pool could not be
 * set up: then spillway only caps bytes on dev). One atomic load once set up. */
sw_policy *spw_pool_for(int dev);

/* Whether dev is served from the pool (without setting it up). */
int spw_pool_serves(int dev);

/* Whether dev's pool is yet to be set up (its first allocation will try):
 * neither served from the pool nor known to pass through. */
int spw_pool_pending(int dev);

/* Whether dev's pool spills (SPILLWAY_SPILL): its allocations are bounded by
 * the pool and the host limit, not by the shim's byte count. */
int spw_pool_spills(int dev);

/* Bytes of dev's allocations that live in host memory now (0 without a
 * spilling pool): what the limit of pass-through allocations discounts. */
uint64_t spw_pool_spilled_bytes(int dev);

/* Whether ptr lies in memory the pool owns (lock-free). */
static inline sw_policy *spw_pool_owner(CUdeviceptr ptr)
{
    sw_policy *p = spw_pool_policy();
    return p && sw_owns(p, ptr) ? p : NULL;
}

/* The program enabled access from accessor to owner's memory: granted on
 * the pool's mappings of owner now, or when owner is set up. */
void spw_pool_grant_peer(int owner, int accessor);

/* Publishes dev's pool size, and with spill its spill gauges and counters,
 * in the stats segment where they changed. */
void spw_pool_publish(int dev);

/* Before the driver allocates bytes of device memory outside the pool on
 * dev for reason (sw_passthrough_lends): the pool gives the pages back
 * (sw_lend), so that pool and pass-through together stay within the limit.
 * 0, or -1 when it cannot (counted and logged as the pool's refusal, reason
 * "limit"). spw_pool_unlend after such memory was freed or not allocated
 * (reason < 0: pool memory, nothing to do). */
int spw_pool_lend(int dev, int reason, uint64_t bytes);
void spw_pool_unlend(int dev, int reason, uint64_t bytes);

/* Counts an allocation that passes through (policy counter and debug log). */
void spw_pool_passthrough(int dev, sw_passthrough_reason reason, size_t bytes, const char *what);

/* Serves a cuMemAlloc-class allocation of bytes on dev from the pool
 * (async: cuMemAllocAsync's reuse rules on stream): reserves the bytes
 * against the limit, allocates, counts (serve.c). */
CUresult spw_serve_alloc(sw_policy *p, int dev, size_t bytes, int async, CUstream stream,
                         CUdeviceptr *out);
/* Takes bytes of dev's count for a pool allocation about to be made: with
 * spill counted without a check (the pool bounds it), or with
 * SPILLWAY_OVERSUBSCRIBE above 1 against what the program is told
 * (spw_account_reserve_told); without spill reserved against the limit
 * (spw_account_reserve). 0, or -1 when refused. */
int spw_pool_reserve(int dev, uint64_t bytes);
/* Frees a pool pointer (async: on stream) and releases its bytes. */
CUresult spw_serve_free(sw_policy *p, CUdeviceptr ptr, int async, CUstream stream);

#endif
