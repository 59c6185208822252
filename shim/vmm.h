/* Program VMM over the pool (alloc_vmm.c, vmm_map.c). */
#ifndef SPILLWAY_SHIM_VMM_H
#define SPILLWAY_SHIM_VMM_H
#include <cuda.h>
#include <stdint.h>

#include "policy/policy.h"

/* The properties a pool handle of dev was asked with, from the word kept
 * with it (sw_vmm_set_user): handle types and RDMA flag come back as
 * asked. */
CUmemAllocationProp spw_vmm_prop(int dev, uint64_t user);

/* The driver handle pool handle h stands for, for a call that hands h to
 * the driver (cuMemExportToShareableHandle, the multicast binds: call is
 * its name, for the pass-through count and the log). The first such call
 * promotes h (policy/promote.c): a driver allocation of its size and
 * types gets its bytes and every mapping of it, counted as ipc
 * pass-through; from then on h is never spilled or remapped by spillway.
 * An error (the driver's, or NOT_READY when the devices stayed busy) leaves
 * h pooled. */
CUresult spw_vmm_driver_handle(sw_policy *p, CUmemGenericAllocationHandle h, const char *call,
                               CUmemGenericAllocationHandle *driver);
#endif
