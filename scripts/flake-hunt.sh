#!/usr/bin/env bash
# The flake hunt: runs every test program of a build many times with fresh
# RapidCheck seeds, under each BLAS kernel OpenBLAS may pick on this machine,
# and prints every failure with its test, kernel and RapidCheck seed. Not part
# of CI's default path (it takes a while); run it before claiming a test sound.
#
#   scripts/flake-hunt.sh [-C build-dir] ROUNDS [meson test arguments...]
#   scripts/flake-hunt.sh 50 --no-suite reliability    # the unit and property tests
#   scripts/flake-hunt.sh 5 --suite reliability         # the loopback server suite
#   scripts/flake-hunt.sh -C build-asan 10              # the sanitizer build
#
# Kernels (OpenBLAS picks its kernel at start-up; each round runs them all):
#   default   OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE removed: OpenBLAS's own choice
#   Haswell   the AVX2 kernels
#   SkylakeX  the AVX-512 kernels, where the CPU has AVX-512 (on such a CPU,
#             OpenBLAS's own choice may be these or a generic fallback)
# A failure replays with: RC_PARAMS="seed=N" OPENBLAS_CORETYPE=K build/tests/.../test_x
# Exits 1 if any run failed. The build must exist (bash scripts/build-and-test.sh,
# or meson setup build && ninja -C build).
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
if [ "${1:-}" = "-C" ]; then build=$2; shift 2; fi
rounds=${1:?usage: scripts/flake-hunt.sh [-C build-dir] ROUNDS [meson test arguments...]}
shift
[ -f "$build/build.ninja" ] || { echo "flake-hunt: no build in $build (run scripts/build-and-test.sh first)" >&2; exit 2; }

kernels=(default Haswell)
grep -qw avx512f /proc/cpuinfo && kernels+=(SkylakeX)
echo "flake-hunt: $rounds rounds x kernels (${kernels[*]}) of meson test -C $build $*"
started=$(date +%s)
runs=0
failures=0
summary="$build/meson-logs/flake-hunt-failures.txt"
: > "$summary"
for round in $(seq 1 "$rounds"); do
  for kernel in "${kernels[@]}"; do
    logbase="flake-hunt-$kernel"
    if [ "$kernel" = default ]; then
      run_env=(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE)
    else
      run_env=(env OPENBLAS_CORETYPE="$kernel")
    fi
    "${run_env[@]}" meson test -C "$build" --no-rebuild --num-processes "$(nproc)" --logbase "$logbase" "$@" \
      > /dev/null 2>&1 || true
    runs=$((runs + 1))
    # One JSON object per test program; report each that did not pass, with
    # the seed RapidCheck printed.
    found=$(python3 - "$build/meson-logs/$logbase.json" "$round" "$kernel" <<'PY'
import json, re, sys
path, round_, kernel = sys.argv[1:]
bad = 0
for line in open(path):
    t = json.loads(line)
    if t["result"] in ("OK", "SKIP", "EXPECTEDFAIL"):
        continue
    bad += 1
    out = t.get("stdout", "") or ""
    seeds = sorted(set(re.findall(r"seed=(\d+)", out)))
    failed = [l.strip() for l in out.splitlines() if "FAILED" in l or "Falsifiable" in l][:6]
    print(f"round {round_} kernel {kernel}: {t['name']} {t['result']} seeds {seeds}", file=sys.stderr)
    for l in failed:
        print(f"    {l}", file=sys.stderr)
print(bad)
PY
    ) 2>> "$summary"
    failures=$((failures + found))
  done
  echo "round $round/$rounds: $failures failing test runs so far ($(( $(date +%s) - started )) s)"
done
cat "$summary"
echo "flake-hunt: $runs suite runs, $failures failing test-program runs, $(( $(date +%s) - started )) s"
[ "$failures" -eq 0 ]
