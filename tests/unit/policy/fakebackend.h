/* A fake policy backend for the unit suites: real bytes, counted calls, and
 * the safety invariants asserted on every call.
 *
 * Physical pages are slices of one memfd; a VA reservation is PROT_NONE
 * address space; mapping a page maps its slice there (MAP_FIXED|MAP_SHARED),
 * so what an address reads really changes with the mapping, and an address
 * is readable only after set_access (mprotect) - as on the driver, where a
 * mapped page without access faults.
 *
 * Work is simulated: fake_launch() records work touching a byte range on a
 * stream that stays in flight until the stream completes (fake_complete) or
 * the device is synchronized. Events complete with their stream. Violations
 * (counted, and the first described) are: unmapping a page with work in
 * flight, creating a device page beyond the limit, mapping over a mapping,
 * unmapping what is not mapped, releasing a page still mapped, granting
 * access outside a reservation or on an unmapped page, and a copy through a
 * page that is not mapped or got no access (refused, INVALID_VALUE, as
 * fakecuda and the driver refuse it). */
#ifndef SPILLWAY_TEST_FAKEBACKEND_H
#define SPILLWAY_TEST_FAKEBACKEND_H
#include <stdbool.h>

#include "policy/backend.h"

typedef struct fake_backend fake_backend;

typedef struct fake_stats {
    uint64_t creates, releases, maps, unmaps, set_access, copies, syncs;
    uint64_t ev_create, ev_record, ev_query, ev_destroy, reserves, va_frees;
    uint64_t live_dev_pages, live_host_pages, max_dev_pages, live_mappings;
    uint64_t violations;
} fake_stats;

/* page: the granularity reported; dev_limit_pages: device pages that may
 * exist at once (a violation beyond). */
fake_backend *fake_create(size_t page, size_t dev_limit_pages);
void fake_destroy(fake_backend *fb);
sw_backend fake_ops(fake_backend *fb);
void fake_get_stats(fake_backend *fb, fake_stats *out);
const char *fake_violation(fake_backend *fb); /* first one, or "" */

/* Simulated work. */
void fake_launch(fake_backend *fb, CUstream s, CUdeviceptr ptr, size_t size);
void fake_complete(fake_backend *fb, CUstream s);
/* Work in flight on a stream other than s touches [ptr, ptr+size). */
bool fake_conflict(fake_backend *fb, CUdeviceptr ptr, size_t size, CUstream s);

/* The next call of op ("map", "set_access", "page_create", "synchronize",
 * "event_record", "copy", "unmap", "va_reserve", "stream_sync") returns r. */
void fake_fail_next(fake_backend *fb, const char *op, CUresult r);
/* The same for the next `times` calls of op. */
void fake_fail_times(fake_backend *fb, const char *op, CUresult r, int times);
/* The same after `skip` calls of op have passed; fake_fail_clear: none.
 * Each of these replaces what was set before. */
void fake_fail_after(fake_backend *fb, const char *op, int skip, CUresult r, int times);
void fake_fail_clear(fake_backend *fb);
/* A second op failing too, beside the one set last (a third one when a
 * second is still set); _after: once `skip` calls of it have passed. */
void fake_fail_also(fake_backend *fb, const char *op, CUresult r, int times);
void fake_fail_also_after(fake_backend *fb, const char *op, int skip, CUresult r, int times);

/* Events are made in context `where` from now on (NULL at first). A reset
 * of a context (cuDevicePrimaryCtxReset: the test completes its streams'
 * work first) destroys its events: counted as destroyed, and any later
 * record, query or destroy of one is a violation (INVALID_HANDLE). */
void fake_set_context(fake_backend *fb, void *where);
void fake_context_reset(fake_backend *fb, void *where);

/* Bookkeeping only, from now on (before the first reservation): nothing is
 * mapped, protected or copied, so that a benchmark of 40,000 pages runs
 * under valgrind (one mapping per page would pass its segment table). */
void fake_no_bytes(fake_backend *fb);
/* A stream capture is under way (or no longer). */
void fake_set_capturing(fake_backend *fb, bool on);
/* While held, synchronize blocks (in-flight work that waits for work the
 * program has not submitted yet); released, it completes. */
void fake_hold_sync(fake_backend *fb, bool held);

/* fn(arg) runs once, on the calling thread, right after the nth call of op
 * ("page_create", "page_release", "synchronize", "stream_sync") from now
 * on: what another thread does while the pool is being built or torn down,
 * or while a move waits for its sync, or what the driver does next. */
void fake_on_call(fake_backend *fb, const char *op, uint64_t nth, void (*fn)(void *), void *arg);

/* cuMemAddressReserve / cuMemAddressFree as the program would call them. */
CUresult fake_reserve(fake_backend *fb, size_t size, CUdeviceptr *va);
CUresult fake_free_va(fake_backend *fb, CUdeviceptr va, size_t size);
/* Handle currently mapped at va (0: none). */
CUmemGenericAllocationHandle fake_mapped_handle(fake_backend *fb, CUdeviceptr va);
#endif
