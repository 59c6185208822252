/* Owner of the process's options. Loaded by the library constructor (so a
 * bad value stops the program before main), or earlier by whichever entry
 * point runs first (another library's constructor may call dlsym). */
#include "shim/config.h"

#include "shim/log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static struct spw_options options;
static pthread_once_t options_once = PTHREAD_ONCE_INIT;
static _Atomic int options_ready;
static int disabled;

static void load_options(void)
{
    char err[512];
    /* Unknown SPILLWAY_* names too: a misspelt limit must not run unlimited. */
    if (spw_options_load_environ(&options, err, sizeof err)) {
        fprintf(stderr, "spillway: %s\n", err);
        fflush(stderr);
        _exit(2); /* not exit(): other libraries' constructors may not have run */
    }
    disabled = options.disable;
    spw_log_set_level(options.log);
    atomic_store_explicit(&options_ready, 1, memory_order_release);
}

const struct spw_options *spw_config(void)
{
    if (!atomic_load_explicit(&options_ready, memory_order_acquire))
        pthread_once(&options_once, load_options);
    return &options;
}

int spw_disabled(void)
{
    if (!atomic_load_explicit(&options_ready, memory_order_acquire))
        pthread_once(&options_once, load_options);
    return disabled;
}

__attribute__((constructor)) static void spw_config_init(void)
{
    const struct spw_options *o = spw_config();
    if (o->disable)
        spw_info("SPILLWAY_DISABLE is set: passing every call through");
}
