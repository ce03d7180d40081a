#!/usr/bin/env bash
# CPU seconds to compile the same files under CI's sanitizer flags with gcc
# (the release build's compiler) and with clang 14 (what build-asan/ uses):
# the figure behind that choice in scripts/build-and-test.sh and docs/testing.md.
#
#   bash bench/sanitizer-compilers.sh [FILES] [SEED]     default 12 files, seed 1
#
# Draws FILES source files from build/compile_commands.json (configure build/
# first), drops their optimization, debug and sanitizer flags, and compiles
# each with `-O0 -g1 -fsanitize=address,undefined -fno-sanitize-recover=all`
# under both compilers, one after the other, without ccache. It counts CPU
# time (user + system of the compiler), not wall time, so a busy machine
# slows both alike. Prints the running totals and the ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build/compile_commands.json ] || { echo "sanitizer-compilers.sh: configure build/ first (meson setup build)" >&2; exit 2; }
python3 - "${1:-12}" "${2:-1}" <<'PY'
import json, os, random, shlex, subprocess, sys, tempfile
count, seed = int(sys.argv[1]), int(sys.argv[2])
entries = [e for e in json.load(open("build/compile_commands.json")) if e["file"].endswith(".cpp")]
random.seed(seed)
picked = random.sample(entries, min(count, len(entries)))
flags = ["-O0", "-g1", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
out = os.path.join(tempfile.mkdtemp(), "x.o")
totals = {"g++": 0.0, "clang++-14": 0.0}
for e in picked:
    args = shlex.split(e["command"])
    if args[0] == "ccache":
        args = args[1:]
    kept = [a for i, a in enumerate(args[1:], 1)
            if not (a.startswith(("-O", "-g", "-fsanitize", "-MD", "-MQ", "-MF", "-o", "-fdiagnostics-color"))
                    or args[i - 1] in ("-MQ", "-MF", "-o"))]
    for compiler in totals:
        before = os.times()
        r = subprocess.run([compiler] + kept + flags + ["-o", out], cwd=e["directory"], capture_output=True)
        after = os.times()
        if r.returncode:
            sys.exit(f"{compiler} failed on {e['file']}:\n{r.stderr.decode()[:2000]}")
        totals[compiler] += after.children_user + after.children_system - before.children_user - before.children_system
    print(f"{os.path.basename(e['file']):40s} gcc {totals['g++']:7.1f} s   clang {totals['clang++-14']:7.1f} s", flush=True)
print(f"{len(picked)} files: clang / gcc CPU time = {totals['clang++-14'] / totals['g++']:.2f}")
PY
