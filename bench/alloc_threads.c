/* Alloc+free pairs from many threads at once (issue 14 item 6: the hot
 * path must scale with threads). For each thread count T, T threads start
 * together and each makes N pairs of gpu_malloc+gpu_free of one size; the
 * figure is pairs per second over all threads and the efficiency against
 * T times the one-thread rate (1.0: no thread slows another down). The same
 * binary runs natively and under LD_PRELOAD, so bench/run.py takes the
 * ratio per thread count from one run of each. Meaningful only with at
 * least as many cores as threads (the line says how many there are).
 *
 *   alloc_threads [--threads 1,2,4,8,16] [--size 64K] [--pairs N] [--scale F]
 *
 * One line per thread count:
 *   RESULT bench=alloc_threads api=driver size=65536 threads=8 cores=16
 *          pairs=.. wall_ns=.. pairs_per_s=.. efficiency=.. */
#include "bench/gpuapi.h"
#include "bench/util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_THREADS 64

struct run {
    uint64_t size;
    unsigned pairs;
    pthread_barrier_t start;
    int err;
    const char *what;
};

static void *worker(void *arg)
{
    struct run *r = arg;
    int e = gpu_thread_init();
    pthread_barrier_wait(&r->start);
    for (unsigned i = 0; e == 0 && i < r->pairs; i++) {
        gpu_ptr p;
        if ((e = gpu_malloc(&p, r->size)) != 0) {
            r->what = "gpu_malloc";
            break;
        }
        if ((e = gpu_free(p)) != 0)
            r->what = "gpu_free";
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
        } else {
            goto usage;
        }
    }
    struct run r = {.size = sizes[0], .pairs = (unsigned)(pairs * scale) ? (unsigned)(pairs * scale) : 1};
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
        printf("RESULT bench=alloc_threads api=%s size=%llu threads=%u cores=%ld pairs=%u wall_ns=%llu "
               "pairs_per_s=%.0f efficiency=%.3f\n",
               gpu_api_name(), (unsigned long long)r.size, counts[k], cores, r.pairs,
               (unsigned long long)wall, rate, rate / (one * counts[k]));
        fflush(stdout);
    }
    return 0;
usage:
    fprintf(stderr, "usage: alloc_threads [--threads 1,2,4,8,16] [--size SIZE] [--pairs N] [--scale F]\n");
    return 2;
}
