/* The judge: every refusal under spillway weighed against what the program
 * held (and, single-threaded, against the driver alone at the same
 * operation), its stated reason against the one the state calls for, and
 * spillway's promise that device pages never exceed the limit. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "shim/spillway.h"
#include "tests/fakecuda/fakecuda.h"
#include "tests/integration/diff/diffgen.h"

enum diff_verdict { V_SERVED, V_LEGIT, V_EXCUSED, V_ILLEGIT };

void diff_atomic_max(_Atomic uint64_t *v, uint64_t x)
{
    uint64_t cur = atomic_load(v);
    while (cur < x && !atomic_compare_exchange_weak(v, &cur, x))
        ;
}

/* After an allocation or free: the device bytes fakecuda lends. When they
 * grew during the call, the pool had no page to spare: what it holds then
 * beyond the live bytes is its real overhead (with SPILLWAY_PREALLOCATE=0;
 * preallocated, the first growth takes the whole limit). */
void diff_note_device(struct diff_thread *t, uint64_t before)
{
    struct diff_run *r = t->run;
    if (!fakecuda_device_bytes_used)
        return;
    uint64_t d = fakecuda_device_bytes_used(0), live = atomic_load(&r->live);
    diff_atomic_max(&r->peak_device, d);
    if (r->spillway && d > r->o->limit) {
        uint64_t none = 0;
        atomic_compare_exchange_strong(&r->over_limit, &none, d);
    }
    if (r->pool_counters && !(t->op % 16)) {
        struct spillway_pool_counters pc;
        if (r->pool_counters(0, &pc) == 0)
            diff_atomic_max(&r->peak_spilled, pc.spilled_bytes);
    }
    if (d > before) {
        atomic_fetch_add(&r->overhead_samples, 1);
        diff_atomic_max(&r->peak_overhead, d > live ? d - live : 0);
    }
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* The reason the program-visible state calls for. */
static int expected_reason(const struct diff_run *r, const struct diff_record *x)
{
    uint64_t limit = r->o->limit;
    if (x->size > limit)
        return R_TOO_LARGE;
    if (!r->spill)
        return R_LIMIT;
    if (sat_add(sat_add(x->live_upper, x->size), r->allowance) > sat_add(limit, r->host_limit))
        return R_HOST_LIMIT;
    return R_NONE;
}

static bool legitimate(const struct diff_run *r, const struct diff_record *x, int expected)
{
    if (expected == R_TOO_LARGE || expected == R_HOST_LIMIT)
        return true;
    if (!r->spill) /* a request of a page or more needs pages no other allocation touches */
        return x->live_upper + x->size + r->allowance +
                   (x->api == API_VMM || x->size >= r->gran ? r->page_allowance : 0) >
               r->o->limit;
    /* the brief accepts the address space when spillway says so */
    return x->stated == R_ADDRESS_SPACE;
}

static bool reason_right(const struct diff_run *r, int expected, int stated)
{
    if (expected == R_TOO_LARGE)
        return stated == R_TOO_LARGE || (!r->spill && stated == R_LIMIT);
    if (expected == R_NONE) /* nothing explains it: at least no false excuse */
        return stated == R_ADDRESS_SPACE || stated == R_DRIVER;
    return stated == expected;
}

/* ---- the driver-alone trace ------------------------------------------- */

struct baseline {
    struct diff_record *rec[DIFF_MAX_THREADS];
    size_t n[DIFF_MAX_THREADS], cap[DIFF_MAX_THREADS];
    unsigned threads;
};

static bool baseline_add(struct baseline *b, unsigned t, const struct diff_record *x)
{
    if (b->n[t] == b->cap[t]) {
        size_t cap = b->cap[t] ? b->cap[t] * 2 : 1024;
        struct diff_record *n = realloc(b->rec[t], cap * sizeof *n);
        if (!n)
            return false;
        b->rec[t] = n;
        b->cap[t] = cap;
    }
    b->rec[t][b->n[t]++] = *x;
    return true;
}

static bool baseline_load(struct baseline *b, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char line[256];
    bool ok = true;
    while (ok && fgets(line, sizeof line, f)) {
        unsigned t, api;
        int res;
        struct diff_record x = {0};
        if (line[0] == '#')
            continue;
        ok = sscanf(line, "%u %" SCNu64 " %u %" SCNu64 " %d", &t, &x.op, &api, &x.size, &res) == 5 &&
             t < DIFF_MAX_THREADS;
        x.api = api;
        x.result = res;
        ok = ok && baseline_add(b, t, &x);
        if (ok && t + 1 > b->threads)
            b->threads = t + 1;
    }
    fclose(f);
    return ok;
}

bool diff_write_trace(struct diff_run *r, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    const struct diff_options *o = r->o;
    fprintf(f, "# diffgen trace: seed %" PRIu64 " threads %u ops %" PRIu64 " limit %" PRIu64
               "\n# thread op api size result\n",
            o->seed, o->threads, o->ops, o->limit);
    for (unsigned t = 0; t < o->threads; t++)
        for (size_t i = 0; i < r->threads[t].nrec; i++) {
            const struct diff_record *x = &r->threads[t].rec[i];
            fprintf(f, "%u %" PRIu64 " %u %" PRIu64 " %d\n", t, x->op, x->api, x->size, x->result);
        }
    return fclose(f) == 0;
}

/* ---- judging ------------------------------------------------------------ */

struct tally {
    uint64_t served, refused, illegit, wrong, excused, driver_served_refused, plan_diffs;
    uint64_t expected[R_COUNT], stated[R_COUNT];
    int64_t shortfall; /* most a refusal came short of what explains it (allowance needed) */
    const struct diff_record *first; /* the first refusal in time */
    unsigned first_thread;
    bool any_short;
};

static void report_refusal(struct diff_run *r, unsigned t, const struct diff_record *x, const char *what)
{
    fprintf(r->out,
            "diffgen: %s: seed %" PRIu64 " t%u/op%" PRIu64 " %s of %" PRIu64 " bytes refused with "
            "%.1f..%.1f MiB live (limit %.1f MiB, allowance %.1f MiB); expected reason %s, stated %s\n",
            what, r->o->seed, t, x->op, diff_api_name((int)x->api), x->size, x->live_lower / (double)MiB,
            x->live_upper / (double)MiB, r->o->limit / (double)MiB, r->allowance / (double)MiB,
            diff_reason_name(x->expected), diff_reason_name(x->stated));
}

/* How far below the bound that would explain it the refusal came. */
static int64_t shortfall_of(const struct diff_run *r, const struct diff_record *x)
{
    uint64_t bound = r->spill ? sat_add(r->o->limit, r->host_limit) : r->o->limit;
    uint64_t need = sat_add(x->live_upper, x->size);
    return bound == UINT64_MAX ? INT64_MAX : (int64_t)bound - (int64_t)need;
}

static void judge_one(struct diff_run *r, unsigned t, struct diff_record *x, const struct diff_record *base,
                      struct tally *y)
{
    if (x->result != CUDA_ERROR_OUT_OF_MEMORY) {
        y->served++;
        return;
    }
    y->refused++;
    if (!y->first) {
        y->first = x;
        y->first_thread = t;
    }
    if (!r->spillway) /* the driver alone: counted, nothing to judge */
        return;
    x->expected = (uint8_t)expected_reason(r, x);
    x->stated = (uint8_t)(r->o->reasons ? diff_reasons_take(&r->reasons, x->size) : R_NONE);
    y->expected[x->expected]++;
    y->stated[x->stated]++;
    bool driver_served = base && base->result == CUDA_SUCCESS;
    y->driver_served_refused += driver_served;
    if (x->size <= r->o->limit) {
        int64_t s = shortfall_of(r, x);
        y->shortfall = !y->any_short || s > y->shortfall ? s : y->shortfall;
        y->any_short = true;
    }
    if (legitimate(r, x, x->expected)) {
        x->verdict = V_LEGIT;
    } else if (base && !driver_served && !r->spill && r->o->threads == 1) {
        x->verdict = V_EXCUSED; /* the driver alone refused the same operation */
        y->excused++;
    } else {
        x->verdict = V_ILLEGIT;
        if (y->illegit++ < 10)
            report_refusal(r, t, x, driver_served ? "refused what the driver served" : "unexplained refusal");
    }
    if (r->o->reasons && !reason_right(r, x->expected, x->stated) && y->wrong++ < 10)
        report_refusal(r, t, x, "wrong reason");
}

static void judge_all(struct diff_run *r, struct baseline *b, struct tally *y)
{
    /* reasons pair with refusals by size, in the order they happened */
    size_t total = 0;
    for (unsigned t = 0; t < r->o->threads; t++)
        total += r->threads[t].nrec;
    struct diff_record **order = calloc(total ? total : 1, sizeof *order);
    const struct diff_record **bases = calloc(total ? total : 1, sizeof *bases);
    unsigned *owner = calloc(total ? total : 1, sizeof *owner);
    size_t k = 0;
    for (unsigned t = 0; t < r->o->threads; t++)
        for (size_t i = 0; i < r->threads[t].nrec; i++, k++) {
            struct diff_record *x = &r->threads[t].rec[i];
            const struct diff_record *bx = b && t < b->threads && i < b->n[t] ? &b->rec[t][i] : NULL;
            if (bx && (bx->op != x->op || bx->size != x->size || bx->api != x->api))
                y->plan_diffs++, bx = NULL;
            order[x->seq < total ? x->seq : k] = x, bases[x->seq < total ? x->seq : k] = bx;
            owner[x->seq < total ? x->seq : k] = t;
        }
    for (size_t i = 0; i < total; i++)
        if (order[i])
            judge_one(r, owner[i], order[i], bases[i], y);
    free(order);
    free(bases);
    free(owner);
}

static double mib(uint64_t b)
{
    return b / (double)MiB;
}

static void print_counts(FILE *f, const char *what, const uint64_t *c)
{
    fprintf(f, "  %s:", what);
    for (int i = 0; i < R_COUNT; i++)
        if (c[i])
            fprintf(f, " %s %" PRIu64, diff_reason_name(i), c[i]);
    fprintf(f, "%s\n", c[R_NONE] + c[R_LIMIT] + c[R_HOST_LIMIT] + c[R_ADDRESS_SPACE] + c[R_TOO_LARGE] +
                               c[R_DRIVER] + c[R_UNSTATED] ? "" : " none");
}

static void sum_counts(const struct diff_run *r, struct diff_counts *c)
{
    memset(c, 0, sizeof *c);
    for (unsigned t = 0; t < r->o->threads; t++) {
        const struct diff_counts *x = &r->threads[t].c;
        for (int i = 0; i < OP_COUNT; i++)
            c->ops[i] += x->ops[i];
        for (int i = 0; i < API_COUNT; i++)
            c->allocs[i] += x->allocs[i], c->refused[i] += x->refused[i];
        c->checks += x->checks, c->bytes_verified += x->bytes_verified, c->skipped += x->skipped;
        c->frees_cross += x->frees_cross;
    }
}

/* One Markdown table row (soak.sh collects them for the README). */
static void print_row(struct diff_run *r, const struct tally *y, const struct diff_counts *c)
{
    char reasons[160] = "";
    size_t n = 0;
    for (int i = 0; i < R_COUNT && r->spillway; i++)
        if (y->stated[i] && n < sizeof reasons)
            n += (size_t)snprintf(reasons + n, sizeof reasons - n, "%s%s %" PRIu64, n ? ", " : "",
                                  diff_reason_name(i), y->stated[i]);
    fprintf(r->out, "  row: | %s | %u | %" PRIu64 " | %" PRIu64 " | %" PRIu64 "%s%s%s | %" PRIu64 " / %" PRIu64
                    " | %.1f | %.1f | %.1f | %.1f | %.1f | %s | %.1f s |\n",
            !r->spillway ? "driver alone" : r->spill ? "spill on" : "spill off", r->o->threads, r->o->ops,
            y->served, y->refused, *reasons ? " (" : "", reasons, *reasons ? ")" : "", y->illegit, y->wrong,
            mib(atomic_load(&r->peak_live)), mib(atomic_load(&r->peak_device)),
            mib(atomic_load(&r->peak_overhead)), mib(atomic_load(&r->peak_spilled)), mib(c->bytes_verified),
            atomic_load(&r->failed) ? "FAILED" : "0", r->seconds);
}

static void print_summary(struct diff_run *r, const struct tally *y)
{
    FILE *f = r->out;
    struct diff_counts c;
    sum_counts(r, &c);
    fprintf(f, "  operations:");
    for (int i = 0; i < OP_COUNT; i++)
        fprintf(f, " %s %" PRIu64, diff_op_name(i), c.ops[i]);
    fprintf(f, " (skipped on refused buffers or overlaps: %" PRIu64 ")\n", c.skipped);
    fprintf(f, "  allocations: %" PRIu64 " served, %" PRIu64 " refused; by API (served/refused):",
            y->served, y->refused);
    for (int i = 0; i < API_COUNT; i++)
        if (r->o->alloc_apis >> i & 1)
            fprintf(f, " %s %" PRIu64 "/%" PRIu64, diff_api_name(i), c.allocs[i], c.refused[i]);
    fprintf(f, "; frees by the other API %" PRIu64 "\n", c.frees_cross);
    if (y->first)
        fprintf(f, "  first refusal: t%u/op%" PRIu64 ", %s of %" PRIu64 " bytes with %.1f MiB live\n",
                y->first_thread, y->first->op, diff_api_name((int)y->first->api), y->first->size,
                mib(y->first->live_lower));
    if (r->spillway) {
        print_counts(f, "refusals by the reason the state calls for", y->expected);
        if (r->o->reasons)
            print_counts(f, "refusals by the reason spillway stated (log)", y->stated);
        fprintf(f, "  judged: %" PRIu64 " illegitimate, %" PRIu64 " with a wrong reason, %" PRIu64
                   " excused (the driver alone refused them too)",
                y->illegit, y->wrong, y->excused);
        if (r->o->baseline)
            fprintf(f, "; op by op: %" PRIu64 " refused that the driver alone served", y->driver_served_refused);
        fputc('\n', f);
        if (y->any_short && y->shortfall != INT64_MAX)
            fprintf(f, "  closest to explained: the worst refusal came %.2f MiB short of %s (allowance needed: %.2f MiB)\n",
                    mib(y->shortfall > 0 ? (uint64_t)y->shortfall : 0), r->spill ? "limit + host limit" : "the limit",
                    mib(y->shortfall > 0 ? (uint64_t)y->shortfall + 1 : 0));
    }
    uint64_t over = atomic_load(&r->over_limit);
    fprintf(f, "  memory: live peak %.1f MiB; device peak %.1f MiB (%s); overhead peak %.1f MiB "
               "(device - live when the device bytes grew, %" PRIu64 " samples)",
            mib(atomic_load(&r->peak_live)), mib(atomic_load(&r->peak_device)),
            !r->spillway ? "driver alone" : over ? "ABOVE THE LIMIT" : "within the limit",
            mib(atomic_load(&r->peak_overhead)), atomic_load(&r->overhead_samples));
    if (r->spill)
        fprintf(f, "; spilled peak %.1f MiB", mib(atomic_load(&r->peak_spilled)));
    struct spillway_pool_counters pc;
    if (r->spill && r->pool_counters && r->pool_counters(0, &pc) == 0)
        fprintf(f, "\n  moved: spill %.1f MiB in %" PRIu64 " events, fill %.1f MiB in %" PRIu64 " events",
                mib(pc.spill_bytes), pc.spill_events, mib(pc.fill_bytes), pc.fill_events);
    fprintf(f, "\n  data: %" PRIu64 " read-backs, %.1f MiB verified, %s\n", c.checks,
            mib(c.bytes_verified), atomic_load(&r->failed) ? "FAILED (above)" : "0 mismatches");
    fprintf(f, "  time: %.1f s\n", r->seconds);
    print_row(r, y, &c);
}

static int verdict(struct diff_run *r, const struct tally *y)
{
    const struct diff_options *o = r->o;
    int bad = 0;
    if (o->expect_refusals >= 0 && y->refused != (uint64_t)o->expect_refusals) {
        fprintf(r->out, "diffgen: FAIL: %" PRIu64 " refusals, expected %ld\n", y->refused, o->expect_refusals);
        bad = 1;
    }
    if (o->expect_hold && atomic_load(&r->peak_live) < o->expect_hold) {
        fprintf(r->out, "diffgen: FAIL: held at most %.1f MiB, expected %.1f MiB\n",
                mib(atomic_load(&r->peak_live)), mib(o->expect_hold));
        bad = 1;
    }
    if (y->plan_diffs) {
        fprintf(r->out, "diffgen: FAIL: %" PRIu64 " operations differ from the baseline's plan (a generator bug, or other options)\n",
                y->plan_diffs);
        bad = 1;
    }
    if (atomic_load(&r->over_limit)) {
        fprintf(r->out, "diffgen: FAIL: fakecuda lent spillway %.1f MiB of device memory, above the limit\n",
                mib(atomic_load(&r->over_limit)));
        bad = 1;
    }
    if (atomic_load(&r->failed))
        return 1;
    switch (o->judge) {
    case JUDGE_DATA: return atomic_load(&r->over_limit) != 0;
    case JUDGE_REASONS: return y->wrong != 0;
    default: return bad || y->illegit || y->wrong;
    }
}

int diff_judge(struct diff_run *r)
{
    struct baseline b = {0};
    if (r->o->baseline && !baseline_load(&b, r->o->baseline)) {
        fprintf(r->out, "diffgen: cannot read the baseline %s\n", r->o->baseline);
        return 2;
    }
    struct tally y = {0};
    judge_all(r, r->o->baseline ? &b : NULL, &y);
    print_summary(r, &y);
    for (unsigned t = 0; t < DIFF_MAX_THREADS; t++)
        free(b.rec[t]);
    int bad = verdict(r, &y);
    fprintf(r->out, "RESULT: %s\n", bad ? "FAIL" : "PASS");
    return bad;
}
