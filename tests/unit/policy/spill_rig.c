/* The policy spill suite's shared state and helpers (spill_rig.h). */
#include "tests/unit/policy/spill_rig.h"

#include <time.h>

fake_backend *FB;
sw_policy *P;

void sleep_ms(long ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}
