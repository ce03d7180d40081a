// The regex subset against PCRE2 (an independent engine) on random patterns
// and random strings: the grammar matches a string exactly when PCRE2's full
// match does. Also choice, and the refused constructs.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <optional>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "engine/grammar/compile_constraint.h"
#include "engine/grammar/regex.h"
#include "tests/engine/grammar/random_regex.h"

using namespace astrai::grammar;

namespace {

Grammar regex_grammar(const std::string& pattern) { return grammar_for({ConstraintSpec::Kind::Regex, pattern, {}}); }

// PCRE2 full match in UTF mode (\d \w \s ASCII, as documented for ours).
class Pcre2FullMatch {
 public:
  explicit Pcre2FullMatch(const std::string& pattern) {
    const std::string anchored = "(?:" + pattern + ")\\z";
    int error = 0;
    PCRE2_SIZE offset = 0;
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(anchored.data()), anchored.size(), PCRE2_UTF | PCRE2_ANCHORED,
                          &error, &offset, nullptr);
    if (!code_) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof message);
      throw std::runtime_error("PCRE2 refuses " + pattern + ": " + reinterpret_cast<char*>(message));
    }
    data_ = pcre2_match_data_create_from_pattern(code_, nullptr);
  }
  ~Pcre2FullMatch() {
    pcre2_match_data_free(data_);
    pcre2_code_free(code_);
  }
  // nullopt when PCRE2 gives up (its backtracking match limit, on nested
  // quantifiers): then it has no verdict to compare with.
  std::optional<bool> operator()(const std::string& s) const {
    const int rc = pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0, 0, data_, nullptr);
    if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT) return std::nullopt;
    if (rc < PCRE2_ERROR_NOMATCH) throw std::runtime_error("pcre2_match failed: " + std::to_string(rc));
    return rc > 0;
  }

 private:
  pcre2_code* code_ = nullptr;
  pcre2_match_data* data_ = nullptr;
};

}  // namespace

TEST_CASE("regex: the grammar's full match equals PCRE2's on random patterns and strings", "[grammar][regex]") {
  rc::prop("random regex", [](uint64_t seed) {
    astrai::test::RegexGenerator gen(seed, false);
    const auto re = gen.make(3);
    std::string pattern = astrai::test::RegexGenerator::pattern(re);
    const int anchors = int(gen.rng()() % 4);
    if (anchors & 1) pattern = "^" + pattern;
    if (anchors & 2) pattern += "$";
    RC_TAG(pattern.size() > 20 ? "long pattern" : "short pattern");
    const Grammar g = regex_grammar(pattern);
    const Pcre2FullMatch pcre(pattern);
    int matched = 0;
    for (int i = 0; i < 30; ++i) {
      const std::string s = i < 10 ? gen.sample(re) : i < 20 ? gen.mutate(gen.sample(re)) : gen.noise(6);
      const auto verdict = pcre(s);
      if (!verdict) continue;
      const bool expected = *verdict;
      if (i < 10) RC_ASSERT(expected);  // the sampler's strings match (checks the test's own generator)
      matched += expected;
      if (grammar_matches(g, s) != expected) RC_FAIL("pattern " + pattern + " on '" + s + "': PCRE2 says " + (expected ? "match" : "no match"));
    }
    RC_ASSERT(matched >= 1);
  });
}

TEST_CASE("regex: fixed cases of the subset", "[grammar][regex]") {
  struct Case {
    const char* pattern;
    std::vector<std::string> yes, no;
  };
  const std::vector<Case> cases = {
      {"a{2,3}", {"aa", "aaa"}, {"a", "aaaa", ""}},
      {"^\\d+-\\w*$", {"12-", "0-a_Z9"}, {"-", "1-!", "a-1"}},
      {"[^a]", {"b", "\n", "é", "😀"}, {"a", "", "bb"}},
      {".", {"a", "é", "中", "😀"}, {"\n", "", "\xC3", "\xFF"}},  // invalid UTF-8 never matches
      {"\\x41\\x{e9}\\x{1F600}", {"Aé😀"}, {"A"}},
      {"(?:ab|c)*?d", {"d", "abcd", "ccd"}, {"abd d"}},
      {"", {""}, {"a"}},
  };
  // \uHHHH (JSON Schema's ECMA-262 spelling; PCRE2 has no \u).
  CHECK(grammar_matches(regex_grammar("\\u00e9\\u4E2D"), "é中"));
  for (const auto& c : cases) {
    const Grammar g = regex_grammar(c.pattern);
    const Pcre2FullMatch pcre(c.pattern);
    for (const auto& s : c.yes) {
      INFO(c.pattern << " on '" << s << "'");
      CHECK(grammar_matches(g, s));
      CHECK(pcre(s) == std::optional<bool>(true));
    }
    for (const auto& s : c.no) {
      INFO(c.pattern << " on '" << s << "'");
      CHECK_FALSE(grammar_matches(g, s));
    }
  }
}

TEST_CASE("regex: constructs outside the subset are a ConstraintError", "[grammar][regex]") {
  for (const char* p : {"(a)\\1", "(?=a)", "(?<n>a)", "a\\b", "(?i)a", "a^b", "a$b", "[[:alpha:]]", "a{2,1}", "*a", "(a",
                        "a)", "[a", "\\q", "a++", "a{1001}", "\\ud800",
                        // Within the state bound, but each optional part's closure spans the rest: too many edges.
                        "(?:(?:a?){400}){100}"}) {
    INFO(p);
    CHECK_THROWS_AS(regex_grammar(p), ConstraintError);
  }
}

TEST_CASE("choice: exactly the listed strings", "[grammar][choice]") {
  rc::prop("random choices", [](uint64_t seed) {
    astrai::test::RegexGenerator gen(seed, false);
    std::vector<std::string> choices;
    const int n = 1 + int(gen.rng()() % 5);
    for (int i = 0; i < n; ++i) choices.push_back(gen.noise(4));
    const Grammar g = grammar_for({ConstraintSpec::Kind::Choice, "", choices});
    for (const auto& c : choices) RC_ASSERT(grammar_matches(g, c));
    for (int i = 0; i < 20; ++i) {
      const std::string s = i % 2 ? gen.mutate(choices[size_t(i) % choices.size()]) : gen.noise(4);
      const bool listed = std::find(choices.begin(), choices.end(), s) != choices.end();
      RC_ASSERT(grammar_matches(g, s) == listed);
    }
  });
  CHECK_THROWS_AS(grammar_for({ConstraintSpec::Kind::Choice, "", {}}), ConstraintError);
}
