/* The path suite's shared helpers (paths_rig.h). */
#include "tests/integration/shim/paths_rig.h"

#include "shim/options.h"

#include <dlfcn.h>
#include <stdlib.h>

struct spw_driver_api api;
uint64_t limit;

static int (*get_counters)(int, struct spillway_counters *);

void setup_path(enum spw_path path)
{
    const char *v = getenv("SPILLWAY_MEM_LIMIT");
    ck_assert_msg(v && spw_parse_bytes(v, &limit) == 0, "run me through paths.sh");
    *(void **)&get_counters = dlsym(RTLD_DEFAULT, "spillway_get_counters");
    ck_assert_msg(get_counters != NULL, "not running under spillway (LD_PRELOAD)");
    const char *failed = spw_driver_api_load(path, &api);
    ck_assert_msg(failed == NULL, "path %d: cannot resolve %s", path, failed);
    ck_assert_int_eq(spw_driver_api_use_device(&api, 0), CUDA_SUCCESS);
}

struct spillway_counters counters(int dev)
{
    struct spillway_counters c;
    ck_assert_int_eq(get_counters(dev, &c), 0);
    return c;
}

size_t free_bytes(void)
{
    size_t f = 0, t = 0;
    ck_assert_int_eq(api.mem_get_info(&f, &t), CUDA_SUCCESS);
    ck_assert_uint_eq(t, limit);
    return f;
}
