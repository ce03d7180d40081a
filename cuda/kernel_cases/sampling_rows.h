// Rows of logits and sampling rules for checking the device sampler
// (cuda/kernels/sample.cu) against the reference sampler: the sample case of
// the kernel-case registry and tests/cuda/test_device_sampling.cpp draw them.
#pragma once

#include <array>
#include <random>
#include <span>
#include <vector>

#include "engine/executor/executor.h"

namespace astrai::cuda::cases {

// One row of `vocab` logits in a style drawn from `rng`: uniform values at a
// scale from 1e-30 to 3e38, a few distinct values (ties, -0 and +0),
// subnormals next to +-FLT_MAX, one dominant logit, mostly -inf (sometimes
// all), with -inf masks sprinkled in; with `allow_bad`, sometimes NaN and
// +inf as well.
std::vector<float> random_logit_row(int vocab, std::mt19937& rng, bool allow_bad = true);

// A rule from the grid the issue names: temperature in {0, 0.3, 1, 2}, top_k
// in {0, 1, 2, 50, cap, cap + 1, 100000}, top_p in {1, 0.9, 0.5, 1e-7}, and a
// uniform in [0, 1) (sometimes 0 or the largest double below 1).
RowSampling random_row_sampling(std::mt19937& rng);

// The reference's answer for one row, in the device sampler's terms
// (DeviceSampledToken): {token, status, index} as floats. Bad logits map the
// reference's error (its message names the first bad index) to the status;
// a row the rule leaves to the host (kSampleOnHost) is {-1, 4, -1}.
std::array<float, 3> reference_device_result(std::span<const float> logits, const RowSampling& row);

}  // namespace astrai::cuda::cases
