/* One write(2) per line, so that lines of concurrent threads and processes
 * never interleave. */
#include "shim/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

/* Set once by config.c; warn until then. */
static _Atomic int log_level = SPW_LOG_WARN;

void spw_log_set_level(enum spw_log_level level)
{
    atomic_store_explicit(&log_level, (int)level, memory_order_relaxed);
}

int spw_log_enabled(enum spw_log_level level)
{
    return (int)level <= atomic_load_explicit(&log_level, memory_order_relaxed);
}

void spw_log(enum spw_log_level level, const char *fmt, ...)
{
    if (!spw_log_enabled(level))
        return;
    int saved = errno; /* logging must not change what the program sees */
    char line[512];
    int n = snprintf(line, sizeof line, "spillway: ");
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w; /* nowhere left to report a failed write to stderr */
    errno = saved;
}
