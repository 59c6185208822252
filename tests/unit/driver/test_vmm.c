/* Conformance: virtual memory management, as spillway uses it to keep a
 * VA while changing the physical page (device or host) behind it.
 *
 * One suite in two files: here pages made, mapped, remapped and released,
 * where they live, dma_bufs and faults; mappings (vmm_mappings.c),
 * sharing vmm_rig.h. */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <stdio.h>

#include "tests/unit/driver/vmm_rig.h"

/* Host memory on the device's NUMA node, as spill asks for it: "Returns
 * -1 when system does not support NUMA" (HOST_NUMA_ID), node 0 then, as
 * cuMemCreate's "where NUMA is not available" says; a device without host
 * NUMA VMM gets a plain host location (what the shim falls back on). */
static CUmemAllocationProp prop_host_numa(void)
{
    CUmemAllocationProp p = prop_device(0);
    int numa = 0, numa_vmm = 0;
    CU_OK(cuDeviceGetAttribute(&numa, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, 0));
    CU_OK(cuDeviceGetAttribute(&numa_vmm, CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0));
    p.location.type = numa_vmm ? CU_MEM_LOCATION_TYPE_HOST_NUMA : CU_MEM_LOCATION_TYPE_HOST;
    p.location.id = numa_vmm && numa > 0 ? numa : 0;
    return p;
}

START_TEST(granularity_is_2mib)
{
    ck_assert_uint_eq(granularity(), 2 * MiB);
    CUmemAllocationProp p = prop_device(0);
    size_t g;
    CU_OK(cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    ck_assert_uint_ge(g, 2 * MiB);
}
END_TEST

START_TEST(create_map_access_roundtrip)
{
    size_t g = granularity();
    CUdeviceptr va;
    CU_OK(cuMemAddressReserve(&va, 4 * g, 0, 0, 0));
    ck_assert_uint_eq(va % g, 0);
    CUmemAllocationProp p = prop_device(0);
    CUmemGenericAllocationHandle h;
    CU_OK(cuMemCreate(&h, g, &p, 0));
    CU_OK(cuMemMap(va + g, g, 0, h, 0));
    set_rw(va + g, g);
    CU_OK(cuMemsetD32(va + g, 42, g / 4));
    expect_u32(va + g, 42, g / 4);
    size_t size = 0;
    CUdeviceptr base = 0;
    CU_OK(cuMemGetAddressRange(&base, &size, va + g + 100));
    ck_assert_uint_eq(base, va + g);
    ck_assert_uint_eq(size, g);
    CU_OK(cuMemUnmap(va + g, g));
    CU_OK(cuMemRelease(h));
    CU_OK(cuMemAddressFree(va, 4 * g));
}
END_TEST

/* VMM memory has no SYNC_MEMOPS of its own (UCX issue 9895, libfabric
 * issue 12853): CU_CTX_SYNC_MEMOPS on the context is its way. */
START_TEST(sync_memops_not_supported)
{
    size_t g = granularity();
    CUdeviceptr va;
    CU_OK(cuMemAddressReserve(&va, g, 0, 0, 0));
    CUmemAllocationProp p = prop_device(0);
    CUmemGenericAllocationHandle h;
    CU_OK(cuMemCreate(&h, g, &p, 0));
    CU_OK(cuMemMap(va, g, 0, h, 0));
    set_rw(va, g);
    unsigned on = 1;
    CU_ERR(cuPointerSetAttribute(&on, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, va), CUDA_ERROR_NOT_SUPPORTED);
    CU_OK(cuMemUnmap(va, g));
    CU_OK(cuMemRelease(h));
    CU_OK(cuMemAddressFree(va, g));
}
END_TEST

START_TEST(create_bad_arguments)
{
    size_t g = granularity();
    CUmemAllocationProp p = prop_device(0);
    CUmemGenericAllocationHandle h;
    CU_ERR(cuMemCreate(&h, g + 4096, &p, 0), CUDA_ERROR_INVALID_VALUE); /* not a multiple */
    CU_ERR(cuMemCreate(&h, g, NULL, 0), CUDA_ERROR_INVALID_VALUE);
    int n;
    CU_OK(cuDeviceGetCount(&n));
    p.location.id = n;
    ck_assert_int_ne(cuMemCreate(&h, g, &p, 0), CUDA_SUCCESS);
    CUdeviceptr va;
    /* "size ... must be a multiple of the host page size": what a size of
     * whole host pages but not of the granularity gets is printed. */
    CU_ERR(cuMemAddressReserve(&va, g + 1, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
    CUresult r = cuMemAddressReserve(&va, g + 4096, 0, 0, 0);
    printf("bad_arguments: cuMemAddressReserve of the granularity + 4 KiB: %d\n", (int)r);
    if (r == CUDA_SUCCESS)
        CU_OK(cuMemAddressFree(va, g + 4096));
}
END_TEST

START_TEST(partial_map_not_supported)
{
    size_t g = granularity();
    CUdeviceptr va;
    CU_OK(cuMemAddressReserve(&va, 4 * g, 0, 0, 0));
    CUmemAllocationProp p = prop_device(0);
    CUmemGenericAllocationHandle h;
    CU_OK(cuMemCreate(&h, 2 * g, &p, 0));
    CU_ERR(cuMemMap(va, g, 0, h, 0), CUDA_ERROR_NOT_SUPPORTED); /* part of the handle */
    CU_ERR(cuMemMap(va, g, g, h, 0), CUDA_ERROR_NOT_SUPPORTED); /* at an offset */
    CU_OK(cuMemMap(va, 2 * g, 0, h, 0));
    CU_OK(cuMemUnmap(va, 2 * g));
    CU_OK(cuMemRelease(h));
    CU_OK(cuMemAddressFree(va, 4 * g));
}
END_TEST

/* The spill primitive: the same VA reads another page after a remap. */
START_TEST(remap_changes_contents)
{
    size_t g = granularity();
    CUdeviceptr va, tmp;
    CU_OK(cuMemAddressReserve(&va, g, 0, 0, 0));
    CU_OK(cuMemAddressReserve(&tmp, g, 0, 0, 0));
    CUmemAllocationProp pd = prop_device(0), ph = prop_host_numa();
    CUmemGenericAllocationHandle dev_page, host_page;
    CU_OK(cuMemCreate(&dev_page, g, &pd, 0));
    CU_OK(cuMemCreate(&host_page, g, &ph, 0));
    CU_OK(cuMemMap(va, g, 0, dev_page, 0));
    set_rw(va, g);
    CU_OK(cuMemsetD32(va, 7, g / 4));
    CU_OK(cuMemMap(tmp, g, 0, host_page, 0));
    set_rw(tmp, g);
    CU_OK(cuMemcpyDtoD(tmp, va, g)); /* device page -> host page */
    CU_OK(cuCtxSynchronize());
    CU_OK(cuMemUnmap(tmp, g));
    CU_OK(cuMemsetD32(va, 9, g / 4));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuMemUnmap(va, g));
    CU_OK(cuMemMap(va, g, 0, host_page, 0)); /* same VA, now the host page */
    set_rw(va, g);
    expect_u32(va, 7, g / 4);
    unsigned type = 0;
    CU_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, va));
    CU_OK(cuMemUnmap(va, g));
    CU_OK(cuMemMap(va, g, 0, dev_page, 0)); /* and back */
    set_rw(va, g);
    expect_u32(va, 9, g / 4);
    CU_OK(cuMemUnmap(va, g));
    CU_OK(cuMemRelease(dev_page));
    CU_OK(cuMemRelease(host_page));
    CU_OK(cuMemAddressFree(va, g));
    CU_OK(cuMemAddressFree(tmp, g));
}
END_TEST

START_TEST(host_locations_counted_as_host)
{
    size_t g = granularity();
    size_t dev0 = fakecuda_present() ? fakecuda_device_bytes_used(0) : 0;
    size_t host0 = fakecuda_present() ? fakecuda_host_bytes_used() : 0;
    CUmemAllocationProp ph = prop_host_numa(), pd = prop_device(0);
    CUmemGenericAllocationHandle a, b;
    CU_OK(cuMemCreate(&a, g, &ph, 0));
    CU_OK(cuMemCreate(&b, 2 * g, &pd, 0));
    if (fakecuda_present()) {
        ck_assert_uint_eq(fakecuda_host_bytes_used(), host0 + g);
        ck_assert_uint_eq(fakecuda_device_bytes_used(0), dev0 + 2 * g);
        ck_assert_uint_eq(fakecuda_live_handles(), 2);
    }
    /* The location asked for: HOST_NUMA where the device has host NUMA VMM,
     * else HOST (prop_host_numa), whose id "is ignored" (cuMemCreate). */
    CUmemAllocationProp out;
    CU_OK(cuMemGetAllocationPropertiesFromHandle(&out, a));
    ck_assert_int_eq(out.location.type, ph.location.type);
    if (ph.location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA)
        ck_assert_int_eq(out.location.id, ph.location.id);
    CU_OK(cuMemGetAllocationPropertiesFromHandle(&out, b));
    ck_assert_int_eq(out.location.type, CU_MEM_LOCATION_TYPE_DEVICE);
    ck_assert_int_eq(out.location.id, 0);
    CU_OK(cuMemRelease(a));
    CU_OK(cuMemRelease(b));
    if (fakecuda_present()) {
        ck_assert_uint_eq(fakecuda_host_bytes_used(), host0);
        ck_assert_uint_eq(fakecuda_device_bytes_used(0), dev0);
        ck_assert_uint_eq(fakecuda_live_handles(), 0);
    }
}
END_TEST

START_TEST(plain_host_location)
{
    size_t g = granularity();
    CUmemAllocationProp p = prop_device(0);
    p.location.type = CU_MEM_LOCATION_TYPE_HOST;
    p.location.id = 0;
    CUmemGenericAllocationHandle h;
    CU_OK(cuMemCreate(&h, g, &p, 0));
    CUdeviceptr va;
    CU_OK(cuMemAddressReserve(&va, g, 0, 0, 0));
    CU_OK(cuMemMap(va, g, 0, h, 0));
    set_rw(va, g);
    CU_OK(cuMemsetD32(va, 5, g / 4));
    expect_u32(va, 5, g / 4);
    CU_OK(cuMemUnmap(va, g));
    CU_OK(cuMemRelease(h));
    CU_OK(cuMemAddressFree(va, g));
}
END_TEST

START_TEST(release_while_mapped_keeps_memory)
{
    size_t g = granularity();
    CUdeviceptr va;
    CU_OK(cuMemAddressReserve(&va, g, 0, 0, 0));
    CUmemAllocationProp p = prop_device(0);
    CUmemGenericAllocationHandle h, again;
    CU_OK(cuMemCreate(&h, g, &p, 0));
    CU_OK(cuMemMap(va, g, 0, h, 0));
    CU_OK(cuMemRelease(h)); /* the mapping keeps it alive */
    set_rw(va, g);
    CU_OK(cuMemsetD32(va, 3, g / 4));
    expect_u32(va, 3, g / 4);
    CU_OK(cuMemRetainAllocationHandle(&again, (void *)(va + 4096))); /* any address inside */
    ck_assert_uint_eq(again, h);
    CU_OK(cuMemRelease(again));
    if (fakecuda_present())
        ck_assert_uint_eq(fakecuda_live_mappings(), 1);
    CU_OK(cuMemUnmap(va, g));
    if (fakecuda_present()) {
        ck_assert_uint_eq(fakecuda_live_mappings(), 0);
        ck_assert_uint_eq(fakecuda_live_handles(), 0);
    }
    CU_OK(cuMemAddressFree(va, g));
}
END_TEST

START_TEST(unmapped_va_faults)
{
    if (!fakecuda_present())
        raise(SIGSEGV); /* fakecuda only: on a GPU this is a sticky context error */
    size_t g = granularity();
    CUdeviceptr va;
    CU_OK(cuMemAddressReserve(&va, g, 0, 0, 0));
    *(volatile char *)va = 1;
}
END_TEST

START_TEST(mapped_without_access_faults)
{
    if (!fakecuda_present())
        raise(SIGSEGV);
    size_t g = granularity();
    CUdeviceptr va;
    CU_OK(cuMemAddressReserve(&va, g, 0, 0, 0));
    CUmemAllocationProp p = prop_device(0);
    CUmemGenericAllocationHandle h;
    CU_OK(cuMemCreate(&h, g, &p, 0));
    CU_OK(cuMemMap(va, g, 0, h, 0));
    *(volatile char *)va = 1;
}
END_TEST

/* cuMemGetHandleForAddressRange: a dma_buf of a mapped range reaches the
 * physical allocation behind it when it was taken, not the VA: after the
 * range is remapped, what an importer (fakecuda_dmabuf_access, fakecuda's
 * stand-in for a NIC; skipped on a GPU) writes lands in the old handle's
 * memory, and the program reading the VA does not see it ("users are also
 * expected to retrieve a new handle every time the underlying physical
 * allocation(s) ... are changed"). cuMemAlloc memory too; refusals of
 * unaligned, empty, unmapped ranges and unknown types. */
START_TEST(dma_buf_reaches_the_physical_allocation)
{
    int can = 0;
    CU_OK(cuDeviceGetAttribute(&can, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, 0));
    if (!can)
        return;
    size_t g = granularity();
    CUdeviceptr va;
    CU_OK(cuMemAddressReserve(&va, 2 * g, 0, 0, 0));
    CUmemAllocationProp p = prop_device(0);
    CUmemGenericAllocationHandle h1, h2;
    CU_OK(cuMemCreate(&h1, g, &p, 0));
    CU_OK(cuMemCreate(&h2, g, &p, 0));
    CU_OK(cuMemMap(va, g, 0, h1, 0));
    set_rw(va, g);
    CU_OK(cuMemsetD32(va, 1, g / 4));
    CU_OK(cuCtxSynchronize());
    int fd = -1;
    CU_OK(cuMemGetHandleForAddressRange(&fd, va, g, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0));
    ck_assert_int_ge(fd, 0);
    unsigned w = 7, back = 0;
    if (fakecuda_dmabuf_access) {
        ck_assert_int_eq(fakecuda_dmabuf_access(fd, 4096, &w, sizeof w, 1), 0);
        CU_OK(cuMemcpyDtoH(&back, va + 4096, sizeof back));
        ck_assert_uint_eq(back, 7); /* the importer's write, seen through the VA */
    }
    /* The same VA on another physical allocation. */
    CU_OK(cuMemUnmap(va, g));
    CU_OK(cuMemMap(va, g, 0, h2, 0));
    set_rw(va, g);
    CU_OK(cuMemsetD32(va, 2, g / 4));
    CU_OK(cuCtxSynchronize());
    if (fakecuda_dmabuf_access) {
        w = 9;
        ck_assert_int_eq(fakecuda_dmabuf_access(fd, 4096, &w, sizeof w, 1), 0);
        CU_OK(cuMemcpyDtoH(&back, va + 4096, sizeof back));
        ck_assert_uint_eq(back, 2); /* not what the importer wrote */
        back = 0;
        ck_assert_int_eq(fakecuda_dmabuf_access(fd, 4096, &back, sizeof back, 0), 0);
        ck_assert_uint_eq(back, 9); /* it wrote h1's memory */
    }
    close(fd);
    int fd2 = -1;
    CU_ERR(cuMemGetHandleForAddressRange(&fd2, va + 100, 4096, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0),
           CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuMemGetHandleForAddressRange(&fd2, va, 100, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0),
           CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuMemGetHandleForAddressRange(&fd2, va, 0, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0),
           CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuMemGetHandleForAddressRange(NULL, va, 4096, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0),
           CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuMemGetHandleForAddressRange(&fd2, va, 4096, (CUmemRangeHandleType)99, 0), CUDA_ERROR_INVALID_VALUE);
    /* Past the mapping: the second granule of the reservation is unmapped. */
    CU_ERR(cuMemGetHandleForAddressRange(&fd2, va, 2 * g, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0),
           CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemUnmap(va, g));
    CU_OK(cuMemRelease(h1));
    CU_OK(cuMemRelease(h2));
    CU_OK(cuMemAddressFree(va, 2 * g));
    /* cuMemAlloc memory. */
    CUdeviceptr d;
    CU_OK(cuMemAlloc(&d, 64 * 1024));
    CU_OK(cuMemsetD32(d, 3, 64 * 1024 / 4));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuMemGetHandleForAddressRange(&fd, d, 64 * 1024, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0));
    if (fakecuda_dmabuf_access) {
        ck_assert_int_eq(fakecuda_dmabuf_access(fd, 8192, &back, sizeof back, 0), 0);
        ck_assert_uint_eq(back, 3);
    }
    close(fd);
    CU_OK(cuMemFree(d));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("driver_vmm");
    TCase *tc = tcase_create("vmm");
    tcase_add_checked_fixture(tc, driver_setup, driver_teardown);
    tcase_add_test(tc, granularity_is_2mib);
    tcase_add_test(tc, create_map_access_roundtrip);
    tcase_add_test(tc, create_bad_arguments);
    tcase_add_test(tc, sync_memops_not_supported);
    tcase_add_test(tc, partial_map_not_supported);
    tcase_add_test(tc, remap_changes_contents);
    tcase_add_test(tc, host_locations_counted_as_host);
    tcase_add_test(tc, plain_host_location);
    tcase_add_test(tc, release_while_mapped_keeps_memory);
    vmm_mapping_tests(tc);
    tcase_add_test(tc, dma_buf_reaches_the_physical_allocation);
    tcase_add_test_raise_signal(tc, unmapped_va_faults, SIGSEGV);
    tcase_add_test_raise_signal(tc, mapped_without_access_faults, SIGSEGV);
    suite_add_tcase(s, tc);
    return s;
}
