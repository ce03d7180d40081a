// The few UTF-8 facts that streaming text needs.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace astrai {

// Length of the trailing bytes of s that begin a multi-byte character but do
// not complete it yet (0 when s ends on a character boundary). Bytes that can
// never become valid UTF-8 are not counted: they are not worth waiting for.
size_t incomplete_utf8_tail(std::string_view s);

// s with every invalid UTF-8 sequence replaced by U+FFFD, so that the result
// is always valid (JSON encoders require it; a model may emit any bytes).
std::string sanitize_utf8(std::string_view s);

}  // namespace astrai
