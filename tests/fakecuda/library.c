/* fakecuda: libraries (CUlibrary) and their context-less kernels (CUkernel):
 * how the CUDA runtime from 12.0 loads its fatbins and launches kernels
 * (cuLaunchKernel with a CUkernel cast to CUfunction), so how PyTorch and
 * JAX reach the driver. A library loads from whatever a module loads from;
 * its kernels are the registered ones, found by name, as for modules.
 * Unloading a library makes its kernel handles unknown. Attributes that a
 * program may set (the dynamic shared memory limit, the carveout) are kept
 * per kernel and answered back, by CUkernel and CUfunction alike; the
 * cuFunc* calls take a CUfunction only (the driver documents the cast
 * CUkernel for launches and occupancy queries). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fakecuda/internal.h"

struct CUkern_st {
    uint32_t magic;
    struct CUfunc_st *fn;
    struct CUlib_st *lib;
    struct CUkern_st *next;
};

struct CUlib_st {
    uint32_t magic;
    CUmodule module;           /* made on first cuLibraryGetModule */
    struct CUkern_st *kernels; /* handles given out, one per name */
    struct CUlib_st *next;
};

/* What a program set on a function (cuFuncSetAttribute, cuKernelSetAttribute). */
struct settings {
    struct CUfunc_st *fn;
    int max_dynamic_shared;
    int carveout;
    struct settings *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct CUlib_st *libraries;
static struct settings *settings;

/* Under lock. */
static bool library_known(struct CUlib_st *l)
{
    for (struct CUlib_st *x = libraries; x; x = x->next)
        if (x == l)
            return true;
    return false;
}

/* Under lock: the live kernel k, or NULL. */
static struct CUkern_st *kernel_known(CUkernel k)
{
    for (struct CUlib_st *l = libraries; l; l = l->next)
        for (struct CUkern_st *x = l->kernels; x; x = x->next)
            if (x == k)
                return x;
    return NULL;
}

struct CUfunc_st *fc_kernel_func(CUkernel k)
{
    pthread_mutex_lock(&lock);
    struct CUkern_st *x = kernel_known(k);
    struct CUfunc_st *fn = x ? x->fn : NULL;
    pthread_mutex_unlock(&lock);
    return fn;
}

/* Under lock: the handle for fn in l, made on first use. */
static struct CUkern_st *kernel_of(struct CUlib_st *l, struct CUfunc_st *fn)
{
    for (struct CUkern_st *x = l->kernels; x; x = x->next)
        if (x->fn == fn)
            return x;
    struct CUkern_st *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->magic = FC_MAGIC_KERNEL;
    x->fn = fn;
    x->lib = l;
    x->next = l->kernels;
    l->kernels = x;
    return x;
}

static CUresult load(CUlibrary *library, bool have_code, unsigned njit, void **jit_values,
                     unsigned nlib, void **lib_values)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!library || !have_code || (njit && !jit_values) || (nlib && !lib_values))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUlib_st *l = calloc(1, sizeof *l);
    if (!l)
        return CUDA_ERROR_OUT_OF_MEMORY;
    l->magic = FC_MAGIC_LIBRARY;
    pthread_mutex_lock(&lock);
    l->next = libraries;
    libraries = l;
    pthread_mutex_unlock(&lock);
    *library = l;
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                                     void **jitOptionsValues, unsigned int numJitOptions,
                                     CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                     unsigned int numLibraryOptions)
{
    FC_FAULT(cuLibraryLoadData);
    (void)jitOptions;
    (void)libraryOptions;
    return load(library, code != NULL, numJitOptions, jitOptionsValues, numLibraryOptions,
                libraryOptionValues);
}

FC_EXPORT CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
                                         CUjit_option *jitOptions, void **jitOptionsValues,
                                         unsigned int numJitOptions, CUlibraryOption *libraryOptions,
                                         void **libraryOptionValues, unsigned int numLibraryOptions)
{
    FC_FAULT(cuLibraryLoadFromFile);
    (void)jitOptions;
    (void)libraryOptions;
    if (fileName && access(fileName, R_OK) != 0 && fc_initialized() == CUDA_SUCCESS)
        return CUDA_ERROR_FILE_NOT_FOUND;
    return load(library, fileName != NULL, numJitOptions, jitOptionsValues, numLibraryOptions,
                libraryOptionValues);
}

FC_EXPORT CUresult cuLibraryUnload(CUlibrary library)
{
    FC_FAULT(cuLibraryUnload);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&lock);
    bool known = library_known(library);
    pthread_mutex_unlock(&lock);
    if (!known)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((r = fc_capture_unsafe_call()) != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&lock);
    for (struct CUlib_st **pp = &libraries; *pp; pp = &(*pp)->next)
        if (*pp == library) {
            *pp = library->next;
            break;
        }
    pthread_mutex_unlock(&lock);
    for (struct CUkern_st *x = library->kernels, *next; x; x = next) {
        next = x->next;
        x->magic = 0;
        free(x);
    }
    if (library->module)
        fc_module_free(library->module);
    library->magic = 0;
    free(library);
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
    FC_FAULT(cuLibraryGetKernel);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!pKernel || !name)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUfunc_st *fn = fc_kernel_find(name);
    pthread_mutex_lock(&lock);
    struct CUkern_st *k = NULL;
    if (!library_known(library))
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (!fn)
        r = CUDA_ERROR_NOT_FOUND;
    else if (!(k = kernel_of(library, fn)))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&lock);
    if (r == CUDA_SUCCESS)
        *pKernel = k;
    return r;
}

FC_EXPORT CUresult cuLibraryGetKernelCount(unsigned int *count, CUlibrary lib)
{
    FC_FAULT(cuLibraryGetKernelCount);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    bool known = library_known(lib);
    pthread_mutex_unlock(&lock);
    if (!known)
        return CUDA_ERROR_INVALID_HANDLE;
    *count = fc_kernel_count();
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int numKernels, CUlibrary lib)
{
    FC_FAULT(cuLibraryEnumerateKernels);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!kernels || numKernels == 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    if (!library_known(lib))
        r = CUDA_ERROR_INVALID_HANDLE;
    for (unsigned i = 0; i < numKernels && r == CUDA_SUCCESS; i++) {
        struct CUfunc_st *fn = fc_kernel_at(i);
        kernels[i] = NULL;
        if (fn && !(kernels[i] = kernel_of(lib, fn)))
            r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

FC_EXPORT CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
    FC_FAULT(cuLibraryGetModule);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!pMod)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    if (!library_known(library))
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (!library->module)
        r = fc_module_new(&library->module); /* in the current context */
    if (r == CUDA_SUCCESS)
        *pMod = library->module;
    pthread_mutex_unlock(&lock);
    return r;
}

/* Under lock: the kernel's function, or an error for a bad handle. */
static CUresult kernel_fn(CUkernel k, struct CUfunc_st **fn)
{
    struct CUkern_st *x = kernel_known(k);
    *fn = x ? x->fn : NULL;
    return x ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

FC_EXPORT CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    FC_FAULT(cuKernelGetFunction);
    struct CUctx_st *c; /* the function is the current context's */
    CUresult r = fc_current_ctx(&c);
    if (r != CUDA_SUCCESS)
        return r;
    if (!pFunc)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUfunc_st *fn;
    pthread_mutex_lock(&lock);
    r = kernel_fn(kernel, &fn);
    pthread_mutex_unlock(&lock);
    if (r == CUDA_SUCCESS)
        *pFunc = fn;
    return r;
}

FC_EXPORT CUresult cuKernelGetLibrary(CUlibrary *pLib, CUkernel kernel)
{
    FC_FAULT(cuKernelGetLibrary);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!pLib)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    struct CUkern_st *x = kernel_known(kernel);
    if (x)
        *pLib = x->lib;
    pthread_mutex_unlock(&lock);
    return x ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

FC_EXPORT CUresult cuKernelGetName(const char **name, CUkernel hfunc)
{
    FC_FAULT(cuKernelGetName);
    if (!name || !hfunc)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUfunc_st *fn;
    pthread_mutex_lock(&lock);
    CUresult r = kernel_fn(hfunc, &fn);
    pthread_mutex_unlock(&lock);
    if (r == CUDA_SUCCESS)
        *name = fn->name;
    return r;
}

FC_EXPORT CUresult cuKernelGetParamInfo(CUkernel kernel, size_t index, size_t *offset, size_t *size)
{
    FC_FAULT(cuKernelGetParamInfo);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    struct CUfunc_st *fn;
    pthread_mutex_lock(&lock);
    r = kernel_fn(kernel, &fn);
    pthread_mutex_unlock(&lock);
    if (r != CUDA_SUCCESS)
        return r;
    if (index >= fn->nparams || !offset) /* only the size is optional */
        return CUDA_ERROR_INVALID_VALUE;
    *offset = fn->offset[index];
    if (size)
        *size = fn->size[index];
    return CUDA_SUCCESS;
}

/* ---- attributes ----------------------------------------------------------- */

/* Under lock: what was set on fn, made on first use. */
static struct settings *settings_of(struct CUfunc_st *fn)
{
    for (struct settings *x = settings; x; x = x->next)
        if (x->fn == fn)
            return x;
    struct settings *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->fn = fn;
    x->carveout = -1; /* no preference */
    x->next = settings;
    settings = x;
    return x;
}

/* fakecuda devices have 228 KiB of shared memory per multiprocessor, an
 * H100's, of which a block may opt in to 227 KiB. */
#define MAX_OPTIN_SHARED (227 * 1024)

static CUresult get_attribute(int *pi, CUfunction_attribute a, struct CUfunc_st *fn)
{
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    struct settings *x = settings_of(fn);
    int dyn = x ? x->max_dynamic_shared : 0, carve = x ? x->carveout : -1;
    pthread_mutex_unlock(&lock);
    switch (a) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *pi = 0; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = 32; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: *pi = 75; break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = 90; break;
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA: *pi = 0; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = dyn; break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *pi = carve; break;
    default:
        if ((int)a < 0 || a >= CU_FUNC_ATTRIBUTE_MAX)
            return CUDA_ERROR_INVALID_VALUE;
        *pi = 0;
    }
    return CUDA_SUCCESS;
}

static CUresult set_attribute(CUfunction_attribute a, int v, struct CUfunc_st *fn)
{
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    struct settings *x = settings_of(fn);
    if (!x)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    else if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES && v >= 0 && v <= MAX_OPTIN_SHARED)
        x->max_dynamic_shared = v;
    else if (a == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT && v >= -1 && v <= 100)
        x->carveout = v;
    else
        r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&lock);
    return r;
}

FC_EXPORT CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev)
{
    FC_FAULT(cuKernelGetAttribute);
    CUresult r = fc_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    struct CUfunc_st *fn;
    pthread_mutex_lock(&lock);
    r = kernel_fn(kernel, &fn);
    pthread_mutex_unlock(&lock);
    return r == CUDA_SUCCESS ? get_attribute(pi, attrib, fn) : r;
}

FC_EXPORT CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev)
{
    FC_FAULT(cuKernelSetAttribute);
    CUresult r = fc_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    struct CUfunc_st *fn;
    pthread_mutex_lock(&lock);
    r = kernel_fn(kernel, &fn);
    pthread_mutex_unlock(&lock);
    return r == CUDA_SUCCESS ? set_attribute(attrib, val, fn) : r;
}

FC_EXPORT CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    FC_FAULT(cuFuncGetAttribute);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    /* The cast CUkernel is documented for launches and occupancy only. */
    return fc_func_valid(hfunc) ? get_attribute(pi, attrib, hfunc) : CUDA_ERROR_INVALID_HANDLE;
}

FC_EXPORT CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
    FC_FAULT(cuFuncSetAttribute);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    return fc_func_valid(hfunc) ? set_attribute(attrib, value, hfunc) : CUDA_ERROR_INVALID_HANDLE;
}
