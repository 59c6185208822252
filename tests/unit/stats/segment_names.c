/* The writer's suite (test_segment.c): whose a segment's name is. A stale
 * segment at it is replaced under the directory's lock, a name taken
 * meanwhile or held by a writer of another pid namespace sends the writer
 * to the qualified name, and the lock never stops a writer for good. */
#include "tests/unit/stats/writer_rig.h"
#include "stats/dirlock.h"
#include "stats/procinfo.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

/* This program's unlinkat stands for libc's (the stats objects are linked
 * in), so that a test can act right after the writer's unlink of a stale
 * file: once, when it has set a probe. */
static void (*unlink_probe)(int dirfd, const char *name);

int unlinkat(int dirfd, const char *name, int flags)
{
    int rc = (int)syscall(SYS_unlinkat, dirfd, name, flags), e = errno;
    void (*probe)(int, const char *) = unlink_probe;
    unlink_probe = NULL;
    if (probe)
        probe(dirfd, name);
    errno = e;
    return rc;
}

/* Sets the modification time of segdir/name seconds into the past. */
static void age(const char *name, long seconds)
{
    int dfd = open(segdir, O_RDONLY | O_DIRECTORY);
    struct timespec now, t[2];
    clock_gettime(CLOCK_REALTIME, &now);
    t[0] = t[1] = (struct timespec){.tv_sec = now.tv_sec - seconds};
    ck_assert_int_eq(utimensat(dfd, name, t, 0), 0);
    close(dfd);
}

static int lock_seen_at_unlink = -1;

static void note_lock(int dirfd, const char *name)
{
    (void)dirfd, (void)name;
    lock_seen_at_unlink = segdir_locked();
}

/* Plants a file of a writer killed during initialisation at this
 * process's segment name, old enough to be judged stale. */
static void plant_abandoned(char *name, size_t cap)
{
    snprintf(name, cap, "spillway.%u.%d", (unsigned)geteuid(), (int)getpid());
    static char zeros[512];
    plant(name, zeros, sizeof zeros, 0600);
    age(name, SPW_STATS_INIT_GRACE_S + 5);
}

/* A writer opened over an abandoned file at its name, with probe called
 * right after the writer's unlink of it. */
static struct spw_stats_writer *open_over_abandoned(char *name, size_t cap, void (*probe)(int, const char *))
{
    plant_abandoned(name, cap);
    unlink_probe = probe;
    struct spw_stats_writer *w = open_writer(1, NULL);
    unlink_probe = NULL;
    return w;
}

/* Replaced, and under the directory's lock: another writer or a reader
 * that judged the same file is kept from unlinking the new one. */
START_TEST(stale_segment_with_our_pid_is_replaced)
{
    char name[64];
    struct spw_stats_writer *w = open_over_abandoned(name, sizeof name, note_lock);
    ck_assert_int_eq(lock_seen_at_unlink, 1);
    ck_assert_int_eq(segdir_locked(), 0);
    struct spw_stats_snapshot *s = malloc(sizeof *s);
    read_own(s);
    ck_assert_int_eq(s->pid, getpid());
    free(s);
    spw_stats_close(w);
}
END_TEST

/* A writer that keeps no directory lock (another version) may take the
 * name between our unlink of the stale file and our create: its file is
 * left to it, and ours gets the qualified name (this writer ran without
 * stats). */
static void take_the_name(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL, 0600);
    ck_assert_int_ge(fd, 0);
    close(fd);
}

START_TEST(a_name_taken_after_our_unlink_sends_the_writer_to_the_other)
{
    char name[64];
    struct spw_stats_writer *w = open_over_abandoned(name, sizeof name, take_the_name);
    expect_qualified(w, name, 0);
    spw_stats_close(w);
}
END_TEST

static void *open_on_thread(void *arg)
{
    *(struct spw_stats_writer **)arg = open_writer(1, NULL);
    return NULL;
}

/* A writer creates its file only once the directory's lock is free. What
 * it shows is decided only while the writer's wait cannot have run out
 * (it started after t0): a round the machine's load stretched past that is
 * tried again. */
START_TEST(a_writer_waits_for_the_directory_lock)
{
    bool decided = false;
    for (int round = 0; round < 10 && !decided; round++) {
        int lock = segdir_lock();
        struct spw_stats_writer *w = NULL;
        pthread_t t;
        double t0 = now_ns();
        ck_assert_int_eq(pthread_create(&t, NULL, open_on_thread, &w), 0);
        nanosleep(&(struct timespec){.tv_nsec = 20000000}, NULL);
        int seen = segdir_count();
        decided = (now_ns() - t0) / 1e6 < SPW_STATS_DIRLOCK_WAIT_MS;
        if (decided)
            ck_assert_int_eq(seen, 0);
        close(lock);
        pthread_join(t, NULL);
        ck_assert_ptr_nonnull(w);
        ck_assert_int_eq(segdir_count(), 1);
        spw_stats_close(w);
    }
    ck_assert_msg(decided, "every round outlasted the writer's wait");
}
END_TEST

/* A child forked while the lock was held does not keep it. */
START_TEST(a_child_forked_under_the_lock_does_not_keep_it)
{
    int dfd = open(segdir, O_RDONLY | O_DIRECTORY);
    int lock = spw_stats_dir_lock(dfd, 0);
    ck_assert_int_ge(lock, 0);
    ck_assert_int_eq(segdir_locked(), 1);
    pid_t c = fork();
    if (c == 0) {
        pause();
        _exit(0);
    }
    spw_stats_dir_unlock(lock);
    int held = segdir_locked();
    kill(c, SIGKILL);
    waitpid(c, NULL, 0);
    close(dfd);
    ck_assert_int_eq(held, 0);
}
END_TEST

/* Nor does a lock held past its wait (a stopped or hostile holder) keep a
 * program from starting, or from its stats. */
START_TEST(a_lock_held_past_its_wait_does_not_stop_the_writer)
{
    int lock = segdir_lock();
    double t0 = now_ns();
    struct spw_stats_writer *w = open_writer(1, NULL);
    double waited_ms = (now_ns() - t0) / 1e6;
    ck_assert_msg(waited_ms >= SPW_STATS_DIRLOCK_WAIT_MS, "waited %.0f ms", waited_ms);
    ck_assert_int_eq(segdir_count(), 1);
    close(lock);
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
    struct spw_stats_params p = {.dir = segdir, .device_count = 1};
    struct spw_stats_writer *w2 = NULL;
    char err[256] = "";
    ck_assert_int_eq(spw_stats_open(&w2, &p, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "File exists") != NULL, "%s", err);
    spw_stats_close(w);
}
END_TEST

/* Pods sharing a node's directory each have a pid 1: a live writer of
 * another pid namespace keeps its name, and this writer publishes under
 * the name qualified by its own namespace (it was refused, and the second
 * pod ran without stats). */
START_TEST(live_segment_in_other_namespace_is_not_clobbered)
{
    struct spw_stats_writer *w = open_writer(1, NULL);
    w->hdr->pid_ns ^= 1; /* as if written from another pid namespace sharing the directory */
    struct spw_stats_params p = {.dir = segdir, .device_count = 1};
    struct spw_stats_writer *w2 = NULL;
    char err[256] = "", want[512];
    ck_assert_msg(spw_stats_open(&w2, &p, err, sizeof err) == 0, "%s", err);
    snprintf(want, sizeof want, "%s.%llu", spw_stats_path(w), (unsigned long long)spw_proc_self_pid_ns());
    ck_assert_str_eq(spw_stats_path(w2), want);
    ck_assert_int_eq(segdir_count(), 2);
    struct spw_stats_snapshot *s = malloc(sizeof *s);
    int dfd = open(segdir, O_RDONLY | O_DIRECTORY), removed = 0;
    ck_assert_int_eq(spw_stats_read_at(dfd, strrchr(want, '/') + 1, 0, s, &removed, err, sizeof err),
                     SPW_READ_OK);
    ck_assert_int_eq(s->pid, getpid());
    ck_assert_int_eq(s->liveness, SPW_ALIVE);
    close(dfd);
    free(s);
    /* A third writer finds both names taken. */
    struct spw_stats_writer *w3 = NULL;
    ck_assert_int_eq(spw_stats_open(&w3, &p, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "File exists") != NULL, "%s", err);
    spw_stats_close(w2);
    spw_stats_close(w);
    ck_assert_int_eq(segdir_count(), 0);
}
END_TEST

/* Plants len bytes of data at this process's segment name, as another
 * namespace's writer in the middle of its initialisation would have it;
 * a writer opened then must leave that file as it is and publish under
 * the name qualified by its own namespace. */
static void expect_left_to_its_writer(const void *data, size_t len)
{
    char name[64];
    snprintf(name, sizeof name, "spillway.%u.%d", (unsigned)geteuid(), (int)getpid());
    plant(name, data, len, 0600);
    struct spw_stats_writer *w = open_writer(1, NULL);
    expect_qualified(w, name, len);
    spw_stats_close(w);
}

/* A writer of another pid namespace still initialising its segment (no
 * magic yet, its namespace already written) is not taken for one killed
 * during initialisation: its file stays, ours gets the qualified name. */
START_TEST(initialising_segment_of_other_namespace_is_not_removed)
{
    static struct spw_stats_header h;
    h.pid_ns = spw_proc_self_pid_ns() ^ 1;
    expect_left_to_its_writer(&h, sizeof h);
}
END_TEST

/* A writer of another pid namespace that has just created its file and
 * not yet written its namespace (an empty file) is not taken for one killed
 * during initialisation: two pods starting together each published, but the
 * later one unlinked the earlier one's file, whose writer then published
 * into a file no reader could find. */
START_TEST(just_created_segment_of_other_namespace_is_not_removed)
{
    expect_left_to_its_writer("", 0);
}
END_TEST

/* The search by pid namespace (a pod's writer seen from the node's
 * exporter): one pass over /proc serves a whole scan however many owners
 * are gone, and a process started since the pass is still found. */
START_TEST(namespace_search_reads_proc_once_per_scan)
{
    uint64_t ns = spw_proc_self_pid_ns(), start;
    ck_assert_int_eq(spw_proc_start_time(getpid(), &start), 0);
    struct spw_proc_index ix = {0};
    pid_t local = 0;
    ck_assert_int_eq(spw_proc_find_in_ns(&ix, ns, getpid(), start, &local), SPW_ALIVE);
    ck_assert_int_eq(local, getpid());
    unsigned passes = ix.passes;
    ck_assert_uint_ge(passes, 1);
    for (int i = 0; i < 100; i++)
        ck_assert_int_ne(spw_proc_find_in_ns(&ix, ns, 40000 + i, 1 + (uint64_t)i, &local), SPW_ALIVE);
    ck_assert_uint_eq(ix.passes, passes);
    pid_t c = fork();
    if (c == 0) {
        pause();
        _exit(0);
    }
    uint64_t cs;
    ck_assert_int_eq(spw_proc_start_time(c, &cs), 0);
    ck_assert_int_eq(spw_proc_find_in_ns(&ix, ns, c, cs, &local), SPW_ALIVE);
    ck_assert_int_eq(local, c);
    ck_assert_uint_eq(ix.passes, passes + 1);
    kill(c, SIGKILL);
    waitpid(c, NULL, 0);
    spw_proc_index_free(&ix);
    /* Without an index, each lookup makes a pass of its own. */
    ck_assert_int_eq(spw_proc_find_in_ns(NULL, ns, getpid(), start, &local), SPW_ALIVE);
}
END_TEST

void segment_name_tests(TCase *tc)
{
    tcase_add_test(tc, stale_segment_with_our_pid_is_replaced);
    tcase_add_test(tc, a_name_taken_after_our_unlink_sends_the_writer_to_the_other);
    tcase_add_test(tc, a_writer_waits_for_the_directory_lock);
    tcase_add_test(tc, a_lock_held_past_its_wait_does_not_stop_the_writer);
    tcase_add_test(tc, a_child_forked_under_the_lock_does_not_keep_it);
    tcase_add_test(tc, segment_left_before_exec_is_replaced);
    tcase_add_test(tc, live_segment_in_other_namespace_is_not_clobbered);
    tcase_add_test(tc, initialising_segment_of_other_namespace_is_not_removed);
    tcase_add_test(tc, just_created_segment_of_other_namespace_is_not_removed);
    tcase_add_test(tc, namespace_search_reads_proc_once_per_scan);
}
