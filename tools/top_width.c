/* Columns of UTF-8 text on a terminal (top_width.h). The reader passes
 * only printable ASCII and valid UTF-8 (spw_stats_utf8_char), but a
 * character's columns depend on it: a CJK character or an emoji takes two,
 * a combining accent none. Counting one a character ran a row with wide
 * ones past the screen's edge, where ncurses wraps it onto the next row. */
#include "tools/top_width.h"

#include <string.h>
#include <wchar.h>

/* The fallback's length: the lead byte and the continuation bytes
 * (10xxxxxx) after it, 4 bytes at most, as a UTF-8 character has. */
static size_t lead_and_continuations(const char *s, size_t n)
{
    size_t i = 1;
    while (i < n && i < 4 && ((unsigned char)s[i] & 0xc0) == 0x80)
        i++;
    return i;
}

size_t top_width_char(const char *s, size_t n, int *cols)
{
    *cols = 1;
    if ((unsigned char)s[0] < 0x80)
        return 1; /* ASCII: the rows and tables are mostly that */
    mbstate_t st;
    memset(&st, 0, sizeof st);
    wchar_t wc;
    size_t len = mbrtowc(&wc, s, n, &st);
    if (len == (size_t)-1 || len == (size_t)-2 || len == 0)
        return lead_and_continuations(s, n);
    int w = wcwidth(wc);
    if (w >= 0)
        *cols = w;
    return len;
}

size_t top_width_of(const char *s, size_t n)
{
    size_t cols = 0, end = strnlen(s, n);
    for (size_t i = 0; i < end;) {
        int w;
        i += top_width_char(s + i, end - i, &w);
        cols += (size_t)w;
    }
    return cols;
}

size_t top_width_fit(const char *s, size_t n, size_t cols, size_t *used)
{
    size_t i = 0, c = 0, end = strnlen(s, n);
    while (i < end) {
        int w;
        size_t len = top_width_char(s + i, end - i, &w);
        if (c + (size_t)w > cols)
            break;
        c += (size_t)w;
        i += len;
    }
    if (used)
        *used = c;
    return i;
}
