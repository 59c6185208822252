/* The repeating step of stepload.h. */
#include "tests/unit/policy/stepload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S ((CUstream)0x5001)

/* Per layer: weights, activations, gradients, Adam's two moments. */
enum kind { W, A, G, M, V, NKIND };
#define LAYERS 4
#define NBUF (NKIND * LAYERS)
#define BUF(kind, layer) ((kind) * LAYERS + (layer))

/* One kernel of a layer: the kinds it reads and writes (a bit per kind). */
typedef struct kernel {
    unsigned reads, writes;
} kernel;

#define B(x) (1u << (x))
/* Forward, backward (two), optimizer, for every layer: W, A and G used 3,
 * 2 and 3 times a step, M and V once. */
static const kernel layer_kernels[] = {
    {B(W), B(A)},
    {B(A) | B(W), B(G)},
    {B(G), B(G)},
    {B(W) | B(G) | B(M) | B(V), B(W) | B(M) | B(V)},
};
#define NKERNELS (sizeof layer_kernels / sizeof layer_kernels[0])

struct stepload {
    stepload_cfg cfg;
    fake_backend *fb;
    sw_policy *p;
    CUdeviceptr arena;
    size_t arena_bytes;
    CUmemGenericAllocationHandle handle;
    CUdeviceptr at[NBUF];
    size_t pages[NBUF];
    uint64_t *want[NBUF]; /* the word each page must hold */
    uint64_t step;
};

static uint64_t mixw(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static uint64_t moved_pages(stepload *s)
{
    sw_counters c;
    if (sw_get_counters(s->p, 0, &c) != CUDA_SUCCESS)
        return 0;
    return (c.spill_bytes + c.fill_bytes) / s->cfg.page;
}

/* ---- set-up ------------------------------------------------------------------ */

/* The buffers' sizes: W, A and G a quarter of the limit each; M and V share
 * what is left of 95% of what the program sizes itself to (JAX's arena:
 * 0.75 of the told total, F x the limit; a per-buffer program: all of the
 * told total); each kind split evenly over the layers. */
static void plan(stepload *s)
{
    size_t l = s->cfg.limit_pages;
    size_t arena = (size_t)(0.75 * s->cfg.factor * (double)l);
    size_t sized = s->cfg.mode == STEPLOAD_ARENA ? arena : (size_t)(s->cfg.factor * (double)l);
    size_t live = sized * 95 / 100, hot = l / 4 / LAYERS;
    size_t per = 2 * LAYERS; /* the cold buffers, rounded up: the step never fits by rounding */
    size_t cold = live > 3 * LAYERS * hot ? (live - 3 * LAYERS * hot + per - 1) / per : 1;
    for (int layer = 0; layer < LAYERS; layer++) {
        s->pages[BUF(W, layer)] = s->pages[BUF(A, layer)] = s->pages[BUF(G, layer)] = hot;
        s->pages[BUF(M, layer)] = s->pages[BUF(V, layer)] = cold ? cold : 1;
    }
    s->arena_bytes = arena * s->cfg.page;
}

/* The arena, and the buffers in it cold first: the hot ones land on what
 * the pool could only back with host pages. */
static CUresult place_in_arena(stepload *s)
{
    CUresult r = fake_reserve(s->fb, s->arena_bytes, &s->arena);
    if (r == CUDA_SUCCESS)
        r = sw_vmm_create(s->p, 0, s->arena_bytes, &s->handle);
    if (r == CUDA_SUCCESS)
        r = sw_vmm_map(s->p, s->arena, s->arena_bytes, 0, s->handle);
    if (r == CUDA_SUCCESS)
        r = sw_vmm_set_access(s->p, s->arena, s->arena_bytes, 1);
    const enum kind order[] = {W, M, V, A, G};
    CUdeviceptr at = s->arena;
    for (size_t i = 0; r == CUDA_SUCCESS && i < NKIND; i++)
        for (int layer = 0; layer < LAYERS; layer++) {
            int b = BUF(order[i], layer);
            s->at[b] = at;
            at += s->pages[b] * s->cfg.page;
        }
    return r;
}

static CUresult allocate(stepload *s, int b)
{
    size_t bytes = s->pages[b] * s->cfg.page;
    if (s->cfg.mode == STEPLOAD_PER_BUFFER)
        return sw_alloc_async(s->p, 0, bytes, S, &s->at[b]);
    return sw_alloc(s->p, 0, bytes, &s->at[b]);
}

static CUresult place(stepload *s)
{
    if (s->cfg.mode == STEPLOAD_ARENA)
        return place_in_arena(s);
    const enum kind order[] = {W, M, V, G, A};
    CUresult r = CUDA_SUCCESS;
    for (size_t i = 0; r == CUDA_SUCCESS && i < NKIND; i++)
        for (int layer = 0; layer < LAYERS; layer++)
            r = allocate(s, BUF(order[i], layer));
    return r;
}

stepload *stepload_new(const stepload_cfg *cfg, const char **why)
{
    stepload *s = calloc(1, sizeof *s);
    if (!s) {
        *why = "out of memory";
        return NULL;
    }
    s->cfg = *cfg;
    plan(s);
    size_t host = (size_t)(cfg->factor * (double)cfg->limit_pages) + 16;
    sw_device_config dc = {.limit = cfg->limit_pages * cfg->page, .host_limit = host * cfg->page,
                           .spill = true, .demand_paging = cfg->demand_paging};
    s->fb = fake_create(cfg->page, cfg->limit_pages);
    sw_backend be;
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    if (s->fb) {
        be = fake_ops(s->fb);
        r = sw_policy_create(&be, &s->p);
    }
    if (r == CUDA_SUCCESS)
        r = sw_device_init(s->p, 0, &dc);
    if (r == CUDA_SUCCESS)
        r = place(s);
    for (int b = 0; r == CUDA_SUCCESS && b < NBUF; b++)
        if (!(s->want[b] = calloc(s->pages[b], sizeof *s->want[b])))
            r = CUDA_ERROR_OUT_OF_MEMORY;
    /* The program zeroes (or uploads) each buffer once: a set whose size
     * the shim passes on (sw_touch_range), as cuMemsetD32 would. */
    for (int b = 0; r == CUDA_SUCCESS && b < NBUF; b++) {
        if (sw_touch_range(s->p, s->at[b], s->pages[b] * cfg->page))
            r = sw_fill(s->p, s->at[b]);
        for (size_t i = 0; r == CUDA_SUCCESS && i < s->pages[b]; i++)
            *(uint64_t *)(uintptr_t)(s->at[b] + i * cfg->page) = 0;
    }
    if (r != CUDA_SUCCESS) {
        *why = "set-up failed";
        stepload_free(s, why);
        return NULL;
    }
    return s;
}

/* ---- a step --------------------------------------------------------------------- */

/* What the shim does before a launch: touch each argument, fill it when
 * some of it is on the host. */
static bool launch(stepload *s, int layer, unsigned kinds)
{
    for (int k = 0; k < NKIND; k++) {
        int b = BUF(k, layer);
        if (kinds >> k & 1 && sw_touch(s->p, s->at[b]) && sw_fill(s->p, s->at[b]) != CUDA_SUCCESS)
            return false;
    }
    return true;
}

/* The kernel itself: one word of every page it uses read (checked) and
 * written; pages used on the host counted. */
static bool run(stepload *s, int layer, unsigned k, const kernel *kn, stepload_step *out)
{
    for (int kind = 0; kind < NKIND; kind++) {
        int b = BUF(kind, layer);
        if (!((kn->reads | kn->writes) >> kind & 1))
            continue;
        for (size_t i = 0; i < s->pages[b]; i++) {
            uint64_t *word = (uint64_t *)(uintptr_t)(s->at[b] + i * s->cfg.page);
            sw_residency where;
            if (sw_get_residency(s->p, (CUdeviceptr)(uintptr_t)word, &where) == CUDA_SUCCESS &&
                where == SW_RES_HOST)
                out->host_used_pages++;
            if (kn->reads >> kind & 1 && *word != s->want[b][i])
                return false;
            if (kn->writes >> kind & 1)
                *word = s->want[b][i] = mixw(s->step * 1024 + k * 64 + (uint64_t)b + i * 65536);
        }
    }
    return true;
}

/* Per-buffer programs free their activations at the end of a step and
 * allocate them again at the start of the next. */
static CUresult begin_step(stepload *s)
{
    CUresult r = CUDA_SUCCESS;
    if (s->cfg.mode != STEPLOAD_PER_BUFFER || s->step == 0)
        return r;
    for (int layer = 0; r == CUDA_SUCCESS && layer < LAYERS; layer++)
        r = allocate(s, BUF(A, layer));
    return r;
}

static CUresult end_step(stepload *s)
{
    CUresult r = CUDA_SUCCESS;
    if (s->cfg.mode != STEPLOAD_PER_BUFFER)
        return r;
    for (int layer = 0; r == CUDA_SUCCESS && layer < LAYERS; layer++)
        r = sw_free_async(s->p, s->at[BUF(A, layer)], S);
    return r;
}

bool stepload_step_run(stepload *s, stepload_step *out, const char **why)
{
    memset(out, 0, sizeof *out);
    uint64_t before = moved_pages(s);
    if (begin_step(s) != CUDA_SUCCESS) {
        *why = "activations refused";
        return false;
    }
    for (unsigned k = 0; k < NKERNELS; k++)
        for (int layer = 0; layer < LAYERS; layer++) {
            const kernel *kn = &layer_kernels[k];
            if (!launch(s, layer, kn->reads | kn->writes)) {
                *why = "a fill failed";
                return false;
            }
            if (!run(s, layer, k, kn, out)) {
                *why = "a kernel read a wrong word";
                return false;
            }
        }
    if (end_step(s) != CUDA_SUCCESS) {
        *why = "free failed";
        return false;
    }
    out->moved_pages = moved_pages(s) - before;
    s->step++;
    return true;
}

/* ---- figures --------------------------------------------------------------------- */

size_t stepload_live_pages(const stepload *s)
{
    size_t n = 0;
    for (int b = 0; b < NBUF; b++)
        n += s->pages[b];
    return n;
}

size_t stepload_excess_pages(const stepload *s)
{
    size_t live = stepload_live_pages(s);
    return live > s->cfg.limit_pages ? live - s->cfg.limit_pages : 0;
}

static bool hot(int b)
{
    int kind = b / LAYERS;
    return kind == W || kind == A || kind == G;
}

size_t stepload_hot_pages(const stepload *s)
{
    size_t n = 0;
    for (int b = 0; b < NBUF; b++)
        n += hot(b) ? s->pages[b] : 0;
    return n;
}

size_t stepload_hot_on_host(stepload *s)
{
    size_t n = 0;
    for (int b = 0; b < NBUF; b++)
        for (size_t i = 0; hot(b) && i < s->pages[b]; i++) {
            sw_residency where;
            if (sw_get_residency(s->p, s->at[b] + i * s->cfg.page, &where) == CUDA_SUCCESS &&
                where == SW_RES_HOST)
                n++;
        }
    return n;
}

uint64_t stepload_max_device_pages(stepload *s)
{
    fake_stats st;
    fake_get_stats(s->fb, &st);
    return st.max_dev_pages;
}

uint64_t stepload_syncs(stepload *s)
{
    fake_stats st;
    fake_get_stats(s->fb, &st);
    return st.syncs;
}

bool stepload_free(stepload *s, const char **why)
{
    bool ok = true;
    if (s->p) {
        if (s->cfg.mode == STEPLOAD_ARENA && s->handle) {
            ok &= sw_vmm_unmap(s->p, s->arena, s->arena_bytes, NULL) == CUDA_SUCCESS;
            ok &= sw_vmm_release(s->p, s->handle, NULL) == CUDA_SUCCESS;
        }
        ok &= sw_policy_destroy(s->p) == CUDA_SUCCESS;
    }
    if (s->fb) {
        fake_stats st;
        fake_get_stats(s->fb, &st);
        if (st.violations) {
            static _Thread_local char msg[256];
            snprintf(msg, sizeof msg, "backend: %s", fake_violation(s->fb));
            *why = msg;
            ok = false;
        }
        if (s->arena)
            fake_free_va(s->fb, s->arena, s->arena_bytes);
        fake_destroy(s->fb);
    }
    for (int b = 0; b < NBUF; b++)
        free(s->want[b]);
    free(s);
    if (!ok && !*why)
        *why = "teardown failed";
    return ok;
}
