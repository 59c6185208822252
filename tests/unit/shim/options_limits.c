/* The options suite (test_options.c): the limit each device gets. A limit
 * below a page or above the device noted, missing devices named,
 * oversubscription's rules, what programs are told against the host limit
 * and reserve, and the limit line. */
#include "tests/unit/shim/options_rig.h"

#include <string.h>

#define MiB (1ull << 20)

static uint64_t resolve(const char *name, const char *value, int dev, uint64_t total, char *note,
                        size_t len)
{
    struct spw_options o;
    char err[256];
    ck_assert_msg(load_one(name, value, &o, err, sizeof err) == 0, "%s", err);
    return spw_options_resolve_limit(&o, dev, total, 2 * MiB, note, len);
}

/* Issue 11: --limit 1 failed at the pool's set-up, 99999T was cut silently. */
START_TEST(limit_below_a_page_or_above_the_device_is_noted)
{
    char note[256];
    const uint64_t total = 256 * MiB;
    ck_assert_uint_eq(resolve("SPILLWAY_MEM_LIMIT", "1", 0, total, note, sizeof note), 2 * MiB);
    ck_assert_str_eq(note, "device 0: SPILLWAY_MEM_LIMIT=1 is below one page (2 MiB): using 2 MiB");
    ck_assert_uint_eq(resolve("SPILLWAY_MEM_LIMIT", "0=8G,5=1K", 5, total, note, sizeof note), 2 * MiB);
    ck_assert_str_eq(note, "device 5: SPILLWAY_MEM_LIMIT (5=1K) is below one page (2 MiB): using 2 MiB");
    ck_assert_uint_eq(resolve("SPILLWAY_MEM_FRACTION", "0.000001", 1, total, note, sizeof note), 2 * MiB);
    /* As a user writes it: 1e-06, as %g put it, is no value the parser takes. */
    ck_assert_str_eq(note, "device 1: SPILLWAY_MEM_FRACTION=0.000001 of 256 MiB, 268 bytes, is below "
                           "one page (2 MiB): using 2 MiB");
    ck_assert_uint_eq(resolve("SPILLWAY_MEM_LIMIT", "99999T", 0, total, note, sizeof note), total);
    ck_assert_str_eq(note, "device 0: SPILLWAY_MEM_LIMIT=99999T is more than the device's "
                           "256 MiB: using 256 MiB");
    /* A device's total is no whole number of pages: its whole pages. */
    ck_assert_uint_eq(resolve("SPILLWAY_MEM_LIMIT", "0=8G", 0, total + 1, note, sizeof note), total);
    ck_assert_str_eq(note, "device 0: SPILLWAY_MEM_LIMIT (0=8G) is more than the device's "
                           "256.0 MiB (268435457 bytes): using 256 MiB");
    /* The pool holds whole pages: the program was told 3M and, spill off,
     * refused the third (strict.sh's "the free bytes reported can be
     * allocated"). */
    ck_assert_uint_eq(resolve("SPILLWAY_MEM_LIMIT", "3M", 0, total, note, sizeof note), 2 * MiB);
    ck_assert_str_eq(note, "device 0: SPILLWAY_MEM_LIMIT=3M is not a whole number of pages "
                           "(2 MiB): using 2 MiB");
    ck_assert_uint_eq(resolve("SPILLWAY_MEM_LIMIT", "1=255000000", 1, total, note, sizeof note),
                      242 * MiB);
    ck_assert_str_eq(note, "device 1: SPILLWAY_MEM_LIMIT (1=255000000) is not a whole number of "
                           "pages (2 MiB): using 242 MiB");
    /* A fraction is rounded down without a note: it never falls on a page. */
    ck_assert_uint_eq(resolve("SPILLWAY_MEM_FRACTION", "0.3", 0, total, note, sizeof note),
                      76 * MiB);
    ck_assert_str_eq(note, "");
    /* As asked: no note. Exactly one page and exactly the device are fine. */
    static const char *const fine[][2] = {{"SPILLWAY_MEM_LIMIT", "2M"}, {"SPILLWAY_MEM_LIMIT", "256M"},
                                          {"SPILLWAY_MEM_LIMIT", "4M"}, {"SPILLWAY_MEM_FRACTION", "1"},
                                          {"SPILLWAY_MEM_FRACTION", "0.5"}};
    for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++) {
        strcpy(note, "untouched");
        resolve(fine[i][0], fine[i][1], 0, total, note, sizeof note);
        ck_assert_msg(note[0] == '\0', "%s=%s: '%s'", fine[i][0], fine[i][1], note);
    }
    /* Unknown page or total: nothing to compare with. */
    struct spw_options o;
    char err[256];
    ck_assert_int_eq(load_one("SPILLWAY_MEM_LIMIT", "1", &o, err, sizeof err), 0);
    ck_assert_uint_eq(spw_options_resolve_limit(&o, 0, 0, 0, note, sizeof note), 1);
    ck_assert_str_eq(note, "");
    ck_assert_uint_eq(spw_options_resolve_limit(&o, 0, total, 2 * MiB, NULL, 0), 2 * MiB);
    /* A device smaller than one page: all of it, not a page it lacks. */
    ck_assert_uint_eq(spw_options_resolve_limit(&o, 0, MiB, 2 * MiB, note, sizeof note), MiB);
    ck_assert_str_eq(note, "device 0: SPILLWAY_MEM_LIMIT=1 is below one page (2 MiB): using 1 MiB");
}
END_TEST

/* Issue 11: 0=8G,5=1G on a machine without device 5 said nothing. */
START_TEST(missing_devices_are_named)
{
    struct spw_options o;
    char err[256], note[512];
    ck_assert_int_eq(load_one("SPILLWAY_MEM_LIMIT", "0=8G,5=1G", &o, err, sizeof err), 0);
    ck_assert_int_eq(spw_options_missing_devices(&o, 1, note, sizeof note), 1);
    ck_assert_str_eq(note, "SPILLWAY_MEM_LIMIT names device 5, but CUDA sees 1 device (0): its "
                           "limit is unused (devices are numbered after CUDA_VISIBLE_DEVICES)");
    ck_assert_int_eq(spw_options_missing_devices(&o, 6, note, sizeof note), 0);
    ck_assert_int_eq(load_one("SPILLWAY_MEM_LIMIT", "1=1G,3=1G,63=1G", &o, err, sizeof err), 0);
    ck_assert_int_eq(spw_options_missing_devices(&o, 2, note, sizeof note), 2);
    ck_assert_msg(strstr(note, "names devices 3, 63, but CUDA sees 2 devices (0-1): those limits are unused"),
                  "'%s'", note);
    ck_assert_int_eq(spw_options_missing_devices(&o, 0, note, sizeof note), 3);
    ck_assert_ptr_nonnull(strstr(note, "CUDA sees no device"));
    ck_assert_int_eq(load_one("SPILLWAY_MEM_LIMIT", "8G", &o, err, sizeof err), 0);
    ck_assert_int_eq(spw_options_missing_devices(&o, 1, note, sizeof note), 0);
}
END_TEST

/* A fake environment of several variables: "NAME=value" strings, NULL
 * terminated. */
static const char *const *env_list;
static char *list_get(const char *name)
{
    size_t n = strlen(name);
    for (const char *const *e = env_list; e && *e; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return (char *)*e + n + 1;
    return NULL;
}

static int load_list(const char *const *env, struct spw_options *o, char *err, size_t len)
{
    env_list = env;
    err[0] = '\0';
    return spw_options_load(o, list_get, err, len);
}

/* Issue 13: what an oversubscription factor needs that no device is needed
 * to know (spill) is refused here; whether the host limit holds what the
 * factor puts past the limit waits for the device (spw_limit), which cuts
 * a limit above it: the figures in bytes alone cannot refuse a start. */
START_TEST(oversubscribe_rules)
{
    static const struct {
        const char *env[5];
        const char *want; /* NULL: accepted */
    } cases[] = {
        {{"SPILLWAY_OVERSUBSCRIBE=2", "SPILLWAY_SPILL=0"}, "SPILLWAY_OVERSUBSCRIBE=2 with SPILLWAY_SPILL=0"},
        {{"SPILLWAY_OVERSUBSCRIBE=1", "SPILLWAY_SPILL=0"}, NULL},
        {{"SPILLWAY_OVERSUBSCRIBE=2", "SPILLWAY_MEM_LIMIT=8G", "SPILLWAY_HOST_LIMIT=8G"}, NULL},
        /* Too little on a device of 8 GiB or more, enough on one of 4 GiB:
         * the device decides. */
        {{"SPILLWAY_OVERSUBSCRIBE=2", "SPILLWAY_MEM_LIMIT=8G", "SPILLWAY_HOST_LIMIT=4G"}, NULL},
        {{"SPILLWAY_OVERSUBSCRIBE=2", "SPILLWAY_MEM_LIMIT=1T", "SPILLWAY_HOST_LIMIT=512M"}, NULL},
        {{"SPILLWAY_OVERSUBSCRIBE=1.5", "SPILLWAY_MEM_LIMIT=0=8G,1=2G", "SPILLWAY_HOST_LIMIT=3G"}, NULL},
        {{"SPILLWAY_OVERSUBSCRIBE=2", "SPILLWAY_MEM_LIMIT=8G", "SPILLWAY_HOST_LIMIT=unlimited"}, NULL},
        {{"SPILLWAY_OVERSUBSCRIBE=2", "SPILLWAY_MEM_LIMIT=8M"}, NULL},
        {{"SPILLWAY_OVERSUBSCRIBE=2", "SPILLWAY_HOST_LIMIT=1M"}, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct spw_options o;
        char err[512];
        int r = load_list(cases[i].env, &o, err, sizeof err);
        if (!cases[i].want) {
            ck_assert_msg(r == 0, "case %zu refused: %s", i, err);
            continue;
        }
        ck_assert_msg(r == -1, "case %zu accepted", i);
        ck_assert_msg(strstr(err, cases[i].want) != NULL, "case %zu: '%s' lacks '%s'", i, err,
                      cases[i].want);
        ck_assert_ptr_null(strchr(err, '\n'));
    }
    /* A limit in bytes of all the machine's memory, with the automatic host
     * limit: a device of that size would be refused at its first use, a
     * smaller one cuts the limit and may fit. */
    uint64_t phys = spw_options_phys_memory();
    char limit[64], err[512];
    snprintf(limit, sizeof limit, "SPILLWAY_MEM_LIMIT=%llu", (unsigned long long)phys);
    const char *const env[] = {"SPILLWAY_OVERSUBSCRIBE=2", limit, NULL};
    struct spw_options o;
    ck_assert_int_eq(load_list(env, &o, err, sizeof err), 0);
}
END_TEST

START_TEST(told_and_host_limit)
{
    struct spw_options o;
    char err[256];
    const char *const f15[] = {"SPILLWAY_OVERSUBSCRIBE=1.5", NULL};
    const char *const none[] = {NULL};
    ck_assert_int_eq(load_list(none, &o, err, sizeof err), 0);
    ck_assert_uint_eq(spw_options_told(&o, 123456789), 123456789); /* exact at 1 */
    ck_assert_uint_eq(spw_options_host_limit(&o, 4, 64ull << 30), 8ull << 30); /* auto */
    ck_assert_uint_eq(spw_options_host_limit(&o, 0, 64ull << 30), 32ull << 30);
    ck_assert_uint_eq(spw_options_host_limit(&o, 2, 0), 0); /* unknown memory: no spill */
    ck_assert_int_eq(load_list(f15, &o, err, sizeof err), 0);
    ck_assert_uint_eq(spw_options_told(&o, 64 << 20), 96 << 20);
    ck_assert_uint_eq(spw_options_told(&o, 3), 4); /* rounded down */
    o.host_limit = 5 << 20;
    ck_assert_uint_eq(spw_options_host_limit(&o, 4, 64ull << 30), 5 << 20);
    /* The rule at its edge: (F - 1) x the limit is enough, a byte less is not. */
    ck_assert_int_eq(spw_options_check_host_room(&o, "device 0", 10 << 20, 5 << 20, NULL, err, sizeof err), 0);
    ck_assert_int_eq(spw_options_check_host_room(&o, "device 0", 10 << 20, (5 << 20) - 1, NULL, err,
                                                 sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "for device 0: programs would be told 15 MiB"));
    ck_assert_ptr_nonnull(strstr(err, "but SPILLWAY_HOST_LIMIT is 5.0 MiB (5242879 bytes): raise"));
    /* auto: named, and where its figure came from after it. */
    o.host_limit = SPW_BYTES_AUTO;
    ck_assert_int_eq(spw_options_check_host_room(&o, "device 0", 10 << 20, (5 << 20) - 1,
                                                 ", half of x", err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "but SPILLWAY_HOST_LIMIT=auto is 5.0 MiB (5242879 bytes), half of x: raise"));
    ck_assert_uint_gt(spw_options_phys_memory(), 0);
}
END_TEST

/* A reserve above the host limit was cut to it without a word (99T
 * accepted): said as a limit above the device is, naming both values and
 * what is used. auto is documented to stay within the host limit: silent. */
START_TEST(host_reserve_above_the_host_limit_is_noted)
{
    struct spw_options o;
    char err[256], note[256];
    const uint64_t GiB = 1ull << 30;
    const char *const big[] = {"SPILLWAY_HOST_RESERVE=99T", "SPILLWAY_HOST_LIMIT=8G", NULL};
    ck_assert_int_eq(load_list(big, &o, err, sizeof err), 0);
    ck_assert_uint_eq(spw_options_host_reserve(&o, 1, 16 * GiB, 8 * GiB, note, sizeof note), 8 * GiB);
    ck_assert_str_eq(note, "device 1: SPILLWAY_HOST_RESERVE=99T is more than the host limit, "
                           "SPILLWAY_HOST_LIMIT=8G: using 8 GiB");
    /* The host limit auto: the figure it came to, once. */
    const char *const auto_host[] = {"SPILLWAY_HOST_RESERVE=99T", NULL};
    ck_assert_int_eq(load_list(auto_host, &o, err, sizeof err), 0);
    ck_assert_uint_eq(spw_options_host_reserve(&o, 0, 16 * GiB, 3 * GiB, note, sizeof note), 3 * GiB);
    ck_assert_str_eq(note, "device 0: SPILLWAY_HOST_RESERVE=99T is more than the host limit, "
                           "SPILLWAY_HOST_LIMIT=auto: using 3 GiB");
    /* Within it, or equal: as asked, no word. */
    ck_assert_uint_eq(spw_options_host_reserve(&o, 0, 16 * GiB, 99ull << 40, note, sizeof note),
                      99ull << 40);
    ck_assert_str_eq(note, "");
    /* Without spill none is pinned: cut, but nothing to say. */
    const char *const nospill[] = {"SPILLWAY_HOST_RESERVE=99T", "SPILLWAY_SPILL=0", NULL};
    ck_assert_int_eq(load_list(nospill, &o, err, sizeof err), 0);
    ck_assert_uint_eq(spw_options_host_reserve(&o, 0, 16 * GiB, GiB, note, sizeof note), GiB);
    ck_assert_str_eq(note, "");
    /* auto: 1/32 of the limit, from 128 MiB to 4 GiB, within the host
     * limit, silently. */
    const char *const none[] = {NULL};
    ck_assert_int_eq(load_list(none, &o, err, sizeof err), 0);
    ck_assert_uint_eq(spw_options_host_reserve(&o, 0, 16 * GiB, 64 * GiB, note, sizeof note), GiB / 2);
    ck_assert_uint_eq(spw_options_host_reserve(&o, 0, GiB, 64 * GiB, note, sizeof note), 128ull << 20);
    ck_assert_uint_eq(spw_options_host_reserve(&o, 0, 1024 * GiB, 64 * GiB, note, sizeof note), 4 * GiB);
    ck_assert_uint_eq(spw_options_host_reserve(&o, 0, 16 * GiB, 64ull << 20, note, sizeof note), 64ull << 20);
    ck_assert_str_eq(note, "");
}
END_TEST

/* The info line of a device (README, "The log"): the limit, its source,
 * what programs are told and why. It said "limit 268435456 bytes of
 * 1073741824", and nothing of what programs were told. */
START_TEST(limit_line_says_what_programs_are_told)
{
    struct spw_options o;
    char err[256], line[512];
    const uint64_t GiB = 1ull << 30;
    const char *const fraction[] = {"SPILLWAY_MEM_FRACTION=0.25", NULL};
    ck_assert_int_eq(load_list(fraction, &o, err, sizeof err), 0);
    spw_options_describe_limit(&o, 0, GiB, GiB / 4, GiB / 4, 1, line, sizeof line);
    ck_assert_str_eq(line, "device 0: limit 256 MiB of the device's 1 GiB, by "
                           "SPILLWAY_MEM_FRACTION=0.25; programs are told the device has "
                           "256 MiB, the limit");
    const char *const over[] = {"SPILLWAY_MEM_LIMIT=0=8G,1=16G", "SPILLWAY_OVERSUBSCRIBE=1.5", NULL};
    ck_assert_int_eq(load_list(over, &o, err, sizeof err), 0);
    spw_options_describe_limit(&o, 1, 81559 * (GiB >> 10), 16 * GiB, 24 * GiB, 1, line, sizeof line);
    ck_assert_str_eq(line, "device 1: limit 16 GiB of the device's 79.6 GiB (85520809984 bytes), by "
                           "SPILLWAY_MEM_LIMIT (1=16G); programs are told the device has 24 GiB, "
                           "SPILLWAY_OVERSUBSCRIBE=1.5 x the limit: the 8 GiB past it live in "
                           "pinned host memory");
    /* Rounded down to whole pages; an unknown total is not said. */
    spw_options_describe_limit(&o, 0, 0, 6 << 20, 8 << 20, 1, line, sizeof line);
    ck_assert_str_eq(line, "device 0: limit 6 MiB, by SPILLWAY_MEM_LIMIT (0=8G); programs are "
                           "told the device has 8 MiB, SPILLWAY_OVERSUBSCRIBE=1.5 x the limit in "
                           "whole pages: the 2 MiB past it live in pinned host memory");
    /* Told the limit all the same: without a pool, and when the factor
     * adds less than a page. */
    spw_options_describe_limit(&o, 0, GiB, 8 * GiB, 8 * GiB, 0, line, sizeof line);
    ck_assert_ptr_nonnull(strstr(line, "; programs are told the device has 8 GiB, the limit: "
                                       "SPILLWAY_OVERSUBSCRIBE=1.5 does not apply without the page pool"));
    spw_options_describe_limit(&o, 0, GiB, 2 << 20, 2 << 20, 1, line, sizeof line);
    ck_assert_ptr_nonnull(strstr(line, "; programs are told the device has 2 MiB, the limit: "
                                       "SPILLWAY_OVERSUBSCRIBE=1.5 x the limit is less than a page more"));
    char src[96];
    spw_options_limit_source(&o, 5, src, sizeof src);
    ck_assert_str_eq(src, "SPILLWAY_MEM_FRACTION=0.75");
}
END_TEST

void options_limit_tests(TCase *tc)
{
    tcase_add_test(tc, limit_below_a_page_or_above_the_device_is_noted);
    tcase_add_test(tc, missing_devices_are_named);
    tcase_add_test(tc, oversubscribe_rules);
    tcase_add_test(tc, told_and_host_limit);
    tcase_add_test(tc, host_reserve_above_the_host_limit_is_noted);
    tcase_add_test(tc, limit_line_says_what_programs_are_told);
}
