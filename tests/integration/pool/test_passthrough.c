/* spillway only: what cannot be pool memory passes through, counted by
 * reason in the counters and the stats segment; cuMemAllocFromPoolAsync
 * is pool-served for device pools, on the pool's device; CUDA arrays
 * count as pass-through; the limit covers pool and pass-through together; SPILLWAY_DISABLE=1 passes everything. */
#include "tests/integration/pool/common.h"

#include "stats/reader.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int read_stats(struct spw_stats_snapshot *snap)
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

/* What the driver holds on dev beyond the pool's pages: pass-through
 * memory (the pool gives pages back for it, so the driver's total alone
 * would not show it). */
static size_t outside_pool(int dev)
{
    return fakecuda_device_bytes_used(dev) - pool_counters(dev).pool_bytes;
}

/* What cannot be pool memory passes through, counted by reason, in the
 * counters and the stats segment (pool-served vs pass-through bytes). */
START_TEST(passthrough_by_reason)
{
    if (!pooled())
        return;
    use_device(0);
    CUdeviceptr pooled_p, managed, captured;
    CU_OK(cuMemAlloc(&pooled_p, 5 * MiB));
    size_t before = fakecuda_device_bytes_used(0);
    uint64_t pool_before = pool_counters(0).pool_bytes;
    CU_OK(cuMemAllocManaged(&managed, 3 * MiB, CU_MEM_ATTACH_GLOBAL));
    CUmemAllocationProp ipc = device_prop(0);
    ipc.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CUmemGenericAllocationHandle h, hh;
    CU_OK(cuMemCreate(&h, 2 * MiB, &ipc, 0));
    CUmemAllocationProp host = device_prop(0);
    host.location.type = CU_MEM_LOCATION_TYPE_HOST;
    CU_OK(cuMemCreate(&hh, 2 * MiB, &host, 0));
    /* A shareable handle is pooled until its export makes it the driver's:
     * mapped, answered as asked, the same bytes after. */
    CUmemAllocationProp got;
    CU_OK(cuMemGetAllocationPropertiesFromHandle(&got, h));
    ck_assert_int_eq(got.requestedHandleTypes, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    CUdeviceptr va, base;
    size_t size;
    CU_OK(cuMemAddressReserve(&va, 2 * MiB, PAGE, 0, 0));
    CU_OK(cuMemMap(va, 2 * MiB, 0, h, 0));
    set_rw(va, 2 * MiB, 0);
    put(va, 2 * MiB, 9);
    expect(va, 2 * MiB, 9);
    ck_assert_uint_eq(pool_counters(0).passthrough_count[SPILLWAY_PT_IPC], 0);
    int fd = -1;
    CU_OK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    ck_assert_int_eq(close(fd), 0);
    expect(va, 2 * MiB, 9);
    CU_OK(cuMemGetAddressRange(&base, &size, va + 5));
    ck_assert(base == va && size == 2 * MiB);
    CU_OK(cuMemUnmap(va, 2 * MiB));
    CU_OK(cuMemAddressFree(va, 2 * MiB));
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    ck_assert_int_eq(fakecuda_set_capturing(s, 1), 0);
    CU_OK(cuMemAllocAsync(&captured, MiB, s));
    /* All of it the driver's own memory, beyond the pool (which kept the
     * page the handle had before its export). */
    struct spillway_pool_counters pc = pool_counters(0);
    ck_assert_uint_eq(fakecuda_device_bytes_used(0) - before,
                      3 * MiB + 2 * MiB + MiB + (pc.pool_bytes - pool_before));
    ck_assert(pc.passthrough_count[SPILLWAY_PT_MANAGED] == 1 &&
              pc.passthrough_bytes[SPILLWAY_PT_MANAGED] == 3 * MiB);
    ck_assert(pc.passthrough_count[SPILLWAY_PT_IPC] == 1 &&
              pc.passthrough_bytes[SPILLWAY_PT_IPC] == 2 * MiB);
    ck_assert(pc.passthrough_count[SPILLWAY_PT_CAPTURE] == 1 &&
              pc.passthrough_bytes[SPILLWAY_PT_CAPTURE] == MiB);
    ck_assert(pc.passthrough_count[SPILLWAY_PT_HOST_LOCATION] == 1 &&
              pc.passthrough_bytes[SPILLWAY_PT_HOST_LOCATION] == 2 * MiB);
    ck_assert_uint_eq(pc.in_use_bytes, 5 * MiB);
    /* One byte count against the limit: pool and device pass-through. */
    struct spillway_counters c;
    ck_assert_int_eq(get_counters(0, &c), 0);
    ck_assert_uint_eq(c.used, 5 * MiB + 3 * MiB + 2 * MiB + MiB);
    size_t f, t;
    CU_OK(cuMemGetInfo(&f, &t));
    /* Free is in the pool's pages: the 5 MiB block holds three, the 6 MiB
     * outside the pool take three more. */
    ck_assert_uint_eq(f, limit_bytes() - 3 * PAGE - 3 * PAGE);
    struct spw_stats_snapshot snap;
    ck_assert_int_eq(read_stats(&snap), 0);
    ck_assert_uint_eq(snap.c[0][SPW_C_IN_USE], c.used);
    ck_assert_uint_eq(snap.c[0][SPW_C_POOL], pc.pool_bytes);
    ck_assert_uint_eq(snap.c[0][SPW_C_PASS_MANAGED], 3 * MiB);
    ck_assert_uint_eq(snap.c[0][SPW_C_PASS_IPC], 2 * MiB);
    ck_assert_uint_eq(snap.c[0][SPW_C_PASS_CAPTURE], MiB);
    /* Freed: the gauges go back, the totals stay. */
    CU_OK(cuMemFreeAsync(captured, s));
    ck_assert_int_eq(fakecuda_set_capturing(s, 0), 0);
    CU_OK(cuMemFree(managed));
    CU_OK(cuMemRelease(h));
    CU_OK(cuMemRelease(hh));
    CU_OK(cuMemFree(pooled_p));
    CU_OK(cuCtxSynchronize());
    ck_assert_int_eq(read_stats(&snap), 0);
    ck_assert(snap.c[0][SPW_C_IN_USE] == 0 && snap.c[0][SPW_C_PASS_MANAGED] == 0 &&
              snap.c[0][SPW_C_PASS_IPC] == 0 && snap.c[0][SPW_C_PASS_CAPTURE] == 0 &&
              snap.c[0][SPW_C_UNDERFLOWS] == 0);
    ck_assert_uint_eq(pool_counters(0).passthrough_count[SPILLWAY_PT_MANAGED], 1);
}
END_TEST

/* cuMemAllocFromPoolAsync is served from spillway's pool for a device pool
 * the program names (the driver's pool holds none of it; its usage
 * attributes show it all the same) ... */
START_TEST(from_pool_async_is_pool_served)
{
    if (!pooled())
        return;
    use_device(0);
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    CUmemoryPool mp;
    CU_OK(cuMemPoolCreate(&mp, &props));
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 1)); /* the device's pool exists */
    CU_OK(cuMemFree(p));
    size_t before = fakecuda_device_bytes_used(0);
    CU_OK(cuMemAllocFromPoolAsync(&p, 5 * MiB, mp, s));
    ck_assert_uint_eq(pool_counters(0).in_use_bytes, 5 * MiB);
    if (preallocating())
        ck_assert_uint_eq(fakecuda_device_bytes_used(0), before);
    CU_OK(cuMemsetD8Async(p, 0x33, 5 * MiB, s));
    CU_OK(cuStreamSynchronize(s));
    expect_byte(p, 5 * MiB, 0x33);
    cuuint64_t used = 0; /* spillway's, not the driver's pool: pool_use.c */
    CU_OK(cuMemPoolGetAttribute(mp, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    ck_assert_uint_eq(used, 5 * MiB);
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_eq(pool_counters(0).in_use_bytes, 0);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemPoolDestroy(mp));
}
END_TEST

/* ... but from its own device's pool for a pool of another device, and
 * not at all from a pool whose memory spillway cannot stand in for: a host
 * pool's memory is pinned host memory the CPU reads, an exportable pool's
 * pointers are the program's to export. */
START_TEST(from_pool_async_follows_its_pool)
{
    if (!pooled())
        return;
    use_device(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 1)); /* the devices' pools exist */
    CU_OK(cuMemFree(p));
    use_device(1);
    CU_OK(cuMemAlloc(&p, 1));
    CU_OK(cuMemFree(p));
    use_device(0);
    struct spillway_pool_counters c0 = pool_counters(0), c1 = pool_counters(1);
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_HOST;
    CUmemoryPool host, other, shared;
    CU_OK(cuMemPoolCreate(&host, &props));
    CU_OK(cuMemAllocFromPoolAsync(&p, 3 * MiB, host, s));
    CU_OK(cuStreamSynchronize(s));
    CUmemorytype type = 0;
    CU_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p));
    ck_assert_int_eq(type, CU_MEMORYTYPE_HOST);
    ((volatile unsigned char *)(uintptr_t)p)[3 * MiB - 1] = 7; /* the CPU's to touch */
    ck_assert_uint_eq(pool_counters(0).in_use_bytes, c0.in_use_bytes);
    ck_assert_uint_eq(pool_counters(0).passthrough_count[SPILLWAY_PT_HOST_LOCATION],
                      c0.passthrough_count[SPILLWAY_PT_HOST_LOCATION] + 1); /* the stream's device */
    CU_OK(cuMemFreeAsync(p, s));
    CUmemLocation at_host = {.type = CU_MEM_LOCATION_TYPE_HOST};
    CUmemoryPool host_default;
    CU_OK(cuMemGetDefaultMemPool(&host_default, &at_host, CU_MEM_ALLOCATION_TYPE_PINNED));
    CU_OK(cuMemAllocFromPoolAsync(&p, MiB, host_default, s));
    type = 0;
    CU_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p));
    ck_assert_int_eq(type, CU_MEMORYTYPE_HOST);
    CU_OK(cuMemFreeAsync(p, s));

    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 1;
    CU_OK(cuMemPoolCreate(&other, &props));
    CU_OK(cuMemAllocFromPoolAsync(&p, 2 * MiB, other, s)); /* device 0's stream */
    ck_assert_uint_eq(pool_counters(1).in_use_bytes, c1.in_use_bytes + 2 * MiB);
    ck_assert_uint_eq(pool_counters(0).in_use_bytes, c0.in_use_bytes);
    int ordinal = -1;
    CU_OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
    ck_assert_int_eq(ordinal, 1);
    CU_OK(cuMemFreeAsync(p, s));
    CUmemoryPool default1; /* a CUDA 12 runtime's cudaDeviceGetDefaultMemPool(1) */
    CU_OK(cuDeviceGetDefaultMemPool(&default1, 1));
    CU_OK(cuMemAllocFromPoolAsync(&p, 2 * MiB, default1, s));
    ordinal = -1;
    CU_OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
    ck_assert_int_eq(ordinal, 1);
    CU_OK(cuMemFreeAsync(p, s));

    props.location.id = 0;
    props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CU_OK(cuMemPoolCreate(&shared, &props));
    CU_OK(cuStreamSynchronize(s));
    size_t before = outside_pool(0);
    CU_OK(cuMemAllocFromPoolAsync(&p, 4 * MiB, shared, s));
    ck_assert_uint_eq(outside_pool(0) - before, 4 * MiB);
    ck_assert_uint_eq(pool_counters(0).passthrough_count[SPILLWAY_PT_IPC],
                      c0.passthrough_count[SPILLWAY_PT_IPC] + 1);
    ck_assert_uint_eq(pool_counters(0).in_use_bytes, c0.in_use_bytes);
    CU_OK(cuMemFreeAsync(p, s));
    /* Made current and asked for again, it is still the exportable pool. */
    CUmemoryPool current;
    CU_OK(cuDeviceSetMemPool(0, shared));
    CUmemLocation dev0 = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
    CU_OK(cuMemGetMemPool(&current, &dev0, CU_MEM_ALLOCATION_TYPE_PINNED));
    ck_assert_ptr_eq(current, shared);
    CU_OK(cuStreamSynchronize(s)); /* the free above has run: the count is still */
    before = outside_pool(0);
    CU_OK(cuMemAllocFromPoolAsync(&p, 4 * MiB, current, s));
    ck_assert_uint_eq(outside_pool(0) - before, 4 * MiB);
    CU_OK(cuMemFreeAsync(p, s));
    CUmemoryPool default0;
    CU_OK(cuDeviceGetDefaultMemPool(&default0, 0));
    CU_OK(cuDeviceSetMemPool(0, default0));
    /* A pool with a size cap answers out of memory past it: the driver's. */
    CUmemoryPool capped;
    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    props.maxSize = 8 * MiB;
    CU_OK(cuMemPoolCreate(&capped, &props));
    CU_OK(cuStreamSynchronize(s));
    before = outside_pool(0);
    CU_OK(cuMemAllocFromPoolAsync(&p, 2 * MiB, capped, s));
    ck_assert_uint_eq(outside_pool(0) - before, 2 * MiB);
    ck_assert_uint_eq(pool_counters(0).in_use_bytes, c0.in_use_bytes);
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemPoolDestroy(capped));
    CU_OK(cuMemPoolDestroy(host));
    CU_OK(cuMemPoolDestroy(other));
    CU_OK(cuMemPoolDestroy(shared));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* cuMemAllocAsync allocates from the current pool of the stream's device
 * (cuDeviceSetMemPool): made current, an exportable or capped pool's
 * allocations are the driver's, as cuMemAllocFromPoolAsync's from it are;
 * the default pool made current again, or the current pool destroyed
 * (which makes the default current), they are the pool's again. */
START_TEST(alloc_async_follows_the_current_pool)
{
    if (!pooled())
        return;
    use_device(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 1)); /* the device's pool exists */
    CU_OK(cuMemFree(p));
    struct spillway_pool_counters c0 = pool_counters(0);
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CUmemoryPool shared, capped, default0;
    CU_OK(cuMemPoolCreate(&shared, &props));
    CU_OK(cuDeviceSetMemPool(0, shared));
    size_t before = outside_pool(0);
    CU_OK(cuMemAllocAsync(&p, 4 * MiB, s));
    ck_assert_uint_eq(outside_pool(0) - before, 4 * MiB);
    ck_assert_uint_eq(pool_counters(0).passthrough_count[SPILLWAY_PT_IPC],
                      c0.passthrough_count[SPILLWAY_PT_IPC] + 1);
    ck_assert_uint_eq(pool_counters(0).in_use_bytes, c0.in_use_bytes);
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuStreamSynchronize(s));

    CU_OK(cuDeviceGetDefaultMemPool(&default0, 0));
    CU_OK(cuDeviceSetMemPool(0, default0));
    CU_OK(cuMemAllocAsync(&p, 4 * MiB, s));
    ck_assert_uint_eq(pool_counters(0).in_use_bytes, c0.in_use_bytes + 4 * MiB);
    CU_OK(cuMemFreeAsync(p, s));

    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    props.maxSize = 8 * MiB;
    CU_OK(cuMemPoolCreate(&capped, &props));
    CU_OK(cuDeviceSetMemPool(0, capped));
    CU_OK(cuStreamSynchronize(s));
    before = outside_pool(0);
    CU_OK(cuMemAllocAsync(&p, 2 * MiB, s));
    ck_assert_uint_eq(outside_pool(0) - before, 2 * MiB);
    ck_assert_uint_eq(pool_counters(0).in_use_bytes, c0.in_use_bytes);
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemPoolDestroy(capped)); /* the default pool is current again */
    CU_OK(cuMemAllocAsync(&p, 4 * MiB, s));
    ck_assert_uint_eq(pool_counters(0).in_use_bytes, c0.in_use_bytes + 4 * MiB);
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuStreamSynchronize(s));
    /* CUDA 13's setter by location, for a device's pinned pool. */
    CUmemLocation dev0 = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
    CU_OK(cuMemSetMemPool(&dev0, CU_MEM_ALLOCATION_TYPE_PINNED, shared));
    before = outside_pool(0);
    CU_OK(cuMemAllocAsync(&p, 4 * MiB, s));
    ck_assert_uint_eq(outside_pool(0) - before, 4 * MiB);
    ck_assert_uint_eq(pool_counters(0).in_use_bytes, c0.in_use_bytes);
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemPoolDestroy(shared));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* The limit holds for the pool and pass-through together; with spill on,
 * the pool's allocation past it is served (its device pages never pass the
 * limit) and pass-through memory is what the cap still refuses. */
START_TEST(limit_covers_pool_and_passthrough)
{
    if (!pooled())
        return;
    use_device(0);
    const char *spill = getenv("SPILLWAY_SPILL");
    bool spilling = !spill || strcmp(spill, "0") != 0;
    CUdeviceptr managed, p, m2;
    CU_OK(cuMemAllocManaged(&managed, 40 * MiB, CU_MEM_ATTACH_GLOBAL));
    if (spilling) {
        CU_OK(cuMemAlloc(&p, 32 * MiB));
        ck_assert_int_eq(cuMemAllocManaged(&m2, 32 * MiB, CU_MEM_ATTACH_GLOBAL),
                         CUDA_ERROR_OUT_OF_MEMORY);
        CU_OK(cuMemFree(p));
    } else {
        ck_assert_int_eq(cuMemAlloc(&p, 32 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    }
    CU_OK(cuMemAlloc(&p, 16 * MiB));
    CU_OK(cuMemFree(p));
    CU_OK(cuMemFree(managed));
    CU_OK(cuMemAlloc(&p, limit_bytes()));
    CU_OK(cuMemFree(p));
}
END_TEST

static CUDA_ARRAY3D_DESCRIPTOR floats(size_t w, size_t h, size_t d, unsigned flags)
{
    return (CUDA_ARRAY3D_DESCRIPTOR){.Width = w, .Height = h, .Depth = d, .Format = CU_AD_FORMAT_FLOAT,
                                     .NumChannels = 1, .Flags = flags};
}

/* CUDA arrays are device memory the pool cannot serve: each kind counts
 * its elements' bytes against the limit (as the "array" pass-through, in
 * the stats' "other" gauge), is refused past it although the driver would
 * give it, and gives its bytes back when destroyed. A deferred-mapping
 * array has no memory of its own and counts nothing. */
START_TEST(arrays_count_against_the_limit)
{
    if (!pooled())
        return;
    use_device(0);
    CUdeviceptr first; /* the pool is set up at the device's first allocation */
    CU_OK(cuMemAlloc(&first, MiB));
    CU_OK(cuMemFree(first));
    uint64_t used0 = used_on(0), device0 = outside_pool(0);
    struct spillway_pool_counters pc0 = pool_counters(0);
    CUarray a2, a3, layered, deferred, refused, layered1d, rgba8;
    CUmipmappedArray mip;
    CUDA_ARRAY_DESCRIPTOR d2 = {.Width = 1024, .Height = 1024, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    CU_OK(cuArrayCreate(&a2, &d2)); /* 4 MiB */
    CUDA_ARRAY3D_DESCRIPTOR d3 = floats(64, 64, 64, 0);
    d3.NumChannels = 2; /* 2 MiB */
    CU_OK(cuArray3DCreate(&a3, &d3));
    CUDA_ARRAY3D_DESCRIPTOR dl = floats(256, 256, 4, CUDA_ARRAY3D_LAYERED); /* 1 MiB */
    CU_OK(cuArray3DCreate(&layered, &dl));
    /* Four levels of 512 x 512 floats: 1 MiB + 256 + 64 + 16 KiB. */
    CUDA_ARRAY3D_DESCRIPTOR dm = floats(512, 512, 0, 0);
    CU_OK(cuMipmappedArrayCreate(&mip, &dm, 4));
    const uint64_t mip_bytes = MiB + 256 * 1024 + 64 * 1024 + 16 * 1024;
    CUDA_ARRAY3D_DESCRIPTOR dd = floats(2048, 2048, 0, CUDA_ARRAY3D_DEFERRED_MAPPING);
    CU_OK(cuArray3DCreate(&deferred, &dd));
    /* 1D layered: 64 layers of 4096 floats (1 MiB); an X format counts
     * the channels its name says (512 x 512 of RGBA8: 1 MiB). */
    CUDA_ARRAY3D_DESCRIPTOR d1l = floats(4096, 0, 64, CUDA_ARRAY3D_LAYERED);
    CU_OK(cuArray3DCreate(&layered1d, &d1l));
    CUDA_ARRAY3D_DESCRIPTOR dx = {.Width = 512, .Height = 512, .Format = CU_AD_FORMAT_UNORM_INT8X4,
                                  .NumChannels = 4};
    CU_OK(cuArray3DCreate(&rgba8, &dx));
    const uint64_t counted = 4 * MiB + 2 * MiB + MiB + mip_bytes + 2 * MiB;
    ck_assert_uint_eq(used_on(0) - used0, counted);
    ck_assert_uint_eq(outside_pool(0) - device0, counted);
    struct spillway_pool_counters pc = pool_counters(0);
    ck_assert_uint_eq(pc.passthrough_count[SPILLWAY_PT_ARRAY] - pc0.passthrough_count[SPILLWAY_PT_ARRAY], 6);
    ck_assert_uint_eq(pc.passthrough_bytes[SPILLWAY_PT_ARRAY] - pc0.passthrough_bytes[SPILLWAY_PT_ARRAY],
                      counted);
    /* None of it the pool's, and the pool gave back room for it. */
    ck_assert_uint_eq(pc.in_use_bytes, pc0.in_use_bytes);
    ck_assert_uint_le(pc.pool_bytes, limit_bytes() - counted);
    ck_assert_uint_le(fakecuda_device_bytes_used(0), limit_bytes());
    struct spw_stats_snapshot snap;
    ck_assert_int_eq(read_stats(&snap), 0);
    ck_assert_uint_eq(snap.c[0][SPW_C_PASS_OTHER], counted);
    size_t f, t;
    CU_OK(cuMemGetInfo(&f, &t));
    /* Memory outside the pool takes whole pages of it (the freed block's
     * page is free). */
    ck_assert_uint_eq(f, limit_bytes() - (used_on(0) + PAGE - 1) / PAGE * PAGE);
    /* No pointer names an array: while only arrays are outside the pool, a
     * copy's sides are not asked of the driver. */
    CUdeviceptr p;
    static unsigned char host[4096];
    CU_OK(cuMemAlloc(&p, sizeof host));
    long long asked = fakecuda_calls("cuPointerGetAttribute");
    CU_OK(cuMemcpy(p, (CUdeviceptr)(uintptr_t)host, sizeof host));
    ck_assert_int_eq(fakecuda_calls("cuPointerGetAttribute"), asked);
    CU_OK(cuMemFree(p));
    /* 64 MiB more would pass the limit: refused, the driver never asked. */
    CUDA_ARRAY_DESCRIPTOR big = {.Width = 4096, .Height = 4096, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    ck_assert_int_eq(cuArrayCreate(&refused, &big), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_uint_eq(outside_pool(0) - device0, counted);
    /* Destroyed: the bytes and the gauge go back; a second destroy is the
     * driver's error and changes nothing. */
    CU_OK(cuArrayDestroy(a2));
    CU_OK(cuArrayDestroy(a3));
    CU_OK(cuArrayDestroy(layered));
    CU_OK(cuArrayDestroy(deferred));
    CU_OK(cuArrayDestroy(layered1d));
    CU_OK(cuArrayDestroy(rgba8));
    ck_assert_uint_eq(used_on(0) - used0, mip_bytes);
    CU_OK(cuMipmappedArrayDestroy(mip));
    ck_assert_int_eq(cuArrayDestroy(a2), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(cuMipmappedArrayDestroy(mip), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_uint_eq(used_on(0), used0);
    ck_assert_uint_eq(outside_pool(0), device0);
    ck_assert_int_eq(read_stats(&snap), 0);
    ck_assert_uint_eq(snap.c[0][SPW_C_PASS_OTHER], 0);
    ck_assert_uint_eq(snap.c[0][SPW_C_UNDERFLOWS], 0);
}
END_TEST

/* A descriptor the driver is sure to refuse gets the driver's own error:
 * not an out-of-memory for bytes it never had (a 12 GiB cubemap that is
 * not square), and the pool gives back no page for it (a 12 MiB one would
 * otherwise have been lent out of the preallocated pool). */
START_TEST(arrays_the_driver_refuses_are_its_to_answer)
{
    if (!pooled())
        return;
    use_device(0);
    CUdeviceptr first;
    CU_OK(cuMemAlloc(&first, MiB));
    CU_OK(cuMemFree(first));
    uint64_t used0 = used_on(0), device0 = outside_pool(0);
    struct spillway_pool_counters pc0 = pool_counters(0);
    struct spw_stats_snapshot snap0, snap;
    ck_assert_int_eq(read_stats(&snap0), 0);
    CUarray a;
    CUDA_ARRAY3D_DESCRIPTOR bad[] = {
        floats(32768, 16384, 6, CUDA_ARRAY3D_CUBEMAP), /* 12 GiB, not square */
        floats(1024, 512, 6, CUDA_ARRAY3D_CUBEMAP),    /* 12 MiB, not square */
        floats(1024, 1024, 5, CUDA_ARRAY3D_CUBEMAP),   /* five faces */
        floats(1024, 1024, 12, CUDA_ARRAY3D_CUBEMAP),  /* twelve, not layered */
        floats(1024, 0, 1024, 0),                      /* a depth without a height */
        floats(0, 1024, 0, 0),                         /* no width */
    };
    bad[5].Width = 0;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(cuArray3DCreate(&a, &bad[i]), CUDA_ERROR_INVALID_VALUE);
        CUmipmappedArray m;
        ck_assert_int_eq(cuMipmappedArrayCreate(&m, &bad[i], 3), CUDA_ERROR_INVALID_VALUE);
    }
    CUDA_ARRAY3D_DESCRIPTOR three = floats(2048, 2048, 0, 0);
    three.NumChannels = 3; /* "1, 2, or 4" */
    ck_assert_int_eq(cuArray3DCreate(&a, &three), CUDA_ERROR_INVALID_VALUE);
    CUDA_ARRAY_DESCRIPTOR three2d = {.Width = 2048, .Height = 2048, .Format = CU_AD_FORMAT_FLOAT,
                                     .NumChannels = 3};
    ck_assert_int_eq(cuArrayCreate(&a, &three2d), CUDA_ERROR_INVALID_VALUE);
    struct spillway_pool_counters pc = pool_counters(0);
    ck_assert_uint_eq(used_on(0), used0);
    ck_assert_uint_eq(outside_pool(0), device0);
    ck_assert_uint_eq(pc.pool_bytes, pc0.pool_bytes);
    ck_assert_int_eq(read_stats(&snap), 0);
    ck_assert_uint_eq(snap.c[0][SPW_C_OOMS], snap0.c[0][SPW_C_OOMS]);
    ck_assert_uint_eq(pc.passthrough_count[SPILLWAY_PT_ARRAY], pc0.passthrough_count[SPILLWAY_PT_ARRAY]);
}
END_TEST

/* Pass-through memory takes its pages out of the pool: whatever the pool
 * had preallocated, the driver never holds more of the device than the
 * limit for pool and pass-through together. Free and freed pages go back
 * first; with spill, live data moves to the host to make room (and reads
 * back intact); without it, what live data holds is refused. Freed, the
 * pass-through memory's pages are the pool's to take again. */
START_TEST(passthrough_takes_its_pages_from_the_pool)
{
    if (!pooled())
        return;
    use_device(0);
    const char *spill = getenv("SPILLWAY_SPILL");
    bool spilling = !spill || strcmp(spill, "0") != 0;
    const size_t limit = limit_bytes();
    CUdeviceptr data, freed, m1, m2, big;
    CU_OK(cuMemAlloc(&data, 24 * MiB));
    put(data, 24 * MiB, 7);
    CU_OK(cuMemAlloc(&freed, 24 * MiB));
    CU_OK(cuMemFree(freed));
    CU_OK(cuCtxSynchronize()); /* the free is covered: its pages are the pool's */
    CU_OK(cuMemAllocManaged(&m1, 30 * MiB, CU_MEM_ATTACH_GLOBAL));
    ck_assert_uint_le(fakecuda_device_bytes_used(0), limit);
    ck_assert_uint_le(pool_counters(0).pool_bytes, limit - 30 * MiB);
    /* 24 MiB of live data and 30 + 16 outside the pool: only spill fits it. */
    CUresult r = cuMemAllocManaged(&m2, 16 * MiB, CU_MEM_ATTACH_GLOBAL);
    if (spilling) {
        CU_OK(r);
        ck_assert_uint_le(fakecuda_device_bytes_used(0), limit);
        ck_assert_uint_gt(pool_counters(0).spilled_bytes, 0);
        expect(data, 24 * MiB, 7);
        CU_OK(cuMemFree(m2));
    } else {
        ck_assert_int_eq(r, CUDA_ERROR_OUT_OF_MEMORY);
        ck_assert_uint_le(fakecuda_device_bytes_used(0), limit);
    }
    CU_OK(cuMemFree(m1));
    CU_OK(cuMemFree(data));
    CU_OK(cuCtxSynchronize());
    /* All of the limit is the pool's again. */
    CU_OK(cuMemAlloc(&big, limit - 4 * MiB));
    put(big, limit - 4 * MiB, 3);
    ck_assert_uint_eq(pool_counters(0).spilled_bytes, 0);
    expect(big, limit - 4 * MiB, 3);
    ck_assert_uint_le(fakecuda_device_bytes_used(0), limit);
    CU_OK(cuMemFree(big));
}
END_TEST

/* Memory outside the pool made before the device's pool exists sizes its
 * preallocation: the pool never holds the pages it took. */
START_TEST(lent_before_the_pool_is_built)
{
    if (!pooled())
        return;
    use_device(1); /* no allocation on it yet in this process */
    CUdeviceptr m, p;
    CU_OK(cuMemAllocManaged(&m, 20 * MiB, CU_MEM_ATTACH_GLOBAL));
    CU_OK(cuMemAlloc(&p, MiB)); /* builds the pool */
    ck_assert_uint_le(pool_counters(1).pool_bytes, limit_bytes() - 20 * MiB);
    ck_assert_uint_le(fakecuda_device_bytes_used(1), limit_bytes());
    CU_OK(cuMemFree(p));
    CU_OK(cuMemFree(m));
}
END_TEST

/* An allocation of bytes on device 0 (served, spilled or refused) leaves
 * the device within the limit. */
static void within_limit_after(size_t bytes, bool must_succeed)
{
    CUdeviceptr p;
    CUresult r = cuMemAlloc(&p, bytes);
    if (must_succeed)
        CU_OK(r);
    ck_assert_uint_le(fakecuda_device_bytes_used(0), limit_bytes());
    if (r == CUDA_SUCCESS)
        CU_OK(cuMemFree(p));
}

static void export_and_close(CUmemGenericAllocationHandle h)
{
    int fd = -1;
    CU_OK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    close(fd);
}

/* As in the driver, a handle's memory outlives cuMemRelease while it is
 * mapped, and a retain's release is not the last: a pass-through handle (a
 * handle type the pool cannot serve) keeps its count and the pages it took
 * out of the pool until both its references and its mappings are gone. */
START_TEST(a_handle_released_while_mapped_keeps_its_count)
{
    if (!pooled())
        return;
    use_device(0);
    const size_t limit = limit_bytes();
    CUmemAllocationProp prop = device_prop(0);
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_WIN32_KMT; /* the driver's: "ipc" */
    CUmemGenericAllocationHandle h, again;
    uint64_t used0 = used_on(0);
    CUdeviceptr va;
    CU_OK(cuMemAddressReserve(&va, 64 * MiB, PAGE, 0, 0));
    /* A retain's reference released, then unmapped: the creation's stands. */
    CU_OK(cuMemCreate(&h, 32 * MiB, &prop, 0));
    ck_assert_uint_eq(used_on(0) - used0, 32 * MiB);
    CU_OK(cuMemMap(va, 32 * MiB, 0, h, 0));
    CU_OK(cuMemRetainAllocationHandle(&again, (void *)(uintptr_t)va));
    ck_assert(again == h);
    CU_OK(cuMemRelease(again));
    CU_OK(cuMemUnmap(va, 32 * MiB));
    ck_assert_uint_eq(used_on(0) - used0, 32 * MiB);
    CU_OK(cuMemRelease(h));
    ck_assert_uint_eq(used_on(0), used0);
    /* Mapped twice and released: counted until the last unmap. */
    CU_OK(cuMemCreate(&h, 32 * MiB, &prop, 0));
    CU_OK(cuMemMap(va, 32 * MiB, 0, h, 0));
    CU_OK(cuMemMap(va + 32 * MiB, 32 * MiB, 0, h, 0));
    CU_OK(cuMemRelease(h));
    ck_assert_uint_eq(used_on(0) - used0, 32 * MiB);
    ck_assert_uint_eq(pool_counters(0).passthrough_bytes[SPILLWAY_PT_IPC], 64 * MiB);
    /* Still device memory to a copy's count: a unified copy into it is
     * host to device (the driver is asked where it lies). */
    set_rw(va, 32 * MiB, 0);
    static unsigned char page[4096];
    struct spw_stats_snapshot before, after;
    ck_assert_int_eq(read_stats(&before), 0);
    CU_OK(cuMemcpy(va, (CUdeviceptr)(uintptr_t)page, sizeof page));
    /* A copy from pageable memory may still be under way when cuMemcpy
     * returns (DESIGN.md's hazard, as fakecuda does it): done before the
     * program unmaps its destination below. */
    CU_OK(cuCtxSynchronize());
    ck_assert_int_eq(read_stats(&after), 0);
    ck_assert_uint_eq(after.c[0][SPW_C_COPY_HTOD] - before.c[0][SPW_C_COPY_HTOD], sizeof page);
    within_limit_after(48 * MiB, false); /* the handle keeps its room */
    CU_OK(cuMemUnmap(va, 32 * MiB));
    ck_assert_uint_eq(used_on(0) - used0, 32 * MiB);
    CU_OK(cuMemUnmap(va + 32 * MiB, 32 * MiB)); /* the last: it is gone */
    ck_assert_uint_eq(used_on(0), used0);
    /* Released while mapped, then retained through its address: the
     * program holds it again, counted until that reference goes too. */
    CU_OK(cuMemCreate(&h, 32 * MiB, &prop, 0));
    CU_OK(cuMemMap(va, 32 * MiB, 0, h, 0));
    CU_OK(cuMemRelease(h));
    CU_OK(cuMemRetainAllocationHandle(&again, (void *)(uintptr_t)va));
    CU_OK(cuMemUnmap(va, 32 * MiB));
    ck_assert_uint_eq(used_on(0) - used0, 32 * MiB);
    CU_OK(cuMemRelease(again));
    ck_assert_uint_eq(used_on(0), used0);
    struct spw_stats_snapshot snap;
    ck_assert_int_eq(read_stats(&snap), 0);
    ck_assert_uint_eq(snap.c[0][SPW_C_UNDERFLOWS], 0);
    within_limit_after(limit - 8 * MiB, true); /* its pages are the pool's again */
    CU_OK(cuMemAddressFree(va, 64 * MiB));
}
END_TEST

/* A pool handle too: released while mapped or retained, it stays counted
 * until the pool gets its pages back (its last unmap, its last release),
 * including two handles ended by one unmap. */
START_TEST(a_pool_handle_released_while_mapped_keeps_its_count)
{
    if (!pooled())
        return;
    use_device(0);
    CUmemAllocationProp prop = device_prop(0);
    CUmemGenericAllocationHandle h, g, again;
    uint64_t used0 = used_on(0);
    CUdeviceptr va;
    CU_OK(cuMemAddressReserve(&va, 16 * MiB, PAGE, 0, 0));
    CU_OK(cuMemCreate(&h, 8 * MiB, &prop, 0));
    CU_OK(cuMemCreate(&g, 8 * MiB, &prop, 0));
    CU_OK(cuMemMap(va, 8 * MiB, 0, h, 0));
    CU_OK(cuMemMap(va + 8 * MiB, 8 * MiB, 0, g, 0));
    CU_OK(cuMemRelease(h));
    CU_OK(cuMemRelease(g));
    ck_assert_uint_eq(used_on(0) - used0, 16 * MiB);
    ck_assert_uint_eq(pool_counters(0).in_use_bytes, 16 * MiB);
    CU_OK(cuMemUnmap(va, 16 * MiB)); /* ends both */
    ck_assert_uint_eq(used_on(0), used0);
    ck_assert_uint_eq(pool_counters(0).in_use_bytes, 0);
    /* Retained: the creation's release is not the last. */
    CU_OK(cuMemCreate(&h, 8 * MiB, &prop, 0));
    CU_OK(cuMemMap(va, 8 * MiB, 0, h, 0));
    CU_OK(cuMemRetainAllocationHandle(&again, (void *)(uintptr_t)va));
    ck_assert(again == h);
    CU_OK(cuMemRelease(h));
    CU_OK(cuMemUnmap(va, 8 * MiB));
    ck_assert_uint_eq(used_on(0) - used0, 8 * MiB);
    CU_OK(cuMemRelease(again));
    ck_assert_uint_eq(used_on(0), used0);
    struct spw_stats_snapshot snap;
    ck_assert_int_eq(read_stats(&snap), 0);
    ck_assert_uint_eq(snap.c[0][SPW_C_UNDERFLOWS], 0);
    CU_OK(cuMemAddressFree(va, 16 * MiB));
}
END_TEST

/* The same for a pool handle made the driver's at its export: mapped
 * before the export, released after it, it keeps its count until
 * unmapped; retained before the export, its first release is not its
 * last. */
START_TEST(an_exported_handle_released_while_mapped_keeps_its_count)
{
    if (!pooled())
        return;
    use_device(0);
    const size_t limit = limit_bytes();
    CUmemAllocationProp prop = device_prop(0);
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CUmemGenericAllocationHandle h, again;
    uint64_t used0 = used_on(0);
    CUdeviceptr va;
    CU_OK(cuMemAddressReserve(&va, 16 * MiB, PAGE, 0, 0));
    /* Mapped before its export, released after: counted until unmapped. */
    CU_OK(cuMemCreate(&h, 16 * MiB, &prop, 0));
    CU_OK(cuMemMap(va, 16 * MiB, 0, h, 0));
    set_rw(va, 16 * MiB, 0);
    export_and_close(h);
    CU_OK(cuMemRelease(h));
    ck_assert_uint_eq(used_on(0) - used0, 16 * MiB);
    within_limit_after(56 * MiB, false);
    CU_OK(cuMemUnmap(va, 16 * MiB));
    ck_assert_uint_eq(used_on(0), used0);
    within_limit_after(limit - 8 * MiB, true);
    /* Retained before its export: the first release is not the last. */
    CU_OK(cuMemCreate(&h, 16 * MiB, &prop, 0));
    CU_OK(cuMemMap(va, 16 * MiB, 0, h, 0));
    set_rw(va, 16 * MiB, 0);
    CU_OK(cuMemRetainAllocationHandle(&again, (void *)(uintptr_t)va));
    ck_assert(again == h);
    export_and_close(h);
    CU_OK(cuMemRelease(h));
    CU_OK(cuMemUnmap(va, 16 * MiB)); /* the retain's reference holds it */
    ck_assert_uint_eq(used_on(0) - used0, 16 * MiB);
    within_limit_after(56 * MiB, false);
    CU_OK(cuMemMap(va, 16 * MiB, 0, again, 0));
    set_rw(va, 16 * MiB, 0);
    CU_OK(cuMemRelease(again)); /* the last, while mapped */
    ck_assert_uint_eq(used_on(0) - used0, 16 * MiB);
    CU_OK(cuMemUnmap(va, 16 * MiB));
    ck_assert_uint_eq(used_on(0), used0);
    within_limit_after(limit - 8 * MiB, true);
    CU_OK(cuMemAddressFree(va, 16 * MiB));
}
END_TEST

/* A device whose pool could not be set up passes allocations through
 * (reason "disabled"), lent all the same: the try that builds the pool
 * later builds it within the limit less what is outside it, and a free
 * gives the bytes back. cuMemAllocPitch too (it lends what the driver's
 * pitch makes, not the guess: here a driver pitching rows to 256 bytes,
 * below spillway's guess of 512). */
START_TEST(a_device_whose_set_up_failed_lends_too)
{
    if (!pooled())
        return;
    use_device(1); /* untouched yet: each test is a process of its own */
    CUdeviceptr m, pitched, p, a;
    size_t pitch;
    uint64_t used0 = used_on(1);
    ck_assert_int_eq(fakecuda_fault_config("cuMemAddressReserve:1-2", NULL, 0), 0);
    CU_OK(cuMemAlloc(&m, 20 * MiB));          /* set-up fails: passes through */
    fakecuda_set_pitch_align(256);
    CU_OK(cuMemAllocPitch(&pitched, &pitch, 1100, 2048, 4)); /* again */
    fakecuda_set_pitch_align(0);
    ck_assert_uint_eq(pitch, 1280); /* the guess was 1536 */
    fakecuda_fault_config(NULL, NULL, 0);
    const uint64_t outside = 20 * MiB + (uint64_t)pitch * 2048;
    ck_assert_uint_eq(pool_counters(1).passthrough_bytes[SPILLWAY_PT_DISABLED], outside);
    ck_assert_uint_eq(used_on(1) - used0, outside); /* the guess's surplus given back */
    CU_OK(cuMemAlloc(&p, MiB)); /* this try builds the pool */
    struct spillway_pool_counters pc = pool_counters(1);
    ck_assert_uint_gt(pc.pool_bytes, 0);
    ck_assert_uint_le(pc.pool_bytes + outside, limit_bytes());
    ck_assert_uint_le(fakecuda_device_bytes_used(1), limit_bytes());
    /* The pool serves up to what is left, never past the limit. */
    CUresult r = cuMemAlloc(&a, limit_bytes() - outside - 4 * MiB);
    ck_assert_int_eq(r, CUDA_SUCCESS);
    ck_assert_uint_le(fakecuda_device_bytes_used(1), limit_bytes());
    CU_OK(cuMemFree(a));
    /* Freed, the bytes outside are the pool's to take again. */
    CU_OK(cuMemFree(m));
    CU_OK(cuMemFree(pitched));
    ck_assert_uint_eq(used_on(1) - used0, MiB); /* p alone */
    CU_OK(cuMemAlloc(&a, limit_bytes() - 4 * MiB));
    ck_assert_uint_le(fakecuda_device_bytes_used(1), limit_bytes());
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(p));
}
END_TEST

/* A pass-through cuMemAllocPitch whose driver pitches past spillway's
 * guess (rows to 2048 bytes, the guess 512-byte rows) holds the rest too,
 * and is refused, freed and given back whole when the rest does not fit
 * under the limit. */
START_TEST(a_pitch_past_the_guess_is_held_or_refused)
{
    if (!pooled())
        return;
    use_device(1); /* untouched yet: each test is a process of its own */
    CUdeviceptr m, pitched;
    size_t pitch;
    ck_assert_int_eq(fakecuda_fault_config("cuMemAddressReserve:1-3", NULL, 0), 0);
    for (int i = 0; i < 3; i++) { /* set-up fails three times: passes through for good */
        CU_OK(cuMemAlloc(&m, MiB));
        CU_OK(cuMemFree(m));
    }
    fakecuda_fault_config(NULL, NULL, 0);
    uint64_t used0 = used_on(1);
    uint64_t passed0 = pool_counters(1).passthrough_bytes[SPILLWAY_PT_DISABLED]; /* a total */
    size_t driver0 = fakecuda_device_bytes_used(1);
    fakecuda_set_pitch_align(2048);
    CU_OK(cuMemAllocPitch(&pitched, &pitch, 1100, 1024, 4));
    ck_assert_uint_eq(pitch, 2048); /* the guess was 1536 */
    ck_assert_uint_eq(used_on(1) - used0, 2048 * 1024);
    ck_assert_uint_eq(pool_counters(1).passthrough_bytes[SPILLWAY_PT_DISABLED] - passed0, 2048 * 1024);
    passed0 += 2048 * 1024;
    CU_OK(cuMemFree(pitched));
    ck_assert_uint_eq(used_on(1), used0);
    /* The guess fits under the limit, the driver's pitch does not. */
    size_t height = limit_bytes() / 1800;
    ck_assert_uint_le((uint64_t)1536 * height, limit_bytes());
    ck_assert_uint_gt((uint64_t)2048 * height, limit_bytes());
    ck_assert_int_eq(cuMemAllocPitch(&pitched, &pitch, 1100, height, 4), CUDA_ERROR_OUT_OF_MEMORY);
    fakecuda_set_pitch_align(0);
    ck_assert_uint_eq(used_on(1), used0);
    ck_assert_uint_eq(pool_counters(1).passthrough_bytes[SPILLWAY_PT_DISABLED], passed0);
    ck_assert_uint_eq(fakecuda_device_bytes_used(1), driver0);
}
END_TEST

/* With SPILLWAY_DISABLE=1 nothing is pool memory. */
START_TEST(disabled_passes_everything)
{
    const char *d = getenv("SPILLWAY_DISABLE");
    if (!d || strcmp(d, "1") != 0)
        return;
    use_device(0);
    size_t before = fakecuda_device_bytes_used(0);
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, MiB));
    ck_assert_uint_eq(fakecuda_device_bytes_used(0) - before, MiB);
    struct spillway_pool_counters pc;
    if (get_pool && get_pool(0, &pc) == 0)
        ck_assert_uint_eq(pc.pool_bytes, 0);
    CU_OK(cuMemFree(p));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("pool_passthrough");
    TCase *spw = tcase_create("spillway");
    tcase_set_timeout(spw, 60);
    tcase_add_test(spw, passthrough_by_reason);
    tcase_add_test(spw, from_pool_async_is_pool_served);
    tcase_add_test(spw, from_pool_async_follows_its_pool);
    tcase_add_test(spw, alloc_async_follows_the_current_pool);
    tcase_add_test(spw, limit_covers_pool_and_passthrough);
    tcase_add_test(spw, arrays_count_against_the_limit);
    tcase_add_test(spw, arrays_the_driver_refuses_are_its_to_answer);
    tcase_add_test(spw, passthrough_takes_its_pages_from_the_pool);
    tcase_add_test(spw, lent_before_the_pool_is_built);
    tcase_add_test(spw, a_handle_released_while_mapped_keeps_its_count);
    tcase_add_test(spw, an_exported_handle_released_while_mapped_keeps_its_count);
    tcase_add_test(spw, a_pool_handle_released_while_mapped_keeps_its_count);
    tcase_add_test(spw, a_device_whose_set_up_failed_lends_too);
    tcase_add_test(spw, a_pitch_past_the_guess_is_held_or_refused);
    tcase_add_test(spw, disabled_passes_everything);
    suite_add_tcase(s, spw);
    return s;
}
