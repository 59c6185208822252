/* The process's stats segment (stats/writer.h): opened when the program
 * first allocates, then fed by account.c. */
#ifndef SPILLWAY_SHIM_PUBLISH_H
#define SPILLWAY_SHIM_PUBLISH_H

/* Opens the segment the first time it can (the driver knows its devices),
 * unless SPILLWAY_STATS=0. Cheap after that: one atomic load. */
void spw_publish_ensure(void);
#endif
