/* spillway-top's text on the screen: where a view's rows land (the
 * detail view scrolls), one row cut at the edge, text wrapped over rows,
 * and what a screen that cannot show UTF-8 gets instead. The views are
 * top_draw.c's. */
#include "tools/top_text.h"
#include "tools/top_draw.h"

#include <curses.h>
#include <langinfo.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The rows ui_put() draws into. The detail view scrolls: a row it draws at y
 * lands on screen row y - shift, and only rows [top, bottom) take it (the
 * title and the status line stay). The list and help views draw unshifted
 * on the whole screen. The screen is drawn by one thread (ncurses is not
 * thread-safe), so one viewport serves. */
static struct {
    int shift, top, bottom; /* bottom 0: LINES */
} view;

void ui_viewport(int shift, int top, int bottom)
{
    view.shift = shift;
    view.top = top;
    view.bottom = bottom;
}

/* Whether the terminal takes UTF-8 text as it is (ui_draw_init). */
static bool utf8_screen;

void ui_draw_init(void)
{
#ifdef SPW_CURSES_WIDE
    const char *cs = nl_langinfo(CODESET);
    utf8_screen = cs && strcmp(cs, "UTF-8") == 0;
#else
    utf8_screen = false;
#endif
}

/* Bytes of the first cols characters of s (at most n bytes): the reader
 * passes only valid UTF-8, one column a character (a wide one, CJK, takes
 * two on screen and runs its line past the edge, where ncurses cuts it). */
static int bytes_of_columns(const char *s, int n, int cols)
{
    int i = 0;
    for (int c = 0; i < n && s[i]; i++)
        if (((unsigned char)s[i] & 0xc0) != 0x80 && c++ == cols)
            break;
    return i;
}

/* Prints at (y, x), cut at the right edge: ncurses would wrap otherwise.
 * A character outside ASCII is one '?' on a screen that cannot show it. */
void ui_put(int y, int x, attr_t attr, const char *fmt, ...)
{
    int row = y - view.shift;
    if (row < view.top || row >= (view.bottom ? view.bottom : LINES) || x >= COLS)
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (!utf8_screen) {
        size_t o = 0;
        for (size_t i = 0; buf[i]; i++)
            if (((unsigned char)buf[i] & 0xc0) != 0x80)
                buf[o++] = (unsigned char)buf[i] < 0x80 ? buf[i] : '?';
        buf[o] = '\0';
    }
    attron(attr);
    mvaddnstr(row, x, buf, bytes_of_columns(buf, (int)sizeof buf, COLS - x));
    attroff(attr);
}

/* label, then text over as many rows as it needs from row y: where seps
 * holds a character, text is entries separated by it, shown joined by a
 * space, and a row breaks between entries (an entry wider than a row is
 * cut wherever the row ends); seps "" cuts wherever the row ends.
 * Continuation rows start at column indent. Returns the row after. */
int ui_put_wrapped(int y, attr_t attr, const char *label, const char *text, const char *seps, int indent)
{
    int width = COLS, col = (int)strlen(label);
    if (width <= indent)
        return y + 1;
    ui_put(y, 0, attr, "%s", label);
    for (const char *s = text; *s;) {
        int bytes = (int)strcspn(s, seps), room = width - col;
        int n = 0; /* its columns */
        for (int i = 0; i < bytes; i++)
            n += ((unsigned char)s[i] & 0xc0) != 0x80;
        if (room <= 0 || (*seps && n > room && col > indent)) {
            y++; /* the entry starts on a row of its own */
            col = indent;
            continue;
        }
        int take = n < room ? n : room, take_bytes = bytes_of_columns(s, bytes, take);
        ui_put(y, col, attr, "%.*s", take_bytes, s);
        col += take;
        s += take_bytes;
        if (take_bytes == bytes && *s && strchr(seps, *s)) {
            s++; /* the separator: a space, or a new row if none fits */
            col += *s ? 1 : 0;
        }
    }
    return y + 1;
}
