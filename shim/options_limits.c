/* What the options mean for a device once the driver has told its size:
 * the limit and the words a note gives it, the size a program is told,
 * the host limit and reserve, and whether the host limit holds what an
 * oversubscribed program is told past the limit. Pure libc, as options.c
 * (the parser), with which the launcher links it. */
#include "shim/options.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* A byte count as a user writes it: 99999T, 8G, 1. */
static void format_written(char *b, size_t n, uint64_t v)
{
    static const char units[] = "KMGT";
    int u = -1;
    for (int i = 3; i >= 0 && u < 0; i--)
        if (v && v % (1ull << (10 * (i + 1))) == 0)
            u = i;
    if (u < 0)
        snprintf(b, n, "%llu", (unsigned long long)v);
    else
        snprintf(b, n, "%llu%c", (unsigned long long)(v >> (10 * (u + 1))), units[u]);
}

/* A byte count for a reader: 2 MiB, 81559 MiB, 268 bytes. */
static void format_human(char *b, size_t n, uint64_t v)
{
    static const char units[] = "KMGT";
    for (int i = 3; i >= 0; i--) {
        if (v && v % (1ull << (10 * (i + 1))) == 0) {
            snprintf(b, n, "%llu %ciB", (unsigned long long)(v >> (10 * (i + 1))), units[i]);
            return;
        }
    }
    if (v >= (1ull << 30))
        snprintf(b, n, "%llu bytes (%.1f GiB)", (unsigned long long)v, (double)v / (1ull << 30));
    else
        snprintf(b, n, "%llu byte%s", (unsigned long long)v, v == 1 ? "" : "s");
}

/* What the options ask for device dev, and in which words (for a note). */
static uint64_t asked_limit(const struct spw_options *o, int dev, uint64_t total, char *what,
                            size_t len)
{
    char v[32], t[48];
    if (dev >= 0 && dev < SW_MAX_DEVICES && o->mem_limit.dev[dev]) {
        format_written(v, sizeof v, o->mem_limit.dev[dev]);
        snprintf(what, len, "SPILLWAY_MEM_LIMIT (%d=%s)", dev, v);
        return o->mem_limit.dev[dev];
    }
    if (o->mem_limit.all) {
        format_written(v, sizeof v, o->mem_limit.all);
        snprintf(what, len, "SPILLWAY_MEM_LIMIT=%s", v);
        return o->mem_limit.all;
    }
    /* A total of UINT64_MAX (unknown) at a fraction of 1 is 2^64 as a
     * double, past what a uint64_t holds (an undefined conversion). */
    double share = (double)total * o->mem_fraction;
    uint64_t limit = share >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)share;
    char f[64];
    spw_options_format_decimal(f, sizeof f, o->mem_fraction);
    format_human(v, sizeof v, limit);
    format_human(t, sizeof t, total);
    snprintf(what, len, "SPILLWAY_MEM_FRACTION=%s of %s (%s)", f, t, v);
    return limit;
}

uint64_t spw_options_resolve_limit(const struct spw_options *o, int dev, uint64_t total,
                                   uint64_t page, char *note, size_t len)
{
    char what[192], a[48], b[48], c[48];
    uint64_t limit = asked_limit(o, dev, total, what, sizeof what);
    if (note && len)
        note[0] = '\0';
    /* The pool holds whole pages: less than one would be no pool at all. */
    if (page && limit < page) {
        uint64_t used = total && page > total ? total : page;
        format_human(a, sizeof a, page);
        format_human(c, sizeof c, used);
        if (note && len)
            snprintf(note, len, "device %d: %s is below one page (%s): using %s", dev, what, a, c);
        return used;
    }
    uint64_t asked = limit;
    if (total && limit > total)
        limit = total;
    /* Nor a part of one: the program is told the limit and sizes itself
     * to it, and without spill the bytes of a last part page were told
     * free and refused. */
    if (page)
        limit -= limit % page;
    format_human(c, sizeof c, limit);
    if (total && asked > total) {
        format_human(b, sizeof b, total);
        if (note && len)
            snprintf(note, len, "device %d: %s is more than the device has (%s): using %s", dev,
                     what, b, c);
    } else if (limit != asked && (o->mem_limit.all ||
                                  (dev >= 0 && dev < SW_MAX_DEVICES && o->mem_limit.dev[dev]))) {
        /* A fraction never falls on a page: rounded without a word. */
        format_human(a, sizeof a, page);
        if (note && len)
            snprintf(note, len, "device %d: %s is not a whole number of pages (%s): using %s",
                     dev, what, a, c);
    }
    return limit;
}

uint64_t spw_options_device_limit(const struct spw_options *o, int dev, uint64_t total)
{
    return spw_options_resolve_limit(o, dev, total, 0, NULL, 0);
}

int spw_options_missing_devices(const struct spw_options *o, int count, char *note, size_t len)
{
    char list[256] = "";
    size_t used = 0;
    int missing = 0;
    for (int d = count < 0 ? 0 : count; d < SW_MAX_DEVICES; d++) {
        if (!o->mem_limit.dev[d])
            continue;
        if (used < sizeof list)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%d", missing ? ", " : "", d);
        missing++;
    }
    if (!missing || !note || !len)
        return missing;
    char have[32];
    if (count <= 0)
        snprintf(have, sizeof have, "no device");
    else if (count == 1)
        snprintf(have, sizeof have, "1 device (0)");
    else
        snprintf(have, sizeof have, "%d devices (0-%d)", count, count - 1);
    snprintf(note, len,
             "SPILLWAY_MEM_LIMIT names device%s %s, but CUDA sees %s: %s unused "
             "(devices are numbered after CUDA_VISIBLE_DEVICES)",
             missing > 1 ? "s" : "", list, have, missing > 1 ? "those limits are" : "its limit is");
    return missing;
}

/* ---- oversubscription: what programs are told, and the host memory it takes ---- */

uint64_t spw_options_told(const struct spw_options *o, uint64_t limit)
{
    /* Exactly the limit at 1: no double rounding of a byte count that
     * programs compare with their own arithmetic. */
    if (o->oversubscribe <= 1.0)
        return limit;
    double told = o->oversubscribe * (double)limit;
    return told >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)told;
}

uint64_t spw_options_host_limit(const struct spw_options *o, int ndev, uint64_t phys)
{
    if (o->host_limit != SPW_BYTES_AUTO)
        return o->host_limit;
    return phys / 2 / (uint64_t)(ndev > 0 ? ndev : 1);
}

uint64_t spw_options_host_reserve(const struct spw_options *o, int dev, uint64_t limit,
                                  uint64_t host_limit, char *note, size_t len)
{
    if (note && len)
        note[0] = '\0';
    if (o->host_reserve == SPW_BYTES_AUTO) {
        uint64_t r = limit / 32;
        r = r < (128ull << 20) ? 128ull << 20 : r > (4ull << 30) ? 4ull << 30 : r;
        return r < host_limit ? r : host_limit; /* as documented: no word */
    }
    if (o->host_reserve <= host_limit)
        return o->host_reserve;
    /* Asked for, and cut: said, as a limit above the device is. Not
     * without spill, which pins nothing ahead. */
    if (o->spill && note && len) {
        char r[48], h[64], used[48];
        format_written(r, sizeof r, o->host_reserve);
        format_human(used, sizeof used, host_limit);
        if (o->host_limit == SPW_BYTES_AUTO)
            snprintf(h, sizeof h, "auto (%s)", used);
        else
            format_written(h, sizeof h, o->host_limit);
        snprintf(note, len,
                 "device %d: SPILLWAY_HOST_RESERVE=%s is more than the host limit, "
                 "SPILLWAY_HOST_LIMIT=%s: using %s",
                 dev, r, h, used);
    }
    return host_limit;
}

uint64_t spw_options_phys_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 0;
}

int spw_options_check_host_room(const struct spw_options *o, const char *who, uint64_t limit,
                                uint64_t host_limit, const char *how, char *err, size_t len)
{
    uint64_t told = spw_options_told(o, limit);
    if (told - limit <= host_limit)
        return 0;
    char t[48], past[48], l[48], h[48];
    format_human(t, sizeof t, told);
    format_human(past, sizeof past, told - limit);
    format_human(l, sizeof l, limit);
    format_human(h, sizeof h, host_limit);
    if (err && len)
        snprintf(err, len,
                 "invalid SPILLWAY_OVERSUBSCRIBE=%g for %s: programs would be told %s, and the "
                 "%s past the limit of %s must fit in pinned host memory, but "
                 "SPILLWAY_HOST_LIMIT is %s%s: raise SPILLWAY_HOST_LIMIT or lower the factor",
                 o->oversubscribe, who, t, past, l, h, how ? how : "");
    return -1;
}
