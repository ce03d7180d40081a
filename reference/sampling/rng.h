// The per-request random number generator: xoshiro256** (Blackman & Vigna,
// https://prng.di.unimi.it/xoshiro256starstar.c), seeded through splitmix64.
//
// Every step is written out here rather than taken from <random>: the
// distributions of the standard library (std::uniform_real_distribution...)
// are implementation-defined and differ between libstdc++, libc++ and MSVC,
// so a seeded request would give different tokens on different machines. With
// this generator a seed means the same draws everywhere, and a GPU sampler can
// reproduce them bit for bit.
#pragma once

#include <array>
#include <cstdint>

#include "reference/splitmix64.h"

namespace astrai {


class Rng {
 public:
  // The four state words are four successive splitmix64 outputs starting from
  // `seed` (the seeding the xoshiro authors recommend; never all zero).
  explicit Rng(std::uint64_t seed);
  // Starts from the given state words (for the published test vectors).
  // Throws std::invalid_argument for the all-zero state, a fixed point.
  static Rng from_state(const std::array<std::uint64_t, 4>& state);

  // The next 64-bit output of xoshiro256**.
  std::uint64_t next_u64();
  // A double uniform in [0, 1): the top 53 bits of next_u64() times 2^-53,
  // so every value is a multiple of 2^-53 and 1.0 is never returned.
  double next_uniform();

  const std::array<std::uint64_t, 4>& state() const { return state_; }

 private:
  Rng() = default;
  std::array<std::uint64_t, 4> state_{};
};

// A fresh seed for a request that did not give one: 64 bits from
// std::random_device (two 32-bit calls).
std::uint64_t random_seed();

}  // namespace astrai
