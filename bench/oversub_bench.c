/* bench-oversub (issue 13, any host): what oversubscription moves. The
 * repeating training step of tests/unit/policy/stepload.c (weights,
 * activations and gradients used several times a step, optimizer state
 * once, more of it than the device holds) over the policy and the fake
 * backend, in the three ways programs allocate, at F = 1.5 and 2, with the
 * no-thrash rule and with demand paging (the rule off: what LRU alone
 * does). Counts, not times: pages moved per step after warm-up (spilled +
 * filled), as a share of the pages above the limit (issue 13's bound: at
 * most 10%), and pages the step used in place on the host.
 *
 *   oversub_bench [--limit-pages N] [--warmup N] [--steps N] [--demand-warmup N]
 *
 * --demand-warmup: demand paging's own warm-up (default: --warmup's). It
 * thrashes from its first steps, and its steps are what costs most here
 * (every move a fresh mapping): make test's smoke run gives it few.
 *
 * Prints a markdown table, then one line a script can check:
 *   bench-oversub: worst rule share = X%, worst demand-paging share = Y% */
#include "tests/unit/policy/stepload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE ((size_t)64 << 10) /* small pages: the counts scale, the host memory does not */

struct run_cfg {
    size_t limit_pages;
    int warmup, steps;
    int demand_warmup; /* 0: warmup's */
};

struct result {
    size_t live, excess;
    double moved, host_used; /* per measured step, mean */
    uint64_t moved_max, device_max;
};

static const char *mode_name(stepload_mode m)
{
    switch (m) {
    case STEPLOAD_ARENA:
        return "arena (JAX BFC: one cuMemCreate)";
    case STEPLOAD_PER_BUFFER:
        return "per buffer (stream-ordered)";
    case STEPLOAD_ALLOC:
        return "cuMemAlloc per buffer";
    }
    return "?";
}

static int run(const struct run_cfg *rc, stepload_mode mode, double factor, bool demand,
               struct result *out)
{
    stepload_cfg cfg = {.mode = mode, .factor = factor, .limit_pages = rc->limit_pages,
                        .page = PAGE, .demand_paging = demand};
    const char *why = NULL;
    stepload *s = stepload_new(&cfg, &why);
    if (!s) {
        fprintf(stderr, "oversub_bench: set-up: %s\n", why);
        return -1;
    }
    memset(out, 0, sizeof *out);
    out->live = stepload_live_pages(s);
    out->excess = stepload_excess_pages(s);
    int warmup = demand && rc->demand_warmup ? rc->demand_warmup : rc->warmup;
    for (int i = 0; i < warmup + rc->steps; i++) {
        stepload_step st;
        if (!stepload_step_run(s, &st, &why)) {
            fprintf(stderr, "oversub_bench: step %d: %s\n", i, why);
            stepload_free(s, &why);
            return -1;
        }
        if (i < warmup)
            continue;
        out->moved += (double)st.moved_pages / rc->steps;
        out->host_used += (double)st.host_used_pages / rc->steps;
        if (st.moved_pages > out->moved_max)
            out->moved_max = st.moved_pages;
    }
    out->device_max = stepload_max_device_pages(s);
    if (!stepload_free(s, &why)) {
        fprintf(stderr, "oversub_bench: teardown: %s\n", why);
        return -1;
    }
    return 0;
}

static int parse_args(int argc, char **argv, struct run_cfg *rc)
{
    for (int i = 1; i < argc; i++) {
        long v = i + 1 < argc ? strtol(argv[i + 1], NULL, 10) : 0;
        if (v <= 0) {
            fprintf(stderr, "usage: oversub_bench [--limit-pages N] [--warmup N] [--steps N] "
                            "[--demand-warmup N]\n");
            return -1;
        }
        if (!strcmp(argv[i], "--limit-pages"))
            rc->limit_pages = (size_t)v;
        else if (!strcmp(argv[i], "--warmup"))
            rc->warmup = (int)v;
        else if (!strcmp(argv[i], "--steps"))
            rc->steps = (int)v;
        else if (!strcmp(argv[i], "--demand-warmup"))
            rc->demand_warmup = (int)v;
        else {
            fprintf(stderr, "oversub_bench: unknown option %s\n", argv[i]);
            return -1;
        }
        i++;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct run_cfg rc = {.limit_pages = 256, .warmup = 60, .steps = 20};
    if (parse_args(argc, argv, &rc))
        return 2;
    static const stepload_mode modes[] = {STEPLOAD_ARENA, STEPLOAD_PER_BUFFER, STEPLOAD_ALLOC};
    static const double factors[] = {1.5, 2.0};
    double worst[2] = {0, 1e300}; /* rule: highest share; demand paging: lowest */
    printf("| program | F | live / limit (pages) | policy | moved per step (pages) | "
           "share of the excess | used on the host per step (pages) | device max |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++)
        for (size_t f = 0; f < sizeof factors / sizeof factors[0]; f++)
            for (int demand = 0; demand < 2; demand++) {
                struct result r;
                if (run(&rc, modes[m], factors[f], demand, &r))
                    return 1;
                double share = r.excess ? 100.0 * r.moved / (double)r.excess : 0;
                if (!demand && share > worst[0])
                    worst[0] = share;
                if (demand && share < worst[1])
                    worst[1] = share;
                printf("| %s | %.1f | %zu / %zu | %s | %.1f (max %llu) | %.1f%% | %.1f | %llu |\n",
                       mode_name(modes[m]), factors[f], r.live, rc.limit_pages,
                       demand ? "demand paging (LRU)" : "no-thrash rule", r.moved,
                       (unsigned long long)r.moved_max, share, r.host_used,
                       (unsigned long long)r.device_max);
            }
    printf("\nbench-oversub: worst rule share = %.1f%%, worst demand-paging share = %.1f%%\n",
           worst[0], worst[1]);
    return 0;
}
