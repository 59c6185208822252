/* The capture suite's shared helpers (capture_rig.h). */
#include "tests/integration/shim/capture_rig.h"

#include <stdlib.h>

CUcontext ctx;

void bufs_make(struct bufs *b, int n, unsigned seed)
{
    b->n = n;
    for (int i = 0; i < n; i++) {
        b->d[i] = rig_filled(BUF, seed + (unsigned)i);
        b->want[i] = rig_expected(BUF, seed + (unsigned)i);
    }
}

void bufs_step(struct bufs *b, int i, unsigned k)
{
    for (size_t j = 0; j < BUF / 4; j++)
        b->want[i][j] = rig_step(b->want[i][j], k);
}

void bufs_check(struct bufs *b, const char *what)
{
    for (int i = 0; i < b->n; i++)
        rig_expect_words(b->d[i], b->want[i], BUF, what);
}

void bufs_free(struct bufs *b)
{
    for (int i = 0; i < b->n; i++) {
        CU_OK(cuMemFree(b->d[i]));
        free(b->want[i]);
    }
}

void launch_step(CUfunction f, CUstream s, CUdeviceptr p, unsigned k)
{
    size_t n = BUF / 4;
    void *args[] = {&p, &n, &k};
    CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
}
