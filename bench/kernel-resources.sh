#!/usr/bin/env bash
# Each CUDA kernel's registers, static shared memory and spills for one
# architecture, from ptxas -v, one tab-separated line per compiled kernel
# instance with its demangled name: what the performance report
# (bench/perf-report.sh) needs for occupancy at the real launch configuration.
# Needs nvcc, not a GPU. Usage: bench/kernel-resources.sh [sm_90] > resources.tsv
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:-sm_90}
nvcc=${NVCC:-$(command -v nvcc || echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc")}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf 'kernel\tregisters\tstatic_smem\tspill_stores\tspill_loads\tfile\n'
for f in cuda/kernels/*.cu; do
  "$nvcc" -std=c++20 -I. -O3 -c "$f" -o "$out/k.o" -arch="$arch" -Xptxas -v > "$out/log.txt" 2>&1 ||
    { cat "$out/log.txt" >&2; exit 1; }
  # ptxas prints, per entry function: "Compiling entry function '_Z...' for
  # 'sm_90'", then "N bytes stack frame, S bytes spill stores, L bytes spill
  # loads", then "Used R registers, ... M bytes smem".
  awk -v file="$f" '
    /Compiling entry function/ { fn = $0; sub(/.*function .?/, "", fn); sub(/.? for .*/, "", fn); st = 0; sl = 0 }
    /bytes stack frame/ { st = $5; sl = $9 }
    /Used [0-9]+ registers/ {
      regs = $0; sub(/.*Used /, "", regs); sub(/ registers.*/, "", regs)
      smem = 0; if (match($0, /[0-9]+ bytes smem/)) { smem = substr($0, RSTART, RLENGTH); sub(/ bytes smem/, "", smem) }
      print fn "\t" regs "\t" smem "\t" st "\t" sl "\t" file
    }' "$out/log.txt"
done | c++filt
