/* shim/options.c: defaults, every accepted form and every rejected form of
 * every option type, and the limit each device gets.
 *
 * One suite in three files: here defaults and every form of every option
 * type; what the environment gets wrong (options_environ.c) and the limit
 * each device gets (options_limits.c), sharing options_rig.h. */
#include "tests/unit/shim/options_rig.h"

#include <stdlib.h>
#include <string.h>

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
    options_environ_tests(tc);
    options_limit_tests(tc);
    suite_add_tcase(s, tc);
    return s;
}
