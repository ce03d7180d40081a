#!/usr/bin/env bash
# Installs the Debian 12 packages AstrAI builds and tests with (run as root).
# Every library comes from Debian; the CUDA backend is built only when nvcc
# (the CUDA Toolkit at /usr/local/cuda) is present, and is never installed here.
set -euo pipefail

packages=(
  build-essential meson ninja-build pkg-config cmake
  ccache                                                          # meson compiles through it: a rebuild after a checkout or a reconfigure reuses unchanged objects
  lld                                                             # LLVM's linker for the sanitizer build: its test programs link in a fifth of GNU ld's time (scripts/build-and-test.sh)
  xtensor-dev libxtensor-blas-dev libxsimd-dev libopenblas-dev   # reference math
  nlohmann-json3-dev                                              # JSON
  libpcre2-dev libicu-dev                                         # tokenizer.json: Split regexes (PCRE2), NFC (ICU)
  libcpp-httplib-dev libssl-dev zlib1g-dev libbrotli-dev          # HTTP server (and what its .pc requires)
  catch2 librapidcheck-dev libbenchmark-dev                       # tests and benchmarks
  python3-jinja2                                                  # chat template oracle (what transformers renders with)
  python3-prometheus-client                                       # an independent parser of GET /metrics (tests/reliability)
  python3-jsonschema                                              # an independent JSON Schema validator (tests/engine/grammar)
  libzmq3-dev cppzmq-dev libmsgpack-cxx-dev                       # KV cache events: ZeroMQ PUB/ROUTER, msgpack (engine/kv_cache/events/kv_events_publisher.h);
                                                                  # msgpack also carries the tensor-parallel ranks' messages (cuda/tensor_parallel/)
  python3-zmq python3-msgpack                                     # a subscriber reading the events' wire format (tests/reliability/test_kv_events.py)
  clang-14 libclang-rt-14-dev                                     # libFuzzer targets (scripts/fuzz.sh), the emulated kernels
  libboost-context-dev                                            # the emulated device's fibers (cuda/emulation/block_runner.cpp)
)
# The official OpenAI/Anthropic clients in tests/clients run on Node.js; a
# machine that has it already (from anywhere) needs no Debian nodejs/npm.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then packages+=(nodejs npm); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run this script as root (or: sudo apt-get install ${missing[*]})" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
