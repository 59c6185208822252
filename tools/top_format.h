/* Number formatting and spillway-top --once. */
#ifndef SPILLWAY_TOOLS_TOP_FORMAT_H
#define SPILLWAY_TOOLS_TOP_FORMAT_H
#include "tools/top_model.h"

#include <stdio.h>

/* At most 5 characters: "0B", "1023B", "1.5K", "12M", "3.2G", "16E". */
void top_fmt_bytes(char *out, size_t len, uint64_t v);
/* A count in at most 5 characters: "0", "99999", "117K" (1024 based). */
void top_fmt_count(char *out, size_t len, uint64_t v);
/* A count per second in at most 5 characters: "0", "12.5", "9999", "12K". */
void top_fmt_count_rate(char *out, size_t len, double v);
/* Bytes per second as top_fmt_bytes shows bytes. Rates come from counters
 * of segments anyone may write: below 0 or NaN shows 0, past what a
 * uint64_t holds the most it holds. */
void top_fmt_byte_rate(char *out, size_t len, double v);

/* The device's own figures (NVML) in width columns (see top_fit_line):
 * name, utilization, memory used by all processes of the device against
 * its total, temperature, power against its limit. Parts shrink whole;
 * the name is cut last. Returns the length written. */
int top_fmt_gpu_hw(char *out, size_t len, int width, const struct top_gpu *g);

/* What an oversubscribed device's processes are told and where their bytes
 * are, in width columns (see top_fit_line): the factor, the total they are
 * told, bytes in use on the device and on the host, and with rates the
 * bytes moved per second between them. Returns the length written. */
int top_fmt_oversub(char *out, size_t len, int width, const struct top_device *d, bool rates);

/* --once: device headers and one line per row, plain text. with_rates: the
 * model has two samples, so rate columns replace the totals. width: shorten
 * the command to fit this many columns (top_fmt_command; at least 80 is
 * readable), 0 = the whole command. */
void top_print_table(FILE *f, const struct top_model *m, bool with_rates, int width);
#endif
