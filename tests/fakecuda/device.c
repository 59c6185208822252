/* fakecuda: init, version, devices and their attributes, device capacity. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakecuda/internal.h"

pthread_mutex_t fc_lock = PTHREAD_MUTEX_INITIALIZER;
int fc_ndevices;
struct fc_device fc_devices[FC_MAX_DEVICES];
size_t fc_host_used;
bool fc_multicast = true;

static atomic_bool initialized;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
/* This process was forked from one whose driver was initialized. */
static atomic_bool forked;

size_t fc_parse_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    case 't': case 'T': v <<= 40; end++; break;
    default: break;
    }
    return (end == s || *end) ? 0 : (size_t)v;
}

/* NVIDIA's driver does not survive fork(): its contexts, streams and memory
 * belong to the parent, and in a child that did not exec every call,
 * cuInit included, answers CUDA_ERROR_NOT_INITIALIZED ("CUDA does not
 * support the use of fork() after CUDA has been initialized"; the child
 * gets an initialization error, as PyTorch's "Cannot re-initialize CUDA in
 * forked subprocess" reports). A fork before cuInit leaves the child free
 * to initialize, and exec starts afresh. Registered at the first cuInit, so
 * only forks after it count. */
static void forget_in_child(void)
{
    atomic_store(&forked, true);
}

bool fc_forked(void)
{
    return atomic_load_explicit(&forked, memory_order_relaxed);
}

/* Bad FAKECUDA_* values stop the test program: a silent default would make a
 * test pass for the wrong reason. */
static void read_environment(void)
{
    const char *n = getenv("FAKECUDA_DEVICES");
    const char *m = getenv("FAKECUDA_MEM");
    fc_ndevices = n ? atoi(n) : 1;
    if (fc_ndevices < 1 || fc_ndevices > FC_MAX_DEVICES) {
        fprintf(stderr, "fakecuda: FAKECUDA_DEVICES=%s: expected 1..%d\n", n, FC_MAX_DEVICES);
        exit(2);
    }
    size_t cap = m ? fc_parse_size(m) : (size_t)256 << 20;
    if (cap == 0) {
        fprintf(stderr, "fakecuda: FAKECUDA_MEM=%s: expected bytes with K/M/G/T suffix\n", m);
        exit(2);
    }
    /* An H100 SXM on an NVSwitch system reports multicast; 0 stands for a
     * device that does not (PCIe, no fabric manager). */
    const char *mc = getenv("FAKECUDA_MULTICAST");
    if (mc && strcmp(mc, "0") != 0 && strcmp(mc, "1") != 0) {
        fprintf(stderr, "fakecuda: FAKECUDA_MULTICAST=%s: expected 0 or 1\n", mc);
        exit(2);
    }
    fc_multicast = !mc || strcmp(mc, "1") == 0;
    for (int d = 0; d < fc_ndevices; d++) {
        fc_devices[d].capacity = cap;
        fc_devices[d].default_pool = fc_mempool_new(d, true, false);
        fc_devices[d].current_pool = fc_devices[d].default_pool;
    }
    pthread_atfork(NULL, NULL, forget_in_child);
    atomic_store(&initialized, true);
}

FC_EXPORT CUresult cuInit(unsigned int flags)
{
    FC_FAULT(cuInit);
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_once(&init_once, read_environment);
    return CUDA_SUCCESS;
}

CUresult fc_initialized(void)
{
    return atomic_load(&initialized) && !fc_forked() ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult fc_check_device(CUdevice dev)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    return (dev >= 0 && dev < fc_ndevices) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult fc_device_charge(int dev, size_t bytes)
{
    struct fc_device *d = &fc_devices[dev];
    if (bytes > d->capacity - d->used)
        return CUDA_ERROR_OUT_OF_MEMORY;
    d->used += bytes;
    if (d->used > d->used_high)
        d->used_high = d->used;
    return CUDA_SUCCESS;
}

void fc_device_uncharge(int dev, size_t bytes)
{
    fc_devices[dev].used -= bytes;
}

FC_EXPORT CUresult cuDriverGetVersion(int *version)
{
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    *version = fc_driver_version;
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuDeviceGetCount(int *count)
{
    FC_FAULT(cuDeviceGetCount);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = fc_ndevices;
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    FC_FAULT(cuDeviceGet);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= fc_ndevices)
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

/* A device's UUID: the same in every process (legacy IPC of spillway maps
 * an exporter's device by it), distinct per ordinal. */
#undef cuDeviceGetUuid
CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev);
FC_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    FC_FAULT(cuDeviceGetUuid);
    CUresult r = fc_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    memset(uuid->bytes, 0, sizeof uuid->bytes);
    memcpy(uuid->bytes, "fakecuda-dev", 12);
    uuid->bytes[15] = (char)dev;
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    return cuDeviceGetUuid_v2(uuid, dev);
}

FC_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    FC_FAULT(cuDeviceGetName);
    CUresult r = fc_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "fakecuda device %d", dev);
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
    FC_FAULT(cuDeviceTotalMem);
    CUresult r = fc_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    *bytes = fc_devices[dev].capacity;
    return CUDA_SUCCESS;
}

static int attribute_value(CUdevice_attribute attrib, CUdevice dev)
{
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM:
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
    case CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH:
    case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS: /* memops.c emulates them, */
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR: /* and NOR waits */
        return 1;
    case CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED:
        return fc_multicast;
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID:
        return 0;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        return 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        return 0;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        return 4;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
        return 1024;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
        return 32;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
        return 0x10 + dev;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
        return 2;
    default:
        return 0;
    }
}

FC_EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    FC_FAULT(cuDeviceGetAttribute);
    CUresult r = fc_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (!pi || attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    *pi = attribute_value(attrib, dev);
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer)
{
    FC_FAULT(cuDeviceCanAccessPeer);
    CUresult r = fc_check_device(dev);
    if (r == CUDA_SUCCESS)
        r = fc_check_device(peer);
    if (r != CUDA_SUCCESS)
        return r;
    if (!can)
        return CUDA_ERROR_INVALID_VALUE;
    *can = dev != peer;
    return CUDA_SUCCESS;
}
