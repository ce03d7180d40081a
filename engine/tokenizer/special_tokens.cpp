#include "engine/tokenizer/special_tokens.h"

#include <stdexcept>

namespace astrai {

std::optional<std::string> special_token_text(const nlohmann::ordered_json& config, const std::string& key,
                                              const std::string& source) {
  if (!config.contains(key) || config[key].is_null()) return std::nullopt;
  const auto& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  throw std::runtime_error(source + ": " + key + " must be a string or an object with a string \"content\"");
}

}  // namespace astrai
