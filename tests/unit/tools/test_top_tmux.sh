#!/usr/bin/env bash
# spillway-top's interactive screen, driven through tmux: it shows the
# process rows, sorts, filters, opens the detail view with its graphs, shows
# the help, kills with confirmation and quits cleanly; its title, header and
# command column stay readable at 80, 100, 132 and 200 columns. Every wait
# polls the screen with a timeout; nothing sleeps a fixed long time.
set -u
. "$(dirname "$0")/lib.sh"

if ! command -v tmux >/dev/null 2>&1; then
    echo "SKIP: tmux is not installed (scripts/setup.sh installs it); interactive screen not tested"
    exit 0
fi
# A private tmux server: never touch the user's sessions. A session of its
# own keeps it up while the screens under test come and go: a server left
# with no session exits, and a new session asked of it meanwhile fails
# ("server exited unexpectedly", seen on a loaded machine).
SOCK="spw-test-$$"
T() { tmux -L "$SOCK" -f /dev/null "$@"; }
cleanup_tmux() { T kill-server 2>/dev/null; cleanup; }
trap cleanup_tmux EXIT
T new-session -d -s keeper "sleep 100000" || { echo "FAIL: cannot start tmux"; exit 1; }

start_writer --cmd "alpha job" --inuse 2147483648; A=$WPID
start_writer --cmd "beta job" --inuse 4294967296 --ramp; Bp=$WPID

S=top # the session screen and key look at
screen() { T capture-pane -p -t "$S"; }
shows() { screen | grep -qE -- "$1"; }
hides() { ! screen | grep -qE -- "$1"; }
# Line number on screen of the first line matching a pattern.
line_of() { screen | grep -nE -- "$1" | head -1 | cut -d: -f1; }
above() { local a b; a=$(line_of "$1"); b=$(line_of "$2"); [ -n "$a" ] && [ -n "$b" ] && [ "$a" -lt "$b" ]; }
key() { T send-keys -t "$S" "$@"; }

# The exit status goes to a file: tmux's own record of it is not reliable.
EXIT_FILE="$STATS_DIR/.top-exit"
T new-session -d -s top -x 100 -y 30 \
    "env SPILLWAY_STATS_DIR='$STATS_DIR' '$TOP' --interval 0.2 --no-color; echo \$? >'$EXIT_FILE'" || {
    echo "FAIL: cannot start tmux"; exit 1; }

check "shows alpha's row" poll 10 shows "^ +$A +[^ ]+ +0 .*alpha job"
check "shows beta's row" poll 10 shows "^ +$Bp +[^ ]+ +0 .*beta job"
check "shows the device header" poll 5 shows '^GPU0 '
check "title shows the sort" poll 5 shows 'sort IN USE v'
check "in-use sort: beta above alpha" poll 5 above "^ +$Bp .*beta job" "^ +$A .*alpha job"

first=$(printf '%s\n' "$A" "$Bp" | sort -n | head -1); second=$(printf '%s\n' "$A" "$Bp" | sort -n | tail -1)
key P
check "P sorts by pid" poll 5 shows 'sort PID v'
check "pid order" poll 5 above "^ +$first +[^ ]+ +0 " "^ +$second +[^ ]+ +0 "
key r
check "r reverses" poll 5 shows 'sort PID \^'
check "reversed pid order" poll 5 above "^ +$second +[^ ]+ +0 " "^ +$first +[^ ]+ +0 "
key s
check "s cycles to the next column" poll 5 shows 'sort USER'
key M r
check "M sorts by memory again" poll 5 shows 'sort IN USE v'
# No NVML here: GPU MEM is no column, and s and < pass it by.
key s
check "s passes GPU MEM by without NVML's figures" poll 5 shows 'sort PEAK v'
key '<'
check "and < too" poll 5 shows 'sort IN USE v'

key / a l p h a
check "filter prompt" poll 5 shows 'Filter: alpha_'
key Enter
check "filter hides beta" poll 5 hides "beta job"
check "filter keeps alpha" poll 5 shows "alpha job"
key c
check "c clears the filter" poll 5 shows "beta job"

# Detail view of the first row (beta: most in use).
key g Enter
check "detail view opens" poll 5 shows "command: beta job"
check "detail shows config" poll 5 shows "config: mem_limit=8G spill=1"
check "detail shows the counters" poll 5 shows "^GPU +LIMIT +POOL +IN USE"
check "detail shows how spill went" poll 5 shows "spill events [0-9]+ .* syncs [0-9]+ +stalled [0-9.]+ s +host-page waits [0-9]+"
check "detail shows waits and refusals that went wrong" poll 5 shows "waits timed out 2  backed off 7  spills refused 1  kept out by faults 2(\\.0)?M"
check "detail shows the launches and their rate" poll 5 shows "launches [0-9.]+[kM]?  graph launches 2  [1-9][0-9.]*[kM]?/s"
check "detail graph of in use" poll 5 shows "^In use: now"
check "detail graph of spilled" poll 5 shows "^Spilled: now"
check "graphs have bars" poll 10 shows "#"
key Escape
check "Esc returns to the list" poll 5 shows "^ +PID +USER +GPU"

key h
check "h shows the help" poll 5 shows "this help"
check "the help says K signals only processes under spillway" shows "K +send SIGTERM to the selected process under spillway \(asks y/N\)$"
# A resize is no key: the help is drawn again at the new size, not left.
T resize-window -t "$S" -x 120 -y 30
check "a resize redraws the help at the new width" poll 5 bash -c "[ \$(tmux -L '$SOCK' -f /dev/null capture-pane -p -t '$S' | head -1 | wc -L) -gt 100 ]"
check "and keeps the help" shows "this help"
key x
check "any key leaves the help" poll 5 shows "^ +PID +USER +GPU"

# Kill with confirmation: n keeps it, y sends SIGTERM.
key g K
check "K asks first" poll 5 shows "Send SIGTERM to pid $Bp\? \[y/N\]"
# Nor does a resize answer the question.
T resize-window -t "$S" -x 132 -y 30
check "a resize redraws the question at the new width" poll 5 bash -c "[ \$(tmux -L '$SOCK' -f /dev/null capture-pane -p -t '$S' | head -1 | wc -L) -gt 120 ]"
check "and keeps asking" shows "Send SIGTERM to pid $Bp\? \[y/N\]"
key n
T resize-window -t "$S" -x 100 -y 30
check "n keeps the process" poll 5 hides "Send SIGTERM"
check "beta still running" kill -0 "$Bp"
key K y
check "y sends SIGTERM" poll 5 shows "sent SIGTERM to pid $Bp"
check "beta exited" poll 5 bash -c "! kill -0 $Bp 2>/dev/null"
check "beta's row goes" poll 5 hides "beta job"

key q
check "q quits" poll 5 test -s "$EXIT_FILE"
check "exit status 0" [ "$(cat "$EXIT_FILE" 2>/dev/null)" = 0 ]

# The same screen with colours (tmux's terminal has them): rows, detail, quit.
rm -f "$EXIT_FILE"
T new-session -d -s top -x 80 -y 24 \
    "env SPILLWAY_STATS_DIR='$STATS_DIR' '$TOP' --interval 0.2; echo \$? >'$EXIT_FILE'"
check "colour: shows alpha's row in 80 columns" poll 10 shows "^ +$A +[^ ]+ +0 .*alpha"
has_colour() { T capture-pane -e -p -t top | grep -qE $'\e\\[([0-9]+;)*(3[0-7]|4[0-7])m'; }
check "colour: colours are drawn" poll 5 has_colour
# The help at 80x24: whole, above the bottom line (its last line was
# drawn under the key hints, which left its end after them).
key h
check "80x24: the help's last line whole" poll 5 shows "^  and rows and a \+N count for the processes not under spillway\.$"
bottom_is_hints() { [ "$(screen | tail -1)" = "h help  Enter details  s sort  / filter  K kill  q quit" ]; }
check "80x24: the bottom line only the key hints" bottom_is_hints
T resize-window -t "$S" -x 80 -y 18
check "80x18: the help cut above the bottom line, not under it" poll 5 bash -c \
    '[ "$(tmux -L "$1" -f /dev/null capture-pane -p -t top | wc -l)" = 18 ] && [ "$(tmux -L "$1" -f /dev/null capture-pane -p -t top | tail -1)" = "h help  Enter details  s sort  / filter  K kill  q quit" ]' _ "$SOCK"
T resize-window -t "$S" -x 80 -y 24
key x
key Enter
check "colour: detail view" poll 5 shows "command: alpha job"
key q q
check "colour: quits with status 0" poll 5 grep -qsx 0 "$EXIT_FILE"

# Layout at 80, 100, 132 and 200 columns with a filter typed and the sort on
# SPILLED (issue 11): every word of the title and the header is whole, the
# filter shows in full, and the command column shows the program and its
# arguments, dropping directories only where the width requires it.
LONG_CMD="/opt/ml/venv/bin/trainer --epochs 10 --data /datasets/imagenet/train"
start_writer --cmd "$LONG_CMD" --inuse 1073741824; Tp=$WPID
title_words_whole() {
    local w words
    read -ra words <<<"$(screen | head -1)"
    for w in "${words[@]}"; do
        case $w in
        spillway-top|proc|procs|of|every|sort|SPILLED|v|filter|trainer|h|help|q|quit) ;;
        *) [[ $w =~ ^([0-9]+|[0-9]+p|[0-9]+/[0-9]+p|[0-9.]+s|[0-9]{2}:[0-9]{2}:[0-9]{2})$ ]] || {
               echo "  title word '$w' in: $(screen | head -1)"; return 1; } ;;
        esac
    done
}
header_words_whole() {
    local w header words
    header=$(screen | grep -m1 -E '^ +PID ')
    [[ $header == *' COMMAND' ]] || { echo "  header: $header"; return 1; }
    read -ra words <<<"$header"
    for w in "${words[@]}"; do
        case $w in PID|USER|GPU|IN|USE|PEAK|SPILL|ALLC/s|SPL/s|FIL/s|OOM|COMMAND) ;;
        *) echo "  header word '$w' in: $header"; return 1 ;; esac
    done
}
# The text of the trainer's row under the COMMAND heading.
command_cell() {
    local header row col
    header=$(screen | grep -m1 -E '^ +PID ')
    row=$(screen | grep -m1 -E "^ +$Tp ")
    col=${header%%COMMAND*}
    printf '%s\n' "${row:${#col}}"
}
bottom_hints() { screen | tail -1 | grep -q '^h help  Enter details  s sort  / filter  K kill  q quit$'; }
command_is() { [ "$(command_cell)" = "$1" ]; }
command_shows() { poll 5 command_is "$1" || { echo "  command cell: '$(command_cell)', want '$1'"; return 1; }; }
expect_cmd() {
    case $1 in
    80) echo "trainer --epochs 10" ;;
    100) echo "trainer --epochs 10 --data train" ;;
    132) echo "trainer --epochs 10 --data /datasets/imagenet/train" ;;
    *) echo "$LONG_CMD" ;;
    esac
}
for W in 80 100 132 200; do
    prev=$S; S=layout$W
    T new-session -d -s "$S" -x "$W" -y 24 \
        "env SPILLWAY_STATS_DIR='$STATS_DIR' '$TOP' --interval 0.2 --no-color"
    T kill-session -t "$prev" 2>/dev/null
    check "$W cols: trainer's row" poll 10 shows "^ +$Tp "
    key S / t r a i n e r Enter
    check "$W cols: title shows the sort" poll 5 shows '^ spillway-top .* sort SPILLED v'
    check "$W cols: title shows the whole filter" poll 5 shows '  filter trainer( {2,}|$)'
    check "$W cols: filter hides alpha" poll 5 hides 'alpha job'
    check "$W cols: title counts what the filter keeps, of all" poll 5 shows '^ spillway-top .* (1 of [0-9]+ procs|1/[0-9]+p) '
    check "$W cols: every title word whole" title_words_whole
    check "$W cols: every header word whole" header_words_whole
    check "$W cols: command column" command_shows "$(expect_cmd "$W")"
    check "$W cols: key hints on the bottom line" bottom_hints
done
# The detail view shows the command and the config whole (README,
# spillway-top(1)): wrapped over the rows they need, and scrolled to where
# the screen is too short. Both were cut at the right edge.
W_DIR="$STATS_DIR/wide"; mkdir -p "$W_DIR"
WCMD="/opt/ml/venv/bin/trainer$(printf ' --option-%02d value' $(seq 20)) --last END-OF-COMMAND"
WCFG="device.0.limit=8589934592
device.1.limit=4294967296
SPILLWAY_MEM_FRACTION=0.75
SPILLWAY_MEM_LIMIT=0=8G,1=4G
SPILLWAY_PREALLOCATE=1
SPILLWAY_SPILL=1
SPILLWAY_IPC=1
SPILLWAY_HOST_LIMIT=auto
SPILLWAY_OVERSUBSCRIBE=1
SPILLWAY_HOST_RESERVE=auto
SPILLWAY_STATS=1
SPILLWAY_LOG=warn
SPILLWAY_DISABLE=0
SPILLWAY_STATS_DIR=/run/spillway/$(printf 'x%.0s' $(seq 150))/END-OF-DIR
SPILLWAY_DRIVER=/usr/lib/x86_64-linux-gnu/libcuda.so.1
"
SPILLWAY_STATS_DIR=$W_DIR start_writer --cmd "$WCMD" --config "$WCFG"; Wp=$WPID
screen_text() { screen | tr -d '\n'; }
for H in 50 24; do
    prev=$S; S=wide$H
    T new-session -d -s "$S" -x 160 -y "$H" \
        "env SPILLWAY_STATS_DIR='$W_DIR' '$TOP' --interval 0.2 --no-color"
    T kill-session -t "$prev" 2>/dev/null
    check "160x$H: the row" poll 10 shows "^ +$Wp "
    key Enter
    check "160x$H: detail view" poll 5 shows "^command: /opt/ml/venv/bin/trainer"
    check "160x$H: the command whole" poll 5 bash -c "$(declare -f screen screen_text T); SOCK='$SOCK' S='$S'; screen_text | grep -q -- '--option-20 value --last END-OF-COMMAND'"
    check "160x$H: config's first entries" shows "^config: device.0.limit=8589934592 device.1.limit=4294967296"
    check "160x$H: the config's later entries" poll 5 shows "^  .*SPILLWAY_LOG=warn"
    check "160x$H: a long value whole" poll 5 bash -c "$(declare -f screen screen_text T); SOCK='$SOCK' S='$S'; screen_text | grep -q 'xxxxx/END-OF-DIR'"
    check "160x$H: the last entry" poll 5 shows "SPILLWAY_DRIVER=/usr/lib/x86_64-linux-gnu/libcuda.so.1"
    key End
    check "160x$H: the graphs, scrolled to" poll 5 shows "^Spilled: now"
done
key Home
check "160x24: Home scrolls back to the command" poll 5 shows "^command: /opt/ml"
check "160x24: and the bottom graph is out of view" hides "^Spilled: now"
key Escape

# While the stats directory cannot be read the rows go (dead processes
# among them would pass for the present) and the reason stands in their
# place; they come back with the directory.
mv "$W_DIR" "$W_DIR.away"
check "directory gone: the rows go" poll 5 hides "^ +$Wp "
check "directory gone: the reason in the body" poll 5 bash -c "$(declare -f screen T); SOCK='$SOCK' S='$S'; screen | sed '\$d' | grep -q 'cannot read $W_DIR'"
mv "$W_DIR.away" "$W_DIR"
check "directory back: the rows too" poll 5 shows "^ +$Wp "
kill "$Wp"

# UTF-8 in a command shows as it is under a UTF-8 locale (the wide ncurses
# is linked where present): it was a '?' per byte.
if ldd "$TOP" | grep -q ncursesw && locale -a 2>/dev/null | grep -qiE '^c\.utf-?8$'; then
    U_DIR="$STATS_DIR/utf8"; mkdir -p "$U_DIR"
    SPILLWAY_STATS_DIR=$U_DIR start_writer --cmd "/home/josé/bin/träin €5"; Up=$WPID
    prev=$S; S=utf8
    T new-session -d -s "$S" -x 100 -y 30 \
        "env LC_ALL=C.UTF-8 SPILLWAY_STATS_DIR='$U_DIR' '$TOP' --interval 0.2 --no-color"
    T kill-session -t "$prev" 2>/dev/null
    check "UTF-8: the list shows it" poll 10 shows "^ +$Up .*/home/josé/bin/träin €5"
    key / t r ä Enter
    check "UTF-8: typed into the filter" poll 5 shows "filter trä"
    check "UTF-8: which keeps the row" poll 5 shows "^ +$Up .*träin"
    key / BSpace
    check "UTF-8: backspace takes the character off whole" poll 5 shows "^Filter: tr_$"
    key Escape c
    check "UTF-8: the filter cleared" poll 5 hides "filter tr"
    key Enter
    check "UTF-8: the detail view shows it" poll 5 shows "^command: /home/josé/bin/träin €5$"
    kill "$Up"
    # A wide character (CJK) takes two columns: counted as one, a row ran
    # past the edge and ncurses wrapped the rest over the start of the next
    # row, in the list, in the detail view and in --once's table (80
    # columns: its fixed columns take 63).
    WIDE_CMD="/opt/bin/训练程序 --数据集 图像网络训练集合第一部分第二部分第三部分 --输出 结果目录一二三四五六七八九十 --end END"
    SPILLWAY_STATS_DIR=$U_DIR start_writer --cmd "$WIDE_CMD"; Wd=$WPID
    me=$(id -un | cut -c1-8)
    prev=$S; S=wide_chars
    T new-session -d -s "$S" -x 60 -y 30 \
        "env LC_ALL=C.UTF-8 SPILLWAY_STATS_DIR='$U_DIR' '$TOP' --interval 0.2 --no-color"
    T kill-session -t "$prev" 2>/dev/null
    rows_whole() { shows "^ +$Wd +$me +0 .*训练程序" && shows "^ +$Wd +$me +1 " && hides '^[^ -~]'; }
    check "wide: the list's rows stop at the edge" poll 10 rows_whole
    key Enter
    check "wide: detail view" poll 5 shows "^command: /opt/bin/训练程序"
    whole_command() { screen | tr -d '\n ' | grep -qF -- "$(tr -d ' ' <<<"$WIDE_CMD")config:"; }
    check "wide: the detail view wraps the command whole" poll 5 whole_command
    S=wide_once
    T new-session -d -s "$S" -x 80 -y 12 \
        "env LC_ALL=C.UTF-8 SPILLWAY_STATS_DIR='$U_DIR' '$TOP' --once --no-nvml; sleep 100"
    T kill-session -t wide_chars 2>/dev/null
    check "wide: --once's rows stop at the edge" poll 10 rows_whole
    kill "$Wd"
else
    echo "ok - UTF-8 on screen: skipped, spillway-top is linked with the narrow ncurses (it shows '?') or no C.UTF-8 locale"
fi
finish
