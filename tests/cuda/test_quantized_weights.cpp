// Quantized GGUF files on the device (issue 29): the linear layers' matrices
// stay in their file's blocks (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K), decoded in
// registers by the quantized mat-vec for decode steps and slice by slice to
// the storage type for prefill; other types are decoded at load. The oracle
// is the reference on the same file's weights decoded by the host decoders
// (ggml's values bit for bit). Checked here, in float32 (the device's
// weights are then the decoded values exactly, so only the order of float
// sums differs):
//  - files AstrAI's encoders wrote (Q8_0, Q4_0, Q4_K, Q6_K, every matrix in
//    the one type) and files llama.cpp's own quantizer wrote (Q4_K_M: Q4_K
//    with Q6_K for some; Q5_K_M: Q5_K with Q6_K; Q8_0), each with the
//    prompt's logits in one batch (prefill) and then every decode step's,
//    teacher-forced, within the float32 tolerance, and the greedy tokens
//    equal, with per-row GEMM buckets (the 12-row prompt through the
//    decoded slices, each decode step through the quantized mat-vec) and,
//    for Q4_K_M, with one algorithm per shape too (always the decoded slices);
//  - the device holds the blocks: its weight bytes are those of the file's
//    matrices, well under float32's, and the startup description says so;
//  - the refusal when the weights do not fit names the quantized types.
#include <catch2/catch.hpp>

#include <set>

#include "cuda/cuda_executor.h"
#include "cuda/device_page_cache.h"
#include "cuda/device_weights.h"
#include "cuda/quant_format.h"
#include "engine/model_files/gguf/gguf_reader.h"
#include "engine/model_files/gguf/gguf_model.h"
#include "engine/model_files/load_model.h"
#include "engine/tokenizer/synthetic_tokenizer.h"
#include "reference/dense_kv_cache.h"
#include "reference/forward.h"
#include "reference/generate.h"
#include "reference/synthetic_model.h"
#include "tests/cuda/cuda_generate.h"
#include "tests/cuda/gpu_test_support.h"
#include "tests/engine/model_files/llama_cpp_oracle.h"
#include "tests/support/greedy_margins.h"
#include "tests/support/routing_margins.h"
#include "tests/support/shared_data.h"

using namespace astrai;
using Catch::Matchers::Contains;

TEST_CASE("the out-of-memory refusal names the quantized types and what stays quantized", "[cuda]") {
  ModelSource source = synthetic_model_source(preset_config("tiny"), 1, false);
  const std::string plain = cuda::DeviceWeights::out_of_memory_message(source, cuda::DType::BFloat16, 1 << 20, 2 << 20);
  CHECK_THAT(plain, Contains("out of GPU memory: the weights of the model"));
  CHECK_THAT(plain, Contains("but only 1.0 MiB of 2.0 MiB are free (in bf16)"));
  CHECK_THAT(plain, !Contains("quantized"));
  source.stored["blk.0.attn_q.weight"] = {"Q4_K", 3 << 20};
  source.stored["blk.0.ffn_down.weight"] = {"Q6_K", 1 << 20};
  source.stored["blk.0.attn_k.weight"] = {"Q3_K", 0};
  source.stored["blk.0.attn_norm.weight"] = {"F32", 0};
  const std::string q = cuda::DeviceWeights::out_of_memory_message(source, cuda::DType::BFloat16, 1 << 20, 2 << 20);
  CHECK_THAT(q, Contains("(the file stores them quantized in 4.0 MiB; Q4_K, Q6_K matrices stay quantized on the GPU; "
                         "Q3_K are decoded to bf16; the rest is bf16)"));
}

namespace {

ModelConfig quantizable_config() {
  ModelConfig c;  // every matrix's rows whole 256-weight super-blocks
  c.dim = 256, c.hidden_dim = 512, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2, c.vocab_size = 512,
  c.max_seq_len = 64;
  return c;
}

// The file at `path` on the device, loaded as the server loads it (tensor
// by tensor from the file, open_model), against the reference on the same
// file's weights decoded: the prompt in one batch, then decode steps
// teacher-forced, then free-running greedy tokens. Also checks what the
// loader read: only tensors it does not keep quantized were decoded to
// float32 on the host, and the device holds the file's tensors at their
// size in the file (float32 storage: the float tensors are F32 in these
// files, 4 bytes each on both sides), the tied classifier once.
// both_routings: also with one algorithm per shape (every row count through
// the decoded slices, which the 12-row prompt already takes per bucket).
// prompt: token ids below the model's vocabulary.
void check_against_reference(const std::filesystem::path& path, const std::vector<std::string>& formats,
                             bool both_routings, std::vector<int> prompt = {}) {
  const auto weights = std::make_shared<const ModelWeights>(load_model(path.string()).weights);
  const ModelConfig& c = weights->config;
  if (prompt.empty()) prompt = {1, 300, 301, 302, 7, 99, 4, 250, 17, 3, 60, 511};  // 12 rows: above the mat-vec's 8
  // What the device should hold, from the file's directory: a tensor whose
  // type the device has kernels for and whose rows are whole blocks at its
  // size in the file, any other at 4 bytes a weight (float32 storage).
  const GgufReader file(path.string());
  const auto keepable = [](const GgufTensorInfo& t) {
    const auto f = cuda::quant_format_named(ggml_type_name(t.type));
    // Matrices, and expert stacks (ne {in, out, experts}), whose rows are whole blocks.
    return f && t.ne.size() >= 2 && t.ne[0] % uint64_t(cuda::quant_format_info(*f).block_elements) == 0;
  };
  size_t device_bytes = 0;
  bool any_kept = false;
  for (const auto& t : file.tensors()) {
    device_bytes += keepable(t) ? t.n_bytes : t.n_elements * 4;
    any_kept = any_kept || keepable(t);
  }
  for (const bool one_per_shape : {false, true}) {
    if (one_per_shape && !both_routings) continue;
    INFO((one_per_shape ? "one algorithm per shape" : "per-row buckets"));
    OpenedModel opened = open_model(path.string());
    std::vector<std::string> decoded;  // the tensors the loader read as float32
    const auto read = opened.weights.read;
    opened.weights.read = [&](const ModelTensor& t) {
      decoded.push_back(t.gguf_name());
      return read(t);
    };
    cuda::CudaExecutor executor(opened.weights, {cuda::DType::Float32, 0, one_per_shape});
    opened.weights = ModelSource{};  // the executor keeps nothing of the file
    for (const std::string& name : decoded) {
      INFO(name << " was decoded on the host");
      CHECK_FALSE(keepable(file.tensor(name)));
    }
    CHECK(executor.weights_bytes() == device_bytes);
    for (const std::string& f : formats) CHECK_THAT(executor.weights_description(), Contains(f));
    if (any_kept) CHECK_THAT(executor.weights_description(), Contains("matrices quantized"));
    cuda::DevicePageCache cache(c, 4, 16, cuda::DType::Float32);

    REQUIRE(cache.admit(0, prompt).value() == 0);
    std::vector<BatchToken> batch;
    for (int pos = 0; pos < int(prompt.size()); ++pos) batch.push_back({prompt[size_t(pos)], 0, pos, true});
    const auto got = executor.forward(batch, cache.view());
    cache.release(0);
    DenseKVCache dense(c, 1);
    const auto want = forward(*weights, batch, dense);
    CHECK(test::compare({got.begin(), got.end()}, {want.begin(), want.end()}, 1e-4) == "");

    GenerateOptions options;
    options.max_new_tokens = 8;
    std::vector<test::GreedyStep> steps;
    std::vector<std::vector<float>> want_rows;
    const TokenChooser record = test::recording_argmax(steps);
    const auto want_tokens = generate(*weights, prompt, options, [&](std::span<const float> row) {
      want_rows.emplace_back(row.begin(), row.end());
      return record(row);
    });
    size_t step = 0;
    std::string first_mismatch;
    test::cuda_generate(executor, cache, prompt, options, [&](std::span<const float> row) {
      const std::string d = test::compare({row.begin(), row.end()}, want_rows.at(step), 1e-4);
      if (!d.empty() && first_mismatch.empty()) first_mismatch = "step " + std::to_string(step) + ": " + d;
      return want_tokens.at(step++);
    });
    CHECK(step == want_tokens.size());
    CHECK(first_mismatch == "");
    const size_t decided = test::decided_steps(steps, 1e-4);
    REQUIRE(decided == steps.size());  // float32: every step's margin is beyond the tolerance
    std::vector<int> sequence(prompt);
    sequence.insert(sequence.end(), want_tokens.begin(), want_tokens.end() - 1);
    REQUIRE(test::routing_margins(*weights, sequence).back() >= 1e-4);  // and every expert choice (MoE)
    CHECK(test::cuda_generate(executor, cache, prompt, options, [](std::span<const float> row) { return argmax(row); }) ==
          want_tokens);
  }
}

}  // namespace

TEST_CASE("files AstrAI quantized: the device keeps their blocks and matches the reference", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  const ModelConfig c = quantizable_config();
  for (const bool tied : {false, true})
    for (const auto& [dtype, type] : std::vector<std::pair<GgufDType, std::string>>{
             {GgufDType::Q8_0, "Q8_0"}, {GgufDType::Q4_0, "Q4_0"}, {GgufDType::Q4_K, "Q4_K"}, {GgufDType::Q6_K, "Q6_K"}}) {
      if (tied && type != "Q4_K" && type != "Q8_0") continue;
      INFO(type << (tied ? ", classifier tied to the embedding" : ""));
      const auto path = test::scratch_dir() / ("cuda-quantized-" + type + (tied ? "-tied" : "") + ".gguf");
      write_gguf_model(path.string(), synthetic_model_source(c, 5, tied), make_synthetic_tokenizer(c.vocab_size), dtype,
                       "cuda-quantized");
      REQUIRE((GgufReader(path.string()).find_tensor("output.weight") == nullptr) == tied);
      check_against_reference(path, {type}, false);
    }
}

TEST_CASE("files llama.cpp quantized (Q4_K_M, Q5_K_M, Q8_0) run on their blocks like the reference", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  if (!test::llama_cpp_oracle_available()) return;
  // A Llama shape, and a Qwen 3 shape (q/k norms, head_dim 64 apart from dim / n_heads, rotate-half RoPE).
  ModelConfig qwen3 = quantizable_config();
  qwen3.explicit_head_dim = 64, qwen3.n_heads = 8, qwen3.n_kv_heads = 2, qwen3.options.qk_norm = true,
  qwen3.rope_layout = RopeLayout::RotateHalf;
  for (const auto& [shape, c] : std::vector<std::pair<std::string, ModelConfig>>{{"llama", quantizable_config()},
                                                                                {"qwen3", qwen3}}) {
    const auto f32 = test::scratch_dir() / ("cuda-llama-cpp-" + shape + "-f32.gguf");
    write_gguf_model(f32.string(), make_synthetic_weights(c, 3), make_synthetic_tokenizer(c.vocab_size), GgufDType::F32,
                     "cuda-llama-cpp");
    for (const auto& [preset, types] : std::vector<std::pair<std::string, std::vector<std::string>>>{
             {"Q4_K_M", {"Q4_K", "Q6_K"}}, {"Q5_K_M", {"Q5_K", "Q6_K"}}, {"Q8_0", {"Q8_0"}}}) {
      INFO(shape << " " << preset);
      const auto q = test::scratch_dir() / ("cuda-llama-cpp-" + shape + "-" + preset + ".gguf");
      test::llama_cpp_quantize(f32, q, preset);
      check_against_reference(q, types, preset == "Q4_K_M" && shape == "llama");
    }
  }
}

TEST_CASE("Mixture-of-Experts files keep their expert stacks' blocks and match the reference", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  // A Qwen 3 MoE shape: 4 experts of 256 (whole super-blocks), top 2; the
  // grouped mat-vec decodes the stacks' blocks for prefill and decode alike.
  ModelConfig c = quantizable_config();
  c.explicit_head_dim = 64, c.n_heads = 8, c.n_kv_heads = 2, c.options.qk_norm = true,
  c.rope_layout = RopeLayout::RotateHalf;
  c.options.moe = MoeModule::Mlp;
  c.moe.n_experts = 4, c.moe.n_experts_used = 2, c.moe.expert_hidden_dim = 256, c.moe.norm_topk_prob = true;
  for (const auto& [dtype, type] :
       std::vector<std::pair<GgufDType, std::string>>{{GgufDType::Q8_0, "Q8_0"}, {GgufDType::Q4_K, "Q4_K"}}) {
    INFO("AstrAI's " << type);
    const auto path = test::scratch_dir() / ("cuda-moe-" + type + ".gguf");
    write_gguf_model(path.string(), synthetic_model_source(c, 6, false), make_synthetic_tokenizer(c.vocab_size), dtype,
                     "cuda-moe");
    check_against_reference(path, {type}, false);
  }
  if (!test::llama_cpp_oracle_available()) return;
  const auto f32 = test::scratch_dir() / "cuda-moe-f32.gguf";
  write_gguf_model(f32.string(), make_synthetic_weights(c, 6), make_synthetic_tokenizer(c.vocab_size), GgufDType::F32,
                   "cuda-moe");
  const auto q = test::scratch_dir() / "cuda-moe-Q4_K_M.gguf";
  test::llama_cpp_quantize(f32, q, "Q4_K_M");  // Q4_K experts, some down stacks Q6_K (llama.cpp's mixture)
  INFO("llama.cpp's Q4_K_M");
  check_against_reference(q, {"Q4_K"}, false);
}

TEST_CASE("stories260K quantized by llama.cpp runs like the reference on its decoded weights", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  ASTRAI_REQUIRE_SHARED(model_path, "models/stories260K/stories260K.bin");
  ASTRAI_REQUIRE_SHARED(tok_path, "models/stories260K/tok512.bin");
  if (!test::llama_cpp_oracle_available()) return;
  const auto f32 = test::scratch_dir() / "cuda-stories260K-f32.gguf";
  convert_to_gguf(model_path.string(), tok_path.string(), f32.string(), GgufDType::F32);
  // Its rows (64 and 172 weights) are not whole K-quant super-blocks, so
  // llama.cpp falls back per tensor (Q8_0 where rows are whole 32-blocks):
  // a file of mixed types, part kept quantized, part decoded at load.
  for (const std::string preset : {"Q8_0", "Q4_K_M"}) {
    INFO(preset);
    const auto q = test::scratch_dir() / ("cuda-stories260K-" + preset + ".gguf");
    test::llama_cpp_quantize(f32, q, preset);
    check_against_reference(q, {}, false, {1, 403, 407, 261, 378, 275, 285, 9, 410, 270, 29, 498});
  }
}
