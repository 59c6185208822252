/* What the driver capture suite (test_capture.c and capture_*.c) shares:
 * the kernels each test loads, a stream's capture status, the ends of an
 * invalidated capture, and a second thread that captures. */
#ifndef SPILLWAY_TESTS_DRIVER_CAPTURE_RIG_H
#define SPILLWAY_TESTS_DRIVER_CAPTURE_RIG_H
#include <pthread.h>
#include <stdbool.h>

#include "tests/unit/driver/common.h"

extern struct test_kernels k; /* setup's */

/* The suite's fixture: driver_setup, the kernels loaded. */
void setup(void);

CUstreamCaptureStatus status_of(CUstream s);
/* Ends a capture that must have been invalidated, and checks the stream is
 * itself again. */
void expect_invalidated_end(CUstream s);
/* After an error cuda.h does not say leaves the capture whole: whether it
 * did is printed (fakecuda keeps it active). Still active: true. Else it
 * was invalidated: ended as such, and a new capture begun in mode, so that
 * what the test goes on to check is checked either way. */
bool still_capturing(CUstream s, CUstreamCaptureMode mode, const char *after);

/* A second thread: begins a capture in a mode, says so, waits to be told,
 * ends it and reports what the end returned. */
struct capturer {
    CUstream s;
    CUstreamCaptureMode mode;
    int stage; /* 1: capturing, 2: told to end, 3: ended */
    CUresult end;
    pthread_mutex_t m;
    pthread_cond_t c;
};

void stage_set(struct capturer *c, int stage);
void stage_wait(struct capturer *c, int stage);
/* The thread's body: arg is its struct capturer. */
void *capture_thread(void *arg);

/* The suite's checks beyond test_capture.c's, each file's added to tc in
 * its order. */
void capture_invalidation_tests(TCase *tc);  /* capture_invalidation.c */
void capture_thread_tests(TCase *tc);        /* capture_threads.c */
void capture_event_tests(TCase *tc);         /* capture_events.c */
void capture_memory_node_tests(TCase *tc);   /* capture_memory_nodes.c */
void capture_relaxed_work_tests(TCase *tc);  /* capture_relaxed_work.c */
#endif
