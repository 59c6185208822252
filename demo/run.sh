#!/bin/sh
# `make demo`: runs the demo program without spillway, then under it three
# times: with spill off (stopped at its limit), with spill on (holding 1.5x
# its limit, every word intact), and oversubscribed (told twice its limit, a
# JAX-style arena of 0.75 x that: more than the device pages it may use) —
# against the real CUDA driver when this machine has a GPU, else against
# fakecuda.
#   SPW_DEMO_DRIVER=real|fakecuda  force the choice
#   SPW_DEMO_ENV                   spillway's settings (default: SPILLWAY_MEM_FRACTION=0.25)
#   SPW_DEMO_HOST_LIMIT            SPILLWAY_HOST_LIMIT of the spill run (default 4G) and of the
#                                  oversubscribed one (default auto: it must hold the part past the limit)
# (Not SPILLWAY_*: every SPILLWAY_* name the library does not know is an error.)
set -eu
B=${BUILD:-build}
case $B in /*) ;; *) B=$(pwd)/$B ;; esac
demo=$B/demo/spillway-demo
settings=${SPW_DEMO_ENV:-SPILLWAY_MEM_FRACTION=0.25}

driver=${SPW_DEMO_DRIVER:-}
if [ -z "$driver" ]; then
    driver=fakecuda
    # A GPU: nvidia-smi lists one, or the system's libcuda.so.1 loads and sees a device.
    if nvidia-smi -L >/dev/null 2>&1 || env -u LD_LIBRARY_PATH "$demo" info >/dev/null 2>&1; then
        driver=real
    fi
fi
if [ "$driver" = real ]; then
    echo "== spillway demo against the REAL CUDA driver"
    nvidia-smi -L 2>/dev/null || true
    run() { env -u LD_LIBRARY_PATH "$@"; }
else
    echo "== spillway demo against FAKECUDA (no GPU here): $B/fakecuda/libcuda.so.1, a 1 GiB device"
    run() { env LD_LIBRARY_PATH="$B/fakecuda" FAKECUDA_MEM=1G FAKECUDA_DEVICES=1 "$@"; }
fi

echo
echo "-- without spillway, the program sees the whole device:"
run "$demo" info
echo
echo "-- with spillway, spill off: LD_PRELOAD=$B/libspillway.so $settings SPILLWAY_SPILL=0"
# shellcheck disable=SC2086 # settings is a list of NAME=value words
run LD_PRELOAD="$B/libspillway.so" $settings SPILLWAY_SPILL=0 "$demo"
echo
# The line shows every variable the run sets, so that it can be copied.
echo "-- with spillway, spill on (the default): LD_PRELOAD=$B/libspillway.so $settings SPILLWAY_HOST_LIMIT=${SPW_DEMO_HOST_LIMIT:-4G}"
# shellcheck disable=SC2086
run LD_PRELOAD="$B/libspillway.so" $settings SPILLWAY_HOST_LIMIT=${SPW_DEMO_HOST_LIMIT:-4G} "$demo" spill
echo
echo "-- oversubscribed: LD_PRELOAD=$B/libspillway.so $settings SPILLWAY_OVERSUBSCRIBE=2${SPW_DEMO_HOST_LIMIT:+ SPILLWAY_HOST_LIMIT=$SPW_DEMO_HOST_LIMIT}"
# The host limit must hold what is past the limit (checked at start): auto
# (half the machine's memory) unless SPW_DEMO_HOST_LIMIT says otherwise.
# shellcheck disable=SC2086
run LD_PRELOAD="$B/libspillway.so" $settings SPILLWAY_OVERSUBSCRIBE=2 \
    ${SPW_DEMO_HOST_LIMIT:+SPILLWAY_HOST_LIMIT=$SPW_DEMO_HOST_LIMIT} "$demo" arena
