#!/usr/bin/env bash
# The GPU check: on a machine with one GPU (an H200), nvcc and no network,
# build the project for sm_90, run every CUDA test, the kernel tests again
# under compute-sanitizer (memcheck and racecheck, fewer property cases), the
# kernel benchmarks, compare with PyTorch when it is installed, and print a
# short table last.
# Meant to finish in under 8 minutes. Usage: bench/gpu-check.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-gpu-check}
log=$build/gpu-check
started=$(date +%s)

echo "== device"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
# A GPU machine must run every CUDA test: with one listed, a test or benchmark
# that skips ("SKIPPED: ...", e.g. a driver too old for the CUDA runtime) fails
# this check instead of reporting "passed".
if nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then export ASTRAI_EXPECT_GPU=1; else export ASTRAI_EXPECT_GPU=0; fi
echo "ASTRAI_EXPECT_GPU=$ASTRAI_EXPECT_GPU"

echo "== configure and build (sm_90 and sm_80 code, compute_90 PTX, as cuda/meson.build sets)"
if [ ! -d "$build" ]; then
  meson setup "$build" -Dcuda=enabled -Dbenchmarks=true -Dtests=true --buildtype=release > /dev/null
fi
mkdir -p "$log"
ninja -C "$build" -j"$(nproc)" tests/cuda/test_cuda tests/cuda/test_cuda_kernels tests/cuda/test_cuda_executor \
  tests/cuda/test_cuda_batching bench/bench_cuda 2>&1 | tail -n 3

echo "== CUDA tests"
status=0
declare -A result
for t in test_cuda test_cuda_kernels test_cuda_executor test_cuda_batching; do
  if timeout 240 "$build/tests/cuda/$t" > "$log/$t.txt" 2>&1; then result[$t]=passed; else result[$t]=FAILED; status=1; fi
  if grep -q SKIPPED "$log/$t.txt"; then
    grep -A2 SKIPPED "$log/$t.txt" | head -n 3
    if [ "$ASTRAI_EXPECT_GPU" = 1 ]; then result[$t]="FAILED (skipped on a GPU machine)"; status=1; fi
  fi
  echo "$t: ${result[$t]} ($(grep -E '^(All tests passed|test cases:)' "$log/$t.txt" | tail -n 1))"
done

echo "== compute-sanitizer over the kernel tests (10 cases per property)"
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in memcheck racecheck; do
  if [ -x "$sanitizer" ]; then
    if RC_PARAMS="max_success=10" timeout 240 "$sanitizer" --tool "$tool" --error-exitcode 1 \
        "$build/tests/cuda/test_cuda_kernels" > "$log/$tool.txt" 2>&1; then
      result[$tool]=passed
    else
      result[$tool]=FAILED
      status=1
    fi
  else
    result[$tool]="not run (no compute-sanitizer)"
  fi
  echo "$tool: ${result[$tool]} ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log/$tool.txt" 2>/dev/null | tail -n 1))"
done

echo "== kernel benchmarks"
timeout 240 "$build/bench/bench_cuda" --benchmark_out="$log/bench_cuda.json" --benchmark_out_format=json \
  > "$log/bench_cuda.txt" 2>&1 || status=1
cat "$log/bench_cuda.txt"
if [ "$ASTRAI_EXPECT_GPU" = 1 ] && grep -q '^SKIPPED' "$log/bench_cuda.txt"; then status=1; fi

echo "== PyTorch comparison"
if command -v python3 > /dev/null; then
  timeout 180 python3 bench/torch_compare.py > "$log/torch.txt" 2>&1 || echo "torch_compare.py failed (see $log/torch.txt)"
  cat "$log/torch.txt"
else
  echo "SKIPPED: no python3" | tee "$log/torch.txt"
fi

echo
echo "== summary ($(( $(date +%s) - started )) s)"
for t in test_cuda test_cuda_kernels test_cuda_executor test_cuda_batching memcheck racecheck; do
  printf '%-22s %s\n' "$t" "${result[$t]}"
done
grep -E '^ceilings' "$log/bench_cuda.txt" || true
if command -v python3 > /dev/null && [ -s "$log/bench_cuda.json" ]; then
  python3 - "$log/bench_cuda.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1])).get("benchmarks", [])
print(f"{'benchmark':80} {'ms':>9} {'GB/s':>8} {'bw_frac':>7} {'TFLOP/s':>8} {'flop_frac':>9} {'tokens/s':>9}")
for b in rows:
    get = lambda k: b.get(k, float("nan"))
    print(f"{b['name']:80} {b['real_time'] / 1e6 if b.get('time_unit') == 'ns' else b['real_time']:9.3f} "
          f"{get('GB/s'):8.0f} {get('bw_frac'):7.2f} {get('TFLOP/s'):8.1f} {get('flop_frac'):9.2f} {get('tokens/s'):9.0f}")
PY
fi
grep -E '^torch ' "$log/torch.txt" || true
exit $status
