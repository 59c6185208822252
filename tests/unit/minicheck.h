/* minicheck: the subset of Check's API the spillway suites use, for hosts
 * where Check is not installed (the GPU host). Every test runs in a forked
 * child, as with Check's default CK_FORK mode, and the runner prints the
 * same summary line Check prints. Header-only: include it from one file per
 * program (through check_compat.h). */
#ifndef SPILLWAY_MINICHECK_H
#define SPILLWAY_MINICHECK_H
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum print_output { CK_SILENT, CK_MINIMAL, CK_NORMAL, CK_VERBOSE };

typedef void (*mc_fn)(int);
typedef struct { const char *name; mc_fn fn; } TTest;
typedef void (*SFun)(void);

#define MC_MAX 256
typedef struct { const TTest *t; int signal; int exit_value; int start, end; } mc_entry;
typedef struct TCase {
    const char *name;
    mc_entry tests[MC_MAX];
    int n;
    SFun setup, teardown;
    unsigned timeout;
} TCase;
typedef struct Suite { const char *name; TCase *tc[MC_MAX]; int n; } Suite;
typedef struct SRunner { Suite *s; int run, failed, errors; } SRunner;

#define START_TEST(name)                                                 \
    static void name##_fn(int _i);                                       \
    static const TTest name##_ttest = {#name, name##_fn};                \
    static const TTest *name = &name##_ttest;                            \
    static void name##_fn(int _i __attribute__((unused)))
#define END_TEST

static inline void mc_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    _exit(1);
}

#define ck_abort_msg(...) mc_fail(__FILE__, __LINE__, __VA_ARGS__)
#define ck_assert_msg(e, ...) do { if (!(e)) mc_fail(__FILE__, __LINE__, __VA_ARGS__); } while (0)
#define ck_assert(e) ck_assert_msg(e, "Assertion '%s' failed", #e)
#define MC_CMP(T, fmt, x, op, y) do {                                        \
        T mc_x = (x);                                                        \
        T mc_y = (y);                                                        \
        if (!(mc_x op mc_y))                                                 \
            mc_fail(__FILE__, __LINE__, "Assertion '%s %s %s' failed: %s == " fmt ", %s == " fmt, \
                    #x, #op, #y, #x, mc_x, #y, mc_y);                        \
    } while (0)
#define ck_assert_int_eq(x, y) MC_CMP(intmax_t, "%jd", x, ==, y)
#define ck_assert_int_ne(x, y) MC_CMP(intmax_t, "%jd", x, !=, y)
#define ck_assert_int_lt(x, y) MC_CMP(intmax_t, "%jd", x, <, y)
#define ck_assert_int_le(x, y) MC_CMP(intmax_t, "%jd", x, <=, y)
#define ck_assert_int_gt(x, y) MC_CMP(intmax_t, "%jd", x, >, y)
#define ck_assert_int_ge(x, y) MC_CMP(intmax_t, "%jd", x, >=, y)
#define ck_assert_uint_eq(x, y) MC_CMP(uintmax_t, "%ju", x, ==, y)
#define ck_assert_uint_ne(x, y) MC_CMP(uintmax_t, "%ju", x, !=, y)
#define ck_assert_uint_lt(x, y) MC_CMP(uintmax_t, "%ju", x, <, y)
#define ck_assert_uint_le(x, y) MC_CMP(uintmax_t, "%ju", x, <=, y)
#define ck_assert_uint_gt(x, y) MC_CMP(uintmax_t, "%ju", x, >, y)
#define ck_assert_uint_ge(x, y) MC_CMP(uintmax_t, "%ju", x, >=, y)
#define ck_assert_ptr_eq(x, y) MC_CMP(const void *, "%p", x, ==, y)
#define ck_assert_ptr_ne(x, y) MC_CMP(const void *, "%p", x, !=, y)
#define ck_assert_ptr_null(x) ck_assert_ptr_eq(x, NULL)
#define ck_assert_ptr_nonnull(x) ck_assert_ptr_ne(x, NULL)
#define ck_assert_str_eq(x, y) do { const char *mc_a = (x), *mc_b = (y);     \
        if (strcmp(mc_a, mc_b) != 0)                                         \
            mc_fail(__FILE__, __LINE__, "'%s' != '%s'", mc_a, mc_b); } while (0)
#define ck_assert_mem_eq(x, y, n) ck_assert_msg(memcmp((x), (y), (n)) == 0, "memory differs")

static inline Suite *suite_create(const char *name)
{
    Suite *s = calloc(1, sizeof *s);
    s->name = name;
    return s;
}
static inline TCase *tcase_create(const char *name)
{
    TCase *tc = calloc(1, sizeof *tc);
    tc->name = name;
    tc->timeout = 4;
    return tc;
}
static inline void suite_add_tcase(Suite *s, TCase *tc) { s->tc[s->n++] = tc; }
static inline void tcase_set_timeout(TCase *tc, double t) { tc->timeout = (unsigned)(t + 0.999); }
static inline void tcase_add_checked_fixture(TCase *tc, SFun setup, SFun teardown)
{
    tc->setup = setup;
    tc->teardown = teardown;
}
static inline void mc_add(TCase *tc, const TTest *t, int sig, int exitv, int start, int end)
{
    mc_entry e = {t, sig, exitv, start, end};
    tc->tests[tc->n++] = e;
}
#define tcase_add_test(tc, t) mc_add(tc, t, 0, 0, 0, 1)
#define tcase_add_test_raise_signal(tc, t, sig) mc_add(tc, t, sig, 0, 0, 1)
#define tcase_add_exit_test(tc, t, v) mc_add(tc, t, 0, v, 0, 1)
#define tcase_add_loop_test(tc, t, s, e) mc_add(tc, t, 0, 0, s, e)

/* Check's CK_TIMEOUT_MULTIPLIER (a whole number here): a slower host
 * (a real driver's context per test) scales every test's timeout. */
static inline unsigned mc_timeout(unsigned t)
{
    const char *m = getenv("CK_TIMEOUT_MULTIPLIER");
    long k = m ? strtol(m, NULL, 10) : 1;
    return k > 1 && k < 100 ? t * (unsigned)k : t;
}

static inline SRunner *srunner_create(Suite *s)
{
    SRunner *sr = calloc(1, sizeof *sr);
    sr->s = s;
    return sr;
}
static inline void srunner_free(SRunner *sr) { free(sr); }
static inline int srunner_ntests_failed(SRunner *sr) { return sr->failed + sr->errors; }
static inline int srunner_ntests_run(SRunner *sr) { return sr->run; }

static inline void srunner_run_all(SRunner *sr, enum print_output mode)
{
    (void)mode;
    for (int c = 0; c < sr->s->n; c++) {
        TCase *tc = sr->s->tc[c];
        for (int k = 0; k < tc->n; k++) {
            mc_entry *e = &tc->tests[k];
            for (int i = e->start; i < e->end; i++) {
                fflush(NULL);
                pid_t pid = fork();
                if (pid == 0) {
                    alarm(mc_timeout(tc->timeout));
                    if (tc->setup) tc->setup();
                    e->t->fn(i);
                    if (tc->teardown) tc->teardown();
                    _exit(0);
                }
                int st = 0;
                waitpid(pid, &st, 0);
                int ok;
                if (e->signal)
                    ok = WIFSIGNALED(st) && WTERMSIG(st) == e->signal;
                else if (WIFSIGNALED(st))
                    ok = 0;
                else
                    ok = WEXITSTATUS(st) == e->exit_value;
                sr->run++;
                if (!ok) {
                    if (WIFSIGNALED(st) && !e->signal) sr->errors++; else sr->failed++;
                    fprintf(stderr, "%s:%s:%s: failed (%s %d)\n", sr->s->name, tc->name,
                            e->t->name, WIFSIGNALED(st) ? "signal" : "exit",
                            WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
                }
            }
        }
    }
    int bad = sr->failed + sr->errors;
    printf("%d%%: Checks: %d, Failures: %d, Errors: %d\n",
           sr->run ? (sr->run - bad) * 100 / sr->run : 100, sr->run, sr->failed, sr->errors);
}
#endif
