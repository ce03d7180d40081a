#include "engine/chat_planning/request_id.h"

#include <chrono>
#include <random>

namespace astrai {

std::string random_id(const std::string& prefix, int digits) {
  // One generator per thread, seeded from the OS: ids need to be unique, not secret.
  thread_local std::mt19937_64 rng{(uint64_t(std::random_device{}()) << 32) ^ std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id = prefix;
  for (int i = 0; i < digits; ++i) id += kHex[rng() & 15];
  return id;
}

int64_t unix_time_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace astrai
