/* spillway only: memory the driver frees with its context (cuCtxDestroy
 * of a context the program made, cuDevicePrimaryCtxReset) stops being
 * counted against the limit then, in the counters and the stats segment;
 * a later cuMemFree of its stale pointer gets the driver's answer and
 * uncounts nothing twice. */
#include "tests/integration/pool/common.h"

#include "stats/reader.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t in_use_published(int dev, uint64_t *underflows, uint64_t *managed)
{
    struct spw_stats_snapshot snap;
    const char *dir = getenv("SPILLWAY_STATS_DIR");
    ck_assert_ptr_nonnull(dir);
    char name[64];
    snprintf(name, sizeof name, "spillway.%u.%d", (unsigned)getuid(), (int)getpid());
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    ck_assert_int_ge(fd, 0);
    char why[256];
    int removed = 0;
    enum spw_read_result r = spw_stats_read_at(fd, name, 0, &snap, &removed, why, sizeof why);
    close(fd);
    ck_assert_msg(r == SPW_READ_OK, "stats: %s", why);
    *underflows = snap.c[dev][SPW_C_UNDERFLOWS];
    *managed = snap.c[dev][SPW_C_PASS_MANAGED];
    return snap.c[dev][SPW_C_IN_USE];
}

/* Nothing of it counted any more, anywhere. */
static void expect_counted(int dev, uint64_t bytes)
{
    uint64_t underflows, managed;
    ck_assert_uint_eq(used_on(dev), bytes);
    ck_assert_uint_eq(in_use_published(dev, &underflows, &managed), bytes);
    ck_assert_uint_eq(underflows, 0);
    ck_assert_uint_eq(managed, 0); /* the pass-through gauge */
}

/* A context of the caller's own, made current; from any thread (the
 * threads' rounds below report errors instead of asserting). */
static CUresult create_own(CUcontext *c)
{
    CUctxCreateParams params;
    memset(&params, 0, sizeof params);
    return cuCtxCreate(c, &params, 0, 0);
}

static CUcontext created_context(void)
{
    CUcontext c;
    CU_OK(create_own(&c));
    return c;
}

/* Runs fn on n threads at once; each returns NULL or what went wrong. */
static void run_threads(int n, void *(*fn)(void *))
{
    pthread_t t[8];
    ck_assert_int_le(n, 8);
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, fn, NULL), 0);
    for (int i = 0; i < n; i++) {
        void *err;
        pthread_join(t[i], &err);
        ck_assert_msg(err == NULL, "thread %d: %s", i, (const char *)err);
    }
}

/* Managed memory passes the pool by, counted against the limit: once its
 * context is destroyed, the driver freed it, and three quarters of the
 * limit fit again. */
START_TEST(destroyed_context_uncounts_its_passthrough_memory)
{
    if (!pooled())
        return;
    use_device(0);
    size_t n = limit_bytes() / 4 * 3;
    CUcontext own = created_context();
    CUdeviceptr m;
    CU_OK(cuMemAllocManaged(&m, n, CU_MEM_ATTACH_GLOBAL));
    ck_assert_uint_eq(used_on(0), n);
    CU_OK(cuCtxDestroy(own)); /* the primary is current again */
    expect_counted(0, 0);
    ck_assert_int_eq(cuMemFree(m), CUDA_ERROR_INVALID_VALUE); /* the driver's answer */
    expect_counted(0, 0);
    CUdeviceptr again;
    CU_OK(cuMemAllocManaged(&again, n, CU_MEM_ATTACH_GLOBAL));
    CU_OK(cuMemFree(again));
    expect_counted(0, 0);
}
END_TEST

/* The same for a reset of the primary context: "Destroy all allocations". */
START_TEST(primary_reset_uncounts_its_passthrough_memory)
{
    if (!pooled())
        return;
    use_device(0);
    size_t n = limit_bytes() / 4 * 3;
    CUdeviceptr m;
    CU_OK(cuMemAllocManaged(&m, n, CU_MEM_ATTACH_GLOBAL));
    ck_assert_uint_eq(used_on(0), n);
    CU_OK(cuDevicePrimaryCtxReset(0));
    use_device(0);
    expect_counted(0, 0);
    ck_assert_int_eq(cuMemFree(m), CUDA_ERROR_INVALID_VALUE);
    expect_counted(0, 0);
    CUdeviceptr again;
    CU_OK(cuMemAllocManaged(&again, n, CU_MEM_ATTACH_GLOBAL));
    CU_OK(cuMemFree(again));
    expect_counted(0, 0);
}
END_TEST

/* A destroy the driver refuses frees nothing: the memory stays counted. */
START_TEST(refused_destroy_keeps_the_count)
{
    if (!pooled())
        return;
    use_device(0);
    CUcontext own = created_context();
    CUdeviceptr m;
    CU_OK(cuMemAllocManaged(&m, 4 * MiB, CU_MEM_ATTACH_GLOBAL));
    ck_assert_int_eq(fakecuda_fault_config("cuCtxDestroy:1", NULL, 0), 0);
    ck_assert_int_eq(cuCtxDestroy(own), CUDA_ERROR_UNKNOWN);
    ck_assert_int_eq(fakecuda_fault_config(NULL, NULL, 0), 0);
    ck_assert_uint_eq(used_on(0), 4 * MiB);
    CU_OK(cuMemFree(m));
    ck_assert_uint_eq(used_on(0), 0);
    CU_OK(cuCtxDestroy(own));
}
END_TEST

/* 1024 x 1024 floats: 4 MiB of texture memory. */
static const CUDA_ARRAY3D_DESCRIPTOR four_mib = {.Width = 1024, .Height = 1024, .Format = CU_AD_FORMAT_FLOAT,
                                                 .NumChannels = 1};

/* Arrays and mipmapped arrays (counted against the limit) and pinned host
 * memory (counted as host) made in a created context: the driver frees
 * them with it ("resources include ... CUarray, CUmipmappedArray ...
 * cuMemAllocHost()"), and they stop being counted then; their handles'
 * destroys get the driver's answer and uncount nothing twice. */
START_TEST(destroyed_context_uncounts_its_arrays_and_pinned_memory)
{
    if (!pooled())
        return;
    use_device(0);
    uint64_t host_before = used_on(SPILLWAY_HOST);
    CUcontext own = created_context();
    CUarray a;
    CU_OK(cuArray3DCreate(&a, &four_mib));
    CUmipmappedArray mm;
    CU_OK(cuMipmappedArrayCreate(&mm, &four_mib, 2)); /* 4 + 1 MiB */
    void *h;
    CU_OK(cuMemAllocHost(&h, 2 * MiB));
    ck_assert_uint_eq(used_on(0), 9 * MiB);
    ck_assert_uint_eq(used_on(SPILLWAY_HOST), host_before + 2 * MiB);
    CU_OK(cuCtxDestroy(own)); /* the primary is current again */
    expect_counted(0, 0);
    ck_assert_uint_eq(used_on(SPILLWAY_HOST), host_before);
    ck_assert_int_eq(cuArrayDestroy(a), CUDA_ERROR_INVALID_HANDLE); /* fakecuda's answer */
    ck_assert_int_eq(cuMipmappedArrayDestroy(mm), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(cuMemFreeHost(h), CUDA_ERROR_INVALID_VALUE);
    expect_counted(0, 0);
    ck_assert_uint_eq(used_on(SPILLWAY_HOST), host_before);
}
END_TEST

/* What the primary context made goes with its reset, and what a destroy
 * the driver refuses would have freed stays counted until freed. */
START_TEST(primary_reset_uncounts_its_arrays_refused_destroy_keeps_them)
{
    if (!pooled())
        return;
    use_device(0);
    uint64_t host_before = used_on(SPILLWAY_HOST);
    CUarray a;
    CU_OK(cuArray3DCreate(&a, &four_mib));
    void *h;
    CU_OK(cuMemAllocHost(&h, 2 * MiB));
    CU_OK(cuDevicePrimaryCtxReset(0));
    use_device(0);
    expect_counted(0, 0);
    ck_assert_uint_eq(used_on(SPILLWAY_HOST), host_before);

    CUcontext own = created_context();
    CU_OK(cuArray3DCreate(&a, &four_mib));
    CU_OK(cuMemAllocHost(&h, 2 * MiB));
    ck_assert_int_eq(fakecuda_fault_config("cuCtxDestroy:1", NULL, 0), 0);
    ck_assert_int_eq(cuCtxDestroy(own), CUDA_ERROR_UNKNOWN);
    ck_assert_int_eq(fakecuda_fault_config(NULL, NULL, 0), 0);
    ck_assert_uint_eq(used_on(0), 4 * MiB);
    ck_assert_uint_eq(used_on(SPILLWAY_HOST), host_before + 2 * MiB);
    CU_OK(cuCtxDestroy(own)); /* the second time goes through: all of it goes */
    expect_counted(0, 0);
    ck_assert_uint_eq(used_on(SPILLWAY_HOST), host_before);
}
END_TEST

/* An array destroyed in a created context, then one made in the primary
 * (the driver may give it the freed one's handle): the created context's
 * end leaves the primary's counted. */
START_TEST(destroy_leaves_arrays_of_other_contexts)
{
    if (!pooled())
        return;
    CUcontext primary = use_device(0);
    uint64_t host_before = used_on(SPILLWAY_HOST);
    CUcontext own = created_context();
    CUarray a, b;
    CU_OK(cuArray3DCreate(&a, &four_mib));
    void *h, *k;
    CU_OK(cuMemAllocHost(&h, 2 * MiB));
    CU_OK(cuArrayDestroy(a));
    CU_OK(cuMemFreeHost(h));
    CU_OK(cuCtxPushCurrent(primary));
    CU_OK(cuArray3DCreate(&b, &four_mib));
    CU_OK(cuMemAllocHost(&k, 2 * MiB));
    CU_OK(cuCtxPopCurrent(NULL));
    CU_OK(cuCtxDestroy(own));
    expect_counted(0, 4 * MiB);
    ck_assert_uint_eq(used_on(SPILLWAY_HOST), host_before + 2 * MiB);
    CU_OK(cuArrayDestroy(b));
    CU_OK(cuMemFreeHost(k));
    expect_counted(0, 0);
    ck_assert_uint_eq(used_on(SPILLWAY_HOST), host_before);
}
END_TEST

/* A pool block (cuMemAlloc the pool serves) made in a context the program
 * created dies with it too, as the driver frees its cuMemAlloc memory:
 * back in the pool, uncounted, and three quarters of the limit fit again
 * (with spill off they would be refused). */
START_TEST(destroyed_context_frees_its_pool_blocks)
{
    if (!pooled())
        return;
    use_device(0);
    size_t n = limit_bytes() / 4 * 3;
    CUcontext own = created_context();
    CUdeviceptr m, pitched;
    size_t pitch;
    CU_OK(cuMemAlloc(&m, n));
    CU_OK(cuMemAllocPitch(&pitched, &pitch, 4096, 64, 4));
    ck_assert_uint_eq(used_on(0), n + pitch * 64);
    CU_OK(cuCtxDestroy(own)); /* the primary is current again */
    expect_counted(0, 0);
    ck_assert_int_ne(cuMemFree(m), CUDA_SUCCESS); /* freed with its context */
    expect_counted(0, 0);
    CUdeviceptr again;
    CU_OK(cuMemAlloc(&again, n));
    ck_assert_uint_eq(used_on(0), n);
    CU_OK(cuMemFree(again));
    expect_counted(0, 0);
}
END_TEST

/* Only the destroyed context's blocks go: one freed before the destroy
 * (its address handed to the primary context's next allocation), the
 * primary context's own and another created context's stay allocated,
 * with their data. */
START_TEST(destroy_leaves_other_contexts_blocks)
{
    if (!pooled())
        return;
    CUcontext primary = use_device(0);
    CUdeviceptr before;
    CU_OK(cuMemAlloc(&before, 4 * MiB));
    CU_OK(cuMemsetD8(before, 0x5a, 4 * MiB));
    CUcontext own = created_context();
    CUdeviceptr freed, kept;
    CU_OK(cuMemAlloc(&freed, 2 * MiB));
    CU_OK(cuMemAlloc(&kept, 2 * MiB));
    CU_OK(cuMemFree(freed));
    CUcontext other = created_context(); /* pushed over own */
    CUdeviceptr others;
    CU_OK(cuMemAlloc(&others, MiB));
    CU_OK(cuMemsetD8(others, 0x77, MiB));
    /* The set runs on this context's legacy stream, which the primary
     * context's copies below do not wait for: a memset of device memory
     * may return before it is done (fakecuda's did, on a loaded machine). */
    CU_OK(cuCtxSynchronize());
    CUcontext popped;
    CU_OK(cuCtxPopCurrent(&popped));
    ck_assert_ptr_eq(popped, other);
    CU_OK(cuCtxPushCurrent(primary));
    CUdeviceptr reused;
    CU_OK(cuMemAlloc(&reused, 2 * MiB)); /* likely at freed's address */
    CU_OK(cuMemsetD8(reused, 0x3c, 2 * MiB));
    CU_OK(cuCtxPopCurrent(&popped));
    CU_OK(cuCtxDestroy(own));
    CU_OK(cuCtxSetCurrent(primary));
    expect_counted(0, 7 * MiB);
    CUcontext c = NULL;
    CU_OK(cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, others));
    ck_assert_ptr_eq(c, other);
    expect_byte(before, 4 * MiB, 0x5a);
    expect_byte(reused, 2 * MiB, 0x3c);
    expect_byte(others, MiB, 0x77);
    CU_OK(cuCtxDestroy(other)); /* its block goes with it */
    CU_OK(cuCtxSetCurrent(primary));
    expect_counted(0, 6 * MiB);
    CU_OK(cuMemFree(reused));
    CU_OK(cuMemFree(before));
    expect_counted(0, 0);
}
END_TEST

/* The driver answers the context an allocation was made in; a pool block
 * made in the primary context answers the primary context. */
START_TEST(pool_block_names_its_context)
{
    CUcontext primary = use_device(0);
    CUdeviceptr in_primary;
    CU_OK(cuMemAlloc(&in_primary, MiB));
    CUcontext own = created_context();
    CUdeviceptr in_own;
    CU_OK(cuMemAlloc(&in_own, MiB));
    CUcontext c = NULL;
    CU_OK(cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, in_own));
    ck_assert_ptr_eq(c, own);
    CUpointer_attribute a[] = {CU_POINTER_ATTRIBUTE_CONTEXT};
    void *data[] = {&c};
    c = NULL;
    CU_OK(cuPointerGetAttributes(1, a, data, in_own + 4096));
    ck_assert_ptr_eq(c, own);
    CU_OK(cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, in_primary));
    ck_assert_ptr_eq(c, primary);
    CU_OK(cuMemFree(in_own));
    CU_OK(cuCtxDestroy(own));
    CU_OK(cuCtxSetCurrent(primary));
    CU_OK(cuMemFree(in_primary));
}
END_TEST

/* A block freed with cuMemFreeAsync before its context's destroy is the
 * free queue's, not the context's: not released a second time (its
 * address may be another allocation's by then). */
START_TEST(async_freed_block_is_not_released_again)
{
    if (!pooled())
        return;
    use_device(0);
    size_t n = limit_bytes() / 4;
    CUcontext own = created_context();
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr a, b;
    CU_OK(cuMemAlloc(&a, n));
    CU_OK(cuMemAlloc(&b, n));
    CU_OK(cuMemFreeAsync(a, s));
    CU_OK(cuCtxDestroy(own));
    expect_counted(0, 0);
    ck_assert_int_eq(cuMemFree(a), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemFree(b), CUDA_ERROR_INVALID_VALUE);
    expect_counted(0, 0);
    CUdeviceptr again;
    CU_OK(cuMemAlloc(&again, 3 * n));
    CU_OK(cuMemFree(again));
    expect_counted(0, 0);
}
END_TEST

/* A thread's rounds: a context of its own, four blocks, two freed, the
 * context destroyed with the other two. NULL, or what went wrong. */
static void *rounds_in_own_contexts(void *arg)
{
    (void)arg;
    for (int round = 0; round < 8; round++) {
        CUcontext own;
        if (create_own(&own) != CUDA_SUCCESS)
            return "cuCtxCreate";
        CUdeviceptr b[4];
        for (int i = 0; i < 4; i++)
            if (cuMemAlloc(&b[i], MiB + (size_t)i * 4096) != CUDA_SUCCESS ||
                cuMemsetD8(b[i], (unsigned char)(round + i), MiB) != CUDA_SUCCESS)
                return "cuMemAlloc or cuMemsetD8 in its own context";
        if (cuMemFree(b[0]) != CUDA_SUCCESS || cuMemFree(b[2]) != CUDA_SUCCESS)
            return "cuMemFree";
        if (cuCtxDestroy(own) != CUDA_SUCCESS)
            return "cuCtxDestroy";
    }
    return NULL;
}

/* Threads making, filling and destroying contexts of their own while the
 * primary context's block stays: every block they left to cuCtxDestroy
 * goes back, and none of another context's goes with it. */
START_TEST(threads_destroying_their_contexts_leave_others_blocks)
{
    CUcontext primary = use_device(0);
    CUdeviceptr mine;
    CU_OK(cuMemAlloc(&mine, 4 * MiB));
    CU_OK(cuMemsetD8(mine, 0x42, 4 * MiB));
    run_threads(4, rounds_in_own_contexts);
    CU_OK(cuCtxSetCurrent(primary));
    if (pooled())
        expect_counted(0, 4 * MiB);
    expect_byte(mine, 4 * MiB, 0x42);
    CU_OK(cuMemFree(mine));
    if (pooled())
        expect_counted(0, 0);
}
END_TEST

/* The release of the last reference to a primary context spillway holds
 * none of (device 1: the pool is device 0's) resets it: its arrays and
 * pinned host memory go with it, uncounted. */
START_TEST(last_primary_release_uncounts_its_arrays_and_pinned_memory)
{
    if (!pooled())
        return;
    use_device(0);
    uint64_t host_before = used_on(SPILLWAY_HOST);
    CUcontext c1;
    CU_OK(cuDevicePrimaryCtxRetain(&c1, 1));
    CU_OK(cuCtxPushCurrent(c1));
    CUarray a;
    CU_OK(cuArray3DCreate(&a, &four_mib));
    void *h;
    CU_OK(cuMemAllocHost(&h, 2 * MiB));
    ck_assert_uint_eq(used_on(1), 4 * MiB);
    ck_assert_uint_eq(used_on(SPILLWAY_HOST), host_before + 2 * MiB);
    CU_OK(cuCtxPopCurrent(NULL));
    CU_OK(cuDevicePrimaryCtxRelease(1));
    unsigned flags;
    int active = 1;
    CU_OK(cuDevicePrimaryCtxGetState(1, &flags, &active));
    ck_assert_int_eq(active, 0);
    ck_assert_uint_eq(used_on(1), 0);
    ck_assert_uint_eq(used_on(SPILLWAY_HOST), host_before);
}
END_TEST

/* 200 rounds of a created context making arrays and pinned buffers,
 * freeing some and leaving the rest to the context's destroy. */
static void *array_rounds(void *arg)
{
    (void)arg;
    for (int round = 0; round < 200; round++) {
        CUcontext own;
        if (create_own(&own) != CUDA_SUCCESS)
            return "cuCtxCreate";
        CUarray a[3];
        void *h[3];
        for (int i = 0; i < 3; i++)
            if (cuArray3DCreate(&a[i], &four_mib) != CUDA_SUCCESS ||
                cuMemAllocHost(&h[i], MiB) != CUDA_SUCCESS)
                return "create";
        if (cuArrayDestroy(a[1]) != CUDA_SUCCESS || cuMemFreeHost(h[0]) != CUDA_SUCCESS)
            return "destroy";
        if (cuCtxDestroy(own) != CUDA_SUCCESS)
            return "cuCtxDestroy";
    }
    return NULL;
}

/* Three threads at it at once, while the primary context holds an array
 * of its own: theirs all go, the primary's stays counted. */
START_TEST(threads_racing_array_contexts)
{
    if (!pooled())
        return;
    use_device(0);
    uint64_t host_before = used_on(SPILLWAY_HOST);
    CUarray mine;
    CU_OK(cuArray3DCreate(&mine, &four_mib));
    run_threads(3, array_rounds);
    use_device(0);
    expect_counted(0, 4 * MiB);
    ck_assert_uint_eq(used_on(SPILLWAY_HOST), host_before);
    CU_OK(cuArrayDestroy(mine));
    expect_counted(0, 0);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("pool_ctx_memory");
    TCase *tc = tcase_create("ctx_memory");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, destroyed_context_uncounts_its_passthrough_memory);
    tcase_add_test(tc, primary_reset_uncounts_its_passthrough_memory);
    tcase_add_test(tc, refused_destroy_keeps_the_count);
    tcase_add_test(tc, destroyed_context_uncounts_its_arrays_and_pinned_memory);
    tcase_add_test(tc, primary_reset_uncounts_its_arrays_refused_destroy_keeps_them);
    tcase_add_test(tc, destroy_leaves_arrays_of_other_contexts);
    tcase_add_test(tc, destroyed_context_frees_its_pool_blocks);
    tcase_add_test(tc, destroy_leaves_other_contexts_blocks);
    tcase_add_test(tc, pool_block_names_its_context);
    tcase_add_test(tc, async_freed_block_is_not_released_again);
    tcase_add_test(tc, threads_destroying_their_contexts_leave_others_blocks);
    tcase_add_test(tc, last_primary_release_uncounts_its_arrays_and_pinned_memory);
    tcase_add_test(tc, threads_racing_array_contexts);
    suite_add_tcase(s, tc);
    return s;
}
