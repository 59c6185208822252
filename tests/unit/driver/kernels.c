/* The kernels of kernels.cu as C functions, for fakecuda: each runs its
 * whole grid on the stream's worker thread. */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/unit/driver/common.h"

static void fill_u32(fakecuda_dim3 grid, fakecuda_dim3 block, void **params)
{
    (void)grid;
    (void)block;
    unsigned *p = *(unsigned **)params[0];
    unsigned v = *(unsigned *)params[1];
    unsigned long long n = *(unsigned long long *)params[2];
    for (unsigned long long i = 0; i < n; i++)
        p[i] = v;
}

static void add_u32(fakecuda_dim3 grid, fakecuda_dim3 block, void **params)
{
    (void)grid;
    (void)block;
    unsigned *p = *(unsigned **)params[0];
    unsigned v = *(unsigned *)params[1];
    unsigned long long n = *(unsigned long long *)params[2];
    for (unsigned long long i = 0; i < n; i++)
        p[i] += v;
}

static void wait_flag(fakecuda_dim3 grid, fakecuda_dim3 block, void **params)
{
    (void)grid;
    (void)block;
    unsigned *flag = *(unsigned **)params[0];
    while (__atomic_load_n(flag, __ATOMIC_SEQ_CST) == 0)
        sched_yield();
}

/* cond_count(handle, counter, limit): adds 1 to *counter, then sets the
 * conditional node's value to whether *counter is still below limit, as
 * device code calling cudaGraphSetConditional would (fakecuda's hook). Not
 * in kernels.cu: a real kernel that sets a conditional needs libcudadevrt,
 * which that module is built without, so the conformance suites use none
 * (tests/integration/shim/capture_conditionals.c does, on fakecuda). */
static void cond_count(fakecuda_dim3 grid, fakecuda_dim3 block, void **params)
{
    (void)grid;
    (void)block;
    unsigned long long handle = *(unsigned long long *)params[0];
    unsigned *counter = *(unsigned **)params[1];
    unsigned limit = *(unsigned *)params[2];
    unsigned v = ++*counter;
    if (!fakecuda_graph_set_conditional || fakecuda_graph_set_conditional(handle, v < limit) != 0)
        abort(); /* a handle fakecuda did not make */
}

void fakecuda_kernels_register(void)
{
    static const size_t u32_params[] = {sizeof(void *), sizeof(unsigned), sizeof(unsigned long long)};
    static const size_t flag_params[] = {sizeof(void *)};
    /* Not ck_assert: programs outside a Check test use these kernels too
     * (tests/gpu/spill_check), and Check's asserts report to a test runner. */
    if (fakecuda_register_kernel("fill_u32", fill_u32, 3, u32_params) ||
        fakecuda_register_kernel("add_u32", add_u32, 3, u32_params) ||
        fakecuda_register_kernel("wait_flag", wait_flag, 1, flag_params)) {
        fprintf(stderr, "fakecuda refused to register the test kernels\n");
        abort();
    }
}

/* cond_count too, for the programs that use it: fakecuda's modules hold
 * every kernel registered, and kernels.cu's, which the conformance suites
 * load on both drivers, has only the three above (driver_library counts
 * them). */
void fakecuda_cond_kernel_register(void)
{
    static const size_t cond_params[] = {sizeof(unsigned long long), sizeof(void *), sizeof(unsigned)};
    fakecuda_kernels_register();
    if (fakecuda_register_kernel("cond_count", cond_count, 3, cond_params)) {
        fprintf(stderr, "fakecuda refused to register cond_count\n");
        abort();
    }
}
