/* The pass-through suite (test_passthrough.c): a VMM handle released while
 * mapped (or retained) keeps its count until the driver would free its
 * memory: a pass-through handle, a pool handle, one exported. */
#include "tests/integration/pool/passthrough.h"

#include "stats/reader.h"

#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

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

void passthrough_handle_tests(TCase *tc)
{
    tcase_add_test(tc, a_handle_released_while_mapped_keeps_its_count);
    tcase_add_test(tc, an_exported_handle_released_while_mapped_keeps_its_count);
    tcase_add_test(tc, a_pool_handle_released_while_mapped_keeps_its_count);
}
