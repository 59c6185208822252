#include "tools/top_container.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Scope prefixes that systemd-managed runtimes give a container's cgroup
 * ("<prefix><id>.scope"), longest first where one starts another. The
 * conmon scopes of CRI-O and Podman hold the monitor, not the container. */
static const struct {
    const char *prefix;
    const char *runtime;
} scopes[] = {
    {"cri-containerd-", "containerd"}, {"crio-conmon-", NULL}, {"crio-", "cri-o"},
    {"docker-", "docker"},             {"libpod-conmon-", NULL}, {"libpod-", "podman"},
    {"nerdctl-", "containerd"},
};

static bool all_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
            return false;
    return true;
}

/* A container id in one path component: 64 hex digits alone (cgroupfs
 * drivers) or inside a runtime's scope name (systemd drivers). */
static bool component_id(const char *c, size_t n, const char *parent, size_t plen, struct top_container *out)
{
    if (n == 64 && all_hex(c, 64)) {
        snprintf(out->id, sizeof out->id, "%.64s", c);
        /* cgroupfs: Docker files containers under /docker/; kubelet's
         * cgroupfs driver does not say which runtime. */
        snprintf(out->runtime, sizeof out->runtime, "%s", plen == 6 && !memcmp(parent, "docker", 6) ? "docker" : "");
        return true;
    }
    for (size_t i = 0; i < sizeof scopes / sizeof scopes[0]; i++) {
        size_t pl = strlen(scopes[i].prefix);
        if (n != pl + 64 + 6 || memcmp(c, scopes[i].prefix, pl) != 0)
            continue;
        if (!scopes[i].runtime || !all_hex(c + pl, 64) || memcmp(c + pl + 64, ".scope", 6) != 0)
            return false;
        snprintf(out->id, sizeof out->id, "%.64s", c + pl);
        snprintf(out->runtime, sizeof out->runtime, "%s", scopes[i].runtime);
        return true;
    }
    return false;
}

/* A pod UID: "pod" then 32 hex digits in 8-4-4-4-12 groups joined by '-'
 * (cgroupfs) or '_' (systemd slices, where '-' separates the slice path). */
static bool component_pod(const char *c, size_t n, struct top_container *out)
{
    for (size_t at = 0; at + 3 + 36 <= n; at++) {
        if (memcmp(c + at, "pod", 3) != 0 || (at > 0 && c[at - 1] != '-'))
            continue;
        const char *u = c + at + 3;
        char uid[37];
        bool ok = true;
        for (int i = 0; i < 36 && ok; i++) {
            bool dash = i == 8 || i == 13 || i == 18 || i == 23;
            ok = dash ? (u[i] == '-' || u[i] == '_') : (isxdigit((unsigned char)u[i]) && !isupper((unsigned char)u[i]));
            uid[i] = dash ? '-' : u[i];
        }
        size_t end = at + 3 + 36;
        if (ok && (end == n || c[end] == '.')) {
            uid[36] = '\0';
            memcpy(out->pod_uid, uid, sizeof uid);
            return true;
        }
    }
    return false;
}

/* One cgroup path: its components from the root down; the deepest id and
 * pod win (a nested runtime's container is the process's own). */
static void parse_path(const char *p, size_t len, struct top_container *out)
{
    const char *parent = "";
    size_t plen = 0;
    size_t i = 0;
    while (i < len) {
        while (i < len && p[i] == '/')
            i++;
        size_t start = i;
        while (i < len && p[i] != '/')
            i++;
        if (i == start)
            break;
        const char *c = p + start;
        size_t n = i - start;
        if (!component_id(c, n, parent, plen, out))
            component_pod(c, n, out);
        parent = c;
        plen = n;
    }
}

static int score(const struct top_container *c)
{
    return (c->id[0] ? 2 : 0) + (c->pod_uid[0] ? 1 : 0);
}

bool top_container_parse(const char *text, struct top_container *out)
{
    memset(out, 0, sizeof *out);
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        /* hierarchy-ID:controller-list:path; the path may hold ':' */
        const char *c1 = memchr(line, ':', len);
        const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
        if (c2) {
            struct top_container one;
            memset(&one, 0, sizeof one);
            parse_path(c2 + 1, len - (size_t)(c2 + 1 - line), &one);
            /* cgroup v1 lists one line per hierarchy and some may stop
             * short of the container: the first line that says most wins. */
            if (score(&one) > score(out))
                *out = one;
        }
        line = nl ? nl + 1 : NULL;
    }
    return out->id[0] || out->pod_uid[0];
}

bool top_container_of(pid_t pid, struct top_container *out)
{
    char path[64], buf[8192];
    snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    size_t got = 0;
    ssize_t n;
    while (got + 1 < sizeof buf && (n = read(fd, buf + got, sizeof buf - 1 - got)) > 0)
        got += (size_t)n;
    close(fd);
    buf[got] = '\0';
    return top_container_parse(buf, out);
}
