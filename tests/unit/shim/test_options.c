/* shim/options.c: defaults, every accepted form and every rejected form of
 * every option type, and the limit each device gets. */
#include "tests/unit/check_compat.h"
#include "shim/options.h"

#include <stdlib.h>
#include <string.h>

/* A fake environment: one variable set to one value. */
static const char *env_name, *env_value;
static char *fake_get(const char *name)
{
    return env_name && strcmp(name, env_name) == 0 ? (char *)env_value : NULL;
}

static int load_one(const char *name, const char *value, struct spw_options *o, char *err,
                    size_t errlen)
{
    env_name = name;
    env_value = value;
    return spw_options_load(o, fake_get, err, errlen);
}

START_TEST(defaults)
{
    struct spw_options o;
    char err[256] = "";
    ck_assert_int_eq(spw_options_load(&o, fake_get, err, sizeof err), 0);
    ck_assert(o.mem_fraction == 0.75);
    ck_assert_uint_eq(o.mem_limit.all, 0);
    ck_assert_int_eq(o.preallocate, 1);
    ck_assert_int_eq(o.spill, 1);
    ck_assert_uint_eq(o.host_limit, SPW_BYTES_AUTO);
    ck_assert(o.oversubscribe == 1.0);
    ck_assert_int_eq(o.stats, 1);
    ck_assert_int_eq(o.log, SPW_LOG_WARN);
    ck_assert_int_eq(o.disable, 0);
    ck_assert_str_eq(o.driver, "libcuda.so.1");
    ck_assert_str_eq(o.lib, "");
}
END_TEST

START_TEST(getenv_is_accepted)
{
    struct spw_options o;
    char err[256];
    setenv("SPILLWAY_MEM_FRACTION", "0.25", 1);
    ck_assert_int_eq(spw_options_load(&o, getenv, err, sizeof err), 0);
    ck_assert(o.mem_fraction == 0.25);
}
END_TEST

START_TEST(bytes_forms)
{
    static const struct { const char *s; uint64_t v; } ok[] = {
        {"0", 0}, {"1", 1}, {"1073741824", 1073741824ull}, {"1K", 1024}, {"512m", 512ull << 20},
        {"8G", 8ull << 30}, {"2T", 2ull << 40}, {"8GB", 8ull << 30}, {"8GiB", 8ull << 30},
        {"16383T", 16383ull << 40}, {"8g", 8ull << 30}, {"4kiB", 4096}, {"007", 7},
        {"8Gi", 8ull << 30}, {"8gb", 8ull << 30}, {"8Gb", 8ull << 30}, {"8GIB", 8ull << 30},
        {"2ti", 2ull << 40},
    };
    /* A sign, hex, an exponent and spaces are refused (README,
     * "Configuration"), and a suffix without its unit. */
    static const char *const bad[] = {"", "G", "-1", "1.5G", "8X", "8 G", "8GBB", "0x10",
                                      "99999999999999999999", "16777216T", "8iB", " 8G",
                                      "8Gii", "8GBi", "8b", "8B", "+8G", "8i",
                                      "8G ", "0x1G", "1e3"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        uint64_t v = 12345;
        ck_assert_msg(spw_parse_bytes(ok[i].s, &v) == 0, "rejected %s", ok[i].s);
        ck_assert_uint_eq(v, ok[i].v);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v;
        ck_assert_msg(spw_parse_bytes(bad[i], &v) == -1, "accepted '%s'", bad[i]);
    }
}
END_TEST

/* The grammar of every number spillway reads (its variables, the tools'
 * flags): decimal digits and a point, nothing strtod also takes. */
START_TEST(decimal_forms)
{
    static const struct { const char *s; double v; } ok[] = {
        {"0", 0}, {"1", 1}, {"0.5", 0.5}, {".5", 0.5}, {"2.", 2}, {"007.250", 7.25},
        {"1000", 1000}, {"0.000001", 1e-6}, {"0.1234567", 0.1234567},
    };
    static const char *const bad[] = {"", ".", "+0.5", "-0.5", "0x0.8", "0x2", "1e-1", "1E1",
                                      "inf", "nan", "INF", " 1", "1 ", "1..2", "1.2.3", "1,5",
                                      "0.5x", "1e", "0b1", "\t1"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        double v = -1;
        ck_assert_msg(spw_parse_decimal(ok[i].s, &v) == 0, "rejected %s", ok[i].s);
        ck_assert_msg(v == ok[i].v, "%s read as %g", ok[i].s, v);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        double v = -1;
        ck_assert_msg(spw_parse_decimal(bad[i], &v) == -1, "accepted '%s' as %g", bad[i], v);
    }
    /* Digits past a double: refused, not read as inf. */
    char big[400];
    memset(big, '9', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    double v;
    ck_assert_int_eq(spw_parse_decimal(big, &v), -1);
}
END_TEST

/* Every option's accepted values. */
START_TEST(accepted_values)
{
    static const struct { const char *name, *value; } ok[] = {
        {"SPILLWAY_MEM_FRACTION", "1"},    {"SPILLWAY_MEM_FRACTION", "0.001"},
        {"SPILLWAY_MEM_FRACTION", ".5"},   {"SPILLWAY_MEM_FRACTION", "0.000001"},
        {"SPILLWAY_MEM_FRACTION", "1."},   {"SPILLWAY_MEM_LIMIT", "8G"},
        {"SPILLWAY_MEM_LIMIT", "8GiB"},    {"SPILLWAY_MEM_LIMIT", "0=8g,1=4GB"},
        {"SPILLWAY_OVERSUBSCRIBE", "2."},  {"SPILLWAY_OVERSUBSCRIBE", "1.25"},
        {"SPILLWAY_MEM_LIMIT", "0=8G"},    {"SPILLWAY_MEM_LIMIT", "0=8G,1=4G"},
        {"SPILLWAY_MEM_LIMIT", "63=1M"},   {"SPILLWAY_PREALLOCATE", "no"},
        {"SPILLWAY_PREALLOCATE", "TRUE"},  {"SPILLWAY_SPILL", "off"},
        {"SPILLWAY_HOST_LIMIT", "64G"},    {"SPILLWAY_HOST_LIMIT", "unlimited"},
        {"SPILLWAY_HOST_LIMIT", "0"},      {"SPILLWAY_HOST_LIMIT", "AUTO"},
        {"SPILLWAY_STATS", "0"},           {"SPILLWAY_OVERSUBSCRIBE", "1"},
        {"SPILLWAY_OVERSUBSCRIBE", "1.5"}, {"SPILLWAY_OVERSUBSCRIBE", "1000"},
        {"SPILLWAY_LOG", "debug"},         {"SPILLWAY_LOG", "ERROR"},
        {"SPILLWAY_DISABLE", "1"},         {"SPILLWAY_DRIVER", "/opt/x/libcuda.so.1"},
        {"SPILLWAY_LIB", "/opt/x/libspillway.so"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        struct spw_options o;
        char err[256] = "";
        ck_assert_msg(load_one(ok[i].name, ok[i].value, &o, err, sizeof err) == 0, "%s=%s: %s",
                      ok[i].name, ok[i].value, err);
    }
}
END_TEST

/* Every option's rejected values: -1 and one line naming variable, value
 * and what is accepted. */
#include "tests/unit/shim/bad_options.h"

START_TEST(rejected_values)
{
    struct spw_options o;
    char err[512] = "";
    ck_assert_int_eq(load_one(spw_bad_options[_i].name, spw_bad_options[_i].value, &o, err, sizeof err), -1);
    char expect[128];
    snprintf(expect, sizeof expect, "%s='%s'", spw_bad_options[_i].name, spw_bad_options[_i].value);
    ck_assert_msg(strstr(err, expect) != NULL, "'%s' does not name %s", err, expect);
    ck_assert_msg(strstr(err, spw_bad_options[_i].accepted) != NULL, "'%s' lacks '%s'", err, spw_bad_options[_i].accepted);
    ck_assert_ptr_null(strchr(err, '\n'));
}
END_TEST

START_TEST(long_and_odd_values_stay_one_line)
{
    char value[5000];
    memset(value, 'x', sizeof value - 1);
    value[sizeof value - 1] = '\0';
    value[10] = '\n';
    struct spw_options o;
    char err[256];
    ck_assert_int_eq(load_one("SPILLWAY_LOG", value, &o, err, sizeof err), -1);
    ck_assert_ptr_null(strchr(err, '\n'));
    ck_assert_ptr_nonnull(strstr(err, "SPILLWAY_LOG"));
    ck_assert_int_eq(load_one("SPILLWAY_DRIVER", value, &o, err, sizeof err), -1);
}
END_TEST

START_TEST(device_limits)
{
    struct spw_options o;
    char err[256];
    const uint64_t total = 16ull << 30;
    ck_assert_int_eq(load_one("SPILLWAY_MEM_FRACTION", "0.5", &o, err, sizeof err), 0);
    ck_assert_uint_eq(spw_options_device_limit(&o, 0, total), total / 2);
    ck_assert_int_eq(load_one("SPILLWAY_MEM_LIMIT", "4G", &o, err, sizeof err), 0);
    ck_assert_uint_eq(spw_options_device_limit(&o, 3, total), 4ull << 30);
    ck_assert_int_eq(load_one("SPILLWAY_MEM_LIMIT", "0=8G,1=4G", &o, err, sizeof err), 0);
    ck_assert_uint_eq(spw_options_device_limit(&o, 0, total), 8ull << 30);
    ck_assert_uint_eq(spw_options_device_limit(&o, 1, total), 4ull << 30);
    /* A device the list does not name gets the fraction (default 0.75). */
    ck_assert_uint_eq(spw_options_device_limit(&o, 2, total), total / 4 * 3);
    /* Never more than the device has. */
    ck_assert_int_eq(load_one("SPILLWAY_MEM_LIMIT", "1T", &o, err, sizeof err), 0);
    ck_assert_uint_eq(spw_options_device_limit(&o, 0, total), total);
    /* A total the driver cannot tell (spw_limit passes UINT64_MAX): the
     * explicit limit only, a fraction limits nothing. At a fraction of 1
     * the product is 2^64, which no uint64_t holds: the conversion was
     * undefined, 0 on x86-64, and the device got one page. */
    ck_assert_int_eq(load_one("SPILLWAY_MEM_FRACTION", "1", &o, err, sizeof err), 0);
    ck_assert_uint_eq(spw_options_device_limit(&o, 0, UINT64_MAX), UINT64_MAX);
}
END_TEST

START_TEST(table_lists_every_option)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    spw_options_print_table(f);
    fclose(f);
    static const char *const names[] = {"SPILLWAY_MEM_FRACTION", "SPILLWAY_MEM_LIMIT",
                                        "SPILLWAY_PREALLOCATE", "SPILLWAY_SPILL",
                                        "SPILLWAY_HOST_LIMIT", "SPILLWAY_STATS",
                                        "SPILLWAY_LOG", "SPILLWAY_DISABLE", "SPILLWAY_DRIVER",
                                        "SPILLWAY_STATS_DIR", "SPILLWAY_LIB"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        ck_assert_msg(strstr(buf, names[i]) != NULL, "%s missing", names[i]);
    ck_assert_ptr_nonnull(strstr(buf, "0.75"));
    free(buf);
}
END_TEST

/* What spw_options_format writes parses back to the same options ("NAME="
 * is how it writes an option without value: read back as unset). */
static char formatted[4096];
static char *formatted_get(const char *name)
{
    static char value[512];
    size_t n = strlen(name);
    for (const char *line = formatted; *line; line = strchr(line, '\n') + 1) {
        if (strncmp(line, name, n) == 0 && line[n] == '=') {
            size_t len = strcspn(line + n + 1, "\n");
            if (len == 0)
                return NULL;
            memcpy(value, line + n + 1, len);
            value[len] = '\0';
            return value;
        }
    }
    return NULL;
}

START_TEST(format_round_trips)
{
    static const char *const settings[][2] = {
        {"SPILLWAY_MEM_LIMIT", "0=8G,3=512M"}, {"SPILLWAY_MEM_LIMIT", "4G"},
        {"SPILLWAY_HOST_LIMIT", "64G"},        {"SPILLWAY_MEM_FRACTION", "0.3"},
        {"SPILLWAY_LOG", "debug"},             {"SPILLWAY_DISABLE", "yes"},
        {"SPILLWAY_OVERSUBSCRIBE", "1.5"},
        /* More digits than %g's six: published, they read as another
         * value (1.0000001 as 1, not oversubscribed at all). */
        {"SPILLWAY_MEM_FRACTION", "0.1234567"}, {"SPILLWAY_OVERSUBSCRIBE", "1.0000001"},
        /* %g wrote 1e-06, which the parser refuses (no exponents). */
        {"SPILLWAY_MEM_FRACTION", "0.000001"}, {"SPILLWAY_MEM_FRACTION", "0.0000123456789"},
        {"SPILLWAY_OVERSUBSCRIBE", "999.999999999"},
    };
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        struct spw_options a, b;
        char err[256];
        ck_assert_int_eq(load_one(settings[i][0], settings[i][1], &a, err, sizeof err), 0);
        int n = spw_options_format(&a, formatted, sizeof formatted);
        ck_assert_int_gt(n, 0);
        ck_assert_uint_lt((size_t)n, sizeof formatted);
        ck_assert_int_eq(spw_options_load(&b, formatted_get, err, sizeof err), 0);
        ck_assert_msg(memcmp(&a, &b, sizeof a) == 0, "%s=%s: %s", settings[i][0], settings[i][1],
                      formatted);
    }
    char small[16];
    struct spw_options o;
    char err[256];
    ck_assert_int_eq(spw_options_load(&o, NULL, err, sizeof err), 0);
    ck_assert_int_gt(spw_options_format(&o, small, sizeof small), (int)sizeof small);
    ck_assert_uint_eq(strlen(small), sizeof small - 1);
}
END_TEST

/* Issue 11: `VAR=` ran with the default. Every option of the table. */
static const char *const all_names[] = {
#define SPW_OPTION(name, field, type, def, doc) #name,
#include "shim/options.def"
#undef SPW_OPTION
};
#define ALL_NAMES ((int)(sizeof all_names / sizeof all_names[0]))

START_TEST(empty_value_is_an_error)
{
    struct spw_options o;
    char err[512] = "", expect[64];
    ck_assert_int_eq(load_one(all_names[_i], "", &o, err, sizeof err), -1);
    snprintf(expect, sizeof expect, "invalid %s='': empty;", all_names[_i]);
    ck_assert_msg(strstr(err, expect) && strstr(err, "unset it for the default") &&
                      strstr(err, "accepted: ") && !strchr(err, '\n'),
                  "'%s'", err);
}
END_TEST

static int check_names(const char *var, char *err, size_t len)
{
    char *env[] = {"PATH=/bin", "SPW_TEST_BUILD=/tmp/b", (char *)var, "SPILLWAY_LOG=info", NULL};
    return spw_options_check_names(env, err, len);
}

/* Issue 11: SPILLWAY_MEM_LIMT=8G ran without a limit. */
START_TEST(unknown_name_is_an_error_with_a_suggestion)
{
    char err[512] = "";
    ck_assert_int_eq(check_names("SPILLWAY_MEM_LIMT=8G", err, sizeof err), -1);
    ck_assert_str_eq(err, "unknown variable SPILLWAY_MEM_LIMT (set to '8G'): did you mean "
                          "SPILLWAY_MEM_LIMIT?");
    /* Any case of the prefix is ours. */
    ck_assert_int_eq(check_names("spillway_mem_limit=8G", err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "did you mean SPILLWAY_MEM_LIMIT?"));
}
END_TEST

START_TEST(unknown_name_far_from_all_lists_them)
{
    char err[512] = "";
    ck_assert_int_eq(check_names("SPILLWAY_BUILD=/tmp/b", err, sizeof err), -1);
    ck_assert_msg(strstr(err, "unknown variable SPILLWAY_BUILD (set to '/tmp/b'): spillway's "
                              "variables are SPILLWAY_MEM_FRACTION, SPILLWAY_MEM_LIMIT, "),
                  "'%s'", err);
    for (int i = 0; i < ALL_NAMES; i++)
        ck_assert_msg(strstr(err, all_names[i]), "%s not listed: '%s'", all_names[i], err);
    ck_assert_ptr_null(strstr(err, "did you mean"));
    /* The bare prefix, no value, odd bytes and a long name: one line still. */
    ck_assert_int_eq(check_names("SPILLWAY_", err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "unknown variable SPILLWAY_ (set to '')"));
    ck_assert_int_eq(check_names("SPILLWAY_X\nY=a\nb", err, sizeof err), -1);
    ck_assert_ptr_null(strchr(err, '\n'));
    char big[600];
    memset(big, 'A', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    memcpy(big, "SPILLWAY_", 9);
    ck_assert_int_eq(check_names(big, err, 64), -1);
    ck_assert_uint_eq(strlen(err), 63);
}
END_TEST

START_TEST(known_and_foreign_names_pass)
{
    char err[512] = "";
    for (int i = 0; i < ALL_NAMES; i++) {
        char var[64];
        snprintf(var, sizeof var, "%s=x", all_names[i]);
        ck_assert_msg(check_names(var, err, sizeof err) == 0, "%s: %s", var, err);
    }
    ck_assert_int_eq(check_names("SPILLWAYS=1", err, sizeof err), 0);
    ck_assert_int_eq(check_names("MY_SPILLWAY_LIMIT=1", err, sizeof err), 0);
    ck_assert_int_eq(spw_options_check_names(NULL, err, sizeof err), 0);
}
END_TEST

START_TEST(suggestions)
{
    static const char *const cases[][2] = {
        {"SPILLWAY_MEM_LIMITS", "SPILLWAY_MEM_LIMIT"},   {"SPILLWAY_MEM_LIMTI", "SPILLWAY_MEM_LIMIT"},
        {"SPILLWAY_LIMIT", "SPILLWAY_MEM_LIMIT"},        {"SPILLWAY_FRACTION", "SPILLWAY_MEM_FRACTION"},
        {"SPILLWAY_MEMORY_FRACTION", "SPILLWAY_MEM_FRACTION"},
        {"SPILLWAY_HOSTLIMIT", "SPILLWAY_HOST_LIMIT"},   {"SPILLWAY_STAT", "SPILLWAY_STATS"},
        {"SPILLWAY_STATSDIR", "SPILLWAY_STATS_DIR"},     {"SPILLWAY_PREALOCATE", "SPILLWAY_PREALLOCATE"},
        {"SPILLWAY_DISABLED", "SPILLWAY_DISABLE"},       {"Spillway_Log", "SPILLWAY_LOG"},
        {"SPILLWAY_FOO", NULL},                          {"SPILLWAY_BUILD", NULL},
        {"SPILLWAY_", NULL},                             {"SPILLWAY_VERBOSE", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *got = spw_options_suggest(cases[i][0], strlen(cases[i][0]));
        ck_assert_msg(cases[i][1] ? got && strcmp(got, cases[i][1]) == 0 : got == NULL,
                      "%s: %s, expected %s", cases[i][0], got ? got : "none",
                      cases[i][1] ? cases[i][1] : "none");
    }
}
END_TEST

/* The library and the launcher call this one: environ, then getenv. */
START_TEST(load_environ_checks_names_then_values)
{
    struct spw_options o;
    char err[512] = "";
    unsetenv("SPILLWAY_MEM_LIMT");
    setenv("SPILLWAY_MEM_FRACTION", "0.5", 1);
    ck_assert_int_eq(spw_options_load_environ(&o, err, sizeof err), 0);
    ck_assert(o.mem_fraction == 0.5);
    setenv("SPILLWAY_MEM_LIMT", "8G", 1);
    ck_assert_int_eq(spw_options_load_environ(&o, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "did you mean SPILLWAY_MEM_LIMIT?"));
    unsetenv("SPILLWAY_MEM_LIMT");
    setenv("SPILLWAY_MEM_FRACTION", "", 1);
    ck_assert_int_eq(spw_options_load_environ(&o, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "SPILLWAY_MEM_FRACTION=''"));
    unsetenv("SPILLWAY_MEM_FRACTION");
}
END_TEST

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

Suite *test_suite(void)
{
    Suite *s = suite_create("shim_options");
    TCase *tc = tcase_create("options");
    tcase_add_test(tc, defaults);
    tcase_add_test(tc, getenv_is_accepted);
    tcase_add_test(tc, bytes_forms);
    tcase_add_test(tc, decimal_forms);
    tcase_add_test(tc, accepted_values);
    tcase_add_loop_test(tc, rejected_values, 0, (int)SPW_BAD_OPTIONS);
    tcase_add_test(tc, long_and_odd_values_stay_one_line);
    tcase_add_test(tc, device_limits);
    tcase_add_test(tc, table_lists_every_option);
    tcase_add_test(tc, format_round_trips);
    tcase_add_loop_test(tc, empty_value_is_an_error, 0, ALL_NAMES);
    tcase_add_test(tc, unknown_name_is_an_error_with_a_suggestion);
    tcase_add_test(tc, unknown_name_far_from_all_lists_them);
    tcase_add_test(tc, known_and_foreign_names_pass);
    tcase_add_test(tc, suggestions);
    tcase_add_test(tc, load_environ_checks_names_then_values);
    tcase_add_test(tc, limit_below_a_page_or_above_the_device_is_noted);
    tcase_add_test(tc, missing_devices_are_named);
    tcase_add_test(tc, oversubscribe_rules);
    tcase_add_test(tc, told_and_host_limit);
    tcase_add_test(tc, host_reserve_above_the_host_limit_is_noted);
    tcase_add_test(tc, limit_line_says_what_programs_are_told);
    suite_add_tcase(s, tc);
    return s;
}
