/* The move-faults suite's shared state and helpers (move_faults_rig.h). */
#include "tests/unit/policy/move_faults_rig.h"

fake_backend *FB;
sw_policy *P;

void refuse_the_device_sync(void *arg)
{
    (void)arg;
    fake_fail_also(FB, "synchronize", CUDA_ERROR_LAUNCH_FAILED, 1);
}

void one_page_handle(CUdeviceptr *va, CUmemGenericAllocationHandle *h)
{
    sw_device_config cfg = {.limit = 8 * PG, .host_limit = 16 * PG, .spill = true};
    env_up_cfg(&cfg, 8);
    ck_assert_int_eq(fake_reserve(FB, PG, va), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_create(P, 0, PG, h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, *va, PG, 0, *h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_set_access(P, *va, PG, 1), CUDA_SUCCESS);
    fill(*va, PG, 4);
}
