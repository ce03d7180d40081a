// xoshiro256** and splitmix64, transcribed from the public-domain reference C
// code by Blackman & Vigna (prng.di.unimi.it); see rng.h for why it is fixed.
#include "reference/sampling/rng.h"

#include <bit>
#include <random>
#include <stdexcept>

namespace astrai {

Rng::Rng(std::uint64_t seed) {
  std::uint64_t sm = seed;
  for (auto& word : state_) word = splitmix64_next(sm);
}

Rng Rng::from_state(const std::array<std::uint64_t, 4>& state) {
  if (state[0] == 0 && state[1] == 0 && state[2] == 0 && state[3] == 0) {
    throw std::invalid_argument("Rng: the all-zero xoshiro256** state only ever produces zeros");
  }
  Rng rng;
  rng.state_ = state;
  return rng;
}

std::uint64_t Rng::next_u64() {
  auto& s = state_;
  const std::uint64_t result = std::rotl(s[1] * 5, 7) * 9;
  const std::uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = std::rotl(s[3], 45);
  return result;
}

double Rng::next_uniform() {
  // 0x1.0p-53 = 2^-53: the 53 high bits fill a double's mantissa exactly.
  return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
}

std::uint64_t random_seed() {
  std::random_device device;
  const std::uint64_t high = device();
  const std::uint64_t low = device();
  return (high << 32) ^ low;
}

}  // namespace astrai
