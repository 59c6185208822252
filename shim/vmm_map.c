/* The calls around cuMemCreate, answered by the pool for spillway's handles
 * and mappings and passed to the driver for everything else: cuMemMap,
 * cuMemUnmap, cuMemSetAccess, cuMemRetainAllocationHandle and
 * cuMemGetAllocationPropertiesFromHandle. */
#include "shim/handler.h"

#include <string.h>

CUresult spw_h_mem_map(CUdeviceptr ptr, size_t size, size_t offset,
                       CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_map);
    sw_policy *p = spw_disabled() ? NULL : spw_pool_policy();
    if (!p || !sw_vmm_is_handle(p, handle))
        return real(ptr, size, offset, handle, flags);
    if (flags)
        return CUDA_ERROR_INVALID_VALUE;
    return sw_vmm_map(p, ptr, size, offset, handle);
}

CUresult spw_h_mem_unmap(CUdeviceptr ptr, size_t size)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_unmap);
    sw_policy *p = spw_disabled() ? NULL : spw_pool_policy();
    CUresult r = p ? sw_vmm_unmap(p, ptr, size) : CUDA_ERROR_NOT_FOUND;
    return r == CUDA_ERROR_NOT_FOUND ? real(ptr, size) : r;
}

/* Read-only access is granted as read-write (the policy keeps one mask). */
CUresult spw_h_mem_set_access(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                              size_t count)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_set_access);
    sw_policy *p = spw_disabled() ? NULL : spw_pool_policy();
    if (!p || !desc || !count || !sw_owns(p, ptr))
        return real(ptr, size, desc, count);
    uint64_t mask = 0;
    for (size_t i = 0; i < count; i++) {
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || desc[i].location.id < 0 ||
            desc[i].location.id >= SW_MAX_DEVICES ||
            desc[i].flags > CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return CUDA_ERROR_INVALID_DEVICE;
        if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE)
            mask |= 1ull << desc[i].location.id;
    }
    CUresult r = sw_vmm_set_access(p, ptr, size, mask);
    return r == CUDA_ERROR_NOT_FOUND ? real(ptr, size, desc, count) : r;
}

CUresult spw_h_mem_retain_allocation_handle(CUmemGenericAllocationHandle *handle, void *addr)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_retain_allocation_handle);
    sw_policy *p = spw_disabled() ? NULL : spw_pool_policy();
    CUdeviceptr va = (CUdeviceptr)(uintptr_t)addr;
    if (!p || !handle || !sw_owns(p, va))
        return real(handle, addr);
    CUresult r = sw_vmm_retain(p, va, handle);
    /* A cuMemAlloc pointer of the pool: no handle, as for the driver's own
     * cuMemAlloc memory (never the page's real handle). */
    return r == CUDA_ERROR_NOT_FOUND ? CUDA_ERROR_INVALID_VALUE : r;
}

CUresult spw_h_mem_get_allocation_properties(CUmemAllocationProp *prop,
                                             CUmemGenericAllocationHandle handle)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_get_allocation_properties);
    sw_policy *p = spw_disabled() ? NULL : spw_pool_policy();
    if (!p || !prop || !sw_vmm_is_handle(p, handle))
        return real(prop, handle);
    size_t size;
    int dev;
    CUresult r = sw_vmm_properties(p, handle, &size, &dev);
    if (r != CUDA_SUCCESS)
        return r;
    memset(prop, 0, sizeof *prop);
    prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop->requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
    prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id = dev;
    return CUDA_SUCCESS;
}
