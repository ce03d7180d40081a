#!/usr/bin/env bash
# How long one source file takes to compile under the flag sets CI's builds
# could use (the figures in docs/testing.md "CI stages" and docs/reliability.md):
#
#   bash bench/compile-flags.sh [FILE] [ROUNDS]
#        default FILE tests/reference/test_forward.cpp, ROUNDS 3
#
# Takes FILE's compile command from build/compile_commands.json (configure
# build/ first), drops its optimization, debug and sanitizer flags, and times
# the compile (no ccache) with each set below, interleaved round by round so a
# busy machine slows every set alike. Prints the median seconds per set.
set -euo pipefail
cd "$(dirname "$0")/.."
file=${1:-tests/reference/test_forward.cpp}
rounds=${2:-3}
[ -f build/compile_commands.json ] || { echo "compile-flags.sh: configure build/ first (meson setup build)" >&2; exit 2; }
base=$(python3 - "$file" <<'PY'
import json, shlex, sys
want = sys.argv[1]
for entry in json.load(open("build/compile_commands.json")):
    if entry["file"].endswith(want):
        args = shlex.split(entry["command"])
        if args[0] == "ccache":
            args = args[1:]
        out = [a for i, a in enumerate(args) if not (a.startswith(("-O", "-g", "-fsanitize", "-MD", "-MQ", "-MF", "-o"))
               or (i > 0 and args[i - 1] in ("-MQ", "-MF", "-o")))]
        print(shlex.join(out))
        break
else:
    sys.exit(f"compile-flags.sh: {want} is not in build/compile_commands.json")
PY
)
sets=(
  "-O3"
  "-O1"
  "-O0 -g -fsanitize=address,undefined -fno-sanitize-recover=all"
  "-O0 -g1 -fsanitize=address,undefined -fno-sanitize-recover=all"
  "-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all"
)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ((r = 1; r <= rounds; r++)); do
  for i in "${!sets[@]}"; do
    start=$(date +%s.%N)
    (cd build && eval "$base ${sets[$i]} -o $out/x.o")
    echo "$(echo "$(date +%s.%N) - $start" | bc)" >>"$out/set$i"
  done
done
echo "compile seconds of $file, median of $rounds (uptime: $(uptime | sed 's/.*load/load/'))"
for i in "${!sets[@]}"; do
  printf '%8.2f  %s\n' "$(sort -n "$out/set$i" | sed -n "$(( (rounds + 1) / 2 ))p")" "${sets[$i]}"
done
