/* What the options mean for a device once the driver has told its size:
 * the limit and the words a note gives it, the size a program is told
 * (and the info line that says both),
 * the host limit and reserve, and whether the host limit holds what an
 * oversubscribed program is told past the limit. Pure libc, as options.c
 * (the parser), with which the launcher links it. */
#include "shim/options.h"
#include "shim/size_text.h"

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

void spw_options_limit_source(const struct spw_options *o, int dev, char *buf, size_t len)
{
    char v[32], f[64];
    if (!buf || !len)
        return;
    if (dev >= 0 && dev < SW_MAX_DEVICES && o->mem_limit.dev[dev]) {
        format_written(v, sizeof v, o->mem_limit.dev[dev]);
        snprintf(buf, len, "SPILLWAY_MEM_LIMIT (%d=%s)", dev, v);
    } else if (o->mem_limit.all) {
        format_written(v, sizeof v, o->mem_limit.all);
        snprintf(buf, len, "SPILLWAY_MEM_LIMIT=%s", v);
    } else {
        spw_options_format_decimal(f, sizeof f, o->mem_fraction);
        snprintf(buf, len, "SPILLWAY_MEM_FRACTION=%s", f);
    }
}

/* What the options ask for device dev, and in which words (for a note). */
static uint64_t asked_limit(const struct spw_options *o, int dev, uint64_t total, char *what,
                            size_t len)
{
    spw_options_limit_source(o, dev, what, len);
    if (dev >= 0 && dev < SW_MAX_DEVICES && o->mem_limit.dev[dev])
        return o->mem_limit.dev[dev];
    if (o->mem_limit.all)
        return o->mem_limit.all;
    /* A total of UINT64_MAX (unknown) at a fraction of 1 is 2^64 as a
     * double, past what a uint64_t holds (an undefined conversion). */
    double share = (double)total * o->mem_fraction;
    uint64_t limit = share >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)share;
    char v[SPW_SIZE_TEXT_MAX], t[SPW_SIZE_TEXT_MAX];
    size_t used = strlen(what);
    if (used < len)
        snprintf(what + used, len - used, " of %s, %s,", spw_size_text(t, sizeof t, total),
                 spw_size_text(v, sizeof v, limit));
    return limit;
}

uint64_t spw_options_resolve_limit(const struct spw_options *o, int dev, uint64_t total,
                                   uint64_t page, char *note, size_t len)
{
    char what[192], a[SPW_SIZE_TEXT_MAX], b[SPW_SIZE_TEXT_MAX], c[SPW_SIZE_TEXT_MAX];
    uint64_t limit = asked_limit(o, dev, total, what, sizeof what);
    if (note && len)
        note[0] = '\0';
    /* The pool holds whole pages: less than one would be no pool at all. */
    if (page && limit < page) {
        uint64_t used = total && page > total ? total : page;
        spw_size_text(a, sizeof a, page);
        spw_size_text(c, sizeof c, used);
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
    spw_size_text(c, sizeof c, limit);
    if (total && asked > total) {
        spw_size_text(b, sizeof b, total);
        if (note && len)
            snprintf(note, len, "device %d: %s is more than the device's %s: using %s", dev,
                     what, b, c);
    } else if (limit != asked && (o->mem_limit.all ||
                                  (dev >= 0 && dev < SW_MAX_DEVICES && o->mem_limit.dev[dev]))) {
        /* A fraction never falls on a page: rounded without a word. */
        spw_size_text(a, sizeof a, page);
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

int spw_options_describe_limit(const struct spw_options *o, int dev, uint64_t total,
                               uint64_t limit, uint64_t told, int pool, char *buf, size_t len)
{
    char l[SPW_SIZE_TEXT_MAX], t[SPW_SIZE_TEXT_MAX], tt[SPW_SIZE_TEXT_MAX + 24];
    char src[96], f[64], why[192];
    spw_options_limit_source(o, dev, src, sizeof src);
    spw_options_format_decimal(f, sizeof f, o->oversubscribe);
    tt[0] = '\0';
    if (total)
        snprintf(tt, sizeof tt, " of the device's %s", spw_size_text(t, sizeof t, total));
    if (told > limit)
        snprintf(why, sizeof why, "SPILLWAY_OVERSUBSCRIBE=%s x the limit%s: the %s past it live in "
                 "pinned host memory", f, told != spw_options_told(o, limit) ? " in whole pages" : "",
                 spw_size_text(t, sizeof t, told - limit));
    else if (o->oversubscribe <= 1.0 || told < limit)
        snprintf(why, sizeof why, "the limit");
    else if (!pool)
        snprintf(why, sizeof why, "the limit: SPILLWAY_OVERSUBSCRIBE=%s does not apply without "
                 "the page pool", f);
    else
        snprintf(why, sizeof why, "the limit: SPILLWAY_OVERSUBSCRIBE=%s x the limit is less "
                 "than a page more", f);
    return snprintf(buf, len, "device %d: limit %s%s, by %s; programs are told the device has %s, %s",
                    dev, spw_size_text(l, sizeof l, limit), tt, src,
                    spw_size_text(t, sizeof t, told), why);
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
        char r[48], h[48], used[SPW_SIZE_TEXT_MAX];
        format_written(r, sizeof r, o->host_reserve);
        spw_size_text(used, sizeof used, host_limit);
        /* auto's figure is the one used: said once. */
        if (o->host_limit == SPW_BYTES_AUTO)
            snprintf(h, sizeof h, "auto");
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
    char t[SPW_SIZE_TEXT_MAX], past[SPW_SIZE_TEXT_MAX], l[SPW_SIZE_TEXT_MAX], h[SPW_SIZE_TEXT_MAX];
    spw_size_text(t, sizeof t, told);
    spw_size_text(past, sizeof past, told - limit);
    spw_size_text(l, sizeof l, limit);
    spw_size_text(h, sizeof h, host_limit);
    if (err && len)
        snprintf(err, len,
                 "invalid SPILLWAY_OVERSUBSCRIBE=%g for %s: programs would be told %s, and the "
                 "%s past the limit of %s must fit in pinned host memory, but "
                 "SPILLWAY_HOST_LIMIT%s is %s%s: raise SPILLWAY_HOST_LIMIT or lower the factor",
                 o->oversubscribe, who, t, past, l, o->host_limit == SPW_BYTES_AUTO ? "=auto" : "",
                 h, how ? how : "");
    return -1;
}
