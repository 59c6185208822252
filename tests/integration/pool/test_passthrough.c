/* spillway only: what cannot be pool memory passes through, counted by
 * reason in the counters and the stats segment; cuMemAllocFromPoolAsync
 * is pool-served for device pools, on the pool's device; CUDA arrays
 * count as pass-through; the limit covers pool and pass-through together; SPILLWAY_DISABLE=1 passes everything.
 * One suite in four files: the stream-ordered allocator's pools
 * (passthrough_pools.c), arrays (passthrough_arrays.c) and VMM handles
 * released while mapped (passthrough_handles.c) add their tests to this
 * file's tcase (passthrough.h). */
#include "tests/integration/pool/passthrough.h"

#include "stats/reader.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    passthrough_pool_tests(spw);
    tcase_add_test(spw, limit_covers_pool_and_passthrough);
    passthrough_array_tests(spw);
    tcase_add_test(spw, passthrough_takes_its_pages_from_the_pool);
    tcase_add_test(spw, lent_before_the_pool_is_built);
    passthrough_handle_tests(spw);
    tcase_add_test(spw, a_device_whose_set_up_failed_lends_too);
    tcase_add_test(spw, a_pitch_past_the_guess_is_held_or_refused);
    tcase_add_test(spw, disabled_passes_everything);
    suite_add_tcase(s, spw);
    return s;
}
