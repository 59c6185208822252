/* The hook table, generated from hooks.def, and the lookups by name over
 * it: what dlsym (entry.c) and cuGetProcAddress (below) hand out. The
 * table is small (tens of rows) and the lookups run when a program
 * resolves a name, not when it calls it. cuGetProcAddress's handlers are
 * here because they are rows of the table that search the table. */
#include "shim/hooks.h"

#include "shim/config.h"
#include "shim/driver.h"
#include "shim/fork.h"
#include "shim/handler.h"
#include "shim/log.h"

#include <stddef.h>
#include <string.h>

const struct spw_hook spw_hooks[] = {
#define SPW_HOOK(base, symbol, version, handler, pt)                                   \
    {#base, #symbol, version, SPW_PT_SUFFIX_##pt, (void *)handler,                     \
     SPW_PT_OR_NULL_##pt((void *)handler##_pt), (void **)&spw_real.handler,            \
     SPW_PT_OR_NULL_##pt((void **)&spw_real.handler##_pt)},
#include "shim/hooks.def"
#undef SPW_HOOK
};
const unsigned spw_hooks_count = sizeof spw_hooks / sizeof spw_hooks[0];

/* Handlers are handed out only when they have something to forward to. */
static void *usable(void *handler, void **real)
{
    return real && *real ? handler : NULL;
}

SPW_EARLY int spw_is_driver_name(const char *name)
{
    return name && name[0] == 'c' && name[1] == 'u';
}

void *spw_handler_for_symbol(const char *name)
{
    if (!spw_is_driver_name(name))
        return NULL;
    for (unsigned i = 0; i < spw_hooks_count; i++) {
        const struct spw_hook *h = &spw_hooks[i];
        size_t n = strlen(h->symbol);
        if (strncmp(name, h->symbol, n) != 0)
            continue;
        int base = name[n] == '\0';
        int pt = !base && h->pt_suffix && strcmp(name + n, h->pt_suffix) == 0;
        if (!base && !pt)
            continue;
        if (spw_disabled() || !spw_driver_ready())
            return NULL;
        return base ? usable(h->handler, h->real) : usable(h->handler_pt, h->real_pt);
    }
    return NULL;
}

static int is_handler(const void *p)
{
    for (unsigned i = 0; i < spw_hooks_count; i++)
        if (p == spw_hooks[i].handler || (p && p == spw_hooks[i].handler_pt))
            return 1;
    return 0;
}

/* The hook whose driver function real is (*pt: its per-thread variant),
 * NULL when real is none of the exports behind a handler. */
static const struct spw_hook *hook_of_real(const void *real, int *pt)
{
    for (unsigned i = 0; i < spw_hooks_count; i++) {
        const struct spw_hook *h = &spw_hooks[i];
        if (real == *h->real || (h->real_pt && real == *h->real_pt)) {
            *pt = real != *h->real;
            return h;
        }
    }
    return NULL;
}

/* The driver's own answer for (symbol, version, flags), NULL if none. */
static void *driver_answer(const char *symbol, int version, cuuint64_t flags)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult st;
    if (spw_real.spw_h_get_proc_address_v2) {
        if (spw_real.spw_h_get_proc_address_v2(symbol, &fn, version, flags, &st) != CUDA_SUCCESS)
            fn = NULL;
    } else if (spw_real.spw_h_get_proc_address &&
               spw_real.spw_h_get_proc_address(symbol, &fn, version, flags) != CUDA_SUCCESS) {
        fn = NULL;
    }
    return fn;
}

void *spw_handler_for_proc(const char *symbol, void *real, int version, cuuint64_t flags)
{
    if (!symbol || !real || symbol[0] != 'c' || symbol[1] != 'u' || spw_disabled() ||
        !spw_driver_ready() || is_handler(real))
        return real;
    /* The driver knows which ABI (symbol, version, flags) means: when its
     * answer is one of the functions behind a handler, that handler is it,
     * whatever name was asked ("cuGraphInstantiate" at 12000 is
     * cuGraphInstantiateWithFlags). */
    int pt;
    const struct spw_hook *exported = hook_of_real(real, &pt);
    if (exported)
        return pt ? exported->handler_pt : exported->handler;
    const struct spw_hook *best = NULL;
    for (unsigned i = 0; i < spw_hooks_count; i++) {
        const struct spw_hook *h = &spw_hooks[i];
        if (strcmp(symbol, h->base) == 0 && version >= h->version &&
            (!best || h->version > best->version))
            best = h;
    }
    /* A driver whose cuGetProcAddress answers with other addresses than its
     * exported symbols: map (symbol, version, flags) the documented way,
     * but only if the driver gives the same function at the table's
     * version. A newer ABI than the table knows (a driver and runtime newer
     * than spillway) is another function there, and stays the driver's: a
     * handler of the old ABI would misread its arguments. */
    if (!best || driver_answer(symbol, best->version, flags) != real)
        return real;
    if (best->pt_suffix && (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
        return usable(best->handler_pt, best->real_pt) ? best->handler_pt : real;
    return usable(best->handler, best->real) ? best->handler : real;
}

/* In a forked child the driver answers lookups itself, and its own
 * functions are handed out (spw_handler_for_proc: spillway stands aside
 * there, fork.h). */
#define SPW_LOOKUP_OR_RETURN(var, handler)                      \
    __typeof__(spw_real.handler) var = SPW_LOOKUP_REAL(handler); \
    if (!var)                                                   \
        return CUDA_ERROR_NOT_INITIALIZED

/* What a lookup hands out, and with SPILLWAY_LOG=debug which names were
 * asked for and who answers them: a launch that goes around the work gate
 * shows there as a name the runtime asked for that spillway left to the
 * driver, or as none asked at all. */
static void *answer(const char *symbol, void *real, int version, cuuint64_t flags)
{
    void *h = spw_handler_for_proc(symbol, real, version, flags);
    int pt;
    if (spw_log_enabled(SPW_LOG_DEBUG))
        spw_debug("cuGetProcAddress(\"%s\", %d, %#llx): %s", symbol ? symbol : "(null)", version,
                  (unsigned long long)flags,
                  h == real                 ? "the driver's own"
                  : hook_of_real(real, &pt) ? "spillway's handler"
                                            : "spillway's handler, by name and version (the driver "
                                              "answered an address it does not export)");
    return h;
}

CUresult spw_h_get_proc_address(const char *symbol, void **pfn, int cudaVersion,
                                cuuint64_t flags)
{
    SPW_LOOKUP_OR_RETURN(real, spw_h_get_proc_address);
    CUresult r = real(symbol, pfn, cudaVersion, flags);
    if (r == CUDA_SUCCESS && pfn)
        *pfn = answer(symbol, *pfn, cudaVersion, flags);
    return r;
}

CUresult spw_h_get_proc_address_v2(const char *symbol, void **pfn, int cudaVersion,
                                   cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
    SPW_LOOKUP_OR_RETURN(real, spw_h_get_proc_address_v2);
    CUresult r = real(symbol, pfn, cudaVersion, flags, symbolStatus);
    if (r == CUDA_SUCCESS && pfn)
        *pfn = answer(symbol, *pfn, cudaVersion, flags);
    return r;
}
