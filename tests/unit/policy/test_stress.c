/* 32 threads allocating, writing, looking up and freeing at once (sync and
 * async frees on per-thread streams); every byte checked, counters exact. */
#include <pthread.h>
#include <stdatomic.h>

#include "tests/unit/policy/helpers.h"

enum { THREADS = 32, OPS = 1500, SLOTS = 12 };

typedef struct worker {
    int id;
    uint64_t allocs, frees, ooms;
    const char *error;
} worker;

static _Atomic int start_flag;

static void *work(void *arg)
{
    worker *w = arg;
    uint64_t seed = 0x1234567ull * (uint64_t)(w->id + 1);
    CUstream stream = (CUstream)(uintptr_t)(0x2000 + w->id);
    CUdeviceptr ptr[SLOTS] = {0};
    size_t size[SLOTS] = {0};
    uint64_t tag[SLOTS] = {0};
    while (!atomic_load(&start_flag))
        ;
    for (int op = 0; op < OPS && !w->error; op++) {
        int k = (int)(rnd(&seed) % SLOTS);
        if (ptr[k]) {
            if (!verify(ptr[k], size[k], tag[k])) {
                w->error = "bytes changed under a live block";
                break;
            }
            CUdeviceptr base;
            size_t bs;
            int dev;
            CUdeviceptr probe = ptr[k] + rnd(&seed) % size[k];
            if (sw_lookup(P, probe, &base, &bs, &dev, NULL) != CUDA_SUCCESS || base != ptr[k] ||
                bs != size[k]) {
                w->error = "lookup of a live block";
                break;
            }
            CUresult r = rnd(&seed) % 2 ? sw_free(P, ptr[k]) : sw_free_async(P, ptr[k], stream);
            if (r != CUDA_SUCCESS) {
                w->error = "free failed";
                break;
            }
            w->frees++;
            ptr[k] = 0;
            continue;
        }
        uint64_t kind = rnd(&seed) % 100;
        size_t sz = kind < 80 ? 1 + rnd(&seed) % 8192
                  : kind < 97 ? 1 + rnd(&seed) % (512 * 1024)
                              : 1 + rnd(&seed) % (2 * PG);
        CUdeviceptr p;
        CUresult r = rnd(&seed) % 2 ? sw_alloc(P, 0, sz, &p) : sw_alloc_async(P, 0, sz, stream, &p);
        if (r == CUDA_ERROR_OUT_OF_MEMORY) {
            w->ooms++;
            continue;
        }
        if (r != CUDA_SUCCESS) {
            w->error = "alloc failed";
            break;
        }
        w->allocs++;
        ptr[k] = p;
        size[k] = sz;
        tag[k] = rnd(&seed);
        fill(p, sz, tag[k]);
    }
    for (int k = 0; k < SLOTS && !w->error; k++) {
        if (!ptr[k])
            continue;
        if (!verify(ptr[k], size[k], tag[k]))
            w->error = "bytes changed (final)";
        else if (sw_free(P, ptr[k]) != CUDA_SUCCESS)
            w->error = "final free failed";
        else
            w->frees++;
    }
    return NULL;
}

/* A program-VMM user (create, map, access, write, unmap, release) racing the
 * allocators: creates may have to sync and reclaim cached arena pages. */
static void *vmm_work(void *arg)
{
    worker *w = arg;
    uint64_t seed = 0x51ull * (uint64_t)(w->id + 1);
    CUdeviceptr va;
    if (fake_reserve(FB, 8 * PG, &va) != CUDA_SUCCESS) {
        w->error = "reserve";
        return NULL;
    }
    while (!atomic_load(&start_flag))
        ;
    for (int op = 0; op < OPS / 30 && !w->error; op++) {
        size_t n = 1 + rnd(&seed) % 4;
        CUmemGenericAllocationHandle h;
        CUresult r = sw_vmm_create(P, 0, n * PG, &h);
        if (r == CUDA_ERROR_OUT_OF_MEMORY) {
            w->ooms++;
            continue;
        }
        if (r != CUDA_SUCCESS || sw_vmm_map(P, va, n * PG, 0, h) != CUDA_SUCCESS ||
            sw_vmm_set_access(P, va, n * PG, 1) != CUDA_SUCCESS) {
            w->error = "create/map/set_access";
            break;
        }
        w->allocs++;
        uint64_t tag = rnd(&seed);
        fill(va, n * PG, tag);
        CUdeviceptr base;
        size_t bs;
        int dev;
        if (!verify(va, n * PG, tag) || sw_lookup(P, va + PG / 2, &base, &bs, &dev, NULL) ||
            base != va || bs != n * PG)
            w->error = "vmm bytes or lookup";
        if (sw_vmm_unmap(P, va, n * PG, NULL) != CUDA_SUCCESS || sw_vmm_release(P, h, NULL) != CUDA_SUCCESS)
            w->error = "unmap/release";
        w->frees++;
    }
    fake_free_va(FB, va, 8 * PG);
    return NULL;
}

START_TEST(allocators_and_vmm_users_together)
{
    env_up(64, true, 0);
    pthread_t t[THREADS];
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.id = i};
        ck_assert_int_eq(pthread_create(&t[i], NULL, i < 4 ? vmm_work : work, &w[i]), 0);
    }
    atomic_store(&start_flag, 1);
    uint64_t allocs = 0, frees = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        ck_assert_msg(!w[i].error, "thread %d: %s", i, w[i].error ? w[i].error : "");
        allocs += w[i].allocs;
        frees += w[i].frees;
    }
    sw_counters c = counters();
    ck_assert_uint_eq(c.allocs, allocs);
    ck_assert_uint_eq(c.frees, frees);
    ck_assert_uint_eq(c.in_use_bytes, 0);
    ck_assert_uint_le(fstats().max_dev_pages, 64);
    env_down();
}
END_TEST

START_TEST(threads_32_exact_counters)
{
    env_up(64, _i == 1, 0);
    pthread_t t[THREADS];
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.id = i};
        ck_assert_int_eq(pthread_create(&t[i], NULL, work, &w[i]), 0);
    }
    atomic_store(&start_flag, 1);
    uint64_t allocs = 0, frees = 0, ooms = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        ck_assert_msg(!w[i].error, "thread %d: %s", i, w[i].error ? w[i].error : "");
        allocs += w[i].allocs;
        frees += w[i].frees;
        ooms += w[i].ooms;
    }
    sw_counters c = counters();
    ck_assert_uint_eq(c.allocs, allocs);
    ck_assert_uint_eq(c.frees, frees);
    ck_assert_uint_eq(allocs, frees);
    ck_assert_uint_eq(c.ooms, ooms);
    ck_assert_uint_eq(c.in_use_bytes, 0);
    ck_assert_uint_le(c.peak_in_use_bytes, 64 * PG);
    ck_assert_uint_le(fstats().max_dev_pages, 64);
    ck_assert_uint_gt(allocs, THREADS * OPS / 4);
    env_down();
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("policy_stress");
    TCase *tc = tcase_create("stress");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, threads_32_exact_counters, 0, 2);
    tcase_add_test(tc, allocators_and_vmm_users_together);
    suite_add_tcase(s, tc);
    return s;
}
