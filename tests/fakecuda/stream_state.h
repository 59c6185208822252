/* fakecuda's stream state, private to the files that keep it: stream.c
 * (streams and their API), stream_queue.c (each stream's worker and queue,
 * and the lock), event.c (events) and unmap_check.c (the unmap hazard
 * check). The rest of fakecuda reaches streams through internal.h. */
#ifndef FAKECUDA_STREAM_STATE_H
#define FAKECUDA_STREAM_STATE_H
#include "tests/fakecuda/internal.h"

struct fc_op {
    struct fc_op *next;
    uint64_t seq;
    fc_op_fn fn;
    void *arg;
    size_t ndeps;
    struct fc_dep deps[];
};

struct CUstream_st {
    uint32_t magic;
    struct CUctx_st *ctx;
    unsigned flags;
    int priority;
    enum fc_stream_kind kind;
    bool destroyed;
    bool exited;    /* its worker is gone (destroyed, queue done) */
    bool capturing; /* fakecuda_set_capturing: a status only, without capture's rules */
    bool blocked;   /* its worker waits for another stream's work (deps_met) */
    pthread_cond_t wake; /* its worker's: new work, destroyed, or a dep met */
    struct fc_op *head, *tail;
    uint64_t submitted, completed;
    struct CUstream_st *next;
};

struct CUevent_st {
    uint32_t magic;
    unsigned flags;
    struct CUctx_st *ctx; /* current at its creation: it records only there */
    struct CUstream_st *stream; /* NULL until recorded */
    uint64_t seq;
    struct CUevent_st *next;
};

/* One lock for all stream state: simple, and tests are small. Stream
 * structs are never freed, so a dependency or an event can always look at
 * a stream's counters. Each worker sleeps on its stream's own condition
 * and the host's waits on `fc_stream_progress`: a broadcast that woke
 * every worker and waiter at every step cost each step a context switch
 * per stream (a third of a spilling run's time on a virtual machine). */
extern pthread_mutex_t fc_stream_lock;
extern pthread_cond_t fc_stream_progress;
extern struct CUstream_st *fc_streams; /* every stream made, newest first */
extern struct CUevent_st *fc_events;   /* the live events */

/* s synchronises with the legacy stream (made without NON_BLOCKING). */
static inline bool blocking(const struct CUstream_st *s)
{
    return !(s->flags & CU_STREAM_NON_BLOCKING);
}

/* Under lock: s has new work or is destroyed. */
static inline void kick(struct CUstream_st *s)
{
    pthread_cond_signal(&s->wake);
}

/* Starts s's worker (stream_queue.c): 0, or pthread_create's error. */
int fc_stream_start_worker(struct CUstream_st *s);
/* Under fc_stream_lock: the host now knows that everything complete is
 * complete (unmap_check.c). */
void fc_host_saw_locked(void);
#endif
