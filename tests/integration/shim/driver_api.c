#include "tests/integration/shim/driver_api.h"

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

typedef CUresult (*gpa_v1_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*gpa_v2_fn)(const char *, void **, int, cuuint64_t,
                              CUdriverProcAddressQueryResult *);

static const char *load_linked(struct spw_driver_api *api)
{
#define SPW_TEST_LINK(field, base, symbol) api->field = &symbol;
    SPW_TEST_DRIVER_FUNCS(SPW_TEST_LINK)
#undef SPW_TEST_LINK
    return NULL;
}

static const char *load_dlsym(struct spw_driver_api *api)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return "dlopen(libcuda.so.1)";
#define SPW_TEST_DLSYM(field, base, symbol)                         \
    if (!(*(void **)&api->field = dlsym(h, #symbol)))                \
        return #symbol;
    SPW_TEST_DRIVER_FUNCS(SPW_TEST_DLSYM)
#undef SPW_TEST_DLSYM
    return NULL;
}

/* cuGetProcAddress as the runtime gets it: found with dlsym, then asked
 * for itself (version 12000, the _v2 ABI). NULL when that fails. */
static gpa_v2_fn runtime_gpa(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    gpa_v1_fn first = h ? (gpa_v1_fn)dlsym(h, "cuGetProcAddress") : NULL;
    gpa_v2_fn gpa = NULL;
    if (!first || first("cuGetProcAddress", (void **)&gpa, 12000, 0) != CUDA_SUCCESS)
        return NULL;
    return gpa;
}

static const char *load_gpa(struct spw_driver_api *api)
{
    gpa_v2_fn gpa = runtime_gpa();
    if (!gpa)
        return "cuGetProcAddress(\"cuGetProcAddress\")";
    CUdriverProcAddressQueryResult status;
#define SPW_TEST_GPA(field, base, symbol)                                                    \
    if (gpa(#base, (void **)&api->field, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status) !=     \
            CUDA_SUCCESS ||                                                                  \
        !api->field)                                                                         \
        return #base;
    SPW_TEST_DRIVER_FUNCS(SPW_TEST_GPA)
#undef SPW_TEST_GPA
    return NULL;
}

const char *spw_driver_api_load(enum spw_path path, struct spw_driver_api *api)
{
    switch (path) {
    case SPW_PATH_LINKED: return load_linked(api);
    case SPW_PATH_DLSYM: return load_dlsym(api);
    case SPW_PATH_GPA: return load_gpa(api);
    default: return "no such path";
    }
}

void *spw_driver_api_find(enum spw_path path, const char *base, const char *symbol, int per_thread)
{
    if (path == SPW_PATH_DLSYM) {
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        return h ? dlsym(h, symbol) : NULL;
    }
    gpa_v2_fn gpa = path == SPW_PATH_GPA ? runtime_gpa() : NULL;
    void *fn = NULL;
    CUdriverProcAddressQueryResult status;
    if (!gpa || gpa(base, &fn, 12000,
                    per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                               : CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                    &status) != CUDA_SUCCESS)
        return NULL;
    return fn;
}

CUresult spw_driver_api_use_device(const struct spw_driver_api *api, int dev)
{
    CUresult r = api->init(0);
    CUcontext ctx;
    if (r == CUDA_SUCCESS)
        r = api->primary_ctx_retain(&ctx, dev);
    if (r == CUDA_SUCCESS)
        r = api->ctx_set_current(ctx);
    return r;
}

void *spw_driver_unseen(const char *symbol)
{
    void *(*glibc_dlsym)(void *, const char *) =
        (void *(*)(void *, const char *))dlvsym(RTLD_DEFAULT, "dlsym", "GLIBC_2.34");
    if (!glibc_dlsym)
        glibc_dlsym = (void *(*)(void *, const char *))dlvsym(RTLD_DEFAULT, "dlsym", "GLIBC_2.2.5");
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *f = glibc_dlsym && h ? glibc_dlsym(h, symbol) : NULL;
    if (h)
        dlclose(h); /* loaded already: NOLOAD only took a reference */
    return f;
}

int spw_in_spillway(const void *p)
{
    Dl_info info;
    return p && dladdr(p, &info) && info.dli_fname && strstr(info.dli_fname, "libspillway.so");
}
