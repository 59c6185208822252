/* Conformance: 2D and 3D copies (pitched rows, offsets, boxes), 2D memsets,
 * peer copies within a device, batched copies, and CUDA arrays as
 * operands. What a copy must leave alone (the pitch gaps, the rows outside
 * the box) is checked as closely as what it writes. */
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "tests/unit/driver/common.h"

#define W 100 /* bytes per row copied */
#define H 7   /* rows */

static unsigned char *pattern(size_t n, unsigned seed)
{
    unsigned char *b = malloc(n);
    ck_assert_ptr_nonnull(b);
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(i * 7 + seed);
    return b;
}

static CUDA_MEMCPY2D copy2d(void)
{
    CUDA_MEMCPY2D c;
    memset(&c, 0, sizeof c);
    return c;
}

/* Host rows of pitch 128 up to pitched device memory and back, through a
 * device-to-device copy that moves the box by one row and 4 bytes. */
START_TEST(rows_up_across_and_back)
{
    size_t hp = 128, ap, bp;
    unsigned char *src = pattern(hp * H, 1), *dst = calloc(hp * (H + 1), 1);
    CUdeviceptr a, b;
    CU_OK(cuMemAllocPitch(&a, &ap, W, H, 4));
    CU_OK(cuMemAllocPitch(&b, &bp, W + 4, H + 1, 4));
    ck_assert_uint_ge(bp, W + 4);
    CU_OK(cuMemsetD8(b, 0xee, bp * (H + 1)));
    CUDA_MEMCPY2D c = copy2d();
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = src;
    c.srcPitch = hp;
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.dstDevice = a;
    c.dstPitch = ap;
    c.WidthInBytes = W;
    c.Height = H;
    CU_OK(cuMemcpy2D(&c));
    c = copy2d();
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = a;
    c.srcPitch = ap;
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.dstDevice = b;
    c.dstPitch = bp;
    c.dstXInBytes = 4;
    c.dstY = 1;
    c.WidthInBytes = W;
    c.Height = H;
    CU_OK(cuMemcpy2DUnaligned(&c));
    c = copy2d();
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = b;
    c.srcPitch = bp;
    c.dstMemoryType = CU_MEMORYTYPE_UNIFIED; /* a host pointer, by unified addressing */
    c.dstDevice = (CUdeviceptr)dst;
    c.dstPitch = hp;
    c.WidthInBytes = W + 4;
    c.Height = H + 1;
    CU_OK(cuMemcpy2D(&c));
    for (size_t y = 0; y <= H; y++)
        for (size_t x = 0; x < W + 4; x++) {
            unsigned char want = (y == 0 || x < 4) ? 0xee : src[(y - 1) * hp + x - 4];
            if (dst[y * hp + x] != want)
                ck_abort_msg("row %zu byte %zu: %#x, expected %#x", y, x, dst[y * hp + x], want);
        }
    ck_assert_uint_eq(dst[W + 4], 0); /* the host pitch gap is not written */
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(b));
    free(src);
    free(dst);
}
END_TEST

START_TEST(async_2d_in_stream_order)
{
    size_t dp;
    void *hs, *hd;
    CU_OK(cuMemAllocHost(&hs, W * H));
    CU_OK(cuMemAllocHost(&hd, W * H));
    unsigned char *pat = pattern(W * H, 9);
    memcpy(hs, pat, W * H);
    CUdeviceptr a;
    CU_OK(cuMemAllocPitch(&a, &dp, W, H, 4));
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUDA_MEMCPY2D c = copy2d();
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = hs;
    c.srcPitch = W;
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.dstDevice = a;
    c.dstPitch = dp;
    c.WidthInBytes = W;
    c.Height = H;
    CU_OK(cuMemcpy2DAsync(&c, s));
    CU_OK(cuMemsetD2D8Async(a, dp, 0x11, 3, H, s)); /* the first 3 bytes of each row */
    c = copy2d();
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = a;
    c.srcPitch = dp;
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = hd;
    c.dstPitch = W;
    c.WidthInBytes = W;
    c.Height = H;
    CU_OK(cuMemcpy2DAsync(&c, s));
    CU_OK(cuStreamSynchronize(s));
    for (size_t y = 0; y < H; y++)
        for (size_t x = 0; x < W; x++)
            ck_assert_uint_eq(((unsigned char *)hd)[y * W + x], x < 3 ? 0x11 : pat[y * W + x]);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFreeHost(hs));
    CU_OK(cuMemFreeHost(hd));
    free(pat);
}
END_TEST

/* A 2x3x4 box out of a 16x8x6 volume, to the start of another. */
START_TEST(a_3d_box)
{
    size_t X = 16, Y = 8, Z = 6, n = X * Y * Z;
    unsigned char *vol = pattern(n, 3), *back = malloc(n);
    CUdeviceptr a, b;
    CU_OK(cuMemAlloc(&a, n));
    CU_OK(cuMemAlloc(&b, n));
    CU_OK(cuMemcpyHtoD(a, vol, n));
    CU_OK(cuMemsetD8(b, 0, n));
    CUDA_MEMCPY3D c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = a;
    c.dstDevice = b;
    c.srcPitch = c.dstPitch = X;
    c.srcHeight = c.dstHeight = Y;
    c.srcXInBytes = 5;
    c.srcY = 2;
    c.srcZ = 1;
    c.WidthInBytes = 2;
    c.Height = 3;
    c.Depth = 4;
    CU_OK(cuMemcpy3D(&c));
    CU_OK(cuMemcpyDtoH(back, b, n));
    for (size_t z = 0; z < Z; z++)
        for (size_t y = 0; y < Y; y++)
            for (size_t x = 0; x < X; x++) {
                bool in = x < 2 && y < 3 && z < 4;
                unsigned char want = in ? vol[((z + 1) * Y + y + 2) * X + x + 5] : 0;
                if (back[(z * Y + y) * X + x] != want)
                    ck_abort_msg("(%zu,%zu,%zu): %#x, expected %#x", x, y, z,
                                 back[(z * Y + y) * X + x], want);
            }
    /* the same through the async entry point and a stream */
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuMemsetD8(b, 0, n));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuMemcpy3DAsync(&c, s));
    CU_OK(cuStreamSynchronize(s));
    unsigned char corner;
    CU_OK(cuMemcpyDtoH(&corner, b, 1));
    ck_assert_uint_eq(corner, vol[(1 * Y + 2) * X + 5]);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(b));
    free(vol);
    free(back);
}
END_TEST

START_TEST(memsets_2d_of_each_width)
{
    size_t pitch = 256, rows = 4;
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, pitch * rows));
    CU_OK(cuMemsetD8(p, 0, pitch * rows));
    CU_OK(cuMemsetD2D8(p, pitch, 0xab, 10, rows));
    CU_OK(cuMemsetD2D16(p + 16, pitch, 0x1234, 5, rows));
    CU_OK(cuMemsetD2D32(p + 32, pitch, 0xdeadbeef, 3, rows));
    unsigned char b[256 * 4];
    CU_OK(cuMemcpyDtoH(b, p, sizeof b));
    for (size_t r = 0; r < rows; r++) {
        unsigned char *row = b + r * pitch;
        ck_assert_uint_eq(row[9], 0xab);
        ck_assert_uint_eq(row[10], 0);
        ck_assert_uint_eq(row[16], 0x34);
        ck_assert_uint_eq(row[25], 0x12);
        ck_assert_uint_eq(row[26], 0);
        ck_assert_uint_eq(row[32], 0xef);
        ck_assert_uint_eq(row[43], 0xde);
        ck_assert_uint_eq(row[44], 0);
    }
    CUstream s;
    CU_OK(cuStreamCreate(&s, 0));
    CU_OK(cuMemsetD2D16Async(p, pitch, 0x5555, 2, 1, s));
    CU_OK(cuMemsetD2D32Async(p + pitch, pitch, 7, 1, 1, s));
    CU_OK(cuStreamSynchronize(s));
    unsigned w;
    CU_OK(cuMemcpyDtoH(&w, p, 4));
    ck_assert_uint_eq(w, 0x55555555);
    CU_OK(cuMemcpyDtoH(&w, p + pitch, 4));
    ck_assert_uint_eq(w, 7);
    CU_ERR(cuMemsetD2D32(p + 2, pitch, 1, 1, 1), CUDA_ERROR_INVALID_VALUE); /* misaligned */
    CU_ERR(cuMemsetD2D8(p, 4, 1, 8, 2), CUDA_ERROR_INVALID_VALUE);          /* pitch < width */
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(p));
}
END_TEST

START_TEST(bad_2d_and_3d_copies)
{
    CUdeviceptr a;
    CU_OK(cuMemAlloc(&a, 4096));
    unsigned char host[4096];
    CUDA_MEMCPY2D c = copy2d();
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = a;
    c.srcPitch = 16; /* narrower than the rows */
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = host;
    c.dstPitch = 64;
    c.WidthInBytes = 32;
    c.Height = 4;
    CU_ERR(cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuMemcpy2D(NULL), CUDA_ERROR_INVALID_VALUE);
    CUDA_MEMCPY3D d;
    memset(&d, 0, sizeof d);
    d.srcMemoryType = d.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    d.srcDevice = d.dstDevice = a;
    d.srcPitch = d.dstPitch = 64;
    d.WidthInBytes = 8;
    d.Height = 4;
    d.Depth = 2;
    d.srcHeight = 2; /* below Height */
    d.dstHeight = 4;
    CU_ERR(cuMemcpy3D(&d), CUDA_ERROR_INVALID_VALUE);
    d.srcHeight = 4;
    d.srcLOD = 1; /* must be 0 */
    CU_ERR(cuMemcpy3D(&d), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFree(a));
}
END_TEST

/* Peer copies between two allocations of one device's context. */
START_TEST(peer_copies_within_a_device)
{
    size_t n = 64 * 1024;
    unsigned char *pat = pattern(n, 5), *back = malloc(n);
    CUdeviceptr a, b;
    CU_OK(cuMemAlloc(&a, n));
    CU_OK(cuMemAlloc(&b, n));
    CU_OK(cuMemcpyHtoD(a, pat, n));
    CU_OK(cuMemcpyPeer(b, test_ctx, a, test_ctx, n));
    CU_OK(cuMemcpyDtoH(back, b, n));
    ck_assert_mem_eq(back, pat, n);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuMemsetD8(b, 0, n));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuMemcpyPeerAsync(b + 16, test_ctx, a, test_ctx, 32, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemcpyDtoH(back, b, 64));
    ck_assert_uint_eq(back[15], 0);
    ck_assert_mem_eq(back + 16, pat, 32);
    CUDA_MEMCPY3D_PEER p;
    memset(&p, 0, sizeof p);
    p.srcMemoryType = p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    p.srcDevice = a;
    p.dstDevice = b;
    p.srcContext = p.dstContext = test_ctx;
    p.WidthInBytes = 128;
    p.Height = p.Depth = 1;
    CU_OK(cuMemcpy3DPeer(&p));
    CU_OK(cuMemcpy3DPeerAsync(&p, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemcpyDtoH(back, b, 128));
    ck_assert_mem_eq(back, pat, 128);
    CUresult r = cuMemcpyPeer(b, NULL, a, test_ctx, 16); /* no context */
    ck_assert(r == CUDA_ERROR_INVALID_CONTEXT || r == CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(b));
    free(pat);
    free(back);
}
END_TEST

/* What the batch tests share: a pattern in pinned memory, two device
 * buffers, a non-blocking stream, attributes in stream order, and one 3D
 * operation copying 16 rows of 32 bytes, packed, from a to b + 2048. */
struct batch_rig {
    size_t n;
    unsigned char *pat;
    void *pinned;
    CUdeviceptr a, b;
    CUstream s;
    CUmemcpyAttributes attr;
    CUDA_MEMCPY3D_BATCH_OP op;
};

static void batch_rig_up(struct batch_rig *r, unsigned seed)
{
    memset(r, 0, sizeof *r);
    r->n = 4096;
    r->pat = pattern(r->n, seed);
    CU_OK(cuMemAllocHost(&r->pinned, r->n));
    memcpy(r->pinned, r->pat, r->n);
    CU_OK(cuMemAlloc(&r->a, r->n));
    CU_OK(cuMemAlloc(&r->b, r->n));
    CU_OK(cuStreamCreate(&r->s, CU_STREAM_NON_BLOCKING));
    r->attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    r->op.src.type = r->op.dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
    r->op.src.op.ptr.ptr = r->a;
    r->op.dst.op.ptr.ptr = r->b + 2048;
    r->op.extent.width = 32;
    r->op.extent.height = 16;
    r->op.extent.depth = 1;
    r->op.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
}

/* The 3D operation's rows arrived; then everything goes. */
static void batch_rig_down(struct batch_rig *r)
{
    unsigned char back[512];
    CU_OK(cuStreamSynchronize(r->s));
    CU_OK(cuMemcpyDtoH(back, r->b + 2048, 512));
    ck_assert_mem_eq(back, r->pat, 512);
    CU_OK(cuStreamDestroy(r->s));
    CU_OK(cuMemFree(r->a));
    CU_OK(cuMemFree(r->b));
    CU_OK(cuMemFreeHost(r->pinned));
    free(r->pat);
}

START_TEST(batched_copies)
{
    struct batch_rig r;
    batch_rig_up(&r, 11);
    CUdeviceptr dsts[2] = {r.a, r.b}, srcs[2] = {(CUdeviceptr)r.pinned, (CUdeviceptr)r.pinned + 1024};
    size_t sizes[2] = {1024, 2048}, idx[1] = {0};
    CU_OK(cuMemcpyBatchAsync(dsts, srcs, sizes, 2, &r.attr, idx, 1, r.s));
    CU_OK(cuStreamSynchronize(r.s));
    unsigned char back[2048];
    CU_OK(cuMemcpyDtoH(back, r.a, 1024));
    ck_assert_mem_eq(back, r.pat, 1024);
    CU_OK(cuMemcpyDtoH(back, r.b, 2048));
    ck_assert_mem_eq(back, r.pat + 1024, 2048);
    CU_ERR(cuMemcpyBatchAsync(dsts, srcs, sizes, 2, &r.attr, idx, 1, CU_STREAM_LEGACY),
           CUDA_ERROR_INVALID_VALUE); /* "must not be legacy NULL stream" */
    CUmemcpyAttributes invalid = r.attr;
    invalid.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_INVALID;
    CU_ERR(cuMemcpyBatchAsync(dsts, srcs, sizes, 2, &invalid, idx, 1, r.s), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemcpy3DBatchAsync(1, &r.op, 0, r.s));
    batch_rig_down(&r);
}
END_TEST

/* CUDA 13.2's single copies with attributes: each copies as the batch of
 * one it stands for, and the 3D one's flags "must be zero now". Looked up
 * at 13020 as a 13.2 runtime does; a driver without them (CUDA 13.0's
 * 580) skips. */
typedef CUresult (*copy_attr_fn)(CUdeviceptr, CUdeviceptr, size_t, CUmemcpyAttributes *, CUstream);
typedef CUresult (*copy3d_attr_fn)(CUDA_MEMCPY3D_BATCH_OP *, unsigned long long, CUstream);

static void *entry_13_2(const char *name)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult q;
    if (cuGetProcAddress(name, &fn, 13020, CU_GET_PROC_ADDRESS_DEFAULT, &q) != CUDA_SUCCESS || !fn)
        printf("single_copies_with_attributes: skipped (no %s)\n", name);
    return fn;
}

START_TEST(single_copies_with_attributes)
{
    copy_attr_fn copy = (copy_attr_fn)entry_13_2("cuMemcpyWithAttributesAsync");
    copy3d_attr_fn copy3d = (copy3d_attr_fn)entry_13_2("cuMemcpy3DWithAttributesAsync");
    if (!copy || !copy3d)
        return;
    struct batch_rig r;
    batch_rig_up(&r, 13);
    CU_OK(copy(r.a, (CUdeviceptr)r.pinned, r.n, &r.attr, r.s));
    CU_OK(copy(r.b, r.a + 1024, 2048, &r.attr, r.s));
    CU_OK(copy3d(&r.op, 0, r.s));
    CU_OK(cuStreamSynchronize(r.s));
    unsigned char back[4096];
    CU_OK(cuMemcpyDtoH(back, r.a, r.n));
    ck_assert_mem_eq(back, r.pat, r.n);
    CU_OK(cuMemcpyDtoH(back, r.b, 2048));
    ck_assert_mem_eq(back, r.pat + 1024, 2048);
    CU_ERR(copy3d(&r.op, 1, r.s), CUDA_ERROR_INVALID_VALUE);
    batch_rig_down(&r);
}
END_TEST

/* CUDA arrays as operands: a 2D array's rows written and read by 2D
 * copies, and 3D batches whose extents count the array's elements (4-byte
 * floats here) on the array side and on the pointer side alike. */
START_TEST(array_operands)
{
    enum { AW = 32, AH = 6, E = 4, ROW = AW * E, PL = 16 /* pointer rows, in elements */ };
    CUDA_ARRAY_DESCRIPTOR d = {.Width = AW, .Height = AH, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    CUarray a;
    CU_OK(cuArrayCreate(&a, &d));
    CUDA_ARRAY3D_DESCRIPTOR d3;
    CU_OK(cuArray3DGetDescriptor(&d3, a));
    ck_assert(d3.Width == AW && d3.Height == AH && d3.Depth == 0 && d3.NumChannels == 1 &&
              d3.Format == CU_AD_FORMAT_FLOAT);
    unsigned char *src = pattern(ROW * AH, 5), *back = calloc(ROW * AH, 1), *want = malloc(ROW * AH);
    CUDA_MEMCPY2D c = copy2d();
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = src;
    c.srcPitch = ROW;
    c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    c.dstArray = a;
    c.WidthInBytes = ROW;
    c.Height = AH;
    CU_OK(cuMemcpy2D(&c));
    c = copy2d(); /* the box of 10 elements x 3 rows at element 2 of row 1 */
    c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    c.srcArray = a;
    c.srcXInBytes = 2 * E;
    c.srcY = 1;
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = back;
    c.dstPitch = 10 * E;
    c.WidthInBytes = 10 * E;
    c.Height = 3;
    CU_OK(cuMemcpy2D(&c));
    for (size_t y = 0; y < 3; y++)
        ck_assert_mem_eq(back + y * 10 * E, src + (1 + y) * ROW + 2 * E, 10 * E);
    c.srcY = AH - 2; /* three rows from there pass the array's end */
    CU_ERR(cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE);

    CUdeviceptr p, q;
    CU_OK(cuMemAlloc(&p, PL * E * 3));
    CU_OK(cuMemAlloc(&q, ROW * AH));
    CU_OK(cuMemcpyHtoD(p, src, PL * E * 3));
    /* A copy from pageable memory may return before its DMA is done, and a
     * non-blocking stream does not wait for the legacy one. */
    CU_OK(cuCtxSynchronize());
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUDA_MEMCPY3D_BATCH_OP op[2];
    memset(op, 0, sizeof op);
    /* 12 x 3 elements from rows of PL elements into the array at (4, 2) ... */
    op[0].src.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
    op[0].src.op.ptr.ptr = p;
    op[0].src.op.ptr.rowLength = PL;
    op[0].dst.type = CU_MEMCPY_OPERAND_TYPE_ARRAY;
    op[0].dst.op.array.array = a;
    op[0].dst.op.array.offset = (CUoffset3D){4, 2, 0};
    op[0].extent = (CUextent3D){12, 3, 1};
    op[0].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    CU_OK(cuMemcpy3DBatchAsync(1, &op[0], 0, s));
    /* ... and the whole array out to packed rows (a second batch: copies
     * within one batch are in no order). */
    op[1].src.type = CU_MEMCPY_OPERAND_TYPE_ARRAY;
    op[1].src.op.array.array = a;
    op[1].dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
    op[1].dst.op.ptr.ptr = q;
    op[1].extent = (CUextent3D){AW, AH, 1};
    op[1].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    CU_OK(cuMemcpy3DBatchAsync(1, &op[1], 0, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemcpyDtoH(back, q, ROW * AH));
    memcpy(want, src, ROW * AH);
    for (size_t y = 0; y < 3; y++)
        memcpy(want + (2 + y) * ROW + 4 * E, src + y * PL * E, 12 * E);
    ck_assert_mem_eq(back, want, ROW * AH);
    op[0].extent.width = AW - 4 + 1; /* one element past the row's end */
    CU_ERR(cuMemcpy3DBatchAsync(1, &op[0], 0, s), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuArrayDestroy(a));
    CU_OK(cuMemFree(p));
    CU_OK(cuMemFree(q));
    free(src);
    free(back);
    free(want);
}
END_TEST

/* Captured 2D copies and sets become memcpy and memset nodes. */
START_TEST(captured_2d_work)
{
    size_t dp;
    CUdeviceptr a;
    CU_OK(cuMemAllocPitch(&a, &dp, W, H, 4));
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemsetD2D8Async(a, dp, 0x42, W, H, s));
    CUDA_MEMCPY2D c = copy2d();
    c.srcMemoryType = c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = a;
    c.dstDevice = a;
    c.srcPitch = c.dstPitch = dp;
    c.dstXInBytes = W / 2;
    c.WidthInBytes = W / 2;
    c.Height = H;
    CU_OK(cuMemcpy2DAsync(&c, s));
    CUgraph g;
    CU_OK(cuStreamEndCapture(s, &g));
    CUgraphNode nodes[2];
    size_t n = 2;
    CU_OK(cuGraphGetNodes(g, nodes, &n));
    ck_assert_uint_eq(n, 2);
    CUgraphNodeType t0, t1;
    CU_OK(cuGraphNodeGetType(nodes[0], &t0));
    CU_OK(cuGraphNodeGetType(nodes[1], &t1));
    /* A memset and a copy, in either order. */
    ck_assert((t0 == CU_GRAPH_NODE_TYPE_MEMSET && t1 == CU_GRAPH_NODE_TYPE_MEMCPY) ||
              (t1 == CU_GRAPH_NODE_TYPE_MEMSET && t0 == CU_GRAPH_NODE_TYPE_MEMCPY));
    CUDA_MEMSET_NODE_PARAMS mp;
    CU_OK(cuGraphMemsetNodeGetParams(t0 == CU_GRAPH_NODE_TYPE_MEMSET ? nodes[0] : nodes[1], &mp));
    ck_assert(mp.dst == a && mp.pitch == dp && mp.width == W && mp.height == H && mp.elementSize == 1);
    CUgraphExec x;
    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    unsigned char row[W];
    CU_OK(cuMemcpyDtoH(row, a + (H - 1) * dp, W));
    ck_assert_uint_eq(row[0], 0x42);
    ck_assert_uint_eq(row[W - 1], 0x42);
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(a));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("driver_copy2d");
    TCase *tc = tcase_create("copy2d");
    tcase_add_checked_fixture(tc, driver_setup, driver_teardown);
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, rows_up_across_and_back);
    tcase_add_test(tc, async_2d_in_stream_order);
    tcase_add_test(tc, a_3d_box);
    tcase_add_test(tc, memsets_2d_of_each_width);
    tcase_add_test(tc, bad_2d_and_3d_copies);
    tcase_add_test(tc, peer_copies_within_a_device);
    tcase_add_test(tc, batched_copies);
    tcase_add_test(tc, single_copies_with_attributes);
    tcase_add_test(tc, array_operands);
    tcase_add_test(tc, captured_2d_work);
    suite_add_tcase(s, tc);
    return s;
}
