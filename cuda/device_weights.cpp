// DeviceWeights: a ModelSource's tensors uploaded one at a time; quantized
// matrices as their file's blocks, every other weight read in float32 and
// rounded to the storage type on the device.
#include "cuda/device_weights.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "cuda/cuda_check.h"
#include "cuda/kernels/kernels.h"

namespace astrai::cuda {
namespace {

// The model's tensors by GGUF name ("blk.3.attn_q.weight").
class TensorIndex {
 public:
  TensorIndex(const ModelConfig& c, bool tied) {
    for_each_model_tensor(c, tied, [&](const ModelTensor& t) { by_name_.emplace(t.gguf_name(), t); });
  }
  const ModelTensor& at(const std::string& name) const {
    const auto it = by_name_.find(name);
    if (it == by_name_.end()) throw std::logic_error("DeviceWeights: the model has no tensor " + name);
    return it->second;
  }
  // Layer l's tensor `name` ("attn_q.weight").
  const ModelTensor& layer(int l, const char* name) const { return at("blk." + std::to_string(l) + "." + name); }

 private:
  std::map<std::string, ModelTensor> by_name_;
};

size_t elements(const ModelTensor& t) {
  size_t n = 1;
  for (const size_t d : t.shape) n *= d;
  return n;
}

// The file's blocks of matrix `t` when the device keeps their format (and
// its rows are whole blocks), else nullopt (the values are read instead).
struct KeptBlocks {
  QuantFormat format;
  std::span<const std::byte> bytes;
  std::shared_ptr<const void> owner;  // TensorBlocks::owner: keeps gathered bytes alive
};
std::optional<KeptBlocks> kept_blocks(const ModelSource& source, const ModelTensor& t) {
  if (!source.blocks) return std::nullopt;
  const std::optional<TensorBlocks> blocks = source.blocks(t);
  if (!blocks) return std::nullopt;
  const auto f = quant_format_named(blocks->type);
  const size_t rows = t.shape.at(0), cols = t.shape.at(1);
  if (!f || cols % size_t(quant_format_info(*f).block_elements) != 0) return std::nullopt;
  if (blocks->bytes.size() != quant_matrix_bytes(*f, rows, cols))
    throw std::runtime_error("the blocks of " + t.gguf_name() + " are " + std::to_string(blocks->bytes.size()) +
                             " bytes where a [" + std::to_string(rows) + ", " + std::to_string(cols) + "] " +
                             blocks->type + " matrix takes " + std::to_string(quant_matrix_bytes(*f, rows, cols)));
  return KeptBlocks{*f, blocks->bytes, blocks->owner};
}

// Reads the tensors one at a time and uploads them one after another into
// one buffer of `dtype`, through a float32 staging buffer as large as the
// largest: host memory holds one tensor's float32 values at a time.
DeviceBuffer upload_values(const ModelSource& source, DType dtype, const std::string& what,
                           const std::vector<const ModelTensor*>& tensors) {
  size_t total = 0, largest = 0;
  for (const ModelTensor* t : tensors) {
    total += elements(*t);
    largest = std::max(largest, elements(*t));
  }
  DeviceBuffer out(total * dtype_size(dtype), what);
  DeviceBuffer staging(largest * sizeof(float), "staging for " + what);
  size_t offset = 0;
  for (const ModelTensor* t : tensors) {
    const std::vector<float> values = source.read(*t);
    if (values.size() != elements(*t))
      throw std::runtime_error(t->gguf_name() + ": the source gave " + std::to_string(values.size()) +
                               " values for " + std::to_string(elements(*t)) + " elements");
    // Synchronous from pageable memory: `values` may be freed on return.
    ASTRAI_CUDA_CHECK(cudaMemcpy(staging.get(), values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice));
    launch_convert_from_float(staging.as<float>(), values.size(),
                              static_cast<char*>(out.get()) + offset * dtype_size(dtype), dtype, nullptr);
    ASTRAI_CUDA_CHECK(cudaDeviceSynchronize());  // before the next tensor overwrites staging
    offset += values.size();
  }
  return out;
}

// Bytes a stack takes on the device: kept blocks as they are, the rest in `dtype`.
size_t stack_bytes(const ModelSource& source, DType dtype, const std::vector<const ModelTensor*>& stack) {
  size_t bytes = 0;
  for (const ModelTensor* t : stack) {
    const auto kept = kept_blocks(source, *t);
    bytes += kept ? kept->bytes.size() : elements(*t) * dtype_size(dtype);
  }
  return bytes;
}

// A stack as a DeviceMatrix: one part in `dtype` when no matrix keeps its
// blocks (one GEMM), else a part per matrix.
DeviceMatrix upload_matrix(const ModelSource& source, DType dtype, const std::string& what,
                           const std::vector<const ModelTensor*>& stack) {
  DeviceMatrix out;
  out.cols = int(stack.front()->shape.at(1));
  std::vector<std::optional<KeptBlocks>> kept;
  for (const ModelTensor* t : stack) kept.push_back(kept_blocks(source, *t));
  if (std::none_of(kept.begin(), kept.end(), [](const auto& k) { return k.has_value(); })) {
    int rows = 0;
    for (const ModelTensor* t : stack) rows += int(t->shape.at(0));
    out.parts.push_back(WeightPart{upload_values(source, dtype, what, stack), std::nullopt, rows});
    return out;
  }
  for (size_t i = 0; i < stack.size(); ++i) {
    const int rows = int(stack[i]->shape.at(0));
    if (!kept[i]) {
      out.parts.push_back(WeightPart{upload_values(source, dtype, what, {stack[i]}), std::nullopt, rows});
      continue;
    }
    const std::string type(quant_format_info(kept[i]->format).name);
    DeviceBuffer data(kept[i]->bytes.size(), what + " (" + type + ")");
    ASTRAI_CUDA_CHECK(cudaMemcpy(data.get(), kept[i]->bytes.data(), kept[i]->bytes.size(), cudaMemcpyHostToDevice));
    if (source.release_blocks) source.release_blocks(TensorBlocks{type, kept[i]->bytes, kept[i]->owner});
    out.parts.push_back(WeightPart{std::move(data), kept[i]->format, rows});
  }
  return out;
}

// Every matrix stack of the model (the embedding first, the classifier
// last unless tied), as uploaded.
struct Stack {
  std::string what;
  std::vector<const ModelTensor*> tensors;
};
std::vector<Stack> stacks(const TensorIndex& index, const ModelSource& source) {
  std::vector<Stack> out;
  out.push_back({"the token embedding", {&index.at("token_embd.weight")}});
  for (int l = 0; l < source.config.n_layers; ++l) {
    const std::string name = "layer " + std::to_string(l);
    out.push_back({name + " wq/wk/wv",
                   {&index.layer(l, "attn_q.weight"), &index.layer(l, "attn_k.weight"), &index.layer(l, "attn_v.weight")}});
    out.push_back({name + " wo", {&index.layer(l, "attn_output.weight")}});
    out.push_back({name + " w_gate/w_up", {&index.layer(l, "ffn_gate.weight"), &index.layer(l, "ffn_up.weight")}});
    out.push_back({name + " w_down", {&index.layer(l, "ffn_down.weight")}});
  }
  if (!source.tied) out.push_back({"the classifier", {&index.at("output.weight")}});
  return out;
}

// Elements of the weights that are not matrices (norms, biases).
size_t vector_elements(const ModelConfig& c) {
  const size_t per_layer = 2 * size_t(c.dim) + (c.qkv_bias ? size_t(c.q_dim() + 2 * c.kv_dim()) : 0) +
                           (c.qk_norm ? 2 * size_t(c.head_dim()) : 0);
  return size_t(c.dim) + size_t(c.n_layers) * per_layer;  // the final norm, the layers'
}

}  // namespace

size_t DeviceWeights::bytes_needed(const ModelSource& source, DType dtype) {
  const TensorIndex index(source.config, source.tied);
  size_t bytes = vector_elements(source.config) * dtype_size(dtype);
  for (const Stack& s : stacks(index, source)) bytes += stack_bytes(source, dtype, s.tensors);
  return bytes;
}

size_t DeviceWeights::bytes_needed(const ModelConfig& c, DType dtype) {
  const size_t per_layer_matrices = size_t(c.q_dim() + 2 * c.kv_dim()) * size_t(c.dim) +
                                    size_t(c.dim) * size_t(c.q_dim()) + 3 * size_t(c.hidden_dim) * size_t(c.dim);
  return (vector_elements(c) + size_t(c.n_layers) * per_layer_matrices + 2 * size_t(c.vocab_size) * size_t(c.dim)) *
         dtype_size(dtype);
}

std::string DeviceWeights::out_of_memory_message(const ModelSource& source, DType dtype, size_t free_bytes,
                                                 size_t total_bytes) {
  std::string message = "out of GPU memory: the weights of the model (" + source.config.describe() + ") need " +
                        format_mib(bytes_needed(source, dtype)) + " but only " + format_mib(free_bytes) + " of " +
                        format_mib(total_bytes) + " are free";
  std::set<std::string> kept, decoded;
  uint64_t file_bytes = 0;
  for (const auto& [name, t] : source.stored) {
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

DeviceWeights::DeviceWeights(const ModelSource& source, DType dtype) : dtype_(dtype), tied_(source.tied) {
  const ModelConfig& c = source.config;
  c.validate();
  size_t free_bytes = 0, total_bytes = 0;
  ASTRAI_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (bytes_needed(source, dtype) > free_bytes)
    throw std::runtime_error(out_of_memory_message(source, dtype, free_bytes, total_bytes));
  const TensorIndex index(c, source.tied);
  const std::vector<Stack> all = stacks(index, source);
  embedding_ = upload_matrix(source, dtype, all[0].what, all[0].tensors);
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string name = "layer " + std::to_string(l);
    const Stack* s = &all[size_t(1 + 4 * l)];
    DeviceLayerWeights d;
    d.attn_norm = upload_values(source, dtype, name + " attention norm", {&index.layer(l, "attn_norm.weight")});
    d.wqkv = upload_matrix(source, dtype, s[0].what, s[0].tensors);
    d.wo = upload_matrix(source, dtype, s[1].what, s[1].tensors);
    d.ffn_norm = upload_values(source, dtype, name + " ffn norm", {&index.layer(l, "ffn_norm.weight")});
    d.w_gate_up = upload_matrix(source, dtype, s[2].what, s[2].tensors);
    d.w_down = upload_matrix(source, dtype, s[3].what, s[3].tensors);
    if (c.qkv_bias)
      d.bqkv = upload_values(source, dtype, name + " bq/bk/bv",
                             {&index.layer(l, "attn_q.bias"), &index.layer(l, "attn_k.bias"),
                              &index.layer(l, "attn_v.bias")});
    if (c.qk_norm) {
      d.q_norm = upload_values(source, dtype, name + " q norm", {&index.layer(l, "attn_q_norm.weight")});
      d.k_norm = upload_values(source, dtype, name + " k norm", {&index.layer(l, "attn_k_norm.weight")});
    }
    layers_.push_back(std::move(d));
  }
  final_norm_ = upload_values(source, dtype, "the final norm", {&index.at("output_norm.weight")});
  if (!source.tied) classifier_ = upload_matrix(source, dtype, all.back().what, all.back().tensors);
}

size_t DeviceWeights::bytes() const {
  size_t n = embedding_.bytes() + final_norm_.bytes() + (tied_ ? 0 : classifier_.bytes());
  for (const DeviceLayerWeights& L : layers_)
    n += L.attn_norm.bytes() + L.wqkv.bytes() + L.wo.bytes() + L.ffn_norm.bytes() + L.w_gate_up.bytes() +
         L.w_down.bytes() + L.bqkv.bytes() + L.q_norm.bytes() + L.k_norm.bytes();
  return n;
}

template <typename F>
void DeviceWeights::for_each_matrix(F&& f) const {
  for (const DeviceLayerWeights& L : layers_)
    for (const DeviceMatrix* m : {&L.wqkv, &L.wo, &L.w_gate_up, &L.w_down}) f(*m);
  f(embedding_);
  if (!tied_) f(classifier_);
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
