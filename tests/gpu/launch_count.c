/* Runtime launches reach the gate (issue 10): a program that makes N kernel
 * launches and G graph launches must find exactly as many counted in its
 * own spillway stats segment (launches, graph_launches). A launch that
 * reaches the driver past spillway's hooks (an export table, a lookup the
 * shim never sees) is a launch the work gate cannot hold back while spill
 * remaps a page under it; here it shows as a count short of the program's.
 *
 *   launch_count [--launches 1000] [--graph-launches 10] [--words 65536]
 *
 * Run under LD_PRELOAD=libspillway.so (stats on, the default). After the
 * buffer is set up (cudaMalloc / cuMemAlloc: the pool) it reads both
 * counters, then makes the N launches, each adding 1 to every word: most on
 * the legacy default stream, every 10th on a created blocking stream,
 * every 20th on the per-thread default stream, every 100th through the
 * explicit call (cudaLaunchKernel; the driver twin: cuLaunchKernelEx).
 * Then it captures one launch on the created stream into a graph,
 * instantiates it and launches the graph G times, synchronizes, reads the
 * counters again and the buffer back: every word must hold N + G.
 *
 * One line:
 *   RESULT launches=<N + 1> counted=<delta launches> graph_launches=<G>
 *          graph_counted=<delta graph_launches> data_ok=0|1 err=<name>
 *          api=runtime|driver words=.. paths=legacy:..,stream:..,...
 * and exit 0 only when counted == launches, graph_counted == G and the
 * data are right. Without a stats segment (not under spillway, or
 * SPILLWAY_STATS=0) the launches still run and are checked, counted reads
 * n/a, err=no_stats_segment, exit 1.
 *
 * SWGPU_LAUNCH_BYPASS=1 (the driver twin only: the self-test's negative
 * control) makes the first launch through the driver's own cuLaunchKernel,
 * found past spillway: the row must then FAIL with counted = launches - 1. */
#include "tests/gpu/launch_count.h"

#include "bench/selfstats.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const path_names[LC_NPATHS] = {
    [LC_LEGACY] = "legacy",     [LC_STREAM] = "stream", [LC_PER_THREAD] = "per_thread",
    [LC_EXPLICIT] = "explicit", [LC_BYPASS] = "bypass",
};

/* The i-th launch's way to the driver. */
static enum lc_path path_of(long i, int bypass)
{
    if (bypass && i == 0)
        return LC_BYPASS;
    if (i % 100 == 50)
        return LC_EXPLICIT;
    if (i % 20 == 4)
        return LC_PER_THREAD;
    if (i % 10 == 9)
        return LC_STREAM;
    return LC_LEGACY;
}

/* This process's launches and graph_launches, summed over its devices (each
 * launch counts on its context's device); -1 without a segment. */
static int read_counts(uint64_t *launches, uint64_t *graphs)
{
    unsigned dev = 0;
    *launches = *graphs = 0;
    for (;; dev++) {
        uint64_t l, g;
        if (selfstats_get("launches", dev, &l) != 0 || selfstats_get("graph_launches", dev, &g) != 0)
            break;
        *launches += l;
        *graphs += g;
    }
    return dev ? 0 : -1;
}

struct opts {
    long launches, graphs, words;
};

static int parse_args(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.launches = 1000, .graphs = 10, .words = 65536};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long *dst = !strcmp(a, "--launches")         ? &o->launches
                    : !strcmp(a, "--graph-launches") ? &o->graphs
                    : !strcmp(a, "--words")          ? &o->words
                                                     : NULL;
        char *end;
        if (!dst || !v || (*dst = strtol(v, &end, 10)) < 0 || *end)
            return -1;
        i++;
    }
    /* Words hold N + G: keep them below 2^32. */
    return o->words > 0 && o->launches + o->graphs < (1L << 31) ? 0 : -1;
}

int main(int argc, char **argv)
{
    struct opts o;
    if (parse_args(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: launch_count [--launches N] [--graph-launches G] [--words W]\n");
        return 2;
    }
    const char *b = getenv("SWGPU_LAUNCH_BYPASS");
    int bypass = b && !strcmp(b, "1") && o.launches > 0;
    long made[LC_NPATHS] = {0};
    uint64_t l0 = 0, g0 = 0, l1 = 0, g1 = 0;
    int err = lc_setup((size_t)o.words);
    int have_stats = err == 0 && read_counts(&l0, &g0) == 0;
    for (long i = 0; i < o.launches && err == 0; i++) {
        enum lc_path p = path_of(i, bypass);
        if ((err = lc_launch(p)) == 0)
            made[p]++;
    }
    /* The capture is one more accepted launch call (the driver records the
     * kernel into the graph instead of running it; spillway counts every
     * launch the driver accepts): the expected count is N + 1. The graph's
     * kernel runs at each of its G launches, hence N + G in every word. */
    if (err == 0)
        err = lc_sync(); /* nothing of the legacy stream pending while the stream captures */
    if (err == 0)
        err = lc_graph_capture();
    for (long i = 0; i < o.graphs && err == 0; i++)
        err = lc_graph_launch();
    if (err == 0)
        err = lc_sync();
    have_stats = have_stats && read_counts(&l1, &g1) == 0;

    int data_ok = 0;
    unsigned *host = malloc((size_t)o.words * sizeof *host);
    if (err == 0 && host && (err = lc_read(host, (size_t)o.words)) == 0) {
        unsigned want = (unsigned)(o.launches + o.graphs);
        data_ok = 1;
        for (long w = 0; w < o.words && data_ok; w++)
            if (host[w] != want) {
                fprintf(stderr, "launch_count: word %ld is %u, not %u\n", w, host[w], want);
                data_ok = 0;
            }
    }
    free(host);

    long expected = o.launches + 1;
    char counted[32] = "n/a", graph_counted[32] = "n/a";
    if (have_stats) {
        snprintf(counted, sizeof counted, "%" PRIu64, l1 - l0);
        snprintf(graph_counted, sizeof graph_counted, "%" PRIu64, g1 - g0);
    }
    char paths[160];
    size_t n = 0;
    for (int p = 0; p < LC_NPATHS; p++)
        if (made[p] || p != LC_BYPASS)
            n += (size_t)snprintf(paths + n, sizeof paths - n, "%s%s:%ld", n ? "," : "", path_names[p],
                                  made[p]);
    const char *err_name = err ? lc_error_name(err) : have_stats ? lc_error_name(0) : "no_stats_segment";
    printf("RESULT launches=%ld counted=%s graph_launches=%ld graph_counted=%s data_ok=%d err=%s api=%s "
           "words=%ld paths=%s\n",
           expected, counted, o.graphs, graph_counted, data_ok, err_name, lc_api(), o.words, paths);
    fflush(stdout);
    int pass = err == 0 && have_stats && data_ok && l1 - l0 == (uint64_t)expected &&
               g1 - g0 == (uint64_t)o.graphs;
    return pass ? 0 : 1;
}
