#!/usr/bin/env bash
# Runs the device and memory suites again with two fakecuda devices of 64 MiB
# each, so that FAKECUDA_DEVICES, FAKECUDA_MEM and per-device memory are
# exercised (the suites read both variables), the multi-device suite,
# which has nothing to test with one device, and the multicast suite with a
# team of two.
set -eu
B=${SPW_TEST_BUILD:?run through scripts/run-tests.sh}
FAKECUDA_DEVICES=2 FAKECUDA_MEM=64M "$B/tests/unit/driver_device"
FAKECUDA_DEVICES=2 FAKECUDA_MEM=64M "$B/tests/unit/driver_memory"
FAKECUDA_DEVICES=2 FAKECUDA_MEM=64M "$B/tests/unit/driver_multidevice"
FAKECUDA_DEVICES=2 FAKECUDA_MEM=64M "$B/tests/unit/driver_multicast"
