/* What a refused allocation is told (refusals.h). Reached only when an
 * allocation is refused: the first refusal on a device is a warning,
 * later ones debug (account.c decides the level): one line at either
 * level, its sizes as size_text.h writes them. */
#include "shim/refusals.h"

#include "shim/limits.h"
#include "shim/size_text.h"

#include <stdio.h>

static const char *later_at_debug(enum spw_log_level level)
{
    return level == SPW_LOG_WARN ? "; later refusals are logged at debug level" : "";
}

void spw_refusal_say_count(enum spw_log_level level, int dev, sw_oom_reason why, uint64_t bytes,
                           uint64_t used, uint64_t cap, const char *what)
{
    if (!spw_log_enabled(level))
        return;
    char b[SPW_SIZE_TEXT_MAX], c[SPW_SIZE_TEXT_MAX], u[SPW_SIZE_TEXT_MAX];
    spw_log(level, "device %d: out of memory: %s refused (%s): %s %s %s, with %s in use%s", dev,
            spw_size_text(b, sizeof b, bytes), sw_oom_reason_name(why),
            why == SW_OOM_TOO_LARGE ? "one allocation larger than" : "it would pass", what,
            spw_size_text(c, sizeof c, cap), spw_size_text(u, sizeof u, used),
            later_at_debug(level));
}

/* Why the pool said no, in words a user can act on. */
static void pool_refusal_text(sw_oom_reason why, int dev, char *buf, size_t len)
{
    char l[SPW_SIZE_TEXT_MAX];
    spw_size_text(l, sizeof l, spw_limit(dev));
    switch (why) {
    case SW_OOM_HOST_LIMIT:
        snprintf(buf, len, "spill found no pinned host memory left within SPILLWAY_HOST_LIMIT");
        break;
    case SW_OOM_ADDRESS:
        snprintf(buf, len, "the driver refused more virtual address space");
        break;
    case SW_OOM_TOO_LARGE:
        snprintf(buf, len,
                 "one allocation larger than the limit of %s (with spill: than the "
                 "limit and SPILLWAY_HOST_LIMIT together)",
                 l);
        break;
    case SW_OOM_DRIVER:
        snprintf(buf, len, "the driver has no memory left to give (the device or the host is "
                           "full: other processes?)");
        break;
    default:
        snprintf(buf, len, "no device memory left within the limit of %s", l);
        break;
    }
}

void spw_refusal_say_pool(enum spw_log_level level, int dev, sw_oom_reason why, uint64_t bytes,
                          uint64_t used)
{
    if (!spw_log_enabled(level))
        return;
    char text[192], b[SPW_SIZE_TEXT_MAX], u[SPW_SIZE_TEXT_MAX];
    pool_refusal_text(why, dev, text, sizeof text);
    spw_log(level, "device %d: out of memory: %s refused (%s): %s, with %s in use%s", dev,
            spw_size_text(b, sizeof b, bytes), sw_oom_reason_name(why), text,
            spw_size_text(u, sizeof u, used), later_at_debug(level));
}
