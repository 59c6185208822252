/* Finding, copying out and judging segments; removal of dead owners'. */
#include "stats/reader.h"
#include "stats/dirlock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define READ_TRIES 8

static enum spw_read_result say(enum spw_read_result r, char *why, size_t whylen, const char *fmt, ...)
{
    if (why && whylen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, whylen, fmt, ap);
        va_end(ap);
    }
    return r;
}

static int read_exact(int fd, void *buf, size_t len, off_t off)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, (char *)buf + got, len - got, off + (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    return 0;
}

/* Reads counter k of device d into `a` again (its base, and its lanes when
 * it has them) and gives its value. */
static int reread_counter(int fd, unsigned char *a, uint32_t d, enum spw_counter k, uint64_t *value)
{
    size_t off = spw_stats_counter_offset(d, k);
    if (read_exact(fd, a + off, 8, (off_t)off) != 0)
        return -1;
    int l = spw_stats_laned(k);
    if (l >= 0) {
        size_t lanes = spw_stats_lane_offset(d, (enum spw_laned)l, 0);
        if (read_exact(fd, a + lanes, SPW_STATS_LANES * SPW_STATS_CACHELINE, (off_t)lanes) != 0)
            return -1;
    }
    *value = spw_stats_device_value(a + spw_stats_device_offset(d), k);
    return 0;
}

/* Makes every counter in `a` a value two consecutive reads agreed on: a
 * counter whose value differs between a and b is re-read until it settles.
 * A single pread is not guaranteed atomic per 8 bytes, and a laned
 * counter's lanes are read one after another, so agreement (of the summed
 * value) is what rules out a torn value. Devices are counted from len; a
 * len that is not whole devices is rejected by the decoder afterwards. */
static int settle_counters(int fd, unsigned char *a, const unsigned char *b, size_t len)
{
    size_t first = sizeof(struct spw_stats_header);
    size_t n = len > first ? (len - first) / sizeof(struct spw_stats_device) : 0;
    for (uint32_t d = 0; d < n; d++) {
        size_t dev = spw_stats_device_offset(d);
        for (unsigned k = 0; k < SPW_C_COUNT; k++) {
            uint64_t prev = spw_stats_device_value(b + dev, (enum spw_counter)k);
            if (spw_stats_device_value(a + dev, (enum spw_counter)k) == prev)
                continue;
            int settled = 0;
            for (int t = 0; t < READ_TRIES && !settled; t++) {
                uint64_t cur;
                if (reread_counter(fd, a, d, (enum spw_counter)k, &cur) != 0)
                    return -1;
                settled = cur == prev;
                prev = cur;
            }
            /* A counter hot enough never to settle: `a` holds its last read. */
        }
    }
    return 0;
}

/* Copies the file out twice and settles it; the header (fixed after
 * publication, text under its seqlock) must be identical in both copies. */
static int copy_out(int fd, unsigned char *a, unsigned char *b, size_t len)
{
    for (int t = 0; t < READ_TRIES; t++) {
        if (read_exact(fd, a, len, 0) != 0 || read_exact(fd, b, len, 0) != 0)
            return -1;
        if (memcmp(a, b, sizeof(struct spw_stats_header)) == 0)
            return settle_counters(fd, a, b, len);
    }
    errno = EAGAIN;
    return -1;
}

/* Whether dir/name is still the file fd has open (so that an unlink by name
 * removes exactly what was judged dead). */
static int same_file(int dirfd, const char *name, const struct stat *st)
{
    struct stat now;
    return fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_dev == st->st_dev &&
           now.st_ino == st->st_ino;
}

static void judge_pid(struct spw_stats_snapshot *s, struct spw_proc_index *ix)
{
    uint64_t my_ns = spw_proc_self_pid_ns();
    if (s->pid_ns != 0 && s->pid_ns == my_ns) {
        s->liveness = spw_proc_liveness(s->pid, s->start_time);
        s->local_pid = s->pid;
        return;
    }
    /* Another (or an unknown) namespace: a pid we can see with the same
     * start time is the owner; anything else proves nothing. */
    pid_t candidates[2] = {s->host_pid, s->pid};
    s->liveness = SPW_UNKNOWN;
    for (int i = 0; i < 2; i++) {
        if (spw_proc_liveness(candidates[i], s->start_time) == SPW_ALIVE) {
            s->liveness = SPW_ALIVE;
            s->local_pid = candidates[i];
            return;
        }
    }
    /* A writer in a container saw only its own pids (a pod seen from the
     * node's exporter): look for it by namespace. */
    pid_t local;
    s->liveness = spw_proc_find_in_ns(ix, s->pid_ns, s->pid, s->start_time, &local);
    if (s->liveness == SPW_ALIVE)
        s->local_pid = local;
}

/* Pid and start time are public: a segment of one user naming another
 * user's live process (to be shown, labelled and killed as it) proves
 * nothing about that process, so its owner is unknown and has no pid
 * here. */
static void judge_liveness(struct spw_stats_snapshot *s, struct spw_proc_index *ix)
{
    judge_pid(s, ix);
    if (s->liveness == SPW_ALIVE && spw_proc_has_uid(s->local_pid, s->uid) != 1) {
        s->liveness = SPW_UNKNOWN;
        s->local_pid = 0;
    }
}

/* Whether a file of size bytes, shorter than a header, has no magic yet:
 * a writer creates its file, writes its pid namespace, then sizes it, and
 * stores the magic last. */
static bool unpublished(int fd, off_t size)
{
    unsigned char magic[8] = {0};
    size_t n = size < (off_t)sizeof magic ? (size_t)size : sizeof magic;
    return read_exact(fd, magic, n, 0) == 0 && memcmp(magic, "\0\0\0\0\0\0\0\0", sizeof magic) == 0;
}

static enum spw_read_result check_file(int fd, const char *name, unsigned flags, struct stat *st,
                                       char *why, size_t whylen)
{
    uint32_t name_uid;
    int32_t name_pid;
    uint64_t name_ns;
    if (spw_stats_parse_name(name, &name_uid, &name_pid, &name_ns) != 0)
        return say(SPW_READ_NOT_SEGMENT, why, whylen, "not a segment name");
    if (fstat(fd, st) != 0)
        return say(SPW_READ_BAD, why, whylen, "fstat: %s", strerror(errno));
    if (!S_ISREG(st->st_mode))
        return say(SPW_READ_BAD, why, whylen, "not a regular file");
    if (st->st_uid != name_uid)
        return say(SPW_READ_BAD, why, whylen, "owned by uid %u but named for uid %u",
                   (unsigned)st->st_uid, name_uid);
    if (st->st_uid != geteuid() && !(flags & SPW_SCAN_ALL_USERS))
        return say(SPW_READ_OTHER_USER, why, whylen, "belongs to uid %u", (unsigned)st->st_uid);
    if (st->st_mode & 0077)
        return say(SPW_READ_BAD, why, whylen, "mode %04o, expected 0400 or 0600", (unsigned)(st->st_mode & 07777));
    if (st->st_size < (off_t)sizeof(struct spw_stats_header) && unpublished(fd, st->st_size))
        return say(SPW_READ_NOT_READY, why, whylen, "being initialised");
    if (st->st_size < (off_t)sizeof(struct spw_stats_header) ||
        (uint64_t)st->st_size > spw_stats_total_size(SPW_STATS_MAX_DEVICES))
        return say(SPW_READ_BAD, why, whylen, "size %lld out of range", (long long)st->st_size);
    return SPW_READ_OK;
}

/* Whose dead segments a scan removes when asked to: its own uid's, and
 * with SPW_SCAN_ALL_USERS those of every user it reads (root's exporter,
 * whose node keeps every pod's files). Removal follows the judgment that
 * hides the segment, so it never takes a live writer's file: SPW_DEAD,
 * which a writer of another pid namespace gets only from a reader that
 * sees every process of the machine, or a file never initialised past its
 * grace. The kernel still decides: another user's file in a sticky
 * directory needs CAP_FOWNER. */
static bool may_remove(unsigned flags, const struct stat *st)
{
    return (flags & SPW_SCAN_REMOVE_DEAD) && (st->st_uid == geteuid() || (flags & SPW_SCAN_ALL_USERS));
}

/* Unlinks the segment of a dead owner when it may (may_remove), and only
 * if the name still holds the file that was judged. what: why it is dead,
 * for the note. */
static enum spw_read_result bury(int dirfd, const char *name, unsigned flags, const struct stat *st,
                                 int *removed, const char *what, char *why, size_t whylen)
{
    if (!may_remove(flags, st))
        return say(SPW_READ_DEAD, why, whylen, "%s; left in place", what);
    /* One try: a scan does not wait; the next one buries it. */
    int lock = spw_stats_dir_lock(dirfd, 0);
    if (lock < 0 && errno == EWOULDBLOCK)
        return say(SPW_READ_DEAD, why, whylen, "%s; left in place (directory busy)", what);
    bool same = same_file(dirfd, name, st);
    int err = 0;
    if (same && unlinkat(dirfd, name, 0) != 0)
        err = errno;
    spw_stats_dir_unlock(lock);
    if (same && !err) {
        *removed = 1;
        return say(SPW_READ_DEAD, why, whylen, "%s; removed", what);
    }
    if (err)
        return say(SPW_READ_DEAD, why, whylen, "%s; left in place (cannot remove: %s)", what, strerror(err));
    return say(SPW_READ_DEAD, why, whylen, "%s; left in place", what);
}

/* A segment still without its magic long after it was made (layout.h)
 * belongs to a writer killed in between. Ours is removed like a dead
 * owner's. */
static enum spw_read_result remove_abandoned(int dirfd, const char *name, unsigned flags,
                                             const struct stat *st, int *removed, char *why, size_t whylen)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    if (now.tv_sec - st->st_mtim.tv_sec < SPW_STATS_INIT_GRACE_S)
        return say(SPW_READ_NOT_READY, why, whylen, "being initialised");
    return bury(dirfd, name, flags, st, removed, "never initialised", why, whylen);
}

/* Copies the segment out and decodes it. One whose text seqlock is odd is
 * decoded only as far as its owner, with *text_busy set and SPW_READ_OK:
 * rejecting it outright would skip, on every scan and forever, the segment
 * of a writer that died in the middle of a rewrite, since only a decoded
 * owner is ever judged dead. */
static enum spw_read_result copy_and_decode(int fd, size_t len, uint32_t file_uid,
                                            struct spw_stats_snapshot *out, bool *text_busy,
                                            char *why, size_t whylen)
{
    unsigned char *a = malloc(len), *b = malloc(len);
    enum spw_read_result r = SPW_READ_OK;
    if (!a || !b)
        r = say(SPW_READ_BAD, why, whylen, "out of memory");
    else if (copy_out(fd, a, b, len) != 0)
        r = say(SPW_READ_BAD, why, whylen, "%s while reading",
                errno == EAGAIN ? "header kept changing" : "truncated");
    else if (spw_stats_decode(a, len, file_uid, out, why, whylen) == 0)
        r = SPW_READ_OK;
    else if (memcmp(a, "\0\0\0\0\0\0\0\0", 8) == 0)
        r = SPW_READ_NOT_READY;
    else if (spw_stats_text_busy(a, len) && spw_stats_decode_owner(a, len, file_uid, out, NULL, 0) == 0)
        *text_busy = true;
    else
        r = SPW_READ_BAD;
    free(a);
    free(b);
    return r;
}

/* The owner of a decoded segment: a live one's snapshot is returned (unless
 * its text is mid-rewrite), a dead one's segment removed when asked. */
static enum spw_read_result judge_owner(int dirfd, const char *name, unsigned flags, const struct stat *st,
                                        bool text_busy, struct spw_proc_index *ix,
                                        struct spw_stats_snapshot *out, int *removed, char *why, size_t whylen)
{
    uint32_t name_uid;
    int32_t name_pid;
    uint64_t name_ns;
    spw_stats_parse_name(name, &name_uid, &name_pid, &name_ns);
    if (name_pid != out->pid)
        return say(SPW_READ_BAD, why, whylen, "pid field %d but named for pid %d", out->pid, name_pid);
    if (name_ns != 0 && name_ns != out->pid_ns)
        return say(SPW_READ_BAD, why, whylen, "pid namespace field %llu but named for %llu",
                   (unsigned long long)out->pid_ns, (unsigned long long)name_ns);
    snprintf(out->name, sizeof out->name, "%s", name);
    judge_liveness(out, ix);
    if (out->liveness == SPW_DEAD) {
        char what[96];
        snprintf(what, sizeof what, "owner pid %d is gone%s", out->pid,
                 text_busy ? " (died rewriting its text)" : "");
        return bury(dirfd, name, flags, st, removed, what, why, whylen);
    }
    if (text_busy)
        return say(SPW_READ_BAD, why, whylen, "text fields are being rewritten");
    return SPW_READ_OK;
}

static enum spw_read_result read_open(int dirfd, int fd, const char *name, unsigned flags,
                                      struct spw_proc_index *ix, struct spw_stats_snapshot *out, int *removed,
                                      char *why, size_t whylen)
{
    struct stat st;
    enum spw_read_result r = check_file(fd, name, flags, &st, why, whylen);
    if (r == SPW_READ_NOT_READY)
        return remove_abandoned(dirfd, name, flags, &st, removed, why, whylen);
    if (r != SPW_READ_OK)
        return r;
    bool text_busy = false;
    r = copy_and_decode(fd, (size_t)st.st_size, (uint32_t)st.st_uid, out, &text_busy, why, whylen);
    if (r == SPW_READ_NOT_READY)
        return remove_abandoned(dirfd, name, flags, &st, removed, why, whylen);
    if (r != SPW_READ_OK)
        return r;
    return judge_owner(dirfd, name, flags, &st, text_busy, ix, out, removed, why, whylen);
}

static enum spw_read_result read_at(int dirfd, const char *name, unsigned flags, struct spw_proc_index *ix,
                                    struct spw_stats_snapshot *out, int *removed, char *why, size_t whylen)
{
    *removed = 0;
    uint32_t uid;
    int32_t pid;
    uint64_t ns;
    if (spw_stats_parse_name(name, &uid, &pid, &ns) != 0)
        return say(SPW_READ_NOT_SEGMENT, why, whylen, "not a segment name");
    /* O_NONBLOCK: a FIFO planted under a segment name must not hang us. */
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ELOOP)
            return say(SPW_READ_BAD, why, whylen, "is a symbolic link");
        if (errno == EACCES && uid != geteuid() && !(flags & SPW_SCAN_ALL_USERS))
            return say(SPW_READ_OTHER_USER, why, whylen, "belongs to uid %u", uid);
        return say(SPW_READ_BAD, why, whylen, "open: %s", strerror(errno));
    }
    enum spw_read_result r = read_open(dirfd, fd, name, flags, ix, out, removed, why, whylen);
    close(fd);
    return r;
}

enum spw_read_result spw_stats_read_at(int dirfd, const char *name, unsigned flags,
                                       struct spw_stats_snapshot *out, int *removed,
                                       char *why, size_t whylen)
{
    return read_at(dirfd, name, flags, NULL, out, removed, why, whylen);
}

static int list_push(struct spw_stats_list *list, size_t *cap, const struct spw_stats_snapshot *s)
{
    if (list->n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 8;
        struct spw_stats_snapshot *p = realloc(list->items, ncap * sizeof *p);
        if (!p)
            return -1;
        list->items = p;
        *cap = ncap;
    }
    list->items[list->n++] = *s;
    return 0;
}

static void note_result(enum spw_read_result r, const char *name, const char *why,
                        struct spw_stats_list *list, int removed, spw_stats_note_fn note, void *ctx)
{
    if (r == SPW_READ_BAD)
        list->skipped++;
    if (removed)
        list->removed++;
    if (note && (r == SPW_READ_BAD || r == SPW_READ_DEAD))
        note(ctx, name, why);
}

int spw_stats_scan(const char *dir, unsigned flags, struct spw_stats_list *list,
                   spw_stats_note_fn note, void *ctx, char *why, size_t whylen)
{
    memset(list, 0, sizeof *list);
    if (!dir || !*dir) {
        say(SPW_READ_BAD, why, whylen, "no stats directory given");
        return -1;
    }
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dirfd >= 0 ? fdopendir(dirfd) : NULL;
    if (!d) {
        say(SPW_READ_BAD, why, whylen, "cannot read %s: %s", dir, strerror(errno));
        if (dirfd >= 0)
            close(dirfd);
        return -1;
    }
    struct spw_stats_snapshot *s = malloc(sizeof *s);
    size_t cap = 0;
    int rc = s ? 0 : -1;
    struct spw_proc_index ix = {0}; /* made at the first segment of another pid namespace */
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        char reason[256] = "";
        int removed = 0;
        enum spw_read_result r = read_at(dirfd, e->d_name, flags, &ix, s, &removed, reason, sizeof reason);
        if (r == SPW_READ_OK)
            rc = list_push(list, &cap, s);
        else
            note_result(r, e->d_name, reason, list, removed, note, ctx);
    }
    if (rc != 0)
        say(SPW_READ_BAD, why, whylen, "out of memory");
    spw_proc_index_free(&ix);
    free(s);
    closedir(d);
    return rc;
}

void spw_stats_list_free(struct spw_stats_list *list)
{
    free(list->items);
    memset(list, 0, sizeof *list);
}
