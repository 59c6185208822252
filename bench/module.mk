# bench/: the benchmarks of issue 4, written once against bench/gpuapi.h and
# linked twice:
#   $(BUILD)/bench/rt-static/X, rt-shared/X  the CUDA runtime, linked by nvcc
#       (-cudart static|shared) on the GPU host: what `make bench` and
#       scripts/gpu-check.sh time (GPU_TARGETS, never built by plain `make`,
#       since CI has no nvcc);
#   $(BUILD)/bench/drv/X  the driver API, gcc -lcuda: runs against fakecuda
#       (`make bench-smoke`, tests/gpu/selftest.sh).
# tests/gpu/ links the same objects for its CUDA C acceptance program.
NVCC ?= $(CUDA_HOME)/bin/nvcc
BENCH_PROGS  := alloc_lat alloc_random prealloc alloc_threads
# util.o parses sizes with the product's parser (shim/options.o, pure libc).
BENCH_UTIL   := $(BUILD)/bench/util.o $(OPTIONS_OBJS)
BENCH_COMMON := $(BENCH_UTIL) $(BUILD)/bench/selfstats.o
BENCH_DRV    := $(addprefix $(BUILD)/bench/drv/,$(BENCH_PROGS))
BENCH_RT     := $(addprefix $(BUILD)/bench/rt-static/,$(BENCH_PROGS)) \
                $(addprefix $(BUILD)/bench/rt-shared/,$(BENCH_PROGS))

# Objects come from the generic gcc rule (C11, -Werror); nvcc only links, so
# that the runtime is the one nvcc programs get (-cudart static is nvcc's
# default, shared is what PyTorch uses). The shared ones carry their rpath,
# as tests/gpu's do: the GPU host's loader may not know $(CUDA_HOME)/lib64.
$(BUILD)/bench/drv/%: $(BUILD)/bench/%.o $(BUILD)/bench/gpuapi_drv.o $(BENCH_COMMON) | $(FAKECUDA_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $^ -o $@ -L$(BUILD)/fakecuda -l:libcuda.so.1 $(LDLIBS)
$(BUILD)/bench/rt-static/%: $(BUILD)/bench/%.o $(BUILD)/bench/gpuapi_rt.o $(BENCH_COMMON)
	@mkdir -p $(dir $@)
	$(NVCC) -cudart static $^ -o $@ -lpthread -ldl
$(BUILD)/bench/rt-shared/%: $(BUILD)/bench/%.o $(BUILD)/bench/gpuapi_rt.o $(BENCH_COMMON)
	@mkdir -p $(dir $@)
	$(NVCC) -cudart shared -Xlinker -rpath=$(CUDA_HOME)/lib64 $^ -o $@ -lpthread -ldl

ALL_TARGETS += $(BENCH_DRV)
GPU_TARGETS += $(BENCH_RT) $(BENCH_DRV)

# `make bench` (GPU host): every benchmark, ratios from one run, markdown
# tables on stdout and in $(BUILD)/bench-out/. scripts/gpu-check.sh runs the
# same bench/run.py inside its own time budget.
bench: $(BENCH_RT) $(BENCH_DRV) $(SHIM_LIB)
	@mkdir -p $(BUILD)/bench-out && rm -f $(BUILD)/bench-out/results.jsonl
	python3 bench/run.py --build $(BUILD) --out $(BUILD)/bench-out
	python3 tests/gpu/report.py $(BUILD)/bench-out/results.jsonl --section bench | tee $(BUILD)/bench-out/bench.md

# `make bench-smoke` (no GPU): the driver-API builds under the shim against
# fakecuda, briefly, checking the data they read back.
bench-smoke: $(BENCH_DRV) $(SHIM_LIB) $(FAKECUDA_LIB)
	BUILD=$(BUILD) bench/smoke.sh
.PHONY: bench-smoke

# `make bench-spill` (issue 14, any host): the policy over the fake backend,
# cost per spilled page for pools of 1k, 10k and 40k pages (instructions
# with callgrind when valgrind is installed), ending with one line a script
# can check (bench/spill_bench.sh).
$(BUILD)/bench/spill_bench: $(BUILD)/bench/spill_bench.o $(POLICY_FAKE) \
    $(patsubst %.c,$(BUILD)/%.o,$(wildcard policy/*.c))
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)
ALL_TARGETS += $(BUILD)/bench/spill_bench
bench-spill: $(BUILD)/bench/spill_bench
	BUILD=$(BUILD) bench/spill_bench.sh
.PHONY: bench-spill

# `make bench-threads` (issue 14 item 6, any host): the alloc+free hot path
# from 1 and 2 threads under spillway over fakecuda, as instruction and lock
# counts per pair (callgrind), then wall-clock rates (bench/threads_bench.sh).
bench-threads: $(BENCH_DRV) $(SHIM_LIB) $(FAKECUDA_LIB)
	BUILD=$(BUILD) bench/threads_bench.sh
.PHONY: bench-threads

# `make bench-oversub` (issue 13, any host): pages moved per step by a
# repeating training step past the limit, at F = 1.5 and 2, with the
# no-thrash rule and with demand paging (bench/oversub_bench.c): counts.
$(BUILD)/bench/oversub_bench: $(BUILD)/bench/oversub_bench.o $(BUILD)/tests/unit/policy/stepload.o \
    $(POLICY_FAKE) $(patsubst %.c,$(BUILD)/%.o,$(wildcard policy/*.c))
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)
ALL_TARGETS += $(BUILD)/bench/oversub_bench
bench-oversub: $(BUILD)/bench/oversub_bench
	@echo "bench-oversub on $$(uname -n) ($$(nproc) cores), $$(date -u +%F): policy over the fake backend, 64 KiB pages, 60 warm-up + 20 measured steps"
	$(BUILD)/bench/oversub_bench
.PHONY: bench-oversub
UNIT_TESTS += bench/oversub_smoke.sh
