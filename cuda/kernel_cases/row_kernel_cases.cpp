// Cases of the row-wise kernels: the weight upload's conversion, embedding
// gather, residual add + RMSNorm, SwiGLU, RoPE fused with the K/V page write.
// Each output starts NaN, so an element a kernel forgot to write fails.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>

#include <xtensor/xadapt.hpp>
#include <xtensor/xview.hpp>

#include "cuda/bf16_host.h"
#include "cuda/kernel_cases/device_arrays.h"
#include "cuda/kernel_cases/kernel_case.h"
#include "cuda/kernels/kernels.h"
#include "reference/geglu.h"
#include "reference/rmsnorm.h"
#include "reference/rope.h"
#include "reference/swiglu.h"

namespace astrai::cuda::cases {
namespace {

using test::download;
using test::nan_filled;
using test::random_values;
using test::upload;

DType pick_dtype(const Pick& pick) { return pick(0, 1) ? DType::BFloat16 : DType::Float32; }

std::vector<float> rounded(std::vector<float> v, DType t) {
  if (t == DType::BFloat16)
    for (float& x : v) x = round_to_bf16(x);
  return v;
}

[[noreturn]] void unknown_variant(const char* name, int variant) {
  throw std::invalid_argument(std::string(name) + " has no kernel variant " + std::to_string(variant));
}

// ---- convert: out[i] = dtype(in[i]) ----

struct ConvertRun final : KernelRun {
  DType t;
  size_t n;
  std::vector<float> in;
  DeviceBuffer d_in, d_out;
  explicit ConvertRun(const KernelShape& s)
      : t(s.dtype), n(size_t(s["n"])), in(random_values(n, s.seed, DType::Float32, 100.0f)),
        d_in(upload(in, DType::Float32)), d_out(nan_filled(n, t)) {
    bytes = double(n) * (4.0 + double(dtype_size(t)));
  }
  void launch(int variant, cudaStream_t stream) override {
    if (variant != 1) unknown_variant("convert", variant);
    launch_convert_from_float(d_in.as<float>(), n, d_out.get(), t, stream);
  }
  std::vector<float> result() override { return download(d_out, n, t); }
  std::vector<float> expected() override { return rounded(in, t); }
};

// ---- embedding gather: x[r] = table[tokens[r]] ----

struct EmbeddingRun final : KernelRun {
  DType t;
  int vocab, dim, rows;
  float scale;  // 1, or Gemma's sqrt(dim)
  std::vector<int> tokens;
  std::vector<float> table;
  DeviceBuffer d_table, d_tokens, d_x;
  explicit EmbeddingRun(const KernelShape& s)
      : t(s.dtype), vocab(s["vocab"]), dim(s["dim"]), rows(s["rows"]),
        scale(s.get("scaled", 0) ? std::sqrt(float(dim)) : 1.0f),
        table(random_values(size_t(vocab) * size_t(dim), s.seed, t)) {
    std::mt19937 rng(s.seed);
    for (int r = 0; r < rows; ++r) tokens.push_back(int(rng() % uint32_t(vocab)));
    d_table = upload(table, t);
    d_tokens = test::upload_ints(tokens);
    d_x = nan_filled(size_t(rows) * size_t(dim), DType::Float32);
    bytes = double(rows) * dim * (double(dtype_size(t)) + 4.0);
  }
  void launch(int variant, cudaStream_t stream) override {
    if (variant != 1) unknown_variant("embedding", variant);
    launch_embedding_gather(d_table.get(), t, dim, d_tokens.as<int>(), rows, scale, d_x.as<float>(), stream);
  }
  std::vector<float> result() override { return download(d_x, size_t(rows) * size_t(dim), DType::Float32); }
  std::vector<float> expected() override {
    std::vector<float> out;
    for (int token : tokens)
      for (int j = 0; j < dim; ++j) out.push_back(table[size_t(token) * size_t(dim) + size_t(j)] * scale);
    return out;
  }
};

// ---- residual add + RMSNorm, optionally through a row map ----
// The delta drawn with or without gpt-oss's bias and Gemma 3's own norm of
// it, the norms with or without Gemma's (1 + w).

struct RmsnormRun final : KernelRun {
  DType t;
  int dim, rows, out_rows;
  bool with_delta, with_map, with_bias, with_post;
  float offset;
  float eps = 1e-5f;
  std::vector<float> x, delta, weight, bias, post;
  std::vector<int> map;
  DeviceBuffer d_x, d_delta, d_w, d_map, d_out, d_bias, d_post;
  explicit RmsnormRun(const KernelShape& s)
      : t(s.dtype), dim(s["dim"]), rows(s["rows"]), with_delta(s["delta"] != 0), with_map(s["map"] != 0),
        with_bias(s.get("bias", 0) != 0), with_post(s.get("post", 0) != 0), offset(s.get("offset", 0) ? 1.0f : 0.0f) {
    x = random_values(size_t(rows) * size_t(dim), s.seed, DType::Float32, 3.0f);
    delta = random_values(x.size(), s.seed + 1, DType::Float32);
    weight = random_values(size_t(dim), s.seed + 2, t);
    bias = random_values(size_t(dim), s.seed + 3, t);
    post = random_values(size_t(dim), s.seed + 4, t);
    if (with_map) {  // a random subset of the rows, in random order (the wanted rows of a batch)
      std::mt19937 rng(s.seed);
      map.resize(size_t(rows));
      std::iota(map.begin(), map.end(), 0);
      std::shuffle(map.begin(), map.end(), rng);
      map.resize(1 + rng() % uint32_t(rows));
    }
    out_rows = with_map ? int(map.size()) : rows;
    d_x = upload(x, DType::Float32);
    d_delta = upload(delta, DType::Float32);
    d_w = upload(weight, t);
    d_bias = upload(bias, t);
    d_post = upload(post, t);
    d_map = test::upload_ints(map);
    d_out = nan_filled(size_t(out_rows) * size_t(dim), t);
    bytes = double(rows) * dim * (with_delta ? (with_post ? 16.0 : 12.0) : 4.0) +
            double(out_rows) * dim * double(dtype_size(t));
    flops = (with_post ? 8.0 : 4.0) * double(rows) * dim;
  }
  void launch(int variant, cudaStream_t stream) override {
    if (variant != 1) unknown_variant("rmsnorm", variant);
    // The residual stream is updated in place: every launch starts from x.
    if (restore_inputs) test::upload_to(d_x.get(), x, DType::Float32);
    ResidualDelta d{};
    if (with_delta)
      d = {d_delta.as<float>(), with_bias ? d_bias.get() : nullptr,
           NormScale{with_post ? d_post.get() : nullptr, offset}};
    launch_residual_rmsnorm(d_x.as<float>(), d, NormScale{d_w.get(), offset}, t, dim, eps,
                            with_map ? d_map.as<int>() : nullptr, out_rows, d_out.get(), stream);
  }
  std::vector<float> result() override { return download(d_out, size_t(out_rows) * size_t(dim), t); }
  std::vector<float> expected() override {
    // forward.cpp: x += norm(project(...) + b) with norm_scale()'s 1 + w, then rmsnorm().
    const auto matrix = [&](const std::vector<float>& v) {
      xt::xtensor<float, 2> m({size_t(rows), size_t(dim)});
      std::copy(v.begin(), v.end(), m.begin());
      return m;
    };
    const auto scale = [&](const std::vector<float>& w) {
      return xt::xtensor<float, 1>(offset + xt::adapt(w, {size_t(dim)}));
    };
    xt::xtensor<float, 2> m = matrix(x);
    if (with_delta) {
      xt::xtensor<float, 2> d = matrix(delta);
      if (with_bias) d += xt::adapt(bias, {size_t(dim)});
      if (with_post) d = rmsnorm(d, scale(post), eps);
      m += d;
    }
    const auto normed = rmsnorm(m, scale(weight), eps);
    std::vector<float> out;
    for (int i = 0; i < out_rows; ++i) {
      const auto row = xt::row(normed, size_t(with_map ? map[size_t(i)] : i));
      out.insert(out.end(), row.begin(), row.end());
    }
    return rounded(out, t);
  }
};

// ---- SwiGLU: out = silu(gate) * up, gate and up from one fused row (act 1:
// Gemma's GeGLU, gelu_tanh(gate) * up; act 2: gpt-oss's clamped SwiGLU) ----

struct SwigluRun final : KernelRun {
  static constexpr float kLimit = 2.0f;  // the clamped SwiGLU's: inputs of up to 6 cross it often
  DType t;
  int rows, hidden;
  GateActivation activation;
  std::vector<float> gate_up;
  DeviceBuffer d_in, d_out;
  explicit SwigluRun(const KernelShape& s)
      : t(s.dtype), rows(s["rows"]), hidden(s["hidden"]),
        activation(GateActivation(s.get("act", 0))),
        gate_up(random_values(size_t(rows) * 2 * size_t(hidden), s.seed, DType::Float32, 6.0f)),
        d_in(upload(gate_up, DType::Float32)), d_out(nan_filled(size_t(rows) * size_t(hidden), t)) {
    bytes = double(rows) * hidden * (8.0 + double(dtype_size(t)));
    flops = 5.0 * double(rows) * hidden;
  }
  void launch(int variant, cudaStream_t stream) override {
    if (variant != 1) unknown_variant("swiglu", variant);
    launch_swiglu(d_in.as<float>(), rows, hidden, d_out.get(), t, stream, activation, kLimit);
  }
  std::vector<float> result() override { return download(d_out, size_t(rows) * size_t(hidden), t); }
  std::vector<float> expected() override {
    xt::xtensor<float, 2> gate({size_t(rows), size_t(hidden)}), up(gate.shape());
    for (int r = 0; r < rows; ++r)
      for (int i = 0; i < hidden; ++i) {
        gate(size_t(r), size_t(i)) = gate_up[size_t(r) * 2 * size_t(hidden) + size_t(i)];
        up(size_t(r), size_t(i)) = gate_up[size_t(r) * 2 * size_t(hidden) + size_t(hidden + i)];
      }
    const xt::xtensor<float, 2> out = activation == GateActivation::ClampedSilu ? clamped_swiglu(gate, up, kLimit)
                                      : activation == GateActivation::GeluTanh  ? xt::xtensor<float, 2>(gelu_tanh(gate) * up)
                                                                                : xt::xtensor<float, 2>(silu(gate) * up);
    return rounded({out.begin(), out.end()}, t);
  }
};

// ---- Gemma's final logit soft cap: logits = cap * tanh(logits / cap) ----

struct SoftcapRun final : KernelRun {
  size_t n;
  float cap;
  std::vector<float> logits;
  DeviceBuffer d_logits;
  explicit SoftcapRun(const KernelShape& s)
      : n(size_t(s["n"])), cap(float(s["cap"])), logits(random_values(n, s.seed, DType::Float32, 3.0f * cap)),
        d_logits(upload(logits, DType::Float32)) {
    bytes = 8.0 * double(n);
    flops = 3.0 * double(n);
  }
  void launch(int variant, cudaStream_t stream) override {
    if (variant != 1) unknown_variant("logit_softcap", variant);
    if (restore_inputs) test::upload_to(d_logits.get(), logits, DType::Float32);  // capped in place
    launch_logit_softcap(d_logits.as<float>(), n, cap, stream);
  }
  std::vector<float> result() override { return download(d_logits, n, DType::Float32); }
  std::vector<float> expected() override {
    std::vector<float> out = logits;
    for (float& l : out) l = cap * std::tanh(l / cap);  // logits_of_wanted_rows()'s expression
    return out;
  }
};

// ---- a bias per row, chosen per row, into mapped rows (gpt-oss's router
// and expert biases) ----
// Dimensions: rows (added rows), width, biases (bias rows to choose from;
// 0: one, no map), mapped (1: each row lands on a distinct row of a larger
// y, in random order, as choices land on their slots).

struct AddBiasRun final : KernelRun {
  DType t;
  int rows, width, biases, y_rows_total;
  bool mapped;
  std::vector<float> y, bias;
  std::vector<int> y_rows, bias_rows;
  DeviceBuffer d_y, d_bias, d_y_rows, d_bias_rows;
  explicit AddBiasRun(const KernelShape& s)
      : t(s.dtype), rows(s["rows"]), width(s["width"]), biases(s["biases"]), mapped(s["mapped"] != 0) {
    std::mt19937 rng(s.seed);
    y_rows_total = mapped ? rows + 5 : rows;
    y = random_values(size_t(y_rows_total) * size_t(width), s.seed, DType::Float32, 4.0f);
    bias = random_values(size_t(std::max(biases, 1)) * size_t(width), s.seed + 1, t);
    if (mapped) {
      y_rows.resize(size_t(y_rows_total));
      std::iota(y_rows.begin(), y_rows.end(), 0);
      std::shuffle(y_rows.begin(), y_rows.end(), rng);
      y_rows.resize(size_t(rows));
    }
    if (biases > 0)
      for (int r = 0; r < rows; ++r) bias_rows.push_back(int(rng() % uint32_t(biases)));
    d_y = upload(y, DType::Float32);
    d_bias = upload(bias, t);
    d_y_rows = test::upload_ints(y_rows);
    d_bias_rows = test::upload_ints(bias_rows);
    bytes = double(rows) * width * (8.0 + double(dtype_size(t)));
    flops = double(rows) * width;
  }
  void launch(int variant, cudaStream_t stream) override {
    if (variant != 1) unknown_variant("add_bias", variant);
    if (restore_inputs) test::upload_to(d_y.get(), y, DType::Float32);  // added in place
    launch_add_bias(d_y.as<float>(), width, mapped ? d_y_rows.as<int>() : nullptr, rows, width, d_bias.get(),
                    biases > 0 ? d_bias_rows.as<int>() : nullptr, t, stream);
  }
  std::vector<float> result() override { return download(d_y, y.size(), DType::Float32); }
  std::vector<float> expected() override {
    std::vector<float> out = y;  // rows no row lands on stay as they were
    for (int r = 0; r < rows; ++r) {
      const size_t yr = size_t(mapped ? y_rows[size_t(r)] : r), br = size_t(biases > 0 ? bias_rows[size_t(r)] : 0);
      for (int j = 0; j < width; ++j) out[yr * size_t(width) + size_t(j)] += bias[br * size_t(width) + size_t(j)];
    }
    return out;
  }
};

// ---- q/k/v bias, per-head q/k RMSNorm, RoPE on q and k, then K and V
// written to their cache slots ----
// result(): every row's rotated q (float32), then the K rows and the V rows
// at the rows' slots, in row order. The bias, the norms and Llama 3.1's
// frequency scaling are each drawn on or off.

struct RopeRun final : KernelRun {
  DType t;
  int rows, n_heads, n_kv, head_dim, max_seq = 1000, n_slots;
  RopeLayout layout;
  float theta;
  RopeScaling scaling;
  bool with_bias, with_norm;
  float norm_offset;  // 1: Gemma's (1 + w) norms
  float eps = 1e-6f;
  std::vector<int> positions, slots;
  std::vector<float> qkv, cos_t, sin_t, bias, q_norm, k_norm;
  DeviceBuffer d_qkv, d_pos, d_slots, d_cos, d_sin, d_k, d_v, d_bias, d_q_norm, d_k_norm;
  int q_dim() const { return n_heads * head_dim; }
  int kv_dim() const { return n_kv * head_dim; }
  int width() const { return q_dim() + 2 * kv_dim(); }

  explicit RopeRun(const KernelShape& s)
      : t(s.dtype), rows(s["rows"]), n_heads(s["n_kv"] * s["ratio"]), n_kv(s["n_kv"]), head_dim(s["head_dim"]),
        layout(s["rotate_half"] ? RopeLayout::RotateHalf : RopeLayout::AdjacentPairs),
        theta(s["theta"] == 0 ? 10000.0f : 500000.0f), with_bias(s["bias"] != 0), with_norm(s["qk_norm"] != 0),
        norm_offset(s["qk_norm"] == 2 ? 1.0f : 0.0f) {
    // Llama 3.1 8B's scaling, with an original context short enough that
    // positions below max_seq reach pairs of all three bands.
    if (s["scaling"]) scaling = RopeScaling{8.0f, 1.0f, 4.0f, 512};
    std::mt19937 rng(s.seed);
    n_slots = rows + 7;
    slots.resize(size_t(n_slots));
    std::iota(slots.begin(), slots.end(), 0);
    std::shuffle(slots.begin(), slots.end(), rng);  // scattered, distinct slots
    slots.resize(size_t(rows));
    for (int r = 0; r < rows; ++r) positions.push_back(int(rng() % uint32_t(max_seq)));
    qkv = random_values(size_t(rows) * size_t(width()), s.seed, DType::Float32);
    if (with_bias) bias = random_values(size_t(width()), s.seed + 1, t);
    if (with_norm) {
      q_norm = random_values(size_t(head_dim), s.seed + 2, t);
      k_norm = random_values(size_t(head_dim), s.seed + 3, t);
    }
    // The angle tables as the executor builds them (cuda_executor.cpp).
    const int half = head_dim / 2;
    const std::vector<float> freqs = rope_frequencies(head_dim, theta, scaling);
    cos_t.resize(size_t(max_seq) * size_t(half));
    sin_t.resize(cos_t.size());
    for (int p = 0; p < max_seq; ++p)
      for (int i = 0; i < half; ++i) {
        const float angle = rope_angle(p, freqs[size_t(i)]);
        cos_t[size_t(p * half + i)] = std::cos(angle);
        sin_t[size_t(p * half + i)] = std::sin(angle);
      }
    d_qkv = upload(qkv, DType::Float32);
    d_pos = test::upload_ints(positions);
    d_slots = test::upload_ints(slots);
    d_cos = upload(cos_t, DType::Float32);
    d_sin = upload(sin_t, DType::Float32);
    d_k = nan_filled(size_t(n_slots) * size_t(kv_dim()), t);
    d_v = nan_filled(size_t(n_slots) * size_t(kv_dim()), t);
    if (with_bias) d_bias = upload(bias, t);
    if (with_norm) {
      d_q_norm = upload(q_norm, t);
      d_k_norm = upload(k_norm, t);
    }
    bytes = double(rows) * (double(q_dim() + kv_dim()) * 8.0 + double(kv_dim()) * 4.0 +
                            2.0 * kv_dim() * double(dtype_size(t)));
    flops = 6.0 * double(rows) * (q_dim() + kv_dim()) / 2.0;
  }
  void launch(int variant, cudaStream_t stream) override {
    if (variant != 1) unknown_variant("rope_kv_write", variant);
    if (restore_inputs) test::upload_to(d_qkv.get(), qkv, DType::Float32);  // q is rotated in place
    launch_rope_kv_write(d_qkv.as<float>(), rows, n_heads, n_kv, head_dim, layout, d_pos.as<int>(),
                         d_cos.as<float>(), d_sin.as<float>(), d_slots.as<int>(), KVLayer{d_k.get(), d_v.get(), t},
                         PreRope{d_bias.get(), d_q_norm.get(), d_k_norm.get(), eps, norm_offset}, stream);
  }
  std::vector<float> result() override {
    const auto got_qkv = download(d_qkv, qkv.size(), DType::Float32);
    const auto got_k = download(d_k, size_t(n_slots) * size_t(kv_dim()), t);
    const auto got_v = download(d_v, size_t(n_slots) * size_t(kv_dim()), t);
    std::vector<float> out;
    for (int r = 0; r < rows; ++r)
      out.insert(out.end(), got_qkv.begin() + long(r) * width(), got_qkv.begin() + long(r) * width() + q_dim());
    for (const auto* cache : {&got_k, &got_v})
      for (int r = 0; r < rows; ++r)
        out.insert(out.end(), cache->begin() + long(slots[size_t(r)]) * kv_dim(),
                   cache->begin() + long(slots[size_t(r)] + 1) * kv_dim());
    return out;
  }
  std::vector<float> expected() override {
    xt::xtensor<float, 2> q({size_t(rows), size_t(q_dim())}), k({size_t(rows), size_t(kv_dim())}), v(k.shape());
    for (int r = 0; r < rows; ++r) {
      const float* row = qkv.data() + size_t(r) * size_t(width());
      std::copy(row, row + q_dim(), &q(size_t(r), 0));
      std::copy(row + q_dim(), row + q_dim() + kv_dim(), &k(size_t(r), 0));
      std::copy(row + q_dim() + kv_dim(), row + width(), &v(size_t(r), 0));
    }
    // attention_block() of reference/forward.cpp from the projection on.
    if (with_bias) {
      const xt::xtensor<float, 1> b = xt::adapt(bias, {size_t(width())});
      q += xt::view(b, xt::range(0, q_dim()));
      k += xt::view(b, xt::range(q_dim(), q_dim() + kv_dim()));
      v += xt::view(b, xt::range(q_dim() + kv_dim(), width()));
    }
    if (with_norm) {
      // forward.cpp's norm_scale(): 1 + w in float with the unit offset.
      const xt::xtensor<float, 1> wq = norm_offset + xt::adapt(q_norm, {size_t(head_dim)});
      const xt::xtensor<float, 1> wk = norm_offset + xt::adapt(k_norm, {size_t(head_dim)});
      q = rmsnorm_heads(q, wq, eps);
      k = rmsnorm_heads(k, wk, eps);
    }
    const std::vector<float> freqs = rope_frequencies(head_dim, theta, scaling);
    apply_rope(q, positions, freqs, layout);
    apply_rope(k, positions, freqs, layout);
    std::vector<float> out(q.begin(), q.end());
    const auto kv = rounded(std::vector<float>(k.begin(), k.end()), t);
    const auto vv = rounded(std::vector<float>(v.begin(), v.end()), t);
    out.insert(out.end(), kv.begin(), kv.end());
    out.insert(out.end(), vv.begin(), vv.end());
    return out;
  }
};

KernelShape shape(DType t, uint32_t seed, std::map<std::string, int> dims) {
  return KernelShape{t, seed, std::move(dims)};
}

}  // namespace

KernelCase convert_case() {
  return {"convert", "cuda/kernels/convert.cu", "round_to_bf16() in cuda/bf16_host.h (round to nearest, ties to even)",
          1, {0.0, 0.0, "exact: one IEEE rounding of the same float on both sides"},
          [](const Pick& pick) { return shape(pick_dtype(pick), pick_seed(pick), {{"n", pick(1, 5000)}}); },
          {shape(DType::BFloat16, 1, {{"n", 1 << 26}})},
          [](const KernelShape& s) { return std::make_unique<ConvertRun>(s); }};
}

KernelCase embedding_case() {
  return {"embedding", "cuda/kernels/embedding.cu", "embed() in reference/forward.cpp", 1,
          {0.0, 0.0,
           "exact: a copy (bf16 table entries are exactly representable in float), times Gemma's sqrt(dim) in one "
           "float multiplication on both sides"},
          [](const Pick& pick) {
            return shape(pick_dtype(pick), pick_seed(pick),
                         {{"vocab", pick(1, 300)}, {"dim", pick(1, 600)}, {"rows", pick(1, 40)}, {"scaled", pick(0, 1)}});
          },
          {shape(DType::BFloat16, 1, {{"vocab", 32000}, {"dim", 4096}, {"rows", 256}})},
          [](const KernelShape& s) { return std::make_unique<EmbeddingRun>(s); }};
}

KernelCase rmsnorm_case() {
  return {"rmsnorm", "cuda/kernels/residual_rmsnorm.cu",
          "rmsnorm() in reference/rmsnorm.cpp after the residual add of forward.cpp (its delta biased and normed "
          "as gpt-oss's and Gemma 3's blocks do)",
          1,
          {1e-5, 1e-2, "float32: the sums of squares in another order; bf16: the output's rounding"},
          [](const Pick& pick) {
            return shape(pick_dtype(pick), pick_seed(pick),
                         {{"dim", pick(1, 2000)}, {"rows", pick(1, 24)}, {"delta", pick(0, 1)}, {"map", pick(0, 1)},
                          {"bias", pick(0, 1)}, {"post", pick(0, 1)}, {"offset", pick(0, 1)}});
          },
          {shape(DType::BFloat16, 1, {{"dim", 4096}, {"rows", 1}, {"delta", 1}, {"map", 0}}),
           shape(DType::BFloat16, 1, {{"dim", 4096}, {"rows", 256}, {"delta", 1}, {"map", 0}}),
           // Gemma 3 12B's sandwich norm before the feed-forward norm, one decode row
           shape(DType::BFloat16, 1, {{"dim", 3840}, {"rows", 1}, {"delta", 1}, {"map", 0}, {"post", 1}, {"offset", 1}})},
          [](const KernelShape& s) { return std::make_unique<RmsnormRun>(s); }};
}

KernelCase swiglu_case() {
  return {"swiglu", "cuda/kernels/swiglu.cu",
          "silu() * up of swiglu_ffn() in reference/swiglu.cpp; gelu_tanh() * up of geglu_ffn() in "
          "reference/geglu.cpp; clamped_swiglu() in reference/swiglu.cpp",
          1,
          {1e-5, 1e-2,
           "float32: the device's expf and tanhf within an ulp or two of the host's; bf16: the output's rounding"},
          [](const Pick& pick) {
            return shape(pick_dtype(pick), pick_seed(pick),
                         {{"rows", pick(1, 24)}, {"hidden", pick(1, 3000)}, {"act", pick(0, 2)}});
          },
          {shape(DType::BFloat16, 1, {{"rows", 256}, {"hidden", 11008}})},
          [](const KernelShape& s) { return std::make_unique<SwigluRun>(s); }};
}

KernelCase logit_softcap_case() {
  return {"logit_softcap", "cuda/kernels/logit_softcap.cu",
          "the final soft cap of logits_of_wanted_rows() in reference/forward.cpp", 1,
          {1e-5, 1e-5, "float32 logits on both sides: the device's tanhf within an ulp or two of the host's"},
          [](const Pick& pick) {
            return shape(DType::Float32, pick_seed(pick), {{"n", pick(1, 5000)}, {"cap", pick_from(pick, {1, 30})}});
          },
          {shape(DType::Float32, 1, {{"n", 262144}, {"cap", 30}})},  // a Gemma 3 decode row
          [](const KernelShape& s) { return std::make_unique<SoftcapRun>(s); }};
}

KernelCase add_bias_case() {
  return {"add_bias", "cuda/kernels/add_bias.cu",
          "the `+ b` of route() and expert_linear() in reference/moe.cpp (router and expert biases)", 1,
          {0.0, 0.0, "exact: one float addition of the same values on both sides"},
          [](const Pick& pick) {
            return shape(pick_dtype(pick), pick_seed(pick),
                         {{"rows", pick(1, 40)}, {"width", pick(1, 3000)}, {"biases", pick(0, 32)},
                          {"mapped", pick(0, 1)}});
          },
          // gpt-oss-20b's down biases at a decode step of 16 rows (4 experts each)
          {shape(DType::BFloat16, 1, {{"rows", 64}, {"width", 2880}, {"biases", 32}, {"mapped", 1}})},
          [](const KernelShape& s) { return std::make_unique<AddBiasRun>(s); }};
}

KernelCase rope_kv_write_case() {
  return {"rope_kv_write", "cuda/kernels/rope_kv_write.cu",
          "attention_block() in reference/forward.cpp: q/k/v bias, rmsnorm_heads() on q and k, apply_rope() with "
          "rope_frequencies(), then write_kv()",
          1,
          {0.0, 0.0,
           "exact: the reference's own angle tables, the same operations without FMA, each head's sum of squares "
           "in the reference's order, then the same round-to-nearest-even for a bf16 cache"},
          [](const Pick& pick) {
            return shape(pick_dtype(pick), pick_seed(pick),
                         {{"rows", pick(1, 20)}, {"n_kv", pick(1, 3)}, {"ratio", pick_from(pick, {1, 2, 4, 8, 16})},
                          {"head_dim", pick_from(pick, {8, 64, 128, 146, 256})}, {"rotate_half", pick(0, 1)},
                          {"theta", pick(0, 1)}, {"bias", pick(0, 1)}, {"qk_norm", pick(0, 2)},
                          {"scaling", pick(0, 1)}});
          },
          {shape(DType::BFloat16, 1,
                 {{"rows", 256}, {"n_kv", 8}, {"ratio", 4}, {"head_dim", 128}, {"rotate_half", 1}, {"theta", 1},
                  {"bias", 0}, {"qk_norm", 0}, {"scaling", 1}}),
           shape(DType::BFloat16, 1,
                 {{"rows", 256}, {"n_kv", 8}, {"ratio", 2}, {"head_dim", 128}, {"rotate_half", 1}, {"theta", 1},
                  {"bias", 1}, {"qk_norm", 1}, {"scaling", 0}})},
          [](const KernelShape& s) { return std::make_unique<RopeRun>(s); }};
}

}  // namespace astrai::cuda::cases
