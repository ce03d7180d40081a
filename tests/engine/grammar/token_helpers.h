// Helpers of the token-level tests: masks as id sets, the brute-force oracle
// (a token is allowed when a fork accepts it), random tokenizations, and the
// python3-jsonschema batch validator.
#pragma once

#include <cstdio>
#include <fstream>
#include <optional>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "engine/grammar/compile_constraint.h"
#include "tests/support/shared_data.h"

namespace astrai::test {

inline std::vector<int> mask_ids(astrai::grammar::TokenConstraint& c, size_t vocab_size) {
  std::vector<uint32_t> mask(astrai::grammar::bitmask_words(vocab_size), 0xDEADBEEFu);  // poisoned: every word must be written
  c.fill_next_token_mask(mask);
  std::vector<int> ids;
  for (size_t t = 0; t < mask.size() * 32; ++t)
    if (mask[t / 32] & (1u << (t % 32))) ids.push_back(int(t));
  return ids;
}

// The oracle: every id that accept_token takes on a fork of `c` (no cache, no trie).
inline std::vector<int> brute_force_ids(const astrai::grammar::TokenConstraint& c, size_t vocab_size) {
  std::vector<int> ids;
  for (size_t t = 0; t < vocab_size; ++t)
    if (c.fork()->accept_token(int(t))) ids.push_back(int(t));
  return ids;
}

// A random walk through the masks (a uniformly random allowed token each
// step, as temperature-1 sampling of a model with flat logits); the text
// when the walk chose EOS, nullopt after max_steps.
inline std::optional<std::string> random_walk(const astrai::grammar::TokenVocabulary& vocab,
                                              const astrai::grammar::CompiledConstraint& compiled,
                                              std::mt19937_64& rng, int max_steps) {
  auto c = compiled.start();
  std::vector<uint32_t> mask(astrai::grammar::bitmask_words(vocab.size()));
  std::vector<int> allowed;
  std::string text;
  for (int step = 0; step < max_steps; ++step) {
    c->fill_next_token_mask(mask);
    allowed.clear();
    for (size_t t = 0; t < vocab.size(); ++t)
      if (mask[t / 32] >> (t % 32) & 1u) allowed.push_back(int(t));
    REQUIRE(!allowed.empty());  // a live state always allows something (EOS at least)
    const int pick = allowed[rng() % allowed.size()];
    REQUIRE(c->accept_token(pick));
    if (vocab.is_end(pick)) return text;
    text += vocab.bytes(pick);
  }
  return std::nullopt;
}

// Splits text into pieces at code point boundaries, randomly.
inline std::vector<std::string> random_chunks(const std::string& text, std::mt19937_64& rng) {
  std::vector<std::string> chunks;
  std::string cur;
  for (size_t i = 0; i < text.size(); ++i) {
    cur += text[i];
    const bool boundary = i + 1 == text.size() || (uint8_t(text[i + 1]) & 0xC0) != 0x80;
    if (boundary && rng() % 3 == 0) {
      chunks.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) chunks.push_back(cur);
  return chunks;
}

// Validates (schema, JSON text) pairs with python3-jsonschema in one process;
// returns one verdict per pair ("ok" or "invalid: ..."), or an empty vector
// when python3-jsonschema is missing.
inline std::vector<std::string> validate_with_python(const std::vector<std::pair<nlohmann::ordered_json, std::string>>& cases) {
  // Files of their own per batch, kept: a failed batch's input stays for a rerun.
  static int batches = 0;
  const auto dir = scratch_dir();
  const std::string stem = "grammar_batch" + std::to_string(++batches);
  const auto input = dir / (stem + ".jsonl"), output = dir / (stem + ".verdicts"), errors = dir / (stem + ".stderr");
  {
    std::ofstream f(input);
    for (const auto& [schema, text] : cases) f << nlohmann::ordered_json{{"schema", schema}, {"text", text}}.dump() << "\n";
  }
  if (std::system("python3 -c 'import jsonschema' 2>/dev/null") != 0) return {};
  const std::string script = (source_root() / "tests/engine/grammar/validate_instances.py").string();
  const std::string cmd =
      "python3 '" + script + "' '" + input.string() + "' > '" + output.string() + "' 2> '" + errors.string() + "'";
  if (const int status = std::system(cmd.c_str()); status != 0) {
    std::ifstream e(errors);
    const std::string stderr_text((std::istreambuf_iterator<char>(e)), std::istreambuf_iterator<char>());
    throw std::runtime_error("the validator failed (status " + std::to_string(status) + "): " + cmd + "\n" +
                             stderr_text.substr(stderr_text.size() > 2000 ? stderr_text.size() - 2000 : 0));
  }
  std::vector<std::string> verdicts;
  std::ifstream f(output);
  for (std::string line; std::getline(f, line);) verdicts.push_back(line);
  return verdicts;
}

// Every (schema, text) pair of `batch` valid under python3-jsonschema (one
// process for the whole batch); `what` names the text in failure messages.
// A missing python3-jsonschema is ASTRAI_MISSING (a failure under CI).
inline void check_valid_under_python(const std::vector<std::pair<nlohmann::ordered_json, std::string>>& batch,
                                     const char* what) {
  if (batch.empty()) return;
  const auto verdicts = validate_with_python(batch);
  if (verdicts.empty()) {
    ASTRAI_MISSING("python3-jsonschema (apt install python3-jsonschema; scripts/install-deps.sh)");
    return;
  }
  REQUIRE(verdicts.size() == batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    INFO("schema " << batch[i].first.dump() << "\n" << what << " " << batch[i].second);
    CHECK(verdicts[i] == "ok");
  }
}

}  // namespace astrai::test
