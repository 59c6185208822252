/* Bad arguments to every function spillway hooks (shim/hooks.def), run on
 * fakecuda alone and under spillway by badargs.sh, which requires the same
 * output: whatever spillway does not own must answer what the driver
 * alone answers, and no bad argument may crash it.
 *
 * Each case prints "base/symbol/case code", symbol being the exported
 * name called ("+pt" for its _ptsz/_ptds variant), code the CUresult, or
 * -1 when the driver does not export it. badargs.sh checks that every
 * hooks.def row's symbol (and variant) has a case.
 *
 * This file is the probe's main and what its cases share (badargs.h); the
 * cases are in one file per API family (badargs_<family>.c).
 *
 * Every symbol is looked up by name (dlsym, as a program linked with
 * -lcuda would bind it), typed from hooks.def itself, so that the calls
 * follow the table and the compiler checks them against cuda.h.
 *
 * After each case the process must still be usable (its context current,
 * a sync succeeds): a case that left a sticky error would make every later
 * code meaningless, so the probe stops there with exit status 3. Calls
 * whose effect the driver leaves undefined (a second free of the same
 * address that another allocation may have taken, a handle freed twice
 * while others are live) are not made, except where fakecuda's
 * answer is the documented one (the double frees probe.c's errors make). */
#include "tests/integration/shim/badargs.h"

#include <dlfcn.h>

#define SPW_HOOK(base, symbol, version, handler, pt) \
    __typeof__(symbol) *p_##symbol;                  \
    SPW_PT_IF_##pt(__typeof__(symbol) *p_##symbol##_pt;)
#include "shim/hooks.def"
#undef SPW_HOOK

static void resolve(void)
{
    static const struct {
        const char *name, *suffix;
        void **slot, **pt_slot;
    } syms[] = {
#define SPW_HOOK(base, symbol, version, handler, pt) \
    {#symbol, SPW_PT_SUFFIX_##pt, (void **)&p_##symbol, SPW_PT_OR_NULL_##pt((void **)&p_##symbol##_pt)},
#include "shim/hooks.def"
#undef SPW_HOOK
    };
    for (size_t i = 0; i < sizeof syms / sizeof *syms; i++) {
        *syms[i].slot = dlsym(RTLD_DEFAULT, syms[i].name);
        if (syms[i].suffix) {
            char n[128];
            snprintf(n, sizeof n, "%s%s", syms[i].name, syms[i].suffix);
            *syms[i].pt_slot = dlsym(RTLD_DEFAULT, n);
        }
    }
}

CUcontext ctx;

/* Stops the probe when a case left the context unusable. */
static void still_usable(const char *base, const char *sym, const char *tag)
{
    if (!ctx) /* before setup: nothing to lose yet */
        return;
    CUcontext cur = NULL;
    CUresult r = cuCtxGetCurrent(&cur);
    if (r == CUDA_SUCCESS && cur != ctx) {
        printf("context changed after %s/%s/%s\n", base, sym, tag);
        exit(3);
    }
    if (r == CUDA_SUCCESS)
        r = cuCtxSynchronize();
    if (r != CUDA_SUCCESS) {
        printf("unusable after %s/%s/%s: %d\n", base, sym, tag, (int)r);
        exit(3);
    }
}

void report(const char *base, const char *sym, const char *tag, int code)
{
    printf("%s/%s/%s %d\n", base, sym, tag, code);
    fflush(stdout);
    still_usable(base, sym, tag);
}

/* ---- what the cases use (badargs.h) ---------------------------------------- */

const CUdeviceptr bad = 0xdead0000;
CUstream const bad_stream = (CUstream)(uintptr_t)0x1234;
CUdeviceptr dptr, gap, inner;
CUdeviceptr next_to;
CUstream stream;
CUarray array;
CUgraph graph;
CUgraphExec gexec;
CUfunction noop_fn, ptr_fn;
CUmemoryPool pool;
void *pinned;
char host[4 * MiB];
_Alignas(64) char not_a_handle[256];

static void kernel_nothing(fakecuda_dim3 g, fakecuda_dim3 b, void **params)
{
    (void)g;
    (void)b;
    (void)params;
}

/* An address freed just now, for each case that names freed memory: one
 * freed at the start could be any allocation's by the time a case uses it
 * (the driver alone reused it under AddressSanitizer, whose own mappings
 * move fakecuda's), and a live allocation answers differently. */
CUdeviceptr just_freed(void)
{
    CUdeviceptr p;
    OK(cuMemAlloc(&p, MiB));
    OK(cuMemFree(p));
    return p;
}

static void setup(void)
{
    OK(cuDevicePrimaryCtxRetain(&ctx, 0));
    OK(cuCtxSetCurrent(ctx));
    OK(cuMemAlloc(&dptr, MiB));
    OK(cuMemAlloc(&gap, MiB));
    OK(cuMemAlloc(&next_to, MiB));
    OK(cuMemFree(gap));
    OK(cuMemsetD8(dptr, 0x5a, MiB));
    OK(cuMemsetD8(next_to, 0xa5, MiB));
    inner = dptr + 256;
    OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CUDA_ARRAY_DESCRIPTOR ad = {.Width = 64, .Height = 64, .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 1};
    OK(cuArrayCreate(&array, &ad));
    OK(cuGraphCreate(&graph, 0));
    OK(cuGraphInstantiateWithFlags(&gexec, graph, 0));
    static const size_t ptr_size[] = {sizeof(CUdeviceptr)};
    if (!fakecuda_present() || fakecuda_register_kernel("badargs_noop", kernel_nothing, 0, NULL) ||
        fakecuda_register_kernel("badargs_ptr", kernel_nothing, 1, ptr_size)) {
        printf("setup: fakecuda's kernels\n");
        exit(2);
    }
    CUmodule m;
    OK(cuModuleLoadData(&m, "fakecuda"));
    OK(cuModuleGetFunction(&noop_fn, m, "badargs_noop"));
    OK(cuModuleGetFunction(&ptr_fn, m, "badargs_ptr"));
    OK(cuDeviceGetDefaultMemPool(&pool, 0));
    OK(cuMemAllocHost(&pinned, MiB));
}

int main(void)
{
    printf("badargs: main\n");
    fflush(stdout);
    resolve();
    no_context();
    setup();
    get_proc_address();
    device_memory();
    stream_ordered();
    vmm();
    pointers();
    captures();
    contexts();
    copies();
    sets();
    copies_2d();
    batch_copies();
    stream_memops();
    launches();
    tensor_maps();
    graphs();
    graph_nodes();
    memop_nodes();
    arrays();
    host_memory();
    sizes();
    /* A refused call must have written nothing: the bytes of dptr and of
     * the allocation next to it that differ from what setup wrote. */
    static unsigned char back[MiB];
    CUdeviceptr mem[] = {dptr, next_to};
    unsigned char fill[] = {0x5a, 0xa5};
    for (int i = 0; i < 2; i++) {
        OK(cuMemcpyDtoH(back, mem[i], MiB));
        size_t changed = 0;
        for (size_t k = 0; k < MiB; k++)
            changed += back[k] != fill[i];
        printf("badargs: allocation %d: %zu bytes changed\n", i, changed);
    }
    printf("badargs: done\n");
    return 0;
}
