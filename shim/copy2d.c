/* 2D/3D, peer and batch copies (cuMemcpy2D/3D and their unaligned, peer
 * and async forms, cuMemcpyPeer, cuMemcpyBatchAsync, cuMemcpy3DBatchAsync,
 * CUDA 13.2's cuMemcpyWithAttributesAsync and cuMemcpy3DWithAttributesAsync)
 * and 2D sets (cuMemsetD2D8/16/32 and async), each also as its per-thread
 * variant: gated like every submission (gate_use.h). A page spillway
 * moves must never be remapped while a submission that may reach it is
 * being issued; the spillway pointers each names are touched (and filled
 * back when they live on the host) first. A copy that succeeds adds its
 * bytes (width x height x depth; a batch, each copy's) to the stats' copy
 * bytes of its direction and device, as copy.c's do; sets are not counted
 * (README, known limits). */
#include "shim/array_size.h"
#include "shim/copy.h"
#include "shim/copy_range.h"
#include "shim/gate_use.h"
#include "shim/handler.h"

/* After the driver answered r for a copy between these sides: counted on
 * success. */
static CUresult counted(CUresult r, CUmemorytype dst_type, CUdeviceptr dst, CUmemorytype src_type,
                        CUdeviceptr src, size_t bytes)
{
    if (r == CUDA_SUCCESS && bytes && !spw_disabled())
        spw_copy_count_typed(dst_type, dst, src_type, src, bytes);
    return r;
}

/* A 2D/3D descriptor c of depth slices, after the driver answered r. */
#define COUNTED_COPY(c, depth)                                                                     \
    counted(r, (c) ? (c)->dstMemoryType : (CUmemorytype)0, (c) ? (c)->dstDevice : 0,               \
            (c) ? (c)->srcMemoryType : (CUmemorytype)0, (c) ? (c)->srcDevice : 0,                  \
            (c) ? (size_t)(c)->WidthInBytes * (c)->Height * (size_t)(depth) : 0)
#define COUNTED_PEER(dst, src, bytes) counted(r, CU_MEMORYTYPE_DEVICE, (dst), CU_MEMORYTYPE_DEVICE, (src), (bytes))

static CUresult counted_batch(CUresult r, const CUdeviceptr *dsts, const CUdeviceptr *srcs,
                              const size_t *sizes, size_t n)
{
    for (size_t i = 0; r == CUDA_SUCCESS && dsts && srcs && sizes && i < n && !spw_disabled(); i++)
        if (sizes[i])
            spw_copy_count_unified(dsts[i], srcs[i], sizes[i]);
    return r;
}

/* The bytes from a copy's first one to the end of its last row: depth
 * layers of height rows pitch bytes apart, the last layer's rows - 1 of
 * them, then width bytes. SIZE_MAX when that overflows (what no allocation
 * holds, so the range check refuses it in pool memory rather than
 * checking a wrapped, smaller size). */
static size_t reach3d(size_t depth, size_t height, size_t rows, size_t pitch, size_t width)
{
    size_t n;
    if (__builtin_mul_overflow(depth - 1, height, &n) || __builtin_add_overflow(n, rows - 1, &n) ||
        __builtin_mul_overflow(n, pitch, &n) || __builtin_add_overflow(n, width, &n))
        return SIZE_MAX;
    return n;
}

/* One operand of a 2D/3D copy that may be device memory (device or
 * unified types) as the side the copy reaches: from its first byte,
 * base + (z x height + y) x pitch + x (cuMemcpy3D's documentation), over
 * depth slices of height rows of pitch bytes, the last row width bytes. A
 * pitch or height of 0 is the copy's own. The base alone would name the
 * buffer it starts, not the rows the offsets reach: in a program mapping
 * with spans (policy/spans.c) another buffer's, filled back and heated in
 * place of the one the copy uses. */
static void copy_side(spw_sides *s, CUmemorytype type, CUdeviceptr base, size_t x, size_t y, size_t z,
                      size_t pitch, size_t height, size_t width, size_t rows, size_t depth)
{
    if (type != CU_MEMORYTYPE_DEVICE && type != CU_MEMORYTYPE_UNIFIED)
        return;
    if (!width || !rows || !depth)
        return; /* the driver copies nothing: nothing to touch or fill (still gated) */
    if (!pitch)
        pitch = width;
    if (!height)
        height = rows;
    spw_side_range(s, base + (z * height + y) * pitch + x, reach3d(depth, height, rows, pitch, width));
}

#define COPY2D_SIDES(c)                                                                                   \
    do {                                                                                                  \
        if (c) {                                                                                          \
            copy_side(s, (c)->srcMemoryType, (c)->srcDevice, (c)->srcXInBytes, (c)->srcY, 0, (c)->srcPitch, \
                      0, (c)->WidthInBytes, (c)->Height, 1);                                              \
            copy_side(s, (c)->dstMemoryType, (c)->dstDevice, (c)->dstXInBytes, (c)->dstY, 0, (c)->dstPitch, \
                      0, (c)->WidthInBytes, (c)->Height, 1);                                              \
        }                                                                                                 \
    } while (0)
/* The same for a CUDA_MEMCPY3D or CUDA_MEMCPY3D_PEER. */
#define COPY3D_SIDES(c)                                                                                   \
    do {                                                                                                  \
        if (c) {                                                                                          \
            copy_side(s, (c)->srcMemoryType, (c)->srcDevice, (c)->srcXInBytes, (c)->srcY, (c)->srcZ,       \
                      (c)->srcPitch, (c)->srcHeight, (c)->WidthInBytes, (c)->Height, (c)->Depth);         \
            copy_side(s, (c)->dstMemoryType, (c)->dstDevice, (c)->dstXInBytes, (c)->dstY, (c)->dstZ,       \
                      (c)->dstPitch, (c)->dstHeight, (c)->WidthInBytes, (c)->Height, (c)->Depth);         \
        }                                                                                                 \
    } while (0)

SPW_SIDES_HANDLERS_THEN(spw_h_memcpy_2d, (const CUDA_MEMCPY2D *pCopy), (pCopy), NULL, COPY2D_SIDES(pCopy),
                        COUNTED_COPY(pCopy, 1))
SPW_SIDES_HANDLERS_THEN(spw_h_memcpy_2d_unaligned, (const CUDA_MEMCPY2D *pCopy), (pCopy), NULL,
                        COPY2D_SIDES(pCopy), COUNTED_COPY(pCopy, 1))
SPW_SIDES_HANDLERS_THEN(spw_h_memcpy_3d, (const CUDA_MEMCPY3D *pCopy), (pCopy), NULL, COPY3D_SIDES(pCopy),
                        COUNTED_COPY(pCopy, pCopy->Depth))
SPW_SIDES_HANDLERS_THEN(spw_h_memcpy_3d_peer, (const CUDA_MEMCPY3D_PEER *pCopy), (pCopy), NULL,
                        COPY3D_SIDES(pCopy), COUNTED_COPY(pCopy, pCopy->Depth))
SPW_SIDES_HANDLERS_THEN(spw_h_memcpy_2d_async, (const CUDA_MEMCPY2D *pCopy, CUstream hStream),
                        (pCopy, hStream), hStream, COPY2D_SIDES(pCopy), COUNTED_COPY(pCopy, 1))
SPW_SIDES_HANDLERS_THEN(spw_h_memcpy_3d_async, (const CUDA_MEMCPY3D *pCopy, CUstream hStream),
                        (pCopy, hStream), hStream, COPY3D_SIDES(pCopy), COUNTED_COPY(pCopy, pCopy->Depth))
SPW_SIDES_HANDLERS_THEN(spw_h_memcpy_3d_peer_async, (const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream),
                        (pCopy, hStream), hStream, COPY3D_SIDES(pCopy), COUNTED_COPY(pCopy, pCopy->Depth))

SPW_SIDES_HANDLERS_THEN(spw_h_memcpy_peer,
                        (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                         CUcontext srcContext, size_t ByteCount),
                        (dstDevice, dstContext, srcDevice, srcContext, ByteCount), NULL,
                        (spw_side_range(s, dstDevice, ByteCount), spw_side_range(s, srcDevice, ByteCount)),
                        COUNTED_PEER(dstDevice, srcDevice, ByteCount))
SPW_SIDES_HANDLERS_THEN(spw_h_memcpy_peer_async,
                        (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                         CUcontext srcContext, size_t ByteCount, CUstream hStream),
                        (dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream), hStream,
                        (spw_side_range(s, dstDevice, ByteCount), spw_side_range(s, srcDevice, ByteCount)),
                        COUNTED_PEER(dstDevice, srcDevice, ByteCount))

static void batch_sides(spw_sides *s, const CUdeviceptr *dsts, const CUdeviceptr *srcs, const size_t *sizes,
                        size_t n)
{
    for (size_t i = 0; dsts && srcs && i < n; i++) {
        s->op = i;
        spw_side_range(s, dsts[i], sizes ? sizes[i] : 0);
        spw_side_range(s, srcs[i], sizes ? sizes[i] : 0);
    }
}

/* Bytes per element of a CUDA array (0: its format's element is not whole
 * bytes a channel, and such copies are not counted). */
static size_t array_element_bytes(CUarray a)
{
    CUDA_ARRAY3D_DESCRIPTOR d;
    if (!spw_drv.cuArray3DGetDescriptor_v2 || spw_drv.cuArray3DGetDescriptor_v2(&d, a) != CUDA_SUCCESS)
        return 0;
    return spw_array_element_bytes(d.Format, d.NumChannels);
}

/* One operand of a 3D batch copy as a typed side: a pointer is classified
 * as cuMemcpy's are (unified), an array is device memory. */
static CUmemorytype operand_type(const CUmemcpy3DOperand *o)
{
    return o->type == CU_MEMCPY_OPERAND_TYPE_ARRAY ? CU_MEMORYTYPE_ARRAY : CU_MEMORYTYPE_UNIFIED;
}

static CUdeviceptr operand_ptr(const CUmemcpy3DOperand *o)
{
    return o->type == CU_MEMCPY_OPERAND_TYPE_POINTER ? o->op.ptr.ptr : 0;
}

/* A 3D batch's extents are in elements: one byte between two pointers,
 * the array's element where an array takes part (both arrays' elements
 * match, or the driver refused the batch); 0 when that element is not
 * whole bytes. */
static size_t batch3d_elem(const CUDA_MEMCPY3D_BATCH_OP *o)
{
    return o->src.type == CU_MEMCPY_OPERAND_TYPE_ARRAY   ? array_element_bytes(o->src.op.array.array)
           : o->dst.type == CU_MEMCPY_OPERAND_TYPE_ARRAY ? array_element_bytes(o->dst.op.array.array)
                                                         : 1;
}

/* A 3D batch operand that is a pointer, with what the copy reaches from
 * it: its extent of elem-byte elements over rows of rowLength elements
 * and layers of layerHeight rows (0: the extent's own), as copy_side; the
 * pointer alone when that is unknown (elem 0) or nothing. */
static void batch3d_side(spw_sides *s, const CUmemcpy3DOperand *o, const CUextent3D *e, size_t elem)
{
    if (o->type != CU_MEMCPY_OPERAND_TYPE_POINTER)
        return;
    if (!elem || !e->width || !e->height || !e->depth) {
        spw_side(s, o->op.ptr.ptr);
        return;
    }
    size_t row = o->op.ptr.rowLength ? o->op.ptr.rowLength : e->width;
    size_t layer = o->op.ptr.layerHeight ? o->op.ptr.layerHeight : e->height;
    size_t elems = reach3d(e->depth, layer, e->height, row, e->width), bytes;
    spw_side_range(s, o->op.ptr.ptr, __builtin_mul_overflow(elems, elem, &bytes) ? SIZE_MAX : bytes);
}

static void batch3d_sides(spw_sides *s, const CUDA_MEMCPY3D_BATCH_OP *ops, size_t n)
{
    for (size_t i = 0; ops && i < n; i++) {
        const CUDA_MEMCPY3D_BATCH_OP *o = &ops[i];
        size_t elem = batch3d_elem(o);
        s->op = i;
        batch3d_side(s, &o->src, &o->extent, elem);
        batch3d_side(s, &o->dst, &o->extent, elem);
    }
}

/* Each operation's bytes counted (batch3d_elem's elements). */
static CUresult counted_batch3d(CUresult r, const CUDA_MEMCPY3D_BATCH_OP *ops, size_t n)
{
    for (size_t i = 0; r == CUDA_SUCCESS && ops && i < n && !spw_disabled(); i++) {
        const CUDA_MEMCPY3D_BATCH_OP *o = &ops[i];
        size_t bytes = batch3d_elem(o) * o->extent.width * o->extent.height * o->extent.depth;
        if (bytes)
            spw_copy_count_typed(operand_type(&o->dst), operand_ptr(&o->dst), operand_type(&o->src),
                                 operand_ptr(&o->src), bytes);
    }
    return r;
}

SPW_SIDES_HANDLERS_THEN(spw_h_memcpy_batch_async,
                        (CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                         CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, CUstream hStream),
                        (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, hStream), hStream,
                        batch_sides(s, dsts, srcs, sizes, count), counted_batch(r, dsts, srcs, sizes, count))
SPW_SIDES_HANDLERS_THEN(spw_h_memcpy_3d_batch_async,
                        (size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, unsigned long long flags,
                         CUstream hStream),
                        (numOps, opList, flags, hStream), hStream, batch3d_sides(s, opList, numOps),
                        counted_batch3d(r, opList, numOps))
/* CUDA 13.2's single copies with attributes: each is one copy of the
 * batch it would be, checked, gated and counted as that. */
SPW_SIDES_HANDLERS_THEN(spw_h_memcpy_with_attributes_async,
                        (CUdeviceptr dst, CUdeviceptr src, size_t size, CUmemcpyAttributes *attr,
                         CUstream hStream),
                        (dst, src, size, attr, hStream), hStream, batch_sides(s, &dst, &src, &size, 1),
                        counted_batch(r, &dst, &src, &size, 1))
SPW_SIDES_HANDLERS_THEN(spw_h_memcpy_3d_with_attributes_async,
                        (CUDA_MEMCPY3D_BATCH_OP *op, unsigned long long flags, CUstream hStream),
                        (op, flags, hStream), hStream, batch3d_sides(s, op, 1), counted_batch3d(r, op, 1))
/* CUDA 12.8's ABI of the two batches: failIdx, which the driver sets,
 * and spillway too when it refuses an operation's range. */
SPW_SIDES_HANDLERS_FAIL(spw_h_memcpy_batch_async_v1,
                        (CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                         CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, size_t *failIdx,
                         CUstream hStream),
                        (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream), hStream,
                        batch_sides(s, dsts, srcs, sizes, count), counted_batch(r, dsts, srcs, sizes, count),
                        failIdx)
SPW_SIDES_HANDLERS_FAIL(spw_h_memcpy_3d_batch_async_v1,
                        (size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, size_t *failIdx,
                         unsigned long long flags, CUstream hStream),
                        (numOps, opList, failIdx, flags, hStream), hStream, batch3d_sides(s, opList, numOps),
                        counted_batch3d(r, opList, numOps), failIdx)

/* A 2D set of height rows of width elements of elem bytes, pitch bytes
 * apart: its destination and the bytes to the end of its last row. No row
 * or no element is nothing set: nothing to touch or fill (still gated). */
static void set2d_side(spw_sides *s, CUdeviceptr dst, size_t pitch, size_t width, size_t height, size_t elem)
{
    size_t row;
    if (width && height)
        spw_side_range(s, dst,
                       __builtin_mul_overflow(width, elem, &row) ? SIZE_MAX : reach3d(1, 0, height, pitch, row));
}

CUresult spw_copy3d_range_check(const CUDA_MEMCPY3D *c)
{
    spw_sides s_, *s = &s_;
    spw_sides_init(s);
    COPY3D_SIDES(c);
    return s->refused;
}

CUresult spw_set2d_range_check(CUdeviceptr dst, size_t pitch, size_t width, size_t height, size_t elem)
{
    spw_sides s;
    spw_sides_init(&s);
    set2d_side(&s, dst, pitch, width, height, elem);
    return s.refused;
}

CUresult spw_memset_node_range_check(const CUDA_MEMSET_NODE_PARAMS *p)
{
    return p ? spw_set2d_range_check(p->dst, p->pitch, p->width, p->height, p->elementSize) : CUDA_SUCCESS;
}

SPW_SIDES_HANDLERS(spw_h_memset_d2d8,
                (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                 size_t Height),
                (dstDevice, dstPitch, uc, Width, Height), NULL,
                set2d_side(s, dstDevice, dstPitch, Width, Height, 1))
SPW_SIDES_HANDLERS(spw_h_memset_d2d16,
                (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                 size_t Height),
                (dstDevice, dstPitch, us, Width, Height), NULL,
                set2d_side(s, dstDevice, dstPitch, Width, Height, 2))
SPW_SIDES_HANDLERS(spw_h_memset_d2d32,
                (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                 size_t Height),
                (dstDevice, dstPitch, ui, Width, Height), NULL,
                set2d_side(s, dstDevice, dstPitch, Width, Height, 4))
SPW_SIDES_HANDLERS(spw_h_memset_d2d8_async,
                (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                 size_t Height, CUstream hStream),
                (dstDevice, dstPitch, uc, Width, Height, hStream), hStream,
                set2d_side(s, dstDevice, dstPitch, Width, Height, 1))
SPW_SIDES_HANDLERS(spw_h_memset_d2d16_async,
                (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                 size_t Height, CUstream hStream),
                (dstDevice, dstPitch, us, Width, Height, hStream), hStream,
                set2d_side(s, dstDevice, dstPitch, Width, Height, 2))
SPW_SIDES_HANDLERS(spw_h_memset_d2d32_async,
                (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                 size_t Height, CUstream hStream),
                (dstDevice, dstPitch, ui, Width, Height, hStream), hStream,
                set2d_side(s, dstDevice, dstPitch, Width, Height, 4))
