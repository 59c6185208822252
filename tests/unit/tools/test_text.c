/* spillway-top's text on a terminal: how many columns a character takes
 * (top_width.c: a wide one two, a combining one none) and what a row cut
 * at the screen's edge and text wrapped over rows (top_text.c) leave on a
 * screen, read back from ncurses' own screen (newterm on /dev/null: no
 * terminal is needed, nothing is drawn). */
#define _XOPEN_SOURCE_EXTENDED 1 /* ncurses' wide-character calls */
#include "tests/unit/check_compat.h"
#include "tools/top_draw.h"
#include "tools/top_text.h"
#include "tools/top_width.h"

#include <curses.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#define CJK10 "\xe4\xb8\x80\xe4\xba\x8c\xe4\xb8\x89\xe5\x9b\x9b\xe4\xba\x94" \
              "\xe5\x85\xad\xe4\xb8\x83\xe5\x85\xab\xe4\xb9\x9d\xe5\x8d\x81" /* 一..十: 10 wide, 20 columns */
#define WIDE_A "\xe4\xb8\x80"        /* U+4E00, 2 columns */
#define EMOJI "\xf0\x9f\x98\x80"     /* U+1F600, 2 columns */
#define E_ACUTE "\xc3\xa9"           /* U+00E9, 1 column */
#define COMBINING "\xcc\x81"         /* U+0301 combining acute, 0 columns */
#define UNASSIGNED "\xcd\xb8"        /* U+0378, no character: wcwidth -1 */

static void utf8_locale(void)
{
    ck_assert_msg(setlocale(LC_ALL, "C.UTF-8") || setlocale(LC_ALL, "C.utf8"),
                  "no C.UTF-8 locale (glibc has it built in since 2.35)");
}

static void width_is(const char *s, size_t want_bytes, int want_cols)
{
    int cols = -7;
    size_t len = top_width_char(s, strlen(s), &cols);
    ck_assert_msg(len == want_bytes && cols == want_cols, "'%s': %zu bytes %d columns, want %zu and %d", s, len,
                  cols, want_bytes, want_cols);
}

static void fit_is(const char *s, size_t cols, size_t want_bytes, size_t want_used)
{
    size_t used = 99, n = top_width_fit(s, strlen(s), cols, &used);
    ck_assert_msg(n == want_bytes && used == want_used, "'%s' in %zu: %zu bytes %zu columns, want %zu and %zu", s,
                  cols, n, used, want_bytes, want_used);
}

START_TEST(a_character_takes_the_columns_the_terminal_gives_it)
{
    utf8_locale();
    width_is("a", 1, 1);
    width_is(E_ACUTE, 2, 1);
    width_is(WIDE_A, 3, 2);
    width_is(EMOJI, 4, 2);
    width_is(COMBINING, 2, 0);
    ck_assert_uint_eq(top_width_of("a" WIDE_A "e" COMBINING EMOJI, 64), 1 + 2 + 1 + 0 + 2);
    ck_assert_uint_eq(top_width_of(CJK10, 64), 20);
    ck_assert_uint_eq(top_width_of(CJK10, 6), 4); /* n bytes at most */
    /* Unprintable and undecodable: one column a character, as before. */
    width_is(UNASSIGNED, 2, 1);
    width_is("\xff", 1, 1);
    width_is("\xe4\xb8", 2, 1); /* cut short */
    width_is("\x80\x80\x80\x80\x80", 4, 1);
}
END_TEST

START_TEST(a_cut_never_splits_a_character)
{
    utf8_locale();
    fit_is("abc", 2, 2, 2);
    fit_is(CJK10, 5, 6, 4);   /* the third would cross the edge: left out whole */
    fit_is(CJK10, 6, 9, 6);
    fit_is("a" WIDE_A, 2, 1, 1);
    fit_is(WIDE_A, 1, 0, 0);
    fit_is("e" COMBINING "x", 1, 3, 1); /* the accent stays with its letter */
    fit_is(E_ACUTE E_ACUTE, 1, 2, 1);
    fit_is("ab", 0, 0, 0);
    ck_assert_uint_eq(top_width_fit("abcdef", 3, 10, NULL), 3);
}
END_TEST

/* Without a UTF-8 locale nothing decodes: a character is one column, as
 * spillway-top counted before it asked wcwidth. */
START_TEST(without_a_utf8_locale_a_character_is_one_column)
{
    ck_assert_ptr_nonnull(setlocale(LC_ALL, "C"));
    width_is(WIDE_A, 3, 1);
    ck_assert_uint_eq(top_width_of(CJK10, 64), 10);
    fit_is(CJK10, 5, 15, 5);
}
END_TEST

/* ---- on a screen ---- */

static SCREEN *screen;
static FILE *screen_out, *screen_in;

/* A screen of rows x cols that is never drawn, with spillway-top's text
 * settings (ui_draw_init). */
static void open_screen(int rows, int cols)
{
    screen_out = fopen("/dev/null", "w");
    screen_in = fopen("/dev/null", "r");
    ck_assert(screen_out && screen_in);
    screen = newterm("xterm", screen_out, screen_in);
    if (!screen)
        screen = newterm("vt100", screen_out, screen_in);
    ck_assert_msg(screen != NULL, "no xterm nor vt100 in the terminfo database");
    ck_assert_int_eq(resize_term(rows, cols), OK);
    ui_draw_init();
    ui_viewport(0, 0, 0);
}

static void close_screen(void)
{
    endwin();
    delscreen(screen);
    fclose(screen_out);
    fclose(screen_in);
}

/* Row r of the screen as UTF-8, trailing blanks dropped, and its columns. */
static const char *row_text(int r, int *cols)
{
    static char out[1024];
#ifdef SPW_CURSES_WIDE
    wchar_t w[512];
    int n = mvinnwstr(r, 0, w, (int)(sizeof w / sizeof w[0]) - 1);
    ck_assert_int_ge(n, 0);
    while (n > 0 && w[n - 1] == L' ')
        n--;
    w[n] = L'\0';
    *cols = wcswidth(w, (size_t)n);
    ck_assert_uint_ne(wcstombs(out, w, sizeof out), (size_t)-1);
#else
    int n = mvinnstr(r, 0, out, (int)sizeof out - 1);
    ck_assert_int_ge(n, 0);
    while (n > 0 && out[n - 1] == ' ')
        n--;
    out[n] = '\0';
    *cols = n;
#endif
    return out;
}

static void row_is(int r, const char *want)
{
    int cols;
    const char *got = row_text(r, &cols);
    ck_assert_msg(strcmp(got, want) == 0, "row %d: '%s', want '%s'", r, got, want);
    ck_assert_int_le(cols, COLS);
}

#ifdef SPW_CURSES_WIDE
/* A row cut at the edge: wide characters counted one column each ran it
 * past the edge, and ncurses wrapped the rest over the start of the next
 * row. */
START_TEST(a_row_with_wide_characters_stops_at_the_edge)
{
    utf8_locale();
    open_screen(6, 20);
    ui_put(0, 0, A_NORMAL, "%s", CJK10 CJK10);
    row_is(0, CJK10);
    row_is(1, "");
    /* From column 5, 15 columns: 7 whole characters, the 8th not split. */
    ui_put(2, 5, A_NORMAL, "%s", CJK10);
    row_is(2, "     \xe4\xb8\x80\xe4\xba\x8c\xe4\xb8\x89\xe5\x9b\x9b\xe4\xba\x94\xe5\x85\xad\xe4\xb8\x83");
    row_is(3, "");
    ui_put(4, 0, A_NORMAL, "ab" EMOJI "e" COMBINING "%s", CJK10);
    row_is(4, "ab" EMOJI "e" COMBINING "\xe4\xb8\x80\xe4\xba\x8c\xe4\xb8\x89\xe5\x9b\x9b\xe4\xba\x94\xe5\x85\xad"
              "\xe4\xb8\x83");
    row_is(5, "");
    close_screen();
}
END_TEST

/* Text wrapped over rows (the detail view's command): every row within
 * the screen, no character split or lost, a wide one that does not fit at
 * a row's end starting the next. */
START_TEST(wrapped_text_with_wide_characters_keeps_every_character)
{
    utf8_locale();
    open_screen(12, 20);
    const char *text = "/opt" CJK10 "--x" CJK10 "END";
    int next = ui_put_wrapped(0, A_NORMAL, "command: ", text, "", 0);
    char all[512] = "";
    int rows = 0;
    for (int r = 0; r < LINES; r++) {
        int cols;
        const char *t = row_text(r, &cols);
        ck_assert_msg(cols <= COLS, "row %d takes %d columns: '%s'", r, cols, t);
        if (*t) {
            strcat(all, t);
            rows = r + 1;
        }
    }
    ck_assert_str_eq(all, "command: /opt" CJK10 "--x" CJK10 "END");
    ck_assert_int_eq(next, rows);
    /* 9 + 4 + 6 columns, and a wide character would cross the edge: it
     * starts the next row, which ends a column short too. */
    row_is(0, "command: /opt\xe4\xb8\x80\xe4\xba\x8c\xe4\xb8\x89");
    row_is(1, "\xe5\x9b\x9b\xe4\xba\x94\xe5\x85\xad\xe4\xb8\x83\xe5\x85\xab\xe4\xb9\x9d\xe5\x8d\x81--x"
              "\xe4\xb8\x80");
    row_is(3, "D");
    ck_assert_int_eq(rows, 4);
    close_screen();
}
END_TEST

/* Entries (the detail view's config) break between entries, measured in
 * columns: an entry that would cross the edge starts a row of its own. */
START_TEST(wrapped_entries_break_by_columns)
{
    utf8_locale();
    open_screen(8, 24);
    int next = ui_put_wrapped(0, A_NORMAL, "config: ", "a=1\nname=" CJK10 "\nb=2\n", "\n", 2);
    row_is(0, "config: a=1");
    row_is(1, "  name=\xe4\xb8\x80\xe4\xba\x8c\xe4\xb8\x89\xe5\x9b\x9b\xe4\xba\x94\xe5\x85\xad\xe4\xb8\x83"
              "\xe5\x85\xab");
    row_is(2, "  \xe4\xb9\x9d\xe5\x8d\x81 b=2");
    row_is(3, "");
    ck_assert_int_eq(next, 3);
    close_screen();
}
END_TEST
#else
/* The narrow ncurses shows a character outside ASCII as one '?'. */
START_TEST(a_narrow_screen_shows_one_question_mark_a_character)
{
    utf8_locale();
    open_screen(4, 8);
    ui_put(0, 0, A_NORMAL, "%s", CJK10);
    row_is(0, "????????");
    row_is(1, "");
    ui_put_wrapped(2, A_NORMAL, "", CJK10, "", 0);
    row_is(2, "????????");
    row_is(3, "??");
    close_screen();
}
END_TEST
#endif

Suite *test_suite(void)
{
    Suite *s = suite_create("tools_text");
    TCase *tc = tcase_create("text");
    tcase_add_test(tc, a_character_takes_the_columns_the_terminal_gives_it);
    tcase_add_test(tc, a_cut_never_splits_a_character);
    tcase_add_test(tc, without_a_utf8_locale_a_character_is_one_column);
#ifdef SPW_CURSES_WIDE
    tcase_add_test(tc, a_row_with_wide_characters_stops_at_the_edge);
    tcase_add_test(tc, wrapped_text_with_wide_characters_keeps_every_character);
    tcase_add_test(tc, wrapped_entries_break_by_columns);
#else
    tcase_add_test(tc, a_narrow_screen_shows_one_question_mark_a_character);
#endif
    suite_add_tcase(s, tc);
    return s;
}
