#include "tools/top_environ.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *top_environ_find(const char *env, size_t len, const char *name, size_t *vlen)
{
    size_t nlen = strlen(name);
    size_t i = 0;
    while (i < len) {
        const char *entry = env + i;
        const char *nul = memchr(entry, '\0', len - i);
        size_t elen = nul ? (size_t)(nul - entry) : len - i;
        if (elen > nlen && memcmp(entry, name, nlen) == 0 && entry[nlen] == '=') {
            *vlen = elen - nlen - 1;
            return entry + nlen + 1;
        }
        i += elen + 1;
    }
    return NULL;
}

bool top_environ_copy(const char *env, size_t len, const char *name, char *out, size_t cap)
{
    size_t vlen;
    const char *v = env ? top_environ_find(env, len, name, &vlen) : NULL;
    if (cap == 0)
        return false;
    if (!v) {
        out[0] = '\0';
        return false;
    }
    if (vlen >= cap)
        vlen = cap - 1;
    memcpy(out, v, vlen);
    out[vlen] = '\0';
    return true;
}

char *top_environ_read(pid_t pid, size_t *len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    char *buf = malloc(TOP_ENVIRON_MAX);
    size_t got = 0;
    ssize_t n = 0;
    while (buf && got < TOP_ENVIRON_MAX && (n = read(fd, buf + got, TOP_ENVIRON_MAX - got)) > 0)
        got += (size_t)n;
    close(fd);
    /* environ of another user's process reads as an error, not as empty. */
    if (!buf || n < 0) {
        free(buf);
        return NULL;
    }
    *len = got;
    return buf;
}
