#include "server/http/api_key.h"

#include <cctype>

namespace astrai {

bool constant_time_equal(std::string_view expected, std::string_view given) {
  // Every byte of `expected` is compared against something; differences are
  // OR-ed together instead of returning at the first one.
  unsigned char diff = expected.size() == given.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    const unsigned char g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    diff |= static_cast<unsigned char>(static_cast<unsigned char>(expected[i]) ^ g);
  }
  return diff == 0;
}

namespace {
bool starts_with_bearer(std::string_view header) {
  constexpr std::string_view kScheme = "bearer ";
  if (header.size() < kScheme.size()) return false;
  for (size_t i = 0; i < kScheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(header[i])) != kScheme[i]) return false;
  return true;
}
}  // namespace

bool api_key_matches(std::string_view expected, std::string_view authorization, std::string_view x_api_key) {
  bool ok = false;
  if (starts_with_bearer(authorization)) ok |= constant_time_equal(expected, authorization.substr(7));
  if (!x_api_key.empty()) ok |= constant_time_equal(expected, x_api_key);
  return ok;
}

}  // namespace astrai
