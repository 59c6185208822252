/* Legacy IPC of pool memory under spillway against fakecuda (ipc.sh): one
 * 256 MiB device, a 64 MiB limit, spill on. The exporter writes a pattern
 * into an allocation that does not start on a page boundary, lets pressure
 * spill it, exports it; a child it exec's (LD_PRELOAD carries spillway)
 * opens the handle twice (the same pointer), reads the pattern, writes
 * another; the exporter sees it; pressure again leaves it intact. Then the
 * exporter frees it and fills the pool with new allocations while the
 * child still writes through its mapping: the new allocations stay
 * untouched. Bad handles (random bytes, a wrong secret, a freed
 * allocation, a dead exporter, the exporter's own) answer errors at once.
 * SPW_IPC_ONLY=off: SPILLWAY_IPC=0, cuIpcGetMemHandle of pool memory is
 * not supported. SPW_IPC_ONLY=passthrough: spillway disabled, what the driver answers
 * reaches the program (fakecuda has no cuIpc*: spillway's answer for a
 * function the driver lacks). Plain exit status: 0 passed. */
#include <cuda.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shim/spillway.h"
#include "tests/integration/shim/ipc_test.h"

#define TSIZE (300 * 1000) /* the exported allocation */
#define NFILL 5
#define FILL (16 * MiB)

static unsigned char pat(unsigned seed, size_t i)
{
    return (unsigned char)(seed * 131u + i * 7u + (i >> 9));
}

static void put(CUdeviceptr p, size_t n, unsigned seed)
{
    unsigned char *b = malloc(n);
    for (size_t i = 0; i < n; i++)
        b[i] = pat(seed, i);
    CU_OK(cuMemcpyHtoD(p, b, n));
    free(b);
}

static void expect(CUdeviceptr p, size_t n, unsigned seed)
{
    unsigned char *b = malloc(n);
    CU_OK(cuMemcpyDtoH(b, p, n));
    for (size_t i = 0; i < n; i++)
        if (b[i] != pat(seed, i))
            FAIL("byte %zu of %#llx: %u, not %u (pattern %u)", i, (unsigned long long)p, b[i],
                 pat(seed, i), seed);
    free(b);
}

static void expect_byte(CUdeviceptr p, size_t n, unsigned char v)
{
    unsigned char *b = malloc(n);
    CU_OK(cuMemcpyDtoH(b, p, n));
    for (size_t i = 0; i < n; i++)
        if (b[i] != v)
            FAIL("byte %zu of %#llx: %u, not %u: written through a freed export?", i,
                 (unsigned long long)p, b[i], v);
    free(b);
}

/* Pressure: the fillers touched, past the limit, so the coldest spill. */
static void pressure(CUdeviceptr *f, int n)
{
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < n; i++)
            CU_OK(cuMemsetD8(f[i], (unsigned char)(i + 1), FILL));
    CU_OK(cuCtxSynchronize());
}

static void say(int fd, char c)
{
    CHECK(write(fd, &c, 1) == 1);
}

static char hear(int fd)
{
    char c = 0;
    CHECK(read(fd, &c, 1) == 1);
    return c;
}

/* An open that must fail, quickly. */
static void refused(CUipcMemHandle h, const char *what)
{
    CUdeviceptr p = 0;
    double t0 = now_s();
    CUresult r = ipc_open(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    double dt = now_s() - t0;
    if (r == CUDA_SUCCESS)
        FAIL("%s: opened", what);
    if (dt > 3.0)
        FAIL("%s: %.1f s to answer", what, dt);
    printf("%s: error %d in %.3f s\n", what, (int)r, dt);
}

/* ---- the importer ------------------------------------------------------------ */

/* A connection to the exporter's socket (its token at bytes 8..15). */
static int connect_exporter(const CUipcMemHandle *h)
{
    uint64_t token;
    memcpy(&token, h->reserved + 8, sizeof token);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    int n = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "spillway-ipc-%016llx",
                     (unsigned long long)token);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(s >= 0);
    CHECK(connect(s, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) == 0);
    return s;
}

static int child(const char *handle_hex, int in, int out)
{
    who = "importer";
    pid_t exporter = getppid();
    alarm(60);
    setup();
    CHECK(ipc_open && ipc_close && ipc_get);
    CUipcMemHandle h;
    unhex(handle_hex, &h);
    size_t size;
    memcpy(&size, h.reserved + 40, sizeof size); /* spillway's handle: size at 40 (shim/ipc.h) */
    CHECK(size == TSIZE);
    CUdeviceptr a = 0, b = 0;
    CU_OK(ipc_open(&a, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    CU_OK(ipc_open(&b, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    CHECK(a == b);
    CHECK(ipc_open(NULL, h, 0) == CUDA_ERROR_INVALID_VALUE); /* NULL out, live handle */
    CHECK(ipc_open(&b, h, 0x80) == CUDA_ERROR_INVALID_VALUE); /* unknown flags */
    expect(a, TSIZE, 1);
    put(a, TSIZE, 2);
    CU_OK(cuCtxSynchronize()); /* a copy from pageable memory may still be landing */
    expect(a, TSIZE, 2);
    say(out, 'w');
    /* Bad handles while the exporter lives. */
    CUipcMemHandle bad = h;
    bad.reserved[16] ^= 0x5a; /* the secret */
    refused(bad, "wrong secret");
    bad = h;
    bad.reserved[8] ^= 0x33; /* the token: no such exporter */
    refused(bad, "dead exporter (no socket)");
    for (int i = 0; i < CU_IPC_HANDLE_SIZE; i++)
        bad.reserved[i] = (char)(rand() & 0xff);
    refused(bad, "random bytes");
    /* The server outlives garbage and a peer that says nothing: a request
     * after them is still answered (after the server's 2 s for the mute
     * one; the asker waits 10 s). */
    int g = connect_exporter(&h);
    CHECK(write(g, "garbage!", 8) == 8);
    close(g);
    int mute = connect_exporter(&h);
    CUdeviceptr c = 0;
    double t0 = now_s();
    CU_OK(ipc_close(a));
    CU_OK(ipc_close(b));
    CU_OK(ipc_open(&c, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)); /* asks the server again */
    CU_OK(ipc_open(&b, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    printf("open past garbage and a mute peer: %.1f s\n", now_s() - t0);
    CHECK(now_s() - t0 < 10);
    close(mute);
    a = c;
    expect(a, TSIZE, 2);
    CHECK(hear(in) == 'p'); /* after pressure in the exporter: still the same memory */
    expect(a, TSIZE, 2);
    put(a, TSIZE, 3);
    CU_OK(cuCtxSynchronize());
    say(out, 'w');
    CHECK(hear(in) == 'f'); /* the exporter freed it and filled the pool */
    for (int k = 0; k < 20; k++)
        CU_OK(cuMemsetD8(a, 0xee, TSIZE)); /* after the free: must reach no one else */
    CU_OK(cuCtxSynchronize());
    say(out, 'x');
    CHECK(hear(in) == 'c');
    CU_OK(ipc_close(a));
    CU_OK(ipc_close(b));
    CHECK(ipc_close(a) != CUDA_SUCCESS); /* closed: the driver's (no such mapping) */
    refused(h, "freed allocation");
    say(out, 'd');
    CHECK(hear(in) == 'q'); /* the exporter exits */
    /* Its status is lost with its parent: ipc.sh waits for this word. */
    for (int k = 0; k < 200 && getppid() == exporter; k++) /* reparented once it is gone */
        usleep(50 * 1000);
    CHECK(getppid() != exporter);
    refused(h, "exporter gone");
    const char *res = getenv("SPW_IPC_RESULT");
    FILE *f = res ? fopen(res, "w") : NULL;
    CHECK(f);
    fputs("ok\n", f);
    fclose(f);
    return 0;
}

/* ---- the exporter ------------------------------------------------------------ */

static int passthrough(void)
{
    setup();
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, TSIZE));
    CUipcMemHandle h;
    if (!ipc_get) {
        printf("passthrough: no cuIpcGetMemHandle without spillway (fakecuda has none)\n");
        return 0;
    }
    CUresult r = ipc_get(&h, p);
    /* fakecuda has no cuIpc*: spillway's answer for a function the driver
     * lacks, NOT_INITIALIZED, reaches the program unchanged. */
    if (r != CUDA_ERROR_NOT_INITIALIZED)
        FAIL("cuIpcGetMemHandle with spillway disabled: %d, not the driver's", (int)r);
    memset(&h, 0, sizeof h);
    CUdeviceptr q;
    CHECK(ipc_open(&q, h, 0) == CUDA_ERROR_NOT_INITIALIZED);
    CHECK(ipc_close(p) == CUDA_ERROR_NOT_INITIALIZED);
    printf("passthrough: the driver's answers\n");
    return 0;
}

/* SPILLWAY_IPC=0: plain pool pages, so no export of pool memory. */
static int ipc_off(void)
{
    setup();
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, TSIZE));
    unsigned capable = 1;
    CU_OK(cuPointerGetAttribute(&capable, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, p));
    CHECK(capable == 0);
    CUipcMemHandle h;
    CHECK(ipc_get(&h, p) == CUDA_ERROR_NOT_SUPPORTED);
    CHECK(ipc_get(&h, p) == CUDA_ERROR_NOT_SUPPORTED);
    CU_OK(cuMemFree(p));
    printf("SPILLWAY_IPC=0: not supported\n");
    return 0;
}

int main(int argc, char **argv)
{
    (void)argc;
    const char *child_handle = getenv("SPW_IPC_CHILD");
    if (child_handle)
        return child(child_handle, atoi(getenv("SPW_IPC_IN")), atoi(getenv("SPW_IPC_OUT")));
    const char *only = getenv("SPW_IPC_ONLY");
    if (only && !strcmp(only, "passthrough"))
        return passthrough();
    if (only && !strcmp(only, "off"))
        return ipc_off();
    alarm(120);
    setup();
    CHECK(ipc_get && ipc_open && ipc_close);
    int (*pool)(int, struct spillway_pool_counters *) =
        (int (*)(int, struct spillway_pool_counters *))dlsym(RTLD_DEFAULT, "spillway_get_pool_counters");
    CHECK(pool);
    CUdeviceptr small, t, fill[NFILL], more[NFILL];
    CU_OK(cuMemAlloc(&small, 1000));
    CU_OK(cuMemAlloc(&t, TSIZE));
    CHECK(t & (PAGE - 1)); /* not on a page boundary */
    unsigned capable = 0;
    CU_OK(cuPointerGetAttribute(&capable, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, t));
    CHECK(capable == 1);
    put(t, TSIZE, 1);
    for (int i = 0; i < NFILL; i++)
        CU_OK(cuMemAlloc(&fill[i], FILL));
    pressure(fill, NFILL);
    struct spillway_pool_counters c0, c1;
    CHECK(pool(0, &c0) == 0);
    CHECK(c0.spilled_bytes > 0);
    CUipcMemHandle h, h2;
    CU_OK(ipc_get(&h, t + 1000)); /* inside it: the allocation's handle */
    CU_OK(ipc_get(&h2, t));
    CHECK(ipc_get(NULL, t) == CUDA_ERROR_INVALID_VALUE);
    CHECK(!memcmp(&h, &h2, sizeof h)); /* the same bytes each time */
    CHECK(pool(0, &c1) == 0);
    printf("export: fill events %" PRIu64 " -> %" PRIu64 "\n", c0.fill_events, c1.fill_events);
    expect(t, TSIZE, 1);
    /* The exporter opening its own handle: the driver's refusal. */
    CUdeviceptr own;
    CHECK(ipc_open(&own, h, 0) == CUDA_ERROR_INVALID_CONTEXT);
    /* The child. */
    int to_child[2], from_child[2];
    CHECK(pipe(to_child) == 0 && pipe(from_child) == 0);
    char hx[2 * CU_IPC_HANDLE_SIZE + 1], in[16], out[16];
    hex(&h, hx);
    snprintf(in, sizeof in, "%d", to_child[0]);
    snprintf(out, sizeof out, "%d", from_child[1]);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        setenv("SPW_IPC_CHILD", hx, 1);
        setenv("SPW_IPC_IN", in, 1);
        setenv("SPW_IPC_OUT", out, 1);
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    CHECK(hear(from_child[0]) == 'w');
    expect(t, TSIZE, 2); /* the child's writes */
    for (int k = 0; k < 4; k++)
        pressure(fill, NFILL); /* t, not used meanwhile, is the coldest */
    expect(t, TSIZE, 2); /* stays where it is */
    say(to_child[1], 'p');
    CHECK(hear(from_child[0]) == 'w');
    expect(t, TSIZE, 3); /* the child still writes to it: it did not move */
    CU_OK(cuMemFree(t));
    CU_OK(cuMemFree(small)); /* the rest of its page free too */
    CU_OK(cuCtxSynchronize()); /* the frees covered: reusable at once */
    /* New allocations over the freed pool, filled with a byte of their own. */
    for (int i = 0; i < NFILL; i++) {
        CU_OK(cuMemAlloc(&more[i], 4 * MiB));
        CU_OK(cuMemsetD8(more[i], 0x5a, 4 * MiB));
    }
    CUdeviceptr smalls[64];
    for (int i = 0; i < 64; i++) {
        CU_OK(cuMemAlloc(&smalls[i], TSIZE));
        CU_OK(cuMemsetD8(smalls[i], 0x5a, TSIZE));
    }
    CU_OK(cuCtxSynchronize());
    say(to_child[1], 'f');
    CHECK(hear(from_child[0]) == 'x');
    for (int i = 0; i < NFILL; i++)
        expect_byte(more[i], 4 * MiB, 0x5a);
    for (int i = 0; i < 64; i++)
        expect_byte(smalls[i], TSIZE, 0x5a);
    say(to_child[1], 'c');
    CHECK(hear(from_child[0]) == 'd');
    pressure(fill, NFILL);
    for (int i = 0; i < NFILL; i++)
        expect_byte(more[i], 4 * MiB, 0x5a);
    /* Gone: the child's last open must fail at once. Closing the write end
     * and exiting would race; the child is told, and we exit. */
    say(to_child[1], 'q');
    printf("exporter: done, the importer checks the exporter gone\n");
    fflush(stdout);
    _exit(0); /* the child reports through SPW_IPC_RESULT (ipc.sh) */
}
