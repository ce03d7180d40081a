// JSON to text for responses. Generated text is valid UTF-8 by construction
// (TextStream never splits a character), but a response must never throw
// halfway through a stream, so anything invalid is replaced by U+FFFD.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace astrai {

inline std::string json_text(const nlohmann::ordered_json& value) {
  return value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace astrai
