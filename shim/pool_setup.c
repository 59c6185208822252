/* Owner of the process's sw_policy and of each device's pool state: the
 * shim's setting up of policy/'s page pool (policy/pool.c), device by
 * device, on first use. */
#include "shim/pool_setup.h"

#include "shim/account.h"
#include "shim/backend.h"
#include "shim/config.h"
#include "shim/driver.h"
#include "shim/limits.h"
#include "shim/log.h"
#include "shim/publish.h"
#include "shim/size_text.h"

#include <pthread.h>
#include <stdlib.h>
#include <stdatomic.h>

sw_policy *_Atomic spw_pool_spilling;

enum { DEV_UNKNOWN = 0, DEV_POOL = 1, DEV_PASS = 2 };

static sw_policy *_Atomic policy;
static _Atomic int state[SW_MAX_DEVICES];
/* Devices whose pool spills (SPILLWAY_SPILL), set before state says POOL. */
static _Atomic bool spills[SW_MAX_DEVICES];
/* Devices given access to each device's memory before its pool existed. */
static _Atomic uint64_t early_peers[SW_MAX_DEVICES];
/* Device set-up is rare (once per device): one lock for all of it. */
static pthread_mutex_t setup_lock = PTHREAD_MUTEX_INITIALIZER;
/* Failed set-ups per device (under setup_lock), and how many are tried. */
static int setup_tries[SW_MAX_DEVICES];
#define SETUP_TRIES 3

sw_policy *spw_pool_policy(void)
{
    return atomic_load_explicit(&policy, memory_order_acquire);
}

static sw_policy *create_policy(void)
{
    sw_policy *p = atomic_load_explicit(&policy, memory_order_relaxed);
    if (p)
        return p;
    CUresult r = sw_policy_create(spw_backend(), &p);
    if (r != CUDA_SUCCESS) {
        spw_warn("cannot create the page pool (error %d): capping bytes only", (int)r);
        return NULL;
    }
    atomic_store_explicit(&policy, p, memory_order_release);
    spw_account_set_gone_sink(spw_pool_unlend);
    return p;
}

static void apply_early_peers(sw_policy *p, int dev)
{
    uint64_t mask = atomic_load(&early_peers[dev]);
    for (int a = 0; a < SW_MAX_DEVICES; a++) {
        if (!(mask >> a & 1))
            continue;
        CUresult r = sw_grant_access(p, dev, a);
        if (r != CUDA_SUCCESS)
            spw_warn("device %d: cannot grant device %d access to the pool (error %d)", dev, a,
                     (int)r);
    }
}

/* How long a move waits for the device to quiesce before the allocation
 * takes host pages: the policy's default (0), or, for the test suites only,
 * $SPW_TEST_PATIENCE_MS. Suites whose kernels sleep a few hundred
 * milliseconds to keep work in flight across a move set it long, so that a
 * loaded machine (CI) cannot push that work past the deadline and turn an
 * expected spill into host pages. */
static uint64_t test_patience_ns(void)
{
    const char *v = getenv("SPW_TEST_PATIENCE_MS");
    char *end;
    unsigned long long ms = v ? strtoull(v, &end, 10) : 0;
    if (!v || !*v || *end || ms == 0 || ms > 600000) {
        if (v)
            spw_warn("SPW_TEST_PATIENCE_MS=%s ignored: not a number of milliseconds in 1..600000", v);
        return 0;
    }
    return ms * 1000000ull;
}

/* Under setup_lock: builds dev's pool; DEV_POOL, DEV_PASS, or DEV_UNKNOWN
 * when a failed set-up is to be tried again. */
static int set_up(int dev)
{
    const struct spw_options *o = spw_config();
    uint64_t limit = spw_limit(dev);
    char l[SPW_SIZE_TEXT_MAX];
    sw_policy *p = create_policy();
    if (limit == UINT64_MAX)
        return DEV_PASS;
    if (!p) {
        spw_limit_tell_limit(dev, "the page pool could not be made");
        return DEV_PASS;
    }
    sw_device_config cfg = {
        .limit = (size_t)limit,
        .preallocate = o->preallocate,
        .va_factor = 0,
        .sync_batch = 0,
        .quiesce_wait_ns = test_patience_ns(),
        /* Resolved with the limit, where the factor's need was checked. */
        .host_limit = (size_t)spw_limit_host(dev),
        .spill = o->spill,
    };
    char note[256];
    cfg.host_reserve = (size_t)spw_options_host_reserve(o, dev, cfg.limit, cfg.host_limit, note,
                                                        sizeof note);
    CUresult r = sw_device_init(p, dev, &cfg);
    if (r != CUDA_SUCCESS) {
        /* A driver that refused once may not refuse again (memory other
         * processes held, a transient error): the next allocations try
         * again, a few times, passing through meanwhile. Not one that
         * lacks what the pool is made of (a driver older than VMM, a
         * device without it: NOT_SUPPORTED), which said "will try again"
         * three times to no end. */
        int tried = ++setup_tries[dev];
        bool never = r == CUDA_ERROR_NOT_SUPPORTED;
        bool again = r != CUDA_ERROR_INVALID_VALUE && !never && tried < SETUP_TRIES;
        spw_warn("device %d: cannot set up the page pool for %s (error %d%s): "
                 "allocations pass through to the driver, capped%s",
                 dev, spw_size_text(l, sizeof l, limit), (int)r,
                 never ? ", the driver or device lacks virtual memory management" : "",
                 again ? "; will try again" : "");
        if (again)
            return DEV_UNKNOWN;
        spw_limit_tell_limit(dev, "memory past the limit would live in the page pool, which "
                                  "could not be set up");
        return DEV_PASS;
    }
    apply_early_peers(p, dev);
    if (note[0]) /* once the pool that pins it exists: a retried set-up says it once */
        spw_warn("%s", note);
    if (o->spill) {
        atomic_store(&spills[dev], true);
        /* Before any allocation of this pool exists: a submission that
         * could use one already sees the gate. */
        spw_account_set_spilled_source(spw_pool_spilled_bytes);
        atomic_store_explicit(&spw_pool_spilling, p, memory_order_release);
    }
    spw_info("device %d: page pool of %s: %s, %s", dev, spw_size_text(l, sizeof l, limit),
             o->preallocate ? "preallocated" : "on demand",
             o->spill ? "spills to host memory when full" : "no spill");
    return DEV_POOL;
}

sw_policy *spw_pool_for(int dev)
{
    if (dev < 0 || dev >= SW_MAX_DEVICES)
        return NULL;
    int s = atomic_load_explicit(&state[dev], memory_order_acquire);
    if (s == DEV_UNKNOWN) {
        if (spw_disabled() || !spw_driver_ready())
            return NULL;
        pthread_mutex_lock(&setup_lock);
        s = atomic_load_explicit(&state[dev], memory_order_relaxed);
        if (s == DEV_UNKNOWN) {
            s = set_up(dev);
            atomic_store_explicit(&state[dev], s, memory_order_release);
        }
        pthread_mutex_unlock(&setup_lock);
        if (s == DEV_POOL)
            spw_pool_publish(dev);
    }
    return s == DEV_POOL ? spw_pool_policy() : NULL;
}

int spw_pool_serves(int dev)
{
    return dev >= 0 && dev < SW_MAX_DEVICES &&
           atomic_load_explicit(&state[dev], memory_order_acquire) == DEV_POOL;
}

int spw_pool_pending(int dev)
{
    return dev >= 0 && dev < SW_MAX_DEVICES && !spw_disabled() &&
           atomic_load_explicit(&state[dev], memory_order_acquire) == DEV_UNKNOWN;
}

int spw_pool_spills(int dev)
{
    return dev >= 0 && dev < SW_MAX_DEVICES &&
           atomic_load_explicit(&spills[dev], memory_order_acquire);
}

uint64_t spw_pool_spilled_bytes(int dev)
{
    sw_spill_stats f;
    if (!spw_pool_spills(dev))
        return 0;
    sw_get_spill_stats(spw_pool_policy(), dev, &f); /* relaxed loads, no lock */
    return f.host_in_use_bytes;
}

void spw_pool_grant_peer(int owner, int accessor)
{
    if (owner < 0 || owner >= SW_MAX_DEVICES || accessor < 0 || accessor >= SW_MAX_DEVICES)
        return;
    /* Recorded first, under the set-up lock: a device set up concurrently
     * either sees the bit or is ready for the grant below. */
    pthread_mutex_lock(&setup_lock);
    atomic_fetch_or(&early_peers[owner], 1ull << accessor);
    int s = atomic_load(&state[owner]);
    pthread_mutex_unlock(&setup_lock);
    if (s != DEV_POOL)
        return;
    CUresult r = sw_grant_access(spw_pool_policy(), owner, accessor);
    if (r != CUDA_SUCCESS)
        spw_warn("device %d: cannot grant device %d access to the pool (error %d)", owner,
                 accessor, (int)r);
    else
        spw_debug("device %d: pool mappings now accessible from device %d", owner, accessor);
}

/* Per device, the figures generation (sw_figures_gen) last published,
 * plus one: 0 until a publication reached the segment. */
static _Atomic uint64_t published_gen[SW_MAX_DEVICES];

void spw_pool_publish(int dev)
{
    if (dev < 0 || dev >= SW_MAX_DEVICES)
        return;
    sw_policy *p = spw_pool_policy();
    /* Issue 14 item 6: the figures change at spills, fills, syncs and pool
     * growth, not at every allocation; re-reading and comparing them all
     * each time was 15% of a pair's instructions. Two publishers racing
     * may leave an older value until the next change, as before. */
    uint64_t gen = sw_figures_gen(p, dev) + 1;
    if (atomic_load_explicit(&published_gen[dev], memory_order_relaxed) == gen)
        return;
    spw_account_set_pool_bytes(dev, sw_pool_bytes(p, dev));
    /* Spill off too: the pool's syncs, waits past their deadline and
     * pages driver faults kept out are figures of every pool. */
    sw_spill_stats f;
    sw_get_spill_stats(p, dev, &f);
    spw_account_set_spill(dev, &f);
    if (spw_publish_settled())
        atomic_store_explicit(&published_gen[dev], gen, memory_order_relaxed);
}

/* The policy, created if need be: the pass-through counters and the bytes
 * lent live in it, pool or not. */
static sw_policy *policy_now(void)
{
    sw_policy *p = spw_pool_policy();
    if (!p) {
        pthread_mutex_lock(&setup_lock);
        p = create_policy();
        pthread_mutex_unlock(&setup_lock);
    }
    return p;
}

static int lends(int dev, int reason)
{
    return dev >= 0 && reason >= 0 && sw_passthrough_lends((sw_passthrough_reason)reason);
}

int spw_pool_lend(int dev, int reason, uint64_t bytes)
{
    if (!lends(dev, reason))
        return 0;
    sw_policy *p = policy_now();
    CUresult r = sw_lend(p, dev, (size_t)bytes);
    if (r == CUDA_SUCCESS) {
        spw_pool_publish(dev); /* the pages it gave back */
        return 0;
    }
    char b[SPW_SIZE_TEXT_MAX];
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        spw_account_note_pool_oom(dev, bytes, (int)SW_OOM_LIMIT);
    else
        spw_warn("device %d: the pool could not give back pages for %s outside it "
                 "(error %d): refused",
                 dev, spw_size_text(b, sizeof b, bytes), (int)r);
    return -1;
}

void spw_pool_unlend(int dev, int reason, uint64_t bytes)
{
    if (lends(dev, reason))
        sw_unlend(spw_pool_policy(), dev, (size_t)bytes);
}

void spw_pool_passthrough(int dev, sw_passthrough_reason reason, size_t bytes, const char *what)
{
    sw_policy *p = policy_now();
    if (p && dev >= 0)
        sw_count_passthrough(p, dev, reason, bytes);
    spw_debug("%s of %zu bytes on device %d passes through to the driver (%s)", what, bytes, dev,
              sw_passthrough_reason_name(reason));
}
