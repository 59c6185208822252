/* cuMemCreate and cuMemRelease: a handle on a device location counts
 * against that device's limit, one on a host location as host memory.
 * Mapping does not allocate and is not counted. */
#include "shim/handler.h"

/* The account a handle's properties charge, or -2 if none (a location
 * spillway does not know). */
static int location_account(const CUmemAllocationProp *prop)
{
    switch (prop->location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        return prop->location.id >= 0 && spw_account_tracks(prop->location.id) ? prop->location.id
                                                                                : -2;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
        return SPILLWAY_HOST;
    default:
        return -2;
    }
}

CUresult spw_h_mem_create(CUmemGenericAllocationHandle *handle, size_t size,
                          const CUmemAllocationProp *prop, unsigned long long flags)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_create);
    int account;
    if (spw_disabled() || !handle || !prop || (account = location_account(prop)) == -2)
        return real(handle, size, prop, flags);
    SPW_ACCOUNTED_ALLOC(SPW_KIND_HANDLE, account, size, real(handle, size, prop, flags), *handle);
}

CUresult spw_h_mem_release(CUmemGenericAllocationHandle handle)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_release);
    if (spw_disabled())
        return real(handle);
    SPW_ACCOUNTED_FREE(SPW_KIND_HANDLE, handle, real(handle));
}
