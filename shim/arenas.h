/* The pool's arenas, every VA range the policy reserved on each device
 * (the first arena, its growth, scratch ranges): what tells a pool
 * pointer's device with a few compares and no lock. */
#ifndef SPILLWAY_SHIM_ARENAS_H
#define SPILLWAY_SHIM_ARENAS_H
#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

/* [base, base + size) is one of dev's pool ranges (backend.c, when the
 * policy reserves it), or no longer is. */
void spw_arena_note(int dev, CUdeviceptr base, size_t size);
void spw_arena_forget(CUdeviceptr base);

/* The device whose pool arena holds ptr, else -1. A few compares. */
int spw_arena_device(CUdeviceptr ptr);

/* Whether [lo, hi) meets any pool arena; lies wholly in one. */
bool spw_arena_meets(CUdeviceptr lo, CUdeviceptr hi);
bool spw_arena_holds(CUdeviceptr lo, CUdeviceptr hi);
#endif
