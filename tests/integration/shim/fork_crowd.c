/* The fork suite's busy threads (fork_rig.h): they allocate, spill, fill
 * and launch, and fork too, while the main thread forks. */
#include "tests/integration/shim/fork_rig.h"

#include <stdlib.h>
#include <string.h>

/* ---- threads that keep the pool busy --------------------------------------- */

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

void crowd_start(struct crowd *c, struct data *d)
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

void crowd_stop(struct crowd *c)
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

