#!/usr/bin/env bash
# Registers, shared memory and spills of every CUDA kernel (-Xptxas -v), per
# architecture, as docs/cuda.md records them. Needs nvcc, not a GPU.
# Usage: bench/ptxas-report.sh [sm_90|sm_80]
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:-sm_90}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '%-44s %5s %8s %10s %12s\n' kernel regs smem_B spill_st_B spill_ld_B
for f in cuda/kernels/*.cu; do
  nvcc -std=c++20 -I. -O3 -c "$f" -o "$out/k.o" -arch="$arch" -Xptxas -v 2>&1 | awk -v file="$(basename "$f" .cu)" '
    /Compiling entry function/ { name = $0; sub(/.*for .*_Z[^ ]*N6astrai4cuda/, "", name) }
    /Function properties for/ { fn = $NF }
    /bytes stack frame/ { st = $5; sl = $9 }
    /Used [0-9]+ registers/ {
      regs = $0; sub(/.*Used /, "", regs); sub(/ registers.*/, "", regs)
      smem = 0; if (match($0, /[0-9]+ bytes smem/)) { smem = substr($0, RSTART, RLENGTH); sub(/ bytes smem/, "", smem) }
      type = fn ~ /I13__nv_bfloat16/ ? "bf16" : "f32"
      # Integer and bool template arguments (Li8E, Lb1E), e.g. matvec<rows,aligned>, sample<threads>.
      args = ""; rest = fn
      while (match(rest, /L[ib][0-9]+E/)) { args = args (args == "" ? "" : ",") substr(rest, RSTART + 2, RLENGTH - 3); rest = substr(rest, RSTART + RLENGTH) }
      # The GateActivation of swiglu.cu (an enum argument is mangled after its type): silu 0, gelu 1, clamped 2.
      if (match(fn, /14GateActivationE[0-9]+E/)) args = args "," (substr(fn, RSTART + 17, 1) == "0" ? "silu" : substr(fn, RSTART + 17, 1) == "1" ? "gelu" : "clamped")
      printf "%-44s %5s %8s %10s %12s\n", file ":" type (args == "" ? "" : "<" args ">"), regs, smem, st, sl
    }'
done
echo "(smem_B: static shared memory; the attention kernels have dynamic shared memory only:"
echo " attention_smem_bytes() in cuda/kernels/attention_split.cuh: a ring of K/V tiles and each warp's scratch,"
echo " 58,368 B for bf16 at head_dim 128, 82,944 B for bf16 at 256 or float32 at 128)"
