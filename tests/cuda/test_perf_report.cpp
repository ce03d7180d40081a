// The performance report's inputs, checked on the emulated device:
//  - its decode step is the executor's: the kernels of decode_launches(),
//    run at a small shape in order, are the kernels a real decode step of
//    CudaExecutor launches, in the same order, for a bf16 model and for
//    ones stored as llama.cpp stores Q4_K_M (Q4_K and, in some layers, Q6_K
//    matrices) and Q8_0, so a kernel added to enqueue() and not to
//    decode_step.cpp, or a per-layer format the recipe gets wrong, fails here;
//  - the quantized formats are llama.cpp's: matrix_format() against the
//    types llama.cpp's own quantizer writes (the llama.cpp oracle), and a
//    hand-made table of Llama-3-8B's Q6_K layers;
//  - step_floor_bytes() counts the blocks AstrAI's encoders write;
//  - the access stream prices a kernel as its code says: the vectorized
//    element-wise convert kernel is fully coalesced (every sector it touches
//    holds only bytes it asked for), and the report's whole pipeline runs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cuda/cuda_executor.h"
#include "cuda/device_page_cache.h"
#include "cuda/emulation/memory_trace.h"
#include "cuda/perf_model/decode_step.h"
#include "cuda/perf_model/perf_report.h"
#include "cuda/perf_model/trace_observer.h"
#include "cuda/perf_model/weight_formats.h"
#include "engine/model_files/gguf/gguf_model.h"
#include "engine/model_files/gguf/gguf_types.h"
#include "engine/model_files/load_model.h"
#include "engine/model_files/quant/quantize.h"
#include "engine/tokenizer/synthetic_tokenizer.h"
#include "reference/synthetic_model.h"
#include "tests/cuda/cuda_generate.h"
#include "tests/engine/model_files/llama_cpp_oracle.h"
#include "tests/support/shared_data.h"

using namespace astrai;

namespace {

struct LaunchNames final : emu::MemoryObserver {
  std::vector<std::string> names;
  void launch_begin(const emu::KernelLaunch& l) override { names.push_back(emu::code_function_name(l.function)); }
  void access(const emu::MemoryAccess&) override {}
  void launch_end(const emu::KernelLaunch&) override {}
};

struct Observe {
  explicit Observe(emu::MemoryObserver* o) { emu::set_memory_observer(o); }
  ~Observe() { emu::set_memory_observer(nullptr); }
};

const cuda::cases::KernelCase& kernel_case(const std::string& name) {
  for (const auto& c : cuda::cases::kernel_cases())
    if (c.name == name) return c;
  FAIL("no kernel case " << name);
  throw 0;
}

// The kernels the last decode step of a short greedy run launches (a
// prefill step, then one decode step), from its embedding gather on.
std::vector<std::string> executor_decode_step(const ModelSource& weights) {
  cuda::CudaExecutor executor(weights, {cuda::DType::BFloat16, 0, false});
  cuda::DevicePageCache cache(weights.config, 16, 16, cuda::DType::BFloat16);
  LaunchNames seen;
  {
    Observe observe(&seen);
    GenerateOptions options;
    options.max_new_tokens = 2;
    test::cuda_generate(executor, cache, {1, 2, 3, 4}, options, [](std::span<const float>) { return 7; });
  }
  auto first = seen.names.end();
  for (auto it = seen.names.begin(); it != seen.names.end(); ++it)
    if (it->find("embedding_gather") != std::string::npos) first = it;  // embedding_gather_kernel or _quant_kernel
  REQUIRE(first != seen.names.end());
  return {first, seen.names.end()};
}

// The model's shape as a ReferenceShape at batch 1 after the 4-token prompt.
cuda::perf::ReferenceShape shape_of(const ModelConfig& config, cuda::perf::Weights weights) {
  cuda::perf::ReferenceShape shape;
  shape.name = "test";
  shape.dim = config.dim;
  shape.n_heads = config.n_heads;
  shape.n_kv_heads = config.n_kv_heads;
  shape.head_dim = config.head_dim();
  shape.hidden = config.hidden_dim;
  shape.vocab = config.vocab_size;
  shape.layers = config.n_layers;
  shape.batch = 1;
  shape.context = 5;
  shape.max_seq_len = config.max_seq_len;
  shape.weights = weights;
  shape.qk_norm = config.options.qk_norm;
  shape.rope_scaling = config.rope_scaling.enabled();
  shape.experts = config.moe.n_experts;
  shape.experts_used = config.moe.n_experts_used;
  shape.expert_hidden = config.moe.expert_hidden_dim;
  shape.window = config.sliding_window;
  shape.sliding = config.sliding_layers;
  shape.gemma = config.options.sandwich_norms;
  shape.softcap = config.final_logit_softcap;
  shape.gpt_oss = config.options.attention_sinks;
  return shape;
}

// The kernels of decode_launches(shape), each launch's kernel case run once
// at its shape, in order; the sampler is not part of forward() and is left out.
std::vector<std::string> recipe_decode_step(const cuda::perf::ReferenceShape& shape) {
  std::vector<std::string> names;
  for (const auto& launch : cuda::perf::decode_launches(shape)) {
    if (launch.case_name == "sample") continue;
    LaunchNames seen;
    auto run = kernel_case(launch.case_name).prepare(launch.shape);
    {
      Observe observe(&seen);
      run->launch(1, nullptr);
      REQUIRE(cudaStreamSynchronize(nullptr) == cudaSuccess);
    }
    names.insert(names.end(), seen.names.begin(), seen.names.end());
  }
  return names;
}

// The GGUF names of a layer's matrices, with the matrix each is.
const std::vector<std::pair<const char*, cuda::perf::Matrix>>& layer_matrices() {
  static const std::vector<std::pair<const char*, cuda::perf::Matrix>> all = {
      {"attn_q", cuda::perf::Matrix::Q},        {"attn_k", cuda::perf::Matrix::K},
      {"attn_v", cuda::perf::Matrix::V},        {"attn_output", cuda::perf::Matrix::O},
      {"ffn_gate", cuda::perf::Matrix::Gate},   {"ffn_up", cuda::perf::Matrix::Up},
      {"ffn_down", cuda::perf::Matrix::Down}};
  return all;
}

std::string layer_tensor(int l, const char* name) { return "blk." + std::to_string(l) + "." + name + ".weight"; }

// Weights `w` with every matrix (and the token embedding) stored as a file
// of preset `preset` stores it: blocks written by AstrAI's encoders
// (engine/model_files/quant/), in the format matrix_format() gives, served
// as a GGUF file's source serves them (ModelSource::blocks).
struct QuantizedModel {
  std::shared_ptr<const ModelWeights> weights;
  std::map<std::string, std::pair<std::string, std::vector<std::byte>>> blocks;  // tensor -> (type, bytes)

  ModelSource source() const {
    ModelSource s = model_source(weights);
    for (const auto& [name, b] : blocks) s.stored[name] = StoredTensor{b.first, b.second.size()};
    s.blocks = [this](const ModelTensor& t) -> std::optional<TensorBlocks> {
      const auto it = blocks.find(t.gguf_name());
      if (it == blocks.end()) return std::nullopt;
      return TensorBlocks{it->second.first, it->second.second, nullptr};
    };
    return s;
  }
};

QuantizedModel quantize_as(ModelWeights w, cuda::perf::Weights preset) {
  QuantizedModel out;
  const auto store = [&](const std::string& name, const xt::xtensor<float, 2>& m, cuda::perf::Matrix which, int l) {
    const auto format = cuda::perf::matrix_format(preset, which, l, w.config.n_layers);
    REQUIRE(format);
    const std::string type(cuda::quant_format_info(*format).name);
    const GgmlType ggml = type == "Q4_K" ? GgmlType::Q4_K : type == "Q6_K" ? GgmlType::Q6_K : GgmlType::Q8_0;
    const auto traits = ggml_type_traits(uint32_t(ggml)).value();  // the engine's table, not cuda/quant_format.h's
    std::vector<std::byte> bytes(m.size() / traits.block_size * traits.block_bytes);
    quant::quantize(ggml, {m.data(), m.size()}, bytes);
    out.blocks[name] = {type, std::move(bytes)};
  };
  for (int l = 0; l < w.config.n_layers; ++l) {
    const LayerWeights& L = w.layers[size_t(l)];
    const xt::xtensor<float, 2>* m[] = {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down};
    for (size_t i = 0; i < layer_matrices().size(); ++i)
      store(layer_tensor(l, layer_matrices()[i].first), *m[i], layer_matrices()[i].second, l);
  }
  store("output.weight", w.classifier, cuda::perf::Matrix::Classifier, 0);
  store("token_embd.weight", w.token_embedding, cuda::perf::Matrix::Embedding, 0);
  out.weights = std::make_shared<const ModelWeights>(std::move(w));
  return out;
}

ModelConfig quantizable_config(int layers) {
  ModelConfig c;  // every matrix's rows whole 256-weight super-blocks
  c.dim = 256, c.hidden_dim = 512, c.n_layers = layers, c.n_heads = 4, c.n_kv_heads = 2, c.vocab_size = 512,
  c.max_seq_len = 64;
  return c;
}

}  // namespace

TEST_CASE("the report's decode step launches what CudaExecutor's decode step launches", "[cuda][perf_model]") {
  ModelConfig config = preset_config("tiny");
  config.n_layers = 2;
  const ModelWeights weights = make_synthetic_weights(config, 5);
  CHECK(recipe_decode_step(shape_of(config, cuda::perf::Weights::BF16)) == executor_decode_step(model_source(weights)));
}

TEST_CASE("the report's Mixture-of-Experts decode step launches what CudaExecutor launches", "[cuda][perf_model]") {
  // Qwen 3 MoE's shape: q/k norms, every layer sparse.
  ModelConfig config = preset_config("tiny");
  config.n_layers = 2;
  config.options.qk_norm = true;
  config.options.moe = MoeModule::Mlp;
  config.moe.n_experts = 8, config.moe.n_experts_used = 2, config.moe.expert_hidden_dim = 32;
  config.moe.norm_topk_prob = true;
  const ModelWeights weights = make_synthetic_weights(config, 5);
  const std::vector<std::string> executor = executor_decode_step(model_source(weights));
  INFO("the executor ran " << std::count_if(executor.begin(), executor.end(), [](const std::string& n) {
    return n.find("moe_matvec") != std::string::npos;
  }) << " grouped mat-vecs");
  CHECK(recipe_decode_step(shape_of(config, cuda::perf::Weights::BF16)) == executor);
}

TEST_CASE("the report's Gemma 3 and gpt-oss decode steps launch what CudaExecutor launches", "[cuda][perf_model]") {
  // Gemma 3's block (a soft cap too, which Gemma 3 12B's report step does
  // not have) with a sliding and a full layer; gpt-oss's whole layer.
  ModelConfig gemma = preset_config("tiny");
  gemma.n_layers = 2;
  gemma.options.qk_norm = gemma.options.norm_unit_offset = gemma.options.sandwich_norms = true;
  gemma.options.gelu_tanh = gemma.options.scaled_embedding = true;
  gemma.final_logit_softcap = 30.0f;
  gemma.sliding_window = 3;
  gemma.sliding_layers = {true, false};
  ModelConfig oss = preset_config("tiny");
  oss.n_layers = 2;
  oss.options.moe = MoeModule::GptOss;
  oss.options.qkv_bias = oss.options.out_bias = oss.options.attention_sinks = true;
  oss.options.router_bias = oss.options.expert_biases = true;
  oss.moe = {.n_experts = 8, .n_experts_used = 2, .expert_hidden_dim = 32, .routing = ExpertRouting::TopKSoftmax,
             .swiglu_limit = 7.0f};
  oss.sliding_window = 3;
  oss.sliding_layers = {true, false};
  for (const ModelConfig& config : {gemma, oss}) {
    INFO((config.options.sandwich_norms ? "Gemma 3" : "gpt-oss"));
    const ModelWeights weights = make_synthetic_weights(config, 5);
    CHECK(recipe_decode_step(shape_of(config, cuda::perf::Weights::BF16)) ==
          executor_decode_step(model_source(weights)));
  }
}

TEST_CASE("step_floor_bytes(): a sliding layer reads its window's K/V, a full layer the whole context",
          "[cuda][perf_model]") {
  // Gemma 3 12B at 32k: 40 layers read 1,024 positions and 8 read 32,768,
  // K and V of 8 heads of 256 in bf16 (8 KiB a position and layer).
  const auto shapes = cuda::perf::reference_shapes();
  const auto gemma = std::find_if(shapes.begin(), shapes.end(), [](const auto& s) { return s.gemma; });
  REQUIRE(gemma != shapes.end());
  const cuda::perf::StepBytes b = cuda::perf::step_floor_bytes(*gemma);
  const double position = 2.0 * 2.0 * 8 * 256;
  CHECK(b.kv == position * (40.0 * 1024 + 8.0 * 32768));
  CHECK(b.kv_without_windows == position * 48.0 * 32768);
}

TEST_CASE("expected_experts_read(): the expected count of distinct experts, against a count of random draws",
          "[cuda][perf_model]") {
  CHECK(cuda::perf::expected_experts_read(128, 8, 1) == 8.0);
  CHECK(cuda::perf::expected_experts_read(0, 0, 64) == 0.0);
  // Rows drawing k-subsets uniformly (a shuffle's first k): the mean count of
  // distinct experts over 2000 batches of 64 within 1% of the formula.
  std::mt19937 rng(38);
  std::vector<int> experts(128);
  double mean = 0.0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::set<int> seen;
    for (int r = 0; r < 64; ++r) {
      std::iota(experts.begin(), experts.end(), 0);
      std::shuffle(experts.begin(), experts.end(), rng);
      seen.insert(experts.begin(), experts.begin() + 8);
    }
    mean += double(seen.size()) / 2000.0;
  }
  CHECK(std::abs(mean - cuda::perf::expected_experts_read(128, 8, 64)) < 0.01 * mean);
}

TEST_CASE("the report's Q4_K_M decode step launches what CudaExecutor launches on such a file", "[cuda][perf_model]") {
  // Two layers: use_more_bits(i, 2) holds for layer 1 only (i >= 7 * 2 / 8),
  // so layer 0's v and down projections are Q4_K and layer 1's Q6_K.
  const ModelConfig config = quantizable_config(2);
  const QuantizedModel q = quantize_as(make_synthetic_weights(config, 5), cuda::perf::Weights::Q4_K_M);
  const std::vector<std::string> executor = executor_decode_step(q.source());
  std::set<std::string> quantized_kernels;
  for (const std::string& n : executor)
    if (n.find("matvec_quant_kernel") != std::string::npos) quantized_kernels.insert(n);
  INFO("the executor ran " << quantized_kernels.size() << " quantized mat-vec instantiations");
  REQUIRE(quantized_kernels.size() == 2);  // Q4_K and Q6_K: the test sees per-layer formats
  CHECK(recipe_decode_step(shape_of(config, cuda::perf::Weights::Q4_K_M)) == executor);
}

TEST_CASE("the report's Q8_0 decode step launches what CudaExecutor launches on such a file", "[cuda][perf_model]") {
  const ModelConfig config = quantizable_config(2);
  const QuantizedModel q = quantize_as(make_synthetic_weights(config, 6), cuda::perf::Weights::Q8_0);
  CHECK(recipe_decode_step(shape_of(config, cuda::perf::Weights::Q8_0)) == executor_decode_step(q.source()));
}

TEST_CASE("decode_step() counts decode_launches(): nothing lost in the merge", "[cuda][perf_model]") {
  for (const auto& shape : cuda::perf::reference_shapes()) {
    INFO(shape.name);
    const auto launches = cuda::perf::decode_launches(shape);
    const auto parts = cuda::perf::decode_step(shape);
    std::map<std::string, int> launched, counted;
    for (const auto& l : launches) ++launched[l.what + " " + l.shape.describe()];
    for (const auto& p : parts) counted[p.what + " " + p.shape.describe()] += p.per_step;
    CHECK(launched == counted);
    CHECK(counted.size() == parts.size());  // each kind of launch is one part
  }
}

TEST_CASE("Llama-3-8B in Q4_K_M: v and down are Q6_K in llama.cpp's 16 layers, the classifier Q6_K",
          "[cuda][perf_model]") {
  // llama.cpp's use_more_bits(i, 32), worked by hand: i < 4, i >= 28, or
  // (i - 4) % 3 == 2.
  const std::set<int> q6k_layers = {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31};
  for (int l = 0; l < 32; ++l)
    for (const auto& [name, m] : layer_matrices()) {
      INFO("layer " << l << " " << name);
      const bool more = (m == cuda::perf::Matrix::V || m == cuda::perf::Matrix::Down) && q6k_layers.count(l);
      CHECK(cuda::perf::matrix_format(cuda::perf::Weights::Q4_K_M, m, l, 32) ==
            (more ? cuda::QuantFormat::Q6_K : cuda::QuantFormat::Q4_K));
      CHECK(cuda::perf::matrix_format(cuda::perf::Weights::Q8_0, m, l, 32) == cuda::QuantFormat::Q8_0);
    }
  CHECK(cuda::perf::matrix_format(cuda::perf::Weights::Q4_K_M, cuda::perf::Matrix::Classifier, 0, 32) ==
        cuda::QuantFormat::Q6_K);
  CHECK(cuda::perf::matrix_format(cuda::perf::Weights::Q8_0, cuda::perf::Matrix::Classifier, 0, 32) ==
        cuda::QuantFormat::Q8_0);
  cuda::perf::ReferenceShape q4km;
  q4km.weights = cuda::perf::Weights::Q4_K_M;
  int q6k_v = 0;
  for (const auto& p : cuda::perf::decode_step(q4km))
    if (p.what == "layer: v projection (Q6_K)") q6k_v += p.per_step;
  CHECK(q6k_v == 16);
}

TEST_CASE("matrix_format() gives the types llama.cpp's quantizer writes (Q4_K_M, Q8_0)", "[cuda][perf_model]") {
  if (!test::llama_cpp_oracle_available()) return;
  // 16 layers: use_more_bits picks 0, 1, 4, 7, 10, 13, 14, 15 (n/8 = 2).
  const ModelConfig c = quantizable_config(16);
  const auto f32 = test::scratch_dir() / "perf-formats-f32.gguf";
  write_gguf_model(f32.string(), make_synthetic_weights(c, 3), make_synthetic_tokenizer(c.vocab_size), GgufDType::F32,
                   "perf-formats");
  for (const auto preset : {cuda::perf::Weights::Q4_K_M, cuda::perf::Weights::Q8_0}) {
    const std::string name = cuda::perf::weights_name(preset);
    INFO(name);
    const auto q = test::scratch_dir() / ("perf-formats-" + name + ".gguf");
    test::llama_cpp_quantize(f32, q, name);
    const ModelWeights w = load_model(q.string()).weights;
    const auto format_name = [](std::optional<cuda::QuantFormat> f) {
      return f ? std::string(cuda::quant_format_info(*f).name) : std::string("bf16");
    };
    for (int l = 0; l < c.n_layers; ++l)
      for (const auto& [tensor, m] : layer_matrices()) {
        INFO(layer_tensor(l, tensor));
        CHECK(w.stored.at(layer_tensor(l, tensor)).type == format_name(cuda::perf::matrix_format(preset, m, l, c.n_layers)));
      }
    CHECK(w.stored.at("output.weight").type ==
          format_name(cuda::perf::matrix_format(preset, cuda::perf::Matrix::Classifier, 0, c.n_layers)));
    CHECK(w.stored.at("token_embd.weight").type ==
          format_name(cuda::perf::matrix_format(preset, cuda::perf::Matrix::Embedding, 0, c.n_layers)));
  }
}

TEST_CASE("step_floor_bytes() counts the blocks AstrAI's encoders write, and the norms in bf16", "[cuda][perf_model]") {
  const ModelConfig c = quantizable_config(16);
  for (const auto preset : {cuda::perf::Weights::Q4_K_M, cuda::perf::Weights::Q8_0}) {
    INFO(cuda::perf::weights_name(preset));
    const QuantizedModel q = quantize_as(make_synthetic_weights(c, 4), preset);
    double blocks = 0;  // every matrix; the embedding's rows a step reads are the gather's, not the floor's
    for (const auto& [name, b] : q.blocks)
      if (name != "token_embd.weight") blocks += double(b.second.size());
    const double norms = 2.0 * c.dim * (2 * c.n_layers + 1);  // bf16 on the device
    // Exact: whole numbers of bytes, far below 2^53, summed in double.
    CHECK(cuda::perf::step_floor_bytes(shape_of(c, preset)).weights == blocks + norms);
  }
}

TEST_CASE("the access stream prices the convert kernel as fully coalesced", "[cuda][perf_model]") {
  cuda::perf::TraceObserver observer(16);
  auto run = kernel_case("convert").prepare({cuda::DType::BFloat16, 3, {{"n", 1 << 16}}});
  {
    Observe observe(&observer);
    run->launch(1, nullptr);
    REQUIRE(cudaStreamSynchronize(nullptr) == cudaSuccess);
  }
  const auto launches = observer.take();
  REQUIRE(launches.size() == 1);
  const auto& t = launches[0].totals;
  INFO(launches[0].name << ": " << t.global_instructions << " warp-level global accesses");
  REQUIRE(t.global_instructions > 0);
  CHECK(t.sector_efficiency() == 1.0);
  CHECK(t.shared_instructions == 0);
}
