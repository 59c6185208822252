/* One thread's run: plan an operation from the RNG and the nominal state
 * only, then execute it. A refused allocation stays in the nominal state as
 * a dead slot (its frees and data operations become no-ops), so the plan,
 * and hence the whole sequence, is the same in every run of the seed. */
#include <stdlib.h>
#include <string.h>

#include "tests/integration/diff/diffgen.h"

struct diff_plan {
    int kind;
    int api, variant, stream;
    bool async, cross, init;
    unsigned width;
    uint64_t size, pitch_h, vis;
    size_t a, b;
    uint64_t aoff, boff, len, value, pick;
};

static uint64_t draw_size(struct diff_thread *t)
{
    const struct diff_options *o = t->run->o;
    switch (o->dist) {
    case DIST_FIXED: return o->min;
    case DIST_UNIFORM: return diff_range(&t->rng, o->min, o->max);
    default: return diff_log_range(&t->rng, o->min, o->max);
    }
}

static int draw_api(struct diff_thread *t)
{
    unsigned mask = t->run->o->alloc_apis, n = (unsigned)__builtin_popcount(mask);
    unsigned k = (unsigned)diff_range(&t->rng, 0, n - 1);
    for (int api = 0; api < API_COUNT; api++)
        if ((mask >> api & 1) && k-- == 0)
            return api;
    return API_ALLOC;
}

/* Every draw happens whatever is chosen: the RNG stays in step. */
static void plan_mem(struct diff_thread *t, struct diff_plan *p)
{
    const struct diff_options *o = t->run->o;
    p->size = draw_size(t);
    p->api = draw_api(t);
    p->pitch_h = diff_range(&t->rng, 1, 16);
    p->stream = (int)diff_range(&t->rng, 0, o->streams);
    p->init = diff_unit(&t->rng) < o->init;
    p->variant = (int)diff_range(&t->rng, 0, 3);
    p->value = diff_next(&t->rng);
    p->a = t->nslots ? (size_t)diff_range(&t->rng, 0, t->nslots - 1) : 0;
    p->cross = diff_unit(&t->rng) < o->cross_free;
    p->pick = diff_next(&t->rng);
    p->vis = diff_visible_size(t->run, p->api, p->size, p->pitch_h);
    /* the raw size decides, so that VMM (whole pages) is not starved */
    bool room = t->nominal_live + p->size <= t->target;
    p->kind = !t->nslots || room ? OP_ALLOC : OP_FREE;
}

/* Weights of the data operations, by the API group that enables them. */
static const struct {
    int op, group;
    unsigned weight;
} data_ops[] = {
    {OP_HTOD, DATA_COPY, 20},       {OP_DTOH, DATA_COPY, 10},   {OP_DTOD, DATA_COPY, 20},
    {OP_MEMSET, DATA_MEMSET, 20},   {OP_FILL, DATA_LAUNCH, 20}, {OP_XOR, DATA_LAUNCH, 20},
    {OP_SYNC_STREAM, DATA_SYNC, 3}, {OP_SYNC_DEVICE, DATA_SYNC, 1}, {OP_INFO, DATA_SYNC, 1},
};
#define NDATA (sizeof data_ops / sizeof data_ops[0])

static int draw_data_op(struct diff_thread *t)
{
    unsigned total = 0, mask = t->run->o->data_apis;
    for (size_t i = 0; i < NDATA; i++)
        total += (mask >> data_ops[i].group & 1) * data_ops[i].weight;
    uint64_t k = diff_range(&t->rng, 0, total - 1);
    for (size_t i = 0; i < NDATA; i++) {
        unsigned w = (mask >> data_ops[i].group & 1) * data_ops[i].weight;
        if (k < w)
            return data_ops[i].op;
        k -= w;
    }
    return OP_INFO;
}

static void plan_data(struct diff_thread *t, struct diff_plan *p)
{
    const struct diff_options *o = t->run->o;
    p->kind = draw_data_op(t);
    p->a = (size_t)diff_range(&t->rng, 0, t->nslots - 1);
    p->b = (size_t)diff_range(&t->rng, 0, t->nslots - 1);
    uint64_t sa = t->slots[p->a].size, sb = t->slots[p->b].size, lim = o->op_max;
    lim = lim < sa ? lim : sa;
    lim = lim < sb ? lim : sb;
    p->len = diff_log_range(&t->rng, 1, lim);
    p->aoff = diff_range(&t->rng, 0, sa - p->len);
    p->boff = diff_range(&t->rng, 0, sb - p->len);
    p->stream = (int)diff_range(&t->rng, 0, o->streams);
    p->async = diff_unit(&t->rng) < 0.6;
    p->variant = (int)diff_range(&t->rng, 0, 3);
    p->width = 1u << diff_range(&t->rng, 0, 2);
    p->value = diff_next(&t->rng);
}

static void plan(struct diff_thread *t, struct diff_plan *p)
{
    memset(p, 0, sizeof *p);
    bool mem = diff_unit(&t->rng) < t->run->o->mem_frac;
    if (mem || !t->nslots || !t->run->o->data_apis)
        plan_mem(t, p);
    else
        plan_data(t, p);
}

bool diff_add_slot(struct diff_thread *t, const struct diff_slot *s)
{
    if (t->nslots == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        struct diff_slot *n = realloc(t->slots, cap * sizeof *n);
        if (!n)
            return diff_cu(t, CUDA_ERROR_OUT_OF_MEMORY, "slot table");
        t->slots = n;
        t->cap = cap;
    }
    t->slots[t->nslots++] = *s;
    t->nominal_live += s->size;
    return true;
}

/* A new buffer is written whole (memset, or the fill kernel one time in
 * four) so that spilled pages carry data to check, not zeros. */
static bool init_slot(struct diff_thread *t, struct diff_slot *s, const struct diff_plan *p)
{
    unsigned data = t->run->o->data_apis;
    bool kernel = (data >> DATA_LAUNCH & 1) && (p->variant == 0 || !(data >> DATA_MEMSET & 1));
    int stream = s->stream >= 0 ? s->stream : 0;
    if (!p->init)
        return true;
    if (kernel)
        return diff_fill(t, s, 0, s->size, p->value, stream, (int)(p->pick & 3));
    return diff_memset(t, s, 0, s->size, 4, (uint32_t)p->value, s->stream >= 0, stream);
}

bool diff_exec_alloc(struct diff_thread *t, int api, uint64_t size, uint64_t pitch_h, int stream,
                     struct diff_slot *out)
{
    CUresult res;
    if (!diff_alloc(t, api, size, pitch_h, stream, out, &res))
        return false;
    if (res == CUDA_SUCCESS && !diff_shadow_init(&out->sh, out->size))
        return diff_cu(t, CUDA_ERROR_OUT_OF_MEMORY, "shadow");
    return true;
}

static bool exec_alloc(struct diff_thread *t, const struct diff_plan *p)
{
    struct diff_slot s;
    if (!diff_exec_alloc(t, p->api, p->size, p->pitch_h, p->stream, &s))
        return false;
    if (s.ptr && !init_slot(t, &s, p)) {
        diff_add_slot(t, &s);
        return false;
    }
    return diff_add_slot(t, &s);
}

/* Verifies (sampled), frees and forgets slot i. */
bool diff_exec_free(struct diff_thread *t, size_t i, bool cross, int stream, uint64_t pick)
{
    struct diff_slot *s = &t->slots[i];
    if (s->ptr && (!diff_verify_sampled(t, s, pick) || !diff_free(t, s, cross, stream)))
        return false;
    diff_shadow_free(&s->sh);
    t->nominal_live -= s->size;
    t->slots[i] = t->slots[--t->nslots];
    return true;
}

static void synced(struct diff_thread *t, int stream)
{
    for (size_t i = 0; i < t->nslots; i++)
        if (stream < 0 || t->slots[i].stream == stream)
            t->slots[i].stream = -1;
}

static bool info(struct diff_thread *t)
{
    size_t free_b, total;
    if (!diff_cu(t, cuMemGetInfo(&free_b, &total), "cuMemGetInfo"))
        return false;
    if (total != t->run->o->limit || free_b > total) {
        diff_fail(t, "cuMemGetInfo: free %zu total %zu, limit %llu", free_b, total,
                  (unsigned long long)t->run->o->limit);
        return false;
    }
    return true;
}

static bool overlaps(const struct diff_plan *p)
{
    return p->a == p->b && p->aoff < p->boff + p->len && p->boff < p->aoff + p->len;
}

static bool exec_data(struct diff_thread *t, const struct diff_plan *p)
{
    struct diff_slot *a = &t->slots[p->a], *b = &t->slots[p->b];
    bool in_place = p->kind == OP_XOR && p->a == p->b && p->variant == 3;
    uint64_t boff = in_place ? p->aoff : p->boff;
    bool two = p->kind == OP_DTOD || p->kind == OP_XOR;
    if (p->kind <= OP_XOR && (!a->ptr || (two && (!b->ptr || (overlaps(p) && !in_place))))) {
        t->c.skipped++;
        return true;
    }
    switch (p->kind) {
    case OP_HTOD: return diff_htod(t, a, p->aoff, p->len, p->value, p->async, p->stream, p->variant);
    case OP_DTOH: return diff_dtoh(t, a, p->aoff, p->len, p->async, p->stream);
    case OP_DTOD: return diff_dtod(t, a, p->aoff, b, p->boff, p->len, p->async, p->stream, p->variant);
    case OP_MEMSET:
        return diff_memset(t, a, p->aoff, p->len, p->width, (uint32_t)p->value, p->async, p->stream);
    case OP_FILL: return diff_fill(t, a, p->aoff, p->len, p->value, p->stream, p->variant);
    case OP_XOR: return diff_xor(t, a, p->aoff, b, boff, p->len, p->value, p->stream, p->variant);
    case OP_SYNC_STREAM:
        synced(t, p->stream);
        return diff_cu(t, cuStreamSynchronize(t->streams[p->stream]), "cuStreamSynchronize");
    case OP_SYNC_DEVICE:
        synced(t, -1);
        return diff_cu(t, cuCtxSynchronize(), "cuCtxSynchronize");
    default: return info(t);
    }
}

static bool exec(struct diff_thread *t, const struct diff_plan *p)
{
    t->c.ops[p->kind]++;
    if (p->kind == OP_ALLOC)
        return exec_alloc(t, p);
    if (p->kind == OP_FREE)
        return diff_exec_free(t, p->a, p->cross, p->stream, p->pick);
    return exec_data(t, p);
}

/* Self-test: one byte of a live buffer changes behind the shadow's back;
 * the next read-back of it must report exactly that byte. */
static bool corrupt(struct diff_thread *t)
{
    for (size_t i = 0; i < t->nslots; i++) {
        struct diff_slot *s = &t->slots[i];
        if (!s->ptr || !diff_shadow_known(&s->sh, s->size / 2, 1))
            continue;
        uint8_t b;
        if (!diff_order(t, s, 0) || !diff_cu(t, cuMemcpyDtoH(&b, s->ptr + s->size / 2, 1), "corrupt") ||
            !diff_cu(t, cuMemsetD8(s->ptr + s->size / 2, (unsigned char)~b, 1), "corrupt"))
            return false;
        fprintf(t->run->out, "diffgen: self-test: byte %llu of t%llu/op%llu corrupted at op %llu\n",
                (unsigned long long)(s->size / 2), (unsigned long long)(s->id >> 48),
                (unsigned long long)(s->id & 0xffffffffffffULL), (unsigned long long)t->op);
        return true;
    }
    return true;
}

/* The end of a run: everything still live is verified and freed. */
static void drain(struct diff_thread *t)
{
    while (t->nslots && !atomic_load(&t->run->failed))
        if (!diff_exec_free(t, t->nslots - 1, false, 0, t->op))
            break;
    for (size_t i = 0; i < t->nslots; i++)
        diff_shadow_free(&t->slots[i].sh);
    t->nslots = 0;
}

static uint64_t ops_of(const struct diff_thread *t)
{
    const struct diff_options *o = t->run->o;
    return o->ops / o->threads + (t->index < o->ops % o->threads);
}

void *diff_thread_main(void *arg)
{
    struct diff_thread *t = arg;
    struct diff_run *r = t->run;
    if (!diff_cu(t, cuCtxSetCurrent(r->ctx), "cuCtxSetCurrent") || !diff_cu(t, diff_thread_setup(t), "setup"))
        return NULL;
    if (t->index == 0 && r->o->big)
        diff_run_big(t);
    if (t->index == 0 && r->o->scatter) {
        diff_run_scatter(t);
    } else {
        uint64_t n = ops_of(t);
        for (uint64_t k = 0; k < n && !atomic_load(&r->failed); k++, t->op++) {
            struct diff_plan p;
            plan(t, &p);
            if (!exec(t, &p) || (r->o->corrupt_at && r->o->corrupt_at == t->op && t->index == 0 && !corrupt(t)))
                break;
        }
    }
    drain(t);
    diff_thread_teardown(t);
    return NULL;
}

CUresult diff_thread_setup(struct diff_thread *t)
{
    const struct diff_options *o = t->run->o;
    diff_rng_seed(&t->rng, o->seed, t->index);
    t->target = (uint64_t)(o->live * (double)o->limit / o->threads);
    t->host = malloc(o->op_max);
    if (!t->host)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = cuEventCreate(&t->events[0], CU_EVENT_DISABLE_TIMING);
    for (unsigned i = 1; i <= o->streams && r == CUDA_SUCCESS; i++) {
        /* blocking and non-blocking streams alternate */
        r = cuStreamCreate(&t->streams[i], i & 1 ? CU_STREAM_DEFAULT : CU_STREAM_NON_BLOCKING);
        if (r == CUDA_SUCCESS)
            r = cuEventCreate(&t->events[i], CU_EVENT_DISABLE_TIMING);
    }
    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                            .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    if (r == CUDA_SUCCESS && (o->alloc_apis >> API_POOL & 1))
        r = cuMemPoolCreate(&t->pool, &props);
    return r;
}

void diff_thread_teardown(struct diff_thread *t)
{
    cuCtxSynchronize();
    for (unsigned i = 0; i <= t->run->o->streams; i++) {
        if (i && t->streams[i])
            cuStreamDestroy(t->streams[i]);
        if (t->events[i])
            cuEventDestroy(t->events[i]);
    }
    if (t->pool)
        cuMemPoolDestroy(t->pool);
    free(t->host);
    free(t->slots);
    t->host = NULL;
    t->slots = NULL;
}
