#!/usr/bin/env python3
"""Quantizes a GGUF with llama.cpp's own quantizer (llama_model_quantize in
the libllama that node-llama-cpp ships), as `llama-quantize IN OUT PRESET` does.

    python3 quantize.py IN.gguf OUT.gguf Q4_K_M

Exit status 0 and OUT written on success; 1 with a message otherwise (2 when
the library is absent: the caller skips).
"""
import ctypes
import pathlib
import sys

# llama.h's enum llama_ftype: the presets llama-quantize offers.
FTYPES = {
    "Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "Q5_0": 8, "Q5_1": 9, "Q2_K": 10,
    "Q3_K_S": 11, "Q3_K_M": 12, "Q3_K_L": 13, "Q4_K_S": 14, "Q4_K_M": 15,
    "Q5_K_S": 16, "Q5_K_M": 17, "Q6_K": 18, "Q2_K_S": 21,
}

LIB_DIR = pathlib.Path(__file__).resolve().parent / "node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"


class QuantizeParams(ctypes.Structure):
    # llama_model_quantize_params begins with int32 nthread and int32 ftype
    # (enum llama_ftype); its later fields are left as
    # llama_model_quantize_default_params() sets them. The padding is larger
    # than the struct, which is returned through a hidden pointer whatever
    # its size, so fields added in later versions are kept too.
    _fields_ = [("nthread", ctypes.c_int32), ("ftype", ctypes.c_int32), ("rest", ctypes.c_uint8 * 248)]


def main():
    if len(sys.argv) != 4 or sys.argv[3] not in FTYPES:
        sys.exit("usage: quantize.py IN.gguf OUT.gguf " + "|".join(FTYPES))
    libs = sorted(LIB_DIR.glob("libllama.*so")) + sorted(LIB_DIR.glob("libllama.so*"))
    if not libs:
        print(f"libllama not found in {LIB_DIR} (run npm ci there)", file=sys.stderr)
        sys.exit(2)
    llama = ctypes.CDLL(str(libs[0]))
    llama.llama_backend_init.restype = None
    llama.llama_model_quantize_default_params.restype = QuantizeParams
    llama.llama_model_quantize.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(QuantizeParams)]
    llama.llama_model_quantize.restype = ctypes.c_uint32
    llama.llama_backend_init()
    params = llama.llama_model_quantize_default_params()
    params.nthread = 1
    params.ftype = FTYPES[sys.argv[3]]
    rc = llama.llama_model_quantize(sys.argv[1].encode(), sys.argv[2].encode(), ctypes.byref(params))
    if rc != 0:
        sys.exit(f"llama_model_quantize failed ({rc})")


if __name__ == "__main__":
    main()
