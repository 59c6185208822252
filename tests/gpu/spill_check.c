/* The spill row of the GPU check: a driver-API program that holds more than
 * the memory it was told it has, keeps computing on all of it, and checks
 * every byte. Under spillway with spill on, the allocations past the limit
 * succeed (cold chunks move to pinned host memory) and the answers stay
 * right; without spillway it measures the same work natively for the ratio.
 *
 *   spill_check [--chunk 256M] [--factor 1.5] [--bytes SIZE] [--passes 2] [--spilled-copies]
 *               [--outside-array SIZE]
 *   --factor  hold factor x the total cuMemGetInfo reports (the limit under
 *             spillway); --bytes holds exactly SIZE instead (the native run
 *             of the same work)
 *   --spilled-copies  then a memset, a copy up and a copy down of the
 *             coldest chunk, which is spilled, while a kernel spins on
 *             another stream (no sync can finish, so nothing is filled back
 *             first): the copy engine on device addresses backed by host
 *             pages. spilled_copies_ok=1 when the chunk reads back as set
 *             and written; spilled_at=.. the bytes in host memory just
 *             before and spilled_copies_fills=.. the bytes filled back
 *             meanwhile (none spilled, or some filled: the row proved
 *             nothing); spilled_copies_s the time the three calls took.
 *             Needs a chunk of 2 MiB or more
 *   --outside-array  then, the pool full, a CUDA array of SIZE bytes (2D,
 *             floats, rows of 16 KiB): memory outside the pool, which the
 *             pool must make room for. outside_ok=1 when it was made, holds
 *             what was written to it and every chunk still reads right
 *             afterwards; outside_gave=.. the pool bytes given back for it
 *             (under spillway at least SIZE), outside_s the time to make it
 *
 * Each chunk i is filled with i+1 by a kernel; then every pass adds 1 to
 * every chunk (a kernel over all of it: spilled chunks are read and written
 * through their host pages, or filled back); finally each chunk is copied
 * back and every word checked. Runs against the real driver (PTX kernels)
 * and fakecuda (C kernels). One line:
 *   RESULT total=.. held=.. chunks=.. data_ok=0|1 alloc_s=.. compute_s=..
 *          verify_s=.. err=NAME
 * and under spillway (its own stats segment) what the moves cost (issue
 * 14): bytes each way, the time spent moving each way and the effective
 * bandwidth (bytes over that time, in GB/s: the pinned copy's limit is
 * ~55 GB/s on an H100), and the time submissions were held back (stall)
 * per GiB spilled:
 *          spill_bytes=.. spill_s=.. spill_gbps=.. fill_bytes=.. fill_s=..
 *          fill_gbps=.. stall_s=.. stall_s_per_gib=..  */
#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/selfstats.h"
#include "bench/util.h"
#include "tests/fakecuda/fakecuda.h"
#include "tests/unit/driver/kernels_ptx.h"

void fakecuda_kernels_register(void); /* tests/unit/driver/kernels.c */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static const char *name_of(CUresult r)
{
    const char *s = "?";
    cuGetErrorName(r, &s);
    return s;
}

static CUresult launch(CUfunction f, CUdeviceptr p, unsigned v, size_t words)
{
    unsigned long long n = words;
    void *args[] = {&p, &v, &n};
    return cuLaunchKernel(f, 264, 1, 1, 256, 1, 1, 0, NULL, args, NULL);
}

#define ARRAY_ROW (16u << 10) /* bytes a row of --outside-array: 4096 floats */

struct opts {
    uint64_t chunk, bytes;
    double factor;
    int passes, spilled_copies;
    uint64_t outside;
};

/* Fills *o from the command line; -1 on a bad argument. */
static int parse_args(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.chunk = 256u << 20, .factor = 1.5, .passes = 2};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--chunk") && v && !parse_size(v, &o->chunk) && o->chunk >= 4096)
            i++;
        else if (!strcmp(a, "--bytes") && v && !parse_size(v, &o->bytes))
            i++;
        else if (!strcmp(a, "--factor") && v && (o->factor = atof(v)) > 0)
            i++;
        else if (!strcmp(a, "--passes") && v && (o->passes = atoi(v)) >= 0)
            i++;
        else if (!strcmp(a, "--spilled-copies"))
            o->spilled_copies = 1;
        else if (!strcmp(a, "--outside-array") && v && !parse_size(v, &o->outside) &&
                 o->outside >= ARRAY_ROW && o->outside % ARRAY_ROW == 0)
            i++;
        else
            return -1;
    }
    return 0;
}

/* --outside-array: an array of bytes made with the pool full (timed),
 * written and read back through host (a buffer of at least one row), then
 * destroyed; 1 when all of that went right. */
static int outside_array(uint64_t bytes, unsigned *host, size_t host_bytes, double *secs, CUresult *r)
{
    CUDA_ARRAY_DESCRIPTOR d = {.Width = ARRAY_ROW / 4, .Height = bytes / ARRAY_ROW,
                               .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    CUarray a;
    double t0 = now();
    if ((*r = cuArrayCreate(&a, &d)) != CUDA_SUCCESS)
        return 0;
    *secs = now() - t0;
    size_t step = host_bytes < bytes ? host_bytes / ARRAY_ROW * ARRAY_ROW : bytes;
    int ok = 1;
    for (size_t off = 0; ok && off < bytes; off += step) {
        size_t n = bytes - off < step ? bytes - off : step;
        for (size_t w = 0; w < n / 4; w++)
            host[w] = (unsigned)(off / 4 + w) ^ 0x5a5a5a5au;
        if ((*r = cuMemcpyHtoA(a, off, host, n)) != CUDA_SUCCESS)
            ok = 0;
    }
    for (size_t off = 0; ok && off < bytes; off += step) {
        size_t n = bytes - off < step ? bytes - off : step;
        if ((*r = cuMemcpyAtoH(host, a, off, n)) != CUDA_SUCCESS)
            ok = 0;
        for (size_t w = 0; ok && w < n / 4; w++)
            ok = host[w] == ((unsigned)(off / 4 + w) ^ 0x5a5a5a5au);
    }
    CUresult d_r = cuArrayDestroy(a);
    if (ok && d_r != CUDA_SUCCESS)
        *r = d_r, ok = 0;
    return ok;
}

/* A context on device 0 and the kernels. */
static CUresult load_kernels(CUfunction *fill, CUfunction *add, CUfunction *wait)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUresult r;
    if (fakecuda_present())
        fakecuda_kernels_register();
    if ((r = cuInit(0)) || (r = cuDeviceGet(&dev, 0)) || (r = cuDevicePrimaryCtxRetain(&ctx, dev)) ||
        (r = cuCtxSetCurrent(ctx)) || (r = cuModuleLoadData(&mod, kernels_ptx)) ||
        (r = cuModuleGetFunction(fill, mod, "fill_u32")) || (r = cuModuleGetFunction(add, mod, "add_u32")) ||
        (r = cuModuleGetFunction(wait, mod, "wait_flag")))
        return r;
    return CUDA_SUCCESS;
}

/* Allocates up to n chunks, chunk i filled with i+1; *got says how many. */
static CUresult alloc_and_fill(CUfunction fill, CUdeviceptr *p, size_t n, uint64_t chunk, size_t *got)
{
    CUresult r = CUDA_SUCCESS;
    size_t words = chunk / 4;
    for (*got = 0; *got < n; ++*got) {
        if ((r = cuMemAlloc(&p[*got], chunk)) != CUDA_SUCCESS ||
            (r = launch(fill, p[*got], (unsigned)*got + 1, words)) != CUDA_SUCCESS)
            break;
    }
    if (r == CUDA_SUCCESS)
        r = cuCtxSynchronize();
    return r;
}

/* Every pass adds 1 to every word of every chunk. */
static CUresult add_passes(CUfunction add, const CUdeviceptr *p, size_t got, size_t words, int passes)
{
    CUresult r = CUDA_SUCCESS;
    for (int pass = 0; pass < passes && r == CUDA_SUCCESS; pass++)
        for (size_t i = 0; i < got && r == CUDA_SUCCESS; i++)
            r = launch(add, p[i], 1, words);
    if (r == CUDA_SUCCESS)
        r = cuCtxSynchronize();
    return r;
}

/* 1 when every word of each chunk i from `from` on reads i + 1 + passes; a
 * failed copy-back lands in *r. */
static int verify_chunks(const CUdeviceptr *p, size_t from, size_t got, uint64_t chunk, unsigned *host,
                         int passes, CUresult *r)
{
    size_t words = chunk / 4;
    for (size_t i = from; i < got; i++) {
        if ((*r = cuMemcpyDtoH(host, p[i], chunk)) != CUDA_SUCCESS)
            return 0;
        unsigned want = (unsigned)i + 1 + (unsigned)passes;
        for (size_t w = 0; w < words; w++)
            if (host[w] != want) {
                fprintf(stderr, "spill_check: chunk %zu word %zu is %u, not %u\n", i, w, host[w], want);
                return 0;
            }
    }
    return 1;
}

/* Releases the spinning kernel of --spilled-copies after 20 s whatever happens, so
 * that a wait nobody ends is a slow failure, not a hang. */
static void *watchdog(void *flag)
{
    struct timespec t = {20, 0};
    nanosleep(&t, NULL);
    __atomic_store_n((unsigned *)flag, 1u, __ATOMIC_SEQ_CST);
    return NULL;
}

#define WINDOW (1u << 20) /* bytes written by the copy up */

/* --spilled-copies: chunk p (spilled: the coldest) set, written and read
 * back while a kernel spins on another stream, so that nothing can be
 * filled back first. 1 when every word reads as set or written; *secs:
 * how long the three calls took. */
static int spilled_copies(CUfunction wait, CUdeviceptr p, uint64_t chunk, unsigned *host, double *secs,
                          CUresult *r)
{
    unsigned *flag = NULL;
    CUdeviceptr dflag;
    CUstream s;
    *secs = 0;
    if ((*r = cuMemHostAlloc((void **)&flag, sizeof *flag, CU_MEMHOSTALLOC_DEVICEMAP)) != CUDA_SUCCESS)
        return 0;
    *flag = 0;
    pthread_t dog;
    int dog_ok = 0;
    void *args[] = {&dflag};
    if ((*r = cuMemHostGetDevicePointer(&dflag, flag, 0)) == CUDA_SUCCESS &&
        (*r = cuStreamCreate(&s, CU_STREAM_NON_BLOCKING)) == CUDA_SUCCESS) {
        dog_ok = pthread_create(&dog, NULL, watchdog, flag) == 0;
        *r = cuLaunchKernel(wait, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
        size_t words = chunk / 4, off = (chunk / 2) & ~(size_t)3;
        double t0 = now();
        if (*r == CUDA_SUCCESS)
            *r = cuMemsetD32(p, 0xa5a5a5a5u, words);
        for (size_t w = 0; w < WINDOW / 4; w++)
            host[w] = 0x10000000u + (unsigned)w;
        if (*r == CUDA_SUCCESS)
            *r = cuMemcpyHtoD(p + off, host, WINDOW);
        if (*r == CUDA_SUCCESS)
            *r = cuMemcpyDtoH(host, p, chunk);
        *secs = now() - t0;
        __atomic_store_n(flag, 1u, __ATOMIC_SEQ_CST);
        CUresult sr = cuStreamSynchronize(s);
        cuStreamDestroy(s);
        if (*r == CUDA_SUCCESS)
            *r = sr;
        for (size_t w = 0; *r == CUDA_SUCCESS && w < words; w++) {
            size_t at = w * 4;
            unsigned want = at >= off && at < off + WINDOW ? 0x10000000u + (unsigned)((at - off) / 4) : 0xa5a5a5a5u;
            if (host[w] != want) {
                fprintf(stderr, "spill_check: spilled copies: word %zu is %#x, not %#x\n", w, host[w], want);
                if (dog_ok)
                    pthread_cancel(dog), pthread_join(dog, NULL);
                cuMemFreeHost(flag);
                return 0;
            }
        }
    }
    if (dog_ok) {
        pthread_cancel(dog);
        pthread_join(dog, NULL);
    }
    cuMemFreeHost(flag);
    return *r == CUDA_SUCCESS;
}

/* What the moves cost, from this process's stats segment; nothing without
 * spillway (no segment). */
static void print_moves(void)
{
    uint64_t sb, sn, fb, fn, st;
    if (selfstats_get("spill_bytes", 0, &sb) || selfstats_get("spill_ns", 0, &sn) ||
        selfstats_get("fill_bytes", 0, &fb) || selfstats_get("fill_ns", 0, &fn) ||
        selfstats_get("stall_ns", 0, &st))
        return;
    printf(" spill_bytes=%llu spill_s=%.3f spill_gbps=%.2f fill_bytes=%llu fill_s=%.3f fill_gbps=%.2f"
           " stall_s=%.3f stall_s_per_gib=%.4f",
           (unsigned long long)sb, sn / 1e9, sn ? (double)sb / (double)sn : 0.0, (unsigned long long)fb,
           fn / 1e9, fn ? (double)fb / (double)fn : 0.0, st / 1e9,
           sb ? (st / 1e9) / ((double)sb / (double)(1ull << 30)) : 0.0);
}

int main(int argc, char **argv)
{
    struct opts o;
    if (parse_args(argc, argv, &o)) {
        fprintf(stderr, "usage: spill_check [--chunk SIZE] [--factor F | --bytes SIZE] [--passes N] [--spilled-copies]"
                        " [--outside-array SIZE (whole 16 KiB rows)]\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    CUfunction fill, add, wait;
    CUresult r = load_kernels(&fill, &add, &wait);
    if (r != CUDA_SUCCESS) {
        printf("RESULT total=0 held=0 chunks=0 data_ok=0 err=%s\n", name_of(r));
        return 1;
    }
    size_t free0, total;
    cuMemGetInfo(&free0, &total);
    uint64_t chunk = o.chunk, bytes = o.bytes ? o.bytes : (uint64_t)(o.factor * (double)total);
    size_t n = (size_t)((bytes + chunk - 1) / chunk), words = chunk / 4;
    CUdeviceptr *p = calloc(n, sizeof *p);
    unsigned *host = malloc(chunk);
    if (!p || !host)
        return 1;

    double t0 = now();
    size_t got;
    r = alloc_and_fill(fill, p, n, chunk, &got);
    double t1 = now();
    if (r == CUDA_SUCCESS)
        r = add_passes(add, p, got, words, o.passes);
    double t2 = now();
    int ok = r == CUDA_SUCCESS && got == n && verify_chunks(p, 0, got, chunk, host, o.passes, &r);
    double t3 = now();
    int spilled_copies_ok = 0;
    double spilled_copies_s = 0;
    uint64_t spilled_at = 0;
    uint64_t fills0 = 0, fills1 = 0;
    if (ok && o.spilled_copies && chunk >= 2 * WINDOW) { /* the window sits at chunk / 2 */
        if (selfstats_get("spilled_bytes", 0, &spilled_at) || selfstats_get("fill_bytes", 0, &fills0))
            spilled_at = 0; /* no segment: not under spillway */
        spilled_copies_ok = spilled_copies(wait, p[0], chunk, host, &spilled_copies_s, &r);
        if (selfstats_get("fill_bytes", 0, &fills1))
            fills1 = fills0;
    }
    int outside_ok = 0;
    double outside_s = 0;
    uint64_t pool0 = 0, pool1 = 0;
    if (ok && o.outside) {
        int seg = selfstats_get("pool_bytes", 0, &pool0) == 0;
        outside_ok = outside_array(o.outside, host, chunk, &outside_s, &r);
        /* Read before the chunks are: their fills may grow the pool again. */
        if (!seg || selfstats_get("pool_bytes", 0, &pool1))
            pool1 = pool0;
        /* Chunk 0 holds what --spilled-copies wrote instead. */
        outside_ok = outside_ok && verify_chunks(p, o.spilled_copies ? 1 : 0, got, chunk, host, o.passes, &r);
    }
    printf("RESULT total=%zu held=%zu chunks=%zu data_ok=%d alloc_s=%.3f compute_s=%.3f verify_s=%.3f err=%s",
           total, got * (size_t)chunk, got, ok, t1 - t0, t2 - t1, t3 - t2, name_of(r));
    if (o.spilled_copies)
        printf(" spilled_copies_ok=%d spilled_at=%llu spilled_copies_fills=%llu spilled_copies_s=%.3f",
               spilled_copies_ok, (unsigned long long)spilled_at, (unsigned long long)(fills1 - fills0),
               spilled_copies_s);
    if (o.outside)
        printf(" outside_ok=%d outside_gave=%llu outside_s=%.3f", outside_ok,
               (unsigned long long)(pool0 > pool1 ? pool0 - pool1 : 0), outside_s);
    print_moves();
    printf("\n");
    for (size_t i = 0; i < got; i++)
        cuMemFree(p[i]);
    return ok ? 0 : 1;
}
