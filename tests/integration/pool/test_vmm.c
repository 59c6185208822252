/* Program-managed VMM (cuMemCreate, cuMemMap and the calls around them):
 * the driver's documented rules hold under spillway as without it ("both"),
 * and spillway counts a handle once, until the driver would free its
 * memory, with no drift over PyTorch-like grow and shrink cycles and
 * concurrent threads ("spillway"). */
#include "tests/integration/pool/common.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

/* Created and mapped at va with read-write access on device 0. */
static CUmemGenericAllocationHandle mapped(CUdeviceptr va, size_t size,
                                           const CUmemAllocationProp *prop)
{
    CUmemGenericAllocationHandle h;
    CU_OK(cuMemCreate(&h, size, prop, 0));
    CU_OK(cuMemMap(va, size, 0, h, 0));
    set_rw(va, size, 0);
    return h;
}

/* A handle released while mapped keeps its memory (and bytes) until its
 * last unmap; one unmap may span several handles, never part of one. */
START_TEST(release_while_mapped_and_unmaps_over_handles)
{
    use_device(0);
    CUmemAllocationProp prop = device_prop(0);
    CUdeviceptr va;
    CU_OK(cuMemAddressReserve(&va, 16 * MiB, PAGE, 0, 0));
    CUmemGenericAllocationHandle h = mapped(va, 4 * MiB, &prop);
    CUmemGenericAllocationHandle g = mapped(va + 4 * MiB, 8 * MiB, &prop);
    put(va, 12 * MiB, 3);
    CU_OK(cuMemRelease(h));
    CU_OK(cuMemRelease(g));
    ck_assert_int_eq(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
    expect(va, 12 * MiB, 3);
    /* Part of a mapping, or a range with a hole: refused, nothing done. */
    ck_assert_int_eq(cuMemUnmap(va, 2 * MiB), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemUnmap(va, 6 * MiB), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemUnmap(va + 2 * MiB, 2 * MiB), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemUnmap(va, 16 * MiB), CUDA_ERROR_INVALID_VALUE);
    expect(va, 12 * MiB, 3);
    CU_OK(cuMemUnmap(va, 12 * MiB)); /* both handles at once */
    CUmemGenericAllocationHandle r;
    ck_assert_int_eq(cuMemRetainAllocationHandle(&r, (void *)(uintptr_t)va),
                     CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemUnmap(va, 12 * MiB), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemAddressFree(va, 16 * MiB));
}
END_TEST

/* Mapping twice at one VA, a VA not reserved, a handle that is not one:
 * the driver's answers. */
START_TEST(map_errors_are_the_drivers)
{
    use_device(0);
    CUmemAllocationProp prop = device_prop(0);
    CUdeviceptr va, other;
    CU_OK(cuMemAddressReserve(&va, 16 * MiB, PAGE, 0, 0));
    CUmemGenericAllocationHandle h, g;
    CU_OK(cuMemCreate(&h, 4 * MiB, &prop, 0));
    CU_OK(cuMemCreate(&g, 4 * MiB, &prop, 0));
    CU_OK(cuMemMap(va, 4 * MiB, 0, h, 0));
    ck_assert_int_eq(cuMemMap(va, 4 * MiB, 0, g, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemMap(va + 2 * MiB, 4 * MiB, 0, g, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemMap(va + 14 * MiB, 4 * MiB, 0, g, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemMap(va + 4 * MiB, 4 * MiB, 0, g, 1), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemAddressReserve(&other, 4 * MiB, PAGE, 0, 0));
    CU_OK(cuMemAddressFree(other, 4 * MiB)); /* a VA reserved no longer */
    ck_assert_int_eq(cuMemMap(other, 4 * MiB, 0, g, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemMap(va + 4 * MiB, 4 * MiB, 0, 12345, 0), CUDA_ERROR_INVALID_VALUE);
    /* Nothing half done: the VA maps g whole afterwards. */
    CU_OK(cuMemMap(va + 4 * MiB, 4 * MiB, 0, g, 0));
    set_rw(va, 8 * MiB, 0);
    put(va, 8 * MiB, 9);
    expect(va, 8 * MiB, 9);
    CU_OK(cuMemUnmap(va, 8 * MiB));
    CU_OK(cuMemRelease(h));
    CU_OK(cuMemRelease(g));
    ck_assert_int_eq(cuMemRelease(g), CUDA_ERROR_INVALID_VALUE);
    CUmemAllocationProp got;
    ck_assert_int_eq(cuMemGetAllocationPropertiesFromHandle(&got, 12345), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemRelease(12345), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemAddressFree(va, 16 * MiB));
}
END_TEST

/* One handle at two VAs shows the same bytes through both; either unmap
 * leaves the other's. The retain from any address in a mapping answers the
 * handle, one reference more each time. */
START_TEST(a_handle_at_two_vas)
{
    use_device(0);
    CUmemAllocationProp prop = device_prop(0);
    CUdeviceptr a, b;
    CU_OK(cuMemAddressReserve(&a, 8 * MiB, PAGE, 0, 0));
    CU_OK(cuMemAddressReserve(&b, 8 * MiB, PAGE, 0, 0));
    CUmemGenericAllocationHandle h = mapped(a, 8 * MiB, &prop);
    CU_OK(cuMemMap(b, 8 * MiB, 0, h, 0));
    set_rw(b, 8 * MiB, 0);
    put(a, 8 * MiB, 5);
    expect(b, 8 * MiB, 5);
    CUmemGenericAllocationHandle r1, r2;
    CU_OK(cuMemRetainAllocationHandle(&r1, (void *)(uintptr_t)(a + 5 * MiB + 3)));
    CU_OK(cuMemRetainAllocationHandle(&r2, (void *)(uintptr_t)(b + 8 * MiB - 1)));
    ck_assert(r1 == h && r2 == h);
    CU_OK(cuMemRelease(h));
    CU_OK(cuMemRelease(r1));
    CU_OK(cuMemUnmap(a, 8 * MiB));
    expect(b, 8 * MiB, 5);
    put(b, 8 * MiB, 6);
    CU_OK(cuMemMap(a, 8 * MiB, 0, r2, 0)); /* still held: r2's reference */
    set_rw(a, 8 * MiB, 0);
    expect(a, 8 * MiB, 6);
    CU_OK(cuMemRelease(r2));
    ck_assert_int_eq(cuMemRelease(r2), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemUnmap(b, 8 * MiB));
    expect(a, 8 * MiB, 6);
    CU_OK(cuMemUnmap(a, 8 * MiB));
    CU_OK(cuMemAddressFree(a, 8 * MiB));
    CU_OK(cuMemAddressFree(b, 8 * MiB));
}
END_TEST

/* Properties answer what was asked; granularity as the driver's. */
START_TEST(properties_answer_what_was_asked)
{
    use_device(0);
    CUmemAllocationProp prop = device_prop(0);
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    size_t gran = 0, rec = 0;
    CU_OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CU_OK(cuMemGetAllocationGranularity(&rec, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    ck_assert_uint_eq(gran, PAGE);
    ck_assert_uint_ge(rec, gran);
    CUmemGenericAllocationHandle h;
    CU_OK(cuMemCreate(&h, 2 * gran, &prop, 0));
    CUmemAllocationProp got;
    CU_OK(cuMemGetAllocationPropertiesFromHandle(&got, h));
    ck_assert_int_eq(got.type, CU_MEM_ALLOCATION_TYPE_PINNED);
    ck_assert_int_eq(got.requestedHandleTypes, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    ck_assert_int_eq(got.location.type, CU_MEM_LOCATION_TYPE_DEVICE);
    ck_assert_int_eq(got.location.id, 0);
    CUdeviceptr va;
    CU_OK(cuMemAddressReserve(&va, 2 * gran, 0, 0, 0));
    CU_OK(cuMemMap(va, 2 * gran, 0, h, 0));
    CUmemGenericAllocationHandle r;
    CU_OK(cuMemRetainAllocationHandle(&r, (void *)(uintptr_t)(va + gran)));
    CU_OK(cuMemGetAllocationPropertiesFromHandle(&got, r));
    ck_assert_int_eq(got.requestedHandleTypes, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    CU_OK(cuMemRelease(r));
    CU_OK(cuMemUnmap(va, 2 * gran));
    CU_OK(cuMemRelease(h));
    CU_OK(cuMemAddressFree(va, 2 * gran));
}
END_TEST

/* What cuMemGetAccess says is what cuMemSetAccess set. */
START_TEST(get_access_answers_what_was_set)
{
    use_device(0);
    CUmemAllocationProp prop = device_prop(0);
    CUdeviceptr va;
    CU_OK(cuMemAddressReserve(&va, 4 * MiB, PAGE, 0, 0));
    CUmemGenericAllocationHandle h;
    CU_OK(cuMemCreate(&h, 4 * MiB, &prop, 0));
    CU_OK(cuMemMap(va, 4 * MiB, 0, h, 0));
    CUmemLocation dev0 = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
    unsigned long long flags = 99;
    CU_OK(cuMemGetAccess(&flags, &dev0, va + MiB));
    ck_assert_uint_eq(flags, CU_MEM_ACCESS_FLAGS_PROT_NONE);
    /* (Read-only is granted read-write under spillway: README.) */
    set_rw(va, 4 * MiB, 0);
    CU_OK(cuMemGetAccess(&flags, &dev0, va + 3 * MiB));
    ck_assert_uint_eq(flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    CUmemLocation dev1 = {CU_MEM_LOCATION_TYPE_DEVICE, 1};
    CU_OK(cuMemGetAccess(&flags, &dev1, va));
    ck_assert_uint_eq(flags, CU_MEM_ACCESS_FLAGS_PROT_NONE); /* not granted there */
    CU_OK(cuMemUnmap(va, 4 * MiB));
    CU_OK(cuMemRelease(h));
    CU_OK(cuMemAddressFree(va, 4 * MiB));
}
END_TEST

/* A range mixing pool handles with the driver's (a handle type the pool
 * cannot serve): one cuMemSetAccess and one cuMemUnmap cover it all. */
START_TEST(access_and_unmap_over_pooled_and_driver_handles)
{
    use_device(0);
    CUmemAllocationProp pooled_prop = device_prop(0), drv_prop = device_prop(0);
    drv_prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_WIN32_KMT;
    CUdeviceptr va;
    CU_OK(cuMemAddressReserve(&va, 16 * MiB, PAGE, 0, 0));
    CUmemGenericAllocationHandle h[4];
    for (int i = 0; i < 4; i++) {
        CU_OK(cuMemCreate(&h[i], 4 * MiB, i % 2 ? &drv_prop : &pooled_prop, 0));
        CU_OK(cuMemMap(va + (size_t)i * 4 * MiB, 4 * MiB, 0, h[i], 0));
        CU_OK(cuMemRelease(h[i]));
    }
    set_rw(va, 16 * MiB, 0);
    put(va, 16 * MiB, 11);
    expect(va, 16 * MiB, 11);
    ck_assert_int_eq(cuMemUnmap(va, 6 * MiB), CUDA_ERROR_INVALID_VALUE);
    expect(va, 16 * MiB, 11);
    CU_OK(cuMemUnmap(va, 16 * MiB));
    CU_OK(cuMemAddressFree(va, 16 * MiB));
}
END_TEST

/* An export (PyTorch's IPC of an expandable segment) of a handle mapped
 * at two VAs: both keep showing the same bytes, which the exported
 * descriptor shares; its count stays one handle's until its memory goes. */
START_TEST(export_of_a_handle_at_two_vas)
{
    use_device(0);
    CUmemAllocationProp prop = device_prop(0);
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    uint64_t used0 = pooled() ? used_on(0) : 0;
    CUdeviceptr a, b;
    CU_OK(cuMemAddressReserve(&a, 8 * MiB, PAGE, 0, 0));
    CU_OK(cuMemAddressReserve(&b, 8 * MiB, PAGE, 0, 0));
    CUmemGenericAllocationHandle h = mapped(a, 8 * MiB, &prop), imported;
    /* What the driver holds outside the pool (h is the pool's until its export). */
    size_t driver0 = fakecuda_device_bytes_used(0) - (pooled() ? pool_counters(0).pool_bytes : 8 * MiB);
    CU_OK(cuMemMap(b, 8 * MiB, 0, h, 0));
    set_rw(b, 8 * MiB, 0);
    put(a, 8 * MiB, 31);
    int fd = -1;
    CU_OK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    expect(a, 8 * MiB, 31);
    expect(b, 8 * MiB, 31);
    put(b, 8 * MiB, 32);
    expect(a, 8 * MiB, 32);
    if (pooled())
        ck_assert_uint_eq(used_on(0) - used0, 8 * MiB);
    /* What another process would map: the same bytes. */
    CU_OK(cuMemImportFromShareableHandle(&imported, (void *)(uintptr_t)fd,
                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    CUdeviceptr c;
    CU_OK(cuMemAddressReserve(&c, 8 * MiB, PAGE, 0, 0));
    CU_OK(cuMemMap(c, 8 * MiB, 0, imported, 0));
    set_rw(c, 8 * MiB, 0);
    expect(c, 8 * MiB, 32);
    CU_OK(cuMemUnmap(c, 8 * MiB));
    CU_OK(cuMemRelease(imported));
    CU_OK(cuMemAddressFree(c, 8 * MiB));
    /* The retain answers the handle that was mapped, after the export too. */
    CUmemGenericAllocationHandle r;
    CU_OK(cuMemRetainAllocationHandle(&r, (void *)(uintptr_t)(b + MiB)));
    ck_assert(r == h);
    CUmemAllocationProp got;
    CU_OK(cuMemGetAllocationPropertiesFromHandle(&got, r));
    ck_assert_int_eq(got.requestedHandleTypes, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    CU_OK(cuMemRelease(r));
    CU_OK(cuMemRelease(h));
    ck_assert_int_eq(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemUnmap(a, 8 * MiB));
    expect(b, 8 * MiB, 32);
    if (pooled())
        ck_assert_uint_eq(used_on(0) - used0, 8 * MiB);
    CU_OK(cuMemUnmap(b, 8 * MiB));
    close(fd);
    /* The driver's memory went too: no reference left behind. */
    size_t driver = fakecuda_device_bytes_used(0);
    if (pooled()) {
        ck_assert_uint_eq(used_on(0), used0);
        driver -= pool_counters(0).pool_bytes;
    }
    ck_assert_uint_eq(driver, driver0);
    CU_OK(cuMemAddressFree(a, 8 * MiB));
    CU_OK(cuMemAddressFree(b, 8 * MiB));
}
END_TEST

/* ---- spillway only ---------------------------------------------------- */

/* Counted once per handle, however often mapped, until the driver would
 * free its memory: the last of its release and its unmaps. */
START_TEST(counted_once_until_the_memory_goes)
{
    if (!pooled())
        return;
    use_device(0);
    CUmemAllocationProp prop = device_prop(0);
    uint64_t used0 = used_on(0);
    CUdeviceptr a, b;
    CU_OK(cuMemAddressReserve(&a, 8 * MiB, PAGE, 0, 0));
    CU_OK(cuMemAddressReserve(&b, 8 * MiB, PAGE, 0, 0));
    CUmemGenericAllocationHandle h = mapped(a, 8 * MiB, &prop), r;
    CU_OK(cuMemMap(b, 8 * MiB, 0, h, 0));
    ck_assert_uint_eq(used_on(0) - used0, 8 * MiB);
    ck_assert_uint_eq(pool_counters(0).in_use_bytes, 8 * MiB);
    CU_OK(cuMemRelease(h));
    CU_OK(cuMemUnmap(a, 8 * MiB));
    ck_assert_uint_eq(used_on(0) - used0, 8 * MiB);
    CU_OK(cuMemRetainAllocationHandle(&r, (void *)(uintptr_t)(b + MiB)));
    CU_OK(cuMemUnmap(b, 8 * MiB));
    ck_assert_uint_eq(used_on(0) - used0, 8 * MiB); /* r holds it */
    CU_OK(cuMemRelease(r));
    ck_assert_uint_eq(used_on(0), used0);
    ck_assert_uint_eq(pool_counters(0).in_use_bytes, 0);
    CU_OK(cuMemAddressFree(a, 8 * MiB));
    CU_OK(cuMemAddressFree(b, 8 * MiB));
}
END_TEST

/* PyTorch's expandable segments: 2 MiB handles mapped into one reserved
 * range as it grows, unmapped and released as it shrinks, many times, with
 * a shareable handle type, one of them now and then exported (IPC): no
 * drift. */
START_TEST(grow_and_shrink_cycles_do_not_drift)
{
    if (!pooled())
        return;
    use_device(0);
    CUmemAllocationProp prop = device_prop(0);
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    uint64_t used0 = used_on(0);
    CUdeviceptr va;
    const size_t n = 24; /* 48 MiB of the 64 MiB limit */
    CU_OK(cuMemAddressReserve(&va, n * PAGE, PAGE, 0, 0));
    for (int cycle = 0; cycle < 50; cycle++) {
        size_t want = 1 + (size_t)(cycle * 7) % n;
        for (size_t i = 0; i < want; i++) {
            CUmemGenericAllocationHandle h;
            CU_OK(cuMemCreate(&h, PAGE, &prop, 0));
            CU_OK(cuMemMap(va + i * PAGE, PAGE, 0, h, 0));
            if (i == want / 2 && cycle % 5 == 0) {
                /* Shared with another process: the driver's from now on. */
                set_rw(va + i * PAGE, PAGE, 0);
                int fd;
                CU_OK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
                close(fd);
            }
            CU_OK(cuMemRelease(h));
        }
        set_rw(va, want * PAGE, 0);
        ck_assert_uint_eq(used_on(0) - used0, want * PAGE);
        /* Shrinks from the end, a few handles per unmap. */
        for (size_t end = want; end > 0;) {
            size_t k = end >= 3 ? 3 : end;
            CU_OK(cuMemUnmap(va + (end - k) * PAGE, k * PAGE));
            end -= k;
        }
        ck_assert_uint_eq(used_on(0), used0);
    }
    ck_assert_uint_eq(pool_counters(0).in_use_bytes, 0);
    CU_OK(cuMemAddressFree(va, n * PAGE));
}
END_TEST

/* A handle mapped at two VAs cannot spill (both would have to move);
 * once one of them is unmapped, the other's pages are spillable again and
 * keep every byte: the pool makes room for new memory by moving them, as
 * it would any other cold page. Either mapping may be the one left. */
START_TEST(a_handle_left_with_one_mapping_spills_again)
{
    if (!pooled() || !preallocating())
        return;
    use_device(0);
    CUmemAllocationProp prop = device_prop(0);
    CUdeviceptr a, b;
    CU_OK(cuMemAddressReserve(&a, 32 * MiB, PAGE, 0, 0));
    CU_OK(cuMemAddressReserve(&b, 32 * MiB, PAGE, 0, 0));
    for (int keep_first = 0; keep_first < 2; keep_first++) {
        CUmemGenericAllocationHandle h = mapped(a, 32 * MiB, &prop);
        CU_OK(cuMemMap(b, 32 * MiB, 0, h, 0));
        set_rw(b, 32 * MiB, 0);
        CU_OK(cuMemRelease(h));
        CUdeviceptr left = keep_first ? a : b;
        put(left, 32 * MiB, 21 + (unsigned)keep_first);
        CU_OK(cuMemUnmap(keep_first ? b : a, 32 * MiB));
        /* 48 MiB more of a 64 MiB pool: 16 MiB of h must move out. */
        CUdeviceptr p;
        CU_OK(cuMemAlloc(&p, 48 * MiB));
        CU_OK(cuMemsetD8(p, 0x5a, 48 * MiB));
        size_t on_host = 0; /* h's pages moved out, not the new ones put on the host */
        for (size_t off = 0; off < 32 * MiB; off += PAGE)
            on_host += fakecuda_mapped_location(left + off) == -1;
        ck_assert_uint_ge(on_host * PAGE, 16 * MiB);
        expect(left, 32 * MiB, 21 + (unsigned)keep_first);
        expect_byte(p, 48 * MiB, 0x5a);
        CU_OK(cuMemFree(p));
        CU_OK(cuMemUnmap(left, 32 * MiB));
        ck_assert_uint_eq(pool_counters(0).in_use_bytes, 0);
    }
    CU_OK(cuMemAddressFree(a, 32 * MiB));
    CU_OK(cuMemAddressFree(b, 32 * MiB));
}
END_TEST

/* An export the driver refuses for its arguments (no place for the
 * descriptor, flags) changes nothing: the handle stays pooled. */
START_TEST(a_refused_export_leaves_the_handle_pooled)
{
    if (!pooled())
        return;
    use_device(0);
    CUmemAllocationProp prop = device_prop(0);
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CUmemGenericAllocationHandle h;
    CU_OK(cuMemCreate(&h, 8 * MiB, &prop, 0));
    uint64_t ipc0 = pool_counters(0).passthrough_bytes[SPILLWAY_PT_IPC];
    int fd;
    ck_assert_int_eq(cuMemExportToShareableHandle(NULL, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                     CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 1),
                     CUDA_ERROR_INVALID_VALUE);
    struct spillway_pool_counters pc = pool_counters(0);
    ck_assert_uint_eq(pc.passthrough_bytes[SPILLWAY_PT_IPC], ipc0);
    ck_assert_uint_eq(pc.in_use_bytes, 8 * MiB); /* still the pool's */
    CU_OK(cuMemRelease(h));
}
END_TEST

struct worker {
    int id;
    int failures;
};

/* Map, use, unmap, release on a range of its own, many times. */
static void *churn(void *arg)
{
    struct worker *w = arg;
    CUcontext c;
    if (cuDevicePrimaryCtxRetain(&c, 0) != CUDA_SUCCESS || cuCtxSetCurrent(c) != CUDA_SUCCESS) {
        w->failures++;
        return NULL;
    }
    CUmemAllocationProp prop = device_prop(0);
    CUdeviceptr va;
    if (cuMemAddressReserve(&va, 4 * MiB, PAGE, 0, 0) != CUDA_SUCCESS) {
        w->failures++;
        return NULL;
    }
    CUmemAccessDesc d = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    for (int i = 0; i < 100; i++) {
        CUmemGenericAllocationHandle h;
        unsigned char v = (unsigned char)(w->id * 16 + i), back = 0;
        bool release_first = i % 2;
        if (cuMemCreate(&h, 4 * MiB, &prop, 0) != CUDA_SUCCESS ||
            cuMemMap(va, 4 * MiB, 0, h, 0) != CUDA_SUCCESS ||
            cuMemSetAccess(va, 4 * MiB, &d, 1) != CUDA_SUCCESS ||
            cuMemsetD8(va, v, 4 * MiB) != CUDA_SUCCESS ||
            cuMemcpyDtoH(&back, va + 3 * MiB, 1) != CUDA_SUCCESS || back != v ||
            (release_first && cuMemRelease(h) != CUDA_SUCCESS) ||
            cuMemUnmap(va, 4 * MiB) != CUDA_SUCCESS ||
            (!release_first && cuMemRelease(h) != CUDA_SUCCESS)) {
            w->failures++;
            break;
        }
    }
    if (cuMemAddressFree(va, 4 * MiB) != CUDA_SUCCESS)
        w->failures++;
    return NULL;
}

START_TEST(threads_map_and_release_their_own_handles)
{
    if (!pooled())
        return;
    use_device(0);
    uint64_t used0 = used_on(0);
    pthread_t t[4];
    struct worker w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){i, 0};
        ck_assert_int_eq(pthread_create(&t[i], NULL, churn, &w[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(pthread_join(t[i], NULL), 0);
        ck_assert_int_eq(w[i].failures, 0);
    }
    ck_assert_uint_eq(used_on(0), used0);
    ck_assert_uint_eq(pool_counters(0).in_use_bytes, 0);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("pool_vmm");
    TCase *both = tcase_create("both");
    tcase_set_timeout(both, 60);
    tcase_add_test(both, release_while_mapped_and_unmaps_over_handles);
    tcase_add_test(both, map_errors_are_the_drivers);
    tcase_add_test(both, a_handle_at_two_vas);
    tcase_add_test(both, properties_answer_what_was_asked);
    tcase_add_test(both, get_access_answers_what_was_set);
    tcase_add_test(both, access_and_unmap_over_pooled_and_driver_handles);
    tcase_add_test(both, export_of_a_handle_at_two_vas);
    suite_add_tcase(s, both);
    TCase *sw = tcase_create("spillway");
    tcase_set_timeout(sw, 60);
    tcase_add_test(sw, counted_once_until_the_memory_goes);
    tcase_add_test(sw, grow_and_shrink_cycles_do_not_drift);
    tcase_add_test(sw, a_handle_left_with_one_mapping_spills_again);
    tcase_add_test(sw, a_refused_export_leaves_the_handle_pooled);
    tcase_add_test(sw, threads_map_and_release_their_own_handles);
    suite_add_tcase(s, sw);
    return s;
}
