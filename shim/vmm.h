/* Program VMM over the pool (alloc_vmm.c, vmm_map.c). */
#ifndef SPILLWAY_SHIM_VMM_H
#define SPILLWAY_SHIM_VMM_H
#include <cuda.h>
#include <stdint.h>

/* The properties a pool handle of dev was asked with, from the word kept
 * with it (sw_vmm_set_user): handle types and RDMA flag come back as
 * asked. */
CUmemAllocationProp spw_vmm_prop(int dev, uint64_t user);
#endif
