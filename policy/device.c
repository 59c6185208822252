/* Per-device counters and the device table: the lowest layer of policy/,
 * which every other file may call and which calls none of them. */
#include "policy/internal.h"

void sw_count_add(_Atomic uint64_t *v, uint64_t n, _Atomic uint64_t *peak)
{
    uint64_t now = atomic_fetch_add_explicit(v, n, memory_order_relaxed) + n;
    uint64_t p = atomic_load_explicit(peak, memory_order_relaxed);
    while (p < now &&
           !atomic_compare_exchange_weak_explicit(peak, &p, now, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

void sw_count_sub(_Atomic uint64_t *v, uint64_t n)
{
    atomic_fetch_sub_explicit(v, n, memory_order_relaxed);
}

__attribute__((noinline)) void sw_dev_lock(sw_device *d)
{
    pthread_mutex_lock(&d->lock);
}

void sw_dev_unlock(sw_device *d)
{
    pthread_mutex_unlock(&d->lock);
}

unsigned sw_lane_of_thread(void)
{
    static _Atomic unsigned next;
    static _Thread_local unsigned lane = SW_LANES;
    if (lane == SW_LANES)
        lane = atomic_fetch_add_explicit(&next, 1, memory_order_relaxed) % SW_LANES;
    return lane;
}

/* Each thread takes SW_ID_BATCH numbers of the process's counter at a
 * time: one shared write per batch, not per allocation (issue 14 item 6).
 * Numbers a thread took and never used are never handed out: IDs need to
 * be unique, not dense. 2^63 of them outlast any process. */
#define SW_ID_BATCH 256

_Thread_local uint64_t sw_id_next, sw_id_end;

uint64_t sw_new_id_batch(void)
{
    static _Atomic uint64_t next = 1;
    sw_id_next = atomic_fetch_add_explicit(&next, SW_ID_BATCH, memory_order_relaxed);
    sw_id_end = sw_id_next + SW_ID_BATCH;
    return SW_ID_BIT | sw_id_next++;
}

sw_device *sw_dev(sw_policy *p, int dev)
{
    if (!p || dev < 0 || dev >= SW_MAX_DEVICES)
        return NULL;
    sw_device *d = &p->dev[dev];
    return atomic_load_explicit(&d->ready, memory_order_acquire) ? d : NULL;
}

static const char *const oom_names[SW_OOM_NREASONS] = {
    [SW_OOM_NONE] = "none",
    [SW_OOM_LIMIT] = "limit",
    [SW_OOM_HOST_LIMIT] = "host-limit",
    [SW_OOM_ADDRESS] = "address-space",
    [SW_OOM_TOO_LARGE] = "too-large",
    [SW_OOM_DRIVER] = "driver",
};

const char *sw_oom_reason_name(sw_oom_reason r)
{
    return (unsigned)r < SW_OOM_NREASONS ? oom_names[r] : "unknown";
}

/* As errno: the caller asks right after the refusal, on the same thread. */
static _Thread_local sw_oom_reason last_refusal;

sw_oom_reason sw_refusal_reason(void)
{
    return last_refusal;
}

CUresult sw_refuse(sw_device *d, sw_oom_reason why)
{
    if ((unsigned)why >= SW_OOM_NREASONS || why == SW_OOM_NONE)
        why = SW_OOM_LIMIT;
    last_refusal = why;
    atomic_fetch_add_explicit(&d->c.ooms, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&d->c.oom[why], 1, memory_order_relaxed);
    return CUDA_ERROR_OUT_OF_MEMORY;
}

void sw_reserve_wake(sw_device *d)
{
    sw_policy *p = d->pol;
    if (!d->host_target)
        return;
    atomic_fetch_or_explicit(&p->reserve_wanted, 1ull << d->id, memory_order_release);
    pthread_mutex_lock(&p->reserve_lock);
    pthread_cond_signal(&p->reserve_cv);
    pthread_mutex_unlock(&p->reserve_lock);
}
