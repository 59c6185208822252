/* How wide text is on a terminal, in columns, for spillway-top's cuts and
 * wraps (top_layout.c's command column, top_text.c's rows). No curses
 * here, so that the rules are unit-tested without a screen. */
#ifndef SPILLWAY_TOOLS_TOP_WIDTH_H
#define SPILLWAY_TOOLS_TOP_WIDTH_H
#include <stddef.h>

/* The character at s (at most n bytes, n > 0): its length in bytes, and in
 * *cols the columns it takes. With a UTF-8 LC_CTYPE (setlocale) these are
 * wcwidth's: 2 for a wide character (CJK, most emoji), 0 for a combining
 * or other zero-width one, 1 for the rest. A sequence the locale cannot
 * decode (no UTF-8 locale, invalid bytes) or calls unprintable counts as
 * it always did: one column, its lead byte and the continuation bytes that
 * follow it. */
size_t top_width_char(const char *s, size_t n, int *cols);

/* Columns of s: n bytes at most, up to a NUL. */
size_t top_width_of(const char *s, size_t n);

/* Bytes of the longest start of s (n bytes at most, up to a NUL) that
 * takes at most cols columns, never the first part of a character: a wide
 * character that would cross the edge is left out whole, a zero-width one
 * that follows the last kept stays with it. *used (may be NULL): its
 * columns. */
size_t top_width_fit(const char *s, size_t n, size_t cols, size_t *used);
#endif
