/* What each live allocation should hold, as a list of extents that each
 * say how to recompute their bytes (a pattern, a memset value, or unknown),
 * instead of a byte copy: diffgen keeps several times the limit live when
 * spill is on, and the host must not need that much memory again. A copy
 * between allocations copies descriptions; the xor kernel folds a mask. */
#ifndef DIFF_SHADOW_H
#define DIFF_SHADOW_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum diff_gen { GEN_UNDEF, GEN_PAT, GEN_CONST };

/* Byte at offset x of [start, end) is gen(x - shift) ^ mask:
 * GEN_PAT: diff_pat_byte(value, x - shift);
 * GEN_CONST: byte (x - shift) % width of value (memset D8/D16/D32). */
struct diff_extent {
    uint64_t start, end;
    uint64_t value;
    uint64_t shift;
    uint64_t writer; /* the operation that wrote it (diff_op_id), for reports */
    uint8_t kind, width, mask;
};

struct diff_shadow {
    struct diff_extent *ext;
    size_t n, cap;
    uint64_t size;
};

/* First byte that differs from the shadow, for the failure report. */
struct diff_mismatch {
    uint64_t offset;
    uint8_t expected, got;
    struct diff_extent ext; /* the extent that predicted it */
};

bool diff_shadow_init(struct diff_shadow *s, uint64_t size);
void diff_shadow_free(struct diff_shadow *s);
/* [off, off + len) now holds gen (start/end/shift are set here: the
 * generator's index 0 is at off). */
bool diff_shadow_write(struct diff_shadow *s, uint64_t off, uint64_t len, struct diff_extent gen);
/* dst[doff, +len) = src[soff, +len) ^ mask; src may be dst (any overlap). */
bool diff_shadow_copy(struct diff_shadow *dst, uint64_t doff, const struct diff_shadow *src,
                      uint64_t soff, uint64_t len, uint8_t mask, uint64_t writer);
/* Compares got (the device's bytes at [off, off + len)) with the shadow;
 * unknown bytes are not compared. Returns true when they agree, else fills
 * *m with the first difference. */
bool diff_shadow_check(const struct diff_shadow *s, uint64_t off, uint64_t len, const uint8_t *got,
                       struct diff_mismatch *m);
/* Bytes of [off, off + len) the shadow knows (verification counts them). */
uint64_t diff_shadow_known(const struct diff_shadow *s, uint64_t off, uint64_t len);
#endif
