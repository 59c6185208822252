/* fakecuda: fault injection. Every entry point listed in faults.def counts
 * its calls and may be told to fail:
 *
 *   FAKECUDA_FAIL=<fn>:<n>[:<err>],...       the n-th call of fn fails
 *                 <fn>:<n>-<m>, <fn>:<n>-     calls n to m, or n and all later
 *   FAKECUDA_FAIL_RATE=<fn>:<p>[:<err>],...  each call fails with probability p;
 *                 <fn> may be * (every function)
 *   FAKECUDA_FAIL_SEED=<s>                   the rate's seed (default 0)
 *   FAKECUDA_FAIL_TRACE=1                    each injected fault prints a line
 *                                            and a backtrace on stderr
 *   FAKECUDA_CALL_LOG=<file>                 one line per counted call: "fn n
 *                                            frames...", the caller's stack as
 *                                            object+offset (the code path)
 *
 * fn is a base name (cuMemAlloc, cuMemcpyDtoDAsync); a versioned or
 * per-thread symbol name (cuMemAlloc_v2, cuMemcpyDtoDAsync_v2_ptsz) means
 * the same function. err is a CUDA_ERROR_* name or a number; without it the
 * function's default of faults.def. Calls count from 1 for each function.
 *
 * The rate is deterministic: whether the k-th call of fn fails depends only
 * on (seed, fn, k), never on how threads interleave calls of different
 * functions. A bad specification stops the process (exit status 2) naming
 * it: a typo must not turn a fault test into a clean run.
 *
 * The call log lets a fault test pick its injection points by code path
 * (the first and last call of every path) instead of trying every call.
 *
 * Tests reconfigure with fakecuda_fault_config (fakecuda.h), where n counts
 * from that call on. The real driver has none of this; the same variables
 * do nothing there. */
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fakecuda/internal.h"

static const struct {
    const char *name;
    CUresult err;
} fns[FC_FN_COUNT] = {
#define FC_FAULT_FN(name, err) {#name, err},
#include "tests/fakecuda/faults.def"
#undef FC_FAULT_FN
};

#define MAX_RULES 64
#define NO_FN FC_FN_COUNT

/* Calls lo..hi of fn (absolute call numbers) fail with err. */
struct rule {
    enum fc_fn fn;
    unsigned long long lo, hi;
    CUresult err;
};

/* Each call of fn after the base-th fails with probability p. */
struct rate {
    double p;
    CUresult err;
    unsigned long long base;
};

struct config {
    struct rule rules[MAX_RULES];
    size_t nrules;
    struct rate rates[FC_FN_COUNT];
    unsigned long long seed;
};

static _Atomic unsigned long long calls[FC_FN_COUNT];
static _Atomic unsigned long long injected[FC_FN_COUNT];
/* Off (one relaxed load per call) until something is configured. */
static _Atomic bool armed;
static bool trace;
static int call_log = -1; /* FAKECUDA_CALL_LOG, opened O_APPEND: lines stay whole */
static pthread_mutex_t fault_lock = PTHREAD_MUTEX_INITIALIZER;
static struct config cfg; /* under fault_lock */

/* The last HISTORY faults injected, the i-th (from 0) at i % HISTORY. */
#define HISTORY 64
static struct fault {
    enum fc_fn fn;
    unsigned long long call;
    CUresult err;
} history[HISTORY];
static unsigned long long ninjected; /* under fault_lock */

/* ---- names ------------------------------------------------------------------ */

static bool strip_suffix(char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    if (n <= k || strcmp(s + n - k, suffix) != 0)
        return false;
    s[n - k] = '\0';
    return true;
}

/* Drops a trailing _v<digits> (the ABI version of an exported symbol). */
static void strip_version(char *s)
{
    char *v = strrchr(s, '_');
    if (!v || v[1] != 'v' || !v[2])
        return;
    for (const char *d = v + 2; *d; d++)
        if (*d < '0' || *d > '9')
            return;
    *v = '\0';
}

/* The function named by len bytes of s, or NO_FN. */
static enum fc_fn fn_of(const char *s, size_t len)
{
    char name[96];
    if (len == 0 || len >= sizeof name)
        return NO_FN;
    memcpy(name, s, len);
    name[len] = '\0';
    if (!strip_suffix(name, "_ptsz"))
        strip_suffix(name, "_ptds");
    strip_version(name);
    for (int i = 0; i < FC_FN_COUNT; i++)
        if (strcmp(fns[i].name, name) == 0)
            return (enum fc_fn)i;
    return NO_FN;
}

/* ---- parsing ---------------------------------------------------------------- */

/* One item "a:b[:c]" of a list: its fields as (pointer, length). */
struct item {
    const char *f[3];
    size_t len[3];
    int nf;
};

static bool split_item(const char *s, size_t len, struct item *it)
{
    it->nf = 0;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] != ':')
            continue;
        if (it->nf == 3)
            return false;
        it->f[it->nf] = s + start;
        it->len[it->nf++] = i - start;
        start = i + 1;
    }
    return it->nf >= 2;
}

static bool parse_ull(const char *s, size_t len, unsigned long long *out)
{
    unsigned long long v = 0;
    if (len == 0 || len > 18)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (unsigned long long)(s[i] - '0');
    }
    *out = v;
    return true;
}

/* "n", "n-m" or "n-": a range of call numbers, n >= 1. */
static bool parse_calls(const char *s, size_t len, unsigned long long *lo, unsigned long long *hi)
{
    const char *dash = memchr(s, '-', len);
    size_t n1 = dash ? (size_t)(dash - s) : len;
    if (!parse_ull(s, n1, lo) || *lo == 0)
        return false;
    if (!dash) {
        *hi = *lo;
        return true;
    }
    size_t n2 = len - n1 - 1;
    if (n2 == 0) {
        *hi = ~0ull;
        return true;
    }
    return parse_ull(dash + 1, n2, hi) && *hi >= *lo;
}

static bool parse_prob(const char *s, size_t len, double *p)
{
    char buf[32], *end;
    if (len == 0 || len >= sizeof buf)
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    *p = strtod(buf, &end);
    return *end == '\0' && *p >= 0.0 && *p <= 1.0;
}

/* The item's error field, or fn's default. */
static bool parse_err(const struct item *it, enum fc_fn fn, CUresult *err)
{
    *err = fn == NO_FN ? CUDA_SUCCESS : fns[fn].err;
    return it->nf < 3 || fc_error_parse(it->f[2], it->len[2], err);
}

static bool add_rule(struct config *c, const struct item *it)
{
    enum fc_fn fn = fn_of(it->f[0], it->len[0]);
    struct rule r = {.fn = fn};
    if (fn == NO_FN || c->nrules == MAX_RULES || !parse_calls(it->f[1], it->len[1], &r.lo, &r.hi) ||
        !parse_err(it, fn, &r.err))
        return false;
    c->rules[c->nrules++] = r;
    return true;
}

static bool add_rate(struct config *c, const struct item *it)
{
    bool all = it->len[0] == 1 && it->f[0][0] == '*';
    enum fc_fn fn = all ? NO_FN : fn_of(it->f[0], it->len[0]);
    double p;
    CUresult err;
    if ((!all && fn == NO_FN) || !parse_prob(it->f[1], it->len[1], &p))
        return false;
    for (int i = 0; i < FC_FN_COUNT; i++) {
        if (!all && i != (int)fn)
            continue;
        if (!parse_err(it, (enum fc_fn)i, &err))
            return false;
        c->rates[i].p = p;
        c->rates[i].err = err;
    }
    return true;
}

/* Parses a comma-separated list with add; false names the bad item in why. */
static bool parse_list(const char *spec, struct config *c,
                       bool (*add)(struct config *, const struct item *), char *why, size_t wlen)
{
    for (const char *s = spec; s && *s;) {
        size_t len = strcspn(s, ",");
        struct item it;
        if (len && (!split_item(s, len, &it) || !add(c, &it))) {
            snprintf(why, wlen, "bad item '%.*s' (expected fn:n[-m][:err] or fn:p[:err])",
                     (int)len, s);
            return false;
        }
        s += len + (s[len] == ',');
    }
    return true;
}

/* ---- the decision ----------------------------------------------------------- */

static unsigned long long mix(unsigned long long x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Under fault_lock: the error call n of fn gets, CUDA_SUCCESS for none. */
static CUresult decide(enum fc_fn fn, unsigned long long n)
{
    for (size_t i = 0; i < cfg.nrules; i++)
        if (cfg.rules[i].fn == fn && n >= cfg.rules[i].lo && n <= cfg.rules[i].hi)
            return cfg.rules[i].err;
    const struct rate *r = &cfg.rates[fn];
    if (r->p <= 0.0 || n <= r->base)
        return CUDA_SUCCESS;
    unsigned long long u = mix(cfg.seed ^ mix((unsigned long long)fn + 1) ^ (n - r->base));
    return (double)(u >> 11) * 0x1.0p-53 < r->p ? r->err : CUDA_SUCCESS;
}

static void report(enum fc_fn fn, unsigned long long n, CUresult err)
{
    fprintf(stderr, "fakecuda: injected %s into %s call %llu\n", fc_error_name(err),
            fns[fn].name, n);
    void *frames[32];
    int k = backtrace(frames, 32);
    backtrace_symbols_fd(frames, k, STDERR_FILENO);
}

/* " object+0xoffset" of a return address: stable from run to run (no
 * addresses), so a site names the same code path in every process. */
static int frame_name(char *buf, size_t len, void *frame)
{
    Dl_info info;
    if (!dladdr(frame, &info) || !info.dli_fname)
        return snprintf(buf, len, " ?");
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    return snprintf(buf, len, " %s+%#lx", *base ? base : "?",
                    (unsigned long)((uintptr_t)frame - (uintptr_t)info.dli_fbase));
}

/* One line of the call log: the function, its call number and the stack
 * above the call (the caller first). */
static void log_call(enum fc_fn fn, unsigned long long n)
{
    void *frames[20];
    int k = backtrace(frames, 20);
    char line[1024];
    size_t len = (size_t)snprintf(line, sizeof line, "%s %llu", fns[fn].name, n);
    /* frames 0-2: this function, fc_fault_hit and the entry point */
    for (int i = 3; i < k && len < sizeof line - 1; i++)
        len += (size_t)frame_name(line + len, sizeof line - len, frames[i]);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    if (write(call_log, line, len) != (ssize_t)len)
        call_log = -1; /* a log that cannot be written is no log: stop */
}

CUresult fc_fault_hit(enum fc_fn fn)
{
    unsigned long long n = atomic_fetch_add_explicit(&calls[fn], 1, memory_order_relaxed) + 1;
    if (call_log >= 0)
        log_call(fn, n);
    if (!atomic_load_explicit(&armed, memory_order_acquire))
        return CUDA_SUCCESS;
    pthread_mutex_lock(&fault_lock);
    CUresult err = decide(fn, n);
    if (err != CUDA_SUCCESS) {
        atomic_fetch_add_explicit(&injected[fn], 1, memory_order_relaxed);
        history[ninjected++ % HISTORY] = (struct fault){fn, n, err};
    }
    pthread_mutex_unlock(&fault_lock);
    if (err != CUDA_SUCCESS && trace)
        report(fn, n, err);
    return err;
}

/* ---- configuration ---------------------------------------------------------- */

/* Replaces the configuration; call numbers count from now. */
static int configure(const char *fail, const char *rate, unsigned long long seed, char *why,
                     size_t wlen)
{
    static struct config next; /* large: kept off the stack, guarded by config_lock */
    static pthread_mutex_t config_lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&config_lock);
    memset(&next, 0, sizeof next);
    next.seed = seed;
    bool ok = parse_list(fail, &next, add_rule, why, wlen) &&
              parse_list(rate, &next, add_rate, why, wlen);
    if (ok) {
        pthread_mutex_lock(&fault_lock);
        bool any = next.nrules > 0;
        for (size_t i = 0; i < next.nrules; i++) {
            unsigned long long base = atomic_load(&calls[next.rules[i].fn]);
            next.rules[i].lo += base;
            next.rules[i].hi = next.rules[i].hi > ~0ull - base ? ~0ull : next.rules[i].hi + base;
        }
        for (int i = 0; i < FC_FN_COUNT; i++) {
            next.rates[i].base = atomic_load(&calls[i]);
            any |= next.rates[i].p > 0.0;
        }
        cfg = next;
        atomic_store_explicit(&armed, any, memory_order_release);
        pthread_mutex_unlock(&fault_lock);
    }
    pthread_mutex_unlock(&config_lock);
    return ok ? 0 : -1;
}

static void die(const char *var, const char *why)
{
    fprintf(stderr, "fakecuda: %s: %s\n", var, why);
    exit(2);
}

static void open_call_log(const char *path)
{
    if (!path || !*path)
        return;
    call_log = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (call_log < 0)
        die("FAKECUDA_CALL_LOG", "cannot open the file");
    /* The first backtrace loads the unwinder: here, not inside a call a
     * preloaded library makes while it holds its locks. */
    void *frame;
    backtrace(&frame, 1);
}

/* At load, before any call: the variables above. */
__attribute__((constructor)) static void fault_environment(void)
{
    const char *fail = getenv("FAKECUDA_FAIL"), *rate = getenv("FAKECUDA_FAIL_RATE");
    const char *seed_s = getenv("FAKECUDA_FAIL_SEED"), *tr = getenv("FAKECUDA_FAIL_TRACE");
    trace = tr && *tr && strcmp(tr, "0") != 0;
    open_call_log(getenv("FAKECUDA_CALL_LOG"));
    if (!fail && !rate)
        return;
    unsigned long long seed = 0;
    if (seed_s && !parse_ull(seed_s, strlen(seed_s), &seed))
        die("FAKECUDA_FAIL_SEED", "expected a decimal number");
    char why[200];
    if (configure(fail, rate, seed, why, sizeof why) != 0)
        die(rate && !fail ? "FAKECUDA_FAIL_RATE" : "FAKECUDA_FAIL(_RATE)", why);
}

/* ---- fakecuda.h ------------------------------------------------------------- */

FC_EXPORT int fakecuda_fault_config(const char *fail, const char *rate, unsigned long long seed)
{
    char why[200];
    return configure(fail, rate, seed, why, sizeof why);
}

FC_EXPORT long long fakecuda_calls(const char *fn)
{
    enum fc_fn f = fn ? fn_of(fn, strlen(fn)) : NO_FN;
    return f == NO_FN ? -1 : (long long)atomic_load(&calls[f]);
}

FC_EXPORT long long fakecuda_faults(const char *fn)
{
    if (!fn) {
        unsigned long long n = 0;
        for (int i = 0; i < FC_FN_COUNT; i++)
            n += atomic_load(&injected[i]);
        return (long long)n;
    }
    enum fc_fn f = fn_of(fn, strlen(fn));
    return f == NO_FN ? -1 : (long long)atomic_load(&injected[f]);
}

FC_EXPORT const char *fakecuda_fault_fn(unsigned i)
{
    return i < FC_FN_COUNT ? fns[i].name : NULL;
}

FC_EXPORT int fakecuda_fault_nth(unsigned long long i, const char **fn, unsigned long long *call)
{
    pthread_mutex_lock(&fault_lock);
    struct fault f = {NO_FN, 0, CUDA_SUCCESS};
    if (i < ninjected && i + HISTORY >= ninjected)
        f = history[i % HISTORY];
    pthread_mutex_unlock(&fault_lock);
    if (fn)
        *fn = f.fn == NO_FN ? NULL : fns[f.fn].name;
    if (call)
        *call = f.call;
    return (int)f.err;
}

FC_EXPORT int fakecuda_fault_last(const char **fn, unsigned long long *call)
{
    pthread_mutex_lock(&fault_lock);
    unsigned long long n = ninjected;
    pthread_mutex_unlock(&fault_lock);
    if (n == 0) {
        if (fn)
            *fn = NULL;
        if (call)
            *call = 0;
        return 0;
    }
    return fakecuda_fault_nth(n - 1, fn, call);
}
