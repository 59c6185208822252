/* The driver's copy family: cuMemcpy, cuMemcpyAsync and the typed
 * cuMemcpy{HtoD,DtoH,DtoD}[Async]_v2, each also as its per-thread variant
 * (_ptds for the synchronous ones, _ptsz for the stream ones), which
 * forwards to the driver's same variant. Each forwards first and returns
 * the driver's answer unchanged; a successful copy adds its bytes to the
 * stats counter of its direction and device (one relaxed atomic add). A
 * failed copy counts nothing.
 *
 * The hot path takes no lock and makes no syscall: typed copies know their
 * direction, and their device comes from the pool's arenas (a few
 * compares), else is the only device or the current context's
 * (cuCtxGetDevice, a thread-local read in the driver, only in processes
 * with several devices). How cuMemcpy's sides are told apart: copy_side.c.
 * When a pool spills, each copy also touches its sides, fills back those
 * that live on the host and is submitted inside the work gate (gate_use.h):
 * without spill that is one atomic load. */
#include "shim/arenas.h"
#include "shim/copy.h"

#include "shim/copy_side.h"
#include "shim/gate_use.h"
#include "shim/handler.h"

void spw_copy_count(enum spw_copy_dir dir, CUdeviceptr dev_side, CUdeviceptr other,
                    size_t bytes)
{
    int dev = spw_arena_device(dev_side);
    if (dev < 0 && dir == SPW_COPY_DTOD)
        dev = spw_arena_device(other);
    if (dev < 0)
        dev = spw_side_fallback_device();
    spw_publish_ensure();
    spw_account_copy(dev, dir, bytes);
}

/* A copy whose sides are classified: to_dev/from_dev whether each is device
 * memory, ddev/sdev its device (-1: not known). Charged to the
 * destination's device, else the source's, else the fallback. */
static void count_sides(int to_dev, int ddev, int from_dev, int sdev, size_t bytes)
{
    if (!to_dev && !from_dev)
        return; /* host to host */
    enum spw_copy_dir dir = !from_dev ? SPW_COPY_HTOD : !to_dev ? SPW_COPY_DTOH : SPW_COPY_DTOD;
    int dev = to_dev && ddev >= 0 ? ddev : from_dev ? sdev : -1;
    if (dev < 0)
        dev = spw_side_fallback_device();
    spw_publish_ensure();
    spw_account_copy(dev, dir, bytes);
}

void spw_copy_count_unified(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
    int ddev, sdev;
    int to_dev = spw_side_is_device(dst, &ddev), from_dev = spw_side_is_device(src, &sdev);
    count_sides(to_dev, ddev, from_dev, sdev, bytes);
}

/* One side of a 2D/3D descriptor: whether it is device memory, and which
 * device (-1: not known). An array is device memory of an unknown device;
 * a DEVICE pointer is device memory whatever spillway knows of it. */
static int typed_side(CUmemorytype type, CUdeviceptr p, int *dev)
{
    *dev = -1;
    switch (type) {
    case CU_MEMORYTYPE_DEVICE:
        if (!spw_side_is_device(p, dev))
            *dev = -1;
        return 1;
    case CU_MEMORYTYPE_ARRAY:
        return 1;
    case CU_MEMORYTYPE_UNIFIED:
        return spw_side_is_device(p, dev);
    default:
        return 0;
    }
}

void spw_copy_count_typed(CUmemorytype dst_type, CUdeviceptr dst, CUmemorytype src_type, CUdeviceptr src,
                          size_t bytes)
{
    int ddev, sdev;
    int to_dev = typed_side(dst_type, dst, &ddev), from_dev = typed_side(src_type, src, &sdev);
    count_sides(to_dev, ddev, from_dev, sdev, bytes);
}

/* After the driver answered r for a copy: counts it on success. The
 * runtime wrapper learns that a handler saw its copy (spw_mark_counted)
 * even when nothing was counted (host to host), so it never counts it
 * again. */
static inline CUresult typed(CUresult r, enum spw_copy_dir dir, CUdeviceptr dev_side,
                             CUdeviceptr other, size_t bytes)
{
    if (r == CUDA_SUCCESS && !spw_disabled()) {
        spw_copy_count(dir, dev_side, other, bytes);
        spw_mark_counted();
    }
    return r;
}

static inline CUresult unified(CUresult r, CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
    if (r == CUDA_SUCCESS && !spw_disabled()) {
        spw_copy_count_unified(dst, src, bytes);
        spw_mark_counted();
    }
    return r;
}

#define HOST(p) ((CUdeviceptr)(uintptr_t)(p))

/* One handler and its per-thread variant: name, the hooks.def handler,
 * parameters, the forwarded arguments, the two sides that may be spillway
 * memory (0: none), the bytes copied, the stream (NULL: a synchronous
 * copy) and the counting expression. With spill, a side that lives on the
 * host is filled back first and the copy is submitted inside the work gate
 * (gate_use.h) of the stream's device, which need not be the current
 * context's. */
#define COPY_HANDLERS(handler, params, args, side_a, side_b, bytes, stream, count) \
    SPW_CHECKED_HANDLERS(handler, params, args, SPW_RANGES_CHECK((side_a), (side_b), (bytes)), \
                         spw_gate_use2(g, (side_a), (side_b), (bytes));           \
                         devices = spw_gate_devices_on((stream), (side_a), (side_b)), count)

COPY_HANDLERS(spw_h_memcpy, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount),
              (dst, src, ByteCount), dst, src, ByteCount, NULL, unified(r, dst, src, ByteCount))
COPY_HANDLERS(spw_h_memcpy_async,
              (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream),
              (dst, src, ByteCount, hStream), dst, src, ByteCount, hStream, unified(r, dst, src, ByteCount))

COPY_HANDLERS(spw_h_memcpy_htod, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount),
              (dstDevice, srcHost, ByteCount), dstDevice, 0, ByteCount, NULL,
              typed(r, SPW_COPY_HTOD, dstDevice, HOST(srcHost), ByteCount))
COPY_HANDLERS(spw_h_memcpy_dtoh, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount),
              (dstHost, srcDevice, ByteCount), srcDevice, 0, ByteCount, NULL,
              typed(r, SPW_COPY_DTOH, srcDevice, HOST(dstHost), ByteCount))
COPY_HANDLERS(spw_h_memcpy_dtod,
              (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount),
              (dstDevice, srcDevice, ByteCount), dstDevice, srcDevice, ByteCount, NULL,
              typed(r, SPW_COPY_DTOD, dstDevice, srcDevice, ByteCount))

COPY_HANDLERS(spw_h_memcpy_htod_async,
              (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream),
              (dstDevice, srcHost, ByteCount, hStream), dstDevice, 0, ByteCount, hStream,
              typed(r, SPW_COPY_HTOD, dstDevice, HOST(srcHost), ByteCount))
COPY_HANDLERS(spw_h_memcpy_dtoh_async,
              (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),
              (dstHost, srcDevice, ByteCount, hStream), srcDevice, 0, ByteCount, hStream,
              typed(r, SPW_COPY_DTOH, srcDevice, HOST(dstHost), ByteCount))
COPY_HANDLERS(spw_h_memcpy_dtod_async,
              (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),
              (dstDevice, srcDevice, ByteCount, hStream), dstDevice, srcDevice, ByteCount, hStream,
              typed(r, SPW_COPY_DTOD, dstDevice, srcDevice, ByteCount))

/* Copies to and from CUDA arrays (device memory no pointer names: charged
 * to the other side's device, else the current context's). The device
 * pointer of DtoA/AtoD is a side like any copy's, touched, filled back and
 * gated; the offsets are into the array. */
COPY_HANDLERS(spw_h_memcpy_dtoa, (CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount),
              (dstArray, dstOffset, srcDevice, ByteCount), srcDevice, 0, ByteCount, NULL,
              typed(r, SPW_COPY_DTOD, srcDevice, 0, ByteCount))
COPY_HANDLERS(spw_h_memcpy_atod, (CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount),
              (dstDevice, srcArray, srcOffset, ByteCount), dstDevice, 0, ByteCount, NULL,
              typed(r, SPW_COPY_DTOD, dstDevice, 0, ByteCount))
COPY_HANDLERS(spw_h_memcpy_htoa, (CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount),
              (dstArray, dstOffset, srcHost, ByteCount), 0, 0, ByteCount, NULL,
              typed(r, SPW_COPY_HTOD, 0, HOST(srcHost), ByteCount))
COPY_HANDLERS(spw_h_memcpy_atoh, (void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount),
              (dstHost, srcArray, srcOffset, ByteCount), 0, 0, ByteCount, NULL,
              typed(r, SPW_COPY_DTOH, 0, HOST(dstHost), ByteCount))
COPY_HANDLERS(spw_h_memcpy_atoa,
              (CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset, size_t ByteCount),
              (dstArray, dstOffset, srcArray, srcOffset, ByteCount), 0, 0, ByteCount, NULL,
              typed(r, SPW_COPY_DTOD, 0, 0, ByteCount))
COPY_HANDLERS(spw_h_memcpy_htoa_async,
              (CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount, CUstream hStream),
              (dstArray, dstOffset, srcHost, ByteCount, hStream), 0, 0, ByteCount, hStream,
              typed(r, SPW_COPY_HTOD, 0, HOST(srcHost), ByteCount))
COPY_HANDLERS(spw_h_memcpy_atoh_async,
              (void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount, CUstream hStream),
              (dstHost, srcArray, srcOffset, ByteCount, hStream), 0, 0, ByteCount, hStream,
              typed(r, SPW_COPY_DTOH, 0, HOST(dstHost), ByteCount))
