#include "bench/selfstats.h"

#include "shim/options.h"
#include "stats/layout.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const names[SPW_C_COUNT] = {
#define SPW_X(e, n, k, h) #n,
    SPW_STATS_COUNTERS(SPW_X)
#undef SPW_X
};

static int fd = -1;
static uint32_t device_count;

/* The segment appears at the first CUDA use: retried until found. */
static int open_segment(void)
{
    if (fd >= 0)
        return 0;
    /* The directory the library under test writes to: its option's value. */
    static struct spw_options o;
    char err[256], name[64], path[PATH_MAX];
    if (!o.stats_dir[0] && spw_options_load_environ(&o, err, sizeof err) != 0)
        return -1;
    /* The writer's name for this process (a setuid program's segment is
     * named after its effective uid). */
    snprintf(name, sizeof name, SPW_STATS_NAME_FORMAT, (unsigned)geteuid(), (int)getpid());
    if (snprintf(path, sizeof path, "%s/%s", o.stats_dir, name) >= (int)sizeof path)
        return -1;
    int f = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (f < 0)
        return -1;
    struct spw_stats_header h;
    if (pread(f, &h, sizeof h, 0) != (ssize_t)sizeof h || h.magic != SPW_STATS_MAGIC ||
        h.abi_version != SPW_STATS_ABI_VERSION || h.counter_count != SPW_C_COUNT ||
        h.device_size != sizeof(struct spw_stats_device) || h.header_size != sizeof h) {
        close(f);
        return -1;
    }
    device_count = h.device_count;
    fd = f;
    return 0;
}

int selfstats_get(const char *name, unsigned dev, uint64_t *out)
{
    if (open_segment() != 0 || dev >= device_count)
        return -1;
    for (int k = 0; k < SPW_C_COUNT; k++) {
        if (strcmp(names[k], name) != 0)
            continue;
        /* The device's bytes: a laned counter is its base plus its lanes. */
        unsigned char d[sizeof(struct spw_stats_device)];
        if (pread(fd, d, sizeof d, (off_t)spw_stats_device_offset(dev)) != (ssize_t)sizeof d)
            return -1;
        *out = spw_stats_device_value(d, (enum spw_counter)k);
        return 0;
    }
    return -1;
}
