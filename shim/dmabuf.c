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
 * Arguments the reference rules out (a NULL handle, another type, unknown
 * flags, a NULL or empty range, one not aligned to the host page or
 * wrapping) go to the driver for its answer before anything is looked at;
 * a range from a freed pool block gets the driver's answer for memory it
 * does not have. What the range names is found from the pool's own
 * records (its arenas, the program's mappings), never by walking the
 * range: a bad size costs nothing, and the driver is asked once, after
 * any promotion (a spilled page is host memory, which no dma_buf takes,
 * until the promotion brings it back). */
#include "shim/arenas.h"
#include "shim/gate_use.h"
#include "shim/handler.h"
#include "shim/log.h"
#include "shim/vmm.h"

#include <stdatomic.h>
#include <unistd.h>

enum { ARENA = 1, HANDLES = 2, RELEASED = 4 };

/* What pool memory [a, end) names: ARENA (cuMemAlloc-class memory, which
 * cannot be promoted: the rest is not looked at), HANDLES, RELEASED; the
 * pool handles mapped there are promoted when promote is set (the first
 * error is answered, *err). */
static unsigned pool_parts(sw_policy *p, CUdeviceptr a, CUdeviceptr end, bool promote, CUresult *err)
{
    if (spw_arena_meets(a, end))
        return ARENA;
    unsigned found = 0;
    while (a < end) {
        CUmemGenericAllocationHandle h, driver;
        CUdeviceptr base;
        size_t msize;
        CUresult r = sw_vmm_mapped_in(p, a, end, &h, &base, &msize);
        if (r == CUDA_ERROR_NOT_FOUND)
            break;
        if (r == CUDA_ERROR_NOT_SUPPORTED)
            return found | RELEASED;
        if (r != CUDA_SUCCESS) {
            *err = r;
            break;
        }
        found |= HANDLES;
        if (promote && (r = spw_vmm_driver_handle(p, h, "cuMemGetHandleForAddressRange", &driver)) != CUDA_SUCCESS) {
            *err = r;
            break;
        }
        a = base + msize;
    }
    return found;
}

/* What cuda.h rules out for a dma_buf, the driver's to answer. */
static bool plainly_bad(void *handle, CUdeviceptr dptr, size_t size, CUmemRangeHandleType type,
                        unsigned long long flags, size_t host_page)
{
    return !handle || type != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD ||
           (flags & ~(unsigned long long)CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE) || !dptr || !size ||
           dptr + size < dptr || (dptr | size) % host_page;
}

CUresult spw_h_mem_get_handle_for_address_range(void *handle, CUdeviceptr dptr, size_t size,
                                                CUmemRangeHandleType handleType,
                                                unsigned long long flags)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_get_handle_for_address_range);
    size_t host_page = (size_t)sysconf(_SC_PAGESIZE);
    if (spw_disabled() || plainly_bad(handle, dptr, size, handleType, flags, host_page))
        return real(handle, dptr, size, handleType, flags);
    /* A range from a freed block, or past the host page that holds a
     * block's last byte: memory the driver alone does not have there (the
     * pool's pages around it stay mapped, and an importer would write
     * into the neighbours), its answer. The driver takes an allocation's
     * host pages to the end of the last one (a range is whole host pages),
     * so the last page of the range must start inside the block. */
    if (spw_arena_device(dptr) >= 0 &&
        spw_pool_range_check(dptr, size - host_page + 1) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_VALUE;
    sw_policy *p = spw_gate();
    if (!p)
        return real(handle, dptr, size, handleType, flags); /* no spill: the pages stay */
    CUresult err = CUDA_SUCCESS;
    unsigned parts = pool_parts(p, dptr, dptr + size, false, &err);
    if (parts == HANDLES) /* all of them can be the driver's: made so */
        parts = pool_parts(p, dptr, dptr + size, true, &err);
    if (err != CUDA_SUCCESS)
        return err;
    if (parts & (ARENA | RELEASED)) {
        /* Past what spillway knows to be memory (one arena), the driver
         * judges the range first: an unbacked part is its INVALID_VALUE. */
        if (!(parts == ARENA && spw_arena_holds(dptr, dptr + size))) {
            int was = *(int *)handle;
            CUresult r = real(handle, dptr, size, handleType, flags);
            if (r != CUDA_SUCCESS)
                return r;
            close(*(int *)handle);
            *(int *)handle = was;
        }
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
    return real(handle, dptr, size, handleType, flags);
}
