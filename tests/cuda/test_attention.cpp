// Batch and chunking invariance of paged attention: a row's output has the
// same bits as a decode row and inside a prefill chunk of any size, and
// beside other sequences of any lengths, for drawn head dims (8 to 256), GQA
// ratios (1 to 16), split lengths and chunk sizes; and the split rule these
// rest on (split_len_of()). The launches are the executor's own
// (cuda/paged_attention.h). Its agreement with causal_attention() of
// reference/attention.cpp is the "paged_attention" kernel case
// (test_kernel_cases.cpp).
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <algorithm>
#include <cmath>

#include "cuda/batch_plan.h"
#include "cuda/device_page_cache.h"
#include "cuda/kernels/kernels.h"
#include "cuda/paged_attention.h"
#include "tests/cuda/gpu_test_support.h"

using namespace astrai;
using cuda::DType;

namespace {

struct AttentionCase {
  ModelConfig config;
  DType dtype;
  int page_size;
  int min_split_len = cuda::kMinSplitLen;   // the shortest split (a multiple of kAttentionTile)
  int max_splits = 0;                       // the most splits of a row; 0: the executor's (max_splits_for)
  int chunk_rows = cuda::kPrefillChunkRows; // prefill rows whose partials are kept at once
  std::vector<BatchToken> batch;
  xt::xtensor<float, 2> q;
};

// Runs the executor's attention launch sequence (cuda/paged_attention.h) on
// `batch` and returns [rows, q_dim]. The partials scratch is NaN-filled and
// exactly as large as the plan says, so a row written past its place or read
// before it is written fails.
std::vector<float> gpu_attention(const AttentionCase& c, cuda::DevicePageCache& cache, int layer) {
  const ModelConfig& m = c.config;
  const cuda::BatchPlan plan =
      cuda::plan_batch(c.batch, cache.pages(), m, cuda::kPrefillTileRows, c.chunk_rows);
  const cuda::PlanLayout layout(plan.rows, plan.pages_per_seq);
  std::vector<int> packed(layout.ints(), -1);
  layout.pack(plan, packed.data());
  const auto d_meta = test::upload_ints(packed);
  const size_t partials = cuda::attention_partial_floats(
      m, plan.partial_rows, cuda::max_splits_for(m.max_seq_len, c.min_split_len));
  const auto d_q = test::upload(std::vector<float>(c.q.begin(), c.q.end()), DType::Float32);
  auto o_partial = test::nan_filled(partials, DType::Float32);
  auto lse = test::nan_filled(partials / size_t(m.head_dim()), DType::Float32);
  auto out = test::nan_filled(size_t(plan.rows) * size_t(m.q_dim()), c.dtype);
  cuda::AttentionArgs a = cuda::attention_args(
      m, d_q.as<float>(), m.q_dim(), cuda::KVLayer{cache.layer_keys(layer), cache.layer_values(layer), c.dtype},
      c.page_size, layout, d_meta.as<int>(), c.min_split_len, o_partial.as<float>(), lse.as<float>());
  if (c.max_splits > 0) a.max_splits = std::min(a.max_splits, c.max_splits);  // fewer: the partials still fit
  cuda::launch_paged_attention(a, plan, layout, d_meta.as<int>(), out.get(), c.dtype, nullptr);
  return test::download(out, size_t(plan.rows) * size_t(m.q_dim()), c.dtype);
}

// Head dims up to the kernels' 256: 146 is the smallest whose shared memory
// passes 48 KiB (the opt-in), 256 the largest. GQA ratios 1 to 16 (the most a
// decode block holds).
ModelConfig draw_config() {
  ModelConfig m;
  const int head_dim = *rc::gen::element(8, 64, 128, 146, 256);
  m.n_kv_heads = *rc::gen::inRange(1, 3);
  m.n_heads = m.n_kv_heads * *rc::gen::element(1, 2, 3, 4, 6, 8, 16);
  m.dim = m.n_heads * head_dim;
  m.hidden_dim = 8;
  m.n_layers = 2;
  m.vocab_size = 8;
  m.max_seq_len = 700;  // three splits of 256
  return m;
}

// Shortest splits other than the executor's (from one tile), caps of 1 to 3
// splits per row (so that a row's split length grows with its position
// within these short contexts, and rows of one prefill tile can have
// different split lengths), and prefill chunks of one tile upwards, so that
// rows land in many splits and chunks.
void draw_splits(AttentionCase& c) {
  c.min_split_len = *rc::gen::element(cuda::kAttentionTile, 64, 96, 256);
  c.max_splits = *rc::gen::element(0, 1, 2, 3);
  c.chunk_rows = *rc::gen::element(cuda::kPrefillTileRows, 48, cuda::kPrefillChunkRows);
}

}  // namespace

TEST_CASE("a row's attention has the same bits as a decode row and inside any prefill chunk", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  rc::prop("the last position alone, then with 1..40 rows before it", [] {
    AttentionCase c;
    c.config = draw_config();
    c.dtype = *rc::gen::element(DType::Float32, DType::BFloat16);
    c.page_size = 16;
    draw_splits(c);
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

TEST_CASE("a row's splits depend on its own position only and never exceed max_splits", "[cuda][plan]") {
  rc::prop("split_len_of(pos, min, max)", [] {
    const int min_len = cuda::kAttentionTile * *rc::gen::inRange(1, 9);
    const int max_splits = *rc::gen::inRange(1, 65);
    const int pos = *rc::gen::inRange(0, 300000);
    const int len = cuda::split_len_of(pos, min_len, max_splits);
    // The rule as docs/cuda.md states it: 16 splits, or one per 512 positions past 8k, at most max_splits.
    const int splits = std::min(max_splits, std::max(16, (pos + 1) / 512));
    RC_ASSERT(len % cuda::kAttentionTile == 0);
    RC_ASSERT(len >= min_len);
    RC_ASSERT(pos / len + 1 <= splits);  // within the partials' room and the decode grid's z
    // The shortest such length: one tile less would need more splits or be under min_len.
    const bool shortest = len == min_len || pos / (len - cuda::kAttentionTile) + 1 > splits;
    RC_ASSERT(shortest);  // (a bool: RC_ASSERT's captured || would not short-circuit)
  });
  // The executor's rule for Llama 3 8B (8 KV heads): 16 splits of 64 at 1k
  // context (128 blocks for 132 SMs), 16 of 128 at 2k, 32 of 4,096 at 131k.
  CHECK(cuda::split_len_for(131072) == 64);
  CHECK(cuda::max_splits_for(131072, 64) == 32);
  CHECK(cuda::max_splits_for(8192, 64) == 16);
  CHECK(cuda::split_len_of(1023, 64, 32) == 64);
  CHECK(cuda::split_len_of(2047, 64, 32) == 128);
  CHECK(cuda::split_len_of(131071, 64, 32) == 4096);
  // Every position of a context fits the executor's partials.
  for (const int max_seq_len : {700, 8192, 40000}) {
    const int most = cuda::max_splits_for(max_seq_len, 64);
    int worst = 0;
    for (int pos = 0; pos < max_seq_len; ++pos) worst = std::max(worst, pos / cuda::split_len_of(pos, 64, most) + 1);
    CHECK(worst <= most);
  }
}

TEST_CASE("a row's attention has the same bits alone and beside other sequences", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  rc::prop("one decode row, then with 1..3 other sequences (decode rows and prompts)", [] {
    AttentionCase c;
    c.config = draw_config();
    c.dtype = *rc::gen::element(DType::Float32, DType::BFloat16);
    c.page_size = *rc::gen::element(1, 7, 16);
    draw_splits(c);
    const int others = *rc::gen::inRange(1, 4), layer = 0;
    std::vector<int> lens{*rc::gen::inRange(1, 400)};
    for (int i = 0; i < others; ++i) lens.push_back(*rc::gen::inRange(1, 400));
    const uint32_t seed = *rc::gen::arbitrary<uint32_t>();
    cuda::DevicePageCache cache(c.config, 4 * (400 / c.page_size + 2), c.page_size, c.dtype);
    const int kv_dim = c.config.kv_dim(), q_dim = c.config.q_dim();
    for (int s = 0; s < int(lens.size()); ++s) {
      RC_ASSERT(cache.admit(s, std::vector<int>(size_t(lens[size_t(s)]), 1 + s)).has_value());  // no shared prefix
      for (int pos = 0; pos < lens[size_t(s)]; ++pos) {
        const auto k = test::random_values(size_t(kv_dim), seed + uint64_t(1000 * s + pos), c.dtype, 2.0f);
        const auto v = test::random_values(size_t(kv_dim), ~seed - uint64_t(1000 * s + pos), c.dtype);
        cache.view().write(layer, s, pos, k.data(), v.data());
      }
    }
    const auto q0 = test::random_values(size_t(q_dim), seed ^ 0x55u, DType::Float32, 2.0f);
    // Sequence 0's last position alone.
    c.batch = {{1, 0, lens[0] - 1, false}};
    c.q = xt::zeros<float>({size_t(1), size_t(q_dim)});
    std::copy(q0.begin(), q0.end(), &c.q(0, 0));
    const auto alone = gpu_attention(c, cache, layer);
    RC_ASSERT(gpu_attention(c, cache, layer) == alone);  // the same launch twice: the same bits (no atomics)
    // The same row after the others' rows: each other sequence has its last
    // position or up to 20 of its last positions (a prompt chunk) in the batch.
    c.batch.clear();
    for (int s = 1; s < int(lens.size()); ++s) {
      const int n = std::min(lens[size_t(s)], *rc::gen::element(1, 20));
      for (int pos = lens[size_t(s)] - n; pos < lens[size_t(s)]; ++pos) c.batch.push_back({1, s, pos, false});
    }
    c.batch.push_back({1, 0, lens[0] - 1, false});
    const auto rows = c.batch.size();
    const auto filler = test::random_values(rows * size_t(q_dim), seed ^ 0x99u, DType::Float32, 2.0f);
    c.q = xt::zeros<float>({rows, size_t(q_dim)});
    std::copy(filler.begin(), filler.end(), c.q.begin());
    std::copy(q0.begin(), q0.end(), &c.q(rows - 1, 0));
    const auto all = gpu_attention(c, cache, layer);
    // Exact: the row's splits are split_len_of() its own position, and its
    // arithmetic is attention_split.cuh's fixed order whatever the batch.
    RC_ASSERT(std::vector<float>(all.end() - q_dim, all.end()) == alone);
  });
}
