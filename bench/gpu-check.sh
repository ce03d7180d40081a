#!/usr/bin/env bash
# The GPU check: the first run of AstrAI on a GPU machine (one H200, nvcc, no
# network), in one command that finishes in under 9 minutes, cold build
# included. It builds the CUDA tests and bench_cuda for sm_90 only, runs every
# CUDA test, the kernel-case test under compute-sanitizer (when the toolkit
# has it), the kernel benchmarks, the decode step at the reference shapes
# (Llama-3-8B bf16: batch 1 at context 1k, batch 64 at context 2k; Q4_K_M and
# Q8_0 at batch 1, context 1k; achieved GB/s against the memory floor), the
# PyTorch comparison when torch is
# installed, and prints a short table last.
#
#   bench/gpu-check.sh [build-dir]          (default build-gpu-check)
#
# A build dir without build.ninja that holds the five programs
# (tests/cuda/test_cuda*, bench/bench_cuda) is taken as prebuilt elsewhere:
# configure and build are skipped (bench/gpu-check-pack.sh makes one).
#
# Results go under $OUT (default ./gpu-check-out): summary.txt (the table),
# skipped.txt (each skipped test case and why), logs/<step>.txt, and
# bench_*.json. Exit status 0 when nothing failed; skips are not failures.
#
# Skips and failures:
#  - a test case that skips because this machine has one CUDA device (a
#    multi-GPU case), or because shared data (models/, golden/) is not in the
#    tree, is a skip; the data is looked for in $ASTRAI_SHARED_DIR, else
#    ./shared, else ../shared, and the skipped cases are listed by name;
#  - when nvidia-smi lists a GPU, a test that cannot use it fails (the test
#    programs fail by themselves under ASTRAI_EXPECT_GPU=1, and this script
#    fails any "no GPU" skip too); with no GPU listed, those are skips;
#  - a step that runs past its time limit is a failure (TIMEOUT).
#
# Time: every step has a limit (the budget table below) and the limits sum
# to less than 540 s, so the script ends within 9 minutes whatever happens.
# The build is the five targets the steps need, sm_90 only (-Dgpu_archs=90:
# no sm_80 pass), on every core; ccache is used when present, not needed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
root=$PWD
build=${1:-build-gpu-check}
out=${OUT:-$root/gpu-check-out}
logs=$out/logs
mkdir -p "$logs"
results=$out/results.tsv
skipped=$out/skipped.txt
: > "$results"
: > "$skipped"
started=$(date +%s)

# Seconds each step may take; the sum stays below 540 (checked here).
declare -A budget=(
  [configure]=30 [build]=135
  [test_cuda]=10 [test_cuda_kernels]=35 [test_cuda_executor]=35 [test_cuda_batching]=35
  [memcheck]=25 [racecheck]=25
  [bench_kernels]=90 [bench_decode]=75 [torch]=40
)
steps=(configure build test_cuda test_cuda_kernels test_cuda_executor test_cuda_batching memcheck racecheck
       bench_kernels bench_decode torch)
total=0
for s in "${steps[@]}"; do total=$((total + budget[$s])); done
if ((total >= 540)); then
  echo "gpu-check.sh: the step limits sum to $total s, not below 540" >&2
  exit 2
fi

# record STEP STATUS NOTE: one row of the summary.
record() {
  printf '%s\t%s\t%s\n' "$1" "$2" "$3" >> "$results"
  printf '%-20s %-10s %s\n' "$1" "$2" "$3"
}

# run STEP COMMAND...: COMMAND under the step's time limit, output in logs/STEP.txt.
# Sets $rc (124 or 137: the limit) and $secs.
run() {
  local step=$1
  shift
  local t0
  t0=$(date +%s)
  timeout --kill-after=5 "${budget[$step]}" "$@" > "$logs/$step.txt" 2>&1
  rc=$?
  secs=$(($(date +%s) - t0))
}

# The skipped test cases of a Catch2 console log, one "case: reason" a line.
# Catch2 prints a case's name (wrapped onto several lines when long, its
# sections indented below it) between two dashed lines, then its warnings,
# each message wrapped onto indented lines up to a blank one.
skipped_cases() {
  awk '
    /^-+$/ && length($0) >= 70 { inside = !inside; if (inside) name = ""; next }
    inside { line = $0; sub(/^ +/, "", line); name = name == "" ? line : name " " line; next }
    /SKIPPED: / { reason = $0; sub(/.*SKIPPED: /, "", reason); collecting = 1; next }
    collecting && /^  +[^ ]/ { line = $0; sub(/^ +/, "", line); reason = reason " " line; next }
    collecting { print name ": " reason; collecting = 0 }
    END { if (collecting) print name ": " reason }
  ' "$1"
}

echo "== device"
if command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | tee "$logs/device.txt"
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
else
  echo "no nvidia-smi" | tee "$logs/device.txt"
  gpus=0
fi
if ((gpus > 0)); then export ASTRAI_EXPECT_GPU=1; else export ASTRAI_EXPECT_GPU=0; fi
echo "GPUs listed: $gpus (ASTRAI_EXPECT_GPU=$ASTRAI_EXPECT_GPU)"
if [ -z "${ASTRAI_SHARED_DIR:-}" ] && [ -d "$root/shared/models" ]; then export ASTRAI_SHARED_DIR=$root/shared; fi
echo "shared test data: ${ASTRAI_SHARED_DIR:-$root/../shared, the default of the tests}"
command -v ccache > /dev/null || echo "no ccache: a cold build"

echo "== configure and build (sm_90 only; $(nproc) cores)"
built=1
programs=(tests/cuda/test_cuda tests/cuda/test_cuda_kernels tests/cuda/test_cuda_executor tests/cuda/test_cuda_batching
          bench/bench_cuda)
prebuilt=0
if [ ! -f "$build/build.ninja" ]; then
  prebuilt=1
  for p in "${programs[@]}"; do [ -x "$build/$p" ] || prebuilt=0; done
fi
if ((prebuilt)); then
  # Programs built on another machine (the GPU machine has nvcc but none of
  # the Debian packages): no build.ninja, the five programs in place.
  record configure skipped "prebuilt programs in $build"
  record build skipped "prebuilt programs in $build"
elif [ ! -f "$build/build.ninja" ]; then
  run configure meson setup "$build" --buildtype=release -Dcuda=enabled -Dgpu_archs=90 -Dtests=true -Dbenchmarks=true
  if ((rc != 0)); then
    built=0
    record configure "$( ((rc == 124 || rc == 137)) && echo TIMEOUT || echo FAILED)" "${secs}s, see logs/configure.txt"
  else
    record configure passed "${secs}s"
  fi
else
  record configure skipped "$build already configured"
fi
if ((built && !prebuilt)); then
  run build ninja -C "$build" -j"$(nproc)" "${programs[@]}"
  if ((rc == 0)); then
    record build passed "${secs}s"
  else
    built=0
    record build "$( ((rc == 124 || rc == 137)) && echo TIMEOUT || echo FAILED)" "${secs}s, see logs/build.txt"
  fi
fi

# A test program's result from its exit status and its skips.
judge_test() {
  local step=$1 log=$logs/$1.txt
  local skips
  skips=$(skipped_cases "$log")
  [ -n "$skips" ] && while IFS= read -r line; do echo "$step: $line"; done <<< "$skips" >> "$skipped"
  local n_skips=0 bad_skips=0
  [ -n "$skips" ] && n_skips=$(wc -l <<< "$skips")
  # With a GPU listed, only the multi-GPU, missing-data and missing-Node
  # (the llama.cpp oracle runs under node-llama-cpp) skips are skips.
  if [ "$ASTRAI_EXPECT_GPU" = 1 ] && [ -n "$skips" ]; then
    bad_skips=$(grep -vc -e 'one CUDA device' -e 'shared data .* not found' -e 'node not found' <<< "$skips")
  fi
  local tally
  tally=$(grep -E '^(All tests passed|test cases:)' "$log" | tail -n 1)
  if ((rc == 124 || rc == 137)); then
    record "$step" TIMEOUT "past ${budget[$step]}s"
  elif ((rc != 0)); then
    record "$step" FAILED "$tally (${secs}s)"
  elif ((bad_skips > 0)); then
    record "$step" FAILED "$bad_skips skipped on a GPU machine (skipped.txt)"
  elif ((n_skips > 0)); then
    record "$step" passed "$tally; $n_skips skipped (skipped.txt; ${secs}s)"
  else
    record "$step" passed "$tally (${secs}s)"
  fi
}

echo "== CUDA tests"
for t in test_cuda test_cuda_kernels test_cuda_executor test_cuda_batching; do
  if ((built)); then
    run "$t" "$build/tests/cuda/$t"
    judge_test "$t"
  else
    record "$t" FAILED "not built"
  fi
done

echo "== compute-sanitizer over the kernel cases (5 cases per property)"
sanitizer=$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")
for tool in memcheck racecheck; do
  if ((!built)); then
    record "$tool" FAILED "not built"
  elif [ ! -x "$sanitizer" ]; then
    record "$tool" skipped "no compute-sanitizer in this toolkit ($sanitizer)"
  else
    run "$tool" env RC_PARAMS="max_success=5" "$sanitizer" --tool "$tool" --error-exitcode 1 \
      "$build/tests/cuda/test_cuda_kernels" "every kernel case matches its reference"
    summary_line=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$logs/$tool.txt" | tail -n 1)
    if ((rc == 124 || rc == 137)); then
      record "$tool" TIMEOUT "past ${budget[$tool]}s"
    elif ((rc != 0)); then
      record "$tool" FAILED "$summary_line"
    else
      record "$tool" passed "$summary_line (${secs}s)"
    fi
  fi
done

# A benchmark step: fails on a non-zero exit, on INVALID kernels, and on a
# skip when a GPU is listed.
judge_bench() {
  local step=$1 log=$logs/$1.txt
  if ((rc == 124 || rc == 137)); then
    record "$step" TIMEOUT "past ${budget[$step]}s"
  elif grep -q '^SKIPPED' "$log"; then
    if [ "$ASTRAI_EXPECT_GPU" = 1 ]; then
      record "$step" FAILED "$(grep -m1 '^SKIPPED' "$log")"
    else
      record "$step" skipped "$(grep -m1 '^SKIPPED' "$log" | cut -c10-)"
    fi
  elif ((rc != 0)); then
    local invalid
    invalid=$(grep -c '^INVALID' "$log")
    record "$step" FAILED "exit $rc, $invalid invalid kernels (logs/$step.txt)"
  else
    record "$step" passed "${secs}s"
  fi
}

echo "== benchmarks"
for step in bench_kernels bench_decode; do
  if ((built)); then
    mode=${step#bench_}
    run "$step" env ASTRAI_BENCH="$mode" "$build/bench/bench_cuda" --benchmark_out="$out/$step.json" \
      --benchmark_out_format=json
    judge_bench "$step"
  else
    record "$step" FAILED "not built"
  fi
done

echo "== PyTorch comparison"
if command -v python3 > /dev/null && python3 -c 'import torch' 2> /dev/null; then
  run torch python3 bench/torch_compare.py
  if ((rc == 0)); then
    record torch passed "${secs}s"
  elif ((rc == 124 || rc == 137)); then
    record torch TIMEOUT "past ${budget[torch]}s"
  else
    record torch FAILED "exit $rc, see logs/torch.txt"
  fi
else
  record torch skipped "no python3 with torch"
fi

# The table, last: every step, then the kernel ceilings and the decode steps.
failed=$(awk -F'\t' '$2 == "FAILED" || $2 == "TIMEOUT"' "$results" | wc -l)
{
  echo
  echo "== summary ($(($(date +%s) - started)) s; limits sum to $total s; $failed failed; results in $out)"
  awk -F'\t' '{ printf "%-20s %-10s %s\n", $1, $2, $3 }' "$results"
  grep -h '^ceilings' "$logs/bench_kernels.txt" "$logs/bench_decode.txt" 2> /dev/null | head -n 1
  grep -h '^decode_step ' "$logs/bench_decode.txt" 2> /dev/null
  grep -h '^torch ' "$logs/torch.txt" 2> /dev/null
  [ -s "$skipped" ] && echo "skipped test cases: $(wc -l < "$skipped") (skipped.txt)"
} | tee "$out/summary.txt"
((failed == 0))
