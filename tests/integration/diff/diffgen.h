/* diffgen: random sequences of CUDA driver operations, run on the driver
 * alone and under spillway, judged against each other (README.md).
 *
 * Every thread plans its operations from its own RNG and its own nominal
 * state (what it would hold had every allocation succeeded): the plan never
 * depends on an outcome, so the same seed gives each thread the same
 * sequence in every run, and single-threaded runs compare op by op. */
#ifndef DIFF_DIFFGEN_H
#define DIFF_DIFFGEN_H
#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "shim/spillway.h"
#include "tests/integration/diff/reasons.h"
#include "tests/integration/diff/rng.h"
#include "tests/integration/diff/shadow.h"

#define DIFF_MAX_THREADS 64
#define DIFF_MAX_STREAMS 8
#define MiB ((uint64_t)1 << 20)

enum diff_api { API_ALLOC, API_PITCH, API_ASYNC, API_POOL, API_VMM, API_COUNT };
enum diff_data { DATA_COPY, DATA_MEMSET, DATA_LAUNCH, DATA_SYNC, DATA_COUNT };
enum diff_dist { DIST_LOG, DIST_UNIFORM, DIST_FIXED };

enum diff_op {
    OP_ALLOC, OP_FREE, OP_HTOD, OP_DTOH, OP_DTOD, OP_MEMSET, OP_FILL, OP_XOR,
    OP_SYNC_STREAM, OP_SYNC_DEVICE, OP_INFO, OP_COUNT
};

struct diff_options {
    uint64_t seed;
    unsigned threads;
    uint64_t ops;            /* in all, split among the threads */
    uint64_t limit;          /* device memory: FAKECUDA_MEM alone, SPILLWAY_MEM_LIMIT under spillway */
    enum diff_dist dist;
    uint64_t min, max;       /* allocation sizes */
    double live;             /* target live bytes, fraction of the limit */
    unsigned alloc_apis;     /* bit per diff_api */
    unsigned data_apis;      /* bit per diff_data */
    unsigned streams;        /* created streams per thread (the NULL stream too) */
    double mem_frac;         /* share of operations that allocate or free */
    double cross_free;       /* share of frees by the other API than the matching one */
    double init;             /* share of allocations written whole at once */
    uint64_t op_max;         /* longest copy/memset/launch */
    uint64_t verify_window;  /* bytes read back per verification (0: all) */
    uint64_t allowance_bytes;
    double allowance_frac;   /* allowance = bytes + frac x limit */
    double page_allowance_frac; /* more for whole-page requests (cuMemCreate), x limit */
    const char *trace;       /* write the allocation outcomes here */
    const char *baseline;    /* the driver-alone run's trace to compare with */
    long expect_refusals;    /* -1: no expectation */
    uint64_t expect_hold;    /* live bytes the run must reach (0: none) */
    bool scatter;            /* the scenario of issue 11 (3): 2 MiB blocks, every other freed, 4 MiB */
    uint64_t big;            /* first, one request of this many bytes by every enabled API */
    bool reasons;            /* judge the reason of each refusal */
    uint64_t corrupt_at;     /* self-test: corrupt one byte behind the shadow's back (0: never) */
    bool stop_at_refusal;    /* the scatter/fill scenarios stop at the first refusal */
    enum diff_judge { JUDGE_ALL, JUDGE_REASONS, JUDGE_DATA } judge; /* what fails the run */
};

/* One allocation attempt, as the trace and the judge see it. */
struct diff_record {
    uint64_t op;             /* operation index in its thread */
    uint64_t size;           /* program-visible bytes asked for */
    uint64_t live_lower;     /* live bytes (all threads) when the call began */
    uint64_t live_upper;     /* most the program can have held during the call */
    uint64_t seq;            /* order of completion among all threads */
    uint32_t api;
    int32_t result;          /* CUresult */
    uint8_t stated, expected; /* diff_reason */
    uint8_t verdict;         /* enum diff_verdict */
};

struct diff_slot {
    CUdeviceptr ptr;         /* 0: the nominal allocation the driver refused */
    uint64_t size;
    uint64_t id;             /* diff_op_id of the allocation */
    CUmemGenericAllocationHandle handle;
    int api;
    int stream;              /* stream of the last work that may be pending, -1: none */
    struct diff_shadow sh;
};

struct diff_counts {
    uint64_t ops[OP_COUNT];
    uint64_t allocs[API_COUNT], refused[API_COUNT];
    uint64_t checks, bytes_verified, skipped, frees_cross;
};

struct diff_run;

struct diff_thread {
    unsigned index;
    struct diff_run *run;
    struct diff_rng rng;
    CUstream streams[DIFF_MAX_STREAMS + 1]; /* [0] the NULL stream */
    CUevent events[DIFF_MAX_STREAMS + 1];
    CUmemoryPool pool;
    struct diff_slot *slots;
    size_t nslots, cap;
    uint64_t nominal_live, target;
    uint8_t *host;           /* scratch of op_max bytes */
    struct diff_record *rec;
    size_t nrec, reccap;
    uint64_t op;
    struct diff_counts c;
    pthread_t tid;
};

struct diff_run {
    const struct diff_options *o;
    bool spillway, spill;    /* under spillway; with SPILLWAY_SPILL on */
    uint64_t host_limit;     /* SPILLWAY_HOST_LIMIT (UINT64_MAX: unlimited) */
    uint64_t allowance;
    uint64_t page_allowance; /* added for whole-page requests */
    uint64_t gran;           /* VMM granularity */
    bool fakecuda;
    CUcontext ctx;
    CUfunction k_fill, k_xor;
    _Atomic uint64_t live, alloc_total, seq;
    _Atomic uint64_t peak_live, peak_device, peak_overhead, overhead_samples;
    _Atomic uint64_t over_limit; /* device bytes seen above the limit under spillway (first) */
    _Atomic uint64_t peak_spilled;
    _Atomic int failed;      /* a thread found a mismatch or an unexpected error: all stop */
    struct diff_thread *threads;
    struct diff_reasons reasons;
    FILE *out;               /* reports (stdout: stderr may be captured for reasons) */
    double seconds;          /* the run's wall time, for the summary */
    /* spillway_get_pool_counters when under spillway (spilled bytes) */
    int (*pool_counters)(int dev, struct spillway_pool_counters *out);
};

/* "t<thread>/op<index>" packed in one word for reports and extents. */
static inline uint64_t diff_op_id(unsigned thread, uint64_t op)
{
    return (uint64_t)thread << 48 | op;
}

/* options.c */
int diff_parse_options(int argc, char **argv, struct diff_options *o);
const char *diff_api_name(int api);
const char *diff_op_name(int op);

/* exec.c: one thread's run, and the setup it needs. */
void *diff_thread_main(void *arg);
CUresult diff_thread_setup(struct diff_thread *t);
void diff_thread_teardown(struct diff_thread *t);
/* The scenarios of issue 11 run on thread 0 (scenario.c). */
void diff_run_scatter(struct diff_thread *t);
void diff_run_big(struct diff_thread *t);

/* alloc.c */
bool diff_alloc(struct diff_thread *t, int api, uint64_t size, uint64_t pitch_h, int stream,
                struct diff_slot *out, CUresult *res);
bool diff_free(struct diff_thread *t, struct diff_slot *s, bool cross, int stream);
uint64_t diff_pitch_size(uint64_t size, uint64_t h);
uint64_t diff_visible_size(const struct diff_run *r, int api, uint64_t size, uint64_t pitch_h);

/* exec.c */
bool diff_exec_alloc(struct diff_thread *t, int api, uint64_t size, uint64_t pitch_h, int stream,
                     struct diff_slot *out);
bool diff_exec_free(struct diff_thread *t, size_t i, bool cross, int stream, uint64_t pick);
bool diff_add_slot(struct diff_thread *t, const struct diff_slot *s);

/* data.c: the operations on live buffers, each mirrored in the shadow */
bool diff_htod(struct diff_thread *t, struct diff_slot *s, uint64_t off, uint64_t len, uint64_t seed,
               bool async, int stream, int variant);
bool diff_dtoh(struct diff_thread *t, struct diff_slot *s, uint64_t off, uint64_t len, bool async,
               int stream);
bool diff_dtod(struct diff_thread *t, struct diff_slot *a, uint64_t aoff, struct diff_slot *b,
               uint64_t boff, uint64_t len, bool async, int stream, int variant);
bool diff_memset(struct diff_thread *t, struct diff_slot *s, uint64_t off, uint64_t len,
                 unsigned width, uint32_t value, bool async, int stream);

/* kernels.c */
CUresult diff_kernels_load(struct diff_run *r);
bool diff_fill(struct diff_thread *t, struct diff_slot *s, uint64_t off, uint64_t len, uint64_t seed,
               int stream, int variant);
bool diff_xor(struct diff_thread *t, struct diff_slot *a, uint64_t aoff, struct diff_slot *b,
              uint64_t boff, uint64_t len, uint64_t key, int stream, int variant);

/* data.c */
bool diff_order(struct diff_thread *t, struct diff_slot *s, int stream);
bool diff_verify(struct diff_thread *t, struct diff_slot *s, uint64_t off, uint64_t len);
bool diff_verify_sampled(struct diff_thread *t, struct diff_slot *s, uint64_t pick);
void diff_fail(struct diff_thread *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool diff_cu(struct diff_thread *t, CUresult r, const char *what);

/* judge.c */
void diff_note_device(struct diff_thread *t, uint64_t device_before);
int diff_judge(struct diff_run *r);
bool diff_write_trace(struct diff_run *r, const char *path);
void diff_atomic_max(_Atomic uint64_t *v, uint64_t x);
#endif
