/* The random-allocations workload (issue 4, benchmark 2): --ops operations,
 * each an allocation (--alloc-pct percent) of a size uniform in
 * [1, --max] or a free of a uniformly chosen live block; an allocation that
 * would take the live bytes past --cap becomes a free instead, so usage stays
 * below the limit. The fixed --seed makes the sequence identical in every
 * mode (sync: cudaMalloc/cudaFree; async: cudaMallocAsync/cudaFreeAsync),
 * natively and under spillway.
 *
 *   --verify      fill each block with its tag at allocation and check three
 *                 spots of it before it is freed (correctness; timings then
 *                 include the fills and are not comparable)
 *   --poll-stats  after every operation read pool_bytes from this process's
 *                 stats segment: peak device bytes the pool held, for the
 *                 pool efficiency (peak requested / peak held)
 *
 * One line:
 *   RESULT bench=alloc_random api=.. mode=.. ops=.. allocs=.. frees=..
 *          total_ns=.. peak_requested=.. verify=ok|off|FAIL errors=..
 *          [peak_pool=.. stats_peak=..] */
#include "bench/gpuapi.h"
#include "bench/selfstats.h"
#include "bench/util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct block {
    gpu_ptr p;
    uint64_t size;
    unsigned char tag;
};

static int async, verify;
static unsigned long errors;

/* Three spots: the first, middle and last (up to) 8 bytes. */
static void check_block(const struct block *b)
{
    uint64_t offs[3] = {0, b->size / 2, b->size > 8 ? b->size - 8 : 0};
    for (int i = 0; i < 3; i++) {
        unsigned char buf[8];
        size_t n = b->size - offs[i] < 8 ? (size_t)(b->size - offs[i]) : 8;
        int e = gpu_copy_dtoh(buf, b->p + offs[i], n, async);
        if (e)
            die_gpu("gpu_copy_dtoh", e);
        for (size_t j = 0; j < n; j++)
            if (buf[j] != b->tag) {
                if (errors++ < 5)
                    fprintf(stderr, "alloc_random: block %#" PRIx64 "+%" PRIu64 " reads %#x, wrote %#x\n",
                            b->p, offs[i] + j, buf[j], b->tag);
            }
    }
}

static void release(struct block *b)
{
    if (verify)
        check_block(b);
    int e = async ? gpu_free_async(b->p) : gpu_free(b->p);
    if (e)
        die_gpu(async ? "gpu_free_async" : "gpu_free", e);
}

int main(int argc, char **argv)
{
    uint64_t ops = 10000, max = 64u << 20, cap = 3584ull << 20, seed = 42, pct = 73;
    int poll_stats = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--mode") && v && (!strcmp(v, "sync") || !strcmp(v, "async"))) {
            async = !strcmp(v, "async");
            i++;
        } else if (!strcmp(a, "--ops") && v && !parse_size(v, &ops)) {
            i++;
        } else if (!strcmp(a, "--max") && v && !parse_size(v, &max) && max) {
            i++;
        } else if (!strcmp(a, "--cap") && v && !parse_size(v, &cap)) {
            i++;
        } else if (!strcmp(a, "--seed") && v && !parse_size(v, &seed)) {
            i++;
        } else if (!strcmp(a, "--alloc-pct") && v && !parse_size(v, &pct) && pct <= 100) {
            i++;
        } else if (!strcmp(a, "--verify")) {
            verify = 1;
        } else if (!strcmp(a, "--poll-stats")) {
            poll_stats = 1;
        } else {
            fprintf(stderr, "usage: alloc_random [--mode sync|async] [--ops N] [--max SIZE] [--cap SIZE]\n"
                            "       [--seed N] [--alloc-pct P] [--verify] [--poll-stats]\n");
            return 2;
        }
    }
    struct block *live = calloc(ops + 1, sizeof *live);
    if (!live)
        return 1;
    int e = gpu_init();
    if (e)
        die_gpu("gpu_init", e);
    uint64_t rng = seed, nlive = 0, live_bytes = 0, peak_req = 0, allocs = 0, frees = 0, forced = 0;
    uint64_t peak_pool = 0, pool;
    uint64_t t0 = now_ns();
    for (uint64_t op = 0; op < ops; op++) {
        int want_alloc = rng_next(&rng) % 100 < pct;
        uint64_t size = 1 + rng_next(&rng) % max;
        uint64_t pick = rng_next(&rng);
        if (want_alloc && live_bytes + size > cap && nlive) {
            want_alloc = 0;
            forced++;
        }
        if (!want_alloc && !nlive)
            want_alloc = 1;
        if (want_alloc) {
            struct block *b = &live[nlive];
            b->size = size;
            b->tag = (unsigned char)(op % 251 + 1);
            if ((e = async ? gpu_malloc_async(&b->p, size) : gpu_malloc(&b->p, size)) != 0)
                die_gpu(async ? "gpu_malloc_async" : "gpu_malloc", e);
            if (verify && (e = gpu_memset8(b->p, b->tag, size, async)) != 0)
                die_gpu("gpu_memset8", e);
            nlive++;
            allocs++;
            live_bytes += size;
            if (live_bytes > peak_req)
                peak_req = live_bytes;
        } else {
            uint64_t i = pick % nlive;
            release(&live[i]);
            live_bytes -= live[i].size;
            live[i] = live[--nlive];
            frees++;
        }
        if (poll_stats && selfstats_get("pool_bytes", 0, &pool) == 0 && pool > peak_pool)
            peak_pool = pool;
    }
    if ((e = async ? gpu_stream_sync() : gpu_device_sync()) != 0)
        die_gpu("sync", e);
    uint64_t total = now_ns() - t0;
    uint64_t stats_peak = 0;
    int have_stats = selfstats_get("peak_bytes", 0, &stats_peak) == 0;
    uint64_t final_live = live_bytes;
    while (nlive)
        release(&live[--nlive]);
    if ((e = async ? gpu_stream_sync() : gpu_device_sync()) != 0)
        die_gpu("sync", e);
    printf("RESULT bench=alloc_random api=%s mode=%s ops=%" PRIu64 " allocs=%" PRIu64 " frees=%" PRIu64
           " forced_frees=%" PRIu64 " total_ns=%" PRIu64 " peak_requested=%" PRIu64 " final_live=%" PRIu64
           " cap=%" PRIu64 " seed=%" PRIu64 " verify=%s errors=%lu",
           gpu_api_name(), async ? "async" : "sync", ops, allocs, frees, forced, total, peak_req, final_live, cap,
           seed, verify ? (errors ? "FAIL" : "ok") : "off", errors);
    if (poll_stats)
        printf(" peak_pool=%" PRIu64, peak_pool);
    if (have_stats)
        printf(" stats_peak=%" PRIu64, stats_peak);
    printf("\n");
    free(live);
    return errors ? 1 : 0;
}
