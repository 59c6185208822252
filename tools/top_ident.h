/* Who a process is beyond its stats segment: its container or pod (from
 * the kernel's cgroup record), the Kubernetes names its environment
 * carries, and the device variables that say which host GPUs its CUDA
 * devices are. Read once per process from /proc. */
#ifndef SPILLWAY_TOOLS_TOP_IDENT_H
#define SPILLWAY_TOOLS_TOP_IDENT_H
#include "tools/top_container.h"
#include "tools/top_gpumap.h"

#include <stddef.h>
#include <stdint.h>

#define TOP_K8S_NAME 64

struct top_ident {
    bool probed;                 /* looked up (needs the pid in our namespace) */
    struct top_container ctr;
    struct top_gpu_env gpu_env;
    /* Inside a pod only, from the environment (downward API variables
     * POD_NAME, POD_NAMESPACE, CONTAINER_NAME; else the pod's hostname and
     * its service account's namespace file). What the process says, unlike
     * ctr: a label to read, not a proof. */
    char pod[TOP_K8S_NAME], ns[TOP_K8S_NAME], container[TOP_K8S_NAME];
};

/* uid's user name, else the number (out: len bytes). */
void top_user_name(uint32_t uid, char *out, size_t len);

/* Fills id from /proc/<pid>; pid <= 0 leaves it unprobed. */
void top_ident_probe(struct top_ident *id, pid_t pid);

/* The first line of the namespace file Kubernetes mounts with a service
 * account token (/var/run/secrets/kubernetes.io/serviceaccount/namespace),
 * read through pid's own root; "" when there is none. The process owns
 * what is there: links resolve inside its root, only a regular file is
 * read, and nothing there can block the reader. */
void top_ident_namespace_file(pid_t pid, char *out, size_t cap);

/* Fills the environment's parts of id from an environ image (for tests and
 * for top_ident_probe). */
void top_ident_from_environ(struct top_ident *id, const char *env, size_t len);
#endif
