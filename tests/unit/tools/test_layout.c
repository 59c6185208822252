/* spillway-top's layout at any terminal width: the title keeps every part
 * whole (shrinking low-priority hints first, never overlapping the right
 * group), the process list gives the command what the other columns leave,
 * and the command shows its program and arguments before any directory. */
#include "tests/unit/check_compat.h"
#include "tools/top_layout.h"

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

static const char *const vocabulary[] = {"spillway-top", "12:34:56", "2", "procs", "2p", "every", "0.5s",
                                         "sort", "SPILLED", "v", "filter", "h", "help", "q", "quit",
                                         "1", "of", "1/2p"};

/* Every space-separated word of line is one of the title's own words, or
 * (when filter_word is set) a word of the filter: no part was cut in half
 * or overwritten by another. */
static const char *foreign_word(const char *line, const char *filter)
{
    static char word[128];
    for (const char *p = line; *p;) {
        size_t n = strcspn(p, " ");
        snprintf(word, sizeof word, "%.*s", (int)n, p);
        bool known = n == 0;
        for (size_t i = 0; i < sizeof vocabulary / sizeof vocabulary[0] && !known; i++)
            known = strcmp(word, vocabulary[i]) == 0;
        if (!known && filter && n) {
            char padded[160], needle[130];
            snprintf(padded, sizeof padded, " %s ", filter);
            snprintf(needle, sizeof needle, " %s ", word);
            known = strstr(padded, needle) != NULL;
        }
        if (!known)
            return word;
        p += n + strspn(p + n, " ");
    }
    return NULL;
}

/* The filter is in line whole, or cut at the end of the line with "..."
 * after at least three of its characters; a cut one is taken off line so
 * that the words before it can be checked. */
static void check_filter_shown(char *line, int w, const char *filter)
{
    if (!filter[0])
        return;
    char *at = strstr(line, "filter ");
    ck_assert_msg(at != NULL, "width %d: no filter in '%s'", w, line);
    const char *text = at + strlen("filter ");
    size_t n = strlen(text);
    if (strncmp(text, filter, strlen(filter)) == 0)
        return;
    ck_assert_msg(n >= 6 && strcmp(text + n - 3, "...") == 0 && strncmp(text, filter, n - 3) == 0,
                  "width %d: filter shown as '%s'", w, text);
    *at = '\0';
}

static struct top_title title_with(const char *filter)
{
    return (struct top_title){"12:34:56", 2, 2, 0.5, TOP_SORT_SPILLED, false, filter};
}

START_TEST(title_words_stay_whole_at_every_width)
{
    const char *filters[] = {"", "beta", "trainer --epochs 10"};
    for (size_t f = 0; f < sizeof filters / sizeof filters[0]; f++) {
        struct top_title t = title_with(filters[f]);
        t.nshown = filters[f][0] ? 1 : 2; /* a filter keeps one of the two */
        for (int w = 0; w <= 250; w++) {
            char line[512];
            int n = top_list_title(line, sizeof line, w, &t);
            ck_assert_int_eq(n, (int)strlen(line));
            ck_assert_msg(n <= w, "width %d: %d characters: '%s'", w, n, line);
            if (w < 50)
                continue; /* narrower than the essentials: cut at the edge */
            check_filter_shown(line, w, filters[f]);
            const char *bad = foreign_word(line, filters[f]);
            ck_assert_msg(bad == NULL, "width %d: cut or mixed word '%s' in '%s'", w, bad, line);
            ck_assert_msg(strstr(line, "sort SPILLED v") != NULL, "width %d: no sort in '%s'", w, line);
        }
    }
}
END_TEST

/* The case of issue 11: 80 columns, a filter, sort by spilled. The key
 * hints give way; nothing else does. */
START_TEST(title_at_80_with_a_filter)
{
    char line[512];
    struct top_title t = title_with("beta");
    top_list_title(line, sizeof line, 80, &t);
    ck_assert_str_eq(line, " spillway-top  12:34:56  2 procs  every 0.5s  sort SPILLED v  filter beta");
    top_list_title(line, sizeof line, 100, &t);
    ck_assert_str_eq(line, " spillway-top  12:34:56  2 procs  every 0.5s  sort SPILLED v  filter beta"
                           "            h help  q quit ");
    t.filter = "";
    top_list_title(line, sizeof line, 80, &t);
    ck_assert_str_eq(line, " spillway-top  12:34:56  2 procs  every 0.5s  sort SPILLED v     h help  q quit ");
    /* What the filter keeps, of all, as --once says it. */
    t.filter = "beta";
    t.nshown = 1;
    top_list_title(line, sizeof line, 80, &t);
    ck_assert_str_eq(line, " spillway-top  12:34:56  1 of 2 procs  every 0.5s  sort SPILLED v  filter beta");
    top_list_title(line, sizeof line, 50, &t);
    ck_assert_str_eq(line, " spillway-top  1/2p  sort SPILLED v  filter beta");
}
END_TEST

/* A filter longer than any line: cut, and visibly so; the sort stays. */
START_TEST(long_filter_is_cut_visibly)
{
    char filter[128], line[512];
    memset(filter, 'x', 100);
    filter[100] = '\0';
    struct top_title t = title_with(filter);
    top_list_title(line, sizeof line, 80, &t);
    ck_assert_int_eq((int)strlen(line), 80);
    ck_assert_msg(strstr(line, "sort SPILLED v  filter xxx") != NULL, "%s", line);
    ck_assert_msg(strcmp(line + 77, "...") == 0, "%s", line);
}
END_TEST

/* The right group is never drawn over the left one: two spaces at least. */
START_TEST(right_group_never_overlaps)
{
    const struct top_part parts[] = {
        {{"left part", "left"}, false, false},
        {{"right side ", "right "}, true, false},
    };
    static const int steps[] = {1, 0};
    char line[64];
    for (int w = 0; w <= 40; w++) {
        int n = top_fit_line(line, sizeof line, w, parts, 2, steps, 2);
        ck_assert_int_le(n, w);
        const char *r = strstr(line, "right");
        if (r) {
            ck_assert_msg(r - line >= 2 && r[-1] == ' ' && r[-2] == ' ', "width %d: '%s'", w, line);
            ck_assert_msg(strncmp(line, "left", 4) == 0, "width %d: '%s'", w, line);
        }
    }
    top_fit_line(line, sizeof line, 40, parts, 2, steps, 2);
    ck_assert_str_eq(line, "left part                    right side ");
    top_fit_line(line, sizeof line, 17, parts, 2, steps, 2);
    ck_assert_str_eq(line, "left part  right ");
    top_fit_line(line, sizeof line, 12, parts, 2, steps, 2);
    ck_assert_str_eq(line, "left  right ");
}
END_TEST

static int row_width(const struct top_columns *c)
{
    int w = 0;
    for (int k = 0; k < TOP_COL_COUNT; k++)
        if (c->shown[k])
            w += c->width[k] + (k < TOP_COL_COMMAND);
    return w;
}

START_TEST(command_gets_what_is_left)
{
    for (int w = 72; w <= 300; w++) {
        struct top_columns c;
        top_list_columns(w, TOP_SORT_IN_USE, w % 2, &c);
        ck_assert_msg(row_width(&c) == w, "width %d: row of %d", w, row_width(&c));
        ck_assert_int_ge(c.width[TOP_COL_COMMAND], TOP_CMD_MIN);
        ck_assert_int_ge(c.width[TOP_COL_IN_USE], TOP_BAR_MIN);
        ck_assert_int_le(c.width[TOP_COL_IN_USE], TOP_BAR_MAX);
        ck_assert(c.shown[TOP_COL_PID] && c.shown[TOP_COL_USER] && c.shown[TOP_COL_GPU] &&
                  c.shown[TOP_COL_IN_USE] && c.shown[TOP_COL_SPILL] && c.shown[TOP_COL_OOM]);
    }
    struct top_columns c;
    top_list_columns(80, TOP_SORT_IN_USE, false, &c);
    ck_assert(!c.shown[TOP_COL_GPU_MEM]);
    ck_assert(!c.shown[TOP_COL_ALLOC_RATE]); /* the least telling column makes room */
    ck_assert(c.shown[TOP_COL_SPILL_RATE] && c.shown[TOP_COL_FILL_RATE] && c.shown[TOP_COL_PEAK]);
    ck_assert_int_eq(c.width[TOP_COL_COMMAND], 20);
    top_list_columns(100, TOP_SORT_IN_USE, false, &c);
    ck_assert(c.shown[TOP_COL_ALLOC_RATE] && !c.shown[TOP_COL_GPU_MEM]);
    ck_assert_int_eq(c.width[TOP_COL_IN_USE], TOP_BAR_MIN);
    ck_assert_int_eq(c.width[TOP_COL_COMMAND], 33);
    top_list_columns(200, TOP_SORT_IN_USE, false, &c);
    ck_assert_int_eq(c.width[TOP_COL_IN_USE], TOP_BAR_MAX);
    ck_assert_int_eq(c.width[TOP_COL_COMMAND], 113);
}
END_TEST

/* NVML's figure (GPU MEM) shows when NVML has it and the command keeps
 * its 20 characters beside it; it is the first column given up. */
START_TEST(gpu_mem_goes_first)
{
    struct top_columns c;
    top_list_columns(95, TOP_SORT_IN_USE, true, &c);
    ck_assert(c.shown[TOP_COL_GPU_MEM] && c.shown[TOP_COL_ALLOC_RATE]);
    ck_assert_int_eq(c.width[TOP_COL_GPU_MEM], 7);
    ck_assert_int_eq(c.width[TOP_COL_COMMAND], TOP_CMD_MIN);
    top_list_columns(94, TOP_SORT_IN_USE, true, &c);
    ck_assert(!c.shown[TOP_COL_GPU_MEM] && c.shown[TOP_COL_ALLOC_RATE]);
    ck_assert_int_eq(c.width[TOP_COL_COMMAND], 27);
    top_list_columns(80, TOP_SORT_GPU_MEM, true, &c); /* sorted by it: it stays, the rates go */
    ck_assert(c.shown[TOP_COL_GPU_MEM] && !c.shown[TOP_COL_ALLOC_RATE] && !c.shown[TOP_COL_FILL_RATE]);
    ck_assert_int_ge(c.width[TOP_COL_COMMAND], TOP_CMD_MIN);
    top_list_columns(200, TOP_SORT_GPU_MEM, false, &c); /* nothing to show without NVML */
    ck_assert(!c.shown[TOP_COL_GPU_MEM]);
}
END_TEST

/* The column the list is sorted by is never the one given up. */
START_TEST(sort_column_stays)
{
    for (int w = 40; w <= 120; w++) {
        for (int k = 0; k < TOP_COL_COUNT; k++) {
            struct top_columns c;
            enum top_sort key = top_col_info((enum top_col)k)->sort;
            top_list_columns(w, key, true, &c);
            ck_assert_msg(c.shown[k], "width %d: sorted by %s, column hidden", w, top_sort_name(key));
        }
    }
    struct top_columns c;
    top_list_columns(80, TOP_SORT_ALLOC_RATE, false, &c);
    ck_assert(c.shown[TOP_COL_ALLOC_RATE] && !c.shown[TOP_COL_FILL_RATE]);
    ck_assert_int_ge(c.width[TOP_COL_COMMAND], TOP_CMD_MIN);
}
END_TEST

static void command_is(const char *cmdline, int width, const char *want)
{
    char out[1024];
    top_fmt_command(out, sizeof out, cmdline, width);
    ck_assert_msg(strcmp(out, want) == 0, "'%s' in %d: '%s', want '%s'", cmdline, width, out, want);
    /* Columns as libc gives them under a UTF-8 locale; else characters
     * (UTF-8 continuation bytes take none). */
    wchar_t w[1024];
    size_t n = mbstowcs(w, out, sizeof w / sizeof w[0]);
    int columns = n != (size_t)-1 ? wcswidth(w, n) : 0;
    if (n == (size_t)-1)
        for (const char *p = out; *p; p++)
            columns += ((unsigned char)*p & 0xc0) != 0x80;
    ck_assert_int_le(columns, width);
}

START_TEST(command_shows_program_and_arguments)
{
    const char *cmd = "/opt/ml/venv/bin/trainer --epochs 10 --data /datasets/imagenet/train";
    command_is(cmd, 200, cmd);
    command_is(cmd, 68, cmd);
    command_is(cmd, 67, "trainer --epochs 10 --data /datasets/imagenet/train");
    command_is(cmd, 50, "trainer --epochs 10 --data train");
    command_is(cmd, 20, "trainer --epochs 10 ");
    command_is("build/tests/integration/tools/cuda_hold 96", 13, "cuda_hold 96");
    command_is("python3 /home/u/train.py --lr 0.1", 25, "python3 train.py --lr 0.1");
    /* Options, assignments, URLs and directories keep their slashes. */
    command_is("/bin/x --out=/a/b cfg=/c/d http://h/p dir/ /e/f", 40, "x --out=/a/b cfg=/c/d http://h/p dir/ f");
    command_is("/a/b", 0, "");
    command_is("", 10, "");
    command_is("/", 0, "");
}
END_TEST

/* Widths are characters, not bytes: a command with UTF-8 keeps the
 * columns a plain one would, and is never cut inside a character. */
START_TEST(command_width_counts_characters)
{
    const char *cmd = "/home/jos\xc3\xa9/bin/tr\xc3\xa4in \xe2\x82\xac" "5 --x";
    command_is(cmd, 27, cmd);
    command_is(cmd, 26, "tr\xc3\xa4in \xe2\x82\xac" "5 --x");
    command_is(cmd, 8, "tr\xc3\xa4in \xe2\x82\xac" "5");
    command_is(cmd, 7, "tr\xc3\xa4in \xe2\x82\xac");
    command_is(cmd, 6, "tr\xc3\xa4in ");
}
END_TEST

/* Under a UTF-8 locale a wide character (CJK) takes the two columns a
 * terminal gives it: counted as one, the command ran past its column and
 * the screen's edge. None is cut in half. */
START_TEST(command_width_counts_wide_characters_as_two)
{
    ck_assert_ptr_nonnull(setlocale(LC_CTYPE, "C.UTF-8"));
    /* 训练, 数据, 图像: two characters of two columns each. */
    const char *cmd = "/opt/bin/\xe8\xae\xad\xe7\xbb\x83 --\xe6\x95\xb0\xe6\x8d\xae "
                      "/data/\xe5\x9b\xbe\xe5\x83\x8f/train";
    command_is(cmd, 37, cmd);
    command_is(cmd, 36, "\xe8\xae\xad\xe7\xbb\x83 --\xe6\x95\xb0\xe6\x8d\xae /data/\xe5\x9b\xbe\xe5\x83\x8f/train");
    command_is(cmd, 27, "\xe8\xae\xad\xe7\xbb\x83 --\xe6\x95\xb0\xe6\x8d\xae train");
    command_is(cmd, 16, "\xe8\xae\xad\xe7\xbb\x83 --\xe6\x95\xb0\xe6\x8d\xae trai");
    /* 10 columns: the 据 would end on the 11th, so the cut ends at the 9th. */
    command_is(cmd, 10, "\xe8\xae\xad\xe7\xbb\x83 --\xe6\x95\xb0");
    setlocale(LC_CTYPE, "C");
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("tools_layout");
    TCase *tc = tcase_create("layout");
    tcase_add_test(tc, title_words_stay_whole_at_every_width);
    tcase_add_test(tc, command_width_counts_characters);
    tcase_add_test(tc, command_width_counts_wide_characters_as_two);
    tcase_add_test(tc, title_at_80_with_a_filter);
    tcase_add_test(tc, long_filter_is_cut_visibly);
    tcase_add_test(tc, right_group_never_overlaps);
    tcase_add_test(tc, command_gets_what_is_left);
    tcase_add_test(tc, gpu_mem_goes_first);
    tcase_add_test(tc, sort_column_stays);
    tcase_add_test(tc, command_shows_program_and_arguments);
    suite_add_tcase(s, tc);
    return s;
}
