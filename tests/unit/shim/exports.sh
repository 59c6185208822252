#!/bin/sh
# libspillway.so exports exactly the names its version script lists (from
# hooks.def and runtime.def, shim/exports.map.in): a name listed there that
# no source defines would silently not be exported (the linker does not
# complain), and anything exported beyond the list would be a leak of an
# internal symbol.
set -eu
B=${SPW_TEST_BUILD:-$(pwd)/build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The version script's global names, one per line.
sed -n '/global:/,/local:/p' "$B/shim/exports.map" | tr ';' '\n' |
    sed 's/global://; s/local:.*//; s/^[[:space:]]*//; s/[[:space:]]*$//' | grep -v '^$' | sort -u >"$tmp/listed"
nm -D --defined-only "$B/libspillway.so" | awk '$2 ~ /^[TWiV]$/ { sub(/@.*/, "", $3); print $3 }' | sort -u >"$tmp/exported"
missing=$(comm -23 "$tmp/listed" "$tmp/exported")
extra=$(comm -13 "$tmp/listed" "$tmp/exported")
[ -z "$missing" ] || { echo "exports.sh: listed but not defined (not exported): $missing"; exit 1; }
[ -z "$extra" ] || { echo "exports.sh: exported but not listed: $extra"; exit 1; }
echo "exports.sh: $(wc -l <"$tmp/listed") names listed, all exported, nothing else"
