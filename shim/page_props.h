/* How the pool's device pages are made (page_props.c): the properties
 * every one is created with, learnt once per device, and the creation that
 * falls back when the driver refuses an exportable page. What the rest of
 * the shim asks of them (spw_backend_rdma_capable, spw_backend_ipc_capable)
 * is declared in backend.h. */
#ifndef SPILLWAY_SHIM_PAGE_PROPS_H
#define SPILLWAY_SHIM_PAGE_PROPS_H
#include <cuda.h>
#include <stddef.h>

/* A device page of dev: pinned, on dev, GPUDirect RDMA capable and
 * exportable as a POSIX file descriptor where the device offers each. */
CUmemAllocationProp spw_page_prop(int dev);
/* cuMemCreate of such a page (dev's context current); an exportable page
 * the driver refuses is made again without the type, and the device stays
 * without for good (one warning). */
CUresult spw_page_create(int dev, size_t size, CUmemAllocationProp *prop, CUmemGenericAllocationHandle *h);
#endif
