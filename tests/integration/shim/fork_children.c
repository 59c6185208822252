/* The fork suite's children (fork_rig.h): what a forked child does with
 * CUDA, or a fresh program exec'd, and how the parent reaps them. */
#include "tests/integration/shim/fork_rig.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ---- a fresh CUDA program ---------------------------------------------------- */

int fresh_cuda_program(void)
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

void child_alarm(void)
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

pid_t fork_child(enum child_kind kind, const struct data *d)
{
    fflush(NULL); /* nothing buffered is written twice */
    pid_t pid = fork();
    if (pid == 0)
        child_main(kind, d);
    return pid;
}

int reap(pid_t pid, int seconds, char *why, size_t len)
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

void expect_reaped(pid_t pid)
{
    char why[160];
    ck_assert_int_gt(pid, 0);
    ck_assert_msg(reap(pid, CHILD_WAIT_S, why, sizeof why) == 0, "%s", why);
}
