// The special tokens a Hugging Face tokenizer_config.json names (bos_token,
// eos_token, unk_token, pad_token), read the one way both the tokenizer (its
// BOS and EOS ids) and the chat template (the strings a template prints)
// need them.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace astrai {

// `key` of tokenizer_config.json: a string, or an AddedToken object
// {"content": "...", ...}; nullopt when absent or null. Throws
// std::runtime_error naming `source` and the key for anything else.
std::optional<std::string> special_token_text(const nlohmann::ordered_json& config, const std::string& key,
                                              const std::string& source);

}  // namespace astrai
