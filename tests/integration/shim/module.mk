# tests/integration/shim/: suites of their own here (the older ones are
# built by shim/module.mk).

# fork() under spillway (issue 12 item 9): fork.sh runs test_fork.c, its
# parent, children and busy threads in fork_*.c beside it.
$(BUILD)/tests/integration/shim_fork: $(BUILD)/tests/integration/shim/test_fork.o \
                                      $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/integration/shim/fork_*.c)) \
                                      $(BUILD)/tests/integration/shim/rig.o $(UNIT_MAIN) \
                                      $(STATS_READER_OBJS) $(FAKECUDA_LIB)
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ $(SHIM_FAKE_LINK) -lcuda $(CHECK_LIBS) $(LDLIBS)
ALL_TARGETS += $(BUILD)/tests/integration/shim_fork
UNIT_TESTS += tests/integration/shim/fork.sh

# Oversubscription (issue 13): oversub.sh runs test_oversub.c.
$(BUILD)/tests/integration/shim_oversub: $(BUILD)/tests/integration/shim/test_oversub.o \
                                         $(BUILD)/tests/integration/shim/rig.o $(UNIT_MAIN) \
                                         $(STATS_READER_OBJS) $(FAKECUDA_LIB)
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ $(SHIM_FAKE_LINK) -lcuda $(CHECK_LIBS) $(LDLIBS)
ALL_TARGETS += $(BUILD)/tests/integration/shim_oversub
UNIT_TESTS += tests/integration/shim/oversub.sh

# What the info log says of each device at its first use (startlog.sh).
UNIT_TESTS += tests/integration/shim/startlog.sh

# Launches counted (issue 10's launch rows rely on it): launches.sh runs
# test_launches.c.
$(BUILD)/tests/integration/shim_launches: $(BUILD)/tests/integration/shim/test_launches.o \
                                          $(BUILD)/tests/integration/shim/driver_api.o \
                                          $(BUILD)/tests/integration/shim/rig.o $(UNIT_MAIN) \
                                          $(STATS_READER_OBJS) $(FAKECUDA_LIB)
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ $(SHIM_FAKE_LINK) -lcuda $(CHECK_LIBS) $(LDLIBS)
ALL_TARGETS += $(BUILD)/tests/integration/shim_launches
UNIT_TESTS += tests/integration/shim/launches.sh

# The work gate's coverage (every device that can reach a page is synced
# before it moves; every submission passes the gate): gates.sh runs
# test_gates.c, its tests in gates_*.c beside it.
$(BUILD)/tests/integration/shim_gates: $(BUILD)/tests/integration/shim/test_gates.o \
                                       $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/integration/shim/gates_*.c)) \
                                       $(BUILD)/tests/integration/shim/rig.o \
                                       $(BUILD)/tests/integration/shim/driver_api.o $(UNIT_MAIN) \
                                       $(STATS_READER_OBJS) $(FAKECUDA_LIB)
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ $(SHIM_FAKE_LINK) -lcuda $(CHECK_LIBS) $(LDLIBS)
ALL_TARGETS += $(BUILD)/tests/integration/shim_gates
UNIT_TESTS += tests/integration/shim/gates.sh

# The parameter scan of launches (the layout cached per function is its
# own; unloads do not grow the cache): params.sh runs test_params.c.
$(BUILD)/tests/integration/shim_params: $(BUILD)/tests/integration/shim/test_params.o \
                                        $(BUILD)/tests/integration/shim/rig.o \
                                        $(BUILD)/tests/integration/shim/driver_api.o $(UNIT_MAIN) \
                                        $(STATS_READER_OBJS) $(FAKECUDA_LIB)
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ $(SHIM_FAKE_LINK) -lcuda $(CHECK_LIBS) $(LDLIBS)
ALL_TARGETS += $(BUILD)/tests/integration/shim_params
UNIT_TESTS += tests/integration/shim/params.sh

# Bad arguments to every hooked function, on the driver alone and under
# spillway (badargs.sh runs badargs.c, its cases in badargs_*.c).
BADARGS_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/integration/shim/badargs*.c))
$(BUILD)/tests/integration/shim_badargs: $(BADARGS_OBJS) $(FAKECUDA_LIB)
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ $(SHIM_FAKE_LINK) -lcuda $(LDLIBS)
ALL_TARGETS += $(BUILD)/tests/integration/shim_badargs
UNIT_TESTS += tests/integration/shim/badargs.sh

# Legacy IPC of pool memory between two processes under spillway: ipc.sh
# runs test_ipc.c (its own main; the cuIpc* entry points are spillway's,
# looked up at run time: fakecuda has none).
$(BUILD)/tests/integration/shim_ipc: $(BUILD)/tests/integration/shim/test_ipc.o $(FAKECUDA_LIB)
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ $(SHIM_FAKE_LINK) -lcuda $(LDLIBS) -ldl
ALL_TARGETS += $(BUILD)/tests/integration/shim_ipc
# Its edges (test_ipc_peer.c): a peer that lies, many pages, a capture.
$(BUILD)/tests/integration/shim_ipc_peer: $(BUILD)/tests/integration/shim/test_ipc_peer.o $(FAKECUDA_LIB)
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ $(SHIM_FAKE_LINK) -lcuda $(LDLIBS) -ldl
ALL_TARGETS += $(BUILD)/tests/integration/shim_ipc_peer
UNIT_TESTS += tests/integration/shim/ipc.sh

# TMA descriptors under spill (tensor_maps.sh runs test_tensor_maps.c): a
# buffer reached only through a CUtensorMap argument is filled back.
$(BUILD)/tests/integration/shim_tensor_maps: $(BUILD)/tests/integration/shim/test_tensor_maps.o \
                                             $(BUILD)/tests/integration/shim/rig.o $(UNIT_MAIN) \
                                             $(STATS_READER_OBJS) $(FAKECUDA_LIB)
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ $(SHIM_FAKE_LINK) -lcuda $(CHECK_LIBS) $(LDLIBS)
ALL_TARGETS += $(BUILD)/tests/integration/shim_tensor_maps
UNIT_TESTS += tests/integration/shim/tensor_maps.sh
