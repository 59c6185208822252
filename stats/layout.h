/* The stats ABI: the one fixed layout of a spillway stats segment.
 *
 * Every process running under spillway publishes one file,
 * <dir>/spillway.<uid>.<pid> (dir: the writer's SPILLWAY_STATS_DIR), mode
 * 0400 (0600 before 2026-11-30; readers take either), created O_CREAT|O_EXCL|O_NOFOLLOW, removed at normal exit; or
 * spillway.<uid>.<pid>.<pidns> when the first name is held by a live writer
 * of another pid namespace (SPW_STATS_NAME_NS_FORMAT). It holds a
 * struct spw_stats_header followed by device_count struct spw_stats_device.
 *
 * Compatibility rules: the layout of a given abi_version never changes.
 * Adding a counter, a field or changing a size means a new abi_version; a
 * reader rejects versions it does not know. All integers are the writer's
 * native byte order (readers on the same host). The writer stores `magic`
 * last (release), so a file whose magic is still zero is being initialised.
 *
 * Config that does not fit: config holds what fits of the writer's text,
 * cut after a whole "key=value\n" entry, and then the line
 * SPW_STATS_CONFIG_CUT, so that a reader can tell (and say) that entries
 * are missing; writers put the limits first so that a cut loses the least.
 * The text is all that marks it: the layout, and so abi_version, is the
 * same, and a reader without the rule shows the line as it is. (The field
 * is not made to hold everything the options can: 14 values of up to 4095
 * bytes each, and 64 devices' limits, would take ~60 KiB per segment, and
 * a new size would make every reader of this version reject every running
 * program's segment.)
 *
 * A command line that does not fit is cut the same way: cmdline holds what
 * fits of it, cut before a character (never inside a UTF-8 sequence, so at
 * most 3 bytes short of what the field holds), then SPW_STATS_CMDLINE_CUT
 * right after the last byte kept. A cut text is therefore at least
 * SPW_STATS_CMDLINE_LEN - SPW_STATS_CMDLINE_CUT_SLACK bytes long: a reader
 * takes one that ends with the mark and is that long for a cut one (a
 * short command whose last argument is the mark was not cut), and a
 * reader without the rule shows the mark as it is.
 *
 * Consistency: the text fields (cmdline, config) are guarded by
 * text_generation, a seqlock (odd while they are rewritten). Each counter is
 * a 64-bit atomic on its own cache line (no false sharing between counters
 * hot in different threads). The counters every allocation, free and launch
 * changes (SPW_STATS_LANED) are also split into SPW_STATS_LANES lanes, each on its
 * own line, that the writer's threads add to: such a counter's value is its
 * c[k].value (the base, set when the segment is attached) plus the sum of
 * its lanes, modulo 2^64. A lane alone means nothing: a free on another
 * thread than its allocation takes its lane below zero (it wraps), and the
 * sum is exact. Readers take each counter, summed, when two consecutive
 * reads agree. Counters are therefore individually exact but a snapshot is
 * not atomic across counters (in_use may briefly exceed peak).
 */
#ifndef SPILLWAY_STATS_LAYOUT_H
#define SPILLWAY_STATS_LAYOUT_H
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SPW_STATS_MAGIC        0x5441545357505331ULL /* "1SPWSTAT" little-endian */
#define SPW_STATS_ABI_VERSION  6u
#define SPW_STATS_MAX_DEVICES  64u
#define SPW_STATS_CMDLINE_LEN  1024u
#define SPW_STATS_CONFIG_LEN   2048u
#define SPW_STATS_CONFIG_CUT   "...(truncated)\n" /* last line of a config that did not fit */
#define SPW_STATS_CMDLINE_CUT  "...(truncated)"   /* end of a command line that did not fit */
#define SPW_STATS_CMDLINE_CUT_SLACK 4u /* a cut cmdline is at least SPW_STATS_CMDLINE_LEN - this long */
#define SPW_STATS_CACHELINE    64u
#define SPW_STATS_LANES        16u /* per laned counter; a power of two */
#define SPW_STATS_NAME_PREFIX  "spillway."
/* A segment's file name, from (unsigned) uid and (int) pid: the uid is the
 * writer's effective one, geteuid(), the owner of the file it creates
 * (what readers check), not getuid(). */
#define SPW_STATS_NAME_FORMAT  SPW_STATS_NAME_PREFIX "%u.%d"
/* The same, with the inode of the writer's pid namespace (unsigned long
 * long) added: pids repeat across namespaces sharing a directory (every
 * pod's program is pid 1, and pods on a node share the node's directory),
 * so a writer whose first name belongs to another namespace's live writer
 * takes this one. */
#define SPW_STATS_NAME_NS_FORMAT SPW_STATS_NAME_FORMAT ".%llu"
/* Initialisation takes microseconds: a segment file still unpublished this
 * many seconds after it was made belongs to a writer killed meanwhile (a
 * reader removes it, a writer wanting its name replaces it); a younger one
 * belongs to a writer still initialising, and is left alone. */
#define SPW_STATS_INIT_GRACE_S 60

/* The per-device counters, in layout order. Columns: enum suffix, exported
 * name (JSON keys, Prometheus metric names), kind (GAUGE: a level the writer
 * adds to and subtracts from or sets; COUNTER: only grows), help text. */
#define SPW_STATS_COUNTERS(X)                                                              \
    X(LIMIT,          limit_bytes,          GAUGE,   "device memory limit of the pool")    \
    X(REPORTED,       reported_bytes,       GAUGE,   "device memory the program is told it has (cuMemGetInfo, cuDeviceTotalMem): the limit x SPILLWAY_OVERSUBSCRIBE") \
    X(POOL,           pool_bytes,           GAUGE,   "device memory held by the pool")     \
    X(IN_USE,         in_use_bytes,         GAUGE,   "bytes allocated by the program")     \
    X(PEAK,           peak_bytes,           GAUGE,   "highest in_use_bytes seen")          \
    X(SPILLED,        spilled_bytes,        GAUGE,   "allocated bytes now living in host memory") \
    X(HOST,           host_bytes,           GAUGE,   "pinned host memory held for spill")  \
    X(ALLOCS,         allocs,               COUNTER, "allocations served")                 \
    X(FREES,          frees,                COUNTER, "frees served")                       \
    X(OOMS,           ooms,                 COUNTER, "allocations answered out-of-memory") \
    X(OOM_LIMIT,      oom_limit,            COUNTER, "refusals: no device memory left within the limit (oversubscribed: within what the program is told)") \
    X(OOM_HOST_LIMIT, oom_host_limit,       COUNTER, "refusals: spill found no pinned host memory within SPILLWAY_HOST_LIMIT") \
    X(OOM_ADDRESS,    oom_address_space,    COUNTER, "refusals: the driver refused more virtual address space") \
    X(OOM_TOO_LARGE,  oom_too_large,        COUNTER, "refusals: one allocation larger than the limit (with spill: than the limit and host limit)") \
    X(OOM_DRIVER,     oom_driver,           COUNTER, "refusals: the driver itself had no memory to give") \
    X(SPILL_BYTES,    spill_bytes,          COUNTER, "bytes moved device to host by spill") \
    X(SPILL_EVENTS,   spill_events,         COUNTER, "spill operations")                   \
    X(FILL_BYTES,     fill_bytes,           COUNTER, "bytes moved host to device by fill") \
    X(FILL_EVENTS,    fill_events,          COUNTER, "fill operations")                    \
    X(SYNCS,          syncs,                COUNTER, "device syncs the pool made (releasing frees, before moves)") \
    X(STALL_NS,       stall_ns,             COUNTER, "time submissions were held back while pages moved, in nanoseconds") \
    X(SPILL_NS,       spill_ns,             COUNTER, "time spent moving pages to the host (copies, remaps, grants), in nanoseconds: spill_bytes over it is the effective bandwidth") \
    X(FILL_NS,        fill_ns,              COUNTER, "time spent moving pages back to the device, in nanoseconds: fill_bytes over it is the effective bandwidth") \
    X(HOST_WAITS,     host_page_waits,      COUNTER, "pinned host pages created while an allocation or spill waited (the reserve was empty)") \
    X(FAULTED,        faulted_bytes,        GAUGE,   "device memory out of the pool after the driver refused a move's calls (lost, or stranded until the driver lets it go): held, counted against the limit") \
    X(WAIT_TIMEOUTS,  wait_timeouts,        COUNTER, "waits for the device (its work gate, its sync) that ran past their deadline: the device stayed busy and the caller went on without it") \
    X(BACKOFFS,       backoffs,             COUNTER, "allocations and fills that did not wait for a device still overdue from a timed-out wait: host pages, or the data left where it was") \
    X(SPILL_FAULTS,   spill_faults,         COUNTER, "spills the driver refused a step of (the move undone, no byte lost): the allocation got host pages instead") \
    X(COPY_HTOD,      copy_htod_bytes,      COUNTER, "bytes the program copied host to device") \
    X(COPY_DTOH,      copy_dtoh_bytes,      COUNTER, "bytes the program copied device to host") \
    X(COPY_DTOD,      copy_dtod_bytes,      COUNTER, "bytes the program copied device to device") \
    X(LAUNCHES,       launches,             COUNTER, "kernel launches the driver accepted (cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel, from the runtime too), counted on the device of its stream (the current context's for the NULL, legacy and per-thread streams): fewer than the program made means some bypass spillway's work gate") \
    X(GRAPH_LAUNCHES, graph_launches,       COUNTER, "graph launches the driver accepted (cuGraphLaunch), counted as launches are") \
    X(PASS_IPC,       passthrough_ipc_bytes,     GAUGE, "bytes allocated outside the pool: IPC/shareable") \
    X(PASS_MANAGED,   passthrough_managed_bytes, GAUGE, "bytes allocated outside the pool: managed") \
    X(PASS_CAPTURE,   passthrough_capture_bytes, GAUGE, "bytes allocated outside the pool: stream capture") \
    X(PASS_OTHER,     passthrough_other_bytes,   GAUGE, "bytes allocated outside the pool: other") \
    X(UNDERFLOWS,     underflows,           COUNTER, "subtractions that would have gone below zero (a bug)")

enum spw_counter {
#define SPW_X(e, n, k, h) SPW_C_##e,
    SPW_STATS_COUNTERS(SPW_X)
#undef SPW_X
    SPW_C_COUNT
};

/* The counters every allocation, free and launch changes, from every thread
 * that allocates or launches: one shared line each made those threads take
 * the line from one another (issue 14 item 6), so they are laned (see
 * Consistency above). The one list of them: the writer, the readers, the
 * docs and the tests derive from it. peak_bytes is not here: it is written
 * only when it grows. */
#define SPW_STATS_LANED(X) X(IN_USE) X(ALLOCS) X(FREES) X(LAUNCHES) X(GRAPH_LAUNCHES)

enum spw_laned {
#define SPW_X(e) SPW_L_##e,
    SPW_STATS_LANED(SPW_X)
#undef SPW_X
    SPW_L_COUNT
};

/* One counter per cache line: the shim updates different counters from
 * different threads; sharing lines would make every update a miss. */
struct spw_stats_counter {
    _Atomic uint64_t value;
    uint8_t pad[SPW_STATS_CACHELINE - sizeof(uint64_t)];
};

/* c[k] of a laned counter holds its base; lane[l] its lanes, in
 * SPW_STATS_LANED order. */
struct spw_stats_device {
    struct spw_stats_counter c[SPW_C_COUNT];
    struct spw_stats_counter lane[SPW_L_COUNT][SPW_STATS_LANES];
};

struct spw_stats_header {
    _Atomic uint64_t magic;     /* SPW_STATS_MAGIC, stored last by the writer */
    uint32_t abi_version;       /* SPW_STATS_ABI_VERSION */
    uint32_t header_size;       /* sizeof(struct spw_stats_header) */
    uint64_t total_size;        /* header_size + device_count * device_size */
    uint32_t device_count;      /* 1..SPW_STATS_MAX_DEVICES */
    uint32_t device_size;       /* sizeof(struct spw_stats_device) */
    uint32_t counter_count;     /* SPW_C_COUNT */
    uint32_t uid;               /* effective uid of the writer (geteuid): must equal the file owner */
    int32_t pid;                /* getpid() in the writer's pid namespace */
    int32_t host_pid;           /* first NSpid entry the writer saw (outermost visible); == pid when not nested */
    uint64_t pid_ns;            /* inode of /proc/self/ns/pid, 0 if unknown */
    uint64_t start_time;        /* /proc/self/stat starttime (clock ticks since boot): dead-owner detection */
    uint64_t created_unix_ns;   /* CLOCK_REALTIME at creation */
    _Atomic uint64_t text_generation; /* seqlock over cmdline and config: odd while writing */
    uint8_t reserved[48];       /* zero */
    char cmdline[SPW_STATS_CMDLINE_LEN]; /* arguments joined by spaces, NUL-terminated */
    char config[SPW_STATS_CONFIG_LEN];   /* effective config, "key=value\n" lines, NUL-terminated */
};

_Static_assert(sizeof(_Atomic uint64_t) == 8, "atomic u64 must be 8 bytes");
_Static_assert(sizeof(struct spw_stats_counter) == SPW_STATS_CACHELINE, "counter is one line");
_Static_assert(sizeof(struct spw_stats_header) % SPW_STATS_CACHELINE == 0, "header is whole lines");
/* The header is the same since v1; v2 added per-device counters, v3
 * reported_bytes (SPILLWAY_OVERSUBSCRIBE), v4 the lanes after each device's
 * counters (in_use_bytes, allocs, frees: SPW_STATS_LANED), so that threads
 * allocating at once write lines of their own; a v3 reader would take the
 * bases alone for these counters, hence the new version. v5 added launches
 * and graph_launches, laned. */
_Static_assert(offsetof(struct spw_stats_header, cmdline) == 128, "ABI v5 header layout");
_Static_assert(sizeof(struct spw_stats_header) == 128 + SPW_STATS_CMDLINE_LEN + SPW_STATS_CONFIG_LEN,
               "ABI v5 header size");
_Static_assert((SPW_STATS_LANES & (SPW_STATS_LANES - 1)) == 0, "lanes: a power of two");
_Static_assert(offsetof(struct spw_stats_device, lane) == SPW_C_COUNT * SPW_STATS_CACHELINE,
               "ABI v5: the lanes follow the counters");
_Static_assert(sizeof(struct spw_stats_device) ==
                   (SPW_C_COUNT + SPW_L_COUNT * SPW_STATS_LANES) * SPW_STATS_CACHELINE,
               "ABI v5 device size: whole lines, no padding");

/* The lane group of counter k, or -1 when k is a single atomic. */
static inline int spw_stats_laned(enum spw_counter k)
{
    switch (k) {
#define SPW_X(e)                                                                                   \
    case SPW_C_##e:                                                                                \
        return SPW_L_##e;
        SPW_STATS_LANED(SPW_X)
#undef SPW_X
    default:
        return -1;
    }
}

static inline uint64_t spw_stats_total_size(uint32_t device_count)
{
    return sizeof(struct spw_stats_header) + (uint64_t)device_count * sizeof(struct spw_stats_device);
}

/* Byte offset of device d's counters from the start of the segment. */
static inline size_t spw_stats_device_offset(uint32_t d)
{
    return sizeof(struct spw_stats_header) + (size_t)d * sizeof(struct spw_stats_device);
}

/* Byte offset of counter k of device d from the start of the segment (for
 * a laned counter: its base). */
static inline size_t spw_stats_counter_offset(uint32_t d, enum spw_counter k)
{
    return spw_stats_device_offset(d) + offsetof(struct spw_stats_device, c) +
           (size_t)k * sizeof(struct spw_stats_counter);
}

/* Byte offset of lane i of the laned counter l of device d. */
static inline size_t spw_stats_lane_offset(uint32_t d, enum spw_laned l, unsigned i)
{
    return spw_stats_device_offset(d) + offsetof(struct spw_stats_device, lane) +
           ((size_t)l * SPW_STATS_LANES + i) * sizeof(struct spw_stats_counter);
}

/* The value of counter k in a copy of one device's bytes (dev: at least
 * sizeof(struct spw_stats_device) readable bytes, any alignment): the base,
 * plus the lanes of a laned counter. For readers, which never map a
 * segment; the writer reads its own with spw_stats_get. */
static inline uint64_t spw_stats_device_value(const void *dev, enum spw_counter k)
{
    const unsigned char *b = dev;
    uint64_t v, lane;
    memcpy(&v, b + offsetof(struct spw_stats_device, c) + (size_t)k * SPW_STATS_CACHELINE, sizeof v);
    int l = spw_stats_laned(k);
    for (unsigned i = 0; l >= 0 && i < SPW_STATS_LANES; i++) {
        memcpy(&lane, b + offsetof(struct spw_stats_device, lane) +
                          ((size_t)l * SPW_STATS_LANES + i) * SPW_STATS_CACHELINE,
               sizeof lane);
        v += lane; /* modulo 2^64: a lane below zero has wrapped */
    }
    return v;
}
#endif
