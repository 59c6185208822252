/* The driver VMM suite's shared helpers (vmm_rig.h). */
#include "tests/unit/driver/vmm_rig.h"

#include <string.h>

CUmemAllocationProp prop_device(int dev)
{
    CUmemAllocationProp p;
    memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = dev;
    return p;
}

size_t granularity(void)
{
    CUmemAllocationProp p = prop_device(0);
    size_t g = 0;
    CU_OK(cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    return g;
}

void set_rw(CUdeviceptr va, size_t size)
{
    CUmemAccessDesc d;
    memset(&d, 0, sizeof d);
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = 0;
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CU_OK(cuMemSetAccess(va, size, &d, 1));
}
