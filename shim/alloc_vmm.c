/* cuMemCreate and cuMemRelease. A handle for plain device memory (pinned,
 * on a device, no shareable handle types, no special flags) is spillway's
 * own: pool pages that cuMemMap maps at the program's addresses (vmm_map.c);
 * spillway's handle values carry a tag no driver handle has. Everything else
 * passes through, counted with its reason: shareable (IPC) handles and
 * special memory against the device's limit, host locations as host. */
#include "shim/backend.h"
#include "shim/handler.h"
#include "shim/log.h"

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

/* Handle types a program may ask for and still get pool pages. */
#define POOLABLE_HANDLE_TYPES 0u

/* Why a device handle cannot be pool pages (-1: it can). */
static int passthrough_reason(const CUmemAllocationProp *prop, unsigned long long flags)
{
    if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return SW_PT_HOST_LOCATION;
    if (prop->requestedHandleTypes & ~(unsigned)POOLABLE_HANDLE_TYPES)
        return SW_PT_IPC;
    if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED || flags || prop->win32HandleMetaData ||
        prop->allocFlags.compressionType || prop->allocFlags.usage ||
        (prop->allocFlags.gpuDirectRDMACapable && !spw_backend_rdma_capable(prop->location.id)))
        return SW_PT_OTHER;
    return -1;
}

/* The device whose counters note a host-location pass-through. */
static int noting_device(int account)
{
    int dev;
    if (account != SPILLWAY_HOST)
        return account;
    return spw_driver_ctx_device(&dev) == CUDA_SUCCESS ? dev : 0;
}

CUresult spw_h_mem_create(CUmemGenericAllocationHandle *handle, size_t size,
                          const CUmemAllocationProp *prop, unsigned long long flags)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_create);
    int account;
    if (spw_disabled() || !handle || !prop || (account = location_account(prop)) == -2)
        return real(handle, size, prop, flags);
    spw_publish_ensure();
    int why = passthrough_reason(prop, flags);
    sw_policy *p = why < 0 ? spw_pool_for(account) : NULL;
    if (p) {
        /* Keyed by spillway's handle, like a driver handle. */
        SPW_POOL_ALLOC(SPW_KIND_HANDLE, account, size, sw_vmm_create(p, account, size, handle),
                       *handle);
    }
    if (why < 0)
        why = SW_PT_DISABLED;
    int noted = noting_device(account);
    if (account == SPILLWAY_HOST) {
        /* Host memory: never refused, no device gauge. */
        CUresult r = real(handle, size, prop, flags);
        if (r == CUDA_SUCCESS) {
            spw_account_reserve(SPILLWAY_HOST, size);
            spw_account_commit(SPW_KIND_HANDLE, *handle, SPILLWAY_HOST, size);
            spw_pool_passthrough(noted, (sw_passthrough_reason)why, size, "cuMemCreate");
        }
        return r;
    }
    SPW_PASSTHROUGH_ALLOC(SPW_KIND_HANDLE, account, size, (sw_passthrough_reason)why, "cuMemCreate",
                          real(handle, size, prop, flags), *handle);
}

CUresult spw_h_mem_release(CUmemGenericAllocationHandle handle)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_release);
    if (spw_disabled())
        return real(handle);
    sw_policy *p = spw_pool_policy();
    if (p && sw_vmm_is_handle(p, handle))
        SPW_ACCOUNTED_FREE(SPW_KIND_HANDLE, handle, sw_vmm_release(p, handle));
    SPW_ACCOUNTED_FREE(SPW_KIND_HANDLE, handle, real(handle));
}

/* A pool handle is a list of spillway's pages, not one driver allocation,
 * and was asked with no shareable handle type: the driver refuses to
 * export such a handle too. */
CUresult spw_h_mem_export_to_shareable_handle(void *shareableHandle,
                                              CUmemGenericAllocationHandle handle,
                                              CUmemAllocationHandleType handleType,
                                              unsigned long long flags)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_export_to_shareable_handle);
    sw_policy *p = spw_disabled() ? NULL : spw_pool_policy();
    if (p && sw_vmm_is_handle(p, handle)) {
        spw_debug("cuMemExportToShareableHandle of a pool handle (asked with no shareable type)");
        return CUDA_ERROR_INVALID_VALUE;
    }
    return real(shareableHandle, handle, handleType, flags);
}
