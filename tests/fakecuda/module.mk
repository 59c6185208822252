# fakecuda: build/fakecuda/libcuda.so.1, the CPU emulation of the driver.
FAKECUDA_SRCS := $(wildcard tests/fakecuda/*.c)
FAKECUDA_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(FAKECUDA_SRCS))

# fakecuda exports the driver's names; what it exports is marked FC_EXPORT.
# -Bsymbolic: like the real driver, the addresses cuGetProcAddress hands out
# are fakecuda's own, never a preloaded library's functions of the same name.
$(FAKECUDA_OBJS): CFLAGS += -Wno-deprecated-declarations

$(FAKECUDA_LIB): $(FAKECUDA_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,libcuda.so.1 -Wl,--no-undefined -Wl,-Bsymbolic $^ -o $@ $(LDLIBS)
	ln -sf libcuda.so.1 $(dir $@)libcuda.so

ALL_TARGETS += $(FAKECUDA_LIB)

# The same objects as a driver older than what spillway hooks: only the
# entry points of old_driver.map (olddriver.sh).
FAKECUDA_OLD_LIB := $(BUILD)/fakecuda/old/libcuda.so.1
$(FAKECUDA_OLD_LIB): $(FAKECUDA_OBJS) tests/fakecuda/old_driver.map
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,libcuda.so.1 -Wl,--no-undefined -Wl,-Bsymbolic \
		-Wl,--version-script=tests/fakecuda/old_driver.map $(FAKECUDA_OBJS) -o $@ $(LDLIBS)

ALL_TARGETS += $(FAKECUDA_OLD_LIB)

# The same objects as a driver of CUDA 12.7, the last before cuStreamGetDevice
# (the device of a stream, which spillway otherwise finds through the
# stream's context): cuDriverGetVersion answers 12070, and what procs.def
# dates later is neither exported (the version script hides it) nor served
# by cuGetProcAddress (procaddr.c). Tests run on it with
# LD_LIBRARY_PATH=build/fakecuda/12.7 (launches.sh, gates.sh).
FAKECUDA_OLDER_VERSION := 12070
FAKECUDA_OLDER_DIR := $(BUILD)/fakecuda/12.7
FAKECUDA_OLDER_LIB := $(FAKECUDA_OLDER_DIR)/libcuda.so.1
$(BUILD)/tests/fakecuda/older/driver_version.o: CFLAGS += -DFC_OLDER_VERSION=$(FAKECUDA_OLDER_VERSION)
$(BUILD)/tests/fakecuda/older/driver_version.o: tests/fakecuda/module.mk
$(FAKECUDA_OLDER_DIR)/exports.map: tests/fakecuda/procs.def tests/fakecuda/module.mk
	@mkdir -p $(dir $@)
	awk -v v=$(FAKECUDA_OLDER_VERSION) -F'[(), ]+' \
		'BEGIN { print "{ global: *; local:" } \
		 /^FC_PROC\(/ && $$3 + 0 > v { print "    " $$4 ";"; \
			if ($$5 == "PTSZ") print "    " $$4 "_ptsz;"; \
			if ($$5 == "PTDS") print "    " $$4 "_ptds;" } \
		 END { print "};" }' $< > $@
$(FAKECUDA_OLDER_LIB): $(FAKECUDA_OBJS) $(BUILD)/tests/fakecuda/older/driver_version.o $(FAKECUDA_OLDER_DIR)/exports.map
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,libcuda.so.1 -Wl,--no-undefined -Wl,-Bsymbolic \
		-Wl,--version-script=$(FAKECUDA_OLDER_DIR)/exports.map $(filter %.o,$^) -o $@ $(LDLIBS)

ALL_TARGETS += $(FAKECUDA_OLDER_LIB)
