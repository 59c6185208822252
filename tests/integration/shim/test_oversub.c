/* Oversubscription under spillway against fakecuda (issue 13): a program
 * that sizes itself from what it is told (SPILLWAY_OVERSUBSCRIBE=2: twice
 * the limit) and trains a repeating step over more memory than the
 * device's pages. Three ways to get the memory, as the frameworks do:
 *
 *   arena   JAX's BFC: one cuMemCreate of 0.75 x the told total (larger
 *           than the limit), mapped once, buffers placed inside it;
 *   pool    stream-ordered (JAX cuda_async, PyTorch cudaMallocAsync):
 *           cuMemAllocFromPoolAsync per buffer, activations freed and
 *           allocated again every step;
 *   alloc   cuMemAlloc per buffer.
 *
 * The step, per layer: weights W, activations A, gradients G used 2 to 4
 * times, Adam's moments M and V once (as tests/unit/policy/stepload.c).
 * Every kernel rewrites what it writes, a host mirror follows it, and every
 * word is compared at the end. Measured: fakecuda's device bytes (never
 * above the limit) and spill + fill bytes per step after warm-up, which
 * must stay within 10% of the bytes the program holds past the limit.
 *
 * Run by oversub.sh: one 512 MiB device, an 80 MiB limit, factor 2. */
#include "tests/integration/shim/rig.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIMIT (80 * MiB)
#define TOLD (160 * MiB)
#define GRAIN (2 * MiB)
#define LAYERS 4
#define WARMUP 10
#define MEASURED 6

enum kind { W, A, G, M, V, NKIND };
#define NBUF (NKIND * LAYERS)
#define BUF(kind, layer) ((kind) * LAYERS + (layer))

typedef enum { MODE_ARENA, MODE_POOL, MODE_ALLOC } mode;

struct prog {
    mode m;
    CUstream s;
    CUmemoryPool pool;
    CUdeviceptr arena;
    size_t arena_bytes;
    CUmemGenericAllocationHandle h;
    CUdeviceptr at[NBUF];
    size_t bytes[NBUF];
    uint32_t *want[NBUF]; /* the host mirror */
    CUfunction op;
    unsigned step;
};

/* ---- the kernel ---------------------------------------------------------------- */

#define SLOTS 4
/* (CUdeviceptr p[4], size_t words[4], unsigned writes, unsigned k): reads
 * every slot, rewrites the ones in writes (bit i: slot i). */
static void op_kernel(fakecuda_dim3 g, fakecuda_dim3 b, void **params)
{
    (void)g;
    (void)b;
    unsigned writes = *(unsigned *)params[2 * SLOTS], k = *(unsigned *)params[2 * SLOTS + 1];
    volatile uint64_t sink = 0;
    for (int i = 0; i < SLOTS; i++) {
        uint32_t *w = (uint32_t *)(uintptr_t)(*(CUdeviceptr *)params[i]);
        size_t n = *(size_t *)params[SLOTS + i];
        if (writes & (1u << i))
            for (size_t j = 0; j < n; j++)
                w[j] = rig_step(w[j], k);
        else
            sink += rig_host_sum(w, n);
    }
    (void)sink;
}

static CUfunction op_function(void)
{
    static const size_t sizes[2 * SLOTS + 2] = {
        sizeof(CUdeviceptr), sizeof(CUdeviceptr), sizeof(CUdeviceptr), sizeof(CUdeviceptr),
        sizeof(size_t),      sizeof(size_t),      sizeof(size_t),      sizeof(size_t),
        sizeof(unsigned),    sizeof(unsigned)};
    ck_assert_int_eq(fakecuda_register_kernel("oversub_op", op_kernel, 2 * SLOTS + 2, sizes), 0);
    CUmodule mod;
    CUfunction f;
    CU_OK(cuModuleLoadData(&mod, "fakecuda"));
    CU_OK(cuModuleGetFunction(&f, mod, "oversub_op"));
    return f;
}

/* Launches op over up to four buffers (-1: none) and applies it to the
 * mirror. */
static void run_op(struct prog *p, const int bufs[SLOTS], unsigned writes)
{
    CUdeviceptr ptr[SLOTS] = {0};
    size_t words[SLOTS] = {0};
    unsigned k = p->step * 16 + writes;
    void *args[2 * SLOTS + 2];
    for (int i = 0; i < SLOTS; i++) {
        if (bufs[i] >= 0) {
            ptr[i] = p->at[bufs[i]];
            words[i] = p->bytes[bufs[i]] / 4;
            if (writes & (1u << i))
                for (size_t j = 0; j < words[i]; j++)
                    p->want[bufs[i]][j] = rig_step(p->want[bufs[i]][j], k);
        }
        args[i] = &ptr[i];
        args[SLOTS + i] = &words[i];
    }
    args[2 * SLOTS] = &writes;
    args[2 * SLOTS + 1] = &k;
    CU_OK(cuLaunchKernel(p->op, 1, 1, 1, 1, 1, 1, 0, p->s, args, NULL));
}

/* ---- memory, three ways ----------------------------------------------------------- */

/* W, A and G a quarter of the limit each (three quarters in all: what
 * the step uses often fits); M and V share what is left of 95% of what
 * the program sizes itself to. */
static void plan(struct prog *p, size_t sized)
{
    size_t hot = LIMIT / 4 / LAYERS, live = sized / 100 * 95;
    size_t cold = (live - 3 * LAYERS * hot) / (2 * LAYERS) / GRAIN * GRAIN;
    for (int l = 0; l < LAYERS; l++) {
        p->bytes[BUF(W, l)] = p->bytes[BUF(A, l)] = p->bytes[BUF(G, l)] = hot;
        p->bytes[BUF(M, l)] = p->bytes[BUF(V, l)] = cold;
    }
}

static void make_arena(struct prog *p)
{
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    p->arena_bytes = (size_t)(0.75 * TOLD) / GRAIN * GRAIN;
    CU_OK(cuMemCreate(&p->h, p->arena_bytes, &prop, 0)); /* 1.5 x the limit: not refused */
    CU_OK(cuMemAddressReserve(&p->arena, p->arena_bytes, 0, 0, 0));
    CU_OK(cuMemMap(p->arena, p->arena_bytes, 0, p->h, 0));
    CUmemAccessDesc acc = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CU_OK(cuMemSetAccess(p->arena, p->arena_bytes, &acc, 1));
    /* Cold first, as BFC places what the program makes first: the hot
     * buffers land where the pool could only give host pages. */
    const enum kind order[] = {W, M, V, A, G};
    CUdeviceptr at = p->arena;
    for (int i = 0; i < NKIND; i++)
        for (int l = 0; l < LAYERS; l++) {
            p->at[BUF(order[i], l)] = at;
            at += p->bytes[BUF(order[i], l)];
        }
    ck_assert_uint_le(at - p->arena, p->arena_bytes);
}

static void allocate(struct prog *p, int b)
{
    if (p->m == MODE_POOL)
        CU_OK(cuMemAllocFromPoolAsync(&p->at[b], p->bytes[b], p->pool, p->s));
    else
        CU_OK(cuMemAlloc(&p->at[b], p->bytes[b]));
}

static void release(struct prog *p, int b)
{
    if (p->m == MODE_POOL)
        CU_OK(cuMemFreeAsync(p->at[b], p->s));
    else if (p->m == MODE_ALLOC)
        CU_OK(cuMemFree(p->at[b]));
}

/* Content: a pattern per buffer, copied in and mirrored. */
static void fill(struct prog *p, int b, unsigned seed)
{
    p->want[b] = rig_expected(p->bytes[b], seed);
    CU_OK(cuMemcpyHtoDAsync(p->at[b], p->want[b], p->bytes[b], p->s));
}

static void set_up(struct prog *p, mode m)
{
    memset(p, 0, sizeof *p);
    p->m = m;
    CU_OK(cuStreamCreate(&p->s, CU_STREAM_NON_BLOCKING));
    p->op = op_function();
    size_t free_b = 0, total = 0, dev_total = 0;
    CU_OK(cuMemGetInfo(&free_b, &total));
    CU_OK(cuDeviceTotalMem(&dev_total, 0));
    ck_assert_uint_eq(total, TOLD);
    ck_assert_uint_eq(dev_total, TOLD);
    ck_assert_uint_gt(free_b, LIMIT); /* it may allocate past the limit */
    plan(p, m == MODE_ARENA ? (size_t)(0.75 * TOLD) : free_b);
    if (m == MODE_POOL)
        CU_OK(cuDeviceGetDefaultMemPool(&p->pool, 0));
    if (m == MODE_ARENA)
        make_arena(p);
    else
        for (int b = 0; b < NBUF; b++)
            allocate(p, b);
    for (int b = 0; b < NBUF; b++)
        fill(p, b, 100 + (unsigned)b);
    CU_OK(cuStreamSynchronize(p->s));
}

/* ---- the step ------------------------------------------------------------------- */

/* Per-buffer programs free activations at the end of a step and make them
 * again at the start of the next: what a stream-ordered allocator shows. */
static void activations_anew(struct prog *p)
{
    for (int l = 0; l < LAYERS; l++) {
        int b = BUF(A, l);
        allocate(p, b);
        uint32_t v = 0xa0000000u + p->step * LAYERS + (unsigned)l;
        CU_OK(cuMemsetD32Async(p->at[b], v, p->bytes[b] / 4, p->s));
        for (size_t j = 0; j < p->bytes[b] / 4; j++)
            p->want[b][j] = v;
    }
}

static void activations_done(struct prog *p)
{
    CU_OK(cuStreamSynchronize(p->s));
    for (int l = 0; l < LAYERS; l++) {
        rig_expect_words(p->at[BUF(A, l)], p->want[BUF(A, l)], p->bytes[BUF(A, l)],
                         "activations at the end of a step");
        release(p, BUF(A, l));
    }
}

static void step(struct prog *p)
{
    if (p->m == MODE_POOL && p->step > 0)
        activations_anew(p);
    for (int l = 0; l < LAYERS; l++) /* forward */
        run_op(p, (int[SLOTS]){BUF(W, l), BUF(A, l), -1, -1}, 2);
    for (int l = LAYERS - 1; l >= 0; l--) { /* backward */
        run_op(p, (int[SLOTS]){BUF(A, l), BUF(W, l), BUF(G, l), -1}, 4);
        run_op(p, (int[SLOTS]){BUF(G, l), -1, -1, -1}, 1);
    }
    for (int l = 0; l < LAYERS; l++) /* optimizer */
        run_op(p, (int[SLOTS]){BUF(W, l), BUF(G, l), BUF(M, l), BUF(V, l)}, 1 | 4 | 8);
    if (p->m == MODE_POOL)
        activations_done(p);
    else
        CU_OK(cuStreamSynchronize(p->s));
    p->step++;
}

static uint64_t moved(void)
{
    struct spillway_pool_counters c = rig_pool(0);
    return c.spill_bytes + c.fill_bytes;
}

static void check_all(struct prog *p)
{
    char what[64];
    for (int b = 0; b < NBUF; b++) {
        if (p->m == MODE_POOL && b / LAYERS == A)
            continue; /* checked and freed by the last step */
        snprintf(what, sizeof what, "buffer %c%d", "WAGMV"[b / LAYERS], b % LAYERS);
        rig_expect_words(p->at[b], p->want[b], p->bytes[b], what);
    }
}

static void run(mode m, const char *name)
{
    rig_setup(0);
    if (fakecuda_device_bytes_peak)
        fakecuda_device_bytes_peak(0, 1);
    static struct prog p;
    set_up(&p, m);
    size_t live = 0;
    for (int b = 0; b < NBUF; b++)
        live += p.bytes[b];
    ck_assert_msg(live > LIMIT + LIMIT / 4, "%s: the program holds %zu MiB, too little", name,
                  live / MiB);
    for (int i = 0; i < WARMUP; i++)
        step(&p);
    uint64_t per[MEASURED], worst = 0, bound = (live - LIMIT) / 10;
    for (int i = 0; i < MEASURED; i++) {
        uint64_t before = moved();
        step(&p);
        per[i] = moved() - before;
        worst = per[i] > worst ? per[i] : worst;
    }
    printf("%-6s holds %3zu MiB under a %zu MiB limit (told %zu MiB): moved per step after "
           "warm-up (MiB):",
           name, live / MiB, LIMIT / MiB, TOLD / MiB);
    for (int i = 0; i < MEASURED; i++)
        printf(" %.1f", per[i] / (double)MiB);
    printf("  bound %.1f; device peak %zu MiB\n", bound / (double)MiB,
           fakecuda_device_bytes_peak(0, 0) / MiB);
    fflush(stdout);
    ck_assert_msg(worst <= bound, "%s: %.1f MiB moved in a step after warm-up; bound %.1f", name,
                  worst / (double)MiB, bound / (double)MiB);
    ck_assert_uint_le(fakecuda_device_bytes_peak(0, 0), LIMIT);
    /* What the step uses often is what lives on the device. */
    size_t hot = 0, hot_on_device = 0;
    for (int b = 0; b < NBUF; b++)
        if (b / LAYERS == W || b / LAYERS == G || (b / LAYERS == A && m != MODE_POOL)) {
            hot += p.bytes[b];
            hot_on_device += rig_resident(p.at[b], p.bytes[b], 0);
        }
    if (getenv("OVERSUB_VERBOSE"))
        for (int b = 0; b < NBUF; b++)
            printf("  %c%d %zu/%zu MiB on device\n", "WAGMV"[b / LAYERS], b % LAYERS,
                   rig_resident(p.at[b], p.bytes[b], 0) / MiB, p.bytes[b] / MiB);
    printf("%-6s often-used buffers on the device: %zu of %zu MiB\n", name, hot_on_device / MiB,
           hot / MiB);
    fflush(stdout);
    ck_assert_msg(hot_on_device >= hot / 10 * 9, "%s: %zu of %zu MiB of W, A, G on the device",
                  name, hot_on_device / MiB, hot / MiB);
    ck_assert_uint_gt(rig_pool(0).spilled_bytes, 0); /* past the limit, really on the host */
    check_all(&p);
}

START_TEST(arena_of_three_quarters_of_the_told_total) { run(MODE_ARENA, "arena"); }
END_TEST
START_TEST(stream_ordered_buffers) { run(MODE_POOL, "pool"); }
END_TEST
START_TEST(one_allocation_per_buffer) { run(MODE_ALLOC, "alloc"); }
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("shim_oversub");
    TCase *t = tcase_create("oversub");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, arena_of_three_quarters_of_the_told_total);
    tcase_add_test(t, stream_ordered_buffers);
    tcase_add_test(t, one_allocation_per_buffer);
    suite_add_tcase(s, t);
    return s;
}
