// The kernels on quantized weights, for each device format: the mat-vec
// (launch_matvec_quant, matvec_quant.cu) and the dequantizer of prefill
// (launch_dequantize, dequantize.cu), on random blocks (random bytes, so every nibble and
// bit pattern comes up, with finite float16 scales written over them), x in
// the storage type, 1-8 rows. Reference: the host decoders
// (engine/model_files/quant/, ggml's values bit for bit) turn the blocks into
// float32 weights; linear() multiplies them, or (dequantize) they are rounded
// to the storage type.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <memory>
#include <random>
#include <stdexcept>
#include <span>
#include <string>

#include <xtensor/xtensor.hpp>

#include "cuda/bf16_host.h"
#include "cuda/kernel_cases/device_arrays.h"
#include "cuda/kernel_cases/kernel_case.h"
#include "cuda/kernels/kernels.h"
#include "engine/model_files/float_formats.h"
#include "engine/model_files/gguf/gguf_types.h"
#include "engine/model_files/quant/dequantize.h"
#include "reference/linear.h"

namespace astrai::cuda::cases {
namespace {

GgmlType ggml_type_of(QuantFormat f) {
  switch (f) {
    case QuantFormat::Q8_0: return GgmlType::Q8_0;
    case QuantFormat::Q4_0: return GgmlType::Q4_0;
    case QuantFormat::Q4_K: return GgmlType::Q4_K;
    case QuantFormat::Q5_K: return GgmlType::Q5_K;
    case QuantFormat::Q6_K: return GgmlType::Q6_K;
  }
  throw std::logic_error("no such format");
}

// Byte offsets of a block's float16 fields: d (and dmin for Q4_K/Q5_K).
std::vector<size_t> half_offsets(QuantFormat f) {
  switch (f) {
    case QuantFormat::Q8_0:
    case QuantFormat::Q4_0: return {0};
    case QuantFormat::Q4_K:
    case QuantFormat::Q5_K: return {0, 2};
    case QuantFormat::Q6_K: return {208};
  }
  return {};
}

// `blocks` random blocks of format f: random bytes, and each float16 a random
// finite scale of either sign in [2^-12, 2^-4] (weights then of order 1).
std::vector<std::byte> random_blocks(QuantFormat f, size_t blocks, uint32_t seed) {
  const QuantFormatInfo info = quant_format_info(f);
  std::mt19937 rng(seed);
  std::vector<std::byte> out(blocks * size_t(info.block_bytes));
  for (auto& b : out) b = std::byte(rng() & 0xFF);
  std::uniform_real_distribution<float> exponent(-12.0f, -4.0f);
  for (size_t b = 0; b < blocks; ++b)
    for (const size_t at : half_offsets(f)) {
      const float scale = std::exp2(exponent(rng)) * (rng() % 2 ? 1.0f : -1.0f);
      const uint16_t bits = float_to_half(scale);
      out[b * size_t(info.block_bytes) + at] = std::byte(bits & 0xFF);
      out[b * size_t(info.block_bytes) + at + 1] = std::byte(bits >> 8);
    }
  return out;
}

struct MatvecQuantRun final : KernelRun {
  QuantFormat format;
  DType t;
  int rows, in, out;
  std::vector<float> x;
  std::vector<std::byte> w;
  DeviceBuffer d_x, d_w, d_y;
  explicit MatvecQuantRun(const KernelShape& s)
      : format(kQuantFormats[size_t(s["format"])]), t(s.dtype), rows(s["rows"]),
        in(s["blocks"] * quant_format_info(format).block_elements), out(s["out"]),
        x(test::random_values(size_t(rows) * size_t(in), s.seed, t)),
        w(random_blocks(format, size_t(out) * size_t(s["blocks"]), s.seed + 1)), d_x(test::upload(x, t)),
        d_w(test::upload_bytes(w.data(), w.size(), 1, "quantized weights")),
        d_y(test::nan_filled(size_t(rows) * size_t(out), DType::Float32)) {
    bytes = double(w.size()) + double(dtype_size(t)) * rows * in + 4.0 * rows * out;
    flops = 2.0 * double(rows) * in * out;
  }
  void launch(int variant, cudaStream_t stream) override {
    if (variant != 1) throw std::invalid_argument("matvec_quant has no variant " + std::to_string(variant));
    launch_matvec_quant(d_x.get(), t, d_w.get(), format, rows, in, out, d_y.as<float>(), out, stream);
  }
  std::vector<float> result() override { return test::download(d_y, size_t(rows) * size_t(out), DType::Float32); }
  // Each output is a float32 dot product of `in` terms on both sides, summed
  // in other orders; two orders differ by at most about 2 in u sum_k |x_k w_k|
  // (Higham's gamma_n, u = 2^-24). Random blocks give weights up to 127
  // times their scale, so a row's terms can cancel to a value far below
  // them (a shuffled-thread run: Q8_0, 608 terms, one output, off by 3e-5 of
  // its value), which a tolerance relative to the outputs alone misses.
  std::string check(double rtol) override {
    const std::vector<float> got = result(), want = expected();
    std::vector<float> w_values(size_t(out) * size_t(in));
    quant::dequantize(ggml_type_of(format), w, w_values);
    double mean = 0.0;
    for (const float v : want) mean += std::fabs(double(v)) / double(want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      const size_t r = i / size_t(out), j = i % size_t(out);
      double terms = 0.0;
      for (size_t k = 0; k < size_t(in); ++k)
        terms += std::fabs(double(x[r * size_t(in) + k]) * double(w_values[j * size_t(in) + k]));
      const double allowed = rtol * (std::fabs(double(want[i])) + mean) + 2.0 * in * std::ldexp(1.0, -24) * terms;
      if (!(std::fabs(double(got[i]) - double(want[i])) <= allowed))
        return "element " + std::to_string(i) + ": actual " + std::to_string(got[i]) + ", expected " +
               std::to_string(want[i]) + " (allowed error " + std::to_string(allowed) + ")";
    }
    return "";
  }
  std::vector<float> expected() override {
    xt::xtensor<float, 2> X({size_t(rows), size_t(in)}), W({size_t(out), size_t(in)});
    std::copy(x.begin(), x.end(), X.begin());
    quant::dequantize(ggml_type_of(format), w, std::span<float>(W.data(), W.size()));
    const auto y = linear(X, W);
    return {y.begin(), y.end()};
  }
};

struct DequantizeRun final : KernelRun {
  QuantFormat format;
  DType t;
  int rows, cols;
  std::vector<std::byte> w;
  DeviceBuffer d_w, d_out;
  explicit DequantizeRun(const KernelShape& s)
      : format(kQuantFormats[size_t(s["format"])]), t(s.dtype), rows(s["out"]),
        cols(s["blocks"] * quant_format_info(format).block_elements),
        w(random_blocks(format, size_t(rows) * size_t(s["blocks"]), s.seed + 1)),
        d_w(test::upload_bytes(w.data(), w.size(), 1, "quantized weights")),
        d_out(test::nan_filled(size_t(rows) * size_t(cols), t)) {
    bytes = double(w.size()) + double(dtype_size(t)) * rows * cols;
  }
  void launch(int variant, cudaStream_t stream) override {
    if (variant != 1) throw std::invalid_argument("dequantize has no variant " + std::to_string(variant));
    launch_dequantize(d_w.get(), format, rows, cols, d_out.get(), t, stream);
  }
  std::vector<float> result() override { return test::download(d_out, size_t(rows) * size_t(cols), t); }
  std::vector<float> expected() override {
    std::vector<float> v(size_t(rows) * size_t(cols));
    quant::dequantize(ggml_type_of(format), w, v);
    if (t == DType::BFloat16)
      for (float& x : v) x = round_to_bf16(x);
    return v;
  }
};

// The gather of a token embedding kept quantized: random blocks for `out`
// vocabulary rows, `rows` random tokens.
struct EmbeddingQuantRun final : KernelRun {
  QuantFormat format;
  int vocab, dim, rows;
  std::vector<std::byte> table;
  std::vector<int> tokens;
  DeviceBuffer d_table, d_tokens, d_x;
  explicit EmbeddingQuantRun(const KernelShape& s)
      : format(kQuantFormats[size_t(s["format"])]), vocab(s["out"]),
        dim(s["blocks"] * quant_format_info(format).block_elements), rows(s["rows"]),
        table(random_blocks(format, size_t(vocab) * size_t(s["blocks"]), s.seed + 1)),
        d_table(test::upload_bytes(table.data(), table.size(), 1, "quantized embedding")) {
    std::mt19937 rng(s.seed);
    for (int r = 0; r < rows; ++r) tokens.push_back(int(rng() % uint32_t(vocab)));
    d_tokens = test::upload_ints(tokens);
    d_x = test::nan_filled(size_t(rows) * size_t(dim), DType::Float32);
    bytes = double(rows) * (double(table.size()) / vocab + 4.0 * dim);
  }
  void launch(int variant, cudaStream_t stream) override {
    if (variant != 1) throw std::invalid_argument("embedding_quant has no variant " + std::to_string(variant));
    launch_embedding_gather_quant(d_table.get(), format, dim, d_tokens.as<int>(), rows, 1.0f, d_x.as<float>(),
                                  stream);
  }
  std::vector<float> result() override { return test::download(d_x, size_t(rows) * size_t(dim), DType::Float32); }
  std::vector<float> expected() override {
    std::vector<float> all(size_t(vocab) * size_t(dim)), out;
    quant::dequantize(ggml_type_of(format), table, all);
    for (const int token : tokens)
      out.insert(out.end(), all.begin() + long(token) * dim, all.begin() + long(token + 1) * dim);
    return out;
  }
};

KernelShape quant_shape(QuantFormat f, int rows, int in, int out) {
  const int format = int(std::find(std::begin(kQuantFormats), std::end(kQuantFormats), f) - std::begin(kQuantFormats));
  return {DType::BFloat16, 1,
          {{"format", format}, {"rows", rows}, {"blocks", in / quant_format_info(f).block_elements}, {"out", out}}};
}

}  // namespace

KernelCase matvec_quant_case() {
  std::vector<KernelShape> bench;
  // Llama-3-8B's decode mat-vecs at one row, each launch of the performance
  // report's Q4_K_M and Q8_0 steps (cuda/perf_model/decode_step.cpp: one per
  // matrix): q and output 4096->4096, k and v 4096->1024, gate and up
  // 4096->14336, down 14336->4096, the classifier 4096->128256. Q4_K_M
  // stores v and down in Q6_K in half the layers and the classifier in Q6_K
  // (cuda/perf_model/weight_formats.cpp); Q8_0 stores every matrix in Q8_0.
  // Then the stacked qkv width 4096->6144 in each format (beside the bf16
  // GEMM's), and Q4_K at 8 rows, the mat-vec's most.
  for (const QuantFormat f : {QuantFormat::Q4_K, QuantFormat::Q8_0}) {
    bench.push_back(quant_shape(f, 1, 4096, 4096));
    bench.push_back(quant_shape(f, 1, 4096, 1024));
    bench.push_back(quant_shape(f, 1, 4096, 14336));
    bench.push_back(quant_shape(f, 1, 14336, 4096));
  }
  bench.push_back(quant_shape(QuantFormat::Q6_K, 1, 4096, 1024));
  bench.push_back(quant_shape(QuantFormat::Q6_K, 1, 14336, 4096));
  for (const QuantFormat f : {QuantFormat::Q6_K, QuantFormat::Q8_0}) bench.push_back(quant_shape(f, 1, 4096, 128256));
  for (const QuantFormat f : {QuantFormat::Q4_K, QuantFormat::Q6_K, QuantFormat::Q8_0})
    bench.push_back(quant_shape(f, 1, 4096, 6144));
  bench.push_back(quant_shape(QuantFormat::Q4_K, 8, 4096, 6144));
  return {"matvec_quant", "cuda/kernels/matvec_quant.cu", "linear() in reference/linear.cpp on the host decoders' weights",
          1,
          {1e-5, 1e-5,
           "the device decodes each weight with the host decoder's float operations (the same values), x is exact "
           "in its type, and both sides accumulate in float32: only the order of the sum differs, bounded per "
           "output by 2 in 2^-24 of its terms' magnitudes (check() says why)"},
          [](const Pick& pick) {
            const int format = pick(0, int(std::size(kQuantFormats)) - 1);
            const int blocks = quant_format_info(kQuantFormats[size_t(format)]).block_elements == 32 ? pick(1, 24)
                                                                                                     : pick(1, 4);
            return KernelShape{pick(0, 1) ? DType::BFloat16 : DType::Float32, uint32_t(pick(0, 1 << 30)),
                               {{"format", format}, {"rows", pick(1, kMatvecMaxRows)}, {"blocks", blocks},
                                {"out", pick(1, 40)}}};
          },
          bench, [](const KernelShape& s) { return std::make_unique<MatvecQuantRun>(s); }};
}

KernelCase dequantize_case() {
  return {"dequantize", "cuda/kernels/dequantize.cu", "quant::dequantize() in engine/model_files/quant/, rounded to the storage type",
          1, {0.0, 0.0, "exact: the host decoders' float operations, then one rounding to the storage type on both sides"},
          [](const Pick& pick) {
            const int format = pick(0, int(std::size(kQuantFormats)) - 1);
            const int blocks = quant_format_info(kQuantFormats[size_t(format)]).block_elements == 32 ? pick(1, 24)
                                                                                                     : pick(1, 4);
            return KernelShape{pick(0, 1) ? DType::BFloat16 : DType::Float32, uint32_t(pick(0, 1 << 30)),
                               {{"format", format}, {"rows", 1}, {"blocks", blocks}, {"out", pick(1, 40)}}};
          },
          // A prefill slice of Llama-3-8B's gate/up (2,048 rows of 4,096) and its down projection, Q4_K and Q6_K.
          {quant_shape(QuantFormat::Q4_K, 1, 4096, 2048), quant_shape(QuantFormat::Q6_K, 1, 14336, 2048)},
          [](const KernelShape& s) { return std::make_unique<DequantizeRun>(s); }};
}

}  // namespace astrai::cuda::cases

namespace astrai::cuda::cases {

KernelCase embedding_quant_case() {
  return {"embedding_quant", "cuda/kernels/embedding.cu",
          "quant::dequantize() in engine/model_files/quant/, then embed() in reference/forward.cpp", 1,
          {0.0, 0.0, "exact: the host decoders' float operations on both sides, written as float32"},
          [](const Pick& pick) {
            const int format = pick(0, int(std::size(kQuantFormats)) - 1);
            const int blocks = quant_format_info(kQuantFormats[size_t(format)]).block_elements == 32 ? pick(1, 24)
                                                                                                     : pick(1, 4);
            return KernelShape{DType::Float32, uint32_t(pick(0, 1 << 30)),
                               {{"format", format}, {"rows", pick(1, 40)}, {"blocks", blocks}, {"out", pick(1, 300)}}};
          },
          // Llama-3-8B's Q4_K token embedding, a prefill of 256 tokens.
          {quant_shape(QuantFormat::Q4_K, 256, 4096, 128256)},
          [](const KernelShape& s) { return std::make_unique<EmbeddingQuantRun>(s); }};
}

}  // namespace astrai::cuda::cases
