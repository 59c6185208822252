/* The shadow: extents cover [0, size) in order, without gaps. */
#include "tests/integration/diff/shadow.h"

#include <stdlib.h>
#include <string.h>

#include "tests/integration/diff/pattern.h"

bool diff_shadow_init(struct diff_shadow *s, uint64_t size)
{
    s->cap = 8;
    s->ext = malloc(s->cap * sizeof *s->ext);
    if (!s->ext)
        return false;
    s->n = 1;
    s->size = size;
    s->ext[0] = (struct diff_extent){.start = 0, .end = size, .kind = GEN_UNDEF};
    return true;
}

void diff_shadow_free(struct diff_shadow *s)
{
    free(s->ext);
    *s = (struct diff_shadow){0};
}

/* Index of the extent containing off (off < size). */
static size_t find(const struct diff_shadow *s, uint64_t off)
{
    size_t lo = 0, hi = s->n - 1;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->ext[mid].end <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool same_bytes_rule(const struct diff_extent *a, const struct diff_extent *b)
{
    if (a->kind != b->kind)
        return false;
    if (a->kind == GEN_UNDEF)
        return true;
    return a->value == b->value && a->shift == b->shift && a->mask == b->mask &&
           a->width == b->width && a->writer == b->writer;
}

/* Merges neighbours in [from, to] that follow one rule: keeps lists short
 * when a buffer is rewritten by the same operation or stays unknown. */
static void merge_around(struct diff_shadow *s, size_t from, size_t to)
{
    if (to >= s->n)
        to = s->n - 1;
    size_t i = from;
    while (i < to && i + 1 < s->n) {
        if (same_bytes_rule(&s->ext[i], &s->ext[i + 1])) {
            s->ext[i].end = s->ext[i + 1].end;
            memmove(&s->ext[i + 1], &s->ext[i + 2], (s->n - i - 2) * sizeof *s->ext);
            s->n--;
            to--;
        } else {
            i++;
        }
    }
}

static bool reserve(struct diff_shadow *s, size_t n)
{
    if (n <= s->cap)
        return true;
    size_t cap = s->cap * 2 > n ? s->cap * 2 : n;
    struct diff_extent *e = realloc(s->ext, cap * sizeof *e);
    if (!e)
        return false;
    s->ext = e;
    s->cap = cap;
    return true;
}

/* Replaces [off, off + len) by pieces, which cover exactly that range. */
static bool splice(struct diff_shadow *s, uint64_t off, uint64_t len, const struct diff_extent *pieces,
                   size_t np)
{
    size_t i = find(s, off), j = find(s, off + len - 1);
    struct diff_extent left = s->ext[i], right = s->ext[j];
    bool has_left = left.start < off, has_right = right.end > off + len;
    size_t repl = np + has_left + has_right, old = j - i + 1;
    if (!reserve(s, s->n - old + repl))
        return false;
    memmove(&s->ext[i + repl], &s->ext[j + 1], (s->n - j - 1) * sizeof *s->ext);
    s->n = s->n - old + repl;
    size_t k = i;
    if (has_left) {
        left.end = off;
        s->ext[k++] = left;
    }
    memcpy(&s->ext[k], pieces, np * sizeof *pieces);
    k += np;
    if (has_right) {
        right.start = off + len;
        s->ext[k++] = right;
    }
    merge_around(s, i ? i - 1 : 0, k);
    return true;
}

bool diff_shadow_write(struct diff_shadow *s, uint64_t off, uint64_t len, struct diff_extent gen)
{
    if (len == 0 || off + len > s->size)
        return len == 0;
    gen.start = off;
    gen.end = off + len;
    gen.shift = off;
    return splice(s, off, len, &gen, 1);
}

bool diff_shadow_copy(struct diff_shadow *dst, uint64_t doff, const struct diff_shadow *src,
                      uint64_t soff, uint64_t len, uint8_t mask, uint64_t writer)
{
    if (len == 0)
        return true;
    size_t i = find(src, soff), j = find(src, soff + len - 1), np = j - i + 1;
    struct diff_extent *pieces = malloc(np * sizeof *pieces);
    if (!pieces)
        return false;
    for (size_t k = 0; k < np; k++) {
        struct diff_extent e = src->ext[i + k];
        e.start = (e.start < soff ? soff : e.start) - soff + doff;
        e.end = (e.end > soff + len ? soff + len : e.end) - soff + doff;
        /* unsigned wrap is fine: only x - shift is ever used */
        e.shift = e.shift - soff + doff;
        e.mask ^= mask;
        e.writer = writer;
        pieces[k] = e;
    }
    bool ok = splice(dst, doff, len, pieces, np);
    free(pieces);
    return ok;
}

/* The bytes e predicts at [x, x + n) (x inside e). */
static void gen_bytes(const struct diff_extent *e, uint64_t x, uint64_t n, uint8_t *out)
{
    uint64_t j = x - e->shift;
    if (e->kind == GEN_CONST) {
        for (uint64_t k = 0; k < n; k++)
            out[k] = (uint8_t)(e->value >> (8 * ((j + k) % e->width))) ^ e->mask;
        return;
    }
    uint64_t k = 0;
    uint64_t mask8 = 0x0101010101010101ULL * e->mask;
    for (; k < n && ((j + k) & 7); k++)
        out[k] = diff_pat_byte(e->value, j + k) ^ e->mask;
    for (; k + 8 <= n; k += 8) {
        uint64_t w = diff_pat_word(e->value, (j + k) >> 3) ^ mask8;
        memcpy(out + k, &w, 8); /* little-endian, as the kernel stores it */
    }
    for (; k < n; k++)
        out[k] = diff_pat_byte(e->value, j + k) ^ e->mask;
}

static bool check_piece(const struct diff_extent *e, uint64_t x, uint64_t n, const uint8_t *got,
                        struct diff_mismatch *m)
{
    uint8_t want[4096];
    for (uint64_t done = 0; done < n;) {
        uint64_t c = n - done < sizeof want ? n - done : sizeof want;
        gen_bytes(e, x + done, c, want);
        if (memcmp(want, got + done, c) != 0) {
            uint64_t k = 0;
            while (want[k] == got[done + k])
                k++;
            *m = (struct diff_mismatch){x + done + k, want[k], got[done + k], *e};
            return false;
        }
        done += c;
    }
    return true;
}

bool diff_shadow_check(const struct diff_shadow *s, uint64_t off, uint64_t len, const uint8_t *got,
                       struct diff_mismatch *m)
{
    if (len == 0)
        return true;
    for (size_t i = find(s, off); i < s->n && s->ext[i].start < off + len; i++) {
        const struct diff_extent *e = &s->ext[i];
        uint64_t a = e->start > off ? e->start : off;
        uint64_t b = e->end < off + len ? e->end : off + len;
        if (e->kind != GEN_UNDEF && !check_piece(e, a, b - a, got + (a - off), m))
            return false;
    }
    return true;
}

uint64_t diff_shadow_known(const struct diff_shadow *s, uint64_t off, uint64_t len)
{
    uint64_t known = 0;
    if (len == 0)
        return 0;
    for (size_t i = find(s, off); i < s->n && s->ext[i].start < off + len; i++) {
        const struct diff_extent *e = &s->ext[i];
        uint64_t a = e->start > off ? e->start : off;
        uint64_t b = e->end < off + len ? e->end : off + len;
        if (e->kind != GEN_UNDEF)
            known += b - a;
    }
    return known;
}
