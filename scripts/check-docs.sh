#!/bin/sh
# make check-docs (also one of make test's programs): the docs generated
# from shim/options.def and tools/launch_flags.def have not drifted.
#   1. README.md and the man pages, regenerated into a temporary
#      directory (scripts/gen-docs.sh), are what the tree holds;
#   2. the README's table carries, row for row, the name, default and text
#      that the built `spillway options` prints;
# after a self-test that a changed doc fails both (a check that cannot
# fail checks nothing). Fix a failure with `make docs` (or by editing
# shim/options.def: the README's table is not the source).
# Needs $SPW_TEST_BUILD (or $BUILD) with tools/gendocs and tools/spillway.
set -eu
cd "$(dirname "$0")/.."
B=${SPW_TEST_BUILD:-${BUILD:-build}}
GENDOCS=$B/tools/gendocs SPILLWAY=$B/tools/spillway
DOCS="README.md tools/man/spillway.1 tools/man/spillway-top.1"
for p in "$GENDOCS" "$SPILLWAY"; do
    [ -x "$p" ] || { echo "check-docs: $p is missing (make first)" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# drift SRCDIR: regenerates SRCDIR's docs into a fresh directory and shows
# what differs. Returns 1 on any difference.
drift() {
    rm -rf "$tmp/gen" && mkdir -p "$tmp/gen"
    scripts/gen-docs.sh "$GENDOCS" "$tmp/gen" "$1" || return 1
    rc=0
    for f in $DOCS; do
        diff -u "$1/$f" "$tmp/gen/$f" || rc=1
    done
    return $rc
}

# same_table README OPTIONS: the README's generated table against
# `spillway options`'s lines ("NAME DEFAULT TEXT"), row for row. Names
# and defaults lose their backquotes, "\|" in a cell is "|".
same_table() {
    awk '
        FNR == NR {
            name = $1; def = $2; text = $0
            sub(/^[^ ]+ +[^ ]+ +/, "", text)
            want[++n] = name "\t" def "\t" text
            next
        }
        /BEGIN generated: gendocs readme-options/ { inside = 1; next }
        /END generated: gendocs readme-options/ { inside = 0; next }
        inside && /^\| `/ {
            row = $0
            gsub(/\\\|/, "\001", row)
            sub(/^\| /, "", row); sub(/ \|$/, "", row)
            if (split(row, c, / \| /) != 3) { printf "check-docs: README: not a row of three cells: %s\n", $0; bad++; next }
            for (i = 1; i <= 3; i++) gsub(/\001/, "|", c[i])
            gsub(/^`|`$/, "", c[1]); gsub(/^`|`$/, "", c[2])
            got[++m] = c[1] "\t" c[2] "\t" c[3]
        }
        END {
            for (i = 1; i <= (n > m ? n : m); i++) {
                if (got[i] == want[i]) continue
                printf "check-docs: row %d differs\n  README:           %s\n  spillway options: %s\n", i, got[i], want[i]
                bad++
            }
            if (m == 0) { print "check-docs: README has no generated options table"; bad++ }
            exit bad ? 1 : 0
        }' "$2" "$1"
}

"$SPILLWAY" options >"$tmp/options"

# Self-test: a doc changed in the README only must fail both checks.
mkdir -p "$tmp/bad/tools/man"
for f in $DOCS; do cp "$f" "$tmp/bad/$f"; done
sed 's/^\(| `SPILLWAY_SPILL` | `1` | \)when/\1whenever/' README.md >"$tmp/bad/README.md"
if cmp -s README.md "$tmp/bad/README.md"; then
    echo "check-docs: self-test: found no SPILLWAY_SPILL row to change" >&2; exit 1
fi
if drift "$tmp/bad" >/dev/null 2>&1 || same_table "$tmp/bad/README.md" "$tmp/options" >/dev/null; then
    echo "check-docs: self-test: a changed doc was not caught" >&2; exit 1
fi
echo "check-docs: self-test: a changed doc in the README fails both checks"

rc=0
drift . || { echo "check-docs: the docs differ from what options.def generates: run make docs"; rc=1; }
same_table README.md "$tmp/options" || { echo "check-docs: the README's table differs from '$SPILLWAY options'"; rc=1; }
[ $rc -eq 0 ] && echo "check-docs: ok ($(wc -l <"$tmp/options") variables; README, man pages and spillway options agree)"
exit $rc
