/* The rest of the work a program can submit, gated like launches, copies
 * and sets (gate.h): 2D/3D, peer and batch copies, 2D sets, stream memory
 * operations (write and wait values, batches), prefetches and host
 * functions, each also as its per-thread variant. A page spillway moves
 * must never be remapped while a submission that may reach it is being
 * issued; the spillway pointers each names are touched (and filled back
 * when they live on the host) first. Without a spilling pool each forwards
 * untouched after one atomic load. */
#include "shim/gate.h"
#include "shim/handler.h"

#define MAX_SIDES 64 /* pointers of one submission touched; the rest only gated */

/* A submission's pointers: touched and filled back, and the devices they
 * live on for the bracket. */
typedef struct sides {
    CUdeviceptr p[MAX_SIDES];
    unsigned n;
} sides;

static void side(sides *s, CUdeviceptr p)
{
    if (p && s->n < MAX_SIDES)
        s->p[s->n++] = p;
}

/* A copy operand that may be device memory: device or unified types. */
static CUdeviceptr device_side(CUmemorytype type, CUdeviceptr p)
{
    return type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED ? p : 0;
}

static uint64_t use_sides(sw_policy *g, const sides *s)
{
    int filled = 0;
    uint64_t devs = spw_gate_devices(0, 0);
    for (unsigned i = 0; i < s->n; i++) {
        filled |= spw_gate_use(g, s->p[i]);
        devs |= spw_gate_devices(s->p[i], 0);
    }
    if (filled)
        spw_gate_filled();
    return devs;
}

/* One handler and its per-thread variant; collect adds the sides. */
#define SUBMIT_HANDLER(handler, params, args, collect) \
    CUresult handler params                            \
    {                                                  \
        SPW_REAL_OR_RETURN(real, handler);             \
        sw_policy *g = spw_gate();                     \
        if (!g)                                        \
            return real args;                          \
        sides s_ = {.n = 0};                           \
        sides *s = &s_;                                \
        collect;                                       \
        CUresult r;                                    \
        SPW_GATED_CALL(g, use_sides(g, s), r, real args); \
        return r;                                      \
    }

#define SUBMIT_HANDLERS(handler, params, args, collect) \
    SUBMIT_HANDLER(handler, params, args, collect)      \
    SUBMIT_HANDLER(handler##_pt, params, args, collect)

#define COPY2D_SIDES(c)                                                         \
    do {                                                                        \
        if (c) {                                                                \
            side(s, device_side((c)->srcMemoryType, (c)->srcDevice));           \
            side(s, device_side((c)->dstMemoryType, (c)->dstDevice));           \
        }                                                                       \
    } while (0)

SUBMIT_HANDLERS(spw_h_memcpy_2d, (const CUDA_MEMCPY2D *pCopy), (pCopy), COPY2D_SIDES(pCopy))
SUBMIT_HANDLERS(spw_h_memcpy_2d_unaligned, (const CUDA_MEMCPY2D *pCopy), (pCopy),
                COPY2D_SIDES(pCopy))
SUBMIT_HANDLERS(spw_h_memcpy_3d, (const CUDA_MEMCPY3D *pCopy), (pCopy), COPY2D_SIDES(pCopy))
SUBMIT_HANDLERS(spw_h_memcpy_3d_peer, (const CUDA_MEMCPY3D_PEER *pCopy), (pCopy),
                COPY2D_SIDES(pCopy))
SUBMIT_HANDLERS(spw_h_memcpy_2d_async, (const CUDA_MEMCPY2D *pCopy, CUstream hStream),
                (pCopy, hStream), COPY2D_SIDES(pCopy))
SUBMIT_HANDLERS(spw_h_memcpy_3d_async, (const CUDA_MEMCPY3D *pCopy, CUstream hStream),
                (pCopy, hStream), COPY2D_SIDES(pCopy))
SUBMIT_HANDLERS(spw_h_memcpy_3d_peer_async, (const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream),
                (pCopy, hStream), COPY2D_SIDES(pCopy))

SUBMIT_HANDLERS(spw_h_memcpy_peer,
                (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                 CUcontext srcContext, size_t ByteCount),
                (dstDevice, dstContext, srcDevice, srcContext, ByteCount),
                (side(s, dstDevice), side(s, srcDevice)))
SUBMIT_HANDLERS(spw_h_memcpy_peer_async,
                (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                 CUcontext srcContext, size_t ByteCount, CUstream hStream),
                (dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream),
                (side(s, dstDevice), side(s, srcDevice)))

static void batch_sides(sides *s, const CUdeviceptr *dsts, const CUdeviceptr *srcs, size_t n)
{
    for (size_t i = 0; dsts && srcs && i < n; i++) {
        side(s, dsts[i]);
        side(s, srcs[i]);
    }
}

static void batch3d_sides(sides *s, const CUDA_MEMCPY3D_BATCH_OP *ops, size_t n)
{
    for (size_t i = 0; ops && i < n; i++) {
        if (ops[i].src.type == CU_MEMCPY_OPERAND_TYPE_POINTER)
            side(s, ops[i].src.op.ptr.ptr);
        if (ops[i].dst.type == CU_MEMCPY_OPERAND_TYPE_POINTER)
            side(s, ops[i].dst.op.ptr.ptr);
    }
}

SUBMIT_HANDLERS(spw_h_memcpy_batch_async,
                (CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                 CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, CUstream hStream),
                (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, hStream),
                batch_sides(s, dsts, srcs, count))
SUBMIT_HANDLERS(spw_h_memcpy_3d_batch_async,
                (size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, unsigned long long flags,
                 CUstream hStream),
                (numOps, opList, flags, hStream), batch3d_sides(s, opList, numOps))

SUBMIT_HANDLERS(spw_h_memset_d2d8,
                (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                 size_t Height),
                (dstDevice, dstPitch, uc, Width, Height), side(s, dstDevice))
SUBMIT_HANDLERS(spw_h_memset_d2d16,
                (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                 size_t Height),
                (dstDevice, dstPitch, us, Width, Height), side(s, dstDevice))
SUBMIT_HANDLERS(spw_h_memset_d2d32,
                (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                 size_t Height),
                (dstDevice, dstPitch, ui, Width, Height), side(s, dstDevice))
SUBMIT_HANDLERS(spw_h_memset_d2d8_async,
                (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                 size_t Height, CUstream hStream),
                (dstDevice, dstPitch, uc, Width, Height, hStream), side(s, dstDevice))
SUBMIT_HANDLERS(spw_h_memset_d2d16_async,
                (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                 size_t Height, CUstream hStream),
                (dstDevice, dstPitch, us, Width, Height, hStream), side(s, dstDevice))
SUBMIT_HANDLERS(spw_h_memset_d2d32_async,
                (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                 size_t Height, CUstream hStream),
                (dstDevice, dstPitch, ui, Width, Height, hStream), side(s, dstDevice))

SUBMIT_HANDLERS(spw_h_stream_write_value32,
                (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags),
                (stream, addr, value, flags), side(s, addr))
SUBMIT_HANDLERS(spw_h_stream_write_value64,
                (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags),
                (stream, addr, value, flags), side(s, addr))
SUBMIT_HANDLERS(spw_h_stream_wait_value32,
                (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags),
                (stream, addr, value, flags), side(s, addr))
SUBMIT_HANDLERS(spw_h_stream_wait_value64,
                (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags),
                (stream, addr, value, flags), side(s, addr))

static void memop_sides(sides *s, const CUstreamBatchMemOpParams *ops, unsigned n)
{
    for (unsigned i = 0; ops && i < n; i++) {
        switch (ops[i].operation) {
        case CU_STREAM_MEM_OP_WAIT_VALUE_32:
        case CU_STREAM_MEM_OP_WAIT_VALUE_64:
            side(s, ops[i].waitValue.address);
            break;
        case CU_STREAM_MEM_OP_WRITE_VALUE_32:
        case CU_STREAM_MEM_OP_WRITE_VALUE_64:
            side(s, ops[i].writeValue.address);
            break;
        default:
            break;
        }
    }
}

SUBMIT_HANDLERS(spw_h_stream_batch_mem_op,
                (CUstream stream, unsigned int count, CUstreamBatchMemOpParams *paramArray,
                 unsigned int flags),
                (stream, count, paramArray, flags), memop_sides(s, paramArray, count))

/* Managed memory only (never the pool's), and host functions: ordered work
 * all the same, gated so that a move never runs between their submission
 * and the sync that covers them. */
SUBMIT_HANDLERS(spw_h_mem_prefetch_async,
                (CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags,
                 CUstream hStream),
                (devPtr, count, location, flags, hStream), (void)s)
SUBMIT_HANDLERS(spw_h_launch_host_func, (CUstream hStream, CUhostFn fn, void *userData),
                (hStream, fn, userData), (void)s)
