// The byte-level BPE pre-tokenizers this engine knows by name. tokenizer.json
// spells its Split regex out; a GGUF `gpt2` vocabulary names it instead
// (tokenizer.ggml.pre, llama.cpp's names), so reading and writing GGUF maps
// between the two with this table. Each entry also fixes what the model's
// tokenizer.json says beside the regex: the NFC normalizer and ignore_merges.
#pragma once

#include <string_view>

namespace astrai {

struct BpePreTokenizer {
  std::string_view gguf_name;  // tokenizer.ggml.pre
  std::string_view pattern;    // the Split regex exactly as tokenizer.json holds it
  bool nfc;                    // normalizer NFC
  bool ignore_merges;          // BPE model's ignore_merges
};

// By GGUF name, or nullptr.
const BpePreTokenizer* find_bpe_pre_tokenizer(std::string_view gguf_name);
// The entry with exactly these three settings, or nullptr.
const BpePreTokenizer* find_bpe_pre_tokenizer(std::string_view pattern, bool nfc, bool ignore_merges);
// "llama-bpe, qwen2, gpt-2, gpt-4o" for error messages.
std::string_view known_bpe_pre_tokenizer_names();

}  // namespace astrai
