// splitmix64 (Steele, Lea & Flood 2014; the public-domain C of
// prco.di.unimi.it/splitmix64.c): the one definition every part of AstrAI
// uses, for seeding the sampler's xoshiro256**, for the synthetic models'
// weights and for the prefix cache's page hashes.
#pragma once

#include <cstdint>

namespace astrai {

// The finalizer: a bijective mix of all 64 bits of z.
inline constexpr std::uint64_t splitmix64_mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

inline constexpr std::uint64_t kSplitmix64Gamma = 0x9e3779b97f4a7c15ULL;

// The generator: advances `state` by the golden-ratio gamma and returns its mix.
inline constexpr std::uint64_t splitmix64_next(std::uint64_t& state) {
  state += kSplitmix64Gamma;
  return splitmix64_mix(state);
}

}  // namespace astrai
