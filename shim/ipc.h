/* Legacy CUDA IPC of pool memory (cuIpcGetMemHandle, cuIpcOpenMemHandle,
 * cuIpcCloseMemHandle): pool memory is VMM memory, which the driver's
 * legacy IPC refuses, so spillway hands out handles of its own and passes
 * the pages' file descriptors itself (docs/design.md, "Legacy IPC").
 *
 * ipc.c: the hooks, the handle's bytes and the importer's mappings.
 * ipc_server.c: the exporter's socket (one detached thread serving an
 * abstract unix socket) and the importer's request to it. */
#ifndef SPILLWAY_SHIM_IPC_H
#define SPILLWAY_SHIM_IPC_H
#include <cuda.h>
#include <stdint.h>

/* What a spillway handle holds (CUipcMemHandle.reserved, 64 bytes): the
 * magic "SPWIPC" and version 1, then the exporter's socket token, its
 * secret, the allocation's BUFFER_ID, base and size. */
typedef struct spw_ipc_handle {
    uint64_t token, secret, buffer, base, size;
} spw_ipc_handle;

/* The answer of an exporter: a CUresult, its device's UUID, its page size,
 * the span's page count and the offset of base in its first page. */
typedef struct spw_ipc_reply {
    int32_t status;
    uint32_t pad;
    unsigned char uuid[16];
    uint64_t page, npages, offset;
} spw_ipc_reply;

/* The exporter: the allocation with this BUFFER_ID is served from now on
 * (only exported allocations are); starts the server on first use (token,
 * secret: this process's). CUDA_ERROR_OPERATING_SYSTEM when the socket or
 * the thread cannot be made. */
CUresult spw_ipc_serve(uint64_t buffer, uint64_t *token, uint64_t *secret);
/* This process's token, 0 until it serves. */
uint64_t spw_ipc_own_token(void);
/* Descriptors a message carries at most (SCM_MAX_FD). */
#define SPW_IPC_FDS_PER_MSG 253
/* The importer: asks the exporter named by h for the allocation; the
 * connection (the caller closes it) once the reply (in *rep) is a success
 * describing a span the handle's allocation can have, else -1 with the
 * error in *r: INVALID_VALUE when the exporter is gone, refuses the
 * secret, answers nonsense or the allocation was freed. Every wait is
 * bounded (seconds), whatever the peer does. */
int spw_ipc_ask(const spw_ipc_handle *h, spw_ipc_reply *rep, CUresult *r);
/* The next message's page descriptors, at most max of them into fds (the
 * caller closes them); 0 when the exporter stopped short (the allocation
 * freed meanwhile, or it is gone). */
size_t spw_ipc_next_fds(int s, int *fds, size_t max);
#endif
