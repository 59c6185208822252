/* What spillway's copy handlers cost (not run by `make test`: timings).
 *   copy_bench fakecuda   4-byte and empty copies against the driver the
 *                         program is linked with (fakecuda): run it with and
 *                         without LD_PRELOAD=libspillway.so and compare; also
 *                         the driver's cuPointerGetAttribute and
 *                         cuCtxGetDevice
 *   copy_bench spy BUILD  the handler alone: the spy driver (a copy is a
 *                         function call) called directly, then through
 *                         libspillway.so dlopen'ed in front of it
 * Prints one "name ns/call" line per measurement: the best of 5 runs. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* Best ns per call of body over n iterations, 5 runs. */
#define TIME(name, n, body)                                              \
    do {                                                                 \
        double best_ = 1e30;                                             \
        for (int run_ = 0; run_ < 5; run_++) {                           \
            double t0_ = now_ns();                                       \
            for (long i_ = 0; i_ < (n); i_++) {                          \
                if ((body) != CUDA_SUCCESS) {                            \
                    fprintf(stderr, "%s failed\n", name);                \
                    exit(1);                                             \
                }                                                        \
            }                                                            \
            double per_ = (now_ns() - t0_) / (double)(n);                \
            if (per_ < best_)                                            \
                best_ = per_;                                            \
        }                                                                \
        printf("%-34s %9.1f ns/call\n", name, best_);                    \
    } while (0)

#define CHECK(call)                                                      \
    do {                                                                 \
        if ((call) != CUDA_SUCCESS) {                                    \
            fprintf(stderr, "%s failed\n", #call);                       \
            return 1;                                                    \
        }                                                                \
    } while (0)

static CUresult sync_every(long i, long every)
{
    return i % every == every - 1 ? cuCtxSynchronize() : CUDA_SUCCESS;
}

static int bench_fakecuda(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr a, b;
    static char host[64];
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuMemAlloc(&a, 4096));
    CHECK(cuMemAlloc(&b, 4096));
    CUdeviceptr h = (CUdeviceptr)(uintptr_t)host;
    printf("under spillway: %s\n", dlsym(RTLD_DEFAULT, "spillway_get_counters") ? "yes" : "no");
    const long n = 100000;
    TIME("cuMemcpyHtoD 4 B (pageable)", n, cuMemcpyHtoD(a, host, 4));
    TIME("cuMemcpyDtoH 4 B (pageable)", n, cuMemcpyDtoH(host, a, 4));
    TIME("cuMemcpyDtoDAsync 4 B", n, cuMemcpyDtoDAsync(b, a, 4, NULL) || sync_every(i_, 1000));
    TIME("cuMemcpy 4 B host to device", n, cuMemcpy(a, h, 4));
    TIME("cuMemcpyAsync 4 B device to device", n,
         cuMemcpyAsync(b, a, 4, NULL) || sync_every(i_, 1000));
    /* fakecuda answers a copy of nothing after finding the stream, before
     * any queueing: what is left is mostly spillway's handler, which
     * classifies the sides all the same (only the final add is skipped). */
    TIME("cuMemcpyHtoD 0 B", n, cuMemcpyHtoD(a, host, 0));
    TIME("cuMemcpy 0 B host to device", n, cuMemcpy(a, h, 0));
    TIME("cuMemcpy 0 B host to host", n, cuMemcpy(h, h, 0));
    CUdeviceptr m;
    CHECK(cuMemAllocManaged(&m, 4096, CU_MEM_ATTACH_GLOBAL));
    TIME("cuMemcpy 0 B h to d, managed live", n, cuMemcpy(a, h, 0));
    CHECK(cuMemFree(m));
    unsigned type;
    TIME("cuPointerGetAttribute host ptr", n,
         (cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, h), CUDA_SUCCESS));
    CUdevice d;
    TIME("cuCtxGetDevice", n, cuCtxGetDevice(&d));
    CHECK(cuCtxSynchronize());
    return 0;
}

typedef CUresult (*htod_fn)(CUdeviceptr, const void *, size_t);
typedef CUresult (*dtod_async_fn)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
typedef CUresult (*memcpy_fn)(CUdeviceptr, CUdeviceptr, size_t);

static int bench_spy(const char *build)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/unit/shim/libspydriver.so", build);
    setenv("SPILLWAY_DRIVER", path, 1);
    void *spy = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    snprintf(path, sizeof path, "%s/libspillway.so", build);
    void *shim = spy ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!shim) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    int *count = dlsym(spy, "spy_device_count");
    if (!count)
        return 1;
    *count = 1; /* one device: no context query, as most processes */
    static char host[64];
    CUdeviceptr dev = 0x10000000, h = (CUdeviceptr)(uintptr_t)host;
    const long n = 10000000;
    htod_fn d_htod = (htod_fn)dlsym(spy, "cuMemcpyHtoD_v2"),
            s_htod = (htod_fn)dlsym(shim, "cuMemcpyHtoD_v2");
    dtod_async_fn d_dtod = (dtod_async_fn)dlsym(spy, "cuMemcpyDtoDAsync_v2_ptsz"),
                  s_dtod = (dtod_async_fn)dlsym(shim, "cuMemcpyDtoDAsync_v2_ptsz");
    memcpy_fn d_cpy = (memcpy_fn)dlsym(spy, "cuMemcpy"), s_cpy = (memcpy_fn)dlsym(shim, "cuMemcpy");
    if (!d_htod || !s_htod || !d_dtod || !s_dtod || !d_cpy || !s_cpy)
        return 1;
    TIME("spy cuMemcpyHtoD_v2 direct", n, d_htod(dev, host, 4));
    TIME("spy cuMemcpyHtoD_v2 via spillway", n, s_htod(dev, host, 4));
    TIME("spy cuMemcpyDtoDAsync_v2_ptsz direct", n, d_dtod(dev, dev + 64, 4, NULL));
    TIME("spy cuMemcpyDtoDAsync_v2_ptsz via spillway", n, s_dtod(dev, dev + 64, 4, NULL));
    TIME("spy cuMemcpy direct", n, d_cpy(dev, h, 4));
    TIME("spy cuMemcpy via spillway", n, s_cpy(dev, h, 4));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "fakecuda") == 0)
        return bench_fakecuda();
    if (argc >= 3 && strcmp(argv[1], "spy") == 0)
        return bench_spy(argv[2]);
    fprintf(stderr, "usage: copy_bench fakecuda | copy_bench spy BUILD\n");
    return 64;
}
