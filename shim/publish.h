/* The process's stats segment (stats/writer.h): opened when the program
 * first allocates, then fed by account.c. */
#ifndef SPILLWAY_SHIM_PUBLISH_H
#define SPILLWAY_SHIM_PUBLISH_H

/* Opens the segment the first time it can (the driver knows its devices),
 * unless SPILLWAY_STATS=0. Cheap after that: one atomic load. */
void spw_publish_ensure(void);
/* Whether the segment is open, or never will be: what is published from
 * now on reaches all the readers there will be. */
int spw_publish_settled(void);
#endif
