/* The frameworks' variables under oversubscription (launch_frameworks.h).
 *
 * Why no value is set today: spillway tells the program F x the limit
 * (cuMemGetInfo, cuDeviceTotalMem), and every framework already sizes
 * itself from that figure, so each keeps its default mode, the one its
 * users know and the one issue 13's acceptance runs. JAX's arena is 0.75 of
 * the reported total, which is already F x the limit; TensorFlow's BFC
 * takes what cuMemGetInfo reports free; PyTorch allocates on demand. A
 * variable set to its default would not be harmless either:
 * TF_FORCE_GPU_ALLOW_GROWTH overrides the program's own set_memory_growth.
 * The per-buffer modes (JAX platform/cuda_async, TensorFlow
 * cuda_malloc_async, PyTorch backend:cudaMallocAsync) show spillway every
 * free, so freed memory is never spilled; whether that wins over the
 * default is measured on a GPU (issue 13 item 4), and a value that wins
 * goes here. */
#include "tools/launch_frameworks.h"

#include <stdlib.h>

const struct spw_fw_var spw_fw_vars[] = {
    {"JAX", "XLA_PYTHON_CLIENT_MEM_FRACTION", NULL,
     "JAX's arena is 0.75 of the reported total, which is already F x the limit"},
    {"JAX", "XLA_PYTHON_CLIENT_PREALLOCATE", NULL,
     "one arena made at start, JAX's default mode; its pages past the device are pinned host pages"},
    {"JAX", "XLA_PYTHON_CLIENT_ALLOCATOR", NULL,
     "the BFC arena; platform or cuda_async would show spillway every free (a recipe to measure)"},
    {"TensorFlow", "TF_FORCE_GPU_ALLOW_GROWTH", NULL,
     "TensorFlow sizes itself from the reported memory; set, this would override the program's "
     "own set_memory_growth"},
    {"TensorFlow", "TF_GPU_ALLOCATOR", NULL,
     "the BFC allocator; cuda_malloc_async would show spillway every free (a recipe to measure)"},
    {"PyTorch", "PYTORCH_CUDA_ALLOC_CONF", NULL,
     "the caching allocator; backend:cudaMallocAsync would show spillway every free (a recipe to "
     "measure)"},
};
const size_t spw_fw_var_count = sizeof spw_fw_vars / sizeof spw_fw_vars[0];

int spw_fw_apply(const struct spw_fw_var *t, size_t n, FILE *log)
{
    for (size_t i = 0; i < n; i++) {
        const char *user = getenv(t[i].name);
        if (user) {
            if (log)
                fprintf(log, "spillway: %s=%s left alone: set by the user (%s)\n", t[i].name,
                        user, t[i].framework);
        } else if (t[i].value) {
            if (setenv(t[i].name, t[i].value, 1) != 0)
                return -1;
            if (log)
                fprintf(log, "spillway: %s=%s set for %s: %s\n", t[i].name, t[i].value,
                        t[i].framework, t[i].why);
        } else if (log) {
            fprintf(log, "spillway: %s not set: %s's default stays: %s\n", t[i].name,
                    t[i].framework, t[i].why);
        }
    }
    return 0;
}
