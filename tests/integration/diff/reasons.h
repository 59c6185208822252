/* Why spillway says it refused an allocation.
 *
 * Today the only per-refusal statement is a log line (shim/account.c: the
 * limit's refusal and the pool's, SPILLWAY_LOG=debug for all but the
 * first): diffgen sends its own stderr to a file while it runs and reads
 * the lines back at the end, pairing each with a refusal by its byte
 * count. When the stats segment counts refusals by reason, replace
 * diff_reasons_end's parsing by a read of those counters and make
 * diff_reasons_take hand out reasons from the counts (judge.c compares
 * the counts by reason as well as each refusal, so nothing else changes). */
#ifndef DIFF_REASONS_H
#define DIFF_REASONS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum diff_reason {
    R_NONE,          /* nothing explains the refusal */
    R_LIMIT,         /* the device limit (spill off) */
    R_HOST_LIMIT,    /* SPILLWAY_HOST_LIMIT (spill on) */
    R_ADDRESS_SPACE, /* spillway's VA reservation */
    R_TOO_LARGE,     /* one allocation larger than the limit */
    R_DRIVER,        /* the driver refused spillway */
    R_UNSTATED,      /* refused with no statement at all */
    R_COUNT
};

struct diff_stated {
    uint64_t bytes;
    uint8_t reason;
    bool used;
};

struct diff_reasons {
    bool active;
    int saved_stderr;    /* the real stderr, restored at the end */
    int fd;              /* where stderr goes meanwhile */
    char path[256];
    struct diff_stated *lines;
    size_t n, cap;
    uint64_t stated[R_COUNT]; /* counts by stated reason */
};

const char *diff_reason_name(int reason);
/* Captures stderr (spillway writes its log there) into a scratch file. */
bool diff_reasons_begin(struct diff_reasons *r);
/* Restores stderr and reads the refusals stated meanwhile; keep: leave the
 * file, whose name is printed (a failed run). */
bool diff_reasons_end(struct diff_reasons *r, bool keep);
/* The stated reason of one refusal of `bytes` (the first not yet taken),
 * R_UNSTATED when spillway stated none. */
int diff_reasons_take(struct diff_reasons *r, uint64_t bytes);
/* Classifies one refusal line (exposed for the self-test). */
int diff_reason_of_line(const char *line, uint64_t *bytes);
#endif
