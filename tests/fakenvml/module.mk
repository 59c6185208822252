# tests/fakenvml/: a libnvidia-ml.so.1 with figures from FAKENVML_DEVICES
# and processes from FAKENVML_PROCS, for spillway-top's device line and its
# NVML process figures. Tests put its directory on LD_LIBRARY_PATH; nothing
# links it. The same source as the drivers whose process lists differ
# (FAKENVML_DRIVER in fakenvml.c): build/fakenvml/ a current one,
# build/fakenvml/r535/ R535's (_v3 writing 32-byte elements),
# build/fakenvml/r470/ one without _v3, build/fakenvml/r418/ one with
# only NVML 1's unversioned functions.
FAKENVML_LIB := $(BUILD)/fakenvml/libnvidia-ml.so.1
$(FAKENVML_LIB): $(BUILD)/tests/fakenvml/fakenvml.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -shared -Wl,-soname,libnvidia-ml.so.1 $^ -o $@
ALL_TARGETS += $(FAKENVML_LIB)

FAKENVML_DRIVERS := 535 470 418
define fakenvml_driver
$(BUILD)/tests/fakenvml/r$(1)/fakenvml.o: tests/fakenvml/fakenvml.c tests/fakenvml/module.mk
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS) -DFAKENVML_DRIVER=$(1) -MMD -MP -c $$< -o $$@
$(BUILD)/fakenvml/r$(1)/libnvidia-ml.so.1: $(BUILD)/tests/fakenvml/r$(1)/fakenvml.o
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS) -shared -Wl,-soname,libnvidia-ml.so.1 $$^ -o $$@
ALL_TARGETS += $(BUILD)/fakenvml/r$(1)/libnvidia-ml.so.1
FAKENVML_DRIVER_LIBS += $(BUILD)/fakenvml/r$(1)/libnvidia-ml.so.1
endef
$(foreach v,$(FAKENVML_DRIVERS),$(eval $(call fakenvml_driver,$(v))))
