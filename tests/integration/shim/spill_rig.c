/* The spill suite's shared helpers (spill_rig.h). */
#include "tests/integration/shim/spill_rig.h"

CUcontext ctx;

void setup(void)
{
    ctx = rig_setup(0);
}
