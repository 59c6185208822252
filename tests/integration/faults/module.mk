# tests/integration/faults/: fault injection through spillway (issue 11).
# workload.c runs under spillway against fakecuda while one driver call
# fails (FAKECUDA_FAIL); faults.sh runs it once clean, then once per
# injection point, and prints a table per driver function.
#   make test-faults       the sampled run alone (also part of make test)
#   make test-faults-all   every call of every function (minutes)
FAULTS_IT := $(BUILD)/tests/integration/faults

$(FAULTS_IT)/workload: $(FAULTS_IT)/workload.o $(STATS_READER_OBJS) $(FAKECUDA_LIB)
	$(CC) $(CFLAGS) $(filter %.o,$^) -o $@ -L$(BUILD)/fakecuda \
	    -Wl,-rpath,'$$ORIGIN/../../../fakecuda' -lcuda $(LDLIBS)

ALL_TARGETS += $(FAULTS_IT)/workload
UNIT_TESTS  += tests/integration/faults/faults.sh

test-faults: $(FAULTS_IT)/workload $(SHIM_LIB) $(FAKECUDA_LIB)
	@BUILD=$(BUILD) scripts/run-tests.sh tests/integration/faults/faults.sh
# Not through run-tests.sh: every call takes longer than its 300 s per test.
test-faults-all: $(FAULTS_IT)/workload $(SHIM_LIB) $(FAKECUDA_LIB)
	SPW_TEST_BUILD=$(abspath $(BUILD)) FAULTS_ALL=1 tests/integration/faults/faults.sh
.PHONY: test-faults test-faults-all
