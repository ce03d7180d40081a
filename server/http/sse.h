// Server-sent events (text/event-stream) framing: each event is one or more
// "field: value" lines and a blank line. Our payloads are single-line JSON.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace astrai {

// "data: {json}\n\n" (OpenAI's framing).
std::string sse_data(const nlohmann::ordered_json& payload);
// "data: [DONE]\n\n" and similar literal payloads.
std::string sse_data_literal(std::string_view payload);
// "event: name\ndata: {json}\n\n" (Anthropic's framing).
std::string sse_event(std::string_view name, const nlohmann::ordered_json& payload);
// ": text\n\n", a comment every SSE parser ignores; written while a stream
// waits, so that a client that went away is noticed (its write fails).
std::string sse_comment(std::string_view text);

}  // namespace astrai
