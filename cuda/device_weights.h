// A model's weights on the GPU, uploaded tensor by tensor from a
// ModelSource (engine/model_files/model_source.h): no float32 copy of the
// model is ever whole in host memory. The linear layers' matrices, the
// classifier and the token embedding keep the quantized format of their GGUF
// file when the device has kernels for it (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K:
// cuda/quant_format.h, issue 29): their blocks go from the file mapping to
// the device as they are. Every other weight is in the storage type: bf16 by
// default, float32 for exact comparisons with the CPU reference (quantized
// types the device does not keep are decoded at load, one tensor at a time).
// Matrices keep the reference's [out, in] row-major layout; the q/k/v
// projections are one matrix of three parts [q_dim + 2 kv_dim, dim] and
// gate/up one of two [2 hidden, dim] (cuda/device_matrix.h), one part when
// all are in the storage type, so each needs one GEMM (row o of the stack is
// row o of its part: the results are those of the separate products). The
// options' vectors (Qwen 2's biases, Qwen 3's q/k norms, Gemma 3's post norms, gpt-oss's output bias and sinks) are in the storage
// type too, and empty (null) when the model has none. A tied classifier is
// the embedding's matrix, on the device once. A sparse layer's experts are
// stacks in the storage type (DeviceExperts; a quantized file's experts are
// decoded at load), its router and shared expert matrices as any other.
#pragma once

#include <string>
#include <vector>

#include "cuda/device_buffer.h"
#include "cuda/device_matrix.h"
#include "cuda/dtype.h"
#include "engine/model_files/model_source.h"
#include "engine/model_files/weight_table.h"

namespace astrai::cuda {

struct DeviceLayerWeights {
  DeviceBuffer attn_norm;  // [dim]
  DeviceMatrix wqkv;       // [q_dim + 2 kv_dim, dim]: wq, then wk, then wv
  DeviceMatrix wo;         // [dim, q_dim]
  DeviceBuffer ffn_norm;   // [dim]
  DeviceMatrix w_gate_up;  // [2 hidden, dim]: w_gate, then w_up
  DeviceMatrix w_down;     // [dim, hidden]
  DeviceBuffer bqkv;       // [q_dim + 2 kv_dim]: bq, then bk, then bv (qkv_bias only)
  DeviceBuffer q_norm;     // [head_dim] (qk_norm only)
  DeviceBuffer k_norm;     // [head_dim] (qk_norm only)
  DeviceBuffer post_attn_norm;  // [dim] (sandwich_norms only: Gemma 3)
  DeviceBuffer post_ffn_norm;   // [dim] (sandwich_norms only)
  DeviceBuffer bo;              // [dim] (out_bias only: gpt-oss)
  DeviceBuffer sinks;           // [n_heads] (attention_sinks only: gpt-oss)
  // A sparse layer (config.moe.sparse(l)) has these instead of w_gate_up and w_down:
  DeviceMatrix router;          // [experts, dim]
  DeviceExperts exp_gate_up;    // per expert [2 expert_hidden, dim]: its gate, then its up
  DeviceExperts exp_down;       // per expert [dim, expert_hidden]
  DeviceMatrix shexp_gate_inp;  // [1, dim] (shared_expert only)
  DeviceMatrix shexp_gate_up;   // [2 shared_hidden, dim] (shared_expert only)
  DeviceMatrix shexp_down;      // [dim, shared_hidden] (shared_expert only)
  // gpt-oss (router_bias, expert_biases), in the storage type:
  DeviceBuffer router_bias;     // [experts]
  DeviceBuffer exp_gate_bias;   // [experts, expert_hidden]
  DeviceBuffer exp_up_bias;     // [experts, expert_hidden]
  DeviceBuffer exp_down_bias;   // [experts, dim]
};

class DeviceWeights {
 public:
  // Reads every tensor of `source` once (quantized ones the device keeps:
  // their blocks only). Throws std::runtime_error saying how many bytes the
  // weights need and how many are free when they do not fit in device memory
  // (before anything is uploaded), and the source's errors.
  DeviceWeights(const ModelSource& source, DType dtype);

  // Bytes the weights of `source` take on the device in `dtype`, the kept
  // quantized matrices at their blocks' size (nothing is read).
  static size_t bytes_needed(const ModelSource& source, DType dtype);
  // The same for a model of `config` with every weight in `dtype` (nothing
  // quantized, the classifier apart from the embedding).
  static size_t bytes_needed(const ModelConfig& config, DType dtype);
  // Why the weights do not fit in `free_bytes` of `total_bytes`: what they
  // need, and for a quantized file (source.stored) its types and size and
  // which of them are decoded to `dtype` at load (docs/model-files.md).
  static std::string out_of_memory_message(const ModelSource& source, DType dtype, size_t free_bytes,
                                           size_t total_bytes);
  // "4211.0 MiB: 226 matrices quantized (Q4_K 194, Q6_K 32), the rest bf16"
  // (or "16.0 MiB in bf16"), the embedding counted as a matrix, for the startup line.
  std::string describe() const;
  size_t bytes() const;             // on the device, all weights
  int widest_quantized_cols() const;  // the largest `cols` of a quantized matrix (0: none)

  DType dtype() const { return dtype_; }
  // [vocab, dim], one part: in the storage type, or kept quantized
  // (launch_embedding_gather_quant decodes its rows).
  const DeviceMatrix& token_embedding() const { return embedding_; }
  const DeviceLayerWeights& layer(int l) const { return layers_[size_t(l)]; }
  const DeviceBuffer& final_norm() const { return final_norm_; }
  // [vocab, dim]: the embedding's matrix when the model ties them.
  const DeviceMatrix& classifier() const { return tied_ ? embedding_ : classifier_; }
  bool tied() const { return tied_; }

 private:
  void upload(const ModelSource& source, const WeightGroup& group);
  // f(matrix) for every linear layer's matrix, the embedding and (untied) the classifier.
  template <typename F>
  void for_each_matrix(F&& f) const;

  DType dtype_;
  bool tied_ = false;
  DeviceMatrix embedding_;
  std::vector<DeviceLayerWeights> layers_;
  DeviceBuffer final_norm_;
  DeviceMatrix classifier_;
};

}  // namespace astrai::cuda
