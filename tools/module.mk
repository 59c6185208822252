# tools/: spillway-top (the monitor) and spillway (the launcher), their man
# pages and the install rules. Tools link the stats reader, never the shim;
# both link the option layer (OPTIONS_OBJS, pure libc) to validate
# SPILLWAY_* as the library does: the launcher before exec, the monitor
# before it reads the directory SPILLWAY_STATS_DIR names.
TOOLS_BIN   := $(BUILD)/tools
TOP_OBJS    := $(patsubst %.c,$(BUILD)/%.o,$(wildcard tools/top_*.c))
LAUNCH_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(wildcard tools/launch*.c))
# The wide ncurses (ncursesw) draws UTF-8 text (a command with /home/josé
# or €) as it is under a UTF-8 locale; the narrow one would draw its bytes
# as M- escapes, so a build with it shows '?' for each such character
# (SPW_CURSES_WIDE unset; spillway-top(1) says so). The stamp rebuilds the
# drawing when the choice changes.
CURSES_WIDE := $(shell pkg-config --exists ncursesw 2>/dev/null && echo with)
CURSES_LIBS := $(if $(CURSES_WIDE),$(shell pkg-config --libs ncursesw),$(shell pkg-config --libs ncurses 2>/dev/null || echo -lncurses))
CURSES_STAMP := $(call state_stamp,$(BUILD)/tools/.curses-wide,$(if $(CURSES_WIDE),wide,narrow))
ifneq ($(CURSES_WIDE),)
$(BUILD)/tools/top_text.o: CFLAGS += -DSPW_CURSES_WIDE
endif
$(BUILD)/tools/top_text.o: $(CURSES_STAMP)

# --serve needs libmicrohttpd; without it (the GPU host may lack it)
# spillway-top still builds and says so in --help. The stamp records which
# way top_serve.o was built, so installing the library rebuilds it.
MHD_LIBS    := $(shell pkg-config --libs libmicrohttpd 2>/dev/null)
MHD_STATE   := $(if $(MHD_LIBS),with,without)
MHD_STAMP   := $(call state_stamp,$(BUILD)/tools/.serve-libmicrohttpd,$(MHD_STATE))
ifneq ($(MHD_LIBS),)
$(BUILD)/tools/top_serve.o: CFLAGS += -DSPW_HAVE_MHD $(shell pkg-config --cflags libmicrohttpd 2>/dev/null)
endif
$(BUILD)/tools/top_serve.o: $(MHD_STAMP)

$(TOOLS_BIN)/spillway-top: $(TOP_OBJS) $(STATS_READER_OBJS) $(OPTIONS_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $^ -o $@ $(CURSES_LIBS) $(MHD_LIBS) -lm $(LDLIBS)
$(TOOLS_BIN)/spillway: $(LAUNCH_OBJS) $(OPTIONS_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $^ -o $@ -lm $(LDLIBS)
ALL_TARGETS += $(TOOLS_BIN)/spillway-top $(TOOLS_BIN)/spillway

# The generator of the docs' option parts (gendocs.c; scripts/gen-docs.sh
# puts them in place: make docs, make check-docs).
$(TOOLS_BIN)/gendocs: $(BUILD)/tools/gendocs.o $(BUILD)/tools/launch_flags.o
	$(CC) $(CFLAGS) $^ -o $@
ALL_TARGETS += $(TOOLS_BIN)/gendocs

# Test helpers: a program that publishes known counters through the writer,
# and an empty library to preload in launcher tests.
$(BUILD)/tests/unit/tools/stats_writer: $(BUILD)/tests/unit/tools/stats_writer.o $(STATS_WRITER_OBJS)
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)
$(BUILD)/tests/unit/tools/libempty.so: $(BUILD)/tests/unit/tools/empty.o
	$(CC) $(CFLAGS) -shared $^ -o $@
# A library that shrinks a file under the launcher between its fstat and its
# reads (a reinstall's truncate, made to happen every time).
$(BUILD)/tests/unit/tools/libshrink.so: $(BUILD)/tests/unit/tools/shrink_on_stat.o
	$(CC) $(CFLAGS) -shared $^ -o $@ -ldl
ALL_TARGETS += $(BUILD)/tests/unit/tools/stats_writer $(BUILD)/tests/unit/tools/libempty.so \
               $(BUILD)/tests/unit/tools/libshrink.so
TOP_MODEL_OBJS := $(patsubst %,$(BUILD)/tools/top_%.o,model rows format json layout width ident container environ gpumap nvml nvml_procs other prom)
$(BUILD)/tests/unit/tools_model: $(BUILD)/tests/unit/tools/test_model.o $(UNIT_MAIN) $(TOP_MODEL_OBJS) $(STATS_OBJS)
	$(CC) $(CFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)
$(BUILD)/tests/unit/tools_layout: $(BUILD)/tests/unit/tools/test_layout.o $(UNIT_MAIN) $(TOP_MODEL_OBJS) $(STATS_OBJS)
	$(CC) $(CFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)
$(BUILD)/tests/unit/tools_ident: $(BUILD)/tests/unit/tools/test_ident.o $(UNIT_MAIN) $(TOP_MODEL_OBJS) $(BUILD)/tools/top_listen.o $(STATS_OBJS)
	$(CC) $(CFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)
# The screen's text (top_text.c, and top_width.c under it) on a screen
# ncurses keeps but never draws; the test knows which ncurses it has.
$(BUILD)/tests/unit/tools_text: $(BUILD)/tests/unit/tools/test_text.o $(UNIT_MAIN) $(BUILD)/tools/top_text.o $(BUILD)/tools/top_width.o
	$(CC) $(CFLAGS) $^ -o $@ $(CHECK_LIBS) $(CURSES_LIBS) $(LDLIBS)
ifneq ($(CURSES_WIDE),)
$(BUILD)/tests/unit/tools/test_text.o: CFLAGS += -DSPW_CURSES_WIDE
endif
$(BUILD)/tests/unit/tools/test_text.o: $(CURSES_STAMP)
UNIT_TESTS  += $(BUILD)/tests/unit/tools_model $(BUILD)/tests/unit/tools_layout $(BUILD)/tests/unit/tools_ident \
               $(BUILD)/tests/unit/tools_text
$(BUILD)/tests/unit/tools_nvml_procs: $(BUILD)/tests/unit/tools/test_nvml_procs.o $(UNIT_MAIN) $(TOP_MODEL_OBJS) $(STATS_OBJS) | $(FAKENVML_LIB) $(FAKENVML_DRIVER_LIBS)
	$(CC) $(CFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)
UNIT_TESTS  += $(BUILD)/tests/unit/tools_nvml_procs
UNIT_TESTS  += tests/unit/tools/test_top.sh tests/unit/tools/test_top_tmux.sh tests/unit/tools/test_top_nvml.sh tests/unit/tools/test_pidns.sh tests/unit/tools/test_launcher.sh tests/unit/tools/test_install.sh

# End to end through the shim and fakecuda (skips until the shim links the
# stats writer).
$(BUILD)/tests/integration/tools/cuda_hold: $(BUILD)/tests/integration/tools/cuda_hold.o $(FAKECUDA_LIB)
	$(CC) $(CFLAGS) $< -o $@ -L$(BUILD)/fakecuda -lcuda $(LDLIBS)
ALL_TARGETS += $(BUILD)/tests/integration/tools/cuda_hold
UNIT_TESTS  += tests/integration/tools/test_shim_stats.sh

# make install PREFIX=/usr/local DESTDIR=: bin/, lib/, share/man/man1/. The
# launcher finds the library as ../lib/libspillway.so from its own path.
# make uninstall (same PREFIX and DESTDIR) removes exactly those files.
MANDIR ?= $(PREFIX)/share/man
INSTALLED := $(PREFIX)/bin/spillway $(PREFIX)/bin/spillway-top $(PREFIX)/lib/libspillway.so \
             $(MANDIR)/man1/spillway.1 $(MANDIR)/man1/spillway-top.1
install: install-spillway
install-spillway: $(TOOLS_BIN)/spillway-top $(TOOLS_BIN)/spillway $(BUILD)/libspillway.so
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(MANDIR)/man1
	install -m 0755 $(TOOLS_BIN)/spillway $(TOOLS_BIN)/spillway-top $(DESTDIR)$(PREFIX)/bin/
	install -m 0755 $(BUILD)/libspillway.so $(DESTDIR)$(PREFIX)/lib/
	install -m 0644 tools/man/spillway.1 tools/man/spillway-top.1 $(DESTDIR)$(MANDIR)/man1/
uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
.PHONY: install-spillway uninstall
