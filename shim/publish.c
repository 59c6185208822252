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
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t publish_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int publish_done;
static struct spw_stats_writer *writer;

/* Each device's effective limit, then the options: the limits first, so
 * that a text too long for the segment (long string options: the writer
 * cuts it and marks the cut) loses the least. A malloc'd text, or NULL
 * out of memory. */
static char *format_config(const struct spw_options *o, int devices)
{
    char probe[1];
    size_t opts = (size_t)spw_options_format(o, probe, sizeof probe);
    size_t len = opts + (size_t)devices * 48 + 1, used = 0;
    char *buf = malloc(len);
    if (!buf)
        return NULL;
    for (int d = 0; d < devices; d++)
        used += (size_t)snprintf(buf + used, len - used, "device.%d.limit=%llu\n", d,
                                 (unsigned long long)spw_limit(d));
    spw_options_format(o, buf + used, len - used);
    return buf;
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
    char *config = format_config(o, n);
    if (!config) {
        spw_warn("stats: out of memory for the config text; running without stats");
        return 1;
    }
    struct spw_stats_params p = {
        .dir = o->stats_dir, .device_count = (uint32_t)n, .cmdline = NULL, .config = config};
    char err[256];
    int rc = spw_stats_open(&writer, &p, err, sizeof err);
    free(config);
    if (rc) {
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
