#!/usr/bin/env python3
"""Writes a Llama 3 8B-shaped Hugging Face folder of random bf16 weights,
tensor by tensor, for scripts/check-large-conversion.sh.

Usage: large_hf_folder.py TEMPLATE_DIR OUT_DIR LAYERS

TEMPLATE_DIR is a small folder `astrai make-model --format hf` wrote with the
Llama 3 tokenizer: its tokenizer files and config.json (fields as AstrAI
writes them) are reused, the shape fields set to Llama 3 8B's (hidden 4096,
ffn 14336, 32/8 heads, vocab 128256) with LAYERS layers. One safetensors
shard per layer plus one for the embedding, final norm and head, listed in
model.safetensors.index.json. Written in 64 MiB pieces, so that this script
holds one piece in memory, never a tensor: a 16 GB folder needs a few
hundred MB.

Values: random bf16 with the exponent pinned to 2^-7 or 2^-6 (magnitudes
0.0078 to 0.031, either sign): finite, so the conversion does the work of a
real model; what they compute is not the point.
"""
import json
import os
import random
import shutil
import struct
import sys

HIDDEN, FFN, HEADS, KV_HEADS, VOCAB = 4096, 14336, 32, 8, 128256
HEAD_DIM = HIDDEN // HEADS
PIECE = 64 << 20  # bytes generated at a time

# bf16 is little-endian: the odd byte holds the sign and 7 exponent bits.
HIGH_BYTE = bytes((b & 0x80) | 0x3C for b in range(256))


def layer_tensors(i):
    p = f"model.layers.{i}."
    return [
        (p + "input_layernorm.weight", [HIDDEN]),
        (p + "self_attn.q_proj.weight", [HEADS * HEAD_DIM, HIDDEN]),
        (p + "self_attn.k_proj.weight", [KV_HEADS * HEAD_DIM, HIDDEN]),
        (p + "self_attn.v_proj.weight", [KV_HEADS * HEAD_DIM, HIDDEN]),
        (p + "self_attn.o_proj.weight", [HIDDEN, HEADS * HEAD_DIM]),
        (p + "post_attention_layernorm.weight", [HIDDEN]),
        (p + "mlp.gate_proj.weight", [FFN, HIDDEN]),
        (p + "mlp.up_proj.weight", [FFN, HIDDEN]),
        (p + "mlp.down_proj.weight", [HIDDEN, FFN]),
    ]


def elements(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def write_shard(path, tensors, rng):
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in tensors:
        size = 2 * elements(shape)
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # as the safetensors library pads it
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(text)))
        out.write(text)
        left = offset
        while left > 0:
            piece = bytearray(rng.randbytes(min(PIECE, left)))
            piece[1::2] = piece[1::2].translate(HIGH_BYTE)
            out.write(piece)
            left -= len(piece)
    return offset


def main():
    template, out_dir, layers = sys.argv[1], sys.argv[2], int(sys.argv[3])
    os.makedirs(out_dir, exist_ok=True)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(template, f), os.path.join(out_dir, f))
    config = json.load(open(os.path.join(template, "config.json")))
    config.update(hidden_size=HIDDEN, intermediate_size=FFN, num_hidden_layers=layers, num_attention_heads=HEADS,
                  num_key_value_heads=KV_HEADS, vocab_size=VOCAB, max_position_embeddings=8192, rope_theta=500000.0,
                  rms_norm_eps=1e-5, tie_word_embeddings=False, torch_dtype="bfloat16")
    json.dump(config, open(os.path.join(out_dir, "config.json"), "w"), indent=2)

    rng = random.Random(1)
    shards = [[("model.embed_tokens.weight", [VOCAB, HIDDEN]), ("model.norm.weight", [HIDDEN]),
               ("lm_head.weight", [VOCAB, HIDDEN])]] + [layer_tensors(i) for i in range(layers)]
    weight_map, total = {}, 0
    for i, tensors in enumerate(shards):
        name = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        total += write_shard(os.path.join(out_dir, name), tensors, rng)
        weight_map.update({t: name for t, _ in tensors})
        print(f"wrote {name}", flush=True)
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    json.dump(index, open(os.path.join(out_dir, "model.safetensors.index.json"), "w"), indent=2)
    print(f"{total} bytes of weights in {len(shards)} shards")


if __name__ == "__main__":
    main()
