/* What the capture suite (test_capture.c and capture_*.c) shares: the
 * limit, the context its tests make current (for their other threads),
 * and the buffers a graph works on with the kernel that steps them. Run
 * by capture.sh. */
#ifndef SPILLWAY_TESTS_CAPTURE_RIG_H
#define SPILLWAY_TESTS_CAPTURE_RIG_H
#include "tests/integration/shim/rig.h"

#define LIMIT (64 * MiB)

extern CUcontext ctx; /* each test's rig_setup(0) */

/* ---- the buffers a graph works on ------------------------------------------ */

#define NBUF 10
#define BUF (4 * MiB)

struct bufs {
    int n; /* up to NBUF */
    CUdeviceptr d[NBUF];
    uint32_t *want[NBUF];
};

/* n buffers of BUF bytes filled from seed, seed + 1, ..., and what each
 * holds; want[i] stepped by k as the kernel steps d[i]; every buffer
 * checked against its want; all freed. */
void bufs_make(struct bufs *b, int n, unsigned seed);
void bufs_step(struct bufs *b, int i, unsigned k);
void bufs_check(struct bufs *b, const char *what);
void bufs_free(struct bufs *b);
/* A launch of step_u32 (f) on s over the BUF bytes at p, by k. */
void launch_step(CUfunction f, CUstream s, CUdeviceptr p, unsigned k);

/* The suite's tests beyond test_capture.c's, each file's added to tc in
 * its order. */
void capture_replay_tests(TCase *tc);      /* capture_replays.c */
void capture_exec_naming_tests(TCase *tc); /* capture_exec_naming.c */
void capture_conditional_tests(TCase *tc); /* capture_conditionals.c */
#endif
