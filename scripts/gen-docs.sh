#!/bin/sh
# Regenerates the docs' parts that come from shim/options.def and
# tools/launch_flags.def: between each pair of lines
#   ... BEGIN generated: gendocs MODE ...
#   ... END generated: gendocs MODE ...
# of README.md and the man pages goes the output of `gendocs MODE`.
#
#   scripts/gen-docs.sh GENDOCS OUTDIR [SRCDIR]
# reads SRCDIR's (default: the source tree's) README.md and man pages and
# writes them to OUTDIR (which may be SRCDIR:
# `make docs`). `make check-docs` writes into a temporary directory and
# compares. POSIX sh and awk only.
set -eu
[ $# -eq 2 ] || [ $# -eq 3 ] || { echo "usage: $0 GENDOCS OUTDIR [SRCDIR]" >&2; exit 2; }
abs() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
gendocs=$(abs "$1") out=$(abs "$2")
if [ $# -eq 3 ]; then cd "$3"; else cd "$(dirname "$0")/.."; fi
FILES="README.md tools/man/spillway.1 tools/man/spillway-top.1"
MODES="readme-options man-options man-environment man-top-environment"

parts=$(mktemp -d)
trap 'rm -rf "$parts"' EXIT INT TERM
for m in $MODES; do
    "$gendocs" "$m" >"$parts/$m"
done

# One file: every generated part replaced, the rest kept byte for byte.
splice() {
    awk -v parts="$parts" -v file="$1" '
        function fail(msg) { printf "gen-docs: %s:%d: %s\n", file, NR, msg > "/dev/stderr"; bad = 1; exit 1 }
        /BEGIN generated: gendocs / {
            if (mode != "") fail("BEGIN inside the part of " mode)
            mode = $0; sub(/.*BEGIN generated: gendocs /, "", mode); sub(/[ \t].*/, "", mode)
            part = parts "/" mode
            print
            n = 0
            while ((getline line < part) > 0) { print line; n++ }
            close(part)
            if (n == 0) fail("no part named " mode)
            found++
            next
        }
        /END generated: gendocs / {
            end = $0; sub(/.*END generated: gendocs /, "", end); sub(/[ \t].*/, "", end)
            if (end != mode) fail("END of " end " where " (mode == "" ? "no part" : mode) " is open")
            mode = ""
            print
            next
        }
        mode == "" { print }
        END {
            if (bad) exit 1
            if (mode != "") { printf "gen-docs: %s: the part of %s does not end\n", file, mode > "/dev/stderr"; exit 1 }
            if (!found) { printf "gen-docs: %s: no generated part\n", file > "/dev/stderr"; exit 1 }
        }' "$1"
}

for f in $FILES; do
    mkdir -p "$out/$(dirname "$f")"
    splice "$f" >"$parts/new"
    # Only a changed file is written: make sees no new timestamp otherwise.
    cmp -s "$parts/new" "$out/$f" 2>/dev/null || cp "$parts/new" "$out/$f"
done
