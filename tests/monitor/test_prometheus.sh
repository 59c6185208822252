#!/usr/bin/env bash
# A real Prometheus (Debian's package) scrapes spillway: a CUDA program runs
# under `spillway run` on fakecuda; Prometheus, on loopback with a 1 s
# scrape interval, scrapes spillway-top --serve and, for the textfile path,
# prometheus-node-exporter reading spillway-top --prometheus's file. PromQL
# through Prometheus's HTTP API must return the program's in-use bytes and
# limit from both; promtool check metrics must pass on what is served.
#
# Installs prometheus and prometheus-node-exporter with apt when they are
# missing; skips, saying why, only when they cannot be installed.
set -u
. "$(dirname "$0")/lib.sh"
skip_without_serve
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to query Prometheus's API"; exit 0; }
LIB=$B/libspillway.so
HOLD=$B/tests/integration/tools/cuda_hold
for f in "$LIB" "$HOLD"; do [ -e "$f" ] || { echo "FAIL: $f not built"; exit 1; }; done

# --- Debian's Prometheus, installed when missing -------------------------
PROM=/usr/bin/prometheus PROMTOOL=/usr/bin/promtool NODE_EXPORTER=/usr/bin/prometheus-node-exporter
have_all() { [ -x "$PROM" ] && [ -x "$PROMTOOL" ] && [ -x "$NODE_EXPORTER" ]; }
install_prometheus() {
    local sudo="" log="$STATS_DIR/.apt"
    if [ "$(id -u)" -ne 0 ]; then
        sudo -n true 2>/dev/null || { echo "not root and no password-less sudo"; return 1; }
        sudo="sudo -n"
    fi
    command -v apt-get >/dev/null || { echo "no apt-get"; return 1; }
    # Installing must not start Debian's own Prometheus on :9090 where an
    # init system runs: policy-rc.d says no for the duration.
    local policy=/usr/sbin/policy-rc.d made_policy=0
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null && $sudo chmod 755 "$policy" && made_policy=1
    fi
    local pkgs=(prometheus prometheus-node-exporter) rc=0
    export DEBIAN_FRONTEND=noninteractive
    if ! $sudo apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >"$log" 2>&1; then
        $sudo apt-get update -qq >>"$log" 2>&1
        $sudo apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >>"$log" 2>&1 || rc=1
    fi
    [ $made_policy -eq 1 ] && $sudo rm -f "$policy"
    [ $rc -eq 0 ] || { echo "apt-get install ${pkgs[*]} failed: $(grep -E '^E:' "$log" | sort -u | head -2 | tr '\n' ' ')"; return 1; }
}
if ! have_all; then
    echo "installing Debian's prometheus and prometheus-node-exporter (missing)"
    why=$(install_prometheus) || { echo "SKIP: Prometheus cannot be installed here ($why); the scrape is not tested"; exit 0; }
    have_all || { echo "SKIP: prometheus installed without $PROM, $PROMTOOL or $NODE_EXPORTER; the scrape is not tested"; exit 0; }
fi
echo "using $("$PROM" --version 2>&1 | head -1)"

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
bg() { "$@" & writers+=($!); }

# --- the program under spillway, the exporter, the textfile ---------------
MiB=1048576
export LD_LIBRARY_PATH="$B/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$SPW" run --lib "$LIB" --limit 64M --no-spill -- "$HOLD" $((8 * MiB)) >"$STATS_DIR/.hold" &
H=$!; writers+=("$H")
check "program starts under spillway" poll 10 grep -qs '^ready' "$STATS_DIR/.hold"
start_serve 127.0.0.1:0
TEXTFILE_DIR="$STATS_DIR/textfile"
mkdir -p "$TEXTFILE_DIR"
"$TOP" --prometheus >"$TEXTFILE_DIR/spillway.prom.$$" && mv "$TEXTFILE_DIR/spillway.prom.$$" "$TEXTFILE_DIR/spillway.prom"
NE_PORT=$(free_port)
bg "$NODE_EXPORTER" --web.listen-address="127.0.0.1:$NE_PORT" --collector.disable-defaults --collector.textfile \
    --collector.textfile.directory="$TEXTFILE_DIR" >"$STATS_DIR/.node-exporter" 2>&1

served=$(http GET "$SERVE_URL"); served=${served#*$'\n--\n'}
check "promtool check metrics passes on /metrics" bash -c '"$1" check metrics <<<"$2"' _ "$PROMTOOL" "$served"
check "promtool check metrics passes on the textfile" bash -c '"$1" check metrics <"$2"' _ "$PROMTOOL" "$TEXTFILE_DIR/spillway.prom"

# --- Prometheus on loopback -----------------------------------------------
P_PORT=$(free_port)
cat >"$STATS_DIR/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: spillway
    static_configs:
      - targets: ['127.0.0.1:$SERVE_PORT']
  - job_name: node
    static_configs:
      - targets: ['127.0.0.1:$NE_PORT']
EOF
check "promtool check config" bash -c '"$1" check config "$2" >/dev/null' _ "$PROMTOOL" "$STATS_DIR/prometheus.yml"
bg "$PROM" --config.file="$STATS_DIR/prometheus.yml" --storage.tsdb.path="$STATS_DIR/tsdb" \
    --web.listen-address="127.0.0.1:$P_PORT" --log.level=warn >"$STATS_DIR/.prometheus" 2>&1
API="http://127.0.0.1:$P_PORT"
ready() { local r; r=$(http GET "$API/-/ready" 2>/dev/null); [ "$(head -1 <<<"$r")" = 200 ]; }
if ! check "Prometheus is ready" poll 30 ready; then
    tail -20 "$STATS_DIR/.prometheus"
    finish
fi

# promql QUERY: the value of the first sample of an instant query, or
# nothing.
promql() {
    python3 - "$API" "$1" <<'EOF'
import json, sys, urllib.parse, urllib.request
url = sys.argv[1] + "/api/v1/query?" + urllib.parse.urlencode({"query": sys.argv[2]})
doc = json.load(urllib.request.urlopen(url, timeout=5))
res = doc.get("data", {}).get("result", [])
if doc.get("status") == "success" and res:
    print(res[0]["value"][1])
EOF
}
equals() { [ "$(promql "$1")" = "$2" ]; }
check "up{job=\"spillway\"} is 1" poll 20 equals 'up{job="spillway"}' 1
check "PromQL: the program's in-use bytes (16 MiB) from /metrics" \
    poll 20 equals "spillway_in_use_bytes{job=\"spillway\",pid=\"$H\",gpu=\"0\"}" $((16 * MiB))
check "PromQL: its limit (64 MiB) from /metrics" \
    poll 10 equals "spillway_limit_bytes{job=\"spillway\",pid=\"$H\",command=\"cuda_hold\"}" $((64 * MiB))
check "PromQL: its refusal as a counter" poll 10 equals "spillway_ooms_total{job=\"spillway\",pid=\"$H\"}" 1
check "PromQL: in use over limit, joined on labels" \
    poll 10 equals "spillway_in_use_bytes{job=\"spillway\",pid=\"$H\"} / on(pid, gpu) spillway_limit_bytes{job=\"spillway\"}" 0.25
check "up{job=\"node\"} is 1" poll 20 equals 'up{job="node"}' 1
check "PromQL: in-use bytes through node_exporter's textfile collector" \
    poll 20 equals "spillway_in_use_bytes{job=\"node\",pid=\"$H\"}" $((16 * MiB))
check "PromQL: limit through the textfile" poll 10 equals "spillway_limit_bytes{job=\"node\",pid=\"$H\"}" $((64 * MiB))

kill -TERM "$H"; wait "$H" 2>/dev/null
gone() { [ -z "$(promql "spillway_in_use_bytes{job=\"spillway\",pid=\"$H\"}")" ]; }
check "PromQL: the series goes when the program exits" poll 20 gone
finish
