# spillway: one build for everything. Each module keeps its own rules in
# <dir>/module.mk so that modules can grow without editing this file.
#   make            build the library, tools, fakecuda and tests
#   make test       build and run every CI test (against tests/fakecuda)
#   make demo       the main job: build spillway and run the demo under it
#   make gpu-test   build the conformance programs against the real driver
#   make bench      benchmarks (GPU host)
#   make install    PREFIX=/usr/local

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
CFLAGS  := -std=c11 -D_GNU_SOURCE $(OPT) -Wall -Wextra -Werror -pthread -I$(CUDA_INC) -I. $(EXTRA_CFLAGS)
LDLIBS  := -pthread -ldl

# Check is used when present; the GPU host has no Check, so the same suites
# then build against tests/unit/minicheck.h.
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS   := $(shell pkg-config --libs check 2>/dev/null)
ifeq ($(CHECK_LIBS),)
CHECK_CFLAGS := -DSPILLWAY_MINICHECK
endif

# Filled in by the modules.
ALL_TARGETS :=
UNIT_TESTS  :=

.PHONY: all test demo gpu-test bench install clean
all: build-all

MODULES := $(sort $(wildcard */module.mk tests/*/module.mk))
include $(MODULES)

build-all: $(ALL_TARGETS)
.PHONY: build-all

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

test: build-all $(UNIT_TESTS)
	@BUILD=$(BUILD) scripts/run-tests.sh $(UNIT_TESTS)

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
