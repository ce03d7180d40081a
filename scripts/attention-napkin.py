#!/usr/bin/env python3
"""Napkin math of decode attention (cuda/kernels/attention_split.cuh) for the
shapes docs/cuda.md quotes: bytes, blocks, waves, the partials' extra bytes,
shared memory and an instruction estimate against the bytes' floor.

Estimates, not measurements: no GPU has run these kernels yet. The formulas
mirror split_len_of() (kernels.h), tile_shape() / attention_smem_bytes()
(attention_split.cuh) and the kernel's loops; the instruction counts per
tile are counted by hand from attend_tile() (see the comments below).

  scripts/attention-napkin.py            # Llama 3 8B bf16 on an H200
"""

import math

TILE, MIN_SPLIT, SPLITS_FLOOR, SPLIT_POSITIONS, SPLITS_PER_ROW, THREADS, WARPS = 32, 64, 16, 512, 32, 128, 4

# H200 SXM: 132 SMs, 4.8 TB/s HBM3e, 228 KiB shared memory an SM, 64 K registers,
# 4 warp schedulers an SM at up to 1.98 GHz (one warp instruction a clock each).
SMS, BANDWIDTH, SMEM_PER_SM, REGS_PER_SM, CLOCK = 132, 4.8e12, 228 * 1024, 65536, 1.98e9
REGISTERS = 141  # decode_attention bf16, sm_90 (bench/ptxas-report.sh)

# Llama 3 8B: 32 query heads, 8 KV heads of 128, bf16 cache.
N_HEADS, N_KV, HD, ELEM = 32, 8, 128, 2


def split_len_of(pos):
    splits = min(SPLITS_PER_ROW, max(SPLITS_FLOOR, (pos + 1) // SPLIT_POSITIONS))
    return max(MIN_SPLIT, TILE * math.ceil((pos + 1) / (TILE * splits)))


def smem_bytes(hd, elem):
    vec = 16 // elem
    padded = -(-hd // vec) * vec
    chunks = padded // vec
    lanes = 1
    while lanes < chunks and lanes < 32:
        lanes *= 2
    tile = 2 * TILE * padded * elem
    stages = 3 if 3 * tile <= 48 * 1024 else 2
    return stages * tile + WARPS * (TILE * (lanes + 1) + TILE) * 4, stages, lanes


def warp_instructions_per_tile(hd, elem, lanes):
    """One warp, one query, one tile of 32 positions (attend_tile), counted by hand."""
    vec = 16 // elem
    per_lane = max(1, (hd // vec) // lanes)
    elems = per_lane * vec
    scores = lanes * (per_lane + elems + elems + 1 + 2)  # LDS.128, bf16->f32, FFMA, STS, addressing
    reduce = 2 * lanes + 4                                  # lane j: LDS + FADD per share
    softmax = 10 + 10 + 2 * 8 + 8                           # 10 SHFL, max/add, two expf, l and m
    pv = lanes * (1 + per_lane + elems + elems + 2) + elems  # LDS p, LDS.128, convert, FFMA; acc *= alpha
    copy = 2 * (TILE * hd * elem // 16) // THREADS * 4 // WARPS * WARPS  # cp.async, shuffle, address, per warp
    return scores + reduce + softmax + pv + copy


def case(batch, context):
    pos = context - 1
    split = split_len_of(pos)
    splits = pos // split + 1
    kv = batch * context * N_KV * HD * ELEM * 2
    own = kv + batch * N_HEADS * HD * (4 + ELEM)  # K/V, q (float32) and the output (bf16)
    partials = 2 * batch * N_HEADS * splits * (HD + 1) * 4  # written by the splits, read by the merge
    blocks = batch * N_KV * splits
    smem, stages, lanes = smem_bytes(HD, ELEM)
    per_sm = min((SMEM_PER_SM) // (smem + 1024), REGS_PER_SM // (THREADS * (REGISTERS + 7) // 8 * 8))
    waves = blocks / (per_sm * SMS)
    tiles = batch * N_KV * splits * math.ceil(split / TILE)
    group = N_HEADS // N_KV
    instr = tiles * group * warp_instructions_per_tile(HD, ELEM, lanes)
    issue = SMS * 4 * CLOCK
    t_floor = own / BANDWIDTH
    print(f"batch {batch}, context {context}: split {split} positions x {splits} splits, {blocks} blocks "
          f"({per_sm} an SM: {waves:.2f} waves)")
    print(f"  own bytes {own / 2**20:.2f} MiB -> floor {t_floor * 1e6:.2f} us at {BANDWIDTH / 1e12:.1f} TB/s; "
          f"partials {partials / 2**20:.2f} MiB more ({100 * partials / own:.1f}%, L2-resident up to 50 MB)")
    resident = min(per_sm, math.ceil(blocks / SMS))
    print(f"  smem {smem} B a block ({stages} stages, {lanes} lanes a position); {resident} block(s) resident an SM, "
          f"{in_flight(stages, resident)} KiB of K/V in flight an SM")
    serial = math.ceil(split / TILE) * warp_instructions_per_tile(HD, ELEM, lanes)
    print(f"  a warp's own chain: {serial} instructions for its split "
          f"({serial / CLOCK * 1e6:.2f} us at one a clock, several times that at a lone warp's real rate)")
    print(f"  {warp_instructions_per_tile(HD, ELEM, lanes)} warp instructions a tile and query: "
          f"{instr / 1e6:.1f} M -> {instr / issue * 1e6:.2f} us at one a clock a scheduler "
          f"({100 * (instr / issue) / t_floor:.0f}% of the bytes' floor)")


def in_flight(stages, per_sm):
    return (stages - 1) * 2 * TILE * HD * ELEM * per_sm // 1024


if __name__ == "__main__":
    case(1, 1024)
    case(1, 131072)
    case(64, 2048)
