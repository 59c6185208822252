# tests/fakenvml/: a libnvidia-ml.so.1 with figures from FAKENVML_DEVICES,
# for spillway-top's device line. Tests put its directory on
# LD_LIBRARY_PATH; nothing links it.
FAKENVML_LIB := $(BUILD)/fakenvml/libnvidia-ml.so.1
$(FAKENVML_LIB): $(BUILD)/tests/fakenvml/fakenvml.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -shared -Wl,-soname,libnvidia-ml.so.1 $^ -o $@
ALL_TARGETS += $(FAKENVML_LIB)
