# tests/integration/pool/: the page pool under spillway against fakecuda
# (issue 4), one suite per topic (test_<topic>.c, sharing common.c); pool.sh
# runs every suite under several environments.
POOL_IT := $(BUILD)/tests/integration
POOL_SUITES := $(patsubst tests/integration/pool/test_%.c,%,$(wildcard tests/integration/pool/test_*.c))
POOL_TESTS := $(addprefix $(POOL_IT)/pool_,$(POOL_SUITES))

$(POOL_IT)/pool_%: $(POOL_IT)/pool/test_%.o $(POOL_IT)/pool/common.o $(UNIT_MAIN) $(STATS_READER_OBJS) $(FAKECUDA_LIB)
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ -L$(BUILD)/fakecuda \
	    -Wl,-rpath,'$$ORIGIN/../../fakecuda' -lcuda $(CHECK_LIBS) $(LDLIBS)

# test_passthrough.c's suite spans passthrough_*.c too (not test_*.c: no
# suite of their own).
$(POOL_IT)/pool_passthrough: $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/integration/pool/passthrough_*.c))

ALL_TARGETS += $(POOL_TESTS)
UNIT_TESTS += tests/integration/pool/pool.sh
