// Which part of a model one tensor-parallel rank holds, as Megatron-LM
// divides a Llama layer and vLLM, SGLang and TensorRT-LLM run it
// (docs/tensor-parallel.md):
//
//   column-parallel (a slice of the output rows): wq, wk, wv and their
//     biases, by whole heads; w_gate and w_up, by rows of the hidden layer;
//   row-parallel (a slice of the input columns): wo (the rank's query heads'
//     columns) and w_down (its hidden rows' columns), whose products are
//     partial sums that one all-reduce per product adds up;
//   replicated: the norms (Qwen 3's per-head q/k norms too), the token
//     embedding and the classifier (vocab-parallel would divide them).
//
// Mixture-of-Experts layers split every expert the way a dense SwiGLU is
// split: each rank holds a slice of every expert's hidden rows (its gate
// and up rows, its down columns) and of the shared expert's, and the router
// and the shared expert's gate whole. Every rank routes the same rows to the
// same experts (the same scores from the same replicated router), each adds
// its slices' partial outputs with the routing weights, and the layer's one
// all-reduce adds the ranks' sums, as for a dense layer (gpt-oss's expert
// biases: the gate and up biases sliced with their rows, the down bias on
// rank 0 only, zeros elsewhere, so the sum adds it once). The alternative,
// whole experts per rank (expert parallelism), needs no slicing but
// balances only when the router does, and moves each row to its experts'
// ranks and back (two all-to-alls a layer); slices keep every rank's work
// equal at any routing and reuse the dense layer's all-reduce.
//
// Rank r of W holds query heads [r H/W, (r+1) H/W) and hidden rows
// [r F/W, (r+1) F/W). KV heads: when W divides the KV heads, heads
// [r K/W, (r+1) K/W); when there are fewer KV heads than ranks (W a multiple
// of K), each rank holds the one KV head its query heads use, head r K / W,
// replicated on W/K ranks. A rank's part is a model of its own: the same
// dim, layers, vocabulary and head_dim, H/W query heads, its KV heads, F/W
// hidden rows (shard_config), so the single-device executor runs it
// unchanged but for the two all-reduces.
//
// Host code only: reads a ModelSource, knows nothing of devices.
#pragma once

#include "engine/model_files/model_source.h"
#include "reference/model_config.h"

namespace astrai {

struct TensorParallelRank {
  int rank = 0;
  int world = 1;
};

// What rank `r` holds of a model of `full`.
struct ShardRanges {
  int q_first = 0, q_heads = 0;    // query heads
  int kv_first = 0, kv_heads = 0;  // KV heads
  int hidden_first = 0, hidden_rows = 0;
  int expert_hidden_first = 0, expert_hidden_rows = 0;  // of every expert
  int shared_hidden_first = 0, shared_hidden_rows = 0;  // of the shared expert
};

// Throws std::invalid_argument, saying which count does not divide, unless
// world >= 1 divides the query heads and the hidden sizes (dense, expert,
// shared expert), and the KV heads divide by world or world by them; and
// for a rank outside [0, world).
void check_tensor_parallel(const ModelConfig& full, TensorParallelRank r);
ShardRanges shard_ranges(const ModelConfig& full, TensorParallelRank r);
// The rank's part as a model (see above); config.max_seq_len and the rest unchanged.
ModelConfig shard_config(const ModelConfig& full, TensorParallelRank r);

// The rank's part of `full` as a source of its own (config shard_config):
// each tensor its slice of the full one. Float values are read whole and
// sliced (one tensor at a time, as any reader); a quantized tensor's blocks
// are sliced too where the slice is whole blocks: a row slice is the file's
// bytes (no copy), a column slice is gathered row by row into a buffer the
// returned TensorBlocks owns; a column slice that splits blocks gives no
// blocks (the reader decodes its values). `full` must outlive the result.
ModelSource shard_model_source(const ModelSource& full, TensorParallelRank r);

}  // namespace astrai
