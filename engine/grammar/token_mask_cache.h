// xgrammar's context-independent token cache, per grammar position.
//
// For a stack top at (rule, state), whatever lies below it, a token is
//  - accepted when some path reads all its bytes without leaving the rule
//    (calls into other rules are fine; so is leaving exactly at its end),
//  - rejected when every path dies inside the rule before its end,
//  - uncertain otherwise: some path returns out of the rule with bytes left,
//    and only the real stack below can say whether they fit.
// The cache walks the vocabulary trie once per position, lazily (on the first
// mask that needs it), with the stack below replaced by kOutside. A mask is
// then the accepted bits ORed plus a walk over the few uncertain tokens with
// the real stacks. Thread-safe: entries are filled under a mutex and never change.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "engine/grammar/grammar.h"
#include "engine/grammar/token_vocabulary.h"

namespace astrai::grammar {

struct PositionTokens {
  std::vector<uint32_t> accepted;        // bitmask over token ids
  std::vector<int32_t> uncertain_ranks;  // ranks (TokenVocabulary sorted order), ascending
};

class TokenMaskCache {
 public:
  TokenMaskCache(const Grammar& grammar, TokenVocabulary vocabulary)
      : grammar_(&grammar), vocab_(std::move(vocabulary)) {}
  const PositionTokens& at(int32_t rule, int32_t state) const;
  const TokenVocabulary& vocabulary() const { return vocab_; }

 private:
  std::unique_ptr<PositionTokens> compute(int32_t rule, int32_t state) const;
  const Grammar* grammar_;
  TokenVocabulary vocab_;
  mutable std::mutex mutex_;
  mutable std::unordered_map<uint64_t, std::unique_ptr<PositionTokens>> entries_;
};

}  // namespace astrai::grammar
