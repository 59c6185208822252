/* What the driver VMM suite (test_vmm.c and vmm_mappings.c) shares
 * beyond common.h (prop_device, set_rw): the granularity. */
#ifndef SPILLWAY_TESTS_DRIVER_VMM_RIG_H
#define SPILLWAY_TESTS_DRIVER_VMM_RIG_H
#include "tests/unit/driver/common.h"

/* Device 0's minimum granularity. */
size_t granularity(void);

/* The suite's checks beyond test_vmm.c's, added to tc in their order. */
void vmm_mapping_tests(TCase *tc); /* vmm_mappings.c */
#endif
