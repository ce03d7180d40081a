#!/usr/bin/env bash
# Runs the libFuzzer targets of tests/fuzz/ for a given time each.
#
#   bash scripts/fuzz.sh SECONDS [TARGET...]     e.g. bash scripts/fuzz.sh 60
#                                                     bash scripts/fuzz.sh 300 gguf text_stream
#
# TARGET is a name from tests/fuzz/ without the fuzz_ prefix (default: all):
# gguf llama2c tokenizer_file tokenizer text_stream request responses safetensors jinja schema tool_calls.
#
# Builds build-fuzz/ (or FUZZ_BUILD_DIR) first when needed (clang-14,
# AddressSanitizer + UndefinedBehaviorSanitizer, libFuzzer). Each target starts from a scratch
# copy of its committed corpus (tests/fuzz/corpus/TARGET/), so the committed
# corpus only grows on purpose. Any crash, sanitizer report, leak, hang
# (> 10 s on one input) or allocation beyond the memory limits fails the run;
# the input that caused it is saved to tests/fuzz/crashes/ for triage (see
# docs/reliability.md: a finding becomes a corpus file and a unit test).
# Targets run side by side, one per core (FUZZ_JOBS=N to change). Prints
# executions and seconds per target; exits non-zero on any finding.
set -euo pipefail
cd "$(dirname "$0")/.."

all_targets=(gguf llama2c tokenizer_file tokenizer text_stream request responses safetensors jinja schema tool_calls)
if [ $# -lt 1 ] || ! [[ $1 =~ ^[0-9]+$ ]]; then
  echo "usage: bash scripts/fuzz.sh SECONDS [TARGET...]   (targets: ${all_targets[*]})" >&2
  exit 2
fi
seconds=$1; shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [ -f "tests/fuzz/fuzz_$t.cpp" ] || { echo "fuzz.sh: unknown target '$t' (targets: ${all_targets[*]})" >&2; exit 2; }
done

# The build: FUZZ_BUILD_DIR, default build-fuzz/; CI passes its sanitizer
# build (build-asan/), configured the same way, whose libraries the targets share.
build=${FUZZ_BUILD_DIR:-build-fuzz}
# -fno-sanitize-recover=all: an UndefinedBehaviorSanitizer report aborts, so the fuzzer sees it as a crash.
# -Dinstrumented_libraries=true: the code under test at -O2 with the coverage
# instrumentation libFuzzer steers by (meson.build); the rest at -O0.
fuzz_options=(--buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false "-Dcpp_args=-fno-sanitize-recover=all -g1"
  -Dinstrumented_libraries=true -Dfuzz=true -Dcuda=disabled)
if [ ! -f "$build/build.ninja" ]; then
  CC=clang-14 CXX=clang++-14 meson setup "$build" "${fuzz_options[@]}" -Dtests=false -Dbenchmarks=false
elif ! grep -q 'fsanitize=fuzzer-no-link' "$build/build.ninja"; then
  # A folder configured otherwise (before the libraries were shared): made again.
  echo "fuzz.sh: $build is not an instrumented build; configuring it again"
  CC=clang-14 CXX=clang++-14 meson setup --wipe "$build" "${fuzz_options[@]}" -Dtests=false -Dbenchmarks=false
fi
ninja -C "$build" $(for t in "${targets[@]}"; do echo "tests/fuzz/fuzz_$t"; done)

work=$build/fuzz-work
crashes=tests/fuzz/crashes
mkdir -p "$work" "$crashes"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

# One target: fuzzes it, then writes its summary line to $work/$t.line and
# its exit status to $work/$t.status.
run_target() {
  local t=$1 corpus=$work/$1 log=$work/$1.log
  rm -rf "$corpus"
  mkdir -p "$corpus"
  cp tests/fuzz/corpus/"$t"/* "$corpus"/
  local start status=0 dict=()
  # A target with a dictionary (tests/fuzz/dictionaries/TARGET.dict) gets it:
  # the tokens of a grammar that random bytes would rarely spell.
  [ -f "tests/fuzz/dictionaries/$t.dict" ] && dict=(-dict="tests/fuzz/dictionaries/$t.dict")
  start=$(date +%s)
  # -rss_limit_mb: the whole process; -malloc_limit_mb: any single allocation
  # (inputs are a few KB, so a 512 MiB allocation means a size was trusted).
  "$build/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 \
    -print_final_stats=1 -artifact_prefix="$crashes/$t-" "${dict[@]}" "$corpus" >"$log" 2>&1 || status=$?
  local elapsed=$(( $(date +%s) - start ))
  local runs line
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  line=$(printf '%-20s %10s executions in %4s s' "fuzz_$t" "${runs:-?}" "$elapsed")
  if [ "$status" -ne 0 ]; then
    line+="  FAILED (exit $status): $(grep -a -m1 -E 'ERROR: |fuzz property violated|fuzz finding' "$log" || echo "see $log")"
    local artifact
    artifact=$(sed -n "s/.*Test unit written to //p" "$log" | tail -1)
    [ -n "$artifact" ] && line+=$'\n'"                     input saved: $artifact"
  else
    line+="  ok ($(grep -a -E '^Done [0-9]+ runs in [0-9]+ second' "$log" | tail -1 || echo 'no Done line'))"
  fi
  echo "$line" >"$work/$t.line"
  echo "$status" >"$work/$t.status"
}

# As many targets at once as there are cores (FUZZ_JOBS overrides): each
# target is one single-threaded process.
jobs=${FUZZ_JOBS:-$(nproc)}
echo "== fuzzing ${targets[*]}: $seconds s each, $jobs at a time (logs: $work/TARGET.log)"
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  run_target "$t" &
done
wait

echo "== fuzz summary ($seconds s per target)"
failed=()
for t in "${targets[@]}"; do
  cat "$work/$t.line"
  [ "$(cat "$work/$t.status")" -eq 0 ] || failed+=("$t")
done
if [ ${#failed[@]} -gt 0 ]; then
  for t in "${failed[@]}"; do echo "---- last lines of $work/$t.log" >&2; tail -30 "$work/$t.log" >&2; done
  echo "fuzz.sh: findings in: ${failed[*]} (inputs saved in $crashes/)" >&2
  exit 1
fi
