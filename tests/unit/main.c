/* Runs the one suite a test program defines and prints Check's summary. */
#include "tests/unit/check_compat.h"
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    SRunner *sr = srunner_create(test_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr), ran = srunner_ntests_run(sr);
    srunner_free(sr);
    /* A suite that ran nothing proves nothing (objects built against
     * Check and minicheck mixed ran none and passed). */
    if (ran == 0) {
        fprintf(stderr, "no check ran: the suite is empty or was built wrong\n");
        return EXIT_FAILURE;
    }
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
