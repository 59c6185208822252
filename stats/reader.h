/* The stats reader shared by the tools: finds segments, validates every field
 * it copies out, takes consistent snapshots, and removes the segments of
 * dead owners of the same user.
 *
 * Segments are never mapped: they are copied out with pread and validated in
 * the copy, so a segment truncated or rewritten while it is read can make a
 * read fail but never crash the reader (no SIGBUS, no torn pointer). */
#ifndef SPILLWAY_STATS_READER_H
#define SPILLWAY_STATS_READER_H
#include "stats/layout.h"
#include "stats/procinfo.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct spw_stats_snapshot {
    char name[64];                 /* file name inside the directory */
    uint32_t uid;
    int32_t pid;                   /* in the writer's pid namespace */
    int32_t host_pid;              /* outermost pid the writer saw */
    pid_t local_pid;               /* the pid in the reader's namespace, 0 when unknown */
    uint64_t pid_ns;
    uint64_t start_time;
    uint64_t created_unix_ns;
    enum spw_liveness liveness;
    uint32_t device_count;
    /* Text, NUL-terminated, sanitised: printable ASCII and valid UTF-8
     * (spw_stats_utf8_char) pass, any other byte is '?' (config keeps its
     * '\n'), so it is safe to print on a terminal. */
    char cmdline[SPW_STATS_CMDLINE_LEN];
    char config[SPW_STATS_CONFIG_LEN];
    bool cmdline_truncated;        /* cmdline was cut and ends with SPW_STATS_CMDLINE_CUT (layout.h) */
    bool config_truncated;         /* config ends with SPW_STATS_CONFIG_CUT: entries are missing */
    uint64_t c[SPW_STATS_MAX_DEVICES][SPW_C_COUNT];
};

enum spw_read_result {
    SPW_READ_OK,          /* *out holds a validated snapshot */
    SPW_READ_BAD,         /* invalid segment, skipped; why says what is wrong */
    SPW_READ_NOT_READY,   /* being initialised (magic still zero) */
    SPW_READ_OTHER_USER,  /* another user's segment, not asked for */
    SPW_READ_DEAD,        /* owner is dead; removed if it was ours and asked to */
    SPW_READ_NOT_SEGMENT, /* the name is not spillway.<uid>.<pid>[.<pidns>] */
};

enum {
    SPW_SCAN_REMOVE_DEAD = 1u << 0, /* unlink dead owners' segments of our uid (every uid's with ALL_USERS) */
    SPW_SCAN_ALL_USERS = 1u << 1,   /* also return other users' (root only can read them) */
};

/* Validates a copied-out segment image of len bytes whose file is owned by
 * file_uid and decodes it. 0, or -1 with why. Does not look at /proc
 * (liveness and local_pid are left UNKNOWN/0). */
int spw_stats_decode(const void *buf, size_t len, uint32_t file_uid,
                     struct spw_stats_snapshot *out, char *why, size_t whylen);

/* The part of spw_stats_decode that identifies the writer: magic, geometry,
 * uid, pids, pid namespace, start time. These are fixed once the segment is
 * published, so they can be trusted when the text fields cannot (a writer
 * that died while rewriting them): enough to judge the owner's liveness.
 * Leaves text empty and counters unset. 0, or -1 with why. */
int spw_stats_decode_owner(const void *buf, size_t len, uint32_t file_uid,
                           struct spw_stats_snapshot *out, char *why, size_t whylen);

/* Whether the image's text seqlock is odd: its writer was rewriting the
 * text fields when the image was taken (or died doing so). */
int spw_stats_text_busy(const void *buf, size_t len);

/* Parses "spillway.<uid>.<pid>" (*pid_ns = 0) or
 * "spillway.<uid>.<pid>.<pidns>" (SPW_STATS_NAME_NS_FORMAT); 0 or -1. */
int spw_stats_parse_name(const char *name, uint32_t *uid, int32_t *pid, uint64_t *pid_ns);

/* Reads one segment by name from an open directory. For SPW_READ_DEAD,
 * *removed tells whether it was unlinked. */
enum spw_read_result spw_stats_read_at(int dirfd, const char *name, unsigned flags,
                                       struct spw_stats_snapshot *out, int *removed,
                                       char *why, size_t whylen);

/* Called for every segment skipped or removed, with a one-line reason. */
typedef void (*spw_stats_note_fn)(void *ctx, const char *name, const char *why);

struct spw_stats_list {
    struct spw_stats_snapshot *items; /* live (or liveness-unknown) segments */
    size_t n;
    size_t skipped;                   /* bad ones */
    size_t removed;                   /* dead ones unlinked */
};

/* Reads every segment in dir (the readers' SPILLWAY_STATS_DIR: the option
 * table holds its default). 0, or -1 with why (no directory, or it cannot
 * be read). note may be NULL. */
int spw_stats_scan(const char *dir, unsigned flags, struct spw_stats_list *list,
                   spw_stats_note_fn note, void *ctx, char *why, size_t whylen);
void spw_stats_list_free(struct spw_stats_list *list);

/* The length in bytes of the character at s (n bytes readable) if it is
 * one to show as it is: printable ASCII (1), or a valid UTF-8 sequence
 * (2 to 4: shortest form, no surrogate, at most U+10FFFF) that is no C1
 * control, line separator nor bidirectional control. 0 otherwise. */
size_t spw_stats_utf8_char(const char *s, size_t n);

/* Exported names and kinds of the counters (from SPW_STATS_COUNTERS). */
const char *spw_stats_counter_name(enum spw_counter k);
const char *spw_stats_counter_help(enum spw_counter k);
int spw_stats_counter_is_gauge(enum spw_counter k);
#endif
