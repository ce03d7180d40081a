// The --api-key check: a request is let in when it carries the key as
// "Authorization: Bearer KEY" (OpenAI's clients) or "x-api-key: KEY"
// (Anthropic's).
#pragma once

#include <string>
#include <string_view>

namespace astrai {

// Equality whose running time depends only on expected.size(), never on
// where `given` first differs, so that timing does not reveal the key.
bool constant_time_equal(std::string_view expected, std::string_view given);

// Whether either header value holds the key. authorization is the whole
// Authorization header ("Bearer KEY", scheme case-insensitive).
bool api_key_matches(std::string_view expected, std::string_view authorization, std::string_view x_api_key);

}  // namespace astrai
