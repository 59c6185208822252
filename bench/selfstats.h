/* This process's own spillway stats segment (stats/layout.h), read with
 * pread: the benchmarks use it to sample pool_bytes while they run (pool
 * efficiency, preallocation). Not the tools' reader: no validation beyond
 * magic and layout sizes, because the writer is this very process. */
#ifndef SPILLWAY_BENCH_SELFSTATS_H
#define SPILLWAY_BENCH_SELFSTATS_H
#include <stdint.h>

/* Value of the counter named as in stats/layout.h (e.g. "pool_bytes") of
 * device dev; 0, or -1 when there is no segment (yet) or no such counter. */
int selfstats_get(const char *name, unsigned dev, uint64_t *out);
#endif
