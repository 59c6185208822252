# fakecudart: build/fakecudart/libcudart.so, the part of the shared CUDA
# runtime spillway intercepts, for tests (see cudart.c).
FAKECUDART_LIB := $(BUILD)/fakecudart/libcudart.so

$(FAKECUDART_LIB): $(BUILD)/tests/fakecudart/cudart.o
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,libcudart.so -Wl,--no-undefined $^ -o $@ $(LDLIBS)

ALL_TARGETS += $(FAKECUDART_LIB)
