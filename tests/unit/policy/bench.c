/* policy_bench: alloc+free pair latency per size, multi-thread throughput
 * and pool efficiency on the random workload, against the fake
 * backend (so: the cost of policy/ itself, with driver calls nearly free;
 * each sync, map and set-access the real driver would pay is counted).
 * Not run by `make test`:  build/policy_bench */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "policy/policy.h"
#include "tests/unit/policy/fakebackend.h"

#define PG ((size_t)2 << 20)
#define MiB ((size_t)1 << 20)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, CUresult r)
{
    fprintf(stderr, "policy_bench: %s: CUresult %d\n", what, (int)r);
    exit(1);
}

typedef struct env {
    fake_backend *fb;
    sw_policy *p;
} env;

static env up(size_t limit_pages, bool prealloc)
{
    env e = {fake_create(PG, limit_pages), NULL};
    sw_backend be = fake_ops(e.fb);
    sw_device_config cfg = {.limit = limit_pages * PG, .preallocate = prealloc};
    CUresult r;
    if ((r = sw_policy_create(&be, &e.p)) || (r = sw_device_init(e.p, 0, &cfg)))
        die("init", r);
    return e;
}

static void down(env e)
{
    CUresult r = sw_policy_destroy(e.p);
    if (r)
        die("destroy", r);
    fake_destroy(e.fb);
}

/* ns per alloc+free pair in steady state (after a warm-up that maps). */
static double pair_ns(env e, size_t size, bool async, long n, fake_stats *delta)
{
    const CUstream s = (CUstream)0x77;
    CUdeviceptr p;
    CUresult r;
    for (int i = 0; i < 2000; i++) {
        if ((r = async ? sw_alloc_async(e.p, 0, size, s, &p) : sw_alloc(e.p, 0, size, &p)))
            die("alloc", r);
        if ((r = async ? sw_free_async(e.p, p, s) : sw_free(e.p, p)))
            die("free", r);
    }
    fake_stats a, b;
    fake_get_stats(e.fb, &a);
    double t0 = now();
    for (long i = 0; i < n; i++) {
        if ((r = async ? sw_alloc_async(e.p, 0, size, s, &p) : sw_alloc(e.p, 0, size, &p)))
            die("alloc", r);
        if ((r = async ? sw_free_async(e.p, p, s) : sw_free(e.p, p)))
            die("free", r);
    }
    double t = now() - t0;
    fake_get_stats(e.fb, &b);
    delta->syncs = b.syncs - a.syncs;
    delta->maps = b.maps - a.maps;
    delta->ev_record = b.ev_record - a.ev_record;
    return t * 1e9 / (double)n;
}

typedef struct thr {
    sw_policy *p;
    int id;
    long n;
    size_t size;
} thr;

static void *thr_run(void *arg)
{
    thr *t = arg;
    CUdeviceptr p[4];
    for (long i = 0; i < t->n; i++) {
        for (int k = 0; k < 4; k++)
            if (sw_alloc(t->p, 0, t->size + (size_t)k * 256, &p[k]))
                die("thread alloc", CUDA_ERROR_OUT_OF_MEMORY);
        for (int k = 0; k < 4; k++)
            sw_free(t->p, p[k]);
    }
    return NULL;
}

static double threads_mops(int nthreads, size_t size)
{
    env e = up(512, true);
    pthread_t tid[64];
    thr t[64];
    long n = 400000 / nthreads / 4;
    double t0 = now();
    for (int i = 0; i < nthreads; i++) {
        t[i] = (thr){e.p, i, n, size};
        pthread_create(&tid[i], NULL, thr_run, &t[i]);
    }
    for (int i = 0; i < nthreads; i++)
        pthread_join(tid[i], NULL);
    double dt = now() - t0;
    down(e);
    return (double)nthreads * (double)n * 4 / dt / 1e6;
}

static uint64_t rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

/* The workload: sizes uniform up to 64 MiB, 73% alloc / 27% free,
 * 10,000 operations, requested bytes kept below the limit. */
static void random_workload(bool prealloc, double capf)
{
    const size_t limit_pages = 2048; /* 4 GiB */
    env e = up(limit_pages, prealloc);
    enum { MAXLIVE = 10000 };
    static CUdeviceptr ptr[MAXLIVE];
    static size_t sz[MAXLIVE];
    int live = 0;
    size_t used = 0, cap = (size_t)((double)(limit_pages * PG) * capf);
    uint64_t seed = 42, ooms = 0;
    double t0 = now();
    for (int op = 0; op < 10000; op++) {
        bool do_alloc = rnd(&seed) % 100 < 73 || live == 0;
        size_t s = 1 + rnd(&seed) % (64 * MiB);
        if (do_alloc && used + s > cap)
            do_alloc = false;
        if (do_alloc) {
            CUresult r = sw_alloc(e.p, 0, s, &ptr[live]);
            if (r == CUDA_ERROR_OUT_OF_MEMORY) {
                ooms++;
                continue;
            }
            if (r)
                die("workload alloc", r);
            sz[live++] = s;
            used += s;
        } else if (live) {
            int k = (int)(rnd(&seed) % (uint64_t)live);
            if (sw_free(e.p, ptr[k]))
                die("workload free", CUDA_ERROR_INVALID_VALUE);
            used -= sz[k];
            ptr[k] = ptr[--live];
            sz[k] = sz[live];
        }
    }
    double dt = now() - t0;
    sw_counters c;
    sw_get_counters(e.p, 0, &c);
    fake_stats f;
    fake_get_stats(e.fb, &f);
    printf("random workload (cap %.2f of the limit, prealloc %-3s): %.1f ms, peak requested %.0f MiB, peak backing %.0f MiB,"
           " device pages created %.0f MiB, efficiency %.3f (vs created %.3f), ooms %llu,"
           " syncs %llu, maps %llu, unmaps %llu\n",
           capf, prealloc ? "on" : "off", dt * 1e3, (double)c.peak_in_use_bytes / MiB,
           (double)c.peak_backing_bytes / MiB, (double)f.max_dev_pages * PG / MiB,
           (double)c.peak_in_use_bytes / (double)c.peak_backing_bytes,
           (double)c.peak_in_use_bytes / ((double)f.max_dev_pages * PG),
           (unsigned long long)ooms, (unsigned long long)f.syncs, (unsigned long long)f.maps,
           (unsigned long long)f.unmaps);
    for (int k = 0; k < live; k++)
        sw_free(e.p, ptr[k]);
    down(e);
}

/* ns per touch of a buffer of n pages inside one mapping of many (JAX's
 * and TensorFlow's arenas: spans), while another page of the mapping is on
 * the host: design.md says a touch costs a store or two whatever the
 * buffer's size, not a page-table walk per page. */
static void span_touch(void)
{
    enum { BIG = 4096, MID = 256, SMALL = 16, NP = BIG + MID + 2 * SMALL };
    fake_backend *fb = fake_create(PG, NP);
    fake_no_bytes(fb); /* bookkeeping only */
    sw_backend be = fake_ops(fb);
    sw_policy *p;
    sw_device_config cfg = {.limit = NP * PG, .host_limit = 64 * PG, .spill = true};
    CUresult r;
    CUdeviceptr va;
    CUmemGenericAllocationHandle h;
    if ((r = sw_policy_create(&be, &p)) || (r = sw_device_init(p, 0, &cfg)) ||
        (r = fake_reserve(fb, NP * PG, &va)) || (r = sw_vmm_create(p, 0, NP * PG, &h)) ||
        (r = sw_vmm_map(p, va, NP * PG, 0, h)) || (r = sw_vmm_set_access(p, va, NP * PG, 1)))
        die("span set-up", r);
    CUdeviceptr big = va, mid = big + BIG * PG, small = mid + MID * PG, last = small + SMALL * PG;
    if ((r = sw_set_residency(p, last + 3 * PG, 1, SW_RES_HOST)))
        die("span residency", r);
    const CUdeviceptr bufs[] = {small, mid, big};
    const int pages[] = {SMALL, MID, BIG};
    double ns[3];
    for (int i = 0; i < 3; i++) {
        const long n = 200000;
        for (long k = 0; k < n / 10; k++) /* warm */
            (void)sw_touch(p, bufs[i]);
        double t0 = now();
        for (long k = 0; k < n; k++)
            (void)sw_touch(p, bufs[i]);
        ns[i] = (now() - t0) * 1e9 / (double)n;
    }
    printf("touch inside spans (a page of the mapping on the host), ns per touch: %d pages %.1f, "
           "%d pages %.1f, %d pages %.1f (%.1f x the %d-page one)\n\n",
           pages[0], ns[0], pages[1], ns[1], pages[2], ns[2], ns[2] / ns[0], pages[0]);
    if ((r = sw_vmm_unmap(p, va, NP * PG, NULL)) || (r = sw_vmm_release(p, h, NULL)) ||
        (r = fake_free_va(fb, va, NP * PG)) || (r = sw_policy_destroy(p)))
        die("span tear-down", r);
    fake_destroy(fb);
}

int main(void)
{
    static const size_t sizes[] = {256, 64 * 1024, MiB, 16 * MiB, 256 * MiB};
    static const char *names[] = {"256 B", "64 KiB", "1 MiB", "16 MiB", "256 MiB"};
    printf("policy_bench: fake backend (driver calls nearly free; counts show what the real\n"
           "driver would be asked per pair in steady state)\n\n");
    printf("%-8s %14s %22s %14s %22s\n", "size", "sync pair ns", "(syncs/maps per 1k)",
           "async pair ns", "(syncs/events per 1k)");
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        env e = up(1024, true); /* 2 GiB */
        long n = sizes[i] >= 16 * MiB ? 200000 : 1000000;
        fake_stats ds, da;
        double s = pair_ns(e, sizes[i], false, n, &ds);
        double a = pair_ns(e, sizes[i], true, n, &da);
        printf("%-8s %14.1f %10.2f / %-9.2f %14.1f %10.2f / %-9.2f\n", names[i], s,
               1000.0 * (double)ds.syncs / (double)n, 1000.0 * (double)ds.maps / (double)n, a,
               1000.0 * (double)da.syncs / (double)n, 1000.0 * (double)da.ev_record / (double)n);
        down(e);
    }
    printf("\nthreads, 4 live small blocks each, alloc+free pairs (Mpairs/s):");
    static const int nt[] = {1, 2, 8, 32};
    for (size_t i = 0; i < sizeof nt / sizeof *nt; i++)
        printf("  %d: %.2f", nt[i], threads_mops(nt[i], 1024));
    printf("\n\n");
    span_touch();
    random_workload(false, 0.75);
    random_workload(false, 0.9);
    random_workload(true, 0.9);
    return 0;
}
