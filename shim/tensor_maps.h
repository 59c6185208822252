/* TMA descriptors (CUtensorMap) the program made on the host, so that a
 * launch that passes one is seen to use the memory it names.
 *
 * Hopper's GEMMs (cuBLAS/cuBLASLt sm90 kernels, CUTLASS 3.x,
 * FlashAttention-3, Triton's TMA kernels) reach their operands through a
 * 128-byte descriptor made by cuTensorMapEncode* and passed by value as a
 * __grid_constant__ parameter, often inside a larger Params struct. Its
 * layout is opaque: the global address need not appear in it as an
 * 8-byte word, so param_scan.c's word scan may not find it, and a weight
 * used only through TMA would look cold (spilled first, then read over
 * the bus by every GEMM, never filled back). tensor_map_hooks.c records
 * each descriptor the driver made, with its address, here; param_scan.c
 * looks up the 128-byte windows of a launch's large arguments.
 *
 * The table (tensor_maps.c) is fixed and direct-mapped: a slot per hash of
 * the descriptor's words, the newest record winning its slot. A
 * descriptor pushed out by another is no longer seen: its launches touch
 * and fill nothing (its data still works wherever it lives), as for a
 * pointer a kernel finds in device memory. Readers take no lock. */
#ifndef SPILLWAY_SHIM_TENSOR_MAPS_H
#define SPILLWAY_SHIM_TENSOR_MAPS_H
#include <cuda.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

enum {
    SPW_TENSOR_MAP_BYTES = 128, /* sizeof(CUtensorMap) */
    /* Where one may start in an argument layout: CUtensorMap is
     * alignas(64) in cuda.h before CUDA 13.0, alignas(128) since, and a
     * struct member keeps its alignment. */
    SPW_TENSOR_MAP_ALIGN = 64,
};

/* Set once the first descriptor is recorded: until then a launch's scan
 * costs one relaxed load for descriptors. */
extern _Atomic bool spw_tensor_maps_seen;

static inline bool spw_tensor_maps_any(void)
{
    return atomic_load_explicit(&spw_tensor_maps_seen, memory_order_relaxed);
}

/* The driver made (or changed) the descriptor at map, 128 bytes it wrote,
 * naming address. Called only after the driver's success: map is then
 * readable. */
void spw_tensor_map_record(const void *map, CUdeviceptr address);

/* Whether the 128 bytes at window (any alignment) are a recorded
 * descriptor: then its address is in *address. A descriptor being
 * recorded at the same time may be missed (a miss costs heat only). */
bool spw_tensor_map_find(const void *window, CUdeviceptr *address);

/* The slot the descriptor at map goes to (for tests that make two share
 * one). */
unsigned spw_tensor_map_slot(const void *map);

/* Descriptors recorded since the process began (spillway_tensor_maps). */
size_t spw_tensor_maps_recorded(void);
#endif
