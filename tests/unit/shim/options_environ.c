/* The options suite (test_options.c): what the environment gets wrong
 * (issue 11). An empty value of every option, unknown names with a
 * suggestion, names that are not spillway's, and load_environ checking
 * names before values. */
#include "tests/unit/shim/options_rig.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void options_environ_tests(TCase *tc)
{
    tcase_add_loop_test(tc, empty_value_is_an_error, 0, ALL_NAMES);
    tcase_add_test(tc, unknown_name_is_an_error_with_a_suggestion);
    tcase_add_test(tc, unknown_name_far_from_all_lists_them);
    tcase_add_test(tc, known_and_foreign_names_pass);
    tcase_add_test(tc, suggestions);
    tcase_add_test(tc, load_environ_checks_names_then_values);
}
