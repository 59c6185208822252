# policy/: page pool, VA arena, sub-allocator, page table, residency.
# Its objects go into the shim (the lead links $(POLICY_OBJS) there); the
# unit suites link them with a fake backend ($(POLICY_FAKE), the top
# Makefile's: tests/unit/policy/fakebackend*.c).
POLICY_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(wildcard policy/*.c))
POLICY_SUITES := alloc free vmm lookup residency spill stress fit wait oversub lend move_faults quiesce spans export
POLICY_TESTS := $(addprefix $(BUILD)/tests/unit/policy_,$(POLICY_SUITES))

$(BUILD)/tests/unit/policy_%: $(BUILD)/tests/unit/policy/test_%.o $(POLICY_FAKE) $(UNIT_MAIN) $(POLICY_OBJS)
	$(CC) $(CFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)

# Alloc+free pair latency against the fake backend (not run by `make test`).
$(BUILD)/policy_bench: $(BUILD)/tests/unit/policy/bench.o $(POLICY_FAKE) $(POLICY_OBJS)
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

# A suite's checks in files beside its test_X.c: spill_*.c for test_spill.c,
# move_faults_*.c for test_move_faults.c, wait_*.c for test_wait.c.
$(BUILD)/tests/unit/policy_spill: $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/unit/policy/spill_*.c))
$(BUILD)/tests/unit/policy_move_faults: $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/unit/policy/move_faults_*.c))
$(BUILD)/tests/unit/policy_wait: $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/unit/policy/wait_*.c))
# The repeating step of issue 13 (also bench/oversub_bench.c).
POLICY_STEPLOAD := $(BUILD)/tests/unit/policy/stepload.o
$(BUILD)/tests/unit/policy_oversub: $(POLICY_STEPLOAD)

ALL_TARGETS += $(POLICY_OBJS) $(POLICY_TESTS) $(BUILD)/policy_bench
UNIT_TESTS  += $(POLICY_TESTS)
