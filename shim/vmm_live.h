/* Counted handles whose mappings are the driver's (a pass-through
 * cuMemCreate, a pool handle made the driver's at its export): as in the
 * driver, their memory outlives cuMemRelease while mapped, so their count
 * and the pages they took out of the pool stay until the last unmap. A
 * pool handle's release and unmap are settled under the same lock, so
 * that its count leaves when its memory does (the policy tells when). */
#ifndef SPILLWAY_SHIM_VMM_LIVE_H
#define SPILLWAY_SHIM_VMM_LIVE_H
#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>

#include "policy/policy.h"

/* After the driver mapped [va, va+size) of handle key (as the program
 * names it), if spillway counts key: remembers the mapping. */
void spw_live_mapped(uint64_t key, CUdeviceptr va, size_t size);

/* After cuMemRetainAllocationHandle(va) gave the program driver handle
 * key: one reference more on the handle mapped at va, counted again under
 * key if it had been released (its memory is the program's once more). */
void spw_live_retained(uint64_t key, CUdeviceptr va);

/* cuMemRelease of key by release(key, arg, &last), settled. release sets
 * last false when the handle keeps references spillway's pool counts (a
 * promoted handle retained before its export); a reference a retain took
 * (spw_live_retained) is not the last either. The last forgets key's
 * count, which stays held while key is mapped (given back at the last
 * unmap) or is released now. Returns release's answer. */
CUresult spw_live_release(uint64_t key, CUresult (*release)(uint64_t key, void *arg, bool *last),
                          void *arg);

/* After the driver unmapped [va, va+size): forgets the mappings in it and
 * releases what a released handle held once its last mapping is gone. */
void spw_live_unmapped(CUdeviceptr va, size_t size);
/* The same for key's mapping at va alone (found not to be mapped there). */
void spw_live_unmapped_of(uint64_t key, CUdeviceptr va);

/* The program's unmap of spillway's mappings (sw_vmm_unmap): the pool
 * handles it ended (released before) leave the count. */
CUresult spw_live_pool_unmap(sw_policy *p, CUdeviceptr va, size_t size);

/* spw_account_retag of a handle, never while a release has its entry out
 * of the account (a pool handle made the driver's at its export). */
int spw_live_retag(uint64_t key, int reason);
#endif
