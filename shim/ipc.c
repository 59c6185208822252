/* Legacy IPC of pool memory: the hooks (shim/ipc.h; docs/design.md,
 * "Legacy IPC").
 *
 * cuIpcGetMemHandle of cuMemAlloc-class pool memory pins the allocation's
 * pages (policy's sw_export_pin: filled back, never moved again, released
 * rather than reused after the free) and answers a handle of spillway's
 * own: magic, the exporter's socket token and secret, BUFFER_ID, base and
 * size; the same allocation always gets the same bytes. Anything else (the
 * program's own VMM, memory spillway passed through, spillway disabled)
 * is the driver's. cuIpcOpenMemHandle of a spillway handle asks the
 * exporter for the pages' descriptors (ipc_server.c), maps them at VA of
 * its own with the direct driver entry points (not the program's VMM,
 * nothing counted against this process's limit: the exporter counts it),
 * and counts opens of the same handle as the driver does; the close at
 * zero unmaps. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/policy.h"
#include "shim/account.h"
#include "shim/backend.h"
#include "shim/config.h"
#include "shim/driver.h"
#include "shim/handler.h"
#include "shim/hooks.h"
#include "shim/ipc.h"
#include "shim/log.h"
#include "shim/pool_setup.h"

static const char magic[8] = {'S', 'P', 'W', 'I', 'P', 'C', 1, 0};

static void encode(CUipcMemHandle *out, const spw_ipc_handle *h)
{
    memset(out, 0, sizeof *out);
    memcpy(out->reserved, magic, sizeof magic);
    memcpy(out->reserved + 8, h, sizeof *h);
}

static bool decode(const CUipcMemHandle *in, spw_ipc_handle *h)
{
    if (memcmp(in->reserved, magic, sizeof magic) != 0)
        return false;
    memcpy(h, in->reserved + 8, sizeof *h);
    return true;
}

_Static_assert(8 + sizeof(spw_ipc_handle) <= CU_IPC_HANDLE_SIZE, "a handle fits CUipcMemHandle");

/* ---- export ------------------------------------------------------------------ */

CUresult spw_h_ipc_get_mem_handle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
    sw_policy *p = spw_disabled() || !spw_driver_ready() ? NULL : spw_pool_policy();
    if (!p || !sw_owns(p, dptr)) {
        SPW_REAL_OR_RETURN(real, spw_h_ipc_get_mem_handle);
        return real(pHandle, dptr);
    }
    if (!pHandle)
        return CUDA_ERROR_INVALID_VALUE;
    /* What it is first: only live cuMemAlloc-class pool memory is
     * spillway's to export; the rest (the program's own VMM, a freed
     * pointer) gets the driver's answer. */
    sw_export x;
    CUresult r = sw_export_find(p, dptr, &x);
    if (r == CUDA_ERROR_NOT_FOUND) {
        SPW_REAL_OR_RETURN(real, spw_h_ipc_get_mem_handle);
        return real(pHandle, dptr);
    }
    if (r == CUDA_SUCCESS && !spw_backend_ipc_capable(x.dev)) {
        static atomic_int told;
        if (!atomic_exchange(&told, 1))
            spw_warn("cuIpcGetMemHandle: device %d's pool pages are not exportable (SPILLWAY_IPC=0, or "
                     "the device or driver offers no POSIX file descriptors): CUDA_ERROR_NOT_SUPPORTED",
                     x.dev);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (r == CUDA_SUCCESS)
        r = sw_export_pin(p, dptr, &x);
    if (r == CUDA_ERROR_NOT_READY) {
        /* Partly spilled, and the device could not be quiesced to bring it
         * back (busy, or a stream capture under way, for about 2 s). */
        static atomic_int told;
        if (!atomic_exchange(&told, 1))
            spw_warn("cuIpcGetMemHandle: the allocation is partly in host memory and device %d could not "
                     "be quiesced to bring it back (busy, or a stream capture under way): "
                     "CUDA_ERROR_OUT_OF_MEMORY; a later call may succeed", x.dev);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (r != CUDA_SUCCESS)
        return r == CUDA_ERROR_NOT_FOUND ? CUDA_ERROR_INVALID_VALUE : r; /* freed meanwhile */
    spw_ipc_handle h = {.buffer = x.buffer, .base = x.base, .size = x.size};
    if ((r = spw_ipc_serve(x.buffer, &h.token, &h.secret)) != CUDA_SUCCESS)
        return r;
    encode(pHandle, &h);
    return CUDA_SUCCESS;
}

/* ---- import ------------------------------------------------------------------ */

/* One opened handle: its mapping and how many opens it has. */
typedef struct import {
    spw_ipc_handle h; /* all of it: a wrong secret opens nothing */
    CUdeviceptr va, ptr;
    size_t span;
    unsigned refs;
    struct import *next;
} import;

static pthread_mutex_t imports_lock = PTHREAD_MUTEX_INITIALIZER;
static import *imports; /* under imports_lock */

static import *find(const spw_ipc_handle *h)
{
    for (import *m = imports; m; m = m->next)
        if (!memcmp(&m->h, h, sizeof *h))
            return m;
    return NULL;
}

/* The local ordinal of the device with this UUID, -1 when none is visible. */
static int device_of(const unsigned char uuid[16])
{
    int n = spw_driver_device_count();
    for (int i = 0; i < n && spw_drv.cuDeviceGetUuid_v2; i++) {
        CUuuid u;
        if (spw_drv.cuDeviceGetUuid_v2(&u, (CUdevice)i) == CUDA_SUCCESS &&
            memcmp(u.bytes, uuid, sizeof u.bytes) == 0)
            return i;
    }
    return -1;
}

static void unmap_span(CUdeviceptr va, size_t span)
{
    (void)spw_real.spw_h_mem_unmap(va, span);
    (void)spw_drv.cuMemAddressFree(va, span);
}

/* Imports and maps the page descriptors the exporter sends on s, a
 * message at a time (each closed once imported), at fresh VA; then grants
 * access. */
static CUresult map_pages(int s, const spw_ipc_reply *rep, int dev, unsigned flags, CUdeviceptr *out)
{
    size_t n = (size_t)rep->npages, page = (size_t)rep->page, span = n * page, i = 0;
    CUdeviceptr va = 0;
    CUresult r = spw_drv.cuMemAddressReserve && spw_drv.cuMemImportFromShareableHandle &&
                         spw_real.spw_h_mem_map && spw_real.spw_h_mem_set_access &&
                         spw_real.spw_h_mem_release && spw_real.spw_h_mem_unmap
                     ? spw_drv.cuMemAddressReserve(&va, span, page, 0, 0)
                     : CUDA_ERROR_NOT_SUPPORTED;
    while (r == CUDA_SUCCESS && i < n) {
        int fds[SPW_IPC_FDS_PER_MSG];
        size_t k = spw_ipc_next_fds(s, fds, n - i < SPW_IPC_FDS_PER_MSG ? n - i : SPW_IPC_FDS_PER_MSG);
        if (!k)
            r = CUDA_ERROR_INVALID_VALUE; /* stopped short: freed meanwhile, or gone */
        for (size_t j = 0; j < k; j++) {
            CUmemGenericAllocationHandle h;
            if (r == CUDA_SUCCESS)
                r = spw_drv.cuMemImportFromShareableHandle(&h, (void *)(intptr_t)fds[j],
                                                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
            close(fds[j]);
            if (r != CUDA_SUCCESS)
                continue;
            r = spw_real.spw_h_mem_map(va + i * page, page, 0, h, 0);
            (void)spw_real.spw_h_mem_release(h); /* the mapping keeps it */
            if (r == CUDA_SUCCESS)
                i++;
        }
    }
    if (r == CUDA_SUCCESS) {
        CUmemAccessDesc acc[2] = {{.location = {CU_MEM_LOCATION_TYPE_DEVICE, dev},
                                   .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE}};
        size_t na = 1;
        int cur;
        if ((flags & CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) && spw_driver_ctx_device(&cur) == CUDA_SUCCESS &&
            cur != dev)
            acc[na++] = (CUmemAccessDesc){.location = {CU_MEM_LOCATION_TYPE_DEVICE, cur},
                                          .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
        r = spw_real.spw_h_mem_set_access(va, span, acc, na);
    }
    if (r != CUDA_SUCCESS) {
        if (va) {
            for (size_t k = 0; k < i; k++)
                (void)spw_real.spw_h_mem_unmap(va + k * page, page);
            (void)spw_drv.cuMemAddressFree(va, span);
        }
        return r;
    }
    *out = va;
    return CUDA_SUCCESS;
}

/* The open of spillway's own handle h (decoded), by either ABI. */
static CUresult open_ours(CUdeviceptr *pdptr, spw_ipc_handle h, unsigned int Flags)
{
    if (!spw_driver_ready())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!pdptr || (Flags & ~(unsigned)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))
        return CUDA_ERROR_INVALID_VALUE;
    /* The driver's answer for a handle opened in the process that made it. */
    if (h.token == spw_ipc_own_token())
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&imports_lock);
    import *m = find(&h);
    if (m) {
        m->refs++;
        *pdptr = m->ptr;
    }
    pthread_mutex_unlock(&imports_lock);
    if (m)
        return CUDA_SUCCESS;
    spw_ipc_reply rep;
    CUresult r;
    int s = spw_ipc_ask(&h, &rep, &r);
    if (s < 0)
        return r;
    int dev = device_of(rep.uuid);
    if (dev < 0) {
        close(s);
        spw_warn("cuIpcOpenMemHandle: the exporter's device is not visible in this process "
                 "(CUDA_VISIBLE_DEVICES?): CUDA_ERROR_INVALID_DEVICE");
        return CUDA_ERROR_INVALID_DEVICE;
    }
    CUdeviceptr va;
    r = map_pages(s, &rep, dev, Flags, &va);
    close(s);
    if (r != CUDA_SUCCESS)
        return r;
    import *n = malloc(sizeof *n);
    if (!n) {
        unmap_span(va, (size_t)(rep.npages * rep.page));
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *n = (import){h, va, va + rep.offset, (size_t)(rep.npages * rep.page), 1, NULL};
    pthread_mutex_lock(&imports_lock);
    if ((m = find(&h))) { /* another thread opened it meanwhile */
        m->refs++;
        *pdptr = m->ptr;
    } else {
        n->next = imports;
        imports = n;
        *pdptr = n->ptr;
    }
    pthread_mutex_unlock(&imports_lock);
    if (m) {
        unmap_span(va, n->span);
        free(n);
    } else {
        spw_account_unpooled_held(+1); /* device memory copies must ask the driver about */
    }
    return CUDA_SUCCESS;
}

/* Both ABIs take the same arguments: spillway's own handle is opened
 * here, any other goes to the driver function of the ABI asked (real). */
static CUresult open_or_forward(CUresult (*real)(CUdeviceptr *, CUipcMemHandle, unsigned int), CUdeviceptr *pdptr,
                                CUipcMemHandle handle, unsigned int Flags)
{
    spw_ipc_handle h;
    if (!spw_disabled() && decode(&handle, &h))
        return open_ours(pdptr, h, Flags);
    return real ? real(pdptr, handle, Flags) : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult spw_h_ipc_open_mem_handle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    return open_or_forward(SPW_REAL(spw_h_ipc_open_mem_handle), pdptr, handle, Flags);
}

/* The unsuffixed ABI (before CUDA 11). */
CUresult spw_h_ipc_open_mem_handle_v1(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    return open_or_forward(SPW_REAL(spw_h_ipc_open_mem_handle_v1), pdptr, handle, Flags);
}

CUresult spw_h_ipc_close_mem_handle(CUdeviceptr dptr)
{
    import *gone = NULL;
    pthread_mutex_lock(&imports_lock);
    for (import **at = &imports; *at; at = &(*at)->next) {
        if ((*at)->ptr != dptr)
            continue;
        gone = *at;
        if (--gone->refs) {
            pthread_mutex_unlock(&imports_lock);
            return CUDA_SUCCESS;
        }
        *at = gone->next;
        break;
    }
    pthread_mutex_unlock(&imports_lock);
    if (!gone) {
        SPW_REAL_OR_RETURN(real, spw_h_ipc_close_mem_handle);
        return real(dptr);
    }
    unmap_span(gone->va, gone->span);
    spw_account_unpooled_held(-1);
    free(gone);
    return CUDA_SUCCESS;
}
