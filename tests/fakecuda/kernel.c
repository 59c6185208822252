/* fakecuda: modules and kernels. A test registers C functions as kernels
 * (fakecuda_register_kernel); any loaded module finds them by name, so the
 * same test can load real PTX on a GPU and C functions here. */
#include <stdlib.h>
#include <string.h>

#include "tests/fakecuda/internal.h"

#define MAX_KERNELS 128

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct CUfunc_st kernels[MAX_KERNELS]; /* entries never move: CUfunction points here */
static unsigned nkernels;

struct CUmod_st {
    uint32_t magic;
};

FC_EXPORT int fakecuda_register_kernel(const char *name, fakecuda_kernel_fn fn,
                                       unsigned nparams, const size_t *param_sizes)
{
    if (!name || !fn || nparams > FAKECUDA_MAX_PARAMS || strlen(name) >= sizeof kernels[0].name)
        return -1;
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
            off = (off + align - 1) & ~(align - 1);
            k->size[i] = sz;
            k->offset[i] = off;
            off += sz;
        }
    }
    pthread_mutex_unlock(&lock);
    return k ? 0 : -1;
}

static CUresult module_new(CUmodule *m)
{
    struct CUctx_st *c;
    CUresult r = fc_current_ctx(&c);
    if (r != CUDA_SUCCESS)
        return r;
    if (!m)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUmod_st *mod = malloc(sizeof *mod);
    if (!mod)
        return CUDA_ERROR_OUT_OF_MEMORY;
    mod->magic = FC_MAGIC_MODULE;
    *m = mod;
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    FC_FAULT(cuModuleLoadData);
    if (!image)
        return CUDA_ERROR_INVALID_VALUE;
    return module_new(module);
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
    return module_new(module);
}

FC_EXPORT CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
    FC_FAULT(cuModuleLoad);
    if (!fname)
        return CUDA_ERROR_INVALID_VALUE;
    return module_new(module);
}

FC_EXPORT CUresult cuModuleUnload(CUmodule m)
{
    FC_FAULT(cuModuleUnload);
    if (!m || m->magic != FC_MAGIC_MODULE)
        return CUDA_ERROR_INVALID_HANDLE;
    m->magic = 0;
    free(m);
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
    pthread_mutex_lock(&lock);
    struct CUfunc_st *k = NULL;
    for (unsigned i = 0; i < nkernels && !k; i++)
        if (strcmp(kernels[i].name, name) == 0)
            k = &kernels[i];
    pthread_mutex_unlock(&lock);
    if (!k)
        return CUDA_ERROR_NOT_FOUND;
    *hfunc = k;
    return CUDA_SUCCESS;
}

static bool func_valid(CUfunction f)
{
    return f >= &kernels[0] && f < &kernels[MAX_KERNELS] && f->magic == FC_MAGIC_FUNC;
}

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

/* A launch owns a copy of its arguments: the driver reads kernelParams at
 * launch time, and the caller may reuse them at once. */
struct launch {
    fakecuda_kernel_fn fn;
    fakecuda_dim3 grid, block;
    void *params[FAKECUDA_MAX_PARAMS];
    unsigned char buf[];
};

static void run_launch(void *arg)
{
    struct launch *l = arg;
    l->fn(l->grid, l->block, l->params);
    free(l);
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

static CUresult launch(CUfunction f, fakecuda_dim3 grid, fakecuda_dim3 block, CUstream h,
                       void **params, void **extra, bool ptds)
{
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptds, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (!func_valid(f))
        return CUDA_ERROR_INVALID_HANDLE;
    if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z ||
        (size_t)block.x * block.y * block.z > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    size_t total = f->nparams ? f->offset[f->nparams - 1] + f->size[f->nparams - 1] : 0;
    const unsigned char *packed = NULL;
    size_t packed_len = 0;
    if (!params && extra) {
        if ((r = extra_buffer(extra, &packed, &packed_len)) != CUDA_SUCCESS)
            return r;
        if (packed_len < total)
            return CUDA_ERROR_INVALID_VALUE;
    } else if (!params && f->nparams) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct launch *l = malloc(sizeof *l + total);
    if (!l)
        return CUDA_ERROR_OUT_OF_MEMORY;
    l->fn = f->fn;
    l->grid = grid;
    l->block = block;
    for (unsigned i = 0; i < f->nparams; i++) {
        const void *src = packed ? packed + f->offset[i] : params[i];
        memcpy(l->buf + f->offset[i], src, f->size[i]);
        l->params[i] = l->buf + f->offset[i];
    }
    fc_stream_enqueue(s, run_launch, l, NULL);
    return CUDA_SUCCESS;
}

#define DIM(x, y, z) ((fakecuda_dim3){(x), (y), (z)})

FC_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                  unsigned by, unsigned bz, unsigned shmem, CUstream h, void **params,
                                  void **extra)
{
    FC_FAULT(cuLaunchKernel);
    (void)shmem;
    return launch(f, DIM(gx, gy, gz), DIM(bx, by, bz), h, params, extra, false);
}

FC_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                       unsigned by, unsigned bz, unsigned shmem, CUstream h,
                                       void **params, void **extra)
{
    FC_FAULT(cuLaunchKernel);
    (void)shmem;
    return launch(f, DIM(gx, gy, gz), DIM(bx, by, bz), h, params, extra, true);
}

/* A cooperative launch runs like any other here: fakecuda runs the whole
 * grid in one call, so its blocks can always synchronize. */
FC_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                             unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                             CUstream h, void **params)
{
    FC_FAULT(cuLaunchCooperativeKernel);
    (void)shmem;
    return launch(f, DIM(gx, gy, gz), DIM(bx, by, bz), h, params, NULL, false);
}

FC_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
                                                  unsigned gz, unsigned bx, unsigned by,
                                                  unsigned bz, unsigned shmem, CUstream h,
                                                  void **params)
{
    FC_FAULT(cuLaunchCooperativeKernel);
    (void)shmem;
    return launch(f, DIM(gx, gy, gz), DIM(bx, by, bz), h, params, NULL, true);
}

static CUresult launch_ex(const CUlaunchConfig *c, CUfunction f, void **params, void **extra, bool ptds)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    return launch(f, DIM(c->gridDimX, c->gridDimY, c->gridDimZ),
                  DIM(c->blockDimX, c->blockDimY, c->blockDimZ), c->hStream, params, extra, ptds);
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
