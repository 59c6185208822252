/* Spill through the shim (LD_PRELOAD) against fakecuda: a 64 MiB limit on
 * a 256 MiB device. With spill on, allocations past the limit succeed and
 * the data of every buffer stays exact whether it lives in device or host
 * memory; kernels read and write spilled buffers; a launch fills its
 * arguments back once pages are free; a thread that allocates and frees
 * while another launches on the same buffer neither crashes the process
 * (fakecuda runs kernels on worker threads: an unmapped page faults, as on
 * a GPU) nor loses a write. Stats come from the process's segment.
 *
 * One suite in three files: here spill, copies, sets and launches on
 * spilled memory, pass-through memory, a reset, and the cases of
 * spill.sh's other runs; then dma_buf exports (spill_dma_buf.c) and
 * launches racing spill and fill (spill_race.c), sharing spill_rig.h.
 *
 * Run by spill.sh, which sets the environment and runs it again with
 * SPW_SPILL_ONLY=off (SPILLWAY_SPILL=0: the byte cap as before) and
 * SPW_SPILL_ONLY=host_limit (SPILLWAY_HOST_LIMIT=16M). */
#include "tests/integration/shim/spill_rig.h"


/* cuLaunchCooperativeKernelMultiDevice is deprecated; programs may still
 * use it, so it is tested like the other launches. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <stdlib.h>
#include <string.h>

/* The sum sum_u32 makes of a buffer of that content. */
static uint64_t host_sum(size_t bytes, unsigned seed)
{
    uint64_t s = 0;
    for (size_t i = 0; i < bytes / 4; i++)
        s += rig_pattern(i, seed);
    return s;
}

/* How a launch passes its arguments. */
enum how { PARAMS, EXTRA, EX, COOPERATIVE, MULTI_DEVICE };

static void launch_sum(CUfunction f, enum how how, CUdeviceptr p, size_t bytes, CUdeviceptr out)
{
    size_t n = bytes / 4;
    void *args[] = {&p, &n, &out};
    struct {
        CUdeviceptr p;
        size_t n;
        CUdeviceptr out;
    } packed = {p, n, out};
    size_t packed_size = sizeof packed;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE,
                     &packed_size, CU_LAUNCH_PARAM_END};
    CUlaunchConfig cfg = {.gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                          .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1};
    switch (how) {
    case PARAMS: CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL)); break;
    case EXTRA: CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra)); break;
    case EX: CU_OK(cuLaunchKernelEx(&cfg, f, args, NULL)); break;
    case COOPERATIVE: CU_OK(cuLaunchCooperativeKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args)); break;
    case MULTI_DEVICE: { /* on a stream the program made, as it must be */
        CUstream s;
        CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
        CUDA_LAUNCH_PARAMS l = {.function = f, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1, .hStream = s,
                                .kernelParams = args};
        CU_OK(cuLaunchCooperativeKernelMultiDevice(&l, 1, 0));
        CU_OK(cuStreamSynchronize(s));
        CU_OK(cuStreamDestroy(s));
        break;
    }
    }
    CU_OK(cuCtxSynchronize());
}

static uint64_t result(CUdeviceptr out)
{
    uint64_t v = 0;
    CU_OK(cuMemcpyDtoH(&v, out, sizeof v));
    return v;
}

/* ---- (a) past the limit, both buffers exact ---------------------------- */

START_TEST(past_the_limit_through_spill)
{
    setup();
    CUdeviceptr a = rig_filled(48 * MiB, 1);
    CUdeviceptr b = rig_filled(48 * MiB, 2); /* only through spill */
    ck_assert_uint_eq(rig_counters(0).used, 96 * MiB);
    ck_assert_uint_gt(rig_stat(0, SPW_C_SPILLED), 0);
    ck_assert_uint_gt(rig_stat(0, SPW_C_HOST), 0);
    ck_assert_uint_gt(rig_stat(0, SPW_C_SPILL_BYTES), 0);
    ck_assert_uint_gt(rig_stat(0, SPW_C_SPILL_EVENTS), 0);
    ck_assert_uint_eq(rig_stat(0, SPW_C_IN_USE), 96 * MiB);
    ck_assert_uint_le(rig_stat(0, SPW_C_POOL), LIMIT); /* device pages never pass the limit */
    rig_expect_pattern(a, 48 * MiB, 1, "a");
    rig_expect_pattern(b, 48 * MiB, 2, "b");
    /* What the program sizes itself from: the limit, nothing free. */
    size_t free_ = 1, total = 0;
    CU_OK(cuMemGetInfo(&free_, &total));
    ck_assert_uint_eq(total, LIMIT);
    ck_assert_uint_eq(free_, 0);
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(b));
    ck_assert_uint_eq(rig_counters(0).used, 0);
    CU_OK(cuMemGetInfo(&free_, &total));
    ck_assert_uint_eq(free_, LIMIT);
    /* Freed memory keeps its pages until a sync point covers the free: the
     * program's own sync gives the host pages back. */
    CU_OK(cuCtxSynchronize());
    ck_assert_uint_eq(rig_stat(0, SPW_C_SPILLED), 0);
}
END_TEST

/* Two buffers past the limit (so some of it spilled), both freed: their
 * pages wait for a sync point. */
static void spill_then_free_all(void)
{
    setup();
    CUdeviceptr a = rig_filled(48 * MiB, 1);
    CUdeviceptr b = rig_filled(48 * MiB, 2);
    ck_assert_uint_gt(rig_stat(0, SPW_C_SPILLED), 0);
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(b));
}

/* The program's sync is a sync point of the device whatever spillway's own
 * queries answer: here every cuCtxGetDevice fails, and the sync still
 * gives the freed data's host pages back (a sync point missed would hold
 * them, counted, until the pool's own next sync). */
START_TEST(a_sync_point_needs_no_device_query)
{
    spill_then_free_all();
    ck_assert_int_eq(fakecuda_fault_config("cuCtxGetDevice:1-", NULL, 0), 0);
    CUresult r = cuCtxSynchronize();
    ck_assert_int_eq(fakecuda_fault_config(NULL, NULL, 0), 0);
    CU_OK(r);
    ck_assert_uint_eq(rig_stat(0, SPW_C_SPILLED), 0);
}
END_TEST

/* Copies in and out of a spilled buffer, and sets, by every form. */
START_TEST(copies_and_sets_on_spilled_memory)
{
    setup();
    CUdeviceptr a = rig_filled(48 * MiB, 3);
    CUdeviceptr b = rig_filled(48 * MiB, 4);
    ck_assert_uint_gt(rig_stat(0, SPW_C_SPILLED), 0);
    uint32_t *w = rig_expected(48 * MiB, 3);
    /* DtoD both ways between the two, then sets over what was spilled. */
    CUdeviceptr c = 0;
    CU_OK(cuMemAlloc(&c, 48 * MiB));
    CU_OK(cuMemcpyDtoD(c, a, 48 * MiB));
    rig_expect_words(c, w, 48 * MiB, "copy of a");
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuMemsetD32Async(a, 0x01020304u, 12 * MiB / 4, s));
    CU_OK(cuMemsetD16(a + 12 * MiB, 0x0506, 12 * MiB / 2));
    CU_OK(cuMemsetD8Async(a + 24 * MiB, 0x07, 12 * MiB, s));
    CU_OK(cuMemsetD32(a + 36 * MiB, 0x08090a0bu, 12 * MiB / 4));
    CU_OK(cuStreamSynchronize(s));
    for (size_t i = 0; i < 12 * MiB / 4; i++) {
        w[i] = 0x01020304u;
        w[3 * MiB + i] = 0x05060506u;
        w[6 * MiB + i] = 0x07070707u;
        w[9 * MiB + i] = 0x08090a0bu;
    }
    rig_expect_words(a, w, 48 * MiB, "a after the sets");
    CU_OK(cuMemcpyDtoDAsync(c, a, 48 * MiB, s));
    CU_OK(cuStreamSynchronize(s));
    rig_expect_words(c, w, 48 * MiB, "c after an async copy");
    rig_expect_pattern(b, 48 * MiB, 4, "b");
    CU_OK(cuStreamDestroy(s));
    free(w);
}
END_TEST

/* A copy into a CUDA array reads spilled memory where it lives while there
 * is no room, and fills it back first once there is, as other copies. */
START_TEST(array_copies_fill_spilled_memory)
{
    setup();
    enum { ARRAY_BYTES = 4 * MiB };
    CUDA_ARRAY_DESCRIPTOR d = {.Width = ARRAY_BYTES / 4, .Format = CU_AD_FORMAT_UNSIGNED_INT32,
                               .NumChannels = 1};
    CUarray arr;
    CU_OK(cuArrayCreate(&arr, &d));
    CUdeviceptr a = rig_filled(48 * MiB, 7);
    CUdeviceptr b = rig_filled(48 * MiB, 8);
    uint64_t spilled = rig_stat(0, SPW_C_SPILLED);
    ck_assert_uint_gt(spilled, 0);
    uint32_t *w = rig_expected(48 * MiB, 7), *got = malloc(ARRAY_BYTES);
    ck_assert_ptr_nonnull(got);
    CU_OK(cuMemcpyDtoA(arr, 0, a + 40 * MiB, ARRAY_BYTES));
    CU_OK(cuMemcpyAtoH(got, arr, 0, ARRAY_BYTES));
    ck_assert_int_eq(memcmp(got, w + 10 * MiB, ARRAY_BYTES), 0);
    uint64_t fills = rig_stat(0, SPW_C_FILL_EVENTS);
    CU_OK(cuMemFree(b));
    CU_OK(cuMemcpyDtoA(arr, 0, a, ARRAY_BYTES));
    ck_assert_uint_gt(rig_stat(0, SPW_C_FILL_EVENTS), fills);
    ck_assert_uint_eq(rig_stat(0, SPW_C_SPILLED), 0);
    CU_OK(cuMemcpyAtoH(got, arr, 0, ARRAY_BYTES));
    ck_assert_int_eq(memcmp(got, w, ARRAY_BYTES), 0);
    /* And back: the array into memory that was spilled. */
    CU_OK(cuMemcpyAtoD(a + 44 * MiB, arr, 0, ARRAY_BYTES));
    memcpy(w + 11 * MiB, w, ARRAY_BYTES);
    rig_expect_words(a, w, 48 * MiB, "a after the array copies");
    CU_OK(cuArrayDestroy(arr));
    free(got);
    free(w);
}
END_TEST

/* ---- (b) kernels on spilled memory, and fill ----------------------------- */

static void kernel_and_fill(enum how how)
{
    setup();
    CUfunction sum = rig_kernel("sum_u32");
    CUdeviceptr out = 0;
    CU_OK(cuMemAlloc(&out, sizeof(uint64_t)));
    CUdeviceptr a = rig_filled(48 * MiB, 5);
    CUdeviceptr b = rig_filled(48 * MiB, 6);
    uint64_t spilled = rig_stat(0, SPW_C_SPILLED);
    ck_assert_uint_gt(spilled, 0);
    /* No room to fill: the kernel reads a where it lives. */
    launch_sum(sum, how, a, 48 * MiB, out);
    ck_assert_uint_eq(result(out), host_sum(48 * MiB, 5));
    uint64_t fills = rig_stat(0, SPW_C_FILL_EVENTS);
    /* Room again: the launch fills a back first. */
    CU_OK(cuMemFree(b));
    launch_sum(sum, how, a, 48 * MiB, out);
    ck_assert_uint_eq(result(out), host_sum(48 * MiB, 5));
    ck_assert_uint_gt(rig_stat(0, SPW_C_FILL_EVENTS), fills);
    ck_assert_uint_gt(rig_stat(0, SPW_C_FILL_BYTES), 0);
    ck_assert_uint_lt(rig_stat(0, SPW_C_SPILLED), spilled);
    ck_assert_uint_eq(rig_stat(0, SPW_C_SPILLED), 0);
    rig_expect_pattern(a, 48 * MiB, 5, "a after the fill");
}

START_TEST(kernel_params_fill)
{
    kernel_and_fill(PARAMS);
}
END_TEST

START_TEST(kernel_extra_buffer_fill)
{
    kernel_and_fill(EXTRA);
}
END_TEST

START_TEST(kernel_ex_fill)
{
    kernel_and_fill(EX);
}
END_TEST

START_TEST(cooperative_kernel_fill)
{
    kernel_and_fill(COOPERATIVE);
}
END_TEST

START_TEST(cooperative_multi_device_kernel_fill)
{
    kernel_and_fill(MULTI_DEVICE);
}
END_TEST

/* Pass-through memory is capped by what is resident, not by what is held,
 * and takes its room from the pool: with 96 MiB of pool data on a 64 MiB
 * limit, managed memory still fits, the pool moving as much more of its
 * data to the host (read back intact), and the driver never holds more
 * than the limit; more than the limit outside the pool never fits. */
START_TEST(passthrough_counts_resident_bytes)
{
    setup();
    CUdeviceptr a = rig_filled(48 * MiB, 7);
    CUdeviceptr b = rig_filled(48 * MiB, 8);
    CUdeviceptr m = 0, m2 = 0;
    uint64_t spilled = rig_stat(0, SPW_C_SPILLED);
    size_t driver = fakecuda_device_bytes_used(0);
    CU_OK(cuMemAllocManaged(&m, 8 * MiB, CU_MEM_ATTACH_GLOBAL));
    ck_assert_uint_ge(rig_stat(0, SPW_C_SPILLED), spilled + 8 * MiB);
    ck_assert_uint_le(fakecuda_device_bytes_used(0), driver);
    ck_assert_int_eq(cuMemAllocManaged(&m2, 60 * MiB, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_OUT_OF_MEMORY);
    rig_expect_pattern(b, 48 * MiB, 8, "b");
    CU_OK(cuMemFree(m));
    CU_OK(cuMemFree(b));
    /* a still lives partly on the host: its spilled bytes are not held
     * against the limit. */
    ck_assert_uint_gt(rig_stat(0, SPW_C_SPILLED), 0);
    CU_OK(cuMemAllocManaged(&m, 24 * MiB, CU_MEM_ATTACH_GLOBAL));
    CU_OK(cuMemFree(m));
    rig_expect_pattern(a, 48 * MiB, 7, "a");
}
END_TEST

/* cudaDeviceReset between phases (CUDA samples, test suites): phase one
 * spills and frees everything, the program resets the device, retains it
 * again and runs phase two past the limit, which spills and fills again.
 * The reset destroyed the streams and events spillway had made in the
 * primary context for its moves: they must be made anew, not named dead
 * (CUDA_ERROR_INVALID_HANDLE from every allocation past the device's
 * pages, for good). */
START_TEST(a_reset_between_phases)
{
    spill_then_free_all();
    CU_OK(cuCtxSynchronize());
    CU_OK(cuDevicePrimaryCtxReset(0));
    CU_OK(cuDevicePrimaryCtxRelease(0));
    setup();
    CUdeviceptr a = rig_filled(48 * MiB, 3);
    CUdeviceptr b = rig_filled(48 * MiB, 4);
    rig_expect_pattern(a, 48 * MiB, 3, "a after the reset");
    rig_expect_pattern(b, 48 * MiB, 4, "b after the reset");
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(b));
}
END_TEST

/* ---- (c) SPILLWAY_SPILL=0: the byte cap as before -------------------------- */

START_TEST(spill_off_refuses_past_the_limit)
{
    setup();
    CUdeviceptr a = rig_filled(48 * MiB, 10);
    CUdeviceptr b = 0;
    ck_assert_int_eq(cuMemAlloc(&b, 48 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_uint_eq(rig_counters(0).used, 48 * MiB);
    ck_assert_uint_eq(rig_stat(0, SPW_C_SPILLED), 0);
    ck_assert_uint_eq(rig_stat(0, SPW_C_SPILL_EVENTS), 0);
    rig_expect_pattern(a, 48 * MiB, 10, "a");
    /* Launches and sets pass through untouched. */
    CUfunction sum = rig_kernel("sum_u32");
    CUdeviceptr out = 0;
    CU_OK(cuMemAlloc(&out, sizeof(uint64_t)));
    launch_sum(sum, PARAMS, a, 48 * MiB, out);
    ck_assert_uint_eq(result(out), host_sum(48 * MiB, 10));
    CU_OK(cuMemsetD8(a, 0, 48 * MiB));
}
END_TEST

/* ---- (d) SPILLWAY_HOST_LIMIT=16M: the limit plus 16 MiB, no more ---------- */

START_TEST(host_limit_bounds_spill)
{
    setup();
    enum { CHUNK = 8 * MiB, MAX = 20 };
    CUdeviceptr p[MAX];
    unsigned n = 0;
    CUresult r = CUDA_SUCCESS;
    for (; n < MAX; n++) {
        r = cuMemAlloc(&p[n], CHUNK);
        if (r != CUDA_SUCCESS)
            break;
        uint32_t *w = rig_expected(CHUNK, 20 + n);
        CU_OK(cuMemcpyHtoD(p[n], w, CHUNK));
        free(w);
    }
    ck_assert_int_eq(r, CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_uint_gt((size_t)n * CHUNK, LIMIT);            /* it did spill */
    ck_assert_uint_le((size_t)n * CHUNK, LIMIT + 16 * MiB); /* within the host limit */
    ck_assert_uint_le(rig_stat(0, SPW_C_SPILLED), 16 * MiB);
    ck_assert_uint_eq(rig_counters(0).used, (size_t)n * CHUNK);
    CUdeviceptr q = 0;
    ck_assert_int_eq(cuMemAlloc(&q, 2 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    for (unsigned i = 0; i < n; i++)
        rig_expect_pattern(p[i], CHUNK, 20 + i, "a chunk");
}
END_TEST

/* ---- (e) the driver refuses every pinned host page (spill.sh) ------------ */

START_TEST(host_pages_refused)
{
    setup();
    CUdeviceptr a = rig_filled(48 * MiB, 3), b = 0;
    ck_assert_int_eq(cuMemAlloc(&b, 48 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_int_eq(cuMemAlloc(&b, 48 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_uint_eq(rig_stat(0, SPW_C_SPILLED), 0);
    ck_assert_uint_eq(rig_counters(0).used, 48 * MiB);
    rig_expect_pattern(a, 48 * MiB, 3, "a buffer nothing could spill");
    CU_OK(cuMemFree(a));
}
END_TEST

/* ---- (f) the driver refuses every spill copy (spill.sh) ------------------ */

/* Each spill's move undone, bytes where they were: the allocation past the
 * limit gets pinned host pages instead of the driver's error, which
 * PyTorch's and XLA's allocators would take as fatal (they handle
 * OUT_OF_MEMORY only). */
START_TEST(spill_moves_refused)
{
    setup();
    CUdeviceptr a = rig_filled(48 * MiB, 4);
    CUdeviceptr b = rig_filled(48 * MiB, 5); /* 16 MiB free on the device, 32 on the host */
    CUdeviceptr c = rig_filled(8 * MiB, 6);  /* all on the host */
    ck_assert_uint_eq(rig_stat(0, SPW_C_SPILLED), 40 * MiB);
    ck_assert_uint_eq(rig_stat(0, SPW_C_SPILL_BYTES), 0);
    ck_assert_uint_ge(rig_stat(0, SPW_C_SPILL_FAULTS), 1); /* published: spillway-top, the exporter */
    ck_assert_uint_eq(rig_stat(0, SPW_C_FAULTED), 0);     /* every move undone: nothing lost */
    rig_expect_pattern(a, 48 * MiB, 4, "a buffer whose spill was refused");
    rig_expect_pattern(b, 48 * MiB, 5, "b");
    rig_expect_pattern(c, 8 * MiB, 6, "c");
    CU_OK(cuMemFree(c));
    CU_OK(cuMemFree(b));
    CU_OK(cuMemFree(a));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("shim_spill");
    const char *only = getenv("SPW_SPILL_ONLY");
    TCase *tc;
    if (!only) {
        tc = tcase_create("spill");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, past_the_limit_through_spill);
        tcase_add_test(tc, a_sync_point_needs_no_device_query);
        tcase_add_test(tc, copies_and_sets_on_spilled_memory);
        tcase_add_test(tc, array_copies_fill_spilled_memory);
        tcase_add_test(tc, kernel_params_fill);
        tcase_add_test(tc, kernel_extra_buffer_fill);
        tcase_add_test(tc, kernel_ex_fill);
        tcase_add_test(tc, cooperative_kernel_fill);
        tcase_add_test(tc, cooperative_multi_device_kernel_fill);
        spill_dma_buf_tests(tc);
        tcase_add_test(tc, passthrough_counts_resident_bytes);
        spill_race_tests(tc);
        tcase_add_test(tc, a_reset_between_phases);
        suite_add_tcase(s, tc);
    } else if (strcmp(only, "off") == 0) {
        tc = tcase_create("off");
        tcase_add_test(tc, spill_off_refuses_past_the_limit);
        suite_add_tcase(s, tc);
    } else if (strcmp(only, "host_refused") == 0) {
        tc = tcase_create("host_refused");
        tcase_add_test(tc, host_pages_refused);
        suite_add_tcase(s, tc);
    } else if (strcmp(only, "move_refused") == 0) {
        tc = tcase_create("move_refused");
        tcase_add_test(tc, spill_moves_refused);
        suite_add_tcase(s, tc);
    } else if (strcmp(only, "host_limit") == 0) {
        tc = tcase_create("host_limit");
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, host_limit_bounds_spill);
        suite_add_tcase(s, tc);
    }
    return s;
}
