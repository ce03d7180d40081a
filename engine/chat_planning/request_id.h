// Identifiers for responses ("chatcmpl-…", "msg_…") and the tool calls they
// return, and the time they carry.
#pragma once

#include <cstdint>
#include <string>

namespace astrai {

// prefix followed by `digits` random hexadecimal digits; thread-safe.
std::string random_id(const std::string& prefix, int digits = 24);

// Seconds since the Unix epoch.
int64_t unix_time_now();

}  // namespace astrai
