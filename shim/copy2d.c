/* 2D/3D, peer and batch copies (cuMemcpy2D/3D and their unaligned, peer
 * and async forms, cuMemcpyPeer, cuMemcpyBatchAsync, cuMemcpy3DBatchAsync)
 * and 2D sets (cuMemsetD2D8/16/32 and async), each also as its per-thread
 * variant: gated like every submission (gate_use.h). A page spillway
 * moves must never be remapped while a submission that may reach it is
 * being issued; the spillway pointers each names are touched (and filled
 * back when they live on the host) first. Not counted in the stats' copy
 * bytes (README, known limits). */
#include "shim/gate_use.h"
#include "shim/handler.h"

/* A copy operand that may be device memory: device or unified types. */
static CUdeviceptr device_side(CUmemorytype type, CUdeviceptr p)
{
    return type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED ? p : 0;
}

#define COPY2D_SIDES(c)                                                         \
    do {                                                                        \
        if (c) {                                                                \
            spw_side(s, device_side((c)->srcMemoryType, (c)->srcDevice));       \
            spw_side(s, device_side((c)->dstMemoryType, (c)->dstDevice));       \
        }                                                                       \
    } while (0)

SPW_SIDES_HANDLERS(spw_h_memcpy_2d, (const CUDA_MEMCPY2D *pCopy), (pCopy), COPY2D_SIDES(pCopy))
SPW_SIDES_HANDLERS(spw_h_memcpy_2d_unaligned, (const CUDA_MEMCPY2D *pCopy), (pCopy),
                COPY2D_SIDES(pCopy))
SPW_SIDES_HANDLERS(spw_h_memcpy_3d, (const CUDA_MEMCPY3D *pCopy), (pCopy), COPY2D_SIDES(pCopy))
SPW_SIDES_HANDLERS(spw_h_memcpy_3d_peer, (const CUDA_MEMCPY3D_PEER *pCopy), (pCopy),
                COPY2D_SIDES(pCopy))
SPW_SIDES_HANDLERS(spw_h_memcpy_2d_async, (const CUDA_MEMCPY2D *pCopy, CUstream hStream),
                (pCopy, hStream), COPY2D_SIDES(pCopy))
SPW_SIDES_HANDLERS(spw_h_memcpy_3d_async, (const CUDA_MEMCPY3D *pCopy, CUstream hStream),
                (pCopy, hStream), COPY2D_SIDES(pCopy))
SPW_SIDES_HANDLERS(spw_h_memcpy_3d_peer_async, (const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream),
                (pCopy, hStream), COPY2D_SIDES(pCopy))

SPW_SIDES_HANDLERS(spw_h_memcpy_peer,
                (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                 CUcontext srcContext, size_t ByteCount),
                (dstDevice, dstContext, srcDevice, srcContext, ByteCount),
                (spw_side(s, dstDevice), spw_side(s, srcDevice)))
SPW_SIDES_HANDLERS(spw_h_memcpy_peer_async,
                (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                 CUcontext srcContext, size_t ByteCount, CUstream hStream),
                (dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream),
                (spw_side(s, dstDevice), spw_side(s, srcDevice)))

static void batch_sides(spw_sides *s, const CUdeviceptr *dsts, const CUdeviceptr *srcs, size_t n)
{
    for (size_t i = 0; dsts && srcs && i < n; i++) {
        spw_side(s, dsts[i]);
        spw_side(s, srcs[i]);
    }
}

static void batch3d_sides(spw_sides *s, const CUDA_MEMCPY3D_BATCH_OP *ops, size_t n)
{
    for (size_t i = 0; ops && i < n; i++) {
        if (ops[i].src.type == CU_MEMCPY_OPERAND_TYPE_POINTER)
            spw_side(s, ops[i].src.op.ptr.ptr);
        if (ops[i].dst.type == CU_MEMCPY_OPERAND_TYPE_POINTER)
            spw_side(s, ops[i].dst.op.ptr.ptr);
    }
}

SPW_SIDES_HANDLERS(spw_h_memcpy_batch_async,
                (CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                 CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, CUstream hStream),
                (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, hStream),
                batch_sides(s, dsts, srcs, count))
SPW_SIDES_HANDLERS(spw_h_memcpy_3d_batch_async,
                (size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, unsigned long long flags,
                 CUstream hStream),
                (numOps, opList, flags, hStream), batch3d_sides(s, opList, numOps))

SPW_SIDES_HANDLERS(spw_h_memset_d2d8,
                (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                 size_t Height),
                (dstDevice, dstPitch, uc, Width, Height), spw_side(s, dstDevice))
SPW_SIDES_HANDLERS(spw_h_memset_d2d16,
                (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                 size_t Height),
                (dstDevice, dstPitch, us, Width, Height), spw_side(s, dstDevice))
SPW_SIDES_HANDLERS(spw_h_memset_d2d32,
                (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                 size_t Height),
                (dstDevice, dstPitch, ui, Width, Height), spw_side(s, dstDevice))
SPW_SIDES_HANDLERS(spw_h_memset_d2d8_async,
                (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                 size_t Height, CUstream hStream),
                (dstDevice, dstPitch, uc, Width, Height, hStream), spw_side(s, dstDevice))
SPW_SIDES_HANDLERS(spw_h_memset_d2d16_async,
                (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                 size_t Height, CUstream hStream),
                (dstDevice, dstPitch, us, Width, Height, hStream), spw_side(s, dstDevice))
SPW_SIDES_HANDLERS(spw_h_memset_d2d32_async,
                (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                 size_t Height, CUstream hStream),
                (dstDevice, dstPitch, ui, Width, Height, hStream), spw_side(s, dstDevice))
