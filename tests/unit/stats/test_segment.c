/* The writer: segment creation, counters as the reader sees them, removal at
 * exit and after kill -9, fork safety, and the cost of an update. One suite
 * in four files: here the segment and its text as the reader sees them,
 * then threads (segment_threads.c), removal (segment_removal.c) and whose
 * the name is (segment_names.c), sharing writer_rig.h. */
#include "tests/unit/stats/writer_rig.h"

#include <errno.h>

START_TEST(creates_private_file_named_for_uid_and_pid)
{
    struct spw_stats_writer *w = open_writer(2, "mem_limit=8G\n");
    char want[512];
    snprintf(want, sizeof want, "%s/spillway.%u.%d", segdir, (unsigned)geteuid(), (int)getpid());
    ck_assert_str_eq(spw_stats_path(w), want);
    struct stat st;
    ck_assert_int_eq(lstat(want, &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    ck_assert_uint_eq(st.st_mode & 0777, 0400);
    ck_assert_uint_eq((uint64_t)st.st_size, spw_stats_total_size(2));
    /* Not for another writer (root's permissions aside): a truncation
     * would kill the program at its next update (SIGBUS). */
    if (geteuid() != 0) {
        ck_assert_int_eq(open(want, O_WRONLY), -1);
        ck_assert_int_eq(errno, EACCES);
        ck_assert_int_eq(truncate(want, 100), -1);
    }
    spw_stats_close(w);
    ck_assert_int_eq(lstat(want, &st), -1);
    ck_assert_int_eq(segdir_count(), 0);
}
END_TEST

START_TEST(reader_sees_exactly_the_updates)
{
    struct spw_stats_writer *w = open_writer(3, "mem_limit=8G\nspill=1\n");
    spw_stats_set(w, 1, SPW_C_LIMIT, 8ull << 30);
    spw_stats_set(w, 1, SPW_C_POOL, 6ull << 30);
    spw_stats_alloc(w, 1, 0, 1000, 1000);
    spw_stats_alloc(w, 1, 1, 5000, 6000);
    spw_stats_free(w, 1, 1, 1000);
    spw_stats_spill(w, 1, 4096);
    spw_stats_spill(w, 1, 4096);
    spw_stats_fill(w, 1, 4096);
    spw_stats_add(w, 2, SPW_C_COPY_HTOD, 77);
    spw_stats_add(w, 2, SPW_C_PASS_IPC, 1 << 20);
    spw_stats_add(w, 0, SPW_C_OOMS, 2);
    spw_stats_add(w, 3, SPW_C_OOMS, 9); /* no device 3: ignored */
    struct spw_stats_snapshot *s = malloc(sizeof *s);
    read_own(s);
    ck_assert_uint_eq(s->device_count, 3);
    ck_assert_int_eq(s->pid, getpid());
    ck_assert_uint_eq(s->uid, geteuid());
    ck_assert_int_eq(s->liveness, SPW_ALIVE);
    ck_assert_str_eq(s->cmdline, "python3 train.py --big");
    ck_assert_str_eq(s->config, "mem_limit=8G\nspill=1\n");
    ck_assert_uint_eq(s->c[1][SPW_C_LIMIT], 8ull << 30);
    ck_assert_uint_eq(s->c[1][SPW_C_POOL], 6ull << 30);
    ck_assert_uint_eq(s->c[1][SPW_C_IN_USE], 5000);
    ck_assert_uint_eq(s->c[1][SPW_C_PEAK], 6000);
    ck_assert_uint_eq(s->c[1][SPW_C_ALLOCS], 2);
    ck_assert_uint_eq(s->c[1][SPW_C_FREES], 1);
    ck_assert_uint_eq(s->c[1][SPW_C_SPILLED], 4096);
    ck_assert_uint_eq(s->c[1][SPW_C_SPILL_BYTES], 8192);
    ck_assert_uint_eq(s->c[1][SPW_C_SPILL_EVENTS], 2);
    ck_assert_uint_eq(s->c[1][SPW_C_FILL_BYTES], 4096);
    ck_assert_uint_eq(s->c[1][SPW_C_FILL_EVENTS], 1);
    ck_assert_uint_eq(s->c[2][SPW_C_COPY_HTOD], 77);
    ck_assert_uint_eq(s->c[2][SPW_C_PASS_IPC], 1 << 20);
    ck_assert_uint_eq(s->c[0][SPW_C_OOMS], 2);
    ck_assert_uint_eq(s->c[0][SPW_C_IN_USE], 0);
    spw_stats_set_config(w, "mem_limit=4G\n");
    read_own(s);
    ck_assert_str_eq(s->config, "mem_limit=4G\n");
    free(s);
    spw_stats_close(w);
}
END_TEST

/* A config longer than the field (options take 4095-byte values: one long
 * SPILLWAY_STATS_DIR does it) is cut after a whole entry and marked, so a
 * reader says entries are missing instead of ending inside a path; one
 * that fits is neither cut nor marked. */
START_TEST(config_too_long_is_cut_at_an_entry_and_marked)
{
    static char config[3 * SPW_STATS_CONFIG_LEN];
    size_t n = (size_t)snprintf(config, sizeof config, "device.0.limit=8589934592\nSPILLWAY_STATS_DIR=");
    memset(config + n, 'd', 3000);
    snprintf(config + n + 3000, sizeof config - n - 3000, "\nSPILLWAY_LOG=warn\n");
    struct spw_stats_writer *w = open_writer(1, config);
    struct spw_stats_snapshot *s = malloc(sizeof *s);
    read_own(s);
    ck_assert(s->config_truncated);
    ck_assert_str_eq(s->config, "device.0.limit=8589934592\n" SPW_STATS_CONFIG_CUT);
    /* Cut at the last whole entry that leaves room for the mark. */
    memset(config, 'a', SPW_STATS_CONFIG_LEN - 20);
    memcpy(config, "k=", 2);
    config[SPW_STATS_CONFIG_LEN - 20] = '\n';
    snprintf(config + SPW_STATS_CONFIG_LEN - 19, 64, "short=1\nlonger=123456789\n");
    spw_stats_set_config(w, config);
    read_own(s);
    ck_assert(s->config_truncated);
    ck_assert_uint_eq(strlen(s->config), SPW_STATS_CONFIG_LEN - 19 + strlen(SPW_STATS_CONFIG_CUT));
    ck_assert_int_eq(memcmp(s->config, config, SPW_STATS_CONFIG_LEN - 19), 0);
    /* The longest that fits: whole, unmarked. */
    memset(config, 'b', SPW_STATS_CONFIG_LEN - 2);
    config[SPW_STATS_CONFIG_LEN - 2] = '\n';
    config[SPW_STATS_CONFIG_LEN - 1] = '\0';
    spw_stats_set_config(w, config);
    read_own(s);
    ck_assert(!s->config_truncated);
    ck_assert_str_eq(s->config, config);
    free(s);
    spw_stats_close(w);
}
END_TEST

/* The segment's command line as the reader gives it, for a writer given
 * cmdline. */
static void read_cmdline(const char *cmdline, struct spw_stats_snapshot *s)
{
    struct spw_stats_writer *w = open_writer_cmd(1, cmdline, NULL);
    read_own(s);
    spw_stats_close(w);
}

/* A command line longer than the field (a long argument; /proc/self/cmdline
 * has no limit of ours) was cut at its 1023rd byte, inside a character as
 * often as not, with nothing to say so: it is cut before a character and
 * marked, and the reader says so; one that fits, or a short one that ends
 * with the mark's text, is neither cut nor taken for cut. */
START_TEST(cmdline_too_long_is_cut_between_characters_and_marked)
{
    static char cmd[4 * SPW_STATS_CMDLINE_LEN];
    const size_t mark = strlen(SPW_STATS_CMDLINE_CUT), room = SPW_STATS_CMDLINE_LEN - 1 - mark;
    struct spw_stats_snapshot *s = malloc(sizeof *s);
    /* ASCII: as much as leaves room for the mark. */
    memset(cmd, 'a', 2000);
    cmd[2000] = '\0';
    read_cmdline(cmd, s);
    ck_assert(s->cmdline_truncated);
    ck_assert_uint_eq(strlen(s->cmdline), SPW_STATS_CMDLINE_LEN - 1);
    ck_assert_int_eq(memcmp(s->cmdline, cmd, room), 0);
    ck_assert_str_eq(s->cmdline + room, SPW_STATS_CMDLINE_CUT);
    /* Two-byte characters (é), the cut falling on the second byte of one:
     * the whole character goes. */
    size_t n = 0;
    while (n < 1200)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, "\xc3\xa9");
    ck_assert_uint_eq(room % 2, 1);
    read_cmdline(cmd, s);
    ck_assert(s->cmdline_truncated);
    ck_assert_msg(!strchr(s->cmdline, '?'), "cut inside a character (the reader shows its bytes as ?): %s",
                  s->cmdline);
    ck_assert_uint_eq(strlen(s->cmdline), room - 1 + mark);
    ck_assert_int_eq(memcmp(s->cmdline, cmd, room - 1), 0);
    /* Four-byte characters (U+1F600) after two ASCII bytes, the cut on the
     * last byte of one: 3 bytes go, the most there can be. */
    n = (size_t)snprintf(cmd, sizeof cmd, "ab");
    while (n < 1200)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, "\xf0\x9f\x98\x80");
    ck_assert_uint_eq((room - 2) % 4, 3);
    read_cmdline(cmd, s);
    ck_assert(s->cmdline_truncated);
    ck_assert_msg(!strchr(s->cmdline, '?'), "cut inside a character (the reader shows its bytes as ?): %s",
                  s->cmdline);
    ck_assert_uint_eq(strlen(s->cmdline), SPW_STATS_CMDLINE_LEN - SPW_STATS_CMDLINE_CUT_SLACK);
    ck_assert_int_eq(memcmp(s->cmdline, cmd, room - 3), 0);
    ck_assert_str_eq(s->cmdline + room - 3, SPW_STATS_CMDLINE_CUT);
    /* The longest that fits: whole, unmarked. */
    memset(cmd, 'b', SPW_STATS_CMDLINE_LEN - 1);
    cmd[SPW_STATS_CMDLINE_LEN - 1] = '\0';
    read_cmdline(cmd, s);
    ck_assert(!s->cmdline_truncated);
    ck_assert_str_eq(s->cmdline, cmd);
    /* A short command that ends with the mark's text was not cut. */
    read_cmdline("echo " SPW_STATS_CMDLINE_CUT, s);
    ck_assert(!s->cmdline_truncated);
    ck_assert_str_eq(s->cmdline, "echo " SPW_STATS_CMDLINE_CUT);
    free(s);
}
END_TEST

/* A gauge the writer subtracts from never goes below zero: an underflow is
 * counted instead. For a laned counter the floor is its value (base and
 * lanes), not its base. (spw_stats_free cannot tell: the shim's own count
 * does, test_account.c.) */
START_TEST(sub_clamps_at_zero_and_counts_underflow)
{
    struct spw_stats_writer *w = open_writer(1, NULL);
    spw_stats_spill(w, 0, 100);
    spw_stats_fill(w, 0, 300);
    spw_stats_alloc(w, 0, 5, 100, 100);
    spw_stats_sub(w, 0, SPW_C_IN_USE, 60); /* the base is 0, the value 100 */
    ck_assert_uint_eq(spw_stats_get(w, 0, SPW_C_IN_USE), 40);
    ck_assert_uint_eq(spw_stats_get(w, 0, SPW_C_UNDERFLOWS), 1);
    spw_stats_sub(w, 0, SPW_C_IN_USE, 50);
    struct spw_stats_snapshot *s = malloc(sizeof *s);
    read_own(s);
    ck_assert_uint_eq(s->c[0][SPW_C_SPILLED], 0);
    ck_assert_uint_eq(s->c[0][SPW_C_IN_USE], 0);
    ck_assert_uint_eq(s->c[0][SPW_C_UNDERFLOWS], 2);
    free(s);
    spw_stats_close(w);
}
END_TEST

START_TEST(null_writer_and_bad_params)
{
    spw_stats_add(NULL, 0, SPW_C_ALLOCS, 1); /* stats off: no-op */
    spw_stats_alloc(NULL, 0, 0, 1, 1);
    spw_stats_free(NULL, 0, 0, 1);
    spw_stats_close(NULL);
    struct spw_stats_writer *w = (void *)1;
    char err[256] = "";
    struct spw_stats_params p = {.dir = segdir, .device_count = 0};
    ck_assert_int_eq(spw_stats_open(&w, &p, err, sizeof err), -1);
    ck_assert_ptr_null(w);
    ck_assert_msg(strstr(err, "device count 0") != NULL, "%s", err);
    p.device_count = SPW_STATS_MAX_DEVICES + 1;
    ck_assert_int_eq(spw_stats_open(&w, &p, err, sizeof err), -1);
    p.device_count = 1;
    p.dir = "/nonexistent/spillway";
    ck_assert_int_eq(spw_stats_open(&w, &p, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "/nonexistent/spillway") != NULL, "%s", err);
    p.dir = NULL; /* the caller names it: no default of its own */
    ck_assert_int_eq(spw_stats_open(&w, &p, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "cannot open directory") != NULL, "%s", err);
    ck_assert_int_eq(segdir_count(), 0);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("stats_segment");
    TCase *tc = tcase_create("writer");
    tcase_add_checked_fixture(tc, segdir_setup, segdir_teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, creates_private_file_named_for_uid_and_pid);
    tcase_add_test(tc, reader_sees_exactly_the_updates);
    tcase_add_test(tc, config_too_long_is_cut_at_an_entry_and_marked);
    tcase_add_test(tc, cmdline_too_long_is_cut_between_characters_and_marked);
    tcase_add_test(tc, sub_clamps_at_zero_and_counts_underflow);
    tcase_add_test(tc, null_writer_and_bad_params);
    segment_thread_tests(tc);
    segment_removal_tests(tc);
    segment_name_tests(tc);
    suite_add_tcase(s, tc);
    return s;
}
