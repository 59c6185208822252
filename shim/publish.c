/* Owner of the stats writer. A failure to publish is logged and the
 * program runs on without stats: the limit does not depend on them. */
#include "shim/publish.h"

#include "shim/account.h"
#include "shim/config.h"
#include "shim/driver.h"
#include "shim/log.h"
#include "stats/writer.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t publish_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int publish_done;
static struct spw_stats_writer *writer;

/* The options, then each device's effective limit. */
static void format_config(const struct spw_options *o, int devices, char *buf, size_t len)
{
    size_t used = (size_t)spw_options_format(o, buf, len);
    for (int d = 0; d < devices && used < len; d++)
        used += (size_t)snprintf(buf + used, len - used, "device.%d.limit=%llu\n", d,
                                 (unsigned long long)spw_limit(d));
}

/* Returns 1 when done (published, disabled or failed for good), 0 to try
 * again at the next allocation. */
static int open_segment(void)
{
    const struct spw_options *o = spw_config();
    if (!o->stats || o->disable)
        return 1;
    int n = spw_driver_device_count();
    if (n <= 0)
        return 0;
    if (n > (int)SPW_STATS_MAX_DEVICES)
        n = (int)SPW_STATS_MAX_DEVICES;
    static char config[SPW_STATS_CONFIG_LEN];
    format_config(o, n, config, sizeof config);
    struct spw_stats_params p = {
        .dir = o->stats_dir, .device_count = (uint32_t)n, .cmdline = NULL, .config = config};
    char err[256];
    if (spw_stats_open(&writer, &p, err, sizeof err)) {
        spw_warn("stats: %s; running without stats", err);
        return 1;
    }
    spw_account_publish_to(writer);
    spw_info("stats: publishing to %s", spw_stats_path(writer));
    return 1;
}

void spw_publish_ensure(void)
{
    if (atomic_load_explicit(&publish_done, memory_order_acquire))
        return;
    pthread_mutex_lock(&publish_lock);
    if (!atomic_load_explicit(&publish_done, memory_order_relaxed) && open_segment())
        atomic_store_explicit(&publish_done, 1, memory_order_release);
    pthread_mutex_unlock(&publish_lock);
}

int spw_publish_settled(void)
{
    return atomic_load_explicit(&publish_done, memory_order_acquire);
}
