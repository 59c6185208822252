/* What the copy suite (test_copies.c and copies_*.c) shares: the
 * per-thread variants, the driver's functions, the bytes this process
 * copied and their check against its stats segment, and COPY, which makes
 * a copy and checks its count. Run by copies.sh. */
#ifndef SPILLWAY_TESTS_COPIES_RIG_H
#define SPILLWAY_TESTS_COPIES_RIG_H
#include "tests/unit/check_compat.h"

#include "tests/integration/shim/driver_api.h"

#include <stdint.h>

/* The per-thread variants, which cuda.h declares only when it is told to
 * use them for every call. */
__typeof__(cuMemcpy) cuMemcpy_ptds;
__typeof__(cuMemcpyAsync) cuMemcpyAsync_ptsz;
__typeof__(cuMemcpyHtoD_v2) cuMemcpyHtoD_v2_ptds;
__typeof__(cuMemcpyDtoH_v2) cuMemcpyDtoH_v2_ptds;
__typeof__(cuMemcpyDtoD_v2) cuMemcpyDtoD_v2_ptds;
__typeof__(cuMemcpyHtoDAsync_v2) cuMemcpyHtoDAsync_v2_ptsz;
__typeof__(cuMemcpyDtoHAsync_v2) cuMemcpyDtoHAsync_v2_ptsz;
__typeof__(cuMemcpyDtoDAsync_v2) cuMemcpyDtoDAsync_v2_ptsz;

#define KiB 1024u
#define MiB (1024u * 1024u)

extern struct spw_driver_api drv; /* setup's, by the linked path */

/* What this process copied, by direction, on each of two devices. */
struct bytes {
    uint64_t htod, dtoh, dtod;
};
extern struct bytes expected[2];

/* The segment equals what this process copied, on every device. */
void check_counts(const char *what);
/* Each test runs in its own process (fork): its own segment. */
void setup(void);
/* A pool allocation of n bytes on the current device. */
CUdeviceptr dalloc(size_t n);
/* n bytes of a pattern made from seed. */
void fill(unsigned char *p, size_t n, unsigned seed);
/* cuCtxSynchronize, asserted. */
void synchronize(void);
/* Device dev's primary context made current. */
void use(int dev);

#define H(p) ((CUdeviceptr)(uintptr_t)(p))

/* One copy by fn(args), expected to count n bytes in direction dir of
 * device dev (dir: 0 htod, 1 dtoh, 2 dtod, -1 nothing). */
#define COPY(dev, dir, n, call)                                                      \
    do {                                                                             \
        ck_assert_msg((int)(call) == 0, "%s", #call); /* CUDA_SUCCESS, cudaSuccess */ \
        uint64_t *e_ = (dir) == 0 ? &expected[dev].htod                              \
                       : (dir) == 1 ? &expected[dev].dtoh                            \
                       : (dir) == 2 ? &expected[dev].dtod : NULL;                    \
        if (e_)                                                                      \
            *e_ += (n);                                                              \
        check_counts(#call);                                                         \
    } while (0)

/* The suite's tests beyond test_copies.c's, each file's added to the
 * tcase it is given in its order. */
void copies_path_tests(TCase *tc);    /* copies_paths.c */
void copies_side_tests(TCase *tc);    /* copies_sides.c */
void copies_strided_tests(TCase *tc); /* copies_strided.c */
#endif
