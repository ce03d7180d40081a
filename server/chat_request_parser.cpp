#include "server/chat_request_parser.h"

#include "server/validation.h"

namespace astrai {

using json = nlohmann::ordered_json;

json json_invalid_detail(size_t error_byte, const std::string& what) {
  const json error = {{"loc", json::array({"body", error_byte})},
                      {"msg", "JSON decode error"},
                      {"type", "json_invalid"},
                      {"ctx", {{"error", what}}}};
  return {{"detail", json::array({error})}};
}

ParsedChatRequest parse_chat_request(ResponseBuilder& builder, std::string_view body) {
  ParsedChatRequest parsed;
  json value;
  try {
    value = json::parse(body);
  } catch (const json::parse_error& e) {
    parsed.status = 422;
    const size_t byte = e.byte > 0 ? e.byte - 1 : 0;  // nlohmann counts from 1
    parsed.error_body = json_invalid_detail(byte, e.what());
    return parsed;
  }
  try {
    if (!value.is_object())
      throw ValidationError({{json::array({"body"}), "Input should be a valid dictionary", "dict_type"}});
    parsed.request = builder.prepare(value);
  } catch (const ValidationError& e) {
    parsed.status = 422;
    parsed.error_body = e.body();
  }
  return parsed;
}

}  // namespace astrai
