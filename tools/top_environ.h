/* A few variables of another process's environment, from
 * /proc/<pid>/environ (the environment it was started with): the devices
 * it was given and the names Kubernetes' downward API passes. Readable for
 * one's own processes, or any as root. */
#ifndef SPILLWAY_TOOLS_TOP_ENVIRON_H
#define SPILLWAY_TOOLS_TOP_ENVIRON_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Only the first this many bytes are read: what matters is usually near
 * the start, and a huge environment must not cost a scrape. */
#define TOP_ENVIRON_MAX (256u * 1024u)

/* The value of name in an environ image (NUL-separated NAME=value
 * entries, len bytes, the last entry possibly cut), or NULL. The value
 * points into env and ends at a NUL, or at env+len for a cut last entry:
 * copy it with top_environ_copy. */
const char *top_environ_find(const char *env, size_t len, const char *name, size_t *vlen);

/* Copies name's value into out (cap bytes, cut to fit, NUL-terminated);
 * false (and out "") when absent. */
bool top_environ_copy(const char *env, size_t len, const char *name, char *out, size_t cap);

/* Reads /proc/<pid>/environ into a new buffer (*len bytes, at most
 * TOP_ENVIRON_MAX); free it. NULL when it cannot be read. */
char *top_environ_read(pid_t pid, size_t *len);
#endif
