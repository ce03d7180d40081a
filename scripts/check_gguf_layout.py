#!/usr/bin/env python3
"""Checks a GGUF file's layout without loading its weights, for
scripts/check-large-conversion.sh: the header parses, the tensor count is
EXPECTED_TENSORS, every tensor's data (its size from its dimensions and
type) lies inside the file at an aligned offset, no two overlap, and the
last one ends where the file does (up to the alignment padding).

Usage: check_gguf_layout.py FILE.gguf EXPECTED_TENSORS
Prints one line (tensors, types, bytes) and exits 0, or names the problem and exits 1.
"""
import os
import struct
import sys

# ggml types AstrAI writes: (elements per block, bytes per block)
TYPES = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 30: ("BF16", 1, 2), 8: ("Q8_0", 32, 34), 2: ("Q4_0", 32, 18),
         12: ("Q4_K", 256, 144), 14: ("Q6_K", 256, 210)}
SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<B", 10: "<Q", 11: "<q", 12: "<d"}


class Reader:
    def __init__(self, f):
        self.f = f

    def unpack(self, fmt):
        size = struct.calcsize(fmt)
        data = self.f.read(size)
        if len(data) != size:
            sys.exit("truncated header")
        return struct.unpack(fmt, data)[0]

    def string(self):
        return self.f.read(self.unpack("<Q")).decode()

    def value(self, kind):
        if kind in SCALARS:
            return self.unpack(SCALARS[kind])
        if kind == 8:
            return self.string()
        if kind == 9:
            element, n = self.unpack("<I"), self.unpack("<Q")
            return [self.value(element) for _ in range(n)]
        sys.exit(f"unknown metadata type {kind}")


def main():
    path, expected = sys.argv[1], int(sys.argv[2])
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        r = Reader(f)
        if f.read(4) != b"GGUF" or r.unpack("<I") != 3:
            sys.exit(f"{path}: not a GGUF v3 file")
        n_tensors, n_kv = r.unpack("<Q"), r.unpack("<Q")
        metadata = {}
        for _ in range(n_kv):
            key = r.string()
            metadata[key] = r.value(r.unpack("<I"))
        alignment = metadata.get("general.alignment", 32)
        tensors = []
        for _ in range(n_tensors):
            name = r.string()
            dims = [r.unpack("<Q") for _ in range(r.unpack("<I"))]
            kind, offset = r.unpack("<I"), r.unpack("<Q")
            if kind not in TYPES:
                sys.exit(f"{name}: type {kind} is not one AstrAI writes")
            _, block, block_bytes = TYPES[kind]
            n = 1
            for d in dims:
                n *= d
            tensors.append((offset, n // block * block_bytes, name, TYPES[kind][0]))
        data_start = -(-f.tell() // alignment) * alignment
    if n_tensors != expected:
        sys.exit(f"{path}: {n_tensors} tensors, expected {expected}")
    end = 0
    for offset, n_bytes, name, _ in sorted(tensors):
        if offset % alignment or offset < end:
            sys.exit(f"{name}: offset {offset} unaligned or overlapping the tensor before")
        end = offset + n_bytes
    if data_start + end > size or size - (data_start + end) >= alignment:
        sys.exit(f"{path}: the data ends at {data_start + end}, the file at {size}")
    types = sorted({t for *_, t in tensors})
    print(f"{path}: {n_tensors} tensors ({', '.join(types)}), {metadata['general.architecture']}, "
          f"{metadata['llama.block_count']} layers, {size} bytes: layout consistent")


if __name__ == "__main__":
    main()
