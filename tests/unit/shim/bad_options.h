/* Every invalid-value case of every SPILLWAY_* option, with a piece of the
 * "accepted" text its error line must contain. Used by the parser's unit
 * suite and, end to end (exit status 2 before main), by the env suite. */
#ifndef SPILLWAY_TEST_BAD_OPTIONS_H
#define SPILLWAY_TEST_BAD_OPTIONS_H
static const struct {
    const char *name, *value, *accepted;
} spw_bad_options[] = {
    {"SPILLWAY_MEM_FRACTION", "0", "from 0.000001 to 1"},
    {"SPILLWAY_MEM_FRACTION", "1.5", "from 0.000001 to 1"},
    {"SPILLWAY_MEM_FRACTION", "-0.5", "from 0.000001 to 1"},
    {"SPILLWAY_MEM_FRACTION", "1e-300", "from 0.000001 to 1"}, /* issue 11: ran with a 1-byte pool */
    {"SPILLWAY_MEM_FRACTION", "0.0000009", "from 0.000001 to 1"},
    {"SPILLWAY_MEM_FRACTION", "", "empty"},
    {"SPILLWAY_MEM_FRACTION", "half", "number"},
    {"SPILLWAY_MEM_FRACTION", "0.5x", "number"},
    {"SPILLWAY_MEM_FRACTION", "nan", "number"},
    {"SPILLWAY_MEM_FRACTION", "inf", "number"},
    /* The number grammar: decimal digits and a point, none of what strtod
     * also takes (hex, exponents, a sign). */
    {"SPILLWAY_MEM_FRACTION", "0x0.8", "a decimal number from 0.000001 to 1"},
    {"SPILLWAY_MEM_FRACTION", "5e-1", "a decimal number"},
    {"SPILLWAY_MEM_FRACTION", "+0.5", "a decimal number"},
    {"SPILLWAY_MEM_FRACTION", " 0.5", "a decimal number"},
    {"SPILLWAY_MEM_LIMIT", "0", "each > 0"},
    {"SPILLWAY_MEM_LIMIT", "", "empty"}, /* issue 11: ran with the default */
    {"SPILLWAY_MEM_LIMIT", "lots", "K/M/G/T"},
    {"SPILLWAY_MEM_LIMIT", "8Q", "K/M/G/T"},
    {"SPILLWAY_MEM_LIMIT", "-8G", "K/M/G/T"},
    {"SPILLWAY_MEM_LIMIT", "0=8G,", "per device"},
    {"SPILLWAY_MEM_LIMIT", "0=8G,,1=4G", "per device"},
    {"SPILLWAY_MEM_LIMIT", "=8G", "per device"},
    {"SPILLWAY_MEM_LIMIT", "0=", "per device"},
    {"SPILLWAY_MEM_LIMIT", "0=0", "per device"},
    {"SPILLWAY_MEM_LIMIT", "64=1G", "index < 64"},
    {"SPILLWAY_MEM_LIMIT", "a=1G", "per device"},
    {"SPILLWAY_MEM_LIMIT", "0=1G,0=2G", "': device 0 is named twice; accepted: bytes"},
    {"SPILLWAY_MEM_LIMIT", "0=8G,1=1G,01=4G", "device 1 is named twice"},
    {"SPILLWAY_MEM_LIMIT", "8GBB", "': accepted: bytes"},
    {"SPILLWAY_MEM_LIMIT", "0=8Gx", "per device"},
    {"SPILLWAY_MEM_LIMIT", "0x10", "K/M/G/T"},
    {"SPILLWAY_MEM_LIMIT", "0=1G;1=2G", "per device"},
    {"SPILLWAY_PREALLOCATE", "maybe", "true, false"},
    {"SPILLWAY_PREALLOCATE", "2", "true, false"},
    {"SPILLWAY_SPILL", "enable", "true, false"},
    {"SPILLWAY_HOST_LIMIT", "none", "unlimited"},
    {"SPILLWAY_HOST_LIMIT", "1.5G", "unlimited"},
    {"SPILLWAY_HOST_LIMIT", "autox", "auto or unlimited"},
    {"SPILLWAY_HOST_LIMIT", "18446744073709551614", "auto or unlimited"}, /* auto's own value */
    /* Not a size of reserve: it pinned the whole host limit ahead of need
     * (with SPILLWAY_HOST_LIMIT=unlimited, until the driver refused). */
    {"SPILLWAY_HOST_RESERVE", "unlimited", "1073741824), or auto"},
    {"SPILLWAY_HOST_RESERVE", "", "empty"},
    {"SPILLWAY_OVERSUBSCRIBE", "0.5", "from 1 to 1000"},
    {"SPILLWAY_OVERSUBSCRIBE", "0", "from 1 to 1000"},
    {"SPILLWAY_OVERSUBSCRIBE", "two", "from 1 to 1000"},
    {"SPILLWAY_OVERSUBSCRIBE", "2x", "from 1 to 1000"},
    {"SPILLWAY_OVERSUBSCRIBE", "1001", "from 1 to 1000"},
    {"SPILLWAY_OVERSUBSCRIBE", "nan", "from 1 to 1000"},
    {"SPILLWAY_OVERSUBSCRIBE", "0x2", "a decimal number from 1 to 1000"},
    {"SPILLWAY_OVERSUBSCRIBE", "1E1", "a decimal number"},
    {"SPILLWAY_HOST_LIMIT", "64gbb", "auto or unlimited"},
    {"SPILLWAY_HOST_RESERVE", "1e9", "or auto"},
    {"SPILLWAY_OVERSUBSCRIBE", "", "empty"},
    {"SPILLWAY_STATS", "y", "true, false"},
    {"SPILLWAY_LOG", "verbose", "error, warn, info or debug"},
    {"SPILLWAY_LOG", "3", "error, warn, info or debug"},
    {"SPILLWAY_DISABLE", "disable", "true, false"},
    {"SPILLWAY_DISABLE", "", "empty"},
    {"SPILLWAY_STATS_DIR", "", "empty"},
};
#define SPW_BAD_OPTIONS (sizeof spw_bad_options / sizeof spw_bad_options[0])
#endif
