# The three driver paths against fakecuda without spillway (issue 2): the
# baseline for the shim's path suite, whose loader (driver_api.c) it shares.
NATIVE_PATHS := $(BUILD)/tests/integration/native_paths

$(NATIVE_PATHS): $(BUILD)/tests/integration/native/test_native_paths.o \
                 $(BUILD)/tests/integration/shim/driver_api.o $(UNIT_MAIN) | $(FAKECUDA_LIB)
	$(CC) $(CFLAGS) $^ -o $@ -L$(BUILD)/fakecuda -l:libcuda.so.1 $(CHECK_LIBS) $(LDLIBS)

ALL_TARGETS += $(NATIVE_PATHS)
UNIT_TESTS  += $(NATIVE_PATHS)
