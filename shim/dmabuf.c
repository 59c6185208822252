/* cuMemGetHandleForAddressRange: a dma_buf of a device range, which
 * another device then reads and writes directly (a NIC: NCCL's and UCX's
 * GPUDirect RDMA registration, ibv_reg_dmabuf_mr). It reaches the physical
 * pages behind the range when it was taken ("users are also expected to
 * retrieve a new handle every time the underlying physical allocation(s)
 * ... are changed"), and spill changes them behind the program's back: it
 * moves pool data to other pages and gives the old ones to other data, so
 * the importer's writes would miss the program's buffer and land in
 * another. While the pool spills:
 *  - a range over pool handles the program mapped (cuMemCreate + cuMemMap,
 *    JAX's arena) makes each of them the driver's first, as their export
 *    does (spw_vmm_driver_handle: never spilled again), then the driver
 *    exports it;
 *  - a range over cuMemAlloc-class pool memory (pages shared with other
 *    allocations, moved by spill), or over a pooled handle the program
 *    released (its mapping alone keeps it: it cannot be promoted), is
 *    refused with CUDA_ERROR_NOT_SUPPORTED, a documented answer (a clear
 *    refusal rather than an importer that writes elsewhere after a spill);
 *  - everything else is the driver's.
 * Without spill the pages behind live data never change: the driver's.
 * Bad arguments get the driver's answer: the driver is asked first, and a
 * handle it gave for a range spillway cannot let go is closed again; a
 * range in a freed pool block gets the driver's answer for memory it does
 * not have. */
#include "shim/arenas.h"
#include "shim/gate_use.h"
#include "shim/handler.h"
#include "shim/log.h"
#include "shim/vmm.h"

#include <stdatomic.h>
#include <unistd.h>

/* Steps through a range outside the pool's mappings: no VMM mapping is
 * finer than this (device memory's granularity is 2 MiB). */
#define STEP ((CUdeviceptr)64 << 10)

enum { ARENA = 1, HANDLES = 2, RELEASED = 4 };

/* What pool memory [a, a + size) names: ARENA, HANDLES, RELEASED bits;
 * the pool handles mapped there are promoted when promote is set (the
 * first error is answered, *err). */
static unsigned pool_parts(sw_policy *p, CUdeviceptr a, size_t size, bool promote, CUresult *err)
{
    unsigned found = 0;
    CUdeviceptr end = a + size < a ? ~(CUdeviceptr)0 : a + size;
    while (a < end) {
        CUmemGenericAllocationHandle h, driver;
        CUdeviceptr base;
        size_t msize;
        CUresult r;
        if (spw_arena_device(a) >= 0) {
            found |= ARENA;
            return found; /* refused whatever else it names */
        }
        if (!sw_owns(p, a) || (r = sw_vmm_mapped_at(p, a, &h, &base, &msize)) == CUDA_ERROR_NOT_FOUND) {
            a = (a & ~(STEP - 1)) + STEP;
            continue;
        }
        if (r == CUDA_ERROR_NOT_SUPPORTED)
            return found | RELEASED;
        if (r != CUDA_SUCCESS) {
            *err = r;
            return found;
        }
        found |= HANDLES;
        if (promote && (r = spw_vmm_driver_handle(p, h, "cuMemGetHandleForAddressRange", &driver)) != CUDA_SUCCESS) {
            *err = r;
            return found;
        }
        a = base + msize > a ? base + msize : a + STEP;
    }
    return found;
}

CUresult spw_h_mem_get_handle_for_address_range(void *handle, CUdeviceptr dptr, size_t size,
                                                CUmemRangeHandleType handleType,
                                                unsigned long long flags)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_get_handle_for_address_range);
    bool dma_buf = handle && handleType == CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD;
    bool in_arena = dma_buf && spw_arena_device(dptr) >= 0;
    sw_policy *p = spw_disabled() ? NULL : spw_gate();
    CUresult err = CUDA_SUCCESS;
    unsigned parts = p && dma_buf ? pool_parts(p, dptr, size, false, &err) : 0;
    if (!parts && !in_arena)
        return real(handle, dptr, size, handleType, flags);
    int was = *(int *)handle;
    CUresult r = real(handle, dptr, size, handleType, flags);
    if (r != CUDA_SUCCESS)
        return r; /* the driver's answer to the arguments */
    close(*(int *)handle);
    *(int *)handle = was;
    /* A range from a freed block: memory the driver alone no longer has
     * (the pool's pages there stay mapped), its answer. Only the start is
     * checked: the driver takes an allocation's pages to the end of the
     * last one, spillway knows the size asked for. */
    if (in_arena && (r = spw_pool_range_check(dptr, 1)) != CUDA_SUCCESS)
        return r;
    if (!parts)
        return real(handle, dptr, size, handleType, flags); /* no spill: the pages stay */
    if (parts & (ARENA | RELEASED)) {
        static atomic_bool said;
        if (!atomic_exchange(&said, true))
            spw_warn("cuMemGetHandleForAddressRange of %#llx: a dma_buf of %s, whose pages spill "
                     "moves, would leave its importer writing elsewhere: refused "
                     "(CUDA_ERROR_NOT_SUPPORTED); export cuMemCreate memory instead, or run with "
                     "SPILLWAY_SPILL=0",
                     (unsigned long long)dptr,
                     parts & ARENA ? "spillway's pool memory (cuMemAlloc or cuMemAllocAsync)"
                                   : "a pooled handle the program released");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    pool_parts(p, dptr, size, true, &err);
    return err != CUDA_SUCCESS ? err : real(handle, dptr, size, handleType, flags);
}
