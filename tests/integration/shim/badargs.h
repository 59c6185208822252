/* What the bad-argument probe's cases (badargs_*.c) share with its main
 * (badargs.c): every hooked symbol looked up by name, report and the TRY
 * macros that print a case, and the objects setup() makes for the cases
 * to name. */
#ifndef SPILLWAY_TESTS_BADARGS_H
#define SPILLWAY_TESTS_BADARGS_H
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "shim/hooks.h"
#include "tests/fakecuda/fakecuda.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

/* p_<symbol> (and p_<symbol>_pt, its per-thread variant): the exported
 * symbol, NULL when the driver does not export it (badargs.c). */
#define SPW_HOOK(base, symbol, version, handler, pt) \
    extern __typeof__(symbol) *p_##symbol;           \
    SPW_PT_IF_##pt(extern __typeof__(symbol) *p_##symbol##_pt;)
#include "shim/hooks.def"
#undef SPW_HOOK

/* Prints "base/symbol/tag code", then stops the probe (exit 3) when the
 * case left the context unusable. */
void report(const char *base, const char *sym, const char *tag, int code);

#define ABSENT (-1)
/* One call of the exported symbol sym. */
#define TRY(base, tag, sym, ...) report(#base, #sym, tag, p_##sym ? (int)p_##sym(__VA_ARGS__) : ABSENT)
/* The same call of sym and of its per-thread variant. */
#define TRY_PT(base, tag, sym, ...)                                                              \
    do {                                                                                         \
        report(#base, #sym, tag, p_##sym ? (int)p_##sym(__VA_ARGS__) : ABSENT);                 \
        report(#base, #sym "+pt", tag, p_##sym##_pt ? (int)p_##sym##_pt(__VA_ARGS__) : ABSENT); \
    } while (0)

/* A call that must succeed, for what a case needs: the probe stops (exit
 * 2) when it does not. */
#define OK(call)                                                          \
    do {                                                                  \
        CUresult r_ = (call);                                             \
        if (r_ != CUDA_SUCCESS) {                                         \
            printf("setup: %s: %d\n", #call, (int)r_);                    \
            exit(2);                                                      \
        }                                                                 \
    } while (0)

/* ---- what the cases use (made by setup(), badargs.c) ----------------------- */

#define MiB (1ull << 20)
#define HUGE_SIZE ((size_t)1 << 62)
extern CUcontext ctx; /* NULL until the cases that need a context */
extern const CUdeviceptr bad;      /* never the driver's */
extern CUstream const bad_stream;
extern CUdeviceptr dptr, gap, inner; /* 1 MiB live; 1 MiB freed after it; dptr + 256 */
extern CUdeviceptr next_to;          /* 1 MiB live, after dptr: what an overrun would hit */
extern CUstream stream;
extern CUarray array;                /* 64 x 64 bytes */
extern CUgraph graph;                /* empty */
extern CUgraphExec gexec;
extern CUfunction noop_fn, ptr_fn;   /* no parameters; one pointer */
extern CUmemoryPool pool;
extern void *pinned;
extern char host[4 * MiB];
/* A handle the driver never gave: readable memory, since a driver may read
 * a handle before it rejects it (fakecuda's modules carry a magic). */
extern char not_a_handle[256];
#define BAD_HANDLE ((void *)not_a_handle)

/* An address freed just now, for each case that names freed memory. */
CUdeviceptr just_freed(void);

/* ---- the cases, by API family, in the order main runs them ------------------ */

void no_context(void);       /* badargs_contexts.c */
void get_proc_address(void); /* badargs_contexts.c */
void device_memory(void);    /* badargs_memory.c */
void stream_ordered(void);   /* badargs_memory.c */
void vmm(void);              /* badargs_vmm.c */
void pointers(void);         /* badargs_memory.c */
void captures(void);         /* badargs_streams.c */
void contexts(void);         /* badargs_contexts.c */
void copies(void);           /* badargs_copies.c */
void sets(void);             /* badargs_copies.c */
void copies_2d(void);        /* badargs_copies.c */
void batch_copies(void);     /* badargs_copies.c */
void stream_memops(void);    /* badargs_streams.c */
void launches(void);         /* badargs_launches.c */
void tensor_maps(void);      /* badargs_launches.c */
void graphs(void);           /* badargs_graphs.c */
void graph_nodes(void);      /* badargs_graphs.c */
void memop_nodes(void);      /* badargs_graphs.c */
void arrays(void);           /* badargs_memory.c */
void host_memory(void);      /* badargs_memory.c */
void sizes(void);            /* badargs_memory.c */
#endif
