/* Each device's limit, what the program is told it has and the host memory
 * spill may use for it: resolved once per device from the options and what
 * the driver says of the device, checked (a configuration that cannot be
 * honoured stops the program), and kept. Read on every reservation. */
#ifndef SPILLWAY_SHIM_LIMITS_H
#define SPILLWAY_SHIM_LIMITS_H
#include "shim/options.h"

#include <stdint.h>

/* What the limits need to know of the devices (the driver answers; asked
 * when a device's limit is first computed). */
struct spw_device_query {
    uint64_t (*total)(int dev); /* total memory; 0 if unknown */
    uint64_t (*page)(int dev);  /* the pool's page (VMM granularity); 0 if unknown; may be NULL */
    int (*count)(void);         /* devices there are; -1 if unknown yet; may be NULL */
    /* 1 if the pool can be made on the device (VMM), 0 if it cannot, -1
     * if unknown; may be NULL */
    int (*vmm)(int dev);
};

/* Sets the options the limits come from and how to learn about a device
 * (q must outlive the process). Safe to call more than once, the first call
 * wins; before it, every device is unlimited. resolved, if not NULL, is
 * told each device's figures once they are known (the stats publish
 * them). */
void spw_limits_init(const struct spw_options *opts, const struct spw_device_query *q,
                     void (*resolved)(int dev, uint64_t limit, uint64_t told));

/* The device's limit in bytes, computed on first use: one page at least,
 * the device's total at most, each with a warning when it is not what the
 * options ask. The first computation also warns about devices
 * SPILLWAY_MEM_LIMIT names that the machine lacks. UINT64_MAX (none yet)
 * before accounting starts, and while the driver cannot count the devices
 * (before cuInit): computed at the first call after. */
uint64_t spw_limit(int dev);

/* Also computed with the limit: what the program is told device dev has
 * (SPILLWAY_OVERSUBSCRIBE x the limit, rounded down to whole pages:
 * cuMemGetInfo's total, cuDeviceTotalMem), and the pinned host memory spill may use on it
 * (SPILLWAY_HOST_LIMIT resolved: auto is a share of spw_host_memory's).
 * With a factor above 1, a host limit too small for the part of told past
 * the limit stops the program there (status 2, one line), as a bad value
 * does before main. UINT64_MAX / 0 before accounting starts. */
uint64_t spw_limit_told(int dev);
uint64_t spw_limit_host(int dev);

/* From now on dev's program is told its limit (cuMemGetInfo, cuDeviceTotalMem,
 * the stats), not SPILLWAY_OVERSUBSCRIBE x it: the page pool, where memory
 * past the limit would live, will not be made there. Warns once, with
 * why; nothing when nothing past the limit was told. */
void spw_limit_tell_limit(int dev, const char *why);

/* Device dev's limit and told figures if they were resolved already
 * (without resolving them): 0 if not. */
int spw_limit_known(int dev, uint64_t *limit, uint64_t *told);
#endif
