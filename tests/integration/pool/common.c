/* The pool suites' shared helpers (common.h). */
#include "tests/integration/pool/common.h"

#include "stats/reader.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int (*get_pool)(int, struct spillway_pool_counters *);
int (*get_counters)(int, struct spillway_counters *);

/* Whether spillway serves this run (preloaded and not disabled). */
int pooled(void)
{
    *(void **)&get_pool = dlsym(RTLD_DEFAULT, "spillway_get_pool_counters");
    *(void **)&get_counters = dlsym(RTLD_DEFAULT, "spillway_get_counters");
    const char *d = getenv("SPILLWAY_DISABLE");
    return get_pool && !(d && strcmp(d, "1") == 0);
}

int preallocating(void)
{
    const char *v = getenv("SPILLWAY_PREALLOCATE");
    return !v || strcmp(v, "0") != 0;
}

size_t limit_bytes(void)
{
    return 64 * MiB; /* pool.sh's SPILLWAY_MEM_LIMIT */
}

CUcontext use_device(int dev)
{
    CUcontext c;
    CU_OK(cuInit(0));
    CU_OK(cuDevicePrimaryCtxRetain(&c, dev));
    CU_OK(cuCtxSetCurrent(c));
    return c;
}

struct spillway_pool_counters pool_counters(int dev)
{
    struct spillway_pool_counters c;
    ck_assert_int_eq(get_pool(dev, &c), 0);
    return c;
}

uint64_t used_on(int dev)
{
    struct spillway_counters c;
    ck_assert_int_eq(get_counters(dev, &c), 0);
    return c.used;
}

size_t outside_pool(int dev)
{
    return fakecuda_device_bytes_used(dev) - pool_counters(dev).pool_bytes;
}

int read_stats(struct spw_stats_snapshot *snap)
{
    const char *dir = getenv("SPILLWAY_STATS_DIR");
    if (!dir)
        return -1;
    char name[64];
    snprintf(name, sizeof name, "spillway.%u.%d", (unsigned)getuid(), (int)getpid());
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return -1;
    char why[256];
    int removed = 0;
    enum spw_read_result r = spw_stats_read_at(fd, name, 0, snap, &removed, why, sizeof why);
    close(fd);
    return r == SPW_READ_OK ? 0 : -1;
}

void fill_pattern(unsigned char *buf, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = (unsigned char)(seed + i * 31 + (i >> 12));
}

void put(CUdeviceptr p, size_t n, unsigned seed)
{
    unsigned char *buf = malloc(n);
    ck_assert_ptr_nonnull(buf);
    fill_pattern(buf, n, seed);
    CU_OK(cuMemcpyHtoD(p, buf, n));
    free(buf);
}

void expect(CUdeviceptr p, size_t n, unsigned seed)
{
    unsigned char *got = malloc(n), *want = malloc(n);
    ck_assert(got && want);
    CU_OK(cuMemcpyDtoH(got, p, n));
    fill_pattern(want, n, seed);
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i])
            ck_abort_msg("byte %zu of %zu at %#llx is %u, expected %u", i, n,
                         (unsigned long long)p, got[i], want[i]);
    free(got);
    free(want);
}

void expect_byte(CUdeviceptr p, size_t n, unsigned char v)
{
    unsigned char *got = malloc(n);
    ck_assert_ptr_nonnull(got);
    CU_OK(cuMemcpyDtoH(got, p, n));
    for (size_t i = 0; i < n; i++)
        if (got[i] != v)
            ck_abort_msg("byte %zu of %zu is %#x, expected %#x", i, n, got[i], v);
    free(got);
}

/* slow_fill(ptr, byte, n, ms): sleeps ms, then writes n bytes at ptr on the
 * stream's worker thread, as a kernel would: a reused block it still writes
 * shows as corruption, an unmapped one as SIGSEGV. */
static void slow_fill(fakecuda_dim3 g, fakecuda_dim3 b, void **params)
{
    (void)g;
    (void)b;
    CUdeviceptr p = *(CUdeviceptr *)params[0];
    unsigned v = *(unsigned *)params[1];
    size_t n = *(size_t *)params[2];
    unsigned ms = *(unsigned *)params[3];
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    memset((void *)(uintptr_t)p, (int)v, n);
}

CUfunction slow_kernel(void)
{
    static const size_t sizes[] = {sizeof(CUdeviceptr), sizeof(unsigned), sizeof(size_t),
                                   sizeof(unsigned)};
    ck_assert_msg(fakecuda_present(), "needs fakecuda");
    ck_assert_int_eq(fakecuda_register_kernel("slow_fill", slow_fill, 4, sizes), 0);
    CUmodule m;
    CUfunction f;
    CU_OK(cuModuleLoadData(&m, "fakecuda"));
    CU_OK(cuModuleGetFunction(&f, m, "slow_fill"));
    return f;
}

void launch_slow(CUfunction f, CUdeviceptr p, unsigned v, size_t n, unsigned ms,
                        CUstream s)
{
    void *args[] = {&p, &v, &n, &ms};
    CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
}

CUmemAllocationProp device_prop(int dev)
{
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    return prop;
}

void set_rw(CUdeviceptr va, size_t n, int dev)
{
    CUmemAccessDesc d = {{CU_MEM_LOCATION_TYPE_DEVICE, dev}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CU_OK(cuMemSetAccess(va, n, &d, 1));
}
