/* The ways a program finds driver functions by name: dlsym and
 * cuGetProcAddress (both ABIs). Exported; everything they do not hook
 * passes through untouched. */
#include "shim/fork.h"
#include "shim/handler.h"
#include "shim/resolve.h"

#include <dlfcn.h>

/* The pass-through must be a tail call: glibc's dlsym finds RTLD_NEXT's
 * "next" from its return address, which must be the program's, not
 * spillway's. */
__attribute__((visibility("default"), optimize("optimize-sibling-calls"))) SPW_EARLY void *
dlsym(void *handle, const char *name)
{
    spw_dlsym_fn real = spw_real_dlsym();
    if (spw_is_driver_name(name) && !spw_driver_owns(__builtin_return_address(0))) {
        void *handler = spw_handler_for_symbol(name);
        if (handler)
            return handler;
    }
    return real(handle, name);
}

/* In a forked child the driver answers lookups itself, and its own
 * functions are handed out (spw_handler_for_proc: spillway stands aside
 * there, fork.h). */
#define SPW_LOOKUP_OR_RETURN(var, handler)                      \
    __typeof__(spw_real.handler) var = SPW_LOOKUP_REAL(handler); \
    if (!var)                                                   \
        return CUDA_ERROR_NOT_INITIALIZED

CUresult spw_h_get_proc_address(const char *symbol, void **pfn, int cudaVersion,
                                cuuint64_t flags)
{
    SPW_LOOKUP_OR_RETURN(real, spw_h_get_proc_address);
    CUresult r = real(symbol, pfn, cudaVersion, flags);
    if (r == CUDA_SUCCESS && pfn)
        *pfn = spw_handler_for_proc(symbol, *pfn, cudaVersion, flags);
    return r;
}

CUresult spw_h_get_proc_address_v2(const char *symbol, void **pfn, int cudaVersion,
                                   cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
    SPW_LOOKUP_OR_RETURN(real, spw_h_get_proc_address_v2);
    CUresult r = real(symbol, pfn, cudaVersion, flags, symbolStatus);
    if (r == CUDA_SUCCESS && pfn)
        *pfn = spw_handler_for_proc(symbol, *pfn, cudaVersion, flags);
    return r;
}
