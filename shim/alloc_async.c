/* Stream-ordered allocation: cuMemAllocAsync, cuMemAllocFromPoolAsync and
 * cuMemFreeAsync, each also as its _ptsz variant (whose stream 0 is the
 * per-thread stream, and which forwards to the driver's _ptsz function).
 * Served from the stream's device's page pool (cuMemAllocAsync: unless
 * the program made a pool spillway cannot stand in for the device's
 * current one); an allocation on a stream
 * being captured into a graph passes through (the graph must own a memory
 * node), counted. cuMemAllocFromPoolAsync is served from the spillway pool
 * of its CUmemoryPool's device (that pool's attributes, used and reserved
 * memory, do not show it), except from pools whose memory spillway cannot
 * stand in for (mempools.h: host-located, exportable), which the driver
 * serves, counted. */
#include "shim/arenas.h"
#include "shim/backend.h"
#include "shim/graph_captured.h"
#include "shim/handler.h"
#include "shim/log.h"
#include "shim/mempools.h"
#include "shim/pool_use.h"

/* The stream value the policy keys async reuse on dev's pool by (policy.h,
 * sw_alloc_async): stream 0 of a _ptsz call is the per-thread stream. The
 * legacy stream (NULL, CU_STREAM_LEGACY) is one per context, and no two
 * are ordered: NULL stands for the one of dev's primary context, the only
 * legacy stream frees and allocations of dev's blocks may take each other's
 * on; in any other context (one the program made, another device's) it is
 * CU_STREAM_LEGACY, on which the policy reuses nothing at once (a block
 * freed there in one context was handed to the legacy stream of another,
 * under the work still queued on it). */
static CUstream reuse_key(CUstream s, int per_thread, int dev)
{
    if (!s && per_thread)
        return CU_STREAM_PER_THREAD;
    if (s && s != CU_STREAM_LEGACY)
        return s;
    CUcontext cur = NULL;
    if (spw_drv.cuCtxGetCurrent && spw_drv.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur &&
        cur == spw_backend_primary_known(dev))
        return NULL;
    return CU_STREAM_LEGACY;
}

/* The stream's device in *dev (-1: one accounting does not track). When
 * the driver cannot tell, its error is the allocation's: passing through
 * would allocate memory spillway never counted. */
static CUresult stream_device(CUstream stream, int *dev)
{
    CUresult r = spw_driver_stream_device(stream, dev);
    if (r == CUDA_SUCCESS && (*dev < 0 || !spw_account_tracks(*dev)))
        *dev = -1;
    return r;
}

/* 1 when stream is capturing, 0 when not, -1 when the driver cannot say (a
 * bad stream: *err holds its answer, which the allocation call repeats). */
static int capturing(CUstream stream, int per_thread, CUresult *err)
{
    CUresult (*is)(CUstream, CUstreamCaptureStatus *) =
        per_thread ? spw_drv.cuStreamIsCapturing_ptsz : spw_drv.cuStreamIsCapturing;
    if (!is)
        return 0;
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    if ((*err = is(stream, &st)) != CUDA_SUCCESS)
        return -1;
    return st != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* The pool to serve an allocation on stream from (NULL: pass through, with
 * the reason in *why), its device in *dev (-1: not even counted): want's
 * (a memory pool's device), else the stream's; *err: the driver's error
 * when it cannot name the device (then nothing is called). */
static sw_policy *route(CUstream stream, int per_thread, int want, int *dev, sw_passthrough_reason *why,
                        CUresult *err)
{
    *why = SW_PT_DISABLED;
    *err = CUDA_SUCCESS;
    if (spw_disabled())
        return *dev = -1, NULL;
    if (want >= 0)
        *dev = spw_account_tracks(want) ? want : -1;
    else if ((*err = stream_device(stream, dev)) != CUDA_SUCCESS)
        return *dev = -1, NULL;
    if (*dev < 0)
        return NULL;
    spw_publish_ensure();
    sw_policy *p = spw_pool_for(*dev);
    if (!p)
        return NULL;
    CUresult asked;
    int c = capturing(stream, per_thread, &asked);
    if (c == 0)
        return p;
    *why = c > 0 ? SW_PT_CAPTURE : SW_PT_OTHER;
    return NULL;
}

/* Served from p for the memory pool in slot (-1: none spillway can
 * name), which counts it in its usage attributes. */
static CUresult serve_for_pool(sw_policy *p, int dev, size_t bytes, CUstream key, int slot,
                               CUdeviceptr *dptr)
{
    CUresult r = spw_serve_alloc(p, dev, bytes, 1, key, dptr);
    if (r == CUDA_SUCCESS && slot >= 0)
        spw_pool_use_add(slot, *dptr, bytes, sw_footprint(p, dev, bytes));
    return r;
}

/* The driver's answer r to an allocation on stream: one captured into a
 * graph is noted with its capture (graph_captured.c), so that its count
 * goes should no graph ever run it. */
static CUresult noted(CUresult r, const CUdeviceptr *dptr, sw_passthrough_reason why, cuuint64_t id,
                      CUstream stream, int per_thread)
{
    if (r == CUDA_SUCCESS && why == SW_PT_CAPTURE)
        spw_graph_captured(*dptr, id, stream, per_thread);
    return r;
}

static CUresult passthrough_async(CUresult (*real)(CUdeviceptr *, size_t, CUstream), int per_thread,
                                  CUdeviceptr *dptr, size_t bytesize, CUstream stream, int dev,
                                  sw_passthrough_reason why, cuuint64_t id)
{
    SPW_PASSTHROUGH_ALLOC(SPW_KIND_DEVPTR, dev, bytesize, why, "cuMemAllocAsync",
                          noted(real(dptr, bytesize, stream), dptr, why, id, stream, per_thread), *dptr);
}

static CUresult alloc_async(CUresult (*real)(CUdeviceptr *, size_t, CUstream), int per_thread,
                            CUdeviceptr *dptr, size_t bytesize, CUstream stream)
{
    if (!real)
        return CUDA_ERROR_NOT_INITIALIZED;
    int dev;
    sw_passthrough_reason why;
    CUresult err = CUDA_SUCCESS;
    sw_policy *p = dptr ? route(stream, per_thread, -1, &dev, &why, &err) : (dev = -1, NULL);
    if (err != CUDA_SUCCESS)
        return err;
    int slot = -1, how = p ? spw_mempool_current(dev, &slot) : -1;
    if (how >= 0) { /* the device's current pool is one spillway cannot stand in for */
        p = NULL;
        why = (sw_passthrough_reason)how;
    }
    if (p)
        return serve_for_pool(p, dev, bytesize, reuse_key(stream, per_thread, dev), slot, dptr);
    if (dev < 0)
        return real(dptr, bytesize, stream);
    if (why != SW_PT_CAPTURE)
        return passthrough_async(real, per_thread, dptr, bytesize, stream, dev, why, 0);
    cuuint64_t id = spw_graph_captures_hold(stream, per_thread);
    CUresult r = passthrough_async(real, per_thread, dptr, bytesize, stream, dev, why, id);
    spw_graph_captures_release();
    return r;
}

/* From a host-located pool: pinned host memory, the CPU's to read, never
 * the device's. Counted as host memory, and as a pass-through on the
 * stream's device (as a host-location cuMemCreate is, on the current
 * context's). */
static CUresult alloc_from_host_pool(CUresult (*real)(CUdeviceptr *, size_t, CUmemoryPool, CUstream),
                                     CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream stream)
{
    spw_publish_ensure();
    CUresult r = real(dptr, bytesize, pool, stream);
    if (r != CUDA_SUCCESS)
        return r;
    int dev;
    if (spw_driver_stream_device(stream, &dev) != CUDA_SUCCESS)
        dev = -1;
    spw_host_passthrough(SPW_KIND_DEVPTR, *dptr, bytesize, dev, SW_PT_HOST_LOCATION, "cuMemAllocFromPoolAsync");
    return r;
}

static CUresult passthrough_from_pool(CUresult (*real)(CUdeviceptr *, size_t, CUmemoryPool, CUstream),
                                      int per_thread, CUdeviceptr *dptr, size_t bytesize,
                                      CUmemoryPool pool, CUstream stream, int dev,
                                      sw_passthrough_reason why, cuuint64_t id)
{
    SPW_PASSTHROUGH_ALLOC(SPW_KIND_DEVPTR, dev, bytesize, why, "cuMemAllocFromPoolAsync",
                          noted(real(dptr, bytesize, pool, stream), dptr, why, id, stream, per_thread),
                          *dptr);
}

/* Whether the driver knows pool, a pool spillway never saw made (made
 * before it was loaded, or a handle the driver never gave): its answer to
 * a read of one of its attributes. Served without asking, a bad handle
 * would get memory where the driver alone refuses it, and be remembered
 * as a pool (spw_mempool_slot). Asked once: a good pool is remembered. */
static CUresult pool_exists(CUmemoryPool pool)
{
    __typeof__(spw_real.spw_h_mem_pool_get_attribute) get = SPW_REAL(spw_h_mem_pool_get_attribute);
    cuuint64_t v;
    return get ? get(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v) : CUDA_ERROR_NOT_INITIALIZED;
}

static CUresult alloc_from_pool(CUresult (*real)(CUdeviceptr *, size_t, CUmemoryPool, CUstream),
                                int per_thread, CUdeviceptr *dptr, size_t bytesize,
                                CUmemoryPool pool, CUstream stream)
{
    if (!real)
        return CUDA_ERROR_NOT_INITIALIZED;
    int dev, pool_dev = -1, slot = -1;
    int how = dptr && pool && !spw_disabled() ? spw_mempool_route(pool, &pool_dev, &slot) : -1;
    if (how == SW_PT_HOST_LOCATION)
        return alloc_from_host_pool(real, dptr, bytesize, pool, stream);
    sw_passthrough_reason why;
    CUresult err = CUDA_SUCCESS;
    sw_policy *p = dptr && pool ? route(stream, per_thread, pool_dev, &dev, &why, &err) : (dev = -1, NULL);
    if (err != CUDA_SUCCESS)
        return err;
    if (p && how >= 0) { /* device memory the program shares or asked specially for */
        p = NULL;
        why = (sw_passthrough_reason)how;
    }
    if (p && slot < 0) { /* a pool never seen: the driver's, or no pool at all */
        if ((err = pool_exists(pool)) != CUDA_SUCCESS)
            return err;
        slot = spw_mempool_slot(pool);
    }
    if (p)
        return serve_for_pool(p, dev, bytesize, reuse_key(stream, per_thread, dev), slot, dptr);
    if (dev < 0)
        return real(dptr, bytesize, pool, stream);
    if (why != SW_PT_CAPTURE)
        return passthrough_from_pool(real, per_thread, dptr, bytesize, pool, stream, dev, why, 0);
    cuuint64_t id = spw_graph_captures_hold(stream, per_thread);
    CUresult r = passthrough_from_pool(real, per_thread, dptr, bytesize, pool, stream, dev, why, id);
    spw_graph_captures_release();
    return r;
}

/* A pool block freed on a capturing stream: the driver's rule is that a
 * captured free must name a graph allocation (cuMemFreeAsync: "must
 * therefore be passed the address of a graph allocation"), and allocations
 * during capture pass through, so a pool block never is one. The driver
 * answers for itself (INVALID_VALUE, as for the program's own cuMemAlloc
 * memory) and the block stays the program's. Should the driver ever accept
 * it, the graph frees it at every replay: the block is then kept for the
 * rest of the process rather than reused under the graph. */
static CUresult free_in_capture(CUresult (*real)(CUdeviceptr, CUstream), CUdeviceptr dptr,
                                CUstream stream)
{
    CUresult r = real(dptr, stream);
    if (r == CUDA_SUCCESS)
        spw_warn("cuMemFreeAsync of 0x%llx during a capture was accepted by the driver: spillway "
                "keeps the block for the rest of the process (a graph may use it at every replay)",
                (unsigned long long)dptr);
    return r;
}

static CUresult free_async(CUresult (*real)(CUdeviceptr, CUstream), int per_thread,
                           CUdeviceptr dptr, CUstream stream)
{
    if (!real)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (spw_disabled() || !dptr)
        return real(dptr, stream);
    sw_policy *p = spw_pool_owner(dptr);
    if (p) {
        CUresult err = CUDA_SUCCESS;
        int c = capturing(stream, per_thread, &err);
        if (c < 0)
            return err; /* the driver's answer for this stream */
        if (c > 0)
            return free_in_capture(real, dptr, stream);
        return spw_serve_free(p, dptr, 1, reuse_key(stream, per_thread, spw_arena_device(dptr)));
    }
    SPW_ACCOUNTED_FREE(SPW_KIND_DEVPTR, dptr, real(dptr, stream));
}

CUresult spw_h_mem_alloc_async(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return alloc_async(SPW_REAL(spw_h_mem_alloc_async), 0, dptr, bytesize, hStream);
}

CUresult spw_h_mem_alloc_async_pt(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return alloc_async(SPW_REAL(spw_h_mem_alloc_async_pt), 1, dptr, bytesize, hStream);
}

CUresult spw_h_mem_alloc_from_pool_async(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                         CUstream hStream)
{
    return alloc_from_pool(SPW_REAL(spw_h_mem_alloc_from_pool_async), 0, dptr, bytesize, pool,
                           hStream);
}

CUresult spw_h_mem_alloc_from_pool_async_pt(CUdeviceptr *dptr, size_t bytesize,
                                            CUmemoryPool pool, CUstream hStream)
{
    return alloc_from_pool(SPW_REAL(spw_h_mem_alloc_from_pool_async_pt), 1, dptr, bytesize, pool,
                           hStream);
}

CUresult spw_h_mem_free_async(CUdeviceptr dptr, CUstream hStream)
{
    return free_async(SPW_REAL(spw_h_mem_free_async), 0, dptr, hStream);
}

CUresult spw_h_mem_free_async_pt(CUdeviceptr dptr, CUstream hStream)
{
    return free_async(SPW_REAL(spw_h_mem_free_async_pt), 1, dptr, hStream);
}
