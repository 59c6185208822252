// Kernels of the driver conformance suites. kernels_ptx.h is generated from
// this file (scripts/gen-ptx.sh) and committed, so building the suites needs
// no nvcc; kernels.c holds the same kernels as C functions for fakecuda.
extern "C" __global__ void fill_u32(unsigned *p, unsigned v, unsigned long long n)
{
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        p[i] = v;
}

extern "C" __global__ void add_u32(unsigned *p, unsigned v, unsigned long long n)
{
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        p[i] += v;
}

// Spins until the host writes a non-zero value to *flag (mapped pinned
// memory): makes a stream busy for as long as a test needs.
extern "C" __global__ void wait_flag(volatile unsigned *flag)
{
    while (*flag == 0) {
    }
}
