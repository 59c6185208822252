# spillway: one build for everything. Each module keeps its own rules in
# <dir>/module.mk so that modules can grow without editing this file.
#   make            build the library, tools, fakecuda and tests
#   make test       build and run every CI test (against tests/fakecuda)
#   make demo       the main job: build spillway and run the demo under it
#   make gpu-test   build the conformance programs against the real driver
#   make bench      benchmarks (GPU host)
#   make sanitize   the test suite under ASan + UBSan (build-asan/)
#   make tsan       the threaded suites under ThreadSanitizer (build-tsan/)
#   make test-diff  issue 11's differential run alone (tests/integration/diff, also in test)
#   make soak       10^6 random operations against spillway and the driver alone
#   make install    PREFIX=/usr/local (make uninstall: the same files removed)
#   make docs, check-docs, check-layers  generated docs and the layers'
#                   checks (scripts/module.mk; both checks are in test)

CUDA_HOME ?= /usr/local/cuda
CUDA_INC  := $(CUDA_HOME)/include
BUILD     ?= build
PREFIX    ?= /usr/local

ifeq ($(filter clean,$(MAKECMDGOALS)),)
ifeq ($(wildcard $(CUDA_INC)/cuda.h),)
$(error CUDA headers not found: '$(CUDA_INC)/cuda.h' does not exist. Install the CUDA toolkit headers or set CUDA_HOME=/path/to/cuda)
endif
endif

CC      ?= cc
OPT     ?= -O2 -g
# Everything is PIC (policy/ and stats/ objects go into the shim) and hidden
# by default: the shim exports exactly its list, fakecuda overrides this.
# Thread-locals are initial-exec: the shim is loaded at start (LD_PRELOAD)
# and holds under 200 bytes of them, and the default model called
# __tls_get_addr on every hooked call (6% of an alloc+free pair).
CFLAGS  := -std=c11 -D_GNU_SOURCE $(OPT) -Wall -Wextra -Werror -pthread -fPIC \
           -fvisibility=hidden -ftls-model=initial-exec -I$(CUDA_INC) -I. $(EXTRA_CFLAGS)
LDLIBS  := -pthread -ldl

# Check is used when present; the GPU host has no Check, so the same suites
# then build against tests/unit/minicheck.h.
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS   := $(shell pkg-config --libs check 2>/dev/null)
ifeq ($(CHECK_LIBS),)
CHECK_CFLAGS := -DSPILLWAY_MINICHECK
CHECK_LIBS   := -lm
endif
# $(call state_stamp,FILE,STATE): FILE, rewritten (so newer than what
# depends on it) when it does not hold STATE. A stamp named for its state
# would not do: with .SECONDARY a missing prerequisite rebuilds nothing.
state_stamp = $(shell mkdir -p $(dir $(1)) && { [ "$$(cat $(1) 2>/dev/null)" = "$(2)" ] || echo "$(2)" > $(1); } && echo $(1))

# Which of the two the test objects were built against: a suite whose
# objects mixed them ran no check and passed (Check installed after a
# build), so a change of state rebuilds every test object.
CHECK_STATE := $(if $(findstring MINICHECK,$(CHECK_CFLAGS)),minicheck,check)
CHECK_STAMP := $(call state_stamp,$(BUILD)/tests/.built-with,$(CHECK_STATE))

# Filled in by the modules (see tests/README.md for the conventions):
#   ALL_TARGETS  what `make` builds
#   UNIT_TESTS   programs `make test` runs (Check suites or scripts), in order
#   GPU_TARGETS  what scripts/gpu-check.sh needs built on the GPU host
#                (which has no Check and maybe no ncurses)
ALL_TARGETS :=
UNIT_TESTS  :=
GPU_TARGETS :=
UNIT_MAIN   := $(BUILD)/tests/unit/main.o

# Test sources see Check (or minicheck).
$(BUILD)/tests/%.o: CFLAGS += $(CHECK_CFLAGS)

# Keep every intermediate object: no rebuilds, and nothing printed after the
# test summary.
.SECONDARY:

.PHONY: all test demo gpu-test bench install clean
all: build-all

# Well-known outputs, so that any module can depend on them whatever the
# order in which the modules are included.
FAKECUDA_LIB := $(BUILD)/fakecuda/libcuda.so.1
SHIM_LIB     := $(BUILD)/libspillway.so
# stats/: the writer the shim links, the reader the tools and tests link.
STATS_WRITER_OBJS := $(BUILD)/stats/writer.o $(BUILD)/stats/dirlock.o $(BUILD)/stats/procinfo.o
STATS_READER_OBJS := $(BUILD)/stats/reader.o $(BUILD)/stats/decode.o $(BUILD)/stats/dirlock.o \
                     $(BUILD)/stats/procinfo.o
# shim/'s option layer (pure libc): the parser, the names, what the
# options mean for a device, and sizes as the log shows them
# (size_text.o); the tools, bench and GPU check link it alone.
OPTIONS_OBJS := $(BUILD)/shim/options.o $(BUILD)/shim/options_names.o $(BUILD)/shim/options_limits.o \
                $(BUILD)/shim/size_text.o
# The fake policy backend (tests/unit/policy/fakebackend*.c): the policy
# suites and the policy benchmarks link it.
POLICY_FAKE := $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/unit/policy/fakebackend*.c))

MODULES := $(sort $(wildcard */module.mk tests/*/module.mk tests/*/*/module.mk))
include $(MODULES)

build-all: $(ALL_TARGETS)
.PHONY: build-all

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

# Test objects (the shorter stem wins over the rule above).
$(BUILD)/tests/%.o: tests/%.c $(CHECK_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

gpu-build: $(GPU_TARGETS)
gpu-test:
	scripts/gpu-check.sh
.PHONY: gpu-build

# The programs that take longest (the "slowest" list `make test` ends
# with), started first: with RUN_TESTS_JOBS=N (run-tests.sh), a long one
# started last would leave the other N - 1 idle.
TESTS_FIRST := tests/integration/faults/faults.sh tests/integration/diff/diff.sh \
               tests/gpu/selftest.sh tests/integration/pool/pool.sh \
               tests/integration/shim/spill.sh tests/monitor/test_serve.sh
test: build-all $(UNIT_TESTS)
	@BUILD=$(BUILD) scripts/run-tests.sh $(filter $(TESTS_FIRST),$(UNIT_TESTS)) \
	    $(filter-out $(TESTS_FIRST),$(UNIT_TESTS))

# Issue 11's differential tests (tests/integration/diff/README.md): the ones
# that fail until the fixes land, and the 10^6-operation soak.
DIFF_NEEDS := $(DIFF_DIR)/diffgen $(SHIM_LIB) $(FAKECUDA_LIB)
test-diff: $(DIFF_NEEDS)
	@BUILD=$(BUILD) scripts/run-tests.sh $(DIFF_TESTS)
soak: $(DIFF_NEEDS)
	SPW_TEST_BUILD=$(abspath $(BUILD)) tests/integration/diff/soak.sh
.PHONY: test-diff soak

# The whole suite again with every program and library (the preloaded shim
# too) built under AddressSanitizer and UndefinedBehaviorSanitizer.
SANITIZE_ENV := ASAN_OPTIONS=detect_leaks=0:handle_segv=0:verify_asan_link_order=0:halt_on_error=1 \
                UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
sanitize:
	$(SANITIZE_ENV) $(MAKE) BUILD=$(BUILD)-asan \
	    CC="$(CC) -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" test
.PHONY: sanitize

# The suites whose threads share the pool, the gates, the graphs' books and
# the stats, under ThreadSanitizer: a race report fails the suite (exit 66).
# Not all of make test: TSan forbids threads in a child forked after threads ran (the
# fork suites, policy_move_faults' sweep) and slows fakecuda's timed
# kernels past the integration suites' deadlines (spill_tsan.sh runs the
# spill suite with a patience that outlasts them). gcc warns that it does
# not model atomic_thread_fence (policy/spans.c, lend.c, stats/writer.c):
# those orderings are checked by review, not here.
TSAN_UNIT := policy_stress policy_wait policy_lend policy_spill policy_quiesce policy_alloc \
             policy_free policy_vmm policy_residency policy_lookup stats_segment stats_reader \
             shim_contexts policy_spans shim_param_scan
TSAN_SHIM := tests/integration/shim/launches.sh tests/integration/shim/copies.sh \
             tests/integration/shim/gates.sh tests/integration/shim/graph_mem.sh \
             tests/integration/shim/spill_tsan.sh tests/integration/pool/pool.sh \
             tests/integration/shim/tensor_maps.sh
# The pool's threaded suites only: all of pool.sh takes over 5 minutes
# under TSan, past run-tests.sh's limit.
TSAN_POOL_SUITES := ctx_memory data devices resets
tsan:
	$(MAKE) BUILD=$(BUILD)-tsan EXTRA_CFLAGS=-Wno-error=tsan \
	    CC="$(CC) -fsanitize=thread -fno-omit-frame-pointer" all \
	    $(addprefix $(BUILD)-tsan/tests/unit/,$(TSAN_UNIT))
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" SPW_TEST_POOL_SUITES="$(TSAN_POOL_SUITES)" \
	    RUN_TESTS_TIMEOUT=600 CK_TIMEOUT_MULTIPLIER=3 \
	    BUILD=$(BUILD)-tsan scripts/run-tests.sh \
	    $(addprefix $(BUILD)-tsan/tests/unit/,$(TSAN_UNIT)) $(TSAN_SHIM)
.PHONY: tsan

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
