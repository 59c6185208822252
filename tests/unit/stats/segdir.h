/* A fresh private directory per test for stats segments (under /dev/shm
 * when it exists, like the real thing), removed with its contents; the
 * tests pass it to the writer and the reader, as the shim and
 * spillway-top pass their SPILLWAY_STATS_DIR. */
#ifndef SPILLWAY_TEST_SEGDIR_H
#define SPILLWAY_TEST_SEGDIR_H
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* One per file that includes this; a program whose suite spans several
 * files defines SEGDIR_SHARED before it in each, and segdir in one. */
#ifdef SEGDIR_SHARED
extern char segdir[256];
#else
static char segdir[256];
#endif

static inline void segdir_setup(void)
{
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(segdir, sizeof segdir, "%s/spw-test-XXXXXX", base);
    if (!mkdtemp(segdir)) {
        perror("mkdtemp");
        abort();
    }
}

static inline void segdir_teardown(void)
{
    DIR *d = opendir(segdir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                if (unlinkat(dirfd(d), e->d_name, 0) != 0)
                    unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
        closedir(d);
    }
    rmdir(segdir);
}

/* Takes the test directory's lock (stats/dirlock.h) as another process
 * would, on a descriptor of its own; close it to release. */
static inline int segdir_lock(void)
{
    int fd = open(segdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0) {
        perror("segdir_lock");
        abort();
    }
    return fd;
}

/* Whether someone holds the test directory's lock. */
static inline int segdir_locked(void)
{
    int fd = open(segdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int held = flock(fd, LOCK_EX | LOCK_NB) != 0;
    close(fd);
    return held;
}

/* Number of entries in the test directory (besides . and ..). */
static inline int segdir_count(void)
{
    int n = 0;
    DIR *d = opendir(segdir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d)
        closedir(d);
    return n;
}
#endif
