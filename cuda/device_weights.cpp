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
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

#include "cuda/cuda_check.h"
#include "cuda/kernels/kernels.h"

namespace astrai::cuda {
namespace {

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
  // An expert stack [experts, out, in] is experts * out rows of `in`.
  const size_t rows = t.shape.size() == 3 ? t.shape[0] * t.shape[1] : t.shape.at(0), cols = t.shape.back();
  if (!f || cols % size_t(quant_format_info(*f).block_elements) != 0) return std::nullopt;
  if (blocks->bytes.size() != quant_matrix_bytes(*f, rows, cols))
    throw std::runtime_error("the blocks of " + t.gguf_name() + " are " + std::to_string(blocks->bytes.size()) +
                             " bytes where a [" + std::to_string(rows) + ", " + std::to_string(cols) + "] " +
                             blocks->type + " matrix takes " + std::to_string(quant_matrix_bytes(*f, rows, cols)));
  return KeptBlocks{*f, blocks->bytes, blocks->owner};
}

// Reads `t`'s values from the source (refusing a count that is not its
// shape's) into the float32 staging buffer on the device; returns the count.
size_t read_to_staging(const ModelSource& source, const ModelTensor& t, DeviceBuffer& staging) {
  const std::vector<float> values = source.read(t);
  if (values.size() != elements(t))
    throw std::runtime_error(t.gguf_name() + ": the source gave " + std::to_string(values.size()) +
                             " values for " + std::to_string(elements(t)) + " elements");
  // Synchronous from pageable memory: `values` is freed on return.
  ASTRAI_CUDA_CHECK(cudaMemcpy(staging.get(), values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice));
  return values.size();
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
    const size_t count = read_to_staging(source, *t, staging);
    launch_convert_from_float(staging.as<float>(), count, static_cast<char*>(out.get()) + offset * dtype_size(dtype),
                              dtype, nullptr);
    ASTRAI_CUDA_CHECK(cudaDeviceSynchronize());  // before the next tensor overwrites staging
    offset += count;
  }
  return out;
}

// A part per tensor of `stack`, of which some keep their file's blocks
// (`kept`): those go to the device as they are, the others in `dtype`. A
// tensor's rows in its part are its extent on axis `rows_axis` (0 for a
// matrix, 1 for an expert stack, whose experts stay back to back).
std::vector<WeightPart> upload_parts(const ModelSource& source, DType dtype, const std::string& what,
                                     const std::vector<const ModelTensor*>& stack,
                                     const std::vector<std::optional<KeptBlocks>>& kept, size_t rows_axis) {
  std::vector<WeightPart> parts;
  for (size_t i = 0; i < stack.size(); ++i) {
    const int rows = int(stack[i]->shape.at(rows_axis));
    if (!kept[i]) {
      parts.push_back(WeightPart{upload_values(source, dtype, what, {stack[i]}), std::nullopt, rows});
      continue;
    }
    const std::string type(quant_format_info(kept[i]->format).name);
    DeviceBuffer data(kept[i]->bytes.size(), what + " (" + type + ")");
    ASTRAI_CUDA_CHECK(cudaMemcpy(data.get(), kept[i]->bytes.data(), kept[i]->bytes.size(), cudaMemcpyHostToDevice));
    if (source.release_blocks) source.release_blocks(TensorBlocks{type, kept[i]->bytes, kept[i]->owner});
    parts.push_back(WeightPart{std::move(data), kept[i]->format, rows});
  }
  return parts;
}

bool any_kept(const std::vector<std::optional<KeptBlocks>>& kept) {
  return std::any_of(kept.begin(), kept.end(), [](const auto& k) { return k.has_value(); });
}

// The expert stacks of a group (each [experts, rows_i, cols]) as
// DeviceExperts: one part in `dtype` whose expert e holds every stack's
// matrix e in turn (gate then up) when no stack keeps its blocks, converted
// on the device from a float32 staging buffer as large as one stack; else a
// part per stack, its file's blocks as they are where the device keeps
// them (the stack's experts back to back, as ggml stores them).
DeviceExperts upload_experts(const ModelSource& source, DType dtype, const std::string& what,
                             const std::vector<const ModelTensor*>& stacks) {
  DeviceExperts out;
  out.experts = int(stacks.front()->shape.at(0));
  out.cols = int(stacks.front()->shape.at(2));
  std::vector<std::optional<KeptBlocks>> kept;
  for (const ModelTensor* t : stacks) kept.push_back(kept_blocks(source, *t));
  if (any_kept(kept)) {
    out.parts = upload_parts(source, dtype, what, stacks, kept, 1);
    return out;
  }
  int rows = 0;
  size_t largest = 0;
  for (const ModelTensor* t : stacks) {
    rows += int(t->shape.at(1));
    largest = std::max(largest, elements(*t));
  }
  const size_t per_expert = size_t(rows) * size_t(out.cols), es = dtype_size(dtype);
  DeviceBuffer data(size_t(out.experts) * per_expert * es, what);
  DeviceBuffer staging(largest * sizeof(float), "staging for " + what);
  size_t row_offset = 0;
  for (const ModelTensor* t : stacks) {
    read_to_staging(source, *t, staging);
    const size_t matrix = t->shape.at(1) * t->shape.at(2);
    for (int e = 0; e < out.experts; ++e)
      launch_convert_from_float(staging.as<float>() + size_t(e) * matrix, matrix,
                                static_cast<char*>(data.get()) + (size_t(e) * per_expert + row_offset * size_t(out.cols)) * es,
                                dtype, nullptr);
    ASTRAI_CUDA_CHECK(cudaDeviceSynchronize());  // before the next stack overwrites staging
    row_offset += t->shape.at(1);
  }
  out.parts.push_back(WeightPart{std::move(data), std::nullopt, rows});
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
  if (!any_kept(kept)) {
    int rows = 0;
    for (const ModelTensor* t : stack) rows += int(t->shape.at(0));
    out.parts.push_back(WeightPart{upload_values(source, dtype, what, stack), std::nullopt, rows});
    return out;
  }
  out.parts = upload_parts(source, dtype, what, stack, kept, 0);
  return out;
}

// The pointers of a group's tensors (what the upload helpers take).
std::vector<const ModelTensor*> tensors_of(const WeightGroup& g) {
  std::vector<const ModelTensor*> out;
  for (const ModelTensor& t : g.tensors) out.push_back(&t);
  return out;
}

// Where each per-layer group of the weight table lives on the device, bound
// by its first row's field (weight_table.h): the q/k/v group is wqkv, and so
// on. A row the table gains without a binding here is a weight this backend
// does not run, and DeviceWeights refuses a model that has it.
using LayerSlot = std::variant<DeviceBuffer DeviceLayerWeights::*, DeviceMatrix DeviceLayerWeights::*,
                               DeviceExperts DeviceLayerWeights::*>;
struct LayerBinding {
  WeightField field;
  LayerSlot slot;
  const char* what;
};
// clang-format off
const LayerBinding kLayerBindings[] = {
  {&LayerWeights::attn_norm, &DeviceLayerWeights::attn_norm, "attention norm"},
  {&LayerWeights::wq,        &DeviceLayerWeights::wqkv,      "wq/wk/wv"},
  {&LayerWeights::bq,        &DeviceLayerWeights::bqkv,      "bq/bk/bv"},
  {&LayerWeights::wo,        &DeviceLayerWeights::wo,        "wo"},
  {&LayerWeights::bo,        &DeviceLayerWeights::bo,        "bo"},
  {&LayerWeights::sinks,     &DeviceLayerWeights::sinks,     "attention sinks"},
  {&LayerWeights::q_norm,    &DeviceLayerWeights::q_norm,    "q norm"},
  {&LayerWeights::k_norm,    &DeviceLayerWeights::k_norm,    "k norm"},
  {&LayerWeights::ffn_norm,  &DeviceLayerWeights::ffn_norm,  "ffn norm"},
  {&LayerWeights::post_attn_norm, &DeviceLayerWeights::post_attn_norm, "post-attention norm"},
  {&LayerWeights::post_ffn_norm,  &DeviceLayerWeights::post_ffn_norm,  "post-feed-forward norm"},
  {&LayerWeights::w_gate,    &DeviceLayerWeights::w_gate_up, "w_gate/w_up"},
  {&LayerWeights::w_down,    &DeviceLayerWeights::w_down,    "w_down"},
  {&LayerWeights::router,    &DeviceLayerWeights::router,    "router"},
  {&LayerWeights::exp_gate,  &DeviceLayerWeights::exp_gate_up, "experts' gate/up"},
  {&LayerWeights::exp_down,  &DeviceLayerWeights::exp_down,  "experts' down"},
  {&LayerWeights::router_bias,   &DeviceLayerWeights::router_bias,   "router bias"},
  {&LayerWeights::exp_gate_bias, &DeviceLayerWeights::exp_gate_bias, "experts' gate bias"},
  {&LayerWeights::exp_up_bias,   &DeviceLayerWeights::exp_up_bias,   "experts' up bias"},
  {&LayerWeights::exp_down_bias, &DeviceLayerWeights::exp_down_bias, "experts' down bias"},
  {&LayerWeights::shexp_gate_inp, &DeviceLayerWeights::shexp_gate_inp, "shared expert gate"},
  {&LayerWeights::shexp_gate, &DeviceLayerWeights::shexp_gate_up, "shared expert gate/up"},
  {&LayerWeights::shexp_down, &DeviceLayerWeights::shexp_down, "shared expert down"},
};
// clang-format on

const LayerBinding& layer_binding(const WeightGroup& g) {
  for (const LayerBinding& b : kLayerBindings)
    if (b.field == g.first().field) return b;
  throw std::runtime_error("the CUDA backend keeps no weight " + g.tensors.front().gguf_name() +
                           " (cuda/device_weights.cpp binds each row of the weight table it runs)");
}

// The device's bytes of a group: a matrix (or expert) stack's kept blocks
// as they are and the rest in `dtype`; a vector group in `dtype`.
size_t group_bytes(const ModelSource& source, DType dtype, const WeightGroup& g) {
  if (g.first().rank() >= 2) return stack_bytes(source, dtype, tensors_of(g));
  size_t n = 0;
  for (const ModelTensor& t : g.tensors) n += elements(t);
  return n * dtype_size(dtype);
}

}  // namespace

size_t DeviceWeights::bytes_needed(const ModelSource& source, DType dtype) {
  size_t bytes = 0;
  for (const WeightGroup& g : weight_groups(source.config, source.tied)) bytes += group_bytes(source, dtype, g);
  return bytes;
}

size_t DeviceWeights::bytes_needed(const ModelConfig& c, DType dtype) {
  size_t elements_needed = 0;
  for (const ModelTensor& t : model_tensors(c, false)) elements_needed += elements(t);
  return elements_needed * dtype_size(dtype);
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
  layers_.resize(size_t(c.n_layers));
  for (const WeightGroup& g : weight_groups(c, source.tied)) upload(source, g);
}

// One group of the weight table into the member its first row's field
// names: a matrix stack (rank 2) into a DeviceMatrix, vectors into a buffer.
void DeviceWeights::upload(const ModelSource& source, const WeightGroup& g) {
  const auto put = [&](auto& slot, const std::string& what) {
    using Slot = std::remove_reference_t<decltype(slot)>;
    if constexpr (std::is_same_v<Slot, DeviceMatrix>)
      slot = upload_matrix(source, dtype_, what, tensors_of(g));
    else if constexpr (std::is_same_v<Slot, DeviceExperts>)
      slot = upload_experts(source, dtype_, what, tensors_of(g));
    else
      slot = upload_values(source, dtype_, what, tensors_of(g));
  };
  if (g.layer() >= 0) {
    const LayerBinding& b = layer_binding(g);
    DeviceLayerWeights& layer = layers_[size_t(g.layer())];
    std::visit([&](auto member) { put(layer.*member, "layer " + std::to_string(g.layer()) + " " + b.what); }, b.slot);
    return;
  }
  // The model-wide rows, bound the same way to this object's own members.
  using Slot = std::variant<DeviceBuffer DeviceWeights::*, DeviceMatrix DeviceWeights::*>;
  static const std::tuple<WeightField, Slot, const char*> kModelBindings[] = {
      {&ModelWeights::token_embedding, &DeviceWeights::embedding_, "the token embedding"},
      {&ModelWeights::final_norm, &DeviceWeights::final_norm_, "the final norm"},
      {&ModelWeights::classifier, &DeviceWeights::classifier_, "the classifier"},
  };
  for (const auto& [field, slot, what] : kModelBindings)
    if (field == g.first().field) return std::visit([&, what = what](auto member) { put(this->*member, what); }, slot);
  throw std::runtime_error("the CUDA backend keeps no weight " + g.tensors.front().gguf_name() +
                           " (cuda/device_weights.cpp binds each row of the weight table it runs)");
}

size_t DeviceWeights::bytes() const {
  size_t n = embedding_.bytes() + final_norm_.bytes() + (tied_ ? 0 : classifier_.bytes());
  for (const DeviceLayerWeights& L : layers_)
    n += L.attn_norm.bytes() + L.wqkv.bytes() + L.wo.bytes() + L.ffn_norm.bytes() + L.w_gate_up.bytes() +
         L.w_down.bytes() + L.bqkv.bytes() + L.q_norm.bytes() + L.k_norm.bytes() + L.post_attn_norm.bytes() +
         L.post_ffn_norm.bytes() + L.bo.bytes() + L.sinks.bytes() + L.router.bytes() + L.router_bias.bytes() +
         L.exp_gate_bias.bytes() + L.exp_up_bias.bytes() + L.exp_down_bias.bytes() +
         L.exp_gate_up.bytes() + L.exp_down.bytes() + L.shexp_gate_inp.bytes() + L.shexp_gate_up.bytes() +
         L.shexp_down.bytes();
  return n;
}

template <typename F>
void DeviceWeights::for_each_matrix(F&& f) const {
  for (const DeviceLayerWeights& L : layers_)
    for (const DeviceMatrix* m : {&L.wqkv, &L.wo, &L.w_gate_up, &L.w_down, &L.router, &L.shexp_gate_inp,
                                  &L.shexp_gate_up, &L.shexp_down})
      f(*m);
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
  const auto count = [&](const std::vector<WeightPart>& parts) {
    for (const WeightPart& p : parts)
      if (p.quant) {
        ++counts[std::string(quant_format_info(*p.quant).name)];
        ++matrices;
      }
  };
  for_each_matrix([&](const DeviceMatrix& m) { count(m.parts); });
  for (const DeviceLayerWeights& L : layers_)  // an expert stack counts as one matrix, as a GGUF tensor
    for (const DeviceExperts* e : {&L.exp_gate_up, &L.exp_down}) count(e->parts);
  std::string s = format_mib(bytes());
  if (matrices == 0) return s + " in " + dtype_name(dtype_);
  std::string types;
  for (const auto& [name, n] : counts) types += (types.empty() ? "" : ", ") + name + " " + std::to_string(n);
  return s + ": " + std::to_string(matrices) + " matrices quantized (" + types + "), the rest " + dtype_name(dtype_);
}

}  // namespace astrai::cuda
