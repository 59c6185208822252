# demo/: `make demo`, the README's main job: build spillway and run a CUDA
# program under it that allocates past its limit (see run.sh).
DEMO_BIN := $(BUILD)/demo/spillway-demo

$(DEMO_BIN): $(BUILD)/demo/demo.o
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

ALL_TARGETS += $(DEMO_BIN)

# Literal paths: shim/module.mk is read after this file.
demo: $(BUILD)/libspillway.so $(DEMO_BIN) $(FAKECUDA_LIB)
	@BUILD=$(BUILD) demo/run.sh
