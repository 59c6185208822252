/* spillway_get_counters (spillway.h): the counters, for tests and programs
 * that want to see them without the stats segment. */
#include "shim/account.h"

__attribute__((visibility("default"))) int spillway_get_counters(int device,
                                                                 struct spillway_counters *out)
{
    if (!out)
        return -1;
    return spw_account_read(device, out);
}
