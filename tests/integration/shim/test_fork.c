/* fork() of a program under spillway (issue 12 item 9), against fakecuda,
 * whose driver refuses every call in a child forked after cuInit, as
 * NVIDIA's does (tests/unit/driver/test_fork.c). A process with a spilling
 * pool (a 64 MiB limit, more than that allocated, its syncer and host-page
 * reserve threads running) forks; its children exit through exit()
 * (spillway's atexit and the driver's teardown run), or call CUDA and must
 * get the driver's error at once, or exec a CUDA program under spillway;
 * meanwhile the parent allocates, copies, launches and syncs, alone or from
 * several threads that keep spilling. Both sides must finish, the parent's
 * data stay exact, and its stats segment stay its own: still there, and
 * equal to the counters the parent keeps in-process.
 *
 * Run by fork.sh, one case per process under a timeout (SPW_TEST_FORK_ONLY).
 * Children report by exit status only (a Check assertion in a child would
 * report into the parent's test) and carry an alarm; the parent gives each
 * a deadline and fails the test, killing it, when it is still running: a
 * deadlock. */
#include "tests/integration/shim/rig.h"

#include "stats/reader.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LIMIT (64 * MiB)
#define NBUF 5 /* 5 x 16 MiB: past the limit, so some always live on the host */
#define BUF (16 * MiB)
#define CHILD_ALARM_S 10 /* a child still running after this dies of SIGALRM */
#define CHILD_WAIT_S 20  /* the parent's deadline for a child */
#define CROWD_START_S 30 /* the busy threads' deadline for their first rounds */

extern char **environ;

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- the parent's CUDA ------------------------------------------------- */

static CUcontext ctx;

static void setup(void)
{
    ctx = rig_setup(0);
}

static CUresult launch_step(CUfunction f, CUdeviceptr p, size_t bytes, unsigned k, CUstream s)
{
    size_t n = bytes / 4;
    void *args[] = {&p, &n, &k};
    return cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
}

/* Buffers with a known content: what the device holds must equal want. */
struct data {
    CUfunction step;
    CUstream s;
    CUdeviceptr buf[NBUF];
    uint32_t *want[NBUF];
};

static void data_new(struct data *d)
{
    d->step = rig_kernel("step_u32");
    CU_OK(cuStreamCreate(&d->s, CU_STREAM_NON_BLOCKING));
    for (unsigned b = 0; b < NBUF; b++) {
        d->want[b] = malloc(BUF);
        ck_assert_ptr_nonnull(d->want[b]);
        for (size_t i = 0; i < BUF / 4; i++)
            d->want[b][i] = rig_pattern(i, b);
        CU_OK(cuMemAlloc(&d->buf[b], BUF));
        CU_OK(cuMemcpyHtoD(d->buf[b], d->want[b], BUF));
    }
    CU_OK(cuCtxSynchronize());
}

static void data_check(const struct data *d)
{
    CU_OK(cuStreamSynchronize(d->s));
    for (unsigned b = 0; b < NBUF; b++)
        rig_expect_words(d->buf[b], d->want[b], BUF, "a parent buffer");
}

/* One round of the parent's own work: a launch on a buffer that may live
 * on the host (it is filled back, spilling another), a temporary buffer
 * written, read back and freed, and a device sync now and then. */
static void parent_round(struct data *d, unsigned round)
{
    unsigned b = round % NBUF;
    CU_OK(launch_step(d->step, d->buf[b], BUF, round, d->s));
    for (size_t i = 0; i < BUF / 4; i++)
        d->want[b][i] = rig_step(d->want[b][i], round);
    CUdeviceptr t;
    uint32_t words[256];
    for (unsigned i = 0; i < 256; i++)
        words[i] = rig_pattern(i, 1000 + round);
    CU_OK(cuMemAlloc(&t, 8 * MiB));
    CU_OK(cuMemcpyHtoD(t + 4 * MiB, words, sizeof words));
    rig_expect_words(t + 4 * MiB, words, sizeof words, "a temporary buffer");
    CU_OK(cuMemFree(t));
    if (round % 4 == 3)
        CU_OK(cuCtxSynchronize());
    else
        CU_OK(cuStreamSynchronize(d->s));
}

/* ---- the stats segment ------------------------------------------------- */

static int stats_dir(void)
{
    const char *dir = getenv("SPILLWAY_STATS_DIR");
    ck_assert_msg(dir != NULL, "run me through fork.sh");
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    ck_assert_int_ge(fd, 0);
    return fd;
}

static void segment_name(pid_t pid, char *name, size_t len)
{
    snprintf(name, len, SPW_STATS_NAME_PREFIX "%u.%d", (unsigned)geteuid(), (int)pid);
}

/* The parent's segment, read now: it must still be there and be ours. */
static struct spw_stats_snapshot *segment(void)
{
    static struct spw_stats_snapshot snap;
    char name[64], why[256];
    segment_name(getpid(), name, sizeof name);
    int fd = stats_dir(), removed = 0;
    enum spw_read_result r = spw_stats_read_at(fd, name, 0, &snap, &removed, why, sizeof why);
    close(fd);
    ck_assert_msg(r == SPW_READ_OK, "the parent's segment %s: %d %s", name, r, why);
    ck_assert_int_eq(snap.pid, getpid());
    return &snap;
}

/* With the parent quiet: the segment says what the parent counts
 * in-process, so no child wrote into it, and no child left one of its own
 * (a forked child publishes nothing; an exec'd one removes its own). */
static void expect_stats_intact(const pid_t *children, unsigned n)
{
    struct spillway_counters c = rig_counters(0);
    const uint64_t *s = segment()->c[0];
    ck_assert_uint_eq(s[SPW_C_LIMIT], LIMIT);
    ck_assert_uint_eq(s[SPW_C_IN_USE], c.used);
    /* The published peak is the last of racing stores by several threads:
     * it may lag the in-process one, never pass it. */
    ck_assert_uint_le(s[SPW_C_PEAK], c.peak);
    ck_assert_uint_ge(s[SPW_C_PEAK], s[SPW_C_IN_USE]);
    ck_assert_uint_eq(s[SPW_C_ALLOCS], c.allocs);
    ck_assert_uint_eq(s[SPW_C_FREES], c.frees);
    ck_assert_uint_gt(s[SPW_C_SPILL_EVENTS], 0);
    int fd = stats_dir();
    for (unsigned i = 0; i < n; i++) {
        char name[64];
        segment_name(children[i], name, sizeof name);
        ck_assert_msg(faccessat(fd, name, F_OK, 0) != 0, "child %d left a segment",
                      (int)children[i]);
    }
    close(fd);
}

/* ---- a fresh CUDA program ---------------------------------------------------- */

/* What a program run from a fork does on its own: initialize, allocate
 * past the limit (a pool of its own, spilling), check every byte and its
 * own stats segment. Returns 0, or the step that failed (an exit status:
 * no Check assertion outside the test's own process). */
static int fresh_cuda_program(void)
{
    CUcontext c;
    CUdeviceptr p[NBUF];
    uint32_t *w = malloc(BUF), *back = malloc(BUF);
    if (!w || !back || !dlsym(RTLD_DEFAULT, "spillway_get_counters"))
        return 60; /* spillway must be there: LD_PRELOAD carried */
    if (cuInit(0) || cuDevicePrimaryCtxRetain(&c, 0) || cuCtxSetCurrent(c))
        return 61;
    for (unsigned b = 0; b < NBUF; b++) {
        for (size_t i = 0; i < BUF / 4; i++)
            w[i] = rig_pattern(i, 50 + b);
        if (cuMemAlloc(&p[b], BUF) || cuMemcpyHtoD(p[b], w, BUF))
            return 62;
    }
    for (unsigned b = 0; b < NBUF; b++) {
        for (size_t i = 0; i < BUF / 4; i++)
            w[i] = rig_pattern(i, 50 + b);
        if (cuMemcpyDtoH(back, p[b], BUF) || memcmp(w, back, BUF) != 0)
            return 63;
    }
    struct spw_stats_snapshot snap;
    char name[64], why[256];
    const char *dir = getenv("SPILLWAY_STATS_DIR");
    int removed = 0, fd = dir ? open(dir, O_RDONLY | O_DIRECTORY) : -1;
    snprintf(name, sizeof name, SPW_STATS_NAME_PREFIX "%u.%d", (unsigned)geteuid(), (int)getpid());
    if (fd < 0 || spw_stats_read_at(fd, name, 0, &snap, &removed, why, sizeof why) != SPW_READ_OK ||
        snap.c[0][SPW_C_SPILL_EVENTS] == 0)
        return 64;
    close(fd);
    return 0;
}

/* ---- children ------------------------------------------------------------ */

enum child_kind {
    CHILD_EXIT,  /* exit(0) at once: atexit handlers and destructors run */
    CHILD_CUDA,  /* CUDA calls on the parent's pool: each refused, quickly */
    CHILD_EXEC,  /* exec a CUDA program (this one, fresh) under spillway */
};

/* In a child: call must answer CUDA_ERROR_NOT_INITIALIZED (the driver's
 * answer in a forked child) within a second, else exit with code. */
#define REFUSED(call, code)                                                          \
    do {                                                                             \
        uint64_t t0_ = now_ms();                                                     \
        CUresult r_ = (call);                                                        \
        if (r_ != CUDA_ERROR_NOT_INITIALIZED || now_ms() - t0_ > 1000) {             \
            fprintf(stderr, "fork child: %s answered %d after %llu ms\n", #call, (int)r_, \
                    (unsigned long long)(now_ms() - t0_));                            \
            _exit(code);                                                             \
        }                                                                            \
    } while (0)

static CUmemAllocationProp device_page_prop(void)
{
    CUmemAllocationProp p;
    memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = 0;
    return p;
}

/* The driver's own function of that name (dlsym passes a driver handle
 * through: spillway's dlsym override answers only for its handlers). */
static void *driver_fn(const char *name)
{
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    return h ? dlsym(h, name) : NULL;
}

/* Lookups are the driver's to answer in a forked child, and hand out its
 * own functions: spillway stands aside. */
static void child_looks_up(void)
{
    void *fn = NULL;
    CUdeviceptr p = 0;
    if (cuGetProcAddress("cuMemAlloc", &fn, 12000, 0, NULL) != CUDA_SUCCESS || !fn ||
        fn != driver_fn("cuMemAlloc_v2"))
        _exit(30);
    REFUSED(((CUresult(*)(CUdeviceptr *, size_t))fn)(&p, 4096), 31);
}

/* What a program's child might do with CUDA: allocate (small, slab, and
 * past the limit, which would spill), free and use the parent's pool
 * memory, launch on it, sync, ask for memory figures, make VMM pages. */
static void child_uses_cuda(const struct data *d)
{
    CUdeviceptr p = 0;
    uint32_t w[16] = {0};
    size_t free_b, total_b;
    CUmemAllocationProp prop = device_page_prop();
    CUmemGenericAllocationHandle h;
    REFUSED(cuMemAlloc(&p, 1 * MiB), 10);
    REFUSED(cuMemAlloc(&p, 4096), 11);
    REFUSED(cuMemAlloc(&p, LIMIT), 12);
    REFUSED(cuMemAllocAsync(&p, 1 * MiB, d->s), 13);
    REFUSED(cuMemcpyHtoD(d->buf[0], w, sizeof w), 14);
    REFUSED(cuMemcpyDtoH(w, d->buf[NBUF - 1], sizeof w), 15);
    REFUSED(cuMemsetD32(d->buf[1], 7, 16), 16);
    REFUSED(launch_step(d->step, d->buf[2], BUF, 1, d->s), 17);
    REFUSED(cuMemFree(d->buf[3]), 18);
    REFUSED(cuMemFreeAsync(d->buf[4], d->s), 19);
    REFUSED(cuStreamSynchronize(d->s), 20);
    REFUSED(cuCtxSynchronize(), 21);
    REFUSED(cuMemGetInfo(&free_b, &total_b), 22);
    REFUSED(cuMemCreate(&h, 2 * MiB, &prop, 0), 23);
    REFUSED(cuInit(0), 24);
    child_looks_up();
    exit(0);
}

/* The test program itself, as a fresh process (test_suite() runs
 * fresh_cuda_program when SPW_TEST_FORK_FRESH is set). */
static void child_execs(void)
{
    char *argv[] = {"shim_fork", NULL};
    setenv("SPW_TEST_FORK_FRESH", "1", 1);
    execve("/proc/self/exe", argv, environ); /* LD_PRELOAD and the rest carried */
    _exit(41);
}

/* Check's own SIGALRM handler (its test timeout) would kill the whole test:
 * a child's alarm must only end the child. */
static void child_alarm(void)
{
    signal(SIGALRM, SIG_DFL);
    alarm(CHILD_ALARM_S);
}

static void child_main(enum child_kind kind, const struct data *d)
{
    child_alarm();
    if (kind == CHILD_CUDA)
        child_uses_cuda(d);
    if (kind == CHILD_EXEC)
        child_execs();
    exit(0);
}

static pid_t fork_child(enum child_kind kind, const struct data *d)
{
    fflush(NULL); /* nothing buffered is written twice */
    pid_t pid = fork();
    if (pid == 0)
        child_main(kind, d);
    return pid;
}

/* 0 when pid exited 0 in time; else a description in why. Never asserts:
 * threads use it too. */
static int reap(pid_t pid, int seconds, char *why, size_t len)
{
    if (pid <= 0) { /* never kill(0) or kill(-1): the whole group, or everything */
        snprintf(why, len, "fork failed");
        return -1;
    }
    uint64_t end = now_ms() + (uint64_t)seconds * 1000u;
    int st = 0;
    pid_t r;
    while ((r = waitpid(pid, &st, WNOHANG)) == 0 && now_ms() < end)
        pause_ms(2);
    if (r == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        snprintf(why, len, "child %d still running after %d s: a deadlock", (int)pid, seconds);
        return -1;
    }
    if (r != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        snprintf(why, len, "child %d: status %#x (exit %d, signal %d)", (int)pid, st,
                 WIFEXITED(st) ? WEXITSTATUS(st) : -1, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
        return -1;
    }
    return 0;
}

static void expect_reaped(pid_t pid)
{
    char why[160];
    ck_assert_int_gt(pid, 0);
    ck_assert_msg(reap(pid, CHILD_WAIT_S, why, sizeof why) == 0, "%s", why);
}

/* ---- threads that keep the pool busy --------------------------------------- */

struct busy {
    struct data *d;
    _Atomic int stop;
    CUresult failed;
    const char *what;
    _Atomic unsigned rounds;
    _Atomic int done; /* the thread has returned */
    char child_failed[160];
};

static void busy_fail(struct busy *b, CUresult r, const char *what)
{
    if (b->failed == CUDA_SUCCESS) {
        b->what = what;
        b->failed = r;
    }
}

/* A thread starts with no current context. */
static void busy_enter(struct busy *b)
{
    CUresult r = cuCtxSetCurrent(ctx);
    if (r != CUDA_SUCCESS)
        busy_fail(b, r, "cuCtxSetCurrent");
}

#define OWN 3 /* the churning thread's buffers, BUF each */

/* Whether all of p (BUF bytes) holds v. */
static CUresult holds(CUdeviceptr p, uint32_t v)
{
    uint32_t *w = malloc(BUF);
    CUresult r = w ? cuMemcpyDtoH(w, p, BUF) : CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; r == CUDA_SUCCESS && i < BUF / 4; i++)
        if (w[i] != v)
            r = CUDA_ERROR_UNKNOWN;
    free(w);
    return r;
}

/* Keeps pages moving both ways: buffers of its own are set in turn (a set
 * fills its buffer back when device pages are free), and a block of half
 * the limit is allocated (spilling the coldest data to make room), set and
 * freed. At the end its buffers must hold their last values. */
static void *churn_main(void *arg)
{
    struct busy *b = arg;
    busy_enter(b);
    CUdeviceptr own[OWN] = {0};
    uint32_t last[OWN] = {0};
    CUresult r = CUDA_SUCCESS;
    for (unsigned i = 0; r == CUDA_SUCCESS && i < OWN; i++)
        if ((r = cuMemAlloc(&own[i], BUF)) == CUDA_SUCCESS)
            r = cuMemsetD32(own[i], 0, BUF / 4);
    for (uint32_t k = 1; r == CUDA_SUCCESS && !atomic_load(&b->stop); k++) {
        CUdeviceptr x = 0;
        if ((r = cuMemsetD32(own[k % OWN], k, BUF / 4)) == CUDA_SUCCESS)
            last[k % OWN] = k;
        if (r == CUDA_SUCCESS && (r = cuMemAlloc(&x, LIMIT / 2)) == CUDA_SUCCESS &&
            (r = cuMemsetD32(x, 0xdeadbeefu, LIMIT / 8)) == CUDA_SUCCESS)
            r = cuMemFree(x);
        b->rounds++;
    }
    for (unsigned i = 0; r == CUDA_SUCCESS && i < OWN; i++)
        r = holds(own[i], last[i]);
    if (r != CUDA_SUCCESS)
        busy_fail(b, r, "churn");
    atomic_store(&b->done, 1);
    return NULL;
}

/* Small allocations (the slab path), each written and read back. */
static void *small_main(void *arg)
{
    struct busy *b = arg;
    busy_enter(b);
    for (unsigned k = 0; !atomic_load(&b->stop) && b->failed == CUDA_SUCCESS; k++) {
        size_t n = 64u << (k % 10);
        uint32_t w[64], back[64];
        for (unsigned i = 0; i < 64; i++)
            w[i] = rig_pattern(i, k);
        CUdeviceptr x = 0;
        CUresult r = cuMemAlloc(&x, n < sizeof w ? sizeof w : n);
        if (r == CUDA_SUCCESS && (r = cuMemcpyHtoD(x, w, sizeof w)) == CUDA_SUCCESS &&
            (r = cuMemcpyDtoH(back, x, sizeof back)) == CUDA_SUCCESS)
            r = cuMemFree(x);
        if (r == CUDA_SUCCESS && memcmp(w, back, sizeof w) != 0)
            r = CUDA_ERROR_UNKNOWN;
        if (r != CUDA_SUCCESS)
            busy_fail(b, r, "small allocations");
        b->rounds++;
    }
    atomic_store(&b->done, 1);
    return NULL;
}

/* Launches on the parent's first buffer (nothing else touches it
 * meanwhile) with work in flight, and every 16th launch forks a child that
 * uses CUDA: a fork from a thread other than main, between submissions,
 * holding no spillway lock. */
static void *launch_main(void *arg)
{
    struct busy *b = arg;
    struct data *d = b->d;
    busy_enter(b);
    CUstream s;
    CUresult r = cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    for (unsigned k = 0; r == CUDA_SUCCESS && !atomic_load(&b->stop); k++) {
        r = launch_step(d->step, d->buf[0], BUF, k, s);
        for (size_t i = 0; r == CUDA_SUCCESS && i < BUF / 4; i++)
            d->want[0][i] = rig_step(d->want[0][i], k);
        if (r == CUDA_SUCCESS && k % 16 == 15) {
            pid_t pid = fork_child(CHILD_CUDA, d);
            if (pid < 0 || reap(pid, CHILD_WAIT_S, b->child_failed, sizeof b->child_failed))
                r = CUDA_ERROR_UNKNOWN;
        }
        if (r == CUDA_SUCCESS && k % 4 == 3)
            r = cuStreamSynchronize(s);
        b->rounds++;
    }
    if (r == CUDA_SUCCESS)
        r = cuStreamSynchronize(s);
    if (r != CUDA_SUCCESS)
        busy_fail(b, r, "launches");
    atomic_store(&b->done, 1);
    return NULL;
}

enum { CHURN, SMALL, LAUNCH, NBUSY };

struct crowd {
    struct busy b[NBUSY];
    pthread_t t[NBUSY];
};

/* Starts the busy threads and returns once each has done a round, so
 * that the forks after it meet them at work: on one core the forks could
 * otherwise all be over before a thread's first round (seen in make test
 * under taskset -c 0). A thread that fails before its first round ends
 * the wait and is reported by crowd_stop. */
static void crowd_start(struct crowd *c, struct data *d)
{
    void *(*const mains[NBUSY])(void *) = {churn_main, small_main, launch_main};
    static const char *const names[NBUSY] = {"churn", "small", "launch"};
    for (int i = 0; i < NBUSY; i++) {
        c->b[i] = (struct busy){.d = d, .what = names[i]};
        ck_assert_int_eq(pthread_create(&c->t[i], NULL, mains[i], &c->b[i]), 0);
    }
    uint64_t until = now_ms() + 1000u * CROWD_START_S;
    for (int i = 0; i < NBUSY; i++)
        while (atomic_load(&c->b[i].rounds) == 0 && !atomic_load(&c->b[i].done) && now_ms() < until)
            pause_ms(1);
}

static void crowd_stop(struct crowd *c)
{
    for (int i = 0; i < NBUSY; i++)
        atomic_store(&c->b[i].stop, 1);
    for (int i = 0; i < NBUSY; i++) {
        ck_assert_int_eq(pthread_join(c->t[i], NULL), 0);
        ck_assert_msg(c->b[i].failed == CUDA_SUCCESS, "%s failed: error %d %s", c->b[i].what,
                      (int)c->b[i].failed, c->b[i].child_failed);
        ck_assert_uint_gt(c->b[i].rounds, 0);
    }
}

/* ---- the cases ----------------------------------------------------------- */

/* A process with a pool that has spilled forks; the child exits at once,
 * through exit(); the parent goes on using the pool meanwhile. */
START_TEST(child_exits_while_parent_works)
{
    setup();
    struct data d;
    data_new(&d);
    ck_assert_uint_gt(segment()->c[0][SPW_C_SPILLED], 0);
    pid_t pid = fork_child(CHILD_EXIT, &d);
    for (unsigned round = 0; round < 8; round++)
        parent_round(&d, round);
    expect_reaped(pid);
    data_check(&d);
    expect_stats_intact(&pid, 1);
}
END_TEST

/* The child calls CUDA on the parent's pool: every call is refused with
 * the driver's error, at once; then it exits. */
START_TEST(child_calls_cuda_and_gets_an_error)
{
    setup();
    struct data d;
    data_new(&d);
    CU_OK(launch_step(d.step, d.buf[2], BUF, 5, d.s)); /* in flight at the fork */
    for (size_t i = 0; i < BUF / 4; i++)
        d.want[2][i] = rig_step(d.want[2][i], 5);
    pid_t pid = fork_child(CHILD_CUDA, &d);
    for (unsigned round = 0; round < 8; round++)
        parent_round(&d, round);
    expect_reaped(pid);
    data_check(&d);
    expect_stats_intact(&pid, 1);
}
END_TEST

#define FORKS 50

/* Threads allocate, spill, fill and launch without a pause while the main
 * thread forks 50 times (children that exit, and children that call CUDA)
 * and the launching thread forks too: a fork finds locks held, gates
 * closed, brackets open and moves half done in the parent. */
START_TEST(forks_while_threads_allocate_and_spill)
{
    setup();
    struct data d;
    data_new(&d);
    uint64_t spills = segment()->c[0][SPW_C_SPILL_EVENTS];
    struct crowd c;
    crowd_start(&c, &d);
    pid_t pids[FORKS];
    for (unsigned i = 0; i < FORKS; i++) {
        pids[i] = fork_child(i % 2 ? CHILD_CUDA : CHILD_EXIT, &d);
        expect_reaped(pids[i]);
        pause_ms(i % 5);
    }
    crowd_stop(&c);
    data_check(&d);
    ck_assert_uint_gt(segment()->c[0][SPW_C_SPILL_EVENTS], spills); /* it did spill meanwhile */
    expect_stats_intact(pids, FORKS);
}
END_TEST

/* The child execs a CUDA program: spillway starts afresh in it (LD_PRELOAD
 * carried), with a pool, spill and a stats segment of its own, while the
 * parent's threads keep spilling. */
START_TEST(child_execs_a_cuda_program)
{
    setup();
    struct data d;
    data_new(&d);
    struct crowd c;
    crowd_start(&c, &d);
    pid_t pid = fork_child(CHILD_EXEC, &d);
    expect_reaped(pid);
    crowd_stop(&c);
    data_check(&d);
    expect_stats_intact(&pid, 1);
}
END_TEST

/* A fork before the program initialized CUDA (spillway has loaded the
 * driver, nothing more): the child may use CUDA through spillway as any
 * process, with a pool and a stats segment of its own. */
START_TEST(child_forked_before_cuda_uses_its_own)
{
    void *fn = NULL;
    ck_assert_msg(dlsym(RTLD_DEFAULT, "spillway_get_counters") != NULL, "not under spillway");
    CU_OK(cuGetProcAddress("cuMemAlloc", &fn, 12000, 0, NULL)); /* loads the driver */
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        child_alarm();
        exit(fresh_cuda_program());
    }
    expect_reaped(pid);
    setup();
    struct data d;
    data_new(&d);
    data_check(&d);
    expect_stats_intact(&pid, 1);
}
END_TEST

Suite *test_suite(void)
{
    if (getenv("SPW_TEST_FORK_FRESH")) /* exec'd by child_execs */
        exit(fresh_cuda_program());
    Suite *s = suite_create("shim_fork");
    const char *only = getenv("SPW_TEST_FORK_ONLY");
    TCase *tc = tcase_create(only ? only : "fork");
    tcase_set_timeout(tc, 120);
    struct {
        const char *name;
        const TTest *test;
    } cases[] = {
        {"exit", child_exits_while_parent_works},
        {"cuda", child_calls_cuda_and_gets_an_error},
        {"crowd", forks_while_threads_allocate_and_spill},
        {"exec", child_execs_a_cuda_program},
        {"before", child_forked_before_cuda_uses_its_own},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (!only || strcmp(only, cases[i].name) == 0)
            tcase_add_test(tc, cases[i].test);
    suite_add_tcase(s, tc);
    return s;
}
