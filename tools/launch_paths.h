/* Where the launcher finds the library it preloads and the monitor it runs:
 * relative to its own executable, so that an installed tree and the build
 * tree both work without configuration. */
#ifndef SPILLWAY_TOOLS_LAUNCH_PATHS_H
#define SPILLWAY_TOOLS_LAUNCH_PATHS_H
#include <stddef.h>

#define SPW_LIB_ENV "SPILLWAY_LIB"
#define SPW_LIB_NAME "libspillway.so"

/* Directory of the running executable (resolved /proc/self/exe). 0 or -1. */
int spw_exe_dir(char *dir, size_t len);

/* The library to preload, as an absolute path: `override` (from --lib) if
 * given (empty: an error), else $SPILLWAY_LIB, else the first readable
 * shared library of
 *   <exe dir>/../lib/libspillway.so   (installed: PREFIX/bin -> PREFIX/lib)
 *   <exe dir>/../libspillway.so       (build tree: build/tools -> build)
 *   <exe dir>/libspillway.so
 * 0, or -1 with err saying what was tried. A path LD_PRELOAD cannot carry
 * (with a space or a colon) is refused, and so is a file the loader would
 * skip (not an ELF shared object of this machine), and so is a shared
 * object that is not spillway's (no SPW_LIB_MARK_SYMBOL in its dynamic
 * symbols): the program would run with no limit. */
int spw_find_library(const char *override, char *out, size_t len, char *err, size_t errlen);

/* <exe dir>/<name> if it is executable, else name alone (for a PATH search). */
void spw_sibling_tool(const char *name, char *out, size_t len);
#endif
