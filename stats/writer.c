/* Creation, publication and removal of this process's stats segment. */
#include "stats/writer.h"
#include "stats/dirlock.h"
#include "stats/procinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The writers this process has open, so that exit can unlink them and fork
 * can detach them. Owned by this file; guarded by open_lock. A process
 * normally has one (the shim's); tests open several. */
#define MAX_OPEN 8
static struct spw_stats_writer *open_writers[MAX_OPEN];
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;

static void fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* At exit: unlink but keep the mapping, because other threads may still be
 * inside an update while the process ends. */
static void unlink_at_exit(void)
{
    /* Never hang an exiting program: if another thread is inside open or
     * close right now, leave the segment; the next reader removes it once
     * the process is gone. */
    if (pthread_mutex_trylock(&open_lock) != 0)
        return;
    for (int i = 0; i < MAX_OPEN; i++) {
        struct spw_stats_writer *w = open_writers[i];
        if (w && !w->unlinked && w->owner_pid == getpid()) {
            unlinkat(w->dirfd, w->name, 0);
            w->unlinked = true;
        }
    }
    pthread_mutex_unlock(&open_lock);
}

/* In a forked child the shared mapping is still the parent's segment:
 * replace it with private zero pages at the same address so that stray
 * updates from the child neither corrupt the parent's figures nor fault.
 * owner_pid stays the parent's, so the child never unlinks it. */
static void detach_in_child(void)
{
    for (int i = 0; i < MAX_OPEN; i++) {
        struct spw_stats_writer *w = open_writers[i];
        if (!w)
            continue;
        mmap(w->hdr, w->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        w->unlinked = true;
    }
    pthread_mutex_unlock(&open_lock);
}

static void lock_for_fork(void) { pthread_mutex_lock(&open_lock); }
static void unlock_after_fork(void) { pthread_mutex_unlock(&open_lock); }

static void install_hooks(void)
{
    atexit(unlink_at_exit);
    pthread_atfork(lock_for_fork, unlock_after_fork, detach_in_child);
}

static int register_writer(struct spw_stats_writer *w)
{
    pthread_once(&hooks_once, install_hooks);
    pthread_mutex_lock(&open_lock);
    int slot = -1;
    for (int i = 0; i < MAX_OPEN && slot < 0; i++)
        if (!open_writers[i])
            slot = i;
    if (slot >= 0)
        open_writers[slot] = w;
    pthread_mutex_unlock(&open_lock);
    return slot >= 0 ? 0 : -1;
}

static void unregister_writer(struct spw_stats_writer *w)
{
    pthread_mutex_lock(&open_lock);
    for (int i = 0; i < MAX_OPEN; i++)
        if (open_writers[i] == w)
            open_writers[i] = NULL;
    pthread_mutex_unlock(&open_lock);
}

/* Whether this process has a writer open on path. */
static bool open_here(const char *path)
{
    bool found = false;
    pthread_mutex_lock(&open_lock);
    for (int i = 0; i < MAX_OPEN && !found; i++)
        found = open_writers[i] && strcmp(open_writers[i]->path, path) == 0;
    pthread_mutex_unlock(&open_lock);
    return found;
}

/* What an existing file with the name a writer wants is to it. */
enum existing {
    EXISTING_STALE,  /* ours, left behind: replaced */
    EXISTING_OPEN,   /* a writer of this process holds it: refused */
    EXISTING_OTHERS, /* someone else's: left alone, another name is tried */
};

/* Whether a file without its pid namespace yet is young enough to belong
 * to a writer between its create and its first write (create_at), rather
 * than to one killed there. */
static bool being_created(const struct stat *st)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return now.tv_sec - st->st_mtim.tv_sec < SPW_STATS_INIT_GRACE_S;
}

/* A file with our name is stale when it is ours (same owner, same pid
 * namespace) and no writer of this process has it open: it was left by an
 * earlier process with our pid (other start time), by this very process
 * before an exec (same pid and start time, but exec skips atexit), or by a
 * writer killed during initialisation. A writer of another pid namespace
 * sharing the directory, live or still initialising (its namespace is
 * written first: create_at), and another user's file are someone else's;
 * so is a young file with no namespace written yet, since within our own
 * namespace no other process can be creating our pid's name. */
static enum existing judge_existing(int dirfd, const char *name, const char *path)
{
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return EXISTING_OTHERS;
    struct stat st;
    struct spw_stats_header h;
    memset(&h, 0, sizeof h);
    enum existing v = EXISTING_OTHERS;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid()) {
        ssize_t n = pread(fd, &h, offsetof(struct spw_stats_header, cmdline), 0);
        bool published = n >= (ssize_t)offsetof(struct spw_stats_header, text_generation) &&
                         h.magic == SPW_STATS_MAGIC;
        uint64_t mine = spw_proc_self_pid_ns();
        if (published ? h.pid_ns != mine : h.pid_ns != 0 ? h.pid_ns != mine : being_created(&st))
            v = EXISTING_OTHERS;
        else
            v = published && open_here(path) ? EXISTING_OPEN : EXISTING_STALE;
    }
    close(fd);
    return v;
}

/* Creates w->name, replacing a stale file of that name; -1 with errno, and
 * *seen what held the name. Mode 0400: the writer keeps the descriptor it
 * created it with, and no one else (root aside) can open it for writing,
 * so no `truncate` or `: >` of the user's can shrink the file under the
 * writer's mapping, whose next counter update would die of SIGBUS. The pid namespace is the first thing written,
 * before the file has its size, so that a writer of another namespace
 * finding the name taken while this one initialises leaves it. */
static int create_at(struct spw_stats_writer *w, uint64_t pid_ns, enum existing *seen)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd = openat(w->dirfd, w->name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400);
        if (fd >= 0) {
            if (pwrite(fd, &pid_ns, sizeof pid_ns, offsetof(struct spw_stats_header, pid_ns)) !=
                (ssize_t)sizeof pid_ns) {
                int e = errno;
                close(fd);
                unlinkat(w->dirfd, w->name, 0);
                errno = e;
                return -1;
            }
            return fd;
        }
        if (errno != EEXIST)
            return -1;
        /* Judged again after our unlink too: a writer that keeps no
         * directory lock (not this version) may have taken the name
         * meanwhile, and its file sends us to the other name as any. */
        *seen = judge_existing(w->dirfd, w->name, w->path);
        if (*seen != EXISTING_STALE || attempt > 0) {
            errno = EEXIST;
            return -1;
        }
        unlinkat(w->dirfd, w->name, 0);
    }
    errno = EEXIST;
    return -1;
}

static void set_name(struct spw_stats_writer *w, const char *dir, uint64_t pid_ns)
{
    if (pid_ns)
        snprintf(w->name, sizeof w->name, SPW_STATS_NAME_NS_FORMAT, (unsigned)geteuid(), (int)getpid(),
                 (unsigned long long)pid_ns);
    else
        snprintf(w->name, sizeof w->name, SPW_STATS_NAME_FORMAT, (unsigned)geteuid(), (int)getpid());
    snprintf(w->path, sizeof w->path, "%s/%s", dir, w->name);
}

/* spillway.<uid>.<pid>, or, when a writer of another pid namespace holds
 * that name (pods sharing a node's directory, each with its own pid 1),
 * the name qualified by our pid namespace. Judging, replacing and creating
 * happen under the directory's lock: two writers that both found one
 * abandoned file stale would otherwise each unlink it, the later one the
 * earlier one's new file (and a reader burying it likewise). Without the
 * lock (held elsewhere past its wait, or a file system without flock) the
 * writer goes on as one that keeps none: the race is rare, and a program
 * must neither hang nor lose its stats for it. */
static int create_file(struct spw_stats_writer *w, const char *dir, char *err, size_t errlen)
{
    uint64_t ns = spw_proc_self_pid_ns();
    enum existing seen = EXISTING_STALE;
    int lock = spw_stats_dir_lock(w->dirfd, SPW_STATS_DIRLOCK_WAIT_MS);
    set_name(w, dir, 0);
    int fd = create_at(w, ns, &seen);
    if (fd < 0 && errno == EEXIST && seen == EXISTING_OTHERS && ns != 0) {
        set_name(w, dir, ns);
        fd = create_at(w, ns, &seen);
    }
    int e = errno;
    spw_stats_dir_unlock(lock);
    if (fd < 0)
        fail(err, errlen, "cannot create %s: %s", w->path, strerror(e));
    errno = e;
    return fd;
}

static void copy_text(char *dst, size_t cap, const char *src)
{
    size_t n = src ? strnlen(src, cap - 1) : 0;
    memcpy(dst, src ? src : "", n);
    memset(dst + n, 0, cap - n);
}

/* The config as it fits (layout.h): whole, or cut after the last whole
 * entry that leaves room for SPW_STATS_CONFIG_CUT. */
static void copy_config(char *dst, size_t cap, const char *src)
{
    size_t n = src ? strlen(src) : 0, mark = sizeof SPW_STATS_CONFIG_CUT - 1;
    if (n < cap) {
        copy_text(dst, cap, src);
        return;
    }
    size_t keep = cap - 1 - mark;
    while (keep > 0 && src[keep - 1] != '\n')
        keep--;
    memcpy(dst, src, keep);
    memcpy(dst + keep, SPW_STATS_CONFIG_CUT, mark);
    memset(dst + keep + mark, 0, cap - keep - mark);
}

/* The command line as it fits (layout.h, spw_cmdline_fit), the rest of
 * the field zeroed. */
static void copy_cmdline(char *dst, size_t cap, const char *src)
{
    memset(dst, 0, cap);
    spw_cmdline_fit(dst, cap, src, strlen(src));
}

static void fill_header(struct spw_stats_writer *w, const struct spw_stats_params *p)
{
    struct spw_stats_header *h = w->hdr;
    h->abi_version = SPW_STATS_ABI_VERSION;
    h->header_size = sizeof *h;
    h->total_size = spw_stats_total_size(p->device_count);
    h->device_count = p->device_count;
    h->device_size = sizeof(struct spw_stats_device);
    h->counter_count = SPW_C_COUNT;
    h->uid = (uint32_t)geteuid();
    h->pid = (int32_t)getpid();
    h->host_pid = (int32_t)spw_proc_self_outer_pid();
    h->pid_ns = spw_proc_self_pid_ns();
    uint64_t st = 0;
    if (spw_proc_start_time(getpid(), &st) == 0)
        h->start_time = st;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    h->created_unix_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    /* A byte more than the field holds: a longer command shows as one. */
    char joined[SPW_STATS_CMDLINE_LEN + 1];
    if (!p->cmdline)
        spw_proc_self_cmdline(joined, sizeof joined);
    copy_cmdline(h->cmdline, sizeof h->cmdline, p->cmdline ? p->cmdline : joined);
    copy_config(h->config, sizeof h->config, p->config);
}

static int map_segment(struct spw_stats_writer *w, int fd, char *err, size_t errlen)
{
    /* Reserve the pages now: a tmpfs that is full would otherwise answer a
     * later counter update with SIGBUS inside the user's program. */
    int rc = posix_fallocate(fd, 0, (off_t)w->size);
    if (rc != 0) {
        fail(err, errlen, "cannot size %s: %s", w->path, strerror(rc));
        return -1;
    }
    void *m = mmap(NULL, w->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        fail(err, errlen, "cannot map %s: %s", w->path, strerror(errno));
        return -1;
    }
    w->hdr = m;
    w->dev = (struct spw_stats_device *)((char *)m + sizeof(struct spw_stats_header));
    return 0;
}

static int open_dir(const struct spw_stats_params *p, char *dir, size_t dirlen)
{
    /* The directory is the caller's (its SPILLWAY_STATS_DIR option, whose
     * default lives in the option table only). */
    const char *d = p->dir ? p->dir : "";
    snprintf(dir, dirlen, "%s", d);
    if (!*d) {
        errno = ENOENT;
        return -1;
    }
    return open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

int spw_stats_open(struct spw_stats_writer **out, const struct spw_stats_params *p,
                   char *err, size_t errlen)
{
    *out = NULL;
    if (!p || p->device_count < 1 || p->device_count > SPW_STATS_MAX_DEVICES) {
        fail(err, errlen, "device count %u out of range 1..%u", p ? p->device_count : 0,
             SPW_STATS_MAX_DEVICES);
        return -1;
    }
    struct spw_stats_writer *w = calloc(1, sizeof *w);
    if (!w) {
        fail(err, errlen, "out of memory");
        return -1;
    }
    char dir[400];
    w->dirfd = open_dir(p, dir, sizeof dir);
    if (w->dirfd < 0) {
        fail(err, errlen, "cannot open directory %s: %s", dir, strerror(errno));
        free(w);
        return -1;
    }
    w->device_count = p->device_count;
    w->size = (size_t)spw_stats_total_size(p->device_count);
    w->owner_pid = getpid();

    int fd = create_file(w, dir, err, errlen);
    if (fd < 0)
        goto fail_dir;
    if (map_segment(w, fd, err, errlen) != 0)
        goto fail_file;
    close(fd);
    fill_header(w, p);
    if (register_writer(w) != 0) {
        fail(err, errlen, "more than %d segments open in one process", MAX_OPEN);
        munmap(w->hdr, w->size);
        goto fail_unlink;
    }
    /* Publish: readers treat the segment as valid from here on. */
    atomic_store_explicit(&w->hdr->magic, SPW_STATS_MAGIC, memory_order_release);
    *out = w;
    return 0;

fail_file:
    close(fd);
fail_unlink:
    unlinkat(w->dirfd, w->name, 0);
fail_dir:
    close(w->dirfd);
    free(w);
    return -1;
}

void spw_stats_set_config(struct spw_stats_writer *w, const char *config)
{
    if (!w)
        return;
    struct spw_stats_header *h = w->hdr;
    uint64_t g = atomic_load_explicit(&h->text_generation, memory_order_relaxed);
    atomic_store_explicit(&h->text_generation, g + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    copy_config(h->config, sizeof h->config, config);
    atomic_store_explicit(&h->text_generation, g + 2, memory_order_release);
}

void spw_stats_close(struct spw_stats_writer *w)
{
    if (!w)
        return;
    unregister_writer(w);
    if (!w->unlinked && w->owner_pid == getpid())
        unlinkat(w->dirfd, w->name, 0);
    munmap(w->hdr, w->size);
    close(w->dirfd);
    free(w);
}

const char *spw_stats_path(const struct spw_stats_writer *w)
{
    return w ? w->path : "";
}
