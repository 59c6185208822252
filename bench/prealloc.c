/* Time to the first allocation (issue 4, benchmark 4). spillway creates its
 * pool when the device is first used, so the cost of preallocating shows
 * as the difference between SPILLWAY_PREALLOCATE=1 and =0 in the time from
 * main() to the first small allocation returning. Natively, --bulk F times
 * one allocation of F x total device memory: what taking that much memory
 * costs without spillway, the rival figure for the ratio.
 *
 *   prealloc [--bulk F]
 * One line:
 *   RESULT bench=prealloc api=.. init_ns=.. first_ns=.. total=.. pool_bytes=..|n/a
 *          [bulk_bytes=.. bulk_ns=..] */
#include "bench/gpuapi.h"
#include "bench/selfstats.h"
#include "bench/util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    uint64_t t0 = now_ns();
    double bulk = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--bulk") && i + 1 < argc && (bulk = atof(argv[i + 1])) > 0 && bulk <= 1) {
            i++;
        } else {
            fprintf(stderr, "usage: prealloc [--bulk FRACTION]\n");
            return 2;
        }
    }
    int e = gpu_init();
    if (e)
        die_gpu("gpu_init", e);
    uint64_t t_init = now_ns() - t0;
    gpu_ptr p;
    if ((e = gpu_malloc(&p, 2u << 20)) != 0)
        die_gpu("gpu_malloc", e);
    uint64_t t_first = now_ns() - t0;
    size_t freeb, total;
    if ((e = gpu_mem_info(&freeb, &total)) != 0)
        die_gpu("gpu_mem_info", e);
    uint64_t pool;
    int have_pool = selfstats_get("pool_bytes", 0, &pool) == 0;
    printf("RESULT bench=prealloc api=%s init_ns=%" PRIu64 " first_ns=%" PRIu64 " total=%zu", gpu_api_name(), t_init,
           t_first, total);
    if (have_pool)
        printf(" pool_bytes=%" PRIu64, pool);
    else
        printf(" pool_bytes=n/a");
    if ((e = gpu_free(p)) != 0)
        die_gpu("gpu_free", e);
    if (bulk > 0) {
        uint64_t bytes = (uint64_t)(bulk * (double)total) & ~((2ull << 20) - 1);
        uint64_t t = now_ns();
        if ((e = gpu_malloc(&p, bytes)) != 0)
            die_gpu("gpu_malloc(bulk)", e);
        uint64_t dt = now_ns() - t;
        if ((e = gpu_free(p)) != 0)
            die_gpu("gpu_free(bulk)", e);
        printf(" bulk_bytes=%" PRIu64 " bulk_ns=%" PRIu64, bytes, dt);
    }
    printf("\n");
    return 0;
}
