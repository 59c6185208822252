/* Preloaded into the launcher by test_launcher.sh: the file named by
 * SPW_TEST_SHRINK_PATH shrinks to SPW_TEST_SHRINK_TO bytes at the first
 * fstat of it, and every fstat of it still says the size it had before.
 * That is the file a reinstall truncates between the launcher's look at
 * its size and its reads, made to happen every time: reading past the new
 * end of a mapping of the old size killed the launcher with SIGBUS. */
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static off_t size_before = -1;

/* Whether fd is the file to shrink. */
static int is_target(int fd)
{
    const char *want = getenv("SPW_TEST_SHRINK_PATH");
    char link[64], path[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (!want || n <= 0)
        return 0;
    path[n] = '\0';
    return strcmp(path, want) == 0;
}

__attribute__((visibility("default"))) int fstat(int fd, struct stat *st)
{
    static int (*real)(int, struct stat *);
    if (!real)
        real = (int (*)(int, struct stat *))dlsym(RTLD_NEXT, "fstat");
    int rc = real(fd, st);
    if (rc != 0 || !is_target(fd))
        return rc;
    if (size_before < 0) {
        size_before = st->st_size;
        const char *to = getenv("SPW_TEST_SHRINK_TO");
        if (truncate(getenv("SPW_TEST_SHRINK_PATH"), to ? atoll(to) : 0) != 0) {
            perror("shrink_on_stat: truncate");
            abort();
        }
    }
    st->st_size = size_before;
    return rc;
}
