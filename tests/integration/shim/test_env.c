/* spillway's configuration end to end: the probe program (probe.c) run
 * with and without spillway under different environments. Limits by
 * fraction, bytes and device; invalid values stop the program before main;
 * SPILLWAY_DISABLE; the driver's own error codes; logging. */
#include "tests/unit/check_compat.h"

#include "shim/options.h"
#include "tests/unit/shim/bad_options.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB (1ull << 20)
#define DEVICE_MEM (256 * MiB) /* FAKECUDA_MEM of every run */

extern char **environ;

struct run {
    int status; /* exit status, or 128 + signal */
    char out[16384], err[16384];
};

/* Each test's stats directory (mkdtemp), so that no run leaves anything in
 * /dev/shm and the suite can look at what a run left. */
static char stats_dir[] = "/tmp/spillway-env-XXXXXX";

static void make_stats_dir(void)
{
    ck_assert_ptr_nonnull(mkdtemp(stats_dir));
}

static int stats_dir_entries(void)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "ls -A %s | wc -l", stats_dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (p && fscanf(p, "%d", &n) != 1)
        n = -1;
    if (p)
        pclose(p);
    return n;
}

static void remove_stats_dir(void)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", stats_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", stats_dir);
}

static const char *build_dir(void)
{
    const char *b = getenv("SPW_TEST_BUILD");
    return b && *b ? b : "build";
}

/* The child's environment: this one without spillway's, fakecuda's or the
 * preload variables, then fakecuda's defaults, then env ("NAME=value"). */
static void child_env(int preload, const char *const *env)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **names = calloc(n + 1, sizeof *names);
    for (size_t i = 0; i < n; i++)
        names[i] = strndup(environ[i], strcspn(environ[i], "="));
    for (size_t i = 0; i < n; i++)
        if (strncmp(names[i], "SPILLWAY_", 9) == 0 ||
            strncmp(names[i], "FAKECUDA_", 9) == 0 || strcmp(names[i], "LD_PRELOAD") == 0)
            unsetenv(names[i]);
    setenv("FAKECUDA_MEM", "256M", 1);
    setenv("FAKECUDA_DEVICES", "1", 1);
    setenv("SPILLWAY_STATS_DIR", stats_dir, 1);
    /* These cases check the byte cap, which spill lifts (spill.sh). */
    setenv("SPILLWAY_SPILL", "0", 1);
    for (; env && *env; env++)
        putenv(strdup(*env));
    if (preload) {
        char lib[4096];
        snprintf(lib, sizeof lib, "%s/libspillway.so", build_dir());
        setenv("LD_PRELOAD", lib, 1);
    }
}

static void drain(int fd, char *buf, size_t cap, size_t *len, int *open_)
{
    ssize_t k = read(fd, buf + *len, cap - 1 - *len);
    if (k > 0)
        *len += (size_t)k;
    else if (k == 0 || errno != EINTR)
        *open_ = 0;
    if (*len == cap - 1) /* full: drop the rest */
        *len = cap - 1;
    buf[*len] = '\0';
}

/* Runs the probe with args; preload puts spillway in front of it. */
static void run_probe(struct run *r, int preload, const char *const *env, const char *const *args)
{
    int out[2], err[2];
    ck_assert_int_eq(pipe(out), 0);
    ck_assert_int_eq(pipe(err), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(out[1], 1);
        dup2(err[1], 2);
        close(out[0]);
        close(err[0]);
        child_env(preload, env);
        char path[4096];
        snprintf(path, sizeof path, "%s/tests/integration/shim_probe", build_dir());
        char *argv[8] = {path};
        for (int i = 0; args[i] && i < 6; i++)
            argv[i + 1] = (char *)args[i];
        execv(path, argv);
        _exit(127);
    }
    close(out[1]);
    close(err[1]);
    size_t lo = 0, le = 0;
    int oo = 1, eo = 1;
    r->out[0] = r->err[0] = '\0';
    while (oo || eo) {
        struct pollfd p[2] = {{oo ? out[0] : -1, POLLIN, 0}, {eo ? err[0] : -1, POLLIN, 0}};
        if (poll(p, 2, -1) < 0)
            continue;
        if (p[0].revents)
            drain(out[0], r->out, sizeof r->out, &lo, &oo);
        if (p[1].revents)
            drain(err[0], r->err, sizeof r->err, &le, &eo);
    }
    close(out[0]);
    close(err[0]);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define ENV(...) ((const char *const[]){__VA_ARGS__, NULL})

/* Reads "dev D total T free F devtotal X" of device dev. */
static void device_info(const struct run *r, int dev, uint64_t *total, uint64_t *free_,
                        uint64_t *devtotal)
{
    char key[32];
    snprintf(key, sizeof key, "dev %d total ", dev);
    const char *line = strstr(r->out, key);
    ck_assert_msg(line != NULL, "no device %d in: %s / %s", dev, r->out, r->err);
    unsigned long long t, f, d;
    int dummy;
    ck_assert_int_eq(sscanf(line, "dev %d total %llu free %llu devtotal %llu", &dummy, &t, &f, &d),
                     4);
    *total = t;
    *free_ = f;
    *devtotal = d;
}

/* Info with env; checks that every device in limits reports that limit. */
static void expect_limits(const char *const *env, const uint64_t *limits, int ndev)
{
    struct run r;
    run_probe(&r, 1, env, ARGS("info"));
    ck_assert_msg(r.status == 0, "status %d: %s %s", r.status, r.out, r.err);
    for (int d = 0; d < ndev; d++) {
        uint64_t t, f, dt;
        device_info(&r, d, &t, &f, &dt);
        ck_assert_msg(t == limits[d] && dt == limits[d] && f <= limits[d],
                      "device %d: total %llu devtotal %llu free %llu, expected limit %llu", d,
                      (unsigned long long)t, (unsigned long long)dt, (unsigned long long)f,
                      (unsigned long long)limits[d]);
    }
}

/* Allocating chunk after chunk on dev stops at the limit with OOM. Each
 * chunk takes whole pool pages (2 MiB under fakecuda): the fill stops when
 * the next chunk's pages no longer fit. */
static void expect_fill_stops(const char *const *env, int dev, uint64_t limit, uint64_t chunk)
{
    char d[8], c[32];
    snprintf(d, sizeof d, "%d", dev);
    snprintf(c, sizeof c, "%llu", (unsigned long long)chunk);
    struct run r;
    run_probe(&r, 1, env, ARGS("fill", d, c));
    unsigned long long bytes;
    int dd, err;
    const char *line = strstr(r.out, "fill ");
    ck_assert_msg(line && sscanf(line, "fill %d bytes %llu err %d", &dd, &bytes, &err) == 3, "%s %s",
                  r.out, r.err);
    ck_assert_int_eq(err, 2 /* CUDA_ERROR_OUT_OF_MEMORY */);
    uint64_t page = 2 * 1048576, pages = (chunk + page - 1) / page * page;
    ck_assert_msg(bytes <= limit && bytes / chunk * pages + pages > limit,
                  "device %d filled %llu of %llu", dev, bytes, (unsigned long long)limit);
    char key[64];
    snprintf(key, sizeof key, "after dev %d total ", dev);
    const char *after = strstr(r.out, key);
    unsigned long long t, f;
    ck_assert_msg(after && sscanf(after + strlen(key), "%llu free %llu", &t, &f) == 2, "%s", r.out);
    ck_assert_uint_eq(t, limit);
    /* Free is what the pool can hand out, in whole pages: at most what the
     * chunks did not take, and less than a chunk, which was refused (a
     * whole number of pages at least a chunk holds one). */
    ck_assert_msg(f % page == 0 && f <= limit - bytes && f < chunk,
                  "device %d: %llu free after %llu of %llu in chunks of %llu", dev, f, bytes,
                  (unsigned long long)limit, (unsigned long long)chunk);
}

/* Filling one device leaves the other's count alone. */
static void expect_untouched(const char *const *env, int filled, int other, uint64_t other_limit)
{
    char d[8];
    snprintf(d, sizeof d, "%d", filled);
    struct run r;
    run_probe(&r, 1, env, ARGS("fill", d, "4194304"));
    char key[64];
    snprintf(key, sizeof key, "after dev %d total ", other);
    const char *after = strstr(r.out, key);
    unsigned long long t, f;
    ck_assert_msg(after && sscanf(after + strlen(key), "%llu free %llu", &t, &f) == 2, "%s", r.out);
    ck_assert_uint_eq(t, other_limit);
    ck_assert_uint_eq(f, other_limit);
}

START_TEST(default_fraction)
{
    uint64_t limit = DEVICE_MEM / 4 * 3;
    expect_limits(NULL, &limit, 1);
    expect_fill_stops(NULL, 0, limit, 7 * MiB);
}
END_TEST

START_TEST(fraction)
{
    const char *const *env = ENV("SPILLWAY_MEM_FRACTION=0.5");
    uint64_t limit = DEVICE_MEM / 2;
    expect_limits(env, &limit, 1);
    expect_fill_stops(env, 0, limit, 5 * MiB);
}
END_TEST

START_TEST(absolute)
{
    const char *const *env = ENV("SPILLWAY_MEM_LIMIT=100M", "SPILLWAY_MEM_FRACTION=0.1");
    uint64_t limit = 100 * MiB; /* the byte limit wins over the fraction */
    expect_limits(env, &limit, 1);
    expect_fill_stops(env, 0, limit, 3 * MiB);
}
END_TEST

START_TEST(per_device)
{
    const char *const *env = ENV("FAKECUDA_DEVICES=2", "SPILLWAY_MEM_LIMIT=0=64M,1=32M");
    uint64_t limits[2] = {64 * MiB, 32 * MiB};
    expect_limits(env, limits, 2);
    expect_fill_stops(env, 0, limits[0], 3 * MiB);
    expect_fill_stops(env, 1, limits[1], 3 * MiB);
    expect_untouched(env, 0, 1, limits[1]);
    expect_untouched(env, 1, 0, limits[0]);
}
END_TEST

START_TEST(per_device_others_get_the_fraction)
{
    const char *const *env =
        ENV("FAKECUDA_DEVICES=2", "SPILLWAY_MEM_LIMIT=1=32M", "SPILLWAY_MEM_FRACTION=0.5");
    uint64_t limits[2] = {DEVICE_MEM / 2, 32 * MiB};
    expect_limits(env, limits, 2);
    expect_fill_stops(env, 1, limits[1], 5 * MiB);
}
END_TEST

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

/* Runs info (and an allocation) under env: status 0, and stderr says
 * warning, once. */
static void expect_warning(const char *const *env, const char *warning)
{
    struct run r;
    run_probe(&r, 1, env, ARGS("alloc", "0", "1048576"));
    ck_assert_msg(r.status == 0 && strstr(r.out, "alloc 0 err 0"), "status %d: %s %s", r.status,
                  r.out, r.err);
    ck_assert_msg(count(r.err, warning) == 1, "'%s' not once in '%s'", warning, r.err);
}

/* Issue 11: 99999T was cut to the device silently. */
START_TEST(limit_above_the_device_is_the_device)
{
    uint64_t limit = DEVICE_MEM;
    expect_limits(ENV("SPILLWAY_MEM_LIMIT=99999T"), &limit, 1);
    expect_warning(ENV("SPILLWAY_MEM_LIMIT=99999T"),
                   "spillway: device 0: SPILLWAY_MEM_LIMIT=99999T is more than the device's "
                   "256 MiB: using 256 MiB\n");
}
END_TEST

/* SPILLWAY_HOST_RESERVE=99T was cut to the host limit silently: said once,
 * as a limit above the device is. With spill (these cases run without:
 * child_env), which is what pins a reserve. */
START_TEST(host_reserve_above_the_host_limit_is_the_host_limit)
{
    expect_warning(ENV("SPILLWAY_SPILL=1", "SPILLWAY_HOST_RESERVE=99T", "SPILLWAY_HOST_LIMIT=64M"),
                   "spillway: device 0: SPILLWAY_HOST_RESERVE=99T is more than the host limit, "
                   "SPILLWAY_HOST_LIMIT=64M: using 64 MiB\n");
}
END_TEST

/* Issue 11: SPILLWAY_MEM_LIMIT=1 (spillway run --limit 1) failed at run
 * time ("cannot set up the page pool for 1 bytes"); now one page, said so. */
START_TEST(limit_below_a_page_is_a_page)
{
    uint64_t limit = 2 * MiB;
    expect_limits(ENV("SPILLWAY_MEM_LIMIT=1"), &limit, 1);
    expect_warning(ENV("SPILLWAY_MEM_LIMIT=1"),
                   "spillway: device 0: SPILLWAY_MEM_LIMIT=1 is below one page (2 MiB): using 2 MiB\n");
    expect_warning(ENV("SPILLWAY_MEM_FRACTION=0.000001"),
                   "spillway: device 0: SPILLWAY_MEM_FRACTION=0.000001 of 256 MiB, 268 bytes, is "
                   "below one page (2 MiB): using 2 MiB\n");
    struct run r;
    run_probe(&r, 1, ENV("SPILLWAY_MEM_LIMIT=1"), ARGS("alloc", "0", "1048576"));
    ck_assert_msg(!strstr(r.err, "cannot set up the page pool"), "'%s'", r.err);
    expect_fill_stops(ENV("SPILLWAY_MEM_LIMIT=1", "SPILLWAY_LOG=error"), 0, limit, 1 * MiB);
}
END_TEST

/* Issue 11: 0=8G,5=1G on a machine without device 5 said nothing. */
START_TEST(missing_device_is_reported)
{
    expect_warning(ENV("SPILLWAY_MEM_LIMIT=0=8G,5=1G"),
                   "spillway: SPILLWAY_MEM_LIMIT names device 5, but CUDA sees 1 device (0): its "
                   "limit is unused (devices are numbered after CUDA_VISIBLE_DEVICES)\n");
    expect_warning(ENV("FAKECUDA_DEVICES=2", "SPILLWAY_MEM_LIMIT=1=8M,2=1G,3=1G"),
                   "names devices 2, 3, but CUDA sees 2 devices (0-1): those limits are unused");
    /* Every listed device there: no word. */
    struct run r;
    run_probe(&r, 1, ENV("FAKECUDA_DEVICES=2", "SPILLWAY_MEM_LIMIT=0=8M,1=8M"), ARGS("info"));
    ck_assert_msg(r.status == 0 && r.err[0] == '\0', "'%s'", r.err);
}
END_TEST

START_TEST(invalid_value_stops_before_main)
{
    char var[256];
    snprintf(var, sizeof var, "%s=%s", spw_bad_options[_i].name, spw_bad_options[_i].value);
    struct run r;
    run_probe(&r, 1, ENV(var), ARGS("info"));
    ck_assert_msg(r.status == 2, "%s: status %d", var, r.status);
    ck_assert_msg(strstr(r.out, "probe: main") == NULL, "%s: main ran", var);
    char named[256];
    snprintf(named, sizeof named, "%s='%s'", spw_bad_options[_i].name, spw_bad_options[_i].value);
    ck_assert_msg(strncmp(r.err, "spillway: ", 10) == 0 && strstr(r.err, named) &&
                      strstr(r.err, spw_bad_options[_i].accepted),
                  "%s: stderr '%s'", var, r.err);
    ck_assert_msg(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "not one line: '%s'", r.err);
}
END_TEST

/* Stops before main with one line on stderr containing each of want. */
static void expect_refused(const char *const *env, const char *want1, const char *want2)
{
    struct run r;
    run_probe(&r, 1, env, ARGS("info"));
    ck_assert_msg(r.status == 2, "%s: status %d", env[0], r.status);
    ck_assert_msg(strstr(r.out, "probe: main") == NULL, "%s: main ran", env[0]);
    ck_assert_msg(strncmp(r.err, "spillway: ", 10) == 0 && strstr(r.err, want1) &&
                      strstr(r.err, want2) && count_lines(r.err) == 1,
                  "%s: stderr '%s'", env[0], r.err);
}

/* Issue 11: a misspelt variable ran with no limit, even with SPILLWAY_LOG=debug. */
START_TEST(misspelt_variable_stops_before_main)
{
    expect_refused(ENV("SPILLWAY_MEM_LIMT=8G"),
                   "spillway: unknown variable SPILLWAY_MEM_LIMT (set to '8G'): did you mean "
                   "SPILLWAY_MEM_LIMIT?\n",
                   "");
    expect_refused(ENV("SPILLWAY_MEM_LIMT=8G", "SPILLWAY_LOG=debug"), "SPILLWAY_MEM_LIMT", "did you mean");
    /* Even when spillway passes everything through: the user meant something. */
    expect_refused(ENV("SPILLWAY_DISABLE=1", "SPILLWAY_FRACTION=0.5"),
                   "unknown variable SPILLWAY_FRACTION", "did you mean SPILLWAY_MEM_FRACTION?");
}
END_TEST

/* Issue 11: any unknown SPILLWAY_* was ignored. */
START_TEST(unknown_variable_stops_before_main)
{
    expect_refused(ENV("SPILLWAY_VERBOSE=1"), "unknown variable SPILLWAY_VERBOSE (set to '1')",
                   "spillway's variables are SPILLWAY_MEM_FRACTION, SPILLWAY_MEM_LIMIT, ");
}
END_TEST

/* Issue 11: an empty value took the default. Every option of the table. */
static const char *const option_names[] = {
#define SPW_OPTION(name, field, type, def, doc) #name,
#include "shim/options.def"
#undef SPW_OPTION
};

START_TEST(empty_value_stops_before_main)
{
    char var[64], want[80];
    snprintf(var, sizeof var, "%s=", option_names[_i]);
    snprintf(want, sizeof want, "invalid %s='': empty", option_names[_i]);
    expect_refused(ENV(var), want, "unset it for the default");
}
END_TEST

/* The string options' one invalid case: too long for their field. */
START_TEST(overlong_string_stops_before_main)
{
    static const char *const names[] = {"SPILLWAY_DRIVER", "SPILLWAY_STATS_DIR"};
    static char var[5000];
    int n = snprintf(var, sizeof var, "%s=", names[_i]);
    memset(var + n, 'x', sizeof var - (size_t)n - 1);
    var[sizeof var - 1] = '\0';
    struct run r;
    run_probe(&r, 1, ENV(var), ARGS("info"));
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_null(strstr(r.out, "probe: main"));
    ck_assert_msg(strncmp(r.err, "spillway: ", 10) == 0 && strstr(r.err, names[_i]) &&
                      strstr(r.err, "shorter than 4096") && count_lines(r.err) == 1,
                  "'%s'", r.err);
}
END_TEST

START_TEST(disable_passes_through)
{
    const char *const *env = ENV("SPILLWAY_DISABLE=1", "SPILLWAY_MEM_LIMIT=16M");
    uint64_t limit = DEVICE_MEM;
    expect_limits(env, &limit, 1);
    struct run r;
    run_probe(&r, 1, env, ARGS("alloc", "0", "67108864"));
    ck_assert_msg(strstr(r.out, "alloc 0 err 0"), "%s %s", r.out, r.err);
    /* Still validated: a bad value stops the program even when disabled. */
    run_probe(&r, 1, ENV("SPILLWAY_DISABLE=1", "SPILLWAY_MEM_LIMIT=lots"), ARGS("info"));
    ck_assert_int_eq(r.status, 2);
}
END_TEST

START_TEST(errors_are_the_drivers)
{
    struct run bare, shim;
    run_probe(&bare, 0, NULL, ARGS("errors"));
    run_probe(&shim, 1, ENV("SPILLWAY_MEM_LIMIT=64M"), ARGS("errors"));
    ck_assert_msg(bare.status == 0 && shim.status == 0, "%d %d %s", bare.status, shim.status,
                  shim.err);
    ck_assert_msg(strstr(bare.out, "free_double 1") != NULL, "the probe tests nothing: %s",
                  bare.out);
    ck_assert_str_eq(shim.out, bare.out);
}
END_TEST

START_TEST(oom_logged_once)
{
    struct run r;
    run_probe(&r, 1, ENV("SPILLWAY_MEM_LIMIT=16M"), ARGS("fill", "0", "3145728"));
    ck_assert_msg(count(r.err, "spillway: device 0: out of memory") == 1, "'%s'", r.err);
    run_probe(&r, 1, ENV("SPILLWAY_MEM_LIMIT=16M", "SPILLWAY_LOG=error"), ARGS("fill", "0", "3145728"));
    ck_assert_msg(r.err[0] == '\0', "'%s'", r.err);
    run_probe(&r, 1, ENV("SPILLWAY_MEM_LIMIT=16M", "SPILLWAY_LOG=debug"), ARGS("fill", "0", "3145728"));
    ck_assert_msg(count(r.err, "out of memory") == 1 && count(r.err, "spillway: ") > 1 &&
                      count(r.err, "\n") == count(r.err, "spillway: "),
                  "'%s'", r.err);
}
END_TEST

/* A SPILLWAY_DRIVER that cannot be loaded, or that loads but is not a
 * driver: a program linked with -lcuda still works, limited, through the
 * driver it loaded itself. */
START_TEST(missing_driver_falls_back)
{
    static const char *const drivers[] = {"SPILLWAY_DRIVER=/nonexistent/libcuda.so.1",
                                          "SPILLWAY_DRIVER=libc.so.6"};
    const char *env[] = {drivers[_i], "SPILLWAY_MEM_LIMIT=32M", NULL};
    struct run r;
    run_probe(&r, 1, env, ARGS("info"));
    ck_assert_msg(r.status == 0 && strstr(r.err, "cannot load the CUDA driver"), "%d '%s'",
                  r.status, r.err);
    uint64_t limit = 32 * MiB;
    expect_limits(env, &limit, 1);
}
END_TEST

/* The segment exists while the program runs (stderr says where at info
 * level) and is gone when it exits. */
START_TEST(stats_segment_published_and_removed)
{
    struct run r;
    run_probe(&r, 1, ENV("SPILLWAY_MEM_LIMIT=16M", "SPILLWAY_LOG=info"), ARGS("fill", "0", "3145728"));
    ck_assert_msg(r.status == 0 && strstr(r.err, "stats: publishing to ") &&
                      strstr(r.err, stats_dir),
                  "'%s'", r.err);
    ck_assert_int_eq(stats_dir_entries(), 0);
    run_probe(&r, 1, ENV("SPILLWAY_STATS=0", "SPILLWAY_LOG=info"), ARGS("fill", "0", "3145728"));
    ck_assert_msg(r.status == 0 && !strstr(r.err, "stats:"), "'%s'", r.err);
}
END_TEST

/* Issue 11: a log line read "stats: stats: cannot open directory". */
START_TEST(stats_failure_said_once)
{
    struct run r;
    run_probe(&r, 1, ENV("SPILLWAY_STATS_DIR=/nonexistent/spillway-env", "SPILLWAY_MEM_LIMIT=16M"),
              ARGS("fill", "0", "3145728"));
    ck_assert_msg(r.status == 0 && count(r.err, "spillway: stats: cannot open directory "
                                                "/nonexistent/spillway-env: ") == 1 &&
                      !strstr(r.err, "stats: stats:"),
                  "'%s'", r.err);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("shim_env");
    TCase *limits = tcase_create("limits");
    tcase_set_timeout(limits, 30);
    tcase_add_checked_fixture(limits, make_stats_dir, remove_stats_dir);
    tcase_add_test(limits, default_fraction);
    tcase_add_test(limits, fraction);
    tcase_add_test(limits, absolute);
    tcase_add_test(limits, per_device);
    tcase_add_test(limits, per_device_others_get_the_fraction);
    tcase_add_test(limits, limit_above_the_device_is_the_device);
    tcase_add_test(limits, host_reserve_above_the_host_limit_is_the_host_limit);
    tcase_add_test(limits, limit_below_a_page_is_a_page);
    tcase_add_test(limits, missing_device_is_reported);
    suite_add_tcase(s, limits);
    TCase *options = tcase_create("options");
    tcase_set_timeout(options, 30);
    tcase_add_checked_fixture(options, make_stats_dir, remove_stats_dir);
    tcase_add_loop_test(options, invalid_value_stops_before_main, 0, (int)SPW_BAD_OPTIONS);
    tcase_add_loop_test(options, overlong_string_stops_before_main, 0, 2);
    tcase_add_test(options, misspelt_variable_stops_before_main);
    tcase_add_test(options, unknown_variable_stops_before_main);
    tcase_add_loop_test(options, empty_value_stops_before_main, 0,
                        (int)(sizeof option_names / sizeof option_names[0]));
    tcase_add_test(options, disable_passes_through);
    tcase_add_test(options, oom_logged_once);
    tcase_add_loop_test(options, missing_driver_falls_back, 0, 2);
    suite_add_tcase(s, options);
    tcase_add_test(options, stats_segment_published_and_removed);
    tcase_add_test(options, stats_failure_said_once);
    TCase *errors = tcase_create("errors");
    tcase_set_timeout(errors, 30);
    tcase_add_checked_fixture(errors, make_stats_dir, remove_stats_dir);
    tcase_add_test(errors, errors_are_the_drivers);
    suite_add_tcase(s, errors);
    return s;
}
