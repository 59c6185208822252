/* What fakecuda's copy files share, private to them: copy2d.c (2D, 3D
 * and peer copies), memset2d.c (2D sets) and copy_batch.c (batches). The
 * rest of fakecuda reaches them through internal.h. */
#ifndef FAKECUDA_COPY2D_H
#define FAKECUDA_COPY2D_H
#include "tests/fakecuda/graph.h"
#include "tests/fakecuda/internal.h"

/* One side of a copy: its first byte and the bytes it spans. */
struct side {
    uintptr_t start;
    size_t span;
};

/* The two sides of p; *ok false when one cannot be told (an array, or no
 * memory type). */
void fc_copy3d_sides(const CUDA_MEMCPY3D *p, struct side *src, struct side *dst, bool *ok);
/* Whether [p, p + n) is device memory fakecuda knows (takes fc_lock). */
bool fc_device_ok(uintptr_t p, size_t n);

/* A copy queued on a stream, with its staged source (freed with it). */
struct copy_op {
    CUDA_MEMCPY3D p;
    void *staging;
};

/* Rewrites c's source to a packed copy of it, taken now. */
bool fc_copy3d_stage(struct copy_op *c);
/* Each array side of p made the device memory that stores it. */
CUresult fc_copy3d_resolve_arrays(CUDA_MEMCPY3D *p);
#endif
