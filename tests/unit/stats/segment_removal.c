/* The writer's suite (test_segment.c): a segment removed at exit, and
 * after a kill -9 (a zombie owner included) by the next reader that may;
 * a forked child neither writes nor removes it. */
#include "tests/unit/stats/writer_rig.h"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

START_TEST(normal_exit_removes_segment)
{
    pid_t c = fork();
    if (c == 0) {
        struct spw_stats_params p = {.dir = segdir, .device_count = 1};
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
        struct spw_stats_params p = {.dir = segdir, .device_count = 1};
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
        struct spw_stats_params p = {.dir = segdir, .device_count = 1};
        struct spw_stats_writer *w;
        char err[256];
        if (spw_stats_open(&w, &p, err, sizeof err) != 0)
            _exit(3);
        spw_stats_alloc(w, 0, 0, 123, 123);
        if (write(pfd[1], "x", 1) != 1)
            _exit(4);
        for (;;)
            pause();
    }
    char ch;
    ck_assert_int_eq(read(pfd[0], &ch, 1), 1);
    struct spw_stats_list list;
    char why[256];
    ck_assert_int_eq(spw_stats_scan(segdir, SPW_SCAN_REMOVE_DEAD, &list, NULL, NULL, why, sizeof why), 0);
    ck_assert_uint_eq(list.n, 1); /* alive: listed, not removed */
    ck_assert_int_eq(list.items[0].pid, c);
    ck_assert_uint_eq(list.items[0].c[0][SPW_C_IN_USE], 123);
    spw_stats_list_free(&list);
    kill(c, SIGKILL);
    waitpid(c, NULL, 0);
    ck_assert_int_eq(segdir_count(), 1);
    int notes = 0;
    ck_assert_int_eq(spw_stats_scan(segdir, 0, &list, note_count, &notes, why, sizeof why), 0);
    ck_assert_uint_eq(list.n, 0); /* dead: not listed */
    ck_assert_uint_eq(list.removed, 0);
    ck_assert_int_eq(segdir_count(), 1); /* not asked to remove */
    spw_stats_list_free(&list);
    ck_assert_int_eq(spw_stats_scan(segdir, SPW_SCAN_REMOVE_DEAD, &list, note_count, &notes, why, sizeof why), 0);
    ck_assert_uint_eq(list.n, 0);
    ck_assert_uint_eq(list.removed, 1);
    ck_assert_int_eq(notes, 2);
    ck_assert_int_eq(segdir_count(), 0);
    spw_stats_list_free(&list);
}
END_TEST

/* A child that opens a writer, says so on fd, then keeps running: in its
 * main thread (pause), or, with leader_exits, in a second thread only
 * (its main thread has called pthread_exit: /proc shows the leader as a
 * zombie while the process lives). */
static void *sleeper(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

static pid_t writer_child(int fd, bool leader_exits)
{
    pid_t c = fork();
    if (c != 0)
        return c;
    struct spw_stats_params p = {.dir = segdir, .device_count = 1};
    struct spw_stats_writer *w;
    char err[256];
    if (spw_stats_open(&w, &p, err, sizeof err) != 0)
        _exit(3);
    pthread_t t;
    if (leader_exits && pthread_create(&t, NULL, sleeper, NULL) != 0)
        _exit(5);
    if (write(fd, "x", 1) != 1)
        _exit(4);
    if (leader_exits)
        pthread_exit(NULL);
    for (;;)
        pause();
}

/* The state letter of pid in /proc (field 3 of its stat), or 0. */
static char proc_state(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p[2] : 0;
}

/* The Threads: count /proc gives pid (-1: none). */
static long proc_threads(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long n = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "Threads:", 8) == 0)
            n = strtol(line + 8, NULL, 10);
    if (f)
        fclose(f);
    return n;
}

/* A killed process shows Z as soon as its leader has exited, while its
 * other threads (a sanitizer's, a CUDA program's) may still be going: the
 * reader takes it for a leader that only called pthread_exit until they
 * are gone (the next scan removes it). The test waits for that. */
static void wait_all_threads_gone(pid_t pid)
{
    for (int i = 0; i < 200 && proc_threads(pid) > 1; i++)
        usleep(10000);
    ck_assert_int_le(proc_threads(pid), 1);
}

static void wait_state(pid_t pid, char want)
{
    for (int i = 0; i < 200 && proc_state(pid) != want; i++)
        usleep(10000);
    ck_assert_int_eq(proc_state(pid), want);
}

/* A writer killed whose parent has not reaped it yet is a zombie: dead,
 * though /proc still has its pid and start time. Its segment is removed
 * (it was listed as a live process until the parent reaped it). A process
 * whose main thread alone has exited is alive. */
START_TEST(zombie_owner_is_dead)
{
    int pfd[2];
    char ch, why[256];
    ck_assert_int_eq(pipe(pfd), 0);
    pid_t c = writer_child(pfd[1], false);
    ck_assert_int_eq(read(pfd[0], &ch, 1), 1);
    kill(c, SIGKILL);
    wait_state(c, 'Z');
    wait_all_threads_gone(c);
    struct spw_stats_list list;
    ck_assert_int_eq(spw_stats_scan(segdir, SPW_SCAN_REMOVE_DEAD, &list, NULL, NULL, why, sizeof why), 0);
    ck_assert_uint_eq(list.n, 0);
    ck_assert_uint_eq(list.removed, 1);
    spw_stats_list_free(&list);
    ck_assert_int_eq(segdir_count(), 0);
    waitpid(c, NULL, 0);

    pid_t t = writer_child(pfd[1], true);
    ck_assert_int_eq(read(pfd[0], &ch, 1), 1);
    wait_state(t, 'Z');
    ck_assert_int_eq(spw_stats_scan(segdir, SPW_SCAN_REMOVE_DEAD, &list, NULL, NULL, why, sizeof why), 0);
    ck_assert_uint_eq(list.n, 1);
    ck_assert_int_eq(list.items[0].pid, t);
    ck_assert_int_eq(list.items[0].liveness, SPW_ALIVE);
    spw_stats_list_free(&list);
    kill(t, SIGKILL);
    waitpid(t, NULL, 0);
    close(pfd[0]);
    close(pfd[1]);
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
        struct spw_stats_params p = {.dir = segdir, .device_count = 1, .config = "mem_limit=8G\n"};
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
    ck_assert_int_eq(spw_stats_scan(segdir, SPW_SCAN_REMOVE_DEAD, &list, NULL, NULL, why, sizeof why), 0);
    ck_assert_uint_eq(list.n, 0);       /* text unsettled: not listed */
    ck_assert_uint_eq(list.skipped, 1);
    ck_assert_uint_eq(list.removed, 0); /* alive: kept */
    spw_stats_list_free(&list);
    kill(c, SIGKILL);
    waitpid(c, NULL, 0);
    ck_assert_int_eq(segdir_count(), 1);
    ck_assert_int_eq(spw_stats_scan(segdir, SPW_SCAN_REMOVE_DEAD, &list, NULL, NULL, why, sizeof why), 0);
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

void segment_removal_tests(TCase *tc)
{
    tcase_add_test(tc, normal_exit_removes_segment);
    tcase_add_test(tc, kill_9_leaves_segment_next_reader_removes);
    tcase_add_test(tc, kill_9_mid_rewrite_next_reader_removes);
    tcase_add_test(tc, zombie_owner_is_dead);
    tcase_add_test(tc, forked_child_neither_writes_nor_removes);
}
