/* A CUDA program (linked with -lcuda) that the env suite runs with and
 * without spillway, under different environments. One command per run:
 *   info              per device: total and free (cuMemGetInfo_v2), cuDeviceTotalMem_v2
 *   fill DEV CHUNK    cuMemAlloc_v2 CHUNK bytes on DEV until it fails
 *   alloc DEV BYTES   one cuMemAlloc_v2
 *   takefree DEV [N SIZE]  one cuMemAlloc_v2 of what cuMemGetInfo_v2 says is
 *                     free (after N allocations of SIZE bytes, if given)
 *   errors            the codes of bad calls (bad pointer, double free, NULL,
 *                     copies the driver refuses ...)
 * It prints "probe: main" first, so a run that stops before main shows. */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The CUDA 11.3 ABI, which cuda.h declares only for its own build. */
#undef cuGetProcAddress
CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);

/* Per-thread variants, which cuda.h declares only for its own build. */
__typeof__(cuMemcpyHtoD_v2) cuMemcpyHtoD_v2_ptds;
__typeof__(cuMemcpyDtoDAsync_v2) cuMemcpyDtoDAsync_v2_ptsz;

static int use_device(int dev)
{
    CUcontext ctx;
    CUresult r = cuInit(0);
    if (r == CUDA_SUCCESS)
        r = cuDevicePrimaryCtxRetain(&ctx, dev);
    if (r == CUDA_SUCCESS)
        r = cuCtxSetCurrent(ctx);
    if (r != CUDA_SUCCESS)
        printf("cannot use device %d: %d\n", dev, r);
    return r == CUDA_SUCCESS ? 0 : -1;
}

static int info(void)
{
    int n = 0;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&n) != CUDA_SUCCESS)
        return 1;
    printf("devices %d\n", n);
    for (int d = 0; d < n; d++) {
        size_t f = 0, t = 0, dt = 0;
        if (use_device(d) || cuMemGetInfo_v2(&f, &t) || cuDeviceTotalMem_v2(&dt, d))
            return 1;
        printf("dev %d total %zu free %zu devtotal %zu\n", d, t, f, dt);
    }
    return 0;
}

static int fill(int dev, size_t chunk)
{
    if (use_device(dev))
        return 1;
    size_t bytes = 0;
    CUresult r;
    CUdeviceptr p;
    while ((r = cuMemAlloc_v2(&p, chunk)) == CUDA_SUCCESS)
        bytes += chunk;
    printf("fill %d bytes %zu err %d\n", dev, bytes, r);
    /* What every device reports now: only dev's memory was taken. */
    int n = 0;
    cuDeviceGetCount(&n);
    for (int d = 0; d < n; d++) {
        size_t f = 0, t = 0;
        if (use_device(d) || cuMemGetInfo_v2(&f, &t))
            return 1;
        printf("after dev %d total %zu free %zu\n", d, t, f);
    }
    return 0;
}

static int alloc(int dev, size_t size)
{
    if (use_device(dev))
        return 1;
    CUdeviceptr p;
    printf("alloc %d err %d\n", dev, cuMemAlloc_v2(&p, size));
    return 0;
}

/* What a program that sizes itself to the free figure does (TensorFlow's
 * BFC takes what is reported free): it must get it, also after n
 * allocations of size bytes took their pages. Nothing free: no allocation
 * to try (err -). */
static int takefree(int dev, int n, size_t size)
{
    size_t f = 0, t = 0;
    CUdeviceptr p;
    if (use_device(dev))
        return 1;
    for (int i = 0; i < n; i++)
        if (cuMemAlloc_v2(&p, size) != CUDA_SUCCESS) {
            printf("takefree %d: allocation %d of %zu bytes refused\n", dev, i, size);
            return 1;
        }
    if (cuMemGetInfo_v2(&f, &t))
        return 1;
    if (!f) {
        printf("takefree %d bytes 0 err -\n", dev);
        return 0;
    }
    printf("takefree %d bytes %zu err %d\n", dev, f, cuMemAlloc_v2(&p, f));
    return 0;
}

#define SHOW(name, call) printf("%s %d\n", name, (int)(call))

/* Before cuInit and before any context: spillway must answer with the
 * driver's codes, not its own, when it has nothing to look things up in. */
static void errors_without_context(void)
{
    CUdeviceptr p;
    size_t f, t;
    SHOW("alloc_before_init", cuMemAlloc_v2(&p, 1 << 20));
    cuInit(0);
    SHOW("alloc_without_context", cuMemAlloc_v2(&p, 1 << 20));
    SHOW("get_info_without_context", cuMemGetInfo_v2(&f, &t));
    CUdeviceptr bad = (CUdeviceptr)0xdead0000;
    char hbuf[64] = "probe";
    SHOW("copy_without_context", cuMemcpy(bad, bad, 16));
    SHOW("htod_without_context", cuMemcpyHtoD_v2(bad, hbuf, 16));
}

/* Copies the driver refuses (a pointer it does not know as device memory, a
 * stream that does not exist). */
static void errors_of_copies(void)
{
    CUdeviceptr bad = (CUdeviceptr)0xdead0000;
    char hbuf[64] = "probe";
    CUstream bad_stream = (CUstream)(uintptr_t)0x1234;
    SHOW("htod_bad_pointer", cuMemcpyHtoD_v2(bad, hbuf, 16));
    SHOW("htod_ptds_bad_pointer", cuMemcpyHtoD_v2_ptds(bad, hbuf, 16));
    SHOW("dtoh_bad_pointer", cuMemcpyDtoH_v2(hbuf, bad, 16));
    SHOW("dtod_bad_pointer", cuMemcpyDtoD_v2(bad, bad, 16));
    SHOW("htod_async_bad_pointer", cuMemcpyHtoDAsync_v2(bad, hbuf, 16, NULL));
    SHOW("dtoh_async_bad_pointer", cuMemcpyDtoHAsync_v2(hbuf, bad, 16, NULL));
    SHOW("dtod_async_ptsz_bad_pointer", cuMemcpyDtoDAsync_v2_ptsz(bad, bad, 16, NULL));
    SHOW("copy_async_bad_stream", cuMemcpyAsync(bad, bad, 16, bad_stream));
    SHOW("htod_async_bad_stream", cuMemcpyHtoDAsync_v2(bad, hbuf, 16, bad_stream));
}

static void errors_of_device_memory(void)
{
    CUdeviceptr p;
    size_t f, t, pitch;
    SHOW("free_bad_pointer", cuMemFree_v2((CUdeviceptr)0xdead0000));
    SHOW("free_null", cuMemFree_v2(0));
    cuMemAlloc_v2(&p, 1 << 20);
    SHOW("free_first", cuMemFree_v2(p));
    SHOW("free_double", cuMemFree_v2(p));
    SHOW("alloc_null_out", cuMemAlloc_v2(NULL, 1 << 20));
    SHOW("alloc_zero", cuMemAlloc_v2(&p, 0));
    SHOW("pitch_null_out", cuMemAllocPitch_v2(NULL, &pitch, 1024, 16, 4));
    SHOW("pitch_null_pitch", cuMemAllocPitch_v2(&p, NULL, 1024, 16, 4));
    SHOW("managed_null_out", cuMemAllocManaged(NULL, 1 << 20, CU_MEM_ATTACH_GLOBAL));
    SHOW("async_null_out", cuMemAllocAsync(NULL, 1 << 20, NULL));
    SHOW("free_async_bad_pointer", cuMemFreeAsync((CUdeviceptr)0xdead0000, NULL));
    cuMemAllocAsync(&p, 1 << 20, NULL);
    SHOW("free_async_first", cuMemFreeAsync(p, NULL));
    SHOW("free_async_double", cuMemFreeAsync(p, NULL));
    SHOW("get_info_null_null", cuMemGetInfo_v2(NULL, NULL));
    SHOW("get_info_null_free", cuMemGetInfo_v2(NULL, &t));
    SHOW("get_info_null_total", cuMemGetInfo_v2(&f, NULL));
    SHOW("total_mem_null", cuDeviceTotalMem_v2(NULL, 0));
    SHOW("total_mem_bad_device", cuDeviceTotalMem_v2(&t, 99));
}

static void errors_of_vmm(void)
{
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUmemGenericAllocationHandle h;
    SHOW("create_null_handle", cuMemCreate(NULL, 2 << 20, &prop, 0));
    SHOW("create_null_prop", cuMemCreate(&h, 2 << 20, NULL, 0));
    SHOW("create_bad_size", cuMemCreate(&h, 12345, &prop, 0));
    SHOW("release_bad_handle", cuMemRelease((CUmemGenericAllocationHandle)0x12345678));
    if (cuMemCreate(&h, 2 << 20, &prop, 0) == CUDA_SUCCESS) {
        SHOW("release_first", cuMemRelease(h));
        SHOW("release_double", cuMemRelease(h));
    }
}

static void errors_of_host_memory(void)
{
    void *hp;
    SHOW("alloc_host_null_out", cuMemAllocHost_v2(NULL, 1 << 20));
    SHOW("host_alloc_null_out", cuMemHostAlloc(NULL, 1 << 20, 0));
    SHOW("free_host_bad_pointer", cuMemFreeHost((void *)0xdead0000));
    cuMemAllocHost_v2(&hp, 1 << 20);
    SHOW("free_host_first", cuMemFreeHost(hp));
    SHOW("free_host_double", cuMemFreeHost(hp));
    static char page[8192] __attribute__((aligned(4096)));
    SHOW("host_unregister_unknown", cuMemHostUnregister(page));
    SHOW("host_register_null", cuMemHostRegister_v2(NULL, 4096, 0));
}

static void errors_of_get_proc_address(void)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult st;
    SHOW("gpa_null_symbol", cuGetProcAddress_v2(NULL, &fn, 12000, 0, &st));
    SHOW("gpa_null_out", cuGetProcAddress_v2("cuMemAlloc", NULL, 12000, 0, &st));
    SHOW("gpa_unknown", cuGetProcAddress_v2("cuNoSuchFunction", &fn, 12000, 0, &st));
    printf("gpa_unknown_status %d null %d\n", (int)st, fn == NULL);
    SHOW("gpa_v1_unknown", cuGetProcAddress("cuNoSuchFunction", &fn, 12000, 0));
}

/* The order matters: the first group runs before cuInit and any context,
 * and test_env.c compares the whole output with and without spillway. */
static int errors(void)
{
    errors_without_context();
    if (use_device(0))
        return 1;
    errors_of_copies();
    errors_of_device_memory();
    errors_of_vmm();
    errors_of_host_memory();
    errors_of_get_proc_address();
    return 0;
}

int main(int argc, char **argv)
{
    printf("probe: main\n");
    fflush(stdout);
    if (argc >= 2 && strcmp(argv[1], "info") == 0)
        return info();
    if (argc >= 4 && strcmp(argv[1], "fill") == 0)
        return fill(atoi(argv[2]), strtoull(argv[3], NULL, 0));
    if (argc >= 4 && strcmp(argv[1], "alloc") == 0)
        return alloc(atoi(argv[2]), strtoull(argv[3], NULL, 0));
    if (argc >= 5 && strcmp(argv[1], "takefree") == 0)
        return takefree(atoi(argv[2]), atoi(argv[3]), strtoull(argv[4], NULL, 0));
    if (argc >= 3 && strcmp(argv[1], "takefree") == 0)
        return takefree(atoi(argv[2]), 0, 0);
    if (argc >= 2 && strcmp(argv[1], "errors") == 0)
        return errors();
    fprintf(stderr, "usage: probe info|fill DEV CHUNK|alloc DEV BYTES|takefree DEV [N SIZE]|errors\n");
    return 64;
}
