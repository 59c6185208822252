/* A stand-in for a program under the shim: publishes known counters through
 * the writer API, prints "ready <segment path>", then keeps running until
 * SIGTERM/SIGINT (normal exit: the segment is removed) or 120 s pass.
 *
 *   stats_writer [--cmd TEXT] [--config TEXT] [--inuse BYTES] [--ramp]
 *
 * Device 0: limit 8 GiB, pool 8 GiB, three allocations of inuse/2 and one
 * free (in use = inuse, peak = 1.5 x inuse), 512 MiB spilled out in two
 * spills and one fill of 256 MiB (spilled = 256 MiB), host 1 GiB, one OOM,
 * copies H2D 1000 / D2H 2000 / D2D 3000, five launches and two graph
 * launches (each in a lane of its own), pass-through IPC 4096.
 * Device 1: limit 4 GiB, one allocation of 100 MiB. The allocations are
 * counted in lanes 0-2 and the free in lane 3, as threads of a program
 * would (lane 3 goes below zero): the tools must show the sums.
 * --ramp then keeps allocating and freeing, spilling and filling, and
 * launching, every 20 ms so that rates and history graphs move. */
#include "stats/writer.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MiB (1ull << 20)
#define GiB (1ull << 30)

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

/* What the shim keeps itself and passes to the writer: device 0's bytes. */
static uint64_t held;

static void publish_known(struct spw_stats_writer *w, uint64_t inuse)
{
    spw_stats_set(w, 0, SPW_C_LIMIT, 8 * GiB);
    spw_stats_set(w, 0, SPW_C_POOL, 8 * GiB);
    for (unsigned i = 0; i < 3; i++) {
        held += inuse / 2;
        spw_stats_alloc(w, 0, i, inuse / 2, held);
    }
    held -= inuse / 2;
    spw_stats_free(w, 0, 3, inuse / 2);
    spw_stats_spill(w, 0, 256 * MiB);
    spw_stats_spill(w, 0, 256 * MiB);
    spw_stats_fill(w, 0, 256 * MiB);
    spw_stats_set(w, 0, SPW_C_HOST, 1 * GiB);
    spw_stats_add(w, 0, SPW_C_OOMS, 1);
    spw_stats_add(w, 0, SPW_C_COPY_HTOD, 1000);
    spw_stats_add(w, 0, SPW_C_COPY_DTOH, 2000);
    spw_stats_add(w, 0, SPW_C_COPY_DTOD, 3000);
    spw_stats_add(w, 0, SPW_C_PASS_IPC, 4096);
    spw_stats_add(w, 0, SPW_C_WAIT_TIMEOUTS, 2); /* a device that stayed busy */
    spw_stats_add(w, 0, SPW_C_BACKOFFS, 7);
    spw_stats_add(w, 0, SPW_C_SPILL_FAULTS, 1);
    spw_stats_set(w, 0, SPW_C_FAULTED, 2 * MiB);
    for (unsigned i = 0; i < 5; i++) /* in lanes of their own: the readers sum them */
        spw_stats_launch(w, 0, i * 3, 0);
    spw_stats_launch(w, 0, 1, 1);
    spw_stats_launch(w, 0, 7, 1);
    spw_stats_set(w, 1, SPW_C_LIMIT, 4 * GiB);
    spw_stats_alloc(w, 1, 0, 100 * MiB, 100 * MiB);
}

static void ramp_step(struct spw_stats_writer *w, unsigned step)
{
    /* A saw tooth of 64 MiB steps, and some spill/fill traffic. */
    if (step % 64 < 32) {
        held += 64 * MiB;
        spw_stats_alloc(w, 0, step, 64 * MiB, held);
    } else {
        held -= 64 * MiB;
        spw_stats_free(w, 0, step + 1, 64 * MiB);
    }
    if (step % 4 == 0)
        spw_stats_spill(w, 0, 16 * MiB);
    if (step % 8 == 0)
        spw_stats_fill(w, 0, 16 * MiB);
    for (unsigned i = 0; i < 10; i++) /* ~500 launches a second */
        spw_stats_launch(w, 0, step + i, 0);
}

int main(int argc, char **argv)
{
    const char *cmd = NULL, *config = "mem_limit=8G\nspill=1\n";
    uint64_t inuse = 2 * GiB;
    int ramp = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--cmd") == 0 && i + 1 < argc)
            cmd = argv[++i];
        else if (strcmp(argv[i], "--inuse") == 0 && i + 1 < argc)
            inuse = strtoull(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            config = argv[++i];
        else if (strcmp(argv[i], "--ramp") == 0)
            ramp = 1;
        else {
            fprintf(stderr, "stats_writer: bad argument '%s'\n", argv[i]);
            return 2;
        }
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    /* Where the scripts' spillway-top looks (lib.sh sets it). */
    struct spw_stats_params p = {.dir = getenv("SPILLWAY_STATS_DIR"), .device_count = 2, .cmdline = cmd,
                                 .config = config};
    struct spw_stats_writer *w;
    char err[256];
    if (spw_stats_open(&w, &p, err, sizeof err) != 0) {
        fprintf(stderr, "stats_writer: %s\n", err);
        return 1;
    }
    publish_known(w, inuse);
    printf("ready %s\n", spw_stats_path(w));
    fflush(stdout);
    struct timespec tick = {0, 20 * 1000 * 1000};
    for (unsigned step = 0; !stop && step < 120 * 50; step++) {
        nanosleep(&tick, NULL);
        if (ramp)
            ramp_step(w, step);
    }
    return 0; /* exit() runs the writer's atexit hook: the segment goes */
}
