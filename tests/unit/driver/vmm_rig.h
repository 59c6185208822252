/* What the driver VMM suite (test_vmm.c and vmm_mappings.c) shares: a
 * device page's properties, the granularity, and read-write access. */
#ifndef SPILLWAY_TESTS_DRIVER_VMM_RIG_H
#define SPILLWAY_TESTS_DRIVER_VMM_RIG_H
#include "tests/unit/driver/common.h"

/* A pinned page on device dev. */
CUmemAllocationProp prop_device(int dev);
/* Device 0's minimum granularity. */
size_t granularity(void);
/* Read-write access for device 0 to [va, va + size). */
void set_rw(CUdeviceptr va, size_t size);

/* The suite's checks beyond test_vmm.c's, added to tc in their order. */
void vmm_mapping_tests(TCase *tc); /* vmm_mappings.c */
#endif
