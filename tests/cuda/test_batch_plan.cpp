// The host-side batch plan (no GPU needed: runs on CI too): rows grouped by
// sequence, decode rows and prefill tiles, cache slots from the page tables,
// and the same errors as the reference and PageCacheView for bad rows.
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <algorithm>

#include "cuda/batch_plan.h"
#include "cuda/device_page_cache.h"
#include "cuda/kernels/kernels.h"
#include "engine/kv_cache/page_cache.h"
#include "reference/synthetic_model.h"

using namespace astrai;

TEST_CASE("a batch plan routes each sequence's rows and addresses their pages", "[cuda][plan]") {
  rc::prop("random sequences of random lengths, rows interleaved", [] {
    ModelConfig config = preset_config("tiny");
    config.max_seq_len = 200;
    const int page_size = *rc::gen::element(1, 4, 16);
    PageManager pages(config.max_seq_len, 4 * 200 / page_size + 8, page_size);
    const int n_seqs = *rc::gen::inRange(1, 5);
    std::vector<std::vector<BatchToken>> per_seq;
    std::vector<int> rows_per_seq;
    for (int s = 0; s < n_seqs; ++s) {
      const int len = *rc::gen::inRange(1, 200), fresh = *rc::gen::inRange(1, std::min(len, 40) + 1);
      RC_ASSERT(pages.admit(10 + s, std::vector<int>(size_t(len), 1)).has_value());
      rows_per_seq.push_back(fresh);
      per_seq.emplace_back();
      for (int pos = len - fresh; pos < len; ++pos) per_seq.back().push_back({s, 10 + s, pos, pos == len - 1});
    }
    // Interleave the sequences round-robin, keeping each one's positions in order.
    std::vector<BatchToken> batch;
    for (size_t i = 0; i < 40; ++i)
      for (const auto& rows : per_seq)
        if (i < rows.size()) batch.push_back(rows[i]);
    const int chunk_rows = *rc::gen::element(16, 32, 100, 256);
    const auto plan = cuda::plan_batch(batch, pages, config, 16, chunk_rows);
    RC_ASSERT(plan.rows == int(batch.size()));
    RC_ASSERT(plan.n_seqs == n_seqs);
    int tiled = 0;
    for (size_t t = 0; t < plan.tile_first.size(); ++t) {
      RC_ASSERT(plan.tile_count[t] >= 1 && plan.tile_count[t] <= 16);
      tiled += plan.tile_count[t];
      for (int i = 1; i < plan.tile_count[t]; ++i) {
        const int prev = plan.tile_rows[size_t(plan.tile_first[t] + i - 1)];
        const int row = plan.tile_rows[size_t(plan.tile_first[t] + i)];
        RC_ASSERT(plan.row_seq[size_t(row)] == plan.row_seq[size_t(prev)]);
        RC_ASSERT(plan.row_pos[size_t(row)] > plan.row_pos[size_t(prev)]);
      }
    }
    RC_ASSERT(tiled + int(plan.decode_rows.size()) == plan.rows);
    for (size_t r = 0; r < batch.size(); ++r) {
      const auto table = pages.page_table(batch[r].seq);
      RC_ASSERT(plan.row_slot[r] == table[size_t(batch[r].pos / page_size)] * page_size + batch[r].pos % page_size);
      RC_ASSERT(plan.page_tables[size_t(plan.row_seq[r] * plan.pages_per_seq + batch[r].pos / page_size)] ==
                table[size_t(batch[r].pos / page_size)]);
    }
    RC_ASSERT(int(plan.wanted_rows.size()) == n_seqs);
    for (int row : plan.decode_rows) RC_ASSERT(rows_per_seq[size_t(batch[size_t(row)].seq - 10)] == 1);

    // Partials: chunks cover the tiles in order, whole tiles, at most chunk_rows
    // rows each; within the decode rows and within each chunk every row has
    // its own index below partial_rows, so no two rows alive at once share one.
    const int D = int(plan.decode_rows.size());
    for (int i = 0; i < D; ++i) RC_ASSERT(plan.row_partial[size_t(plan.decode_rows[size_t(i)])] == i);
    if (plan.tile_first.empty()) {
      RC_ASSERT(plan.n_chunks() == 0);
    } else {
      RC_ASSERT(plan.chunk_tiles.front() == 0);
      RC_ASSERT(plan.chunk_tiles.back() == int(plan.tile_first.size()));
    }
    for (int c = 0; c < plan.n_chunks(); ++c) {
      const int r0 = plan.chunk_row_begin(c), r1 = plan.chunk_row_begin(c + 1);
      RC_ASSERT(plan.chunk_tiles[size_t(c)] < plan.chunk_tiles[size_t(c) + 1]);
      RC_ASSERT(r1 - r0 <= chunk_rows);
      std::vector<int> seen;
      for (int i = r0; i < r1; ++i) seen.push_back(plan.row_partial[size_t(plan.tile_rows[size_t(i)])]);
      std::sort(seen.begin(), seen.end());
      RC_ASSERT(std::adjacent_find(seen.begin(), seen.end()) == seen.end());
      RC_ASSERT(seen.front() >= D && seen.back() < plan.partial_rows);
    }
    RC_ASSERT(plan.partial_rows <= D + std::min(chunk_rows, plan.rows - D));
  });
}

TEST_CASE("a batch plan rejects rows the forward pass must not run", "[cuda][plan]") {
  const ModelConfig config = preset_config("tiny");
  PageManager pages(config.max_seq_len, 16, 4);
  const std::vector<int> prompt = {1, 2, 3, 4, 5, 6};
  pages.admit(1, prompt);
  const auto plan_of = [&](std::vector<BatchToken> rows) { return cuda::plan_batch(rows, pages, config, 16, 256); };
  CHECK_THROWS_AS(plan_of({{config.vocab_size, 1, 0, true}}), std::invalid_argument);  // token
  CHECK_THROWS_AS(plan_of({{1, 1, config.max_seq_len, true}}), std::invalid_argument);  // context
  CHECK_THROWS_AS(plan_of({{1, 2, 0, true}}), std::invalid_argument);                   // unknown task
  CHECK_THROWS_AS(plan_of({{1, 1, 8, true}}), std::out_of_range);                       // not reserved
  CHECK_THROWS_AS(plan_of({{1, 1, 3, false}, {1, 1, 2, true}}), std::invalid_argument); // order
  pages.commit(1, prompt);  // page 0 (positions 0..3) becomes a shared prefix
  CHECK_THROWS_AS(plan_of({{1, 1, 2, true}}), std::logic_error);
  CHECK_NOTHROW(plan_of({{1, 1, 5, true}}));
}

namespace {

// The captured sizes written out independently of graph_batch_rows: 1, 2, 4,
// every multiple of 8 up to 256, every multiple of 16 up to 512.
std::vector<int> captured_sizes() {
  std::vector<int> sizes = {1, 2, 4};
  for (int n = 8; n <= 256; n += 8) sizes.push_back(n);
  for (int n = 272; n <= 512; n += 16) sizes.push_back(n);
  return sizes;
}

// The GEMM row-count bucket's top (cuda/gemm.h): 64, then powers of two.
int gemm_bucket_top(int rows) {
  int top = 64;
  while (top < rows) top *= 2;
  return top;
}

}  // namespace

TEST_CASE("a batch pads to the smallest captured size, inside its GEMM row bucket, by at most 15 rows",
          "[cuda][plan]") {
  const std::vector<int> sizes = captured_sizes();
  for (int rows = 1; rows <= 600; ++rows) {
    INFO("rows " << rows);
    const auto it = std::lower_bound(sizes.begin(), sizes.end(), rows);
    const int want = it == sizes.end() ? rows : *it;  // above the largest: not padded
    CHECK(cuda::graph_batch_rows(rows) == want);
    CHECK(gemm_bucket_top(cuda::graph_batch_rows(rows)) == gemm_bucket_top(rows));
    CHECK(cuda::graph_batch_rows(rows) - rows < 16);  // DevicePageCache's padding slots
  }
  CHECK(cuda::graph_batch_rows(0) == 0);
}

TEST_CASE("a padded decode plan keeps the real rows and copies the last one, slots aside", "[cuda][plan]") {
  rc::prop("random decode batches, padded to their captured size", [] {
    ModelConfig config = preset_config("tiny");
    config.max_seq_len = 64;
    const int page_size = *rc::gen::element(1, 4, 16);
    const int n_seqs = *rc::gen::inRange(1, 40);
    PageManager pages(config.max_seq_len, n_seqs * (64 / page_size + 1), page_size);
    std::vector<BatchToken> batch;
    for (int s = 0; s < n_seqs; ++s) {
      const int len = *rc::gen::inRange(1, 64);
      RC_ASSERT(pages.admit(s, std::vector<int>(size_t(len), 1)).has_value());
      batch.push_back({*rc::gen::inRange(0, config.vocab_size), s, len - 1, *rc::gen::arbitrary<bool>()});
    }
    const cuda::BatchPlan plan = cuda::plan_batch(batch, pages, config, 16, 256);
    const int W = int(plan.wanted_rows.size());
    const int rows = cuda::graph_batch_rows(n_seqs), wanted = cuda::graph_batch_rows(W);
    const int first_padding_slot = pages.n_pages() * page_size;  // as DevicePageCache places them
    const cuda::BatchPlan padded = cuda::pad_decode_plan(plan, rows, wanted, first_padding_slot, 16);
    RC_ASSERT(padded.rows == rows);
    RC_ASSERT(padded.decode_only());
    RC_ASSERT(int(padded.wanted_rows.size()) == wanted);
    RC_ASSERT(padded.n_seqs == plan.n_seqs);
    RC_ASSERT(padded.page_tables == plan.page_tables);
    const size_t last = size_t(n_seqs - 1);
    for (int r = 0; r < rows; ++r) {
      const size_t from = r < n_seqs ? size_t(r) : last;  // a padding row is the last real row again
      RC_ASSERT(padded.tokens[size_t(r)] == plan.tokens[from]);
      RC_ASSERT(padded.row_pos[size_t(r)] == plan.row_pos[from]);
      RC_ASSERT(padded.row_seq[size_t(r)] == plan.row_seq[from]);
      // ... but writes its K/V into a padding slot of its own, outside every page.
      RC_ASSERT(padded.row_slot[size_t(r)] == (r < n_seqs ? plan.row_slot[from] : first_padding_slot + r - n_seqs));
    }
    // Every row decodes, each with its own partials index.
    std::vector<int> decode = padded.decode_rows, partial = padded.row_partial;
    std::sort(decode.begin(), decode.end());
    std::sort(partial.begin(), partial.end());
    for (int r = 0; r < rows; ++r) {
      RC_ASSERT(decode[size_t(r)] == r);
      RC_ASSERT(partial[size_t(r)] == r);
    }
    RC_ASSERT(padded.partial_rows == rows);
    // The real wanted rows first, in order; then distinct rows (the final
    // norm adds the residual in place once per listed row).
    RC_ASSERT(std::equal(plan.wanted_rows.begin(), plan.wanted_rows.end(), padded.wanted_rows.begin()));
    std::vector<int> listed = padded.wanted_rows;
    std::sort(listed.begin(), listed.end());
    RC_ASSERT(std::adjacent_find(listed.begin(), listed.end()) == listed.end());
    RC_ASSERT((listed.empty() || (listed.front() >= 0 && listed.back() < rows)));
  });
}

TEST_CASE("only decode plans pad, and never below their own size", "[cuda][plan]") {
  const ModelConfig config = preset_config("tiny");
  PageManager pages(config.max_seq_len, 16, 4);
  pages.admit(1, std::vector<int>{1, 2, 3});
  pages.admit(2, std::vector<int>{4});
  const std::vector<BatchToken> prefill = {{1, 1, 0, false}, {2, 1, 1, false}, {3, 1, 2, true}};
  const std::vector<BatchToken> decode = {{3, 1, 2, true}, {4, 2, 0, false}};
  const auto plan_of = [&](const std::vector<BatchToken>& rows) { return cuda::plan_batch(rows, pages, config, 16, 256); };
  const auto pad = [&](const std::vector<BatchToken>& rows, int n, int wanted) {
    return cuda::pad_decode_plan(plan_of(rows), n, wanted, 64, 16);
  };
  CHECK_THROWS_AS(pad(prefill, 4, 1), std::invalid_argument);
  CHECK_THROWS_AS(pad(decode, 1, 1), std::invalid_argument);   // fewer rows
  CHECK_THROWS_AS(pad(decode, 2, 0), std::invalid_argument);   // fewer wanted
  CHECK_THROWS_AS(pad(decode, 2, 4), std::invalid_argument);   // wanted > rows
  CHECK_THROWS_AS(pad(decode, 19, 1), std::invalid_argument);  // 17 padding rows, 16 slots
  CHECK(pad(decode, 18, 1).rows == 18);
  const cuda::BatchPlan p = pad(decode, 4, 2);
  CHECK(p.wanted_rows == std::vector<int>{0, 2});  // a padding row before the real row 1 that wanted nothing
  CHECK(p.row_slot[2] == 64);
  CHECK(p.row_slot[3] == 65);
}

// The figures of docs/kv-cache.md "Sliding layers" (run with -s to see them):
// the device cache of 16 running tasks at a 32k context, one pool against a
// sliding pool, in bf16. Gemma 3 12B: 48 layers, 40 sliding (1,024), 8 KV
// heads of 256; gpt-oss-20b: 24 layers, 12 sliding (128), 8 KV heads of 64.
TEST_CASE("the sliding pool's device memory for Gemma 3 12B and gpt-oss-20b at 32k", "[cuda][plan][sliding]") {
  struct Shape {
    const char* name;
    int layers, window, kv_heads, head_dim;
    std::vector<bool> sliding;
    int sliding_pages;
    size_t one_pool, full, sliding_bytes;
  };
  std::vector<bool> gemma(48), oss(24);
  for (int l = 0; l < 48; ++l) gemma[size_t(l)] = (l + 1) % 6 != 0;
  for (int l = 0; l < 24; ++l) oss[size_t(l)] = l % 2 == 0;
  // Pages: 16 contexts of 2,048 for the full layers; one context plus 15
  // windows of window_pages() = ceil((W + 31) / 16) + 1 (67 and 11) for the sliding ones.
  const std::vector<Shape> shapes = {
      {"gemma3-12b", 48, 1024, 8, 256, gemma, 2048 + 15 * 67, size_t(192) << 30, size_t(32) << 30, 16006512640},
      {"gpt-oss-20b", 24, 128, 8, 64, oss, 2048 + 15 * 11, size_t(24) << 30, size_t(12) << 30, 870187008},
  };
  for (const Shape& s : shapes) {
    INFO(s.name);
    ModelConfig c;
    c.n_layers = s.layers;
    c.n_heads = 2 * s.kv_heads;
    c.n_kv_heads = s.kv_heads;
    c.explicit_head_dim = s.head_dim;
    c.dim = 64;
    c.hidden_dim = 64;
    c.vocab_size = 64;
    c.max_seq_len = 32768;
    c.sliding_window = s.window;
    c.sliding_layers = s.sliding;
    const int full_pages = 16 * 2048;
    const int sliding_pages = sliding_pages_for(c, full_pages, 16, 16, cuda::kAttentionTile);
    CHECK(sliding_pages == s.sliding_pages);
    const size_t one_pool = cuda::DevicePageCache::bytes_needed(c, full_pages, 16, cuda::DType::BFloat16);
    const size_t both = cuda::DevicePageCache::bytes_needed(c, full_pages, 16, cuda::DType::BFloat16, sliding_pages);
    CHECK(one_pool == s.one_pool);
    CHECK(both == s.full + s.sliding_bytes);
  }
}
