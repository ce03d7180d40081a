// The reference forward pass over synthetic models with the engine's caches
// instead of DenseKVCache: the logits must be bit-identical, including when a
// second prompt reuses the first one's pages and computes only its tail, and
// through greedy decoding afterwards. Exact equality holds because each row's
// arithmetic does not depend on the batch (reference/linear.h), so K/V of a
// shared prefix are the very floats the full computation would produce.
#include <algorithm>
#include <vector>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>
#include <xtensor/xview.hpp>

#include "engine/kv_cache/contiguous_cache.h"
#include "engine/kv_cache/page_cache.h"
#include "reference/synthetic_model.h"
#include "reference/dense_kv_cache.h"
#include "reference/forward.h"
#include "reference/generate.h"

// In a namespace of its own, TEST_CASEs too: the test program is a unity
// build (tests/meson.build), where other files have helpers of the same names.
namespace test_forward_with_cache {

using astrai::BatchToken;
using astrai::KVCacheView;
using Tokens = std::vector<int>;

// Llama-shaped, or with today's options drawn (an explicit head_dim, so the
// caches' rows of kv_dim = n_kv_heads * head_dim need not relate to dim;
// Qwen's biases and q/k norms; Llama 3.1's RoPE scaling).
astrai::ModelConfig draw_config() {
  astrai::ModelConfig c;
  c.n_kv_heads = *rc::gen::inRange(1, 3);
  c.n_heads = c.n_kv_heads * *rc::gen::element(1, 2);
  const int head_dim = *rc::gen::element(2, 4, 8);
  c.dim = c.n_heads * head_dim;
  if (*rc::gen::arbitrary<bool>()) {
    c.explicit_head_dim = head_dim;
    c.dim = *rc::gen::inRange(1, 20);
  }
  c.options.qkv_bias = *rc::gen::arbitrary<bool>();
  c.options.qk_norm = *rc::gen::arbitrary<bool>();
  if (*rc::gen::arbitrary<bool>()) c.rope_scaling = astrai::RopeScaling{8.0f, 1.0f, 4.0f, 16};
  c.hidden_dim = *rc::gen::inRange(4, 24);
  c.n_layers = *rc::gen::inRange(1, 3);
  c.vocab_size = *rc::gen::inRange(2, 32);
  c.max_seq_len = *rc::gen::inRange(3, 33);
  return c;
}

// Logits of positions [start, start + tokens.size()) of sequence `seq`, one batch.
xt::xtensor<float, 2> forward_rows(const astrai::ModelWeights& w, const Tokens& tokens, KVCacheView& cache, int seq,
                                   int start) {
  std::vector<BatchToken> batch;
  for (size_t i = 0; i < tokens.size(); ++i) batch.push_back({tokens[i], seq, start + int(i), true});
  return astrai::forward(w, batch, cache);
}

Tokens slice(const Tokens& t, size_t from, size_t to) { return Tokens(t.begin() + from, t.begin() + to); }

// Greedy decoding of `n` tokens after `prompt` (already prefilled, last logits
// given), in the engine's order: reserve, forward one token, commit.
Tokens decode(const astrai::ModelWeights& w, astrai::KVCache* cache, KVCacheView& view, int seq, Tokens tokens,
              xt::xtensor<float, 1> logits, int n) {
  for (int i = 0; i < n && int(tokens.size()) < w.config.max_seq_len; ++i) {
    tokens.push_back(astrai::argmax(std::span<const float>(logits.data(), logits.size())));
    const int pos = int(tokens.size()) - 1;
    if (cache) RC_ASSERT(cache->reserve(seq, pos + 1));
    logits = xt::row(forward_rows(w, {tokens.back()}, view, seq, pos), 0);
    if (cache) cache->commit(seq, tokens);
  }
  return tokens;
}


// Prompt a, then a prompt b that starts with a drawn part of a, through a
// PageCache of `page_size` pages (with a sliding pool of as many pages as
// the full one when `sliding`): the logits must be bit-identical to the
// dense cache's, b's hit the full pages of the common prefix (the pools are
// large enough that nothing is evicted), and greedy decoding of up to
// `max_decode` tokens afterwards the dense cache's tokens.
void check_prompt_pair(const astrai::ModelConfig& config, int page_size, bool sliding, int max_decode) {
  const auto w = astrai::make_synthetic_weights(config, *rc::gen::arbitrary<uint64_t>());
  const int len_a = *rc::gen::inRange(2, config.max_seq_len + 1);
  const Tokens a = *rc::gen::container<Tokens>(size_t(len_a), rc::gen::inRange(0, config.vocab_size));
  // b starts with some of a and goes its own way.
  Tokens b = slice(a, 0, *rc::gen::inRange<size_t>(0, a.size() + 1));
  const auto tail = *rc::gen::container<Tokens>(rc::gen::inRange(0, config.vocab_size));
  b.insert(b.end(), tail.begin(), tail.end());
  b.resize(std::min(b.size(), size_t(config.max_seq_len)));
  RC_PRE(!b.empty());

  astrai::DenseKVCache dense(config, 2);
  const auto dense_a = forward_rows(w, a, dense, 0, 0);
  const auto dense_b = forward_rows(w, b, dense, 1, 0);

  const int pages = 2 * ((config.max_seq_len + page_size - 1) / page_size);
  astrai::PageCache cache(config, pages, page_size, astrai::default_prefix_hash, sliding ? pages : 0);
  RC_ASSERT((cache.sliding_pages() != nullptr) == sliding);
  RC_ASSERT(cache.admit(10, a) == std::optional<int>(0));
  // Exact, here and below: a cache only stores and returns the float rows the
  // forward pass wrote, and attention reads them in position order whatever
  // the page layout, so the arithmetic is the same as with the dense cache.
  // A sliding layer reading a row its window has passed would throw here
  // (the page is given back).
  RC_ASSERT(forward_rows(w, a, cache.view(), 10, 0) == dense_a);
  cache.commit(10, a);

  // Expected hit: the full pages of the common prefix, never the last token of b.
  const size_t common = size_t(std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first - a.begin());
  const int expected_hit = int(std::min(common, b.size() - 1) / size_t(page_size)) * page_size;
  const std::optional<int> hit = cache.admit(20, b);
  RC_ASSERT(hit == std::optional<int>(expected_hit));
  if (*hit == 0) RC_TAG("no hit");
  else if (sliding) RC_TAG(*hit > config.sliding_window ? "hit past the window" : "hit within the window");
  else RC_TAG("prefix hit");
  const auto page_b = forward_rows(w, slice(b, size_t(*hit), b.size()), cache.view(), 20, *hit);
  RC_ASSERT(page_b == xt::view(dense_b, xt::range(*hit, int(b.size())), xt::all()));
  cache.commit(20, b);

  const int n_decode = *rc::gen::inRange(0, max_decode + 1);
  const Tokens dense_out = decode(w, nullptr, dense, 1, b, xt::row(dense_b, b.size() - 1), n_decode);
  const Tokens page_out = decode(w, &cache, cache.view(), 20, b, xt::row(page_b, page_b.shape(0) - 1), n_decode);
  RC_ASSERT(page_out == dense_out);
  if (sliding) RC_ASSERT(cache.sliding_pages()->held_by(20) <= cache.sliding_pages()->window_pages());
  cache.check_invariants();
  cache.release(10);
  cache.release(20);
  RC_ASSERT(cache.all_free());
}

TEST_CASE("Forward with PageCache equals DenseKVCache, prefix hits included", "[kv_cache][forward]") {
  rc::prop("bit-identical logits", [] { check_prompt_pair(draw_config(), *rc::gen::inRange(1, 7), false, 5); });
}

TEST_CASE("Forward with a sliding pool equals DenseKVCache, hits past the window included", "[kv_cache][forward]") {
  rc::prop("bit-identical logits while the window's old pages go back", [] {
    astrai::ModelConfig config = draw_config();
    config.max_seq_len = *rc::gen::inRange(4, 33);
    config.sliding_window = *rc::gen::inRange(1, config.max_seq_len);
    config.sliding_layers = *rc::gen::container<std::vector<bool>>(size_t(config.n_layers), rc::gen::arbitrary<bool>());
    if (*rc::gen::arbitrary<bool>()) config.sliding_layers.clear();  // every layer slides (Mistral)
    check_prompt_pair(config, *rc::gen::inRange(1, 7), true, 9);
  });
}

TEST_CASE("Forward with ContiguousCache equals DenseKVCache", "[kv_cache][forward]") {
  rc::prop("bit-identical logits", [] {
    const astrai::ModelConfig config = draw_config();
    const auto w = astrai::make_synthetic_weights(config, *rc::gen::arbitrary<uint64_t>());
    const int len = *rc::gen::inRange(1, config.max_seq_len + 1);
    const Tokens prompt = *rc::gen::container<Tokens>(size_t(len), rc::gen::inRange(0, config.vocab_size));
    astrai::DenseKVCache dense(config, 1);
    astrai::ContiguousCache cache(config, 3);
    RC_ASSERT(cache.admit(5, Tokens{0}) == std::optional<int>(0));  // occupies slot 0
    RC_ASSERT(cache.admit(6, prompt) == std::optional<int>(0));
    const auto dense_logits = forward_rows(w, prompt, dense, 0, 0);
    const auto cache_logits = forward_rows(w, prompt, cache.view(), 6, 0);
    // Exact: the same rows, read in the same order (see the PageCache case).
    RC_ASSERT(cache_logits == dense_logits);
    const int n_decode = *rc::gen::inRange(0, 6);
    const Tokens dense_out = decode(w, nullptr, dense, 0, prompt, xt::row(dense_logits, len - 1), n_decode);
    const Tokens cache_out = decode(w, &cache, cache.view(), 6, prompt, xt::row(cache_logits, len - 1), n_decode);
    RC_ASSERT(cache_out == dense_out);
    cache.release(5);
    cache.release(6);
    RC_ASSERT(cache.all_free());
  });
}

}  // namespace test_forward_with_cache
