// The first step of serving a chat request, kept apart from HTTP and the
// engine so that it can be tested (and fuzzed: tests/fuzz/fuzz_request.cpp)
// on its own: the body's bytes become either the protocol's ChatRequest or
// the 422 response that says why not.
#pragma once

#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/chat_planning/chat_request.h"
#include "server/protocols/response_builder.h"

namespace astrai {

// A parsed chat request, or the error response for a body that is not one.
struct ParsedChatRequest {
  std::optional<ChatRequest> request;  // set when the body is a valid request
  int status = 0;                      // when not: 422, or 400 for an InvalidRequestError
  nlohmann::ordered_json error_body;   // when not: {"detail": [...]} naming each problem, or the protocol's error

  bool ok() const { return request.has_value(); }
};

// Reads `body` with the builder of the request's protocol: a body that is not
// JSON gives json_invalid_detail() (so does a number beyond a double's range,
// such as 1e400, which nlohmann cannot read); JSON that is not an object gives a
// dict_type error at ["body"]; an object that the builder rejects gives its
// ValidationError's detail, one entry per bad field; a request the builder
// refuses with InvalidRequestError (request_error.h) gives a 400 in the
// protocol's error shape; token ids at or past `vocab_size` (logit_bias,
// stop_token_ids, prompts of ids) give a 422 naming each. Never throws for
// any body (short of running out of memory).
ParsedChatRequest parse_chat_request(ResponseBuilder& builder, std::string_view body,
                                     int vocab_size = std::numeric_limits<int>::max());

// The {"detail": [...]} body of a 422 for a body that is not JSON: type
// json_invalid, loc ["body", offset of the offending byte].
nlohmann::ordered_json json_invalid_detail(size_t error_byte, const std::string& what);

}  // namespace astrai
