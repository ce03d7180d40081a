#include "engine/grammar/thinking_budget.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace astrai::grammar {

namespace {

// The tokens whose bytes are a non-empty prefix of `text`: the trie's nodes
// along text's bytes hold exactly them (token_vocabulary.h: preorder, a
// node's children follow it, each child's subtree ending at subtree_end).
std::vector<int> tokens_prefixing(const TokenVocabulary& vocabulary, const std::string& text) {
  const TokenVocabulary::Body& body = vocabulary.body();
  std::vector<int> ids;
  int32_t node = 0;
  for (const char c : text) {
    int32_t child = node + 1, next = -1;
    for (; child < body.trie[size_t(node)].subtree_end; child = body.trie[size_t(child)].subtree_end)
      if (body.trie[size_t(child)].byte == uint8_t(c)) {
        next = child;
        break;
      }
    if (next < 0) break;
    node = next;
    const TokenVocabulary::TrieNode& n = body.trie[size_t(node)];
    for (int32_t i = n.first_token; i < n.first_token + n.token_count; ++i) ids.push_back(body.sorted_ids[size_t(i)]);
  }
  return ids;
}

struct CompiledBudget : CompiledConstraint, std::enable_shared_from_this<CompiledBudget> {
  CompiledBudget(std::shared_ptr<const CompiledConstraint> a, const ThinkingBudget& b, const TokenVocabulary& v)
      : answer(std::move(a)), budget(b), vocabulary(v) {
    // forced[k]: the tokens that may come next when k bytes of the close marker are written.
    for (size_t k = 0; k < budget.markers.close.size(); ++k)
      forced.push_back(tokens_prefixing(vocabulary, budget.markers.close.substr(k)));
  }
  std::unique_ptr<TokenConstraint> start() const override;

  std::shared_ptr<const CompiledConstraint> answer;
  ThinkingBudget budget;
  TokenVocabulary vocabulary;
  std::vector<std::vector<int>> forced;
};

class BudgetConstraint final : public TokenConstraint {
 public:
  explicit BudgetConstraint(std::shared_ptr<const CompiledBudget> c)
      : c_(std::move(c)),
        answer_(c_->answer ? c_->answer->start() : nullptr),
        phase_(c_->budget.starts_inside ? Phase::Thinking : Phase::Opening) {}
  BudgetConstraint(const BudgetConstraint& o)
      : c_(o.c_), answer_(o.answer_ ? o.answer_->fork() : nullptr), phase_(o.phase_), spent_(o.spent_),
        opening_(o.opening_), close_matched_(o.close_matched_) {}

  void fill_next_token_mask(std::span<uint32_t> mask) override {
    if (answer_) {
      answer_->fill_next_token_mask(mask);
    } else {  // any token of the vocabulary: whole words, then the last one's bits below its size
      const size_t n = std::min(c_->vocabulary.size(), mask.size() * 32);
      std::fill(mask.begin(), mask.end(), 0u);
      std::fill(mask.begin(), mask.begin() + std::ptrdiff_t(n / 32), ~0u);
      if (n % 32) mask[n / 32] = (1u << (n % 32)) - 1u;
    }
    if (!forcing()) return;
    // Only the close marker's next bytes (and only where the answer allows them too).
    std::vector<uint32_t> allowed(mask.size(), 0u);
    for (const int t : c_->forced[close_matched_.size()])
      if (size_t(t) < mask.size() * 32) allowed[size_t(t) / 32] |= 1u << (t % 32);
    for (size_t w = 0; w < mask.size(); ++w) mask[w] &= allowed[w];
  }

  bool accept_token(int token) override {
    const TokenVocabulary& v = c_->vocabulary;
    if (token < 0 || size_t(token) >= v.size()) return answer_ && answer_->accept_token(token);
    if (v.is_end(token)) return !forcing() && (!answer_ || answer_->accept_token(token));
    const std::string& bytes = v.bytes(token);
    if (forcing()) {
      const std::string& close = c_->budget.markers.close;
      const size_t at = close_matched_.size();
      if (bytes.empty() || bytes.size() > close.size() - at || close.compare(at, bytes.size(), bytes) != 0) return false;
    }
    if (answer_ && !answer_->accept_token(token)) return false;
    if (phase_ != Phase::Answer) ++spent_;
    follow(bytes);
    return true;
  }

  bool can_end() const override { return !forcing() && (!answer_ || answer_->can_end()); }
  bool is_terminated() const override { return answer_ && !forcing() && answer_->is_terminated(); }
  std::unique_ptr<TokenConstraint> fork() const override { return std::make_unique<BudgetConstraint>(*this); }

 private:
  enum class Phase { Opening, Thinking, Answer };

  bool forcing() const { return phase_ == Phase::Thinking && spent_ >= c_->budget.tokens; }

  // The output's next bytes: the thinking opens, closes, or never was.
  void follow(const std::string& bytes) {
    const ReasoningMarkers& m = c_->budget.markers;
    if (phase_ == Phase::Opening) {
      opening_ += bytes;
      const size_t common = std::min(opening_.size(), m.open.size());
      if (opening_.compare(0, common, m.open, 0, common) != 0) {
        phase_ = Phase::Answer;  // the output does not start with the open marker: no thinking
      } else if (opening_.size() >= m.open.size()) {
        phase_ = Phase::Thinking;
        follow_thinking(opening_.substr(m.open.size()));
      }
      if (phase_ != Phase::Opening) opening_.clear();
      return;
    }
    if (phase_ == Phase::Thinking) follow_thinking(bytes);
  }

  // close_matched_ is the longest suffix of the thinking so far that is a
  // proper prefix of the close marker: an occurrence ending in `bytes`
  // starts inside it or in `bytes`.
  void follow_thinking(const std::string& bytes) {
    const std::string& close = c_->budget.markers.close;
    const std::string text = close_matched_ + bytes;
    if (text.find(close) != std::string::npos) {
      phase_ = Phase::Answer;
      close_matched_.clear();
      return;
    }
    size_t keep = std::min(text.size(), close.size() - 1);
    while (keep > 0 && text.compare(text.size() - keep, keep, close, 0, keep) != 0) --keep;
    close_matched_ = text.substr(text.size() - keep);
  }

  std::shared_ptr<const CompiledBudget> c_;
  std::unique_ptr<TokenConstraint> answer_;
  Phase phase_;
  int spent_ = 0;               // tokens of the thinking (the open marker's included)
  std::string opening_;         // Opening: the bytes so far, a prefix of the open marker
  std::string close_matched_;   // Thinking: a proper prefix of the close marker ending the text
};

std::unique_ptr<TokenConstraint> CompiledBudget::start() const {
  return std::make_unique<BudgetConstraint>(shared_from_this());
}

}  // namespace

std::shared_ptr<const CompiledConstraint> with_thinking_budget(std::shared_ptr<const CompiledConstraint> answer,
                                                               const ThinkingBudget& budget,
                                                               const TokenVocabulary& vocabulary) {
  if (budget.tokens < 0) throw std::invalid_argument("with_thinking_budget: a negative budget");
  if (budget.markers.open.empty() || budget.markers.close.empty())
    throw std::invalid_argument("with_thinking_budget: empty thinking markers");
  return std::make_shared<CompiledBudget>(std::move(answer), budget, vocabulary);
}

}  // namespace astrai::grammar
