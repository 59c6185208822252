/* diffgen: see README.md. Exit status: 0 the run passed its judge, 1 it
 * failed (a refusal, a reason, a wrong byte, the device above the limit,
 * an expectation), 2 bad usage or environment. */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "tests/fakecuda/fakecuda.h"
#include "tests/integration/diff/diffgen.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static bool env_true(const char *name, bool dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    return !strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on");
}

/* SPILLWAY_HOST_LIMIT as the judge needs it: bytes, or unlimited. */
static bool host_limit(uint64_t *out)
{
    const char *v = getenv("SPILLWAY_HOST_LIMIT");
    if (v && !strcasecmp(v, "unlimited")) {
        *out = UINT64_MAX;
        return true;
    }
    char *end;
    double x = v ? strtod(v, &end) : 0;
    if (!v || end == v)
        return false;
    int shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20
              : *end == 'G' || *end == 'g' ? 30 : *end == 'T' || *end == 't' ? 40 : 0;
    *out = (uint64_t)(x * (double)(1ULL << shift));
    return true;
}

static int setup_environment(struct diff_run *r)
{
    r->spillway = dlsym(RTLD_DEFAULT, "spillway_get_counters") != NULL;
    r->fakecuda = fakecuda_present();
    r->spill = r->spillway && env_true("SPILLWAY_SPILL", true);
    r->allowance = r->o->allowance_bytes + (uint64_t)(r->o->allowance_frac * (double)r->o->limit);
    r->page_allowance = (uint64_t)(r->o->page_allowance_frac * (double)r->o->limit);
    if (r->spillway)
        *(void **)&r->pool_counters = dlsym(RTLD_DEFAULT, "spillway_get_pool_counters");
    if (r->spill && !host_limit(&r->host_limit)) {
        fprintf(stderr, "diffgen: with spill on, set SPILLWAY_HOST_LIMIT to bytes (or unlimited): the judge needs it\n");
        return 2;
    }
    const char *log = getenv("SPILLWAY_LOG");
    if (r->spillway && r->o->reasons && (!log || strcmp(log, "debug"))) {
        fprintf(stderr, "diffgen: reasons are read from spillway's log: run with SPILLWAY_LOG=debug (or --no-reasons)\n");
        return 2;
    }
    return 0;
}

static bool check(CUresult e, const char *what)
{
    if (e != CUDA_SUCCESS)
        fprintf(stderr, "diffgen: %s: error %d\n", what, (int)e);
    return e == CUDA_SUCCESS;
}

/* The context, the granularity, the kernels; the limit as the program sees
 * it must be the one the judge uses. */
static int setup_driver(struct diff_run *r)
{
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    size_t free_b, total;
    if (!check(cuInit(0), "cuInit") || !check(cuDevicePrimaryCtxRetain(&r->ctx, 0), "primary context") ||
        !check(cuCtxSetCurrent(r->ctx), "cuCtxSetCurrent") ||
        !check(cuMemGetAllocationGranularity(&r->gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), "granularity") ||
        !check(cuMemGetInfo(&free_b, &total), "cuMemGetInfo"))
        return 2;
    if (total != r->o->limit) {
        fprintf(stderr, "diffgen: the device has %zu bytes, --limit says %" PRIu64
                        " (set FAKECUDA_MEM alone, SPILLWAY_MEM_LIMIT under spillway)\n", total, r->o->limit);
        return 2;
    }
    if ((r->o->data_apis >> DATA_LAUNCH & 1) && !check(diff_kernels_load(r), "loading the kernels"))
        return 2;
    return 0;
}

static void print_header(const struct diff_run *r)
{
    const struct diff_options *o = r->o;
    static const char *const dists[] = {"log-uniform", "uniform", "fixed"};
    fprintf(r->out, "diffgen: %s, seed %" PRIu64 ", %u threads x %u streams, %" PRIu64 " ops, limit %.1f MiB",
            !r->spillway ? "driver alone" : r->spill ? "spillway, spill on" : "spillway, spill off", o->seed,
            o->threads, o->streams, o->ops, o->limit / (double)MiB);
    if (r->spill)
        fprintf(r->out, ", host limit %.1f MiB", r->host_limit == UINT64_MAX ? -1.0 : r->host_limit / (double)MiB);
    fprintf(r->out, "\n  sizes %s %.1f KiB..%.1f KiB, live target %.2f x limit%s%s, allowance %.2f MiB "
                    "(%.2f MiB + %.4f x limit; requests of a page or more + %.4f x limit)\n",
            dists[o->dist], o->min / 1024.0, o->max / 1024.0, o->live, o->scatter ? ", scatter scenario" : "",
            o->big ? ", one huge request first" : "", r->allowance / (double)MiB,
            o->allowance_bytes / (double)MiB, o->allowance_frac, o->page_allowance_frac);
    fflush(r->out);
}

static bool run_threads(struct diff_run *r)
{
    unsigned n = r->o->threads;
    r->threads = calloc(n, sizeof *r->threads);
    if (!r->threads)
        return false;
    for (unsigned i = 0; i < n; i++) {
        r->threads[i].index = i;
        r->threads[i].run = r;
        if (pthread_create(&r->threads[i].tid, NULL, diff_thread_main, &r->threads[i]) != 0)
            return false;
    }
    for (unsigned i = 0; i < n; i++)
        pthread_join(r->threads[i].tid, NULL);
    return true;
}

int main(int argc, char **argv)
{
    static struct diff_options o;
    static struct diff_run r;
    int rc = diff_parse_options(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : 2;
    r.o = &o;
    r.out = stdout;
    if ((rc = setup_environment(&r)) != 0)
        return rc;
    if (r.spillway && o.reasons && !diff_reasons_begin(&r.reasons)) {
        fprintf(stderr, "diffgen: cannot capture stderr for spillway's log\n");
        return 2;
    }
    if ((rc = setup_driver(&r)) != 0) {
        diff_reasons_end(&r.reasons, false);
        return rc;
    }
    print_header(&r);
    double t0 = now();
    if (!run_threads(&r)) {
        fprintf(stderr, "diffgen: cannot start the threads\n");
        return 2;
    }
    r.seconds = now() - t0;
    bool failed = atomic_load(&r.failed);
    diff_reasons_end(&r.reasons, failed || getenv("DIFFGEN_KEEP_LOG"));
    if (o.trace && !diff_write_trace(&r, o.trace)) {
        fprintf(stderr, "diffgen: cannot write %s\n", o.trace);
        return 2;
    }
    rc = diff_judge(&r);
    fflush(stdout);
    return rc;
}
