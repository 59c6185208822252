/* The legacy-IPC row of scripts/gpu-check.sh: cudaIpcGetMemHandle of pool
 * memory under spill pressure, opened by a child this program fork+exec's
 * (LD_PRELOAD carries spillway). The exporter writes a pattern into an
 * allocation that does not start the pool's page, pushes past the limit
 * (the allocation spills), exports it (filled back, pinned); the child opens
 * it twice (the same pointer), checks the pattern, writes another and
 * closes; the exporter sees the child's bytes, pushes again, and they stay.
 * Prints one RESULT line: ok=1 when every step held. Plain C on the CUDA
 * runtime, linked by nvcc (-cudart shared). IPC_BYTES, IPC_PRESSURE (bytes,
 * M/G suffixes) size it. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)

#define CK(call)                                                                        \
    do {                                                                                \
        cudaError_t e_ = (call);                                                        \
        if (e_ != cudaSuccess) {                                                        \
            printf("RESULT ok=0 err=%s:%d_%s\n", #call, (int)e_, cudaGetErrorName(e_)); \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

static size_t bytes_of(const char *s, size_t dflt)
{
    if (!s || !*s)
        return dflt;
    char *end;
    double v = strtod(s, &end);
    size_t m = *end == 'G' ? 1024 * MiB : *end == 'M' ? MiB : 1;
    return (size_t)(v * (double)m);
}

static unsigned char pat(unsigned seed, size_t i)
{
    return (unsigned char)(seed * 131u + i * 7u + (i >> 12));
}

static int check(const void *dev, size_t n, unsigned seed)
{
    unsigned char *b = malloc(n);
    CK(cudaMemcpy(b, dev, n, cudaMemcpyDeviceToHost));
    size_t bad = n;
    for (size_t i = 0; i < n && bad == n; i++)
        if (b[i] != pat(seed, i))
            bad = i;
    free(b);
    if (bad != n)
        fprintf(stderr, "byte %zu wrong (pattern %u)\n", bad, seed);
    return bad == n;
}

static void put(void *dev, size_t n, unsigned seed)
{
    unsigned char *b = malloc(n);
    for (size_t i = 0; i < n; i++)
        b[i] = pat(seed, i);
    CK(cudaMemcpy(dev, b, n, cudaMemcpyHostToDevice));
    free(b);
}

static int child(const char *hex, size_t n)
{
    cudaIpcMemHandle_t h;
    for (int i = 0; i < CUDA_IPC_HANDLE_SIZE; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1)
            return 2;
        h.reserved[i] = (char)v;
    }
    CK(cudaSetDevice(0));
    void *a, *b;
    CK(cudaIpcOpenMemHandle(&a, h, cudaIpcMemLazyEnablePeerAccess));
    CK(cudaIpcOpenMemHandle(&b, h, cudaIpcMemLazyEnablePeerAccess));
    if (a != b || !check(a, n, 1))
        return 3;
    put(a, n, 2);
    CK(cudaDeviceSynchronize());
    CK(cudaIpcCloseMemHandle(a));
    CK(cudaIpcCloseMemHandle(b));
    return 0;
}

int main(int argc, char **argv)
{
    size_t n = bytes_of(getenv("IPC_BYTES"), 256 * MiB);
    size_t pressure = bytes_of(getenv("IPC_PRESSURE"), 6 * 1024 * MiB), chunk = 256 * MiB;
    if (argc == 3 && !strcmp(argv[1], "--child"))
        return child(argv[2], n);
    CK(cudaSetDevice(0));
    void *small, *t;
    CK(cudaMalloc(&small, 1000));
    CK(cudaMalloc(&t, n));
    put(t, n, 1);
    size_t nchunks = pressure / chunk;
    void **c = calloc(nchunks ? nchunks : 1, sizeof *c);
    for (size_t i = 0; i < nchunks; i++) {
        CK(cudaMalloc(&c[i], chunk));
        CK(cudaMemset(c[i], (int)(i & 0xff), chunk));
    }
    CK(cudaDeviceSynchronize());
    cudaIpcMemHandle_t h;
    CK(cudaIpcGetMemHandle(&h, t));
    if (!check(t, n, 1)) {
        printf("RESULT ok=0 err=pattern_lost_at_export\n");
        return 1;
    }
    char hex[2 * CUDA_IPC_HANDLE_SIZE + 1];
    for (int i = 0; i < CUDA_IPC_HANDLE_SIZE; i++)
        sprintf(hex + 2 * i, "%02x", (unsigned char)h.reserved[i]);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        char *args[] = {argv[0], "--child", hex, NULL};
        execv("/proc/self/exe", args);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    int child_rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    int seen = child_rc == 0 && check(t, n, 2);
    for (size_t i = 0; i < nchunks; i++)
        CK(cudaMemset(c[i], 0x11, chunk));
    CK(cudaDeviceSynchronize());
    int kept = seen && check(t, n, 2);
    CK(cudaFree(t));
    printf("RESULT ok=%d child_rc=%d child_writes_seen=%d kept_under_pressure=%d bytes=%zu pressure=%zu\n",
           seen && kept, child_rc, seen, kept, n, pressure);
    return seen && kept ? 0 : 1;
}
