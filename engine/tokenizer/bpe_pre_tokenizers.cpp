#include "engine/tokenizer/bpe_pre_tokenizers.h"

#include <array>

namespace astrai {

namespace {

// The regexes as the real tokenizer.json files hold them (Meta-Llama-3's, the
// Qwen 2.5 / 3 family's, gpt-oss's o200k_harmony, which llama.cpp calls
// gpt-4o) and GPT-2's own (ByteLevel with use_regex).
constexpr std::array<BpePreTokenizer, 4> kKnown = {{
    {"llama-bpe",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     false, true},
    {"qwen2",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     true, false},
    {"gpt-2", R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)", false, false},
    {"gpt-4o",
     R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
     R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
     R"(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     false, true},
}};

}  // namespace

const BpePreTokenizer* find_bpe_pre_tokenizer(std::string_view gguf_name) {
  for (const auto& p : kKnown)
    if (p.gguf_name == gguf_name) return &p;
  return nullptr;
}

const BpePreTokenizer* find_bpe_pre_tokenizer(std::string_view pattern, bool nfc, bool ignore_merges) {
  for (const auto& p : kKnown)
    if (p.pattern == pattern && p.nfc == nfc && p.ignore_merges == ignore_merges) return &p;
  return nullptr;
}

std::string_view known_bpe_pre_tokenizer_names() { return "llama-bpe, qwen2, gpt-2, gpt-4o"; }

}  // namespace astrai
