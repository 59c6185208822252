/* fakecuda: linear device memory, managed memory, pinned host memory, and
 * the questions asked about pointers (address range, attributes). */
#include <string.h>
#include <sys/mman.h>

#include "tests/fakecuda/graph.h"
#include "tests/fakecuda/internal.h"

/* Allocates fresh pages, charges them, registers the range. */
static CUresult alloc_region(int dev, size_t size, enum fc_region_kind kind,
                             struct fc_mempool *pool, uintptr_t *out)
{
    /* A graph allocation's address is reserved at its node's creation; its
     * physical memory comes from the graph pool at a launch (graph_mem.c). */
    size_t charged = kind == FC_GRAPH_MEM ? 0 : fc_page_round(size);
    pthread_mutex_lock(&fc_lock);
    /* A device pool's memory comes from what it keeps (fc_mempool_trim_locked)
     * first: that is charged to the device already. */
    size_t kept = pool && !pool->host ? (pool->cached < charged ? pool->cached : charged) : 0;
    CUresult r = kind == FC_HOST ? CUDA_SUCCESS : fc_device_charge(dev, charged - kept);
    if (r == CUDA_SUCCESS && kept)
        pool->cached -= kept;
    pthread_mutex_unlock(&fc_lock);
    if (r != CUDA_SUCCESS)
        return r;
    void *p = fc_map_anon(size);
    pthread_mutex_lock(&fc_lock);
    struct fc_region reg = {.base = (uintptr_t)p, .size = size, .charged = charged,
                            .kind = kind, .dev = dev, .pool = pool};
    if (!p || !fc_region_add(&reg)) {
        if (kind != FC_HOST)
            fc_device_uncharge(dev, charged - kept);
        if (kept)
            pool->cached += kept;
        pthread_mutex_unlock(&fc_lock);
        if (p)
            fc_unmap(p, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (kind == FC_HOST)
        fc_host_used += charged;
    if (pool) {
        pool->used += charged;
        pool->reserved += charged - kept;
        if (pool->used > pool->used_high)
            pool->used_high = pool->used;
        if (pool->reserved > pool->reserved_high)
            pool->reserved_high = pool->reserved;
    }
    pthread_mutex_unlock(&fc_lock);
    *out = (uintptr_t)p;
    return CUDA_SUCCESS;
}

/* Unregisters and unmaps a region; call with fc_lock held. */
void fc_region_release_locked(struct fc_region *reg)
{
    void *p = (void *)reg->base;
    size_t size = reg->size;
    struct fc_mempool *pool = reg->pool;
    if (reg->kind == FC_HOST)
        fc_host_used -= reg->charged;
    else if (reg->kind == FC_REGISTERED)
        fc_host_used -= reg->charged;
    else if (!pool || pool->host)
        fc_device_uncharge(reg->dev, reg->charged);
    if (pool && pool->host) {
        pool->used -= reg->charged;
        pool->reserved -= reg->charged;
    } else if (pool) { /* kept by the pool, up to its release threshold */
        pool->used -= reg->charged;
        pool->cached += reg->charged;
        fc_mempool_trim_locked(pool, pool->release_threshold);
    }
    bool unmap = reg->kind != FC_REGISTERED;
    fc_region_remove(reg);
    if (unmap)
        fc_unmap(p, size);
}

CUresult fc_alloc_device(size_t size, enum fc_region_kind kind, struct fc_mempool *pool,
                         int dev, CUdeviceptr *dptr)
{
    if (!dptr || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    uintptr_t p;
    CUresult r = alloc_region(dev, size, kind, pool, &p);
    if (r == CUDA_SUCCESS)
        *dptr = (CUdeviceptr)p;
    return r;
}

/* cuMemAlloc-class memory: an object of the context c, which a reset of
 * it destroys (fc_ctx_free_memory). */
static CUresult ctx_alloc(struct CUctx_st *c, size_t size, enum fc_region_kind kind,
                          CUdeviceptr *dptr)
{
    CUresult r = fc_alloc_device(size, kind, NULL, c->dev, dptr);
    if (r == CUDA_SUCCESS) {
        pthread_mutex_lock(&fc_lock);
        fc_region_find((uintptr_t)*dptr)->ctx = c;
        pthread_mutex_unlock(&fc_lock);
    }
    return r;
}

static bool of_ctx(struct fc_region *r, void *arg)
{
    struct fc_region **found = arg;
    /* one being freed is left to its cuMemFree */
    if ((r->kind == FC_DEVICE || r->kind == FC_MANAGED || r->kind == FC_HOST) && r->ctx == (*found)->ctx &&
        !r->freeing) {
        *found = r;
        return false;
    }
    return true;
}

/* cuDevicePrimaryCtxReset ("Destroy all allocations") and cuCtxDestroy
 * (its "resources ... include memory allocations by cuMemAlloc(),
 * cuMemAllocHost(), ..."; cuMemHostRegister's are not named, and stay). Each leaves the
 * registry (the driver no longer knows its address: copies, frees and
 * attribute queries answer as for unknown memory) and the device's charge.
 * Its pages are emptied but stay mapped: a test that still touches one
 * through a raw pointer reads zeros (the data is lost, as on a GPU) instead
 * of dying of SIGSEGV, and the address is never handed out again. */
void fc_ctx_free_memory(struct CUctx_st *ctx)
{
    pthread_mutex_lock(&fc_lock);
    for (;;) {
        struct fc_region key = {.ctx = ctx}, *found = &key;
        fc_region_each_in(0, UINTPTR_MAX, of_ctx, &found);
        if (found == &key)
            break;
        void *p = (void *)found->base;
        size_t size = found->size;
        if (found->kind == FC_HOST)
            fc_host_used -= found->charged;
        else
            fc_device_uncharge(found->dev, found->charged);
        fc_region_remove(found);
        madvise(p, fc_page_round(size), MADV_DONTNEED);
    }
    pthread_mutex_unlock(&fc_lock);
}

FC_EXPORT CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
    FC_FAULT(cuMemAlloc);
    struct CUctx_st *c;
    CUresult r = fc_current_ctx(&c);
    if (r == CUDA_SUCCESS)
        r = fc_capture_unsafe_call();
    if (r != CUDA_SUCCESS)
        return r;
    return ctx_alloc(c, bytesize, FC_DEVICE, dptr);
}

/* cuMemAllocPitch's pitch alignment: the driver's texture pitch alignment
 * (512), or what a test set (fakecuda_set_pitch_align). */
static _Atomic size_t pitch_align;

FC_EXPORT void fakecuda_set_pitch_align(size_t align)
{
    atomic_store(&pitch_align, align && !(align & (align - 1)) ? align : 0);
}

FC_EXPORT CUresult cuMemAllocPitch(CUdeviceptr *dptr, size_t *pitch, size_t width,
                                   size_t height, unsigned int elementSize)
{
    FC_FAULT(cuMemAllocPitch);
    struct CUctx_st *c;
    CUresult r = fc_current_ctx(&c);
    if (r != CUDA_SUCCESS)
        return r;
    if (!pitch || width == 0 || height == 0 ||
        (elementSize != 4 && elementSize != 8 && elementSize != 16))
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = fc_capture_unsafe_call()) != CUDA_SUCCESS)
        return r;
    size_t align = atomic_load(&pitch_align);
    if (!align)
        align = 512; /* the driver's texture pitch alignment */
    size_t p = (width + align - 1) & ~(align - 1);
    r = ctx_alloc(c, p * height, FC_DEVICE, dptr);
    if (r == CUDA_SUCCESS)
        *pitch = p;
    return r;
}

FC_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    FC_FAULT(cuMemAllocManaged);
    struct CUctx_st *c;
    CUresult r = fc_current_ctx(&c);
    if (r != CUDA_SUCCESS)
        return r;
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = fc_capture_unsafe_call()) != CUDA_SUCCESS)
        return r;
    return ctx_alloc(c, bytesize, FC_MANAGED, dptr);
}

FC_EXPORT CUresult cuMemFree(CUdeviceptr dptr)
{
    FC_FAULT(cuMemFree);
    struct CUctx_st *c;
    CUresult r = fc_current_ctx(&c);
    if (r == CUDA_SUCCESS)
        r = fc_capture_unsafe_call();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&fc_lock);
    struct fc_region *reg = fc_region_find((uintptr_t)dptr);
    bool ok = reg && reg->base == (uintptr_t)dptr && !reg->freeing &&
              (reg->kind == FC_DEVICE || reg->kind == FC_MANAGED || reg->kind == FC_ASYNC ||
               reg->kind == FC_GRAPH_MEM);
    if (ok)
        reg->freeing = true;
    bool graph = ok && reg->kind == FC_GRAPH_MEM;
    int dev = ok ? reg->dev : 0;
    pthread_mutex_unlock(&fc_lock);
    if (!ok)
        return CUDA_ERROR_INVALID_VALUE;
    /* cuMemFree is synchronous: work still queued may use the memory. */
    fc_device_drain(dev);
    if (graph) { /* freed until its graph allocates it again; the graph keeps the pages */
        fc_gmem_mark(dptr, false);
        return CUDA_SUCCESS;
    }
    pthread_mutex_lock(&fc_lock);
    reg = fc_region_find((uintptr_t)dptr);
    fc_region_release_locked(reg);
    pthread_mutex_unlock(&fc_lock);
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuMemGetInfo(size_t *free, size_t *total)
{
    FC_FAULT(cuMemGetInfo);
    struct CUctx_st *c;
    CUresult r = fc_current_ctx(&c);
    if (r != CUDA_SUCCESS)
        return r;
    if (!free || !total)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fc_lock);
    *total = fc_devices[c->dev].capacity;
    *free = fc_devices[c->dev].capacity - fc_devices[c->dev].used;
    pthread_mutex_unlock(&fc_lock);
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuMemGetAddressRange(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    FC_FAULT(cuMemGetAddressRange);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&fc_lock);
    struct fc_region *reg = fc_region_find((uintptr_t)dptr);
    if (reg && reg->kind != FC_REGISTERED) {
        if (pbase)
            *pbase = (CUdeviceptr)reg->base;
        if (psize)
            *psize = reg->size;
    }
    r = reg && reg->kind != FC_REGISTERED ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
    pthread_mutex_unlock(&fc_lock);
    return r;
}

/* ---- pinned host memory ---- */

static CUresult host_alloc(void **pp, size_t size)
{
    if (!pp || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUctx_st *c;
    CUresult r = fc_current_ctx(&c);
    if (r == CUDA_SUCCESS)
        r = fc_capture_unsafe_call();
    if (r != CUDA_SUCCESS)
        return r;
    uintptr_t p;
    r = alloc_region(c->dev, size, FC_HOST, NULL, &p);
    if (r == CUDA_SUCCESS) {
        pthread_mutex_lock(&fc_lock);
        fc_region_find(p)->ctx = c; /* it dies with c (fc_ctx_free_memory) */
        pthread_mutex_unlock(&fc_lock);
        *pp = (void *)p;
    }
    return r;
}

FC_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags)
{
    FC_FAULT(cuMemHostAlloc);
    if (flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                            CU_MEMHOSTALLOC_WRITECOMBINED))
        return CUDA_ERROR_INVALID_VALUE;
    return host_alloc(pp, bytesize);
}

FC_EXPORT CUresult cuMemAllocHost(void **pp, size_t bytesize)
{
    FC_FAULT(cuMemAllocHost);
    return host_alloc(pp, bytesize);
}

FC_EXPORT CUresult cuMemFreeHost(void *p)
{
    FC_FAULT(cuMemFreeHost);
    CUresult r = fc_initialized();
    if (r == CUDA_SUCCESS)
        r = fc_capture_unsafe_call();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&fc_lock);
    struct fc_region *reg = fc_region_find((uintptr_t)p);
    bool ok = p && reg && reg->base == (uintptr_t)p && reg->kind == FC_HOST;
    if (ok)
        fc_region_release_locked(reg);
    pthread_mutex_unlock(&fc_lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FC_EXPORT CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int flags)
{
    FC_FAULT(cuMemHostRegister);
    struct CUctx_st *c;
    CUresult r = fc_current_ctx(&c);
    if (r != CUDA_SUCCESS)
        return r;
    (void)flags;
    if (!p || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fc_lock);
    struct fc_region *overlap = NULL;
    for (size_t off = 0; off < bytesize && !overlap; off += 4096)
        overlap = fc_region_find((uintptr_t)p + off);
    if (!overlap)
        overlap = fc_region_find((uintptr_t)p + bytesize - 1);
    struct fc_region reg = {.base = (uintptr_t)p, .size = bytesize, .charged = bytesize,
                            .kind = FC_REGISTERED, .dev = c->dev};
    if (overlap)
        r = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    else if (!fc_region_add(&reg))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    else
        fc_host_used += bytesize;
    pthread_mutex_unlock(&fc_lock);
    return r;
}

FC_EXPORT CUresult cuMemHostUnregister(void *p)
{
    FC_FAULT(cuMemHostUnregister);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&fc_lock);
    struct fc_region *reg = fc_region_find((uintptr_t)p);
    bool ok = p && reg && reg->base == (uintptr_t)p && reg->kind == FC_REGISTERED;
    if (ok)
        fc_region_release_locked(reg);
    pthread_mutex_unlock(&fc_lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

FC_EXPORT CUresult cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int flags)
{
    FC_FAULT(cuMemHostGetDevicePointer);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!pdptr || flags != 0 || !fc_is_pinned_host((uintptr_t)p))
        return CUDA_ERROR_INVALID_VALUE;
    *pdptr = (CUdeviceptr)p; /* unified addressing: the same value */
    return CUDA_SUCCESS;
}

/* ---- pointer attributes ---- */

static bool is_host_kind(const struct fc_region *reg)
{
    if (reg->kind == FC_HOST || reg->kind == FC_REGISTERED)
        return true;
    return reg->kind == FC_VMM && reg->handle &&
           reg->handle->prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE;
}

/* Answers one attribute for a known region; reg NULL answers the defaults
 * cuPointerGetAttributes gives for memory the driver does not know. */
static CUresult answer(CUpointer_attribute a, void *data, const struct fc_region *reg, CUdeviceptr ptr)
{
    switch (a) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        /* "The CUcontext in which ptr was allocated": cuMemAlloc-class
         * memory knows it (ctx_alloc); other kinds answer the primary. */
        *(CUcontext *)data = !reg || reg->kind == FC_VMM ? NULL : reg->ctx ? reg->ctx : fc_devices[reg->dev].primary;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned *)data = !reg ? 0 : is_host_kind(reg) ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *(CUdeviceptr *)data = reg ? ptr : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (reg && !(is_host_kind(reg) || reg->kind == FC_MANAGED))
            return CUDA_ERROR_INVALID_VALUE;
        *(void **)data = reg ? (void *)ptr : NULL;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *(unsigned *)data = reg && reg->kind == FC_MANAGED;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = reg ? reg->dev : -2;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(CUdeviceptr *)data = reg ? (CUdeviceptr)reg->base : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = reg ? reg->size : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        *(unsigned *)data = reg != NULL;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        *(unsigned long long *)data = reg ? reg->id : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        *(unsigned *)data = reg && reg->kind == FC_DEVICE;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
        *(unsigned *)data = !reg ? 0 : reg->kind == FC_VMM && reg->access == CU_MEM_ACCESS_FLAGS_PROT_READ
                                  ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READ
                                  : CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        *(CUmemoryPool *)data = reg ? (CUmemoryPool)reg->pool : NULL;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        *(unsigned long long *)data = reg && reg->handle ? reg->handle->prop.requestedHandleTypes : 0;
        return CUDA_SUCCESS;
    /* The mapping ptr lies in: a cuMemMap mapping's range; the driver's
     * own kinds are each one mapping of their own here. */
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
        *(void **)data = reg ? (void *)reg->base : NULL;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
        *(size_t *)data = reg ? reg->size : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
        /* VMM memory has no such attribute of its own: 0, as the driver
         * answers (the context flag CU_CTX_SYNC_MEMOPS is its way). */
        *(unsigned *)data = reg && reg->kind != FC_VMM && !reg->sync_memops_off;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

FC_EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    FC_FAULT(cuPointerGetAttribute);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fc_lock);
    struct fc_region *reg = fc_region_find((uintptr_t)ptr);
    r = reg ? answer(attribute, data, reg, ptr) : CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&fc_lock);
    return r;
}

FC_EXPORT CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
                                          void **data, CUdeviceptr ptr)
{
    FC_FAULT(cuPointerGetAttributes);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (numAttributes == 0 || !attributes || !data)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fc_lock);
    struct fc_region *reg = fc_region_find((uintptr_t)ptr);
    for (unsigned i = 0; i < numAttributes && r == CUDA_SUCCESS; i++) {
        if (!data[i])
            continue;
        /* Unlike the singular call, no error for HOST_POINTER of device
         * memory: NULL (the runtime's cudaPointerGetAttributes asks it of
         * every pointer). */
        if (attributes[i] == CU_POINTER_ATTRIBUTE_HOST_POINTER && reg &&
            !(is_host_kind(reg) || reg->kind == FC_MANAGED))
            *(void **)data[i] = NULL;
        else
            r = answer(attributes[i], data[i], reg, ptr);
    }
    pthread_mutex_unlock(&fc_lock);
    return r;
}

/* Only SYNC_MEMOPS can be set, and not on VMM memory (cuMemCreate and
 * cuMemMap): the driver answers CUDA_ERROR_NOT_SUPPORTED there (UCX issue
 * 9895, libfabric issue 12853; CU_CTX_SYNC_MEMOPS is the context-wide
 * way). fakecuda's synchronous copies and sets always complete before they
 * return, so the attribute changes only what cuPointerGetAttribute says. */
FC_EXPORT CUresult cuPointerSetAttribute(const void *value, CUpointer_attribute attribute,
                                         CUdeviceptr ptr)
{
    FC_FAULT(cuPointerSetAttribute);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!value || attribute != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fc_lock);
    struct fc_region *reg = fc_region_find((uintptr_t)ptr);
    if (!reg)
        r = CUDA_ERROR_INVALID_VALUE;
    else if (reg->kind == FC_VMM)
        r = CUDA_ERROR_NOT_SUPPORTED;
    else
        reg->sync_memops_off = *(const unsigned *)value == 0;
    pthread_mutex_unlock(&fc_lock);
    return r;
}
