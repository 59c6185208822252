/* The invariant a move rests on (README "Spill", "Safety"): a page is
 * remapped only after a sync point that covers all work that may touch it,
 * and every submission passes the work gate. Each test queues work that
 * reads a pool buffer of device 0 behind a 300 ms kernel, then makes
 * device 0 spill that buffer: fakecuda (FAKECUDA_CHECK_UNMAP) aborts on an
 * unmap under that work, which on a GPU kills the context. */
#include "tests/integration/shim/rig.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* gates.sh's limit (SPILLWAY_MEM_LIMIT): small, since every byte a test
 * fills, spills and reads back is fresh memory, which costs more than
 * anything else the suite does; the ratios are what the tests need. BUF
 * leaves room for a 1 MiB buffer beside it; PAST_BUF, allocated next to
 * BUF, spills part of it; PAST_ALL spills all of what PAST_BUF did not. */
#define LIMIT (16 * MiB)
#define BUF (LIMIT / 8 * 7)
#define PAST_BUF (LIMIT / 8 * 3)
#define PAST_ALL (LIMIT / 8 * 5)
#define BIT_MORE (LIMIT / 8)

/* rig_setup, and the limit the sizes above are made for. */
static CUcontext setup(int dev)
{
    CUcontext c = rig_setup(dev);
    size_t free_b, total;
    CU_OK(cuMemGetInfo(&free_b, &total));
    ck_assert_msg(total == LIMIT, "device %d's limit is %zu bytes: gates.sh sets %zu", dev, total,
                  (size_t)LIMIT);
    return c;
}

static void sleep_kernel(fakecuda_dim3 g, fakecuda_dim3 b, void **params)
{
    (void)g;
    (void)b;
    unsigned ms = *(unsigned *)params[0];
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A kernel that sleeps for its argument's milliseconds, in the current
 * context. */
static CUfunction sleeper(void)
{
    size_t sz[] = {sizeof(unsigned)};
    ck_assert_int_eq(fakecuda_register_kernel("gates_sleep", sleep_kernel, 1, sz), 0);
    CUmodule m;
    CUfunction f;
    CU_OK(cuModuleLoadData(&m, "fakecuda"));
    CU_OK(cuModuleGetFunction(&f, m, "gates_sleep"));
    return f;
}

static void sleep_on(CUstream s, unsigned ms)
{
    void *args[] = {&ms};
    CU_OK(cuLaunchKernel(sleeper(), 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
}

/* rig_filled, landed: a copy from pageable memory returns once staged,
 * and another context's work does not wait for the rest (TSan saw the fill
 * race with an own context's read of the buffer). */
static CUdeviceptr filled(size_t bytes, unsigned seed)
{
    CUdeviceptr p = rig_filled(bytes, seed);
    CU_OK(cuCtxSynchronize());
    return p;
}

/* Past device 0's limit: spills the coldest of its pool, b among it. */
static CUdeviceptr spill_device0(CUcontext c0)
{
    CU_OK(cuCtxSetCurrent(c0));
    CUdeviceptr x;
    CU_OK(cuMemAlloc(&x, PAST_BUF));
    ck_assert_uint_gt(rig_pool(0).spill_bytes, 0);
    return x;
}

/* spill_device0, then the room it took given back (a free, and a sync
 * point that covers it): a page used as seldom as a test's buffer comes
 * back only into free pages (policy/fill.c, the no-thrash rule). */
static void spill_device0_leaving_room(CUcontext c0)
{
    CU_OK(cuMemFree(spill_device0(c0)));
    CU_OK(cuCtxSynchronize());
}

/* Device 1 reads device 0's pool on a stream of its own, given access to
 * it (cuCtxEnablePeerAccess) or not (a copy only); give_dev1_a_pool says
 * whether device 1 ever allocated through spillway. Without a pool it had
 * no syncer, and a move skipped its sync; without peer access it was not
 * among the devices that reach device 0's pages. */
static void device1_reads_device0(int give_dev1_a_pool, int peer_access)
{
    CUcontext c0 = setup(0), c1 = setup(1);
    CU_OK(cuCtxSetCurrent(c1));
    if (peer_access)
        CU_OK(cuCtxEnablePeerAccess(c0, 0));
    if (give_dev1_a_pool) {
        CUdeviceptr y;
        CU_OK(cuMemAlloc(&y, 1 * MiB));
    }
    CU_OK(cuCtxSetCurrent(c0));
    CUdeviceptr b = filled(BUF, 7);
    CU_OK(cuCtxSynchronize()); /* the fill done: another device reads b */
    CU_OK(cuCtxSetCurrent(c1));
    CUstream s1;
    CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    void *host;
    CU_OK(cuMemAllocHost(&host, BUF));
    sleep_on(s1, 300);
    CU_OK(cuMemcpyDtoHAsync(host, b, BUF, s1));
    spill_device0(c0);
    CU_OK(cuCtxSetCurrent(c1));
    CU_OK(cuStreamSynchronize(s1));
    uint32_t *want = rig_expected(BUF, 7);
    ck_assert(memcmp(host, want, BUF) == 0);
    free(want);
    rig_expect_pattern(b, BUF, 7, "the spilled buffer");
}

START_TEST(a_peer_without_a_pool_is_synced_before_a_move) { device1_reads_device0(0, 1); }
END_TEST
START_TEST(a_peer_with_a_pool_is_synced_before_a_move) { device1_reads_device0(1, 1); }
END_TEST
START_TEST(a_device_that_copied_without_peer_access_is_synced_before_a_move) { device1_reads_device0(1, 0); }
END_TEST
START_TEST(a_device_without_a_pool_that_copied_is_synced_before_a_move) { device1_reads_device0(0, 0); }
END_TEST

/* A copy may be queued on a stream of another device than the current
 * context's (CUDA programming guide, "Stream and Event Behavior": "a
 * memory copy will succeed even if it is issued to a stream that is not
 * associated to the current device"). Device 0 current, device 1's
 * stream, device 0's pool buffer: the work runs on device 1, which must be
 * gated and synced before the buffer moves, by every way of naming the
 * buffer (a typed copy, cuMemcpyAsync, a 2D copy, a peer copy). */
enum other_stream_way { OS_DTOH, OS_UNIFIED, OS_2D, OS_PEER };

static void copy_on_another_devices_stream(enum other_stream_way way)
{
    CUcontext c0 = setup(0), c1 = setup(1);
    CU_OK(cuCtxSetCurrent(c1));
    CUdeviceptr y; /* device 1's pool (and syncer): a peer copy's destination */
    CU_OK(cuMemAlloc(&y, way == OS_PEER ? BUF : 1 * MiB));
    CUstream s1;
    CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    void *host;
    CU_OK(cuMemAllocHost(&host, BUF));
    sleep_on(s1, 300);
    CU_OK(cuCtxSetCurrent(c0));
    CUdeviceptr b = filled(BUF, 6);
    /* The fill's copy may still be in flight when cuMemcpyHtoD returns, and
     * s1 (another device's, non-blocking) is not ordered after it: under
     * load the copy below read b before it was filled. */
    CU_OK(cuCtxSynchronize());
    switch (way) {
    case OS_DTOH:
        CU_OK(cuMemcpyDtoHAsync(host, b, BUF, s1));
        break;
    case OS_UNIFIED:
        CU_OK(cuMemcpyAsync((CUdeviceptr)(uintptr_t)host, b, BUF, s1));
        break;
    case OS_2D: {
        CUDA_MEMCPY2D c;
        memset(&c, 0, sizeof c);
        c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
        c.srcDevice = b;
        c.srcPitch = BUF / 8;
        c.dstMemoryType = CU_MEMORYTYPE_HOST;
        c.dstHost = host;
        c.dstPitch = BUF / 8;
        c.WidthInBytes = BUF / 8;
        c.Height = 8;
        CU_OK(cuMemcpy2DAsync(&c, s1));
        break;
    }
    case OS_PEER:
        CU_OK(cuMemcpyPeerAsync(y, c1, b, c0, BUF, s1));
        break;
    }
    spill_device0(c0);
    CU_OK(cuCtxSetCurrent(c1));
    CU_OK(cuStreamSynchronize(s1));
    if (way == OS_PEER)
        CU_OK(cuMemcpyDtoH(host, y, BUF));
    uint32_t *want = rig_expected(BUF, 6);
    ck_assert(memcmp(host, want, BUF) == 0);
    free(want);
    CU_OK(cuStreamDestroy(s1));
    CU_OK(cuCtxSetCurrent(c0));
    rig_expect_pattern(b, BUF, 6, "the spilled buffer");
}

START_TEST(a_copy_on_another_devices_stream_is_synced_before_a_move) { copy_on_another_devices_stream(OS_DTOH); }
END_TEST
START_TEST(a_unified_copy_on_another_devices_stream_is_synced_before_a_move) { copy_on_another_devices_stream(OS_UNIFIED); }
END_TEST
START_TEST(a_2d_copy_on_another_devices_stream_is_synced_before_a_move) { copy_on_another_devices_stream(OS_2D); }
END_TEST
START_TEST(a_peer_copy_on_another_devices_stream_is_synced_before_a_move) { copy_on_another_devices_stream(OS_PEER); }
END_TEST

/* A batch copy names more pointers than the sides a submission touches
 * (SPW_MAX_SIDES, 64): the copy past them reads device 1's pool on device
 * 0's stream, without peer access. Device 1 must count among the devices
 * that reach its pages all the same, so that its move syncs device 0. */
START_TEST(a_batch_past_the_touched_sides_is_synced_before_a_move)
{
    if (!rig_driver_has(12080))
        return; /* no cuMemcpyBatchAsync */
    CUcontext c0 = setup(0), c1 = setup(1);
    CUdeviceptr b1 = filled(BUF, 8); /* device 1's pool (c1 current) */
    CU_OK(cuCtxSynchronize()); /* the fill done: device 0 reads b1 */
    CU_OK(cuCtxSetCurrent(c0));
    CUdeviceptr y;
    CU_OK(cuMemAlloc(&y, 1 * MiB)); /* device 0's pool (and syncer) */
    CUstream s0;
    CU_OK(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING));
    enum { N = 40 };
    void *host, *small;
    CU_OK(cuMemAllocHost(&host, BUF));
    CU_OK(cuMemAllocHost(&small, 2 * N * 64));
    CUdeviceptr dsts[N], srcs[N];
    size_t sizes[N], idx = 0;
    for (unsigned i = 0; i < N - 1; i++) { /* host to host: two sides each */
        dsts[i] = (CUdeviceptr)(uintptr_t)small + 2 * i * 64;
        srcs[i] = (CUdeviceptr)(uintptr_t)small + (2 * i + 1) * 64;
        sizes[i] = 64;
    }
    dsts[N - 1] = (CUdeviceptr)(uintptr_t)host;
    srcs[N - 1] = b1;
    sizes[N - 1] = BUF;
    CUmemcpyAttributes at = {.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM};
    sleep_on(s0, 300);
    CU_OK(cuMemcpyBatchAsync(dsts, srcs, sizes, N, &at, &idx, 1, s0));
    CU_OK(cuCtxSetCurrent(c1));
    CUdeviceptr x;
    CU_OK(cuMemAlloc(&x, PAST_BUF)); /* past device 1's limit: b1 spills */
    ck_assert_uint_gt(rig_pool(1).spill_bytes, 0);
    CU_OK(cuCtxSetCurrent(c0));
    CU_OK(cuStreamSynchronize(s0));
    uint32_t *want = rig_expected(BUF, 8);
    ck_assert(memcmp(host, want, BUF) == 0);
    free(want);
    CU_OK(cuStreamDestroy(s0));
    CU_OK(cuCtxSetCurrent(c1));
    rig_expect_pattern(b1, BUF, 8, "the spilled buffer");
}
END_TEST

/* ---- contexts the program created ------------------------------------------ */

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

/* ---- an asker that gave up (gates.sh's run with a short patience) --------- */

struct asker {
    CUcontext ctx;
    size_t bytes;
    unsigned delay_ms;
};

static void *ask_for_room(void *arg)
{
    struct asker *a = arg;
    struct timespec ts = {0, (long)a->delay_ms * 1000000L};
    nanosleep(&ts, NULL);
    CU_OK(cuCtxSetCurrent(a->ctx));
    CUdeviceptr p;
    (void)cuMemAlloc(&p, a->bytes); /* host pages or out of memory: either will do */
    return NULL;
}

/* A thread in a context of its own asks device 0's syncer for a sync
 * point while another thread's sync is under way (a 1 s kernel), gives up
 * at its deadline (SPW_TEST_PATIENCE_MS=200) and destroys its context. The
 * syncer's next sync, which that ask called for, must not make the
 * destroyed context current: on a GPU its handle is freed memory, or by
 * then another context's. */
START_TEST(an_asker_that_gave_up_leaves_no_context_behind)
{
    CUcontext c0 = setup(0);
    CUdeviceptr all;
    CU_OK(cuMemAlloc(&all, LIMIT));
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    sleep_on(s, 1000);
    CU_OK(cuMemFree(all)); /* its pages wait for a sync point */
    CUcontext mine;
    CU_OK(cuCtxCreate(&mine, NULL, 0, 0));
    CU_OK(cuCtxSetCurrent(c0));
    struct asker first = {.ctx = c0, .bytes = LIMIT, .delay_ms = 0};
    struct asker second = {.ctx = mine, .bytes = LIMIT / 2, .delay_ms = 50};
    pthread_t t1, t2;
    ck_assert_int_eq(pthread_create(&t1, NULL, ask_for_room, &first), 0);
    ck_assert_int_eq(pthread_create(&t2, NULL, ask_for_room, &second), 0);
    ck_assert_int_eq(pthread_join(t1, NULL), 0);
    ck_assert_int_eq(pthread_join(t2, NULL), 0);
    uint64_t syncs = rig_pool(0).syncs;
    CU_OK(cuCtxDestroy(mine));
    unsigned long long stale = fakecuda_stale_context_uses();
    CU_OK(cuCtxSetCurrent(c0));
    CU_OK(cuStreamSynchronize(s));
    /* The sync under way ends, then the one the second ask called for. */
    for (int i = 0; i < 300 && rig_pool(0).syncs < syncs + 2 && fakecuda_stale_context_uses() == stale; i++) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    ck_assert_msg(fakecuda_stale_context_uses() == stale,
                  "a sync made the destroyed context current %llu times",
                  fakecuda_stale_context_uses() - stale);
    ck_assert_msg(rig_pool(0).syncs >= syncs + 2, "%llu syncs after the asks, not 2",
                  (unsigned long long)(rig_pool(0).syncs - syncs));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* ---- stream memory operations, CUDA 8's ABI ------------------------------- */

#undef cuStreamWriteValue32
#undef cuStreamWaitValue32
#undef cuStreamBatchMemOp
CUresult cuStreamWriteValue32(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
CUresult cuStreamWriteValue32_ptsz(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
CUresult cuStreamWaitValue32(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
CUresult cuStreamBatchMemOp(CUstream, unsigned int, CUstreamBatchMemOpParams *, unsigned int);
typedef CUresult (*write32_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

static int in_spillway(const void *p)
{
    Dl_info info;
    return p && dladdr(p, &info) && info.dli_fname && strstr(info.dli_fname, "libspillway.so");
}

/* The first address of [p, p + bytes) whose page lives on the host. */
static CUdeviceptr spilled_at(CUdeviceptr p, size_t bytes)
{
    for (CUdeviceptr a = p; a < p + bytes; a += 2 * MiB)
        if (fakecuda_mapped_location(a) != 0)
            return a;
    ck_abort_msg("nothing of the buffer spilled");
    return 0;
}

/* Device 0 set up, a BUF buffer of pattern 5 partly spilled (more
 * pressure after the spill, then room to fill into), and a stream of its
 * own: *c0, *s. */
static CUdeviceptr partly_spilled(CUcontext *c0, CUstream *s)
{
    *c0 = setup(0);
    CUdeviceptr b = filled(BUF, 5);
    spill_device0(*c0);
    CUdeviceptr x;
    CU_OK(cuMemAlloc(&x, BIT_MORE));
    CU_OK(cuMemFree(x));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuStreamCreate(s, CU_STREAM_NON_BLOCKING));
    return b;
}

/* A program built with CUDA 8-11.6 headers (-lcuda) or a runtime asking
 * cuGetProcAddress for a version before 11.7 gets the unsuffixed ABI: it
 * is spillway's, and like every submission it touches what it names, so
 * that spilled data it is about to use is filled back first (then gated). */
/* A copy or set of 0 bytes touches no memory (the driver does nothing):
 * the spilled buffer it names stays where it is, no fill and no sync. */
START_TEST(an_empty_copy_or_set_fills_nothing_back)
{
    CUcontext c0;
    CUstream s;
    CUdeviceptr b = partly_spilled(&c0, &s);
    CUdeviceptr a = spilled_at(b, BUF);
    size_t before = rig_resident(b, BUF, 0);
    char host[4];
    CU_OK(cuMemcpyDtoH(host, a, 0));
    CU_OK(cuMemcpyHtoDAsync(a, host, 0, s));
    CU_OK(cuMemcpyDtoD(a, a + 4096, 0));
    CU_OK(cuMemsetD32(a, 0, 0));
    CU_OK(cuMemsetD8Async(a, 0, 0, s));
    /* 2D and 3D: no width, no row or no slice is nothing either. */
    CUDA_MEMCPY2D c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = a;
    c.srcPitch = 4096;
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = host;
    c.dstPitch = 4096;
    c.WidthInBytes = 4;
    CU_OK(cuMemcpy2D(&c)); /* Height 0 */
    c.Height = 1;
    c.WidthInBytes = 0;
    CU_OK(cuMemcpy2DAsync(&c, s));
    CUDA_MEMCPY3D c3;
    memset(&c3, 0, sizeof c3);
    c3.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c3.dstDevice = a;
    c3.srcMemoryType = CU_MEMORYTYPE_HOST;
    c3.srcHost = host;
    c3.WidthInBytes = 4;
    c3.Height = 1;
    CU_OK(cuMemcpy3D(&c3)); /* Depth 0 */
    CU_OK(cuMemsetD2D8(a, 4096, 0, 0, 4));
    CU_OK(cuMemsetD2D32Async(a, 4096, 0, 4, 0, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_eq(rig_resident(b, BUF, 0), before);
    ck_assert_int_ne(fakecuda_mapped_location(a), 0);
    rig_expect_pattern(b, BUF, 5, "the buffer");
}
END_TEST

START_TEST(memops_of_cuda_8_pass_the_gate)
{
    CUcontext c0;
    CUstream s;
    CUdeviceptr b = partly_spilled(&c0, &s);
    void *pfn = NULL;
    CUdriverProcAddressQueryResult q;
    CU_OK(cuGetProcAddress("cuStreamWriteValue32", &pfn, 11000, CU_GET_PROC_ADDRESS_DEFAULT, &q));
    void *ppt = NULL;
    CU_OK(cuGetProcAddress("cuStreamWriteValue32", &ppt, 11000,
                           CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &q));
    write32_fn ways[] = {cuStreamWriteValue32, cuStreamWriteValue32_ptsz, (write32_fn)pfn,
                         (write32_fn)ppt};
    for (unsigned i = 0; i < sizeof ways / sizeof ways[0]; i++) {
        ck_assert_msg(in_spillway((void *)ways[i]), "way %u is the driver's", i);
        CUdeviceptr a = spilled_at(b, BUF);
        CU_OK(ways[i](s, a, 0xc0ffee00u + i, 0));
        CU_OK(cuStreamSynchronize(s));
        ck_assert_msg(fakecuda_mapped_location(a) == 0, "way %u: not filled back", i);
        uint32_t got;
        CU_OK(cuMemcpyDtoH(&got, a, sizeof got));
        ck_assert_uint_eq(got, 0xc0ffee00u + i);
        spill_device0_leaving_room(c0); /* away again for the next way */
    }
    ck_assert(in_spillway((void *)cuStreamWaitValue32));
    ck_assert(in_spillway((void *)cuStreamBatchMemOp));
    CUstreamBatchMemOpParams op[2];
    memset(op, 0, sizeof op);
    op[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
    op[0].writeValue.address = b;
    op[0].writeValue.value = 77;
    op[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
    op[1].waitValue.address = b;
    op[1].waitValue.value = 77;
    op[1].waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
    CU_OK(cuStreamBatchMemOp(s, 2, op, 0));
    CU_OK(cuStreamWaitValue32(s, b, 77, CU_STREAM_WAIT_VALUE_GEQ));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* ---- decompression batches ------------------------------------------------ */

#undef cuMemBatchDecompressAsync
CUresult cuMemBatchDecompressAsync(CUmemDecompressParams *, size_t, unsigned, size_t *, CUstream);
CUresult cuMemBatchDecompressAsync_ptsz(CUmemDecompressParams *, size_t, unsigned, size_t *, CUstream);
typedef CUresult (*decompress_fn)(CUmemDecompressParams *, size_t, unsigned, size_t *, CUstream);

/* A batch names pool memory (cuMemAlloc memory is what the driver wants
 * there) to read and write asynchronously, like a copy: by every way of
 * calling it, it reaches spillway, and its spilled source comes back
 * before the submission (fakecuda, like every device without the
 * decompression engine, then refuses the batch itself). */
START_TEST(a_decompression_batch_passes_the_gate)
{
    if (!rig_driver_has(12080))
        return; /* no cuMemBatchDecompressAsync */
    CUcontext c0;
    CUstream s;
    CUdeviceptr b = partly_spilled(&c0, &s), act;
    CU_OK(cuMemAlloc(&act, 4096));
    spill_device0_leaving_room(c0); /* act may have taken the free page */
    void *pfn = NULL;
    CUdriverProcAddressQueryResult q;
    CU_OK(cuGetProcAddress("cuMemBatchDecompressAsync", &pfn, 12080, CU_GET_PROC_ADDRESS_DEFAULT, &q));
    decompress_fn ways[] = {cuMemBatchDecompressAsync, cuMemBatchDecompressAsync_ptsz, (decompress_fn)pfn};
    for (unsigned i = 0; i < sizeof ways / sizeof ways[0]; i++) {
        ck_assert_msg(in_spillway((void *)ways[i]), "way %u is the driver's", i);
        CUdeviceptr a = spilled_at(b, BUF);
        CUmemDecompressParams p;
        memset(&p, 0, sizeof p);
        p.srcNumBytes = 4096;
        p.dstNumBytes = 4096;
        /* The spilled address as the source, then as the destination. */
        p.src = i % 2 ? NULL : (const void *)(uintptr_t)a;
        p.dst = i % 2 ? (void *)(uintptr_t)a : NULL;
        p.dstActBytes = (cuuint32_t *)(uintptr_t)act;
        p.algo = CU_MEM_DECOMPRESS_ALGORITHM_DEFLATE;
        size_t at = 0;
        ck_assert_int_eq(ways[i](&p, 1, 0, &at, s), CUDA_ERROR_NOT_SUPPORTED);
        ck_assert_msg(fakecuda_mapped_location(a) == 0, "way %u: not filled back", i);
        spill_device0_leaving_room(c0);
    }
    CU_OK(cuStreamDestroy(s));
    rig_expect_pattern(b, BUF, 5, "the buffer decompression named");
}
END_TEST

/* ---- managed memory's prefetches, discards and attachments; callbacks ------ */

/* CUDA 8's prefetch (cuda.h maps the name to the _v2), the _v2's and the
 * batches' per-thread variants, which cuda.h declares only for its own
 * build. */
#undef cuMemPrefetchAsync
#undef cuMemPrefetchBatchAsync
#undef cuMemDiscardBatchAsync
#undef cuMemDiscardAndPrefetchBatchAsync
CUresult cuMemPrefetchAsync(CUdeviceptr, size_t, CUdevice, CUstream);
CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr, size_t, CUdevice, CUstream);
CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr, size_t, CUmemLocation, unsigned int, CUstream);
CUresult cuMemPrefetchBatchAsync(CUdeviceptr *, size_t *, size_t, CUmemLocation *, size_t *, size_t,
                                 unsigned long long, CUstream);
CUresult cuMemPrefetchBatchAsync_ptsz(CUdeviceptr *, size_t *, size_t, CUmemLocation *, size_t *, size_t,
                                      unsigned long long, CUstream);
CUresult cuMemDiscardBatchAsync(CUdeviceptr *, size_t *, size_t, unsigned long long, CUstream);
CUresult cuMemDiscardBatchAsync_ptsz(CUdeviceptr *, size_t *, size_t, unsigned long long, CUstream);
CUresult cuMemDiscardAndPrefetchBatchAsync(CUdeviceptr *, size_t *, size_t, CUmemLocation *, size_t *, size_t,
                                           unsigned long long, CUstream);
CUresult cuMemDiscardAndPrefetchBatchAsync_ptsz(CUdeviceptr *, size_t *, size_t, CUmemLocation *, size_t *,
                                                size_t, unsigned long long, CUstream);
#undef cuStreamAttachMemAsync
#undef cuStreamAddCallback
CUresult cuStreamAttachMemAsync_ptsz(CUstream, CUdeviceptr, size_t, unsigned int);
CUresult cuStreamAddCallback_ptsz(CUstream, CUstreamCallback, void *, unsigned int);

/* Each entry point of a prefetch, discard or attachment of managed
 * memory, or a stream callback (ordered work that names no pool memory),
 * with the cuGetProcAddress name and version that answer it (CUDA 8's
 * prefetch up to 12.1, the _v2 from 12.2, the batches from 13.0), and
 * whether it is the per-thread variant. */
enum managed_way {
    MW_V1, MW_V1_PT, MW_V2, MW_V2_PT, MW_BATCH, MW_BATCH_PT, MW_DISCARD, MW_DISCARD_PT, MW_BOTH, MW_BOTH_PT,
    MW_ATTACH, MW_ATTACH_PT, MW_CALLBACK, MW_CALLBACK_PT, MW_COUNT
};
static const struct {
    const char *symbol, *base;
    int version, per_thread;
    void *fn;
} managed_ways[MW_COUNT] = {
    {"cuMemPrefetchAsync", "cuMemPrefetchAsync", 8000, 0, (void *)cuMemPrefetchAsync},
    {"cuMemPrefetchAsync_ptsz", "cuMemPrefetchAsync", 8000, 1, (void *)cuMemPrefetchAsync_ptsz},
    {"cuMemPrefetchAsync_v2", "cuMemPrefetchAsync", 12020, 0, (void *)cuMemPrefetchAsync_v2},
    {"cuMemPrefetchAsync_v2_ptsz", "cuMemPrefetchAsync", 12020, 1, (void *)cuMemPrefetchAsync_v2_ptsz},
    {"cuMemPrefetchBatchAsync", "cuMemPrefetchBatchAsync", 13000, 0, (void *)cuMemPrefetchBatchAsync},
    {"cuMemPrefetchBatchAsync_ptsz", "cuMemPrefetchBatchAsync", 13000, 1, (void *)cuMemPrefetchBatchAsync_ptsz},
    {"cuMemDiscardBatchAsync", "cuMemDiscardBatchAsync", 13000, 0, (void *)cuMemDiscardBatchAsync},
    {"cuMemDiscardBatchAsync_ptsz", "cuMemDiscardBatchAsync", 13000, 1, (void *)cuMemDiscardBatchAsync_ptsz},
    {"cuMemDiscardAndPrefetchBatchAsync", "cuMemDiscardAndPrefetchBatchAsync", 13000, 0,
     (void *)cuMemDiscardAndPrefetchBatchAsync},
    {"cuMemDiscardAndPrefetchBatchAsync_ptsz", "cuMemDiscardAndPrefetchBatchAsync", 13000, 1,
     (void *)cuMemDiscardAndPrefetchBatchAsync_ptsz},
    {"cuStreamAttachMemAsync", "cuStreamAttachMemAsync", 6000, 0, (void *)cuStreamAttachMemAsync},
    {"cuStreamAttachMemAsync_ptsz", "cuStreamAttachMemAsync", 6000, 1, (void *)cuStreamAttachMemAsync_ptsz},
    {"cuStreamAddCallback", "cuStreamAddCallback", 5000, 0, (void *)cuStreamAddCallback},
    {"cuStreamAddCallback_ptsz", "cuStreamAddCallback", 5000, 1, (void *)cuStreamAddCallback_ptsz},
};

/* The ways this driver has: the batches are CUDA 13.0's (gates.sh also
 * runs on a 12.7 driver). */
static int managed_way_there(int w)
{
    return managed_ways[w].version <= 12020 || rig_driver_has(13000);
}

/* Every way reaches spillway's handler: the exported symbol (a -lcuda
 * program), dlsym of the driver's handle (XLA, TensorFlow), and
 * cuGetProcAddress at its version, and at the version before the next
 * ABI for CUDA 8's prefetch, else 13.0's (the CUDA runtime, PyTorch), each
 * the handler of the same ABI and variant. */
START_TEST(unpooled_ordered_work_reaches_spillway)
{
    setup(0);
    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    ck_assert_ptr_nonnull(drv);
    char missed[2048] = "";
#define MISSED(...) snprintf(missed + strlen(missed), sizeof missed - strlen(missed), __VA_ARGS__)
    for (int w = 0; w < MW_COUNT; w++) {
        if (!managed_way_there(w))
            continue;
        const char *sym = managed_ways[w].symbol;
        void *fn = managed_ways[w].fn;
        if (!in_spillway(fn))
            MISSED(" %s", sym);
        if (dlsym(drv, sym) != fn)
            MISSED(" dlsym(%s)", sym);
        cuuint64_t flags =
            managed_ways[w].per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_DEFAULT;
        int versions[2] = {managed_ways[w].version, managed_ways[w].version == 8000 ? 12010 : 13000};
        for (int v = 0; v < 2; v++) {
            void *pfn = NULL;
            CUdriverProcAddressQueryResult q;
            CU_OK(cuGetProcAddress(managed_ways[w].base, &pfn, versions[v], flags, &q));
            if (pfn != fn)
                MISSED(" cuGetProcAddress(%s,%d%s)", managed_ways[w].base, versions[v],
                       managed_ways[w].per_thread ? ",pt" : "");
        }
    }
#undef MISSED
    dlclose(drv);
    ck_assert_msg(!missed[0], "not spillway's handler of the same ABI:%s", missed);
}
END_TEST

struct managed_call {
    int way;
    CUcontext c0;
    CUstream s;
    CUdeviceptr m; /* managed memory */
    CUresult r;
    uint64_t spilled_after; /* device 0's spill_bytes when the call returned */
};

static void CUDA_CB no_callback(CUstream s, CUresult status, void *arg)
{
    (void)s;
    (void)status;
    (void)arg;
}

static void *call_managed_way(void *arg)
{
    struct managed_call *c = arg;
    CU_OK(cuCtxSetCurrent(c->c0));
    CUmemLocation dev0 = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
    CUdeviceptr dptrs[1] = {c->m};
    size_t sizes[1] = {64 * 1024}, idxs[1] = {0};
    switch (c->way) {
    case MW_V1: c->r = cuMemPrefetchAsync(c->m, 64 * 1024, 0, c->s); break;
    case MW_V1_PT: c->r = cuMemPrefetchAsync_ptsz(c->m, 64 * 1024, 0, c->s); break;
    case MW_V2: c->r = cuMemPrefetchAsync_v2(c->m, 64 * 1024, dev0, 0, c->s); break;
    case MW_V2_PT: c->r = cuMemPrefetchAsync_v2_ptsz(c->m, 64 * 1024, dev0, 0, c->s); break;
    case MW_BATCH: c->r = cuMemPrefetchBatchAsync(dptrs, sizes, 1, &dev0, idxs, 1, 0, c->s); break;
    case MW_BATCH_PT: c->r = cuMemPrefetchBatchAsync_ptsz(dptrs, sizes, 1, &dev0, idxs, 1, 0, c->s); break;
    case MW_DISCARD: c->r = cuMemDiscardBatchAsync(dptrs, sizes, 1, 0, c->s); break;
    case MW_DISCARD_PT: c->r = cuMemDiscardBatchAsync_ptsz(dptrs, sizes, 1, 0, c->s); break;
    case MW_BOTH: c->r = cuMemDiscardAndPrefetchBatchAsync(dptrs, sizes, 1, &dev0, idxs, 1, 0, c->s); break;
    case MW_BOTH_PT: c->r = cuMemDiscardAndPrefetchBatchAsync_ptsz(dptrs, sizes, 1, &dev0, idxs, 1, 0, c->s); break;
    case MW_ATTACH: c->r = cuStreamAttachMemAsync(c->s, c->m, 0, CU_MEM_ATTACH_GLOBAL); break;
    case MW_ATTACH_PT: c->r = cuStreamAttachMemAsync_ptsz(c->s, c->m, 0, CU_MEM_ATTACH_GLOBAL); break;
    case MW_CALLBACK: c->r = cuStreamAddCallback(c->s, no_callback, NULL, 0); break;
    default: c->r = cuStreamAddCallback_ptsz(c->s, no_callback, NULL, 0); break;
    }
    c->spilled_after = rig_pool(0).spill_bytes;
    return NULL;
}

static void *move_device0(void *arg)
{
    spill_device0(*(CUcontext *)arg);
    return NULL;
}

/* Each way is gated: called while device 0's gate is closed for a move (its
 * mover's sync, which waits for a 600 ms kernel, has begun: the gate
 * closes before it), it returns only once the move is done, its pages
 * spilled. A way that went around the gate returns during the sync,
 * before anything spilled. Managed memory and callbacks are never the
 * pool's, so only the bracket can show. */
START_TEST(unpooled_ordered_work_waits_for_a_move)
{
    CUcontext c0 = setup(0);
    CUdeviceptr m;
    CU_OK(cuMemAllocManaged(&m, 64 * 1024, CU_MEM_ATTACH_GLOBAL));
    CUdeviceptr b = filled(BUF, 5);
    CUstream s, busy;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&busy, CU_STREAM_NON_BLOCKING));
    ck_assert_uint_eq(rig_pool(0).spill_bytes, 0);
    sleep_on(busy, 600);
    long long syncs = fakecuda_calls("cuCtxSynchronize");
    pthread_t mover;
    ck_assert_int_eq(pthread_create(&mover, NULL, move_device0, &c0), 0);
    for (int i = 0; i < 10000 && fakecuda_calls("cuCtxSynchronize") == syncs; i++) {
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    ck_assert_msg(fakecuda_calls("cuCtxSynchronize") > syncs, "no move began its sync in 10 s");
    ck_assert_msg(rig_pool(0).spill_bytes == 0, "the move ended before the ways were called");
    struct managed_call calls[MW_COUNT];
    pthread_t t[MW_COUNT];
    for (int w = 0; w < MW_COUNT; w++) {
        calls[w] = (struct managed_call){.way = w, .c0 = c0, .s = s, .m = m, .r = CUDA_ERROR_UNKNOWN};
        if (managed_way_there(w))
            ck_assert_int_eq(pthread_create(&t[w], NULL, call_managed_way, &calls[w]), 0);
    }
    for (int w = 0; w < MW_COUNT; w++)
        if (managed_way_there(w))
            ck_assert_int_eq(pthread_join(t[w], NULL), 0);
    ck_assert_int_eq(pthread_join(mover, NULL), 0);
    char ungated[512] = "";
    for (int w = 0; w < MW_COUNT; w++) {
        if (!managed_way_there(w))
            continue;
        ck_assert_msg(calls[w].r == CUDA_SUCCESS, "%s: %d", managed_ways[w].symbol, (int)calls[w].r);
        if (!calls[w].spilled_after)
            snprintf(ungated + strlen(ungated), sizeof ungated - strlen(ungated), " %s", managed_ways[w].symbol);
    }
    ck_assert_msg(!ungated[0], "returned during the move (not gated):%s", ungated);
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuStreamDestroy(busy));
    CU_OK(cuMemFree(m));
    rig_expect_pattern(b, BUF, 5, "the spilled buffer");
}
END_TEST

/* ---- captures begun through CUDA 10.0's ABI -------------------------------- */

#undef cuStreamBeginCapture
CUresult cuStreamBeginCapture(CUstream);
CUresult cuStreamBeginCapture_ptsz(CUstream);
typedef CUresult (*begin_v1_fn)(CUstream);

/* A capture (A, RELAXED) stays live while another one (B) is begun through
 * the mode-less ABI and ended: spillway must still count A, so an
 * allocation past the limit gets host pages without a spill (a sync would
 * invalidate A), and A ends intact. Uncounted, B's end took A's count. */
START_TEST(a_capture_begun_without_a_mode_is_counted)
{
    CUcontext c0 = setup(0);
    (void)c0;
    CUdeviceptr b = filled(BUF, 4);
    void *pfn = NULL, *ppt = NULL;
    CUdriverProcAddressQueryResult q;
    CU_OK(cuGetProcAddress("cuStreamBeginCapture", &pfn, 10000, CU_GET_PROC_ADDRESS_DEFAULT, &q));
    CU_OK(cuGetProcAddress("cuStreamBeginCapture", &ppt, 10000,
                           CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &q));
    begin_v1_fn ways[] = {cuStreamBeginCapture, cuStreamBeginCapture_ptsz, (begin_v1_fn)pfn,
                          (begin_v1_fn)ppt};
    for (unsigned i = 0; i < sizeof ways / sizeof ways[0]; i++) {
        CUstream sa, sb;
        CU_OK(cuStreamCreate(&sa, CU_STREAM_NON_BLOCKING));
        CU_OK(cuStreamCreate(&sb, CU_STREAM_NON_BLOCKING));
        CU_OK(cuStreamBeginCapture_v2(sa, CU_STREAM_CAPTURE_MODE_RELAXED));
        CU_OK(cuMemsetD32Async(b, i, 16, sa));
        CU_OK(ways[i](sb));
        CU_OK(cuMemsetD32Async(b + 64, i, 16, sb));
        CUgraph gb = NULL, ga = NULL;
        CU_OK(cuStreamEndCapture(sb, &gb));
        CUdeviceptr x;
        CU_OK(cuMemAlloc(&x, PAST_BUF)); /* past the limit, while A captures */
        ck_assert_msg(rig_pool(0).spill_bytes == 0, "way %u: spilled during a capture", i);
        CU_OK(cuStreamEndCapture(sa, &ga));
        ck_assert_ptr_nonnull(ga);
        CU_OK(cuGraphDestroy(ga));
        CU_OK(cuGraphDestroy(gb));
        CU_OK(cuMemFree(x));
        CU_OK(cuStreamDestroy(sa));
        CU_OK(cuStreamDestroy(sb));
    }
}
END_TEST

/* The same for a program mapping on device 0's pool pages (cuMemCreate,
 * as JAX's arena), which lies in no pool arena: a copy of it queued on
 * device 1's stream, device 1 given no access (fakecuda copies without it), runs on
 * device 1, so a move of its pages must sync device 1 as for a pool
 * block's (copy_on_another_devices_stream). */
START_TEST(a_program_mappings_copy_on_another_devices_stream_is_synced_before_a_move)
{
    CUcontext c0 = setup(0), c1 = setup(1);
    CU_OK(cuCtxSetCurrent(c1));
    CUdeviceptr y; /* device 1's pool (and syncer) */
    CU_OK(cuMemAlloc(&y, 1 * MiB));
    CUstream s1;
    CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    void *host;
    CU_OK(cuMemAllocHost(&host, BUF));
    CU_OK(cuCtxSetCurrent(c0));
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUdeviceptr va;
    CUmemGenericAllocationHandle h;
    CU_OK(cuMemAddressReserve(&va, BUF, 0, 0, 0));
    CU_OK(cuMemCreate(&h, BUF, &prop, 0));
    CU_OK(cuMemMap(va, BUF, 0, h, 0));
    CUmemAccessDesc a = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                         .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CU_OK(cuMemSetAccess(va, BUF, &a, 1));
    uint32_t *want = rig_expected(BUF, 9);
    CU_OK(cuMemcpyHtoD(va, want, BUF));
    CU_OK(cuCtxSynchronize()); /* the fill done: device 1 reads va */
    CU_OK(cuCtxSetCurrent(c1));
    sleep_on(s1, 300);
    CU_OK(cuCtxSetCurrent(c0));
    CU_OK(cuMemcpyDtoHAsync(host, va, BUF, s1));
    spill_device0(c0);
    CU_OK(cuCtxSetCurrent(c1));
    CU_OK(cuStreamSynchronize(s1));
    ck_assert(memcmp(host, want, BUF) == 0);
    CU_OK(cuStreamDestroy(s1));
    CU_OK(cuCtxSetCurrent(c0));
    rig_expect_words(va, want, BUF, "the spilled mapping");
    free(want);
}
END_TEST

/* ---- a graph launched on another device's stream --------------------------- */

/* A graph of device 1 (its copy node in device 1's context) whose copy
 * reads device 0's pool without peer access, launched on a stream of
 * device 1 while device 0's context is current (one thread driving
 * several devices): the copy runs on device 1, so a move of its pages
 * must sync device 1 too, as for a copy queued there
 * (device1_reads_device0). */
START_TEST(a_graph_on_another_devices_stream_is_synced_before_a_move)
{
    CUcontext c0 = setup(0), c1 = setup(1);
    CU_OK(cuCtxSetCurrent(c1));
    CUdeviceptr y;
    CU_OK(cuMemAlloc(&y, 1 * MiB));
    CU_OK(cuCtxSetCurrent(c0));
    CUdeviceptr b = filled(BUF, 8);
    CU_OK(cuCtxSynchronize()); /* the fill done: device 1 reads b */
    void *host;
    CU_OK(cuMemAllocHost(&host, BUF));
    CUgraph g;
    CU_OK(cuGraphCreate(&g, 0));
    CUDA_MEMCPY3D c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = b;
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = host;
    c.WidthInBytes = BUF;
    c.Height = 1;
    c.Depth = 1;
    CUgraphNode node;
    CU_OK(cuGraphAddMemcpyNode(&node, g, NULL, 0, &c, c1));
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    CU_OK(cuCtxSetCurrent(c1));
    CUstream s1;
    CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    sleep_on(s1, 300);
    CU_OK(cuCtxSetCurrent(c0));
    CU_OK(cuGraphLaunch(e, s1));
    spill_device0(c0);
    CU_OK(cuCtxSetCurrent(c1));
    CU_OK(cuStreamSynchronize(s1));
    uint32_t *want = rig_expected(BUF, 8);
    ck_assert(memcmp(host, want, BUF) == 0);
    free(want);
    rig_expect_pattern(b, BUF, 8, "the spilled buffer");
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("shim_gates");
    TCase *tc;
    if (getenv("SPW_GATES_PATIENCE")) {
        tc = tcase_create("patience");
        tcase_add_test(tc, an_asker_that_gave_up_leaves_no_context_behind);
        suite_add_tcase(s, tc);
        return s;
    }
    tc = tcase_create("gates");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_peer_without_a_pool_is_synced_before_a_move);
    tcase_add_test(tc, a_peer_with_a_pool_is_synced_before_a_move);
    tcase_add_test(tc, a_device_that_copied_without_peer_access_is_synced_before_a_move);
    tcase_add_test(tc, a_device_without_a_pool_that_copied_is_synced_before_a_move);
    tcase_add_test(tc, a_copy_on_another_devices_stream_is_synced_before_a_move);
    tcase_add_test(tc, a_unified_copy_on_another_devices_stream_is_synced_before_a_move);
    tcase_add_test(tc, a_2d_copy_on_another_devices_stream_is_synced_before_a_move);
    tcase_add_test(tc, a_peer_copy_on_another_devices_stream_is_synced_before_a_move);
    tcase_add_test(tc, a_batch_past_the_touched_sides_is_synced_before_a_move);
    tcase_add_test(tc, a_context_the_program_created_is_synced_before_a_move);
    tcase_add_test(tc, another_threads_own_context_is_synced_before_a_move);
    tcase_add_test(tc, an_own_context_that_only_copied_is_synced_before_a_move);
    tcase_add_test(tc, an_own_contexts_stream_is_synced_before_a_move);
    tcase_add_test(tc, an_own_contexts_stream_that_only_copied_is_synced_before_a_move);
    tcase_add_test(tc, a_destroyed_context_is_forgotten);
    tcase_add_test(tc, a_primary_sync_does_not_cover_an_own_contexts_work);
    tcase_add_test(tc, a_primary_sync_v2_does_not_cover_an_own_contexts_work);
    tcase_add_test(tc, an_empty_copy_or_set_fills_nothing_back);
    tcase_add_test(tc, memops_of_cuda_8_pass_the_gate);
    tcase_add_test(tc, a_decompression_batch_passes_the_gate);
    tcase_add_test(tc, unpooled_ordered_work_waits_for_a_move);
    tcase_add_test(tc, a_capture_begun_without_a_mode_is_counted);
    tcase_add_test(tc, a_graph_on_another_devices_stream_is_synced_before_a_move);
    tcase_add_test(tc, a_program_mappings_copy_on_another_devices_stream_is_synced_before_a_move);
    suite_add_tcase(s, tc);
    /* Also run alone against a driver whose lookups answer entry points it
     * does not export (gates.sh): the handlers then come by name and
     * version, hooks.def's. */
    tc = tcase_create("reach");
    tcase_add_test(tc, unpooled_ordered_work_reaches_spillway);
    suite_add_tcase(s, tc);
    return s;
}
