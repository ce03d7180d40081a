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

#include "cuda/cuda_executor.h"
#include "cuda/device_page_cache.h"
#include "cuda/device_weights.h"
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
#include "tests/support/shared_data.h"

using namespace astrai;
using Catch::Matchers::Contains;

TEST_CASE("the out-of-memory refusal names the quantized types and what stays quantized", "[cuda]") {
  ModelWeights w = make_synthetic_weights(preset_config("tiny"), 1);
  const std::string plain = cuda::DeviceWeights::out_of_memory_message(w, cuda::DType::BFloat16, 1 << 20, 2 << 20);
  CHECK_THAT(plain, Contains("out of GPU memory: the weights of the model"));
  CHECK_THAT(plain, Contains("but only 1.0 MiB of 2.0 MiB are free (in bf16)"));
  CHECK_THAT(plain, !Contains("quantized"));
  w.stored["blk.0.attn_q.weight"] = {"Q4_K", 3 << 20};
  w.stored["blk.0.ffn_down.weight"] = {"Q6_K", 1 << 20};
  w.stored["blk.0.attn_k.weight"] = {"Q3_K", 0};
  w.stored["blk.0.attn_norm.weight"] = {"F32", 0};
  const std::string q = cuda::DeviceWeights::out_of_memory_message(w, cuda::DType::BFloat16, 1 << 20, 2 << 20);
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

// `weights` on the device against the reference on the same (decoded)
// weights, for each GEMM routing: the prompt in one batch, then decode steps
// teacher-forced, then free-running greedy tokens.
// both_routings: also with one algorithm per shape (every row count through
// the decoded slices, which the 12-row prompt already takes per bucket).
void check_against_reference(const std::shared_ptr<const ModelWeights>& weights, const std::vector<std::string>& formats,
                             bool both_routings) {
  const ModelConfig& c = weights->config;
  const std::vector<int> prompt = {1, 300, 301, 302, 7, 99, 4, 250, 17, 3, 60, 511};  // 12 rows: above the mat-vec's 8
  for (const bool one_per_shape : {false, true}) {
    if (one_per_shape && !both_routings) continue;
    INFO((one_per_shape ? "one algorithm per shape" : "per-row buckets"));
    cuda::CudaExecutor executor(weights, {cuda::DType::Float32, 0, one_per_shape});
    for (const std::string& f : formats) CHECK_THAT(executor.weights_description(), Contains(f));
    CHECK_THAT(executor.weights_description(), Contains("matrices quantized"));
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
    CHECK(test::cuda_generate(executor, cache, prompt, options, [](std::span<const float> row) { return argmax(row); }) ==
          want_tokens);
  }
}

}  // namespace

TEST_CASE("files AstrAI quantized: the device keeps their blocks and matches the reference", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  const ModelConfig c = quantizable_config();
  const ModelWeights original = make_synthetic_weights(c, 5);
  const size_t f32_bytes = cuda::DeviceWeights::bytes_needed(original, cuda::DType::Float32);
  for (const auto& [dtype, type] : std::vector<std::pair<GgufDType, std::string>>{
           {GgufDType::Q8_0, "Q8_0"}, {GgufDType::Q4_0, "Q4_0"}, {GgufDType::Q4_K, "Q4_K"}, {GgufDType::Q6_K, "Q6_K"}}) {
    INFO(type);
    const auto path = test::scratch_dir() / ("cuda-quantized-" + type + ".gguf");
    write_gguf_model(path.string(), original, make_synthetic_tokenizer(c.vocab_size), dtype, "cuda-quantized");
    const auto weights = std::make_shared<ModelWeights>(load_model(path.string()).weights);
    REQUIRE(weights->quantized.count("blk.0.attn_q.weight") == 1);
    // Every matrix stays in its blocks: the device's bytes are the blocks'
    // plus the float32 embedding and norms.
    const size_t device = cuda::DeviceWeights::bytes_needed(*weights, cuda::DType::Float32);
    size_t blocks = 0;
    for (const auto& [name, q] : weights->quantized)
      if (name != "token_embd.weight" || !weights->stored.count("output.weight")) blocks += q->bytes.size();
    const size_t others = size_t(c.vocab_size) * size_t(c.dim) * 4 + size_t(c.dim) * 4 * (1 + 2 * size_t(c.n_layers));
    CHECK(device == blocks + others);
    CHECK(device < f32_bytes / 2);
    check_against_reference(weights, {type}, false);
  }
}

TEST_CASE("files llama.cpp quantized (Q4_K_M, Q5_K_M, Q8_0) run on their blocks like the reference", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  if (!test::llama_cpp_oracle_available()) return;
  const ModelConfig c = quantizable_config();
  const auto f32 = test::scratch_dir() / "cuda-llama-cpp-f32.gguf";
  write_gguf_model(f32.string(), make_synthetic_weights(c, 3), make_synthetic_tokenizer(c.vocab_size), GgufDType::F32,
                   "cuda-llama-cpp");
  for (const auto& [preset, types] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"Q4_K_M", {"Q4_K", "Q6_K"}}, {"Q5_K_M", {"Q5_K", "Q6_K"}}, {"Q8_0", {"Q8_0"}}}) {
    INFO(preset);
    const auto q = test::scratch_dir() / ("cuda-llama-cpp-" + preset + ".gguf");
    test::llama_cpp_quantize(f32, q, preset);
    const auto weights = std::make_shared<ModelWeights>(load_model(q.string()).weights);
    check_against_reference(weights, types, preset == "Q4_K_M");
  }
}
