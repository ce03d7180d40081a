#!/usr/bin/env bash
# Checks bench/gpu-check-pack.sh and bench/gpu-check-prebuilt.sh on a build of
# the real CUDA programs (CI's release build: nvcc, no GPU), for the bare GPU
# machine, which has the CUDA toolkit but none of our Debian packages:
#  1. with only the pack's lib/ on the library path, every library the five
#     programs load comes from the pack, or is the C library, libstdc++,
#     libgcc_s or one of the CUDA toolkit's own: a Debian library the pack
#     forgot would be found on this machine and missed there, and fails here;
#  2. the pack runs end to end: gpu-check-prebuilt.sh under a fake nvidia-smi
#     listing no GPU takes the programs as prebuilt, every step passes or
#     skips, exit status 0.
#
#   bench/gpu-check-pack-selftest.sh BUILD-DIR   (the meson test gpu_check_pack)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
build=${1:?usage: bench/gpu-check-pack-selftest.sh BUILD-DIR}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
checks=0
fail() {
  echo "gpu-check pack self-test FAILED: $*" >&2
  exit 1
}

XZ_OPT=-0 bash bench/gpu-check-pack.sh "$build" "$work/pack.tar.xz" > "$work/pack.txt" 2>&1 ||
  fail "packing: $(cat "$work/pack.txt")"
mkdir "$work/unpacked"
tar -xJf "$work/pack.tar.xz" -C "$work/unpacked" || fail "unpacking"

# 1. Where each library comes from.
system='^(linux-vdso|ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libnccl)\.so'
for p in "$work"/unpacked/build/tests/cuda/* "$work"/unpacked/build/bench/bench_cuda; do
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || path=$name  # linux-vdso.so.1 (0x...), /lib64/ld-linux-x86-64.so.2 (0x...)
    [ "$path" = not ] && fail "$(basename "$p") needs $name, in neither the pack nor the system set"
    case "$path" in "$work/unpacked/lib/"*) continue ;; esac
    [[ $(basename "$path") =~ $system ]] ||
      fail "$(basename "$p") loads $path from this machine: the pack lacks it (bench/gpu-check-pack.sh)"
  done < <(LD_LIBRARY_PATH=$work/unpacked/lib ldd "$p")
  checks=$((checks + 1))
done
# The shared test data, where this machine has it (the pack takes what there is).
if [ -s "${ASTRAI_SHARED_DIR:-../shared}/models/stories260K/stories260K.bin" ]; then
  [ -s "$work/unpacked/shared/models/stories260K/stories260K.bin" ] || fail "the pack lacks the shared test data"
  checks=$((checks + 1))
fi

# 2. The prebuilt run, no GPU listed.
mkdir -p "$work/bin"
printf '#!/bin/sh\necho "No devices were found"\nexit 6\n' > "$work/bin/nvidia-smi"
chmod +x "$work/bin/nvidia-smi"
OUT=$work/out PATH=$work/bin:$PATH bash bench/gpu-check-prebuilt.sh "$work/pack.tar.xz" > "$work/run.txt" 2>&1
status=$?
[ "$status" = 0 ] || fail "gpu-check-prebuilt.sh exited $status: $(tail -n 20 "$work/run.txt")"
checks=$((checks + 1))
for step in configure build; do
  grep -q "^$step	skipped	prebuilt programs" "$work/out/results.tsv" || fail "$step is not skipped as prebuilt"
  checks=$((checks + 1))
done
for step in test_cuda test_cuda_kernels test_cuda_executor test_cuda_batching; do
  grep -q "^$step	passed" "$work/out/results.tsv" || fail "$step did not pass: $(cat "$work/out/results.tsv")"
  checks=$((checks + 1))
done
echo "gpu-check pack self-test: $checks checks passed ($(du -h "$work/pack.tar.xz" | cut -f1) packed at xz -0)"
