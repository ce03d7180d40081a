#!/usr/bin/env python3
"""ggml's own row conversions (libggml-base from node-llama-cpp), on files of
raw bytes, for bit-for-bit comparisons with AstrAI's.

    python3 ggml_rows.py dequantize TYPE IN OUT     # IN: whole blocks of TYPE; OUT: float32
    python3 ggml_rows.py quantize TYPE IN OUT N     # IN: float32 rows of N; OUT: blocks of TYPE

TYPE is a ggml type name in lower case as ggml spells its functions (q4_0,
q4_K, iq4_nl...). Exit status 2 when the library is absent.
"""
import ctypes
import pathlib
import sys

LIB_DIR = pathlib.Path(__file__).resolve().parent / "node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"
# (ggml type id, elements per block, bytes per block), from ggml.h / ggml-common.h.
TYPES = {
    "q4_0": (2, 32, 18), "q4_1": (3, 32, 20), "q5_0": (6, 32, 22), "q5_1": (7, 32, 24), "q8_0": (8, 32, 34),
    "q2_K": (10, 256, 84), "q3_K": (11, 256, 110), "q4_K": (12, 256, 144), "q5_K": (13, 256, 176),
    "q6_K": (14, 256, 210), "iq4_nl": (20, 32, 18), "mxfp4": (39, 32, 17),
}


def main():
    if len(sys.argv) < 5 or sys.argv[2] not in TYPES:
        sys.exit(__doc__)
    lib = LIB_DIR / "libggml-base.so"
    if not lib.exists():
        print(f"{lib} not found (run npm ci there)", file=sys.stderr)
        sys.exit(2)
    ggml = ctypes.CDLL(str(lib))
    type_id, block_size, block_bytes = TYPES[sys.argv[2]]
    data = pathlib.Path(sys.argv[3]).read_bytes()
    if sys.argv[1] == "dequantize":
        n = len(data) // block_bytes * block_size
        out = (ctypes.c_float * n)()
        f = getattr(ggml, "dequantize_row_" + sys.argv[2])
        f.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_float), ctypes.c_int64]
        f(data, out, n)
        pathlib.Path(sys.argv[4]).write_bytes(bytes(out))
    elif sys.argv[1] == "quantize":
        n_per_row = int(sys.argv[5])
        n = len(data) // 4
        rows = n // n_per_row
        out = ctypes.create_string_buffer(n // block_size * block_bytes)
        ggml.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int64,
                                             ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
        ggml.ggml_quantize_chunk.restype = ctypes.c_size_t
        size = ggml.ggml_quantize_chunk(type_id, data, out, 0, rows, n_per_row, None)
        pathlib.Path(sys.argv[4]).write_bytes(out.raw[:size])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
