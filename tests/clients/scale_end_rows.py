#!/usr/bin/env python3
"""Scales rows of a bf16 classifier (lm_head.weight) in a safetensors file by
2**k, in place: a random model whose end-of-turn rows are scaled so ends its
answers within a few tokens, as a trained model does (run_codex.sh: the Codex
CLI fails a turn whose response is cut by max_output_tokens, and a random
model of a 151k vocabulary would otherwise never draw <|im_end|>).

  scale_end_rows.py MODEL.safetensors LOG2_SCALE TOKEN_ID...

A bf16 value times 2**k is the same bits with k added to the 8-bit exponent
(zeros and subnormals, whose exponent field is 0, stay as they are; an
exponent that would reach 255, inf/NaN, is refused). Standard library only.
"""
import json
import struct
import sys


def main() -> None:
    path, log2_scale, ids = sys.argv[1], int(sys.argv[2]), [int(a) for a in sys.argv[3:]]
    with open(path, "r+b") as f:
        header_size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(header_size))
        tensor = header.get("lm_head.weight")
        if tensor is None or tensor["dtype"] != "BF16" or len(tensor["shape"]) != 2:
            sys.exit(f"{path}: no bf16 lm_head.weight of two dimensions (untied, --dtype bf16)")
        rows, width = tensor["shape"]
        begin = 8 + header_size + tensor["data_offsets"][0]
        for token in ids:
            if not 0 <= token < rows:
                sys.exit(f"{path}: token {token} outside the classifier's {rows} rows")
            f.seek(begin + token * width * 2)
            values = list(struct.unpack(f"<{width}H", f.read(width * 2)))
            for i, v in enumerate(values):
                exponent = (v >> 7) & 0xFF
                if exponent == 0:
                    continue
                if exponent + log2_scale >= 255:
                    sys.exit(f"{path}: row {token} would overflow bf16 scaled by 2**{log2_scale}")
                values[i] = (v & 0x807F) | ((exponent + log2_scale) << 7)
            f.seek(begin + token * width * 2)
            f.write(struct.pack(f"<{width}H", *values))


if __name__ == "__main__":
    main()
