#include "tools/top_ident.h"
#include "tools/top_environ.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* The namespace file Kubernetes mounts with a service account token, read
 * through the process's own root. */
static void namespace_file(pid_t pid, char *out, size_t cap)
{
    char path[128];
    snprintf(path, sizeof path, "/proc/%d/root/var/run/secrets/kubernetes.io/serviceaccount/namespace", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, out, cap - 1);
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
        namespace_file(pid, id->ns, sizeof id->ns);
    k8s_name(id->pod);
    k8s_name(id->ns);
    k8s_name(id->container);
}
