// Compiled output constraints of one served model, by their spec: a JSON
// schema is compiled for the model's vocabulary once and then shared by every
// request that sends the same text (agents send the same few schemas over and
// over). Least recently used first out, at most `capacity` kept; thread-safe
// (handlers run on the server's threads).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "engine/grammar/token_constraint.h"
#include "engine/grammar/token_vocabulary.h"

namespace astrai {

class Tokenizer;

class ConstraintCache {
 public:
  explicit ConstraintCache(size_t capacity = 64) : capacity_(capacity < 1 ? 1 : capacity) {}

  // The spec compiled for `tokenizer`'s vocabulary (built from the tokenizer
  // at the first call; a cache serves one model's tokenizer). Throws
  // grammar::ConstraintError for a spec the grammar refuses (not cached).
  std::shared_ptr<const grammar::CompiledConstraint> get(const grammar::ConstraintSpec& spec,
                                                         const Tokenizer& tokenizer);

  // The vocabulary the cache compiles for (built from `tokenizer` at the
  // first call of either): thinking budgets and reasoning-token counts read
  // its token bytes.
  const grammar::TokenVocabulary& vocabulary(const Tokenizer& tokenizer);

  size_t size() const;
  uint64_t hits() const;
  uint64_t misses() const;

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const grammar::CompiledConstraint>>;
  size_t capacity_;
  mutable std::mutex mutex_;
  std::once_flag vocabulary_once_;
  std::unique_ptr<grammar::TokenVocabulary> vocabulary_;
  std::list<Entry> entries_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  uint64_t hits_ = 0, misses_ = 0;
};

// The cache's key of a spec: its kind, its text and its choices, each
// length-prefixed so that no two specs share a key (and for tool calls, the
// format and whether one call only).
std::string constraint_key(const grammar::ConstraintSpec& spec);

}  // namespace astrai
