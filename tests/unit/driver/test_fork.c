/* Conformance: fork(). NVIDIA's driver does not carry its state into a
 * forked child: "CUDA does not support the use of fork() after CUDA has been
 * initialized"; in a child that did not exec, cuInit and every other call
 * answer CUDA_ERROR_NOT_INITIALIZED (what PyTorch, TensorFlow and CuPy
 * workers report as "initialization error"). A fork before cuInit leaves the
 * child free to initialize its own driver. The parent keeps its driver
 * whatever the child does. spillway's fork test (tests/integration/shim/
 * fork.sh) relies on fakecuda answering so.
 *
 * Each test starts with no driver state: no fixture runs cuInit before the
 * fork under test. Each child reports by exit status (0: as expected) and
 * has an alarm: a child that hangs fails the test instead of hanging it. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/driver/common.h"

#define WORDS (1024 * 1024)

/* In a child: the call must answer want, else exit with status code. */
#define CHILD_EXPECT(call, want, code)    \
    do {                                  \
        if ((call) != (want)) {           \
            fprintf(stderr, "child: %s\n", #call); \
            _exit(code);                  \
        }                                 \
    } while (0)

static pid_t fork_child(void)
{
    fflush(NULL); /* nothing buffered twice */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        signal(SIGALRM, SIG_DFL); /* Check's handler would kill the whole test */
        alarm(20);
    }
    return pid;
}

static void expect_child_ok(pid_t pid)
{
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x (exit %d, signal %d)",
                  st, WIFEXITED(st) ? WEXITSTATUS(st) : -1, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* What a child of an initialized driver sees: no driver. Ends with exit(),
 * not _exit(): the driver's own teardown at exit must not hang or crash
 * in the child either. */
static void child_of_initialized(CUdeviceptr parents, CUstream s)
{
    int n;
    CUdevice d;
    CUdeviceptr p = 0;
    unsigned word = 0;
    CHILD_EXPECT(cuInit(0), CUDA_ERROR_NOT_INITIALIZED, 10);
    CHILD_EXPECT(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED, 11);
    CHILD_EXPECT(cuDeviceGet(&d, 0), CUDA_ERROR_NOT_INITIALIZED, 12);
    CHILD_EXPECT(cuMemAlloc(&p, 1 << 20), CUDA_ERROR_NOT_INITIALIZED, 13);
    CHILD_EXPECT(cuMemcpyDtoH(&word, parents, sizeof word), CUDA_ERROR_NOT_INITIALIZED, 14);
    CHILD_EXPECT(cuMemsetD32Async(parents, 9, WORDS, s), CUDA_ERROR_NOT_INITIALIZED, 15);
    CHILD_EXPECT(cuStreamSynchronize(s), CUDA_ERROR_NOT_INITIALIZED, 16);
    CHILD_EXPECT(cuCtxSynchronize(), CUDA_ERROR_NOT_INITIALIZED, 17);
    CHILD_EXPECT(cuMemFree(parents), CUDA_ERROR_NOT_INITIALIZED, 18);
    exit(0);
}

START_TEST(child_of_an_initialized_driver_has_none)
{
    driver_setup();
    CUdeviceptr p;
    CUstream s;
    CU_OK(cuMemAlloc(&p, WORDS * sizeof(unsigned)));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuMemsetD32Async(p, 7, WORDS, s)); /* in flight while the parent forks */
    pid_t pid = fork_child();
    if (pid == 0)
        child_of_initialized(p, s);
    /* The parent's driver goes on as if nothing happened. */
    CU_OK(cuMemsetD32Async(p, 8, WORDS, s));
    CU_OK(cuStreamSynchronize(s));
    expect_child_ok(pid);
    expect_u32(p, 8, WORDS);
    CUdeviceptr q;
    CU_OK(cuMemAlloc(&q, 1 << 20));
    CU_OK(cuMemFree(q));
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(p));
}
END_TEST

/* A child forked before cuInit makes a driver of its own. */
static void child_initializes(void)
{
    CUcontext c;
    CUdeviceptr p;
    unsigned words[4] = {0};
    CHILD_EXPECT(cuInit(0), CUDA_SUCCESS, 20);
    CHILD_EXPECT(cuDevicePrimaryCtxRetain(&c, 0), CUDA_SUCCESS, 21);
    CHILD_EXPECT(cuCtxSetCurrent(c), CUDA_SUCCESS, 22);
    CHILD_EXPECT(cuMemAlloc(&p, sizeof words), CUDA_SUCCESS, 23);
    CHILD_EXPECT(cuMemsetD32(p, 5, 4), CUDA_SUCCESS, 24);
    CHILD_EXPECT(cuMemcpyDtoH(words, p, sizeof words), CUDA_SUCCESS, 25);
    CHILD_EXPECT(words[3], 5u, 26);
    CHILD_EXPECT(cuMemFree(p), CUDA_SUCCESS, 27);
    exit(0);
}

START_TEST(child_forked_before_cuInit_initializes)
{
    pid_t pid = fork_child();
    if (pid == 0)
        child_initializes();
    expect_child_ok(pid);
    driver_setup(); /* and the parent, still uninitialized, too */
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 1 << 20));
    CU_OK(cuMemFree(p));
}
END_TEST

/* A grandchild of an initialized driver has none either, even though its
 * own parent never called the driver. */
START_TEST(grandchild_has_none)
{
    driver_setup();
    pid_t pid = fork_child();
    if (pid == 0) {
        pid_t g = fork();
        if (g < 0)
            _exit(30);
        if (g == 0) {
            int n;
            CHILD_EXPECT(cuInit(0), CUDA_ERROR_NOT_INITIALIZED, 31);
            CHILD_EXPECT(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED, 32);
            _exit(0);
        }
        int st = 0;
        _exit(waitpid(g, &st, 0) == g && WIFEXITED(st) ? WEXITSTATUS(st) : 33);
    }
    expect_child_ok(pid);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("driver_fork");
    TCase *tc = tcase_create("fork");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, child_of_an_initialized_driver_has_none);
    tcase_add_test(tc, child_forked_before_cuInit_initializes);
    tcase_add_test(tc, grandchild_has_none);
    suite_add_tcase(s, tc);
    return s;
}
