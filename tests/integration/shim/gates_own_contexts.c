/* The gates suite (test_gates.c): contexts the program created. Work
 * queued in one is synced before a move as the primary context's is, a
 * sync of the primary context does not cover it, and one destroyed is
 * forgotten. */
#include "tests/integration/shim/gates_rig.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Work queued in a context the program created (cuCtxCreate) is not
 * covered by the primary context's sync: each way below queues a copy of a
 * pool buffer behind 300 ms of other work there, then device 0 spills it
 * from the primary context. */
enum own_ctx_way {
    OWN_CURRENT,      /* kernel and copy with the context current */
    OWN_OTHER_THREAD, /* the same from a thread of its own (which then ends) */
    OWN_COPY_ONLY,    /* a host function and a copy: no launch names the context */
    OWN_STREAM_ONLY,  /* a context-less kernel and a copy on its stream, the primary current */
    OWN_STREAM_COPY,  /* a host function and a copy on its stream, the primary current */
};

struct own_ctx_work {
    enum own_ctx_way way;
    CUcontext c0, mine;
    CUdeviceptr b;
    void *host;
    CUstream s;
};

static void CUDA_CB sleep_300ms(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 300 * 1000000L};
    nanosleep(&ts, NULL);
}

/* The sleeper as a CUkernel, which runs in its stream's context. */
static void sleep_anywhere(CUstream s, unsigned ms)
{
    (void)sleeper(); /* registers it */
    CUlibrary lib;
    CUkernel k;
    CU_OK(cuLibraryLoadData(&lib, "fakecuda", NULL, NULL, 0, NULL, NULL, 0));
    CU_OK(cuLibraryGetKernel(&k, lib, "gates_sleep"));
    void *args[] = {&ms};
    CU_OK(cuLaunchKernel((CUfunction)k, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
}

static void *queue_in_own_context(void *arg)
{
    struct own_ctx_work *w = arg;
    CU_OK(cuCtxSetCurrent(w->mine));
    CU_OK(cuStreamCreate(&w->s, CU_STREAM_NON_BLOCKING));
    if (w->way == OWN_COPY_ONLY) {
        CU_OK(cuLaunchHostFunc(w->s, sleep_300ms, NULL));
    } else if (w->way == OWN_STREAM_COPY) {
        CU_OK(cuCtxSetCurrent(w->c0));
        CU_OK(cuLaunchHostFunc(w->s, sleep_300ms, NULL));
    } else if (w->way == OWN_STREAM_ONLY) {
        CU_OK(cuCtxSetCurrent(w->c0));
        sleep_anywhere(w->s, 300);
    } else {
        sleep_on(w->s, 300);
    }
    CU_OK(cuMemcpyDtoHAsync(w->host, w->b, BUF, w->s));
    return NULL;
}

static void own_context_reads_the_pool(enum own_ctx_way way)
{
    struct own_ctx_work w = {.way = way, .c0 = setup(0)};
    w.b = filled(BUF, 9);
    CU_OK(cuMemAllocHost(&w.host, BUF));
    CU_OK(cuCtxCreate(&w.mine, NULL, 0, 0));
    CU_OK(cuCtxSetCurrent(w.c0));
    if (way == OWN_OTHER_THREAD) {
        pthread_t t;
        ck_assert_int_eq(pthread_create(&t, NULL, queue_in_own_context, &w), 0);
        ck_assert_int_eq(pthread_join(t, NULL), 0);
    } else {
        queue_in_own_context(&w);
    }
    spill_device0(w.c0);
    CU_OK(cuCtxSetCurrent(w.mine));
    CU_OK(cuStreamSynchronize(w.s));
    uint32_t *want = rig_expected(BUF, 9);
    ck_assert(memcmp(w.host, want, BUF) == 0);
    free(want);
    CU_OK(cuStreamDestroy(w.s));
    CU_OK(cuCtxDestroy(w.mine));
    CU_OK(cuCtxSetCurrent(w.c0));
    rig_expect_pattern(w.b, BUF, 9, "the spilled buffer");
}

START_TEST(a_context_the_program_created_is_synced_before_a_move) { own_context_reads_the_pool(OWN_CURRENT); }
END_TEST
START_TEST(another_threads_own_context_is_synced_before_a_move) { own_context_reads_the_pool(OWN_OTHER_THREAD); }
END_TEST
START_TEST(an_own_context_that_only_copied_is_synced_before_a_move) { own_context_reads_the_pool(OWN_COPY_ONLY); }
END_TEST
START_TEST(an_own_contexts_stream_is_synced_before_a_move) { own_context_reads_the_pool(OWN_STREAM_ONLY); }
END_TEST
START_TEST(an_own_contexts_stream_that_only_copied_is_synced_before_a_move) { own_context_reads_the_pool(OWN_STREAM_COPY); }
END_TEST

/* A free waits for a sync point that covers the work issued before it.
 * The program's sync of the primary context does not cover a context of
 * its own: the freed block must not be handed out again while that
 * context's set of it is still queued. */
static void primary_sync_then_reuse(int v2)
{
    if (v2 && !rig_driver_has(13000))
        return; /* no cuCtxSynchronize_v2 */
    CUcontext c0 = setup(0);
    CUdeviceptr b;
    CU_OK(cuMemAlloc(&b, 8 * MiB));
    struct own_ctx_work w = {.way = OWN_CURRENT, .c0 = c0, .b = b};
    CU_OK(cuCtxCreate(&w.mine, NULL, 0, 0));
    CU_OK(cuStreamCreate(&w.s, CU_STREAM_NON_BLOCKING));
    sleep_on(w.s, 300);
    CU_OK(cuMemsetD32Async(b, 0xAAAAAAAAu, 2 * MiB, w.s));
    CU_OK(cuCtxSetCurrent(c0));
    CU_OK(cuMemFree(b));
    CU_OK(v2 ? cuCtxSynchronize_v2(NULL) : cuCtxSynchronize());
    CUdeviceptr c;
    CU_OK(cuMemAlloc(&c, 8 * MiB));
    CU_OK(cuMemsetD32(c, 0x55555555u, 2 * MiB));
    CU_OK(cuCtxSetCurrent(w.mine));
    CU_OK(cuStreamSynchronize(w.s));
    CU_OK(cuCtxSetCurrent(c0));
    uint32_t word = 0;
    for (size_t off = 0; off < 8 * MiB; off += 1 * MiB) {
        CU_OK(cuMemcpyDtoH(&word, c + off, sizeof word));
        ck_assert_msg(word == 0x55555555u, "offset %zu of the new allocation (%s the freed one) "
                      "holds %#x: the own context's set landed on it",
                      off, c == b ? "at" : "not at", word);
    }
    CU_OK(cuCtxSetCurrent(w.mine));
    CU_OK(cuStreamDestroy(w.s));
    CU_OK(cuCtxDestroy(w.mine));
}

START_TEST(a_primary_sync_does_not_cover_an_own_contexts_work) { primary_sync_then_reuse(0); }
END_TEST
START_TEST(a_primary_sync_v2_does_not_cover_an_own_contexts_work) { primary_sync_then_reuse(1); }
END_TEST

/* A context that had work and was destroyed is forgotten: the next move
 * names it in no call (on a GPU the handle may be another context's by
 * then) and is not refused, and a context made afterwards is synced. */
START_TEST(a_destroyed_context_is_forgotten)
{
    CUcontext c0 = setup(0);
    CUdeviceptr b = filled(BUF, 3);
    void *host;
    CU_OK(cuMemAllocHost(&host, BUF));
    CUcontext mine;
    CU_OK(cuCtxCreate(&mine, NULL, 0, 0));
    CU_OK(cuMemcpyDtoH(host, b, 4096));
    CU_OK(cuCtxDestroy(mine));
    unsigned long long stale = fakecuda_stale_context_uses();
    CU_OK(cuCtxSetCurrent(c0));
    spill_device0(c0);
    ck_assert_uint_eq(fakecuda_stale_context_uses(), stale);
    rig_expect_pattern(b, BUF, 3, "the spilled buffer");
    struct own_ctx_work w = {.way = OWN_CURRENT, .c0 = c0, .b = b, .host = host};
    CU_OK(cuCtxCreate(&w.mine, NULL, 0, 0));
    queue_in_own_context(&w);
    CU_OK(cuCtxSetCurrent(c0));
    CUdeviceptr x;
    CU_OK(cuMemAlloc(&x, PAST_ALL)); /* spills b again (the copy filled it back) */
    CU_OK(cuCtxSetCurrent(w.mine));
    CU_OK(cuStreamSynchronize(w.s));
    uint32_t *want = rig_expected(BUF, 3);
    ck_assert(memcmp(host, want, BUF) == 0);
    free(want);
    CU_OK(cuStreamDestroy(w.s));
    CU_OK(cuCtxDestroy(w.mine));
}
END_TEST

void gates_own_context_tests(TCase *tc)
{
    tcase_add_test(tc, a_context_the_program_created_is_synced_before_a_move);
    tcase_add_test(tc, another_threads_own_context_is_synced_before_a_move);
    tcase_add_test(tc, an_own_context_that_only_copied_is_synced_before_a_move);
    tcase_add_test(tc, an_own_contexts_stream_is_synced_before_a_move);
    tcase_add_test(tc, an_own_contexts_stream_that_only_copied_is_synced_before_a_move);
    tcase_add_test(tc, a_destroyed_context_is_forgotten);
    tcase_add_test(tc, a_primary_sync_does_not_cover_an_own_contexts_work);
    tcase_add_test(tc, a_primary_sync_v2_does_not_cover_an_own_contexts_work);
}
