/* The stats directory's lock: what changes which file a segment name holds
 * (a writer's create, the replacement of a stale file, a reader's removal
 * of a dead or abandoned one) happens under it, so that no one unlinks a
 * file made after they judged the one it replaced. */
#ifndef SPILLWAY_STATS_DIRLOCK_H
#define SPILLWAY_STATS_DIRLOCK_H

/* How long a writer waits for the lock before going on without it. Holders
 * keep it for microseconds (a holder preempted on a loaded machine, a few
 * milliseconds); only a stopped or hostile process holds it longer, and a
 * program must not be held at its start for that. */
#define SPW_STATS_DIRLOCK_WAIT_MS 250

/* Takes the lock on the directory dirfd names, waiting up to wait_ms (0:
 * one try). Returns the lock's own descriptor, to pass to
 * spw_stats_dir_unlock, or -1 with errno (EWOULDBLOCK: held elsewhere past
 * the wait; else the directory cannot be locked, as on some network file
 * systems) and nothing held. */
int spw_stats_dir_lock(int dirfd, unsigned wait_ms);

/* Releases a lock spw_stats_dir_lock returned (a no-op for -1). */
void spw_stats_dir_unlock(int lockfd);

#endif
