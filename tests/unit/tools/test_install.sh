#!/usr/bin/env bash
# make install PREFIX=... DESTDIR=...: the library, both tools and both man
# pages land under DESTDIR/PREFIX with the right modes, and the installed
# launcher preloads the installed library.
set -u
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../../.." && pwd)
dest="$STATS_DIR/dest"
prefix=/opt/spillway-test
if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -s -C "$root" BUILD="$B" install DESTDIR="$dest" PREFIX="$prefix" >"$STATS_DIR/.make" 2>&1; then
    cat "$STATS_DIR/.make"
    not_ok "make install failed"
    finish
fi
p="$dest$prefix"
mode() { stat -c %a "$1"; }
for f in bin/spillway bin/spillway-top lib/libspillway.so; do
    check "$f installed 0755" [ "$(mode "$p/$f" 2>/dev/null)" = 755 ]
done
for f in share/man/man1/spillway.1 share/man/man1/spillway-top.1; do
    check "$f installed 0644" [ "$(mode "$p/$f" 2>/dev/null)" = 644 ]
done
out=$(env -u SPILLWAY_LIB -u LD_PRELOAD "$p/bin/spillway" run -v true 2>&1 | grep '^spillway: LD_PRELOAD=')
check "installed launcher preloads the installed library" [ "$out" = "spillway: LD_PRELOAD=$(realpath "$p/lib/libspillway.so")" ]
check "installed spillway top finds the installed monitor" bash -c '"$1" top --version | grep -q "^spillway-top "' _ "$p/bin/spillway"
# make uninstall removes what install put there, and nothing else.
touch "$p/lib/other.so"
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -s -C "$root" BUILD="$B" uninstall DESTDIR="$dest" PREFIX="$prefix" >"$STATS_DIR/.make" 2>&1
check "make uninstall succeeds" [ $? -eq 0 ]
left=$(cd "$p" && find . -type f | sort | tr '\n' ' ')
check "make uninstall removes the installed files, nothing else (left: $left)" [ "$left" = "./lib/other.so " ]
finish
