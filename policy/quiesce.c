/* Quiesce: what a move must do first (docs/design.md, "Spill"). Remapping
 * is not stream ordered, and unmapping a page that in-flight work touches
 * kills the context: before pages move, the work gates of every device
 * that can reach them close and each of those devices is synced, through
 * its syncer and only until a deadline (syncer.c). Used by spill, fill and
 * residency's moves alike, below all three. */
#include "policy/internal.h"

uint64_t sw_reach(sw_device *d)
{
    return d->access_mask | atomic_load_explicit(&d->vmm_access, memory_order_relaxed) |
           atomic_load(&d->work_reach) | 1ull << d->id;
}

void sw_note_work(sw_policy *p, int dev, int runs_on)
{
    if (!p || dev < 0 || dev >= SW_MAX_DEVICES || runs_on < 0 || runs_on >= SW_MAX_DEVICES || dev == runs_on)
        return;
    /* Noted before the submission enters its gates: a move that closed
     * them without runs_on sees it when it re-reads the reach (sw_move_begin)
     * and gives up. */
    _Atomic uint64_t *w = &p->dev[dev].work_reach;
    uint64_t bit = 1ull << runs_on;
    /* seq_cst, not relaxed: a bit another thread set (and was parked at the
     * closed gate after setting) must be one the mover's seq_cst re-read
     * sees too before this thread's work passes the gate; C11 does not
     * promise that of a relaxed load (x86-64 and AArch64 would anyway: an
     * ldar on AArch64, only on submissions naming another device's pages). */
    if (!(atomic_load_explicit(w, memory_order_seq_cst) & bit))
        atomic_fetch_or(w, bit);
}

bool sw_back_off(sw_device *d, uint64_t *by)
{
    uint64_t overdue = atomic_load_explicit(&d->pol->overdue, memory_order_relaxed);
    uint64_t stuck = atomic_load_explicit(&d->pol->gates_stuck, memory_order_relaxed);
    /* An operation that waited already has its deadline (*by): it goes by
     * that, and is not counted twice. */
    if (!(overdue | stuck) || !by || *by)
        return false;
    sw_dev_lock(d);
    uint64_t reach = sw_reach(d);
    sw_dev_unlock(d);
    /* Overdue: a sync an earlier wait gave up on, or a gate whose close
     * an open bracket ran out (a synchronous copy waiting for a long
     * kernel), either of which the move's quiesce would wait for again. */
    if (!(overdue & reach) && !(stuck & reach && sw_gate_stuck(d->pol, reach)))
        return false;
    *by = SW_SPENT;
    sw_figure_add(&d->c, &d->c.backoffs, 1);
    return true;
}

/* Syncs every device of mask, with a pool or without one (a peer the
 * program never allocated on through spillway still reads our pages);
 * NOT_READY when one cannot be had in time. */
static CUresult sync_all(sw_policy *p, uint64_t mask, uint64_t deadline)
{
    for (uint64_t m = mask; m; m &= m - 1) {
        int i = __builtin_ctzll(m);
        CUresult r = sw_sync_device(p, i, deadline);
        if (r != CUDA_SUCCESS)
            return r;
        sw_device *x = sw_dev(p, i);
        if (x)
            sw_freeq_collect(x, false);
    }
    return CUDA_SUCCESS;
}

CUresult sw_quiesce(sw_device *d, uint64_t *by, uint64_t *devices)
{
    sw_policy *p = d->pol;
    const sw_backend *be = &p->be;
    if (be->capturing && be->capturing(be->ctx))
        return CUDA_ERROR_NOT_READY;
    sw_dev_lock(d);
    uint64_t mask = sw_reach(d);
    sw_dev_unlock(d);
    /* The operation's deadline: an earlier wait of it (its sync) may have
     * spent the patience already; then the gates are not even closed. */
    uint64_t deadline = sw_deadline_of(d, by);
    if (sw_now_ns() >= deadline)
        return CUDA_ERROR_NOT_READY;
    CUresult r = sw_gate_close(p, mask, deadline);
    if (r == CUDA_ERROR_NOT_READY)
        sw_figure_add(&d->c, &d->c.wait_timeouts, 1);
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = sync_all(p, mask, deadline)) != CUDA_SUCCESS) {
        sw_gate_open(p, mask);
        return r;
    }
    *devices = mask;
    return CUDA_SUCCESS;
}

void sw_unquiesce(sw_device *d, uint64_t devices, uint64_t since_ns)
{
    sw_gate_open(d->pol, devices);
    sw_figure_add(&d->c, &d->c.stall_ns, sw_now_ns() - since_ns);
}

CUresult sw_move_begin(sw_device *d, sw_quiet *q, uint64_t *by)
{
    q->t0 = sw_now_ns();
    CUresult r = sw_quiesce(d, by, &q->held);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&d->pol->handles_lock);
    sw_dev_lock(d);
    /* The reach was read before the gates closed: a grant since (peer
     * access under d's lock, a VMM mapping's access under the handles
     * lock, both held now) added a device whose gate is open and whose
     * work no sync covered. The caller goes on without moving, as when a
     * device is busy; the next move closes the larger set. */
    if (sw_reach(d) & ~q->held) {
        sw_move_end(d, q);
        return CUDA_ERROR_NOT_READY;
    }
    return CUDA_SUCCESS;
}

void sw_move_end(sw_device *d, const sw_quiet *q)
{
    sw_dev_unlock(d);
    pthread_mutex_unlock(&d->pol->handles_lock);
    sw_unquiesce(d, q->held, q->t0);
}
