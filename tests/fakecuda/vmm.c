/* fakecuda: virtual memory management. A reservation is a PROT_NONE
 * mapping; a handle is a memfd; cuMemMap maps the memfd at the address, so a
 * VA remapped to another handle really reads the other handle's bytes, and a
 * VA with no mapping (or no access) faults. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/fakecuda/internal.h"

struct reservation {
    uintptr_t base;
    size_t size;
    struct reservation *next;
};

/* Both lists under fc_lock. Released handles are kept (magic cleared) only
 * until their memory is gone; a stale handle value is then unknown. */
static struct reservation *reservations;
static struct fc_handle *handles;
static size_t live_handles;

static struct reservation *reservation_of(uintptr_t addr, size_t size)
{
    for (struct reservation *r = reservations; r; r = r->next)
        if (addr >= r->base && addr + size <= r->base + r->size && addr + size >= addr)
            return r;
    return NULL;
}

static struct fc_handle *handle_of(CUmemGenericAllocationHandle h)
{
    for (struct fc_handle *x = handles; x; x = x->next)
        if ((CUmemGenericAllocationHandle)(uintptr_t)x == h && x->magic == FC_MAGIC_HANDLE)
            return x;
    return NULL;
}

struct fc_handle *fc_vmm_handle(CUmemGenericAllocationHandle h)
{
    return handle_of(h);
}

/* The handle whose memory file is fd's (an export of this process). */
struct fc_handle *fc_vmm_handle_by_file(int fd)
{
    struct stat want, st;
    if (fstat(fd, &want) != 0)
        return NULL;
    for (struct fc_handle *x = handles; x; x = x->next)
        if (x->magic == FC_MAGIC_HANDLE && fstat(x->fd, &st) == 0 && st.st_dev == want.st_dev &&
            st.st_ino == want.st_ino)
            return x;
    return NULL;
}

void fc_vmm_handle_add(struct fc_handle *h)
{
    h->magic = FC_MAGIC_HANDLE;
    h->next = handles;
    handles = h;
    live_handles++;
}

size_t fc_vmm_live_handles(void)
{
    return live_handles;
}

bool fc_vmm_reserved_at(uintptr_t addr)
{
    pthread_mutex_lock(&fc_lock);
    bool in = reservation_of(addr, 1) != NULL;
    pthread_mutex_unlock(&fc_lock);
    return in;
}

size_t fc_vmm_live_reservations(size_t *bytes)
{
    size_t n = 0, b = 0;
    pthread_mutex_lock(&fc_lock);
    for (struct reservation *r = reservations; r; r = r->next, n++)
        b += r->size;
    pthread_mutex_unlock(&fc_lock);
    if (bytes)
        *bytes = b;
    return n;
}

FC_EXPORT CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                                 CUmemAllocationGranularity_flags option)
{
    FC_FAULT(cuMemGetAllocationGranularity);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!granularity || !prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        return CUDA_ERROR_INVALID_VALUE;
    *granularity = FC_GRANULARITY;
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                       CUdeviceptr addr, unsigned long long flags)
{
    FC_FAULT(cuMemAddressReserve);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!ptr || size == 0 || size % FC_GRANULARITY || flags != 0 ||
        (alignment & (alignment - 1)))
        return CUDA_ERROR_INVALID_VALUE;
    if (alignment < FC_GRANULARITY)
        alignment = FC_GRANULARITY;
    uintptr_t base = 0;
    if (addr && addr % alignment == 0) {
        void *p = mmap((void *)addr, size, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
        if (p != MAP_FAILED)
            base = (uintptr_t)p;
    }
    if (!base) {
        /* over-reserve, then trim to the alignment */
        size_t span = size + alignment;
        char *p = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
            return CUDA_ERROR_OUT_OF_MEMORY;
        base = ((uintptr_t)p + alignment - 1) & ~(alignment - 1);
        if (base > (uintptr_t)p)
            munmap(p, base - (uintptr_t)p);
        munmap((void *)(base + size), (uintptr_t)p + span - (base + size));
    }
    struct reservation *res = malloc(sizeof *res);
    if (!res) {
        munmap((void *)base, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    res->base = base;
    res->size = size;
    pthread_mutex_lock(&fc_lock);
    res->next = reservations;
    reservations = res;
    pthread_mutex_unlock(&fc_lock);
    *ptr = (CUdeviceptr)base;
    return CUDA_SUCCESS;
}

static bool any_mapping(struct fc_region *r, void *arg)
{
    *(bool *)arg |= r->kind == FC_VMM;
    return !*(bool *)arg;
}

FC_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    FC_FAULT(cuMemAddressFree);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&fc_lock);
    struct reservation **pp = &reservations;
    while (*pp && !((*pp)->base == (uintptr_t)ptr && (*pp)->size == size))
        pp = &(*pp)->next;
    bool mapped = false;
    if (*pp)
        fc_region_each_in((uintptr_t)ptr, size, any_mapping, &mapped);
    if (!*pp || mapped) {
        pthread_mutex_unlock(&fc_lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct reservation *res = *pp;
    *pp = res->next;
    pthread_mutex_unlock(&fc_lock);
    munmap((void *)res->base, res->size);
    free(res);
    return CUDA_SUCCESS;
}

static CUresult check_location(const CUmemLocation *loc, bool *device)
{
    switch (loc->type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        *device = true;
        return fc_check_device(loc->id) == CUDA_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
    case CU_MEM_LOCATION_TYPE_HOST:
        *device = false;
        return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
        *device = false;
        return loc->id == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

FC_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                               const CUmemAllocationProp *prop, unsigned long long flags)
{
    FC_FAULT(cuMemCreate);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!handle || !prop || size == 0 || size % FC_GRANULARITY || flags != 0 ||
        prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    /* A machine without IMEX channels: what NCCL and PyTorch fall back on. */
    if (prop->requestedHandleTypes & CU_MEM_HANDLE_TYPE_FABRIC)
        return CUDA_ERROR_NOT_SUPPORTED;
    bool device;
    r = check_location(&prop->location, &device);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&fc_lock);
    r = device ? fc_device_charge(prop->location.id, size) : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS && !device)
        fc_host_used += size;
    pthread_mutex_unlock(&fc_lock);
    if (r != CUDA_SUCCESS)
        return r;
    struct fc_handle *h = calloc(1, sizeof *h);
    int fd = memfd_create("fakecuda-vmm", MFD_CLOEXEC);
    if (!h || fd < 0 || ftruncate(fd, (off_t)size) != 0) {
        free(h);
        if (fd >= 0)
            close(fd);
        pthread_mutex_lock(&fc_lock);
        if (device)
            fc_device_uncharge(prop->location.id, size);
        else
            fc_host_used -= size;
        pthread_mutex_unlock(&fc_lock);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    h->magic = FC_MAGIC_HANDLE;
    h->fd = fd;
    h->size = size;
    h->prop = *prop;
    h->refs = 1;
    pthread_mutex_lock(&fc_lock);
    h->next = handles;
    handles = h;
    live_handles++;
    pthread_mutex_unlock(&fc_lock);
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)h;
    return CUDA_SUCCESS;
}

/* Frees the handle's memory once nothing refers to it; under fc_lock. */
static void handle_maybe_free(struct fc_handle *h)
{
    if (h->refs > 0 || h->mappings > 0 || h->binds > 0 || h->pins > 0)
        return;
    if (h->home)
        munmap(h->home, h->size);
    if (h->mc)
        fc_mcast_free(h); /* no memory of its own; its bindings go */
    else if (h->imported)
        ; /* its exporter's memory: charged there */
    else if (h->prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE)
        fc_device_uncharge(h->prop.location.id, h->size);
    else
        fc_host_used -= h->size;
    if (h->fd >= 0)
        close(h->fd);
    h->magic = 0;
    live_handles--;
    for (struct fc_handle **pp = &handles; *pp; pp = &(*pp)->next)
        if (*pp == h) {
            *pp = h->next;
            break;
        }
    free(h);
}

void fc_vmm_handle_maybe_free(struct fc_handle *h)
{
    handle_maybe_free(h);
}

FC_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    FC_FAULT(cuMemRelease);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&fc_lock);
    struct fc_handle *h = handle_of(handle);
    if (h && h->refs > 0) {
        h->refs--;
        handle_maybe_free(h);
    } else {
        r = CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_unlock(&fc_lock);
    return r;
}

FC_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                            CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    FC_FAULT(cuMemMap);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (flags != 0 || size == 0 || ptr % FC_GRANULARITY)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fc_lock);
    struct fc_handle *h = handle_of(handle);
    if (h && h->mc) /* "cuMemMap will block until all devices have been added" */
        h = fc_mcast_wait_team(handle);
    bool mapped = false;
    if (h && reservation_of((uintptr_t)ptr, size))
        fc_region_each_in((uintptr_t)ptr, size, any_mapping, &mapped);
    if (!h || h->refs == 0 || !reservation_of((uintptr_t)ptr, size) || mapped)
        r = CUDA_ERROR_INVALID_VALUE;
    else if (offset != 0 || size != h->size)
        r = CUDA_ERROR_NOT_SUPPORTED; /* a handle maps whole, as on the real driver */
    if (r == CUDA_SUCCESS) {
        /* A multicast object's mapping stays inaccessible (multicast.c). */
        void *p = h->mc ? (void *)ptr
                        : mmap((void *)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, h->fd, 0);
        struct fc_region reg = {.base = (uintptr_t)ptr, .size = size, .kind = FC_VMM,
                                .dev = h->mc ? fc_mcast_device(h)
                                       : h->prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE
                                           ? h->prop.location.id : 0,
                                .handle = h};
        if (p == MAP_FAILED || !fc_region_add(&reg))
            r = CUDA_ERROR_OUT_OF_MEMORY;
        else
            h->mappings++;
    }
    pthread_mutex_unlock(&fc_lock);
    return r;
}

void *fc_vmm_home(uintptr_t addr, size_t n, bool write, struct fc_handle **pin)
{
    *pin = NULL;
    pthread_mutex_lock(&fc_lock);
    struct fc_region *r = fc_region_find(addr);
    struct fc_handle *h = r && r->kind == FC_VMM ? r->handle : NULL;
    unsigned need = write ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_READ;
    void *at = (void *)addr;
    if (h && !h->mc && h->fd >= 0 && r->access >= need && n <= r->size - (addr - r->base)) {
        if (!h->home) {
            void *m = mmap(NULL, h->size, PROT_READ | PROT_WRITE, MAP_SHARED, h->fd, 0);
            h->home = m == MAP_FAILED ? NULL : m;
        }
        if (h->home) {
            h->pins++;
            *pin = h;
            at = (char *)h->home + (addr - r->base);
        }
    }
    pthread_mutex_unlock(&fc_lock);
    return at;
}

void fc_vmm_unpin(struct fc_handle *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&fc_lock);
    h->pins--;
    handle_maybe_free(h);
    pthread_mutex_unlock(&fc_lock);
}

/* A page (2 MiB) made accessible read-write (cuMemSetAccess) is filled in
 * one call rather than by 512 faults at its first direct touch (a kernel,
 * the host): faults cost more than that on a virtual machine (pool.sh:
 * 52 s without, 44 s with). Copies and sets do not need it (they go
 * through the handle's home), so a spill-heavy run pays a little for it
 * (diffgen's spill-on run: 3.1 s against 4.0 s per 20k operations). Only
 * mappings up to PREFAULT_MAX, so that a large handle a test maps and
 * never touches stays sparse. A hint: a kernel without
 * MADV_POPULATE_WRITE (5.14) faults the pages in as before, so its
 * refusal is no error. */
#define PREFAULT_MAX ((size_t)4 << 20)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* The mappings a range consists of. As many as the range holds: the driver
 * has no limit on how many one cuMemUnmap or cuMemSetAccess covers (a pool
 * of 2 MiB pages sets access over hundreds at once). */
struct unmap_walk {
    uintptr_t next;
    uintptr_t end;
    bool ok;
    struct fc_region **found;
    size_t n, cap;
};

static bool collect_mapping(struct fc_region *r, void *arg)
{
    struct unmap_walk *w = arg;
    if (r->kind != FC_VMM || r->base != w->next || r->base + r->size > w->end) {
        w->ok = false;
        return false;
    }
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 64;
        struct fc_region **f = realloc(w->found, cap * sizeof *f);
        if (!f) {
            w->ok = false;
            return false;
        }
        w->found = f;
        w->cap = cap;
    }
    w->found[w->n++] = r;
    w->next = r->base + r->size;
    return true;
}

/* The range must consist of whole mappings, back to back; w->found is the
 * caller's to free (walk_done) whatever the answer. */
static bool whole_mappings(uintptr_t addr, size_t size, struct unmap_walk *w)
{
    *w = (struct unmap_walk){.next = addr, .end = addr + size, .ok = true};
    fc_region_each_in(addr, size, collect_mapping, w);
    return w->ok && w->n > 0 && w->next == w->end;
}

static void walk_done(struct unmap_walk *w)
{
    free(w->found);
}

FC_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    FC_FAULT(cuMemUnmap);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    struct unmap_walk w;
    pthread_mutex_lock(&fc_lock);
    if (!whole_mappings((uintptr_t)ptr, size, &w)) {
        pthread_mutex_unlock(&fc_lock);
        walk_done(&w);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (fc_check_unmap) /* takes the stream lock: never held while taking fc_lock */
        fc_unmap_check((uintptr_t)ptr, size);
    /* Back to reserved-but-inaccessible: a later touch faults. */
    mmap((void *)ptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    for (size_t i = 0; i < w.n; i++) {
        struct fc_handle *h = w.found[i]->handle;
        fc_region_remove(w.found[i]);
        h->mappings--;
        handle_maybe_free(h);
    }
    pthread_mutex_unlock(&fc_lock);
    walk_done(&w);
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    FC_FAULT(cuMemSetAccess);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!desc || count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned flags = 0;
    unsigned long long devs = 0;
    for (size_t i = 0; i < count; i++) {
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
            fc_check_device(desc[i].location.id) != CUDA_SUCCESS ||
            desc[i].flags > CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return CUDA_ERROR_INVALID_DEVICE;
        if (desc[i].flags > flags)
            flags = desc[i].flags;
        if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && desc[i].location.id < 64)
            devs |= 1ull << desc[i].location.id;
    }
    struct unmap_walk w;
    pthread_mutex_lock(&fc_lock);
    if (!whole_mappings((uintptr_t)ptr, size, &w)) {
        pthread_mutex_unlock(&fc_lock);
        walk_done(&w);
        return CUDA_ERROR_INVALID_VALUE;
    }
    int prot = flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE ? PROT_READ | PROT_WRITE
               : flags == CU_MEM_ACCESS_FLAGS_PROT_READ   ? PROT_READ
                                                          : PROT_NONE;
    mprotect((void *)ptr, size, prot);
    for (size_t i = 0; i < w.n; i++) {
        w.found[i]->access = flags;
        w.found[i]->access_devs = devs;
        if (w.found[i]->handle->mc) /* copies reach it, direct stores fault */
            mprotect((void *)w.found[i]->base, w.found[i]->size, PROT_NONE);
        else if (prot == (PROT_READ | PROT_WRITE) && w.found[i]->size <= PREFAULT_MAX)
            (void)madvise((void *)w.found[i]->base, w.found[i]->size, MADV_POPULATE_WRITE);
    }
    pthread_mutex_unlock(&fc_lock);
    walk_done(&w);
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location, CUdeviceptr ptr)
{
    FC_FAULT(cuMemGetAccess);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!flags || !location)
        return CUDA_ERROR_INVALID_VALUE;
    if (location->type != CU_MEM_LOCATION_TYPE_DEVICE || fc_check_device(location->id) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&fc_lock);
    struct fc_region *reg = fc_region_find((uintptr_t)ptr);
    /* The flags of the location asked: one the last cuMemSetAccess did not
     * grant has none (the flags kept are the widest granted). */
    if (reg && reg->kind == FC_VMM)
        *flags = location->id < 64 && (reg->access_devs >> location->id & 1)
                     ? reg->access
                     : CU_MEM_ACCESS_FLAGS_PROT_NONE;
    else
        r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&fc_lock);
    return r;
}

FC_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    FC_FAULT(cuMemRetainAllocationHandle);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fc_lock);
    struct fc_region *reg = fc_region_find((uintptr_t)addr);
    if (reg && reg->kind == FC_VMM) {
        reg->handle->refs++;
        *handle = (CUmemGenericAllocationHandle)(uintptr_t)reg->handle;
    } else {
        r = CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_unlock(&fc_lock);
    return r;
}

FC_EXPORT CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
                                                          CUmemGenericAllocationHandle handle)
{
    FC_FAULT(cuMemGetAllocationPropertiesFromHandle);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!prop)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fc_lock);
    struct fc_handle *h = handle_of(handle);
    if (h)
        *prop = h->prop;
    else
        r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&fc_lock);
    return r;
}
