/* shim/ptrmap.c: against a plain reference under random operations
 * (growth, collisions, backward-shift deletion), and from many threads. */
#include "tests/unit/check_compat.h"
#include "shim/ptrmap.h"

#include <stdlib.h>

START_TEST(insert_find_remove)
{
    struct spw_map m;
    spw_map_init(&m);
    struct spw_map_entry e;
    ck_assert_int_eq(spw_map_insert(&m, 0, 0, 1, NULL), -1);
    ck_assert_int_eq(spw_map_insert(&m, 0x1000, 2, 64, NULL), 0);
    ck_assert_int_eq(spw_map_find(&m, 0x1000, &e), 0);
    ck_assert_int_eq(e.dev, 2);
    ck_assert_uint_eq(e.size, 64);
    ck_assert_int_eq(spw_map_insert(&m, 0x1000, 3, 128, &e), 1);
    ck_assert_uint_eq(e.size, 64); /* the stale entry */
    ck_assert_uint_eq(spw_map_count(&m), 1);
    ck_assert_int_eq(spw_map_remove(&m, 0x1000, &e), 0);
    ck_assert_int_eq(e.dev, 3);
    ck_assert_int_eq(spw_map_remove(&m, 0x1000, &e), -1);
    ck_assert_int_eq(spw_map_find(&m, 0x2000, &e), -1);
    ck_assert_uint_eq(spw_map_count(&m), 0);
    spw_map_destroy(&m);
}
END_TEST

/* Key 0 marks empty slots: no entry has it, so looking it up or removing
 * it finds nothing. (cuMemRelease(0) asks to forget handle 0: a phantom
 * entry found there was "removed", the shard's count dropped below its
 * entries, and a shard whose count no longer grew it filled up, after
 * which a probe for an absent key never ended.) */
START_TEST(key_zero_is_never_found)
{
    struct spw_map m;
    spw_map_init(&m);
    struct spw_map_entry e = {.key = 7, .size = 7, .dev = 7};
    ck_assert_int_eq(spw_map_find(&m, 0, &e), -1);
    for (uint64_t k = 1; k <= 4096; k++) /* every shard gets slots */
        ck_assert_int_eq(spw_map_insert(&m, k << 12, 0, k, NULL), 0);
    ck_assert_int_eq(spw_map_find(&m, 0, &e), -1);
    ck_assert_int_eq(spw_map_remove(&m, 0, &e), -1);
    ck_assert_uint_eq(e.size, 7); /* untouched */
    ck_assert_uint_eq(spw_map_count(&m), 4096);
    for (uint64_t k = 1; k <= 4096; k++)
        ck_assert_int_eq(spw_map_remove(&m, k << 12, NULL), 0);
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(spw_map_remove(&m, 0, NULL), -1);
    ck_assert_uint_eq(spw_map_count(&m), 0);
    spw_map_destroy(&m);
}
END_TEST

#define KEYS 20000

START_TEST(random_against_reference)
{
    struct spw_map m;
    spw_map_init(&m);
    static uint64_t size_of[KEYS]; /* 0 = absent */
    unsigned seed = 42;
    for (int op = 0; op < 200000; op++) {
        int k = rand_r(&seed) % KEYS;
        /* Aligned keys in a narrow range, like device pointers. */
        uint64_t key = 0x7f0000000000ull + (uint64_t)k * 512;
        struct spw_map_entry e;
        switch (rand_r(&seed) % 3) {
        case 0: {
            uint64_t size = (uint64_t)op + 1;
            int r = spw_map_insert(&m, key, k % 8, size, &e);
            ck_assert_int_eq(r, size_of[k] ? 1 : 0);
            if (r == 1)
                ck_assert_uint_eq(e.size, size_of[k]);
            size_of[k] = size;
            break;
        }
        case 1: {
            int r = spw_map_remove(&m, key, &e);
            ck_assert_int_eq(r, size_of[k] ? 0 : -1);
            if (r == 0)
                ck_assert_uint_eq(e.size, size_of[k]);
            size_of[k] = 0;
            break;
        }
        default: {
            int r = spw_map_find(&m, key, &e);
            ck_assert_int_eq(r, size_of[k] ? 0 : -1);
            if (r == 0) {
                ck_assert_uint_eq(e.size, size_of[k]);
                ck_assert_int_eq(e.dev, k % 8);
            }
        }
        }
    }
    size_t live = 0;
    for (int k = 0; k < KEYS; k++)
        live += size_of[k] != 0;
    ck_assert_uint_eq(spw_map_count(&m), live);
    spw_map_destroy(&m);
}
END_TEST

#define THREADS 16
#define PER_THREAD 5000
static struct spw_map shared;

static void *churn(void *arg)
{
    uint64_t base = (uint64_t)(uintptr_t)arg * PER_THREAD + 1;
    for (int round = 0; round < 3; round++) {
        for (uint64_t k = 0; k < PER_THREAD; k++)
            if (spw_map_insert(&shared, (base + k) << 8, 0, k, NULL) != 0)
                return (void *)1;
        for (uint64_t k = 0; k < PER_THREAD; k++) {
            struct spw_map_entry e;
            if (spw_map_remove(&shared, (base + k) << 8, &e) != 0 || e.size != k)
                return (void *)2;
        }
    }
    return NULL;
}

START_TEST(threads)
{
    spw_map_init(&shared);
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, churn, (void *)i), 0);
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        ck_assert_ptr_null(r);
    }
    ck_assert_uint_eq(spw_map_count(&shared), 0);
    spw_map_destroy(&shared);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("shim_ptrmap");
    TCase *tc = tcase_create("ptrmap");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, insert_find_remove);
    tcase_add_test(tc, key_zero_is_never_found);
    tcase_add_test(tc, random_against_reference);
    tcase_add_test(tc, threads);
    suite_add_tcase(s, tc);
    return s;
}
