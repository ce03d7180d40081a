// tokenizers.js as the oracle of the tokenizer.json tests
// (bpe_oracle/encode.mjs), and the random text fragments they compare on.
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "tests/support/bpe_oracle_files.h"
#include "tests/support/shared_data.h"
#include "tests/support/text_generators.h"

namespace astrai::test {

// Fragments the random texts are built from: what the Split regexes treat
// differently (letters, digits, whitespace runs, punctuation, contractions in
// any case), scripts, combining marks (NFC for Qwen), emoji, added tokens.
inline std::string random_fragment(std::mt19937& rng, const std::vector<std::string>& added) {
  auto pick = [&](int n) { return int(rng() % unsigned(n)); };
  static const std::vector<std::string> fixed = {
      "Hello", " world", "THE", "tHiS", "'s", "'S", "'t", "'RE", "'ve", "'M", "'ll", "'D", "don't", "I'M",
      " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ", "\u00a0", "\u3000", "\u2028", "\u0085",
      "1", "12", "123", "1234567", "3.14", "-", "!!", "...", "(x)", "{\"a\": 1}", "#", "<|", "|>", "<",
      "e\u0301", "A\u030a", "\u1100\u1161", "caf\u00e9", "na\u00efve", "\u00c5", "\u212b",
      "\u4f60\u597d", "\u4e16\u754c", "\u65e5\u672c\u8a9e", "\ud55c\uad6d\uc5b4", "\u041f\u0440\u0438\u0432\u0435\u0442",
      "\u0645\u0631\u062d\u0628\u0627", "\u0939\u093f\u0928\u094d\u0926\u0940", "\u0661\u0662", "\u00bd", "\u2167",
      "\U0001F600", "\U0001F44D\U0001F3FD", "\U0001F468\u200D\U0001F469\u200D\U0001F467", "\u2764\ufe0f",
      "\U00010348", "\u017f", "\u00df", "\u0130"};
  switch (pick(5)) {
    case 0: return added[size_t(pick(int(added.size())))];
    case 1: {  // a random code point from a few blocks (no surrogates)
      static const std::pair<char32_t, char32_t> blocks[] = {{0x20, 0x7E},     {0xA0, 0x24F},   {0x300, 0x36F},
                                                             {0x370, 0x52F},   {0x3040, 0x30FF}, {0x4E00, 0x9FFF},
                                                             {0xAC00, 0xD7A3}, {0x1F300, 0x1F6FF}};
      const auto& [lo, hi] = blocks[pick(8)];
      return encode_utf8(lo + char32_t(rng() % (hi - lo + 1)));
    }
    default: return fixed[size_t(pick(int(fixed.size())))];
  }
}

// Runs encode.mjs on `texts` for `name` (a package name, or a tokenizer.json
// path; scratch_tag then names the scratch files); one row per text:
// [ids without special tokens, ids with them]. nullopt (with a WARN) when
// node is missing.
inline std::optional<std::vector<nlohmann::json>> oracle(const std::string& name, const std::vector<std::string>& texts,
                                                         const std::string& scratch_tag = "") {
  if (std::system("node --version >/dev/null 2>&1") != 0) {
    ASTRAI_MISSING("node not found; the tokenizers.js comparison needs Node.js >= 20");
    return std::nullopt;
  }
  const std::filesystem::path in = scratch_dir() / ("bpe_" + (scratch_tag.empty() ? name : scratch_tag) + "_in.jsonl");
  const std::filesystem::path out = scratch_dir() / ("bpe_" + (scratch_tag.empty() ? name : scratch_tag) + "_out.jsonl");
  {
    std::ofstream f(in);
    for (const auto& t : texts) f << nlohmann::json(t).dump() << "\n";
  }
  const std::string cmd = "node '" + (bpe_oracle_dir() / "encode.mjs").string() + "' " + name + " < '" + in.string() +
                          "' > '" + out.string() + "'";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::vector<nlohmann::json> rows;
  std::ifstream f(out);
  for (std::string line; std::getline(f, line);) rows.push_back(nlohmann::json::parse(line));
  REQUIRE(rows.size() == texts.size());
  return rows;
}

}  // namespace astrai::test
