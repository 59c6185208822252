/* What spillway-top learns about a process beyond its segment: container
 * and pod from /proc/<pid>/cgroup (every fixture in fixtures/cgroup/ holds
 * a real layout and the expected answer on its first line), variables from
 * an environ image, the host GPU behind a process's CUDA device, and
 * --serve's address. */
#include "tests/unit/check_compat.h"
#include "tools/top_container.h"
#include "tools/top_environ.h"
#include "tools/top_gpumap.h"
#include "tools/top_ident.h"
#include "tools/top_listen.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Relative to the repository root, where make runs the tests. */
#define FIXTURES "tests/unit/tools/fixtures/cgroup"

/* The value of key in "# expect runtime=.. id=.. pod=.." (may be empty). */
static void expect_field(const char *line, const char *key, char *out, size_t len)
{
    char pat[32];
    snprintf(pat, sizeof pat, " %s=", key);
    const char *p = strstr(line, pat);
    ck_assert_msg(p != NULL, "fixture line lacks %s: %s", key, line);
    p += strlen(pat);
    size_t n = strcspn(p, " \n");
    snprintf(out, len, "%.*s", (int)n, p);
}

static void check_fixture(const char *name)
{
    char path[512], text[8192];
    snprintf(path, sizeof path, "%s/%s", FIXTURES, name);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    ck_assert_msg(strncmp(text, "# expect", 8) == 0, "%s: first line must be '# expect ...'", name);
    char runtime[32], id[80], pod[48];
    expect_field(text, "runtime", runtime, sizeof runtime);
    expect_field(text, "id", id, sizeof id);
    expect_field(text, "pod", pod, sizeof pod);
    const char *body = strchr(text, '\n') + 1;
    struct top_container c;
    bool found = top_container_parse(body, &c);
    ck_assert_msg(strcmp(c.runtime, runtime) == 0, "%s: runtime '%s', want '%s'", name, c.runtime, runtime);
    ck_assert_msg(strcmp(c.id, id) == 0, "%s: id '%s', want '%s'", name, c.id, id);
    ck_assert_msg(strcmp(c.pod_uid, pod) == 0, "%s: pod '%s', want '%s'", name, c.pod_uid, pod);
    ck_assert_msg(found == (id[0] || pod[0]), "%s: found %d", name, found);
}

START_TEST(cgroup_fixtures)
{
    DIR *d = opendir(FIXTURES);
    ck_assert_msg(d != NULL, "cannot open %s (run from the repository root)", FIXTURES);
    int checked = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l > 7 && strcmp(e->d_name + l - 7, ".cgroup") == 0) {
            check_fixture(e->d_name);
            checked++;
        }
    }
    closedir(d);
    ck_assert_int_ge(checked, 15);
}
END_TEST

START_TEST(cgroup_of_self)
{
    /* This process: readable, and whatever it says is well formed. */
    struct top_container c;
    top_container_of(getpid(), &c);
    ck_assert(c.id[0] == '\0' || strlen(c.id) == 64);
    ck_assert(c.pod_uid[0] == '\0' || strlen(c.pod_uid) == 36);
    ck_assert(!top_container_of(-1, &c));
}
END_TEST

static const char env[] = "PATH=/bin\0CUDA_VISIBLE_DEVICES_X=9\0CUDA_VISIBLE_DEVICES=1,0\0EMPTY=\0LAST=cut";

START_TEST(environ_lookup)
{
    size_t len = sizeof env - 1, vlen;
    char out[16];
    ck_assert(top_environ_copy(env, len, "CUDA_VISIBLE_DEVICES", out, sizeof out));
    ck_assert_str_eq(out, "1,0");
    ck_assert(top_environ_copy(env, len, "PATH", out, sizeof out));
    ck_assert_str_eq(out, "/bin");
    ck_assert(top_environ_copy(env, len, "EMPTY", out, sizeof out));
    ck_assert_str_eq(out, "");
    /* The last entry has no NUL (the read stopped in it). */
    ck_assert(top_environ_copy(env, len, "LAST", out, sizeof out));
    ck_assert_str_eq(out, "cut");
    ck_assert(!top_environ_copy(env, len, "CUDA", out, sizeof out));
    ck_assert_str_eq(out, "");
    ck_assert(!top_environ_copy(env, len, "NOPE", out, sizeof out));
    ck_assert(top_environ_find(env, 3, "PATH", &vlen) == NULL);
    /* Cut to the buffer. */
    char tiny[3];
    ck_assert(top_environ_copy(env, len, "PATH", tiny, sizeof tiny));
    ck_assert_str_eq(tiny, "/b");
    /* Our own environment reads back. */
    size_t n;
    char *mine = top_environ_read(getpid(), &n);
    ck_assert(mine != NULL);
    free(mine);
    ck_assert(top_environ_read(-1, &n) == NULL);
}
END_TEST

static struct top_gpu gpus[3];

static void setup_gpus(void)
{
    memset(gpus, 0, sizeof gpus);
    const char *uuids[] = {"GPU-aaaa1111", "GPU-bbbb2222", "GPU-bbbc3333"};
    for (unsigned i = 0; i < 3; i++) {
        gpus[i].index = i;
        snprintf(gpus[i].uuid, sizeof gpus[i].uuid, "%s", uuids[i]);
        snprintf(gpus[i].name, sizeof gpus[i].name, "NVIDIA H100");
    }
}

static struct top_gpu_env genv(const char *cuda, const char *nvidia, bool in_container)
{
    struct top_gpu_env e;
    memset(&e, 0, sizeof e);
    e.known = true;
    e.in_container = in_container;
    if (cuda) {
        e.has_cuda_visible = true;
        snprintf(e.cuda_visible, sizeof e.cuda_visible, "%s", cuda);
    }
    if (nvidia) {
        e.has_nvidia_visible = true;
        snprintf(e.nvidia_visible, sizeof e.nvidia_visible, "%s", nvidia);
    }
    return e;
}

#define MAP(e, ord, n) top_gpu_host_index(&(e), (ord), (n) ? gpus : NULL, (n))

START_TEST(gpu_map_without_nvml)
{
    struct top_gpu_env unknown;
    memset(&unknown, 0, sizeof unknown);
    ck_assert_int_eq(MAP(unknown, 0, 0), -1);
    struct top_gpu_env e = genv(NULL, NULL, false);
    ck_assert_int_eq(MAP(e, 0, 0), 0);
    ck_assert_int_eq(MAP(e, 5, 0), 5);
    e = genv("2,3", NULL, false);
    ck_assert_int_eq(MAP(e, 0, 0), 2);
    ck_assert_int_eq(MAP(e, 1, 0), 3);
    ck_assert_int_eq(MAP(e, 2, 0), -1);
    e = genv(" 1 , bogus, 0", NULL, false); /* CUDA stops at the first bad entry */
    ck_assert_int_eq(MAP(e, 0, 0), 1);
    ck_assert_int_eq(MAP(e, 1, 0), -1);
    e = genv("", NULL, false);
    ck_assert_int_eq(MAP(e, 0, 0), -1);
    e = genv("GPU-aaaa1111", NULL, false); /* a UUID needs NVML */
    ck_assert_int_eq(MAP(e, 0, 0), -1);
    e = genv("MIG-1234", NULL, false);
    ck_assert_int_eq(MAP(e, 0, 0), -1);
    /* In a container given host devices 3 and 1 by index. */
    e = genv(NULL, "3,1", true);
    ck_assert_int_eq(MAP(e, 0, 0), 1);
    ck_assert_int_eq(MAP(e, 1, 0), 3);
    ck_assert_int_eq(MAP(e, 2, 0), -1);
}
END_TEST

START_TEST(gpu_map_with_nvml)
{
    setup_gpus();
    struct top_gpu_env e = genv(NULL, NULL, false);
    ck_assert_int_eq(MAP(e, 2, 3), 2);
    ck_assert_int_eq(MAP(e, 3, 3), -1);
    e = genv("GPU-bbbb2222", NULL, false);
    ck_assert_int_eq(MAP(e, 0, 3), 1);
    e = genv("GPU-bbbc,0", NULL, false); /* unique prefix */
    ck_assert_int_eq(MAP(e, 0, 3), 2);
    ck_assert_int_eq(MAP(e, 1, 3), 0);
    e = genv("GPU-bbb", NULL, false); /* ambiguous prefix: CUDA refuses it */
    ck_assert_int_eq(MAP(e, 0, 3), -1);
    e = genv("7", NULL, false);
    ck_assert_int_eq(MAP(e, 0, 3), -1);
    /* A container given two devices by UUID sees them in PCI order;
     * CUDA_VISIBLE_DEVICES then picks among them. */
    e = genv(NULL, "GPU-bbbc3333,GPU-aaaa1111", true);
    ck_assert_int_eq(MAP(e, 0, 3), 0);
    ck_assert_int_eq(MAP(e, 1, 3), 2);
    e = genv("1", "GPU-bbbc3333,GPU-aaaa1111", true);
    ck_assert_int_eq(MAP(e, 0, 3), 2);
    e = genv("GPU-bbbb2222", "GPU-bbbc3333,GPU-aaaa1111", true); /* not the container's */
    ck_assert_int_eq(MAP(e, 0, 3), -1);
    /* NVIDIA_VISIBLE_DEVICES means nothing outside a container. */
    e = genv(NULL, "2", false);
    ck_assert_int_eq(MAP(e, 0, 3), 0);
    e = genv(NULL, "all", true);
    ck_assert_int_eq(MAP(e, 1, 3), 1);
    e = genv(NULL, "none", true);
    ck_assert_int_eq(MAP(e, 0, 3), -1);
    e = genv(NULL, "0:1", true); /* a MIG instance */
    ck_assert_int_eq(MAP(e, 0, 3), -1);
    /* Different boards: CUDA numbers them fastest first unless told. */
    snprintf(gpus[1].name, sizeof gpus[1].name, "NVIDIA A100");
    e = genv(NULL, NULL, false);
    ck_assert_int_eq(MAP(e, 0, 3), -1);
    snprintf(e.device_order, sizeof e.device_order, "PCI_BUS_ID");
    ck_assert_int_eq(MAP(e, 1, 3), 1);
}
END_TEST

START_TEST(ident_names_only_in_a_pod)
{
    static const char penv[] = "HOSTNAME=trainer-7d9f\0POD_NAMESPACE=ml team\0CONTAINER_NAME=main\0"
                               "CUDA_VISIBLE_DEVICES=1\0NVIDIA_VISIBLE_DEVICES=GPU-x\0";
    struct top_ident id;
    memset(&id, 0, sizeof id);
    top_ident_from_environ(&id, penv, sizeof penv - 1);
    ck_assert(id.gpu_env.known && !id.gpu_env.in_container);
    ck_assert_str_eq(id.gpu_env.cuda_visible, "1");
    ck_assert_str_eq(id.pod, "");
    memset(&id, 0, sizeof id);
    snprintf(id.ctr.pod_uid, sizeof id.ctr.pod_uid, "1f2e3d4c-5b6a-4980-a1b2-c3d4e5f60718");
    top_ident_from_environ(&id, penv, sizeof penv - 1);
    ck_assert(id.gpu_env.in_container);
    ck_assert_str_eq(id.gpu_env.nvidia_visible, "GPU-x");
    ck_assert_str_eq(id.pod, "trainer-7d9f"); /* the pod's hostname without POD_NAME */
    ck_assert_str_eq(id.ns, "ml team");       /* cleaned by top_ident_probe */
    ck_assert_str_eq(id.container, "main");
}
END_TEST

START_TEST(ident_probe_self)
{
    struct top_ident id;
    top_ident_probe(&id, getpid());
    ck_assert(id.probed && id.gpu_env.known);
    top_ident_probe(&id, 0);
    ck_assert(!id.probed && !id.gpu_env.known);
}
END_TEST

/* A process chrooted to root, stopped until killed; its pid. */
static pid_t jailed(const char *root)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char ok = chroot(root) == 0 && chdir("/") == 0;
        (void)!write(fds[1], &ok, 1);
        for (;;)
            pause();
    }
    char ok = 0;
    ck_assert_int_eq(read(fds[0], &ok, 1), 1);
    close(fds[0]);
    close(fds[1]);
    ck_assert_msg(ok, "chroot %s failed", root);
    return pid;
}

static void put_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "%s", path);
    fputs(text, f);
    fclose(f);
}

static const char *ns_of(pid_t pid)
{
    static char ns[TOP_K8S_NAME];
    top_ident_namespace_file(pid, ns, sizeof ns);
    return ns;
}

/* The namespace file belongs to the pod's process: its links resolve in
 * its root (an image's /var/run -> /run, the kubelet's ..data links), and
 * nothing there reaches the reader's own files or blocks it (a link to a
 * host path, a FIFO). Needs root for chroot. */
START_TEST(namespace_file_stays_in_the_process_root)
{
    if (geteuid() != 0) {
        printf("namespace_file_stays_in_the_process_root: not root, skipped\n");
        return;
    }
    char root[] = "/tmp/spw-nsroot-XXXXXX", cmd[2048], secret[64], sa[256], file[300];
    ck_assert_ptr_nonnull(mkdtemp(root));
    snprintf(secret, sizeof secret, "%s.secret", root); /* a file of the reader's, outside the root */
    put_text(secret, "leaked\n");
    snprintf(sa, sizeof sa, "%s/run/secrets/kubernetes.io/serviceaccount", root);
    snprintf(cmd, sizeof cmd, "mkdir -p %s/..2026_11_28 %s/var && ln -s /run %s/var/run && "
             "ln -s ..2026_11_28 %s/..data && ln -s ..data/namespace %s/namespace", sa, root, root, sa, sa);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(file, sizeof file, "%s/..2026_11_28/namespace", sa);
    put_text(file, "team-b\nmore");
    pid_t pid = jailed(root);
    ck_assert_str_eq(ns_of(pid), "team-b");
    /* A link out of the root names the root's own path, which is not there. */
    unlink(file);
    ck_assert_int_eq(symlink(secret, file), 0);
    ck_assert_str_eq(ns_of(pid), "");
    unlink(file);
    ck_assert_int_eq(mkfifo(file, 0600), 0);
    ck_assert_str_eq(ns_of(pid), ""); /* at once: the suite's timeout would catch a hang */
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    ck_assert_str_eq(ns_of(pid), "");
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", root, secret);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static void listen_is(const char *arg, int family, const char *addr, unsigned port)
{
    struct sockaddr_storage ss;
    socklen_t len;
    char why[160], text[80], want[80];
    ck_assert_msg(top_listen_parse(arg, &ss, &len, why, sizeof why) == 0, "%s: %s", arg, why);
    ck_assert_int_eq(ss.ss_family, family);
    top_listen_format((struct sockaddr *)&ss, text, sizeof text);
    snprintf(want, sizeof want, family == AF_INET6 ? "[%s]:%u" : "%s:%u", addr, port);
    ck_assert_str_eq(text, want);
}

static void listen_bad(const char *arg, const char *why_has)
{
    struct sockaddr_storage ss;
    socklen_t len;
    char why[160];
    ck_assert_msg(top_listen_parse(arg, &ss, &len, why, sizeof why) != 0, "%s accepted", arg);
    ck_assert_msg(strstr(why, why_has) != NULL, "%s: '%s' lacks '%s'", arg, why, why_has);
}

START_TEST(listen_addresses)
{
    listen_is("9402", AF_INET, "127.0.0.1", 9402); /* loopback unless told */
    listen_is(":9402", AF_INET, "127.0.0.1", 9402);
    listen_is("0", AF_INET, "127.0.0.1", 0);
    listen_is("0.0.0.0:9402", AF_INET, "0.0.0.0", 9402);
    listen_is("127.0.0.2:80", AF_INET, "127.0.0.2", 80);
    listen_is("[::1]:9402", AF_INET6, "::1", 9402);
    listen_is("[::]:1", AF_INET6, "::", 1);
    listen_bad("65536", "invalid port");
    listen_bad("127.0.0.1:", "invalid port");
    listen_bad("127.0.0.1:-1", "invalid port");
    listen_bad("127.0.0.1:80x", "invalid port");
    listen_bad("::1:80", "[ADDR]:PORT");
    listen_bad("[::1]80", "[IPv6]:PORT");
    listen_bad("[::1", "[IPv6]:PORT");
    listen_bad("no.such.host.invalid:80", "cannot resolve");
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("tools_ident");
    TCase *tc = tcase_create("ident");
    tcase_add_test(tc, cgroup_fixtures);
    tcase_add_test(tc, cgroup_of_self);
    tcase_add_test(tc, environ_lookup);
    tcase_add_test(tc, gpu_map_without_nvml);
    tcase_add_test(tc, gpu_map_with_nvml);
    tcase_add_test(tc, ident_names_only_in_a_pod);
    tcase_add_test(tc, ident_probe_self);
    tcase_add_test(tc, namespace_file_stays_in_the_process_root);
    tcase_add_test(tc, listen_addresses);
    suite_add_tcase(s, tc);
    return s;
}
