/* Work that waits for the program's own later launches (issue 12 item 3),
 * under spillway against fakecuda with two devices: half of a collective
 * (fakecuda's stand-in for an NCCL all-reduce) runs on device 0 and waits
 * for its other half, which the same thread launches on device 1 only
 * after an allocation that needs device 0's memory moved. A move that
 * waited for device 0's work would wait for a launch that cannot come: the
 * allocation must be served without that wait (from host pages), both
 * halves must meet, and every buffer must keep its bytes.
 *
 * Run by collective.sh: two 256 MiB devices, a 64 MiB limit on each, the
 * collective's timeout at 8 s (a timeout stands for a hang on a GPU). */
#include "tests/integration/shim/rig.h"

#include <stdlib.h>
#include <time.h>

#define LIMIT (64 * MiB)
#define NBUF 7
#define BUF (8 * MiB)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Launches the half of collective key on stream s; status is where it
 * writes how it ended. */
static void launch_half(CUfunction f, CUstream s, unsigned long long key, CUdeviceptr status)
{
    unsigned nranks = 2;
    void *args[] = {&key, &nranks, &status};
    CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
}

static unsigned status_of(CUdeviceptr status)
{
    unsigned v = 0;
    CU_OK(cuMemcpyDtoH(&v, status, sizeof v));
    return v;
}

static CUfunction collective(void)
{
    ck_assert_int_eq(fakecuda_register_collective("allreduce"), 0);
    CUmodule m;
    CUfunction f;
    CU_OK(cuModuleLoadData(&m, "fakecuda"));
    CU_OK(cuModuleGetFunction(&f, m, "allreduce"));
    return f;
}

/* Device 0 holds 56 MiB of data and half a collective in flight; the same
 * thread asks device 0 for `more` bytes, then launches the other half. */
static void allocate_while_half_waits(size_t more, unsigned long long key)
{
    CUcontext c0 = rig_setup(0), c1 = rig_setup(1);
    CU_OK(cuCtxSetCurrent(c0));
    CUfunction f0 = collective();
    CUdeviceptr b[NBUF], status0 = 0, status1 = 0;
    for (int i = 0; i < NBUF; i++)
        b[i] = rig_filled(BUF, 50 + (unsigned)i);
    CU_OK(cuMemAlloc(&status0, sizeof(unsigned)));
    CUstream s0, s1;
    CU_OK(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING));
    /* On the half's own stream: a non-blocking stream does not wait for
     * the legacy stream's memset, which could land after the half wrote. */
    CU_OK(cuMemsetD32Async(status0, 0, 1, s0));
    unsigned long long timeouts = fakecuda_collective_timeouts();
    double t0 = now();
    launch_half(f0, s0, key, status0);

    CUdeviceptr x = 0;
    CU_OK(cuMemAlloc(&x, more)); /* past device 0's limit */
    CU_OK(cuMemsetD8Async(x, 0x77, more, s0)); /* queued behind the half */
    double served = now() - t0;

    CU_OK(cuCtxSetCurrent(c1));
    CUfunction f1 = collective();
    CU_OK(cuMemAlloc(&status1, sizeof(unsigned)));
    CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CU_OK(cuMemsetD32Async(status1, 0, 1, s1));
    launch_half(f1, s1, key, status1);
    CU_OK(cuStreamSynchronize(s1));
    ck_assert_uint_eq(status_of(status1), FAKECUDA_COLLECTIVE_DONE);

    CU_OK(cuCtxSetCurrent(c0));
    CU_OK(cuStreamSynchronize(s0));
    ck_assert_uint_eq(status_of(status0), FAKECUDA_COLLECTIVE_DONE);
    ck_assert_uint_eq(fakecuda_collective_timeouts(), timeouts);
    ck_assert_msg(served < 4.0, "the allocation took %.1f s: it waited for the collective", served);
    ck_assert_uint_gt(rig_pool(0).spilled_bytes + rig_pool(0).spill_bytes, 0);

    unsigned char *w = malloc(more);
    ck_assert_ptr_nonnull(w);
    CU_OK(cuMemcpyDtoH(w, x, more));
    size_t bad = 0;
    while (bad < more && w[bad] == 0x77)
        bad++;
    ck_assert_msg(bad == more, "byte %zu of the new allocation is %#x", bad, bad < more ? w[bad] : 0);
    free(w);
    for (int i = 0; i < NBUF; i++)
        rig_expect_pattern(b[i], BUF, 50 + (unsigned)i, "a buffer of device 0");
    CU_OK(cuStreamDestroy(s0));
    CU_OK(cuCtxSetCurrent(c1));
    CU_OK(cuStreamDestroy(s1));
    CU_OK(cuCtxSetCurrent(c0));
}

START_TEST(allocation_past_the_limit_while_a_collective_waits)
{
    allocate_while_half_waits(24 * MiB, 1);
}
END_TEST

/* Then the program syncs: the next allocation past the limit moves pages
 * again, and both devices carry on. */
START_TEST(moves_resume_once_the_collective_is_done)
{
    allocate_while_half_waits(16 * MiB, 2);
    CU_OK(cuCtxSynchronize());
    uint64_t spilled = rig_pool(0).spill_bytes;
    CUdeviceptr y = rig_filled(24 * MiB, 99);
    ck_assert_uint_gt(rig_pool(0).spill_bytes, spilled);
    rig_expect_pattern(y, 24 * MiB, 99, "an allocation after the collective");
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("shim_collective");
    TCase *tc = tcase_create("collective");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, allocation_past_the_limit_while_a_collective_waits);
    tcase_add_test(tc, moves_resume_once_the_collective_is_done);
    suite_add_tcase(s, tc);
    return s;
}
