// Fuzz target: the JSON Schema compiler (engine/grammar) on any schema text.
//
// Input: the schema's JSON text, as a request's response_format carries it.
// Properties:
//  1. it compiles within the bounds of engine/grammar/json_schema.h, or it is
//     refused with ConstraintError (a 400): any other exception, a crash, a
//     hang or a huge allocation is a finding;
//  2. a compiled schema drives a matcher over a byte vocabulary (every single
//     byte a token, plus an end id): for up to 64 steps, taking the allowed
//     token the input's bytes point at, the mask is never empty before the end,
//     the masked token is always accepted, and an end-of-sequence id is in the
//     mask exactly when can_end().
#include <string>
#include <vector>

#include "engine/grammar/compile_constraint.h"
#include "tests/fuzz/fuzz_support.h"

namespace astrai::fuzz {

namespace {

const grammar::TokenVocabulary& byte_vocabulary() {
  static const grammar::TokenVocabulary v = [] {
    std::vector<std::string> pieces;
    for (int b = 0; b < 256; ++b) pieces.push_back(std::string(1, char(b)));
    pieces.push_back("");  // the end id
    return grammar::TokenVocabulary(pieces, {256});
  }();
  return v;
}

void walk(const grammar::CompiledConstraint& compiled, const uint8_t* data, size_t size) {
  auto c = compiled.start();
  std::vector<uint32_t> mask(grammar::bitmask_words(257));
  for (size_t step = 0; step < 64; ++step) {
    c->fill_next_token_mask(mask);
    std::vector<int> allowed;
    for (int t = 0; t < 257; ++t)
      if (mask[size_t(t) / 32] >> (t % 32) & 1u) allowed.push_back(t);
    const bool end_allowed = !allowed.empty() && allowed.back() == 256;
    check(end_allowed == c->can_end(), "the end id is in the mask exactly when can_end()");
    if (c->is_terminated()) return;
    check(!allowed.empty(), "a live constraint allows some token");
    const int pick = allowed[(size ? data[step % size] : 0) % allowed.size()];
    check(c->accept_token(pick), "a token from the mask is accepted");
    if (pick == 256) return;
  }
}

}  // namespace

int fuzz_schema(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::shared_ptr<const grammar::CompiledConstraint> compiled;
  try {
    compiled = grammar::compile_constraint({grammar::ConstraintSpec::Kind::JsonSchema, text, {}}, byte_vocabulary());
  } catch (const grammar::ConstraintError&) {
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz finding: a schema raised %s: %s\n", typeid(e).name(), e.what());
    std::fflush(stderr);
    std::abort();
  }
  walk(*compiled, data, size);
  return 0;
}

}  // namespace astrai::fuzz

ASTRAI_FUZZ_ENTRY(fuzz_schema)
