/* Logging to stderr with the "spillway: " prefix, filtered by SPILLWAY_LOG. */
#ifndef SPILLWAY_SHIM_LOG_H
#define SPILLWAY_SHIM_LOG_H
#include "shim/options.h"

void spw_log_set_level(enum spw_log_level level);
int spw_log_enabled(enum spw_log_level level);
void spw_log(enum spw_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define spw_error(...) spw_log(SPW_LOG_ERROR, __VA_ARGS__)
#define spw_warn(...) spw_log(SPW_LOG_WARN, __VA_ARGS__)
#define spw_info(...) spw_log(SPW_LOG_INFO, __VA_ARGS__)
#define spw_debug(...) spw_log(SPW_LOG_DEBUG, __VA_ARGS__)
#endif
