#include "tests/integration/shim/driver_api.h"

#include <dlfcn.h>
#include <stddef.h>

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

static const char *load_gpa(struct spw_driver_api *api)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return "dlopen(libcuda.so.1)";
    gpa_v1_fn first = (gpa_v1_fn)dlsym(h, "cuGetProcAddress");
    gpa_v2_fn gpa = NULL;
    if (!first || first("cuGetProcAddress", (void **)&gpa, 12000, 0) != CUDA_SUCCESS || !gpa)
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
