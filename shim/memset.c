/* cuMemsetD8/D16/D32_v2 and their Async forms, each also as its per-thread
 * variant (_ptds for the synchronous ones, _ptsz for the stream ones),
 * which forwards to the driver's same variant. They are hooked only for
 * spill: a set writes device memory, so its destination is touched (and
 * filled back when it lives on the host) and the set is submitted inside
 * the work gate (gate_use.h). Without a spilling pool each forwards untouched
 * after one atomic load. */
#include "shim/gate_use.h"
#include "shim/handler.h"

/* stream: the set's (NULL for the synchronous ones), whose device runs it. */
#define SET_HANDLERS(handler, params, args, dst, bytes, stream)                     \
    SPW_CHECKED_HANDLERS(handler, params, args, SPW_RANGES_CHECK((dst), 0, (bytes)), \
                         spw_gate_use2(g, (dst), 0, (bytes));                     \
                         devices = spw_gate_devices_on((stream), (dst), 0), r)

SET_HANDLERS(spw_h_memset_d8, (CUdeviceptr dstDevice, unsigned char uc, size_t N),
             (dstDevice, uc, N), dstDevice, N, NULL)
SET_HANDLERS(spw_h_memset_d16, (CUdeviceptr dstDevice, unsigned short us, size_t N),
             (dstDevice, us, N), dstDevice, 2 * N, NULL)
SET_HANDLERS(spw_h_memset_d32, (CUdeviceptr dstDevice, unsigned int ui, size_t N),
             (dstDevice, ui, N), dstDevice, 4 * N, NULL)
SET_HANDLERS(spw_h_memset_d8_async,
             (CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream),
             (dstDevice, uc, N, hStream), dstDevice, N, hStream)
SET_HANDLERS(spw_h_memset_d16_async,
             (CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream),
             (dstDevice, us, N, hStream), dstDevice, 2 * N, hStream)
SET_HANDLERS(spw_h_memset_d32_async,
             (CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream),
             (dstDevice, ui, N, hStream), dstDevice, 4 * N, hStream)
