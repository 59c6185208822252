/* Conformance: VMM memory shared by file descriptor (what PyTorch's
 * expandable segments do to pass a tensor to another process, and what
 * spillway must give the driver when a pooled handle is exported). A handle
 * made with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR exports a descriptor;
 * importing it gives a handle of the same size whose mapping shows the same
 * bytes; exporting a type the handle was not made with is refused; a FABRIC
 * handle either exists or is refused the way programs fall back on. */
#include <unistd.h>

#include "tests/unit/driver/common.h"

static size_t granularity(const CUmemAllocationProp *prop)
{
    size_t g = 0;
    CU_OK(cuMemGetAllocationGranularity(&g, prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    ck_assert_uint_gt(g, 0);
    return g;
}

static CUmemAllocationProp fd_prop(void)
{
    CUmemAllocationProp p = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                             .requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                             .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    return p;
}

/* A reserved range with h mapped and readable and writable by device 0. */
static CUdeviceptr map_rw(CUmemGenericAllocationHandle h, size_t size)
{
    CUdeviceptr va = 0;
    CU_OK(cuMemAddressReserve(&va, size, 0, 0, 0));
    CU_OK(cuMemMap(va, size, 0, h, 0));
    CUmemAccessDesc a = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                         .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CU_OK(cuMemSetAccess(va, size, &a, 1));
    return va;
}

static void unmap_free(CUdeviceptr va, size_t size)
{
    CU_OK(cuMemUnmap(va, size));
    CU_OK(cuMemAddressFree(va, size));
}

START_TEST(export_and_import_share_the_bytes)
{
    driver_setup();
    CUmemAllocationProp prop = fd_prop();
    size_t size = 2 * granularity(&prop);
    CUmemGenericAllocationHandle h, imported;
    CU_OK(cuMemCreate(&h, size, &prop, 0));
    CUdeviceptr a = map_rw(h, size);
    CU_OK(cuMemsetD32(a, 0x1234abcdu, size / 4));
    int fd = -1;
    CU_OK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    ck_assert_int_ge(fd, 0);
    CU_OK(cuMemImportFromShareableHandle(&imported, (void *)(intptr_t)fd,
                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    close(fd); /* the imported handle does not need it */
    CUmemAllocationProp got;
    CU_OK(cuMemGetAllocationPropertiesFromHandle(&got, imported));
    ck_assert_int_eq(got.location.type, CU_MEM_LOCATION_TYPE_DEVICE);
    ck_assert_int_eq(got.location.id, 0);
    CUdeviceptr b = map_rw(imported, size);
    expect_u32(b, 0x1234abcdu, size / 4);
    /* Writes through one mapping show through the other. */
    CU_OK(cuMemsetD32(b, 0x0badf00du, size / 4));
    expect_u32(a, 0x0badf00du, size / 4);
    unmap_free(b, size);
    CU_OK(cuMemRelease(imported));
    unmap_free(a, size);
    CU_OK(cuMemRelease(h));
}
END_TEST

START_TEST(export_of_a_type_not_asked_for_is_refused)
{
    driver_setup();
    CUmemAllocationProp prop = fd_prop();
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
    size_t size = granularity(&prop);
    CUmemGenericAllocationHandle h;
    CU_OK(cuMemCreate(&h, size, &prop, 0));
    int fd = -1;
    ck_assert_int_ne(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                     CUDA_SUCCESS);
    CU_OK(cuMemRelease(h));
}
END_TEST

/* Where the machine has no IMEX channel the driver refuses FABRIC with one
 * of the two errors NCCL and PyTorch fall back on; fakecuda is such a
 * machine. */
START_TEST(fabric_exists_or_is_refused_as_programs_expect)
{
    driver_setup();
    CUmemAllocationProp prop = fd_prop();
    size_t size = granularity(&prop);
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
    CUmemGenericAllocationHandle h;
    CUresult r = cuMemCreate(&h, size, &prop, 0);
    if (r == CUDA_SUCCESS) {
        CU_OK(cuMemRelease(h));
        ck_assert_msg(!fakecuda_present(), "fakecuda has no IMEX channel");
        return;
    }
    ck_assert_msg(r == CUDA_ERROR_NOT_SUPPORTED || r == CUDA_ERROR_NOT_PERMITTED,
                  "cuMemCreate(FABRIC): error %d", (int)r);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("driver_share");
    TCase *tc = tcase_create("share");
    tcase_add_test(tc, export_and_import_share_the_bytes);
    tcase_add_test(tc, export_of_a_type_not_asked_for_is_refused);
    tcase_add_test(tc, fabric_exists_or_is_refused_as_programs_expect);
    suite_add_tcase(s, tc);
    return s;
}
