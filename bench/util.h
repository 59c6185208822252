/* Small helpers shared by the benchmarks and tests/gpu's C programs:
 * a monotonic clock, a fixed-seed generator, sizes with K/M/G/T suffixes
 * (shim/options.c's parser: link $(BENCH_UTIL), which has it), percentiles,
 * and the one-line result format gpu-check.sh parses. */
#ifndef SPILLWAY_BENCH_UTIL_H
#define SPILLWAY_BENCH_UTIL_H
#include <stddef.h>
#include <stdint.h>

uint64_t now_ns(void);

/* splitmix64: fixed seed -> the same workload in every mode and run. */
uint64_t rng_next(uint64_t *state);

/* "256", "64K", "16M", "4G", "1T", "2MiB" -> bytes, as SPILLWAY_MEM_LIMIT
 * reads them (spw_parse_bytes); 0 on success, -1 if malformed. */
int parse_size(const char *s, uint64_t *out);
/* Comma-separated sizes; returns how many were parsed (<= max), -1 on error. */
int parse_sizes(const char *s, uint64_t *out, int max);

/* Sorts v in place and returns the p-th percentile (0..100). */
uint64_t percentile(uint64_t *v, size_t n, double p);

/* Prints "what: error N (string)" to stderr and exits 1. */
void die_gpu(const char *what, int err);

/* Waits for one line on stdin (the harness's "go"), at most timeout_s
 * seconds; returns 0 when a line came, -1 on timeout or EOF. */
int wait_for_go(int timeout_s);
#endif
