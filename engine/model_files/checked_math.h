// Overflow-checked size arithmetic for file parsers: every size computed from
// numbers read out of a file goes through these, so a corrupt count can never
// wrap around into a small (and wrongly "in bounds") value.
#pragma once

#include <cstdint>
#include <optional>

namespace astrai {

// a * b, or nothing when the product does not fit in 64 bits.
inline std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// a + b, or nothing when the sum does not fit in 64 bits.
inline std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// The smallest multiple of `alignment` (a power of two) that is >= x, or
// nothing on overflow.
inline std::optional<uint64_t> checked_align_up(uint64_t x, uint64_t alignment) {
  const auto bumped = checked_add(x, alignment - 1);
  if (!bumped) return std::nullopt;
  return *bumped & ~(alignment - 1);
}

}  // namespace astrai
