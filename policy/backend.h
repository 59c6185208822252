/* The one narrow interface through which policy/ reaches the CUDA driver.
 *
 * policy/ never calls the driver itself: the shim fills a sw_backend with
 * functions built on the real driver entry points (cuMemCreate, cuMemMap, ...)
 * and the unit tests fill it with a fake that keeps real bytes. Every
 * function returns the driver's CUresult; policy/ hands errors back to its
 * caller unchanged.
 *
 * Physical memory is handled one page at a time (a page = the device's VMM
 * granularity, 2 MiB on H100): a driver handle cannot be mapped in parts, so
 * every page is its own handle. Calls are made from any thread, possibly
 * concurrently, with no policy/ lock held for the driver's sake; the backend
 * makes the right context current for `dev` itself.
 *
 * Implementing it with the driver (the shim; always the real entry points,
 * never spillway's own hooks, with dev's primary context current):
 *   granularity   cuMemGetAllocationGranularity(prop: PINNED, DEVICE dev,
 *                 CU_MEM_ALLOC_GRANULARITY_MINIMUM)
 *   page_create   cuMemCreate(&h, size, prop, 0), prop.type PINNED,
 *                 requestedHandleTypes NONE, location DEVICE dev, or for host
 *                 HOST_NUMA (id = CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID; HOST / 0
 *                 where that is not supported)
 *   page_release  cuMemRelease(h)
 *   va_reserve    cuMemAddressReserve(&va, size, align, 0, 0)
 *   va_free       cuMemAddressFree(va, size)
 *   map / unmap   cuMemMap(va, size, 0, h, 0) / cuMemUnmap(va, size)
 *   set_access    cuMemSetAccess(va, size, desc, n): one CUmemAccessDesc
 *                 {DEVICE d, PROT_READWRITE} per bit d of dev_mask (also for
 *                 host pages: it is the device that gets access)
 *   copy          cuMemcpyDtoDAsync(dst, src, size, stream)
 *   synchronize   cuCtxSynchronize() in every context of dev the program
 *                 uses (normally just the primary one)
 *   stream_create cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) in dev's
 *                 primary context; stream_sync cuStreamSynchronize(s);
 *                 stream_destroy cuStreamDestroy(s)
 *   capturing     the shim's count of captures begun and not ended
 *   thread_start  cuThreadExchangeStreamCaptureMode(RELAXED) on a thread of
 *                 policy/'s own
 *   event_*       cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING), cuEventRecord
 *                 (called in the freeing thread, so CU_STREAM_PER_THREAD
 *                 means that thread's stream), cuEventQuery, cuEventDestroy */
#ifndef SPILLWAY_POLICY_BACKEND_H
#define SPILLWAY_POLICY_BACKEND_H
#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where a physical page lives. */
typedef enum sw_loc {
    SW_LOC_DEVICE = 0, /* device memory of the owning device */
    SW_LOC_HOST = 1,   /* pinned host memory the owning device can map */
} sw_loc;

typedef struct sw_backend {
    void *ctx; /* passed back unchanged as the first argument */

    /* VMM granularity of dev in bytes (a power of two). */
    CUresult (*granularity)(void *ctx, int dev, size_t *bytes);

    /* One physical page of `size` bytes (= granularity) for dev, in device
     * memory or in pinned host memory the device can map. */
    CUresult (*page_create)(void *ctx, int dev, sw_loc loc, size_t size,
                            CUmemGenericAllocationHandle *handle);
    CUresult (*page_release)(void *ctx, CUmemGenericAllocationHandle handle);

    /* Virtual address space: one reservation, aligned to `align`. */
    CUresult (*va_reserve)(void *ctx, int dev, size_t size, size_t align, CUdeviceptr *va);
    CUresult (*va_free)(void *ctx, CUdeviceptr va, size_t size);

    /* Map a handle of size bytes at va (one page, or a whole driver
     * allocation the shim made: promote.c), or unmap it. */
    CUresult (*map)(void *ctx, CUdeviceptr va, size_t size, CUmemGenericAllocationHandle handle);
    CUresult (*unmap)(void *ctx, CUdeviceptr va, size_t size);

    /* Grant read-write access to [va, va+size) to every device whose bit is
     * set in dev_mask (bit d = device ordinal d). The range is a run of
     * consecutive mapped pages; a backend may split it page by page. */
    CUresult (*set_access)(void *ctx, CUdeviceptr va, size_t size, uint64_t dev_mask);

    /* Device-to-device copy between two mapped VAs of dev on `stream`
     * (policy/ passes its own stream, stream_create's) and a device-wide
     * synchronize that covers all work issued on dev before the call. */
    CUresult (*copy)(void *ctx, int dev, CUdeviceptr dst, CUdeviceptr src, size_t size,
                     CUstream stream);
    CUresult (*synchronize)(void *ctx, int dev);
    /* synchronize runs on a thread of policy/'s own (syncer.c), where the
     * program's contexts are not current: sync_token names the calling
     * thread's own context of dev when it is not the one synchronize
     * covers (NULL: none), and sync_context syncs such a context. Both may
     * be NULL. */
    void *(*sync_token)(void *ctx, int dev);
    CUresult (*sync_context)(void *ctx, int dev, void *token);

    /* A stream of dev's own for moving pages (non-blocking: it never waits
     * for, nor joins, the program's legacy stream or its captures), and a
     * wait for the work queued on it. */
    CUresult (*stream_create)(void *ctx, int dev, CUstream *stream);
    CUresult (*stream_sync)(void *ctx, int dev, CUstream stream);
    CUresult (*stream_destroy)(void *ctx, int dev, CUstream stream);

    /* Whether any stream capture is under way in the process: then
     * policy/ neither synchronizes nor remaps on its own account (a sync
     * during a capture invalidates it). NULL: never. */
    bool (*capturing)(void *ctx);

    /* Called first by every thread policy/ starts (NULL: nothing to do).
     * Those threads only ever make policy/'s own calls, which a program's
     * GLOBAL capture would otherwise forbid (an event query, a page
     * created): the shim puts such threads in the driver's RELAXED capture
     * mode. */
    void (*thread_start)(void *ctx);

    /* A spill the driver refused with err (not OUT_OF_MEMORY, not an
     * error that ends the context): the move was undone and the allocation
     * that asked for it goes on with host pages. For the shim to say so
     * (once); NULL: nothing to do. Quiesced, device lock held: it must not
     * call back into policy/. */
    void (*spill_refused)(void *ctx, int dev, CUresult err);

    /* Events mark the point of an async free in its stream. event_query
     * returns CUDA_SUCCESS once complete, CUDA_ERROR_NOT_READY before.
     * *where: the context the event was made in, as an opaque token (the
     * shim's: the CUcontext), which sw_context_reset names when a reset
     * destroys that context's events; NULL: none such. */
    CUresult (*event_create)(void *ctx, int dev, CUevent *ev, void **where);
    CUresult (*event_record)(void *ctx, CUevent ev, CUstream stream);
    /* An event made in stream's own context, and that context's device in
     * *dev: for a free on a stream of another context than the events
     * event_create makes (the driver records an event only on a stream of
     * its own context: CUDA_ERROR_INVALID_HANDLE), e.g. a block of one
     * device freed on another device's stream. NULL: none. */
    CUresult (*event_create_on)(void *ctx, CUstream stream, CUevent *ev, int *dev, void **where);
    CUresult (*event_query)(void *ctx, CUevent ev);
    CUresult (*event_destroy)(void *ctx, CUevent ev);
} sw_backend;

#endif
