/* fakecuda: cuMemGetHandleForAddressRange, a dma_buf file descriptor for a
 * range of device memory, which another device (a NIC doing GPUDirect RDMA
 * through ibv_reg_dmabuf_mr) then reads and writes directly. What it
 * reaches are the physical allocations behind the range when the handle
 * was taken ("users are also expected to retrieve a new handle every time
 * the underlying physical allocation(s) ... are changed"), not the VA: a
 * range remapped since is no longer what the importer writes.
 *
 * fakecuda has no importer device: the descriptor is an empty memfd that
 * names a record of those physical pieces (a cuMemMap handle's memory
 * file at an offset, or a cuMemAlloc region's own pages, which fakecuda
 * never remaps), and fakecuda_dmabuf_access is the importer's DMA. The
 * record lives as long as the process (closing the descriptor is not
 * seen). Ranges: cuMemAlloc memory and fully mapped cuMemAddressReserve
 * ranges, page-aligned (4 KiB), every piece on one device; no host
 * allocations (CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED is 0) and
 * no BAR1 mappings (CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE: "will
 * return an error otherwise"). */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/fakecuda/fakecuda.h"
#include "tests/fakecuda/internal.h"

#define HOST_PAGE 4096
#define MAX_PIECES 64

struct piece {
    size_t len;
    unsigned char *mem; /* a cuMemAlloc region's pages, or NULL */
    int fd;             /* else a duplicate of the handle's memory file */
    size_t off;         /* where the piece starts in it */
};

struct dmabuf {
    int fd;
    size_t size;
    unsigned n;
    struct piece p[MAX_PIECES];
    struct dmabuf *next;
};

static struct dmabuf *bufs; /* under fc_lock */

/* The pieces behind [a, a + size), under fc_lock. */
static CUresult pieces(struct dmabuf *d, uintptr_t a, size_t size)
{
    int dev = -1;
    for (uintptr_t end = a + size; a < end;) {
        struct fc_region *reg = fc_region_find(a);
        if (!reg || d->n == MAX_PIECES)
            return CUDA_ERROR_INVALID_VALUE;
        struct piece *p = &d->p[d->n];
        int on;
        size_t reach;
        if (reg->kind == FC_DEVICE) {
            on = reg->dev;
            reach = fc_page_round(reg->size); /* its pages, to the last one's end */
            p->mem = (unsigned char *)a;
            p->fd = -1;
        } else if (reg->kind == FC_VMM && reg->handle && reg->handle->fd >= 0 &&
                   reg->handle->prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
            on = reg->handle->prop.location.id;
            reach = reg->size;
            p->mem = NULL;
            p->off = a - reg->base;
            p->fd = -2; /* duplicated below, once the range is known good */
        } else {
            return CUDA_ERROR_INVALID_VALUE; /* host, managed, stream-ordered, unmapped */
        }
        if ((dev >= 0 && on != dev) || a - reg->base >= reach)
            return CUDA_ERROR_INVALID_VALUE; /* "resident on the same device" */
        dev = on;
        size_t left = reach - (a - reg->base);
        p->len = left < end - a ? left : end - a;
        if (p->fd == -2 && (p->fd = dup(reg->handle->fd)) < 0)
            return CUDA_ERROR_OUT_OF_MEMORY;
        d->n++;
        a += p->len;
    }
    return CUDA_SUCCESS;
}

static void drop(struct dmabuf *d)
{
    for (unsigned i = 0; i < d->n; i++)
        if (d->p[i].fd >= 0)
            close(d->p[i].fd);
    if (d->fd >= 0)
        close(d->fd);
    free(d);
}

FC_EXPORT CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr dptr, size_t size,
                                                 CUmemRangeHandleType handleType,
                                                 unsigned long long flags)
{
    FC_FAULT(cuMemGetHandleForAddressRange);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!handle || handleType != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD ||
        (flags & ~(unsigned long long)CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE) || !dptr || !size ||
        dptr % HOST_PAGE || size % HOST_PAGE || dptr + size < dptr)
        return CUDA_ERROR_INVALID_VALUE;
    if (flags)
        return CUDA_ERROR_NOT_SUPPORTED; /* no BAR1 mapping here */
    struct dmabuf *d = calloc(1, sizeof *d);
    if (!d)
        return CUDA_ERROR_OUT_OF_MEMORY;
    d->size = size;
    d->fd = -1;
    pthread_mutex_lock(&fc_lock);
    r = pieces(d, (uintptr_t)dptr, size);
    if (r == CUDA_SUCCESS && (d->fd = memfd_create("fakecuda-dmabuf", MFD_CLOEXEC)) < 0)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS) {
        d->next = bufs;
        bufs = d;
        *(int *)handle = d->fd;
    }
    pthread_mutex_unlock(&fc_lock);
    if (r != CUDA_SUCCESS)
        drop(d);
    return r;
}

FC_EXPORT int fakecuda_dmabuf_access(int fd, size_t offset, void *buf, size_t n, int write)
{
    pthread_mutex_lock(&fc_lock);
    struct dmabuf *d = bufs;
    while (d && d->fd != fd)
        d = d->next;
    int rc = d && offset <= d->size && n <= d->size - offset ? 0 : -1;
    unsigned char *b = buf;
    for (unsigned i = 0; rc == 0 && d && i < d->n && n; i++) {
        const struct piece *p = &d->p[i];
        if (offset >= p->len) {
            offset -= p->len;
            continue;
        }
        size_t k = p->len - offset < n ? p->len - offset : n;
        if (p->mem && write)
            memcpy(p->mem + offset, b, k);
        else if (p->mem)
            memcpy(b, p->mem + offset, k);
        else if ((write ? pwrite(p->fd, b, k, (off_t)(p->off + offset))
                        : pread(p->fd, b, k, (off_t)(p->off + offset))) != (ssize_t)k)
            rc = -1;
        b += k;
        n -= k;
        offset = 0;
    }
    pthread_mutex_unlock(&fc_lock);
    return rc;
}
