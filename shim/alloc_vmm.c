/* cuMemCreate, cuMemRelease and cuMemExportToShareableHandle. A handle for
 * plain device memory (pinned, on a device, no special flags) is spillway's
 * own: pool pages that cuMemMap maps at the program's addresses (vmm_map.c);
 * spillway's handle values carry a tag no driver handle has. A handle that
 * may be shared (a POSIX file descriptor or FABRIC handle type: PyTorch's
 * expandable segments ask for one) is pooled too, as long as it is not
 * exported or bound to a multicast object (multicast.c); either makes it
 * the driver's first (promotion: policy/promote.c, spw_vmm_driver_handle).
 * Everything else passes through, counted with its reason: special memory
 * against the device's limit, host locations as host. */
#include "shim/backend.h"
#include "shim/handler.h"
#include "shim/log.h"
#include "shim/size_text.h"
#include "shim/vmm.h"
#include "shim/vmm_live.h"

#include <pthread.h>
#include <stdlib.h>

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
#define POOLABLE_HANDLE_TYPES                                                              \
    ((unsigned)CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | (unsigned)CU_MEM_HANDLE_TYPE_FABRIC)

/* What a pool handle keeps of the program's request (sw_vmm_set_user):
 * its handle types, and whether it asked for GPUDirect RDMA. */
#define USER_TYPES 0xffffffffull
#define USER_RDMA (1ull << 32)

/* Whether the driver makes handles of these types on dev at all (FABRIC
 * needs an IMEX channel; programs such as PyTorch try it and fall back on
 * the error): asked once with a page of its own, remembered unless the
 * driver only said it was out of memory. */
#define PROBES 8
static struct probe {
    int dev;
    unsigned types;
    CUresult answer;
} probes[PROBES];
static unsigned nprobes;
static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;

static CUresult ask_driver(const CUmemAllocationProp *prop)
{
    size_t page = 0;
    CUmemGenericAllocationHandle h;
    CUresult r = spw_drv.cuMemGetAllocationGranularity
                     ? spw_drv.cuMemGetAllocationGranularity(&page, prop,
                                                              CU_MEM_ALLOC_GRANULARITY_MINIMUM)
                     : CUDA_ERROR_NOT_SUPPORTED;
    if (r == CUDA_SUCCESS)
        r = spw_backend_mem_create(prop->location.id, page, prop, &h);
    if (r == CUDA_SUCCESS && (r = spw_backend_mem_release(h)) != CUDA_SUCCESS)
        spw_warn("device %d: the driver refused to release a probe handle (error %d)",
                 prop->location.id, (int)r);
    return r == CUDA_ERROR_OUT_OF_MEMORY ? CUDA_SUCCESS : r;
}

static CUresult shareable(const CUmemAllocationProp *prop)
{
    unsigned types = (unsigned)prop->requestedHandleTypes;
    pthread_mutex_lock(&probe_lock);
    for (unsigned i = 0; i < nprobes; i++)
        if (probes[i].dev == prop->location.id && probes[i].types == types) {
            CUresult r = probes[i].answer;
            pthread_mutex_unlock(&probe_lock);
            return r;
        }
    CUresult r = ask_driver(prop);
    if (nprobes < PROBES)
        probes[nprobes++] = (struct probe){prop->location.id, types, r};
    pthread_mutex_unlock(&probe_lock);
    return r;
}

/* Why a device handle cannot be pool pages (-1: it can). */
static int passthrough_reason(const CUmemAllocationProp *prop, unsigned long long flags)
{
    if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return SW_PT_HOST_LOCATION;
    if (prop->requestedHandleTypes & ~POOLABLE_HANDLE_TYPES)
        return SW_PT_IPC;
    if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED || flags || prop->win32HandleMetaData ||
        prop->allocFlags.compressionType || prop->allocFlags.usage ||
        (prop->allocFlags.gpuDirectRDMACapable && !spw_backend_rdma_capable(prop->location.id)))
        return SW_PT_OTHER;
    return -1;
}

static CUresult create_pooled(sw_policy *p, int dev, size_t size, const CUmemAllocationProp *prop,
                              CUmemGenericAllocationHandle *handle)
{
    CUresult r = sw_vmm_create(p, dev, size, handle);
    uint64_t user = (prop->requestedHandleTypes & USER_TYPES) |
                    (prop->allocFlags.gpuDirectRDMACapable ? USER_RDMA : 0);
    if (r == CUDA_SUCCESS && user && (r = sw_vmm_set_user(p, *handle, user)) != CUDA_SUCCESS)
        (void)sw_vmm_release(p, *handle, NULL); /* just made: cannot be refused */
    return r;
}

CUmemAllocationProp spw_vmm_prop(int dev, uint64_t user)
{
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = (CUmemAllocationHandleType)(user & USER_TYPES);
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    prop.allocFlags.gpuDirectRDMACapable = (user & USER_RDMA) != 0;
    return prop;
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
    if (p && prop->requestedHandleTypes) {
        CUresult r = shareable(prop);
        if (r != CUDA_SUCCESS)
            return r; /* the driver's own answer for these types */
    }
    if (p) {
        /* Keyed by spillway's handle, like a driver handle. */
        SPW_POOL_ALLOC(SPW_KIND_HANDLE, account, size, create_pooled(p, account, size, prop, handle),
                       *handle);
    }
    if (why < 0)
        why = SW_PT_DISABLED;
    int noted = noting_device(account);
    if (account == SPILLWAY_HOST) {
        /* Host memory: never refused, no device gauge. */
        CUresult r = real(handle, size, prop, flags);
        if (r == CUDA_SUCCESS)
            spw_host_passthrough(SPW_KIND_HANDLE, *handle, size, noted, (sw_passthrough_reason)why, "cuMemCreate");
        return r;
    }
    SPW_PASSTHROUGH_ALLOC(SPW_KIND_HANDLE, account, size, (sw_passthrough_reason)why, "cuMemCreate",
                          real(handle, size, prop, flags), *handle);
}

/* The last release of a promoted handle releases the driver's (*last). */
static CUresult release_promoted(sw_policy *p, CUmemGenericAllocationHandle handle, bool *last)
{
    CUmemGenericAllocationHandle real;
    CUresult r = sw_vmm_release_promoted(p, handle, last, &real);
    return r == CUDA_SUCCESS && *last ? spw_backend_mem_release(real) : r;
}

static CUresult release_promoted_key(uint64_t key, void *p, bool *last)
{
    return release_promoted(p, (CUmemGenericAllocationHandle)key, last);
}

/* A pool handle's memory goes back when released and unmapped (last:
 * gone now; else at its last unmap, spw_live_pool_unmap). */
static CUresult release_pooled_key(uint64_t key, void *p, bool *last)
{
    CUresult r = sw_vmm_release(p, (CUmemGenericAllocationHandle)key, last);
    if (r == CUDA_ERROR_NOT_SUPPORTED) /* exported since the release looked */
        r = release_promoted(p, (CUmemGenericAllocationHandle)key, last);
    return r;
}

struct release_real {
    CUresult (*real)(CUmemGenericAllocationHandle);
};

static CUresult release_driver_key(uint64_t key, void *arg, bool *last)
{
    (void)last; /* the driver's references: vmm_live.c counts the retains */
    return ((struct release_real *)arg)->real((CUmemGenericAllocationHandle)key);
}

/* Every handle keeps its count while mapped or retained, as the driver
 * keeps its memory (vmm_live.c): a pool handle until the policy frees its
 * pages, the driver's handles, promoted ones included, until their last
 * unmap. */
CUresult spw_h_mem_release(CUmemGenericAllocationHandle handle)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_release);
    if (spw_disabled())
        return real(handle);
    sw_policy *p = spw_pool_policy();
    if (p && sw_vmm_promoted(p, handle, NULL))
        return spw_live_release(handle, release_promoted_key, p);
    if (p && sw_vmm_is_handle(p, handle))
        return spw_live_release(handle, release_pooled_key, p);
    struct release_real rr = {real};
    return spw_live_release(handle, release_driver_key, &rr);
}

/* Quiescing the devices can time out while they are busy (or a capture
 * runs): an export is rare and worth a few tries. */
#define PROMOTE_TRIES 20

/* The mappings of h its promotion made the driver's (on real), for
 * vmm_live.c. One the program unmapped before they were remembered is
 * forgotten again: the driver no longer maps real there. */
static void remember_mappings(CUmemGenericAllocationHandle h, CUmemGenericAllocationHandle real,
                              const sw_vmm_maps *maps, int dev)
{
    size_t n = maps->n < maps->max ? maps->n : maps->max;
    if (maps->n > maps->max)
        spw_warn("device %d: a pooled handle mapped %zu times was exported: the count of the "
                 "mappings past %zu may leave at its release",
                 dev, maps->n, maps->max);
    for (size_t i = 0; i < n; i++)
        spw_live_mapped(h, maps->va[i], maps->size[i]);
    CUresult (*retain)(CUmemGenericAllocationHandle *, void *) = spw_real.spw_h_mem_retain_allocation_handle;
    CUresult (*release)(CUmemGenericAllocationHandle) = spw_real.spw_h_mem_release;
    for (size_t i = 0; retain && release && i < n; i++) {
        CUmemGenericAllocationHandle there = 0;
        CUresult r = retain(&there, (void *)(uintptr_t)maps->va[i]);
        if (r != CUDA_SUCCESS || there != real)
            spw_live_unmapped_of(h, maps->va[i]);
        if (r == CUDA_SUCCESS && (r = release(there)) != CUDA_SUCCESS)
            spw_warn("device %d: the driver refused to release a reference it just gave (error %d)",
                     dev, (int)r);
    }
}

/* Makes pool handle h the driver's, with a driver handle of the types it
 * was asked with, for call (the entry point that needs it: counted and
 * logged under its name). */
static CUresult promote(sw_policy *p, CUmemGenericAllocationHandle h, const char *call)
{
    size_t size;
    int dev;
    uint64_t user;
    CUresult r = sw_vmm_properties(p, h, &size, &dev, &user);
    if (r != CUDA_SUCCESS)
        return r;
    CUmemAllocationProp prop = spw_vmm_prop(dev, user);
    CUmemGenericAllocationHandle real;
    /* The driver's copy is memory outside the pool: the pool makes room
     * for it first (its own pages come back to it after the copy). */
    if (spw_pool_lend(dev, SW_PT_IPC, size))
        return CUDA_ERROR_OUT_OF_MEMORY;
    if ((r = spw_backend_mem_create(dev, size, &prop, &real)) != CUDA_SUCCESS) {
        spw_pool_unlend(dev, SW_PT_IPC, size);
        return r;
    }
    /* Its mappings become the driver's: remembered once it is (vmm_live.c). */
    size_t cap = sw_vmm_mappings(p, h) + 4;
    sw_vmm_maps maps = {calloc(cap, sizeof *maps.va), calloc(cap, sizeof *maps.size), cap, 0};
    if (!maps.va || !maps.size) {
        free(maps.va);
        free(maps.size);
        spw_backend_mem_release(real);
        spw_pool_unlend(dev, SW_PT_IPC, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (int i = 0; i < PROMOTE_TRIES; i++)
        if ((r = sw_vmm_promote(p, h, real, &maps)) != CUDA_ERROR_NOT_READY)
            break;
    if (r == CUDA_SUCCESS)
        remember_mappings(h, real, &maps, dev);
    free(maps.va);
    free(maps.size);
    if (r != CUDA_SUCCESS) {
        char b[SPW_SIZE_TEXT_MAX];
        spw_size_text(b, sizeof b, size);
        CUresult f = spw_backend_mem_release(real);
        if (f != CUDA_SUCCESS)
            spw_warn("device %d: the driver refused to release a handle of %s (error %d)", dev, b,
                     (int)f);
        spw_pool_unlend(dev, SW_PT_IPC, size);
        if (sw_vmm_promoted(p, h, NULL))
            return CUDA_SUCCESS; /* another thread's export did it */
        spw_warn("device %d: %s of a pooled handle of %s failed: its pages could not "
                 "be handed to the driver (error %d)",
                 dev, call, b, (int)r);
        return r;
    }
    if (spw_live_retag(h, SW_PT_IPC) == 0)
        spw_pool_passthrough(dev, SW_PT_IPC, size, call);
    else
        spw_pool_unlend(dev, SW_PT_IPC, size); /* uncounted: its release gives nothing back */
    spw_pool_publish(dev); /* its pages left, maybe from the host */
    spw_debug("device %d: a pooled handle of %zu bytes is the driver's now (%s)", dev, size, call);
    return CUDA_SUCCESS;
}

CUresult spw_vmm_driver_handle(sw_policy *p, CUmemGenericAllocationHandle h, const char *call,
                               CUmemGenericAllocationHandle *driver)
{
    if (sw_vmm_promoted(p, h, driver))
        return CUDA_SUCCESS;
    CUresult r = promote(p, h, call);
    if (r != CUDA_SUCCESS)
        return r;
    return sw_vmm_promoted(p, h, driver) ? CUDA_SUCCESS
                                         : CUDA_ERROR_INVALID_VALUE; /* released meanwhile */
}

/* A pool handle is a list of spillway's pages, not one driver allocation:
 * its first export makes it the driver's (promote), and the driver exports
 * that. A pool handle asked with no shareable type gets the driver's
 * answer for such a handle. */
CUresult spw_h_mem_export_to_shareable_handle(void *shareableHandle,
                                              CUmemGenericAllocationHandle handle,
                                              CUmemAllocationHandleType handleType,
                                              unsigned long long flags)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_export_to_shareable_handle);
    sw_policy *p = spw_disabled() ? NULL : spw_pool_policy();
    if (!p || !sw_vmm_is_handle(p, handle))
        return real(shareableHandle, handle, handleType, flags);
    if (!shareableHandle || flags)
        return CUDA_ERROR_INVALID_VALUE; /* the driver's answer: no promotion for it */
    CUmemGenericAllocationHandle driver;
    if (!sw_vmm_promoted(p, handle, &driver)) {
        size_t size;
        int dev;
        uint64_t user;
        CUresult r = sw_vmm_properties(p, handle, &size, &dev, &user);
        if (r != CUDA_SUCCESS)
            return r;
        if (!(user & USER_TYPES & (uint64_t)handleType))
            return CUDA_ERROR_INVALID_VALUE; /* not a type it was made for: the driver's answer */
    }
    CUresult r = spw_vmm_driver_handle(p, handle, "cuMemExportToShareableHandle", &driver);
    return r == CUDA_SUCCESS ? real(shareableHandle, driver, handleType, flags) : r;
}
