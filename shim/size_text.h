/* A byte count as every error, warning and info line of spillway's log
 * shows it, and the notes the option layer writes for them (README, "The
 * log"). Pure libc, in the option layer: the shim, the option layer's own
 * notes, the launcher and the benchmarks may all call it.
 *
 * The rule, one for every size:
 *   - under 1 KiB, the count: "0 bytes", "1 byte", "1000 bytes";
 *   - else in the largest binary unit it reaches (KiB, MiB, GiB, TiB, PiB,
 *     EiB) with at most one decimal: "16 GiB", "1.5 GiB", "256 MiB";
 *   - when that figure is rounded (to the nearest tenth), the exact count
 *     follows it in parentheses, so that no size in the log is ever only
 *     approximate: "15.9 GiB (17071734784 bytes)", "4.0 KiB (4097 bytes)".
 * Debug lines, which trace single calls, keep plain byte counts. */
#ifndef SPILLWAY_SHIM_SIZE_TEXT_H
#define SPILLWAY_SHIM_SIZE_TEXT_H
#include <stddef.h>
#include <stdint.h>

/* Room for the longest text: "16.0 EiB (18446744073709551615 bytes)". */
#define SPW_SIZE_TEXT_MAX 48

/* Writes bytes as above into buf (len bytes, cut to fit like snprintf);
 * returns buf, for use as a printf argument. */
const char *spw_size_text(char *buf, size_t len, uint64_t bytes);
#endif
