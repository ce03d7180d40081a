// The TokenConstraint of a compiled grammar: the stack set after the tokens
// accepted so far, and masks from the token cache plus the uncertain tokens.
#include <algorithm>

#include "engine/grammar/compile_constraint.h"
#include "engine/grammar/stack_set.h"
#include "engine/grammar/token_mask_cache.h"

namespace astrai::grammar {

namespace {

struct CompiledGrammar : CompiledConstraint, std::enable_shared_from_this<CompiledGrammar> {
  CompiledGrammar(Grammar g, const TokenVocabulary& v) : grammar(std::move(g)), cache(grammar, v) {}
  std::unique_ptr<TokenConstraint> start() const override;
  Grammar grammar;
  TokenMaskCache cache;
};

class GrammarConstraint final : public TokenConstraint {
 public:
  explicit GrammarConstraint(std::shared_ptr<const CompiledGrammar> compiled)
      : compiled_(std::move(compiled)), arena_(std::make_unique<StackArena>()) {
    bool ignored = false;
    stepper().close({{compiled_->grammar.root, 0, kBottom}}, tops_, ignored);
  }
  GrammarConstraint(const GrammarConstraint& other)
      : compiled_(other.compiled_),
        arena_(std::make_unique<StackArena>(*other.arena_)),
        tops_(other.tops_),
        ended_(other.ended_) {}

  void fill_next_token_mask(std::span<uint32_t> mask) override;
  bool accept_token(int token) override;
  bool can_end() const override { return !ended_ && StackStepper(grammar(), *arena_).can_end(tops_); }
  bool is_terminated() const override {
    return ended_ || (can_end() && !StackStepper(grammar(), *arena_).can_continue(tops_));
  }
  std::unique_ptr<TokenConstraint> fork() const override { return std::make_unique<GrammarConstraint>(*this); }

 private:
  const Grammar& grammar() const { return compiled_->grammar; }
  const TokenVocabulary& vocab() const { return compiled_->cache.vocabulary(); }
  StackStepper stepper() { return StackStepper(grammar(), *arena_); }

  std::shared_ptr<const CompiledGrammar> compiled_;
  std::unique_ptr<StackArena> arena_;
  std::vector<StackTop> tops_;
  bool ended_ = false;
  // Scratch, reused between masks.
  std::vector<std::vector<StackTop>> levels_;
  std::vector<int32_t> uncertain_;
};

std::unique_ptr<TokenConstraint> CompiledGrammar::start() const {
  return std::make_unique<GrammarConstraint>(shared_from_this());
}

void GrammarConstraint::fill_next_token_mask(std::span<uint32_t> mask) {
  std::fill(mask.begin(), mask.end(), 0u);
  if (ended_) return;
  const auto& body = vocab().body();
  const size_t words = std::min(mask.size(), bitmask_words(vocab().size()));
  uncertain_.clear();
  const StackTop* prev = nullptr;
  for (const StackTop& t : tops_) {  // sorted: equal (rule, state) are adjacent
    if (prev && prev->rule == t.rule && prev->state == t.state) continue;
    prev = &t;
    if (grammar().rules[size_t(t.rule)].states[size_t(t.state)].bytes.empty()) continue;
    const PositionTokens& p = compiled_->cache.at(t.rule, t.state);
    for (size_t w = 0; w < words; ++w) mask[w] |= p.accepted[w];
    uncertain_.insert(uncertain_.end(), p.uncertain_ranks.begin(), p.uncertain_ranks.end());
  }
  std::sort(uncertain_.begin(), uncertain_.end());
  uncertain_.erase(std::unique(uncertain_.begin(), uncertain_.end()), uncertain_.end());

  // The uncertain tokens in byte order, each sharing the stack sets of its
  // common prefix with the previous one; a dead prefix skips its extensions.
  StackStepper step = stepper();
  if (levels_.empty()) levels_.resize(1);
  levels_[0] = tops_;
  const std::string* prev_bytes = nullptr;
  size_t valid_depth = 0;  // levels_[0..valid_depth] hold the prefix of prev_bytes
  for (const int32_t rank : uncertain_) {
    const int32_t id = body.sorted_ids[size_t(rank)];
    if (mask[size_t(id) / 32] & (1u << (id % 32))) continue;
    const std::string& t = body.token_bytes[size_t(id)];
    size_t common = 0;
    if (prev_bytes) {
      const size_t limit = std::min({prev_bytes->size(), t.size(), valid_depth});
      while (common < limit && (*prev_bytes)[common] == t[common]) ++common;
    }
    if (levels_.size() < t.size() + 1) levels_.resize(t.size() + 1);
    size_t d = common;
    bool ignored = false;
    for (; d < t.size(); ++d) {
      if (levels_[d].empty()) break;
      step.advance(levels_[d], uint8_t(t[d]), levels_[d + 1], ignored);
    }
    valid_depth = d;
    prev_bytes = &t;
    if (d == t.size() && !levels_[d].empty() && size_t(id) / 32 < words) mask[size_t(id) / 32] |= 1u << (id % 32);
  }
  if (can_end())
    for (const int id : vocab().end_ids())
      if (size_t(id) / 32 < words) mask[size_t(id) / 32] |= 1u << (id % 32);
}

bool GrammarConstraint::accept_token(int token) {
  if (ended_ || token < 0 || size_t(token) >= vocab().size()) return false;
  if (vocab().is_end(token)) {
    if (!can_end()) return false;
    ended_ = true;
    return true;
  }
  const std::string& t = vocab().bytes(token);
  if (t.empty()) return false;
  std::vector<StackTop> cur = tops_, next;
  bool ignored = false;
  StackStepper step = stepper();
  for (const char c : t) {
    step.advance(cur, uint8_t(c), next, ignored);
    if (next.empty()) return false;
    cur.swap(next);
  }
  tops_ = std::move(cur);
  return true;
}

}  // namespace

bool grammar_matches(const Grammar& grammar, std::string_view text) {
  StackArena arena;
  StackStepper step(grammar, arena);
  std::vector<StackTop> cur, next;
  bool ignored = false;
  step.close({{grammar.root, 0, kBottom}}, cur, ignored);
  for (const char c : text) {
    step.advance(cur, uint8_t(c), next, ignored);
    if (next.empty()) return false;
    cur.swap(next);
  }
  return step.can_end(cur);
}

std::shared_ptr<const CompiledConstraint> compile_constraint(const ConstraintSpec& spec,
                                                             const TokenVocabulary& vocabulary) {
  return std::make_shared<CompiledGrammar>(grammar_for(spec), vocabulary);
}

}  // namespace astrai::grammar
