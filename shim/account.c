/* Owner of the counters and the allocation maps. */
#include "shim/account.h"
#include "shim/handler.h"

#include "policy/lanes.h"
#include "policy/policy.h"
#include "shim/log.h"
#include "shim/ptrmap.h"
#include "shim/refusals.h"
#include "shim/size_text.h"
#include "stats/writer.h"

#include <pthread.h>
#include <stdatomic.h>

/* Whether the driver call under a runtime call was counted by a handler
 * (handler.h, cudart.c): a per-thread fact of counting, kept here, below
 * both. */
_Thread_local struct spw_rt_guard spw_rt_guard;

struct counters {
    _Atomic uint64_t ooms;
    _Atomic int oom_logged;
    /* Written by every allocation and free: off the line of the refusal
     * counts, and the event counts in lanes (issue 14 item 6). */
    _Atomic uint64_t used __attribute__((aligned(64))), peak;
    sw_lanes allocs, frees;
} __attribute__((aligned(64)));

static struct counters devices[SW_MAX_DEVICES];
_Static_assert(SW_MAX_DEVICES <= SPW_STATS_MAX_DEVICES, "the stats segment holds every device");
/* A thread's lane here is its lane in the stats segment too: one line of
 * each that no other thread writes (while there are no more threads). */
_Static_assert(SW_LANES == SPW_STATS_LANES, "one stats lane per counter lane");
static struct counters host;
static struct spw_map maps[SPW_KINDS];
static pthread_once_t maps_once = PTHREAD_ONCE_INIT;
/* The stats segment every device event is mirrored to (publish.c owns it). */
static struct spw_stats_writer *_Atomic stats;
/* Bytes of a device in host memory now (pool_setup.c sets it when a pool spills). */
static uint64_t (*_Atomic spilled_of)(int dev);
/* Where a pass-through entry whose memory went away unseen gives its
 * bytes back to the pool (pool_setup.c's spw_pool_unlend). */
static void (*_Atomic gone_to)(int dev, int reason, uint64_t bytes);
/* Entries of the maps that are device memory (not SPILLWAY_HOST). */
static _Atomic uint64_t unpooled;

static struct spw_stats_writer *stats_for(int dev)
{
    return dev == SPILLWAY_HOST ? NULL : atomic_load_explicit(&stats, memory_order_acquire);
}

static void lock_maps(void)
{
    for (int i = 0; i < SPW_KINDS; i++)
        spw_map_lock_all(&maps[i]);
}

static void unlock_maps(void)
{
    for (int i = SPW_KINDS - 1; i >= 0; i--)
        spw_map_unlock_all(&maps[i]);
}

static void init_maps(void)
{
    for (int i = 0; i < SPW_KINDS; i++)
        spw_map_init(&maps[i]);
    /* A child forked while another thread updated a map would find its
     * shard locked forever. */
    pthread_atfork(lock_maps, unlock_maps, unlock_maps);
}

static struct spw_map *map_of(enum spw_kind kind)
{
    pthread_once(&maps_once, init_maps);
    return &maps[kind];
}

/* A device's limit and told size, once resolved, in the segment. */
static void publish_limit(int dev, uint64_t limit, uint64_t told)
{
    spw_stats_set(stats_for(dev), (uint32_t)dev, SPW_C_LIMIT, limit);
    spw_stats_set(stats_for(dev), (uint32_t)dev, SPW_C_REPORTED, told);
}

void spw_account_init(const struct spw_options *opts, const struct spw_device_query *q)
{
    spw_limits_init(opts, q, publish_limit);
    pthread_once(&maps_once, init_maps);
}

int spw_account_tracks(int dev)
{
    return dev == SPILLWAY_HOST || (dev >= 0 && dev < SW_MAX_DEVICES);
}

static struct counters *counters_of(int dev)
{
    return dev == SPILLWAY_HOST ? &host : &devices[dev];
}

uint64_t spw_account_used(int dev)
{
    return atomic_load_explicit(&counters_of(dev)->used, memory_order_relaxed);
}

/* The first refusal on a device is a warning, later ones debug: programs
 * probe for the limit by allocating until refused, and must not flood stderr. */
static enum spw_log_level refusal_level(struct counters *c)
{
    return atomic_exchange_explicit(&c->oom_logged, 1, memory_order_relaxed) ? SPW_LOG_DEBUG
                                                                               : SPW_LOG_WARN;
}

/* The stats counter of each refusal reason (sw_oom_reason). */
static const enum spw_counter refusal_counter[SW_OOM_NREASONS] = {
    [SW_OOM_NONE] = SPW_C_OOM_LIMIT,
    [SW_OOM_LIMIT] = SPW_C_OOM_LIMIT,
    [SW_OOM_HOST_LIMIT] = SPW_C_OOM_HOST_LIMIT,
    [SW_OOM_ADDRESS] = SPW_C_OOM_ADDRESS,
    [SW_OOM_TOO_LARGE] = SPW_C_OOM_TOO_LARGE,
    [SW_OOM_DRIVER] = SPW_C_OOM_DRIVER,
};

static void count_refusal(int dev, sw_oom_reason why)
{
    atomic_fetch_add_explicit(&counters_of(dev)->ooms, 1, memory_order_relaxed);
    spw_stats_add(stats_for(dev), (uint32_t)dev, SPW_C_OOMS, 1);
    if ((unsigned)why < SW_OOM_NREASONS && dev != SPILLWAY_HOST)
        spw_stats_add(stats_for(dev), (uint32_t)dev, refusal_counter[why], 1);
}

/* cap is what the allocation would pass, named in the log by what
 * (refusals.h). */
static void note_refusal(int dev, uint64_t bytes, uint64_t used, uint64_t cap, const char *what)
{
    sw_oom_reason why = bytes > cap ? SW_OOM_TOO_LARGE : SW_OOM_LIMIT;
    count_refusal(dev, why);
    spw_refusal_say_count(refusal_level(&devices[dev]), dev, why, bytes, used, cap, what);
}

void spw_account_set_spilled_source(uint64_t (*spilled)(int dev))
{
    uint64_t (*none)(int) = NULL;
    atomic_compare_exchange_strong(&spilled_of, &none, spilled);
}

void spw_account_set_gone_sink(void (*gone)(int dev, int reason, uint64_t bytes))
{
    void (*none)(int, int, uint64_t) = NULL;
    atomic_compare_exchange_strong(&gone_to, &none, gone);
}

void spw_account_add(int dev, uint64_t bytes)
{
    atomic_fetch_add_explicit(&counters_of(dev)->used, bytes, memory_order_relaxed);
}

int spw_account_reserve(int dev, uint64_t bytes)
{
    struct counters *c = counters_of(dev);
    if (dev == SPILLWAY_HOST) {
        atomic_fetch_add_explicit(&c->used, bytes, memory_order_relaxed);
        return 0;
    }
    uint64_t limit = spw_limit(dev);
    /* Spilled bytes hold no device memory. Read once: a spill or fill
     * racing this check moves pool pages only, never past the limit. */
    uint64_t (*spilled)(int) = atomic_load_explicit(&spilled_of, memory_order_acquire);
    uint64_t away = spilled ? spilled(dev) : 0;
    uint64_t used = atomic_load_explicit(&c->used, memory_order_relaxed);
    do {
        uint64_t resident = used > away ? used - away : 0;
        if (bytes > limit || resident > limit - bytes) {
            note_refusal(dev, bytes, resident, limit, "the limit of");
            return -1;
        }
    } while (!atomic_compare_exchange_weak_explicit(&c->used, &used, used + bytes,
                                                    memory_order_relaxed, memory_order_relaxed));
    return 0;
}

int spw_account_reserve_told(int dev, uint64_t bytes)
{
    if (dev == SPILLWAY_HOST)
        return spw_account_reserve(dev, bytes);
    struct counters *c = &devices[dev];
    uint64_t told = spw_limit_told(dev);
    uint64_t used = atomic_load_explicit(&c->used, memory_order_relaxed);
    do {
        if (bytes > told || used > told - bytes) {
            note_refusal(dev, bytes, used, told,
                         "what the program is told the device has (SPILLWAY_OVERSUBSCRIBE x "
                         "the limit),");
            return -1;
        }
    } while (!atomic_compare_exchange_weak_explicit(&c->used, &used, used + bytes,
                                                    memory_order_relaxed, memory_order_relaxed));
    return 0;
}

/* Subtracts from dev's byte count without ever wrapping below zero, and
 * returns what it took: the stats segment's in_use takes the same (its
 * lanes cannot see a floor). An attempt to go below zero is a bug, counted
 * in the segment's underflows, which the tests require to stay 0. */
static uint64_t sub_floor(int dev, uint64_t bytes)
{
    _Atomic uint64_t *v = &counters_of(dev)->used;
    uint64_t cur = atomic_load_explicit(v, memory_order_relaxed);
    uint64_t next;
    do {
        next = cur > bytes ? cur - bytes : 0;
    } while (!atomic_compare_exchange_weak_explicit(v, &cur, next, memory_order_relaxed,
                                                    memory_order_relaxed));
    if (cur < bytes)
        spw_stats_add(stats_for(dev), (uint32_t)dev, SPW_C_UNDERFLOWS, 1);
    return cur - next;
}

void spw_account_unreserve(int dev, uint64_t bytes)
{
    sub_floor(dev, bytes);
}

/* Raises the peak to the byte count and returns the count: right after an
 * allocation is committed, the device's exact total with it (its bytes
 * were reserved in `used` before), which the stats' peak is raised to. */
static uint64_t raise_peak(struct counters *c)
{
    uint64_t used = atomic_load_explicit(&c->used, memory_order_relaxed);
    uint64_t peak = atomic_load_explicit(&c->peak, memory_order_relaxed);
    while (used > peak && !atomic_compare_exchange_weak_explicit(
                              &c->peak, &peak, used, memory_order_relaxed, memory_order_relaxed))
        ;
    return used;
}

/* A map entry's dev field also carries the pass-through reason of the
 * allocation (0: none, else reason + 1) above the device's 16 bits. */
static int32_t pack_dev(int dev, int reason)
{
    return (int32_t)((uint32_t)(dev & 0xffff) | (uint32_t)(reason + 1) << 16);
}

static int unpack_dev(int32_t v, int *reason)
{
    if (reason)
        *reason = (int)((uint32_t)v >> 16 & 0xff) - 1;
    return (int16_t)(v & 0xffff);
}

/* Keeps `unpooled` in step with the maps: +1 / -1 for an entry that is
 * device memory outside the pool that a pointer can name (arrays have no
 * address). Handles committed without a reason are the pool's own
 * (alloc_vmm.c); device pointers without one were adopted from a runtime
 * that bypassed the handlers (cudart.c). */
static void unpooled_step(enum spw_kind kind, int dev, int reason, int sign)
{
    if (dev == SPILLWAY_HOST || kind == SPW_KIND_HOSTPTR || kind == SPW_KIND_ARRAY ||
        kind == SPW_KIND_MIPMAP ||
        (kind == SPW_KIND_HANDLE && reason < 0))
        return;
    spw_account_unpooled_held(sign);
}

void spw_account_unpooled_held(int sign)
{
    if (sign > 0)
        atomic_fetch_add_explicit(&unpooled, 1, memory_order_relaxed);
    else
        atomic_fetch_sub_explicit(&unpooled, 1, memory_order_relaxed);
}

int spw_account_unpooled_live(void)
{
    return atomic_load_explicit(&unpooled, memory_order_relaxed) != 0;
}

void spw_account_copy(int dev, enum spw_copy_dir dir, uint64_t bytes)
{
    static const enum spw_counter counter[] = {
        [SPW_COPY_HTOD] = SPW_C_COPY_HTOD,
        [SPW_COPY_DTOH] = SPW_C_COPY_DTOH,
        [SPW_COPY_DTOD] = SPW_C_COPY_DTOD,
    };
    if (dev < 0 || !bytes || (unsigned)dir >= sizeof counter / sizeof counter[0])
        return;
    spw_stats_add(atomic_load_explicit(&stats, memory_order_acquire), (uint32_t)dev, counter[dir],
                  bytes);
}

void spw_account_launch(int (*device)(const void *), const void *arg, int graph)
{
    struct spw_stats_writer *w = atomic_load_explicit(&stats, memory_order_acquire);
    /* With one device every launch the driver accepted ran on it: no call
     * (cuStreamGetDevice was most of a launch's cost with spill off). */
    int dev = !w ? -1 : w->device_count == 1 ? 0 : device(arg);
    if (dev >= 0)
        spw_stats_launch(w, (uint32_t)dev, sw_lane_of_thread(), graph);
}

/* The stats gauge of a reason (host-location memory is host memory: none). */
static int pt_gauge(int reason)
{
    enum { SPW_C_NONE = -1 };
    static const int gauge[SW_PT_NREASONS] = {
#define SPW_PT_GAUGE(r, name, stat) [SW_PT_##r] = SPW_C_##stat,
        SW_PASSTHROUGH_REASONS(SPW_PT_GAUGE)
#undef SPW_PT_GAUGE
    };
    return reason >= 0 && reason < SW_PT_NREASONS ? gauge[reason] : -1;
}

/* Live pass-through bytes by device and reason, whether published or not
 * (spw_account_pt_bytes). */
static _Atomic uint64_t pt_live[SW_MAX_DEVICES][SW_PT_NREASONS];

uint64_t spw_account_pt_bytes(int dev, int reason)
{
    if (dev < 0 || dev >= SW_MAX_DEVICES || reason < 0 || reason >= SW_PT_NREASONS)
        return 0;
    return atomic_load_explicit(&pt_live[dev][reason], memory_order_relaxed);
}

static void pt_gauge_add(int dev, int reason, uint64_t bytes, int sign)
{
    if (dev >= 0 && dev < SW_MAX_DEVICES && reason >= 0 && reason < SW_PT_NREASONS) {
        _Atomic uint64_t *v = &pt_live[dev][reason];
        uint64_t cur = atomic_load_explicit(v, memory_order_relaxed), next;
        do /* never below zero */
            next = sign > 0 ? cur + bytes : cur > bytes ? cur - bytes : 0;
        while (!atomic_compare_exchange_weak_explicit(v, &cur, next, memory_order_relaxed,
                                                      memory_order_relaxed));
    }
    int g = pt_gauge(reason);
    if (g < 0 || dev < 0)
        return;
    if (sign > 0)
        spw_stats_add(stats_for(dev), (uint32_t)dev, (enum spw_counter)g, bytes);
    else
        spw_stats_sub(stats_for(dev), (uint32_t)dev, (enum spw_counter)g, bytes);
}

static void commit_tagged(enum spw_kind kind, uint64_t key, int dev, uint64_t bytes, int reason)
{
    struct counters *c = counters_of(dev);
    struct spw_map_entry stale;
    int r = spw_map_insert(map_of(kind), key, pack_dev(dev, reason), bytes, &stale);
    if (r < 0) {
        /* Untracked memory could never be released: give the bytes back so
         * the counters stay exact, at the price of not counting it. */
        char b[SPW_SIZE_TEXT_MAX];
        spw_warn("out of memory for the allocation table: %s on device %d not counted",
                 spw_size_text(b, sizeof b, bytes), dev);
        sub_floor(dev, bytes);
        return;
    }
    if (r == 1) {
        /* The driver reused a key spillway still held: its memory went away
         * without a free spillway saw (e.g. a destroyed context). */
        int sreason, sdev = unpack_dev(stale.dev, &sreason);
        spw_debug("key %#llx reused: releasing its stale %llu bytes", (unsigned long long)key,
                  (unsigned long long)stale.size);
        uint64_t gone = sub_floor(sdev, stale.size);
        sw_lanes_add(&counters_of(sdev)->frees, 1);
        spw_stats_free(stats_for(sdev), (uint32_t)sdev, sw_lane_of_thread(), gone);
        pt_gauge_add(sdev, sreason, stale.size, -1);
        unpooled_step(kind, sdev, sreason, -1);
        void (*sink)(int, int, uint64_t) = atomic_load_explicit(&gone_to, memory_order_acquire);
        if (sink)
            sink(sdev, sreason, stale.size);
    }
    unpooled_step(kind, dev, reason, 1);
    sw_lanes_add(&c->allocs, 1);
    uint64_t total = raise_peak(c);
    spw_stats_alloc(stats_for(dev), (uint32_t)dev, sw_lane_of_thread(), bytes, total);
    pt_gauge_add(dev, reason, bytes, 1);
}

void spw_account_commit(enum spw_kind kind, uint64_t key, int dev, uint64_t bytes)
{
    commit_tagged(kind, key, dev, bytes, -1);
}

void spw_account_commit_pt(enum spw_kind kind, uint64_t key, int dev, uint64_t bytes, int reason)
{
    commit_tagged(kind, key, dev, bytes, reason);
}

void spw_account_commit_unkeyed_pt(int dev, uint64_t bytes, int reason)
{
    spw_account_commit_pool(dev, bytes);
    pt_gauge_add(dev, reason, bytes, 1);
}

void spw_account_commit_pool(int dev, uint64_t bytes)
{
    struct counters *c = counters_of(dev);
    sw_lanes_add(&c->allocs, 1);
    uint64_t total = raise_peak(c);
    spw_stats_alloc(stats_for(dev), (uint32_t)dev, sw_lane_of_thread(), bytes, total);
}

/* Stored only when it changed: every allocation publishes the pool's
 * figures, and a store would bounce the line between threads. */
static void set_if_changed(int dev, enum spw_counter k, uint64_t value)
{
    _Atomic uint64_t *v = spw_stats_slot(stats_for(dev), (uint32_t)dev, k);
    if (v && atomic_load_explicit(v, memory_order_relaxed) != value)
        atomic_store_explicit(v, value, memory_order_relaxed);
}

void spw_account_set_pool_bytes(int dev, uint64_t bytes)
{
    set_if_changed(dev, SPW_C_POOL, bytes);
}

void spw_account_set_spill(int dev, const sw_spill_stats *f)
{
#define SPW_PUBLISH_SPILL(name, counter, stat) set_if_changed(dev, SPW_C_##stat, f->name);
    SW_SPILL_FIGURES(SPW_PUBLISH_SPILL)
#undef SPW_PUBLISH_SPILL
}

struct keys_on {
    int dev, but;
};

static int on_dev(const struct spw_map_entry *e, void *arg)
{
    const struct keys_on *k = arg;
    int why;
    return unpack_dev(e->dev, &why) == k->dev && why != k->but;
}

int spw_account_keys_on(enum spw_kind kind, int dev, int but, uint64_t **keys, size_t *n)
{
    struct keys_on k = {dev, but};
    return spw_map_keys(map_of(kind), on_dev, &k, keys, n);
}

int spw_account_counted(enum spw_kind kind, uint64_t key)
{
    return spw_map_find(map_of(kind), key, NULL) == 0;
}

int spw_account_forget_pt(enum spw_kind kind, uint64_t key, int *dev, uint64_t *bytes,
                          int *reason)
{
    struct spw_map_entry e;
    if (spw_map_remove(map_of(kind), key, &e))
        return -1;
    int why;
    *dev = unpack_dev(e.dev, &why);
    if (reason)
        *reason = why;
    unpooled_step(kind, *dev, why, -1);
    *bytes = e.size;
    return 0;
}

int spw_account_forget(enum spw_kind kind, uint64_t key, int *dev, uint64_t *bytes)
{
    return spw_account_forget_pt(kind, key, dev, bytes, NULL);
}

void spw_account_release_pt(int dev, uint64_t bytes, int reason)
{
    struct counters *c = counters_of(dev);
    uint64_t gone = sub_floor(dev, bytes);
    sw_lanes_add(&c->frees, 1);
    spw_stats_free(stats_for(dev), (uint32_t)dev, sw_lane_of_thread(), gone);
    pt_gauge_add(dev, reason, bytes, -1);
}

void spw_account_release(int dev, uint64_t bytes)
{
    spw_account_release_pt(dev, bytes, -1);
}

void spw_account_restore_pt(enum spw_kind kind, uint64_t key, int dev, uint64_t bytes,
                            int reason)
{
    struct spw_map_entry stale;
    int r = spw_map_insert(map_of(kind), key, pack_dev(dev, reason), bytes, &stale);
    if (r < 0) {
        char b[SPW_SIZE_TEXT_MAX];
        spw_warn("out of memory for the allocation table: %s on device %d forgotten",
                 spw_size_text(b, sizeof b, bytes), dev);
        /* Out of the count for good, with no free: the stats' in_use
         * follows (it counted them at commit), their frees do not. */
        uint64_t gone = sub_floor(dev, bytes);
        spw_stats_unuse(stats_for(dev), (uint32_t)dev, sw_lane_of_thread(), gone);
        pt_gauge_add(dev, reason, bytes, -1);
        return;
    }
    if (r == 1) { /* replaced, not added: the entry it replaced is gone */
        int sreason, sdev = unpack_dev(stale.dev, &sreason);
        unpooled_step(kind, sdev, sreason, -1);
    }
    unpooled_step(kind, dev, reason, 1);
}

void spw_account_restore(enum spw_kind kind, uint64_t key, int dev, uint64_t bytes)
{
    spw_account_restore_pt(kind, key, dev, bytes, -1);
}

int spw_account_retag(enum spw_kind kind, uint64_t key, int reason)
{
    int dev, was;
    uint64_t bytes;
    if (spw_account_forget_pt(kind, key, &dev, &bytes, &was))
        return -1;
    pt_gauge_add(dev, was, bytes, -1);
    spw_account_restore_pt(kind, key, dev, bytes, reason);
    pt_gauge_add(dev, reason, bytes, 1);
    return 0;
}

void spw_account_note_pool_oom(int dev, uint64_t bytes, int reason)
{
    sw_oom_reason why = (unsigned)reason < SW_OOM_NREASONS ? (sw_oom_reason)reason : SW_OOM_LIMIT;
    struct counters *c = &devices[dev];
    count_refusal(dev, why);
    spw_refusal_say_pool(refusal_level(c), dev, why, bytes, atomic_load(&c->used));
}

void spw_account_note_oom(int dev)
{
    count_refusal(dev, SW_OOM_DRIVER);
}

void spw_account_publish_to(struct spw_stats_writer *w)
{
    /* Events between this copy and the store below go to neither: the
     * publisher attaches before the first allocation it needs to see. The
     * copies are the bases of the laned counters; their lanes start at 0. */
    for (uint32_t d = 0; w && d < w->device_count && d < SW_MAX_DEVICES; d++) {
        struct counters *c = &devices[d];
        uint64_t limit, told;
        if (spw_limit_known((int)d, &limit, &told)) {
            spw_stats_set(w, d, SPW_C_LIMIT, limit);
            spw_stats_set(w, d, SPW_C_REPORTED, told);
        }
        spw_stats_set(w, d, SPW_C_IN_USE, atomic_load(&c->used));
        spw_stats_set(w, d, SPW_C_PEAK, atomic_load(&c->peak));
        spw_stats_set(w, d, SPW_C_ALLOCS, sw_lanes_sum(&c->allocs));
        spw_stats_set(w, d, SPW_C_FREES, sw_lanes_sum(&c->frees));
        spw_stats_set(w, d, SPW_C_OOMS, atomic_load(&c->ooms));
    }
    atomic_store_explicit(&stats, w, memory_order_release);
}

int spw_account_read(int dev, struct spillway_counters *out)
{
    if (!spw_account_tracks(dev))
        return -1;
    struct counters *c = counters_of(dev);
    out->limit = dev == SPILLWAY_HOST ? 0 : spw_limit(dev);
    if (out->limit == UINT64_MAX)
        out->limit = 0;
    out->used = atomic_load(&c->used);
    out->peak = atomic_load(&c->peak);
    out->allocs = sw_lanes_sum(&c->allocs);
    out->frees = sw_lanes_sum(&c->frees);
    out->ooms = atomic_load(&c->ooms);
    return 0;
}
