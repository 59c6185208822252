/* fakecuda's capture state, private to the files that keep it: capture.c
 * (the rules every other entry point asks about), capture_events.c (events
 * in a capture), capture_begin_end.c (a capture begun and ended) and
 * capture_status.c (what a stream's capture is, and its dependencies
 * changed). The rest of fakecuda reaches captures through internal.h. */
#ifndef FAKECUDA_CAPTURE_STATE_H
#define FAKECUDA_CAPTURE_STATE_H
#include "tests/fakecuda/graph.h"
#include "tests/fakecuda/internal.h"

struct capture {
    unsigned long long id;
    CUstreamCaptureMode mode;
    pthread_t thread;
    struct CUstream_st *origin;
    struct CUgraph_st *graph;
    bool user_graph;   /* cuStreamBeginCaptureToGraph: the program's graph */
    bool invalidated;
    struct capture *next;
};

/* A stream in a capture: the origin, or one forked in by an event. deps:
 * the nodes its next node depends on. */
struct member {
    struct CUstream_st *s;
    struct capture *cap;
    struct CUgraphNode_st **deps;
    CUgraphEdgeData *edata; /* all zero, as many as deps (cuStreamGetCaptureInfo_v3) */
    size_t ndeps, depcap;
    struct member *next;
};

/* An event last recorded on a capturing stream: the nodes it stands for,
 * while its capture lasts (cap NULL after). */
struct captured_event {
    CUevent e;
    struct capture *cap;
    struct CUgraphNode_st **nodes;
    size_t n;
    struct captured_event *next;
};

/* Guards all of it, and is held from fc_capture_enter to fc_capture_add. */
extern pthread_mutex_t fc_cap_lock;
extern struct capture *fc_captures;      /* the captures under way */
extern struct member *fc_cap_members;    /* the streams in them */
extern struct captured_event *fc_cap_events;
/* Counts for the fast paths: with none, no call takes the lock. */
extern _Atomic size_t fc_cap_nmembers;

/* Under lock: s's membership, or NULL. */
struct member *fc_cap_member_of(struct CUstream_st *s);
/* Under lock: m's dependencies made nodes[0..n), or those added to them
 * (each once); false when out of memory. */
bool fc_cap_set_deps(struct member *m, struct CUgraphNode_st *const *nodes, size_t n);
bool fc_cap_add_deps(struct member *m, struct CUgraphNode_st *const *nodes, size_t n);
/* Under lock: s a member of c (NULL when out of memory). */
struct member *fc_cap_member_new(struct CUstream_st *s, struct capture *c);
/* Under lock: the blocking streams of s's context that capture, for the
 * legacy stream s. invalidate: make them pay for the attempt. */
bool fc_cap_legacy_conflict(struct CUstream_st *s, bool invalidate);
/* Under lock: whether the thread's mode forbids a potentially unsafe call
 * now, invalidating the captures that forbid it. */
bool fc_cap_prohibited(void);
/* Under lock: n joins m's capture after m's dependencies and becomes them. */
CUresult fc_cap_append(struct member *m, struct CUgraphNode_st *n);
#endif
