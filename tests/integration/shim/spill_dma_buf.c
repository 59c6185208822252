/* The spill suite (test_spill.c): dma_buf exports of pool memory and of a
 * pooled handle, spilled or not: what an importer writes is the
 * program's. */
#include "tests/integration/shim/spill_rig.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- dma_buf exports: what an importer writes is the program's ---------- */

/* A dma_buf of a device range (cuMemGetHandleForAddressRange: NCCL's and
 * UCX's GPUDirect RDMA registration, ibv_reg_dmabuf_mr) reaches the
 * physical pages behind the range when it was taken. Spill moves pool data
 * to other pages and gives its old ones to other data: an importer (a NIC;
 * fakecuda_dmabuf_access) writing afterwards would miss the program's
 * buffer and write into another. So a dma_buf of pool memory is either
 * refused, or what the importer writes is what the program reads, spilled
 * or not, and no other buffer changes. 40 + 40 MiB past 64 MiB spill the
 * exported buffer (the coldest) and give its page to y. */
static void importer_writes_are_the_programs(CUdeviceptr b, int fd)
{
    uint32_t w = 0xabcd0001u, got = 0;
    ck_assert_int_eq(fakecuda_dmabuf_access(fd, 4096, &w, sizeof w, 1), 0);
    CU_OK(cuMemcpyDtoH(&got, b + 4096, sizeof got));
    ck_assert_uint_eq(got, w);
    CUdeviceptr x = rig_filled(40 * MiB, 4), y = rig_filled(40 * MiB, 5);
    w = 0xabcd0002u;
    ck_assert_int_eq(fakecuda_dmabuf_access(fd, 4096, &w, sizeof w, 1), 0);
    CU_OK(cuMemcpyDtoH(&got, b + 4096, sizeof got));
    ck_assert_msg(got == w, "the importer's write after a spill: the program reads %#x, not %#x", got, w);
    rig_expect_pattern(x, 40 * MiB, 4, "x, after the importer's write");
    rig_expect_pattern(y, 40 * MiB, 5, "y, after the importer's write");
    CU_OK(cuMemFree(x));
    CU_OK(cuMemFree(y));
}

START_TEST(a_dma_buf_of_pool_memory_is_refused_or_the_programs)
{
    setup();
    CUdeviceptr b = rig_filled(1 * MiB, 3);
    int fd = -1;
    CUresult r = cuMemGetHandleForAddressRange(&fd, b, 1 * MiB, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
    if (r != CUDA_ERROR_NOT_SUPPORTED) {
        CU_OK(r);
        importer_writes_are_the_programs(b, fd);
        close(fd);
    }
    CU_OK(cuMemFree(b));
}
END_TEST

/* A pooled cuMemCreate handle of one granule mapped read-write at *va,
 * holding rig_expected(g, seed); its size is *g. */
static CUmemGenericAllocationHandle mapped_handle(CUdeviceptr *va, size_t *g, unsigned seed)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CU_OK(cuMemGetAllocationGranularity(g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUmemGenericAllocationHandle h;
    CU_OK(cuMemAddressReserve(va, *g, 0, 0, 0));
    CU_OK(cuMemCreate(&h, *g, &prop, 0));
    CU_OK(cuMemMap(*va, *g, 0, h, 0));
    CUmemAccessDesc acc = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CU_OK(cuMemSetAccess(*va, *g, &acc, 1));
    uint32_t *w = rig_expected(*g, seed);
    CU_OK(cuMemcpyHtoD(*va, w, *g));
    free(w);
    return h;
}

static void unmapped_handle(CUdeviceptr va, size_t g, CUmemGenericAllocationHandle h)
{
    CU_OK(cuMemUnmap(va, g));
    CU_OK(cuMemRelease(h));
    CU_OK(cuMemAddressFree(va, g));
}

/* A pooled cuMemCreate handle the program mapped (JAX's arena) exports as
 * with the driver alone: made the driver's first, it no longer spills. */
START_TEST(a_dma_buf_of_a_pooled_handle_is_the_programs)
{
    setup();
    CUdeviceptr va;
    size_t g;
    CUmemGenericAllocationHandle h = mapped_handle(&va, &g, 3);
    int fd = -1;
    CU_OK(cuMemGetHandleForAddressRange(&fd, va, g, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0));
    importer_writes_are_the_programs(va, fd);
    close(fd);
    unmapped_handle(va, g, h);
}
END_TEST

/* The same handle spilled before its export: a dma_buf takes device memory
 * only, so the export brings it back (its promotion) and then succeeds, as
 * with the driver alone; the importer's writes are the program's. */
START_TEST(a_dma_buf_of_a_spilled_pooled_handle_is_the_programs)
{
    setup();
    CUdeviceptr va;
    size_t g;
    CUmemGenericAllocationHandle h = mapped_handle(&va, &g, 3);
    CUdeviceptr x = rig_filled(40 * MiB, 6), y = rig_filled(40 * MiB, 7);
    ck_assert_msg(fakecuda_mapped_location(va) != 0, "the handle was not spilled");
    int fd = -1;
    CU_OK(cuMemGetHandleForAddressRange(&fd, va, g, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0));
    ck_assert_int_eq(fakecuda_mapped_location(va), 0);
    rig_expect_pattern(va, g, 3, "the handle, made the driver's");
    CU_OK(cuMemFree(x));
    CU_OK(cuMemFree(y));
    importer_writes_are_the_programs(va, fd);
    close(fd);
    unmapped_handle(va, g, h);
}
END_TEST

void spill_dma_buf_tests(TCase *tc)
{
    tcase_add_test(tc, a_dma_buf_of_pool_memory_is_refused_or_the_programs);
    tcase_add_test(tc, a_dma_buf_of_a_pooled_handle_is_the_programs);
    tcase_add_test(tc, a_dma_buf_of_a_spilled_pooled_handle_is_the_programs);
}
