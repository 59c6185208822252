#include "tools/top_ident.h"
#include "tools/top_environ.h"

#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__has_include)
#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#define HAVE_OPENAT2 1
#endif
#endif

void top_user_name(uint32_t uid, char *out, size_t len)
{
    struct passwd pw, *res = NULL;
    char buf[1024];
    if (getpwuid_r((uid_t)uid, &pw, buf, sizeof buf, &res) == 0 && res && res->pw_name)
        snprintf(out, len, "%s", res->pw_name);
    else
        snprintf(out, len, "%u", uid);
}

/* Kubernetes names are DNS labels; anything else a process put in its
 * environment becomes '_' so that a label cannot carry surprises. */
static void k8s_name(char *s)
{
    for (; *s; s++) {
        char c = *s;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
              c == '_'))
            *s = '_';
    }
}

void top_ident_from_environ(struct top_ident *id, const char *env, size_t len)
{
    struct top_gpu_env *g = &id->gpu_env;
    g->known = true;
    g->in_container = id->ctr.id[0] || id->ctr.pod_uid[0];
    g->has_cuda_visible = top_environ_copy(env, len, "CUDA_VISIBLE_DEVICES", g->cuda_visible, sizeof g->cuda_visible);
    g->has_nvidia_visible =
        top_environ_copy(env, len, "NVIDIA_VISIBLE_DEVICES", g->nvidia_visible, sizeof g->nvidia_visible);
    top_environ_copy(env, len, "CUDA_DEVICE_ORDER", g->device_order, sizeof g->device_order);
    if (!id->ctr.pod_uid[0])
        return;
    if (!top_environ_copy(env, len, "POD_NAME", id->pod, sizeof id->pod))
        top_environ_copy(env, len, "HOSTNAME", id->pod, sizeof id->pod); /* a pod's default hostname */
    top_environ_copy(env, len, "POD_NAMESPACE", id->ns, sizeof id->ns);
    top_environ_copy(env, len, "CONTAINER_NAME", id->container, sizeof id->container);
}

/* Opens path inside the root of pid, resolving every link there as that
 * process would (RESOLVE_IN_ROOT: an absolute link, /var/run -> /run in
 * most images, stays in its root; a link to /proc/1/root/... or to a file
 * of the host is not followed out) and never blocking on what is there (a
 * FIFO the process planted). -1 where openat2 is missing (Linux < 5.6):
 * then nothing is read rather than something unsafe. */
static int open_in_root(pid_t pid, const char *path)
{
#if defined(SYS_openat2) && defined(HAVE_OPENAT2)
    char root[64];
    snprintf(root, sizeof root, "/proc/%d/root", (int)pid);
    int dirfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0)
        return -1;
    struct open_how how = {.flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
                           .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
    int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
    close(dirfd);
    return fd;
#else
    (void)pid;
    (void)path;
    return -1;
#endif
}

void top_ident_namespace_file(pid_t pid, char *out, size_t cap)
{
    out[0] = '\0';
    int fd = open_in_root(pid, "/var/run/secrets/kubernetes.io/serviceaccount/namespace");
    if (fd < 0)
        return;
    struct stat st;
    ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, out, cap - 1) : -1;
    close(fd);
    out[n > 0 ? n : 0] = '\0';
    out[strcspn(out, "\r\n")] = '\0';
}

void top_ident_probe(struct top_ident *id, pid_t pid)
{
    memset(id, 0, sizeof *id);
    if (pid <= 0)
        return;
    id->probed = true;
    top_container_of(pid, &id->ctr);
    size_t len = 0;
    char *env = top_environ_read(pid, &len);
    if (env)
        top_ident_from_environ(id, env, len);
    free(env);
    if (id->ctr.pod_uid[0] && !id->ns[0])
        top_ident_namespace_file(pid, id->ns, sizeof id->ns);
    k8s_name(id->pod);
    k8s_name(id->ns);
    k8s_name(id->container);
}
