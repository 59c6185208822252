/* Declarations generated from hooks.def: the handlers (typed as the driver
 * function they stand for, so the compiler checks every signature against
 * cuda.h), the table of real driver functions, and the hook descriptors. */
#ifndef SPILLWAY_SHIM_HOOKS_H
#define SPILLWAY_SHIM_HOOKS_H
#include <cuda.h>

/* cuda.h maps cuGetProcAddress to cuGetProcAddress_v2 and declares the
 * CUDA 11.3 ABI only for its own build; the table needs both. */
#undef cuGetProcAddress
CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);

#define SPW_PT_IF_NONE(...)
#define SPW_PT_IF_PTSZ(...) __VA_ARGS__
#define SPW_PT_IF_PTDS(...) __VA_ARGS__

/* Handlers have default visibility so that the linker script can alias the
 * exported names to them; the version script keeps the handlers themselves
 * local. */
#define SPW_HANDLER __attribute__((visibility("default")))

#define SPW_HOOK(base, symbol, version, handler, pt) \
    SPW_HANDLER extern __typeof__(symbol) handler;   \
    SPW_PT_IF_##pt(SPW_HANDLER extern __typeof__(symbol) handler##_pt;)
#include "shim/hooks.def"
#undef SPW_HOOK

/* The real driver's functions, one per handler, filled once when the driver
 * is loaded (driver.c owns it) and read-only afterwards. A NULL entry means
 * this driver does not export the symbol. */
struct spw_real {
#define SPW_HOOK(base, symbol, version, handler, pt) \
    __typeof__(symbol) *handler;                     \
    SPW_PT_IF_##pt(__typeof__(symbol) *handler##_pt;)
#include "shim/hooks.def"
#undef SPW_HOOK
};
extern struct spw_real spw_real;

/* One row of hooks.def, for lookups by name. */
struct spw_hook {
    const char *base;      /* cuGetProcAddress name */
    const char *symbol;    /* versioned ABI symbol */
    int version;           /* first cudaVersion meaning this symbol */
    const char *pt_suffix; /* "_ptsz", "_ptds" or NULL */
    void *handler, *handler_pt;
    void **real, **real_pt; /* into spw_real */
};
extern const struct spw_hook spw_hooks[];
extern const unsigned spw_hooks_count;
#endif
