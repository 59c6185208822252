/* The copy suite (test_copies.c): cuMemcpy's sides told apart (program
 * VMM, managed memory), and a copy charged to the device its memory
 * lives on, whatever context is current. */
#include "tests/integration/shim/copies_rig.h"

#include <string.h>

/* Program-managed VMM on pool pages (as JAX), and managed memory (passes
 * the pool by: the driver is asked) are device memory for cuMemcpy. */
START_TEST(unified_sides)
{
    setup();
    enum { N = 32 * KiB };
    static unsigned char src[N], dst[N];
    fill(src, N, 23);
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    size_t gran = 0;
    ck_assert_int_eq(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                     CUDA_SUCCESS);
    CUdeviceptr va;
    CUmemGenericAllocationHandle h;
    ck_assert_int_eq(cuMemAddressReserve(&va, 4 * gran, 0, 0, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemCreate(&h, gran, &prop, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemMap(va + gran, gran, 0, h, 0), CUDA_SUCCESS);
    CUmemAccessDesc acc = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    ck_assert_int_eq(cuMemSetAccess(va + gran, gran, &acc, 1), CUDA_SUCCESS);
    COPY(0, 0, 1111, cuMemcpy(va + gran + 64, H(src), 1111));
    COPY(0, 1, 2222, cuMemcpy(H(dst), va + gran + 64, 2222));
    ck_assert_int_eq(memcmp(dst, src, 1111), 0);

    CUdeviceptr m;
    ck_assert_int_eq(drv.mem_alloc_managed(&m, N, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    COPY(0, 0, 3333, cuMemcpy(m, H(src), 3333));
    COPY(0, 2, 4444, cuMemcpy(va + gran, m, 4444));
    COPY(0, 1, 5555, cuMemcpyAsync(H(dst), m, 5555, NULL));
    synchronize();
    ck_assert_int_eq(memcmp(dst, src, 3333), 0);
    /* With device memory outside the pool live, host memory is still host. */
    COPY(0, -1, 6666, cuMemcpy(H(dst), H(src), 6666));
    ck_assert_int_eq(drv.mem_free(m), CUDA_SUCCESS);

    ck_assert_int_eq(cuMemUnmap(va + gran, gran), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemRelease(h), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAddressFree(va, 4 * gran), CUDA_SUCCESS);
}
END_TEST


/* A copy is charged to the device its device memory lives on, whatever
 * context is current. */
START_TEST(charged_to_the_owning_device)
{
    setup();
    int n = 0;
    ck_assert_int_eq(drv.device_get_count(&n), CUDA_SUCCESS);
    ck_assert_msg(n == 2, "copies.sh runs this with two devices");
    static unsigned char src[8 * KiB], dst[8 * KiB];
    fill(src, sizeof src, 29);
    use(1);
    CUdeviceptr d1 = dalloc(64 * KiB), m1;
    ck_assert_int_eq(drv.mem_alloc_managed(&m1, 64 * KiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    use(0);
    CUdeviceptr d0 = dalloc(64 * KiB);
    COPY(1, 0, 101, cuMemcpyHtoD(d1, src, 101));
    COPY(1, 1, 202, cuMemcpyDtoHAsync(dst, d1, 202, NULL));
    COPY(1, 0, 303, cuMemcpy(d1, H(src), 303));
    COPY(1, 1, 404, cuMemcpy(H(dst), d1, 404));
    COPY(0, 0, 505, cuMemcpy(d0, H(src), 505));
    /* Device to device: the destination's device. */
    COPY(0, 2, 606, cuMemcpyDtoD(d0, d1, 606));
    COPY(1, 2, 707, cuMemcpy(d1, d0, 707));
    /* Managed memory of device 1: the driver says which device. */
    COPY(1, 0, 808, cuMemcpy(m1, H(src), 808));
    COPY(1, 1, 909, cuMemcpy(H(dst), m1, 909));
    synchronize();
    ck_assert_int_eq(drv.mem_free(d0), CUDA_SUCCESS);
    ck_assert_int_eq(drv.mem_free(d1), CUDA_SUCCESS);
    ck_assert_int_eq(drv.mem_free(m1), CUDA_SUCCESS);
}
END_TEST

/* The same once the pool's arena has grown a second VA reservation
 * (64 MiB limit: the first is 256 MiB; spill holds the rest): a block of
 * the first is still the pool's, of its device. */
START_TEST(charged_to_the_owning_device_after_the_arena_grows)
{
    setup();
    static unsigned char src[4 * KiB];
    fill(src, sizeof src, 31);
    use(1);
    CUdeviceptr first = dalloc(64 * KiB), big[5];
    for (int i = 0; i < 5; i++)
        big[i] = dalloc(60 * MiB);
    use(0);
    COPY(1, 0, 111, cuMemcpyHtoD(first, src, 111));
    COPY(1, 0, 222, cuMemcpy(first, H(src), 222));
    COPY(1, 0, 333, cuMemcpyHtoD(big[4], src, 333));
    synchronize();
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(drv.mem_free(big[i]), CUDA_SUCCESS);
    ck_assert_int_eq(drv.mem_free(first), CUDA_SUCCESS);
}
END_TEST

void copies_side_tests(TCase *tc)
{
    tcase_add_test(tc, unified_sides);
    tcase_add_test(tc, charged_to_the_owning_device);
    tcase_add_test(tc, charged_to_the_owning_device_after_the_arena_grows);
}
