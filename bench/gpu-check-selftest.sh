#!/usr/bin/env bash
# Checks bench/gpu-check.sh's judgement without a GPU: it runs the script on
# a fake build directory whose "test programs", "bench_cuda" and
# "compute-sanitizer" are small shell scripts printing what the real ones
# print (Catch2's console format, bench_cuda's SKIPPED and decode_step
# lines), under a fake nvidia-smi, and asserts each step's status, the list
# of skipped cases, the exit status and the files under $OUT.
#
#   bench/gpu-check-selftest.sh        (prints "gpu-check self-test: N checks passed")
#
# Scenarios:
#  1. nvidia-smi lists a GPU: a multi-GPU case skipped with "one CUDA device"
#     and a case whose shared data is missing are skips; a "no GPU" skip in
#     another program fails it; a failing program fails; the decode_step
#     lines reach the table; the exit status is 1.
#  2. nvidia-smi lists none, the programs prebuilt (no build.ninja):
#     configure and build are skipped, every "no GPU" skip is a skip, no
#     compute-sanitizer is reported as such, the exit status is 0.
#  3. A test program that runs past its time limit is a TIMEOUT.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
root=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
checks=0
fail() {
  echo "gpu-check self-test FAILED: $*" >&2
  exit 1
}
expect() {  # expect OUT STEP STATUS
  local got
  got=$(awk -F'\t' -v s="$2" '$1 == s { print $2 }' "$1/results.tsv")
  [ "$got" = "$3" ] || fail "$2 is '$got', expected '$3' ($1/results.tsv)"
  checks=$((checks + 1))
}

# A Catch2 console log: one case skipped with $2, the tally, exit status $3.
fake_test() {  # fake_test PATH "SKIP MESSAGE" STATUS [SLEEP]
  local program
  program=$(basename "$1")
  cat > "$1" <<EOF
#!/bin/sh
sleep ${4:-0}
cat <<'LOG'

~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
$program is a Catch v2.13.10 host application.
Run with -? for options

-------------------------------------------------------------------------------
a case whose name is long enough that Catch2 wraps it onto a second line of
                       the header
-------------------------------------------------------------------------------
../tests/cuda/x.cpp:10
...............................................................................

../tests/cuda/x.cpp:11:
warning:
  SKIPPED: $2

LOG
if [ "$3" = 0 ]; then echo "All tests passed (3 assertions in 2 test cases)"; else echo "test cases: 2 | 1 passed | 1 failed"; fi
exit $3
EOF
  chmod +x "$1"
}

make_build() {  # make_build DIR: a configured build whose targets exist
  local b=$1
  mkdir -p "$b/tests/cuda" "$b/bench"
  {
    for t in tests/cuda/test_cuda tests/cuda/test_cuda_kernels tests/cuda/test_cuda_executor \
      tests/cuda/test_cuda_batching bench/bench_cuda; do
      echo "build $t: phony"
    done
  } > "$b/build.ninja"
  cat > "$b/bench/bench_cuda" <<'EOF'
#!/bin/sh
if [ "$ASTRAI_EXPECT_GPU" = 0 ]; then echo "SKIPPED: no GPU was found (fake)"; exit 0; fi
echo "ceilings: device-to-device copy 4000 GB/s, bf16 GEMM 700 TFLOP/s (fake)"
if [ "$ASTRAI_BENCH" = decode ]; then
  echo "decode_step bf16   batch 1   context 1024     4.000 ms   15.14 GB    3786 GB/s  floor 3.155 ms (4800 GB/s: fake)  0.79 of floor"
fi
exit 0
EOF
  chmod +x "$b/bench/bench_cuda"
}

fakebin=$work/bin
mkdir -p "$fakebin"
cat > "$fakebin/compute-sanitizer" <<'EOF'
#!/bin/sh
# compute-sanitizer --tool T --error-exitcode 1 PROGRAM ARGS...
shift 4
"$@" > /dev/null 2>&1
echo "========= ERROR SUMMARY: 0 errors"
EOF
chmod +x "$fakebin/compute-sanitizer"

# 1. A GPU listed.
# shellcheck disable=SC2016  # $1 is the fake's own argument
printf '#!/bin/sh\ncase "$1" in -L) echo "GPU 0: NVIDIA H200 (UUID: GPU-fake)";; *) echo "NVIDIA H200, 143771 MiB, 580.00";; esac\n' \
  > "$fakebin/nvidia-smi"
chmod +x "$fakebin/nvidia-smi"
b=$work/build1
make_build "$b"
fake_test "$b/tests/cuda/test_cuda" "one CUDA device; the emulated build has two and runs this test" 0
fake_test "$b/tests/cuda/test_cuda_kernels" "shared data models/x.bin not found under /nowhere (set ASTRAI_SHARED_DIR ...)" 0
fake_test "$b/tests/cuda/test_cuda_executor" "no GPU was found (CUDA driver version is insufficient for CUDA
  runtime version)" 0
fake_test "$b/tests/cuda/test_cuda_batching" "one CUDA device" 1
out=$work/out1
OUT=$out PATH=$fakebin:$PATH ASTRAI_SHARED_DIR=/nowhere bash bench/gpu-check.sh "$b" > "$work/run1.txt" 2>&1
status=$?
[ "$status" = 1 ] || fail "scenario 1 exited $status, expected 1"
checks=$((checks + 1))
expect "$out" configure skipped
expect "$out" build passed
expect "$out" test_cuda passed
expect "$out" test_cuda_kernels passed
expect "$out" test_cuda_executor FAILED
expect "$out" test_cuda_batching FAILED
expect "$out" memcheck passed
expect "$out" racecheck passed
expect "$out" bench_kernels passed
expect "$out" bench_decode passed
grep -q '^test_cuda_executor: a case whose name is long enough that Catch2 wraps it onto a second line of the header: no GPU was found (CUDA driver version is insufficient for CUDA runtime version)$' \
  "$out/skipped.txt" || fail "skipped.txt lacks the wrapped case and reason: $(cat "$out/skipped.txt")"
checks=$((checks + 1))
[ "$(wc -l < "$out/skipped.txt")" = 4 ] || fail "skipped.txt should list 4 cases"
checks=$((checks + 1))
tail -n 20 "$out/summary.txt" | grep -q '^decode_step bf16 *batch 1 ' || fail "no decode_step line in the table"
checks=$((checks + 1))
[ "$(tail -n 1 "$work/run1.txt")" = "$(tail -n 1 "$out/summary.txt")" ] || fail "the table is not printed last"
checks=$((checks + 1))
for f in summary.txt results.tsv skipped.txt logs/test_cuda.txt logs/bench_decode.txt logs/memcheck.txt; do
  [ -s "$out/$f" ] || fail "no $f under \$OUT"
  checks=$((checks + 1))
done

# 2. No GPU listed, no compute-sanitizer.
printf '#!/bin/sh\necho "No devices were found"\nexit 6\n' > "$fakebin/nvidia-smi"
rm "$fakebin/compute-sanitizer"
b=$work/build2
make_build "$b"
for t in test_cuda test_cuda_kernels test_cuda_executor test_cuda_batching; do
  fake_test "$b/tests/cuda/$t" "no GPU was found (CUDA driver version is insufficient)" 0
done
rm "$b/build.ninja"  # prebuilt programs, as bench/gpu-check-prebuilt.sh unpacks them: nothing to build
out=$work/out2
OUT=$out PATH=$fakebin:$PATH CUDA_HOME=$work/no-cuda bash bench/gpu-check.sh "$b" > "$work/run2.txt" 2>&1
status=$?
[ "$status" = 0 ] || fail "scenario 2 exited $status, expected 0: $(cat "$work/run2.txt")"
checks=$((checks + 1))
expect "$out" configure skipped
expect "$out" build skipped
grep -q 'prebuilt programs' "$out/results.tsv" || fail "the prebuilt programs are not named"
checks=$((checks + 1))
for t in test_cuda test_cuda_kernels test_cuda_executor test_cuda_batching; do expect "$out" "$t" passed; done
expect "$out" memcheck skipped
expect "$out" bench_decode skipped
grep -q 'no compute-sanitizer in this toolkit' "$out/results.tsv" || fail "the missing compute-sanitizer is not named"
checks=$((checks + 1))

# 3. A test program past its limit.
b=$work/build3
make_build "$b"
for t in test_cuda test_cuda_kernels test_cuda_executor test_cuda_batching; do fake_test "$b/tests/cuda/$t" "x" 0; done
fake_test "$b/tests/cuda/test_cuda" "x" 0 30  # test_cuda's limit is 10 s
out=$work/out3
OUT=$out PATH=$fakebin:$PATH bash bench/gpu-check.sh "$b" > "$work/run3.txt" 2>&1
status=$?
[ "$status" = 1 ] || fail "scenario 3 exited $status, expected 1"
checks=$((checks + 1))
expect "$out" test_cuda TIMEOUT

cd "$root" || exit 2
echo "gpu-check self-test: $checks checks passed"
