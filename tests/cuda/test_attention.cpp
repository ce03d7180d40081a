// Prefill and decode attention over pages, merged by log-sum-exp, against
// causal_attention() of reference/attention.cpp reading the very same
// values, which the test also writes into a host DenseKVCache. Drawn by RapidCheck:
// head dims 64 and 128 (and 8, as stories260K), GQA ratios 1 to 8, page
// sizes, ragged sequence lengths past one split, cached prefixes (positions
// written before the batch), decode and prefill rows in one batch.
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <algorithm>
#include <cmath>

#include "cuda/batch_plan.h"
#include "cuda/device_page_cache.h"
#include "cuda/kernels/kernels.h"
#include "reference/attention.h"
#include "reference/dense_kv_cache.h"
#include "tests/cuda/gpu_test_support.h"

using namespace astrai;
using cuda::DType;

namespace {

struct AttentionCase {
  ModelConfig config;
  DType dtype;
  int page_size;
  std::vector<BatchToken> batch;
  xt::xtensor<float, 2> q;
};

// Runs the three attention kernels on `batch` and returns [rows, q_dim].
std::vector<float> gpu_attention(const AttentionCase& c, cuda::DevicePageCache& cache, int layer) {
  const ModelConfig& m = c.config;
  const cuda::BatchPlan plan = cuda::plan_batch(c.batch, cache.bookkeeping(), m, cuda::kPrefillTileRows);
  const int rows = plan.rows, split_len = 256, max_splits = (m.max_seq_len + split_len - 1) / split_len;
  const auto d_q = test::upload(std::vector<float>(c.q.begin(), c.q.end()), DType::Float32);
  const auto d_tables = test::upload_ints(plan.page_tables), d_seq = test::upload_ints(plan.row_seq);
  const auto d_pos = test::upload_ints(plan.row_pos), d_decode = test::upload_ints(plan.decode_rows);
  const auto d_first = test::upload_ints(plan.tile_first), d_count = test::upload_ints(plan.tile_count);
  const auto d_tile_rows = test::upload_ints(plan.tile_rows);
  auto o_partial = test::nan_filled(size_t(rows) * size_t(m.n_heads * max_splits * m.head_dim()), DType::Float32);
  auto lse = test::nan_filled(size_t(rows) * size_t(m.n_heads * max_splits), DType::Float32);
  auto out = test::nan_filled(size_t(rows) * size_t(m.q_dim()), c.dtype);
  cuda::AttentionArgs a;
  a.q = d_q.as<float>();
  a.q_stride = m.q_dim();
  a.kv = cuda::KVLayer{cache.layer_keys(layer), cache.layer_values(layer), c.dtype};
  a.page_size = c.page_size;
  a.page_tables = d_tables.as<int>();
  a.pages_per_seq = plan.pages_per_seq;
  a.row_seq = d_seq.as<int>();
  a.row_pos = d_pos.as<int>();
  a.n_heads = m.n_heads;
  a.n_kv_heads = m.n_kv_heads;
  a.head_dim = m.head_dim();
  a.split_len = split_len;
  a.max_splits = max_splits;
  a.scale = 1.0f / std::sqrt(float(m.head_dim()));
  a.o_partial = o_partial.as<float>();
  a.lse_partial = lse.as<float>();
  cuda::launch_decode_attention(a, d_decode.as<int>(), int(plan.decode_rows.size()), nullptr);
  cuda::launch_prefill_attention(a, d_first.as<int>(), d_count.as<int>(), d_tile_rows.as<int>(),
                                 int(plan.tile_first.size()), nullptr);
  cuda::launch_attention_merge(a, rows, out.get(), c.dtype, nullptr);
  return test::download(out, size_t(rows) * size_t(m.q_dim()), c.dtype);
}

ModelConfig draw_config() {
  ModelConfig m;
  const int head_dim = *rc::gen::element(8, 64, 128);
  m.n_kv_heads = *rc::gen::inRange(1, 3);
  m.n_heads = m.n_kv_heads * *rc::gen::inRange(1, 9);
  m.dim = m.n_heads * head_dim;
  m.hidden_dim = 8;
  m.n_layers = 2;
  m.vocab_size = 8;
  m.max_seq_len = 700;  // three splits of 256
  return m;
}

}  // namespace

TEST_CASE("paged attention matches the reference's causal attention", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  rc::prop("ragged sequences, cached prefixes, decode and prefill rows together", [] {
    AttentionCase c;
    c.config = draw_config();
    c.dtype = *rc::gen::element(DType::Float32, DType::BFloat16);
    c.page_size = *rc::gen::element(1, 7, 16, 32);
    const int n_seqs = *rc::gen::inRange(1, 5), layer = 1;
    const uint32_t seed = *rc::gen::arbitrary<uint32_t>();
    cuda::DevicePageCache cache(c.config, (n_seqs + 1) * (600 / c.page_size + 2) + 8, c.page_size, c.dtype);
    DenseKVCache mirror(c.config, n_seqs);  // the same rows on the host, for the oracle
    const int kv_dim = c.config.kv_dim();
    // `len` positions in all; the last `fresh` are this batch's rows (1: a decode row),
    // the ones before them a prefix already in the cache.
    std::vector<int> lens, fresh;
    for (int s = 0; s < n_seqs; ++s) {
      lens.push_back(*rc::gen::inRange(1, 600));
      fresh.push_back(*rc::gen::element(1, 1, std::min(lens.back(), 3), std::min(lens.back(), 40), lens.back()));
    }
    // Pages are handed out in turns, one page per sequence and one to a spacer
    // task per round, so every page table is scattered: a kernel that took a
    // sequence's pages to be contiguous would read another sequence's rows.
    const int spacer = 1000;
    for (int s = 0; s < n_seqs; ++s)
      RC_ASSERT(cache.admit(s, std::vector<int>(size_t(std::min(lens[size_t(s)], c.page_size)), 1)).has_value());
    RC_ASSERT(cache.admit(spacer, std::vector<int>(1, 1)).has_value());
    for (int have = c.page_size;; have += c.page_size) {
      bool grew = false;
      for (int s = 0; s < n_seqs; ++s)
        if (lens[size_t(s)] > have) {
          RC_ASSERT(cache.reserve(s, std::min(lens[size_t(s)], have + c.page_size)));
          grew = true;
        }
      if (!grew) break;
      RC_ASSERT(cache.reserve(spacer, std::min(600, have + c.page_size)));
    }
    for (int s = 0; s < n_seqs; ++s) {
      const int len = lens[size_t(s)];
      for (int pos = 0; pos < len; ++pos) {
        const auto k = test::random_values(size_t(kv_dim), seed + uint64_t(s * 1000 + pos), c.dtype, 2.0f);
        const auto v = test::random_values(size_t(kv_dim), ~seed - uint64_t(s * 1000 + pos), c.dtype);
        cache.view().write(layer, s, pos, k.data(), v.data());
        mirror.write(layer, s, pos, k.data(), v.data());
      }
      // The view reads back what it wrote (values are already representable in the dtype).
      const float* back = cache.view().value(layer, s, len - 1);
      RC_ASSERT(std::equal(back, back + kv_dim, mirror.value(layer, s, len - 1)));
      for (int pos = len - fresh[size_t(s)]; pos < len; ++pos) c.batch.push_back({1, s, pos, false});
    }
    const auto q = test::random_values(c.batch.size() * size_t(c.config.q_dim()), seed ^ 0x5555u, DType::Float32,
                                       2.0f);
    c.q = xt::xtensor<float, 2>({c.batch.size(), size_t(c.config.q_dim())});
    std::copy(q.begin(), q.end(), c.q.begin());

    const auto got = gpu_attention(c, cache, layer);
    const auto expected = causal_attention(c.q, c.batch, mirror, layer, c.config);
    const auto err = test::compare(got, std::vector<float>(expected.begin(), expected.end()),
                                   test::tolerance_for(c.dtype));
    RC_ASSERT(err == "");
  });
}

TEST_CASE("a row's attention has the same bits as a decode row and inside any prefill chunk", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  rc::prop("the last position alone, then with 1..40 rows before it", [] {
    AttentionCase c;
    c.config = draw_config();
    c.dtype = *rc::gen::element(DType::Float32, DType::BFloat16);
    c.page_size = 16;
    const int len = *rc::gen::inRange(2, 650), layer = 0;
    const uint32_t seed = *rc::gen::arbitrary<uint32_t>();
    cuda::DevicePageCache cache(c.config, 64, c.page_size, c.dtype);
    RC_ASSERT(cache.admit(0, std::vector<int>(size_t(len), 1)).has_value());
    const int kv_dim = c.config.kv_dim(), q_dim = c.config.q_dim();
    for (int pos = 0; pos < len; ++pos) {
      const auto k = test::random_values(size_t(kv_dim), seed + uint64_t(pos), c.dtype, 2.0f);
      const auto v = test::random_values(size_t(kv_dim), ~seed - uint64_t(pos), c.dtype);
      cache.view().write(layer, 0, pos, k.data(), v.data());
    }
    const auto last_q = test::random_values(size_t(q_dim), seed ^ 0x77u, DType::Float32, 2.0f);
    const auto run = [&](int n_rows) {
      c.batch.clear();
      for (int pos = len - n_rows; pos < len; ++pos) c.batch.push_back({1, 0, pos, false});
      c.q = xt::zeros<float>({size_t(n_rows), size_t(q_dim)});
      std::copy(last_q.begin(), last_q.end(), &c.q(size_t(n_rows - 1), 0));
      const auto all = gpu_attention(c, cache, layer);
      return std::vector<float>(all.end() - q_dim, all.end());
    };
    const auto as_decode = run(1);
    const auto in_prefill = run(*rc::gen::inRange(2, std::min(len, 40) + 1));
    // Exact: both run attention_split.cuh's one routine, whose sums have a fixed
    // order and whose fully masked tiles change nothing (see its header).
    RC_ASSERT(as_decode == in_prefill);
  });
}
