/* Alloc+free pair latency: for each size, N pairs of gpu_malloc+gpu_free
 * (--mode sync: cudaMalloc/cudaFree, or cuMemAlloc/cuMemFree) or of
 * gpu_malloc_async+gpu_free_async on one stream (--mode async), each pair
 * timed on its own. The same binary runs natively and under LD_PRELOAD, so
 * bench/run.py takes the ratios from one run of each mode.
 *
 *   alloc_lat [--mode sync|async] [--sizes 256,64K,1M,16M,256M]
 *             [--scale F]   (iterations x F; the CI smoke test uses 0.01)
 *
 * One line per size:
 *   RESULT bench=alloc_lat api=runtime mode=sync size=256 iters=5000
 *          median_ns=.. p10_ns=.. p90_ns=.. mean_ns=.. */
#include "bench/gpuapi.h"
#include "bench/util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Enough pairs for a stable median, few enough that the native 256 MiB
 * pair (~300 us on H100) stays well under a second. */
static unsigned iters_for(uint64_t size)
{
    if (size <= (1u << 20))
        return 5000;
    if (size <= (16u << 20))
        return 1000;
    return 300;
}

static uint64_t one_pair(int async, uint64_t size)
{
    gpu_ptr p;
    int e;
    uint64_t t0 = now_ns();
    if ((e = async ? gpu_malloc_async(&p, size) : gpu_malloc(&p, size)) != 0)
        die_gpu(async ? "gpu_malloc_async" : "gpu_malloc", e);
    if ((e = async ? gpu_free_async(p) : gpu_free(p)) != 0)
        die_gpu(async ? "gpu_free_async" : "gpu_free", e);
    return now_ns() - t0;
}

int main(int argc, char **argv)
{
    int async = 0;
    double scale = 1.0;
    uint64_t sizes[16] = {256, 64u << 10, 1u << 20, 16u << 20, 256u << 20};
    int nsizes = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mode") && i + 1 < argc) {
            const char *m = argv[++i];
            if (strcmp(m, "sync") && strcmp(m, "async"))
                goto usage;
            async = !strcmp(m, "async");
        } else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            if ((nsizes = parse_sizes(argv[++i], sizes, 16)) <= 0)
                goto usage;
        } else if (!strcmp(argv[i], "--scale") && i + 1 < argc) {
            scale = atof(argv[++i]);
            if (!(scale > 0))
                goto usage;
        } else {
            goto usage;
        }
    }
    int e = gpu_init();
    if (e)
        die_gpu("gpu_init", e);
    for (int s = 0; s < nsizes; s++) {
        unsigned n = (unsigned)(iters_for(sizes[s]) * scale);
        if (n < 5)
            n = 5;
        uint64_t *t = malloc(n * sizeof *t);
        if (!t)
            return 1;
        /* Warm-up: first-touch costs (pool growth, mapping caches, the
         * async pool's first reservation) are not what a pair costs. */
        for (unsigned i = 0; i < 20; i++)
            one_pair(async, sizes[s]);
        if (async && (e = gpu_stream_sync()) != 0)
            die_gpu("gpu_stream_sync", e);
        uint64_t sum = 0;
        for (unsigned i = 0; i < n; i++) {
            t[i] = one_pair(async, sizes[s]);
            sum += t[i];
            /* Bound the async queue outside the timed pairs. */
            if (async && i % 256 == 255 && (e = gpu_stream_sync()) != 0)
                die_gpu("gpu_stream_sync", e);
        }
        if ((e = async ? gpu_stream_sync() : gpu_device_sync()) != 0)
            die_gpu("sync", e);
        uint64_t p10 = percentile(t, n, 10), med = percentile(t, n, 50), p90 = percentile(t, n, 90);
        printf("RESULT bench=alloc_lat api=%s mode=%s size=%" PRIu64 " iters=%u median_ns=%" PRIu64
               " p10_ns=%" PRIu64 " p90_ns=%" PRIu64 " mean_ns=%" PRIu64 "\n",
               gpu_api_name(), async ? "async" : "sync", sizes[s], n, med, p10, p90, sum / n);
        fflush(stdout);
        free(t);
    }
    return 0;
usage:
    fprintf(stderr, "usage: alloc_lat [--mode sync|async] [--sizes 256,64K,...] [--scale F]\n");
    return 2;
}
