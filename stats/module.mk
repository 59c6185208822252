# stats/: the shared-memory ABI (layout.h), the writer the shim links and the
# reader the tools link (STATS_WRITER_OBJS and STATS_READER_OBJS, in the
# Makefile so that modules read before this one can name them).
STATS_OBJS        := $(sort $(STATS_WRITER_OBJS) $(STATS_READER_OBJS))

ALL_TARGETS += $(STATS_OBJS)

# The writer's suite: test_segment.c, its tests in segment_*.c beside it.
STATS_SEGMENT_OBJS := $(patsubst %.c,$(BUILD)/%.o,tests/unit/stats/test_segment.c tests/unit/stats/writer_rig.c \
                        $(wildcard tests/unit/stats/segment_*.c))
$(BUILD)/tests/unit/stats_segment: $(STATS_SEGMENT_OBJS) $(UNIT_MAIN) $(STATS_OBJS)
	$(CC) $(CFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)
$(BUILD)/tests/unit/stats_reader: $(BUILD)/tests/unit/stats/test_reader.o $(UNIT_MAIN) $(STATS_OBJS)
	$(CC) $(CFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)
$(BUILD)/tests/unit/stats_fuzz: $(BUILD)/tests/unit/stats/test_fuzz.o $(UNIT_MAIN) $(STATS_OBJS)
	$(CC) $(CFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)
UNIT_TESTS += $(BUILD)/tests/unit/stats_segment $(BUILD)/tests/unit/stats_reader $(BUILD)/tests/unit/stats_fuzz
