/* What the driver answers about memory, with and without spillway: a
 * JAX-like VMM arena (handles, maps, ranges, properties, release while
 * mapped), and address ranges and pointer attributes of cuMemAlloc
 * blocks, live and freed. */
#include "tests/integration/pool/common.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

START_TEST(jax_like_arena)
{
    use_device(0);
    size_t handles_before = fakecuda_live_handles();
    CUmemAllocationProp prop = device_prop(0);
    size_t g = 0;
    CU_OK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    ck_assert_uint_eq(g, PAGE);
    CUdeviceptr va;
    CU_OK(cuMemAddressReserve(&va, 32 * MiB, PAGE, 0, 0));
    CUmemGenericAllocationHandle h1, h2, again;
    CU_OK(cuMemCreate(&h1, 8 * MiB, &prop, 0));
    CU_OK(cuMemCreate(&h2, 2 * MiB, &prop, 0));
    ck_assert_int_ne(cuMemMap(va, 4 * MiB, 0, h1, 0), CUDA_SUCCESS); /* a handle maps whole */
    CU_OK(cuMemMap(va, 8 * MiB, 0, h1, 0));
    CU_OK(cuMemMap(va + 8 * MiB, 2 * MiB, 0, h2, 0));
    set_rw(va, 10 * MiB, 0);
    put(va, 10 * MiB, 7);
    expect(va, 10 * MiB, 7);
    /* The program's mappings, as the driver answers them. */
    CUdeviceptr base;
    size_t size;
    CU_OK(cuMemGetAddressRange(&base, &size, va + 9 * MiB));
    ck_assert(base == va + 8 * MiB && size == 2 * MiB);
    CU_OK(cuMemGetAddressRange(&base, &size, va + 3 * MiB));
    ck_assert(base == va && size == 8 * MiB);
    CU_OK(cuMemRetainAllocationHandle(&again, (void *)(uintptr_t)(va + MiB)));
    ck_assert(again == h1);
    CU_OK(cuMemRelease(again));
    CUmemAllocationProp got;
    CU_OK(cuMemGetAllocationPropertiesFromHandle(&got, h2));
    ck_assert(got.type == CU_MEM_ALLOCATION_TYPE_PINNED &&
              got.location.type == CU_MEM_LOCATION_TYPE_DEVICE && got.location.id == 0);
    /* Unmapped and mapped elsewhere, a handle keeps its bytes. */
    CU_OK(cuMemUnmap(va + 8 * MiB, 2 * MiB));
    CU_OK(cuMemMap(va + 16 * MiB, 2 * MiB, 0, h2, 0));
    set_rw(va + 16 * MiB, 2 * MiB, 0);
    unsigned char *want = malloc(10 * MiB), *back = malloc(2 * MiB);
    fill_pattern(want, 10 * MiB, 7);
    CU_OK(cuMemcpyDtoH(back, va + 16 * MiB, 2 * MiB));
    ck_assert(memcmp(back, want + 8 * MiB, 2 * MiB) == 0);
    free(want);
    free(back);
    /* Released while mapped: alive until unmapped (as the driver). */
    CU_OK(cuMemRelease(h1));
    expect(va, 8 * MiB, 7);
    CU_OK(cuMemUnmap(va, 8 * MiB));
    CU_OK(cuMemUnmap(va + 16 * MiB, 2 * MiB));
    CU_OK(cuMemRelease(h2));
    ck_assert_int_eq(cuMemRelease(h2), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemAddressFree(va, 32 * MiB));
    if (pooled()) {
        /* Pool pages, not driver handles of the program's own. */
        ck_assert_uint_le(fakecuda_live_handles(), handles_before + limit_bytes() / PAGE);
        ck_assert_uint_eq(pool_counters(0).in_use_bytes, 0);
        struct spillway_counters c;
        ck_assert_int_eq(get_counters(0, &c), 0);
        ck_assert_uint_eq(c.used, 0);
        ck_assert_uint_ge(c.peak, 10 * MiB);
    } else {
        ck_assert_uint_eq(fakecuda_live_handles(), handles_before);
    }
}
END_TEST

START_TEST(address_range_and_attributes)
{
    CUcontext ctx = use_device(0);
    CUdeviceptr p, q;
    CU_OK(cuMemAlloc(&p, 1000));
    CU_OK(cuMemAlloc(&q, 3 * MiB + 5));
    CUdeviceptr base;
    size_t size;
    CU_OK(cuMemGetAddressRange(&base, &size, p + 999));
    ck_assert(base == p && size == 1000);
    CU_OK(cuMemGetAddressRange(NULL, &size, q + 3 * MiB));
    ck_assert_uint_eq(size, 3 * MiB + 5);
    unsigned type = 0, managed = 9, mapped = 0;
    int ordinal = -1;
    CUcontext owner = NULL;
    CUdeviceptr start = 0, devptr = 0;
    size_t rsize = 0;
    unsigned long long id_p = 0, id_q = 0;
    CU_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p + 10));
    ck_assert_uint_eq(type, CU_MEMORYTYPE_DEVICE);
    CU_OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
    ck_assert_int_eq(ordinal, 0);
    CU_OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, p));
    ck_assert_ptr_eq(owner, ctx);
    CU_OK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, q + 77));
    CU_OK(cuPointerGetAttribute(&rsize, CU_POINTER_ATTRIBUTE_RANGE_SIZE, q + 77));
    ck_assert(start == q && rsize == 3 * MiB + 5);
    CU_OK(cuPointerGetAttribute(&id_p, CU_POINTER_ATTRIBUTE_BUFFER_ID, p));
    CU_OK(cuPointerGetAttribute(&id_q, CU_POINTER_ATTRIBUTE_BUFFER_ID, q));
    ck_assert(id_p && id_q && id_p != id_q);
    void *host = (void *)1;
    ck_assert_int_eq(cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, p),
                     CUDA_ERROR_INVALID_VALUE);
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_IS_MANAGED, CU_POINTER_ATTRIBUTE_MAPPED,
                                   CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                   CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    void *data[] = {&managed, &mapped, &devptr, &ordinal};
    ordinal = -1;
    CU_OK(cuPointerGetAttributes(4, attrs, data, q + 1));
    ck_assert(managed == 0 && mapped == 1 && devptr == q + 1 && ordinal == 0);
    {
        /* As the runtime's cudaPointerGetAttributes asks (the plural call
         * answers NULL where the singular one fails). */
        CUpointer_attribute rt[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                    CU_POINTER_ATTRIBUTE_HOST_POINTER,
                                    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
        void *rtdata[] = {&type, &host, &ordinal};
        CU_OK(cuPointerGetAttributes(3, rt, rtdata, q));
        ck_assert(type == CU_MEMORYTYPE_DEVICE && host == NULL && ordinal == 0);
    }
    /* Freed: unknown memory, with the driver's answers. */
    CU_OK(cuMemFree(p));
    ck_assert_int_eq(cuMemGetAddressRange(&base, &size, p), CUDA_ERROR_NOT_FOUND);
    ck_assert_int_eq(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p),
                     CUDA_ERROR_INVALID_VALUE);
    ordinal = 5;
    CU_OK(cuPointerGetAttributes(4, attrs, data, p));
    ck_assert(mapped == 0 && devptr == 0 && ordinal == -2);
    ck_assert_int_eq(cuMemFree(p), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemFree(q + 8), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFree(q));
}
END_TEST

/* An allocation made in a context created through the ABI a runtime
 * before CUDA 12.5 asks cuGetProcAddress for (cuCtxCreate_v2: flags and
 * device) answers that context as CONTEXT, and goes with it. */
START_TEST(context_of_an_allocation_in_a_context_made_by_the_old_abi)
{
    use_device(0);
    CUresult (*create)(CUcontext *, unsigned, CUdevice) = NULL;
    CUdriverProcAddressQueryResult found;
    CU_OK(cuGetProcAddress("cuCtxCreate", (void **)&create, 11000, CU_GET_PROC_ADDRESS_DEFAULT, &found));
    ck_assert_ptr_nonnull(create);
    CUcontext own, owner = NULL;
    CU_OK(create(&own, 0, 0));
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 5 * MiB));
    CU_OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, p + 1));
    ck_assert_ptr_eq(owner, own);
    CU_OK(cuCtxDestroy(own));
    ck_assert_int_eq(cuMemFree(p), CUDA_ERROR_INVALID_VALUE);
}
END_TEST

/* One byte past an allocation's end is not the allocation: spillway
 * answers with (base, requested size), which must contain the pointer (the
 * real driver may round its size up, but its range always does), so the
 * rest of a small block's 1 KiB slab slot or of a large block's 4 KiB
 * granule is unknown memory, by each call, as fakecuda answers. */
START_TEST(one_byte_past_the_end_is_unknown)
{
    use_device(0);
    static const size_t sizes[] = {1000, 3 * MiB + 5};
    for (int i = 0; i < 2; i++) {
        size_t n = sizes[i];
        CUdeviceptr p, base = 0;
        size_t size = 0;
        CU_OK(cuMemAlloc(&p, n));
        CU_OK(cuMemGetAddressRange(&base, &size, p + n - 1));
        ck_assert(base == p && size == n);
        ck_assert_int_eq(cuMemGetAddressRange(&base, &size, p + n), CUDA_ERROR_NOT_FOUND);
        unsigned type = 9, mapped = 9;
        ck_assert_int_eq(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p + n),
                         CUDA_ERROR_INVALID_VALUE);
        CUdeviceptr start = 1;
        CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MAPPED,
                                       CU_POINTER_ATTRIBUTE_RANGE_START_ADDR};
        void *data[] = {&mapped, &start};
        CU_OK(cuPointerGetAttributes(2, attrs, data, p + n));
        ck_assert_msg(mapped == 0 && start == 0, "%zu bytes: past the end mapped %u, range at %#llx",
                      n, mapped, (unsigned long long)start);
        CU_OK(cuMemFree(p));
    }
}
END_TEST

/* UCX, libfabric and Open MPI set SYNC_MEMOPS on each device buffer a NIC
 * will read; the driver refuses it on VMM memory (the pool's pages), so
 * spillway sets the context's CU_CTX_SYNC_MEMOPS instead. */
START_TEST(sync_memops_of_an_allocation)
{
    use_device(0);
    CUdeviceptr small, large;
    CU_OK(cuMemAlloc(&small, 1000));
    CU_OK(cuMemAlloc(&large, 3 * MiB));
    unsigned flags = 0, on = 1, off = 0, got = 7;
    CU_OK(cuCtxGetFlags(&flags));
    CU_OK(cuPointerSetAttribute(&on, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, small + 10));
    CU_OK(cuPointerSetAttribute(&on, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, large));
    CU_OK(cuPointerGetAttribute(&got, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, large + MiB));
    ck_assert_uint_eq(got, 1);
    if (pooled()) {
        unsigned now = 0;
        CU_OK(cuCtxGetFlags(&now));
        ck_assert_uint_eq(now, flags | CU_CTX_SYNC_MEMOPS);
    }
    /* Unset: the driver forgets it; spillway's context stays synchronous. */
    CU_OK(cuPointerSetAttribute(&off, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, small));
    CU_OK(cuMemFree(small));
    ck_assert_int_eq(cuPointerSetAttribute(&on, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, small),
                     CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuPointerSetAttribute(NULL, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, large),
                     CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFree(large));
    CU_OK(cuCtxSetFlags(flags));
}
END_TEST

/* SYNC_MEMOPS set on an allocation while another device's context is
 * current (a multi-device process: UCX sets it on each buffer it meets,
 * whatever context is current) belongs to the allocation's device: asked
 * in that device's context it answers 1, and the current context of the
 * other device is left as it was. */
START_TEST(sync_memops_of_another_devices_allocation)
{
    CUcontext c0 = use_device(0);
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 1000));
    unsigned f0 = 0, f1 = 0, now = 0, on = 1, got = 7;
    CU_OK(cuCtxGetFlags(&f0));
    use_device(1);
    CU_OK(cuCtxGetFlags(&f1));
    CU_OK(cuPointerSetAttribute(&on, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p));
    CU_OK(cuCtxGetFlags(&now));
    ck_assert_msg(now == f1, "device 1's context got flags %#x, had %#x", now, f1);
    CU_OK(cuCtxSetCurrent(c0));
    CU_OK(cuPointerGetAttribute(&got, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p));
    ck_assert_msg(got == 1, "SYNC_MEMOPS of device 0's allocation, asked in its context: %u", got);
    if (pooled()) {
        CU_OK(cuCtxGetFlags(&now));
        ck_assert_uint_eq(now, f0 | CU_CTX_SYNC_MEMOPS);
    }
    CU_OK(cuMemFree(p));
    CU_OK(cuCtxSetFlags(f0));
}
END_TEST

/* CU_POINTER_ATTRIBUTE_BUFFER_ID: "Every memory allocation from any of the
 * CUDA memory allocation APIs will have a unique ID over a process
 * lifetime. Subsequent allocations do not reuse IDs from previous freed
 * allocations." Registration caches (UCX, libfabric, Open MPI, NCCL's and
 * PyTorch's IPC caches) key on it to tell a buffer freed and allocated
 * again at the same address from the one they registered. spillway gives
 * an address back at once (same-stream async reuse) or after a sync:
 * under it, each case below does get p's range again. */
static unsigned long long buffer_id(CUdeviceptr p)
{
    unsigned long long id = 0;
    CU_OK(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p));
    return id;
}

static unsigned long long block_id(CUdeviceptr p)
{
    unsigned long long id = 0;
    CU_OK(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID, p));
    return id;
}

enum how { SYNC, ASYNC, PITCH, FROM_POOL };

static CUdeviceptr alloc_how(enum how h, size_t n, CUstream s, CUmemoryPool pool)
{
    CUdeviceptr p = 0;
    size_t pitch = 0;
    switch (h) {
    case SYNC: CU_OK(cuMemAlloc(&p, n)); break;
    case ASYNC: CU_OK(cuMemAllocAsync(&p, n, s)); break;
    case PITCH: CU_OK(cuMemAllocPitch(&p, &pitch, n / 4, 4, 4)); break;
    case FROM_POOL: CU_OK(cuMemAllocFromPoolAsync(&p, n, pool, s)); break;
    }
    return p;
}

/* The IDs of p (n bytes) at its base and at its last byte: one ID. */
static unsigned long long id_of(CUdeviceptr p, size_t n, const char *what)
{
    unsigned long long id = buffer_id(p);
    ck_assert_msg(id != 0, "%s: no BUFFER_ID", what);
    ck_assert_msg(buffer_id(p + n - 1) == id, "%s: interior pointer has another BUFFER_ID", what);
    if (pooled())
        ck_assert_msg(block_id(p + n / 2) == block_id(p), "%s: MEMORY_BLOCK_ID", what);
    return id;
}

START_TEST(buffer_ids_are_never_reused)
{
    use_device(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUmemoryPool pool;
    CU_OK(cuDeviceGetDefaultMemPool(&pool, 0));
    static const size_t sizes[] = {1000, 3 * MiB + 4};
    static const char *const names[] = {"cuMemAlloc", "cuMemAllocAsync", "cuMemAllocPitch",
                                        "cuMemAllocFromPoolAsync"};
    for (int h = SYNC; h <= FROM_POOL; h++) {
        for (int k = 0; k < 2; k++) {
            size_t n = sizes[k];
            char what[96];
            snprintf(what, sizeof what, "%s of %zu bytes", names[h], n);
            bool async = h == ASYNC || h == FROM_POOL;
            CUdeviceptr p = alloc_how(h, n, s, pool), q = alloc_how(h, n, s, pool);
            unsigned long long idp = id_of(p, n, what), idq = id_of(q, n, what);
            ck_assert_msg(idp != idq, "%s: two live allocations share BUFFER_ID %llu", what, idp);
            unsigned long long blockp = pooled() ? block_id(p) : 0;
            if (pooled())
                ck_assert_msg(block_id(q) != blockp, "%s: two live allocations share a block ID", what);
            if (async) {
                CU_OK(cuMemFreeAsync(p, s)); /* taken back at once on s */
            } else {
                CU_OK(cuMemFree(p));
                CU_OK(cuCtxSynchronize());
            }
            CUdeviceptr again = alloc_how(h, n, s, pool);
            /* At p, or (a block placed on a page boundary once the slab
             * before it went back) over it: a cache keyed by address finds
             * p's entry either way. */
            if (pooled())
                ck_assert_msg(again < p + n && p < again + n, "%s: p's range was not reused", what);
            unsigned long long ida = id_of(again, n, what);
            ck_assert_msg(ida != idp && ida != idq, "%s: BUFFER_ID %llu reused", what, ida);
            if (pooled())
                ck_assert_msg(block_id(again) != blockp, "%s: MEMORY_BLOCK_ID reused", what);
            if (async) {
                CU_OK(cuMemFreeAsync(again, s));
                CU_OK(cuMemFreeAsync(q, s));
            } else {
                CU_OK(cuMemFree(again));
                CU_OK(cuMemFree(q));
            }
        }
    }
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("pool_addresses");
    TCase *both = tcase_create("both");
    tcase_set_timeout(both, 60);
    tcase_add_test(both, jax_like_arena);
    tcase_add_test(both, address_range_and_attributes);
    tcase_add_test(both, context_of_an_allocation_in_a_context_made_by_the_old_abi);
    tcase_add_test(both, one_byte_past_the_end_is_unknown);
    tcase_add_test(both, sync_memops_of_an_allocation);
    tcase_add_test(both, sync_memops_of_another_devices_allocation);
    tcase_add_test(both, buffer_ids_are_never_reused);
    suite_add_tcase(s, both);
    return s;
}
