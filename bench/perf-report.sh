#!/usr/bin/env bash
# The performance report without a GPU (docs/cuda-performance.md): each
# kernel's registers and spills for sm_90 (bench/kernel-resources.sh, needs
# nvcc), then the reference decode steps (bf16, Q4_K_M, Q8_0) run on the
# emulated device with their memory accesses traced and priced. Writes the
# tables and a summary to stdout and out-dir, and the step estimates to
# bench/perf-predictions.json (committed: bench_cuda prints them beside its
# measured decode steps on a GPU).
# Usage: bench/perf-report.sh [build-dir] [out-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-emu}
out=${2:-$build/perf-report}
mkdir -p "$out"
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" --buildtype=release -Dcuda=emulated -Dbenchmarks=true > /dev/null
fi
ninja -C "$build" bench/perf_report > /dev/null
resources=()
if command -v nvcc > /dev/null || [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ]; then
  PATH="${CUDA_HOME:-/usr/local/cuda}/bin:$PATH" bash bench/kernel-resources.sh sm_90 > "$out/resources-sm_90.tsv"
  resources=(--resources "$out/resources-sm_90.tsv")
else
  echo "(no nvcc: registers and spills unknown)"
fi
"$build/bench/perf_report" "${resources[@]}" --json "$out/perf-report.json" | tee "$out/perf-report.md"
cp "$out/perf-report.json" bench/perf-predictions.json
