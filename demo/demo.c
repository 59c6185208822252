/* spillway's demo: a plain CUDA driver-API program that sizes itself from
 * what the driver reports and then allocates until the driver refuses.
 * It finds the driver as XLA does (dlopen + dlsym), so the same binary runs
 * against the real driver or fakecuda, with or without spillway.
 *   spillway-demo         report, then fill device 0 in chunks of 1/8 of its total
 *   spillway-demo info    report only
 *   spillway-demo spill   hold 1.5x the reported total in chunks of 1/8, each
 *                         set to its own value, then read every word back
 *   spillway-demo arena   as JAX does by default: one cuMemCreate of 0.75 x
 *                         the reported total, mapped once, every 2 MiB set to
 *                         its own value and read back (under spillway with
 *                         SPILLWAY_OVERSUBSCRIBE=2, more than the device has)
 * Exits 0 when the fill ended in CUDA_ERROR_OUT_OF_MEMORY at or under the
 * reported total (spill, arena: when everything was allocated and read back
 * intact), 1 otherwise. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim/spillway.h"

#define MiB (1024.0 * 1024.0)
#define CHUNKS_MAX 64

static struct {
    CUresult (*init)(unsigned);
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*device_get_name)(char *, int, CUdevice);
    CUresult (*device_total_mem)(size_t *, CUdevice);
    CUresult (*primary_ctx_retain)(CUcontext *, CUdevice);
    CUresult (*ctx_set_current)(CUcontext);
    CUresult (*mem_get_info)(size_t *, size_t *);
    CUresult (*mem_alloc)(CUdeviceptr *, size_t);
    CUresult (*mem_free)(CUdeviceptr);
    CUresult (*get_error_name)(CUresult, const char **);
    CUresult (*memset_d32)(CUdeviceptr, unsigned, size_t);
    CUresult (*memcpy_dtoh)(void *, CUdeviceptr, size_t);
    CUresult (*mem_create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                           unsigned long long);
    CUresult (*mem_address_reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
    CUresult (*mem_map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
    CUresult (*mem_set_access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
    CUresult (*mem_unmap)(CUdeviceptr, size_t);
    CUresult (*mem_release)(CUmemGenericAllocationHandle);
    CUresult (*mem_address_free)(CUdeviceptr, size_t);
} cu;

static int load(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "demo: cannot load libcuda.so.1: %s\n", dlerror());
        return -1;
    }
    static const char *const names[] = {
        "cuInit", "cuDeviceGet", "cuDeviceGetName", "cuDeviceTotalMem_v2",
        "cuDevicePrimaryCtxRetain", "cuCtxSetCurrent", "cuMemGetInfo_v2", "cuMemAlloc_v2",
        "cuMemFree_v2", "cuGetErrorName", "cuMemsetD32_v2", "cuMemcpyDtoH_v2", "cuMemCreate",
        "cuMemAddressReserve", "cuMemMap", "cuMemSetAccess", "cuMemUnmap", "cuMemRelease",
        "cuMemAddressFree"};
    void **slots = (void **)&cu;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!(slots[i] = dlsym(h, names[i]))) {
            fprintf(stderr, "demo: the driver lacks %s\n", names[i]);
            return -1;
        }
    return 0;
}

static const char *err_name(CUresult r)
{
    const char *s = "?";
    cu.get_error_name(r, &s);
    return s;
}

static void report(const char *when, CUdevice dev)
{
    size_t total = 0, free_ = 0, devtotal = 0;
    cu.device_total_mem(&devtotal, dev);
    cu.mem_get_info(&free_, &total);
    printf("demo: %s: cuDeviceTotalMem %.0f MiB, cuMemGetInfo free %.0f MiB of %.0f MiB\n", when,
           devtotal / MiB, free_ / MiB, total / MiB);
}

/* Under spillway: how the memory was served (its pool, or passed through). */
static void pool_report(void)
{
    int (*get)(int, struct spillway_pool_counters *);
    *(void **)&get = dlsym(RTLD_DEFAULT, "spillway_get_pool_counters");
    struct spillway_pool_counters c;
    if (!get || get(0, &c) != 0 || !c.pool_bytes)
        return;
    uint64_t passed = 0;
    for (int i = 0; i < SPILLWAY_PT_COUNT; i++)
        passed += c.passthrough_bytes[i];
    printf("demo: spillway served it from its page pool: %.0f MiB of device pages held, "
           "%.0f MiB in use, %.0f MiB passed through\n",
           c.pool_bytes / MiB, c.in_use_bytes / MiB, passed / MiB);
    if (c.spill_events)
        printf("demo: spillway spilled the coldest %.0f MiB to pinned host memory "
               "(%llu spill and %llu fill batches so far)\n",
               c.spilled_bytes / MiB, (unsigned long long)c.spill_events,
               (unsigned long long)c.fill_events);
    else if (c.spilled_bytes)
        printf("demo: spillway backs %.0f MiB of it with pinned host memory (more than the "
               "device pages it may use; nothing had to move)\n",
               c.spilled_bytes / MiB);
}

/* Holds 1.5x what the program was told, each chunk set to its own value,
 * then reads every word back: with spill, nothing is lost. */
static int spill(size_t total)
{
    size_t gran = 2u << 20, chunk = total / 8 / gran * gran;
    if (chunk < gran)
        chunk = gran;
    int want = 12; /* 12/8 = 1.5x */
    if (want > CHUNKS_MAX)
        want = CHUNKS_MAX;
    printf("demo: holding %d chunks of %.0f MiB (%.0f MiB, 1.5x what it was told)\n", want,
           chunk / MiB, want * (double)chunk / MiB);
    CUdeviceptr held[CHUNKS_MAX];
    int n = 0;
    CUresult r = CUDA_SUCCESS;
    while (n < want && (r = cu.mem_alloc(&held[n], chunk)) == CUDA_SUCCESS &&
           (r = cu.memset_d32(held[n], 0xC0DE0000u + (unsigned)n, chunk / 4)) == CUDA_SUCCESS)
        n++;
    if (n < want)
        printf("demo: chunk %d failed with %s\n", n + 1, err_name(r));
    /* The chunks held are read back even after a refusal: a refusal must
     * lose nothing, and "NOT intact" would claim it did. */
    unsigned *buf = malloc(chunk);
    int bad = !buf;
    for (int i = 0; i < n && !bad; i++) {
        if ((r = cu.memcpy_dtoh(buf, held[i], chunk)) != CUDA_SUCCESS) {
            printf("demo: reading chunk %d failed with %s\n", i + 1, err_name(r));
            bad = 1;
        }
        for (size_t w = 0; w < chunk / 4 && !bad; w++)
            bad = buf[w] != 0xC0DE0000u + (unsigned)i;
    }
    printf("demo: %d chunks held, every word read back %s\n", n, bad ? "NOT intact" : "intact");
    pool_report();
    free(buf);
    for (int i = 0; i < n; i++)
        cu.mem_free(held[i]);
    return bad || n < want;
}

/* Sets and checks every 2 MiB of [va, va + size) to its own value. */
static int fill_and_check(CUdeviceptr va, size_t size)
{
    size_t step = 2u << 20;
    unsigned *buf = malloc(step);
    int bad = !buf;
    CUresult r = CUDA_SUCCESS;
    for (size_t o = 0; o < size && !bad; o += step)
        if ((r = cu.memset_d32(va + o, 0xA7E40000u + (unsigned)(o / step), step / 4)) != CUDA_SUCCESS)
            bad = 1;
    for (size_t o = 0; o < size && !bad; o += step) {
        if ((r = cu.memcpy_dtoh(buf, va + o, step)) != CUDA_SUCCESS)
            bad = 1;
        for (size_t w = 0; w < step / 4 && !bad; w++)
            bad = buf[w] != 0xA7E40000u + (unsigned)(o / step);
    }
    if (r != CUDA_SUCCESS)
        printf("demo: a set or read failed with %s\n", err_name(r));
    free(buf);
    return bad;
}

/* JAX's default allocator: one arena of 0.75 x the reported total, made and
 * mapped at start (docs/design.md, "How programs reach CUDA"). */
static int arena(CUdevice dev, size_t total)
{
    size_t gran = 2u << 20, size = (size_t)(0.75 * (double)total) / gran * gran;
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev}};
    CUmemAccessDesc acc = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CUmemGenericAllocationHandle h;
    CUdeviceptr va = 0;
    printf("demo: one arena of %.0f MiB (0.75 of the %.0f MiB it was told), as JAX makes\n",
           size / MiB, total / MiB);
    CUresult r = cu.mem_create(&h, size, &prop, 0);
    if (r != CUDA_SUCCESS) {
        printf("demo: cuMemCreate of the arena failed with %s\n", err_name(r));
        return 1;
    }
    if ((r = cu.mem_address_reserve(&va, size, 0, 0, 0)) == CUDA_SUCCESS &&
        (r = cu.mem_map(va, size, 0, h, 0)) == CUDA_SUCCESS)
        r = cu.mem_set_access(va, size, &acc, 1);
    int bad = r != CUDA_SUCCESS;
    if (bad)
        printf("demo: mapping the arena failed with %s\n", err_name(r));
    else
        bad = fill_and_check(va, size);
    printf("demo: arena of %.0f MiB mapped, every word read back %s\n", size / MiB,
           bad ? "NOT intact" : "intact");
    pool_report();
    cu.mem_unmap(va, size);
    cu.mem_release(h);
    cu.mem_address_free(va, size);
    return bad;
}

int main(int argc, char **argv)
{
    int info_only = argc > 1 && strcmp(argv[1], "info") == 0;
    int spill_mode = argc > 1 && strcmp(argv[1], "spill") == 0;
    int arena_mode = argc > 1 && strcmp(argv[1], "arena") == 0;
    setvbuf(stdout, NULL, _IOLBF, 0); /* in order with spillway's stderr */
    CUdevice dev;
    CUcontext ctx;
    char name[128] = "";
    CUresult r;
    if (load())
        return 1;
    if ((r = cu.init(0)) || (r = cu.device_get(&dev, 0)) || (r = cu.primary_ctx_retain(&ctx, dev)) ||
        (r = cu.ctx_set_current(ctx))) {
        fprintf(stderr, "demo: cannot use device 0: %s\n", err_name(r));
        return 1;
    }
    cu.device_get_name(name, sizeof name, dev);
    printf("demo: device 0 is '%s'\n", name);
    report("at start", dev);
    if (info_only)
        return 0;

    size_t total = 0, free_ = 0;
    cu.mem_get_info(&free_, &total);
    if (spill_mode)
        return spill(total);
    if (arena_mode)
        return arena(dev, total);
    size_t gran = 2u << 20, chunk = total / 8 / gran * gran;
    if (chunk < gran)
        chunk = gran;
    printf("demo: allocating %.0f MiB chunks until the driver refuses\n", chunk / MiB);
    CUdeviceptr held[CHUNKS_MAX];
    int n = 0;
    size_t got = 0;
    while (n < CHUNKS_MAX && (r = cu.mem_alloc(&held[n], chunk)) == CUDA_SUCCESS) {
        got += chunk;
        n++;
        printf("demo:   %2d allocations, %.0f MiB\n", n, got / MiB);
    }
    if (r == CUDA_SUCCESS) /* stopped at CHUNKS_MAX: spill on, or no limit */
        printf("demo: no allocation refused after %d chunks of %.0f MiB (%.0f MiB, the program was told "
               "%.0f MiB)\n", n, chunk / MiB, got / MiB, total / MiB);
    else
        printf("demo: allocation %d failed with %s after %.0f MiB (the program was told %.0f MiB)\n",
               n + 1, err_name(r), got / MiB, total / MiB);
    report("full", dev);
    pool_report();
    for (int i = 0; i < n; i++)
        cu.mem_free(held[i]);
    report("after freeing", dev);
    int stopped = r == CUDA_ERROR_OUT_OF_MEMORY && got <= total;
    printf("demo: %s\n", stopped ? "stopped at the limit it was told" : "NOT stopped at the limit");
    return stopped ? 0 : 1;
}
