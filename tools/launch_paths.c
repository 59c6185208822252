#include "tools/launch_paths.h"

#include "tools/launch_elf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int spw_exe_dir(char *dir, size_t len)
{
    char exe[PATH_MAX];
    if (!realpath("/proc/self/exe", exe))
        return -1;
    char *slash = strrchr(exe, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    if ((size_t)snprintf(dir, len, "%s", exe[0] ? exe : "/") >= len)
        return -1;
    return 0;
}

/* Why a library could not be read (EBADMSG), from spw_elf_defines. */
struct unusable {
    char why[256];
};

/* Resolves path to an absolute, readable shared object that is spillway's
 * and checks LD_PRELOAD can carry it. 0, or -1 with errno (EINVAL: unusable
 * characters; ENOEXEC: not a shared object; ENOENT... as realpath; EPROTO:
 * a shared object, not spillway's: preloading another library, libcuda.so
 * say, ran the program with no limit and exit 0; EBADMSG: it cannot be
 * read as one, truncated or corrupt, with the reason in u). */
static int usable(const char *path, char *out, size_t len, struct unusable *u)
{
    char abs[PATH_MAX], cwd[PATH_MAX];
    if (!realpath(path, abs) || access(abs, R_OK) != 0)
        return -1;
    if (!spw_elf_loadable(abs)) {
        errno = ENOEXEC;
        return -1;
    }
    int defined = spw_elf_defines(abs, SPW_LIB_MARK_SYMBOL, u->why, sizeof u->why);
    if (defined != 1) {
        errno = defined == 0 ? EPROTO : EBADMSG;
        return -1;
    }
    /* A link from a path LD_PRELOAD can carry to a library installed
     * under one it cannot (a space in a home directory's name) is the
     * remedy for the latter: then the path as given, made absolute, links
     * unresolved. */
    if (strpbrk(abs, " :\t\n")) {
        int given = path[0] == '/' ? snprintf(abs, sizeof abs, "%s", path)
                    : getcwd(cwd, sizeof cwd) ? snprintf(abs, sizeof abs, "%s/%s", cwd, path)
                                              : -1;
        if (given < 0 || (size_t)given >= sizeof abs || strpbrk(abs, " :\t\n")) {
            errno = EINVAL;
            return -1;
        }
    }
    if ((size_t)snprintf(out, len, "%s", abs) >= len) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

/* Why usable() refused a library, from its errno (and u, for EBADMSG). */
static const char *unusable_why(int e, const struct unusable *u)
{
    return e == EINVAL    ? "its path has a space or colon, which LD_PRELOAD cannot carry"
           : e == ENOEXEC ? "not a shared library for this machine (the loader would skip it)"
           : e == EPROTO  ? "not spillway's library (it does not export " SPW_LIB_MARK_SYMBOL ")"
           : e == EBADMSG ? u->why
                          : strerror(e);
}

static int explicit_library(const char *path, const char *source, char *out, size_t len, char *err,
                            size_t errlen)
{
    struct unusable u;
    if (usable(path, out, len, &u) == 0)
        return 0;
    int e = errno;
    snprintf(err, errlen, "library '%s' (from %s): %s%s", path, source,
             e == EBADMSG ? "cannot be read as a shared library: " : "", unusable_why(e, &u));
    return -1;
}

int spw_find_library(const char *override, char *out, size_t len, char *err, size_t errlen)
{
    /* An empty --lib is a script's missing variable, as an empty
     * SPILLWAY_LIB is (which the option parser refuses): not "unset". */
    if (override && !*override) {
        snprintf(err, errlen, "library '' (from --lib): empty; omit --lib for the default search");
        return -1;
    }
    if (override)
        return explicit_library(override, "--lib", out, len, err, errlen);
    const char *env = getenv(SPW_LIB_ENV);
    if (env && *env)
        return explicit_library(env, SPW_LIB_ENV, out, len, err, errlen);
    char dir[PATH_MAX];
    if (spw_exe_dir(dir, sizeof dir) != 0) {
        snprintf(err, errlen, "cannot find my own executable to locate " SPW_LIB_NAME "; set " SPW_LIB_ENV);
        return -1;
    }
    static const char *const rel[] = {"/../lib/" SPW_LIB_NAME, "/../" SPW_LIB_NAME, "/" SPW_LIB_NAME};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        char cand[PATH_MAX + 32];
        snprintf(cand, sizeof cand, "%s%s", dir, rel[i]);
        struct unusable u;
        if (usable(cand, out, len, &u) == 0)
            return 0;
        /* There but unusable (installed under a path with a space): say
         * why, not "cannot find". */
        if (errno != ENOENT) {
            int e = errno;
            snprintf(err, errlen, "found %s, but %s%s; use --lib%s or set " SPW_LIB_ENV, cand,
                     e == EBADMSG ? "it cannot be read as a shared library: " : "", unusable_why(e, &u),
                     e == EINVAL ? " with a link to it from a path without one" : "");
            return -1;
        }
    }
    snprintf(err, errlen, "cannot find " SPW_LIB_NAME " (tried %s%s, %s%s, %s%s); use --lib or set " SPW_LIB_ENV,
             dir, rel[0], dir, rel[1], dir, rel[2]);
    return -1;
}

void spw_sibling_tool(const char *name, char *out, size_t len)
{
    char dir[PATH_MAX];
    if (spw_exe_dir(dir, sizeof dir) == 0) {
        snprintf(out, len, "%s/%s", dir, name);
        if (access(out, X_OK) == 0)
            return;
    }
    snprintf(out, len, "%s", name);
}
