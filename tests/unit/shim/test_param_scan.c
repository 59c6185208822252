/* shim/param_scan.c's cache of kernel parameter layouts, against a driver
 * stand-in that counts what it is asked: a program that launches many
 * distinct functions (Triton, XLA and torch.compile JIT thousands) asks the
 * driver each function's layout once, not at every launch once the cache
 * has seen some thousands. And the TMA descriptors it finds (with
 * shim/tensor_maps.c): at 64-byte-aligned offsets of the layout, in a
 * parameter of their own, in a struct, in the extra buffer; never before
 * one is recorded; and the table read while encodes write it. */
#include "tests/unit/check_compat.h"
#include "shim/driver.h"
#include "shim/param_scan.h"
#include "shim/tensor_maps.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

struct spw_drv spw_drv; /* the library's is in driver.c: only this entry is used */

static long asked;

/* A layout the stand-in answers for every function; none: two 8-byte
 * parameters. */
static const size_t (*layout)[2];
static size_t nlayout;

static CUresult CUDAAPI param_info(CUfunction f, size_t i, size_t *off, size_t *size)
{
    (void)f;
    asked++;
    if (i >= (layout ? nlayout : 2))
        return CUDA_ERROR_INVALID_VALUE;
    *off = layout ? layout[i][0] : 8 * i;
    *size = layout ? layout[i][1] : 8;
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

/* ---- TMA descriptors ------------------------------------------------------ */

/* What the scan passed: up to 256 values. */
struct seen {
    unsigned n;
    CUdeviceptr v[256];
};

static void keep(void *ctx, CUdeviceptr w)
{
    struct seen *s = ctx;
    if (s->n < 256)
        s->v[s->n] = w;
    s->n++;
}

static unsigned times(const struct seen *s, CUdeviceptr w)
{
    unsigned n = 0;
    for (unsigned i = 0; i < s->n && i < 256; i++)
        n += s->v[i] == w;
    return n;
}

/* 128 opaque bytes as a driver's descriptor: small words (never a pointer
 * to the word scan), none of them the address, distinct per seed. */
static void descriptor(unsigned char m[128], unsigned seed)
{
    for (unsigned i = 0; i < 128; i++)
        m[i] = (unsigned char)(i * 7 + seed * 13 + 1);
    for (unsigned i = 0; i < 16; i++)
        m[8 * i + 6] = m[8 * i + 7] = 0; /* words below 2^48 */
}

#define ADDR_A 0x7f1200000000ull
#define ADDR_B 0x7f3400000000ull

/* A kernel of CUTLASS's shape: a pointer, a CUtensorMap of its own (offset
 * 64), a Params struct holding one at struct offset 64 (alignas(64), CUDA
 * 12's headers) and one holding one at 128 (alignas(128), CUDA 13's), and
 * a 256-byte struct whose copy of a descriptor sits 8 bytes off the
 * 64-byte grid, where no CUtensorMap can be. */
static const size_t cutlass_layout[][2] = {{0, 8}, {64, 128}, {192, 256}, {512, 384}, {896, 256}};

START_TEST(descriptors_are_found_at_64_byte_aligned_windows)
{
    spw_drv.cuFuncGetParamInfo = param_info;
    layout = cutlass_layout;
    nlayout = 5;
    _Alignas(64) unsigned char own[128], p64[256], p128[384], off_grid[256];
    unsigned char a[128], b[128];
    descriptor(a, 1);
    descriptor(b, 2);
    uint64_t ptr = 0x7e0000000000ull;
    memcpy(own, a, 128);
    memset(p64, 0, sizeof p64);
    memcpy(p64 + 64, b, 128);
    memset(p128, 0, sizeof p128);
    memcpy(p128 + 128, a, 128);
    memset(off_grid, 0, sizeof off_grid);
    memcpy(off_grid + 72, b, 128);
    void *params[] = {&ptr, own, p64, p128, off_grid};
    CUfunction f = fn(1000000);

    struct seen before = {0};
    spw_param_scan(f, params, NULL, keep, &before);
    ck_assert(!spw_tensor_maps_any());
    ck_assert_uint_eq(times(&before, ptr), 1);
    ck_assert_uint_eq(times(&before, ADDR_A) + times(&before, ADDR_B), 0);

    spw_tensor_map_record(a, ADDR_A);
    spw_tensor_map_record(b, ADDR_B);
    ck_assert(spw_tensor_maps_any());
    ck_assert_uint_eq(spw_tensor_maps_recorded(), 2);
    struct seen after = {0};
    unsigned n = spw_param_scan(f, params, NULL, keep, &after);
    ck_assert_uint_eq(n, after.n);
    ck_assert_uint_eq(times(&after, ptr), 1);
    ck_assert_uint_eq(times(&after, ADDR_A), 2); /* own, p128 */
    ck_assert_uint_eq(times(&after, ADDR_B), 1); /* p64; not off_grid's */
    ck_assert_uint_eq(after.n, before.n + 3);

    /* The same arguments packed in one buffer (CU_LAUNCH_PARAM_BUFFER_*). */
    static _Alignas(128) unsigned char buf[1152];
    memset(buf, 0, sizeof buf);
    memcpy(buf, &ptr, 8);
    memcpy(buf + 64, own, 128);
    memcpy(buf + 192, p64, 256);
    memcpy(buf + 512, p128, 384);
    memcpy(buf + 896, off_grid, 256);
    size_t size = sizeof buf;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
    struct seen packed = {0};
    spw_param_scan(f, NULL, extra, keep, &packed);
    ck_assert_uint_eq(times(&packed, ADDR_A), 2);
    ck_assert_uint_eq(times(&packed, ADDR_B), 1);

    /* cuTensorMapReplaceAddress: new bytes, new address; a copy made
     * before still names the old one. */
    unsigned char moved[128];
    descriptor(moved, 3);
    spw_tensor_map_record(moved, ADDR_B + 0x1000);
    memcpy(own, moved, 128);
    struct seen replaced = {0};
    spw_param_scan(f, params, NULL, keep, &replaced);
    ck_assert_uint_eq(times(&replaced, ADDR_B + 0x1000), 1);
    ck_assert_uint_eq(times(&replaced, ADDR_A), 1); /* p128's copy */
    layout = NULL;
}
END_TEST

START_TEST(a_window_that_differs_in_any_byte_is_no_descriptor)
{
    unsigned char a[128], w[128];
    descriptor(a, 4);
    spw_tensor_map_record(a, ADDR_A);
    CUdeviceptr got = 0;
    ck_assert(spw_tensor_map_find(a, &got));
    ck_assert_uint_eq(got, ADDR_A);
    for (unsigned i = 0; i < 128; i++) {
        memcpy(w, a, 128);
        w[i] ^= 0x40;
        ck_assert_msg(!spw_tensor_map_find(w, &got), "byte %u changed, still found", i);
    }
    /* Unaligned in memory: found all the same. */
    unsigned char odd[129];
    memcpy(odd + 1, a, 128);
    ck_assert(spw_tensor_map_find(odd + 1, &got));
}
END_TEST

/* Encodes on some threads while launches scan on others (run under
 * ThreadSanitizer by make tsan). Every writer rewrites the one slot the
 * readers look up: the descriptor the readers hold (address A), and
 * others that hash to its slot but differ in their bytes (address B), so
 * that a torn read would pair A's bytes with B's address. A reader may
 * miss; it must never see B. */
enum { WRITERS = 3, READERS = 3, ROUNDS = 20000, OTHERS = 16 };
static unsigned char shared_map[128];
static unsigned char others[OTHERS][128];
static _Atomic int stop;
static _Atomic unsigned long hits;

/* Descriptors that differ from shared_map and go to its slot. */
static void make_others(void)
{
    unsigned want = spw_tensor_map_slot(shared_map);
    uint64_t n = 0;
    for (unsigned k = 0; k < OTHERS; k++) {
        do {
            memcpy(others[k], shared_map, 128);
            n++;
            memcpy(others[k] + 16, &n, sizeof n);
        } while (spw_tensor_map_slot(others[k]) != want || memcmp(others[k], shared_map, 128) == 0);
    }
}

static void *encoder(void *arg)
{
    for (unsigned i = 0; i < ROUNDS; i++) {
        spw_tensor_map_record(others[(i + (uintptr_t)arg) % OTHERS], ADDR_B);
        spw_tensor_map_record(shared_map, ADDR_A);
    }
    return NULL;
}

static void *launcher(void *arg)
{
    (void)arg;
    _Alignas(64) unsigned char params[256];
    memset(params, 0, sizeof params);
    memcpy(params + 64, shared_map, 128);
    unsigned long mine = 0;
    while (!atomic_load(&stop)) {
        CUdeviceptr got = 0;
        if (spw_tensor_map_find(params + 64, &got)) {
            ck_assert_uint_eq(got, ADDR_A);
            mine++;
        }
    }
    atomic_fetch_add(&hits, mine);
    return NULL;
}

START_TEST(encodes_race_launches)
{
    descriptor(shared_map, 5);
    make_others();
    pthread_t w[WRITERS], r[READERS];
    for (uintptr_t i = 0; i < READERS; i++)
        ck_assert_int_eq(pthread_create(&r[i], NULL, launcher, NULL), 0);
    for (uintptr_t i = 0; i < WRITERS; i++)
        ck_assert_int_eq(pthread_create(&w[i], NULL, encoder, (void *)i), 0);
    for (unsigned i = 0; i < WRITERS; i++)
        ck_assert_int_eq(pthread_join(w[i], NULL), 0);
    atomic_store(&stop, 1);
    for (unsigned i = 0; i < READERS; i++)
        ck_assert_int_eq(pthread_join(r[i], NULL), 0);
    ck_assert_uint_eq(spw_tensor_maps_recorded(), 2ul * WRITERS * ROUNDS);
    ck_assert_uint_gt(atomic_load(&hits), 0); /* the readers did find A meanwhile */
    /* The last record of every writer was A's. */
    CUdeviceptr got = 0;
    ck_assert(spw_tensor_map_find(shared_map, &got));
    ck_assert_uint_eq(got, ADDR_A);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("shim_param_scan");
    TCase *tc = tcase_create("cache");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, many_functions_are_each_asked_once);
    suite_add_tcase(s, tc);
    TCase *maps = tcase_create("tensor_maps");
    tcase_set_timeout(maps, 60);
    tcase_add_test(maps, descriptors_are_found_at_64_byte_aligned_windows);
    tcase_add_test(maps, a_window_that_differs_in_any_byte_is_no_descriptor);
    tcase_add_test(maps, encodes_race_launches);
    suite_add_tcase(s, maps);
    return s;
}
