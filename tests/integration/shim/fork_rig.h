/* What the fork suite (test_fork.c) shares with the files beside it: the
 * parent's CUDA, its data and its stats segment (fork_rig.c), the
 * children it forks (fork_children.c) and the threads that keep its pool
 * busy (fork_crowd.c). Run by fork.sh. */
#ifndef SPILLWAY_TESTS_FORK_RIG_H
#define SPILLWAY_TESTS_FORK_RIG_H
#include "tests/integration/shim/rig.h"

#include "stats/reader.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#define LIMIT (64 * MiB)
#define NBUF 5 /* 5 x 16 MiB: past the limit, so some always live on the host */
#define BUF (16 * MiB)
#define CHILD_ALARM_S 10 /* a child still running after this dies of SIGALRM */
#define CHILD_WAIT_S 20  /* the parent's deadline for a child */
#define CROWD_START_S 30 /* the busy threads' deadline for their first rounds */

/* CLOCK_MONOTONIC in ms; a sleep of ms milliseconds. */
uint64_t now_ms(void);
void pause_ms(long ms);

/* ---- the parent's CUDA (fork_rig.c) ---- */

extern CUcontext ctx; /* setup's */
/* rig_setup(0), kept in ctx for the busy threads. */
void setup(void);
/* A launch of step_u32 (f) on s over the bytes at p, by k. */
CUresult launch_step(CUfunction f, CUdeviceptr p, size_t bytes, unsigned k, CUstream s);

/* Buffers with a known content: what the device holds must equal want. */
struct data {
    CUfunction step;
    CUstream s;
    CUdeviceptr buf[NBUF];
    uint32_t *want[NBUF];
};
/* NBUF buffers of BUF bytes with a known content, on a stream of their
 * own; and checked, once the stream is synced, against want. */
void data_new(struct data *d);
void data_check(const struct data *d);
/* One round of the parent's own work: a launch on a buffer that may live
 * on the host (it is filled back, spilling another), a temporary buffer
 * written, read back and freed, and a device sync now and then. */
void parent_round(struct data *d, unsigned round);
/* The parent's segment, read now: it must still be there and be ours. */
struct spw_stats_snapshot *segment(void);
/* With the parent quiet: the segment says what the parent counts
 * in-process, so no child wrote into it, and no child left one of its own
 * (a forked child publishes nothing; an exec'd one removes its own). */
void expect_stats_intact(const pid_t *children, unsigned n);

/* ---- children (fork_children.c) ---- */

enum child_kind {
    CHILD_EXIT,  /* exit(0) at once: atexit handlers and destructors run */
    CHILD_CUDA,  /* CUDA calls on the parent's pool: each refused, quickly */
    CHILD_EXEC,  /* exec a CUDA program (this one, fresh) under spillway */
};

/* What a program run from a fork does on its own: initialize, allocate
 * past the limit (a pool of its own, spilling), check every byte and its
 * own stats segment. Returns 0, or the step that failed (an exit status:
 * no Check assertion outside the test's own process). */
int fresh_cuda_program(void);
/* A child of kind forked (output flushed first): its pid, or -1. */
pid_t fork_child(enum child_kind kind, const struct data *d);
/* Check's own SIGALRM handler (its test timeout) would kill the whole test:
 * a child's alarm must only end the child. */
void child_alarm(void);
/* 0 when pid exited 0 in time; else a description in why. Never asserts:
 * threads use it too. */
int reap(pid_t pid, int seconds, char *why, size_t len);
/* pid reaped in CHILD_WAIT_S, having exited 0; the test fails otherwise. */
void expect_reaped(pid_t pid);

/* ---- threads that keep the pool busy (fork_crowd.c) ---- */

struct busy {
    struct data *d;
    _Atomic int stop;
    CUresult failed;
    const char *what;
    _Atomic unsigned rounds;
    _Atomic int done; /* the thread has returned */
    char child_failed[160];
};

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
void crowd_start(struct crowd *c, struct data *d);
/* Stops them, and fails the test if one failed or never ran a round. */
void crowd_stop(struct crowd *c);
#endif
