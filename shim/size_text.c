/* Sizes for a reader (size_text.h). Integer arithmetic only: a double
 * holds 53 bits, and the exact count, not a float's, decides whether the
 * short figure is exact. */
#include "shim/size_text.h"

#include <stdio.h>

const char *spw_size_text(char *buf, size_t len, uint64_t bytes)
{
    static const char units[] = "KMGTPE";
    if (!buf || !len)
        return buf;
    if (bytes < 1024) {
        snprintf(buf, len, "%llu byte%s", (unsigned long long)bytes, bytes == 1 ? "" : "s");
        return buf;
    }
    unsigned u = 0; /* units[u] is 2^(10 (u + 1)) */
    while (u + 1 < sizeof units - 1 && bytes >> (10 * (u + 2)))
        u++;
    unsigned shift = 10 * (u + 1);
    uint64_t unit = 1ull << shift, whole = bytes >> shift, rest = bytes & (unit - 1);
    /* Tenths of the unit: rest < 2^60, so 10 rest + unit / 2 < 2^64. */
    uint64_t tenths10 = rest * 10;
    int exact = (tenths10 & (unit - 1)) == 0;
    unsigned tenths = (unsigned)((tenths10 + unit / 2) >> shift);
    if (tenths == 10) {
        whole++;
        tenths = 0;
        /* 1023.96 GiB reads 1.0 TiB, in the unit it nearly reaches. */
        if (whole == 1024 && u + 1 < sizeof units - 1) {
            u++;
            whole = 1;
        }
    }
    if (exact && tenths == 0)
        snprintf(buf, len, "%llu %ciB", (unsigned long long)whole, units[u]);
    else if (exact)
        snprintf(buf, len, "%llu.%u %ciB", (unsigned long long)whole, tenths, units[u]);
    else
        snprintf(buf, len, "%llu.%u %ciB (%llu bytes)", (unsigned long long)whole, tenths, units[u],
                 (unsigned long long)bytes);
    return buf;
}
