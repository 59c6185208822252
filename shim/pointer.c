/* cuMemGetAddressRange and cuPointerGetAttribute(s) on pool memory: the
 * driver only sees spillway's pages and reservation, so spillway answers
 * with the program's allocation, as the driver would for a cuMemAlloc
 * pointer: device memory (also while a page lives on the host), the
 * device's ordinal and the context it was made in (ctx_blocks.h: the
 * primary one but for blocks made in a context the program created).
 * Attributes it does not know are asked of the driver. BUFFER_ID and MEMORY_BLOCK_ID are policy/'s IDs of
 * the allocation (sw_ids: never reused, as the driver's);
 * IS_LEGACY_CUDA_IPC_CAPABLE is 1 for cuMemAlloc-class pool memory of a
 * device whose pages are exportable (ipc.c), 0 for the rest;
 * MEMPOOL_HANDLE the memory pool a stream-ordered allocation was served for. */
#include "shim/arenas.h"
#include "shim/backend.h"
#include "shim/ctx_blocks.h"
#include "shim/handler.h"
#include "shim/mempools.h"
#include "shim/pool_use.h"

/* What spillway knows of a pool pointer; found = 0 for pool addresses that
 * are not inside a live allocation (answered as unknown memory). */
struct pool_ptr {
    int found;
    CUdeviceptr base;
    size_t size;
    int dev;
    sw_ids ids;
};

static struct pool_ptr look_up(sw_policy *p, CUdeviceptr ptr)
{
    struct pool_ptr pp = {0};
    pp.found = sw_lookup(p, ptr, &pp.base, &pp.size, &pp.dev, &pp.ids) == CUDA_SUCCESS;
    return pp;
}

CUresult spw_h_mem_get_address_range(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_get_address_range);
    sw_policy *p = spw_disabled() ? NULL : spw_pool_owner(dptr);
    if (!p)
        return real(pbase, psize, dptr);
    struct pool_ptr pp = look_up(p, dptr);
    if (!pp.found)
        return CUDA_ERROR_NOT_FOUND;
    if (pbase)
        *pbase = pp.base;
    if (psize)
        *psize = pp.size;
    return CUDA_SUCCESS;
}

/* SYNC_MEMOPS of a cuMemAlloc-class pool allocation. The driver refuses
 * the attribute on VMM memory (CUDA_ERROR_NOT_SUPPORTED) where it takes it
 * on a cuMemAlloc pointer, and UCX, libfabric and Open MPI set it on every
 * buffer a NIC will read. Its VMM form is the context flag
 * CU_CTX_SYNC_MEMOPS (CUDA 12.1): set on the calling thread's context when
 * it is one of the allocation's device (else on the device's primary one:
 * a flag on another device's context would leave this allocation's copies
 * asynchronous), it makes every synchronous memory operation of that
 * context synchronize, this allocation's among them. *on (may be NULL)
 * tells whether the flag is set. NOT_SUPPORTED: a driver without
 * cuCtxSetFlags (ask the driver). */
static CUresult ctx_sync_memops(int dev, int set, unsigned *on)
{
    if (!spw_drv.cuCtxGetFlags || !spw_drv.cuCtxSetFlags || !spw_drv.cuCtxGetCurrent ||
        !spw_drv.cuCtxGetDevice || !spw_drv.cuCtxPushCurrent_v2 || !spw_drv.cuCtxPopCurrent_v2)
        return CUDA_ERROR_NOT_SUPPORTED;
    CUcontext cur = NULL, ctx;
    CUresult r = spw_drv.cuCtxGetCurrent(&cur);
    if (r != CUDA_SUCCESS)
        return r;
    CUdevice cur_dev;
    if (cur && (r = spw_drv.cuCtxGetDevice(&cur_dev)) != CUDA_SUCCESS)
        return r;
    if (cur && cur_dev != (CUdevice)dev)
        cur = NULL; /* another device's: the allocation's primary instead */
    if (!cur) {
        if (!(ctx = spw_backend_primary(dev)))
            return CUDA_ERROR_INVALID_CONTEXT;
        if ((r = spw_drv.cuCtxPushCurrent_v2(ctx)) != CUDA_SUCCESS)
            return r;
    }
    unsigned flags = 0;
    r = spw_drv.cuCtxGetFlags(&flags);
    if (r == CUDA_SUCCESS && set && !(flags & CU_CTX_SYNC_MEMOPS)) {
        __typeof__(spw_real.spw_h_ctx_synchronize) sync = SPW_REAL(spw_h_ctx_synchronize);
        r = spw_drv.cuCtxSetFlags(flags | CU_CTX_SYNC_MEMOPS);
        /* "Pending synchronous memory operations complete before it returns". */
        if (r == CUDA_SUCCESS && sync)
            r = sync();
        flags |= CU_CTX_SYNC_MEMOPS;
    }
    if (on)
        *on = !!(flags & CU_CTX_SYNC_MEMOPS);
    if (!cur)
        (void)spw_drv.cuCtxPopCurrent_v2(&ctx);
    return r;
}

/* Answers attribute a for pp (CUDA_ERROR_NOT_SUPPORTED: ask the driver). An
 * unknown pointer gets the defaults the driver gives cuPointerGetAttributes. */
static CUresult answer(CUpointer_attribute a, void *data, const struct pool_ptr *pp,
                       CUdeviceptr ptr)
{
    int k = pp->found;
    switch (a) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: {
        CUcontext made_in = k ? spw_ctx_blocks_context(pp->base) : NULL;
        *(CUcontext *)data = k && !made_in ? spw_backend_primary(pp->dev) : made_in;
        return CUDA_SUCCESS;
    }
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned *)data = k ? CU_MEMORYTYPE_DEVICE : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *(CUdeviceptr *)data = k ? ptr : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (k)
            return CUDA_ERROR_INVALID_VALUE;
        *(void **)data = NULL;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *(unsigned *)data = 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        /* buffer == block: a cuMemAlloc-class allocation, not a VMM mapping. */
        *(unsigned *)data = k && pp->ids.buffer == pp->ids.block && spw_backend_ipc_capable(pp->dev);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = k ? pp->dev : -2;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(CUdeviceptr *)data = k ? pp->base : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = k ? pp->size : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        *(unsigned *)data = k;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        *(unsigned long long *)data = k ? pp->ids.buffer : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
        *(unsigned *)data = k ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE : 0;
        return CUDA_SUCCESS;
    /* Stream-ordered memory names the memory pool it was served for, as
     * the driver's does (pool_use.c keeps which, per allocation). */
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        *(CUmemoryPool *)data = k ? spw_mempool_of_slot(spw_pool_use_slot_of(pp->base)) : NULL;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        *(unsigned long long *)data = 0;
        return CUDA_SUCCESS;
    /* The driver would answer with the one 2 MiB page it sees: NCCL and
     * RDMA registration need the program's whole allocation. */
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
        *(void **)data = k ? (void *)(uintptr_t)pp->base : NULL;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
        *(size_t *)data = k ? pp->size : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        *(unsigned long long *)data = k ? pp->ids.block : 0;
        return CUDA_SUCCESS;
    /* A program's VMM mapping on pool pages (outside the arenas) has none,
     * as the driver answers. */
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
        if (k && spw_arena_device(ptr) >= 0)
            return ctx_sync_memops(pp->dev, 0, (unsigned *)data);
        if (k)
            return CUDA_ERROR_NOT_SUPPORTED;
        *(unsigned *)data = 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
        *(unsigned *)data = k && spw_backend_rdma_capable(pp->dev);
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_NOT_SUPPORTED;
    }
}

CUresult spw_h_pointer_get_attribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    SPW_REAL_OR_RETURN(real, spw_h_pointer_get_attribute);
    sw_policy *p = spw_disabled() || !data ? NULL : spw_pool_owner(ptr);
    if (!p)
        return real(data, attribute, ptr);
    struct pool_ptr pp = look_up(p, ptr);
    if (!pp.found)
        return CUDA_ERROR_INVALID_VALUE; /* the driver's answer for unknown memory */
    CUresult r = answer(attribute, data, &pp, ptr);
    return r == CUDA_ERROR_NOT_SUPPORTED ? real(data, attribute, ptr) : r;
}

CUresult spw_h_pointer_get_attributes(unsigned int numAttributes, CUpointer_attribute *attributes,
                                      void **data, CUdeviceptr ptr)
{
    SPW_REAL_OR_RETURN(real, spw_h_pointer_get_attributes);
    sw_policy *p = spw_disabled() || !numAttributes || !attributes || !data
                       ? NULL
                       : spw_pool_owner(ptr);
    if (!p)
        return real(numAttributes, attributes, data, ptr);
    struct pool_ptr pp = look_up(p, ptr);
    CUresult r = CUDA_SUCCESS;
    for (unsigned i = 0; i < numAttributes && r == CUDA_SUCCESS; i++) {
        if (!data[i])
            continue;
        /* The plural call does not fail on device memory: the runtime's
         * cudaPointerGetAttributes asks for the host pointer of every
         * pointer and expects NULL. */
        if (attributes[i] == CU_POINTER_ATTRIBUTE_HOST_POINTER) {
            *(void **)data[i] = NULL;
            continue;
        }
        r = answer(attributes[i], data[i], &pp, ptr);
        if (r == CUDA_ERROR_NOT_SUPPORTED)
            r = real(1, &attributes[i], &data[i], ptr);
    }
    return r;
}

/* Unsetting SYNC_MEMOPS of a pool allocation leaves the context's flag:
 * other allocations may need it (synchronizing more is never wrong). */
CUresult spw_h_pointer_set_attribute(const void *value, CUpointer_attribute attribute,
                                     CUdeviceptr ptr)
{
    SPW_REAL_OR_RETURN(real, spw_h_pointer_set_attribute);
    sw_policy *p = spw_disabled() || !value || attribute != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS
                       ? NULL
                       : spw_pool_owner(ptr);
    if (!p || spw_arena_device(ptr) < 0)
        return real(value, attribute, ptr);
    struct pool_ptr pp = look_up(p, ptr);
    if (!pp.found)
        return CUDA_ERROR_INVALID_VALUE; /* the driver's answer for unknown memory */
    if (*(const unsigned *)value == 0)
        return CUDA_SUCCESS;
    CUresult r = ctx_sync_memops(pp.dev, 1, NULL);
    return r == CUDA_ERROR_NOT_SUPPORTED ? real(value, attribute, ptr) : r;
}
