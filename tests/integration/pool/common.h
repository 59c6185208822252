/* Shared by the pool suites (test_*.c here): what the run is (spillway
 * serving or not, preallocating), what spillway counts and publishes,
 * byte patterns written and checked through the driver, a slow fakecuda
 * kernel that keeps work queued, and VMM properties. pool.sh runs every suite under several environments, once
 * without spillway: tests in a "both" case must pass there too (same
 * behaviour), those in a "spillway" case return early. */
#ifndef SPILLWAY_TEST_POOL_COMMON_H
#define SPILLWAY_TEST_POOL_COMMON_H
#include "tests/unit/check_compat.h"

#include "shim/spillway.h"
#include "tests/fakecuda/fakecuda.h"

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#define MiB ((size_t)1 << 20)
#define PAGE (2 * MiB)

#define CU_OK(call)                                                              \
    do {                                                                         \
        CUresult r_ = (call);                                                    \
        ck_assert_msg(r_ == CUDA_SUCCESS, "%s: error %d", #call, (int)r_);       \
    } while (0)

/* spillway's introspection, looked up by pooled(); NULL without spillway. */
extern int (*get_pool)(int, struct spillway_pool_counters *);
extern int (*get_counters)(int, struct spillway_counters *);

/* Whether spillway serves this run (preloaded and not disabled). */
int pooled(void);
int preallocating(void);
size_t limit_bytes(void); /* pool.sh's SPILLWAY_MEM_LIMIT */
/* Device dev's primary context, made current. */
CUcontext use_device(int dev);
struct spillway_pool_counters pool_counters(int dev);
/* What spillway counts against dev's limit (spillway_get_counters' used). */
uint64_t used_on(int dev);
/* What the driver holds on dev beyond the pool's pages: pass-through
 * memory (the pool gives pages back for it, so the driver's total alone
 * would not show it). */
size_t outside_pool(int dev);
/* This process's stats segment in SPILLWAY_STATS_DIR: 0, or -1 when it
 * cannot be read. */
struct spw_stats_snapshot;
int read_stats(struct spw_stats_snapshot *snap);

/* A pattern from seed: written with put, checked with expect. */
void fill_pattern(unsigned char *buf, size_t n, unsigned seed);
void put(CUdeviceptr p, size_t n, unsigned seed);
void expect(CUdeviceptr p, size_t n, unsigned seed);
void expect_byte(CUdeviceptr p, size_t n, unsigned char v);

/* slow_fill(ptr, byte, n, ms) on fakecuda: sleeps ms on the stream's
 * worker, then writes n bytes at ptr, as a kernel would. */
CUfunction slow_kernel(void);
void launch_slow(CUfunction f, CUdeviceptr p, unsigned v, size_t n, unsigned ms, CUstream s);

/* cuMemCreate's properties for device memory on dev; read-write access. */
CUmemAllocationProp device_prop(int dev);
void set_rw(CUdeviceptr va, size_t n, int dev);
#endif
