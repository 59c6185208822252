/* The options suite's fake environment (options_rig.h). */
#include "tests/unit/shim/options_rig.h"

#include <string.h>

/* A fake environment: one variable set to one value. */
static const char *env_name, *env_value;
char *fake_get(const char *name)
{
    return env_name && strcmp(name, env_name) == 0 ? (char *)env_value : NULL;
}

int load_one(const char *name, const char *value, struct spw_options *o, char *err,
             size_t errlen)
{
    env_name = name;
    env_value = value;
    return spw_options_load(o, fake_get, err, errlen);
}
