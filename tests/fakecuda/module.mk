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
