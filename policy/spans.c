/* Heat inside one large program mapping (issue 13): JAX and TensorFlow
 * allocate one arena with cuMemCreate and sub-allocate every buffer in it,
 * so the mapping is one owner for the whole working set. A launch names a
 * buffer by its start, not its size; every pointer a launch or copy names
 * inside the mapping starts a span, which runs to the next start seen
 * (a sound over-approximation of the buffer: it may include free arena
 * space behind it, never miss a byte before the next buffer). Each span
 * has its own heat, so the pages a step uses are told from those it does
 * not, and a fill brings back only the touched span's pages.
 *
 * Readers (sw_touch, lock-free, on every launch) search a sorted array of
 * span pointers under a sequence count; writers (a new start, rare once
 * the program's buffers are known) insert under the mapping's lock and
 * bump the count, and readers that overlapped retry. Segments never move
 * or go away while the policy lives: a reader that raced a change holds a
 * valid span, at worst the wrong one, and retries. Arrays outgrown, and
 * the spans of an unmapped mapping, are kept until the policy goes.
 *
 * The sequence lock is C11's (Boehm, "Can seqlocks get along with
 * programming language memory models?", 2012): what a reader reads between
 * its two looks at the count (the array's pointers, the spans' starts) is
 * atomic; the writer makes the count odd, then a release fence, then
 * writes; the reader reads, then an acquire fence, then the count again.
 * The array moves pointer by pointer, not with memmove, whose copy need not
 * write a pointer whole (a reader dereferences what it reads). */
#include "policy/internal.h"

#include <stdlib.h>

/* Retired memory, freed with the policy. */
typedef struct grave {
    void *mem;
    struct grave *next;
} grave;

static void bury(sw_policy *p, void *mem)
{
    grave *g = malloc(sizeof *g);
    if (!g)
        return; /* leaked: freeing it under a reader could crash */
    g->mem = mem;
    pthread_mutex_lock(&p->graves_lock);
    g->next = p->graves;
    p->graves = g;
    pthread_mutex_unlock(&p->graves_lock);
}

void sw_spans_bury_all(sw_policy *p)
{
    pthread_mutex_lock(&p->graves_lock);
    for (grave *g = p->graves, *n; g; g = n) {
        n = g->next;
        free(g->mem);
        free(g);
    }
    p->graves = NULL;
    pthread_mutex_unlock(&p->graves_lock);
}

struct sw_spans {
    pthread_mutex_t lock;      /* writers */
    _Atomic uint32_t seq;      /* odd while a writer changes the array */
    _Atomic(_Atomic(sw_span *) *) at; /* sorted by start */
    _Atomic uint32_t n;
    uint32_t cap;
    CUdeviceptr end;           /* the mapping's end */
    sw_span *store;             /* spans in blocks, never moved */
    uint32_t store_used, store_cap;
    /* Which pages of the mapping live on the host: one bit per page, and
     * one bit per word of those saying it is not zero, so that a touch
     * tells whether a buffer has a host page in O(pages / 4096), not one
     * page-table walk per page (a touch runs at every launch). Written
     * under the device lock (sw_spans_host), read lock-free: a hint. */
    CUdeviceptr base;
    unsigned shift;
    _Atomic uint64_t *host, *host_sum;
};

#define BLOCK 256u

/* A span's start: written once before the span is in an array, read
 * inside the sequence lock, where a reader may see a span being inserted. */
static CUdeviceptr start_of(const sw_span *g)
{
    return atomic_load_explicit(&g->start, memory_order_relaxed);
}

/* Acquire, pairing with put's release: a reader dereferences what it finds
 * before it knows whether its read was consistent, so a span it finds must
 * be initialised for it (its block's zeroing, its start), whether or not
 * the sequence count later makes it retry. As the page table's levels are
 * read (pagetable.c): a plain load on x86-64, LDAR/LDAPR on AArch64. */
static sw_span *span_at(_Atomic(sw_span *) const *at, uint32_t i)
{
    return atomic_load_explicit(&at[i], memory_order_acquire);
}

static void put(_Atomic(sw_span *) *at, uint32_t i, sw_span *g)
{
    atomic_store_explicit(&at[i], g, memory_order_release);
}

static sw_span *span_new(sw_policy *p, sw_spans *s)
{
    if (!s->store || s->store_used == s->store_cap) {
        sw_span *b = calloc(BLOCK, sizeof *b);
        if (!b)
            return NULL;
        bury(p, b); /* lives as long as the policy */
        s->store = b;
        s->store_used = 0;
        s->store_cap = BLOCK;
    }
    return &s->store[s->store_used++];
}

bool sw_spans_wanted(const sw_policy *p, size_t size)
{
    return size >> p->shift >= SW_SPAN_MIN_PAGES;
}

sw_spans *sw_spans_new(sw_policy *p, CUdeviceptr va, size_t size, const sw_heat *h)
{
    size_t npages = (size + p->page - 1) >> p->shift, nwords = (npages + 63) / 64;
    sw_spans *s = calloc(1, sizeof *s);
    _Atomic(sw_span *) *at = calloc(16, sizeof *at);
    _Atomic uint64_t *host = calloc(nwords, sizeof *host);
    _Atomic uint64_t *sum = calloc((nwords + 63) / 64, sizeof *sum);
    if (!s || !at || !host || !sum || pthread_mutex_init(&s->lock, NULL)) {
        free(s);
        free(at);
        free(host);
        free(sum);
        return NULL;
    }
    bury(p, s);
    bury(p, at);
    bury(p, host);
    bury(p, sum);
    s->base = va;
    s->shift = p->shift;
    s->host = host;
    s->host_sum = sum;
    s->cap = 16;
    s->end = va + size;
    sw_span *first = span_new(p, s);
    if (!first)
        return NULL;
    atomic_store_explicit(&first->start, va, memory_order_relaxed);
    atomic_store(&first->heat.touched, atomic_load(&h->touched));
    atomic_store(&first->heat.born, atomic_load(&h->born));
    put(at, 0, first);
    atomic_store(&s->at, at);
    atomic_store(&s->n, 1);
    return s;
}

/* The index of the last span starting at or before ptr (n > 0, the
 * first starts at the mapping's start). */
static uint32_t find(_Atomic(sw_span *) const *at, uint32_t n, CUdeviceptr ptr)
{
    uint32_t lo = 0, hi = n;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (start_of(span_at(at, mid)) <= ptr)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* The seqlock's read side: a sequence number to check after reading, the
 * count and the array as of it. */
static uint32_t read_begin(sw_spans *s, uint32_t *n, _Atomic(sw_span *) **at)
{
    uint32_t q;
    while ((q = atomic_load_explicit(&s->seq, memory_order_acquire)) & 1)
        ; /* a writer is in the middle: it holds the lock a few stores long */
    /* n first: a new count is published after its array, so the array read
     * next holds at least n entries. */
    *n = atomic_load_explicit(&s->n, memory_order_acquire);
    *at = atomic_load_explicit(&s->at, memory_order_acquire);
    return q;
}

/* Whether what was read since read_begin answered q is consistent. */
static bool read_valid(sw_spans *s, uint32_t q)
{
    atomic_thread_fence(memory_order_acquire);
    return atomic_load_explicit(&s->seq, memory_order_relaxed) == q;
}

/* A consistent read: the span containing ptr and where it ends. */
static sw_span *lookup(sw_spans *s, CUdeviceptr ptr, CUdeviceptr *end)
{
    for (;;) {
        uint32_t n;
        _Atomic(sw_span *) *at;
        uint32_t q = read_begin(s, &n, &at);
        uint32_t i = find(at, n, ptr);
        sw_span *g = span_at(at, i);
        CUdeviceptr e = i + 1 < n ? start_of(span_at(at, i + 1)) : s->end;
        if (read_valid(s, q)) {
            *end = e;
            return g;
        }
    }
}

/* Inserts a span starting at ptr, inside span g; its heat starts as g's
 * (what was known of that memory). NULL: no room or memory. */
static sw_span *insert(sw_policy *p, sw_spans *s, CUdeviceptr ptr)
{
    pthread_mutex_lock(&s->lock);
    _Atomic(sw_span *) *at = atomic_load(&s->at);
    uint32_t n = atomic_load(&s->n), i = find(at, n, ptr);
    sw_span *g = span_at(at, i);
    if (start_of(g) == ptr || n >= SW_SPAN_MAX) { /* raced, or full: stay coarse */
        pthread_mutex_unlock(&s->lock);
        return start_of(g) == ptr ? g : NULL;
    }
    sw_span *ng = span_new(p, s);
    if (!ng) {
        pthread_mutex_unlock(&s->lock);
        return NULL;
    }
    atomic_store_explicit(&ng->start, ptr, memory_order_relaxed);
    /* A new buffer: judged on its own uses from now (sw_heat_rate). */
    uint64_t now = atomic_load_explicit(&p->clock, memory_order_relaxed);
    atomic_store(&ng->heat.touched, now);
    atomic_store(&ng->heat.born, now);
    _Atomic(sw_span *) *dst = at;
    if (n == s->cap) {
        if (!(dst = malloc(2 * s->cap * sizeof *dst))) {
            pthread_mutex_unlock(&s->lock);
            return NULL;
        }
        for (uint32_t k = 0; k < n; k++)
            put(dst, k, span_at(at, k));
        bury(p, dst);
        s->cap *= 2;
    }
    /* Odd, then a release fence before the first write a reader may see:
     * a reader that reads any pointer or start written below then reads
     * the count odd or moved on in read_valid (whose acquire fence pairs
     * with this one), and retries. An acq_rel increment does not order the
     * writes after it (its release half orders only what precedes it):
     * AArch64 without LSE atomics makes it ldaxr/stlxr, and the stores of
     * the move could be seen before the odd count, so a reader took a
     * half-moved array (a span twice, an end at its own start) for a
     * consistent one. */
    atomic_fetch_add_explicit(&s->seq, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    for (uint32_t k = n - 1; k > i; k--)
        put(dst, k + 1, span_at(dst, k));
    put(dst, i + 1, ng);
    atomic_store_explicit(&s->at, dst, memory_order_release);
    atomic_store_explicit(&s->n, n + 1, memory_order_release);
    atomic_fetch_add_explicit(&s->seq, 1, memory_order_release); /* even */
    pthread_mutex_unlock(&s->lock);
    return ng;
}

sw_heat *sw_spans_touch(sw_policy *p, sw_spans *s, CUdeviceptr ptr, CUdeviceptr *end)
{
    sw_span *g = lookup(s, ptr, end);
    if (start_of(g) != ptr && insert(p, s, ptr))
        g = lookup(s, ptr, end);
    return &g->heat;
}

void sw_spans_mark(sw_policy *p, sw_spans *s, CUdeviceptr ptr)
{
    CUdeviceptr end;
    if (ptr < s->end && start_of(lookup(s, ptr, &end)) != ptr)
        (void)insert(p, s, ptr); /* full: the span stays coarser, never wrong */
}

sw_heat *sw_spans_at(sw_spans *s, CUdeviceptr ptr, CUdeviceptr *start, CUdeviceptr *end)
{
    sw_span *g = lookup(s, ptr, end);
    *start = start_of(g);
    return &g->heat;
}

void sw_spans_page(sw_spans *s, CUdeviceptr page, size_t size, uint64_t now, uint64_t *stamp,
                   uint32_t *rate)
{
    for (;;) {
        uint32_t n;
        _Atomic(sw_span *) *at;
        uint32_t q = read_begin(s, &n, &at);
        uint64_t t = 0;
        uint32_t u = 0;
        for (uint32_t i = find(at, n, page); i < n && start_of(span_at(at, i)) < page + size; i++) {
            sw_span *g = span_at(at, i);
            uint64_t ti = atomic_load_explicit(&g->heat.touched, memory_order_relaxed);
            uint32_t ui = sw_heat_rate(&g->heat, now);
            t = ti > t ? ti : t;
            u = ui > u ? ui : u;
        }
        if (read_valid(s, q)) {
            *stamp = t;
            *rate = u;
            return;
        }
    }
}


void sw_spans_host(sw_spans *s, CUdeviceptr page, bool on)
{
    size_t i = (size_t)((page - s->base) >> s->shift), w = i / 64;
    uint64_t bit = 1ull << (i % 64), sbit = 1ull << (w % 64);
    if (on) {
        atomic_fetch_or_explicit(&s->host[w], bit, memory_order_relaxed);
        atomic_fetch_or_explicit(&s->host_sum[w / 64], sbit, memory_order_relaxed);
    } else if (!(atomic_fetch_and_explicit(&s->host[w], ~bit, memory_order_relaxed) & ~bit)) {
        atomic_fetch_and_explicit(&s->host_sum[w / 64], ~sbit, memory_order_relaxed);
    }
}

/* Whether a bit of [lo, hi) is set in a, word by word. */
static bool any_bit(const _Atomic uint64_t *a, size_t lo, size_t hi)
{
    while (lo < hi) {
        size_t w = lo / 64, end = (w + 1) * 64 < hi ? (w + 1) * 64 : hi;
        uint64_t mask = (end - w * 64 == 64 ? ~0ull : (1ull << (end - w * 64)) - 1) &
                        ~((1ull << (lo % 64)) - 1);
        if (atomic_load_explicit(&a[w], memory_order_relaxed) & mask)
            return true;
        lo = end;
    }
    return false;
}

bool sw_spans_host_in(sw_spans *s, CUdeviceptr lo, CUdeviceptr hi)
{
    if (hi > s->end)
        hi = s->end;
    if (lo < s->base || lo >= hi)
        return false;
    size_t a = (size_t)((lo - s->base) >> s->shift);
    size_t b = (size_t)((hi - 1 - s->base) >> s->shift) + 1;
    /* The words wholly inside [a, b) through the summary, the two partial
     * ones at the ends bit by bit. */
    size_t wa = (a + 63) / 64, wb = b / 64;
    if (wa >= wb)
        return any_bit(s->host, a, b);
    return any_bit(s->host, a, wa * 64) || any_bit(s->host, wb * 64, b) ||
           any_bit(s->host_sum, wa, wb);
}
