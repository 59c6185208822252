/* What /proc says about a process: the facts the writer records and the
 * reader checks to tell a live owner from a dead one. */
#ifndef SPILLWAY_STATS_PROCINFO_H
#define SPILLWAY_STATS_PROCINFO_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* starttime (field 22 of /proc/<pid>/stat, clock ticks since boot) of pid.
 * 0 and *out set, -1 with errno (ENOENT/ESRCH: no such process). */
int spw_proc_start_time(pid_t pid, uint64_t *out);

/* Inode of /proc/self/ns/pid, or 0 when it cannot be read. */
uint64_t spw_proc_self_pid_ns(void);

/* The first pid on the NSpid line of /proc/self/status (the pid as seen by
 * the outermost namespace /proc shows), or getpid() when absent. */
pid_t spw_proc_self_outer_pid(void);

/* A command line of n bytes (src, arguments joined, no NUL needed) into
 * dst (cap bytes, NUL-terminated) as a segment holds one (layout.h):
 * whole when it fits, else cut before the character that would leave no
 * room for SPW_STATS_CMDLINE_CUT (never inside a UTF-8 sequence) and
 * marked with it. One rule for the writer and for spillway-top's rows of
 * processes not under spillway. Returns whether it was cut. */
bool spw_cmdline_fit(char *dst, size_t cap, const char *src, size_t n);

/* /proc/self/cmdline with arguments joined by single spaces, truncated to
 * fit, always NUL-terminated. Empty string if unreadable. */
void spw_proc_self_cmdline(char *buf, size_t len);

/* Liveness of a process given its pid and recorded start time: dead also
 * when it has ended and waits to be reaped (a zombie: /proc still shows
 * its pid and start time). */
enum spw_liveness { SPW_ALIVE, SPW_DEAD, SPW_UNKNOWN };
enum spw_liveness spw_proc_liveness(pid_t pid, uint64_t start_time);

/* The inode of the initial pid namespace (the kernel's PROC_PID_INIT_INO):
 * a reader there sees every process. */
#define SPW_PROC_INIT_PID_NS 0xEFFFFFFCu

/* Whether uid is one of the real, effective, saved and filesystem uids of
 * pid (/proc/<pid>/status, world-readable): 1 yes, 0 no, -1 unknown. A
 * segment names its owner by pid and start time, both public: the owner's
 * uid is what a segment of another user cannot fake. */
int spw_proc_has_uid(pid_t pid, uint32_t uid);

/* The effective uid of pid (the second of /proc/<pid>/status's Uid: line,
 * the one ps and top show as USER): 0 and *uid set, or -1. */
int spw_proc_effective_uid(pid_t pid, uint32_t *uid);

/* /proc/<pid>/<file> into buf (at most len - 1 bytes, NUL-terminated):
 * the bytes read, or -1 with errno. */
ssize_t spw_proc_read(pid_t pid, const char *file, char *buf, size_t len);

/* The start time of every process, made once for a whole scan of segments
 * (spw_stats_scan) so that each segment of another pid namespace costs a
 * lookup, not a pass over /proc. Zero it before first use. */
struct spw_proc_entry {
    pid_t pid;
    uint64_t start;
};
struct spw_proc_index {
    struct spw_proc_entry *e; /* sorted by start */
    size_t n;
    uint64_t since; /* when it was made, in /proc's clock ticks since boot */
    bool built, complete; /* complete: every process's start time was read */
    unsigned passes;      /* over /proc, for the tests */
};
void spw_proc_index_free(struct spw_proc_index *ix);

/* Looks for the process that is ns_pid in the pid namespace whose inode is
 * pid_ns and started at start_time: a writer in a container records only
 * the pids it can see, so a reader outside (a node's exporter with the
 * host's pids) finds it this way. Matches on start time and innermost
 * NSpid (world-readable), and on the namespace where ptrace access lets us
 * read it. Returns SPW_ALIVE with *local its pid here; SPW_DEAD when the
 * one that matched has ended (a zombie), or when none matched, every
 * process could be read, and the reader is in the initial pid namespace
 * (so it sees every process); else SPW_UNKNOWN. ix: the
 * scan's index, made on first use and remade for a process started since;
 * NULL for a pass of its own. */
enum spw_liveness spw_proc_find_in_ns(struct spw_proc_index *ix, uint64_t pid_ns, pid_t ns_pid,
                                      uint64_t start_time, pid_t *local);
#endif
