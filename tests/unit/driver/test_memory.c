/* Conformance: linear device memory, pinned host memory, managed memory,
 * cuMemGetInfo, address ranges and pointer attributes. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/driver/common.h"

START_TEST(alloc_write_read_free)
{
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 1 * MiB));
    ck_assert_uint_ne(p, 0);
    ck_assert_uint_eq(p % 256, 0);
    CU_OK(cuMemsetD32(p, 0xabcd1234u, MiB / 4));
    expect_u32(p, 0xabcd1234u, MiB / 4);
    CU_OK(cuMemFree(p));
}
END_TEST

START_TEST(alloc_bad_arguments)
{
    CUdeviceptr p;
    CU_ERR(cuMemAlloc(NULL, 4096), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuMemAlloc(&p, 0), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemAlloc(&p, 4096));
    CU_OK(cuMemFree(p));
    CU_ERR(cuMemFree(p), CUDA_ERROR_INVALID_VALUE);           /* double free */
    CU_ERR(cuMemFree((CUdeviceptr)0x1234), CUDA_ERROR_INVALID_VALUE); /* never allocated */
}
END_TEST

START_TEST(out_of_memory_and_get_info)
{
    size_t free0, total;
    CU_OK(cuMemGetInfo(&free0, &total));
    ck_assert_uint_le(free0, total);
    CUdeviceptr p;
    CU_ERR(cuMemAlloc(&p, total + 64 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    CU_OK(cuMemAlloc(&p, 64 * MiB));
    size_t free1;
    CU_OK(cuMemGetInfo(&free1, &total));
    ck_assert_uint_le(free1, free0 - 64 * MiB);
    CU_OK(cuMemFree(p));
    CU_OK(cuMemGetInfo(&free1, &total));
    ck_assert_uint_ge(free1 + 8 * MiB, free0); /* the driver may keep a little */
    CU_ERR(cuMemGetInfo(NULL, &total), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuMemGetInfo(&free1, NULL), CUDA_ERROR_INVALID_VALUE);
}
END_TEST

START_TEST(capacity_is_fixed)
{
    if (!fakecuda_present())
        return; /* fakecuda only: the real card's free memory moves */
    size_t total, free;
    CU_OK(cuMemGetInfo(&free, &total));
    CUdeviceptr ps[64];
    int n = 0;
    while (n < 64 && cuMemAlloc(&ps[n], 16 * MiB) == CUDA_SUCCESS)
        n++;
    ck_assert_int_eq(n, (int)(total / (16 * MiB)));
    ck_assert_uint_eq(fakecuda_device_bytes_used(0), (size_t)n * 16 * MiB);
    CU_OK(cuMemGetInfo(&free, &total));
    ck_assert_uint_lt(free, 16 * MiB);
    CU_OK(cuMemFree(ps[--n]));
    CU_OK(cuMemAlloc(&ps[n++], 16 * MiB));
    while (n)
        CU_OK(cuMemFree(ps[--n]));
    ck_assert_uint_eq(fakecuda_device_bytes_used(0), 0);
}
END_TEST

START_TEST(pitch)
{
    CUdeviceptr p;
    size_t pitch = 0;
    CU_OK(cuMemAllocPitch(&p, &pitch, 1000, 10, 4));
    ck_assert_uint_ge(pitch, 1000);
    ck_assert_uint_eq(pitch % 256, 0);
    size_t size;
    CU_OK(cuMemGetAddressRange(NULL, &size, p));
    ck_assert_uint_ge(size, pitch * 10);
    CU_ERR(cuMemAllocPitch(&p, &pitch, 1000, 10, 3), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFree(p));
}
END_TEST

START_TEST(address_range)
{
    CUdeviceptr p, base = 0;
    size_t size = 0;
    CU_OK(cuMemAlloc(&p, 3 * MiB + 100));
    CU_OK(cuMemGetAddressRange(&base, &size, p + 2 * MiB + 17));
    ck_assert_uint_eq(base, p);
    ck_assert_uint_ge(size, 3 * MiB + 100);
    CU_OK(cuMemGetAddressRange(&base, NULL, p));
    ck_assert_uint_eq(base, p);
    CU_OK(cuMemFree(p));
    int on_stack;
    ck_assert_int_ne(cuMemGetAddressRange(&base, &size, (CUdeviceptr)&on_stack), CUDA_SUCCESS);
}
END_TEST

START_TEST(pointer_attributes)
{
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 2 * MiB));
    unsigned type = 0;
    CU_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p + 100));
    ck_assert_uint_eq(type, CU_MEMORYTYPE_DEVICE);
    int ordinal = -1;
    CU_OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
    ck_assert_int_eq(ordinal, 0);
    CUdeviceptr start = 0;
    size_t size = 0;
    CU_OK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p + 4096));
    CU_OK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p + 4096));
    ck_assert_uint_eq(start, p);
    ck_assert_uint_eq(size, 2 * MiB);
    unsigned managed = 7;
    CU_OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p));
    ck_assert_uint_eq(managed, 0);
    CUcontext ctx = NULL;
    CU_OK(cuPointerGetAttribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, p));
    ck_assert_ptr_eq(ctx, test_ctx);

    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_POINTER};
    CUdeviceptr dp = 0;
    void *data[] = {&type, &dp};
    type = 0;
    CU_OK(cuPointerGetAttributes(2, attrs, data, p));
    ck_assert_uint_eq(type, CU_MEMORYTYPE_DEVICE);
    ck_assert_uint_eq(dp, p);
    /* The plural call does not fail on device memory for HOST_POINTER (the
     * singular one does): it answers NULL. The runtime's
     * cudaPointerGetAttributes asks it so of every pointer. */
    CUpointer_attribute rt[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_HOST_POINTER,
                                CU_POINTER_ATTRIBUTE_DEVICE_POINTER};
    void *host = (void *)1;
    void *rtdata[] = {&type, &host, &dp};
    type = 0;
    dp = 0;
    CU_OK(cuPointerGetAttributes(3, rt, rtdata, p + 8));
    ck_assert_uint_eq(type, CU_MEMORYTYPE_DEVICE);
    ck_assert_ptr_null(host);
    ck_assert_uint_eq(dp, p + 8);
    CU_ERR(cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, p), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFree(p));

    /* unknown memory: an error for one attribute, zeroes for several */
    static char host_buf[64];
    CU_ERR(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)host_buf),
           CUDA_ERROR_INVALID_VALUE);
    type = 99;
    CU_OK(cuPointerGetAttributes(1, attrs, data, (CUdeviceptr)host_buf));
    ck_assert_uint_eq(type, 0);
}
END_TEST

/* CU_POINTER_ATTRIBUTE_BUFFER_ID: "Every memory allocation from any of the
 * CUDA memory allocation APIs will have a unique ID over a process
 * lifetime. Subsequent allocations do not reuse IDs from previous freed
 * allocations." Registration caches (UCX, libfabric, Open MPI) rely on it
 * to tell a buffer allocated again at a freed one's address from the one
 * they registered. Each round frees before allocating again, so the
 * driver may well give the same address back (the stream-ordered
 * allocator does on the same stream). */
#define ID_ROUNDS 8

static unsigned long long id_at(CUdeviceptr p, size_t n)
{
    unsigned long long id = 0, inside = 0;
    CU_OK(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p));
    CUpointer_attribute a = CU_POINTER_ATTRIBUTE_BUFFER_ID;
    void *data = &inside;
    CU_OK(cuPointerGetAttributes(1, &a, &data, p + n - 1));
    ck_assert_uint_ne(id, 0);
    ck_assert_uint_eq(inside, id); /* one ID for the whole allocation */
    return id;
}

static void expect_new(const unsigned long long *ids, int n, unsigned long long id)
{
    for (int i = 0; i < n; i++)
        ck_assert_msg(ids[i] != id, "BUFFER_ID %llu given twice", id);
}

/* CONTEXT is "the CUcontext in which ptr was allocated": memory allocated
 * in a context the program created names that context, not the device's
 * primary one, while that context is current or not. */
START_TEST(pointer_context_is_the_allocating_one)
{
    CUdevice dev;
    CU_OK(cuCtxGetDevice(&dev));
    CUcontext mine = NULL, got = NULL;
    CU_OK(cuCtxCreate(&mine, NULL, 0, dev));
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 1 * MiB));
    CU_OK(cuPointerGetAttribute(&got, CU_POINTER_ATTRIBUTE_CONTEXT, p));
    ck_assert_ptr_eq(got, mine);
    CU_OK(cuCtxSetCurrent(test_ctx));
    got = NULL;
    CU_OK(cuPointerGetAttribute(&got, CU_POINTER_ATTRIBUTE_CONTEXT, p));
    ck_assert_ptr_eq(got, mine);
    ck_assert_ptr_ne(got, test_ctx);
    CU_OK(cuCtxSetCurrent(mine));
    CU_OK(cuMemFree(p));
    CU_OK(cuCtxDestroy(mine));
    CU_OK(cuCtxSetCurrent(test_ctx));
}
END_TEST

START_TEST(buffer_ids_are_never_reused)
{
    unsigned long long ids[4 * ID_ROUNDS];
    int n = 0;
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr live;
    CU_OK(cuMemAlloc(&live, 1000));
    ids[n++] = id_at(live, 1000);
    for (int r = 0; r < ID_ROUNDS; r++) {
        CUdeviceptr p, q;
        void *h;
        CU_OK(cuMemAlloc(&p, 1000));
        unsigned long long id = id_at(p, 1000);
        expect_new(ids, n, id);
        ids[n++] = id;
        CU_OK(cuMemFree(p));
        CU_OK(cuMemAllocAsync(&q, 3 * MiB, s));
        id = id_at(q, 3 * MiB);
        expect_new(ids, n, id);
        ids[n++] = id;
        CU_OK(cuMemFreeAsync(q, s));
        CU_OK(cuMemAllocHost(&h, 4096));
        id = id_at((CUdeviceptr)h, 4096);
        expect_new(ids, n, id);
        ids[n++] = id;
        CU_OK(cuMemFreeHost(h));
    }
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(live));
}
END_TEST

/* What UCX, libfabric and Open MPI set on every device buffer before a NIC
 * reads it, and the context-wide flag that is the VMM way (CUDA 12.1). */
START_TEST(sync_memops)
{
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 4096));
    unsigned on = 1, off = 0, got = 7;
    CU_OK(cuPointerSetAttribute(&on, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p));
    CU_OK(cuPointerGetAttribute(&got, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p + 100));
    ck_assert_uint_eq(got, 1);
    CU_OK(cuPointerSetAttribute(&off, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p + 100));
    CU_OK(cuPointerGetAttribute(&got, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p));
    ck_assert_uint_eq(got, 0);
    CU_OK(cuMemFree(p));
    unsigned flags = 0, again = 0;
    CU_OK(cuCtxGetFlags(&flags));
    CU_OK(cuCtxSetFlags(flags | CU_CTX_SYNC_MEMOPS));
    CU_OK(cuCtxGetFlags(&again));
    ck_assert_uint_eq(again, flags | CU_CTX_SYNC_MEMOPS);
    CU_OK(cuCtxSetFlags(flags));
    CU_ERR(cuCtxGetFlags(NULL), CUDA_ERROR_INVALID_VALUE);
}
END_TEST

START_TEST(host_memory)
{
    size_t host0 = fakecuda_present() ? fakecuda_host_bytes_used() : 0;
    size_t dev0 = fakecuda_present() ? fakecuda_device_bytes_used(0) : 0;
    void *a, *b;
    CU_OK(cuMemHostAlloc(&a, 1 * MiB, CU_MEMHOSTALLOC_PORTABLE));
    CU_OK(cuMemAllocHost(&b, 1 * MiB));
    memset(a, 1, MiB);
    memset(b, 2, MiB);
    unsigned type = 0;
    CU_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)a));
    ck_assert_uint_eq(type, CU_MEMORYTYPE_HOST);
    if (fakecuda_present()) {
        ck_assert_uint_eq(fakecuda_host_bytes_used(), host0 + 2 * MiB);
        ck_assert_uint_eq(fakecuda_device_bytes_used(0), dev0); /* counted separately */
    }
    CU_OK(cuMemFreeHost(a));
    CU_OK(cuMemFreeHost(b));
    if (fakecuda_present()) /* a freed pointer again: the driver's is undefined */
        CU_ERR(cuMemFreeHost(b), CUDA_ERROR_INVALID_VALUE);

    size_t len = 1 * MiB;
    void *r = aligned_alloc(4096, len);
    ck_assert_ptr_nonnull(r);
    CU_OK(cuMemHostRegister(r, len, 0));
    CU_ERR(cuMemHostRegister(r, len, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    CU_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)r));
    ck_assert_uint_eq(type, CU_MEMORYTYPE_HOST);
    CU_OK(cuMemHostUnregister(r));
    CU_ERR(cuMemHostUnregister(r), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    free(r);
    if (fakecuda_present())
        ck_assert_uint_eq(fakecuda_host_bytes_used(), host0);
}
END_TEST

START_TEST(managed_memory)
{
    CUdeviceptr p;
    CU_ERR(cuMemAllocManaged(&p, MiB, 0), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemAllocManaged(&p, MiB, CU_MEM_ATTACH_GLOBAL));
    unsigned managed = 0;
    CU_OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p));
    ck_assert_uint_eq(managed, 1);
    memset((void *)p, 0x5a, MiB); /* the host may touch managed memory */
    CU_OK(cuCtxSynchronize());
    CU_OK(cuMemFree(p));
}
END_TEST

/* cuMemPrefetchAsync (CUDA 12.2's ABI): managed memory to a device and
 * back to the host, with its bytes; flags are reserved (0). */
START_TEST(managed_memory_prefetch)
{
    CUdeviceptr p;
    CU_OK(cuMemAllocManaged(&p, MiB, CU_MEM_ATTACH_GLOBAL));
    memset((void *)p, 0x3c, MiB);
    CUmemLocation dev0 = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
    CUmemLocation host = {.type = CU_MEM_LOCATION_TYPE_HOST, .id = 0};
    CU_OK(cuMemPrefetchAsync(p, MiB, dev0, 0, NULL));
    CU_OK(cuMemPrefetchAsync(p + 4096, 4096, host, 0, NULL));
    CU_ERR(cuMemPrefetchAsync(p, MiB, dev0, 1, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuCtxSynchronize());
    unsigned char c = 0;
    CU_OK(cuMemcpyDtoH(&c, p + MiB - 1, 1));
    ck_assert_uint_eq(c, 0x3c);
    CU_OK(cuMemFree(p));
}
END_TEST

START_TEST(freed_memory_faults)
{
    /* fakecuda only: the emulation's stand-in for a GPU fault */
    if (!fakecuda_present())
        raise(SIGSEGV);
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, MiB));
    CU_OK(cuMemFree(p));
    *(volatile char *)p = 1;
}
END_TEST

/* cuMemBatchDecompressAsync (CUDA 12.8) on a device without the hardware
 * decompression engine (the algorithm mask 0: every device before
 * Blackwell, fakecuda's too): refused, with nothing written. The driver's
 * error is printed; fakecuda answers NOT_SUPPORTED with *errorIndex
 * SIZE_MAX (a general error). A device with the engine only prints. */
typedef CUresult (*decompress_fn)(CUmemDecompressParams *, size_t, unsigned, size_t *, CUstream);

START_TEST(decompression_without_the_engine)
{
    CUdevice dev;
    CU_OK(cuCtxGetDevice(&dev));
    int mask = -1;
    CU_OK(cuDeviceGetAttribute(&mask, CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK, dev));
    void *fn = NULL;
    CUdriverProcAddressQueryResult q;
    if (cuGetProcAddress("cuMemBatchDecompressAsync", &fn, 12080, CU_GET_PROC_ADDRESS_DEFAULT, &q) !=
            CUDA_SUCCESS ||
        !fn || mask != 0) {
        printf("decompression_without_the_engine: skipped (entry point %s, algorithm mask %d)\n",
               fn ? "found" : "absent", mask);
        return;
    }
    decompress_fn decompress = (decompress_fn)fn;
    CUdeviceptr src, dst, act;
    CU_OK(cuMemAlloc(&src, 64 * 1024));
    CU_OK(cuMemAlloc(&dst, 64 * 1024));
    CU_OK(cuMemAlloc(&act, 4096));
    CU_OK(cuMemsetD32(dst, 0x5a5a5a5au, 64 * 1024 / 4));
    CU_OK(cuMemsetD32(act, 0x5a5a5a5au, 1));
    CUmemDecompressParams p;
    memset(&p, 0, sizeof p);
    p.srcNumBytes = 4096;
    p.dstNumBytes = 64 * 1024;
    p.src = (const void *)(uintptr_t)src;
    p.dst = (void *)(uintptr_t)dst;
    p.dstActBytes = (cuuint32_t *)(uintptr_t)act;
    p.algo = CU_MEM_DECOMPRESS_ALGORITHM_DEFLATE;
    size_t at = 7;
    CUresult r = decompress(&p, 1, 0, &at, NULL);
    printf("decompression_without_the_engine: the driver answers %d (error index %zu)\n", (int)r, at);
    ck_assert_int_ne(r, CUDA_SUCCESS);
    if (fakecuda_present()) {
        ck_assert_int_eq(r, CUDA_ERROR_NOT_SUPPORTED);
        ck_assert_uint_eq(at, SIZE_MAX);
        CU_ERR(decompress(&p, 1, 1, &at, NULL), CUDA_ERROR_INVALID_VALUE);
        CU_ERR(decompress(NULL, 1, 0, &at, NULL), CUDA_ERROR_INVALID_VALUE);
    }
    CU_OK(cuCtxSynchronize());
    expect_u32(dst, 0x5a5a5a5au, 64 * 1024 / 4);
    expect_u32(act, 0x5a5a5a5au, 1);
    CU_OK(cuMemFree(src));
    CU_OK(cuMemFree(dst));
    CU_OK(cuMemFree(act));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("driver_memory");
    TCase *tc = tcase_create("memory");
    tcase_add_checked_fixture(tc, driver_setup, driver_teardown);
    tcase_add_test(tc, alloc_write_read_free);
    tcase_add_test(tc, alloc_bad_arguments);
    tcase_add_test(tc, out_of_memory_and_get_info);
    tcase_add_test(tc, capacity_is_fixed);
    tcase_add_test(tc, pitch);
    tcase_add_test(tc, address_range);
    tcase_add_test(tc, pointer_attributes);
    tcase_add_test(tc, pointer_context_is_the_allocating_one);
    tcase_add_test(tc, buffer_ids_are_never_reused);
    tcase_add_test(tc, sync_memops);
    tcase_add_test(tc, host_memory);
    tcase_add_test(tc, managed_memory);
    tcase_add_test(tc, managed_memory_prefetch);
    tcase_add_test(tc, decompression_without_the_engine);
    tcase_add_test_raise_signal(tc, freed_memory_faults, SIGSEGV);
    suite_add_tcase(s, tc);
    return s;
}
