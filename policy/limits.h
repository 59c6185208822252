/* The most devices spillway manages in one process: the one definition,
 * used by policy/, the shim and its option parser (a header with no other
 * dependency, so that the launcher's pure-libc parser can include it). The
 * stats segment's capacity (stats/layout.h's SPW_STATS_MAX_DEVICES) is an
 * ABI constant of its own; the shim checks that it holds this many. */
#ifndef SPILLWAY_POLICY_LIMITS_H
#define SPILLWAY_POLICY_LIMITS_H
#define SW_MAX_DEVICES 64
#endif
