/* fakecuda: modules and kernels. A test registers C functions as kernels
 * (fakecuda_register_kernel); any loaded module (or library, library.c)
 * finds them by name, so the same test can load real PTX on a GPU and C
 * functions here. Launches are launch.c's. */
#include <stdlib.h>
#include <string.h>

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
