/* The writer: segment creation, counters as the reader sees them, removal at
 * exit and after kill -9, fork safety, and the cost of an update. */
#include "tests/unit/check_compat.h"
#include "tests/unit/stats/segdir.h"
#include "stats/reader.h"
#include "stats/writer.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

static struct spw_stats_writer *open_writer(uint32_t ndev, const char *config)
{
    struct spw_stats_params p = {.dir = NULL, .device_count = ndev, .cmdline = "python3 train.py --big",
                                 .config = config};
    struct spw_stats_writer *w = NULL;
    char err[256] = "";
    int rc = spw_stats_open(&w, &p, err, sizeof err);
    ck_assert_msg(rc == 0, "open failed: %s", err);
    return w;
}

static void read_own(struct spw_stats_snapshot *s)
{
    char name[64], why[256] = "";
    int removed = 0;
    snprintf(name, sizeof name, "spillway.%u.%d", (unsigned)geteuid(), (int)getpid());
    int dfd = open(segdir, O_RDONLY | O_DIRECTORY);
    enum spw_read_result r = spw_stats_read_at(dfd, name, 0, s, &removed, why, sizeof why);
    close(dfd);
    ck_assert_msg(r == SPW_READ_OK, "read %s: %d %s", name, r, why);
}

START_TEST(creates_private_file_named_for_uid_and_pid)
{
    struct spw_stats_writer *w = open_writer(2, "mem_limit=8G\n");
    char want[512];
    snprintf(want, sizeof want, "%s/spillway.%u.%d", segdir, (unsigned)geteuid(), (int)getpid());
    ck_assert_str_eq(spw_stats_path(w), want);
    struct stat st;
    ck_assert_int_eq(lstat(want, &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    ck_assert_uint_eq(st.st_mode & 0777, 0600);
    ck_assert_uint_eq((uint64_t)st.st_size, spw_stats_total_size(2));
    spw_stats_close(w);
    ck_assert_int_eq(lstat(want, &st), -1);
    ck_assert_int_eq(segdir_count(), 0);
}
END_TEST

START_TEST(reader_sees_exactly_the_updates)
{
    struct spw_stats_writer *w = open_writer(3, "mem_limit=8G\nspill=1\n");
    spw_stats_set(w, 1, SPW_C_LIMIT, 8ull << 30);
    spw_stats_set(w, 1, SPW_C_POOL, 6ull << 30);
    spw_stats_alloc(w, 1, 1000);
    spw_stats_alloc(w, 1, 5000);
    spw_stats_free(w, 1, 1000);
    spw_stats_spill(w, 1, 4096);
    spw_stats_spill(w, 1, 4096);
    spw_stats_fill(w, 1, 4096);
    spw_stats_add(w, 2, SPW_C_COPY_HTOD, 77);
    spw_stats_add(w, 2, SPW_C_PASS_IPC, 1 << 20);
    spw_stats_add(w, 0, SPW_C_OOMS, 2);
    spw_stats_add(w, 3, SPW_C_OOMS, 9); /* no device 3: ignored */
    struct spw_stats_snapshot *s = malloc(sizeof *s);
    read_own(s);
    ck_assert_uint_eq(s->device_count, 3);
    ck_assert_int_eq(s->pid, getpid());
    ck_assert_uint_eq(s->uid, geteuid());
    ck_assert_int_eq(s->liveness, SPW_ALIVE);
    ck_assert_str_eq(s->cmdline, "python3 train.py --big");
    ck_assert_str_eq(s->config, "mem_limit=8G\nspill=1\n");
    ck_assert_uint_eq(s->c[1][SPW_C_LIMIT], 8ull << 30);
    ck_assert_uint_eq(s->c[1][SPW_C_POOL], 6ull << 30);
    ck_assert_uint_eq(s->c[1][SPW_C_IN_USE], 5000);
    ck_assert_uint_eq(s->c[1][SPW_C_PEAK], 6000);
    ck_assert_uint_eq(s->c[1][SPW_C_ALLOCS], 2);
    ck_assert_uint_eq(s->c[1][SPW_C_FREES], 1);
    ck_assert_uint_eq(s->c[1][SPW_C_SPILLED], 4096);
    ck_assert_uint_eq(s->c[1][SPW_C_SPILL_BYTES], 8192);
    ck_assert_uint_eq(s->c[1][SPW_C_SPILL_EVENTS], 2);
    ck_assert_uint_eq(s->c[1][SPW_C_FILL_BYTES], 4096);
    ck_assert_uint_eq(s->c[1][SPW_C_FILL_EVENTS], 1);
    ck_assert_uint_eq(s->c[2][SPW_C_COPY_HTOD], 77);
    ck_assert_uint_eq(s->c[2][SPW_C_PASS_IPC], 1 << 20);
    ck_assert_uint_eq(s->c[0][SPW_C_OOMS], 2);
    ck_assert_uint_eq(s->c[0][SPW_C_IN_USE], 0);
    spw_stats_set_config(w, "mem_limit=4G\n");
    read_own(s);
    ck_assert_str_eq(s->config, "mem_limit=4G\n");
    free(s);
    spw_stats_close(w);
}
END_TEST

START_TEST(sub_clamps_at_zero_and_counts_underflow)
{
    struct spw_stats_writer *w = open_writer(1, NULL);
    spw_stats_alloc(w, 0, 100);
    spw_stats_free(w, 0, 300);
    struct spw_stats_snapshot *s = malloc(sizeof *s);
    read_own(s);
    ck_assert_uint_eq(s->c[0][SPW_C_IN_USE], 0);
    ck_assert_uint_eq(s->c[0][SPW_C_UNDERFLOWS], 1);
    free(s);
    spw_stats_close(w);
}
END_TEST

START_TEST(null_writer_and_bad_params)
{
    spw_stats_add(NULL, 0, SPW_C_ALLOCS, 1); /* stats off: no-op */
    spw_stats_alloc(NULL, 0, 1);
    spw_stats_close(NULL);
    struct spw_stats_writer *w = (void *)1;
    char err[256] = "";
    struct spw_stats_params p = {.device_count = 0};
    ck_assert_int_eq(spw_stats_open(&w, &p, err, sizeof err), -1);
    ck_assert_ptr_null(w);
    ck_assert_msg(strstr(err, "device count 0") != NULL, "%s", err);
    p.device_count = SPW_STATS_MAX_DEVICES + 1;
    ck_assert_int_eq(spw_stats_open(&w, &p, err, sizeof err), -1);
    p.device_count = 1;
    p.dir = "/nonexistent/spillway";
    ck_assert_int_eq(spw_stats_open(&w, &p, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "/nonexistent/spillway") != NULL, "%s", err);
}
END_TEST

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

#define THREADS 4
#define PER_THREAD 200000
static void *hammer(void *arg)
{
    struct spw_stats_writer *w = arg;
    for (int i = 0; i < PER_THREAD; i++) {
        spw_stats_alloc(w, 0, 3);
        spw_stats_add(w, 0, SPW_C_COPY_DTOD, 5);
    }
    return NULL;
}

START_TEST(concurrent_updates_are_exact)
{
    struct spw_stats_writer *w = open_writer(1, NULL);
    pthread_t t[THREADS];
    double t0 = now_ns();
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, hammer, w);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("stats update cost, %d threads on the same counters: %.1f ns per alloc+copy update\n", THREADS,
           (now_ns() - t0) / PER_THREAD);
    struct spw_stats_snapshot *s = malloc(sizeof *s);
    read_own(s);
    ck_assert_uint_eq(s->c[0][SPW_C_ALLOCS], THREADS * PER_THREAD);
    ck_assert_uint_eq(s->c[0][SPW_C_IN_USE], 3ull * THREADS * PER_THREAD);
    ck_assert_uint_eq(s->c[0][SPW_C_PEAK], 3ull * THREADS * PER_THREAD);
    ck_assert_uint_eq(s->c[0][SPW_C_COPY_DTOD], 5ull * THREADS * PER_THREAD);
    free(s);
    spw_stats_close(w);
}
END_TEST


/* The cost of the updates the shim makes on every hooked call. Printed for
 * the benchmark table; the bound only catches a syscall or lock creeping in. */
START_TEST(update_cost)
{
    struct spw_stats_writer *w = open_writer(1, NULL);
    const int n = 2000000;
    double t0 = now_ns();
    for (int i = 0; i < n; i++)
        spw_stats_add(w, 0, SPW_C_COPY_HTOD, (uint64_t)i);
    double t1 = now_ns();
    for (int i = 0; i < n; i++) {
        spw_stats_alloc(w, 0, 64);
        spw_stats_free(w, 0, 64);
    }
    double t2 = now_ns();
    double add = (t1 - t0) / n, pair = (t2 - t1) / n;
    printf("stats update cost: add %.1f ns, alloc+free %.1f ns (uncontended)\n", add, pair);
    ck_assert_msg(add < 200 && pair < 1000, "updates too slow: %.1f / %.1f ns", add, pair);
    spw_stats_close(w);
}
END_TEST

START_TEST(normal_exit_removes_segment)
{
    pid_t c = fork();
    if (c == 0) {
        struct spw_stats_params p = {.device_count = 1};
        struct spw_stats_writer *w;
        char err[256];
        _exit(spw_stats_open(&w, &p, err, sizeof err) == 0 && segdir_count() == 1 ? 0 : 3) ;
    }
    int st;
    waitpid(c, &st, 0);
    /* _exit skips atexit: the segment must still be there, then exit() does remove. */
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    ck_assert_int_eq(segdir_count(), 1);
    segdir_teardown();
    segdir_setup();
    c = fork();
    if (c == 0) {
        struct spw_stats_params p = {.device_count = 1};
        struct spw_stats_writer *w;
        char err[256];
        exit(spw_stats_open(&w, &p, err, sizeof err) == 0 && segdir_count() == 1 ? 0 : 3);
    }
    waitpid(c, &st, 0);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    ck_assert_int_eq(segdir_count(), 0);
}
END_TEST

static void note_count(void *ctx, const char *name, const char *why)
{
    (void)name;
    (void)why;
    ++*(int *)ctx;
}

START_TEST(kill_9_leaves_segment_next_reader_removes)
{
    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    pid_t c = fork();
    if (c == 0) {
        struct spw_stats_params p = {.device_count = 1};
        struct spw_stats_writer *w;
        char err[256];
        if (spw_stats_open(&w, &p, err, sizeof err) != 0)
            _exit(3);
        spw_stats_alloc(w, 0, 123);
        if (write(pfd[1], "x", 1) != 1)
            _exit(4);
        for (;;)
            pause();
    }
    char ch;
    ck_assert_int_eq(read(pfd[0], &ch, 1), 1);
    struct spw_stats_list list;
    char why[256];
    ck_assert_int_eq(spw_stats_scan(NULL, SPW_SCAN_REMOVE_DEAD, &list, NULL, NULL, why, sizeof why), 0);
    ck_assert_uint_eq(list.n, 1); /* alive: listed, not removed */
    ck_assert_int_eq(list.items[0].pid, c);
    ck_assert_uint_eq(list.items[0].c[0][SPW_C_IN_USE], 123);
    spw_stats_list_free(&list);
    kill(c, SIGKILL);
    waitpid(c, NULL, 0);
    ck_assert_int_eq(segdir_count(), 1);
    int notes = 0;
    ck_assert_int_eq(spw_stats_scan(NULL, 0, &list, note_count, &notes, why, sizeof why), 0);
    ck_assert_uint_eq(list.n, 0); /* dead: not listed */
    ck_assert_uint_eq(list.removed, 0);
    ck_assert_int_eq(segdir_count(), 1); /* not asked to remove */
    spw_stats_list_free(&list);
    ck_assert_int_eq(spw_stats_scan(NULL, SPW_SCAN_REMOVE_DEAD, &list, note_count, &notes, why, sizeof why), 0);
    ck_assert_uint_eq(list.n, 0);
    ck_assert_uint_eq(list.removed, 1);
    ck_assert_int_eq(notes, 2);
    ck_assert_int_eq(segdir_count(), 0);
    spw_stats_list_free(&list);
}
END_TEST

/* A writer killed while it rewrites its text leaves the seqlock odd for
 * good. While it lives the reader skips it; once it is dead the next reader
 * that may remove dead segments removes it, as after any kill -9. */
START_TEST(kill_9_mid_rewrite_next_reader_removes)
{
    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    pid_t c = fork();
    if (c == 0) {
        struct spw_stats_params p = {.device_count = 1, .config = "mem_limit=8G\n"};
        struct spw_stats_writer *w;
        char err[256];
        if (spw_stats_open(&w, &p, err, sizeof err) != 0)
            _exit(3);
        /* What spw_stats_set_config leaves when killed halfway. */
        atomic_fetch_add(&w->hdr->text_generation, 1);
        memset(w->hdr->config, 'x', 100);
        if (write(pfd[1], "x", 1) != 1)
            _exit(4);
        for (;;)
            pause();
    }
    char ch;
    ck_assert_int_eq(read(pfd[0], &ch, 1), 1);
    struct spw_stats_list list;
    char why[256];
    ck_assert_int_eq(spw_stats_scan(NULL, SPW_SCAN_REMOVE_DEAD, &list, NULL, NULL, why, sizeof why), 0);
    ck_assert_uint_eq(list.n, 0);       /* text unsettled: not listed */
    ck_assert_uint_eq(list.skipped, 1);
    ck_assert_uint_eq(list.removed, 0); /* alive: kept */
    spw_stats_list_free(&list);
    kill(c, SIGKILL);
    waitpid(c, NULL, 0);
    ck_assert_int_eq(segdir_count(), 1);
    ck_assert_int_eq(spw_stats_scan(NULL, SPW_SCAN_REMOVE_DEAD, &list, NULL, NULL, why, sizeof why), 0);
    ck_assert_uint_eq(list.n, 0);
    ck_assert_uint_eq(list.skipped, 0);
    ck_assert_uint_eq(list.removed, 1);
    ck_assert_int_eq(segdir_count(), 0);
    spw_stats_list_free(&list);
}
END_TEST

START_TEST(forked_child_neither_writes_nor_removes)
{
    struct spw_stats_writer *w = open_writer(1, NULL);
    spw_stats_add(w, 0, SPW_C_ALLOCS, 1);
    pid_t c = fork();
    if (c == 0) {
        spw_stats_add(w, 0, SPW_C_ALLOCS, 1000);
        exit(0); /* runs the inherited atexit hook */
    }
    int st;
    waitpid(c, &st, 0);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    ck_assert_int_eq(segdir_count(), 1);
    struct spw_stats_snapshot *s = malloc(sizeof *s);
    read_own(s);
    ck_assert_uint_eq(s->c[0][SPW_C_ALLOCS], 1);
    free(s);
    spw_stats_close(w);
}
END_TEST

static void plant(const char *name, const void *data, size_t len, mode_t mode)
{
    int dfd = open(segdir, O_RDONLY | O_DIRECTORY);
    int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC, mode);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
    close(fd);
    close(dfd);
}

START_TEST(stale_segment_with_our_pid_is_replaced)
{
    char name[64];
    snprintf(name, sizeof name, "spillway.%u.%d", (unsigned)geteuid(), (int)getpid());
    static char zeros[512];
    plant(name, zeros, sizeof zeros, 0600); /* a writer killed during initialisation */
    struct spw_stats_writer *w = open_writer(1, NULL);
    struct spw_stats_snapshot *s = malloc(sizeof *s);
    read_own(s);
    ck_assert_int_eq(s->pid, getpid());
    free(s);
    spw_stats_close(w);
}
END_TEST

/* exec keeps the pid and the start time but skips atexit: the new image's
 * writer must replace the segment the old image left. */
START_TEST(segment_left_before_exec_is_replaced)
{
    struct spw_stats_writer *w = open_writer(1, NULL);
    spw_stats_add(w, 0, SPW_C_ALLOCS, 77);
    size_t len = w->size;
    unsigned char *copy = malloc(len);
    memcpy(copy, w->hdr, len);
    spw_stats_close(w);
    char name[64];
    snprintf(name, sizeof name, "spillway.%u.%d", (unsigned)geteuid(), (int)getpid());
    plant(name, copy, len, 0600);
    free(copy);
    w = open_writer(1, NULL);
    struct spw_stats_snapshot *s = malloc(sizeof *s);
    read_own(s);
    ck_assert_uint_eq(s->c[0][SPW_C_ALLOCS], 0);
    free(s);
    /* But a second open of a segment this process holds is refused. */
    struct spw_stats_params p = {.device_count = 1};
    struct spw_stats_writer *w2 = NULL;
    char err[256] = "";
    ck_assert_int_eq(spw_stats_open(&w2, &p, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "File exists") != NULL, "%s", err);
    spw_stats_close(w);
}
END_TEST

START_TEST(live_segment_in_other_namespace_is_not_clobbered)
{
    struct spw_stats_writer *w = open_writer(1, NULL);
    w->hdr->pid_ns ^= 1; /* as if written from another pid namespace sharing the directory */
    struct spw_stats_params p = {.device_count = 1};
    struct spw_stats_writer *w2 = NULL;
    char err[256] = "";
    ck_assert_int_eq(spw_stats_open(&w2, &p, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "File exists") != NULL, "%s", err);
    ck_assert_int_eq(segdir_count(), 1);
    spw_stats_close(w);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("stats_segment");
    TCase *tc = tcase_create("writer");
    tcase_add_checked_fixture(tc, segdir_setup, segdir_teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, creates_private_file_named_for_uid_and_pid);
    tcase_add_test(tc, reader_sees_exactly_the_updates);
    tcase_add_test(tc, sub_clamps_at_zero_and_counts_underflow);
    tcase_add_test(tc, null_writer_and_bad_params);
    tcase_add_test(tc, concurrent_updates_are_exact);
    tcase_add_test(tc, update_cost);
    tcase_add_test(tc, normal_exit_removes_segment);
    tcase_add_test(tc, kill_9_leaves_segment_next_reader_removes);
    tcase_add_test(tc, kill_9_mid_rewrite_next_reader_removes);
    tcase_add_test(tc, forked_child_neither_writes_nor_removes);
    tcase_add_test(tc, stale_segment_with_our_pid_is_replaced);
    tcase_add_test(tc, segment_left_before_exec_is_replaced);
    tcase_add_test(tc, live_segment_in_other_namespace_is_not_clobbered);
    suite_add_tcase(s, tc);
    return s;
}
