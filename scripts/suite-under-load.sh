#!/usr/bin/env bash
# Runs whole test suites while every core is kept busy by a spinning loop, the
# check that no test passes or fails by how fast or busy the machine is
# (docs/testing.md, "Tests that do not depend on the machine's speed"):
#
#   bash scripts/suite-under-load.sh [BUILD_DIR...]     default: build build-asan
#
# Each BUILD_DIR must be built already. One loop per core (nproc) spins for
# the whole run and is stopped at the end, whatever happens. Exits non-zero
# if any suite fails.
set -euo pipefail
cd "$(dirname "$0")/.."
dirs=("$@")
[ ${#dirs[@]} -gt 0 ] || dirs=(build build-asan)
spinners=()
stop_spinners() { for pid in "${spinners[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap stop_spinners EXIT
for ((i = 0; i < $(nproc); i++)); do
  (while :; do :; done) &
  spinners+=($!)
done
export ASTRAI_REQUIRE_TEST_DATA=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
status=0
for dir in "${dirs[@]}"; do
  start=$(date +%s)
  rc=0
  meson test -C "$dir" --no-rebuild --print-errorlogs --num-processes "$(nproc)" || rc=$?
  echo "suite-under-load: $dir rc=$rc in $(( $(date +%s) - start )) s ($(uptime | sed 's/.*load/load/'))"
  [ "$rc" -eq 0 ] || status=1
done
exit "$status"
