/* launch_count.h over the driver API: the twin of launch_count_rt.cu that
 * the fakecuda self-test runs (the CUDA runtime cannot run on fakecuda).
 * The kernel is the conformance suites' add_u32 (tests/unit/driver/
 * kernels.c: PTX on a GPU, a C function on fakecuda); the paths are
 * cuLaunchKernel on the legacy stream and on a created one,
 * cuLaunchKernel_ptsz (the per-thread default stream) and cuLaunchKernelEx;
 * the graph is captured with cuStreamBeginCapture_v2, instantiated with
 * cuGraphInstantiateWithFlags and launched with cuGraphLaunch. Linked by
 * soname (-l:libcuda.so.1) like the suites. */
#include "tests/gpu/launch_count.h"

#include <cuda.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/fakecuda/fakecuda.h"
#include "tests/unit/driver/kernels_ptx.h"

void fakecuda_kernels_register(void); /* tests/unit/driver/kernels.c */

/* cuda.h declares the per-thread form only under
 * CUDA_API_PER_THREAD_DEFAULT_STREAM; the driver and spillway export it. */
CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                     unsigned by, unsigned bz, unsigned shared, CUstream s, void **params,
                                     void **extra);

typedef CUresult CUDAAPI (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                      unsigned, unsigned, CUstream, void **, void **);

static CUfunction add;
static CUdeviceptr buf;
static unsigned long long nwords;
static unsigned one = 1, grid;
static CUstream stream;
static CUgraph graph;
static CUgraphExec exec;

const char *lc_api(void) { return "driver"; }

int lc_setup(size_t words)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUresult r;
    nwords = words;
    grid = words / 256 + 1 < 1024 ? (unsigned)(words / 256 + 1) : 1024;
    if (fakecuda_present())
        fakecuda_kernels_register();
    if ((r = cuInit(0)) || (r = cuDeviceGet(&dev, 0)) || (r = cuDevicePrimaryCtxRetain(&ctx, dev)) ||
        (r = cuCtxSetCurrent(ctx)) || (r = cuModuleLoadData(&mod, kernels_ptx)) ||
        (r = cuModuleGetFunction(&add, mod, "add_u32")) || (r = cuMemAlloc(&buf, words * sizeof(unsigned))) ||
        (r = cuMemsetD32(buf, 0, words)) || (r = cuStreamCreate(&stream, CU_STREAM_DEFAULT)))
        return (int)r;
    return (int)cuCtxSynchronize();
}

/* The driver's own cuLaunchKernel, found the way no program should: in the
 * dynamic symbol table of the file the driver was loaded from (its link
 * map: path and load bias), so that neither the program's own binding nor
 * dlsym (which spillway answers for every hooked name) is asked. */
static launch_fn driver_own_launch(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    struct link_map *lm = NULL;
    if (!h || dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_name)
        return NULL;
    launch_fn fn = NULL;
    int fd = open(lm->l_name, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(Elf64_Ehdr)) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    const unsigned char *f = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (f == MAP_FAILED)
        return NULL;
    size_t size = (size_t)st.st_size;
    const Elf64_Ehdr *eh = (const void *)f;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64 &&
        eh->e_shoff + (size_t)eh->e_shnum * sizeof(Elf64_Shdr) <= size) {
        const Elf64_Shdr *sh = (const void *)(f + eh->e_shoff);
        for (unsigned i = 0; i < eh->e_shnum && !fn; i++) {
            if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum)
                continue;
            const Elf64_Shdr *str = &sh[sh[i].sh_link];
            if (sh[i].sh_offset + sh[i].sh_size > size || str->sh_offset + str->sh_size > size)
                continue;
            const Elf64_Sym *sym = (const void *)(f + sh[i].sh_offset);
            for (size_t k = 0; k < sh[i].sh_size / sizeof *sym && !fn; k++)
                if (sym[k].st_shndx != SHN_UNDEF && ELF64_ST_TYPE(sym[k].st_info) == STT_FUNC &&
                    sym[k].st_name < str->sh_size &&
                    strcmp((const char *)f + str->sh_offset + sym[k].st_name, "cuLaunchKernel") == 0)
                    fn = (launch_fn)(lm->l_addr + sym[k].st_value);
        }
    }
    munmap((void *)f, size);
    return fn;
}

int lc_launch(enum lc_path path)
{
    void *args[] = {&buf, &one, &nwords};
    switch (path) {
    case LC_LEGACY:
        return (int)cuLaunchKernel(add, grid, 1, 1, 256, 1, 1, 0, NULL, args, NULL);
    case LC_STREAM:
        return (int)cuLaunchKernel(add, grid, 1, 1, 256, 1, 1, 0, stream, args, NULL);
    case LC_PER_THREAD: /* NULL: the calling thread's default stream */
        return (int)cuLaunchKernel_ptsz(add, grid, 1, 1, 256, 1, 1, 0, NULL, args, NULL);
    case LC_EXPLICIT: {
        CUlaunchConfig c = {.gridDimX = grid, .gridDimY = 1, .gridDimZ = 1,
                            .blockDimX = 256, .blockDimY = 1, .blockDimZ = 1};
        return (int)cuLaunchKernelEx(&c, add, args, NULL);
    }
    case LC_BYPASS: {
        launch_fn own = driver_own_launch();
        if (!own)
            return (int)CUDA_ERROR_NOT_FOUND;
        return (int)own(add, grid, 1, 1, 256, 1, 1, 0, NULL, args, NULL);
    }
    default:
        return (int)CUDA_ERROR_INVALID_VALUE;
    }
}

int lc_graph_capture(void)
{
    void *args[] = {&buf, &one, &nwords};
    CUresult r = cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
    if (r != CUDA_SUCCESS)
        return (int)r;
    CUresult launched = cuLaunchKernel(add, grid, 1, 1, 256, 1, 1, 0, stream, args, NULL);
    r = cuStreamEndCapture(stream, &graph); /* ended whatever the launch said */
    if (launched != CUDA_SUCCESS)
        return (int)launched;
    if (r == CUDA_SUCCESS)
        r = cuGraphInstantiateWithFlags(&exec, graph, 0);
    return (int)r;
}

int lc_graph_launch(void) { return (int)cuGraphLaunch(exec, stream); }
int lc_sync(void) { return (int)cuCtxSynchronize(); }
int lc_read(unsigned *host, size_t words) { return (int)cuMemcpyDtoH(host, buf, words * sizeof *host); }

const char *lc_error_name(int err)
{
    const char *s = "?";
    cuGetErrorName((CUresult)err, &s);
    return s;
}
