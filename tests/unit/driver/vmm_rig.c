/* The driver VMM suite's shared helpers (vmm_rig.h). */
#include "tests/unit/driver/vmm_rig.h"

size_t granularity(void)
{
    CUmemAllocationProp p = prop_device(0);
    size_t g = 0;
    CU_OK(cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    return g;
}
