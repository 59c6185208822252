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

struct opts {
    uint64_t chunk, min_chunk, cap;
    int hold, baseline;
};

/* Fills *o from the command line; -1 on a bad argument. */
static int parse_args(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.chunk = 64u << 20, .min_chunk = 2u << 20, .cap = UINT64_MAX};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--chunk") && v && !parse_size(v, &o->chunk) && o->chunk)
            i++;
        else if (!strcmp(a, "--min-chunk") && v && !parse_size(v, &o->min_chunk) && o->min_chunk)
            i++;
        else if (!strcmp(a, "--cap") && v && !parse_size(v, &o->cap))
            i++;
        else if (!strcmp(a, "--hold"))
            o->hold = 1;
        else if (!strcmp(a, "--baseline"))
            o->baseline = 1;
        else
            return -1;
    }
    return 0;
}

/* The blocks held and how the filling ended. */
struct blocks {
    gpu_ptr *ptrs;
    uint64_t *sizes;
    size_t n, maxn;
    uint64_t reached;
    int oom, capped;
};

/* The block's tag is its index: a block mapped over another one (a pool
 * bug) reads the wrong tag. */
static unsigned char tag_of(size_t i)
{
    return (unsigned char)(i % 251 + 1);
}

/* Allocates and tags blocks until a refusal at --min-chunk, the cap, or
 * (--baseline) one block. */
static void fill_until_oom(const struct opts *o, struct blocks *b)
{
    for (uint64_t c = o->chunk; b->n < b->maxn;) {
        if (o->baseline && b->n == 1)
            break;
        if (b->reached + c > o->cap) {
            b->capped = 1;
            break;
        }
        gpu_ptr p;
        int e = gpu_malloc(&p, c);
        if (gpu_is_oom(e)) {
            b->oom = 1;
            if (c / 2 < o->min_chunk)
                break;
            c /= 2;
            continue;
        }
        if (e)
            die_gpu("gpu_malloc", e);
        if ((e = gpu_memset8(p, tag_of(b->n), c, 0)) != 0)
            die_gpu("gpu_memset8", e);
        b->ptrs[b->n] = p;
        b->sizes[b->n++] = c;
        b->reached += c;
    }
}

/* 1 when every block's first and last byte still hold its tag. */
static int blocks_intact(const struct blocks *b)
{
    int data_ok = 1;
    for (size_t i = 0; i < b->n; i++) {
        unsigned char first, last;
        int e;
        if ((e = gpu_copy_dtoh(&first, b->ptrs[i], 1, 0)) != 0 ||
            (e = gpu_copy_dtoh(&last, b->ptrs[i] + b->sizes[i] - 1, 1, 0)))
            die_gpu("gpu_copy_dtoh", e);
        if (first != tag_of(i) || last != first)
            data_ok = 0;
    }
    return data_ok;
}

/* --hold: the harness samples NVML and the stats segment at the peak. */
static void hold_for_harness(void)
{
    printf("SWGPU_HOLD\n");
    fflush(stdout);
    if (wait_for_go(60) != 0)
        fprintf(stderr, "alloc_until_oom: no go from the harness; going on\n");
}

int main(int argc, char **argv)
{
    struct opts o;
    if (parse_args(argc, argv, &o)) {
        fprintf(stderr, "usage: alloc_until_oom [--chunk SIZE] [--min-chunk SIZE] [--cap SIZE] [--hold] "
                        "[--baseline]\n");
        return 2;
    }
    int e = gpu_init();
    if (e)
        die_gpu("gpu_init", e);
    size_t free0, total;
    if ((e = gpu_mem_info(&free0, &total)) != 0)
        die_gpu("gpu_mem_info", e);

    struct blocks b = {.maxn = 1 + (size_t)(o.baseline ? 1 : (total / o.min_chunk) + 64)};
    b.ptrs = calloc(b.maxn, sizeof *b.ptrs);
    b.sizes = calloc(b.maxn, sizeof *b.sizes);
    if (!b.ptrs || !b.sizes)
        return 1;
    fill_until_oom(&o, &b);
    int data_ok = blocks_intact(&b);
    size_t free_after = 0, total_after;
    if ((e = gpu_mem_info(&free_after, &total_after)) != 0)
        die_gpu("gpu_mem_info", e);
    if (o.hold)
        hold_for_harness();
    for (size_t i = 0; i < b.n; i++)
        if ((e = gpu_free(b.ptrs[i])) != 0)
            die_gpu("gpu_free", e);
    printf("RESULT api=%s total=%zu free0=%zu reached=%" PRIu64 " allocs=%zu oom=%d capped=%d data_ok=%d "
           "free_after=%zu held=%" PRIu64 "\n",
           gpu_api_name(), total, free0, b.reached, b.n, b.oom, b.capped, data_ok, free_after, b.reached);
    free(b.ptrs);
    free(b.sizes);
    return 0;
}
