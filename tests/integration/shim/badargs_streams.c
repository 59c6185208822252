/* Bad arguments (badargs.c) to stream work: captures, memory operations,
 * prefetches, discards and attachments of managed memory, host functions
 * and callbacks, and batched decompression. */
#include "tests/integration/shim/badargs.h"

void captures(void)
{
    CUgraph g;
    CUgraphNode none = NULL;
    TRY_PT(cuStreamBeginCapture, "bad_stream", cuStreamBeginCapture, bad_stream);
    TRY_PT(cuStreamBeginCapture, "legacy_stream", cuStreamBeginCapture, CU_STREAM_LEGACY);
    TRY_PT(cuStreamBeginCapture, "bad_stream", cuStreamBeginCapture_v2, bad_stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
    TRY_PT(cuStreamBeginCapture, "legacy_stream", cuStreamBeginCapture_v2, CU_STREAM_LEGACY,
           CU_STREAM_CAPTURE_MODE_GLOBAL);
    TRY_PT(cuStreamBeginCapture, "bad_mode", cuStreamBeginCapture_v2, stream, (CUstreamCaptureMode)99);
    TRY_PT(cuStreamBeginCaptureToGraph, "bad_stream", cuStreamBeginCaptureToGraph, bad_stream, graph, NULL, NULL,
           0, CU_STREAM_CAPTURE_MODE_GLOBAL);
    TRY_PT(cuStreamBeginCaptureToGraph, "null_graph", cuStreamBeginCaptureToGraph, stream, NULL, NULL, NULL, 0,
           CU_STREAM_CAPTURE_MODE_GLOBAL);
    TRY_PT(cuStreamBeginCaptureToGraph, "bad_graph", cuStreamBeginCaptureToGraph, stream, BAD_HANDLE, NULL, NULL,
           0, CU_STREAM_CAPTURE_MODE_GLOBAL);
    TRY_PT(cuStreamBeginCaptureToGraph, "null_deps", cuStreamBeginCaptureToGraph, stream, graph, NULL, NULL, 1,
           CU_STREAM_CAPTURE_MODE_GLOBAL);
    TRY_PT(cuStreamBeginCaptureToGraph, "bad_dep", cuStreamBeginCaptureToGraph, stream, graph, &none, NULL, 1,
           CU_STREAM_CAPTURE_MODE_GLOBAL);
    TRY_PT(cuStreamBeginCaptureToGraph, "bad_mode", cuStreamBeginCaptureToGraph, stream, graph, NULL, NULL, 0,
           (CUstreamCaptureMode)99);
    TRY_PT(cuStreamEndCapture, "not_capturing", cuStreamEndCapture, stream, &g);
    TRY_PT(cuStreamEndCapture, "null_out", cuStreamEndCapture, stream, NULL);
    TRY_PT(cuStreamEndCapture, "bad_stream", cuStreamEndCapture, bad_stream, &g);
    TRY_PT(cuStreamEndCapture, "legacy_stream", cuStreamEndCapture, CU_STREAM_LEGACY, &g);
}

static void host_fn(void *data)
{
    (void)data;
}

static void callback_fn(CUstream s, CUresult status, void *data)
{
    (void)s;
    (void)status;
    (void)data;
}

/* A write of a value to memory freed just now (just_freed), one for each
 * call. */
static CUstreamBatchMemOpParams *freed_write(void)
{
    static CUstreamBatchMemOpParams op;
    op = (CUstreamBatchMemOpParams){
        .writeValue = {.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32, .address = just_freed()}};
    return &op;
}

/* Waits only on addresses that fail before the wait is queued: a wait
 * that is queued on a value never written would hang the stream. */
void stream_memops(void)
{
    CUstreamBatchMemOpParams op = {.writeValue = {.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32, .address = bad}};
    CUstreamBatchMemOpParams bad_op = {.operation = (CUstreamBatchMemOpType)99};
#define MEMOPS(sym32w, sym64w, sym32, sym64, symb)                                             \
    TRY_PT(cuStreamWriteValue32, "bad_pointer", sym32w, stream, bad, 1, 0);                    \
    TRY_PT(cuStreamWriteValue32, "null", sym32w, stream, 0, 1, 0);                             \
    TRY_PT(cuStreamWriteValue32, "bad_flags", sym32w, stream, dptr, 1, 0x100);                 \
    TRY_PT(cuStreamWriteValue32, "misaligned", sym32w, stream, dptr + 1, 1, 0);                \
    TRY_PT(cuStreamWriteValue32, "bad_stream", sym32w, bad_stream, dptr, 1, 0);                \
    TRY_PT(cuStreamWriteValue32, "freed", sym32w, stream, just_freed(), 1, 0);                 \
    TRY_PT(cuStreamWriteValue64, "bad_pointer", sym64w, stream, bad, 1, 0);                    \
    TRY_PT(cuStreamWriteValue64, "freed", sym64w, stream, just_freed(), 1, 0);                 \
    TRY_PT(cuStreamWriteValue64, "misaligned", sym64w, stream, dptr + 4, 1, 0);                \
    TRY_PT(cuStreamWriteValue64, "bad_stream", sym64w, bad_stream, dptr, 1, 0);                \
    TRY_PT(cuStreamWaitValue32, "bad_pointer", sym32, stream, bad, 1, 0);                      \
    TRY_PT(cuStreamWaitValue32, "bad_flags", sym32, stream, bad, 1, 0x100);                    \
    TRY_PT(cuStreamWaitValue32, "bad_stream", sym32, bad_stream, bad, 1, 0);                   \
    TRY_PT(cuStreamWaitValue64, "bad_pointer", sym64, stream, bad, 1, 0);                      \
    TRY_PT(cuStreamWaitValue64, "bad_flags", sym64, stream, bad, 1, 0x100);                    \
    TRY_PT(cuStreamWaitValue64, "bad_stream", sym64, bad_stream, bad, 1, 0);                   \
    TRY_PT(cuStreamBatchMemOp, "count_0", symb, stream, 0, &op, 0);                            \
    TRY_PT(cuStreamBatchMemOp, "null_ops", symb, stream, 1, NULL, 0);                          \
    TRY_PT(cuStreamBatchMemOp, "count_256", symb, stream, 256, &op, 0);                        \
    TRY_PT(cuStreamBatchMemOp, "bad_pointer", symb, stream, 1, &op, 0);                        \
    TRY_PT(cuStreamBatchMemOp, "freed", symb, stream, 1, freed_write(), 0);                    \
    TRY_PT(cuStreamBatchMemOp, "bad_op", symb, stream, 1, &bad_op, 0);                         \
    TRY_PT(cuStreamBatchMemOp, "bad_flags", symb, stream, 1, &op, 0x100);                      \
    TRY_PT(cuStreamBatchMemOp, "bad_stream", symb, bad_stream, 1, &op, 0);
    MEMOPS(cuStreamWriteValue32, cuStreamWriteValue64, cuStreamWaitValue32, cuStreamWaitValue64,
           cuStreamBatchMemOp)
    MEMOPS(cuStreamWriteValue32_v2, cuStreamWriteValue64_v2, cuStreamWaitValue32_v2, cuStreamWaitValue64_v2,
           cuStreamBatchMemOp_v2)
#undef MEMOPS

    CUmemLocation here = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
    CUmemLocation nowhere = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 99};
    CUmemLocation untyped = {.type = CU_MEM_LOCATION_TYPE_INVALID, .id = 0};
    TRY_PT(cuMemPrefetchAsync, "bad_pointer", cuMemPrefetchAsync_v2, bad, 16, here, 0, stream);
    TRY_PT(cuMemPrefetchAsync, "not_managed", cuMemPrefetchAsync_v2, dptr, 16, here, 0, stream);
    TRY_PT(cuMemPrefetchAsync, "device_99", cuMemPrefetchAsync_v2, dptr, 16, nowhere, 0, stream);
    TRY_PT(cuMemPrefetchAsync, "bad_location", cuMemPrefetchAsync_v2, dptr, 16, untyped, 0, stream);
    TRY_PT(cuMemPrefetchAsync, "bad_flags", cuMemPrefetchAsync_v2, dptr, 16, here, 0x100, stream);
    TRY_PT(cuMemPrefetchAsync, "bad_stream", cuMemPrefetchAsync_v2, dptr, 16, here, 0, bad_stream);
    /* CUDA 8's prefetch (a CUdevice), and CUDA 13.0's batches. */
    TRY_PT(cuMemPrefetchAsync, "bad_pointer", cuMemPrefetchAsync, bad, 16, 0, stream);
    TRY_PT(cuMemPrefetchAsync, "not_managed", cuMemPrefetchAsync, dptr, 16, 0, stream);
    TRY_PT(cuMemPrefetchAsync, "device_99", cuMemPrefetchAsync, dptr, 16, 99, stream);
    TRY_PT(cuMemPrefetchAsync, "device_minus_2", cuMemPrefetchAsync, dptr, 16, -2, stream);
    TRY_PT(cuMemPrefetchAsync, "bad_stream", cuMemPrefetchAsync, dptr, 16, 0, bad_stream);
    CUdeviceptr ptrs[1] = {dptr}, bads[1] = {bad};
    size_t sizes[1] = {16}, idx0[1] = {0}, idx1[1] = {1};
    CUmemLocation locs[1] = {here}, nowheres[1] = {nowhere};
#define LOCATED_BATCH(base)                                                                                   \
    TRY_PT(base, "not_managed", base, ptrs, sizes, 1, locs, idx0, 1, 0, stream);                            \
    TRY_PT(base, "bad_pointer", base, bads, sizes, 1, locs, idx0, 1, 0, stream);                            \
    TRY_PT(base, "count_0", base, ptrs, sizes, 0, locs, idx0, 1, 0, stream);                                \
    TRY_PT(base, "null_ptrs", base, NULL, sizes, 1, locs, idx0, 1, 0, stream);                              \
    TRY_PT(base, "null_locs", base, ptrs, sizes, 1, NULL, idx0, 1, 0, stream);                              \
    TRY_PT(base, "no_locs", base, ptrs, sizes, 1, locs, idx0, 0, 0, stream);                                \
    TRY_PT(base, "first_index_1", base, ptrs, sizes, 1, locs, idx1, 1, 0, stream);                          \
    TRY_PT(base, "device_99", base, ptrs, sizes, 1, nowheres, idx0, 1, 0, stream);                          \
    TRY_PT(base, "bad_flags", base, ptrs, sizes, 1, locs, idx0, 1, 1, stream);                              \
    TRY_PT(base, "legacy_stream", base, ptrs, sizes, 1, locs, idx0, 1, 0, CU_STREAM_LEGACY);                \
    TRY_PT(base, "bad_stream", base, ptrs, sizes, 1, locs, idx0, 1, 0, bad_stream);
    LOCATED_BATCH(cuMemPrefetchBatchAsync)
    LOCATED_BATCH(cuMemDiscardAndPrefetchBatchAsync)
#undef LOCATED_BATCH
    TRY_PT(cuMemDiscardBatchAsync, "not_managed", cuMemDiscardBatchAsync, ptrs, sizes, 1, 0, stream);
    TRY_PT(cuMemDiscardBatchAsync, "bad_pointer", cuMemDiscardBatchAsync, bads, sizes, 1, 0, stream);
    TRY_PT(cuMemDiscardBatchAsync, "count_0", cuMemDiscardBatchAsync, ptrs, sizes, 0, 0, stream);
    TRY_PT(cuMemDiscardBatchAsync, "null_ptrs", cuMemDiscardBatchAsync, NULL, sizes, 1, 0, stream);
    TRY_PT(cuMemDiscardBatchAsync, "bad_flags", cuMemDiscardBatchAsync, ptrs, sizes, 1, 1, stream);
    TRY_PT(cuMemDiscardBatchAsync, "legacy_stream", cuMemDiscardBatchAsync, ptrs, sizes, 1, 0, CU_STREAM_LEGACY);
    TRY_PT(cuMemDiscardBatchAsync, "bad_stream", cuMemDiscardBatchAsync, ptrs, sizes, 1, 0, bad_stream);
    TRY_PT(cuStreamAttachMemAsync, "not_managed", cuStreamAttachMemAsync, stream, dptr, 0, CU_MEM_ATTACH_GLOBAL);
    TRY_PT(cuStreamAttachMemAsync, "bad_pointer", cuStreamAttachMemAsync, stream, bad, 0, CU_MEM_ATTACH_GLOBAL);
    TRY_PT(cuStreamAttachMemAsync, "bad_flags", cuStreamAttachMemAsync, stream, dptr, 0, 8);
    TRY_PT(cuStreamAttachMemAsync, "single_to_legacy", cuStreamAttachMemAsync, CU_STREAM_LEGACY, dptr, 0,
           CU_MEM_ATTACH_SINGLE);
    TRY_PT(cuStreamAttachMemAsync, "bad_stream", cuStreamAttachMemAsync, bad_stream, dptr, 0, CU_MEM_ATTACH_GLOBAL);
    TRY_PT(cuStreamAddCallback, "null_fn", cuStreamAddCallback, stream, NULL, NULL, 0);
    TRY_PT(cuStreamAddCallback, "bad_flags", cuStreamAddCallback, stream, callback_fn, NULL, 1);
    TRY_PT(cuStreamAddCallback, "bad_stream", cuStreamAddCallback, bad_stream, callback_fn, NULL, 0);
    TRY_PT(cuLaunchHostFunc, "null_fn", cuLaunchHostFunc, stream, NULL, NULL);
    TRY_PT(cuLaunchHostFunc, "bad_stream", cuLaunchHostFunc, bad_stream, host_fn, NULL);
    TRY_PT(cuLaunchHostFunc_v2, "null_fn", cuLaunchHostFunc_v2, stream, NULL, NULL, 0);
    TRY_PT(cuLaunchHostFunc_v2, "bad_stream", cuLaunchHostFunc_v2, bad_stream, host_fn, NULL, 0);
    TRY_PT(cuLaunchHostFunc_v2, "bad_mode", cuLaunchHostFunc_v2, stream, host_fn, NULL, 7);

    CUmemDecompressParams dp = {.src = (void *)(uintptr_t)bad, .dst = (void *)(uintptr_t)dptr,
                                .srcNumBytes = 16, .dstNumBytes = 16, .algo = CU_MEM_DECOMPRESS_ALGORITHM_DEFLATE};
    size_t err_idx;
    TRY_PT(cuMemBatchDecompressAsync, "null_params", cuMemBatchDecompressAsync, NULL, 1, 0, &err_idx, stream);
    TRY_PT(cuMemBatchDecompressAsync, "count_0", cuMemBatchDecompressAsync, &dp, 0, 0, &err_idx, stream);
    TRY_PT(cuMemBatchDecompressAsync, "bad_flags", cuMemBatchDecompressAsync, &dp, 1, 0x100, &err_idx, stream);
    TRY_PT(cuMemBatchDecompressAsync, "bad_pointer", cuMemBatchDecompressAsync, &dp, 1, 0, &err_idx, stream);
    TRY_PT(cuMemBatchDecompressAsync, "bad_stream", cuMemBatchDecompressAsync, &dp, 1, 0, &err_idx, bad_stream);
}
