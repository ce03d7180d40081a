#!/usr/bin/env bash
# Runs the official OpenAI and Anthropic Node.js SDKs (clients.test.mjs)
# against `astrai serve` with its synthetic model, or with the serve arguments
# given after "--" (a model, a backend):
#   tests/clients/run.sh [path/to/astrai]      (default: build/cli/astrai)
#   tests/clients/run.sh build-emu/cli/astrai -- --backend cuda --model M --tokenizer T
# ASTRAI_CLIENTS_SUITE=harmony runs harmony.test.mjs instead (a gpt-oss model
# behind its own template: run_window_models.sh), =own-template
# own_template.test.mjs (Gemma 3 or Mistral behind its own template: the same).
# ASTRAI_TOOLS_MODEL=FOLDER serves the tool-call suite from that model behind
# its own template instead (with no serve arguments after "--"), and
# ASTRAI_CLIENTS_ONLY_TOOL_CALLS=1 runs that suite alone (run_codex.sh).
# ASTRAI_CLIENTS_NO_TOOL_CALLS=1 leaves out the suite of tool calls that come
# back (and its second server): they decode grammar-constrained calls, the
# slowest of the tests on a slow backend, and the server's tool-call path
# does not depend on the backend or the model.
# Starts the server on a free loopback port (--port 0) with a random API key,
# waits for /health to report the model loaded, runs `npm ci` and
# `node --test`, and stops the server whatever happens. Needs Node.js >= 20
# and npm (which fetches the pinned SDKs from its registry). Only 127.0.0.1
# is ever contacted besides the npm registry.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
astrai="$here/../../build/cli/astrai"
if [ $# -gt 0 ] && [ "$1" != "--" ]; then astrai="$1"; shift; fi
[ $# -eq 0 ] || [ "$1" = "--" ] || { echo "run.sh: usage: run.sh [path/to/astrai] [-- serve arguments...]" >&2; exit 2; }
[ $# -eq 0 ] || shift
serve_args=("$@")
# The model's own --model and --tokenizer, for counting the prompt's tokens.
tokenize_args=()
generate_args=()  # the serve arguments `astrai generate` shares (--backend, --cuda-dtype)
for ((i = 0; i < ${#serve_args[@]}; i++)); do
  case "${serve_args[i]}" in
    --backend | --cuda-dtype)
      [ $((i + 1)) -lt ${#serve_args[@]} ] || { echo "run.sh: ${serve_args[i]} needs a value" >&2; exit 2; }
      generate_args+=("${serve_args[i]}" "${serve_args[i + 1]}") ;;
    --model | --tokenizer)
      [ $((i + 1)) -lt ${#serve_args[@]} ] || { echo "run.sh: ${serve_args[i]} needs a value" >&2; exit 2; }
      tokenize_args+=("${serve_args[i]}" "$(realpath "${serve_args[i + 1]}")")
      i=$((i + 1)) ;;
  esac
done
[ -x "$astrai" ] || { echo "run.sh: no astrai program at $astrai (build it, or pass its path)" >&2; exit 2; }
astrai="$(cd "$(dirname "$astrai")" && pwd)/$(basename "$astrai")"

work="$(mktemp -d)"
server_pids=()
cleanup() {
  for pid in ${server_pids[@]+"${server_pids[@]}"}; do
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      wait "$pid" 2>/dev/null || true
    fi
  done
  rm -rf "$work"
}
trap cleanup EXIT

api_key="astrai-test-$RANDOM$RANDOM"
# Starts `astrai serve` with the given extra arguments, logging to $1; sets
# $url once it listens and the model is loaded.
start_server() {
  local log=$1; shift
  # A private cache folder: the synthetic model is written there on first use.
  XDG_CACHE_HOME="$work/cache" "$astrai" serve --host 127.0.0.1 --port 0 --api-key "$api_key" \
    ${serve_args[@]+"${serve_args[@]}"} "$@" >"$log" 2>&1 &
  local pid=$!
  server_pids+=("$pid")
  # The server prints "listening on http://127.0.0.1:PORT" once bound.
  url=""
  for _ in $(seq 1 300); do
    url="$(grep -o 'listening on http://127\.0\.0\.1:[0-9]*' "$log" | head -n 1 | sed 's/^listening on //')" || true
    [ -n "$url" ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; echo "run.sh: the server exited" >&2; exit 1; }
    sleep 0.1
  done
  [ -n "$url" ] || { cat "$log" >&2; echo "run.sh: the server did not start listening" >&2; exit 1; }
  # Wait until the model is loaded (/health needs no key).
  node --input-type=module -e "
    for (let i = 0; i < 600; i++) {
      try {
        const health = await (await fetch('$url/health')).json();
        if (health.model_loaded) process.exit(0);
      } catch {}
      await new Promise((r) => setTimeout(r, 100));
    }
    console.error('run.sh: the model did not load within 60 s');
    process.exit(1);
  " || { cat "$log" >&2; exit 1; }
}

log="$work/serve.log"
start_server "$log"

# ASTRAI_CLIENTS_SUITE=harmony: a gpt-oss model behind its own template
# (run_window_models.sh), for harmony.test.mjs alone; ASTRAI_HARMONY_TOKENIZER
# names its tokenizer.json. ASTRAI_CLIENTS_SUITE=own-template: a model behind
# its own template, for own_template.test.mjs alone (its ASTRAI_TEMPLATE_*
# variables come from run_window_models.sh).
suite="${ASTRAI_CLIENTS_SUITE:-clients}"
if [ "$suite" = harmony ] || [ "$suite" = own-template ]; then
  if [ "$suite" = harmony ]; then
    grep -q "reasoning read from harmony messages" "$log" ||
      { cat "$log" >&2; echo "run.sh: the server does not read harmony messages" >&2; exit 1; }
  elif grep -q "chat template plain" "$log"; then
    cat "$log" >&2; echo "run.sh: own-template needs a model with a chat template of its own" >&2; exit 1
  fi
  grep -E "^astrai: |ready \(" "$log" || true
  cd "$here"
  [ "${ASTRAI_CLIENTS_NPM_DONE:-}" = 1 ] || npm ci --no-audit --no-fund --loglevel=error
  ASTRAI_SERVER_URL="$url" ASTRAI_API_KEY="$api_key" node --test "${suite/-/_}.test.mjs" || { cat "$log" >&2; exit 1; }
  exit 0
fi
# The same model behind a hermes (Qwen 2.5-style) Jinja template, for the tool calls that come back.
tools_log="$work/serve-tools.log"
tools_url=""
if [ "${ASTRAI_CLIENTS_NO_TOOL_CALLS:-}" != 1 ]; then
  plain_url="$url"
  # ASTRAI_TOOLS_MODEL: another model, behind its own template (run_codex.sh: Qwen 3's), for the tool calls.
  tools_args=(--chat-template "$here/hermes_tools.jinja")
  [ -z "${ASTRAI_TOOLS_MODEL:-}" ] || tools_args=(--model "$ASTRAI_TOOLS_MODEL")
  start_server "$tools_log" "${tools_args[@]}"
  tools_url="$url"
  url="$plain_url"
  grep -q "tool calls read as hermes" "$tools_log" ||
    { cat "$tools_log" >&2; echo "run.sh: the tool-call server does not read hermes calls" >&2; exit 1; }
fi

# Which model, template and backend the tests run against, for the CI log.
grep -E "^astrai: |ready \(" "$log" || true
# The vocabulary's size, from the start-up line ("... ready (dim=64 ... vocab=512 ..."), for logit_bias.
vocab_size="$(grep -o 'ready (.* vocab=[0-9]*' "$log" | head -n 1 | sed 's/.*vocab=//')" || true
[ -n "$vocab_size" ] || { cat "$log" >&2; echo "run.sh: the server's start-up line names no vocab=" >&2; exit 1; }

# The prompt's token count, from the tokenizer alone (astrai tokenize, BOS
# first), for the usage checks: the plain template, which serves the
# synthetic model and any without a chat template of its own (stories260K),
# makes a single user message exactly its text.
if [ ${#tokenize_args[@]} -eq 0 ]; then
  tokenize_args=(--model "$(ls "$work"/cache/astrai/*.gguf | head -n 1)")
fi
grep -q "chat template plain" "$log" ||
  { cat "$log" >&2; echo "run.sh: the tests count prompt tokens for the plain chat template" >&2; exit 1; }
prompt_tokens="$(printf 'Once upon a time\n' | "$astrai" tokenize "${tokenize_args[@]}" | wc -w)"
[ "$prompt_tokens" -gt 1 ] || { echo "run.sh: could not count the prompt's tokens" >&2; exit 1; }

# `astrai generate` on the same text, greedy: what /v1/completions must return.
generated="$("$astrai" generate "${tokenize_args[@]}" ${generate_args[@]+"${generate_args[@]}"} \
  --prompt 'Once upon a time' --max-tokens 16 --temperature 0 2>/dev/null)"

cd "$here"
# ASTRAI_CLIENTS_NPM_DONE=1: a caller running several models has installed them once (run_moe_models.sh).
[ "${ASTRAI_CLIENTS_NPM_DONE:-}" = 1 ] || npm ci --no-audit --no-fund --loglevel=error
status=0
ASTRAI_SERVER_URL="$url" ASTRAI_TOOLS_URL="$tools_url" ASTRAI_API_KEY="$api_key" ASTRAI_PROMPT_TOKENS="$prompt_tokens" ASTRAI_VOCAB_SIZE="$vocab_size" ASTRAI_GENERATED="$generated" node --test clients.test.mjs || status=$?
if [ "$status" -ne 0 ]; then
  echo "--- server log ---" >&2
  cat "$log" >&2
  echo "--- tool-call server log ---" >&2
  cat "$tools_log" >&2 2>/dev/null || true
fi
exit "$status"
