/* The driver capture suite's shared helpers (capture_rig.h). */
#include "tests/unit/driver/capture_rig.h"

#include <stdio.h>

struct test_kernels k;

void setup(void)
{
    driver_setup();
    kernels_load(&k);
}

CUstreamCaptureStatus status_of(CUstream s)
{
    CUstreamCaptureStatus st = (CUstreamCaptureStatus)-1;
    CU_OK(cuStreamIsCapturing(s, &st));
    return st;
}

void expect_invalidated_end(CUstream s)
{
    ck_assert_int_eq(status_of(s), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    CUgraph g = (CUgraph)(void *)1;
    CU_ERR(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    ck_assert_ptr_null(g);
    ck_assert_int_eq(status_of(s), CU_STREAM_CAPTURE_STATUS_NONE);
    CU_OK(cuStreamSynchronize(s));
}

bool still_capturing(CUstream s, CUstreamCaptureMode mode, const char *after)
{
    CUstreamCaptureStatus st = status_of(s);
    printf("capture after %s: %s\n", after,
           st == CU_STREAM_CAPTURE_STATUS_ACTIVE ? "active" : "invalidated");
    if (st == CU_STREAM_CAPTURE_STATUS_ACTIVE)
        return true;
    expect_invalidated_end(s);
    CU_OK(cuStreamBeginCapture(s, mode));
    return false;
}

void stage_set(struct capturer *c, int stage)
{
    pthread_mutex_lock(&c->m);
    c->stage = stage;
    pthread_cond_broadcast(&c->c);
    pthread_mutex_unlock(&c->m);
}

void stage_wait(struct capturer *c, int stage)
{
    pthread_mutex_lock(&c->m);
    while (c->stage < stage)
        pthread_cond_wait(&c->c, &c->m);
    pthread_mutex_unlock(&c->m);
}

void *capture_thread(void *arg)
{
    struct capturer *c = arg;
    cuCtxSetCurrent(test_ctx);
    c->end = cuStreamBeginCapture(c->s, c->mode);
    stage_set(c, 1);
    stage_wait(c, 2);
    CUgraph g = NULL;
    if (c->end == CUDA_SUCCESS)
        c->end = cuStreamEndCapture(c->s, &g);
    if (g)
        cuGraphDestroy(g);
    stage_set(c, 3);
    return NULL;
}
