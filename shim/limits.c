/* Owner of each device's limit, told size and host limit (limits.h). */
#include "shim/limits.h"

#include "shim/hostmem.h"
#include "shim/log.h"
#include "shim/size_text.h"
#include "shim/spillway.h"
#include "policy/limits.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

/* Read on every reservation, written once: a line of their own per device. */
struct limits {
    _Atomic uint64_t limit; /* 0 = not computed yet */
    /* What the program is told the device has, and the pinned host memory
     * spill may use for it: stored before limit, read after it. */
    _Atomic uint64_t told, host_limit;
} __attribute__((aligned(64)));

static struct limits devices[SW_MAX_DEVICES];
static _Atomic(const struct spw_options *) options;
static _Atomic(const struct spw_device_query *) query;
static void (*_Atomic resolved)(int dev, uint64_t limit, uint64_t told);
/* Whether the devices SPILLWAY_MEM_LIMIT names were checked against the count. */
static _Atomic int devices_checked;

void spw_limits_init(const struct spw_options *opts, const struct spw_device_query *q,
                     void (*tell)(int dev, uint64_t limit, uint64_t told))
{
    const struct spw_options *none = NULL;
    if (atomic_compare_exchange_strong(&options, &none, opts)) {
        atomic_store(&resolved, tell);
        atomic_store(&query, q);
    }
}

/* Once the driver can count the devices: a per-device limit for a device
 * that is not there is a mistake the user should hear of (it limits
 * nothing). Retried until the count is known. */
static void check_listed_devices(const struct spw_options *o, const struct spw_device_query *q)
{
    if (atomic_load_explicit(&devices_checked, memory_order_relaxed) || !q->count)
        return;
    int n = q->count();
    if (n < 0 || atomic_exchange(&devices_checked, 1))
        return;
    char note[512];
    if (spw_options_missing_devices(o, n, note, sizeof note))
        spw_warn("%s", note);
}

/* A configuration that cannot be honoured stops the program as a bad value
 * does before main (config.c): with status 2 and one line. Here the
 * device's limit or the machine's memory was needed to know it. */
static void refuse_configuration(const char *line)
{
    spw_error("%s", line);
    _exit(2);
}

/* The host limit of device dev once its limit is known; with
 * SPILLWAY_OVERSUBSCRIBE above 1, also that it holds what the factor puts
 * past the limit (else the program stops: see refuse_configuration).
 * said gets the info line that names it, for the thread that keeps the
 * figures to log (empty when there is nothing to say: see below). */
static uint64_t device_host_limit(const struct spw_options *o, const struct spw_device_query *q,
                                  int dev, uint64_t limit, bool pool, char *said, size_t len)
{
    int n = q->count ? q->count() : -1;
    struct spw_host_memory mem = {0};
    if (o->host_limit == SPW_BYTES_AUTO)
        spw_host_memory(&mem);
    uint64_t host = spw_options_host_limit(o, n, mem.bytes);
    char who[32], how[192] = "", line[512], of[96], h[SPW_SIZE_TEXT_MAX];
    if (o->host_limit == SPW_BYTES_AUTO)
        snprintf(how, sizeof how, ", half of %s among %d device%s",
                 spw_host_memory_describe(&mem, of, sizeof of), n > 0 ? n : 1, n > 1 ? "s" : "");
    snprintf(who, sizeof who, "device %d", dev);
    if (pool && spw_options_check_host_room(o, who, limit, host, how, line, sizeof line))
        refuse_configuration(line);
    /* Only spill takes host pages (policy/acquire.c: none without it), and
     * only the pool's: without either the host limit means nothing, and a
     * line naming it would only mislead. */
    said[0] = '\0';
    if (!o->spill || !pool)
        return host;
    if (host == UINT64_MAX)
        snprintf(said, len, "device %d: spill may pin host memory without a limit, by "
                 "SPILLWAY_HOST_LIMIT=unlimited", dev);
    else
        snprintf(said, len, "device %d: spill may pin up to %s of host memory, by "
                 "SPILLWAY_HOST_LIMIT%s%s", dev, spw_size_text(h, sizeof h, host),
                 how[0] ? "=auto" : "", how);
    return host;
}

uint64_t spw_limit(int dev)
{
    if (dev == SPILLWAY_HOST)
        return 0;
    struct limits *c = &devices[dev];
    /* Acquire: told and host_limit were stored before the limit. */
    uint64_t limit = atomic_load_explicit(&c->limit, memory_order_acquire);
    if (limit)
        return limit;
    const struct spw_options *o = atomic_load(&options);
    const struct spw_device_query *q = atomic_load(&query);
    if (!o || !q)
        return UINT64_MAX;
    /* Before cuInit the driver tells neither the count nor the total nor
     * the page: a limit computed then (spillway_get_counters at start) was
     * the fraction of an unknown total, kept for good: no limit at all.
     * Not computed until the driver can say. */
    if (q->count && q->count() < 0)
        return UINT64_MAX;
    check_listed_devices(o, q);
    uint64_t t = q->total(dev), page = q->page ? q->page(dev) : 0;
    char note[512];
    /* A driver that cannot tell the total gets the explicit limit only. */
    limit = spw_options_resolve_limit(o, dev, t ? t : UINT64_MAX, page, note, sizeof note);
    if (limit == 0)
        limit = 1; /* 0 means "not computed"; a 0-byte device takes nothing anyway */
    /* Memory past the limit lives in the pool's host pages: a device the
     * pool cannot be made on is told its limit (a program sized to more,
     * as JAX is, would fail at its first allocation past it), and needs
     * no host room for more. */
    bool pool = !q->vmm || q->vmm(dev) != 0;
    char nopool[256] = "";
    if (!pool && spw_options_told(o, limit) > limit)
        snprintf(nopool, sizeof nopool,
                 "device %d: SPILLWAY_OVERSUBSCRIBE=%g does not apply: the driver or the device "
                 "lacks virtual memory management, which the page pool needs; programs are told "
                 "the limit",
                 dev, o->oversubscribe);
    /* Racing threads store the same figures. */
    char host_line[512];
    atomic_store(&c->host_limit,
                 device_host_limit(o, q, dev, limit, pool, host_line, sizeof host_line));
    /* Whole pages, as the limit: the part past it lives in whole host
     * pages, and a host limit of (F - 1) x the limit (what the README
     * asks) holds only the whole ones: a program that took all it was told
     * was refused the last part page. */
    uint64_t told = pool ? spw_options_told(o, limit) : limit;
    if (page && told > limit)
        told -= told % page;
    atomic_store(&c->told, told);
    uint64_t unset = 0;
    if (!atomic_compare_exchange_strong(&c->limit, &unset, limit))
        return unset; /* another thread computed it (and said what it had to) */
    void (*tell)(int, uint64_t, uint64_t) = atomic_load(&resolved);
    if (tell)
        tell(dev, limit, atomic_load(&c->told));
    if (note[0])
        spw_warn("%s", note);
    if (nopool[0])
        spw_warn("%s", nopool);
    /* What the program is told and why, then what spill may pin: the
     * figures an operator compares with what the job did. */
    if (spw_log_enabled(SPW_LOG_INFO)) {
        char line[512];
        spw_options_describe_limit(o, dev, t, limit, atomic_load(&c->told), pool, line, sizeof line);
        spw_info("%s", line);
        if (host_line[0])
            spw_info("%s", host_line);
    }
    return limit;
}

uint64_t spw_limit_told(int dev)
{
    uint64_t limit = spw_limit(dev);
    if (dev == SPILLWAY_HOST || limit == UINT64_MAX)
        return limit;
    return atomic_load_explicit(&devices[dev].told, memory_order_relaxed);
}

void spw_limit_tell_limit(int dev, const char *why)
{
    if (dev < 0 || dev >= SW_MAX_DEVICES)
        return;
    struct limits *c = &devices[dev];
    uint64_t limit = atomic_load_explicit(&c->limit, memory_order_acquire);
    uint64_t told = atomic_load_explicit(&c->told, memory_order_relaxed);
    if (!limit || told <= limit ||
        !atomic_compare_exchange_strong(&c->told, &told, limit))
        return;
    void (*tell)(int, uint64_t, uint64_t) = atomic_load(&resolved);
    if (tell)
        tell(dev, limit, limit);
    char l[SPW_SIZE_TEXT_MAX], t[SPW_SIZE_TEXT_MAX];
    spw_warn("device %d: programs are now told the limit, %s, not %s: %s", dev,
             spw_size_text(l, sizeof l, limit), spw_size_text(t, sizeof t, told), why);
}

uint64_t spw_limit_host(int dev)
{
    uint64_t limit = spw_limit(dev);
    if (dev == SPILLWAY_HOST || limit == UINT64_MAX)
        return 0;
    return atomic_load_explicit(&devices[dev].host_limit, memory_order_relaxed);
}

int spw_limit_known(int dev, uint64_t *limit, uint64_t *told)
{
    if (dev < 0 || dev >= SW_MAX_DEVICES)
        return 0;
    const struct limits *c = &devices[dev];
    *limit = atomic_load_explicit(&c->limit, memory_order_acquire);
    *told = atomic_load_explicit(&c->told, memory_order_relaxed);
    return *limit != 0;
}
