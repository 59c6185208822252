/* fakecuda as an older driver (module.mk: FAKECUDA_OLDER_VERSION): the
 * version cuDriverGetVersion answers and cuGetProcAddress serves up to, in
 * place of device.c's weak FC_DRIVER_VERSION. */
#include "tests/fakecuda/internal.h"

const int fc_driver_version = FC_OLDER_VERSION;
