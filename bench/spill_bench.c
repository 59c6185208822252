/* bench-spill (issue 14): what one spilled page costs as the pool grows.
 *
 * A policy over the unit suites' fake backend (counted driver calls; no
 * bytes: the copy engine's share is not the policy's) with pools of 1k,
 * 10k and 40k pages of 2 MiB: the pool is filled
 * with one-page blocks, a warm-up spills past it (the host-page reserve
 * starts and fills), then the measured phase allocates one-page blocks that
 * each need a spilled page. Reported per spilled page: instructions (when
 * run under callgrind with --toggle-collect=measured_phase: the script
 * reads them from callgrind's output), device syncs per spill event, and
 * host pages created on the caller's path after the warm-up. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy/policy.h"
#include "tests/unit/policy/fakebackend.h"

#define PG ((size_t)2 << 20)
#define MEASURED 256 /* one-page allocations in the measured phase */
#define WARMUP 512

typedef struct result {
    size_t pool_pages;
    uint64_t spilled, events, syncs, host_waits;
    double seconds;
} result;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void must(CUresult r, const char *what)
{
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "bench-spill: %s failed: %d\n", what, (int)r);
        exit(1);
    }
}

/* Kept out of line: callgrind collects only inside it. */
__attribute__((noinline)) void measured_phase(sw_policy *p, CUdeviceptr *out, size_t n);
__attribute__((noinline)) void measured_phase(sw_policy *p, CUdeviceptr *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        must(sw_alloc(p, 0, PG, &out[i]), "a spilling allocation");
}

static void wait_for_reserve(sw_policy *p, uint64_t want)
{
    /* The reserve fills on its own thread: give it the time it needs. */
    for (int i = 0; i < 2000; i++) {
        sw_counters c;
        sw_get_counters(p, 0, &c);
        if (c.host_bytes >= want)
            return;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

static result run(size_t pages)
{
    fake_backend *fb = fake_create(PG, pages);
    if (!fb)
        must(CUDA_ERROR_OUT_OF_MEMORY, "the fake backend");
    fake_no_bytes(fb); /* the policy's work is measured, not the copies' */
    sw_backend be = fake_ops(fb);
    sw_policy *p;
    must(sw_policy_create(&be, &p), "sw_policy_create");
    sw_device_config cfg = {
        .limit = pages * PG, .preallocate = true, .spill = true,
        .host_limit = (pages + 4 * WARMUP + 4 * MEASURED) * PG, .host_reserve = 1024 * PG,
    };
    must(sw_device_init(p, 0, &cfg), "sw_device_init");
    size_t total = pages + WARMUP + MEASURED;
    CUdeviceptr *blk = calloc(total, sizeof *blk);
    for (size_t i = 0; i < pages + WARMUP; i++)
        must(sw_alloc(p, 0, PG, &blk[i]), "filling the pool");
    sw_counters c0;
    sw_get_counters(p, 0, &c0);
    wait_for_reserve(p, c0.host_bytes + 512 * PG);
    sw_get_counters(p, 0, &c0);
    fake_stats f0;
    fake_get_stats(fb, &f0);
    double t0 = now();
    measured_phase(p, blk + pages + WARMUP, MEASURED);
    double t1 = now();
    sw_counters c1;
    sw_get_counters(p, 0, &c1);
    fake_stats f1;
    fake_get_stats(fb, &f1);
    result r = {
        .pool_pages = pages,
        .spilled = (c1.spill_bytes - c0.spill_bytes) / PG,
        .events = c1.spill_events - c0.spill_events,
        .syncs = f1.syncs - f0.syncs,
        .host_waits = c1.host_creates_waited - c0.host_creates_waited,
        .seconds = t1 - t0,
    };
    for (size_t i = 0; i < total; i++)
        if (blk[i])
            sw_free(p, blk[i]);
    free(blk);
    must(sw_policy_destroy(p), "sw_policy_destroy");
    fake_destroy(fb);
    return r;
}

int main(int argc, char **argv)
{
    size_t pages = argc > 1 ? strtoull(argv[1], NULL, 10) : 1024;
    result r = run(pages);
    printf("pool_pages=%zu spilled_pages=%" PRIu64 " spill_events=%" PRIu64 " device_syncs=%" PRIu64
           " critical_host_pages=%" PRIu64 " seconds=%.6f\n",
           r.pool_pages, r.spilled, r.events, r.syncs, r.host_waits, r.seconds);
    return r.spilled ? 0 : 1;
}
