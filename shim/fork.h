/* fork() of a program under spillway (issue 12 item 9).
 *
 * CUDA does not survive fork. In a child that did not exec, NVIDIA's driver
 * answers CUDA_ERROR_NOT_INITIALIZED to every call, cuInit included ("CUDA
 * does not support the use of fork() after CUDA has been initialized"), and
 * everything spillway built on the driver belongs to the parent: the pool's
 * pages, VA, streams and events are the parent's driver objects; its locks
 * (the gates, class, device, handle-table, free-queue and set-up locks)
 * were copied in whatever state the parent's threads held them; its
 * threads (each device's syncer, the host-page reserve, prefill) do not
 * exist in the child.
 *
 * So spillway stands aside in such a child. The child handler of
 * pthread_atfork (one store, nothing else) marks the driver forked when
 * spillway saw it initialized in the parent (a device query it made was
 * answered: every allocation, the stats and a pool's set-up make one
 * first). From then on, in the child:
 *
 *  - every handler answers CUDA_ERROR_NOT_INITIALIZED, the driver's own
 *    answer, before it touches any of spillway's state (SPW_REAL is NULL:
 *    spw_driver_ready() says no), so no lock the parent held is waited
 *    for, no thread that is not there is asked for a sync, and nothing of
 *    the parent's pool is handed out or freed;
 *  - lookups reach the driver: cuGetProcAddress forwards and hands out the
 *    driver's own functions, dlsym passes through;
 *  - exit has nothing of spillway's to undo: spillway never tears the pool
 *    down (no driver calls at exit), and the stats segment is detached in
 *    the child and never unlinked or written by it (stats/writer.c).
 *
 * exec() replaces all of it: with LD_PRELOAD carried, the new program loads
 * spillway afresh. A fork before spillway saw the driver initialized leaves
 * the child a fresh process: it may initialize the driver itself, and
 * spillway then serves it from scratch.
 *
 * Why not a prepare handler that takes spillway's locks so that the child
 * gets them consistent: the child could still not use what they guard (the
 * driver objects and threads are the parent's), and the parent would pay
 * at every fork: a gate stays closed for a whole move and a syncer's device
 * sync can wait for work the forking thread has yet to submit, so fork
 * would stall, or deadlock against a program thread in a gate bracket that
 * waits for the forking thread. Marking the child takes no lock at all. */
#ifndef SPILLWAY_SHIM_FORK_H
#define SPILLWAY_SHIM_FORK_H
#include "shim/driver.h"
#include "shim/hooks.h"

/* Whether this process is a child forked from one whose driver spillway saw
 * initialized (driver.c). Then spw_driver_ready() answers 0. */
int spw_driver_forked(void);

/* The real function behind a lookup handler (cuGetProcAddress), also in a
 * forked child: lookups are the driver's to answer there. */
#define SPW_LOOKUP_REAL(handler) (spw_driver_forked() ? spw_real.handler : SPW_REAL(handler))
#endif
