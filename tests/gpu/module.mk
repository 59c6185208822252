# tests/gpu/: what only a real GPU can check (scripts/gpu-check.sh runs it).
# The CUDA C acceptance program is linked like the benchmarks (bench/module.mk):
# by nvcc with the static and the shared runtime for the GPU rows, and
# against the driver API for the fakecuda self-test (tests/gpu/selftest.sh).
GPU_OOM_OBJS := $(BUILD)/tests/gpu/alloc_until_oom.o $(BENCH_UTIL)
GPU_OOM_DRV  := $(BUILD)/tests/gpu/drv/alloc_until_oom
GPU_OOM_RT   := $(BUILD)/tests/gpu/rt-static/alloc_until_oom $(BUILD)/tests/gpu/rt-shared/alloc_until_oom

$(GPU_OOM_DRV): $(GPU_OOM_OBJS) $(BUILD)/bench/gpuapi_drv.o | $(FAKECUDA_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $^ -o $@ -L$(BUILD)/fakecuda -l:libcuda.so.1 $(LDLIBS)
$(BUILD)/tests/gpu/rt-static/alloc_until_oom: $(GPU_OOM_OBJS) $(BUILD)/bench/gpuapi_rt.o
	@mkdir -p $(dir $@)
	$(NVCC) -cudart static $^ -o $@ -lpthread -ldl
$(BUILD)/tests/gpu/rt-shared/alloc_until_oom: $(GPU_OOM_OBJS) $(BUILD)/bench/gpuapi_rt.o
	@mkdir -p $(dir $@)
	$(NVCC) -cudart shared -Xlinker -rpath=$(CUDA_HOME)/lib64 $^ -o $@ -lpthread -ldl

ALL_TARGETS += $(GPU_OOM_DRV)
# The GPU host also needs the library and the launcher (literal paths: the
# shim's and the tools' module.mk are read after this one). spillway-top is
# left out: it needs ncurses, which the GPU host may lack; gpu-check.sh
# builds it when it can and reads the segments itself otherwise.
GPU_TARGETS += $(GPU_OOM_RT) $(GPU_OOM_DRV) $(SHIM_LIB) $(BUILD)/tools/spillway
UNIT_TESTS  += tests/gpu/selftest.sh

# The spill row: a driver-API program holding more than its limit, computing
# on all of it (kernels of the conformance suites: PTX on a GPU, C on
# fakecuda), linked by soname like those suites.
GPU_SPILL := $(BUILD)/tests/gpu/spill_check
$(GPU_SPILL): $(BUILD)/tests/gpu/spill_check.o $(BENCH_UTIL) $(BUILD)/bench/selfstats.o \
              $(BUILD)/bench/gpuapi_drv.o $(BUILD)/tests/unit/driver/kernels.o | $(FAKECUDA_LIB)
	$(CC) $(CFLAGS) $^ -o $@ -L$(BUILD)/fakecuda -l:libcuda.so.1 $(CHECK_LIBS) $(LDLIBS)

ALL_TARGETS += $(GPU_SPILL)
GPU_TARGETS += $(GPU_SPILL)

# What spill costs a launch that never spills (the spill section of the check).
GPU_LAUNCH := $(BUILD)/tests/gpu/launch_cost
$(GPU_LAUNCH): $(BUILD)/tests/gpu/launch_cost.o $(BUILD)/tests/unit/driver/kernels.o | $(FAKECUDA_LIB)
	$(CC) $(CFLAGS) $^ -o $@ -L$(BUILD)/fakecuda -l:libcuda.so.1 $(CHECK_LIBS) $(LDLIBS)

ALL_TARGETS += $(GPU_LAUNCH)
GPU_TARGETS += $(GPU_LAUNCH)

# Runtime launches reach the gate (issue 10): launch_count.c (main: the
# plan, the stats segment before and after, the verdict) over two back ends
# (launch_count.h). The runtime one is CUDA C, compiled by nvcc (the kernel
# and its <<<>>> launches: PTX for compute_75, which any later GPU JITs, and
# SASS for sm_90, H100/H200) and linked by nvcc with -cudart static and
# -cudart shared; the driver-API twin (the conformance suites' kernels) is
# what the fakecuda self-test runs.
NVCC_ARCH     ?= -gencode arch=compute_75,code=compute_75 -gencode arch=compute_90,code=sm_90
# nvcc's -Werror reaches the host gcc too (nvcc --dryrun shows it on every gcc
# call): scripts/gpu-check.sh empties this on the GPU host, whose gcc may
# warn where ours does not (EXTRA_CFLAGS=-Wno-error does not reach nvcc).
NVCC_WERROR   ?= -Werror all-warnings
GPU_LC_OBJS   := $(BUILD)/tests/gpu/launch_count.o $(BUILD)/bench/selfstats.o $(OPTIONS_OBJS)
GPU_LC_RT_OBJ := $(BUILD)/tests/gpu/launch_count_rt.o
GPU_LC_DRV    := $(BUILD)/tests/gpu/drv/launch_count
GPU_LC_RT     := $(BUILD)/tests/gpu/rt-static/launch_count $(BUILD)/tests/gpu/rt-shared/launch_count

$(GPU_LC_RT_OBJ): tests/gpu/launch_count_rt.cu tests/gpu/launch_count.h
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_ARCH) -O2 -I. -Xcompiler -Wall,-Wextra $(NVCC_WERROR) -c $< -o $@
$(GPU_LC_DRV): $(GPU_LC_OBJS) $(BUILD)/tests/gpu/launch_count_drv.o $(BUILD)/tests/unit/driver/kernels.o \
               | $(FAKECUDA_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $^ -o $@ -L$(BUILD)/fakecuda -l:libcuda.so.1 $(LDLIBS)
$(BUILD)/tests/gpu/rt-static/launch_count: $(GPU_LC_OBJS) $(GPU_LC_RT_OBJ)
	@mkdir -p $(dir $@)
	$(NVCC) -cudart static $^ -o $@ -lpthread -ldl
$(BUILD)/tests/gpu/rt-shared/launch_count: $(GPU_LC_OBJS) $(GPU_LC_RT_OBJ)
	@mkdir -p $(dir $@)
	$(NVCC) -cudart shared -Xlinker -rpath=$(CUDA_HOME)/lib64 $^ -o $@ -lpthread -ldl

ALL_TARGETS += $(GPU_LC_DRV)
GPU_TARGETS += $(GPU_LC_RT) $(GPU_LC_DRV)

# Legacy IPC of pool memory (the ipc stage): CUDA runtime calls in plain C,
# linked by nvcc; GPU only (fakecuda's twin is tests/integration/shim/ipc.sh).
GPU_IPC := $(BUILD)/tests/gpu/rt-shared/ipc_check
$(BUILD)/tests/gpu/ipc_check_rt.o: tests/gpu/ipc_check.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(CUDA_HOME)/include -c $< -o $@
$(GPU_IPC): $(BUILD)/tests/gpu/ipc_check_rt.o
	@mkdir -p $(dir $@)
	$(NVCC) -cudart shared -Xlinker -rpath=$(CUDA_HOME)/lib64 $^ -o $@
GPU_TARGETS += $(GPU_IPC)
