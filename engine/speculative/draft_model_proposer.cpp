#include "engine/speculative/draft_model_proposer.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace astrai {
namespace {

// Rows per forward pass when the draft catches up on a long context (a
// prompt it has not seen): the pass's activations stay small.
constexpr int kCatchUpChunk = 512;

size_t common_prefix(std::span<const int> a, std::span<const int> b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

RowSampling greedy_row() {
  RowSampling row;
  row.params.temperature = 0.0f;  // argmax: the guess the target most likely keeps, the same for every seed
  return row;
}

int sampled(const std::vector<SampledToken>& tokens) {
  if (tokens.size() != 1) throw std::logic_error("draft model: expected one sampled token");
  if (!tokens[0].error.empty()) throw std::runtime_error("draft model: " + tokens[0].error);
  return tokens[0].token;
}

}  // namespace

DraftModelProposer::DraftModelProposer(std::unique_ptr<Executor> executor, std::unique_ptr<KVCache> cache,
                                       int max_sequences)
    : executor_(std::move(executor)), cache_(std::move(cache)), max_sequences_(max_sequences) {
  if (!executor_ || !cache_) throw std::invalid_argument("draft model: needs an executor and a KV cache");
  if (max_sequences_ < 1) throw std::invalid_argument("draft model: max_sequences must be at least 1");
}

std::vector<int> DraftModelProposer::propose(std::span<const int> context, int most) {
  if (context.empty() || most <= 0) return {};
  if (int(context.size()) > config().max_seq_len) return {};  // past the draft's context: no guess
  const auto it = sequence_for(context);
  if (it == sequences_.end()) return {};  // no room in the draft's cache
  try {
    return draft(*it, context, most);
  } catch (...) {
    // Its cache rows are in an unknown state: forget the sequence.
    if (cache_->has_task(it->id)) cache_->release(it->id);
    sequences_.erase(it);
    throw;
  }
}

// The sequence whose committed tokens are the longest prefix of `context`,
// moved to the front; else a new one (evicting the least recently used for
// room); end() when the cache cannot hold the context.
std::list<DraftModelProposer::Sequence>::iterator DraftModelProposer::sequence_for(std::span<const int> context) {
  auto best = sequences_.end();
  size_t best_size = 0;
  for (auto it = sequences_.begin(); it != sequences_.end(); ++it) {
    const size_t size = it->committed.size();
    if (size > best_size && size < context.size() && common_prefix(it->committed, context) == size) {
      best = it;
      best_size = size;
    }
  }
  if (best != sequences_.end()) {
    sequences_.splice(sequences_.begin(), sequences_, best);
    return sequences_.begin();
  }
  while (int(sequences_.size()) >= max_sequences_) make_room(nullptr);
  Sequence s;
  s.id = next_id_++;
  std::optional<int> hit;
  while (!(hit = cache_->admit(s.id, context)))
    if (!make_room(nullptr)) return sequences_.end();
  ++counts_.sequences;
  s.committed.assign(context.begin(), context.begin() + *hit);  // a prefix hit: K/V another sequence computed
  s.written = s.committed;
  sequences_.push_front(std::move(s));
  return sequences_.begin();
}

// Evicts the least recently used sequence other than `keep`; false when
// there is none.
bool DraftModelProposer::make_room(const Sequence* keep) {
  for (auto it = sequences_.rbegin(); it != sequences_.rend(); ++it) {
    if (&*it == keep) continue;
    cache_->release(it->id);
    sequences_.erase(std::next(it).base());
    ++counts_.evictions;
    return true;
  }
  return false;
}

std::vector<int> DraftModelProposer::draft(Sequence& s, std::span<const int> context, int most) {
  const int n = int(context.size());
  // The rows to feed start where what the cache holds stops matching the
  // context: guesses the target rejected are overwritten from there. The
  // last context token is fed again when the cache holds it already: its
  // row gives the first guess.
  const int valid = std::min(int(common_prefix(s.written, context)), n - 1);
  most = std::min(most, config().max_seq_len - n + 1);  // the last guess is never fed
  if (most <= 0) return {};
  while (!cache_->reserve(s.id, n + most - 1)) {
    if (make_room(&s)) continue;
    if (most == 1) return {};
    --most;
  }
  counts_.fed += n - valid;
  counts_.reused += valid;
  s.written.resize(size_t(valid));
  const RowSampling greedy = greedy_row();
  std::vector<BatchToken> rows;
  int guess = -1;
  for (int start = valid; start < n; start += kCatchUpChunk) {
    const int end = std::min(n, start + kCatchUpChunk);
    rows.clear();
    for (int pos = start; pos < end; ++pos) rows.push_back({context[size_t(pos)], s.id, pos, pos == n - 1});
    if (end < n) {
      executor_->forward_and_sample(rows, cache_->view(), {});
    } else {
      guess = sampled(executor_->forward_and_sample(rows, cache_->view(), std::span(&greedy, 1)));
    }
    s.written.insert(s.written.end(), context.begin() + start, context.begin() + end);
  }
  // The context is the target's: later contexts extend it. All but its
  // last token: that row is fed again when the same context comes back (a
  // preempted request), and a paged cache never writes a committed page again.
  s.committed.assign(context.begin(), context.end() - 1);
  if (!s.committed.empty()) cache_->commit(s.id, s.committed);
  std::vector<int> guesses{guess};
  while (int(guesses.size()) < most) {
    const int pos = n - 1 + int(guesses.size());
    const BatchToken row{guesses.back(), s.id, pos, true};
    s.written.push_back(guesses.back());  // before the pass: a pass that throws leaves it in doubt
    guesses.push_back(sampled(executor_->forward_and_sample(std::span(&row, 1), cache_->view(), std::span(&greedy, 1))));
  }
  return guesses;
}

}  // namespace astrai
