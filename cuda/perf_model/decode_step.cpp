#include "cuda/perf_model/decode_step.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <stdexcept>

#include "cuda/kernels/kernels.h"
#include "cuda/paged_attention.h"

namespace astrai::cuda::perf {

std::vector<ReferenceShape> reference_shapes() {
  ReferenceShape b1;
  b1.name = "8b-b1-c1k";
  b1.batch = 1;
  b1.context = 1024;
  ReferenceShape b64;
  b64.name = "8b-b64-c2k";
  b64.batch = 64;
  b64.context = 2048;
  ReferenceShape q4km = b1;
  q4km.name = "8b-q4_k_m-b1-c1k";
  q4km.weights = Weights::Q4_K_M;
  ReferenceShape q8 = b1;
  q8.name = "8b-q8_0-b1-c1k";
  q8.weights = Weights::Q8_0;
  ReferenceShape moe_b1;  // Qwen3-30B-A3B (config.json): 48 layers, every one sparse
  moe_b1.name = "30b-a3b-b1-c1k";
  moe_b1.dim = 2048, moe_b1.n_heads = 32, moe_b1.n_kv_heads = 4, moe_b1.head_dim = 128;
  moe_b1.hidden = 6144, moe_b1.vocab = 151936, moe_b1.layers = 48, moe_b1.max_seq_len = 40960;
  moe_b1.qk_norm = true, moe_b1.rope_scaling = false;
  moe_b1.experts = 128, moe_b1.experts_used = 8, moe_b1.expert_hidden = 768;
  ReferenceShape moe_b64 = moe_b1;
  moe_b64.name = "30b-a3b-b64-c2k";
  moe_b64.batch = 64;
  moe_b64.context = 2048;
  ReferenceShape gemma;  // Gemma 3 12B (its text config): five sliding layers of 1,024 in six
  gemma.name = "gemma3-12b-b1-c32k";
  gemma.dim = 3840, gemma.n_heads = 16, gemma.n_kv_heads = 8, gemma.head_dim = 256;
  gemma.hidden = 15360, gemma.vocab = 262208, gemma.layers = 48, gemma.max_seq_len = 131072;
  gemma.context = 32768;
  gemma.qk_norm = true, gemma.rope_scaling = false;  // linear scaling and two bases: the executor's tables only
  gemma.gemma = true;
  gemma.window = 1024;
  for (int l = 0; l < gemma.layers; ++l) gemma.sliding.push_back((l + 1) % 6 != 0);
  ReferenceShape oss;  // gpt-oss-20b (config.json): 24 layers alternating a 128 window and full attention
  oss.name = "gpt-oss-20b-b1-c32k";
  oss.dim = 2880, oss.n_heads = 64, oss.n_kv_heads = 8, oss.head_dim = 64;
  oss.hidden = 2880, oss.vocab = 201088, oss.layers = 24, oss.max_seq_len = 131072;
  oss.context = 32768;
  oss.rope_scaling = false;  // YaRN: the executor's tables only
  oss.experts = 32, oss.experts_used = 4, oss.expert_hidden = 2880;
  oss.gpt_oss = true;
  oss.window = 128;
  for (int l = 0; l < oss.layers; ++l) oss.sliding.push_back(l % 2 == 0);
  return {b1, b64, q4km, q8, moe_b1, moe_b64, gemma, oss};
}

int ReferenceShape::attended(int layer) const {
  const bool slides = window > 0 && (sliding.empty() || sliding.at(size_t(layer)));
  return slides && window < context ? window : context;
}

double expected_experts_read(int experts, int experts_used, int batch) {
  if (experts == 0) return 0.0;
  return experts * (1.0 - std::pow(1.0 - double(experts_used) / experts, batch));
}

namespace {

constexpr double e = 2.0;  // bytes per bf16 element; activations between kernels are float32 (4 bytes)

cases::KernelShape bf16(std::map<std::string, int> dims) { return {DType::BFloat16, 1, std::move(dims)}; }

// One matrix of a stacked projection: its label, which matrix, its output features.
struct Part {
  const char* what;  // "layer: q projection"
  Matrix matrix;
  int out;
};

// A projection y[B, sum out] = x[B, in] W^T of layer `layer`: in bf16 the
// stack is one GEMM ("layer: qkv projection"); quantized, each matrix is a
// mat-vec on its blocks ("layer: v projection (Q6_K)"), writing its columns.
void push_projection(std::vector<StepKernel>& step, const ReferenceShape& s, int layer, const char* stack_what,
                     int in, std::initializer_list<Part> parts) {
  const int B = s.batch;
  if (s.weights == Weights::BF16) {
    int out = 0;
    for (const Part& p : parts) out += p.out;
    step.push_back({stack_what, "gemm", bf16({{"rows", B}, {"in", in}, {"out", out}}), 1,
                    e * double(in) * out + e * double(B) * in + 4.0 * double(B) * out});
    return;
  }
  for (const Part& p : parts) {
    const QuantFormat f = *matrix_format(s.weights, p.matrix, layer, s.layers);
    const QuantFormatInfo info = quant_format_info(f);
    const int format = int(std::find(std::begin(kQuantFormats), std::end(kQuantFormats), f) - std::begin(kQuantFormats));
    step.push_back({std::string(p.what) + " (" + std::string(info.name) + ")", "matvec_quant",
                    bf16({{"format", format}, {"rows", B}, {"blocks", in / info.block_elements}, {"out", p.out}}), 1,
                    matrix_bytes(f, p.out, in) + e * double(B) * in + 4.0 * double(B) * p.out});
  }
}

}  // namespace

std::vector<StepKernel> decode_launches(const ReferenceShape& s) {
  const int B = s.batch, kv_dim = s.n_kv_heads * s.head_dim, q_dim = s.n_heads * s.head_dim;
  if (s.weights != Weights::BF16 && B > kMatvecMaxRows)
    throw std::invalid_argument("decode step " + s.name + ": quantized weights are priced for 1 to " +
                                std::to_string(kMatvecMaxRows) + " rows (the quantized mat-vec) only");
  if (s.weights != Weights::BF16 && s.experts > 0)
    throw std::invalid_argument("decode step " + s.name + ": Mixture-of-Experts steps are priced in bf16 only");
  std::vector<StepKernel> step;
  // The table's size does not change what a gather reads (B rows): a small
  // table keeps the emulated run's memory down. A quantized file's table
  // stays in its blocks, whose rows the gather decodes.
  if (const auto f = matrix_format(s.weights, Matrix::Embedding, 0, s.layers)) {
    const QuantFormatInfo info = quant_format_info(*f);
    const int format = int(std::find(std::begin(kQuantFormats), std::end(kQuantFormats), *f) - std::begin(kQuantFormats));
    step.push_back({"embedding gather (" + std::string(info.name) + ")", "embedding_quant",
                    bf16({{"format", format}, {"rows", B}, {"blocks", s.dim / info.block_elements}, {"out", 1024}}), 1,
                    matrix_bytes(*f, B, s.dim) + 4.0 * double(B) * s.dim});
  } else {
    step.push_back({"embedding gather", "embedding",
                    bf16({{"vocab", 1024}, {"dim", s.dim}, {"rows", B}, {"scaled", s.gemma}}), 1,
                    e * double(B) * s.dim + 4.0 * double(B) * s.dim});
  }
  // Gemma: every norm (1 + w), the delta post-normed by its own weight.
  const double norm_bytes = 4.0 * 3 * double(B) * s.dim + e * double(B) * s.dim + e * s.dim * (s.gemma ? 2 : 1);
  const auto norm = [&](int map, int bias) {
    return bf16({{"dim", s.dim}, {"rows", B}, {"delta", 1}, {"map", map}, {"bias", bias}, {"post", s.gemma},
                 {"offset", s.gemma}});
  };
  // The executor's norms inside the mat-vecs (CudaExecutor::enqueue): bf16
  // products at the mat-vec's row counts, no sandwich norms (Gemma's post
  // norms stand between a product and the residual add).
  const bool fused = s.weights == Weights::BF16 && B <= kMatvecMaxRows && !s.gemma;
  // A fused product: norm=1 normalizes the float32 residual x in its
  // prologue (store=1 also writes the normalized rows), add=1 adds its
  // output to x (bias=1 with a bias first).
  const auto fused_product = [&](const char* what, int in, int out, int norm, int store, int add, int bias) {
    step.push_back({what, "matvec_fused",
                    bf16({{"rows", B}, {"in", in}, {"out", out}, {"norm", norm}, {"store", store}, {"add", add},
                          {"bias", bias}, {"offset", 0}}),
                    1,
                    e * double(in) * out + (norm ? 4.0 * B * in + e * in : e * double(B) * in) +
                        4.0 * double(B) * out * (add ? 2 : 1) + (store ? e * double(B) * in : 0.0) +
                        (bias ? e * double(out) : 0.0)});
  };
  for (int l = 0; l < s.layers; ++l) {
    if (fused) {
      fused_product("layer: qkv projection (+ attention norm)", s.dim, q_dim + 2 * kv_dim, 1, 0, 0, 0);
    } else {
      step.push_back({"layer: attention norm (+ residual)", "rmsnorm", norm(0, 0), 1, norm_bytes});
      push_projection(step, s, l, "layer: qkv projection", s.dim,
                      {{"layer: q projection", Matrix::Q, q_dim},
                       {"layer: k projection", Matrix::K, kv_dim},
                       {"layer: v projection", Matrix::V, kv_dim}});
    }
    step.push_back({"layer: rope + KV write", "rope_kv_write",
                    bf16({{"rows", B}, {"n_kv", s.n_kv_heads}, {"ratio", s.n_heads / s.n_kv_heads},
                          {"head_dim", s.head_dim}, {"rotate_half", 1}, {"theta", 1}, {"bias", s.gpt_oss},
                          {"qk_norm", s.qk_norm ? (s.gemma ? 2 : 1) : 0}, {"scaling", s.rope_scaling ? 1 : 0}}),
                    1, 4.0 * 2 * double(B) * (q_dim + 2 * kv_dim) + e * 2.0 * B * kv_dim});
    // A sliding layer's row reads its window only (the kernels skip the splits before it).
    const int seen = s.attended(l);
    step.push_back({seen < s.context ? "layer: decode attention (+ merge), sliding" : "layer: decode attention (+ merge)",
                    "paged_attention",
                    bf16({{"head_dim", s.head_dim}, {"n_kv", s.n_kv_heads}, {"ratio", s.n_heads / s.n_kv_heads},
                          {"n_seqs", B}, {"len", s.context}, {"ragged", 0}, {"fresh", 1}, {"page", 16},
                          {"split", split_len_for(s.max_seq_len)}, {"splits", 0}, {"chunk", kPrefillChunkRows},
                          {"window", seen < s.context ? seen : 0}, {"sinks", s.gpt_oss}}),
                    1, e * 2.0 * B * double(seen) * kv_dim + 4.0 * B * double(q_dim) + e * B * double(q_dim)});
    if (fused) {
      fused_product("layer: output projection (+ residual)", q_dim, s.dim, 0, 0, 1, s.gpt_oss);
    } else {
      push_projection(step, s, l, "layer: output projection", q_dim, {{"layer: output projection", Matrix::O, s.dim}});
      step.push_back({"layer: ffn norm (+ residual)", "rmsnorm", norm(0, s.gpt_oss), 1, norm_bytes});
    }
    if (s.experts > 0) {  // cuda/moe_ffn.h: the router's GEMM, then route, plan, the grouped products, combine
      if (fused)  // the router normalizes x and stores h for the experts
        fused_product("layer: router (+ ffn norm)", s.dim, s.experts, 1, 1, 0, 0);
      else
        step.push_back({"layer: router", "gemm", bf16({{"rows", B}, {"in", s.dim}, {"out", s.experts}}), 1,
                        e * double(s.experts) * s.dim + e * double(B) * s.dim + 4.0 * double(B) * s.experts});
      const double choices = double(B) * s.experts_used, eh = s.expert_hidden;
      const double read = expected_experts_read(s.experts, s.experts_used, B);
      step.push_back({s.gpt_oss ? (fused ? "layer: experts (route, plan, gate/up, biases, clamped SwiGLU, down, bias, "
                                           "combine + residual)"
                                         : "layer: experts (route, plan, gate/up, biases, clamped SwiGLU, down, bias, "
                                           "combine)")
                                : (fused ? "layer: experts (route, plan, gate/up, SwiGLU, down, combine + residual)"
                                         : "layer: experts (route, plan, gate/up, SwiGLU, down, combine)"),
                      "moe_ffn",
                      bf16({{"rows", B}, {"experts", s.experts}, {"k", s.experts_used}, {"hidden", s.expert_hidden},
                            {"dim", s.dim}, {"routing", s.gpt_oss ? 2 : 1}, {"ties", 0}, {"shared", 0},
                            {"gpt_oss", s.gpt_oss}, {"add", fused}}),
                      1,
                      read * 3.0 * eh * s.dim * e + (s.gpt_oss ? read * (2.0 * eh + s.dim) * e : 0.0) +
                          4.0 * double(B) * s.experts + e * double(B) * s.dim +
                          choices * (4.0 * 2 * eh * 2 + e * eh * 2) +
                          // the slots' outputs written and read back, where the sum is a launch of its own
                          (B <= kMoeDownCombineRows ? 0.0 : choices * 4.0 * 2 * s.dim) +
                          4.0 * double(B) * s.dim * (fused ? 2 : 1)});
    } else {
      if (fused)
        fused_product("layer: gate + up projection (+ ffn norm)", s.dim, 2 * s.hidden, 1, 0, 0, 0);
      else
        push_projection(step, s, l, "layer: gate + up projection", s.dim,
                        {{"layer: gate projection", Matrix::Gate, s.hidden}, {"layer: up projection", Matrix::Up, s.hidden}});
      step.push_back({s.gemma ? "layer: GeGLU" : "layer: SwiGLU", "swiglu",
                      bf16({{"rows", B}, {"hidden", s.hidden}, {"act", s.gemma ? 1 : 0}}), 1,
                      4.0 * 2 * double(B) * s.hidden + e * double(B) * s.hidden});
      if (fused)
        fused_product("layer: down projection (+ residual)", s.hidden, s.dim, 0, 0, 1, 0);
      else
        push_projection(step, s, l, "layer: down projection", s.hidden, {{"layer: down projection", Matrix::Down, s.dim}});
    }
  }
  if (fused)  // the last layer's product added its output: the norm only
    step.push_back({"final norm", "rmsnorm",
                    bf16({{"dim", s.dim}, {"rows", B}, {"delta", 0}, {"map", 1}, {"bias", 0}, {"post", 0}, {"offset", 0}}),
                    1, 4.0 * double(B) * s.dim + e * double(B) * s.dim + e * s.dim});
  else
    step.push_back({"final norm", "rmsnorm", norm(1, 0), 1, norm_bytes});
  push_projection(step, s, 0, "classifier", s.dim, {{"classifier", Matrix::Classifier, s.vocab}});
  if (s.softcap > 0.0f)
    step.push_back({"final soft cap", "logit_softcap",
                    {DType::Float32, 1, {{"n", B * s.vocab}, {"cap", int(s.softcap)}}}, 1, 8.0 * double(B) * s.vocab});
  step.push_back({"sampling (top-k 50, top-p 0.9)", "sample",
                  {DType::Float32, 7, {{"rows", B}, {"vocab", s.vocab}, {"mode", 2}}}, 1, 4.0 * double(B) * s.vocab});
  return step;
}

std::vector<StepKernel> decode_step(const ReferenceShape& s) {
  std::vector<StepKernel> parts;
  size_t previous = 0;  // the part the previous launch counted in
  for (const StepKernel& k : decode_launches(s)) {
    const auto same = std::find_if(parts.begin(), parts.end(), [&](const StepKernel& p) {
      return p.what == k.what && p.case_name == k.case_name && p.shape.describe() == k.shape.describe();
    });
    if (same != parts.end()) {
      ++same->per_step;
      previous = size_t(same - parts.begin());
    } else {
      previous = parts.empty() ? 0 : previous + 1;
      parts.insert(parts.begin() + std::ptrdiff_t(previous), k);
    }
  }
  return parts;
}

StepBytes step_floor_bytes(const ReferenceShape& s) {
  const int kv_dim = s.n_kv_heads * s.head_dim, q_dim = s.n_heads * s.head_dim;
  StepBytes b;
  for (int l = 0; l < s.layers; ++l) {
    const auto f = [&](Matrix m) { return matrix_format(s.weights, m, l, s.layers); };
    b.weights += matrix_bytes(f(Matrix::Q), q_dim, s.dim) + matrix_bytes(f(Matrix::K), kv_dim, s.dim) +
                 matrix_bytes(f(Matrix::V), kv_dim, s.dim) + matrix_bytes(f(Matrix::O), s.dim, q_dim) +
                 e * (s.gemma ? 4.0 : 2.0) * s.dim + (s.qk_norm ? e * 2.0 * s.head_dim : 0.0);  // and the norms
    if (s.gpt_oss)  // q/k/v and output biases, the sinks
      b.weights += e * (double(q_dim) + 2.0 * kv_dim + s.dim + s.n_heads);
    const double read = expected_experts_read(s.experts, s.experts_used, s.batch);
    if (s.experts > 0)  // the router, and the experts the rows read (bf16), with gpt-oss's biases
      b.weights += e * double(s.experts) * s.dim + read * 3.0 * e * double(s.expert_hidden) * s.dim +
                   (s.gpt_oss ? e * (s.experts + read * (2.0 * s.expert_hidden + s.dim)) : 0.0);
    else
      b.weights += matrix_bytes(f(Matrix::Gate), s.hidden, s.dim) + matrix_bytes(f(Matrix::Up), s.hidden, s.dim) +
                   matrix_bytes(f(Matrix::Down), s.dim, s.hidden);
  }
  b.weights += matrix_bytes(matrix_format(s.weights, Matrix::Classifier, 0, s.layers), s.vocab, s.dim) + e * s.dim;
  for (int l = 0; l < s.layers; ++l) {  // K and V of every position a layer reads
    b.kv += 2.0 * e * double(kv_dim) * double(s.attended(l)) * s.batch;
    b.kv_without_windows += 2.0 * e * double(kv_dim) * double(s.context) * s.batch;
  }
  return b;
}

}  // namespace astrai::cuda::perf
