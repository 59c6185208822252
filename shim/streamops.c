/* Stream memory operations (cuStreamWriteValue32/64, cuStreamWaitValue32/64,
 * cuStreamBatchMemOp), prefetches and discards of managed memory
 * (cuMemPrefetchAsync in CUDA 8's and 12.2's ABIs, CUDA 13.0's
 * cuMemPrefetchBatchAsync, cuMemDiscardBatchAsync and
 * cuMemDiscardAndPrefetchBatchAsync) and attachments to a stream
 * (cuStreamAttachMemAsync), host functions (cuLaunchHostFunc, CUDA 13.2's
 * cuLaunchHostFunc_v2, CUDA 5.0's cuStreamAddCallback) and decompression
 * batches (cuMemBatchDecompressAsync), each also as its per-thread
 * variant: ordered work, gated like every submission (gate_use.h), so
 * that a move never remaps a page between its submission and the sync
 * that covers it. A memory operation's value has its range checked as a
 * copy's (spw_memop_sides, which batch memory operation graph nodes
 * share: graph_nodes.c). */
#include "shim/gate_use.h"
#include "shim/handler.h"

/* The five, for each ABI (hooks.def): CUDA 11.7's _v2 (no handler suffix)
 * and CUDA 8/9's (_v1), which take the same arguments and name the same
 * memory, each forwarding to its own driver symbol. */
#define MEMOP_HANDLERS(sfx)                                                                  \
    SPW_SIDES_HANDLERS(spw_h_stream_write_value32##sfx,                                      \
                       (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags), \
                       (stream, addr, value, flags), stream, spw_side_range(s, addr, 4))              \
    SPW_SIDES_HANDLERS(spw_h_stream_write_value64##sfx,                                      \
                       (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags), \
                       (stream, addr, value, flags), stream, spw_side_range(s, addr, 8))              \
    SPW_SIDES_HANDLERS(spw_h_stream_wait_value32##sfx,                                       \
                       (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags), \
                       (stream, addr, value, flags), stream, spw_side_range(s, addr, 4))              \
    SPW_SIDES_HANDLERS(spw_h_stream_wait_value64##sfx,                                       \
                       (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags), \
                       (stream, addr, value, flags), stream, spw_side_range(s, addr, 8))              \
    SPW_SIDES_HANDLERS(spw_h_stream_batch_mem_op##sfx,                                       \
                       (CUstream stream, unsigned int count, CUstreamBatchMemOpParams *paramArray, \
                        unsigned int flags),                                                 \
                       (stream, count, paramArray, flags), stream, spw_memop_sides(s, paramArray, count))

MEMOP_HANDLERS()
MEMOP_HANDLERS(_v1)

/* Managed memory only (never the pool's: the driver refuses other memory,
 * or takes system-allocated memory, which the pool's VMM ranges are not),
 * and host functions: ordered work all the same, gated so that a move
 * never runs between their submission and the sync that covers them.
 * Prefetches in CUDA 8's ABI (a CUdevice) and 12.2's (a location), CUDA
 * 13.0's batches of prefetches, discards, and both, and attachments; host
 * functions and callbacks. */
SPW_SIDES_HANDLERS(spw_h_mem_prefetch_async_v1,
                (CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream),
                (devPtr, count, dstDevice, hStream), hStream, (void)s)
SPW_SIDES_HANDLERS(spw_h_mem_prefetch_async,
                (CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags,
                 CUstream hStream),
                (devPtr, count, location, flags, hStream), hStream, (void)s)
SPW_SIDES_HANDLERS(spw_h_mem_prefetch_batch_async,
                (CUdeviceptr *dptrs, size_t *sizes, size_t count, CUmemLocation *prefetchLocs,
                 size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags, CUstream hStream),
                (dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags, hStream),
                hStream, (void)s)
SPW_SIDES_HANDLERS(spw_h_mem_discard_batch_async,
                (CUdeviceptr *dptrs, size_t *sizes, size_t count, unsigned long long flags, CUstream hStream),
                (dptrs, sizes, count, flags, hStream), hStream, (void)s)
SPW_SIDES_HANDLERS(spw_h_mem_discard_and_prefetch_batch_async,
                (CUdeviceptr *dptrs, size_t *sizes, size_t count, CUmemLocation *prefetchLocs,
                 size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags, CUstream hStream),
                (dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags, hStream),
                hStream, (void)s)
SPW_SIDES_HANDLERS(spw_h_stream_attach_mem_async,
                (CUstream hStream, CUdeviceptr dptr, size_t length, unsigned int flags),
                (hStream, dptr, length, flags), hStream, (void)s)
SPW_SIDES_HANDLERS(spw_h_launch_host_func, (CUstream hStream, CUhostFn fn, void *userData),
                (hStream, fn, userData), hStream, (void)s)
SPW_SIDES_HANDLERS(spw_h_stream_add_callback,
                (CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags),
                (hStream, callback, userData, flags), hStream, (void)s)
SPW_SIDES_HANDLERS(spw_h_launch_host_func_v2,
                (CUstream hStream, CUhostFn fn, void *userData, unsigned int syncMode),
                (hStream, fn, userData, syncMode), hStream, (void)s)

/* Decompression reads src and writes dst and dstActBytes, all of which may
 * be cuMemAlloc memory (the pool's), asynchronously like a copy. */
static void decompress_sides(spw_sides *s, const CUmemDecompressParams *p, size_t n)
{
    for (size_t i = 0; p && i < n; i++) {
        spw_side(s, (CUdeviceptr)(uintptr_t)p[i].src);
        spw_side(s, (CUdeviceptr)(uintptr_t)p[i].dst);
        spw_side(s, (CUdeviceptr)(uintptr_t)p[i].dstActBytes);
    }
}

SPW_SIDES_HANDLERS(spw_h_mem_batch_decompress_async,
                (CUmemDecompressParams *paramsArray, size_t count, unsigned int flags, size_t *errorIndex,
                 CUstream stream),
                (paramsArray, count, flags, errorIndex, stream), stream, decompress_sides(s, paramsArray, count))
