/* Bytes survive random alloc/write/free sequences (sync and async, of
 * every size class) and 32 threads allocating, copying and freeing at
 * once; every block answers its own address range. */
#include "tests/integration/pool/common.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct blk {
    CUdeviceptr p;
    size_t n;
    unsigned seed;
};

static size_t random_size(unsigned *st)
{
    unsigned r = (unsigned)rand_r(st) % 100;
    if (r < 45)
        return 1 + (size_t)rand_r(st) % 4096;
    if (r < 75)
        return 4096 + (size_t)rand_r(st) % MiB;
    if (r < 92)
        return 1 + (size_t)rand_r(st) % (6 * MiB);
    return PAGE * (1 + (size_t)rand_r(st) % 3);
}

static void expect_range(CUdeviceptr p, size_t n)
{
    CUdeviceptr base = 0;
    size_t size = 0;
    CU_OK(cuMemGetAddressRange(&base, &size, p + n / 2));
    ck_assert_msg(base == p && size == n, "range of %#llx+%zu: %#llx+%zu",
                  (unsigned long long)p, n, (unsigned long long)base, size);
}

static void free_blk(struct blk *b, int async, CUstream s)
{
    expect(b->p, b->n, b->seed);
    expect_range(b->p, b->n);
    CU_OK(async ? cuMemFreeAsync(b->p, s) : cuMemFree(b->p));
    b->p = 0;
}

static void *stress_thread(void *arg)
{
    unsigned st = (unsigned)(uintptr_t)arg;
    CUcontext c;
    if (cuDevicePrimaryCtxRetain(&c, 0) != CUDA_SUCCESS || cuCtxSetCurrent(c) != CUDA_SUCCESS)
        return (void *)"context";
    CUstream s;
    if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
        return (void *)"stream";
    unsigned char buf[8192], back[8192];
    for (int i = 0; i < 60; i++) {
        size_t n = 1 + (size_t)rand_r(&st) % sizeof buf;
        if (rand_r(&st) % 8 == 0)
            n = 64 * 1024 + (size_t)rand_r(&st) % (512 * 1024); /* larger, checked in part */
        size_t check = n < sizeof buf ? n : sizeof buf;
        int async = rand_r(&st) % 2;
        CUdeviceptr p;
        CUresult r = async ? cuMemAllocAsync(&p, n, s) : cuMemAlloc(&p, n);
        if (r == CUDA_ERROR_OUT_OF_MEMORY)
            continue;
        if (r != CUDA_SUCCESS)
            return (void *)"alloc";
        if (async && cuStreamSynchronize(s) != CUDA_SUCCESS)
            return (void *)"sync";
        fill_pattern(buf, check, st);
        if (cuMemcpyHtoD(p + n - check, buf, check) != CUDA_SUCCESS ||
            cuMemcpyDtoH(back, p + n - check, check) != CUDA_SUCCESS)
            return (void *)"copy";
        if (memcmp(buf, back, check) != 0)
            return (void *)"bytes differ";
        if ((async ? cuMemFreeAsync(p, s) : cuMemFree(p)) != CUDA_SUCCESS)
            return (void *)"free";
    }
    cuStreamSynchronize(s);
    cuStreamDestroy(s);
    return NULL;
}

START_TEST(random_sequences_keep_every_byte)
{
    use_device(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    enum { LIVE = 24, OPS = 500 };
    struct blk live[LIVE] = {{0}};
    unsigned st = 12345;
    for (int op = 0; op < OPS; op++) {
        struct blk *b = &live[rand_r(&st) % LIVE];
        int async = rand_r(&st) % 3 == 0;
        if (b->p) {
            free_blk(b, async, s);
            continue;
        }
        b->n = random_size(&st);
        b->seed = (unsigned)op;
        CUresult r = async ? cuMemAllocAsync(&b->p, b->n, s) : cuMemAlloc(&b->p, b->n);
        if (r == CUDA_ERROR_OUT_OF_MEMORY) {
            b->p = 0;
            for (int i = 0; i < LIVE; i++) /* make room */
                if (live[i].p && rand_r(&st) % 2)
                    free_blk(&live[i], 0, s);
            continue;
        }
        ck_assert_int_eq(r, CUDA_SUCCESS);
        ck_assert_uint_eq(b->p % 256, 0);
        for (int i = 0; i < LIVE; i++) /* never overlapping a live block */
            ck_assert(&live[i] == b || !live[i].p || b->p + b->n <= live[i].p ||
                      live[i].p + live[i].n <= b->p);
        if (async)
            CU_OK(cuStreamSynchronize(s)); /* the copy below is on the legacy stream */
        put(b->p, b->n, b->seed);
    }
    for (int i = 0; i < LIVE; i++)
        if (live[i].p)
            free_blk(&live[i], 0, s);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuCtxSynchronize());
}
END_TEST

START_TEST(threads_32)
{
    use_device(0);
    pthread_t t[32];
    for (int i = 0; i < 32; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, stress_thread, (void *)(uintptr_t)(i + 1)), 0);
    for (int i = 0; i < 32; i++) {
        void *err;
        pthread_join(t[i], &err);
        ck_assert_msg(err == NULL, "thread %d: %s", i, (const char *)err);
    }
    CU_OK(cuCtxSynchronize());
    if (pooled()) {
        struct spillway_counters c;
        ck_assert_int_eq(get_counters(0, &c), 0);
        ck_assert_uint_eq(c.used, 0);
        ck_assert_uint_eq(c.allocs, c.frees);
        ck_assert_uint_eq(pool_counters(0).in_use_bytes, 0);
    }
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("pool_data");
    TCase *both = tcase_create("both");
    tcase_set_timeout(both, 60);
    tcase_add_test(both, random_sequences_keep_every_byte);
    tcase_add_test(both, threads_32);
    suite_add_tcase(s, both);
    return s;
}
