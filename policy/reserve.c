/* Pinned host pages made ahead of need.
 *
 * Creating a pinned host page costs 400-800 us per 2 MiB on an H100 (the
 * driver pins it: ~5 GB/s, ten times slower than copying into it), so a
 * spill that created its host pages would run at a tenth of the copy
 * engine's speed with the gates closed. One thread per process keeps each
 * spilling device's free host pages at its target (sw_device.host_target,
 * from the limit and the host limit, or SPILLWAY_HOST_RESERVE), creating
 * pages outside the device lock; spill takes them, and pages freed or
 * filled back return to them. The thread starts at the first spill need,
 * not before: a program that never spills pins nothing ahead. */
#include "policy/internal.h"

/* Creates pages for d until its target is met (or its host limit). */
static void refill(sw_device *d)
{
    const sw_backend *be = &d->pol->be;
    for (;;) {
        sw_oom_reason why;
        sw_dev_lock(d);
        bool need = d->pool.host_nfree < d->host_target &&
                    sw_pool_host_slot(d, &why) == CUDA_SUCCESS;
        if (need)
            atomic_store_explicit(&d->pool.host_pending, true, memory_order_relaxed);
        sw_dev_unlock(d);
        if (!need)
            return;
        CUmemGenericAllocationHandle h = 0;
        CUresult r = be->page_create(be->ctx, d->id, SW_LOC_HOST, d->page, &h);
        /* A spill at the host limit may be waiting for it, holding the
         * device lock: handed over first, then settled. */
        sw_pool_host_hand_over(d, r, h);
        sw_dev_lock(d);
        sw_pool_host_settle(d, r);
        CUmemGenericAllocationHandle left =
            atomic_exchange_explicit(&d->pool.host_arrived, 0, memory_order_acquire);
        if (left)
            sw_pool_put(d, SW_LOC_HOST, left); /* nobody took it */
        sw_dev_unlock(d);
        if (r != CUDA_SUCCESS)
            return; /* the driver refused: the spill path will see it too */
    }
}

static void *reserve_main(void *arg)
{
    sw_policy *p = arg;
    if (p->be.thread_start)
        p->be.thread_start(p->be.ctx);
    pthread_mutex_lock(&p->reserve_lock);
    while (!p->reserve_stop) {
        uint64_t want = atomic_exchange_explicit(&p->reserve_wanted, 0, memory_order_acq_rel);
        if (!want) {
            pthread_cond_wait(&p->reserve_cv, &p->reserve_lock);
            continue;
        }
        pthread_mutex_unlock(&p->reserve_lock);
        for (uint64_t m = want; m; m &= m - 1) {
            sw_device *d = sw_dev(p, __builtin_ctzll(m));
            if (d)
                refill(d);
        }
        pthread_mutex_lock(&p->reserve_lock);
    }
    pthread_mutex_unlock(&p->reserve_lock);
    return NULL;
}

CUresult sw_reserve_start(sw_policy *p)
{
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&p->reserve_lock);
    if (!p->reserve_running && !p->reserve_stop) {
        if (pthread_create(&p->reserve_thread, NULL, reserve_main, p))
            r = CUDA_ERROR_OUT_OF_MEMORY;
        else
            p->reserve_running = true;
    }
    pthread_mutex_unlock(&p->reserve_lock);
    return r;
}

void sw_reserve_stop(sw_policy *p)
{
    pthread_mutex_lock(&p->reserve_lock);
    bool running = p->reserve_running;
    p->reserve_stop = true;
    pthread_cond_signal(&p->reserve_cv);
    pthread_mutex_unlock(&p->reserve_lock);
    if (running)
        pthread_join(p->reserve_thread, NULL);
}
