/* Runs the one suite a test program defines and prints Check's summary. */
#include "tests/unit/check_compat.h"
#include <stdlib.h>

int main(void)
{
    SRunner *sr = srunner_create(test_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
