/* The copies and sets the driver alone would refuse for the pool memory
 * they name (pool_range.h). */
#include "shim/pool_range.h"

#include "shim/pool_setup.h"

/* No pool exists under SPILLWAY_DISABLE (pool_setup.c): no test of it. */
CUresult spw_pool_range_check(CUdeviceptr p, size_t bytes)
{
    sw_policy *pol;
    if (!bytes || !(pol = spw_pool_owner(p)))
        return CUDA_SUCCESS;
    return sw_range_check(pol, p, bytes);
}
