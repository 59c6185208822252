/* The pass-through suite (test_passthrough.c): CUDA arrays count against
 * the limit as pass-through memory, and one the driver refuses is its to
 * answer. */
#include "tests/integration/pool/passthrough.h"

#include "stats/reader.h"

#include <stdint.h>

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

void passthrough_array_tests(TCase *tc)
{
    tcase_add_test(tc, arrays_count_against_the_limit);
    tcase_add_test(tc, arrays_the_driver_refuses_are_its_to_answer);
}
