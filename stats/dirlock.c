/* The stats directory's lock (dirlock.h). */
#include "stats/dirlock.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A descriptor of its own for each lock: flock belongs to the open file
 * description, which the caller's directory descriptor may share with a
 * forked process or another writer of this one, and two holders of one
 * description would not exclude each other. */
int spw_stats_dir_lock(int dirfd, unsigned wait_ms)
{
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    double deadline = mono_ms() + wait_ms;
    for (;;) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return fd;
        if ((errno != EWOULDBLOCK && errno != EINTR) || mono_ms() >= deadline)
            break;
        nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    }
    int e = errno;
    close(fd);
    errno = e;
    return -1;
}

/* Unlocked before the close: a fork meanwhile gave the child this
 * descriptor, and the lock would last as long as the child's copy. */
void spw_stats_dir_unlock(int lockfd)
{
    if (lockfd < 0)
        return;
    flock(lockfd, LOCK_UN);
    close(lockfd);
}
