/* The suites' shared helpers (rig.h). */
#include "tests/integration/shim/rig.h"

#include "stats/reader.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

CUcontext rig_setup(int dev)
{
    ck_assert_msg(dlsym(RTLD_DEFAULT, "spillway_get_counters") != NULL,
                  "not running under spillway (LD_PRELOAD)");
    ck_assert_msg(fakecuda_present(), "needs fakecuda");
    CUcontext ctx;
    CU_OK(cuInit(0));
    CU_OK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU_OK(cuCtxSetCurrent(ctx));
    return ctx;
}

/* ---- counters -------------------------------------------------------------- */

uint64_t rig_stat(int dev, enum spw_counter k)
{
    static struct spw_stats_snapshot snap; /* large: not on the stack */
    const char *dir = getenv("SPILLWAY_STATS_DIR");
    ck_assert_msg(dir != NULL, "SPILLWAY_STATS_DIR is not set: run me through my script");
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    ck_assert_int_ge(fd, 0);
    char name[64], why[256];
    snprintf(name, sizeof name, SPW_STATS_NAME_PREFIX "%u.%d", (unsigned)geteuid(), (int)getpid());
    int removed = 0;
    enum spw_read_result r = spw_stats_read_at(fd, name, 0, &snap, &removed, why, sizeof why);
    close(fd);
    ck_assert_msg(r == SPW_READ_OK, "segment %s: %d %s", name, r, why);
    return snap.c[dev][k];
}

struct spillway_counters rig_counters(int dev)
{
    int (*get)(int, struct spillway_counters *) =
        (int (*)(int, struct spillway_counters *))dlsym(RTLD_DEFAULT, "spillway_get_counters");
    struct spillway_counters c;
    ck_assert_ptr_nonnull((void *)get);
    ck_assert_int_eq(get(dev, &c), 0);
    return c;
}

struct spillway_pool_counters rig_pool(int dev)
{
    int (*get)(int, struct spillway_pool_counters *) =
        (int (*)(int, struct spillway_pool_counters *))dlsym(RTLD_DEFAULT,
                                                             "spillway_get_pool_counters");
    struct spillway_pool_counters c;
    ck_assert_ptr_nonnull((void *)get);
    ck_assert_int_eq(get(dev, &c), 0);
    return c;
}

/* ---- buffers of a known content ------------------------------------------- */

uint32_t rig_pattern(size_t i, unsigned seed)
{
    return (uint32_t)(i * 2654435761u + seed * 40503u + 1u);
}

uint32_t *rig_expected(size_t bytes, unsigned seed)
{
    uint32_t *w = malloc(bytes);
    ck_assert_ptr_nonnull(w);
    for (size_t i = 0; i < bytes / 4; i++)
        w[i] = rig_pattern(i, seed);
    return w;
}

int rig_driver_has(int version)
{
    int v = 0;
    CU_OK(cuDriverGetVersion(&v));
    return v >= version;
}

CUdeviceptr rig_filled(size_t bytes, unsigned seed)
{
    CUdeviceptr p = 0;
    CU_OK(cuMemAlloc(&p, bytes));
    uint32_t *w = rig_expected(bytes, seed);
    CU_OK(cuMemcpyHtoD(p, w, bytes));
    free(w);
    return p;
}

void rig_expect_words(CUdeviceptr p, const uint32_t *want, size_t bytes, const char *what)
{
    uint32_t *got = malloc(bytes);
    ck_assert_ptr_nonnull(got);
    CU_OK(cuMemcpyDtoH(got, p, bytes));
    if (memcmp(got, want, bytes) != 0) {
        size_t i = 0;
        while (got[i] == want[i])
            i++;
        ck_abort_msg("%s: word %zu of %zu is %#x, expected %#x", what, i, bytes / 4, got[i],
                     want[i]);
    }
    free(got);
}

void rig_expect_pattern(CUdeviceptr p, size_t bytes, unsigned seed, const char *what)
{
    uint32_t *w = rig_expected(bytes, seed);
    rig_expect_words(p, w, bytes, what);
    free(w);
}

/* ---- kernels --------------------------------------------------------------- */

uint32_t rig_step(uint32_t w, unsigned k)
{
    return w * 1664525u + 1013904223u + k;
}

uint64_t rig_host_sum(const uint32_t *w, size_t n)
{
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++)
        s += w[i];
    return s;
}

static void sum_u32(fakecuda_dim3 g, fakecuda_dim3 b, void **params)
{
    (void)g;
    (void)b;
    const uint32_t *w = (const uint32_t *)(uintptr_t)(*(CUdeviceptr *)params[0]);
    size_t n = *(size_t *)params[1];
    uint64_t *out = (uint64_t *)(uintptr_t)(*(CUdeviceptr *)params[2]);
    *out = rig_host_sum(w, n);
}

static void step_u32(fakecuda_dim3 g, fakecuda_dim3 b, void **params)
{
    (void)g;
    (void)b;
    uint32_t *w = (uint32_t *)(uintptr_t)(*(CUdeviceptr *)params[0]);
    size_t n = *(size_t *)params[1];
    unsigned k = *(unsigned *)params[2];
    for (size_t i = 0; i < n; i++)
        w[i] = rig_step(w[i], k);
}

CUfunction rig_kernel(const char *name)
{
    static const size_t sum_sizes[] = {sizeof(CUdeviceptr), sizeof(size_t), sizeof(CUdeviceptr)};
    static const size_t step_sizes[] = {sizeof(CUdeviceptr), sizeof(size_t), sizeof(unsigned)};
    ck_assert_int_eq(fakecuda_register_kernel("sum_u32", sum_u32, 3, sum_sizes), 0);
    ck_assert_int_eq(fakecuda_register_kernel("step_u32", step_u32, 3, step_sizes), 0);
    CUmodule m;
    CUfunction f;
    CU_OK(cuModuleLoadData(&m, "fakecuda"));
    CU_OK(cuModuleGetFunction(&f, m, name));
    return f;
}

/* ---- residency ------------------------------------------------------------- */

size_t rig_resident(CUdeviceptr p, size_t bytes, int dev)
{
    ck_assert_ptr_nonnull((void *)fakecuda_mapped_location);
    const size_t page = 2 * MiB; /* fakecuda's granularity */
    size_t n = 0;
    for (CUdeviceptr a = p; a < p + bytes;) {
        CUdeviceptr next = (a / page + 1) * page;
        if (next > p + bytes)
            next = p + bytes;
        int where = fakecuda_mapped_location(a);
        ck_assert_msg(where >= -1, "nothing mapped at %#llx", (unsigned long long)a);
        if (where == dev)
            n += next - a;
        a = next;
    }
    return n;
}

void rig_squeeze(size_t bytes)
{
    CUdeviceptr x = 0;
    CU_OK(cuMemAlloc(&x, bytes));
    CU_OK(cuMemsetD32(x, 0x33333333u, bytes / 4));
    CU_OK(cuMemFree(x));
    CU_OK(cuCtxSynchronize());
}
