#include "stats/procinfo.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Reads a small /proc file into buf (NUL-terminated). Returns bytes read or
 * -1 with errno. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t got = 0;
    while (got + 1 < len) {
        ssize_t n = read(fd, buf + got, len - 1 - got);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    return (ssize_t)got;
}

int spw_proc_start_time(pid_t pid, uint64_t *out)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (read_small(path, buf, sizeof buf) < 0)
        return -1;
    /* The command name (field 2) may hold spaces and parentheses: fields
     * are counted from the last ')'. starttime is field 22, i.e. the 20th
     * field after the state (field 3). */
    char *p = strrchr(buf, ')');
    if (!p) {
        errno = EINVAL;
        return -1;
    }
    p++;
    for (int field = 3; field <= 22; field++) {
        while (*p == ' ')
            p++;
        if (!*p) {
            errno = EINVAL;
            return -1;
        }
        if (field == 22) {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(p, &end, 10);
            if (errno || end == p) {
                errno = EINVAL;
                return -1;
            }
            *out = v;
            return 0;
        }
        while (*p && *p != ' ')
            p++;
    }
    errno = EINVAL;
    return -1;
}

uint64_t spw_proc_self_pid_ns(void)
{
    struct stat st;
    if (stat("/proc/self/ns/pid", &st) != 0)
        return 0;
    return (uint64_t)st.st_ino;
}

pid_t spw_proc_self_outer_pid(void)
{
    char buf[16384];
    if (read_small("/proc/self/status", buf, sizeof buf) < 0)
        return getpid();
    char *line = strstr(buf, "\nNSpid:");
    if (!line)
        return getpid();
    char *end;
    long v = strtol(line + 7, &end, 10);
    if (end == line + 7 || v <= 0 || v > INT32_MAX)
        return getpid();
    return (pid_t)v;
}

void spw_proc_self_cmdline(char *buf, size_t len)
{
    if (len == 0)
        return;
    char raw[8192];
    ssize_t n = read_small("/proc/self/cmdline", raw, sizeof raw);
    if (n <= 0) {
        buf[0] = '\0';
        return;
    }
    /* Arguments are NUL-separated; the last one is NUL-terminated. */
    while (n > 0 && raw[n - 1] == '\0')
        n--;
    size_t out = 0;
    for (ssize_t i = 0; i < n && out + 1 < len; i++)
        buf[out++] = raw[i] ? raw[i] : ' ';
    buf[out] = '\0';
}

enum spw_liveness spw_proc_liveness(pid_t pid, uint64_t start_time)
{
    if (pid <= 0)
        return SPW_UNKNOWN;
    uint64_t now;
    if (spw_proc_start_time(pid, &now) != 0)
        return (errno == ENOENT || errno == ESRCH) ? SPW_DEAD : SPW_UNKNOWN;
    /* Same pid, other start time: the pid was reused after the owner died. */
    return now == start_time ? SPW_ALIVE : SPW_DEAD;
}

/* The last pid on the NSpid line of /proc/<pid>/status: the pid in the
 * process's own namespace. 0 when unknown. */
static pid_t innermost_pid(pid_t pid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    if (read_small(path, buf, sizeof buf) < 0)
        return 0;
    char *line = strstr(buf, "\nNSpid:");
    if (!line)
        return 0;
    char *end = strchr(line + 1, '\n');
    if (end)
        *end = '\0';
    long last = 0;
    for (char *p = line + 7; *p;) {
        char *next;
        long v = strtol(p, &next, 10);
        if (next == p)
            break;
        last = v;
        p = next;
    }
    return last > 0 && last <= INT32_MAX ? (pid_t)last : 0;
}

/* Whether process p is in the pid namespace with inode pid_ns, as far as
 * can be told: reading another process's namespace needs ptrace access
 * (a container without CAP_SYS_PTRACE lacks it), and then the start time
 * and pid that matched already are the answer. */
static bool maybe_in_ns(pid_t p, uint64_t pid_ns)
{
    char path[64];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%d/ns/pid", (int)p);
    return stat(path, &st) != 0 || (uint64_t)st.st_ino == pid_ns;
}

enum spw_liveness spw_proc_find_in_ns(uint64_t pid_ns, pid_t ns_pid, uint64_t start_time, pid_t *local)
{
    *local = 0;
    if (pid_ns == 0 || ns_pid <= 0)
        return SPW_UNKNOWN;
    DIR *d = opendir("/proc");
    if (!d)
        return SPW_UNKNOWN;
    bool complete = true;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        pid_t p = (pid_t)strtol(e->d_name, NULL, 10);
        uint64_t started;
        /* The start time first: world-readable, and it rules out nearly
         * every process at once. */
        if (spw_proc_start_time(p, &started) != 0) {
            if (errno != ENOENT && errno != ESRCH)
                complete = false; /* a process we cannot judge */
            continue;
        }
        if (started == start_time && innermost_pid(p) == ns_pid && maybe_in_ns(p, pid_ns)) {
            *local = p;
            closedir(d);
            return SPW_ALIVE;
        }
    }
    closedir(d);
    /* Only a reader that sees every process may call the owner dead. */
    return complete && spw_proc_self_pid_ns() == SPW_PROC_INIT_PID_NS ? SPW_DEAD : SPW_UNKNOWN;
}
