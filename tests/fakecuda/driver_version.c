/* The version fakecuda is (internal.h): weak, so that a build emulating an
 * older driver links its own (older/driver_version.c). A file of its own: a
 * reader in the same file could have the weak value folded in. */
#include "tests/fakecuda/internal.h"

__attribute__((weak)) const int fc_driver_version = FC_DRIVER_VERSION;
