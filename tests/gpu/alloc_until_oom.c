/* The CUDA C row of the GPU acceptance (issue 3): allocate until the
 * allocator refuses, in --chunk blocks, halving the block after each refusal
 * down to --min-chunk (one 2 MiB granule), so the bytes reached tell whether
 * the limit was hit within one granule. Every block is filled and read back
 * (the memory is real and usable). Linked with nvcc -cudart static and
 * -cudart shared (two rows), and with gcc -lcuda for the fakecuda self-test.
 *
 *   alloc_until_oom [--chunk 64M] [--min-chunk 2M] [--cap SIZE] [--hold]
 *                   [--baseline]
 *   --cap       stop there even without a refusal (a limit not enforced
 *               must not eat the whole device): reported as capped=1
 *   --hold      at the peak, print SWGPU_HOLD and wait for a line on stdin
 *               (the harness samples NVML and the stats segment meanwhile)
 *   --baseline  hold one --chunk block only: the context's own overhead
 *
 * One line:
 *   RESULT api=.. total=.. free0=.. reached=.. allocs=.. oom=0|1 capped=0|1
 *          data_ok=0|1 free_after=.. held=.. */
#include "bench/gpuapi.h"
#include "bench/util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    uint64_t chunk = 64u << 20, min_chunk = 2u << 20, cap = UINT64_MAX;
    int hold = 0, baseline = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--chunk") && v && !parse_size(v, &chunk) && chunk)
            i++;
        else if (!strcmp(a, "--min-chunk") && v && !parse_size(v, &min_chunk) && min_chunk)
            i++;
        else if (!strcmp(a, "--cap") && v && !parse_size(v, &cap))
            i++;
        else if (!strcmp(a, "--hold"))
            hold = 1;
        else if (!strcmp(a, "--baseline"))
            baseline = 1;
        else {
            fprintf(stderr, "usage: alloc_until_oom [--chunk SIZE] [--min-chunk SIZE] [--cap SIZE] [--hold] "
                            "[--baseline]\n");
            return 2;
        }
    }
    int e = gpu_init();
    if (e)
        die_gpu("gpu_init", e);
    size_t free0, total;
    if ((e = gpu_mem_info(&free0, &total)) != 0)
        die_gpu("gpu_mem_info", e);

    size_t maxn = 1 + (size_t)(baseline ? 1 : (total / min_chunk) + 64);
    gpu_ptr *ptrs = calloc(maxn, sizeof *ptrs);
    uint64_t *sizes = calloc(maxn, sizeof *sizes);
    if (!ptrs || !sizes)
        return 1;
    size_t n = 0;
    uint64_t reached = 0;
    int oom = 0, capped = 0;
    for (uint64_t c = chunk; n < maxn;) {
        if (baseline && n == 1)
            break;
        if (reached + c > cap) {
            capped = 1;
            break;
        }
        gpu_ptr p;
        e = gpu_malloc(&p, c);
        if (gpu_is_oom(e)) {
            oom = 1;
            if (c / 2 < min_chunk)
                break;
            c /= 2;
            continue;
        }
        if (e)
            die_gpu("gpu_malloc", e);
        /* The tag is the block's index: a block mapped over another one
         * (a pool bug) reads the wrong tag. */
        if ((e = gpu_memset8(p, (unsigned char)(n % 251 + 1), c, 0)) != 0)
            die_gpu("gpu_memset8", e);
        ptrs[n] = p;
        sizes[n++] = c;
        reached += c;
    }
    int data_ok = 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char first, last;
        if ((e = gpu_copy_dtoh(&first, ptrs[i], 1, 0)) != 0 || (e = gpu_copy_dtoh(&last, ptrs[i] + sizes[i] - 1, 1, 0)))
            die_gpu("gpu_copy_dtoh", e);
        if (first != (unsigned char)(i % 251 + 1) || last != first)
            data_ok = 0;
    }
    size_t free_after = 0, total_after;
    if ((e = gpu_mem_info(&free_after, &total_after)) != 0)
        die_gpu("gpu_mem_info", e);
    if (hold) {
        printf("SWGPU_HOLD\n");
        fflush(stdout);
        if (wait_for_go(60) != 0)
            fprintf(stderr, "alloc_until_oom: no go from the harness; going on\n");
    }
    for (size_t i = 0; i < n; i++)
        if ((e = gpu_free(ptrs[i])) != 0)
            die_gpu("gpu_free", e);
    printf("RESULT api=%s total=%zu free0=%zu reached=%" PRIu64 " allocs=%zu oom=%d capped=%d data_ok=%d "
           "free_after=%zu held=%" PRIu64 "\n",
           gpu_api_name(), total, free0, reached, n, oom, capped, data_ok, free_after, reached);
    free(ptrs);
    free(sizes);
    return 0;
}
