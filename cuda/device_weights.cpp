// DeviceWeights: quantized matrices uploaded as their file's blocks; every
// other weight uploaded in float32 and rounded to the storage type on the
// device.
#include "cuda/device_weights.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "cuda/cuda_check.h"
#include "cuda/kernels/kernels.h"

namespace astrai::cuda {
namespace {

using FloatSpan = std::pair<const float*, size_t>;

// Uploads the float32 spans one after another into one buffer of `dtype`,
// through a float32 staging buffer as large as the largest span.
DeviceBuffer upload(DType dtype, const std::string& what, const std::vector<FloatSpan>& spans) {
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

template <typename... Tensors>
DeviceBuffer upload(DType dtype, const std::string& what, const Tensors&... parts) {
  return upload(dtype, what, std::vector<FloatSpan>{{parts.data(), parts.size()}...});
}

// One matrix of a stack: its name in a GGUF file and its float32 values.
struct MatrixSource {
  std::string gguf_name;
  const xt::xtensor<float, 2>* values;
};

// The file's blocks of `name` when the device keeps their format (and they
// are the whole [rows, cols] matrix), else nullptr.
const QuantizedBlocks* kept_blocks(const ModelWeights& w, const std::string& name, size_t rows, size_t cols,
                                   QuantFormat* format) {
  const auto it = w.quantized.find(name);
  if (it == w.quantized.end()) return nullptr;
  const auto f = quant_format_named(it->second->type);
  if (!f || cols % size_t(quant_format_info(*f).block_elements) != 0) return nullptr;
  if (it->second->bytes.size() != quant_matrix_bytes(*f, rows, cols))
    throw std::logic_error("the blocks of " + name + " are " + std::to_string(it->second->bytes.size()) +
                           " bytes where a [" + std::to_string(rows) + ", " + std::to_string(cols) + "] " +
                           it->second->type + " matrix takes " + std::to_string(quant_matrix_bytes(*f, rows, cols)));
  *format = *f;
  return it->second.get();
}

// Bytes a stack takes on the device: kept blocks as they are, the rest in `dtype`.
size_t stack_bytes(const ModelWeights& w, DType dtype, const std::vector<MatrixSource>& stack) {
  size_t bytes = 0;
  for (const MatrixSource& m : stack) {
    QuantFormat f{};
    const QuantizedBlocks* blocks = kept_blocks(w, m.gguf_name, m.values->shape(0), m.values->shape(1), &f);
    bytes += blocks ? blocks->bytes.size() : m.values->size() * dtype_size(dtype);
  }
  return bytes;
}

// A stack as a DeviceMatrix: one part in `dtype` when no matrix keeps its
// blocks (one GEMM), else a part per matrix.
DeviceMatrix upload_matrix(const ModelWeights& w, DType dtype, const std::string& what,
                           const std::vector<MatrixSource>& stack) {
  DeviceMatrix out;
  out.cols = int(stack.front().values->shape(1));
  std::vector<const QuantizedBlocks*> blocks;
  std::vector<QuantFormat> formats(stack.size());
  bool any = false;
  for (size_t i = 0; i < stack.size(); ++i) {
    blocks.push_back(kept_blocks(w, stack[i].gguf_name, stack[i].values->shape(0), stack[i].values->shape(1),
                                 &formats[i]));
    any = any || blocks.back();
  }
  if (!any) {
    std::vector<FloatSpan> spans;
    int rows = 0;
    for (const MatrixSource& m : stack) {
      spans.push_back({m.values->data(), m.values->size()});
      rows += int(m.values->shape(0));
    }
    out.parts.push_back(WeightPart{upload(dtype, what, spans), std::nullopt, rows});
    return out;
  }
  for (size_t i = 0; i < stack.size(); ++i) {
    const int rows = int(stack[i].values->shape(0));
    if (!blocks[i]) {
      out.parts.push_back(WeightPart{upload(dtype, what, *stack[i].values), std::nullopt, rows});
      continue;
    }
    DeviceBuffer data(blocks[i]->bytes.size(), what + " (" + blocks[i]->type + ")");
    ASTRAI_CUDA_CHECK(cudaMemcpy(data.get(), blocks[i]->bytes.data(), blocks[i]->bytes.size(), cudaMemcpyHostToDevice));
    out.parts.push_back(WeightPart{std::move(data), formats[i], rows});
  }
  return out;
}

std::string layer_tensor(int l, const char* name) { return "blk." + std::to_string(l) + "." + name + ".weight"; }

// The classifier's blocks are output.weight's, or token_embd.weight's when the
// file ties them (llama.cpp omits output.weight then).
std::string classifier_name(const ModelWeights& w) {
  return w.stored.count("output.weight") || !w.stored.count("token_embd.weight") ? "output.weight" : "token_embd.weight";
}

// Every matrix stack of the model, in upload order.
std::vector<std::pair<std::string, std::vector<MatrixSource>>> stacks(const ModelWeights& w) {
  std::vector<std::pair<std::string, std::vector<MatrixSource>>> out;
  for (int l = 0; l < w.config.n_layers; ++l) {
    const LayerWeights& L = w.layers[size_t(l)];
    const std::string name = "layer " + std::to_string(l);
    out.push_back({name + " wq/wk/wv",
                   {{layer_tensor(l, "attn_q"), &L.wq}, {layer_tensor(l, "attn_k"), &L.wk}, {layer_tensor(l, "attn_v"), &L.wv}}});
    out.push_back({name + " wo", {{layer_tensor(l, "attn_output"), &L.wo}}});
    out.push_back({name + " w_gate/w_up", {{layer_tensor(l, "ffn_gate"), &L.w_gate}, {layer_tensor(l, "ffn_up"), &L.w_up}}});
    out.push_back({name + " w_down", {{layer_tensor(l, "ffn_down"), &L.w_down}}});
  }
  out.push_back({"the classifier", {{classifier_name(w), &w.classifier}}});
  return out;
}

// Elements of the weights that are not matrices of a stack (embedding, norms, biases).
size_t other_elements(const ModelConfig& c) {
  size_t n = size_t(c.vocab_size) * size_t(c.dim) + size_t(c.dim);  // embedding, final norm
  const size_t per_layer = 2 * size_t(c.dim) + (c.qkv_bias ? size_t(c.q_dim() + 2 * c.kv_dim()) : 0) +
                           (c.qk_norm ? 2 * size_t(c.head_dim()) : 0);
  return n + size_t(c.n_layers) * per_layer;
}

}  // namespace

size_t DeviceWeights::bytes_needed(const ModelWeights& w, DType dtype) {
  size_t bytes = other_elements(w.config) * dtype_size(dtype);
  for (const auto& [what, stack] : stacks(w)) bytes += stack_bytes(w, dtype, stack);
  return bytes;
}

size_t DeviceWeights::bytes_needed(const ModelConfig& c, DType dtype) {
  const size_t per_layer_matrices = size_t(c.q_dim() + 2 * c.kv_dim()) * size_t(c.dim) +
                                    size_t(c.dim) * size_t(c.q_dim()) + 3 * size_t(c.hidden_dim) * size_t(c.dim);
  return (other_elements(c) + size_t(c.n_layers) * per_layer_matrices + size_t(c.vocab_size) * size_t(c.dim)) *
         dtype_size(dtype);
}

std::string DeviceWeights::out_of_memory_message(const ModelWeights& w, DType dtype, size_t free_bytes,
                                                 size_t total_bytes) {
  std::string message = "out of GPU memory: the weights of the model (" + w.config.describe() + ") need " +
                        format_mib(bytes_needed(w, dtype)) + " but only " + format_mib(free_bytes) + " of " +
                        format_mib(total_bytes) + " are free";
  std::set<std::string> kept, decoded;
  uint64_t file_bytes = 0;
  for (const auto& [name, t] : w.stored) {
    file_bytes += t.file_bytes;
    if (t.type == "F32" || t.type == "F16" || t.type == "BF16") continue;
    (quant_format_named(t.type) ? kept : decoded).insert(t.type);
  }
  if (kept.empty() && decoded.empty()) return message + " (in " + dtype_name(dtype) + ")";
  auto list = [](const std::set<std::string>& types) {
    std::string s;
    for (const auto& t : types) s += (s.empty() ? "" : ", ") + t;
    return s;
  };
  message += " (the file stores them quantized in " + format_mib(file_bytes) + "; ";
  if (!kept.empty()) message += list(kept) + " matrices stay quantized on the GPU; ";
  if (!decoded.empty()) message += list(decoded) + " are decoded to " + std::string(dtype_name(dtype)) + "; ";
  return message + "the rest is " + dtype_name(dtype) + ")";
}

DeviceWeights::DeviceWeights(const ModelWeights& w, DType dtype) : dtype_(dtype) {
  w.validate_shapes();
  const ModelConfig& c = w.config;
  size_t free_bytes = 0, total_bytes = 0;
  ASTRAI_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (bytes_needed(w, dtype) > free_bytes) throw std::runtime_error(out_of_memory_message(w, dtype, free_bytes, total_bytes));
  embedding_ = upload(dtype, "the token embedding", w.token_embedding);
  const auto all = stacks(w);
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& L = w.layers[size_t(l)];
    const std::string name = "layer " + std::to_string(l);
    const auto* s = &all[size_t(4 * l)];
    DeviceLayerWeights d;
    d.attn_norm = upload(dtype, name + " attention norm", L.attn_norm);
    d.wqkv = upload_matrix(w, dtype, s[0].first, s[0].second);
    d.wo = upload_matrix(w, dtype, s[1].first, s[1].second);
    d.ffn_norm = upload(dtype, name + " ffn norm", L.ffn_norm);
    d.w_gate_up = upload_matrix(w, dtype, s[2].first, s[2].second);
    d.w_down = upload_matrix(w, dtype, s[3].first, s[3].second);
    if (c.qkv_bias) d.bqkv = upload(dtype, name + " bq/bk/bv", L.bq, L.bk, L.bv);
    if (c.qk_norm) {
      d.q_norm = upload(dtype, name + " q norm", L.q_norm);
      d.k_norm = upload(dtype, name + " k norm", L.k_norm);
    }
    layers_.push_back(std::move(d));
  }
  final_norm_ = upload(dtype, "the final norm", w.final_norm);
  classifier_ = upload_matrix(w, dtype, all.back().first, all.back().second);
}

size_t DeviceWeights::bytes() const {
  size_t n = embedding_.bytes() + final_norm_.bytes() + classifier_.bytes();
  for (const DeviceLayerWeights& L : layers_)
    n += L.attn_norm.bytes() + L.wqkv.bytes() + L.wo.bytes() + L.ffn_norm.bytes() + L.w_gate_up.bytes() +
         L.w_down.bytes() + L.bqkv.bytes() + L.q_norm.bytes() + L.k_norm.bytes();
  return n;
}

template <typename F>
void DeviceWeights::for_each_matrix(F&& f) const {
  for (const DeviceLayerWeights& L : layers_)
    for (const DeviceMatrix* m : {&L.wqkv, &L.wo, &L.w_gate_up, &L.w_down}) f(*m);
  f(classifier_);
}

int DeviceWeights::widest_quantized_cols() const {
  int widest = 0;
  for_each_matrix([&](const DeviceMatrix& m) {
    if (m.quantized()) widest = std::max(widest, m.cols);
  });
  return widest;
}

std::string DeviceWeights::describe() const {
  std::map<std::string, int> counts;
  int matrices = 0;
  for_each_matrix([&](const DeviceMatrix& m) {
    for (const WeightPart& p : m.parts)
      if (p.quant) {
        ++counts[std::string(quant_format_info(*p.quant).name)];
        ++matrices;
      }
  });
  std::string s = format_mib(bytes());
  if (matrices == 0) return s + " in " + dtype_name(dtype_);
  std::string types;
  for (const auto& [name, n] : counts) types += (types.empty() ? "" : ", ") + name + " " + std::to_string(n);
  return s + ": " + std::to_string(matrices) + " matrices quantized (" + types + "), the rest " + dtype_name(dtype_);
}

}  // namespace astrai::cuda
