/* The memory SPILLWAY_HOST_LIMIT=auto is half of: the machine's, or the
 * memory limit of the process's cgroup when that is lower. In a Kubernetes
 * pod or a Slurm job, spilled pages are pinned memory charged to the job's
 * cgroup; past its limit the kernel kills the program (pinned pages cannot
 * be reclaimed) instead of spill failing cleanly within the host limit.
 * Pure libc, as options.c. */
#ifndef SPILLWAY_SHIM_HOSTMEM_H
#define SPILLWAY_SHIM_HOSTMEM_H
#include <stddef.h>
#include <stdint.h>

/* A directory standing for / where the cgroup files are read (tests: a
 * fake tree): /proc/self/cgroup, /proc/self/mountinfo and the cgroup
 * mounts. Unset: the real ones. */
#define SPW_TEST_CGROUP_ROOT "SPW_TEST_CGROUP_ROOT"

struct spw_host_memory {
    uint64_t bytes;  /* the lower of the two: what auto is half of; 0: unknown */
    uint64_t phys;   /* the machine's memory; 0: unknown */
    uint64_t cgroup; /* spw_cgroup_memory_limit's; UINT64_MAX: none */
};

/* The lowest memory limit of the process's cgroup and of every cgroup above
 * it that the process can see, under root ("" for /): cgroup v2's
 * memory.max ("max": none) and cgroup v1's memory controller's
 * memory.limit_in_bytes (its "unlimited", about 2^63, is none), both on a
 * hybrid host. UINT64_MAX when there is none, or nothing can be read: a
 * missing, unreadable or garbled file is skipped, never an error. */
uint64_t spw_cgroup_memory_limit(const char *root);

/* The machine's memory and the cgroup limit (under $SPW_TEST_CGROUP_ROOT,
 * else /). */
void spw_host_memory(struct spw_host_memory *m);

/* m->bytes as a message says where it comes from: "the machine's 64 GiB",
 * "the cgroup's memory limit of 8 GiB" or "unknown memory" (sizes as
 * size_text.h writes them). Returns buf. */
const char *spw_host_memory_describe(const struct spw_host_memory *m, char *buf, size_t len);
#endif
