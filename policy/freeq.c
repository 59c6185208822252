/* Pending frees of one device: blocks the program freed that may still be
 * used by work already issued, so they are not handed to a new owner yet.
 *
 * cuMemFree'd blocks wait for a device-wide sync point. Sync points are
 * numbered: a free records the current epoch, a sync bumps the epoch when it
 * begins and, once it returned, marks every epoch up to the one it bumped as
 * covered. Each list is in epoch order, so releasing is popping its head.
 *
 * cuMemFreeAsync'd blocks carry an event recorded on their stream at the
 * free: the same stream may take them back at once (stream order protects
 * it), other streams once the event completed or a sync covered the free.
 * Events are recycled (record again), never created on the fast path once
 * warm. The driver records an event only on a stream of the context it
 * was made in: a free on a stream of another context (another device's,
 * for a block of this device's pool allocated or freed there) gets an
 * event of that context, destroyed when done; when that stream is another
 * device's, no sync of this device covers the free, its event alone does. The queue is sharded (see sw_freeq_shard) so that threads freeing
 * at once rarely meet; a shard lock is innermost: releasing a block (class
 * and device locks) happens after it is dropped. */
#include <stdlib.h>

#include "policy/internal.h"

#define SAME_STREAM_SCAN 64 /* newest entries looked at for same-stream reuse */
#define MAX_POLLS 64        /* event queries per collection */
#define COVERED_SCAN 16     /* covered entries looked at for reuse by the freeing thread */

static void list_append(sw_pend_list *l, sw_pend *e)
{
    e->next = NULL;
    e->prev = l->tail;
    if (l->tail)
        l->tail->next = e;
    else
        l->head = e;
    l->tail = e;
}

static void list_unlink(sw_pend_list *l, sw_pend *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        l->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        l->tail = e->prev;
}

int sw_freeq_init(sw_freeq *q)
{
    for (int i = 0; i < SW_FREEQ_SHARDS; i++)
        pthread_mutex_init(&q->shard[i].lock, NULL);
    atomic_init(&q->epoch, 1);
    atomic_init(&q->covered, 0);
    return 0;
}

/* The shard of an async free: by stream, where allocations on it look. */
static sw_freeq_shard *stream_shard(sw_freeq *q, CUstream s)
{
    uintptr_t h = (uintptr_t)s;
    h ^= h >> 17;
    h *= 0x9e3779b97f4a7c15ull;
    return &q->shard[(h >> 32) % SW_FREEQ_SHARDS];
}

/* The shard of a sync free: the calling thread's own. */
static sw_freeq_shard *thread_shard(sw_freeq *q)
{
    static _Atomic unsigned next;
    static _Thread_local unsigned mine = UINT32_MAX;
    if (mine == UINT32_MAX)
        mine = atomic_fetch_add_explicit(&next, 1, memory_order_relaxed) % SW_FREEQ_SHARDS;
    return &q->shard[mine];
}

static void event_put(sw_freeq_shard *q, CUevent ev, void *where)
{
    if (q->nevents == q->cap_events) {
        size_t cap = q->cap_events ? 2 * q->cap_events : 16;
        sw_idle_ev *n = realloc(q->events, cap * sizeof *n);
        if (!n)
            return; /* leaks one event rather than failing a release */
        q->events = n;
        q->cap_events = cap;
    }
    q->events[q->nevents++] = (sw_idle_ev){ev, where};
}

/* After any change of q's sync list; shard lock held. */
static void note_head(sw_freeq_shard *q)
{
    atomic_store_explicit(&q->sync_head_epoch, q->sync_list.head ? q->sync_list.head->epoch : 0,
                          memory_order_relaxed);
}

static void rec_put(sw_freeq_shard *q, sw_pend *e)
{
    e->next = q->spare;
    q->spare = e;
}

/* An event done with: back to the shard's idle ones, or destroyed when
 * it is of another context (its streams are not this device's); shard
 * lock held. */
static void event_done(sw_device *d, sw_freeq_shard *q, const sw_pend *e)
{
    if (!e->foreign_ev) {
        event_put(q, e->ev, e->ev_where);
        return;
    }
    const sw_backend *be = &d->pol->be;
    if (be->event_destroy(be->ctx, e->ev) == CUDA_SUCCESS)
        atomic_fetch_sub_explicit(&d->c.events, 1, memory_order_relaxed);
}

/* The driver refused the device's event on stream (INVALID_HANDLE: the
 * stream is of another context, e.g. another device's): one made in the
 * stream's own context, recorded there, in *out, with that context's
 * device in *dev. A stream the driver does not know gets its error. */
static CUresult event_elsewhere(sw_device *d, CUstream stream, CUevent *out, int *dev,
                               void **where)
{
    const sw_backend *be = &d->pol->be;
    CUevent ev;
    CUresult r = be->event_create_on(be->ctx, stream, &ev, dev, where);
    if (r != CUDA_SUCCESS)
        return r;
    atomic_fetch_add_explicit(&d->c.events, 1, memory_order_relaxed);
    if ((r = be->event_record(be->ctx, ev, stream)) != CUDA_SUCCESS) {
        if (be->event_destroy(be->ctx, ev) == CUDA_SUCCESS)
            atomic_fetch_sub_explicit(&d->c.events, 1, memory_order_relaxed);
        return r;
    }
    *out = ev;
    return CUDA_SUCCESS;
}

/* An event recorded on stream now; from the shard's idle ones when
 * possible. *elsewhere: -1 when it is the device's own event, else the
 * device of the stream's context, in which it was made (event_elsewhere).
 * *where: the context it was made in (the backend's token). */
static CUresult event_at(sw_device *d, sw_freeq_shard *q, CUstream stream, CUevent *out,
                         int *elsewhere, void **where)
{
    *elsewhere = -1;
    const sw_backend *be = &d->pol->be;
    sw_idle_ev idle = {NULL, NULL};
    pthread_mutex_lock(&q->lock);
    if (q->nevents)
        idle = q->events[--q->nevents];
    pthread_mutex_unlock(&q->lock);
    if (!idle.ev) {
        CUresult r = be->event_create(be->ctx, d->id, &idle.ev, &idle.where);
        if (r != CUDA_SUCCESS)
            return r;
        atomic_fetch_add_explicit(&d->c.events, 1, memory_order_relaxed);
    }
    CUresult r = be->event_record(be->ctx, idle.ev, stream);
    if (r != CUDA_SUCCESS) {
        pthread_mutex_lock(&q->lock);
        event_put(q, idle.ev, idle.where);
        pthread_mutex_unlock(&q->lock);
        if (r == CUDA_ERROR_INVALID_HANDLE && be->event_create_on)
            return event_elsewhere(d, stream, out, elsewhere, where);
        return r;
    }
    *out = idle.ev;
    *where = idle.where;
    return CUDA_SUCCESS;
}

CUresult sw_freeq_push(sw_device *d, const sw_freed *f, bool async, CUstream stream)
{
    sw_freeq_shard *q = async ? stream_shard(&d->q, stream) : thread_shard(&d->q);
    CUevent ev = NULL;
    void *where = NULL;
    int elsewhere = -1;
    if (async) {
        CUresult r = event_at(d, q, stream, &ev, &elsewhere, &where);
        if (r != CUDA_SUCCESS)
            return r;
    }
    pthread_mutex_lock(&q->lock);
    sw_pend *e = q->spare;
    if (e)
        q->spare = e->next;
    else if (!(e = malloc(sizeof *e))) {
        if (ev)
            event_done(d, q, &(sw_pend){.ev = ev, .foreign_ev = elsewhere >= 0, .ev_where = where});
        pthread_mutex_unlock(&q->lock);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    e->f = *f;
    e->stream = stream;
    e->ev = ev;
    e->foreign_ev = elsewhere >= 0;
    e->ev_where = where;
    e->same_stream_ok = async && stream != CU_STREAM_PER_THREAD && stream != CU_STREAM_LEGACY;
    /* Read under the lock so that each list stays in epoch order. A free
     * on another device's stream is covered by no sync of this device
     * (the work before it runs there): its event alone releases it. */
    e->epoch = elsewhere >= 0 && elsewhere != d->id ? UINT64_MAX
                                                    : atomic_load_explicit(&d->q.epoch, memory_order_acquire);
    if (async) {
        list_append(&q->async_list, e);
        q->async_bytes += f->bytes;
    } else {
        list_append(&q->sync_list, e);
        q->sync_bytes += f->bytes;
        note_head(q);
    }
    q->count++;
    pthread_mutex_unlock(&q->lock);
    return CUDA_SUCCESS;
}

bool sw_freeq_take_stream(sw_device *d, CUstream stream, uint32_t bucket, sw_freed *out)
{
    sw_freeq_shard *q = stream_shard(&d->q, stream);
    bool found = false;
    pthread_mutex_lock(&q->lock);
    int n = 0;
    for (sw_pend *e = q->async_list.tail; e && n < SAME_STREAM_SCAN; e = e->prev, n++) {
        if (!e->same_stream_ok || e->stream != stream || e->f.bucket != bucket)
            continue;
        list_unlink(&q->async_list, e);
        q->async_bytes -= e->f.bytes;
        q->count--;
        event_done(d, q, e);
        *out = e->f;
        rec_put(q, e);
        found = true;
        break;
    }
    pthread_mutex_unlock(&q->lock);
    return found;
}

/* Whether q's oldest sync free is covered (a hint: read without its lock). */
static bool head_covered(sw_freeq_shard *q, uint64_t covered)
{
    uint64_t h = atomic_load_explicit(&q->sync_head_epoch, memory_order_relaxed);
    return h && h <= covered;
}

static bool take_from(sw_freeq_shard *q, uint64_t covered, uint32_t bucket, sw_freed *out)
{
    bool found = false;
    pthread_mutex_lock(&q->lock);
    int n = 0;
    /* The list is in epoch order: the covered entries are its head. */
    for (sw_pend *e = q->sync_list.head; e && e->epoch <= covered && n < COVERED_SCAN;
         e = e->next, n++) {
        if (e->f.bucket != bucket)
            continue;
        list_unlink(&q->sync_list, e);
        note_head(q);
        q->sync_bytes -= e->f.bytes;
        q->count--;
        *out = e->f;
        rec_put(q, e);
        found = true;
        break;
    }
    pthread_mutex_unlock(&q->lock);
    return found;
}

/* Issue 14 item 6: a thread that frees and allocates blocks of one size
 * (the common loop) gets its own freed blocks back once a sync covered
 * them, under its shard's lock alone: no device lock, no arena search, no
 * page bookkeeping, so threads doing this at once do not meet. When its
 * shard has none, a covered block of the size in another shard beats
 * carving a new one (the device lock): with two threads, half of the
 * allocations carved while the other's covered blocks waited. Slab slots
 * too: reviving one costs its class lock, where a new slot costs it as
 * well and, once the pending slots empty the slab, a carve of a new one. */
bool sw_freeq_take_covered(sw_device *d, uint32_t bucket, sw_freed *out)
{
    uint64_t covered = atomic_load_explicit(&d->q.covered, memory_order_acquire);
    sw_freeq_shard *mine = thread_shard(&d->q);
    if (head_covered(mine, covered) && take_from(mine, covered, bucket, out))
        return true;
    for (int i = 0; i < SW_FREEQ_SHARDS; i++) {
        sw_freeq_shard *q = &d->q.shard[i];
        if (q != mine && head_covered(q, covered) && take_from(q, covered, bucket, out))
            return true;
    }
    return false;
}

/* Moves what is releasable from shard q to done; returns event queries made. */
static int shard_collect(sw_device *d, sw_freeq_shard *q, bool poll_events, int polls,
                         sw_pend_list *done)
{
    const sw_backend *be = &d->pol->be;
    pthread_mutex_lock(&q->lock);
    uint64_t covered = atomic_load_explicit(&d->q.covered, memory_order_acquire);
    while (q->sync_list.head && q->sync_list.head->epoch <= covered) {
        sw_pend *e = q->sync_list.head;
        list_unlink(&q->sync_list, e);
        q->sync_bytes -= e->f.bytes;
        q->count--;
        list_append(done, e);
    }
    note_head(q);
    for (sw_pend *e = q->async_list.head, *n; e; e = n) {
        n = e->next;
        /* Oldest first, a bounded number of queries per call (each is a
         * driver call); an error from one (a lost context) leaves the block
         * to a sync point, which will report the error itself. */
        if (e->epoch > covered &&
            (!poll_events || polls++ >= MAX_POLLS ||
             be->event_query(be->ctx, e->ev) != CUDA_SUCCESS))
            continue;
        list_unlink(&q->async_list, e);
        q->async_bytes -= e->f.bytes;
        q->count--;
        event_done(d, q, e);
        list_append(done, e);
    }
    pthread_mutex_unlock(&q->lock);
    return polls;
}

/* Releases the entries taken off shard q into done; returns bytes.
 * Outside the shard lock (it is the innermost lock), in batches so that
 * blocks share one hold of the device lock. */
static size_t release_done(sw_device *d, sw_freeq_shard *q, sw_pend_list *done)
{
    size_t bytes = 0;
    if (!done->head)
        return 0;
    enum { BATCH = 64 };
    sw_freed batch[BATCH];
    size_t n = 0;
    for (sw_pend *e = done->head; e; e = e->next) {
        batch[n++] = e->f;
        bytes += e->f.bytes;
        if (n == BATCH || !e->next) {
            sw_release_all(d, batch, n);
            n = 0;
        }
    }
    pthread_mutex_lock(&q->lock);
    for (sw_pend *e = done->head, *n; e; e = n) {
        n = e->next;
        rec_put(q, e);
    }
    pthread_mutex_unlock(&q->lock);
    return bytes;
}

size_t sw_freeq_collect(sw_device *d, bool poll_events)
{
    size_t bytes = 0;
    int polls = 0;
    for (int i = 0; i < SW_FREEQ_SHARDS; i++) {
        sw_freeq_shard *q = &d->q.shard[i];
        sw_pend_list done = {NULL, NULL};
        polls = shard_collect(d, q, poll_events, polls, &done);
        bytes += release_done(d, q, &done);
    }
    return bytes;
}

size_t sw_collect(sw_policy *p, int dev)
{
    sw_device *d = sw_dev(p, dev);
    return d ? sw_freeq_collect(d, false) : 0;
}

size_t sw_freeq_pending(sw_device *d, size_t *count)
{
    size_t b = 0, c = 0;
    for (int i = 0; i < SW_FREEQ_SHARDS; i++) {
        sw_freeq_shard *q = &d->q.shard[i];
        pthread_mutex_lock(&q->lock);
        b += q->sync_bytes + q->async_bytes;
        c += q->count;
        pthread_mutex_unlock(&q->lock);
    }
    if (count)
        *count = c;
    return b;
}

CUresult sw_sync_point(sw_device *d, uint64_t *by)
{
    /* Through the device's syncer: the program's own thread must never
     * wait on a sync that may depend on its later launches. A patience
     * spent already asks for no sync (nobody would wait for it). */
    uint64_t deadline = sw_deadline_of(d, by);
    if (sw_now_ns() >= deadline)
        return CUDA_ERROR_NOT_READY;
    return sw_sync_device(d->pol, d->id, deadline);
}

CUresult sw_sync_and_collect(sw_device *d, uint64_t *by)
{
    CUresult r = sw_sync_point(d, by);
    if (r != CUDA_SUCCESS)
        return r;
    sw_freeq_collect(d, false);
    return CUDA_SUCCESS;
}

void sw_freeq_forget_stream(sw_device *d, CUstream stream)
{
    sw_freeq_shard *q = stream_shard(&d->q, stream);
    pthread_mutex_lock(&q->lock);
    for (sw_pend *e = q->async_list.head; e; e = e->next)
        if (e->stream == stream)
            e->same_stream_ok = false;
    pthread_mutex_unlock(&q->lock);
}

/* Only async entries carry events; a sync free waits for its sync point
 * as before. The events were counted on d (event_at, event_elsewhere),
 * whichever device's context made them. */
size_t sw_freeq_context_gone(sw_device *d, void *where)
{
    size_t bytes = 0;
    if (!where)
        return 0;
    for (int i = 0; i < SW_FREEQ_SHARDS; i++) {
        sw_freeq_shard *q = &d->q.shard[i];
        sw_pend_list done = {NULL, NULL};
        uint64_t gone = 0;
        pthread_mutex_lock(&q->lock);
        for (sw_pend *e = q->async_list.head, *n; e; e = n) {
            n = e->next;
            if (e->ev_where != where)
                continue;
            list_unlink(&q->async_list, e);
            q->async_bytes -= e->f.bytes;
            q->count--;
            gone++;
            list_append(&done, e);
        }
        size_t keep = 0;
        for (size_t k = 0; k < q->nevents; k++) {
            if (q->events[k].where == where)
                gone++;
            else
                q->events[keep++] = q->events[k];
        }
        q->nevents = keep;
        pthread_mutex_unlock(&q->lock);
        atomic_fetch_sub_explicit(&d->c.events, gone, memory_order_relaxed);
        bytes += release_done(d, q, &done);
    }
    return bytes;
}

void sw_stream_destroyed(sw_policy *p, int dev, CUstream stream)
{
    sw_device *d = sw_dev(p, dev);
    if (d)
        sw_freeq_forget_stream(d, stream);
}

static CUresult shard_destroy(sw_device *d, sw_freeq_shard *q)
{
    const sw_backend *be = &d->pol->be;
    CUresult first = CUDA_SUCCESS;
    sw_pend_list *lists[2] = {&q->sync_list, &q->async_list};
    for (int l = 0; l < 2; l++) {
        for (sw_pend *e = lists[l]->head, *n; e; e = n) {
            n = e->next;
            if (e->ev) {
                CUresult r = be->event_destroy(be->ctx, e->ev);
                if (r == CUDA_SUCCESS)
                    atomic_fetch_sub_explicit(&d->c.events, 1, memory_order_relaxed);
                if (first == CUDA_SUCCESS)
                    first = r;
            }
            free(e);
        }
        lists[l]->head = lists[l]->tail = NULL;
    }
    note_head(q);
    for (size_t i = 0; i < q->nevents; i++) {
        CUresult r = be->event_destroy(be->ctx, q->events[i].ev);
        if (r == CUDA_SUCCESS)
            atomic_fetch_sub_explicit(&d->c.events, 1, memory_order_relaxed);
        if (first == CUDA_SUCCESS)
            first = r;
    }
    free(q->events);
    q->events = NULL;
    q->nevents = q->cap_events = 0;
    while (q->spare) {
        sw_pend *n = q->spare->next;
        free(q->spare);
        q->spare = n;
    }
    pthread_mutex_destroy(&q->lock);
    return first;
}

CUresult sw_freeq_destroy(sw_device *d)
{
    CUresult first = CUDA_SUCCESS;
    for (int i = 0; i < SW_FREEQ_SHARDS; i++) {
        CUresult r = shard_destroy(d, &d->q.shard[i]);
        if (first == CUDA_SUCCESS)
            first = r;
    }
    return first;
}
