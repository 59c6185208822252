/* The physical pages of the pool (pagetable.c, pool.c, pages.c): what
 * backs each VA page of spillway's, the page objects, the pool of unmapped
 * physical pages and the strands a refused unmap leaves. Part of policy/'s
 * internals (internal.h includes it, docs/design.md "The pool"); a header
 * of its own because it is the layer every move and allocation stands on,
 * with records and calls of its own. */
#ifndef SPILLWAY_POLICY_PAGES_H
#define SPILLWAY_POLICY_PAGES_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "policy/policy.h"

typedef struct sw_device sw_device;
typedef struct sw_strand sw_strand;

/* ---- pagetable.c -------------------------------------------------------- */

/* A logical page: what one VA page of spillway shows the program. Its backing
 * (handle, loc) changes when it changes residency; the VA does not. A page
 * that backs live data on the device sits on its device's ring (spill's
 * clock); a free arena page still mapped sits on the cached list. */
typedef struct sw_page {
    CUmemGenericAllocationHandle handle; /* current physical backing */
    uint8_t loc;                         /* sw_loc */
    uint8_t list;                        /* SW_LIST_* */
    /* lost: a failed move left its VA without it (residency.c, forget; the
     * page table no longer names it). kept: its handle never goes back to
     * the pool, as it may still be mapped where spillway does not track it
     * (lost, or left at a scratch range under a copy that could not be
     * waited for: promote.c). noaccess: mapped at its VA without access (a
     * move's grant and the unmap undoing it refused): its bytes are there,
     * but no copy may touch it and no allocation may get it until a grant
     * succeeds (residency.c, sw_noaccess_retry). exported: handed to
     * another process through legacy IPC (export.c): it never moves again,
     * and when no allocation uses its VA any more it is unmapped and
     * released, never back in the pool nor cached (the importer's mapping
     * may still write to it). */
    uint8_t lost, kept, noaccess, exported;
    uint32_t nmaps;                      /* VAs it is mapped at */
    CUdeviceptr va;                      /* where it is mapped (the first VA) */
    uint64_t seen;                       /* heat clock when spill last looked */
    sw_device *dev;
    struct sw_page *next, *prev;         /* ring / cached list / free objects */
} sw_page;

enum { SW_LIST_NONE = 0, SW_LIST_RING = 1, SW_LIST_CACHED = 2 };

/* What owns a VA page, as a tagged pointer in sw_pte.owner: one extent, a
 * mixed page (several extents share it), or a program VMM mapping. */
enum { SW_OWN_NONE = 0, SW_OWN_EXT = 1, SW_OWN_MIXED = 2, SW_OWN_VMM = 3 };
#define SW_OWN_TAG(o) ((unsigned)((o) & 3u))
#define SW_OWN_PTR(o) ((void *)((o) & ~(uintptr_t)3u))
#define SW_OWN(ptr, tag) ((uintptr_t)(ptr) | (uintptr_t)(tag))

typedef struct sw_pte {
    _Atomic uintptr_t owner;  /* SW_OWN(...) */
    _Atomic(sw_page *) page;  /* mapped page, NULL when the VA is unmapped */
    uint32_t users;           /* live or pending extents overlapping (device lock) */
} sw_pte;

/* Four-level radix table indexed by VA page number; levels are created once
 * and never freed before the table, so lookups need no lock. Covers VAs
 * below 2^57. */
typedef struct sw_pagetable {
    unsigned shift; /* log2(page size) */
    unsigned top_bits;
    _Atomic(void *) *top;
    pthread_mutex_t grow;
} sw_pagetable;

int sw_pt_init(sw_pagetable *pt, unsigned shift);
void sw_pt_destroy(sw_pagetable *pt);
sw_pte *sw_pt_get(const sw_pagetable *pt, CUdeviceptr va);  /* NULL: never created */
sw_pte *sw_pt_ensure(sw_pagetable *pt, CUdeviceptr va);     /* NULL: out of memory */

/* ---- pool.c: physical pages --------------------------------------------- */

typedef struct sw_pool {
    size_t limit_pages;     /* device pages never exceed this */
    size_t created;         /* device pages created */
    CUmemGenericAllocationHandle *free; /* unmapped device pages, a stack */
    size_t nfree;
    size_t host_limit_pages;
    size_t host_created;
    CUmemGenericAllocationHandle *host_free;
    size_t host_nfree, host_cap;
    /* The reserve's page in flight (reserve.c): its slot is counted in
     * host_created while it is pinned outside the device lock, so a caller
     * at the host limit waits for it (sw_pool_take) instead of refusing;
     * it is handed over without the device lock, which that caller holds. */
    _Atomic bool host_pending;
    _Atomic CUmemGenericAllocationHandle host_arrived;
    sw_page *page_objs; /* recycled sw_page objects */
} sw_pool;

/* All under the device lock. */
int sw_pool_init(sw_device *d, size_t limit_pages, size_t host_limit_pages);
CUresult sw_pool_prefill(sw_device *d);
size_t sw_pool_available(const sw_device *d); /* free + still creatable */
/* The device pages the pool may hold now: the limit's, less what memory
 * outside the pool takes (sw_lend), in whole pages. */
size_t sw_pool_cap(const sw_device *d);
/* Right after the device is ready (not under its lock): gives back the
 * pages a lend made while the pool was being built left above the cap. */
void sw_lend_settle(sw_device *d);
/* Releases one free device page to the driver (created goes down): SUCCESS,
 * NOT_FOUND when none is free, or the driver's error (the page stays). */
CUresult sw_pool_give_back(sw_device *d);
/* A free page of loc, created when none is free and the limit allows.
 * OUT_OF_MEMORY with *why = LIMIT / HOST_LIMIT when the limit stops it, or
 * DRIVER when the driver has no page to give; any other driver error as
 * the driver said. */
CUresult sw_pool_take(sw_device *d, sw_loc loc, CUmemGenericAllocationHandle *h,
                      sw_oom_reason *why);
void sw_pool_put(sw_device *d, sw_loc loc, CUmemGenericAllocationHandle h);
/* An exported device page's handle, unmapped, leaves the pool for good:
 * released to the driver (the importer's own reference keeps the memory
 * for it) and created goes down, so that a fresh page can be made. */
void sw_pool_forget(sw_device *d, CUmemGenericAllocationHandle h);
CUresult sw_pool_grow_host(sw_device *d); /* one more free host page */
/* For a host page made outside the device lock (reserve.c): a slot within
 * the host limit (host_pending set), then its outcome: handed over (h, not
 * under the device lock), then settled under it (h to the free stack
 * unless a caller took it meanwhile). */
CUresult sw_pool_host_slot(sw_device *d, sw_oom_reason *why);
void sw_pool_host_hand_over(sw_device *d, CUresult r, CUmemGenericAllocationHandle h);
void sw_pool_host_settle(sw_device *d, CUresult r);
CUresult sw_pool_destroy(sw_device *d);
sw_page *sw_page_new(sw_device *d, CUmemGenericAllocationHandle h, sw_loc loc);
void sw_page_free(sw_device *d, sw_page *pg);
/* The page of a handle or mapping that goes away: its handle back to the
 * pool unless kept, out of host_in_use unless lost (counted out then), the
 * object freed. Device lock held. */
void sw_page_retire(sw_device *d, sw_page *pg);
/* pg no longer backs va (unmapped there) and could not be mapped back:
 * lost and kept, off its list, out of host_in_use, counted in d->lost.
 * Device lock held. */
void sw_page_lose(sw_device *d, CUdeviceptr va, sw_page *pg);
/* Physical page h stays mapped at va, which the page table no longer names
 * (it got no access, and the driver refused the unmap undoing its map too):
 * its unmap is tried again before anything is mapped at va (the driver
 * refuses a map over a mapping) and at teardown; then h goes where `then`
 * says: nowhere (another holds it), to the pool, or released for good (an
 * exported page: sw_pool_forget). Held meanwhile (sw_page_faulted) when it
 * goes to the pool, unless h is a lost page's, counted already. Device
 * lock held. */
typedef enum { SW_STRAND_KEEP, SW_STRAND_POOL, SW_STRAND_RELEASE } sw_strand_then;
struct sw_strand {
    CUdeviceptr va;
    CUmemGenericAllocationHandle h;
    uint8_t loc;
    uint8_t then; /* sw_strand_then */
    sw_strand *next;
};
void sw_strand_page(sw_device *d, CUdeviceptr va, CUmemGenericAllocationHandle h, sw_loc loc,
                    sw_strand_then then, bool lost);
/* A device page at loc leaves the pool after a refused driver call (out)
 * or comes back to it: counted in d->c.faulted. */
void sw_page_faulted(sw_device *d, sw_loc loc, bool out);
/* A VA whose page is mapped without access (sw_page.noaccess). */
struct sw_noacc {
    CUdeviceptr va;
    sw_noacc *next;
};
/* Grants access to the no-access pages again (residency.c); the driver's
 * refusal when one still gets none. Device lock held. */
CUresult sw_noaccess_retry(sw_policy *p, sw_device *d);
/* Drops the records of pages no longer without access; no driver call.
 * Device lock held. */
void sw_noaccess_prune(sw_policy *p, sw_device *d);
/* The n arena pages from va for a new owner: each one without access
 * granted again, or let go and backed by a fresh page. Device lock held;
 * OUT_OF_MEMORY (with *why) when no page can be had. */
CUresult sw_pages_regrant(sw_device *d, CUdeviceptr va, size_t n, sw_oom_reason *why);
void sw_page_objs_destroy(sw_device *d);

/* ---- pages.c -------------------------------------------------------------- */

/* Page bookkeeping for a used extent over its pages: users, owners, the
 * mixed index, and the lists (a page used again leaves the cached list).
 * Device lock held. */
void sw_pages_use(sw_device *d, sw_ext *e);
/* The reverse, before sw_ext_release: pages nobody uses any more go to the
 * cached list (device) or back to the pool (host: the next owner should get
 * device memory). The range's frees are covered: unmapping is safe. */
void sw_pages_unuse(sw_device *d, sw_ext *e);
/* After sw_ext_release merged [lo, hi) into the free extent `merged`: the
 * owners of the pages at both ranges' ends. */
void sw_pages_settle(sw_device *d, sw_ext *merged, CUdeviceptr lo, CUdeviceptr hi);
/* Maps a free pool page at each unmapped page of [va, va + n pages), taking
 * device pages first (free, created up to the limit, reclaimed from the
 * cached list) and, with host_ok, pinned host pages when no device page is
 * left. *missing: pages still unmapped when the pool ran dry, *why the
 * limit that stopped it. A driver error is returned (pages mapped so far
 * stay). Device lock held. */
CUresult sw_pages_map(sw_device *d, CUdeviceptr va, size_t n, bool host_ok, size_t *missing,
                      sw_oom_reason *why);
/* Unmaps up to want cached pages (newest first) back into the pool. Their
 * frees were covered when they were released, so no sync is needed. */
CUresult sw_pages_reclaim(sw_device *d, size_t want, size_t *got);
/* Maps page pg at va (the page table follows) / unmaps va's page. */
CUresult sw_map_page(sw_device *d, CUdeviceptr va, sw_page *pg);
CUresult sw_unmap_page(sw_device *d, CUdeviceptr va);
/* Puts pg on d's ring (just behind the clock hand) / takes it off any list. */
void sw_ring_insert(sw_device *d, sw_page *pg, uint64_t seen);
void sw_list_remove(sw_device *d, sw_page *pg);
/* Unmaps every mapped page of the arena (teardown). */
CUresult sw_pages_unmap_all(sw_device *d);
#endif
