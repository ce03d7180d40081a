#!/usr/bin/env bash
# Packs what bench/gpu-check.sh needs on a GPU machine that has the CUDA
# toolkit but none of our Debian packages (no Catch2, xtensor, OpenBLAS,
# ZeroMQ, ...): the five programs built here, the shared libraries they load
# that such a machine may lack, and the shared test data, in one .tar.xz.
#
#   bench/gpu-check-pack.sh BUILD-DIR PACK.tar.xz
#
# BUILD-DIR is a release build configured with -Dcuda=enabled
# -Dgpu_archs=90 whose five targets are built (`ninja -C BUILD-DIR
# tests/cuda/test_cuda tests/cuda/test_cuda_kernels tests/cuda/test_cuda_executor
# tests/cuda/test_cuda_batching bench/bench_cuda`). XZ_OPT sets the
# compression (xz's default, -6, packs 22 MB; bench/gpu-check-pack-selftest.sh
# uses -0). On the GPU machine:
#
#   mkdir -p /tmp/pack && tar xJf PACK.tar.xz -C /tmp/pack
#   LD_LIBRARY_PATH=/tmp/pack/lib ASTRAI_SHARED_DIR=/tmp/pack/shared bench/gpu-check.sh /tmp/pack/build
#
# The pack's build dir has no build.ninja, so gpu-check.sh takes its programs
# as prebuilt. Left out of lib/: the C library and its loader, libstdc++ and
# libgcc_s (a newer system has them, backward compatible), the CUDA driver
# and the toolkit's own libraries (the machine's toolkit provides them, and
# cuBLASLt alone is larger than what a run may carry).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: bench/gpu-check-pack.sh BUILD-DIR PACK.tar.xz}
pack=${2:?usage: bench/gpu-check-pack.sh BUILD-DIR PACK.tar.xz}
shared=${ASTRAI_SHARED_DIR:-../shared}
programs=(tests/cuda/test_cuda tests/cuda/test_cuda_kernels tests/cuda/test_cuda_executor tests/cuda/test_cuda_batching
          bench/bench_cuda)
for p in "${programs[@]}"; do
  [ -x "$build/$p" ] || { echo "gpu-check-pack.sh: $build/$p is not built" >&2; exit 2; }
done

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/build/tests/cuda" "$stage/build/bench" "$stage/lib" "$stage/shared"
for p in "${programs[@]}"; do
  cp "$build/$p" "$stage/build/$p"
  strip --strip-debug "$stage/build/$p"
done
# The libraries the programs load, by ldd, less those named above.
for p in "${programs[@]}"; do ldd "$build/$p"; done |
  awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u |
  grep -v -E '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libnccl|libnvidia[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done
# The shared test data the CUDA tests read (models/, golden/).
for d in models golden; do
  [ -d "$shared/$d" ] && cp -r "$shared/$d" "$stage/shared/"
done
tar -C "$stage" -cJf "$pack" .
echo "packed $(du -h "$pack" | cut -f1) into $pack, with these libraries: $(cd "$stage/lib" && printf "%s " *)"
