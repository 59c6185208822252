/* The memory the automatic host limit is half of (hostmem.h). The cgroup
 * limit is found as the JDK does (/proc/self/cgroup's path under the
 * mount of /proc/self/mountinfo, less the mount's root; and, since
 * JDK-8322420, the lowest limit of the cgroups above it too, as lxcfs
 * does): a pod's or a Slurm job's limit is often on a parent of the
 * process's cgroup (Slurm's job above its step). Above the mount point
 * (a cgroup namespace's root) nothing is visible, and nothing is needed:
 * a container's runtime puts its limit on the container's own cgroup. */
#include "shim/hostmem.h"

#include "shim/options.h"
#include "shim/size_text.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cgroup v1 shows "unlimited" as PAGE_COUNTER_MAX pages, about 2^63 bytes
 * (9223372036854771712 with 4 KiB pages); no machine has 2^62. */
#define NO_LIMIT_FROM (1ull << 62)

enum hierarchy { V1, V2, HIERARCHIES };
static const char *const limit_file[HIERARCHIES] = {[V1] = "memory.limit_in_bytes",
                                                    [V2] = "memory.max"};

/* One limit file: its bytes, or UINT64_MAX for none ("max", v1's
 * unlimited), missing, unreadable or not a number. */
static uint64_t read_limit(const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return UINT64_MAX;
    char buf[64];
    char *line = fgets(buf, sizeof buf, f);
    fclose(f);
    if (!line)
        return UINT64_MAX;
    buf[strcspn(buf, "\n")] = '\0';
    if (!isdigit((unsigned char)buf[0]))
        return UINT64_MAX;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(buf, &end, 10);
    return errno || *end || v >= NO_LIMIT_FROM ? UINT64_MAX : (uint64_t)v;
}

/* The lowest limit in dir and in each directory above it, up to and with
 * the first top bytes of dir (the mount point); what follows them is the
 * cgroup's path, "/a/b" or "". dir is cut as it goes. */
static uint64_t lowest_up(char *dir, size_t top, const char *file)
{
    uint64_t low = UINT64_MAX;
    for (;;) {
        char p[PATH_MAX + 32];
        if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, file) < sizeof p) {
            uint64_t v = read_limit(p);
            low = v < low ? v : low;
        }
        char *slash = strrchr(dir + top, '/');
        if (!slash)
            return low;
        *slash = '\0';
    }
}

/* mountinfo writes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
    char *w = s;
    for (const char *r = s; *r;) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
            r[3] >= '0' && r[3] <= '7') {
            *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
            r += 4;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
}

static int has_token(const char *list, const char *token)
{
    size_t n = strlen(token);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, token, n) == 0)
            return 1;
        p += len + (p[len] == ',');
    }
    return 0;
}

/* The cgroup's path relative to a mount whose root (in its hierarchy) is
 * mroot: path less mroot, "" for the mount point itself; NULL when the
 * cgroup is not under that mount. A path with a ".." (a cgroup outside
 * this process's cgroup namespace) is never followed. */
static const char *relative(const char *path, const char *mroot)
{
    for (const char *p = strstr(path, "/.."); p; p = strstr(p + 1, "/.."))
        if (p[3] == '/' || p[3] == '\0')
            return NULL;
    size_t n = strcmp(mroot, "/") == 0 ? 0 : strlen(mroot);
    if (strncmp(path, mroot, n) != 0 || (path[n] != '/' && path[n] != '\0'))
        return NULL;
    return strcmp(path + n, "/") == 0 ? "" : path + n;
}

/* The process's path in the v1 memory hierarchy and in the v2 one, from
 * /proc/self/cgroup ("ID:CONTROLLERS:PATH" lines; v2 is "0::PATH"). */
static void read_paths(const char *root, char path[HIERARCHIES][PATH_MAX])
{
    char file[PATH_MAX];
    path[V1][0] = path[V2][0] = '\0';
    if ((size_t)snprintf(file, sizeof file, "%s/proc/self/cgroup", root) >= sizeof file)
        return;
    FILE *f = fopen(file, "re");
    if (!f)
        return;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        line[strcspn(line, "\n")] = '\0';
        char *ctl = strchr(line, ':'), *p = ctl ? strchr(ctl + 1, ':') : NULL;
        if (!p || p[1] != '/' || strlen(p + 1) >= PATH_MAX)
            continue;
        *ctl++ = '\0';
        *p++ = '\0';
        if (strcmp(line, "0") == 0 && !*ctl)
            strcpy(path[V2], p);
        else if (has_token(ctl, "memory"))
            strcpy(path[V1], p);
    }
    free(line);
    fclose(f);
}

/* One line of mountinfo: the lowest limit under it when it is a cgroup
 * mount of a hierarchy the process has a path in, else UINT64_MAX.
 * Fields: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE
 * SOURCE SUPEROPTIONS. */
static uint64_t mount_limit(const char *root, char *line, char path[HIERARCHIES][PATH_MAX])
{
    char *save = NULL, *field[5], *t = NULL;
    for (int i = 0; i < 5; i++)
        if (!(field[i] = strtok_r(i ? NULL : line, " \n", &save)))
            return UINT64_MAX;
    while ((t = strtok_r(NULL, " \n", &save)) && strcmp(t, "-") != 0)
        ;
    char *type = t ? strtok_r(NULL, " \n", &save) : NULL;
    char *source = type ? strtok_r(NULL, " \n", &save) : NULL;
    char *super = source ? strtok_r(NULL, " \n", &save) : NULL;
    if (!super)
        return UINT64_MAX;
    enum hierarchy h;
    if (strcmp(type, "cgroup2") == 0)
        h = V2;
    else if (strcmp(type, "cgroup") == 0 && has_token(super, "memory"))
        h = V1;
    else
        return UINT64_MAX;
    unescape(field[3]);
    unescape(field[4]);
    const char *rel = path[h][0] ? relative(path[h], field[3]) : NULL;
    if (!rel)
        return UINT64_MAX;
    char dir[PATH_MAX];
    int top = snprintf(dir, sizeof dir, "%s%s", root, field[4]);
    if (top < 0 || (size_t)top >= sizeof dir)
        return UINT64_MAX;
    while (top > 0 && dir[top - 1] == '/')
        dir[--top] = '\0'; /* a mount at /: the paths below begin with '/' */
    if ((size_t)snprintf(dir + top, sizeof dir - (size_t)top, "%s", rel) >= sizeof dir - (size_t)top)
        return UINT64_MAX;
    size_t end = strlen(dir);
    while (end > (size_t)top && dir[end - 1] == '/')
        dir[--end] = '\0';
    return lowest_up(dir, (size_t)top, limit_file[h]);
}

uint64_t spw_cgroup_memory_limit(const char *root)
{
    char path[HIERARCHIES][PATH_MAX], file[PATH_MAX];
    read_paths(root, path);
    if (!path[V1][0] && !path[V2][0])
        return UINT64_MAX;
    if ((size_t)snprintf(file, sizeof file, "%s/proc/self/mountinfo", root) >= sizeof file)
        return UINT64_MAX;
    FILE *f = fopen(file, "re");
    if (!f)
        return UINT64_MAX;
    uint64_t low = UINT64_MAX;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        uint64_t v = mount_limit(root, line, path);
        low = v < low ? v : low;
    }
    free(line);
    fclose(f);
    return low;
}

void spw_host_memory(struct spw_host_memory *m)
{
    const char *root = getenv(SPW_TEST_CGROUP_ROOT);
    m->phys = spw_options_phys_memory();
    m->cgroup = spw_cgroup_memory_limit(root ? root : "");
    m->bytes = m->phys && m->phys < m->cgroup ? m->phys : m->cgroup;
    if (m->bytes == UINT64_MAX)
        m->bytes = 0; /* neither known */
}

const char *spw_host_memory_describe(const struct spw_host_memory *m, char *buf, size_t len)
{
    char size[SPW_SIZE_TEXT_MAX];
    spw_size_text(size, sizeof size, m->bytes);
    if (!m->bytes)
        snprintf(buf, len, "unknown memory");
    else if (m->bytes == m->cgroup && m->bytes != m->phys)
        snprintf(buf, len, "the cgroup's memory limit of %s", size);
    else
        snprintf(buf, len, "the machine's %s", size);
    return buf;
}
