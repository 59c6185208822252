/* The page table: every VA page spillway backs -> (owner, logical page).
 *
 * A four-level radix table on the VA page number (9 bits per lower level,
 * the rest at the top) so that a lookup is four dependent loads and needs no
 * lock: levels are installed once with a release store and freed only with
 * the table. Entries are written under the owning device's lock. */
#include <stdlib.h>

#include "policy/internal.h"

#define PT_BITS 9u
#define PT_FAN (1u << PT_BITS)
#define PT_VA_BITS 57u

typedef struct pt_node {
    _Atomic(void *) slot[PT_FAN];
} pt_node;

typedef struct pt_leaf {
    sw_pte e[PT_FAN];
} pt_leaf;

int sw_pt_init(sw_pagetable *pt, unsigned shift)
{
    if (shift < 12 || shift + 3 * PT_BITS >= PT_VA_BITS)
        return -1;
    pt->shift = shift;
    pt->top_bits = PT_VA_BITS - shift - 3 * PT_BITS;
    pt->top = calloc((size_t)1 << pt->top_bits, sizeof *pt->top);
    if (!pt->top)
        return -1;
    pthread_mutex_init(&pt->grow, NULL);
    return 0;
}

void sw_pt_destroy(sw_pagetable *pt)
{
    if (!pt->top)
        return;
    for (size_t i = 0; i < (size_t)1 << pt->top_bits; i++) {
        pt_node *l1 = atomic_load_explicit(&pt->top[i], memory_order_relaxed);
        if (!l1)
            continue;
        for (unsigned j = 0; j < PT_FAN; j++) {
            pt_node *l2 = atomic_load_explicit(&l1->slot[j], memory_order_relaxed);
            if (!l2)
                continue;
            for (unsigned k = 0; k < PT_FAN; k++)
                free(atomic_load_explicit(&l2->slot[k], memory_order_relaxed));
            free(l2);
        }
        free(l1);
    }
    free(pt->top);
    pt->top = NULL;
    pthread_mutex_destroy(&pt->grow);
}

/* Index of va's page at each level: top, l1, l2, leaf. */
static inline void pt_index(const sw_pagetable *pt, CUdeviceptr va, size_t idx[4])
{
    uint64_t pn = (uint64_t)va >> pt->shift;
    idx[3] = pn & (PT_FAN - 1);
    idx[2] = (pn >> PT_BITS) & (PT_FAN - 1);
    idx[1] = (pn >> (2 * PT_BITS)) & (PT_FAN - 1);
    idx[0] = pn >> (3 * PT_BITS);
}

sw_pte *sw_pt_get(const sw_pagetable *pt, CUdeviceptr va)
{
    size_t idx[4];
    if ((uint64_t)va >> PT_VA_BITS)
        return NULL;
    pt_index(pt, va, idx);
    pt_node *l1 = atomic_load_explicit(&pt->top[idx[0]], memory_order_acquire);
    if (!l1)
        return NULL;
    pt_node *l2 = atomic_load_explicit(&l1->slot[idx[1]], memory_order_acquire);
    if (!l2)
        return NULL;
    pt_leaf *leaf = atomic_load_explicit(&l2->slot[idx[2]], memory_order_acquire);
    if (!leaf)
        return NULL;
    return &leaf->e[idx[3]];
}

/* Returns the child in *slot, installing a zeroed one of `size` bytes. */
static void *pt_child(sw_pagetable *pt, _Atomic(void *) *slot, size_t size)
{
    void *c = atomic_load_explicit(slot, memory_order_acquire);
    if (c)
        return c;
    pthread_mutex_lock(&pt->grow);
    c = atomic_load_explicit(slot, memory_order_relaxed);
    if (!c) {
        c = calloc(1, size);
        if (c)
            atomic_store_explicit(slot, c, memory_order_release);
    }
    pthread_mutex_unlock(&pt->grow);
    return c;
}

sw_pte *sw_pt_ensure(sw_pagetable *pt, CUdeviceptr va)
{
    size_t idx[4];
    if ((uint64_t)va >> PT_VA_BITS)
        return NULL;
    pt_index(pt, va, idx);
    pt_node *l1 = pt_child(pt, &pt->top[idx[0]], sizeof(pt_node));
    if (!l1)
        return NULL;
    pt_node *l2 = pt_child(pt, &l1->slot[idx[1]], sizeof(pt_node));
    if (!l2)
        return NULL;
    pt_leaf *leaf = pt_child(pt, &l2->slot[idx[2]], sizeof(pt_leaf));
    if (!leaf)
        return NULL;
    return &leaf->e[idx[3]];
}
