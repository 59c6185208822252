/* Owner of the driver handle: loads it once and fills spw_real (real.c). */
#include "shim/driver.h"

#include "shim/account.h"
#include "shim/config.h"
#include "shim/fork.h"
#include "shim/hooks.h"
#include "shim/log.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

struct spw_drv spw_drv;

/* FORKED: a child forked after the driver was initialized (fork.h). */
enum { DRIVER_UNLOADED, DRIVER_READY, DRIVER_FAILED, DRIVER_FORKED };
static _Atomic int driver_state = DRIVER_UNLOADED;
/* Whether the driver answered a question that needs cuInit: from then on a
 * forked child has no driver (fork.h). */
static _Atomic int driver_live;
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;
/* Set while this thread runs the driver's dlopen: calls that come back from
 * the driver's constructors pass through instead of waiting on themselves. */
static _Thread_local int loading_here;
/* Load address of the driver, for spw_driver_owns (read by dlsym at any time). */
static _Atomic(const void *) driver_base;

/* Unhooked driver functions the shim calls. */

static _Atomic(spw_dlsym_fn) real_dlsym;

SPW_EARLY spw_dlsym_fn spw_real_dlsym(void)
{
    spw_dlsym_fn fn = atomic_load_explicit(&real_dlsym, memory_order_acquire);
    if (fn)
        return fn;
    /* dlvsym is not overridden, so this cannot come back here. */
    static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"};
    for (size_t i = 0; !fn && i < sizeof versions / sizeof versions[0]; i++)
        fn = (spw_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", versions[i]);
    if (!fn) {
        /* Without dlsym nothing can work; say so before crashing. */
        spw_error("cannot find glibc's dlsym (dlvsym: %s)", dlerror());
        abort();
    }
    atomic_store_explicit(&real_dlsym, fn, memory_order_release);
    return fn;
}

/* A relaxed load first: this runs on every allocation, and the line stays
 * shared once set. */
static void saw_initialized(void)
{
    if (!atomic_load_explicit(&driver_live, memory_order_relaxed))
        atomic_store_explicit(&driver_live, 1, memory_order_relaxed);
}

/* pthread_atfork's child handler: one store, so that it is safe whatever
 * the parent's threads were doing. Nothing else of spillway's is touched in
 * the child: every path to its state starts with spw_driver_ready(). */
static void forget_driver_in_child(void)
{
    if (atomic_load_explicit(&driver_live, memory_order_relaxed) &&
        atomic_load_explicit(&driver_state, memory_order_relaxed) == DRIVER_READY)
        atomic_store_explicit(&driver_state, DRIVER_FORKED, memory_order_relaxed);
}

int spw_driver_forked(void)
{
    return atomic_load_explicit(&driver_state, memory_order_relaxed) == DRIVER_FORKED;
}

static void resolve_hooks(void *handle, spw_dlsym_fn sym)
{
    for (unsigned i = 0; i < spw_real_slot_count; i++) {
        const struct spw_real_slot *h = &spw_real_slots[i];
        *h->real = sym(handle, h->symbol);
        if (h->pt_suffix) {
            char name[128];
            snprintf(name, sizeof name, "%s%s", h->symbol, h->pt_suffix);
            *h->real_pt = sym(handle, name);
        }
        if (!*h->real)
            spw_debug("the driver does not export %s", h->symbol);
    }
}

/* The driver at path, NULL with the reason in why when it cannot be
 * loaded or is not a CUDA driver: a library that loads but lacks the
 * driver's functions (SPILLWAY_DRIVER=libc.so.6) would otherwise leave a
 * program that finds the driver itself unlimited, each hook handing it the
 * driver's own function. */
static void *open_driver(const char *path, char *why, size_t size)
{
    loading_here = 1;
    void *handle = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
    loading_here = 0;
    if (!handle) {
        snprintf(why, size, "%s", dlerror());
        return NULL;
    }
    if (!spw_real_dlsym()(handle, "cuCtxGetDevice")) {
        snprintf(why, size, "it is not a CUDA driver: it has no cuCtxGetDevice");
        dlclose(handle);
        return NULL;
    }
    return handle;
}

static void load_driver(void)
{
    static const char default_driver[] = "libcuda.so.1";
    const char *path = spw_config()->driver;
    char why[512];
    void *handle = open_driver(path, why, sizeof why);
    if (!handle) {
        /* "The driver the program loaded itself" (options.def). A program
         * that dlopened it into a local scope (every framework) is not
         * reached through RTLD_NEXT, which left such programs unlimited
         * when SPILLWAY_DRIVER was mistyped: the soname finds it, loaded
         * or not. A program linked with -lcuda has it after spillway. */
        char own_why[512];
        void *own = strcmp(path, default_driver) != 0 ? open_driver(default_driver, own_why, sizeof own_why)
                                                      : NULL;
        spw_warn("cannot load the CUDA driver '%s' (%s): using %s", path, why,
                 own ? default_driver : "the driver already loaded, if any");
        handle = own ? own : RTLD_NEXT;
        path = own ? default_driver : path;
    }
    spw_dlsym_fn sym = spw_real_dlsym();
    resolve_hooks(handle, sym);
#define SPW_DRV_LOAD(name, type) spw_drv.name = (type)sym(handle, #name);
    SPW_DRV_FUNCS(SPW_DRV_LOAD)
#undef SPW_DRV_LOAD
    if (!spw_drv.cuCtxGetDevice) {
        spw_warn("no CUDA driver found: every CUDA call answers CUDA_ERROR_NOT_INITIALIZED");
        atomic_store_explicit(&driver_state, DRIVER_FAILED, memory_order_release);
        return;
    }
    Dl_info info;
    if (dladdr((void *)spw_drv.cuCtxGetDevice, &info))
        atomic_store_explicit(&driver_base, info.dli_fbase, memory_order_release);
    /* Limits need the driver's answers: accounting starts with the driver. */
    static const struct spw_device_query query = {
        .total = spw_driver_device_total,
        .page = spw_driver_page_size,
        .count = spw_driver_device_count,
        .vmm = spw_driver_vmm,
    };
    spw_account_init(spw_config(), &query);
    /* Before READY: a fork can only find READY with the handler in place. */
    pthread_atfork(NULL, NULL, forget_driver_in_child);
    spw_debug("driver '%s' loaded", handle == RTLD_NEXT ? "(already loaded)" : path);
    atomic_store_explicit(&driver_state, DRIVER_READY, memory_order_release);
}

int spw_driver_ready(void)
{
    int state = atomic_load_explicit(&driver_state, memory_order_acquire);
    if (state == DRIVER_UNLOADED && !loading_here) {
        pthread_once(&driver_once, load_driver);
        state = atomic_load_explicit(&driver_state, memory_order_acquire);
    }
    return state == DRIVER_READY;
}

int spw_driver_owns(const void *addr)
{
    const void *base = atomic_load_explicit(&driver_base, memory_order_acquire);
    Dl_info info;
    return base && dladdr(addr, &info) && info.dli_fbase == base;
}

CUresult spw_driver_ctx_device(int *dev)
{
    if (!spw_driver_ready() || !spw_drv.cuCtxGetDevice)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUdevice d;
    CUresult r = spw_drv.cuCtxGetDevice(&d);
    if (r == CUDA_SUCCESS) {
        saw_initialized();
        *dev = (int)d;
    }
    return r;
}

/* The device of context c: cuCtxGetDevice asks the current one, so c is
 * made current for the call when it is not (and popped after). */
static CUresult ctx_device_of(CUcontext c, CUdevice *d)
{
    CUcontext cur = NULL;
    if (!spw_drv.cuCtxGetCurrent || spw_drv.cuCtxGetCurrent(&cur) != CUDA_SUCCESS)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (cur == c)
        return spw_drv.cuCtxGetDevice(d);
    if (!spw_drv.cuCtxPushCurrent_v2 || !spw_drv.cuCtxPopCurrent_v2)
        return CUDA_ERROR_NOT_SUPPORTED;
    CUresult r = spw_drv.cuCtxPushCurrent_v2(c);
    if (r != CUDA_SUCCESS)
        return r;
    r = spw_drv.cuCtxGetDevice(d);
    /* A failed pop would leave c on the program's stack: once more. */
    CUcontext popped;
    if (spw_drv.cuCtxPopCurrent_v2(&popped) != CUDA_SUCCESS)
        (void)spw_drv.cuCtxPopCurrent_v2(&popped);
    return r;
}

/* Before CUDA 12.8 (no cuStreamGetDevice) a stream's device is its
 * context's: cuStreamGetCtx_v2 (12.5) answers a green context's stream
 * with its device's primary context; cuStreamGetCtx (9.2) with the green
 * context itself, made current here for one call on a 12.4 driver. */
CUresult spw_driver_stream_ctx_device(CUstream stream, CUdevice *d)
{
    CUcontext c = NULL;
    CUgreenCtx green;
    CUresult r = spw_drv.cuStreamGetCtx_v2 ? spw_drv.cuStreamGetCtx_v2(stream, &c, &green)
                 : spw_drv.cuStreamGetCtx  ? spw_drv.cuStreamGetCtx(stream, &c)
                                           : CUDA_ERROR_NOT_SUPPORTED;
    if (r == CUDA_SUCCESS && !c)
        r = CUDA_ERROR_INVALID_CONTEXT;
    return r == CUDA_SUCCESS ? ctx_device_of(c, d) : r;
}

CUresult spw_driver_stream_device(CUstream stream, int *dev)
{
    int special = stream == NULL || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
    if (!special && spw_driver_ready()) {
        CUdevice d;
        if (spw_driver_stream_own_device(stream, &d) == CUDA_SUCCESS) {
            saw_initialized();
            *dev = (int)d;
            return CUDA_SUCCESS;
        }
    }
    return spw_driver_ctx_device(dev);
}

CUresult spw_driver_pointer_device(CUdeviceptr ptr, int *dev)
{
    if (!spw_driver_ready() || !spw_real.spw_h_pointer_get_attribute)
        return CUDA_ERROR_NOT_INITIALIZED;
    int ordinal;
    CUresult r = spw_real.spw_h_pointer_get_attribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr);
    if (r == CUDA_SUCCESS) {
        saw_initialized();
        *dev = ordinal;
    }
    return r;
}

int spw_driver_device_count(void)
{
    int n;
    if (!spw_driver_ready() || !spw_drv.cuDeviceGetCount || spw_drv.cuDeviceGetCount(&n) != CUDA_SUCCESS)
        return -1;
    saw_initialized();
    return n;
}

uint64_t spw_driver_device_total(int dev)
{
    size_t total = 0;
    if (!spw_driver_ready() || !spw_real.spw_h_device_total_mem)
        return 0;
    if (spw_real.spw_h_device_total_mem(&total, (CUdevice)dev) != CUDA_SUCCESS)
        return 0;
    saw_initialized();
    return total;
}

uint64_t spw_driver_page_size(int dev)
{
    if (!spw_driver_ready() || !spw_drv.cuMemGetAllocationGranularity)
        return 0;
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    size_t page = 0;
    /* Asked with no context pushed: a limit is computed for a device the
     * program only asked about (cuDeviceTotalMem), and a context there would
     * cost it device memory. A driver that wants one answers an error: the
     * page is then unknown, and a limit below it fails the pool's set-up. */
    if (spw_drv.cuMemGetAllocationGranularity(&page, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) !=
        CUDA_SUCCESS)
        return 0;
    return page;
}

int spw_driver_vmm(int dev)
{
    if (!spw_driver_ready())
        return -1;
    if (!spw_real.spw_h_mem_create || !spw_drv.cuMemGetAllocationGranularity)
        return 0;
    int on = 0;
    if (!spw_drv.cuDeviceGetAttribute ||
        spw_drv.cuDeviceGetAttribute(&on, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                                     (CUdevice)dev) != CUDA_SUCCESS)
        return -1;
    return on != 0;
}
