/* Legacy IPC of pool memory, the edges (ipc.sh runs each mode under
 * spillway against fakecuda):
 *
 *   SPW_IPC_PEER=liar   an "exporter" that is not spillway (a forked
 *       process serving the socket a made-up handle names) answers
 *       nonsense: a page of one byte with a huge count, too few pages for
 *       the size, descriptors cut short, a failure status. Each open fails
 *       at once with CUDA_ERROR_INVALID_VALUE (or the status), nothing
 *       crashes and no descriptor is left open in the importer.
 *   SPW_IPC_PEER=many   an allocation of 300 pages (more than one message
 *       of descriptors) exported and opened by an exec'd child, which checks
 *       its first and last bytes and writes the last.
 *   SPW_IPC_PEER=capture  the export of a partly spilled allocation while
 *       another thread's stream capture is under way (no move can happen
 *       then) waits for the capture's end instead of failing.
 *   SPW_IPC_PEER=neighbour  a handle made up for an allocation that shares
 *       an exported one's page, but was not exported, is refused.
 *   SPW_IPC_PEER=gone   the exporter exits while a child it forked (no
 *       exec) lives on: the importer's open is refused at once, not after
 *       its 10 s wait on a socket nobody serves.
 * Plain exit status: 0 passed. */
#include <cuda.h>
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/shim/ipc_test.h"

static int open_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    CHECK(d);
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* ---- liar ---------------------------------------------------------------------- */

/* What spillway's handle and its exporter's reply hold (shim/ipc.h). */
struct handle {
    char magic[8];
    uint64_t token, secret, buffer, base, size;
};
struct reply {
    int32_t status;
    uint32_t pad;
    unsigned char uuid[16];
    uint64_t page, npages, offset;
};

static void name_of(uint64_t token, struct sockaddr_un *a, socklen_t *len)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "spillway-ipc-%016llx", (unsigned long long)token);
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static void send_fd(int s, int fd)
{
    char byte = 0;
    struct iovec iov = {&byte, 1};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    memset(&u, 0, sizeof u);
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    (void)sendmsg(s, &m, MSG_NOSIGNAL);
}

/* The liar: answers each of `n` connections with replies[i], then, for
 * those in the mask, one real descriptor before hanging up. */
static void liar(int listener, const struct reply *replies, int n, unsigned give_one_fd)
{
    /* Never outlives the test: killed with its parent, or after 20 s. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    alarm(20);
    int memfd = memfd_create("liar", 0);
    if (memfd < 0 || ftruncate(memfd, (off_t)PAGE) != 0)
        _exit(2);
    for (int i = 0; i < n; i++) {
        int s = accept(listener, NULL, NULL);
        if (s < 0)
            _exit(3);
        char req[64];
        (void)recv(s, req, 40, MSG_WAITALL);
        (void)send(s, &replies[i], sizeof replies[i], MSG_NOSIGNAL);
        if (give_one_fd >> i & 1)
            send_fd(s, memfd);
        close(s);
    }
    _exit(0);
}

static CUipcMemHandle made_up(uint64_t token, uint64_t size)
{
    struct handle h = {{'S', 'P', 'W', 'I', 'P', 'C', 1, 0}, token, 42, 7, 0x7f0000000000ull, size};
    CUipcMemHandle out;
    memset(&out, 0, sizeof out);
    memcpy(out.reserved, &h, sizeof h);
    return out;
}

static int liar_mode(void)
{
    setup();
    CHECK(ipc_get && ipc_open && ipc_close);
    CUuuid u;
    CU_OK(cuDeviceGetUuid(&u, 0));
    uint64_t token = 0x5157ull << 32 | (uint64_t)getpid();
    struct sockaddr_un a;
    socklen_t len;
    name_of(token, &a, &len);
    int listener = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(listener >= 0 && bind(listener, (struct sockaddr *)&a, len) == 0 && listen(listener, 8) == 0);
    const uint64_t huge = (1ull << 62) + 1;
    struct reply r[5];
    memset(r, 0, sizeof r);
    for (int i = 0; i < 5; i++)
        memcpy(r[i].uuid, u.bytes, 16);
    r[0] = (struct reply){.page = 1, .npages = huge, .offset = 0}; /* page of a byte, huge count */
    memcpy(r[0].uuid, u.bytes, 16);
    r[1].page = PAGE, r[1].npages = 1; /* 4 MiB asked: 2 pages needed (one sent, would map) */
    r[2].page = PAGE, r[2].npages = 2; /* right, but one descriptor and gone */
    r[3].page = 3 * MiB, r[3].npages = 2; /* not a power of two */
    r[4].status = 999; /* a failure: passed on */
    const uint64_t sizes[5] = {huge, 4 * MiB, 4 * MiB, 4 * MiB, 4 * MiB};
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        liar(listener, r, 5, 1u << 1 | 1u << 2);
    close(listener);
    int fds0 = open_fds();
    for (int i = 0; i < 5; i++) {
        CUdeviceptr p = 0;
        double t0 = now_s();
        CUresult got = ipc_open(&p, made_up(token, sizes[i]), 0);
        double dt = now_s() - t0;
        printf("lie %d: error %d in %.3f s\n", i, (int)got, dt);
        CHECK(got == (i == 4 ? (CUresult)999 : CUDA_ERROR_INVALID_VALUE));
        CHECK(dt < 3.0);
    }
    CHECK(open_fds() == fds0); /* nothing left open */
    int st;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    printf("liar: every lie refused\n");
    return 0;
}

/* ---- children ------------------------------------------------------------------ */

/* This program exec'd again (LD_PRELOAD carries spillway) in mode, with
 * the handle h in SPW_IPC_HANDLE and, when var, var=val. */
static pid_t spawn(char **argv, const char *mode, const CUipcMemHandle *h, const char *var, const char *val)
{
    char hx[2 * CU_IPC_HANDLE_SIZE + 1];
    hex(h, hx);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        setenv("SPW_IPC_PEER", mode, 1);
        setenv("SPW_IPC_HANDLE", hx, 1);
        if (var)
            setenv(var, val, 1);
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    return pid;
}

static void passed(pid_t pid)
{
    int st;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* ---- many ---------------------------------------------------------------------- */

#define MANY_PAGES 300

static int many_child(const char *hx)
{
    setup();
    CHECK(ipc_get && ipc_open && ipc_close);
    CUipcMemHandle h;
    unhex(hx, &h);
    CUdeviceptr p;
    CU_OK(ipc_open(&p, h, 0));
    unsigned char first, last;
    CU_OK(cuMemcpyDtoH(&first, p, 1));
    CU_OK(cuMemcpyDtoH(&last, p + (size_t)MANY_PAGES * PAGE - 1, 1));
    CHECK(first == 0x11 && last == 0x22);
    unsigned char v = 0x33;
    CU_OK(cuMemcpyHtoD(p + (size_t)MANY_PAGES * PAGE - 1, &v, 1));
    CU_OK(cuCtxSynchronize());
    CU_OK(ipc_close(p));
    return 0;
}

static int many_mode(char **argv)
{
    setup();
    CHECK(ipc_get && ipc_open && ipc_close);
    CUdeviceptr p;
    size_t n = (size_t)MANY_PAGES * PAGE;
    CU_OK(cuMemAlloc(&p, n));
    unsigned char v = 0x11;
    CU_OK(cuMemcpyHtoD(p, &v, 1));
    v = 0x22;
    CU_OK(cuMemcpyHtoD(p + n - 1, &v, 1));
    CUipcMemHandle h;
    CU_OK(ipc_get(&h, p));
    passed(spawn(argv, "many-child", &h, NULL, NULL));
    CU_OK(cuMemcpyDtoH(&v, p + n - 1, 1));
    CHECK(v == 0x33);
    CU_OK(cuMemFree(p));
    printf("many: %d pages shared\n", MANY_PAGES);
    return 0;
}

/* ---- capture ------------------------------------------------------------------- */

static CUstream cap_stream;
static int cap_ms;

static void *capture_a_while(void *arg)
{
    CUcontext ctx = arg;
    CU_OK(cuCtxSetCurrent(ctx));
    CU_OK(cuStreamBeginCapture(cap_stream, CU_STREAM_CAPTURE_MODE_RELAXED));
    struct timespec ts = {0, cap_ms * 1000000L};
    nanosleep(&ts, NULL);
    CUgraph g;
    CU_OK(cuStreamEndCapture(cap_stream, &g));
    CU_OK(cuGraphDestroy(g));
    return NULL;
}

static int capture_mode(void)
{
    setup();
    CHECK(ipc_get && ipc_open && ipc_close);
    CUcontext ctx;
    CU_OK(cuCtxGetCurrent(&ctx));
    CUdeviceptr t, fill[6];
    CU_OK(cuMemAlloc(&t, 3 * PAGE));
    CU_OK(cuMemsetD8(t, 0x44, 3 * PAGE));
    for (int k = 0; k < 2; k++) /* past the 64 MiB limit: t, the coldest, spills */
        for (int i = 0; i < 6; i++) {
            if (!k)
                CU_OK(cuMemAlloc(&fill[i], 16 * MiB));
            CU_OK(cuMemsetD8(fill[i], (unsigned char)i, 16 * MiB));
        }
    CU_OK(cuCtxSynchronize());
    CU_OK(cuStreamCreate(&cap_stream, CU_STREAM_NON_BLOCKING));
    cap_ms = 300;
    pthread_t th;
    CHECK(pthread_create(&th, NULL, capture_a_while, ctx) == 0);
    struct timespec ts = {0, 50 * 1000000L}; /* the capture under way */
    nanosleep(&ts, NULL);
    double t0 = now_s();
    CUipcMemHandle h;
    CUresult r = ipc_get(&h, t);
    double dt = now_s() - t0;
    CHECK(pthread_join(th, NULL) == 0);
    printf("capture: export %d after %.3f s\n", (int)r, dt);
    CHECK(r == CUDA_SUCCESS);
    unsigned char b[16];
    CU_OK(cuMemcpyDtoH(b, t + 3 * PAGE - 16, 16));
    for (int i = 0; i < 16; i++)
        CHECK(b[i] == 0x44);
    return 0;
}

/* ---- neighbour ----------------------------------------------------------------- */

/* The child: opens SPW_IPC_HANDLE and expects SPW_IPC_EXPECT. */
static int open_child(void)
{
    setup();
    CHECK(ipc_get && ipc_open && ipc_close);
    CUipcMemHandle h;
    unhex(getenv("SPW_IPC_HANDLE"), &h);
    CUdeviceptr p;
    CUresult r = ipc_open(&p, h, 0), want = (CUresult)atoi(getenv("SPW_IPC_EXPECT"));
    printf("open: error %d (expected %d)\n", (int)r, (int)want);
    CHECK(r == want);
    if (r == CUDA_SUCCESS)
        CU_OK(ipc_close(p));
    return 0;
}

static void open_in_child(char **argv, const CUipcMemHandle *h, CUresult want)
{
    char w[16];
    snprintf(w, sizeof w, "%d", (int)want);
    passed(spawn(argv, "open-child", h, "SPW_IPC_EXPECT", w));
}

/* Two small allocations on one page, one exported: a handle made up for
 * the other (the exporter's token and secret, its BUFFER_ID, base and
 * size) is refused; the exported one opens. */
static int neighbour_mode(char **argv)
{
    setup();
    CHECK(ipc_get && ipc_open && ipc_close);
    CUdeviceptr a, b;
    CU_OK(cuMemAlloc(&a, 1000));
    CU_OK(cuMemAlloc(&b, 1000));
    CHECK((a & ~(CUdeviceptr)(PAGE - 1)) == (b & ~(CUdeviceptr)(PAGE - 1)));
    CUipcMemHandle h;
    CU_OK(ipc_get(&h, a));
    unsigned long long id = 0;
    CU_OK(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, b));
    struct handle x;
    memcpy(&x, h.reserved, sizeof x);
    x.buffer = id;
    x.base = b;
    x.size = 1000;
    CUipcMemHandle hb = h;
    memcpy(hb.reserved, &x, sizeof x);
    open_in_child(argv, &hb, CUDA_ERROR_INVALID_VALUE);
    open_in_child(argv, &h, CUDA_SUCCESS);
    printf("neighbour: refused, the export opens\n");
    return 0;
}

/* ---- gone ---------------------------------------------------------------------- */

/* The importer: once its exporter is gone (it is reparented), an open of
 * the exporter's handle is refused at once, though a child the exporter
 * forked (without exec) still lives. */
static int gone_child(const char *hx, pid_t exporter)
{
    setup();
    CHECK(ipc_get && ipc_open && ipc_close);
    CUipcMemHandle h;
    unhex(hx, &h);
    for (int k = 0; k < 200 && getppid() == exporter; k++)
        usleep(50 * 1000);
    CHECK(getppid() != exporter);
    CUdeviceptr p;
    double t0 = now_s();
    CUresult r = ipc_open(&p, h, 0);
    double dt = now_s() - t0;
    printf("gone: error %d in %.3f s\n", (int)r, dt);
    CHECK(r == CUDA_ERROR_INVALID_VALUE);
    CHECK(dt < 2.0); /* not the socket's wait, nor the forked child's 5 s */
    const char *res = getenv("SPW_IPC_RESULT");
    FILE *f = res ? fopen(res, "w") : NULL;
    CHECK(f);
    fputs("ok\n", f);
    fclose(f);
    return 0;
}

static int gone_mode(char **argv)
{
    setup();
    CHECK(ipc_get && ipc_open && ipc_close);
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, PAGE));
    CUipcMemHandle h;
    CU_OK(ipc_get(&h, p));
    char me[32];
    snprintf(me, sizeof me, "%d", (int)getpid());
    (void)spawn(argv, "gone-child", &h, "SPW_IPC_EXPORTER", me);
    if (fork() == 0) { /* lives on after the exporter, without exec */
        alarm(0);
        sleep(5);
        _exit(0);
    }
    printf("gone: the exporter exits\n");
    fflush(stdout);
    _exit(0); /* the importer reports through SPW_IPC_RESULT (ipc.sh) */
}

int main(int argc, char **argv)
{
    (void)argc;
    alarm(60);
    const char *mode = getenv("SPW_IPC_PEER");
    if (!mode)
        FAIL("SPW_IPC_PEER: liar, many or capture");
    if (!strcmp(mode, "liar"))
        return liar_mode();
    if (!strcmp(mode, "many"))
        return many_mode(argv);
    if (!strcmp(mode, "many-child"))
        return many_child(getenv("SPW_IPC_HANDLE"));
    if (!strcmp(mode, "capture"))
        return capture_mode();
    if (!strcmp(mode, "neighbour"))
        return neighbour_mode(argv);
    if (!strcmp(mode, "open-child"))
        return open_child();
    if (!strcmp(mode, "gone"))
        return gone_mode(argv);
    if (!strcmp(mode, "gone-child"))
        return gone_child(getenv("SPW_IPC_HANDLE"), (pid_t)atoi(getenv("SPW_IPC_EXPORTER")));
    FAIL("SPW_IPC_PEER=%s: not a mode", mode);
}
