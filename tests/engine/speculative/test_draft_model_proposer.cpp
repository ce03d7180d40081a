// The draft model proposer (engine/speculative/draft_model_proposer.h)
// against the reference's own generation loop: whatever sequence of
// contexts it is asked about (a request whose guesses were kept in part, one
// preempted and asked again, n choices forking from one prompt, a request
// that vanished, more requests than the draft holds), its guesses are the
// draft model's greedy continuation of the context, computed by
// reference/generate.h from the prompt alone.
//
// Why exact equality holds: the reference executor computes a row from its
// token, position and the K/V before it, however the rows are batched or
// chunked, so the draft's cached rows are the loop's rows exactly when they
// hold the K/V of the context's own tokens. A cache not rolled back after a
// rejected guess holds the guess's K/V at that position, and the next
// guesses differ: the check fails (docs/testing.md, planted bugs).
#include <algorithm>
#include <memory>
#include <vector>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "engine/executor/reference_executor.h"
#include "engine/kv_cache/contiguous_cache.h"
#include "engine/kv_cache/page_cache.h"
#include "engine/speculative/draft_model_proposer.h"
#include "reference/generate.h"
#include "reference/synthetic_model.h"

namespace test_draft_model_proposer {

using namespace astrai;

// A small vocabulary: greedy continuations of a random model fall into
// loops, and contexts that share a prefix by chance are common.
std::shared_ptr<const ModelWeights> draft_weights() {
  static const auto weights = std::make_shared<const ModelWeights>(make_synthetic_weights(
      ModelConfig{.dim = 32, .hidden_dim = 64, .n_layers = 2, .n_heads = 4, .n_kv_heads = 2, .vocab_size = 40,
                  .max_seq_len = 48},
      777));
  return weights;
}

std::vector<int> greedy_continuation(std::span<const int> context, int most) {
  GenerateOptions options;
  options.max_new_tokens = most;
  return generate(*draft_weights(), context, options, [](std::span<const float> row) { return argmax(row); });
}

enum class CacheKind { Contiguous, Paged };

std::unique_ptr<KVCache> make_cache(CacheKind kind, int contexts) {
  const ModelConfig& c = draft_weights()->config;
  if (kind == CacheKind::Contiguous) return std::make_unique<ContiguousCache>(c, contexts);
  return std::make_unique<PageCache>(c, contexts * c.max_seq_len / 4, 4);
}

// A request as the scheduler sees it: its context grows by some of the
// guesses and then the target's own token.
struct Request {
  std::vector<int> context;
  std::vector<int> last_guesses;
};

void check_script(CacheKind kind, int contexts, int sequences, bool room_for_all) {
  DraftModelProposer draft(std::make_unique<ReferenceExecutor>(draft_weights()), make_cache(kind, contexts),
                           sequences);
  const int max_seq_len = draft_weights()->config.max_seq_len;
  const int vocab = draft_weights()->config.vocab_size;
  std::vector<Request> requests;
  const int steps = *rc::gen::inRange(10, 60);
  for (int step = 0; step < steps; ++step) {
    const int action = requests.empty() ? 0 : *rc::gen::inRange(0, 10);
    size_t r = requests.empty() ? 0 : size_t(*rc::gen::inRange<size_t>(0, requests.size()));
    if (action == 0) {  // a new request
      requests.push_back({*rc::gen::container<std::vector<int>>(size_t(*rc::gen::inRange(1, 20)),
                                                                 rc::gen::inRange(0, vocab)),
                          {}});
      r = requests.size() - 1;
    } else if (action == 1) {  // a fork: another choice of a request's prompt and some of its tokens
      Request& parent = requests[r];
      const size_t keep = size_t(*rc::gen::inRange<size_t>(1, parent.context.size() + 1));
      requests.push_back({{parent.context.begin(), parent.context.begin() + long(keep)}, {}});
      r = requests.size() - 1;
      requests[r].context.push_back(*rc::gen::inRange(0, vocab));
    } else if (action == 2) {  // the request ends (finished or aborted): never asked about again
      requests.erase(requests.begin() + long(r));
      continue;
    } else if (action >= 4) {  // some guesses kept, then the target's token (3: unchanged, as after preemption)
      Request& q = requests[r];
      const size_t kept = size_t(*rc::gen::inRange<size_t>(0, q.last_guesses.size() + 1));
      q.context.insert(q.context.end(), q.last_guesses.begin(), q.last_guesses.begin() + long(kept));
      q.context.push_back(*rc::gen::inRange(0, vocab));
    }
    Request& q = requests[r];
    if (int(q.context.size()) >= max_seq_len) q.context.resize(size_t(max_seq_len - 1));  // the target's limit
    const int most = *rc::gen::inRange(1, 6);
    q.last_guesses = draft.propose(q.context, most);
    const std::vector<int> expected = greedy_continuation(q.context, most);
    RC_ASSERT(q.last_guesses.size() <= expected.size());
    RC_ASSERT(std::equal(q.last_guesses.begin(), q.last_guesses.end(), expected.begin()));
    const int fit = std::min(most, max_seq_len - int(q.context.size()) + 1);
    if (room_for_all) RC_ASSERT(int(q.last_guesses.size()) == fit);
  }
  RC_TAG(draft.counts().evictions > 0 ? "evicted" : "no eviction");
  RC_TAG(draft.counts().reused > 0 ? "reused" : "nothing reused");
}

TEST_CASE("draft model: the guesses are the draft's greedy continuation, whatever the contexts asked about",
          "[speculative][draft]") {
  SECTION("a contiguous cache with room for every sequence") {
    rc::prop("contiguous", [] { check_script(CacheKind::Contiguous, 64, 64, true); });
  }
  SECTION("a paged cache with room for every sequence") {
    rc::prop("paged", [] { check_script(CacheKind::Paged, 64, 64, true); });
  }
  SECTION("caches with room for two sequences: asking about a third evicts") {
    rc::prop("contiguous, two slots", [] { check_script(CacheKind::Contiguous, 2, 8, true); });
    rc::prop("paged, two contexts' pages, three sequences", [] { check_script(CacheKind::Paged, 2, 3, false); });
  }
}

TEST_CASE("draft model: a context the draft holds is fed from where it stops matching", "[speculative][draft]") {
  DraftModelProposer draft(std::make_unique<ReferenceExecutor>(draft_weights()), make_cache(CacheKind::Paged, 4), 4);
  std::vector<int> context{5, 6, 7, 8, 9};
  const std::vector<int> first = draft.propose(context, 4);
  REQUIRE(first.size() == 4);
  CHECK(draft.counts().fed == 5);
  // Two guesses kept and a token of the target's own: only the rows from
  // the first guess not fed before (the last one, never fed) come again.
  context.insert(context.end(), first.begin(), first.begin() + 2);
  context.push_back((first[2] + 1) % 40);
  CHECK(draft.propose(context, 4) == greedy_continuation(context, 4));
  CHECK(draft.counts().fed == 5 + 1);  // the target's token: guesses 1 and 2 were fed as the draft guessed
  CHECK(draft.counts().reused == 5 + 2);
  // Asked again about the same context (a preempted request): its last row only.
  CHECK(draft.propose(context, 4) == greedy_continuation(context, 4));
  CHECK(draft.counts().fed == 5 + 1 + 1);
  // A second choice of the same prompt starts a sequence: the paged cache's
  // prefix hit gives it the prompt's full pages (positions 0 to 3).
  const std::vector<int> other{5, 6, 7, 8, 9, 1};
  CHECK(draft.propose(other, 3) == greedy_continuation(other, 3));
  CHECK(draft.counts().sequences == 2);
  CHECK(draft.counts().reused == 7 + 7 + 4);
  CHECK(draft.counts().fed == 5 + 1 + 1 + 2);
}

TEST_CASE("draft model: no guess past the draft's context, and none for an empty context", "[speculative][draft]") {
  DraftModelProposer draft(std::make_unique<ReferenceExecutor>(draft_weights()), make_cache(CacheKind::Contiguous, 1),
                           1);
  const int max_seq_len = draft_weights()->config.max_seq_len;
  CHECK(draft.propose({}, 4).empty());
  std::vector<int> context(size_t(max_seq_len - 2), 3);
  CHECK(draft.propose(context, 8).size() == 3);  // the last guess sits at position max_seq_len, never fed
  context.resize(size_t(max_seq_len + 1), 3);
  CHECK(draft.propose(context, 8).empty());
}

}  // namespace test_draft_model_proposer
