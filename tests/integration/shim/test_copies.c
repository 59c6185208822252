/* The copy family under spillway (LD_PRELOAD) against fakecuda: every copy
 * function, reached by each path (linked, dlsym, cuGetProcAddress) and as
 * its per-thread variant, adds exactly its bytes to the stats segment's
 * copy_htod_bytes / copy_dtoh_bytes / copy_dtod_bytes of the right device;
 * failed copies count nothing and answer the driver's error; cuMemcpy's
 * sides are told apart for pool, program-VMM, pinned, managed and pageable
 * memory; 2D, 3D, peer and batch copies count their bytes by their memory
 * types, array copies as device memory; cudaMemcpy (the shared runtime) is counted once; 16 threads.
 * Run by copies.sh, which sets the environment (two devices, the stats
 * directory) and runs it again for a device without a pool
 * (SPW_COPIES_ONLY=paths) and a runtime that bypasses spillway
 * (SPW_COPIES_ONLY=runtime).
 *
 * One suite in four files: here the runtime's copies and 16 threads; the
 * paths (copies_paths.c), the sides (copies_sides.c) and the 2D, 3D,
 * peer, batch and array copies (copies_strided.c), sharing copies_rig.h. */
#include "tests/integration/shim/copies_rig.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* cudaMemcpy reaches the driver through cuGetProcAddress, i.e. a copy
 * handler: counted there, not again by the wrapper. With
 * FAKECUDART_BYPASS=1 no handler sees it and the wrapper counts it. */
START_TEST(runtime_counted_once)
{
    setup();
    static char src[4 * KiB] = "spillway", dst[4 * KiB];
    void *a = NULL, *b = NULL;
    ck_assert_int_eq(cudaMalloc(&a, 16 * KiB), cudaSuccess);
    ck_assert_int_eq(cudaMalloc(&b, 16 * KiB), cudaSuccess);
    COPY(0, 0, 1000, cudaMemcpy(a, src, 1000, cudaMemcpyHostToDevice));
    COPY(0, 2, 2000, cudaMemcpy(b, a, 2000, cudaMemcpyDeviceToDevice));
    COPY(0, 1, 3000, cudaMemcpy(dst, b, 3000, cudaMemcpyDeviceToHost));
    ck_assert_str_eq(dst, "spillway");
    COPY(0, 0, 1500, cudaMemcpy(a, src, 1500, cudaMemcpyDefault));
    COPY(0, 1, 2500, cudaMemcpy(dst, a, 2500, cudaMemcpyDefault));
    COPY(0, -1, 3500, cudaMemcpy(dst, src, 3500, cudaMemcpyDefault));
    COPY(0, -1, 3600, cudaMemcpy(dst, src, 3600, cudaMemcpyHostToHost));
    ck_assert_int_eq(cudaFree(a), cudaSuccess);
    ck_assert_int_eq(cudaFree(b), cudaSuccess);
}
END_TEST

/* ---- threads ---- */

#define THREADS 16
#define OPS 300

struct worker {
    CUcontext ctx;
    unsigned seed;
    struct bytes done;
    int error;
};

static void *worker_run(void *arg)
{
    struct worker *w = arg;
    static _Thread_local unsigned char host[16 * KiB];
    CUdeviceptr a, b;
    if (drv.ctx_set_current(w->ctx) != CUDA_SUCCESS || drv.mem_alloc(&a, sizeof host) ||
        drv.mem_alloc(&b, sizeof host)) {
        w->error = -1;
        return NULL;
    }
    for (int op = 0; op < OPS && !w->error; op++) {
        size_t n = (size_t)(rand_r(&w->seed) % sizeof host) + 1;
        CUresult r;
        switch (rand_r(&w->seed) % 6) {
        case 0: r = cuMemcpyHtoD(a, host, n); w->done.htod += n; break;
        case 1: r = cuMemcpyDtoH(host, a, n); w->done.dtoh += n; break;
        case 2: r = cuMemcpyDtoDAsync(b, a, n, NULL); w->done.dtod += n; break;
        case 3: r = cuMemcpy(a, H(host), n); w->done.htod += n; break;
        case 4: r = cuMemcpyAsync(H(host), b, n, NULL); w->done.dtoh += n; break;
        default: r = cuMemcpyDtoD_v2_ptds(b, a, n); w->done.dtod += n; break;
        }
        if (r != CUDA_SUCCESS)
            w->error = r;
    }
    if (cuCtxSynchronize() != CUDA_SUCCESS || drv.mem_free(a) || drv.mem_free(b))
        w->error = -2;
    return NULL;
}

START_TEST(threads_count_exactly)
{
    setup();
    CUcontext ctx;
    ck_assert_int_eq(drv.primary_ctx_retain(&ctx, 0), CUDA_SUCCESS);
    static struct worker w[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (struct worker){.ctx = ctx, .seed = 4321u + (unsigned)i * 7919u};
        ck_assert_int_eq(pthread_create(&t[i], NULL, worker_run, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        ck_assert_msg(w[i].error == 0, "thread %d: error %d", i, w[i].error);
        expected[0].htod += w[i].done.htod;
        expected[0].dtoh += w[i].done.dtoh;
        expected[0].dtod += w[i].done.dtod;
    }
    check_counts("after the threads");
}
END_TEST

Suite *test_suite(void)
{
    /* SPW_COPIES_ONLY=paths|runtime: copies.sh's other runs. */
    const char *only = getenv("SPW_COPIES_ONLY");
    int all = !only || !*only;
    Suite *s = suite_create("shim_copies");
    TCase *paths = tcase_create("paths");
    tcase_set_timeout(paths, 30);
    copies_path_tests(paths);
    if (all || strcmp(only, "paths") == 0)
        suite_add_tcase(s, paths);
    TCase *sides = tcase_create("sides");
    tcase_set_timeout(sides, 60); /* the arena case spills 236 MiB: slow under TSan */
    copies_side_tests(sides);
    copies_strided_tests(sides);
    TCase *runtime = tcase_create("runtime");
    tcase_add_test(runtime, runtime_counted_once);
    TCase *threads = tcase_create("threads");
    tcase_set_timeout(threads, 60);
    tcase_add_test(threads, threads_count_exactly);
    if (all) {
        suite_add_tcase(s, sides);
        suite_add_tcase(s, threads);
    }
    if (all || strcmp(only, "runtime") == 0)
        suite_add_tcase(s, runtime);
    return s;
}
