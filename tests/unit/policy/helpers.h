/* Shared set-up for the policy suites: one policy over one fake backend per
 * test (each Check test runs in its own process), byte patterns, and the
 * end-of-test invariants. */
#ifndef SPILLWAY_TEST_POLICY_HELPERS_H
#define SPILLWAY_TEST_POLICY_HELPERS_H
#include <stdint.h>
#include <string.h>

#include "policy/policy.h"
#include "tests/unit/check_compat.h"
#include "tests/unit/policy/fakebackend.h"

#define PG ((size_t)2 << 20)
#define MiB ((size_t)1 << 20)
#define S1 ((CUstream)0x1001)
#define S2 ((CUstream)0x1002)

/* One pair per file that includes this; a program whose suite spans
 * several files defines POLICY_HELPERS_SHARED before it in each, and FB
 * and P in one. */
#ifdef POLICY_HELPERS_SHARED
extern fake_backend *FB;
extern sw_policy *P;
#else
static fake_backend *FB;
static sw_policy *P;
#endif

/* A policy over a fake device of fake_limit_pages pages of page bytes. */
static inline void env_up_paged(const sw_device_config *cfg, size_t page, size_t fake_limit_pages)
{
    FB = fake_create(page, fake_limit_pages);
    ck_assert_ptr_nonnull(FB);
    sw_backend be = fake_ops(FB);
    ck_assert_int_eq(sw_policy_create(&be, &P), CUDA_SUCCESS);
    ck_assert_int_eq(sw_device_init(P, 0, cfg), CUDA_SUCCESS);
}

static inline void env_up_cfg(const sw_device_config *cfg, size_t fake_limit_pages)
{
    env_up_paged(cfg, PG, fake_limit_pages);
}

/* limit in pages; sync_batch 0 = the default. */
static inline void env_up(size_t limit_pages, bool prealloc, size_t sync_batch)
{
    sw_device_config cfg = {
        .limit = limit_pages * PG, .preallocate = prealloc, .sync_batch = sync_batch,
        .host_limit = 64 * PG,
    };
    env_up_cfg(&cfg, limit_pages);
}

/* Spill on: limit_pages of device memory, host_pages of pinned host memory. */
static inline void env_spill(size_t limit_pages, size_t host_pages)
{
    sw_device_config cfg = {
        .limit = limit_pages * PG, .host_limit = host_pages * PG, .spill = true,
    };
    env_up_cfg(&cfg, limit_pages);
}

static inline fake_stats fstats(void)
{
    fake_stats s;
    fake_get_stats(FB, &s);
    return s;
}

static inline sw_counters counters(void)
{
    sw_counters c;
    ck_assert_int_eq(sw_get_counters(P, 0, &c), CUDA_SUCCESS);
    return c;
}

static inline void assert_no_violation(void)
{
    fake_stats s = fstats();
    ck_assert_msg(s.violations == 0, "backend invariant violated: %s", fake_violation(FB));
}

/* How many of the npages pages from va live on the host. */
static inline size_t host_pages_in(CUdeviceptr va, size_t npages)
{
    size_t n = 0;
    for (size_t i = 0; i < npages; i++) {
        sw_residency w;
        ck_assert_int_eq(sw_get_residency(P, va + i * PG, &w), CUDA_SUCCESS);
        n += w == SW_RES_HOST;
    }
    return n;
}

/* Destroys the policy: everything it created must be gone. */
static inline void env_down(void)
{
    assert_no_violation();
    ck_assert_int_eq(sw_policy_destroy(P), CUDA_SUCCESS);
    fake_stats s = fstats();
    ck_assert_msg(s.violations == 0, "at destroy: %s", fake_violation(FB));
    ck_assert_uint_eq(s.live_dev_pages, 0);
    ck_assert_uint_eq(s.live_host_pages, 0);
    ck_assert_uint_eq(s.live_mappings, 0);
    ck_assert_uint_eq(s.ev_create, s.ev_destroy);
    fake_destroy(FB);
    P = NULL;
    FB = NULL;
}

static inline uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

/* A pattern unique to (seed, offset), written and checked word by word. */
static inline void fill(CUdeviceptr p, size_t n, uint64_t seed)
{
    uint64_t *w = (uint64_t *)p;
    size_t i = 0;
    for (; i < n / 8; i++)
        w[i] = mix(seed + i);
    for (size_t b = i * 8; b < n; b++)
        ((uint8_t *)p)[b] = (uint8_t)mix(seed ^ b);
}

static inline bool verify(CUdeviceptr p, size_t n, uint64_t seed)
{
    const uint64_t *w = (const uint64_t *)p;
    size_t i = 0;
    for (; i < n / 8; i++)
        if (w[i] != mix(seed + i))
            return false;
    for (size_t b = i * 8; b < n; b++)
        if (((const uint8_t *)p)[b] != (uint8_t)mix(seed ^ b))
            return false;
    return true;
}

static inline uint64_t rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}
#endif
