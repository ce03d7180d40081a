// Two constraints for tests, written against the grammar interface
// (engine/grammar/token_constraint.h) without a grammar, so that the sampling
// plumbing (the scheduler, the executors, the device sampler) can be tested
// with a mask whose right answer is obvious:
//   IdSetConstraint     always the same ids (and the end-of-sequence ids when
//                       it may end, which it always may then); never terminates.
//   SequenceConstraint  exactly this id sequence; then the end-of-sequence ids
//                       (if ends) or nothing at all (a dead end); terminated
//                       once an end-of-sequence id is accepted.
//   ParityConstraint    ids >= 3 of alternating parity, even first: a mask
//                       that changes with every token (never ends).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "engine/grammar/token_constraint.h"

namespace astrai::test {

inline void set_bit(std::span<std::uint32_t> mask, int id) {
  if (id >= 0 && size_t(id) / 32 < mask.size()) mask[size_t(id) / 32] |= 1u << (unsigned(id) % 32);
}

class IdSetConstraint final : public grammar::TokenConstraint {
 public:
  IdSetConstraint(std::vector<int> ids, std::vector<int> eos, bool can_end)
      : ids_(std::move(ids)), eos_(std::move(eos)), can_end_(can_end) {}
  void fill_next_token_mask(std::span<std::uint32_t> mask) override {
    std::fill(mask.begin(), mask.end(), 0u);
    for (int id : ids_) set_bit(mask, id);
    if (can_end_)
      for (int id : eos_) set_bit(mask, id);
  }
  bool accept_token(int token) override {
    if (std::find(ids_.begin(), ids_.end(), token) != ids_.end()) return true;
    if (can_end_ && std::find(eos_.begin(), eos_.end(), token) != eos_.end()) return ended_ = true;
    return false;
  }
  bool can_end() const override { return can_end_; }
  bool is_terminated() const override { return ended_; }
  std::unique_ptr<grammar::TokenConstraint> fork() const override { return std::make_unique<IdSetConstraint>(*this); }

 private:
  std::vector<int> ids_, eos_;
  bool can_end_;
  bool ended_ = false;
};

class SequenceConstraint final : public grammar::TokenConstraint {
 public:
  SequenceConstraint(std::vector<int> sequence, std::vector<int> eos, bool ends = true)
      : sequence_(std::move(sequence)), eos_(std::move(eos)), ends_(ends) {}
  void fill_next_token_mask(std::span<std::uint32_t> mask) override {
    std::fill(mask.begin(), mask.end(), 0u);
    if (next_ < sequence_.size())
      set_bit(mask, sequence_[next_]);
    else if (can_end())
      for (int id : eos_) set_bit(mask, id);
  }
  bool accept_token(int token) override {
    if (next_ < sequence_.size() && token == sequence_[next_]) {
      ++next_;
      return true;
    }
    if (can_end() && std::find(eos_.begin(), eos_.end(), token) != eos_.end()) return ended_ = true;
    return false;
  }
  bool can_end() const override { return ends_ && next_ == sequence_.size() && !ended_; }
  bool is_terminated() const override { return ended_; }
  std::unique_ptr<grammar::TokenConstraint> fork() const override {
    return std::make_unique<SequenceConstraint>(*this);
  }

 private:
  std::vector<int> sequence_, eos_;
  bool ends_;
  size_t next_ = 0;
  bool ended_ = false;
};

class ParityConstraint final : public grammar::TokenConstraint {
 public:
  explicit ParityConstraint(int vocab) : vocab_(vocab) {}
  // The ids allowed after `generated` tokens.
  static std::vector<int> allowed(int vocab, size_t generated) {
    std::vector<int> ids;
    for (int id = 3; id < vocab; ++id)
      if (size_t(id) % 2 == generated % 2) ids.push_back(id);
    return ids;
  }
  void fill_next_token_mask(std::span<std::uint32_t> mask) override {
    std::fill(mask.begin(), mask.end(), 0u);
    for (int id : allowed(vocab_, generated_)) set_bit(mask, id);
  }
  bool accept_token(int token) override {
    if (token < 3 || token >= vocab_ || size_t(token) % 2 != generated_ % 2) return false;
    ++generated_;
    return true;
  }
  bool can_end() const override { return false; }
  bool is_terminated() const override { return false; }
  std::unique_ptr<grammar::TokenConstraint> fork() const override { return std::make_unique<ParityConstraint>(*this); }

 private:
  int vocab_;
  size_t generated_ = 0;
};

// A CompiledConstraint whose states are copies of `prototype`.
template <typename Constraint>
class CompiledTestConstraint final : public grammar::CompiledConstraint {
 public:
  explicit CompiledTestConstraint(Constraint prototype) : prototype_(std::move(prototype)) {}
  std::unique_ptr<grammar::TokenConstraint> start() const override { return std::make_unique<Constraint>(prototype_); }

 private:
  Constraint prototype_;
};

template <typename Constraint>
std::shared_ptr<const grammar::CompiledConstraint> compiled(Constraint prototype) {
  return std::make_shared<CompiledTestConstraint<Constraint>>(std::move(prototype));
}

}  // namespace astrai::test
