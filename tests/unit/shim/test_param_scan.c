/* shim/param_scan.c's cache of kernel parameter layouts, against a driver
 * stand-in that counts what it is asked: a program that launches many
 * distinct functions (Triton, XLA and torch.compile JIT thousands) asks the
 * driver each function's layout once, not at every launch once the cache
 * has seen some thousands. */
#include "tests/unit/check_compat.h"
#include "shim/driver.h"
#include "shim/param_scan.h"

#include <stdint.h>

struct spw_drv spw_drv; /* the library's is in driver.c: only this entry is used */

static long asked;

/* Every function takes two 8-byte parameters. */
static CUresult CUDAAPI param_info(CUfunction f, size_t i, size_t *off, size_t *size)
{
    (void)f;
    asked++;
    if (i >= 2)
        return CUDA_ERROR_INVALID_VALUE;
    *off = 8 * i;
    *size = 8;
    return CUDA_SUCCESS;
}

static void count_word(void *ctx, CUdeviceptr w)
{
    (void)w;
    ++*(unsigned *)ctx;
}

static CUfunction fn(long i)
{
    return (CUfunction)(uintptr_t)(0x7f0000000000ull + 0x40ull * (uint64_t)i);
}

START_TEST(many_functions_are_each_asked_once)
{
    spw_drv.cuFuncGetParamInfo = param_info;
    enum { N = 20000 };
    uint64_t a = 0x7e0000000000ull, b = 0x7e0000100000ull;
    void *params[] = {&a, &b};
    for (int round = 0; round < 3; round++) {
        long before = asked;
        for (long i = 0; i < N; i++) {
            unsigned words = 0;
            ck_assert_uint_eq(spw_param_scan(fn(i), params, NULL, count_word, &words), 2);
            ck_assert_uint_eq(words, 2);
        }
        /* The first round asks each function's two parameters and the end. */
        ck_assert_msg(asked - before == (round ? 0 : 3L * N), "round %d asked the driver %ld times", round,
                      asked - before);
    }
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("shim_param_scan");
    TCase *tc = tcase_create("cache");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, many_functions_are_each_asked_once);
    suite_add_tcase(s, tc);
    return s;
}
