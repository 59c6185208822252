/* Nothing: a library the launcher tests preload instead of spillway. */
int spw_test_empty_library;
