// A tensor's shape as the model readers' errors print it: "[4096, 128256]".
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace astrai {

inline std::string format_dims(std::span<const uint64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

}  // namespace astrai
