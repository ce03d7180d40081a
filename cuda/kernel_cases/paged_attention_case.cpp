// The attention case: decode attention, prefill attention and the
// log-sum-exp merge as the executor launches them (cuda/paged_attention.h),
// over K/V in a DevicePageCache whose page tables are scattered (pages are
// handed out in turns, one per sequence and one to a spacer task per round,
// so a kernel that took a sequence's pages to be contiguous reads another
// sequence's rows). The oracle is causal_attention() of
// reference/attention.cpp reading the very same K/V values from a host
// DenseKVCache.
//
// Dimensions: head_dim, n_kv, ratio (query heads per KV head), n_seqs, len
// (the longest sequence), ragged (1: each sequence's length drawn in
// [1, len]), fresh (rows of each sequence in the batch, the last positions;
// 0: drawn per sequence among 1, 3, 40 and all), page, split (the shortest
// split, min_split_len), splits (the most splits of a row; 0: the executor's
// max_splits_for), chunk (prefill rows whose partials are kept at once) and
// window (a sliding window: each row attends to its last `window` positions;
// 0: to all) and sinks (1: a sink logit per query head, gpt-oss's; absent: 0).
#include <algorithm>
#include <cmath>
#include <random>

#include <xtensor/xtensor.hpp>

#include "cuda/batch_plan.h"
#include "cuda/device_page_cache.h"
#include "cuda/kernel_cases/device_arrays.h"
#include "cuda/kernel_cases/kernel_case.h"
#include "cuda/paged_attention.h"
#include "reference/attention.h"
#include "reference/dense_kv_cache.h"

namespace astrai::cuda::cases {
namespace {

struct PagedAttentionRun final : KernelRun {
  DType t;
  ModelConfig m;
  int page, split, splits, chunk;
  std::vector<int> lens;
  std::vector<BatchToken> batch;
  std::unique_ptr<DevicePageCache> cache;
  std::vector<float> keys, values, q;  // the layer's whole K/V storage as uploaded, and the queries
  BatchPlan plan;
  std::unique_ptr<PlanLayout> layout;
  std::vector<float> sinks;  // a sink logit per query head (gpt-oss), or none
  DeviceBuffer d_meta, d_q, d_o, d_lse, d_out, d_sinks;

  explicit PagedAttentionRun(const KernelShape& s)
      : t(s.dtype), page(s["page"]), split(s["split"]), splits(s["splits"]), chunk(s["chunk"]) {
    const int head_dim = s["head_dim"], n_seqs = s["n_seqs"], len = s["len"];
    m.n_kv_heads = s["n_kv"];
    m.n_heads = m.n_kv_heads * s["ratio"];
    m.dim = m.n_heads * head_dim;
    m.hidden_dim = 8;
    m.n_layers = 1;
    m.vocab_size = 8;
    m.max_seq_len = len + 100;
    m.sliding_window = s["window"];  // the one layer slides when set
    std::mt19937 rng(s.seed);
    const auto below = [&](int n) { return int(rng() % uint32_t(n)); };
    std::vector<int> fresh;
    for (int i = 0; i < n_seqs; ++i) {
      lens.push_back(s["ragged"] ? 1 + below(len) : len);
      const int mixed[] = {1, 1, 3, 40, lens.back()};
      fresh.push_back(std::min(lens.back(), s["fresh"] > 0 ? s["fresh"] : mixed[below(5)]));
    }
    const int spacer = n_seqs;
    cache = std::make_unique<DevicePageCache>(m, (n_seqs + 1) * (len / page + 2) + 8, page, t);
    for (int i = 0; i < n_seqs; ++i)
      if (!cache->admit(i, std::vector<int>(size_t(std::min(lens[size_t(i)], page)), 1)))
        throw std::logic_error("paged attention case: the cache is too small");
    cache->admit(spacer, std::vector<int>(1, 1));
    for (int have = page;; have += page) {  // one more page each, in turns, with the spacer between
      bool grew = false;
      for (int i = 0; i < n_seqs; ++i)
        if (lens[size_t(i)] > have) grew = cache->reserve(i, std::min(lens[size_t(i)], have + page)) || grew;
      if (!grew) break;
      cache->reserve(spacer, std::min(len, have + page));
    }
    const size_t storage = size_t(cache->n_pages()) * size_t(page) * size_t(m.kv_dim());
    keys = test::random_values(storage, s.seed + 1, t, 2.0f);
    values = test::random_values(storage, s.seed + 2, t);
    test::upload_to(cache->layer_keys(0), keys, t);
    test::upload_to(cache->layer_values(0), values, t);
    for (int i = 0; i < n_seqs; ++i)
      for (int pos = lens[size_t(i)] - fresh[size_t(i)]; pos < lens[size_t(i)]; ++pos)
        batch.push_back({1, i, pos, false});
    q = test::random_values(batch.size() * size_t(m.q_dim()), s.seed + 3, DType::Float32, 2.0f);
    if (s.get("sinks", 0)) {
      // Whole logits 1..5 (exact in bf16), about the largest scores' size
      // (q and k of up to 2 give scores of std ~1.3): every row's sink takes
      // a share its output shows, in bf16 as in float32.
      m.options.attention_sinks = true;
      for (int h = 0; h < m.n_heads; ++h) sinks.push_back(float(1 + below(5)));
      d_sinks = test::upload(sinks, t);
    }

    plan = plan_batch(batch, cache->pages(), m, kPrefillTileRows, chunk);
    layout = std::make_unique<PlanLayout>(plan.rows, plan.pages_per_seq);
    std::vector<int> packed(layout->ints(), -1);
    layout->pack(plan, packed.data());
    d_meta = test::upload_ints(packed);
    d_q = test::upload(q, DType::Float32);
    const size_t partials = attention_partial_floats(m, plan.partial_rows, max_splits_for(m.max_seq_len, split));
    d_o = test::nan_filled(partials, DType::Float32);
    d_lse = test::nan_filled(partials / size_t(head_dim), DType::Float32);
    d_out = test::nan_filled(size_t(plan.rows) * size_t(m.q_dim()), t);

    double positions_seen = 0.0, kv_positions = 0.0;
    const int window = m.sliding_window > 0 ? m.sliding_window : len + 1;
    for (const BatchToken& row : batch) positions_seen += std::min(row.pos + 1, window);
    for (int l : lens) kv_positions += std::min(l, window);  // a decode row's reads; prefill rows reach further back
    bytes = 2.0 * kv_positions * m.kv_dim() * double(dtype_size(t)) +
            double(plan.rows) * m.q_dim() * (4.0 + double(dtype_size(t)));
    flops = 4.0 * positions_seen * m.q_dim();  // q.k and p v for every visible position
  }

  void launch(int variant, cudaStream_t stream) override {
    if (variant != 1) throw std::invalid_argument("paged_attention has no variant " + std::to_string(variant));
    AttentionArgs a =
        attention_args(m, d_q.as<float>(), m.q_dim(), KVLayer{cache->layer_keys(0), cache->layer_values(0), t}, page,
                       *layout, d_meta.as<int>(), split, d_o.as<float>(), d_lse.as<float>());
    if (splits > 0) a.max_splits = std::min(a.max_splits, splits);  // fewer: the partials still fit
    a.window = m.window(0);
    a.sinks = d_sinks.get();
    launch_paged_attention(a, plan, *layout, d_meta.as<int>(), d_out.get(), t, stream);
  }

  std::vector<float> result() override { return test::download(d_out, size_t(plan.rows) * size_t(m.q_dim()), t); }

  // In float32 the tolerance grows with the sums' lengths: an output is a
  // sum over up to `len` positions of weights from head_dim-term dot
  // products, and two summation orders of n terms differ by up to about
  // 2 n u of the terms' magnitudes (Higham's gamma_n, on both sides: u =
  // 2^-24). A fixed 1e-5 was below that for long rows: a 401-position,
  // 256-dimension shape differed by 1.03e-5 of the mean magnitude (seed
  // 16089039683560429831 of the shuffled-thread run). Real defects (a wrong
  // page, a missing barrier, a bad merge) are off by orders more.
  std::string check(double rtol) override {
    if (t == DType::Float32) {
      const int longest = *std::max_element(lens.begin(), lens.end());
      rtol = std::max(rtol, 2.0 * double(longest + m.head_dim()) * std::ldexp(1.0, -24));
    }
    return test::compare(result(), expected(), rtol);
  }

  std::vector<float> expected() override {
    DenseKVCache mirror(m, int(lens.size()));
    const size_t kv_dim = size_t(m.kv_dim());
    for (int i = 0; i < int(lens.size()); ++i) {
      const auto table = cache->pages().page_table(i);
      for (int pos = 0; pos < lens[size_t(i)]; ++pos) {
        const size_t slot = size_t(table[size_t(pos / page)]) * size_t(page) + size_t(pos % page);
        mirror.write(0, i, pos, keys.data() + slot * kv_dim, values.data() + slot * kv_dim);
      }
    }
    xt::xtensor<float, 2> queries({batch.size(), size_t(m.q_dim())});
    std::copy(q.begin(), q.end(), queries.begin());
    auto sink_logits = xt::xtensor<float, 1>::from_shape({sinks.size()});
    std::copy(sinks.begin(), sinks.end(), sink_logits.begin());
    const auto out = causal_attention(queries, batch, mirror, 0, m, sink_logits);
    return {out.begin(), out.end()};
  }
};

KernelShape attention_shape(int n_seqs, int len, int fresh) {
  return {DType::BFloat16, 1,
          {{"head_dim", 128}, {"n_kv", 8}, {"ratio", 4}, {"n_seqs", n_seqs}, {"len", len}, {"ragged", 0},
           {"fresh", fresh}, {"page", 16}, {"split", split_len_for(len)}, {"splits", 0},
           {"chunk", kPrefillChunkRows}, {"window", 0}}};
}

}  // namespace

KernelCase paged_attention_case() {
  return {"paged_attention",
          "cuda/kernels/decode_attention.cu, prefill_attention.cu, attention_merge.cu (cuda/paged_attention.cpp)",
          "causal_attention() in reference/attention.cpp", 1,
          {1e-5, 1e-2,
           "float32: online softmax and split merging sum in another order than the two-pass reference, at least "
           "1e-5 and 2 (len + head_dim) 2^-24 for long rows (check() says why); bf16: the output's rounding"},
          [](const Pick& pick) {
            // Head dims up to 256 (146: the smallest over 48 KiB of shared
            // memory, which needs the opt-in), GQA ratios up to 16, split
            // lengths from one tile, prefill chunks from one tile; query
            // heads x head_dim kept <= 2048 so the emulated run stays short.
            const int head_dim = pick_from(pick, {8, 64, 128, 146, 256});
            int n_kv = pick(1, 2), ratio = pick_from(pick, {1, 2, 3, 4, 6, 8, 16});
            if (n_kv * ratio * head_dim > 2048) n_kv = 1;
            ratio = std::min(ratio, 2048 / head_dim);
            return KernelShape{pick(0, 1) ? DType::BFloat16 : DType::Float32, uint32_t(pick(0, 1 << 30)),
                               {{"head_dim", head_dim}, {"n_kv", n_kv}, {"ratio", ratio}, {"n_seqs", pick(1, 4)},
                                {"len", pick(1, 600)}, {"ragged", 1}, {"fresh", 0},
                                {"page", pick_from(pick, {1, 7, 16, 32})},
                                {"split", pick_from(pick, {kAttentionTile, 64, 96, 256})},
                                {"splits", pick_from(pick, {0, 1, 2, 3})},
                                {"chunk", pick_from(pick, {kPrefillTileRows, 48, kPrefillChunkRows})},
                                // Windows of one position, around a tile and
                                // a split's edge, and past most rows.
                                {"window", pick_from(pick, {0, 0, 1, 31, 32, 33, 100, 700})},
                                {"sinks", pick(0, 1)}}};  // gpt-oss's sink logits
          },
          {attention_shape(1, 4096, 1), attention_shape(16, 4096, 1), attention_shape(64, 2048, 1),
           attention_shape(1, 1024, 1024), attention_shape(1, 4096, 4096)},
          [](const KernelShape& s) { return std::make_unique<PagedAttentionRun>(s); }};
}

}  // namespace astrai::cuda::cases
