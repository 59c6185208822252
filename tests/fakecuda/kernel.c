/* fakecuda: modules and kernels. A test registers C functions as kernels
 * (fakecuda_register_kernel); any loaded module (or library, library.c)
 * finds them by name, so the same test can load real PTX on a GPU and C
 * functions here. A launch is data (struct fc_kernel_call): run at once,
 * or captured into a graph's kernel node and run at each graph launch. */
#include <stdlib.h>
#include <string.h>

#include "tests/fakecuda/graph.h"
#include "tests/fakecuda/internal.h"

#define MAX_KERNELS 128

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct CUfunc_st kernels[MAX_KERNELS]; /* entries never move: CUfunction points here */
static unsigned nkernels;

struct fc_modfunc;

struct CUmod_st {
    uint32_t magic;
    struct CUctx_st *ctx;      /* a cuModuleLoad* module's (a library's: NULL) */
    struct fc_modfunc *funcs;  /* cuModuleGetFunction's, under lock */
    struct CUmod_st *next;
};

/* The loaded modules, under lock: a context's reset unloads its own, and a
 * function is valid while its module is listed here. */
static struct CUmod_st *modules;

/* Each parameter at the next offset of its alignment: aligns[i], or for 0
 * (and without aligns) its natural one, as nvcc lays out a kernel's
 * parameters (a type's alignment: the size up to 8 for scalars and
 * pointers). A CUtensorMap is alignas(64) (CUDA 12's cuda.h) or
 * alignas(128) (CUDA 13's), and a struct holding one keeps that: such
 * parameters are registered with their alignment, which is what places
 * a descriptor where spillway looks for one (64-byte-aligned offsets). */
FC_EXPORT int fakecuda_register_kernel_aligned(const char *name, fakecuda_kernel_fn fn, unsigned nparams,
                                               const size_t *param_sizes, const size_t *aligns)
{
    if (!name || !fn || nparams > FAKECUDA_MAX_PARAMS || strlen(name) >= sizeof kernels[0].name)
        return -1;
    for (unsigned i = 0; aligns && i < nparams; i++)
        if (aligns[i] & (aligns[i] - 1))
            return -1; /* not a power of two */
    pthread_mutex_lock(&lock);
    struct CUfunc_st *k = NULL;
    for (unsigned i = 0; i < nkernels && !k; i++)
        if (strcmp(kernels[i].name, name) == 0)
            k = &kernels[i];
    if (!k && nkernels < MAX_KERNELS)
        k = &kernels[nkernels++];
    if (k) {
        memset(k, 0, sizeof *k);
        k->magic = FC_MAGIC_FUNC;
        strcpy(k->name, name);
        k->fn = fn;
        k->nparams = nparams;
        size_t off = 0;
        for (unsigned i = 0; i < nparams; i++) {
            size_t sz = param_sizes[i], align = sz >= 8 ? 8 : sz >= 4 ? 4 : sz >= 2 ? 2 : 1;
            if (aligns && aligns[i])
                align = aligns[i];
            off = (off + align - 1) & ~(align - 1);
            k->size[i] = sz;
            k->offset[i] = off;
            off += sz;
        }
    }
    pthread_mutex_unlock(&lock);
    return k ? 0 : -1;
}

FC_EXPORT int fakecuda_register_kernel(const char *name, fakecuda_kernel_fn fn, unsigned nparams,
                                       const size_t *param_sizes)
{
    return fakecuda_register_kernel_aligned(name, fn, nparams, param_sizes, NULL);
}

unsigned fc_kernel_count(void)
{
    pthread_mutex_lock(&lock);
    unsigned n = nkernels;
    pthread_mutex_unlock(&lock);
    return n;
}

struct CUfunc_st *fc_kernel_at(unsigned i)
{
    return i < fc_kernel_count() ? &kernels[i] : NULL;
}

/* A module's function: its own handle, a copy of the registered kernel
 * made at cuModuleGetFunction, valid while the module is loaded. A dead
 * one's memory is never freed (a launch queued or captured before the
 * unload still reads it) but handed out again, newest first, to the next
 * module's function, as the driver reuses a dead function's handle. */
struct fc_modfunc {
    struct CUfunc_st f; /* first: the CUfunction points here */
    struct fc_modfunc *next;
};

static struct fc_modfunc *spare; /* dead functions, under lock */

CUresult fc_module_new(CUmodule *m)
{
    struct CUctx_st *c;
    CUresult r = fc_current_ctx(&c);
    if (r != CUDA_SUCCESS)
        return r;
    if (!m)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUmod_st *mod = calloc(1, sizeof *mod);
    if (!mod)
        return CUDA_ERROR_OUT_OF_MEMORY;
    mod->magic = FC_MAGIC_MODULE;
    pthread_mutex_lock(&lock);
    mod->next = modules;
    modules = mod;
    pthread_mutex_unlock(&lock);
    *m = mod;
    return CUDA_SUCCESS;
}

/* A module of the current context (cuModuleLoad*): the context's reset
 * unloads it. (A library's module, fc_module_new alone, is the library's:
 * it stays.) */
static CUresult module_load(CUmodule *m)
{
    CUresult r = fc_module_new(m);
    if (r != CUDA_SUCCESS)
        return r;
    struct CUctx_st *c;
    fc_current_ctx(&c); /* fc_module_new found one */
    pthread_mutex_lock(&lock);
    (*m)->ctx = c;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

/* Under lock: m unloaded, its functions dead with it (marked, kept). An
 * unload then frees m; a reset keeps it, dead, so that a stale handle is
 * told apart without reading freed memory. */
static void module_end_locked(struct CUmod_st *m)
{
    for (struct CUmod_st **pp = &modules; *pp; pp = &(*pp)->next)
        if (*pp == m) {
            *pp = m->next;
            break;
        }
    while (m->funcs) {
        struct fc_modfunc *f = m->funcs;
        m->funcs = f->next;
        f->f.magic = 0;
        f->next = spare;
        spare = f;
    }
    m->magic = 0;
}

/* A reset unloads the context's modules. */
void fc_ctx_end_modules(struct CUctx_st *ctx)
{
    pthread_mutex_lock(&lock);
    for (struct CUmod_st *m = modules, *next; m; m = next) {
        next = m->next;
        if (m->ctx == ctx)
            module_end_locked(m);
    }
    pthread_mutex_unlock(&lock);
}

FC_EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    FC_FAULT(cuModuleLoadData);
    if (!image)
        return CUDA_ERROR_INVALID_VALUE;
    return module_load(module);
}

FC_EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int n,
                                      CUjit_option *options, void **values)
{
    FC_FAULT(cuModuleLoadDataEx);
    (void)n;
    (void)options;
    (void)values;
    /* Not through cuModuleLoadData: that would count a call of it too. */
    if (!image)
        return CUDA_ERROR_INVALID_VALUE;
    return module_load(module);
}

FC_EXPORT CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
    FC_FAULT(cuModuleLoad);
    if (!fname)
        return CUDA_ERROR_INVALID_VALUE;
    return module_load(module);
}

void fc_module_free(CUmodule m)
{
    pthread_mutex_lock(&lock);
    module_end_locked(m);
    pthread_mutex_unlock(&lock);
    free(m);
}

FC_EXPORT CUresult cuModuleUnload(CUmodule m)
{
    FC_FAULT(cuModuleUnload);
    if (!m || m->magic != FC_MAGIC_MODULE)
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = fc_capture_unsafe_call();
    if (r != CUDA_SUCCESS)
        return r;
    fc_module_free(m);
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule m, const char *name)
{
    FC_FAULT(cuModuleGetFunction);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!hfunc || !name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!m || m->magic != FC_MAGIC_MODULE)
        return CUDA_ERROR_INVALID_HANDLE;
    struct CUfunc_st *k = fc_kernel_find(name);
    if (!k)
        return CUDA_ERROR_NOT_FOUND;
    pthread_mutex_lock(&lock);
    struct fc_modfunc *f = m->funcs;
    while (f && strcmp(f->f.name, name) != 0)
        f = f->next;
    bool fresh = !f;
    if (fresh && spare) {
        f = spare;
        spare = f->next;
    } else if (fresh) {
        f = malloc(sizeof *f);
    }
    if (fresh && f) {
        f->f = *k;
        f->next = m->funcs;
        m->funcs = f;
    }
    pthread_mutex_unlock(&lock);
    if (!f)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *hfunc = &f->f;
    return CUDA_SUCCESS;
}

struct CUfunc_st *fc_kernel_find(const char *name)
{
    pthread_mutex_lock(&lock);
    struct CUfunc_st *k = NULL;
    for (unsigned i = 0; i < nkernels && !k; i++)
        if (strcmp(kernels[i].name, name) == 0)
            k = &kernels[i];
    pthread_mutex_unlock(&lock);
    return k;
}

/* A registered kernel (what a CUkernel names), or a function of a loaded
 * module (only pointers compared: a dead one's memory is not read). */
static bool func_valid(CUfunction f)
{
    if (f >= &kernels[0] && f < &kernels[MAX_KERNELS])
        return f->magic == FC_MAGIC_FUNC;
    bool ok = false;
    pthread_mutex_lock(&lock);
    for (struct CUmod_st *m = modules; m && !ok; m = m->next)
        for (struct fc_modfunc *x = m->funcs; x && !ok; x = x->next)
            ok = f == &x->f;
    pthread_mutex_unlock(&lock);
    return ok;
}

bool fc_func_valid(CUfunction f)
{
    return func_valid(f);
}

struct CUfunc_st *fc_func_resolve(CUfunction f)
{
    if (func_valid(f))
        return f;
    return fc_kernel_func((CUkernel)(void *)f);
}

/* A CUkernel cast to CUfunction is refused here: the driver documents that
 * cast for launches and occupancy queries only, and cuKernelGetParamInfo
 * is the CUkernel's (library.c). */
FC_EXPORT CUresult cuFuncGetParamInfo(CUfunction f, size_t index, size_t *offset, size_t *size)
{
    FC_FAULT(cuFuncGetParamInfo);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!func_valid(f))
        return CUDA_ERROR_INVALID_HANDLE;
    if (index >= f->nparams || (!offset && !size))
        return CUDA_ERROR_INVALID_VALUE;
    if (offset)
        *offset = f->offset[index];
    if (size)
        *size = f->size[index];
    return CUDA_SUCCESS;
}

/* Finds the argument buffer in CU_LAUNCH_PARAM_* extra options. */
static CUresult extra_buffer(void **extra, const unsigned char **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
            *buf = extra[i + 1];
        else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
            *len = *(size_t *)extra[i + 1];
        else
            return CUDA_ERROR_INVALID_VALUE;
    }
    return *buf ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Points params[] (or extra[]) into k's own copy of the arguments. */
void fc_kernel_call_rebase(struct fc_kernel_call *k)
{
    memset(k->params, 0, sizeof k->params);
    memset(k->extra, 0, sizeof k->extra);
    if (k->via_extra) {
        k->extra[0] = CU_LAUNCH_PARAM_BUFFER_POINTER;
        k->extra[1] = k->args;
        k->extra[2] = CU_LAUNCH_PARAM_BUFFER_SIZE;
        k->extra[3] = &k->size;
        k->extra[4] = CU_LAUNCH_PARAM_END;
    }
    for (unsigned i = 0; i < k->fn->nparams; i++)
        k->params[i] = k->args + k->fn->offset[i];
}

/* The driver reads kernelParams (or the extra buffer) at the call: the
 * caller may reuse them at once, so the launch keeps a copy. */
CUresult fc_kernel_call_init(struct fc_kernel_call *k, CUfunction f, fakecuda_dim3 grid,
                             fakecuda_dim3 block, unsigned shmem, void **params, void **extra)
{
    memset(k, 0, sizeof *k);
    struct CUfunc_st *fn = fc_func_resolve(f);
    if (!fn)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z ||
        (size_t)block.x * block.y * block.z > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    size_t total = fn->nparams ? fn->offset[fn->nparams - 1] + fn->size[fn->nparams - 1] : 0;
    const unsigned char *packed = NULL;
    size_t packed_len = 0;
    CUresult r;
    if (!params && extra) {
        if ((r = extra_buffer(extra, &packed, &packed_len)) != CUDA_SUCCESS)
            return r;
        if (packed_len < total)
            return CUDA_ERROR_INVALID_VALUE;
    } else if (!params && fn->nparams) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    k->args = malloc(total ? total : 1);
    if (!k->args)
        return CUDA_ERROR_OUT_OF_MEMORY;
    k->fn = fn;
    k->func = f;
    k->grid = grid;
    k->block = block;
    k->shmem = shmem;
    k->size = total;
    k->via_extra = packed != NULL;
    for (unsigned i = 0; i < fn->nparams; i++)
        memcpy(k->args + fn->offset[i], packed ? packed + fn->offset[i] : params[i], fn->size[i]);
    fc_kernel_call_rebase(k);
    return CUDA_SUCCESS;
}

CUresult fc_kernel_call_copy(struct fc_kernel_call *dst, const struct fc_kernel_call *src)
{
    *dst = *src;
    dst->args = malloc(src->size ? src->size : 1);
    if (!dst->args)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memcpy(dst->args, src->args, src->size);
    fc_kernel_call_rebase(dst);
    return CUDA_SUCCESS;
}

void fc_kernel_call_free(struct fc_kernel_call *k)
{
    free(k->args);
    k->args = NULL;
}

void fc_kernel_call_run(const struct fc_kernel_call *k)
{
    /* The kernel gets pointers into a copy of its own: a kernel that writes
     * its parameters must not change what the next graph launch passes. */
    unsigned char stack[256];
    unsigned char *copy = k->size <= sizeof stack ? stack : malloc(k->size);
    if (!copy)
        abort(); /* as fc_stream_enqueue: tests are small */
    memcpy(copy, k->args, k->size);
    void *params[FAKECUDA_MAX_PARAMS] = {0};
    for (unsigned i = 0; i < k->fn->nparams; i++)
        params[i] = copy + k->fn->offset[i];
    k->fn->fn(k->grid, k->block, params);
    if (copy != stack)
        free(copy);
}

static void run_launch(void *arg)
{
    struct fc_kernel_call *k = arg;
    fc_kernel_call_run(k);
    fc_kernel_call_free(k);
    free(k);
}

CUresult fc_launch(CUfunction f, fakecuda_dim3 grid, fakecuda_dim3 block, unsigned shmem, CUstream h,
                   void **params, void **extra, bool ptds)
{
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptds, &s);
    if (r != CUDA_SUCCESS)
        return r;
    struct fc_kernel_call *k = malloc(sizeof *k);
    if (!k)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if ((r = fc_kernel_call_init(k, f, grid, block, shmem, params, extra)) != CUDA_SUCCESS) {
        free(k);
        return r;
    }
    bool capturing;
    if ((r = fc_capture_enter(s, &capturing)) != CUDA_SUCCESS || capturing) {
        struct CUgraphNode_st *n = r == CUDA_SUCCESS ? fc_node_new(CU_GRAPH_NODE_TYPE_KERNEL) : NULL;
        if (n) {
            n->u.kernel = *k; /* the node takes the arguments */
            fc_kernel_call_rebase(&n->u.kernel);
            k->args = NULL;
        }
        fc_kernel_call_free(k);
        free(k);
        return r == CUDA_SUCCESS ? fc_capture_add(s, n) : r;
    }
    fc_stream_enqueue(s, run_launch, k, NULL);
    return CUDA_SUCCESS;
}

#define DIM(x, y, z) ((fakecuda_dim3){(x), (y), (z)})

FC_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                  unsigned by, unsigned bz, unsigned shmem, CUstream h, void **params,
                                  void **extra)
{
    FC_FAULT(cuLaunchKernel);
    if (params && extra)
        return CUDA_ERROR_INVALID_VALUE; /* one form or the other, documented */
    return fc_launch(f, DIM(gx, gy, gz), DIM(bx, by, bz), shmem, h, params, extra, false);
}

FC_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                       unsigned by, unsigned bz, unsigned shmem, CUstream h,
                                       void **params, void **extra)
{
    FC_FAULT(cuLaunchKernel);
    if (params && extra)
        return CUDA_ERROR_INVALID_VALUE;
    return fc_launch(f, DIM(gx, gy, gz), DIM(bx, by, bz), shmem, h, params, extra, true);
}

/* A cooperative launch runs like any other here: fakecuda runs the whole
 * grid in one call, so its blocks can always synchronize. */
FC_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                             unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                             CUstream h, void **params)
{
    FC_FAULT(cuLaunchCooperativeKernel);
    return fc_launch(f, DIM(gx, gy, gz), DIM(bx, by, bz), shmem, h, params, NULL, false);
}

FC_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
                                                  unsigned gz, unsigned bx, unsigned by,
                                                  unsigned bz, unsigned shmem, CUstream h,
                                                  void **params)
{
    FC_FAULT(cuLaunchCooperativeKernel);
    return fc_launch(f, DIM(gx, gy, gz), DIM(bx, by, bz), shmem, h, params, NULL, true);
}

/* CUDA 9.0's multi-device cooperative launch (deprecated since 11.3, still
 * exported): one kernel per device, each on a stream the program created
 * ("the NULL stream or CU_STREAM_LEGACY or CU_STREAM_PER_THREAD cannot be
 * used"), no two on one device, the same code, grid, block and shared
 * memory everywhere. Unless the flags say otherwise, no kernel begins
 * before the prior work of every stream named is complete, and no later
 * work of any of them begins before every kernel is: each kernel's op
 * first waits for the others' markers (queued behind their prior work),
 * and an op after each kernel waits for the other kernels. fakecuda's
 * kernels need no grid-wide synchronisation across devices (each runs
 * its whole grid in one call). Not capturable: a capturing stream gets
 * the capture's refusal. */
struct multi_launch {
    struct fc_kernel_call k;
    struct fc_dep wait[FC_MAX_DEVICES];
    unsigned nwait;
};

static void run_multi_wait(void *arg)
{
    struct multi_launch *m = arg;
    for (unsigned i = 0; i < m->nwait; i++)
        fc_dep_wait(&m->wait[i]);
}

static void run_multi_launch(void *arg)
{
    struct multi_launch *m = arg;
    run_multi_wait(m);
    fc_kernel_call_run(&m->k);
    fc_kernel_call_free(&m->k);
    free(m);
}

static void run_multi_after(void *arg)
{
    run_multi_wait(arg);
    free(arg);
}

static void run_nothing(void *arg)
{
    (void)arg;
}

FC_EXPORT CUresult cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS *list, unsigned int n,
                                                        unsigned int flags)
{
    FC_FAULT(cuLaunchCooperativeKernelMultiDevice);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!list || !n || n > (unsigned)fc_ndevices ||
        (flags & ~(unsigned)(CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_PRE_LAUNCH_SYNC |
                             CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_POST_LAUNCH_SYNC)))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *s[FC_MAX_DEVICES];
    bool used[FC_MAX_DEVICES] = {false};
    for (unsigned i = 0; i < n; i++) {
        const CUDA_LAUNCH_PARAMS *l = &list[i];
        if (!l->hStream || l->hStream == CU_STREAM_LEGACY || l->hStream == CU_STREAM_PER_THREAD)
            return CUDA_ERROR_INVALID_VALUE;
        if ((r = fc_stream_resolve(l->hStream, false, &s[i])) != CUDA_SUCCESS)
            return r;
        int dev = fc_stream_device(s[i]);
        if (dev < 0 || dev >= FC_MAX_DEVICES || used[dev])
            return CUDA_ERROR_INVALID_VALUE;
        used[dev] = true;
        struct CUfunc_st *fn = fc_func_resolve(l->function);
        if (!fn)
            return CUDA_ERROR_INVALID_HANDLE;
        if (i && (fn->fn != fc_func_resolve(list[0].function)->fn || l->gridDimX != list[0].gridDimX ||
                  l->gridDimY != list[0].gridDimY || l->gridDimZ != list[0].gridDimZ ||
                  l->blockDimX != list[0].blockDimX || l->blockDimY != list[0].blockDimY ||
                  l->blockDimZ != list[0].blockDimZ || l->sharedMemBytes != list[0].sharedMemBytes))
            return CUDA_ERROR_INVALID_VALUE;
    }
    for (unsigned i = 0; i < n; i++) {
        bool capturing;
        if ((r = fc_capture_enter(s[i], &capturing)) != CUDA_SUCCESS)
            return r;
        if (capturing)
            return fc_capture_add(s[i], NULL);
    }
    struct multi_launch *m[FC_MAX_DEVICES] = {NULL};
    for (unsigned i = 0; i < n && r == CUDA_SUCCESS; i++) {
        const CUDA_LAUNCH_PARAMS *l = &list[i];
        if (!(m[i] = calloc(1, sizeof *m[i])))
            r = CUDA_ERROR_OUT_OF_MEMORY;
        else if ((r = fc_kernel_call_init(&m[i]->k, l->function, DIM(l->gridDimX, l->gridDimY, l->gridDimZ),
                                          DIM(l->blockDimX, l->blockDimY, l->blockDimZ), l->sharedMemBytes,
                                          l->kernelParams, NULL)) != CUDA_SUCCESS) {
            free(m[i]);
            m[i] = NULL;
        }
    }
    if (r != CUDA_SUCCESS) {
        for (unsigned i = 0; i < n; i++)
            if (m[i]) {
                fc_kernel_call_free(&m[i]->k);
                free(m[i]);
            }
        return r;
    }
    struct fc_dep done[FC_MAX_DEVICES];
    if (!(flags & CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_PRE_LAUNCH_SYNC)) {
        for (unsigned i = 0; i < n; i++)
            done[i] = (struct fc_dep){s[i], fc_stream_enqueue(s[i], run_nothing, NULL, NULL)};
        for (unsigned i = 0; i < n; i++)
            for (unsigned j = 0; j < n; j++)
                if (j != i)
                    m[i]->wait[m[i]->nwait++] = done[j];
    }
    for (unsigned i = 0; i < n; i++)
        done[i] = (struct fc_dep){s[i], fc_stream_enqueue(s[i], run_multi_launch, m[i], NULL)};
    if (!(flags & CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_POST_LAUNCH_SYNC) && n > 1)
        for (unsigned i = 0; i < n; i++) {
            struct multi_launch *after = calloc(1, sizeof *after);
            if (!after)
                abort(); /* as fc_stream_enqueue: tests are small */
            for (unsigned j = 0; j < n; j++)
                if (j != i)
                    after->wait[after->nwait++] = done[j];
            fc_stream_enqueue(s[i], run_multi_after, after, NULL);
        }
    return CUDA_SUCCESS;
}

static CUresult launch_ex(const CUlaunchConfig *c, CUfunction f, void **params, void **extra, bool ptds)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    return fc_launch(f, DIM(c->gridDimX, c->gridDimY, c->gridDimZ),
                  DIM(c->blockDimX, c->blockDimY, c->blockDimZ), c->sharedMemBytes, c->hStream,
                  params, extra, ptds);
}

FC_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)
{
    FC_FAULT(cuLaunchKernelEx);
    return launch_ex(c, f, params, extra, false);
}

FC_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)
{
    FC_FAULT(cuLaunchKernelEx);
    return launch_ex(c, f, params, extra, true);
}
