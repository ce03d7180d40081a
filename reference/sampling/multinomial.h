// The final random step of sampling: one draw from a discrete distribution by
// inverting its cumulative distribution function.
#pragma once

#include <cstddef>
#include <span>

namespace astrai {

// Given probabilities p_0..p_{n-1} (n >= 1, >= 0, summing to ~1) and a uniform
// u in [0, 1), returns the first index i with  p_0 + ... + p_i > u * total,
// where total is the same running sum taken to the end, so the result does
// not depend on the probabilities summing to exactly 1. Zero-probability
// entries are never chosen. If rounding leaves no such i (u * total rounded up
// to total), the last entry with p > 0 is chosen. Throws
// std::invalid_argument for an empty input, u outside [0, 1), or no p > 0.
std::size_t inverse_cdf(std::span<const double> probabilities, double u);

}  // namespace astrai
