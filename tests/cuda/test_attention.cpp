// Batch and chunking invariance of paged attention: a row's output has the
// same bits as a decode row and inside a prefill chunk of any size, for
// drawn head dims (8 to 256), GQA ratios (1 to 16), split lengths and chunk
// sizes. The launches are the executor's own (cuda/paged_attention.h). Its
// agreement with causal_attention() of reference/attention.cpp is the
// "paged_attention" kernel case (test_kernel_cases.cpp).
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
  int split_len = 256;                      // positions per split (a multiple of kAttentionTile)
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
  const int max_splits = cuda::max_splits_for(m.max_seq_len, c.split_len);
  const size_t partials = cuda::attention_partial_floats(m, plan.partial_rows, max_splits);
  const auto d_q = test::upload(std::vector<float>(c.q.begin(), c.q.end()), DType::Float32);
  auto o_partial = test::nan_filled(partials, DType::Float32);
  auto lse = test::nan_filled(partials / size_t(m.head_dim()), DType::Float32);
  auto out = test::nan_filled(size_t(plan.rows) * size_t(m.q_dim()), c.dtype);
  const cuda::AttentionArgs a = cuda::attention_args(
      m, d_q.as<float>(), m.q_dim(), cuda::KVLayer{cache.layer_keys(layer), cache.layer_values(layer), c.dtype},
      c.page_size, layout, d_meta.as<int>(), c.split_len, o_partial.as<float>(), lse.as<float>());
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

// Split lengths other than the executor's 256 (down to one tile), and prefill
// chunks of one tile upwards, so that rows land in many splits and chunks.
void draw_splits(AttentionCase& c) {
  c.split_len = *rc::gen::element(cuda::kAttentionTile, 64, 96, 256);
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
