/* The kernels of kernels.cu as C functions, for fakecuda: each runs its
 * whole grid on the stream's worker thread. */
#include <sched.h>
#include <stdint.h>

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

void fakecuda_kernels_register(void)
{
    static const size_t u32_params[] = {sizeof(void *), sizeof(unsigned), sizeof(unsigned long long)};
    static const size_t flag_params[] = {sizeof(void *)};
    ck_assert_int_eq(fakecuda_register_kernel("fill_u32", fill_u32, 3, u32_params), 0);
    ck_assert_int_eq(fakecuda_register_kernel("add_u32", add_u32, 3, u32_params), 0);
    ck_assert_int_eq(fakecuda_register_kernel("wait_flag", wait_flag, 1, flag_params), 0);
}
