/* What the writer's suite (test_segment.c and segment_*.c) shares: the
 * test directory (segdir.h, one for all its files), a writer opened in it,
 * this process's segment read back, files planted beside it, and a clock.
 * Every helper fails the running test (ck_assert) rather than return an
 * error. */
#ifndef SPILLWAY_TEST_WRITER_RIG_H
#define SPILLWAY_TEST_WRITER_RIG_H
#include "tests/unit/check_compat.h"
#define SEGDIR_SHARED
#include "tests/unit/stats/segdir.h"
#include "stats/reader.h"
#include "stats/writer.h"

#include <stdint.h>
#include <sys/types.h>

/* A writer of ndev devices in segdir, with that command line and config. */
struct spw_stats_writer *open_writer_cmd(uint32_t ndev, const char *cmdline, const char *config);
/* The same with a command line of its own. */
struct spw_stats_writer *open_writer(uint32_t ndev, const char *config);
/* This process's segment, as the reader gives it. */
void read_own(struct spw_stats_snapshot *s);
/* CLOCK_MONOTONIC in ns. */
double now_ns(void);
/* A file segdir/name holding len bytes of data, with that mode. */
void plant(const char *name, const void *data, size_t len, mode_t mode);
/* w published under name qualified by our pid namespace, and the file at
 * name, someone else's, is still there with its len bytes. */
void expect_qualified(const struct spw_stats_writer *w, const char *name, size_t len);

/* The suite's tests beyond test_segment.c's, each file's added to tc in
 * its order. */
void segment_thread_tests(TCase *tc);  /* segment_threads.c */
void segment_removal_tests(TCase *tc); /* segment_removal.c */
void segment_name_tests(TCase *tc);    /* segment_names.c */
#endif
