// Quantized GGUF files on the device: their blocks are decoded to float32 at
// load (engine/model_files/quant/), so the executor uploads them like any
// other weights. Checked here: a file llama.cpp quantized (Q4_K_M: Q4_K and
// Q6_K tensors) runs on the device with float32 logits within the float32
// tolerance of the reference on the same decoded weights, and the refusal
// when the decoded weights do not fit names the file's quantized types.
#include <catch2/catch.hpp>

#include "cuda/cuda_executor.h"
#include "cuda/device_page_cache.h"
#include "cuda/device_weights.h"
#include "engine/model_files/load_model.h"
#include "reference/dense_kv_cache.h"
#include "reference/forward.h"
#include "reference/synthetic_model.h"
#include "tests/cuda/gpu_test_support.h"
#include "tests/engine/model_files/llama_cpp_oracle.h"
#include "tests/support/shared_data.h"

using namespace astrai;
using Catch::Matchers::Contains;

TEST_CASE("the out-of-memory refusal says a quantized file is dequantized", "[cuda]") {
  ModelWeights w = make_synthetic_weights(preset_config("tiny"), 1);
  const std::string plain = cuda::DeviceWeights::out_of_memory_message(w, cuda::DType::BFloat16, 1 << 20, 2 << 20);
  CHECK_THAT(plain, Contains("out of GPU memory: the weights of the model"));
  CHECK_THAT(plain, Contains("in bf16 but only 1.0 MiB of 2.0 MiB are free"));
  CHECK_THAT(plain, !Contains("quantized"));
  w.stored["blk.0.attn_q.weight"] = {"Q4_K", 3 << 20};
  w.stored["blk.0.ffn_down.weight"] = {"Q6_K", 1 << 20};
  w.stored["blk.0.attn_norm.weight"] = {"F32", 0};
  const std::string q = cuda::DeviceWeights::out_of_memory_message(w, cuda::DType::BFloat16, 1 << 20, 2 << 20);
  CHECK_THAT(q, Contains("(the file stores them quantized, Q4_K, Q6_K, in 4.0 MiB; AstrAI dequantizes"));
}

TEST_CASE("a llama.cpp Q4_K_M file runs on the device like its decoded weights on the reference", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  if (!test::llama_cpp_oracle_available()) return;
  ModelConfig c;
  c.dim = 256, c.hidden_dim = 512, c.n_layers = 1, c.n_heads = 4, c.n_kv_heads = 2, c.vocab_size = 512,
  c.max_seq_len = 64;
  const auto f32 = test::scratch_dir() / "cuda-q4km-f32.gguf", q4 = test::scratch_dir() / "cuda-q4km.gguf";
  write_gguf_model(f32.string(), make_synthetic_weights(c, 3), make_synthetic_tokenizer(c.vocab_size),
                   GgufDType::F32, "cuda-q4km");
  test::llama_cpp_quantize(f32, q4, "Q4_K_M");
  const auto weights = std::make_shared<ModelWeights>(load_model(q4.string()).weights);
  CHECK(weights->stored.at("blk.0.attn_q.weight").type == "Q4_K");

  cuda::CudaExecutor executor(weights, {cuda::DType::Float32, 0, true});
  cuda::DevicePageCache cache(c, 4, 16, cuda::DType::Float32);
  const std::vector<int> prompt = {1, 300, 301, 302, 7};
  REQUIRE(cache.admit(0, prompt).value() == 0);
  std::vector<BatchToken> batch;
  for (int pos = 0; pos < int(prompt.size()); ++pos) batch.push_back({prompt[size_t(pos)], 0, pos, true});
  const auto got = executor.forward(batch, cache.view());
  DenseKVCache dense(c, 1);
  const auto want = forward(*weights, batch, dense);
  // float32 sums in other orders, as in test_cuda_executor.cpp.
  CHECK(test::compare({got.begin(), got.end()}, {want.begin(), want.end()}, 1e-4) == "");
}
