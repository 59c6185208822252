/* Bad arguments (badargs.c) to kernel and graph launches, and to the TMA
 * descriptor encoders. */
#include "tests/integration/shim/badargs.h"

void launches(void)
{
    void *args[] = {&dptr};
    TRY_PT(cuLaunchKernel, "null_function", cuLaunchKernel, NULL, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL);
    TRY_PT(cuLaunchKernel, "bad_function", cuLaunchKernel, BAD_HANDLE, 1, 1, 1, 1, 1, 1, 0, stream, args, NULL);
    TRY_PT(cuLaunchKernel, "grid_0", cuLaunchKernel, noop_fn, 0, 1, 1, 1, 1, 1, 0, stream, NULL, NULL);
    TRY_PT(cuLaunchKernel, "block_too_big", cuLaunchKernel, noop_fn, 1, 1, 1, 4096, 1, 1, 0, stream, NULL, NULL);
    TRY_PT(cuLaunchKernel, "shared_too_big", cuLaunchKernel, noop_fn, 1, 1, 1, 1, 1, 1, 1u << 30, stream, NULL,
           NULL);
    TRY_PT(cuLaunchKernel, "bad_stream", cuLaunchKernel, ptr_fn, 1, 1, 1, 1, 1, 1, 0, bad_stream, args, NULL);
    TRY_PT(cuLaunchKernel, "null_params", cuLaunchKernel, ptr_fn, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL);
    TRY_PT(cuLaunchKernel, "params_and_extra", cuLaunchKernel, ptr_fn, 1, 1, 1, 1, 1, 1, 0, stream, args,
           (void **)args);
    CUlaunchConfig cfg = {.gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 1, .blockDimY = 1,
                          .blockDimZ = 1, .hStream = stream};
    CUlaunchConfig cfg_bad_stream = cfg;
    cfg_bad_stream.hStream = bad_stream;
    CUlaunchConfig cfg_grid_0 = cfg;
    cfg_grid_0.gridDimX = 0;
    CUlaunchConfig cfg_null_attrs = cfg;
    cfg_null_attrs.numAttrs = 1;
    CUlaunchAttribute bad_attr = {.id = (CUlaunchAttributeID)999};
    CUlaunchConfig cfg_bad_attr = cfg;
    cfg_bad_attr.attrs = &bad_attr;
    cfg_bad_attr.numAttrs = 1;
    TRY_PT(cuLaunchKernelEx, "null_config", cuLaunchKernelEx, NULL, ptr_fn, args, NULL);
    TRY_PT(cuLaunchKernelEx, "null_function", cuLaunchKernelEx, &cfg, NULL, args, NULL);
    TRY_PT(cuLaunchKernelEx, "bad_function", cuLaunchKernelEx, &cfg, BAD_HANDLE, args, NULL);
    TRY_PT(cuLaunchKernelEx, "grid_0", cuLaunchKernelEx, &cfg_grid_0, ptr_fn, args, NULL);
    TRY_PT(cuLaunchKernelEx, "bad_stream", cuLaunchKernelEx, &cfg_bad_stream, ptr_fn, args, NULL);
    TRY_PT(cuLaunchKernelEx, "null_attrs", cuLaunchKernelEx, &cfg_null_attrs, ptr_fn, args, NULL);
    TRY_PT(cuLaunchKernelEx, "bad_attr", cuLaunchKernelEx, &cfg_bad_attr, ptr_fn, args, NULL);
    TRY_PT(cuLaunchKernelEx, "null_params", cuLaunchKernelEx, &cfg, ptr_fn, NULL, NULL);
    TRY_PT(cuLaunchCooperativeKernel, "null_function", cuLaunchCooperativeKernel, NULL, 1, 1, 1, 1, 1, 1, 0, stream,
           args);
    TRY_PT(cuLaunchCooperativeKernel, "grid_0", cuLaunchCooperativeKernel, ptr_fn, 0, 1, 1, 1, 1, 1, 0, stream,
           args);
    TRY_PT(cuLaunchCooperativeKernel, "bad_stream", cuLaunchCooperativeKernel, ptr_fn, 1, 1, 1, 1, 1, 1, 0,
           bad_stream, args);
    TRY_PT(cuLaunchCooperativeKernel, "null_params", cuLaunchCooperativeKernel, ptr_fn, 1, 1, 1, 1, 1, 1, 0,
           stream, NULL);
    CUDA_LAUNCH_PARAMS multi = {.function = ptr_fn, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1, .hStream = stream,
                                .kernelParams = args};
    CUDA_LAUNCH_PARAMS multi_null_stream = multi, multi_bad_stream = multi, multi_null_function = multi,
                       multi_bad_function = multi, multi_grid_0 = multi, multi_null_params = multi;
    multi_null_stream.hStream = NULL;
    multi_bad_stream.hStream = bad_stream;
    multi_null_function.function = NULL;
    multi_bad_function.function = BAD_HANDLE;
    multi_grid_0.gridDimX = 0;
    multi_null_params.kernelParams = NULL;
    CUDA_LAUNCH_PARAMS multi_one_device_twice[2] = {multi, multi};
    TRY(cuLaunchCooperativeKernelMultiDevice, "null_list", cuLaunchCooperativeKernelMultiDevice, NULL, 1, 0);
    TRY(cuLaunchCooperativeKernelMultiDevice, "no_devices", cuLaunchCooperativeKernelMultiDevice, &multi, 0, 0);
    /* More entries than the array has, and than any machine has devices. */
    TRY(cuLaunchCooperativeKernelMultiDevice, "huge_count", cuLaunchCooperativeKernelMultiDevice, &multi,
        0x7fffffffu, 0);
    /* More than the machine's devices (fakecuda has 1 here) but within
     * spillway's 64: the one-entry array must not be read past. */
    TRY(cuLaunchCooperativeKernelMultiDevice, "past_the_devices", cuLaunchCooperativeKernelMultiDevice, &multi, 40,
        0);
    TRY(cuLaunchCooperativeKernelMultiDevice, "bad_flags", cuLaunchCooperativeKernelMultiDevice, &multi, 1, 0x80);
    TRY(cuLaunchCooperativeKernelMultiDevice, "null_stream", cuLaunchCooperativeKernelMultiDevice,
        &multi_null_stream, 1, 0);
    TRY(cuLaunchCooperativeKernelMultiDevice, "bad_stream", cuLaunchCooperativeKernelMultiDevice,
        &multi_bad_stream, 1, 0);
    TRY(cuLaunchCooperativeKernelMultiDevice, "null_function", cuLaunchCooperativeKernelMultiDevice,
        &multi_null_function, 1, 0);
    TRY(cuLaunchCooperativeKernelMultiDevice, "bad_function", cuLaunchCooperativeKernelMultiDevice,
        &multi_bad_function, 1, 0);
    TRY(cuLaunchCooperativeKernelMultiDevice, "grid_0", cuLaunchCooperativeKernelMultiDevice, &multi_grid_0, 1, 0);
    TRY(cuLaunchCooperativeKernelMultiDevice, "null_params", cuLaunchCooperativeKernelMultiDevice,
        &multi_null_params, 1, 0);
    TRY(cuLaunchCooperativeKernelMultiDevice, "one_device_twice", cuLaunchCooperativeKernelMultiDevice,
        multi_one_device_twice, 2, 0);
    TRY(cuLaunch, "null_function", cuLaunch, NULL);
    TRY(cuLaunch, "bad_function", cuLaunch, BAD_HANDLE);
    TRY(cuLaunchGrid, "null_function", cuLaunchGrid, NULL, 1, 1);
    TRY(cuLaunchGrid, "grid_0", cuLaunchGrid, noop_fn, 0, 1);
    TRY(cuLaunchGridAsync, "null_function", cuLaunchGridAsync, NULL, 1, 1, stream);
    TRY(cuLaunchGridAsync, "grid_0", cuLaunchGridAsync, noop_fn, 0, 1, stream);
    TRY(cuLaunchGridAsync, "bad_stream", cuLaunchGridAsync, noop_fn, 1, 1, bad_stream);
    TRY_PT(cuGraphLaunch, "null_exec", cuGraphLaunch, NULL, stream);
    TRY_PT(cuGraphLaunch, "bad_exec", cuGraphLaunch, BAD_HANDLE, stream);
    TRY_PT(cuGraphLaunch, "bad_stream", cuGraphLaunch, gexec, bad_stream);
    TRY_PT(cuGraphUpload, "null_exec", cuGraphUpload, NULL, stream);
    TRY_PT(cuGraphUpload, "bad_exec", cuGraphUpload, BAD_HANDLE, stream);
    TRY_PT(cuGraphUpload, "bad_stream", cuGraphUpload, gexec, bad_stream);
}

/* spillway reads a descriptor only after the driver made it: every refusal
 * is the driver's, and a valid encode succeeds as without spillway. */
void tensor_maps(void)
{
    static _Alignas(128) unsigned char room[3 * sizeof(CUtensorMap)];
    CUtensorMap *m = (CUtensorMap *)(void *)room, *off_grid = (CUtensorMap *)(void *)(room + 160);
    void *a = (void *)(uintptr_t)dptr, *a8 = (void *)(uintptr_t)(dptr + 8);
    const cuuint64_t dim[] = {256, 256, 4, 1, 1, 1}, stride[] = {1024, 1024 * 256, 1024 * 256 * 4, 1 << 20, 1 << 20};
    const cuuint32_t box[] = {32, 32, 1, 1, 1, 1}, box257[] = {32, 257, 1, 1, 1, 1}, es[] = {1, 1, 1, 1, 1, 1};
    const CUtensorMapDataType f32 = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
#define TILED(tag, map, type, rank, addr, dims, boxes, swz)                                                  \
    TRY(cuTensorMapEncodeTiled, tag, cuTensorMapEncodeTiled, map, type, rank, addr, dims, stride, boxes, es,    \
        CU_TENSOR_MAP_INTERLEAVE_NONE, swz, CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    TILED("null_map", NULL, f32, 2, a, dim, box, CU_TENSOR_MAP_SWIZZLE_NONE);
    TILED("misaligned_map", off_grid, f32, 2, a, dim, box, CU_TENSOR_MAP_SWIZZLE_NONE);
    TILED("misaligned_address", m, f32, 2, a8, dim, box, CU_TENSOR_MAP_SWIZZLE_NONE);
    TILED("null_address", m, f32, 2, NULL, dim, box, CU_TENSOR_MAP_SWIZZLE_NONE);
    TILED("rank_0", m, f32, 0, a, dim, box, CU_TENSOR_MAP_SWIZZLE_NONE);
    TILED("rank_6", m, f32, 6, a, dim, box, CU_TENSOR_MAP_SWIZZLE_NONE);
    TILED("box_257", m, f32, 2, a, dim, box257, CU_TENSOR_MAP_SWIZZLE_NONE);
    TILED("null_dims", m, f32, 2, a, NULL, box, CU_TENSOR_MAP_SWIZZLE_NONE);
    TILED("bad_type", m, (CUtensorMapDataType)99, 2, a, dim, box, CU_TENSOR_MAP_SWIZZLE_NONE);
    TILED("bad_swizzle", m, f32, 2, a, dim, box, (CUtensorMapSwizzle)99);
    TILED("swizzle_32_box_128", m, f32, 2, a, dim, box, CU_TENSOR_MAP_SWIZZLE_32B);
    TILED("valid", m, f32, 2, a, dim, box, CU_TENSOR_MAP_SWIZZLE_NONE);
#undef TILED
    TRY(cuTensorMapReplaceAddress, "null_map", cuTensorMapReplaceAddress, NULL, a);
    TRY(cuTensorMapReplaceAddress, "misaligned_address", cuTensorMapReplaceAddress, m, a8);
    TRY(cuTensorMapReplaceAddress, "misaligned_map", cuTensorMapReplaceAddress, off_grid, a);
    TRY(cuTensorMapReplaceAddress, "valid", cuTensorMapReplaceAddress, m, (void *)(uintptr_t)(dptr + 4096));

    const int lo[] = {-1, 0, 0}, hi[] = {-1, 0, 0}, far[] = {-40000, 0, 0};
    const cuuint64_t nwc[] = {16, 64, 4, 1, 1}, nwc_stride[] = {32, 32 * 64, 32 * 64 * 4, 1 << 20};
    const CUtensorMapDataType f16 = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
#define IM2COL(tag, map, rank, addr, lower, cpp)                                                                 \
    TRY(cuTensorMapEncodeIm2col, tag, cuTensorMapEncodeIm2col, map, f16, rank, addr, nwc, nwc_stride, lower, hi, \
        cpp, 64, es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE, \
        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    IM2COL("null_map", NULL, 3, a, lo, 16);
    IM2COL("rank_2", m, 2, a, lo, 16);
    IM2COL("misaligned_address", m, 3, a8, lo, 16);
    IM2COL("corner_out_of_range", m, 3, a, far, 16);
    IM2COL("channels_257", m, 3, a, lo, 257);
    IM2COL("null_corners", m, 3, a, NULL, 16);
    IM2COL("valid", m, 3, a, lo, 16);
#undef IM2COL
#define WIDE(tag, map, rank, addr, lower, mode, swz)                                                               \
    TRY(cuTensorMapEncodeIm2colWide, tag, cuTensorMapEncodeIm2colWide, map, f16, rank, addr, nwc, nwc_stride,      \
        lower, -1, 16, 64, es, CU_TENSOR_MAP_INTERLEAVE_NONE, mode, swz, CU_TENSOR_MAP_L2_PROMOTION_NONE,          \
        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    const CUtensorMapIm2ColWideMode w = CU_TENSOR_MAP_IM2COL_WIDE_MODE_W;
    const CUtensorMapSwizzle s128 = CU_TENSOR_MAP_SWIZZLE_128B;
    WIDE("null_map", NULL, 3, a, -1, w, s128);
    WIDE("rank_2", m, 2, a, -1, w, s128);
    WIDE("misaligned_address", m, 3, a8, -1, w, s128);
    WIDE("corner_out_of_range", m, 3, a, 40000, w, s128);
    WIDE("bad_mode", m, 3, a, -1, (CUtensorMapIm2ColWideMode)7, s128);
    WIDE("swizzle_none", m, 3, a, -1, w, CU_TENSOR_MAP_SWIZZLE_NONE);
    WIDE("valid", m, 3, a, -1, w, s128);
#undef WIDE
}
