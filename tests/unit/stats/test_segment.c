/* The writer: segment creation, counters as the reader sees them, removal at
 * exit and after kill -9, fork safety, and the cost of an update. */
#include "tests/unit/check_compat.h"
#include "tests/unit/stats/segdir.h"
#include "stats/dirlock.h"
#include "stats/procinfo.h"
#include "stats/reader.h"
#include "stats/writer.h"

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

static struct spw_stats_writer *open_writer_cmd(uint32_t ndev, const char *cmdline, const char *config)
{
    struct spw_stats_params p = {.dir = segdir, .device_count = ndev, .cmdline = cmdline, .config = config};
    struct spw_stats_writer *w = NULL;
    char err[256] = "";
    int rc = spw_stats_open(&w, &p, err, sizeof err);
    ck_assert_msg(rc == 0, "open failed: %s", err);
    return w;
}

static struct spw_stats_writer *open_writer(uint32_t ndev, const char *config)
{
    return open_writer_cmd(ndev, "python3 train.py --big", config);
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
    ck_assert_uint_eq(st.st_mode & 0777, 0400);
    ck_assert_uint_eq((uint64_t)st.st_size, spw_stats_total_size(2));
    /* Not for another writer (root's permissions aside): a truncation
     * would kill the program at its next update (SIGBUS). */
    if (geteuid() != 0) {
        ck_assert_int_eq(open(want, O_WRONLY), -1);
        ck_assert_int_eq(errno, EACCES);
        ck_assert_int_eq(truncate(want, 100), -1);
    }
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
    spw_stats_alloc(w, 1, 0, 1000, 1000);
    spw_stats_alloc(w, 1, 1, 5000, 6000);
    spw_stats_free(w, 1, 1, 1000);
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

/* A config longer than the field (options take 4095-byte values: one long
 * SPILLWAY_STATS_DIR does it) is cut after a whole entry and marked, so a
 * reader says entries are missing instead of ending inside a path; one
 * that fits is neither cut nor marked. */
START_TEST(config_too_long_is_cut_at_an_entry_and_marked)
{
    static char config[3 * SPW_STATS_CONFIG_LEN];
    size_t n = (size_t)snprintf(config, sizeof config, "device.0.limit=8589934592\nSPILLWAY_STATS_DIR=");
    memset(config + n, 'd', 3000);
    snprintf(config + n + 3000, sizeof config - n - 3000, "\nSPILLWAY_LOG=warn\n");
    struct spw_stats_writer *w = open_writer(1, config);
    struct spw_stats_snapshot *s = malloc(sizeof *s);
    read_own(s);
    ck_assert(s->config_truncated);
    ck_assert_str_eq(s->config, "device.0.limit=8589934592\n" SPW_STATS_CONFIG_CUT);
    /* Cut at the last whole entry that leaves room for the mark. */
    memset(config, 'a', SPW_STATS_CONFIG_LEN - 20);
    memcpy(config, "k=", 2);
    config[SPW_STATS_CONFIG_LEN - 20] = '\n';
    snprintf(config + SPW_STATS_CONFIG_LEN - 19, 64, "short=1\nlonger=123456789\n");
    spw_stats_set_config(w, config);
    read_own(s);
    ck_assert(s->config_truncated);
    ck_assert_uint_eq(strlen(s->config), SPW_STATS_CONFIG_LEN - 19 + strlen(SPW_STATS_CONFIG_CUT));
    ck_assert_int_eq(memcmp(s->config, config, SPW_STATS_CONFIG_LEN - 19), 0);
    /* The longest that fits: whole, unmarked. */
    memset(config, 'b', SPW_STATS_CONFIG_LEN - 2);
    config[SPW_STATS_CONFIG_LEN - 2] = '\n';
    config[SPW_STATS_CONFIG_LEN - 1] = '\0';
    spw_stats_set_config(w, config);
    read_own(s);
    ck_assert(!s->config_truncated);
    ck_assert_str_eq(s->config, config);
    free(s);
    spw_stats_close(w);
}
END_TEST

/* The segment's command line as the reader gives it, for a writer given
 * cmdline. */
static void read_cmdline(const char *cmdline, struct spw_stats_snapshot *s)
{
    struct spw_stats_writer *w = open_writer_cmd(1, cmdline, NULL);
    read_own(s);
    spw_stats_close(w);
}

/* A command line longer than the field (a long argument; /proc/self/cmdline
 * has no limit of ours) was cut at its 1023rd byte, inside a character as
 * often as not, with nothing to say so: it is cut before a character and
 * marked, and the reader says so; one that fits, or a short one that ends
 * with the mark's text, is neither cut nor taken for cut. */
START_TEST(cmdline_too_long_is_cut_between_characters_and_marked)
{
    static char cmd[4 * SPW_STATS_CMDLINE_LEN];
    const size_t mark = strlen(SPW_STATS_CMDLINE_CUT), room = SPW_STATS_CMDLINE_LEN - 1 - mark;
    struct spw_stats_snapshot *s = malloc(sizeof *s);
    /* ASCII: as much as leaves room for the mark. */
    memset(cmd, 'a', 2000);
    cmd[2000] = '\0';
    read_cmdline(cmd, s);
    ck_assert(s->cmdline_truncated);
    ck_assert_uint_eq(strlen(s->cmdline), SPW_STATS_CMDLINE_LEN - 1);
    ck_assert_int_eq(memcmp(s->cmdline, cmd, room), 0);
    ck_assert_str_eq(s->cmdline + room, SPW_STATS_CMDLINE_CUT);
    /* Two-byte characters (é), the cut falling on the second byte of one:
     * the whole character goes. */
    size_t n = 0;
    while (n < 1200)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, "\xc3\xa9");
    ck_assert_uint_eq(room % 2, 1);
    read_cmdline(cmd, s);
    ck_assert(s->cmdline_truncated);
    ck_assert_msg(!strchr(s->cmdline, '?'), "cut inside a character (the reader shows its bytes as ?): %s",
                  s->cmdline);
    ck_assert_uint_eq(strlen(s->cmdline), room - 1 + mark);
    ck_assert_int_eq(memcmp(s->cmdline, cmd, room - 1), 0);
    /* Four-byte characters (U+1F600) after two ASCII bytes, the cut on the
     * last byte of one: 3 bytes go, the most there can be. */
    n = (size_t)snprintf(cmd, sizeof cmd, "ab");
    while (n < 1200)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, "\xf0\x9f\x98\x80");
    ck_assert_uint_eq((room - 2) % 4, 3);
    read_cmdline(cmd, s);
    ck_assert(s->cmdline_truncated);
    ck_assert_msg(!strchr(s->cmdline, '?'), "cut inside a character (the reader shows its bytes as ?): %s",
                  s->cmdline);
    ck_assert_uint_eq(strlen(s->cmdline), SPW_STATS_CMDLINE_LEN - SPW_STATS_CMDLINE_CUT_SLACK);
    ck_assert_int_eq(memcmp(s->cmdline, cmd, room - 3), 0);
    ck_assert_str_eq(s->cmdline + room - 3, SPW_STATS_CMDLINE_CUT);
    /* The longest that fits: whole, unmarked. */
    memset(cmd, 'b', SPW_STATS_CMDLINE_LEN - 1);
    cmd[SPW_STATS_CMDLINE_LEN - 1] = '\0';
    read_cmdline(cmd, s);
    ck_assert(!s->cmdline_truncated);
    ck_assert_str_eq(s->cmdline, cmd);
    /* A short command that ends with the mark's text was not cut. */
    read_cmdline("echo " SPW_STATS_CMDLINE_CUT, s);
    ck_assert(!s->cmdline_truncated);
    ck_assert_str_eq(s->cmdline, "echo " SPW_STATS_CMDLINE_CUT);
    free(s);
}
END_TEST

/* A gauge the writer subtracts from never goes below zero: an underflow is
 * counted instead. For a laned counter the floor is its value (base and
 * lanes), not its base. (spw_stats_free cannot tell: the shim's own count
 * does, test_account.c.) */
START_TEST(sub_clamps_at_zero_and_counts_underflow)
{
    struct spw_stats_writer *w = open_writer(1, NULL);
    spw_stats_spill(w, 0, 100);
    spw_stats_fill(w, 0, 300);
    spw_stats_alloc(w, 0, 5, 100, 100);
    spw_stats_sub(w, 0, SPW_C_IN_USE, 60); /* the base is 0, the value 100 */
    ck_assert_uint_eq(spw_stats_get(w, 0, SPW_C_IN_USE), 40);
    ck_assert_uint_eq(spw_stats_get(w, 0, SPW_C_UNDERFLOWS), 1);
    spw_stats_sub(w, 0, SPW_C_IN_USE, 50);
    struct spw_stats_snapshot *s = malloc(sizeof *s);
    read_own(s);
    ck_assert_uint_eq(s->c[0][SPW_C_SPILLED], 0);
    ck_assert_uint_eq(s->c[0][SPW_C_IN_USE], 0);
    ck_assert_uint_eq(s->c[0][SPW_C_UNDERFLOWS], 2);
    free(s);
    spw_stats_close(w);
}
END_TEST

START_TEST(null_writer_and_bad_params)
{
    spw_stats_add(NULL, 0, SPW_C_ALLOCS, 1); /* stats off: no-op */
    spw_stats_alloc(NULL, 0, 0, 1, 1);
    spw_stats_free(NULL, 0, 0, 1);
    spw_stats_close(NULL);
    struct spw_stats_writer *w = (void *)1;
    char err[256] = "";
    struct spw_stats_params p = {.dir = segdir, .device_count = 0};
    ck_assert_int_eq(spw_stats_open(&w, &p, err, sizeof err), -1);
    ck_assert_ptr_null(w);
    ck_assert_msg(strstr(err, "device count 0") != NULL, "%s", err);
    p.device_count = SPW_STATS_MAX_DEVICES + 1;
    ck_assert_int_eq(spw_stats_open(&w, &p, err, sizeof err), -1);
    p.device_count = 1;
    p.dir = "/nonexistent/spillway";
    ck_assert_int_eq(spw_stats_open(&w, &p, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "/nonexistent/spillway") != NULL, "%s", err);
    p.dir = NULL; /* the caller names it: no default of its own */
    ck_assert_int_eq(spw_stats_open(&w, &p, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "cannot open directory") != NULL, "%s", err);
    ck_assert_int_eq(segdir_count(), 0);
}
END_TEST

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* Threads allocating and freeing through the writer as the shim does: each
 * in its lane (20 threads: some share one), the device total kept in one
 * atomic as the shim's count is and passed for the peak. Every round all
 * hold their blocks at once (a barrier), so the peak is known exactly.
 * Then two threads share a lane flat out, as threads past the 16th do. */
#define THREADS 20
#define ROUNDS 300
#define BLOCKS 8
static pthread_barrier_t round_barrier;
static _Atomic uint64_t shim_used;
struct hammer_arg {
    struct spw_stats_writer *w;
    unsigned lane;
    uint64_t size;
};

static void *hammer(void *arg)
{
    struct hammer_arg *a = arg;
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < BLOCKS; i++) {
            uint64_t now = atomic_fetch_add(&shim_used, a->size) + a->size;
            spw_stats_alloc(a->w, 0, a->lane, a->size, now);
            spw_stats_add(a->w, 0, SPW_C_COPY_DTOD, 5);
        }
        pthread_barrier_wait(&round_barrier);
        for (int i = 0; i < BLOCKS; i++) {
            atomic_fetch_sub(&shim_used, a->size);
            spw_stats_free(a->w, 0, a->lane, a->size);
        }
        pthread_barrier_wait(&round_barrier);
    }
    /* One block kept. */
    uint64_t now = atomic_fetch_add(&shim_used, a->size) + a->size;
    spw_stats_alloc(a->w, 0, a->lane, a->size, now);
    return NULL;
}

#define SHARED_PAIRS 500000
static void *share_lane(void *arg)
{
    struct spw_stats_writer *w = arg;
    pthread_barrier_wait(&round_barrier); /* both at once */
    for (int i = 0; i < SHARED_PAIRS; i++) {
        /* The total passed is below the peak already reached: no line in
         * common but the lane's. */
        spw_stats_alloc(w, 0, SPW_STATS_LANES - 1, 64, 64);
        spw_stats_free(w, 0, SPW_STATS_LANES - 1, 64);
    }
    return NULL;
}

START_TEST(threads_in_lanes_sum_exactly)
{
    struct spw_stats_writer *w = open_writer(1, NULL);
    pthread_t t[THREADS];
    struct hammer_arg args[THREADS];
    uint64_t kept = 0;
    ck_assert_int_eq(pthread_barrier_init(&round_barrier, NULL, THREADS), 0);
    double t0 = now_ns();
    for (unsigned i = 0; i < THREADS; i++) {
        args[i] = (struct hammer_arg){w, i, 4096 * (i + 1)};
        kept += args[i].size;
        ck_assert_int_eq(pthread_create(&t[i], NULL, hammer, &args[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("stats updates, %d threads in their lanes: %.1f ns of wall time per alloc+copy+free "
           "(barriers included)\n", THREADS, (now_ns() - t0) / (THREADS * ROUNDS * BLOCKS));
    pthread_barrier_destroy(&round_barrier);
    ck_assert_int_eq(pthread_barrier_init(&round_barrier, NULL, 2), 0);
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, share_lane, w), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&round_barrier);
    struct spw_stats_snapshot *s = malloc(sizeof *s);
    read_own(s);
    ck_assert_uint_eq(s->c[0][SPW_C_ALLOCS], THREADS * (ROUNDS * BLOCKS + 1) + 2 * SHARED_PAIRS);
    ck_assert_uint_eq(s->c[0][SPW_C_FREES], THREADS * ROUNDS * BLOCKS + 2 * SHARED_PAIRS);
    ck_assert_uint_eq(s->c[0][SPW_C_IN_USE], kept);
    ck_assert_uint_eq(s->c[0][SPW_C_PEAK], BLOCKS * kept);
    ck_assert_uint_eq(s->c[0][SPW_C_COPY_DTOD], 5ull * THREADS * ROUNDS * BLOCKS);
    ck_assert_uint_eq(s->c[0][SPW_C_UNDERFLOWS], 0);
    ck_assert_uint_eq(spw_stats_get(w, 0, SPW_C_IN_USE), kept);
    free(s);
    spw_stats_close(w);
}
END_TEST

struct lane_op {
    struct spw_stats_writer *w;
    unsigned lane;
    int allocs, frees;
};

static void *lane_ops(void *arg)
{
    struct lane_op *o = arg;
    for (int i = 0; i < o->allocs; i++) {
        uint64_t now = atomic_fetch_add(&shim_used, 1000) + 1000;
        spw_stats_alloc(o->w, 0, o->lane, 1000, now);
    }
    for (int i = 0; i < o->frees; i++) {
        atomic_fetch_sub(&shim_used, 1000);
        spw_stats_free(o->w, 0, o->lane, 1000);
    }
    return NULL;
}

static void run_on_thread(struct lane_op op)
{
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, lane_ops, &op), 0);
    pthread_join(t, NULL);
}

/* Memory one thread allocates and another frees: the freeing thread's lane
 * goes below zero (it wraps), and the sum is still exact. */
START_TEST(free_on_another_thread_sums_exactly)
{
    atomic_store(&shim_used, 0); /* the same process as the test before without Check's fork */
    struct spw_stats_writer *w = open_writer(1, NULL);
    run_on_thread((struct lane_op){w, 3, 5, 0});
    run_on_thread((struct lane_op){w, 7, 0, 3});
    uint64_t lane7 = atomic_load(spw_stats_lane(w, 0, SPW_L_IN_USE, 7));
    ck_assert_uint_eq(lane7, (uint64_t)0 - 3000); /* below zero, wrapped */
    struct spw_stats_snapshot *s = malloc(sizeof *s);
    read_own(s);
    ck_assert_uint_eq(s->c[0][SPW_C_IN_USE], 2000);
    ck_assert_uint_eq(s->c[0][SPW_C_PEAK], 5000);
    ck_assert_uint_eq(s->c[0][SPW_C_ALLOCS], 5);
    ck_assert_uint_eq(s->c[0][SPW_C_FREES], 3);
    run_on_thread((struct lane_op){w, 12, 0, 2});
    read_own(s);
    ck_assert_uint_eq(s->c[0][SPW_C_IN_USE], 0);
    ck_assert_uint_eq(s->c[0][SPW_C_FREES], 5);
    /* A base set at attach counts too: a free of what was counted before. */
    spw_stats_set(w, 0, SPW_C_IN_USE, 8000);
    uint64_t base = atomic_load(spw_stats_slot(w, 0, SPW_C_IN_USE));
    ck_assert_uint_eq(base, 8000);
    run_on_thread((struct lane_op){w, 1, 0, 2});
    read_own(s);
    ck_assert_uint_eq(s->c[0][SPW_C_IN_USE], 6000);
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
        spw_stats_alloc(w, 0, 1, 64, 64);
        spw_stats_free(w, 0, 1, 64);
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

static void plant(const char *name, const void *data, size_t len, mode_t mode)
{
    int dfd = open(segdir, O_RDONLY | O_DIRECTORY);
    int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC, mode);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
    close(fd);
    close(dfd);
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

/* w published under name qualified by our pid namespace, and the file at
 * name, someone else's, is still there with its len bytes. */
static void expect_qualified(const struct spw_stats_writer *w, const char *name, size_t len)
{
    char want[512];
    snprintf(want, sizeof want, "%s/%s.%llu", segdir, name, (unsigned long long)spw_proc_self_pid_ns());
    ck_assert_str_eq(spw_stats_path(w), want);
    struct stat st;
    char planted[512];
    snprintf(planted, sizeof planted, "%s/%s", segdir, name);
    ck_assert_int_eq(stat(planted, &st), 0);
    ck_assert_uint_eq((uint64_t)st.st_size, len);
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

Suite *test_suite(void)
{
    Suite *s = suite_create("stats_segment");
    TCase *tc = tcase_create("writer");
    tcase_add_checked_fixture(tc, segdir_setup, segdir_teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, creates_private_file_named_for_uid_and_pid);
    tcase_add_test(tc, reader_sees_exactly_the_updates);
    tcase_add_test(tc, config_too_long_is_cut_at_an_entry_and_marked);
    tcase_add_test(tc, cmdline_too_long_is_cut_between_characters_and_marked);
    tcase_add_test(tc, sub_clamps_at_zero_and_counts_underflow);
    tcase_add_test(tc, null_writer_and_bad_params);
    tcase_add_test(tc, threads_in_lanes_sum_exactly);
    tcase_add_test(tc, free_on_another_thread_sums_exactly);
    tcase_add_test(tc, update_cost);
    tcase_add_test(tc, normal_exit_removes_segment);
    tcase_add_test(tc, kill_9_leaves_segment_next_reader_removes);
    tcase_add_test(tc, kill_9_mid_rewrite_next_reader_removes);
    tcase_add_test(tc, zombie_owner_is_dead);
    tcase_add_test(tc, forked_child_neither_writes_nor_removes);
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
    suite_add_tcase(s, tc);
    return s;
}
