/* The fake backend (see fakebackend.h). One lock guards everything: the
 * suites measure policy/, not this. */
#include "tests/unit/policy/fakebackend.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

static void violate(fake_backend *fb, const char *fmt, unsigned long long a)
{
    if (!fb->st.violations++)
        snprintf(fb->violation, sizeof fb->violation, fmt, a);
}

/* The fake_on_call hook to run now that op was called (once), or NULL.
 * Under fb->lock; the caller runs it after unlocking. */
static void (*hook_due(fake_backend *fb, const char *op))(void *)
{
    if (!fb->on_fn || strcmp(fb->on_op, op) != 0 || ++fb->on_calls != fb->on_nth)
        return NULL;
    void (*fn)(void *) = fb->on_fn;
    fb->on_fn = NULL;
    return fn;
}

static bool injected(fake_backend *fb, const char *op, CUresult *r)
{
    for (int i = 0; i < 3; i++) {
        struct fail *f = &fb->fail[i];
        if (!f->op[0] || strcmp(f->op, op) != 0)
            continue;
        if (f->skip > 0) {
            f->skip--;
            return false;
        }
        if (--f->times <= 0)
            f->op[0] = 0;
        *r = f->r;
        return true;
    }
    return false;
}

static void set_fail(fake_backend *fb, int slot, const char *op, int skip, CUresult r, int times)
{
    pthread_mutex_lock(&fb->lock);
    if (slot == 1 && fb->fail[1].op[0])
        slot = 2; /* a third op, beside the two set before */
    struct fail *f = &fb->fail[slot];
    snprintf(f->op, sizeof f->op, "%s", op);
    f->r = r;
    f->times = times;
    f->skip = skip;
    if (slot == 0)
        fb->fail[1].op[0] = fb->fail[2].op[0] = 0;
    pthread_mutex_unlock(&fb->lock);
}

void fake_fail_after(fake_backend *fb, const char *op, int skip, CUresult r, int times)
{
    set_fail(fb, 0, op, skip, r, times);
}

void fake_fail_also(fake_backend *fb, const char *op, CUresult r, int times)
{
    set_fail(fb, 1, op, 0, r, times);
}

void fake_fail_also_after(fake_backend *fb, const char *op, int skip, CUresult r, int times)
{
    set_fail(fb, 1, op, skip, r, times);
}

void fake_fail_times(fake_backend *fb, const char *op, CUresult r, int times)
{
    fake_fail_after(fb, op, 0, r, times);
}

void fake_fail_clear(fake_backend *fb)
{
    fake_fail_after(fb, "", 0, CUDA_SUCCESS, 0);
}

void fake_fail_next(fake_backend *fb, const char *op, CUresult r)
{
    fake_fail_times(fb, op, r, 1);
}

fake_backend *fake_create(size_t page, size_t dev_limit_pages)
{
    fake_backend *fb = calloc(1, sizeof *fb);
    if (!fb)
        return NULL;
    pthread_mutex_init(&fb->lock, NULL);
    pthread_cond_init(&fb->sync_release, NULL);
    fb->page = page;
    fb->dev_limit = dev_limit_pages;
    fb->fd = memfd_create("fake-vram", 0);
    if (fb->fd < 0 || ftruncate(fb->fd, (off_t)(MAX_PAGES * page)) != 0) {
        free(fb);
        return NULL;
    }
    for (uint32_t i = 0; i < MAX_PAGES; i++)
        fb->free_idx[i] = MAX_PAGES - 1 - i;
    fb->nfree_idx = MAX_PAGES;
    return fb;
}

void fake_destroy(fake_backend *fb)
{
    for (int i = 0; i < fb->nres; i++) {
        if (!fb->no_bytes)
            munmap(fb->res[i].raw, fb->res[i].raw_size);
        free(fb->res[i].mapped);
    }
    close(fb->fd);
    while (fb->events) {
        fake_event *n = fb->events->next;
        free(fb->events);
        fb->events = n;
    }
    free(fb);
}

void fake_get_stats(fake_backend *fb, fake_stats *out)
{
    pthread_mutex_lock(&fb->lock);
    *out = fb->st;
    pthread_mutex_unlock(&fb->lock);
}

const char *fake_violation(fake_backend *fb)
{
    return fb->violation;
}

/* ---- streams and work ---------------------------------------------------- */

static stream_state *stream_of(fake_backend *fb, CUstream s)
{
    for (int i = 0; i < fb->nstreams; i++)
        if (fb->streams[i].s == s)
            return &fb->streams[i];
    if (fb->nstreams == MAX_STREAMS)
        abort();
    stream_state *st = &fb->streams[fb->nstreams++];
    st->s = s;
    st->issued = st->completed = 0;
    return st;
}

static void purge_work(fake_backend *fb)
{
    int n = 0;
    for (int i = 0; i < fb->nworks; i++)
        if (fb->works[i].seq > stream_of(fb, fb->works[i].s)->completed)
            fb->works[n++] = fb->works[i];
    fb->nworks = n;
}

void fake_launch(fake_backend *fb, CUstream s, CUdeviceptr ptr, size_t size)
{
    pthread_mutex_lock(&fb->lock);
    if (fb->nworks == MAX_WORK)
        purge_work(fb);
    if (fb->nworks == MAX_WORK)
        abort();
    stream_state *st = stream_of(fb, s);
    fb->works[fb->nworks++] = (work){s, ++st->issued, ptr, size};
    pthread_mutex_unlock(&fb->lock);
}

void fake_complete(fake_backend *fb, CUstream s)
{
    pthread_mutex_lock(&fb->lock);
    stream_state *st = stream_of(fb, s);
    st->completed = st->issued;
    purge_work(fb);
    pthread_mutex_unlock(&fb->lock);
}

static bool inflight(fake_backend *fb, CUdeviceptr ptr, size_t size, CUstream except,
                     bool use_except)
{
    for (int i = 0; i < fb->nworks; i++) {
        work *w = &fb->works[i];
        if (use_except && w->s == except)
            continue;
        if (w->seq <= stream_of(fb, w->s)->completed)
            continue;
        if (w->ptr < ptr + size && ptr < w->ptr + w->size)
            return true;
    }
    return false;
}

bool fake_conflict(fake_backend *fb, CUdeviceptr ptr, size_t size, CUstream s)
{
    pthread_mutex_lock(&fb->lock);
    bool c = inflight(fb, ptr, size, s, true);
    pthread_mutex_unlock(&fb->lock);
    return c;
}

/* ---- reservations -------------------------------------------------------- */

static reservation *res_of(fake_backend *fb, CUdeviceptr va, size_t size)
{
    for (int i = 0; i < fb->nres; i++) {
        reservation *r = &fb->res[i];
        if (va >= r->base && va + size <= r->base + r->size && va + size > va)
            return r;
    }
    return NULL;
}

static CUresult reserve_locked(fake_backend *fb, size_t size, size_t align, CUdeviceptr *va)
{
    if (!size || size % fb->page || fb->nres == MAX_RES)
        return CUDA_ERROR_INVALID_VALUE;
    if (align < fb->page)
        align = fb->page;
    size_t raw_size = size + align;
    void *raw;
    if (fb->no_bytes) { /* addresses only: handed out past the last one */
        static uintptr_t next = (uintptr_t)1 << 44;
        raw = (void *)next;
        next += (raw_size + fb->page - 1) / fb->page * fb->page + fb->page;
    } else {
        raw = mmap(NULL, raw_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (raw == MAP_FAILED)
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    reservation *r = &fb->res[fb->nres++];
    r->raw = raw;
    r->raw_size = raw_size;
    r->base = ((CUdeviceptr)raw + align - 1) & ~(CUdeviceptr)(align - 1);
    r->size = size;
    r->mapped = calloc(size / fb->page, sizeof *r->mapped);
    r->access = calloc(size / fb->page, sizeof *r->access);
    fb->st.reserves++;
    *va = r->base;
    return CUDA_SUCCESS;
}

CUresult fake_reserve(fake_backend *fb, size_t size, CUdeviceptr *va)
{
    pthread_mutex_lock(&fb->lock);
    CUresult r = reserve_locked(fb, size, fb->page, va);
    pthread_mutex_unlock(&fb->lock);
    return r;
}

static CUresult free_va_locked(fake_backend *fb, CUdeviceptr va, size_t size)
{
    for (int i = 0; i < fb->nres; i++) {
        reservation *r = &fb->res[i];
        if (r->base != va || r->size != size)
            continue;
        for (size_t p = 0; p < size / fb->page; p++)
            if (r->mapped[p])
                violate(fb, "va_free of a reservation with page %llu mapped",
                        (unsigned long long)p);
        if (!fb->no_bytes)
            munmap(r->raw, r->raw_size);
        free(r->mapped);
        free(r->access);
        fb->res[i] = fb->res[--fb->nres];
        fb->st.va_frees++;
        return CUDA_SUCCESS;
    }
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult fake_free_va(fake_backend *fb, CUdeviceptr va, size_t size)
{
    pthread_mutex_lock(&fb->lock);
    CUresult r = free_va_locked(fb, va, size);
    pthread_mutex_unlock(&fb->lock);
    return r;
}

CUmemGenericAllocationHandle fake_mapped_handle(fake_backend *fb, CUdeviceptr va)
{
    pthread_mutex_lock(&fb->lock);
    reservation *r = res_of(fb, va, 1);
    CUmemGenericAllocationHandle h = r ? r->mapped[(va - r->base) / fb->page] : 0;
    pthread_mutex_unlock(&fb->lock);
    return h;
}

/* ---- the backend ----------------------------------------------------------- */

static CUresult b_granularity(void *ctx, int dev, size_t *bytes)
{
    (void)dev;
    *bytes = ((fake_backend *)ctx)->page;
    return CUDA_SUCCESS;
}

static CUresult b_page_create(void *ctx, int dev, sw_loc loc, size_t size,
                              CUmemGenericAllocationHandle *h)
{
    fake_backend *fb = ctx;
    (void)dev;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&fb->lock);
    if (injected(fb, "page_create", &r)) {
    } else if (size != fb->page || !fb->nfree_idx) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else if (loc == SW_LOC_DEVICE && fb->st.live_dev_pages >= fb->dev_limit) {
        violate(fb, "device page created beyond the limit (%llu pages)",
                (unsigned long long)fb->dev_limit);
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        uint32_t idx = fb->free_idx[--fb->nfree_idx];
        fb->kind[idx] = loc == SW_LOC_DEVICE ? 1 : 2;
        if (loc == SW_LOC_DEVICE) {
            if (++fb->st.live_dev_pages > fb->st.max_dev_pages)
                fb->st.max_dev_pages = fb->st.live_dev_pages;
        } else {
            fb->st.live_host_pages++;
        }
        fb->st.creates++;
        *h = (CUmemGenericAllocationHandle)idx + 1;
    }
    void (*fn)(void *) = hook_due(fb, "page_create");
    pthread_mutex_unlock(&fb->lock);
    if (fn)
        fn(fb->on_arg);
    return r;
}

void fake_on_call(fake_backend *fb, const char *op, uint64_t nth, void (*fn)(void *), void *arg)
{
    pthread_mutex_lock(&fb->lock);
    snprintf(fb->on_op, sizeof fb->on_op, "%s", op);
    fb->on_nth = nth;
    fb->on_calls = 0;
    fb->on_fn = fn;
    fb->on_arg = arg;
    pthread_mutex_unlock(&fb->lock);
}

static CUresult b_page_release(void *ctx, CUmemGenericAllocationHandle h)
{
    fake_backend *fb = ctx;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&fb->lock);
    uint32_t idx = (uint32_t)(h - 1);
    if (h == 0 || idx >= MAX_PAGES || !fb->kind[idx]) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        if (fb->maps_of[idx])
            violate(fb, "page %llu released while mapped", (unsigned long long)h);
        if (fb->kind[idx] == 1)
            fb->st.live_dev_pages--;
        else
            fb->st.live_host_pages--;
        fb->kind[idx] = 0;
        /* Gives the memory back so long suites stay small. */
        if (!fb->no_bytes)
            fallocate(fb->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)idx * (off_t)fb->page,
                  (off_t)fb->page);
        fb->free_idx[fb->nfree_idx++] = idx;
        fb->st.releases++;
    }
    void (*fn)(void *) = hook_due(fb, "page_release");
    pthread_mutex_unlock(&fb->lock);
    if (fn)
        fn(fb->on_arg);
    return r;
}

static CUresult b_va_reserve(void *ctx, int dev, size_t size, size_t align, CUdeviceptr *va)
{
    fake_backend *fb = ctx;
    (void)dev;
    pthread_mutex_lock(&fb->lock);
    CUresult r;
    if (!injected(fb, "va_reserve", &r))
        r = reserve_locked(fb, size, align, va);
    pthread_mutex_unlock(&fb->lock);
    return r;
}

static CUresult b_va_free(void *ctx, CUdeviceptr va, size_t size)
{
    return fake_free_va(ctx, va, size);
}

static CUresult b_map(void *ctx, CUdeviceptr va, size_t size, CUmemGenericAllocationHandle h)
{
    fake_backend *fb = ctx;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&fb->lock);
    reservation *res = res_of(fb, va, size);
    uint32_t idx = (uint32_t)(h - 1);
    if (injected(fb, "map", &r)) {
    } else if (!res || size != fb->page || va % fb->page) {
        r = CUDA_ERROR_INVALID_VALUE; /* a program's mistake, forwarded */
    } else if (h == 0 || idx >= MAX_PAGES || !fb->kind[idx]) {
        r = CUDA_ERROR_INVALID_HANDLE;
    } else if (res->mapped[(va - res->base) / fb->page]) {
        violate(fb, "map over a mapping at %llx", (unsigned long long)va);
        r = CUDA_ERROR_INVALID_VALUE;
    } else if (!fb->no_bytes && mmap((void *)va, size, PROT_NONE, MAP_SHARED | MAP_FIXED, fb->fd,
                                     (off_t)idx * (off_t)fb->page) == MAP_FAILED) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        res->mapped[(va - res->base) / fb->page] = h;
        res->access[(va - res->base) / fb->page] = false;
        fb->maps_of[idx]++;
        fb->st.maps++;
        fb->st.live_mappings++;
    }
    pthread_mutex_unlock(&fb->lock);
    return r;
}

static CUresult b_unmap(void *ctx, CUdeviceptr va, size_t size)
{
    fake_backend *fb = ctx;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&fb->lock);
    reservation *res = res_of(fb, va, size);
    if (injected(fb, "unmap", &r)) {
    } else if (!res || size != fb->page || !res->mapped[(va - res->base) / fb->page]) {
        violate(fb, "unmap of an unmapped page at %llx", (unsigned long long)va);
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        if (inflight(fb, va, size, NULL, false))
            violate(fb, "unmap of page %llx with work in flight", (unsigned long long)va);
        if (!fb->no_bytes)
            mmap((void *)va, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE,
                 -1, 0);
        CUmemGenericAllocationHandle h = res->mapped[(va - res->base) / fb->page];
        fb->maps_of[h - 1]--;
        res->mapped[(va - res->base) / fb->page] = 0;
        res->access[(va - res->base) / fb->page] = false;
        fb->st.unmaps++;
        fb->st.live_mappings--;
    }
    pthread_mutex_unlock(&fb->lock);
    return r;
}

static CUresult b_set_access(void *ctx, CUdeviceptr va, size_t size, uint64_t dev_mask)
{
    fake_backend *fb = ctx;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&fb->lock);
    reservation *res = res_of(fb, va, size);
    if (injected(fb, "set_access", &r)) {
    } else if (!res || size % fb->page || va % fb->page || !dev_mask) {
        violate(fb, "set_access outside a reservation at %llx", (unsigned long long)va);
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        for (size_t p = 0; p < size / fb->page; p++)
            if (!res->mapped[(va - res->base) / fb->page + p]) {
                violate(fb, "set_access on an unmapped page at %llx", (unsigned long long)va);
                r = CUDA_ERROR_INVALID_VALUE;
            }
        if (r == CUDA_SUCCESS) {
            if (!fb->no_bytes)
                mprotect((void *)va, size, PROT_READ | PROT_WRITE);
            for (size_t p = 0; p < size / fb->page; p++)
                res->access[(va - res->base) / fb->page + p] = true;
            fb->st.set_access++;
        }
    }
    pthread_mutex_unlock(&fb->lock);
    return r;
}

/* Whether the device may touch [va, va+size): outside every reservation
 * (host memory), or mapped with access granted. */
static bool reachable(fake_backend *fb, CUdeviceptr va, size_t size)
{
    reservation *res = res_of(fb, va, size);
    if (!res)
        return true;
    for (CUdeviceptr a = va & ~(CUdeviceptr)(fb->page - 1); a < va + size; a += fb->page)
        if (!res->mapped[(a - res->base) / fb->page] || !res->access[(a - res->base) / fb->page])
            return false;
    return true;
}

static CUresult b_copy(void *ctx, int dev, CUdeviceptr dst, CUdeviceptr src, size_t size,
                       CUstream stream)
{
    fake_backend *fb = ctx;
    (void)dev;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&fb->lock);
    if (injected(fb, "copy", &r)) {
    } else if (!reachable(fb, dst, size) || !reachable(fb, src, size)) {
        /* The driver's answer (fakecuda's too); on a GPU the copy may
         * instead fault the context: either way no byte moves. */
        violate(fb, "copy through a page without access at %llx",
                (unsigned long long)(reachable(fb, src, size) ? dst : src));
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        if (!fb->no_bytes)
            memmove((void *)dst, (const void *)src, size);
        stream_state *st = stream_of(fb, stream);
        if (fb->nworks < MAX_WORK) {
            fb->works[fb->nworks++] = (work){stream, ++st->issued, dst, size};
            fb->works[fb->nworks++] = (work){stream, ++st->issued, src, size};
        }
        fb->st.copies++;
    }
    pthread_mutex_unlock(&fb->lock);
    return r;
}

static CUresult b_synchronize(void *ctx, int dev)
{
    fake_backend *fb = ctx;
    (void)dev;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&fb->lock);
    while (fb->sync_held) /* in-flight work waiting for work not yet submitted */
        pthread_cond_wait(&fb->sync_release, &fb->lock);
    if (!injected(fb, "synchronize", &r)) {
        for (int i = 0; i < fb->nstreams; i++)
            fb->streams[i].completed = fb->streams[i].issued;
        fb->nworks = 0;
        fb->st.syncs++;
    }
    void (*fn)(void *) = hook_due(fb, "synchronize");
    pthread_mutex_unlock(&fb->lock);
    if (fn)
        fn(fb->on_arg);
    return r;
}

static CUresult b_stream_create(void *ctx, int dev, CUstream *out)
{
    fake_backend *fb = ctx;
    (void)dev;
    pthread_mutex_lock(&fb->lock);
    *out = (CUstream)(uintptr_t)(0x5000 + ++fb->nmovers);
    pthread_mutex_unlock(&fb->lock);
    return CUDA_SUCCESS;
}

/* Completes the work of one stream only (the mover's own copies). */
static CUresult b_stream_sync(void *ctx, int dev, CUstream s)
{
    fake_backend *fb = ctx;
    (void)dev;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&fb->lock);
    if (!injected(fb, "stream_sync", &r)) {
        stream_state *st = stream_of(fb, s);
        st->completed = st->issued;
        purge_work(fb);
    }
    void (*fn)(void *) = hook_due(fb, "stream_sync");
    pthread_mutex_unlock(&fb->lock);
    if (fn)
        fn(fb->on_arg);
    return r;
}

static CUresult b_stream_destroy(void *ctx, int dev, CUstream s)
{
    (void)ctx;
    (void)dev;
    (void)s;
    return CUDA_SUCCESS;
}

static bool b_capturing(void *ctx)
{
    fake_backend *fb = ctx;
    pthread_mutex_lock(&fb->lock);
    bool c = fb->capturing;
    pthread_mutex_unlock(&fb->lock);
    return c;
}

void fake_no_bytes(fake_backend *fb)
{
    fb->no_bytes = true;
}

void fake_set_capturing(fake_backend *fb, bool on)
{
    pthread_mutex_lock(&fb->lock);
    fb->capturing = on;
    pthread_mutex_unlock(&fb->lock);
}

void fake_hold_sync(fake_backend *fb, bool held)
{
    pthread_mutex_lock(&fb->lock);
    fb->sync_held = held;
    pthread_cond_broadcast(&fb->sync_release);
    pthread_mutex_unlock(&fb->lock);
}

static CUresult b_event_create(void *ctx, int dev, CUevent *ev, void **where)
{
    fake_backend *fb = ctx;
    (void)dev;
    fake_event *e = calloc(1, sizeof *e);
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&fb->lock);
    fb->st.ev_create++;
    e->where = *where = fb->cur_ctx;
    e->next = fb->events;
    fb->events = e;
    pthread_mutex_unlock(&fb->lock);
    *ev = (CUevent)e;
    return CUDA_SUCCESS;
}

/* An event of a reset context named again: the driver's handle is gone
 * (INVALID_HANDLE), or reused for another event of the program's. Lock held. */
static bool event_dead(fake_backend *fb, fake_event *e, const char *call)
{
    if (!e->dead)
        return false;
    char what[96];
    snprintf(what, sizeof what, "%s of an event whose context was reset (%%#llx)", call);
    violate(fb, what, (unsigned long long)(uintptr_t)e);
    return true;
}

static CUresult b_event_record(void *ctx, CUevent ev, CUstream stream)
{
    fake_backend *fb = ctx;
    fake_event *e = (fake_event *)ev;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&fb->lock);
    if (event_dead(fb, e, "event_record"))
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (!injected(fb, "event_record", &r)) {
        e->s = stream;
        e->seq = stream_of(fb, stream)->issued;
        fb->st.ev_record++;
    }
    pthread_mutex_unlock(&fb->lock);
    return r;
}

static CUresult b_event_query(void *ctx, CUevent ev)
{
    fake_backend *fb = ctx;
    fake_event *e = (fake_event *)ev;
    pthread_mutex_lock(&fb->lock);
    fb->st.ev_query++;
    bool dead = event_dead(fb, e, "event_query");
    bool done = !dead && stream_of(fb, e->s)->completed >= e->seq;
    pthread_mutex_unlock(&fb->lock);
    return dead ? CUDA_ERROR_INVALID_HANDLE : done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

static CUresult b_event_destroy(void *ctx, CUevent ev)
{
    fake_backend *fb = ctx;
    fake_event *e = (fake_event *)ev;
    pthread_mutex_lock(&fb->lock);
    bool dead = event_dead(fb, e, "event_destroy");
    if (!dead) {
        fb->st.ev_destroy++;
        for (fake_event **pp = &fb->events; *pp; pp = &(*pp)->next)
            if (*pp == e) {
                *pp = e->next;
                break;
            }
    }
    pthread_mutex_unlock(&fb->lock);
    if (!dead)
        free(e);
    return dead ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
}

void fake_set_context(fake_backend *fb, void *where)
{
    pthread_mutex_lock(&fb->lock);
    fb->cur_ctx = where;
    pthread_mutex_unlock(&fb->lock);
}

void fake_context_reset(fake_backend *fb, void *where)
{
    pthread_mutex_lock(&fb->lock);
    for (fake_event *e = fb->events; e; e = e->next)
        if (e->where == where && !e->dead) {
            e->dead = true;
            fb->st.ev_destroy++; /* by the reset */
        }
    pthread_mutex_unlock(&fb->lock);
}

sw_backend fake_ops(fake_backend *fb)
{
    return (sw_backend){
        .ctx = fb,
        .granularity = b_granularity,
        .page_create = b_page_create,
        .page_release = b_page_release,
        .va_reserve = b_va_reserve,
        .va_free = b_va_free,
        .map = b_map,
        .unmap = b_unmap,
        .set_access = b_set_access,
        .copy = b_copy,
        .synchronize = b_synchronize,
        .stream_create = b_stream_create,
        .stream_sync = b_stream_sync,
        .stream_destroy = b_stream_destroy,
        .capturing = b_capturing,
        .event_create = b_event_create,
        .event_record = b_event_record,
        .event_query = b_event_query,
        .event_destroy = b_event_destroy,
    };
}
