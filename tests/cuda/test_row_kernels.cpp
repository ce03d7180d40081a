// The row-wise kernels against their reference ops, on shapes and values
// drawn by RapidCheck, in float32 and bf16: embedding gather (embed() in
// forward.cpp), residual add + RMSNorm (rmsnorm()), SwiGLU (silu()/
// swiglu_ffn()), RoPE fused with the K/V page write (apply_rope() +
// write_kv()). Outputs start as NaN, so an unwritten element fails.
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <cmath>
#include <cstring>

#include <xtensor/xadapt.hpp>
#include <xtensor/xview.hpp>

#include "cuda/bf16_host.h"
#include "cuda/kernels/kernels.h"
#include "reference/rmsnorm.h"
#include "reference/rope.h"
#include "reference/swiglu.h"
#include "tests/cuda/gpu_test_support.h"

using namespace astrai;
using cuda::DType;

namespace {

DType draw_dtype() { return *rc::gen::element(DType::Float32, DType::BFloat16); }

xt::xtensor<float, 2> as_matrix(const std::vector<float>& v, size_t rows, size_t cols) {
  xt::xtensor<float, 2> m({rows, cols});
  std::copy(v.begin(), v.end(), m.begin());
  return m;
}

std::vector<float> as_vector(const xt::xtensor<float, 2>& m) { return {m.begin(), m.end()}; }

}  // namespace

TEST_CASE("embedding gather copies each token's row", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  rc::prop("x[r] = table[token[r]]", [] {
    const DType t = draw_dtype();
    const int vocab = *rc::gen::inRange(1, 300), dim = *rc::gen::inRange(1, 600), rows = *rc::gen::inRange(1, 40);
    const auto tokens = *rc::gen::container<std::vector<int>>(size_t(rows), rc::gen::inRange(0, vocab));
    const auto table = test::random_values(size_t(vocab) * size_t(dim), *rc::gen::arbitrary<uint32_t>(), t);
    const auto d_table = test::upload(table, t);
    const auto d_tokens = test::upload_ints(tokens);
    auto d_x = test::nan_filled(size_t(rows) * size_t(dim), DType::Float32);
    cuda::launch_embedding_gather(d_table.get(), t, dim, d_tokens.as<int>(), rows, d_x.as<float>(), nullptr);
    std::vector<float> expected;
    for (int token : tokens)
      expected.insert(expected.end(), table.begin() + long(token) * dim, table.begin() + long(token + 1) * dim);
    // A copy: exact in both storage types.
    RC_ASSERT(test::download(d_x, expected.size(), DType::Float32) == expected);
  });
}

TEST_CASE("residual add + RMSNorm matches x += delta; rmsnorm(x)", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  rc::prop("with and without residual, with a row map", [] {
    const DType t = draw_dtype();
    const int dim = *rc::gen::inRange(1, 2000), rows = *rc::gen::inRange(1, 24);
    const bool with_delta = *rc::gen::arbitrary<bool>(), with_map = *rc::gen::arbitrary<bool>();
    const uint32_t seed = *rc::gen::arbitrary<uint32_t>();
    const float eps = 1e-5f;
    auto x = test::random_values(size_t(rows) * size_t(dim), seed, DType::Float32, 3.0f);
    const auto delta = test::random_values(x.size(), seed + 1, DType::Float32);
    const auto weight = test::random_values(size_t(dim), seed + 2, t);
    std::vector<int> map;
    if (with_map) map = *rc::gen::unique<std::vector<int>>(rc::gen::inRange(0, rows));
    const int out_rows = with_map ? int(map.size()) : rows;

    const auto d_x = test::upload(x, DType::Float32);
    const auto d_delta = test::upload(delta, DType::Float32);
    const auto d_w = test::upload(weight, t);
    const auto d_map = test::upload_ints(map);
    auto d_out = test::nan_filled(size_t(out_rows) * size_t(dim), t);
    cuda::launch_residual_rmsnorm(d_x.as<float>(), with_delta ? d_delta.as<float>() : nullptr, d_w.get(), t, dim,
                                  eps, with_map ? d_map.as<int>() : nullptr, out_rows, d_out.get(), nullptr);

    if (with_delta)
      for (size_t i = 0; i < x.size(); ++i) x[i] += delta[i];
    xt::xtensor<float, 1> w = xt::adapt(weight, {size_t(dim)});
    const auto normed = rmsnorm(as_matrix(x, size_t(rows), size_t(dim)), w, eps);
    std::vector<float> expected;
    for (int i = 0; i < out_rows; ++i) {
      const auto row = xt::row(normed, size_t(with_map ? map[size_t(i)] : i));
      expected.insert(expected.end(), row.begin(), row.end());
    }
    const auto err = test::compare(test::download(d_out, expected.size(), t), expected, test::tolerance_for(t));
    RC_ASSERT(err == "");
    // The residual stream itself is updated in float32 (exactly, one addition per element).
    if (with_delta && !with_map) RC_ASSERT(test::download(d_x, x.size(), DType::Float32) == x);
  });
}

TEST_CASE("SwiGLU matches silu(gate) * up", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  rc::prop("gate and up from one fused row", [] {
    const DType t = draw_dtype();
    const int hidden = *rc::gen::inRange(1, 3000), rows = *rc::gen::inRange(1, 24);
    const auto gate_up = test::random_values(size_t(rows) * 2 * size_t(hidden), *rc::gen::arbitrary<uint32_t>(),
                                             DType::Float32, 6.0f);
    const auto d_in = test::upload(gate_up, DType::Float32);
    auto d_out = test::nan_filled(size_t(rows) * size_t(hidden), t);
    cuda::launch_swiglu(d_in.as<float>(), rows, hidden, d_out.get(), t, nullptr);
    xt::xtensor<float, 2> gate({size_t(rows), size_t(hidden)}), up(gate.shape());
    for (int r = 0; r < rows; ++r)
      for (int i = 0; i < hidden; ++i) {
        gate(size_t(r), size_t(i)) = gate_up[size_t(r) * 2 * size_t(hidden) + size_t(i)];
        up(size_t(r), size_t(i)) = gate_up[size_t(r) * 2 * size_t(hidden) + size_t(hidden + i)];
      }
    const xt::xtensor<float, 2> expected = silu(gate) * up;
    const auto err = test::compare(test::download(d_out, expected.size(), t), as_vector(expected),
                                   test::tolerance_for(t));
    RC_ASSERT(err == "");
  });
}

TEST_CASE("RoPE + K/V page write matches apply_rope on q and k, then the cache write", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  rc::prop("both layouts, head dims 8, 64, 128, GQA 1..8, scattered cache slots", [] {
    const DType t = draw_dtype();
    const int head_dim = *rc::gen::element(8, 64, 128), n_kv = *rc::gen::inRange(1, 4);
    const int n_heads = n_kv * *rc::gen::inRange(1, 9), rows = *rc::gen::inRange(1, 20), max_seq = 1000;
    const RopeLayout layout = *rc::gen::element(RopeLayout::AdjacentPairs, RopeLayout::RotateHalf);
    const float theta = *rc::gen::element(10000.0f, 500000.0f);
    const int q_dim = n_heads * head_dim, kv_dim = n_kv * head_dim, width = q_dim + 2 * kv_dim;
    const auto positions = *rc::gen::container<std::vector<int>>(size_t(rows), rc::gen::inRange(0, max_seq));
    const int n_slots = rows + 7;
    const auto slots = *rc::gen::unique<std::vector<int>>(size_t(rows), rc::gen::inRange(0, n_slots));
    const auto qkv = test::random_values(size_t(rows) * size_t(width), *rc::gen::arbitrary<uint32_t>(),
                                         DType::Float32);

    // The angle tables as the executor builds them.
    const int half = head_dim / 2;
    std::vector<float> cos_t(size_t(max_seq) * size_t(half)), sin_t(cos_t.size());
    for (int p = 0; p < max_seq; ++p)
      for (int i = 0; i < half; ++i) {
        const float angle = float(p) * (1.0f / std::pow(theta, float(2 * i) / float(head_dim)));
        cos_t[size_t(p * half + i)] = std::cos(angle);
        sin_t[size_t(p * half + i)] = std::sin(angle);
      }
    auto d_qkv = test::upload(qkv, DType::Float32);
    const auto d_pos = test::upload_ints(positions), d_slots = test::upload_ints(slots);
    const auto d_cos = test::upload(cos_t, DType::Float32), d_sin = test::upload(sin_t, DType::Float32);
    auto d_k = test::nan_filled(size_t(n_slots) * size_t(kv_dim), t);
    auto d_v = test::nan_filled(size_t(n_slots) * size_t(kv_dim), t);
    cuda::launch_rope_kv_write(d_qkv.as<float>(), rows, n_heads, n_kv, head_dim, layout, d_pos.as<int>(),
                               d_cos.as<float>(), d_sin.as<float>(), d_slots.as<int>(),
                               cuda::KVLayer{d_k.get(), d_v.get(), t}, nullptr);

    xt::xtensor<float, 2> q({size_t(rows), size_t(q_dim)}), k({size_t(rows), size_t(kv_dim)}), v(k.shape());
    for (int r = 0; r < rows; ++r) {
      const float* row = qkv.data() + size_t(r) * size_t(width);
      std::copy(row, row + q_dim, &q(size_t(r), 0));
      std::copy(row + q_dim, row + q_dim + kv_dim, &k(size_t(r), 0));
      std::copy(row + q_dim + kv_dim, row + width, &v(size_t(r), 0));
    }
    apply_rope(q, positions, head_dim, theta, layout);
    apply_rope(k, positions, head_dim, theta, layout);
    const auto got_qkv = test::download(d_qkv, qkv.size(), DType::Float32);
    const auto got_k = test::download(d_k, size_t(n_slots) * size_t(kv_dim), t);
    const auto got_v = test::download(d_v, size_t(n_slots) * size_t(kv_dim), t);
    for (int r = 0; r < rows; ++r) {
      // q stays float32 and, with the reference's own angles and no FMA, is bit-exact.
      const std::vector<float> got_q(got_qkv.begin() + long(r) * width, got_qkv.begin() + long(r) * width + q_dim);
      RC_ASSERT(got_q == std::vector<float>(&q(size_t(r), 0), &q(size_t(r), 0) + q_dim));
      const auto slot_row = [&](const std::vector<float>& cache) {
        return std::vector<float>(cache.begin() + long(slots[size_t(r)]) * kv_dim,
                                  cache.begin() + long(slots[size_t(r)] + 1) * kv_dim);
      };
      RC_ASSERT(test::compare(slot_row(got_k), std::vector<float>(&k(size_t(r), 0), &k(size_t(r), 0) + kv_dim),
                              test::tolerance_for(t)) == "");
      RC_ASSERT(test::compare(slot_row(got_v), std::vector<float>(&v(size_t(r), 0), &v(size_t(r), 0) + kv_dim),
                              test::tolerance_for(t)) == "");
    }
  });
}

TEST_CASE("RMSNorm's epsilon counts where mean(x^2) is as small as it", "[cuda]") {
  // With |x| ~ 1 the 1e-5 of epsilon moves the result by ~5e-6, inside the
  // float32 tolerance: a kernel that dropped it would pass the property above.
  // At |x| ~ 3e-3, mean(x^2) ~ 3e-6 and epsilon changes the scale about 2x.
  ASTRAI_REQUIRE_GPU();
  const int dim = 256, rows = 3;
  const float eps = 1e-5f;
  const auto x = test::random_values(size_t(rows * dim), 91, DType::Float32, 3e-3f);
  const auto weight = test::random_values(size_t(dim), 92, DType::Float32);
  const auto d_x = test::upload(x, DType::Float32);
  const auto d_w = test::upload(weight, DType::Float32);
  auto d_out = test::nan_filled(size_t(rows * dim), DType::Float32);
  cuda::launch_residual_rmsnorm(d_x.as<float>(), nullptr, d_w.get(), DType::Float32, dim, eps, nullptr, rows,
                                d_out.get(), nullptr);
  xt::xtensor<float, 1> w = xt::adapt(weight, {size_t(dim)});
  const auto normed = rmsnorm(as_matrix(x, size_t(rows), size_t(dim)), w, eps);
  const std::vector<float> expected(normed.begin(), normed.end());
  CHECK(test::compare(test::download(d_out, expected.size(), DType::Float32), expected,
                      test::tolerance_for(DType::Float32)) == "");
}

TEST_CASE("float to bf16 on the device rounds to nearest, ties to even, as the host does", "[cuda]") {
  // Exact: both sides are the same IEEE rounding of the same float. Round
  // toward zero differs on every value whose low 16 bits exceed 0x8000, and
  // on half of the ties, which are listed explicitly.
  ASTRAI_REQUIRE_GPU();
  std::vector<float> values = test::random_values(4096, 93, DType::Float32, 100.0f);
  for (uint32_t bits : {0x3f808000u, 0x3f818000u, 0xbf808000u, 0xbf818000u, 0x3f80ffffu, 0x7f7fffffu, 0x00008000u}) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    values.push_back(f);
  }
  const auto d_in = test::upload(values, DType::Float32);
  auto d_out = test::nan_filled(values.size(), DType::BFloat16);
  cuda::launch_convert_from_float(d_in.as<float>(), values.size(), d_out.get(), DType::BFloat16, nullptr);
  const auto got = test::download(d_out, values.size(), DType::BFloat16);
  size_t mismatches = 0;
  for (size_t i = 0; i < values.size(); ++i)
    if (cuda::float_to_bf16_bits(got[i]) != cuda::float_to_bf16_bits(values[i])) ++mismatches;
  CHECK(mismatches == 0);
}
