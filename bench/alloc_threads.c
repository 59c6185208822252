/* The hot path from many threads at once (issue 14 item 6: it must scale
 * with threads). For each thread count T, T threads start together and
 * each makes N operations of its own:
 *   --op pair    gpu_malloc + gpu_free of one size (the default);
 *   --op async   gpu_malloc_async + gpu_free_async on the thread's own
 *                stream (cudaMallocAsync/cuMemAllocAsync from the default
 *                pool: PyTorch's cudaMallocAsync backend, one per tensor),
 *                the stream synchronized once at the end;
 *   --op submit  an asynchronous 256-byte memset into a buffer of its own,
 *                on its own stream (a submission: under spillway with spill
 *                on, the work gate and the heat of the buffer), the stream
 *                synchronized once at the end.
 * The figure is operations per second over all threads and the efficiency
 * against T times the one-thread rate (1.0: no thread slows another down).
 * The same binary runs natively and under LD_PRELOAD, so bench/run.py
 * takes the ratio per thread count from one run of each. Meaningful only
 * with at least as many cores as threads (the line says how many there are).
 *
 *   alloc_threads [--op pair|async|submit] [--threads 1,2,4,8,16] [--size 64K] [--pairs N] [--scale F]
 *
 * One line per thread count:
 *   RESULT bench=alloc_threads api=driver op=pair size=65536 threads=8 cores=16
 *          pairs=.. wall_ns=.. pairs_per_s=.. efficiency=..
 * (pairs: the operations per thread, whichever --op). */
#include "bench/gpuapi.h"
#include "bench/util.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_THREADS 64

struct run {
    uint64_t size;
    unsigned pairs;
    bool submit, async;
    pthread_barrier_t start;
    int err;
    const char *what;
};

static int pairs(struct run *r)
{
    int e = 0;
    for (unsigned i = 0; e == 0 && i < r->pairs; i++) {
        gpu_ptr p;
        if ((e = r->async ? gpu_malloc_async(&p, r->size) : gpu_malloc(&p, r->size)) != 0) {
            r->what = r->async ? "gpu_malloc_async" : "gpu_malloc";
            break;
        }
        if ((e = r->async ? gpu_free_async(p) : gpu_free(p)) != 0)
            r->what = r->async ? "gpu_free_async" : "gpu_free";
    }
    if (e == 0 && r->async && (e = gpu_stream_sync()) != 0)
        r->what = "gpu_stream_sync";
    return e;
}

static int submissions(struct run *r, gpu_ptr buf)
{
    int e = 0;
    size_t n = r->size < 256 ? r->size : 256;
    for (unsigned i = 0; e == 0 && i < r->pairs; i++)
        if ((e = gpu_memset8(buf, (unsigned char)i, n, 1)) != 0)
            r->what = "gpu_memset8 (async)";
    if (e == 0 && (e = gpu_stream_sync()) != 0)
        r->what = "gpu_stream_sync";
    return e;
}

static void *worker(void *arg)
{
    struct run *r = arg;
    gpu_ptr buf = 0;
    int e = gpu_thread_init();
    if (e)
        r->what = "gpu_thread_init";
    else if (r->submit && (e = gpu_malloc(&buf, r->size)) != 0)
        r->what = "gpu_malloc";
    pthread_barrier_wait(&r->start);
    if (e == 0)
        e = r->submit ? submissions(r, buf) : pairs(r);
    if (buf) {
        int f = gpu_free(buf);
        if (e == 0 && f) {
            e = f;
            r->what = "gpu_free";
        }
    }
    if (e)
        __atomic_store_n(&r->err, e, __ATOMIC_RELAXED);
    return NULL;
}

/* Wall time of T threads making their pairs, from the moment all are
 * ready; 0 and the error in r on failure. */
static uint64_t timed_run(struct run *r, unsigned threads)
{
    pthread_t t[MAX_THREADS];
    pthread_barrier_init(&r->start, NULL, threads + 1);
    r->err = 0;
    for (unsigned i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, worker, r) != 0) {
            fprintf(stderr, "alloc_threads: cannot start thread %u\n", i);
            exit(1);
        }
    pthread_barrier_wait(&r->start);
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    uint64_t wall = now_ns() - t0;
    pthread_barrier_destroy(&r->start);
    return r->err ? 0 : wall;
}

static int parse_threads(const char *s, unsigned *out, int max)
{
    int n = 0;
    while (*s && n < max) {
        char *end;
        unsigned long v = strtoul(s, &end, 10);
        if (end == s || v == 0 || v > MAX_THREADS)
            return -1;
        out[n++] = (unsigned)v;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return -1;
    }
    return n;
}

int main(int argc, char **argv)
{
    unsigned counts[16] = {1, 2, 4, 8, 16};
    int ncounts = 5;
    uint64_t sizes[1] = {64u << 10};
    double scale = 1.0;
    unsigned pairs = 20000;
    bool submit = false, async = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            if ((ncounts = parse_threads(argv[++i], counts, 16)) <= 0)
                goto usage;
        } else if (!strcmp(argv[i], "--size") && i + 1 < argc) {
            if (parse_sizes(argv[++i], sizes, 1) != 1)
                goto usage;
        } else if (!strcmp(argv[i], "--pairs") && i + 1 < argc) {
            pairs = (unsigned)strtoul(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--scale") && i + 1 < argc) {
            scale = atof(argv[++i]);
        } else if (!strcmp(argv[i], "--op") && i + 1 < argc) {
            const char *op = argv[++i];
            if (strcmp(op, "pair") && strcmp(op, "async") && strcmp(op, "submit"))
                goto usage;
            submit = !strcmp(op, "submit");
            async = !strcmp(op, "async");
        } else {
            goto usage;
        }
    }
    struct run r = {.size = sizes[0], .pairs = (unsigned)(pairs * scale) ? (unsigned)(pairs * scale) : 1,
                    .submit = submit, .async = async};
    int e = gpu_init();
    if (e)
        die_gpu("gpu_init", e);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    double one = 0;
    for (int k = 0; k < ncounts; k++) {
        uint64_t wall = timed_run(&r, counts[k]);
        if (!wall)
            die_gpu(r.what ? r.what : "gpu_thread_init", r.err);
        double rate = (double)r.pairs * counts[k] / ((double)wall / 1e9);
        if (counts[k] == 1 || one == 0)
            one = rate / counts[k];
        printf("RESULT bench=alloc_threads api=%s op=%s size=%llu threads=%u cores=%ld pairs=%u wall_ns=%llu "
               "pairs_per_s=%.0f efficiency=%.3f\n",
               gpu_api_name(), submit ? "submit" : async ? "async" : "pair", (unsigned long long)r.size, counts[k], cores, r.pairs,
               (unsigned long long)wall, rate, rate / (one * counts[k]));
        fflush(stdout);
    }
    return 0;
usage:
    fprintf(stderr, "usage: alloc_threads [--op pair|async|submit] [--threads 1,2,4,8,16] [--size SIZE] [--pairs N] "
                    "[--scale F]\n");
    return 2;
}
