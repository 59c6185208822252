/* shim/hostmem.c: the cgroup memory limit SPILLWAY_HOST_LIMIT=auto is half
 * of, over fake trees standing for / (/proc/self/cgroup,
 * /proc/self/mountinfo, the cgroup mounts): v2 nested under a lower
 * parent, v2 "max", v1 (Slurm's job above its step), a hybrid host, a
 * container's mount root, none, and garbage, which is skipped. */
#include "tests/unit/check_compat.h"
#include "shim/hostmem.h"
#include "shim/size_text.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MiB (1ull << 20)
#define NONE UINT64_MAX

static char root[PATH_MAX];

/* Writes text at root/path, making the directories on the way. */
static void put(const char *path, const char *text)
{
    char p[PATH_MAX * 2];
    snprintf(p, sizeof p, "%s/%s", root, path);
    for (char *s = strchr(p + strlen(root) + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        mkdir(p, 0755);
        *s = '/';
    }
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void fresh_root(void)
{
    snprintf(root, sizeof root, "%s/spw-hostmem.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(root));
}

static void remove_root(void)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    ck_assert_int_eq(system(cmd), 0);
}

#define V2_MOUNT "30 23 0:27 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
#define V1_MOUNTS                                                                               \
    "24 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n"                                            \
    "31 23 0:28 / /sys/fs/cgroup ro - tmpfs tmpfs ro,mode=755\n"                                \
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory\n"       \
    "36 31 0:33 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"

/* A pod under Kubernetes on v2: the container's cgroup has no limit of
 * its own here, the pod's (its parent) is 1 GiB, the QoS class above 4 GiB. */
START_TEST(v2_nested_takes_the_lowest_parent)
{
    fresh_root();
    put("proc/self/cgroup", "0::/kubepods/burstable/pod1/ctr\n");
    put("proc/self/mountinfo", "24 1 8:1 / / rw - ext4 /dev/sda1 rw\n" V2_MOUNT);
    put("sys/fs/cgroup/kubepods/burstable/pod1/ctr/memory.max", "max\n");
    put("sys/fs/cgroup/kubepods/burstable/pod1/memory.max", "1073741824\n");
    put("sys/fs/cgroup/kubepods/burstable/memory.max", "max\n");
    put("sys/fs/cgroup/kubepods/memory.max", "4294967296\n");
    ck_assert_uint_eq(spw_cgroup_memory_limit(root), 1024 * MiB);
    /* The leaf lower still: it wins. */
    put("sys/fs/cgroup/kubepods/burstable/pod1/ctr/memory.max", "536870912\n");
    ck_assert_uint_eq(spw_cgroup_memory_limit(root), 512 * MiB);
    remove_root();
}
END_TEST

START_TEST(v2_max_everywhere_is_no_limit)
{
    fresh_root();
    put("proc/self/cgroup", "0::/user.slice/user-1000.slice/session-1.scope\n");
    put("proc/self/mountinfo", V2_MOUNT);
    put("sys/fs/cgroup/user.slice/user-1000.slice/session-1.scope/memory.max", "max\n");
    put("sys/fs/cgroup/user.slice/user-1000.slice/memory.max", "max\n");
    put("sys/fs/cgroup/user.slice/memory.max", "max\n");
    ck_assert_uint_eq(spw_cgroup_memory_limit(root), NONE);
    remove_root();
}
END_TEST

/* Inside a container with its own cgroup namespace: "0::/", the mount
 * point is the container's cgroup, whose limit is there. */
START_TEST(v2_namespace_root_is_the_mount_point)
{
    fresh_root();
    put("proc/self/cgroup", "0::/\n");
    put("proc/self/mountinfo", V2_MOUNT);
    put("sys/fs/cgroup/memory.max", "268435456\n");
    ck_assert_uint_eq(spw_cgroup_memory_limit(root), 256 * MiB);
    remove_root();
}
END_TEST

/* Slurm on cgroup v1: the step has v1's "unlimited", the job 2 GiB. */
START_TEST(v1_job_above_its_step)
{
    fresh_root();
    put("proc/self/cgroup", "11:name=systemd:/system.slice/slurmd.service\n"
                            "9:cpu,cpuacct:/slurm/uid_1000/job_42/step_0\n"
                            "4:memory:/slurm/uid_1000/job_42/step_0\n");
    put("proc/self/mountinfo", V1_MOUNTS);
    put("sys/fs/cgroup/memory/slurm/uid_1000/job_42/step_0/memory.limit_in_bytes", "9223372036854771712\n");
    put("sys/fs/cgroup/memory/slurm/uid_1000/job_42/memory.limit_in_bytes", "2147483648\n");
    put("sys/fs/cgroup/memory/slurm/uid_1000/memory.limit_in_bytes", "9223372036854771712\n");
    put("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
    /* Another controller's files are not memory limits. */
    put("sys/fs/cgroup/cpu,cpuacct/slurm/uid_1000/job_42/step_0/memory.limit_in_bytes", "1\n");
    ck_assert_uint_eq(spw_cgroup_memory_limit(root), 2048 * MiB);
    put("sys/fs/cgroup/memory/slurm/uid_1000/job_42/memory.limit_in_bytes", "9223372036854771712\n");
    ck_assert_uint_eq(spw_cgroup_memory_limit(root), NONE); /* v1's unlimited */
    remove_root();
}
END_TEST

/* Docker on v1 without a cgroup namespace: the container's cgroup is
 * mounted at /sys/fs/cgroup/memory, its root the container's path. */
START_TEST(v1_mount_root_is_taken_off_the_path)
{
    fresh_root();
    put("proc/self/cgroup", "4:memory:/docker/a bc\n");
    put("proc/self/mountinfo",
        "35 31 0:32 /docker/a\\040bc /sys/fs/cgroup/memory ro,relatime - cgroup cgroup rw,memory\n"
        "36 31 0:32 /docker/a\\040bcd /elsewhere ro,relatime - cgroup cgroup rw,memory\n"
        "37 31 0:32 /docker/a\\040b /other ro,relatime - cgroup cgroup rw,memory\n");
    put("sys/fs/cgroup/memory/memory.limit_in_bytes", "536870912\n");
    /* Other containers' ("/docker/a bcd", and "/docker/a b", which is not
     * a parent of "/docker/a bc"): not ours. */
    put("elsewhere/memory.limit_in_bytes", "1\n");
    put("other/memory.limit_in_bytes", "1\n");
    put("otherc/memory.limit_in_bytes", "1\n");
    ck_assert_uint_eq(spw_cgroup_memory_limit(root), 512 * MiB);
    remove_root();
}
END_TEST

/* A hybrid host: the memory controller on v1, v2's unified hierarchy
 * without it (no memory.max there); a mount point with a space. */
START_TEST(hybrid_reads_the_v1_memory_controller)
{
    fresh_root();
    put("proc/self/cgroup", "4:memory:/job\n0::/job\n");
    put("proc/self/mountinfo",
        "35 31 0:32 / /sys/fs/cgroup/mem\\040ory rw - cgroup cgroup rw,memory\n"
        "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n");
    put("sys/fs/cgroup/mem ory/job/memory.limit_in_bytes", "3221225472\n");
    put("sys/fs/cgroup/unified/job/cgroup.procs", "1\n");
    ck_assert_uint_eq(spw_cgroup_memory_limit(root), 3072 * MiB);
    remove_root();
}
END_TEST

START_TEST(no_cgroup_files_is_no_limit)
{
    fresh_root();
    ck_assert_uint_eq(spw_cgroup_memory_limit(root), NONE);
    put("proc/self/cgroup", "0::/job\n"); /* no mountinfo */
    ck_assert_uint_eq(spw_cgroup_memory_limit(root), NONE);
    put("proc/self/mountinfo", V2_MOUNT); /* no limit files */
    ck_assert_uint_eq(spw_cgroup_memory_limit(root), NONE);
    remove_root();
}
END_TEST

/* Garbage anywhere is skipped: what can still be read counts, nothing is
 * guessed, nothing crashes. */
START_TEST(garbage_is_skipped)
{
    fresh_root();
    put("proc/self/cgroup", "garbage\n::\n0:\n4:memory:relative/path\n0::/job/../../etc\n"
                            "0::/a\n");
    put("proc/self/mountinfo", "30 23\n\n- - -\n30 23 0:27 / /sys/fs/cgroup rw -\n"
                               "30 23 0:27 / /sys/fs/cgroup rw - cgroup2\n" V2_MOUNT);
    put("sys/fs/cgroup/a/memory.max", "lots\n");
    put("sys/fs/cgroup/memory.max", "-5\n");
    ck_assert_uint_eq(spw_cgroup_memory_limit(root), NONE);
    put("sys/fs/cgroup/a/memory.max", "99999999999999999999999999\n"); /* overflows */
    ck_assert_uint_eq(spw_cgroup_memory_limit(root), NONE);
    put("sys/fs/cgroup/a/memory.max", "12345678 extra\n");
    ck_assert_uint_eq(spw_cgroup_memory_limit(root), NONE);
    put("sys/fs/cgroup/a/memory.max", "");
    ck_assert_uint_eq(spw_cgroup_memory_limit(root), NONE);
    put("sys/fs/cgroup/memory.max", "16777216\n"); /* the parent's, readable */
    ck_assert_uint_eq(spw_cgroup_memory_limit(root), 16 * MiB);
    /* A path out of the cgroup namespace ("/.."): never followed. */
    put("proc/self/cgroup", "0::/../../x\n");
    put("x/memory.max", "1\n");
    put("sys/memory.max", "1\n");
    ck_assert_uint_eq(spw_cgroup_memory_limit(root), NONE);
    remove_root();
}
END_TEST

/* What auto is half of, under $SPW_TEST_CGROUP_ROOT: the lower of the
 * machine's memory and the cgroup's limit, said as such. */
START_TEST(host_memory_is_the_lower_and_says_which)
{
    fresh_root();
    put("proc/self/cgroup", "0::/job\n");
    put("proc/self/mountinfo", V2_MOUNT);
    put("sys/fs/cgroup/job/memory.max", "100663296\n");
    setenv(SPW_TEST_CGROUP_ROOT, root, 1);
    struct spw_host_memory m;
    char what[96];
    spw_host_memory(&m);
    ck_assert_uint_gt(m.phys, 96 * MiB);
    ck_assert_uint_eq(m.cgroup, 96 * MiB);
    ck_assert_uint_eq(m.bytes, 96 * MiB);
    ck_assert_str_eq(spw_host_memory_describe(&m, what, sizeof what), "the cgroup's memory limit of 96 MiB");
    /* Not a whole number of MiB: said exactly (it was cut to 95 MiB). */
    put("sys/fs/cgroup/job/memory.max", "100000000\n");
    spw_host_memory(&m);
    ck_assert_str_eq(spw_host_memory_describe(&m, what, sizeof what),
                     "the cgroup's memory limit of 95.4 MiB (100000000 bytes)");
    put("sys/fs/cgroup/job/memory.max", "max\n");
    spw_host_memory(&m);
    ck_assert_uint_eq(m.cgroup, NONE);
    ck_assert_uint_eq(m.bytes, m.phys);
    char size[SPW_SIZE_TEXT_MAX];
    snprintf(what, sizeof what, "the machine's %s", spw_size_text(size, sizeof size, m.phys));
    char said[96];
    ck_assert_str_eq(spw_host_memory_describe(&m, said, sizeof said), what);
    /* A limit above the machine's memory (v1 often has one) changes nothing. */
    snprintf(what, sizeof what, "%llu\n", (unsigned long long)m.phys * 2);
    put("sys/fs/cgroup/job/memory.max", what);
    spw_host_memory(&m);
    ck_assert_uint_eq(m.bytes, m.phys);
    unsetenv(SPW_TEST_CGROUP_ROOT);
    struct spw_host_memory u = {.bytes = 0, .phys = 0, .cgroup = NONE};
    ck_assert_str_eq(spw_host_memory_describe(&u, said, sizeof said), "unknown memory");
    remove_root();
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("shim_hostmem");
    TCase *tc = tcase_create("hostmem");
    tcase_add_test(tc, v2_nested_takes_the_lowest_parent);
    tcase_add_test(tc, v2_max_everywhere_is_no_limit);
    tcase_add_test(tc, v2_namespace_root_is_the_mount_point);
    tcase_add_test(tc, v1_job_above_its_step);
    tcase_add_test(tc, v1_mount_root_is_taken_off_the_path);
    tcase_add_test(tc, hybrid_reads_the_v1_memory_controller);
    tcase_add_test(tc, no_cgroup_files_is_no_limit);
    tcase_add_test(tc, garbage_is_skipped);
    tcase_add_test(tc, host_memory_is_the_lower_and_says_which);
    suite_add_tcase(s, tc);
    return s;
}
