/* The graph memory suite (test_graph_mem.c): a captured allocation keeps
 * its count whatever is lost around it: captures of other threads
 * invalidated while it is made or ended, a reset of the primary context. */
#include "tests/integration/shim/graph_mem_rig.h"

#include <pthread.h>
#include <stdatomic.h>

/* One thread allocates into a relaxed capture while another invalidates
 * and ends it: each allocation the driver captured has no memory once the
 * capture is lost, whether spillway noted it before, during or after the
 * end. A race: tried many times; the allocations made after the end are
 * plain ones, which the program frees. */
#define RACE_ALLOCS 32
struct racing_allocs {
    CUcontext ctx;
    CUstream s;
    atomic_int go, made, stop, done;
    CUdeviceptr p[RACE_ALLOCS];
};

static void *alloc_into_capture(void *arg)
{
    struct racing_allocs *a = arg;
    CU_OK(cuCtxSetCurrent(a->ctx));
    while (!atomic_load(&a->go))
        ;
    for (int i = 0; i < RACE_ALLOCS && !atomic_load(&a->stop); i++)
        if (cuMemAllocAsync(&a->p[atomic_load(&a->made)], MiB, a->s) == CUDA_SUCCESS)
            atomic_fetch_add(&a->made, 1);
    atomic_store(&a->done, 1); /* the main thread waits for one, or this */
    return NULL;
}

START_TEST(allocations_racing_a_lost_capture_leave_nothing_counted)
{
    struct racing_allocs a = {.ctx = rig_setup(0)};
    CU_OK(cuStreamCreate(&a.s, CU_STREAM_NON_BLOCKING));
    size_t before = free_now();
    for (int it = 0; it < 300; it++) {
        atomic_store(&a.go, 0);
        atomic_store(&a.made, 0);
        atomic_store(&a.stop, 0);
        atomic_store(&a.done, 0);
        CU_OK(cuStreamBeginCapture(a.s, CU_STREAM_CAPTURE_MODE_RELAXED));
        pthread_t th;
        ck_assert_int_eq(pthread_create(&th, NULL, alloc_into_capture, &a), 0);
        atomic_store(&a.go, 1);
        while (!atomic_load(&a.made) && !atomic_load(&a.done))
            ;
        ck_assert_msg(atomic_load(&a.made), "try %d: no allocation into the capture", it);
        for (volatile int k = 0; k < (it % 50) * 20; k++) /* a different moment each time */
            ;
        ck_assert_int_eq(cuStreamSynchronize(a.s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        CUgraph g = NULL;
        ck_assert_int_eq(cuStreamEndCapture(a.s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        atomic_store(&a.stop, 1);
        ck_assert_int_eq(pthread_join(th, NULL), 0);
        for (int i = 0; i < atomic_load(&a.made); i++)
            (void)cuMemFree(a.p[i]); /* the captured ones are no allocations: refused */
        CU_OK(cuStreamSynchronize(a.s));
        ck_assert_msg(free_now() == before, "try %d: free %zu MiB before, %zu after (%d allocations)",
                      it, before >> 20, free_now() >> 20, atomic_load(&a.made));
    }
    CU_OK(cuStreamDestroy(a.s));
}
END_TEST

/* A capture on a thread's per-thread default stream (CU_STREAM_PER_THREAD
 * names another stream in each thread) goes on while another thread's
 * capture is invalidated: its allocation stays counted, as its graph will
 * run it. */
struct ptds_capture {
    CUcontext ctx;
    pthread_barrier_t allocated, other_ended;
    CUdeviceptr t;
    CUgraph g;
};

static void *capture_on_ptds(void *arg)
{
    struct ptds_capture *c = arg;
    CU_OK(cuCtxSetCurrent(c->ctx));
    CU_OK(cuStreamBeginCapture(CU_STREAM_PER_THREAD, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU_OK(cuMemAllocAsync(&c->t, GBYTES, CU_STREAM_PER_THREAD));
    pthread_barrier_wait(&c->allocated);
    pthread_barrier_wait(&c->other_ended);
    CU_OK(cuMemsetD32Async(c->t, 5u, GBYTES / 4, CU_STREAM_PER_THREAD));
    CU_OK(cuStreamEndCapture(CU_STREAM_PER_THREAD, &c->g));
    return NULL;
}

START_TEST(another_threads_invalidated_capture_leaves_a_ptds_capture_counted)
{
    struct ptds_capture c = {.ctx = rig_setup(0)};
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    size_t before = free_now();
    ck_assert_int_eq(pthread_barrier_init(&c.allocated, NULL, 2), 0);
    ck_assert_int_eq(pthread_barrier_init(&c.other_ended, NULL, 2), 0);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, capture_on_ptds, &c), 0);
    pthread_barrier_wait(&c.allocated);
    ck_assert_uint_eq(free_now() + GBYTES, before);
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    ck_assert_int_eq(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUgraph lost = NULL;
    ck_assert_int_eq(cuStreamEndCapture(s, &lost), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    size_t now = free_now();
    pthread_barrier_wait(&c.other_ended);
    ck_assert_int_eq(pthread_join(th, NULL), 0);
    ck_assert_msg(now + GBYTES == before,
                  "free %zu MiB before, %zu while the other thread's capture still held its "
                  "allocation", before >> 20, now >> 20);
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, c.g, 0));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_eq(free_now() + GBYTES, before); /* live: counted once */
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(c.g));
    CU_OK(cuMemFree(c.t));
    CU_OK(cuDeviceGraphMemTrim(0));
    ck_assert_uint_eq(free_now(), before);
    pthread_barrier_destroy(&c.allocated);
    pthread_barrier_destroy(&c.other_ended);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* A capture that gives its graph while another thread's capture is lost:
 * the lost one's end leaves the graph's allocations counted (they are the
 * graph's, to count until it goes unrun). Many rounds: the two ends race. */
struct lose_loop {
    CUcontext ctx;
    _Atomic int stop;
};

static void *lose_captures(void *arg)
{
    struct lose_loop *l = arg;
    CU_OK(cuCtxSetCurrent(l->ctx));
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    while (!atomic_load(&l->stop)) {
        CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
        ck_assert_int_eq(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        CUgraph g = NULL;
        ck_assert_int_eq(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    }
    CU_OK(cuStreamDestroy(s));
    return NULL;
}

START_TEST(a_capture_ending_with_a_graph_stays_counted_while_another_is_lost)
{
    struct lose_loop l = {.ctx = rig_setup(0)};
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    size_t before = free_now();
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, lose_captures, &l), 0);
    int lost = 0, rounds = 100000; /* without the fix: lost within some 50000 */
    for (int i = 0; i < rounds && !lost; i++) {
        CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
        CUdeviceptr t;
        CU_OK(cuMemAllocAsync(&t, GBYTES, s));
        CUgraph g;
        CU_OK(cuStreamEndCapture(s, &g));
        if (free_now() + GBYTES != before)
            lost = i + 1;
        CU_OK(cuGraphDestroy(g)); /* never run: uncounted */
    }
    atomic_store(&l.stop, 1);
    ck_assert_int_eq(pthread_join(th, NULL), 0);
    ck_assert_msg(!lost, "round %d: a graph's captured allocation uncounted by another "
                  "thread's lost capture", lost);
    ck_assert_uint_eq(free_now(), before);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* A captured allocation that ran is graph memory, stream-ordered: the
 * device's graph pool keeps it through a reset of the primary context
 * (only cuMemAlloc-class memory dies with a context), so it stays counted
 * until the program frees it. */
START_TEST(a_live_captured_allocation_stays_counted_through_a_primary_reset)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    size_t before = free_now();
    CUdeviceptr t;
    CUgraph g = capture_alloc(s, &t);
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuStreamDestroy(s));
    ck_assert_uint_eq(free_now() + GBYTES, before);
    CU_OK(cuDevicePrimaryCtxReset(0));
    rig_setup(0);
    unsigned word = 0;
    CU_OK(cuMemcpyDtoH(&word, t + GBYTES - sizeof word, sizeof word));
    ck_assert_uint_eq(word, 3u); /* live: the driver kept it */
    ck_assert_msg(free_now() + GBYTES == before,
                  "free %zu MiB before, %zu after the reset with the allocation still live",
                  before >> 20, free_now() >> 20);
    CU_OK(cuMemFree(t));
    CU_OK(cuDeviceGraphMemTrim(0));
    ck_assert_uint_eq(free_now(), before);
}
END_TEST

void graph_mem_lost_tests(TCase *tc)
{
    tcase_add_test(tc, allocations_racing_a_lost_capture_leave_nothing_counted);
    tcase_add_test(tc, another_threads_invalidated_capture_leaves_a_ptds_capture_counted);
    tcase_add_test(tc, a_capture_ending_with_a_graph_stays_counted_while_another_is_lost);
    tcase_add_test(tc, a_live_captured_allocation_stays_counted_through_a_primary_reset);
}
