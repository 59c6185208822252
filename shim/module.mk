# shim/: build/libspillway.so, the LD_PRELOAD library (issue 3), and
# build/shim/options.o, which the launcher links on its own.
SHIM_OPTIONS_OBJ := $(BUILD)/shim/options.o
ALL_TARGETS += $(SHIM_OPTIONS_OBJ)

$(BUILD)/tests/unit/shim_options: $(BUILD)/tests/unit/shim/test_options.o $(UNIT_MAIN) $(SHIM_OPTIONS_OBJ)
	$(CC) $(CFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)
UNIT_TESTS += $(BUILD)/tests/unit/shim_options
