// Files quantized by llama.cpp itself (llama_cpp_oracle.h: its quantizer via
// libllama, its inference via node-llama-cpp), read by AstrAI:
//  - every quantized tensor decodes as ggml's own dequantize_row does it;
//  - every quantized tensor's error against the original float32 weights is
//    within its type's bound (kWeightBound), and the presets really contain
//    the types they are meant to exercise;
//  - AstrAI's logits on the dequantized weights are within the stated
//    multiple of that weight error of its logits on the original weights;
//  - AstrAI's greedy tokens equal llama.cpp's over the decided steps.
// A synthetic model whose widths are multiples of 256 gets real K-quant
// tensors; stories260K (dim 64, hidden 172) gets llama.cpp's fallback types.
// Files AstrAI quantizes itself (`astrai convert --type`) get the same
// checks. Prints each file's measured errors (docs/model-files.md quotes them).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/model_files/gguf/gguf_reader.h"
#include "engine/model_files/load_model.h"
#include "engine/model_files/quant/dequantize.h"
#include "reference/generate.h"
#include "reference/synthetic_model.h"
#include "gguf_test_files.h"
#include "llama_cpp_agreement.h"
#include "llama_cpp_oracle.h"
#include "tests/support/greedy_margins.h"
#include "tests/support/sanitized_build.h"
#include "tests/support/shared_data.h"

using namespace astrai;

namespace {

// Upper bounds of a tensor's relative error ||W_q - W||_F / ||W||_F by its
// storage type, for weights drawn as these models' are (about normal): a
// uniform rounding error of half a step of a b-bit grid spanning a block's
// range is about range / (2^b sqrt(12)), i.e. roughly 2^-b times the
// block's spread; each bound is about twice what the type measures on the
// synthetic model (printed by this test), so a decoder that misplaces a
// scale, a nibble or a sign (errors of order 1) fails by far.
double weight_bound(GgmlType type) {
  switch (type) {
    case GgmlType::F32: return 0.0;
    case GgmlType::F16: return 1e-3;
    case GgmlType::Q8_0: return 0.01;
    case GgmlType::Q6_K: return 0.03;
    case GgmlType::Q5_0: case GgmlType::Q5_1: case GgmlType::Q5_K: return 0.06;
    case GgmlType::Q4_0: case GgmlType::Q4_1: case GgmlType::Q4_K: case GgmlType::IQ4_NL: return 0.12;
    case GgmlType::Q3_K: return 0.25;
    case GgmlType::Q2_K: return 0.5;
    default: FAIL("no bound for " << ggml_type_name(type)); return 0;
  }
}

double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = double(got[i]) - double(want[i]);
    num += d * d;
    den += double(want[i]) * double(want[i]);
  }
  return std::sqrt(num / den);
}

// Every matrix and expert stack of the model (the classifier too, tied or
// not), walking the weight table.
std::vector<ModelTensor> matrices(const ModelConfig& c) {
  std::vector<ModelTensor> m;
  for (const auto& t : model_tensors(c, /*tied=*/false))
    if (t.shape.size() >= 2) m.push_back(t);
  return m;
}

// Logits on dequantized weights may differ from the float32 model's by at
// most this multiple of the largest tensor error: each matrix's error
// reaches the logits about in proportion (RMSNorm keeps the residual's scale),
// and the errors of the model's 2 + 7 L matrices add up partly at random.
// The synthetic models measure 0.3 to 0.9 times the largest tensor error.
constexpr double kLogitFactor = 3.0;

struct Preset {
  std::string name;
  std::set<GgmlType> must_contain;  // types the file must really hold
};

struct ModelCase {
  std::string label;
  std::filesystem::path f32_gguf;
  std::vector<std::vector<int>> prompts;
};

// A quantized file of the model (`preset.name` names it in messages): its
// tensors against ggml's decoding and the original weights, its logits
// against the float32 model's, llama.cpp's run of it against AstrAI's.
void check_file(const ModelCase& mc, const LoadedModel& original, const Preset& preset,
                const std::filesystem::path& path) {
  INFO(mc.label << " " << preset.name);

  // The tensors' types, and each tensor's error within its type's bound.
  const GgufReader file(path.string());
  const LoadedModel q = load_model(path.string());
  std::map<GgmlType, double> worst;  // per type
  double largest = 0;
  const ModelSource got_source = model_source(q.weights), want_source = model_source(original.weights);
  for (const ModelTensor& t : matrices(q.weights.config)) {
    const std::string name = t.gguf_name();
    const auto* info = file.find_tensor(name);
    const GgmlType type = info ? info->type : file.tensor("token_embd.weight").type;  // tied output
    const double err = relative_error(got_source.read(t), want_source.read(t));
    INFO(name << " " << ggml_type_name(type));
    CHECK(err <= weight_bound(type));
    worst[type] = std::max(worst[type], err);
    largest = std::max(largest, err);
  }
  // Every quantized tensor of the file reads as ggml's own dequantize_row
  // gives it, value for value (exact: see test_ggml_rows.cpp, which also
  // compares the bits).
  for (const auto& [type, err] : worst) {
    if (!quant::can_dequantize(type)) continue;
    std::vector<std::byte> blocks;
    std::vector<float> ours;
    for (const auto& t : file.tensors()) {
      if (t.type != type) continue;
      const auto data = file.tensor_data(t);
      blocks.insert(blocks.end(), data.begin(), data.end());
      std::vector<float> values(t.n_elements);
      file.read_tensor_floats(t, values);
      ours.insert(ours.end(), values.begin(), values.end());
    }
    INFO(ggml_type_name(type) << ": AstrAI's values against ggml's");
    CHECK(test::ggml_dequantize(type, blocks) == ours);  // no NaN in a quantized model
  }
  for (const GgmlType t : preset.must_contain) {
    INFO("the file holds no " << ggml_type_name(t) << " tensor");
    CHECK(worst.contains(t));
  }

  // Logits on the dequantized weights against the float32 model's. In a
  // Mixture-of-Experts model a weight error larger than a routing margin
  // may rightly run another expert, which moves the logits by that expert's
  // share, not in proportion: such prompts are left to the comparison with
  // llama.cpp on the same file below (llama_cpp_agreement.h).
  double logit_err = 0;
  for (const auto& p : mc.prompts) {
    if (test::routing_margins(original.weights, p).back() < kLogitFactor * largest) continue;
    logit_err = std::max(logit_err, test::normwise_difference(test::prompt_logits(q.weights, p),
                                                              test::prompt_logits(original.weights, p)));
  }
  CHECK(logit_err <= kLogitFactor * largest);

  // llama.cpp's run of the same file against AstrAI's (llama_cpp_agreement.h).
  const test::Agreement a = test::check_llama_cpp_agrees(path, q, mc.prompts, 32);
  std::string types;
  for (const auto& [t, e] : worst) types += " " + ggml_type_name(t) + "=" + std::to_string(e);
  std::printf("%s %s: tensor error by type%s; logits %.4f (largest tensor %.4f); %zu greedy steps compared; llama.cpp's distributions within %.4f\n",
              mc.label.c_str(), preset.name.c_str(), types.c_str(), logit_err, largest, a.decided,
              a.worst_distribution);
  // A comparison over no step would prove nothing. The random synthetic
  // model's logits are flat (often only the first step of a prompt is
  // decided at 2e-2: 2 to 8 of 96 steps); stories260K decides 6 to 11.
  CHECK(a.decided >= 2);
}

// A file llama.cpp quantizes with a llama-quantize preset.
void check_preset(const ModelCase& mc, const LoadedModel& original, const Preset& preset) {
  const auto path = test::scratch_file(mc.label + "-" + preset.name);
  test::llama_cpp_quantize(mc.f32_gguf, path, preset.name);
  check_file(mc, original, preset, path);
}

// The synthetic model whose rows are 256 or 512 wide (so llama.cpp really
// uses K-quants), written as an F32 GGUF, with its prompts.
ModelCase wide_model(const std::string& label) {
  ModelConfig c;
  c.dim = 256, c.hidden_dim = 512, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2, c.vocab_size = 512,
  c.max_seq_len = 256;
  ModelCase mc{label, test::scratch_file(label), {{1, 300, 301, 302}, {1, 50}, {1, 400, 12, 99, 7}}};
  write_gguf_model(mc.f32_gguf.string(), make_synthetic_weights(c, 7), make_synthetic_tokenizer(c.vocab_size),
                   GgufDType::F32, label);
  return mc;
}

// The same for Mixture-of-Experts models of llama.cpp's qwen3moe (8 experts,
// top 2, renormalised) and `llama` with experts (Mixtral: 4, top 2), expert
// rows of 256: their quantized files are mostly expert stacks, which the
// presets give mixed types (Q4_K_M: Q4_K and Q6_K down projections).
ModelCase wide_moe_model(const std::string& label, bool mixtral) {
  ModelConfig c;
  c.dim = 256, c.hidden_dim = 256, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2, c.vocab_size = 512,
  c.max_seq_len = 256;
  c.rope_layout = RopeLayout::RotateHalf;
  c.options.moe = mixtral ? MoeModule::BlockSparseMoe : MoeModule::Mlp;
  c.options.qk_norm = !mixtral;
  c.moe = {.n_experts = mixtral ? 4 : 8, .n_experts_used = 2, .expert_hidden_dim = 256, .norm_topk_prob = true};
  ModelCase mc{label, test::scratch_file(label), {{1, 300, 301, 302}, {1, 50}, {1, 400, 12, 99, 7}}};
  write_gguf_model(mc.f32_gguf.string(), make_synthetic_weights(c, 7), make_synthetic_tokenizer(c.vocab_size),
                   GgufDType::F32, label);
  return mc;
}

// Under AddressSanitizer one preset per model: the rest repeat the same AstrAI code paths.
std::vector<Preset> share(std::vector<Preset> presets) {
  if (test::kSanitizedBuild) presets.resize(1);
  return presets;
}

}  // namespace

TEST_CASE("llama.cpp's quantized files of a model with 256-wide rows (real K-quants)", "[llama.cpp]") {
  if (!test::llama_cpp_oracle_available()) return;
  const ModelCase mc = wide_model("synthetic256");
  const LoadedModel original = load_model(mc.f32_gguf.string());
  using T = GgmlType;
  for (const auto& p : share({{"Q4_K_M", {T::Q4_K, T::Q6_K}},
                              {"Q8_0", {T::Q8_0}},
                              {"Q4_0", {T::Q4_0}},
                              {"Q4_1", {T::Q4_1}},
                              {"Q5_0", {T::Q5_0}},
                              {"Q5_1", {T::Q5_1}},
                              {"Q2_K", {T::Q2_K, T::Q3_K}},
                              {"Q3_K_M", {T::Q3_K}},
                              {"Q5_K_M", {T::Q5_K}},
                              {"Q6_K", {T::Q6_K}}}))
    check_preset(mc, original, p);
}

TEST_CASE("llama.cpp's quantized Mixture-of-Experts files (qwen3moe, Mixtral), mixed types in the expert stacks",
          "[llama.cpp]") {
  if (!test::llama_cpp_oracle_available()) return;
  using T = GgmlType;
  // The presets that mix types in the stacks for qwen3moe; one for Mixtral
  // (the same stacks under llama's names). Q8_0 and Q6_K alone repeat the
  // decoders test_llama_cpp_files' dense model checks.
  for (const bool mixtral : {false, true}) {
    if (test::kSanitizedBuild && mixtral) continue;  // one model under the sanitizers: the same code paths
    const ModelCase mc = wide_moe_model(mixtral ? "mixtral256" : "qwen3moe256", mixtral);
    const LoadedModel original = load_model(mc.f32_gguf.string());
    const std::vector<Preset> presets = mixtral ? std::vector<Preset>{{"Q4_K_M", {T::Q4_K, T::Q6_K}}}
                                                : std::vector<Preset>{{"Q4_K_M", {T::Q4_K, T::Q6_K}},
                                                                      {"Q5_K_M", {T::Q5_K}}};
    for (const auto& p : share(presets)) check_preset(mc, original, p);
  }
}

TEST_CASE("llama.cpp's quantized stories260K (rows of 64 and 172: fallback types)", "[llama.cpp]") {
  if (!test::llama_cpp_oracle_available()) return;
  ASTRAI_REQUIRE_SHARED(model, "models/stories260K/stories260K.bin");
  ModelCase mc{"stories260K", test::scratch_file("stories260K"), {{1, 403, 407, 261, 378}, {1, 300}, {1, 80, 81}}};
  convert_to_gguf(model.string(), "", mc.f32_gguf.string(), GgufDType::F32);
  const LoadedModel original = load_model(mc.f32_gguf.string());
  using T = GgmlType;
  for (const auto& p : share({{"Q4_K_M", {T::Q5_0, T::Q8_0}},
                              {"Q2_K", {}},
                              {"Q5_K_S", {T::Q5_1}},
                              {"Q6_K", {T::Q8_0}}}))
    check_preset(mc, original, p);
}

TEST_CASE("files AstrAI quantized: llama.cpp runs them as AstrAI does", "[llama.cpp]") {
  if (!test::llama_cpp_oracle_available()) return;
  const ModelCase mc = wide_model("astrai256");
  const LoadedModel original = load_model(mc.f32_gguf.string());
  using T = GgmlType;
  const std::vector<std::pair<GgufDType, T>> types = {
      {GgufDType::Q4_K, T::Q4_K}, {GgufDType::Q8_0, T::Q8_0}, {GgufDType::Q4_0, T::Q4_0}, {GgufDType::Q6_K, T::Q6_K}};
  for (const auto& [dtype, type] : types) {
    const auto path = test::scratch_file("astrai256-" + gguf_dtype_name(dtype));
    write_gguf_model(path.string(), original.weights, original.tokenizer, dtype, "astrai256");
    check_file(mc, original, {"astrai-" + gguf_dtype_name(dtype), {type}}, path);
    if (test::kSanitizedBuild) break;
  }
}
