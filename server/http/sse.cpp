#include "server/http/sse.h"

#include "server/http/json_text.h"

namespace astrai {

std::string sse_data(const nlohmann::ordered_json& payload) { return "data: " + json_text(payload) + "\n\n"; }

std::string sse_data_literal(std::string_view payload) { return "data: " + std::string(payload) + "\n\n"; }

std::string sse_event(std::string_view name, const nlohmann::ordered_json& payload) {
  return "event: " + std::string(name) + "\ndata: " + json_text(payload) + "\n\n";
}

std::string sse_comment(std::string_view text) { return ": " + std::string(text) + "\n\n"; }

}  // namespace astrai
