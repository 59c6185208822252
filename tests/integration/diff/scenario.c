/* The fixed scenarios of issue 11, run by thread 0 before (big) or instead
 * of (scatter) the random sequence. */
#include "tests/integration/diff/diffgen.h"

/* Allocates one block and keeps it (written whole with a memset, so that
 * spill moves data the end of the run checks). False: stop the scenario. */
static bool take(struct diff_thread *t, int api, uint64_t size)
{
    struct diff_slot s;
    bool ok = diff_exec_alloc(t, api, size, 1, 0, &s);
    t->op++;
    if (!ok)
        return false;
    if (s.ptr && !diff_memset(t, &s, 0, s.size, 4, (uint32_t)diff_next(&t->rng), false, 0)) {
        diff_shadow_free(&s.sh);
        return false;
    }
    if (!diff_add_slot(t, &s))
        return false;
    return s.ptr || !t->run->o->stop_at_refusal;
}

/* One request of --big bytes by every enabled allocation API (issue 11
 * (4): a 1 TiB request must be refused as larger than the limit). */
void diff_run_big(struct diff_thread *t)
{
    for (int api = 0; api < API_COUNT; api++) {
        if (!(t->run->o->alloc_apis >> api & 1))
            continue;
        struct diff_slot s;
        bool ok = diff_exec_alloc(t, api, t->run->o->big, 1, 0, &s);
        t->op++;
        if (!ok || (s.ptr && (!diff_add_slot(t, &s) || !diff_exec_free(t, t->nslots - 1, false, 0, 0))))
            return;
    }
}

/* Issue 11 (3): 2 MiB blocks up to 3x the limit, every other one freed
 * (2 MiB holes all over the address space), then 4 MiB blocks up to --live
 * x the limit. Measured on 04f325f: the 4 MiB requests fail at 160 MiB. */
void diff_run_scatter(struct diff_thread *t)
{
    const uint64_t block = 2 * MiB, big = 4 * MiB;
    uint64_t first = 3 * t->run->o->limit, target = (uint64_t)(t->run->o->live * (double)t->run->o->limit);
    while (t->nominal_live + block <= first && !atomic_load(&t->run->failed))
        if (!take(t, API_ALLOC, block))
            return;
    for (size_t i = t->nslots; i-- > 0;)
        if (i % 2 && !diff_exec_free(t, i, false, 0, i))
            return;
    while (t->nominal_live + big <= target && !atomic_load(&t->run->failed))
        if (!take(t, API_ALLOC, big))
            return;
}
