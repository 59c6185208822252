#!/usr/bin/env bash
# spillway-top's non-interactive outputs (--once, --json, --prometheus)
# against writers with known counters; sorting and filtering; removal of a
# kill -9'd writer's segment; clear errors for bad flags and bad segments.
set -u
. "$(dirname "$0")/lib.sh"

GiB=1073741824
MiB=1048576
start_writer --cmd "alpha job" --inuse $((2 * GiB)); A=$WPID
start_writer --cmd "beta job" --inuse $((4 * GiB)); Bp=$WPID

# --once: the row of A on GPU 0, field by field.
once=$("$TOP" --once)
row=$(awk -v p="$A" '$1 == p && $3 == 0' <<<"$once")
read -r pid user gpu used limit peak spill allocs out oom cmd <<<"$row"
check "--once lists A on GPU 0" [ "$pid" = "$A" ]
check "--once used 2.0G" [ "$used" = "2.0G" ]
check "--once limit 8.0G" [ "$limit" = "8.0G" ]
check "--once peak 3.0G" [ "$peak" = "3.0G" ]
check "--once spilled 256M" [ "$spill" = "256M" ]
check "--once allocs 3" [ "$allocs" = "3" ]
check "--once spilled out 512M" [ "$out" = "512M" ]
check "--once 1 OOM" [ "$oom" = "1" ]
check "--once command" [ "$cmd" = "alpha job" ]
check "--once user" [ "$user" = "$(id -un)" ]
check "--once GPU 1 row of A" grep -qE "^ +$A +[^ ]+ +1 +100M +4\.0G" <<<"$once"
check "--once device header sums both" grep -qE '^GPU 0 +limit +16G +pool +16G +in use +6\.0G +spilled +512M +host +2\.0G +2 procs' <<<"$once"

# --json: every counter of A's device 0, exactly.
json=$("$TOP" --json)
if command -v python3 >/dev/null; then
    check "--json is valid JSON" python3 -c 'import json,sys; json.load(sys.stdin)' <<<"$json"
fi
proc=$(grep "\"pid\":$A," <<<"$json")
dev0=$(sed -E 's/.*"devices":\[\{"index":0,([^}]*)\}.*/\1/' <<<"$proc")
dev1=$(sed -E 's/.*\{"index":1,([^}]*)\}.*/\1/' <<<"$proc")
field() { grep -oE "\"$2\":[0-9]+" <<<"$1" | cut -d: -f2; }
for kv in limit_bytes=$((8 * GiB)) pool_bytes=$((8 * GiB)) in_use_bytes=$((2 * GiB)) peak_bytes=$((3 * GiB)) \
          spilled_bytes=$((256 * MiB)) host_bytes=$GiB allocs=3 frees=1 ooms=1 spill_bytes=$((512 * MiB)) \
          spill_events=2 fill_bytes=$((256 * MiB)) fill_events=1 copy_htod_bytes=1000 copy_dtoh_bytes=2000 \
          copy_dtod_bytes=3000 launches=5 graph_launches=2 passthrough_ipc_bytes=4096 \
          passthrough_managed_bytes=0 underflows=0; do
    k=${kv%%=*}; v=${kv#*=}
    check "--json device 0 $k = $v" [ "$(field "$dev0" "$k")" = "$v" ]
done
check "--json device 1 in_use_bytes" [ "$(field "$dev1" in_use_bytes)" = $((100 * MiB)) ]
check "--json command" grep -q '"command":"alpha job","command_truncated":false' <<<"$proc"
check "--json config" grep -q '"config":"mem_limit=8G\\nspill=1\\n","config_truncated":false' <<<"$proc"
check "--json lists both processes" [ "$(grep -c '"pid":' <<<"$json")" = 2 ]

# --prometheus: one sample per process and device, counters typed as such.
prom=$("$TOP" --prometheus)
check "--prometheus in use of A" grep -qE "^spillway_in_use_bytes\{pid=\"$A\",user=\"$(id -un)\",command=\"alpha\",gpu=\"0\",cuda_device=\"0\",Hostname=\"$(uname -n)\"[^}]*\} $((2 * GiB))$" <<<"$prom"
check "--prometheus counters end in _total" bash -c '! grep -E "^# TYPE .* counter$" <<<"$1" | grep -v "_total counter$"' _ "$prom"
# One source of names: every counter --json shows is a family of --prometheus.
json_keys=$(grep -oE '"[a-z_]+":[0-9]+' <<<"$dev0" | cut -d'"' -f2 | grep -vx gpu) # gpu: the host index, not a counter
missing=""
for k in $json_keys; do
    m=$(sed -E 's/_(ns|us|ms)$/_seconds/' <<<"$k") # base units for Prometheus
    grep -qE "^# TYPE spillway_${m}(_total)? (gauge|counter)$" <<<"$prom" || missing+=" $k"
done
check "--prometheus has a family for every --json counter${missing:+ (missing:$missing)}" [ -z "$missing" ]
check "--prometheus counter type" grep -qx '# TYPE spillway_allocs_total counter' <<<"$prom"
check "--prometheus gauge type" grep -qx '# TYPE spillway_in_use_bytes gauge' <<<"$prom"
check "--prometheus process count" grep -qx 'spillway_processes 2' <<<"$prom"
check "--prometheus no unlabelled counters" bash -c '! grep -E "^spillway_[a-z_]+ [0-9]+$" <<<"$1" | grep -vE "^spillway_(processes|skipped_segments) "' _ "$prom"

# Sorting and filtering.
pids_in_order() { awk '$3 == 0 && $1 ~ /^[0-9]+$/ {print $1}' | tr '\n' ' '; }
check "default sort: most in use first" [ "$("$TOP" --once | pids_in_order)" = "$Bp $A " ]
check "--reverse" [ "$("$TOP" --once --reverse | pids_in_order)" = "$A $Bp " ]
first=$(printf '%s\n' "$A" "$Bp" | sort -n | head -1); second=$(printf '%s\n' "$A" "$Bp" | sort -n | tail -1)
check "--sort pid" [ "$("$TOP" --once --sort pid | pids_in_order)" = "$first $second " ]
check "--sort command" [ "$("$TOP" --once --sort command | pids_in_order)" = "$A $Bp " ]
check "--filter" [ "$("$TOP" --once --filter beta | pids_in_order)" = "$Bp " ]
check "--once --filter: the title counts what it shows of all" grep -q ' 1 of 2 processes$' <<<"$("$TOP" --once --filter beta)"
check "--once --filter matching none says so" grep -qx '(no process matches the filter)' <<<"$("$TOP" --once --filter nothing-matches)"
json=$("$TOP" --json --filter beta)
check "--json --filter: only the matching process" bash -c '[ "$(grep -c "\"pid\":" <<<"$1")" = 1 ] && grep -q "\"pid\":$2," <<<"$1"' _ "$json" "$Bp"
prom=$("$TOP" --prometheus --filter beta)
check "--prometheus --filter: only the matching process's series" bash -c '! grep -E "^spillway_in_use_bytes\{" <<<"$1" | grep -qv "pid=\"$2\""' _ "$prom" "$Bp"
check "--prometheus --filter: the matching process's series" grep -qE "^spillway_in_use_bytes\{pid=\"$Bp\"" <<<"$prom"
check "--prometheus --filter: the process count is the filter's" grep -qx 'spillway_processes 1' <<<"$prom"
check "--prometheus --filter matching none: no process counted" grep -qx 'spillway_processes 0' <<<"$("$TOP" --prometheus --filter no-such-process)"
# A layout counter in nanoseconds is exported in seconds, and its help says
# so (it said "in nanoseconds ... (exported in seconds)").
check "--prometheus help of a seconds counter says seconds" bash -c 'h=$(grep "^# HELP spillway_spill_seconds_total " <<<"$1"); [[ $h == *"in seconds"* && $h != *nanoseconds* ]]' _ "$prom"
check "--once with --interval shows rates" grep -q 'ALLC/s' <<<"$("$TOP" --once --interval 0.2)"

# kill -9 leaves the segment; the next reader removes it (--keep-dead keeps it).
seg="$STATS_DIR/spillway.$(id -u).$Bp"
kill -9 "$Bp"; wait "$Bp" 2>/dev/null
check "kill -9 leaves the segment" [ -f "$seg" ]
"$TOP" --once --keep-dead >/dev/null 2>&1
check "--keep-dead keeps it" [ -f "$seg" ]
out=$("$TOP" --once 2>&1)
check "next reader removes it" [ ! -e "$seg" ]
check "and says so" grep -q "spillway.$(id -u).$Bp: owner pid $Bp is gone; removed" <<<"$out"
check "dead process not listed" bash -c '! grep -qE "^ +$1 " <<<"$2"' _ "$Bp" "$out"

# A corrupt segment is skipped with a note; the good one still shows.
head -c 300 /dev/urandom >"$STATS_DIR/spillway.$(id -u).1"
chmod 600 "$STATS_DIR/spillway.$(id -u).1"
out=$("$TOP" --once 2>"$STATS_DIR/.err"); rc=$?
check "corrupt segment: exit 0" [ $rc -eq 0 ]
check "corrupt segment: note on stderr" grep -q "skipped spillway.$(id -u).1: size 300 out of range" "$STATS_DIR/.err"
check "corrupt segment: A still listed" grep -qE "^ +$A " <<<"$out"
ln -s "spillway.$(id -u).$A" "$STATS_DIR/spillway.$(id -u).2"
"$TOP" --once >/dev/null 2>"$STATS_DIR/.err"
check "symlinked segment: skipped with a note" grep -q "spillway.$(id -u).2: is a symbolic link" "$STATS_DIR/.err"
rm -f "$STATS_DIR/spillway.$(id -u).1" "$STATS_DIR/spillway.$(id -u).2"

# Normal exit removes the segment.
kill -TERM "$A"; wait "$A" 2>/dev/null
check "normal exit removes the segment" [ ! -e "$STATS_DIR/spillway.$(id -u).$A" ]
check "empty directory: says so" grep -q 'no processes running under spillway' <<<"$("$TOP" --once)"

# Bad flags: exit 2 with a one-line reason.
bad() {
    local want=$1; shift
    local err; err=$("$TOP" "$@" 2>&1 >/dev/null); local rc=$?
    [ $rc -eq 2 ] && grep -q "$want" <<<"$err"
}
check "--interval 0 refused" bad "invalid interval '0'" --once --interval 0
check "--interval abc refused" bad "invalid interval 'abc'" --once --interval abc
check "--sort bogus refused" bad "invalid sort key 'bogus'" --once --sort bogus
# The number grammar of spillway's variables (shim/options.h): strtod took
# hex and exponents.
check "--interval 0x1 refused" bad "invalid interval '0x1'" --once --interval 0x1
check "--interval 1e0 refused" bad "invalid interval '1e0'" --once --interval 1e0
check "--interval inf refused" bad "invalid interval 'inf'" --once --interval inf
check "--interval .5 accepted" grep -q 'no processes running' <<<"$("$TOP" --once --interval .5)"
# An empty value is an invalid option (exit 2, as the man page says), not
# a directory that cannot be read (exit 1): every flag that takes one.
check "--dir '' refused" bad "option '--dir' needs a value, got an empty one" --once --dir ""
check "--dir= refused" bad "option '--dir' needs a value, got an empty one" --once --dir=
check "-f '' refused" bad "option '-f' needs a value, got an empty one" --once -f ""
check "--filter '' refused" bad "option '--filter' needs a value" --once --filter ""
check "--hostname '' refused" bad "option '--hostname' needs a value" --once --hostname ""
check "-d '' refused" bad "option '-d' needs a value" --once -d ""
check "--sort '' refused" bad "option '--sort' needs a value" --once --sort ""
check "--serve '' refused" bad "option '--serve' needs a value" --serve ""
check "unknown option refused" bad "unknown option '--frobnicate'" --frobnicate
check "missing value refused" bad "needs a value" --once --sort
check "no terminal refused" bad "not a terminal" </dev/null
# Two ways of running: refused, not the last silently winning.
check "--once --json refused" bad "once and --json cannot be combined" --once --json
check "-p --serve refused" bad "prometheus and --serve cannot be combined" -p --serve 127.0.0.1:1
check "the same flag twice is one" grep -q '"processes"' <<<"$("$TOP" --json -j)"
# The same strictness as the library and the launcher: a misspelt variable
# would otherwise make it read another directory, showing nothing.
check "unknown SPILLWAY_* name refused, the near one named" \
    env SPILLWAY_STAT_DIR=/run/spillway bash -c "$(declare -f bad); TOP='$TOP'; bad 'did you mean SPILLWAY_STATS_DIR' --once"
check "an empty SPILLWAY_STATS_DIR refused" \
    env SPILLWAY_STATS_DIR= bash -c "$(declare -f bad); TOP='$TOP'; bad 'SPILLWAY_STATS_DIR' --once"
err=$("$TOP" --once --dir /nonexistent/spw 2>&1); rc=$?
check "unreadable directory: exit 1 with reason" bash -c '[ "$1" -eq 1 ] && grep -q "cannot read /nonexistent/spw" <<<"$2"' _ $rc "$err"
check "--help" grep -q -- '--prometheus' <<<"$("$TOP" --help)"
# Valid UTF-8 in a command is shown as it is (it was '?' a byte: '€'
# became '???' in --json); a terminal escape is still replaced. In a
# directory of its own, so the checks above see their two writers only.
U_DIR="$STATS_DIR/utf8"; mkdir -p "$U_DIR"
SPILLWAY_STATS_DIR=$U_DIR start_writer --cmd "/home/josé/bin/träin €5 $(printf '\033')[31m"; U=$WPID
ujson=$("$TOP" --json --dir "$U_DIR")
check "UTF-8: --json keeps it" grep -q '"command":"/home/josé/bin/träin €5 ?\[31m"' <<<"$ujson"
if command -v python3 >/dev/null; then
    check "UTF-8: --json is valid JSON" python3 -c 'import json,sys; json.load(sys.stdin)' <<<"$ujson"
fi
check "UTF-8: --once keeps it" grep -qE "^ +$U .* /home/josé/bin/träin €5 \?\[31m$" <<<"$("$TOP" --once --dir "$U_DIR")"
check "UTF-8: --prometheus label keeps it" grep -q "command=\"träin\"" <<<"$("$TOP" --prometheus --dir "$U_DIR")"
kill "$U"; wait "$U" 2>/dev/null
finish
