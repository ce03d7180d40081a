// Token masks against a brute-force oracle (a token is allowed exactly when a
// fork of the constraint accepts it) on a small vocabulary whose pieces span
// several grammar symbols and split UTF-8 sequences; every state along random
// instances and along random walks off them.
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <thread>

#include "engine/grammar/compile_constraint.h"
#include "tests/engine/grammar/random_schema.h"
#include "tests/engine/grammar/token_helpers.h"
#include "tests/support/sanitized_build.h"

using namespace astrai::grammar;

namespace {

// Every single byte, pieces cut from instances of random schemas (so `":`,
// `"},{"`, `\u00`, half of a UTF-8 sequence...), and one end id.
struct SmallVocabulary {
  std::vector<std::string> pieces;
  int eos;
  TokenVocabulary vocab;
};

SmallVocabulary small_vocabulary(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::set<std::string> set;
  for (int b = 1; b < 256; ++b) set.insert(std::string(1, char(b)));
  astrai::test::SchemaGenerator gen(seed);
  while (set.size() < 1500) {
    const auto schema = gen.make_root();
    const std::string text = gen.instance(schema, schema);
    for (int k = 0; k < 20 && !text.empty(); ++k) {
      const size_t at = rng() % text.size();
      set.insert(text.substr(at, 2 + rng() % 6));
    }
  }
  std::vector<std::string> pieces(set.begin(), set.end());
  std::shuffle(pieces.begin(), pieces.end(), rng);
  pieces.push_back("");  // a control token: never allowed
  const int eos = int(pieces.size());
  pieces.push_back("</s>");
  return {pieces, eos, TokenVocabulary(pieces, {eos})};
}

// Ids spelling `text`: at each point a random piece among those that fit.
std::vector<int> random_tokenization(const std::string& text, const std::vector<std::string>& pieces, std::mt19937_64& rng) {
  std::vector<int> ids;
  for (size_t at = 0; at < text.size();) {
    std::vector<int> fits;
    for (size_t id = 0; id + 1 < pieces.size(); ++id)
      if (!pieces[id].empty() && text.compare(at, pieces[id].size(), pieces[id]) == 0) fits.push_back(int(id));
    const int id = fits[rng() % fits.size()];
    ids.push_back(id);
    at += pieces[size_t(id)].size();
  }
  return ids;
}

}  // namespace

TEST_CASE("token masks equal the brute-force oracle along instances and random walks", "[grammar][mask]") {
  const SmallVocabulary v = small_vocabulary(20261201);
  rc::prop("random schema", [&](uint64_t seed) {
    astrai::test::SchemaGenerator gen(seed);
    const auto schema = gen.make_root();
    const auto compiled = compile_constraint({ConstraintSpec::Kind::JsonSchema, schema.dump(), {}}, v.vocab);
    std::mt19937_64& rng = gen.rng();
    const std::string text = gen.instance(schema, schema);
    const auto ids = random_tokenization(text, v.pieces, rng);
    auto c = compiled->start();
    for (size_t i = 0; i <= ids.size(); ++i) {
      const auto mask = astrai::test::mask_ids(*c, v.pieces.size());
      // The oracle is 1,500 forks a step: the sanitizer build checks every third step (else 4 minutes).
      if (!astrai::test::kSanitizedBuild || i % 3 == 0)
        RC_ASSERT(mask == astrai::test::brute_force_ids(*c, v.pieces.size()));
      if (i == ids.size()) {
        RC_ASSERT(c->can_end());
        RC_ASSERT(std::binary_search(mask.begin(), mask.end(), v.eos));
        break;
      }
      if (!std::binary_search(mask.begin(), mask.end(), ids[i]))
        RC_FAIL("schema " + schema.dump() + " instance " + text + ": token '" + v.pieces[size_t(ids[i])] + "' at step " +
                std::to_string(i) + " not in the mask");
      // Off the instance: a few random allowed tokens from here, each mask checked.
      if (!astrai::test::kSanitizedBuild && rng() % 4 == 0) {
        auto walk = c->fork();
        for (int k = 0; k < 6; ++k) {
          const auto allowed = astrai::test::mask_ids(*walk, v.pieces.size());
          RC_ASSERT(allowed == astrai::test::brute_force_ids(*walk, v.pieces.size()));
          if (allowed.empty()) break;
          RC_ASSERT(walk->accept_token(allowed[rng() % allowed.size()]));
        }
      }
      RC_ASSERT(c->accept_token(ids[i]));
    }
    RC_ASSERT(c->accept_token(v.eos));
    RC_ASSERT(c->is_terminated());
    RC_ASSERT(astrai::test::mask_ids(*c, v.pieces.size()).empty());
  });
}

TEST_CASE("token constraint: refusals leave the state unchanged; forks are independent", "[grammar][mask]") {
  const std::vector<std::string> pieces = {"{", "}", "\"a\"", ":", "1", "2", "{\"a\":", "12}", "", "x"};
  const int eos = 8;
  const TokenVocabulary vocab(pieces, {eos});
  const auto compiled = compile_constraint(
      {ConstraintSpec::Kind::JsonSchema, R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})", {}},
      vocab);
  auto c = compiled->start();
  CHECK_FALSE(c->can_end());
  CHECK(astrai::test::mask_ids(*c, pieces.size()) == std::vector<int>{0, 6});
  CHECK_FALSE(c->accept_token(9));
  CHECK_FALSE(c->accept_token(eos));
  CHECK_FALSE(c->accept_token(-1));
  CHECK_FALSE(c->accept_token(100));
  CHECK(c->accept_token(6));  // {"a":  spans four grammar symbols
  auto f = c->fork();
  CHECK(f->accept_token(4));
  CHECK(f->accept_token(1));
  CHECK(f->is_terminated());
  CHECK(f->can_end());
  CHECK_FALSE(c->can_end());  // the fork's tokens did not touch the original
  CHECK(c->accept_token(7));  // 12} ends the object
  CHECK(c->is_terminated());
  CHECK(astrai::test::mask_ids(*c, pieces.size()) == std::vector<int>{eos});
  CHECK(c->accept_token(eos));
  CHECK(astrai::test::mask_ids(*c, pieces.size()).empty());
}

TEST_CASE("one compiled constraint shared by threads fills its token cache once, consistently", "[grammar][mask]") {
  const SmallVocabulary v = small_vocabulary(7);
  const char* schema =
      R"({"type":"object","properties":{"a":{"type":"array","items":{"type":"string","maxLength":4}},"b":{"enum":["x","y"]}},"required":["a"]})";
  const std::string text = R"({"a": ["é\n", "", "q\"r"], "b": "y"})";
  std::mt19937_64 rng(3);
  const auto ids = random_tokenization(text, v.pieces, rng);
  auto masks_along = [&](const CompiledConstraint& compiled) {
    std::vector<std::vector<int>> masks;
    auto c = compiled.start();
    for (const int id : ids) {
      masks.push_back(astrai::test::mask_ids(*c, v.pieces.size()));
      if (!c->accept_token(id)) break;
    }
    return masks;
  };
  const auto reference = masks_along(*compile_constraint({ConstraintSpec::Kind::JsonSchema, schema, {}}, v.vocab));
  REQUIRE(reference.size() == ids.size());
  const auto shared = compile_constraint({ConstraintSpec::Kind::JsonSchema, schema, {}}, v.vocab);
  std::vector<std::vector<std::vector<int>>> results(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < results.size(); ++t) threads.emplace_back([&, t] { results[t] = masks_along(*shared); });
  for (auto& t : threads) t.join();
  for (const auto& r : results) CHECK(r == reference);
}
