/* Bad arguments (badargs.c) to copies and sets: linear, array, 2D, 3D, peer
 * and batched. */
#include "tests/integration/shim/badargs.h"

/* cuMemcpy and cuMemcpyAsync take an address the driver does not know as
 * host memory (unified addressing): a bad one is written or read by the
 * driver itself, a crash on a GPU as on fakecuda, so they get none; nor
 * does any host buffer of a copy (NULL included: not documented as
 * checked). */
void copies(void)
{
    TRY_PT(cuMemcpy, "size_0_bad", cuMemcpy, bad, bad, 0);
    TRY_PT(cuMemcpy, "past_end", cuMemcpy, inner, dptr, MiB);
    TRY_PT(cuMemcpy, "size_max", cuMemcpy, dptr, dptr, SIZE_MAX);
    TRY_PT(cuMemcpyAsync, "size_0_bad", cuMemcpyAsync, bad, bad, 0, stream);
    TRY_PT(cuMemcpyAsync, "past_end", cuMemcpyAsync, inner, dptr, MiB, stream);
    TRY_PT(cuMemcpyAsync, "bad_stream", cuMemcpyAsync, dptr, dptr, 16, bad_stream);
    TRY_PT(cuMemcpyHtoD, "bad_pointer", cuMemcpyHtoD_v2, bad, host, 16);
    TRY_PT(cuMemcpyHtoD, "freed", cuMemcpyHtoD_v2, just_freed(), host, 16);
    TRY_PT(cuMemcpyHtoD, "past_end", cuMemcpyHtoD_v2, inner, host, MiB);
    TRY_PT(cuMemcpyHtoD, "size_max", cuMemcpyHtoD_v2, dptr, host, SIZE_MAX);
    TRY_PT(cuMemcpyDtoH, "bad_pointer", cuMemcpyDtoH_v2, host, bad, 16);
    TRY_PT(cuMemcpyDtoH, "freed", cuMemcpyDtoH_v2, host, just_freed(), 16);
    TRY_PT(cuMemcpyDtoH, "past_end", cuMemcpyDtoH_v2, host, inner, MiB);
    TRY_PT(cuMemcpyDtoD, "bad_pointer", cuMemcpyDtoD_v2, bad, dptr, 16);
    TRY_PT(cuMemcpyDtoD, "freed", cuMemcpyDtoD_v2, dptr, just_freed(), 16);
    TRY_PT(cuMemcpyDtoD, "past_end", cuMemcpyDtoD_v2, dptr, inner, MiB);
    TRY_PT(cuMemcpyHtoDAsync, "bad_pointer", cuMemcpyHtoDAsync_v2, bad, host, 16, stream);
    TRY_PT(cuMemcpyHtoDAsync, "past_end", cuMemcpyHtoDAsync_v2, inner, host, MiB, stream);
    TRY_PT(cuMemcpyHtoDAsync, "bad_stream", cuMemcpyHtoDAsync_v2, dptr, host, 16, bad_stream);
    TRY_PT(cuMemcpyDtoHAsync, "bad_pointer", cuMemcpyDtoHAsync_v2, host, bad, 16, stream);
    TRY_PT(cuMemcpyDtoHAsync, "past_end", cuMemcpyDtoHAsync_v2, host, inner, MiB, stream);
    TRY_PT(cuMemcpyDtoHAsync, "bad_stream", cuMemcpyDtoHAsync_v2, host, dptr, 16, bad_stream);
    TRY_PT(cuMemcpyDtoDAsync, "bad_pointer", cuMemcpyDtoDAsync_v2, dptr, bad, 16, stream);
    TRY_PT(cuMemcpyDtoDAsync, "past_end", cuMemcpyDtoDAsync_v2, inner, dptr, MiB, stream);
    TRY_PT(cuMemcpyDtoDAsync, "bad_stream", cuMemcpyDtoDAsync_v2, dptr, dptr, 16, bad_stream);

    const size_t arr = 64 * 64;
    TRY_PT(cuMemcpyDtoA, "null_array", cuMemcpyDtoA_v2, NULL, 0, dptr, 16);
    TRY_PT(cuMemcpyDtoA, "bad_array", cuMemcpyDtoA_v2, BAD_HANDLE, 0, dptr, 16);
    TRY_PT(cuMemcpyDtoA, "bad_pointer", cuMemcpyDtoA_v2, array, 0, bad, 16);
    TRY_PT(cuMemcpyDtoA, "past_array", cuMemcpyDtoA_v2, array, arr - 8, dptr, 16);
    TRY_PT(cuMemcpyDtoA, "past_end", cuMemcpyDtoA_v2, array, 0, dptr + MiB - 8, 16);
    TRY_PT(cuMemcpyAtoD, "null_array", cuMemcpyAtoD_v2, dptr, NULL, 0, 16);
    TRY_PT(cuMemcpyAtoD, "bad_pointer", cuMemcpyAtoD_v2, bad, array, 0, 16);
    TRY_PT(cuMemcpyAtoD, "freed", cuMemcpyAtoD_v2, just_freed(), array, 0, 16);
    TRY_PT(cuMemcpyAtoD, "past_array", cuMemcpyAtoD_v2, dptr, array, arr - 8, 16);
    TRY_PT(cuMemcpyHtoA, "null_array", cuMemcpyHtoA_v2, NULL, 0, host, 16);
    TRY_PT(cuMemcpyHtoA, "past_array", cuMemcpyHtoA_v2, array, arr - 8, host, 16);
    TRY_PT(cuMemcpyAtoH, "null_array", cuMemcpyAtoH_v2, host, NULL, 0, 16);
    TRY_PT(cuMemcpyAtoH, "past_array", cuMemcpyAtoH_v2, host, array, arr - 8, 16);
    TRY_PT(cuMemcpyAtoA, "null_array", cuMemcpyAtoA_v2, NULL, 0, array, 0, 16);
    TRY_PT(cuMemcpyAtoA, "bad_array", cuMemcpyAtoA_v2, array, 0, BAD_HANDLE, 0, 16);
    TRY_PT(cuMemcpyAtoA, "past_array", cuMemcpyAtoA_v2, array, 0, array, arr - 8, 16);
    TRY_PT(cuMemcpyHtoAAsync, "null_array", cuMemcpyHtoAAsync_v2, NULL, 0, host, 16, stream);
    TRY_PT(cuMemcpyHtoAAsync, "past_array", cuMemcpyHtoAAsync_v2, array, arr - 8, host, 16, stream);
    TRY_PT(cuMemcpyHtoAAsync, "bad_stream", cuMemcpyHtoAAsync_v2, array, 0, host, 16, bad_stream);
    TRY_PT(cuMemcpyAtoHAsync, "null_array", cuMemcpyAtoHAsync_v2, host, NULL, 0, 16, stream);
    TRY_PT(cuMemcpyAtoHAsync, "past_array", cuMemcpyAtoHAsync_v2, host, array, arr - 8, 16, stream);
    TRY_PT(cuMemcpyAtoHAsync, "bad_stream", cuMemcpyAtoHAsync_v2, host, array, 0, 16, bad_stream);
}

void sets(void)
{
    TRY_PT(cuMemsetD8, "bad_pointer", cuMemsetD8_v2, bad, 0, 16);
    TRY_PT(cuMemsetD8, "freed", cuMemsetD8_v2, just_freed(), 0, 16);
    TRY_PT(cuMemsetD8, "size_0_bad", cuMemsetD8_v2, bad, 0, 0);
    TRY_PT(cuMemsetD8, "past_end", cuMemsetD8_v2, inner, 0, MiB);
    TRY_PT(cuMemsetD8, "size_max", cuMemsetD8_v2, dptr, 0, SIZE_MAX);
    TRY_PT(cuMemsetD16, "bad_pointer", cuMemsetD16_v2, bad, 0, 16);
    TRY_PT(cuMemsetD16, "misaligned", cuMemsetD16_v2, dptr + 1, 0, 16);
    TRY_PT(cuMemsetD16, "past_end", cuMemsetD16_v2, inner, 0, MiB / 2);
    TRY_PT(cuMemsetD32, "bad_pointer", cuMemsetD32_v2, bad, 0, 16);
    TRY_PT(cuMemsetD32, "misaligned", cuMemsetD32_v2, dptr + 2, 0, 16);
    TRY_PT(cuMemsetD32, "past_end", cuMemsetD32_v2, inner, 0, MiB / 4);
    TRY_PT(cuMemsetD8Async, "bad_pointer", cuMemsetD8Async, bad, 0, 16, stream);
    TRY_PT(cuMemsetD8Async, "past_end", cuMemsetD8Async, inner, 0, MiB, stream);
    TRY_PT(cuMemsetD8Async, "bad_stream", cuMemsetD8Async, dptr, 0, 16, bad_stream);
    TRY_PT(cuMemsetD16Async, "misaligned", cuMemsetD16Async, dptr + 1, 0, 16, stream);
    TRY_PT(cuMemsetD16Async, "bad_stream", cuMemsetD16Async, dptr, 0, 16, bad_stream);
    TRY_PT(cuMemsetD32Async, "misaligned", cuMemsetD32Async, dptr + 2, 0, 16, stream);
    TRY_PT(cuMemsetD32Async, "bad_stream", cuMemsetD32Async, dptr, 0, 16, bad_stream);

    TRY_PT(cuMemsetD2D8, "bad_pointer", cuMemsetD2D8_v2, bad, 64, 0, 64, 4);
    TRY_PT(cuMemsetD2D8, "pitch_below_width", cuMemsetD2D8_v2, dptr, 16, 0, 64, 4);
    TRY_PT(cuMemsetD2D8, "past_end", cuMemsetD2D8_v2, inner, 4096, 0, 64, 257);
    TRY_PT(cuMemsetD2D16, "misaligned", cuMemsetD2D16_v2, dptr + 1, 64, 0, 16, 4);
    TRY_PT(cuMemsetD2D16, "bad_pointer", cuMemsetD2D16_v2, bad, 64, 0, 16, 4);
    TRY_PT(cuMemsetD2D32, "misaligned", cuMemsetD2D32_v2, dptr + 2, 64, 0, 16, 4);
    TRY_PT(cuMemsetD2D32, "bad_pointer", cuMemsetD2D32_v2, bad, 64, 0, 16, 4);
    TRY_PT(cuMemsetD2D8Async, "bad_pointer", cuMemsetD2D8Async, bad, 64, 0, 64, 4, stream);
    TRY_PT(cuMemsetD2D8Async, "bad_stream", cuMemsetD2D8Async, dptr, 64, 0, 64, 4, bad_stream);
    TRY_PT(cuMemsetD2D16Async, "misaligned", cuMemsetD2D16Async, dptr + 1, 64, 0, 16, 4, stream);
    TRY_PT(cuMemsetD2D16Async, "bad_stream", cuMemsetD2D16Async, dptr, 64, 0, 16, 4, bad_stream);
    TRY_PT(cuMemsetD2D32Async, "misaligned", cuMemsetD2D32Async, dptr + 2, 64, 0, 16, 4, stream);
    TRY_PT(cuMemsetD2D32Async, "bad_stream", cuMemsetD2D32Async, dptr, 64, 0, 16, 4, bad_stream);
}

void copies_2d(void)
{
    CUDA_MEMCPY2D zero2 = {0};
    CUDA_MEMCPY2D htod = {.srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = host, .srcPitch = 64,
                          .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = bad, .dstPitch = 64,
                          .WidthInBytes = 64, .Height = 4};
    CUDA_MEMCPY2D narrow = htod;
    narrow.dstDevice = dptr;
    narrow.dstPitch = 16;
    CUDA_MEMCPY2D past = htod;
    past.dstDevice = inner;
    past.dstPitch = 4096;
    past.Height = 257; /* one row past the end of dptr */
    CUDA_MEMCPY3D zero3 = {0};
    CUDA_MEMCPY3D htod3 = {.srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = host, .srcPitch = 64, .srcHeight = 4,
                           .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = bad, .dstPitch = 64,
                           .dstHeight = 4, .WidthInBytes = 64, .Height = 4, .Depth = 1};
    CUDA_MEMCPY3D_PEER zerop = {0};
    CUDA_MEMCPY3D_PEER htodp = {.srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = host, .srcPitch = 64,
                                .srcHeight = 4, .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = bad,
                                .dstContext = ctx, .dstPitch = 64, .dstHeight = 4, .WidthInBytes = 64,
                                .Height = 4, .Depth = 1};
    TRY_PT(cuMemcpy2D, "null", cuMemcpy2D_v2, NULL);
    TRY_PT(cuMemcpy2D, "zero", cuMemcpy2D_v2, &zero2);
    TRY_PT(cuMemcpy2D, "bad_pointer", cuMemcpy2D_v2, &htod);
    TRY_PT(cuMemcpy2D, "pitch_below_width", cuMemcpy2D_v2, &narrow);
    TRY_PT(cuMemcpy2D, "past_end", cuMemcpy2D_v2, &past);
    TRY_PT(cuMemcpy2DUnaligned, "null", cuMemcpy2DUnaligned_v2, NULL);
    TRY_PT(cuMemcpy2DUnaligned, "zero", cuMemcpy2DUnaligned_v2, &zero2);
    TRY_PT(cuMemcpy2DUnaligned, "bad_pointer", cuMemcpy2DUnaligned_v2, &htod);
    TRY_PT(cuMemcpy2DUnaligned, "past_end", cuMemcpy2DUnaligned_v2, &past);
    TRY_PT(cuMemcpy2DAsync, "null", cuMemcpy2DAsync_v2, NULL, stream);
    TRY_PT(cuMemcpy2DAsync, "zero", cuMemcpy2DAsync_v2, &zero2, stream);
    TRY_PT(cuMemcpy2DAsync, "bad_pointer", cuMemcpy2DAsync_v2, &htod, stream);
    TRY_PT(cuMemcpy2DAsync, "past_end", cuMemcpy2DAsync_v2, &past, stream);
    TRY_PT(cuMemcpy2DAsync, "bad_stream", cuMemcpy2DAsync_v2, &narrow, bad_stream);
    TRY_PT(cuMemcpy3D, "null", cuMemcpy3D_v2, NULL);
    TRY_PT(cuMemcpy3D, "zero", cuMemcpy3D_v2, &zero3);
    TRY_PT(cuMemcpy3D, "bad_pointer", cuMemcpy3D_v2, &htod3);
    TRY_PT(cuMemcpy3DAsync, "null", cuMemcpy3DAsync_v2, NULL, stream);
    TRY_PT(cuMemcpy3DAsync, "zero", cuMemcpy3DAsync_v2, &zero3, stream);
    TRY_PT(cuMemcpy3DAsync, "bad_pointer", cuMemcpy3DAsync_v2, &htod3, stream);
    TRY_PT(cuMemcpy3DAsync, "bad_stream", cuMemcpy3DAsync_v2, &htod3, bad_stream);
    TRY_PT(cuMemcpy3DPeer, "null", cuMemcpy3DPeer, NULL);
    TRY_PT(cuMemcpy3DPeer, "zero", cuMemcpy3DPeer, &zerop);
    TRY_PT(cuMemcpy3DPeer, "bad_pointer", cuMemcpy3DPeer, &htodp);
    TRY_PT(cuMemcpy3DPeerAsync, "null", cuMemcpy3DPeerAsync, NULL, stream);
    TRY_PT(cuMemcpy3DPeerAsync, "zero", cuMemcpy3DPeerAsync, &zerop, stream);
    TRY_PT(cuMemcpy3DPeerAsync, "bad_pointer", cuMemcpy3DPeerAsync, &htodp, stream);
    TRY_PT(cuMemcpy3DPeerAsync, "bad_stream", cuMemcpy3DPeerAsync, &htodp, bad_stream);
    TRY_PT(cuMemcpyPeer, "null_contexts", cuMemcpyPeer, dptr, NULL, dptr, NULL, 16);
    TRY_PT(cuMemcpyPeer, "bad_context", cuMemcpyPeer, dptr, BAD_HANDLE, dptr, ctx, 16);
    TRY_PT(cuMemcpyPeer, "bad_pointer", cuMemcpyPeer, bad, ctx, dptr, ctx, 16);
    TRY_PT(cuMemcpyPeer, "past_end", cuMemcpyPeer, inner, ctx, dptr, ctx, MiB);
    TRY_PT(cuMemcpyPeerAsync, "null_contexts", cuMemcpyPeerAsync, dptr, NULL, dptr, NULL, 16, stream);
    TRY_PT(cuMemcpyPeerAsync, "bad_pointer", cuMemcpyPeerAsync, bad, ctx, dptr, ctx, 16, stream);
    TRY_PT(cuMemcpyPeerAsync, "bad_stream", cuMemcpyPeerAsync, dptr, ctx, dptr, ctx, 16, bad_stream);
}

/* Batches longer than the sides spillway keeps for a submission (64):
 * the overrun in a late operation is refused all the same, and failIdx
 * names that operation as the driver's does. */
#define LONG_BATCH 40
#define LONG_BAD 35
#define FAIL_UNSET 7777
#define TRY_FAIL(base, tag, sym, fail, ...)                                      \
    do {                                                                         \
        *(fail) = FAIL_UNSET;                                                    \
        TRY(base, tag, sym, __VA_ARGS__);                                        \
        report(#base, #sym, tag ".failIdx", (int)*(fail));                       \
        *(fail) = FAIL_UNSET;                                                    \
        report(#base, #sym "+pt", tag, p_##sym##_pt ? (int)p_##sym##_pt(__VA_ARGS__) : ABSENT); \
        report(#base, #sym "+pt", tag ".failIdx", (int)*(fail));                 \
    } while (0)

static void long_batches(CUmemcpyAttributes *attr, const CUDA_MEMCPY3D_BATCH_OP *past,
                         const CUDA_MEMCPY3D_BATCH_OP *ok)
{
    CUdeviceptr dsts[LONG_BATCH], srcs[LONG_BATCH];
    size_t sizes[LONG_BATCH], idx[] = {0}, fail;
    CUDA_MEMCPY3D_BATCH_OP ops[LONG_BATCH];
    for (int i = 0; i < LONG_BATCH; i++) {
        dsts[i] = dptr + 4096 + 16 * (CUdeviceptr)i;
        srcs[i] = dptr;
        sizes[i] = 16;
        ops[i] = *ok;
        ops[i].dst.op.ptr.ptr = dsts[i];
    }
    TRY_FAIL(cuMemcpyBatchAsync, "long_ok", cuMemcpyBatchAsync, &fail, dsts, srcs, sizes, LONG_BATCH, attr, idx, 1,
             &fail, stream);
    TRY_FAIL(cuMemcpy3DBatchAsync, "long_ok", cuMemcpy3DBatchAsync, &fail, LONG_BATCH, ops, &fail, 0, stream);
    dsts[LONG_BAD] = inner;
    sizes[LONG_BAD] = MiB;
    ops[LONG_BAD] = *past;
    TRY_FAIL(cuMemcpyBatchAsync, "long_past_end", cuMemcpyBatchAsync, &fail, dsts, srcs, sizes, LONG_BATCH, attr,
             idx, 1, &fail, stream);
    TRY_PT(cuMemcpyBatchAsync, "long_past_end", cuMemcpyBatchAsync_v2, dsts, srcs, sizes, LONG_BATCH, attr, idx, 1,
           stream);
    TRY_FAIL(cuMemcpy3DBatchAsync, "long_past_end", cuMemcpy3DBatchAsync, &fail, LONG_BATCH, ops, &fail, 0, stream);
    TRY_PT(cuMemcpy3DBatchAsync, "long_past_end", cuMemcpy3DBatchAsync_v2, LONG_BATCH, ops, 0, stream);
}

void batch_copies(void)
{
    /* Their operands are unified addresses, as cuMemcpy's: no bad one
     * (copies()); an overrun instead. */
    CUdeviceptr dsts[] = {inner}, srcs[] = {dptr}, ok_dsts[] = {dptr};
    size_t sizes[] = {16}, past[] = {MiB}, idx[] = {0}, fail = 0;
    CUmemcpyAttributes attr = {.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM};
    CUmemcpyAttributes bad_attr = {.srcAccessOrder = (CUmemcpySrcAccessOrder)99};
    TRY_PT(cuMemcpyBatchAsync, "count_0", cuMemcpyBatchAsync, dsts, srcs, sizes, 0, &attr, idx, 1, &fail, stream);
    TRY_PT(cuMemcpyBatchAsync, "null_dsts", cuMemcpyBatchAsync, NULL, srcs, sizes, 1, &attr, idx, 1, &fail, stream);
    TRY_PT(cuMemcpyBatchAsync, "null_attrs", cuMemcpyBatchAsync, ok_dsts, srcs, sizes, 1, NULL, idx, 1, &fail, stream);
    TRY_PT(cuMemcpyBatchAsync, "bad_attr", cuMemcpyBatchAsync, ok_dsts, srcs, sizes, 1, &bad_attr, idx, 1, &fail,
           stream);
    TRY_PT(cuMemcpyBatchAsync, "past_end", cuMemcpyBatchAsync, dsts, srcs, past, 1, &attr, idx, 1, &fail, stream);
    TRY_PT(cuMemcpyBatchAsync, "legacy_stream", cuMemcpyBatchAsync, ok_dsts, srcs, sizes, 1, &attr, idx, 1, &fail,
           CU_STREAM_LEGACY);
    TRY_PT(cuMemcpyBatchAsync, "bad_stream", cuMemcpyBatchAsync, ok_dsts, srcs, sizes, 1, &attr, idx, 1, &fail,
           bad_stream);
    TRY_PT(cuMemcpyBatchAsync, "count_0", cuMemcpyBatchAsync_v2, dsts, srcs, sizes, 0, &attr, idx, 1, stream);
    TRY_PT(cuMemcpyBatchAsync, "null_dsts", cuMemcpyBatchAsync_v2, NULL, srcs, sizes, 1, &attr, idx, 1, stream);
    TRY_PT(cuMemcpyBatchAsync, "null_attrs", cuMemcpyBatchAsync_v2, ok_dsts, srcs, sizes, 1, NULL, idx, 1, stream);
    TRY_PT(cuMemcpyBatchAsync, "past_end", cuMemcpyBatchAsync_v2, dsts, srcs, past, 1, &attr, idx, 1, stream);
    TRY_PT(cuMemcpyBatchAsync, "bad_stream", cuMemcpyBatchAsync_v2, ok_dsts, srcs, sizes, 1, &attr, idx, 1,
           bad_stream);

    CUDA_MEMCPY3D_BATCH_OP zero = {0};
    CUDA_MEMCPY3D_BATCH_OP op = {
        .src = {.type = CU_MEMCPY_OPERAND_TYPE_POINTER, .op.ptr = {.ptr = dptr, .rowLength = 0, .layerHeight = 0}},
        .dst = {.type = CU_MEMCPY_OPERAND_TYPE_POINTER, .op.ptr = {.ptr = inner, .rowLength = 0, .layerHeight = 0}},
        .extent = {.width = MiB, .height = 1, .depth = 1},
        .srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM};
    /* One error a case: which of two the driver reports first is not
     * documented. */
    CUDA_MEMCPY3D_BATCH_OP ok_op = op;
    ok_op.dst.op.ptr.ptr = dptr;
    ok_op.extent.width = 16;
    TRY_PT(cuMemcpy3DBatchAsync, "count_0", cuMemcpy3DBatchAsync, 0, &op, &fail, 0, stream);
    TRY_PT(cuMemcpy3DBatchAsync, "null_ops", cuMemcpy3DBatchAsync, 1, NULL, &fail, 0, stream);
    TRY_PT(cuMemcpy3DBatchAsync, "zero_op", cuMemcpy3DBatchAsync, 1, &zero, &fail, 0, stream);
    TRY_PT(cuMemcpy3DBatchAsync, "past_end", cuMemcpy3DBatchAsync, 1, &op, &fail, 0, stream);
    TRY_PT(cuMemcpy3DBatchAsync, "bad_flags", cuMemcpy3DBatchAsync, 1, &ok_op, &fail, 0x100, stream);
    TRY_PT(cuMemcpy3DBatchAsync, "bad_stream", cuMemcpy3DBatchAsync, 1, &ok_op, &fail, 0, bad_stream);
    TRY_PT(cuMemcpy3DBatchAsync, "count_0", cuMemcpy3DBatchAsync_v2, 0, &op, 0, stream);
    TRY_PT(cuMemcpy3DBatchAsync, "null_ops", cuMemcpy3DBatchAsync_v2, 1, NULL, 0, stream);
    TRY_PT(cuMemcpy3DBatchAsync, "zero_op", cuMemcpy3DBatchAsync_v2, 1, &zero, 0, stream);
    TRY_PT(cuMemcpy3DBatchAsync, "past_end", cuMemcpy3DBatchAsync_v2, 1, &op, 0, stream);
    TRY_PT(cuMemcpy3DBatchAsync, "bad_stream", cuMemcpy3DBatchAsync_v2, 1, &ok_op, 0, bad_stream);
    long_batches(&attr, &op, &ok_op);

    /* CUDA 13.2's single copies: the batch of one each stands for. */
    TRY_PT(cuMemcpyWithAttributesAsync, "null_attr", cuMemcpyWithAttributesAsync, dptr, dptr, 16, NULL, stream);
    TRY_PT(cuMemcpyWithAttributesAsync, "bad_attr", cuMemcpyWithAttributesAsync, dptr, dptr, 16, &bad_attr, stream);
    TRY_PT(cuMemcpyWithAttributesAsync, "past_end", cuMemcpyWithAttributesAsync, inner, dptr, MiB, &attr, stream);
    TRY_PT(cuMemcpyWithAttributesAsync, "bad_stream", cuMemcpyWithAttributesAsync, dptr, dptr, 16, &attr,
           bad_stream);
    TRY_PT(cuMemcpy3DWithAttributesAsync, "null_op", cuMemcpy3DWithAttributesAsync, NULL, 0, stream);
    TRY_PT(cuMemcpy3DWithAttributesAsync, "zero_op", cuMemcpy3DWithAttributesAsync, &zero, 0, stream);
    TRY_PT(cuMemcpy3DWithAttributesAsync, "past_end", cuMemcpy3DWithAttributesAsync, &op, 0, stream);
    TRY_PT(cuMemcpy3DWithAttributesAsync, "bad_flags", cuMemcpy3DWithAttributesAsync, &ok_op, 0x100, stream);
    TRY_PT(cuMemcpy3DWithAttributesAsync, "bad_stream", cuMemcpy3DWithAttributesAsync, &ok_op, 0, bad_stream);
}
