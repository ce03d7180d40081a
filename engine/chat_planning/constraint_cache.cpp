#include "engine/chat_planning/constraint_cache.h"

#include "engine/grammar/compile_constraint.h"
#include "engine/tokenizer/tokenizer.h"

namespace astrai {

namespace {

// A string with its length first, so that no two lists of them join alike.
std::string framed(const std::string& s) { return std::to_string(s.size()) + ":" + s; }

}  // namespace

std::string constraint_key(const grammar::ConstraintSpec& spec) {
  // Where the grammar starts and whether it is lazy: one digit and one letter, first.
  std::string key = std::to_string(int(spec.start)) + (spec.lazy ? "L" : "-") + std::to_string(int(spec.kind)) + ":" +
                    framed(spec.text);
  for (const std::string& choice : spec.choices) {
    key += '|';  // appended, not "|" + framed(): gcc 12 warns (-Wrestrict) falsely about that operator+ at -O2
    key += framed(choice);
  }
  if (spec.kind == grammar::ConstraintSpec::Kind::ToolCalls) {  // the kind is first: no other key has this tail
    const grammar::ToolCallSyntax& t = spec.tool_syntax;
    key += "/";
    for (const std::string* part : {&t.list_open, &t.call_open, &t.before_arguments, &t.call_close, &t.separator,
                                    &t.list_close, &t.lazy_opener})
      key += framed(*part);
    key += spec.single_call ? "1" : "*";
    key += t.bare_name ? "b" : "q";
  }
  if (spec.start != grammar::ConstraintSpec::Start::Output)  // the start is first too
    key += "^" + framed(spec.reasoning.open) + framed(spec.reasoning.close) + framed(spec.reasoning.answer_open);
  return key;
}

const grammar::TokenVocabulary& ConstraintCache::vocabulary(const Tokenizer& tokenizer) {
  std::call_once(vocabulary_once_, [&] {
    vocabulary_ = std::make_unique<grammar::TokenVocabulary>(grammar::TokenVocabulary::from_tokenizer(tokenizer));
  });
  return *vocabulary_;
}

std::shared_ptr<const grammar::CompiledConstraint> ConstraintCache::get(const grammar::ConstraintSpec& spec,
                                                                        const Tokenizer& tokenizer) {
  vocabulary(tokenizer);
  const std::string key = constraint_key(spec);
  {
    std::lock_guard lock(mutex_);
    if (const auto it = index_.find(key); it != index_.end()) {
      entries_.splice(entries_.begin(), entries_, it->second);  // now the most recently used
      ++hits_;
      return it->second->second;
    }
    ++misses_;
  }
  // Compiled outside the lock (it may take a while; other requests go on).
  // Two requests compiling one spec at once both compile; the first stored wins.
  std::shared_ptr<const grammar::CompiledConstraint> compiled = grammar::compile_constraint(spec, *vocabulary_);
  std::lock_guard lock(mutex_);
  if (const auto it = index_.find(key); it != index_.end()) return it->second->second;
  entries_.emplace_front(key, compiled);
  index_[key] = entries_.begin();
  if (entries_.size() > capacity_) {
    index_.erase(entries_.back().first);
    entries_.pop_back();
  }
  return compiled;
}

size_t ConstraintCache::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

uint64_t ConstraintCache::hits() const {
  std::lock_guard lock(mutex_);
  return hits_;
}

uint64_t ConstraintCache::misses() const {
  std::lock_guard lock(mutex_);
  return misses_;
}

}  // namespace astrai
