# tests/integration/diff/: differential randomized testing (issue 11).
# diffgen runs one random sequence of driver operations on the driver alone
# and under spillway; the scripts judge spillway against the driver
# (README.md). Everything failed on 04f325f; all of it passes since the
# policy rewrite and runs with `make test` (`make test-diff` runs the
# differential run alone); `make soak` is the 10^6-operation run.
DIFF_DIR  := $(BUILD)/tests/integration/diff
DIFF_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/integration/diff/*.c))

# Linked against libcuda with no rpath: the scripts point LD_LIBRARY_PATH at
# fakecuda; without it the same binary runs on the real driver.
$(DIFF_DIR)/diffgen: $(DIFF_OBJS) $(FAKECUDA_LIB)
	$(CC) $(CFLAGS) $(DIFF_OBJS) -o $@ -L$(BUILD)/fakecuda -lcuda -lm $(LDLIBS)

ALL_TARGETS += $(DIFF_DIR)/diffgen
UNIT_TESTS += tests/integration/diff/selftest.sh
UNIT_TESTS += tests/integration/diff/repro1.sh
UNIT_TESTS += tests/integration/diff/repro2.sh
UNIT_TESTS += tests/integration/diff/repro3.sh
UNIT_TESTS += tests/integration/diff/repro4.sh
UNIT_TESTS += tests/integration/diff/diff.sh

DIFF_TESTS := tests/integration/diff/diff.sh
# `make test-diff` and `make soak` are in the top Makefile.
