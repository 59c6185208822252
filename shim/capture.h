/* Stream captures under way in the process, as the capture hooks
 * (capture.c) see them begin and end. While any is under way, the pool
 * neither synchronizes nor remaps on its own account: a device or context
 * synchronize during a capture invalidates it (and work on the legacy
 * stream while a blocking stream captures fails with
 * CUDA_ERROR_STREAM_CAPTURE_IMPLICIT). */
#ifndef SPILLWAY_SHIM_CAPTURE_H
#define SPILLWAY_SHIM_CAPTURE_H
#include <stdbool.h>

bool spw_capture_active(void);
#endif
