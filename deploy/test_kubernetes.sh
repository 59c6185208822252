#!/usr/bin/env bash
# The Kubernetes recipe, as far as it can be checked without a cluster:
# every manifest is valid YAML with apiVersion, kind and a name; the
# exporter DaemonSet and the workload share the stats directory; the
# DaemonSet's and the image's spillway-top arguments are accepted by
# spillway-top (run on loopback); every SPILLWAY_* variable the workload
# sets is accepted by spillway's strict parser; the Prometheus
# configuration passes promtool check config when promtool is there.
# The Dockerfile, statically (no network, no docker build): its build
# stage's CUDA is at least the oldest cuda.h spillway builds against
# (SPW_CUDA_HEADERS_MIN in shim/hooks.h, which refuses older headers with
# one line), and the exporter's runtime is the build's distribution.
set -u
. "$(dirname "$0")/../tests/unit/tools/lib.sh"
K8S=$(cd "$(dirname "$0")" && pwd)/kubernetes
ROOT=$(cd "$(dirname "$0")/.." && pwd)

# "X.Y[.Z]" as cuda.h's CUDA_VERSION writes it (13.0 -> 13000).
cuda_number() { local IFS=.; set -- $1; echo $(($1 * 1000 + ${2:-0} * 10)); }
headers_min=$(sed -n 's/^#define SPW_CUDA_HEADERS_MIN \([0-9][0-9]*\)$/\1/p' "$ROOT/shim/hooks.h")
build_from=$(sed -n 's/^FROM \([^ ]*\) AS build$/\1/p' "$K8S/Dockerfile")
build_cuda=$(sed -n 's/^nvidia\/cuda:\([0-9][0-9]*\.[0-9][0-9]*\)\(\.[0-9][0-9]*\)*-devel-.*$/\1/p' <<<"$build_from")
build_num=$( [ -n "$build_cuda" ] && cuda_number "$build_cuda")
check "the build stage is an nvidia/cuda devel image ($build_from)" [ -n "$build_cuda" ]
check "its CUDA ($build_cuda = ${build_num:-?}) is at least the headers spillway needs (${headers_min:-?})" \
    bash -c '[ -n "$1" ] && [ -n "$2" ] && [ "$1" -ge "$2" ]' _ "$build_num" "$headers_min"
# The guard that minimum stands for: an older cuda.h stops the build with
# one line naming the version (a fake header saying 12.4, what the image
# had).
old_headers() {
    local d="$STATS_DIR/old-cuda" err
    mkdir -p "$d" && printf '#define CUDA_VERSION 12040\n' >"$d/cuda.h"
    err=$(printf '#include "shim/hooks.h"\n' | ${CC:-cc} -fsyntax-only -x c -I"$d" -I"$ROOT" - 2>&1) &&
        { echo "  compiled against CUDA 12.4's version"; return 1; }
    grep -q 'builds against cuda.h of CUDA 13.0 or newer' <<<"$err" || { echo "$err" | head -3; return 1; }
}
check "cuda.h older than SPW_CUDA_HEADERS_MIN is refused by name" old_headers
distro() { sed -n 's/^.*-\(ubuntu\)\([0-9.]*\)$/\1:\2/p; t; s/^\(ubuntu:[0-9.]*\)$/\1/p' <<<"$1"; }
exporter_from=$(sed -n 's/^FROM \([^ ]*\) AS exporter$/\1/p' "$K8S/Dockerfile")
check "the exporter runs on the build's distribution ($exporter_from; libmicrohttpd's soname)" \
    bash -c '[ -n "$1" ] && [ "$1" = "$2" ]' _ "$(distro "$build_from")" "$(distro "$exporter_from")"

PY=""
for p in python3 /usr/bin/python3; do
    if "$p" -c 'import yaml' 2>/dev/null; then PY=$p; break; fi
done
if [ -z "$PY" ]; then
    echo "SKIP: no python3 with PyYAML (Debian: python3-yaml); manifests not checked"
    exit 0
fi

# facts FILE...: one line per fact the checks below need, from the YAML.
facts=$("$PY" - "$K8S"/*.yaml <<'EOF2'
import sys, yaml
for path in sys.argv[1:]:
    for doc in yaml.safe_load_all(open(path)):
        if doc is None:
            continue
        name = doc.get("metadata", {}).get("name")
        assert doc.get("apiVersion") and doc.get("kind") and name, f"{path}: a document without apiVersion, kind or name"
        print(f"doc {doc['kind']} {name}")
        spec = doc.get("spec", {}).get("template", {}).get("spec")
        if not spec:
            continue
        ann = doc["spec"]["template"].get("metadata", {}).get("annotations", {})
        print(f"hostPID {doc['kind']} {spec.get('hostPID', False)}")
        for v in spec.get("volumes", []):
            if "hostPath" in v:
                print(f"hostPath {doc['kind']} {v['name']} {v['hostPath']['path']}")
        for c in spec.get("containers", []):
            if doc["kind"] == "DaemonSet":
                print("exporter_args " + "\x1f".join(c.get("args", [])))
                print("port " + str(c["ports"][0]["containerPort"]) + " " + ann.get("prometheus.io/port", "?"))
                print("caps " + " ".join(c.get("securityContext", {}).get("capabilities", {}).get("add", [])))
            for e in c.get("env", []):
                val = e.get("value")
                ref = e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath", "")
                if val is None and ref.startswith("metadata.annotations['"):
                    val = ann.get(ref[len("metadata.annotations['"):-2])
                if val is not None:
                    print(f"env {doc['kind']} {e['name']}={val}")
            for m in c.get("volumeMounts", []):
                print(f"mount {doc['kind']} {m['name']} {m['mountPath']} {'ro' if m.get('readOnly') else 'rw'}")
EOF2
) || { echo "FAIL: manifests: $facts"; exit 1; }
check "manifests parse: Namespace, DaemonSet, NetworkPolicy, Job" \
    bash -c 'for k in Namespace DaemonSet NetworkPolicy Job; do grep -q "^doc $k " <<<"$1" || exit 1; done' _ "$facts"
check "the exporter runs with the host's pids" grep -qx 'hostPID DaemonSet True' <<<"$facts"
check "the exporter may read other processes' /proc and segments, and remove dead ones" \
    grep -qx 'caps SYS_PTRACE DAC_READ_SEARCH FOWNER' <<<"$facts"
# Crashed workloads' segments are removed by the exporter alone (root,
# --all-users): its mount of the directory must let it.
check "the exporter mounts the stats directory writable" grep -qx 'mount DaemonSet stats /run/spillway rw' <<<"$facts"
check "the scrape annotation names the exporter's port" grep -qx 'port 9402 9402' <<<"$facts"
ds_dir=$(awk '$1 == "hostPath" && $2 == "DaemonSet" {print $4}' <<<"$facts")
job_dir=$(awk '$1 == "hostPath" && $2 == "Job" {print $4}' <<<"$facts")
job_stats=$(sed -n 's/^env Job SPILLWAY_STATS_DIR=//p' <<<"$facts")
check "workload and exporter share the node's stats directory" [ -n "$ds_dir" ] && [ "$ds_dir" = "$job_dir" ]
check "the workload publishes where it mounts it" grep -qx "mount Job spillway-stats $job_stats rw" <<<"$facts"
check "the workload has a GPU memory limit" grep -q '^env Job SPILLWAY_MEM_LIMIT=[0-9]' <<<"$facts"

# The workload's SPILLWAY_* variables through spillway's own parser.
mapfile -t spw_env < <(sed -n 's/^env Job \(SPILLWAY_[A-Z_]*=.*\)$/\1/p' <<<"$facts")
check "spillway accepts the workload's ${#spw_env[@]} SPILLWAY_* variables" \
    env "${spw_env[@]/SPILLWAY_STATS_DIR=*/SPILLWAY_STATS_DIR=$STATS_DIR}" "$SPW" run --lib "$B/libspillway.so" -- true

# The exporter's arguments, from the DaemonSet and from the image, run for
# real on loopback (the node's name and directory replaced).
serves() {
    local -a args=("$@")
    for i in "${!args[@]}"; do
        case ${args[$i]} in
        0.0.0.0:*) args[$i]=127.0.0.1:0 ;;
        /run/spillway) args[$i]=$STATS_DIR ;;
        '$(NODE_NAME)') args[$i]=node-1 ;;
        esac
    done
    local err="$STATS_DIR/.exporter"
    "$TOP" "${args[@]}" 2>"$err" &
    local pid=$!
    poll 10 grep -q '^spillway-top: serving http://127.0.0.1:' "$err"; local rc=$?
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    [ $rc -eq 0 ] || cat "$err"
    return $rc
}
if "$TOP" --help | grep -q 'built without libmicrohttpd'; then
    echo "SKIP: spillway-top built without libmicrohttpd; the exporter's arguments are not run"
else
    IFS=$'\x1f' read -r -a ds_args <<<"$(sed -n 's/^exporter_args //p' <<<"$facts")"
    check "the DaemonSet's arguments serve (${ds_args[*]})" serves "${ds_args[@]}"
    img_args=$("$PY" -c 'import json, re, sys
m = re.search(r"^CMD (\[.*\])$", open(sys.argv[1]).read(), re.M)
print("\x1f".join(json.loads(m.group(1))))' "$K8S/Dockerfile")
    IFS=$'\x1f' read -r -a img_args <<<"$img_args"
    check "the image's default arguments serve (${img_args[*]})" serves "${img_args[@]}"
fi
yaml_ok() { "$PY" -c 'import sys, yaml; c = yaml.safe_load(open(sys.argv[1])); assert c["scrape_configs"][0]["job_name"] == "spillway"' "$1"; }
promcheck=$(command -v promtool >/dev/null && promtool check config "$K8S/prometheus.yml" 2>&1)
if ! command -v promtool >/dev/null; then
    echo "SKIP: no promtool; prometheus.yml checked as YAML only"
    check "prometheus.yml parses" yaml_ok "$K8S/prometheus.yml"
elif grep -q 'kubernetes_sd_configs not found' <<<"$promcheck"; then
    echo "SKIP: this promtool is built without Kubernetes service discovery (Debian's is); prometheus.yml checked as YAML only"
    check "prometheus.yml parses" yaml_ok "$K8S/prometheus.yml"
else
    check "promtool check config prometheus.yml" bash -c 'promtool check config "$1" >/dev/null' _ "$K8S/prometheus.yml"
fi
finish
