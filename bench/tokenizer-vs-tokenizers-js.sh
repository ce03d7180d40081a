#!/usr/bin/env bash
# Byte-level BPE encoding speed, AstrAI against tokenizers.js, side by side in
# one run on the same ~100 KB text (bench_tokenizer's sample) and the same
# real tokenizer.json files (Llama 3, Qwen 3). Prints a table with the ratio.
#
#   bash bench/tokenizer-vs-tokenizers-js.sh [BUILD_DIR]   (default build)
#
# Needs node and `npm ci` in tests/engine/tokenizer/bpe_oracle. The token
# counts of both sides are printed too: equal counts show the same work.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
bench="$build/bench/bench_tokenizer"
[ -x "$bench" ] || { echo "no $bench: build with -Dbenchmarks=true" >&2; exit 2; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

"$bench" --write-sample="$scratch/sample.txt"
"$bench" --benchmark_filter=byte_level --benchmark_min_time=2 --benchmark_format=json > "$scratch/astrai.json"
for name in llama3 qwen3; do node bench/tokenizers_js_bench.mjs "$name" "$scratch/sample.txt"; done > "$scratch/js.jsonl"

python3 - "$scratch/astrai.json" "$scratch/js.jsonl" <<'PY'
import json, sys
ours = {b["name"].split("/")[1]: b for b in json.load(open(sys.argv[1]))["benchmarks"]}
print(f"{'vocabulary':<10} {'bytes':>7} {'tokens (astrai / js)':>21} {'astrai ms':>10} {'tokenizers.js ms':>17} {'speedup':>8}")
for line in open(sys.argv[2]):
    js = json.loads(line)
    b = ours[js["name"]]
    ms = b["real_time"]  # the benchmarks report milliseconds
    tokens = f"{int(b['tokens'])} / {js['tokens']}"
    print(f"{js['name']:<10} {js['bytes']:>7} {tokens:>21} {ms:>10.2f} {js['ms_per_encode']:>17.2f} {js['ms_per_encode'] / ms:>7.2f}x")
PY
