/* Randomised corruption of a valid segment: at least 100,000 mutated images
 * through the decoder in memory, and a few thousand through files (the
 * whole reader path, including truncation), none of which may crash it;
 * whatever it accepts must satisfy the invariants the tools rely on. The
 * seed is printed so that a failure can be replayed (SPW_FUZZ_SEED). */
#include "tests/unit/check_compat.h"
#include "tests/unit/stats/image.h"
#include "stats/reader.h"

#include <locale.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <wchar.h>
#include <time.h>

#define MEMORY_ROUNDS 120000
#define FILE_ROUNDS 3000
#define TEXT_ROUNDS 1000

static uint64_t rng_state;
static uint64_t rnd(void)
{
    /* xorshift64*: deterministic from the seed, independent of libc. */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}

static uint64_t seed_from_env(void)
{
    const char *s = getenv("SPW_FUZZ_SEED");
    uint64_t seed = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    printf("fuzz seed: 0x%llx (set SPW_FUZZ_SEED to replay)\n", (unsigned long long)seed);
    return seed ? seed : 1;
}

static const uint64_t interesting[] = {0, 1, 2, 3, 63, 64, 65, 0x7f, 0x80, 0xff, 0x7fffffff, 0x80000000,
                                       0xffffffff, 0x100000000ull, UINT64_MAX, UINT64_MAX - 1,
                                       SPW_STATS_MAX_DEVICES, SPW_STATS_MAX_DEVICES + 1,
                                       sizeof(struct spw_stats_header), sizeof(struct spw_stats_device)};

/* Applies 1-4 random mutations: byte flips anywhere, interesting values on
 * header fields, text fields without their NUL, or a new length. */
static size_t mutate(unsigned char *buf, size_t len, size_t cap)
{
    int n = 1 + (int)(rnd() % 4);
    for (int i = 0; i < n; i++) {
        switch (rnd() % 6) {
        case 0: /* random bytes anywhere */
            if (len)
                buf[rnd() % len] = (unsigned char)rnd();
            break;
        case 1: { /* an interesting value on an aligned header field */
            size_t off = (rnd() % (offsetof(struct spw_stats_header, cmdline) / 4)) * 4;
            uint64_t v = interesting[rnd() % (sizeof interesting / sizeof interesting[0])];
            size_t w = rnd() % 2 ? 8 : 4;
            if (off + w <= len)
                memcpy(buf + off, &v, w);
            break;
        }
        case 2: { /* fill a stretch of text without a terminator */
            size_t off = offsetof(struct spw_stats_header, cmdline) + rnd() % (SPW_STATS_CMDLINE_LEN + SPW_STATS_CONFIG_LEN);
            size_t span = 1 + rnd() % 3000;
            if (off < len)
                memset(buf + off, (int)(rnd() % 256) | 1, off + span <= len ? span : len - off);
            break;
        }
        case 3: /* truncate */
            len = len ? rnd() % len : 0;
            break;
        case 4: /* grow with garbage */
            while (len < cap && rnd() % 8)
                buf[len++] = (unsigned char)rnd();
            break;
        default: /* a counter to an extreme */
            if (len >= sizeof(struct spw_stats_header) + 8) {
                size_t off = sizeof(struct spw_stats_header) +
                             ((rnd() % (len - sizeof(struct spw_stats_header))) & ~(size_t)7);
                uint64_t v = rnd() % 2 ? UINT64_MAX : 0;
                if (off + 8 <= len)
                    memcpy(buf + off, &v, 8);
            }
        }
    }
    return len;
}

/* What the tools rely on in an accepted snapshot. Plain checks, not
 * ck_assert: Check logs every passed assertion, too slow per mutation. */
/* Text a terminal shows as it is: printable ASCII, and UTF-8 that libc's
 * own decoder (C.UTF-8) takes, no C1 control among it. Independent of the
 * reader's validator, which the reader's tests check case by case (and
 * which stands in where libc lacks C.UTF-8). */
static bool shown_as_is(const char *text, bool newlines)
{
    static locale_t utf8;
    if (!utf8)
        utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    if (utf8 == (locale_t)0) {
        for (const char *p = text; *p; p++) {
            size_t n = spw_stats_utf8_char(p, strlen(p));
            if (!n && !(newlines && *p == '\n'))
                return false;
            p += n ? n - 1 : 0;
        }
        return true;
    }
    locale_t old = uselocale(utf8);
    bool ok = true;
    mbstate_t st;
    memset(&st, 0, sizeof st);
    for (const char *p = text; *p && ok;) {
        unsigned char c = (unsigned char)*p;
        if (c < 0x80) {
            ok = (c >= 0x20 && c < 0x7f) || (newlines && c == '\n');
            p++;
            continue;
        }
        wchar_t wc;
        size_t n = mbrtowc(&wc, p, strlen(p), &st);
        ok = n != (size_t)-1 && n != (size_t)-2 && n > 1 && !(wc >= 0x80 && wc <= 0x9f);
        p += ok ? n : 1;
    }
    uselocale(old);
    return ok;
}

static const char *broken_invariant(const struct spw_stats_snapshot *s, size_t len)
{
    if (s->device_count < 1 || s->device_count > SPW_STATS_MAX_DEVICES)
        return "device count out of range";
    if (len != spw_stats_total_size(s->device_count))
        return "length does not match device count";
    if (s->uid != geteuid())
        return "uid differs from the file owner";
    if (s->pid <= 0 || s->host_pid <= 0)
        return "non-positive pid";
    if (!memchr(s->cmdline, '\0', sizeof s->cmdline) || !memchr(s->config, '\0', sizeof s->config))
        return "unterminated text";
    if (!shown_as_is(s->cmdline, false))
        return "unprintable byte in cmdline";
    if (!shown_as_is(s->config, true))
        return "unprintable byte in config";
    return NULL;
}

static void check_invariants(const struct spw_stats_snapshot *s, size_t len, int round)
{
    const char *broken = broken_invariant(s, len);
    if (broken)
        ck_abort_msg("round %d: accepted a snapshot with %s", round, broken);
}

START_TEST(decoder_survives_mutations_in_memory)
{
    size_t len;
    unsigned char *img = valid_image(&len);
    size_t cap = len + 4096;
    unsigned char *buf = malloc(cap);
    struct spw_stats_snapshot *s = malloc(sizeof *s);
    rng_state = seed_from_env();
    long accepted = 0, rejected = 0;
    for (int i = 0; i < MEMORY_ROUNDS; i++) {
        memcpy(buf, img, len);
        size_t n = mutate(buf, len, cap);
        /* The decoder must stay inside the n bytes it is given: hand it an
         * exact-size heap copy so that ASan/valgrind runs catch overreads. */
        unsigned char *exact = malloc(n ? n : 1);
        memcpy(exact, buf, n);
        char why[256];
        if (spw_stats_decode(exact, n, (uint32_t)geteuid(), s, why, sizeof why) == 0) {
            check_invariants(s, n, i);
            accepted++;
        } else {
            if (why[0] == '\0')
                ck_abort_msg("round %d: rejected without a reason", i);
            rejected++;
        }
        free(exact);
    }
    printf("in memory: %d mutations, %ld accepted (counter/text damage), %ld rejected\n",
           MEMORY_ROUNDS, accepted, rejected);
    ck_assert_int_gt(accepted, 0);
    ck_assert_int_gt(rejected, MEMORY_ROUNDS / 2);
    free(s);
    free(buf);
    free(img);
}
END_TEST

START_TEST(reader_survives_mutated_files)
{
    size_t len;
    unsigned char *img = valid_image(&len);
    size_t cap = len + 4096;
    unsigned char *buf = malloc(cap);
    struct spw_stats_snapshot *s = malloc(sizeof *s);
    rng_state = seed_from_env();
    int dfd = open(segdir, O_RDONLY | O_DIRECTORY);
    long ok = 0, skipped = 0;
    for (int i = 0; i < FILE_ROUNDS; i++) {
        memcpy(buf, img, len);
        size_t n = mutate(buf, len, cap);
        plant_file(own_name(), buf, n, 0600);
        char why[256];
        int removed = 0;
        enum spw_read_result r = spw_stats_read_at(dfd, own_name(), SPW_SCAN_REMOVE_DEAD, s, &removed, why, sizeof why);
        if (r == SPW_READ_OK) {
            check_invariants(s, n, i);
            ok++;
        } else {
            skipped++;
        }
    }
    printf("through files: %d mutations, %ld read, %ld skipped or removed\n", FILE_ROUNDS, ok, skipped);
    ck_assert_int_gt(skipped, 0);
    close(dfd);
    free(s);
    free(buf);
    free(img);
}
END_TEST

/* A writer may die anywhere inside a text rewrite, leaving any bytes in the
 * text fields and the seqlock odd. Whatever it left, a dead owner's segment
 * must be removed, never skipped forever. */
START_TEST(dead_writer_mid_rewrite_is_always_removed)
{
    size_t len;
    unsigned char *img = valid_image(&len);
    uint64_t dead_start = 1, gen;
    memcpy(img + offsetof(struct spw_stats_header, start_time), &dead_start, 8);
    struct spw_stats_snapshot *s = malloc(sizeof *s);
    rng_state = seed_from_env();
    int dfd = open(segdir, O_RDONLY | O_DIRECTORY);
    size_t text = offsetof(struct spw_stats_header, cmdline);
    size_t text_len = SPW_STATS_CMDLINE_LEN + SPW_STATS_CONFIG_LEN;
    for (int i = 0; i < TEXT_ROUNDS; i++) {
        gen = rnd() | 1;
        memcpy(img + offsetof(struct spw_stats_header, text_generation), &gen, 8);
        for (int n = 1 + (int)(rnd() % 64); n > 0; n--)
            img[text + rnd() % text_len] = (unsigned char)rnd();
        plant_file(own_name(), img, len, 0600);
        char why[256] = "";
        int removed = 0;
        enum spw_read_result r = spw_stats_read_at(dfd, own_name(), SPW_SCAN_REMOVE_DEAD, s, &removed, why, sizeof why);
        if (r != SPW_READ_DEAD || !removed)
            ck_abort_msg("round %d: result %d, removed %d: %s", i, r, removed, why);
    }
    close(dfd);
    free(s);
    free(img);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("stats_fuzz");
    TCase *tc = tcase_create("mutations");
    tcase_add_checked_fixture(tc, segdir_setup, segdir_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, decoder_survives_mutations_in_memory);
    tcase_add_test(tc, reader_survives_mutated_files);
    tcase_add_test(tc, dead_writer_mid_rewrite_is_always_removed);
    suite_add_tcase(s, tc);
    return s;
}
