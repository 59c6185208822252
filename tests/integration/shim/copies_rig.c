/* The copy suite's shared helpers (copies_rig.h). */
#include "tests/integration/shim/copies_rig.h"

#include "stats/reader.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct spw_driver_api drv;

struct bytes expected[2];

static struct bytes segment(int dev)
{
    const char *dir = getenv("SPILLWAY_STATS_DIR");
    ck_assert_msg(dir != NULL, "run me through copies.sh");
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    ck_assert_int_ge(fd, 0);
    char name[64], why[256];
    snprintf(name, sizeof name, SPW_STATS_NAME_PREFIX "%u.%d", (unsigned)geteuid(), (int)getpid());
    static struct spw_stats_snapshot s;
    int removed = 0;
    enum spw_read_result r = spw_stats_read_at(fd, name, 0, &s, &removed, why, sizeof why);
    close(fd);
    ck_assert_msg(r == SPW_READ_OK, "segment %s: %d %s", name, r, why);
    ck_assert_uint_gt(s.device_count, (unsigned)dev);
    return (struct bytes){s.c[dev][SPW_C_COPY_HTOD], s.c[dev][SPW_C_COPY_DTOH],
                          s.c[dev][SPW_C_COPY_DTOD]};
}

void check_counts(const char *what)
{
    for (int d = 0; d < 2; d++) {
        struct bytes b = segment(d);
        ck_assert_msg(b.htod == expected[d].htod && b.dtoh == expected[d].dtoh &&
                          b.dtod == expected[d].dtod,
                      "%s: device %d has htod %llu dtoh %llu dtod %llu, expected %llu %llu %llu",
                      what, d, (unsigned long long)b.htod, (unsigned long long)b.dtoh,
                      (unsigned long long)b.dtod, (unsigned long long)expected[d].htod,
                      (unsigned long long)expected[d].dtoh, (unsigned long long)expected[d].dtod);
    }
}

void setup(void)
{
    const char *failed = spw_driver_api_load(SPW_PATH_LINKED, &drv);
    ck_assert_msg(failed == NULL, "cannot resolve %s", failed);
    ck_assert_msg(dlsym(RTLD_DEFAULT, "spillway_get_counters") != NULL,
                  "not running under spillway (LD_PRELOAD)");
    ck_assert_int_eq(spw_driver_api_use_device(&drv, 0), CUDA_SUCCESS);
    memset(expected, 0, sizeof expected);
}

CUdeviceptr dalloc(size_t n)
{
    CUdeviceptr p = 0;
    ck_assert_int_eq(drv.mem_alloc(&p, n), CUDA_SUCCESS);
    return p;
}

void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 31 + seed);
}

void synchronize(void)
{
    ck_assert_int_eq(cuCtxSynchronize(), CUDA_SUCCESS);
}

void use(int dev)
{
    CUcontext ctx;
    ck_assert_int_eq(drv.primary_ctx_retain(&ctx, dev), CUDA_SUCCESS);
    ck_assert_int_eq(drv.ctx_set_current(ctx), CUDA_SUCCESS);
}

