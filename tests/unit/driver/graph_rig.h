/* What the driver graph suite (test_graph.c, graph_executable.c and
 * graph_children.c) shares: the fixture and its kernels and flag, a kernel node's
 * parameters, and a captured graph. */
#ifndef SPILLWAY_TESTS_DRIVER_GRAPH_RIG_H
#define SPILLWAY_TESTS_DRIVER_GRAPH_RIG_H
#include "tests/unit/driver/common.h"

extern struct test_kernels k; /* setup's */
extern struct flag f;         /* setup's */

/* The suite's fixture: driver_setup, the kernels loaded, a flag made. */
void setup(void);

/* A kernel node's parameters for fill/add over n words. */
struct kargs {
    CUdeviceptr p;
    unsigned v;
    unsigned long long n;
    void *args[3];
};

CUDA_KERNEL_NODE_PARAMS kernel_params(CUfunction fn, struct kargs *a, CUdeviceptr p, unsigned v,
                                      unsigned long long n);
/* Captures fill(v) then add(1) on s. */
CUgraph capture_fill_add(CUstream s, CUdeviceptr p, unsigned v);

/* The suite's checks beyond test_graph.c's, each file's added to tc in its
 * order. */
void graph_executable_tests(TCase *tc); /* graph_executable.c */
void graph_children_tests(TCase *tc);   /* graph_children.c */
#endif
