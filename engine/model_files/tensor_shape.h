// A tensor's shape (its dimensions, as the model files list them): how many
// elements it holds, and how the model readers' errors print it: "[4096, 128256]".
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace astrai {

// The product of the dimensions, unchecked: for shapes already checked
// (readers multiply a file's counts with checked_math.h) or made by a writer.
inline uint64_t element_count(std::span<const uint64_t> dims) {
  uint64_t n = 1;
  for (const uint64_t d : dims) n *= d;
  return n;
}

inline std::string format_dims(std::span<const uint64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

}  // namespace astrai
