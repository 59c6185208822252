/* Nothing: a library the launcher tests preload instead of spillway. It
 * defines the export the launcher recognises spillway's library by
 * (tools/launch_elf.h), so that the launcher takes it. */
int spw_test_empty_library;

struct spillway_counters;
__attribute__((visibility("default"))) int spillway_get_counters(int device, struct spillway_counters *out)
{
    (void)device;
    (void)out;
    return -1;
}
