/* What a refused allocation is told (refusals.h). Reached only when an
 * allocation is refused: the first refusal on a device is a warning,
 * later ones debug (account.c decides the level). */
#include "shim/refusals.h"

#include "shim/limits.h"

#include <stdio.h>

static const char *later_at_debug(enum spw_log_level level)
{
    return level == SPW_LOG_WARN ? "; later refusals are logged at debug level" : "";
}

void spw_refusal_say_count(enum spw_log_level level, int dev, sw_oom_reason why, uint64_t bytes,
                           uint64_t used, uint64_t cap, const char *what)
{
    spw_log(level,
            "device %d: out of memory: %llu bytes refused (%s): %s %s %llu bytes "
            "(%llu in use)%s",
            dev, (unsigned long long)bytes, sw_oom_reason_name(why),
            why == SW_OOM_TOO_LARGE ? "one allocation larger than" : "it would pass", what,
            (unsigned long long)cap, (unsigned long long)used, later_at_debug(level));
}

/* Why the pool said no, in words a user can act on. */
static void pool_refusal_text(sw_oom_reason why, int dev, char *buf, size_t len)
{
    uint64_t limit = spw_limit(dev);
    switch (why) {
    case SW_OOM_HOST_LIMIT:
        snprintf(buf, len, "spill found no pinned host memory left within SPILLWAY_HOST_LIMIT");
        break;
    case SW_OOM_ADDRESS:
        snprintf(buf, len, "the driver refused more virtual address space");
        break;
    case SW_OOM_TOO_LARGE:
        snprintf(buf, len,
                 "one allocation larger than the limit of %llu bytes (with spill: than the "
                 "limit and SPILLWAY_HOST_LIMIT together)",
                 (unsigned long long)limit);
        break;
    case SW_OOM_DRIVER:
        snprintf(buf, len, "the driver has no memory left to give (the device or the host is "
                           "full: other processes?)");
        break;
    default:
        snprintf(buf, len, "no device memory left within the limit of %llu bytes",
                 (unsigned long long)limit);
        break;
    }
}

void spw_refusal_say_pool(enum spw_log_level level, int dev, sw_oom_reason why, uint64_t bytes,
                          uint64_t used)
{
    char text[160];
    pool_refusal_text(why, dev, text, sizeof text);
    spw_log(level, "device %d: out of memory: %llu bytes refused (%s): %s (%llu bytes in use)%s",
            dev, (unsigned long long)bytes, sw_oom_reason_name(why), text,
            (unsigned long long)used, later_at_debug(level));
}
