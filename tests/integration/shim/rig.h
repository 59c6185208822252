/* What the suites that run under spillway against fakecuda share: the
 * context, buffers of a known content, two kernels, the process's stats
 * segment and where a page lives. Every helper fails the running test
 * (ck_assert) rather than return an error. */
#ifndef SPILLWAY_TESTS_SHIM_RIG_H
#define SPILLWAY_TESTS_SHIM_RIG_H
#include "tests/unit/check_compat.h"

#include "shim/spillway.h"
#include "stats/layout.h"
#include "tests/fakecuda/fakecuda.h"

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#define MiB ((size_t)1 << 20)

#define CU_OK(call)                                                            \
    do {                                                                       \
        CUresult r_ = (call);                                                  \
        ck_assert_msg(r_ == CUDA_SUCCESS, "%s: error %d", #call, (int)r_);     \
    } while (0)

/* Checks that spillway is preloaded over fakecuda and makes device dev's
 * primary context current; returns it. */
CUcontext rig_setup(int dev);

/* Whether the driver is of CUDA version (cuDriverGetVersion) or later:
 * the suites also run on fakecuda as a 12.7 driver (launches.sh,
 * gates.sh), where a test of a later entry point has nothing to test. */
int rig_driver_has(int version);

/* A counter of device dev in the process's stats segment (the suite's
 * script sets SPILLWAY_STATS_DIR). */
uint64_t rig_stat(int dev, enum spw_counter k);
/* spillway_get_counters / spillway_get_pool_counters of device dev. */
struct spillway_counters rig_counters(int dev);
struct spillway_pool_counters rig_pool(int dev);

/* Word i of the buffer made with seed. */
uint32_t rig_pattern(size_t i, unsigned seed);
/* A host copy of that content (free it). */
uint32_t *rig_expected(size_t bytes, unsigned seed);
/* A new device buffer (cuMemAlloc) holding it. */
CUdeviceptr rig_filled(size_t bytes, unsigned seed);
/* The device buffer equals want, word for word (what names it). */
void rig_expect_words(CUdeviceptr p, const uint32_t *want, size_t bytes, const char *what);
void rig_expect_pattern(CUdeviceptr p, size_t bytes, unsigned seed, const char *what);

/* step_u32(words, n, k): every word w becomes rig_step(w, k).
 * sum_u32(words, n, out): *(uint64_t *)out = the sum of the n words. */
uint32_t rig_step(uint32_t w, unsigned k);
uint64_t rig_host_sum(const uint32_t *w, size_t n);
CUfunction rig_kernel(const char *name);

/* Bytes of [p, p + bytes) whose pages live in device memory of dev (the
 * rest on the host), page by page as fakecuda maps them. */
size_t rig_resident(CUdeviceptr p, size_t bytes, int dev);
/* Makes room for nothing but a buffer of bytes on the current device:
 * every other buffer spills, then it is freed and the program syncs (a
 * sync point: its pages are free again). */
void rig_squeeze(size_t bytes);
#endif
