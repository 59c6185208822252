/* Shared by the driver conformance suites: they run against fakecuda in CI
 * and against the real driver on a GPU host (scripts/gpu-check.sh), so every
 * expectation here is one the real driver meets too, unless a test says it
 * checks fakecuda only. */
#ifndef SPILLWAY_DRIVER_COMMON_H
#define SPILLWAY_DRIVER_COMMON_H
#include <cuda.h>

#include "tests/fakecuda/fakecuda.h"
#include "tests/unit/check_compat.h"

/* Asserts a driver call's result, printing the code on failure. */
#define CU_OK(call) ck_assert_int_eq((call), CUDA_SUCCESS)
#define CU_ERR(call, code) ck_assert_int_eq((call), (code))

#define MiB ((size_t)1 << 20)

/* cuInit, the primary context of device 0 made current. A checked fixture:
 * it runs in each test's own process, so nothing of the driver crosses fork. */
void driver_setup(void);
void driver_teardown(void);
extern CUcontext test_ctx;

struct test_kernels {
    CUmodule module;
    CUfunction fill_u32;  /* (unsigned *p, unsigned v, unsigned long long n) */
    CUfunction add_u32;   /* same parameters, p[i] += v */
    CUfunction wait_flag; /* (volatile unsigned *flag): spins until *flag != 0 */
};

/* Loads the kernels: PTX on a real GPU, the C versions on fakecuda. */
void kernels_load(struct test_kernels *k);
/* Launches fill/add over n words with a fixed small grid on stream s. */
CUresult launch_u32(CUfunction f, CUdeviceptr p, unsigned v, size_t n, CUstream s);

/* A flag the host can set while a kernel spins on it (mapped pinned memory). */
struct flag {
    volatile unsigned *host;
    CUdeviceptr dev;
};
void flag_new(struct flag *f);
void flag_release(struct flag *f);
/* Makes stream s busy until flag_release. */
void stream_block(const struct test_kernels *k, struct flag *f, CUstream s);

/* Asserts that e stays incomplete for a while (polls for ~50 ms): a single
 * query could pass only because the work had not been picked up yet. */
void expect_event_pending(CUevent e);
void expect_stream_pending(CUstream s);

/* Reads n words of device memory back (synchronously) and checks each is v. */
void expect_u32(CUdeviceptr p, unsigned v, size_t n);

/* VMM: a pinned page of device dev, as cuMemCreate takes it; read-write
 * access for device 0 to [va, va + size). */
CUmemAllocationProp prop_device(int dev);
void set_rw(CUdeviceptr va, size_t size);

#endif
