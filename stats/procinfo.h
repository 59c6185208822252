/* What /proc says about a process: the facts the writer records and the
 * reader checks to tell a live owner from a dead one. */
#ifndef SPILLWAY_STATS_PROCINFO_H
#define SPILLWAY_STATS_PROCINFO_H
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

/* /proc/self/cmdline with arguments joined by single spaces, truncated to
 * fit, always NUL-terminated. Empty string if unreadable. */
void spw_proc_self_cmdline(char *buf, size_t len);

/* Liveness of a process given its pid and recorded start time. */
enum spw_liveness { SPW_ALIVE, SPW_DEAD, SPW_UNKNOWN };
enum spw_liveness spw_proc_liveness(pid_t pid, uint64_t start_time);

/* The inode of the initial pid namespace (the kernel's PROC_PID_INIT_INO):
 * a reader there sees every process. */
#define SPW_PROC_INIT_PID_NS 0xEFFFFFFCu

/* Looks through /proc for the process that is ns_pid in the pid namespace
 * whose inode is pid_ns and started at start_time: a writer in a container
 * records only the pids it can see, so a reader outside (a node's exporter
 * with the host's pids) finds it this way. Matches on start time and
 * innermost NSpid (world-readable), and on the namespace where ptrace
 * access lets us read it. Returns SPW_ALIVE with *local its pid here;
 * SPW_DEAD when none matched, every process could be read, and the reader
 * is in the initial pid namespace (so it sees every process); else
 * SPW_UNKNOWN. One pass over /proc. */
enum spw_liveness spw_proc_find_in_ns(uint64_t pid_ns, pid_t ns_pid, uint64_t start_time, pid_t *local);
#endif
