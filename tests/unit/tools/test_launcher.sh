#!/usr/bin/env bash
# The spillway launcher: options become SPILLWAY_* variables, the library is
# found next to the binary (installed and build-tree layouts) or through
# $SPILLWAY_LIB/--lib, bad values stop before exec with exit 2 and one line,
# and `spillway top` runs the monitor. Preloads an empty library, so that
# these tests do not depend on the shim.
set -u
. "$(dirname "$0")/lib.sh"
[ -x "$SPW" ] || { echo "FAIL: $SPW not built"; exit 1; }
unset LD_PRELOAD SPILLWAY_LIB SPILLWAY_MEM_LIMIT SPILLWAY_MEM_FRACTION SPILLWAY_SPILL SPILLWAY_LOG

show='echo "LD_PRELOAD=$LD_PRELOAD LIMIT=${SPILLWAY_MEM_LIMIT-} FRACTION=${SPILLWAY_MEM_FRACTION-} SPILL=${SPILLWAY_SPILL-} PREALLOC=${SPILLWAY_PREALLOCATE-} HOST=${SPILLWAY_HOST_LIMIT-} STATS=${SPILLWAY_STATS-} LOG=${SPILLWAY_LOG-}"'
lib=$(realpath "$EMPTY_LIB")

out=$(SPILLWAY_LIB=$lib "$SPW" run --limit 8G --no-spill -- sh -c "$show")
check "run sets LD_PRELOAD, limit and spill" [ "$out" = "LD_PRELOAD=$lib LIMIT=8G FRACTION= SPILL=0 PREALLOC= HOST= STATS= LOG=" ]
out=$(SPILLWAY_LIB=$lib "$SPW" run -f 0.5 --no-preallocate --host-limit 16G --no-stats --log debug sh -c "$show")
check "run sets the other variables" [ "$out" = "LD_PRELOAD=$lib LIMIT= FRACTION=0.5 SPILL= PREALLOC=0 HOST=16G STATS=0 LOG=debug" ]
# --fraction with SPILLWAY_MEM_LIMIT in the environment (a job's profile, a
# Slurm TaskProlog): the limit wins over any fraction, so the flag the user
# typed did nothing, without a word. The command line wins over the
# environment, as --limit does: the inherited limit is dropped, and one
# line on stderr says so.
err=$(SPILLWAY_MEM_LIMIT=8G SPILLWAY_LIB=$lib "$SPW" run --fraction 0.5 -- sh -c "$show" 2>&1 >"$STATS_DIR/frac.out")
out=$(cat "$STATS_DIR/frac.out")
check "--fraction wins over SPILLWAY_MEM_LIMIT from the environment" [ "$out" = "LD_PRELOAD=$lib LIMIT= FRACTION=0.5 SPILL= PREALLOC= HOST= STATS= LOG=" ]
check "... and says so in one line" bash -c '[ "$(wc -l <<<"$1")" = 1 ] && [[ $1 == "spillway: --fraction 0.5 replaces SPILLWAY_MEM_LIMIT=8G"*"environment"* ]]' _ "$err"
err=$(SPILLWAY_MEM_LIMIT=8G SPILLWAY_LIB=$lib "$SPW" run --limit 0=4G --fraction 0.5 -- sh -c "$show" 2>&1 >"$STATS_DIR/frac.out")
out=$(cat "$STATS_DIR/frac.out")
check "--limit and --fraction together: both kept, nothing said" [ "$out|$err" = "LD_PRELOAD=$lib LIMIT=0=4G FRACTION=0.5 SPILL= PREALLOC= HOST= STATS= LOG=|" ]
err=$(SPILLWAY_MEM_LIMIT=8G SPILLWAY_LIB=$lib "$SPW" run --no-spill -- sh -c "$show" 2>&1 >"$STATS_DIR/frac.out")
out=$(cat "$STATS_DIR/frac.out")
check "without --fraction the environment's limit stays" [ "$out|$err" = "LD_PRELOAD=$lib LIMIT=8G FRACTION= SPILL=0 PREALLOC= HOST= STATS= LOG=|" ]
other="$STATS_DIR/other.so"
cp "$lib" "$other"
out=$(LD_PRELOAD=$other SPILLWAY_LIB=$lib "$SPW" run sh -c 'echo "$LD_PRELOAD"')
check "keeps an existing LD_PRELOAD after spillway" [ "$out" = "$lib:$other" ]
out=$(LD_PRELOAD=$lib SPILLWAY_LIB=$lib "$SPW" run sh -c 'echo "$LD_PRELOAD"')
check "does not preload twice" [ "$out" = "$lib" ]
# README, man page: the library is put first, also when the user's
# LD_PRELOAD already names it after another library (which would otherwise
# interpose its symbols before spillway's).
out=$(LD_PRELOAD="$other:$lib" SPILLWAY_LIB=$lib "$SPW" run sh -c 'echo "$LD_PRELOAD"')
check "moves spillway first when LD_PRELOAD has it later" [ "$out" = "$lib:$other" ]
out=$(LD_PRELOAD="$other $lib:$other" SPILLWAY_LIB=$lib "$SPW" run sh -c 'echo "$LD_PRELOAD"')
check "moves spillway first across space-separated entries" [ "$out" = "$lib:$other:$other" ]
out=$(LD_PRELOAD="$other $other" SPILLWAY_LIB=$lib "$SPW" run sh -c 'echo "$LD_PRELOAD"')
check "keeps the separators between the other entries" [ "$out" = "$lib:$other $other" ]
out=$(SPILLWAY_LIB=$lib "$SPW" run -- sh -c 'echo "$@"' x --limit 1G)
check "the command's own options are left alone" [ "$out" = "--limit 1G" ]
SPILLWAY_LIB=$lib "$SPW" run sh -c 'exit 7'
check "exit status is the command's" [ $? -eq 7 ]

# Bad values stop before exec: exit 2, one line naming the variable.
refused() {
    local want=$1; shift
    local err; err=$(SPILLWAY_LIB=$lib "$@" 2>&1 >/dev/null); local rc=$?
    [ $rc -eq 2 ] && [ "$(wc -l <<<"$err")" -eq 1 ] && grep -q -- "$want" <<<"$err"
}
check "bad --limit" refused "SPILLWAY_MEM_LIMIT='lots'" "$SPW" run --limit lots -- true
check "bad --fraction" refused "SPILLWAY_MEM_FRACTION='1.5'" "$SPW" run --fraction 1.5 true
check "bad --log" refused "SPILLWAY_LOG='loud'" "$SPW" run --log loud true
check "bad variable already in the environment" refused "SPILLWAY_SPILL='maybe'" env SPILLWAY_SPILL=maybe "$SPW" run true
check "command not run when refused" bash -c '! SPILLWAY_LIB=$1 "$2" run --limit x -- touch "$3/ran" 2>/dev/null; [ ! -e "$3/ran" ]' _ "$lib" "$SPW" "$STATS_DIR"
check "unknown option" refused "unknown option '--frob'" "$SPW" run --frob true
check "missing value" refused "option '--limit' needs a value" "$SPW" run --limit
# The option at fault is named, wherever it stands in a cluster of short
# options, and an abbreviation that fits several is said to be one.
check "unknown short option first in a cluster" refused "unknown option '-x'" "$SPW" run -xv true
check "unknown short option last in a cluster" refused "unknown option '-x'" "$SPW" run -vx true
check "missing value in a cluster" refused "option '-l' needs a value" "$SPW" run -vl
check "ambiguous abbreviation" refused "option '--no' is ambiguous" "$SPW" run --no true
check "value given to a flag without one" refused "option '--no-spill' takes no value" "$SPW" run --no-spill=1 true
check "no command" refused "no command to run" "$SPW" run --limit 1G
check "unknown subcommand" refused "unknown command 'walk'" "$SPW" walk
check "missing library" refused "library '/nonexistent/lib.so' (from SPILLWAY_LIB)" env SPILLWAY_LIB=/nonexistent/lib.so "$SPW" run true
# An empty value is what a script leaves when the variable it meant to
# expand is missing: refused (exit 2) as the flag typed, for every flag
# that takes a value, not taken as unset nor named as the variable.
check "empty --lib is refused" refused "option '--lib' needs a value, got an empty one" "$SPW" run --lib "" true
check "empty --lib= is refused" refused "option '--lib' needs a value, got an empty one" "$SPW" run --lib= true
check "empty --limit is refused" refused "option '--limit' needs a value, got an empty one" "$SPW" run --limit "" true
check "empty -l is refused" refused "option '-l' needs a value, got an empty one" "$SPW" run -l "" true
check "empty --log= is refused" refused "option '--log' needs a value, got an empty one" "$SPW" run --log= true
check "empty --fraction is refused" refused "option '--fraction' needs a value" "$SPW" run --fraction "" true
check "empty --host-limit is refused" refused "option '--host-limit' needs a value" "$SPW" run --host-limit "" true
check "empty --oversubscribe is refused" refused "option '--oversubscribe' needs a value" "$SPW" run --oversubscribe "" true
# The variables' number grammar (shim/options.h): no hex, no exponent.
check "--fraction 0x0.8 refused" refused "SPILLWAY_MEM_FRACTION='0x0.8'" "$SPW" run --fraction 0x0.8 true
check "--oversubscribe 0x2 refused" refused "SPILLWAY_OVERSUBSCRIBE='0x2'" "$SPW" run --oversubscribe 0x2 true
check "--limit 0x8G refused: hex" refused "SPILLWAY_MEM_LIMIT='0x8G': accepted:" "$SPW" run --limit 0x8G true
# A library the loader would skip ("cannot be preloaded ... ignored") ran
# the program without spillway, unlimited: refused before exec instead.
printf 'not a library\n' >"$STATS_DIR/text.so"
check "a directory as --lib is refused" refused "library '$STATS_DIR' (from --lib): not a shared library" "$SPW" run --lib "$STATS_DIR" true
check "a text file as SPILLWAY_LIB is refused" refused "(from SPILLWAY_LIB): not a shared library" env SPILLWAY_LIB="$STATS_DIR/text.so" "$SPW" run true
# Any other shared library (libcuda.so, a neighbour of the right one) is
# loadable, so the loader preloaded it and the program ran with no limit,
# exit 0: refused by its dynamic symbols, never by loading it.
check "a shared library that is not spillway's is refused" refused "library '$B/fakecuda/libcuda.so.1' (from --lib): not spillway's library" "$SPW" run --lib "$B/fakecuda/libcuda.so.1" true
check "another library as SPILLWAY_LIB is refused" refused "not spillway's library" env SPILLWAY_LIB="$B/fakecuda/libcuda.so.1" "$SPW" run true
check "the real library is taken" bash -c '[ "$("$1" run --lib "$2" sh -c "echo \$LD_PRELOAD" 2>/dev/null)" = "$(realpath "$2")" ]' _ "$SPW" "$B/libspillway.so"
check "refused library: command not run" bash -c '! "$1" run --lib "$2" -- touch "$3/ran-lib" 2>/dev/null; [ ! -e "$3/ran-lib" ]' _ "$SPW" "$STATS_DIR/text.so" "$STATS_DIR"
check "--lib wins over SPILLWAY_LIB" bash -c '[ "$(SPILLWAY_LIB=/nonexistent "$1" run --lib "$2" sh -c "echo \$LD_PRELOAD")" = "$2" ]' _ "$SPW" "$lib"
SPILLWAY_LIB=$lib "$SPW" run /nonexistent/program 2>/dev/null
check "missing command: 127" [ $? -eq 127 ]
# A library cut short or corrupt (a reinstall under way, a bad copy) is
# refused with what is wrong, exit 2: the launcher read its symbols from a
# mapping and died of SIGBUS when the file shrank under it, and took a
# header that points past the end for a library without spillway's export.
# It reads with pread now, every offset checked against the file's size.
cut=$(( $(stat -c %s "$lib") / 2 ))
head -c "$cut" "$lib" >"$STATS_DIR/half.so"
check "a library cut in half is refused as such" refused "library '$STATS_DIR/half.so' (from --lib): cannot be read as a shared library: the file ends at byte $cut, before the end of its section headers (byte [0-9]*): truncated or corrupt" "$SPW" run --lib "$STATS_DIR/half.so" true
# poke FILE OFFSET BYTES: writes the bytes (printf's escapes) at OFFSET.
poke() { printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none; }
header() { readelf -h "$1" | sed -n "s/^ *$2: *\([0-9]*\).*/\1/p"; }
if readelf -h "$lib" 2>/dev/null | grep -q 'Class: *ELF64'; then
    # Elf64_Ehdr: e_shentsize at 58, e_shnum at 60; Elf64_Shdr: 64 bytes,
    # sh_offset at 24. 0x7f7f... is large in either byte order.
    cp "$lib" "$STATS_DIR/many.so"; poke "$STATS_DIR/many.so" 60 '\x7f\x7f'
    check "section headers counted past the end: refused" refused "(from --lib): cannot be read as a shared library: the file ends at byte [0-9]*, before the end of its section headers" "$SPW" run --lib "$STATS_DIR/many.so" true
    cp "$lib" "$STATS_DIR/entsize.so"; poke "$STATS_DIR/entsize.so" 58 '\x7f\x7f'
    check "section headers of the wrong size: refused as corrupt" refused "cannot be read as a shared library: section headers of [0-9]* bytes, not 64: corrupt" "$SPW" run --lib "$STATS_DIR/entsize.so" true
    dynsym=$(readelf -SW "$lib" | sed -n 's/^ *\[ *\([0-9]*\)\] \.dynsym .*/\1/p')
    shoff=$(header "$lib" 'Start of section headers')
    cp "$lib" "$STATS_DIR/dynsym.so"; poke "$STATS_DIR/dynsym.so" $((shoff + dynsym * 64 + 24)) '\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f'
    check "dynamic symbols past the end: refused" refused "cannot be read as a shared library: the file ends at byte [0-9]*, before the end of its dynamic symbols (byte" "$SPW" run --lib "$STATS_DIR/dynsym.so" true
else
    echo "ok - corrupt section headers: skipped, not an ELF64 build"
fi
# The file shrinks between the launcher's fstat and its reads, every time
# (libshrink.so: a reinstall's truncate, made to happen then).
SHRINK=$B/tests/unit/tools/libshrink.so
cp "$B/libspillway.so" "$STATS_DIR/shrinking.so"
err=$(LD_PRELOAD=$SHRINK SPW_TEST_SHRINK_PATH="$STATS_DIR/shrinking.so" SPW_TEST_SHRINK_TO=4096 \
      "$SPW" run --lib "$STATS_DIR/shrinking.so" true 2>&1); rc=$?
if [ "$(stat -c %s "$STATS_DIR/shrinking.so")" = 4096 ]; then
    check "a library truncated while read: exit 2, no SIGBUS" [ $rc -eq 2 ]
    check "... and one line saying so" bash -c '[ "$(wc -l <<<"$1")" = 1 ] && grep -q "cannot be read as a shared library: reading its section headers: the file has 4096 bytes now, [0-9]* when opened: truncated meanwhile (being reinstalled?)" <<<"$1"' _ "$err"
else
    echo "ok - truncated while read: skipped, libshrink.so could not stand in for fstat (glibc before 2.33)"
fi

# Finding the library next to the binary: installed layout, build layout.
root="$STATS_DIR/prefix"
mkdir -p "$root/bin" "$root/lib"
cp "$SPW" "$root/bin/spillway"
cp "$lib" "$root/lib/libspillway.so"
out=$(env -u SPILLWAY_LIB "$root/bin/spillway" run sh -c 'echo "$LD_PRELOAD"')
check "installed layout: PREFIX/lib/libspillway.so" [ "$out" = "$(realpath "$root/lib/libspillway.so")" ]
rm -r "$root/lib"
cp "$lib" "$root/libspillway.so"
out=$(env -u SPILLWAY_LIB "$root/bin/spillway" run sh -c 'echo "$LD_PRELOAD"')
check "build layout: ../libspillway.so" [ "$out" = "$(realpath "$root/libspillway.so")" ]
rm "$root/libspillway.so"
check "no library anywhere: says where it looked" refused "tried $root/bin/../lib/libspillway.so" env -u SPILLWAY_LIB "$root/bin/spillway" run true
# Installed under a path with a space, which LD_PRELOAD cannot carry: said,
# not "cannot find" (the file is there); a link to it from a path without
# one, given as --lib, runs.
spaced="$STATS_DIR/my prefix"
mkdir -p "$spaced/bin" "$spaced/lib"
cp "$SPW" "$spaced/bin/spillway"
cp "$lib" "$spaced/lib/libspillway.so"
check "installed under a space: says so" refused "found $spaced/bin/../lib/libspillway.so, but its path has a space or colon, which LD_PRELOAD cannot carry; use --lib with a link to it" env -u SPILLWAY_LIB "$spaced/bin/spillway" run true
ln -s "$spaced/lib/libspillway.so" "$STATS_DIR/linked.so"
out=$(env -u SPILLWAY_LIB "$spaced/bin/spillway" run --lib "$STATS_DIR/linked.so" sh -c 'echo "$LD_PRELOAD"')
check "installed under a space: a link given as --lib runs" [ "$out" = "$STATS_DIR/linked.so" ]
check "a link inside a spaced path is still refused" refused "its path has a space or colon" env -u SPILLWAY_LIB "$spaced/bin/spillway" run --lib "$spaced/lib/libspillway.so" true

# spillway top runs the spillway-top next to it.
start_writer --cmd "launched job"
check "spillway top --once" grep -q "launched job" <<<"$("$SPW" top --once)"
check "spillway --help documents run and the variables" bash -c '"$1" --help | grep -q -- "--no-spill" && "$1" --help | grep -q SPILLWAY_MEM_FRACTION' _ "$SPW"
check "spillway options lists the variables" grep -q SPILLWAY_HOST_LIMIT <<<"$("$SPW" options)"
err=$("$SPW" options extra 2>&1 >/dev/null); rc=$?
check "spillway options with an argument: exit 2, named" bash -c '[ "$1" -eq 2 ] && grep -q "options takes no argument, got .extra." <<<"$2"' _ $rc "$err"
check "spillway --help names --version" grep -q -- '--version' <<<"$("$SPW" --help)"

# Man pages: present and free of roff warnings when groff is there.
man_dir="$(dirname "$0")/../../../tools/man"
for page in spillway.1 spillway-top.1; do
    check "man page $page exists" [ -s "$man_dir/$page" ]
    if command -v groff >/dev/null; then
        check "man page $page renders cleanly" bash -c '[ -z "$(groff -man -Tutf8 -ww -z "$1" 2>&1)" ]' _ "$man_dir/$page"
    fi
done
finish
