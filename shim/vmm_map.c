/* The calls around cuMemCreate, answered by the pool for spillway's handles
 * and mappings and passed to the driver for everything else: cuMemMap,
 * cuMemUnmap, cuMemSetAccess, cuMemRetainAllocationHandle and
 * cuMemGetAllocationPropertiesFromHandle. A promoted handle (exported:
 * alloc_vmm.c) stands for its driver handle, and its mappings are the
 * driver's. The driver's mappings of handles spillway counts are
 * remembered (vmm_live.c): their memory lives until the last unmap. */
#include "shim/backend.h"
#include "shim/handler.h"
#include "shim/log.h"
#include "shim/vmm.h"
#include "shim/vmm_live.h"

#include <string.h>

CUresult spw_h_mem_map(CUdeviceptr ptr, size_t size, size_t offset,
                       CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_map);
    sw_policy *p = spw_disabled() ? NULL : spw_pool_policy();
    CUmemGenericAllocationHandle driver = handle;
    if (p && sw_vmm_is_handle(p, handle) && !sw_vmm_promoted(p, handle, &driver))
        return flags ? CUDA_ERROR_INVALID_VALUE : sw_vmm_map(p, ptr, size, offset, handle);
    /* The driver's mapping: a counted handle's memory lives until its last
     * unmap (vmm_live.c). */
    CUresult r = real(ptr, size, offset, driver, flags);
    if (r == CUDA_SUCCESS && !spw_disabled())
        spw_live_mapped(handle, ptr, size);
    return r;
}

/* The end of the run of pages from at on that are (or are not) spillway's. */
static CUdeviceptr run_end(sw_policy *p, CUdeviceptr at, CUdeviceptr end, size_t page, bool ours)
{
    CUdeviceptr e = at + page;
    while (e < end && sw_owns(p, e) == ours)
        e += page;
    return e;
}

/* Whether [at, at+len), none of it spillway's, is whole mappings of the
 * driver's, back to back: cuMemGetAddressRange answers the mapping a VMM
 * address lies in. An error that says nothing of the address (no such
 * call, no context) leaves it to the driver's own answer. */
static bool driver_whole(CUdeviceptr at, size_t len)
{
    for (CUdeviceptr end = at + len; at < end;) {
        CUdeviceptr base = 0;
        size_t size = 0;
        CUresult r = spw_backend_address_range(at, &base, &size);
        if (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_NOT_FOUND)
            return false; /* nothing mapped there */
        if (r != CUDA_SUCCESS)
            return true;
        if (base != at || !size || size > end - at)
            return false; /* splits a mapping */
        at += size;
    }
    return true;
}

/* What to do with one run: spillway's mappings or the driver's. */
typedef CUresult (*run_fn)(sw_policy *p, bool ours, CUdeviceptr at, size_t len, void *arg);

/* A range that mixes spillway's mappings with the driver's (a chunk made
 * the driver's at its export among pooled ones, and PyTorch unmaps or
 * grants a whole segment at once): each run goes to its owner, once every
 * run is known to be whole mappings. The driver refuses a range with a
 * hole or part of a mapping whole, so nothing is done then: unmapping
 * spillway's runs first would free memory the program still holds. */
static CUresult by_runs(sw_policy *p, CUdeviceptr va, size_t size, run_fn fn, void *arg)
{
    size_t page = sw_page_size(p);
    CUdeviceptr end = va + size;
    if (!page || va % page || size % page || end < va)
        return CUDA_ERROR_INVALID_VALUE;
    for (CUdeviceptr at = va; at < end;) {
        bool ours = sw_owns(p, at);
        CUdeviceptr e = run_end(p, at, end, page, ours);
        if (ours ? sw_vmm_check(p, at, e - at) != CUDA_SUCCESS : !driver_whole(at, e - at))
            return CUDA_ERROR_INVALID_VALUE; /* splits a mapping: nothing done */
        at = e;
    }
    CUresult first = CUDA_SUCCESS;
    for (CUdeviceptr at = va; at < end;) {
        bool ours = sw_owns(p, at);
        CUdeviceptr e = run_end(p, at, end, page, ours);
        CUresult r = fn(p, ours, at, e - at, arg);
        if (first == CUDA_SUCCESS)
            first = r;
        at = e;
    }
    return first;
}

struct unmap {
    CUresult (*real)(CUdeviceptr, size_t);
};

/* The driver's unmap of a range spillway does not map. */
static CUresult driver_unmap(CUresult (*real)(CUdeviceptr, size_t), CUdeviceptr at, size_t len)
{
    CUresult r = real(at, len);
    if (r == CUDA_SUCCESS && !spw_disabled())
        spw_live_unmapped(at, len);
    return r;
}

static CUresult unmap_run(sw_policy *p, bool ours, CUdeviceptr at, size_t len, void *arg)
{
    const struct unmap *u = arg;
    return ours ? spw_live_pool_unmap(p, at, len) : driver_unmap(u->real, at, len);
}

CUresult spw_h_mem_unmap(CUdeviceptr ptr, size_t size)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_unmap);
    sw_policy *p = spw_disabled() ? NULL : spw_pool_policy();
    CUresult r = p ? sw_vmm_check(p, ptr, size) : CUDA_ERROR_NOT_FOUND;
    if (r == CUDA_ERROR_NOT_FOUND)
        return driver_unmap(real, ptr, size);
    if (r == CUDA_SUCCESS) {
        r = spw_live_pool_unmap(p, ptr, size);
        /* Made the driver's since the check (an export): the driver's unmap. */
        return r == CUDA_ERROR_NOT_FOUND ? driver_unmap(real, ptr, size) : r;
    }
    struct unmap u = {real};
    return by_runs(p, ptr, size, unmap_run, &u);
}

struct access {
    CUresult (*real)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
    const CUmemAccessDesc *desc;
    size_t count;
    uint64_t mask;
};

static CUresult access_run(sw_policy *p, bool ours, CUdeviceptr at, size_t len, void *arg)
{
    const struct access *a = arg;
    return ours ? sw_vmm_set_access(p, at, len, a->mask) : a->real(at, len, a->desc, a->count);
}

/* Read-only access is granted as read-write (the policy keeps one mask). */
CUresult spw_h_mem_set_access(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                              size_t count)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_set_access);
    sw_policy *p = spw_disabled() ? NULL : spw_pool_policy();
    if (!p || !desc || !count)
        return real(ptr, size, desc, count);
    CUresult r = sw_vmm_check(p, ptr, size);
    if (r == CUDA_ERROR_NOT_FOUND)
        return real(ptr, size, desc, count);
    struct access a = {real, desc, count, 0};
    for (size_t i = 0; i < count; i++) {
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || desc[i].location.id < 0 ||
            desc[i].location.id >= SW_MAX_DEVICES ||
            desc[i].flags > CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return CUDA_ERROR_INVALID_DEVICE;
        if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE)
            a.mask |= 1ull << desc[i].location.id;
    }
    if (r == CUDA_SUCCESS)
        return sw_vmm_set_access(p, ptr, size, a.mask);
    return by_runs(p, ptr, size, access_run, &a);
}

/* The driver retained *handle, mapped at va, for the program. A promoted
 * pool handle's memory answers that handle, the value the program mapped
 * (the driver's answer is "the same handle value used to map the
 * memory"): one reference more on it, and the driver's reference, which
 * the promoted handle holds once for all of its own, given back. */
static void retained(sw_policy *p, CUmemGenericAllocationHandle *handle, CUdeviceptr va)
{
    CUmemGenericAllocationHandle h;
    if (p && sw_vmm_retain_promoted(p, *handle, &h) == CUDA_SUCCESS) {
        CUresult r = spw_backend_mem_release(*handle);
        if (r != CUDA_SUCCESS)
            spw_warn("the driver refused to release a reference it just gave (error %d): an "
                     "exported handle's memory may outlive its last release",
                     (int)r);
        *handle = h;
        return;
    }
    spw_live_retained(*handle, va);
}

CUresult spw_h_mem_retain_allocation_handle(CUmemGenericAllocationHandle *handle, void *addr)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_retain_allocation_handle);
    sw_policy *p = spw_disabled() ? NULL : spw_pool_policy();
    CUdeviceptr va = (CUdeviceptr)(uintptr_t)addr;
    if (!p || !handle || !sw_owns(p, va)) {
        CUresult r = real(handle, addr);
        if (r == CUDA_SUCCESS && handle && !spw_disabled())
            retained(p, handle, va);
        return r;
    }
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
    CUmemGenericAllocationHandle driver;
    if (sw_vmm_promoted(p, handle, &driver))
        return real(prop, driver);
    size_t size;
    int dev;
    uint64_t user;
    CUresult r = sw_vmm_properties(p, handle, &size, &dev, &user);
    if (r != CUDA_SUCCESS)
        return r;
    *prop = spw_vmm_prop(dev, user);
    return CUDA_SUCCESS;
}
