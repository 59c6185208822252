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

struct opts {
    uint64_t ops, max, cap, seed, pct;
    int poll_stats;
};

/* Fills *o from the command line (also sets async and verify); -1 on a bad
 * argument. */
static int parse_args(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.ops = 10000, .max = 64u << 20, .cap = 3584ull << 20, .seed = 42, .pct = 73};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--mode") && v && (!strcmp(v, "sync") || !strcmp(v, "async"))) {
            async = !strcmp(v, "async");
            i++;
        } else if (!strcmp(a, "--ops") && v && !parse_size(v, &o->ops)) {
            i++;
        } else if (!strcmp(a, "--max") && v && !parse_size(v, &o->max) && o->max) {
            i++;
        } else if (!strcmp(a, "--cap") && v && !parse_size(v, &o->cap)) {
            i++;
        } else if (!strcmp(a, "--seed") && v && !parse_size(v, &o->seed)) {
            i++;
        } else if (!strcmp(a, "--alloc-pct") && v && !parse_size(v, &o->pct) && o->pct <= 100) {
            i++;
        } else if (!strcmp(a, "--verify")) {
            verify = 1;
        } else if (!strcmp(a, "--poll-stats")) {
            o->poll_stats = 1;
        } else {
            return -1;
        }
    }
    return 0;
}

/* The workload's state and what the result line reports. */
struct run {
    struct block *live;
    uint64_t nlive, live_bytes, peak_req, allocs, frees, forced, peak_pool;
};

static void alloc_block(struct run *r, uint64_t op, uint64_t size)
{
    struct block *b = &r->live[r->nlive];
    b->size = size;
    b->tag = (unsigned char)(op % 251 + 1);
    int e = async ? gpu_malloc_async(&b->p, size) : gpu_malloc(&b->p, size);
    if (e)
        die_gpu(async ? "gpu_malloc_async" : "gpu_malloc", e);
    if (verify && (e = gpu_memset8(b->p, b->tag, size, async)) != 0)
        die_gpu("gpu_memset8", e);
    r->nlive++;
    r->allocs++;
    r->live_bytes += size;
    if (r->live_bytes > r->peak_req)
        r->peak_req = r->live_bytes;
}

static void free_block(struct run *r, uint64_t pick)
{
    uint64_t i = pick % r->nlive;
    release(&r->live[i]);
    r->live_bytes -= r->live[i].size;
    r->live[i] = r->live[--r->nlive];
    r->frees++;
}

/* The timed part: o->ops operations from the seed, then a sync. */
static void run_ops(const struct opts *o, struct run *r)
{
    uint64_t rng = o->seed, pool;
    for (uint64_t op = 0; op < o->ops; op++) {
        /* Three draws per operation whatever it does: the same sequence in
         * every mode. */
        int want_alloc = rng_next(&rng) % 100 < o->pct;
        uint64_t size = 1 + rng_next(&rng) % o->max;
        uint64_t pick = rng_next(&rng);
        if (want_alloc && r->live_bytes + size > o->cap && r->nlive) {
            want_alloc = 0;
            r->forced++;
        }
        if (!want_alloc && !r->nlive)
            want_alloc = 1;
        if (want_alloc)
            alloc_block(r, op, size);
        else
            free_block(r, pick);
        if (o->poll_stats && selfstats_get("pool_bytes", 0, &pool) == 0 && pool > r->peak_pool)
            r->peak_pool = pool;
    }
    int e = async ? gpu_stream_sync() : gpu_device_sync();
    if (e)
        die_gpu("sync", e);
}

/* Frees (and with --verify checks) what is still live. */
static void drain(struct run *r)
{
    while (r->nlive)
        release(&r->live[--r->nlive]);
    int e = async ? gpu_stream_sync() : gpu_device_sync();
    if (e)
        die_gpu("sync", e);
}

int main(int argc, char **argv)
{
    struct opts o;
    if (parse_args(argc, argv, &o)) {
        fprintf(stderr, "usage: alloc_random [--mode sync|async] [--ops N] [--max SIZE] [--cap SIZE]\n"
                        "       [--seed N] [--alloc-pct P] [--verify] [--poll-stats]\n");
        return 2;
    }
    struct run r = {.live = calloc(o.ops + 1, sizeof *r.live)};
    if (!r.live)
        return 1;
    int e = gpu_init();
    if (e)
        die_gpu("gpu_init", e);
    uint64_t t0 = now_ns();
    run_ops(&o, &r);
    uint64_t total = now_ns() - t0;
    uint64_t stats_peak = 0;
    int have_stats = selfstats_get("peak_bytes", 0, &stats_peak) == 0;
    uint64_t final_live = r.live_bytes;
    drain(&r);
    printf("RESULT bench=alloc_random api=%s mode=%s ops=%" PRIu64 " allocs=%" PRIu64 " frees=%" PRIu64
           " forced_frees=%" PRIu64 " total_ns=%" PRIu64 " peak_requested=%" PRIu64 " final_live=%" PRIu64
           " cap=%" PRIu64 " seed=%" PRIu64 " verify=%s errors=%lu",
           gpu_api_name(), async ? "async" : "sync", o.ops, r.allocs, r.frees, r.forced, total, r.peak_req,
           final_live, o.cap, o.seed, verify ? (errors ? "FAIL" : "ok") : "off", errors);
    if (o.poll_stats)
        printf(" peak_pool=%" PRIu64, r.peak_pool);
    if (have_stats)
        printf(" stats_peak=%" PRIu64, stats_peak);
    printf("\n");
    free(r.live);
    return errors ? 1 : 0;
}
