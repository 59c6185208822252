/* The policy wait suite's shared state and helpers (wait_rig.h). */
#include "tests/unit/policy/wait_rig.h"

#include <time.h>

fake_backend *FB;
sw_policy *P;

void env_wait_ms(size_t limit_pages, size_t host_pages, uint64_t ms)
{
    sw_device_config cfg = {
        .limit = limit_pages * PG, .host_limit = host_pages * PG, .spill = true,
        .quiesce_wait_ns = ms * 1000000ull,
    };
    env_up_cfg(&cfg, limit_pages);
}

void env_wait(size_t limit_pages, size_t host_pages)
{
    env_wait_ms(limit_pages, host_pages, WAIT_MS);
}

void *hold_bracket(void *arg)
{
    holder *h = arg;
    sw_work_begin(P, 1);
    atomic_store(&h->in, true);
    while (!atomic_load(&h->release)) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    sw_work_end(P);
    return NULL;
}

void busy_with_pending_frees_ms(CUdeviceptr *y, uint64_t ms)
{
    env_wait_ms(4, 16, ms);
    CUdeviceptr x;
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &x), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, y), CUDA_SUCCESS);
    fill(*y, 2 * PG, 6);
    ck_assert_int_eq(sw_free(P, x), CUDA_SUCCESS); /* pending: a sync would release it */
    fake_launch(FB, S1, *y, 2 * PG);
    fake_hold_sync(FB, true);
    ck_assert_uint_eq(counters().wait_timeouts, 0);
}
