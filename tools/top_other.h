/* GPU processes not under spillway: those NVML lists on a device that no
 * stats segment accounts for (another user's job, a program started
 * without the library), with who they are from /proc where it can be
 * read, so that the screen answers "who is using this GPU". */
#ifndef SPILLWAY_TOOLS_TOP_OTHER_H
#define SPILLWAY_TOOLS_TOP_OTHER_H
#include "stats/layout.h"
#include "tools/top_nvml.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct top_other {
    uint32_t gpu;                  /* the host's index, as NVML numbers it */
    int pid;                       /* as NVML reports it (see top_proc_nvml_used) */
    bool have_used;                /* NVML_VALUE_NOT_AVAILABLE: unknown */
    uint64_t used;                 /* device memory NVML says it holds there */
    bool compute, graphics;        /* the lists NVML has it on */
    bool visible;                  /* /proc/<pid> could be read: user and cmdline are its */
    uint64_t start;                /* its start time, to keep what /proc said across samples */
    char user[33];                 /* "" when not visible */
    char cmdline[SPW_STATS_CMDLINE_LEN]; /* sanitised as the reader does; "" when not visible */
    bool cmdline_truncated;        /* cmdline was cut and ends with SPW_STATS_CMDLINE_CUT (layout.h) */
    bool shown;                    /* kept by the latest filter */
};

struct top_others {
    struct top_other *v;
    size_t n, cap;
};

/* Whether pid is a process under spillway (it publishes a segment). */
typedef bool (*top_is_ours_fn)(void *ctx, int pid);

/* Rebuilds o from the process lists of n's devices: every process that
 * is_ours does not claim. Who each is comes from /proc,
 * read once per process (kept across samples for the same pid and start
 * time). 0, or -1 out of memory (o then holds what fitted). */
int top_others_update(struct top_others *o, const struct top_nvml *n, top_is_ours_fn is_ours, void *ctx);
void top_others_free(struct top_others *o);

/* pid's effective user (name, else the number) and command line (arguments
 * joined by spaces; printable ASCII and valid UTF-8 kept, any other byte
 * '?'; one longer than clen - 1 bytes cut between characters and ending in
 * SPW_STATS_CMDLINE_CUT, *cut set). false when /proc/<pid> cannot be read. */
bool top_other_identity(int pid, char *user, size_t ulen, char *cmdline, size_t clen, bool *cut);
#endif
