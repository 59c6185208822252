#include "stats/procinfo.h"
#include "stats/layout.h"

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
#include <time.h>
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

/* The rest of the line of a /proc/<pid>/status file that starts with key
 * (malloc'd), or NULL. Read line by line: a process with many groups has a
 * status longer than any fixed buffer, and NSpid comes after Groups. */
static char *status_line(const char *path, const char *key)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return NULL;
    size_t klen = strlen(key), cap = 0;
    char *line = NULL;
    while (getline(&line, &cap, f) > 0) {
        if (strncmp(line, key, klen) == 0) {
            fclose(f);
            memmove(line, line + klen, strlen(line + klen) + 1);
            return line;
        }
    }
    free(line);
    fclose(f);
    return NULL;
}

static void status_path(char *path, size_t len, pid_t pid)
{
    snprintf(path, len, "/proc/%d/status", (int)pid);
}

/* starttime and the state letter (field 3) of pid; as spw_proc_start_time. */
static int read_stat(pid_t pid, uint64_t *out, char *state)
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
        if (field == 3)
            *state = *p;
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

int spw_proc_start_time(pid_t pid, uint64_t *out)
{
    char state;
    return read_stat(pid, out, &state);
}

/* Whether pid, in state `state`, is a process that has ended and not been
 * reaped: /proc keeps its pid and start time until its parent waits for
 * it. A leader shows Z too when only its main thread has exited
 * (pthread_exit) while others run: its thread count tells them apart. A
 * killed process's other threads take a moment to go after its leader:
 * until they have, it is taken for alive, and the next scan finds it dead. */
static bool ended(pid_t pid, char state)
{
    if (state != 'Z' && state != 'X')
        return false;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    char *line = status_line(path, "Threads:");
    if (!line)
        return true; /* reaped meanwhile */
    long threads = strtol(line, NULL, 10);
    free(line);
    return threads <= 1;
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
    char *line = status_line("/proc/self/status", "NSpid:");
    if (!line)
        return getpid();
    char *end;
    long v = strtol(line, &end, 10);
    bool ok = end != line && v > 0 && v <= INT32_MAX;
    free(line);
    return ok ? (pid_t)v : getpid();
}

bool spw_cmdline_fit(char *dst, size_t cap, const char *src, size_t n)
{
    if (cap == 0)
        return n > 0;
    if (n < cap) {
        memcpy(dst, src, n);
        dst[n] = '\0';
        return false;
    }
    size_t mark = sizeof SPW_STATS_CMDLINE_CUT - 1;
    size_t keep = cap > mark ? cap - 1 - mark : 0;
    /* A UTF-8 continuation byte (10xxxxxx) where the cut falls belongs to
     * a character that began before it: cut before that one instead (a
     * character has 3 such bytes at most; more are no UTF-8, cut anywhere). */
    for (int i = 0; i < 3 && keep > 0 && ((unsigned char)src[keep] & 0xc0) == 0x80; i++)
        keep--;
    snprintf(dst, cap, "%.*s%s", (int)keep, src, SPW_STATS_CMDLINE_CUT);
    return true;
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
    char state;
    if (read_stat(pid, &now, &state) != 0)
        return (errno == ENOENT || errno == ESRCH) ? SPW_DEAD : SPW_UNKNOWN;
    /* Same pid, other start time: the pid was reused after the owner died. */
    return now == start_time && !ended(pid, state) ? SPW_ALIVE : SPW_DEAD;
}

/* The last pid on the NSpid line of /proc/<pid>/status: the pid in the
 * process's own namespace. 0 when unknown. */
static pid_t innermost_pid(pid_t pid)
{
    char path[64];
    status_path(path, sizeof path, pid);
    char *line = status_line(path, "NSpid:");
    if (!line)
        return 0;
    long last = 0;
    for (char *p = line; *p;) {
        char *next;
        long v = strtol(p, &next, 10);
        if (next == p)
            break;
        last = v;
        p = next;
    }
    free(line);
    return last > 0 && last <= INT32_MAX ? (pid_t)last : 0;
}

int spw_proc_has_uid(pid_t pid, uint32_t uid)
{
    char path[64];
    status_path(path, sizeof path, pid);
    char *line = status_line(path, "Uid:");
    if (!line)
        return -1;
    int found = 0, seen = 0;
    for (char *p = line; *p && seen < 4; seen++) {
        char *next;
        errno = 0;
        unsigned long long v = strtoull(p, &next, 10);
        if (next == p || errno)
            break;
        found |= v == uid;
        p = next;
    }
    free(line);
    return seen ? found : -1;
}

int spw_proc_effective_uid(pid_t pid, uint32_t *uid)
{
    char path[64];
    status_path(path, sizeof path, pid);
    char *line = status_line(path, "Uid:");
    unsigned real, eff;
    int r = line && sscanf(line, "%u %u", &real, &eff) == 2 ? 0 : -1;
    if (r == 0)
        *uid = eff;
    free(line);
    return r;
}

ssize_t spw_proc_read(pid_t pid, const char *file, char *buf, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
    return read_small(path, buf, len);
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

static int by_start(const void *a, const void *b)
{
    const struct spw_proc_entry *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Clock ticks since boot, as /proc's start times count them, or less:
 * CLOCK_MONOTONIC stops in suspend where the kernel's start times may not,
 * and an index that looks older than it is is only made again sooner. 0
 * when unknown (the index is then made again for every lookup). */
static uint64_t ticks_now(void)
{
    struct timespec ts;
    long hz = sysconf(_SC_CLK_TCK);
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0 || hz <= 0 || hz > 1000000000)
        return 0;
    return (uint64_t)ts.tv_sec * (uint64_t)hz + (uint64_t)ts.tv_nsec / (1000000000u / (uint64_t)hz);
}

/* One pass over /proc: every process's start time, sorted. */
static void index_build(struct spw_proc_index *ix)
{
    free(ix->e);
    *ix = (struct spw_proc_index){.built = true, .complete = true, .passes = ix->passes + 1};
    ix->since = ticks_now();
    DIR *d = opendir("/proc");
    if (!d) {
        ix->complete = false;
        return;
    }
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        pid_t p = (pid_t)strtol(e->d_name, NULL, 10);
        uint64_t started;
        if (spw_proc_start_time(p, &started) != 0) {
            if (errno != ENOENT && errno != ESRCH)
                ix->complete = false; /* a process we cannot judge */
            continue;
        }
        if (ix->n == cap) {
            size_t ncap = cap ? cap * 2 : 256;
            struct spw_proc_entry *grown = realloc(ix->e, ncap * sizeof *grown);
            if (!grown) {
                ix->complete = false;
                break;
            }
            ix->e = grown;
            cap = ncap;
        }
        ix->e[ix->n++] = (struct spw_proc_entry){.pid = p, .start = started};
    }
    closedir(d);
    qsort(ix->e, ix->n, sizeof *ix->e, by_start);
}

void spw_proc_index_free(struct spw_proc_index *ix)
{
    free(ix->e);
    *ix = (struct spw_proc_index){0};
}

/* The processes of the index that started at start_time: [*from, *to). */
static void index_range(const struct spw_proc_index *ix, uint64_t start_time, size_t *from, size_t *to)
{
    size_t lo = 0, hi = ix->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ix->e[mid].start < start_time)
            lo = mid + 1;
        else
            hi = mid;
    }
    *from = *to = lo;
    while (*to < ix->n && ix->e[*to].start == start_time)
        ++*to;
}

static bool index_find(const struct spw_proc_index *ix, uint64_t pid_ns, pid_t ns_pid, uint64_t start_time,
                       pid_t *local)
{
    size_t from, to;
    index_range(ix, start_time, &from, &to);
    for (size_t i = from; i < to; i++) {
        pid_t p = ix->e[i].pid;
        if (innermost_pid(p) == ns_pid && maybe_in_ns(p, pid_ns)) {
            *local = p;
            return true;
        }
    }
    return false;
}

enum spw_liveness spw_proc_find_in_ns(struct spw_proc_index *ix, uint64_t pid_ns, pid_t ns_pid,
                                      uint64_t start_time, pid_t *local)
{
    *local = 0;
    if (pid_ns == 0 || ns_pid <= 0)
        return SPW_UNKNOWN;
    struct spw_proc_index own = {0};
    if (!ix)
        ix = &own;
    /* A process started since the index was made is not in it: look again
     * rather than call its owner dead. */
    if (!ix->built || start_time + 2 >= ix->since)
        index_build(ix);
    bool found = index_find(ix, pid_ns, ns_pid, start_time, local);
    bool complete = ix->complete;
    spw_proc_index_free(&own);
    if (found) {
        uint64_t now;
        char state;
        if (read_stat(*local, &now, &state) == 0 && now == start_time && ended(*local, state)) {
            *local = 0;
            return SPW_DEAD; /* found, and not reaped yet */
        }
        return SPW_ALIVE;
    }
    /* Only a reader that sees every process may call the owner dead. */
    return complete && spw_proc_self_pid_ns() == SPW_PROC_INIT_PID_NS ? SPW_DEAD : SPW_UNKNOWN;
}
