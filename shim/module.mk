# shim/: build/libspillway.so, the LD_PRELOAD library (issue 3), and
# build/shim/options.o, which the launcher links on its own. hostmem.o
# (pure libc as well) is what the automatic host limit is half of.
SHIM_OPTIONS_OBJ := $(OPTIONS_OBJS) $(BUILD)/shim/hostmem.o
# The stats writer.
SHIM_STATS_OBJS := $(STATS_WRITER_OBJS)
# The page pool (policy/), served through shim/backend.c.
SHIM_POLICY_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(wildcard policy/*.c))
ALL_TARGETS += $(SHIM_OPTIONS_OBJ)

# test_options.c, its tests in options_*.c beside it.
$(BUILD)/tests/unit/shim_options: $(BUILD)/tests/unit/shim/test_options.o \
    $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/unit/shim/options_*.c)) $(UNIT_MAIN) $(SHIM_OPTIONS_OBJ)
	$(CC) $(CFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)
UNIT_TESTS += $(BUILD)/tests/unit/shim_options
$(BUILD)/tests/unit/shim_hostmem: $(BUILD)/tests/unit/shim/test_hostmem.o $(UNIT_MAIN) $(SHIM_OPTIONS_OBJ)
	$(CC) $(CFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)
UNIT_TESTS += $(BUILD)/tests/unit/shim_hostmem
$(BUILD)/tests/unit/shim_size_text: $(BUILD)/tests/unit/shim/test_size_text.o $(UNIT_MAIN) $(BUILD)/shim/size_text.o
	$(CC) $(CFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)
UNIT_TESTS += $(BUILD)/tests/unit/shim_size_text

$(BUILD)/tests/unit/shim_ptrmap: $(BUILD)/tests/unit/shim/test_ptrmap.o $(UNIT_MAIN) $(BUILD)/shim/ptrmap.o
	$(CC) $(CFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)
$(BUILD)/tests/unit/shim_account: $(BUILD)/tests/unit/shim/test_account.o $(UNIT_MAIN) \
    $(BUILD)/shim/account.o $(BUILD)/shim/refusals.o $(BUILD)/shim/limits.o $(BUILD)/shim/ptrmap.o $(BUILD)/shim/log.o $(SHIM_OPTIONS_OBJ) \
    $(SHIM_STATS_OBJS) $(BUILD)/policy/device.o
	$(CC) $(CFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)
$(BUILD)/tests/unit/shim_array_size: $(BUILD)/tests/unit/shim/test_array_size.o $(UNIT_MAIN) $(BUILD)/shim/array_size.o
	$(CC) $(CFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)
$(BUILD)/tests/unit/shim_contexts: $(BUILD)/tests/unit/shim/test_contexts.o $(UNIT_MAIN) \
    $(BUILD)/shim/contexts.o $(BUILD)/shim/log.o $(SHIM_OPTIONS_OBJ)
	$(CC) $(CFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)
$(BUILD)/tests/unit/shim_param_scan: $(BUILD)/tests/unit/shim/test_param_scan.o $(UNIT_MAIN) \
    $(BUILD)/shim/param_scan.o $(BUILD)/shim/tensor_maps.o $(BUILD)/shim/log.o $(SHIM_OPTIONS_OBJ)
	$(CC) $(CFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)
UNIT_TESTS += $(BUILD)/tests/unit/shim_ptrmap $(BUILD)/tests/unit/shim_account $(BUILD)/tests/unit/shim_array_size \
    $(BUILD)/tests/unit/shim_contexts $(BUILD)/tests/unit/shim_param_scan

# The shim dlopen'ed in front of a spy driver (SPILLWAY_DRIVER).
$(BUILD)/tests/unit/shim/libspydriver.so: $(BUILD)/tests/unit/shim/spydriver.o
	$(CC) -shared -Wl,--no-undefined $^ -o $@
$(BUILD)/tests/unit/shim_resolve: $(BUILD)/tests/unit/shim/test_resolve.o $(UNIT_MAIN) \
    $(BUILD)/tests/unit/shim/libspydriver.so $(BUILD)/libspillway.so
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ $(CHECK_LIBS) $(LDLIBS)
ALL_TARGETS += $(BUILD)/tests/unit/shim/libspydriver.so
UNIT_TESTS += $(BUILD)/tests/unit/shim_resolve tests/unit/shim/exports.sh

# The library: every shim/*.c. The exported names and their aliases are
# generated from hooks.def (see exports.map.in and exports.ld.in).
SHIM_SRCS := $(wildcard shim/*.c)
SHIM_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(SHIM_SRCS))
SHIM_LIB  := $(BUILD)/libspillway.so
ALL_TARGETS += $(SHIM_LIB)

$(BUILD)/shim/exports.map: shim/exports.map.in shim/hooks.def shim/runtime.def
	@mkdir -p $(dir $@)
	$(CC) -E -P -x c -I. $< -o $@
$(BUILD)/shim/exports.ld: shim/exports.ld.in shim/hooks.def
	@mkdir -p $(dir $@)
	$(CC) -E -P -x c -I. $< -o $@

# No CUDA library on the link line: the driver is dlopen'ed, the runtime
# found with dlsym(RTLD_NEXT).
$(SHIM_LIB): $(SHIM_OBJS) $(SHIM_STATS_OBJS) $(SHIM_POLICY_OBJS) $(BUILD)/shim/exports.map $(BUILD)/shim/exports.ld
	$(CC) -shared -Wl,--no-undefined -Wl,--version-script=$(BUILD)/shim/exports.map \
	    $(SHIM_OBJS) $(SHIM_STATS_OBJS) $(SHIM_POLICY_OBJS) $(BUILD)/shim/exports.ld -o $@ $(LDLIBS)

# ---- tests ----
# Integration programs link fakecuda (-lcuda) and fakecudart (-lcudart) by
# path; rules of other modules are not read yet when this file is.
SHIM_FAKE_LIBS := $(BUILD)/fakecuda/libcuda.so.1 $(BUILD)/fakecudart/libcudart.so
SHIM_FAKE_LINK := -L$(BUILD)/fakecuda -L$(BUILD)/fakecudart \
                  -Wl,-rpath,'$$ORIGIN/../../fakecuda:$$ORIGIN/../../fakecudart'
SHIM_IT := $(BUILD)/tests/integration

# test_paths.c, its tests in paths_*.c beside it.
$(SHIM_IT)/shim_paths: $(SHIM_IT)/shim/test_paths.o $(SHIM_IT)/shim/driver_api.o $(UNIT_MAIN) \
                       $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/integration/shim/paths_*.c)) \
                       $(SHIM_OPTIONS_OBJ) $(SHIM_FAKE_LIBS)
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ $(SHIM_FAKE_LINK) -lcudart -lcuda $(CHECK_LIBS) $(LDLIBS)

ALL_TARGETS += $(SHIM_IT)/shim_paths
UNIT_TESTS += tests/integration/shim/paths.sh

$(SHIM_IT)/shim_probe: $(SHIM_IT)/shim/probe.o $(BUILD)/fakecuda/libcuda.so.1
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ $(SHIM_FAKE_LINK) -lcuda $(LDLIBS)

# Runs shim_probe itself, with and without spillway.
$(SHIM_IT)/shim_env: $(SHIM_IT)/shim/test_env.o $(UNIT_MAIN) $(SHIM_OPTIONS_OBJ) \
                     $(SHIM_IT)/shim_probe $(SHIM_LIB)
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ $(CHECK_LIBS) $(LDLIBS)

# The driver in a local scope only, as frameworks load it (strict.sh).
$(SHIM_IT)/shim_dlprobe: $(SHIM_IT)/shim/dlprobe.o
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

ALL_TARGETS += $(SHIM_IT)/shim_probe $(SHIM_IT)/shim_env $(SHIM_IT)/shim_dlprobe
UNIT_TESTS += $(SHIM_IT)/shim_env
# Strict configuration through the launcher and the library (strict.sh).
UNIT_TESTS += tests/integration/shim/strict.sh
# A driver older than what spillway hooks (olddriver.sh).
UNIT_TESTS += tests/integration/shim/olddriver.sh
UNIT_TESTS += tests/integration/shim/demo.sh

# The copy family by every path, read back from the stats segment (copies.sh):
# test_copies.c, its tests in copies_*.c beside it.
$(SHIM_IT)/shim_copies: $(SHIM_IT)/shim/test_copies.o $(SHIM_IT)/shim/driver_api.o $(UNIT_MAIN) \
                        $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/integration/shim/copies_*.c)) \
                        $(STATS_READER_OBJS) \
                        $(SHIM_FAKE_LIBS)
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ $(SHIM_FAKE_LINK) -lcudart -lcuda $(CHECK_LIBS) $(LDLIBS)
$(SHIM_IT)/shim_copy_hold: $(SHIM_IT)/shim/copy_hold.o $(BUILD)/fakecuda/libcuda.so.1
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ $(SHIM_FAKE_LINK) -lcuda $(LDLIBS)
ALL_TARGETS += $(SHIM_IT)/shim_copies $(SHIM_IT)/shim_copy_hold
# Timings of the copy handlers, run by hand (copy_bench.c).
$(SHIM_IT)/shim_copy_bench: $(SHIM_IT)/shim/copy_bench.o $(BUILD)/fakecuda/libcuda.so.1
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ $(SHIM_FAKE_LINK) -lcuda $(LDLIBS)
ALL_TARGETS += $(SHIM_IT)/shim_copy_bench
# What a launch's argument scan costs with TMA descriptors about, counted by
# hand with callgrind (scan_bench.c).
$(SHIM_IT)/shim_scan_bench: $(SHIM_IT)/shim/scan_bench.o $(BUILD)/fakecuda/libcuda.so.1
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ $(SHIM_FAKE_LINK) -lcuda $(LDLIBS)
ALL_TARGETS += $(SHIM_IT)/shim_scan_bench
UNIT_TESTS += tests/integration/shim/copies.sh tests/integration/shim/copies_top.sh

# Spill through the shim: data, kernels, fill, a race, the two options (spill.sh):
# test_spill.c, its tests in spill_*.c beside it.
$(SHIM_IT)/shim_spill: $(SHIM_IT)/shim/test_spill.o $(SHIM_IT)/shim/rig.o $(UNIT_MAIN) \
                       $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/integration/shim/spill_*.c)) \
                       $(STATS_READER_OBJS) \
                       $(BUILD)/fakecuda/libcuda.so.1
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ $(SHIM_FAKE_LINK) -lcuda $(CHECK_LIBS) $(LDLIBS)
ALL_TARGETS += $(SHIM_IT)/shim_spill
UNIT_TESTS += tests/integration/shim/spill.sh

# Issue 12 under spillway: captures, graphs (capture.sh).
SHIM_RIG := $(SHIM_IT)/shim/rig.o $(UNIT_MAIN) $(STATS_READER_OBJS) $(BUILD)/fakecuda/libcuda.so.1
# test_capture.c, its tests in capture_*.c beside it.
$(SHIM_IT)/shim_capture: $(SHIM_IT)/shim/test_capture.o \
                         $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/integration/shim/capture_*.c)) \
                         $(BUILD)/tests/unit/driver/kernels.o $(SHIM_RIG)
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ $(SHIM_FAKE_LINK) -lcuda $(CHECK_LIBS) $(LDLIBS)
ALL_TARGETS += $(SHIM_IT)/shim_capture
UNIT_TESTS += tests/integration/shim/capture.sh
# ... the driver's graph memory pool against the limit (graph_mem.sh):
# test_graph_mem.c, its tests in graph_mem_*.c beside it.
$(SHIM_IT)/shim_graph_mem: $(SHIM_IT)/shim/test_graph_mem.o \
                           $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/integration/shim/graph_mem_*.c)) $(SHIM_RIG)
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ $(SHIM_FAKE_LINK) -lcuda $(CHECK_LIBS) $(LDLIBS)
ALL_TARGETS += $(SHIM_IT)/shim_graph_mem
UNIT_TESTS += tests/integration/shim/graph_mem.sh
# ... batch memory operation nodes: their ranges, their buffers filled back (graph_memops.sh).
$(SHIM_IT)/shim_graph_memops: $(SHIM_IT)/shim/test_graph_memops.o $(SHIM_RIG)
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ $(SHIM_FAKE_LINK) -lcuda $(CHECK_LIBS) $(LDLIBS)
ALL_TARGETS += $(SHIM_IT)/shim_graph_memops
UNIT_TESTS += tests/integration/shim/graph_memops.sh
# ... a collective across two devices while one must move pages (collective.sh).
$(SHIM_IT)/shim_collective: $(SHIM_IT)/shim/test_collective.o $(SHIM_RIG)
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ $(SHIM_FAKE_LINK) -lcuda $(CHECK_LIBS) $(LDLIBS)
ALL_TARGETS += $(SHIM_IT)/shim_collective
UNIT_TESTS += tests/integration/shim/collective.sh
# ... 2D and 3D copies into pages being moved (spill2d.sh).
$(SHIM_IT)/shim_spill2d: $(SHIM_IT)/shim/test_spill2d.o $(SHIM_RIG)
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ $(SHIM_FAKE_LINK) -lcuda $(CHECK_LIBS) $(LDLIBS)
ALL_TARGETS += $(SHIM_IT)/shim_spill2d
UNIT_TESTS += tests/integration/shim/spill2d.sh
# ... program VMM: expandable segments, exports, NCCL's multicast binds (vmm.sh).
$(SHIM_IT)/shim_expandable: $(SHIM_IT)/shim/test_expandable.o $(SHIM_RIG)
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ $(SHIM_FAKE_LINK) -lcuda $(CHECK_LIBS) $(LDLIBS)
$(SHIM_IT)/shim_ptrattr: $(SHIM_IT)/shim/test_ptrattr.o $(SHIM_RIG)
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ $(SHIM_FAKE_LINK) -lcuda $(CHECK_LIBS) $(LDLIBS)
$(SHIM_IT)/shim_multicast: $(SHIM_IT)/shim/test_multicast.o $(SHIM_RIG)
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ $(SHIM_FAKE_LINK) -lcuda $(CHECK_LIBS) $(LDLIBS)
ALL_TARGETS += $(SHIM_IT)/shim_expandable $(SHIM_IT)/shim_ptrattr $(SHIM_IT)/shim_multicast
UNIT_TESTS += tests/integration/shim/vmm.sh

# The runtime in a library's local scope (rtlocal.c).
$(SHIM_IT)/libshim_rtuser.so: $(SHIM_IT)/shim/rtuser.o $(BUILD)/fakecudart/libcudart.so
	$(CC) -shared $(filter %.o,$^) -o $@ -L$(BUILD)/fakecudart -Wl,-rpath,'$$ORIGIN/../../fakecudart' -lcudart
$(SHIM_IT)/shim_rtlocal: $(SHIM_IT)/shim/rtlocal.o $(SHIM_IT)/libshim_rtuser.so
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ $(LDLIBS)
ALL_TARGETS += $(SHIM_IT)/libshim_rtuser.so $(SHIM_IT)/shim_rtlocal
UNIT_TESTS += tests/integration/shim/rtlocal.sh

# The driver's own dlsym (drvself.c, with the spy driver).
$(SHIM_IT)/shim_drvself: $(SHIM_IT)/shim/drvself.o $(BUILD)/tests/unit/shim/libspydriver.so
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ $(LDLIBS)
ALL_TARGETS += $(SHIM_IT)/shim_drvself
UNIT_TESTS += tests/integration/shim/drvself.sh
UNIT_TESTS += tests/integration/shim/rtbypass.sh
