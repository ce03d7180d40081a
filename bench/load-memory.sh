#!/usr/bin/env bash
# Peak host memory while a quantized GGUF model is loaded and run, on the
# CUDA backend (tensor by tensor from the file: docs/cuda.md, "Quantized
# weights") beside the CPU reference (the whole model read into float32).
# Makes a Q4_K model of 374M parameters (a 2048-wide Llama of 4 layers and a
# 32,000-token vocabulary: 1.5 GB in float32), then runs `astrai generate
# --max-tokens 1` on it with each backend under /usr/bin/time and prints a
# table: the file's size, the peak resident set size, and for the CUDA
# backend the device bytes its startup line reports (weights and KV cache).
# On the emulated device (-Dcuda=emulated) device memory is host memory, so
# the host's own peak is the peak minus the device bytes; on a GPU the peak
# is the host's alone.
# Usage: bench/load-memory.sh [build-dir] (default build-emu; its astrai must have the CUDA backend)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-emu}
ninja -C "$build" astrai > /dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
model="$work/q4k.gguf"
"$build/astrai" make-model --preset llama2-7b --dim 2048 --hidden 8192 --layers 4 --heads 16 --kv-heads 4 \
  --vocab 32000 --context 512 --dtype q4_k -o "$model" > /dev/null
file_mib=$(( $(stat -c %s "$model") / 1048576 ))
printf '| backend | file MiB | peak RSS MiB | device MiB (weights + KV) | host peak MiB |\n|---|---|---|---|---|\n'
for backend in reference cuda; do
  /usr/bin/time -f '%M' -o "$work/rss" "$build/astrai" generate --model "$model" --backend "$backend" \
    --cuda-dtype bf16 --prompt "Once upon a time" --max-tokens 1 > /dev/null 2> "$work/log"
  rss_mib=$(( $(cat "$work/rss") / 1024 ))
  if [ "$backend" = cuda ]; then
    # "weights 190.1 MiB: ...; KV cache 2048 pages of 16 tokens, 256.0 MiB"
    device=$(grep -o '[0-9.]* MiB' "$work/log" | head -2 | awk '{s += $1} END {printf "%d", s}')
    emulated=$(grep -c emulated "$work/log" || true)
    host=$([ "$emulated" -gt 0 ] && echo $(( rss_mib - device )) || echo "$rss_mib")
    printf '| cuda (%s) | %d | %d | %d | %d |\n' "$([ "$emulated" -gt 0 ] && echo emulated || echo gpu)" \
      "$file_mib" "$rss_mib" "$device" "$host"
  else
    printf '| cpu-reference | %d | %d | - | %d |\n' "$file_mib" "$rss_mib" "$rss_mib"
  fi
done
