/* Owner of the cache of kernel parameter layouts.
 *
 * Asking the driver the layout costs a call per parameter, and programs
 * launch the same few functions millions of times: the answer is cached
 * per CUfunction in a fixed open-addressing table read without a lock. An
 * entry's layout is immutable once published. An unload makes every entry
 * stale (its generation): the next launch asks again, and an answer equal
 * to the entry renews the entry's generation in place, so that a program
 * that loads and unloads modules in a loop does not grow the cache; only
 * an answer that differs (another function at that handle) replaces the
 * entry, which is never freed (another thread may be reading it). When the
 * table is full (more live functions than slots, or than the probes reach:
 * 64Ki slots, 1 MiB of address space touched only as functions come),
 * layouts are asked for at each launch: JIT compilers (Triton, XLA,
 * torch.compile) make thousands of kernels, and 4Ki slots were passed. */
#include "shim/param_scan.h"

#include "shim/driver.h"
#include "shim/log.h"
#include "shim/tensor_maps.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum {
    SLOT_BITS = 16,
    SLOTS = 1 << SLOT_BITS,
    PROBES = 32,
    MAX_PARAMS = 32768, /* the driver's argument space is 32764 bytes */
    MAX_EXTRA = 64,     /* option pairs of extra looked at */
};

struct layout {
    _Atomic uint64_t generation; /* of spw_param_scan_forget when last asked */
    int scannable;
    unsigned n;
    struct {
        uint32_t offset, size;
    } p[];
};

struct slot {
    _Atomic(CUfunction) key;
    _Atomic(struct layout *) value;
};

static struct slot table[SLOTS];
static _Atomic uint64_t generation;

void spw_param_scan_forget(void)
{
    atomic_fetch_add_explicit(&generation, 1, memory_order_acq_rel);
}

/* The driver's answer for parameter i (f may be a CUkernel cast, as
 * cuLaunchKernel accepts: then only cuKernelGetParamInfo knows it). */
static CUresult param_info(CUfunction f, int as_kernel, size_t i, size_t *off, size_t *size)
{
    if (as_kernel)
        return spw_drv.cuKernelGetParamInfo ? spw_drv.cuKernelGetParamInfo((CUkernel)f, i, off, size)
                                            : CUDA_ERROR_NOT_SUPPORTED;
    return spw_drv.cuFuncGetParamInfo ? spw_drv.cuFuncGetParamInfo(f, i, off, size)
                                      : CUDA_ERROR_NOT_SUPPORTED;
}

/* A function whose layout cannot be had is scanned nowhere: said once, so
 * that a program on a driver without cuFuncGetParamInfo (before 12.4)
 * learns why its launches never fill spilled data back. An unknown handle
 * is not said: the launch itself answers that error. */
static void unscannable(CUfunction f, CUresult r)
{
    static atomic_flag said = ATOMIC_FLAG_INIT;
    if (r == CUDA_ERROR_INVALID_HANDLE || atomic_flag_test_and_set(&said))
        return;
    spw_warn("the driver does not describe the parameters of kernel %p (error %d): the arguments of "
             "such kernels' launches are not scanned (not touched, not filled back: spilled data "
             "they use is read over the bus); said once",
             (void *)f, (int)r);
}

/* Asks the driver f's layout: past the last parameter it answers
 * INVALID_VALUE; any other error makes f unscannable. NULL without memory. */
static struct layout *ask(CUfunction f, uint64_t gen)
{
    unsigned cap = 16, n = 0;
    struct layout *l = malloc(sizeof *l + cap * sizeof l->p[0]);
    if (!l)
        return NULL;
    atomic_init(&l->generation, gen);
    l->scannable = 0;
    int as_kernel = 0;
    CUresult r;
    for (;;) {
        size_t off = 0, size = 0;
        r = param_info(f, as_kernel, n, &off, &size);
        /* A CUkernel cast to CUfunction (a CUlibrary's kernel): the
         * function query may answer anything, INVALID_VALUE included, which
         * would read as "no parameters" (issue 12); the kernel query
         * knows. */
        if (r != CUDA_SUCCESS && n == 0 && !as_kernel) {
            size_t ko = 0, ks = 0;
            CUresult k = param_info(f, 1, 0, &ko, &ks);
            if (k == CUDA_SUCCESS || (k == CUDA_ERROR_INVALID_VALUE && r != CUDA_ERROR_INVALID_VALUE)) {
                as_kernel = 1;
                continue;
            }
        }
        if (r == CUDA_ERROR_INVALID_VALUE) {
            l->scannable = 1;
            break;
        }
        if (r != CUDA_SUCCESS)
            break;
        if (n == MAX_PARAMS || off > UINT32_MAX || size > UINT32_MAX) {
            r = CUDA_ERROR_INVALID_VALUE; /* not a layout the driver takes */
            break;
        }
        if (n == cap) {
            struct layout *g = realloc(l, sizeof *l + 2 * cap * sizeof l->p[0]);
            if (!g) {
                r = CUDA_ERROR_OUT_OF_MEMORY;
                break; /* unscannable: gated, never wrong */
            }
            l = g;
            cap *= 2;
        }
        l->p[n].offset = (uint32_t)off;
        l->p[n].size = (uint32_t)size;
        n++;
    }
    l->n = l->scannable ? n : 0;
    if (!l->scannable)
        unscannable(f, r);
    return l;
}

static int same(const struct layout *a, const struct layout *b)
{
    return a->n == b->n && memcmp(a->p, b->p, a->n * sizeof a->p[0]) == 0;
}

/* f's layout; *owned tells the caller to free it (not cached). */
static struct layout *layout_of(CUfunction f, int *owned)
{
    uint64_t gen = atomic_load_explicit(&generation, memory_order_acquire);
    size_t h = (size_t)(((uint64_t)(uintptr_t)f >> 4) * 0x9E3779B97F4A7C15ull >> (64 - SLOT_BITS));
    *owned = 0;
    for (unsigned i = 0; i < PROBES; i++) {
        struct slot *s = &table[(h + i) & (SLOTS - 1)];
        CUfunction k = atomic_load_explicit(&s->key, memory_order_acquire);
        if (!k) {
            CUfunction none = NULL;
            if (!atomic_compare_exchange_strong(&s->key, &none, f) && none != f)
                continue; /* another function took the slot */
            k = f;
        }
        if (k != f)
            continue;
        struct layout *cur = atomic_load_explicit(&s->value, memory_order_acquire);
        if (cur && atomic_load_explicit(&cur->generation, memory_order_relaxed) == gen)
            return cur;
        struct layout *l = ask(f, gen);
        if (!l)
            return NULL;
        if (!l->scannable) {
            /* A failure is not a layout: asked again at the next launch,
             * never cached as "no pointers". */
            *owned = 1;
            return l;
        }
        if (cur && same(cur, l)) {
            /* Asked after gen began: cur holds in gen. A racing renewal
             * with an older generation only costs another ask. */
            atomic_store_explicit(&cur->generation, gen, memory_order_relaxed);
            free(l);
            return cur;
        }
        /* The stale one is left to whoever still reads it. */
        if (!atomic_compare_exchange_strong_explicit(&s->value, &cur, l, memory_order_acq_rel,
                                                     memory_order_acquire))
            *owned = 1; /* another thread published first: use ours once */
        return l;
    }
    struct layout *l = ask(f, gen);
    *owned = l != NULL;
    return l;
}

/* The 8-byte-aligned words of a value at offset off of the argument
 * layout, size bytes long (the source may be unaligned in memory). */
static unsigned scan_words(const unsigned char *v, size_t off, size_t size,
                           void (*each)(void *, CUdeviceptr), void *ctx)
{
    unsigned seen = 0;
    for (size_t k = (8 - off % 8) % 8; k + 8 <= size; k += 8) {
        uint64_t w;
        memcpy(&w, v + k, sizeof w);
        if (w < 0x10000)
            continue; /* counts, flags, sizes: never an address */
        each(ctx, (CUdeviceptr)w);
        seen++;
    }
    return seen;
}

/* The TMA descriptors (tensor_maps.h) in a value at offset off of the
 * argument layout, size bytes long: each 128-byte window that starts at a
 * 64-byte-aligned offset of the layout (where a CUtensorMap parameter or
 * struct member can be) and equals a recorded descriptor passes that
 * descriptor's global address, as a word would. The words are scanned
 * too: a descriptor that holds its address as a word is found twice, and
 * use_word's list of fills takes the second one for free.
 *
 * Cost (callgrind, shim_scan_bench, gcc -O2 x86-64): until some
 * descriptor is recorded, the caller's one relaxed load and a test per
 * parameter; then, per value of 128 bytes or more, one window per 64
 * bytes, each 41 instructions when it is no descriptor (most of them
 * spw_tensor_map_find's hash): a 1 KiB Params struct is 15 windows, 615
 * instructions, beside the 1,100 its word scan costs. No allocation, no
 * lock. */
static unsigned scan_maps(const unsigned char *v, size_t off, size_t size,
                          void (*each)(void *, CUdeviceptr), void *ctx)
{
    unsigned seen = 0;
    for (size_t k = (SPW_TENSOR_MAP_ALIGN - off % SPW_TENSOR_MAP_ALIGN) % SPW_TENSOR_MAP_ALIGN;
         k + SPW_TENSOR_MAP_BYTES <= size; k += SPW_TENSOR_MAP_ALIGN) {
        CUdeviceptr a;
        if (spw_tensor_map_find(v + k, &a)) {
            each(ctx, a);
            seen++;
        }
    }
    return seen;
}

static unsigned scan_extra(void **extra, void (*each)(void *, CUdeviceptr), void *ctx)
{
    const unsigned char *buf = NULL;
    size_t size = 0;
    int sized = 0;
    for (unsigned i = 0; i < 2 * MAX_EXTRA && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
            buf = extra[i + 1];
        else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1]) {
            size = *(const size_t *)extra[i + 1];
            sized = 1;
        }
    }
    /* The driver refuses a buffer without its size: nothing to touch. */
    if (!buf || !sized)
        return 0;
    unsigned seen = scan_words(buf, 0, size, each, ctx);
    if (size >= SPW_TENSOR_MAP_BYTES && spw_tensor_maps_any())
        seen += scan_maps(buf, 0, size, each, ctx);
    return seen;
}

unsigned spw_param_scan(CUfunction f, void **kernelParams, void **extra,
                        void (*each)(void *ctx, CUdeviceptr word), void *ctx)
{
    if (!kernelParams)
        return extra ? scan_extra(extra, each, ctx) : 0;
    if (!f)
        return 0;
    int owned;
    struct layout *l = layout_of(f, &owned);
    if (!l)
        return 0;
    unsigned seen = 0;
    bool maps = spw_tensor_maps_any();
    for (unsigned i = 0; i < l->n; i++) {
        if (!kernelParams[i])
            continue;
        seen += scan_words(kernelParams[i], l->p[i].offset, l->p[i].size, each, ctx);
        if (maps && l->p[i].size >= SPW_TENSOR_MAP_BYTES)
            seen += scan_maps(kernelParams[i], l->p[i].offset, l->p[i].size, each, ctx);
    }
    if (owned)
        free(l);
    return seen;
}
