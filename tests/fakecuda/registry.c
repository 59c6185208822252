/* fakecuda: the registry of every live memory range (allocations, host
 * memory, VMM mappings), sorted by address. All functions run under fc_lock. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/fakecuda/internal.h"

static struct fc_region **regions; /* sorted by base; entries are stable pointers */
static size_t nregions, cap;
static unsigned long long next_id = 1;

size_t fc_page_round(size_t size)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    return (size + pg - 1) & ~(pg - 1);
}

void *fc_map_anon(size_t size)
{
    void *p = mmap(NULL, fc_page_round(size), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void fc_unmap(void *p, size_t size)
{
    munmap(p, fc_page_round(size));
}

/* Index of the first region whose base is > addr. */
static size_t upper_bound(uintptr_t addr)
{
    size_t lo = 0, hi = nregions;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (regions[mid]->base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

struct fc_region *fc_region_add(const struct fc_region *r)
{
    if (nregions == cap) {
        size_t ncap = cap ? cap * 2 : 256;
        struct fc_region **n = realloc(regions, ncap * sizeof *n);
        if (!n)
            return NULL;
        regions = n;
        cap = ncap;
    }
    struct fc_region *copy = malloc(sizeof *copy);
    if (!copy)
        return NULL;
    *copy = *r;
    copy->id = next_id++;
    size_t i = upper_bound(r->base);
    memmove(&regions[i + 1], &regions[i], (nregions - i) * sizeof *regions);
    regions[i] = copy;
    nregions++;
    return copy;
}

struct fc_region *fc_region_find(uintptr_t addr)
{
    size_t i = upper_bound(addr);
    if (i == 0)
        return NULL;
    struct fc_region *r = regions[i - 1];
    /* size 0 never happens; a registered range covers [base, base+size) */
    return addr - r->base < r->size ? r : NULL;
}

void fc_region_remove(struct fc_region *r)
{
    for (size_t i = upper_bound(r->base); i-- > 0;) {
        if (regions[i] == r) {
            memmove(&regions[i], &regions[i + 1], (nregions - i - 1) * sizeof *regions);
            nregions--;
            free(r);
            return;
        }
        if (regions[i]->base != r->base)
            break;
    }
}

size_t fc_region_count(enum fc_region_kind kind)
{
    size_t n = 0;
    for (size_t i = 0; i < nregions; i++)
        n += regions[i]->kind == kind;
    return n;
}

void fc_region_each_in(uintptr_t addr, size_t size, fc_region_visit fn, void *arg)
{
    size_t i = upper_bound(addr);
    if (i > 0 && regions[i - 1]->base + regions[i - 1]->size > addr)
        i--;
    for (; i < nregions && regions[i]->base < addr + size; i++)
        if (!fn(regions[i], arg))
            return;
}

struct cover {
    uintptr_t next; /* first byte not yet covered */
    bool ok;
};

static bool cover_step(struct fc_region *r, void *arg)
{
    struct cover *c = arg;
    if (r->base > c->next || (r->kind == FC_VMM && !r->access)) {
        c->ok = false;
        return false;
    }
    if (r->base + r->size > c->next)
        c->next = r->base + r->size;
    return true;
}

bool fc_device_range_ok(uintptr_t addr, size_t size)
{
    if (size == 0)
        return fc_region_find(addr) != NULL;
    /* A range past the end of the address space (cuMemsetD8 of SIZE_MAX
     * bytes) is no allocation's: without this its end wraps to below addr
     * and it would pass as covered. */
    if (size > UINTPTR_MAX - addr)
        return false;
    struct cover c = {addr, true};
    fc_region_each_in(addr, size, cover_step, &c);
    return c.ok && c.next >= addr + size;
}

bool fc_is_pinned_host(uintptr_t addr)
{
    struct fc_region *r = fc_region_find(addr);
    return r && (r->kind == FC_HOST || r->kind == FC_REGISTERED);
}
