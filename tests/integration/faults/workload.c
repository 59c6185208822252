/* The fault test's program (faults.sh runs it): a driver-API workload under
 * spillway (LD_PRELOAD) against fakecuda, with a small limit, that goes
 * through every path where spillway calls the driver for its own ends —
 * pool set-up, allocation (cuMemAlloc, cuMemAllocAsync, cuMemCreate +
 * cuMemMap of the program's own VMM), spill past the limit, fill on a
 * launch or a copy, frees (sync and stream-ordered, same-stream reuse),
 * device syncs — while fakecuda makes one driver call fail
 * (FAKECUDA_FAIL=fn:n). It then checks what a program may rely on:
 *
 *  - data: every buffer it holds reads back, word for word, as it last
 *    wrote it (each buffer keeps the recipe of its content: a pattern or a
 *    set value, then the kernel steps since; cheaper than a host shadow);
 *    an operation that failed is known to have failed, so what it would
 *    have written is not expected;
 *  - errors: the operation during which the fault was injected either
 *    succeeded or returned the injected error (OUT_OF_MEMORY also for an
 *    allocation: it may not find room another way); never a crash, a
 *    hang (faults.sh's timeout) or a pointer overlapping another buffer;
 *  - stats: after every operation spillway's counters (spillway_get_counters
 *    and the stats segment) equal the program's own view: bytes held,
 *    allocations and frees that succeeded;
 *  - its context stack is as it left it after every operation;
 *  - leaks: after teardown the program holds nothing (its reservation and
 *    stream are gone), and fakecuda holds exactly what spillway's pool says
 *    it keeps (device and host pages): no handle or allocation more, no
 *    reservation without a pool. What the pool keeps besides pages (VA,
 *    its own streams and events) is not in its counters: faults.sh
 *    compares those figures ("kept") with the clean run's.
 *
 * Output, one line each (faults.sh reads it): "op <i> <alloc|other> <name>
 * rc=<r> fault=<0|1>" per operation, "FAIL <what> ..." per broken promise,
 * then "calls <fn> <n>" per driver function, "injected ...", "done". Exit
 * status 0 when no FAIL line was printed. Operations are single-threaded
 * and waited for (stream syncs), so the n-th call of a function is the same
 * call in every run, unless spillway makes it from a thread of its own. */
#include "shim/spillway.h"
#include "stats/reader.h"
#include "tests/fakecuda/fakecuda.h"

#include <cuda.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)
#define PAGE (2 * MiB)
#define MAX_BUFS 16
#define VMM_PAGES 2

enum kind { LINEAR, ASYNC, VMM };

#define MAX_STEPS 8

/* What a buffer contains, word i: pattern(i, base) (or base itself when
 * set), then each kernel step in order. */
struct recipe {
    bool set;
    uint32_t base;
    unsigned nsteps;
    unsigned steps[MAX_STEPS];
};

struct buf {
    const char *name;
    enum kind kind;
    size_t size;
    CUdeviceptr ptr;
    bool live;   /* the program holds it: allocated, not freed */
    bool usable; /* it may touch it (a VMM handle: mapped, with access) */
    bool known;  /* recipe says what it contains */
    struct recipe recipe;
    CUmemGenericAllocationHandle h; /* VMM */
    bool mapped;
};

/* What the program believes it holds, and has done, for the stats check. */
static struct {
    uint64_t dev_bytes, host_bytes, allocs, frees, host_allocs, host_frees;
} held;

static struct buf bufs[MAX_BUFS];
static int nbufs;
static CUcontext ctx;
static CUstream stream;
static CUstream destroyed; /* stream, once cuStreamDestroy succeeded */
static CUfunction step_fn;
static void *pinned; /* staging for writes; NULL: readback, pageable */
static CUdeviceptr vmm_va; /* 0: never reserved */
static bool vmm_reserved;
static size_t limit;

/* ---- reporting --------------------------------------------------------------- */

static int failures;
static unsigned op_no;
static const char *op_name;
static bool op_alloc;
static long long op_faults;

static void fail(const char *what, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL %s op %u %s: ", what, op_no, op_name ? op_name : "-");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    failures++;
}

static void op_begin(const char *name, bool is_alloc)
{
    op_no++;
    op_name = name;
    op_alloc = is_alloc;
    op_faults = fakecuda_faults(NULL);
}

static bool op_faulted(void)
{
    return fakecuda_faults(NULL) > op_faults;
}

/* The error an operation returned is the driver's: one injected during it,
 * or out of memory for an allocation that found no room another way. */
static void check_error(CUresult r)
{
    long long now = fakecuda_faults(NULL);
    if (r == CUDA_SUCCESS || now == op_faults)
        return; /* errors without a fault here: faults.sh compares with the clean run */
    if (op_alloc && r == CUDA_ERROR_OUT_OF_MEMORY)
        return;
    for (long long i = op_faults; i < now; i++)
        if ((int)r == fakecuda_fault_nth((unsigned long long)i, NULL, NULL))
            return;
    fail("wrongerr", "returned %d, the error injected was %d", (int)r,
         fakecuda_fault_last(NULL, NULL));
}

static void check_invariants(void);

static CUresult op_end(CUresult r)
{
    printf("op %u %s %s rc=%d fault=%d\n", op_no, op_alloc ? "alloc" : "other", op_name, (int)r,
           op_faulted());
    check_error(r);
    check_invariants();
    return r;
}

/* ---- spillway's view ------------------------------------------------------- */

static int (*get_counters)(int, struct spillway_counters *);
static int (*get_pool_counters)(int, struct spillway_pool_counters *);

static void spillway_symbols(void)
{
    get_counters = (int (*)(int, struct spillway_counters *))dlsym(RTLD_DEFAULT,
                                                                   "spillway_get_counters");
    get_pool_counters = (int (*)(int, struct spillway_pool_counters *))dlsym(
        RTLD_DEFAULT, "spillway_get_pool_counters");
    if (!get_counters || !get_pool_counters || !fakecuda_fault_config) {
        printf("FAIL setup: run me under spillway (LD_PRELOAD) against fakecuda\n");
        exit(1);
    }
}

/* The process's stats segment; false before spillway created it. */
static bool segment(struct spw_stats_snapshot *snap)
{
    const char *dir = getenv("SPILLWAY_STATS_DIR");
    int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY) : -1;
    if (fd < 0)
        return false;
    char name[64], why[256];
    snprintf(name, sizeof name, SPW_STATS_NAME_PREFIX "%u.%d", (unsigned)geteuid(), (int)getpid());
    int removed = 0;
    enum spw_read_result r = spw_stats_read_at(fd, name, 0, snap, &removed, why, sizeof why);
    close(fd);
    return r == SPW_READ_OK;
}

/* got (field) must equal want (what whose says). */
static void expect_eq(const char *what, const char *field, uint64_t got, uint64_t want,
                      const char *whose)
{
    if (got != want)
        fail(what, "%s is %llu; %s: %llu", field, (unsigned long long)got, whose,
             (unsigned long long)want);
}

#define PROGRAM "the program's view"
#define POOL "the pool's counters"

static void check_counters(void)
{
    struct spillway_counters d, h;
    if (get_counters(0, &d) != 0 || get_counters(SPILLWAY_HOST, &h) != 0) {
        fail("stats", "spillway_get_counters refused");
        return;
    }
    expect_eq("stats", "device used", d.used, held.dev_bytes, PROGRAM);
    expect_eq("stats", "device allocs", d.allocs, held.allocs, PROGRAM);
    expect_eq("stats", "device frees", d.frees, held.frees, PROGRAM);
    expect_eq("stats", "host used", h.used, held.host_bytes, PROGRAM);
    expect_eq("stats", "host allocs", h.allocs, held.host_allocs, PROGRAM);
    expect_eq("stats", "host frees", h.frees, held.host_frees, PROGRAM);
    struct spw_stats_snapshot snap;
    if (!segment(&snap))
        return; /* not created before the first allocation */
    expect_eq("stats", "segment in_use_bytes", snap.c[0][SPW_C_IN_USE], held.dev_bytes, PROGRAM);
    expect_eq("stats", "segment allocs", snap.c[0][SPW_C_ALLOCS], held.allocs, PROGRAM);
    expect_eq("stats", "segment frees", snap.c[0][SPW_C_FREES], held.frees, PROGRAM);
    expect_eq("stats", "segment underflows", snap.c[0][SPW_C_UNDERFLOWS], 0, "expected");
}

/* Every operation leaves the thread's context stack as the program set it. */
static void check_context(void)
{
    int depth = fakecuda_ctx_depth();
    void *top = fakecuda_ctx_current();
    if (ctx && (depth != 1 || top != (void *)ctx))
        fail("ctx", "context stack depth %d, top %p; the program's is depth 1, top %p", depth, top,
             (void *)ctx);
}

/* FAULTS_VERBOSE=1: the pool's figures after every operation (diagnosis). */
static void trace_pool(void)
{
    static int verbose = -1;
    if (verbose < 0)
        verbose = getenv("FAULTS_VERBOSE") && atoi(getenv("FAULTS_VERBOSE")) > 0;
    struct spillway_pool_counters pc;
    if (!verbose || get_pool_counters(0, &pc) != 0)
        return;
    printf("  pool %llu in use %llu pending %llu spilled %llu host %llu spills %llu fills %llu\n",
           (unsigned long long)pc.pool_bytes, (unsigned long long)pc.in_use_bytes,
           (unsigned long long)pc.pending_bytes, (unsigned long long)pc.spilled_bytes,
           (unsigned long long)pc.host_bytes, (unsigned long long)pc.spill_events,
           (unsigned long long)pc.fill_events);
}

static void check_invariants(void)
{
    check_counters();
    check_context();
    trace_pool();
}

/* ---- buffers ------------------------------------------------------------------- */

static uint32_t pattern(size_t i, unsigned seed)
{
    return (uint32_t)(i * 2654435761u + seed * 40503u + 1u);
}

static uint32_t step_word(uint32_t w, unsigned k)
{
    return w * 1664525u + 1013904223u + k;
}

#define MAX_BUF_SIZE (6 * MiB)

static uint32_t expected_word(const struct recipe *r, size_t i)
{
    uint32_t w = r->set ? r->base : pattern(i, r->base);
    for (unsigned s = 0; s < r->nsteps; s++)
        w = step_word(w, r->steps[s]);
    return w;
}

/* Words [from, from + n) of what b should contain, into out. */
static void expected_words(const struct buf *b, size_t from, size_t n, uint32_t *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = expected_word(&b->recipe, from + i);
}

static struct buf *buf_new(const char *name, enum kind kind, size_t size)
{
    if (nbufs == MAX_BUFS || size > MAX_BUF_SIZE) {
        printf("FAIL setup: too many buffers, or one too large\n");
        exit(1);
    }
    struct buf *b = &bufs[nbufs++];
    *b = (struct buf){.name = name, .kind = kind, .size = size};
    return b;
}

static bool overlaps(const struct buf *a, const struct buf *b)
{
    return a->ptr < b->ptr + b->size && b->ptr < a->ptr + a->size;
}

/* A pointer an allocation returned: never 0, never inside another buffer. */
static void check_pointer(const struct buf *b)
{
    if (!b->ptr)
        fail("pointer", "%s: allocation succeeded with a null pointer", b->name);
    for (int i = 0; i < nbufs; i++)
        if (&bufs[i] != b && bufs[i].live && overlaps(&bufs[i], b))
            fail("pointer", "%s [%#llx, +%zu) overlaps %s [%#llx, +%zu)", b->name,
                 (unsigned long long)b->ptr, b->size, bufs[i].name,
                 (unsigned long long)bufs[i].ptr, bufs[i].size);
}

static void took(struct buf *b)
{
    b->live = true;
    b->usable = b->kind != VMM;
    b->known = false;
    held.dev_bytes += b->size;
    held.allocs++;
}

static void gave_back(struct buf *b)
{
    b->live = b->usable = b->known = false;
    held.dev_bytes -= b->size;
    held.frees++;
}

static const char *label(const char *what, const struct buf *b)
{
    static char names[256][48];
    static unsigned next;
    char *s = names[next++ % 256];
    snprintf(s, sizeof names[0], "%s:%s", what, b->name);
    return s;
}

/* ---- operations ------------------------------------------------------------ */

/* Tries call up to three times: set-up and teardown steps a program would
 * retry (one injected fault must not stop the workload or leave it holding
 * memory). One operation, whatever the number of tries. */
#define RETRIED(r, call)                                            \
    do {                                                            \
        for (int try_ = 0; try_ < 3; try_++)                        \
            if (((r) = (call)) == CUDA_SUCCESS)                     \
                break;                                              \
    } while (0)

static void alloc_linear(struct buf *b)
{
    op_begin(label("alloc", b), true);
    CUresult r = cuMemAlloc(&b->ptr, b->size);
    if (r == CUDA_SUCCESS) {
        took(b);
        check_pointer(b);
    }
    op_end(r);
}

static void alloc_async(struct buf *b)
{
    op_begin(label("alloc", b), true);
    CUresult r = cuMemAllocAsync(&b->ptr, b->size, stream);
    if (r == CUDA_SUCCESS) {
        took(b);
        check_pointer(b);
    }
    op_end(r);
}

static void sync_stream(const char *name)
{
    op_begin(name, false);
    CUresult r;
    RETRIED(r, cuStreamSynchronize(stream));
    op_end(r);
}

static void sync_device(const char *name)
{
    op_begin(name, false);
    CUresult r;
    RETRIED(r, cuCtxSynchronize());
    op_end(r);
}

/* Where buffers are read back and writes are staged: one of each, reused
 * (fresh memory for every copy would cost a page fault per 4 KiB, most of
 * a run's time). */
static uint32_t *readback;
static uint32_t *staging; /* pinned when cuMemHostAlloc gave it, else readback */

/* Writes pattern seed over b, 2 MiB at a time from the staging buffer:
 * synchronously, or on the stream (each piece waited for: it is reused). */
static void write_buf(struct buf *b, unsigned seed, bool on_stream)
{
    if (!b->live || !b->usable)
        return;
    b->recipe = (struct recipe){.base = seed};
    op_begin(label("write", b), false);
    CUresult r = CUDA_SUCCESS;
    for (size_t off = 0; off < b->size && r == CUDA_SUCCESS; off += PAGE) {
        size_t n = b->size - off < PAGE ? b->size - off : PAGE;
        expected_words(b, off / 4, n / 4, staging);
        if (!on_stream) {
            r = cuMemcpyHtoD(b->ptr + off, staging, n);
            continue;
        }
        r = cuMemcpyHtoDAsync(b->ptr + off, staging, n, stream);
        if (r == CUDA_SUCCESS)
            r = cuStreamSynchronize(stream);
    }
    b->known = r == CUDA_SUCCESS;
    op_end(r);
}

struct step_args {
    CUdeviceptr p;
    size_t n;
    unsigned k;
};

static void step_kernel(fakecuda_dim3 g, fakecuda_dim3 bl, void **params)
{
    (void)g;
    (void)bl;
    uint32_t *w = (uint32_t *)(uintptr_t)(*(CUdeviceptr *)params[0]);
    size_t n = *(size_t *)params[1];
    unsigned k = *(unsigned *)params[2];
    for (size_t i = 0; i < n; i++)
        w[i] = step_word(w[i], k);
}

/* A kernel rewrites every word of b in place: spillway fills b back first
 * when some of it was spilled and device pages are free. */
static void launch_step(struct buf *b, unsigned k)
{
    if (!b->live || !b->usable)
        return;
    op_begin(label("kernel", b), false);
    size_t n = b->size / 4;
    void *args[] = {&b->ptr, &n, &k};
    CUresult r = cuLaunchKernel(step_fn, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL);
    if (r == CUDA_SUCCESS && b->recipe.nsteps < MAX_STEPS)
        b->recipe.steps[b->recipe.nsteps++] = k;
    else
        b->known = false;
    op_end(r);
}

static void memset_buf(struct buf *b, uint32_t v)
{
    if (!b->live || !b->usable)
        return;
    op_begin(label("memset", b), false);
    CUresult r = cuMemsetD32(b->ptr, v, b->size / 4);
    if (r == CUDA_SUCCESS)
        b->recipe = (struct recipe){.set = true, .base = v};
    b->known = r == CUDA_SUCCESS;
    op_end(r);
}

/* dst = src (the first dst->size bytes), device to device. */
static void copy_dtod(struct buf *dst, struct buf *src)
{
    if (!dst->live || !dst->usable || !src->live || !src->usable || src->size < dst->size)
        return;
    op_begin(label("dtod", dst), false);
    CUresult r = cuMemcpyDtoD(dst->ptr, src->ptr, dst->size);
    if (r == CUDA_SUCCESS) {
        dst->recipe = src->recipe; /* word i of dst is word i of src */
        dst->known = src->known;
    } else {
        dst->known = false;
    }
    op_end(r);
}

/* Reads b back and compares every word with what it should contain. */
static void verify_buf(const char *what, struct buf *b)
{
    if (!b->live || !b->usable)
        return;
    op_begin(label(what, b), false);
    uint32_t *got = readback;
    CUresult r;
    RETRIED(r, cuMemcpyDtoH(got, b->ptr, b->size));
    size_t first = SIZE_MAX, bad = 0;
    for (size_t i = 0; r == CUDA_SUCCESS && b->known && i < b->size / 4; i++)
        if (got[i] != expected_word(&b->recipe, i) && bad++ == 0)
            first = i;
    if (bad)
        fail("data", "%s at %#llx: word %zu of %zu is %#x, expected %#x (%zu words differ)",
             b->name, (unsigned long long)b->ptr, first, b->size / 4, got[first],
             expected_word(&b->recipe, first), bad);
    op_end(r);
}

static void verify_all(const char *what)
{
    for (int i = 0; i < nbufs; i++)
        verify_buf(what, &bufs[i]);
}

/* ---- frees ------------------------------------------------------------------- */

static CUresult free_call(struct buf *b)
{
    switch (b->kind) {
    case LINEAR:
        return cuMemFree(b->ptr);
    case ASYNC:
        return cuMemFreeAsync(b->ptr, stream);
    default:
        return cuMemRelease(b->h);
    }
}

static CUresult unmap_vmm(struct buf *b)
{
    if (!b->mapped)
        return CUDA_SUCCESS;
    op_begin(label("unmap", b), false);
    CUresult r = cuMemUnmap(b->ptr, b->size);
    if (r == CUDA_SUCCESS)
        b->mapped = b->usable = false;
    return op_end(r);
}

/* A free the driver refused leaves the buffer with the program: its data
 * must still be there (checked). At teardown it is tried again. */
static CUresult free_buf(const char *what, struct buf *b)
{
    if (!b->live || (b->kind == VMM && unmap_vmm(b) != CUDA_SUCCESS))
        return CUDA_ERROR_INVALID_VALUE;
    op_begin(label(what, b), false);
    CUresult r = free_call(b);
    if (r == CUDA_SUCCESS)
        gave_back(b);
    op_end(r);
    if (r != CUDA_SUCCESS)
        verify_buf("reverify", b);
    return r;
}

/* ---- the program's own VMM ---------------------------------------------------- */

static CUmemAllocationProp device_prop(void)
{
    CUmemAllocationProp p;
    memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = 0;
    return p;
}

static void reserve_vmm(void)
{
    op_begin("reserve:vmm", false);
    CUresult r = cuMemAddressReserve(&vmm_va, VMM_PAGES * PAGE, 0, 0, 0);
    vmm_reserved = r == CUDA_SUCCESS;
    if (!vmm_reserved)
        vmm_va = 0;
    op_end(r);
}

static void set_access(struct buf *b)
{
    CUmemAccessDesc d;
    memset(&d, 0, sizeof d);
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = 0;
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    op_begin(label("access", b), false);
    b->usable = op_end(cuMemSetAccess(b->ptr, b->size, &d, 1)) == CUDA_SUCCESS;
}

/* Handle i of the program's VMM: created (pool pages), mapped at its
 * place in the reservation, made accessible. */
static void alloc_vmm(struct buf *b, int i)
{
    if (!vmm_reserved)
        return;
    CUmemAllocationProp p = device_prop();
    op_begin(label("create", b), true);
    CUresult r = cuMemCreate(&b->h, b->size, &p, 0);
    if (r == CUDA_SUCCESS)
        took(b);
    if (op_end(r) != CUDA_SUCCESS)
        return;
    b->ptr = vmm_va + (CUdeviceptr)i * PAGE;
    op_begin(label("map", b), false);
    b->mapped = op_end(cuMemMap(b->ptr, b->size, 0, b->h, 0)) == CUDA_SUCCESS;
    if (b->mapped)
        set_access(b);
}

static void free_reservation(void)
{
    if (!vmm_reserved)
        return;
    for (int i = 0; i < nbufs; i++)
        if (bufs[i].kind == VMM && bufs[i].mapped)
            return; /* cannot free a reservation with mappings: reported as a leak */
    op_begin("free:vmm", false);
    CUresult r;
    RETRIED(r, cuMemAddressFree(vmm_va, VMM_PAGES * PAGE));
    vmm_reserved = r != CUDA_SUCCESS;
    op_end(r);
}

/* ---- set-up ------------------------------------------------------------------ */

static void die_unless(CUresult r, const char *what)
{
    if (r != CUDA_SUCCESS) {
        printf("FAIL setup: %s: error %d\n", what, (int)r);
        exit(1);
    }
}

static void set_up(void)
{
    static const size_t sizes[] = {sizeof(CUdeviceptr), sizeof(size_t), sizeof(unsigned)};
    CUresult r;
    CUmodule m;
    op_begin("init", false);
    RETRIED(r, cuInit(0));
    die_unless(op_end(r), "cuInit");
    op_begin("context", false);
    RETRIED(r, cuDevicePrimaryCtxRetain(&ctx, 0));
    if (r == CUDA_SUCCESS)
        RETRIED(r, cuCtxSetCurrent(ctx));
    die_unless(op_end(r), "primary context");
    op_begin("stream", false);
    RETRIED(r, cuStreamCreate(&stream, CU_STREAM_DEFAULT));
    die_unless(op_end(r), "cuStreamCreate");
    die_unless(fakecuda_register_kernel("fault_step", step_kernel, 3, sizes) == 0
                   ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN, "kernel");
    op_begin("module", false);
    RETRIED(r, cuModuleLoadData(&m, "fakecuda"));
    if (r == CUDA_SUCCESS)
        RETRIED(r, cuModuleGetFunction(&step_fn, m, "fault_step"));
    die_unless(op_end(r), "module");
    op_begin("pinned", true);
    r = cuMemHostAlloc(&pinned, PAGE, 0);
    if (r == CUDA_SUCCESS) {
        held.host_bytes += PAGE;
        held.host_allocs++;
    } else {
        pinned = NULL; /* writes from pageable memory then */
    }
    staging = pinned ? pinned : readback;
    op_end(r);
}

/* cuMemGetInfo under spillway: total is the limit, free what is left of it
 * (exactly, when the pool serves the device). */
static void check_mem_info(void)
{
    size_t free_b = 0, total = 0;
    op_begin("meminfo", false);
    CUresult r = cuMemGetInfo(&free_b, &total);
    op_end(r);
    if (r != CUDA_SUCCESS)
        return;
    size_t left = limit - (held.dev_bytes < limit ? held.dev_bytes : limit);
    if (total != limit || free_b > left)
        fail("stats", "cuMemGetInfo: free %zu total %zu; limit %zu, the program holds %llu", free_b,
             total, limit, (unsigned long long)held.dev_bytes);
}

/* ---- teardown and leaks -------------------------------------------------------- */

static void teardown(void)
{
    for (int i = 0; i < nbufs; i++)
        if (bufs[i].live && free_buf("free", &bufs[i]) != CUDA_SUCCESS)
            free_buf("refree", &bufs[i]);
    sync_stream("sync:final-stream");
    free_reservation();
    if (pinned) {
        op_begin("free:pinned", false);
        CUresult r;
        RETRIED(r, cuMemFreeHost(pinned));
        if (r == CUDA_SUCCESS) {
            held.host_bytes -= PAGE;
            held.host_frees++;
            pinned = NULL;
        }
        op_end(r);
    }
    sync_device("sync:final");
    op_begin("stream:destroy", false);
    CUresult r;
    RETRIED(r, cuStreamDestroy(stream));
    if (op_end(r) == CUDA_SUCCESS)
        destroyed = stream;
}

static void expect_le(const char *field, uint64_t got, uint64_t bound)
{
    if (got > bound)
        fail("leak", "%s is %llu, at most %llu expected", field, (unsigned long long)got,
             (unsigned long long)bound);
}

/* After teardown the program holds nothing: fakecuda must hold exactly
 * what spillway's pool keeps, and the pool nothing for the program. */
static void check_leaks(void)
{
    op_name = "teardown";
    struct spillway_pool_counters pc;
    memset(&pc, 0, sizeof pc);
    bool policy = get_pool_counters(0, &pc) == 0;
    /* A pool holds VA from the moment it is up (a failed set-up may be
     * tried again and succeed later: pass-through counts do not tell). */
    bool pool_up = policy && pc.va_bytes > 0;
    for (int i = 0; i < nbufs; i++)
        if (bufs[i].live)
            fail("leak", "the program still holds %s after teardown", bufs[i].name);
    expect_eq("leak", "fakecuda device bytes", fakecuda_device_bytes_used(0), pc.pool_bytes,
              "the pool's pages");
    expect_eq("leak", "fakecuda pinned host bytes", fakecuda_host_bytes_used(), pc.host_bytes,
              "the pool's host pages");
    expect_eq("leak", "fakecuda live handles", fakecuda_live_handles(),
              (pc.pool_bytes + pc.host_bytes) / PAGE, "the pool's pages and host pages");
    expect_le("fakecuda live mappings", fakecuda_live_mappings(), fakecuda_live_handles());
    /* What the pool keeps besides pages (VA reservations: its arena grows;
     * its own streams and events) is not in its public counters: without a
     * pool no reservation may be left; otherwise faults.sh compares the
     * figures printed below with the clean run's. The program's own
     * reservation and stream are gone. */
    /* The pool's own VA, streams and events: exactly what it says it
     * holds (its arena may have grown; the program's own are gone). */
    expect_eq("leak", "fakecuda reserved bytes", fakecuda_reserved_bytes(), pc.va_bytes,
              pool_up ? "the pool's VA" : "the pool's (none: it is not up)");
    expect_eq("leak", "fakecuda live streams", fakecuda_live_streams(), pc.streams,
              "the pool's own streams");
    expect_eq("leak", "fakecuda live events", fakecuda_live_events(), pc.events,
              "the pool's own events");
    if (vmm_va && fakecuda_reserved_at(vmm_va))
        fail("leak", "the program's own reservation at %#llx is still there",
             (unsigned long long)vmm_va);
    if (destroyed && fakecuda_stream_live(destroyed))
        fail("leak", "the program's stream survived its cuStreamDestroy");
    else if (!destroyed)
        fail("leak", "the program could not destroy its stream");
    /* Nothing allocated, the final device sync behind us: nothing spilled. */
    expect_eq("stats", "pool in_use_bytes", pc.in_use_bytes, 0, PROGRAM);
    expect_eq("stats", "pool spilled_bytes", pc.spilled_bytes, 0, PROGRAM);
    struct spw_stats_snapshot snap;
    if (!segment(&snap)) {
        fail("stats", "no stats segment");
        return;
    }
    /* The reserve thread may have made a host page since the last
     * operation published the pool's figures (it runs in the background;
     * the segment shows its pages at the next operation): let a device
     * sync, which publishes them, come after it, for a second at most. A
     * segment that never catches up still fails below. */
    for (int i = 0; i < 100 && snap.c[0][SPW_C_HOST] != pc.host_bytes; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
        (void)cuCtxSynchronize();
        if (get_pool_counters(0, &pc) != 0 || !segment(&snap))
            break;
    }
    expect_eq("stats", "segment pool_bytes", snap.c[0][SPW_C_POOL], pc.pool_bytes, POOL);
    expect_eq("stats", "segment host_bytes", snap.c[0][SPW_C_HOST], pc.host_bytes, POOL);
    expect_eq("stats", "segment spilled_bytes", snap.c[0][SPW_C_SPILLED], pc.spilled_bytes, POOL);
    printf("pool up=%d pool_bytes=%llu host_bytes=%llu spill_events=%llu fill_events=%llu\n",
           pool_up, (unsigned long long)pc.pool_bytes, (unsigned long long)pc.host_bytes,
           (unsigned long long)pc.spill_events, (unsigned long long)pc.fill_events);
    printf("kept va_bytes=%zu reservations=%zu streams=%zu events=%zu\n",
           fakecuda_reserved_bytes(), fakecuda_live_reservations(), fakecuda_live_streams(),
           fakecuda_live_events());
}

static void report_calls(void)
{
    const char *fn;
    for (unsigned i = 0; (fn = fakecuda_fault_fn(i)) != NULL; i++)
        if (fakecuda_calls(fn) > 0)
            printf("calls %s %lld\n", fn, fakecuda_calls(fn));
    unsigned long long call = 0;
    fn = NULL;
    int err = fakecuda_fault_last(&fn, &call);
    printf("injected %lld %s %llu %d\n", fakecuda_faults(NULL), fn ? fn : "-", call, err);
}

/* ---- the workload ---------------------------------------------------------------- */

static void workload(void)
{
    struct buf *a = buf_new("A", LINEAR, 4 * MiB), *b = buf_new("B", LINEAR, 4 * MiB);
    struct buf *s1 = buf_new("S1", LINEAR, 64 << 10), *s2 = buf_new("S2", LINEAR, 96 << 10);
    struct buf *c = buf_new("C", ASYNC, 2 * MiB);
    struct buf *v[VMM_PAGES] = {buf_new("V1", VMM, PAGE), buf_new("V2", VMM, PAGE)};
    struct buf *d = buf_new("D", LINEAR, 4 * MiB), *e = buf_new("E", ASYNC, 6 * MiB);
    struct buf *f = buf_new("F", LINEAR, 6 * MiB), *g = buf_new("G", ASYNC, 1 * MiB);
    struct buf *h = buf_new("H", ASYNC, 2 * MiB), *i = buf_new("I", LINEAR, 2 * MiB);

    /* allocation up to the limit, then past it: spill */
    alloc_linear(a), write_buf(a, 1, false);
    alloc_linear(b), write_buf(b, 2, false);
    alloc_linear(s1), write_buf(s1, 3, false);
    alloc_linear(s2), write_buf(s2, 4, false);
    alloc_async(c), write_buf(c, 5, true);
    reserve_vmm();
    for (int k = 0; k < VMM_PAGES; k++)
        alloc_vmm(v[k], k), write_buf(v[k], 6 + (unsigned)k, false);
    alloc_linear(d), write_buf(d, 8, false);
    alloc_async(e), write_buf(e, 9, true);
    check_mem_info();
    verify_all("verify1");

    /* freeing device-resident data makes room: launches, sets and copies
     * fill their spilled data back */
    free_buf("free", d);
    sync_device("sync:1");
    launch_step(a, 1);
    launch_step(v[0], 2);
    memset_buf(s1, 0xa5a5a5a5u);
    copy_dtod(b, a);
    sync_device("sync:2");
    verify_all("verify2");

    /* stream-ordered frees and reuse, more spill, a launch on spilled data */
    free_buf("free", c);
    alloc_async(h), write_buf(h, 12, true); /* C's block again, on its stream */
    sync_stream("sync:3");
    free_buf("free", v[1]);
    sync_device("sync:4");
    verify_buf("peek", s2);
    alloc_linear(f), write_buf(f, 10, false);
    alloc_async(g), write_buf(g, 11, true);
    launch_step(e, 3);
    /* A free whose stream is done but no device sync covers yet: the next
     * allocation that misses asks its event (cuEventQuery). */
    free_buf("free", g);
    sync_stream("sync:5");
    alloc_linear(i), write_buf(i, 13, false);
    sync_device("sync:6");
    verify_all("verify3");
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    spillway_symbols();
    readback = malloc(MAX_BUF_SIZE);
    if (!readback) {
        printf("FAIL setup: out of host memory\n");
        return 1;
    }
    const char *lim = getenv("FAULTS_LIMIT_MIB");
    limit = (size_t)(lim ? atoi(lim) : 16) * MiB;
    set_up();
    workload();
    teardown();
    check_leaks();
    report_calls();
    printf("done failures=%d\n", failures);
    return failures ? 1 : 0;
}
