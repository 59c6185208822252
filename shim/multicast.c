/* Multicast binds (NVLink SHARP: NCCL's NVLS buffers, its user buffer
 * registration). The driver binds one allocation of its own to the
 * multicast object and from then on writes through the object reach that
 * memory behind spillway's back, so neither a pool handle's value (which
 * the driver does not know) nor pool pages (which spill moves and remaps)
 * may reach it:
 *  - cuMulticastBindMem (and CUDA 13.1's _v2) of a pool handle makes the
 *    handle the driver's first, as its export does (spw_vmm_driver_handle:
 *    bytes copied, every mapping remapped at the same address, counted as
 *    ipc pass-through), and binds the driver's handle;
 *  - cuMulticastBindAddr (and _v2) of an address mapped by a pool handle
 *    does the same for that handle; of cuMemAlloc-class pool memory (pages
 *    shared with other allocations, moved by spill) it is refused with
 *    CUDA_ERROR_NOT_SUPPORTED, which NCCL's registration falls back on;
 *  - everything else is the driver's.
 * A bind whose arguments the driver would refuse for reasons spillway can
 * see (flags, a range past the memory, another device's memory) gets the
 * driver's answer at once: no promotion for a call that cannot succeed. */
#include "shim/handler.h"
#include "shim/log.h"
#include "shim/vmm.h"

#include <stdatomic.h>

static sw_policy *policy(void)
{
    return spw_disabled() ? NULL : spw_pool_policy();
}

/* The driver handle for pool handle mem, bound on dev (-1: any) for
 * [mem_offset, +size) with flags. */
static CUresult bindable(sw_policy *p, CUmemGenericAllocationHandle mem, int dev,
                         size_t mem_offset, size_t size, unsigned long long flags,
                         const char *call, CUmemGenericAllocationHandle *driver)
{
    size_t hsize;
    int owner;
    CUresult r = sw_vmm_properties(p, mem, &hsize, &owner, NULL);
    if (r != CUDA_SUCCESS)
        return r;
    if (flags || size == 0 || mem_offset > hsize || size > hsize - mem_offset)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev >= 0 && dev != owner) /* "must have been created on the device specified by dev" */
        return CUDA_ERROR_INVALID_DEVICE;
    return spw_vmm_driver_handle(p, mem, call, driver);
}

CUresult spw_h_multicast_bind_mem(CUmemGenericAllocationHandle mcHandle, size_t mcOffset,
                                  CUmemGenericAllocationHandle memHandle, size_t memOffset,
                                  size_t size, unsigned long long flags)
{
    SPW_REAL_OR_RETURN(real, spw_h_multicast_bind_mem);
    sw_policy *p = policy();
    if (!p || !sw_vmm_is_handle(p, memHandle))
        return real(mcHandle, mcOffset, memHandle, memOffset, size, flags);
    CUmemGenericAllocationHandle driver;
    CUresult r = bindable(p, memHandle, -1, memOffset, size, flags, "cuMulticastBindMem", &driver);
    return r == CUDA_SUCCESS ? real(mcHandle, mcOffset, driver, memOffset, size, flags) : r;
}

CUresult spw_h_multicast_bind_mem_v2(CUmemGenericAllocationHandle mcHandle, CUdevice dev,
                                     size_t mcOffset, CUmemGenericAllocationHandle memHandle,
                                     size_t memOffset, size_t size, unsigned long long flags)
{
    SPW_REAL_OR_RETURN(real, spw_h_multicast_bind_mem_v2);
    sw_policy *p = policy();
    if (!p || dev < 0 || !sw_vmm_is_handle(p, memHandle))
        return real(mcHandle, dev, mcOffset, memHandle, memOffset, size, flags);
    CUmemGenericAllocationHandle driver;
    CUresult r = bindable(p, memHandle, dev, memOffset, size, flags, "cuMulticastBindMem", &driver);
    return r == CUDA_SUCCESS ? real(mcHandle, dev, mcOffset, driver, memOffset, size, flags) : r;
}

/* Pool memory of cuMemAlloc's kind at memptr: refused, said once. */
static CUresult pool_memory_refused(CUdeviceptr memptr)
{
    static atomic_bool said;
    if (!atomic_exchange(&said, true))
        spw_warn("cuMulticastBindAddr of %#llx, memory of spillway's pool (cuMemAlloc or "
                 "cuMemAllocAsync): refused (CUDA_ERROR_NOT_SUPPORTED), its pages are shared "
                 "and may be spilled; bind cuMemCreate memory instead",
                 (unsigned long long)memptr);
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* What a bind of [memptr, +size) needs first: PASS (nothing: the driver's
 * memory), or an error to answer, or CUDA_SUCCESS with the pool handle
 * mapped there made the driver's (its mapping now the driver's, at the
 * same address). */
#define PASS CUDA_ERROR_NOT_FOUND
static CUresult before_bind_addr(sw_policy *p, int dev, CUdeviceptr memptr, size_t size,
                                 unsigned long long flags)
{
    if (!p || !sw_owns(p, memptr))
        return PASS;
    CUmemGenericAllocationHandle h, driver;
    CUdeviceptr base;
    size_t msize;
    CUresult r = sw_vmm_mapped_in(p, memptr, memptr + 1, &h, &base, &msize);
    if (r == CUDA_ERROR_NOT_FOUND)
        return pool_memory_refused(memptr);
    if (r == CUDA_ERROR_NOT_SUPPORTED) {
        spw_warn("cuMulticastBindAddr of %#llx: the pooled handle mapped there was released "
                 "(its mapping alone keeps it) and cannot be handed to the driver: refused "
                 "(CUDA_ERROR_NOT_SUPPORTED)",
                 (unsigned long long)memptr);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (r != CUDA_SUCCESS)
        return r;
    /* "The size cannot be larger than the size of the allocated memory." */
    return bindable(p, h, dev, memptr - base, size, flags, "cuMulticastBindAddr", &driver);
}

CUresult spw_h_multicast_bind_addr(CUmemGenericAllocationHandle mcHandle, size_t mcOffset,
                                   CUdeviceptr memptr, size_t size, unsigned long long flags)
{
    SPW_REAL_OR_RETURN(real, spw_h_multicast_bind_addr);
    CUresult r = before_bind_addr(policy(), -1, memptr, size, flags);
    return r == PASS || r == CUDA_SUCCESS ? real(mcHandle, mcOffset, memptr, size, flags) : r;
}

CUresult spw_h_multicast_bind_addr_v2(CUmemGenericAllocationHandle mcHandle, CUdevice dev,
                                      size_t mcOffset, CUdeviceptr memptr, size_t size,
                                      unsigned long long flags)
{
    SPW_REAL_OR_RETURN(real, spw_h_multicast_bind_addr_v2);
    CUresult r = dev < 0 ? PASS : before_bind_addr(policy(), dev, memptr, size, flags);
    return r == PASS || r == CUDA_SUCCESS ? real(mcHandle, dev, mcOffset, memptr, size, flags) : r;
}
