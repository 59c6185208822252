/* Which side of a program's copy a pointer is on (host or device) and which
 * device it belongs to, for the stats' copy bytes by direction. Asked after
 * every successful copy, so it must cost next to nothing: no lock, no
 * syscall, and a driver call only where spillway's own bookkeeping cannot
 * answer (see copy_side.c). */
#ifndef SPILLWAY_SHIM_COPY_SIDE_H
#define SPILLWAY_SHIM_COPY_SIDE_H
#include <cuda.h>
#include <stddef.h>

/* Whether ptr is device memory, for a copy that does not say (cuMemcpy,
 * cudaMemcpyDefault): 1 with *dev its device, or -1 when only the current
 * context can tell; 0 for host memory. */
int spw_side_is_device(CUdeviceptr ptr, int *dev);

/* The device a copy is charged to when its pointers did not tell: the only
 * device, else the current context's; -1 when there is none. */
int spw_side_fallback_device(void);
#endif
