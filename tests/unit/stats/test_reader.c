/* The reader against hostile segments: each kind of damage is skipped with a
 * reason, never crashes, and a good segment next to them still reads. */
#include "tests/unit/check_compat.h"
#include "tests/unit/stats/image.h"
#include "stats/reader.h"

#include <errno.h>
#include <stddef.h>
#include <time.h>

static unsigned char *img;
static size_t img_len;
static struct spw_stats_snapshot snap;

static void setup(void)
{
    segdir_setup();
    img = valid_image(&img_len);
}

static void teardown(void)
{
    free(img);
    segdir_teardown();
}

/* Reads own_name() and returns the result; why gets the reason. */
static enum spw_read_result read_planted(char *why, size_t whylen)
{
    int dfd = open(segdir, O_RDONLY | O_DIRECTORY);
    int removed = 0;
    enum spw_read_result r = spw_stats_read_at(dfd, own_name(), 0, &snap, &removed, why, whylen);
    close(dfd);
    ck_assert_int_eq(removed, 0);
    return r;
}

static void expect_bad(const void *data, size_t len, mode_t mode, const char *reason)
{
    char why[256] = "";
    plant_file(own_name(), data, len, mode);
    enum spw_read_result r = read_planted(why, sizeof why);
    ck_assert_msg(r == SPW_READ_BAD, "accepted (%d), expected '%s'", r, reason);
    ck_assert_msg(strstr(why, reason) != NULL, "reason '%s', expected '%s'", why, reason);
}

static void put_u32(size_t off, uint32_t v) { memcpy(img + off, &v, 4); }
static void put_u64(size_t off, uint64_t v) { memcpy(img + off, &v, 8); }
#define OFF(f) offsetof(struct spw_stats_header, f)

START_TEST(valid_image_reads)
{
    char why[256] = "";
    plant_file(own_name(), img, img_len, 0600);
    ck_assert_int_eq(read_planted(why, sizeof why), SPW_READ_OK);
    ck_assert_uint_eq(snap.c[1][SPW_C_IN_USE], 4242); /* base, lanes, one below zero */
    ck_assert_uint_eq(snap.c[1][SPW_C_PEAK], 5000);
    ck_assert_uint_eq(snap.c[1][SPW_C_ALLOCS], 1);
    ck_assert_uint_eq(snap.c[1][SPW_C_FREES], 1);
    ck_assert_uint_eq(snap.c[0][SPW_C_LIMIT], 1u << 30);
    ck_assert_str_eq(snap.cmdline, "worker --id 7");
}
END_TEST

START_TEST(bad_magic) { put_u64(OFF(magic), 0x1234); expect_bad(img, img_len, 0600, "bad magic"); }
END_TEST
START_TEST(foreign_version) { put_u32(OFF(abi_version), 99); expect_bad(img, img_len, 0600, "ABI version 99"); }
END_TEST
START_TEST(wrong_header_size) { put_u32(OFF(header_size), 64); expect_bad(img, img_len, 0600, "header size"); }
END_TEST
START_TEST(wrong_device_size) { put_u32(OFF(device_size), 8); expect_bad(img, img_len, 0600, "device size"); }
END_TEST
START_TEST(wrong_counter_count) { put_u32(OFF(counter_count), 99); expect_bad(img, img_len, 0600, "counter count"); }
END_TEST
START_TEST(device_count_zero) { put_u32(OFF(device_count), 0); expect_bad(img, img_len, 0600, "device count 0"); }
END_TEST
START_TEST(device_count_huge)
{
    put_u32(OFF(device_count), 0xffffffffu);
    expect_bad(img, img_len, 0600, "device count 4294967295");
}
END_TEST
START_TEST(device_count_beyond_file)
{
    /* Consistent total_size for 3 devices, but the file holds 2. */
    put_u32(OFF(device_count), 3);
    put_u64(OFF(total_size), spw_stats_total_size(3));
    expect_bad(img, img_len, 0600, "but file has");
}
END_TEST
START_TEST(device_count_past_the_maximum)
{
    /* One device more than a snapshot holds, every size consistent with it. */
    uint32_t n = SPW_STATS_MAX_DEVICES + 1;
    size_t len = (size_t)spw_stats_total_size(n);
    unsigned char *big = calloc(1, len);
    ck_assert_ptr_nonnull(big);
    memcpy(big, img, img_len);
    memcpy(big + OFF(device_count), &n, 4);
    uint64_t total = len;
    memcpy(big + OFF(total_size), &total, 8);
    /* The decoder refuses it on its own (a snapshot holds 64 devices)... */
    char want[64], why[256] = "";
    snprintf(want, sizeof want, "device count %u out of range", n);
    ck_assert_int_eq(spw_stats_decode(big, len, (uint32_t)geteuid(), &snap, why, sizeof why), -1);
    ck_assert_msg(strstr(why, want) != NULL, "reason '%s', expected '%s'", why, want);
    /* ... and the reader before it, by the file's size. */
    expect_bad(big, len, 0600, "out of range");
    free(big);
}
END_TEST
START_TEST(truncated_file) { expect_bad(img, img_len - 100, 0600, "total size"); }
END_TEST

/* The lanes of the counters every allocation and launch changes (ABI 4, 5) end each
 * device: a file cut inside them, a segment laid out without them, or an
 * ABI 3 one (no lanes) is refused, saying why, never read short. */
START_TEST(lane_area_cut_is_refused)
{
    char want[128];
    size_t cut = img_len - (size_t)SPW_L_COUNT * SPW_STATS_LANES * SPW_STATS_CACHELINE / 2;
    snprintf(want, sizeof want, "total size %zu but file has %zu bytes", img_len, cut);
    expect_bad(img, cut, 0600, want);
    expect_bad(img, img_len - 8, 0600, "truncated or grown"); /* the last lane's last bytes */
}
END_TEST
START_TEST(lane_area_missing_is_refused)
{
    /* A writer that left the lanes out: every size consistent but the device's. */
    uint32_t ds = SPW_C_COUNT * SPW_STATS_CACHELINE;
    size_t len = sizeof(struct spw_stats_header) + IMAGE_DEVICES * ds;
    put_u32(OFF(device_size), ds);
    put_u64(OFF(total_size), len);
    char want[128];
    snprintf(want, sizeof want, "device size %u, expected %zu", ds, sizeof(struct spw_stats_device));
    expect_bad(img, len, 0600, want);
    expect_bad(img, len, 0600, "lanes");
}
END_TEST
START_TEST(abi_3_segment_is_refused)
{
    uint32_t ds = SPW_C_COUNT * SPW_STATS_CACHELINE; /* ABI 3: counters only */
    size_t len = sizeof(struct spw_stats_header) + IMAGE_DEVICES * ds;
    put_u32(OFF(abi_version), 3);
    put_u32(OFF(device_size), ds);
    put_u64(OFF(total_size), len);
    char want[64];
    snprintf(want, sizeof want, "ABI version 3, this reader knows %u", SPW_STATS_ABI_VERSION);
    expect_bad(img, len, 0600, want);
}
END_TEST
START_TEST(truncated_below_header) { expect_bad(img, 100, 0600, "size 100 out of range"); }
END_TEST
/* A writer creates its file, writes its pid namespace, then sizes it:
 * meanwhile the file is shorter than a header and has no magic. That is
 * a segment being initialised, quietly skipped (it was counted and noted
 * as invalid, spillway_skipped_segments 1 whenever a program started),
 * and removed as never initialised once old. */
START_TEST(segment_being_created_is_quietly_skipped)
{
    static const unsigned char zeros[64];
    char why[256] = "";
    for (size_t len = 0; len <= sizeof zeros; len += 48) {
        plant_file(own_name(), zeros, len, 0600);
        ck_assert_msg(read_planted(why, sizeof why) == SPW_READ_NOT_READY, "%zu bytes: %s", len, why);
    }
    struct spw_stats_list list;
    ck_assert_int_eq(spw_stats_scan(segdir, SPW_SCAN_REMOVE_DEAD, &list, NULL, NULL, why, sizeof why), 0);
    ck_assert_uint_eq(list.skipped, 0);
    ck_assert_uint_eq(list.removed, 0);
    spw_stats_list_free(&list);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", segdir, own_name());
    struct timespec old[2] = {{time(NULL) - 3600, 0}, {time(NULL) - 3600, 0}};
    ck_assert_int_eq(utimensat(AT_FDCWD, path, old, 0), 0);
    ck_assert_int_eq(spw_stats_scan(segdir, SPW_SCAN_REMOVE_DEAD, &list, NULL, NULL, why, sizeof why), 0);
    ck_assert_uint_eq(list.removed, 1);
    spw_stats_list_free(&list);
    ck_assert_int_eq(segdir_count(), 0);
}
END_TEST
START_TEST(unterminated_cmdline)
{
    memset(img + OFF(cmdline), 'A', SPW_STATS_CMDLINE_LEN);
    expect_bad(img, img_len, 0600, "command line not terminated");
}
END_TEST
START_TEST(unterminated_config)
{
    memset(img + OFF(config), 'B', SPW_STATS_CONFIG_LEN);
    expect_bad(img, img_len, 0600, "config not terminated");
}
END_TEST
START_TEST(uid_field_mismatch)
{
    put_u32(OFF(uid), geteuid() + 1);
    expect_bad(img, img_len, 0600, "uid field");
}
END_TEST
START_TEST(pid_field_mismatch)
{
    put_u32(OFF(pid), (uint32_t)getpid() + 1);
    expect_bad(img, img_len, 0600, "named for pid");
}
END_TEST
/* The name qualified by the pid namespace (a second writer with the same
 * pid in another namespace) reads when the header's namespace is the one
 * named, and is refused otherwise. */
START_TEST(namespace_in_the_name_must_match)
{
    uint64_t ns;
    memcpy(&ns, img + OFF(pid_ns), 8);
    char name[96], why[256] = "";
    snprintf(name, sizeof name, "%s.%llu", own_name(), (unsigned long long)ns);
    plant_file(name, img, img_len, 0600);
    int dfd = open(segdir, O_RDONLY | O_DIRECTORY), removed = 0;
    ck_assert_int_eq(spw_stats_read_at(dfd, name, 0, &snap, &removed, why, sizeof why), SPW_READ_OK);
    ck_assert_str_eq(snap.name, name);
    ck_assert_int_eq(snap.liveness, SPW_ALIVE);
    put_u64(OFF(pid_ns), ns + 1);
    plant_file(name, img, img_len, 0600);
    ck_assert_int_eq(spw_stats_read_at(dfd, name, 0, &snap, &removed, why, sizeof why), SPW_READ_BAD);
    ck_assert_msg(strstr(why, "pid namespace field") != NULL, "%s", why);
    close(dfd);
}
END_TEST
START_TEST(negative_pid) { put_u32(OFF(pid), 0x80000000u); expect_bad(img, img_len, 0600, "invalid pid"); }
END_TEST
START_TEST(world_readable)
{
    expect_bad(img, img_len, 0644, "mode 0644");
    expect_bad(img, img_len, 0640, "mode 0640"); /* the group alone */
    expect_bad(img, img_len, 0602, "mode 0602"); /* others alone */
}
END_TEST
START_TEST(text_being_rewritten) { put_u64(OFF(text_generation), 3); expect_bad(img, img_len, 0600, "rewritten"); }
END_TEST

/* Reads own_name() with flags; *removed gets whether it was unlinked. */
static enum spw_read_result read_planted_flags(unsigned flags, int *removed, char *why, size_t whylen)
{
    int dfd = open(segdir, O_RDONLY | O_DIRECTORY);
    enum spw_read_result r = spw_stats_read_at(dfd, own_name(), flags, &snap, removed, why, whylen);
    close(dfd);
    return r;
}

/* A live writer in the middle of a rewrite is skipped for now, never
 * removed: its next read will find the text settled. */
START_TEST(live_writer_mid_rewrite_is_kept)
{
    put_u64(OFF(text_generation), 3);
    plant_file(own_name(), img, img_len, 0600);
    char why[256] = "";
    int removed = -1;
    ck_assert_int_eq(read_planted_flags(SPW_SCAN_REMOVE_DEAD, &removed, why, sizeof why), SPW_READ_BAD);
    ck_assert_int_eq(removed, 0);
    ck_assert_msg(strstr(why, "rewritten") != NULL, "%s", why);
    ck_assert_int_eq(segdir_count(), 1);
}
END_TEST

/* A writer that died while rewriting its text (seqlock left odd, text half
 * written: here without its terminator) is judged by its owner fields like
 * any dead writer: reported dead, and removed when asked. */
START_TEST(dead_writer_mid_rewrite_is_removed)
{
    put_u64(OFF(text_generation), 5);
    put_u64(OFF(start_time), 1); /* our pid, another start time: the owner is gone */
    memset(img + OFF(config), 'C', SPW_STATS_CONFIG_LEN);
    plant_file(own_name(), img, img_len, 0600);
    char why[256] = "";
    int removed = -1;
    ck_assert_int_eq(read_planted_flags(0, &removed, why, sizeof why), SPW_READ_DEAD);
    ck_assert_int_eq(removed, 0);
    ck_assert_int_eq(segdir_count(), 1);
    ck_assert_int_eq(read_planted_flags(SPW_SCAN_REMOVE_DEAD, &removed, why, sizeof why), SPW_READ_DEAD);
    ck_assert_int_eq(removed, 1);
    ck_assert_msg(strstr(why, "is gone") != NULL && strstr(why, "rewriting") != NULL, "%s", why);
    ck_assert_int_eq(segdir_count(), 0);
}
END_TEST

/* Mid-rewrite does not excuse a broken owner: a segment whose identity
 * fields are bad is still refused, never judged dead and removed. */
START_TEST(mid_rewrite_with_bad_identity_is_not_removed)
{
    put_u64(OFF(text_generation), 1);
    put_u64(OFF(start_time), 1);
    put_u32(OFF(pid), (uint32_t)getpid() + 1); /* pid field disagrees with the name */
    plant_file(own_name(), img, img_len, 0600);
    char why[256] = "";
    int removed = -1;
    ck_assert_int_eq(read_planted_flags(SPW_SCAN_REMOVE_DEAD, &removed, why, sizeof why), SPW_READ_BAD);
    ck_assert_int_eq(removed, 0);
    ck_assert_msg(strstr(why, "named for pid") != NULL, "%s", why);
    ck_assert_int_eq(segdir_count(), 1);
}
END_TEST

START_TEST(not_initialised_is_quietly_skipped)
{
    char why[256];
    put_u64(OFF(magic), 0);
    plant_file(own_name(), img, img_len, 0600);
    ck_assert_int_eq(read_planted(why, sizeof why), SPW_READ_NOT_READY);
}
END_TEST

START_TEST(abandoned_initialisation_is_removed)
{
    put_u64(OFF(magic), 0);
    plant_file(own_name(), img, img_len, 0600);
    char path[512], why[256] = "";
    snprintf(path, sizeof path, "%s/%s", segdir, own_name());
    struct timespec old[2] = {{time(NULL) - 3600, 0}, {time(NULL) - 3600, 0}};
    ck_assert_int_eq(utimensat(AT_FDCWD, path, old, 0), 0);
    int dfd = open(segdir, O_RDONLY | O_DIRECTORY), removed = 0;
    ck_assert_int_eq(spw_stats_read_at(dfd, own_name(), 0, &snap, &removed, why, sizeof why), SPW_READ_DEAD);
    ck_assert_int_eq(removed, 0);
    ck_assert_int_eq(spw_stats_read_at(dfd, own_name(), SPW_SCAN_REMOVE_DEAD, &snap, &removed, why, sizeof why),
                     SPW_READ_DEAD);
    ck_assert_int_eq(removed, 1);
    ck_assert_msg(strstr(why, "never initialised") != NULL, "%s", why);
    ck_assert_int_eq(segdir_count(), 0);
    close(dfd);
}
END_TEST

/* A reader buries only under the directory's lock (stats/dirlock.h), and
 * never waits for it: while a writer holds it, a dead segment is left for
 * the next scan. */
START_TEST(dead_segment_waits_for_a_busy_directory)
{
    put_u64(OFF(start_time), 1); /* our pid, another start time: the owner is gone */
    plant_file(own_name(), img, img_len, 0600);
    char why[256] = "";
    int removed = -1, lock = segdir_lock();
    ck_assert_int_eq(read_planted_flags(SPW_SCAN_REMOVE_DEAD, &removed, why, sizeof why), SPW_READ_DEAD);
    ck_assert_int_eq(removed, 0);
    ck_assert_msg(strstr(why, "directory busy") != NULL, "%s", why);
    ck_assert_int_eq(segdir_count(), 1);
    close(lock);
    ck_assert_int_eq(read_planted_flags(SPW_SCAN_REMOVE_DEAD, &removed, why, sizeof why), SPW_READ_DEAD);
    ck_assert_int_eq(removed, 1);
    ck_assert_int_eq(segdir_count(), 0);
}
END_TEST

START_TEST(symlink_is_refused)
{
    plant_file("target", img, img_len, 0600);
    char link[512], why[256] = "";
    snprintf(link, sizeof link, "%s/%s", segdir, own_name());
    ck_assert_int_eq(symlink("target", link), 0);
    ck_assert_int_eq(read_planted(why, sizeof why), SPW_READ_BAD);
    ck_assert_msg(strstr(why, "symbolic link") != NULL, "%s", why);
}
END_TEST

START_TEST(directory_and_fifo_are_refused)
{
    char path[512], why[256] = "";
    snprintf(path, sizeof path, "%s/%s", segdir, own_name());
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    ck_assert_int_eq(read_planted(why, sizeof why), SPW_READ_BAD);
    ck_assert_msg(strstr(why, "not a regular file") != NULL, "%s", why);
    unlink(path);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    ck_assert_int_eq(read_planted(why, sizeof why), SPW_READ_BAD);
}
END_TEST

/* A segment whose file belongs to another user: skipped as another user's
 * by default, refused when its owner and its name disagree. Needs root to
 * chown; otherwise the uid-field case above covers the header side. */
START_TEST(other_users_segment)
{
    if (geteuid() != 0) {
        printf("other_users_segment: not root, chown case skipped\n");
        return;
    }
    char why[256] = "";
    plant_file(own_name(), img, img_len, 0600);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", segdir, own_name());
    ck_assert_int_eq(chown(path, 4242, 4242), 0);
    ck_assert_int_eq(read_planted(why, sizeof why), SPW_READ_BAD);
    ck_assert_msg(strstr(why, "named for uid") != NULL, "%s", why);
    /* Consistently another user's (name, owner and uid field agree). */
    char name[64];
    snprintf(name, sizeof name, "spillway.4242.%d", (int)getpid());
    put_u32(OFF(uid), 4242);
    plant_file(name, img, img_len, 0600);
    snprintf(path, sizeof path, "%s/%s", segdir, name);
    ck_assert_int_eq(chown(path, 4242, 4242), 0);
    int dfd = open(segdir, O_RDONLY | O_DIRECTORY), removed = 0;
    ck_assert_int_eq(spw_stats_read_at(dfd, name, 0, &snap, &removed, why, sizeof why), SPW_READ_OTHER_USER);
    ck_assert_int_eq(spw_stats_read_at(dfd, name, SPW_SCAN_ALL_USERS, &snap, &removed, why, sizeof why),
                     SPW_READ_OK);
    ck_assert_uint_eq(snap.uid, 4242);
    /* It names this process (root's), pid and start time alike, which
     * anyone can read: not proof that this is its owner. Shown, but not
     * alive and with no pid here to be labelled or killed as. */
    ck_assert_int_eq(snap.liveness, SPW_UNKNOWN);
    ck_assert_int_eq(snap.local_pid, 0);
    /* Its pid in another namespace does not help either (the search by
     * namespace finds this process and then its uid). */
    uint64_t own_ns;
    memcpy(&own_ns, img + OFF(pid_ns), 8);
    put_u64(OFF(pid_ns), 1);
    plant_file(name, img, img_len, 0600);
    ck_assert_int_eq(chown(path, 4242, 4242), 0);
    ck_assert_int_eq(spw_stats_read_at(dfd, name, SPW_SCAN_ALL_USERS | SPW_SCAN_REMOVE_DEAD, &snap, &removed,
                                       why, sizeof why),
                     SPW_READ_OK);
    ck_assert_int_eq(snap.liveness, SPW_UNKNOWN);
    ck_assert_int_eq(snap.local_pid, 0);
    /* Unknown is not dead: kept, even by a reader that removes the dead. */
    ck_assert_int_eq(removed, 0);
    ck_assert_int_eq(access(path, F_OK), 0);
    put_u64(OFF(pid_ns), own_ns);
    /* Dead and another user's: left to its owner's readers by default... */
    put_u64(OFF(start_time), 1);
    plant_file(name, img, img_len, 0600);
    ck_assert_int_eq(chown(path, 4242, 4242), 0);
    ck_assert_int_eq(spw_stats_read_at(dfd, name, SPW_SCAN_REMOVE_DEAD, &snap, &removed, why, sizeof why),
                     SPW_READ_OTHER_USER);
    ck_assert_int_eq(spw_stats_read_at(dfd, name, SPW_SCAN_ALL_USERS, &snap, &removed, why, sizeof why),
                     SPW_READ_DEAD);
    ck_assert_int_eq(removed, 0);
    ck_assert_int_eq(access(path, F_OK), 0);
    /* ...and removed by root's reader of every user (the node's exporter:
     * a crashed pod's file is no one else's to remove), on the judgment
     * that hid it. */
    ck_assert_int_eq(spw_stats_read_at(dfd, name, SPW_SCAN_ALL_USERS | SPW_SCAN_REMOVE_DEAD, &snap,
                                       &removed, why, sizeof why), SPW_READ_DEAD);
    ck_assert_int_eq(removed, 1);
    ck_assert_msg(strstr(why, "removed") != NULL, "%s", why);
    ck_assert_int_eq(access(path, F_OK), -1);
    close(dfd);
}
END_TEST

START_TEST(terminal_escapes_are_neutralised)
{
    const char evil[] = "rm\x1b[2J\x9b" "31m\x07ok";
    memcpy(img + OFF(cmdline), evil, sizeof evil);
    char why[256] = "";
    plant_file(own_name(), img, img_len, 0600);
    ck_assert_int_eq(read_planted(why, sizeof why), SPW_READ_OK);
    ck_assert_str_eq(snap.cmdline, "rm?[2J?31m?ok");
}
END_TEST

/* Valid UTF-8 (a user's /home/josé, a €) is text to show; what a terminal
 * would act on (C1 controls, even well formed, bidi controls) and what is
 * not UTF-8 (overlong, surrogate, cut short, stray continuation) is not. */
START_TEST(valid_utf8_passes_invalid_is_replaced)
{
    const char text[] = "/home/jos\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80|\xc2\x9b|\xc0\xaf|\xed\xa0\x80|"
                        "\xe2\x80\xae|\x80|\xf4\x90\x80\x80|\xe2\x82";
    memcpy(img + OFF(cmdline), text, sizeof text);
    char why[256] = "";
    plant_file(own_name(), img, img_len, 0600);
    ck_assert_int_eq(read_planted(why, sizeof why), SPW_READ_OK);
    ck_assert_str_eq(snap.cmdline, "/home/jos\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80|??|??|???|???|?|????|??");
    ck_assert_uint_eq(spw_stats_utf8_char("\xe2\x82\xac", 3), 3);
    ck_assert_uint_eq(spw_stats_utf8_char("\xe2\x82\xac", 2), 0);
    ck_assert_uint_eq(spw_stats_utf8_char("\x1b", 1), 0);
}
END_TEST

START_TEST(names_are_parsed_strictly)
{
    uint32_t uid;
    int32_t pid;
    uint64_t ns;
    ck_assert_int_eq(spw_stats_parse_name("spillway.1000.42", &uid, &pid, &ns), 0);
    ck_assert_uint_eq(uid, 1000);
    ck_assert_int_eq(pid, 42);
    ck_assert_uint_eq(ns, 0);
    ck_assert_int_eq(spw_stats_parse_name("spillway.0.10", &uid, &pid, &ns), 0);
    ck_assert_uint_eq(uid, 0);
    ck_assert_int_eq(spw_stats_parse_name("spillway.0.1.4026532448", &uid, &pid, &ns), 0);
    ck_assert_int_eq(pid, 1);
    ck_assert_uint_eq(ns, 4026532448u);
    ck_assert_int_eq(spw_stats_parse_name("spillway.0.1.18446744073709551615", &uid, &pid, &ns), 0);
    ck_assert_uint_eq(ns, UINT64_MAX);
    const char *bad[] = {"spillway.", "spillway.1", "spillway.1.", "spillway..2", "spillway.1.2x",
                         "spillway.1.0", "spillway.1.99999999999", "spillway.-1.2", "xspillway.1.2",
                         "spillway.4294967296.2", "spillway.1.2147483648",
                         "spillway.1.02", "spillway.01.2", "spillway.00.2", "spillway.1.2.",
                         "spillway.1.2.0", "spillway.1.2.03", "spillway.1.2.3.4", "spillway.1.2.3x",
                         "spillway.1.2.18446744073709551616", "spillway.1.2.123456789012345678901",
                         "spillway.1.2.-3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(spw_stats_parse_name(bad[i], &uid, &pid, &ns) == -1, "accepted %s", bad[i]);
}
END_TEST

static void collect(void *ctx, const char *name, const char *why)
{
    (void)name;
    (void)why;
    ++*(int *)ctx;
}

/* A directory of bad segments plus one good: the scan lists the good one,
 * counts and reports the others, ignores unrelated files. */
START_TEST(scan_skips_bad_ones_with_a_note)
{
    char name[64];
    snprintf(name, sizeof name, "spillway.%u.1", (unsigned)geteuid()); /* pid 1: never ours */
    plant_file(name, img, 10, 0600);
    snprintf(name, sizeof name, "spillway.%u.2", (unsigned)geteuid());
    plant_file(name, img, img_len, 0600); /* pid field mismatch */
    plant_file("unrelated-file", "x", 1, 0644);
    plant_file(own_name(), img, img_len, 0600);
    struct spw_stats_list list;
    int notes = 0;
    char why[256];
    ck_assert_int_eq(spw_stats_scan(segdir, SPW_SCAN_REMOVE_DEAD, &list, collect, &notes, why, sizeof why), 0);
    ck_assert_uint_eq(list.n, 1);
    ck_assert_uint_eq(list.skipped, 2);
    ck_assert_int_eq(notes, 2);
    ck_assert_int_eq(list.items[0].pid, getpid());
    spw_stats_list_free(&list);
    ck_assert_int_eq(spw_stats_scan("/nonexistent/dir", 0, &list, NULL, NULL, why, sizeof why), -1);
    ck_assert_msg(strstr(why, "/nonexistent/dir") != NULL, "%s", why);
    ck_assert_int_eq(spw_stats_scan(NULL, 0, &list, NULL, NULL, why, sizeof why), -1);
    ck_assert_msg(strstr(why, "no stats directory") != NULL, "%s", why);
}
END_TEST

/* A recorded start time that differs from the live process's means the pid
 * was reused: dead, and removed because it is ours. */
START_TEST(reused_pid_counts_as_dead)
{
    put_u64(OFF(start_time), 1);
    plant_file(own_name(), img, img_len, 0600);
    int dfd = open(segdir, O_RDONLY | O_DIRECTORY), removed = 0;
    char why[256];
    ck_assert_int_eq(spw_stats_read_at(dfd, own_name(), SPW_SCAN_REMOVE_DEAD, &snap, &removed, why, sizeof why),
                     SPW_READ_DEAD);
    ck_assert_int_eq(removed, 1);
    ck_assert_int_eq(segdir_count(), 0);
    close(dfd);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("stats_reader");
    TCase *tc = tcase_create("hostile");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, valid_image_reads);
    tcase_add_test(tc, bad_magic);
    tcase_add_test(tc, foreign_version);
    tcase_add_test(tc, wrong_header_size);
    tcase_add_test(tc, wrong_device_size);
    tcase_add_test(tc, wrong_counter_count);
    tcase_add_test(tc, device_count_zero);
    tcase_add_test(tc, device_count_huge);
    tcase_add_test(tc, device_count_beyond_file);
    tcase_add_test(tc, device_count_past_the_maximum);
    tcase_add_test(tc, truncated_file);
    tcase_add_test(tc, lane_area_cut_is_refused);
    tcase_add_test(tc, lane_area_missing_is_refused);
    tcase_add_test(tc, abi_3_segment_is_refused);
    tcase_add_test(tc, truncated_below_header);
    tcase_add_test(tc, segment_being_created_is_quietly_skipped);
    tcase_add_test(tc, unterminated_cmdline);
    tcase_add_test(tc, unterminated_config);
    tcase_add_test(tc, uid_field_mismatch);
    tcase_add_test(tc, pid_field_mismatch);
    tcase_add_test(tc, namespace_in_the_name_must_match);
    tcase_add_test(tc, negative_pid);
    tcase_add_test(tc, world_readable);
    tcase_add_test(tc, text_being_rewritten);
    tcase_add_test(tc, live_writer_mid_rewrite_is_kept);
    tcase_add_test(tc, dead_writer_mid_rewrite_is_removed);
    tcase_add_test(tc, mid_rewrite_with_bad_identity_is_not_removed);
    tcase_add_test(tc, not_initialised_is_quietly_skipped);
    tcase_add_test(tc, abandoned_initialisation_is_removed);
    tcase_add_test(tc, dead_segment_waits_for_a_busy_directory);
    tcase_add_test(tc, symlink_is_refused);
    tcase_add_test(tc, directory_and_fifo_are_refused);
    tcase_add_test(tc, other_users_segment);
    tcase_add_test(tc, terminal_escapes_are_neutralised);
    tcase_add_test(tc, valid_utf8_passes_invalid_is_replaced);
    tcase_add_test(tc, names_are_parsed_strictly);
    tcase_add_test(tc, scan_skips_bad_ones_with_a_note);
    tcase_add_test(tc, reused_pid_counts_as_dead);
    suite_add_tcase(s, tc);
    return s;
}
