/* spillway-top's model and formatting without a terminal: byte and rate
 * formatting at the unit boundaries, rates across samples (including
 * counters that go backwards), rows per device, sorting and filtering. */
#include "tests/unit/check_compat.h"
#include "tests/unit/stats/segdir.h"
#include "stats/writer.h"
#include "tools/top_format.h"
#include "tools/top_model.h"

#include <math.h>
#include <signal.h>
#include <sys/wait.h>

static void bytes_is(uint64_t v, const char *want)
{
    char out[16];
    top_fmt_bytes(out, sizeof out, v);
    ck_assert_msg(strcmp(out, want) == 0, "%llu -> '%s', want '%s'", (unsigned long long)v, out, want);
    ck_assert_uint_le(strlen(out), 5);
}

START_TEST(bytes_formatting)
{
    bytes_is(0, "0B");
    bytes_is(1023, "1023B");
    bytes_is(1024, "1.0K");
    bytes_is(1536, "1.5K");
    bytes_is(10 * 1024 - 52, "9.9K");
    bytes_is(10 * 1024, "10K");
    bytes_is(1023 * 1024, "1023K");
    bytes_is(1024 * 1024 - 1, "1.0M");
    bytes_is(8ull << 30, "8.0G");
    bytes_is(80ull << 30, "80G");
    bytes_is(UINT64_MAX, "16E");
}
END_TEST

START_TEST(count_formatting)
{
    char out[16];
    top_fmt_count(out, sizeof out, 0);
    ck_assert_str_eq(out, "0");
    top_fmt_count(out, sizeof out, 99999);
    ck_assert_str_eq(out, "99999");
    top_fmt_count(out, sizeof out, 100000);
    ck_assert_str_eq(out, "98K");
    top_fmt_count(out, sizeof out, UINT64_MAX);
    ck_assert_str_eq(out, "16E");
    top_fmt_count_rate(out, sizeof out, 0);
    ck_assert_str_eq(out, "0");
    top_fmt_count_rate(out, sizeof out, 2.5);
    ck_assert_str_eq(out, "2.5");
    top_fmt_count_rate(out, sizeof out, 1234.4);
    ck_assert_str_eq(out, "1234");
    top_fmt_count_rate(out, sizeof out, -5);
    ck_assert_str_eq(out, "0");
    /* A hostile segment's counter may jump past what a uint64_t holds in a
     * second: the rate is shown as the most there is, never converted out
     * of range (undefined; x86 gave 8E). */
    top_fmt_count_rate(out, sizeof out, 1e30);
    ck_assert_str_eq(out, "16E");
    top_fmt_byte_rate(out, sizeof out, 1e30);
    ck_assert_str_eq(out, "16E");
    top_fmt_byte_rate(out, sizeof out, HUGE_VAL);
    ck_assert_str_eq(out, "16E");
    top_fmt_byte_rate(out, sizeof out, NAN);
    ck_assert_str_eq(out, "0B");
    top_fmt_byte_rate(out, sizeof out, -1);
    ck_assert_str_eq(out, "0B");
    top_fmt_byte_rate(out, sizeof out, 1536);
    ck_assert_str_eq(out, "1.5K");
}
END_TEST

static struct spw_stats_writer *writer(const char *cmd, uint32_t ndev)
{
    struct spw_stats_params p = {.dir = segdir, .device_count = ndev, .cmdline = cmd};
    struct spw_stats_writer *w;
    char err[256];
    ck_assert_msg(spw_stats_open(&w, &p, err, sizeof err) == 0, "%s", err);
    return w;
}

START_TEST(rates_rows_and_history)
{
    struct spw_stats_writer *w = writer("trainer --big", 3);
    spw_stats_set(w, 2, SPW_C_LIMIT, 1000);
    uint64_t held = 100; /* what the shim would pass: its own count */
    spw_stats_alloc(w, 2, 0, 100, held);
    struct top_model m;
    top_model_init(&m, segdir, SPW_SCAN_REMOVE_DEAD);
    ck_assert_int_eq(top_model_sample(&m, 10.0, NULL, NULL), 0);
    ck_assert_uint_eq(m.nprocs, 1);
    for (unsigned i = 0; i < 50; i++) {
        held += 10;
        spw_stats_alloc(w, 2, i, 10, held);
    }
    spw_stats_spill(w, 2, 4096);
    for (unsigned i = 0; i < 30; i++) /* 24 kernel and 6 graph launches */
        spw_stats_launch(w, 2, i, i % 5 == 0);
    ck_assert_int_eq(top_model_sample(&m, 12.0, NULL, NULL), 0);
    const struct top_proc *p = m.procs[0];
    ck_assert_msg(p->alloc_rate[2] == 25.0, "alloc rate %f", p->alloc_rate[2]);
    ck_assert_msg(p->launch_rate[2] == 15.0, "launch rate %f", p->launch_rate[2]);
    ck_assert_msg(p->spill_rate[2] == 2048.0, "spill rate %f", p->spill_rate[2]);
    ck_assert_uint_eq(p->hist_len, 2);
    ck_assert_uint_eq(top_proc_hist(p, p->hist_in_use, 0), 100);
    ck_assert_uint_eq(top_proc_hist(p, p->hist_in_use, 1), 600);
    ck_assert_uint_eq(top_proc_hist(p, p->hist_spilled, 1), 4096);
    /* A counter that goes backwards (a restarted or hostile writer) gives
     * a zero rate, not 1.8e19 per second. */
    spw_stats_set(w, 2, SPW_C_ALLOCS, 0);
    ck_assert_int_eq(top_model_sample(&m, 13.0, NULL, NULL), 0);
    ck_assert_msg(m.procs[0]->alloc_rate[2] == 0.0, "rate %f", m.procs[0]->alloc_rate[2]);
    /* Only device 2 is in use: one row, and its device header; device 0's
     * limit and told size alone (the library resolves them for every
     * device it sees) are no use of it. */
    spw_stats_set(w, 0, SPW_C_LIMIT, 1000);
    spw_stats_set(w, 0, SPW_C_REPORTED, 2000);
    ck_assert_int_eq(top_model_sample(&m, 13.5, NULL, NULL), 0);
    top_model_arrange(&m, TOP_SORT_IN_USE, false, NULL);
    ck_assert_uint_eq(m.nrows, 1);
    ck_assert_uint_eq(m.rows[0].dev, 2);
    ck_assert_uint_eq(m.ndevices, 1);
    ck_assert_uint_eq(m.devices[0].index, 2);
    ck_assert_uint_eq(m.devices[0].limit, 1000);
    ck_assert_uint_eq(m.devices[0].in_use, 600);
    spw_stats_close(w);
    ck_assert_int_eq(top_model_sample(&m, 14.0, NULL, NULL), 0);
    ck_assert_uint_eq(m.nprocs, 0);
    top_model_free(&m);
}
END_TEST

/* Children publish known figures; the model sorts and filters them. */
static pid_t child_writer(const char *cmd, uint64_t in_use, const int pfd[2])
{
    pid_t c = fork();
    if (c == 0) {
        struct spw_stats_writer *w = writer(cmd, 1);
        spw_stats_alloc(w, 0, 0, in_use, in_use);
        if (write(pfd[1], "x", 1) != 1)
            _exit(3);
        pause();
        _exit(0);
    }
    char ch;
    ck_assert_int_eq(read(pfd[0], &ch, 1), 1);
    return c;
}

START_TEST(sorting_and_filtering)
{
    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    pid_t a = child_writer("alpha", 300, pfd);
    pid_t b = child_writer("beta", 100, pfd);
    pid_t c = child_writer("gamma", 200, pfd);
    struct top_model m;
    top_model_init(&m, segdir, 0);
    ck_assert_int_eq(top_model_sample(&m, 1.0, NULL, NULL), 0);
    top_model_arrange(&m, TOP_SORT_IN_USE, false, NULL);
    ck_assert_uint_eq(m.nrows, 3);
    ck_assert_int_eq(top_proc_pid(m.rows[0].p), a);
    ck_assert_int_eq(top_proc_pid(m.rows[1].p), c);
    ck_assert_int_eq(top_proc_pid(m.rows[2].p), b);
    top_model_arrange(&m, TOP_SORT_COMMAND, true, NULL);
    ck_assert_int_eq(top_proc_pid(m.rows[0].p), c);
    ck_assert_int_eq(top_proc_pid(m.rows[2].p), a);
    top_model_arrange(&m, TOP_SORT_IN_USE, false, "MM");
    ck_assert_uint_eq(m.nrows, 1); /* case-insensitive on the command */
    ck_assert_int_eq(top_proc_pid(m.rows[0].p), c);
    char pid[16];
    snprintf(pid, sizeof pid, "%d", (int)b);
    top_model_arrange(&m, TOP_SORT_IN_USE, false, pid);
    ck_assert_uint_ge(m.nrows, 1);
    top_model_arrange(&m, TOP_SORT_IN_USE, false, "nothing-matches");
    ck_assert_uint_eq(m.nrows, 0);
    enum top_sort k;
    ck_assert_int_eq(top_sort_parse("spill-rate", &k), 0);
    ck_assert_int_eq(k, TOP_SORT_SPILL_RATE);
    ck_assert_int_eq(top_sort_parse("memory", &k), -1);
    kill(a, SIGKILL);
    kill(b, SIGKILL);
    kill(c, SIGKILL);
    while (wait(NULL) > 0)
        ;
    top_model_free(&m);
}
END_TEST

/* GPU indices come from what processes say (CUDA_VISIBLE_DEVICES, up to
 * 4095) when NVML is off: more distinct ones than a segment has devices
 * still each get their device line. */
START_TEST(more_gpus_than_a_segment_holds)
{
    struct spw_stats_writer *w = writer("wide", SPW_STATS_MAX_DEVICES);
    for (uint32_t d = 0; d < SPW_STATS_MAX_DEVICES; d++)
        spw_stats_alloc(w, d, 0, 4096, 4096);
    struct top_model m;
    top_model_init(&m, segdir, 0);
    ck_assert_int_eq(top_model_sample(&m, 1.0, NULL, NULL), 0);
    ck_assert_uint_eq(m.nprocs, 1);
    /* A second process like it whose device 0 is GPU 100. */
    struct top_proc *twin = malloc(sizeof *twin);
    memcpy(twin, m.procs[0], sizeof *twin);
    twin->ident.gpu_env.known = true;
    twin->ident.gpu_env.has_cuda_visible = true;
    snprintf(twin->ident.gpu_env.cuda_visible, sizeof twin->ident.gpu_env.cuda_visible, "100");
    m.procs = realloc(m.procs, (m.nprocs + 1) * sizeof *m.procs);
    m.procs[m.nprocs++] = twin;
    m.cap = m.nprocs;
    top_model_arrange(&m, TOP_SORT_DEVICE, false, NULL);
    ck_assert_uint_eq(m.nrows, 2 * SPW_STATS_MAX_DEVICES);
    ck_assert_uint_eq(m.ndevices, SPW_STATS_MAX_DEVICES + 1);
    for (size_t i = 1; i < m.ndevices; i++)
        ck_assert_uint_lt(m.devices[i - 1].index, m.devices[i].index);
    ck_assert_uint_eq(m.devices[m.ndevices - 1].index, 100);
    ck_assert_uint_eq(m.devices[m.ndevices - 1].procs, 1);
    ck_assert_uint_eq(m.devices[1].procs, 2);
    top_model_free(&m);
    spw_stats_close(w);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("tools_model");
    TCase *tc = tcase_create("model");
    tcase_add_checked_fixture(tc, segdir_setup, segdir_teardown);
    tcase_add_test(tc, bytes_formatting);
    tcase_add_test(tc, count_formatting);
    tcase_add_test(tc, rates_rows_and_history);
    tcase_add_test(tc, sorting_and_filtering);
    tcase_add_test(tc, more_gpus_than_a_segment_holds);
    suite_add_tcase(s, tc);
    return s;
}
