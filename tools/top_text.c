/* spillway-top's text on the screen: where a view's rows land (the
 * detail view scrolls), one row cut at the edge, text wrapped over rows,
 * and what a screen that cannot show UTF-8 gets instead. The views are
 * top_draw*.c's. */
#include "tools/top_text.h"
#include "tools/top_draw.h"
#include "tools/top_width.h"

#include <curses.h>
#include <langinfo.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
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

/* The text as this screen shows it, in place: as it is on a UTF-8
 * screen; else a character outside ASCII is one '?'. */
static void screen_form(char *buf)
{
    if (utf8_screen)
        return;
    size_t o = 0;
    for (size_t i = 0; buf[i]; i++)
        if (((unsigned char)buf[i] & 0xc0) != 0x80)
            buf[o++] = (unsigned char)buf[i] < 0x80 ? buf[i] : '?';
    buf[o] = '\0';
}

/* Prints at (y, x), cut at the right edge in columns (top_width.h: a wide
 * character takes two, and one that would cross the edge is left out
 * whole): ncurses would wrap the rest onto the next row. A character
 * outside ASCII is one '?' on a screen that cannot show it. */
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
    screen_form(buf);
    attron(attr);
    mvaddnstr(row, x, buf, (int)top_width_fit(buf, sizeof buf, (size_t)(COLS - x), NULL));
    attroff(attr);
}

/* label, then text over as many rows as it needs from row y: where seps
 * holds a character, text is entries separated by it, shown joined by a
 * space, and a row breaks between entries (an entry wider than a row is
 * cut wherever the row ends); seps "" cuts wherever the row ends, never
 * inside a character (a wide one that does not fit goes to the next row).
 * Widths are columns (top_width.h). Continuation rows start at column
 * indent. Returns the row after. */
int ui_put_wrapped(int y, attr_t attr, const char *label, const char *text, const char *seps, int indent)
{
    int width = COLS, col = (int)strlen(label);
    if (width <= indent)
        return y + 1;
    /* Measured as it will be shown: a '?' takes one column whatever it
     * stands for. (Out of memory, the text as it is: a wide character's
     * '?' then leaves a column blank.) */
    char *shown = strdup(text);
    if (shown)
        screen_form(shown);
    ui_put(y, 0, attr, "%s", label);
    for (const char *s = shown ? shown : text; *s;) {
        size_t bytes = strcspn(s, seps), n = top_width_of(s, bytes), used;
        int room = width - col;
        if (room <= 0 || (*seps && n > (size_t)room && col > indent)) {
            y++; /* the entry starts on a row of its own */
            col = indent;
            continue;
        }
        size_t take = top_width_fit(s, bytes, (size_t)room, &used);
        if (take == 0 && bytes > 0) {
            int w;
            size_t len = top_width_char(s, bytes, &w);
            if (col > indent) {
                y++; /* a wide character at the edge: it starts the next row */
                col = indent;
            } else {
                s += len; /* wider than a whole row: it cannot be shown */
            }
            continue;
        }
        ui_put(y, col, attr, "%.*s", (int)take, s);
        col += (int)used;
        s += take;
        if (take == bytes && *s && strchr(seps, *s)) {
            s++; /* the separator: a space, or a new row if none fits */
            col += *s ? 1 : 0;
        }
    }
    free(shown);
    return y + 1;
}
