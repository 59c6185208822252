/* What the launcher checks of the library it is about to preload, reading
 * the file only: it never loads it (a library's constructors would run in
 * the launcher, and spillway's would intercept nothing there). */
#ifndef SPILLWAY_TOOLS_LAUNCH_ELF_H
#define SPILLWAY_TOOLS_LAUNCH_ELF_H
#include <stddef.h>

/* A function every libspillway.so exports (spillway.h, exports.map.in): its
 * presence in a library's dynamic symbol table tells spillway from any other
 * shared object (libcuda.so, a typo'd path to a neighbour). */
#define SPW_LIB_MARK_SYMBOL "spillway_get_counters"

/* 1 if path is a shared object the loader can map into a process like this
 * one (a regular file, ELF of our class, byte order and machine, ET_DYN). */
int spw_elf_loadable(const char *path);

/* 1 if the shared object at path defines the function symbol in its
 * dynamic symbol table (.dynsym), 0 if not, -1 with a reason in why when
 * the file cannot be read as one: where it says its parts are lies past
 * its end (truncated, or corrupt), its tables are malformed, or it ended
 * or failed while it was read (truncated meanwhile: a reinstall). It is
 * read with pread, every offset and size checked against the file's size,
 * never mapped: a file truncated under it never kills the caller (SIGBUS). */
int spw_elf_defines(const char *path, const char *symbol, char *why, size_t whylen);
#endif
