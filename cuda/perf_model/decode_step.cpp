#include "cuda/perf_model/decode_step.h"

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
  return {b1, b64};
}

namespace {

cases::KernelShape bf16(std::map<std::string, int> dims) { return {DType::BFloat16, 1, std::move(dims)}; }

}  // namespace

std::vector<StepKernel> decode_step(const ReferenceShape& s) {
  const int B = s.batch, L = s.layers, kv_dim = s.n_kv_heads * s.head_dim, q_dim = s.n_heads * s.head_dim;
  const double e = 2.0;  // bytes per bf16 element; activations between kernels are float32 (4 bytes)
  const auto gemm = [&](const char* what, int in, int out, int per_step) {
    return StepKernel{what, "gemm", bf16({{"rows", B}, {"in", in}, {"out", out}}), per_step,
                      e * double(in) * out + e * double(B) * in + 4.0 * double(B) * out};
  };
  std::vector<StepKernel> step;
  // The embedding table's size does not change what a gather reads: a small
  // table keeps the emulated run's memory down.
  step.push_back({"embedding gather", "embedding", bf16({{"vocab", 1024}, {"dim", s.dim}, {"rows", B}}), 1,
                  e * double(B) * s.dim + 4.0 * double(B) * s.dim});
  const double norm_bytes = 4.0 * 3 * double(B) * s.dim + e * double(B) * s.dim + e * s.dim;
  step.push_back({"layer: attention norm (+ residual)", "rmsnorm",
                  bf16({{"dim", s.dim}, {"rows", B}, {"delta", 1}, {"map", 0}}), L, norm_bytes});
  step.push_back(gemm("layer: qkv projection", s.dim, q_dim + 2 * kv_dim, L));
  step.push_back({"layer: rope + KV write", "rope_kv_write",
                  bf16({{"rows", B}, {"n_kv", s.n_kv_heads}, {"ratio", s.n_heads / s.n_kv_heads},
                        {"head_dim", s.head_dim}, {"rotate_half", 1}, {"theta", 1}, {"bias", 0}, {"qk_norm", 0},
                        {"scaling", 1}}),
                  L, 4.0 * 2 * double(B) * (q_dim + 2 * kv_dim) + e * 2.0 * B * kv_dim});
  step.push_back({"layer: decode attention (+ merge)", "paged_attention",
                  bf16({{"head_dim", s.head_dim}, {"n_kv", s.n_kv_heads}, {"ratio", s.n_heads / s.n_kv_heads},
                        {"n_seqs", B}, {"len", s.context}, {"ragged", 0}, {"fresh", 1}, {"page", 16},
                        {"split", split_len_for(s.max_seq_len)}, {"splits", 0}, {"chunk", kPrefillChunkRows}}),
                  L, e * 2.0 * B * double(s.context) * kv_dim + 4.0 * B * double(q_dim) + e * B * double(q_dim)});
  step.push_back(gemm("layer: output projection", q_dim, s.dim, L));
  step.push_back({"layer: ffn norm (+ residual)", "rmsnorm",
                  bf16({{"dim", s.dim}, {"rows", B}, {"delta", 1}, {"map", 0}}), L, norm_bytes});
  step.push_back(gemm("layer: gate + up projection", s.dim, 2 * s.hidden, L));
  step.push_back({"layer: SwiGLU", "swiglu", bf16({{"rows", B}, {"hidden", s.hidden}}), L,
                  4.0 * 2 * double(B) * s.hidden + e * double(B) * s.hidden});
  step.push_back(gemm("layer: down projection", s.hidden, s.dim, L));
  step.push_back({"final norm", "rmsnorm", bf16({{"dim", s.dim}, {"rows", B}, {"delta", 1}, {"map", 1}}), 1,
                  norm_bytes});
  step.push_back(gemm("classifier", s.dim, s.vocab, 1));
  step.push_back({"sampling (top-k 50, top-p 0.9)", "sample",
                  {DType::Float32, 7, {{"rows", B}, {"vocab", s.vocab}, {"mode", 2}}}, 1, 4.0 * double(B) * s.vocab});
  return step;
}

double step_floor_bytes(const ReferenceShape& s) {
  const double kv_dim = double(s.n_kv_heads) * s.head_dim, q_dim = double(s.n_heads) * s.head_dim;
  const double per_layer = double(s.dim) * (q_dim + 2 * kv_dim) + q_dim * s.dim + 3.0 * s.dim * s.hidden + 2.0 * s.dim;
  const double weights = 2.0 * (per_layer * s.layers + double(s.dim) * s.vocab + s.dim);
  const double kv = 2.0 * 2.0 * kv_dim * double(s.context) * s.batch * s.layers;
  return weights + kv;
}

}  // namespace astrai::cuda::perf
