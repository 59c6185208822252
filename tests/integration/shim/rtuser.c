/* A library that uses the shared runtime, as libtorch_cuda.so does; the
 * program rtlocal.c loads it with dlopen(RTLD_LOCAL), so the runtime is
 * only in this library's own scope, not in the process's global one. */
#include <cuda_runtime_api.h>

__attribute__((visibility("default"))) int rtuser_malloc(void **p, size_t size)
{
    return (int)cudaMalloc(p, size);
}

__attribute__((visibility("default"))) int rtuser_free(void *p)
{
    return (int)cudaFree(p);
}

__attribute__((visibility("default"))) int rtuser_mem_get_info(size_t *f, size_t *t)
{
    return (int)cudaMemGetInfo(f, t);
}
