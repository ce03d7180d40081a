// What the server's formatters write, read back by the request fuzz targets
// (fuzz_request.cpp, fuzz_responses.cpp): the text a client receives must be
// JSON, so a value json_text writes must parse again.
#pragma once

#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "server/http/json_text.h"

namespace astrai::fuzz {

// json_text(value) parsed back; aborts naming `what` when it is not JSON.
inline nlohmann::ordered_json reparse(const nlohmann::ordered_json& value, const char* what) {
  try {
    return nlohmann::ordered_json::parse(json_text(value));
  } catch (const nlohmann::ordered_json::exception&) {
    std::fprintf(stderr, "fuzz property violated: %s is not valid JSON once written\n", what);
    std::abort();
  }
}

}  // namespace astrai::fuzz
