# Shared by the exporter's tests: the tools' test library, plus starting
# spillway-top --serve on a port the system picks and stopping it.
. "$(dirname "${BASH_SOURCE[0]}")/../unit/tools/lib.sh"

# skip_without_serve: ends the test (passing, with a reason) when this
# spillway-top was built without libmicrohttpd.
skip_without_serve() {
    if "$TOP" --help | grep -q 'built without libmicrohttpd'; then
        echo "SKIP: $TOP was built without libmicrohttpd (scripts/setup.sh installs libmicrohttpd-dev); --serve not tested"
        exit 0
    fi
}

# start_serve ADDR [ARGS...]: starts spillway-top --serve ADDR, waits for its
# "serving" line; sets SERVE_PID, SERVE_URL (http://HOST:PORT/metrics) and
# SERVE_PORT.
start_serve() {
    local addr=$1; shift
    local err="$STATS_DIR/.serve.$RANDOM$RANDOM"
    "$TOP" --serve "$addr" "$@" 2>"$err" &
    SERVE_PID=$!
    writers+=("$SERVE_PID")
    if ! poll 10 grep -q '^spillway-top: serving http://' "$err"; then
        echo "FAIL: spillway-top --serve $addr did not start:"; cat "$err"; exit 1
    fi
    SERVE_URL=$(grep -o 'http://[^ ]*' "$err" | head -1)
    SERVE_PORT=${SERVE_URL##*:}; SERVE_PORT=${SERVE_PORT%%/*}
}

# http METHOD URL: prints the status, the headers, a line "--" and the body
# as received (python3's client: no curl on a bare machine).
http() {
    python3 - "$1" "$2" <<'EOF'
import http.client, sys, urllib.parse
u = urllib.parse.urlsplit(sys.argv[2])
c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
c.request(sys.argv[1], u.path + ("?" + u.query if u.query else ""))
r = c.getresponse()
print(r.status)
for k, v in r.getheaders():
    print(f"{k}: {v}")
print("--")
sys.stdout.flush()
sys.stdout.buffer.write(r.read())
EOF
}
