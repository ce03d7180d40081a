// A model's weights on the GPU in the storage type: bf16 by default, float32
// for exact comparisons with the CPU reference. Matrices keep the reference's
// [out, in] row-major layout; the q/k/v projections are stacked into one
// [q_dim + 2 kv_dim, dim] matrix and gate/up into one [2 hidden, dim] matrix,
// so each needs one GEMM (row o of the stack is row o of its part: the
// results are those of the separate products). The options' vectors (Qwen 2's
// biases, Qwen 3's q/k norms) are in the storage type too, and empty
// (null) when the model has none.
#pragma once

#include <string>
#include <vector>

#include "cuda/device_buffer.h"
#include "cuda/dtype.h"
#include "reference/model_weights.h"

namespace astrai::cuda {

struct DeviceLayerWeights {
  DeviceBuffer attn_norm;  // [dim]
  DeviceBuffer wqkv;       // [q_dim + 2 kv_dim, dim]: wq, then wk, then wv
  DeviceBuffer wo;         // [dim, q_dim]
  DeviceBuffer ffn_norm;   // [dim]
  DeviceBuffer w_gate_up;  // [2 hidden, dim]: w_gate, then w_up
  DeviceBuffer w_down;     // [dim, hidden]
  DeviceBuffer bqkv;       // [q_dim + 2 kv_dim]: bq, then bk, then bv (qkv_bias only)
  DeviceBuffer q_norm;     // [head_dim] (qk_norm only)
  DeviceBuffer k_norm;     // [head_dim] (qk_norm only)
};

class DeviceWeights {
 public:
  // Throws std::runtime_error saying how many bytes the weights need and how
  // many are free when they do not fit in device memory.
  DeviceWeights(const ModelWeights& weights, DType dtype);

  // Bytes the weights of `config` take on the device in `dtype`.
  static size_t bytes_needed(const ModelConfig& config, DType dtype);
  // Why the weights do not fit in `free_bytes` of `total_bytes`: what they
  // need in `dtype`, and for a quantized file (weights.stored), its types and
  // size, since they are dequantized at load (docs/model-files.md).
  static std::string out_of_memory_message(const ModelWeights& weights, DType dtype, size_t free_bytes,
                                           size_t total_bytes);

  DType dtype() const { return dtype_; }
  const DeviceBuffer& token_embedding() const { return embedding_; }  // [vocab, dim]
  const DeviceLayerWeights& layer(int l) const { return layers_[size_t(l)]; }
  const DeviceBuffer& final_norm() const { return final_norm_; }
  const DeviceBuffer& classifier() const { return classifier_; }  // [vocab, dim]

 private:
  DType dtype_;
  DeviceBuffer embedding_;
  std::vector<DeviceLayerWeights> layers_;
  DeviceBuffer final_norm_;
  DeviceBuffer classifier_;
};

}  // namespace astrai::cuda
