/* Which container a process runs in, from its /proc/<pid>/cgroup: the
 * kernel's record, which the process cannot change (unlike its
 * environment). Kubernetes pods (kubelet's systemd and cgroupfs drivers),
 * Docker, containerd, CRI-O and Podman, under cgroup v1 and v2. */
#ifndef SPILLWAY_TOOLS_TOP_CONTAINER_H
#define SPILLWAY_TOOLS_TOP_CONTAINER_H
#include <stdbool.h>
#include <sys/types.h>

struct top_container {
    char runtime[16];  /* "docker", "containerd", "cri-o", "podman", or "" when the path does not say */
    char id[65];       /* 64 hex digits, or "" */
    char pod_uid[37];  /* Kubernetes pod UID, dashed (8-4-4-4-12), or "" */
};

/* Parses the text of a /proc/<pid>/cgroup file (every line
 * "hierarchy:controllers:path"; the path relative to the reader's cgroup
 * namespace, so it may start with "/.."). true when a container or pod was
 * found; out is cleared otherwise. */
bool top_container_parse(const char *cgroup_text, struct top_container *out);

/* Reads /proc/<pid>/cgroup and parses it. false when it cannot be read or
 * names no container. */
bool top_container_of(pid_t pid, struct top_container *out);
#endif
