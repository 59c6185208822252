/* The copy suite (test_copies.c): 2D, 3D, peer and batch copies, copies
 * to and from arrays, and 3D batches count their bytes by their memory
 * types, on the device of their device memory. */
#include "tests/integration/shim/copies_rig.h"

#include <string.h>

static CUDA_MEMCPY2D copy2d(CUmemorytype dt, CUdeviceptr d, CUmemorytype st, CUdeviceptr s, size_t width,
                           size_t height)
{
    CUDA_MEMCPY2D c = {.srcMemoryType = st, .dstMemoryType = dt, .WidthInBytes = width, .Height = height,
                       .srcPitch = 4 * KiB, .dstPitch = 4 * KiB};
    if (st == CU_MEMORYTYPE_HOST)
        c.srcHost = (const void *)(uintptr_t)s;
    else
        c.srcDevice = s;
    if (dt == CU_MEMORYTYPE_HOST)
        c.dstHost = (void *)(uintptr_t)d;
    else
        c.dstDevice = d;
    return c;
}

static CUDA_MEMCPY3D copy3d(const CUDA_MEMCPY2D *c, size_t depth)
{
    return (CUDA_MEMCPY3D){.srcMemoryType = c->srcMemoryType, .srcHost = c->srcHost, .srcDevice = c->srcDevice,
                           .srcPitch = c->srcPitch, .srcHeight = c->Height, .dstMemoryType = c->dstMemoryType,
                           .dstHost = c->dstHost, .dstDevice = c->dstDevice, .dstPitch = c->dstPitch,
                           .dstHeight = c->Height, .WidthInBytes = c->WidthInBytes, .Height = c->Height,
                           .Depth = depth};
}

/* 2D and 3D copies count width x height x depth bytes, in the direction
 * their memory types say (unified: as cuMemcpy's sides), on the device of
 * their device memory; peer copies as device to device on the
 * destination's device; a batch each of its copies. */
START_TEST(strided_peer_and_batch_copies)
{
    setup();
    static unsigned char host[64 * KiB], back[64 * KiB];
    fill(host, sizeof host, 41);
    use(1);
    CUcontext ctx1;
    ck_assert_int_eq(cuCtxGetCurrent(&ctx1), CUDA_SUCCESS);
    CUdeviceptr d1 = dalloc(64 * KiB);
    use(0);
    CUcontext ctx0;
    ck_assert_int_eq(cuCtxGetCurrent(&ctx0), CUDA_SUCCESS);
    CUdeviceptr d0 = dalloc(64 * KiB), e0 = dalloc(64 * KiB);
    const CUmemorytype H_ = CU_MEMORYTYPE_HOST, D_ = CU_MEMORYTYPE_DEVICE, U_ = CU_MEMORYTYPE_UNIFIED;
    CUDA_MEMCPY2D c = copy2d(D_, d0, H_, H(host), 100, 7);
    COPY(0, 0, 700, cuMemcpy2D(&c));
    c = copy2d(H_, H(back), D_, d0, 100, 7);
    COPY(0, 1, 700, cuMemcpy2DUnaligned(&c));
    ck_assert_int_eq(memcmp(back, host, 100), 0);
    c = copy2d(D_, e0, D_, d0, 64, 5);
    COPY(0, 2, 320, cuMemcpy2DAsync(&c, NULL));
    c = copy2d(U_, d1, U_, H(host), 30, 11); /* unified: the pool says device 1 */
    COPY(1, 0, 330, cuMemcpy2D(&c));
    c = copy2d(U_, H(back), U_, H(host), 30, 11); /* host to host: nothing */
    COPY(0, -1, 330, cuMemcpy2D(&c));
    c = copy2d(D_, d1, H_, H(host), 50, 4);
    CUDA_MEMCPY3D c3 = copy3d(&c, 3);
    COPY(1, 0, 600, cuMemcpy3D(&c3));
    c = copy2d(H_, H(back), D_, d1, 50, 4);
    c3 = copy3d(&c, 2);
    COPY(1, 1, 400, cuMemcpy3DAsync(&c3, NULL));
    CUDA_MEMCPY3D_PEER p3 = {.srcMemoryType = D_, .srcDevice = d0, .srcContext = ctx0, .srcPitch = 4 * KiB,
                             .srcHeight = 2, .dstMemoryType = D_, .dstDevice = d1, .dstContext = ctx1,
                             .dstPitch = 4 * KiB, .dstHeight = 2, .WidthInBytes = 70, .Height = 2, .Depth = 2};
    COPY(1, 2, 280, cuMemcpy3DPeer(&p3));
    COPY(1, 2, 280, cuMemcpy3DPeerAsync(&p3, NULL));
    COPY(1, 2, 555, cuMemcpyPeer(d1, ctx1, d0, ctx0, 555));
    COPY(0, 2, 666, cuMemcpyPeerAsync(d0, ctx0, d1, ctx1, 666, NULL));
    CUdeviceptr dsts[] = {d0, H(back), e0}, srcs[] = {H(host), d0, d0};
    size_t sizes[] = {1000, 2000, 3000}, idx = 0;
    CUmemcpyAttributes at = {.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM};
    CUstream st;
    ck_assert_int_eq(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemcpyBatchAsync(dsts, srcs, sizes, 3, &at, &idx, 1, st), CUDA_SUCCESS);
    expected[0].htod += 1000;
    expected[0].dtoh += 2000;
    expected[0].dtod += 3000;
    check_counts("cuMemcpyBatchAsync");
    /* CUDA 12.8's ABI, as a 12.8 runtime finds it: counted the same. */
    void *fn = NULL;
    CUdriverProcAddressQueryResult q;
    ck_assert_int_eq(cuGetProcAddress("cuMemcpyBatchAsync", &fn, 12080, 0, &q), CUDA_SUCCESS);
    size_t fail = 0;
    ck_assert_int_eq(((CUresult (*)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t, CUmemcpyAttributes *,
                                    size_t *, size_t, size_t *, CUstream))fn)(dsts, srcs, sizes, 3, &at, &idx, 1,
                                                                              &fail, st),
                     CUDA_SUCCESS);
    expected[0].htod += 1000;
    expected[0].dtoh += 2000;
    expected[0].dtod += 3000;
    check_counts("cuMemcpyBatchAsync, CUDA 12.8's ABI");
    /* CUDA 13.2's single copy with attributes, as a 13.2 runtime finds it:
     * the batch of one it stands for. */
    ck_assert_int_eq(cuGetProcAddress("cuMemcpyWithAttributesAsync", &fn, 13020, 0, &q), CUDA_SUCCESS);
    ck_assert_int_eq(((CUresult (*)(CUdeviceptr, CUdeviceptr, size_t, CUmemcpyAttributes *, CUstream))fn)(
                         e0, d0, 3000, &at, st),
                     CUDA_SUCCESS);
    expected[0].dtod += 3000;
    check_counts("cuMemcpyWithAttributesAsync");
    ck_assert_int_eq(cuStreamSynchronize(st), CUDA_SUCCESS);
    ck_assert_int_eq(cuStreamDestroy(st), CUDA_SUCCESS);
    /* What the driver refuses counts nothing. */
    c = copy2d(D_, d0, H_, H(host), 8 * KiB, 2); /* wider than the pitch */
    ck_assert_int_ne(cuMemcpy2D(&c), CUDA_SUCCESS);
    ck_assert_int_ne(cuMemcpy2D(NULL), CUDA_SUCCESS);
    check_counts("refused 2D copies");
    synchronize();
    ck_assert_int_eq(drv.mem_free(d0), CUDA_SUCCESS);
    ck_assert_int_eq(drv.mem_free(e0), CUDA_SUCCESS);
    ck_assert_int_eq(drv.mem_free(d1), CUDA_SUCCESS);
}
END_TEST

/* Copies to and from a CUDA array count as the device memory it is:
 * charged to the device of the pointer on the other side, else the current
 * context's; the data goes through. */
START_TEST(array_copies_counted)
{
    setup();
    enum { BYTES = 16 * KiB };
    static unsigned char src[BYTES], dst[BYTES];
    fill(src, BYTES, 53);
    CUDA_ARRAY_DESCRIPTOR d = {.Width = BYTES / 4, .Format = CU_AD_FORMAT_UNSIGNED_INT32, .NumChannels = 1};
    CUarray a, b;
    ck_assert_int_eq(cuArrayCreate(&a, &d), CUDA_SUCCESS);
    ck_assert_int_eq(cuArrayCreate(&b, &d), CUDA_SUCCESS);
    use(1);
    CUdeviceptr d1 = dalloc(BYTES);
    use(0);
    CUdeviceptr d0 = dalloc(BYTES);
    COPY(0, 0, 1001, cuMemcpyHtoA(a, 0, src, 1001));
    COPY(0, 2, 1002, cuMemcpyAtoD(d0, a, 0, 1002));
    COPY(1, 2, 1003, cuMemcpyAtoD(d1, a, 0, 1003)); /* device 1's memory, device 0 current */
    COPY(1, 2, 1004, cuMemcpyDtoA(b, 8, d1, 1004));
    COPY(0, 2, 1005, cuMemcpyAtoA(a, 2000, b, 8, 1005));
    COPY(0, 1, 1006, cuMemcpyAtoH(dst, a, 2000, 1006));
    ck_assert_int_eq(memcmp(dst, src, 1001), 0);
    CUstream st;
    ck_assert_int_eq(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    COPY(0, 0, 1007, cuMemcpyHtoAAsync(b, 0, src, 1007, st));
    COPY(0, 1, 1008, cuMemcpyAtoHAsync(dst, b, 0, 1008, st));
    ck_assert_int_eq(cuStreamSynchronize(st), CUDA_SUCCESS);
    ck_assert_int_eq(memcmp(dst, src, 1007), 0);
    ck_assert_int_eq(cuStreamDestroy(st), CUDA_SUCCESS);
    /* Past the array's end: refused, nothing counted. */
    ck_assert_int_ne(cuMemcpyDtoA(b, BYTES - 4, d0, 8), CUDA_SUCCESS);
    ck_assert_int_ne(cuMemcpyAtoH(dst, a, BYTES, 1), CUDA_SUCCESS);
    check_counts("refused array copies");
    synchronize();
    ck_assert_int_eq(cuArrayDestroy(a), CUDA_SUCCESS);
    ck_assert_int_eq(cuArrayDestroy(b), CUDA_SUCCESS);
    ck_assert_int_eq(drv.mem_free(d0), CUDA_SUCCESS);
    ck_assert_int_eq(drv.mem_free(d1), CUDA_SUCCESS);
}
END_TEST

/* A 3D batch counts each copy's extent in elements: bytes between two
 * pointers, the array's elements where an array takes part; pointers are
 * classified as cuMemcpy's sides, an array is device memory (of the
 * pointer's device, else the current context's). */
START_TEST(batch3d_copies_counted)
{
    setup();
    static unsigned char host[16 * KiB], back[16 * KiB];
    fill(host, sizeof host, 61);
    use(1);
    CUdeviceptr d1 = dalloc(16 * KiB);
    use(0);
    CUdeviceptr d0 = dalloc(16 * KiB);
    CUDA_ARRAY_DESCRIPTOR fd = {.Width = 64, .Height = 4, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    CUDA_ARRAY_DESCRIPTOR hd = {.Width = 32, .Height = 2, .Format = CU_AD_FORMAT_HALF, .NumChannels = 2};
    CUarray fa, ha;
    ck_assert_int_eq(cuArrayCreate(&fa, &fd), CUDA_SUCCESS);
    ck_assert_int_eq(cuArrayCreate(&ha, &hd), CUDA_SUCCESS);
    CUstream st;
    ck_assert_int_eq(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CUDA_MEMCPY3D_BATCH_OP op[3];
    memset(op, 0, sizeof op);
    for (int i = 0; i < 3; i++)
        op[i].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    /* host to device 1's pool memory: 40 x 3 x 2 bytes */
    op[0].src.type = op[0].dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
    op[0].src.op.ptr.ptr = H(host);
    op[0].dst.op.ptr.ptr = d1;
    op[0].extent = (CUextent3D){40, 3, 2};
    /* device 0's memory into the float array: 10 x 2 elements of 4 bytes */
    op[1].src.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
    op[1].src.op.ptr.ptr = d0;
    op[1].dst.type = CU_MEMCPY_OPERAND_TYPE_ARRAY;
    op[1].dst.op.array.array = fa;
    op[1].dst.op.array.offset = (CUoffset3D){3, 1, 0};
    op[1].extent = (CUextent3D){10, 2, 1};
    COPY(1, 0, 240, cuMemcpy3DBatchAsync(1, &op[0], 0, st));
    COPY(0, 2, 80, cuMemcpy3DBatchAsync(1, &op[1], 0, st));
    void *v1 = NULL; /* CUDA 12.8's ABI, per-thread, as such a runtime finds it */
    CUdriverProcAddressQueryResult q;
    ck_assert_int_eq(cuGetProcAddress("cuMemcpy3DBatchAsync", &v1, 12080,
                                      CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &q),
                     CUDA_SUCCESS);
    size_t fail = 0;
    COPY(0, 2, 80, ((CUresult (*)(size_t, CUDA_MEMCPY3D_BATCH_OP *, size_t *, unsigned long long,
                                  CUstream))v1)(1, &op[1], &fail, 0, st));
    void *one = NULL; /* CUDA 13.2's single 3D copy, per-thread, the same */
    ck_assert_int_eq(cuGetProcAddress("cuMemcpy3DWithAttributesAsync", &one, 13020,
                                      CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &q),
                     CUDA_SUCCESS);
    COPY(0, 2, 80, ((CUresult (*)(CUDA_MEMCPY3D_BATCH_OP *, unsigned long long, CUstream))one)(&op[1], 0, st));
    /* two half2 elements of 4 bytes x 2 rows out to the host, in one
     * batch with a copy to device 1 */
    op[2].src.type = CU_MEMCPY_OPERAND_TYPE_ARRAY;
    op[2].src.op.array.array = ha;
    op[2].dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
    op[2].dst.op.ptr.ptr = H(back);
    op[2].extent = (CUextent3D){2, 2, 1};
    CUDA_MEMCPY3D_BATCH_OP two[2] = {op[2], op[0]};
    ck_assert_int_eq(cuMemcpy3DBatchAsync(2, two, 0, st), CUDA_SUCCESS);
    expected[0].dtoh += 16;
    expected[1].htod += 240;
    check_counts("a 3D batch of two");
    ck_assert_int_eq(cuStreamSynchronize(st), CUDA_SUCCESS);
    op[0].src.op.ptr.ptr = d1; /* and back: the data went through */
    op[0].dst.op.ptr.ptr = H(back);
    COPY(1, 1, 240, cuMemcpy3DBatchAsync(1, &op[0], 0, st));
    ck_assert_int_eq(cuStreamSynchronize(st), CUDA_SUCCESS);
    ck_assert_int_eq(memcmp(back, host, 240), 0);
    /* Past the array's end: refused, nothing counted. */
    op[1].extent.width = 62;
    ck_assert_int_ne(cuMemcpy3DBatchAsync(1, &op[1], 0, st), CUDA_SUCCESS);
    check_counts("a refused 3D batch");
    ck_assert_int_eq(cuStreamDestroy(st), CUDA_SUCCESS);
    synchronize();
    ck_assert_int_eq(cuArrayDestroy(fa), CUDA_SUCCESS);
    ck_assert_int_eq(cuArrayDestroy(ha), CUDA_SUCCESS);
    ck_assert_int_eq(drv.mem_free(d0), CUDA_SUCCESS);
    ck_assert_int_eq(drv.mem_free(d1), CUDA_SUCCESS);
}
END_TEST

void copies_strided_tests(TCase *tc)
{
    tcase_add_test(tc, strided_peer_and_batch_copies);
    tcase_add_test(tc, array_copies_counted);
    tcase_add_test(tc, batch3d_copies_counted);
}
