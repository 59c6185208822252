/* diffgen's command line. Every option has a default that makes a quick,
 * meaningful run; the scripts spell out what each test depends on. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/diff/diffgen.h"

static const char *const api_names[API_COUNT] = {"alloc", "pitch", "async", "pool", "vmm"};
static const char *const data_names[DATA_COUNT] = {"copy", "memset", "launch", "sync"};
static const char *const op_names[OP_COUNT] = {
    "alloc", "free", "htod", "dtoh", "dtod", "memset", "fill", "xor", "stream-sync", "device-sync", "info",
};

const char *diff_api_name(int api)
{
    return api >= 0 && api < API_COUNT ? api_names[api] : "?";
}

const char *diff_op_name(int op)
{
    return op >= 0 && op < OP_COUNT ? op_names[op] : "?";
}

static const char usage[] =
    "usage: diffgen [options]  (README.md in tests/integration/diff)\n"
    "  --seed N              RNG seed (each thread: seed and its index)        [1]\n"
    "  --threads N           threads                                            [1]\n"
    "  --ops N               operations in all (K/M suffixes allowed)           [10000]\n"
    "  --limit BYTES         device memory: FAKECUDA_MEM alone, SPILLWAY_MEM_LIMIT under spillway\n"
    "  --dist log|uniform|fixed  allocation sizes                               [log]\n"
    "  --min BYTES --max BYTES   their bounds (fixed: --min)                    [4K, 8M]\n"
    "  --live F              target live bytes, fraction of the limit           [0.5]\n"
    "  --alloc-apis LIST     alloc,pitch,async,pool,vmm or all                  [all]\n"
    "  --data-apis LIST      copy,memset,launch,sync, all or none               [all]\n"
    "  --streams N           created streams per thread (0..8)                  [2]\n"
    "  --mem-frac F          share of operations that allocate or free          [0.35]\n"
    "  --cross-free F        share of frees by the non-matching API             [0.1]\n"
    "  --init F              share of allocations written whole at once         [0.75]\n"
    "  --op-max BYTES        longest copy, memset or launch                     [256K]\n"
    "  --verify-window BYTES bytes read back per verification, 0: everything    [64K]\n"
    "  --allowance BYTES     refusals allowed within this of the limit ...      [4M]\n"
    "  --allowance-frac F    ... plus this fraction of the limit                [0.0625]\n"
    "  --page-allowance-frac F  ... plus, for requests of a page or more (and\n"
    "                        VMM), this fraction of the limit: pages partly\n"
    "                        held by other allocations cannot serve them      [0.375]\n"
    "  --trace FILE          write the allocation outcomes (the baseline)\n"
    "  --baseline FILE       the driver-alone run's trace: compare op by op\n"
    "  --expect-refusals N   fail unless exactly N allocations are refused\n"
    "  --expect-hold BYTES   fail unless live bytes reach this\n"
    "  --scatter             issue 11 (3): 2 MiB blocks to 3x, every other freed, 4 MiB to --live\n"
    "  --big BYTES           first, one request of BYTES by every enabled allocation API\n"
    "  --no-reasons          do not judge refusal reasons\n"
    "  --stop-at-refusal     fill scenarios: stop at the first refusal\n"
    "  --judge all|reasons|data  what fails the run: everything; only wrong reasons\n"
    "                        (and data); only data, errors and the device above the limit\n"
    "  --classify LINE       print the reason a spillway log line states, and exit\n"
    "  --corrupt-at N        self-test: corrupt a byte behind the shadow at op N\n";

/* "64M", "4K", "1T", "1073741824" (powers of 1024). */
static bool parse_size(const char *s, uint64_t *out)
{
    char *end;
    double v = strtod(s, &end);
    uint64_t mul = 1;
    switch (*end) {
    case 'k': case 'K': mul = 1ULL << 10; end++; break;
    case 'm': case 'M': mul = 1ULL << 20; end++; break;
    case 'g': case 'G': mul = 1ULL << 30; end++; break;
    case 't': case 'T': mul = 1ULL << 40; end++; break;
    default: break;
    }
    if (end == s || *end || v < 0)
        return false;
    *out = (uint64_t)(v * (double)mul);
    return true;
}

static bool parse_list(const char *s, const char *const *names, int n, unsigned *out)
{
    if (strcmp(s, "all") == 0) {
        *out = (1u << n) - 1;
        return true;
    }
    *out = 0;
    if (strcmp(s, "none") == 0)
        return true;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int i = 0;
        while (i < n && strcmp(tok, names[i]) != 0)
            i++;
        if (i == n)
            return false;
        *out |= 1u << i;
    }
    return true;
}

static void defaults(struct diff_options *o)
{
    *o = (struct diff_options){
        .seed = 1, .threads = 1, .ops = 10000, .dist = DIST_LOG, .min = 4096, .max = 8 * MiB,
        .live = 0.5, .alloc_apis = (1u << API_COUNT) - 1, .data_apis = (1u << DATA_COUNT) - 1,
        .streams = 2, .mem_frac = 0.35, .cross_free = 0.1, .init = 0.75, .op_max = 256 << 10,
        .verify_window = 64 << 10, .allowance_bytes = 4 * MiB, .allowance_frac = 0.0625,
        .page_allowance_frac = 0.375,
        .expect_refusals = -1, .reasons = true,
    };
}

enum { O_SEED = 256, O_THREADS, O_OPS, O_LIMIT, O_DIST, O_MIN, O_MAX, O_LIVE, O_AAPI, O_DAPI,
       O_STREAMS, O_MEMF, O_CROSS, O_INIT, O_OPMAX, O_VWIN, O_ALLOW, O_ALLOWF, O_TRACE, O_BASE,
       O_EXPR, O_EXPH, O_SCATTER, O_BIG, O_NOREASONS, O_CORRUPT, O_STOP, O_JUDGE, O_CLASSIFY,
       O_PALLOWF };

static const struct option longopts[] = {
    {"seed", 1, 0, O_SEED}, {"threads", 1, 0, O_THREADS}, {"ops", 1, 0, O_OPS},
    {"limit", 1, 0, O_LIMIT}, {"dist", 1, 0, O_DIST}, {"min", 1, 0, O_MIN}, {"max", 1, 0, O_MAX},
    {"live", 1, 0, O_LIVE}, {"alloc-apis", 1, 0, O_AAPI}, {"data-apis", 1, 0, O_DAPI},
    {"streams", 1, 0, O_STREAMS}, {"mem-frac", 1, 0, O_MEMF}, {"cross-free", 1, 0, O_CROSS},
    {"init", 1, 0, O_INIT}, {"op-max", 1, 0, O_OPMAX}, {"verify-window", 1, 0, O_VWIN},
    {"allowance", 1, 0, O_ALLOW}, {"allowance-frac", 1, 0, O_ALLOWF}, {"trace", 1, 0, O_TRACE},
    {"page-allowance-frac", 1, 0, O_PALLOWF},
    {"baseline", 1, 0, O_BASE}, {"expect-refusals", 1, 0, O_EXPR}, {"expect-hold", 1, 0, O_EXPH},
    {"scatter", 0, 0, O_SCATTER}, {"big", 1, 0, O_BIG}, {"no-reasons", 0, 0, O_NOREASONS},
    {"corrupt-at", 1, 0, O_CORRUPT}, {"stop-at-refusal", 0, 0, O_STOP}, {"judge", 1, 0, O_JUDGE},
    {"classify", 1, 0, O_CLASSIFY}, {"help", 0, 0, 'h'},
    {0, 0, 0, 0},
};

static bool parse_dist(const char *s, enum diff_dist *d)
{
    if (strcmp(s, "log") == 0)
        *d = DIST_LOG;
    else if (strcmp(s, "uniform") == 0)
        *d = DIST_UNIFORM;
    else if (strcmp(s, "fixed") == 0)
        *d = DIST_FIXED;
    else
        return false;
    return true;
}

static bool parse_judge(const char *s, enum diff_judge *j)
{
    static const char *const names[] = {"all", "reasons", "data"};
    for (int i = 0; i < 3; i++)
        if (strcmp(s, names[i]) == 0) {
            *j = (enum diff_judge)i;
            return true;
        }
    return false;
}

/* --classify: what the judge would read from one of spillway's lines. */
static int classify(const char *line)
{
    uint64_t bytes;
    int r = diff_reason_of_line(line, &bytes);
    if (r < 0)
        printf("not a refusal\n");
    else
        printf("%s %llu\n", diff_reason_name(r), (unsigned long long)bytes);
    return 1;
}

static bool parse_fraction(const char *s, double *out, double max)
{
    char *end;
    *out = strtod(s, &end);
    return end != s && !*end && *out >= 0 && *out <= max;
}

static bool apply(struct diff_options *o, int c, const char *a)
{
    uint64_t v = 0;
    switch (c) {
    case O_SEED: return parse_size(a, &o->seed);
    case O_THREADS: return parse_size(a, &v) && v >= 1 && v <= DIFF_MAX_THREADS && ((o->threads = (unsigned)v), true);
    case O_OPS: return parse_size(a, &o->ops);
    case O_LIMIT: return parse_size(a, &o->limit) && o->limit > 0;
    case O_DIST: return parse_dist(a, &o->dist);
    case O_MIN: return parse_size(a, &o->min) && o->min > 0;
    case O_MAX: return parse_size(a, &o->max) && o->max > 0;
    case O_LIVE: return parse_fraction(a, &o->live, 1000);
    case O_AAPI: return parse_list(a, api_names, API_COUNT, &o->alloc_apis) && o->alloc_apis;
    case O_DAPI: return parse_list(a, data_names, DATA_COUNT, &o->data_apis);
    case O_STREAMS: return parse_size(a, &v) && v <= DIFF_MAX_STREAMS && ((o->streams = (unsigned)v), true);
    case O_MEMF: return parse_fraction(a, &o->mem_frac, 1) && o->mem_frac > 0;
    case O_CROSS: return parse_fraction(a, &o->cross_free, 1);
    case O_INIT: return parse_fraction(a, &o->init, 1);
    case O_OPMAX: return parse_size(a, &o->op_max) && o->op_max >= 16;
    case O_VWIN: return parse_size(a, &o->verify_window);
    case O_ALLOW: return parse_size(a, &o->allowance_bytes);
    case O_ALLOWF: return parse_fraction(a, &o->allowance_frac, 1);
    case O_PALLOWF: return parse_fraction(a, &o->page_allowance_frac, 1);
    case O_TRACE: o->trace = a; return true;
    case O_BASE: o->baseline = a; return true;
    case O_EXPR: return parse_size(a, &v) && ((o->expect_refusals = (long)v), true);
    case O_EXPH: return parse_size(a, &o->expect_hold);
    case O_SCATTER: o->scatter = true; return true;
    case O_BIG: return parse_size(a, &o->big) && o->big > 0;
    case O_NOREASONS: o->reasons = false; return true;
    case O_CORRUPT: return parse_size(a, &o->corrupt_at) && o->corrupt_at > 0;
    case O_STOP: o->stop_at_refusal = true; return true;
    case O_JUDGE: return parse_judge(a, &o->judge);
    default: return false;
    }
}

/* 0: go on; 1: --help printed; 2: bad usage (printed). */
int diff_parse_options(int argc, char **argv, struct diff_options *o)
{
    defaults(o);
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (c == 'h') {
            fputs(usage, stdout);
            return 1;
        }
        if (c == O_CLASSIFY)
            return classify(optarg);
        if (!apply(o, c, optarg)) {
            fprintf(stderr, "diffgen: bad option or value (%s)\n%s", optarg ? optarg : "?", usage);
            return 2;
        }
    }
    if (optind < argc || !o->limit || o->min > o->max || o->ops < o->threads) {
        fprintf(stderr, "diffgen: --limit is required, --min <= --max, --ops >= --threads\n%s", usage);
        return 2;
    }
    return 0;
}
