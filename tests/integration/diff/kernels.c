/* diffgen's kernels: C functions registered with fakecuda, or the PTX of
 * kernels.cu on a real driver; launched by each launch API in turn. */
#include <string.h>

#include "tests/fakecuda/fakecuda.h"
#include "tests/integration/diff/diffgen.h"
#include "tests/integration/diff/kernels_ptx.h"
#include "tests/integration/diff/pattern.h"

static void fill_fn(fakecuda_dim3 grid, fakecuda_dim3 block, void **params)
{
    (void)grid;
    (void)block;
    uint8_t *dst = (uint8_t *)(uintptr_t)*(uint64_t *)params[0];
    uint64_t n = *(uint64_t *)params[1], seed = *(uint64_t *)params[2], i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w = diff_pat_word(seed, i >> 3);
        memcpy(dst + i, &w, 8);
    }
    for (; i < n; i++)
        dst[i] = diff_pat_byte(seed, i);
}

static void xor_fn(fakecuda_dim3 grid, fakecuda_dim3 block, void **params)
{
    (void)grid;
    (void)block;
    uint8_t *dst = (uint8_t *)(uintptr_t)*(uint64_t *)params[0];
    const uint8_t *src = (const uint8_t *)(uintptr_t)*(uint64_t *)params[1];
    uint64_t n = *(uint64_t *)params[2];
    uint8_t key = (uint8_t)*(uint64_t *)params[3];
    for (uint64_t i = 0; i < n; i++)
        dst[i] = src[i] ^ key;
}

CUresult diff_kernels_load(struct diff_run *r)
{
    static const size_t sizes[4] = {8, 8, 8, 8};
    if (r->fakecuda && (fakecuda_register_kernel("diff_fill", fill_fn, 3, sizes) != 0 ||
                        fakecuda_register_kernel("diff_xor", xor_fn, 4, sizes) != 0))
        return CUDA_ERROR_UNKNOWN;
    CUmodule m;
    CUresult e = cuModuleLoadData(&m, diff_kernels_ptx);
    if (e == CUDA_SUCCESS)
        e = cuModuleGetFunction(&r->k_fill, m, "diff_fill");
    if (e == CUDA_SUCCESS)
        e = cuModuleGetFunction(&r->k_xor, m, "diff_xor");
    return e;
}

/* Each launch API in turn (variant): params, the packed extra buffer,
 * cuLaunchKernelEx, cooperative. All pass pointers that spillway's
 * argument scan must find. */
static CUresult launch(struct diff_thread *t, CUfunction f, uint64_t *args, unsigned nargs,
                       uint64_t len, int stream, int variant)
{
    void *params[4] = {&args[0], &args[1], &args[2], &args[3]};
    unsigned grid = (unsigned)(len / 4096 + 1 < 64 ? len / 4096 + 1 : 64);
    CUstream s = t->streams[stream];
    size_t bytes = nargs * sizeof(uint64_t);
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, args, CU_LAUNCH_PARAM_BUFFER_SIZE, &bytes,
                     CU_LAUNCH_PARAM_END};
    CUlaunchConfig cfg = {.gridDimX = grid, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 256,
                          .blockDimY = 1, .blockDimZ = 1, .hStream = s};
    switch (variant & 3) {
    case 0: return cuLaunchKernel(f, grid, 1, 1, 256, 1, 1, 0, s, params, NULL);
    case 1: return cuLaunchKernel(f, grid, 1, 1, 256, 1, 1, 0, s, NULL, extra);
    case 2: return cuLaunchKernelEx(&cfg, f, params, NULL);
    default: return cuLaunchCooperativeKernel(f, grid, 1, 1, 256, 1, 1, 0, s, params);
    }
}

bool diff_fill(struct diff_thread *t, struct diff_slot *s, uint64_t off, uint64_t len, uint64_t seed,
               int stream, int variant)
{
    if (!diff_order(t, s, stream))
        return false;
    uint64_t args[4] = {s->ptr + off, len, seed, 0};
    if (!diff_cu(t, launch(t, t->run->k_fill, args, 3, len, stream, variant), "fill launch"))
        return false;
    struct diff_extent g = {.kind = GEN_PAT, .value = seed, .writer = diff_op_id(t->index, t->op)};
    return diff_shadow_write(&s->sh, off, len, g) || diff_cu(t, CUDA_ERROR_OUT_OF_MEMORY, "shadow");
}

/* b[boff, +len) = a[aoff, +len) ^ key: the kernel reads a buffer that may
 * live on the host (spilled) and writes another. */
bool diff_xor(struct diff_thread *t, struct diff_slot *a, uint64_t aoff, struct diff_slot *b,
              uint64_t boff, uint64_t len, uint64_t key, int stream, int variant)
{
    if (!diff_order(t, a, stream) || !diff_order(t, b, stream))
        return false;
    uint64_t args[4] = {b->ptr + boff, a->ptr + aoff, len, key};
    if (!diff_cu(t, launch(t, t->run->k_xor, args, 4, len, stream, variant), "xor launch"))
        return false;
    return diff_shadow_copy(&b->sh, boff, &a->sh, aoff, len, (uint8_t)key, diff_op_id(t->index, t->op)) ||
           diff_cu(t, CUDA_ERROR_OUT_OF_MEMORY, "shadow");
}
