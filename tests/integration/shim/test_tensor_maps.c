/* TMA descriptors under spill (shim/tensor_maps.c), run by tensor_maps.sh
 * against fakecuda, whose descriptors hold their global address in no
 * 8-byte word (the conservative case: a driver's opaque bytes need not
 * show it). A buffer that a kernel reaches only through a CUtensorMap
 * argument (a GEMM's weights on Hopper) is squeezed out to the host; the
 * launch must fill it back and the kernel read the right data:
 *  - the descriptor as a parameter of its own (cuLaunchKernel, and packed
 *    in a CU_LAUNCH_PARAM_BUFFER_POINTER buffer);
 *  - inside a Params struct at offset 64 (alignas(64), CUDA 12's header)
 *    and at 128 (alignas(128), CUDA 13's);
 *  - after cuTensorMapReplaceAddress moved it to another buffer;
 *  - in a graph's kernel node, at cuGraphLaunch;
 *  - made through cuGetProcAddress, as the runtime and cuBLAS reach it.
 * And encodes on some threads while others launch (make tsan runs it). */
#include "tests/integration/shim/rig.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#define LIMIT (64 * MiB)
#define BUF (8 * MiB)
#define WORDS (BUF / 4)

/* ---- fake kernels that read through a descriptor ---------------------------- */

static uint64_t sum_through(const void *map)
{
    const uint32_t *w = (const uint32_t *)(uintptr_t)fakecuda_tensor_map_address(map);
    return w ? rig_host_sum(w, WORDS) : 0;
}

/* tm_sum(CUtensorMap map, uint64_t *out): *out = the sum of the buffer's
 * words. tm_struct64/128(struct params p, uint64_t *out): the same through
 * the descriptor at p's offset 64 or 128. */
static void tm_sum(fakecuda_dim3 g, fakecuda_dim3 b, void **params)
{
    (void)g;
    (void)b;
    uint64_t s = sum_through(params[0]);
    memcpy((void *)(uintptr_t)*(CUdeviceptr *)params[1], &s, sizeof s);
}

static void tm_struct64(fakecuda_dim3 g, fakecuda_dim3 b, void **params)
{
    (void)g;
    (void)b;
    uint64_t s = sum_through((const unsigned char *)params[0] + 64);
    memcpy((void *)(uintptr_t)*(CUdeviceptr *)params[1], &s, sizeof s);
}

static void tm_struct128(fakecuda_dim3 g, fakecuda_dim3 b, void **params)
{
    (void)g;
    (void)b;
    uint64_t s = sum_through((const unsigned char *)params[0] + 128);
    memcpy((void *)(uintptr_t)*(CUdeviceptr *)params[1], &s, sizeof s);
}

/* CUTLASS-like Params: a descriptor amid scalars (never pointers). The
 * first as CUDA 12's headers lay it out (CUtensorMap alignas(64): this
 * cuda.h's is alignas(128), so its bytes stand in), the second as 13's. */
struct params64 {
    _Alignas(64) uint64_t mnk[8]; /* m, n, k, scalars */
    _Alignas(64) unsigned char map[128]; /* offset 64 */
    uint64_t tail[8];
};
struct params128 {
    _Alignas(128) uint64_t mnk[16];
    CUtensorMap map; /* offset 128 */
    uint64_t tail[16];
};
_Static_assert(offsetof(struct params64, map) == 64, "struct params64");
_Static_assert(offsetof(struct params128, map) == 128, "struct params128");

static CUfunction kernel(const char *name)
{
    static const size_t sum_sizes[] = {sizeof(CUtensorMap), sizeof(CUdeviceptr)};
    static const size_t sum_aligns[] = {64, 0};
    static const size_t s64_sizes[] = {sizeof(struct params64), sizeof(CUdeviceptr)};
    static const size_t s64_aligns[] = {64, 0};
    static const size_t s128_sizes[] = {sizeof(struct params128), sizeof(CUdeviceptr)};
    static const size_t s128_aligns[] = {128, 0};
    ck_assert_int_eq(fakecuda_register_kernel_aligned("tm_sum", tm_sum, 2, sum_sizes, sum_aligns), 0);
    ck_assert_int_eq(fakecuda_register_kernel_aligned("tm_struct64", tm_struct64, 2, s64_sizes, s64_aligns), 0);
    ck_assert_int_eq(fakecuda_register_kernel_aligned("tm_struct128", tm_struct128, 2, s128_sizes, s128_aligns),
                     0);
    CUmodule m;
    CUfunction f;
    CU_OK(cuModuleLoadData(&m, "fakecuda"));
    CU_OK(cuModuleGetFunction(&f, m, name));
    return f;
}

/* ---- the rig ------------------------------------------------------------------ */

static size_t recorded(void)
{
    size_t (*get)(void) = (size_t (*)(void))dlsym(RTLD_DEFAULT, "spillway_tensor_maps");
    ck_assert_ptr_nonnull((void *)get);
    return get();
}

/* A 1D UINT32 descriptor over p's WORDS words. */
static void encode(CUtensorMap *m, CUdeviceptr p)
{
    const cuuint64_t dim[] = {WORDS};
    const cuuint32_t box[] = {256}, es[] = {1};
    size_t before = recorded();
    CU_OK(cuTensorMapEncodeTiled(m, CU_TENSOR_MAP_DATA_TYPE_UINT32, 1, (void *)(uintptr_t)p, dim, NULL, box, es,
                                 CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                 CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    ck_assert_uint_eq(recorded(), before + 1);
    uint64_t words[16]; /* m may be only 64-aligned (a struct member) */
    memcpy(words, (const void *)m, sizeof words);
    for (unsigned i = 0; i < 16; i++) /* the case this suite is about */
        ck_assert_uint_ne(words[i], p);
}

/* Sends every buffer of the device but what it leaves room for to the
 * host: a buffer that fills the limit, written, freed, then a sync (a
 * sync point: its pages are free again, for a fill to take). */
static void squeeze(void)
{
    CUdeviceptr x = 0;
    CU_OK(cuMemAlloc(&x, LIMIT - 2 * MiB));
    CU_OK(cuMemsetD32(x, 0x33333333u, (LIMIT - 2 * MiB) / 4));
    CU_OK(cuMemFree(x));
    CU_OK(cuCtxSynchronize());
}

struct rig {
    CUdeviceptr w, out; /* the weights (seed 700), reached only through the descriptor; the sum */
    uint64_t want;
};

static void rig_up(struct rig *r, unsigned seed)
{
    rig_setup(0);
    CU_OK(cuMemAlloc(&r->out, sizeof(uint64_t)));
    r->w = rig_filled(BUF, seed);
    /* A copy from pageable memory may still run on the legacy stream when
     * it returns; the race case's kernels run on non-blocking streams,
     * which do not wait for it. */
    CU_OK(cuCtxSynchronize());
    uint32_t *host = rig_expected(BUF, seed);
    r->want = rig_host_sum(host, WORDS);
    free(host);
}

static void squeezed(CUdeviceptr w, const char *how)
{
    squeeze();
    ck_assert_msg(rig_resident(w, BUF, 0) < BUF, "%s: nothing spilled", how);
}

/* After the launch: the sum is right and the buffer is back on the
 * device. */
static void filled_back(const struct rig *r, CUdeviceptr w, uint64_t want, const char *how)
{
    CU_OK(cuCtxSynchronize());
    uint64_t got = 0;
    CU_OK(cuMemcpyDtoH(&got, r->out, sizeof got));
    ck_assert_msg(got == want, "%s: the kernel summed %llu, not %llu", how, (unsigned long long)got,
                  (unsigned long long)want);
    ck_assert_msg(rig_resident(w, BUF, 0) == BUF, "%s: %zu of %zu bytes on the device after the launch", how,
                  rig_resident(w, BUF, 0), (size_t)BUF);
}

static void launch(CUfunction f, void **args)
{
    CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
}

/* ---- the cases ---------------------------------------------------------------- */

START_TEST(a_descriptor_parameter_fills_its_buffer_back)
{
    struct rig r;
    rig_up(&r, 700);
    CUfunction f = kernel("tm_sum");
    CUtensorMap m;
    encode(&m, r.w);
    for (int round = 0; round < 3; round++) {
        squeezed(r.w, "parameter");
        launch(f, (void *[]){&m, &r.out});
        filled_back(&r, r.w, r.want, "parameter");
    }
}
END_TEST

START_TEST(a_descriptor_in_the_extra_buffer_fills_its_buffer_back)
{
    struct rig r;
    rig_up(&r, 701);
    CUfunction f = kernel("tm_sum");
    static _Alignas(128) unsigned char buf[256]; /* map at 0, out at 128 */
    encode((CUtensorMap *)(void *)buf, r.w);
    memcpy(buf + 128, &r.out, sizeof r.out);
    size_t size = 136;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
    squeezed(r.w, "extra buffer");
    CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra));
    filled_back(&r, r.w, r.want, "extra buffer");
}
END_TEST

START_TEST(a_descriptor_at_offset_64_of_a_struct_fills_its_buffer_back)
{
    struct rig r;
    rig_up(&r, 702);
    CUfunction f = kernel("tm_struct64");
    struct params64 p = {.mnk = {4096, 4096, 1024, 1, 3}, .tail = {7, 7}};
    encode((CUtensorMap *)(void *)p.map, r.w);
    squeezed(r.w, "struct, offset 64");
    launch(f, (void *[]){&p, &r.out});
    filled_back(&r, r.w, r.want, "struct, offset 64");
}
END_TEST

START_TEST(a_descriptor_at_offset_128_of_a_struct_fills_its_buffer_back)
{
    struct rig r;
    rig_up(&r, 703);
    CUfunction f = kernel("tm_struct128");
    struct params128 p = {.mnk = {4096, 4096, 1024, 1, 3}, .tail = {9, 9}};
    encode(&p.map, r.w);
    squeezed(r.w, "struct, offset 128");
    launch(f, (void *[]){&p, &r.out});
    filled_back(&r, r.w, r.want, "struct, offset 128");
}
END_TEST

/* cuTensorMapReplaceAddress (CUTLASS's and Triton's way of reusing a
 * descriptor for the next buffer): the launch fills the new buffer. */
START_TEST(a_replaced_address_fills_the_new_buffer_back)
{
    struct rig r;
    rig_up(&r, 704);
    CUfunction f = kernel("tm_sum");
    CUdeviceptr v = rig_filled(BUF, 705);
    uint32_t *host = rig_expected(BUF, 705);
    uint64_t want = rig_host_sum(host, WORDS);
    free(host);
    CUtensorMap m;
    encode(&m, r.w);
    size_t before = recorded();
    CU_OK(cuTensorMapReplaceAddress(&m, (void *)(uintptr_t)v));
    ck_assert_uint_eq(recorded(), before + 1);
    squeezed(v, "replaced address");
    launch(f, (void *[]){&m, &r.out});
    filled_back(&r, v, want, "replaced address");
    CU_OK(cuMemFree(v));
}
END_TEST

/* A graph's kernel node: what it names is read at the instantiation, and
 * every cuGraphLaunch fills it back. */
START_TEST(a_graph_kernel_node_with_a_descriptor_fills_its_buffer_back)
{
    struct rig r;
    rig_up(&r, 706);
    CUfunction f = kernel("tm_sum");
    CUtensorMap m;
    encode(&m, r.w);
    CUgraph g;
    CU_OK(cuGraphCreate(&g, 0));
    CUDA_KERNEL_NODE_PARAMS kp;
    memset(&kp, 0, sizeof kp);
    kp.func = f;
    kp.gridDimX = kp.gridDimY = kp.gridDimZ = 1;
    kp.blockDimX = kp.blockDimY = kp.blockDimZ = 1;
    kp.kernelParams = (void *[]){&m, &r.out};
    CUgraphNode n;
    CU_OK(cuGraphAddKernelNode(&n, g, NULL, 0, &kp));
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    for (int round = 0; round < 3; round++) {
        squeezed(r.w, "graph launch");
        CU_OK(cuGraphLaunch(e, NULL));
        filled_back(&r, r.w, r.want, "graph launch");
    }
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
}
END_TEST

/* The runtime (cudaGetDriverEntryPoint) and cuBLAS get the encode from
 * cuGetProcAddress: spillway's handler, which records. */
START_TEST(an_encode_looked_up_by_version_is_recorded)
{
    struct rig r;
    rig_up(&r, 707);
    CUfunction f = kernel("tm_sum");
    __typeof__(cuTensorMapEncodeTiled) *enc = NULL;
    CUdriverProcAddressQueryResult q;
    CU_OK(cuGetProcAddress("cuTensorMapEncodeTiled", (void **)&enc, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &q));
    ck_assert_ptr_nonnull((void *)enc);
    const cuuint64_t dim[] = {WORDS};
    const cuuint32_t box[] = {256}, es[] = {1};
    CUtensorMap m;
    size_t before = recorded();
    CU_OK(enc(&m, CU_TENSOR_MAP_DATA_TYPE_UINT32, 1, (void *)(uintptr_t)r.w, dim, NULL, box, es,
              CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
              CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    ck_assert_uint_eq(recorded(), before + 1);
    squeezed(r.w, "looked-up encode");
    launch(f, (void *[]){&m, &r.out});
    filled_back(&r, r.w, r.want, "looked-up encode");
}
END_TEST

/* Threads making descriptors (each over its own 64 KiB buffer, then
 * moving it with ReplaceAddress) while others launch kernels through
 * descriptors: every sum right, nothing refused. Under make tsan, no race
 * report. */
enum { ENCODERS = 2, LAUNCHERS = 2, ROUNDS = 200, SMALL = 64 << 10 };
static CUcontext shared_ctx;
static _Atomic int race_failed;

static void *encoder(void *arg)
{
    (void)arg;
    if (cuCtxSetCurrent(shared_ctx) != CUDA_SUCCESS)
        return (void *)1;
    CUdeviceptr a = 0, b = 0;
    if (cuMemAlloc(&a, SMALL) != CUDA_SUCCESS || cuMemAlloc(&b, SMALL) != CUDA_SUCCESS)
        atomic_store(&race_failed, 1);
    const cuuint64_t dim[] = {SMALL / 4};
    const cuuint32_t box[] = {256}, es[] = {1};
    for (int i = 0; i < ROUNDS && !atomic_load(&race_failed); i++) {
        CUtensorMap m;
        if (cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_UINT32, 1, (void *)(uintptr_t)a, dim, NULL, box, es,
                                   CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                   CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS ||
            cuTensorMapReplaceAddress(&m, (void *)(uintptr_t)b) != CUDA_SUCCESS)
            atomic_store(&race_failed, 2);
    }
    cuMemFree(a);
    cuMemFree(b);
    return NULL;
}

static void *launcher(void *arg)
{
    const struct rig *r = arg;
    if (cuCtxSetCurrent(shared_ctx) != CUDA_SUCCESS)
        return (void *)1;
    CUfunction f;
    CUmodule mod;
    CUstream s;
    CUdeviceptr out;
    if (cuModuleLoadData(&mod, "fakecuda") != CUDA_SUCCESS || cuModuleGetFunction(&f, mod, "tm_sum") != CUDA_SUCCESS ||
        cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS || cuMemAlloc(&out, 8) != CUDA_SUCCESS) {
        atomic_store(&race_failed, 3);
        return NULL;
    }
    CUtensorMap m;
    const cuuint64_t dim[] = {WORDS};
    const cuuint32_t box[] = {256}, es[] = {1};
    if (cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_UINT32, 1, (void *)(uintptr_t)r->w, dim, NULL, box, es,
                               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                               CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
        atomic_store(&race_failed, 4);
    for (int i = 0; i < ROUNDS / 10 && !atomic_load(&race_failed); i++) {
        uint64_t got = 0;
        void *args[] = {&m, &out};
        if (cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL) != CUDA_SUCCESS ||
            cuMemcpyDtoHAsync(&got, out, sizeof got, s) != CUDA_SUCCESS || cuStreamSynchronize(s) != CUDA_SUCCESS)
            atomic_store(&race_failed, 5);
        else if (got != r->want)
            atomic_store(&race_failed, 6);
    }
    cuMemFree(out);
    cuStreamDestroy(s);
    return NULL;
}

START_TEST(encodes_race_launches)
{
    struct rig r;
    rig_up(&r, 708);
    kernel("tm_sum");
    CU_OK(cuCtxGetCurrent(&shared_ctx));
    pthread_t t[ENCODERS + LAUNCHERS];
    for (int i = 0; i < ENCODERS + LAUNCHERS; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, i < ENCODERS ? encoder : launcher, &r), 0);
    for (int i = 0; i < ENCODERS + LAUNCHERS; i++) {
        void *ret = NULL;
        ck_assert_int_eq(pthread_join(t[i], &ret), 0);
        ck_assert_ptr_null(ret);
    }
    ck_assert_int_eq(atomic_load(&race_failed), 0);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("shim_tensor_maps");
    TCase *tc = tcase_create("tensor_maps");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, a_descriptor_parameter_fills_its_buffer_back);
    tcase_add_test(tc, a_descriptor_in_the_extra_buffer_fills_its_buffer_back);
    tcase_add_test(tc, a_descriptor_at_offset_64_of_a_struct_fills_its_buffer_back);
    tcase_add_test(tc, a_descriptor_at_offset_128_of_a_struct_fills_its_buffer_back);
    tcase_add_test(tc, a_replaced_address_fills_the_new_buffer_back);
    tcase_add_test(tc, a_graph_kernel_node_with_a_descriptor_fills_its_buffer_back);
    tcase_add_test(tc, an_encode_looked_up_by_version_is_recorded);
    tcase_add_test(tc, encodes_race_launches);
    suite_add_tcase(s, tc);
    return s;
}
