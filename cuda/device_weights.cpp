// DeviceWeights: upload in float32, round to the storage type on the device.
#include "cuda/device_weights.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <utility>
#include <string>

#include "cuda/cuda_check.h"
#include "cuda/kernels/kernels.h"

namespace astrai::cuda {
namespace {

// Element counts of the tensors one layer holds.
size_t layer_elements(const ModelConfig& c) {
  const size_t dim = size_t(c.dim), hidden = size_t(c.hidden_dim), qkv = size_t(c.q_dim() + 2 * c.kv_dim());
  return 2 * dim + qkv * dim + dim * size_t(c.q_dim()) + 3 * hidden * dim + (c.qkv_bias ? qkv : 0) +
         (c.qk_norm ? 2 * size_t(c.head_dim()) : 0);
}

// Uploads the float32 parts one after another into one buffer of `dtype`,
// through a float32 staging buffer as large as the largest part.
template <typename... Tensors>
DeviceBuffer upload(DType dtype, const std::string& what, const Tensors&... parts) {
  const std::pair<const float*, size_t> spans[] = {{parts.data(), parts.size()}...};
  size_t total = 0, largest = 0;
  for (const auto& span : spans) {
    total += span.second;
    largest = std::max(largest, span.second);
  }
  DeviceBuffer out(total * dtype_size(dtype), what);
  DeviceBuffer staging(largest * sizeof(float), "staging for " + what);
  size_t offset = 0;
  for (const auto& [data, n] : spans) {
    ASTRAI_CUDA_CHECK(cudaMemcpy(staging.get(), data, n * sizeof(float), cudaMemcpyHostToDevice));
    launch_convert_from_float(staging.as<float>(), n, static_cast<char*>(out.get()) + offset * dtype_size(dtype),
                              dtype, nullptr);
    offset += n;
  }
  ASTRAI_CUDA_CHECK(cudaDeviceSynchronize());  // staging is freed on return
  return out;
}

}  // namespace

size_t DeviceWeights::bytes_needed(const ModelConfig& c, DType dtype) {
  const size_t elements = 2 * size_t(c.vocab_size) * size_t(c.dim) + size_t(c.dim) +
                          size_t(c.n_layers) * layer_elements(c);
  return elements * dtype_size(dtype);
}

std::string DeviceWeights::out_of_memory_message(const ModelWeights& w, DType dtype, size_t free_bytes,
                                                 size_t total_bytes) {
  std::string message = "out of GPU memory: the weights of the model (" + w.config.describe() + ") need " +
                        format_mib(bytes_needed(w.config, dtype)) + " in " + dtype_name(dtype) + " but only " +
                        format_mib(free_bytes) + " of " + format_mib(total_bytes) + " are free";
  std::set<std::string> quantized;
  uint64_t file_bytes = 0;
  for (const auto& [name, t] : w.stored) {
    file_bytes += t.file_bytes;
    if (t.type != "F32" && t.type != "F16" && t.type != "BF16") quantized.insert(t.type);
  }
  if (quantized.empty()) return message;
  std::string types;
  for (const auto& t : quantized) types += (types.empty() ? "" : ", ") + t;
  return message + " (the file stores them quantized, " + types + ", in " + format_mib(file_bytes) +
         "; AstrAI dequantizes quantized weights when it loads them)";
}

DeviceWeights::DeviceWeights(const ModelWeights& w, DType dtype) : dtype_(dtype) {
  w.validate_shapes();
  const ModelConfig& c = w.config;
  size_t free_bytes = 0, total_bytes = 0;
  ASTRAI_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (bytes_needed(c, dtype) > free_bytes)
    throw std::runtime_error(out_of_memory_message(w, dtype, free_bytes, total_bytes));
  embedding_ = upload(dtype, "the token embedding", w.token_embedding);
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& L = w.layers[size_t(l)];
    const std::string name = "layer " + std::to_string(l);
    DeviceLayerWeights d;
    d.attn_norm = upload(dtype, name + " attention norm", L.attn_norm);
    d.wqkv = upload(dtype, name + " wq/wk/wv", L.wq, L.wk, L.wv);
    d.wo = upload(dtype, name + " wo", L.wo);
    d.ffn_norm = upload(dtype, name + " ffn norm", L.ffn_norm);
    d.w_gate_up = upload(dtype, name + " w_gate/w_up", L.w_gate, L.w_up);
    d.w_down = upload(dtype, name + " w_down", L.w_down);
    if (c.qkv_bias) d.bqkv = upload(dtype, name + " bq/bk/bv", L.bq, L.bk, L.bv);
    if (c.qk_norm) {
      d.q_norm = upload(dtype, name + " q norm", L.q_norm);
      d.k_norm = upload(dtype, name + " k norm", L.k_norm);
    }
    layers_.push_back(std::move(d));
  }
  final_norm_ = upload(dtype, "the final norm", w.final_norm);
  classifier_ = upload(dtype, "the classifier", w.classifier);
}

}  // namespace astrai::cuda
