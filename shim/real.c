/* Owner of spw_real, the real driver's functions behind the handlers, and
 * of the table of its slots by exported name (hooks.h), both generated
 * from hooks.def. A leaf: the driver loader (driver.c) fills the slots
 * through this table, the handlers read them, and neither needs the other
 * for it (nor the hook table of handlers, hooks.c). */
#include "shim/hooks.h"

#include <stddef.h>

struct spw_real spw_real;

const struct spw_real_slot spw_real_slots[] = {
#define SPW_HOOK(base, symbol, version, handler, pt)                                   \
    {#symbol, SPW_PT_SUFFIX_##pt, (void **)&spw_real.handler,                          \
     SPW_PT_OR_NULL_##pt((void **)&spw_real.handler##_pt)},
#include "shim/hooks.def"
#undef SPW_HOOK
};
const unsigned spw_real_slot_count = sizeof spw_real_slots / sizeof spw_real_slots[0];
