/* The fork suite's parent: its CUDA, its data and its stats segment, and
 * time (fork_rig.h). */
#include "tests/integration/shim/fork_rig.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- the parent's CUDA ------------------------------------------------- */

CUcontext ctx;

void setup(void)
{
    ctx = rig_setup(0);
}

CUresult launch_step(CUfunction f, CUdeviceptr p, size_t bytes, unsigned k, CUstream s)
{
    size_t n = bytes / 4;
    void *args[] = {&p, &n, &k};
    return cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
}

void data_new(struct data *d)
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

void data_check(const struct data *d)
{
    CU_OK(cuStreamSynchronize(d->s));
    for (unsigned b = 0; b < NBUF; b++)
        rig_expect_words(d->buf[b], d->want[b], BUF, "a parent buffer");
}

void parent_round(struct data *d, unsigned round)
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

struct spw_stats_snapshot *segment(void)
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

void expect_stats_intact(const pid_t *children, unsigned n)
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

