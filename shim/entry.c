/* dlsym, the way a program finds driver functions by name without the
 * driver's help: exported; what it does not hook passes through untouched
 * (cuGetProcAddress, the driver's way, is hooks.c's). */
#include "shim/handler.h"
#include "shim/log.h"

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
        spw_debug("dlsym(\"%s\"): %s", name, handler ? "spillway's handler" : "the driver's own");
        if (handler)
            return handler;
    }
    return real(handle, name);
}
