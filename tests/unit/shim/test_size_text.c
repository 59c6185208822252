/* shim/size_text.c: sizes as the log shows them (size_text.h's rule):
 * exact figures alone, rounded ones with the exact count after them. */
#include "tests/unit/check_compat.h"
#include "shim/size_text.h"

#include <string.h>

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define TiB (1ull << 40)
#define EiB (1ull << 60)

/* A macro, so that a failure names the line of the case. */
#define expect(bytes, want)                                                                  \
    do {                                                                                     \
        char b_[SPW_SIZE_TEXT_MAX];                                                          \
        ck_assert_str_eq(spw_size_text(b_, sizeof b_, (bytes)), (want));                     \
    } while (0)

START_TEST(exact_sizes_in_their_largest_unit)
{
    expect(16 * GiB, "16 GiB");
    expect(256 * MiB, "256 MiB");
    expect(2 * MiB, "2 MiB");
    expect(KiB, "1 KiB");
    expect(TiB, "1 TiB");
    expect(EiB, "1 EiB");
    expect(15 * EiB, "15 EiB");
    /* One decimal is exact too: no count after it. */
    expect(3 * GiB / 2, "1.5 GiB");
    expect(1536 * MiB, "1.5 GiB");
    expect(9 * MiB / 4, "2.3 MiB (2359296 bytes)"); /* 2.25: two decimals are rounded */
    expect(5 * KiB / 2, "2.5 KiB");
}
END_TEST

START_TEST(rounded_sizes_carry_the_count)
{
    expect(17071734784ull, "15.9 GiB (17071734784 bytes)");
    expect(12638251008ull, "11.8 GiB (12638251008 bytes)"); /* an automatic host limit */
    expect(81559 * MiB, "79.6 GiB (85520809984 bytes)");    /* an H100's total */
    expect(256 * MiB + 1, "256.0 MiB (268435457 bytes)");
    expect(4 * KiB + 1, "4.0 KiB (4097 bytes)");
    /* Rounded to the nearest tenth: 1.25 up, 1.24 down. */
    expect(5 * GiB / 4, "1.3 GiB (1342177280 bytes)");
    expect(GiB + 24 * GiB / 100, "1.2 GiB (1331439861 bytes)");
    /* Rounded up into the next unit: the unit it nearly reaches. */
    expect(GiB - 1, "1.0 GiB (1073741823 bytes)");
    expect(TiB - 1, "1.0 TiB (1099511627775 bytes)");
    expect(1023 * GiB + 99 * GiB / 100, "1.0 TiB (1099500890357 bytes)");
}
END_TEST

START_TEST(small_and_huge)
{
    expect(0, "0 bytes");
    expect(1, "1 byte");
    expect(268, "268 bytes");
    expect(1023, "1023 bytes");
    expect(UINT64_MAX, "16.0 EiB (18446744073709551615 bytes)");
    expect(UINT64_MAX - 1, "16.0 EiB (18446744073709551614 bytes)");
    expect(16 * EiB - EiB / 2, "15.5 EiB");
    char b[SPW_SIZE_TEXT_MAX];
    ck_assert_uint_lt(strlen(spw_size_text(b, sizeof b, UINT64_MAX)), SPW_SIZE_TEXT_MAX);
}
END_TEST

/* A short buffer is cut as snprintf cuts: terminated, never overrun. */
START_TEST(short_buffer)
{
    char b[8];
    memset(b, 'x', sizeof b);
    ck_assert_str_eq(spw_size_text(b, 6, 17071734784ull), "15.9 ");
    ck_assert_int_eq(b[6], 'x');
    ck_assert_ptr_null(spw_size_text(NULL, 0, 1));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("shim_size_text");
    TCase *tc = tcase_create("size_text");
    tcase_add_test(tc, exact_sizes_in_their_largest_unit);
    tcase_add_test(tc, rounded_sizes_carry_the_count);
    tcase_add_test(tc, small_and_huge);
    tcase_add_test(tc, short_buffer);
    suite_add_tcase(s, tc);
    return s;
}
