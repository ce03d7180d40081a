#!/usr/bin/env bash
# Runs bench/gpu-check.sh on a GPU machine from a pack that
# bench/gpu-check-pack.sh made on a build machine: for a machine with the CUDA
# toolkit but none of our Debian packages, where nothing can be built.
#
#   bench/gpu-check-prebuilt.sh PACK.tar.xz       (OUT as for gpu-check.sh)
#
# Unpacks into a temporary folder, points the programs at the pack's
# libraries, the toolkit's lib64 and, for a toolkit library still missing
# (NCCL ships as a Python wheel on some images), the folder that holds it
# under /usr or /opt; sets ASTRAI_SHARED_DIR to the pack's test data and
# ASTRAI_SOURCE_ROOT to this checkout (the kernel-case files are read from
# it), then runs gpu-check.sh on the pack's prebuilt programs.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
pack=${1:?usage: bench/gpu-check-prebuilt.sh PACK.tar.xz}
dir=$(mktemp -d)
tar -xJf "$pack" -C "$dir" || exit 2
programs=("$dir"/build/tests/cuda/* "$dir"/build/bench/bench_cuda)
export LD_LIBRARY_PATH=$dir/lib:${CUDA_HOME:-/usr/local/cuda}/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for lib in $(ldd "${programs[@]}" 2> /dev/null | awk '/not found/ { print $1 }' | sort -u); do
  found=$(find /usr /opt -name "$lib" 2> /dev/null | head -n 1)
  [ -n "$found" ] && LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$found") && echo "$lib from $found"
done
missing=$(ldd "${programs[@]}" 2> /dev/null | awk '/not found/ { print $1 }' | sort -u)
if [ -n "$missing" ]; then
  echo "gpu-check-prebuilt.sh: libraries not found on this machine: $missing" >&2
  exit 2
fi
export ASTRAI_SHARED_DIR=$dir/shared ASTRAI_SOURCE_ROOT=$PWD
bash bench/gpu-check.sh "$dir/build"
status=$?
rm -rf "$dir"
exit $status
