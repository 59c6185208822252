/* The fake backend's state, private to its files: fakebackend.c (the
 * backend made and destroyed, failures injected, calls hooked),
 * fakebackend_memory.c (reservations, pages, mappings, access, copies),
 * fakebackend_work.c (streams, their work and syncs) and
 * fakebackend_events.c (events). The suites see fakebackend.h. One lock
 * guards everything: the suites measure policy/, not this. */
#ifndef SPILLWAY_TEST_FAKEBACKEND_STATE_H
#define SPILLWAY_TEST_FAKEBACKEND_STATE_H
#include "tests/unit/policy/fakebackend.h"

#include <pthread.h>

#define MAX_PAGES (1u << 17) /* physical pages that may exist at once (sparse memfd) */
#define MAX_RES 64
#define MAX_STREAMS 64
#define MAX_WORK 4096

typedef struct reservation {
    CUdeviceptr base;
    size_t size;
    void *raw;   /* what mmap returned (before alignment) */
    size_t raw_size;
    CUmemGenericAllocationHandle *mapped; /* per page, 0 when unmapped */
    bool *access; /* per page: set_access granted since the page was mapped */
} reservation;

typedef struct stream_state {
    CUstream s;
    uint64_t issued, completed;
} stream_state;

typedef struct work {
    CUstream s;
    uint64_t seq;
    CUdeviceptr ptr;
    size_t size;
} work;

typedef struct fake_event {
    CUstream s;
    uint64_t seq;
    void *where;             /* the context it was made in */
    bool dead;               /* that context was reset: the handle is gone */
    struct fake_event *next; /* every event made, for fake_context_reset */
} fake_event;

struct fake_backend {
    pthread_mutex_t lock;
    size_t page;
    size_t dev_limit;
    int fd;
    uint32_t free_idx[MAX_PAGES];
    uint32_t nfree_idx;
    uint8_t kind[MAX_PAGES];    /* 0 free, 1 device, 2 host */
    uint32_t maps_of[MAX_PAGES];
    reservation res[MAX_RES];
    int nres;
    stream_state streams[MAX_STREAMS];
    int nstreams;
    work works[MAX_WORK];
    int nworks;
    fake_stats st;
    char violation[256];
    struct fail {
        char op[32];
        CUresult r;
        int times;
        int skip;        /* calls of op that pass before the failures */
    } fail[3];           /* fake_fail_after's, fake_fail_also's (two) */
    int nmovers;         /* streams handed out by stream_create */
    void *cur_ctx;       /* the context events are made in (fake_set_context) */
    fake_event *events;  /* every event made; dead ones kept until fake_destroy */
    bool capturing;
    bool no_bytes;       /* bookkeeping only: nothing mapped, copied or protected */
    bool sync_held;      /* synchronize blocks until released */
    pthread_cond_t sync_release;
    /* fake_on_call: fn(arg) after the nth call of op */
    char on_op[32];
    uint64_t on_nth, on_calls;
    void (*on_fn)(void *);
    void *on_arg;
};

/* Counts a violation, describing the first (fmt with a). Lock held. */
void fb_violate(fake_backend *fb, const char *fmt, unsigned long long a);
/* The fake_on_call hook to run now that op was called (once), or NULL.
 * Under fb->lock; the caller runs it after unlocking. */
void (*fb_hook_due(fake_backend *fb, const char *op))(void *);
/* Whether a failure is set for this call of op (fake_fail_*): then *r is
 * what it returns. Lock held. */
bool fb_injected(fake_backend *fb, const char *op, CUresult *r);
/* The state of stream s, made at its first use. Lock held. */
stream_state *fb_stream_of(fake_backend *fb, CUstream s);
/* Whether work in flight (on a stream other than except, when use_except)
 * touches [ptr, ptr+size). Lock held. */
bool fb_inflight(fake_backend *fb, CUdeviceptr ptr, size_t size, CUstream except, bool use_except);

/* Each file's part of fake_ops' table: the calls it answers. */
void fb_memory_ops(sw_backend *ops); /* fakebackend_memory.c */
void fb_work_ops(sw_backend *ops);   /* fakebackend_work.c */
void fb_event_ops(sw_backend *ops);  /* fakebackend_events.c */
#endif
