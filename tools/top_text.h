/* spillway-top's text primitives (top_text.c), for the views (top_draw*.c). */
#ifndef SPILLWAY_TOOLS_TOP_TEXT_H
#define SPILLWAY_TOOLS_TOP_TEXT_H
#include <curses.h>

/* Rows a view draws at y land on screen row y - shift, and only rows
 * [top, bottom) take them (bottom 0: LINES); (0, 0, 0) is the whole
 * screen, unshifted. */
void ui_viewport(int shift, int top, int bottom);
/* Prints at (y, x), cut at the right edge, never inside a character (a
 * wide one takes two columns: top_width.h). */
void ui_put(int y, int x, attr_t attr, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* label, then text over as many rows as it needs from row y, breaking
 * between entries separated by a character of seps, rows measured in
 * columns; returns the row after. */
int ui_put_wrapped(int y, attr_t attr, const char *label, const char *text, const char *seps, int indent);
#endif
