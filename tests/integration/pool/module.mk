# tests/integration/pool/: the page pool under spillway against fakecuda
# (issue 4). pool.sh runs the suite under several environments.
POOL_IT := $(BUILD)/tests/integration

$(POOL_IT)/pool_suite: $(POOL_IT)/pool/test_pool.o $(UNIT_MAIN) $(BUILD)/stats/reader.o \
                       $(BUILD)/stats/decode.o $(BUILD)/stats/procinfo.o $(FAKECUDA_LIB)
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ -L$(BUILD)/fakecuda \
	    -Wl,-rpath,'$$ORIGIN/../../fakecuda' -lcuda $(CHECK_LIBS) $(LDLIBS)

ALL_TARGETS += $(POOL_IT)/pool_suite
UNIT_TESTS += tests/integration/pool/pool.sh
