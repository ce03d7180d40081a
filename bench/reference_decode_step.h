// The decode step at the reference shapes of issues 25 and 29, a part of
// bench_cuda: Llama-3-8B on one GPU with synthetic random weights of the real
// shape (32 layers, dim 4096, ffn 14336, 32 query / 8 KV heads of 128,
// vocabulary 128,256), in bf16 (16.1 GB on the device) at batch 1 with
// context 1,024 and batch 64 with context 2,048, and with random blocks in
// the formats of llama.cpp's Q4_K_M and Q8_0 files (4.9 and 8.5 GB:
// quantized_model.h) at batch 1 with context 1,024, as the engine runs it:
// forward_and_sample() replaying the step's CUDA graph (metadata upload,
// forward pass, sampling, tokens back), host work included, wall time of
// the synchronous call. docs/cuda.md, "The decode step at the reference
// shapes"; docs/cuda-performance.md, "Quantized decode steps".
//
// Stable interface (the performance report adds a predicted time per name):
//   name      decode_step/llama3_8b_W/batch:B/context:C, W one of bf16,
//             q4_k_m, q8_0 (Google Benchmark appends
//             /iterations:20/manual_time)
//   counters  ms          mean wall time of one step
//             GB          bytes the step must move: every weight it reads
//                         once (all but the embedding table, of which it
//                         reads B rows; quantized matrices at their blocks'
//                         size) plus the K/V of B sequences at context C
//                         (2 x n_layers x C x kv_dim x 2 B each)
//             GB/s        GB / ms
//             peak_GB/s   the device's memory bandwidth: 2 x memory clock x
//                         bus width / 8 from the device attributes, else
//                         4,800 (H200)
//             floor_ms    GB / peak_GB/s: the time no kernel can beat
//             floor_frac  floor_ms / ms (1.0 = at the memory limit)
//             tokens/s    B / ms
//   table     one line per step starting "decode_step W" (gpu-check.sh's table)
// On the emulated device: a small model of the same proportions at small
// shapes (decode_step/emulated_small_W/...), which checks this code's
// path, not any speed.
#pragma once

namespace astrai::bench {

// Registers the four steps with Google Benchmark.
void register_reference_decode_steps();
// After the run: releases the model (before the CUDA runtime shuts down),
// prints the "decode_step " lines, and returns how many shapes failed (a
// benchmark's SkipWithError does not change the program's exit status).
int finish_reference_decode_steps();

}  // namespace astrai::bench
