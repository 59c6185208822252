/* policy/'s backend over the real driver (policy/backend.h): every call goes
 * to the driver's own entry points (spw_real for hooked names, spw_drv for
 * the others), never to a handler.
 *
 * Contexts: the policy calls from whichever program thread needs memory,
 * whatever context that thread has current (maybe another device's, maybe
 * none). Calls that belong to a device run with that device's primary
 * context current: pushed for the call and popped after, unless it already
 * is current (the common case: one cuCtxGetCurrent, a thread-local read in
 * the driver). Calls without a device (unmap, release, access, events) only
 * need some context, so they push one only when the thread has none. */
#include "shim/arenas.h"
#include "shim/backend.h"

#include "shim/capture.h"
#include "shim/contexts.h"
#include "shim/copy_side.h"
#include "shim/driver.h"
#include "shim/hooks.h"
#include "shim/log.h"
#include "shim/page_props.h"
#include "shim/size_text.h"

#include <pthread.h>
#include <stdatomic.h>

static _Atomic(CUcontext) primary[SW_MAX_DEVICES];
static pthread_mutex_t primary_lock = PTHREAD_MUTEX_INITIALIZER;
/* A device whose primary context serves device-less calls. */
static _Atomic int some_device = -1;

CUcontext spw_backend_primary_known(int dev)
{
    return dev >= 0 && dev < SW_MAX_DEVICES
               ? atomic_load_explicit(&primary[dev], memory_order_acquire)
               : NULL;
}

int spw_backend_primary_device(CUcontext ctx)
{
    for (int dev = 0; ctx && dev < SW_MAX_DEVICES; dev++)
        if (atomic_load_explicit(&primary[dev], memory_order_acquire) == ctx)
            return dev;
    return -1;
}

CUcontext spw_backend_primary(int dev)
{
    if (dev < 0 || dev >= SW_MAX_DEVICES)
        return NULL;
    CUcontext c = atomic_load_explicit(&primary[dev], memory_order_acquire);
    if (c || !spw_drv.cuDevicePrimaryCtxRetain)
        return c;
    pthread_mutex_lock(&primary_lock);
    c = atomic_load_explicit(&primary[dev], memory_order_relaxed);
    /* Retained once and never released: pool pages live in it until exit. */
    if (!c && spw_drv.cuDevicePrimaryCtxRetain(&c, (CUdevice)dev) == CUDA_SUCCESS) {
        atomic_store_explicit(&primary[dev], c, memory_order_release);
        int none = -1;
        atomic_compare_exchange_strong(&some_device, &none, dev);
    }
    pthread_mutex_unlock(&primary_lock);
    return c;
}

/* Makes want current for one call; *pushed tells ctx_leave to pop it. */
static CUresult ctx_enter_ctx(CUcontext want, int *pushed)
{
    *pushed = 0;
    CUcontext cur = NULL;
    if (!spw_drv.cuCtxGetCurrent || !spw_drv.cuCtxPushCurrent_v2)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (spw_drv.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == want)
        return CUDA_SUCCESS;
    CUresult r = spw_drv.cuCtxPushCurrent_v2(want);
    *pushed = r == CUDA_SUCCESS;
    return r;
}

static CUresult ctx_enter(int dev, int *pushed)
{
    CUcontext want = spw_backend_primary(dev);
    if (!want) {
        *pushed = 0;
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    return ctx_enter_ctx(want, pushed);
}

/* Some context current (the thread's own if it has one). */
static CUresult ctx_enter_any(int *pushed)
{
    *pushed = 0;
    CUcontext cur = NULL;
    if (spw_drv.cuCtxGetCurrent && spw_drv.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur)
        return CUDA_SUCCESS;
    return ctx_enter(atomic_load(&some_device), pushed);
}

/* A failed pop would leave the program's thread with spillway's context
 * on its stack: once more, then it is the driver's business. */
static void ctx_leave(int pushed)
{
    CUcontext c;
    if (pushed && spw_drv.cuCtxPopCurrent_v2(&c) != CUDA_SUCCESS)
        (void)spw_drv.cuCtxPopCurrent_v2(&c);
}

/* While a capture is under way anywhere in the process, spillway's calls
 * on a program thread (a page created, an event queried) are of the kind a
 * GLOBAL capture forbids to every thread in its default mode, and would
 * invalidate the program's capture: they run in RELAXED mode, and the
 * thread gets its own mode back after. Returns whether it switched. */
static bool relax(CUstreamCaptureMode *was)
{
    if (!spw_capture_active() || !spw_drv.cuThreadExchangeStreamCaptureMode)
        return false;
    *was = CU_STREAM_CAPTURE_MODE_RELAXED;
    return spw_drv.cuThreadExchangeStreamCaptureMode(was) == CUDA_SUCCESS;
}

static void unrelax(bool relaxed, CUstreamCaptureMode was)
{
    CUresult r;
    if (relaxed && (r = spw_drv.cuThreadExchangeStreamCaptureMode(&was)) != CUDA_SUCCESS)
        spw_warn("could not give a thread its stream capture mode back (error %d): it stays "
                 "RELAXED",
                 (int)r);
}

/* Runs call with a context made current by enter (which sets pushed_), and
 * returns its result. */
#define WITH_CTX(enter, call)                        \
    do {                                             \
        int pushed_;                                 \
        CUstreamCaptureMode was_;                    \
        CUresult r_ = (enter);                       \
        if (r_ != CUDA_SUCCESS)                      \
            return r_;                               \
        bool relaxed_ = relax(&was_);                \
        r_ = (call);                                 \
        unrelax(relaxed_, was_);                     \
        ctx_leave(pushed_);                          \
        return r_;                                   \
    } while (0)

/* dev's primary context; any context (the thread's own if it has one). */
#define IN_DEVICE(dev, call) WITH_CTX(ctx_enter((dev), &pushed_), call)
#define IN_ANY(call) WITH_CTX(ctx_enter_any(&pushed_), call)

#define NEED(fn)                                     \
    if (!(fn))                                       \
    return CUDA_ERROR_NOT_SUPPORTED

static CUresult be_granularity(void *ctx, int dev, size_t *bytes)
{
    (void)ctx;
    NEED(spw_drv.cuMemGetAllocationGranularity);
    CUmemAllocationProp prop = spw_page_prop(dev);
    IN_DEVICE(dev, spw_drv.cuMemGetAllocationGranularity(bytes, &prop,
                                                         CU_MEM_ALLOC_GRANULARITY_MINIMUM));
}

/* Host pages go on the device's NUMA node where the driver knows it. The
 * GPUDirect RDMA flag is a hint for device memory only: not asked for. The
 * first refusal is reported (spill cannot move anything without these
 * pages; later ones reach the program as its out-of-memory answers). */
static CUresult create_host_page(int dev, size_t size, CUmemGenericAllocationHandle *h)
{
    static atomic_int reported;
    CUmemAllocationProp prop = spw_page_prop(dev);
    prop.allocFlags.gpuDirectRDMACapable = 0;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE; /* never exported */
    int numa = -1;
    CUresult numa_r = CUDA_ERROR_NOT_SUPPORTED;
    if (spw_drv.cuDeviceGetAttribute &&
        spw_drv.cuDeviceGetAttribute(&numa, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, (CUdevice)dev) !=
            CUDA_SUCCESS)
        numa = -1;
    if (numa >= 0) {
        prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
        prop.location.id = numa;
        if ((numa_r = spw_real.spw_h_mem_create(h, size, &prop, 0)) == CUDA_SUCCESS)
            return CUDA_SUCCESS;
    }
    prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
    prop.location.id = 0;
    CUresult r = spw_real.spw_h_mem_create(h, size, &prop, 0);
    if (r != CUDA_SUCCESS && !atomic_exchange_explicit(&reported, 1, memory_order_relaxed)) {
        char b[SPW_SIZE_TEXT_MAX];
        spw_warn("device %d: the driver refused a pinned host page of %s for spill (NUMA node %d: "
                 "error %d; any node: error %d)", dev, spw_size_text(b, sizeof b, size), numa,
                 (int)numa_r, (int)r);
    }
    return r;
}

CUresult spw_backend_export_fd(CUmemGenericAllocationHandle h, int *fd)
{
    NEED(spw_real.spw_h_mem_export_to_shareable_handle);
    IN_ANY(spw_real.spw_h_mem_export_to_shareable_handle(fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
}

static CUresult be_page_create(void *ctx, int dev, sw_loc loc, size_t size,
                               CUmemGenericAllocationHandle *handle)
{
    (void)ctx;
    NEED(spw_real.spw_h_mem_create);
    if (loc == SW_LOC_HOST)
        IN_DEVICE(dev, create_host_page(dev, size, handle));
    CUmemAllocationProp prop = spw_page_prop(dev);
    IN_DEVICE(dev, spw_page_create(dev, size, &prop, handle));
}

CUresult spw_backend_mem_create(int dev, size_t size, const CUmemAllocationProp *prop,
                                CUmemGenericAllocationHandle *handle)
{
    NEED(spw_real.spw_h_mem_create);
    IN_DEVICE(dev, spw_real.spw_h_mem_create(handle, size, prop, 0));
}

CUresult spw_backend_mem_release(CUmemGenericAllocationHandle handle)
{
    NEED(spw_real.spw_h_mem_release);
    IN_ANY(spw_real.spw_h_mem_release(handle));
}

CUresult spw_backend_address_range(CUdeviceptr va, CUdeviceptr *base, size_t *size)
{
    NEED(spw_real.spw_h_mem_get_address_range);
    IN_ANY(spw_real.spw_h_mem_get_address_range(base, size, va));
}

static CUresult be_page_release(void *ctx, CUmemGenericAllocationHandle handle)
{
    (void)ctx;
    NEED(spw_real.spw_h_mem_release);
    IN_ANY(spw_real.spw_h_mem_release(handle));
}

static CUresult va_reserve_in(int dev, size_t size, size_t align, CUdeviceptr *va)
{
    NEED(spw_drv.cuMemAddressReserve);
    IN_DEVICE(dev, spw_drv.cuMemAddressReserve(va, size, align, 0, 0));
}

/* The policy reserves VA only for its arenas: the copy handlers learn here
 * which device an arena address belongs to, without asking the policy. */
static CUresult be_va_reserve(void *ctx, int dev, size_t size, size_t align, CUdeviceptr *va)
{
    (void)ctx;
    CUresult r = va_reserve_in(dev, size, align, va);
    if (r == CUDA_SUCCESS)
        spw_arena_note(dev, *va, size);
    return r;
}

static CUresult be_va_free(void *ctx, CUdeviceptr va, size_t size)
{
    (void)ctx;
    NEED(spw_drv.cuMemAddressFree);
    spw_arena_forget(va);
    IN_ANY(spw_drv.cuMemAddressFree(va, size));
}

static CUresult be_map(void *ctx, CUdeviceptr va, size_t size, CUmemGenericAllocationHandle h)
{
    (void)ctx;
    NEED(spw_real.spw_h_mem_map);
    IN_ANY(spw_real.spw_h_mem_map(va, size, 0, h, 0));
}

static CUresult be_unmap(void *ctx, CUdeviceptr va, size_t size)
{
    (void)ctx;
    NEED(spw_real.spw_h_mem_unmap);
    IN_ANY(spw_real.spw_h_mem_unmap(va, size));
}

static CUresult set_access(CUdeviceptr va, size_t size, uint64_t mask)
{
    CUmemAccessDesc desc[SW_MAX_DEVICES];
    size_t n = 0;
    for (int d = 0; d < SW_MAX_DEVICES; d++) {
        if (!(mask >> d & 1))
            continue;
        desc[n].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        desc[n].location.id = d;
        desc[n].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        n++;
    }
    if (!n)
        return CUDA_ERROR_INVALID_VALUE;
    return spw_real.spw_h_mem_set_access(va, size, desc, n);
}

static CUresult be_set_access(void *ctx, CUdeviceptr va, size_t size, uint64_t dev_mask)
{
    (void)ctx;
    NEED(spw_real.spw_h_mem_set_access);
    IN_ANY(set_access(va, size, dev_mask));
}

static CUresult be_copy(void *ctx, int dev, CUdeviceptr dst, CUdeviceptr src, size_t size,
                        CUstream stream)
{
    (void)ctx;
    /* The driver's own function: spillway's copies are not the program's. */
    NEED(spw_real.spw_h_memcpy_dtod_async);
    IN_DEVICE(dev, spw_real.spw_h_memcpy_dtod_async(dst, src, size, stream));
}

/* The thread's current context when it is one of dev's other than the
 * primary (a context the program created), else NULL. */
static CUcontext own_context_of(int dev)
{
    CUcontext cur = NULL;
    CUdevice d;
    if (!spw_drv.cuCtxGetCurrent || spw_drv.cuCtxGetCurrent(&cur) != CUDA_SUCCESS || !cur ||
        cur == spw_backend_primary(dev) || !spw_drv.cuCtxGetDevice ||
        spw_drv.cuCtxGetDevice(&d) != CUDA_SUCCESS || (int)d != dev)
        return NULL;
    return cur;
}

/* One context of the program's, made current for its sync. */
static CUresult sync_one(CUcontext c)
{
    NEED(spw_real.spw_h_ctx_synchronize);
    WITH_CTX(ctx_enter_ctx(c, &pushed_), spw_real.spw_h_ctx_synchronize());
}

/* The primary context, the calling thread's own context of dev if it uses
 * one (the policy may synchronize from the allocating thread), and every
 * other context of dev that the program gave work (contexts.h). */
static CUresult be_synchronize(void *ctx, int dev)
{
    (void)ctx;
    NEED(spw_real.spw_h_ctx_synchronize);
    CUresult r;
    if (own_context_of(dev) && (r = spw_real.spw_h_ctx_synchronize()) != CUDA_SUCCESS)
        return r;
    if ((r = spw_contexts_sync(dev, sync_one)) != CUDA_SUCCESS)
        return r;
    IN_DEVICE(dev, spw_real.spw_h_ctx_synchronize());
}

/* The device's own streams for moving pages: non-blocking, so they never
 * wait for the program's legacy stream, and work on them is never part of
 * a capture. */
static CUresult be_stream_create(void *ctx, int dev, CUstream *stream)
{
    (void)ctx;
    NEED(spw_drv.cuStreamCreate);
    IN_DEVICE(dev, spw_drv.cuStreamCreate(stream, CU_STREAM_NON_BLOCKING));
}

static CUresult be_stream_sync(void *ctx, int dev, CUstream stream)
{
    (void)ctx;
    NEED(spw_drv.cuStreamSynchronize);
    IN_DEVICE(dev, spw_drv.cuStreamSynchronize(stream));
}

static CUresult be_stream_destroy(void *ctx, int dev, CUstream stream)
{
    (void)ctx;
    NEED(spw_drv.cuStreamDestroy_v2);
    IN_DEVICE(dev, spw_drv.cuStreamDestroy_v2(stream));
}

static bool be_capturing(void *ctx)
{
    (void)ctx;
    return spw_capture_active();
}

/* policy/'s own threads make no call of the program's: relaxed for good. */
static void be_thread_start(void *ctx)
{
    (void)ctx;
    CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
    CUresult r;
    if (spw_driver_ready() && spw_drv.cuThreadExchangeStreamCaptureMode &&
        (r = spw_drv.cuThreadExchangeStreamCaptureMode(&m)) != CUDA_SUCCESS)
        spw_warn("spillway's thread stays in the GLOBAL capture mode (error %d): its calls "
                 "during a program's capture may invalidate it",
                 (int)r);
}

/* The asking thread's own context of dev is kept as one with work
 * (contexts.h): the device's syncs then cover it (be_synchronize), and its
 * cuCtxDestroy waits for a sync of it under way. Handed to the syncer as a
 * token instead, it was made current by a later sync after an asker that
 * gave up at its deadline had destroyed it (a freed handle, or by then
 * another context's). No token: nothing else to sync. */
static void *be_sync_token(void *ctx, int dev)
{
    (void)ctx;
    CUcontext own = own_context_of(dev);
    if (own)
        spw_contexts_add(own, dev);
    return NULL;
}

/* In the freeing thread's context when it is dev's: an event is recorded on
 * the program's streams, which must belong to the event's context. */
/* *where: that context (a primary reset names its own: sw_context_reset). */
static CUresult be_event_create(void *ctx, int dev, CUevent *ev, void **where)
{
    (void)ctx;
    NEED(spw_drv.cuEventCreate);
    CUcontext own = own_context_of(dev);
    *where = own ? own : spw_backend_primary(dev);
    if (own)
        return spw_drv.cuEventCreate(ev, CU_EVENT_DISABLE_TIMING);
    IN_DEVICE(dev, spw_drv.cuEventCreate(ev, CU_EVENT_DISABLE_TIMING));
}

/* In the freeing thread's own context: the per-thread and legacy streams
 * are the ones of the context it has current. */
static CUresult be_event_record(void *ctx, CUevent ev, CUstream stream)
{
    (void)ctx;
    NEED(spw_drv.cuEventRecord);
    IN_ANY(spw_drv.cuEventRecord(ev, stream));
}

/* In the stream's own context: an event the driver records there, and
 * that context's device (a block freed on a stream of another device or
 * context than its events'). */
static CUresult create_here(CUevent *ev, int *dev)
{
    CUdevice d;
    CUresult r = spw_drv.cuCtxGetDevice(&d);
    if (r == CUDA_SUCCESS && (r = spw_drv.cuEventCreate(ev, CU_EVENT_DISABLE_TIMING)) == CUDA_SUCCESS)
        *dev = (int)d;
    return r;
}

static CUresult be_event_create_on(void *ctx, CUstream stream, CUevent *ev, int *dev, void **where)
{
    (void)ctx;
    NEED(spw_drv.cuEventCreate);
    NEED(spw_drv.cuStreamGetCtx);
    NEED(spw_drv.cuCtxGetDevice);
    CUcontext c = NULL;
    CUresult r = spw_drv.cuStreamGetCtx(stream, &c); /* the legacy and per-thread streams: the current one's */
    if (r != CUDA_SUCCESS)
        return r;
    *where = c;
    WITH_CTX(ctx_enter_ctx(c, &pushed_), create_here(ev, dev));
}

static CUresult be_event_query(void *ctx, CUevent ev)
{
    (void)ctx;
    NEED(spw_drv.cuEventQuery);
    IN_ANY(spw_drv.cuEventQuery(ev));
}

static CUresult be_event_destroy(void *ctx, CUevent ev)
{
    (void)ctx;
    NEED(spw_drv.cuEventDestroy_v2);
    IN_ANY(spw_drv.cuEventDestroy_v2(ev));
}

/* Said once: each refusal is counted (spill_faults), and a driver that
 * refuses one move is likely to refuse the next ones too. */
static void be_spill_refused(void *ctx, int dev, CUresult err)
{
    static atomic_int reported;
    (void)ctx;
    if (!atomic_exchange_explicit(&reported, 1, memory_order_relaxed))
        spw_warn("device %d: the driver refused a spill step (error %d): the move was undone and "
                 "the allocation got pinned host pages instead",
                 dev, (int)err);
}

const sw_backend *spw_backend(void)
{
    static const sw_backend be = {
        .ctx = NULL,
        .granularity = be_granularity,
        .page_create = be_page_create,
        .page_release = be_page_release,
        .va_reserve = be_va_reserve,
        .va_free = be_va_free,
        .map = be_map,
        .unmap = be_unmap,
        .set_access = be_set_access,
        .copy = be_copy,
        .synchronize = be_synchronize,
        .sync_token = be_sync_token,
        .stream_create = be_stream_create,
        .stream_sync = be_stream_sync,
        .stream_destroy = be_stream_destroy,
        .capturing = be_capturing,
        .thread_start = be_thread_start,
        .spill_refused = be_spill_refused,
        .event_create = be_event_create,
        .event_record = be_event_record,
        .event_create_on = be_event_create_on,
        .event_query = be_event_query,
        .event_destroy = be_event_destroy,
    };
    return &be;
}

CUresult spw_backend_ctx_device(CUcontext ctx, int *dev)
{
    if (!ctx || !spw_drv.cuCtxGetDevice)
        return CUDA_ERROR_INVALID_CONTEXT;
    int pushed;
    CUresult r = ctx_enter_ctx(ctx, &pushed);
    if (r != CUDA_SUCCESS)
        return r;
    CUdevice d;
    r = spw_drv.cuCtxGetDevice(&d);
    ctx_leave(pushed);
    if (r == CUDA_SUCCESS)
        *dev = (int)d;
    return r;
}
