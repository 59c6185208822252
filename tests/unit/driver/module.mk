# Driver conformance suites: each tests/unit/driver/test_X.c becomes
# build/tests/unit/driver_X, linked against libcuda.so.1 by soname. CI runs
# them with build/fakecuda first on LD_LIBRARY_PATH; scripts/gpu-check.sh runs
# the same binaries against the real driver.
DRIVER_TEST_SRCS   := $(sort $(wildcard tests/unit/driver/test_*.c))
DRIVER_TESTS       := $(patsubst tests/unit/driver/test_%.c,$(BUILD)/tests/unit/driver_%,$(DRIVER_TEST_SRCS))
DRIVER_TEST_COMMON := $(BUILD)/tests/unit/driver/common.o $(BUILD)/tests/unit/driver/kernels.o

$(BUILD)/tests/unit/driver_%: $(BUILD)/tests/unit/driver/test_%.o $(DRIVER_TEST_COMMON) $(UNIT_MAIN) | $(FAKECUDA_LIB)
	$(CC) $(CFLAGS) $^ -o $@ -L$(BUILD)/fakecuda -l:libcuda.so.1 $(CHECK_LIBS) $(LDLIBS)

# A suite's checks in files beside its test_X.c (not test_*.c: each of
# those is a suite): capture_*.c for test_capture.c; graph_rig.c,
# graph_executable.c and graph_children.c for test_graph.c, named one by
# one, as the files of a test_graph_X.c would be graph_X_*.c; vmm_rig.c
# and vmm_mappings.c for test_vmm.c, likewise.
$(BUILD)/tests/unit/driver_capture: $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/unit/driver/capture_*.c))
$(BUILD)/tests/unit/driver_graph: $(addprefix $(BUILD)/tests/unit/driver/,graph_rig.o graph_executable.o graph_children.o)
$(BUILD)/tests/unit/driver_vmm: $(addprefix $(BUILD)/tests/unit/driver/,vmm_rig.o vmm_mappings.o)

# What spillway charges an array, checked against the driver's own needs.
$(BUILD)/tests/unit/driver_array: $(BUILD)/shim/array_size.o

ALL_TARGETS += $(DRIVER_TESTS)
UNIT_TESTS  += $(DRIVER_TESTS) tests/unit/driver/multi_device.sh tests/unit/driver/older.sh
GPU_TARGETS += $(DRIVER_TESTS)
