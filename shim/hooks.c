/* The hook descriptors, generated from hooks.def. */
#include "shim/hooks.h"

#include <stddef.h>

#define SPW_PT_SUFFIX_NONE NULL
#define SPW_PT_SUFFIX_PTSZ "_ptsz"
#define SPW_PT_SUFFIX_PTDS "_ptds"
#define SPW_PT_OR_NULL_NONE(x) NULL
#define SPW_PT_OR_NULL_PTSZ(x) x
#define SPW_PT_OR_NULL_PTDS(x) x

const struct spw_hook spw_hooks[] = {
#define SPW_HOOK(base, symbol, version, handler, pt)                                   \
    {#base, #symbol, version, SPW_PT_SUFFIX_##pt, (void *)handler,                     \
     SPW_PT_OR_NULL_##pt((void *)handler##_pt), (void **)&spw_real.handler,            \
     SPW_PT_OR_NULL_##pt((void **)&spw_real.handler##_pt)},
#include "shim/hooks.def"
#undef SPW_HOOK
};
const unsigned spw_hooks_count = sizeof spw_hooks / sizeof spw_hooks[0];
