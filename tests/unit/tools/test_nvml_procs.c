/* NVML's process lists in spillway-top, against tests/fakenvml as drivers
 * of each kind: the function and element each one has (_v3 with 24 or,
 * as R535's, 32 bytes; _v2; NVML 1's), the INSUFFICIENT_SIZE protocol,
 * NOT_AVAILABLE, errors, the compute and graphics lists merged; then in
 * the model: NVML's figure for a process under spillway, and the processes
 * not under spillway as rows, counted on their GPU, filtered and sorted. */
#include "tests/unit/check_compat.h"
#include "tests/unit/stats/segdir.h"
#include "stats/writer.h"
#include "tools/top_model.h"

#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>

#define GiB (1ull << 30)
#define MiB (1ull << 20)

static char procs_path[300], log_path[300];

static void setup(void)
{
    segdir_setup();
    snprintf(procs_path, sizeof procs_path, "%s/.procs", segdir);
    snprintf(log_path, sizeof log_path, "%s/.log", segdir);
    setenv("FAKENVML_PROCS", procs_path, 1);
    setenv("FAKENVML_LOG", log_path, 1);
    setenv("FAKENVML_DEVICES", "name=Fake;name=Fake", 1); /* alike: CUDA numbers them in PCI order */
    unsetenv("FAKENVML_INIT");
}

/* The processes the fake driver lists, as FAKENVML_PROCS lines. */
static void procs(const char *fmt, ...)
{
    FILE *f = fopen(procs_path, "w");
    ck_assert_ptr_nonnull(f);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fclose(f);
}

/* Opens the fake NVML of a driver kind ("" a current one, "r535", "r470",
 * "r418": the directories tests/fakenvml/module.mk builds). */
static void open_fake(struct top_nvml *n, const char *kind)
{
    const char *b = getenv("SPW_TEST_BUILD");
    ck_assert_msg(b != NULL, "SPW_TEST_BUILD is not set: run through scripts/run-tests.sh");
    char lib[512];
    snprintf(lib, sizeof lib, "%s/fakenvml/%s%slibnvidia-ml.so.1", b, kind, *kind ? "/" : "");
    ck_assert_msg(top_nvml_open(n, lib) == 0, "%s: %s", lib, n->error);
}

/* Lines of the fake driver's call log (one per process-list call), and
 * how many of them have text in them. */
static int log_lines(const char *text)
{
    FILE *f = fopen(log_path, "r");
    int n = 0;
    char line[256];
    while (f && fgets(line, sizeof line, f))
        n += !text || strstr(line, text) != NULL;
    if (f)
        fclose(f);
    return n;
}

static const struct top_gpu_proc *proc_on(const struct top_nvml *n, unsigned gpu, int pid)
{
    const struct top_gpu_proc *e = top_gpu_find_proc(top_nvml_gpu(n, gpu), pid);
    ck_assert_msg(e != NULL, "pid %d not listed on GPU %u", pid, gpu);
    return e;
}

/* Each kind of driver: the newest function it has, the element it writes,
 * and the same processes read back through it. R535's _v3 writes 32-byte
 * elements: read as 24-byte ones, the second process would be garbage. */
START_TEST(every_driver_kind)
{
    static const struct { const char *kind, *compute, *graphics; } kinds[] = {
        {"", "nvmlDeviceGetComputeRunningProcesses_v3 (24-byte entries)",
         "nvmlDeviceGetGraphicsRunningProcesses_v3 (24-byte entries)"},
        {"r535", "nvmlDeviceGetComputeRunningProcesses_v3 (32-byte entries)",
         "nvmlDeviceGetGraphicsRunningProcesses_v3 (32-byte entries)"},
        {"r470", "nvmlDeviceGetComputeRunningProcesses_v2 (24-byte entries)",
         "nvmlDeviceGetGraphicsRunningProcesses_v2 (24-byte entries)"},
        {"r418", "nvmlDeviceGetComputeRunningProcesses (16-byte entries)",
         "nvmlDeviceGetGraphicsRunningProcesses (16-byte entries)"},
    };
    procs("0 4001 1G\n0 4002 2G\n0 4003 3M\n1 4004 5G g\n1 4005 na\n");
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        struct top_nvml n;
        open_fake(&n, kinds[i].kind);
        ck_assert_str_eq(n.procs_api[0], kinds[i].compute);
        ck_assert_str_eq(n.procs_api[1], kinds[i].graphics);
        top_nvml_sample(&n);
        const struct top_gpu *g0 = top_nvml_gpu(&n, 0), *g1 = top_nvml_gpu(&n, 1);
        ck_assert_msg(g0->have_procs && g1->have_procs, "%s: %s", kinds[i].kind, g0->procs_error);
        ck_assert_uint_eq(g0->nprocs, 3);
        ck_assert_uint_eq(proc_on(&n, 0, 4001)->used, GiB);
        ck_assert_uint_eq(proc_on(&n, 0, 4002)->used, 2 * GiB);
        ck_assert_uint_eq(proc_on(&n, 0, 4003)->used, 3 * MiB);
        ck_assert(proc_on(&n, 0, 4003)->compute && !proc_on(&n, 0, 4003)->graphics);
        ck_assert_uint_eq(g1->nprocs, 2);
        ck_assert(proc_on(&n, 1, 4004)->graphics && !proc_on(&n, 1, 4004)->compute);
        ck_assert_uint_eq(proc_on(&n, 1, 4004)->used, 5 * GiB);
        ck_assert(proc_on(&n, 1, 4005)->have_used == false); /* NOT_AVAILABLE */
        ck_assert(top_nvml_have_procs(&n));
        top_nvml_close(&n);
    }
}
END_TEST

/* More processes than the array holds: INSUFFICIENT_SIZE says how many,
 * the array grows and the call is made again; the next refresh fits at
 * once. Each refresh asks each device once per list. */
START_TEST(insufficient_size_grows_the_array)
{
    FILE *f = fopen(procs_path, "w");
    for (int i = 0; i < 100; i++)
        fprintf(f, "0 %d %dM\n", 5000 + i, i + 1);
    fclose(f);
    struct top_nvml n;
    open_fake(&n, "");
    ck_assert_int_eq(log_lines(NULL), 0); /* opening lists nothing: the first refresh does */
    top_nvml_sample(&n);
    const struct top_gpu *g = top_nvml_gpu(&n, 0);
    ck_assert(g->have_procs);
    ck_assert_uint_eq(g->nprocs, 100);
    ck_assert_uint_eq(proc_on(&n, 0, 5099)->used, 100 * MiB);
    ck_assert_int_eq(log_lines("ComputeRunningProcesses_v3 dev=0 in=32 -> 7 out=100"), 1);
    ck_assert_int_eq(log_lines("ComputeRunningProcesses_v3 dev=0 in=208 -> 0 out=100"), 1);
    unlink(log_path);
    top_nvml_sample(&n);
    ck_assert_uint_eq(top_nvml_gpu(&n, 0)->nprocs, 100);
    ck_assert_int_eq(log_lines(NULL), 4); /* 2 devices x 2 lists, no retry */
    ck_assert_int_eq(log_lines("-> 7"), 0);
    top_nvml_close(&n);
}
END_TEST

/* R535's _v3 writes 32-byte elements: an array that fits the count fits
 * them too (a 24-byte one would be written past its end from the 25th
 * process of the first call's 32: the sanitizer build sees it). */
START_TEST(r535_fills_the_whole_array)
{
    FILE *f = fopen(procs_path, "w");
    for (int i = 0; i < 32; i++)
        fprintf(f, "0 %d %dM\n", 6000 + i, i + 1);
    fclose(f);
    struct top_nvml n;
    open_fake(&n, "r535");
    top_nvml_sample(&n);
    ck_assert_uint_eq(top_nvml_gpu(&n, 0)->nprocs, 32);
    for (int i = 0; i < 32; i++)
        ck_assert_uint_eq(proc_on(&n, 0, 6000 + i)->used, (uint64_t)(i + 1) * MiB);
    ck_assert_int_eq(log_lines("-> 7"), 0); /* in the first call */
    top_nvml_close(&n);
}
END_TEST

/* One process on both lists is one process (the larger figure); twice on
 * one list (a MIG board's instances) it holds the sum; an unknown figure
 * makes a sum unknown, and the other list's figure stands for it. */
START_TEST(lists_merge)
{
    procs("0 10 1G c\n0 10 2G g\n"
          "0 11 1G c\n0 11 1G c\n"
          "0 12 1G c\n0 12 na c\n"
          "0 13 na c\n0 13 4G g\n"
          "0 14 3G cg\n"
          "0 0 1G\n"); /* no process is pid 0 */
    struct top_nvml n;
    open_fake(&n, "");
    top_nvml_sample(&n);
    ck_assert_uint_eq(top_nvml_gpu(&n, 0)->nprocs, 5);
    const struct top_gpu_proc *e = proc_on(&n, 0, 10);
    ck_assert(e->compute && e->graphics && e->have_used);
    ck_assert_uint_eq(e->used, 2 * GiB);
    ck_assert_uint_eq(proc_on(&n, 0, 11)->used, 2 * GiB);
    ck_assert(!proc_on(&n, 0, 12)->have_used);
    ck_assert(proc_on(&n, 0, 13)->have_used);
    ck_assert_uint_eq(proc_on(&n, 0, 13)->used, 4 * GiB);
    ck_assert_uint_eq(proc_on(&n, 0, 14)->used, 3 * GiB);
    top_nvml_close(&n);
}
END_TEST

/* A device whose compute list NVML refuses has no processes, and says
 * why; the others keep theirs. */
START_TEST(refused_list_is_unknown)
{
    procs("0 error 4\n1 20 1G\n");
    struct top_nvml n;
    open_fake(&n, "");
    top_nvml_sample(&n);
    const struct top_gpu *g0 = top_nvml_gpu(&n, 0);
    ck_assert(!g0->have_procs);
    ck_assert_uint_eq(g0->nprocs, 0);
    ck_assert_str_eq(g0->procs_error, "compute processes: Insufficient Permissions");
    ck_assert(top_nvml_gpu(&n, 1)->have_procs);
    ck_assert_ptr_null(top_gpu_find_proc(g0, 20));
    ck_assert_uint_eq(proc_on(&n, 1, 20)->used, GiB);
    top_nvml_close(&n);
}
END_TEST

static struct spw_stats_writer *writer(const char *cmd)
{
    struct spw_stats_params p = {.dir = segdir, .device_count = 2, .cmdline = cmd};
    struct spw_stats_writer *w;
    char err[256];
    ck_assert_msg(spw_stats_open(&w, &p, err, sizeof err) == 0, "%s", err);
    return w;
}

static const struct top_row *row_of(const struct top_model *m, int pid, uint32_t gpu)
{
    for (size_t i = 0; i < m->nrows; i++)
        if (top_row_pid(&m->rows[i]) == pid && m->rows[i].gpu == gpu)
            return &m->rows[i];
    return NULL;
}

/* This process publishes a segment (under spillway) on devices 0 and 1; a
 * child (not under spillway) and a pid no process has are on NVML's list
 * too. */
START_TEST(model_rows_and_others)
{
    struct spw_stats_writer *w = writer("trainer --big");
    spw_stats_set(w, 0, SPW_C_LIMIT, 8 * GiB);
    spw_stats_alloc(w, 0, 0, GiB, GiB);
    spw_stats_alloc(w, 1, 0, 64 * MiB, 64 * MiB);
    pid_t child = fork();
    if (child == 0) {
        pause();
        _exit(0);
    }
    int self = getpid(), ghost = 4194303; /* the largest pid Linux gives: no process has it here */
    procs("0 %d 2560M\n0 %d 3G cg\n1 %d 2G g\n1 %d na\n", self, child, ghost, child);
    struct top_nvml n;
    open_fake(&n, "");
    struct top_model m;
    top_model_init(&m, segdir, 0);
    top_model_use_nvml(&m, &n);
    ck_assert_int_eq(top_model_sample(&m, 1.0, NULL, NULL), 0);
    top_model_arrange(&m, TOP_SORT_IN_USE, false, NULL);
    ck_assert(top_model_nvml_procs(&m));
    uint64_t v = 0;
    ck_assert(top_proc_nvml_used(&m, m.procs[0], 0, &v));
    ck_assert_uint_eq(v, 2560 * MiB); /* spillway's 1G in use, and its context and pool */
    ck_assert(!top_proc_nvml_used(&m, m.procs[0], 1, &v)); /* not on GPU 1's list */
    /* The child on GPU 0 and 1, the ghost on 1: not under spillway. */
    ck_assert_uint_eq(m.others.n, 3);
    ck_assert_uint_eq(m.nrows, 5);
    const struct top_row *r = row_of(&m, child, 0);
    ck_assert(r && r->o && !r->p);
    ck_assert(r->o->visible && r->o->compute && r->o->graphics);
    ck_assert_msg(strstr(top_row_command(r), "tools_nvml_procs") != NULL, "command '%s'", top_row_command(r));
    ck_assert_uint_eq(top_row_counter(r, SPW_C_IN_USE), 3 * GiB);
    ck_assert_uint_eq(top_row_counter(r, SPW_C_PEAK), 0);
    ck_assert(top_row_nvml_used(&m, r, &v) && v == 3 * GiB);
    r = row_of(&m, ghost, 1);
    ck_assert(r && r->o && !r->o->visible);
    ck_assert_str_eq(top_row_command(r), "?");
    ck_assert_str_eq(top_row_user(r), "?");
    r = row_of(&m, child, 1);
    ck_assert(r && !top_row_nvml_used(&m, r, &v));
    /* Sorted by in use (NVML's figure for the others): the child's 3G,
     * the ghost's 2G, this process's 1G. */
    ck_assert_int_eq(top_row_pid(&m.rows[0]), child);
    ck_assert_int_eq(top_row_pid(&m.rows[1]), ghost);
    ck_assert_int_eq(top_row_pid(&m.rows[2]), self);
    /* GPU lines: spillway's process count and the others'. */
    ck_assert_uint_eq(m.ndevices, 2);
    ck_assert_uint_eq(m.devices[0].procs, 1);
    ck_assert_uint_eq(m.devices[0].others, 1);
    ck_assert_uint_eq(m.devices[0].others_used, 3 * GiB);
    ck_assert_uint_eq(m.devices[1].others, 2);
    ck_assert_uint_eq(m.devices[1].others_used, 2 * GiB); /* the unknown one counts nothing */
    /* By NVML's figure: the child's 3G, this process's 2.5G, the ghost's 2G. */
    top_model_arrange(&m, TOP_SORT_GPU_MEM, false, NULL);
    ck_assert_int_eq(top_row_pid(&m.rows[0]), child);
    ck_assert_int_eq(top_row_pid(&m.rows[1]), self);
    ck_assert_int_eq(top_row_pid(&m.rows[2]), ghost);
    /* The filter keeps others by pid, user or command as it keeps ours. */
    char pid[16];
    snprintf(pid, sizeof pid, "%d", ghost);
    top_model_arrange(&m, TOP_SORT_IN_USE, false, pid);
    ck_assert_uint_eq(m.nrows, 1);
    ck_assert_int_eq(top_row_pid(&m.rows[0]), ghost);
    ck_assert_uint_eq(m.nshown, 0);
    size_t shown = 0;
    for (size_t i = 0; i < m.others.n; i++)
        shown += m.others.v[i].shown;
    ck_assert_uint_eq(shown, 1);
    top_model_arrange(&m, TOP_SORT_IN_USE, false, "TRAINER");
    ck_assert_uint_eq(m.nrows, 2);
    ck_assert(m.rows[0].p && m.rows[1].p);
    /* The child exits: its rows go with NVML's next list. */
    procs("0 %d 2560M\n", self);
    ck_assert_int_eq(top_model_sample(&m, 2.0, NULL, NULL), 0);
    top_model_arrange(&m, TOP_SORT_IN_USE, false, NULL);
    ck_assert_uint_eq(m.others.n, 0);
    ck_assert_uint_eq(m.nrows, 2);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    top_model_free(&m);
    top_nvml_close(&n);
    spw_stats_close(w);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("tools_nvml_procs");
    TCase *tc = tcase_create("nvml_procs");
    tcase_add_checked_fixture(tc, setup, segdir_teardown);
    tcase_add_test(tc, every_driver_kind);
    tcase_add_test(tc, insufficient_size_grows_the_array);
    tcase_add_test(tc, r535_fills_the_whole_array);
    tcase_add_test(tc, lists_merge);
    tcase_add_test(tc, refused_list_is_unknown);
    tcase_add_test(tc, model_rows_and_others);
    suite_add_tcase(s, tc);
    return s;
}
