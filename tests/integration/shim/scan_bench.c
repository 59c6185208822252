/* What a launch's argument scan costs with TMA descriptors about (not run
 * by `make test`: a count for callgrind). Under spillway against
 * fakecuda, spill on:
 *   scan_bench none|other|hit [N]
 * launches N times (default 20000) a kernel of two parameters, a 1 KiB
 * Params struct (alignas(64)) and a pool pointer: with no descriptor ever
 * made (none), with one made for another buffer while the struct holds
 * none (other: every window is looked up and misses), or with the struct
 * holding that descriptor at offset 64 (hit).
 *
 *   valgrind --tool=callgrind --callgrind-out-file=cg.out \
 *       env LD_PRELOAD=build/libspillway.so SPILLWAY_MEM_LIMIT=64M scan_bench other
 *   callgrind_annotate --inclusive=yes cg.out | grep -E 'spw_param_scan|spw_h_launch_kernel '
 *
 * gives the instructions per launch of the scan and of the whole handler
 * (divide by N; the handler's count includes fakecuda's launch). */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakecuda/fakecuda.h"

#define CHECK(call)                                                      \
    do {                                                                 \
        if ((call) != CUDA_SUCCESS) {                                    \
            fprintf(stderr, "%s failed\n", #call);                       \
            return 1;                                                    \
        }                                                                \
    } while (0)

struct params {
    _Alignas(64) uint64_t scalars[8]; /* m, n, k, strides... */
    unsigned char map[128];           /* a CUtensorMap, at offset 64 */
    uint64_t more[104];               /* epilogue arguments: 1 KiB in all */
};
_Static_assert(sizeof(struct params) == 1024, "a 1 KiB struct");

static void nothing(fakecuda_dim3 g, fakecuda_dim3 b, void **params)
{
    (void)g;
    (void)b;
    (void)params;
}

int main(int argc, char **argv)
{
    const char *mode = argc >= 2 ? argv[1] : "";
    long n = argc >= 3 ? atol(argv[2]) : 20000;
    if ((strcmp(mode, "none") && strcmp(mode, "other") && strcmp(mode, "hit")) || n <= 0 ||
        !fakecuda_present()) {
        fprintf(stderr, "usage: scan_bench none|other|hit [N] (against fakecuda)\n");
        return 64;
    }
    static const size_t sizes[] = {sizeof(struct params), sizeof(CUdeviceptr)}, aligns[] = {64, 0};
    if (fakecuda_register_kernel_aligned("scan_bench", nothing, 2, sizes, aligns))
        return 1;
    CUcontext ctx;
    CUmodule m;
    CUfunction f;
    CUdeviceptr buf, weights;
    CHECK(cuInit(0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoadData(&m, "fakecuda"));
    CHECK(cuModuleGetFunction(&f, m, "scan_bench"));
    CHECK(cuMemAlloc(&buf, 1 << 20));
    CHECK(cuMemAlloc(&weights, 1 << 20));
    struct params p;
    memset(&p, 0, sizeof p);
    for (unsigned i = 0; i < 8; i++)
        p.scalars[i] = 4096 + i;
    for (unsigned i = 0; i < 104; i++)
        p.more[i] = i * 3 + 1;
    if (strcmp(mode, "none")) {
        _Alignas(128) CUtensorMap map;
        const cuuint64_t dim[] = {1 << 18};
        const cuuint32_t box[] = {256}, es[] = {1};
        CHECK(cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_UINT32, 1, (void *)(uintptr_t)weights, dim,
                                     NULL, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                     CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
        if (!strcmp(mode, "hit"))
            memcpy(p.map, &map, sizeof map);
    }
    void *args[] = {&p, &buf};
    for (long i = 0; i < n; i++) {
        CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
        if (i % 1000 == 999)
            CHECK(cuCtxSynchronize());
    }
    CHECK(cuCtxSynchronize());
    printf("scan_bench %s: %ld launches\n", mode, n);
    return 0;
}
