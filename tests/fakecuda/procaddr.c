/* fakecuda: cuGetProcAddress as the CUDA runtime uses it. The runtime asks
 * for "cuGetProcAddress" itself first, then for base names plus the CUDA
 * version it was built for; CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
 * selects the _ptds/_ptsz variants. Resolved from a static table, never
 * through dlsym (a preloaded shim overrides dlsym). */
#include <string.h>

#include "tests/fakecuda/internal.h"

enum variant { NONE, PTDS, PTSZ };

/* Only the addresses matter here: each symbol is bound by its linker name
 * (asm label), so cuda.h's macros and prototypes do not get in the way. */
#define FC_PROC(base, ver, sym, var) extern char fc_p_##sym[] __asm__(#sym); VARIANT_DECL_##var(fc_p_##sym, #sym)
#define VARIANT_DECL_NONE(id, name)
#define VARIANT_DECL_PTDS(id, name) extern char id##_ptds[] __asm__(name "_ptds");
#define VARIANT_DECL_PTSZ(id, name) extern char id##_ptsz[] __asm__(name "_ptsz");
#include "tests/fakecuda/procs.def"
#undef FC_PROC

#define VARIANT_PTR_NONE(id) NULL
#define VARIANT_PTR_PTDS(id) (void *)id##_ptds
#define VARIANT_PTR_PTSZ(id) (void *)id##_ptsz

static const struct proc {
    const char *base;
    int version;
    void *fn;
    void *per_thread;
} procs[] = {
#define FC_PROC(base, ver, sym, var) {#base, ver, (void *)fc_p_##sym, VARIANT_PTR_##var(fc_p_##sym)},
#include "tests/fakecuda/procs.def"
#undef FC_PROC
};

static CUresult lookup(const char *symbol, void **pfn, int version, cuuint64_t flags,
                       CUdriverProcAddressQueryResult *status)
{
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    void *future = fc_proc_future(symbol, version);
    if (future) {
        *pfn = future;
        if (status)
            *status = CU_GET_PROC_ADDRESS_SUCCESS;
        return CUDA_SUCCESS;
    }
    const struct proc *best = NULL;
    bool known = false;
    for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++) {
        /* A build emulating an older driver has no ABI newer than itself
         * (fakecuda's own is a 13.0 driver that also has some of 13.1's and
         * 13.2's). */
        if (strcmp(procs[i].base, symbol) != 0 ||
            (fc_driver_version < FC_DRIVER_VERSION && procs[i].version > fc_driver_version))
            continue;
        known = true;
        if (procs[i].version <= version && (!best || procs[i].version > best->version))
            best = &procs[i];
    }
    *pfn = NULL;
    if (status)
        *status = !known ? CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
                  : !best ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                          : CU_GET_PROC_ADDRESS_SUCCESS;
    if (!best)
        return CUDA_ERROR_NOT_FOUND;
    *pfn = fc_proc_entry((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && best->per_thread
                             ? best->per_thread : best->fn);
    return CUDA_SUCCESS;
}

/* The CUDA 11.3 ABI (no status argument); cuda.h maps the name to _v2. */
#undef cuGetProcAddress
FC_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return lookup(symbol, pfn, cudaVersion, flags, NULL);
}

FC_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                       CUdriverProcAddressQueryResult *symbolStatus)
{
    return lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}

/* Real runtimes need private tables fakecuda does not have. */
FC_EXPORT CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
    (void)pExportTableId;
    if (ppExportTable)
        *ppExportTable = NULL;
    return CUDA_ERROR_NOT_SUPPORTED;
}
