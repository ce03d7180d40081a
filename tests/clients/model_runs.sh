# shellcheck shell=bash
# Sourced by run_moe_models.sh and run_window_models.sh: what both do around
# the models they make.
#   skip_if_missing NAME PATH...  each PATH a file or folder an npm folder
#                                 provides; the first missing one is named and
#                                 the script exits 0 (1 when
#                                 ASTRAI_REQUIRE_TEST_DATA=1: CI)
#   serve_each ASTRAI WORK MODEL...  run.sh's SDK tests against each model,
#                                 with the plain chat template (run.sh counts
#                                 the prompt's tokens for it) and without the
#                                 tool-call suite, which does not depend on
#                                 the model (run.sh says why)

skip_if_missing() {
  local name=$1 path
  shift
  for path in "$@"; do
    [ -e "$path" ] && continue
    echo "$name: SKIPPED: $path is missing (npm ci in the tests/ folder that holds it)"
    [ "${ASTRAI_REQUIRE_TEST_DATA:-}" = 1 ] && exit 1
    exit 0
  done
}

serve_each() {
  local astrai=$1 work=$2 model npm_done=""
  shift 2
  for model in "$@"; do
    echo "== the SDK clients against $(basename "$model") (astrai serve --model ${model#"$work"/})"
    ASTRAI_CLIENTS_NO_TOOL_CALLS=1 ASTRAI_CLIENTS_NPM_DONE="$npm_done" \
      bash "$(dirname "${BASH_SOURCE[0]}")/run.sh" "$astrai" -- --model "$model" --chat-template plain
    npm_done=1  # run.sh's npm ci installed the SDKs once
  done
}
