// The encoders AstrAI writes quantized files with (engine/model_files/quant/
// encode_*.cpp): quantize -> dequantize stays within each type's error
// bound, and write_gguf_model stores each matrix in the type asked for or
// its fallback. (That the bytes are llama.cpp's own is checked against
// ggml's quantizer in test_ggml_rows.cpp, which needs the npm packages.)
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "engine/model_files/gguf/gguf_reader.h"
#include "engine/model_files/load_model.h"
#include "engine/model_files/quant/dequantize.h"
#include "engine/model_files/quant/quantize.h"
#include "gguf_test_files.h"
#include "reference/synthetic_model.h"

using namespace astrai;

namespace {

std::vector<float> round_trip(GgmlType type, const std::vector<float>& x) {
  const auto traits = *ggml_type_traits(uint32_t(type));
  std::vector<std::byte> blocks(x.size() / traits.block_size * traits.block_bytes);
  quant::quantize(type, x, blocks);
  std::vector<float> y(x.size());
  quant::dequantize(type, blocks, y);
  return y;
}

// Weights of one block: normal-ish values of a random scale (2^-12 .. 2^4),
// as real weight rows are.
rc::Gen<std::vector<float>> gen_block(size_t n) {
  return rc::gen::exec([n] {
    const float scale = std::ldexp(1.0f, *rc::gen::inRange(-12, 5));
    const auto units = *rc::gen::container<std::vector<int>>(n, rc::gen::inRange(-1000, 1001));
    std::vector<float> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = scale * float(units[i]) / 1000.0f;
    return x;
  });
}

float amax(const std::vector<float>& x) {
  float m = 0;
  for (float v : x) m = std::max(m, std::fabs(v));
  return m;
}

double relative_rms(const std::vector<float>& y, const std::vector<float>& x) {
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) num += (double(y[i]) - x[i]) * (double(y[i]) - x[i]), den += double(x[i]) * x[i];
  return den == 0 ? 0 : std::sqrt(num / den);
}

}  // namespace

// d's rounding to float16: 2^-11 relative, or half the subnormal quantum
// 2^-24 for scales below 2^-14 (weights below about 2^-7 in a Q8_0 block).
float half_rounding(float d) { return std::fabs(d) * 0x1p-11f + 0x1p-25f; }

TEST_CASE("Q8_0 round trip: within half a step plus the scale's rounding", "[quant]") {
  // Half a step d = max|x| / 127, plus d's float16 rounding times a quant of
  // at most 127 (a little float32 rounding besides: the 1.01).
  rc::prop("Q8_0", [] {
    const auto x = *gen_block(32);
    const auto y = round_trip(GgmlType::Q8_0, x);
    const float d = amax(x) / 127;
    for (size_t i = 0; i < x.size(); ++i) RC_ASSERT(std::fabs(y[i] - x[i]) <= 1.01f * (0.5f * d + 127 * half_rounding(d)));
  });
}

TEST_CASE("Q4_0 round trip: within one step plus the scale's rounding", "[quant]") {
  // d = m / -8 for the value m of largest magnitude, so -m lands on +8, one
  // past the largest code (7): the error there is a whole step |d|; elsewhere
  // at most half a step; plus d's float16 rounding times at most 8.
  rc::prop("Q4_0", [] {
    const auto x = *gen_block(32);
    const auto y = round_trip(GgmlType::Q4_0, x);
    const float d = amax(x) / 8;
    for (size_t i = 0; i < x.size(); ++i) RC_ASSERT(std::fabs(y[i] - x[i]) <= 1.01f * (d + 8 * half_rounding(d)));
  });
}

TEST_CASE("Q4_K and Q6_K round trips: relative errors within their bounds", "[quant]") {
  // No per-element bound (the scale searches trade one element's error for
  // the group's), so the block's relative RMS error: uniform rounding over
  // 15 and 63 levels gives about 0.05 and 0.012 on such blocks (measured on
  // whole tensors: 0.055 and 0.013, docs/model-files.md); bounds of twice that.
  rc::prop("Q4_K", [] {
    const auto x = *gen_block(256);
    RC_ASSERT(relative_rms(round_trip(GgmlType::Q4_K, x), x) <= 0.12);
  });
  rc::prop("Q6_K", [] {
    const auto x = *gen_block(256);
    RC_ASSERT(relative_rms(round_trip(GgmlType::Q6_K, x), x) <= 0.03);
  });
}

TEST_CASE("write_gguf_model quantizes matrices, falling back where rows are not whole blocks", "[quant]") {
  // dim 256, hidden 172: the embedding, attention and gate/up rows are 256
  // wide; ffn_down's rows are 172 (not a multiple of 32: F16). The q4_k file
  // of a 64-wide model falls back to Q8_0 (rows of 64).
  ModelConfig wide = preset_config("tiny");
  wide.dim = 256, wide.hidden_dim = 172, wide.n_heads = 4, wide.n_kv_heads = 2, wide.vocab_size = 300;
  ModelConfig narrow = wide;
  narrow.dim = 64, narrow.hidden_dim = 96;
  for (const auto& [config, q_type, down_type] :
       {std::tuple{wide, GgmlType::Q4_K, GgmlType::F16}, std::tuple{narrow, GgmlType::Q8_0, GgmlType::Q8_0}}) {
    const ModelWeights w = make_synthetic_weights(config, 3);
    const auto path = test::scratch_file("quantized-model");
    write_gguf_model(path.string(), w, make_synthetic_tokenizer(config.vocab_size), GgufDType::Q4_K, "q");
    const GgufReader file(path.string());
    CHECK(file.tensor("token_embd.weight").type == q_type);
    CHECK(file.tensor("blk.0.attn_q.weight").type == q_type);
    CHECK(file.tensor("blk.0.ffn_down.weight").type == down_type);
    CHECK(file.tensor("blk.0.attn_norm.weight").type == GgmlType::F32);
    CHECK(file.get_int("general.file_type") == 14);
    const LoadedModel m = load_model(path.string());
    CHECK(m.weights.stored.at("blk.0.attn_q.weight").type == ggml_type_name(q_type));
    // The values read back are the encoders' round trip of the originals.
    const std::vector<float> wq(w.layers[0].wq.begin(), w.layers[0].wq.end());
    const std::vector<float> got(m.weights.layers[0].wq.begin(), m.weights.layers[0].wq.end());
    CHECK(got == round_trip(q_type, wq));  // exact: the same encoder and decoder on the same floats
    CHECK(relative_rms(got, wq) <= 0.12);
  }
}
