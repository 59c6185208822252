/* fakecuda: multicast objects (CUDA 12.1; NVLink SHARP on NVSwitch
 * systems, what NCCL's NVLS transport builds its buffers on), with the
 * driver's documented rules: a team of prop.numDevices devices, each added
 * once (cuMulticastAddDevice); binds and cuMemMap of the object wait until
 * the team is complete; sizes and offsets in multiples of the minimum
 * granularity; memory bound by handle (cuMulticastBindMem) or by a mapped
 * address (cuMulticastBindAddr) must be a live cuMemCreate handle of a
 * device of the team, shareable when the object is (its handleTypes);
 * cuMulticastUnbind takes a device's bindings off a range; the _v2 forms
 * (CUDA 13.1) name the device the binding is for.
 *
 * The object has no memory of its own: a mapping of it stays PROT_NONE
 * (a kernel's direct store there faults: fakecuda cannot broadcast a CPU
 * store), and copies and sets through it (copy.c) go to every bound
 * member's memory. A binding holds its memory as a mapping does.
 * FAKECUDA_MULTICAST=0 makes the devices report no multicast support (an
 * H100 PCIe, a machine without NVSwitch or fabric manager), and every call
 * here then answers CUDA_ERROR_NOT_SUPPORTED. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fakecuda/internal.h"

/* What an H100 SXM answers: 2 MiB minimum, 512 MiB recommended. */
#define MC_MIN_GRANULARITY ((size_t)2 << 20)
#define MC_REC_GRANULARITY ((size_t)512 << 20)

/* Not in CUDA 13.0's cuda.h: the 13.1 forms that name the device. */
CUresult CUDAAPI cuMulticastBindMem_v2(CUmemGenericAllocationHandle mcHandle, CUdevice dev,
                                       size_t mcOffset, CUmemGenericAllocationHandle memHandle,
                                       size_t memOffset, size_t size, unsigned long long flags);
CUresult CUDAAPI cuMulticastBindAddr_v2(CUmemGenericAllocationHandle mcHandle, CUdevice dev,
                                        size_t mcOffset, CUdeviceptr memptr, size_t size,
                                        unsigned long long flags);

struct fc_bind {
    int dev;
    size_t mc_offset, size;
    struct fc_handle *mem;
    size_t mem_offset;
    struct fc_bind *next;
};

struct fc_mcast {
    CUmulticastObjectProp prop;
    unsigned added;
    bool member[FC_MAX_DEVICES];
    struct fc_bind *binds;
};

/* Signalled when a team completes; waited on with fc_lock. */
static pthread_cond_t team_done = PTHREAD_COND_INITIALIZER;

static struct fc_handle *mcast_of(CUmemGenericAllocationHandle v)
{
    struct fc_handle *h = fc_vmm_handle(v);
    return h && h->mc && h->refs > 0 ? h : NULL;
}

static bool team_complete(const struct fc_handle *h)
{
    return h->mc->added >= h->mc->prop.numDevices;
}

struct fc_handle *fc_mcast_wait_team(CUmemGenericAllocationHandle v)
{
    struct fc_handle *h;
    while ((h = mcast_of(v)) && !team_complete(h))
        pthread_cond_wait(&team_done, &fc_lock);
    return h;
}

int fc_mcast_device(const struct fc_handle *h)
{
    for (int d = 0; d < FC_MAX_DEVICES; d++)
        if (h->mc->member[d])
            return d;
    return 0;
}

static void unbind(struct fc_bind **pp)
{
    struct fc_bind *b = *pp;
    *pp = b->next;
    b->mem->binds--;
    fc_vmm_handle_maybe_free(b->mem);
    free(b);
}

void fc_mcast_free(struct fc_handle *h)
{
    while (h->mc->binds)
        unbind(&h->mc->binds);
    free(h->mc);
    h->mc = NULL;
}

static bool aligned(size_t x)
{
    return x % MC_MIN_GRANULARITY == 0;
}

FC_EXPORT CUresult cuMulticastGetGranularity(size_t *granularity, const CUmulticastObjectProp *prop,
                                             CUmulticastGranularity_flags option)
{
    FC_FAULT(cuMulticastGetGranularity);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!granularity || !prop ||
        (option != CU_MULTICAST_GRANULARITY_MINIMUM && option != CU_MULTICAST_GRANULARITY_RECOMMENDED))
        return CUDA_ERROR_INVALID_VALUE;
    if (!fc_multicast)
        return CUDA_ERROR_NOT_SUPPORTED;
    *granularity = option == CU_MULTICAST_GRANULARITY_MINIMUM ? MC_MIN_GRANULARITY : MC_REC_GRANULARITY;
    return CUDA_SUCCESS;
}

#define SHAREABLE_TYPES \
    ((unsigned long long)CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC)

FC_EXPORT CUresult cuMulticastCreate(CUmemGenericAllocationHandle *mcHandle,
                                     const CUmulticastObjectProp *prop)
{
    FC_FAULT(cuMulticastCreate);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!mcHandle || !prop)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fc_multicast)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (prop->flags || prop->numDevices == 0 || prop->numDevices > (unsigned)fc_ndevices ||
        prop->size == 0 || !aligned(prop->size) || (prop->handleTypes & ~SHAREABLE_TYPES))
        return CUDA_ERROR_INVALID_VALUE;
    /* No IMEX channel, as cuMemCreate says for FABRIC. */
    if (prop->handleTypes & CU_MEM_HANDLE_TYPE_FABRIC)
        return CUDA_ERROR_NOT_SUPPORTED;
    struct fc_handle *h = calloc(1, sizeof *h);
    struct fc_mcast *mc = calloc(1, sizeof *mc);
    if (!h || !mc) {
        free(h);
        free(mc);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    mc->prop = *prop;
    h->fd = -1;
    h->size = prop->size;
    h->prop.requestedHandleTypes = (CUmemAllocationHandleType)prop->handleTypes;
    h->refs = 1;
    h->mc = mc;
    pthread_mutex_lock(&fc_lock);
    fc_vmm_handle_add(h);
    pthread_mutex_unlock(&fc_lock);
    *mcHandle = (CUmemGenericAllocationHandle)(uintptr_t)h;
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuMulticastAddDevice(CUmemGenericAllocationHandle mcHandle, CUdevice dev)
{
    FC_FAULT(cuMulticastAddDevice);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&fc_lock);
    struct fc_handle *h = mcast_of(mcHandle);
    if (!h)
        r = CUDA_ERROR_INVALID_VALUE;
    else if (fc_check_device(dev) != CUDA_SUCCESS)
        r = CUDA_ERROR_INVALID_DEVICE;
    else if (h->mc->member[dev] || team_complete(h))
        r = CUDA_ERROR_INVALID_VALUE; /* already a member, or the team is full */
    if (r == CUDA_SUCCESS) {
        h->mc->member[dev] = true;
        if (++h->mc->added == h->mc->prop.numDevices)
            pthread_cond_broadcast(&team_done);
    }
    pthread_mutex_unlock(&fc_lock);
    return r;
}

/* Binds [mem_offset, +size) of mem for device dev (-1: mem's own device)
 * at mc_offset of the object with value v; fc_lock held, the team waited
 * for and v found again (h). */
static CUresult bind_locked(struct fc_handle *h, int dev, size_t mc_offset, struct fc_handle *mem,
                            size_t mem_offset, size_t size)
{
    if (!mem || mem->mc || mem->refs <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (size == 0 || !aligned(size) || !aligned(mc_offset) || !aligned(mem_offset) ||
        mem_offset > mem->size || size > mem->size - mem_offset || mc_offset > h->size ||
        size > h->size - mc_offset)
        return CUDA_ERROR_INVALID_VALUE;
    if (mem->prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_NOT_SUPPORTED; /* host NUMA memory: not emulated */
    int owner = mem->prop.location.id;
    if ((dev >= 0 && dev != owner) || !h->mc->member[owner])
        return CUDA_ERROR_INVALID_DEVICE;
    /* "can be bound only to externally shareable memory" */
    if (h->mc->prop.handleTypes && !mem->prop.requestedHandleTypes)
        return CUDA_ERROR_INVALID_VALUE;
    for (struct fc_bind *b = h->mc->binds; b; b = b->next)
        if (b->dev == owner && b->mc_offset < mc_offset + size && mc_offset < b->mc_offset + b->size)
            return CUDA_ERROR_INVALID_VALUE; /* that device has memory bound there */
    struct fc_bind *b = malloc(sizeof *b);
    if (!b)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *b = (struct fc_bind){owner, mc_offset, size, mem, mem_offset, h->mc->binds};
    h->mc->binds = b;
    mem->binds++;
    return CUDA_SUCCESS;
}

static CUresult bind_mem(CUmemGenericAllocationHandle v, int dev, size_t mc_offset,
                         CUmemGenericAllocationHandle mem, size_t mem_offset, size_t size,
                         unsigned long long flags)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (flags)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != -1 && fc_check_device(dev) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&fc_lock);
    struct fc_handle *h = fc_mcast_wait_team(v);
    r = h ? bind_locked(h, dev, mc_offset, fc_vmm_handle(mem), mem_offset, size)
          : CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&fc_lock);
    return r;
}

static CUresult bind_addr(CUmemGenericAllocationHandle v, int dev, size_t mc_offset, CUdeviceptr ptr,
                          size_t size, unsigned long long flags)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (flags || !aligned(ptr))
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != -1 && fc_check_device(dev) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&fc_lock);
    struct fc_handle *h = fc_mcast_wait_team(v);
    struct fc_region *reg = h ? fc_region_find((uintptr_t)ptr) : NULL;
    if (!h)
        r = CUDA_ERROR_INVALID_VALUE;
    else if (reg && reg->kind == FC_ASYNC)
        r = CUDA_ERROR_NOT_SUPPORTED; /* cudaMallocAsync memory: not emulated */
    else if (!reg || reg->kind != FC_VMM || size > reg->base + reg->size - (uintptr_t)ptr)
        r = CUDA_ERROR_INVALID_VALUE; /* not cuMemCreate memory, or past its mapping */
    else
        r = bind_locked(h, dev, mc_offset, reg->handle, (uintptr_t)ptr - reg->base, size);
    pthread_mutex_unlock(&fc_lock);
    return r;
}

FC_EXPORT CUresult cuMulticastBindMem(CUmemGenericAllocationHandle mcHandle, size_t mcOffset,
                                      CUmemGenericAllocationHandle memHandle, size_t memOffset,
                                      size_t size, unsigned long long flags)
{
    FC_FAULT(cuMulticastBindMem);
    return bind_mem(mcHandle, -1, mcOffset, memHandle, memOffset, size, flags);
}

FC_EXPORT CUresult cuMulticastBindMem_v2(CUmemGenericAllocationHandle mcHandle, CUdevice dev,
                                         size_t mcOffset, CUmemGenericAllocationHandle memHandle,
                                         size_t memOffset, size_t size, unsigned long long flags)
{
    FC_FAULT(cuMulticastBindMem);
    return bind_mem(mcHandle, dev < 0 ? -2 : dev, mcOffset, memHandle, memOffset, size, flags);
}

FC_EXPORT CUresult cuMulticastBindAddr(CUmemGenericAllocationHandle mcHandle, size_t mcOffset,
                                       CUdeviceptr memptr, size_t size, unsigned long long flags)
{
    FC_FAULT(cuMulticastBindAddr);
    return bind_addr(mcHandle, -1, mcOffset, memptr, size, flags);
}

FC_EXPORT CUresult cuMulticastBindAddr_v2(CUmemGenericAllocationHandle mcHandle, CUdevice dev,
                                          size_t mcOffset, CUdeviceptr memptr, size_t size,
                                          unsigned long long flags)
{
    FC_FAULT(cuMulticastBindAddr);
    return bind_addr(mcHandle, dev < 0 ? -2 : dev, mcOffset, memptr, size, flags);
}

/* "mcOffset and size must match the corresponding values specified during
 * the bind call": the bindings of dev inside the range go. */
FC_EXPORT CUresult cuMulticastUnbind(CUmemGenericAllocationHandle mcHandle, CUdevice dev,
                                     size_t mcOffset, size_t size)
{
    FC_FAULT(cuMulticastUnbind);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (fc_check_device(dev) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&fc_lock);
    struct fc_handle *h = mcast_of(mcHandle);
    if (!h || size == 0 || !aligned(size) || !aligned(mcOffset) || mcOffset > h->size ||
        size > h->size - mcOffset)
        r = CUDA_ERROR_INVALID_VALUE;
    for (struct fc_bind **pp = h && r == CUDA_SUCCESS ? &h->mc->binds : NULL; pp && *pp;) {
        struct fc_bind *b = *pp;
        if (b->dev == dev && b->mc_offset >= mcOffset && b->mc_offset + b->size <= mcOffset + size)
            unbind(pp);
        else
            pp = &b->next;
    }
    pthread_mutex_unlock(&fc_lock);
    return r;
}

/* ---- copies through a mapping of the object (copy.c) ---- */

static struct fc_region *mc_region(uintptr_t addr)
{
    struct fc_region *reg = fc_region_find(addr);
    return reg && reg->kind == FC_VMM && reg->handle->mc ? reg : NULL;
}

static bool any_mc(struct fc_region *r, void *arg)
{
    *(bool *)arg |= r->kind == FC_VMM && r->handle->mc;
    return !*(bool *)arg;
}

bool fc_mcast_touches(uintptr_t addr, size_t n, CUresult *err)
{
    *err = CUDA_SUCCESS;
    bool touches = false;
    pthread_mutex_lock(&fc_lock);
    fc_region_each_in(addr, n ? n : 1, any_mc, &touches);
    struct fc_region *reg = touches ? mc_region(addr) : NULL;
    if (touches && (!reg || n > reg->base + reg->size - addr))
        *err = CUDA_ERROR_INVALID_VALUE; /* fakecuda: a copy must lie in one such mapping */
    pthread_mutex_unlock(&fc_lock);
    return touches;
}

/* The part of [off, off+n) of the object that b covers, as [*s, *e). */
static bool overlap(const struct fc_bind *b, size_t off, size_t n, size_t *s, size_t *e)
{
    *s = off > b->mc_offset ? off : b->mc_offset;
    *e = off + n < b->mc_offset + b->size ? off + n : b->mc_offset + b->size;
    return *s < *e;
}

static void mc_write(const struct fc_region *reg, uintptr_t addr, const unsigned char *buf, size_t n)
{
    size_t off = addr - reg->base, s, e;
    for (const struct fc_bind *b = reg->handle->mc->binds; b; b = b->next)
        if (overlap(b, off, n, &s, &e) &&
            pwrite(b->mem->fd, buf + (s - off), e - s, (off_t)(b->mem_offset + s - b->mc_offset)) !=
                (ssize_t)(e - s))
            abort(); /* a memfd write: cannot fail short of a broken test machine */
}

/* Unbound bytes read as zero; the lowest device's member wins. */
static void mc_read(const struct fc_region *reg, uintptr_t addr, unsigned char *buf, size_t n)
{
    size_t off = addr - reg->base, s, e;
    memset(buf, 0, n);
    for (int d = FC_MAX_DEVICES - 1; d >= 0; d--)
        for (const struct fc_bind *b = reg->handle->mc->binds; b; b = b->next)
            if (b->dev == d && overlap(b, off, n, &s, &e) &&
                pread(b->mem->fd, buf + (s - off), e - s, (off_t)(b->mem_offset + s - b->mc_offset)) !=
                    (ssize_t)(e - s))
                abort();
}

void fc_mcast_copy(uintptr_t dst, bool dst_mc, uintptr_t src, bool src_mc, size_t n)
{
    unsigned char *tmp = malloc(n ? n : 1);
    if (!tmp)
        abort(); /* an op cannot report: the copy would be lost silently */
    pthread_mutex_lock(&fc_lock);
    struct fc_region *s = src_mc ? mc_region(src) : NULL, *d = dst_mc ? mc_region(dst) : NULL;
    if (s)
        mc_read(s, src, tmp, n);
    else if (!src_mc)
        memcpy(tmp, (const void *)src, n);
    else
        memset(tmp, 0, n); /* unmapped since it was queued */
    if (d)
        mc_write(d, dst, tmp, n);
    else if (!dst_mc)
        memcpy((void *)dst, tmp, n);
    pthread_mutex_unlock(&fc_lock);
    free(tmp);
}
