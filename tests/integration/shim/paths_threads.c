/* The path suite (test_paths.c): 32 threads allocating and freeing by
 * each path keep the counts exact. */
#include "tests/integration/shim/paths_rig.h"

#include "tests/fakecuda/fakecuda.h"

#include <pthread.h>
#include <stdlib.h>

/* ---- threads ---- */

#define THREADS 32
#define OPS 400
#define HELD_MAX 8

struct worker {
    CUcontext ctx;
    unsigned seed;
    uint64_t allocs, frees, ooms, held_bytes;
    CUdeviceptr held[HELD_MAX];
    size_t held_size[HELD_MAX];
    int nheld;
    int error;
};

static void *worker_run(void *arg)
{
    struct worker *w = arg;
    if (api.ctx_set_current(w->ctx) != CUDA_SUCCESS) {
        w->error = -1;
        return NULL;
    }
    for (int op = 0; op < OPS; op++) {
        int do_alloc = w->nheld == 0 || (w->nheld < HELD_MAX && rand_r(&w->seed) % 2);
        if (do_alloc) {
            size_t size = (size_t)(rand_r(&w->seed) % (4 * MiB)) + 1;
            CUdeviceptr p;
            CUresult r = api.mem_alloc(&p, size);
            if (r == CUDA_SUCCESS) {
                w->held[w->nheld] = p;
                w->held_size[w->nheld++] = size;
                w->held_bytes += size;
                w->allocs++;
            } else if (r == CUDA_ERROR_OUT_OF_MEMORY) {
                w->ooms++;
            } else {
                w->error = r;
            }
        } else {
            int i = rand_r(&w->seed) % w->nheld;
            if (api.mem_free(w->held[i]) != CUDA_SUCCESS)
                w->error = -2;
            w->held_bytes -= w->held_size[i];
            w->held[i] = w->held[--w->nheld];
            w->held_size[i] = w->held_size[w->nheld];
            w->frees++;
        }
    }
    return NULL;
}

START_TEST(threads_keep_exact_counts)
{
    setup_path((enum spw_path)_i);
    CUcontext ctx;
    ck_assert_int_eq(api.primary_ctx_retain(&ctx, 0), CUDA_SUCCESS);
    static struct worker w[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (struct worker){.ctx = ctx, .seed = 1234u + (unsigned)i * 7919u + (unsigned)_i};
        ck_assert_int_eq(pthread_create(&t[i], NULL, worker_run, &w[i]), 0);
    }
    uint64_t allocs = 0, frees = 0, ooms = 0, held = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        ck_assert_msg(w[i].error == 0, "thread %d: error %d", i, w[i].error);
        allocs += w[i].allocs;
        frees += w[i].frees;
        ooms += w[i].ooms;
        held += w[i].held_bytes;
    }
    struct spillway_counters c = counters(0);
    ck_assert_uint_eq(c.allocs, allocs);
    ck_assert_uint_eq(c.frees, frees);
    ck_assert_uint_eq(c.ooms, ooms);
    ck_assert_uint_eq(c.used, held);
    ck_assert_uint_le(c.peak, limit);
    ck_assert_msg(ooms > 0, "the workload never reached the limit: it tests nothing");
    /* Free is in whole pages, as the pool holds them: never more than
     * the bytes not held, and all of it can be had. */
    size_t f = free_bytes();
    ck_assert_uint_le(f, limit - held);
    CUdeviceptr rest = 0;
    if (f)
        ck_assert_int_eq(api.mem_alloc(&rest, f), CUDA_SUCCESS);
    if (rest)
        ck_assert_int_eq(api.mem_free(rest), CUDA_SUCCESS);
    if (fakecuda_present())
        ck_assert_uint_ge(fakecuda_device_bytes_used(0), held);
    for (int i = 0; i < THREADS; i++)
        for (int j = 0; j < w[i].nheld; j++)
            ck_assert_int_eq(api.mem_free(w[i].held[j]), CUDA_SUCCESS);
    c = counters(0);
    ck_assert_uint_eq(c.used, 0);
    ck_assert_uint_eq(c.frees, c.allocs);
}
END_TEST

void paths_thread_tests(TCase *tc)
{
    tcase_add_loop_test(tc, threads_keep_exact_counts, 0, SPW_PATHS);
}
