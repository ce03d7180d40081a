// Random quantized models for the decode-step benchmarks (see quantized_model.h).
#include "bench/quantized_model.h"

#include <atomic>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <thread>

#include "engine/model_files/float_formats.h"
#include "engine/model_files/weight_table.h"

namespace astrai::bench {
namespace {

using cuda::QuantFormat;

// Where a block keeps its float16 scales, and the largest |weight| its other
// bytes can make per unit of scale: Q8_0 d q (|q| <= 128); Q4_0 d (q - 8);
// Q4_K d sc q - dmin m (sc, m < 64, q < 16); Q5_K the same with q < 32;
// Q6_K d sc (q - 32) (|sc| <= 128, |q - 32| <= 32). The K quants' second
// scale (dmin) is set like the first.
struct ScaleLayout {
  std::vector<size_t> offsets;
  double reach;
};
ScaleLayout scale_layout(QuantFormat f) {
  switch (f) {
    case QuantFormat::Q8_0: return {{0}, 128.0};
    case QuantFormat::Q4_0: return {{0}, 8.0};
    case QuantFormat::Q4_K: return {{0, 2}, 63.0 * 15.0};
    case QuantFormat::Q5_K: return {{0, 2}, 63.0 * 31.0};
    case QuantFormat::Q6_K: return {{208}, 128.0 * 32.0};
  }
  throw std::logic_error("no such format");
}

uint64_t splitmix(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Fills every matrix's blocks: chunks of blocks, each from its own stream, on every core.
void fill_blocks(QuantizedModel& m) {
  struct Chunk {
    std::vector<std::byte>* bytes;
    size_t first, end;  // block range
    size_t block_bytes;
    const ScaleLayout* layout;
    uint16_t scale;  // float16 bits
  };
  std::map<QuantFormat, ScaleLayout> layouts;
  std::vector<Chunk> chunks;
  for (auto& [name, matrix] : m.blocks) {
    const QuantFormat f = matrix.format;
    layouts.emplace(f, scale_layout(f));
    const auto info = cuda::quant_format_info(f);
    const size_t block_bytes = size_t(info.block_bytes), blocks = matrix.bytes.size() / block_bytes;
    const double fan_in = double(matrix.cols);  // [out, in]: a row's length
    const uint16_t scale = float_to_half(float(std::sqrt(3.0 / fan_in) / layouts.at(f).reach));
    for (size_t at = 0; at < blocks; at += 1 << 16)
      chunks.push_back({&matrix.bytes, at, std::min(blocks, at + (1 << 16)), block_bytes, &layouts.at(f), scale});
  }
  std::atomic<size_t> next{0};
  const auto worker = [&] {
    for (size_t i; (i = next++) < chunks.size();) {
      const Chunk& c = chunks[i];
      uint64_t state = 0x9E3779B97F4A7C15ull * (i + 1);
      std::byte* p = c.bytes->data() + c.first * c.block_bytes;
      std::byte* end = c.bytes->data() + c.end * c.block_bytes;
      for (; p + 8 <= end; p += 8) {
        const uint64_t z = splitmix(state);
        for (int k = 0; k < 8; ++k) p[k] = std::byte((z >> (8 * k)) & 0xFF);
      }
      for (; p < end; ++p) p[0] = std::byte(splitmix(state) & 0xFF);
      for (size_t b = c.first; b < c.end; ++b)
        for (const size_t at : c.layout->offsets) {
          std::byte* s = c.bytes->data() + b * c.block_bytes + at;
          s[0] = std::byte(c.scale & 0xFF);
          s[1] = std::byte(c.scale >> 8);
        }
    }
  };
  std::vector<std::thread> threads(std::max(1u, std::thread::hardware_concurrency()));
  for (auto& t : threads) t = std::thread(worker);
  for (auto& t : threads) t.join();
}

// Which of the perf model's matrices a weight-table row is, by the row's
// field (weight_table.h); nullopt for the vectors (norms, biases).
std::optional<cuda::perf::Matrix> matrix_of(const WeightRow& row) {
  using cuda::perf::Matrix;
  using L = LayerWeights;
  using M = ModelWeights;
  static const std::pair<WeightField, Matrix> kMatrices[] = {
      {&L::wq, Matrix::Q},       {&L::wk, Matrix::K},         {&L::wv, Matrix::V},
      {&L::wo, Matrix::O},       {&L::w_gate, Matrix::Gate},  {&L::w_up, Matrix::Up},
      {&L::w_down, Matrix::Down}, {&M::classifier, Matrix::Classifier}, {&M::token_embedding, Matrix::Embedding}};
  for (const auto& [field, matrix] : kMatrices)
    if (field == row.field) return matrix;
  if (row.rank() == 2) throw std::logic_error(std::string("random_quantized_model: no perf-model matrix for ") + row.gguf_name);
  return std::nullopt;
}

}  // namespace

QuantizedModel random_quantized_model(const ModelConfig& config, cuda::perf::Weights preset) {
  if (preset == cuda::perf::Weights::BF16) throw std::invalid_argument("random_quantized_model: bf16 is not quantized");
  QuantizedModel m;
  m.config = config;
  for (const ModelTensor& t : model_tensors(config, false)) {
    const auto which = matrix_of(*t.row);
    if (!which) {  // a norm: near 1
      std::vector<float> v(t.shape.at(0));
      for (size_t i = 0; i < v.size(); ++i) v[i] = 0.9f + 0.2f * float(i % 7) / 7.0f;
      m.vectors[t.gguf_name()] = std::move(v);
      continue;
    }
    const auto f = cuda::perf::matrix_format(preset, *which, std::max(t.layer, 0), config.n_layers);
    const auto info = cuda::quant_format_info(*f);
    if (t.shape.at(1) % size_t(info.block_elements) != 0)
      throw std::invalid_argument("random_quantized_model: " + t.gguf_name() + "'s rows of " +
                                  std::to_string(t.shape.at(1)) + " are not whole " + std::string(info.name) + " blocks");
    m.blocks[t.gguf_name()] = {*f, std::vector<std::byte>(cuda::quant_matrix_bytes(*f, t.shape.at(0), t.shape.at(1))),
                               t.shape.at(1), *which == cuda::perf::Matrix::Embedding};
  }
  fill_blocks(m);
  return m;
}

ModelSource QuantizedModel::source() const {
  ModelSource s;
  s.config = config;
  s.tied = false;
  s.read = [this](const ModelTensor& t) {
    const auto it = vectors.find(t.gguf_name());
    if (it == vectors.end()) throw std::logic_error("QuantizedModel: " + t.gguf_name() + " is only blocks");
    return it->second;
  };
  s.blocks = [this](const ModelTensor& t) -> std::optional<TensorBlocks> {
    const auto it = blocks.find(t.gguf_name());
    if (it == blocks.end()) return std::nullopt;
    return TensorBlocks{std::string(cuda::quant_format_info(it->second.format).name), it->second.bytes, nullptr};
  };
  for (const auto& [name, b] : blocks)
    s.stored[name] = StoredTensor{std::string(cuda::quant_format_info(b.format).name), b.bytes.size()};
  return s;
}

double QuantizedModel::step_weight_bytes(int batch) const {
  double bytes = 0.0;
  for (const auto& [name, b] : blocks)
    bytes += b.embedding ? double(b.bytes.size()) / config.vocab_size * batch : double(b.bytes.size());
  for (const auto& [name, v] : vectors) bytes += 2.0 * double(v.size());
  return bytes;
}

}  // namespace astrai::bench
